// SPDX-License-Identifier: GPL-2.0-or-later
// One Ethernet descriptor ring (TX or RX) in guest memory.
#pragma once

#include "state/stream.hpp"

#include <cstdint>

namespace ohca {

class EthRing {
  public:
    void reset() { *this = EthRing{}; }

    void create(uint64_t base, unsigned int log_size);
    void destroy() { reset(); }
    [[nodiscard]] bool exists() const { return log_size_ != 0; }

    // Producer doorbell: bits 15:0 the free-running producer index. False
    // (nothing changes) if other bits are set, there is no ring, or the
    // index is behind the current producer or more than a ring ahead of
    // the consumer.
    bool set_producer(uint32_t value);

    [[nodiscard]] uint32_t pending() const;
    [[nodiscard]] uint64_t slot_addr() const; // descriptor at the consumer
    void advance() { ci_ = static_cast<uint16_t>(ci_ + 1); }

    // A ring whose descriptors cannot be accessed stops until destroyed.
    void mark_broken() { broken_ = true; }
    [[nodiscard]] bool broken() const { return broken_; }

    [[nodiscard]] uint32_t size() const { return exists() ? 1u << log_size_ : 0; }
    [[nodiscard]] uint16_t producer() const { return pi_; }
    [[nodiscard]] uint16_t consumer() const { return ci_; }
    [[nodiscard]] uint64_t base() const { return base_; }

    void save(state::Writer &w) const;
    void load(state::Reader &r);

  private:
    uint64_t base_ = 0;
    unsigned int log_size_ = 0;
    uint16_t pi_ = 0;
    uint16_t ci_ = 0;
    bool broken_ = false;
};

} // namespace ohca
