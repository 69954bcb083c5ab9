// SPDX-License-Identifier: GPL-2.0-or-later
#include "rdma_node.hpp"

#include "check.hpp"

#include "device/device.hpp"
#include "link/roce_v2.hpp"

#include <algorithm>

namespace ohca::test {

namespace {
constexpr uint64_t kNodeEq = 0x400000;
constexpr uint64_t kNodeCmdq = 0x40000;
constexpr uint64_t kNodeMailbox = 0x100000;
constexpr uint64_t kNodeOut = 0x108000;
constexpr unsigned int kNodeCmdqLog = 4;
} // namespace

RdmaNode::RdmaNode(uint8_t id, bool ipv6, uint32_t id_seed, unsigned int eq_log, uint32_t max_qp,
                   const LinkLayer *link, uint8_t link_layer)
    : drv(host, Layout{kNodeEq, kNodeCmdq, kNodeMailbox, kNodeOut}), eq_log_(eq_log) {
    // An entry the device never completed reads as it was written.
    drv.fill_status = 0;
    drv.fill_syndrome = 0;
    mac = {0x02, 0x00, 0x00, 0x00, 0x00, id};
    host.add_region(kNodeEq, 16u << eq_log_);
    host.add_region(kNodeCmdq, 64u << kNodeCmdqLog);
    host.add_region(kNodeMailbox, 0x10000);
    host.add_region(kRdmaBase, kRdmaSize);
    const ohca_engine_ops ops = FakeHost::ops();
    std::copy(mac.begin(), mac.end(), config.mac);
    config.node_guid = 0x0002c9fffe000000ull | id;
    config.sys_image_guid = config.node_guid;
    config.link_up = true;
    config.id_seed = id_seed;
    config.max_qp = max_qp;
    config.link_layer = link_layer;
    link_ = link;
    e = engine_create(&ops, &host, &config, link);
    drv.attach(e);
    bring_up(ipv6, id);
}

void RdmaNode::reset() {
    ohca_engine_reset(e);
    host.fill(kNodeEq, 0, 16u << eq_log_);
    pending_.clear();
    bring_up(gid[0] == 0xfd, gid[15]);
}

void RdmaNode::bring_up(bool ipv6, uint8_t id) {
    drv.program(kNodeCmdqLog, eq_log_, false);

    ohca_add_gid_in g{};
    if (ipv6) {
        gid = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, id};
        g.type = OHCA_GID_TYPE_ROCE_V2_IPV6;
    } else {
        gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, id};
        g.type = OHCA_GID_TYPE_ROCE_V2_IPV4;
    }
    std::copy(gid.begin(), gid.end(), g.gid);
    std::copy(mac.begin(), mac.end(), g.mac);
    g.port = 1;
    g.vlan_id = 0xffff;
    OHCA_CHECK_STATUS(cmd_in(OHCA_CMD_ADD_GID, g).status, OHCA_STATUS_OK, "ADD_GID");
}

RdmaNode::~RdmaNode() {
    ohca_engine_destroy(e);
}

std::vector<uint8_t> RdmaNode::save_state() {
    uint8_t *buf = nullptr;
    size_t len = 0;
    char err[256] = "";
    const bool saved = ohca_engine_save(e, &buf, &len, err, sizeof(err)) == 0;
    OHCA_CHECK(saved, err);
    std::vector<uint8_t> v(buf, buf + len);
    ohca_engine_state_free(buf);
    return v;
}

void RdmaNode::load_state(std::span<const uint8_t> state, uint32_t id_seed) {
    ohca_engine_destroy(e);
    const ohca_engine_ops ops = FakeHost::ops();
    config.id_seed = id_seed;
    e = engine_create(&ops, &host, &config, link_);
    OHCA_CHECK(e != nullptr, "engine_create");
    drv.attach(e);
    char err[256] = "";
    const bool loaded = ohca_engine_load(e, state.data(), state.size(), err, sizeof(err)) == 0;
    OHCA_CHECK(loaded, err);
}

void RdmaNode::pace(uint32_t speed_mbps, uint32_t burst) {
    ohca_engine_destroy(e);
    const ohca_engine_ops ops = FakeHost::ops();
    config.speed_mbps = speed_mbps;
    config.tx_burst_bytes = burst;
    e = engine_create(&ops, &host, &config, link_);
    OHCA_CHECK(e != nullptr, "engine_create");
    drv.attach(e);
    host.fill(kNodeEq, 0, 16u << eq_log_);
    pending_.clear();
    bring_up(gid[0] == 0xfd, gid[15]);
}

