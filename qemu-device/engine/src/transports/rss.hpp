// SPDX-License-Identifier: GPL-2.0-or-later
// Receive-side scaling: the Toeplitz hash (Microsoft's RSS definition) of
// the fields of a frame an RSS QP chooses (ohca_rss_fields, mlx5's rules:
// source address, destination address, source port, destination port,
// in that order, each in network byte order).
#pragma once

#include <ohca/ohca_cmd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace ohca {

using RssKey = std::array<uint8_t, OHCA_RSS_KEY_LEN>;

// The Toeplitz hash of 'input' with 'key'; the key must be at least 4 bytes
// longer than the input (36 bytes at most with a 40-byte key).
uint32_t toeplitz_hash(std::span<const uint8_t> key, std::span<const uint8_t> input);

// The hash input of 'frame' for 'fields' into 'out' (at most 36 bytes):
// its length. Fields the frame does not have (another IP version, another
// L4 protocol, a later fragment's ports) are left out.
size_t rss_input(std::span<const uint8_t> frame, uint32_t fields, std::array<uint8_t, 36> &out);

// The hash of 'frame' as an RSS QP with 'fields' and 'key' computes it.
uint32_t rss_hash(std::span<const uint8_t> frame, uint32_t fields, const RssKey &key);

// Whether 'fields' is a set CREATE_RSS_QP takes: known bits, one IP
// version, one L4 protocol, at least one field.
bool rss_fields_valid(uint32_t fields);

} // namespace ohca
