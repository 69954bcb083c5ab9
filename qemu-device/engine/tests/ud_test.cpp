// SPDX-License-Identifier: GPL-2.0-or-later
// The UD transport: frames (BTH + DETH, ICRC), Q_Keys, the GRH at the start
// of receive buffers, drops without a receive WQE, the GSI QP, UD state
// rules, loopback and a bounded flood; multicast groups; and the RC
// responder's answer to atomic requests.
#include "device/device.hpp"
#include "link/roce_packet.hpp"
#include "link/roce_v2.hpp"
#include "rdma_node.hpp"
#include "ud_qp.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace ohca::test {
namespace {

void ud_to_rts(RdmaNode &n, const UdQp &u, uint32_t qkey = kUdQkey) {
    ohca_qp_attr a{};
    a.qp_state = OHCA_QPS_INIT;
    a.qkey = qkey;
    ASSERT_EQ(n.modify(u.q.qpn, OHCA_QP_STATE | OHCA_QP_PKEY_INDEX | OHCA_QP_PORT | OHCA_QP_QKEY, a)
                  .status,
              OHCA_STATUS_OK);
    a = {};
    a.qp_state = OHCA_QPS_RTR;
    ASSERT_EQ(n.modify(u.q.qpn, OHCA_QP_STATE, a).status, OHCA_STATUS_OK);
    a.qp_state = OHCA_QPS_RTS;
    a.sq_psn = 0x123;
    ASSERT_EQ(n.modify(u.q.qpn, OHCA_QP_STATE | OHCA_QP_SQ_PSN, a).status, OHCA_STATUS_OK);
}

UdQp rts_ud(RdmaNode &n, uint8_t type = OHCA_QPT_UD, uint32_t qkey = kUdQkey) {
    UdQp u;
    EXPECT_EQ(create_ud(n, u, type).status, OHCA_STATUS_OK);
    ud_to_rts(n, u, qkey);
    return u;
}

struct UdSend {
    uint64_t wr_id = 1;
    uint8_t opcode = OHCA_WR_SEND;
    uint8_t flags = OHCA_WQE_SIGNALED;
    uint32_t imm = 0;
    uint32_t qkey = kUdQkey;
    std::vector<ohca_sge> sges;
    std::vector<uint8_t> inline_data;
    ohca_av av{};
};

ohca_av av_to(const RdmaNode &peer) {
    ohca_av av{};
    std::copy(peer.gid.begin(), peer.gid.end(), av.dgid);
    std::copy(peer.mac.begin(), peer.mac.end(), av.dmac);
    av.vlan_id = 0xffff;
    av.hop_limit = 64;
    av.network_type = peer.gid[10] == 0xff ? OHCA_NET_IPV4 : OHCA_NET_IPV6;
    return av;
}

void post_ud(RdmaNode &n, UdQp &u, uint32_t dqpn, const UdSend &s) {
    const uint64_t at = u.q.sq + uint64_t{u.q.sq_pi % u.q.sq_size} * u.q.sq_stride;
    ohca_send_wqe w{};
    w.wr_id = s.wr_id;
    w.opcode = s.opcode;
    w.flags = s.flags;
    w.imm_data = s.imm;
    ohca_ud_seg seg{};
    seg.av = s.av;
    seg.remote_qpn = dqpn;
    seg.qkey = s.qkey;
    if (!s.inline_data.empty()) {
        w.flags |= OHCA_WQE_INLINE;
        w.inline_len = static_cast<uint32_t>(s.inline_data.size());
        EXPECT_TRUE(
            n.host.write(at + OHCA_UD_WQE_HDR_LEN, s.inline_data.data(), s.inline_data.size()));
    } else {
        w.num_sge = static_cast<uint8_t>(s.sges.size());
        for (size_t i = 0; i < s.sges.size(); ++i) {
            n.host.put(at + OHCA_UD_WQE_HDR_LEN + 16 * i, s.sges[i]);
        }
    }
    n.host.put(at, w);
    n.host.put(at + sizeof(w), seg);
    ++u.q.sq_pi;
    n.ring_sq(u.q);
}

std::vector<uint8_t> bytes(size_t n, uint8_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) {
        v[i] = static_cast<uint8_t>(i * 13 + seed);
    }
    return v;
}

std::vector<uint8_t> read(RdmaNode &n, uint64_t at, size_t len) {
    std::vector<uint8_t> v(len);
    EXPECT_TRUE(n.host.read(at, v.data(), len));
    return v;
}

class UdTest : public ::testing::Test {
  protected:
    RdmaNode n{1};
};

