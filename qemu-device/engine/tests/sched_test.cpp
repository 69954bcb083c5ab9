// SPDX-License-Identifier: GPL-2.0-or-later
// Readiness scheduling (sched.hpp, transport.cpp): only QPs with work or an
// expired timer are visited, and one engine run ends at its time bound.
#include "device/device.hpp"
#include "device/sched.hpp"
#include "objects/rdma_objects.hpp"
#include "rdma_node.hpp"

#include <gtest/gtest.h>

#include <random>

namespace ohca::test {
namespace {

constexpr uint32_t kAllAccess =
    OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_READ;

TEST(ReadyList, FifoOnceEachAndRemoval) {
    std::array<Qp, 4> q{};
    ReadyList l;
    l.push(q[0]);
    l.push(q[1]);
    l.push(q[0]); // already queued: stays where it is
    l.push(q[2]);
    EXPECT_EQ(l.size(), 3u);
    l.remove(q[1]);
    l.remove(q[3]); // not queued: nothing
    EXPECT_EQ(l.pop(), &q[0]);
    EXPECT_EQ(l.pop(), &q[2]);
    EXPECT_EQ(l.pop(), nullptr);
    EXPECT_TRUE(l.empty());
    // A QP assigned over keeps its own links.
    l.push(q[3]);
    q[3] = Qp{};
    EXPECT_TRUE(q[3].sched.ready);
    EXPECT_EQ(l.pop(), &q[3]);
}

TEST(TimerHeap, OrdersByDeadlineUnderRandomUpdates) {
    constexpr size_t kN = 200;
    std::vector<Qp> q(kN);
    TimerHeap<Qp> h(kN);
    std::mt19937 rng(7);
    for (int step = 0; step < 5000; ++step) {
        Qp &x = q[rng() % kN];
        const uint64_t d = rng() % 4 == 0 ? 0 : 1 + rng() % 1000;
        h.set(x, d);
        uint64_t min = 0;
        size_t armed = 0;
        for (const Qp &y : q) {
            if (y.deadline_ns != 0) {
                ++armed;
                min = min == 0 ? y.deadline_ns : std::min(min, y.deadline_ns);
            }
        }
        ASSERT_EQ(h.size(), armed);
        ASSERT_EQ(h.earliest(), min);
    }
    EXPECT_LE(h.size(), kN);
}

// Many QPs, two of them connected to each other over the device's own GID.
class SchedTest : public ::testing::Test {
  protected:
    void SetUp() override {
        pd = n.create_pd();
        scq = n.create_cq(10);
        rcq = n.create_cq(10);
        for (int i = 0; i < 1000; ++i) {
            idle.push_back(n.create_qp(pd, scq.cqn, rcq.cqn, 1, 1));
        }
        a = n.create_qp(pd, scq.cqn, rcq.cqn);
        b = n.create_qp(pd, scq.cqn, rcq.cqn);
        n.connect(a, b.qpn, n, 3);
        n.connect(b, a.qpn, n, 3);
        buf = n.alloc(2 << 20);
        key = n.reg_mr(pd, buf, 2 << 20, kAllAccess);
        n.process();
    }
    const Device::SchedStats &sched() { return device_of(n.e).sched_stats(); }

    // Posts on QP a an RDMA WRITE of len patterned bytes from buf to
    // buf + len (doorbell rung if ring); returns the pattern.
    std::vector<uint8_t> post_patterned_write(uint32_t len, bool ring) {
        std::vector<uint8_t> pattern(len);
        for (uint32_t i = 0; i < len; ++i) {
            pattern[i] = static_cast<uint8_t>(i * 13 + 1);
        }
        EXPECT_TRUE(n.host.write(buf, pattern.data(), len));
        SendReq r;
        r.opcode = OHCA_WR_RDMA_WRITE;
        r.remote_addr = buf + len;
        r.rkey = key;
        r.sges = {{buf, len, key}};
        n.post_send(a, r, ring);
        return pattern;
    }
    // The WRITE of post_patterned_write completed and landed.
    void expect_write_done(const std::vector<uint8_t> &pattern) {
        auto c = n.poll(scq);
        ASSERT_EQ(c.size(), 1u);
        EXPECT_EQ(c[0].status, OHCA_CQE_SUCCESS);
        std::vector<uint8_t> got(pattern.size());
        ASSERT_TRUE(n.host.read(buf + pattern.size(), got.data(), got.size()));
        EXPECT_EQ(got, pattern);
    }

