// SPDX-License-Identifier: GPL-2.0-or-later
// Doorbell pages of BAR2 handed out as UARs; page 0 is the kernel's.
#pragma once

#include <ohca/ohca_regs.h>

#include "state/stream.hpp"

#include <array>
#include <bitset>
#include <cstdint>
#include <optional>

namespace ohca {

// Objects (CQs, QPs, SRQs) that ring on each page: no DEALLOC_UAR while
// any is left.
using UarRefs = std::array<uint32_t, OHCA_NUM_DB_PAGES>;

class UarTable {
  public:
    void reset() { used_.reset(); }

    // Lowest free page in 1..OHCA_NUM_DB_PAGES-1, without taking it.
    [[nodiscard]] std::optional<uint32_t> find_free() const;
    void take(uint32_t index);
    // False if index is 0, out of range or not allocated.
    bool release(uint32_t index);
    [[nodiscard]] bool allocated(uint32_t index) const;
    [[nodiscard]] uint32_t count() const { return static_cast<uint32_t>(used_.count()); }

    // Which pages are allocated (page 0 never is).
    void save(state::Writer &w) const;
    void load(state::Reader &r);

  private:
    std::bitset<OHCA_NUM_DB_PAGES> used_;
};

} // namespace ohca
