// SPDX-License-Identifier: GPL-2.0-or-later
// Receive WQs, indirection tables, RSS QPs' hash configuration (wq.hpp).
// Every command checks all of its input before it changes any state; a
// command's work is bounded by one ring (ERR flush: at most max_wq_wr
// CQEs) or one table (256 entries).
#include "objects/wq.hpp"

#include "link/byte_order.hpp"
#include "objects/cq.hpp"
#include "objects/pd.hpp"
#include "objects/qp_table.hpp"
#include "objects/srq.hpp"
#include "transports/transport.hpp"

#include <algorithm>

namespace ohca {

namespace {

CmdResult bad_field(size_t off) {
    return {OHCA_STATUS_BAD_FIELD, static_cast<uint32_t>(off)};
}

} // namespace

void WqTable::reset() {
    wqs_.clear();
    wqs_.resize(WqLimits::max_wq + 1);
    tables_.clear();
    tables_.resize(WqLimits::max_ind_tbl + 1);
    rss_.assign(WqLimits::max_rss_qp + 1, RssConf{});
    live_wqs_ = 0;
}

CmdResult WqTable::cmd_create_wq(const Command &cmd) {
    using In = ohca_create_wq_in;
    const auto in = cmd.input<In>();
    const uint32_t pdn = le(in.pdn);
    const uint32_t cqn = le(in.cqn);
    const uint32_t uar = le(in.uar_index);
    Pd *pd = d_.pds.find(pdn);
    if (pd == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, pdn};
    }
    Cq *cq = d_.cqs.find(cqn);
    if (cq == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, cqn};
    }
    if (uar >= OHCA_NUM_DB_PAGES || (uar != 0 && !d_.uars.allocated(uar))) {
        return bad_field(offsetof(In, uar_index));
    }
    if (in.log_size < 1 || in.log_size > DeviceLimits::max_wq_log ||
        (1u << in.log_size) > WqLimits::max_wq_wr) {
        return bad_field(offsetof(In, log_size));
    }
    if (in.log_stride < OHCA_RQ_LOG_STRIDE_MIN || in.log_stride > OHCA_WQ_LOG_STRIDE_MAX) {
        return bad_field(offsetof(In, log_stride));
    }
    if (auto off = nonzero_at(cmd.in, offsetof(In, rsvd0), sizeof(in.rsvd0))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    const std::optional<uint32_t> wqn = free_slot(wqs_);
    if (!wqn) {
        return {OHCA_STATUS_NO_RESOURCES, 0};
    }
    auto wq = std::make_unique<Wq>();
    wq->wqn = *wqn;
    wq->pdn = pdn;
    wq->cqn = cqn;
    wq->uar = uar;
    wq->log_size = in.log_size;
    wq->log_stride = in.log_stride;
    // The copied page list counts against the device's page-list budget.
    const auto r =
        wq->ring.load(d_.host, in.pbl, uint64_t{wq->size()} << wq->log_stride, d_.pbl.room());
    if (r.error != PageList::Error::None) {
        return pbl_error(r, offsetof(In, pbl));
    }
    if (CmdResult res = write_create_out(d_.host, cmd, *wqn, 0); res.status != OHCA_STATUS_OK) {
        return res;
    }
    d_.pbl.charge(wq->ring.npages());
    wqs_[*wqn] = std::move(wq);
    ++live_wqs_;
    ++pd->refs;
    ++cq->qp_refs; // no DESTROY_CQ while the WQ completes into it
    ++d_.uar_refs[uar];
    return {};
}