TEST_F(UdTest, LoopbackSendWithImmDeliversGrhAndPayload) {
    UdQp a = rts_ud(n);
    UdQp b = rts_ud(n);
    const auto data = bytes(300, 5);
    ASSERT_TRUE(n.host.write(a.buf, data.data(), data.size()));
    n.post_recv(b.q, 42, {{b.buf, 2048, b.key}});
    UdSend s;
    s.wr_id = 9;
    s.opcode = OHCA_WR_SEND_IMM;
    s.imm = 0x04030201; // wire bytes 01 02 03 04
    s.sges = {{a.buf, 300, a.key}};
    s.av = av_to(n);
    post_ud(n, a, b.q.qpn, s);
    n.process();
    EXPECT_TRUE(n.host.wire.empty()); // own GID: looped back inside
    auto sc = n.poll(a.scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(sc[0].opcode, OHCA_CQE_SEND);
    EXPECT_EQ(sc[0].wr_id, 9u);
    EXPECT_EQ(sc[0].byte_len, 300u);
    auto rc = n.poll(b.rcq);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(rc[0].wr_id, 42u);
    EXPECT_EQ(rc[0].byte_len, 340u);
    EXPECT_EQ(rc[0].src_qp, a.q.qpn);
    EXPECT_EQ(rc[0].qpn, b.q.qpn);
    EXPECT_EQ(rc[0].flags, OHCA_CQE_F_GRH | OHCA_CQE_F_IPV4 | OHCA_CQE_F_IMM);
    EXPECT_EQ(rc[0].imm_data, 0x04030201u);
    EXPECT_EQ(rc[0].sl, 0u);
    const auto got = read(n, b.buf, 340);
    // 20 zero bytes, then the IPv4 header: version/IHL, UDP, our addresses.
    EXPECT_EQ(std::vector<uint8_t>(got.begin(), got.begin() + 20), std::vector<uint8_t>(20, 0));
    EXPECT_EQ(got[20], 0x45);
    EXPECT_EQ(got[29], 17);
    EXPECT_TRUE(std::equal(got.begin() + 32, got.begin() + 36, n.gid.begin() + 12));
    EXPECT_TRUE(std::equal(got.begin() + 36, got.begin() + 40, n.gid.begin() + 12));
    EXPECT_EQ(std::vector<uint8_t>(got.begin() + 40, got.end()), data);
}

// The host's trace callback sees a WQE's life: the command that made its QP,
// the WQE taken, and both CQEs (QEMU's ohca_* trace events show the same).
TEST_F(UdTest, TraceFollowsCommandsWqesAndCqes) {
    UdQp a = rts_ud(n);
    UdQp b = rts_ud(n);
    n.post_recv(b.q, 42, {{b.buf, 2048, b.key}});
    n.host.traces.clear();
    UdSend s;
    s.wr_id = 9;
    s.inline_data = bytes(16, 1);
    s.av = av_to(n);
    post_ud(n, a, b.q.qpn, s);
    n.process();
    using T = FakeHost::TraceEvent;
    auto of = [&](unsigned int kind) {
        std::vector<T> v;
        std::copy_if(n.host.traces.begin(), n.host.traces.end(), std::back_inserter(v),
                     [&](const T &t) { return t.kind == kind; });
        return v;
    };
    const auto wqes = of(OHCA_ENGINE_TRACE_WQE);
    ASSERT_EQ(wqes.size(), 1u);
    EXPECT_EQ(wqes[0].a, a.q.qpn);
    EXPECT_EQ(wqes[0].b, 0u);
    EXPECT_EQ(wqes[0].c, uint32_t{OHCA_WR_SEND});
    const auto cqes = of(OHCA_ENGINE_TRACE_CQE);
    ASSERT_EQ(cqes.size(), 2u);
    EXPECT_EQ(cqes[0].a, a.scq.cqn);
    EXPECT_EQ(cqes[0].b, a.q.qpn);
    EXPECT_EQ(cqes[0].c, uint32_t{OHCA_CQE_SEND} << 8 | OHCA_CQE_SUCCESS);
    EXPECT_EQ(cqes[0].d, 9u);
    EXPECT_EQ(cqes[1].a, b.rcq.cqn);
    EXPECT_EQ(cqes[1].d, 42u);
    n.host.traces.clear();
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_QP, ohca_handle_in{0x777, 0}).status,
              OHCA_STATUS_BAD_HANDLE);
    const auto cmds = of(OHCA_ENGINE_TRACE_CMD);
    ASSERT_EQ(cmds.size(), 1u);
    EXPECT_EQ(cmds[0].a, uint32_t{OHCA_CMD_DESTROY_QP});
    EXPECT_EQ(cmds[0].b, uint32_t{OHCA_STATUS_BAD_HANDLE});
    EXPECT_EQ(cmds[0].c, 0x777u);
}

TEST_F(UdTest, FrameOnTheWireIsBthDethWithIcrc) {
    RdmaNode peer{2};
    UdQp a = rts_ud(n);
    UdQp b = rts_ud(peer);
    UdSend s;
    s.inline_data = bytes(61, 1); // odd length: padded
    s.av = av_to(peer);
    post_ud(n, a, b.q.qpn, s);
    n.process();
    ASSERT_EQ(n.host.wire.size(), 1u);
    ParsedPacket p;
    ASSERT_EQ(parse_roce_frame(n.host.wire[0], p), ParseError::None);
    EXPECT_EQ(p.fields.bth.opcode, ud::kSendOnly);
    EXPECT_EQ(p.fields.bth.dest_qp, b.q.qpn);
    EXPECT_EQ(p.fields.bth.pkey, 0xffff);
    EXPECT_EQ(p.fields.bth.psn, 0x123u);
    EXPECT_FALSE(p.fields.bth.ack_req);
    EXPECT_EQ(p.fields.bth.pad, 3u);
    ASSERT_TRUE(p.fields.deth);
    EXPECT_EQ(p.fields.deth->qkey, kUdQkey);
    EXPECT_EQ(p.fields.deth->src_qp, a.q.qpn);
    EXPECT_FALSE(p.fields.imm);
    EXPECT_EQ(std::vector<uint8_t>(p.payload.begin(), p.payload.end()), bytes(61, 1));
    EXPECT_EQ(p.dgid, peer.gid);
    EXPECT_EQ(p.sgid, n.gid);
    // Every byte after the BTH is covered by the ICRC.
    auto bad = n.host.wire[0];
    bad[14 + 20 + 8 + 12] ^= 1; // the Q_Key
    EXPECT_EQ(parse_roce_frame(bad, p), ParseError::BadIcrc);

    // Delivered over the wire; no ACK comes back.
    peer.post_recv(b.q, 7, {{b.buf, 256, b.key}});
    pump(n, peer);
    auto rc = peer.poll(b.rcq);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(rc[0].byte_len, 40u + 61u);
    EXPECT_EQ(rc[0].src_qp, a.q.qpn);
    EXPECT_TRUE(peer.host.wire.empty());
    EXPECT_EQ(read(peer, b.buf + 40, 61), bytes(61, 1));
}

TEST_F(UdTest, Ipv6GrhIsTheIpv6Header) {
    RdmaNode n6{3, true};
    UdQp a = rts_ud(n6);
    UdQp b = rts_ud(n6);
    n6.post_recv(b.q, 1, {{b.buf, 40, b.key}, {b.buf + 100, 100, b.key}});
    UdSend s;
    s.inline_data = bytes(50, 9);
    s.av = av_to(n6);
    s.av.traffic_class = 0x28;
    s.av.flow_label = 0x12345;
    post_ud(n6, a, b.q.qpn, s);
    n6.process();
    auto rc = n6.poll(b.rcq);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(rc[0].flags, OHCA_CQE_F_GRH);
    const auto grh = read(n6, b.buf, 40);
    EXPECT_EQ(grh[0], 0x62); // version 6, traffic class 0x28
    EXPECT_EQ(grh[1], 0x81);
    EXPECT_EQ(grh[6], 17);
    EXPECT_TRUE(std::equal(grh.begin() + 8, grh.begin() + 24, n6.gid.begin()));
    EXPECT_TRUE(std::equal(grh.begin() + 24, grh.begin() + 40, n6.gid.begin()));
    EXPECT_EQ(read(n6, b.buf + 100, 50), bytes(50, 9)); // second SGE
}