void RdmaNode::process() {
    OHCA_CHECK(drv.drain(100000), "engine keeps rescheduling");
}

CmdOutcome RdmaNode::cmd(uint16_t opcode, const void *in, uint16_t in_len, void *out,
                         uint16_t out_len) {
    const uint32_t slot =
        drv.post(drv.make_cmd(opcode, in, in_len, out_len, out_len != 0 ? kNodeOut : 0));
    drv.ring_cmdq();
    if (one_run) {
        ohca_engine_process(e);
    } else {
        process();
    }
    drain_eq();
    // A command waits while EQ 0 is full or events wait for it: the
    // driver's reading of EQ 0 lets it run.
    for (int i = 0; i < 64 && !hold_eq && drv.rd(OHCA_REG_CMDQ_CI) != (drv.cmd_pi & 0xffff); ++i) {
        process();
        drain_eq();
    }
    const ohca_cmd done = drv.entry(slot);
    if (out != nullptr && done.status == OHCA_STATUS_OK) {
        OHCA_CHECK(host.read(kNodeOut, out, out_len), "command output outside memory");
    }
    return {done.status, done.syndrome};
}

std::vector<ohca_eqe> RdmaNode::events() {
    drain_eq();
    std::vector<ohca_eqe> v = std::move(pending_);
    pending_.clear();
    return v;
}

void RdmaNode::drain_eq() {
    if (hold_eq) {
        return;
    }
    ohca_eqe eqe{};
    while (drv.next_eqe(eqe)) {
        if (eqe.type != OHCA_EQE_CMD_DONE) {
            pending_.push_back(eqe);
        }
    }
    drv.eq_doorbell(false);
}

uint64_t RdmaNode::alloc(uint64_t bytes, uint64_t align) {
    next_ = (next_ + align - 1) & ~(align - 1);
    const uint64_t a = next_;
    next_ += bytes;
    OHCA_CHECK(next_ <= kRdmaBase + kRdmaSize, "test guest memory exhausted");
    return a;
}

ohca_pbl RdmaNode::make_pbl(uint64_t addr, uint64_t bytes, unsigned int shift, int levels) {
    const uint64_t psz = uint64_t{1} << shift;
    const uint64_t first = addr & ~(psz - 1);
    const auto n = static_cast<uint32_t>((addr + bytes - first + psz - 1) / psz);
    ohca_pbl p{};
    p.npages = n;
    p.page_shift = static_cast<uint8_t>(shift);
    p.levels = static_cast<uint8_t>(levels);
    const uint64_t list = alloc(8ull * std::max<uint32_t>(n, 512), 4096);
    for (uint32_t i = 0; i < n; ++i) {
        host.put(list + 8ull * i, first + i * psz);
    }
    if (levels == 1) {
        p.addr = list;
    } else {
        const uint32_t nl1 = (n + 511) / 512;
        const uint64_t l1 = alloc(8ull * nl1, 4096);
        for (uint32_t i = 0; i < nl1; ++i) {
            host.put(l1 + 8ull * i, list + 4096ull * i);
        }
        p.addr = l1;
    }
    return p;
}

uint32_t RdmaNode::create_pd() {
    ohca_create_out o{};
    OHCA_CHECK_STATUS(cmd(OHCA_CMD_CREATE_PD, nullptr, 0, &o, sizeof(o)).status, OHCA_STATUS_OK,
                      "CREATE_PD");
    return o.handle;
}

CqInfo RdmaNode::create_cq(unsigned int log_size, uint32_t eqn, uint32_t uar) {
    CqInfo cq;
    cq.size = 1u << log_size;
    cq.ring = alloc(32ull * cq.size);
    cq.uar = uar;
    ohca_create_cq_in in{};
    in.eqn = eqn;
    in.uar_index = uar;
    in.log_size = static_cast<uint8_t>(log_size);
    in.pbl = make_pbl(cq.ring, 32ull * cq.size);
    ohca_create_out o{};
    OHCA_CHECK_STATUS(cmd(OHCA_CMD_CREATE_CQ, &in, sizeof(in), &o, sizeof(o)).status,
                      OHCA_STATUS_OK, "CREATE_CQ");
    cq.cqn = o.handle;
    return cq;
}