CmdResult WqTable::cmd_modify_wq(const Command &cmd) {
    using In = ohca_modify_wq_in;
    const auto in = cmd.input<In>();
    const uint32_t wqn = le(in.wqn);
    Wq *wq = find(wqn);
    if (wq == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, wqn};
    }
    if (in.state > OHCA_WQS_ERR) {
        return bad_field(offsetof(In, state));
    }
    if (in.cur_state != 0xff && in.cur_state > OHCA_WQS_ERR) {
        return bad_field(offsetof(In, cur_state));
    }
    if (auto off = nonzero_at(cmd.in, offsetof(In, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    if (in.cur_state != 0xff && in.cur_state != wq->state) {
        return {OHCA_STATUS_BAD_STATE, wqn};
    }
    if (in.state == OHCA_WQS_RDY && wq->state == OHCA_WQS_ERR) {
        return {OHCA_STATUS_BAD_STATE, wqn}; // through RESET, as the verbs say
    }
    wq->state = in.state;
    if (in.state == OHCA_WQS_RESET) {
        wq->pi = 0;
        wq->ci = 0;
    } else if (in.state == OHCA_WQS_ERR) {
        flush(*wq);
    }
    return {};
}

CmdResult WqTable::cmd_destroy_wq(const Command &cmd) {
    const auto in = cmd.input<ohca_handle_in>();
    const uint32_t wqn = le(in.handle);
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_handle_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    Wq *wq = find(wqn);
    if (wq == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, wqn};
    }
    if (wq->table_refs != 0) {
        return {OHCA_STATUS_BAD_STATE, wqn}; // tables go first
    }
    d_.pds.put(wq->pdn);
    if (Cq *cq = d_.cqs.find(wq->cqn)) {
        --cq->qp_refs;
    }
    --d_.uar_refs[wq->uar];
    d_.pbl.release(wq->ring.npages());
    wqs_[wqn].reset();
    --live_wqs_;
    return {};
}

CmdResult WqTable::cmd_create_ind_tbl(const Command &cmd) {
    using In = ohca_create_rwq_ind_tbl_in;
    const auto in = cmd.input<In>();
    if (in.log_size > OHCA_RWQ_IND_TBL_LOG_MAX) {
        return bad_field(offsetof(In, log_size));
    }
    if (auto off = nonzero_at(cmd.in, offsetof(In, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    const uint32_t n = 1u << in.log_size;
    for (uint32_t i = 0; i < n; ++i) {
        const uint32_t wqn = le(in.wqn[i]);
        if (find(wqn) == nullptr) {
            return {OHCA_STATUS_BAD_HANDLE, wqn};
        }
    }
    if (auto off = nonzero_at(cmd.in, offsetof(In, wqn) + n * sizeof(uint32_t),
                              (WqLimits::max_ind_tbl_size - n) * sizeof(uint32_t))) {
        return bad_field(*off);
    }
    const std::optional<uint32_t> tn = free_slot(tables_);
    if (!tn) {
        return {OHCA_STATUS_NO_RESOURCES, 0};
    }
    if (CmdResult res = write_create_out(d_.host, cmd, *tn, 0); res.status != OHCA_STATUS_OK) {
        return res;
    }
    auto t = std::make_unique<RwqIndTable>();
    t->log_size = in.log_size;
    t->wqns.reserve(n);
    for (uint32_t i = 0; i < n; ++i) {
        t->wqns.push_back(le(in.wqn[i]));
        ++find(t->wqns.back())->table_refs;
    }
    tables_[*tn] = std::move(t);
    return {};
}

CmdResult WqTable::cmd_destroy_ind_tbl(const Command &cmd) {
    const auto in = cmd.input<ohca_handle_in>();
    const uint32_t tn = le(in.handle);
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_handle_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    if (tn >= tables_.size() || !tables_[tn]) {
        return {OHCA_STATUS_BAD_HANDLE, tn};
    }
    if (tables_[tn]->qp_refs != 0) {
        return {OHCA_STATUS_BAD_STATE, tn}; // its RSS QPs go first
    }
    for (const uint32_t wqn : tables_[tn]->wqns) {
        if (Wq *wq = find(wqn)) {
            --wq->table_refs;
        }
    }
    tables_[tn].reset();
    return {};
}

CmdResult WqTable::cmd_create_rss_qp(const Command &cmd) {
    using In = ohca_create_rss_qp_in;
    const auto in = cmd.input<In>();
    const uint32_t pdn = le(in.pdn);
    const uint32_t tn = le(in.ind_tbl);
    const uint32_t fields = le(in.fields);
    if (d_.pds.find(pdn) == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, pdn};
    }
    if (tn >= tables_.size() || !tables_[tn]) {
        return {OHCA_STATUS_BAD_HANDLE, tn};
    }
    if (!rss_fields_valid(fields)) {
        return bad_field(offsetof(In, fields));
    }
    if (in.hash_function != OHCA_RSS_HASH_TOEPLITZ) {
        return bad_field(offsetof(In, hash_function));
    }
    if (auto off = nonzero_at(cmd.in, offsetof(In, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    uint32_t slot = 0;
    for (uint32_t i = 1; i < rss_.size(); ++i) {
        if (rss_[i].table == 0) {
            slot = i;
            break;
        }
    }
    if (slot == 0) {
        return {OHCA_STATUS_NO_RESOURCES, 0};
    }
    if (CmdResult res = d_.qps.create_rss_qp(cmd, pdn, slot); res.status != OHCA_STATUS_OK) {
        return res;
    }
    rss_[slot].table = tn;
    rss_[slot].fields = fields;
    std::copy(std::begin(in.key), std::end(in.key), rss_[slot].key.begin());
    ++tables_[tn]->qp_refs;
    return {};
}

void WqTable::release_rss(uint32_t slot) {
    if (slot == 0 || slot >= rss_.size() || rss_[slot].table == 0) {
        return;
    }
    if (RwqIndTable *t = tables_[rss_[slot].table].get()) {
        --t->qp_refs;
    }
    rss_[slot] = RssConf{};
}

Wq *WqTable::pick(uint32_t slot, std::span<const uint8_t> frame) {
    if (slot == 0 || slot >= rss_.size() || rss_[slot].table == 0) {
        return nullptr;
    }
    const RssConf &c = rss_[slot];
    const RwqIndTable *t = tables_[c.table].get();
    if (t == nullptr) {
        return nullptr;
    }
    const uint32_t hash = rss_hash(frame, c.fields, c.key);
    return find(t->wqns[hash & ((1u << t->log_size) - 1)]);
}

void WqTable::complete(Wq &wq, uint64_t wr_id, uint32_t byte_len, uint8_t status, uint8_t verr) {
    ohca_cqe cqe{};
    cqe.wr_id = le(wr_id);
    cqe.qpn = le(wq.wqn);
    cqe.opcode = OHCA_CQE_RECV;
    cqe.status = status;
    cqe.vendor_err = verr;
    cqe.flags = OHCA_CQE_F_WQ;
    cqe.wqe_index = le(static_cast<uint16_t>(wq.ci));
    if (status == OHCA_CQE_SUCCESS) {
        cqe.byte_len = le(byte_len);
    }
    ++wq.ci;
    (void)d_.completions.write_cqe(wq.cqn, cqe, false);
}

// Every posted WQE completes with WR_FLUSH_ERR: at most one ring.
void WqTable::flush(Wq &wq) {
    while (wq.ci != wq.pi) {
        ohca_recv_wqe w{};
        uint64_t wr_id = 0;
        if (wq.ring.read(d_.host, wq.offset(wq.ci), &w, sizeof(w))) {
            wr_id = le(w.wr_id);
        }
        complete(wq, wr_id, 0, OHCA_CQE_WR_FLUSH_ERR, OHCA_VERR_FLUSH);
    }
}

void WqTable::to_error(Wq &wq) {
    wq.state = OHCA_WQS_ERR;
    flush(wq);
}

bool WqTable::doorbell(uint32_t page, uint32_t wqn, uint32_t value) {
    Wq *wq = find(wqn);
    if (wq == nullptr || wq->uar != page) {
        return false;
    }
    if (!take_pi(*wq, value)) {
        return false;
    }
    if (wq->state == OHCA_WQS_ERR) {
        flush(*wq);
    }
    return true;
}

} // namespace ohca
