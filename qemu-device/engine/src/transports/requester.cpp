// SPDX-License-Identifier: GPL-2.0-or-later
// The RC requester: SQ/RQ doorbells, send WQEs in order, segmentation into
// RoCEv2 packets by path MTU, ACK/NAK, READ response and atomic acknowledge
// handling, go-back-N retransmission on NAK or local ACK timeout, RNR waits.
#include "transports/requester.hpp"
#include "device/limits.hpp"
#include "link/byte_order.hpp"

#include <algorithm>
#include <cstring>

namespace ohca {

namespace {

constexpr uint8_t kSendFlagsKnown =
    OHCA_WQE_SIGNALED | OHCA_WQE_SOLICITED | OHCA_WQE_FENCE | OHCA_WQE_INLINE;

// IBTA RNR timer codes, in microseconds x 100 (code 0 is 655.36 ms).
constexpr std::array<uint32_t, 32> kRnrTimer100us = {
    65536, 1,    2,    3,    4,    6,     8,     12,    16,    24,   32,
    48,    64,   96,   128,  192,  256,   384,   512,   768,   1024, 1536,
    2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152};

bool is_read(const SendWr &w) {
    return w.opcode == OHCA_WR_RDMA_READ;
}
bool is_atomic(const SendWr &w) {
    return w.opcode == OHCA_WR_ATOMIC_CMP_SWP || w.opcode == OHCA_WR_ATOMIC_FETCH_ADD;
}
// READs and atomics complete only with their response data (an ACK past
// them means it was lost); they count against max_rd_atomic.
bool awaits_response(const SendWr &w) {
    return is_read(w) || is_atomic(w);
}

// Memory-management WQEs: executed here, no packets, no XRCETH.
bool is_local_opcode(uint8_t op) {
    return op == OHCA_WR_LOCAL_INV || op == OHCA_WR_REG_MR || op == OHCA_WR_BIND_MW;
}

bool known_opcode(uint8_t op) {
    return op <= OHCA_WR_ATOMIC_FETCH_ADD || op == OHCA_WR_SEND_INV || op == OHCA_WR_LOCAL_INV ||
           op == OHCA_WR_REG_MR || op == OHCA_WR_BIND_MW || op == OHCA_WR_ATOMIC_WRITE;
}

// Index of the WQE whose PSNs hold 'psn', or q.size(): a binary search, as
// the WQEs' PSN ranges follow each other in 'inflight' (a local operation
// has an empty one; only a WQE that failed before it was given PSNs has
// none, and it is always the last).
size_t wqe_at_psn(const WrQueue &q, uint32_t psn) {
    size_t n = q.size();
    if (n > 0 && q[n - 1].npkts == 0) {
        --n;
    }
    size_t lo = 0;
    size_t hi = n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (psn_diff(psn, psn_add(q[mid].first_psn, q[mid].npkts)) >= 0) {
            lo = mid + 1; // wholly before psn
        } else {
            hi = mid;
        }
    }
    return lo < n && psn_diff(psn, q[lo].first_psn) >= 0 ? lo : q.size();
}

// Where a NAK at 'psn' resumes once ack_through() has taken what it
// acknowledges: at 'psn', or at una if that stayed at a READ (or atomic)
// before it whose responses are missing. ack_through() went back there;
// resuming past it left the window full from una and no packet, so no ACK
// timer, to come.
uint32_t nak_resume(const Qp &qp, uint32_t psn) {
    return psn_diff(qp.una_psn, psn) < 0 ? qp.una_psn : psn;
}

// Packets sent and not acknowledged: the transmit cursor is past the start
// of the oldest WQE or, after a timeout while the cursor waits behind
// packets sent before it (frto), PSNs before sent_psn are unacknowledged.
bool outstanding(const Qp &qp) {
    return qp.cur_wr > 0 || qp.cur_pkt > 0 ||
           (qp.frto != Qp::Frto::Off && psn_diff(qp.sent_psn, qp.una_psn) > 0);
}

// The PSN of the transmit cursor: the next packet process_sq() sends.
uint32_t cursor_psn(const Qp &qp) {
    return qp.cur_wr < qp.inflight.size() ? psn_add(qp.inflight[qp.cur_wr].first_psn, qp.cur_pkt)
                                          : qp.next_psn;
}

uint32_t wire_imm(uint32_t le_field) {
    // The WQE holds the immediate as the wire bytes; read them in order.
    uint8_t b[4];
    std::memcpy(b, &le_field, 4);
    return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}

} // namespace

