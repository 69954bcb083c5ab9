// SPDX-License-Identifier: GPL-2.0-or-later
// The RC completer (IBTA 9.9, the requester's receive side): ACKs, NAKs,
// RNR NAKs, READ responses and atomic acknowledges move the oldest WQEs to
// completion, the window forward, or the transmit cursor back.
#include "device/limits.hpp"
#include "link/byte_order.hpp"
#include "transports/credits.hpp"
#include "transports/rc_common.hpp"
#include "transports/requester.hpp"

#include <algorithm>

namespace ohca {

using namespace rc_req;

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
        if (qp.tlp_out) {
            trace_rc(svc_, qp, OHCA_ENGINE_RC_TLP_ANSWERED, 0, rto(qp), 0);
        }
        qp.tlp_out = false;       // the next expiry may probe again
        svc_.set_deadline(qp, 0); // restarted by the next packet that asks ...
        if (outstanding(qp) && ack_owed(qp)) {
            restart_ack_timer(qp); // ... or now, for an ACK still owed
        }
    }
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

// A response, in named steps: the QP's state, the PSN's range, then by
// opcode: an ACK or NAK (AETH), an atomic acknowledge, a READ response.
// The steps are forced inline (below): one function's parts, not a call
// each per packet.
void RcRequester::rx(Qp &qp, const ParsedPacket &pkt) {
    if (!rx_state_ok(qp) || !rx_psn_ok(qp, pkt.fields.bth.psn)) {
        return;
    }
    const uint32_t psn = pkt.fields.bth.psn;
    if (pkt.fields.aeth) {
        take_credits(qp, *pkt.fields.aeth);
    }
    switch (pkt.fields.bth.opcode) {
    case rc::kAck:
        on_aeth(qp, psn, pkt.fields.aeth->syndrome);
        return;
    case rc::kAtomicAck:
        atomic_ack(qp, psn, *pkt.fields.atomic_ack);
        return;
    default:
        on_read_response(qp, pkt);
        return;
    }
}

[[gnu::always_inline]] inline bool RcRequester::rx_state_ok(const Qp &qp) {
    if (qp.state != OHCA_QPS_RTS && qp.state != OHCA_QPS_SQD && qp.state != OHCA_QPS_SQE) {
        ++svc_.counters().rx_no_qp;
        return false;
    }
    return true;
}

// Only responses to what was sent: [una - 1, next_psn).
[[gnu::always_inline]] inline bool RcRequester::rx_psn_ok(const Qp &qp, uint32_t psn) {
    if (psn_diff(psn, psn_add(qp.una_psn, kPsnMask)) < 0 || psn_diff(psn, qp.next_psn) >= 0) {
        ++svc_.counters().stale_responses;
        return false;
    }
    return true;
}

[[gnu::always_inline]] inline void RcRequester::on_aeth(Qp &qp, uint32_t psn, uint8_t syndrome) {
    const uint8_t code = syndrome & 0x1f;
    // A NAK names the request it refuses; one at una - 1 names a request
    // already acknowledged: a ghost (Linux rxe NAKs a duplicate READ it
    // replays after its MR was invalidated, behind our completion), which
    // must not fail the WQE now at una.
    if ((syndrome & 0x60) != kAethAck && psn_diff(psn, qp.una_psn) < 0) {
        ++svc_.counters().stale_responses;
        return;
    }
    switch (syndrome & 0x60) {
    case kAethAck:
        (void)frto_decide(qp, psn);
        ack_through(qp, psn);
        return;
    case kAethRnrNak:
        on_rnr_nak(qp, psn, code);
        return;
    case kAethNak:
        on_nak(qp, psn, code);
        return;
    default:
        return; // reserved syndrome
    }
}

// The credits of an ACK's AETH (an ACK, atomic acknowledge, or READ
// response with an AETH; a NAK's carries none): the limit, MSN + credits,
// only ever rises; "invalid" lifts it for good, as the peer gives none
// (Linux rxe, a QP on an SRQ). An MSN past the last message fetched is no
// honest peer's and counts no further: the limit stays within 32768
// messages of the SQ, whatever a peer sends.
void RcRequester::take_credits(Qp &qp, const Aeth &aeth) {
    if ((aeth.syndrome & 0x60) != kAethAck || qp.credits_unlimited) {
        return;
    }
    const uint8_t code = aeth.syndrome & 0x1f;
    if (code == credits::kInvalid) {
        qp.credits_unlimited = true;
        credit_wake(qp);
        return;
    }
    uint32_t msn = aeth.msn & kPsnMask;
    if (psn_diff(msn, qp.ssn) > 0) {
        msn = qp.ssn;
    }
    const uint32_t lsn = psn_add(msn, credits::kCount[code]);
    if (psn_diff(lsn, qp.credit_lsn) > 0) {
        qp.credit_lsn = lsn;
        credit_wake(qp);
    }
}

