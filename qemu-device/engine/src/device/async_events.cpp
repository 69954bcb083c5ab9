// SPDX-License-Identifier: GPL-2.0-or-later
// EQ 0 and the events that wait for room in it (async_events.hpp).
#include "device/async_events.hpp"

#include "link/byte_order.hpp"
#include "objects/cq.hpp"
#include "objects/qp_table.hpp"
#include "objects/srq.hpp"

#include <array>

namespace ohca {

void AsyncEvents::reset() {
    eq0_.reset();
    held_.clear();
    held_port_state_ = 0;
    held_port_change_ = 0;
    held_cmd_valid_ = false;
}

void AsyncEvents::post_fatal(uint32_t code) {
    ohca_eqe eqe{};
    eqe.type = OHCA_EQE_DEVICE_FATAL;
    eqe.code = le(static_cast<uint16_t>(code));
    (void)eq0_.post(d_.host, eqe);
}

bool AsyncEvents::doorbell(uint32_t value) {
    if (!eq0_.doorbell(d_.host, value)) {
        return false;
    }
    drain();
    return true;
}

void AsyncEvents::post_event(uint8_t type, uint16_t code, uint32_t p0, uint32_t p1, uint32_t p2) {
    if (!d_.status.running()) {
        return;
    }
    ohca_eqe eqe{};
    eqe.type = type;
    eqe.code = le(code);
    eqe.param0 = le(p0);
    eqe.param1 = le(p1);
    eqe.param2 = le(p2);
    // Behind waiting events, or into a full EQ 0: wait (in order); traced
    // when posted (drain_held_events).
    if (!held_.empty()) {
        hold(eqe);
        return;
    }
    switch (eq0_.post(d_.host, eqe)) {
    case EventQueue::PostResult::Ok:
    case EventQueue::PostResult::NotConfigured:
        d_.host.trace(OHCA_ENGINE_TRACE_EQE, type, code, p0, p1);
        break;
    case EventQueue::PostResult::Overflow:
        hold(eqe);
        break;
    case EventQueue::PostResult::DmaError:
        d_.fatal.enter_fatal(OHCA_FATAL_EQ_DMA);
        break;
    }
}

namespace {

// Sets bit @bit of an object's waiting events; false if it was set (the
// event merges into the waiting one).
bool hold_bit(uint8_t &mask, unsigned int bit) {
    const auto b = static_cast<uint8_t>(1u << bit);
    if ((mask & b) != 0) {
        return false;
    }
    mask |= b;
    return true;
}

// The order a QP's waiting events are posted in, the order they happen
// in: established, drained, the errors, then the last WQE (after the
// error that flushes the QP).
constexpr std::array<uint8_t, 6> kQpEventOrder = {
    OHCA_QP_EV_COMM_EST, OHCA_QP_EV_SQ_DRAINED, OHCA_QP_EV_FATAL,
    OHCA_QP_EV_REQ_ERR,  OHCA_QP_EV_ACCESS_ERR, OHCA_QP_EV_LAST_WQE_REACHED,
};
// A CQ's: its completion event (bit 0), then its error (bit = code).
constexpr std::array<uint8_t, 3> kCqEventOrder = {0, OHCA_CQ_ERR_OVERRUN, OHCA_CQ_ERR_ACCESS};
constexpr std::array<uint8_t, 2> kSrqEventOrder = {OHCA_SRQ_EV_LIMIT_REACHED, OHCA_SRQ_EV_ERR};

// Takes the first waiting event of @mask in @order; false when none.
template <size_t N>
bool take_bit(uint8_t &mask, const std::array<uint8_t, N> &order, uint8_t &bit) {
    for (const uint8_t b : order) {
        if ((mask & (1u << b)) != 0) {
            mask = static_cast<uint8_t>(mask & ~(1u << b));
            bit = b;
            return true;
        }
    }
    mask = 0;
    return false;
}

} // namespace

// EQ 0 is full: keep @eqe in its object (bounded: one bit per kind of
// event and object) and the object in held_ once.
void AsyncEvents::hold(const ohca_eqe &eqe) {
    const uint32_t id = le(eqe.param0);
    const uint16_t code = le(eqe.code);
    bool queued = true; // the event waits (not merged or dropped)
    HeldRef ref{HeldKind::Qp, id};
    uint8_t *mask = nullptr;
    unsigned int bit = 0;
    switch (eqe.type) {
    case OHCA_EQE_QP_EVENT:
        if (Qp *qp = d_.qps.find(id); qp != nullptr && code >= 1 && code < 8) {
            mask = &qp->held_events;
            bit = code;
        }
        break;
    case OHCA_EQE_CQ_COMPLETION:
    case OHCA_EQE_CQ_ERROR:
        if (Cq *cq = d_.cqs.find(id); cq != nullptr && code < 8) {
            ref.kind = HeldKind::Cq;
            mask = &cq->held_events;
            bit = eqe.type == OHCA_EQE_CQ_COMPLETION ? 0 : code;
        }
        break;
    case OHCA_EQE_SRQ_EVENT:
        if (Srq *srq = d_.srqs.find(id); srq != nullptr && code < 8) {
            ref.kind = HeldKind::Srq;
            mask = &srq->held_events;
            bit = code;
        }
        break;
    case OHCA_EQE_PORT_CHANGE:
        // Only the latest state waits: the driver reads the port anyway.
        if (held_port_state_ != 0) {
            ++d_.stats.eq0_events_merged;
            held_port_state_ = code;
            held_port_change_ |= le(eqe.param1);
            return;
        }
        held_port_state_ = code;
        held_port_change_ = le(eqe.param1);
        held_.push_back({HeldKind::Port, 0});
        ++d_.stats.eq0_events_held;
        return;
    case OHCA_EQE_CMD_DONE:
        // At most one: commands wait while anything waits.
        if (!held_cmd_valid_) {
            held_cmd_ = eqe;
            held_cmd_valid_ = true;
            held_.push_back({HeldKind::Cmd, 0});
            ++d_.stats.eq0_events_held;
            return;
        }
        break;
    default: // a page fault: its access faults again
        break;
    }
    if (mask == nullptr) {
        ++d_.stats.eq0_events_dropped;
        return;
    }
    const bool first = *mask == 0;
    queued = hold_bit(*mask, bit);
    if (!queued) {
        ++d_.stats.eq0_events_merged;
        return;
    }
    ++d_.stats.eq0_events_held;
    if (first) {
        held_.push_back(ref);
    }
}

// The next waiting event of the object at the head of held_; pops the
// object when it has no more. False: nothing left for it (gone).
bool AsyncEvents::take_held(ohca_eqe &eqe) {
    const HeldRef ref = held_.front();
    eqe = ohca_eqe{};
    eqe.param0 = le(ref.id);
    bool have = false;
    uint8_t bit = 0;
    uint8_t *mask = nullptr;
    switch (ref.kind) {
    case HeldKind::Qp:
        if (Qp *qp = d_.qps.find(ref.id)) {
            mask = &qp->held_events;
            have = take_bit(*mask, kQpEventOrder, bit);
            eqe.type = OHCA_EQE_QP_EVENT;
            eqe.code = le(uint16_t{bit});
        }
        break;
    case HeldKind::Cq:
        if (Cq *cq = d_.cqs.find(ref.id)) {
            mask = &cq->held_events;
            have = take_bit(*mask, kCqEventOrder, bit);
            eqe.type = bit == 0 ? OHCA_EQE_CQ_COMPLETION : OHCA_EQE_CQ_ERROR;
            eqe.code = le(uint16_t{bit});
        }
        break;
    case HeldKind::Srq:
        if (Srq *srq = d_.srqs.find(ref.id)) {
            mask = &srq->held_events;
            have = take_bit(*mask, kSrqEventOrder, bit);
            eqe.type = OHCA_EQE_SRQ_EVENT;
            eqe.code = le(uint16_t{bit});
        }
        break;
    case HeldKind::Port:
        have = held_port_state_ != 0;
        eqe.type = OHCA_EQE_PORT_CHANGE;
        eqe.code = le(held_port_state_);
        eqe.param0 = le(uint32_t{1});
        eqe.param1 = le(held_port_change_);
        held_port_state_ = 0;
        held_port_change_ = 0;
        break;
    case HeldKind::Cmd:
        have = held_cmd_valid_;
        eqe = held_cmd_;
        held_cmd_valid_ = false;
        break;
    }
    if (mask == nullptr || *mask == 0) {
        held_.pop_front();
    }
    return have;
}

// EQ 0 has room again (its doorbell): post what waits, in order.
void AsyncEvents::drain() {
    while (d_.status.running() && !held_.empty() && eq0_.has_room()) {
        ohca_eqe eqe{};
        if (!take_held(eqe)) {
            continue;
        }
        d_.host.trace(OHCA_ENGINE_TRACE_EQE, eqe.type, le(eqe.code), le(eqe.param0),
                      le(eqe.param1));
        if (eq0_.post(d_.host, eqe) == EventQueue::PostResult::DmaError) {
            d_.fatal.enter_fatal(OHCA_FATAL_EQ_DMA);
            return;
        }
    }
}

// A QP event a wire peer can cause (COMM_EST, a responder error). Each
// comes at most once per QP between resets of the QP, but across many QPs
// they could fill EQ 0 and make the device fatal: they take at most half of
// it and are dropped (counted) beyond, leaving the rest to the driver's own
// command completions.
void AsyncEvents::post_peer_event(uint16_t code, uint32_t qpn) {
    if (eq0_.configured() && eq0_.producer() - eq0_.consumer() >= eq0_.size() / 2) {
        ++d_.stats.peer_events_dropped;
        return;
    }
    post_event(OHCA_EQE_QP_EVENT, code, qpn, 0, 0);
}

// A page fault is posted on EQ 0 only while it is less than half full, as
// a peer's QP events (post_peer_event): a peer's requests cause faults too.
bool AsyncEvents::fault_room() const {
    return d_.status.running() && eq0_.configured() &&
           eq0_.producer() - eq0_.consumer() < eq0_.size() / 2;
}

} // namespace ohca
