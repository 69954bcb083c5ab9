// SPDX-License-Identifier: GPL-2.0-or-later
// Completion event moderation (MODIFY_CQ, programming manual section 20):
// an armed CQ's event waits for cq_count CQEs or cq_period after the first,
// is never lost, and its one timer goes with the CQ.
#include "rdma_node.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace ohca::test {
namespace {

class CqModerationTest : public ::testing::Test {
  protected:
    void SetUp() override {
        pd = n.create_pd();
        cq = n.create_cq(6); // events on EQ 0: n.events() sees them
        peer_cq = n.create_cq(6);
        qp = n.create_qp(pd, cq.cqn, cq.cqn);
        peer = n.create_qp(pd, peer_cq.cqn, peer_cq.cqn);
        n.connect(qp, peer.qpn, n);
        n.connect(peer, qp.qpn, n);
        (void)n.events();
    }

    CmdOutcome moderate(uint32_t cqn, uint16_t count, uint16_t period,
                        uint32_t mask = OHCA_MODIFY_CQ_MODERATION) {
        ohca_modify_cq_in in{};
        in.cqn = cqn;
        in.mask = mask;
        in.cq_count = count;
        in.cq_period = period;
        return n.cmd_in(OHCA_CMD_MODIFY_CQ, in);
    }

    // A signaled zero-length RDMA WRITE: one send CQE on 'cq'.
    void complete_one(uint8_t flags = OHCA_WQE_SIGNALED) {
        SendReq r;
        r.opcode = OHCA_WR_RDMA_WRITE;
        r.flags = flags;
        n.post_send(qp, r);
        n.process();
    }

    // Completion events for 'cq' since the last call.
    int cq_events() {
        const auto ev = n.events();
        return static_cast<int>(std::count_if(ev.begin(), ev.end(), [&](const ohca_eqe &e) {
            return e.type == OHCA_EQE_CQ_COMPLETION && e.param0 == cq.cqn;
        }));
    }

    void arm(uint32_t how = OHCA_DB_CQ_ARM_NEXT) { n.cq_doorbell(cq, how); }

    // Moves the clock to 'ns' and runs the engine as the host timer would.
    void advance_to(uint64_t ns) {
        n.host.now = ns;
        n.process();
    }

