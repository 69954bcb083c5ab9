// SPDX-License-Identifier: GPL-2.0-or-later
// CRC-32 as RoCE's ICRC uses it: the IEEE 802.3 polynomial 0x04c11db7,
// reflected (bytes enter least significant bit first). Not CRC-32C: SSE4.2's
// crc32 instruction computes the other polynomial.
//
// The functions update a CRC register without the initial and final
// inversions (the caller applies them), so crc32 of data with seed c is
// ~update(~c, data) in zlib's terms.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ohca::crc32 {

// One bit at a time: the reference the others are tested against.
uint32_t update_bitwise(uint32_t crc, std::span<const uint8_t> data);
// Eight table lookups per 8 bytes; any CPU.
uint32_t update_slice8(uint32_t crc, std::span<const uint8_t> data);
// Carry-less multiplication (x86-64 PCLMULQDQ) folding 64 bytes at a time;
// only call it when pclmul_supported().
uint32_t update_pclmul(uint32_t crc, std::span<const uint8_t> data);
[[nodiscard]] bool pclmul_supported();

// The fastest implementation this CPU runs, chosen once.
uint32_t update(uint32_t crc, std::span<const uint8_t> data);
// Which one update() uses ("pclmul" or "slice8").
[[nodiscard]] const char *implementation();

} // namespace ohca::crc32
