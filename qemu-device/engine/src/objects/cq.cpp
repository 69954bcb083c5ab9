// SPDX-License-Identifier: GPL-2.0-or-later
// Completion EQs and CQs: their commands, CQEs with owner-bit phase, CQ
// doorbells (consumer index, arming), completion events and their
// moderation (MODIFY_CQ), overrun. RESIZE_CQ is in cq_resize.cpp.
#include "objects/cq.hpp"

#include "link/byte_order.hpp"
#include "objects/db_record.hpp"

#include <array>
#include <cstring>
#include <optional>

namespace ohca {

void CqTable::reset() {
    held_n_ = 0; // their CQs are gone
    held_solicited_ = 0;
    eqs_.clear();
    eqs_.resize(DeviceLimits::max_eq);
    cqs_.clear();
    cqs_.resize(DeviceLimits::max_cq + 1);
    timers_.clear();
}

unsigned int CqTable::expire_due(uint64_t now, unsigned int max) {
    // Each expiry takes its CQ out of the heap.
    unsigned int n = 0;
    for (size_t left = timers_.size(); left > 0; --left) {
        Cq *cq = timers_.top();
        if (cq == nullptr || now < cq->deadline_ns) {
            break;
        }
        if (n == max) {
            break;
        }
        ++n;
        cq_timer_expired(*cq);
    }
    return n;
}

CmdResult CqTable::cmd_create_eq(const Command &cmd) {
    const auto in = cmd.input<ohca_create_eq_in>();
    const uint64_t base = le(in.base);
    if (base == 0 || base % sizeof(ohca_eqe) != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_eq_in, base)};
    }
    if (in.log_size < OHCA_EQ_LOG_MIN || in.log_size > OHCA_EQ_LOG_MAX) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_eq_in, log_size)};
    }
    if (in.msix_vector < 2 || in.msix_vector >= OHCA_NUM_MSIX) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_eq_in, msix_vector)};
    }
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_create_eq_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    const auto eqn = free_slot(eqs_);
    if (!eqn) {
        return {OHCA_STATUS_NO_RESOURCES, 0};
    }
    if (CmdResult r = write_create_out(host_, cmd, *eqn, 0); r.status != OHCA_STATUS_OK) {
        return r;
    }
    eqs_[*eqn] = std::make_unique<CompletionEq>(in.msix_vector);
    eqs_[*eqn]->eq.configure(base, in.log_size);
    return {};
}

CmdResult CqTable::cmd_destroy_eq(const Command &cmd) {
    const auto in = cmd.input<ohca_handle_in>();
    const uint32_t eqn = le(in.handle);
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_handle_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    CompletionEq *eq = find_eq(eqn);
    if (eq == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, eqn};
    }
    if (eq->cq_refs != 0) {
        return {OHCA_STATUS_BAD_STATE, eqn};
    }
    eqs_[eqn].reset();
    return {};
}

bool CqTable::eq_doorbell(uint32_t eqn, uint32_t value) {
    CompletionEq *eq = find_eq(eqn);
    return eq != nullptr && eq->eq.doorbell(host_, value);
}