uint32_t RdmaNode::reg_mr(uint32_t pdn, uint64_t addr, uint64_t len, uint32_t access) {
    ohca_create_mr_in in{};
    in.pdn = pdn;
    in.access = access;
    in.iova = addr;
    in.length = len;
    in.pbl = make_pbl(addr, len);
    ohca_create_out o{};
    OHCA_CHECK_STATUS(cmd(OHCA_CMD_CREATE_MR, &in, sizeof(in), &o, sizeof(o)).status,
                      OHCA_STATUS_OK, "CREATE_MR");
    return o.handle;
}

QpInfo RdmaNode::create_qp(uint32_t pdn, uint32_t scq, uint32_t rcq, unsigned int sq_log,
                           unsigned int rq_log, uint32_t uar, uint8_t type) {
    QpInfo q;
    q.sq_size = 1u << sq_log;
    q.rq_size = 1u << rq_log;
    q.sq_stride = 256;
    q.rq_stride = 64;
    q.uar = uar;
    q.sq = alloc(uint64_t{q.sq_size} * q.sq_stride);
    q.rq = alloc(uint64_t{q.rq_size} * q.rq_stride);
    ohca_create_qp_in in{};
    in.type = type;
    in.sq_log_size = static_cast<uint8_t>(sq_log);
    in.rq_log_size = static_cast<uint8_t>(rq_log);
    in.sq_log_stride = 8;
    in.rq_log_stride = 6;
    in.pdn = pdn;
    in.send_cqn = scq;
    in.recv_cqn = rcq;
    in.uar_index = uar;
    in.max_inline = 128;
    in.sq_pbl = make_pbl(q.sq, uint64_t{q.sq_size} * q.sq_stride);
    in.rq_pbl = make_pbl(q.rq, uint64_t{q.rq_size} * q.rq_stride);
    ohca_create_out o{};
    OHCA_CHECK_STATUS(cmd(OHCA_CMD_CREATE_QP, &in, sizeof(in), &o, sizeof(o)).status,
                      OHCA_STATUS_OK, "CREATE_QP");
    q.qpn = o.handle;
    return q;
}

ohca_create_qp_in RdmaNode::idle_qp_in(uint32_t pdn, uint32_t cqn) {
    ohca_create_qp_in in{};
    in.type = OHCA_QPT_RC;
    in.sq_log_size = 1;
    in.rq_log_size = 1;
    in.sq_log_stride = 8;
    in.rq_log_stride = 6;
    in.pdn = pdn;
    in.send_cqn = cqn;
    in.recv_cqn = cqn;
    return in;
}

QpInfo RdmaNode::create_idle_qp(uint32_t pdn, uint32_t cqn) {
    if (!idle_rings_) {
        const uint64_t sq = alloc(2 * 256);
        const uint64_t rq = alloc(2 * 64);
        idle_rings_.emplace(make_pbl(sq, 2 * 256), make_pbl(rq, 2 * 64));
    }
    ohca_create_qp_in in = idle_qp_in(pdn, cqn);
    in.sq_pbl = idle_rings_->first;
    in.rq_pbl = idle_rings_->second;
    ohca_create_out o{};
    OHCA_CHECK_STATUS(cmd(OHCA_CMD_CREATE_QP, &in, sizeof(in), &o, sizeof(o)).status,
                      OHCA_STATUS_OK, "CREATE_QP");
    QpInfo q;
    q.qpn = o.handle;
    q.sq_size = 2;
    q.rq_size = 2;
    q.sq_stride = 256;
    q.rq_stride = 64;
    return q;
}

QpInfo RdmaNode::create_qp_on_srq(uint32_t pdn, uint32_t scq, uint32_t rcq, uint32_t srqn,
                                  unsigned int sq_log) {
    QpInfo q;
    q.sq_size = 1u << sq_log;
    q.sq_stride = 256;
    q.sq = alloc(uint64_t{q.sq_size} * q.sq_stride);
    ohca_create_qp_in in{};
    in.type = OHCA_QPT_RC;
    in.sq_log_size = static_cast<uint8_t>(sq_log);
    in.sq_log_stride = 8;
    in.pdn = pdn;
    in.send_cqn = scq;
    in.recv_cqn = rcq;
    in.max_inline = 128;
    in.srqn = srqn;
    in.sq_pbl = make_pbl(q.sq, uint64_t{q.sq_size} * q.sq_stride);
    ohca_create_out o{};
    OHCA_CHECK_STATUS(cmd(OHCA_CMD_CREATE_QP, &in, sizeof(in), &o, sizeof(o)).status,
                      OHCA_STATUS_OK, "CREATE_QP");
    q.qpn = o.handle;
    return q;
}

