// SPDX-License-Identifier: GPL-2.0-or-later
// The SMA's pending trap (ib_traps.hpp).
#include "device/ib_traps.hpp"

#include <algorithm>

namespace ohca {

namespace {

uint16_t number_of(const ib::Smp &s) {
    return ib::Notice::read(s.data).trap_number;
}

} // namespace

bool IbTraps::raise(ib::Smp trap, IbTrapCounters &c) {
    const bool is_144 = number_of(trap) == ib::trap::CapabilityMaskChange;
    if (pending_ && !is_144) {
        ++c.dropped;
        return false;
    }
    trap.hdr.tid = kTidBase | (++seq_ & kTidSeqMask);
    if (pending_ && number_of(pending_->smp) == ib::trap::CapabilityMaskChange) {
        // The newer mask in place of the older, on the same budget of
        // sends: a host that flips its bits cannot make the trap endless.
        pending_->smp = trap;
        return true;
    }
    if (pending_) {
        ++c.dropped; // the SM must hear of the mask first
    }
    pending_ = Pending{trap, 0, 0};
    ++c.raised;
    return true;
}

bool IbTraps::repress(uint64_t tid, IbTrapCounters &c) {
    // Only the trap as it is now: a repress of a replaced 144's TID leaves
    // the newer mask to be sent.
    if (!pending_ || pending_->smp.hdr.tid != tid) {
        return false;
    }
    pending_.reset();
    ++c.repressed;
    return true;
}

std::optional<ib::Mad> IbTraps::due(uint64_t now_ns, uint64_t period_ns, IbTrapCounters &c) {
    if (!pending_ || (pending_->sends != 0 && now_ns < pending_->next_ns)) {
        return std::nullopt;
    }
    ib::Mad m{};
    pending_->smp.write(m);
    ++pending_->sends;
    ++c.sent;
    if (pending_->sends >= kMaxSends) {
        pending_.reset();
        ++c.expired;
    } else {
        pending_->next_ns = now_ns + std::max(period_ns, kMinPeriodNs);
    }
    return m;
}

uint64_t IbTraps::deadline() const {
    if (!pending_) {
        return 0;
    }
    return pending_->sends == 0 ? 1 : pending_->next_ns;
}

uint16_t IbTraps::pending_number() const {
    return pending_ ? number_of(pending_->smp) : 0;
}

} // namespace ohca
