// SPDX-License-Identifier: GPL-2.0-or-later
// ResponderResources alone: the bound on pending READ/atomic responses, ACK
// coalescing behind them, duplicates of READs and atomics.
#include "link/roce_packet.hpp"
#include "transports/responder_resources.hpp"

#include <gtest/gtest.h>

namespace ohca {
namespace {

using Kind = ResponderResources::Response::Kind;

TEST(ResponderResourcesTest, NewReadsAndAtomicsStopAtTheLimit) {
    ResponderResources r;
    r.reset(2);
    EXPECT_EQ(r.capacity(), 2u);
    EXPECT_TRUE(r.add_read(10, 0x1000, 7, 4096, 16, 1));
    EXPECT_TRUE(r.add_atomic(26, 42, 2));
    EXPECT_TRUE(r.full());
    EXPECT_FALSE(r.add_read(27, 0x1000, 7, 8, 1, 3));
    EXPECT_FALSE(r.add_atomic(27, 1, 3));
    EXPECT_EQ(r.pending(), 2u);
    EXPECT_EQ(r.queued(), 2u);
    r.pop_front();
    EXPECT_FALSE(r.full());
    EXPECT_TRUE(r.add_read(27, 0x1000, 7, 8, 1, 3));
}

TEST(ResponderResourcesTest, ZeroMeansOne) {
    ResponderResources r;
    r.reset(0);
    EXPECT_EQ(r.capacity(), 1u);
    EXPECT_TRUE(r.add_read(0, 0, 1, 1, 1, 0));
    EXPECT_FALSE(r.add_read(1, 0, 1, 1, 1, 0));
}

TEST(ResponderResourcesTest, AcksBehindResponsesCoalesce) {
    ResponderResources r;
    r.reset(1);
    ASSERT_TRUE(r.add_read(100, 0, 1, 1 << 20, 4096, 1));
    for (uint32_t i = 0; i < 100000; ++i) {
        r.queue_ack(psn_add(4195, i % 7), uint8_t{0x1f}, 2);
    }
    EXPECT_EQ(r.queued(), 2u);
    EXPECT_EQ(r.front().kind, Kind::Read);
    r.pop_front();
    EXPECT_EQ(r.front().kind, Kind::Ack);
}

TEST(ResponderResourcesTest, AnAckBelowAWaitingNakIsDropped) {
    ResponderResources r;
    r.reset(1);
    ASSERT_TRUE(r.add_read(1, 0, 1, 512, 2, 1));
    r.queue_ack(5, kAethNak | kNakPsnSeq, 2);
    r.queue_ack(4, uint8_t{0x1f}, 2);
    ASSERT_EQ(r.queued(), 2u);
    r.pop_front();
    EXPECT_EQ(r.front().syndrome, kAethNak | kNakPsnSeq);
    EXPECT_EQ(r.front().psn, 5u);
}

TEST(ResponderResourcesTest, DuplicateReadDropsWhatFollowsAndRequeues) {
    ResponderResources r;
    r.reset(4);
    ASSERT_TRUE(r.add_read(100, 0x1000, 1, 2560, 10, 1)); // 100..109
    r.queue_ack(110, uint8_t{0x1f}, 2);
    ASSERT_TRUE(r.add_read(111, 0x9000, 1, 256, 1, 3));
    // Ask again from inside the first READ: everything from there goes.
    ASSERT_TRUE(r.replay_read(105, 0x1000 + 5 * 256, 1, 5 * 256, 5, 3));
    EXPECT_EQ(r.queued(), 1u);
    EXPECT_EQ(r.pending(), 1u);
    EXPECT_EQ(r.front().psn, 105u);
    EXPECT_EQ(r.front().npkts, 5u);
}

TEST(ResponderResourcesTest, DuplicateReadCannotExceedTheLimit) {
    ResponderResources r;
    r.reset(1);
    ASSERT_TRUE(r.add_read(100, 0, 1, 256, 1, 1));
    // A "duplicate" at a PSN after the pending READ matches nothing and
    // finds no free resource.
    EXPECT_FALSE(r.replay_read(150, 0, 1, 256, 1, 1));
    EXPECT_EQ(r.pending(), 1u);
    EXPECT_EQ(r.front().psn, 100u);
}

TEST(ResponderResourcesTest, AtomicResultsAreKeptForTheLastOnes) {
    ResponderResources r;
    r.reset(2);
    ASSERT_TRUE(r.add_atomic(1, 11, 1));
    r.pop_front();
    ASSERT_TRUE(r.add_atomic(2, 22, 2));
    r.pop_front();
    ASSERT_TRUE(r.add_atomic(3, 33, 3));
    r.pop_front();
    EXPECT_EQ(r.saved_atomics(), 2u);
    EXPECT_FALSE(r.saved_result(1).has_value());
    EXPECT_EQ(r.saved_result(2), 22u);
    EXPECT_FALSE(r.replay_atomic(1));
    EXPECT_TRUE(r.empty());
    ASSERT_TRUE(r.replay_atomic(2));
    EXPECT_EQ(r.front().kind, Kind::Atomic);
    EXPECT_EQ(r.front().orig, 22u);
    EXPECT_EQ(r.front().msn, 2u);
    // Replaying it again while queued does not queue it twice.
    ASSERT_TRUE(r.replay_atomic(2));
    EXPECT_EQ(r.queued(), 1u);
}

TEST(ResponderResourcesTest, ShrinkingKeepsTheNewestResults) {
    ResponderResources r;
    r.reset(4);
    for (uint32_t i = 1; i <= 4; ++i) {
        ASSERT_TRUE(r.add_atomic(i, i * 10, i));
        r.pop_front();
    }
    r.set_capacity(2);
    EXPECT_EQ(r.saved_atomics(), 2u);
    EXPECT_EQ(r.saved_result(4), 40u);
    EXPECT_EQ(r.saved_result(3), 30u);
    EXPECT_FALSE(r.saved_result(2).has_value());
    ASSERT_TRUE(r.add_atomic(5, 50, 5));
    EXPECT_FALSE(r.saved_result(3).has_value());
    EXPECT_EQ(r.saved_result(5), 50u);
}

TEST(ResponderResourcesTest, DropPendingKeepsSavedResults) {
    ResponderResources r;
    r.reset(1);
    ASSERT_TRUE(r.add_atomic(9, 99, 1));
    r.drop_pending();
    EXPECT_TRUE(r.empty());
    EXPECT_EQ(r.pending(), 0u);
    EXPECT_EQ(r.saved_result(9), 99u);
}

} // namespace
} // namespace ohca
