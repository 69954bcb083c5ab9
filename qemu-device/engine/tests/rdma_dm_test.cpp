// SPDX-License-Identifier: GPL-2.0-or-later
// Device memory (dm.cpp): ALLOC_DM/FREE_DM and their bounds and limit, the
// BAR window (allocated chunks only, natural alignment), zeroing between
// allocations, REG_DM_MR's checks, and MRs on device memory as the source
// and target of RC operations (SEND, RDMA WRITE, READ, atomics) over the
// device's own loopback, with key and bounds checks.
#include "rdma_node.hpp"

#include <gtest/gtest.h>

namespace ohca::test {
namespace {

constexpr uint32_t kAll = OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_WRITE |
                          OHCA_ACCESS_REMOTE_READ | OHCA_ACCESS_REMOTE_ATOMIC;

class DmTest : public ::testing::Test {
  protected:
    void SetUp() override {
        pd = n.create_pd();
        scq = n.create_cq(8);
        rcq = n.create_cq(8);
        buf = n.alloc(1 << 14);
        for (uint32_t i = 0; i < (1 << 14); ++i) {
            n.host.put(buf + i, static_cast<uint8_t>(i * 7 + 3));
        }
        lbuf = n.reg_mr(pd, buf, 1 << 14, kAll);
        a = n.create_qp(pd, scq.cqn, rcq.cqn);
        b = n.create_qp(pd, scq.cqn, rcq.cqn);
        const uint32_t acc =
            OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_READ | OHCA_ACCESS_REMOTE_ATOMIC;
        n.connect(a, b.qpn, n, 3, 14, 7, 7, acc);
        n.connect(b, a.qpn, n, 3, 14, 7, 7, acc);
    }

    CmdOutcome alloc_raw(uint64_t len, uint32_t log_align, ohca_alloc_dm_out *out = nullptr,
                         uint32_t rsvd = 0) {
        ohca_alloc_dm_in in{};
        in.length = len;
        in.log_align = log_align;
        in.rsvd = rsvd;
        ohca_alloc_dm_out o{};
        CmdOutcome r = n.cmd(OHCA_CMD_ALLOC_DM, &in, sizeof(in), &o, sizeof(o));
        if (out != nullptr) {
            *out = o;
        }
        return r;
    }
    ohca_alloc_dm_out alloc(uint64_t len) {
        ohca_alloc_dm_out o{};
        EXPECT_EQ(alloc_raw(len, 0, &o).status, OHCA_STATUS_OK);
        return o;
    }
    uint8_t free_dm(uint32_t handle) {
        ohca_handle_in in{};
        in.handle = handle;
        return n.cmd_in(OHCA_CMD_FREE_DM, in).status;
    }
    CmdOutcome reg_raw(uint32_t pdn, uint32_t dm, uint64_t off, uint64_t len, uint32_t access,
                       uint32_t *key = nullptr) {
        ohca_reg_dm_mr_in in{};
        in.pdn = pdn;
        in.access = access;
        in.dm_handle = dm;
        in.offset = off;
        in.length = len;
        ohca_create_out o{};
        CmdOutcome r = n.cmd(OHCA_CMD_REG_DM_MR, &in, sizeof(in), &o, sizeof(o));
        if (key != nullptr) {
            *key = o.handle;
        }
        return r;
    }
    uint32_t reg(uint32_t dm, uint64_t off, uint64_t len, uint32_t access = kAll) {
        uint32_t key = 0;
        EXPECT_EQ(reg_raw(pd, dm, off, len, access, &key).status, OHCA_STATUS_OK);
        return key;
    }
    uint8_t destroy_mr(uint32_t key) {
        ohca_handle_in in{};
        in.handle = key;
        return n.cmd_in(OHCA_CMD_DESTROY_MR, in).status;
    }
    // The window offset of byte 'off' of allocation 'o'.
    static uint64_t win(const ohca_alloc_dm_out &o, uint64_t off) {
        return o.bar_offset - OHCA_DM_BAR_OFFSET + off;
    }
    uint32_t err_count() {
        return static_cast<uint32_t>(ohca_engine_reg_read(n.e, OHCA_REG_ERR_COUNT, 4));
    }
    ohca_cqe one(CqInfo &cq) {
        n.process();
        auto c = n.poll(cq);
        EXPECT_EQ(c.size(), 1u);
        return c.empty() ? ohca_cqe{} : c[0];
    }

