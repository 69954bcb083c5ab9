// SPDX-License-Identifier: GPL-2.0-or-later
// Reset (DEV_CTRL.RESET and the host's reset) and re-entrancy.
#include "engine_test.hpp"

namespace ohca::test {
namespace {

class ResetTest : public EngineTest {
  protected:
    // Puts state everywhere reset must clear.
    void dirty() {
        bring_up();
        ohca_alloc_uar_out u{};
        ASSERT_EQ(cmd_out(OHCA_CMD_ALLOC_UAR, u).status, OHCA_STATUS_OK);
        ohca_add_gid_in g{};
        g.gid[10] = g.gid[11] = 0xff;
        g.gid[15] = 1;
        g.port = 1;
        g.type = OHCA_GID_TYPE_ROCE_V2_IPV4;
        g.mac[5] = 1;
        g.vlan_id = 0xffff;
        ASSERT_EQ(cmd_in(OHCA_CMD_ADD_GID, g).status, OHCA_STATUS_OK);
        create_ring(OHCA_ETH_RING_TX, 4, kTxRing);
        create_ring(OHCA_ETH_RING_RX, 4, kRxRing);
        ohca_set_port_in sp{};
        sp.port = 1;
        sp.mask = OHCA_SET_PORT_MTU;
        sp.mtu = 4000;
        ASSERT_EQ(cmd_in(OHCA_CMD_SET_PORT, sp).status, OHCA_STATUS_OK);
        wr(OHCA_REG_MAGIC, 1); // an error to count
        wr(OHCA_REG_ETH_IRQ_MASK, 1);
    }

