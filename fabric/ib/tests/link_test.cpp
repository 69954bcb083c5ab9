// SPDX-License-Identifier: GPL-2.0-or-later
// Flow control packets (IBTA Vol 1 §7.9.4) and credit accounting (§7.9).
#include "ib/link.hpp"

#include <gtest/gtest.h>

#include <array>
#include <random>

using namespace ohca::ib;

TEST(IbLinkPacket, Vector) {
    // Op 0, FCTBS 0x123, VL 2, FCCL 0xABC; LPCRC from an independent CRC-16.
    FlowControlPacket f{FcOp::Normal, 0x123, 2, 0xABC};
    std::array<uint8_t, 6> out{};
    f.write(out);
    EXPECT_EQ(out, (std::array<uint8_t, 6>{0x01, 0x23, 0x2a, 0xbc, 0x68, 0xde}));
    FlowControlPacket g;
    ASSERT_TRUE(FlowControlPacket::read(out, g));
    EXPECT_EQ(g.op, FcOp::Normal);
    EXPECT_EQ(g.fctbs, 0x123);
    EXPECT_EQ(g.vl, 2);
    EXPECT_EQ(g.fccl, 0xABC);

    FlowControlPacket init{FcOp::Init, 0xFFF, 14, 0xFFF};
    init.write(out);
    EXPECT_EQ(out, (std::array<uint8_t, 6>{0x1f, 0xff, 0xef, 0xff, 0x3a, 0x3e}));
}

TEST(IbLinkPacket, RefusesBadOnes) {
    std::array<uint8_t, 6> out{};
    FlowControlPacket{FcOp::Normal, 1, 0, 2}.write(out);
    FlowControlPacket g;
    auto flipped = out;
    flipped[3] ^= 0x10;
    EXPECT_FALSE(FlowControlPacket::read(flipped, g)); // LPCRC
    EXPECT_FALSE(FlowControlPacket::read(std::span(out).first(5), g));
    FlowControlPacket{FcOp::Normal, 1, 15, 2}.write(out); // VL15 has no credits
    EXPECT_FALSE(FlowControlPacket::read(out, g));
    FlowControlPacket{static_cast<FcOp>(2), 1, 0, 2}.write(out); // unknown Op
    EXPECT_FALSE(FlowControlPacket::read(out, g));
    EXPECT_TRUE(is_link_packet(6));
    EXPECT_FALSE(is_link_packet(22));
}

TEST(IbCredits, BlocksFor) {
    EXPECT_EQ(blocks_for(22), 1);
    EXPECT_EQ(blocks_for(64), 1);
    EXPECT_EQ(blocks_for(65), 2);
    EXPECT_EQ(blocks_for(4222), 66);
}

// Two ends of one link: what A advertises is what B may send.
TEST(IbCredits, SenderWaitsForCredit) {
    LinkCredits a(100, 2), b(100, 2);
    EXPECT_FALSE(b.may_send(0, 1));  // nothing heard yet
    EXPECT_TRUE(b.may_send(15, 66)); // VL15 exempt
    ASSERT_TRUE(a.fcp_pending(0));
    ASSERT_TRUE(b.on_fcp(a.take_fcp(0)));
    EXPECT_FALSE(a.fcp_pending(0));
    EXPECT_EQ(b.credit(0), 100);
    EXPECT_TRUE(b.may_send(0, 66));
    EXPECT_FALSE(b.may_send(0, 101));
    EXPECT_FALSE(b.may_send(1, 1)); // VL1 has its own credit

    int sent = 0;
    while (b.may_send(0, 3)) {
        b.on_sent(0, 3);
        ASSERT_TRUE(a.on_received(0, 3));
        ++sent;
    }
    EXPECT_EQ(sent, 33);
    EXPECT_EQ(a.occupied(0), 99);
    // Draining returns the credit.
    a.on_released(0, 30);
    EXPECT_TRUE(a.fcp_pending(0));
    ASSERT_TRUE(b.on_fcp(a.take_fcp(0)));
    EXPECT_EQ(b.credit(0), 31);
}

