// SPDX-License-Identifier: GPL-2.0-or-later
// RESIZE_CQ (unpolled CQEs move to the new ring in order, indices restart,
// all or nothing) and REREG_MR (translation, PD and access in place, keys
// kept, all or nothing), with the fake host.
#include "device/limits.hpp"
#include "rdma_node.hpp"

#include <gtest/gtest.h>

namespace ohca::test {
namespace {

constexpr uint32_t kAll =
    OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_READ;

class ResizeReregTest : public ::testing::Test {
  protected:
    void SetUp() override {
        pd = n.create_pd();
        scq = n.create_cq(3);
        rcq = n.create_cq(8);
        a = n.create_qp(pd, scq.cqn, rcq.cqn, 8, 8);
        b = n.create_qp(pd, scq.cqn, rcq.cqn, 8, 8);
        n.connect(a, b.qpn, n);
        n.connect(b, a.qpn, n);
        src = n.alloc(1 << 16);
        dst = n.alloc(1 << 16);
        lsrc = n.reg_mr(pd, src, 1 << 16, kAll);
        ldst = n.reg_mr(pd, dst, 1 << 16, kAll);
    }

    // 'count' signaled SENDs a -> b with wr_ids first.., receives posted.
    void sends(uint64_t first, unsigned int count) {
        for (unsigned int i = 0; i < count; ++i) {
            n.post_recv(b, 1000 + first + i, {{dst, 64, ldst}});
            SendReq r;
            r.wr_id = first + i;
            r.sges = {{src, 64, lsrc}};
            n.post_send(a, r);
        }
        n.process();
    }

    CmdOutcome resize(CqInfo &cq, unsigned int log, uint32_t *moved = nullptr, bool commit = true) {
        const uint64_t ring = n.alloc(32ull << log);
        ohca_resize_cq_in in{};
        in.cqn = cq.cqn;
        in.log_size = static_cast<uint8_t>(log);
        in.pbl = n.make_pbl(ring, 32ull << log);
        ohca_resize_cq_out out{};
        const CmdOutcome r = n.cmd(OHCA_CMD_RESIZE_CQ, &in, sizeof(in), &out, sizeof(out));
        if (r.status == OHCA_STATUS_OK && commit) {
            cq.ring = ring;
            cq.size = 1u << log;
            cq.ci = 0;
            if (moved != nullptr) {
                *moved = out.cqes;
            }
        }
        return r;
    }

    // A 64-byte RDMA WRITE a -> b at 'va' through 'rkey': its status.
    uint8_t write_to(uint64_t va, uint32_t rkey) {
        SendReq r;
        r.wr_id = 77;
        r.opcode = OHCA_WR_RDMA_WRITE;
        r.remote_addr = va;
        r.rkey = rkey;
        r.sges = {{src, 64, lsrc}};
        n.post_send(a, r);
        n.process();
        const auto c = n.poll(scq);
        EXPECT_EQ(c.size(), 1u);
        return c.empty() ? 0xff : c[0].status;
    }

    ohca_rereg_mr_in rereg_in(uint32_t key, uint32_t flags) {
        ohca_rereg_mr_in in{};
        in.key = key;
        in.flags = flags;
        return in;
    }