    RdmaNode n{1};
    uint32_t pd = 0;
    CqInfo scq, rcq;
    QpInfo a, b;
    uint64_t buf = 0;
    uint32_t lbuf = 0;
};

TEST_F(DmTest, QueryDeviceReportsDeviceMemory) {
    ohca_query_device_out q{};
    ASSERT_EQ(n.cmd(OHCA_CMD_QUERY_DEVICE, nullptr, 0, &q, sizeof(q)).status, OHCA_STATUS_OK);
    EXPECT_EQ(q.dev_caps & OHCA_DEV_CAP_DM, uint32_t{OHCA_DEV_CAP_DM});
    EXPECT_EQ(q.max_dm_size, uint64_t{OHCA_DM_SIZE});
    EXPECT_EQ(q.max_dm, uint32_t{OHCA_DM_MAX_ALLOCS});
    EXPECT_EQ(q.dm_chunk_size, uint32_t{OHCA_DM_CHUNK_SIZE});
}

TEST_F(DmTest, AllocChecksFieldsBoundsAndTheLimit) {
    CmdOutcome r = alloc_raw(0, 0);
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(r.syndrome, offsetof(ohca_alloc_dm_in, length));
    EXPECT_EQ(alloc_raw(OHCA_DM_SIZE + 1, 0).status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(alloc_raw(~uint64_t{0}, 0).status, OHCA_STATUS_BAD_FIELD);
    r = alloc_raw(64, OHCA_DM_CHUNK_SHIFT + 1);
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(r.syndrome, offsetof(ohca_alloc_dm_in, log_align));
    EXPECT_EQ(alloc_raw(64, 0, nullptr, 1).status, OHCA_STATUS_RESERVED_NONZERO);
    EXPECT_EQ(free_dm(0), OHCA_STATUS_BAD_HANDLE);
    EXPECT_EQ(free_dm(0x12345), OHCA_STATUS_BAD_HANDLE);

    // One chunk each: max_dm allocations, then none.
    std::vector<uint32_t> handles;
    for (uint32_t i = 0; i < OHCA_DM_MAX_ALLOCS; ++i) {
        ohca_alloc_dm_out o{};
        ASSERT_EQ(alloc_raw(1, OHCA_DM_CHUNK_SHIFT, &o).status, OHCA_STATUS_OK) << i;
        EXPECT_EQ(o.bar_offset % OHCA_DM_CHUNK_SIZE, 0u);
        EXPECT_GE(o.bar_offset, uint64_t{OHCA_DM_BAR_OFFSET});
        EXPECT_LT(o.bar_offset, uint64_t{OHCA_DM_BAR_OFFSET} + OHCA_DM_SIZE);
        handles.push_back(o.handle);
    }
    EXPECT_EQ(alloc_raw(1, 0).status, OHCA_STATUS_NO_RESOURCES);
    for (uint32_t h : handles) {
        EXPECT_EQ(free_dm(h), OHCA_STATUS_OK);
    }
    EXPECT_EQ(free_dm(handles[0]), OHCA_STATUS_BAD_HANDLE); // freed twice

    // All of it at once, then nothing more; a new handle for the same slot.
    const ohca_alloc_dm_out whole = alloc(OHCA_DM_SIZE);
    EXPECT_NE(whole.handle, handles[0]);
    EXPECT_EQ(alloc_raw(1, 0).status, OHCA_STATUS_NO_RESOURCES);
    EXPECT_EQ(free_dm(handles[0]), OHCA_STATUS_BAD_HANDLE); // stale handle
    EXPECT_EQ(free_dm(whole.handle), OHCA_STATUS_OK);
}

TEST_F(DmTest, WindowReachesAllocatedChunksOnly) {
    const ohca_alloc_dm_out o = alloc(2 * OHCA_DM_CHUNK_SIZE);
    ohca_engine_dm_write(n.e, win(o, 8), 0x1122334455667788ull, 8);
    ohca_engine_dm_write(n.e, win(o, 16), 0xaabbccdd, 4);
    ohca_engine_dm_write(n.e, win(o, 21), 0xee, 1);
    EXPECT_EQ(ohca_engine_dm_read(n.e, win(o, 8), 8), 0x1122334455667788ull);
    EXPECT_EQ(ohca_engine_dm_read(n.e, win(o, 12), 4), 0x11223344u);
    EXPECT_EQ(ohca_engine_dm_read(n.e, win(o, 16), 2), 0xccddu);
    EXPECT_EQ(ohca_engine_dm_read(n.e, win(o, 21), 1), 0xeeu);

    const uint32_t errs = err_count();
    // Misaligned, odd sizes, beyond the memory and the unallocated rest.
    EXPECT_EQ(ohca_engine_dm_read(n.e, win(o, 9), 8), 0u);
    ohca_engine_dm_write(n.e, win(o, 10), 0xffff'ffff, 4);
    EXPECT_EQ(ohca_engine_dm_read(n.e, win(o, 8), 3), 0u);
    EXPECT_EQ(ohca_engine_dm_read(n.e, OHCA_DM_SIZE, 4), 0u);
    EXPECT_EQ(ohca_engine_dm_read(n.e, ~uint64_t{0} - 3, 4), 0u);
    ohca_engine_dm_write(n.e, OHCA_DM_SIZE + 64, 1, 8);
    const uint64_t other = win(o, 2 * OHCA_DM_CHUNK_SIZE); // the next chunk: free
    ohca_engine_dm_write(n.e, other, 0x5a5a5a5a, 4);
    EXPECT_EQ(ohca_engine_dm_read(n.e, other, 4), 0u);
    EXPECT_EQ(err_count(), errs + 8);
    EXPECT_EQ(ohca_engine_dm_read(n.e, win(o, 8), 8), 0x1122334455667788ull); // untouched

    // The free chunk, once allocated, reads zero: the write never landed.
    const ohca_alloc_dm_out o2 = alloc(4);
    EXPECT_EQ(o2.bar_offset, o.bar_offset + 2 * OHCA_DM_CHUNK_SIZE);
    EXPECT_EQ(ohca_engine_dm_read(n.e, win(o2, 0), 4), 0u);
}

TEST_F(DmTest, MemoryIsZeroWhenHandedOutAgain) {
    const ohca_alloc_dm_out o = alloc(OHCA_DM_CHUNK_SIZE);
    for (uint64_t off = 0; off < OHCA_DM_CHUNK_SIZE; off += 8) {
        ohca_engine_dm_write(n.e, win(o, off), ~uint64_t{0}, 8);
    }
    ASSERT_EQ(free_dm(o.handle), OHCA_STATUS_OK);
    EXPECT_EQ(ohca_engine_dm_read(n.e, win(o, 0), 8), 0u); // freed: no access
    const ohca_alloc_dm_out again = alloc(OHCA_DM_CHUNK_SIZE);
    ASSERT_EQ(again.bar_offset, o.bar_offset);
    for (uint64_t off = 0; off < OHCA_DM_CHUNK_SIZE; off += 8) {
        ASSERT_EQ(ohca_engine_dm_read(n.e, win(again, off), 8), 0u) << off;
    }
}

TEST_F(DmTest, RegDmMrChecksAndHoldsTheAllocation) {
    const ohca_alloc_dm_out o = alloc(100);
    EXPECT_EQ(reg_raw(pd + 50, o.handle, 0, 100, kAll).status, OHCA_STATUS_BAD_HANDLE);
    EXPECT_EQ(reg_raw(pd, o.handle + 1, 0, 100, kAll).status, OHCA_STATUS_BAD_HANDLE);
    CmdOutcome r = reg_raw(pd, o.handle, 0, 104, kAll); // past what ALLOC_DM asked
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(r.syndrome, offsetof(ohca_reg_dm_mr_in, length));
    r = reg_raw(pd, o.handle, 104, 0, kAll);
    EXPECT_EQ(r.syndrome, offsetof(ohca_reg_dm_mr_in, offset));
    EXPECT_EQ(reg_raw(pd, o.handle, 4, ~uint64_t{0}, kAll).status, OHCA_STATUS_BAD_FIELD);
    r = reg_raw(pd, o.handle, 0, 100, kAll | OHCA_ACCESS_MW_BIND);
    EXPECT_EQ(r.syndrome, offsetof(ohca_reg_dm_mr_in, access));
    EXPECT_EQ(reg_raw(pd, o.handle, 0, 100, OHCA_ACCESS_REMOTE_WRITE).status,
              OHCA_STATUS_BAD_FIELD); // remote write needs local write
    ohca_reg_dm_mr_in bad{};
    bad.pdn = pd;
    bad.dm_handle = o.handle;
    bad.rsvd = 1;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_REG_DM_MR, bad).status, OHCA_STATUS_RESERVED_NONZERO);

    const uint32_t empty = reg(o.handle, 100, 0); // covers nothing, but is an MR
    const uint32_t key = reg(o.handle, 0, 100);
    EXPECT_EQ(free_dm(o.handle), OHCA_STATUS_BAD_STATE);
    EXPECT_EQ(destroy_mr(key), OHCA_STATUS_OK);
    EXPECT_EQ(free_dm(o.handle), OHCA_STATUS_BAD_STATE);
    ohca_rereg_mr_in rr{};
    rr.key = empty;
    rr.flags = OHCA_REREG_MR_ACCESS;
    rr.access = OHCA_ACCESS_LOCAL_WRITE;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_REREG_MR, rr).status, OHCA_STATUS_BAD_STATE);
    EXPECT_EQ(destroy_mr(empty), OHCA_STATUS_OK);
    EXPECT_EQ(free_dm(o.handle), OHCA_STATUS_OK);
}