    RdmaNode n{1};
    uint32_t pd = 0;
    CqInfo cq, peer_cq;
    QpInfo qp, peer;
};

TEST_F(CqModerationTest, OffByDefaultEventAtFirstCqe) {
    arm();
    complete_one();
    EXPECT_EQ(cq_events(), 1);
    complete_one(); // not armed: no event
    EXPECT_EQ(cq_events(), 0);
    EXPECT_EQ(n.host.timer, 0u);
    EXPECT_EQ(n.poll(cq).size(), 2u);
}

TEST_F(CqModerationTest, EventWhenCountReached) {
    ASSERT_EQ(moderate(cq.cqn, 3, 10000).status, OHCA_STATUS_OK);
    arm();
    const uint64_t t0 = n.host.now;
    complete_one();
    complete_one();
    EXPECT_EQ(cq_events(), 0);                 // held
    EXPECT_EQ(n.host.timer, t0 + 10'000'000u); // the period runs from the first
    complete_one();
    EXPECT_EQ(cq_events(), 1);
    EXPECT_EQ(n.host.timer, 0u); // the timer went with the event
    EXPECT_EQ(n.poll(cq).size(), 3u);
    // Disarmed: further CQEs neither count nor start a timer.
    complete_one();
    complete_one();
    complete_one();
    EXPECT_EQ(cq_events(), 0);
    EXPECT_EQ(n.host.timer, 0u);
}

TEST_F(CqModerationTest, EventWhenPeriodEnds) {
    ASSERT_EQ(moderate(cq.cqn, 100, 50).status, OHCA_STATUS_OK);
    arm();
    const uint64_t t0 = n.host.now;
    complete_one();
    EXPECT_EQ(cq_events(), 0);
    ASSERT_EQ(n.host.timer, t0 + 50'000u);
    advance_to(t0 + 49'999);
    EXPECT_EQ(cq_events(), 0);
    advance_to(t0 + 50'000);
    EXPECT_EQ(cq_events(), 1); // the CQE that arrived produced its event
    advance_to(t0 + 1'000'000);
    EXPECT_EQ(cq_events(), 0); // once
    EXPECT_EQ(n.host.timer, 0u);
}

TEST_F(CqModerationTest, PeriodAloneWithCountZero) {
    ASSERT_EQ(moderate(cq.cqn, 0, 20).status, OHCA_STATUS_OK);
    arm();
    for (int i = 0; i < 10; ++i) {
        complete_one();
    }
    EXPECT_EQ(cq_events(), 0);
    advance_to(n.host.timer);
    EXPECT_EQ(cq_events(), 1);
    EXPECT_EQ(n.poll(cq).size(), 10u);
}

TEST_F(CqModerationTest, CountOneIsImmediateAndZeroZeroTurnsItOff) {
    ASSERT_EQ(moderate(cq.cqn, 1, 500).status, OHCA_STATUS_OK);
    arm();
    complete_one();
    EXPECT_EQ(cq_events(), 1);
    EXPECT_EQ(n.host.timer, 0u);
    ASSERT_EQ(moderate(cq.cqn, 4, 500).status, OHCA_STATUS_OK);
    ASSERT_EQ(moderate(cq.cqn, 0, 0).status, OHCA_STATUS_OK);
    (void)n.poll(cq);
    arm();
    complete_one();
    EXPECT_EQ(cq_events(), 1);
    EXPECT_EQ(n.host.timer, 0u);
}

// Arming with CQEs the consumer has not returned counts them as arrived:
// without moderation that is an event at once (as before), with it they
// count towards cq_count and start the period.
TEST_F(CqModerationTest, ArmingWithUnseenCqes) {
    complete_one();
    complete_one();
    arm(); // two unseen, moderation off: at once
    EXPECT_EQ(cq_events(), 1);
    ASSERT_EQ(moderate(cq.cqn, 3, 1000).status, OHCA_STATUS_OK);
    arm(); // the same two, now held
    EXPECT_EQ(cq_events(), 0);
    EXPECT_NE(n.host.timer, 0u);
    arm(); // armed again: not counted twice
    EXPECT_EQ(cq_events(), 0);
    complete_one(); // the third
    EXPECT_EQ(cq_events(), 1);
    EXPECT_EQ(n.poll(cq).size(), 3u);
    // A held event survives the consumer polling its CQEs: it still
    // comes (a spurious wakeup is allowed, a lost one is not).
    arm();
    complete_one();
    EXPECT_EQ(n.poll(cq).size(), 1u);
    arm(); // nothing unseen; the held event keeps its count and period
    EXPECT_EQ(cq_events(), 0);
    advance_to(n.host.timer);
    EXPECT_EQ(cq_events(), 1);
}

TEST_F(CqModerationTest, SolicitedArmingCountsOnlySolicitedOrErrors) {
    ASSERT_EQ(moderate(cq.cqn, 2, 1000).status, OHCA_STATUS_OK);
    arm(OHCA_DB_CQ_ARM_SOLICITED);
    complete_one(); // a successful send CQE is not solicited
    complete_one();
    EXPECT_EQ(cq_events(), 0);
    EXPECT_EQ(n.host.timer, 0u);
    // Receives of two solicited SENDs count.
    const uint64_t buf = n.alloc(4096);
    const uint32_t key = n.reg_mr(pd, buf, 4096, OHCA_ACCESS_LOCAL_WRITE);
    for (int i = 0; i < 2; ++i) {
        n.post_recv(qp, 10 + i, {{buf, 64, key}});
        SendReq r;
        r.flags = OHCA_WQE_SOLICITED; // unsignaled at the sender
        n.post_send(peer, r);
        n.process();
        EXPECT_EQ(cq_events(), i == 0 ? 0 : 1);
    }
}

TEST_F(CqModerationTest, ModifyWhileHeld) {
    ASSERT_EQ(moderate(cq.cqn, 10, 1000).status, OHCA_STATUS_OK);
    arm();
    complete_one();
    complete_one();
    const uint64_t first = n.host.timer;
    ASSERT_NE(first, 0u);
    // A new period restarts from the command.
    n.host.now += 400'000;
    ASSERT_EQ(moderate(cq.cqn, 10, 2000).status, OHCA_STATUS_OK);
    EXPECT_EQ(n.host.timer, n.host.now + 2'000'000u);
    EXPECT_EQ(cq_events(), 0);
    // A count already reached releases it at once.
    ASSERT_EQ(moderate(cq.cqn, 2, 2000).status, OHCA_STATUS_OK);
    EXPECT_EQ(cq_events(), 1);
    EXPECT_EQ(n.host.timer, 0u);
}

// One timer per CQ whatever the CQEs; it shares the host's single timer
// with the QPs' and goes with its CQ.
TEST_F(CqModerationTest, DestroyWithHeldEvent) {
    ASSERT_EQ(moderate(cq.cqn, 1000, 100).status, OHCA_STATUS_OK);
    arm();
    for (int i = 0; i < 20; ++i) {
        complete_one();
    }
    ASSERT_NE(n.host.timer, 0u);
    const uint64_t deadline = n.host.timer;
    ohca_handle_in h{};
    h.handle = qp.qpn;
    ASSERT_EQ(n.cmd_in(OHCA_CMD_DESTROY_QP, h).status, OHCA_STATUS_OK);
    h.handle = cq.cqn;
    ASSERT_EQ(n.cmd_in(OHCA_CMD_DESTROY_CQ, h).status, OHCA_STATUS_OK);
    EXPECT_EQ(n.host.timer, 0u);
    // A new CQ in the slot starts clean.
    CqInfo again = n.create_cq(6);
    EXPECT_EQ(again.cqn, cq.cqn);
    advance_to(deadline + 1);
    EXPECT_TRUE(n.events().empty());
}

TEST_F(CqModerationTest, ResetWithHeldEvent) {
    ASSERT_EQ(moderate(cq.cqn, 1000, 100).status, OHCA_STATUS_OK);
    arm();
    complete_one();
    const uint64_t deadline = n.host.timer;
    ASSERT_NE(deadline, 0u);
    n.reset();
    EXPECT_EQ(n.host.timer, 0u);
    advance_to(deadline + 1);
    EXPECT_TRUE(n.events().empty());
    // The device works after it, moderation included.
    CqInfo c = n.create_cq(6);
    ohca_modify_cq_in in{};
    in.cqn = c.cqn;
    in.mask = OHCA_MODIFY_CQ_MODERATION;
    in.cq_count = 2;
    in.cq_period = 10;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_MODIFY_CQ, in).status, OHCA_STATUS_OK);
}

TEST_F(CqModerationTest, ResizeKeepsModerationAndHeldEvent) {
    ASSERT_EQ(moderate(cq.cqn, 3, 1000).status, OHCA_STATUS_OK);
    arm();
    complete_one();
    complete_one();
    const uint64_t ring = n.alloc(32 * 256);
    ohca_resize_cq_in r{};
    r.cqn = cq.cqn;
    r.log_size = 8;
    r.pbl = n.make_pbl(ring, 32 * 256);
    ohca_resize_cq_out o{};
    ASSERT_EQ(n.cmd(OHCA_CMD_RESIZE_CQ, &r, sizeof(r), &o, sizeof(o)).status, OHCA_STATUS_OK);
    cq.ring = ring;
    cq.size = 256;
    cq.ci = 0;
    EXPECT_EQ(cq_events(), 0);
    complete_one();
    EXPECT_EQ(cq_events(), 1);
    EXPECT_EQ(n.poll(cq).size(), 3u);
}

TEST_F(CqModerationTest, HostileFieldsRefused) {
    EXPECT_EQ(moderate(cq.cqn, 2, 10, 0).status, OHCA_STATUS_BAD_FIELD);
    auto r = moderate(cq.cqn, 2, 10, OHCA_MODIFY_CQ_MODERATION | 2);
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(r.syndrome, offsetof(ohca_modify_cq_in, mask));
    // A count with no period could hold an event for ever.
    r = moderate(cq.cqn, 2, 0);
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(r.syndrome, offsetof(ohca_modify_cq_in, cq_period));
    r = moderate(cq.cqn, 0xffff, 0);
    EXPECT_EQ(r.syndrome, offsetof(ohca_modify_cq_in, cq_period));
    r = moderate(999, 2, 10);
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_HANDLE);
    EXPECT_EQ(r.syndrome, 999u);
    r = moderate(0, 2, 10);
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_HANDLE);
    ohca_modify_cq_in in{};
    in.cqn = cq.cqn;
    in.mask = OHCA_MODIFY_CQ_MODERATION;
    in.rsvd = 1;
    r = n.cmd_in(OHCA_CMD_MODIFY_CQ, in);
    EXPECT_EQ(r.status, OHCA_STATUS_RESERVED_NONZERO);
    EXPECT_EQ(r.syndrome, offsetof(ohca_modify_cq_in, rsvd));
    EXPECT_EQ(n.cmd(OHCA_CMD_MODIFY_CQ, &in, 12).status, OHCA_STATUS_BAD_LEN);
    // None of them changed anything: still off.
    arm();
    complete_one();
    EXPECT_EQ(cq_events(), 1);
    // The largest values are taken.
    EXPECT_EQ(moderate(cq.cqn, 0xffff, 0xffff).status, OHCA_STATUS_OK);
}

