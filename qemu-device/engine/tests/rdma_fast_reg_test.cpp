// SPDX-License-Identifier: GPL-2.0-or-later
// Fast registration (fast_reg.cpp): CREATE_MR of a free MR with a page-list
// capacity, REG_MR / LOCAL_INV work requests, SEND with invalidate, key
// variants and the refusal of stale keys; over the device's own loopback.
#include "device/device.hpp"
#include "link/roce_packet.hpp"
#include "link/roce_v2.hpp"
#include "rdma_node.hpp"

#include <gtest/gtest.h>

#include <numeric>

namespace ohca::test {
namespace {

constexpr uint32_t kAllAccess =
    OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_READ;
constexpr uint32_t kPages = 4;

class FastRegTest : public ::testing::Test {
  protected:
    void SetUp() override {
        pd = n.create_pd();
        scq = n.create_cq(8);
        rcq = n.create_cq(8);
        src = n.alloc(1 << 16);
        std::vector<uint8_t> pattern(1 << 16);
        for (uint32_t i = 0; i < pattern.size(); ++i) {
            pattern[i] = static_cast<uint8_t>(i * 13 + 5);
        }
        EXPECT_TRUE(n.host.write(src, pattern.data(), pattern.size()));
        lsrc = n.reg_mr(pd, src, 1 << 16, kAllAccess);
        // Four pages of the target, deliberately out of order in memory.
        const uint64_t area = n.alloc(8 * 4096);
        for (uint32_t i = 0; i < kPages; ++i) {
            page[i] = area + 4096ull * (2 * (kPages - 1 - i));
        }
        pbl = n.alloc(4096);
        for (uint32_t i = 0; i < kPages; ++i) {
            n.host.put(pbl + 8ull * i, page[i]);
        }
        fr = create_fast_reg(pd, 8);
        connect_pair();
    }

    void connect_pair() {
        a = n.create_qp(pd, scq.cqn, rcq.cqn);
        b = n.create_qp(pd, scq.cqn, rcq.cqn);
        n.connect(a, b.qpn, n);
        n.connect(b, a.qpn, n);
    }

    CmdOutcome create_fast_reg_raw(const ohca_create_mr_in &in, uint32_t *key = nullptr) {
        ohca_create_out o{};
        CmdOutcome r = n.cmd(OHCA_CMD_CREATE_MR, &in, sizeof(in), &o, sizeof(o));
        if (key != nullptr) {
            *key = o.handle;
        }
        return r;
    }

    uint32_t create_fast_reg(uint32_t pdn, uint32_t capacity) {
        ohca_create_mr_in in{};
        in.pdn = pdn;
        in.flags = OHCA_MR_F_FAST_REG;
        in.pbl.npages = capacity;
        uint32_t key = 0;
        EXPECT_EQ(create_fast_reg_raw(in, &key).status, OHCA_STATUS_OK);
        return key;
    }

    // A REG_MR WQE on 'qp' giving the MR key 'key' over [iova, iova + len).
    void post_reg(QpInfo &qp, uint32_t key, uint64_t iova, uint64_t len, uint32_t npages,
                  uint32_t access = kAllAccess, uint64_t wr_id = 900, uint64_t list = 0) {
        ohca_reg_mr_wqe w{};
        w.wr_id = wr_id;
        w.opcode = OHCA_WR_REG_MR;
        w.flags = OHCA_WQE_SIGNALED;
        w.page_shift = 12;
        w.key = key;
        w.iova = iova;
        w.length = len;
        w.pbl_addr = list != 0 ? list : pbl;
        w.npages = npages;
        w.access = access;
        n.host.put(qp.sq + uint64_t{qp.sq_pi % qp.sq_size} * qp.sq_stride, w);
        ++qp.sq_pi;
        n.ring_sq(qp);
    }

