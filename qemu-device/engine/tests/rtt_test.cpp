// SPDX-License-Identifier: GPL-2.0-or-later
// The requester's retransmission timeout from the measured round trip
// (RFC 6298 with Karn's rule, doubled on expiry up to the QP's local ACK
// timeout) and its initial congestion window, over a fake wire that
// delivers each frame a fixed time after it was sent.
#include "device.hpp"
#include "limits.hpp"
#include "rdma_node.hpp"
#include "roce_packet.hpp"

#include <deque>

namespace ohca::test {
namespace {

constexpr uint64_t kMs = 1'000'000;

class RttTest : public ::testing::Test {
  protected:
    void setup(uint8_t mtu = 3, uint8_t timeout = 14, uint8_t retry = 7) {
        for (int i = 0; i < 2; ++i) {
            side[i] = make_side(node(i), 1 << 20, 6, [](size_t k) { return uint8_t(k * 7); });
        }
        const uint32_t remote = OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_READ;
        a.connect(side[0].qp, side[1].qp.qpn, b, mtu, timeout, retry, 7, remote);
        b.connect(side[1].qp, side[0].qp.qpn, a, mtu, timeout, retry, 7, remote);
        next_psn = psn_add(a.psn_base, side[0].qp.qpn);
    }
    RdmaNode &node(int i) { return i == 0 ? a : b; }

    // One step of 'step' ns: frames due arrive, both engines run, and what
    // they sent goes on the wire (or is lost: drop(from_a, psn)); a's
    // request packets are logged with their send time.
    void tick() {
        a.host.now += step;
        b.host.now += step;
        while (!wire.empty() && wire.front().at <= a.host.now) {
            Frame &f = wire.front();
            EXPECT_EQ(ohca_engine_receive_frame(node(f.to).e, f.bytes.data(), f.bytes.size()),
                      OHCA_ENGINE_RX_CONSUMED);
            wire.pop_front();
        }
        a.process();
        b.process();
        for (int from = 0; from < 2; ++from) {
            for (auto &bytes : node(from).host.wire) {
                ParsedPacket p;
                EXPECT_EQ(parse_roce_frame(bytes, p), ParseError::None);
                if (from == 0) {
                    sent.push_back({a.host.now, p.fields.bth.psn});
                }
                if (drop && drop(from == 0, p.fields.bth.psn)) {
                    continue;
                }
                wire.push_back({a.host.now + one_way, 1 - from, std::move(bytes)});
            }
            node(from).host.wire.clear();
        }
    }
    // Ticks until pred() holds, for at most 'limit' ns.
    bool run_for(const std::function<bool()> &pred, uint64_t limit) {
        for (uint64_t t = 0; t < limit; t += step) {
            tick();
            if (pred()) {
                return true;
            }
        }
        return pred();
    }
    // A signaled WRITE of 'kib' packets at MTU 1024; returns the PSN of its
    // last packet, which asks for an ACK: lost, only the ACK timer finds it
    // (a lost earlier one would be NAKed by the next).
    uint32_t post_write(uint64_t wr_id, uint32_t kib = 4) {
        SendReq w;
        w.wr_id = wr_id;
        w.opcode = OHCA_WR_RDMA_WRITE;
        w.remote_addr = side[1].buf;
        w.rkey = side[1].key;
        w.sges = {{side[0].buf, kib * 1024, side[0].key}};
        a.post_send(side[0].qp, w);
        next_psn = psn_add(next_psn, kib);
        return psn_add(next_psn, kPsnMask);
    }
    // Completions of a's send CQ so far (kept in sc).
    size_t sends() {
        auto v = a.poll(side[0].scq);
        sc.insert(sc.end(), v.begin(), v.end());
        return sc.size();
    }
    // n WRITEs one after the other, each to its completion, without loss:
    // n round-trip samples.
    void warm_up(int n) {
        for (int i = 0; i < n; ++i) {
            const size_t want = sends() + 1;
            post_write(100 + i);
            ASSERT_TRUE(run_for([&] { return sends() == want; }, 1000 * kMs)) << i;
            EXPECT_EQ(sc.back().status, OHCA_CQE_SUCCESS);
        }
    }
    // A WRITE of 'kib' packets whose last packet is lost 'lose' times, run
    // to its (successful) completion; returns when a sent that packet.
    std::vector<uint64_t> lossy_write(uint64_t wr_id, uint32_t kib, int lose,
                                      uint64_t limit = 3000 * kMs) {
        const uint32_t psn = post_write(wr_id, kib);
        drop = [&, psn](bool from_a, uint32_t p) { return from_a && p == psn && lose-- > 0; };
        const size_t n = sends() + 1;
        EXPECT_TRUE(run_for([&] { return sends() == n; }, limit));
        drop = {};
        EXPECT_TRUE(sends() == n && sc.back().status == OHCA_CQE_SUCCESS);
        return sends_of(psn);
    }
    // Times at which a sent the packet with this PSN.
    std::vector<uint64_t> sends_of(uint32_t psn) const {
        std::vector<uint64_t> t;
        for (const Sent &s : sent) {
            if (s.psn == psn) {
                t.push_back(s.at);
            }
        }
        return t;
    }

