// SPDX-License-Identifier: GPL-2.0-or-later
// Two devices with InfiniBand ports on a fake wire, no switch: the port
// states driven by SMPs through MAD_IFC (the test is the SM), RC and UD
// addressed by LID, with and without a GRH, and the receive rules (P_Key,
// VL15 and QP0, VCRC, ICRC, length), each drop counted.
#include "device/device.hpp"
#include "ib/mad.hpp"
#include "ib/packet.hpp"
#include "ib_sm.hpp"
#include "rdma_node.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace ohca::test {
namespace {

constexpr uint32_t kQkey = 0x11111111;

// The data packets a node put on the wire, without link packets (FCPs).
std::vector<std::vector<uint8_t>> data_frames(RdmaNode &n) {
    std::vector<std::vector<uint8_t>> v;
    for (auto &f : n.host.wire) {
        if (f.size() != ib::kLinkPacketBytes) {
            v.push_back(f);
        }
    }
    return v;
}

ohca_query_port_out query_port(RdmaNode &n) {
    ohca_query_port_in in{};
    in.port = 1;
    ohca_query_port_out out{};
    EXPECT_EQ(n.cmd(OHCA_CMD_QUERY_PORT, &in, sizeof(in), &out, sizeof(out)).status,
              OHCA_STATUS_OK);
    return out;
}

TEST(IbWire, SmpsDriveThePortStates) {
    RdmaNode n(1, false, 0, 10, 0, nullptr, OHCA_LINK_IB);
    (void)n.events();
    ib::PortInfo pi = port_info(n);
    EXPECT_EQ(pi.port_state, ib::port_state::Init);
    EXPECT_EQ(pi.lid, 0);
    // ACTIVE straight from INIT is not a transition an SM may ask for.
    pi.port_state = ib::port_state::Active;
    EXPECT_NE(set_port_info(n, pi), 0);
    EXPECT_EQ(query_port(n).state, OHCA_PORT_INIT);
    pi = port_info(n);
    pi.lid = 0x12;
    pi.lmc = 1;
    pi.master_sm_lid = 0x1;
    pi.port_state = ib::port_state::Armed;
    ASSERT_EQ(set_port_info(n, pi), 0);
    auto ev = n.events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].type, OHCA_EQE_PORT_CHANGE);
    EXPECT_EQ(ev[0].code, OHCA_PORT_ARMED);
    EXPECT_EQ(ev[0].param1, uint32_t{OHCA_PORT_CHG_STATE | OHCA_PORT_CHG_LID | OHCA_PORT_CHG_SM});
    pi = port_info(n);
    pi.port_state = ib::port_state::Active;
    ASSERT_EQ(set_port_info(n, pi), 0);
    const auto q = query_port(n);
    EXPECT_EQ(q.state, OHCA_PORT_ACTIVE);
    EXPECT_EQ(q.lid, 0x12);
    EXPECT_EQ(q.lmc, 1);
    EXPECT_EQ(q.sm_lid, 1);
    // Losing the link: DOWN, and INIT again when it returns (the SM must
    // sweep it back to ACTIVE).
    ohca_engine_set_link(n.e, false);
    EXPECT_EQ(query_port(n).state, OHCA_PORT_DOWN);
    ohca_engine_set_link(n.e, true);
    EXPECT_EQ(query_port(n).state, OHCA_PORT_INIT);
    // NodeInfo is the node's.
    const auto ni = smp(n, ib::method::Get, ib::attr::NodeInfo, 0, {});
    EXPECT_EQ(ni.status(), 0);
    EXPECT_EQ(ni.data[2], ib::node_type::Ca);
}

struct IbPair {
    RdmaNode a{1, false, 0, 10, 0, nullptr, OHCA_LINK_IB};
    RdmaNode b{2, false, 0, 10, 0, nullptr, OHCA_LINK_IB};
    IbPair() {
        sm_bring_up(a, 0x10);
        sm_bring_up(b, 0x20);
        pump(a, b); // the links' first FCPs: credit both ways
    }
};

