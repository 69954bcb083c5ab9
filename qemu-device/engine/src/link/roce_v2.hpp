// SPDX-License-Identifier: GPL-2.0-or-later
// RoCEv2 (roce_v2.cpp): the link layer below the BTH on today's wire, as
// a LinkLayer for the device and as free functions for tests and tools.
#pragma once

#include "link/link_layer.hpp"
#include "link/roce_packet.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ohca {

inline constexpr uint16_t kRoceUdpPort = 4791;

// Ethernet, IP and UDP headers, then the IB headers; the ICRC is sealed
// once the payload is in place.
FrameLayout build_roce_headers(std::vector<uint8_t> &f, const PacketPath &path,
                               const PacketFields &fields, size_t payload_len);
void seal_roce_frame(std::span<uint8_t> f, const FrameLayout &layout);
std::vector<uint8_t> build_roce_frame(const PacketPath &path, const PacketFields &fields,
                                      std::span<const uint8_t> payload);
ParseError parse_roce_frame(std::span<const uint8_t> frame, ParsedPacket &out);
// Whether an Ethernet frame is UDP to the RoCEv2 port.
[[nodiscard]] bool is_roce_v2_frame(std::span<const uint8_t> frame);

uint32_t crc32_update(uint32_t crc, std::span<const uint8_t> data);
// The ICRC of a frame whose IP header starts at l3: the variant fields of
// IP (TOS/traffic class, flow label, TTL/hop limit, checksum), the UDP
// checksum and the BTH's resv8a are masked with ones.
uint32_t compute_icrc(std::span<const uint8_t> frame, size_t l3, bool ipv6);

class RoceV2Link final : public LinkLayer {
  public:
    FrameLayout build(std::vector<uint8_t> &frame, const PacketPath &path,
                      const PacketFields &fields, size_t payload_len) const override;
    void seal(std::span<uint8_t> frame, const FrameLayout &layout) const override;
    ParseError parse(std::span<const uint8_t> frame, ParsedPacket &out) const override;
    [[nodiscard]] bool claims(std::span<const uint8_t> frame) const override;
};

// The device's default link layer.
const LinkLayer &roce_v2_link();

} // namespace ohca
