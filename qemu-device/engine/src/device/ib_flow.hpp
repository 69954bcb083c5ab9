// SPDX-License-Identifier: GPL-2.0-or-later
// Credit-based link flow control on the device's side of an InfiniBand
// link (IBTA vol. 1 7.9; fabric/ib's LinkCredits keeps the counters): data
// packets leave only against the peer's credit for their VL (VL15 is
// exempt), the receive buffer is advertised per VL and credit returned as
// packets are consumed, in flow control packets sent at link
// initialization, when credit is returned, and periodically.
#pragma once

#include "ib/link.hpp"
#include "ib/packet.hpp"
#include "link/link_layer.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

namespace ohca {

namespace state {
class Reader;
class Writer;
} // namespace state

class IbFlow {
  public:
    // The receive buffer per data VL (64-byte blocks): with 8 VLs, at most
    // as many packets as the device's receive backlog holds.
    static constexpr uint16_t kBufferBlocks = 128;
    // Data packets made while the peer gave no credit (ACKs and responses
    // a transport does not hold back): beyond this many they are dropped
    // and counted; the transports' own sends wait for room instead.
    static constexpr size_t kMaxHeld = 64;
    // FCPs are repeated this often, so a lost one is repaired.
    static constexpr uint64_t kFcpPeriodNs = 10'000'000;

    IbFlow(Port &port, uint8_t vls) : port_(port), credits_(kBufferBlocks, vls) {}

    // Link (re)initialization: every counter to zero, no credit until the
    // peer's first FCP, and ours sent now.
    void reset(uint64_t now_ns);
    // Whether a packet of frame_len bytes on 'vl' may be made now.
    [[nodiscard]] bool room(uint8_t vl, size_t frame_len) const;
    enum class Out : uint8_t { Sent, Held, Dropped };
    // A data packet (not VL15): sent against credit, else held.
    Out send(std::span<const uint8_t> frame, uint8_t vl);
    // A link packet from the peer: its FCP (a bad one is ignored), then
    // the held packets it gives credit for. True if it gave credit.
    bool on_link_packet(std::span<const uint8_t> frame);
    // A data packet taken into the receive backlog (false: beyond the
    // credit we gave, an overrun to drop), and its buffer freed.
    [[nodiscard]] bool on_received(uint8_t vl, size_t frame_len);
    void on_consumed(uint8_t vl, size_t frame_len);
    // The FCPs due (credit returned, or the period passed at 'now_ns').
    void send_fcps(uint64_t now_ns);
    [[nodiscard]] uint64_t deadline() const { return next_fcp_ns_; }
    [[nodiscard]] size_t held() const { return held_.size(); }
    [[nodiscard]] const ib::LinkCredits &credits() const { return credits_; }

    // The credit counters in a saved engine (device/snapshot.cpp); held
    // packets are dropped like other frames in flight. After load() the
    // FCPs are due at once ('now_ns'), so the peer resynchronizes.
    void save(state::Writer &w) const;
    void load(state::Reader &r, uint64_t now_ns);

  private:
    struct Held {
        uint8_t vl;
        std::vector<uint8_t> frame;
    };
    void flush();

    Port &port_;
    ib::LinkCredits credits_;
    std::deque<Held> held_;
    uint64_t next_fcp_ns_ = 0;
};

} // namespace ohca
