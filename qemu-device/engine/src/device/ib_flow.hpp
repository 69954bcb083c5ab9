// SPDX-License-Identifier: GPL-2.0-or-later
// Credit-based link flow control on the device's side of an InfiniBand
// link (IBTA vol. 1 7.9; fabric/ib's LinkCredits keeps the counters): data
// packets leave only against the peer's credit for their VL (VL15 is
// exempt), the receive buffer is advertised per VL and credit returned as
// packets are consumed, in flow control packets sent at link
// initialization, when credit is returned (at the end of a run, or at
// once after a quarter of a VL's buffer), and periodically.
#pragma once

#include "ib/link.hpp"
#include "ib/packet.hpp"
#include "link/link_layer.hpp"

#include <array>
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
    // The receive buffer (64-byte blocks), one pool shared by the data VLs
    // in operation, as an HCA sizes its buffer from OperationalVLs (VL15
    // apart: management packets are not flow controlled). 512 KiB: each VL
    // of four gets the largest window a credit counter allows (2048
    // blocks), each of eight 1024; a whole window of largest packets (31)
    // holds a line busy across a few milliseconds of a host's scheduling.
    // Packets, not blocks, bound the backlog (max_roce_backlog), so a peer
    // that spends its credit on small packets is held by the host's
    // backpressure (RX_RETRY) instead, without a drop.
    static constexpr uint32_t kPoolBlocks = 8192;
    // Data packets made while the peer gave no credit (ACKs and responses
    // a transport does not hold back), all VLs together: beyond this many
    // they are dropped and counted; the transports' own sends wait for
    // room instead.
    static constexpr size_t kMaxHeld = 64;
    // FCPs are repeated this often, so a lost one is repaired.
    static constexpr uint64_t kFcpPeriodNs = 10'000'000;
    // A VL's credit goes back at once, without waiting for the end of the
    // run, once a quarter of its buffer was consumed since its last FCP:
    // a long run does not leave the peer's line idle.
    static constexpr uint16_t kFcpEveryDivisor = 4;

    // 'vls': the data VLs the port can operate (VLCap), all in operation
    // until set_operational() says otherwise.
    IbFlow(Port &port, uint8_t vls);

    // The data VLs in operation (PortInfo:OperationalVLs): the pool is
    // split among them, the others get no buffer. For a port in Init, when
    // no data flows (LinkCredits::set_buffer).
    void set_operational(uint8_t vls);
    [[nodiscard]] uint8_t operational() const { return operational_; }
    // Link (re)initialization: every counter to zero, no credit until the
    // peer's first FCP, and ours sent now.
    void reset(uint64_t now_ns);
    // Whether a packet of frame_len bytes on 'vl' may be made now.
    [[nodiscard]] bool room(uint8_t vl, size_t frame_len) const;
    // Whether packets on 'vl' are about to wait for the peer's credit: less
    // than two largest packets' worth left, or some held already.
    [[nodiscard]] bool short_of_credit(uint8_t vl) const;
    enum class Out : uint8_t { Sent, Held, Dropped };
    // A data packet (not VL15): sent against credit, else held behind the
    // packets held on its VL.
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
    [[nodiscard]] size_t held() const { return held_count_; }
    [[nodiscard]] const ib::LinkCredits &credits() const { return credits_; }

    // The credit counters in a saved engine (device/snapshot.cpp); held
    // packets are dropped like other frames in flight. After load() the
    // FCPs are due at once ('now_ns'), so the peer resynchronizes.
    void save(state::Writer &w) const;
    void load(state::Reader &r, uint64_t now_ns);

  private:
    void flush();
    void send_fcp(uint8_t vl);
    void clear_held();

    Port &port_;
    ib::LinkCredits credits_;
    uint8_t operational_ = 0;
    // Per VL, so a VL without credit holds up no other (IBTA orders
    // packets within a VL only); held_count_ bounds them together.
    std::array<std::deque<std::vector<uint8_t>>, ib::kMaxDataVls> held_;
    size_t held_count_ = 0;
    // Blocks consumed on each VL since its last FCP.
    std::array<uint16_t, ib::kMaxDataVls> returned_{};
    uint64_t next_fcp_ns_ = 0;
};

} // namespace ohca
