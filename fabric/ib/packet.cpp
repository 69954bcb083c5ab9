// SPDX-License-Identifier: GPL-2.0-or-later
#include "ib/packet.hpp"

#include "ib/bytes.hpp"
#include "ib/crc.hpp"

#include <cstring>

namespace ohca::ib {

Lrh Lrh::read(const uint8_t *p) {
    Lrh h;
    h.vl = static_cast<uint8_t>(p[0] >> 4);
    h.lver = static_cast<uint8_t>(p[0] & 0xF);
    h.sl = static_cast<uint8_t>(p[1] >> 4);
    h.lnh = static_cast<Lnh>(p[1] & 0x3);
    h.dlid = get16(p + 2);
    h.pkt_len = static_cast<uint16_t>(get16(p + 4) & 0x7FF);
    h.slid = get16(p + 6);
    return h;
}

void Lrh::write(uint8_t *p) const {
    p[0] = static_cast<uint8_t>((vl << 4) | (lver & 0xF));
    p[1] = static_cast<uint8_t>((sl << 4) | (static_cast<uint8_t>(lnh) & 0x3));
    put16(p + 2, dlid);
    put16(p + 4, static_cast<uint16_t>(pkt_len & 0x7FF));
    put16(p + 6, slid);
}

Grh Grh::read(const uint8_t *p) {
    Grh h;
    const uint32_t w0 = get32(p);
    h.ip_ver = static_cast<uint8_t>(w0 >> 28);
    h.tclass = static_cast<uint8_t>(w0 >> 20);
    h.flow_label = w0 & 0xFFFFF;
    h.pay_len = get16(p + 4);
    h.next_hdr = p[6];
    h.hop_limit = p[7];
    std::memcpy(h.sgid.data(), p + 8, 16);
    std::memcpy(h.dgid.data(), p + 24, 16);
    return h;
}

void Grh::write(uint8_t *p) const {
    put32(p, (static_cast<uint32_t>(ip_ver & 0xF) << 28) | (static_cast<uint32_t>(tclass) << 20) |
                 (flow_label & 0xFFFFF));
    put16(p + 4, pay_len);
    p[6] = next_hdr;
    p[7] = hop_limit;
    std::memcpy(p + 8, sgid.data(), 16);
    std::memcpy(p + 24, dgid.data(), 16);
}

Bth Bth::read(const uint8_t *p) {
    Bth h;
    h.opcode = p[0];
    h.solicited = (p[1] & 0x80) != 0;
    h.mig_req = (p[1] & 0x40) != 0;
    h.pad = static_cast<uint8_t>((p[1] >> 4) & 0x3);
    h.tver = static_cast<uint8_t>(p[1] & 0xF);
    h.pkey = get16(p + 2);
    h.resv8a = p[4];
    h.dest_qp = get24(p + 5);
    h.ack_req = (p[8] & 0x80) != 0;
    h.psn = get24(p + 9);
    return h;
}

void Bth::write(uint8_t *p) const {
    p[0] = opcode;
    p[1] = static_cast<uint8_t>((solicited ? 0x80 : 0) | (mig_req ? 0x40 : 0) | ((pad & 0x3) << 4) |
                                (tver & 0xF));
    put16(p + 2, pkey);
    p[4] = resv8a;
    put24(p + 5, dest_qp & kQpnMask);
    p[8] = ack_req ? 0x80 : 0;
    put24(p + 9, psn & kQpnMask);
}

const char *to_string(PacketError e) {
    switch (e) {
    case PacketError::Ok:
        return "ok";
    case PacketError::TooShort:
        return "frame too short";
    case PacketError::TooLong:
        return "frame too long";
    case PacketError::LengthMismatch:
        return "LRH PktLen does not match the frame size";
    case PacketError::BadLVer:
        return "unknown LRH LVer";
    case PacketError::BadVcrc:
        return "bad VCRC";
    case PacketError::BadIcrc:
        return "bad ICRC";
    case PacketError::BadGrh:
        return "bad GRH";
    case PacketError::BadTver:
        return "unknown BTH TVer";
    case PacketError::BadPad:
        return "BTH PadCnt longer than the payload";
    case PacketError::Vl15NotQp0:
        return "VL15 packet not for QP0";
    case PacketError::Qp0NotVl15:
        return "QP0 packet not on VL15";
    }
    return "?";
}

namespace {

bool is_iba(Lnh lnh) {
    return lnh == Lnh::IbaLocal || lnh == Lnh::IbaGlobal;
}

uint16_t read_vcrc(const uint8_t *p) {
    return static_cast<uint16_t>(p[0] | (p[1] << 8));
}
void write_vcrc(uint8_t *p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v);
    p[1] = static_cast<uint8_t>(v >> 8);
}
uint32_t read_icrc(const uint8_t *p) {
    return p[0] | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
           (static_cast<uint32_t>(p[3]) << 24);
}
void write_icrc(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; ++i) {
        p[i] = static_cast<uint8_t>(v >> (8 * i));
    }
}

} // namespace

