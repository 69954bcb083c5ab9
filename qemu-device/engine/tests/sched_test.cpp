// SPDX-License-Identifier: GPL-2.0-or-later
// Readiness scheduling (sched.hpp, transport.cpp): only QPs with work or an
// expired timer are visited, and one engine run ends at its time bound.
#include "device.hpp"
#include "rdma_node.hpp"
#include "rdma_objects.hpp"
#include "sched.hpp"

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
    // The requester's QP once for the SEND; the responder answers its ACK
    // while handling the request; nothing else of the 1002 QPs.
    EXPECT_LE(sched().visits - before.visits, 2u);
}

TEST_F(SchedTest, TimeBoundEndsRunAndWorkResumes) {
    constexpr uint32_t kLen = 1 << 20; // 1024 packets at MTU 1024
    std::vector<uint8_t> pattern(kLen);
    for (uint32_t i = 0; i < kLen; ++i) {
        pattern[i] = static_cast<uint8_t>(i * 13 + 1);
    }
    ASSERT_TRUE(n.host.write(buf, pattern.data(), kLen));
    // Every clock reading is 50 us later: a run reaches max_run_ns after a
    // few readings and must leave the rest to the next one.
    n.host.now_step = 50'000;
    const Device::SchedStats before = sched();
    SendReq r;
    r.opcode = OHCA_WR_RDMA_WRITE;
    r.remote_addr = buf + kLen;
    r.rkey = key;
    r.sges = {{buf, kLen, key}};
    n.post_send(a, r);
    n.process();
    auto sc = n.poll(scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
    std::vector<uint8_t> got(kLen);
    ASSERT_TRUE(n.host.read(buf + kLen, got.data(), kLen));
    EXPECT_EQ(got, pattern);
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

} // namespace
} // namespace ohca::test
