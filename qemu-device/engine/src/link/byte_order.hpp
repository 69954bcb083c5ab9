// SPDX-License-Identifier: GPL-2.0-or-later
// Little-endian conversion of interface fields (all of them are LE).
#pragma once

#include <bit>
#include <concepts>
#include <cstdint>

namespace ohca {

template <std::unsigned_integral T> constexpr T byteswap(T v) {
    if constexpr (sizeof(T) == 1) {
        return v;
    } else if constexpr (sizeof(T) == 2) {
        return static_cast<T>(__builtin_bswap16(v));
    } else if constexpr (sizeof(T) == 4) {
        return static_cast<T>(__builtin_bswap32(v));
    } else {
        return static_cast<T>(__builtin_bswap64(v));
    }
}

// Host value <-> little-endian field; the same operation both ways.
template <std::unsigned_integral T> constexpr T le(T v) {
    if constexpr (std::endian::native == std::endian::little) {
        return v;
    } else {
        return byteswap(v);
    }
}

} // namespace ohca
