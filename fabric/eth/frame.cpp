// SPDX-License-Identifier: GPL-2.0-or-later
#include "frame.hpp"

#include <algorithm>

namespace ohca::eth {

namespace {

uint16_t get16(const uint8_t *p) {
    return static_cast<uint16_t>((p[0] << 8) | p[1]);
}
void put16(uint8_t *p, uint16_t v) {
    p[0] = static_cast<uint8_t>(v >> 8);
    p[1] = static_cast<uint8_t>(v);
}

void parse_ip(std::span<const uint8_t> frame, FrameInfo &out) {
    const std::span<const uint8_t> l3 = frame.subspan(out.l3);
    if (out.type == kTypeIpv4 && l3.size() >= 20 && (l3[0] >> 4) == 4) {
        const size_t ihl = (l3[0] & 0xFu) * 4u;
        if (ihl >= 20 && ihl <= l3.size()) {
            out.ip = 4;
            out.dscp = static_cast<uint8_t>(l3[1] >> 2);
            out.ecn = static_cast<Ecn>(l3[1] & kEcnMask);
        }
    } else if (out.type == kTypeIpv6 && l3.size() >= 40 && (l3[0] >> 4) == 6) {
        const auto tclass = static_cast<uint8_t>((l3[0] & 0xF) << 4 | l3[1] >> 4);
        out.ip = 6;
        out.dscp = static_cast<uint8_t>(tclass >> 2);
        out.ecn = static_cast<Ecn>(tclass & kEcnMask);
    }
}

} // namespace

FrameError parse(std::span<const uint8_t> frame, FrameInfo &out, size_t max_bytes) {
    out = FrameInfo{};
    if (frame.size() > max_bytes) {
        return FrameError::Oversize;
    }
    if (frame.size() < kHeaderBytes) {
        return FrameError::Runt;
    }
    std::copy_n(frame.begin(), 6, out.dst.begin());
    std::copy_n(frame.begin() + 6, 6, out.src.begin());
    if (is_group(out.src)) {
        return FrameError::GroupSource;
    }
    size_t off = 12;
    out.type = get16(&frame[off]);
    while (out.type == kTypeVlan || out.type == kTypeQinQ) {
        if (out.tags == kMaxTags) {
            return FrameError::TooManyTags;
        }
        if (frame.size() < off + 6) {
            return FrameError::Runt;
        }
        if (out.type == kTypeVlan && !out.has_pcp) {
            out.has_pcp = true;
            out.pcp = static_cast<uint8_t>(frame[off + 2] >> 5);
        }
        ++out.tags;
        off += 4;
        out.type = get16(&frame[off]);
    }
    out.l3 = off + 2;
    if (out.type == kTypeMacControl) {
        out.mac_control = true;
        if (frame.size() < out.l3 + 2) {
            return FrameError::BadMacControl;
        }
        out.opcode = get16(&frame[out.l3]);
        if (out.opcode == kOpPfc) {
            if (frame.size() < out.l3 + 4 + 2 * kPriorities) {
                return FrameError::BadMacControl;
            }
            out.pfc.enable = frame[out.l3 + 3];
            for (size_t i = 0; i < kPriorities; ++i) {
                out.pfc.quanta[i] = get16(&frame[out.l3 + 4 + 2 * i]);
            }
        }
        return FrameError::Ok;
    }
    parse_ip(frame, out);
    return FrameError::Ok;
}

uint16_t ip_checksum(std::span<const uint8_t> hdr) {
    uint32_t sum = 0;
    for (size_t i = 0; i + 1 < hdr.size(); i += 2) {
        sum += get16(&hdr[i]);
    }
    while ((sum >> 16) != 0) {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    return static_cast<uint16_t>(~sum);
}

bool mark_ce(std::span<uint8_t> frame, const FrameInfo &info) {
    if (info.ip == 0 || (info.ecn != Ecn::Ect0 && info.ecn != Ecn::Ect1)) {
        return false;
    }
    uint8_t *l3 = frame.data() + info.l3;
    if (info.ip == 6) {
        l3[1] = static_cast<uint8_t>(l3[1] | 0x30); // traffic class bits 1..0
        return true;
    }
    // RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), m the 16-bit word changed.
    const uint16_t m = get16(l3);
    l3[1] = static_cast<uint8_t>(l3[1] | 3);
    const uint16_t m2 = get16(l3);
    uint32_t sum = static_cast<uint16_t>(~get16(l3 + 10));
    sum += static_cast<uint16_t>(~m);
    sum += m2;
    while ((sum >> 16) != 0) {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    put16(l3 + 10, static_cast<uint16_t>(~sum));
    return true;
}

std::array<uint8_t, kMinFrameBytes> make_pfc(const Mac &src, const PfcInfo &pfc) {
    std::array<uint8_t, kMinFrameBytes> f{};
    std::copy(kPfcDst.begin(), kPfcDst.end(), f.begin());
    std::copy(src.begin(), src.end(), f.begin() + 6);
    put16(&f[12], kTypeMacControl);
    put16(&f[14], kOpPfc);
    f[17] = pfc.enable;
    for (size_t i = 0; i < kPriorities; ++i) {
        put16(&f[18 + 2 * i], pfc.quanta[i]);
    }
    return f;
}

std::array<uint8_t, kMinFrameBytes> make_pause(const Mac &src, uint16_t quanta) {
    std::array<uint8_t, kMinFrameBytes> f{};
    std::copy(kPfcDst.begin(), kPfcDst.end(), f.begin());
    std::copy(src.begin(), src.end(), f.begin() + 6);
    put16(&f[12], kTypeMacControl);
    put16(&f[14], kOpPause);
    put16(&f[16], quanta);
    return f;
}

std::optional<uint16_t> pause_quanta(std::span<const uint8_t> frame, const FrameInfo &info) {
    if (!info.mac_control || info.opcode != kOpPause || frame.size() < info.l3 + 4) {
        return std::nullopt;
    }
    return get16(&frame[info.l3 + 2]);
}

} // namespace ohca::eth
