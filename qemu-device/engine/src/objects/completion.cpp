// SPDX-License-Identifier: GPL-2.0-or-later
// Completion queues: CQEs with owner-bit phase, CQ doorbells (consumer
// index, arming), completion events and their moderation (MODIFY_CQ),
// overrun; QP errors and flushes.
#include "device/command.hpp"
#include "device/device.hpp"
#include "link/byte_order.hpp"

#include <cstring>

namespace ohca {

void Device::post_cq_event(uint32_t eqn, uint32_t cqn) {
    if (eqn == 0) {
        post_event(OHCA_EQE_CQ_COMPLETION, 0, cqn, 0, 0);
        return;
    }
    if (eqn >= eqs_.size() || !eqs_[eqn] || eqs_[eqn]->stopped) {
        return;
    }
    ohca_eqe eqe{};
    eqe.type = OHCA_EQE_CQ_COMPLETION;
    eqe.param0 = le(cqn);
    if (eqs_[eqn]->eq.post(host_, eqe) != EventQueue::PostResult::Ok) {
        // A completion EQ that overruns its consumer (or cannot be
        // written) stops; the device and EQ 0 keep running.
        eqs_[eqn]->stopped = true;
    }
}

bool Device::post_cqe(uint32_t cqn, ohca_cqe cqe, bool solicited) {
    if (cqn >= cqs_.size() || !cqs_[cqn]) {
        return false;
    }
    Cq &cq = *cqs_[cqn];
    if (cq.error) {
        return false;
    }
    const uint32_t size = 1u << cq.log_size;
    if (cq.pi - cq.ci >= size) {
        cq.error = true;
        post_event(OHCA_EQE_CQ_ERROR, OHCA_CQ_ERR_OVERRUN, cqn, 0, 0);
        return false;
    }
    cqe.owner = ((cq.pi >> cq.log_size) & 1u) == 0 ? OHCA_CQE_OWNER : 0;
    const uint64_t off = uint64_t{cq.pi & (size - 1)} * sizeof(ohca_cqe);
    uint8_t raw[sizeof(ohca_cqe)];
    std::memcpy(raw, &cqe, sizeof(raw));
    // Body before the owner byte: one DMA where the host can order them.
    constexpr size_t body = offsetof(ohca_cqe, owner);
    if (!cq.ring.write_ordered(host_, off, raw, sizeof(raw), body, sizeof(raw) - body)) {
        cq.error = true;
        post_event(OHCA_EQE_CQ_ERROR, OHCA_CQ_ERR_ACCESS, cqn, 0, 0);
        return false;
    }
    ++cq.pi;
    host_.trace(OHCA_ENGINE_TRACE_CQE, cqn, le(cqe.qpn),
                static_cast<uint32_t>(cqe.opcode) << 8 | cqe.status, le(cqe.wr_id));
    const bool error = cqe.status != OHCA_CQE_SUCCESS;
    if (cq.arm_next || (cq.arm_solicited && (solicited || error))) {
        cq_eligible(cq, 1);
    }
    return true;
}

// ---- completion event moderation (programming manual section 20) ------------

// An armed CQ got 'n' more CQEs that its arming asks an event for. Without
// moderation the event is raised now; with it the CQEs are counted and the
// event waits for mod_count of them or for mod_period_us after the first,
// whichever comes first. MODIFY_CQ refuses a count above 1 without a
// period, so a held event always has a timer and is never lost.
void Device::cq_eligible(Cq &cq, uint32_t n) {
    cq.mod_pending = n > UINT32_MAX - cq.mod_pending ? UINT32_MAX : cq.mod_pending + n;
    const bool off = cq.mod_count <= 1 && cq.mod_period_us == 0;
    if (off || (cq.mod_count != 0 && cq.mod_pending >= cq.mod_count)) {
        raise_cq_event(cq);
    } else if (cq.deadline_ns == 0 && cq.mod_period_us != 0) {
        cq_timers_.set(cq, host_.now_ns() + uint64_t{cq.mod_period_us} * 1000);
        update_timer();
    }
}

void Device::raise_cq_event(Cq &cq) {
    cq.arm_next = false;
    cq.arm_solicited = false;
    cq.mod_pending = 0;
    if (cq.deadline_ns != 0) {
        cq_timers_.set(cq, 0);
        update_timer();
    }
    post_cq_event(cq.eqn, cq.cqn);
}

// The period of a held event ended (check_timers()).
void Device::cq_timer_expired(Cq &cq) {
    if (cq.mod_pending != 0 && (cq.arm_next || cq.arm_solicited)) {
        raise_cq_event(cq);
        return;
    }
    // Nothing held (a held event keeps its arming until it is raised, so
    // this is only defensive): the timer just goes.
    cq.mod_pending = 0;
    cq_timers_.set(cq, 0);
}

CmdResult Device::cmd_modify_cq(const Command &cmd) {
    using In = ohca_modify_cq_in;
    const auto in = cmd.input<In>();
    const uint32_t cqn = le(in.cqn);
    const uint32_t mask = le(in.mask);
    const uint16_t count = le(in.cq_count);
    const uint16_t period = le(in.cq_period);
    if (auto off = nonzero_at(cmd.in, offsetof(In, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    Cq *cq = cqn < cqs_.size() ? cqs_[cqn].get() : nullptr;
    if (cq == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, cqn};
    }
    if (mask == 0 || (mask & ~uint32_t{OHCA_MODIFY_CQ_MODERATION}) != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, mask)};
    }
    if (count > DeviceLimits::max_cq_mod_count) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, cq_count)};
    }
    // A count with no period could hold an event for ever.
    if (period > DeviceLimits::max_cq_mod_period_us || (count > 1 && period == 0)) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, cq_period)};
    }
    cq->mod_count = count;
    cq->mod_period_us = period;
    if (cq->mod_pending != 0) {
        // The held event under the new rules: released now, or its
        // period restarts from here.
        if (cq->deadline_ns != 0) {
            cq_timers_.set(*cq, 0);
        }
        cq_eligible(*cq, 0);
        update_timer();
    }
    return {};
}

