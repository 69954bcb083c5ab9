// SPDX-License-Identifier: GPL-2.0-or-later
// The state of the device's one port, in one place for every part that
// reads or changes it: the wire side (wire_port.hpp), the Ethernet rings,
// the port commands (QUERY_PORT, SET_PORT, MAD_IFC) and the register file.
// An InfiniBand port keeps its attributes here too (ib: the SMA's state,
// ib_port.hpp), so QUERY_PORT and PORT_CHANGE events have one source
// whatever lies below the BTH.
#pragma once

#include "device/ib_port.hpp"
#include "device/limits.hpp"
#include "device/tx_pacer.hpp"
#include "objects/event_sink.hpp"

#include <ohca/ohca_cmd.h>
#include <ohca/ohca_queue.h>
#include <ohca_engine.h>

#include <array>
#include <cstdint>
#include <optional>

namespace ohca {

struct PortState {
    // The board's (configuration, kept across resets).
    std::array<uint8_t, 6> mac{};
    bool link_up = true; // the wire's (set_link), kept across resets
    uint32_t speed_mbps = OHCA_ENGINE_DEFAULT_SPEED_MBPS; // the board's
    // The driver's (SET_PORT), back to power-on values on reset.
    uint32_t mtu = DeviceLimits::default_mtu;
    uint32_t rx_mode = 0;
    // Port totals: every frame accepted from / put on the wire.
    uint64_t rx_frames = 0;
    uint64_t tx_frames = 0;
    // An InfiniBand port's attributes and agents' state; none on Ethernet.
    std::optional<IbPort> ib;
    // An Ethernet port's transmit at its line rate (tx_pacer.hpp): the
    // wire side's packets and the guest's Ethernet frames alike.
    TxPacer pacer;

    // The logical state QUERY_PORT and PORT_CHANGE report.
    [[nodiscard]] uint8_t state() const {
        if (ib) {
            return ib->state();
        }
        return link_up ? OHCA_PORT_ACTIVE : OHCA_PORT_DOWN;
    }
    // Power-on: what the driver set and the counters; the board and the
    // wire stay (an IB port has no LID until the SM gives it again).
    void power_on() {
        mtu = DeviceLimits::default_mtu;
        rx_mode = 0;
        rx_frames = 0;
        tx_frames = 0;
        pacer.reset();
        if (ib) {
            ib->reset(link_up);
        }
    }
    // What changed on the port ('changed': enum ohca_port_change), to the
    // driver (OHCA_EQE_PORT_CHANGE); nothing if nothing did.
    void report_change(EventSink &events, uint32_t changed) const {
        if (changed != 0) {
            events.post_event(OHCA_EQE_PORT_CHANGE, state(), 1, changed, 0);
        }
    }
    // The wire went up or down: DOWN <-> ACTIVE on Ethernet (param1 0),
    // DOWN <-> INIT on InfiniBand (param1: what changed).
    void set_link(EventSink &events, bool up) {
        link_up = up;
        if (ib) {
            report_change(events, ib->set_link(up));
        } else {
            events.post_event(OHCA_EQE_PORT_CHANGE, state(), 1, 0, 0);
        }
    }
};

} // namespace ohca
