// SPDX-License-Identifier: GPL-2.0-or-later
// Host memory a hostile driver can make the device keep: page lists sized by
// the object they describe, the device's page-list budget, and identities
// (MR keys, QP numbers) that a reset does not start over.
#include "device.hpp"
#include "rdma_node.hpp"

#include <malloc.h>

#include <set>

namespace ohca::test {
namespace {

constexpr uint32_t kMaxListPages = OHCA_PBL_MAX_PAGES;

uint64_t pbl_bytes(const RdmaNode &n) {
    return device_of(n.e).pbl_bytes();
}

// The largest two-level list there is, from two guest pages: every level-1
// entry names the same level-2 page of 512 page addresses.
ohca_pbl huge_list(RdmaNode &n, unsigned int shift) {
    const uint64_t l1 = n.alloc(4096);
    const uint64_t l2 = n.alloc(4096);
    for (uint32_t i = 0; i < OHCA_PBL_ENTRIES_PER_PAGE; ++i) {
        n.host.put(l1 + 8ull * i, l2);
        n.host.put(l2 + 8ull * i, (uint64_t{i} + 1) << 30);
    }
    ohca_pbl p{};
    p.addr = l1;
    p.npages = kMaxListPages;
    p.page_shift = static_cast<uint8_t>(shift);
    p.levels = 2;
    return p;
}

class HostBoundsTest : public ::testing::Test {
  protected:
    RdmaNode n{1};
};

// Before the fix each of these kept 2 MiB of host memory (2^18 entries) for
// a 4 KiB region: 512 of them grew QEMU by 1 GiB.
TEST_F(HostBoundsTest, PageListMayNotListMorePagesThanTheObjectCovers) {
    const uint32_t pd = n.create_pd();
    ohca_create_mr_in in{};
    in.pdn = pd;
    in.access = OHCA_ACCESS_LOCAL_WRITE;
    in.iova = 0x10000;
    in.length = 4096;
    in.pbl = huge_list(n, 12);
    const uint64_t before = pbl_bytes(n);
    const size_t heap_before = mallinfo2().uordblks;
    for (int i = 0; i < 512; ++i) {
        const auto r = n.cmd_in(OHCA_CMD_CREATE_MR, in);
        ASSERT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
        ASSERT_EQ(r.syndrome, offsetof(ohca_create_mr_in, pbl) + offsetof(ohca_pbl, npages));
    }
    EXPECT_EQ(pbl_bytes(n), before);
    // The heap as malloc sees it (0 under ASan, which replaces malloc).
    EXPECT_LT(mallinfo2().uordblks, heap_before + (size_t{1} << 20));

    // One page too many, or one too few, is refused the same way; exactly
    // the pages of [iova & ~4095, iova + length) is taken.
    const uint64_t buf = n.alloc(3 * 4096);
    in.iova = buf + 100;
    in.length = 2 * 4096; // touches 3 pages
    in.pbl = n.make_pbl(buf, 4 * 4096);
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_MR, in).status, OHCA_STATUS_BAD_FIELD);
    in.pbl.npages = 2;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_MR, in).status, OHCA_STATUS_BAD_FIELD);
    in.pbl.npages = 3;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_MR, in).status, OHCA_STATUS_OK);
    EXPECT_EQ(pbl_bytes(n), before + 3 * 8);

    // Rings: a 64-entry CQ (2 KiB) takes one page, an SQ and RQ theirs.
    ohca_create_cq_in cq{};
    cq.log_size = 6;
    cq.pbl = huge_list(n, 12);
    auto r = n.cmd_in(OHCA_CMD_CREATE_CQ, cq);
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(r.syndrome, offsetof(ohca_create_cq_in, pbl) + offsetof(ohca_pbl, npages));
    const CqInfo c = n.create_cq(6);
    ohca_create_qp_in qp{};
    qp.type = OHCA_QPT_RC;
    qp.pdn = pd;
    qp.send_cqn = c.cqn;
    qp.recv_cqn = c.cqn;
    qp.sq_log_size = 4;
    qp.sq_log_stride = 8;
    qp.rq_log_size = 4;
    qp.rq_log_stride = 6;
    const uint64_t sq = n.alloc(4096);
    qp.sq_pbl = n.make_pbl(sq, 4096);
    qp.rq_pbl = huge_list(n, 12);
    r = n.cmd_in(OHCA_CMD_CREATE_QP, qp);
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(r.syndrome, offsetof(ohca_create_qp_in, rq_pbl) + offsetof(ohca_pbl, npages));
    EXPECT_EQ(pbl_bytes(n), before + 4 * 8);
}

