// SPDX-License-Identifier: GPL-2.0-or-later
// The BTH and the headers above it: what every link layer carries
// (link_layer.hpp). Nothing here knows what lies below the BTH.
#include "link/roce_packet.hpp"

#include <algorithm>
#include <array>

namespace ohca {

namespace {

constexpr size_t kDethLen = 8;
constexpr size_t kXrcEthLen = 4;
constexpr size_t kAtomicEthLen = 28;
constexpr size_t kAtomicAckEthLen = 8;
constexpr size_t kRethLen = 16;
constexpr size_t kAethLen = 4;
constexpr size_t kImmLen = 4;
constexpr size_t kIethLen = 4;

void put16(std::span<uint8_t> v, size_t off, uint32_t x) {
    v[off] = static_cast<uint8_t>(x >> 8);
    v[off + 1] = static_cast<uint8_t>(x);
}
void put32(std::span<uint8_t> v, size_t off, uint32_t x) {
    put16(v, off, x >> 16);
    put16(v, off + 2, x & 0xffff);
}
uint16_t get16(std::span<const uint8_t> f, size_t off) {
    return static_cast<uint16_t>((f[off] << 8) | f[off + 1]);
}
uint32_t get32(std::span<const uint8_t> f, size_t off) {
    return (uint32_t{get16(f, off)} << 16) | get16(f, off + 2);
}
void put64(std::span<uint8_t> v, size_t off, uint64_t x) {
    put32(v, off, static_cast<uint32_t>(x >> 32));
    put32(v, off + 4, static_cast<uint32_t>(x));
}
uint64_t get64(std::span<const uint8_t> f, size_t off) {
    return (uint64_t{get32(f, off)} << 32) | get32(f, off + 4);
}

constexpr OpcodeInfo rc_decode(uint8_t op) {
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

constexpr OpcodeInfo decode(uint8_t op) {
    if (op == kCnpOpcode) {
        OpcodeInfo i;
        i.valid = true;
        i.payload = true; // the 16 reserved bytes
        return i;
    }
    if (is_ud_opcode(op)) {
        OpcodeInfo i;
        i.valid = true;
        i.deth = true;
        i.imm = op == ud::kSendOnlyImm;
        i.payload = true;
        return i;
    }
    if (is_uc_opcode(op)) {
        return rc_decode(op & 0x1f); // the same headers as RC's
    }
    if (is_xrc_opcode(op)) {
        // RC's headers, and the XRCETH on requests (IBTA 9.3.7.1).
        OpcodeInfo i = rc_decode(op & 0x1f);
        i.xrceth = i.valid && !rc_is_response(op & 0x1f);
        return i;
    }
    return rc_decode(op);
}

// Every opcode's headers, decided at compile time: each packet parsed
// looks its opcode up.
constexpr std::array<OpcodeInfo, 256> kOpcodes = [] {
    std::array<OpcodeInfo, 256> t{};
    for (size_t op = 0; op < t.size(); ++op) {
        t[op] = decode(static_cast<uint8_t>(op));
    }
    return t;
}();

} // namespace

OpcodeInfo rc_opcode_info(uint8_t op) {
    return rc_decode(op);
}

OpcodeInfo opcode_info(uint8_t op) {
    return kOpcodes[op];
}

size_t ib_headers_len(const PacketFields &fields) {
    return kBthLen + (fields.deth ? kDethLen : 0) + (fields.xrceth ? kXrcEthLen : 0) +
           (fields.reth ? kRethLen : 0) + (fields.atomic_eth ? kAtomicEthLen : 0) +
           (fields.aeth ? kAethLen : 0) + (fields.atomic_ack ? kAtomicAckEthLen : 0) +
           (fields.imm ? kImmLen : 0) + (fields.ieth ? kIethLen : 0);
}

void write_ib_headers(std::span<uint8_t> f, const PacketFields &fields, size_t pad) {
    size_t off = 0;
    const Bth &h = fields.bth;
    f[off] = h.opcode;
    f[off + 1] = static_cast<uint8_t>((h.solicited ? 0x80 : 0) | (pad << 4)); // TVer 0
    put16(f, off + 2, h.pkey);
    put32(f, off + 4,
          (h.fecn ? 0x80000000u : 0) | (h.becn ? 0x40000000u : 0) | (h.dest_qp & 0xffffff));
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
    }
}

ParseError parse_bth(std::span<const uint8_t> f, Bth &h) {
    h.opcode = f[0];
    h.solicited = (f[1] & 0x80) != 0;
    h.pad = static_cast<uint8_t>((f[1] >> 4) & 3);
    if ((f[1] & 0x0f) != 0) {
        return ParseError::BadVersion;
    }
    h.pkey = get16(f, 2);
    h.fecn = (f[4] & 0x80) != 0;
    h.becn = (f[4] & 0x40) != 0;
    h.dest_qp = get32(f, 4) & 0xffffff;
    h.ack_req = (f[8] & 0x80) != 0;
    h.psn = get32(f, 8) & kPsnMask;
    return ParseError::None;
}

ParseError parse_ib_headers(std::span<const uint8_t> f, ParsedPacket &out) {
    const Bth &h = out.fields.bth;
    const OpcodeInfo info = opcode_info(h.opcode);
    if (!info.valid) {
        return ParseError::BadOpcode;
    }
    size_t off = kBthLen;
    const size_t end = f.size();
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
