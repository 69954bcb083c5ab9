// SPDX-License-Identifier: GPL-2.0-or-later
// The RDMA resource commands (programming manual section 8). Every command
// validates all of its input before it changes any state.
#include "device/command.hpp"
#include "device/device.hpp"
#include "link/byte_order.hpp"
#include "objects/qp_state.hpp"

#include <algorithm>

namespace ohca {

namespace {

// Lowest free slot in [first, table.size()).
template <class T> std::optional<uint32_t> free_slot(const Table<T> &t, uint32_t first) {
    for (uint32_t i = first; i < t.size(); ++i) {
        if (!t[i]) {
            return i;
        }
    }
    return std::nullopt;
}

template <class T> T *lookup(Table<T> &t, uint32_t h) {
    return h < t.size() ? t[h].get() : nullptr;
}

} // namespace

void Device::rdma_power_on() {
    eqs_.clear();
    eqs_.resize(DeviceLimits::max_eq);
    pds_.clear();
    pds_.resize(DeviceLimits::max_pd + 1);
    cqs_.clear();
    cqs_.resize(DeviceLimits::max_cq + 1);
    ready_.clear();
    timers_.clear();
    cq_timers_.clear();
    qps_.clear();
    qps_.resize(cfg_.max_qp + DeviceLimits::first_qpn);
    srqs_.clear();
    srqs_.resize(DeviceLimits::max_srq + 1);
    mcast_.clear();
    raw_.reset();
    xrc_.reset();
    uar_refs_.fill(0);
    pbl_.reset();
    keys_.reset();
    roce_backlog_.clear();
    timers_deferred_ = false;
    if (timer_deadline_ != 0) {
        timer_deadline_ = 0;
        host_.set_timer(0);
    }
}

// MR key tags and the QPN cursor start from the host's seed and are kept
// across resets: after one, a peer's stale rkeys and QPNs name nothing (or,
// once the numbers come round again, an object it must still match GID and
// PSN of).
void Device::seed_ids(uint32_t seed) {
    keys_.seed_tags(seed);
    next_qpn_ = DeviceLimits::first_qpn + seed % cfg_.max_qp;
}

uint64_t Device::pbl_room() const {
    return pbl_.room();
}

Qp *Device::find_qp(uint32_t qpn) {
    return lookup(qps_, qpn);
}

CmdResult Device::write_create_out(const Command &cmd, uint32_t h1, uint32_t h2) {
    return ohca::write_create_out(host_, cmd, h1, h2);
}

// ---- EQ ---------------------------------------------------------------------

CmdResult Device::cmd_create_eq(const Command &cmd) {
    const auto in = cmd.input<ohca_create_eq_in>();
    const uint64_t base = le(in.base);
    if (base == 0 || base % sizeof(ohca_eqe) != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_eq_in, base)};
    }
    if (in.log_size < OHCA_EQ_LOG_MIN || in.log_size > OHCA_EQ_LOG_MAX) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_eq_in, log_size)};
    }
    if (in.msix_vector < 2 || in.msix_vector >= OHCA_NUM_MSIX) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_eq_in, msix_vector)};
    }
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_create_eq_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    const auto eqn = free_slot(eqs_, 1);
    if (!eqn) {
        return {OHCA_STATUS_NO_RESOURCES, 0};
    }
    if (CmdResult r = write_create_out(cmd, *eqn, 0); r.status != OHCA_STATUS_OK) {
        return r;
    }
    eqs_[*eqn] = std::make_unique<CompletionEq>(in.msix_vector);
    eqs_[*eqn]->eq.configure(base, in.log_size);
    return {};
}

CmdResult Device::cmd_destroy_eq(const Command &cmd) {
    const auto in = cmd.input<ohca_handle_in>();
    const uint32_t eqn = le(in.handle);
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_handle_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    CompletionEq *eq = lookup(eqs_, eqn);
    if (eq == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, eqn};
    }
    if (eq->cq_refs != 0) {
        return {OHCA_STATUS_BAD_STATE, eqn};
    }
    eqs_[eqn].reset();
    return {};
}

void Device::comp_eq_doorbell(uint32_t eqn, uint32_t value) {
    CompletionEq *eq = lookup(eqs_, eqn);
    if (eq == nullptr || !eq->eq.doorbell(host_, value)) {
        ++stats_.reg_errors;
    }
}

