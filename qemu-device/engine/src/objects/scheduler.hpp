// SPDX-License-Identifier: GPL-2.0-or-later
// What object owners ask of the device's run loop: QPs with work, QP and CQ
// deadlines. The device owns the ready list and the timer; owners hold a
// QpScheduler, never the device.
#pragma once

#include <cstdint>

namespace ohca {

struct Qp;

class QpScheduler {
  public:
    QpScheduler() = default;
    QpScheduler(const QpScheduler &) = delete;
    QpScheduler &operator=(const QpScheduler &) = delete;

    // The QP has work for process() (idempotent, O(1)).
    virtual void mark_ready(Qp &qp) = 0;
    // The QP's timer expires at deadline_ns (0 disarms).
    virtual void set_deadline(Qp &qp, uint64_t deadline_ns) = 0;
    // The QP's pacer lets it send again at deadline_ns (0 disarms): it is
    // marked ready then.
    virtual void set_pace(Qp &qp, uint64_t deadline_ns) = 0;
    // Off the ready list and the timer heap: before a QP is reset or freed.
    virtual void unschedule(Qp &qp) = 0;
    // A timer heap's earliest deadline may have changed: rearm the host's.
    virtual void update_timer() = 0;

  protected:
    ~QpScheduler() = default;
};

} // namespace ohca
