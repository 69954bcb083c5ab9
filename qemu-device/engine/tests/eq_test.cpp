// SPDX-License-Identifier: GPL-2.0-or-later
// Event queue 0: owner bit across wraps, arm semantics, a full EQ 0.
#include "engine_test.hpp"

#include <algorithm>

namespace ohca::test {
namespace {

using EqTest = EngineTest;

size_t count_irq(const std::vector<unsigned int> &irqs, unsigned int v) {
    return static_cast<size_t>(std::count(irqs.begin(), irqs.end(), v));
}

TEST_F(EqTest, OwnerBitFlipsOnEveryWrap) {
    bring_up(4, 2); // EQ of 4 entries
    for (uint32_t i = 0; i < 4 * 5; ++i) {
        ohca_cmd c{};
        c.opcode = OHCA_CMD_NOP;
        c.token = static_cast<uint16_t>(i);
        post_raw(c);
        ring_cmdq();
        drain();
        const auto raw = host_.get<ohca_eqe>(kEqBase + 16ull * (i % 4));
        EXPECT_EQ(raw.flags, ((i / 4) % 2 == 0) ? OHCA_EQE_OWNER : 0) << "event " << i;
        EXPECT_EQ(raw.param0, i);
        ohca_eqe e{};
        ASSERT_TRUE(next_eqe(e));
        // Nothing more is valid until the device writes again.
        ohca_eqe none{};
        EXPECT_FALSE(next_eqe(none));
        eq_doorbell(true);
    }
}

TEST_F(EqTest, ZeroedRingHoldsNoValidEntry) {
    bring_up();
    ohca_eqe e{};
    EXPECT_FALSE(next_eqe(e));
}

TEST_F(EqTest, ArmedRaisesOnceThenDisarms) {
    bring_up();
    host_.irqs.clear();
    ohca_cmd c{};
    c.opcode = OHCA_CMD_NOP;
    post_raw(c);
    post_raw(c);
    post_raw(c);
    ring_cmdq();
    drain();
    EXPECT_EQ(count_irq(host_.irqs, OHCA_MSIX_ASYNC_EQ), 1u); // armed by bring_up
    // Consume without arming: no interrupt.
    ohca_eqe e{};
    ASSERT_TRUE(next_eqe(e));
    eq_doorbell(false);
    post_raw(c);
    ring_cmdq();
    drain();
    EXPECT_EQ(count_irq(host_.irqs, OHCA_MSIX_ASYNC_EQ), 1u);
    // Arming with unconsumed entries raises at once.
    eq_doorbell(true);
    EXPECT_EQ(count_irq(host_.irqs, OHCA_MSIX_ASYNC_EQ), 2u);
    // ... and stays disarmed.
    post_raw(c);
    ring_cmdq();
    drain();
    EXPECT_EQ(count_irq(host_.irqs, OHCA_MSIX_ASYNC_EQ), 2u);
    // Consume everything, arm: quiet until the next event.
    while (next_eqe(e)) {
    }
    eq_doorbell(true);
    EXPECT_EQ(count_irq(host_.irqs, OHCA_MSIX_ASYNC_EQ), 2u);
    post_raw(c);
    ring_cmdq();
    drain();
    EXPECT_EQ(count_irq(host_.irqs, OHCA_MSIX_ASYNC_EQ), 3u);
}

TEST_F(EqTest, DoorbellGarbageRejected) {
    bring_up();
    const uint32_t errs = rd(OHCA_REG_ERR_COUNT);
    wr(OHCA_REG_EQ0_DB, 1);          // CI beyond the producer
    wr(OHCA_REG_EQ0_DB, 0x00010000); // reserved bits
    wr(OHCA_REG_EQ0_DB, 0x7fff0000);
    EXPECT_EQ(rd(OHCA_REG_ERR_COUNT), errs + 3);
}

// A full EQ 0 is not fatal (OHCA_DEV_CAP_EQ0_HOLD): commands wait for room
// for their CMD_DONE and run, in order, once the driver returns entries.
TEST_F(EqTest, FullEq0HoldsCommandsBack) {
    bring_up(4, 2); // 4 EQEs, 16 commands
    host_.irqs.clear();
    for (int i = 0; i < 6; ++i) {
        ohca_cmd c{};
        c.opcode = OHCA_CMD_NOP;
        c.token = static_cast<uint16_t>(i);
        post_raw(c);
    }
    ring_cmdq();
    drain();
    EXPECT_EQ(rd(OHCA_REG_DEV_STATUS), uint32_t{OHCA_DEV_STATUS_READY});
    EXPECT_EQ(rd(OHCA_REG_CMDQ_CI), 4u); // the fifth waits for room
    for (uint32_t i = 0; i < 4; ++i) {
        ohca_eqe e{};
        ASSERT_TRUE(next_eqe(e));
        EXPECT_EQ(e.type, OHCA_EQE_CMD_DONE);
        EXPECT_EQ(e.param0, i);
    }
    ohca_eqe e{};
    EXPECT_FALSE(next_eqe(e));
    eq_doorbell(true);
    drain();
    EXPECT_EQ(rd(OHCA_REG_CMDQ_CI), 6u);
    for (uint32_t i = 4; i < 6; ++i) {
        ASSERT_TRUE(next_eqe(e));
        EXPECT_EQ(e.type, OHCA_EQE_CMD_DONE);
        EXPECT_EQ(e.param0, i);
    }
    EXPECT_EQ(stats().eq0_events_held, 0u); // commands waited, no event did
}

// Port changes while EQ 0 is full wait as one event with the latest state
// (the others count as merged) and are posted when room comes, before the
// command that waited behind them.
TEST_F(EqTest, PortEventsWaitMergedInFullEq0) {
    bring_up(4, 2);
    for (int i = 0; i < 4; ++i) {
        ohca_cmd c{};
        c.opcode = OHCA_CMD_NOP;
        post_raw(c);
    }
    ring_cmdq();
    drain();
    ohca_engine_set_link(e_, false);
    ohca_engine_set_link(e_, true);
    ohca_engine_set_link(e_, false);
    ohca_cmd c{};
    c.opcode = OHCA_CMD_NOP;
    c.token = 77;
    post_raw(c);
    ring_cmdq();
    drain();
    EXPECT_EQ(rd(OHCA_REG_DEV_STATUS), uint32_t{OHCA_DEV_STATUS_READY});
    ohca_eqe e{};
    for (int i = 0; i < 4; ++i) {
        ASSERT_TRUE(next_eqe(e));
    }
    eq_doorbell(false);
    drain();
    ASSERT_TRUE(next_eqe(e));
    EXPECT_EQ(e.type, OHCA_EQE_PORT_CHANGE);
    EXPECT_EQ(e.code, OHCA_PORT_DOWN);
    ASSERT_TRUE(next_eqe(e));
    EXPECT_EQ(e.type, OHCA_EQE_CMD_DONE);
    EXPECT_EQ(e.param0, 77u);
    EXPECT_FALSE(next_eqe(e));
    const ohca_query_stats_out st = stats();
    EXPECT_EQ(st.eq0_events_held, 1u);
    EXPECT_EQ(st.eq0_events_merged, 2u);
    EXPECT_EQ(st.eq0_events_dropped, 0u);
}

TEST_F(EqTest, ConsumingKeepsLargeStreamsGoing) {
    bring_up(4, 2);
    for (int i = 0; i < 200; ++i) {
        ASSERT_EQ(cmd(OHCA_CMD_NOP).status, OHCA_STATUS_OK);
    }
    EXPECT_EQ(rd(OHCA_REG_DEV_STATUS), uint32_t{OHCA_DEV_STATUS_READY});
}

TEST_F(EqTest, LargestEqWrapsWith16BitDoorbell) {
    // 2^16 entries: the device keeps a wider index internally, the doorbell
    // carries its low 16 bits.
    bring_up(10, 16);
    for (uint32_t i = 0; i < 65536 + 10; ++i) {
        ohca_cmd c{};
        c.opcode = OHCA_CMD_NOP;
        post_raw(c);
        if ((i + 1) % 1024 == 0 || i == 65536 + 9) {
            ring_cmdq();
            drain();
            ohca_eqe e{};
            while (next_eqe(e)) {
            }
            eq_doorbell(false);
        }
    }
    EXPECT_EQ(rd(OHCA_REG_DEV_STATUS), uint32_t{OHCA_DEV_STATUS_READY});
    EXPECT_EQ(drv_.eq_ci, 65536u + 10);
}

TEST_F(EqTest, EqWriteFailureIsFatal) {
    bring_up();
    host_.remove_region(kEqBase);
    ohca_cmd c{};
    c.opcode = OHCA_CMD_NOP;
    post_raw(c);
    ring_cmdq();
    drain();
    EXPECT_EQ(rd(OHCA_REG_DEV_STATUS), uint32_t{OHCA_DEV_STATUS_FATAL});
    EXPECT_EQ(rd(OHCA_REG_FATAL_CODE), uint32_t{OHCA_FATAL_EQ_DMA});
}

TEST_F(EqTest, OwnerByteWrittenAfterBody) {
    bring_up();
    ohca_cmd c{};
    c.opcode = OHCA_CMD_NOP;
    post_raw(c);
    ring_cmdq();
    host_.write_log.clear();
    drain();
    // The last two writes are the EQE: bytes 2..15, then bytes 0..1.
    ASSERT_GE(host_.write_log.size(), 2u);
    const auto body = host_.write_log[host_.write_log.size() - 2];
    const auto head = host_.write_log.back();
    EXPECT_EQ(body.first, kEqBase + 2);
    EXPECT_EQ(body.second, 14u);
    EXPECT_EQ(head.first, kEqBase);
    EXPECT_EQ(head.second, 2u);
}

} // namespace
} // namespace ohca::test
