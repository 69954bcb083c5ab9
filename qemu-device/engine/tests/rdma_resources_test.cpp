// SPDX-License-Identifier: GPL-2.0-or-later
// RDMA resource commands: validation, keys, busy objects, MODIFY/QUERY_QP,
// CQ doorbells, arming and completion EQs.
#include "rdma_node.hpp"

#include <gtest/gtest.h>

namespace ohca::test {
namespace {

class ResourcesTest : public ::testing::Test {
  protected:
    RdmaNode n{1};
};

TEST_F(ResourcesTest, QueryDeviceLimitsMatchEnforcement) {
    ohca_query_device_out d{};
    ASSERT_EQ(n.cmd(OHCA_CMD_QUERY_DEVICE, nullptr, 0, &d, sizeof(d)).status, OHCA_STATUS_OK);
    EXPECT_EQ(d.max_qp_wr, 4096u); // CREATE_QP accepts log sizes up to 12
    const uint32_t pd = n.create_pd();
    const CqInfo cq = n.create_cq();
    ohca_create_qp_in in{};
    in.type = OHCA_QPT_RC;
    in.sq_log_size = 13;
    in.sq_log_stride = 7;
    in.rq_log_stride = 5;
    in.pdn = pd;
    in.send_cqn = cq.cqn;
    in.recv_cqn = cq.cqn;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_QP, in).status, OHCA_STATUS_BAD_FIELD);
    in.sq_log_size = 1;
    in.max_inline = d.max_inline_data + 1;
    in.sq_log_stride = 12;
    const auto r = n.cmd_in(OHCA_CMD_CREATE_QP, in);
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(r.syndrome, offsetof(ohca_create_qp_in, max_inline));
}

TEST_F(ResourcesTest, MrValidationAndKeys) {
    const uint32_t pd = n.create_pd();
    const uint64_t buf = n.alloc(8192);
    ohca_create_mr_in in{};
    in.pdn = pd + 5;
    in.access = OHCA_ACCESS_LOCAL_WRITE;
    in.iova = buf;
    in.length = 8192;
    in.pbl = n.make_pbl(buf, 8192);
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_MR, in).status, OHCA_STATUS_BAD_HANDLE);
    in.pdn = pd;
    in.access = OHCA_ACCESS_REMOTE_WRITE; // without LOCAL_WRITE
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_MR, in).syndrome, offsetof(ohca_create_mr_in, access));
    in.access = OHCA_ACCESS_LOCAL_WRITE;
    in.length = 8193; // beyond the pages
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_MR, in).status, OHCA_STATUS_BAD_FIELD);
    in.length = 0;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_MR, in).status, OHCA_STATUS_BAD_FIELD);
    in.length = 8192;
    in.flags = 16; // unknown (2 is OHCA_MR_F_FAST_REG, 4 and 8 ODP)
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_MR, in).syndrome, offsetof(ohca_create_mr_in, flags));
    in.flags = OHCA_MR_F_PHYSICAL;
    in.access = OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_READ; // physical: local only
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_MR, in).status, OHCA_STATUS_BAD_FIELD);
    in.flags = 0;
    in.access = OHCA_ACCESS_LOCAL_WRITE;

    ohca_create_out o1{}, o2{};
    ASSERT_EQ(n.cmd(OHCA_CMD_CREATE_MR, &in, sizeof(in), &o1, sizeof(o1)).status, OHCA_STATUS_OK);
    EXPECT_EQ(o1.handle, o1.handle2);
    EXPECT_NE(OHCA_KEY_INDEX(o1.handle), 0u);
    ohca_handle_in h{o1.handle, 0};
    ASSERT_EQ(n.cmd_in(OHCA_CMD_DESTROY_MR, h).status, OHCA_STATUS_OK);
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_MR, h).status, OHCA_STATUS_BAD_HANDLE);
    // The index is reused with another tag: the stale key misses.
    ASSERT_EQ(n.cmd(OHCA_CMD_CREATE_MR, &in, sizeof(in), &o2, sizeof(o2)).status, OHCA_STATUS_OK);
    EXPECT_EQ(OHCA_KEY_INDEX(o2.handle), OHCA_KEY_INDEX(o1.handle));
    EXPECT_NE(OHCA_KEY_TAG(o2.handle), OHCA_KEY_TAG(o1.handle));
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_MR, h).status, OHCA_STATUS_BAD_HANDLE);
    // A PD with an MR is busy.
    ohca_handle_in hp{pd, 0};
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_PD, hp).status, OHCA_STATUS_BAD_STATE);
    h.handle = o2.handle;
    ASSERT_EQ(n.cmd_in(OHCA_CMD_DESTROY_MR, h).status, OHCA_STATUS_OK);
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_PD, hp).status, OHCA_STATUS_OK);
}