    RdmaNode n{1};
    uint32_t pd = 0;
    CqInfo scq, rcq;
    std::vector<QpInfo> idle;
    QpInfo a, b;
    uint64_t buf = 0;
    uint32_t key = 0;
};

TEST_F(SchedTest, IdlePassVisitsNoQp) {
    const Device::SchedStats before = sched();
    for (int i = 0; i < 10; ++i) {
        ohca_engine_process(n.e);
    }
    EXPECT_EQ(sched().runs, before.runs + 10);
    EXPECT_EQ(sched().visits, before.visits);
    const unsigned int s = n.host.schedules;
    ohca_engine_process(n.e);
    EXPECT_EQ(n.host.schedules, s); // an idle run does not ask for another
}

TEST_F(SchedTest, OneDoorbellVisitsOnlyItsQps) {
    n.post_recv(b, 1, {{buf + (1 << 20), 64, key}});
    SendReq r;
    r.sges = {{buf, 64, key}};
    const Device::SchedStats before = sched();
    n.post_send(a, r);
    n.process();
    ASSERT_EQ(n.poll(scq).size(), 1u);
    ASSERT_EQ(n.poll(rcq).size(), 1u);
    // The requester's QP once for the SEND, the responder's once for its
    // ACK (coalesced in loopback: sent on the visit after the request);
    // nothing else of the 1002 QPs.
    EXPECT_LE(sched().visits - before.visits, 3u);
}

TEST_F(SchedTest, TimeBoundEndsRunAndWorkResumes) {
    // Every clock reading is 50 us later: a run reaches max_run_ns after a
    // few readings and must leave the rest to the next one.
    n.host.now_step = 50'000;
    const Device::SchedStats before = sched();
    // 1024 packets at MTU 1024
    const std::vector<uint8_t> pattern = post_patterned_write(1 << 20, true);
    n.process();
    expect_write_done(pattern);
    EXPECT_GT(sched().out_of_time, before.out_of_time);
    EXPECT_GT(sched().runs - before.runs, 4u);
    EXPECT_EQ(device_of(n.e).roce_counters().timeouts, 0u);
}

TEST_F(SchedTest, ResetAndDestroyUnlinkQueuedQps) {
    // A QP towards another node: its SEND goes to the wire, no ACK comes,
    // and its ACK timer stays armed.
    RdmaNode peer{2};
    QpInfo c = n.create_qp(pd, scq.cqn, rcq.cqn);
    n.connect(c, 5, peer, 3);
    SendReq r;
    r.sges = {{buf, 64, key}};
    n.post_send(c, r);
    n.process();
    EXPECT_EQ(n.host.wire.size(), 1u);
    EXPECT_NE(n.host.timer, 0u);
    // Work queued on 'a', then 'a' reset before any run: it is not visited.
    n.post_send(a, r);
    ohca_qp_attr attr{};
    attr.qp_state = OHCA_QPS_RESET;
    EXPECT_EQ(n.modify(a.qpn, OHCA_QP_STATE, attr).status, OHCA_STATUS_OK);
    ohca_handle_in in{};
    in.handle = c.qpn;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_QP, in).status, OHCA_STATUS_OK);
    const Device::SchedStats before = sched();
    n.process();
    EXPECT_EQ(n.host.timer, 0u); // the destroyed QP's timer is gone
    EXPECT_EQ(sched().visits, before.visits);
    EXPECT_TRUE(n.poll(scq).empty());
}

// ---- ohca_engine_doorbell_fast(): the doorbell runs its work at once ----------

class DoorbellFastTest : public SchedTest {
  protected:
    // Packets sent or looped back (read without a command, which would
    // run the engine).
    uint64_t packets() {
        const RoceCounters &c = device_of(n.e).roce_counters();
        return c.tx_packets + c.loopback_packets;
    }
    void ring_fast(const QpInfo &qp, unsigned int budget) {
        ohca_engine_doorbell_fast(n.e, qp.uar, OHCA_DB_SQ, OHCA_DB_VALUE(qp.qpn, qp.sq_pi), 8,
                                  budget);
    }
};

