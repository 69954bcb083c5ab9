// SPDX-License-Identifier: GPL-2.0-or-later
// VL arbitration of an InfiniBand port's own transmit side (IBTA vol. 1
// 7.6.9): the run loop's ready QPs kept in one list per VL (a QP's VL is
// its address vector's SL through the port's SL2VL table), and each turn
// given to the VL the port's VLArbitration tables choose (fabric/ib's
// VlArbiter: the high table first up to VLHighLimit, weights in 64-byte
// units, a weight-0 entry or a VL in no table never served). The bytes a
// visit made are what the turn is charged.
//
// QP0 (VL15) goes first, outside the tables. A QP whose SL maps to no VL
// in operation waits in a list the tables never serve (its packets would
// otherwise go out on VL15, which carries no data). While one VL only has
// ready QPs, a visit has the run loop's whole quantum, as on Ethernet;
// while several have, one unit, so the turns follow the weights packet
// by packet. A VL whose QPs all made no progress in a round (no credit,
// no room to loop back) is passed over for the rest of it: it holds up
// no other VL.
//
// Bounded: a decision scans the two tables once; the lists are intrusive
// (the QP's SchedHook), so pushing and taking a QP never allocate.
#pragma once

#include "device/sched.hpp"
#include "ib/vlarb.hpp"

#include <array>
#include <cstddef>
#include <cstdint>

namespace ohca {

class IbWire;

// The arbiter's counters, for tests.
struct VlArbStats {
    uint64_t contended_picks = 0; // turns decided between several VLs
    uint64_t passed_over = 0;     // VLs passed over for a round: no progress
    uint64_t rehomed = 0;         // QPs moved: the SL2VL table changed
};

class QpVlArbiter {
  public:
    static constexpr uint8_t kUnmapped = 15; // data QPs on an SL mapped to VL15
    static constexpr uint8_t kSmi = 16;      // QP0's list
    static constexpr size_t kLists = 17;

    explicit QpVlArbiter(const IbWire &wire) : wire_(wire) {}

    void push(Qp &qp);
    void remove(Qp &qp);
    void clear();
    [[nodiscard]] bool empty() const { return size_ == 0; }
    [[nodiscard]] size_t size() const { return size_; }

    // A round of the run loop starts: every VL may be tried again (and
    // QPs move to their VL if the SL2VL table changed).
    void begin_round();
    // The next QP to visit and its 'quantum' (at most the one given);
    // nullptr when no VL may go for the rest of the round.
    Qp *next(unsigned int &quantum);
    // The visit of next()'s QP ended having used 'units' of its quantum.
    void visited(unsigned int units);
    // Whether every ready QP waits on a VL the tables do not serve: only
    // the SM (a Set) lets them go, not another run.
    [[nodiscard]] bool only_unserved() const;
    [[nodiscard]] const VlArbStats &stats() const { return stats_; }
    // Link (re)initialization: the tables' first entries again.
    void reset_turns() { arb_.reset(); }

  private:
    // Data VLs with ready QPs.
    [[nodiscard]] uint16_t queued_mask() const;
    // Moves every queued data QP to its VL's list.
    void rehome();
    // The SL2VL table, a nibble an SL.
    [[nodiscard]] uint64_t sl2vl_key() const;

    const IbWire &wire_;
    std::array<ReadyList, kLists> lists_;
    size_t size_ = 0;
    ib::VlArbiter arb_;
    uint16_t passed_ = 0; // passed over for the rest of the round
    std::array<uint16_t, kLists> misses_{};
    uint8_t picked_ = 0; // the list of the QP next() returned
    uint64_t bytes_before_ = 0;
    // The SL2VL table and the VLs in operation the lists were made by.
    uint64_t sl2vl_ = 0;
    uint8_t vls_ = 0;
    VlArbStats stats_;
};

} // namespace ohca
