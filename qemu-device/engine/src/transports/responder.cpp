// SPDX-License-Identifier: GPL-2.0-or-later
// The RC responder: received RoCE packets are parsed and validated, then
// requests (SEND, RDMA WRITE, RDMA READ, atomics) are executed in PSN order
// with ACK/NAK generation; responses go to the requester (requester.cpp).
// READ and atomic responses hold the QP's responder resources
// (responder_resources.hpp), which bound what a peer can make it queue.
#include "transports/responder.hpp"
#include "device/limits.hpp"
#include "link/byte_order.hpp"
#include "objects/db_record.hpp"
#include "transports/credits.hpp"
#include "transports/opcode_seq.hpp"
#include "transports/xrc.hpp"

#include <algorithm>

namespace ohca {

namespace {

bool is_send(uint8_t op) {
    return op <= rc::kSendOnlyImm || op == rc::kSendLastInv || op == rc::kSendOnlyInv;
}
bool is_write(uint8_t op) {
    return op >= rc::kWriteFirst && op <= rc::kWriteOnlyImm;
}
bool is_atomic(uint8_t op) {
    return op == rc::kCompareSwap || op == rc::kFetchAdd;
}
// Response packets a READ of 'len' bytes takes (64-bit: no wrap for any
// 32-bit length).
uint64_t read_packets(uint32_t len, uint32_t mtu) {
    return std::max<uint64_t>(1, (uint64_t{len} + mtu - 1) / mtu);
}
bool ends_message(uint8_t op) {
    return opcode_seq(op).ends;
}
bool has_imm(uint8_t op) {
    return opcode_seq(op).imm;
}

} // namespace

// The syndrome of a positive acknowledgement (ACK, READ response, atomic
// acknowledge), taken when it is sent: the credits for the receive WQEs
// posted and not yet consumed (the one a SEND in progress fills counts:
// the AETH's MSN does not count its message yet), rounded down to a code;
// "invalid" for a QP that takes its receives from an SRQ.
uint8_t RcResponder::ack_syndrome(Qp &qp) {
    if (!credits::generates(qp)) {
        return static_cast<uint8_t>(kAethAck | credits::kInvalid);
    }
    // The doorbell (or the record's checks) keeps pi within the ring's
    // size of ci. A record is read here: one 4-byte DMA per ACK sent.
    (void)svc_.records().refresh_rq_pi(qp.rq);
    const uint8_t code = credits::code_for(qp.rq.pi - qp.rq.ci);
    qp.credits_zero_sent = code == 0;
    return static_cast<uint8_t>(kAethAck | code);
}

void RcResponder::credit_update(Qp &qp) {
    if (!qp.credits_zero_sent || qp.rq.pi == qp.rq.ci || !qp.resp.empty() ||
        (qp.state != OHCA_QPS_RTR && qp.state != OHCA_QPS_RTS && qp.state != OHCA_QPS_SQD &&
         qp.state != OHCA_QPS_SQE)) {
        // (queued responses carry the credits when they go)
        return;
    }
    send_ack(qp, psn_add(qp.epsn, kPsnMask), kAethAck);
}

void RcResponder::send_ack(Qp &qp, uint32_t psn, uint8_t syndrome, bool coalesce) {
    if (!qp.resp.empty()) {
        // Behind READ/atomic responses still being sent (bounded: it
        // replaces an ACK already waiting there).
        qp.resp.queue_ack(psn, syndrome, qp.msn);
        return;
    }
    if (svc_.tx_paused(qp)) {
        // The peer paused its priority (PFC): the ACK waits in the QP,
        // one at most (a later one replaces it), until the pause ends.
        qp.resp.queue_ack(psn, syndrome, qp.msn);
        svc_.mark_ready(qp);
        return;
    }
    if (coalesce && (syndrome & 0x60) == kAethAck) {
        // Loopback: the requester is a QP of this device, so one ACK per
        // run of looped-back requests (the QP's visit after them) does
        // what one per message did, at a packet's cost instead of many.
        // It waits in the response queue, so a READ response or atomic
        // acknowledgement that follows stays behind it, and a later ACK
        // or NAK replaces it (cumulative). NAKs go at once as before.
        qp.resp.queue_ack(psn, syndrome, qp.msn);
        svc_.mark_ready(qp);
        return;
    }
    PacketFields f;
    f.bth.opcode = rc::kAck;
    f.bth.dest_qp = qp.attrs.dest_qpn;
    f.bth.psn = psn;
    f.aeth = Aeth{(syndrome & 0x60) == kAethAck ? ack_syndrome(qp) : syndrome, qp.msn};
    rc_emit(svc_, qp, f);
}

void RcResponder::error(Qp &qp, uint8_t nak, uint16_t event) {
    ++svc_.counters().error_naks_sent;
    qp.resp.drop_pending(); // the QP goes to ERR: only the NAK is sent
    send_ack(qp, qp.epsn, static_cast<uint8_t>(kAethNak | nak));
    svc_.post_peer_event(event, qp.qpn);
    svc_.qp_to_error(qp);
}

void RcResponder::reject(Qp &qp, uint8_t nak, uint16_t event) {
    if (qp.state != OHCA_QPS_RTR && qp.state != OHCA_QPS_RTS && qp.state != OHCA_QPS_SQD &&
        qp.state != OHCA_QPS_SQE) {
        ++svc_.counters().rx_no_qp;
        return;
    }
    error(qp, nak, event);
}

bool RcResponder::load_recv_wqe(Qp &qp) {
    const uint32_t stride = 1u << qp.rq.log_stride;
    // The header and up to max_sge SGEs in one DMA read, inside this
    // WQE's slot of the ring (a slot never crosses a page).
    // Only the header is zeroed (a failed read reports its wr_id); SGEs
    // are used only within the stride, which the read filled.
    struct {
        ohca_recv_wqe w;
        std::array<ohca_sge, DeviceLimits::max_sge> sge;
    } slot;
    slot.w = {};
    static_assert(sizeof(slot) == sizeof(ohca_recv_wqe) + sizeof(slot.sge));
    const ohca_recv_wqe &w = slot.w;
    const auto &raw = slot.sge;
    uint8_t verr = OHCA_VERR_NONE;
    if (!rq_batch_.read(svc_.host(), qp.rq, qp.rq.ci, qp.rq.pi, &slot,
                        std::min<size_t>(stride, sizeof(slot)))) {
        verr = OHCA_VERR_DMA;
    } else if (w.num_sge > DeviceLimits::max_sge ||
               sizeof(w) + size_t{w.num_sge} * sizeof(ohca_sge) > stride) {
        verr = OHCA_VERR_BAD_WQE;
    }
    if (verr != OHCA_VERR_NONE) {
        svc_.complete_recv(qp, le(w.wr_id), OHCA_CQE_RECV, 0, std::nullopt, OHCA_CQE_LOC_QP_OP_ERR,
                           verr, false);
        error(qp, kNakRemoteOp, OHCA_QP_EV_FATAL);
        return false;
    }
    qp.recv_wr_id = le(w.wr_id);
    qp.recv_sges.clear();
    for (unsigned int i = 0; i < w.num_sge; ++i) {
        qp.recv_sges.push_back(Sge{le(raw[i].addr), le(raw[i].length), le(raw[i].lkey)});
    }
    qp.recv_loaded = true;
    qp.recv_offset = 0;
    return true;
}

// REMOTE_READ on the QP, and the rkey for the whole READ unless it is empty.
bool RcResponder::read_allowed(const Qp &qp, const Reth &r) {
    return (qp.attrs.access & OHCA_ACCESS_REMOTE_READ) != 0 &&
           (r.dma_len == 0 ||
            svc_.check_rkey(qp, r.rkey, r.va, r.dma_len, OHCA_ACCESS_REMOTE_READ).verr ==
                OHCA_VERR_NONE);
}

// A duplicate READ is checked like a new one and may not reach past what
// was executed; then it is answered again from its PSN, within the
// responder resources. Anything else is dropped.
void RcResponder::duplicate_read(Qp &qp, uint32_t psn, const Reth &r) {
    const uint64_t n = read_packets(r.dma_len, mtu_bytes(qp));
    const auto ahead = static_cast<uint64_t>(static_cast<int64_t>(psn_diff(qp.epsn, psn)));
    if (r.dma_len > DeviceLimits::max_msg_size || n > ahead || !read_allowed(qp, r) ||
        !qp.resp.replay_read(psn, r.va, r.rkey, r.dma_len, static_cast<uint32_t>(n), qp.msn)) {
        ++svc_.counters().rx_dup_dropped;
        return;
    }
    svc_.mark_ready(qp);
}

// A duplicate atomic is answered with the saved result, never executed
// again; without one (too old, or never executed) it is dropped.
void RcResponder::duplicate_atomic(Qp &qp, uint32_t psn) {
    if (!qp.resp.replay_atomic(psn)) {
        ++svc_.counters().rx_dup_dropped;
        return;
    }
    svc_.mark_ready(qp);
}

// An atomic at the expected PSN: checks, then the read-modify-write of the
// 8 bytes. All of the device's atomics run here one at a time, which makes
// them atomic against each other (ATOMIC_HCA), not against guest CPUs.
void RcResponder::execute_atomic(Qp &qp, const ParsedPacket &pkt) {
    const AtomicEth &a = *pkt.fields.atomic_eth;
    if ((qp.attrs.access & OHCA_ACCESS_REMOTE_ATOMIC) == 0) {
        error(qp, kNakRemoteAccess, OHCA_QP_EV_ACCESS_ERR);
        return;
    }
    if ((a.va & 7) != 0) {
        error(qp, kNakInvalidRequest, OHCA_QP_EV_REQ_ERR); // misaligned
        return;
    }
    const KeyResult k = svc_.check_rkey(qp, a.rkey, a.va, 8, OHCA_ACCESS_REMOTE_ATOMIC);
    if (k.mr == nullptr) {
        error(qp, kNakRemoteAccess, OHCA_QP_EV_ACCESS_ERR);
        return;
    }
    if (qp.resp.full()) {
        error(qp, kNakInvalidRequest, OHCA_QP_EV_REQ_ERR); // beyond max_dest_rd_atomic
        return;
    }
    if (odp_blocked(qp, svc_.odp_touch(*k.mr, a.va, 8, true), pkt.fields.bth.psn)) {
        return;
    }
    uint64_t orig = 0;
    if (!svc_.mr_read(*k.mr, a.va, &orig, sizeof(orig))) {
        error(qp, kNakRemoteOp, OHCA_QP_EV_ACCESS_ERR);
        return;
    }
    // Guest memory holds the operand little endian (x86 guests).
    orig = le(orig);
    uint64_t next = orig;
    if (pkt.fields.bth.opcode == rc::kFetchAdd) {
        next = orig + a.swap_add;
    } else if (orig == a.compare) {
        next = a.swap_add;
    }
    const uint64_t raw = le(next);
    if (next != orig && !svc_.mr_write(*k.mr, a.va, &raw, sizeof(raw))) {
        error(qp, kNakRemoteOp, OHCA_QP_EV_ACCESS_ERR);
        return;
    }
    qp.epsn = psn_add(qp.epsn, 1);
    qp.msn = (qp.msn + 1) & kPsnMask;
    (void)qp.resp.add_atomic(pkt.fields.bth.psn, orig, qp.msn);
    svc_.mark_ready(qp);
}

// An RDMA ATOMIC WRITE at the expected PSN: an 8-byte aligned WRITE of
// exactly 8 bytes, stored in one access (so a READ or atomic through the
// device sees all or none of it) and acknowledged like a WRITE. It holds
// no responder resource: a duplicate is ACKed, never executed again, as a
// duplicate WRITE is.
void RcResponder::execute_atomic_write(Qp &qp, const ParsedPacket &pkt) {
    const Reth &r = *pkt.fields.reth;
    if (r.dma_len != 8 || (r.va & 7) != 0) {
        error(qp, kNakInvalidRequest, OHCA_QP_EV_REQ_ERR);
        return;
    }
    if ((qp.attrs.access & OHCA_ACCESS_REMOTE_WRITE) == 0) {
        error(qp, kNakRemoteAccess, OHCA_QP_EV_ACCESS_ERR);
        return;
    }
    const KeyResult k = svc_.check_rkey(qp, r.rkey, r.va, 8, OHCA_ACCESS_REMOTE_WRITE);
    if (k.mr == nullptr) {
        error(qp, kNakRemoteAccess, OHCA_QP_EV_ACCESS_ERR);
        return;
    }
    if (odp_blocked(qp, svc_.odp_touch(*k.mr, r.va, 8, true), pkt.fields.bth.psn)) {
        return;
    }
    if (!svc_.mr_write(*k.mr, r.va, pkt.payload.data(), 8)) {
        error(qp, kNakRemoteOp, OHCA_QP_EV_ACCESS_ERR);
        return;
    }
    qp.epsn = psn_add(qp.epsn, 1);
    qp.msn = (qp.msn + 1) & kPsnMask;
    send_ack(qp, pkt.fields.bth.psn, kAethAck, pkt.looped);
}

// Sends queued responses in order: at most read_resp_per_pass READ response
// packets, and only while a looped-back destination has room.
void RcResponder::process_responses(Qp &qp, unsigned int &quantum) {
    unsigned int sent = 0;
    const uint32_t mtu = mtu_bytes(qp);
    using Kind = ResponderResources::Response::Kind;
    while (!qp.resp.empty() && quantum > 0 && qp.state != OHCA_QPS_ERR) {
        ResponderResources::Response &it = qp.resp.front();
        PacketFields f;
        f.bth.dest_qp = qp.attrs.dest_qpn;
        if (it.kind == Kind::Ack) {
            if (svc_.tx_paused(qp)) {
                svc_.mark_ready(qp); // the pause's end lets it go
                return;
            }
            f.bth.opcode = rc::kAck;
            f.bth.psn = it.psn;
            f.aeth =
                Aeth{(it.syndrome & 0x60) == kAethAck ? ack_syndrome(qp) : it.syndrome, it.msn};
            qp.resp.pop_front();
            rc_emit(svc_, qp, f);
            --quantum;
            continue;
        }
        if (it.kind == Kind::Atomic) {
            if (!svc_.tx_room(qp)) {
                svc_.mark_ready(qp);
                return;
            }
            f.bth.opcode = rc::kAtomicAck;
            f.bth.psn = it.psn;
            f.aeth = Aeth{ack_syndrome(qp), it.msn};
            f.atomic_ack = it.orig;
            qp.resp.pop_front();
            rc_emit(svc_, qp, f);
            --quantum;
            continue;
        }
        if (sent >= DeviceLimits::read_resp_per_pass || !svc_.tx_room(qp)) {
            svc_.mark_ready(qp); // the rest on a later pass
            return;
        }
        if (!svc_.cc_may_send(qp)) {
            return; // paced (DCQCN): ready again when the rate allows
        }
        const uint32_t k = it.next;
        const uint32_t n = it.npkts;
        f.bth.psn = psn_add(it.psn, k);
        f.bth.opcode = n == 1       ? rc::kReadRespOnly
                       : k == 0     ? rc::kReadRespFirst
                       : k + 1 == n ? rc::kReadRespLast
                                    : rc::kReadRespMiddle;
        if (f.bth.opcode != rc::kReadRespMiddle) {
            f.aeth = Aeth{ack_syndrome(qp), it.msn};
        }
        const uint64_t va = it.va + uint64_t{k} * mtu;
        const size_t len = std::min(mtu, it.len - k * mtu);
        // The region may have gone since the request was checked.
        const Mr *mr = nullptr;
        if (len != 0) {
            mr = svc_.check_rkey(qp, it.rkey, va, len, OHCA_ACCESS_REMOTE_READ).mr;
        }
        // Faulted in when the request came; unmapped since, the response
        // waits: the requester's ACK timer asks again (duplicate_read).
        if (mr != nullptr) {
            const OdpState st = svc_.odp_touch(*mr, va, len, false);
            if (st == OdpState::Pending) {
                return;
            }
            if (st == OdpState::Failed) {
                error(qp, kNakRemoteAccess, OHCA_QP_EV_ACCESS_ERR);
                return;
            }
        }
        // Read from guest memory straight into the frame.
        auto fill = [&](std::span<uint8_t> out) {
            return out.empty() || svc_.mr_read(*mr, va, out.data(), out.size());
        };
        if ((len != 0 && mr == nullptr) ||
            rc_emit_fill(svc_, qp, f, len, fill) == EmitResult::FillFailed) {
            error(qp, kNakRemoteOp, OHCA_QP_EV_ACCESS_ERR);
            return;
        }
        svc_.cc_sent(qp, len);
        if (++it.next == n) {
            qp.resp.pop_front();
        }
        ++sent;
        --quantum;
    }
}

bool RcResponder::odp_blocked(Qp &qp, OdpState st, uint32_t psn, bool recv) {
    if (st == OdpState::Resident) {
        return false;
    }
    if (st == OdpState::Pending) {
        ++svc_.counters().rnr_naks_sent;
        send_ack(qp, psn, static_cast<uint8_t>(kAethRnrNak | qp.attrs.min_rnr_timer));
        return true;
    }
    if (recv) {
        qp.recv_loaded = false;
        svc_.complete_recv(qp, qp.recv_wr_id, OHCA_CQE_RECV, 0, std::nullopt, OHCA_CQE_LOC_PROT_ERR,
                           OHCA_VERR_ODP_FAULT, false);
        error(qp, kNakRemoteOp, OHCA_QP_EV_ACCESS_ERR);
    } else {
        error(qp, kNakRemoteAccess, OHCA_QP_EV_ACCESS_ERR);
    }
    return true;
}

// A request, in named steps: the QP's state, its PSN (duplicates and
// gaps answered there), the opcode sequence and length, then the
// operation: an atomic, a READ, or a SEND or WRITE (a receive WQE first
// where one is needed, then the data placed), then the acknowledgement.
// The steps are forced inline (below): one function's parts, not a call
// each per packet.
void RcResponder::rx(Qp &qp, const ParsedPacket &pkt) {
    if (qp.state != OHCA_QPS_RTR && qp.state != OHCA_QPS_RTS && qp.state != OHCA_QPS_SQD &&
        qp.state != OHCA_QPS_SQE) {
        ++svc_.counters().rx_no_qp;
        return;
    }
    if (!check_psn(qp, pkt) || !check_opcode_and_length(qp, pkt)) {
        return;
    }
    const uint8_t op = pkt.fields.bth.opcode;
    if (is_atomic(op)) {
        execute_atomic(qp, pkt);
        return;
    }
    if (op == rc::kAtomicWrite) {
        execute_atomic_write(qp, pkt);
        return;
    }
    if (op == rc::kReadRequest) {
        execute_read(qp, pkt);
        return;
    }
    if (!take_recv_wqe(qp, pkt)) {
        return;
    }
    if (is_send(op) ? !execute_send(qp, pkt) : !execute_write(qp, pkt)) {
        return;
    }
    acknowledge(qp, pkt);
}

// The expected PSN goes on; an older one is a duplicate (answered again),
// a later one a gap (one sequence NAK). False: nothing more to do.
[[gnu::always_inline]] inline bool RcResponder::check_psn(Qp &qp, const ParsedPacket &pkt) {
    const Bth &h = pkt.fields.bth;
    const uint8_t op = h.opcode;
    const int32_t d = psn_diff(h.psn, qp.epsn);
    if (d < 0) {
        ++svc_.counters().rx_duplicates;
        if (op == rc::kReadRequest) {
            duplicate_read(qp, h.psn, *pkt.fields.reth);
            return false;
        }
        if (is_atomic(op)) {
            duplicate_atomic(qp, h.psn);
            return false;
        }
        send_ack(qp, psn_add(qp.epsn, kPsnMask), kAethAck, pkt.looped);
        return false;
    }
    if (d > 0) {
        ++svc_.counters().rx_out_of_seq;
        if (!qp.nak_sent) {
            qp.nak_sent = true;
            ++svc_.counters().seq_naks_sent;
            send_ack(qp, qp.epsn, kAethNak | kNakPsnSeq);
        }
        return false;
    }
    qp.nak_sent = false;
    // Communication is established by the first packet with the expected
    // PSN: a spoofed one (any other PSN) posts nothing.
    if (!qp.comm_est) {
        qp.comm_est = true;
        if (qp.state == OHCA_QPS_RTR) {
            svc_.post_peer_event(OHCA_QP_EV_COMM_EST, qp.qpn);
        }
    }

    return true;
}

// The opcode must follow what is in progress (opcode_seq.hpp) and the
// payload fit the packet's place in its message; else NAK Invalid Request.
[[gnu::always_inline]] inline bool RcResponder::check_opcode_and_length(Qp &qp,
                                                                        const ParsedPacket &pkt) {
    const uint8_t op = pkt.fields.bth.opcode;
    // Opcode sequence and packet lengths.
    const uint32_t mtu = mtu_bytes(qp);
    const size_t len = pkt.payload.size();
    const bool ends = ends_message(op);
    const bool seq_ok = opcode_follows(qp.in_msg, op);
    const bool len_ok = op == rc::kReadRequest || is_atomic(op) ||
                        (op == rc::kAtomicWrite ? len == 8
                         : ends                 ? len <= mtu
                                                : len == mtu);
    if (!seq_ok || !len_ok) {
        error(qp, kNakInvalidRequest, OHCA_QP_EV_REQ_ERR);
        return false;
    }
    return true;
}

// An RDMA READ: checked, its pages faulted in, then queued as a responder
// resource whose responses process_responses() sends.
void RcResponder::execute_read(Qp &qp, const ParsedPacket &pkt) {
    const Bth &h = pkt.fields.bth;
    const uint32_t mtu = mtu_bytes(qp);
    const Reth &r = *pkt.fields.reth;
    if (r.dma_len > DeviceLimits::max_msg_size) {
        error(qp, kNakInvalidRequest, OHCA_QP_EV_REQ_ERR);
        return;
    }
    if (!read_allowed(qp, r)) {
        error(qp, kNakRemoteAccess, OHCA_QP_EV_ACCESS_ERR);
        return;
    }
    if (qp.resp.full()) {
        // Every responder resource is in use (max_dest_rd_atomic):
        // refused before its pages are looked at.
        error(qp, kNakInvalidRequest, OHCA_QP_EV_REQ_ERR);
        return;
    }
    if (r.dma_len != 0) {
        const Mr *mr = svc_.check_rkey(qp, r.rkey, r.va, r.dma_len, OHCA_ACCESS_REMOTE_READ).mr;
        if (odp_blocked(qp, svc_.odp_touch(*mr, r.va, r.dma_len, false), h.psn)) {
            return;
        }
    }
    const auto n = static_cast<uint32_t>(read_packets(r.dma_len, mtu));
    if (!qp.resp.add_read(h.psn, r.va, r.rkey, r.dma_len, n, qp.msn)) {
        // Every responder resource is in use (max_dest_rd_atomic).
        error(qp, kNakInvalidRequest, OHCA_QP_EV_REQ_ERR);
        return;
    }
    svc_.mark_ready(qp);
    qp.epsn = psn_add(h.psn, n);
    qp.msn = (qp.msn + 1) & kPsnMask;
}

// SEND (at its first packet) and WRITE with immediate (at its last) need a
// receive WQE: without one, RNR NAK. False: the request stops here.
[[gnu::always_inline]] inline bool RcResponder::take_recv_wqe(Qp &qp, const ParsedPacket &pkt) {
    const Bth &h = pkt.fields.bth;
    const uint8_t op = h.opcode;
    const bool starts = opcode_seq(op).starts;
    const bool needs_recv = (is_send(op) && starts) || (is_write(op) && has_imm(op));
    if (needs_recv && !qp.recv_loaded) {
        const SrqTake t = qp.srqn != 0                        ? svc_.take_srq_wqe(qp)
                          : !svc_.records().rq_has_wqe(qp.rq) ? SrqTake::Empty
                                                              : SrqTake::Ok;
        if (t == SrqTake::Empty) {
            ++svc_.counters().rnr_naks_sent;
            send_ack(qp, h.psn, static_cast<uint8_t>(kAethRnrNak | qp.attrs.min_rnr_timer));
            return false;
        }
        if (t == SrqTake::BadWqe) {
            svc_.complete_recv(qp, qp.recv_wr_id, OHCA_CQE_RECV, 0, std::nullopt,
                               OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_WQE, false);
            error(qp, kNakRemoteOp, OHCA_QP_EV_FATAL);
            return false;
        }
        if (qp.srqn == 0 && !load_recv_wqe(qp)) {
            return false;
        }
    }
    return true;
}

// A SEND packet scattered into the receive WQE; at its last, the
// invalidation it asks for and the receive completion. False: the QP
// failed (or must wait for a page).
[[gnu::always_inline]] inline bool RcResponder::execute_send(Qp &qp, const ParsedPacket &pkt) {
    const Bth &h = pkt.fields.bth;
    const size_t len = pkt.payload.size();
    const bool ends = ends_message(h.opcode);
    if (len != 0 &&
        odp_blocked(qp, svc_.odp_touch_sges(qp, qp.recv_sges, qp.recv_offset, len, true), h.psn,
                    true)) {
        return false;
    }
    qp.in_msg = Qp::InMsg::Send;
    // Scatter into the receive WQE's segments.
    uint32_t offset = qp.recv_offset;
    size_t done = 0;
    for (const Sge &s : qp.recv_sges) {
        if (done == len) {
            break;
        }
        if (offset >= s.length) {
            offset -= s.length;
            continue;
        }
        const size_t n = std::min<size_t>(s.length - offset, len - done);
        const KeyResult k =
            svc_.check_key(s.lkey, s.addr + offset, n, OHCA_ACCESS_LOCAL_WRITE, qp.pdn);
        if (k.mr == nullptr ||
            !svc_.mr_write(*k.mr, s.addr + offset, pkt.payload.data() + done, n)) {
            qp.recv_loaded = false;
            svc_.complete_recv(qp, qp.recv_wr_id, OHCA_CQE_RECV, 0, std::nullopt,
                               OHCA_CQE_LOC_PROT_ERR,
                               k.mr == nullptr ? k.verr : uint8_t{OHCA_VERR_DMA}, false);
            error(qp, kNakRemoteOp, OHCA_QP_EV_ACCESS_ERR);
            return false;
        }
        done += n;
        offset = 0;
    }
    if (done != len) {
        qp.recv_loaded = false;
        svc_.complete_recv(qp, qp.recv_wr_id, OHCA_CQE_RECV, 0, std::nullopt, OHCA_CQE_LOC_LEN_ERR,
                           OHCA_VERR_RECV_TOO_SMALL, false);
        error(qp, kNakInvalidRequest, OHCA_QP_EV_REQ_ERR);
        return false;
    }
    qp.recv_offset += static_cast<uint32_t>(len);
    if (ends) {
        qp.recv_loaded = false;
        qp.in_msg = Qp::InMsg::None;
        if (pkt.fields.ieth) {
            // SEND with invalidate: the named MR is free once the
            // message is placed (IBTA class J error otherwise).
            const uint8_t verr = svc_.invalidate_key(*pkt.fields.ieth, qp, true);
            if (verr != OHCA_VERR_NONE) {
                svc_.complete_recv(qp, qp.recv_wr_id, OHCA_CQE_RECV, 0, std::nullopt,
                                   OHCA_CQE_REM_INV_REQ_ERR, verr, false);
                error(qp, kNakInvalidRequest, OHCA_QP_EV_REQ_ERR);
                return false;
            }
        }
        qp.msn = (qp.msn + 1) & kPsnMask;
        svc_.complete_recv(qp, qp.recv_wr_id, OHCA_CQE_RECV, qp.recv_offset, pkt.fields.imm,
                           OHCA_CQE_SUCCESS, OHCA_VERR_NONE, h.solicited, pkt.fields.ieth);
    }
    return true;
}

// A WRITE packet: its RETH checked at the first, the data placed through
// the rkey, at the last the completion of a WRITE with immediate. False:
// the QP failed (or must wait for a page).
[[gnu::always_inline]] inline bool RcResponder::execute_write(Qp &qp, const ParsedPacket &pkt) {
    const Bth &h = pkt.fields.bth;
    const uint8_t op = h.opcode;
    const size_t len = pkt.payload.size();
    const OpcodeSeq &seq = opcode_seq(op);
    const bool starts = seq.starts;
    const bool ends = seq.ends;
    if (starts) {
        const Reth &r = *pkt.fields.reth;
        const bool only = op == rc::kWriteOnly || op == rc::kWriteOnlyImm;
        if ((qp.attrs.access & OHCA_ACCESS_REMOTE_WRITE) == 0 ||
            (r.dma_len != 0 &&
             svc_.check_rkey(qp, r.rkey, r.va, r.dma_len, OHCA_ACCESS_REMOTE_WRITE).verr !=
                 OHCA_VERR_NONE)) {
            error(qp, kNakRemoteAccess, OHCA_QP_EV_ACCESS_ERR);
            return false;
        }
        if ((only && r.dma_len != len) || (!only && r.dma_len <= len)) {
            error(qp, kNakInvalidRequest, OHCA_QP_EV_REQ_ERR);
            return false;
        }
        qp.write_va = r.va;
        qp.write_key = r.rkey;
        qp.write_left = r.dma_len;
        qp.write_total = r.dma_len;
    }
    if (len > qp.write_left || (ends && len != qp.write_left)) {
        error(qp, kNakInvalidRequest, OHCA_QP_EV_REQ_ERR);
        return false;
    }
    if (len != 0) {
        const KeyResult k =
            svc_.check_rkey(qp, qp.write_key, qp.write_va, len, OHCA_ACCESS_REMOTE_WRITE);
        if (k.mr == nullptr) {
            error(qp, kNakRemoteAccess, OHCA_QP_EV_ACCESS_ERR);
            return false;
        }
        if (odp_blocked(qp, svc_.odp_touch(*k.mr, qp.write_va, len, true), h.psn)) {
            return false;
        }
        if (!svc_.mr_write(*k.mr, qp.write_va, pkt.payload.data(), len)) {
            error(qp, kNakRemoteOp, OHCA_QP_EV_ACCESS_ERR);
            return false;
        }
    }
    qp.write_va += len;
    qp.write_left -= static_cast<uint32_t>(len);
    qp.in_msg = ends ? Qp::InMsg::None : Qp::InMsg::Write;
    if (ends) {
        qp.msn = (qp.msn + 1) & kPsnMask;
        if (has_imm(op)) {
            qp.recv_loaded = false;
            svc_.complete_recv(qp, qp.recv_wr_id, OHCA_CQE_RECV_RDMA_WITH_IMM, qp.write_total,
                               pkt.fields.imm, OHCA_CQE_SUCCESS, OHCA_VERR_NONE, h.solicited);
        }
    }
    return true;
}

// The request is done: the next PSN is expected, and the end of a message
// or an AckReq is acknowledged.
[[gnu::always_inline]] inline void RcResponder::acknowledge(Qp &qp, const ParsedPacket &pkt) {
    const Bth &h = pkt.fields.bth;
    qp.epsn = psn_add(qp.epsn, 1);
    if (ends_message(h.opcode) || h.ack_req) {
        send_ack(qp, h.psn, kAethAck, pkt.looped);
    }
}

} // namespace ohca
