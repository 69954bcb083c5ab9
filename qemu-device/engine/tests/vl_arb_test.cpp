// SPDX-License-Identifier: GPL-2.0-or-later
// VL arbitration on the device's own InfiniBand port (device/vl_arbiter.hpp):
// two UC QPs on SLs the SL2VL table maps to two VLs, both backlogged, share
// the link by the VLArbitration tables the test's SM sets (weights, the
// high-priority table and its limit, weight 0), a VL out of credit holds up
// no other, and hostile tables leave the engine bounded and idle.
#include "device/device.hpp"
#include "device/ib_flow.hpp"
#include "device/run_loop.hpp"
#include "ib/link.hpp"
#include "ib/mad.hpp"
#include "ib/packet.hpp"
#include "ib_sm.hpp"
#include "rdma_node.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <utility>
#include <vector>

namespace ohca::test {
namespace {

constexpr uint32_t kMsgLen = 16384; // 16 packets at MTU 1024
constexpr int kMsgs = 24;           // per QP: 384 KiB, many credit windows
constexpr uint8_t kMtu1024 = 3;

// The VLArbitration table entries of one block: (VL, weight) pairs.
using Entries = std::vector<std::pair<uint8_t, uint8_t>>;

void set_vlarb(RdmaNode &n, bool high, const Entries &e) {
    ib::SmpData d{};
    for (size_t i = 0; i < e.size(); ++i) {
        d[2 * i] = e[i].first;
        d[2 * i + 1] = e[i].second;
    }
    const uint32_t block = high ? 3 : 1;
    EXPECT_EQ(smp(n, ib::method::Set, ib::attr::VlArbTable, block << 16, d).status(), 0);
}

// SL s -> map[s] (16 entries).
void set_sl2vl(RdmaNode &n, const std::array<uint8_t, 16> &map) {
    ib::SmpData d{};
    for (size_t i = 0; i < 8; ++i) {
        d[i] = static_cast<uint8_t>((map[2 * i] << 4) | (map[2 * i + 1] & 0xF));
    }
    EXPECT_EQ(smp(n, ib::method::Set, ib::attr::SlToVlTable, 0, d).status(), 0);
}

void set_high_limit(RdmaNode &n, uint8_t limit) {
    ib::PortInfo pi = port_info(n);
    pi.vl_high_limit = limit;
    EXPECT_EQ(set_port_info(n, pi), 0);
}

// Two UC QPs from a to b, the first on SL 0 (VL 0), the second on SL 1
// (VL 1 by the default SL2VL table), each with kMsgs WRITEs posted but not
// rung: ring() starts both at once.
struct TwoVls {
    IbPair p;
    Side a0, a1, b0, b1;
    TwoVls() {
        auto side = [&](RdmaNode &n) {
            return make_side(n, size_t{kMsgLen} * kMsgs, 8, {}, 8, kSideAccess, OHCA_QPT_UC);
        };
        a0 = side(p.a);
        b0 = side(p.b);
        a1 = side(p.a);
        b1 = side(p.b);
        p.a.ib_sl = 0;
        p.a.connect_uc(a0.qp, b0.qp.qpn, p.b, kMtu1024);
        p.a.ib_sl = 1;
        p.a.connect_uc(a1.qp, b1.qp.qpn, p.b, kMtu1024);
        p.b.connect_uc(b0.qp, a0.qp.qpn, p.a, kMtu1024);
        p.b.connect_uc(b1.qp, a1.qp.qpn, p.a, kMtu1024);
    }
    void post(Side &a, const Side &b, int msgs = kMsgs) {
        for (int i = 0; i < msgs; ++i) {
            SendReq w;
            w.wr_id = static_cast<uint64_t>(i);
            w.opcode = OHCA_WR_RDMA_WRITE;
            w.flags = 0; // unsignaled: nothing to poll
            w.remote_addr = b.buf + uint64_t{kMsgLen} * i;
            w.rkey = b.key;
            w.sges = {{a.buf + uint64_t{kMsgLen} * i, kMsgLen, a.key}};
            p.a.post_send(a.qp, w, false);
        }
    }
    void ring() {
        p.a.ring_sq(a0.qp);
        p.a.ring_sq(a1.qp);
    }
};

// a's data frames on the wire, in order, as (VL, bytes).
struct Sent {
    std::vector<std::pair<uint8_t, size_t>> frames;
    void add(const std::vector<uint8_t> &f) {
        if (f.size() == ib::kLinkPacketBytes) {
            return;
        }
        ib::Packet pk;
        ASSERT_EQ(ib::parse(f, pk), ib::PacketError::Ok);
        frames.emplace_back(pk.lrh.vl, f.size());
    }
    [[nodiscard]] size_t count(uint8_t vl) const {
        size_t n = 0;
        for (const auto &[v, len] : frames) {
            n += v == vl ? 1 : 0;
        }
        return n;
    }
    // Bytes per VL from the first frame both VLs had sent to the first
    // one that took a VL past kWindow bytes: while both had data and the
    // peer's credit (a VL's window is 64 KiB with eight VLs in operation;
    // beyond it a VL waits for b's FCP and the other sends alone).
    static constexpr double kWindow = 40000;
    [[nodiscard]] std::pair<double, double> contended() const {
        std::array<double, 16> total{};
        std::array<double, 16> bytes{};
        bool both = false;
        for (const auto &[vl, len] : frames) {
            total[vl] += static_cast<double>(len);
            if (total[vl] > kWindow) {
                break;
            }
            both = both || (total[0] > 0 && total[1] > 0);
            if (both) {
                bytes[vl] += static_cast<double>(len);
            }
        }
        return {bytes[0], bytes[1]};
    }
};

Sent run(TwoVls &t, const std::function<bool(bool, std::vector<uint8_t> &)> &drop = {}) {
    Sent s;
    t.ring();
    pump(t.p.a, t.p.b, [&](bool from_a, std::vector<uint8_t> &f) {
        if (from_a) {
            s.add(f);
        }
        return drop ? drop(from_a, f) : false;
    });
    return s;
}

const QpVlArbiter &arbiter(RdmaNode &n) {
    return *device_of(n.e).run_loop().vl_arbiter();
}

// Weights 48:16 (3072 and 1024 bytes a turn): three packets of VL 0 for
// each of VL 1 while both have data, then VL 1 alone.
TEST(VlArb, WeightsThreeToOneGiveThreeToOneBytes) {
    TwoVls t;
    set_vlarb(t.p.a, false, {{0, 48}, {1, 16}});
    t.post(t.a0, t.b0);
    t.post(t.a1, t.b1);
    const Sent s = run(t);
    const auto [vl0, vl1] = s.contended();
    ASSERT_GT(vl1, 0.0);
    EXPECT_NEAR(vl0 / vl1, 3.0, 0.3) << vl0 << " / " << vl1;
    std::printf("VL0:VL1 bytes while both sent: %.0f:%.0f = %.3f\n", vl0, vl1, vl0 / vl1);

    // Every packet went, once (UC: nothing is sent again).
    EXPECT_EQ(s.count(0), s.count(1));
    EXPECT_EQ(s.count(0), size_t{kMsgs} * (kMsgLen / 1024));
    EXPECT_GT(arbiter(t.p.a).stats().contended_picks, 0u);
    std::vector<uint8_t> u(size_t{kMsgLen} * kMsgs), v(u.size());
    EXPECT_TRUE(t.p.a.host.read(t.a1.buf, u.data(), u.size()));
    EXPECT_TRUE(t.p.b.host.read(t.b1.buf, v.data(), v.size()));
    EXPECT_TRUE(u == v);
}

// The default tables (one entry of weight 1 per VL): a packet each in turn.
TEST(VlArb, DefaultTablesAlternatePacketByPacket) {
    TwoVls t;
    t.post(t.a0, t.b0);
    t.post(t.a1, t.b1);
    const Sent s = run(t);
    const auto [vl0, vl1] = s.contended();
    ASSERT_GT(vl1, 0.0);
    EXPECT_NEAR(vl0 / vl1, 1.0, 0.1) << vl0 << " / " << vl1;
    std::printf("default tables VL0:VL1 = %.3f\n", vl0 / vl1);
}

// VL 1 in the high-priority table: with no limit (255) VL 0 sends nothing
// while VL 1 has data and credit; with a limit of 1 (4096 bytes), VL 0
// sends one packet after each 4 KiB of VL 1 (four packets of ~1 KiB).
TEST(VlArb, HighPriorityTableAndItsLimit) {
    {
        TwoVls t;
        set_vlarb(t.p.a, false, {{0, 1}});
        set_vlarb(t.p.a, true, {{1, 1}});
        set_high_limit(t.p.a, 255);
        t.post(t.a0, t.b0);
        t.post(t.a1, t.b1);
        const Sent s = run(t);
        // From VL 1's first packet until its credit ran out: no VL 0.
        double vl1 = 0;
        size_t vl0 = 0;
        for (const auto &[vl, len] : s.frames) {
            if (vl == 1) {
                vl1 += static_cast<double>(len);
            } else if (vl1 > 0) {
                ++vl0;
            }
            if (vl1 > Sent::kWindow) {
                break;
            }
        }
        EXPECT_GT(vl1, Sent::kWindow);
        EXPECT_EQ(vl0, 0u);
        EXPECT_EQ(s.count(0), s.count(1)); // then VL 0 sends everything
    }
    {
        TwoVls t;
        set_vlarb(t.p.a, false, {{0, 1}});
        set_vlarb(t.p.a, true, {{1, 1}});
        set_high_limit(t.p.a, 1);
        t.post(t.a0, t.b0);
        t.post(t.a1, t.b1);
        const Sent s = run(t);
        const auto [vl0, vl1] = s.contended();
        ASSERT_GT(vl0, 0.0);
        EXPECT_NEAR(vl1 / vl0, 4.0, 0.5) << vl1 << " / " << vl0;
        std::printf("high VL1 : low VL0 bytes, limit 1: %.3f\n", vl1 / vl0);
    }
}

// IBA: a VL whose entries all weigh 0 is not served: its QP sends nothing
// (and the engine does not spin on it), until the SM gives it a weight.
TEST(VlArb, WeightZeroSendsNothingUntilTheSmGivesAWeight) {
    TwoVls t;
    set_vlarb(t.p.a, false, {{0, 16}, {1, 0}});
    t.post(t.a0, t.b0);
    t.post(t.a1, t.b1);
    const Sent s = run(t);
    EXPECT_EQ(s.count(1), 0u);
    EXPECT_EQ(s.count(0), size_t{kMsgs} * (kMsgLen / 1024));
    // Idle: another pass makes no run that visits the waiting QP again.
    const uint64_t visits = device_of(t.p.a.e).sched_stats().visits;
    t.p.a.process();
    EXPECT_LE(device_of(t.p.a.e).sched_stats().visits, visits + 1);
    set_vlarb(t.p.a, false, {{0, 16}, {1, 16}});
    Sent after;
    t.p.a.ring_sq(t.a1.qp);
    pump(t.p.a, t.p.b, [&](bool from_a, std::vector<uint8_t> &f) {
        if (from_a) {
            after.add(f);
        }
        return false;
    });
    EXPECT_EQ(after.count(1), size_t{kMsgs} * (kMsgLen / 1024));
}

// b's FCPs for VL 0 are lost: VL 0 runs out of credit and stops, VL 1
// goes on to its end (its FCPs still come).
TEST(VlArb, AVlOutOfCreditDoesNotStallTheOther) {
    TwoVls t;
    t.post(t.a0, t.b0);
    t.post(t.a1, t.b1);
    const Sent s = run(t, [](bool from_a, std::vector<uint8_t> &f) {
        ib::FlowControlPacket fcp;
        return !from_a && ib::FlowControlPacket::read(f, fcp) && fcp.vl == 0;
    });
    EXPECT_LT(s.count(0), size_t{kMsgs} * (kMsgLen / 1024));
    EXPECT_EQ(s.count(1), size_t{kMsgs} * (kMsgLen / 1024));
    // The periodic FCP repairs VL 0.
    Sent rest;
    for (int i = 0; i < 100 && s.count(0) + rest.count(0) < size_t{kMsgs} * 16; ++i) {
        t.p.b.host.now += IbFlow::kFcpPeriodNs;
        t.p.a.host.now += IbFlow::kFcpPeriodNs;
        ohca_engine_process(t.p.b.e);
        pump(t.p.a, t.p.b, [&](bool from_a, std::vector<uint8_t> &f) {
            if (from_a) {
                rest.add(f);
            }
            return false;
        });
    }
    EXPECT_EQ(s.count(0) + rest.count(0), size_t{kMsgs} * (kMsgLen / 1024));
}

// Hostile tables: every weight 0, entries naming VL 15 and VLs beyond
// those in operation, an SL mapped to VL 15. Nothing is sent on a VL the
// tables do not serve, no data on VL 15, the engine stays idle, and the
// VL the tables do serve goes on.
TEST(VlArb, HostileTablesBoundedAndDefined) {
    TwoVls t;
    Entries junk;
    for (uint8_t i = 0; i < 32; ++i) {
        junk.emplace_back(static_cast<uint8_t>(i % 2 == 0 ? 15 : 8 + i % 7), 255);
    }
    set_vlarb(t.p.a, false, junk);
    set_vlarb(t.p.a, true, {});
    t.post(t.a0, t.b0, 2);
    const Sent none = run(t);
    EXPECT_TRUE(none.frames.empty());
    const uint64_t visits = device_of(t.p.a.e).sched_stats().visits;
    t.p.a.process();
    EXPECT_LE(device_of(t.p.a.e).sched_stats().visits, visits + 1);

    // SL 1 mapped to VL 15: its QP waits, the other VL goes.
    std::array<uint8_t, 16> map{};
    map[1] = 15;
    set_sl2vl(t.p.a, map);
    junk[1] = {0, 8};
    set_vlarb(t.p.a, false, junk);
    t.post(t.a1, t.b1, 2);
    const Sent s = run(t);
    EXPECT_EQ(s.count(15), 0u);
    EXPECT_EQ(s.count(0), 2u * (kMsgLen / 1024));
    EXPECT_EQ(s.count(1), 0u);
    // Mapped back to a VL the tables serve, it moves there and goes.
    map[1] = 0;
    set_sl2vl(t.p.a, map);
    t.p.a.ring_sq(t.a1.qp);
    const Sent moved = run(t);
    EXPECT_EQ(moved.count(0), 2u * (kMsgLen / 1024));
    EXPECT_GE(arbiter(t.p.a).stats().rehomed, 1u);
}

} // namespace
} // namespace ohca::test
