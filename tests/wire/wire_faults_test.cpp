// SPDX-License-Identifier: GPL-2.0-or-later
// The fault logic of ohca_wire without sockets or VMs.
#include "wire_faults.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace ohca_wire {
namespace {

// An Ethernet/IPv4/UDP frame to 'port' whose payload carries 'id'.
std::vector<uint8_t> udp_frame(uint32_t id, uint16_t port = kRoceUdpPort, size_t len = 100) {
    std::vector<uint8_t> f(len, 0);
    f[12] = 0x08; // IPv4
    f[14] = 0x45;
    f[14 + 9] = 17;
    f[34 + 2] = static_cast<uint8_t>(port >> 8);
    f[34 + 3] = static_cast<uint8_t>(port);
    for (int i = 0; i < 4; ++i) {
        f[len - 4 + i] = static_cast<uint8_t>(id >> (8 * i));
    }
    return f;
}
uint32_t id_of(const std::vector<uint8_t> &f) {
    const size_t n = f.size();
    return f[n - 4] | (f[n - 3] << 8) | (f[n - 2] << 16) | (uint32_t(f[n - 1]) << 24);
}

std::vector<std::vector<uint8_t>> run(FaultLine &l, int n, uint16_t port = kRoceUdpPort) {
    std::vector<std::vector<uint8_t>> out;
    uint64_t t = 0;
    for (int i = 0; i < n; ++i, t += 10) {
        l.push(t, udp_frame(static_cast<uint32_t>(i), port));
        for (auto &f : l.pop_due(t)) {
            out.push_back(std::move(f));
        }
    }
    for (auto &f : l.pop_due(t + 1'000'000)) {
        out.push_back(std::move(f));
    }
    EXPECT_FALSE(l.next_due().has_value());
    return out;
}

TEST(Classify, RoceOnly) {
    EXPECT_EQ(roce_payload_offset(udp_frame(0)), 42u);
    EXPECT_FALSE(roce_payload_offset(udp_frame(0, 53)));
    auto v6 = std::vector<uint8_t>(100, 0);
    v6[12] = 0x86;
    v6[13] = 0xdd;
    v6[14] = 0x60;
    v6[14 + 6] = 17;
    v6[54 + 2] = 0x12;
    v6[54 + 3] = 0xb7;
    EXPECT_EQ(roce_payload_offset(v6), 62u);
    auto vlan = std::vector<uint8_t>(4, 0);
    auto f = udp_frame(0);
    vlan[0] = 0x81;
    f.insert(f.begin() + 12, vlan.begin(), vlan.end());
    EXPECT_EQ(roce_payload_offset(f), 46u);
    EXPECT_FALSE(roce_payload_offset(std::vector<uint8_t>(20, 0)));
}

TEST(FaultLine, CleanWireKeepsOrder) {
    FaultLine l(FaultConfig{}, 1);
    auto out = run(l, 1000);
    ASSERT_EQ(out.size(), 1000u);
    for (uint32_t i = 0; i < 1000; ++i) {
        EXPECT_EQ(id_of(out[i]), i);
    }
    EXPECT_EQ(l.stats().rx, 1000u);
    EXPECT_EQ(l.stats().tx, 1000u);
    EXPECT_EQ(l.stats().roce, 1000u);
}

TEST(FaultLine, LossRateAndReproducible) {
    FaultConfig c;
    c.loss = 0.2;
    FaultLine l1(c, 7), l2(c, 7), l3(c, 8);
    auto o1 = run(l1, 10000), o2 = run(l2, 10000), o3 = run(l3, 10000);
    EXPECT_EQ(o1, o2); // same seed, same fates
    EXPECT_NE(o1, o3);
    EXPECT_NEAR(double(l1.stats().dropped), 2000, 200);
    EXPECT_EQ(o1.size() + l1.stats().dropped, 10000u);
    EXPECT_TRUE(std::is_sorted(o1.begin(), o1.end(),
                               [](auto &x, auto &y) { return id_of(x) < id_of(y); }));
}

TEST(FaultLine, RoceOnlyLeavesOtherFramesAlone) {
    FaultConfig c;
    c.loss = 1;
    FaultLine l(c, 1);
    EXPECT_EQ(run(l, 100, 53).size(), 100u);
    EXPECT_EQ(run(l, 100).size(), 0u);
    c.roce_only = false;
    FaultLine all(c, 1);
    EXPECT_EQ(run(all, 100, 53).size(), 0u);
}

TEST(FaultLine, Duplicates) {
    FaultConfig c;
    c.dup = 0.1;
    FaultLine l(c, 3);
    auto out = run(l, 5000);
    EXPECT_EQ(out.size(), 5000 + l.stats().duplicated);
    EXPECT_NEAR(double(l.stats().duplicated), 500, 100);
    for (size_t i = 1; i < out.size(); ++i) {
        EXPECT_LE(id_of(out[i - 1]), id_of(out[i])); // copies follow their original
    }
}

TEST(FaultLine, ReorderSwapsWithTheNextFrame) {
    FaultConfig c;
    c.reorder = 0.1;
    FaultLine l(c, 4);
    auto out = run(l, 5000);
    ASSERT_EQ(out.size(), 5000u);
    size_t inversions = 0;
    std::vector<uint32_t> ids;
    for (size_t i = 0; i < out.size(); ++i) {
        ids.push_back(id_of(out[i]));
        if (i > 0 && id_of(out[i]) < id_of(out[i - 1])) {
            ++inversions;
            EXPECT_EQ(id_of(out[i]) + 1, id_of(out[i - 1])); // one place only
        }
    }
    EXPECT_EQ(inversions, l.stats().reordered);
    EXPECT_GT(inversions, 300u);
    std::sort(ids.begin(), ids.end());
    for (uint32_t i = 0; i < 5000; ++i) {
        EXPECT_EQ(ids[i], i); // nothing lost or doubled
    }
}

TEST(FaultLine, HeldFrameGoesAfterHoldTime) {
    FaultConfig c;
    c.reorder = 1;
    c.hold_us = 500;
    FaultLine l(c, 1);
    l.push(0, udp_frame(1));
    EXPECT_TRUE(l.pop_due(499).empty());
    EXPECT_EQ(l.next_due(), 500u);
    auto out = l.pop_due(500);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(id_of(out[0]), 1u);
}

TEST(FaultLine, DelayWithinBound) {
    FaultConfig c;
    c.delay = 1;
    c.delay_us = 1000;
    FaultLine l(c, 5);
    for (uint32_t i = 0; i < 200; ++i) {
        l.push(0, udp_frame(i));
    }
    EXPECT_EQ(l.stats().delayed, 200u);
    const size_t now = l.pop_due(0).size();
    EXPECT_LT(now, 10u);
    EXPECT_EQ(now + l.pop_due(1000).size(), 200u);
    EXPECT_FALSE(l.next_due().has_value());
}

TEST(FaultLine, CorruptionFlipsOneBitAfterTheBthFlags) {
    FaultConfig c;
    c.corrupt = 1;
    FaultLine l(c, 6);
    for (uint32_t i = 0; i < 500; ++i) {
        const auto orig = udp_frame(i);
        l.push(0, orig);
        auto out = l.pop_due(0);
        ASSERT_EQ(out.size(), 1u);
        int bits = 0;
        size_t where = 0;
        for (size_t k = 0; k < orig.size(); ++k) {
            const int d = __builtin_popcount(orig[k] ^ out[0][k]);
            bits += d;
            if (d != 0) {
                where = k;
            }
        }
        EXPECT_EQ(bits, 1);
        EXPECT_GE(where, 42u + 2);
    }
    EXPECT_EQ(l.stats().corrupted, 500u);
}

} // namespace
} // namespace ohca_wire