uint32_t compute_icrc(std::span<const uint8_t> packet) {
    // Callers pass at least an LRH (+ GRH for a global packet); the
    // masked copies of the headers are hashed first, then the rest.
    std::array<uint8_t, kLrhBytes + kGrhBytes + kBthBytes> hdr{};
    const auto lnh = static_cast<Lnh>(packet[1] & 0x3);
    size_t n = kLrhBytes;
    if (lnh == Lnh::IbaGlobal) {
        std::memset(hdr.data(), 0xFF, kLrhBytes);
        if (packet.size() >= kLrhBytes + kGrhBytes) {
            std::memcpy(hdr.data() + n, packet.data() + n, kGrhBytes);
            hdr[n + 0] |= 0x0F; // TClass high nibble
            hdr[n + 1] = 0xFF;  // TClass low nibble, FlowLabel
            hdr[n + 2] = 0xFF;
            hdr[n + 3] = 0xFF;
            hdr[n + 7] = 0xFF; // HopLmt
            n += kGrhBytes;
        }
    } else {
        std::memcpy(hdr.data(), packet.data(), kLrhBytes);
        hdr[0] |= 0xF0; // VL
    }
    if (packet.size() >= n + kBthBytes) {
        std::memcpy(hdr.data() + n, packet.data() + n, kBthBytes);
        hdr[n + 4] = 0xFF; // Resv8a
        n += kBthBytes;
    } else {
        n = packet.size() < n ? packet.size() : n;
    }
    uint32_t reg = crc32_update(0xFFFFFFFFu, std::span<const uint8_t>(hdr.data(), n));
    reg = crc32_update(reg, packet.subspan(n));
    return ~reg;
}

uint16_t compute_vcrc(std::span<const uint8_t> lrh_to_icrc) {
    return crc16(lrh_to_icrc);
}

PacketError check_link(std::span<const uint8_t> frame, Lrh &lrh) {
    if (frame.size() < kMinRawFrameBytes) {
        return PacketError::TooShort;
    }
    if (frame.size() > kMaxFrameBytes) {
        return PacketError::TooLong;
    }
    lrh = Lrh::read(frame.data());
    if (static_cast<size_t>(lrh.pkt_len) * 4 + kVcrcBytes != frame.size()) {
        return PacketError::LengthMismatch;
    }
    if (lrh.lver != kLVer) {
        return PacketError::BadLVer;
    }
    const size_t body = frame.size() - kVcrcBytes;
    if (read_vcrc(frame.data() + body) != compute_vcrc(frame.first(body))) {
        return PacketError::BadVcrc;
    }
    if (is_iba(lrh.lnh) && frame.size() < kMinIbaFrameBytes) {
        return PacketError::TooShort;
    }
    return PacketError::Ok;
}