// An SM's PortInfo Set to Down on a port whose link is up: the link
// retrains, the port is in Init again at once with its LID (the reply
// shows the Down the SM asked for), and the SM can bring it up again.
TEST(IbWire, SetDownRetrainsToInitKeepingTheLid) {
    RdmaNode n(1, false, 0, 10, 0, nullptr, OHCA_LINK_IB);
    sm_bring_up(n, 0x21);
    (void)n.events();
    ib::PortInfo pi = port_info(n);
    pi.port_state = ib::port_state::Down;
    ib::SmpData d{};
    pi.write(d);
    const ib::Smp reply = smp(n, ib::method::Set, ib::attr::PortInfo, 1, d);
    ASSERT_EQ(reply.status(), 0);
    EXPECT_EQ(ib::PortInfo::read(reply.data).port_state, ib::port_state::Down);
    pi = port_info(n);
    EXPECT_EQ(pi.port_state, ib::port_state::Init);
    EXPECT_EQ(pi.phys_state, ib::phys_state::LinkUp);
    EXPECT_EQ(pi.lid, 0x21);
    auto ev = n.events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].code, OHCA_PORT_INIT);
    EXPECT_EQ(query_port(n).state, OHCA_PORT_INIT);
    sm_bring_up(n, 0x21);
    EXPECT_EQ(query_port(n).state, OHCA_PORT_ACTIVE);
    // Without a carrier the port stays Down until the link comes back.
    ohca_engine_set_link(n.e, false);
    EXPECT_EQ(port_info(n).port_state, ib::port_state::Down);
    pi = port_info(n);
    pi.port_state = ib::port_state::Down;
    ASSERT_EQ(set_port_info(n, pi), 0);
    EXPECT_EQ(port_info(n).phys_state, ib::phys_state::Polling);
}

TEST(IbWire, RcByLidSendWriteRead) {
    IbPair p;
    Side sa = make_side(p.a, 1 << 20, 6, [](size_t k) { return static_cast<uint8_t>(k * 3 + 1); });
    Side sb = make_side(p.b, 1 << 20, 6, [](size_t k) { return static_cast<uint8_t>(k * 7 + 5); });
    p.a.connect(sa.qp, sb.qp.qpn, p.b, 5);
    p.b.connect(sb.qp, sa.qp.qpn, p.a, 5);
    p.b.post_recv(sb.qp, 5, {{sb.buf, 10000, sb.key}});
    SendReq s;
    s.sges = {{sa.buf, 9000, sa.key}};
    p.a.post_send(sa.qp, s);
    SendReq w;
    w.wr_id = 2;
    w.opcode = OHCA_WR_RDMA_WRITE;
    w.remote_addr = sb.buf + 0x10000;
    w.rkey = sb.key;
    w.sges = {{sa.buf + 0x20000, 7000, sa.key}};
    p.a.post_send(sa.qp, w);
    SendReq r;
    r.wr_id = 3;
    r.opcode = OHCA_WR_RDMA_READ;
    r.flags = OHCA_WQE_SIGNALED | OHCA_WQE_FENCE;
    r.remote_addr = sb.buf + 0x40000;
    r.rkey = sb.key;
    r.sges = {{sa.buf + 0x50000, 9000, sa.key}};
    p.a.post_send(sa.qp, r);
    p.a.process();
    ASSERT_FALSE(data_frames(p.a).empty());
    for (const auto &f : data_frames(p.a)) {
        ib::Packet pk;
        ASSERT_EQ(ib::parse(f, pk), ib::PacketError::Ok);
        EXPECT_EQ(pk.lrh.lnh, ib::Lnh::IbaLocal); // no GRH: the AV asks none
        EXPECT_EQ(pk.lrh.dlid, 0x20);
        EXPECT_EQ(pk.lrh.slid, 0x10);
        EXPECT_EQ(pk.lrh.vl, 0);
        EXPECT_LE(f.size(), 4096u + 126u);
    }
    pump(p.a, p.b);
    const auto sc = p.a.poll(sa.scq);
    ASSERT_EQ(sc.size(), 3u);
    for (const auto &c : sc) {
        EXPECT_EQ(c.status, OHCA_CQE_SUCCESS);
    }
    const auto rc = p.b.poll(sb.rcq);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].byte_len, 9000u);
    auto same = [&](uint64_t x, uint64_t y, size_t len) {
        std::vector<uint8_t> u(len), v(len);
        EXPECT_TRUE(p.a.host.read(x, u.data(), len));
        EXPECT_TRUE(p.b.host.read(y, v.data(), len));
        return u == v;
    };
    EXPECT_TRUE(same(sa.buf, sb.buf, 9000));
    EXPECT_TRUE(same(sa.buf + 0x20000, sb.buf + 0x10000, 7000));
    EXPECT_TRUE(same(sa.buf + 0x50000, sb.buf + 0x40000, 9000));
    EXPECT_EQ(device_of(p.b.e).roce_counters().rx_bad_icrc, 0u);
    EXPECT_EQ(device_of(p.a.e).roce_counters().retransmits, 0u);
}

