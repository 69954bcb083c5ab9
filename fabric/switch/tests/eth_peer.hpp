// SPDX-License-Identifier: GPL-2.0-or-later
// The Ethernet mode's fake socket layer: frames built as ohca's netdev
// carries them, and a peer on one port that decodes what the switch
// sends it. Time is a number the test advances.
#pragma once

#include "eth/frame.hpp"
#include "eth_switch.hpp"
#include "framing.hpp"

#include <cstring>
#include <vector>

namespace ohca::fabric::test {

using eth::Mac;

inline Mac mac(uint8_t n) {
    return Mac{0x52, 0x54, 0x00, 0x00, 0x00, n};
}
inline const Mac kBroadcast{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};

struct FrameSpec {
    Mac dst{};
    Mac src{};
    size_t bytes = 100; // whole frame
    int pcp = -1;       // >= 0: one 802.1Q tag with this PCP
    int ip = 4;         // 4, 6 or 0 (EtherType 0x88B5, no IP)
    uint8_t dscp = 0;
    eth::Ecn ecn = eth::Ecn::NotEct;
    uint32_t seq = 0; // written after the IP header
};

inline std::vector<uint8_t> eth_frame(const FrameSpec &s) {
    std::vector<uint8_t> f(std::max<size_t>(s.bytes, 64));
    std::copy(s.dst.begin(), s.dst.end(), f.begin());
    std::copy(s.src.begin(), s.src.end(), f.begin() + 6);
    size_t off = 12;
    if (s.pcp >= 0) {
        f[off] = 0x81;
        f[off + 1] = 0x00;
        f[off + 2] = static_cast<uint8_t>(s.pcp << 5);
        f[off + 3] = 7; // VLAN 7
        off += 4;
    }
    const uint16_t type = s.ip == 4 ? eth::kTypeIpv4 : s.ip == 6 ? eth::kTypeIpv6 : 0x88B5;
    f[off] = static_cast<uint8_t>(type >> 8);
    f[off + 1] = static_cast<uint8_t>(type);
    off += 2;
    const uint8_t tos = static_cast<uint8_t>(s.dscp << 2 | static_cast<uint8_t>(s.ecn));
    size_t hdr = 0;
    if (s.ip == 4) {
        uint8_t *h = &f[off];
        h[0] = 0x45;
        h[1] = tos;
        const auto total = static_cast<uint16_t>(f.size() - off);
        h[2] = static_cast<uint8_t>(total >> 8);
        h[3] = static_cast<uint8_t>(total);
        h[8] = 64;
        h[9] = 17; // UDP
        h[12] = 10, h[15] = 1;
        h[16] = 10, h[19] = 2;
        const uint16_t c = eth::ip_checksum(std::span<const uint8_t>(h, 20));
        h[10] = static_cast<uint8_t>(c >> 8);
        h[11] = static_cast<uint8_t>(c);
        hdr = 20;
    } else if (s.ip == 6) {
        uint8_t *h = &f[off];
        h[0] = static_cast<uint8_t>(0x60 | tos >> 4);
        h[1] = static_cast<uint8_t>(tos << 4);
        h[6] = 17;
        h[7] = 64;
        hdr = 40;
    }
    uint8_t *p = &f[off + hdr];
    p[0] = static_cast<uint8_t>(s.seq >> 24);
    p[1] = static_cast<uint8_t>(s.seq >> 16);
    p[2] = static_cast<uint8_t>(s.seq >> 8);
    p[3] = static_cast<uint8_t>(s.seq);
    return f;
}

inline std::vector<uint8_t> framed_eth(std::span<const uint8_t> f) {
    std::vector<uint8_t> out(4 + f.size());
    const auto n = static_cast<uint32_t>(f.size());
    out[0] = static_cast<uint8_t>(n >> 24);
    out[1] = static_cast<uint8_t>(n >> 16);
    out[2] = static_cast<uint8_t>(n >> 8);
    out[3] = static_cast<uint8_t>(n);
    std::copy(f.begin(), f.end(), out.begin() + 4);
    return out;
}

struct EthPeer {
    EthSwitch &sw;
    uint8_t port;
    BasicStreamReader<eth::kMaxFrameBytes> reader;
    std::vector<std::vector<uint8_t>> data; // frames other than PFC
    std::vector<eth::PfcInfo> pfc;          // PFC frames received
    bool reads = true;

    EthPeer(EthSwitch &s, uint8_t p) : sw(s), port(p) {}

    void connect(uint64_t now = 0) { sw.connect(port, now); }
    void send_raw(std::span<const uint8_t> bytes, uint64_t now = 0) {
        sw.receive(port, bytes, now);
    }
    void send(const std::vector<uint8_t> &f, uint64_t now = 0) {
        sw.receive(port, framed_eth(f), now);
    }
    void send(const FrameSpec &s, uint64_t now = 0) { send(eth_frame(s), now); }
    void send_pfc(uint8_t enable, uint16_t quanta, uint64_t now = 0) {
        eth::PfcInfo p;
        p.enable = enable;
        p.quanta.fill(quanta);
        const auto f = eth::make_pfc(mac(0xEE), p);
        send(std::vector<uint8_t>(f.begin(), f.end()), now);
    }
    void pump(uint64_t now = 0) {
        if (!reads) {
            return;
        }
        auto out = sw.output(port);
        std::vector<uint8_t> copy(out.begin(), out.end());
        sw.consumed(port, copy.size(), now);
        reader.feed(copy, [&](std::span<const uint8_t> f) {
            eth::FrameInfo info;
            if (eth::parse(f, info) == eth::FrameError::Ok && info.mac_control &&
                info.opcode == eth::kOpPfc) {
                pfc.push_back(info.pfc);
                return;
            }
            data.emplace_back(f.begin(), f.end());
        });
    }
};

} // namespace ohca::fabric::test
