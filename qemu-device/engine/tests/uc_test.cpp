// SPDX-License-Identifier: GPL-2.0-or-later
// UC QPs (uc.cpp) on the fake wire between two devices: the UC column of
// MODIFY_QP, SEND and WRITE (with and without immediate) segmented by MTU
// with no ACKs, and what a lost packet costs: only its message (IBTA 9.7.5),
// with the responder resynchronising on the next FIRST/ONLY packet; no RNR,
// no NAK, no error for a missing receive WQE or a bad rkey; loopback.
#include "device/device.hpp"
#include "link/roce_packet.hpp"
#include "link/roce_v2.hpp"
#include "rdma_node.hpp"

#include <gtest/gtest.h>

namespace ohca::test {
namespace {

constexpr uint32_t kMsg = 3000; // three packets at a 1024-byte MTU
constexpr uint32_t kBuf = 1 << 16;

using UcSide = Side;

class UcTest : public ::testing::Test {
  protected:
    void SetUp() override {
        for (int i = 0; i < 2; ++i) {
            side[i] = make_side(
                node(i), kBuf, 6, [i](size_t k) { return static_cast<uint8_t>(k * (i + 3) + 1); },
                8, OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_WRITE, OHCA_QPT_UC);
        }
        a.connect_uc(side[0].qp, side[1].qp.qpn, b);
        b.connect_uc(side[1].qp, side[0].qp.qpn, a);
    }
    RdmaNode &node(int i) { return i == 0 ? a : b; }

    // A SEND (or SEND with immediate) of [off, off + len) of A's buffer.
    void send(uint32_t off, uint32_t len, uint64_t wr_id, bool imm = false) {
        SendReq r;
        r.wr_id = wr_id;
        r.opcode = imm ? OHCA_WR_SEND_IMM : OHCA_WR_SEND;
        r.imm = 0x11223344;
        r.sges = {{side[0].buf + off, len, side[0].key}};
        a.post_send(side[0].qp, r);
    }
    void write(uint32_t off, uint32_t len, uint64_t remote_off, uint64_t wr_id, bool imm = false,
               uint32_t rkey = 0) {
        SendReq r;
        r.wr_id = wr_id;
        r.opcode = imm ? OHCA_WR_RDMA_WRITE_IMM : OHCA_WR_RDMA_WRITE;
        r.imm = 0x55667788;
        r.remote_addr = side[1].buf + remote_off;
        r.rkey = rkey != 0 ? rkey : side[1].key;
        r.sges = {{side[0].buf + off, len, side[0].key}};
        a.post_send(side[0].qp, r);
    }
    // B's receive WQE 'wr_id' into [off, off + kMsg) of its buffer.
    void recv(uint64_t wr_id, uint32_t off) {
        b.post_recv(side[1].qp, wr_id, {{side[1].buf + off, kMsg, side[1].key}});
    }
    // Whether B's buffer at 'boff' holds A's bytes from 'aoff'.
    bool same(uint64_t boff, uint64_t aoff, uint32_t len) {
        for (uint32_t k = 0; k < len; ++k) {
            if (b.host.get<uint8_t>(side[1].buf + boff + k) !=
                static_cast<uint8_t>((aoff + k) * 3 + 1)) {
                return false;
            }
        }
        return true;
    }
    // Frames A sends, numbered from 0; 'drop' sees each one's number.
    void wire(const std::function<bool(int n, const ParsedPacket &p)> &drop = {}) {
        int n = 0;
        pump(a, b, [&](bool from_a, const std::vector<uint8_t> &f) {
            if (!from_a) {
                ++frames_from_b;
                return false;
            }
            ParsedPacket p;
            EXPECT_EQ(parse_roce_frame(f, p), ParseError::None);
            opcodes.push_back(p.fields.bth.opcode);
            return drop && drop(n++, p);
        });
    }
    const RoceCounters &counters_b() { return device_of(b.e).roce_counters(); }