// ---- PD ---------------------------------------------------------------------

CmdResult Device::cmd_create_pd(const Command &cmd) {
    const auto pdn = free_slot(pds_, 1);
    if (!pdn) {
        return {OHCA_STATUS_NO_RESOURCES, 0};
    }
    if (CmdResult r = write_create_out(cmd, *pdn, 0); r.status != OHCA_STATUS_OK) {
        return r;
    }
    pds_[*pdn] = std::make_unique<Pd>();
    return {};
}

CmdResult Device::cmd_destroy_pd(const Command &cmd) {
    const auto in = cmd.input<ohca_handle_in>();
    const uint32_t pdn = le(in.handle);
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_handle_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    Pd *pd = lookup(pds_, pdn);
    if (pd == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, pdn};
    }
    if (pd->refs != 0) {
        return {OHCA_STATUS_BAD_STATE, pdn};
    }
    pds_[pdn].reset();
    return {};
}

// ---- CQ ---------------------------------------------------------------------

CmdResult Device::cmd_create_cq(const Command &cmd) {
    const auto in = cmd.input<ohca_create_cq_in>();
    const uint32_t eqn = le(in.eqn);
    const uint32_t uar = le(in.uar_index);
    if (eqn != 0 && lookup(eqs_, eqn) == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, eqn};
    }
    if (uar >= OHCA_NUM_DB_PAGES || (uar != 0 && !uars_.allocated(uar))) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_cq_in, uar_index)};
    }
    if (in.log_size < 1 || in.log_size > OHCA_CQ_LOG_MAX) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_cq_in, log_size)};
    }
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_create_cq_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    Cq cq;
    cq.eqn = eqn;
    cq.uar = uar;
    cq.log_size = in.log_size;
    const auto r =
        cq.ring.load(host_, in.pbl, (uint64_t{1} << in.log_size) * sizeof(ohca_cqe), pbl_room());
    if (r.error != PageList::Error::None) {
        return pbl_error(r, offsetof(ohca_create_cq_in, pbl));
    }
    const auto cqn = free_slot(cqs_, 1);
    if (!cqn) {
        return {OHCA_STATUS_NO_RESOURCES, 0};
    }
    if (CmdResult res = write_create_out(cmd, *cqn, 0); res.status != OHCA_STATUS_OK) {
        return res;
    }
    pbl_.charge(cq.ring.npages());
    cq.cqn = *cqn;
    cqs_[*cqn] = std::make_unique<Cq>(std::move(cq));
    if (eqn != 0) {
        ++eqs_[eqn]->cq_refs;
    }
    ++uar_refs_[uar];
    return {};
}

CmdResult Device::cmd_destroy_cq(const Command &cmd) {
    const auto in = cmd.input<ohca_handle_in>();
    const uint32_t cqn = le(in.handle);
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_handle_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    Cq *cq = lookup(cqs_, cqn);
    if (cq == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, cqn};
    }
    if (cq->qp_refs != 0) {
        return {OHCA_STATUS_BAD_STATE, cqn};
    }
    if (CompletionEq *eq = lookup(eqs_, cq->eqn)) {
        --eq->cq_refs;
    }
    --uar_refs_[cq->uar];
    pbl_.release(cq->ring.npages());
    if (cq->deadline_ns != 0) { // a held event goes with its CQ
        cq_timers_.set(*cq, 0);
        update_timer();
    }
    cqs_[cqn].reset();
    return {};
}

// ---- QP ---------------------------------------------------------------------

