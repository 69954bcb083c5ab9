// SPDX-License-Identifier: GPL-2.0-or-later
// RESIZE_CQ (programming manual, "Resizing a CQ"): a CQ moves to a new ring
// with the CQEs its consumer has not returned yet, all or nothing.
#include "link/byte_order.hpp"
#include "objects/cq.hpp"
#include "objects/db_record.hpp"
#include "objects/qp_table.hpp"

#include <algorithm>
#include <array>

namespace ohca {

namespace {

// CQEs per DMA: bounds the stack buffer; the work is bounded by the
// largest ring (2^OHCA_CQ_LOG_MAX entries, 32 MiB read and written once).
constexpr uint32_t kCopyChunk = 64;

} // namespace

CmdResult CqTable::cmd_resize_cq(const Command &cmd, const QpTable &qps) {
    const auto in = cmd.input<ohca_resize_cq_in>();
    const uint32_t cqn = le(in.cqn);
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_resize_cq_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    Cq *cq = cqn < cqs_.size() ? cqs_[cqn].get() : nullptr;
    if (cq == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, cqn};
    }
    if (cq->error) {
        return {OHCA_STATUS_BAD_STATE, cqn};
    }
    // What the consumer has not returned through the CQ doorbell or its
    // record.
    (void)records_.refresh_cq_ci(*cq);
    const uint32_t n = cq->pi - cq->ci;
    // And what the device owes the CQ for work it has been given: a CQE
    // for each send WQE rung and not yet completed (unsignaled ones
    // counted too), and in ERR the flush of each posted receive. A ring
    // that cannot hold them would overrun; the QP table keeps the CQ's QPs,
    // so this looks at those only.
    const uint64_t owed = cq->qp_refs != 0 ? qps.cqes_owed(*cq) : 0;
    if (in.log_size < 1 || in.log_size > OHCA_CQ_LOG_MAX ||
        n + owed > (uint64_t{1} << in.log_size)) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_resize_cq_in, log_size)};
    }
    // The old ring's entries return to the budget once the CQ moves.
    PageList ring;
    const auto r = ring.load(host_, in.pbl, (uint64_t{1} << in.log_size) * sizeof(ohca_cqe),
                             pbl_.room() + cq->ring.npages());
    if (r.error != PageList::Error::None) {
        return pbl_error(r, offsetof(ohca_resize_cq_in, pbl));
    }

    // Copy [ci, pi) of the old ring to [0, n) of the new one, in runs that
    // do not cross the old ring's end; the owner bit becomes the first
    // pass's. The CQ is untouched until everything succeeded.
    const uint32_t old_size = 1u << cq->log_size;
    std::array<ohca_cqe, kCopyChunk> buf{};
    for (uint32_t done = 0; done < n;) {
        const uint32_t slot = (cq->ci + done) & (old_size - 1);
        const uint32_t k = std::min({kCopyChunk, n - done, old_size - slot});
        if (!cq->ring.read(host_, uint64_t{slot} * sizeof(ohca_cqe), buf.data(),
                           size_t{k} * sizeof(ohca_cqe))) {
            return {OHCA_STATUS_BAD_ADDR, 0};
        }
        for (uint32_t i = 0; i < k; ++i) {
            buf[i].owner = OHCA_CQE_OWNER;
        }
        if (!ring.write(host_, uint64_t{done} * sizeof(ohca_cqe), buf.data(),
                        size_t{k} * sizeof(ohca_cqe))) {
            return {OHCA_STATUS_BAD_ADDR, 0};
        }
        done += k;
    }
    ohca_resize_cq_out out{};
    out.cqes = le(n);
    if (CmdResult res = write_output(host_, cmd, &out, sizeof(out)); res.status != OHCA_STATUS_OK) {
        return res;
    }
    pbl_.release(cq->ring.npages());
    pbl_.charge(ring.npages());
    cq->ring = std::move(ring);
    cq->log_size = in.log_size;
    cq->pi = n;
    cq->ci = 0;
    records_.restart_cq_ci(*cq);
    return {};
}

} // namespace ohca
