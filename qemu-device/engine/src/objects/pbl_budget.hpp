// SPDX-License-Identifier: GPL-2.0-or-later
// The device-wide budget of page-list entries (DeviceLimits::max_pbl_entries):
// every owner of rings or MRs charges what its page lists hold, so guest
// commands cannot grow host memory past it.
#pragma once

#include "device/limits.hpp"

#include <cstdint>

namespace ohca {

class PblBudget {
  public:
    // Entries a new page list may still take.
    [[nodiscard]] uint64_t room() const { return DeviceLimits::max_pbl_entries - used_; }
    [[nodiscard]] uint64_t used() const { return used_; }
    void charge(uint64_t n) { used_ += n; }
    void release(uint64_t n) { used_ -= n; }
    void reset() { used_ = 0; }

  private:
    uint64_t used_ = 0;
};

} // namespace ohca
