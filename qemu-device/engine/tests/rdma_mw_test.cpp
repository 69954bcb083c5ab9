// SPDX-License-Identifier: GPL-2.0-or-later
// Memory windows (mw.cpp): ALLOC_MW/DEALLOC_MW and their limit, BIND_MW of
// type 1 and type 2 windows and its checks, remote access through a
// window's key (range, rights, QP of a type 2 window), invalidation by
// LOCAL_INV and SEND with invalidate, and an MR that cannot go while
// windows are bound to it; over the device's own loopback.
#include "rdma_node.hpp"

#include <gtest/gtest.h>

namespace ohca::test {
namespace {

constexpr uint32_t kMrAccess = OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_MW_BIND;
constexpr uint32_t kWrite = OHCA_ACCESS_REMOTE_WRITE;

class MwTest : public ::testing::Test {
  protected:
    void SetUp() override {
        pd = n.create_pd();
        scq = n.create_cq(8);
        rcq = n.create_cq(8);
        src = n.alloc(1 << 14);
        for (uint32_t i = 0; i < (1 << 14); ++i) {
            n.host.put(src + i, static_cast<uint8_t>(i * 7 + 3));
        }
        lsrc = n.reg_mr(pd, src, 1 << 14, OHCA_ACCESS_LOCAL_WRITE);
        dst = n.alloc(1 << 14);
        mr = n.reg_mr(pd, dst, 1 << 14, kMrAccess);
        connect_pair();
    }

    void connect_pair() {
        a = n.create_qp(pd, scq.cqn, rcq.cqn);
        b = n.create_qp(pd, scq.cqn, rcq.cqn);
        n.connect(a, b.qpn, n);
        n.connect(b, a.qpn, n);
    }

    CmdOutcome alloc_raw(uint32_t pdn, uint8_t type, uint32_t *key = nullptr, uint8_t rsvd = 0) {
        ohca_alloc_mw_in in{};
        in.pdn = pdn;
        in.type = type;
        in.rsvd[1] = rsvd;
        ohca_create_out o{};
        CmdOutcome r = n.cmd(OHCA_CMD_ALLOC_MW, &in, sizeof(in), &o, sizeof(o));
        if (key != nullptr) {
            *key = o.handle;
            EXPECT_EQ(o.handle, o.handle2);
        }
        return r;
    }
    uint32_t alloc_mw(uint8_t type) {
        uint32_t key = 0;
        EXPECT_EQ(alloc_raw(pd, type, &key).status, OHCA_STATUS_OK);
        return key;
    }
    uint8_t dealloc(uint32_t key) {
        ohca_handle_in in{};
        in.handle = key;
        return n.cmd_in(OHCA_CMD_DEALLOC_MW, in).status;
    }
    uint8_t destroy_mr(uint32_t key) {
        ohca_handle_in in{};
        in.handle = key;
        return n.cmd_in(OHCA_CMD_DESTROY_MR, in).status;
    }

    // A BIND_MW WQE on 'qp' and its completion.
    ohca_cqe bind(QpInfo &qp, uint32_t new_key, uint32_t lkey, uint64_t addr, uint64_t len,
                  uint32_t access, uint64_t wr_id = 700) {
        ohca_bind_mw_wqe w{};
        w.wr_id = wr_id;
        w.opcode = OHCA_WR_BIND_MW;
        w.flags = OHCA_WQE_SIGNALED;
        w.mw_key = new_key;
        w.addr = addr;
        w.length = len;
        w.mr_lkey = lkey;
        w.access = access;
        n.host.put(qp.sq + uint64_t{qp.sq_pi % qp.sq_size} * qp.sq_stride, w);
        ++qp.sq_pi;
        n.ring_sq(qp);
        return one(scq);
    }

    static uint32_t next_key(uint32_t key) { return (key & ~0xffu) | ((key + 1) & 0xffu); }

    ohca_cqe one(CqInfo &cq) {
        n.process();
        auto c = n.poll(cq);
        EXPECT_EQ(c.size(), 1u);
        return c.empty() ? ohca_cqe{} : c[0];
    }

    // An RDMA WRITE (or READ) of 'len' bytes from QP 'from' to (key, va).
    uint8_t rdma(QpInfo &from, uint8_t opcode, uint32_t key, uint64_t va, uint32_t len) {
        SendReq r;
        r.opcode = opcode;
        r.rkey = key;
        r.remote_addr = va;
        r.sges = {{src, len, lsrc}};
        n.post_send(from, r);
        return one(scq).status;
    }

