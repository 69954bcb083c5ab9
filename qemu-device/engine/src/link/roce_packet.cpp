// SPDX-License-Identifier: GPL-2.0-or-later
#include "link/roce_packet.hpp"

#include "link/crc32.hpp"

#include <algorithm>

namespace ohca {

namespace {

constexpr uint16_t kEthIpv4 = 0x0800;
constexpr uint16_t kEthIpv6 = 0x86dd;
constexpr uint16_t kEthVlan = 0x8100;
constexpr uint8_t kIpProtoUdp = 17;
constexpr size_t kBthLen = 12;
constexpr size_t kDethLen = 8;
constexpr size_t kXrcEthLen = 4;
constexpr size_t kAtomicEthLen = 28;
constexpr size_t kAtomicAckEthLen = 8;
constexpr size_t kRethLen = 16;
constexpr size_t kAethLen = 4;
constexpr size_t kImmLen = 4;
constexpr size_t kIethLen = 4;
constexpr size_t kIcrcLen = 4;
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
uint32_t get32(std::span<const uint8_t> f, size_t off) {
    return (uint32_t{get16(f, off)} << 16) | get16(f, off + 2);
}
void put64(std::vector<uint8_t> &v, size_t off, uint64_t x) {
    put32(v, off, static_cast<uint32_t>(x >> 32));
    put32(v, off + 4, static_cast<uint32_t>(x));
}
uint64_t get64(std::span<const uint8_t> f, size_t off) {
    return (uint64_t{get32(f, off)} << 32) | get32(f, off + 4);
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

OpcodeInfo opcode_info(uint8_t op) {
    if (is_ud_opcode(op)) {
        OpcodeInfo i;
        i.valid = true;
        i.deth = true;
        i.imm = op == ud::kSendOnlyImm;
        i.payload = true;
        return i;
    }
    if (is_uc_opcode(op)) {
        return rc_opcode_info(op & 0x1f); // the same headers as RC's
    }
    if (is_xrc_opcode(op)) {
        // RC's headers, and the XRCETH on requests (IBTA 9.3.7.1).
        OpcodeInfo i = rc_opcode_info(op & 0x1f);
        i.xrceth = i.valid && !rc_is_response(op & 0x1f);
        return i;
    }
    return rc_opcode_info(op);
}

OpcodeInfo rc_opcode_info(uint8_t op) {
    OpcodeInfo i;
    if (op == rc::kSendLastInv || op == rc::kSendOnlyInv) {
        i.valid = true;
        i.ieth = true;
        i.payload = true;
        return i;
    }
    if (op == rc::kAtomicWrite) {
        i.valid = true;
        i.reth = true;
        i.payload = true;
        return i;
    }
    if (op > rc::kFetchAdd) {
        return i;
    }
    i.valid = true;
    i.reth = op == rc::kWriteFirst || op == rc::kWriteOnly || op == rc::kWriteOnlyImm ||
             op == rc::kReadRequest;
    i.atomic_eth = op == rc::kCompareSwap || op == rc::kFetchAdd;
    i.aeth = op == rc::kReadRespFirst || op == rc::kReadRespLast || op == rc::kReadRespOnly ||
             op == rc::kAck || op == rc::kAtomicAck;
    i.atomic_ack_eth = op == rc::kAtomicAck;
    i.imm = op == rc::kSendLastImm || op == rc::kSendOnlyImm || op == rc::kWriteLastImm ||
            op == rc::kWriteOnlyImm;
    i.payload = op != rc::kReadRequest && op != rc::kAck && !i.atomic_eth && !i.atomic_ack_eth;
    return i;
}

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
    const size_t ext = (fields.deth ? kDethLen : 0) + (fields.xrceth ? kXrcEthLen : 0) +
                       (fields.reth ? kRethLen : 0) + (fields.atomic_eth ? kAtomicEthLen : 0) +
                       (fields.aeth ? kAethLen : 0) + (fields.atomic_ack ? kAtomicAckEthLen : 0) +
                       (fields.imm ? kImmLen : 0) + (fields.ieth ? kIethLen : 0);
    const size_t pad = (4 - (payload_len & 3)) & 3;
    const size_t udp_len = kUdpLen + kBthLen + ext + payload_len + pad + kIcrcLen;
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

    const Bth &h = fields.bth;
    f[off] = h.opcode;
    f[off + 1] = static_cast<uint8_t>((h.solicited ? 0x80 : 0) | (pad << 4)); // TVer 0
    put16(f, off + 2, h.pkey);
    put32(f, off + 4, h.dest_qp & 0xffffff); // resv8a = 0
    put32(f, off + 8, (h.ack_req ? 0x80000000u : 0) | (h.psn & kPsnMask));
    off += kBthLen;
    if (fields.deth) {
        put32(f, off, fields.deth->qkey);
        put32(f, off + 4, fields.deth->src_qp & 0xffffff); // reserved byte 0
        off += kDethLen;
    }
    if (fields.xrceth) {
        put32(f, off, *fields.xrceth & 0xffffff); // reserved byte 0
        off += kXrcEthLen;
    }
    if (fields.reth) {
        put32(f, off, static_cast<uint32_t>(fields.reth->va >> 32));
        put32(f, off + 4, static_cast<uint32_t>(fields.reth->va));
        put32(f, off + 8, fields.reth->rkey);
        put32(f, off + 12, fields.reth->dma_len);
        off += kRethLen;
    }
    if (fields.atomic_eth) {
        put64(f, off, fields.atomic_eth->va);
        put32(f, off + 8, fields.atomic_eth->rkey);
        put64(f, off + 12, fields.atomic_eth->swap_add);
        put64(f, off + 20, fields.atomic_eth->compare);
        off += kAtomicEthLen;
    }
    if (fields.aeth) {
        put32(f, off, (uint32_t{fields.aeth->syndrome} << 24) | (fields.aeth->msn & 0xffffff));
        off += kAethLen;
    }
    if (fields.atomic_ack) {
        put64(f, off, *fields.atomic_ack);
        off += kAtomicAckEthLen;
    }
    if (fields.imm) {
        put32(f, off, *fields.imm);
        off += kImmLen;
    }
    if (fields.ieth) {
        put32(f, off, *fields.ieth);
        off += kIethLen;
    }
    return FrameLayout{l3, off, path.ipv6};
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
    const size_t b = l4 + kUdpLen;
    Bth &h = out.fields.bth;
    h.opcode = f[b];
    h.solicited = (f[b + 1] & 0x80) != 0;
    h.pad = static_cast<uint8_t>((f[b + 1] >> 4) & 3);
    if ((f[b + 1] & 0x0f) != 0) {
        return ParseError::BadVersion;
    }
    h.pkey = get16(f, b + 2);
    h.dest_qp = get32(f, b + 4) & 0xffffff;
    h.ack_req = (f[b + 8] & 0x80) != 0;
    h.psn = get32(f, b + 8) & kPsnMask;
    const uint32_t icrc = uint32_t{f[f.size() - 4]} | (uint32_t{f[f.size() - 3]} << 8) |
                          (uint32_t{f[f.size() - 2]} << 16) | (uint32_t{f[f.size() - 1]} << 24);
    if (compute_icrc(f, l3, out.ipv6) != icrc) {
        return ParseError::BadIcrc;
    }
    const OpcodeInfo info = opcode_info(h.opcode);
    if (!info.valid) {
        return ParseError::BadOpcode;
    }
    size_t off = b + kBthLen;
    const size_t end = f.size() - kIcrcLen;
    const size_t ext = (info.deth ? kDethLen : 0) + (info.xrceth ? kXrcEthLen : 0) +
                       (info.reth ? kRethLen : 0) + (info.aeth ? kAethLen : 0) +
                       (info.atomic_eth ? kAtomicEthLen : 0) +
                       (info.atomic_ack_eth ? kAtomicAckEthLen : 0) + (info.imm ? kImmLen : 0) +
                       (info.ieth ? kIethLen : 0);
    if (end < off + ext) {
        return ParseError::Malformed;
    }
    out.fields.deth.reset();
    out.fields.xrceth.reset();
    out.fields.reth.reset();
    out.fields.atomic_eth.reset();
    out.fields.aeth.reset();
    out.fields.atomic_ack.reset();
    out.fields.imm.reset();
    out.fields.ieth.reset();
    if (info.deth) {
        out.fields.deth = Deth{get32(f, off), get32(f, off + 4) & 0xffffff};
        off += kDethLen;
    }
    if (info.xrceth) {
        out.fields.xrceth = get32(f, off) & 0xffffff;
        off += kXrcEthLen;
    }
    if (info.reth) {
        Reth r;
        r.va = (uint64_t{get32(f, off)} << 32) | get32(f, off + 4);
        r.rkey = get32(f, off + 8);
        r.dma_len = get32(f, off + 12);
        out.fields.reth = r;
        off += kRethLen;
    }
    if (info.atomic_eth) {
        AtomicEth a;
        a.va = get64(f, off);
        a.rkey = get32(f, off + 8);
        a.swap_add = get64(f, off + 12);
        a.compare = get64(f, off + 20);
        out.fields.atomic_eth = a;
        off += kAtomicEthLen;
    }
    if (info.aeth) {
        Aeth a;
        a.syndrome = f[off];
        a.msn = get32(f, off) & 0xffffff;
        out.fields.aeth = a;
        off += kAethLen;
    }
    if (info.atomic_ack_eth) {
        out.fields.atomic_ack = get64(f, off);
        off += kAtomicAckEthLen;
    }
    if (info.imm) {
        out.fields.imm = get32(f, off);
        off += kImmLen;
    }
    if (info.ieth) {
        out.fields.ieth = get32(f, off);
        off += kIethLen;
    }
    const size_t plen = end - off;
    if (h.pad > plen || (!info.payload && plen != 0) || (plen & 3) != 0) {
        return ParseError::Malformed;
    }
    out.payload = f.subspan(off, plen - h.pad);
    return ParseError::None;
}

} // namespace ohca
