// SPDX-License-Identifier: GPL-2.0-or-later
#include "ib/crc.hpp"

#include <array>

namespace ohca::ib {
namespace {

// Reflected polynomials: 0x04C11DB7 and 0x100B with their bits reversed.
constexpr uint32_t kPoly32 = 0xEDB88320u;
constexpr uint16_t kPoly16 = 0xD008u;

template <typename T, T Poly> constexpr std::array<T, 256> make_table() {
    std::array<T, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
        T c = static_cast<T>(i);
        for (int k = 0; k < 8; ++k) {
            c = static_cast<T>((c & 1u) != 0 ? (c >> 1) ^ Poly : c >> 1);
        }
        t[i] = c;
    }
    return t;
}

constexpr auto kTable32 = make_table<uint32_t, kPoly32>();
constexpr auto kTable16 = make_table<uint16_t, kPoly16>();

} // namespace

uint32_t crc32_update(uint32_t reg, std::span<const uint8_t> data) {
    for (uint8_t b : data) {
        reg = kTable32[(reg ^ b) & 0xFFu] ^ (reg >> 8);
    }
    return reg;
}

uint16_t crc16_update(uint16_t reg, std::span<const uint8_t> data) {
    for (uint8_t b : data) {
        reg = static_cast<uint16_t>(kTable16[(reg ^ b) & 0xFFu] ^ (reg >> 8));
    }
    return reg;
}

} // namespace ohca::ib