    bool landed(uint64_t off, uint32_t len) {
        for (uint32_t i = 0; i < len; ++i) {
            if (n.host.get<uint8_t>(dst + off + i) != static_cast<uint8_t>(i * 7 + 3)) {
                return false;
            }
        }
        return true;
    }

    RdmaNode n{1};
    uint32_t pd = 0;
    CqInfo scq, rcq;
    QpInfo a, b;
    uint64_t src = 0, dst = 0;
    uint32_t lsrc = 0, mr = 0;
};

TEST_F(MwTest, QueryDeviceReportsWindows) {
    ohca_query_device_out q{};
    ASSERT_EQ(n.cmd(OHCA_CMD_QUERY_DEVICE, nullptr, 0, &q, sizeof(q)).status, OHCA_STATUS_OK);
    EXPECT_EQ(q.dev_caps & OHCA_DEV_CAP_MW, uint32_t{OHCA_DEV_CAP_MW});
    EXPECT_EQ(q.max_mw, 1024u);
}

TEST_F(MwTest, AllocChecksEveryFieldAndTheLimit) {
    EXPECT_EQ(alloc_raw(pd + 100, OHCA_MW_TYPE_1).status, OHCA_STATUS_BAD_HANDLE);
    const CmdOutcome t3 = alloc_raw(pd, 3);
    EXPECT_EQ(t3.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(t3.syndrome, offsetof(ohca_alloc_mw_in, type));
    EXPECT_EQ(alloc_raw(pd, 0).status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(alloc_raw(pd, OHCA_MW_TYPE_2, nullptr, 1).status, OHCA_STATUS_RESERVED_NONZERO);
    EXPECT_EQ(dealloc(0x12345), OHCA_STATUS_BAD_HANDLE);
    EXPECT_EQ(dealloc(mr), OHCA_STATUS_BAD_HANDLE); // an MR's key is no window

    std::vector<uint32_t> keys;
    for (uint32_t i = 0; i < 1024; ++i) {
        uint32_t k = 0;
        ASSERT_EQ(alloc_raw(pd, i % 2 ? OHCA_MW_TYPE_2 : OHCA_MW_TYPE_1, &k).status, OHCA_STATUS_OK)
            << i;
        keys.push_back(k);
    }
    EXPECT_EQ(alloc_raw(pd, OHCA_MW_TYPE_1).status, OHCA_STATUS_NO_RESOURCES);
    // Windows do not take MR room: MRs are counted on their own.
    const uint32_t more = n.reg_mr(pd, dst, 4096, OHCA_ACCESS_LOCAL_WRITE);
    EXPECT_NE(more, 0u);
    // A PD with windows cannot go.
    ohca_handle_in pin{};
    pin.handle = pd;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_PD, pin).status, OHCA_STATUS_BAD_STATE);
    EXPECT_EQ(dealloc(keys[5]), OHCA_STATUS_OK);
    EXPECT_EQ(dealloc(keys[5]), OHCA_STATUS_BAD_HANDLE);
    uint32_t again = 0;
    EXPECT_EQ(alloc_raw(pd, OHCA_MW_TYPE_1, &again).status, OHCA_STATUS_OK);
    EXPECT_NE(again, keys[5]); // the index came back with a new tag
}

TEST_F(MwTest, Type1BindWriteRebindAndZeroLengthUnbind) {
    const uint32_t mw = alloc_mw(OHCA_MW_TYPE_1);
    const uint32_t k1 = next_key(mw);
    ohca_cqe c = bind(a, k1, mr, dst + 256, 1024, kWrite | OHCA_ACCESS_LOCAL_WRITE);
    EXPECT_EQ(c.status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(c.opcode, OHCA_CQE_BIND_MW);
    EXPECT_EQ(c.wr_id, 700u);
    EXPECT_EQ(rdma(a, OHCA_WR_RDMA_WRITE, k1, dst + 256, 512), OHCA_CQE_SUCCESS);
    EXPECT_TRUE(landed(256, 512));
    // The window's own key is refused as the alloc key, and beyond its range.
    EXPECT_EQ(rdma(a, OHCA_WR_RDMA_WRITE, mw, dst + 256, 16), OHCA_CQE_REM_ACCESS_ERR);
    connect_pair();
    EXPECT_EQ(rdma(a, OHCA_WR_RDMA_WRITE, k1, dst + 256 + 1000, 32), OHCA_CQE_REM_ACCESS_ERR);
    connect_pair();
    // No READ right.
    EXPECT_EQ(rdma(a, OHCA_WR_RDMA_READ, k1, dst + 256, 16), OHCA_CQE_REM_ACCESS_ERR);
    connect_pair();
    // Bound again (any QP of the PD): the old key stops working.
    const uint32_t k2 = next_key(k1);
    EXPECT_EQ(bind(b, k2, mr, dst, 4096, kWrite | OHCA_ACCESS_REMOTE_READ).status,
              OHCA_CQE_SUCCESS);
    EXPECT_EQ(rdma(a, OHCA_WR_RDMA_READ, k2, dst + 8, 64), OHCA_CQE_SUCCESS);
    EXPECT_EQ(rdma(a, OHCA_WR_RDMA_WRITE, k1, dst + 256, 16), OHCA_CQE_REM_ACCESS_ERR);
    connect_pair();
    // Zero length: unbound, every key refused, the MR free to go.
    const uint32_t k3 = next_key(k2);
    EXPECT_EQ(bind(a, k3, mr, dst, 0, 0).status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(rdma(a, OHCA_WR_RDMA_WRITE, k3, dst, 16), OHCA_CQE_REM_ACCESS_ERR);
    EXPECT_EQ(destroy_mr(mr), OHCA_STATUS_OK);
}

TEST_F(MwTest, BindChecks) {
    const uint32_t mw1 = alloc_mw(OHCA_MW_TYPE_1);
    struct Case {
        const char *what;
        uint32_t lkey;
        uint64_t addr;
        uint64_t len;
        uint32_t access;
        uint8_t verr;
    };
    const uint32_t plain = n.reg_mr(pd, dst, 4096, OHCA_ACCESS_LOCAL_WRITE); // no MW_BIND
    const uint32_t ro = n.reg_mr(pd, dst, 4096, OHCA_ACCESS_MW_BIND);        // no LOCAL_WRITE
    const uint32_t other_pd = n.create_pd();
    const uint32_t foreign = n.reg_mr(other_pd, dst, 4096, kMrAccess);
    const Case cases[] = {
        {"unknown MR", 0x7777700, dst, 64, kWrite, OHCA_VERR_BAD_LKEY},
        {"window key as MR", mw1, dst, 64, kWrite, OHCA_VERR_BAD_LKEY},
        {"MR without MW_BIND", plain, dst, 64, kWrite, OHCA_VERR_LKEY_ACCESS},
        {"write on read-only MR", ro, dst, 64, kWrite, OHCA_VERR_LKEY_ACCESS},
        {"MR of another PD", foreign, dst, 64, kWrite, OHCA_VERR_LKEY_PD},
        {"past the MR", mr, dst + (1 << 14) - 8, 16, kWrite, OHCA_VERR_LKEY_BOUNDS},
        {"below the MR", mr, dst - 8, 16, kWrite, OHCA_VERR_LKEY_BOUNDS},
        {"wrapping", mr, ~uint64_t{0} - 4, 16, kWrite, OHCA_VERR_LKEY_BOUNDS},
        {"unknown access", mr, dst, 64, 1u << 7, OHCA_VERR_MW_BIND},
        {"MW_BIND as window access", mr, dst, 64, OHCA_ACCESS_MW_BIND, OHCA_VERR_MW_BIND},
    };
    for (const Case &t : cases) {
        const ohca_cqe c = bind(a, next_key(mw1), t.lkey, t.addr, t.len, t.access);
        EXPECT_EQ(c.status, OHCA_CQE_MW_BIND_ERR) << t.what;
        EXPECT_EQ(c.vendor_err, t.verr) << t.what;
        connect_pair(); // the failed WQE put the QP in ERR
    }
    // A read-only window over the MR without LOCAL_WRITE is fine.
    EXPECT_EQ(bind(a, next_key(mw1), ro, dst, 64, OHCA_ACCESS_REMOTE_READ).status,
              OHCA_CQE_SUCCESS);
    // A window of another PD, a key that names no window.
    uint32_t w_other = 0;
    ASSERT_EQ(alloc_raw(other_pd, OHCA_MW_TYPE_1, &w_other).status, OHCA_STATUS_OK);
    ohca_cqe c = bind(a, next_key(w_other), mr, dst, 64, kWrite);
    EXPECT_EQ(c.status, OHCA_CQE_MW_BIND_ERR);
    EXPECT_EQ(c.vendor_err, OHCA_VERR_LKEY_PD);
    connect_pair();
    c = bind(a, 0x5555500, mr, dst, 64, kWrite);
    EXPECT_EQ(c.status, OHCA_CQE_MW_BIND_ERR);
    EXPECT_EQ(c.vendor_err, OHCA_VERR_BAD_LKEY);
    connect_pair();
    // Reserved bytes.
    ohca_bind_mw_wqe w{};
    w.opcode = OHCA_WR_BIND_MW;
    w.flags = OHCA_WQE_SIGNALED;
    w.mw_key = next_key(mw1);
    w.mr_lkey = mr;
    w.addr = dst;
    w.length = 64;
    w.rsvd1[5] = 1;
    n.host.put(a.sq + uint64_t{a.sq_pi % a.sq_size} * a.sq_stride, w);
    ++a.sq_pi;
    n.ring_sq(a);
    c = one(scq);
    EXPECT_EQ(c.status, OHCA_CQE_LOC_QP_OP_ERR);
    EXPECT_EQ(c.vendor_err, OHCA_VERR_BAD_WQE);
}

TEST_F(MwTest, WindowKeyIsNotAnLkey) {
    const uint32_t mw = alloc_mw(OHCA_MW_TYPE_1);
    ASSERT_EQ(bind(a, next_key(mw), mr, dst, 4096, kWrite).status, OHCA_CQE_SUCCESS);
    SendReq r;
    r.opcode = OHCA_WR_SEND;
    r.sges = {{dst, 16, next_key(mw)}};
    n.post_send(a, r);
    const ohca_cqe c = one(scq);
    EXPECT_EQ(c.status, OHCA_CQE_LOC_PROT_ERR);
}

TEST_F(MwTest, Type2BoundToItsQpAndInvalidatedLocally) {
    const uint32_t mw = alloc_mw(OHCA_MW_TYPE_2);
    // Zero length is refused for type 2.
    EXPECT_EQ(bind(b, next_key(mw), mr, dst, 0, kWrite).status, OHCA_CQE_MW_BIND_ERR);
    connect_pair();
    const uint32_t k = next_key(mw);
    ASSERT_EQ(bind(b, k, mr, dst, 4096, kWrite).status, OHCA_CQE_SUCCESS);
    // A bound type 2 window cannot be bound again.
    EXPECT_EQ(bind(b, next_key(k), mr, dst, 64, kWrite).status, OHCA_CQE_MW_BIND_ERR);
    // b died of that; the window stays bound through b's number (the QP
    // still exists), so requests at a new QP are refused.
    connect_pair();
    EXPECT_EQ(rdma(a, OHCA_WR_RDMA_WRITE, k, dst, 64), OHCA_CQE_REM_ACCESS_ERR);
    connect_pair();
    // Bound through the responder's QP, the window works.
    const uint32_t mw2 = alloc_mw(OHCA_MW_TYPE_2);
    const uint32_t k2 = next_key(mw2);
    ASSERT_EQ(bind(b, k2, mr, dst + 4096, 4096, kWrite).status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(rdma(a, OHCA_WR_RDMA_WRITE, k2, dst + 4096, 100), OHCA_CQE_SUCCESS);
    EXPECT_TRUE(landed(4096, 100));
    EXPECT_EQ(destroy_mr(mr), OHCA_STATUS_BAD_STATE); // windows are bound to it
    // LOCAL_INV of the window (any QP of the PD).
    SendReq inv;
    inv.opcode = OHCA_WR_LOCAL_INV;
    inv.rkey = k2;
    n.post_send(a, inv);
    ohca_cqe c = one(scq);
    EXPECT_EQ(c.status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(c.opcode, OHCA_CQE_LOCAL_INV);
    EXPECT_EQ(rdma(a, OHCA_WR_RDMA_WRITE, k2, dst + 4096, 100), OHCA_CQE_REM_ACCESS_ERR);
    connect_pair();
    // Invalidated twice: refused. A type 1 window's key: refused.
    n.post_send(a, inv);
    EXPECT_EQ(one(scq).status, OHCA_CQE_LOC_PROT_ERR);
    connect_pair();
    const uint32_t t1 = alloc_mw(OHCA_MW_TYPE_1);
    ASSERT_EQ(bind(a, next_key(t1), mr, dst, 64, kWrite).status, OHCA_CQE_SUCCESS);
    inv.rkey = next_key(t1);
    n.post_send(a, inv);
    c = one(scq);
    EXPECT_EQ(c.status, OHCA_CQE_LOC_PROT_ERR);
    EXPECT_EQ(c.vendor_err, OHCA_VERR_MR_STATE);
    connect_pair();
    // Free again: it may be bound anew, with a new key.
    const uint32_t k3 = next_key(k2);
    EXPECT_EQ(bind(b, k3, mr, dst, 64, kWrite).status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(rdma(a, OHCA_WR_RDMA_WRITE, k3, dst, 64), OHCA_CQE_SUCCESS);
    // Deallocating bound windows unbinds them; then the MR may go.
    EXPECT_EQ(dealloc(mw), OHCA_STATUS_OK);
    EXPECT_EQ(dealloc(mw2), OHCA_STATUS_OK);
    EXPECT_EQ(destroy_mr(mr), OHCA_STATUS_BAD_STATE); // t1 still bound
    EXPECT_EQ(dealloc(t1), OHCA_STATUS_OK);
    EXPECT_EQ(destroy_mr(mr), OHCA_STATUS_OK);
}

TEST_F(MwTest, SendWithInvalidateFreesTheWindow) {
    const uint32_t mw = alloc_mw(OHCA_MW_TYPE_2);
    const uint32_t k = next_key(mw);
    ASSERT_EQ(bind(b, k, mr, dst, 4096, kWrite).status, OHCA_CQE_SUCCESS);
    n.post_recv(b, 55, {});
    SendReq s;
    s.opcode = OHCA_WR_SEND_INV;
    s.rkey = k;
    n.post_send(a, s);
    EXPECT_EQ(one(scq).status, OHCA_CQE_SUCCESS);
    const auto rc = n.poll(rcq);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, OHCA_CQE_SUCCESS);
    EXPECT_NE(rc[0].flags & OHCA_CQE_F_INV, 0);
    EXPECT_EQ(rc[0].imm_data, k);
    EXPECT_EQ(rdma(a, OHCA_WR_RDMA_WRITE, k, dst, 16), OHCA_CQE_REM_ACCESS_ERR);
    EXPECT_EQ(destroy_mr(mr), OHCA_STATUS_OK); // unbound
}

TEST_F(MwTest, SendWithInvalidateFromAnotherQpIsRefused) {
    const uint32_t mw = alloc_mw(OHCA_MW_TYPE_2);
    const uint32_t k = next_key(mw);
    // Bound through a, but the SEND arrives at b.
    ASSERT_EQ(bind(a, k, mr, dst, 4096, kWrite).status, OHCA_CQE_SUCCESS);
    n.post_recv(b, 56, {});
    SendReq s;
    s.opcode = OHCA_WR_SEND_INV;
    s.rkey = k;
    n.post_send(a, s);
    n.process();
    const auto rc = n.poll(rcq);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, OHCA_CQE_REM_INV_REQ_ERR);
    EXPECT_EQ(destroy_mr(mr), OHCA_STATUS_BAD_STATE); // still bound
}

TEST_F(MwTest, DestroyingTheQpFreesItsType2Windows) {
    const uint32_t mw = alloc_mw(OHCA_MW_TYPE_2);
    ASSERT_EQ(bind(b, next_key(mw), mr, dst, 4096, kWrite).status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(destroy_mr(mr), OHCA_STATUS_BAD_STATE);
    ohca_handle_in in{};
    in.handle = b.qpn;
    ASSERT_EQ(n.cmd_in(OHCA_CMD_DESTROY_QP, in).status, OHCA_STATUS_OK);
    EXPECT_EQ(destroy_mr(mr), OHCA_STATUS_OK);
    EXPECT_EQ(dealloc(mw), OHCA_STATUS_OK);
}

TEST_F(MwTest, ResetForgetsWindows) {
    const uint32_t mw = alloc_mw(OHCA_MW_TYPE_1);
    ASSERT_EQ(bind(a, next_key(mw), mr, dst, 4096, kWrite).status, OHCA_CQE_SUCCESS);
    n.reset();
    EXPECT_EQ(dealloc(mw), OHCA_STATUS_BAD_HANDLE);
    const uint32_t pd2 = n.create_pd();
    ohca_alloc_mw_in in{};
    in.pdn = pd2;
    in.type = OHCA_MW_TYPE_2;
    ohca_create_out o{};
    EXPECT_EQ(n.cmd(OHCA_CMD_ALLOC_MW, &in, sizeof(in), &o, sizeof(o)).status, OHCA_STATUS_OK);
}

} // namespace
} // namespace ohca::test