// Before the SM makes the port ACTIVE no data leaves it.
TEST(IbWire, NoDataBeforeActive) {
    RdmaNode a(1, false, 0, 10, 0, nullptr, OHCA_LINK_IB);
    RdmaNode b(2, false, 0, 10, 0, nullptr, OHCA_LINK_IB);
    a.lid = 0x10;
    b.lid = 0x20;
    Side sa = make_side(a, 1 << 16, 6, [](size_t k) { return static_cast<uint8_t>(k); });
    Side sb = make_side(b, 1 << 16, 6, [](size_t k) { return static_cast<uint8_t>(k); });
    a.connect(sa.qp, sb.qp.qpn, b, 5, 0);
    SendReq s;
    s.sges = {{sa.buf, 100, sa.key}};
    a.post_send(sa.qp, s);
    a.process();
    EXPECT_TRUE(data_frames(a).empty());
    EXPECT_TRUE(a.poll(sa.scq).empty()); // the SEND waits, nothing lost
}

struct UdQp {
    QpInfo q;
    uint32_t pd = 0;
    CqInfo scq, rcq;
    uint64_t buf = 0;
    uint32_t key = 0;
};

UdQp make_ud(RdmaNode &n, uint8_t type = OHCA_QPT_UD) {
    UdQp u;
    u.pd = n.create_pd();
    u.scq = n.create_cq(8);
    u.rcq = n.create_cq(8);
    u.q = n.create_qp(u.pd, u.scq.cqn, u.rcq.cqn, 6, 6, 0, type);
    u.buf = n.alloc(1 << 16);
    u.key = n.reg_mr(u.pd, u.buf, 1 << 16, OHCA_ACCESS_LOCAL_WRITE);
    ohca_qp_attr a{};
    a.qp_state = OHCA_QPS_INIT;
    a.qkey = kQkey;
    EXPECT_EQ(n.modify(u.q.qpn, OHCA_QP_STATE | OHCA_QP_PKEY_INDEX | OHCA_QP_PORT | OHCA_QP_QKEY, a)
                  .status,
              OHCA_STATUS_OK);
    a = {};
    a.qp_state = OHCA_QPS_RTR;
    EXPECT_EQ(n.modify(u.q.qpn, OHCA_QP_STATE, a).status, OHCA_STATUS_OK);
    a.qp_state = OHCA_QPS_RTS;
    EXPECT_EQ(n.modify(u.q.qpn, OHCA_QP_STATE | OHCA_QP_SQ_PSN, a).status, OHCA_STATUS_OK);
    return u;
}