// The retransmission timeout in use: measured (rto_ns), never above the
// QP's local ACK timeout, which is also what applies before the first
// round trip has been measured. 0: no timer (timeout 0).
uint64_t RcRequester::rto(const Qp &qp) {
    const uint64_t ceiling = local_ack_timeout_ns(qp);
    return qp.rto_ns == 0 ? ceiling : std::min(qp.rto_ns, ceiling);
}

void RcRequester::restart_ack_timer(Qp &qp) {
    const uint64_t t = rto(qp);
    const uint64_t now = svc_.host().now_ns();
    qp.ack_timer_start_ns = now;
    svc_.set_deadline(qp, t == 0 ? 0 : now + t);
}

// One round trip measured: the timed packet's ACK (or first response) came
// 'r' ns after it was sent. RFC 6298: the first sample sets SRTT = r and
// RTTVAR = r / 2, later ones move them by 1/8 and 1/4; RTO = SRTT +
// max(G, 4 RTTVAR) within [min_rto_ns, local ACK timeout], where G, the
// RFC's clock granularity, is SRTT / 2 here: on a steady path RTTVAR decays
// to nothing, and an RTO at SRTT itself would expire on any jitter. A
// sample also ends a backoff: the RTO is computed afresh.
void RcRequester::rtt_sample(Qp &qp, uint64_t r) {
    if (qp.srtt_ns == 0 && qp.rttvar_ns == 0) {
        qp.srtt_ns = r;
        qp.rttvar_ns = r / 2;
    } else {
        const uint64_t err = qp.srtt_ns > r ? qp.srtt_ns - r : r - qp.srtt_ns;
        qp.rttvar_ns = qp.rttvar_ns - qp.rttvar_ns / 4 + err / 4;
        qp.srtt_ns = qp.srtt_ns - qp.srtt_ns / 8 + r / 8;
    }
    const uint64_t ceiling = local_ack_timeout_ns(qp);
    qp.rto_ns =
        std::max(qp.srtt_ns + std::max(qp.srtt_ns / 2, 4 * qp.rttvar_ns), DeviceLimits::min_rto_ns);
    if (ceiling != 0) {
        qp.rto_ns = std::min(qp.rto_ns, ceiling);
    }
}

// ---- the send queue -------------------------------------------------------------

