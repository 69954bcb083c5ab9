// SPDX-License-Identifier: GPL-2.0-or-later
// The seam between the transports and the wire. The transports build and
// parse the BTH and everything above it (roce_packet.hpp); a LinkLayer
// adds and strips what lies below (RoCEv2: Ethernet, IPv4 or IPv6, UDP;
// roce_v2.hpp) and the trailer, and knows which header fields its ICRC
// masks. Framed packets leave the device through its Port.
#pragma once

#include "link/roce_packet.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ohca {

// Where frames leave the device: the host's transmit (today's netdev
// glue), counted, and dropped while the link is down. Callers pad a frame
// to the link's minimum length.
class Port {
  public:
    Port() = default;
    Port(const Port &) = delete;
    Port &operator=(const Port &) = delete;
    virtual void transmit(std::span<const uint8_t> frame) = 0;

  protected:
    ~Port() = default;
};

// A link layer is stateless: one instance can serve any number of devices.
class LinkLayer {
  public:
    LinkLayer() = default;
    LinkLayer(const LinkLayer &) = delete;
    LinkLayer &operator=(const LinkLayer &) = delete;
    virtual ~LinkLayer() = default;

    // Sizes 'frame' and writes every header of a packet on 'path' with
    // 'fields' (the BTH and up through write_ib_headers); the payload's
    // payload_len bytes go at the returned layout's payload_off, then
    // seal() closes the frame.
    virtual FrameLayout build(std::vector<uint8_t> &frame, const PacketPath &path,
                              const PacketFields &fields, size_t payload_len) const = 0;
    // The trailer over the finished frame (RoCEv2: the ICRC).
    virtual void seal(std::span<uint8_t> frame, const FrameLayout &layout) const = 0;
    // Strips the link's headers and trailer (checked) and parses the BTH
    // and up (parse_bth, parse_ib_headers).
    virtual ParseError parse(std::span<const uint8_t> frame, ParsedPacket &out) const = 0;
    // Whether a received frame (at least an Ethernet header, accepted by
    // the MAC filter) is an RDMA packet of this link; else it is Ethernet.
    [[nodiscard]] virtual bool claims(std::span<const uint8_t> frame) const = 0;
};

} // namespace ohca