TEST(IbCredits, OverrunIsRefused) {
    LinkCredits a(10, 1);
    EXPECT_TRUE(a.on_received(0, 10));
    EXPECT_FALSE(a.on_received(0, 1)); // beyond the buffer: the peer lied
    EXPECT_EQ(a.occupied(0), 10);
    EXPECT_FALSE(a.on_received(3, 1)); // VL not operational
    EXPECT_FALSE(a.on_received(15, 1));
}

// One pool shared by the VLs in operation: each VL's buffer is set apart
// (set_buffer), what it advertises follows, a reset keeps it, and a VL
// given no buffer takes nothing.
TEST(IbCredits, BufferPerVl) {
    LinkCredits a(0, 3), b(0, 3);
    a.set_buffer(0, 2048);
    a.set_buffer(1, 100);
    EXPECT_EQ(a.buffer(0), 2048);
    EXPECT_EQ(a.buffer(2), 0);
    EXPECT_EQ(a.buffer(3), 0); // not operational
    for (uint8_t vl = 0; vl < 3; ++vl) {
        ASSERT_TRUE(b.on_fcp(a.take_fcp(vl)));
    }
    EXPECT_EQ(b.credit(0), 2048);
    EXPECT_EQ(b.credit(1), 100);
    EXPECT_EQ(b.credit(2), 0);
    EXPECT_FALSE(a.on_received(2, 1));
    ASSERT_TRUE(a.on_received(1, 60));
    b.on_sent(1, 60);
    // A smaller buffer than what it holds advertises nothing more, and
    // takes nothing more, until it drains.
    a.set_buffer(1, 50);
    EXPECT_TRUE(a.fcp_pending(1));
    ASSERT_TRUE(b.on_fcp(a.take_fcp(1)));
    EXPECT_EQ(b.credit(1), 0);
    EXPECT_FALSE(a.on_received(1, 1)); // (a peer that sent without credit)
    b.on_sent(1, 1);
    a.on_released(1, 60);
    ASSERT_TRUE(b.on_fcp(a.take_fcp(1)));
    EXPECT_EQ(b.credit(1), 50);
    a.reset();
    EXPECT_EQ(a.buffer(0), 2048);
    EXPECT_EQ(a.fccl(0), 2048);
}

TEST(IbCredits, CountersWrap) {
    LinkCredits a(64, 1), b(64, 1);
    b.on_fcp(a.take_fcp(0));
    // Move 10000 blocks through: FCTBS and ABR wrap at 4096 several times.
    uint32_t moved = 0;
    while (moved < 10000) {
        ASSERT_TRUE(b.may_send(0, 7)) << moved;
        b.on_sent(0, 7);
        ASSERT_TRUE(a.on_received(0, 7));
        a.on_released(0, 7);
        moved += 7;
        if (a.fcp_pending(0)) {
            b.on_fcp(a.take_fcp(0));
        }
    }
    const FlowControlPacket f = b.take_fcp(0);
    EXPECT_EQ(f.fctbs, moved % 4096);
    EXPECT_EQ(a.fccl(0), (moved + 64) % 4096);
}

TEST(IbCredits, HostileFccl) {
    // Whatever a peer claims, a sender never has more than 2048 blocks
    // outstanding against one FCP, and a limit "behind" FCTBS means none.
    std::mt19937 rng(7);
    for (int i = 0; i < 20000; ++i) {
        LinkCredits b(64, 1);
        const auto fctbs = static_cast<uint16_t>(rng() & 0xFFF);
        // Bring FCTBS to a random value through on_sent.
        b.on_fcp({FcOp::Normal, 0, 0, static_cast<uint16_t>(fctbs)});
        uint16_t left = fctbs;
        while (left > 0) {
            const uint16_t n = left > 2048 ? 2048 : left;
            b.on_sent(0, n);
            left = static_cast<uint16_t>(left - n);
        }
        const auto lie = static_cast<uint16_t>(rng() & 0xFFF);
        b.on_fcp({FcOp::Normal, 0, 0, lie});
        uint32_t outstanding = 0;
        while (b.may_send(0, 1) && outstanding <= 4096) {
            b.on_sent(0, 1);
            ++outstanding;
        }
        EXPECT_LE(outstanding, 2048u) << "fctbs " << fctbs << " fccl " << lie;
    }
    LinkCredits c(64, 1);
    c.on_fcp({FcOp::Normal, 0, 0, 4095}); // "4095 ahead" = 1 behind
    EXPECT_FALSE(c.may_send(0, 1));
    EXPECT_EQ(c.credit(0), 0);
    c.on_fcp({FcOp::Normal, 0, 0, 2048});
    EXPECT_TRUE(c.may_send(0, 66));
    EXPECT_FALSE(c.may_send(0, 67));      // no packet is that large
    c.on_fcp({FcOp::Normal, 0, 0, 2049}); // more than an honest peer offers
    EXPECT_FALSE(c.may_send(0, 1));
    EXPECT_FALSE(c.may_send(0, 2));
}