SrqInfo RdmaNode::create_srq(uint32_t pdn, unsigned int log_size, uint32_t limit) {
    SrqInfo s;
    s.size = 1u << log_size;
    s.ring = alloc(uint64_t{s.size} * s.stride);
    ohca_create_srq_in in{};
    in.pdn = pdn;
    in.log_size = static_cast<uint8_t>(log_size);
    in.log_stride = 6;
    in.limit = limit;
    in.pbl = make_pbl(s.ring, uint64_t{s.size} * s.stride);
    ohca_create_out o{};
    OHCA_CHECK_STATUS(cmd(OHCA_CMD_CREATE_SRQ, &in, sizeof(in), &o, sizeof(o)).status,
                      OHCA_STATUS_OK, "CREATE_SRQ");
    s.srqn = o.handle;
    return s;
}

uint32_t RdmaNode::alloc_xrcd() {
    ohca_create_out o{};
    OHCA_CHECK_STATUS(cmd(OHCA_CMD_ALLOC_XRCD, nullptr, 0, &o, sizeof(o)).status, OHCA_STATUS_OK,
                      "ALLOC_XRCD");
    return o.handle;
}

SrqInfo RdmaNode::create_xrc_srq(uint32_t pdn, uint32_t xrcdn, uint32_t cqn,
                                 unsigned int log_size) {
    SrqInfo s;
    s.size = 1u << log_size;
    s.ring = alloc(uint64_t{s.size} * s.stride);
    ohca_create_srq_in in{};
    in.pdn = pdn;
    in.log_size = static_cast<uint8_t>(log_size);
    in.log_stride = 6;
    in.type = OHCA_SRQT_XRC;
    in.xrcdn = xrcdn;
    in.cqn = cqn;
    in.pbl = make_pbl(s.ring, uint64_t{s.size} * s.stride);
    ohca_create_out o{};
    OHCA_CHECK_STATUS(cmd(OHCA_CMD_CREATE_SRQ, &in, sizeof(in), &o, sizeof(o)).status,
                      OHCA_STATUS_OK, "CREATE_SRQ");
    s.srqn = o.handle;
    return s;
}

QpInfo RdmaNode::create_xrc_ini(uint32_t pdn, uint32_t scq, unsigned int sq_log) {
    QpInfo q;
    q.sq_size = 1u << sq_log;
    q.sq_stride = 256;
    q.sq = alloc(uint64_t{q.sq_size} * q.sq_stride);
    ohca_create_qp_in in{};
    in.type = OHCA_QPT_XRC_INI;
    in.sq_log_size = static_cast<uint8_t>(sq_log);
    in.sq_log_stride = 8;
    in.pdn = pdn;
    in.send_cqn = scq;
    in.max_inline = 128;
    in.sq_pbl = make_pbl(q.sq, uint64_t{q.sq_size} * q.sq_stride);
    ohca_create_out o{};
    OHCA_CHECK_STATUS(cmd(OHCA_CMD_CREATE_QP, &in, sizeof(in), &o, sizeof(o)).status,
                      OHCA_STATUS_OK, "CREATE_QP");
    q.qpn = o.handle;
    return q;
}

QpInfo RdmaNode::create_xrc_tgt(uint32_t xrcdn) {
    QpInfo q;
    ohca_create_qp_in in{};
    in.type = OHCA_QPT_XRC_TGT;
    in.xrcdn = xrcdn;
    ohca_create_out o{};
    OHCA_CHECK_STATUS(cmd(OHCA_CMD_CREATE_QP, &in, sizeof(in), &o, sizeof(o)).status,
                      OHCA_STATUS_OK, "CREATE_QP");
    q.qpn = o.handle;
    return q;
}

void RdmaNode::put_recv_wqe(uint64_t at, uint64_t wr_id, const std::vector<ohca_sge> &sges) {
    ohca_recv_wqe w{};
    w.wr_id = wr_id;
    w.num_sge = static_cast<uint8_t>(sges.size());
    host.put(at, w);
    for (size_t i = 0; i < sges.size(); ++i) {
        host.put(at + 16 + 16 * i, sges[i]);
    }
}