// Many CQs holding events at once: one heap entry each, expiring in
// deadline order, all of them delivered.
TEST_F(CqModerationTest, ManyCqsOneTimerEach) {
    std::vector<CqInfo> cqs;
    std::vector<QpInfo> qps;
    for (int i = 0; i < 16; ++i) {
        cqs.push_back(n.create_cq(4));
        ASSERT_EQ(moderate(cqs.back().cqn, 1000, static_cast<uint16_t>(100 + 10 * (16 - i))).status,
                  OHCA_STATUS_OK);
        qps.push_back(n.create_qp(pd, cqs.back().cqn, cqs.back().cqn));
        n.connect(qps.back(), qps.back().qpn, n); // to itself
        n.cq_doorbell(cqs.back(), OHCA_DB_CQ_ARM_NEXT);
    }
    for (auto &q : qps) {
        SendReq r;
        r.opcode = OHCA_WR_RDMA_WRITE; // zero length
        n.post_send(q, r);
    }
    n.process();
    (void)n.events();
    size_t got = 0;
    uint64_t last = 0;
    while (n.host.timer != 0 && got < 32) {
        EXPECT_GE(n.host.timer, last);
        last = n.host.timer;
        advance_to(n.host.timer);
        for (const auto &e : n.events()) {
            got += e.type == OHCA_EQE_CQ_COMPLETION ? 1 : 0;
        }
    }
    EXPECT_EQ(got, cqs.size());
}

} // namespace
} // namespace ohca::test
