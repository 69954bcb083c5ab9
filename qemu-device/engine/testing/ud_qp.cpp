// SPDX-License-Identifier: GPL-2.0-or-later
// A UD QP for the tests (ud_qp.hpp).
#include "ud_qp.hpp"

#include "check.hpp"

#include <algorithm>

namespace ohca::test {

namespace {
// QEMU's default doorbell-budget (hw/ohca.c).
constexpr unsigned int kDoorbellBudget = 256;
} // namespace

CmdOutcome create_ud(RdmaNode &n, UdQp &u, uint8_t type, uint32_t uar) {
    u.pd = n.create_pd();
    u.scq = n.create_cq(8);
    u.rcq = n.create_cq(8);
    u.q.sq_size = 64;
    u.q.rq_size = 64;
    u.q.sq_stride = 256;
    u.q.rq_stride = 64;
    u.q.uar = uar;
    u.q.sq = n.alloc(uint64_t{u.q.sq_size} * u.q.sq_stride);
    u.q.rq = n.alloc(uint64_t{u.q.rq_size} * u.q.rq_stride);
    u.buf = n.alloc(1 << 16);
    u.key = n.reg_mr(u.pd, u.buf, 1 << 16, OHCA_ACCESS_LOCAL_WRITE);
    ohca_create_qp_in in{};
    in.type = type;
    in.sq_log_size = 6;
    in.rq_log_size = 6;
    in.sq_log_stride = 8;
    in.rq_log_stride = 6;
    in.pdn = u.pd;
    in.send_cqn = u.scq.cqn;
    in.recv_cqn = u.rcq.cqn;
    in.uar_index = uar;
    in.max_inline = 128;
    in.sq_pbl = n.make_pbl(u.q.sq, uint64_t{u.q.sq_size} * u.q.sq_stride);
    in.rq_pbl = n.make_pbl(u.q.rq, uint64_t{u.q.rq_size} * u.q.rq_stride);
    ohca_create_out o{};
    const CmdOutcome r = n.cmd(OHCA_CMD_CREATE_QP, &in, sizeof(in), &o, sizeof(o));
    u.q.qpn = o.handle;
    return r;
}

UdQp make_ud(RdmaNode &n) {
    UdQp u;
    OHCA_CHECK_STATUS(create_ud(n, u).status, OHCA_STATUS_OK, "CREATE_QP (UD)");
    ohca_qp_attr at{};
    at.qp_state = OHCA_QPS_INIT;
    at.qkey = kUdQkey;
    OHCA_CHECK_STATUS(
        n.modify(u.q.qpn, OHCA_QP_STATE | OHCA_QP_PKEY_INDEX | OHCA_QP_PORT | OHCA_QP_QKEY, at)
            .status,
        OHCA_STATUS_OK, "UD to INIT");
    at = {};
    at.qp_state = OHCA_QPS_RTR;
    OHCA_CHECK_STATUS(n.modify(u.q.qpn, OHCA_QP_STATE, at).status, OHCA_STATUS_OK, "UD to RTR");
    at.qp_state = OHCA_QPS_RTS;
    OHCA_CHECK_STATUS(n.modify(u.q.qpn, OHCA_QP_STATE | OHCA_QP_SQ_PSN, at).status, OHCA_STATUS_OK,
                      "UD to RTS");
    return u;
}

void post_ud(RdmaNode &n, UdQp &u, const RdmaNode &peer, uint32_t dqpn, uint64_t wr_id,
             uint64_t addr, uint32_t len, bool fast) {
    const uint64_t at = u.q.sq + uint64_t{u.q.sq_pi % u.q.sq_size} * u.q.sq_stride;
    ohca_send_wqe w{};
    w.wr_id = wr_id;
    w.opcode = OHCA_WR_SEND;
    w.flags = OHCA_WQE_SIGNALED;
    w.num_sge = 1;
    ohca_ud_seg seg{};
    std::copy(peer.gid.begin(), peer.gid.end(), seg.av.dgid);
    std::copy(peer.mac.begin(), peer.mac.end(), seg.av.dmac);
    seg.av.vlan_id = 0xffff;
    seg.av.hop_limit = 64;
    seg.av.network_type = OHCA_NET_IPV4;
    seg.remote_qpn = dqpn;
    seg.qkey = kUdQkey;
    n.host.put(at + OHCA_UD_WQE_HDR_LEN, ohca_sge{addr, len, u.key});
    n.host.put(at, w);
    n.host.put(at + sizeof(w), seg);
    ++u.q.sq_pi;
    if (fast) {
        ohca_engine_doorbell_fast(n.e, u.q.uar, OHCA_DB_SQ, OHCA_DB_VALUE(u.q.qpn, u.q.sq_pi), 8,
                                  kDoorbellBudget);
    } else {
        n.ring_sq(u.q);
    }
}

} // namespace ohca::test