void RdmaNode::post_srq_recv(SrqInfo &srq, uint64_t wr_id, const std::vector<ohca_sge> &sges) {
    put_recv_wqe(srq.ring + uint64_t{srq.pi % srq.size} * srq.stride, wr_id, sges);
    ++srq.pi;
    ohca_engine_db_write(e, srq.uar, OHCA_DB_SRQ, OHCA_DB_VALUE(srq.srqn, srq.pi), 8);
}

CmdOutcome RdmaNode::modify(uint32_t qpn, uint32_t mask, const ohca_qp_attr &attr,
                            uint16_t udp_sport) {
    ohca_modify_qp_in in{};
    in.qpn = qpn;
    in.attr_mask = mask;
    in.attr = attr;
    in.udp_sport = udp_sport;
    return cmd_in(OHCA_CMD_MODIFY_QP, in);
}

ohca_qp_attr RdmaNode::query(uint32_t qpn) {
    ohca_handle_in in{};
    in.handle = qpn;
    ohca_qp_attr a{};
    OHCA_CHECK_STATUS(cmd(OHCA_CMD_QUERY_QP, &in, sizeof(in), &a, sizeof(a)).status, OHCA_STATUS_OK,
                      "QUERY_QP");
    return a;
}

bool RdmaNode::to_init(const QpInfo &qp, uint32_t access) {
    ohca_qp_attr a{};
    a.qp_state = OHCA_QPS_INIT;
    a.access_flags = access;
    return OHCA_CHECK_STATUS(
        modify(qp.qpn, OHCA_QP_STATE | OHCA_QP_PKEY_INDEX | OHCA_QP_PORT | OHCA_QP_ACCESS_FLAGS, a)
            .status,
        OHCA_STATUS_OK, "MODIFY_QP to INIT");
}

ohca_qp_attr RdmaNode::rtr_attr(const RdmaNode &peer, uint32_t remote_qpn, uint8_t path_mtu) {
    ohca_qp_attr a{};
    a.qp_state = OHCA_QPS_RTR;
    a.path_mtu = path_mtu;
    a.dest_qpn = remote_qpn;
    a.rq_psn = (peer.psn_base + remote_qpn) & 0xffffff;
    std::copy(peer.gid.begin(), peer.gid.end(), a.av.dgid);
    std::copy(peer.mac.begin(), peer.mac.end(), a.av.dmac);
    a.av.vlan_id = 0xffff;
    a.av.hop_limit = 64;
    a.av.sgid_index = 0;
    a.av.network_type = peer.gid[10] == 0xff ? OHCA_NET_IPV4 : OHCA_NET_IPV6;
    if (peer.lid != 0) {
        ohca_av_ib ib{};
        ib.dlid = peer.lid;
        std::memcpy(&a.av, &ib, sizeof(ib));
    }
    return a;
}

// An InfiniBand address vector's SL (ib_sl), for tests of VL arbitration.
void RdmaNode::set_ib_sl(ohca_qp_attr &a, const RdmaNode &peer) const {
    if (peer.lid != 0) {
        ohca_av_ib ib{};
        std::memcpy(&ib, &a.av, sizeof(ib));
        ib.sl = ib_sl;
        std::memcpy(&a.av, &ib, sizeof(ib));
    }
}