TEST_F(DmTest, RcTrafficFromAndToDeviceMemory) {
    const ohca_alloc_dm_out o = alloc(3 * OHCA_DM_CHUNK_SIZE);
    const uint64_t off = 104; // the MR starts inside the allocation
    const uint32_t len = 8192;
    const uint32_t key = reg(o.handle, off, len);

    // RDMA WRITE from guest memory into device memory (remote target),
    // across a chunk boundary.
    SendReq w;
    w.opcode = OHCA_WR_RDMA_WRITE;
    w.rkey = key;
    w.remote_addr = 0; // zero based
    w.sges = {{buf, len, lbuf}};
    n.post_send(a, w);
    ASSERT_EQ(one(scq).status, OHCA_CQE_SUCCESS);
    for (uint32_t i = 0; i < len; i += 4) {
        uint32_t want = 0;
        for (uint32_t k = 0; k < 4; ++k) {
            want |= uint32_t{static_cast<uint8_t>((i + k) * 7 + 3)} << (8 * k);
        }
        ASSERT_EQ(ohca_engine_dm_read(n.e, win(o, off + i), 4), want) << i;
    }

    // SEND from device memory (local SGE) into guest memory.
    const uint64_t dst = n.alloc(1 << 14);
    const uint32_t ldst = n.reg_mr(pd, dst, 1 << 14, OHCA_ACCESS_LOCAL_WRITE);
    n.post_recv(b, 9, {{dst, len, ldst}});
    SendReq s;
    s.opcode = OHCA_WR_SEND;
    s.sges = {{0, 4000, key}, {4000, len - 4000, key}};
    n.post_send(a, s);
    n.process();
    ASSERT_EQ(n.poll(scq).size(), 1u);
    auto rc = n.poll(rcq);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, OHCA_CQE_SUCCESS);
    for (uint32_t i = 0; i < len; ++i) {
        ASSERT_EQ(n.host.get<uint8_t>(dst + i), static_cast<uint8_t>(i * 7 + 3)) << i;
    }

    // RDMA READ from device memory into guest memory.
    SendReq r;
    r.opcode = OHCA_WR_RDMA_READ;
    r.rkey = key;
    r.remote_addr = 16;
    r.sges = {{dst + 8192, 64, ldst}};
    n.post_send(a, r);
    ASSERT_EQ(one(scq).status, OHCA_CQE_SUCCESS);
    for (uint32_t i = 0; i < 64; ++i) {
        ASSERT_EQ(n.host.get<uint8_t>(dst + 8192 + i), static_cast<uint8_t>((16 + i) * 7 + 3));
    }

    // Fetch-and-add on device memory.
    ohca_engine_dm_write(n.e, win(o, off + 8), 40, 8);
    SendReq f;
    f.opcode = OHCA_WR_ATOMIC_FETCH_ADD;
    f.rkey = key;
    f.remote_addr = 8;
    f.cmp_add = 2;
    f.sges = {{dst, 8, ldst}};
    n.post_send(a, f);
    ASSERT_EQ(one(scq).status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(n.host.get<uint64_t>(dst), 40u);
    EXPECT_EQ(ohca_engine_dm_read(n.e, win(o, off + 8), 8), 42u);

    // Past the MR's end: a remote access error, nothing written beyond.
    SendReq past;
    past.opcode = OHCA_WR_RDMA_WRITE;
    past.rkey = key;
    past.remote_addr = len - 4;
    past.sges = {{buf, 8, lbuf}};
    n.post_send(a, past);
    EXPECT_EQ(one(scq).status, OHCA_CQE_REM_ACCESS_ERR);
    EXPECT_EQ(ohca_engine_dm_read(n.e, win(o, off + len), 4), 0u);
}

