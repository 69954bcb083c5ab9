// SPDX-License-Identifier: GPL-2.0-or-later
// The transports' run loop: the ready list (QPs with work), the timer heap
// (QP deadlines; CQ moderation timers are CqTable's), and runs bounded in
// work and time that take in what the port received and visit the ready
// QPs through their transports. Owners and transports reach it as their
// QpScheduler; the device starts a run from process() or a doorbell.
#pragma once

#include "device/host.hpp"
#include "device/sched.hpp"
#include "device/vl_arbiter.hpp"
#include "objects/scheduler.hpp"
#include "transports/transport.hpp"

#include <cstdint>
#include <optional>

namespace ohca {

class CqTable;
class WirePort;
struct DevStatus;

// The run loop's counters, for tests, benchmarks and tracing.
struct SchedStats {
    uint64_t runs = 0;        // process_rdma() calls
    uint64_t visits = 0;      // ready QPs visited
    uint64_t out_of_time = 0; // runs ended by max_run_ns (or max_run_work)
    uint64_t timer_expiries = 0;
    uint64_t doorbell_runs = 0; // runs of ohca_engine_doorbell_fast()
    // Runs that left the timers to the next one: their bound ended
    // before the frames received before them were all taken in.
    uint64_t timers_deferred = 0;
    // Runs that left expired timers to the next one: more than
    // DeviceLimits::max_run_timers had expired.
    uint64_t timers_capped = 0;
};

class RunLoop final : public QpScheduler {
  public:
    struct Deps {
        const Host &host;
        const DevStatus &status;
        WirePort &port; // its backlog of received and looped-back packets
        CqTable &cqs;   // moderation timers
        const TransportTable &transports;
    };
    RunLoop(const Deps &deps, uint32_t max_qp);
    ~RunLoop() = default;

    // Power-on: nothing ready, no timer (the host's disarmed).
    void reset();

    void mark_ready(Qp &qp) override;
    void set_deadline(Qp &qp, uint64_t deadline_ns) override { timers_.set(qp, deadline_ns); }
    void set_pace(Qp &qp, uint64_t deadline_ns) override;
    void unschedule(Qp &qp) override; // before a QP is reset or destroyed
    void update_timer() override;

    // Asks the host for a run, unless inside one (which looks again when
    // it ends).
    void kick() const {
        if (!in_run_) {
            host_.schedule();
        }
    }
    // While a doorbell is taken: its run, or the check after it, asks for
    // the next (doorbell_run).
    void hold_kicks(bool hold) { in_run_ = hold; }
    // process(): an ordinary run.
    void run() { run(nullptr, DeviceLimits::max_run_work, DeviceLimits::max_run_ns); }
    // A doorbell's run (ohca_engine_doorbell_fast): the rung QP, if it was
    // made ready, takes the first turn of a run of at most 'budget' units.
    void doorbell_run(Qp *rung, unsigned int budget);
    [[nodiscard]] const SchedStats &stats() const { return stats_; }
    // An InfiniBand port's VL arbitration (none on Ethernet).
    [[nodiscard]] const QpVlArbiter *vl_arbiter() const { return vl_ ? &*vl_ : nullptr; }

  private:
    // One run: 'first' (if ready) visited first, at most 'max_work' units
    // and 'max_ns' of the host's clock.
    void run(Qp *first, unsigned int max_work, uint64_t max_ns);
    // False when expired timers are left for the next run (max_run_timers).
    bool check_timers();
    void visit(Qp &qp, unsigned int &quantum) { transport_of(transports_, qp).visit(qp, quantum); }
    // The ready QPs: one list, or an InfiniBand port's lists per VL.
    void push_ready(Qp &qp) {
        if (vl_) {
            vl_->push(qp);
        } else {
            ready_.push(qp);
        }
    }
    void remove_ready(Qp &qp) {
        if (vl_) {
            vl_->remove(qp);
        } else {
            ready_.remove(qp);
        }
    }
    [[nodiscard]] size_t ready_size() const { return vl_ ? vl_->size() : ready_.size(); }

    const Host &host_;
    const DevStatus &status_;
    WirePort &port_;
    CqTable &cqs_;
    const TransportTable &transports_;
    ReadyList ready_;
    std::optional<QpVlArbiter> vl_; // its QPs are in these lists, not ready_
    TimerHeap<Qp> timers_;
    TimerHeap<PaceSlot> paced_;   // QPs their pacer holds back (DCQCN)
    uint64_t timer_deadline_ = 0; // last deadline given to set_timer
    bool in_run_ = false;         // inside a run: no schedule() per ready QP
    // The last run left the timers unchecked: the next checks them
    // whatever the backlog holds.
    bool timers_deferred_ = false;
    SchedStats stats_;
};

} // namespace ohca