CmdResult Device::cmd_create_qp(const Command &cmd) {
    using In = ohca_create_qp_in;
    const auto in = cmd.input<In>();
    const uint32_t pdn = le(in.pdn);
    const uint32_t scqn = le(in.send_cqn);
    const uint32_t rcqn = le(in.recv_cqn);
    const uint32_t uar = le(in.uar_index);
    const uint32_t max_inline = le(in.max_inline);
    const uint32_t srqn = le(in.srqn);
    if (in.type != OHCA_QPT_RC && in.type != OHCA_QPT_UD && in.type != OHCA_QPT_GSI &&
        in.type != OHCA_QPT_UC && in.type != OHCA_QPT_XRC_INI && in.type != OHCA_QPT_XRC_TGT &&
        in.type != OHCA_QPT_RAW_ETH) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, type)};
    }
    // The next free number from the cursor, not the lowest: numbers are
    // reused as late as possible, and a reset does not start them over.
    auto free_qpn = [&]() -> std::optional<uint32_t> {
        for (uint32_t i = 0; i < cfg_.max_qp; ++i) {
            const uint32_t n =
                DeviceLimits::first_qpn + (next_qpn_ - DeviceLimits::first_qpn + i) % cfg_.max_qp;
            if (!qps_[n]) {
                return n;
            }
        }
        return std::nullopt;
    };
    if (in.type == OHCA_QPT_XRC_TGT) {
        // No queues, PD or CQs: type and domain only (the kernel's page).
        if (auto off = nonzero_at(cmd.in, offsetof(In, sq_log_size), offsetof(In, pdn) - 1)) {
            return {OHCA_STATUS_BAD_FIELD, *off};
        }
        if (auto off =
                nonzero_at(cmd.in, offsetof(In, send_cqn), sizeof(In) - offsetof(In, send_cqn))) {
            return {OHCA_STATUS_BAD_FIELD, *off};
        }
        const uint32_t xrcdn = le(in.xrcdn);
        if (!xrc_.domain_exists(xrcdn)) {
            return {OHCA_STATUS_BAD_HANDLE, xrcdn};
        }
        const std::optional<uint32_t> n = free_qpn();
        if (!n) {
            return {OHCA_STATUS_NO_RESOURCES, 0};
        }
        if (CmdResult res = write_create_out(cmd, *n, 0); res.status != OHCA_STATUS_OK) {
            return res;
        }
        auto qp = std::make_unique<Qp>();
        qp->qpn = *n;
        qp->type = in.type;
        qp->xrcdn = xrcdn;
        qps_[*n] = std::move(qp);
        next_qpn_ = *n + 1;
        ++uar_refs_[0];
        xrc_.get(xrcdn);
        return {};
    }
    // An XRC initiator sends only: no receive CQ, RQ or SRQ.
    const bool ini = in.type == OHCA_QPT_XRC_INI;
    if (ini && rcqn != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, recv_cqn)};
    }
    if (ini && srqn != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, srqn)};
    }
    // UD WQEs carry the address vector before their data; a raw
    // Ethernet WQE is the plain header and its frame.
    const bool connected = in.type == OHCA_QPT_RC || in.type == OHCA_QPT_UC ||
                           in.type == OHCA_QPT_XRC_INI || in.type == OHCA_QPT_RAW_ETH;
    const size_t sq_hdr = connected ? sizeof(ohca_send_wqe) : OHCA_UD_WQE_HDR_LEN;
    if (in.sq_log_size > DeviceLimits::max_wq_log) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, sq_log_size)};
    }
    if (in.rq_log_size > DeviceLimits::max_wq_log) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, rq_log_size)};
    }
    if (in.sq_log_stride < OHCA_SQ_LOG_STRIDE_MIN || in.sq_log_stride > OHCA_WQ_LOG_STRIDE_MAX) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, sq_log_stride)};
    }
    if (srqn != 0 || ini) {
        // A QP on an SRQ has no receive queue: its RQ fields stay zero.
        // Only RC QPs take receives from an SRQ.
        if (srqn != 0 && in.type != OHCA_QPT_RC) {
            return {OHCA_STATUS_BAD_FIELD, offsetof(In, srqn)};
        }
        if (in.rq_log_size != 0) {
            return {OHCA_STATUS_BAD_FIELD, offsetof(In, rq_log_size)};
        }
        if (in.rq_log_stride != 0) {
            return {OHCA_STATUS_BAD_FIELD, offsetof(In, rq_log_stride)};
        }
        if (auto off = nonzero_at(cmd.in, offsetof(In, rq_pbl), sizeof(in.rq_pbl))) {
            return {OHCA_STATUS_BAD_FIELD, *off};
        }
    } else if (in.rq_log_stride < OHCA_RQ_LOG_STRIDE_MIN ||
               in.rq_log_stride > OHCA_WQ_LOG_STRIDE_MAX) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, rq_log_stride)};
    }
    if (auto off = nonzero_at(cmd.in, offsetof(In, rsvd0), sizeof(in.rsvd0))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    Pd *pd = lookup(pds_, pdn);
    if (pd == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, pdn};
    }
    Srq *srq = nullptr;
    if (srqn != 0) {
        srq = find_srq(srqn);
        if (srq == nullptr) {
            return {OHCA_STATUS_BAD_HANDLE, srqn};
        }
        // XRC SRQs take no QPs: target QPs reach them per request.
        if (srq->pdn != pdn || srq->type != OHCA_SRQT_BASIC) {
            return {OHCA_STATUS_BAD_FIELD, offsetof(In, srqn)};
        }
    }
    if (lookup(cqs_, scqn) == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, scqn};
    }
    if (!ini && lookup(cqs_, rcqn) == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, rcqn};
    }
    if (uar >= OHCA_NUM_DB_PAGES || (uar != 0 && !uars_.allocated(uar))) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, uar_index)};
    }
    if (max_inline > (1u << in.sq_log_stride) - sq_hdr ||
        max_inline > DeviceLimits::max_inline_data) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, max_inline)};
    }
    Qp qp;
    qp.pdn = pdn;
    qp.send_cqn = scqn;
    qp.recv_cqn = rcqn;
    qp.uar = uar;
    qp.max_inline = max_inline;
    qp.srqn = srqn;
    qp.sq.log_size = in.sq_log_size;
    qp.sq.log_stride = in.sq_log_stride;
    qp.rq.log_size = in.rq_log_size;
    qp.rq.log_stride = in.rq_log_stride;
    auto r =
        qp.sq.ring.load(host_, in.sq_pbl, uint64_t{qp.sq.size()} << qp.sq.log_stride, pbl_room());
    if (r.error != PageList::Error::None) {
        return pbl_error(r, offsetof(In, sq_pbl));
    }
    if (srq == nullptr && !ini) {
        r = qp.rq.ring.load(host_, in.rq_pbl, uint64_t{qp.rq.size()} << qp.rq.log_stride,
                            pbl_room() - qp.sq.ring.npages());
        if (r.error != PageList::Error::None) {
            return pbl_error(r, offsetof(In, rq_pbl));
        }
    }
    std::optional<uint32_t> qpn;
    if (in.type == OHCA_QPT_GSI) {
        // QP 1, one per device, owned by the kernel's doorbell page.
        if (uar != 0) {
            return {OHCA_STATUS_BAD_FIELD, offsetof(In, uar_index)};
        }
        if (qps_[OHCA_GSI_QPN]) {
            return {OHCA_STATUS_BAD_STATE, OHCA_GSI_QPN};
        }
        qpn = OHCA_GSI_QPN;
    } else {
        qpn = free_qpn();
    }
    if (!qpn) {
        return {OHCA_STATUS_NO_RESOURCES, 0};
    }
    if (CmdResult res = write_create_out(cmd, *qpn, 0); res.status != OHCA_STATUS_OK) {
        return res;
    }
    qp.qpn = *qpn;
    qp.type = in.type;
    if (in.type != OHCA_QPT_GSI) {
        next_qpn_ = *qpn + 1;
    }
    pbl_.charge(qp.sq.ring.npages() + qp.rq.ring.npages());
    qps_[*qpn] = std::make_unique<Qp>(std::move(qp));
    ++pd->refs;
    ++cqs_[scqn]->qp_refs;
    if (!ini) {
        ++cqs_[rcqn]->qp_refs;
    }
    ++uar_refs_[uar];
    if (srq != nullptr) {
        ++srq->qp_refs;
    }
    return {};
}