    void expect_power_on_state() {
        EXPECT_EQ(rd(OHCA_REG_DEV_STATUS), uint32_t{OHCA_DEV_STATUS_RESET_DONE});
        EXPECT_EQ(rd(OHCA_REG_FATAL_CODE), 0u);
        EXPECT_EQ(rd(OHCA_REG_ERR_COUNT), 0u);
        EXPECT_EQ(rd(OHCA_REG_CMDQ_BASE_LO), 0u);
        EXPECT_EQ(rd(OHCA_REG_CMDQ_BASE_HI), 0u);
        EXPECT_EQ(rd(OHCA_REG_CMDQ_LOG_SIZE), 0u);
        EXPECT_EQ(rd(OHCA_REG_CMDQ_CI), 0u);
        EXPECT_EQ(rd(OHCA_REG_EQ0_BASE_LO), 0u);
        EXPECT_EQ(rd(OHCA_REG_EQ0_BASE_HI), 0u);
        EXPECT_EQ(rd(OHCA_REG_EQ0_LOG_SIZE), 0u);
        EXPECT_EQ(rd(OHCA_REG_ETH_IRQ_MASK), 0u);
        // Bring it up again: every resource is gone.
        bring_up();
        ohca_alloc_uar_out u{};
        ASSERT_EQ(cmd_out(OHCA_CMD_ALLOC_UAR, u).status, OHCA_STATUS_OK);
        EXPECT_EQ(u.uar_index, 1u);
        ohca_del_gid_in dg{};
        dg.port = 1;
        EXPECT_EQ(cmd_in(OHCA_CMD_DEL_GID, dg).status, OHCA_STATUS_BAD_HANDLE);
        ohca_destroy_eth_ring_in d{};
        d.type = OHCA_ETH_RING_TX;
        EXPECT_EQ(cmd_in(OHCA_CMD_DESTROY_ETH_RING, d).status, OHCA_STATUS_BAD_STATE);
        d.type = OHCA_ETH_RING_RX;
        EXPECT_EQ(cmd_in(OHCA_CMD_DESTROY_ETH_RING, d).status, OHCA_STATUS_BAD_STATE);
        ohca_query_port_in q{};
        q.port = 1;
        ASSERT_EQ(cmd(OHCA_CMD_QUERY_PORT, &q, 8, 64, kOutBuf).status, OHCA_STATUS_OK);
        EXPECT_EQ(host_.get<ohca_query_port_out>(kOutBuf).mtu, 1500u);
        const auto s = stats();
        EXPECT_EQ(s.cmd_completed, 2u); // ALLOC_UAR and QUERY_PORT since reset
        EXPECT_EQ(s.reg_errors, 0u);
    }
};

TEST_F(ResetTest, DevCtrlResetReturnsToPowerOnState) {
    dirty();
    wr(OHCA_REG_DEV_CTRL, OHCA_DEV_CTRL_RESET);
    expect_power_on_state();
}

TEST_F(ResetTest, HostResetReturnsToPowerOnState) {
    dirty();
    ohca_engine_reset(e_);
    expect_power_on_state();
}

TEST_F(ResetTest, ResetLeavesFatal) {
    bring_up(4, 2);
    host_.remove_region(kEqBase); // EQ 0 not writable: fatal
    ohca_cmd c{};
    c.opcode = OHCA_CMD_NOP;
    post_raw(c);
    ring_cmdq();
    drain();
    ASSERT_EQ(rd(OHCA_REG_FATAL_CODE), uint32_t{OHCA_FATAL_EQ_DMA});
    host_.add_region(kEqBase, 16 * 65536);
    ohca_engine_reset(e_);
    expect_power_on_state();
}

TEST_F(ResetTest, ResetDropsQueuedWork) {
    bring_up();
    create_ring(OHCA_ETH_RING_TX, 4, kTxRing);
    post_tx(eth_frame(kMac, 0x0800, 64));
    ohca_cmd c{};
    c.opcode = OHCA_CMD_NOP;
    post_raw(c);
    ring_cmdq();
    wr(OHCA_REG_DEV_CTRL, OHCA_DEV_CTRL_RESET);
    drain();
    EXPECT_TRUE(host_.wire.empty());
    EXPECT_EQ(rd(OHCA_REG_CMDQ_CI), 0u);
}

TEST_F(ResetTest, ResetKeepsLinkAndIdentity) {
    bring_up();
    ohca_engine_set_link(e_, false);
    ohca_engine_reset(e_);
    EXPECT_EQ(rd(OHCA_REG_PORT_STATUS), 0u);
    bring_up();
    ohca_query_device_out d{};
    ASSERT_EQ(cmd_out(OHCA_CMD_QUERY_DEVICE, d).status, OHCA_STATUS_OK);
    EXPECT_EQ(d.node_guid, kNodeGuid);
}

TEST_F(ResetTest, ResetReleasesHeldFrames) {
    bring_up();
    // A full RoCE backlog holds the next frame in the host.
    const auto f = udp4_frame(kMac, 4791);
    ohca_engine_rx_result r = OHCA_ENGINE_RX_CONSUMED;
    for (int i = 0; i < 2000 && r == OHCA_ENGINE_RX_CONSUMED; ++i) {
        r = rx(f);
    }
    EXPECT_EQ(r, OHCA_ENGINE_RX_RETRY);
    const unsigned int before = host_.schedules;
    wr(OHCA_REG_DEV_CTRL, OHCA_DEV_CTRL_RESET);
    EXPECT_GT(host_.schedules, before);
    ohca_engine_process(e_);
    EXPECT_EQ(host_.rx_resumes, 1u);
    EXPECT_EQ(rx(eth_frame(kMac, 0x0800, 64)), OHCA_ENGINE_RX_CONSUMED);
}

// A DMA that loops back into the device (e.g. aimed at its own BAR) must
// not re-enter the engine.
TEST_F(ResetTest, ReentrantAccessFromDmaIsRejected) {
    bring_up();
    ohca_cmd c{};
    c.opcode = OHCA_CMD_NOP;
    post_raw(c);
    ring_cmdq();
    bool once = false;
    ohca_engine_rx_result rr = OHCA_ENGINE_RX_CONSUMED;
    host_.on_dma = [&] {
        if (once) {
            return;
        }
        once = true;
        ohca_engine_reg_write(e_, OHCA_REG_ETH_IRQ_MASK, 1, 4);
        ohca_engine_db_write(e_, 0, 0, 1, 4);
        const auto f = eth_frame(kMac, 0x0800, 64);
        rr = ohca_engine_receive_frame(e_, f.data(), f.size());
        ohca_engine_process(e_);
    };
    drain();
    host_.on_dma = nullptr;
    ohca_eqe eqe{};
    ASSERT_TRUE(next_eqe(eqe));
    eq_doorbell(true);
    EXPECT_EQ(rr, OHCA_ENGINE_RX_RETRY);
    EXPECT_EQ(rd(OHCA_REG_DEV_STATUS), uint32_t{OHCA_DEV_STATUS_READY});
    EXPECT_EQ(rd(OHCA_REG_CMDQ_CI), 1u);
    EXPECT_EQ(rd(OHCA_REG_ERR_COUNT), 1u);
    EXPECT_GE(host_.rx_resumes, 1u); // the held frame is offered again
    EXPECT_EQ(stats().db_errors, 1u);
}

// Old audit F4: a reset asked for from inside a host callback (a DMA that
// reaches the PCI configuration space and resets the function, say) is not
// lost: it takes effect once the engine is out of what it was doing.
class ReentrantResetTest : public ResetTest {
  protected:
    void reset_from_dma(const std::function<void()> &reset) {
        dirty();
        ohca_cmd c{};
        c.opcode = OHCA_CMD_NOP;
        post_raw(c);
        ring_cmdq();
        bool once = false;
        host_.on_dma = [&] {
            if (!once) {
                once = true;
                reset();
            }
        };
        drain();
        host_.on_dma = nullptr;
        ASSERT_TRUE(once);
        expect_power_on_state();
    }
};

TEST_F(ReentrantResetTest, HostResetFromADmaCallbackTakesEffect) {
    reset_from_dma([&] { ohca_engine_reset(e_); });
}

TEST_F(ReentrantResetTest, DevCtrlResetFromADmaCallbackTakesEffect) {
    reset_from_dma([&] { wr(OHCA_REG_DEV_CTRL, OHCA_DEV_CTRL_RESET); });
}

TEST(EngineCreate, RejectsMissingCallbacks) {
    ohca_engine_ops ops = FakeHost::ops();
    ohca_engine_config cfg{};
    ops.transmit = nullptr;
    EXPECT_EQ(ohca_engine_create(&ops, nullptr, &cfg), nullptr);
    EXPECT_EQ(ohca_engine_create(nullptr, nullptr, &cfg), nullptr);
    ops = FakeHost::ops();
    EXPECT_EQ(ohca_engine_create(&ops, nullptr, nullptr), nullptr);
}

} // namespace
} // namespace ohca::test
