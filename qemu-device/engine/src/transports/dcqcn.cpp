// SPDX-License-Identifier: GPL-2.0-or-later
// DCQCN's reaction and notification points (dcqcn.hpp). The RP's timers
// are evaluated lazily: whenever a QP is looked at (a CNP, a packet to
// send) the rate increase periods and alpha periods that ended since are
// applied, so an idle QP costs nothing and the only real timer is the
// pacer's wake-up (the run loop's pace heap).
#include "transports/dcqcn.hpp"

#include "device/limits.hpp"

#include <algorithm>

namespace ohca::dcqcn {

namespace {

constexpr uint32_t kMaxRateMbps = DeviceLimits::cc_max_rate_mbps;
constexpr uint64_t kNsPerUs = 1000;
// Increase periods applied at once; a QP silent for longer than this many
// rp_time_reset periods is back at line rate (unlimited).
constexpr uint64_t kMaxCatchUp = 1024;
// Alpha reaches 0 from 1023 within 1024 decays of any g.
constexpr uint64_t kMaxAlphaDecays = 1024;
// Byte counter events one packet may cause (rp_byte_reset can be small).
constexpr unsigned int kMaxByteEvents = 16;
// What the pacer lets a QP catch up after its wake-up came late.
constexpr uint64_t kBurstNs = 10000;

// The RP is off by default: until it is enabled, packets carry the
// traffic class exactly as the address vector gives it (docs/wire-format.md,
// and the tests that check it); the NP is on, so a peer whose RP is on gets
// CNPs (docs/congestion.md, "Turning it on and off").
constexpr std::array<ParamSpec, OHCA_CC_PARAM_MAX> kSpecs = {{
    {"rp_enable_mask", 0, 0xff, 0},
    {"np_enable_mask", 0, 0xff, 0xff},
    {"rp_clamp_tgt_rate", 0, 1, 0},
    {"rp_clamp_tgt_rate_ati", 0, 1, 1},
    {"rp_time_reset", 1, 131071, 300},
    {"rp_byte_reset", 0, 32767, 32767},
    {"rp_threshold", 1, 31, 1},
    {"rp_ai_rate", 1, kMaxRateMbps, 5},
    {"rp_hai_rate", 1, kMaxRateMbps, 50},
    {"rp_min_dec_fac", 1, 100, 50},
    {"rp_min_rate", 1, kMaxRateMbps, 1},
    {"rp_rate_to_set_on_first_cnp", 0, kMaxRateMbps, 0},
    {"rp_dce_tcp_g", 0, 1023, 1019},
    {"rp_dce_tcp_rtt", 1, 131071, 1},
    {"rp_rate_reduce_monitor_period", 0, 131071, 4},
    {"rp_initial_alpha_value", 0, 1023, 1023},
    {"rp_gd", 0, 15, 11},
    {"np_min_time_between_cnps", 0, 4095, 4},
    {"np_cnp_dscp", 0, 63, 48},
    {"np_cnp_prio_mode", 0, 1, 1},
    {"np_cnp_prio", 0, 7, 6},
}};

uint16_t sat_inc(uint16_t x) {
    return x == UINT16_MAX ? x : static_cast<uint16_t>(x + 1);
}

} // namespace

const ParamSpec &param_spec(unsigned int p) {
    return kSpecs.at(p);
}

Params::Params() {
    for (unsigned int i = 0; i < OHCA_CC_PARAM_MAX; ++i) {
        v[i] = kSpecs[i].def;
    }
}

bool Params::set(unsigned int p, uint32_t value) {
    if (p >= OHCA_CC_PARAM_MAX || value < kSpecs[p].min || value > kSpecs[p].max) {
        return false;
    }
    v[p] = value;
    return true;
}

// ---- reaction point ------------------------------------------------------------

// Every rp_dce_tcp_rtt: alpha = g' alpha + (1 - g'), g' = rp_dce_tcp_g /
// 1024, if a CNP came in the period, else alpha = g' alpha (the paper's
// alpha = (1 - g) alpha + g, and its decay, with g = 1 - g').
void ReactionPoint::update_alpha(RpState &s, uint64_t now) const {
    const uint64_t period = uint64_t{p_[OHCA_CC_RP_DCE_TCP_RTT]} * kNsPerUs;
    if (now < s.alpha_ns + period) {
        return;
    }
    const uint64_t n = (now - s.alpha_ns) / period;
    s.alpha_ns += n * period;
    const uint32_t g = p_[OHCA_CC_RP_DCE_TCP_G];
    uint32_t a = s.alpha;
    a = (a * g) / 1024 + (s.cnp_in_alpha_period ? 1024 - g : 0);
    s.cnp_in_alpha_period = false;
    for (uint64_t i = 1; i < std::min(n, kMaxAlphaDecays) && a != 0; ++i) {
        a = (a * g) / 1024;
    }
    if (n >= kMaxAlphaDecays) {
        a = 0;
    }
    s.alpha = static_cast<uint16_t>(std::min<uint32_t>(a, 1023));
}

Stage ReactionPoint::stage(const RpState &s) const {
    const uint32_t f = p_[OHCA_CC_RP_THRESHOLD];
    if (std::max(s.t_stage, s.bc_stage) <= f) {
        return Stage::FastRecovery;
    }
    return std::min(s.t_stage, s.bc_stage) > f ? Stage::HyperAdditive : Stage::Additive;
}

// One rate increase event (its stage counter already advanced): the
// target rises by the stage's step (none in fast recovery), the current
// rate halves its distance to the target.
void ReactionPoint::increase(RpState &s, bool by_timer) const {
    const Stage st = stage(s);
    uint64_t rt = s.rt_kbps;
    if (st == Stage::Additive) {
        rt += kbps(p_[OHCA_CC_RP_AI_RATE]);
    } else if (st == Stage::HyperAdditive) {
        rt += kbps(p_[OHCA_CC_RP_HAI_RATE]);
    }
    s.rt_kbps = static_cast<uint32_t>(std::min<uint64_t>(rt, line_kbps_));
    s.rc_kbps = static_cast<uint32_t>((uint64_t{s.rt_kbps} + s.rc_kbps + 1) / 2);
    if (!by_timer || p_[OHCA_CC_RP_CLAMP_TGT_RATE_ATI] != 0) {
        s.increased = true;
    }
    if (s.rc_kbps >= line_kbps_) {
        s = RpState{}; // recovered: back to line rate, the pacer off
    }
}

void ReactionPoint::advance(RpState &s, uint64_t now) const {
    if (!s.limited) {
        return;
    }
    update_alpha(s, now);
    const uint64_t period = uint64_t{p_[OHCA_CC_RP_TIME_RESET]} * kNsPerUs;
    if (now < s.timer_ns + period) {
        return;
    }
    const uint64_t n = (now - s.timer_ns) / period;
    if (n > kMaxCatchUp) {
        s = RpState{};
        return;
    }
    s.timer_ns += n * period;
    for (uint64_t i = 0; i < n && s.limited; ++i) {
        s.t_stage = sat_inc(s.t_stage);
        increase(s, true);
    }
}

void ReactionPoint::on_cnp(RpState &s, uint64_t now) const {
    bool cut = true;
    if (!s.limited) {
        // The first CNP: the QP was at line rate.
        const uint32_t first = p_[OHCA_CC_RP_RATE_TO_SET_ON_FIRST_CNP];
        s = RpState{};
        s.limited = true;
        s.rc_kbps = first != 0 ? std::min(kbps(first), line_kbps_) : line_kbps_;
        s.rt_kbps = s.rc_kbps;
        s.alpha = static_cast<uint16_t>(p_[OHCA_CC_RP_INITIAL_ALPHA_VALUE]);
        s.alpha_ns = now;
        s.timer_ns = now;
        s.next_tx_ns = now;
        s.last_cut_ns = now;
        s.increased = true;
        cut = first == 0;
    } else {
        advance(s, now);
        if (!s.limited) {
            on_cnp(s, now); // recovered meanwhile: this is a first CNP again
            return;
        }
        cut = now - s.last_cut_ns >= uint64_t{p_[OHCA_CC_RP_RATE_REDUCE_MONITOR_PERIOD]} * kNsPerUs;
    }
    s.cnp_in_alpha_period = true;
    if (!cut) {
        return;
    }
    if (p_[OHCA_CC_RP_CLAMP_TGT_RATE] != 0 || s.increased) {
        s.rt_kbps = s.rc_kbps;
    }
    // Rc = Rc (1 - alpha / 2^rp_gd): with alpha in 1/1024 and rp_gd 11,
    // the paper's Rc (1 - alpha / 2); at most down to rp_min_dec_fac
    // percent, never below rp_min_rate.
    const uint64_t rc = s.rc_kbps;
    uint64_t next = rc - ((rc * s.alpha) >> p_[OHCA_CC_RP_GD]);
    next = std::max(next, rc * p_[OHCA_CC_RP_MIN_DEC_FAC] / 100);
    next = std::max<uint64_t>(next, kbps(p_[OHCA_CC_RP_MIN_RATE]));
    s.rc_kbps = static_cast<uint32_t>(std::min<uint64_t>(next, line_kbps_));
    s.t_stage = 0;
    s.bc_stage = 0;
    s.bytes = 0;
    s.timer_ns = now;
    s.last_cut_ns = now;
    s.increased = false;
}

bool ReactionPoint::may_send(RpState &s, uint64_t now, uint64_t &wake_ns) const {
    if (!s.limited) {
        return true;
    }
    advance(s, now);
    if (!s.limited || now >= s.next_tx_ns) {
        return true;
    }
    wake_ns = s.next_tx_ns;
    return false;
}

void ReactionPoint::on_sent(RpState &s, uint64_t now, size_t bytes) const {
    if (!s.limited) {
        return;
    }
    const uint64_t base = std::max(s.next_tx_ns, now > kBurstNs ? now - kBurstNs : 0);
    s.next_tx_ns = base + uint64_t{bytes} * 8 * 1000000 / std::max<uint32_t>(s.rc_kbps, 1);
    const uint32_t reset = p_[OHCA_CC_RP_BYTE_RESET];
    if (reset == 0) {
        return;
    }
    s.bytes += static_cast<uint32_t>(std::min<size_t>(bytes, UINT32_MAX / 2));
    for (unsigned int i = 0; i < kMaxByteEvents && s.bytes >= reset && s.limited; ++i) {
        s.bytes -= reset;
        s.bc_stage = sat_inc(s.bc_stage);
        increase(s, false);
    }
    if (s.limited) {
        s.bytes %= reset;
    }
}

// ---- notification point -----------------------------------------------------------

bool np_should_send(const Params &p, NpState &s, uint64_t now) {
    const uint64_t gap = uint64_t{p[OHCA_CC_NP_MIN_TIME_BETWEEN_CNPS]} * kNsPerUs;
    if (s.sent && now - s.last_cnp_ns < gap) {
        return false;
    }
    s.sent = true;
    s.last_cnp_ns = now;
    return true;
}

PacketFields cnp_fields(uint32_t dest_qp) {
    PacketFields f;
    f.bth.opcode = kCnpOpcode;
    f.bth.becn = true;
    f.bth.dest_qp = dest_qp & kPsnMask;
    f.bth.psn = 0;
    return f;
}

} // namespace ohca::dcqcn
