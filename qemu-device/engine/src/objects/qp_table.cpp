// SPDX-License-Identifier: GPL-2.0-or-later
// The QP commands (programming manual section 8) and the QP state machine.
// Every command validates all of its input before it changes any state.
#include "objects/qp_table.hpp"

#include "device/ib_port.hpp"

#include "link/byte_order.hpp"
#include "objects/cq.hpp"
#include "objects/db_record.hpp"
#include "objects/pd.hpp"
#include "objects/qp_state.hpp"
#include "objects/srq.hpp"
#include "objects/wq.hpp"
#include "transports/transport.hpp"
#include "transports/ud.hpp"
#include "transports/xrc.hpp"

#include <algorithm>

namespace ohca {

void QpTable::release_xrc_srq(uint32_t srqn) {
    for (const auto &q : qps_) {
        if (q && q->type == OHCA_QPT_XRC_TGT && q->srqn == srqn) {
            ohca::release_xrc_srq(*q);
        }
    }
}

void QpTable::reset() {
    qps_.clear();
    qps_.resize(max_qp_ + DeviceLimits::first_qpn);
    qpns_.init(DeviceLimits::first_qpn, max_qp_);
}

void QpTable::link_cqs(const Qp &qp) {
    if (Cq *cq = d_.cqs.find(qp.send_cqn)) {
        cq->qpns.push_back(qp.qpn);
    }
    if (qp.recv_cqn != qp.send_cqn) {
        if (Cq *cq = d_.cqs.find(qp.recv_cqn)) {
            cq->qpns.push_back(qp.qpn);
        }
    }
}

void QpTable::unlink_cqs(const Qp &qp) {
    auto drop = [&](uint32_t cqn) {
        if (Cq *cq = d_.cqs.find(cqn)) {
            auto it = std::find(cq->qpns.begin(), cq->qpns.end(), qp.qpn);
            if (it != cq->qpns.end()) {
                *it = cq->qpns.back();
                cq->qpns.pop_back();
            }
        }
    };
    drop(qp.send_cqn);
    if (qp.recv_cqn != qp.send_cqn) {
        drop(qp.recv_cqn);
    }
}

uint64_t QpTable::cqes_owed(const Cq &cq) const {
    uint64_t owed = 0;
    for (const uint32_t qpn : cq.qpns) {
        const Qp *q = find(qpn);
        if (q == nullptr) {
            continue;
        }
        if (q->send_cqn == cq.cqn) {
            owed += q->sq.pi - q->sq.ci;
        }
        if (q->recv_cqn == cq.cqn && q->state == OHCA_QPS_ERR && q->srqn == 0) {
            owed += q->rq.pi - q->rq.ci + (q->recv_loaded ? 1 : 0);
        }
    }
    return owed;
}

CmdResult QpTable::cmd_create_qp(const Command &cmd) {
    using In = ohca_create_qp_in;
    // The input of ABI 1.6 or the one grown by rq_db_record (beyond
    // in_len the input reads as zero).
    if (cmd.in_len != OHCA_CREATE_QP_IN_V1_SIZE && cmd.in_len != sizeof(In)) {
        return {OHCA_STATUS_BAD_LEN, OHCA_CREATE_QP_IN_V1_SIZE};
    }
    const auto in = cmd.input<In>();
    const uint32_t pdn = le(in.pdn);
    const uint32_t scqn = le(in.send_cqn);
    const uint32_t rcqn = le(in.recv_cqn);
    const uint32_t uar = le(in.uar_index);
    const uint32_t max_inline = le(in.max_inline);
    const uint32_t srqn = le(in.srqn);
    if (in.type != OHCA_QPT_RC && in.type != OHCA_QPT_UD && in.type != OHCA_QPT_GSI &&
        in.type != OHCA_QPT_UC && in.type != OHCA_QPT_XRC_INI && in.type != OHCA_QPT_XRC_TGT &&
        in.type != OHCA_QPT_RAW_ETH && in.type != OHCA_QPT_SMI) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, type)};
    }
    // QP0 only on an InfiniBand port, raw Ethernet QPs only on Ethernet.
    if ((in.type == OHCA_QPT_SMI && d_.ib == nullptr) ||
        (in.type == OHCA_QPT_RAW_ETH && d_.ib != nullptr)) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, type)};
    }
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
        if (!d_.xrc.domain_exists(xrcdn)) {
            return {OHCA_STATUS_BAD_HANDLE, xrcdn};
        }
        CmdResult res;
        Qp *qp = add_queueless(cmd, in.type, res);
        if (qp == nullptr) {
            return res;
        }
        qp->xrcdn = xrcdn;
        ++d_.uar_refs[0];
        d_.xrc.get(xrcdn);
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
    // A record only for an RQ of the QP's own.
    const uint64_t rq_record = le(in.rq_db_record);
    if (!db_record_addr_ok(rq_record) || (rq_record != 0 && (srqn != 0 || ini))) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, rq_db_record)};
    }
    Pd *pd = d_.pds.find(pdn);
    if (pd == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, pdn};
    }
    Srq *srq = nullptr;
    if (srqn != 0) {
        srq = d_.srqs.find(srqn);
        if (srq == nullptr) {
            return {OHCA_STATUS_BAD_HANDLE, srqn};
        }
        // XRC SRQs take no QPs: target QPs reach them per request.
        if (srq->pdn != pdn || srq->type != OHCA_SRQT_BASIC) {
            return {OHCA_STATUS_BAD_FIELD, offsetof(In, srqn)};
        }
    }
    if (d_.cqs.find(scqn) == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, scqn};
    }
    if (!ini && d_.cqs.find(rcqn) == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, rcqn};
    }
    if (uar >= OHCA_NUM_DB_PAGES || (uar != 0 && !d_.uars.allocated(uar))) {
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
    qp.rq.db_record = rq_record;
    auto r = qp.sq.ring.load(d_.host, in.sq_pbl, uint64_t{qp.sq.size()} << qp.sq.log_stride,
                             d_.pbl.room());
    if (r.error != PageList::Error::None) {
        return pbl_error(r, offsetof(In, sq_pbl));
    }
    if (srq == nullptr && !ini) {
        r = qp.rq.ring.load(d_.host, in.rq_pbl, uint64_t{qp.rq.size()} << qp.rq.log_stride,
                            d_.pbl.room() - qp.sq.ring.npages());
        if (r.error != PageList::Error::None) {
            return pbl_error(r, offsetof(In, rq_pbl));
        }
    }
    std::optional<uint32_t> qpn;
    if (in.type == OHCA_QPT_GSI || in.type == OHCA_QPT_SMI) {
        // QP 1 (QP 0), one per device, owned by the kernel's doorbell page.
        const uint32_t special = in.type == OHCA_QPT_GSI ? OHCA_GSI_QPN : 0;
        if (uar != 0) {
            return {OHCA_STATUS_BAD_FIELD, offsetof(In, uar_index)};
        }
        if (qps_[special]) {
            return {OHCA_STATUS_BAD_STATE, special};
        }
        qpn = special;
    } else {
        qpn = free_qpn();
    }
    if (!qpn) {
        return {OHCA_STATUS_NO_RESOURCES, 0};
    }
    if (CmdResult res = write_create_out(d_.host, cmd, *qpn, 0); res.status != OHCA_STATUS_OK) {
        return res;
    }
    qp.qpn = *qpn;
    qp.type = in.type;
    if (in.type != OHCA_QPT_GSI && in.type != OHCA_QPT_SMI) {
        next_qpn_ = *qpn + 1;
        qpns_.take(*qpn);
    }
    d_.pbl.charge(qp.sq.ring.npages() + qp.rq.ring.npages());
    link_cqs(qp);
    qps_[*qpn] = std::make_unique<Qp>(std::move(qp));
    ++pd->refs;
    ++d_.cqs.find(scqn)->qp_refs;
    if (!ini) {
        ++d_.cqs.find(rcqn)->qp_refs;
    }
    ++d_.uar_refs[uar];
    if (srq != nullptr) {
        ++srq->qp_refs;
    }
    return {};
}