TEST(IbCredits, FcpResyncsAbrAfterLoss) {
    // B sends 5 blocks that A never sees (a lost packet): A's ABR is behind
    // until B's next FCP carries FCTBS, after which A's FCCL is right again.
    LinkCredits a(50, 1), b(50, 1);
    b.on_fcp(a.take_fcp(0));
    b.on_sent(0, 5);
    EXPECT_EQ(a.fccl(0), 50);
    a.on_fcp(b.take_fcp(0));
    EXPECT_EQ(a.fccl(0), 55);
    b.on_fcp(a.take_fcp(0));
    EXPECT_EQ(b.credit(0), 50);
}

TEST(IbCredits, WindowCappedAt2048) {
    LinkCredits a(4000, 1), b(4000, 1);
    EXPECT_EQ(a.fccl(0), 2048);
    b.on_fcp(a.take_fcp(0));
    EXPECT_EQ(b.credit(0), 2048);
}

TEST(IbCredits, ResetClearsEverything) {
    LinkCredits a(50, 2), b(50, 2);
    b.on_fcp(a.take_fcp(0));
    b.on_sent(0, 9);
    b.reset();
    EXPECT_FALSE(b.may_send(0, 1));
    EXPECT_TRUE(b.fcp_pending(0));
    EXPECT_TRUE(b.fcp_pending(1));
    EXPECT_EQ(b.take_fcp(0).fctbs, 0);
}

TEST(IbCredits, RestoredEndCarriesOnAfterLostPackets) {
    // B's owner is saved and restored elsewhere (a migration): the packets
    // in flight and in B's receive buffer are gone. The
    // restored B keeps its counters; one FCP each way puts both ends back
    // in step, with B's full buffer offered again.
    LinkCredits a(50, 1), b(50, 1);
    b.on_fcp(a.take_fcp(0));
    a.on_fcp(b.take_fcp(0));
    ASSERT_TRUE(a.on_received(0, 20)); // in A's buffer, consumed later
    b.on_sent(0, 20);
    ASSERT_TRUE(b.on_received(0, 7)); // in B's buffer when B is saved
    a.on_sent(0, 7);
    a.on_sent(0, 3); // in flight when B is saved: lost

    LinkCredits b2(50, 1);
    ASSERT_TRUE(b2.restore(0, b.counters(0)));
    EXPECT_TRUE(b2.fcp_pending(0));
    EXPECT_EQ(b2.credit(0), b.credit(0));
    EXPECT_EQ(b2.occupied(0), 0);
    a.on_fcp(b2.take_fcp(0)); // B's FCTBS: A's ABR counts what B sent
    a.on_released(0, 20);
    b2.on_fcp(a.take_fcp(0)); // A's FCTBS: B's ABR skips the lost 3 blocks
    EXPECT_EQ(b2.credit(0), 50);
    a.on_fcp(b2.take_fcp(0));
    EXPECT_EQ(a.credit(0), 50);
}

TEST(IbCredits, RestoreRefusesWhatNoLinkHolds) {
    LinkCredits c(50, 2);
    EXPECT_FALSE(c.restore(2, {}));                   // not operational
    EXPECT_FALSE(c.restore(0, {0x1000, 0, true, 0})); // 13 bits
    EXPECT_FALSE(c.restore(1, {0, 0x1000, true, 0}));
    EXPECT_FALSE(c.restore(1, {0, 0, true, 0xFFFF}));
    EXPECT_EQ(c.credit(0), 0); // unchanged
    EXPECT_TRUE(c.restore(1, {5, 40, true, 9}));
    EXPECT_EQ(c.credit(1), 35);
}
