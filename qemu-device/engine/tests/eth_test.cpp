// SPDX-License-Identifier: GPL-2.0-or-later
// The Ethernet port: TX and RX rings, MAC filter, RoCE classification,
// interrupt masking and link changes.
#include "engine_test.hpp"

#include <algorithm>

namespace ohca::test {
namespace {

constexpr uint8_t kBroadcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
constexpr uint8_t kMulticast[6] = {0x01, 0x00, 0x5e, 0x00, 0x00, 0x01};
constexpr uint8_t kOther[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x42};

class EthTest : public EngineTest {
  protected:
    void SetUp() override {
        EngineTest::SetUp();
        bring_up();
        host_.irqs.clear();
    }
    size_t eth_irqs() const {
        return static_cast<size_t>(std::count(host_.irqs.begin(), host_.irqs.end(), OHCA_MSIX_ETH));
    }
    std::vector<uint8_t> rx_data(uint32_t i, size_t len) {
        std::vector<uint8_t> v(len);
        EXPECT_TRUE(host_.read(rx_buf(i), v.data(), len));
        return v;
    }
};

// ---- TX -------------------------------------------------------------------

TEST_F(EthTest, TxFrameGoesOnTheWire) {
    create_ring(OHCA_ETH_RING_TX, 4, kTxRing);
    const auto f = eth_frame(kOther, 0x0800, 100);
    post_tx(f);
    EXPECT_TRUE(host_.wire.empty()); // the doorbell only schedules
    drain();
    ASSERT_EQ(host_.wire.size(), 1u);
    EXPECT_EQ(host_.wire[0], f);
    EXPECT_EQ(tx_desc(0).flags, OHCA_ETH_DESC_DONE);
    EXPECT_EQ(tx_desc(0).len, 100);
    EXPECT_EQ(eth_irqs(), 1u);
    const auto s = stats();
    EXPECT_EQ(s.eth_tx_frames, 1u);
    EXPECT_EQ(s.eth_tx_bytes, 100u);
}

TEST_F(EthTest, ShortTxFramesArePaddedTo60) {
    create_ring(OHCA_ETH_RING_TX, 4, kTxRing);
    auto f = eth_frame(kOther, 0x0806, 42);
    host_.fill(tx_buf(0), 0xcc, 128); // garbage after the frame
    post_tx(f);
    drain();
    ASSERT_EQ(host_.wire.size(), 1u);
    ASSERT_EQ(host_.wire[0].size(), 60u);
    EXPECT_TRUE(std::equal(f.begin(), f.end(), host_.wire[0].begin()));
    EXPECT_TRUE(std::all_of(host_.wire[0].begin() + 42, host_.wire[0].end(),
                            [](uint8_t b) { return b == 0; }));
}

TEST_F(EthTest, BadTxDescriptorsCompleteWithError) {
    create_ring(OHCA_ETH_RING_TX, 4, kTxRing);
    post_tx({}); // len 0
    ohca_eth_desc d{};
    d.addr = tx_buf(1);
    d.len = OHCA_ETH_MAX_FRAME + 1;
    host_.put(kTxRing + 16, d);
    d.addr = kUnmapped;
    d.len = 64;
    host_.put(kTxRing + 32, d);
    drv_.tx.pi = 3;
    wr(OHCA_REG_ETH_TX_PI, 3);
    post_tx(eth_frame(kOther, 0x0800, 64)); // a good one after them
    drain();
    for (uint32_t i = 0; i < 3; ++i) {
        EXPECT_EQ(tx_desc(i).flags, OHCA_ETH_DESC_DONE | OHCA_ETH_DESC_ERROR) << i;
    }
    EXPECT_EQ(tx_desc(3).flags, OHCA_ETH_DESC_DONE);
    EXPECT_EQ(host_.wire.size(), 1u);
    EXPECT_EQ(stats().eth_tx_errors, 3u);
}

TEST_F(EthTest, MaxSizeTxFrame) {
    create_ring(OHCA_ETH_RING_TX, 4, kTxRing);
    post_tx(eth_frame(kOther, 0x0800, OHCA_ETH_MAX_FRAME));
    drain();
    ASSERT_EQ(host_.wire.size(), 1u);
    EXPECT_EQ(host_.wire[0].size(), size_t{OHCA_ETH_MAX_FRAME});
}

TEST_F(EthTest, TxRingWrapsAndBatches) {
    create_ring(OHCA_ETH_RING_TX, 2, kTxRing); // 4 descriptors
    for (int round = 0; round < 10; ++round) {
        for (int i = 0; i < 4; ++i) {
            auto f = eth_frame(kOther, 0x0800, 60 + static_cast<size_t>(round));
            f[20] = static_cast<uint8_t>(i);
            post_tx(f);
        }
        drain();
    }
    ASSERT_EQ(host_.wire.size(), 40u);
    EXPECT_EQ(host_.wire[39][20], 3);
    EXPECT_EQ(host_.wire[39].size(), 69u);
}

TEST_F(EthTest, TxDoorbellGarbage) {
    create_ring(OHCA_ETH_RING_TX, 2, kTxRing);
    const uint32_t errs = rd(OHCA_REG_ERR_COUNT);
    wr(OHCA_REG_ETH_TX_PI, 5);       // more than 4 ahead
    wr(OHCA_REG_ETH_TX_PI, 0x10001); // high bits
    wr(OHCA_REG_ETH_RX_PI, 1);       // no RX ring
    EXPECT_EQ(rd(OHCA_REG_ERR_COUNT), errs + 3);
    drain();
    EXPECT_TRUE(host_.wire.empty());
}

TEST_F(EthTest, TxRingThatVanishesStops) {
    create_ring(OHCA_ETH_RING_TX, 4, kTxRing);
    host_.remove_region(kTxRing);
    wr(OHCA_REG_ETH_TX_PI, 2);
    drain();
    EXPECT_TRUE(host_.wire.empty());
    host_.add_region(kTxRing, 0x10000);
    EXPECT_EQ(stats().eth_tx_errors, 1u);
    // Destroy and recreate brings it back.
    ohca_destroy_eth_ring_in d{};
    d.type = OHCA_ETH_RING_TX;
    ASSERT_EQ(cmd_in(OHCA_CMD_DESTROY_ETH_RING, d).status, OHCA_STATUS_OK);
    create_ring(OHCA_ETH_RING_TX, 4, kTxRing);
    post_tx(eth_frame(kOther, 0x0800, 64));
    drain();
    EXPECT_EQ(host_.wire.size(), 1u);
}

// ---- RX -------------------------------------------------------------------

TEST_F(EthTest, RxToOwnMacBroadcastAndMulticast) {
    create_ring(OHCA_ETH_RING_RX, 4, kRxRing);
    for (int i = 0; i < 4; ++i) {
        post_rx(2048);
    }
    const auto a = eth_frame(kMac, 0x0800, 64);
    const auto b = eth_frame(kBroadcast, 0x0806, 60);
    const auto c = eth_frame(kMulticast, 0x0800, 90);
    EXPECT_EQ(rx(a), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(rx(b), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(rx(c), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(rx_desc(0).flags, OHCA_ETH_DESC_DONE);
    EXPECT_EQ(rx_desc(0).len, 64);
    EXPECT_EQ(rx_data(0, 64), a);
    EXPECT_EQ(rx_desc(1).len, 60);
    EXPECT_EQ(rx_data(1, 60), b);
    EXPECT_EQ(rx_desc(2).len, 90);
    EXPECT_EQ(rx_data(2, 90), c);
    EXPECT_EQ(rx_desc(3).flags, 0);
    const auto s = stats();
    EXPECT_EQ(s.eth_rx_frames, 3u);
    EXPECT_EQ(s.eth_rx_bytes, 64u + 60 + 90);
}

TEST_F(EthTest, RxMacFilterAndPromisc) {
    create_ring(OHCA_ETH_RING_RX, 4, kRxRing);
    post_rx(2048);
    EXPECT_EQ(rx(eth_frame(kOther, 0x0800, 64)), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(rx_desc(0).flags, 0);
    EXPECT_EQ(rx(std::vector<uint8_t>(10, 0xff)), OHCA_ENGINE_RX_CONSUMED); // runt
    EXPECT_EQ(stats().eth_rx_dropped_filter, 2u);
    ohca_set_port_in sp{};
    sp.port = 1;
    sp.mask = OHCA_SET_PORT_RX_MODE;
    sp.rx_mode = OHCA_RX_MODE_PROMISC;
    ASSERT_EQ(cmd_in(OHCA_CMD_SET_PORT, sp).status, OHCA_STATUS_OK);
    EXPECT_EQ(rx(eth_frame(kOther, 0x0800, 64)), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(rx_desc(0).flags, OHCA_ETH_DESC_DONE);
}

TEST_F(EthTest, RxWithoutRingDropsAndCounts) {
    EXPECT_EQ(rx(eth_frame(kMac, 0x0800, 64)), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(stats().eth_rx_dropped_no_desc, 1u);
}

// A NIC with no free descriptor drops the frame: nothing is held in the
// host, so RoCE frames behind it are never stopped by the Ethernet ring.
TEST_F(EthTest, RxRingEmptyDropsAndCounts) {
    create_ring(OHCA_ETH_RING_RX, 4, kRxRing);
    for (int i = 0; i < 1000; ++i) {
        EXPECT_EQ(rx(eth_frame(kMac, 0x0800, 64)), OHCA_ENGINE_RX_CONSUMED);
    }
    EXPECT_EQ(stats().eth_rx_dropped_no_desc, 1000u);
    EXPECT_EQ(rx(udp4_frame(kMac, 4791)), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(stats().roce_rx_frames, 1u);
    EXPECT_EQ(host_.rx_resumes, 0u);
    // Once the driver posts a descriptor the next frame lands in it.
    post_rx(2048);
    const auto f = eth_frame(kMac, 0x0800, 64);
    EXPECT_EQ(rx(f), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(rx_desc(0).flags, OHCA_ETH_DESC_DONE);
    EXPECT_EQ(rx_data(0, 64), f);
    EXPECT_EQ(stats().eth_rx_frames, 1u);
    EXPECT_EQ(stats().eth_rx_dropped_no_desc, 1000u);
}

TEST_F(EthTest, RxTooLongForBufferDropsAndKeepsDescriptor) {
    create_ring(OHCA_ETH_RING_RX, 4, kRxRing);
    post_rx(100);
    EXPECT_EQ(rx(eth_frame(kMac, 0x0800, 101)), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(rx_desc(0).flags, 0);
    EXPECT_EQ(rx(eth_frame(kMac, 0x0800, 100)), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(rx_desc(0).flags, OHCA_ETH_DESC_DONE);
    EXPECT_EQ(rx(eth_frame(kMac, 0x0800, OHCA_ETH_MAX_FRAME + 1)), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(stats().eth_rx_dropped_too_long, 2u);
}

TEST_F(EthTest, RxBufferOutsideMemoryCompletesWithError) {
    create_ring(OHCA_ETH_RING_RX, 4, kRxRing);
    ohca_eth_desc d{};
    d.addr = kUnmapped;
    d.len = 2048;
    host_.put(kRxRing, d);
    wr(OHCA_REG_ETH_RX_PI, 1);
    EXPECT_EQ(rx(eth_frame(kMac, 0x0800, 64)), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(rx_desc(0).flags, OHCA_ETH_DESC_DONE | OHCA_ETH_DESC_ERROR);
    EXPECT_EQ(rx_desc(0).len, 0);
    EXPECT_EQ(stats().eth_rx_errors, 1u);
}

TEST_F(EthTest, RoceFramesGoToTheRdmaEngine) {
    create_ring(OHCA_ETH_RING_RX, 4, kRxRing);
    post_rx(2048);
    EXPECT_EQ(rx(udp4_frame(kMac, 4791)), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(rx(udp6_frame(kMac, 4791)), OHCA_ENGINE_RX_CONSUMED);
    // Behind a VLAN tag too.
    auto v = udp4_frame(kMac, 4791);
    const uint8_t tag[4] = {0x81, 0x00, 0x00, 0x05};
    v.insert(v.begin() + 12, tag, tag + 4);
    EXPECT_EQ(rx(v), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(rx_desc(0).flags, 0); // the Ethernet ring saw none of them
    // Other UDP ports, fragments and truncated headers are ordinary frames.
    EXPECT_EQ(rx(udp4_frame(kMac, 4792)), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(rx_desc(0).flags, OHCA_ETH_DESC_DONE);
    post_rx(2048);
    auto frag = udp4_frame(kMac, 4791);
    frag[14 + 6] = 0x20; // MF
    EXPECT_EQ(rx(frag), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(rx_desc(1).flags, OHCA_ETH_DESC_DONE);
    post_rx(2048);
    auto cut = udp4_frame(kMac, 4791, 0);
    cut.resize(14 + 20 + 3);
    EXPECT_EQ(rx(cut), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(rx_desc(2).flags, OHCA_ETH_DESC_DONE);
    const auto s = stats();
    EXPECT_EQ(s.roce_rx_frames, 3u);
    EXPECT_EQ(s.eth_rx_frames, 3u);
}

TEST_F(EthTest, RoceForOtherMacIsFiltered) {
    EXPECT_EQ(rx(udp4_frame(kOther, 4791)), OHCA_ENGINE_RX_CONSUMED);
    const auto s = stats();
    EXPECT_EQ(s.roce_rx_frames, 0u);
    EXPECT_EQ(s.eth_rx_dropped_filter, 1u);
}

// No RoCE packet is longer than a 4096-byte MTU's: longer ones are dropped
// before they take backlog memory.
TEST_F(EthTest, OversizedRoceFramesAreDropped) {
    const size_t before = stats().roce_rx_dropped;
    auto big = udp4_frame(kMac, 4791, 9000);
    EXPECT_EQ(rx(big), OHCA_ENGINE_RX_CONSUMED);
    std::vector<uint8_t> huge(65536, 0);
    std::copy(big.begin(), big.begin() + 14 + 20 + 8, huge.begin());
    EXPECT_EQ(rx(huge), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(stats().roce_rx_dropped, before + 2);
    EXPECT_EQ(stats().roce_rx_frames, 0u);
}

TEST_F(EthTest, RoceNeverWaitsForTheEthernetRing) {
    create_ring(OHCA_ETH_RING_RX, 4, kRxRing); // empty
    EXPECT_EQ(rx(udp4_frame(kMac, 4791)), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(stats().roce_rx_frames, 1u);
}

// ---- interrupts -------------------------------------------------------------

TEST_F(EthTest, IrqMaskedAfterRaiseAndReRaisedOnUnmask) {
    create_ring(OHCA_ETH_RING_RX, 4, kRxRing);
    for (int i = 0; i < 4; ++i) {
        post_rx(2048);
    }
    EXPECT_EQ(rx(eth_frame(kMac, 0x0800, 64)), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(eth_irqs(), 1u);
    EXPECT_EQ(rd(OHCA_REG_ETH_IRQ_MASK), 1u); // the device masked it
    EXPECT_EQ(rx(eth_frame(kMac, 0x0800, 64)), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(eth_irqs(), 1u);
    wr(OHCA_REG_ETH_IRQ_MASK, 0); // NAPI done: pending work raises again
    EXPECT_EQ(eth_irqs(), 2u);
    EXPECT_EQ(rd(OHCA_REG_ETH_IRQ_MASK), 1u);
    wr(OHCA_REG_ETH_IRQ_MASK, 0); // nothing pending
    EXPECT_EQ(eth_irqs(), 2u);
    EXPECT_EQ(rd(OHCA_REG_ETH_IRQ_MASK), 0u);
    const uint32_t errs = rd(OHCA_REG_ERR_COUNT);
    wr(OHCA_REG_ETH_IRQ_MASK, 2);
    EXPECT_EQ(rd(OHCA_REG_ERR_COUNT), errs + 1);
}

// ---- link -------------------------------------------------------------------

TEST_F(EthTest, LinkChangePostsPortChange) {
    ohca_engine_set_link(e_, false);
    EXPECT_EQ(rd(OHCA_REG_PORT_STATUS), 0u);
    ohca_eqe e{};
    ASSERT_TRUE(next_eqe(e));
    EXPECT_EQ(e.type, OHCA_EQE_PORT_CHANGE);
    EXPECT_EQ(e.code, OHCA_PORT_DOWN);
    EXPECT_EQ(e.param0, 1u);
    ohca_engine_set_link(e_, false); // no change, no event
    EXPECT_FALSE(next_eqe(e));
    ohca_engine_set_link(e_, true);
    EXPECT_EQ(rd(OHCA_REG_PORT_STATUS), uint32_t{OHCA_PORT_STATUS_LINK_UP});
    ASSERT_TRUE(next_eqe(e));
    EXPECT_EQ(e.type, OHCA_EQE_PORT_CHANGE);
    EXPECT_EQ(e.code, OHCA_PORT_ACTIVE);
}

TEST_F(EthTest, LinkDownDropsReceivedFrames) {
    create_ring(OHCA_ETH_RING_RX, 4, kRxRing);
    post_rx(2048);
    ohca_engine_set_link(e_, false);
    EXPECT_EQ(rx(eth_frame(kMac, 0x0800, 64)), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(rx(udp4_frame(kMac, 4791)), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(rx_desc(0).flags, 0);
    ohca_eqe e{};
    ASSERT_TRUE(next_eqe(e));
    eq_doorbell(true);
    const auto s = stats();
    EXPECT_EQ(s.eth_rx_dropped_no_desc, 1u);
    EXPECT_EQ(s.roce_rx_dropped, 1u);
}

TEST_F(EthTest, PortCountersInQueryPort) {
    create_ring(OHCA_ETH_RING_TX, 4, kTxRing);
    create_ring(OHCA_ETH_RING_RX, 4, kRxRing);
    post_rx(2048);
    post_tx(eth_frame(kOther, 0x0800, 64));
    drain();
    EXPECT_EQ(rx(eth_frame(kMac, 0x0800, 64)), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(rx(udp4_frame(kMac, 4791)), OHCA_ENGINE_RX_CONSUMED);
    ohca_query_port_in q{};
    q.port = 1;
    ASSERT_EQ(cmd(OHCA_CMD_QUERY_PORT, &q, 8, 64, kOutBuf).status, OHCA_STATUS_OK);
    const auto p = host_.get<ohca_query_port_out>(kOutBuf);
    EXPECT_EQ(p.rx_frames, 2u);
    EXPECT_EQ(p.tx_frames, 1u);
}

} // namespace
} // namespace ohca::test