// Large lists that the objects do need still count against one budget per
// device: 2^22 entries (32 MiB of host memory), then NO_RESOURCES.
TEST_F(HostBoundsTest, PageListMemoryHasADeviceBudget) {
    const uint32_t pd = n.create_pd();
    ohca_create_mr_in in{};
    in.pdn = pd;
    in.access = OHCA_ACCESS_LOCAL_WRITE;
    in.iova = 0;
    in.length = uint64_t{kMaxListPages} << 12; // 1 GiB in 4 KiB pages
    in.pbl = huge_list(n, 12);
    constexpr uint64_t per_mr = uint64_t{kMaxListPages} * 8;
    const uint64_t fit = DeviceLimits::max_pbl_entries / kMaxListPages;
    std::vector<uint32_t> keys;
    for (uint64_t i = 0; i < fit; ++i) {
        ohca_create_out o{};
        ASSERT_EQ(n.cmd(OHCA_CMD_CREATE_MR, &in, sizeof(in), &o, sizeof(o)).status, OHCA_STATUS_OK);
        keys.push_back(o.handle);
    }
    EXPECT_EQ(pbl_bytes(n), fit * per_mr);
    EXPECT_EQ(pbl_bytes(n), DeviceLimits::max_pbl_entries * 8);
    for (int i = 0; i < 100; ++i) {
        const auto r = n.cmd_in(OHCA_CMD_CREATE_MR, in);
        ASSERT_EQ(r.status, OHCA_STATUS_NO_RESOURCES);
        ASSERT_EQ(r.syndrome, 0u);
    }
    // A small ring does not fit either, until something is destroyed.
    ohca_create_cq_in cq{};
    cq.log_size = 6;
    cq.pbl = n.make_pbl(n.alloc(4096), 2048);
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_CQ, cq).status, OHCA_STATUS_NO_RESOURCES);
    ohca_handle_in h{keys.back(), 0};
    ASSERT_EQ(n.cmd_in(OHCA_CMD_DESTROY_MR, h).status, OHCA_STATUS_OK);
    EXPECT_EQ(pbl_bytes(n), (fit - 1) * per_mr);
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_CQ, cq).status, OHCA_STATUS_OK);
    EXPECT_EQ(pbl_bytes(n), (fit - 1) * per_mr + 8);
    // A reset returns all of it.
    n.reset();
    EXPECT_EQ(pbl_bytes(n), 0u);
}

// A peer holding keys and QP numbers from before a reset must not find them
// naming the objects created after it.
TEST_F(HostBoundsTest, KeysAndQpnsDoNotRestartAfterReset) {
    auto make = [&](std::vector<uint32_t> &keys, std::vector<uint32_t> &qpns) {
        const uint32_t pd = n.create_pd();
        const CqInfo cq = n.create_cq(4);
        const uint64_t buf = n.alloc(4096);
        for (int i = 0; i < 8; ++i) {
            keys.push_back(n.reg_mr(pd, buf, 4096, OHCA_ACCESS_LOCAL_WRITE));
            qpns.push_back(n.create_qp(pd, cq.cqn, cq.cqn, 2, 2).qpn);
        }
    };
    std::vector<uint32_t> k1, q1, k2, q2;
    make(k1, q1);
    n.reset();
    make(k2, q2);
    const std::set<uint32_t> old_keys(k1.begin(), k1.end());
    const std::set<uint32_t> old_qpns(q1.begin(), q1.end());
    for (size_t i = 0; i < k2.size(); ++i) {
        EXPECT_EQ(old_keys.count(k2[i]), 0u) << std::hex << k2[i];
        EXPECT_EQ(old_qpns.count(q2[i]), 0u) << q2[i];
    }

    // Devices given different seeds (QEMU passes a random one) start with
    // different keys and QPNs.
    auto first_ids = [](uint32_t seed) {
        RdmaNode d(2, false, seed);
        const uint32_t pd = d.create_pd();
        const CqInfo cq = d.create_cq(4);
        const uint64_t buf = d.alloc(4096);
        return std::pair{d.reg_mr(pd, buf, 4096, OHCA_ACCESS_LOCAL_WRITE),
                         d.create_qp(pd, cq.cqn, cq.cqn, 2, 2).qpn};
    };
    const auto a = first_ids(0x12345678);
    const auto b = first_ids(0x9abcdef0);
    EXPECT_NE(a.first, b.first);
    EXPECT_NE(a.second, b.second);
    EXPECT_EQ(first_ids(0x12345678), a); // and the same seed the same ones
}

} // namespace
} // namespace ohca::test