CmdResult CqTable::cmd_create_cq(const Command &cmd) {
    // The input of ABI 1.6 or the one grown by db_record (beyond in_len
    // the input reads as zero).
    if (cmd.in_len != OHCA_CREATE_CQ_IN_V1_SIZE && cmd.in_len != sizeof(ohca_create_cq_in)) {
        return {OHCA_STATUS_BAD_LEN, OHCA_CREATE_CQ_IN_V1_SIZE};
    }
    const auto in = cmd.input<ohca_create_cq_in>();
    const uint32_t eqn = le(in.eqn);
    const uint32_t uar = le(in.uar_index);
    const uint64_t record = le(in.db_record);
    if (eqn != 0 && find_eq(eqn) == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, eqn};
    }
    if (uar >= OHCA_NUM_DB_PAGES || (uar != 0 && !uars_.allocated(uar))) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_cq_in, uar_index)};
    }
    if (in.log_size < 1 || in.log_size > OHCA_CQ_LOG_MAX) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_cq_in, log_size)};
    }
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_create_cq_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    if (!db_record_addr_ok(record)) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_cq_in, db_record)};
    }
    Cq cq;
    cq.eqn = eqn;
    cq.db_record = record;
    cq.uar = uar;
    cq.log_size = in.log_size;
    const auto r =
        cq.ring.load(host_, in.pbl, (uint64_t{1} << in.log_size) * sizeof(ohca_cqe), pbl_.room());
    if (r.error != PageList::Error::None) {
        return pbl_error(r, offsetof(ohca_create_cq_in, pbl));
    }
    const auto cqn = free_slot(cqs_);
    if (!cqn) {
        return {OHCA_STATUS_NO_RESOURCES, 0};
    }
    if (CmdResult res = write_create_out(host_, cmd, *cqn, 0); res.status != OHCA_STATUS_OK) {
        return res;
    }
    pbl_.charge(cq.ring.npages());
    cq.cqn = *cqn;
    cqs_[*cqn] = std::make_unique<Cq>(std::move(cq));
    if (eqn != 0) {
        ++eqs_[eqn]->cq_refs;
    }
    ++uar_refs_[uar];
    return {};
}

CmdResult CqTable::cmd_destroy_cq(const Command &cmd) {
    const auto in = cmd.input<ohca_handle_in>();
    const uint32_t cqn = le(in.handle);
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_handle_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    Cq *cq = find(cqn);
    if (cq == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, cqn};
    }
    if (cq->qp_refs != 0) {
        return {OHCA_STATUS_BAD_STATE, cqn};
    }
    if (CompletionEq *eq = find_eq(cq->eqn)) {
        --eq->cq_refs;
    }
    --uar_refs_[cq->uar];
    pbl_.release(cq->ring.npages());
    if (cq->deadline_ns != 0) { // a held event goes with its CQ
        timers_.set(*cq, 0);
        sched_.update_timer();
    }
    cqs_[cqn].reset();
    return {};
}

void CqTable::post_cq_event(uint32_t eqn, uint32_t cqn) {
    if (eqn == 0) {
        events_.post_event(OHCA_EQE_CQ_COMPLETION, 0, cqn, 0, 0);
        return;
    }
    if (eqn >= eqs_.size() || !eqs_[eqn] || eqs_[eqn]->stopped) {
        return;
    }
    ohca_eqe eqe{};
    eqe.type = OHCA_EQE_CQ_COMPLETION;
    eqe.param0 = le(cqn);
    if (eqs_[eqn]->eq.post(host_, eqe) != EventQueue::PostResult::Ok) {
        // A completion EQ that overruns its consumer (or cannot be
        // written) stops; the device and EQ 0 keep running.
        eqs_[eqn]->stopped = true;
    }
}

bool CqTable::post_cqe(uint32_t cqn, ohca_cqe cqe, bool solicited) {
    write_held(); // in order behind the ones held
    return post_one(cqn, cqe, solicited);
}

bool CqTable::post_one(uint32_t cqn, ohca_cqe cqe, bool solicited) {
    if (cqn >= cqs_.size() || !cqs_[cqn]) {
        return false;
    }
    Cq &cq = *cqs_[cqn];
    if (cq.error) {
        return false;
    }
    const uint32_t size = 1u << cq.log_size;
    // Full by the device's copy of the consumer index: its record may
    // know better.
    if (cq.pi - cq.ci >= size && !(records_.refresh_cq_ci(cq) && cq.pi - cq.ci < size)) {
        cq.error = true;
        events_.post_event(OHCA_EQE_CQ_ERROR, OHCA_CQ_ERR_OVERRUN, cqn, 0, 0);
        return false;
    }
    cqe.owner = ((cq.pi >> cq.log_size) & 1u) == 0 ? OHCA_CQE_OWNER : 0;
    const uint64_t slot = uint64_t{cq.pi & (size - 1)} * sizeof(ohca_cqe);
    uint8_t raw[sizeof(ohca_cqe)];
    std::memcpy(raw, &cqe, sizeof(raw));
    // Body before the owner byte: one DMA where the host can order them.
    constexpr size_t body = offsetof(ohca_cqe, owner);
    if (!cq.ring.write_ordered(host_, slot, raw, sizeof(raw), body, sizeof(raw) - body)) {
        cq.error = true;
        events_.post_event(OHCA_EQE_CQ_ERROR, OHCA_CQ_ERR_ACCESS, cqn, 0, 0);
        return false;
    }
    ++cq.pi;
    host_.trace(OHCA_ENGINE_TRACE_CQE, cqn, le(cqe.qpn),
                static_cast<uint32_t>(cqe.opcode) << 8 | cqe.status, le(cqe.wr_id));
    const bool error = cqe.status != OHCA_CQE_SUCCESS;
    if (cq.arm_next || (cq.arm_solicited && (solicited || error))) {
        cq_eligible(cq, 1);
    }
    return true;
}