Qp *QpTable::add_queueless(const Command &cmd, uint8_t type, CmdResult &res) {
    const std::optional<uint32_t> n = free_qpn();
    if (!n) {
        res = {OHCA_STATUS_NO_RESOURCES, 0};
        return nullptr;
    }
    res = write_create_out(d_.host, cmd, *n, 0);
    if (res.status != OHCA_STATUS_OK) {
        return nullptr;
    }
    auto qp = std::make_unique<Qp>();
    qp->qpn = *n;
    qp->type = type;
    qps_[*n] = std::move(qp);
    qpns_.take(*n);
    next_qpn_ = *n + 1;
    return qps_[*n].get();
}

CmdResult QpTable::create_rss_qp(const Command &cmd, uint32_t pdn, uint32_t slot) {
    if (d_.ib != nullptr) {
        return {OHCA_STATUS_BAD_STATE, 0}; // raw Ethernet QPs only on Ethernet
    }
    Pd *pd = d_.pds.find(pdn);
    if (pd == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, pdn};
    }
    CmdResult res;
    Qp *qp = add_queueless(cmd, OHCA_QPT_RAW_ETH, res);
    if (qp == nullptr) {
        return res;
    }
    qp->pdn = pdn;
    qp->rss = slot;
    ++pd->refs;
    ++d_.uar_refs[0];
    return {};
}

