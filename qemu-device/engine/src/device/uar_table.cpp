// SPDX-License-Identifier: GPL-2.0-or-later
#include "device/uar_table.hpp"

namespace ohca {

std::optional<uint32_t> UarTable::find_free() const {
    for (uint32_t i = 1; i < OHCA_NUM_DB_PAGES; ++i) {
        if (!used_.test(i)) {
            return i;
        }
    }
    return std::nullopt;
}

void UarTable::take(uint32_t index) {
    if (index != 0 && index < OHCA_NUM_DB_PAGES) {
        used_.set(index);
    }
}

bool UarTable::release(uint32_t index) {
    if (!allocated(index)) {
        return false;
    }
    used_.reset(index);
    return true;
}

bool UarTable::allocated(uint32_t index) const {
    return index != 0 && index < OHCA_NUM_DB_PAGES && used_.test(index);
}

} // namespace ohca
