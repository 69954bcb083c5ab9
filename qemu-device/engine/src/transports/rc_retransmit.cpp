// SPDX-License-Identifier: GPL-2.0-or-later
// RC retransmission: the retransmission timeout measured from round trips
// (RFC 6298), a tail-loss probe at its first expiry, go-back-N on a NAK or
// timeout with the congestion window cut once per loss, RNR and ODP waits
// on the QP's timer, and F-RTO's undoing of a spurious timeout.
#include "device/limits.hpp"
#include "link/byte_order.hpp"
#include "transports/rc_common.hpp"
#include "transports/requester.hpp"
#include "transports/xrc.hpp"

#include <algorithm>

namespace ohca {

using namespace rc_req;

// The retransmission timeout in use: measured (rto_ns), never above the
// QP's local ACK timeout; before the first round trip has been measured,
// DeviceLimits::initial_rto_ns (or the local ACK timeout, if shorter).
// 0: no timer (timeout 0). On a lossless
// priority (PFC) or an InfiniBand link (credits) congestion loses nothing:
// a queue, a pause or a credit wait only delays the ACK, so the early
// tries of a measured RTO would only be spurious timeouts and resends;
// the local ACK timeout alone finds a fault there.
uint64_t RcRequester::rto(const Qp &qp) const {
    const uint64_t ceiling = local_ack_timeout_ns(qp);
    if (svc_.lossless(qp)) {
        return ceiling;
    }
    return std::min(qp.rto_ns == 0 ? DeviceLimits::initial_rto_ns : qp.rto_ns, ceiling);
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
// sample also ends a backoff: the RTO is computed afresh. Only a packet
// sent once and answered without a timer expiry in between is a sample
// (Karn): a late ACK after a probe or an undone timeout measures the host's
// stall as much as the path, and one such second-long silence lifted the
// RTO to the local ACK timeout for tens of round trips (docs/wire.md).
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

void RcRequester::go_back(Qp &qp, uint32_t psn, bool asked_stay_owed) {
    qp.tlp_out = false;
    // Everything from 'psn' goes again, asking anew: no ACK asked for beyond
    // it is owed before then. (After a timeout the ACKs asked for stay owed:
    // F-RTO's undo may find them answered, and the cursor skips what they
    // covered.)
    if (!asked_stay_owed) {
        ack_requests_void_from(qp, psn);
    }
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
    go_back(qp, psn, timeout);
}

// The ACK timer expired at the measured RTO, for the first time since the
// last progress, with everything sent once and the newest packet a SEND or
// WRITE one: it goes again, asking for an ACK, as a tail-loss probe (the
// TLP of RFC 8985), and the timer restarts at the doubled RTO. Nothing is
// cut, nothing else goes again, no retry is used and no timeout counted.
// The responder answers it at once either way: the newest packet lost
// alone is filled in (an ACK), several lost before it draw a sequence NAK,
// which goes back as any NAK does, and a late ACK (the peer's or the
// fabric's queue) meets a duplicate answered with an ACK. So a tail loss
// costs one RTO and a round trip, and an ACK late by up to 3 RTOs costs
// one packet, where each was a timeout (the window to its minimum, and
// with one packet unacknowledged F-RTO cannot call it spurious: the ACK
// of the resend and the original's are the same). Otherwise the expiry is
// a timeout, and what refused the probe is returned (counted in
// QUERY_STATS, rc_timeouts_*): a probe already out, an RTO at the QP's
// local ACK timeout (lossless priority, backed off), a timeout before it
// not yet decided (F-RTO), a NAK's go-back under way, a go-back still
// resending, a READ or atomic newest (a request sent again restarts the
// responses) or a failed WQE.
RcRequester::NoProbe RcRequester::tail_probe(Qp &qp) {
    const uint64_t t = rto(qp);
    const uint64_t ceiling = local_ack_timeout_ns(qp);
    if (qp.tlp_out) {
        return NoProbe::AfterProbe;
    }
    if (t >= ceiling) {
        return NoProbe::Full;
    }
    if (qp.frto != Qp::Frto::Off) {
        return NoProbe::Frto;
    }
    if (qp.recovering) {
        return NoProbe::Recovery;
    }
    if (cursor_psn(qp) != qp.sent_psn) {
        return NoProbe::GoBack;
    }
    const uint32_t newest = psn_add(qp.sent_psn, kPsnMask);
    const size_t i = wqe_at_psn(qp.inflight, newest);
    if (qp.wqes_failed != 0 || psn_diff(qp.sent_psn, qp.una_psn) <= 0 || i == qp.inflight.size() ||
        awaits_response(qp.inflight[i])) {
        return NoProbe::Read;
    }
    ++svc_.counters().tail_probes;
    qp.rto_ns = std::min(t * 2, ceiling);
    go_back(qp, newest, true); // (Karn: stops the timing)
    qp.tlp_out = true;
    return NoProbe::Sent;
}

void RcRequester::timer_expired(Qp &qp) {
    const uint64_t now = svc_.host().now_ns();
    const uint64_t late = now > qp.deadline_ns ? now - qp.deadline_ns : 0;
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
    if (qp.credit_wait) {
        credit_wait_expired(qp, late);
        return;
    }
    if (qp.inflight.empty() || !outstanding(qp) || !ack_owed(qp) ||
        (qp.state != OHCA_QPS_RTS && qp.state != OHCA_QPS_SQD)) {
        return;
    }
    const NoProbe why = tail_probe(qp);
    if (why == NoProbe::Sent) {
        trace_rc(svc_, qp, OHCA_ENGINE_RC_TLP, 0, rto(qp), late);
        return;
    }
    // A timeout shorter than the QP's local ACK timeout (measured from the
    // round trip) is an early try that retry_cnt does not count: the RTO
    // doubles until it reaches the local ACK timeout, and only expiries at
    // that length use up retries, so a QP fails no sooner than IBTA's
    // retry_cnt x local ACK timeout -- a peer VM left unscheduled for a
    // while costs resends, not the connection.
    const uint64_t ceiling = local_ack_timeout_ns(qp);
    const bool early = rto(qp) < ceiling;
    const size_t oldest = wqe_at_psn(qp.inflight, qp.una_psn);
    // Why it waited, counted (QUERY_STATS rc_timeouts_*).
    RoceCounters &c = svc_.counters();
    ++c.timeouts;
    c.timeouts_full += early ? 0 : 1;
    c.timeouts_no_rtt += qp.srtt_ns == 0 && qp.rttvar_ns == 0 ? 1 : 0;
    c.timeouts_after_probe += why == NoProbe::AfterProbe ? 1 : 0;
    c.timeouts_read += oldest < qp.inflight.size() && awaits_response(qp.inflight[oldest]) ? 1 : 0;
    c.timeouts_frto += why == NoProbe::Frto ? 1 : 0;
    c.timeouts_recovery += why == NoProbe::Recovery ? 1 : 0;
    c.timeouts_goback += why == NoProbe::GoBack ? 1 : 0;
    c.timeouts_read_newest += why == NoProbe::Read ? 1 : 0;
    qp.rto_ns = std::min(rto(qp) * 2, ceiling);
    trace_rc(svc_, qp, OHCA_ENGINE_RC_TIMEOUT, static_cast<unsigned int>(why), rto(qp), late);
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
    const size_t i = qp.wqes_failed == 0 ? oldest : qp.inflight.size();
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
    }
    recover_from(qp, qp.una_psn, true);
    if (probe) {
        qp.frto = Qp::Frto::Probe;
        if (psn_diff(qp.una_psn, qp.frto_end) > 0) {
            qp.frto_end = qp.una_psn;
        }
    }
}

// A QP with nothing outstanding waited for end-to-end credits (requester.cpp,
// credit_allows) and none came: the responder's credit update (one ACK,
// sent when its consumer posts receive WQEs) was lost, or nothing is
// posted yet. Until the wait reaches the local ACK timeout, the QP asks
// for an ACK and waits again, twice as long: a zero-length RDMA WRITE at
// the last acknowledged PSN, which the responder takes as a duplicate and
// answers with an ACK carrying its credits -- nothing executed, no
// receive WQE used, so no RNR NAK to a receiver that is only slow. A lost
// update thus costs one RTO, not the local ACK timeout (1.07 s at timeout
// 18: docs/migration.md, the peer's gap). Past the local ACK timeout one
// message goes as the probe IBTA allows (a peer that answers no duplicate
// still gets it; an RNR NAK to it is handled as any other).
void RcRequester::credit_wait_expired(Qp &qp, uint64_t late_ns) {
    ++svc_.counters().credit_timeouts;
    const uint64_t now = svc_.host().now_ns();
    const uint64_t ceiling = local_ack_timeout_ns(qp);
    const uint64_t since = qp.credit_wait_since_ns;
    const uint64_t waited = now > since ? now - since : 0;
    if (waited < ceiling) {
        if (!svc_.tx_paused(qp)) {
            emit_ack_request(qp);
        }
        const uint64_t next = std::max(rto(qp), waited);
        svc_.set_deadline(qp, since + std::min(waited + next, ceiling));
        trace_rc(svc_, qp, OHCA_ENGINE_RC_CREDIT_ASK, 0, next, late_ns);
        return;
    }
    trace_rc(svc_, qp, OHCA_ENGINE_RC_CREDIT_PROBE, 0, rto(qp), late_ns);
    ++svc_.counters().credit_probes;
    qp.credit_wait = false;
    qp.credit_probe = true;
    svc_.mark_ready(qp);
}

// An ACK asked for without sending anything new: a zero-length RDMA WRITE
// ONLY (AckReq) at the last acknowledged PSN, which the responder takes
// as a duplicate -- nothing executed, no receive WQE used -- and answers
// with an ACK of that PSN carrying its current credits.
void RcRequester::emit_ack_request(const Qp &qp) {
    PacketFields f;
    f.bth.opcode = rc::kWriteOnly;
    f.bth.dest_qp = qp.attrs.dest_qpn;
    f.bth.psn = psn_add(qp.una_psn, kPsnMask);
    f.bth.ack_req = true;
    f.reth = Reth{0, 0, 0};
    rc_emit(svc_, qp, f);
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
            // the probe's place is behind una; the timeout's asked ACKs stay owed
            go_back(qp, qp.una_psn, true);
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
// not sent again. The estimator gets no sample (Karn): the silence just
// seen is the peer's stall (a VM unscheduled, migrated) as much as the
// path's round trip, and taken as one (Eifel's response, RFC 4015) it made
// a one-second stall hold the RTO near the local ACK timeout for tens of
// round trips after it (for good on a host where such stalls recur). The
// backed-off RTO stays until the next packet sent once is answered within
// it (RFC 6298 5.7): a stall is forgotten one round trip later, a path
// that became slower is measured then.
void RcRequester::frto_undo(Qp &qp) {
    ++svc_.counters().spurious_timeouts;
    trace_rc(svc_, qp, OHCA_ENGINE_RC_SPURIOUS, 0, rto(qp), 0);
    qp.cwnd = qp.frto_cwnd;
    qp.ssthresh = qp.frto_ssthresh;
    qp.cwnd_acked = qp.frto_cwnd_acked;
    qp.recovering = qp.frto_recovering;
    qp.recover_psn = qp.frto_recover_psn;
    seek(qp, qp.frto_resume);
}

} // namespace ohca