CmdResult Device::cmd_destroy_qp(const Command &cmd) {
    const auto in = cmd.input<ohca_handle_in>();
    const uint32_t qpn = le(in.handle);
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_handle_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    Qp *qp = find_qp(qpn);
    if (qp == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, qpn};
    }
    if (qp->flows != 0) {
        // Flows name the QP: they go first (as the verbs core does).
        return {OHCA_STATUS_BAD_STATE, qpn};
    }
    if (qp->type == OHCA_QPT_XRC_TGT) {
        xrc_.put(qp->xrcdn); // its PD, CQ and SRQ were borrowed per request
    } else {
        if (Pd *pd = lookup(pds_, qp->pdn)) {
            --pd->refs;
        }
        if (Cq *cq = lookup(cqs_, qp->send_cqn)) {
            --cq->qp_refs;
        }
        if (Cq *cq = lookup(cqs_, qp->recv_cqn)) {
            --cq->qp_refs;
        }
        if (Srq *srq = find_srq(qp->srqn)) {
            --srq->qp_refs;
        }
    }
    --uar_refs_[qp->uar];
    pbl_.release(qp->sq.ring.npages() + qp->rq.ring.npages());
    mcast_.detach_all(qpn);
    if (qp->windows != 0) {
        keys_.unbind_qp_windows(*qp); // their QP is gone: nothing can use them
    }
    unschedule(*qp);
    qps_[qpn].reset();
    update_timer();
    return {};
}

