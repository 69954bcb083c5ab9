// SPDX-License-Identifier: GPL-2.0-or-later
// InfiniBand (ib_link.cpp): the link layer below the BTH on an IB port.
// A frame is a raw IB packet: LRH, a GRH when the path asks for one, the
// BTH and up (roce_packet.hpp, unchanged), ICRC and VCRC. The LRH, GRH and
// CRCs are fabric/ib's (ib/packet.hpp), shared with ohca-switch.
#pragma once

#include "link/link_layer.hpp"
#include "link/roce_packet.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ohca {

class IbLink final : public LinkLayer {
  public:
    // The LRH from path.ib (VL, SL, DLID, SLID; LNH global with path.ib.grh,
    // the GRH then from the path's GIDs, traffic class, flow label and hop
    // limit).
    FrameLayout build(std::vector<uint8_t> &frame, const PacketPath &path,
                      const PacketFields &fields, size_t payload_len) const override;
    // PktLen, ICRC and VCRC.
    void seal(std::span<uint8_t> frame, const FrameLayout &layout) const override;
    // fabric/ib's checks (length, LVer, VCRC, GRH, ICRC, VL15 and QP0),
    // then the BTH and up; out.is_ib and out.ib say what the LRH said.
    ParseError parse(std::span<const uint8_t> frame, ParsedPacket &out) const override;
    // Every frame of an IB port but a link packet (6 bytes) is a packet.
    [[nodiscard]] bool claims(std::span<const uint8_t> frame) const override;
};

// The device's IB link layer.
const LinkLayer &ib_link();

} // namespace ohca