void RdmaNode::connect(const QpInfo &qp, uint32_t remote_qpn, const RdmaNode &peer,
                       uint8_t path_mtu, uint8_t timeout, uint8_t retry, uint8_t rnr_retry,
                       uint32_t access, uint8_t rd_atomic) {
    if (!to_init(qp, access)) {
        return;
    }
    ohca_qp_attr a = rtr_attr(peer, remote_qpn, path_mtu);
    set_ib_sl(a, peer);
    a.max_dest_rd_atomic = rd_atomic;
    a.min_rnr_timer = 1;
    if (!OHCA_CHECK_STATUS(modify(qp.qpn,
                                  OHCA_QP_STATE | OHCA_QP_AV | OHCA_QP_PATH_MTU | OHCA_QP_DEST_QPN |
                                      OHCA_QP_RQ_PSN | OHCA_QP_MAX_DEST_RD_ATOMIC |
                                      OHCA_QP_MIN_RNR_TIMER |
                                      (udp_sport != 0 ? uint32_t{OHCA_QP_UDP_SPORT} : 0u),
                                  a, udp_sport)
                               .status,
                           OHCA_STATUS_OK, "MODIFY_QP to RTR")) {
        return;
    }
    a = {};
    a.qp_state = OHCA_QPS_RTS;
    a.sq_psn = (psn_base + qp.qpn) & 0xffffff;
    a.timeout = timeout;
    a.retry_cnt = retry;
    a.rnr_retry = rnr_retry;
    a.max_rd_atomic = rd_atomic;
    OHCA_CHECK_STATUS(modify(qp.qpn,
                             OHCA_QP_STATE | OHCA_QP_SQ_PSN | OHCA_QP_TIMEOUT | OHCA_QP_RETRY_CNT |
                                 OHCA_QP_RNR_RETRY | OHCA_QP_MAX_QP_RD_ATOMIC,
                             a)
                          .status,
                      OHCA_STATUS_OK, "MODIFY_QP to RTS");
}

void RdmaNode::connect_uc(const QpInfo &qp, uint32_t remote_qpn, const RdmaNode &peer,
                          uint8_t path_mtu, uint32_t access) {
    if (!to_init(qp, access)) {
        return;
    }
    ohca_qp_attr a = rtr_attr(peer, remote_qpn, path_mtu);
    set_ib_sl(a, peer);
    if (!OHCA_CHECK_STATUS(modify(qp.qpn,
                                  OHCA_QP_STATE | OHCA_QP_AV | OHCA_QP_PATH_MTU | OHCA_QP_DEST_QPN |
                                      OHCA_QP_RQ_PSN,
                                  a)
                               .status,
                           OHCA_STATUS_OK, "MODIFY_QP to RTR")) {
        return;
    }
    a = {};
    a.qp_state = OHCA_QPS_RTS;
    a.sq_psn = (psn_base + qp.qpn) & 0xffffff;
    OHCA_CHECK_STATUS(modify(qp.qpn, OHCA_QP_STATE | OHCA_QP_SQ_PSN, a).status, OHCA_STATUS_OK,
                      "MODIFY_QP to RTS");
}

void RdmaNode::ring_sq(const QpInfo &qp) {
    ohca_engine_db_write(e, qp.uar, OHCA_DB_SQ, OHCA_DB_VALUE(qp.qpn, qp.sq_pi), 8);
}

void RdmaNode::post_send(QpInfo &qp, const SendReq &r, bool ring) {
    const uint64_t at = qp.sq + uint64_t{qp.sq_pi % qp.sq_size} * qp.sq_stride;
    ohca_send_wqe w{};
    w.wr_id = r.wr_id;
    w.opcode = r.opcode;
    w.flags = r.flags;
    w.imm_data = r.imm;
    w.remote_addr = r.remote_addr;
    w.rkey = r.rkey;
    w.cmp_add = r.cmp_add;
    w.swap = r.swap;
    w.xrc_srqn = r.xrc_srqn;
    if (!r.inline_data.empty() || (r.flags & OHCA_WQE_INLINE) != 0) {
        w.flags |= OHCA_WQE_INLINE;
        w.inline_len = static_cast<uint32_t>(r.inline_data.size());
        host.put(at, w);
        if (!r.inline_data.empty()) {
            host.put_bytes(at + 64, r.inline_data.data(), r.inline_data.size());
        }
    } else {
        w.num_sge = static_cast<uint8_t>(r.sges.size());
        host.put(at, w);
        for (size_t i = 0; i < r.sges.size(); ++i) {
            host.put(at + 64 + 16 * i, r.sges[i]);
        }
    }
    ++qp.sq_pi;
    if (ring) {
        ring_sq(qp);
    }
}

void RdmaNode::post_recv(QpInfo &qp, uint64_t wr_id, const std::vector<ohca_sge> &sges) {
    put_recv_wqe(qp.rq + uint64_t{qp.rq_pi % qp.rq_size} * qp.rq_stride, wr_id, sges);
    ++qp.rq_pi;
    ohca_engine_db_write(e, qp.uar, OHCA_DB_RQ, OHCA_DB_VALUE(qp.qpn, qp.rq_pi), 8);
}

std::vector<ohca_cqe> RdmaNode::poll(CqInfo &cq, size_t max) {
    std::vector<ohca_cqe> v;
    poll_into(cq, v, max);
    return v;
}

