// SPDX-License-Identifier: GPL-2.0-or-later
#include "engine_test.hpp"

#include "check.hpp"

#include <algorithm>

namespace ohca::test {

namespace {
// The shared test driver's failed checks are GoogleTest failures here, at
// the check's file and line.
void gtest_failure(const char *file, int line, const std::string &what) {
    ADD_FAILURE_AT(file, line) << what;
}
const bool kHandlerInstalled = (set_failure_handler(gtest_failure), true);
} // namespace

CheckedDriver::CheckedDriver(FakeHost &host)
    : Driver(host, Layout{kEqBase, kCmdqBase, kMailbox, kOutBuf}) {
    token = 0x100;
}

void CheckedDriver::drain_checked() {
    if (!drain(1000)) {
        ADD_FAILURE() << "engine keeps rescheduling";
    }
}

CmdOutcome CheckedDriver::execute(uint16_t opcode, const void *in, uint16_t in_len,
                                  uint16_t out_len, uint64_t out_addr) {
    const ohca_cmd c = make_cmd(opcode, in, in_len, out_len, out_addr);
    const uint32_t slot = post(c);
    ring_cmdq();
    drain_checked();
    EXPECT_EQ(rd(OHCA_REG_CMDQ_CI), cmd_pi & 0xffff);
    const ohca_cmd done = entry(slot);
    ohca_eqe eqe{};
    EXPECT_TRUE(next_eqe(eqe));
    EXPECT_EQ(eqe.type, OHCA_EQE_CMD_DONE);
    EXPECT_EQ(eqe.code, done.status);
    EXPECT_EQ(eqe.param0, c.token);
    EXPECT_EQ(eqe.param1, done.syndrome);
    EXPECT_EQ(eqe.param2, slot);
    eq_doorbell(true);
    return {done.status, done.syndrome};
}

void EngineTest::SetUp() {
    ASSERT_TRUE(kHandlerInstalled);
    host_.add_region(kEqBase, 16 * 65536); // EQ of the largest size
    host_.add_region(kCmdqBase, 64 * 1024);
    host_.add_region(kMailbox, 0x10000);
    host_.add_region(kTxRing, 0x10000);
    host_.add_region(kRxRing, 0x10000);
    host_.add_region(kBuffers, 0x100000);
    const ohca_engine_ops ops = FakeHost::ops();
    ohca_engine_config cfg{};
    std::copy(std::begin(kMac), std::end(kMac), cfg.mac);
    cfg.node_guid = kNodeGuid;
    cfg.sys_image_guid = kNodeGuid;
    cfg.link_up = true;
    cfg.speed_mbps = speed_mbps_;
    e_ = ohca_engine_create(&ops, &host_, &cfg);
    ASSERT_NE(e_, nullptr);
    drv_.attach(e_);
}

void EngineTest::TearDown() {
    ohca_engine_destroy(e_);
}

void EngineTest::bring_up(unsigned int cmdq_log, unsigned int eq_log) {
    wr(OHCA_REG_DEV_CTRL, OHCA_DEV_CTRL_RESET);
    ASSERT_EQ(rd(OHCA_REG_DEV_STATUS) & OHCA_DEV_STATUS_RESET_DONE, OHCA_DEV_STATUS_RESET_DONE);
    host_.fill(kEqBase, 0, 16u << eq_log);
    drv_.program(cmdq_log, eq_log, true);
    ASSERT_EQ(rd(OHCA_REG_DEV_STATUS), uint32_t{OHCA_DEV_STATUS_READY});
}

ohca_query_stats_out EngineTest::stats() {
    ohca_query_stats_out s{};
    EXPECT_EQ(cmd_out(OHCA_CMD_QUERY_STATS, s).status, OHCA_STATUS_OK);
    return s;
}

void EngineTest::create_ring(uint8_t type, uint8_t log_size, uint64_t base) {
    ASSERT_EQ(drv_.create_ring(type, log_size, base).status, OHCA_STATUS_OK);
}

void EngineTest::post_tx(const std::vector<uint8_t> &frame) {
    Driver::Ring &r = drv_.tx;
    const uint64_t buf = tx_buf(r.pi);
    if (!frame.empty()) {
        EXPECT_TRUE(host_.write(buf, frame.data(), frame.size()));
    }
    ohca_eth_desc d{};
    d.addr = buf;
    d.len = static_cast<uint16_t>(frame.size());
    host_.put(kTxRing + 16ull * (r.pi % r.size()), d);
    ++r.pi;
    drv_.ring_eth(OHCA_ETH_RING_TX);
}

void EngineTest::post_rx(uint16_t buf_len) {
    Driver::Ring &r = drv_.rx;
    ohca_eth_desc d{};
    d.addr = rx_buf(r.pi);
    d.len = buf_len;
    host_.put(kRxRing + 16ull * (r.pi % r.size()), d);
    ++r.pi;
    drv_.ring_eth(OHCA_ETH_RING_RX);
}

} // namespace ohca::test
