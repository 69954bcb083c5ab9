// SPDX-License-Identifier: GPL-2.0-or-later
// VL arbitration (vlarb.hpp).
#include "ib/vlarb.hpp"

#include <algorithm>

namespace ohca::ib {

namespace {

bool takes(const VlArbEntry &e, uint16_t ready, uint8_t vls) {
    return e.weight != 0 && e.vl < vls && ((ready >> e.vl) & 1u) != 0;
}

} // namespace

bool VlArbiter::serves(const Table &t, size_t cap, uint16_t ready, uint8_t vls) {
    return std::any_of(t.begin(), t.begin() + static_cast<long>(cap),
                       [&](const VlArbEntry &e) { return takes(e, ready, vls); });
}

int VlArbiter::turn(Cursor &c, const Table &t, size_t cap, uint16_t ready, uint8_t vls) {
    if (c.left > 0 && c.active < cap && takes(t[c.active], ready, vls)) {
        return t[c.active].vl; // the turn goes on
    }
    c.left = 0; // used up, or its VL has nothing that may go: the turn ends
    for (size_t k = 0; k < cap; ++k) {
        const size_t i = (c.next + k) % cap;
        if (takes(t[i], ready, vls)) {
            c.active = static_cast<uint8_t>(i);
            c.next = static_cast<uint8_t>((i + 1) % cap);
            c.left = uint32_t{t[i].weight} * kWeightBytes;
            return t[i].vl;
        }
    }
    return -1;
}

bool VlArbiter::high_limit_reached(uint8_t limit) const {
    if (limit == kNoHighLimit) {
        return false;
    }
    return limit == 0 ? high_bytes_ > 0 : high_bytes_ >= uint32_t{limit} * kHighLimitBytes;
}

int VlArbiter::pick(uint16_t ready, const SmaPortState &port, uint8_t vls) {
    const PortInfo &i = port.info;
    const size_t high_cap = std::min<size_t>(i.vl_arb_high_cap, kVlArbEntries);
    const size_t low_cap = std::min<size_t>(i.vl_arb_low_cap, kVlArbEntries);
    const bool high = serves(port.vlarb_high, high_cap, ready, vls);
    const bool low = serves(port.vlarb_low, low_cap, ready, vls);
    if (!low) {
        high_bytes_ = 0; // the limit counts only while a low VL waits
    }
    from_high_ = high && !(low && high_limit_reached(i.vl_high_limit));
    if (from_high_) {
        return turn(high_, port.vlarb_high, high_cap, ready, vls);
    }
    return low ? turn(low_, port.vlarb_low, low_cap, ready, vls) : -1;
}

void VlArbiter::sent(size_t bytes) {
    Cursor &c = from_high_ ? high_ : low_;
    c.left = bytes >= c.left ? 0 : c.left - static_cast<uint32_t>(bytes);
    if (from_high_) {
        high_bytes_ = static_cast<uint32_t>(std::min<size_t>(high_bytes_ + bytes, 0xFFFFFFFFu));
    } else {
        high_bytes_ = 0;
    }
}

} // namespace ohca::ib