void Device::cq_doorbell(uint32_t page, uint32_t cqn, uint32_t value) {
    constexpr uint32_t kArm = OHCA_DB_CQ_ARM_NEXT | OHCA_DB_CQ_ARM_SOLICITED;
    if (cqn >= cqs_.size() || !cqs_[cqn] || cqs_[cqn]->uar != page ||
        (value & ~(OHCA_DB_CQ_CI_MASK | kArm)) != 0) {
        ++stats_.db_errors;
        return;
    }
    Cq &cq = *cqs_[cqn];
    const uint32_t delta = (value - cq.ci) & OHCA_DB_CQ_CI_MASK;
    if (delta > cq.pi - cq.ci) {
        ++stats_.db_errors;
        return;
    }
    cq.ci += delta;
    if ((value & OHCA_DB_CQ_ARM_NEXT) != 0) {
        cq.arm_next = true;
        // Completions the consumer has not seen count as arrived since
        // the arming (at once without moderation); those a held event
        // already counted are not counted twice.
        const uint32_t unseen = cq.pi - cq.ci;
        if (unseen > cq.mod_pending) {
            cq_eligible(cq, unseen - cq.mod_pending);
        }
    } else if ((value & OHCA_DB_CQ_ARM_SOLICITED) != 0) {
        cq.arm_solicited = true;
    }
}

void Device::complete_send(Qp &qp, const SendWr &wr, uint8_t status, uint8_t verr) {
    ohca_cqe cqe{};
    cqe.wr_id = le(wr.wr_id);
    cqe.qpn = le(qp.qpn);
    cqe.status = status;
    cqe.vendor_err = verr;
    cqe.wqe_index = le(static_cast<uint16_t>(wr.index));
    switch (wr.opcode) {
    case OHCA_WR_RDMA_WRITE:
    case OHCA_WR_RDMA_WRITE_IMM:
        cqe.opcode = OHCA_CQE_RDMA_WRITE;
        break;
    case OHCA_WR_RDMA_READ:
        cqe.opcode = OHCA_CQE_RDMA_READ;
        break;
    case OHCA_WR_LOCAL_INV:
        cqe.opcode = OHCA_CQE_LOCAL_INV;
        break;
    case OHCA_WR_REG_MR:
        cqe.opcode = OHCA_CQE_REG_MR;
        break;
    case OHCA_WR_BIND_MW:
        cqe.opcode = OHCA_CQE_BIND_MW;
        break;
    case OHCA_WR_ATOMIC_CMP_SWP:
        cqe.opcode = OHCA_CQE_COMP_SWAP;
        break;
    case OHCA_WR_ATOMIC_FETCH_ADD:
        cqe.opcode = OHCA_CQE_FETCH_ADD;
        break;
    case OHCA_WR_ATOMIC_WRITE:
        cqe.opcode = OHCA_CQE_ATOMIC_WRITE;
        break;
    default:
        cqe.opcode = OHCA_CQE_SEND;
        break;
    }
    if (status == OHCA_CQE_SUCCESS) {
        cqe.byte_len = le(wr.length);
    }
    qp.sq.ci = wr.index + 1;
    if (status != OHCA_CQE_SUCCESS || (wr.flags & OHCA_WQE_SIGNALED) != 0) {
        (void)post_cqe(qp.send_cqn, cqe, false);
    }
}