TEST_F(UdTest, QkeyMismatchIsDroppedAndCounted) {
    UdQp a = rts_ud(n);
    UdQp b = rts_ud(n, OHCA_QPT_UD, 0x2222);
    n.post_recv(b.q, 1, {{b.buf, 256, b.key}});
    UdSend s;
    s.inline_data = bytes(10, 0);
    s.av = av_to(n);
    post_ud(n, a, b.q.qpn, s); // Q_Key 0x11111111
    n.process();
    EXPECT_EQ(n.poll(a.scq).size(), 1u); // the sender does not know
    EXPECT_TRUE(n.poll(b.rcq).empty());
    EXPECT_EQ(n.stats().ud_rx_bad_qkey, 1u);
    s.qkey = 0x2222;
    post_ud(n, a, b.q.qpn, s);
    n.process();
    auto rc = n.poll(b.rcq);
    ASSERT_EQ(rc.size(), 1u); // the WQE was still there
    EXPECT_EQ(rc[0].status, OHCA_CQE_SUCCESS);
}

TEST_F(UdTest, ControlledQkeyInWqeSendsTheQpQkey) {
    RdmaNode peer{2};
    UdQp a = rts_ud(n, OHCA_QPT_UD, 0x80000005);
    UdSend s;
    s.inline_data = bytes(4, 0);
    s.av = av_to(peer);
    s.qkey = 0x80010000; // the GSI Q_Key: not this QP's to send
    post_ud(n, a, 1, s);
    s.qkey = 0x7fffffff; // uncontrolled: sent as given
    post_ud(n, a, 1, s);
    n.process();
    ASSERT_EQ(n.host.wire.size(), 2u);
    ParsedPacket p;
    ASSERT_EQ(parse_roce_frame(n.host.wire[0], p), ParseError::None);
    EXPECT_EQ(p.fields.deth->qkey, 0x80000005u);
    ASSERT_EQ(parse_roce_frame(n.host.wire[1], p), ParseError::None);
    EXPECT_EQ(p.fields.deth->qkey, 0x7fffffffu);
}

TEST_F(UdTest, NoReceiveWqeDropsAndCounts) {
    UdQp a = rts_ud(n);
    UdQp b = rts_ud(n);
    UdSend s;
    s.inline_data = bytes(10, 0);
    s.av = av_to(n);
    post_ud(n, a, b.q.qpn, s);
    n.process();
    EXPECT_EQ(n.poll(a.scq).size(), 1u);
    EXPECT_EQ(n.stats().ud_rx_no_wqe, 1u);
    EXPECT_TRUE(n.host.wire.empty()); // no RNR NAK or anything else
    n.post_recv(b.q, 1, {{b.buf, 256, b.key}});
    n.process();
    EXPECT_TRUE(n.poll(b.rcq).empty()); // lost, not held
    post_ud(n, a, b.q.qpn, s);
    n.process();
    EXPECT_EQ(n.poll(b.rcq).size(), 1u);
}

TEST_F(UdTest, MessageOverMtuFailsAndStopsTheSendQueueOnly) {
    UdQp a = rts_ud(n);
    UdQp b = rts_ud(n);
    // Port MTU 1500: UD messages up to 1024 bytes.
    EXPECT_EQ(UdTransport::mtu_bytes(1500), 1024u);
    EXPECT_EQ(UdTransport::mtu_bytes(9000), 4096u);
    EXPECT_EQ(UdTransport::mtu_bytes(200), 256u);
    UdSend big;
    big.wr_id = 1;
    big.sges = {{a.buf, 1025, a.key}};
    big.av = av_to(n);
    post_ud(n, a, b.q.qpn, big);
    UdSend small;
    small.wr_id = 2;
    small.sges = {{a.buf, 1024, a.key}};
    small.av = av_to(n);
    post_ud(n, a, b.q.qpn, small);
    n.post_recv(b.q, 5, {{b.buf, 4096, b.key}});
    n.process();
    auto sc = n.poll(a.scq);
    ASSERT_EQ(sc.size(), 2u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_LOC_LEN_ERR);
    EXPECT_EQ(sc[0].vendor_err, OHCA_VERR_MSG_TOO_LONG);
    EXPECT_EQ(sc[1].status, OHCA_CQE_WR_FLUSH_ERR);
    EXPECT_EQ(n.query(a.q.qpn).qp_state, OHCA_QPS_SQE);
    // SQE -> RTS resumes.
    ohca_qp_attr at{};
    at.qp_state = OHCA_QPS_RTS;
    ASSERT_EQ(n.modify(a.q.qpn, OHCA_QP_STATE, at).status, OHCA_STATUS_OK);
    small.wr_id = 3;
    post_ud(n, a, b.q.qpn, small);
    n.process();
    sc = n.poll(a.scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
    auto rc = n.poll(b.rcq);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].byte_len, 40u + 1024u);
}

