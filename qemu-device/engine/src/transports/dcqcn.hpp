// SPDX-License-Identifier: GPL-2.0-or-later
// DCQCN, RoCEv2's congestion control (Zhu et al., "Congestion Control for
// Large-Scale RDMA Deployments", SIGCOMM 2015), with mlx5's parameter set
// (docs/congestion.md). The notification point (NP) answers packets a
// switch marked CE with a CNP, at most one per QP per
// np_min_time_between_cnps; the reaction point (RP) keeps a rate per QP,
// cuts it on a CNP and recovers it in stages (fast recovery, additive and
// hyper-additive increase) driven by a timer and a byte counter; the QP's
// requester is paced to the rate. Everything here is pure state and
// arithmetic over a clock the caller passes, O(1) per event, no
// allocation: the device (device/wire_port.cpp) and the requester call it.
#pragma once

#include "link/roce_packet.hpp"

#include <ohca/ohca_cmd.h>

#include <array>
#include <cstddef>
#include <cstdint>

namespace ohca::dcqcn {

// A CNP's (kCnpOpcode, link/roce_packet.hpp) payload: 16 reserved bytes.
inline constexpr size_t kCnpPayloadLen = 16;
inline constexpr unsigned int kPriorities = 8;

// The parameters, indexed by enum ohca_cc_param; units as mlx5's.
struct Params {
    std::array<uint32_t, OHCA_CC_PARAM_MAX> v{};
    Params();
    [[nodiscard]] uint32_t operator[](unsigned int p) const { return v[p]; }
    // A value inside the parameter's range: stored, true.
    bool set(unsigned int p, uint32_t value);
    [[nodiscard]] bool rp_enabled(unsigned int prio) const {
        return prio < kPriorities && ((v[OHCA_CC_RP_ENABLE_MASK] >> prio) & 1) != 0;
    }
    [[nodiscard]] bool np_enabled(unsigned int prio) const {
        return prio < kPriorities && ((v[OHCA_CC_NP_ENABLE_MASK] >> prio) & 1) != 0;
    }
};

struct ParamSpec {
    const char *name; // mlx5's cc_params name
    uint32_t min;
    uint32_t max;
    uint32_t def;
};
[[nodiscard]] const ParamSpec &param_spec(unsigned int p);

// The DCQCN counters of the port (QUERY_STATS; mlx5's hw_counters names).
struct Counters {
    uint64_t np_ecn_marked_roce_packets = 0;
    uint64_t np_cnp_sent = 0;
    uint64_t rp_cnp_handled = 0;
    uint64_t rp_cnp_ignored = 0;
};

// The priority of a RoCE packet: its DSCP's class selector (DSCP >> 3,
// the default DSCP-to-priority map of a port that trusts DSCP; ohca's
// frames carry no 802.1Q priority).
[[nodiscard]] inline unsigned int priority_of_tclass(uint8_t traffic_class) {
    return traffic_class >> 5;
}

// Per QP reaction point state: rates in kb/s, alpha in 1/1024.
struct RpState {
    bool limited = false; // a CNP came: paced to rc; else line rate
    uint32_t rc_kbps = 0; // current rate
    uint32_t rt_kbps = 0; // target rate
    uint16_t alpha = 0;
    uint16_t t_stage = 0;  // timer increase events since the last cut
    uint16_t bc_stage = 0; // byte counter increase events since it
    bool cnp_in_alpha_period = false;
    bool increased = false; // the rate rose (as clamp_tgt_rate_ati counts) since the last cut
    uint32_t bytes = 0;     // sent towards the next byte counter event
    uint64_t timer_ns = 0;  // start of the current rate increase period
    uint64_t alpha_ns = 0;  // start of the current alpha update period
    uint64_t last_cut_ns = 0;
    uint64_t next_tx_ns = 0; // the pacer: when the next packet may go
};

// Per QP notification point state.
struct NpState {
    bool sent = false;
    uint64_t last_cnp_ns = 0;
};

struct QpState {
    RpState rp;
    NpState np;
};

// The rate increase event stages (the paper's figure 6).
enum class Stage : uint8_t { FastRecovery, Additive, HyperAdditive };

// The line rate the RP recovers to (the port's speed), in kb/s.
inline constexpr uint32_t kbps(uint32_t mbps) {
    return mbps * 1000u;
}

// The reaction point's algorithm over one QP's state.
class ReactionPoint {
  public:
    ReactionPoint(const Params &params, uint32_t line_kbps) : p_(params), line_kbps_(line_kbps) {}

    // A CNP for the QP at 'now': the alpha update and, at most once per
    // rp_rate_reduce_monitor_period, the cut. O(1) amortized; the rate
    // never goes below rp_min_rate.
    void on_cnp(RpState &s, uint64_t now) const;
    // The QP may send a packet now (or is not limited); else when it may.
    [[nodiscard]] bool may_send(RpState &s, uint64_t now, uint64_t &wake_ns) const;
    // A packet of 'bytes' went: the pacer and the byte counter.
    void on_sent(RpState &s, uint64_t now, size_t bytes) const;
    // The timer's increase events and alpha's decay up to 'now'.
    void advance(RpState &s, uint64_t now) const;
    [[nodiscard]] Stage stage(const RpState &s) const;

  private:
    void increase(RpState &s, bool by_timer) const;
    void update_alpha(RpState &s, uint64_t now) const;
    const Params &p_;
    uint32_t line_kbps_;
};

// The notification point: whether a CE-marked packet of a QP gets a CNP
// now (np_min_time_between_cnps per QP); records it if so.
[[nodiscard]] bool np_should_send(const Params &p, NpState &s, uint64_t now);

// The CNP to a QP (dest_qp: the sender's QP number): BTH opcode 0x81,
// BECN set, P_Key default, PSN 0; its payload is kCnpPayloadLen zero bytes.
[[nodiscard]] PacketFields cnp_fields(uint32_t dest_qp);

} // namespace ohca::dcqcn