void Device::complete_recv(Qp &qp, uint64_t wr_id, uint8_t opcode, uint32_t byte_len,
                           std::optional<uint32_t> imm, uint8_t status, uint8_t verr,
                           bool solicited, std::optional<uint32_t> invalidated) {
    ohca_cqe cqe{};
    cqe.wr_id = le(wr_id);
    cqe.qpn = le(qp.qpn);
    cqe.src_qp = le(qp.attrs.dest_qpn);
    cqe.opcode = opcode;
    cqe.status = status;
    cqe.vendor_err = verr;
    cqe.wqe_index = le(static_cast<uint16_t>(qp.srqn != 0 ? qp.recv_index : qp.rq.ci));
    if (status == OHCA_CQE_SUCCESS) {
        cqe.byte_len = le(byte_len);
        if (imm) {
            const uint32_t be = byteswap(*imm); // wire order in memory
            std::memcpy(&cqe.imm_data, &be, sizeof(be));
            cqe.flags = OHCA_CQE_F_IMM;
        } else if (invalidated) {
            cqe.imm_data = le(*invalidated);
            cqe.flags = OHCA_CQE_F_INV;
        }
    }
    if (qp.type == OHCA_QPT_XRC_TGT) {
        // The provider retires the slot of the XRC SRQ, which no QP of
        // its own may lead it to.
        cqe.flags |= OHCA_CQE_F_XRC;
        cqe.src_qp = le(qp.srqn);
    }
    if (qp.srqn == 0) {
        ++qp.rq.ci;
    }
    (void)post_cqe(qp.recv_cqn, cqe, solicited);
}

void Device::qp_to_error(Qp &qp) {
    if (qp.state == OHCA_QPS_ERR) {
        return;
    }
    qp.state = OHCA_QPS_ERR;
    qp.resp.drop_pending();
    set_deadline(qp, 0);
    qp.rnr_wait = false;
    qp.odp_wait = false;
    qp.in_msg = Qp::InMsg::None;
    // Its one held SRQ WQE is flushed with the rest; then it takes no more
    // from the SRQ, which flush_qp() reports (IBTA: Last WQE Reached).
    // (An XRC target is on no SRQ: it only borrows one per request.)
    qp.last_wqe_pending = qp.srqn != 0 && qp.type != OHCA_QPT_XRC_TGT;
    // The flush runs in process(), a bounded number of WQEs per visit.
    mark_ready(qp);
    update_timer();
}

bool Device::flush_pending(const Qp &qp) {
    return !qp.inflight.empty() || qp.sq_fetched != qp.sq.pi || qp.recv_loaded ||
           qp.rq.ci != qp.rq.pi || qp.last_wqe_pending;
}

// In the error state every outstanding and later WQE completes with
// WR_FLUSH_ERR, receive WQEs included: at most 'budget' of them (each one is
// a CQE written, most a WQE read too), the rest in the next run.
void Device::flush_qp(Qp &qp, unsigned int &budget) {
    if (qp.state != OHCA_QPS_ERR) {
        return;
    }
    qp.cur_wr = 0; // nothing is transmitted in ERR
    qp.cur_pkt = 0;
    qp.reads_pending = 0;
    qp.wqes_failed = 0;
    for (; budget > 0 && !qp.inflight.empty(); --budget) {
        complete_send(qp, qp.inflight.front(), OHCA_CQE_WR_FLUSH_ERR, OHCA_VERR_FLUSH);
        qp.inflight.pop_front();
    }
    for (; budget > 0 && qp.sq_fetched != qp.sq.pi; --budget) {
        SendWr wr;
        wr.index = qp.sq_fetched;
        ohca_send_wqe w{};
        if (qp.sq.ring.read(host_, qp.sq.offset(wr.index), &w, sizeof(w))) {
            wr.wr_id = le(w.wr_id);
            wr.opcode = w.opcode;
        }
        complete_send(qp, wr, OHCA_CQE_WR_FLUSH_ERR, OHCA_VERR_FLUSH);
        ++qp.sq_fetched;
    }
    if (budget > 0 && qp.recv_loaded) {
        complete_recv(qp, qp.recv_wr_id, OHCA_CQE_RECV, 0, std::nullopt, OHCA_CQE_WR_FLUSH_ERR,
                      OHCA_VERR_FLUSH, false);
        qp.recv_loaded = false;
        --budget;
    }
    if (qp.last_wqe_pending && !qp.recv_loaded) {
        // A QP on an SRQ: a peer can put it in ERR, so the event counts
        // against the half of EQ 0 peer-caused events may take.
        qp.last_wqe_pending = false;
        post_peer_event(OHCA_QP_EV_LAST_WQE_REACHED, qp.qpn);
    }
    for (; budget > 0 && qp.rq.ci != qp.rq.pi; --budget) {
        ohca_recv_wqe w{};
        uint64_t wr_id = 0;
        if (qp.rq.ring.read(host_, qp.rq.offset(qp.rq.ci), &w, sizeof(w))) {
            wr_id = le(w.wr_id);
        }
        complete_recv(qp, wr_id, OHCA_CQE_RECV, 0, std::nullopt, OHCA_CQE_WR_FLUSH_ERR,
                      OHCA_VERR_FLUSH, false);
    }
}

} // namespace ohca