void post_ud(RdmaNode &n, UdQp &u, uint32_t dqpn, const ohca_av_ib &av, size_t len) {
    const uint32_t stride = u.q.sq_stride;
    const uint64_t at = u.q.sq + uint64_t{u.q.sq_pi % u.q.sq_size} * stride;
    ohca_send_wqe w{};
    w.wr_id = 9;
    w.opcode = OHCA_WR_SEND;
    w.flags = OHCA_WQE_SIGNALED;
    w.num_sge = 1;
    ohca_ud_seg seg{};
    std::memcpy(&seg.av, &av, sizeof(av));
    seg.remote_qpn = dqpn;
    seg.qkey = kQkey;
    n.host.put(at + OHCA_UD_WQE_HDR_LEN, ohca_sge{u.buf, static_cast<uint32_t>(len), u.key});
    n.host.put(at, w);
    n.host.put(at + sizeof(w), seg);
    ++u.q.sq_pi;
    n.ring_sq(u.q);
}

// A UD receive says where the packet came from: SLID, SL, path bits and
// whether it had a GRH (ohca_queue.h).
TEST(IbWire, UdByLidWithAndWithoutGrh) {
    IbPair p;
    UdQp ua = make_ud(p.a);
    UdQp ub = make_ud(p.b);
    for (int grh = 0; grh < 2; ++grh) {
        p.b.post_recv(ub.q, 1, {{ub.buf, 4096, ub.key}});
        ohca_av_ib av{};
        av.dlid = 0x20;
        av.sl = 3;
        if (grh != 0) {
            av.flags = OHCA_AV_IB_GRH;
            av.hop_limit = 1;
            const auto q = query_port(p.b);
            std::memcpy(av.dgid, q.subnet_prefix, 8);
            std::memcpy(av.dgid + 8, q.port_guid, 8);
        }
        post_ud(p.a, ua, ub.q.qpn, av, 300);
        p.a.process();
        ASSERT_EQ(data_frames(p.a).size(), 1u);
        ib::Packet pk;
        ASSERT_EQ(ib::parse(data_frames(p.a)[0], pk), ib::PacketError::Ok);
        EXPECT_EQ(pk.has_grh, grh != 0);
        EXPECT_EQ(pk.lrh.sl, 3);
        pump(p.a, p.b);
        const auto sc = p.a.poll(ua.scq);
        ASSERT_EQ(sc.size(), 1u);
        EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
        const auto rc = p.b.poll(ub.rcq);
        ASSERT_EQ(rc.size(), 1u) << grh;
        EXPECT_EQ(rc[0].status, OHCA_CQE_SUCCESS);
        EXPECT_EQ(rc[0].byte_len, 340u);
        EXPECT_EQ((rc[0].flags & OHCA_CQE_F_GRH) != 0, grh != 0);
        EXPECT_EQ(rc[0].sl, 3);
        EXPECT_EQ(OHCA_CQE_IB_SLID(rc[0].qpn, rc[0].vendor_err), 0x10u);
        EXPECT_EQ(rc[0].qpn & OHCA_CQE_QPN_MASK, ub.q.qpn);
        EXPECT_EQ(rc[0].src_qp & OHCA_CQE_QPN_MASK, ua.q.qpn);
        EXPECT_EQ(OHCA_CQE_IB_PATH_BITS(rc[0].src_qp), 0u);
    }
}

