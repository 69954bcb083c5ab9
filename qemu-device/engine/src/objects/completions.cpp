// SPDX-License-Identifier: GPL-2.0-or-later
// Completions: send and receive CQEs, QP errors and flushes (Completions).
#include "objects/completions.hpp"
#include "objects/db_record.hpp"

#include "link/byte_order.hpp"

#include <cstring>

namespace ohca {

void Completions::complete_send(Qp &qp, const SendWr &wr, uint8_t status, uint8_t verr) {
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
        cqs_.post_cqe_held(qp.send_cqn, cqe, false);
    }
}

void Completions::complete_recv(Qp &qp, uint64_t wr_id, uint8_t opcode, uint32_t byte_len,
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
    cqs_.post_cqe_held(qp.recv_cqn, cqe, solicited);
}

void Completions::qp_to_error(Qp &qp) {
    if (qp.state == OHCA_QPS_ERR) {
        return;
    }
    qp.state = OHCA_QPS_ERR;
    // Receive WQEs posted through the record are flushed too (and the
    // flush reads it again for those posted before the flush ends).
    (void)records_.refresh_rq_pi(qp.rq);
    qp.resp.drop_pending();
    sched_.set_deadline(qp, 0);
    qp.rnr_wait = false;
    qp.odp_wait = false;
    qp.in_msg = Qp::InMsg::None;
    // Its one held SRQ WQE is flushed with the rest; then it takes no more
    // from the SRQ, which flush_qp() reports (IBTA: Last WQE Reached).
    // (An XRC target is on no SRQ: it only borrows one per request.)
    qp.last_wqe_pending = qp.srqn != 0 && qp.type != OHCA_QPT_XRC_TGT;
    // The flush runs in process(), a bounded number of WQEs per visit.
    sched_.mark_ready(qp);
    sched_.update_timer();
}

bool Completions::flush_pending(const Qp &qp) {
    return !qp.inflight.empty() || qp.sq_fetched != qp.sq.pi || qp.recv_loaded ||
           qp.rq.ci != qp.rq.pi || qp.last_wqe_pending;
}

// In the error state every outstanding and later WQE completes with
// WR_FLUSH_ERR, receive WQEs included: at most 'budget' of them (each one is
// a CQE written, most a WQE read too), the rest in the next run.
void Completions::flush_qp(Qp &qp, unsigned int &budget) {
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
        events_.post_peer_event(OHCA_QP_EV_LAST_WQE_REACHED, qp.qpn);
    }
    // Receive WQEs posted through the record are flushed too.
    (void)records_.refresh_rq_pi(qp.rq);
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

bool Completions::write_cqe(uint32_t cqn, const ohca_cqe &cqe, bool solicited) {
    return cqs_.post_cqe(cqn, cqe, solicited);
}

} // namespace ohca