    RdmaNode n{1};
    uint32_t pd = 0;
    CqInfo scq, rcq;
    QpInfo a, b;
    uint64_t src = 0, dst = 0;
    uint32_t lsrc = 0, ldst = 0;
};

TEST_F(ResizeReregTest, ResizeCqMovesUnpolledCqesInOrder) {
    sends(1, 5);
    ASSERT_EQ(n.poll(scq, 2).size(), 2u); // consumed and returned: 1, 2
    const uint64_t old_ring = scq.ring;
    uint32_t moved = 0;
    ASSERT_EQ(resize(scq, 5, &moved).status, OHCA_STATUS_OK);
    EXPECT_EQ(moved, 3u);
    std::vector<uint8_t> old_bytes(32 * 8);
    ASSERT_TRUE(n.host.read(old_ring, old_bytes.data(), old_bytes.size()));
    auto c = n.poll(scq);
    ASSERT_EQ(c.size(), 3u);
    for (uint32_t i = 0; i < 3; ++i) {
        EXPECT_EQ(c[i].wr_id, 3u + i);
        EXPECT_EQ(c[i].status, OHCA_CQE_SUCCESS);
        EXPECT_EQ(c[i].qpn, a.qpn);
        EXPECT_EQ(c[i].wqe_index, 2u + i);
    }
    // The CQ continues in the new ring (over two wraps of its 32 slots,
    // where the owner bit flips), and the old ring is not written again.
    uint64_t next = 6;
    for (int round = 0; round < 4; ++round) {
        sends(next, 20);
        c = n.poll(scq);
        ASSERT_EQ(c.size(), 20u);
        for (uint32_t i = 0; i < 20; ++i) {
            EXPECT_EQ(c[i].wr_id, next + i);
        }
        next += 20;
    }
    std::vector<uint8_t> after(old_bytes.size());
    ASSERT_TRUE(n.host.read(old_ring, after.data(), after.size()));
    EXPECT_EQ(after, old_bytes);
    // Shrinking works too while the CQEs fit; arming survives the move.
    sends(next, 3);
    n.cq_doorbell(scq, OHCA_DB_CQ_ARM_NEXT); // pending CQEs: an event now
    ASSERT_EQ(resize(scq, 2, &moved).status, OHCA_STATUS_OK);
    EXPECT_EQ(moved, 3u);
    c = n.poll(scq);
    ASSERT_EQ(c.size(), 3u);
    EXPECT_EQ(c[0].wr_id, next);
    n.cq_doorbell(scq, OHCA_DB_CQ_ARM_NEXT);
    (void)n.events();
    sends(next + 3, 1);
    bool event = false;
    for (const auto &e : n.events()) {
        event |= e.type == OHCA_EQE_CQ_COMPLETION && e.param0 == scq.cqn;
    }
    EXPECT_TRUE(event);
    EXPECT_EQ(n.poll(scq).size(), 1u);
}

TEST_F(ResizeReregTest, ResizeCqRefusalsLeaveTheCqAsItWas) {
    sends(1, 5);
    ohca_resize_cq_in in{};
    in.cqn = 999;
    in.log_size = 4;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_RESIZE_CQ, in).status, OHCA_STATUS_BAD_HANDLE);
    in.cqn = scq.cqn;
    in.rsvd[1] = 1;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_RESIZE_CQ, in).status, OHCA_STATUS_RESERVED_NONZERO);
    in.rsvd[1] = 0;
    for (uint8_t bad : {0, 21, 255}) {
        in.log_size = bad;
        const auto r = n.cmd_in(OHCA_CMD_RESIZE_CQ, in);
        EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
        EXPECT_EQ(r.syndrome, offsetof(ohca_resize_cq_in, log_size));
    }
    // Fewer slots than unpolled CQEs (5 in a ring of 4).
    const auto shrink = resize(scq, 2, nullptr, false);
    EXPECT_EQ(shrink.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(shrink.syndrome, offsetof(ohca_resize_cq_in, log_size));
    // A page list that does not cover the ring, and a ring the device
    // cannot write.
    const uint64_t ring = n.alloc(32ull << 4);
    in.log_size = 4;
    in.pbl = n.make_pbl(ring, 32ull << 4);
    in.pbl.npages = 2;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_RESIZE_CQ, in).status, OHCA_STATUS_BAD_FIELD);
    in.pbl = n.make_pbl(kRdmaBase + kRdmaSize + 0x10000, 32ull << 4);
    EXPECT_EQ(n.cmd_in(OHCA_CMD_RESIZE_CQ, in).status, OHCA_STATUS_BAD_ADDR);
    // All five are still in the old ring, and the CQ goes on there.
    auto c = n.poll(scq);
    ASSERT_EQ(c.size(), 5u);
    EXPECT_EQ(c[4].wr_id, 5u);
    sends(6, 2);
    EXPECT_EQ(n.poll(scq).size(), 2u);
    // A CQ in error (overrun: 9 CQEs in 8 slots) cannot be moved.
    sends(8, 9);
    EXPECT_EQ(resize(scq, 6, nullptr, false).status, OHCA_STATUS_BAD_STATE);
}

