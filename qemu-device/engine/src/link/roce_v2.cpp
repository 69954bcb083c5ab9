// SPDX-License-Identifier: GPL-2.0-or-later
// RoCEv2, the link layer of today's wire (link_layer.hpp): Ethernet (one
// optional 802.1Q tag), IPv4 or IPv6, UDP to port 4791, the IB headers,
// and the ICRC over them with the variant fields of IP, UDP and BTH masked.
#include "link/roce_v2.hpp"

#include "link/crc32.hpp"

#include <algorithm>

namespace ohca {

namespace {

constexpr uint16_t kEthIpv4 = 0x0800;
constexpr uint16_t kEthIpv6 = 0x86dd;
constexpr uint16_t kEthVlan = 0x8100;
constexpr uint8_t kIpProtoUdp = 17;
constexpr size_t kUdpLen = 8;

void put16(std::vector<uint8_t> &v, size_t off, uint32_t x) {
    v[off] = static_cast<uint8_t>(x >> 8);
    v[off + 1] = static_cast<uint8_t>(x);
}
void put32(std::vector<uint8_t> &v, size_t off, uint32_t x) {
    put16(v, off, x >> 16);
    put16(v, off + 2, x & 0xffff);
}
uint16_t get16(std::span<const uint8_t> f, size_t off) {
    return static_cast<uint16_t>((f[off] << 8) | f[off + 1]);
}

uint16_t ip_checksum(std::span<const uint8_t> hdr) {
    uint32_t sum = 0;
    for (size_t i = 0; i + 1 < hdr.size(); i += 2) {
        sum += get16(hdr, i);
    }
    while ((sum >> 16) != 0) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return static_cast<uint16_t>(~sum);
}

} // namespace

uint32_t crc32_update(uint32_t crc, std::span<const uint8_t> data) {
    return crc32::update(crc, data);
}

uint32_t compute_icrc(std::span<const uint8_t> frame, size_t l3, bool ipv6) {
    // Invariant CRC: 8 bytes of ones in place of the (absent) LRH, then the
    // IP/UDP/BTH headers with the variant fields set to ones, then the rest.
    const size_t ip_len = ipv6 ? 40 : 20;
    const size_t bth = l3 + ip_len + kUdpLen;
    std::array<uint8_t, 8 + 40 + kUdpLen + kBthLen> hdr{};
    std::fill(hdr.begin(), hdr.begin() + 8, 0xff);
    std::copy_n(frame.begin() + static_cast<std::ptrdiff_t>(l3), ip_len + kUdpLen + kBthLen,
                hdr.begin() + 8);
    uint8_t *ip = hdr.data() + 8;
    if (ipv6) {
        ip[0] |= 0x0f; // traffic class and flow label
        ip[1] = 0xff;
        ip[2] = 0xff;
        ip[3] = 0xff;
        ip[7] = 0xff; // hop limit
    } else {
        ip[1] = 0xff;  // TOS
        ip[8] = 0xff;  // TTL
        ip[10] = 0xff; // header checksum
        ip[11] = 0xff;
    }
    uint8_t *udp = ip + ip_len;
    udp[6] = 0xff; // checksum
    udp[7] = 0xff;
    uint8_t *b = udp + kUdpLen;
    b[4] = 0xff; // BTH resv8a
    const size_t hdr_len = 8 + ip_len + kUdpLen + kBthLen;
    uint32_t crc = crc32_update(0xffffffffu, std::span<const uint8_t>(hdr.data(), hdr_len));
    const size_t rest = bth + kBthLen;
    crc = crc32_update(crc, frame.subspan(rest, frame.size() - kIcrcLen - rest));
    return ~crc;
}

FrameLayout build_roce_headers(std::vector<uint8_t> &f, const PacketPath &path,
                               const PacketFields &fields, size_t payload_len) {
    const size_t l3 = path.vlan_id != 0xffff ? 18 : 14;
    const size_t ip_len = path.ipv6 ? 40 : 20;
    const size_t ib_len = ib_headers_len(fields);
    const size_t pad = (4 - (payload_len & 3)) & 3;
    const size_t udp_len = kUdpLen + ib_len + payload_len + pad + kIcrcLen;
    const size_t total = l3 + ip_len + udp_len;
    const size_t payload_off = total - kIcrcLen - pad - payload_len;
    // The storage is reused from frame to frame: zero what is not written
    // below (reserved fields, pad) rather than the whole frame.
    f.resize(total);
    std::fill_n(f.begin(), payload_off, uint8_t{0});
    std::fill_n(f.begin() + static_cast<long>(payload_off + payload_len), pad + kIcrcLen,
                uint8_t{0});

    std::copy(path.dmac.begin(), path.dmac.end(), f.begin());
    std::copy(path.smac.begin(), path.smac.end(), f.begin() + 6);
    if (path.vlan_id != 0xffff) {
        put16(f, 12, kEthVlan);
        put16(f, 14, path.vlan_id & 0x0fffu);
    }
    put16(f, l3 - 2, path.ipv6 ? kEthIpv6 : kEthIpv4);
    size_t off = l3;
    if (path.ipv6) {
        put32(f, off,
              (6u << 28) | (uint32_t{path.traffic_class} << 20) | (path.flow_label & 0xfffff));
        put16(f, off + 4, static_cast<uint32_t>(udp_len));
        f[off + 6] = kIpProtoUdp;
        f[off + 7] = path.hop_limit;
        std::copy(path.sgid.begin(), path.sgid.end(), f.begin() + static_cast<long>(off + 8));
        std::copy(path.dgid.begin(), path.dgid.end(), f.begin() + static_cast<long>(off + 24));
    } else {
        f[off] = 0x45;
        f[off + 1] = path.traffic_class;
        put16(f, off + 2, static_cast<uint32_t>(ip_len + udp_len));
        put16(f, off + 6, 0x4000); // DF
        f[off + 8] = path.hop_limit;
        f[off + 9] = kIpProtoUdp;
        std::copy_n(path.sgid.begin() + 12, 4, f.begin() + static_cast<long>(off + 12));
        std::copy_n(path.dgid.begin() + 12, 4, f.begin() + static_cast<long>(off + 16));
        put16(f, off + 10, ip_checksum(std::span<const uint8_t>(f).subspan(off, 20)));
    }
    off += ip_len;
    put16(f, off, path.udp_src_port);
    put16(f, off + 2, kRoceUdpPort);
    put16(f, off + 4, static_cast<uint32_t>(udp_len));
    off += kUdpLen;

    write_ib_headers(std::span<uint8_t>(f).subspan(off, ib_len), fields, pad);
    return FrameLayout{l3, off + ib_len, path.ipv6};
}

void seal_roce_frame(std::span<uint8_t> f, const FrameLayout &layout) {
    const uint32_t icrc = compute_icrc(f, layout.l3, layout.ipv6);
    const size_t ic = f.size() - kIcrcLen;
    for (size_t i = 0; i < 4; ++i) { // little endian, like the Ethernet FCS
        f[ic + i] = static_cast<uint8_t>(icrc >> (8 * i));
    }
}

std::vector<uint8_t> build_roce_frame(const PacketPath &path, const PacketFields &fields,
                                      std::span<const uint8_t> payload) {
    std::vector<uint8_t> f;
    const FrameLayout layout = build_roce_headers(f, path, fields, payload.size());
    std::copy(payload.begin(), payload.end(), f.begin() + static_cast<long>(layout.payload_off));
    seal_roce_frame(f, layout);
    return f;
}

ParseError parse_roce_frame(std::span<const uint8_t> f, ParsedPacket &out) {
    if (f.size() < 14) {
        return ParseError::Malformed;
    }
    std::copy_n(f.begin(), 6, out.dmac.begin());
    std::copy_n(f.begin() + 6, 6, out.smac.begin());
    size_t l3 = 14;
    out.vlan_pcp = 0;
    uint16_t type = get16(f, 12);
    if (type == kEthVlan) {
        if (f.size() < 18) {
            return ParseError::Malformed;
        }
        out.vlan_pcp = static_cast<uint8_t>(f[14] >> 5);
        type = get16(f, 16);
        l3 = 18;
    }
    size_t l4 = 0;
    size_t ip_total = 0;
    if (type == kEthIpv4) {
        if (f.size() < l3 + 20 || f[l3] != 0x45 || f[l3 + 9] != kIpProtoUdp) {
            return ParseError::Malformed; // IP options are not used by RoCE
        }
        out.ipv6 = false;
        out.sgid = {};
        out.dgid = {};
        out.sgid[10] = out.sgid[11] = 0xff;
        out.dgid[10] = out.dgid[11] = 0xff;
        std::copy_n(f.begin() + static_cast<long>(l3 + 12), 4, out.sgid.begin() + 12);
        std::copy_n(f.begin() + static_cast<long>(l3 + 16), 4, out.dgid.begin() + 12);
        ip_total = get16(f, l3 + 2);
        out.traffic_class = f[l3 + 1];
        l4 = l3 + 20;
        out.ip_header = f.subspan(l3, 20);
    } else if (type == kEthIpv6) {
        if (f.size() < l3 + 40 || (f[l3] >> 4) != 6 || f[l3 + 6] != kIpProtoUdp) {
            return ParseError::Malformed;
        }
        out.ipv6 = true;
        std::copy_n(f.begin() + static_cast<long>(l3 + 8), 16, out.sgid.begin());
        std::copy_n(f.begin() + static_cast<long>(l3 + 24), 16, out.dgid.begin());
        ip_total = 40 + size_t{get16(f, l3 + 4)};
        out.traffic_class = static_cast<uint8_t>((f[l3] << 4) | (f[l3 + 1] >> 4));
        l4 = l3 + 40;
        out.ip_header = f.subspan(l3, 40);
    } else {
        return ParseError::Malformed;
    }
    // Frames may carry Ethernet padding beyond the IP datagram.
    if (ip_total < (l4 - l3) + kUdpLen + kBthLen + kIcrcLen || l3 + ip_total > f.size()) {
        return ParseError::Malformed;
    }
    f = f.first(l3 + ip_total);
    if (get16(f, l4 + 2) != kRoceUdpPort || get16(f, l4 + 4) != ip_total - (l4 - l3)) {
        return ParseError::Malformed;
    }
    out.ecn = static_cast<eth::Ecn>(out.traffic_class & eth::kEcnMask);
    const size_t b = l4 + kUdpLen;
    if (const ParseError e = parse_bth(f.subspan(b), out.fields.bth); e != ParseError::None) {
        return e;
    }
    const uint32_t icrc = uint32_t{f[f.size() - 4]} | (uint32_t{f[f.size() - 3]} << 8) |
                          (uint32_t{f[f.size() - 2]} << 16) | (uint32_t{f[f.size() - 1]} << 24);
    if (compute_icrc(f, l3, out.ipv6) != icrc) {
        return ParseError::BadIcrc;
    }
    return parse_ib_headers(f.subspan(b, f.size() - kIcrcLen - b), out);
}

// UDP to port 4791 over IPv4 (unfragmented) or IPv6 (UDP as the first next
// header), optionally behind one 802.1Q tag.
bool is_roce_v2_frame(std::span<const uint8_t> f) {
    if (f.size() < 14) {
        return false;
    }
    size_t l3 = 14;
    uint16_t type = get16(f, 12);
    if (type == kEthVlan) {
        if (f.size() < 18) {
            return false;
        }
        type = get16(f, 16);
        l3 += 4;
    }
    size_t l4 = 0;
    if (type == kEthIpv4) {
        if (f.size() < l3 + 20 || (f[l3] >> 4) != 4) {
            return false;
        }
        const size_t ihl = size_t{f[l3] & 0x0fu} * 4;
        const uint16_t frag = get16(f, l3 + 6);
        if (ihl < 20 || f[l3 + 9] != kIpProtoUdp || (frag & 0x3fff) != 0) {
            return false;
        }
        l4 = l3 + ihl;
    } else if (type == kEthIpv6) {
        if (f.size() < l3 + 40 || (f[l3] >> 4) != 6 || f[l3 + 6] != kIpProtoUdp) {
            return false;
        }
        l4 = l3 + 40;
    } else {
        return false;
    }
    return f.size() >= l4 + 8 && get16(f, l4 + 2) == kRoceUdpPort;
}

FrameLayout RoceV2Link::build(std::vector<uint8_t> &frame, const PacketPath &path,
                              const PacketFields &fields, size_t payload_len) const {
    return build_roce_headers(frame, path, fields, payload_len);
}

void RoceV2Link::seal(std::span<uint8_t> frame, const FrameLayout &layout) const {
    seal_roce_frame(frame, layout);
}

ParseError RoceV2Link::parse(std::span<const uint8_t> frame, ParsedPacket &out) const {
    return parse_roce_frame(frame, out);
}

bool RoceV2Link::claims(std::span<const uint8_t> frame) const {
    return is_roce_v2_frame(frame);
}

const LinkLayer &roce_v2_link() {
    static const RoceV2Link link;
    return link;
}

} // namespace ohca