TEST_F(ResourcesTest, BusyObjectsAndUars) {
    ohca_alloc_uar_out u{};
    ASSERT_EQ(n.cmd(OHCA_CMD_ALLOC_UAR, nullptr, 0, &u, sizeof(u)).status, OHCA_STATUS_OK);
    ohca_create_eq_in eq{};
    eq.base = n.alloc(16 * 64);
    eq.log_size = 6;
    eq.msix_vector = 3;
    ohca_create_out eqo{};
    ASSERT_EQ(n.cmd(OHCA_CMD_CREATE_EQ, &eq, sizeof(eq), &eqo, sizeof(eqo)).status, OHCA_STATUS_OK);
    EXPECT_EQ(eqo.handle, 1u);
    eq.msix_vector = 1; // the Ethernet vector
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_EQ, eq).status, OHCA_STATUS_BAD_FIELD);
    const uint32_t pd = n.create_pd();
    const CqInfo cq = n.create_cq(4, eqo.handle, u.uar_index);
    const QpInfo qp = n.create_qp(pd, cq.cqn, cq.cqn, 4, 4, u.uar_index);
    EXPECT_EQ(qp.qpn, 2u);
    ohca_handle_in h{eqo.handle, 0};
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_EQ, h).status, OHCA_STATUS_BAD_STATE);
    h.handle = cq.cqn;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_CQ, h).status, OHCA_STATUS_BAD_STATE);
    h.handle = pd;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_PD, h).status, OHCA_STATUS_BAD_STATE);
    ohca_dealloc_uar_in du{u.uar_index, 0};
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DEALLOC_UAR, du).status, OHCA_STATUS_BAD_STATE);
    h.handle = qp.qpn;
    ASSERT_EQ(n.cmd_in(OHCA_CMD_DESTROY_QP, h).status, OHCA_STATUS_OK);
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_QP, h).status, OHCA_STATUS_BAD_HANDLE);
    h.handle = cq.cqn;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_CQ, h).status, OHCA_STATUS_OK);
    h.handle = eqo.handle;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_EQ, h).status, OHCA_STATUS_OK);
    h.handle = pd;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_PD, h).status, OHCA_STATUS_OK);
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DEALLOC_UAR, du).status, OHCA_STATUS_OK);
}

TEST_F(ResourcesTest, DoorbellsOnlyFromTheOwningPage) {
    ohca_alloc_uar_out u{};
    ASSERT_EQ(n.cmd(OHCA_CMD_ALLOC_UAR, nullptr, 0, &u, sizeof(u)).status, OHCA_STATUS_OK);
    const uint32_t pd = n.create_pd();
    CqInfo cq = n.create_cq(4, 0, u.uar_index);
    QpInfo qp = n.create_qp(pd, cq.cqn, cq.cqn, 4, 4, u.uar_index);
    n.connect(qp, qp.qpn, n);
    const uint64_t before = n.stats().db_errors;
    ohca_engine_db_write(n.e, 0, OHCA_DB_RQ, OHCA_DB_VALUE(qp.qpn, 1), 8); // kernel page
    ohca_engine_db_write(n.e, 0, OHCA_DB_CQ, OHCA_DB_VALUE(cq.cqn, 0), 8);
    ohca_engine_db_write(n.e, u.uar_index, OHCA_DB_RQ, OHCA_DB_VALUE(qp.qpn, 17), 8); // > size
    ohca_engine_db_write(n.e, u.uar_index, OHCA_DB_CQ, OHCA_DB_VALUE(cq.cqn, 1), 8);  // > PI
    EXPECT_EQ(n.stats().db_errors, before + 4);
    ohca_engine_db_write(n.e, u.uar_index, OHCA_DB_RQ, OHCA_DB_VALUE(qp.qpn, 16), 8);
    ohca_engine_db_write(n.e, u.uar_index, OHCA_DB_RQ, OHCA_DB_VALUE(qp.qpn, 15), 8); // back
    EXPECT_EQ(n.stats().db_errors, before + 5);
}

