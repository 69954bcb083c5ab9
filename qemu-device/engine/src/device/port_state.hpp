// SPDX-License-Identifier: GPL-2.0-or-later
// The state of the device's one port, in one place for every part that
// reads or changes it: the wire side (wire_port.hpp), the Ethernet rings,
// the port commands (QUERY_PORT, SET_PORT) and the register file. A second
// link layer (InfiniBand: LID, Down-Init-Armed-Active) keeps its port
// attributes here too, so QUERY_PORT and PORT_CHANGE events have one
// source whatever lies below the BTH.
#pragma once

#include "device/limits.hpp"

#include <ohca/ohca_cmd.h>

#include <array>
#include <cstdint>

namespace ohca {

struct PortState {
    // The board's (configuration, kept across resets).
    std::array<uint8_t, 6> mac{};
    bool link_up = true; // the wire's (set_link), kept across resets
    // The driver's (SET_PORT), back to power-on values on reset.
    uint32_t mtu = DeviceLimits::default_mtu;
    uint32_t rx_mode = 0;
    // Port totals: every frame accepted from / put on the wire.
    uint64_t rx_frames = 0;
    uint64_t tx_frames = 0;

    // The logical state QUERY_PORT and PORT_CHANGE report.
    [[nodiscard]] uint8_t state() const { return link_up ? OHCA_PORT_ACTIVE : OHCA_PORT_DOWN; }
    // Power-on: what the driver set and the counters; the board and the
    // wire stay.
    void power_on() {
        mtu = DeviceLimits::default_mtu;
        rx_mode = 0;
        rx_frames = 0;
        tx_frames = 0;
    }
};

} // namespace ohca
