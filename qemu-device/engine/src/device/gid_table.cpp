// SPDX-License-Identifier: GPL-2.0-or-later
#include "device/gid_table.hpp"

namespace ohca {

void GidTable::set(uint32_t index, const GidEntry &entry) {
    if (index < kGidTableLen) {
        entries_[index] = entry;
        std::memcpy(words_[index].data(), entry.gid.data(), sizeof(words_[index]));
        valid_ |= 1u << index;
    }
}

bool GidTable::clear(uint32_t index) {
    if (index >= kGidTableLen || !entries_[index]) {
        return false;
    }
    entries_[index].reset();
    valid_ &= ~(1u << index);
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

bool GidTable::contains(const std::array<uint8_t, 16> &gid) const {
    std::array<uint64_t, 2> w{};
    std::memcpy(w.data(), gid.data(), sizeof(w));
    for (uint32_t m = valid_; m != 0; m &= m - 1) {
        const auto &e = words_[static_cast<unsigned int>(__builtin_ctz(m))];
        if (e[0] == w[0] && e[1] == w[1]) {
            return true;
        }
    }
    return false;
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
