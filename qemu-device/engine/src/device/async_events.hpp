// SPDX-License-Identifier: GPL-2.0-or-later
// EQ 0, the device's asynchronous event queue, and the events that found it
// full. Object owners and transports post through it as their EventSink;
// the register file configures it and rings its doorbell.
#pragma once

#include "device/dev_status.hpp"
#include "device/event_queue.hpp"
#include "device/host.hpp"
#include "device/stats.hpp"
#include "objects/event_sink.hpp"

#include <ohca/ohca_queue.h>

#include <cstdint>
#include <deque>

namespace ohca {

class CqTable;
class QpTable;
class SrqTable;

// What a DMA error on EQ 0 leads to: the device's fatal state.
class FatalSink {
  public:
    FatalSink() = default;
    FatalSink(const FatalSink &) = delete;
    FatalSink &operator=(const FatalSink &) = delete;
    virtual void enter_fatal(uint32_t code) = 0;

  protected:
    ~FatalSink() = default;
};

class AsyncEvents final : public EventSink {
  public:
    struct Deps {
        const Host &host;
        Stats &stats;
        const DevStatus &status;
        // The objects whose waiting events are kept in them.
        QpTable &qps;
        CqTable &cqs;
        SrqTable &srqs;
        FatalSink &fatal;
    };
    explicit AsyncEvents(const Deps &deps) : d_(deps) {}
    ~AsyncEvents() = default;

    // Power-on: EQ 0 unconfigured, nothing waiting.
    void reset();
    // Started at ENABLE with the registers' base and size.
    void configure(uint64_t base, unsigned int log_size) { eq0_.configure(base, log_size); }

    void post_event(uint8_t type, uint16_t code, uint32_t p0, uint32_t p1, uint32_t p2) override;
    // A QP event a wire peer can cause: at most half of EQ 0.
    void post_peer_event(uint16_t code, uint32_t qpn) override;
    // DEVICE_FATAL, if EQ 0 can still take it (nothing waits for room).
    void post_fatal(uint32_t code);
    // EQ 0's doorbell: false if the value is not a valid one; else what
    // waits is posted, in order, while there is room.
    bool doorbell(uint32_t value);
    // A command runs only when EQ 0 can take its CMD_DONE at once.
    [[nodiscard]] bool takes_command() const { return held_.empty() && eq0_.has_room(); }
    // Whether a page-fault event may be posted now (while EQ 0 is less
    // than half full, as a peer's QP events: a peer's requests fault too).
    [[nodiscard]] bool fault_room() const;

    // EQ 0 and what waits for it (device/snapshot.cpp). Loaded after the
    // objects whose waiting events are kept in them.
    void save(state::Writer &w) const;
    void load(state::Reader &r);

  private:
    void hold(const ohca_eqe &eqe);
    bool take_held(ohca_eqe &eqe);
    void drain();

    Deps d_;
    EventQueue eq0_{OHCA_MSIX_ASYNC_EQ};
    // Events that found EQ 0 full (hold), posted in order as the driver
    // returns entries. Each object waits here at most once and keeps its
    // waiting events as bits (Qp, Cq, Srq held_events; an identical event
    // merges), so the list never holds more than every QP, CQ and SRQ, the
    // port and one command: bounded by the limits, whatever the guest does.
    // Commands wait while it is not empty.
    enum class HeldKind : uint8_t { Qp, Cq, Srq, Port, Cmd };
    struct HeldRef {
        HeldKind kind;
        uint32_t id;
    };
    std::deque<HeldRef> held_;
    uint16_t held_port_state_ = 0;  // the port state to report, 0: none
    uint32_t held_port_change_ = 0; // ... and what changed (param1), merged
    bool held_cmd_valid_ = false;   // held_cmd_ waits
    ohca_eqe held_cmd_{};
};

} // namespace ohca