    void post_simple(QpInfo &qp, uint8_t opcode, uint32_t rkey, uint64_t wr_id,
                     std::vector<ohca_sge> sges = {}, uint64_t remote = 0) {
        SendReq r;
        r.wr_id = wr_id;
        r.opcode = opcode;
        r.rkey = rkey;
        r.remote_addr = remote;
        r.sges = std::move(sges);
        n.post_send(qp, r);
    }

    ohca_cqe one(CqInfo &cq) {
        n.process();
        auto c = n.poll(cq);
        EXPECT_EQ(c.size(), 1u);
        return c.empty() ? ohca_cqe{} : c[0];
    }

    // RDMA WRITE of 'len' bytes of src to (key, va) from QP a: its status.
    uint8_t write_via(uint32_t key, uint64_t va, uint32_t len) {
        post_simple(a, OHCA_WR_RDMA_WRITE, key, 1, {{src, len, lsrc}}, va);
        return one(scq).status;
    }

    // The byte at offset 'off' of the registration (iova offset 'first').
    uint8_t target_byte(uint64_t off, uint64_t first) {
        const uint64_t at = first + off;
        return n.host.get<uint8_t>(page[at / 4096] + at % 4096);
    }

    RdmaNode n{1};
    uint32_t pd = 0;
    CqInfo scq, rcq;
    QpInfo a, b;
    uint64_t src = 0;
    uint32_t lsrc = 0;
    std::array<uint64_t, kPages> page{};
    uint64_t pbl = 0;
    uint32_t fr = 0;
};

TEST_F(FastRegTest, QueryDeviceReportsTheCapability) {
    ohca_query_device_out q{};
    ASSERT_EQ(n.cmd(OHCA_CMD_QUERY_DEVICE, nullptr, 0, &q, sizeof(q)).status, OHCA_STATUS_OK);
    EXPECT_EQ(q.dev_caps & OHCA_DEV_CAP_FAST_REG, uint32_t{OHCA_DEV_CAP_FAST_REG});
    EXPECT_EQ(q.max_fast_reg_page_list_len, uint32_t{OHCA_MAX_FAST_REG_PAGES});
}

TEST_F(FastRegTest, CreateChecksEveryField) {
    using In = ohca_create_mr_in;
    auto base = [&] {
        In in{};
        in.pdn = pd;
        in.flags = OHCA_MR_F_FAST_REG;
        in.pbl.npages = 16;
        return in;
    };
    struct Case {
        void (*mutate)(In &);
        uint8_t status;
        uint32_t syndrome;
    };
    const Case cases[] = {
        {[](In &i) { i.pbl.npages = 0; }, OHCA_STATUS_BAD_FIELD,
         offsetof(In, pbl) + offsetof(ohca_pbl, npages)},
        {[](In &i) { i.pbl.npages = OHCA_MAX_FAST_REG_PAGES + 1; }, OHCA_STATUS_BAD_FIELD,
         offsetof(In, pbl) + offsetof(ohca_pbl, npages)},
        {[](In &i) { i.access = OHCA_ACCESS_REMOTE_READ; }, OHCA_STATUS_BAD_FIELD,
         offsetof(In, access)},
        {[](In &i) { i.iova = 4096; }, OHCA_STATUS_BAD_FIELD, offsetof(In, iova)},
        {[](In &i) { i.length = 4096; }, OHCA_STATUS_BAD_FIELD, offsetof(In, length)},
        {[](In &i) { i.pbl.addr = 0x100000; }, OHCA_STATUS_BAD_FIELD,
         offsetof(In, pbl) + offsetof(ohca_pbl, addr)},
        {[](In &i) { i.pbl.page_shift = 12; }, OHCA_STATUS_BAD_FIELD,
         offsetof(In, pbl) + offsetof(ohca_pbl, page_shift)},
        {[](In &i) { i.pbl.levels = 1; }, OHCA_STATUS_BAD_FIELD,
         offsetof(In, pbl) + offsetof(ohca_pbl, levels)},
        {[](In &i) { i.flags = OHCA_MR_F_FAST_REG | OHCA_MR_F_PHYSICAL; }, OHCA_STATUS_BAD_FIELD,
         offsetof(In, flags)},
    };
    for (const Case &c : cases) {
        In in = base();
        c.mutate(in);
        const CmdOutcome r = create_fast_reg_raw(in);
        EXPECT_EQ(r.status, c.status);
        EXPECT_EQ(r.syndrome, c.syndrome);
    }
    In at_limit = base();
    at_limit.pbl.npages = OHCA_MAX_FAST_REG_PAGES;
    EXPECT_EQ(create_fast_reg_raw(at_limit).status, OHCA_STATUS_OK);
}

TEST_F(FastRegTest, FreeMrRefusesRemoteAccess) {
    EXPECT_EQ(write_via(fr, 0, 16), OHCA_CQE_REM_ACCESS_ERR);
}

TEST_F(FastRegTest, RegisterThenWriteAndReadThroughScatteredPages) {
    const uint32_t key = (fr & ~0xffu) | ((fr + 1) & 0xff); // new variant
    const uint64_t iova = 0x7f0000000123;                   // offset 0x123 into page 0
    const uint64_t len = kPages * 4096 - 0x123;
    post_reg(b, key, iova, len, kPages);
    const ohca_cqe c = one(scq);
    EXPECT_EQ(c.status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(c.opcode, OHCA_CQE_REG_MR);
    EXPECT_EQ(c.wr_id, 900u);

    // The creation key no longer works; the new one spans all four pages.
    EXPECT_EQ(write_via(fr, iova, 16), OHCA_CQE_REM_ACCESS_ERR);
    connect_pair();
    ASSERT_EQ(write_via(key, iova + 100, 3 * 4096), OHCA_CQE_SUCCESS);
    for (uint64_t off : {uint64_t{0}, uint64_t{4095}, uint64_t{4096}, uint64_t{3 * 4096 - 1}}) {
        EXPECT_EQ(target_byte(100 + off, 0x123), n.host.get<uint8_t>(src + off)) << off;
    }
    // READ it back into the tail of src.
    post_simple(a, OHCA_WR_RDMA_READ, key, 2, {{src + 0x8000, 5000, lsrc}}, iova + 100);
    EXPECT_EQ(one(scq).status, OHCA_CQE_SUCCESS);
    for (uint64_t off : {uint64_t{0}, uint64_t{4999}}) {
        EXPECT_EQ(n.host.get<uint8_t>(src + 0x8000 + off), n.host.get<uint8_t>(src + off));
    }
    // Past the registered length: refused.
    EXPECT_EQ(write_via(key, iova + len - 8, 16), OHCA_CQE_REM_ACCESS_ERR);
}

TEST_F(FastRegTest, LocalInvalidateMakesTheKeyStale) {
    const uint32_t k1 = (fr & ~0xffu) | 0x41;
    post_reg(b, k1, 0x10000, 4096, 1);
    EXPECT_EQ(one(scq).status, OHCA_CQE_SUCCESS);
    ASSERT_EQ(write_via(k1, 0x10000, 64), OHCA_CQE_SUCCESS);

    post_simple(b, OHCA_WR_LOCAL_INV, k1, 7);
    const ohca_cqe inv = one(scq);
    EXPECT_EQ(inv.status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(inv.opcode, OHCA_CQE_LOCAL_INV);
    EXPECT_EQ(write_via(k1, 0x10000, 64), OHCA_CQE_REM_ACCESS_ERR);

    // Registered again with the next variant: the old key stays refused.
    connect_pair();
    const uint32_t k2 = (fr & ~0xffu) | 0x42;
    post_reg(b, k2, 0x10000, 4096, 1);
    EXPECT_EQ(one(scq).status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(write_via(k2, 0x10000, 64), OHCA_CQE_SUCCESS);
    EXPECT_EQ(write_via(k1, 0x10000, 64), OHCA_CQE_REM_ACCESS_ERR);
}

TEST_F(FastRegTest, LocalKeyOfAFreeMrIsAProtectionError) {
    const uint32_t k = (fr & ~0xffu) | 0x10;
    post_reg(b, k, page[0], 4096, 1);
    EXPECT_EQ(one(scq).status, OHCA_CQE_SUCCESS);
    post_simple(b, OHCA_WR_LOCAL_INV, k, 3);
    EXPECT_EQ(one(scq).status, OHCA_CQE_SUCCESS);
    post_simple(a, OHCA_WR_SEND, 0, 4, {{page[0], 8, k}});
    const ohca_cqe c = one(scq);
    EXPECT_EQ(c.status, OHCA_CQE_LOC_PROT_ERR);
    EXPECT_EQ(c.vendor_err, OHCA_VERR_BAD_LKEY);
}

TEST_F(FastRegTest, RegisterChecks) {
    struct Case {
        const char *what;
        std::function<void()> post;
        uint8_t status;
        uint8_t verr;
    };
    const uint32_t k = (fr & ~0xffu) | 0x77;
    const uint32_t other_pd = n.create_pd();
    const uint32_t fr_other = create_fast_reg(other_pd, 4);
    const uint32_t small = create_fast_reg(pd, 2);
    const Case cases[] = {
        {"more pages than the capacity", [&] { post_reg(b, (small & ~0xffu) | 1, 0, 3 * 4096, 3); },
         OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_REG_MR},
        {"pages do not cover the length", [&] { post_reg(b, k, 0x800, 4096, 1); },
         OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_REG_MR},
        {"zero length", [&] { post_reg(b, k, 0, 0, 1); }, OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_REG_MR},
        {"remote write without local write",
         [&] { post_reg(b, k, 0, 4096, 1, OHCA_ACCESS_REMOTE_WRITE); }, OHCA_CQE_LOC_QP_OP_ERR,
         OHCA_VERR_REG_MR},
        {"unaligned page",
         [&] {
             const uint64_t list = n.alloc(4096);
             n.host.put(list, page[0] + 8);
             post_reg(b, k, 0, 4096, 1, kAllAccess, 900, list);
         },
         OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_REG_MR},
        {"list outside memory", [&] { post_reg(b, k, 0, 4096, 1, kAllAccess, 900, 0x7ff000000); },
         OHCA_CQE_LOC_PROT_ERR, OHCA_VERR_DMA},
        {"MR of another PD", [&] { post_reg(b, (fr_other & ~0xffu) | 1, 0, 4096, 1); },
         OHCA_CQE_LOC_PROT_ERR, OHCA_VERR_LKEY_PD},
        {"not a fast-registration MR", [&] { post_reg(b, lsrc, 0, 4096, 1); },
         OHCA_CQE_LOC_PROT_ERR, OHCA_VERR_MR_STATE},
        {"no such MR", [&] { post_reg(b, 0x7ff00, 0, 4096, 1); }, OHCA_CQE_LOC_PROT_ERR,
         OHCA_VERR_BAD_LKEY},
        {"local invalidate of a stale key", [&] { post_simple(b, OHCA_WR_LOCAL_INV, k ^ 1, 9); },
         OHCA_CQE_LOC_PROT_ERR, OHCA_VERR_MR_STATE},
        {"local invalidate of an ordinary MR", [&] { post_simple(b, OHCA_WR_LOCAL_INV, lsrc, 9); },
         OHCA_CQE_LOC_PROT_ERR, OHCA_VERR_MR_STATE},
    };
    for (const Case &c : cases) {
        c.post();
        const ohca_cqe cqe = one(scq);
        EXPECT_EQ(cqe.status, c.status) << c.what;
        EXPECT_EQ(cqe.vendor_err, c.verr) << c.what;
        (void)n.poll(rcq);
        connect_pair();
    }
    // Valid, then registering a valid MR again fails until invalidated.
    post_reg(b, k, 0, 4096, 1);
    EXPECT_EQ(one(scq).status, OHCA_CQE_SUCCESS);
    post_reg(b, k + 1, 0, 4096, 1);
    const ohca_cqe again = one(scq);
    EXPECT_EQ(again.status, OHCA_CQE_LOC_PROT_ERR);
    EXPECT_EQ(again.vendor_err, OHCA_VERR_MR_STATE);
}

TEST_F(FastRegTest, UserQpsCannotRegister) {
    ohca_alloc_uar_out u{};
    ASSERT_EQ(n.cmd(OHCA_CMD_ALLOC_UAR, nullptr, 0, &u, sizeof(u)).status, OHCA_STATUS_OK);
    CqInfo ucq = n.create_cq(4, 0, u.uar_index);
    QpInfo uq = n.create_qp(pd, ucq.cqn, ucq.cqn, 4, 4, u.uar_index);
    n.connect(uq, b.qpn, n);
    post_reg(uq, (fr & ~0xffu) | 5, 0, 4096, 1);
    const ohca_cqe c = one(ucq);
    EXPECT_EQ(c.status, OHCA_CQE_LOC_QP_OP_ERR);
    EXPECT_EQ(c.vendor_err, OHCA_VERR_BAD_WQE);
}

TEST_F(FastRegTest, SendWithInvalidateFreesTheMr) {
    for (uint8_t mtu : {uint8_t{1}, uint8_t{3}}) { // 1000 bytes: 4 packets, then 1
        a = n.create_qp(pd, scq.cqn, rcq.cqn);
        b = n.create_qp(pd, scq.cqn, rcq.cqn);
        n.connect(a, b.qpn, n, mtu);
        n.connect(b, a.qpn, n, mtu);
        const uint32_t k = (fr & ~0xffu) | (0x20 + mtu);
        post_reg(b, k, 0x4000, 4096, 1);
        EXPECT_EQ(one(scq).status, OHCA_CQE_SUCCESS);
        const uint64_t rbuf = n.alloc(4096);
        const uint32_t lr = n.reg_mr(pd, rbuf, 4096, kAllAccess);
        n.post_recv(b, 55, {{rbuf, 4096, lr}});
        post_simple(a, OHCA_WR_SEND_INV, k, 56, {{src, 1000, lsrc}});
        n.process();
        auto rc = n.poll(rcq);
        auto sc = n.poll(scq);
        ASSERT_EQ(rc.size(), 1u);
        ASSERT_EQ(sc.size(), 1u);
        EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
        EXPECT_EQ(sc[0].opcode, OHCA_CQE_SEND);
        EXPECT_EQ(rc[0].status, OHCA_CQE_SUCCESS);
        EXPECT_EQ(rc[0].opcode, OHCA_CQE_RECV);
        EXPECT_EQ(rc[0].byte_len, 1000u);
        EXPECT_EQ(rc[0].flags, uint8_t{OHCA_CQE_F_INV});
        EXPECT_EQ(rc[0].imm_data, k);
        EXPECT_EQ(n.host.get<uint8_t>(rbuf + 999), n.host.get<uint8_t>(src + 999));
        EXPECT_EQ(write_via(k, 0x4000, 8), OHCA_CQE_REM_ACCESS_ERR);
    }
}

TEST_F(FastRegTest, SendWithInvalidateOfABadKeyIsClassJ) {
    const uint64_t rbuf = n.alloc(4096);
    const uint32_t lr = n.reg_mr(pd, rbuf, 4096, kAllAccess);
    n.post_recv(b, 55, {{rbuf, 4096, lr}});
    post_simple(a, OHCA_WR_SEND_INV, lr, 56, {{src, 10, lsrc}}); // not fast-reg
    n.process();
    auto rc = n.poll(rcq);
    auto sc = n.poll(scq);
    ASSERT_EQ(rc.size(), 1u);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(rc[0].status, OHCA_CQE_REM_INV_REQ_ERR);
    EXPECT_EQ(rc[0].vendor_err, OHCA_VERR_MR_STATE);
    EXPECT_EQ(sc[0].status, OHCA_CQE_REM_INV_REQ_ERR);
    EXPECT_EQ(n.query(b.qpn).qp_state, OHCA_QPS_ERR);
}

TEST_F(FastRegTest, LocalOperationsCompleteInOrder) {
    const uint64_t rbuf = n.alloc(4096);
    const uint32_t lr = n.reg_mr(pd, rbuf, 4096, kAllAccess);
    const uint32_t k = (fr & ~0xffu) | 0x31;
    // WRITE (unsignaled), REG_MR, SEND, LOCAL_INV: four completions in SQ
    // order, the unsignaled WRITE retired by the REG_MR's.
    SendReq w;
    w.opcode = OHCA_WR_RDMA_WRITE;
    w.flags = 0;
    w.rkey = lr;
    w.remote_addr = rbuf;
    w.sges = {{src, 3000, lsrc}};
    n.post_send(a, w, false);
    post_reg(a, k, 0, 4096, 1, kAllAccess, 901);
    n.post_recv(b, 1, {{rbuf, 4096, lr}});
    post_simple(a, OHCA_WR_SEND, 0, 902, {{src, 10, lsrc}});
    post_simple(a, OHCA_WR_LOCAL_INV, k, 903);
    n.process();
    auto sc = n.poll(scq);
    ASSERT_EQ(sc.size(), 3u);
    EXPECT_EQ(sc[0].wr_id, 901u);
    EXPECT_EQ(sc[0].opcode, OHCA_CQE_REG_MR);
    EXPECT_EQ(sc[0].wqe_index, 1u);
    EXPECT_EQ(sc[1].wr_id, 902u);
    EXPECT_EQ(sc[2].wr_id, 903u);
    EXPECT_EQ(sc[2].opcode, OHCA_CQE_LOCAL_INV);
    for (const auto &c : sc) {
        EXPECT_EQ(c.status, OHCA_CQE_SUCCESS);
    }
}

TEST_F(FastRegTest, DestroyUsesTheCreationHandle) {
    const uint32_t k = (fr & ~0xffu) | ((fr + 9) & 0xff);
    post_reg(b, k, 0, 4096, 1);
    EXPECT_EQ(one(scq).status, OHCA_CQE_SUCCESS);
    ohca_handle_in cur{k, 0};
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_MR, cur).status, OHCA_STATUS_BAD_HANDLE);
    ohca_handle_in h{fr, 0};
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_MR, h).status, OHCA_STATUS_OK);
    // The index comes back with a tag past the newest variant.
    const uint32_t again = create_fast_reg(pd, 1);
    EXPECT_EQ(OHCA_KEY_INDEX(again), OHCA_KEY_INDEX(fr));
    EXPECT_EQ(OHCA_KEY_TAG(again), (OHCA_KEY_TAG(k) + 1) & 0xff);
}

TEST(RocePacketTest, SendWithInvalidateCarriesTheIeth) {
    PacketPath path;
    PacketFields f;
    f.bth.opcode = rc::kSendOnlyInv;
    f.ieth = 0x12345678;
    const std::vector<uint8_t> payload(5, 0xab);
    const std::vector<uint8_t> frame = build_roce_frame(path, f, payload);
    ParsedPacket p;
    ASSERT_EQ(parse_roce_frame(frame, p), ParseError::None);
    ASSERT_TRUE(p.fields.ieth.has_value());
    EXPECT_EQ(*p.fields.ieth, 0x12345678u);
    EXPECT_FALSE(p.fields.imm.has_value());
    EXPECT_EQ(p.payload.size(), 5u);
    // The IETH follows the BTH (Ethernet 14 + IPv4 20 + UDP 8 + BTH 12).
    EXPECT_EQ(frame[54], 0x12);
    EXPECT_EQ(frame[57], 0x78);
    // Too short for its IETH: malformed.
    f.bth.opcode = rc::kSendLastInv;
    f.ieth.reset();
    EXPECT_EQ(parse_roce_frame(build_roce_frame(path, f, {}), p), ParseError::Malformed);
}

} // namespace
} // namespace ohca::test
