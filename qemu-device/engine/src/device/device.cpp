// SPDX-License-Identifier: GPL-2.0-or-later
// Lifetime, reset, the fatal state, the doorbell pages and the entry points
// that run the device's work (device.hpp).
#include "device/device.hpp"

#include "link/byte_order.hpp"

namespace ohca {

Device::Device(const ohca_engine_ops &ops, void *ctx, const DeviceConfig &cfg)
    : host_(ops, ctx), cfg_(cfg) {
    srqs_.set_borrowers(qps_);
    qps_.set_rss_owner(wqs_);
    // MR key tags and the QPN cursor start from the host's seed and are
    // kept across resets: after one, a peer's stale rkeys and QPNs name
    // nothing (or, once the numbers come round again, an object it must
    // still match GID and PSN of).
    keys_.seed_tags(cfg.id_seed);
    qps_.seed(cfg.id_seed);
    power_on_state();
}

void Device::power_on_state() {
    // Everything but the board (MAC, GUIDs) and the wire (link) state.
    status_ = DevStatus{};
    reset_pending_ = false;
    cmdq_base_lo_ = 0;
    cmdq_base_hi_ = 0;
    cmdq_log_size_ = 0;
    eq0_base_lo_ = 0;
    eq0_base_hi_ = 0;
    eq0_log_size_ = 0;
    cmdq_base_ = 0;
    cmdq_size_ = 0;
    cmdq_pi_ = 0;
    cmdq_ci_ = 0;
    events_.reset();
    eth_.reset();
    uars_.reset();
    stats_ = Stats{};
    // The RDMA objects.
    pds_.reset();
    cqs_.reset();
    loop_.reset();
    qps_.reset();
    rc_responder_.forget_wqes();
    srqs_.reset();
    wqs_.reset();
    mcast_.clear();
    raw_.reset();
    xrc_.reset();
    uar_refs_.fill(0);
    pbl_.reset();
    keys_.reset();
    port_.reset();
}

void Device::reset() {
    Entry entry(*this);
    if (!entry.ok()) {
        // From inside a host callback (a DMA reaching the configuration
        // space, say): the device stops now and resets when the outer
        // entry ends, rather than the reset being lost.
        reset_pending_ = true;
        status_.bits &= ~OHCA_DEV_STATUS_READY;
        return;
    }
    power_on_state();
    // Frames held for the RX ring are now dropped; let the host redeliver.
    if (port_.rx_waiting()) {
        host_.schedule();
    }
}

void Device::enter_fatal(uint32_t code) {
    if (status_.fatal()) {
        return;
    }
    status_.bits &= ~OHCA_DEV_STATUS_READY;
    status_.bits |= OHCA_DEV_STATUS_FATAL;
    status_.fatal_code = code;
    // Tell the driver if EQ 0 can still take it.
    if (code != OHCA_FATAL_EQ_DMA) {
        events_.post_fatal(code);
    }
    if (port_.rx_waiting()) {
        host_.schedule();
    }
}

// KeyLinks: a QP that waited for a page fault goes on.
void Device::odp_resume(Qp &qp) {
    transport_of(transports_, qp).odp_resumed(qp);
    loop_.mark_ready(qp);
}

void Device::set_link(bool up) {
    Entry entry(*this);
    if (!entry.ok() || up == port_.state().link_up) {
        return;
    }
    port_.state().set_link(events_, up);
    if (up) {
        port_.link_init();
    }
    if (!up && port_.rx_waiting()) {
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
    // mark_ready() and loop_back() ask for no run while the doorbell is
    // taken: the run below, or the check after it, does.
    loop_.hold_kicks(true);
    Qp *rung = ring(page, offset, value, size);
    loop_.doorbell_run(rung, budget);
}

// The doorbell itself: the QP it gave work to (SQ, or RQ in ERR), or null.
Qp *Device::ring(uint32_t page, uint32_t offset, uint64_t value, unsigned int size) {
    if (page >= OHCA_NUM_DB_PAGES || offset >= OHCA_DB_PAGE_SIZE) {
        ++stats_.db_errors;
        return nullptr;
    }
    // Page 0 is the kernel's; pages 1.. belong to allocated UARs. Each
    // doorbell is one aligned 64-bit store: queue number low, value high.
    if ((page != 0 && !uars_.allocated(page)) || size != 8 || !status_.running()) {
        ++stats_.db_errors;
        return nullptr;
    }
    const auto qn = static_cast<uint32_t>(value);
    const auto v = static_cast<uint32_t>(value >> 32);
    switch (offset) {
    case OHCA_DB_SQ:
    case OHCA_DB_RQ: {
        bool made_ready = false;
        Qp *qp = qps_.doorbell(page, qn, offset == OHCA_DB_SQ, v, made_ready);
        if (qp == nullptr) {
            ++stats_.db_errors;
        }
        return made_ready ? qp : nullptr;
    }
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
    case OHCA_DB_WQ:
        if (!wqs_.doorbell(page, qn, v)) {
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
        if (status_.running()) {
            process_cmdq();
        }
        if (status_.running()) {
            eth_.process_tx();
        }
        if (status_.running()) {
            loop_.run();
        }
    }
    // Resume a held frame (RoCE backlog full, or offered re-entrantly) once
    // the backlog has room.
    port_.resume_rx();
}

ohca_engine_rx_result Device::receive_frame(std::span<const uint8_t> frame) {
    Entry entry(*this);
    if (!entry.ok()) {
        // Arrived from inside one of our own callbacks: hold it.
        port_.hold_rx();
        return OHCA_ENGINE_RX_RETRY;
    }
    if (const auto r = port_.receive(frame)) {
        return *r; // the link layer's, or dropped by the MAC filter
    }
    if (status_.running() && port_.state().link_up && raw_.steer(frame)) {
        ++port_.state().rx_frames;
        return OHCA_ENGINE_RX_CONSUMED; // a flow took it
    }
    return eth_.rx(frame);
}

} // namespace ohca
