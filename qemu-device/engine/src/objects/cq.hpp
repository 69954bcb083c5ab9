// SPDX-License-Identifier: GPL-2.0-or-later
// Completion EQs and CQs: CREATE/DESTROY_EQ, CREATE/DESTROY/RESIZE/MODIFY_CQ,
// the CQ and completion EQ doorbells, CQEs with owner-bit phase, completion
// events and their moderation (the CQ timer heap), overrun.
#pragma once

#include "device/command.hpp"
#include "device/sched.hpp"
#include "device/uar_table.hpp"
#include "objects/db_record.hpp"
#include "objects/event_sink.hpp"
#include "objects/pbl_budget.hpp"
#include "objects/rdma_objects.hpp"
#include "objects/scheduler.hpp"
#include "state/refs.hpp"
#include "state/stream.hpp"

#include <ohca/ohca_queue.h>

#include <array>
#include <cstdint>
#include <span>

namespace ohca {

class QpTable;

class CqTable {
  public:
    CqTable(const Host &host, PblBudget &pbl, DbRecords &records, EventSink &events,
            QpScheduler &sched, const UarTable &uars, UarRefs &uar_refs)
        : host_(host), pbl_(pbl), records_(records), events_(events), sched_(sched), uars_(uars),
          uar_refs_(uar_refs) {}
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
    // A CQE as post_cqe() writes it, but during a run of the run loop
    // (hold_cqes) held and written with the ones after it for the same CQ
    // in one DMA: when the run ends, another CQ gets one, kMaxHeld are
    // held, a CQE is posted directly or write_held() is called (before an
    // event: the CQEs before it stay before it).
    void post_cqe_held(uint32_t cqn, const ohca_cqe &cqe, bool solicited);
    // The run loop's runs hold CQEs; the end of one writes them.
    void hold_cqes(bool hold) {
        hold_ = hold;
        if (!hold) {
            write_held();
        }
    }
    void write_held() {
        if (held_n_ != 0) {
            write_held_cqes();
        }
    }

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
    void load(state::Reader &r, uint16_t version, state::Refs &refs);

  private:
    static constexpr size_t kMaxHeld = 64;
    bool post_one(uint32_t cqn, ohca_cqe cqe, bool solicited); // post_cqe, none held
    void write_held_cqes();
    // CQEs into CQ 'cqn' as post_cqe() posts them one by one ('solicited':
    // bit i for CQE i), in one DMA where they fit before the ring's end:
    // all but the first one's owner byte, then that byte, so the consumer
    // (which polls in order) finds each of them whole once it sees the
    // first.
    void post_cqes(uint32_t cqn, std::span<const ohca_cqe> cqes, uint64_t solicited);
    unsigned int expire_due(uint64_t now, unsigned int max);
    void post_cq_event(uint32_t eqn, uint32_t cqn);
    // Moderation of an armed CQ's event: 'n' more eligible CQEs arrived.
    void cq_eligible(Cq &cq, uint32_t n);
    void raise_cq_event(Cq &cq); // disarms, ends a held event's period
    void cq_timer_expired(Cq &cq);

    const Host &host_;
    PblBudget &pbl_;
    DbRecords &records_;
    EventSink &events_;
    QpScheduler &sched_;
    const UarTable &uars_;
    UarRefs &uar_refs_;
    Table<CompletionEq> eqs_;
    Table<Cq> cqs_;
    TimerHeap<Cq> timers_{DeviceLimits::max_cq + 1};
    // CQEs held during a run (post_cqe_held), all for held_cqn_.
    bool hold_ = false;
    uint32_t held_cqn_ = 0;
    uint32_t held_n_ = 0;
    uint64_t held_solicited_ = 0;
    std::array<ohca_cqe, kMaxHeld> held_{};
};

} // namespace ohca
