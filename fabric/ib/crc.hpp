// SPDX-License-Identifier: GPL-2.0-or-later
// The three CRCs of the InfiniBand link layer (IBTA Vol 1 §7.8, §7.9.4):
//
//  ICRC   CRC-32, the IEEE 802.3 polynomial 0x04C11DB7, reflected (bytes
//         enter least significant bit first), initial value all ones, the
//         result inverted; it goes on the wire least significant byte first
//         (the same convention as RoCE's ICRC and Ethernet's FCS).
//  VCRC   CRC-16, polynomial 0x100B (x^16+x^12+x^3+x+1), with the same
//         conventions: reflected (0xD008), all ones in, result inverted,
//         least significant byte first on the wire.
//  LPCRC  the VCRC's CRC over the first 4 bytes of a link packet.
//
// The functions here run over plain bytes; which fields are masked for the
// ICRC is packet.hpp's business.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ohca::ib {

// Register-level updates, without the initial/final inversions.
uint32_t crc32_update(uint32_t reg, std::span<const uint8_t> data);
uint16_t crc16_update(uint16_t reg, std::span<const uint8_t> data);

// Complete CRCs (all ones in, inverted out).
inline uint32_t crc32(std::span<const uint8_t> data) {
    return ~crc32_update(0xFFFFFFFFu, data);
}
inline uint16_t crc16(std::span<const uint8_t> data) {
    return static_cast<uint16_t>(~crc16_update(0xFFFF, data));
}

} // namespace ohca::ib
