// SPDX-License-Identifier: GPL-2.0-or-later
// The RC requester's send side: send WQEs in order, segmentation into
// packets by path MTU within the window, local operations, ODP waits. The
// completer (completer.cpp) takes the responses; retransmission and the
// congestion window are rc_retransmit.cpp's.
#include "transports/requester.hpp"
#include "device/limits.hpp"
#include "link/byte_order.hpp"
#include "transports/credits.hpp"
#include "transports/rc_common.hpp"
#include "transports/xrc.hpp"

#include <algorithm>
#include <cstring>

namespace ohca {

using namespace rc_req;

void RcRequester::process_sq(Qp &qp, unsigned int &quantum) {
    if ((qp.state != OHCA_QPS_RTS && qp.state != OHCA_QPS_SQD) || qp.rnr_wait || qp.odp_wait) {
        return;
    }
    // A batch serves one QP's fetches in a row: each visit starts its own.
    sq_batch_.clear();
    while (quantum > 0 && qp.state != OHCA_QPS_ERR) {
        if (qp.frto != Qp::Frto::Off) {
            // After a timeout, until responses decide: only the oldest
            // packets, sent before it, go again (no new data: its ACK
            // would look like one for a packet sent before the timeout),
            // and no READ or atomic (their responses would be asked again).
            const uint32_t psn = cursor_psn(qp);
            if (qp.frto == Qp::Frto::Confirm || qp.cur_wr >= qp.inflight.size() ||
                psn_diff(psn, qp.una_psn) >= static_cast<int32_t>(DeviceLimits::frto_probe_pkts) ||
                psn_diff(psn, qp.sent_psn) >= 0 || awaits_response(qp.inflight[qp.cur_wr])) {
                break;
            }
        }
        if (qp.cur_wr < qp.inflight.size()) {
            const SendWr &w = qp.inflight[qp.cur_wr];
            const TxRoom room = svc_.tx_room_credit(qp);
            if (room == TxRoom::None) {
                svc_.mark_ready(qp); // the loopback backlog drains first
                break;
            }
            // A READ request stands for all its responses; the oldest
            // outstanding one may always go, whatever its length.
            const uint32_t end =
                is_read(w) ? psn_add(w.first_psn, w.npkts) : psn_add(w.first_psn, qp.cur_pkt + 1);
            if (w.local_status == OHCA_CQE_SUCCESS && !w.local_op &&
                !(is_read(w) && qp.cur_wr == 0) &&
                psn_diff(end, qp.una_psn) > static_cast<int32_t>(qp.cwnd)) {
                break; // window full: resumed by the next ACK or response
            }
            if (is_read(w) && w.read_pkts < qp.cur_pkt) {
                break; // the part of this READ asked again is still arriving
            }
            if (!credit_allows(qp, w)) {
                break; // resumed by an ACK that raises the limit, or the probe
            }
            if (!odp_ready(qp)) {
                if (qp.odp_wait) {
                    break;
                }
                --quantum;
                continue; // the WQE failed
            }
            if (!svc_.cc_may_send(qp)) {
                break; // paced (DCQCN): ready again when the rate allows
            }
            send_packet(qp, room == TxRoom::CreditShort);
            --quantum;
        } else if (qp.state == OHCA_QPS_RTS && !qp.sq_draining && qp.sq_fetched != qp.sq.pi) {
            if (!fetch_send_wqe(qp)) {
                break;
            }
            --quantum;
        } else {
            break;
        }
    }
    if (qp.state == OHCA_QPS_SQD && qp.sq_draining && qp.inflight.empty()) {
        qp.sq_draining = false;
        svc_.post_event(OHCA_EQE_QP_EVENT, OHCA_QP_EV_SQ_DRAINED, qp.qpn, 0, 0);
    }
}

bool RcRequester::fetch_send_wqe(Qp &qp) {
    if (!qp.inflight.empty() && qp.inflight.back().local_status != OHCA_CQE_SUCCESS) {
        return false; // nothing after a failed WQE is started
    }
    // Filled in place in the queue's next slot (no allocation), added
    // only at the end: a WQE that has to wait is read again later.
    SendWr &wr = qp.inflight.stage();
    wr.index = qp.sq_fetched;
    const uint64_t base = qp.sq.offset(wr.index);
    const uint32_t stride = 1u << qp.sq.log_stride;
    // The header and what follows it, up to max_sge SGEs or the stride, in
    // one DMA read: all inside this WQE's slot of the ring. Not zeroed
    // first (about 40 instructions per WQE): the stride holds at least the
    // header, and only SGEs or inline bytes within the stride are used.
    struct {
        ohca_send_wqe w;
        std::array<ohca_sge, DeviceLimits::max_sge> sge;
    } slot;
    ohca_send_wqe &w = slot.w;
    static_assert(sizeof(slot) == sizeof(ohca_send_wqe) + sizeof(slot.sge));
    auto fail = [&](uint8_t status, uint8_t verr) {
        wr.local_status = status;
        wr.local_verr = verr;
        wr.npkts = 0;
    };
    if (!sq_batch_.read(svc_.host(), qp.sq, wr.index, qp.sq.pi, &slot,
                        std::min<size_t>(stride, sizeof(slot)))) {
        fail(OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_DMA);
        svc_.post_event(OHCA_EQE_QP_EVENT, OHCA_QP_EV_FATAL, qp.qpn, 0, 0);
    } else {
        wr.wr_id = le(w.wr_id);
        wr.opcode = w.opcode;
        wr.flags = w.flags;
        wr.imm = wire_imm(w.imm_data);
        wr.remote_addr = le(w.remote_addr);
        wr.rkey = le(w.rkey);
        wr.cmp_add = le(w.cmp_add);
        wr.swap = le(w.swap);
        // An XRC initiator's requests name an SRQ of the target (24 bits,
        // never 0); other QPs ignore the field.
        wr.xrc_srqn = qp.type == OHCA_QPT_XRC_INI ? le(w.xrc_srqn) : 0;
        const bool inl = (w.flags & OHCA_WQE_INLINE) != 0;
        const uint32_t inline_len = le(w.inline_len);
        if (!known_opcode(w.opcode) || (w.flags & ~kSendFlagsKnown) != 0 ||
            (qp.type == OHCA_QPT_XRC_INI && !is_local_opcode(w.opcode) &&
             (wr.xrc_srqn == 0 || wr.xrc_srqn > kPsnMask)) ||
            (w.opcode == OHCA_WR_ATOMIC_WRITE && qp.type != OHCA_QPT_RC)) {
            fail(OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_WQE);
        } else if ((wr.flags & OHCA_WQE_FENCE) != 0 && qp.reads_pending != 0) {
            return false; // fenced behind outstanding READs and atomics
        } else if (awaits_response(wr) &&
                   qp.reads_pending >= std::max<uint32_t>(1, qp.attrs.max_rd_atomic)) {
            return false; // initiator depth reached
        } else if (w.opcode == OHCA_WR_REG_MR || w.opcode == OHCA_WR_LOCAL_INV ||
                   w.opcode == OHCA_WR_BIND_MW) {
            const LocalOpResult r = svc_.execute_local_op(qp, w, wr);
            if (r.status != OHCA_CQE_SUCCESS) {
                fail(r.status, r.verr);
            }
        } else if (is_atomic(wr) && (inl || w.num_sge != 1)) {
            fail(OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_WQE); // one 8-byte result SGE
        } else if (inl) {
            if (is_read(wr) || inline_len > qp.max_inline ||
                (wr.opcode == OHCA_WR_ATOMIC_WRITE && inline_len != 8) ||
                sizeof(ohca_send_wqe) + inline_len > stride) {
                fail(OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_WQE);
            } else {
                wr.is_inline = true;
                wr.inline_data.resize(inline_len);
                wr.length = inline_len;
                if (inline_len == 0) {
                    // nothing to copy
                } else if (inline_len <= sizeof(slot.sge)) {
                    // Read with the header (stride >= header + inline_len).
                    std::memcpy(wr.inline_data.data(), slot.sge.data(), inline_len);
                } else if (!qp.sq.ring.read(svc_.host(), base + sizeof(w), wr.inline_data.data(),
                                            inline_len)) {
                    fail(OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_DMA);
                }
            }
        } else if (w.num_sge > DeviceLimits::max_sge ||
                   sizeof(ohca_send_wqe) + size_t{w.num_sge} * sizeof(ohca_sge) > stride) {
            fail(OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_WQE);
        } else {
            const std::array<ohca_sge, DeviceLimits::max_sge> &raw = slot.sge;
            {
                uint64_t total = 0;
                const uint32_t need = awaits_response(wr) ? OHCA_ACCESS_LOCAL_WRITE : 0;
                for (unsigned int i = 0; i < w.num_sge && wr.local_status == 0; ++i) {
                    Sge s{le(raw[i].addr), le(raw[i].length), le(raw[i].lkey)};
                    total += s.length;
                    if (s.length == 0) {
                        continue;
                    }
                    const KeyResult k = svc_.check_key(s.lkey, s.addr, s.length, need, qp.pdn);
                    if (k.verr != OHCA_VERR_NONE) {
                        fail(OHCA_CQE_LOC_PROT_ERR, k.verr);
                    }
                    wr.sges.push_back(s);
                }
                if (total > DeviceLimits::max_msg_size) {
                    fail(OHCA_CQE_LOC_LEN_ERR, OHCA_VERR_BAD_WQE);
                } else if ((is_atomic(wr) || wr.opcode == OHCA_WR_ATOMIC_WRITE) && total != 8) {
                    fail(OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_WQE);
                }
                wr.length = static_cast<uint32_t>(std::min<uint64_t>(total, UINT32_MAX));
            }
        }
    }
    if (wr.local_status == OHCA_CQE_SUCCESS && !wr.local_op) {
        const uint32_t mtu = mtu_bytes(qp);
        wr.npkts = std::max<uint32_t>(1, (wr.length + mtu - 1) / mtu);
        qp.ssn = psn_add(qp.ssn, 1); // a message: the responder's MSN counts it
        wr.ssn = qp.ssn;
        wr.first_psn = qp.next_psn;
        qp.next_psn = psn_add(qp.next_psn, wr.npkts);
        if (awaits_response(wr)) {
            ++qp.reads_pending;
        }
    } else if (wr.local_op) {
        // No packets: an empty PSN range where it stands, so that the
        // ranges in 'inflight' stay in order (wqe_at_psn).
        wr.first_psn = qp.next_psn;
        wr.npkts = 0;
    }
    if (wr.local_status != OHCA_CQE_SUCCESS) {
        ++qp.wqes_failed;
    }
    svc_.host().trace(OHCA_ENGINE_TRACE_WQE, qp.qpn, wr.index, wr.opcode);
    qp.inflight.commit();
    ++qp.sq_fetched;
    if (qp.inflight.size() == 1 &&
        (qp.inflight.front().local_status != OHCA_CQE_SUCCESS || qp.inflight.front().local_op)) {
        ack_through(qp, psn_add(qp.una_psn, kPsnMask)); // completes or fails it now
    }
    return true;
}

// End-to-end credits (credits.hpp): a message that consumes a receive WQE
// starts only within the limit of the peer's AETHs, or as the one probe
// allowed past it (the first message, or once the credit wait reached the
// local ACK timeout). Packets of a message already started, and resends,
// always go. With nothing outstanding no ACK would come to raise the
// limit: the QP waits for the responder's credit update (an ACK when
// receive WQEs are posted), and each RTO without one it asks for an ACK
// (rc_retransmit.cpp, credit_wait_expired: a lost update costs an RTO,
// not the connection). With packets outstanding their ACKs bring the
// credits. Either way it leaves the run loop meanwhile.
bool RcRequester::credit_allows(Qp &qp, const SendWr &w) {
    if (qp.credits_unlimited || qp.cur_pkt != 0 || w.local_status != OHCA_CQE_SUCCESS ||
        w.local_op || !credits::consumes_recv(w.opcode) || psn_diff(w.first_psn, qp.sent_psn) < 0 ||
        psn_diff(w.ssn, qp.credit_lsn) <= 0 || qp.credit_probe) {
        return true;
    }
    if (!outstanding(qp) && qp.deadline_ns == 0) {
        const uint64_t t = rto(qp);
        if (t == 0) {
            return true; // no timer to wait on: the probe goes now
        }
        qp.credit_wait = true;
        qp.credit_wait_since_ns = svc_.host().now_ns();
        svc_.set_deadline(qp, qp.credit_wait_since_ns + t);
    }
    return false;
}

// The first packet of a message goes for the first time. One that
// consumes no receive WQE moves the limit on by one (it counts in the
// responder's MSN, not against its receive queue); one past the limit is
// the probe.
void RcRequester::message_started(Qp &qp, const SendWr &w) {
    if (qp.credit_wait) {
        qp.credit_wait = false;
        svc_.set_deadline(qp, 0);
    }
    if (qp.credits_unlimited) {
        return;
    }
    if (!credits::consumes_recv(w.opcode)) {
        qp.credit_lsn = psn_add(qp.credit_lsn, 1);
    } else if (psn_diff(w.ssn, qp.credit_lsn) > 0) {
        qp.credit_probe = false;
    }
}

void RcRequester::send_packet(Qp &qp, bool credit_short) {
    SendWr &wr = qp.inflight[qp.cur_wr];
    if (wr.local_status != OHCA_CQE_SUCCESS || wr.local_op) {
        ++qp.cur_wr;
        qp.cur_pkt = 0;
        return;
    }
    const uint32_t mtu = mtu_bytes(qp);
    const uint32_t k = qp.cur_pkt;
    PacketFields f;
    f.bth.dest_qp = qp.attrs.dest_qpn;
    f.bth.psn = psn_add(wr.first_psn, k);
    if (wr.xrc_srqn != 0) {
        f.xrceth = wr.xrc_srqn; // XRC: every request packet names the SRQ
    }
    // PSNs this packet stands for: one, or a READ request's responses. Once
    // a response has come, the responder holds the whole READ, and a request
    // again asks for no more than the window: a lossy path would drop most
    // of a long replay again. (Before that, only the whole READ is a
    // request the responder can take.)
    const uint32_t span = !is_read(wr) ? 1
                          : k > 0      ? std::min(wr.npkts - k, std::max(qp.cwnd, 1u))
                                       : wr.npkts;
    const uint32_t end_psn = psn_add(f.bth.psn, span);
    const bool resend = psn_diff(f.bth.psn, qp.sent_psn) < 0;
    if (resend) {
        ++svc_.counters().retrans_pkts;
    } else if (k == 0) {
        message_started(qp, wr);
    }
    if (psn_diff(end_psn, qp.sent_psn) > 0) {
        qp.sent_psn = end_psn;
    }
    uint32_t off = 0;
    size_t len = 0;
    if (is_read(wr)) {
        const uint32_t roff = std::min(wr.length, k * mtu);
        f.bth.opcode = rc::kReadRequest;
        f.bth.ack_req = true;
        f.reth = Reth{wr.remote_addr + roff, wr.rkey, std::min(wr.length - roff, span * mtu)};
        wr.read_start = k;
        wr.read_end = k + span;
        qp.cur_pkt = wr.read_end;
    } else if (is_atomic(wr)) {
        f.bth.opcode = wr.opcode == OHCA_WR_ATOMIC_CMP_SWP ? rc::kCompareSwap : rc::kFetchAdd;
        f.bth.ack_req = true;
        f.atomic_eth = AtomicEth{wr.remote_addr, wr.rkey,
                                 wr.opcode == OHCA_WR_ATOMIC_CMP_SWP ? wr.swap : wr.cmp_add,
                                 wr.opcode == OHCA_WR_ATOMIC_CMP_SWP ? wr.cmp_add : 0};
    } else if (wr.opcode == OHCA_WR_ATOMIC_WRITE) {
        // One packet: the 8 bytes after a RETH; completed by its ACK.
        f.bth.opcode = rc::kAtomicWrite;
        f.bth.ack_req = true;
        f.reth = Reth{wr.remote_addr, wr.rkey, 8};
        len = 8;
    } else {
        const bool write = wr.opcode == OHCA_WR_RDMA_WRITE || wr.opcode == OHCA_WR_RDMA_WRITE_IMM;
        const bool imm = wr.opcode == OHCA_WR_RDMA_WRITE_IMM || wr.opcode == OHCA_WR_SEND_IMM;
        const bool inv = wr.opcode == OHCA_WR_SEND_INV;
        const bool first = k == 0;
        const bool last = k + 1 == wr.npkts;
        if (first && last) {
            f.bth.opcode = write ? (imm ? rc::kWriteOnlyImm : rc::kWriteOnly)
                           : inv ? rc::kSendOnlyInv
                                 : (imm ? rc::kSendOnlyImm : rc::kSendOnly);
        } else if (first) {
            f.bth.opcode = write ? rc::kWriteFirst : rc::kSendFirst;
        } else if (last) {
            f.bth.opcode = write ? (imm ? rc::kWriteLastImm : rc::kWriteLast)
                           : inv ? rc::kSendLastInv
                                 : (imm ? rc::kSendLastImm : rc::kSendLast);
        } else {
            f.bth.opcode = write ? rc::kWriteMiddle : rc::kSendMiddle;
        }
        if (write && first) {
            f.reth = Reth{wr.remote_addr, wr.rkey, wr.length};
        }
        if (imm && last) {
            f.imm = wr.imm;
        }
        if (inv && last) {
            f.ieth = wr.rkey;
        }
        // Long messages ask for ACKs on the way, which open the window; so
        // does the packet that fills it.
        const uint32_t every = std::clamp(qp.cwnd / 2, 1u, DeviceLimits::ack_req_every);
        // (every is mostly a power of two: no division per packet then)
        const uint32_t nth = (every & (every - 1)) == 0 ? (k + 1) & (every - 1) : (k + 1) % every;
        // A probe after a timeout, or a tail-loss probe, asks for its
        // answer at once; so does a packet after which the rest waits for
        // the link's credit here (that wait is no round trip: the ACK timer
        // must not count it).
        f.bth.ack_req =
            last || nth == 0 || qp.frto != Qp::Frto::Off || (resend && qp.tlp_out) ||
            psn_diff(psn_add(f.bth.psn, 1), qp.una_psn) >= static_cast<int32_t>(qp.cwnd) ||
            credit_short;
        f.bth.solicited = last && (wr.flags & OHCA_WQE_SOLICITED) != 0;
        off = k * mtu;
        len = std::min(mtu, wr.length - off);
    }
    // The payload is gathered from guest memory straight into the frame.
    auto fill = [&](std::span<uint8_t> out) { return svc_.gather(qp, wr, off, out); };
    if (rc_emit_fill(svc_, qp, f, len, fill) == EmitResult::FillFailed) {
        // The local buffer went away: the WQE fails in order.
        fail_current(qp, OHCA_VERR_DMA);
        return;
    }
    svc_.cc_sent(qp, len);
    if (f.bth.ack_req && psn_diff(end_psn, qp.ack_req_psn) > 0) {
        qp.ack_req_psn = end_psn;
    }
    // One packet at a time is timed: one that asks for an ACK (so the ACK
    // is not held back by coalescing) and is sent for the first time
    // (Karn: an ACK after a resend could answer either copy).
    if (!qp.rtt_timing && !resend && f.bth.ack_req) {
        qp.rtt_timing = true;
        qp.rtt_psn = f.bth.psn;
        qp.rtt_sent_ns = svc_.host().now_ns();
    }
    if (qp.frto == Qp::Frto::Probe && psn_diff(end_psn, qp.frto_end) > 0) {
        qp.frto_end = end_psn;
    }
    if (!is_read(wr)) {
        ++qp.cur_pkt;
    }
    if (qp.cur_pkt >= wr.npkts) {
        ++qp.cur_wr;
        qp.cur_pkt = 0;
    }
    // The ACK timer starts with the first packet an ACK is owed for, not
    // with one that asked for none: the time until the next one that asks
    // goes is the sender's own (its pacer, its port), not the fabric's.
    if (qp.deadline_ns == 0 && ack_owed(qp)) {
        restart_ack_timer(qp);
    }
}

// The WQE at the transmit cursor fails (LOC_PROT_ERR) in order.
void RcRequester::fail_current(Qp &qp, uint8_t verr) {
    SendWr &wr = qp.inflight[qp.cur_wr];
    wr.local_status = OHCA_CQE_LOC_PROT_ERR;
    ++qp.wqes_failed;
    wr.local_verr = verr;
    ++qp.cur_wr;
    qp.cur_pkt = 0;
    if (qp.cur_wr == 1) {
        ack_through(qp, psn_add(wr.first_psn, kPsnMask));
    }
}

// On-demand paging: a SEND or WRITE packet needs its bytes of the local
// buffers, a READ or atomic the whole result buffer (written when the
// responses come). Missing translations raise a page fault, and the QP
// waits for ODP_MAP, or tries again after odp_retry_ns; a fault the
// driver failed fails the WQE with LOC_PROT_ERR.
bool RcRequester::odp_ready(Qp &qp) {
    const SendWr &w = qp.inflight[qp.cur_wr];
    if (w.local_status != OHCA_CQE_SUCCESS || w.local_op || w.is_inline || w.length == 0 ||
        !svc_.has_odp_mrs()) {
        return true; // (no ODP MR: nothing to fault in, checked once per packet)
    }
    OdpState st = OdpState::Resident;
    if (awaits_response(w)) {
        st = svc_.odp_touch_sges(qp, w.sges, 0, w.length, true);
    } else {
        const uint32_t mtu = mtu_bytes(qp);
        const uint64_t off = uint64_t{qp.cur_pkt} * mtu;
        st = svc_.odp_touch_sges(qp, w.sges, off, std::min<uint64_t>(mtu, w.length - off), false);
    }
    if (st == OdpState::Resident) {
        return true;
    }
    if (st == OdpState::Failed) {
        fail_current(qp, OHCA_VERR_ODP_FAULT);
        return false;
    }
    svc_.odp_wait(qp);
    svc_.set_deadline(qp, svc_.host().now_ns() + DeviceLimits::odp_retry_ns);
    return false;
}

void RcRequester::odp_resumed(Qp &qp) {
    if (qp.rnr_wait) {
        return; // an RNR NAK came meanwhile: its timer stands
    }
    svc_.set_deadline(qp, 0);
    if (!qp.inflight.empty() && outstanding(qp) && ack_owed(qp)) {
        restart_ack_timer(qp); // packets are outstanding
    }
}

void RcRequester::fail(Qp &qp, uint8_t status, uint8_t verr) {
    if (!qp.inflight.empty()) {
        const SendWr &w = qp.inflight.front();
        if (w.local_status != OHCA_CQE_SUCCESS) {
            --qp.wqes_failed;
        } else if (awaits_response(w) && !w.read_done) {
            --qp.reads_pending;
        }
        svc_.complete_send(qp, qp.inflight.front(), status, verr);
        qp.inflight.pop_front();
    }
    svc_.qp_to_error(qp);
}

// Moves the transmit cursor forward to 'psn' (where it stood before a
// timeout found spurious): the packets in between are not sent again. A
// READ's request state stays as it is: the cursor returns to where that
// request left it.
void RcRequester::seek(Qp &qp, uint32_t psn) {
    if (psn_diff(psn, cursor_psn(qp)) <= 0) {
        return;
    }
    if (psn_diff(psn, qp.next_psn) >= 0) {
        qp.cur_wr = qp.inflight.size();
        qp.cur_pkt = 0;
        return;
    }
    const size_t i = wqe_at_psn(qp.inflight, psn);
    if (i < qp.inflight.size()) {
        qp.cur_wr = i;
        qp.cur_pkt = static_cast<uint32_t>(psn_diff(psn, qp.inflight[i].first_psn));
    }
}

} // namespace ohca