TEST_F(ResizeReregTest, ResizeCqCountsTheCqesTheDeviceOwes) {
    // A QP in INIT takes SQ doorbells but sends nothing: five SENDs rung
    // there are owed to its CQ (they complete, flushed, when it goes to
    // ERR), so a ring of 4 would overrun; one of 8 takes them.
    CqInfo cq = n.create_cq(3);
    QpInfo c = n.create_qp(pd, cq.cqn, rcq.cqn);
    ohca_qp_attr at{};
    at.qp_state = OHCA_QPS_INIT;
    ASSERT_EQ(n.modify(c.qpn,
                       OHCA_QP_STATE | OHCA_QP_PKEY_INDEX | OHCA_QP_PORT | OHCA_QP_ACCESS_FLAGS, at)
                  .status,
              OHCA_STATUS_OK);
    for (unsigned int i = 0; i < 5; ++i) {
        SendReq r;
        r.wr_id = 1 + i;
        r.sges = {{src, 64, lsrc}};
        n.post_send(c, r);
    }
    n.process();
    EXPECT_TRUE(n.poll(cq).empty());
    const auto small = resize(cq, 2, nullptr, false);
    EXPECT_EQ(small.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(small.syndrome, offsetof(ohca_resize_cq_in, log_size));
    uint32_t moved = 99;
    ASSERT_EQ(resize(cq, 3, &moved).status, OHCA_STATUS_OK);
    EXPECT_EQ(moved, 0u);
    at = {};
    at.qp_state = OHCA_QPS_ERR;
    ASSERT_EQ(n.modify(c.qpn, OHCA_QP_STATE, at).status, OHCA_STATUS_OK);
    n.process();
    const auto flushed = n.poll(cq);
    ASSERT_EQ(flushed.size(), 5u);
    EXPECT_EQ(flushed[4].wr_id, 5u);
    EXPECT_EQ(flushed[4].status, OHCA_CQE_WR_FLUSH_ERR);
}

TEST_F(ResizeReregTest, ResizeCqReturnsTheOldRingsPageListBudget) {
    // 2 MiB rings of 512 page-list entries: 8300 moves take more than the
    // device's 2^22 entries unless each returns the old ring's.
    CqInfo cq = n.create_cq(1);
    const uint64_t r1 = n.alloc(32ull << 16);
    const uint64_t r2 = n.alloc(32ull << 16);
    const ohca_pbl p1 = n.make_pbl(r1, 32ull << 16);
    const ohca_pbl p2 = n.make_pbl(r2, 32ull << 16);
    ohca_resize_cq_in in{};
    in.cqn = cq.cqn;
    in.log_size = 16;
    for (int i = 0; i < 8300; ++i) {
        in.pbl = i % 2 == 0 ? p1 : p2;
        const auto r = n.cmd_in(OHCA_CMD_RESIZE_CQ, in);
        ASSERT_EQ(r.status, OHCA_STATUS_OK) << "move " << i;
    }
}

TEST_F(ResizeReregTest, ReregMrTranslationAccessAndPdInPlace) {
    const uint64_t old_buf = n.alloc(8192);
    const uint64_t new_buf = n.alloc(16384);
    const uint32_t key = n.reg_mr(pd, old_buf, 8192, kAll);
    EXPECT_EQ(write_to(old_buf, key), OHCA_CQE_SUCCESS);

    // Translation: the same key now maps new_buf; old_buf is outside.
    ohca_rereg_mr_in in = rereg_in(key, OHCA_REREG_MR_TRANSLATION);
    in.iova = new_buf + 4096;
    in.length = 8192;
    in.pbl = n.make_pbl(new_buf + 4096, 8192);
    ohca_create_out out{};
    ASSERT_EQ(n.cmd(OHCA_CMD_REREG_MR, &in, sizeof(in), &out, sizeof(out)).status, OHCA_STATUS_OK);
    EXPECT_EQ(out.handle, key);
    EXPECT_EQ(out.handle2, key);
    std::vector<uint8_t> pattern(64, 0x5a);
    ASSERT_TRUE(n.host.write(src, pattern.data(), pattern.size()));
    EXPECT_EQ(write_to(new_buf + 4096 + 100, key), OHCA_CQE_SUCCESS);
    std::vector<uint8_t> got(64);
    ASSERT_TRUE(n.host.read(new_buf + 4096 + 100, got.data(), got.size()));
    EXPECT_EQ(got, pattern);
    // The QP went to error on the refused write; a new pair goes on.
    EXPECT_EQ(write_to(old_buf, key), OHCA_CQE_REM_ACCESS_ERR);
}

TEST_F(ResizeReregTest, ReregMrAccessAndPdChangeWhatTheKeyGrants) {
    const uint64_t buf = n.alloc(8192);
    const uint32_t key = n.reg_mr(pd, buf, 8192, kAll);
    // Access: without REMOTE_WRITE the key no longer takes writes.
    ohca_rereg_mr_in in = rereg_in(key, OHCA_REREG_MR_ACCESS);
    in.access = OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_READ;
    ASSERT_EQ(n.cmd_in(OHCA_CMD_REREG_MR, in).status, OHCA_STATUS_OK);
    EXPECT_EQ(write_to(buf, key), OHCA_CQE_REM_ACCESS_ERR);

    // PD: fresh QPs in 'pd'; the MR moves to pd2, a PD of nothing else.
    QpInfo c = n.create_qp(pd, scq.cqn, rcq.cqn);
    QpInfo d = n.create_qp(pd, scq.cqn, rcq.cqn);
    n.connect(c, d.qpn, n);
    n.connect(d, c.qpn, n);
    const uint32_t pd2 = n.create_pd();
    const uint32_t pd3 = n.create_pd();
    in = rereg_in(key, OHCA_REREG_MR_PD | OHCA_REREG_MR_ACCESS);
    in.pdn = pd3;
    in.access = kAll;
    ASSERT_EQ(n.cmd_in(OHCA_CMD_REREG_MR, in).status, OHCA_STATUS_OK);
    in = rereg_in(key, OHCA_REREG_MR_PD);
    in.pdn = pd2;
    ASSERT_EQ(n.cmd_in(OHCA_CMD_REREG_MR, in).status, OHCA_STATUS_OK);
    // pd3 lost its only MR (destroyable); pd2 holds it (busy).
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_PD, ohca_handle_in{pd3, 0}).status, OHCA_STATUS_OK);
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_PD, ohca_handle_in{pd2, 0}).status, OHCA_STATUS_BAD_STATE);
    // A receive into the MR from a QP of 'pd' fails its key check.
    n.post_recv(d, 9, {{buf, 64, key}});
    SendReq r;
    r.sges = {{src, 64, lsrc}};
    n.post_send(c, r);
    n.process();
    const auto rc = n.poll(rcq);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, OHCA_CQE_LOC_PROT_ERR);
    EXPECT_EQ(rc[0].vendor_err, OHCA_VERR_LKEY_PD);
    const auto sc = n.poll(scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_REM_OP_ERR);
}

