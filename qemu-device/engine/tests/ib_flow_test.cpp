// SPDX-License-Identifier: GPL-2.0-or-later
// The device's side of an InfiniBand link's credits (IbFlow): one receive
// pool split among the VLs in operation, credit returned as packets are
// consumed, a VL without credit holding up no other, a hostile peer's
// credit (none, or a flood of updates) bounded; and, through two devices
// with a shaped switch port between them on the fake clock, the last hop
// kept busy and the ACK timer never running while a request waits for
// the link's credit.
#include "device/device.hpp"
#include "device/ib_flow.hpp"
#include "device/limits.hpp"
#include "ib/link.hpp"
#include "ib/mad.hpp"
#include "ib_sm.hpp"
#include "rdma_node.hpp"

#include <gtest/gtest.h>

#include <deque>

namespace ohca::test {
namespace {

struct FakePort final : Port {
    std::vector<std::vector<uint8_t>> out;
    void transmit(std::span<const uint8_t> f) override { out.emplace_back(f.begin(), f.end()); }
    // The FCPs among what was sent (and the data packets apart).
    std::vector<ib::FlowControlPacket> fcps() const {
        std::vector<ib::FlowControlPacket> v;
        for (const auto &f : out) {
            ib::FlowControlPacket p;
            if (ib::FlowControlPacket::read(f, p)) {
                v.push_back(p);
            }
        }
        return v;
    }
    size_t data() const {
        size_t n = 0;
        for (const auto &f : out) {
            n += ib::is_link_packet(f.size()) ? 0 : 1;
        }
        return n;
    }
};

std::array<uint8_t, ib::kLinkPacketBytes> fcp_bytes(uint8_t vl, uint16_t fctbs, uint16_t fccl) {
    ib::FlowControlPacket p;
    p.vl = vl;
    p.fctbs = fctbs & ib::kCreditMask;
    p.fccl = fccl & ib::kCreditMask;
    std::array<uint8_t, ib::kLinkPacketBytes> b{};
    p.write(b);
    return b;
}

// The pool is split among the VLs in operation: eight get 1024 blocks
// each, four or fewer the largest window (2048), the rest nothing.
TEST(IbFlow, PoolSplitAmongOperationalVls) {
    FakePort port;
    IbFlow flow(port, 8);
    EXPECT_EQ(flow.operational(), 8);
    for (uint8_t vl = 0; vl < 8; ++vl) {
        EXPECT_EQ(flow.credits().buffer(vl), 1024);
    }
    flow.set_operational(2);
    EXPECT_EQ(flow.credits().buffer(0), 2048);
    EXPECT_EQ(flow.credits().buffer(1), 2048);
    EXPECT_EQ(flow.credits().buffer(2), 0);
    flow.reset(0);
    const auto f = port.fcps();
    ASSERT_EQ(f.size(), 8u); // every VL's FCP at link start
    EXPECT_EQ(f[0].fccl, 2048);
    EXPECT_EQ(f[1].fccl, 2048);
    EXPECT_EQ(f[2].fccl, 0);
    // Whatever is asked, at least one VL and no more than the port has.
    flow.set_operational(0);
    EXPECT_EQ(flow.operational(), 1);
    EXPECT_EQ(flow.credits().buffer(0), 2048);
    flow.set_operational(15);
    EXPECT_EQ(flow.operational(), 8);
    // The memory a peer can fill is the pool, whatever the split.
    uint32_t total = 0;
    for (uint8_t vl = 0; vl < 8; ++vl) {
        total += flow.credits().buffer(vl);
    }
    EXPECT_LE(total, IbFlow::kPoolBlocks);
}

// Credit goes back as soon as a quarter of a VL's buffer is consumed,
// without waiting for the end of the run.
TEST(IbFlow, CreditReturnedWhileConsuming) {
    FakePort port;
    IbFlow flow(port, 8);
    flow.reset(0);
    port.out.clear();
    const size_t len = 4096 + 30; // 65 blocks
    for (int i = 0; i < 1024 / 65; ++i) {
        ASSERT_TRUE(flow.on_received(0, len)); // 975 of 1024 blocks
    }
    int consumed = 0;
    while (port.fcps().empty()) {
        flow.on_consumed(0, len);
        ++consumed;
    }
    EXPECT_EQ(consumed, 4); // 260 blocks >= 1024 / 4
    // ABR 975, and 1024 - 11 x 65 free
    EXPECT_EQ(port.fcps().front().fccl, 975 + 1024 - 11 * 65);
    EXPECT_FALSE(flow.on_received(0, 1024 * 64)); // never beyond the buffer
}

// A peer that never gives credit on VL1 holds up VL1 only; what waits is
// bounded whatever arrives, and a flood of credit updates (good, bad, for
// any VL) sends nothing of its own and grows nothing.
TEST(IbFlow, HostilePeerStallsOneVlBoundedly) {
    FakePort port;
    IbFlow flow(port, 8);
    flow.reset(0);
    port.out.clear();
    ASSERT_TRUE(flow.on_link_packet(fcp_bytes(0, 0, 2000)));
    const std::vector<uint8_t> pkt(200, 0xab); // 4 blocks
    EXPECT_EQ(flow.send(pkt, 1), IbFlow::Out::Held);
    EXPECT_FALSE(flow.room(1, pkt.size()));
    // VL0 goes past VL1's held packet.
    EXPECT_TRUE(flow.room(0, pkt.size()));
    EXPECT_EQ(flow.send(pkt, 0), IbFlow::Out::Sent);
    size_t dropped = 0;
    for (int i = 0; i < 10000; ++i) {
        dropped += flow.send(pkt, 1) == IbFlow::Out::Dropped ? 1 : 0;
    }
    EXPECT_EQ(flow.held(), IbFlow::kMaxHeld);
    EXPECT_EQ(dropped, 10000 + 1 - IbFlow::kMaxHeld);
    EXPECT_EQ(flow.send(pkt, 0), IbFlow::Out::Sent); // VL0 still flows
    EXPECT_EQ(port.data(), 2u);
    // The flood: VL0's limit moved about, VL1 still none, bad CRCs, VL15.
    auto bad = fcp_bytes(1, 0, 100);
    bad[5] ^= 1;
    for (uint32_t i = 0; i < 100000; ++i) {
        (void)flow.on_link_packet(
            fcp_bytes(0, static_cast<uint16_t>(i * 7), static_cast<uint16_t>(i)));
        (void)flow.on_link_packet(fcp_bytes(1, static_cast<uint16_t>(i), 0));
        (void)flow.on_link_packet(bad);
    }
    EXPECT_EQ(port.out.size(), 2u); // nothing answered, nothing resent
    EXPECT_EQ(flow.held(), IbFlow::kMaxHeld);
    // Credit on VL1 at last: its held packets go, in order, as far as it
    // reaches (25 of 4 blocks in 100).
    ASSERT_TRUE(flow.on_link_packet(fcp_bytes(1, 0, 100)));
    EXPECT_EQ(port.data(), 2u + 25u);
    EXPECT_EQ(flow.held(), IbFlow::kMaxHeld - 25);
    EXPECT_TRUE(flow.short_of_credit(1));
}

// ---- two devices, one shaped switch port between them -------------------------

// A switch between A and B, each link with its credits as the switch
// keeps them (one LinkCredits per link: its input buffer of 256 blocks per
// VL, and the device's credit): the port to B is a line of 'rate_bps',
// the port to A unshaped. B's run loop runs only every 'b_period_ns', as
// a loaded host schedules a VM's QEMU.
struct ShapedHop {
    ShapedHop(IbPair &pair, uint64_t rate, uint64_t b_period)
        : p(pair), rate_bps(rate), b_period_ns(b_period) {}
    IbPair &p;
    uint64_t rate_bps;
    uint64_t b_period_ns;
    ib::LinkCredits link_a{256, 8};
    ib::LinkCredits link_b{256, 8};
    std::deque<std::vector<uint8_t>> to_a, to_b;
    uint64_t tokens_bits = 0;
    uint64_t next_b_ns = 0;
    uint64_t line_bits = 0; // carried to B
    uint64_t overruns = 0;

