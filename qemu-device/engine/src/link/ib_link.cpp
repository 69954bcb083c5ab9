// SPDX-License-Identifier: GPL-2.0-or-later
// The InfiniBand link layer (ib_link.hpp) over fabric/ib's wire formats.
#include "link/ib_link.hpp"

#include "ib/link.hpp"
#include "ib/packet.hpp"

#include <algorithm>

namespace ohca {

FrameLayout IbLink::build(std::vector<uint8_t> &f, const PacketPath &path,
                          const PacketFields &fields, size_t payload_len) const {
    const size_t ib = ib_headers_len(fields);
    const size_t pad = (4 - (payload_len & 3)) & 3;
    const size_t grh = path.ib.grh ? ib::kGrhBytes : 0;
    const size_t bth = ib::kLrhBytes + grh;
    f.assign(bth + ib + payload_len + pad + ib::kIcrcBytes + ib::kVcrcBytes, 0);
    ib::Lrh lrh;
    lrh.vl = path.ib.vl;
    lrh.sl = path.ib.sl;
    lrh.lnh = path.ib.grh ? ib::Lnh::IbaGlobal : ib::Lnh::IbaLocal;
    lrh.dlid = path.ib.dlid;
    lrh.slid = path.ib.slid;
    lrh.write(f.data()); // PktLen: seal()
    if (path.ib.grh) {
        ib::Grh g;
        g.tclass = path.traffic_class;
        g.flow_label = path.flow_label & 0xfffff;
        g.pay_len = static_cast<uint16_t>(f.size() - bth - ib::kVcrcBytes);
        g.hop_limit = path.hop_limit;
        g.sgid = path.sgid;
        g.dgid = path.dgid;
        g.write(f.data() + ib::kLrhBytes);
    }
    write_ib_headers(std::span<uint8_t>(f).subspan(bth, ib), fields, pad);
    return FrameLayout{ib::kLrhBytes, bth + ib, path.ib.grh};
}

void IbLink::seal(std::span<uint8_t> f, const FrameLayout & /*layout*/) const {
    (void)ib::seal(f); // build() sized it: 4k + 2 bytes within the bounds
}

ParseError IbLink::parse(std::span<const uint8_t> f, ParsedPacket &out) const {
    ib::Packet pk;
    switch (ib::parse(f, pk)) {
    case ib::PacketError::Ok:
        break;
    case ib::PacketError::BadIcrc:
        return ParseError::BadIcrc;
    case ib::PacketError::BadVcrc:
        return ParseError::BadVcrc;
    case ib::PacketError::Vl15NotQp0:
    case ib::PacketError::Qp0NotVl15:
        return ParseError::Vl15Rule;
    case ib::PacketError::BadTver:
        return ParseError::BadVersion;
    default:
        return ParseError::Malformed;
    }
    if (!pk.has_bth) {
        return ParseError::Malformed; // raw packets are not the device's
    }
    out.is_ib = true;
    out.ib.dlid = pk.lrh.dlid;
    out.ib.slid = pk.lrh.slid;
    out.ib.sl = pk.lrh.sl;
    out.ib.vl = pk.lrh.vl;
    out.ib.grh = pk.has_grh;
    out.ipv6 = true;
    out.vlan_pcp = 0;
    if (pk.has_grh) {
        out.sgid = pk.grh.sgid;
        out.dgid = pk.grh.dgid;
        out.ip_header = f.subspan(ib::kLrhBytes, ib::kGrhBytes);
    } else {
        out.sgid = {};
        out.dgid = {};
        out.ip_header = {};
    }
    if (const ParseError e = parse_bth(f.subspan(pk.bth_offset), out.fields.bth);
        e != ParseError::None) {
        return e;
    }
    return parse_ib_headers(f.subspan(pk.bth_offset, pk.payload_end - pk.bth_offset), out);
}

bool IbLink::claims(std::span<const uint8_t> frame) const {
    return !ib::is_link_packet(frame.size());
}

const LinkLayer &ib_link() {
    static const IbLink link;
    return link;
}

} // namespace ohca
