// SPDX-License-Identifier: GPL-2.0-or-later
// The requester's retransmission timeout from the measured round trip
// (RFC 6298 with Karn's rule, doubled on expiry up to the QP's local ACK
// timeout), spurious timeouts told from losses and undone (F-RTO), timers
// checked after the frames already received, and its initial congestion
// window, over a fake wire that delivers each frame a fixed time after it
// was sent (and a peer whose loop can be stalled).
#include "device/device.hpp"
#include "device/limits.hpp"
#include "link/roce_packet.hpp"
#include "link/roce_v2.hpp"
#include "rdma_node.hpp"

#include <gtest/gtest.h>

#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>

namespace ohca::test {
namespace {

constexpr uint64_t kMs = 1'000'000;

class RttTest : public ::testing::Test {
  protected:
    void setup(uint8_t mtu = 3, uint8_t timeout = 14, uint8_t retry = 7) {
        for (int i = 0; i < 2; ++i) {
            side[i] = make_side(node(i), 1 << 20, 6,
                                [i](size_t k) { return uint8_t(k * 7 + uint8_t(i * 91)); });
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
        // A frame the receiver cannot take yet (its backlog full while its
        // loop stalls) waits on the wire, as in a socket, with those behind
        // it to the same node.
        bool held[2] = {false, false};
        for (auto it = wire.begin(); it != wire.end() && it->at <= a.host.now;) {
            if (held[it->to]) {
                ++it;
                continue;
            }
            const auto r =
                ohca_engine_receive_frame(node(it->to).e, it->bytes.data(), it->bytes.size());
            if (r == OHCA_ENGINE_RX_CONSUMED) {
                it = wire.erase(it);
            } else {
                EXPECT_EQ(r, OHCA_ENGINE_RX_RETRY);
                held[it->to] = true;
                ++it;
            }
        }
        a.process();
        if (b.host.now >= b_paused_until) {
            b.process(); // a peer whose loop is not scheduled answers nothing
        }
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
    std::vector<uint8_t> write_and_take_its_ack();
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

    // A WRITE (or READ) of 'kib' packets from a's buffer at 'off' to b's.
    void post_op(uint8_t opcode, uint64_t wr_id, uint32_t kib, uint64_t off) {
        SendReq w;
        w.wr_id = wr_id;
        w.opcode = opcode;
        w.remote_addr = side[1].buf + off;
        w.rkey = side[1].key;
        w.sges = {{side[0].buf + off, kib * 1024, side[0].key}};
        a.post_send(side[0].qp, w);
        next_psn = psn_add(next_psn, kib);
    }
    // a's requester state.
    const Qp &qa() const { return *device_of(a.e).qp_state_of(side[0].qp.qpn); }
    const RoceCounters &ca() const { return device_of(a.e).roce_counters(); }
    // Whether a's bytes at x equal b's at y.
    bool same(uint64_t x, uint64_t y, size_t len) {
        std::vector<uint8_t> p(len), q(len);
        EXPECT_TRUE(a.host.read(x, p.data(), len));
        EXPECT_TRUE(b.host.read(y, q.data(), len));
        return p == q;
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
    uint64_t b_paused_until = 0;
    uint64_t step = 100'000; // 0.1 ms
    uint64_t one_way = 1 * kMs;
    uint32_t next_psn = 0;
};

// After a steady round trip of 2 ms the RTO is the floor (10 ms), after one
// of 60 ms it is SRTT + SRTT / 2 (RTTVAR has decayed): a lost packet is sent
// again that long after (as a tail-loss probe), not after the local ACK
// timeout (200 ms here, timeout 14 = 67 ms raised to the emulation floor).
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
    EXPECT_EQ(ca().tail_probes, 1u);
    EXPECT_EQ(ca().timeouts, 0u);
}

INSTANTIATE_TEST_SUITE_P(OneWayDelay, RtoTest, ::testing::Values(1 * kMs, 30 * kMs));

// On a priority the port keeps lossless (PFC honoured on it) a late ACK is
// a queue or a pause, not a loss: the measured RTO's early tries (its
// tail-loss probe too) are not made, only the local ACK timeout sends
// again. PFC off: the measured RTO (kept meanwhile) is back.
TEST_F(RttTest, OnALosslessPriorityOnlyTheLocalAckTimeoutResends) {
    setup();
    warm_up(10); // RTO 10 ms
    ohca_set_pfc_in in{};
    in.port = 1;
    in.cfg.pfc_en = 0x01; // priority 0: the RoCE packets' under PCP trust
    in.cfg.trust = OHCA_PFC_TRUST_PCP;
    ASSERT_EQ(a.cmd(OHCA_CMD_SET_PFC, &in, sizeof(in)).status, OHCA_STATUS_OK);
    auto t = lossy_write(1, 1, 1);
    ASSERT_EQ(t.size(), 2u);
    EXPECT_GE(t[1] - t[0], DeviceLimits::min_ack_timeout_ns);
    EXPECT_LE(t[1] - t[0], DeviceLimits::min_ack_timeout_ns + 2 * step);
    EXPECT_EQ(device_of(a.e).roce_counters().timeouts, 1u);
    in.cfg.pfc_en = 0x08; // priority 3 only: priority 0 is lossy again
    ASSERT_EQ(a.cmd(OHCA_CMD_SET_PFC, &in, sizeof(in)).status, OHCA_STATUS_OK);
    warm_up(1);
    t = lossy_write(2, 1, 1);
    ASSERT_EQ(t.size(), 2u);
    EXPECT_GE(t[1] - t[0], DeviceLimits::min_rto_ns);
    EXPECT_LE(t[1] - t[0], DeviceLimits::min_rto_ns + 2 * step);
    EXPECT_EQ(ca().timeouts, 1u);
    EXPECT_EQ(ca().tail_probes, 1u); // the measured RTO's first expiry
}

// A peer that stops answering: the RTO doubles from the measured one up to
// the local ACK timeout (its first expiry a tail-loss probe, the next ones
// timeouts); those early tries use up no retry, so the QP fails with
// RETRY_EXC_ERR only after retry_cnt + 1 expiries of the local ACK timeout,
// as IBTA has it.
TEST_F(RttTest, TimeoutDoublesUpToTheLocalAckTimeout) {
    setup(3, 14, 3);
    warm_up(10);
    // Each timeout sends the oldest packet again (and the one after it);
    // the probe before them, the newest.
    const uint32_t newest = post_write(1);
    const uint32_t psn = psn_add(newest, kPsnMask - 2);
    drop = [](bool from_a, uint32_t) { return from_a; };
    const size_t n = sends() + 1;
    ASSERT_TRUE(run_for([&] { return sends() == n; }, 10'000 * kMs));
    EXPECT_EQ(sc.back().status, OHCA_CQE_RETRY_EXC_ERR);
    const auto t = sends_of(psn);
    const uint64_t ceiling = DeviceLimits::min_ack_timeout_ns;
    // The probe at 10 ms; timeouts 20, 40, 80, 160 ms later (early); then
    // 200 ms, retry_cnt (3) times.
    const std::vector<uint64_t> want = {30 * kMs, 40 * kMs, 80 * kMs, 160 * kMs,
                                        ceiling,  ceiling,  ceiling};
    const auto probe = sends_of(newest);
    ASSERT_GE(probe.size(), 2u);
    EXPECT_GE(probe[1] - probe[0], 10 * kMs);
    EXPECT_LE(probe[1] - probe[0], 10 * kMs + 2 * step);
    ASSERT_EQ(t.size(), want.size() + 1);
    for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_GE(t[i + 1] - t[i], want[i]) << i;
        EXPECT_LE(t[i + 1] - t[i], want[i] + 2 * step) << i;
    }
    const auto &c = device_of(a.e).roce_counters();
    EXPECT_EQ(c.tail_probes, 1u);
    EXPECT_EQ(c.timeouts, 4u + 4u);
    EXPECT_EQ(c.retry_exceeded, 1u);
    // Why it waited: 4 at the local ACK timeout, the first after the
    // probe; a round trip was measured, no READ.
    EXPECT_EQ(c.timeouts_full, 4u);
    EXPECT_EQ(c.timeouts_after_probe, 1u);
    EXPECT_EQ(c.timeouts_no_rtt, 0u);
    EXPECT_EQ(c.timeouts_read, 0u);
    // The three early ones after it refused no probe of their own: each
    // came with the timeout before it undecided (F-RTO's resend out).
    EXPECT_EQ(c.timeouts_frto, 3u);
    EXPECT_EQ(c.timeouts_recovery + c.timeouts_goback + c.timeouts_read_newest, 0u);
    EXPECT_EQ(a.stats().rc_timeouts_frto, 3u);
    EXPECT_GE(a.host.now - t.back(), ceiling);
    // Each wait traced for the host (OHCA_ENGINE_TRACE_RC: what a
    // migration's gap is made of): the probe, then the timeouts with their
    // reason, the RTO after each (us), each expiry run on time.
    std::vector<std::pair<uint32_t, uint32_t>> waits;
    for (const auto &e : a.host.traces) {
        if (e.kind == OHCA_ENGINE_TRACE_RC && e.a == side[0].qp.qpn) {
            waits.emplace_back(e.b, e.c);
            EXPECT_LE(e.d, step);
        }
    }
    const uint32_t timeout = OHCA_ENGINE_RC_TIMEOUT;
    const uint32_t frto = timeout | OHCA_ENGINE_RC_FRTO << 8;
    const uint32_t full = timeout | OHCA_ENGINE_RC_FULL << 8;
    const std::vector<std::pair<uint32_t, uint32_t>> want_waits = {
        {OHCA_ENGINE_RC_TLP, 20'000},
        {timeout | OHCA_ENGINE_RC_AFTER_PROBE << 8, 40'000},
        {frto, 80'000},
        {frto, 160'000},
        {frto, 200'000},
        {full, 200'000},
        {full, 200'000},
        {full, 200'000},
        {full, 200'000}};
    EXPECT_EQ(waits, want_waits);
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

// With no round trip measured yet (a new connection's first packet lost),
// the RTO is DeviceLimits::initial_rto_ns (200 ms), not the QP's local
// ACK timeout (1.07 s at timeout 18): an early try, a tail-loss probe
// here. Before (2026-12-06) that loss cost the whole local ACK timeout
// (rc_timeouts_no_rtt, rc_timeouts_full). Every try lost: the RTO doubles
// from there to the local ACK timeout, and only expiries at that length
// use up retries (the budget stays retry_cnt x local ACK timeout and
// more).
TEST_F(RttTest, BeforeAnySampleTheInitialRtoApplies) {
    setup(3, 18); // 4.096 us << 18 = 1.07 s
    const auto t = lossy_write(1, 1, 1);
    ASSERT_EQ(t.size(), 2u);
    EXPECT_GE(t[1] - t[0], DeviceLimits::initial_rto_ns);
    EXPECT_LE(t[1] - t[0], DeviceLimits::initial_rto_ns + 2 * step);
    const ohca_query_stats_out st = a.stats();
    EXPECT_EQ(st.rc_tail_probes, 1u);
    EXPECT_EQ(st.rc_local_ack_timeouts, 0u);
}

// A new connection whose first tries are all lost, 4 times: the probe at
// 200 ms, then timeouts 400 ms and 800 ms later (early: no round trip
// yet), then one at the local ACK timeout, the only one retry_cnt counts.
TEST_F(RttTest, BeforeAnySampleTheRtoDoublesToTheLocalAckTimeout) {
    setup(3, 18, 1);
    const uint64_t ceiling = uint64_t{4096} << 18;
    const auto u = lossy_write(2, 1, 4);
    ASSERT_EQ(u.size(), 5u);
    const std::vector<uint64_t> want = {DeviceLimits::initial_rto_ns,
                                        2 * DeviceLimits::initial_rto_ns,
                                        4 * DeviceLimits::initial_rto_ns, ceiling};
    for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_GE(u[i + 1] - u[i], want[i]) << i;
        EXPECT_LE(u[i + 1] - u[i], want[i] + 2 * step) << i;
    }
    EXPECT_EQ(ca().tail_probes, 1u);
    EXPECT_EQ(ca().timeouts, 3u);
    EXPECT_EQ(ca().timeouts_no_rtt, 3u);
    EXPECT_EQ(ca().timeouts_full, 1u);
    EXPECT_EQ(ca().timeouts_after_probe, 1u);
    EXPECT_EQ(ca().timeouts_frto, 1u); // the 800 ms one: a series
    EXPECT_EQ(ca().retry_exceeded, 0u);
}

// A peer that stands still (a VM stopped by a migration, or left
// unscheduled while its RAM is copied) costs resends while it is shorter
// than the QP's retry budget, and fails the QP once longer: the early tries
// of the measured RTO, then retry_cnt + 1 expiries of the local ACK timeout
// (IBTA's 4.096 us << timeout, never shortened, only raised to the 200 ms
// floor). Timeout 14 (67 ms, raised) and retry_cnt 7: about 1.9 s; timeout
// 18 (1.07 s, about what rdma_cm gives a RoCE QP): about 9.9 s. Parameters: the
// QP's timeout, how long the peer stands still, whether the QP survives.
class StillPeerTest : public RttTest,
                      public ::testing::WithParamInterface<std::tuple<uint8_t, uint64_t, bool>> {};

TEST_P(StillPeerTest, TheRetryBudgetIsTimeoutTimesRetryCnt) {
    const auto [timeout, pause, survives] = GetParam();
    step = kMs; // 10 s at 0.1 ms steps would take the test a minute
    setup(3, timeout, 7);
    warm_up(10);
    const uint64_t ceiling = std::max(uint64_t{4096} << timeout, DeviceLimits::min_ack_timeout_ns);
    const uint64_t start = a.host.now;
    b_paused_until = start + pause;
    post_write(1);
    const size_t n = sends() + 1;
    ASSERT_TRUE(run_for([&] { return sends() == n; }, pause + 20 * ceiling));
    const RoceCounters &c = ca();
    std::printf("timeout %u, peer still %.1f s: %s %.2f s after the post\n", unsigned{timeout},
                double(pause) / 1e9, sc.back().status == OHCA_CQE_SUCCESS ? "done" : "failed",
                double(a.host.now - start) / 1e9);
    if (survives) {
        EXPECT_EQ(sc.back().status, OHCA_CQE_SUCCESS);
        EXPECT_EQ(c.retry_exceeded, 0u);
        // the frames waited for the peer, which answers them when it runs
        EXPECT_LE(a.host.now, b_paused_until + 2 * one_way + 2 * step);
        EXPECT_TRUE(same(side[0].buf, side[1].buf, 4 * 1024));
    } else {
        EXPECT_EQ(sc.back().status, OHCA_CQE_RETRY_EXC_ERR);
        EXPECT_EQ(c.retry_exceeded, 1u);
        // not before retry_cnt + 1 full local ACK timeouts
        EXPECT_GE(a.host.now - start, 8 * ceiling);
        EXPECT_LT(a.host.now, b_paused_until);
    }
}

INSTANTIATE_TEST_SUITE_P(Budget, StillPeerTest,
                         ::testing::Values(std::make_tuple(uint8_t{14}, 1500 * kMs, true),
                                           std::make_tuple(uint8_t{14}, 2500 * kMs, false),
                                           std::make_tuple(uint8_t{18}, 3000 * kMs, true),
                                           std::make_tuple(uint8_t{18}, 8500 * kMs, true),
                                           std::make_tuple(uint8_t{18}, 11000 * kMs, false)));

// A migrated peer (docs/migration.md, the peer's gap): it vanishes for D ms
// -- the frames that reach it as it stops are lost (the source's receive
// backlog, the frame its stopped netdev holds), the later ones wait in the
// shared socket -- and then runs again. The requester's tries during the
// absence (its probe, its timeouts doubling towards the local ACK timeout)
// wait in the socket too, so it is answered within a round trip of the
// return and done a few round trips later, not at its next expiry up to
// one local ACK timeout later; nothing failed, every byte in place.
class VanishedPeerTest : public RttTest, public ::testing::WithParamInterface<uint64_t> {};

TEST_P(VanishedPeerTest, ItIsAnsweredWithinARoundTripOfTheReturn) {
    const uint64_t absent = GetParam();
    step = 200'000;
    setup(3, 18, 7);
    warm_up(10);
    const uint64_t start = a.host.now;
    b_paused_until = start + absent;
    // the first 3 ms of the absence: a's frames lost
    drop = [&, start](bool from_a, uint32_t) { return from_a && a.host.now < start + 3 * kMs; };
    post_op(OHCA_WR_RDMA_WRITE, 1, 16, 0);
    const size_t n = sends() + 1;
    ASSERT_TRUE(run_for([&] { return sends() == n; }, absent + 3000 * kMs));
    EXPECT_EQ(sc.back().status, OHCA_CQE_SUCCESS);
    // (the packets lost at the start go again after the answers: a few
    // round trips of a window grown again from its minimum)
    EXPECT_LE(a.host.now, b_paused_until + 10 * 2 * one_way);
    EXPECT_TRUE(same(side[0].buf, side[1].buf, 16 * 1024));
    EXPECT_EQ(ca().retry_exceeded, 0u);
}

INSTANTIATE_TEST_SUITE_P(Absence, VanishedPeerTest,
                         ::testing::Values(100 * kMs, 300 * kMs, 700 * kMs, 2000 * kMs));

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

// ---- spurious timeouts (requester.cpp, F-RTO) ------------------------------

// The peer's loop is not scheduled for 40 ms while a 256-packet WRITE is
// on its way: nothing is lost, its ACKs come late. The ACK timer (10 ms)
// expires: a tail-loss probe, then (20 ms later) a timeout, which sends
// only the two oldest packets again; the late ACKs, for packets sent
// before the timeout, undo it: the window is the one before it, the rest
// of the window is not sent again, the data arrive intact. The silence is
// no round-trip sample: once packets sent after it are answered, the RTO
// is the path's again. (Before: each timeout sent the window again and
// cut it to 4 packets; later, the undo took the silence as a sample.)
TEST_F(RttTest, DelayedAcksAreASpuriousTimeoutUndone) {
    setup();
    warm_up(10);
    const uint32_t cwnd = qa().cwnd;
    const uint32_t ssthresh = qa().ssthresh;
    ASSERT_EQ(qa().rto_ns, DeviceLimits::min_rto_ns);
    const uint64_t pause = 40 * kMs;
    b_paused_until = b.host.now + pause;
    post_op(OHCA_WR_RDMA_WRITE, 1, 256, 0);
    const size_t n = sends() + 1;
    ASSERT_TRUE(run_for([&] { return sends() == n; }, 2000 * kMs));
    EXPECT_EQ(sc.back().status, OHCA_CQE_SUCCESS);
    EXPECT_TRUE(same(side[0].buf, side[1].buf, 256 * 1024));
    const RoceCounters &c = ca();
    EXPECT_EQ(c.tail_probes, 1u); // at 10 ms
    EXPECT_EQ(c.timeouts, 1u);    // 20 more (backed off)
    EXPECT_EQ(c.spurious_timeouts, 1u);
    EXPECT_LE(c.retrans_pkts, DeviceLimits::frto_probe_pkts * c.timeouts + c.tail_probes);
    EXPECT_EQ(c.seq_naks_rcvd, 0u);
    // Not cut: slow start went on from where it was.
    EXPECT_GE(qa().cwnd, cwnd);
    EXPECT_EQ(qa().ssthresh, ssthresh);
    EXPECT_EQ(qa().rto_ns, DeviceLimits::min_rto_ns);
    EXPECT_EQ(qa().frto, Qp::Frto::Off);
    // QUERY_STATS (hw counters rc_local_ack_timeouts, rc_spurious_timeouts).
    const ohca_query_stats_out st = a.stats();
    EXPECT_EQ(st.rc_local_ack_timeouts, 1u);
    EXPECT_EQ(st.rc_spurious_timeouts, 1u);
    EXPECT_EQ(st.rc_retrans_pkts, c.retrans_pkts);
    // ... and why it waited (rc_tail_probes, rc_timeouts_*): the probe,
    // then one early timeout after it, at a measured RTO, no READ.
    EXPECT_EQ(st.rc_tail_probes, 1u);
    EXPECT_EQ(st.rc_timeouts_after_probe, 1u);
    EXPECT_EQ(st.rc_timeouts_full, 0u);
    EXPECT_EQ(st.rc_timeouts_no_rtt, 0u);
    EXPECT_EQ(st.rc_timeouts_read, 0u);
}

// A READ (or atomic) at the oldest PSN is asked for again as before: its
// responses cannot be told from the original request's. Delayed the same
// way, it completes with the right bytes; nothing is undone.
TEST_F(RttTest, DelayedReadResponsesGoBackAsBefore) {
    setup();
    warm_up(10);
    b_paused_until = b.host.now + 40 * kMs;
    post_op(OHCA_WR_RDMA_READ, 1, 64, 0x80000);
    const size_t n = sends() + 1;
    ASSERT_TRUE(run_for([&] { return sends() == n; }, 2000 * kMs));
    EXPECT_EQ(sc.back().status, OHCA_CQE_SUCCESS);
    EXPECT_TRUE(same(side[0].buf + 0x80000, side[1].buf + 0x80000, 64 * 1024));
    EXPECT_GE(ca().timeouts, 1u);
    EXPECT_EQ(ca().spurious_timeouts, 0u);
    // Each one with the READ oldest (rc_timeouts_read), none a probe's:
    // the READ request is the newest packet too (rc_timeouts_read_newest).
    EXPECT_EQ(ca().timeouts_read, ca().timeouts);
    EXPECT_EQ(a.stats().rc_timeouts_read, ca().timeouts);
    EXPECT_EQ(ca().tail_probes, 0u);
    EXPECT_EQ(ca().timeouts_read_newest + ca().timeouts_full, ca().timeouts);
    EXPECT_EQ(a.stats().rc_timeouts_read_newest, ca().timeouts_read_newest);
}

// A SEND that finds no receive WQE at a peer that stalled: the timeouts
// probe, the peer answers the original with an RNR NAK, which ends the
// probe; once a receive is posted the SEND completes with its bytes.
TEST_F(RttTest, RnrNakAfterATimeoutEndsTheProbe) {
    setup();
    warm_up(10);
    b_paused_until = b.host.now + 40 * kMs;
    SendReq w;
    w.wr_id = 1;
    w.opcode = OHCA_WR_SEND;
    w.sges = {{side[0].buf + 0x20000, 8 * 1024, side[0].key}};
    a.post_send(side[0].qp, w);
    next_psn = psn_add(next_psn, 8);
    ASSERT_TRUE(run_for([&] { return ca().rnr_naks_rcvd > 0; }, 1000 * kMs));
    EXPECT_GE(ca().timeouts, 1u);
    b.post_recv(side[1].qp, 7, {{side[1].buf + 0x20000, 8 * 1024, side[1].key}});
    const size_t n = sends() + 1;
    ASSERT_TRUE(run_for([&] { return sends() == n; }, 3000 * kMs));
    EXPECT_EQ(sc.back().status, OHCA_CQE_SUCCESS);
    EXPECT_TRUE(same(side[0].buf + 0x20000, side[1].buf + 0x20000, 8 * 1024));
    EXPECT_EQ(qa().frto, Qp::Frto::Off);
}

// A real loss: the last packet of a WRITE whose first three arrived (and
// asked for no ACK), lost again as the tail-loss probe. The timeout 20 ms
// after the probe sends the two oldest again; the responder answers each
// duplicate with the last PSN it has, the third packet's: the first such
// answer acknowledges past the probe but not everything, the second
// acknowledges nothing more, so the loss is real and the requester goes
// back to it one round trip after the probe. No second timeout; nothing is
// undone. (Lost once only, the probe fills it in:
// ALoneLastPacketLostIsProbedNotTimedOut.)
TEST_F(RttTest, TailLossBehindTheProbeGoesBackAfterOneRoundTrip) {
    setup();
    warm_up(30); // RTO 10 ms
    const uint32_t first = next_psn;
    const auto t = lossy_write(1, 4, 2);
    ASSERT_EQ(t.size(), 3u);
    EXPECT_GE(t[1] - t[0], DeviceLimits::min_rto_ns); // the tail-loss probe
    EXPECT_LE(t[1] - t[0], DeviceLimits::min_rto_ns + 2 * step);
    const auto probe = sends_of(first);
    ASSERT_EQ(probe.size(), 2u);
    EXPECT_GE(probe[1] - t[1], 2 * DeviceLimits::min_rto_ns);
    EXPECT_LE(probe[1] - t[1], 2 * DeviceLimits::min_rto_ns + 2 * step);
    const uint64_t rtt = 2 * one_way;
    EXPECT_GE(t[2] - probe[1], rtt);
    EXPECT_LE(t[2] - probe[1], rtt + 2 * step);
    EXPECT_EQ(ca().tail_probes, 1u);
    EXPECT_EQ(ca().timeouts, 1u);
    EXPECT_EQ(ca().spurious_timeouts, 0u);
    EXPECT_EQ(ca().retrans_pkts, 4u); // the probe, the two oldest, the lost one
    EXPECT_TRUE(same(side[0].buf, side[1].buf, 4 * 1024));
}

// Everything lost, and the tail-loss probe and the timeout's probe too: a
// second timeout probes again, the ACK of the probe acknowledges only what
// was sent again, and the go-back sends the rest.
TEST_F(RttTest, LostProbeRecoversAtTheNextTimeout) {
    setup();
    warm_up(10);
    const uint32_t first = next_psn;
    post_op(OHCA_WR_RDMA_WRITE, 1, 8, 0x40000);
    drop = [&](bool from_a, uint32_t) { return from_a && ca().timeouts < 2; };
    const size_t n = sends() + 1;
    ASSERT_TRUE(run_for([&] { return sends() == n; }, 2000 * kMs));
    drop = {};
    EXPECT_EQ(sc.back().status, OHCA_CQE_SUCCESS);
    EXPECT_TRUE(same(side[0].buf + 0x40000, side[1].buf + 0x40000, 8 * 1024));
    EXPECT_EQ(ca().timeouts, 2u);
    EXPECT_EQ(ca().spurious_timeouts, 0u);
    EXPECT_EQ(sends_of(first).size(), 3u);
    // lost, lost as the tail-loss probe, then in the go-back
    EXPECT_EQ(sends_of(psn_add(first, 7)).size(), 3u);
}

// After warm_up(10): a one-packet WRITE whose ACK from b is taken off the
// wire before a sees it (empty if none came).
std::vector<uint8_t> RttTest::write_and_take_its_ack() {
    setup();
    warm_up(10);
    post_op(OHCA_WR_RDMA_WRITE, 1, 1, 0);
    auto ack = wire.end();
    for (int i = 0; i < 100 && ack == wire.end(); ++i) {
        tick();
        ack = std::find_if(wire.begin(), wire.end(), [](const Frame &f) { return f.to == 0; });
    }
    if (ack == wire.end()) {
        return {};
    }
    std::vector<uint8_t> frame = ack->bytes;
    wire.erase(ack);
    return frame;
}

// The ACK that stops the timer is in the backlog when a run starts with
// the deadline passed (the host's loop paused long): the run takes it in
// before it looks at the timers, so nothing expires.
TEST_F(RttTest, AckInTheBacklogStopsTheTimerBeforeItExpires) {
    const std::vector<uint8_t> frame = write_and_take_its_ack();
    ASSERT_FALSE(frame.empty());
    ASSERT_NE(qa().deadline_ns, 0u);
    a.host.now = qa().deadline_ns + 1;
    ASSERT_EQ(ohca_engine_receive_frame(a.e, frame.data(), frame.size()), OHCA_ENGINE_RX_CONSUMED);
    a.process();
    EXPECT_EQ(ca().timeouts, 0u);
    EXPECT_EQ(ca().retrans_pkts, 0u);
    ASSERT_EQ(sends(), 11u);
    EXPECT_EQ(sc.back().status, OHCA_CQE_SUCCESS);
}

// The same with more frames ahead of the ACK than one run takes (a run of
// 200 us on a clock that moves 200 us per reading ends after 16 frames):
// the timers wait for the next run, which finds the ACK. A backlog kept
// full delays a deadline by one run only: without the ACK the second run
// expires the timer all the same.
class BacklogTimerTest : public RttTest, public ::testing::WithParamInterface<bool> {};

TEST_P(BacklogTimerTest, TimersWaitOneRunForTheBacklog) {
    const bool with_ack = GetParam();
    const std::vector<uint8_t> frame = write_and_take_its_ack();
    ASSERT_FALSE(frame.empty());
    std::vector<uint8_t> junk = frame;
    junk.back() ^= 0xff; // bad ICRC: one unit of work, dropped
    for (int i = 0; i < 20; ++i) {
        ASSERT_EQ(ohca_engine_receive_frame(a.e, junk.data(), junk.size()),
                  OHCA_ENGINE_RX_CONSUMED);
    }
    if (with_ack) {
        ASSERT_EQ(ohca_engine_receive_frame(a.e, frame.data(), frame.size()),
                  OHCA_ENGINE_RX_CONSUMED);
    } else {
        for (int i = 0; i < 20; ++i) {
            ASSERT_EQ(ohca_engine_receive_frame(a.e, junk.data(), junk.size()),
                      OHCA_ENGINE_RX_CONSUMED);
        }
    }
    a.host.now = qa().deadline_ns + 1;
    a.host.now_step = DeviceLimits::max_run_ns;
    const auto &sched = device_of(a.e).sched_stats();
    const uint64_t deferred = sched.timers_deferred;
    ohca_engine_process(a.e);
    EXPECT_EQ(sched.timers_deferred, deferred + 1);
    EXPECT_EQ(ca().timeouts, 0u);
    ohca_engine_process(a.e);
    a.host.now_step = 0;
    EXPECT_EQ(sched.timers_deferred, deferred + 1);
    // (without it, the first expiry: a tail-loss probe)
    EXPECT_EQ(ca().timeouts + ca().tail_probes, with_ack ? 0u : 1u);
    a.process();
    EXPECT_EQ(ca().rx_bad_icrc, with_ack ? 20u : 40u);
    if (with_ack) {
        ASSERT_EQ(sends(), 11u);
        EXPECT_EQ(sc.back().status, OHCA_CQE_SUCCESS);
    }
}

INSTANTIATE_TEST_SUITE_P(AckBehindTheJunk, BacklogTimerTest, ::testing::Bool());

// A peer whose loop keeps stalling (35 ms of every 50) during 48 MiB of
// WRITEs: its ACKs are late again and again, never lost. The requester
// neither loops nor grows: each timeout sends at most the two oldest
// packets again and is undone, every frame it sends is a WRITE packet or
// such a probe, the heap stays put over the last third and every byte
// arrives.
TEST_F(RttTest, PeerThatKeepsDelayingAcksCostsOnlyProbes) {
    setup(3, 14, 7);
    warm_up(10);
    sent.reserve(1 << 16);
    sc.reserve(1 << 10);
    const uint64_t start = b.host.now;
    const size_t sent0 = sent.size();
    constexpr int kWrites = 64; // per half
    constexpr uint32_t kKib = 256;
    int stalls = 0;
    auto half = [&](int h) {
        for (int w = 0; w < kWrites; ++w) {
            post_op(OHCA_WR_RDMA_WRITE, 1 + w, kKib, (w % 4) * kKib * 1024);
        }
        const size_t n = sends() + kWrites;
        const bool done = run_for(
            [&] {
                if ((b.host.now - start) % (50 * kMs) == step) {
                    b_paused_until = b.host.now + 35 * kMs;
                    ++stalls;
                }
                return sends() == n;
            },
            20'000 * kMs);
        EXPECT_TRUE(done) << h;
        for (size_t i = n - kWrites; i < n && i < sc.size(); ++i) {
            EXPECT_EQ(sc[i].status, OHCA_CQE_SUCCESS) << i;
        }
        EXPECT_TRUE(same(side[0].buf, side[1].buf, 4 * kKib * 1024)) << h;
    };
    // The first two grow the buffers that hold frames (the stalled
    // peer's backlog fills up); the third may not grow anything.
    half(0);
    half(1);
    const size_t heap0 = mallinfo2().uordblks;
    half(2);
    const size_t heap1 = mallinfo2().uordblks;
    const RoceCounters &c = ca();
    std::printf(
        "%d stalls, %lu tail-loss probes, %lu timeouts, %lu undone, %lu packets sent again, "
        "rto %lu us\n",
        stalls, static_cast<unsigned long>(c.tail_probes), static_cast<unsigned long>(c.timeouts),
        static_cast<unsigned long>(c.spurious_timeouts), static_cast<unsigned long>(c.retrans_pkts),
        static_cast<unsigned long>(qa().rto_ns / 1000));
    // At most the 10 ms probe and the backed-off 20 ms try per stall, each
    // timeout undone.
    EXPECT_GE(c.spurious_timeouts, 1u);
    EXPECT_LE(c.timeouts + c.tail_probes, 2u * static_cast<uint64_t>(stalls));
    EXPECT_LE(c.spurious_timeouts, static_cast<uint64_t>(stalls));
    EXPECT_LE(c.retrans_pkts, DeviceLimits::frto_probe_pkts * c.timeouts + c.tail_probes);
    EXPECT_EQ(c.seq_naks_rcvd, 0u);
    EXPECT_EQ(c.retry_exceeded, 0u);
    EXPECT_LE(sent.size() - sent0, size_t{3 * kWrites} * kKib +
                                       DeviceLimits::frto_probe_pkts * c.timeouts + c.tail_probes);
    EXPECT_LT(heap1 > heap0 ? heap1 - heap0 : 0, size_t{64} << 10);
    EXPECT_EQ(qa().state, OHCA_QPS_RTS);
}

// ---- tail-loss probes and the RTO after a stall (rc_retransmit.cpp) --------

// A one-packet WRITE lost once, nothing behind it to draw a NAK: the first
// expiry of the RTO sends it again as a tail-loss probe, which the peer
// fills in. No timeout: the window and the retries are untouched.
// (Before: a local ACK timeout, the window cut to its minimum.)
TEST_F(RttTest, ALoneLastPacketLostIsProbedNotTimedOut) {
    setup();
    warm_up(30); // RTO 10 ms
    const uint32_t cwnd = qa().cwnd;
    const auto t = lossy_write(1, 1, 1);
    ASSERT_EQ(t.size(), 2u);
    EXPECT_GE(t[1] - t[0], DeviceLimits::min_rto_ns);
    EXPECT_LE(t[1] - t[0], DeviceLimits::min_rto_ns + 2 * step);
    EXPECT_EQ(ca().timeouts, 0u);
    EXPECT_EQ(ca().tail_probes, 1u);
    EXPECT_EQ(ca().retrans_pkts, 1u);
    EXPECT_GE(qa().cwnd, cwnd); // not cut (it grew by the packet acknowledged)
    EXPECT_TRUE(same(side[0].buf, side[1].buf, 1024));
}

// The DCQCN cell's case (docs/congestion.md): one packet unacknowledged and
// its ACK late past the RTO (the receiving VM unscheduled, the bottleneck's
// queue): the probe meets a duplicate, the late ACK completes the WRITE.
// No timeout, nothing cut. (Before: a timeout F-RTO could not call
// spurious, the ACK of the resend being the original's too.)
TEST_F(RttTest, AnAckLateByLessThanThreeRtosIsNoTimeout) {
    setup();
    warm_up(30); // RTO 10 ms
    const uint32_t cwnd = qa().cwnd;
    b_paused_until = b.host.now + 25 * kMs;
    post_write(1, 1);
    const size_t n = sends() + 1;
    ASSERT_TRUE(run_for([&] { return sends() == n; }, 1000 * kMs));
    EXPECT_EQ(sc.back().status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(ca().timeouts, 0u);
    EXPECT_EQ(ca().tail_probes, 1u);
    EXPECT_EQ(ca().retrans_pkts, 1u);
    EXPECT_GE(qa().cwnd, cwnd);
    EXPECT_EQ(qa().frto, Qp::Frto::Off);
}

// The last two packets of a WRITE lost: the probe (the newest) reaches the
// peer out of order and draws a sequence NAK, which goes back to the first
// lost one: recovered one RTO and a round trip after the send, no timeout.
TEST_F(RttTest, SeveralLostAtTheTailAreNakedOnTheProbe) {
    setup();
    warm_up(30);
    const uint32_t first = next_psn;
    post_write(1, 4);
    const uint32_t third = psn_add(first, 2);
    const uint32_t fourth = psn_add(first, 3);
    int lose3 = 1;
    int lose4 = 1;
    drop = [&](bool from_a, uint32_t p) {
        return from_a && ((p == third && lose3-- > 0) || (p == fourth && lose4-- > 0));
    };
    const size_t n = sends() + 1;
    ASSERT_TRUE(run_for([&] { return sends() == n; }, 1000 * kMs));
    drop = {};
    EXPECT_EQ(sc.back().status, OHCA_CQE_SUCCESS);
    EXPECT_TRUE(same(side[0].buf, side[1].buf, 4 * 1024));
    const auto t4 = sends_of(fourth);
    ASSERT_EQ(t4.size(), 3u); // lost, the probe, the go-back
    EXPECT_GE(t4[1] - t4[0], DeviceLimits::min_rto_ns);
    EXPECT_LE(t4[1] - t4[0], DeviceLimits::min_rto_ns + 2 * step);
    EXPECT_EQ(sends_of(third).size(), 2u);
    EXPECT_LE(sends_of(third)[1] - t4[1], 2 * one_way + 2 * step);
    EXPECT_EQ(ca().timeouts, 0u);
    EXPECT_EQ(ca().seq_naks_rcvd, 1u);
}

// Why a timeout was no tail-loss probe (rc_timeouts_recovery,
// rc_timeouts_goback, rc_timeouts_read_newest; rc_timeouts_frto above):
// each expiry that is neither after a probe nor at the local ACK timeout
// counts in exactly one of them.

// A packet in the middle of a WRITE lost, NAKed, and lost again in the
// NAK's go-back: the responder NAKs a gap once, so only the ACK timer finds
// it, with the recovery under way (no probe: the newest packet was sent
// again already).
TEST_F(RttTest, ALossInANaksGoBackTimesOutInRecovery) {
    setup();
    warm_up(30);
    const uint32_t first = next_psn;
    post_write(1, 8);
    const uint32_t lost = psn_add(first, 3);
    int lose = 2;
    drop = [&](bool from_a, uint32_t p) { return from_a && p == lost && lose-- > 0; };
    const size_t n = sends() + 1;
    ASSERT_TRUE(run_for([&] { return sends() == n; }, 1000 * kMs));
    drop = {};
    EXPECT_EQ(sc.back().status, OHCA_CQE_SUCCESS);
    EXPECT_TRUE(same(side[0].buf, side[1].buf, 8 * 1024));
    EXPECT_EQ(ca().seq_naks_rcvd, 1u);
    EXPECT_EQ(ca().tail_probes, 0u);
    EXPECT_EQ(ca().timeouts, 1u);
    EXPECT_EQ(ca().timeouts_recovery, 1u);
    EXPECT_EQ(a.stats().rc_timeouts_recovery, 1u);
    EXPECT_EQ(ca().timeouts_frto + ca().timeouts_goback + ca().timeouts_read_newest, 0u);
}

// A WRITE of 32 packets lost, its probe too; the timeout's two resent
// packets arrive, so their ACKs say the loss is real, and the go-back goes
// on in a window cut to 4 (6 with their ACKs), whose packets are lost
// again: the expiry finds the go-back still resending (no probe: the
// newest packet has not gone again in it).
TEST_F(RttTest, ALossInATimeoutsGoBackTimesOutInTheGoBack) {
    setup();
    warm_up(30);
    const uint32_t first = next_psn;
    const uint32_t last = post_write(1, 32);
    std::map<uint32_t, int> seen;
    drop = [&](bool from_a, uint32_t p) {
        if (!from_a || psn_diff(p, first) < 0 || psn_diff(p, last) > 0) {
            return false;
        }
        const int nth = ++seen[p];
        const int32_t d = psn_diff(p, first);
        // every first copy; the probe (the last one's second); the second
        // copies of the go-back's first window after the two oldest
        return nth == 1 || (nth == 2 && (p == last || (d >= 2 && d < 8)));
    };
    const size_t n = sends() + 1;
    ASSERT_TRUE(run_for([&] { return sends() == n; }, 3000 * kMs));
    drop = {};
    EXPECT_EQ(sc.back().status, OHCA_CQE_SUCCESS);
    EXPECT_TRUE(same(side[0].buf, side[1].buf, 32 * 1024));
    EXPECT_EQ(ca().tail_probes, 1u);
    EXPECT_EQ(ca().timeouts_after_probe, 1u);
    EXPECT_EQ(ca().timeouts, 2u);
    EXPECT_EQ(ca().timeouts_goback, 1u);
    EXPECT_EQ(a.stats().rc_timeouts_goback, 1u);
    EXPECT_EQ(ca().timeouts_full, 0u);
    EXPECT_EQ(ca().timeouts_after_probe + ca().timeouts_frto + ca().timeouts_recovery +
                  ca().timeouts_goback + ca().timeouts_read_newest,
              ca().timeouts);
}

// A WRITE's last packet lost and a READ behind it lost too: the newest
// packet is the READ request, which a probe would restart, so the expiry
// is a timeout (the oldest a WRITE: not rc_timeouts_read).
TEST_F(RttTest, AReadNewestIsNoProbe) {
    setup();
    warm_up(30);
    const uint32_t last = post_write(1, 4);
    post_op(OHCA_WR_RDMA_READ, 2, 1, 0x80000);
    const uint32_t read = psn_add(next_psn, kPsnMask);
    std::map<uint32_t, int> seen;
    drop = [&](bool from_a, uint32_t p) {
        return from_a && (p == last || p == read) && ++seen[p] == 1;
    };
    const size_t n = sends() + 2;
    ASSERT_TRUE(run_for([&] { return sends() == n; }, 2000 * kMs));
    drop = {};
    EXPECT_EQ(sc.back().status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(ca().tail_probes, 0u);
    EXPECT_EQ(ca().timeouts, 1u);
    EXPECT_EQ(ca().timeouts_read_newest, 1u);
    EXPECT_EQ(ca().timeouts_read, 0u);
    EXPECT_EQ(a.stats().rc_timeouts_read_newest, 1u);
}

// The peer stands still for a second (a migration's stop, a host that did
// not schedule its VM) during a WRITE at local ACK timeout 18 (1.07 s):
// the timeouts are undone as spurious. The silence is no round trip of the
// path: a few round trips later the RTO is the path's again (10 ms), and a
// loss then costs 10 ms, not the local ACK timeout. (Before: the undo took
// the silence as a sample, and the RTO stayed at 1.07 s for hundreds of
// round trips: issue 26's peer gap.)
TEST_F(RttTest, AStallUndoneLeavesTheRtoAtThePaths) {
    setup(3, 18);
    warm_up(30);
    ASSERT_EQ(qa().rto_ns, DeviceLimits::min_rto_ns);
    b_paused_until = b.host.now + 1000 * kMs;
    post_op(OHCA_WR_RDMA_WRITE, 1, 64, 0);
    const size_t n = sends() + 1;
    ASSERT_TRUE(run_for([&] { return sends() == n; }, 5000 * kMs));
    EXPECT_EQ(sc.back().status, OHCA_CQE_SUCCESS);
    EXPECT_TRUE(same(side[0].buf, side[1].buf, 64 * 1024));
    EXPECT_GE(ca().spurious_timeouts, 1u);
    warm_up(5);
    EXPECT_LE(qa().rto_ns, 2 * DeviceLimits::min_rto_ns);
    const auto t = lossy_write(2, 1, 1);
    ASSERT_EQ(t.size(), 2u);
    EXPECT_LE(t[1] - t[0], 2 * DeviceLimits::min_rto_ns + 2 * step);
}

// A path that really became slower (a round trip of 2 ms, then 80 ms) is
// still measured: the backed-off RTO lets a packet sent once be answered
// within it, and from then on the RTO is above the new round trip and
// nothing expires any more.
TEST_F(RttTest, ASlowerPathStillRaisesTheRto) {
    setup();
    warm_up(30);
    one_way = 40 * kMs;
    warm_up(15);
    const uint64_t expiries = ca().timeouts + ca().tail_probes;
    EXPECT_GE(qa().rto_ns, 2 * one_way);
    warm_up(20);
    EXPECT_EQ(ca().timeouts + ca().tail_probes, expiries);
    EXPECT_GE(qa().srtt_ns, one_way);
}

} // namespace
} // namespace ohca::test
