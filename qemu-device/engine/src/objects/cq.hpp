// SPDX-License-Identifier: GPL-2.0-or-later
// Completion EQs and CQs: CREATE/DESTROY_EQ, CREATE/DESTROY/RESIZE/MODIFY_CQ,
// the CQ and completion EQ doorbells, CQEs with owner-bit phase, completion
// events and their moderation (the CQ timer heap), overrun.
#pragma once

#include "device/command.hpp"
#include "device/sched.hpp"
#include "device/uar_table.hpp"
#include "objects/event_sink.hpp"
#include "objects/pbl_budget.hpp"
#include "objects/rdma_objects.hpp"
#include "objects/scheduler.hpp"
#include "state/refs.hpp"
#include "state/stream.hpp"

#include <ohca/ohca_queue.h>

#include <cstdint>

namespace ohca {

class QpTable;

class CqTable {
  public:
    CqTable(const Host &host, PblBudget &pbl, EventSink &events, QpScheduler &sched,
            const UarTable &uars, UarRefs &uar_refs)
        : host_(host), pbl_(pbl), events_(events), sched_(sched), uars_(uars), uar_refs_(uar_refs) {
    }
    CqTable(const CqTable &) = delete;
    CqTable &operator=(const CqTable &) = delete;

    void reset();
    [[nodiscard]] Cq *find(uint32_t cqn) { return cqn < cqs_.size() ? cqs_[cqn].get() : nullptr; }
    [[nodiscard]] CompletionEq *find_eq(uint32_t eqn) {
        return eqn < eqs_.size() ? eqs_[eqn].get() : nullptr;
    }

    CmdResult cmd_create_eq(const Command &cmd);
    CmdResult cmd_destroy_eq(const Command &cmd);
    CmdResult cmd_create_cq(const Command &cmd);
    CmdResult cmd_destroy_cq(const Command &cmd);
    // 'qps' answers what the CQ's QPs still owe it (cq_resize.cpp).
    CmdResult cmd_resize_cq(const Command &cmd, const QpTable &qps);
    CmdResult cmd_modify_cq(const Command &cmd);

    // Doorbells; false: ignored (counted by the caller).
    bool cq_doorbell(uint32_t page, uint32_t cqn, uint32_t value);
    bool eq_doorbell(uint32_t eqn, uint32_t value);

    // A CQE into CQ 'cqn' (owner bit set here); false if it was not written
    // (no CQ, CQ in error, overrun).
    bool post_cqe(uint32_t cqn, ohca_cqe cqe, bool solicited);

    // Moderated events whose period ended by 'now': raised. Returns how
    // many expired.
    // At most 'max' of the timers due at 'now'; how many expired.
    unsigned int expire_timers(uint64_t now, unsigned int max) {
        return timers_.size() == 0 ? 0 : expire_due(now, max); // mostly none armed
    }
    // Whether a timer is due at 'now' (left over by expire_timers' bound).
    [[nodiscard]] bool timer_due(uint64_t now) const {
        const uint64_t t = timers_.earliest();
        return t != 0 && t <= now;
    }
    [[nodiscard]] uint64_t earliest_timer() const { return timers_.earliest(); }

    // Completion EQs and CQs (objects/snapshot.cpp), with their
    // moderation timers re-armed; the references they hold into 'refs'.
    void save(state::Writer &w) const;
    void load(state::Reader &r, state::Refs &refs);

  private:
    unsigned int expire_due(uint64_t now, unsigned int max);
    void post_cq_event(uint32_t eqn, uint32_t cqn);
    // Moderation of an armed CQ's event: 'n' more eligible CQEs arrived.
    void cq_eligible(Cq &cq, uint32_t n);
    void raise_cq_event(Cq &cq); // disarms, ends a held event's period
    void cq_timer_expired(Cq &cq);

    const Host &host_;
    PblBudget &pbl_;
    EventSink &events_;
    QpScheduler &sched_;
    const UarTable &uars_;
    UarRefs &uar_refs_;
    Table<CompletionEq> eqs_;
    Table<Cq> cqs_;
    TimerHeap<Cq> timers_{DeviceLimits::max_cq + 1};
};

} // namespace ohca
