// SPDX-License-Identifier: GPL-2.0-or-later
// VL arbitration by the VLArbitration tables (IBTA vol. 1 7.6.9): the
// weights' shares, weight-0 entries passed over, the high-priority table
// and its limit, and hostile tables.
#include "ib/sma.hpp"
#include "ib/vlarb.hpp"

#include <gtest/gtest.h>

#include <array>
#include <random>

using namespace ohca::ib;

namespace {

// A port with four data VLs, both tables empty (weight 0 everywhere).
SmaPortState empty_port() {
    SmaDefaults d;
    d.vl_cap = 3;
    SmaPortState p = make_ca_state(d).ports[1];
    p.vlarb_low = {};
    p.vlarb_high = {};
    return p;
}

// The bytes each VL sent in 'packets' picks, every VL in 'ready' always
// having a packet of 'bytes[vl]'.
std::array<uint64_t, 4> run(VlArbiter &a, const SmaPortState &p, uint16_t ready,
                            std::array<size_t, 4> bytes, int packets) {
    std::array<uint64_t, 4> sent{};
    for (int i = 0; i < packets; ++i) {
        const int vl = a.pick(ready, p, 4);
        EXPECT_GE(vl, 0);
        if (vl < 0) {
            break;
        }
        EXPECT_NE(ready & (1u << vl), 0u);
        sent[static_cast<size_t>(vl)] += bytes[static_cast<size_t>(vl)];
        a.sent(bytes[static_cast<size_t>(vl)]);
    }
    return sent;
}

// The defaults (each VL weight 1 in the low table) take the VLs in turn,
// a packet each: before the tables were read, the switch did the same.
TEST(VlArb, DefaultTableTakesTheVlsInTurn) {
    SmaDefaults d;
    d.vl_cap = 3;
    const SmaPortState p = make_ca_state(d).ports[1];
    VlArbiter a;
    int last = -1;
    for (int i = 0; i < 40; ++i) {
        const int vl = a.pick(0b0101, p, 4);
        ASSERT_TRUE(vl == 0 || vl == 2);
        EXPECT_NE(vl, last);
        last = vl;
        a.sent(2048);
    }
}

// Two VLs loaded, weights 3:1 in 64-byte units: the bytes go 3:1, with
// packets of one block and of many.
TEST(VlArb, WeightsGiveTheShares) {
    SmaPortState p = empty_port();
    p.vlarb_low[0] = {0, 12}; // 768 bytes
    p.vlarb_low[1] = {1, 4};  // 256 bytes
    VlArbiter a;
    auto s = run(a, p, 0b11, {256, 256, 0, 0}, 4000);
    EXPECT_EQ(s[0], 3 * s[1]);
    // 64-byte packets: the same 3:1.
    a.reset();
    s = run(a, p, 0b11, {64, 64, 0, 0}, 4000);
    EXPECT_EQ(s[0], 3 * s[1]);
    // Weights 96 and 32 (6 KiB, 2 KiB) with 2 KiB packets: 3:1.
    p.vlarb_low[0] = {0, 96};
    p.vlarb_low[1] = {1, 32};
    a.reset();
    s = run(a, p, 0b11, {2048, 2048, 0, 0}, 4000);
    EXPECT_EQ(s[0], 3 * s[1]);
    // A packet that begins within its entry's weight goes whole, beyond
    // it: 4 KiB packets, two in VL0's 6 KiB turn, one in VL1's 2 KiB.
    a.reset();
    s = run(a, p, 0b11, {4096, 4096, 0, 0}, 3000);
    EXPECT_EQ(s[0], 2 * s[1]);
    // The same VL in two entries adds them: VL1 at 4 + 8 against VL0's 12.
    p = empty_port();
    p.vlarb_low[0] = {0, 12};
    p.vlarb_low[1] = {1, 4};
    p.vlarb_low[2] = {1, 8};
    a.reset();
    s = run(a, p, 0b11, {64, 64, 0, 0}, 4800);
    EXPECT_EQ(s[0], s[1]);
}

// A weight-0 entry is passed over: it holds up no other VL and takes no
// turn, not even from its own VL's other entries; an entry whose VL has
// nothing ready gives its turn away at once. A VL whose only entries
// weigh 0, or in no entry, is not served (IBTA: it waits).
TEST(VlArb, EmptyEntriesStarveNothingElse) {
    SmaPortState p = empty_port();
    p.vlarb_low[0] = {0, 0};
    p.vlarb_low[1] = {1, 4};
    p.vlarb_low[2] = {0, 4};
    p.vlarb_low[3] = {2, 0};
    VlArbiter a;
    auto s = run(a, p, 0b011, {256, 256, 0, 0}, 1000);
    EXPECT_EQ(s[0], s[1]); // VL0 by its entry 2, as much as VL1
    // VL2 (weight 0 only) and VL3 (no entry) ready alone: none to send.
    EXPECT_EQ(a.pick(0b1100, p, 4), -1);
    // ... and beside VL1 they take nothing from it.
    a.reset();
    s = run(a, p, 0b1110, {0, 256, 256, 256}, 1000);
    EXPECT_EQ(s[1], 1000u * 256);
    EXPECT_EQ(s[2] + s[3], 0u);
    // A heavy entry whose VL has nothing: the next VL goes at once.
    p = empty_port();
    p.vlarb_low[0] = {0, 255};
    p.vlarb_low[1] = {1, 1};
    a.reset();
    EXPECT_EQ(a.pick(0b01, p, 4), 0); // VL0's turn begins
    a.sent(64);
    EXPECT_EQ(a.pick(0b10, p, 4), 1); // VL0 drained: VL1 without waiting
    a.sent(64);
    // A VL beyond those in operation is not served, whatever its entry.
    p.vlarb_low[2] = {3, 200};
    a.reset();
    EXPECT_EQ(a.pick(0b1000, p, 2), -1);
}

// The high-priority table goes first; VLHighLimit (in 4 KiB) lets one
// low packet through after that many high bytes; 0 means one high packet,
// 255 no limit. Without a low packet waiting the high ones go on.
TEST(VlArb, HighPriorityAndItsLimit) {
    SmaPortState p = empty_port();
    p.vlarb_high[0] = {1, 255};
    p.vlarb_low[0] = {0, 255};
    VlArbiter a;
    p.info.vl_high_limit = 1; // 4 KiB: four 1 KiB high packets, then one low
    auto s = run(a, p, 0b11, {1024, 1024, 0, 0}, 500);
    EXPECT_EQ(s[1], 4 * s[0]);
    p.info.vl_high_limit = 0; // one high, one low
    a.reset();
    s = run(a, p, 0b11, {1024, 1024, 0, 0}, 500);
    EXPECT_EQ(s[1], s[0]);
    p.info.vl_high_limit = VlArbiter::kNoHighLimit; // the low VL waits
    a.reset();
    s = run(a, p, 0b11, {1024, 1024, 0, 0}, 500);
    EXPECT_EQ(s[0], 0u);
    // No high packet: the low table serves.
    EXPECT_EQ(a.pick(0b01, p, 4), 0);
    a.sent(1024);
    // High alone, with a limit: it is not held back for a low VL that has
    // nothing to send.
    p.info.vl_high_limit = 0;
    a.reset();
    s = run(a, p, 0b10, {0, 1024, 0, 0}, 100);
    EXPECT_EQ(s[1], 100u * 1024);
}

// Whatever an SM writes (any VL and weight in all 64 entries of both
// tables, any limit), a pick is a ready VL in operation or none, and the
// same tables give the same choices (no hidden state beyond the cursors).
TEST(VlArb, HostileTablesStayBounded) {
    std::mt19937 rng(7);
    for (int round = 0; round < 200; ++round) {
        SmaPortState p = empty_port();
        p.info.vl_arb_high_cap = static_cast<uint8_t>(rng() % 80); // beyond 64 too
        p.info.vl_arb_low_cap = static_cast<uint8_t>(rng() % 80);
        p.info.vl_high_limit = static_cast<uint8_t>(rng());
        for (auto *t : {&p.vlarb_high, &p.vlarb_low}) {
            for (auto &e : *t) {
                e = {static_cast<uint8_t>(rng() % 16),
                     static_cast<uint8_t>(rng() % 3 == 0 ? 0 : rng())};
            }
        }
        VlArbiter a;
        const auto vls = static_cast<uint8_t>(1 + rng() % 8);
        for (int i = 0; i < 500; ++i) {
            const auto ready = static_cast<uint16_t>(rng());
            const int vl = a.pick(ready, p, vls);
            if (vl >= 0) {
                ASSERT_LT(vl, vls);
                ASSERT_NE(ready & (1u << vl), 0u);
                a.sent(rng() % 4222);
            }
        }
    }
}

} // namespace