TEST_F(ResourcesTest, ModifyAndQueryQp) {
    const uint32_t pd = n.create_pd();
    const CqInfo cq = n.create_cq();
    const QpInfo qp = n.create_qp(pd, cq.cqn, cq.cqn);
    ohca_qp_attr a{};
    a.qp_state = OHCA_QPS_RTR; // RESET -> RTR does not exist
    auto r = n.modify(qp.qpn, OHCA_QP_STATE, a);
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(r.syndrome, offsetof(ohca_modify_qp_in, attr_mask));
    a.qp_state = OHCA_QPS_INIT; // missing required attributes
    EXPECT_EQ(n.modify(qp.qpn, OHCA_QP_STATE | OHCA_QP_PORT, a).status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(n.modify(qp.qpn, OHCA_QP_STATE | 1u << 2, a).status, OHCA_STATUS_BAD_FIELD);
    a.access_flags = 0x100;
    r = n.modify(qp.qpn, OHCA_QP_STATE | OHCA_QP_PKEY_INDEX | OHCA_QP_PORT | OHCA_QP_ACCESS_FLAGS,
                 a);
    EXPECT_EQ(r.syndrome, offsetof(ohca_modify_qp_in, attr) + offsetof(ohca_qp_attr, access_flags));
    a.access_flags = OHCA_ACCESS_REMOTE_WRITE;
    a.cur_qp_state = OHCA_QPS_INIT; // wrong current state
    EXPECT_EQ(n.modify(qp.qpn,
                       OHCA_QP_STATE | OHCA_QP_CUR_STATE | OHCA_QP_PKEY_INDEX | OHCA_QP_PORT |
                           OHCA_QP_ACCESS_FLAGS,
                       a)
                  .status,
              OHCA_STATUS_BAD_FIELD);
    ASSERT_EQ(n.modify(qp.qpn,
                       OHCA_QP_STATE | OHCA_QP_PKEY_INDEX | OHCA_QP_PORT | OHCA_QP_ACCESS_FLAGS, a)
                  .status,
              OHCA_STATUS_OK);
    // INIT -> RTR with a bad path MTU, then a bad source GID index.
    a = {};
    a.qp_state = OHCA_QPS_RTR;
    a.path_mtu = 6;
    a.dest_qpn = 9;
    a.rq_psn = 0x1234;
    a.av.network_type = OHCA_NET_IPV4;
    std::copy(n.gid.begin(), n.gid.end(), a.av.dgid);
    const uint32_t rtr = OHCA_QP_STATE | OHCA_QP_AV | OHCA_QP_PATH_MTU | OHCA_QP_DEST_QPN |
                         OHCA_QP_RQ_PSN | OHCA_QP_MAX_DEST_RD_ATOMIC | OHCA_QP_MIN_RNR_TIMER;
    EXPECT_EQ(n.modify(qp.qpn, rtr, a).syndrome,
              offsetof(ohca_modify_qp_in, attr) + offsetof(ohca_qp_attr, path_mtu));
    a.path_mtu = 4;
    a.av.sgid_index = 3;
    EXPECT_EQ(n.modify(qp.qpn, rtr, a).status, OHCA_STATUS_BAD_FIELD);
    a.av.sgid_index = 0;
    a.av.network_type = OHCA_NET_IPV6; // the GID is IPv4
    EXPECT_EQ(n.modify(qp.qpn, rtr, a).status, OHCA_STATUS_BAD_FIELD);
    a.av.network_type = OHCA_NET_IPV4;
    a.rq_psn = 0x1000000;
    EXPECT_EQ(n.modify(qp.qpn, rtr, a).status, OHCA_STATUS_BAD_FIELD);
    a.rq_psn = 0x1234;
    ASSERT_EQ(n.modify(qp.qpn, rtr, a).status, OHCA_STATUS_OK);
    auto q = n.query(qp.qpn);
    EXPECT_EQ(q.qp_state, OHCA_QPS_RTR);
    EXPECT_EQ(q.path_mtu, 4);
    EXPECT_EQ(q.dest_qpn, 9u);
    EXPECT_EQ(q.rq_psn, 0x1234u);
    EXPECT_EQ(q.access_flags, uint32_t{OHCA_ACCESS_REMOTE_WRITE});
    EXPECT_EQ(q.av.dgid[15], n.gid[15]);
    // RTR -> RTS, RTS -> SQD (drained at once), SQD -> RTS, -> ERR, -> RESET.
    a = {};
    a.qp_state = OHCA_QPS_RTS;
    a.sq_psn = 77;
    a.timeout = 32;
    const uint32_t rts = OHCA_QP_STATE | OHCA_QP_SQ_PSN | OHCA_QP_TIMEOUT | OHCA_QP_RETRY_CNT |
                         OHCA_QP_RNR_RETRY | OHCA_QP_MAX_QP_RD_ATOMIC;
    EXPECT_EQ(n.modify(qp.qpn, rts, a).status, OHCA_STATUS_BAD_FIELD);
    a.timeout = 14;
    ASSERT_EQ(n.modify(qp.qpn, rts, a).status, OHCA_STATUS_OK);
    EXPECT_EQ(n.query(qp.qpn).sq_psn, 77u);
    a = {};
    a.qp_state = OHCA_QPS_SQD;
    ASSERT_EQ(n.modify(qp.qpn, OHCA_QP_STATE, a).status, OHCA_STATUS_OK);
    n.process();
    auto ev = n.events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].type, OHCA_EQE_QP_EVENT);
    EXPECT_EQ(ev[0].code, OHCA_QP_EV_SQ_DRAINED);
    EXPECT_EQ(ev[0].param0, qp.qpn);
    a.qp_state = OHCA_QPS_RTS;
    ASSERT_EQ(n.modify(qp.qpn, OHCA_QP_STATE, a).status, OHCA_STATUS_OK);
    a.qp_state = OHCA_QPS_ERR;
    ASSERT_EQ(n.modify(qp.qpn, OHCA_QP_STATE, a).status, OHCA_STATUS_OK);
    EXPECT_EQ(n.query(qp.qpn).qp_state, OHCA_QPS_ERR);
    a.qp_state = OHCA_QPS_RTS;
    EXPECT_EQ(n.modify(qp.qpn, OHCA_QP_STATE, a).status, OHCA_STATUS_BAD_FIELD);
    a.qp_state = OHCA_QPS_RESET;
    ASSERT_EQ(n.modify(qp.qpn, OHCA_QP_STATE, a).status, OHCA_STATUS_OK);
    EXPECT_EQ(n.query(qp.qpn).qp_state, OHCA_QPS_RESET);
    ohca_handle_in h{999, 0};
    EXPECT_EQ(n.cmd_in(OHCA_CMD_MODIFY_QP, ohca_modify_qp_in{999, 0, {}, 0, {}}).status,
              OHCA_STATUS_BAD_HANDLE);
    (void)h;
}

