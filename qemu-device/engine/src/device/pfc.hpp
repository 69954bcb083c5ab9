// SPDX-License-Identifier: GPL-2.0-or-later
// Flow control of an Ethernet port (programming manual section 22): the
// 802.3x PAUSE and 802.1Qbb priority flow control frames the device
// honours and sends, as SET_PFC configures them (off at power-on).
//
// Honour: a received PFC frame stops, per priority it enables, the
// device's frames of that priority (its RoCE packets, which wait in their
// QP through WirePort::tx_room, and the guest's Ethernet frames, held by
// EthRings) until quanta x 512 bit times have passed at the configured
// speed; quanta 0 (XON) resumes at once. A new frame replaces the time.
// Nothing waits by spinning: deadline() is in the run loop's timer.
// Generate: the receive side reports its level (the RoCE backlog, the
// Ethernet RX ring without descriptors); a priority with PFC on is sent
// XOFF when it fills, refreshed halfway through its time while it stays
// full, and XON once it has drained (hysteresis). Frames come from
// fabric/eth (the switch's own definitions).
#pragma once

#include "device/host.hpp"
#include "device/port_state.hpp"
#include "link/link_layer.hpp"

#include <ohca/ohca_cmd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace ohca {

namespace state {
class Reader;
class Writer;
} // namespace state

struct PfcCounters {
    std::array<uint64_t, OHCA_PFC_PRIOS> rx_pfc{}; // PFC frames received naming priority i
    std::array<uint64_t, OHCA_PFC_PRIOS> tx_pfc{}; // PFC frames sent naming priority i
    uint64_t rx_pause = 0;                         // 802.3x PAUSE received
    uint64_t tx_pause = 0;
    uint64_t rx_ignored = 0; // MAC control frames not acted on (off, malformed, other opcode)
    uint64_t rx_storm = 0;   // pauses kept in force for over kStormNs
    uint64_t tx_held = 0;    // the guest's frames held by a pause
    uint64_t tx_dropped = 0; // RoCE packets of a paused priority sent without waiting
};

class Pfc {
  public:
    static constexpr size_t kPrios = OHCA_PFC_PRIOS;
    static constexpr uint8_t kNone = 0xff; // no priority (a looped-back packet)
    // What an XOFF carries (the largest time: it is refreshed before it ends).
    static constexpr uint16_t kXoffQuanta = 0xffff;
    // A priority paused without a break for this long is counted once
    // (rx_storm): a peer that never stops pausing, as mlx5's PFC storm
    // counters show it. The pause itself is honoured.
    static constexpr uint64_t kStormNs = 1'000'000'000;

    struct Deps {
        const Host &host;
        Port &link; // PAUSE and PFC frames out
        const PortState &state;
    };
    explicit Pfc(const Deps &deps) : d_(deps) {}

    // Power-on: off, nothing paused, counters zero.
    void reset();
    [[nodiscard]] const ohca_pfc_config &config() const { return cfg_; }
    // The offset in ohca_pfc_config of a setting's first bad field (SET_PFC,
    // and a loaded state), with speed_mbps in host order.
    [[nodiscard]] static std::optional<size_t> bad_field(const ohca_pfc_config &cfg);
    // The settings, the pauses in force and the XOFFs sent, in the saved
    // engine (docs/migration.md; snapshot.cpp). The RoCE backlog is not
    // saved (its frames are dropped), so its hold starts empty.
    void save(state::Writer &w) const;
    void load(state::Reader &r);
    // A new setting (validated by the caller): pauses of priorities no
    // longer honoured end, XOFFs no longer wanted are released with XON.
    void configure(const ohca_pfc_config &cfg);
    [[nodiscard]] const PfcCounters &counters() const { return counters_; }

    // ---- classification
    // A frame's priority by the trust mode (fabric/eth's parse).
    [[nodiscard]] uint8_t frame_priority(std::span<const uint8_t> frame) const;
    // The device's own RoCE packets: PCP 0 in their tag; DSCP = tclass / 4.
    [[nodiscard]] uint8_t roce_priority(uint8_t traffic_class) const {
        return cfg_.trust == OHCA_PFC_TRUST_DSCP ? static_cast<uint8_t>(traffic_class >> 5) : 0;
    }
    // Whether a frame is a MAC control frame (EtherType 0x8808, at most
    // one tag): the port's own, never the guest's.
    [[nodiscard]] static bool is_mac_control(std::span<const uint8_t> frame);

