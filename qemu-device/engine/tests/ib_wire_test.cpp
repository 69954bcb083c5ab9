// SPDX-License-Identifier: GPL-2.0-or-later
// Two devices with InfiniBand ports on a fake wire, no switch: the port
// states driven by SMPs through MAD_IFC (the test is the SM), RC and UD
// addressed by LID, with and without a GRH, and the receive rules (P_Key,
// VL15 and QP0, VCRC, ICRC, length), each drop counted.
#include "device/device.hpp"
#include "device/limits.hpp"
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

UdQp make_ud(RdmaNode &n, uint8_t type = OHCA_QPT_UD, uint16_t pkey_index = 0) {
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
    a.pkey_index = pkey_index; // a UD QP takes its P_Key index in INIT
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
    UdQp ua1 = make_ud(p.a, OHCA_QPT_UD, 1);
    UdQp ub = make_ud(p.b);
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
    auto [sa, sb] = p.rc(1 << 20, 8, [](size_t k) { return static_cast<uint8_t>(k * 5 + 3); });
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

// The link's credits make it lossless: an ACK later than the measured
// retransmission timeout is a queue behind a credit wait, not a loss (a
// 3:1 incast through a shaped switch made 150 spurious timeouts before),
// so only the QP's local ACK timeout sends again, as on a PFC priority.
TEST(IbWire, LateAckWaitsForTheLocalAckTimeout) {
    IbPair p;
    Side sa = make_side(p.a, 1 << 20, 6, [](size_t k) { return static_cast<uint8_t>(k * 3 + 1); });
    Side sb = make_side(p.b, 1 << 20, 6, [](size_t) { return uint8_t{0}; });
    p.a.connect(sa.qp, sb.qp.qpn, p.b, 5);
    p.b.connect(sb.qp, sa.qp.qpn, p.a, 5);
    // every receive posted first: the ACKs give end-to-end credit for all
    for (uint64_t i = 0; i < 5; ++i) {
        p.b.post_recv(sb.qp, i, {{sb.buf + 4096 * i, 4096, sb.key}});
    }
    auto send = [&](uint64_t i) {
        SendReq s;
        s.wr_id = i;
        s.sges = {{sa.buf + 4096 * i, 2000, sa.key}};
        p.a.post_send(sa.qp, s);
    };
    // round trips measured (no time passes: the RTO at its 10 ms floor)
    for (uint64_t i = 0; i < 4; ++i) {
        send(i);
        pump(p.a, p.b);
    }
    ASSERT_EQ(p.a.poll(sa.scq).size(), 4u);
    // the next message's ACK is late: lost here, found by the timer
    send(4);
    pump(p.a, p.b, [](bool from_a, const std::vector<uint8_t> &f) {
        return !from_a && f.size() != ib::kLinkPacketBytes;
    });
    const auto &rc = device_of(p.a.e).roce_counters();
    // a's loop runs every millisecond (a timer waits one run for the
    // frames already received)
    auto run = [&](uint64_t ns) {
        for (uint64_t t = 0; t < ns; t += 1'000'000) {
            p.a.host.now += 1'000'000;
            p.a.process();
        }
    };
    run(5 * DeviceLimits::min_rto_ns); // well past the measured RTO
    EXPECT_EQ(rc.timeouts, 0u);
    EXPECT_EQ(rc.retransmits, 0u);
    run(DeviceLimits::min_ack_timeout_ns - 5 * DeviceLimits::min_rto_ns + 2'000'000);
    EXPECT_EQ(rc.timeouts, 1u); // at the local ACK timeout (its floor)
    pump(p.a, p.b);
    const auto sc = p.a.poll(sa.scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(p.b.poll(sb.rcq).size(), 5u);
}

// ---- multicast by MLID --------------------------------------------------------

ohca_mcast_in mcast_in(uint32_t qpn, const std::array<uint8_t, 16> &mgid) {
    ohca_mcast_in in{};
    in.qpn = qpn;
    std::copy(mgid.begin(), mgid.end(), in.gid);
    return in;
}

constexpr std::array<uint8_t, 16> kMgid = {0xff, 0x12, 0x40, 0x1b, 0x80, 0x01, 0,    0,
                                           0,    0,    0,    0,    0xff, 0xff, 0xff, 0xff};
constexpr uint16_t kMlid = 0xC001;

// The SM gives a group an MLID; the packets carry it as their DLID and
// the MGID in their GRH. Every QP attached to the group gets a copy, on
// the peer and (looped back) on the sender's own device; a detached QP
// gets none, and a group packet without a GRH reaches no one.
TEST(IbWire, MulticastByMlidAttachDetach) {
    IbPair p;
    UdQp ua = make_ud(p.a);
    UdQp ua2 = make_ud(p.a); // a member on the sending device
    UdQp ub = make_ud(p.b);
    UdQp ub2 = make_ud(p.b);
    UdQp ub3 = make_ud(p.b); // never attached
    for (UdQp *q : {&ua2, &ub, &ub2, &ub3}) {
        RdmaNode &n = q == &ua2 ? p.a : p.b;
        for (uint32_t i = 0; i < 3; ++i) {
            n.post_recv(q->q, i, {{q->buf + 512u * i, 512, q->key}});
        }
    }
    for (UdQp *q : {&ub, &ub2}) {
        ASSERT_EQ(p.b.cmd_in(OHCA_CMD_ATTACH_MCAST, mcast_in(q->q.qpn, kMgid)).status,
                  OHCA_STATUS_OK);
    }
    ASSERT_EQ(p.a.cmd_in(OHCA_CMD_ATTACH_MCAST, mcast_in(ua2.q.qpn, kMgid)).status, OHCA_STATUS_OK);
    ohca_av_ib av{};
    av.dlid = kMlid;
    av.flags = OHCA_AV_IB_GRH;
    av.hop_limit = 1;
    std::copy(kMgid.begin(), kMgid.end(), av.dgid);
    post_ud(p.a, ua, OHCA_MCAST_QPN, av, 100);
    p.a.process();
    ASSERT_EQ(data_frames(p.a).size(), 1u); // one packet on the wire
    ib::Packet pk;
    ASSERT_EQ(ib::parse(data_frames(p.a)[0], pk), ib::PacketError::Ok);
    EXPECT_EQ(pk.lrh.dlid, kMlid);
    EXPECT_TRUE(pk.has_grh);
    EXPECT_EQ(pk.grh.dgid, kMgid);
    EXPECT_EQ(pk.bth.dest_qp, OHCA_MCAST_QPN);
    pump(p.a, p.b);
    for (UdQp *q : {&ub, &ub2}) {
        const auto rc = p.b.poll(q->rcq);
        ASSERT_EQ(rc.size(), 1u);
        EXPECT_EQ(rc[0].status, OHCA_CQE_SUCCESS);
        EXPECT_EQ(rc[0].byte_len, 140u);
        EXPECT_EQ(rc[0].src_qp & OHCA_CQE_QPN_MASK, ua.q.qpn);
        EXPECT_EQ(OHCA_CQE_IB_SLID(rc[0].qpn, rc[0].vendor_err), 0x10u);
    }
    EXPECT_TRUE(p.b.poll(ub3.rcq).empty());
    EXPECT_EQ(p.a.poll(ua2.rcq).size(), 1u); // looped back to the local member
    EXPECT_EQ(device_of(p.b.e).roce_counters().mcast_rx_packets, 1u);
    ASSERT_EQ(p.a.poll(ua.scq).size(), 1u);

    // Detached: ub gets no more; ub2 still does.
    ASSERT_EQ(p.b.cmd_in(OHCA_CMD_DETACH_MCAST, mcast_in(ub.q.qpn, kMgid)).status, OHCA_STATUS_OK);
    p.a.host.wire.clear();
    post_ud(p.a, ua, OHCA_MCAST_QPN, av, 100);
    pump(p.a, p.b);
    EXPECT_TRUE(p.b.poll(ub.rcq).empty());
    EXPECT_EQ(p.b.poll(ub2.rcq).size(), 1u);
    // A group's DLID without the GRH (no MGID to look up): dropped.
    const uint64_t dropped = p.b.stats().roce_rx_dropped;
    av.flags = 0;
    post_ud(p.a, ua, OHCA_MCAST_QPN, av, 100);
    pump(p.a, p.b);
    EXPECT_TRUE(p.b.poll(ub2.rcq).empty());
    EXPECT_EQ(p.b.stats().roce_rx_dropped, dropped + 1);
    // Last member gone: the group's packets reach no one.
    ASSERT_EQ(p.b.cmd_in(OHCA_CMD_DETACH_MCAST, mcast_in(ub2.q.qpn, kMgid)).status, OHCA_STATUS_OK);
    av.flags = OHCA_AV_IB_GRH;
    post_ud(p.a, ua, OHCA_MCAST_QPN, av, 100);
    pump(p.a, p.b);
    EXPECT_TRUE(p.b.poll(ub2.rcq).empty());
    EXPECT_EQ(p.b.stats().roce_rx_dropped, dropped + 2);
    EXPECT_EQ(device_of(p.b.e).roce_counters().mcast_rx_packets, 2u);
}

// Every reason a received packet is dropped has a counter of its own in
// QUERY_STATS (the hw counters a run prints), beside roce_rx_dropped: a
// DLID not the port's, a group no QP here is attached to, a group member
// of another partition, VL15 to a data QP, a peer beyond its credit, data
// while the port is not ARMED or ACTIVE, a frame while the link is down.
TEST(IbWire, DropReasonsCountedApart) {
    IbPair p;
    ib::SmpData d{};
    d[0] = 0xff; // index 0: the default P_Key
    d[1] = 0xff;
    d[2] = 0x80; // index 1: 0x8001
    d[3] = 0x01;
    ASSERT_EQ(smp(p.b, ib::method::Set, ib::attr::PKeyTable, 0, d).status(), 0);
    UdQp ua = make_ud(p.a);
    UdQp ub = make_ud(p.b);
    UdQp ub1 = make_ud(p.b, OHCA_QPT_UD, 1); // in 0x8001 only
    for (UdQp *q : {&ub, &ub1}) {
        for (uint32_t i = 0; i < 2; ++i) {
            p.b.post_recv(q->q, i, {{q->buf + 512u * i, 512, q->key}});
        }
    }
    const ohca_query_stats_out s0 = p.b.stats();
    auto grew = [&](uint64_t ohca_query_stats_out::*f) { return p.b.stats().*f - s0.*f; };

    ohca_av_ib av{};
    av.dlid = 0x30; // nobody's
    post_ud(p.a, ua, ub.q.qpn, av, 64);
    pump(p.a, p.b);
    EXPECT_EQ(grew(&ohca_query_stats_out::ib_rx_bad_dlid), 1u);

    // A group nobody here joined, then one ub and ub1 joined: ub1's
    // partition is not the packet's (0xFFFF), ub takes it.
    av.dlid = kMlid;
    av.flags = OHCA_AV_IB_GRH;
    av.hop_limit = 1;
    std::copy(kMgid.begin(), kMgid.end(), av.dgid);
    post_ud(p.a, ua, OHCA_MCAST_QPN, av, 64);
    pump(p.a, p.b);
    EXPECT_EQ(grew(&ohca_query_stats_out::mcast_rx_no_group), 1u);
    EXPECT_EQ(grew(&ohca_query_stats_out::roce_bad_qpn), 1u);
    for (UdQp *q : {&ub, &ub1}) {
        ASSERT_EQ(p.b.cmd_in(OHCA_CMD_ATTACH_MCAST, mcast_in(q->q.qpn, kMgid)).status,
                  OHCA_STATUS_OK);
    }
    post_ud(p.a, ua, OHCA_MCAST_QPN, av, 64);
    pump(p.a, p.b);
    EXPECT_EQ(p.b.poll(ub.rcq).size(), 1u);
    EXPECT_TRUE(p.b.poll(ub1.rcq).empty());
    EXPECT_EQ(grew(&ohca_query_stats_out::mcast_rx_pkts), 1u);
    EXPECT_EQ(grew(&ohca_query_stats_out::ib_rx_pkey_dropped), 1u);
    EXPECT_EQ(grew(&ohca_query_stats_out::roce_rx_dropped), 2u); // bad DLID, no group

    // One unicast packet, offered again and again.
    av = {};
    av.dlid = 0x20;
    p.a.host.wire.clear();
    post_ud(p.a, ua, ub.q.qpn, av, 200);
    p.a.process();
    ASSERT_EQ(data_frames(p.a).size(), 1u);
    const std::vector<uint8_t> good = data_frames(p.a)[0];
    auto offer = [&](std::vector<uint8_t> f) {
        return ohca_engine_receive_frame(p.b.e, f.data(), f.size());
    };
    std::vector<uint8_t> f = good;
    ib::set_vl(f, ib::kVl15);
    EXPECT_EQ(offer(f), OHCA_ENGINE_RX_CONSUMED);
    p.b.process();
    EXPECT_EQ(grew(&ohca_query_stats_out::ib_rx_vl15_dropped), 1u);

    // A peer that ignores our credit: what it sends beyond the buffer we
    // advertised (at most 2048 blocks a VL: 512 of these 4-block frames)
    // is dropped, the rest queued; none of it before the run takes it.
    uint64_t refused = 0;
    for (int i = 0; i < 600; ++i) {
        EXPECT_EQ(offer(good), OHCA_ENGINE_RX_CONSUMED);
    }
    refused = grew(&ohca_query_stats_out::ib_rx_credit_overrun);
    EXPECT_GE(refused, 600u - 512u);
    EXPECT_LT(refused, 600u);
    p.b.process();

    // The port back in INIT (the SM set it DOWN): data is refused.
    ib::PortInfo pi = port_info(p.b);
    pi.port_state = ib::port_state::Down;
    ASSERT_EQ(set_port_info(p.b, pi), 0);
    ASSERT_EQ(port_info(p.b).port_state, ib::port_state::Init);
    EXPECT_EQ(offer(good), OHCA_ENGINE_RX_CONSUMED);
    p.b.process();
    EXPECT_EQ(grew(&ohca_query_stats_out::ib_rx_port_not_ready), 1u);

    // The link down: the frame is not queued at all.
    ohca_engine_set_link(p.b.e, false);
    EXPECT_EQ(offer(good), OHCA_ENGINE_RX_CONSUMED);
    p.b.process();
    EXPECT_EQ(grew(&ohca_query_stats_out::rx_backlog_dropped), 1u);
}

// ---- traps -------------------------------------------------------------------

ohca_set_port_cap_in port_cap(uint32_t caps) {
    ohca_set_port_cap_in in{};
    in.port = 1;
    in.host_caps = caps;
    return in;
}

constexpr uint16_t kSmLid = 1;

// A port brought up by an SM at kSmLid whose SubnetTimeout is 'timeout'.
void sm_bring_up_timeout(RdmaNode &n, uint16_t lid, uint8_t timeout) {
    sm_bring_up(n, lid);
    ib::PortInfo pi = port_info(n);
    pi.subnet_timeout = timeout;
    ASSERT_EQ(set_port_info(n, pi), 0);
    n.host.wire.clear();
}

// The traps a node put on the wire: the VL15 frames to the SM, parsed.
struct SentTrap {
    ib::Packet pk;
    ib::Smp smp;
    ib::Notice notice;
    uint32_t src_qp = 0;
};

std::vector<SentTrap> traps_sent(RdmaNode &n) {
    std::vector<SentTrap> v;
    for (const auto &f : data_frames(n)) {
        SentTrap t;
        EXPECT_EQ(ib::parse(f, t.pk), ib::PacketError::Ok);
        if (t.pk.lrh.vl != ib::kVl15) {
            continue;
        }
        EXPECT_EQ(f.size(), ib::kUdMadFrameBytes);
        const uint8_t *deth = f.data() + t.pk.payload_offset;
        t.src_qp = (uint32_t{deth[5]} << 16) | (uint32_t{deth[6]} << 8) | deth[7];
        ib::Mad m{};
        std::copy_n(deth + ib::kDethBytes, m.size(), m.begin());
        t.smp = ib::Smp::read(m);
        t.notice = ib::Notice::read(t.smp.data);
        v.push_back(t);
    }
    n.host.wire.clear();
    return v;
}

// The SM's TrapRepress of a trap, through MAD_IFC as the driver hands it.
uint32_t repress(RdmaNode &n, uint64_t tid) {
    ib::Smp r;
    r.hdr.mgmt_class = ib::mgmt_class::SubnLidRouted;
    r.hdr.method = ib::method::TrapRepress;
    r.hdr.attr_id = ib::attr::Notice;
    r.hdr.tid = tid;
    ib::Mad m{};
    r.write(m);
    ohca_mad_ifc_in in{};
    in.port = 1;
    in.flags = OHCA_MAD_IFC_IGNORE_MKEY;
    std::copy(m.begin(), m.end(), in.mad);
    ohca_mad_ifc_out out{};
    EXPECT_EQ(n.cmd(OHCA_CMD_MAD_IFC, &in, sizeof(in), &out, sizeof(out)).status, OHCA_STATUS_OK);
    return out.result;
}

// The time of one SubnetTimeout of 'timeout'.
uint64_t subnet_timeout_ns(uint8_t timeout) {
    return uint64_t{4096} << timeout;
}

void advance(RdmaNode &n, uint64_t ns) {
    n.host.now += ns;
    n.process();
}

// SET_PORT_CAP: the host's bits reach PortInfo and QUERY_PORT; the change
// goes to the SM as trap 144 (LocalChangedAttribute: CapabilityMask) from
// QP0 on VL15, again every SubnetTimeout with the same TID, until the SM's
// TrapRepress of that TID.
TEST(IbTraps, CapabilityMaskChangeTrap144UntilRepressed) {
    RdmaNode n(1, false, 0, 10, 0, nullptr, OHCA_LINK_IB);
    constexpr uint8_t kTimeout = 12; // 16.8 ms
    sm_bring_up_timeout(n, 0x10, kTimeout);
    EXPECT_EQ(port_info(n).capability_mask & ib::port_cap::IsCmSupported, 0u); // the host's
    ASSERT_EQ(
        n.cmd_in(OHCA_CMD_SET_PORT_CAP, port_cap(OHCA_PORT_CAP_IS_SM | OHCA_PORT_CAP_IS_CM)).status,
        OHCA_STATUS_OK);
    n.process();
    const uint32_t mask = port_info(n).capability_mask;
    EXPECT_NE(mask & ib::port_cap::IsSm, 0u);
    EXPECT_NE(mask & ib::port_cap::IsCmSupported, 0u);
    EXPECT_EQ(mask & ib::port_cap::IsSmDisabled, 0u);
    EXPECT_NE(mask & ib::port_cap::IsTrapSupported, 0u);
    EXPECT_EQ(query_port(n).port_cap_flags, mask);
    auto t = traps_sent(n);
    ASSERT_EQ(t.size(), 1u);
    EXPECT_EQ(t[0].pk.lrh.dlid, kSmLid);
    EXPECT_EQ(t[0].pk.lrh.slid, 0x10);
    EXPECT_EQ(t[0].pk.bth.dest_qp, 0u);
    EXPECT_EQ(t[0].src_qp, 0u);
    EXPECT_EQ(t[0].pk.bth.pkey, ib::kDefaultPKey);
    EXPECT_EQ(t[0].smp.hdr.mgmt_class, ib::mgmt_class::SubnLidRouted);
    EXPECT_EQ(t[0].smp.hdr.method, ib::method::Trap);
    EXPECT_EQ(t[0].smp.hdr.attr_id, ib::attr::Notice);
    EXPECT_TRUE(t[0].notice.is_generic);
    EXPECT_EQ(t[0].notice.trap_number, ib::trap::CapabilityMaskChange);
    EXPECT_EQ(t[0].notice.producer_type, ib::node_type::Ca);
    EXPECT_EQ(t[0].notice.issuer_lid, 0x10);
    const auto &d = t[0].notice.details;
    EXPECT_EQ((d[2] << 8) | d[3], 0x10);                                   // LIDADDR
    EXPECT_EQ(uint32_t(d[6]) << 24 | d[7] << 16 | d[8] << 8 | d[9], mask); // the new mask
    const uint64_t tid = t[0].smp.hdr.tid;

    // Not before SubnetTimeout; then once, with the same TID.
    advance(n, subnet_timeout_ns(kTimeout) / 2);
    EXPECT_TRUE(traps_sent(n).empty());
    advance(n, subnet_timeout_ns(kTimeout));
    t = traps_sent(n);
    ASSERT_EQ(t.size(), 1u);
    EXPECT_EQ(t[0].smp.hdr.tid, tid);
    // Another TID represses nothing; the trap's own ends it.
    EXPECT_EQ(repress(n, tid + 1), uint32_t{OHCA_MAD_IFC_CONSUMED});
    advance(n, subnet_timeout_ns(kTimeout));
    EXPECT_EQ(traps_sent(n).size(), 1u);
    EXPECT_EQ(repress(n, tid), uint32_t{OHCA_MAD_IFC_CONSUMED});
    for (int i = 0; i < 10; ++i) {
        advance(n, subnet_timeout_ns(kTimeout));
    }
    EXPECT_TRUE(traps_sent(n).empty());
    const auto &c = device_of(n.e).ib_counters()->traps;
    EXPECT_EQ(c.sent, 3u);
    EXPECT_EQ(c.repressed, 1u);
    // The same mask again is no change: no trap.
    ASSERT_EQ(
        n.cmd_in(OHCA_CMD_SET_PORT_CAP, port_cap(OHCA_PORT_CAP_IS_SM | OHCA_PORT_CAP_IS_CM)).status,
        OHCA_STATUS_OK);
    n.process();
    EXPECT_TRUE(traps_sent(n).empty());
    // IsSM cleared (opensm closed issm): a trap; IsSMdisabled stays clear
    // (rdma-core 56's libibumad takes a port with it for a GSI-only plane
    // and found no SMI port: smpquery failed on every port but the SM's).
    ASSERT_EQ(n.cmd_in(OHCA_CMD_SET_PORT_CAP, port_cap(OHCA_PORT_CAP_IS_CM)).status,
              OHCA_STATUS_OK);
    n.process();
    EXPECT_EQ(port_info(n).capability_mask & ib::port_cap::IsSm, 0u);
    EXPECT_EQ(port_info(n).capability_mask & ib::port_cap::IsSmDisabled, 0u);
    t = traps_sent(n);
    ASSERT_EQ(t.size(), 1u);
    EXPECT_NE(t[0].smp.hdr.tid, tid);
}

// Bounded: without a repress a trap goes out kMaxSends times and ends; an
// SM's SubnetTimeout of 0 cannot make the repeats faster than
// kMinPeriodNs; a host that flips its bits while a trap is pending
// replaces it without a fresh budget; a port without an SM, or not
// ACTIVE, sends none (the SM's sweep reads the mask).
TEST(IbTraps, BoundedSendsAndRate) {
    RdmaNode n(1, false, 0, 10, 0, nullptr, OHCA_LINK_IB);
    // Before the SM: the mask changes, no trap.
    ASSERT_EQ(n.cmd_in(OHCA_CMD_SET_PORT_CAP, port_cap(OHCA_PORT_CAP_IS_CM)).status,
              OHCA_STATUS_OK);
    n.process();
    EXPECT_NE(port_info(n).capability_mask & ib::port_cap::IsCmSupported, 0u);
    EXPECT_TRUE(traps_sent(n).empty());
    sm_bring_up_timeout(n, 0x10, 0);
    size_t sent = 0;
    for (uint32_t i = 0; i < 1000; ++i) {
        const uint32_t caps = (i % 2) != 0 ? OHCA_PORT_CAP_IS_SM : OHCA_PORT_CAP_IS_DEVICE_MGMT;
        ASSERT_EQ(n.cmd_in(OHCA_CMD_SET_PORT_CAP, port_cap(caps)).status, OHCA_STATUS_OK);
        n.process();
        sent += traps_sent(n).size();
        n.host.now += 1000; // 1 us: far below the floor
    }
    EXPECT_LE(sent, 2u); // at most one per kMinPeriodNs (1 ms passed)
    for (int i = 0; i < 100; ++i) {
        advance(n, IbTraps::kMinPeriodNs);
        sent += traps_sent(n).size();
    }
    EXPECT_EQ(sent, size_t{IbTraps::kMaxSends});
    const auto &c = device_of(n.e).ib_counters()->traps;
    EXPECT_EQ(c.raised, 1u);
    EXPECT_EQ(c.sent, uint64_t{IbTraps::kMaxSends});
    EXPECT_EQ(c.expired, 1u);
    // Leaving ACTIVE drops a pending trap: sent once, then the link falls
    // and comes back (the port in INIT), and no repeat follows.
    ASSERT_EQ(n.cmd_in(OHCA_CMD_SET_PORT_CAP, port_cap(0)).status, OHCA_STATUS_OK);
    n.process();
    EXPECT_EQ(traps_sent(n).size(), 1u);
    ohca_engine_set_link(n.e, false);
    n.process();
    ohca_engine_set_link(n.e, true);
    for (int i = 0; i < 10; ++i) {
        advance(n, IbTraps::kMinPeriodNs);
    }
    EXPECT_TRUE(traps_sent(n).empty());
    EXPECT_EQ(c.sent, uint64_t{IbTraps::kMaxSends} + 1);
}

TEST(IbTraps, SetPortCapChecksItsInput) {
    RdmaNode n(1, false, 0, 10, 0, nullptr, OHCA_LINK_IB);
    auto in = port_cap(OHCA_PORT_CAP_IS_SM);
    in.port = 2;
    auto r = n.cmd_in(OHCA_CMD_SET_PORT_CAP, in);
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(r.syndrome, offsetof(ohca_set_port_cap_in, port));
    in = port_cap(OHCA_PORT_CAP_IS_SM);
    in.rsvd[2] = 1;
    r = n.cmd_in(OHCA_CMD_SET_PORT_CAP, in);
    EXPECT_EQ(r.status, OHCA_STATUS_RESERVED_NONZERO);
    EXPECT_EQ(r.syndrome, offsetof(ohca_set_port_cap_in, rsvd) + 2);
    // The device's own bits are not the host's to set.
    r = n.cmd_in(OHCA_CMD_SET_PORT_CAP, port_cap(ib::port_cap::IsTrapSupported));
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(r.syndrome, offsetof(ohca_set_port_cap_in, host_caps));
    const uint32_t before = port_info(n).capability_mask;
    EXPECT_NE(before & ib::port_cap::IsTrapSupported, 0u);
    EXPECT_EQ(before & ib::port_cap::IsSm, 0u);
    EXPECT_EQ(before & ib::port_cap::IsSmDisabled, 0u); // no SM here is not a disabled one
    // An Ethernet port has no SMA.
    RdmaNode e(2);
    EXPECT_EQ(e.cmd_in(OHCA_CMD_SET_PORT_CAP, port_cap(OHCA_PORT_CAP_IS_SM)).status,
              OHCA_STATUS_BAD_STATE);
    // A good one shows in PortInfo.
    ASSERT_EQ(n.cmd_in(OHCA_CMD_SET_PORT_CAP, port_cap(OHCA_PORT_CAP_IS_SM)).status,
              OHCA_STATUS_OK);
    EXPECT_NE(port_info(n).capability_mask & ib::port_cap::IsSm, 0u);
}

// An SM on this port (opensm in this host: the SM LID is the port's own):
// the trap comes back to the host's QP0 as a received SMP, never to the
// wire, repeated on the same budget until the TrapRepress; the SM's QP0
// send to our own LID (the repress's way back) loops back to QP0 too.
// Before, a port whose SM was itself sent no trap at all.
TEST(IbTraps, TrapToAnSmOnThisPortLoopsBackToQp0) {
    RdmaNode n(1, false, 0, 10, 0, nullptr, OHCA_LINK_IB);
    constexpr uint16_t kLid = 0x10;
    constexpr uint8_t kTimeout = 12; // 16.8 ms
    sm_bring_up_timeout(n, kLid, kTimeout);
    ib::PortInfo pi = port_info(n);
    pi.master_sm_lid = kLid;
    ASSERT_EQ(set_port_info(n, pi), 0);
    UdQp q0 = make_ud(n, OHCA_QPT_SMI);
    ASSERT_EQ(q0.q.qpn, 0u);
    for (uint64_t i = 0; i < 8; ++i) {
        n.post_recv(q0.q, i, {{q0.buf + i * 512, 512, q0.key}});
    }
    n.host.wire.clear();
    ASSERT_EQ(n.cmd_in(OHCA_CMD_SET_PORT_CAP, port_cap(OHCA_PORT_CAP_IS_SM)).status,
              OHCA_STATUS_OK);
    n.process();
    EXPECT_TRUE(traps_sent(n).empty()); // not to the wire
    auto rc = n.poll(q0.rcq);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(rc[0].byte_len, 40u + ib::kMadBytes); // the GRH's room, then the MAD
    EXPECT_EQ(rc[0].src_qp & OHCA_CQE_QPN_MASK, 0u);
    EXPECT_EQ(OHCA_CQE_IB_SLID(rc[0].qpn, rc[0].vendor_err), kLid);
    ib::Mad m{};
    n.host.get_bytes(q0.buf + 40, m.data(), m.size());
    const ib::Smp trap = ib::Smp::read(m);
    EXPECT_EQ(trap.hdr.method, ib::method::Trap);
    EXPECT_EQ(ib::Notice::read(trap.data).trap_number, ib::trap::CapabilityMaskChange);
    EXPECT_EQ(ib::Notice::read(trap.data).issuer_lid, kLid);
    // Repeated every SubnetTimeout, the same TID, until repressed.
    advance(n, subnet_timeout_ns(kTimeout));
    rc = n.poll(q0.rcq);
    ASSERT_EQ(rc.size(), 1u);
    n.host.get_bytes(q0.buf + 512 + 40, m.data(), m.size());
    EXPECT_EQ(ib::Smp::read(m).hdr.tid, trap.hdr.tid);
    EXPECT_EQ(repress(n, trap.hdr.tid), uint32_t{OHCA_MAD_IFC_CONSUMED});
    for (int i = 0; i < 10; ++i) {
        advance(n, subnet_timeout_ns(kTimeout));
    }
    EXPECT_TRUE(n.poll(q0.rcq).empty());
    EXPECT_TRUE(traps_sent(n).empty());
    const auto &c = device_of(n.e).ib_counters()->traps;
    EXPECT_EQ(c.sent, 2u);
    EXPECT_EQ(c.repressed, 1u);
    // The SM's QP0 send to this port's LID (its TrapRepress) is looped
    // back to QP0 on VL15: the host's MAD layer then hands it to MAD_IFC.
    ohca_av_ib av{};
    av.dlid = kLid;
    post_ud(n, q0, 0, av, ib::kMadBytes);
    n.process();
    EXPECT_TRUE(traps_sent(n).empty());
    EXPECT_EQ(n.poll(q0.rcq).size(), 1u);
    // Unrepressed, a trap to this port ends after kMaxSends as any other.
    ASSERT_EQ(n.cmd_in(OHCA_CMD_SET_PORT_CAP, port_cap(0)).status, OHCA_STATUS_OK);
    n.process();
    for (int i = 0; i < 10; ++i) {
        advance(n, subnet_timeout_ns(kTimeout));
    }
    EXPECT_EQ(n.poll(q0.rcq).size(), size_t{IbTraps::kMaxSends});
    EXPECT_EQ(c.expired, 1u);
}

constexpr uint64_t kMKey = 0x1122334455667788ull;

// An active port whose M_Key protects Gets as well as Sets (protect bits
// 2), nothing on its wire yet.
void protect_with_m_key(RdmaNode &n) {
    sm_bring_up_timeout(n, 0x10, 12);
    ib::PortInfo pi = port_info(n);
    pi.m_key = kMKey;
    pi.m_key_protect_bits = 2;
    pi.port_state = ib::port_state::NoChange;
    ASSERT_EQ(set_port_info(n, pi), 0);
    n.process();
    n.host.wire.clear();
}

// An SMP from the wire that fails the M_Key check (IBTA 14.2.4): dropped,
// and trap 256 (Bad M_Key) to the SM with the requester's LID, the
// method, attribute, modifier and the M_Key it carried. A flood of them
// (a hostile peer guessing keys) raises one trap while it is pending.
TEST(IbTraps, BadMKeyTrap256) {
    RdmaNode n(1, false, 0, 10, 0, nullptr, OHCA_LINK_IB);
    protect_with_m_key(n);
    auto from_wire = [&](uint64_t key, uint8_t meth) {
        ib::Smp req;
        req.hdr.mgmt_class = ib::mgmt_class::SubnLidRouted;
        req.hdr.method = meth;
        req.hdr.attr_id = ib::attr::PortInfo;
        req.hdr.attr_mod = 1;
        req.hdr.tid = 9;
        req.m_key = key;
        uint32_t result = 0xFF;
        (void)mad_ifc(n, req, 0x33, &result);
        return result;
    };
    EXPECT_EQ(from_wire(0x99, ib::method::Set), uint32_t{OHCA_MAD_IFC_CONSUMED});
    n.process();
    const auto t = traps_sent(n);
    ASSERT_EQ(t.size(), 1u);
    EXPECT_EQ(t[0].pk.lrh.dlid, kSmLid);
    EXPECT_EQ(t[0].notice.trap_number, ib::trap::MKeyViolation);
    EXPECT_EQ(t[0].notice.type, ib::notice_type::Security);
    const auto &d = t[0].notice.details;
    EXPECT_EQ((d[2] << 8) | d[3], 0x33); // LIDADDR: the requester
    EXPECT_EQ(d[6], ib::method::Set);
    EXPECT_EQ((d[8] << 8) | d[9], ib::attr::PortInfo);
    EXPECT_EQ(d[13], 1);    // AttributeModifier
    EXPECT_EQ(d[21], 0x99); // the M_Key it carried
    // The right key passes, and raises nothing.
    EXPECT_EQ(from_wire(kMKey, ib::method::Get), uint32_t{OHCA_MAD_IFC_REPLY});
    // A flood of wrong keys while the first trap waits for its repress:
    // dropped, none sent; then only the first trap's repeat.
    for (int i = 0; i < 1000; ++i) {
        EXPECT_EQ(from_wire(static_cast<uint64_t>(i), ib::method::Get),
                  uint32_t{OHCA_MAD_IFC_CONSUMED});
    }
    n.process();
    EXPECT_TRUE(traps_sent(n).empty());
    const auto &c = device_of(n.e).ib_counters()->traps;
    EXPECT_EQ(c.raised, 1u);
    EXPECT_EQ(c.dropped, 1000u);
    advance(n, subnet_timeout_ns(12));
    const auto again = traps_sent(n);
    ASSERT_EQ(again.size(), 1u);
    EXPECT_EQ(again[0].smp.hdr.tid, t[0].smp.hdr.tid);
}

// The host's own SMPs (MAD_IFC with IGNORE_MKEY, as the driver sends what
// ib_mad hands it without a wire source) pass a port protected by an
// M_Key they do not carry: no violation counted, no trap 256.
TEST(IbTraps, TheHostsOwnSmpsSkipTheMKeyCheck) {
    RdmaNode n(1, false, 0, 10, 0, nullptr, OHCA_LINK_IB);
    protect_with_m_key(n);
    uint32_t result = 0xFF;
    const ib::Smp r = smp(n, ib::method::Get, ib::attr::PortInfo, 1, {}, &result);
    EXPECT_EQ(result, uint32_t{OHCA_MAD_IFC_REPLY});
    const ib::PortInfo now = ib::PortInfo::read(r.data);
    EXPECT_EQ(now.m_key, kMKey); // not hidden from the host
    EXPECT_EQ(now.m_key_violations, 0);
    n.process();
    EXPECT_TRUE(traps_sent(n).empty());
}

// Twenty UD packets of a partition the receiver lacks: all dropped, all
// counted, and one trap 257 (Bad P_Key) to the SM with the packet's
// LIDs, P_Key, SL and QPs -- the others find it pending.
TEST(IbTraps, PkeyViolationsCountedAndOneTrap257) {
    IbPair p;
    ib::PortInfo pi = port_info(p.b);
    pi.subnet_timeout = 18;
    ASSERT_EQ(set_port_info(p.b, pi), 0);
    ib::SmpData d{};
    d[0] = 0xff;
    d[1] = 0xff;
    d[2] = 0x80; // index 1: 0x8002, on node a only
    d[3] = 0x02;
    ASSERT_EQ(smp(p.a, ib::method::Set, ib::attr::PKeyTable, 0, d).status(), 0);
    UdQp ua = make_ud(p.a, OHCA_QPT_UD, 1);
    UdQp ub = make_ud(p.b);
    p.b.post_recv(ub.q, 1, {{ub.buf, 4096, ub.key}});
    p.b.host.wire.clear();
    ohca_av_ib av{};
    av.dlid = 0x20;
    av.sl = 2;
    std::vector<std::vector<uint8_t>> b_frames;
    for (int i = 0; i < 20; ++i) {
        post_ud(p.a, ua, ub.q.qpn, av, 64);
        pump(p.a, p.b, [&](bool from_a, const std::vector<uint8_t> &f) {
            if (!from_a && f.size() == ib::kUdMadFrameBytes) {
                b_frames.push_back(f);
            }
            return false;
        });
        const auto sc = p.a.poll(ua.scq);
        ASSERT_EQ(sc.size(), 1u); // sent: the receiver drops it
        EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
    }
    EXPECT_TRUE(p.b.poll(ub.rcq).empty());
    EXPECT_EQ(device_of(p.b.e).ib_counters()->pkey_violations, 20u);
    EXPECT_EQ(query_port(p.b).pkey_violations, 20u);
    EXPECT_EQ(port_info(p.b).p_key_violations, 20u);
    const auto &c = device_of(p.b.e).ib_counters()->traps;
    EXPECT_EQ(c.raised, 1u);
    EXPECT_EQ(c.sent, 1u);
    EXPECT_EQ(c.dropped, 19u);
    ASSERT_EQ(b_frames.size(), 1u);
    p.b.host.wire = b_frames;
    const auto t = traps_sent(p.b);
    ASSERT_EQ(t.size(), 1u);
    EXPECT_EQ(t[0].pk.lrh.dlid, kSmLid);
    EXPECT_EQ(t[0].notice.trap_number, ib::trap::PKeyViolation);
    EXPECT_EQ(t[0].notice.type, ib::notice_type::Security);
    EXPECT_EQ(t[0].notice.issuer_lid, 0x20);
    const auto &dd = t[0].notice.details;
    EXPECT_EQ((dd[2] << 8) | dd[3], 0x10); // LID1: the sender
    EXPECT_EQ((dd[4] << 8) | dd[5], 0x20); // LID2: this port
    EXPECT_EQ((dd[8] << 8) | dd[9], 0x8002);
    EXPECT_EQ(dd[10] >> 4, 2);                                          // SL
    EXPECT_EQ(uint32_t(dd[11]) << 16 | dd[12] << 8 | dd[13], ua.q.qpn); // QP1
    EXPECT_EQ(uint32_t(dd[15]) << 16 | dd[16] << 8 | dd[17], ub.q.qpn); // QP2
}
} // namespace
} // namespace ohca::test