// P_Key: a packet of a partition the receiver's table lacks is dropped
// and counted in P_KeyViolations.
TEST(IbWire, PkeyMismatchDroppedAndCounted) {
    IbPair p;
    ib::SmpData d{};
    d[0] = 0xff; // index 0: the default P_Key
    d[1] = 0xff;
    d[2] = 0x80; // index 1: 0x8001, on node a only
    d[3] = 0x01;
    ASSERT_EQ(smp(p.a, ib::method::Set, ib::attr::PKeyTable, 0, d).status(), 0);
    UdQp ua = make_ud(p.a);
    ohca_qp_attr attr{};
    attr.pkey_index = 1;
    // A UD QP takes its P_Key index in INIT: a fresh one, moved with it.
    UdQp ub = make_ud(p.b);
    UdQp ua1;
    ua1.pd = p.a.create_pd();
    ua1.scq = p.a.create_cq(8);
    ua1.rcq = p.a.create_cq(8);
    ua1.q = p.a.create_qp(ua1.pd, ua1.scq.cqn, ua1.rcq.cqn, 6, 6, 0, OHCA_QPT_UD);
    ua1.buf = ua.buf;
    ua1.key = p.a.reg_mr(ua1.pd, ua.buf, 1 << 16, OHCA_ACCESS_LOCAL_WRITE);
    attr.qp_state = OHCA_QPS_INIT;
    attr.qkey = kQkey;
    ASSERT_EQ(p.a.modify(ua1.q.qpn,
                         OHCA_QP_STATE | OHCA_QP_PKEY_INDEX | OHCA_QP_PORT | OHCA_QP_QKEY, attr)
                  .status,
              OHCA_STATUS_OK);
    attr = {};
    attr.qp_state = OHCA_QPS_RTR;
    ASSERT_EQ(p.a.modify(ua1.q.qpn, OHCA_QP_STATE, attr).status, OHCA_STATUS_OK);
    attr.qp_state = OHCA_QPS_RTS;
    ASSERT_EQ(p.a.modify(ua1.q.qpn, OHCA_QP_STATE | OHCA_QP_SQ_PSN, attr).status, OHCA_STATUS_OK);
    p.b.post_recv(ub.q, 1, {{ub.buf, 4096, ub.key}});
    ohca_av_ib av{};
    av.dlid = 0x20;
    post_ud(p.a, ua1, ub.q.qpn, av, 64);
    pump(p.a, p.b);
    EXPECT_TRUE(p.b.poll(ub.rcq).empty());
    EXPECT_EQ(device_of(p.b.e).ib_counters()->pkey_violations, 1u);
    EXPECT_EQ(query_port(p.b).pkey_violations, 1u);
    // The default partition still passes.
    post_ud(p.a, ua, ub.q.qpn, av, 64);
    pump(p.a, p.b);
    EXPECT_EQ(p.b.poll(ub.rcq).size(), 1u);
}

// Corrupted frames: a bad VCRC, a bad ICRC (VCRC made right again), a
// frame of the wrong length, VL15 to a data QP: dropped and counted.
TEST(IbWire, BadFramesDroppedAndCounted) {
    IbPair p;
    UdQp ua = make_ud(p.a);
    UdQp ub = make_ud(p.b);
    ohca_av_ib av{};
    av.dlid = 0x20;
    post_ud(p.a, ua, ub.q.qpn, av, 200);
    p.a.process();
    ASSERT_EQ(data_frames(p.a).size(), 1u);
    const std::vector<uint8_t> good = data_frames(p.a)[0];
    p.a.host.wire.clear();
    auto offer = [&](std::vector<uint8_t> f) {
        EXPECT_EQ(ohca_engine_receive_frame(p.b.e, f.data(), f.size()), OHCA_ENGINE_RX_CONSUMED);
        p.b.process();
    };
    std::vector<uint8_t> f = good;
    f.back() ^= 1;
    offer(f);
    EXPECT_EQ(device_of(p.b.e).ib_counters()->bad_vcrc, 1u);
    f = good;
    f[40] ^= 1; // payload
    ib::reseal_vcrc(f);
    offer(f);
    EXPECT_EQ(device_of(p.b.e).roce_counters().rx_bad_icrc, 2u);
    f = good;
    f.resize(f.size() - 4);
    offer(f);
    f = good;
    ib::set_vl(f, ib::kVl15);
    offer(f);
    EXPECT_EQ(device_of(p.b.e).ib_counters()->vl15_dropped, 1u);
    EXPECT_EQ(device_of(p.b.e).ib_counters()->rcv_errors, 3u);
    p.b.post_recv(ub.q, 1, {{ub.buf, 4096, ub.key}});
    offer(good);
    EXPECT_EQ(p.b.poll(ub.rcq).size(), 1u);
}