TEST_F(ResizeReregTest, ReregMrRefusalsLeaveTheMrAsItWas) {
    const uint64_t buf = n.alloc(8192);
    const uint32_t key = n.reg_mr(pd, buf, 8192, kAll);
    auto expect_field = [&](const ohca_rereg_mr_in &in, uint32_t syndrome) {
        const auto r = n.cmd_in(OHCA_CMD_REREG_MR, in);
        EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
        EXPECT_EQ(r.syndrome, syndrome);
    };
    expect_field(rereg_in(key, 0), offsetof(ohca_rereg_mr_in, flags));
    expect_field(rereg_in(key, 8), offsetof(ohca_rereg_mr_in, flags));
    ohca_rereg_mr_in in = rereg_in(key, OHCA_REREG_MR_ACCESS);
    in.pdn = pd; // not named
    expect_field(in, offsetof(ohca_rereg_mr_in, pdn));
    in = rereg_in(key, OHCA_REREG_MR_PD);
    in.pdn = pd;
    in.access = kAll; // not named
    expect_field(in, offsetof(ohca_rereg_mr_in, access));
    in = rereg_in(key, OHCA_REREG_MR_ACCESS);
    in.access = kAll;
    in.length = 1; // translation not named
    expect_field(in, offsetof(ohca_rereg_mr_in, length));
    in.length = 0;
    in.access = OHCA_ACCESS_REMOTE_WRITE; // without LOCAL_WRITE
    expect_field(in, offsetof(ohca_rereg_mr_in, access));
    in.access = 0x100;
    expect_field(in, offsetof(ohca_rereg_mr_in, access));
    in = rereg_in(key, OHCA_REREG_MR_TRANSLATION);
    in.iova = buf;
    in.length = 0;
    in.pbl = n.make_pbl(buf, 8192);
    expect_field(in, offsetof(ohca_rereg_mr_in, length));
    in.length = 8193; // beyond the pages
    EXPECT_EQ(n.cmd_in(OHCA_CMD_REREG_MR, in).status, OHCA_STATUS_BAD_FIELD);
    in.length = 8192;
    in.pbl.page_shift = 11;
    expect_field(in, offsetof(ohca_rereg_mr_in, pbl) + offsetof(ohca_pbl, page_shift));
    in.pbl = n.make_pbl(buf, 8192);
    in.pbl.addr = kRdmaBase + kRdmaSize + 0x1000; // list not readable
    EXPECT_EQ(n.cmd_in(OHCA_CMD_REREG_MR, in).status, OHCA_STATUS_BAD_ADDR);
    in = rereg_in(key, OHCA_REREG_MR_PD);
    in.pdn = 999;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_REREG_MR, in).status, OHCA_STATUS_BAD_HANDLE);
    in.pdn = pd;
    in.key = key + 1; // another tag: a stale key
    EXPECT_EQ(n.cmd_in(OHCA_CMD_REREG_MR, in).status, OHCA_STATUS_BAD_HANDLE);
    // Only MRs with a translation of their own.
    ohca_create_mr_in phys{};
    phys.pdn = pd;
    phys.access = OHCA_ACCESS_LOCAL_WRITE;
    phys.flags = OHCA_MR_F_PHYSICAL;
    ohca_create_out po{};
    ASSERT_EQ(n.cmd(OHCA_CMD_CREATE_MR, &phys, sizeof(phys), &po, sizeof(po)).status,
              OHCA_STATUS_OK);
    in.key = po.handle;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_REREG_MR, in).status, OHCA_STATUS_BAD_STATE);
    // After all that the MR still grants what it did, where it did.
    EXPECT_EQ(write_to(buf + 8192 - 64, key), OHCA_CQE_SUCCESS);
}