void CqTable::post_cqe_held(uint32_t cqn, const ohca_cqe &cqe, bool solicited) {
    if (!hold_) {
        (void)post_cqe(cqn, cqe, solicited);
        return;
    }
    if (held_n_ == kMaxHeld || (held_n_ != 0 && cqn != held_cqn_)) {
        write_held_cqes();
    }
    held_cqn_ = cqn;
    held_solicited_ |= uint64_t{solicited} << held_n_;
    held_[held_n_++] = cqe;
}

void CqTable::write_held_cqes() {
    const uint32_t n = held_n_;
    const uint64_t solicited = held_solicited_;
    held_n_ = 0;
    held_solicited_ = 0;
    if (n == 1) {
        (void)post_one(held_cqn_, held_[0], solicited != 0);
        return;
    }
    post_cqes(held_cqn_, std::span<const ohca_cqe>(held_.data(), n), solicited);
}

void CqTable::post_cqes(uint32_t cqn, std::span<const ohca_cqe> cqes, uint64_t solicited) {
    Cq *cq = find(cqn);
    const size_t n = cqes.size();
    const uint32_t size = cq != nullptr ? 1u << cq->log_size : 0;
    const uint32_t used = cq != nullptr ? cq->pi - cq->ci : 0;
    auto one_by_one = [&] {
        for (size_t i = 0; i < n; ++i) {
            (void)post_one(cqn, cqes[i], ((solicited >> i) & 1u) != 0);
        }
    };
    if (cq == nullptr || cq->error || n < 2 || n > kMaxHeld || used > size || n > size - used ||
        (cq->pi & (size - 1)) + n > size) {
        // One by one: a batch cut by the ring's end, an overrun or an
        // error, all as before.
        one_by_one();
        return;
    }
    std::array<ohca_cqe, kMaxHeld> raw;
    for (size_t i = 0; i < n; ++i) {
        raw[i] = cqes[i];
        raw[i].owner = (((cq->pi + i) >> cq->log_size) & 1u) == 0 ? OHCA_CQE_OWNER : 0;
    }
    const uint64_t slot = uint64_t{cq->pi & (size - 1)} * sizeof(ohca_cqe);
    if (!cq->ring.write_ordered(host_, slot, raw.data(), n * sizeof(ohca_cqe),
                                offsetof(ohca_cqe, owner), 1)) {
        one_by_one(); // which CQE cannot be written, and its error, as before
        return;
    }
    for (size_t i = 0; i < n; ++i) {
        const ohca_cqe &c = cqes[i];
        ++cq->pi;
        host_.trace(OHCA_ENGINE_TRACE_CQE, cqn, le(c.qpn),
                    static_cast<uint32_t>(c.opcode) << 8 | c.status, le(c.wr_id));
        const bool error = c.status != OHCA_CQE_SUCCESS;
        if (cq->arm_next || (cq->arm_solicited && (((solicited >> i) & 1u) != 0 || error))) {
            cq_eligible(*cq, 1);
        }
    }
}

// ---- completion event moderation (programming manual section 20) ------------