// A small WRITE is sent, delivered, acknowledged and completed before the
// doorbell returns, and nothing is left for the bottom half.
TEST_F(DoorbellFastTest, SmallWriteCompletesInTheDoorbell) {
    ASSERT_TRUE(n.host.write(buf, "ping", 4));
    SendReq r;
    r.opcode = OHCA_WR_RDMA_WRITE;
    r.remote_addr = buf + 4096;
    r.rkey = key;
    r.sges = {{buf, 4, key}};
    n.post_send(a, r, false);
    const unsigned int schedules = n.host.schedules;
    const Device::SchedStats before = sched();
    ring_fast(a, 16);
    EXPECT_EQ(n.host.schedules, schedules); // no bottom half asked for
    EXPECT_EQ(sched().doorbell_runs, before.doorbell_runs + 1);
    EXPECT_EQ(n.host.get<uint32_t>(buf + 4096), n.host.get<uint32_t>(buf));
    auto c = n.poll(scq);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, OHCA_CQE_SUCCESS);
    const Device::SchedStats after = sched();
    n.process(); // the bottom half would find nothing
    EXPECT_EQ(sched().visits, after.visits);
}

// A budget smaller than the work: exactly that much is done in the
// doorbell, the rest is scheduled and finished by process(), in order.
TEST_F(DoorbellFastTest, BudgetBoundsTheDoorbellAndTheRestFollows) {
    // 64 packets at MTU 1024
    const std::vector<uint8_t> pattern = post_patterned_write(64 * 1024, false);
    const uint64_t tx_before = packets();
    const unsigned int schedules = n.host.schedules;
    ring_fast(a, 8);
    EXPECT_EQ(packets() - tx_before, 7u);       // 8 units: the WQE taken, 7 of its packets
    EXPECT_EQ(n.host.schedules, schedules + 1); // the rest: one bottom half
    EXPECT_TRUE(n.poll(scq).empty());
    n.process();
    expect_write_done(pattern);
    // 64 requests and their ACKs: one, or two when the requester's initial
    // window (64 KiB of packets) asks for one at its edge as well
    EXPECT_GE(packets() - tx_before, 64u + 1u);
    EXPECT_LE(packets() - tx_before, 64u + 2u);
}

// The time bound holds whatever the budget: with a clock that moves 50 us
// per reading the doorbell stops at its first clock check.
TEST_F(DoorbellFastTest, TimeBoundEndsTheDoorbellRun) {
    SendReq r;
    r.opcode = OHCA_WR_RDMA_WRITE;
    r.remote_addr = buf + (1 << 20);
    r.rkey = key;
    r.sges = {{buf, 1 << 20, key}};
    n.post_send(a, r, false);
    n.host.now_step = 50'000;
    const uint64_t tx_before = packets();
    ring_fast(a, 4096);
    const uint64_t sent = packets() - tx_before;
    EXPECT_GE(sent, 1u);
    EXPECT_LE(sent, 64u); // one visit of the QP: the quantum
    n.host.now_step = 0;
    n.process();
    auto c = n.poll(scq);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, OHCA_CQE_SUCCESS);
}

// The rung QP goes before QPs that were ready already, and they keep
// their place: nothing is lost or visited twice.
TEST_F(DoorbellFastTest, RungQpFirstOthersKeepTheirTurn) {
    QpInfo c = n.create_qp(pd, scq.cqn, rcq.cqn);
    QpInfo d = n.create_qp(pd, scq.cqn, rcq.cqn);
    n.connect(c, d.qpn, n, 3);
    n.connect(d, c.qpn, n, 3);
    SendReq w;
    w.opcode = OHCA_WR_RDMA_WRITE; // zero length
    w.wr_id = 7;
    n.post_send(c, w); // ready, waiting for the bottom half
    w.wr_id = 8;
    n.post_send(a, w, false);
    // Budget 2 (its WQE and its packet): only the rung QP's packet goes
    // out in the doorbell.
    const uint64_t tx_before = packets();
    ring_fast(a, 2);
    EXPECT_EQ(packets() - tx_before, 1u);
    n.process();
    auto cqes = n.poll(scq);
    ASSERT_EQ(cqes.size(), 2u);
    EXPECT_EQ(cqes[0].wr_id, 8u); // the rung QP's, first
    EXPECT_EQ(cqes[1].wr_id, 7u);
    EXPECT_EQ(packets() - tx_before, 4u); // 2 WRITEs, 2 ACKs
}