TEST_F(ResizeReregTest, QueryDeviceAnnouncesBoth) {
    ohca_query_device_out d{};
    ASSERT_EQ(n.cmd(OHCA_CMD_QUERY_DEVICE, nullptr, 0, &d, sizeof(d)).status, OHCA_STATUS_OK);
    EXPECT_NE(d.dev_caps & OHCA_DEV_CAP_RESIZE_CQ, 0u);
    EXPECT_NE(d.dev_caps & OHCA_DEV_CAP_REREG_MR, 0u);
}

TEST(CqLimitsTest, CqHoldsWhatOfiRxmAsksFor) {
    // libfabric 1.17's ofi_rxm over verbs opens its CQ at 1024 (its
    // universe size) x (128 + 128) entries: a ring of 2^19 with the free
    // slot; beyond OHCA_CQ_LOG_MAX the command is refused.
    RdmaNode n{1};
    const uint32_t want = 1024 * (128 + 128);
    ASSERT_GE(DeviceLimits::max_cqe, want);
    const uint64_t bytes = sizeof(ohca_cqe) << 19;
    ohca_create_cq_in in{};
    in.log_size = 19;
    in.pbl = n.make_pbl(n.alloc(bytes, 4096), bytes, 12, 2); // 4096 pages
    ohca_create_out out{};
    ASSERT_EQ(n.cmd(OHCA_CMD_CREATE_CQ, &in, sizeof(in), &out, sizeof(out)).status, OHCA_STATUS_OK);
    EXPECT_NE(out.handle, 0u);
    in.log_size = OHCA_CQ_LOG_MAX + 1;
    const auto r = n.cmd_in(OHCA_CMD_CREATE_CQ, in);
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(r.syndrome, offsetof(ohca_create_cq_in, log_size));
}

} // namespace
} // namespace ohca::test
