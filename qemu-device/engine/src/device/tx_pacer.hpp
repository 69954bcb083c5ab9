// SPDX-License-Identifier: GPL-2.0-or-later
// The port's transmit pacer: the device's frames leave at its line rate
// (the board's speed, QEMU's `speed` property), as a NIC's MAC sends them,
// not as fast as the host's CPU lets the engine make them. Without it a
// sender's whole RC window reached the switch in one engine run, a burst
// the line rate never makes, past PFC's XOFF and ECN's thresholds before
// either could act (docs/congestion.md).
//
// A token bucket of 'burst' bytes filled at the line rate, on the host's
// clock. Data senders (the RC and UC requesters, READ responses, UD) ask
// may_send() before they make a packet (WirePort::tx_room) and wait in
// their QP, on the ready list, when the bucket is empty: nothing is
// dropped and nothing spins, the run ends and the host's timer (deadline())
// starts the next one when the bucket has room again. Every frame put on
// the wire is charged (sent()), ACKs, CNPs, pause frames and the guest's
// Ethernet frames too, but those never wait: they are small and keep the
// peers' windows and pauses moving, so data cannot starve them; they only
// delay the data after them. DCQCN's per-QP rate (dcqcn.hpp) is below this
// one. Constant memory and O(1) per call, whatever the guest posts.
#pragma once

#include "device/host.hpp"

#include <cstddef>
#include <cstdint>

namespace ohca {

class TxPacer {
  public:
    // Besides a frame's bytes its line carries a preamble and start
    // delimiter (8) and the inter-frame gap (12), as a switch's shaper
    // counts them (fabric/switch/eth_switch.cpp).
    static constexpr uint32_t kWireOverhead = 20;

    // 'burst_bytes' 0: not paced (every frame may leave at once);
    // 'speed_mbps' the line rate. Kept across resets (the board's).
    void configure(uint32_t speed_mbps, uint32_t burst_bytes);
    [[nodiscard]] bool on() const { return burst_ != 0; }
    // Power-on: a full bucket, nothing waiting.
    void reset();

    // Whether a data packet may leave now; if not, the wait is noted
    // (end_run, deadline). Inline and without the clock while the bucket
    // holds tokens: every packet asks. Const as Pfc::hold is: asked from
    // WireServices' const tx_room, a question that notes a wait.
    [[nodiscard]] bool may_send(const Host &host) const {
        return has_credit() || refill(host.now_ns());
    }
    // may_send() without the clock: true while the bucket holds tokens.
    [[nodiscard]] bool has_credit() const { return credit_ > 0 || burst_ == 0; }
    // A frame of 'len' bytes went on the wire.
    void sent(size_t len) {
        if (burst_ != 0) {
            credit_ -= static_cast<int64_t>(len + kWireOverhead) * kUnit;
        }
    }
    // The end of a run: true if a packet waited for the bucket in it; the
    // next deadline() is when the bucket has room again (0: nothing waits).
    bool end_run() {
        const bool w = waited_;
        waited_ = false;
        armed_ = w ? wake_ns_ : 0;
        return w;
    }
    [[nodiscard]] uint64_t deadline() const { return armed_; }
    // Tokens now (bytes; negative: owed), for tests.
    [[nodiscard]] int64_t credit_bytes() const { return credit_ / kUnit; }

  private:
    // Credit in 1/8000 byte: a nanosecond at speed_mbps adds exactly
    // speed_mbps units (a Mbit/s is 1/8000 byte per ns), no rounding drift.
    static constexpr int64_t kUnit = 8000;
    bool refill(uint64_t now) const;

    uint32_t speed_mbps_ = 0;
    int64_t burst_ = 0;                // the bucket's size (units; 0: not paced)
    mutable int64_t credit_ = 0;       // tokens (units); sent() may overdraw by one frame
    mutable int64_t credit_after_ = 0; // credit_ right after the last refill
    mutable uint64_t last_ns_ = 0;     // the last refill (0: none yet)
    mutable uint64_t wake_ns_ = 0;     // when the bucket has room again (a wait noted)
    uint64_t armed_ = 0;               // deadline(): the last run's wait
    mutable bool waited_ = false;
};

} // namespace ohca