    RdmaNode a{1};
    RdmaNode b{2};
    UcSide side[2];
    int frames_from_b = 0;
    std::vector<uint8_t> opcodes;
};

TEST_F(UcTest, ModifyFollowsTheUcColumn) {
    RdmaNode n{3};
    const uint32_t pd = n.create_pd();
    const CqInfo cq = n.create_cq(6);
    const QpInfo q = n.create_qp(pd, cq.cqn, cq.cqn, 4, 4, 0, OHCA_QPT_UC);
    ohca_qp_attr x{};
    x.qp_state = OHCA_QPS_INIT;
    x.access_flags = OHCA_ACCESS_REMOTE_WRITE;
    // A Q_Key is a UD attribute.
    EXPECT_EQ(
        n.modify(q.qpn, OHCA_QP_STATE | OHCA_QP_PKEY_INDEX | OHCA_QP_PORT | OHCA_QP_QKEY, x).status,
        OHCA_STATUS_BAD_FIELD);
    ASSERT_EQ(
        n.modify(q.qpn, OHCA_QP_STATE | OHCA_QP_PKEY_INDEX | OHCA_QP_PORT | OHCA_QP_ACCESS_FLAGS, x)
            .status,
        OHCA_STATUS_OK);
    ohca_qp_attr r{};
    r.qp_state = OHCA_QPS_RTR;
    r.path_mtu = 3;
    r.dest_qpn = 77;
    r.rq_psn = 5;
    std::copy(a.gid.begin(), a.gid.end(), r.av.dgid);
    r.av.vlan_id = 0xffff;
    r.av.network_type = OHCA_NET_IPV4;
    const uint32_t rtr =
        OHCA_QP_STATE | OHCA_QP_AV | OHCA_QP_PATH_MTU | OHCA_QP_DEST_QPN | OHCA_QP_RQ_PSN;
    // READ/atomic resources and the RNR timer are RC attributes.
    EXPECT_EQ(n.modify(q.qpn, rtr | OHCA_QP_MAX_DEST_RD_ATOMIC, r).status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(n.modify(q.qpn, rtr | OHCA_QP_MIN_RNR_TIMER, r).status, OHCA_STATUS_BAD_FIELD);
    ASSERT_EQ(n.modify(q.qpn, rtr, r).status, OHCA_STATUS_OK);
    ohca_qp_attr s{};
    s.qp_state = OHCA_QPS_RTS;
    s.sq_psn = 9;
    EXPECT_EQ(n.modify(q.qpn, OHCA_QP_STATE | OHCA_QP_SQ_PSN | OHCA_QP_TIMEOUT, s).status,
              OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(n.modify(q.qpn, OHCA_QP_STATE | OHCA_QP_SQ_PSN | OHCA_QP_RETRY_CNT, s).status,
              OHCA_STATUS_BAD_FIELD);
    ASSERT_EQ(n.modify(q.qpn, OHCA_QP_STATE | OHCA_QP_SQ_PSN, s).status, OHCA_STATUS_OK);
    const ohca_qp_attr got = n.query(q.qpn);
    EXPECT_EQ(got.qp_state, OHCA_QPS_RTS);
    EXPECT_EQ(got.dest_qpn, 77u);
    EXPECT_EQ(got.rq_psn, 5u);
    EXPECT_EQ(got.sq_psn, 9u);
    EXPECT_EQ(got.access_flags, uint32_t{OHCA_ACCESS_REMOTE_WRITE});
}

TEST_F(UcTest, SendAndWriteWithoutAcks) {
    recv(10, 0);
    recv(11, 4096);
    send(100, kMsg, 1);
    write(200, 5000, 8192, 2, true); // five packets, then the immediate
    write(300, 700, 16384, 3);       // one packet, no receive consumed
    send(400, 0, 4, true);           // zero-length SEND with immediate
    recv(12, 12288);
    wire();
    EXPECT_EQ(frames_from_b, 0); // UC: not one ACK
    const std::vector<uint8_t> want = {
        uc::kSendFirst,   uc::kSendMiddle,  uc::kSendLast,     uc::kWriteFirst, uc::kWriteMiddle,
        uc::kWriteMiddle, uc::kWriteMiddle, uc::kWriteLastImm, uc::kWriteOnly,  uc::kSendOnlyImm};
    EXPECT_EQ(opcodes, want);
    const auto sc = a.poll(side[0].scq);
    ASSERT_EQ(sc.size(), 4u);
    for (size_t i = 0; i < sc.size(); ++i) {
        EXPECT_EQ(sc[i].status, OHCA_CQE_SUCCESS);
        EXPECT_EQ(sc[i].wr_id, i + 1);
    }
    EXPECT_EQ(sc[1].opcode, OHCA_CQE_RDMA_WRITE);
    const auto rc = b.poll(side[1].rcq);
    ASSERT_EQ(rc.size(), 3u);
    EXPECT_EQ(rc[0].wr_id, 10u);
    EXPECT_EQ(rc[0].opcode, OHCA_CQE_RECV);
    EXPECT_EQ(rc[0].byte_len, kMsg);
    EXPECT_TRUE(same(0, 100, kMsg));
    EXPECT_EQ(rc[1].wr_id, 11u);
    EXPECT_EQ(rc[1].opcode, OHCA_CQE_RECV_RDMA_WITH_IMM);
    EXPECT_EQ(rc[1].byte_len, 5000u);
    EXPECT_NE(rc[1].flags & OHCA_CQE_F_IMM, 0);
    EXPECT_TRUE(same(8192, 200, 5000));
    EXPECT_TRUE(same(16384, 300, 700));
    EXPECT_EQ(rc[2].wr_id, 12u);
    EXPECT_EQ(rc[2].byte_len, 0u);
    EXPECT_NE(rc[2].flags & OHCA_CQE_F_IMM, 0);
}

// Three 3-packet SENDs into three receive WQEs; 'lost' is the frame dropped.
class UcLossTest : public UcTest, public ::testing::WithParamInterface<int> {};

TEST_P(UcLossTest, ALostPacketCostsItsMessageOnly) {
    const int lost = GetParam(); // 3, 4, 5: FIRST, MIDDLE, LAST of message 2
    recv(20, 0);
    recv(21, 4096);
    recv(22, 8192);
    send(0, kMsg, 1);
    send(4000, kMsg, 2);
    send(8000, kMsg, 3);
    wire([&](int n, const ParsedPacket &) { return n == lost; });
    // The sender cannot know: every WQE completes successfully.
    const auto sc = a.poll(side[0].scq);
    ASSERT_EQ(sc.size(), 3u);
    for (const auto &c : sc) {
        EXPECT_EQ(c.status, OHCA_CQE_SUCCESS);
    }
    // Message 2 is gone; message 3 took the receive WQE it would have had.
    const auto rc = b.poll(side[1].rcq);
    ASSERT_EQ(rc.size(), 2u);
    EXPECT_EQ(rc[0].wr_id, 20u);
    EXPECT_TRUE(same(0, 0, kMsg));
    EXPECT_EQ(rc[1].wr_id, 21u);
    EXPECT_EQ(rc[1].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(rc[1].byte_len, kMsg);
    EXPECT_TRUE(same(4096, 8000, kMsg));
    EXPECT_EQ(b.query(side[1].qp.qpn).qp_state, OHCA_QPS_RTS);
    EXPECT_GE(counters_b().rx_out_of_seq, 1u);
    EXPECT_GE(counters_b().uc_msgs_dropped, lost == 3 ? 0u : 1u);
    // The third receive WQE is still there for the next message.
    send(100, 64, 4);
    wire();
    const auto more = b.poll(side[1].rcq);
    ASSERT_EQ(more.size(), 1u);
    EXPECT_EQ(more[0].wr_id, 22u);
    EXPECT_EQ(more[0].byte_len, 64u);
}
INSTANTIATE_TEST_SUITE_P(FirstMiddleLast, UcLossTest, ::testing::Values(3, 4, 5));

TEST_F(UcTest, OutOfOrderPacketsDropTheMessage) {
    recv(30, 0);
    recv(31, 4096);
    send(0, kMsg, 1);
    send(4000, kMsg, 2);
    // Hold back the MIDDLE of message 1 and deliver it after its LAST.
    std::vector<uint8_t> held;
    pump(a, b, [&](bool from_a, const std::vector<uint8_t> &f) {
        if (!from_a) {
            return false;
        }
        ParsedPacket p;
        EXPECT_EQ(parse_roce_frame(f, p), ParseError::None);
        if (p.fields.bth.opcode == uc::kSendMiddle && held.empty()) {
            held = f;
            return true;
        }
        if (p.fields.bth.opcode == uc::kSendLast && !held.empty()) {
            // LAST now, MIDDLE late: both out of sequence.
            EXPECT_EQ(ohca_engine_receive_frame(b.e, f.data(), f.size()), OHCA_ENGINE_RX_CONSUMED);
            EXPECT_EQ(ohca_engine_receive_frame(b.e, held.data(), held.size()),
                      OHCA_ENGINE_RX_CONSUMED);
            held.clear();
            held.push_back(0); // only once
            return true;
        }
        return false;
    });
    b.process();
    const auto rc = b.poll(side[1].rcq);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].wr_id, 30u); // message 2, in message 1's receive WQE
    EXPECT_TRUE(same(0, 4000, kMsg));
}

TEST_F(UcTest, NoReceiveWqeAndBadRkeyAreDroppedSilently) {
    send(0, 100, 1);                                 // nothing posted: no RNR, the message is lost
    write(0, 100, 0, 2, false, side[1].key ^ 0x100); // bad rkey
    write(0, 2000, kBuf - 1000, 3);                  // past the MR
    wire();
    EXPECT_EQ(frames_from_b, 0);
    const auto sc = a.poll(side[0].scq);
    ASSERT_EQ(sc.size(), 3u);
    for (const auto &c : sc) {
        EXPECT_EQ(c.status, OHCA_CQE_SUCCESS);
    }
    EXPECT_TRUE(b.poll(side[1].rcq).empty());
    EXPECT_EQ(counters_b().uc_msgs_dropped, 3u);
    EXPECT_EQ(b.query(side[1].qp.qpn).qp_state, OHCA_QPS_RTS);
    // Both QPs carry on.
    recv(40, 0);
    send(500, 200, 4);
    wire();
    const auto rc = b.poll(side[1].rcq);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].wr_id, 40u);
    EXPECT_TRUE(same(0, 500, 200));
}

TEST_F(UcTest, ReceiveTooSmallIsALocalError) {
    b.post_recv(side[1].qp, 50, {{side[1].buf, 100, side[1].key}});
    send(0, kMsg, 1);
    wire();
    const auto rc = b.poll(side[1].rcq);
    ASSERT_FALSE(rc.empty());
    EXPECT_EQ(rc[0].wr_id, 50u);
    EXPECT_EQ(rc[0].status, OHCA_CQE_LOC_LEN_ERR);
    EXPECT_EQ(b.query(side[1].qp.qpn).qp_state, OHCA_QPS_ERR);
}

TEST_F(UcTest, BadLocalKeyFailsTheWqeAndTheQp) {
    SendReq r;
    r.wr_id = 9;
    r.sges = {{side[0].buf, 10, 0xdead00}};
    a.post_send(side[0].qp, r);
    send(0, 10, 10); // flushed behind it
    wire();
    const auto sc = a.poll(side[0].scq);
    ASSERT_EQ(sc.size(), 2u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_LOC_PROT_ERR);
    EXPECT_EQ(sc[1].status, OHCA_CQE_WR_FLUSH_ERR);
    EXPECT_EQ(a.query(side[0].qp.qpn).qp_state, OHCA_QPS_ERR);
    EXPECT_TRUE(opcodes.empty());
}

TEST_F(UcTest, RcPacketsToAUcQpAreRefused) {
    // An RC QP on A aimed at B's UC QP: its SEND is dropped as a bad opcode.
    const QpInfo rcqp = a.create_qp(side[0].pd, side[0].scq.cqn, side[0].rcq.cqn);
    a.connect(rcqp, side[1].qp.qpn, b);
    recv(60, 0);
    QpInfo q = rcqp;
    SendReq r;
    r.sges = {{side[0].buf, 10, side[0].key}};
    a.post_send(q, r);
    pump(a, b);
    EXPECT_TRUE(b.poll(side[1].rcq).empty());
    EXPECT_GE(counters_b().rx_bad_opcode, 1u);
}

TEST(UcLoopbackTest, SendToItself) {
    RdmaNode n{1};
    const uint32_t pd = n.create_pd();
    CqInfo cq = n.create_cq(8);
    QpInfo q1 = n.create_qp(pd, cq.cqn, cq.cqn, 6, 6, 0, OHCA_QPT_UC);
    QpInfo q2 = n.create_qp(pd, cq.cqn, cq.cqn, 6, 6, 0, OHCA_QPT_UC);
    n.connect_uc(q1, q2.qpn, n);
    n.connect_uc(q2, q1.qpn, n);
    const uint64_t buf = n.alloc(1 << 14);
    const uint32_t key = n.reg_mr(pd, buf, 1 << 14, OHCA_ACCESS_LOCAL_WRITE);
    for (uint32_t k = 0; k < 5000; ++k) {
        n.host.put(buf + k, static_cast<uint8_t>(k * 11));
    }
    n.post_recv(q2, 7, {{buf + 8192, 5000, key}});
    SendReq r;
    r.sges = {{buf, 5000, key}};
    n.post_send(q1, r);
    n.process();
    const auto c = n.poll(cq);
    ASSERT_EQ(c.size(), 2u);
    for (const auto &e : c) {
        EXPECT_EQ(e.status, OHCA_CQE_SUCCESS);
    }
    for (uint32_t k = 0; k < 5000; ++k) {
        ASSERT_EQ(n.host.get<uint8_t>(buf + 8192 + k), static_cast<uint8_t>(k * 11)) << k;
    }
}

} // namespace
} // namespace ohca::test
