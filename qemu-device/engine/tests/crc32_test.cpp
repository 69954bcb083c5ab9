// SPDX-License-Identifier: GPL-2.0-or-later
// The CRC-32 implementations (crc32.cpp) against the bitwise reference, on
// random lengths, alignments and seeds, and against known values.
#include "known_captures.hpp"
#include "link/crc32.hpp"
#include "link/roce_packet.hpp"
#include "link/roce_v2.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace ohca::test {
namespace {

using Fn = uint32_t (*)(uint32_t, std::span<const uint8_t>);

struct Impl {
    const char *name;
    Fn fn;
};

std::vector<Impl> impls() {
    std::vector<Impl> v = {{"slice8", crc32::update_slice8}, {"dispatch", crc32::update}};
    if (crc32::pclmul_supported()) {
        v.push_back({"pclmul", crc32::update_pclmul});
    }
    return v;
}

TEST(Crc32, CheckValue) {
    const std::string s = "123456789";
    const std::span<const uint8_t> d(reinterpret_cast<const uint8_t *>(s.data()), s.size());
    EXPECT_EQ(~crc32::update_bitwise(~0u, d), 0xcbf43926u);
    for (const Impl &i : impls()) {
        EXPECT_EQ(~i.fn(~0u, d), 0xcbf43926u) << i.name;
    }
}

TEST(Crc32, ImplementationIsNamed) {
    const std::string name = crc32::implementation();
    EXPECT_EQ(name, crc32::pclmul_supported() ? "pclmul" : "slice8");
}

TEST(Crc32, MatchesBitwiseOnRandomLengthsAlignmentsSeeds) {
    std::mt19937 rng(12345);
    std::vector<uint8_t> buf(70000 + 64);
    for (auto &b : buf) {
        b = static_cast<uint8_t>(rng());
    }
    // Every length around the folding boundaries, then random ones.
    std::vector<size_t> lens;
    for (size_t n = 0; n <= 300; ++n) {
        lens.push_back(n);
    }
    for (int k = 0; k < 100; ++k) {
        lens.push_back(rng() % 20000);
    }
    lens.push_back(65536);
    lens.push_back(4096);
    lens.push_back(1024);
    for (size_t n : lens) {
        const size_t off = rng() % 64;
        const uint32_t seed = static_cast<uint32_t>(rng());
        const std::span<const uint8_t> d(buf.data() + off, n);
        const uint32_t want = crc32::update_bitwise(seed, d);
        for (const Impl &i : impls()) {
            ASSERT_EQ(i.fn(seed, d), want) << i.name << " len " << n << " offset " << off;
        }
    }
}

TEST(Crc32, SplitUpdatesCompose) {
    std::mt19937 rng(99);
    std::vector<uint8_t> buf(9000);
    for (auto &b : buf) {
        b = static_cast<uint8_t>(rng());
    }
    const uint32_t whole = crc32::update_bitwise(~0u, buf);
    for (const Impl &i : impls()) {
        for (int k = 0; k < 50; ++k) {
            const size_t cut = rng() % buf.size();
            const std::span<const uint8_t> all(buf);
            const uint32_t c = i.fn(i.fn(~0u, all.first(cut)), all.subspan(cut));
            ASSERT_EQ(c, whole) << i.name << " cut " << cut;
        }
    }
}

// The ICRC of a ConnectX-4 Lx CNP (rdma_unit_test's KnownGoodCapture),
// computed over the invariant-masked message by each implementation: 64
// bytes, the smallest input the PCLMUL path folds.
TEST(Crc32, KnownIcrcCaptureEveryImplementation) {
    const std::vector<uint8_t> &f = cx4_cnp_capture();
    std::vector<uint8_t> m(8, 0xff);                // the absent LRH
    m.insert(m.end(), f.begin() + 14, f.end() - 4); // IP .. payload
    uint8_t *ip = m.data() + 8;
    ip[1] = 0xff;                   // TOS
    ip[8] = 0xff;                   // TTL
    ip[10] = ip[11] = 0xff;         // IP checksum
    ip[20 + 6] = ip[20 + 7] = 0xff; // UDP checksum
    ip[28 + 4] = 0xff;              // BTH resv8a
    ASSERT_EQ(m.size(), 64u);
    EXPECT_EQ(~crc32::update_bitwise(~0u, m), 0x2a00fd82u);
    for (const Impl &i : impls()) {
        EXPECT_EQ(~i.fn(~0u, m), 0x2a00fd82u) << i.name;
    }
    EXPECT_EQ(compute_icrc(f, 14, false), 0x2a00fd82u);
}

} // namespace
} // namespace ohca::test