void RdmaNode::poll_into(CqInfo &cq, std::vector<ohca_cqe> &v, size_t max) {
    v.clear();
    const unsigned int log = static_cast<unsigned int>(__builtin_ctz(cq.size));
    while (v.size() < max) {
        const auto c = host.get<ohca_cqe>(cq.ring + 32ull * (cq.ci & (cq.size - 1)));
        const uint8_t want = ((cq.ci >> log) & 1) == 0 ? OHCA_CQE_OWNER : 0;
        if ((c.owner & OHCA_CQE_OWNER) != want) {
            break;
        }
        v.push_back(c);
        ++cq.ci;
    }
    cq_doorbell(cq, 0);
}

void RdmaNode::cq_doorbell(const CqInfo &cq, uint32_t flags) {
    ohca_engine_db_write(e, cq.uar, OHCA_DB_CQ,
                         OHCA_DB_VALUE(cq.cqn, (cq.ci & OHCA_DB_CQ_CI_MASK) | flags), 8);
}

ohca_query_stats_out RdmaNode::stats() {
    ohca_query_stats_out s{};
    OHCA_CHECK_STATUS(cmd(OHCA_CMD_QUERY_STATS, nullptr, 0, &s, sizeof(s)).status, OHCA_STATUS_OK,
                      "QUERY_STATS");
    return s;
}

Side make_side(RdmaNode &n, size_t bytes, unsigned int qp_log,
               const std::function<uint8_t(size_t k)> &pattern, unsigned int cq_log,
               uint32_t access, uint8_t qp_type) {
    Side s;
    s.pd = n.create_pd();
    s.scq = n.create_cq(cq_log);
    s.rcq = n.create_cq(cq_log);
    s.qp = n.create_qp(s.pd, s.scq.cqn, s.rcq.cqn, qp_log, qp_log, 0, qp_type);
    s.buf = n.alloc(bytes);
    s.key = n.reg_mr(s.pd, s.buf, bytes, access);
    if (pattern) {
        std::vector<uint8_t> data(bytes);
        for (size_t k = 0; k < bytes; ++k) {
            data[k] = pattern(k);
        }
        n.host.put_bytes(s.buf, data.data(), data.size());
    }
    return s;
}

void pump(RdmaNode &a, RdmaNode &b, const std::function<bool(bool, std::vector<uint8_t> &)> &drop) {
    for (int i = 0; i < 100000; ++i) {
        a.process();
        b.process();
        if (a.host.wire.empty() && b.host.wire.empty()) {
            return;
        }
        auto fa = std::move(a.host.wire);
        auto fb = std::move(b.host.wire);
        a.host.wire.clear();
        b.host.wire.clear();
        // A frame the receiver holds back (RX_RETRY) stays on the wire, with
        // everything after it, for the next round.
        auto deliver = [&](std::vector<std::vector<uint8_t>> &frames, RdmaNode &from, RdmaNode &to,
                           bool from_a) {
            for (size_t k = 0; k < frames.size(); ++k) {
                auto &f = frames[k];
                if (drop && drop(from_a, f)) {
                    continue;
                }
                if (ohca_engine_receive_frame(to.e, f.data(), f.size()) == OHCA_ENGINE_RX_RETRY) {
                    from.host.wire.insert(from.host.wire.begin(),
                                          std::make_move_iterator(frames.begin() + k),
                                          std::make_move_iterator(frames.end()));
                    return;
                }
            }
        };
        deliver(fa, a, b, true);
        deliver(fb, b, a, false);
    }
    report_failure(__FILE__, __LINE__, "wire never went idle");
}

void fix_icrc(std::vector<uint8_t> &f) {
    if (f.size() < 14 + 20 + 8 + 12 + 4) {
        return;
    }
    const size_t l3 = (f[12] == 0x81 && f[13] == 0x00) ? 18 : 14;
    const bool v6 = f[l3 - 2] == 0x86;
    if (f.size() < l3 + (v6 ? 40u : 20u) + 8 + 12 + 4) {
        return;
    }
    const uint32_t icrc = compute_icrc(f, l3, v6);
    for (size_t i = 0; i < 4; ++i) {
        f[f.size() - 4 + i] = static_cast<uint8_t>(icrc >> (8 * i));
    }
}

} // namespace ohca::test
