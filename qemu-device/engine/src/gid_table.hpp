// SPDX-License-Identifier: GPL-2.0-or-later
// The port's source GID table (programmed by ADD_GID / DEL_GID).
#pragma once

#include <array>
#include <cstdint>
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
    void reset() { entries_.fill(std::nullopt); }

    void set(uint32_t index, const GidEntry &entry);
    // False if index is out of range or the entry is empty.
    bool clear(uint32_t index);
    [[nodiscard]] const std::optional<GidEntry> &get(uint32_t index) const;
    [[nodiscard]] uint32_t count() const;

  private:
    std::array<std::optional<GidEntry>, kGidTableLen> entries_{};
};

// Whether a GID is an IPv4-mapped IPv6 address (::ffff:a.b.c.d).
bool gid_is_ipv4_mapped(const std::array<uint8_t, 16> &gid);

} // namespace ohca
