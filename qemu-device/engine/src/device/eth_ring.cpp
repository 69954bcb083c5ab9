// SPDX-License-Identifier: GPL-2.0-or-later
#include "device/eth_ring.hpp"

#include <ohca/ohca_queue.h>
#include <ohca/ohca_regs.h>

namespace ohca {

void EthRing::create(uint64_t base, unsigned int log_size) {
    reset();
    base_ = base;
    log_size_ = log_size;
}

bool EthRing::set_producer(uint32_t value) {
    if (!exists() || (value & ~OHCA_RING_INDEX_MASK) != 0) {
        return false;
    }
    const auto pi = static_cast<uint16_t>(value);
    // The new index must lie between the current producer (indices never
    // move back) and one ring ahead of the consumer.
    const auto ahead = static_cast<uint16_t>(pi - ci_);
    if (ahead > size() || ahead < static_cast<uint16_t>(pi_ - ci_)) {
        return false;
    }
    pi_ = pi;
    return true;
}

uint32_t EthRing::pending() const {
    if (!exists() || broken_) {
        return 0;
    }
    return static_cast<uint16_t>(pi_ - ci_);
}

uint64_t EthRing::slot_addr() const {
    return base_ + uint64_t{static_cast<uint32_t>(ci_) & (size() - 1)} * sizeof(ohca_eth_desc);
}

} // namespace ohca