// Credit-based flow control: a receiver whose FCPs never arrive stops the
// sender, which holds only a bounded few packets and loses none; the next
// FCP (the periodic one) lets it go on, and everything arrives once.
TEST(IbWire, WithheldCreditStopsTheSenderThenItResumes) {
    IbPair p;
    Side sa = make_side(p.a, 1 << 20, 8, [](size_t k) { return static_cast<uint8_t>(k * 5 + 3); });
    Side sb = make_side(p.b, 1 << 20, 8, [](size_t) { return uint8_t{0}; });
    p.a.connect(sa.qp, sb.qp.qpn, p.b, 5);
    p.b.connect(sb.qp, sa.qp.qpn, p.a, 5);
    constexpr int kMsgs = 100;
    constexpr uint32_t kLen = 4000;
    for (int i = 0; i < kMsgs; ++i) {
        p.b.post_recv(sb.qp, static_cast<uint64_t>(i),
                      {{sb.buf + uint64_t{kLen} * i, kLen, sb.key}});
    }
    for (int i = 0; i < kMsgs; ++i) {
        SendReq s;
        s.wr_id = static_cast<uint64_t>(i);
        s.sges = {{sa.buf + uint64_t{kLen} * i, kLen, sa.key}};
        p.a.post_send(sa.qp, s, i == kMsgs - 1);
    }
    // b's FCPs are lost: a runs out of credit and stops; the wire goes idle.
    size_t a_data = 0;
    pump(p.a, p.b, [&](bool from_a, const std::vector<uint8_t> &f) {
        if (from_a && f.size() != ib::kLinkPacketBytes) {
            ++a_data;
        }
        return !from_a && f.size() == ib::kLinkPacketBytes;
    });
    const auto *ca = device_of(p.a.e).ib_counters();
    EXPECT_LT(a_data, size_t{kMsgs});
    EXPECT_GT(a_data, 0u);
    size_t got = p.b.poll(sb.rcq).size();
    EXPECT_LT(got, size_t{kMsgs});
    // Bounded: what a holds back is within IbFlow's bound; nothing dropped.
    EXPECT_EQ(ca->xmit_discards, 0u);
    EXPECT_EQ(device_of(p.a.e).roce_counters().retransmits, 0u);
    // The periodic FCP repairs it.
    for (int round = 0; round < 200 && got < size_t{kMsgs}; ++round) {
        p.b.host.now += IbFlow::kFcpPeriodNs;
        ohca_engine_process(p.b.e);
        pump(p.a, p.b);
        got += p.b.poll(sb.rcq).size();
    }
    EXPECT_EQ(got, size_t{kMsgs}); // every message, once
    size_t ok = 0;
    for (const auto &c : p.a.poll(sa.scq)) {
        ok += c.status == OHCA_CQE_SUCCESS ? 1 : 0;
    }
    EXPECT_EQ(ok, size_t{kMsgs});
    EXPECT_EQ(device_of(p.b.e).ib_counters()->rcv_errors, 0u); // no overrun
    EXPECT_EQ(device_of(p.a.e).roce_counters().retransmits, 0u);
    std::vector<uint8_t> u(size_t{kLen} * kMsgs), v(size_t{kLen} * kMsgs);
    EXPECT_TRUE(p.a.host.read(sa.buf, u.data(), u.size()));
    EXPECT_TRUE(p.b.host.read(sb.buf, v.data(), v.size()));
    EXPECT_TRUE(u == v);
}

} // namespace
} // namespace ohca::test
