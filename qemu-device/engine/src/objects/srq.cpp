// SPDX-License-Identifier: GPL-2.0-or-later
// Shared receive queues: CREATE/MODIFY/QUERY/DESTROY_SRQ, the SRQ doorbell,
// and the responder taking a QP's next receive WQE from its SRQ.
#include "objects/srq.hpp"

#include "link/byte_order.hpp"
#include "objects/cq.hpp"
#include "objects/db_record.hpp"
#include "objects/pd.hpp"
#include "transports/xrc.hpp"

#include <array>

namespace ohca {

uint8_t read_recv_wqe(const Host &host, const PageList &ring, uint64_t offset, uint32_t stride,
                      unsigned int max_sge, RecvWqe &out) {
    ohca_recv_wqe w{};
    std::array<ohca_sge, DeviceLimits::max_sge> raw{};
    if (!ring.read(host, offset, &w, sizeof(w))) {
        return OHCA_VERR_DMA;
    }
    out.wr_id = le(w.wr_id);
    out.sges.clear();
    if (w.num_sge > max_sge || w.num_sge > raw.size() ||
        sizeof(w) + size_t{w.num_sge} * sizeof(ohca_sge) > stride) {
        return OHCA_VERR_BAD_WQE;
    }
    if (!ring.read(host, offset + sizeof(w), raw.data(), size_t{w.num_sge} * sizeof(ohca_sge))) {
        return OHCA_VERR_DMA;
    }
    for (unsigned int i = 0; i < w.num_sge; ++i) {
        out.sges.push_back(Sge{le(raw[i].addr), le(raw[i].length), le(raw[i].lkey)});
    }
    return OHCA_VERR_NONE;
}

bool Srq::limit_reached() {
    if (limit == 0 || available() >= limit) {
        return false;
    }
    limit = 0;
    return true;
}

namespace {

CmdResult bad_field(size_t off) {
    return {OHCA_STATUS_BAD_FIELD, static_cast<uint32_t>(off)};
}

} // namespace

void SrqTable::reset() {
    srqs_.clear();
    srqs_.resize(DeviceLimits::max_srq + 1);
}

CmdResult SrqTable::cmd_create_srq(const Command &cmd) {
    using In = ohca_create_srq_in;
    // The input of ABI 1.6 or the one grown by db_record (beyond in_len
    // the input reads as zero).
    if (cmd.in_len != OHCA_CREATE_SRQ_IN_V1_SIZE && cmd.in_len != sizeof(In)) {
        return {OHCA_STATUS_BAD_LEN, OHCA_CREATE_SRQ_IN_V1_SIZE};
    }
    const auto in = cmd.input<In>();
    const uint32_t pdn = le(in.pdn);
    const uint32_t uar = le(in.uar_index);
    const uint32_t limit = le(in.limit);
    Pd *pd = pds_.find(pdn);
    if (pd == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, pdn};
    }
    if (uar >= OHCA_NUM_DB_PAGES || (uar != 0 && !uars_.allocated(uar))) {
        return bad_field(offsetof(In, uar_index));
    }
    if (in.log_size < 1 || in.log_size > DeviceLimits::max_wq_log ||
        (1u << in.log_size) > DeviceLimits::max_srq_wr) {
        return bad_field(offsetof(In, log_size));
    }
    if (in.log_stride < OHCA_RQ_LOG_STRIDE_MIN || in.log_stride > OHCA_WQ_LOG_STRIDE_MAX) {
        return bad_field(offsetof(In, log_stride));
    }
    if (auto off = nonzero_at(cmd.in, offsetof(In, rsvd0), sizeof(in.rsvd0))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    if (limit >= (1u << in.log_size)) {
        return bad_field(offsetof(In, limit));
    }
    // An XRC SRQ names its domain and the CQ of its receives; a basic
    // one neither (its QPs have the CQs).
    const uint32_t xrcdn = le(in.xrcdn);
    const uint32_t cqn = le(in.cqn);
    if (in.type != OHCA_SRQT_BASIC && in.type != OHCA_SRQT_XRC) {
        return bad_field(offsetof(In, type));
    }
    Cq *cq = nullptr;
    if (in.type == OHCA_SRQT_XRC) {
        if (!xrc_.domain_exists(xrcdn)) {
            return {OHCA_STATUS_BAD_HANDLE, xrcdn};
        }
        cq = cqs_.find(cqn);
        if (cq == nullptr) {
            return {OHCA_STATUS_BAD_HANDLE, cqn};
        }
    } else if (xrcdn != 0) {
        return bad_field(offsetof(In, xrcdn));
    } else if (cqn != 0) {
        return bad_field(offsetof(In, cqn));
    }
    const uint64_t record = le(in.db_record);
    if (!db_record_addr_ok(record)) {
        return bad_field(offsetof(In, db_record));
    }
    Srq srq;
    srq.db_record = record;
    srq.type = in.type;
    srq.xrcdn = xrcdn;
    srq.cqn = cqn;
    srq.pdn = pdn;
    srq.uar = uar;
    srq.log_size = in.log_size;
    srq.log_stride = in.log_stride;
    srq.limit = limit;
    // The copied page list counts against the device's page-list budget.
    const auto r =
        srq.ring.load(host_, in.pbl, uint64_t{srq.size()} << srq.log_stride, pbl_.room());
    if (r.error == PageList::Error::Dma) {
        return {OHCA_STATUS_BAD_ADDR, 0};
    }
    if (r.error == PageList::Error::NoResources) {
        return {OHCA_STATUS_NO_RESOURCES, 0};
    }
    if (r.error != PageList::Error::None) {
        return bad_field(offsetof(In, pbl) + r.field);
    }
    uint32_t srqn = 0;
    for (uint32_t i = 1; i < srqs_.size(); ++i) {
        if (!srqs_[i]) {
            srqn = i;
            break;
        }
    }
    if (srqn == 0) {
        return {OHCA_STATUS_NO_RESOURCES, 0};
    }
    if (CmdResult res = write_create_out(host_, cmd, srqn, 0); res.status != OHCA_STATUS_OK) {
        return res;
    }
    pbl_.charge(srq.ring.npages());
    srqs_[srqn] = std::make_unique<Srq>(std::move(srq));
    ++pd->refs;
    if (cq != nullptr) {
        ++cq->qp_refs; // no DESTROY_CQ while the SRQ completes into it
        xrc_.get(xrcdn);
    }
    ++uar_refs_[uar];
    return {};
}

CmdResult SrqTable::cmd_modify_srq(const Command &cmd) {
    using In = ohca_modify_srq_in;
    const auto in = cmd.input<In>();
    const uint32_t srqn = le(in.srqn);
    const uint32_t mask = le(in.attr_mask);
    const uint32_t limit = le(in.limit);
    Srq *srq = find(srqn);
    if (srq == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, srqn};
    }
    if ((mask & ~uint32_t{OHCA_SRQ_LIMIT}) != 0) {
        return bad_field(offsetof(In, attr_mask));
    }
    if (auto off = nonzero_at(cmd.in, offsetof(In, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    if ((mask & OHCA_SRQ_LIMIT) != 0) {
        if (limit >= srq->size()) {
            return bad_field(offsetof(In, limit));
        }
        srq->limit = limit;
    }
    return {};
}

CmdResult SrqTable::cmd_query_srq(const Command &cmd) {
    const auto in = cmd.input<ohca_handle_in>();
    const uint32_t srqn = le(in.handle);
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_handle_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    Srq *srq = find(srqn);
    if (srq == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, srqn};
    }
    (void)records_.refresh_srq_pi(*srq); // the WQEs posted through it count
    ohca_query_srq_out out{};
    out.limit = le(srq->limit);
    out.wqes = le(srq->available());
    out.log_size = static_cast<uint8_t>(srq->log_size);
    out.log_stride = static_cast<uint8_t>(srq->log_stride);
    out.error = srq->error ? 1 : 0;
    out.qp_refs = le(srq->qp_refs);
    return write_output(host_, cmd, &out, sizeof(out));
}

CmdResult SrqTable::cmd_destroy_srq(const Command &cmd) {
    const auto in = cmd.input<ohca_handle_in>();
    const uint32_t srqn = le(in.handle);
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_handle_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    Srq *srq = find(srqn);
    if (srq == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, srqn};
    }
    if (srq->qp_refs != 0) {
        return {OHCA_STATUS_BAD_STATE, srqn};
    }
    if (srq->type == OHCA_SRQT_XRC && borrowers_ != nullptr) {
        // XRC target QPs borrow the SRQ, its PD and its CQ per request
        // (xrc.cpp) and hold no reference. A target still borrowing it lets
        // go now: its WQE is dropped (its SRQ is gone) and the rest of its
        // message is refused. Else an ERR flush would complete that WQE into
        // whichever CQ gets the freed CQ number next.
        borrowers_->release_xrc_srq(srqn);
    }
    pds_.put(srq->pdn);
    if (srq->type == OHCA_SRQT_XRC) {
        if (Cq *cq = cqs_.find(srq->cqn)) {
            --cq->qp_refs;
        }
        xrc_.put(srq->xrcdn);
    }
    --uar_refs_[srq->uar];
    pbl_.release(srq->ring.npages());
    srqs_[srqn].reset();
    return {};
}

bool SrqTable::doorbell(uint32_t page, uint32_t srqn, uint32_t value) {
    Srq *srq = find(srqn);
    // QPs waiting for a WQE are answered RNR NAK and retry on their own.
    return srq != nullptr && srq->uar == page && take_pi(*srq, value);
}

SrqTake SrqTable::take_wqe(Qp &qp) {
    Srq *srq = find(qp.srqn);
    // None known: the record (if any) may hold WQEs posted without a
    // doorbell. One 4-byte DMA read.
    if (srq == nullptr || srq->error || (srq->available() == 0 && !records_.refresh_srq_pi(*srq))) {
        return SrqTake::Empty;
    }
    RecvWqe w;
    const uint32_t index = srq->ci;
    const uint8_t verr = read_recv_wqe(host_, srq->ring, srq->offset(index), 1u << srq->log_stride,
                                       DeviceLimits::max_srq_sge, w);
    if (verr == OHCA_VERR_DMA) {
        // Nothing of the WQE is known: the SRQ stops, its QPs see it empty.
        srq->error = true;
        events_.post_event(OHCA_EQE_SRQ_EVENT, OHCA_SRQ_EV_ERR, qp.srqn, 0, 0);
        return SrqTake::Empty;
    }
    ++srq->ci;
    qp.recv_index = index;
    qp.recv_wr_id = w.wr_id;
    qp.recv_sges = std::move(w.sges);
    qp.recv_offset = 0;
    if (srq->limit != 0 && srq->available() < srq->limit) {
        // The device's producer index lags the record's after record-only
        // posts, never leads it: below the limit by its count, the record
        // says whether the consumer's really is (else the event would fire
        // while the SRQ holds enough). A read only while armed and below.
        (void)records_.refresh_srq_pi(*srq);
    }
    if (srq->limit_reached()) {
        events_.post_event(OHCA_EQE_SRQ_EVENT, OHCA_SRQ_EV_LIMIT_REACHED, qp.srqn, 0, 0);
    }
    if (verr != OHCA_VERR_NONE) {
        return SrqTake::BadWqe;
    }
    qp.recv_loaded = true;
    return SrqTake::Ok;
}

} // namespace ohca