CmdResult Device::cmd_modify_qp(const Command &cmd) {
    using In = ohca_modify_qp_in;
    constexpr size_t A = offsetof(In, attr);
    const auto in = cmd.input<In>();
    const uint32_t qpn = le(in.qpn);
    const uint32_t mask = le(in.attr_mask);
    const ohca_qp_attr &a = in.attr;
    Qp *qp = find_qp(qpn);
    if (qp == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, qpn};
    }
    constexpr uint32_t kKnown = OHCA_QP_STATE | OHCA_QP_CUR_STATE | OHCA_QP_ACCESS_FLAGS |
                                OHCA_QP_PKEY_INDEX | OHCA_QP_PORT | OHCA_QP_QKEY | OHCA_QP_AV |
                                OHCA_QP_PATH_MTU | OHCA_QP_TIMEOUT | OHCA_QP_RETRY_CNT |
                                OHCA_QP_RNR_RETRY | OHCA_QP_RQ_PSN | OHCA_QP_MAX_QP_RD_ATOMIC |
                                OHCA_QP_MIN_RNR_TIMER | OHCA_QP_SQ_PSN |
                                OHCA_QP_MAX_DEST_RD_ATOMIC | OHCA_QP_DEST_QPN | OHCA_QP_UDP_SPORT;
    if ((mask & ~kKnown) != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, attr_mask)};
    }
    // The source port goes with the path: only together with the AV.
    if ((mask & OHCA_QP_UDP_SPORT) != 0 && (mask & OHCA_QP_AV) == 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, attr_mask)};
    }
    if ((mask & OHCA_QP_UDP_SPORT) != 0 && le(in.udp_sport) < OHCA_UDP_SPORT_MIN) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, udp_sport)};
    }
    if (auto off = nonzero_at(cmd.in, offsetof(In, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    const uint8_t cur = qp->state;
    if ((mask & OHCA_QP_STATE) != 0 && a.qp_state > OHCA_QPS_ERR) {
        return {OHCA_STATUS_BAD_FIELD, A + offsetof(ohca_qp_attr, qp_state)};
    }
    if ((mask & OHCA_QP_CUR_STATE) != 0 && a.cur_qp_state != cur) {
        return {OHCA_STATUS_BAD_FIELD, A + offsetof(ohca_qp_attr, cur_qp_state)};
    }
    const uint8_t next = (mask & OHCA_QP_STATE) != 0 ? a.qp_state : cur;
    // UDP_SPORT goes with the AV of a connected QP (RC, UC).
    const uint32_t cm = mask & ~uint32_t{OHCA_QP_UDP_SPORT};
    const bool mask_ok = qp->type == OHCA_QPT_RC        ? qp_mask_ok(cur, next, cm)
                         : qp->type == OHCA_QPT_UC      ? uc_qp_mask_ok(cur, next, cm)
                         : is_xrc_qp(qp->type)          ? xrc_qp_mask_ok(qp->type, cur, next, cm)
                         : qp->type == OHCA_QPT_RAW_ETH ? raw_qp_mask_ok(cur, next, mask)
                                                        : ud_qp_mask_ok(cur, next, mask);
    if (!mask_ok) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, attr_mask)};
    }
    auto bad = [](size_t field) -> CmdResult {
        return {OHCA_STATUS_BAD_FIELD, static_cast<uint32_t>(A + field)};
    };
    if ((mask & OHCA_QP_ACCESS_FLAGS) != 0 && (le(a.access_flags) & ~kAccessAll) != 0) {
        return bad(offsetof(ohca_qp_attr, access_flags));
    }
    if ((mask & OHCA_QP_PKEY_INDEX) != 0 && le(a.pkey_index) >= DeviceLimits::pkey_table_len) {
        return bad(offsetof(ohca_qp_attr, pkey_index));
    }
    if ((mask & OHCA_QP_PATH_MTU) != 0 && (a.path_mtu < 1 || a.path_mtu > 5)) {
        return bad(offsetof(ohca_qp_attr, path_mtu));
    }
    if ((mask & OHCA_QP_TIMEOUT) != 0 && a.timeout > 31) {
        return bad(offsetof(ohca_qp_attr, timeout));
    }
    if ((mask & OHCA_QP_RETRY_CNT) != 0 && a.retry_cnt > 7) {
        return bad(offsetof(ohca_qp_attr, retry_cnt));
    }
    if ((mask & OHCA_QP_RNR_RETRY) != 0 && a.rnr_retry > 7) {
        return bad(offsetof(ohca_qp_attr, rnr_retry));
    }
    if ((mask & OHCA_QP_MIN_RNR_TIMER) != 0 && a.min_rnr_timer > 31) {
        return bad(offsetof(ohca_qp_attr, min_rnr_timer));
    }
    if ((mask & OHCA_QP_MAX_QP_RD_ATOMIC) != 0 &&
        a.max_rd_atomic > DeviceLimits::max_qp_init_rd_atom) {
        return bad(offsetof(ohca_qp_attr, max_rd_atomic));
    }
    if ((mask & OHCA_QP_MAX_DEST_RD_ATOMIC) != 0 &&
        a.max_dest_rd_atomic > DeviceLimits::max_qp_rd_atom) {
        return bad(offsetof(ohca_qp_attr, max_dest_rd_atomic));
    }
    if ((mask & OHCA_QP_DEST_QPN) != 0 && le(a.dest_qpn) > kPsnMask) {
        return bad(offsetof(ohca_qp_attr, dest_qpn));
    }
    if ((mask & OHCA_QP_RQ_PSN) != 0 && le(a.rq_psn) > kPsnMask) {
        return bad(offsetof(ohca_qp_attr, rq_psn));
    }
    if ((mask & OHCA_QP_SQ_PSN) != 0 && le(a.sq_psn) > kPsnMask) {
        return bad(offsetof(ohca_qp_attr, sq_psn));
    }
    if ((mask & OHCA_QP_AV) != 0) {
        if (auto off = av_bad_field(gids_, a.av)) {
            return bad(offsetof(ohca_qp_attr, av) + *off);
        }
    }

    // Commit.
    QpAttrs &s = qp->attrs;
    if ((mask & OHCA_QP_ACCESS_FLAGS) != 0) {
        s.access = le(a.access_flags);
    }
    if ((mask & OHCA_QP_PKEY_INDEX) != 0) {
        s.pkey_index = le(a.pkey_index);
    }
    if ((mask & OHCA_QP_QKEY) != 0) {
        s.qkey = le(a.qkey);
    }
    if ((mask & OHCA_QP_AV) != 0) {
        s.av = a.av;
        s.udp_sport = (mask & OHCA_QP_UDP_SPORT) != 0 ? le(in.udp_sport) : 0;
    }
    if ((mask & OHCA_QP_PATH_MTU) != 0) {
        s.path_mtu = a.path_mtu;
    }
    if ((mask & OHCA_QP_TIMEOUT) != 0) {
        s.timeout = a.timeout;
    }
    if ((mask & OHCA_QP_RETRY_CNT) != 0) {
        s.retry_cnt = a.retry_cnt;
    }
    if ((mask & OHCA_QP_RNR_RETRY) != 0) {
        s.rnr_retry = a.rnr_retry;
    }
    if ((mask & OHCA_QP_RQ_PSN) != 0) {
        s.rq_psn = le(a.rq_psn);
    }
    if ((mask & OHCA_QP_MAX_QP_RD_ATOMIC) != 0) {
        s.max_rd_atomic = a.max_rd_atomic;
    }
    if ((mask & OHCA_QP_MIN_RNR_TIMER) != 0) {
        s.min_rnr_timer = a.min_rnr_timer;
    }
    if ((mask & OHCA_QP_SQ_PSN) != 0) {
        s.sq_psn = le(a.sq_psn);
    }
    if ((mask & OHCA_QP_MAX_DEST_RD_ATOMIC) != 0) {
        s.max_dest_rd_atomic = a.max_dest_rd_atomic;
        qp->resp.set_capacity(a.max_dest_rd_atomic);
    }
    if ((mask & OHCA_QP_DEST_QPN) != 0) {
        s.dest_qpn = le(a.dest_qpn);
    }
    apply_qp_state(*qp, next);
    return {};
}

