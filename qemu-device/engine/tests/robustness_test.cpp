// SPDX-License-Identifier: GPL-2.0-or-later
// Hostile-driver tests: random command entries, register and doorbell
// writes, descriptors and frames. The engine must stay inside guest memory
// (the fake host fails anything else), keep answering, and recover by reset.
#include "engine_test.hpp"

#include <random>

namespace ohca::test {
namespace {

class RobustnessTest : public EngineTest {
  protected:
    std::mt19937_64 rng{0x0CA0CA};
};

TEST_F(RobustnessTest, RandomCommandEntries) {
    bring_up(6, 12);
    const uint16_t opcodes[] = {OHCA_CMD_NOP,
                                OHCA_CMD_QUERY_DEVICE,
                                OHCA_CMD_QUERY_PORT,
                                OHCA_CMD_SET_PORT,
                                OHCA_CMD_CREATE_ETH_RING,
                                OHCA_CMD_DESTROY_ETH_RING,
                                OHCA_CMD_ALLOC_UAR,
                                OHCA_CMD_DEALLOC_UAR,
                                OHCA_CMD_ADD_GID,
                                OHCA_CMD_DEL_GID,
                                OHCA_CMD_QUERY_STATS,
                                0x0b,
                                0xffff};
    const uint64_t addrs[] = {0, kMailbox, kOutBuf, kUnmapped, ~uint64_t{0} - 3, kTxRing};
    for (int i = 0; i < 3000; ++i) {
        ohca_cmd c{};
        auto *raw = reinterpret_cast<uint8_t *>(&c);
        for (size_t b = 0; b < sizeof(c); ++b) {
            raw[b] = static_cast<uint8_t>(rng());
        }
        // Mostly plausible entries, so validation reaches the fields.
        if (rng() % 4 != 0) {
            c.opcode = opcodes[rng() % std::size(opcodes)];
            c.rsvd0 = 0;
            c.rsvd1 = 0;
            c.in_len = static_cast<uint16_t>(rng() % 40);
            c.out_len = static_cast<uint16_t>(rng() % 200);
            c.out_addr = c.out_len != 0 ? addrs[rng() % std::size(addrs)] : 0;
            c.in_addr = addrs[rng() % std::size(addrs)];
            if (rng() % 2 == 0) {
                c.inline_in[0] = 1; // port 1 / TX ring / ...
            }
        }
        post_raw(c);
        ring_cmdq();
        drain();
        ohca_eqe e{};
        while (next_eqe(e)) {
        }
        eq_doorbell(true);
        ASSERT_EQ(rd(OHCA_REG_DEV_STATUS), uint32_t{OHCA_DEV_STATUS_READY}) << "entry " << i;
        ASSERT_EQ(rd(OHCA_REG_CMDQ_CI), drv_.cmd_pi & 0xffff);
    }
    const auto s = stats();
    EXPECT_EQ(s.cmd_completed + s.cmd_failed, 3000u);
    EXPECT_GT(s.cmd_completed, 0u);
    EXPECT_GT(s.cmd_failed, 0u);
}

TEST_F(RobustnessTest, RandomRegisterAndDoorbellWrites) {
    for (int round = 0; round < 20; ++round) {
        bring_up();
        create_ring(OHCA_ETH_RING_TX, 4, kTxRing);
        create_ring(OHCA_ETH_RING_RX, 4, kRxRing);
        // Random descriptors in both rings.
        for (uint32_t d = 0; d < 16; ++d) {
            ohca_eth_desc desc{};
            desc.addr = (rng() % 2 == 0) ? kBuffers + (rng() % 0x100000) : rng();
            desc.len = static_cast<uint16_t>(rng());
            desc.flags = static_cast<uint16_t>(rng());
            host_.put(kTxRing + 16 * d, desc);
            desc.addr = (rng() % 2 == 0) ? kBuffers + (rng() % 0x100000) : rng();
            host_.put(kRxRing + 16 * d, desc);
        }
        for (int i = 0; i < 300; ++i) {
            const uint32_t off = static_cast<uint32_t>(rng() % 0xc0) & ~3u;
            const unsigned int sizes[] = {1, 2, 4, 8};
            const unsigned int size = sizes[rng() % 4];
            // Leave DEV_CTRL mostly alone so the device stays up.
            if (off == OHCA_REG_DEV_CTRL && rng() % 8 != 0) {
                continue;
            }
            ohca_engine_reg_write(e_, off + (rng() % 8 == 0 ? 1 : 0),
                                  rng() % 3 == 0 ? rng() % 32 : rng(), rng() % 4 == 0 ? size : 4);
            ohca_engine_db_write(e_, static_cast<uint32_t>(rng() % 300),
                                 static_cast<uint32_t>(rng() % 5000), rng(), size);
            if (rng() % 4 == 0) {
                std::vector<uint8_t> f(rng() % 10000);
                for (auto &b : f) {
                    b = static_cast<uint8_t>(rng());
                }
                if (f.size() >= 6 && rng() % 2 == 0) {
                    std::copy(std::begin(kMac), std::end(kMac), f.begin());
                }
                (void)rx(f);
            }
            ohca_engine_process(e_);
        }
        // Whatever happened, a reset brings back a working device.
        bring_up();
        ASSERT_EQ(cmd(OHCA_CMD_NOP).status, OHCA_STATUS_OK);
    }
}

TEST_F(RobustnessTest, RxRingThatVanishesStops) {
    bring_up();
    create_ring(OHCA_ETH_RING_RX, 4, kRxRing);
    post_rx(2048);
    host_.remove_region(kRxRing);
    EXPECT_EQ(rx(eth_frame(kMac, 0x0800, 64)), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(rx(eth_frame(kMac, 0x0800, 64)), OHCA_ENGINE_RX_CONSUMED);
    host_.add_region(kRxRing, 0x10000);
    const auto s = stats();
    EXPECT_EQ(s.eth_rx_errors, 1u);
    EXPECT_EQ(s.eth_rx_dropped_no_desc, 1u);
}

} // namespace
} // namespace ohca::test
