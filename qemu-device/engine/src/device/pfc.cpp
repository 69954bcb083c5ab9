// SPDX-License-Identifier: GPL-2.0-or-later
// The port's flow control (pfc.hpp): PAUSE and PFC frames honoured and sent.
#include "device/pfc.hpp"

#include "device/limits.hpp"
#include "eth/frame.hpp"

#include <ohca_engine.h>

#include <algorithm>

namespace ohca {

namespace {
constexpr uint8_t bit(size_t i) {
    return static_cast<uint8_t>(1u << i);
}
} // namespace

void Pfc::reset() {
    cfg_ = ohca_pfc_config{};
    counters_ = PfcCounters{};
    until_.fill(0);
    since_.fill(0);
    storm_counted_.fill(false);
    paused_mask_ = 0;
    roce_clear();
    eth_hold_ = 0;
    xoff_ = 0;
    xoff_global_ = false;
    refresh_ns_ = 0;
    waited_ = false;
}

std::optional<size_t> Pfc::bad_field(const ohca_pfc_config &cfg) {
    if ((cfg.pause & ~uint32_t{OHCA_PAUSE_RX | OHCA_PAUSE_TX}) != 0) {
        return offsetof(ohca_pfc_config, pause);
    }
    if (cfg.trust != OHCA_PFC_TRUST_PCP && cfg.trust != OHCA_PFC_TRUST_DSCP) {
        return offsetof(ohca_pfc_config, trust);
    }
    if (cfg.rsvd0 != 0) {
        return offsetof(ohca_pfc_config, rsvd0);
    }
    // Up to the fastest port (ohca-switch's --line-rate range); 0: the port's.
    if (cfg.speed_mbps > OHCA_ENGINE_MAX_SPEED_MBPS) {
        return offsetof(ohca_pfc_config, speed_mbps);
    }
    return std::nullopt;
}

void Pfc::configure(const ohca_pfc_config &cfg) {
    // Honoured before, not now: those pauses end.
    const uint8_t rx = rx_mask(cfg);
    bool woke = false;
    for (size_t i = 0; i < kPrios; ++i) {
        if ((rx & bit(i)) == 0 && paused(static_cast<uint8_t>(i))) {
            until_[i] = 0;
            woke = true;
        }
    }
    // XOFFs sent under the old setting that the new one would not send
    // are released first, in the frame that sent them.
    const bool pfc_now = cfg.pfc_en != 0;
    if (xoff_ != 0 && (!pfc_now || (xoff_ & ~cfg.pfc_en) != 0)) {
        const auto rel = static_cast<uint8_t>(pfc_now ? xoff_ & ~cfg.pfc_en : xoff_);
        send(rel, 0);
        xoff_ = static_cast<uint8_t>(xoff_ & ~rel);
    }
    if (xoff_global_ && (pfc_now || (cfg.pause & OHCA_PAUSE_TX) == 0)) {
        send(0, 0);
        xoff_global_ = false;
    }
    cfg_ = cfg;
    update_xoff();
    if (woke) {
        d_.host.schedule();
    }
}

// ---- classification -------------------------------------------------------------

bool Pfc::is_mac_control(std::span<const uint8_t> frame) {
    if (frame.size() < eth::kHeaderBytes) {
        return false;
    }
    size_t off = 12;
    auto type = static_cast<uint16_t>((frame[off] << 8) | frame[off + 1]);
    if ((type == eth::kTypeVlan || type == eth::kTypeQinQ) && frame.size() >= 18) {
        off += 4;
        type = static_cast<uint16_t>((frame[off] << 8) | frame[off + 1]);
    }
    return type == eth::kTypeMacControl;
}

uint8_t Pfc::frame_priority(std::span<const uint8_t> frame) const {
    if (cfg_.trust != OHCA_PFC_TRUST_DSCP) {
        // The first tag's PCP; untagged: 0 (as ohca-switch --pfc-trust pcp).
        if (frame.size() >= 16 && frame[12] == 0x81 && frame[13] == 0x00) {
            return static_cast<uint8_t>(frame[14] >> 5);
        }
        return 0;
    }
    eth::FrameInfo info;
    if (eth::parse(frame, info) != eth::FrameError::Ok || info.ip == 0) {
        return 0;
    }
    return static_cast<uint8_t>(info.dscp >> 3);
}

// ---- honour ---------------------------------------------------------------------

uint64_t Pfc::quanta_ns(uint16_t quanta) const {
    const uint64_t mbps = cfg_.speed_mbps != 0 ? cfg_.speed_mbps : d_.state.speed_mbps;
    // 512 bit times each; a bit at M Mbit/s lasts 1000 / M ns (rounded up).
    return (uint64_t{quanta} * 512 * 1000 + mbps - 1) / mbps;
}

void Pfc::receive(std::span<const uint8_t> frame) {
    eth::FrameInfo info;
    if (eth::parse(frame, info) != eth::FrameError::Ok || !info.mac_control) {
        ++counters_.rx_ignored;
        return;
    }
    if (info.opcode == eth::kOpPfc) {
        for (size_t i = 0; i < kPrios; ++i) {
            if ((info.pfc.enable & bit(i)) != 0) {
                ++counters_.rx_pfc[i];
            }
        }
        const auto mask = static_cast<uint8_t>(info.pfc.enable & cfg_.pfc_en);
        if (mask == 0) {
            ++counters_.rx_ignored;
            return;
        }
        pause(mask, info.pfc.quanta);
        return;
    }
    if (info.opcode == eth::kOpPause) {
        ++counters_.rx_pause;
        const auto q = eth::pause_quanta(frame, info);
        if (!q || cfg_.pfc_en != 0 || (cfg_.pause & OHCA_PAUSE_RX) == 0) {
            ++counters_.rx_ignored;
            return;
        }
        std::array<uint16_t, kPrios> all{};
        all.fill(*q);
        pause(0xff, all);
        return;
    }
    ++counters_.rx_ignored;
}

void Pfc::pause(uint8_t mask, const std::array<uint16_t, kPrios> &quanta) {
    const uint64_t now = d_.host.now_ns();
    bool woke = false;
    for (size_t i = 0; i < kPrios; ++i) {
        if ((mask & bit(i)) == 0) {
            continue;
        }
        const bool was = (paused_mask_ & bit(i)) != 0 && now < until_[i];
        if (quanta[i] == 0) {
            woke = woke || was; // XON: at once
            until_[i] = 0;
            continue;
        }
        if (!was) {
            since_[i] = now;
            storm_counted_[i] = false;
        } else if (!storm_counted_[i] && now - since_[i] >= kStormNs) {
            ++counters_.rx_storm;
            storm_counted_[i] = true;
        }
        // The new time replaces the old one (802.1Qbb).
        until_[i] = now + quanta_ns(quanta[i]);
        paused_mask_ = static_cast<uint8_t>(paused_mask_ | bit(i));
    }
    if (woke) {
        d_.host.schedule(); // held QPs and frames go on
    }
}

bool Pfc::paused(uint8_t prio) const {
    if (prio >= kPrios || (paused_mask_ & bit(prio)) == 0) {
        return false;
    }
    return d_.host.now_ns() < until_[prio];
}

uint8_t Pfc::paused_mask() const {
    if (paused_mask_ == 0) {
        return 0;
    }
    const uint64_t now = d_.host.now_ns();
    uint8_t m = 0;
    for (size_t i = 0; i < kPrios; ++i) {
        if ((paused_mask_ & bit(i)) != 0 && now < until_[i]) {
            m = static_cast<uint8_t>(m | bit(i));
        }
    }
    return m;
}

uint64_t Pfc::next_due() const {
    uint64_t d = (xoff_ != 0 || xoff_global_) ? refresh_ns_ : 0;
    if (paused_mask_ == 0) {
        return d;
    }
    const uint64_t now = d_.host.now_ns();
    for (size_t i = 0; i < kPrios; ++i) {
        if ((paused_mask_ & bit(i)) != 0 && until_[i] > now) {
            d = d == 0 ? until_[i] : std::min(d, until_[i]);
        }
    }
    return d;
}

// ---- generate -------------------------------------------------------------------

void Pfc::roce_in(uint8_t prio, size_t backlog) {
    if (prio >= kPrios) {
        return;
    }
    ++roce_count_[prio];
    ++roce_total_;
    if (backlog < kRoceXoff) {
        return;
    }
    uint8_t held = 0;
    for (size_t i = 0; i < kPrios; ++i) {
        if (roce_count_[i] != 0) {
            held = static_cast<uint8_t>(held | bit(i));
        }
    }
    if ((held & ~roce_hold_) != 0) {
        roce_hold_ = static_cast<uint8_t>(roce_hold_ | held);
        update_xoff();
    }
}

void Pfc::roce_out(uint8_t prio, size_t backlog) {
    if (prio >= kPrios || roce_count_[prio] == 0) {
        return;
    }
    --roce_count_[prio];
    --roce_total_;
    if (roce_hold_ != 0 && backlog <= kRoceXon) {
        roce_hold_ = 0;
        update_xoff();
    }
}

void Pfc::roce_clear() {
    roce_count_.fill(0);
    roce_total_ = 0;
    roce_hold_ = 0;
}

void Pfc::eth_rx_starved(uint8_t prio) {
    if (prio >= kPrios || (tx_mask() & bit(prio)) == 0 || (eth_hold_ & bit(prio)) != 0) {
        return;
    }
    eth_hold_ = static_cast<uint8_t>(eth_hold_ | bit(prio));
    update_xoff();
}

void Pfc::eth_rx_level(uint32_t pending, uint32_t size) {
    // XON once a quarter of the ring is posted again.
    if (eth_hold_ != 0 && pending >= std::max<uint32_t>(1, size / 4)) {
        eth_hold_ = 0;
        update_xoff();
    }
}

void Pfc::update_xoff() {
    const auto want = static_cast<uint8_t>((roce_hold_ | eth_hold_) & tx_mask());
    const uint64_t now = d_.host.now_ns();
    const uint64_t refresh = now + quanta_ns(kXoffQuanta) / 2;
    if (cfg_.pfc_en == 0) {
        // 802.3x: one PAUSE for the whole port.
        if ((want != 0) != xoff_global_) {
            xoff_global_ = want != 0;
            send(0, xoff_global_ ? kXoffQuanta : 0);
            refresh_ns_ = refresh;
        }
        return;
    }
    const auto add = static_cast<uint8_t>(want & ~xoff_);
    const auto rel = static_cast<uint8_t>(xoff_ & ~want);
    if (rel != 0) {
        send(rel, 0);
    }
    if (add != 0) {
        send(add, kXoffQuanta);
        if (xoff_ == 0) {
            refresh_ns_ = refresh;
        }
    }
    xoff_ = want;
}

void Pfc::refresh() {
    if (d_.host.now_ns() < refresh_ns_) {
        return;
    }
    // Still full: the XOFF again before the peer's timer ends.
    send(xoff_global_ ? 0 : xoff_, kXoffQuanta);
    refresh_ns_ = d_.host.now_ns() + quanta_ns(kXoffQuanta) / 2;
}

// mask 0: an 802.3x PAUSE; else a PFC frame for those priorities.
void Pfc::send(uint8_t mask, uint16_t quanta) {
    const eth::Mac &src = d_.state.mac;
    if (mask == 0) {
        ++counters_.tx_pause;
        const auto f = eth::make_pause(src, quanta);
        d_.link.transmit(f);
        return;
    }
    eth::PfcInfo info;
    info.enable = mask;
    for (size_t i = 0; i < kPrios; ++i) {
        if ((mask & bit(i)) != 0) {
            info.quanta[i] = quanta;
            ++counters_.tx_pfc[i];
        }
    }
    const auto f = eth::make_pfc(src, info);
    d_.link.transmit(f);
}

} // namespace ohca