// The limit rose: a QP waiting for credits goes on (its wait's timer is
// no longer needed).
void RcRequester::credit_wake(Qp &qp) {
    if (qp.credit_wait) {
        qp.credit_wait = false;
        svc_.set_deadline(qp, 0);
    }
    svc_.mark_ready(qp);
}

// The responder had no receive WQE: everything before 'psn' is
// acknowledged, the rest goes again after the NAK's wait.
void RcRequester::on_rnr_nak(Qp &qp, uint32_t psn, uint8_t code) {
    ++svc_.counters().rnr_naks_rcvd;
    // An RNR NAK ends a probe whatever it decided: its own wait and
    // go-back take over (a probe still waiting for a second response would
    // hold the SQ after the wait).
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
    qp.credit_wait = false; // (the RNR wait's timer replaces it)
    uint64_t wait =
        std::max(uint64_t{kRnrTimer100us[code]} * 10'000, DeviceLimits::min_rnr_delay_ns);
    // Retrying for ever (rnr_retry 7): past the 7 tries a finite count
    // allows, each wait doubles up to max_rnr_backoff_ns, so a receiver
    // that never posts costs a bounded rate of resends.
    if (qp.rnr_streak >= 7) {
        const unsigned int doublings = std::min(qp.rnr_streak - 6, 20);
        wait = std::min(wait << doublings, std::max(wait, DeviceLimits::max_rnr_backoff_ns));
    }
    if (qp.rnr_streak < UINT8_MAX) {
        ++qp.rnr_streak;
    }
    svc_.set_deadline(qp, svc_.host().now_ns() + wait);
}

// A sequence NAK goes back to its PSN; any other NAK fails the WQE.
void RcRequester::on_nak(Qp &qp, uint32_t psn, uint8_t code) {
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
}

// A READ response: check its PSN (the READ it belongs to, the packet
// expected next), its opcode in the response sequence and its length,
// place it, then acknowledge what it completes.
[[gnu::always_inline]] inline void RcRequester::on_read_response(Qp &qp, const ParsedPacket &pkt) {
    SendWr *w = read_response_wqe(qp, pkt.fields.bth.psn);
    if (w == nullptr) {
        return;
    }
    const uint32_t mtu = mtu_bytes(qp);
    const uint32_t k = w->read_pkts;
    if (!read_response_opcode_ok(*w, pkt.fields.bth.opcode)) {
        ++svc_.counters().rx_out_of_seq; // from an earlier request: the timer recovers
        return;
    }
    const size_t want_len = k + 1 == w->npkts ? w->length - k * mtu : mtu;
    if (pkt.payload.size() != want_len) {
        fail(qp, OHCA_CQE_BAD_RESP_ERR, OHCA_VERR_REMOTE_NAK);
        return;
    }
    if (!place_read_response(qp, *w, k * mtu, pkt.payload)) {
        return;
    }
    read_response_placed(qp, *w, pkt.fields.bth.psn);
}

// The READ a response at 'psn' belongs to, once everything before it is
// acknowledged, if the response is the one it expects next; else null
// (counted; a gap is asked for again at once).
[[gnu::always_inline]] inline SendWr *RcRequester::read_response_wqe(Qp &qp, uint32_t psn) {
    // The WQE it belongs to, found in O(log n).
    const size_t i = wqe_at_psn(qp.inflight, psn);
    if (i == qp.inflight.size() || qp.inflight[i].local_status != OHCA_CQE_SUCCESS ||
        !is_read(qp.inflight[i]) || qp.inflight[i].read_done ||
        psn_diff(psn, psn_add(qp.inflight[i].first_psn, qp.inflight[i].read_pkts)) < 0) {
        ++svc_.counters().rx_out_of_seq; // stale: placed already, or not a READ's
        return nullptr;
    }
    const uint32_t first_psn = qp.inflight[i].first_psn;
    (void)frto_decide(qp, psn);
    ack_through(qp, psn_add(first_psn, kPsnMask)); // everything before the READ
    if (qp.state == OHCA_QPS_ERR || qp.inflight.empty() ||
        qp.inflight.front().first_psn != first_psn) {
        return nullptr;
    }
    SendWr &w = qp.inflight.front();
    const uint32_t expected = psn_add(first_psn, w.read_pkts);
    if (psn != expected) {
        // Responses before this one went missing: ask again from the first
        // of them now rather than at the ACK timeout (once per loss).
        ++svc_.counters().rx_out_of_seq;
        recover_from(qp, expected, false);
        return nullptr;
    }
    return &w;
}

// Responses start with FIRST (or ONLY) at the packet the latest request
// asked from; a replay from inside a READ may also go on with MIDDLE or
// LAST there, as Linux rxe sends it (docs/interop.md).
[[gnu::always_inline]] inline bool RcRequester::read_response_opcode_ok(const SendWr &w,
                                                                        uint8_t opcode) {
    const uint32_t k = w.read_pkts;
    const bool last = k + 1 == w.read_end;
    const bool first = k == w.read_start;
    const bool replay_ok = first && k > 0;
    const uint8_t want = first && last ? rc::kReadRespOnly
                         : first       ? rc::kReadRespFirst
                         : last        ? rc::kReadRespLast
                                       : rc::kReadRespMiddle;
    const uint8_t replay = last ? rc::kReadRespLast : rc::kReadRespMiddle;
    return opcode == want || (replay_ok && opcode == replay);
}

// Scatters a response's payload at 'offset' of the READ's SGEs, each
// through its lkey. False when it is not placed: dropped (a page fault
// posted; the ACK timer asks again) or the QP failed.
[[gnu::always_inline]] inline bool
RcRequester::place_read_response(Qp &qp, const SendWr &w, uint32_t offset,
                                 std::span<const uint8_t> payload) {
    size_t done = 0;
    for (const Sge &s : w.sges) {
        if (done == payload.size()) {
            break;
        }
        if (offset >= s.length) {
            offset -= s.length;
            continue;
        }
        const size_t n = std::min<size_t>(s.length - offset, payload.size() - done);
        const KeyResult kr =
            svc_.check_key(s.lkey, s.addr + offset, n, OHCA_ACCESS_LOCAL_WRITE, qp.pdn);
        // Faulted in when the READ was sent; unmapped since: the response
        // is dropped (the fault is posted) and the ACK timer asks again.
        const OdpState st = kr.mr == nullptr ? OdpState::Resident
                                             : svc_.odp_touch(*kr.mr, s.addr + offset, n, true);
        if (st == OdpState::Pending) {
            ++svc_.counters().rx_out_of_seq;
            return false;
        }
        if (st == OdpState::Failed) {
            fail(qp, OHCA_CQE_LOC_PROT_ERR, OHCA_VERR_ODP_FAULT);
            return false;
        }
        if (kr.mr == nullptr || !svc_.mr_write(*kr.mr, s.addr + offset, payload.data() + done, n)) {
            fail(qp, OHCA_CQE_LOC_PROT_ERR, kr.mr == nullptr ? kr.verr : uint8_t{OHCA_VERR_DMA});
            return false;
        }
        done += n;
        offset = 0;
    }
    return true;
}

// A response placed: the READ completes with its last one; before that
// the window moves and the ACK timer restarts.
[[gnu::always_inline]] inline void RcRequester::read_response_placed(Qp &qp, SendWr &w,
                                                                     uint32_t psn) {
    ++w.read_pkts;
    if (w.read_pkts == w.npkts) {
        w.read_done = true;
        --qp.reads_pending;
        ack_through(qp, psn);
        return;
    }
    advance_una(qp, psn_add(psn, 1));
    if (qp.cur_wr < qp.inflight.size() || qp.sq_fetched != qp.sq.pi) {
        svc_.mark_ready(qp); // the window, or the next part of this READ, may go
    }
    qp.retry_left = qp.attrs.retry_cnt;
    // Progress on an outstanding request restarts the ACK timer.
    restart_ack_timer(qp);
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