CmdResult QpTable::cmd_destroy_qp(const Command &cmd) {
    const auto in = cmd.input<ohca_handle_in>();
    const uint32_t qpn = le(in.handle);
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_handle_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    Qp *qp = find(qpn);
    if (qp == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, qpn};
    }
    if (qp->flows != 0) {
        // Flows name the QP: they go first (as the verbs core does).
        return {OHCA_STATUS_BAD_STATE, qpn};
    }
    if (qp->rss != 0 && rss_owner_ != nullptr) {
        rss_owner_->release_rss(qp->rss); // its table may go now
    }
    if (qp->type == OHCA_QPT_XRC_TGT) {
        d_.xrc.put(qp->xrcdn); // its PD, CQ and SRQ were borrowed per request
    } else {
        if (Pd *pd = d_.pds.find(qp->pdn)) {
            --pd->refs;
        }
        if (Cq *cq = d_.cqs.find(qp->send_cqn)) {
            --cq->qp_refs;
        }
        if (Cq *cq = d_.cqs.find(qp->recv_cqn)) {
            --cq->qp_refs;
        }
        if (Srq *srq = d_.srqs.find(qp->srqn)) {
            --srq->qp_refs;
        }
        unlink_cqs(*qp);
    }
    --d_.uar_refs[qp->uar];
    d_.pbl.release(qp->sq.ring.npages() + qp->rq.ring.npages());
    d_.mcast.detach_all(qpn);
    if (qp->windows != 0) {
        d_.windows.unbind_qp_windows(*qp); // their QP is gone: nothing can use them
    }
    d_.sched.unschedule(*qp);
    qps_[qpn].reset();
    if (qpn >= DeviceLimits::first_qpn) {
        qpns_.release(qpn);
    }
    d_.sched.update_timer();
    return {};
}