void Device::apply_qp_state(Qp &qp, uint8_t next) {
    const uint8_t cur = qp.state;
    qp.state = next;
    switch (next) {
    case OHCA_QPS_RESET: {
        unschedule(qp);
        Qp fresh;
        fresh.qpn = qp.qpn;
        fresh.type = qp.type;
        fresh.pdn = qp.pdn;
        fresh.send_cqn = qp.send_cqn;
        fresh.recv_cqn = qp.recv_cqn;
        fresh.uar = qp.uar;
        fresh.max_inline = qp.max_inline;
        fresh.srqn = qp.srqn;
        fresh.xrcdn = qp.xrcdn;
        if (qp.type == OHCA_QPT_XRC_TGT) {
            // Borrowed from the last request's SRQ, not its own.
            fresh.srqn = 0;
            fresh.pdn = 0;
            fresh.recv_cqn = 0;
        }
        fresh.windows = qp.windows; // type 2 windows stay bound through it
        fresh.flows = qp.flows;     // and flows keep steering to it
        fresh.sq = std::move(qp.sq);
        fresh.rq = std::move(qp.rq);
        fresh.sq.pi = fresh.sq.ci = 0;
        fresh.rq.pi = fresh.rq.ci = 0;
        qp = std::move(fresh);
        update_timer();
        break;
    }
    case OHCA_QPS_RTR:
        if (cur == OHCA_QPS_INIT) {
            qp.epsn = qp.attrs.rq_psn;
            qp.msn = 0;
            qp.resp.reset(qp.attrs.max_dest_rd_atomic);
            qp.comm_est = false;
        }
        break;
    case OHCA_QPS_RTS:
        if (cur == OHCA_QPS_RTR) {
            qp.next_psn = qp.attrs.sq_psn;
            qp.una_psn = qp.attrs.sq_psn;
            qp.sent_psn = qp.attrs.sq_psn;
            qp.cwnd = initial_window(qp);
            qp.ssthresh = DeviceLimits::max_window;
            qp.cwnd_acked = 0;
            qp.recovering = false;
        }
        qp.retry_left = qp.attrs.retry_cnt;
        qp.rnr_left = qp.attrs.rnr_retry;
        qp.rnr_streak = 0;
        qp.sq_draining = false;
        mark_ready(qp);
        break;
    case OHCA_QPS_SQD:
        if (cur == OHCA_QPS_RTS) {
            qp.sq_draining = true;
            mark_ready(qp);
        }
        break;
    case OHCA_QPS_ERR:
        if (cur != OHCA_QPS_ERR) {
            qp.state = cur;
            qp_to_error(qp);
        }
        break;
    default:
        break;
    }
}

CmdResult Device::cmd_query_qp(const Command &cmd) {
    const auto in = cmd.input<ohca_handle_in>();
    const uint32_t qpn = le(in.handle);
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_handle_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    const Qp *qp = find_qp(qpn);
    if (qp == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, qpn};
    }
    const QpAttrs &s = qp->attrs;
    ohca_qp_attr out{};
    out.qp_state = qp->state;
    out.cur_qp_state = qp->state;
    out.path_mtu = s.path_mtu;
    out.timeout = s.timeout;
    out.retry_cnt = s.retry_cnt;
    out.rnr_retry = s.rnr_retry;
    out.min_rnr_timer = s.min_rnr_timer;
    out.max_rd_atomic = s.max_rd_atomic;
    out.max_dest_rd_atomic = s.max_dest_rd_atomic;
    out.sq_draining = qp->sq_draining ? 1 : 0;
    out.pkey_index = le(s.pkey_index);
    out.access_flags = le(s.access);
    out.dest_qpn = le(s.dest_qpn);
    out.rq_psn = le(s.rq_psn);
    out.sq_psn = le(s.sq_psn);
    out.qkey = le(s.qkey);
    out.av = s.av;
    return write_output(cmd, &out, sizeof(out));
}

} // namespace ohca
