// SPDX-License-Identifier: GPL-2.0-or-later
#include "device/device.hpp"

#include "link/byte_order.hpp"

namespace ohca {

Device::Device(const ohca_engine_ops &ops, void *ctx, const DeviceConfig &cfg)
    : host_(ops, ctx), cfg_(cfg) {
    srqs_.set_borrowers(qps_);
    seed_ids(cfg.id_seed);
    power_on_state();
}

void Device::power_on_state() {
    // Everything but the board (MAC, GUIDs) and the wire (link) state.
    dev_status_ = OHCA_DEV_STATUS_RESET_DONE;
    reset_pending_ = false;
    fatal_code_ = OHCA_FATAL_NONE;
    cmdq_base_lo_ = 0;
    cmdq_base_hi_ = 0;
    cmdq_log_size_ = 0;
    eq0_base_lo_ = 0;
    eq0_base_hi_ = 0;
    eq0_log_size_ = 0;
    eth_irq_mask_ = 0;
    eth_irq_pending_ = false;
    cmdq_base_ = 0;
    cmdq_size_ = 0;
    cmdq_pi_ = 0;
    cmdq_ci_ = 0;
    eq0_.reset();
    held_.clear();
    held_port_state_ = 0;
    held_port_change_ = 0;
    held_cmd_valid_ = false;
    tx_ring_.reset();
    rx_ring_.reset();
    uars_.reset();
    gids_.reset();
    stats_ = Stats{};
    mtu_ = DeviceLimits::default_mtu;
    rx_mode_ = 0;
    if (ib_) {
        ib_->reset(cfg_.link_up); // no LID until the SM gives it again
    }
    rdma_power_on();
    roce_ = RoceCounters{};
}

void Device::reset() {
    Entry entry(*this);
    if (!entry.ok()) {
        // From inside a host callback (a DMA reaching the configuration
        // space, say): the device stops now and resets when the outer
        // entry ends, rather than the reset being lost.
        reset_pending_ = true;
        dev_status_ &= ~OHCA_DEV_STATUS_READY;
        return;
    }
    power_on_state();
    // Frames held for the RX ring are now dropped; let the host redeliver.
    if (rx_waiting_) {
        host_.schedule();
    }
}

bool Device::running() const {
    return (dev_status_ & OHCA_DEV_STATUS_READY) != 0;
}

void Device::enter_fatal(uint32_t code) {
    if ((dev_status_ & OHCA_DEV_STATUS_FATAL) != 0) {
        return;
    }
    dev_status_ &= ~OHCA_DEV_STATUS_READY;
    dev_status_ |= OHCA_DEV_STATUS_FATAL;
    fatal_code_ = code;
    // Tell the driver if EQ 0 can still take it.
    if (code != OHCA_FATAL_EQ_DMA) {
        ohca_eqe eqe{};
        eqe.type = OHCA_EQE_DEVICE_FATAL;
        eqe.code = le(static_cast<uint16_t>(code));
        (void)eq0_.post(host_, eqe);
    }
    if (rx_waiting_) {
        host_.schedule();
    }
}

void Device::post_event(uint8_t type, uint16_t code, uint32_t p0, uint32_t p1, uint32_t p2) {
    if (!running()) {
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
        hold_event(eqe);
        return;
    }
    switch (eq0_.post(host_, eqe)) {
    case EventQueue::PostResult::Ok:
    case EventQueue::PostResult::NotConfigured:
        host_.trace(OHCA_ENGINE_TRACE_EQE, type, code, p0, p1);
        break;
    case EventQueue::PostResult::Overflow:
        hold_event(eqe);
        break;
    case EventQueue::PostResult::DmaError:
        enter_fatal(OHCA_FATAL_EQ_DMA);
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
void Device::hold_event(const ohca_eqe &eqe) {
    const uint32_t id = le(eqe.param0);
    const uint16_t code = le(eqe.code);
    bool queued = true; // the event waits (not merged or dropped)
    HeldRef ref{HeldKind::Qp, id};
    uint8_t *mask = nullptr;
    unsigned int bit = 0;
    switch (eqe.type) {
    case OHCA_EQE_QP_EVENT:
        if (Qp *qp = qps_.find(id); qp != nullptr && code >= 1 && code < 8) {
            mask = &qp->held_events;
            bit = code;
        }
        break;
    case OHCA_EQE_CQ_COMPLETION:
    case OHCA_EQE_CQ_ERROR:
        if (Cq *cq = cqs_.find(id); cq != nullptr && code < 8) {
            ref.kind = HeldKind::Cq;
            mask = &cq->held_events;
            bit = eqe.type == OHCA_EQE_CQ_COMPLETION ? 0 : code;
        }
        break;
    case OHCA_EQE_SRQ_EVENT:
        if (Srq *srq = srqs_.find(id); srq != nullptr && code < 8) {
            ref.kind = HeldKind::Srq;
            mask = &srq->held_events;
            bit = code;
        }
        break;
    case OHCA_EQE_PORT_CHANGE:
        // Only the latest state waits: the driver reads the port anyway.
        if (held_port_state_ != 0) {
            ++stats_.eq0_events_merged;
            held_port_state_ = code;
            held_port_change_ |= le(eqe.param1);
            return;
        }
        held_port_state_ = code;
        held_port_change_ = le(eqe.param1);
        held_.push_back({HeldKind::Port, 0});
        ++stats_.eq0_events_held;
        return;
    case OHCA_EQE_CMD_DONE:
        // At most one: commands wait while anything waits.
        if (!held_cmd_valid_) {
            held_cmd_ = eqe;
            held_cmd_valid_ = true;
            held_.push_back({HeldKind::Cmd, 0});
            ++stats_.eq0_events_held;
            return;
        }
        break;
    default: // a page fault: its access faults again
        break;
    }
    if (mask == nullptr) {
        ++stats_.eq0_events_dropped;
        return;
    }
    const bool first = *mask == 0;
    queued = hold_bit(*mask, bit);
    if (!queued) {
        ++stats_.eq0_events_merged;
        return;
    }
    ++stats_.eq0_events_held;
    if (first) {
        held_.push_back(ref);
    }
}

// The next waiting event of the object at the head of held_; pops the
// object when it has no more. False: nothing left for it (gone).
bool Device::take_held(ohca_eqe &eqe) {
    const HeldRef ref = held_.front();
    eqe = ohca_eqe{};
    eqe.param0 = le(ref.id);
    bool have = false;
    uint8_t bit = 0;
    uint8_t *mask = nullptr;
    switch (ref.kind) {
    case HeldKind::Qp:
        if (Qp *qp = qps_.find(ref.id)) {
            mask = &qp->held_events;
            have = take_bit(*mask, kQpEventOrder, bit);
            eqe.type = OHCA_EQE_QP_EVENT;
            eqe.code = le(uint16_t{bit});
        }
        break;
    case HeldKind::Cq:
        if (Cq *cq = cqs_.find(ref.id)) {
            mask = &cq->held_events;
            have = take_bit(*mask, kCqEventOrder, bit);
            eqe.type = bit == 0 ? OHCA_EQE_CQ_COMPLETION : OHCA_EQE_CQ_ERROR;
            eqe.code = le(uint16_t{bit});
        }
        break;
    case HeldKind::Srq:
        if (Srq *srq = srqs_.find(ref.id)) {
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

// EQ 0 has room again (its doorbell): post what waits, in order, then let
// commands run.
void Device::drain_held_events() {
    while (running() && !held_.empty() && eq0_.has_room()) {
        ohca_eqe eqe{};
        if (!take_held(eqe)) {
            continue;
        }
        host_.trace(OHCA_ENGINE_TRACE_EQE, eqe.type, le(eqe.code), le(eqe.param0), le(eqe.param1));
        if (eq0_.post(host_, eqe) == EventQueue::PostResult::DmaError) {
            enter_fatal(OHCA_FATAL_EQ_DMA);
            return;
        }
    }
    if (running() && cmdq_ci_ != cmdq_pi_ && eq0_takes_command()) {
        host_.schedule();
    }
}

// A QP event a wire peer can cause (COMM_EST, a responder error). Each
// comes at most once per QP between resets of the QP, but across many QPs
// they could fill EQ 0 and make the device fatal: they take at most half of
// it and are dropped (counted) beyond, leaving the rest to the driver's own
// command completions.
void Device::post_peer_event(uint16_t code, uint32_t qpn) {
    if (eq0_.configured() && eq0_.producer() - eq0_.consumer() >= eq0_.size() / 2) {
        ++stats_.peer_events_dropped;
        return;
    }
    post_event(OHCA_EQE_QP_EVENT, code, qpn, 0, 0);
}

// KeyLinks: a QP that waited for a page fault goes on.
void Device::odp_resume(Qp &qp) {
    rc_requester_.odp_resumed(qp);
    mark_ready(qp);
}

// A page fault is posted on EQ 0 only while it is less than half full, as
// a peer's QP events (post_peer_event): a peer's requests cause faults too.
bool Device::fault_event_room() const {
    return running() && eq0_.configured() && eq0_.producer() - eq0_.consumer() < eq0_.size() / 2;
}

void Device::set_link(bool up) {
    Entry entry(*this);
    if (!entry.ok() || up == cfg_.link_up) {
        return;
    }
    cfg_.link_up = up;
    if (ib_) {
        ib_port_changed(ib_->set_link(up));
        if (up) {
            ib_link_init();
        }
    } else {
        post_event(OHCA_EQE_PORT_CHANGE, up ? OHCA_PORT_ACTIVE : OHCA_PORT_DOWN, 1, 0, 0);
    }
    if (!up && rx_waiting_) {
        host_.schedule(); // held frames are dropped now
    }
}

void Device::db_write(uint32_t page, uint32_t offset, uint64_t value, unsigned int size) {
    Entry entry(*this);
    if (!entry.ok()) {
        ++stats_.db_errors;
        return;
    }
    (void)ring(page, offset, value, size);
}

// A doorbell that runs the work it made at once, bounded: the rung QP
// takes the first turn of an ordinary run of the transport (run_rdma),
// which leaves the ready list, the backlog and the timers as they would
// be after any run and asks for the bottom half only for what is left.
void Device::doorbell_fast(uint32_t page, uint32_t offset, uint64_t value, unsigned int size,
                           unsigned int budget) {
    Entry entry(*this);
    if (!entry.ok()) {
        ++stats_.db_errors;
        return;
    }
    // mark_ready() and loop_back() ask for no run while in_run_ is set:
    // the run below, or the check after it, does.
    in_run_ = true;
    Qp *rung = ring(page, offset, value, size);
    in_run_ = false;
    if (rung != nullptr && rung->sched.ready && budget > 0 && running()) {
        ++sched_stats_.doorbell_runs;
        run_rdma(rung, budget, DeviceLimits::doorbell_run_ns);
    } else if (running() && (!roce_backlog_.empty() || !ready_.empty())) {
        host_.schedule();
    }
}

// The doorbell itself: the QP it gave work to (SQ, or RQ in ERR), or null.
Qp *Device::ring(uint32_t page, uint32_t offset, uint64_t value, unsigned int size) {
    if (page >= OHCA_NUM_DB_PAGES || offset >= OHCA_DB_PAGE_SIZE) {
        ++stats_.db_errors;
        return nullptr;
    }
    // Page 0 is the kernel's; pages 1.. belong to allocated UARs. Each
    // doorbell is one aligned 64-bit store: queue number low, value high.
    if ((page != 0 && !uars_.allocated(page)) || size != 8 || !running()) {
        ++stats_.db_errors;
        return nullptr;
    }
    const auto qn = static_cast<uint32_t>(value);
    const auto v = static_cast<uint32_t>(value >> 32);
    switch (offset) {
    case OHCA_DB_SQ:
        return sq_doorbell(page, qn, v);
    case OHCA_DB_RQ:
        return rq_doorbell(page, qn, v);
    case OHCA_DB_CQ:
        if (!cqs_.cq_doorbell(page, qn, v)) {
            ++stats_.db_errors;
        }
        return nullptr;
    case OHCA_DB_SRQ:
        if (!srqs_.doorbell(page, qn, v)) {
            ++stats_.db_errors;
        }
        return nullptr;
    default:
        ++stats_.db_errors;
        return nullptr;
    }
}

void Device::process() {
    {
        Entry entry(*this);
        if (!entry.ok()) {
            host_.schedule(); // called from a callback: come back later
            return;
        }
        if (running()) {
            process_cmdq();
        }
        if (running()) {
            process_eth_tx();
        }
        if (running()) {
            process_rdma();
        }
    }
    // Resume a held frame (RoCE backlog full, or offered re-entrantly) once
    // the backlog has room.
    if (rx_waiting_ && roce_backlog_.size() < DeviceLimits::max_roce_backlog) {
        rx_waiting_ = false;
        host_.rx_resume();
    }
}

} // namespace ohca
