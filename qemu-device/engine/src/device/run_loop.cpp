// SPDX-License-Identifier: GPL-2.0-or-later
// The run loop (run_loop.hpp): readiness, timers, and runs that visit only
// ready QPs within a time bound.
#include "device/run_loop.hpp"

#include "device/dev_status.hpp"
#include "device/wire_port.hpp"
#include "objects/cq.hpp"

#include <algorithm>

namespace ohca {

RunLoop::RunLoop(const Deps &deps, uint32_t max_qp)
    : host_(deps.host), status_(deps.status), port_(deps.port), cqs_(deps.cqs),
      transports_(deps.transports), timers_(max_qp + DeviceLimits::first_qpn),
      paced_(max_qp + DeviceLimits::first_qpn) {
    if (const IbWire *ib = port_.ib_wire(); ib != nullptr) {
        vl_.emplace(*ib);
    }
}

void RunLoop::reset() {
    ready_.clear();
    if (vl_) {
        vl_->clear();
    }
    timers_.clear();
    paced_.clear();
    timers_deferred_ = false;
    if (timer_deadline_ != 0) {
        timer_deadline_ = 0;
        host_.set_timer(0);
    }
}

// ---- readiness and timers ------------------------------------------------------

void RunLoop::mark_ready(Qp &qp) {
    push_ready(qp);
    kick();
}

void RunLoop::unschedule(Qp &qp) {
    remove_ready(qp);
    timers_.set(qp, 0);
    paced_.set(qp.sched.pace, 0);
}

void RunLoop::set_pace(Qp &qp, uint64_t deadline_ns) {
    qp.sched.pace.qp = &qp;
    paced_.set(qp.sched.pace, deadline_ns);
}

bool RunLoop::check_timers() {
    if (paced_.size() == 0 && timers_.size() == 0 && cqs_.earliest_timer() == 0) {
        return true; // nothing armed (an idle pass, mostly): no clock to read
    }
    const uint64_t now = host_.now_ns();
    // Each expiry disarms the QP's timer or moves it into the future; the
    // run handles at most max_run_timers of them, like its other work.
    unsigned int budget = DeviceLimits::max_run_timers;
    // Paced QPs whose time has come: ready again (O(log n) each).
    for (size_t n = paced_.size(); n > 0 && budget > 0; --n) {
        PaceSlot *p = paced_.top();
        if (p == nullptr || now < p->deadline_ns) {
            break;
        }
        --budget;
        Qp &qp = *p->qp;
        paced_.set(*p, 0);
        push_ready(qp);
    }
    for (size_t n = timers_.size(); n > 0; --n) {
        Qp *qp = timers_.top();
        if (qp == nullptr || now < qp->deadline_ns) {
            break;
        }
        if (budget == 0) {
            ++stats_.timers_capped;
            return false;
        }
        --budget;
        ++stats_.timer_expiries;
        transport_of(transports_, *qp).timer_expired(*qp);
    }
    // Moderated completion events whose period ended, within what is left
    // of the run's bound.
    const unsigned int n = cqs_.expire_timers(now, budget);
    stats_.timer_expiries += n;
    if (n == budget && cqs_.timer_due(now)) {
        ++stats_.timers_capped;
        return false;
    }
    return true;
}

void RunLoop::update_timer() {
    uint64_t q = timers_.earliest();
    if (const uint64_t p = paced_.earliest(); p != 0) {
        q = q == 0 ? p : std::min(q, p);
    }
    const uint64_t c = cqs_.earliest_timer();
    uint64_t earliest = q == 0 ? c : c == 0 ? q : std::min(q, c);
    if (const uint64_t f = port_.link_deadline(); f != 0) {
        earliest = earliest == 0 ? f : std::min(earliest, f); // the periodic FCPs
    }
    if (earliest != timer_deadline_) {
        timer_deadline_ = earliest;
        host_.set_timer(earliest);
    }
}

// ---- the runs --------------------------------------------------------------------

// A doorbell's run gives the QP it rang the first visit, ahead of the QPs
// already ready: its packets are the ones the guest waits for. The QP
// leaves the ready list for that visit and goes back to its end if it has
// more, as in any round, so the list stays the one record of what has
// work. Not while QPs wait for the port's pace: the bucket's next tokens
// are theirs in turn (a guest ringing its doorbell again and again would
// take them all), so the run starts at the head of the list.
void RunLoop::doorbell_run(Qp *rung, unsigned int budget) {
    in_run_ = false;
    if (rung != nullptr && rung->sched.ready && budget > 0 && status_.running()) {
        ++stats_.doorbell_runs;
        // Nor on an InfiniBand port: its VL arbitration decides every turn.
        run(port_.pace_waiting() || vl_ ? nullptr : rung, budget, DeviceLimits::doorbell_run_ns);
    } else if (status_.running() && (!port_.backlog_empty() || ready_size() != 0)) {
        host_.schedule();
    }
}

// The frames received before the run, then the timers that expired, then
// rounds of: the received frames, then one visit of each QP ready at the
// start of the round (a QP that used its whole quantum goes to the back;
// the round ends early when the port's pace holds the data back).
// The run ends when nothing is left or max_run_ns has passed; then it asks
// to be scheduled again if anything is left.
void RunLoop::run(Qp *first, unsigned int max_work, uint64_t max_ns) {
    in_run_ = true;
    cqs_.hold_cqes(true); // written together at the end (CqTable::post_cqe_held)
    ++stats_.runs;
    const uint64_t start = host_.now_ns();
    unsigned int work = 0;
    bool out_of_time = false;
    bool stalled = false; // the last round made no progress
    // Counts units of work (a frame, a packet, a WQE); reads the clock now
    // and then.
    auto account = [&](unsigned int units) {
        const unsigned int before = work;
        work += units;
        out_of_time =
            out_of_time || work >= max_work ||
            (work / DeviceLimits::run_clock_every != before / DeviceLimits::run_clock_every &&
             host_.now_ns() - start >= max_ns);
    };
    // What was received before the run started (ACKs, NAKs, responses)
    // is taken in before the timers: after a long pause of the host's loop
    // a timer can be past its deadline with the ACK that stops it already
    // waiting here. The doorbell's QP keeps its first turn.
    size_t received = port_.backlog_size();
    if (first != nullptr && first->sched.ready && status_.running()) {
        remove_ready(*first);
        ++stats_.visits;
        const unsigned int q = std::min(DeviceLimits::qp_quantum, max_work);
        unsigned int quantum = q;
        visit(*first, quantum);
        if (quantum == 0) {
            push_ready(*first);
        }
        account(q - quantum);
    }
    for (; received > 0 && !out_of_time && status_.running() && !port_.backlog_empty();
         --received) {
        port_.take_frame();
        account(1);
    }
    // If the run's bound cut that short, the timers wait for the next run,
    // which checks them whatever it holds: a peer that keeps the backlog
    // full delays a deadline by one run, never for good.
    // Expired timers beyond the run's bound go first in the next run too.
    if (received == 0 || port_.backlog_empty() || timers_deferred_ || !status_.running()) {
        timers_deferred_ = !check_timers();
    } else {
        timers_deferred_ = true;
        ++stats_.timers_deferred;
    }
    while (!out_of_time && status_.running() && (!port_.backlog_empty() || ready_size() != 0)) {
        bool progress = false;
        while (!out_of_time && !port_.backlog_empty()) {
            port_.take_frame();
            progress = true;
            account(1);
        }
        if (vl_) {
            vl_->begin_round();
        }
        // A VL arbiter may spend a visit on each QP that cannot go (no
        // credit), and one more per VL, before it passes their VL over:
        // those visits take no place of the round.
        size_t idle = vl_ ? ready_size() + QpVlArbiter::kLists : 0;
        for (size_t n = ready_size(); n > 0 && !out_of_time && status_.running(); --n) {
            if (port_.pace_holds()) {
                break; // the rest go first at the refill (WirePort::pace_holds)
            }
            unsigned int q = DeviceLimits::qp_quantum;
            Qp *qp = vl_ ? vl_->next(q) : ready_.pop();
            if (qp == nullptr) {
                break; // no VL may go for the rest of the round
            }
            ++stats_.visits;
            unsigned int quantum = q;
            visit(*qp, quantum);
            if (quantum == 0) {
                push_ready(*qp); // more to send: after the others
            }
            if (vl_) {
                vl_->visited(q - quantum);
            }
            if (quantum != q) {
                progress = true;
                account(q - quantum);
            } else if (idle > 0) {
                --idle;
                ++n;
            }
        }
        if (!progress) {
            stalled = true;
            break; // only QPs waiting for room that did not come
        }
    }
    in_run_ = false;
    cqs_.hold_cqes(false);
    if (out_of_time) {
        ++stats_.out_of_time;
    }
    // QPs that wait for the peer's credit run again when its FCP comes.
    // So do QPs on VLs the arbitration tables do not serve, when the SM
    // sets them (its MAD's reply rings QP0's doorbell).
    const bool credit_stall = (port_.end_run() || (vl_ && vl_->only_unserved())) && stalled;
    if (status_.running() &&
        (!port_.backlog_empty() || (ready_size() != 0 && !credit_stall) || timers_deferred_)) {
        host_.schedule();
    }
    update_timer();
}

} // namespace ohca
