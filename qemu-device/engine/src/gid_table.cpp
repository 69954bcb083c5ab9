// SPDX-License-Identifier: GPL-2.0-or-later
#include "gid_table.hpp"

namespace ohca {

void GidTable::set(uint32_t index, const GidEntry &entry) {
    if (index < kGidTableLen) {
        entries_[index] = entry;
    }
}

bool GidTable::clear(uint32_t index) {
    if (index >= kGidTableLen || !entries_[index]) {
        return false;
    }
    entries_[index].reset();
    return true;
}

const std::optional<GidEntry> &GidTable::get(uint32_t index) const {
    static const std::optional<GidEntry> none;
    return index < kGidTableLen ? entries_[index] : none;
}

uint32_t GidTable::count() const {
    uint32_t n = 0;
    for (const auto &e : entries_) {
        n += e ? 1 : 0;
    }
    return n;
}

bool gid_is_ipv4_mapped(const std::array<uint8_t, 16> &gid) {
    for (int i = 0; i < 10; ++i) {
        if (gid[i] != 0) {
            return false;
        }
    }
    return gid[10] == 0xff && gid[11] == 0xff;
}

} // namespace ohca