TEST_F(ResourcesTest, CqArmingAndCompletionEq) {
    const uint64_t eq_base = n.alloc(16 * 4);
    ohca_create_eq_in eq{};
    eq.base = eq_base;
    eq.log_size = 2;
    eq.msix_vector = 2;
    ohca_create_out eqo{};
    ASSERT_EQ(n.cmd(OHCA_CMD_CREATE_EQ, &eq, sizeof(eq), &eqo, sizeof(eqo)).status, OHCA_STATUS_OK);
    const uint32_t pd = n.create_pd();
    CqInfo cq = n.create_cq(4, eqo.handle);
    CqInfo cq2 = n.create_cq(4);
    QpInfo qp = n.create_qp(pd, cq.cqn, cq.cqn);
    QpInfo peer = n.create_qp(pd, cq2.cqn, cq2.cqn);
    n.connect(qp, peer.qpn, n);
    n.connect(peer, qp.qpn, n);
    ohca_engine_reg_write(n.e, OHCA_REG_EQ_DB(eqo.handle), OHCA_EQ_DB_ARM, 4);
    n.cq_doorbell(cq, OHCA_DB_CQ_ARM_NEXT);
    n.host.irqs.clear();
    SendReq r;
    r.opcode = OHCA_WR_RDMA_WRITE;
    r.flags = OHCA_WQE_SIGNALED;
    r.inline_data = {1};
    r.remote_addr = 0;
    r.rkey = 0;
    n.post_send(qp, r); // zero-length RDMA WRITE needs no key; 1 byte does
    n.process();
    auto c = n.poll(cq);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, OHCA_CQE_REM_ACCESS_ERR);
    EXPECT_EQ(c[0].vendor_err, OHCA_VERR_REMOTE_NAK);
    const auto e = n.host.get<ohca_eqe>(eq_base);
    EXPECT_EQ(e.type, OHCA_EQE_CQ_COMPLETION);
    EXPECT_EQ(e.flags, OHCA_EQE_OWNER);
    EXPECT_EQ(e.param0, cq.cqn);
    EXPECT_NE(std::find(n.host.irqs.begin(), n.host.irqs.end(), 2u), n.host.irqs.end());
    // Once per arming.
    EXPECT_EQ(n.host.get<ohca_eqe>(eq_base + 16).flags, 0);
}

TEST_F(ResourcesTest, CqOverrunReportsCqError) {
    const uint32_t pd = n.create_pd();
    CqInfo cq = n.create_cq(1); // 2 entries
    QpInfo qp = n.create_qp(pd, cq.cqn, cq.cqn);
    n.connect(qp, qp.qpn, n);
    for (int i = 0; i < 3; ++i) {
        SendReq r;
        r.opcode = OHCA_WR_RDMA_WRITE; // zero length
        n.post_send(qp, r);
    }
    n.process();
    auto ev = n.events();
    ASSERT_FALSE(ev.empty());
    EXPECT_EQ(ev.back().type, OHCA_EQE_CQ_ERROR);
    EXPECT_EQ(ev.back().code, OHCA_CQ_ERR_OVERRUN);
    EXPECT_EQ(ev.back().param0, cq.cqn);
}

} // namespace
} // namespace ohca::test