TEST_F(UdTest, ReceiveBufferTooSmallFailsThatWqeOnly) {
    UdQp a = rts_ud(n);
    UdQp b = rts_ud(n);
    n.post_recv(b.q, 1, {{b.buf, 40 + 9, b.key}});
    n.post_recv(b.q, 2, {{b.buf, 40 + 10, b.key}});
    UdSend s;
    s.inline_data = bytes(10, 0);
    s.av = av_to(n);
    post_ud(n, a, b.q.qpn, s);
    post_ud(n, a, b.q.qpn, s);
    n.process();
    auto rc = n.poll(b.rcq);
    ASSERT_EQ(rc.size(), 2u);
    EXPECT_EQ(rc[0].status, OHCA_CQE_LOC_LEN_ERR);
    EXPECT_EQ(rc[0].wr_id, 1u);
    EXPECT_EQ(rc[1].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(rc[1].wr_id, 2u);
    EXPECT_EQ(n.query(b.q.qpn).qp_state, OHCA_QPS_RTS);
}

TEST_F(UdTest, BadAddressVectorFailsTheWqe) {
    UdQp a = rts_ud(n);
    UdSend s;
    s.inline_data = bytes(4, 0);
    s.av = av_to(n);
    s.av.sgid_index = 5; // no such GID
    post_ud(n, a, 2, s);
    n.process();
    auto sc = n.poll(a.scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_LOC_QP_OP_ERR);
    EXPECT_EQ(sc[0].vendor_err, OHCA_VERR_BAD_AV);
    EXPECT_TRUE(n.host.wire.empty());
}

// UCX's UD send (ud_verbs, UCX 1.13): an inline signaled SEND of its header
// and payload with Q_Key 0x1ee7a330, through an AH whose verbs flow label
// is ~0 (UCX's choice of RoCE UDP source port). The vector has 20 bits of
// flow label: the provider and the driver pass the low 20 (0xfffff), which
// the device sends; all 32 it refuses as a bad vector, which stops the send
// queue (what UCX reported as "local QP operation error").
TEST_F(UdTest, UcxInlineSendWithAllOnesFlowLabel) {
    RdmaNode n6{3, true};
    UdQp a = rts_ud(n6);
    UdQp b = rts_ud(n6, OHCA_QPT_UD, 0x1ee7a330);
    n6.post_recv(b.q, 1, {{b.buf, 2048, b.key}});
    UdSend s;
    s.wr_id = 0xbeebbeeb;
    s.qkey = 0x1ee7a330;
    s.inline_data = bytes(32, 3); // 24 header bytes, 8 payload bytes
    s.av = av_to(n6);
    s.av.flow_label = 0xfffff; // what the provider now writes
    post_ud(n6, a, b.q.qpn, s);
    n6.process();
    auto sc = n6.poll(a.scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
    auto rc = n6.poll(b.rcq);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(rc[0].byte_len, 40u + 32u);
    const auto grh = read(n6, b.buf, 4);
    EXPECT_EQ(grh[1] & 0x0f, 0x0f); // the flow label's top nibble...
    EXPECT_EQ(grh[2], 0xff);        // ... and the rest
    EXPECT_EQ(grh[3], 0xff);
    EXPECT_EQ(read(n6, b.buf + 40, 32), bytes(32, 3));

    s.av.flow_label = 0xffffffff; // what UCX gave ibv_create_ah
    post_ud(n6, a, b.q.qpn, s);
    n6.process();
    sc = n6.poll(a.scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_LOC_QP_OP_ERR);
    EXPECT_EQ(sc[0].vendor_err, OHCA_VERR_BAD_AV);
    EXPECT_EQ(n6.query(a.q.qpn).qp_state, OHCA_QPS_SQE);
}

// Audit N2: a UD WQE is written by the user, so its address vector does
// not choose the VLAN: the frame carries the source GID's VLAN (that of
// its interface), whatever the WQE says.
TEST_F(UdTest, TheVlanComesFromTheSourceGidNotTheWqe) {
    RdmaNode peer{2};
    UdQp a = rts_ud(n);
    UdQp b = rts_ud(peer);
    // GID 1: another address of this port, on VLAN 7.
    ohca_add_gid_in g{};
    std::copy(n.gid.begin(), n.gid.end(), g.gid);
    g.gid[14] = 7;
    g.index = 1;
    g.port = 1;
    g.type = OHCA_GID_TYPE_ROCE_V2_IPV4;
    std::copy(n.mac.begin(), n.mac.end(), g.mac);
    g.vlan_id = 7;
    ASSERT_EQ(n.cmd_in(OHCA_CMD_ADD_GID, g).status, OHCA_STATUS_OK);
    // The VLAN tag of a frame, or -1 for an untagged one.
    auto vlan_of = [](const std::vector<uint8_t> &f) {
        return f[12] == 0x81 && f[13] == 0x00 ? ((f[14] << 8 | f[15]) & 0xfff) : -1;
    };
    struct Case {
        uint16_t sgid_index;
        uint16_t wqe_vlan;
        int want;
    };
    for (const Case c : {Case{0, 42, -1}, Case{0, 0xffff, -1}, Case{1, 42, 7}, Case{1, 0xffff, 7},
                         Case{1, 7, 7}}) {
        n.host.wire.clear();
        UdSend s;
        s.inline_data = bytes(8, 1);
        s.av = av_to(peer);
        s.av.sgid_index = c.sgid_index;
        s.av.vlan_id = c.wqe_vlan;
        post_ud(n, a, b.q.qpn, s);
        n.process();
        ASSERT_EQ(n.host.wire.size(), 1u) << c.sgid_index << " " << c.wqe_vlan;
        EXPECT_EQ(vlan_of(n.host.wire[0]), c.want) << c.sgid_index << " " << c.wqe_vlan;
        const auto sc = n.poll(a.scq);
        ASSERT_EQ(sc.size(), 1u);
        EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
    }
}

TEST_F(UdTest, RdmaOpcodesAreRefusedOnUd) {
    UdQp a = rts_ud(n);
    UdSend s;
    s.opcode = OHCA_WR_RDMA_WRITE;
    s.inline_data = bytes(4, 0);
    s.av = av_to(n);
    post_ud(n, a, 2, s);
    n.process();
    auto sc = n.poll(a.scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_LOC_QP_OP_ERR);
    EXPECT_EQ(sc[0].vendor_err, OHCA_VERR_BAD_WQE);
}

TEST_F(UdTest, UdStateRules) {
    UdQp u;
    ASSERT_EQ(create_ud(n, u).status, OHCA_STATUS_OK);
    ohca_qp_attr a{};
    a.qp_state = OHCA_QPS_INIT;
    // Q_Key is required; RC attributes are refused.
    EXPECT_EQ(n.modify(u.q.qpn, OHCA_QP_STATE | OHCA_QP_PKEY_INDEX | OHCA_QP_PORT, a).status,
              OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(n.modify(u.q.qpn, OHCA_QP_STATE | OHCA_QP_PORT | OHCA_QP_QKEY, a).status,
              OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(n.modify(u.q.qpn,
                       OHCA_QP_STATE | OHCA_QP_PKEY_INDEX | OHCA_QP_PORT | OHCA_QP_QKEY |
                           OHCA_QP_ACCESS_FLAGS,
                       a)
                  .status,
              OHCA_STATUS_BAD_FIELD);
    a.qkey = 77;
    ASSERT_EQ(n.modify(u.q.qpn, OHCA_QP_STATE | OHCA_QP_PKEY_INDEX | OHCA_QP_PORT | OHCA_QP_QKEY, a)
                  .status,
              OHCA_STATUS_OK);
    a.qp_state = OHCA_QPS_RTR;
    EXPECT_EQ(n.modify(u.q.qpn, OHCA_QP_STATE | OHCA_QP_AV, a).status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(n.modify(u.q.qpn, OHCA_QP_STATE | OHCA_QP_DEST_QPN, a).status, OHCA_STATUS_BAD_FIELD);
    ASSERT_EQ(n.modify(u.q.qpn, OHCA_QP_STATE, a).status, OHCA_STATUS_OK);
    a.qp_state = OHCA_QPS_RTS;
    EXPECT_EQ(n.modify(u.q.qpn, OHCA_QP_STATE, a).status, OHCA_STATUS_BAD_FIELD); // SQ_PSN
    a.qkey = 78;
    ASSERT_EQ(n.modify(u.q.qpn, OHCA_QP_STATE | OHCA_QP_SQ_PSN | OHCA_QP_QKEY, a).status,
              OHCA_STATUS_OK);
    EXPECT_EQ(n.query(u.q.qpn).qkey, 78u);
    EXPECT_EQ(n.query(u.q.qpn).qp_state, OHCA_QPS_RTS);
}

TEST_F(UdTest, GsiModifyWithoutPortAsIbMadDoes) {
    UdQp g;
    ASSERT_EQ(create_ud(n, g, OHCA_QPT_GSI).status, OHCA_STATUS_OK);
    ohca_qp_attr a{};
    a.qp_state = OHCA_QPS_INIT;
    a.qkey = OHCA_GSI_QKEY;
    EXPECT_EQ(n.modify(g.q.qpn, OHCA_QP_STATE | OHCA_QP_PKEY_INDEX | OHCA_QP_QKEY, a).status,
              OHCA_STATUS_OK);
    a.qp_state = OHCA_QPS_RTR;
    EXPECT_EQ(n.modify(g.q.qpn, OHCA_QP_STATE, a).status, OHCA_STATUS_OK);
    a.qp_state = OHCA_QPS_RTS;
    EXPECT_EQ(n.modify(g.q.qpn, OHCA_QP_STATE | OHCA_QP_SQ_PSN, a).status, OHCA_STATUS_OK);
}

TEST_F(UdTest, GsiQpIsQp1AndReceivesWithTheGsiQkey) {
    UdQp bad;
    // Only on the kernel's doorbell page.
    ohca_alloc_uar_out uo{};
    ASSERT_EQ(n.cmd(OHCA_CMD_ALLOC_UAR, nullptr, 0, &uo, sizeof(uo)).status, OHCA_STATUS_OK);
    EXPECT_EQ(create_ud(n, bad, OHCA_QPT_GSI, uo.uar_index).status, OHCA_STATUS_BAD_FIELD);
    UdQp gsi = rts_ud(n, OHCA_QPT_GSI, OHCA_GSI_QKEY);
    EXPECT_EQ(gsi.q.qpn, 1u);
    UdQp second;
    EXPECT_EQ(create_ud(n, second, OHCA_QPT_GSI).status, OHCA_STATUS_BAD_STATE);

    // A MAD from another node's GSI QP to QP 1.
    RdmaNode peer{2};
    UdQp pg = rts_ud(peer, OHCA_QPT_GSI, OHCA_GSI_QKEY);
    n.post_recv(gsi.q, 11, {{gsi.buf, 40 + 256, gsi.key}});
    UdSend s;
    s.inline_data = bytes(256 - 128, 3);
    s.sges = {};
    s.qkey = OHCA_GSI_QKEY; // controlled: the QP's own (the same) is sent
    s.av = av_to(n);
    post_ud(peer, pg, OHCA_GSI_QPN, s);
    pump(peer, n);
    auto rc = n.poll(gsi.rcq);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(rc[0].src_qp, 1u);
    EXPECT_EQ(rc[0].qpn, 1u);
    EXPECT_EQ(rc[0].byte_len, 40u + 128u);

    // Destroyed, it can be created again.
    ohca_handle_in h{};
    h.handle = 1;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_QP, h).status, OHCA_STATUS_OK);
    EXPECT_EQ(create_ud(n, second, OHCA_QPT_GSI).status, OHCA_STATUS_OK);
    EXPECT_EQ(second.q.qpn, 1u);
}

TEST_F(UdTest, UdFramesToRcQpsAndRcFramesToUdQpsAreDropped) {
    RdmaNode peer{2};
    UdQp u = rts_ud(n);
    Side rc = make_side(n, 4096, 4, [](size_t k) { return static_cast<uint8_t>(k); });
    n.connect(rc.qp, 99, peer);
    UdQp pu = rts_ud(peer);
    UdSend s;
    s.inline_data = bytes(8, 0);
    s.av = av_to(n);
    post_ud(peer, pu, rc.qp.qpn, s);
    peer.process();
    ASSERT_EQ(peer.host.wire.size(), 1u);
    auto f = peer.host.wire[0];
    peer.host.wire.clear();
    const auto before = n.stats().roce_bad_opcode;
    ohca_engine_receive_frame(n.e, f.data(), f.size());
    n.process();
    EXPECT_EQ(n.stats().roce_bad_opcode, before + 1);
    EXPECT_TRUE(n.host.wire.empty());

    // An RC SEND to the UD QP.
    PacketPath path;
    path.smac = peer.mac;
    path.dmac = n.mac;
    path.sgid = peer.gid;
    path.dgid = n.gid;
    PacketFields pf;
    pf.bth.opcode = rc::kSendOnly;
    pf.bth.dest_qp = u.q.qpn;
    auto g = build_roce_frame(path, pf, bytes(4, 0));
    ohca_engine_receive_frame(n.e, g.data(), g.size());
    n.process();
    EXPECT_EQ(n.stats().roce_bad_opcode, before + 2);
}

// A hostile peer floods a UD QP: memory stays within the RoCE backlog
// bound and every frame is either queued or dropped and counted.
TEST_F(UdTest, FloodIsBoundedAndCounted) {
    RdmaNode peer{2};
    UdQp b = rts_ud(n);
    for (int i = 0; i < 8; ++i) {
        n.post_recv(b.q, static_cast<uint64_t>(i), {{b.buf + 512u * i, 512, b.key}});
    }
    PacketPath path;
    path.smac = peer.mac;
    path.dmac = n.mac;
    path.sgid = peer.gid;
    path.dgid = n.gid;
    PacketFields pf;
    pf.bth.opcode = ud::kSendOnly;
    pf.bth.dest_qp = b.q.qpn;
    pf.deth = Deth{kUdQkey, 77};
    const auto frame = build_roce_frame(path, pf, bytes(400, 1));
    constexpr int kFrames = 5000;
    const auto s0 = n.stats();
    int retry = 0;
    for (int i = 0; i < kFrames; ++i) {
        retry += ohca_engine_receive_frame(n.e, frame.data(), frame.size()) == OHCA_ENGINE_RX_RETRY;
    }
    const auto s1 = n.stats();
    // Queued up to the backlog bound; the rest is pushed back to the
    // netdev (which holds one frame and stops reading).
    EXPECT_EQ(s1.roce_rx_frames - s0.roce_rx_frames, DeviceLimits::max_roce_backlog);
    EXPECT_EQ(retry, kFrames - static_cast<int>(DeviceLimits::max_roce_backlog));
    n.process();
    const auto s2 = n.stats();
    auto rc = n.poll(b.rcq);
    EXPECT_EQ(rc.size(), 8u); // one per posted WQE
    EXPECT_EQ(s2.ud_rx_no_wqe, (s1.roce_rx_frames - s0.roce_rx_frames) - 8);
    EXPECT_TRUE(n.host.wire.empty()); // nothing answered
}

// Until atomics are executed, an atomic request is answered with NAK
// Invalid Request (and the responder's QP goes to the error state).
// Atomics are executed now (rdma_atomic_srq_test.cpp): one through a key
// that does not exist is a remote access error.
TEST_F(UdTest, AtomicRequestWithABadKeyIsNakedRemoteAccess) {
    RdmaNode peer{2};
    Side s = make_side(n, 4096, 4, [](size_t k) { return static_cast<uint8_t>(k); });
    n.connect(s.qp, 99, peer, 3, 14, 7, 7,
              OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_READ | OHCA_ACCESS_REMOTE_ATOMIC);
    PacketPath path;
    path.smac = peer.mac;
    path.dmac = n.mac;
    path.sgid = peer.gid;
    path.dgid = n.gid;
    PacketFields pf;
    pf.bth.opcode = rc::kFetchAdd;
    pf.bth.dest_qp = s.qp.qpn;
    pf.bth.psn = (peer.psn_base + 99) & 0xffffff;
    pf.bth.ack_req = true;
    pf.atomic_eth = AtomicEth{0, 0, 1, 0};
    auto f = build_roce_frame(path, pf, {});
    ohca_engine_receive_frame(n.e, f.data(), f.size());
    n.process();
    ASSERT_EQ(n.host.wire.size(), 1u);
    ParsedPacket p;
    ASSERT_EQ(parse_roce_frame(n.host.wire[0], p), ParseError::None);
    EXPECT_EQ(p.fields.bth.opcode, rc::kAck);
    ASSERT_TRUE(p.fields.aeth);
    EXPECT_EQ(p.fields.aeth->syndrome, kAethNak | kNakRemoteAccess);
    EXPECT_EQ(p.fields.bth.psn, pf.bth.psn);
    EXPECT_EQ(n.query(s.qp.qpn).qp_state, OHCA_QPS_ERR);
}

// ---- multicast ---------------------------------------------------------------

const Mgid kGroup = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 1, 2, 3};

CmdOutcome mcast(RdmaNode &n, uint16_t op, uint32_t qpn, const Mgid &gid) {
    ohca_mcast_in in{};
    in.qpn = qpn;
    std::copy(gid.begin(), gid.end(), in.gid);
    return n.cmd_in(op, in);
}

// The AV of a UD SEND to a group: IPv4 multicast MAC 01:00:5e + 23 bits.
ohca_av av_group(const Mgid &gid) {
    ohca_av av{};
    std::copy(gid.begin(), gid.end(), av.dgid);
    const uint8_t mac[6] = {0x01,    0x00,   0x5e, static_cast<uint8_t>(gid[13] & 0x7f),
                            gid[14], gid[15]};
    std::copy(std::begin(mac), std::end(mac), av.dmac);
    av.vlan_id = 0xffff;
    av.hop_limit = 1;
    av.network_type = OHCA_NET_IPV4;
    return av;
}

void send_to_group(RdmaNode &n, UdQp &from, const std::vector<uint8_t> &data, uint64_t wr_id = 1) {
    UdSend s;
    s.wr_id = wr_id;
    s.inline_data = data;
    s.av = av_group(kGroup);
    post_ud(n, from, OHCA_MCAST_QPN, s);
}

TEST_F(UdTest, MulticastReachesEveryAttachedQpHereAndOnTheWire) {
    RdmaNode peer{2};
    UdQp a = rts_ud(n);
    UdQp b = rts_ud(n);
    UdQp c = rts_ud(n);
    UdQp d = rts_ud(n); // not in the group
    UdQp e = rts_ud(peer);
    for (UdQp *q : {&b, &c, &d}) {
        n.post_recv(q->q, 5, {{q->buf, 256, q->key}});
    }
    peer.post_recv(e.q, 6, {{e.buf, 256, e.key}});
    ASSERT_EQ(mcast(n, OHCA_CMD_ATTACH_MCAST, b.q.qpn, kGroup).status, OHCA_STATUS_OK);
    ASSERT_EQ(mcast(n, OHCA_CMD_ATTACH_MCAST, c.q.qpn, kGroup).status, OHCA_STATUS_OK);
    ASSERT_EQ(mcast(peer, OHCA_CMD_ATTACH_MCAST, e.q.qpn, kGroup).status, OHCA_STATUS_OK);
    send_to_group(n, a, bytes(100, 3), 77);
    n.process();
    ASSERT_EQ(n.host.wire.size(), 1u); // and a copy looped back
    ParsedPacket p;
    ASSERT_EQ(parse_roce_frame(n.host.wire[0], p), ParseError::None);
    EXPECT_EQ(p.fields.bth.dest_qp, OHCA_MCAST_QPN);
    EXPECT_EQ(p.dgid, kGroup);
    EXPECT_EQ(p.dmac, (std::array<uint8_t, 6>{0x01, 0x00, 0x5e, 0x01, 0x02, 0x03}));
    auto sc = n.poll(a.scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(sc[0].wr_id, 77u);
    for (UdQp *q : {&b, &c}) {
        auto rc = n.poll(q->rcq);
        ASSERT_EQ(rc.size(), 1u);
        EXPECT_EQ(rc[0].status, OHCA_CQE_SUCCESS);
        EXPECT_EQ(rc[0].byte_len, 140u);
        EXPECT_EQ(rc[0].src_qp, a.q.qpn);
        EXPECT_EQ(read(n, q->buf + 40, 100), bytes(100, 3));
        // The GRH's destination is the group.
        EXPECT_TRUE(std::equal(kGroup.begin() + 12, kGroup.end(), read(n, q->buf + 36, 4).begin()));
    }
    EXPECT_TRUE(n.poll(d.rcq).empty());
    pump(n, peer);
    auto re = peer.poll(e.rcq);
    ASSERT_EQ(re.size(), 1u);
    EXPECT_EQ(re[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(read(peer, e.buf + 40, 100), bytes(100, 3));
    EXPECT_EQ(device_of(peer.e).roce_counters().mcast_rx_packets, 1u);
}

TEST_F(UdTest, MulticastQkeyDetachAndDestroy) {
    UdQp a = rts_ud(n);
    UdQp b = rts_ud(n);
    UdQp c = rts_ud(n, OHCA_QPT_UD, 0x2222); // another Q_Key
    for (int i = 0; i < 2; ++i) {
        n.post_recv(b.q, 1, {{b.buf + 256u * i, 256, b.key}});
        n.post_recv(c.q, 1, {{c.buf + 256u * i, 256, c.key}});
    }
    ASSERT_EQ(mcast(n, OHCA_CMD_ATTACH_MCAST, b.q.qpn, kGroup).status, OHCA_STATUS_OK);
    ASSERT_EQ(mcast(n, OHCA_CMD_ATTACH_MCAST, c.q.qpn, kGroup).status, OHCA_STATUS_OK);
    const auto bad_qkey = device_of(n.e).roce_counters().ud_rx_bad_qkey;
    send_to_group(n, a, bytes(10, 1));
    n.process();
    EXPECT_EQ(n.poll(b.rcq).size(), 1u);
    EXPECT_TRUE(n.poll(c.rcq).empty());
    EXPECT_EQ(device_of(n.e).roce_counters().ud_rx_bad_qkey, bad_qkey + 1);

    // Detached, b gets nothing more; destroyed, c leaves the group too.
    ASSERT_EQ(mcast(n, OHCA_CMD_DETACH_MCAST, b.q.qpn, kGroup).status, OHCA_STATUS_OK);
    ASSERT_EQ(n.cmd_in(OHCA_CMD_DESTROY_QP, ohca_handle_in{c.q.qpn, 0}).status, OHCA_STATUS_OK);
    n.host.wire.clear();
    const auto dropped = n.stats().roce_rx_dropped;
    send_to_group(n, a, bytes(10, 2));
    n.process();
    EXPECT_TRUE(n.poll(b.rcq).empty());
    EXPECT_EQ(n.host.wire.size(), 1u);             // the wire still gets it
    EXPECT_EQ(n.stats().roce_rx_dropped, dropped); // nothing looped back
    EXPECT_EQ(mcast(n, OHCA_CMD_DETACH_MCAST, b.q.qpn, kGroup).status, OHCA_STATUS_BAD_FIELD);
}

TEST_F(UdTest, MulticastCommandErrors) {
    UdQp u = rts_ud(n);
    UdQp gsi;
    ASSERT_EQ(create_ud(n, gsi, OHCA_QPT_GSI).status, OHCA_STATUS_OK);
    Side rc = make_side(n, 4096, 4, [](size_t k) { return static_cast<uint8_t>(k); });
    EXPECT_EQ(mcast(n, OHCA_CMD_ATTACH_MCAST, rc.qp.qpn, kGroup).status, OHCA_STATUS_BAD_STATE);
    EXPECT_EQ(mcast(n, OHCA_CMD_ATTACH_MCAST, gsi.q.qpn, kGroup).status, OHCA_STATUS_BAD_STATE);
    EXPECT_EQ(mcast(n, OHCA_CMD_ATTACH_MCAST, 999, kGroup).status, OHCA_STATUS_BAD_HANDLE);
    const CmdOutcome unicast = mcast(n, OHCA_CMD_ATTACH_MCAST, u.q.qpn, n.gid);
    EXPECT_EQ(unicast.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(unicast.syndrome, offsetof(ohca_mcast_in, gid));
    Mgid v6 = {0xff, 0x0e};
    EXPECT_EQ(mcast(n, OHCA_CMD_ATTACH_MCAST, u.q.qpn, v6).status, OHCA_STATUS_OK);
    ASSERT_EQ(mcast(n, OHCA_CMD_ATTACH_MCAST, u.q.qpn, kGroup).status, OHCA_STATUS_OK);
    EXPECT_EQ(mcast(n, OHCA_CMD_ATTACH_MCAST, u.q.qpn, kGroup).status, OHCA_STATUS_BAD_STATE);
    ohca_mcast_in in{};
    in.qpn = u.q.qpn;
    in.rsvd = 1;
    std::copy(kGroup.begin(), kGroup.end(), in.gid);
    const CmdOutcome rsvd = n.cmd_in(OHCA_CMD_DETACH_MCAST, in);
    EXPECT_EQ(rsvd.status, OHCA_STATUS_RESERVED_NONZERO);
    EXPECT_EQ(rsvd.syndrome, offsetof(ohca_mcast_in, rsvd));
}

// Groups are bounded: a guest cannot make the device keep more than
// max_mcast_grp groups, nor a packet reach more than max_mcast_qp_attach QPs.
TEST_F(UdTest, MulticastGroupsAreBounded) {
    UdQp u = rts_ud(n);
    Mgid g = kGroup;
    for (uint32_t i = 0; i < DeviceLimits::max_mcast_grp; ++i) {
        g[14] = static_cast<uint8_t>(i >> 8);
        g[15] = static_cast<uint8_t>(i);
        ASSERT_EQ(mcast(n, OHCA_CMD_ATTACH_MCAST, u.q.qpn, g).status, OHCA_STATUS_OK) << i;
    }
    g[13] = 9;
    EXPECT_EQ(mcast(n, OHCA_CMD_ATTACH_MCAST, u.q.qpn, g).status, OHCA_STATUS_NO_RESOURCES);
    // A reset forgets every group.
    n.reset();
    UdQp v = rts_ud(n);
    EXPECT_EQ(mcast(n, OHCA_CMD_ATTACH_MCAST, v.q.qpn, g).status, OHCA_STATUS_OK);
}

// A peer floods a full group: each frame costs at most max_mcast_qp_attach
// receive attempts, all counted, nothing answered, no state kept.
TEST_F(UdTest, MulticastFloodToAFullGroupIsBounded) {
    RdmaNode peer{2};
    std::vector<UdQp> qps;
    for (uint32_t i = 0; i < DeviceLimits::max_mcast_qp_attach; ++i) {
        qps.push_back(rts_ud(n));
        ASSERT_EQ(mcast(n, OHCA_CMD_ATTACH_MCAST, qps.back().q.qpn, kGroup).status, OHCA_STATUS_OK);
    }
    UdQp extra = rts_ud(n);
    EXPECT_EQ(mcast(n, OHCA_CMD_ATTACH_MCAST, extra.q.qpn, kGroup).status,
              OHCA_STATUS_NO_RESOURCES);
    PacketPath path;
    path.smac = peer.mac;
    path.dmac = {0x01, 0x00, 0x5e, 0x01, 0x02, 0x03};
    path.sgid = peer.gid;
    path.dgid = kGroup;
    PacketFields pf;
    pf.bth.opcode = ud::kSendOnly;
    pf.bth.dest_qp = OHCA_MCAST_QPN;
    pf.deth = Deth{kUdQkey, 77};
    const auto frame = build_roce_frame(path, pf, bytes(1000, 1));
    const auto no_wqe = device_of(n.e).roce_counters().ud_rx_no_wqe;
    constexpr uint64_t kFrames = 2000;
    for (uint64_t i = 0; i < kFrames; ++i) {
        (void)ohca_engine_receive_frame(n.e, frame.data(), frame.size());
        if (i % 512 == 0) {
            n.process();
        }
    }
    n.process();
    const auto &c = device_of(n.e).roce_counters();
    EXPECT_EQ(c.mcast_rx_packets, kFrames);
    EXPECT_EQ(c.ud_rx_no_wqe - no_wqe, kFrames * DeviceLimits::max_mcast_qp_attach);
    EXPECT_TRUE(n.host.wire.empty());
    for (UdQp &q : qps) {
        EXPECT_TRUE(n.poll(q.rcq).empty());
    }
}

TEST(McastTable, LimitsPerGroupAndInTotal) {
    McastTable t({2, 2, 3});
    Mgid g1 = kGroup;
    Mgid g2 = kGroup;
    g2[15] = 4;
    Mgid g3 = kGroup;
    g3[15] = 5;
    EXPECT_EQ(t.attach(g1, 10), McastTable::Result::Ok);
    EXPECT_EQ(t.attach(g1, 11), McastTable::Result::Ok);
    EXPECT_EQ(t.attach(g1, 12), McastTable::Result::NoResources); // per group
    EXPECT_EQ(t.attach(g1, 10), McastTable::Result::Attached);
    EXPECT_EQ(t.attach(g2, 10), McastTable::Result::Ok);
    EXPECT_EQ(t.attach(g2, 11), McastTable::Result::NoResources); // in total
    EXPECT_EQ(t.detach(g2, 10), McastTable::Result::Ok);
    EXPECT_EQ(t.groups(), 1u); // an empty group is gone
    EXPECT_EQ(t.attach(g2, 11), McastTable::Result::Ok);
    EXPECT_EQ(t.attach(g3, 11), McastTable::Result::NoResources); // groups
    t.detach_all(11);
    EXPECT_EQ(t.attachments(), 1u);
    EXPECT_EQ(t.groups(), 1u);
    ASSERT_EQ(t.members(g1).size(), 1u);
    EXPECT_EQ(t.members(g1)[0], 10u);
    EXPECT_TRUE(t.members(g2).empty());
    EXPECT_EQ(t.detach(g2, 11), McastTable::Result::NotAttached);
}

TEST(McastTable, MulticastGids) {
    EXPECT_TRUE(gid_is_multicast(kGroup));
    EXPECT_TRUE(gid_is_multicast(Mgid{0xff, 0x02}));
    Mgid v4 = kGroup;
    v4[12] = 192;
    EXPECT_FALSE(gid_is_multicast(v4));
    v4[12] = 224;
    EXPECT_TRUE(gid_is_multicast(v4));
    v4[12] = 240;
    EXPECT_FALSE(gid_is_multicast(v4));
    EXPECT_FALSE(gid_is_multicast(Mgid{0xfe, 0x80}));
}

} // namespace
} // namespace ohca::test