PacketError parse(std::span<const uint8_t> frame, Packet &out) {
    out = Packet{};
    if (const PacketError e = check_link(frame, out.lrh); e != PacketError::Ok) {
        return e;
    }
    const size_t body = frame.size() - kVcrcBytes;
    if (!is_iba(out.lrh.lnh)) {
        if (out.lrh.vl == kVl15) {
            return PacketError::Vl15NotQp0;
        }
        out.payload_offset = kLrhBytes;
        out.payload_end = body;
        return PacketError::Ok;
    }
    const size_t packet = body; // LRH..ICRC
    size_t off = kLrhBytes;
    if (out.lrh.lnh == Lnh::IbaGlobal) {
        if (packet < kLrhBytes + kGrhBytes + kBthBytes + kIcrcBytes) {
            return PacketError::TooShort;
        }
        out.has_grh = true;
        out.grh = Grh::read(frame.data() + off);
        off += kGrhBytes;
        if (out.grh.ip_ver != kGrhIpVersion || out.grh.next_hdr != kGrhNextHeaderBth ||
            out.grh.pay_len != packet - off) {
            return PacketError::BadGrh;
        }
    }
    out.has_bth = true;
    out.bth_offset = off;
    out.bth = Bth::read(frame.data() + off);
    off += kBthBytes;
    out.payload_offset = off;
    out.payload_end = packet - kIcrcBytes;
    if (out.bth.tver != 0) {
        return PacketError::BadTver;
    }
    if (out.bth.pad > out.payload_end - out.payload_offset) {
        return PacketError::BadPad;
    }
    if (read_icrc(frame.data() + out.payload_end) != compute_icrc(frame.first(out.payload_end))) {
        return PacketError::BadIcrc;
    }
    const bool qp0 = out.bth.dest_qp == 0;
    if (out.lrh.vl == kVl15 && !qp0) {
        return PacketError::Vl15NotQp0;
    }
    if (qp0 && out.lrh.vl != kVl15) {
        return PacketError::Qp0NotVl15;
    }
    return PacketError::Ok;
}

bool seal(std::span<uint8_t> frame) {
    if (frame.size() < kMinRawFrameBytes || frame.size() > kMaxFrameBytes ||
        frame.size() % 4 != kVcrcBytes) {
        return false;
    }
    const auto lnh = static_cast<Lnh>(frame[1] & 0x3);
    if (is_iba(lnh) && frame.size() < kMinIbaFrameBytes) {
        return false;
    }
    const auto words = static_cast<uint16_t>((frame.size() - kVcrcBytes) / 4);
    put16(frame.data() + 4, static_cast<uint16_t>((get16(frame.data() + 4) & 0xF800) | words));
    const size_t body = frame.size() - kVcrcBytes;
    if (is_iba(lnh)) {
        const size_t icrc_at = body - kIcrcBytes;
        write_icrc(frame.data() + icrc_at, compute_icrc(frame.first(icrc_at)));
    }
    write_vcrc(frame.data() + body, compute_vcrc(frame.first(body)));
    return true;
}

void reseal_vcrc(std::span<uint8_t> frame) {
    if (frame.size() < kLrhBytes + kVcrcBytes) {
        return;
    }
    const size_t body = frame.size() - kVcrcBytes;
    write_vcrc(frame.data() + body, compute_vcrc(frame.first(body)));
}

void set_vl(std::span<uint8_t> frame, uint8_t vl) {
    if (frame.size() < kLrhBytes + kVcrcBytes) {
        return;
    }
    frame[0] = static_cast<uint8_t>((vl << 4) | (frame[0] & 0xF));
    reseal_vcrc(frame);
}

std::optional<uint16_t> frame_pkey(std::span<const uint8_t> frame) {
    if (frame.size() < kLrhBytes) {
        return std::nullopt;
    }
    const auto lnh = static_cast<Lnh>(frame[1] & 3);
    if (lnh != Lnh::IbaLocal && lnh != Lnh::IbaGlobal) {
        return std::nullopt;
    }
    const size_t bth = kLrhBytes + (lnh == Lnh::IbaGlobal ? kGrhBytes : 0);
    if (frame.size() < bth + kBthBytes) {
        return std::nullopt;
    }
    return get16(&frame[bth + 2]);
}

} // namespace ohca::ib
