// SPDX-License-Identifier: GPL-2.0-or-later
// The traps an InfiniBand port's SMA sends to the master SM (IBTA vol. 1
// 13.4.9 and 14.2.5.1; programming manual section 21, "Traps"): 144 when
// the capability mask the SM must know changed (SET_PORT_CAP), 257 when a
// packet's P_Key was not the port's. A trap goes out at once and again
// every SubnetTimeout until the SM answers with a TrapRepress of its TID.
//
// Bounded whatever the SM, the peers or the host do: one trap at most is
// pending (a newer 144 takes the place of a pending one, keeping its
// sends; anything else raised meanwhile is dropped and counted), each is
// sent at most kMaxSends times, and never more often than kMinPeriodNs.
// The state is one SMP and a few words: copying an IbPort (MAD_IFC works
// on a copy) copies it. The counters are the port's (IbPortCounters).
#pragma once

#include "ib/mad.hpp"

#include <cstdint>
#include <optional>

namespace ohca {

struct IbTrapCounters {
    uint64_t raised = 0;    // traps that took the pending slot
    uint64_t sent = 0;      // sends, repeats included
    uint64_t repressed = 0; // ended by the SM's TrapRepress
    uint64_t expired = 0;   // ended after kMaxSends without one
    uint64_t dropped = 0;   // raised while another was pending
};

class IbTraps {
  public:
    static constexpr uint8_t kMaxSends = 4;
    // A hostile SM's SubnetTimeout 0 (4 us) cannot make the port trap at
    // 250 000/s.
    static constexpr uint64_t kMinPeriodNs = 1'000'000;
    // Trap TIDs: this high half, then a sequence number.
    static constexpr uint64_t kTidBase = 0x0CA7ull << 48;
    static constexpr uint64_t kTidSeqMask = (1ull << 48) - 1;

    // A Notice to send (make it with ib::Sma::make_trap). 144 replaces a
    // pending 144 (the newer mask is what the SM must see) and any other
    // pending trap; another trap is dropped if one is pending. Its TID is
    // set here. False if dropped.
    bool raise(ib::Smp trap, IbTrapCounters &c);
    // The SM's TrapRepress: ends the pending trap with that TID. True if
    // it did.
    bool repress(uint64_t tid, IbTrapCounters &c);
    // The pending trap's next send, if due at 'now_ns' (a fresh one at
    // once): its MAD, and the next is scheduled 'period_ns' later (at
    // least kMinPeriodNs). After the last send the trap ends.
    std::optional<ib::Mad> due(uint64_t now_ns, uint64_t period_ns, IbTrapCounters &c);
    // When the next send is due: 0 for none, 1 for at once.
    [[nodiscard]] uint64_t deadline() const;
    [[nodiscard]] bool pending() const { return pending_.has_value(); }
    [[nodiscard]] uint16_t pending_number() const;
    // Power-on: nothing pending.
    void clear() { pending_.reset(); }

  private:
    struct Pending {
        ib::Smp smp;
        uint8_t sends = 0;
        uint64_t next_ns = 0; // 0: not sent yet
    };
    std::optional<Pending> pending_;
    uint64_t seq_ = 0;
};

} // namespace ohca