void RcRequester::process_sq(Qp &qp, unsigned int &quantum) {
    if ((qp.state != OHCA_QPS_RTS && qp.state != OHCA_QPS_SQD) || qp.rnr_wait || qp.odp_wait) {
        return;
    }
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
            if (!svc_.tx_room(qp)) {
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
            if (!odp_ready(qp)) {
                if (qp.odp_wait) {
                    break;
                }
                --quantum;
                continue; // the WQE failed
            }
            send_packet(qp);
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
    // one DMA read: all inside this WQE's slot of the ring.
    struct {
        ohca_send_wqe w;
        std::array<ohca_sge, DeviceLimits::max_sge> sge;
    } slot{};
    ohca_send_wqe &w = slot.w;
    static_assert(sizeof(slot) == sizeof(ohca_send_wqe) + sizeof(slot.sge));
    auto fail = [&](uint8_t status, uint8_t verr) {
        wr.local_status = status;
        wr.local_verr = verr;
        wr.npkts = 0;
    };
    if (!qp.sq.ring.read(svc_.host(), base, &slot, std::min<size_t>(stride, sizeof(slot)))) {
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

void RcRequester::send_packet(Qp &qp) {
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
        // A probe after a timeout asks for its answer at once.
        f.bth.ack_req =
            last || nth == 0 || qp.frto != Qp::Frto::Off ||
            psn_diff(psn_add(f.bth.psn, 1), qp.una_psn) >= static_cast<int32_t>(qp.cwnd);
        f.bth.solicited = last && (wr.flags & OHCA_WQE_SOLICITED) != 0;
        off = k * mtu;
        len = std::min(mtu, wr.length - off);
    }
    // The payload is gathered from guest memory straight into the frame.
    auto fill = [&](std::span<uint8_t> out) { return svc_.gather(qp, wr, off, out); };
    if (svc_.emit_fill(qp, f, len, fill) == EmitResult::FillFailed) {
        // The local buffer went away: the WQE fails in order.
        fail_current(qp, OHCA_VERR_DMA);
        return;
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
    if (qp.deadline_ns == 0) {
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
    if (!qp.inflight.empty() && outstanding(qp)) {
        restart_ack_timer(qp); // packets are outstanding
    }
}

// ---- responses ------------------------------------------------------------------

void RcRequester::ack_through(Qp &qp, uint32_t psn) {
    bool progress = false;
    while (!qp.inflight.empty() && qp.state != OHCA_QPS_ERR) {
        SendWr &w = qp.inflight.front();
        if (w.local_status != OHCA_CQE_SUCCESS) {
            fail(qp, w.local_status, w.local_verr);
            return;
        }
        if (w.local_op) {
            // Executed when fetched; done once everything before it is.
            svc_.complete_send(qp, w, OHCA_CQE_SUCCESS, OHCA_VERR_NONE);
            qp.inflight.pop_front();
            progress = true;
            if (qp.cur_wr > 0) {
                --qp.cur_wr;
            } else {
                qp.cur_pkt = 0;
            }
            continue;
        }
        const uint32_t last = psn_add(w.first_psn, w.npkts - 1);
        if (awaits_response(w) && !w.read_done) {
            const uint32_t resume = psn_add(w.first_psn, w.read_pkts);
            if (psn_diff(psn, resume) >= 0) {
                // Acknowledged past a READ (or atomic) whose responses were lost: ask
                // again from the first missing one, and keep una there, or
                // the responses asked for would be dropped as duplicates.
                recover_from(qp, resume, false);
                psn = psn_add(resume, kPsnMask);
            }
            break;
        }
        if (!awaits_response(w) && psn_diff(psn, last) < 0) {
            break;
        }
        svc_.complete_send(qp, w, OHCA_CQE_SUCCESS, OHCA_VERR_NONE);
        qp.inflight.pop_front();
        progress = true;
        if (qp.cur_wr > 0) {
            --qp.cur_wr;
        } else {
            qp.cur_pkt = 0;
        }
    }
    if (psn_diff(psn_add(psn, 1), qp.una_psn) > 0 && psn_diff(psn_add(psn, 1), qp.next_psn) <= 0) {
        advance_una(qp, psn_add(psn, 1));
        progress = true;
    }
    if (progress) {
        svc_.mark_ready(qp); // the send window may have opened
        qp.retry_left = qp.attrs.retry_cnt;
        qp.rnr_left = qp.attrs.rnr_retry;
        qp.rnr_streak = 0;
        svc_.set_deadline(qp, 0); // restarted by the next transmission ...
        if (outstanding(qp)) {
            restart_ack_timer(qp); // ... or now, for packets still unacknowledged
        }
    }
}

void RcRequester::go_back(Qp &qp, uint32_t psn) {
    // Karn's rule: what is sent again is not timed, and the packet being
    // timed may be among it.
    qp.rtt_timing = false;
    // Nothing at or after a failed WQE is sent again: without one the WQE
    // is found by binary search, with one (the QP is about to fail) by a scan.
    const size_t from = qp.wqes_failed == 0 ? wqe_at_psn(qp.inflight, psn) : 0;
    for (size_t i = from; i < qp.inflight.size(); ++i) {
        const SendWr &w = qp.inflight[i];
        if (w.local_status != OHCA_CQE_SUCCESS) {
            break;
        }
        const int32_t d = psn_diff(psn, w.first_psn);
        if (d >= 0 && static_cast<uint32_t>(d) < w.npkts) {
            if (i < qp.cur_wr || (i == qp.cur_wr && static_cast<uint32_t>(d) < qp.cur_pkt)) {
                ++svc_.counters().retransmits;
            }
            qp.cur_wr = i;
            qp.cur_pkt = static_cast<uint32_t>(d);
            if (awaits_response(w)) {
                qp.inflight[i].read_pkts = qp.cur_pkt;
            }
            svc_.mark_ready(qp);
            return;
        }
    }
}

// A loss was seen: a NAK sequence error, responses past an unfinished READ,
// or the ACK timer. The window shrinks (to its minimum on a timeout: nothing
// came back at all) and transmission resumes at 'psn' -- once per loss, or
// every stale response of the READs behind would re-request them all again.
void RcRequester::recover_from(Qp &qp, uint32_t psn, bool timeout) {
    if (!timeout && qp.frto != Qp::Frto::Off) {
        // A loss while a timeout's probe is out: the timeout was no
        // spurious one, and its window cut stands for this loss too.
        qp.frto = Qp::Frto::Off;
        qp.recovering = true;
        qp.recover_psn = psn;
        go_back(qp, psn);
        return;
    }
    if (!timeout && qp.recovering && qp.recover_psn == psn) {
        return;
    }
    qp.ssthresh = std::max(qp.cwnd / 2, DeviceLimits::min_window);
    qp.cwnd = timeout ? DeviceLimits::min_window : qp.ssthresh;
    qp.cwnd_acked = 0;
    // After a timeout nothing sent before it is still on the way, so the
    // next sign of a loss there is the resend's own (its first packet lost
    // again): that goes back at once, not a timeout later.
    qp.recovering = !timeout;
    qp.recover_psn = psn;
    go_back(qp, psn);
}

// The peer has every PSN before 'una'. The window grows by the packets
// acknowledged below ssthresh and by one per window above it; a recovery
// ends once the PSN it went back to is acknowledged.
void RcRequester::advance_una(Qp &qp, uint32_t una) {
    const auto acked = static_cast<uint32_t>(psn_diff(una, qp.una_psn));
    qp.una_psn = una;
    if (qp.rtt_timing && psn_diff(una, qp.rtt_psn) > 0) {
        qp.rtt_timing = false;
        const uint64_t now = svc_.host().now_ns();
        rtt_sample(qp, now > qp.rtt_sent_ns ? now - qp.rtt_sent_ns : 0);
    }
    if (qp.recovering && psn_diff(una, qp.recover_psn) > 0) {
        qp.recovering = false;
    }
    if (qp.cwnd < qp.ssthresh) {
        qp.cwnd = std::min(qp.cwnd + acked, qp.ssthresh);
        return;
    }
    qp.cwnd_acked += acked;
    while (qp.cwnd_acked >= qp.cwnd && qp.cwnd < DeviceLimits::max_window) {
        qp.cwnd_acked -= qp.cwnd;
        ++qp.cwnd;
    }
    if (qp.cwnd == DeviceLimits::max_window) {
        qp.cwnd_acked = 0;
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

void RcRequester::rx(Qp &qp, const ParsedPacket &pkt) {
    if (qp.state != OHCA_QPS_RTS && qp.state != OHCA_QPS_SQD && qp.state != OHCA_QPS_SQE) {
        ++svc_.counters().rx_no_qp;
        return;
    }
    const Bth &h = pkt.fields.bth;
    const uint32_t psn = h.psn;
    // Only responses to what was sent: [una - 1, next_psn).
    if (psn_diff(psn, psn_add(qp.una_psn, kPsnMask)) < 0 || psn_diff(psn, qp.next_psn) >= 0) {
        ++svc_.counters().stale_responses;
        return;
    }
    if (h.opcode == rc::kAck) {
        const uint8_t syn = pkt.fields.aeth->syndrome;
        const uint8_t code = syn & 0x1f;
        switch (syn & 0x60) {
        case kAethAck:
            (void)frto_decide(qp, psn);
            ack_through(qp, psn);
            return;
        case kAethRnrNak: {
            ++svc_.counters().rnr_naks_rcvd;
            // An RNR NAK ends a probe whatever it decided: its own wait
            // and go-back take over (a probe still waiting for a second
            // response would hold the SQ after the wait).
            (void)frto_decide(qp, psn_add(psn, kPsnMask));
            qp.frto = Qp::Frto::Off;
            ack_through(qp, psn_add(psn, kPsnMask));
            if (qp.state == OHCA_QPS_ERR) {
                return;
            }
            if (qp.attrs.rnr_retry != 7) {
                if (qp.rnr_left == 0) {
                    ++svc_.counters().rnr_retry_exceeded;
                    fail(qp, OHCA_CQE_RNR_RETRY_EXC_ERR, OHCA_VERR_REMOTE_NAK);
                    return;
                }
                --qp.rnr_left;
            }
            go_back(qp, nak_resume(qp, psn));
            qp.rnr_wait = true;
            uint64_t wait =
                std::max(uint64_t{kRnrTimer100us[code]} * 10'000, DeviceLimits::min_rnr_delay_ns);
            // Retrying for ever (rnr_retry 7): past the 7 tries a finite
            // count allows, each wait doubles up to max_rnr_backoff_ns, so a
            // receiver that never posts costs a bounded rate of resends.
            if (qp.rnr_streak >= 7) {
                const unsigned int doublings = std::min(qp.rnr_streak - 6, 20);
                wait =
                    std::min(wait << doublings, std::max(wait, DeviceLimits::max_rnr_backoff_ns));
            }
            if (qp.rnr_streak < UINT8_MAX) {
                ++qp.rnr_streak;
            }
            svc_.set_deadline(qp, svc_.host().now_ns() + wait);
            return;
        }
        case kAethNak: {
            const Frto d = frto_decide(qp, psn_add(psn, kPsnMask));
            ack_through(qp, psn_add(psn, kPsnMask));
            if (qp.state == OHCA_QPS_ERR) {
                return;
            }
            if (code == kNakPsnSeq) {
                ++svc_.counters().seq_naks_rcvd;
                const uint32_t at = nak_resume(qp, psn);
                if (d == Frto::Loss) {
                    // The loss the timeout cut the window for: no second cut.
                    qp.recovering = true;
                    qp.recover_psn = at;
                    go_back(qp, at);
                    return;
                }
                recover_from(qp, at, false);
                return;
            }
            ++svc_.counters().error_naks_rcvd;
            const uint8_t status = code == kNakRemoteAccess ? OHCA_CQE_REM_ACCESS_ERR
                                   : code == kNakRemoteOp   ? OHCA_CQE_REM_OP_ERR
                                                            : OHCA_CQE_REM_INV_REQ_ERR;
            fail(qp, status, OHCA_VERR_REMOTE_NAK);
            return;
        }
        default:
            return; // reserved syndrome
        }
    }

    if (h.opcode == rc::kAtomicAck) {
        atomic_ack(qp, psn, *pkt.fields.atomic_ack);
        return;
    }

    // READ responses: the WQE they belong to, found in O(log n).
    const size_t i = wqe_at_psn(qp.inflight, psn);
    if (i == qp.inflight.size() || qp.inflight[i].local_status != OHCA_CQE_SUCCESS ||
        !is_read(qp.inflight[i]) || qp.inflight[i].read_done ||
        psn_diff(psn, psn_add(qp.inflight[i].first_psn, qp.inflight[i].read_pkts)) < 0) {
        ++svc_.counters().rx_out_of_seq; // stale: placed already, or not a READ's
        return;
    }
    const uint32_t first_psn = qp.inflight[i].first_psn;
    (void)frto_decide(qp, psn);
    ack_through(qp, psn_add(first_psn, kPsnMask)); // everything before the READ
    if (qp.state == OHCA_QPS_ERR || qp.inflight.empty() ||
        qp.inflight.front().first_psn != first_psn) {
        return;
    }
    SendWr &w = qp.inflight.front();
    const uint32_t expected = psn_add(first_psn, w.read_pkts);
    if (psn != expected) {
        // Responses before this one went missing: ask again from the first
        // of them now rather than at the ACK timeout (once per loss).
        ++svc_.counters().rx_out_of_seq;
        recover_from(qp, expected, false);
        return;
    }
    const uint32_t mtu = mtu_bytes(qp);
    const uint32_t k = w.read_pkts;
    const bool last = k + 1 == w.read_end;
    // Responses start with FIRST (or ONLY) at the packet the latest request
    // asked from; a replay from inside a READ may also go on with MIDDLE or
    // LAST there, as Linux rxe sends it (docs/interop.md).
    const bool first = k == w.read_start;
    const bool replay_ok = first && k > 0;
    const uint8_t want = first && last ? rc::kReadRespOnly
                         : first       ? rc::kReadRespFirst
                         : last        ? rc::kReadRespLast
                                       : rc::kReadRespMiddle;
    const uint8_t replay = last ? rc::kReadRespLast : rc::kReadRespMiddle;
    const size_t want_len = k + 1 == w.npkts ? w.length - k * mtu : mtu;
    if (h.opcode != want && !(replay_ok && h.opcode == replay)) {
        ++svc_.counters().rx_out_of_seq; // from an earlier request: the timer recovers
        return;
    }
    if (pkt.payload.size() != want_len) {
        fail(qp, OHCA_CQE_BAD_RESP_ERR, OHCA_VERR_REMOTE_NAK);
        return;
    }
    // Scatter at offset k * mtu.
    uint32_t offset = k * mtu;
    size_t done = 0;
    for (const Sge &s : w.sges) {
        if (done == pkt.payload.size()) {
            break;
        }
        if (offset >= s.length) {
            offset -= s.length;
            continue;
        }
        const size_t n = std::min<size_t>(s.length - offset, pkt.payload.size() - done);
        const KeyResult kr =
            svc_.check_key(s.lkey, s.addr + offset, n, OHCA_ACCESS_LOCAL_WRITE, qp.pdn);
        // Faulted in when the READ was sent; unmapped since: the response
        // is dropped (the fault is posted) and the ACK timer asks again.
        const OdpState st = kr.mr == nullptr ? OdpState::Resident
                                             : svc_.odp_touch(*kr.mr, s.addr + offset, n, true);
        if (st == OdpState::Pending) {
            ++svc_.counters().rx_out_of_seq;
            return;
        }
        if (st == OdpState::Failed) {
            fail(qp, OHCA_CQE_LOC_PROT_ERR, OHCA_VERR_ODP_FAULT);
            return;
        }
        if (kr.mr == nullptr ||
            !svc_.mr_write(*kr.mr, s.addr + offset, pkt.payload.data() + done, n)) {
            fail(qp, OHCA_CQE_LOC_PROT_ERR, kr.mr == nullptr ? kr.verr : uint8_t{OHCA_VERR_DMA});
            return;
        }
        done += n;
        offset = 0;
    }
    ++w.read_pkts;
    if (w.read_pkts == w.npkts) {
        w.read_done = true;
        --qp.reads_pending;
        ack_through(qp, psn);
    } else {
        advance_una(qp, psn_add(psn, 1));
        if (qp.cur_wr < qp.inflight.size() || qp.sq_fetched != qp.sq.pi) {
            svc_.mark_ready(qp); // the window, or the next part of this READ, may go
        }
        qp.retry_left = qp.attrs.retry_cnt;
        // Progress on an outstanding request restarts the ACK timer.
        restart_ack_timer(qp);
    }
}

// ---- timers ---------------------------------------------------------------------

void RcRequester::timer_expired(Qp &qp) {
    svc_.set_deadline(qp, 0);
    if (qp.rnr_wait) {
        qp.rnr_wait = false;
        qp.odp_wait = false;
        svc_.mark_ready(qp);
        return;
    }
    if (qp.odp_wait) {
        qp.odp_wait = false; // try the fault again
        odp_resumed(qp);
        svc_.mark_ready(qp);
        return;
    }
    if (qp.inflight.empty() || !outstanding(qp) ||
        (qp.state != OHCA_QPS_RTS && qp.state != OHCA_QPS_SQD)) {
        return;
    }
    ++svc_.counters().timeouts;
    // A timeout shorter than the QP's local ACK timeout (measured from the
    // round trip) is an early try that retry_cnt does not count: the RTO
    // doubles until it reaches the local ACK timeout, and only expiries at
    // that length use up retries, so a QP fails no sooner than IBTA's
    // retry_cnt x local ACK timeout -- a peer VM left unscheduled for a
    // while costs resends, not the connection.
    const uint64_t ceiling = local_ack_timeout_ns(qp);
    const bool early = rto(qp) < ceiling;
    const uint64_t rto_before = qp.rto_ns;
    qp.rto_ns = std::min(rto(qp) * 2, ceiling);
    if (!early) {
        if (qp.retry_left == 0) {
            ++svc_.counters().retry_exceeded;
            fail(qp, OHCA_CQE_RETRY_EXC_ERR, OHCA_VERR_NONE);
            return;
        }
        --qp.retry_left;
    }
    // F-RTO (the idea of RFC 5682; RoCE has no timestamps for Eifel's
    // detection): the peer may have everything and only its ACKs be late
    // (a VM whose loop was not scheduled). Only the oldest packets go
    // again (process_sq) and the responses decide (frto_decide). What an
    // undo restores is kept at the first of a series of timeouts. A READ
    // or atomic at the oldest PSN goes back as before: its resent request
    // replaces the responses the responder still owes (a duplicate READ
    // restarts them), and those cannot be told from the original's.
    const size_t i = qp.wqes_failed == 0 ? wqe_at_psn(qp.inflight, qp.una_psn) : qp.inflight.size();
    const bool probe = i < qp.inflight.size() && !awaits_response(qp.inflight[i]) &&
                       psn_diff(qp.una_psn, qp.sent_psn) < 0;
    if (!probe) {
        qp.frto = Qp::Frto::Off;
    } else if (qp.frto == Qp::Frto::Off) {
        qp.frto_end = qp.una_psn; // nothing sent again yet
        qp.frto_resume = cursor_psn(qp);
        qp.frto_recovering = qp.recovering;
        qp.frto_recover_psn = qp.recover_psn;
        qp.frto_cwnd = qp.cwnd;
        qp.frto_ssthresh = qp.ssthresh;
        qp.frto_cwnd_acked = qp.cwnd_acked;
        qp.frto_rto_ns = rto_before;
        qp.frto_since_ns = qp.ack_timer_start_ns;
    }
    recover_from(qp, qp.una_psn, true);
    if (probe) {
        qp.frto = Qp::Frto::Probe;
        if (psn_diff(qp.una_psn, qp.frto_end) > 0) {
            qp.frto_end = qp.una_psn;
        }
    }
}

// A response after an ACK timeout (frto set), acknowledging every PSN up
// to 'through' (a NAK: the one before its PSN). It answers packets sent
// before the timeout, so the timeout was spurious, if it acknowledges
// everything sent; or, if it acknowledges more than was sent again since
// the timeout but not everything, once the next response acknowledges
// more still. (The responder answers a duplicate with the last PSN it
// has: the probe itself draws an ACK past it when only later packets were
// lost, and then a second, the same.) A response within what was sent
// again, or not beyond the first (a duplicate ACK, a NAK), cannot tell:
// the loss is taken as real, and the timeout's go-back goes on with its
// cut window.
//
// retry_cnt: an undone timeout came with progress, which gives the retries
// back as any ACK does (IBTA counts retries without progress); until the
// decision the timeout counted as any other, so a peer that stays silent
// exhausts retry_cnt in the same time as before.
RcRequester::Frto RcRequester::frto_decide(Qp &qp, uint32_t through) {
    if (qp.frto == Qp::Frto::Off) {
        return Frto::None;
    }
    svc_.mark_ready(qp);
    if (psn_diff(through, qp.frto_end) < 0) {
        if (qp.frto == Qp::Frto::Confirm) {
            go_back(qp, qp.una_psn); // the probe's place is behind una
        }
        qp.frto = Qp::Frto::Off;
        return Frto::Loss;
    }
    if (qp.frto == Qp::Frto::Probe && psn_diff(psn_add(through, 1), qp.sent_psn) < 0) {
        qp.frto = Qp::Frto::Confirm;
        qp.frto_end = psn_add(through, 1);
        return Frto::None;
    }
    qp.frto = Qp::Frto::Off;
    frto_undo(qp);
    return Frto::Spurious;
}

// A spurious timeout undone. The window, the recovery state and the
// transmit cursor are those from before it, so the rest of the window is
// not sent again; the RTO is made to cover the silence just seen (from
// when the timer that expired was started; Eifel's response, RFC 4015,
// takes the delay seen as a round-trip sample), which also ends the
// timeout's backoff.
void RcRequester::frto_undo(Qp &qp) {
    ++svc_.counters().spurious_timeouts;
    qp.cwnd = qp.frto_cwnd;
    qp.ssthresh = qp.frto_ssthresh;
    qp.cwnd_acked = qp.frto_cwnd_acked;
    qp.recovering = qp.frto_recovering;
    qp.recover_psn = qp.frto_recover_psn;
    qp.rto_ns = qp.frto_rto_ns;
    const uint64_t now = svc_.host().now_ns();
    uint64_t silence = now > qp.frto_since_ns ? now - qp.frto_since_ns : 0;
    if (const uint64_t ceiling = local_ack_timeout_ns(qp); ceiling != 0) {
        silence = std::min(silence, ceiling);
    }
    rtt_sample(qp, silence);
    seek(qp, qp.frto_resume);
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

// The atomic acknowledge of the atomic at 'psn': the original value goes to
// its SGE (8 bytes, little endian like the remote operand), then it
// completes. A duplicate or one for no outstanding atomic is ignored.
void RcRequester::atomic_ack(Qp &qp, uint32_t psn, uint64_t orig) {
    const size_t i = wqe_at_psn(qp.inflight, psn);
    if (i == qp.inflight.size() || qp.inflight[i].local_status != OHCA_CQE_SUCCESS ||
        !is_atomic(qp.inflight[i]) || qp.inflight[i].read_done || qp.inflight[i].first_psn != psn) {
        ++svc_.counters().rx_out_of_seq;
        return;
    }
    (void)frto_decide(qp, psn);
    ack_through(qp, psn_add(psn, kPsnMask)); // everything before the atomic
    if (qp.state == OHCA_QPS_ERR || qp.inflight.empty() || qp.inflight.front().first_psn != psn ||
        !is_atomic(qp.inflight.front())) {
        return;
    }
    SendWr &w = qp.inflight.front();
    const uint64_t raw = le(orig);
    const Sge &s = w.sges.front();
    const KeyResult kr =
        svc_.check_key(s.lkey, s.addr, sizeof(raw), OHCA_ACCESS_LOCAL_WRITE, qp.pdn);
    // As for READ responses: unmapped since it was sent, the result is
    // dropped and the atomic asked again (the responder replays it).
    const OdpState st =
        kr.mr == nullptr ? OdpState::Resident : svc_.odp_touch(*kr.mr, s.addr, sizeof(raw), true);
    if (st == OdpState::Pending) {
        ++svc_.counters().rx_out_of_seq;
        return;
    }
    if (st == OdpState::Failed) {
        fail(qp, OHCA_CQE_LOC_PROT_ERR, OHCA_VERR_ODP_FAULT);
        return;
    }
    if (kr.mr == nullptr || !svc_.mr_write(*kr.mr, s.addr, &raw, sizeof(raw))) {
        fail(qp, OHCA_CQE_LOC_PROT_ERR, kr.mr == nullptr ? kr.verr : uint8_t{OHCA_VERR_DMA});
        return;
    }
    w.read_pkts = 1;
    w.read_done = true;
    --qp.reads_pending;
    ack_through(qp, psn);
}

} // namespace ohca
