// SPDX-License-Identifier: GPL-2.0-or-later
// The Ethernet NIC's rings: TX and RX descriptor rings in guest memory, their
// interrupt (vector 1) and their commands (CREATE/DESTROY_ETH_RING).
// Programming manual section 6. Frames go to the host and come from the
// port (wire_port.hpp) when neither the link layer nor a raw flow claims
// them.
#pragma once

#include "device/command.hpp"
#include "device/dev_status.hpp"
#include "device/eth_ring.hpp"
#include "device/host.hpp"
#include "device/pfc.hpp"
#include "device/port_state.hpp"
#include "device/stats.hpp"

#include <ohca_engine.h>

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace ohca {

class EthRings {
  public:
    struct Deps {
        const Host &host;
        Stats &stats;
        const DevStatus &status;
        PortState &port;
        Pfc &pfc; // pauses the TX side honours, the RX side's level
    };
    explicit EthRings(const Deps &deps) : d_(deps) {}

    // Power-on: no rings, the interrupt unmasked.
    void reset();
    void tx_doorbell(uint32_t value);
    void rx_doorbell(uint32_t value);
    void irq_mask_write(uint32_t value);
    [[nodiscard]] uint32_t irq_mask() const { return irq_mask_; }
    // Sends what the TX ring holds (at most a ring's worth per call).
    // A frame of a priority the peer paused is held (one per priority,
    // its descriptor completed) and the ring goes on; a second one of a
    // paused priority stops the ring until that pause ends (its timer
    // runs the device again). Frames held when their pause ends go first.
    void process_tx();
    // A frame for the RX ring.
    ohca_engine_rx_result rx(std::span<const uint8_t> frame);

    CmdResult cmd_create_ring(const Command &cmd);
    CmdResult cmd_destroy_ring(const Command &cmd);

    // The rings and the interrupt's state (device/snapshot.cpp).
    void save(state::Writer &w) const;
    void load(state::Reader &r);

  private:
    enum class Tx : uint8_t { Done, Broken, Paused };
    void completed();
    Tx tx_one();
    // Sends the held frames whose priority is no longer paused.
    void flush_held();
    void send(std::span<const uint8_t> frame);

    Deps d_;
    EthRing tx_ring_;
    EthRing rx_ring_;
    uint32_t irq_mask_ = 0;
    bool irq_pending_ = false;
    // A frame per priority held by a pause (its storage kept).
    std::array<std::vector<uint8_t>, Pfc::kPrios> held_;
    uint8_t held_mask_ = 0;
};

} // namespace ohca