    // ---- honour
    // A received MAC control frame: counted, and a PAUSE or PFC frame
    // applied as configured. Bounded: one parse and eight timers.
    void receive(std::span<const uint8_t> frame);
    // Whether pause frames for 'prio' are honoured (PFC on it, or 802.3x
    // pause received): the priority is lossless on this port.
    [[nodiscard]] bool honoured(uint8_t prio) const {
        return prio < kPrios && ((rx_mask(cfg_) >> prio) & 1U) != 0;
    }
    // Whether frames of 'prio' must wait now.
    [[nodiscard]] bool paused(uint8_t prio) const;
    // paused(), noting that a QP waits (end_run).
    [[nodiscard]] bool hold(uint8_t prio) const {
        const bool p = paused(prio);
        waited_ = waited_ || p;
        return p;
    }
    // Whether any priority is paused (a cheap test before classifying).
    [[nodiscard]] bool any_paused() const { return paused_mask_ != 0 && paused_mask() != 0; }
    [[nodiscard]] uint8_t paused_mask() const;
    // The priorities with a pause set, which may have ended (0: none set;
    // WireServices::no_pause reads it).
    [[nodiscard]] const uint8_t &pauses_set() const { return paused_mask_; }
    // The end of a run: true if a QP waited for a pause in it (its end, a
    // timer, lets it go on, not another run).
    bool end_run() {
        const bool w = waited_;
        waited_ = false;
        return w;
    }
    // The next time something is due: a pause ends, an XOFF is refreshed
    // (0: none). Every run asks: nothing paused and no XOFF held answers
    // without a call.
    [[nodiscard]] uint64_t deadline() const {
        return paused_mask_ == 0 && xoff_ == 0 && !xoff_global_ ? 0 : next_due();
    }
    // A guest frame held by a pause (counted).
    void count_held() { ++counters_.tx_held; }
    void count_dropped() { ++counters_.tx_dropped; }

    // ---- generate
    // The RoCE backlog's wire frames: one of 'prio' entered or left it.
    void roce_in(uint8_t prio, size_t backlog);
    void roce_out(uint8_t prio, size_t backlog);
    void roce_clear();
    // The Ethernet RX ring had no descriptor for a frame of 'prio'.
    void eth_rx_starved(uint8_t prio);
    // The Ethernet RX ring holds 'pending' of 'size' descriptors.
    void eth_rx_level(uint32_t pending, uint32_t size);
    // XOFF refreshes due (the timer's run; every run asks).
    void tick() {
        if (xoff_ != 0 || xoff_global_) {
            refresh();
        }
    }
    [[nodiscard]] uint8_t xoff_mask() const { return xoff_; }
    // Whether XOFF may be sent (the receive side's level matters).
    [[nodiscard]] bool generating() const { return tx_mask() != 0; }

    // Hysteresis of the RoCE backlog (DeviceLimits::max_roce_backlog).
    static constexpr size_t kRoceXoff = 768;
    static constexpr size_t kRoceXon = 256;

  private:
    [[nodiscard]] uint64_t next_due() const;
    void refresh();
    [[nodiscard]] uint64_t quanta_ns(uint16_t quanta) const;
    void pause(uint8_t mask, const std::array<uint16_t, kPrios> &quanta);
    // Sends what the wanted XOFF set has become (XOFF for the new, XON for
    // the released priorities).
    void update_xoff();
    void send(uint8_t mask, uint16_t quanta);
    // The priorities whose pauses a setting honours (PFC's, or all for
    // PAUSE with rx).
    [[nodiscard]] static uint8_t rx_mask(const ohca_pfc_config &cfg) {
        if (cfg.pfc_en != 0) {
            return cfg.pfc_en;
        }
        return (cfg.pause & OHCA_PAUSE_RX) != 0 ? 0xff : 0;
    }
    // The priorities XOFF may be sent for (PFC's, or all for PAUSE).
    // Inline: every received frame asks (generating()).
    [[nodiscard]] uint8_t tx_mask() const {
        if (cfg_.pfc_en != 0) {
            return cfg_.pfc_en;
        }
        return (cfg_.pause & OHCA_PAUSE_TX) != 0 ? 0xff : 0;
    }

    Deps d_;
    ohca_pfc_config cfg_{};
    PfcCounters counters_;
    std::array<uint64_t, kPrios> until_{};      // paused until (ns)
    std::array<uint64_t, kPrios> since_{};      // paused without a break since
    std::array<bool, kPrios> storm_counted_{};  // this pause's storm counted
    uint8_t paused_mask_ = 0;                   // priorities with a pause set (may have ended)
    std::array<uint32_t, kPrios> roce_count_{}; // wire frames of each priority in the backlog
    size_t roce_total_ = 0;
    uint8_t roce_hold_ = 0;    // priorities held off for the RoCE backlog
    uint8_t eth_hold_ = 0;     // ... for the Ethernet RX ring
    uint8_t xoff_ = 0;         // priorities we hold XOFF for (sent)
    bool xoff_global_ = false; // an 802.3x PAUSE is in force (pfc_en 0, OHCA_PAUSE_TX)
    uint64_t refresh_ns_ = 0;  // when the XOFF is sent again
    mutable bool waited_ = false;
};

} // namespace ohca