CmdResult QpTable::cmd_modify_qp(const Command &cmd) {
    using In = ohca_modify_qp_in;
    constexpr size_t A = offsetof(In, attr);
    const auto in = cmd.input<In>();
    const uint32_t qpn = le(in.qpn);
    const uint32_t mask = le(in.attr_mask);
    const ohca_qp_attr &a = in.attr;
    Qp *qp = find(qpn);
    if (qp == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, qpn};
    }
    if (qp->rss != 0) {
        return {OHCA_STATUS_BAD_STATE, qpn}; // no queues, no states to walk
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
    const uint32_t pkeys = d_.ib != nullptr ? IbPort::kPkeyTableLen : DeviceLimits::pkey_table_len;
    if ((mask & OHCA_QP_PKEY_INDEX) != 0 && le(a.pkey_index) >= pkeys) {
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
        if (auto off = d_.ib != nullptr ? av_ib_bad_field(a.av) : av_bad_field(d_.gids, a.av)) {
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
    apply_state(*qp, next);
    return {};
}

void QpTable::apply_state(Qp &qp, uint8_t next) {
    const uint8_t cur = qp.state;
    qp.state = next;
    switch (next) {
    case OHCA_QPS_RESET: {
        d_.sched.unschedule(qp);
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
        d_.sched.update_timer();
        break;
    }
    case OHCA_QPS_RTR:
        if (cur == OHCA_QPS_INIT) {
            qp.epsn = qp.attrs.rq_psn;
            qp.msn = 0;
            qp.resp.reset(qp.attrs.max_dest_rd_atomic);
            qp.comm_est = false;
            qp.credits_zero_sent = false;
        }
        break;
    case OHCA_QPS_RTS:
        if (cur == OHCA_QPS_RTR) {
            qp.next_psn = qp.attrs.sq_psn;
            qp.una_psn = qp.attrs.sq_psn;
            qp.sent_psn = qp.attrs.sq_psn;
            qp.ack_req_psn = qp.attrs.sq_psn;
            qp.cwnd = initial_window(qp);
            qp.ssthresh = DeviceLimits::max_window;
            qp.cwnd_acked = 0;
            qp.recovering = false;
            // No credits known: the first message may go as a probe.
            qp.ssn = 0;
            qp.credit_lsn = 0;
            qp.credits_unlimited = false;
            qp.credit_probe = true;
            qp.credit_wait = false;
        }
        qp.retry_left = qp.attrs.retry_cnt;
        qp.rnr_left = qp.attrs.rnr_retry;
        qp.rnr_streak = 0;
        qp.sq_draining = false;
        d_.sched.mark_ready(qp);
        break;
    case OHCA_QPS_SQD:
        if (cur == OHCA_QPS_RTS) {
            qp.sq_draining = true;
            d_.sched.mark_ready(qp);
        }
        break;
    case OHCA_QPS_ERR:
        if (cur != OHCA_QPS_ERR) {
            qp.state = cur;
            d_.completions.qp_to_error(qp);
        }
        break;
    default:
        break;
    }
}

CmdResult QpTable::cmd_query_qp(const Command &cmd) {
    const auto in = cmd.input<ohca_handle_in>();
    const uint32_t qpn = le(in.handle);
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_handle_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    const Qp *qp = find(qpn);
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
    // The PSNs as they are now, not as last set (IBTA's Query QP; mlx5 reads
    // next_rcv_psn/next_send_psn from the context, rxe its resp/req PSNs):
    // the responder's from RTR on, the requester's from RTS on.
    const bool receiving = qp->state >= OHCA_QPS_RTR && qp->state <= OHCA_QPS_SQE;
    const bool sending = qp->state >= OHCA_QPS_RTS && qp->state <= OHCA_QPS_SQE;
    out.rq_psn = le(receiving ? qp->epsn : s.rq_psn);
    out.sq_psn = le(sending ? qp->next_psn : s.sq_psn);
    out.qkey = le(s.qkey);
    out.av = s.av;
    return write_output(d_.host, cmd, &out, sizeof(out));
}

CmdResult QpTable::cmd_mcast(const Command &cmd, bool attach) {
    const auto in = cmd.input<ohca_mcast_in>();
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_mcast_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    Mgid gid{};
    std::copy(std::begin(in.gid), std::end(in.gid), gid.begin());
    if (!gid_is_multicast(gid)) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_mcast_in, gid)};
    }
    const uint32_t qpn = le(in.qpn);
    const Qp *qp = find(qpn);
    if (qp == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, qpn};
    }
    if (qp->type != OHCA_QPT_UD) {
        return {OHCA_STATUS_BAD_STATE, qpn};
    }
    switch (attach ? d_.mcast.attach(gid, qpn) : d_.mcast.detach(gid, qpn)) {
    case McastTable::Result::Ok:
        return {};
    case McastTable::Result::NoResources:
        return {OHCA_STATUS_NO_RESOURCES, 0};
    case McastTable::Result::Attached:
        return {OHCA_STATUS_BAD_STATE, qpn};
    case McastTable::Result::NotAttached:
        break;
    }
    return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_mcast_in, gid)};
}

// ---- doorbells ----------------------------------------------------------------

Qp *QpTable::doorbell(uint32_t page, uint32_t qpn, bool sq, uint32_t value, bool &made_ready) {
    made_ready = false;
    Qp *qp = find(qpn);
    // An XRC target has no queues, an initiator no RQ, a QP on an SRQ no
    // RQ of its own to ring.
    if (qp == nullptr || qp->uar != page || qp->state == OHCA_QPS_RESET || qp->rss != 0 ||
        qp->type == OHCA_QPT_XRC_TGT || (!sq && (qp->type == OHCA_QPT_XRC_INI || qp->srqn != 0))) {
        return nullptr;
    }
    WorkQueue &q = sq ? qp->sq : qp->rq;
    if (!take_pi(q, value)) {
        return nullptr;
    }
    // RQ in ERR: flushed by the run loop; after an ACK that advertised no
    // credits: the responder tells the requester of the new ones.
    if (sq || qp->state == OHCA_QPS_ERR || qp->credits_zero_sent) {
        d_.sched.mark_ready(*qp);
        made_ready = true;
    }
    return qp;
}

} // namespace ohca
