// SPDX-License-Identifier: GPL-2.0-or-later
// BAR0 register file: identity, access rules, ENABLE and its checks.
#include "engine_test.hpp"

#include <ostream>
#include <string>

namespace ohca::test {
namespace {

using RegsTest = EngineTest;

TEST_F(RegsTest, IdentityRegisters) {
    EXPECT_EQ(rd(OHCA_REG_MAGIC), OHCA_MAGIC);
    EXPECT_EQ(rd(OHCA_REG_ABI_VERSION), 0x00010005u);
    EXPECT_EQ(rd(OHCA_REG_FW_VERSION), uint32_t{OHCA_FW_VERSION(1, 0, 0)});
    EXPECT_EQ(rd(OHCA_REG_CAPS), uint32_t{OHCA_CAP_ROCE_V2 | OHCA_CAP_ETH | OHCA_CAP_RESET |
                                          OHCA_CAP_UD | OHCA_CAP_UC});
    EXPECT_EQ(rd(OHCA_REG_NUM_DB_PAGES), 256u);
    EXPECT_EQ(rd(OHCA_REG_NUM_MSIX), 8u);
    EXPECT_EQ(rd(OHCA_REG_MAX_CMDQ_LOG), 10u);
    EXPECT_EQ(rd(OHCA_REG_MAX_EQ_LOG), 16u);
    EXPECT_EQ(rd(OHCA_REG_ERR_COUNT), 0u);
}

TEST_F(RegsTest, PowerOnStatus) {
    EXPECT_EQ(rd(OHCA_REG_DEV_STATUS), uint32_t{OHCA_DEV_STATUS_RESET_DONE});
    EXPECT_EQ(rd(OHCA_REG_FATAL_CODE), uint32_t{OHCA_FATAL_NONE});
    EXPECT_EQ(rd(OHCA_REG_PORT_STATUS), uint32_t{OHCA_PORT_STATUS_LINK_UP});
    EXPECT_EQ(rd(OHCA_REG_CMDQ_CI), 0u);
    EXPECT_EQ(rd(OHCA_REG_ETH_IRQ_MASK), 0u);
}

TEST_F(RegsTest, BadWidthsAndOffsetsReadZeroAndCount) {
    EXPECT_EQ(ohca_engine_reg_read(e_, OHCA_REG_MAGIC, 1), 0u);
    EXPECT_EQ(ohca_engine_reg_read(e_, OHCA_REG_MAGIC, 2), 0u);
    EXPECT_EQ(ohca_engine_reg_read(e_, OHCA_REG_MAGIC, 8), 0u);
    EXPECT_EQ(ohca_engine_reg_read(e_, OHCA_REG_MAGIC + 1, 4), 0u);
    EXPECT_EQ(ohca_engine_reg_read(e_, 0x3ffc, 4), 0u); // unknown, in BAR
    EXPECT_EQ(ohca_engine_reg_read(e_, 0x4000, 4), 0u); // beyond BAR
    EXPECT_EQ(rd(OHCA_REG_ERR_COUNT), 6u);
}

TEST_F(RegsTest, WritesToReadOnlyAndUnknownAreIgnoredAndCounted) {
    wr(OHCA_REG_MAGIC, 0);
    wr(OHCA_REG_DEV_STATUS, 0);
    wr(OHCA_REG_CMDQ_CI, 5);
    wr(OHCA_REG_PORT_STATUS, 0);
    wr(0x200, 1);
    ohca_engine_reg_write(e_, OHCA_REG_CMDQ_LOG_SIZE, 3, 2); // bad width
    EXPECT_EQ(rd(OHCA_REG_MAGIC), OHCA_MAGIC);
    EXPECT_EQ(rd(OHCA_REG_CMDQ_CI), 0u);
    EXPECT_EQ(rd(OHCA_REG_CMDQ_LOG_SIZE), 0u);
    EXPECT_EQ(rd(OHCA_REG_ERR_COUNT), 6u);
}

TEST_F(RegsTest, WriteOnlyRegistersReadZeroWithoutError) {
    EXPECT_EQ(rd(OHCA_REG_DEV_CTRL), 0u);
    EXPECT_EQ(rd(OHCA_REG_CMDQ_PI), 0u);
    EXPECT_EQ(rd(OHCA_REG_EQ0_DB), 0u);
    EXPECT_EQ(rd(OHCA_REG_ETH_TX_PI), 0u);
    EXPECT_EQ(rd(OHCA_REG_ETH_RX_PI), 0u);
    EXPECT_EQ(rd(OHCA_REG_ERR_COUNT), 0u);
}

TEST_F(RegsTest, ConfigRegistersReadBack) {
    wr(OHCA_REG_CMDQ_BASE_LO, 0x12345640);
    wr(OHCA_REG_CMDQ_BASE_HI, 0x1);
    wr(OHCA_REG_CMDQ_LOG_SIZE, 5);
    wr(OHCA_REG_EQ0_BASE_LO, 0xabcdef0);
    wr(OHCA_REG_EQ0_BASE_HI, 0x2);
    wr(OHCA_REG_EQ0_LOG_SIZE, 7);
    EXPECT_EQ(rd(OHCA_REG_CMDQ_BASE_LO), 0x12345640u);
    EXPECT_EQ(rd(OHCA_REG_CMDQ_BASE_HI), 0x1u);
    EXPECT_EQ(rd(OHCA_REG_CMDQ_LOG_SIZE), 5u);
    EXPECT_EQ(rd(OHCA_REG_EQ0_BASE_LO), 0xabcdef0u);
    EXPECT_EQ(rd(OHCA_REG_EQ0_BASE_HI), 0x2u);
    EXPECT_EQ(rd(OHCA_REG_EQ0_LOG_SIZE), 7u);
}

TEST_F(RegsTest, EnableSetsReadyAndLocksConfig) {
    bring_up();
    EXPECT_EQ(rd(OHCA_REG_DEV_STATUS), uint32_t{OHCA_DEV_STATUS_READY});
    wr(OHCA_REG_CMDQ_BASE_LO, 0x80000);
    wr(OHCA_REG_EQ0_LOG_SIZE, 3);
    EXPECT_EQ(rd(OHCA_REG_CMDQ_BASE_LO), static_cast<uint32_t>(kCmdqBase));
    EXPECT_EQ(rd(OHCA_REG_EQ0_LOG_SIZE), 8u);
    EXPECT_EQ(rd(OHCA_REG_ERR_COUNT), 2u);
    // ENABLE again is a no-op.
    wr(OHCA_REG_DEV_CTRL, OHCA_DEV_CTRL_ENABLE);
    EXPECT_EQ(rd(OHCA_REG_DEV_STATUS), uint32_t{OHCA_DEV_STATUS_READY});
    EXPECT_EQ(cmd(OHCA_CMD_NOP).status, OHCA_STATUS_OK);
}

TEST_F(RegsTest, UnknownDevCtrlBitsRejected) {
    wr(OHCA_REG_DEV_CTRL, 0x4);
    EXPECT_EQ(rd(OHCA_REG_ERR_COUNT), 1u);
    EXPECT_EQ(rd(OHCA_REG_DEV_STATUS), uint32_t{OHCA_DEV_STATUS_RESET_DONE});
}

struct BadConfig {
    const char *name;
    uint64_t cmdq_base;
    uint32_t cmdq_log;
    uint64_t eq_base;
    uint32_t eq_log;
};

void PrintTo(const BadConfig &c, std::ostream *os) {
    *os << c.name;
}

class EnableBadConfigTest : public EngineTest, public ::testing::WithParamInterface<BadConfig> {};

TEST_P(EnableBadConfigTest, GoesFatalWithBadCmdqConfig) {
    const BadConfig c = GetParam();
    wr(OHCA_REG_EQ0_BASE_LO, static_cast<uint32_t>(c.eq_base));
    wr(OHCA_REG_EQ0_BASE_HI, static_cast<uint32_t>(c.eq_base >> 32));
    wr(OHCA_REG_EQ0_LOG_SIZE, c.eq_log);
    wr(OHCA_REG_CMDQ_BASE_LO, static_cast<uint32_t>(c.cmdq_base));
    wr(OHCA_REG_CMDQ_BASE_HI, static_cast<uint32_t>(c.cmdq_base >> 32));
    wr(OHCA_REG_CMDQ_LOG_SIZE, c.cmdq_log);
    wr(OHCA_REG_DEV_CTRL, OHCA_DEV_CTRL_ENABLE);
    EXPECT_EQ(rd(OHCA_REG_DEV_STATUS), uint32_t{OHCA_DEV_STATUS_FATAL});
    EXPECT_EQ(rd(OHCA_REG_FATAL_CODE), uint32_t{OHCA_FATAL_BAD_CMDQ_CONFIG});
    // Doorbells are refused while fatal; ENABLE does not leave it.
    wr(OHCA_REG_CMDQ_PI, 1);
    wr(OHCA_REG_DEV_CTRL, OHCA_DEV_CTRL_ENABLE);
    EXPECT_EQ(rd(OHCA_REG_DEV_STATUS), uint32_t{OHCA_DEV_STATUS_FATAL});
    // Reset does.
    wr(OHCA_REG_DEV_CTRL, OHCA_DEV_CTRL_RESET);
    EXPECT_EQ(rd(OHCA_REG_DEV_STATUS), uint32_t{OHCA_DEV_STATUS_RESET_DONE});
    EXPECT_EQ(rd(OHCA_REG_FATAL_CODE), uint32_t{OHCA_FATAL_NONE});
}

INSTANTIATE_TEST_SUITE_P(
    Configs, EnableBadConfigTest,
    ::testing::Values(BadConfig{"CmdqLogTooSmall", kCmdqBase, 0, kEqBase, 4},
                      BadConfig{"CmdqLogTooBig", kCmdqBase, 11, kEqBase, 4},
                      BadConfig{"CmdqMisaligned", kCmdqBase + 32, 4, kEqBase, 4},
                      BadConfig{"CmdqBaseZero", 0, 4, kEqBase, 4},
                      BadConfig{"EqLogTooSmall", kCmdqBase, 4, kEqBase, 1},
                      BadConfig{"EqLogTooBig", kCmdqBase, 4, kEqBase, 17},
                      BadConfig{"EqMisaligned", kCmdqBase, 4, kEqBase + 8, 4},
                      BadConfig{"EqNotConfigured", kCmdqBase, 4, 0, 4},
                      BadConfig{"AllOnes", kCmdqBase, 0xffffffff, kEqBase, 0xffffffff}),
    [](const ::testing::TestParamInfo<BadConfig> &info) { return std::string(info.param.name); });

TEST_F(RegsTest, BadCmdqConfigPostsDeviceFatalWhenEqIsGood) {
    wr(OHCA_REG_EQ0_BASE_LO, static_cast<uint32_t>(kEqBase));
    wr(OHCA_REG_EQ0_LOG_SIZE, 4);
    wr(OHCA_REG_CMDQ_LOG_SIZE, 20);
    drv_.eq_log = 4;
    wr(OHCA_REG_DEV_CTRL, OHCA_DEV_CTRL_ENABLE);
    ohca_eqe eqe{};
    ASSERT_TRUE(next_eqe(eqe));
    EXPECT_EQ(eqe.type, OHCA_EQE_DEVICE_FATAL);
    EXPECT_EQ(eqe.code, OHCA_FATAL_BAD_CMDQ_CONFIG);
}

TEST_F(RegsTest, CmdqRingUnreadableIsFatal) {
    bring_up();
    host_.remove_region(kCmdqBase);
    ohca_cmd c{};
    (void)c;
    ++drv_.cmd_pi;
    ring_cmdq();
    drain();
    EXPECT_EQ(rd(OHCA_REG_DEV_STATUS), uint32_t{OHCA_DEV_STATUS_FATAL});
    EXPECT_EQ(rd(OHCA_REG_FATAL_CODE), uint32_t{OHCA_FATAL_CMDQ_DMA});
    ohca_eqe eqe{};
    ASSERT_TRUE(next_eqe(eqe));
    EXPECT_EQ(eqe.type, OHCA_EQE_DEVICE_FATAL);
    EXPECT_EQ(eqe.code, OHCA_FATAL_CMDQ_DMA);
}

TEST_F(RegsTest, CmdqPiGarbageIgnored) {
    bring_up(4);
    wr(OHCA_REG_CMDQ_PI, 17);      // more than a ring ahead
    wr(OHCA_REG_CMDQ_PI, 0x10001); // bits above 15
    wr(OHCA_REG_CMDQ_PI, 0xffff);  // "behind" CI = far ahead
    EXPECT_EQ(rd(OHCA_REG_ERR_COUNT), 3u);
    drain();
    EXPECT_EQ(rd(OHCA_REG_CMDQ_CI), 0u);
    EXPECT_EQ(rd(OHCA_REG_DEV_STATUS), uint32_t{OHCA_DEV_STATUS_READY});
    // A full ring is fine.
    for (int i = 0; i < 16; ++i) {
        ohca_cmd c{};
        c.opcode = OHCA_CMD_NOP;
        post_raw(c);
    }
    ring_cmdq();
    drain();
    EXPECT_EQ(rd(OHCA_REG_CMDQ_CI), 16u);
    EXPECT_EQ(rd(OHCA_REG_ERR_COUNT), 3u);
}

TEST_F(RegsTest, CmdqDoorbellBeforeEnableRejected) {
    wr(OHCA_REG_CMDQ_PI, 1);
    EXPECT_EQ(rd(OHCA_REG_ERR_COUNT), 1u);
    EXPECT_EQ(host_.schedules, 0u);
}

TEST_F(RegsTest, DoorbellReturnsAtOnceWorkRunsInProcess) {
    bring_up();
    ohca_cmd c{};
    c.opcode = OHCA_CMD_NOP;
    post_raw(c);
    const unsigned int before = host_.schedules;
    ring_cmdq();
    EXPECT_EQ(host_.schedules, before + 1);
    EXPECT_EQ(rd(OHCA_REG_CMDQ_CI), 0u); // nothing ran on the doorbell
    ohca_engine_process(e_);
    EXPECT_EQ(rd(OHCA_REG_CMDQ_CI), 1u);
}

TEST_F(RegsTest, DoorbellPages) {
    bring_up();
    ohca_engine_db_write(e_, 0, 0, 1, 4);    // kernel page, but not a 64-bit store
    ohca_engine_db_write(e_, 5, 0, 1, 8);    // not allocated
    ohca_engine_db_write(e_, 256, 0, 1, 8);  // out of range
    ohca_engine_db_write(e_, 1, 4096, 1, 8); // offset out of range
    EXPECT_EQ(stats().db_errors, 4u);
    ohca_alloc_uar_out out{};
    ASSERT_EQ(cmd_out(OHCA_CMD_ALLOC_UAR, out).status, OHCA_STATUS_OK);
    // Owned now, but names no queue created on this page.
    ohca_engine_db_write(e_, out.uar_index, OHCA_DB_RQ, OHCA_DB_VALUE(2, 1), 8);
    EXPECT_EQ(stats().db_errors, 5u);
}

} // namespace
} // namespace ohca::test
