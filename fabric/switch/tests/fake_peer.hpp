// SPDX-License-Identifier: GPL-2.0-or-later
// The unit tests' fake socket layer: a peer on one switch port that
// speaks the stream framing, keeps its own credits and decodes what the
// switch sends it. Time is a number the test advances.
#pragma once

#include "framing.hpp"
#include "ib/bytes.hpp"
#include "ib/link.hpp"
#include "ib/mad.hpp"
#include "ib/packet.hpp"
#include "switch.hpp"

#include <cstring>
#include <vector>

namespace ohca::fabric::test {

using namespace ohca::ib;

inline std::vector<uint8_t> framed(std::span<const uint8_t> f) {
    std::vector<uint8_t> out(4 + f.size());
    put32(out.data(), static_cast<uint32_t>(f.size()));
    std::copy(f.begin(), f.end(), out.begin() + 4);
    return out;
}

// A data packet: LRH, BTH (RC SEND only), payload, ICRC, VCRC.
inline std::vector<uint8_t> data_frame(uint8_t vl, uint8_t sl, uint16_t dlid, uint16_t slid,
                                       size_t payload, uint32_t psn = 0) {
    std::vector<uint8_t> f(kLrhBytes + kBthBytes + payload + kIcrcBytes + kVcrcBytes);
    Lrh l;
    l.vl = vl;
    l.sl = sl;
    l.dlid = dlid;
    l.slid = slid;
    l.write(f.data());
    Bth b;
    b.opcode = 0x04;
    b.pkey = 0xFFFF;
    b.dest_qp = 0x11;
    b.psn = psn;
    b.write(f.data() + kLrhBytes);
    for (size_t i = 0; i < payload; ++i) {
        f[kLrhBytes + kBthBytes + i] = static_cast<uint8_t>(psn + i);
    }
    seal(f);
    return f;
}

// An SMP on VL15 to QP0 (LRH, BTH, DETH, MAD).
inline std::vector<uint8_t> smp_frame(const Smp &s, uint16_t dlid = kPermissiveLid,
                                      uint16_t slid = kPermissiveLid, uint32_t dqp = 0,
                                      uint8_t vl = kVl15, uint32_t qkey = 0) {
    std::vector<uint8_t> f(kLrhBytes + kBthBytes + 8 + kMadBytes + kIcrcBytes + kVcrcBytes);
    Lrh l;
    l.vl = vl;
    l.dlid = dlid;
    l.slid = slid;
    l.write(f.data());
    Bth b;
    b.opcode = 0x64;
    b.pkey = 0xFFFF;
    b.dest_qp = dqp;
    b.write(f.data() + kLrhBytes);
    put32(f.data() + kLrhBytes + kBthBytes, qkey);
    put32(f.data() + kLrhBytes + kBthBytes + 4, 0);
    Mad m{};
    s.write(m);
    std::memcpy(f.data() + kLrhBytes + kBthBytes + 8, m.data(), kMadBytes);
    seal(f);
    return f;
}

inline Mad mad_of(std::span<const uint8_t> frame) {
    Mad m{};
    std::memcpy(m.data(), frame.data() + kLrhBytes + kBthBytes + 8, kMadBytes);
    return m;
}

struct FakePeer {
    Switch &sw;
    uint8_t port;
    LinkCredits credits;
    StreamReader reader;
    std::vector<std::vector<uint8_t>> data; // data frames received
    bool auto_credit = true;                // return credit as frames arrive
    bool reads = true;                      // drains the switch's output
    uint64_t fcps = 0;

    FakePeer(Switch &s, uint8_t p, uint16_t buffer = 256, uint8_t vls = 4)
        : sw(s), port(p), credits(buffer, vls) {}

    void connect(uint64_t now = 0) {
        sw.connect(port, now);
        send_fcps(now, true);
    }
    void send_raw(std::span<const uint8_t> bytes, uint64_t now = 0) {
        sw.receive(port, bytes, now);
    }
    void send_fcps(uint64_t now = 0, bool all = false) {
        for (uint8_t vl = 0; vl < credits.vls(); ++vl) {
            if (!all && !credits.fcp_pending(vl)) {
                continue;
            }
            std::array<uint8_t, 6> b{};
            credits.take_fcp(vl).write(b);
            send_raw(framed(b), now);
        }
    }
    // Sends a data frame if the switch gave credit; true if sent.
    bool send(const std::vector<uint8_t> &f, uint64_t now = 0, bool ignore_credit = false) {
        const uint8_t vl = f[0] >> 4;
        const uint16_t blocks = blocks_for(f.size());
        if (!ignore_credit && !credits.may_send(vl, blocks)) {
            return false;
        }
        credits.on_sent(vl, blocks);
        send_raw(framed(f), now);
        return true;
    }
    // Reads what the switch has for us.
    void pump(uint64_t now = 0) {
        if (!reads) {
            return;
        }
        auto out = sw.output(port);
        std::vector<uint8_t> copy(out.begin(), out.end());
        sw.consumed(port, copy.size(), now);
        reader.feed(copy, [&](std::span<const uint8_t> f) {
            if (is_link_packet(f.size())) {
                FlowControlPacket fcp;
                if (FlowControlPacket::read(f, fcp)) {
                    credits.on_fcp(fcp);
                    ++fcps;
                }
                return;
            }
            data.emplace_back(f.begin(), f.end());
            const uint8_t vl = f[0] >> 4;
            if (vl != kVl15 && credits.on_received(vl, blocks_for(f.size())) && auto_credit) {
                credits.on_released(vl, blocks_for(f.size()));
            }
        });
        if (auto_credit) {
            send_fcps(now);
        }
    }
};

} // namespace ohca::fabric::test