    struct Frame {
        uint64_t at;
        int to;
        std::vector<uint8_t> bytes;
    };
    struct Sent {
        uint64_t at;
        uint32_t psn;
    };
    RdmaNode a{1};
    RdmaNode b{2};
    Side side[2];
    std::deque<Frame> wire;
    std::vector<Sent> sent;
    std::vector<ohca_cqe> sc;
    std::function<bool(bool, uint32_t)> drop;
    uint64_t step = 100'000; // 0.1 ms
    uint64_t one_way = 1 * kMs;
    uint32_t next_psn = 0;
};

// After a steady round trip of 2 ms the RTO is the floor (10 ms), after one
// of 60 ms it is SRTT + SRTT / 2 (RTTVAR has decayed): a lost packet is sent
// again that long after, not after the local ACK timeout (200 ms here,
// timeout 14 = 67 ms raised to the emulation floor).
class RtoTest : public RttTest, public ::testing::WithParamInterface<uint64_t> {};

TEST_P(RtoTest, LossIsResentAfterTheMeasuredTimeout) {
    one_way = GetParam();
    setup();
    warm_up(30);
    const uint64_t rtt = 2 * one_way;
    const uint64_t want = std::max(rtt + rtt / 2, DeviceLimits::min_rto_ns);
    ASSERT_LT(want, DeviceLimits::min_ack_timeout_ns);
    // One packet: the oldest unacknowledged, which the timeout sends again
    // first (TailLossTest has a loss behind packets that arrived).
    const auto t = lossy_write(1, 1, 1);
    ASSERT_EQ(t.size(), 2u);
    EXPECT_GE(t[1] - t[0], want);
    EXPECT_LE(t[1] - t[0], want + 2 * step);
    EXPECT_EQ(device_of(a.e).roce_counters().timeouts, 1u);
}

INSTANTIATE_TEST_SUITE_P(OneWayDelay, RtoTest, ::testing::Values(1 * kMs, 30 * kMs));

// A peer that stops answering: the RTO doubles from the measured one up to
// the local ACK timeout; those early tries use up no retry, so the QP fails
// with RETRY_EXC_ERR only after retry_cnt + 1 expiries of the local ACK
// timeout, as IBTA has it.
TEST_F(RttTest, TimeoutDoublesUpToTheLocalAckTimeout) {
    setup(3, 14, 3);
    warm_up(10);
    // Each timeout sends the oldest packet again (and the one after it).
    const uint32_t psn = psn_add(post_write(1), kPsnMask - 2);
    drop = [](bool from_a, uint32_t) { return from_a; };
    const size_t n = sends() + 1;
    ASSERT_TRUE(run_for([&] { return sends() == n; }, 10'000 * kMs));
    EXPECT_EQ(sc.back().status, OHCA_CQE_RETRY_EXC_ERR);
    const auto t = sends_of(psn);
    const uint64_t ceiling = DeviceLimits::min_ack_timeout_ns;
    // 10, 20, 40, 80, 160 ms early; then 200 ms, retry_cnt (3) times.
    const std::vector<uint64_t> want = {10 * kMs,  20 * kMs, 40 * kMs, 80 * kMs,
                                        160 * kMs, ceiling,  ceiling,  ceiling};
    ASSERT_EQ(t.size(), want.size() + 1);
    for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_GE(t[i + 1] - t[i], want[i]) << i;
        EXPECT_LE(t[i + 1] - t[i], want[i] + 2 * step) << i;
    }
    const auto &c = device_of(a.e).roce_counters();
    EXPECT_EQ(c.timeouts, 5u + 4u);
    EXPECT_EQ(c.retry_exceeded, 1u);
    EXPECT_GE(a.host.now - t.back(), ceiling);
}

// Karn's rule: the ACK of a resent packet is no round-trip sample (it may
// answer the first copy), so a backed-off RTO stays until a packet sent
// once is acknowledged.
TEST_F(RttTest, KarnKeepsTheBackedOffTimeoutUntilAFreshSample) {
    setup();
    warm_up(10); // RTO 10 ms
    // Three tries lost: expiries at 10, 20 and 40 ms leave the RTO at 80 ms;
    // the fourth copy gets through.
    ASSERT_EQ(lossy_write(1, 4, 3).size(), 4u);
    // Had that ACK been taken as a sample, the RTO would be back at 10 ms.
    // (One packet: after three timeouts the window is 4, and in a longer
    // message an earlier packet sent once would ask for an ACK, a sample.)
    auto t = lossy_write(2, 1, 1);
    ASSERT_EQ(t.size(), 2u);
    EXPECT_GE(t[1] - t[0], 80 * kMs);
    EXPECT_LE(t[1] - t[0], 80 * kMs + 2 * step);
    // One WRITE without loss is a fresh sample: the RTO is 10 ms again.
    warm_up(1);
    t = lossy_write(3, 1, 1);
    ASSERT_EQ(t.size(), 2u);
    EXPECT_GE(t[1] - t[0], DeviceLimits::min_rto_ns);
    EXPECT_LE(t[1] - t[0], DeviceLimits::min_rto_ns + 2 * step);
    for (const ohca_cqe &e : sc) {
        EXPECT_EQ(e.status, OHCA_CQE_SUCCESS);
    }
}

// With no round trip measured yet (every first try lost), the timeout is
// the QP's local ACK timeout.
TEST_F(RttTest, BeforeAnySampleTheLocalAckTimeoutApplies) {
    setup(3, 18); // 4.096 us << 18 = 1.07 s
    const auto t = lossy_write(1, 1, 1);
    ASSERT_EQ(t.size(), 2u);
    EXPECT_GE(t[1] - t[0], uint64_t{4096} << 18);
    EXPECT_LE(t[1] - t[0], (uint64_t{4096} << 18) + 2 * step);
}

// The first burst of a long message is 64 KiB of path MTU packets (at most
// 64): what a host socket with the default receive buffer between two VMs
// holds. Slow start then doubles it per round trip.
class InitialWindowTest : public RttTest,
                          public ::testing::WithParamInterface<std::pair<uint8_t, size_t>> {};

TEST_P(InitialWindowTest, FirstBurstFitsTheDefaultSocketAndGrows) {
    const auto [mtu, want] = GetParam();
    setup(mtu);
    SendReq w;
    w.opcode = OHCA_WR_RDMA_WRITE;
    w.remote_addr = side[1].buf;
    w.rkey = side[1].key;
    w.sges = {{side[0].buf, 1 << 20, side[0].key}};
    a.post_send(side[0].qp, w);
    a.process();
    EXPECT_EQ(a.host.wire.size(), want);
    // The window's ACKs come back: twice as many packets go next.
    size_t burst = a.host.wire.size();
    for (int round = 0; round < 2; ++round) {
        for (auto &f : a.host.wire) {
            ohca_engine_receive_frame(b.e, f.data(), f.size());
        }
        a.host.wire.clear();
        b.process();
        for (auto &f : b.host.wire) {
            ohca_engine_receive_frame(a.e, f.data(), f.size());
        }
        b.host.wire.clear();
        a.process();
        EXPECT_EQ(a.host.wire.size(), 2 * burst) << round;
        burst = a.host.wire.size();
    }
}

INSTANTIATE_TEST_SUITE_P(PathMtu, InitialWindowTest,
                         ::testing::Values(std::pair<uint8_t, size_t>{1, 64},
                                           std::pair<uint8_t, size_t>{3, 64},
                                           std::pair<uint8_t, size_t>{4, 32},
                                           std::pair<uint8_t, size_t>{5, 16}));

} // namespace
} // namespace ohca::test