// An armed CQ got 'n' more CQEs that its arming asks an event for. Without
// moderation the event is raised now; with it the CQEs are counted and the
// event waits for mod_count of them or for mod_period_us after the first,
// whichever comes first. MODIFY_CQ refuses a count above 1 without a
// period, so a held event always has a timer and is never lost.
void CqTable::cq_eligible(Cq &cq, uint32_t n) {
    cq.mod_pending = n > UINT32_MAX - cq.mod_pending ? UINT32_MAX : cq.mod_pending + n;
    const bool off = cq.mod_count <= 1 && cq.mod_period_us == 0;
    if (off || (cq.mod_count != 0 && cq.mod_pending >= cq.mod_count)) {
        raise_cq_event(cq);
    } else if (cq.deadline_ns == 0 && cq.mod_period_us != 0) {
        timers_.set(cq, host_.now_ns() + uint64_t{cq.mod_period_us} * 1000);
        sched_.update_timer();
    }
}

void CqTable::raise_cq_event(Cq &cq) {
    cq.arm_next = false;
    cq.arm_solicited = false;
    cq.mod_pending = 0;
    if (cq.deadline_ns != 0) {
        timers_.set(cq, 0);
        sched_.update_timer();
    }
    post_cq_event(cq.eqn, cq.cqn);
}

// The period of a held event ended (check_timers()).
void CqTable::cq_timer_expired(Cq &cq) {
    if (cq.mod_pending != 0 && (cq.arm_next || cq.arm_solicited)) {
        raise_cq_event(cq);
        return;
    }
    // Nothing held (a held event keeps its arming until it is raised, so
    // this is only defensive): the timer just goes.
    cq.mod_pending = 0;
    timers_.set(cq, 0);
}

CmdResult CqTable::cmd_modify_cq(const Command &cmd) {
    using In = ohca_modify_cq_in;
    const auto in = cmd.input<In>();
    const uint32_t cqn = le(in.cqn);
    const uint32_t mask = le(in.mask);
    const uint16_t count = le(in.cq_count);
    const uint16_t period = le(in.cq_period);
    if (auto off = nonzero_at(cmd.in, offsetof(In, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    Cq *cq = cqn < cqs_.size() ? cqs_[cqn].get() : nullptr;
    if (cq == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, cqn};
    }
    if (mask == 0 || (mask & ~uint32_t{OHCA_MODIFY_CQ_MODERATION}) != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, mask)};
    }
    if (count > DeviceLimits::max_cq_mod_count) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, cq_count)};
    }
    // A count with no period could hold an event for ever.
    if (period > DeviceLimits::max_cq_mod_period_us || (count > 1 && period == 0)) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, cq_period)};
    }
    cq->mod_count = count;
    cq->mod_period_us = period;
    if (cq->mod_pending != 0) {
        // The held event under the new rules: released now, or its
        // period restarts from here.
        if (cq->deadline_ns != 0) {
            timers_.set(*cq, 0);
        }
        cq_eligible(*cq, 0);
        sched_.update_timer();
    }
    return {};
}

bool CqTable::cq_doorbell(uint32_t page, uint32_t cqn, uint32_t value) {
    constexpr uint32_t kArm = OHCA_DB_CQ_ARM_NEXT | OHCA_DB_CQ_ARM_SOLICITED;
    if (cqn >= cqs_.size() || !cqs_[cqn] || cqs_[cqn]->uar != page ||
        (value & ~(OHCA_DB_CQ_CI_MASK | kArm)) != 0) {
        return false;
    }
    Cq &cq = *cqs_[cqn];
    if (!cq.take_ci(value & OHCA_DB_CQ_CI_MASK)) {
        return false;
    }
    if ((value & OHCA_DB_CQ_ARM_NEXT) != 0) {
        cq.arm_next = true;
        // Completions the consumer has not seen count as arrived since
        // the arming (at once without moderation); those a held event
        // already counted are not counted twice.
        const uint32_t unseen = cq.pi - cq.ci;
        if (unseen > cq.mod_pending) {
            cq_eligible(cq, unseen - cq.mod_pending);
        }
    } else if ((value & OHCA_DB_CQ_ARM_SOLICITED) != 0) {
        cq.arm_solicited = true;
    }
    return true;
}

} // namespace ohca