// A doorbell that gives no QP work runs nothing; a refused one is counted
// as with ohca_engine_db_write; budget 0 leaves everything to the bottom
// half.
TEST_F(DoorbellFastTest, NoWorkRefusedAndZeroBudget) {
    const Device::SchedStats before = sched();
    ohca_engine_doorbell_fast(n.e, 0, OHCA_DB_CQ, OHCA_DB_VALUE(scq.cqn, scq.ci), 8, 64);
    EXPECT_EQ(sched().runs, before.runs);
    const uint64_t errors = n.stats().db_errors;
    ohca_engine_doorbell_fast(n.e, 0, OHCA_DB_SQ, OHCA_DB_VALUE(0xffff, 1), 8, 64);
    ohca_engine_doorbell_fast(n.e, 0, OHCA_DB_SQ, OHCA_DB_VALUE(a.qpn, a.sq_pi + 1000), 8, 64);
    EXPECT_EQ(n.stats().db_errors, errors + 2);
    SendReq w;
    w.opcode = OHCA_WR_RDMA_WRITE;
    n.post_send(a, w, false);
    const unsigned int schedules = n.host.schedules;
    ring_fast(a, 0);
    EXPECT_EQ(sched().doorbell_runs, before.doorbell_runs);
    EXPECT_EQ(n.host.schedules, schedules + 1);
    EXPECT_TRUE(n.poll(scq).empty());
    n.process();
    EXPECT_EQ(n.poll(scq).size(), 1u);
}

// From inside a host callback (a DMA that reaches the device's own BAR)
// the doorbell is refused and counted: the engine never recurses.
TEST_F(DoorbellFastTest, ReentryFromACallbackIsRefused) {
    SendReq w;
    w.opcode = OHCA_WR_RDMA_WRITE;
    n.post_send(a, w, false);
    int inner = 0;
    const uint64_t errors = n.stats().db_errors;
    n.host.on_dma = [&] {
        if (inner++ == 0) {
            ohca_engine_doorbell_fast(n.e, a.uar, OHCA_DB_SQ, OHCA_DB_VALUE(a.qpn, a.sq_pi), 8, 64);
        }
    };
    ring_fast(a, 64);
    n.host.on_dma = nullptr;
    EXPECT_GT(inner, 0);
    EXPECT_EQ(n.stats().db_errors, errors + 1);
    n.process();
    EXPECT_EQ(n.poll(scq).size(), 1u);
}

} // namespace
} // namespace ohca::test

namespace ohca::test {
namespace {

// Issue 21 N6: timer expiries are bounded per run like the rest of a run's
// work. 600 QPs whose ACK timers all expire at once take several runs,
// none handling more than max_run_timers, and each run that leaves some
// asks for the next.
TEST(SchedTimers, ManyExpiriesAreSpreadOverBoundedRuns) {
    RdmaNode n{1};
    RdmaNode peer{2}; // never answers: its frames are never delivered
    const uint32_t pd = n.create_pd();
    CqInfo cq = n.create_cq(10);
    const uint64_t buf = n.alloc(4096);
    const uint32_t key = n.reg_mr(pd, buf, 4096, kAllAccess);
    constexpr unsigned int kQps = 600;
    std::vector<QpInfo> qps;
    for (unsigned int i = 0; i < kQps; ++i) {
        qps.push_back(n.create_qp(pd, cq.cqn, cq.cqn, 1, 1));
        n.connect(qps.back(), 0x100 + i, peer);
    }
    for (auto &q : qps) {
        SendReq r;
        r.sges = {{buf, 64, key}};
        n.post_send(q, r);
    }
    n.process();
    ASSERT_EQ(n.host.wire.size(), size_t{kQps});
    const Device &d = device_of(n.e);
    const Device::SchedStats before = d.sched_stats();
    const uint64_t timeouts = d.roce_counters().timeouts;

    n.host.now += 10'000'000'000ull; // every ACK timer has expired
    const unsigned int schedules = n.host.schedules;
    ohca_engine_process(n.e);
    EXPECT_EQ(d.sched_stats().timer_expiries - before.timer_expiries, DeviceLimits::max_run_timers);
    EXPECT_EQ(d.sched_stats().timers_capped, before.timers_capped + 1);
    EXPECT_GT(n.host.schedules, schedules); // the rest in the next run

    uint64_t last = d.sched_stats().timer_expiries;
    for (int run = 0; run < 10 && last - before.timer_expiries < kQps; ++run) {
        ohca_engine_process(n.e);
        const uint64_t now = d.sched_stats().timer_expiries;
        EXPECT_LE(now - last, DeviceLimits::max_run_timers);
        last = now;
    }
    EXPECT_EQ(last - before.timer_expiries, uint64_t{kQps});
    EXPECT_EQ(d.roce_counters().timeouts - timeouts, uint64_t{kQps});
    EXPECT_EQ(d.sched_stats().timers_capped, before.timers_capped + 2); // 256 + 256 + 88
    // Nothing left: no QP is failed, each is waiting for its peer again.
    n.process();
    EXPECT_TRUE(n.poll(cq).empty());
}

} // namespace
} // namespace ohca::test
