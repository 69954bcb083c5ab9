// SPDX-License-Identifier: GPL-2.0-or-later
// VL arbitration of an output port (IBTA vol. 1 7.6.9): which data VL
// sends next, by the port's VLArbitrationTable as the SM set it (sma.hpp:
// SmaPortState's vlarb_high and vlarb_low, PortInfo's VLHighLimit).
//
// Each table is a list of (VL, weight) entries; an entry's turn lets its
// VL send up to weight x 64 bytes (a packet that began within them ends
// even beyond), then the next entry of the table takes the turn. An entry
// of weight 0, of a VL not in operation, or whose VL has nothing that may
// go now (no packet, or no credit) is passed over at once, so it holds up
// no other VL. The high-priority table goes first while one of its VLs is
// ready, but after VLHighLimit x 4096 bytes of it (0: one packet; 255: no
// limit) a ready low-priority VL sends one packet. A VL in neither table
// (or only with weight 0) is never served: its packets wait, as IBTA says.
//
// Bounded: a decision scans each table once (at most kVlArbEntries
// entries); the state is two cursors and a counter. Whatever a hostile SM
// writes into the tables, pick() returns a ready VL or none.
#pragma once

#include "ib/sma.hpp"

#include <cstddef>
#include <cstdint>

namespace ohca::ib {

class VlArbiter {
  public:
    static constexpr uint32_t kWeightBytes = 64;      // a weight unit
    static constexpr uint32_t kHighLimitBytes = 4096; // a VLHighLimit unit
    static constexpr uint8_t kNoHighLimit = 255;

    // The data VL to send next of those in 'ready' (bit v: VL v has a
    // packet that may go now), by port's tables over its 'vls' data VLs;
    // -1 if the tables serve none of them. The caller sends one packet
    // of that VL and reports it with sent().
    [[nodiscard]] int pick(uint16_t ready, const SmaPortState &port, uint8_t vls);
    // The packet of 'bytes' (LRH to VCRC) the last pick() chose was sent.
    void sent(size_t bytes);
    // A link that comes up starts from the tables' first entries.
    void reset() { *this = VlArbiter{}; }

  private:
    struct Cursor {
        uint8_t active = 0; // the entry whose turn it is, while left > 0
        uint8_t next = 0;   // where the search for the next turn starts
        uint32_t left = 0;  // bytes the active entry may still send
    };
    using Table = std::array<VlArbEntry, kVlArbEntries>;
    [[nodiscard]] static bool serves(const Table &t, size_t cap, uint16_t ready, uint8_t vls);
    static int turn(Cursor &c, const Table &t, size_t cap, uint16_t ready, uint8_t vls);
    [[nodiscard]] bool high_limit_reached(uint8_t limit) const;

    Cursor high_;
    Cursor low_;
    uint32_t high_bytes_ = 0; // sent from the high table since a low one could go
    bool from_high_ = false;  // the last pick's table
};

} // namespace ohca::ib
