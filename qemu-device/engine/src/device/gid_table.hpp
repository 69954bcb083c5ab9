// SPDX-License-Identifier: GPL-2.0-or-later
// The port's source GID table (programmed by ADD_GID / DEL_GID).
#pragma once

#include "state/stream.hpp"

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>

namespace ohca {

inline constexpr uint32_t kGidTableLen = 16;
inline constexpr uint16_t kNoVlan = 0xffff;

struct GidEntry {
    std::array<uint8_t, 16> gid{};
    uint8_t type = 0; // enum ohca_gid_type
    std::array<uint8_t, 6> mac{};
    uint16_t vlan_id = kNoVlan;

    friend bool operator==(const GidEntry &, const GidEntry &) = default;
};

class GidTable {
  public:
    void reset() {
        entries_.fill(std::nullopt);
        valid_ = 0;
    }

    void set(uint32_t index, const GidEntry &entry);
    // False if index is out of range or the entry is empty.
    bool clear(uint32_t index);
    [[nodiscard]] const std::optional<GidEntry> &get(uint32_t index) const;
    [[nodiscard]] uint32_t count() const;
    // Whether 'gid' is in the table: asked twice per RoCE packet (is it
    // ours? then loop it back; was it for us?), so it compares the valid
    // entries only, as two 64-bit words each.
    [[nodiscard]] bool contains(const std::array<uint8_t, 16> &gid) const;

    void save(state::Writer &w) const;
    void load(state::Reader &r);

  private:
    std::array<std::optional<GidEntry>, kGidTableLen> entries_{};
    std::array<std::array<uint64_t, 2>, kGidTableLen> words_{}; // the GIDs of entries_
    uint32_t valid_ = 0;                                        // bit i: entries_[i] is set
};

// Two GIDs equal (two 64-bit compares, not a memcmp call per packet).
inline bool gid_equal(const std::array<uint8_t, 16> &a, const std::array<uint8_t, 16> &b) {
    uint64_t x[2];
    uint64_t y[2];
    std::memcpy(x, a.data(), sizeof(x));
    std::memcpy(y, b.data(), sizeof(y));
    return ((x[0] ^ y[0]) | (x[1] ^ y[1])) == 0;
}

// Whether a GID is an IPv4-mapped IPv6 address (::ffff:a.b.c.d).
bool gid_is_ipv4_mapped(const std::array<uint8_t, 16> &gid);

} // namespace ohca