TEST_F(DmTest, RightsAndKeysOfADeviceMemoryMr) {
    const ohca_alloc_dm_out o = alloc(256);
    const uint32_t ro = reg(o.handle, 0, 256, 0); // local read only
    SendReq w;
    w.opcode = OHCA_WR_RDMA_WRITE;
    w.rkey = ro;
    w.sges = {{buf, 16, lbuf}};
    n.post_send(a, w);
    EXPECT_EQ(one(scq).status, OHCA_CQE_REM_ACCESS_ERR);
    EXPECT_EQ(ohca_engine_dm_read(n.e, win(o, 0), 8), 0u);
    // Destroyed: its key is gone, and the allocation can go.
    ASSERT_EQ(destroy_mr(ro), OHCA_STATUS_OK);
    EXPECT_EQ(free_dm(o.handle), OHCA_STATUS_OK);
}

TEST_F(DmTest, ResetFreesEverything) {
    const ohca_alloc_dm_out o = alloc(OHCA_DM_SIZE);
    ohca_engine_dm_write(n.e, win(o, 0), 0x77, 8);
    n.reset();
    EXPECT_EQ(ohca_engine_dm_read(n.e, win(o, 0), 8), 0u);
    const ohca_alloc_dm_out again = alloc(OHCA_DM_SIZE);
    EXPECT_EQ(ohca_engine_dm_read(n.e, win(again, 0), 8), 0u);
}

} // namespace
} // namespace ohca::test