    static void fcps(ib::LinkCredits &l, RdmaNode &n) {
        for (uint8_t vl = 0; vl < l.vls(); ++vl) {
            if (l.fcp_pending(vl)) {
                std::array<uint8_t, ib::kLinkPacketBytes> f{};
                l.take_fcp(vl).write(f);
                (void)ohca_engine_receive_frame(n.e, f.data(), f.size());
            }
        }
    }
    // What a device sent: its FCPs to the link, its data into the input.
    void from(RdmaNode &n, ib::LinkCredits &l, std::deque<std::vector<uint8_t>> &q) {
        for (auto &f : n.host.wire) {
            ib::FlowControlPacket fcp;
            if (ib::FlowControlPacket::read(f, fcp)) {
                (void)l.on_fcp(fcp);
            } else if (!l.on_received(static_cast<uint8_t>(f[0] >> 4), ib::blocks_for(f.size()))) {
                ++overruns;
            } else {
                q.push_back(std::move(f));
            }
        }
        n.host.wire.clear();
    }
    // The queue for 'n' out through link 'out', releasing input 'in'.
    void forward(std::deque<std::vector<uint8_t>> &q, RdmaNode &n, ib::LinkCredits &out,
                 ib::LinkCredits &in, bool shaped) {
        while (!q.empty()) {
            auto &f = q.front();
            const auto vl = static_cast<uint8_t>(f[0] >> 4);
            const uint16_t blocks = ib::blocks_for(f.size());
            if (!out.may_send(vl, blocks) || (shaped && tokens_bits < f.size() * 8)) {
                return;
            }
            if (shaped) {
                tokens_bits -= f.size() * 8;
                line_bits += f.size() * 8;
            }
            out.on_sent(vl, blocks);
            EXPECT_EQ(ohca_engine_receive_frame(n.e, f.data(), f.size()), OHCA_ENGINE_RX_CONSUMED);
            in.on_released(vl, blocks);
            q.pop_front();
        }
    }
    // The link start: the switch's credit to both devices, theirs to it.
    void start() {
        fcps(link_a, p.a);
        fcps(link_b, p.b);
        p.a.host.now += IbFlow::kFcpPeriodNs; // their periodic FCPs
        p.b.host.now = p.a.host.now;
        p.a.process();
        p.b.process();
        from(p.a, link_a, to_b);
        from(p.b, link_b, to_a);
    }
    void step(uint64_t now, uint64_t dt) {
        p.a.host.now = now;
        p.b.host.now = now;
        p.a.process();
        from(p.a, link_a, to_b);
        // two largest packets of burst
        tokens_bits = std::min(tokens_bits + rate_bps * dt / 1'000'000'000, uint64_t{2 * 4222 * 8});
        forward(to_b, p.b, link_b, link_a, true);
        if (now >= next_b_ns) {
            next_b_ns = now + b_period_ns;
            p.b.process();
            from(p.b, link_b, to_a);
        }
        forward(to_a, p.a, link_a, link_b, false);
        fcps(link_a, p.a);
        fcps(link_b, p.b);
    }
};

// A paced sender (RC WRITEs of 64 KiB, always 32 posted) into a device
// whose run loop comes every millisecond, through a 400 Mbit/s line: the
// receiver's credit (a whole window per VL of the pool) keeps the line
// busy. With 128 blocks per VL (before 2026-12-06) the last hop sent one
// packet per run of the receiver: under 10 % of this line.
TEST(IbFlow, ShapedLastHopKeptBusy) {
    IbPair p;
    auto [sa, sb] = p.rc(1 << 20, 8, [](size_t k) { return static_cast<uint8_t>(k * 3 + 1); });
    ShapedHop hop(p, 400'000'000, 1'000'000);
    hop.start();
    constexpr uint32_t kLen = 64 * 1024;
    uint64_t posted = 0;
    uint64_t done = 0;
    auto post = [&] {
        SendReq w;
        w.wr_id = posted;
        w.opcode = OHCA_WR_RDMA_WRITE;
        w.remote_addr = sb.buf + (posted % 8) * kLen;
        w.rkey = sb.key;
        w.sges = {{sa.buf + (posted % 8) * kLen, kLen, sa.key}};
        p.a.post_send(sa.qp, w);
        ++posted;
    };
    for (int i = 0; i < 32; ++i) {
        post();
    }
    const uint64_t start = p.a.host.now;
    constexpr uint64_t kStep = 20'000;         // 20 us
    constexpr uint64_t kWarm = 20'000'000;     // 20 ms
    constexpr uint64_t kMeasure = 100'000'000; // 100 ms
    uint64_t bits_at_warm = 0;
    for (uint64_t t = 0; t <= kWarm + kMeasure; t += kStep) {
        if (t == kWarm) {
            bits_at_warm = hop.line_bits;
        }
        hop.step(start + t, kStep);
        for (const auto &c : p.a.poll(sa.scq)) {
            ASSERT_EQ(c.status, OHCA_CQE_SUCCESS);
            ++done;
            post();
        }
    }
    const double busy = static_cast<double>(hop.line_bits - bits_at_warm) /
                        (400e6 * static_cast<double>(kMeasure) / 1e9);
    EXPECT_GE(busy, 0.90) << "line busy " << busy;
    EXPECT_GT(done, 50u);
    EXPECT_EQ(hop.overruns, 0u);
    const auto &ra = device_of(p.a.e).roce_counters();
    EXPECT_EQ(ra.retrans_pkts, 0u);
    EXPECT_EQ(ra.timeouts, 0u);
    EXPECT_EQ(device_of(p.b.e).ib_counters()->rcv_errors, 0u);
}

// A 64 KiB RDMA WRITE from A's buffer to B's: 16 packets at MTU 4096, of
// which B's initial credit takes 15.
template <typename Pair, typename Side> void post_write_64k(Pair &p, Side &sa, const Side &sb) {
    SendReq w;
    w.opcode = OHCA_WR_RDMA_WRITE;
    w.remote_addr = sb.buf;
    w.rkey = sb.key;
    w.sges = {{sa.buf, 64 * 1024, sa.key}};
    p.a.post_send(sa.qp, w);
}

// A request whose message then waits for the link's credit asks for its
// ACK (TxRoom::CreditShort), so the ACK timer does not run while the
// rest waits here: a credit wait five local ACK timeouts long costs no
// timeout and no resend. Before (2026-12-06's incast): the packets sent
// before the wait had asked for no ACK, the timer ran through the wait.
TEST(IbFlow, CreditWaitRunsNoAckTimer) {
    IbPair p; // RC at MTU 4096, timeout 14 (200 ms here)
    auto [sa, sb] = p.rc(1 << 20, 6, [](size_t k) { return static_cast<uint8_t>(k * 5 + 2); });
    post_write_64k(p, sa, sb);
    // B's FCPs are lost: A stops one packet short, its ACKs still come.
    size_t a_data = 0;
    pump(p.a, p.b, [&](bool from_a, const std::vector<uint8_t> &f) {
        a_data += from_a && !ib::is_link_packet(f.size()) ? 1 : 0;
        return !from_a && ib::is_link_packet(f.size());
    });
    EXPECT_EQ(a_data, 15u);
    const auto &ra = device_of(p.a.e).roce_counters();
    for (uint64_t t = 0; t < 5 * DeviceLimits::min_ack_timeout_ns; t += 1'000'000) {
        p.a.host.now += 1'000'000;
        p.a.process();
    }
    EXPECT_EQ(ra.timeouts, 0u);
    EXPECT_TRUE(p.a.poll(sa.scq).empty());
    // B's periodic FCP ends the wait.
    p.b.host.now = p.a.host.now;
    p.b.process();
    pump(p.a, p.b);
    const auto sc = p.a.poll(sa.scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(ra.timeouts, 0u);
    EXPECT_EQ(ra.retrans_pkts, 0u);
    std::vector<uint8_t> u(64 * 1024), v(64 * 1024);
    EXPECT_TRUE(p.a.host.read(sa.buf, u.data(), u.size()));
    EXPECT_TRUE(p.b.host.read(sb.buf, v.data(), v.size()));
    EXPECT_TRUE(u == v);
}

// The credit check is the requester's room check (one TxRoom per packet):
// the packets of a WRITE sent while the peer's credit covers more than
// two more largest packets ask for no ACK but every cwnd/2-th, those sent
// with less left ask for one each, and the packet after which the rest
// waits is among them.
TEST(IbFlow, CreditShortRequestAsksForAck) {
    IbPair p;
    auto [sa, sb] = p.rc(1 << 20, 6, [](size_t k) { return static_cast<uint8_t>(k * 7 + 3); });
    post_write_64k(p, sa, sb);
    std::vector<bool> asks; // per data packet of A, in order
    pump(p.a, p.b, [&](bool from_a, const std::vector<uint8_t> &f) {
        if (from_a && !ib::is_link_packet(f.size())) {
            ib::Packet pk;
            EXPECT_EQ(ib::parse(f, pk), ib::PacketError::Ok);
            asks.push_back(pk.bth.ack_req);
        }
        return !from_a && ib::is_link_packet(f.size()); // B's FCPs lost
    });
    ASSERT_EQ(asks.size(), 15u);
    // cwnd/2 = 8: the 8th asks; the 15th is the last B's credit covers
    // (the 16th waits): it asks although it is neither.
    for (size_t i = 0; i < 13; ++i) {
        EXPECT_EQ(asks[i], i == 7) << i;
    }
    EXPECT_TRUE(asks[14]);
    // Nothing else changed: B's credit back, the WRITE completes.
    p.b.host.now += IbFlow::kFcpPeriodNs;
    p.b.process();
    pump(p.a, p.b);
    const auto sc = p.a.poll(sa.scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
}

} // namespace
} // namespace ohca::test
