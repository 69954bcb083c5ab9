// SPDX-License-Identifier: GPL-2.0-or-later
// Two devices on a fake wire: segmentation, loss and retransmission, RNR,
// retry exhaustion, remote errors, flushes and duplicates.
#include "device/device.hpp"
#include "link/roce_packet.hpp"
#include "link/roce_v2.hpp"
#include "rdma_node.hpp"

#include <gtest/gtest.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>

namespace ohca::test {
namespace {

constexpr uint32_t kAllAccess =
    OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_READ;

class WireTest : public ::testing::Test {
  protected:
    void setup(bool ipv6 = false, uint8_t mtu = 3, uint8_t retry = 7, uint8_t rnr_retry = 7,
               uint8_t rd_atomic = 4) {
        if (ipv6) {
            a6 = std::make_unique<RdmaNode>(1, true);
            b6 = std::make_unique<RdmaNode>(2, true);
        }
        for (int i = 0; i < 2; ++i) {
            side[i] = make_side(node(i), side_bytes, 6,
                                [i](size_t k) { return static_cast<uint8_t>(k * (i + 3) + 1); });
        }
        const uint32_t remote = OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_READ;
        node(0).connect(side[0].qp, side[1].qp.qpn, node(1), mtu, 14, retry, rnr_retry, remote,
                        rd_atomic);
        node(1).connect(side[1].qp, side[0].qp.qpn, node(0), mtu, 14, retry, rnr_retry, remote,
                        rd_atomic);
    }
    RdmaNode &node(int i) {
        if (a6) {
            return i == 0 ? *a6 : *b6;
        }
        return i == 0 ? a : b;
    }
    // Pumps the wire, advancing time by 'step' whenever it goes idle, until
    // pred() holds or 'rounds' are used up.
    bool run(const std::function<bool()> &pred,
             const std::function<bool(bool, const std::vector<uint8_t> &)> &drop = {},
             int rounds = 50, uint64_t step = 20'000'000) {
        for (int r = 0; r < rounds; ++r) {
            pump(node(0), node(1), drop);
            if (pred()) {
                return true;
            }
            node(0).host.now += step;
            node(1).host.now += step;
        }
        return pred();
    }
    // How many completions node(0)'s send CQ and node(1)'s receive CQ have
    // given so far (kept in sc and rc).
    size_t sends() {
        auto v = node(0).poll(side[0].scq);
        sc.insert(sc.end(), v.begin(), v.end());
        return sc.size();
    }
    size_t receives() {
        auto v = node(1).poll(side[1].rcq);
        rc.insert(rc.end(), v.begin(), v.end());
        return rc.size();
    }
    bool same(uint64_t x, uint64_t y, size_t len) {
        std::vector<uint8_t> p(len), q(len);
        EXPECT_TRUE(node(0).host.read(x, p.data(), len));
        EXPECT_TRUE(node(1).host.read(y, q.data(), len));
        return p == q;
    }

    size_t side_bytes = 1 << 20; // each side's registered buffer
    RdmaNode a{1};
    RdmaNode b{2};
    std::unique_ptr<RdmaNode> a6, b6;
    Side side[2];
    std::vector<ohca_cqe> sc, rc;
};

class MtuTest : public WireTest, public ::testing::WithParamInterface<uint8_t> {};

TEST_P(MtuTest, Segmentation) {
    const uint8_t mtu = GetParam();
    setup(false, mtu);
    const uint32_t bytes = 128u << mtu;
    const uint32_t len = 3 * bytes + 5;
    b.post_recv(side[1].qp, 1, {{side[1].buf, len, side[1].key}});
    SendReq r;
    r.sges = {{side[0].buf, len, side[0].key}};
    a.post_send(side[0].qp, r);
    a.process();
    ASSERT_EQ(a.host.wire.size(), 4u);
    const uint8_t ops[4] = {rc::kSendFirst, rc::kSendMiddle, rc::kSendMiddle, rc::kSendLast};
    for (size_t i = 0; i < 4; ++i) {
        ParsedPacket p;
        ASSERT_EQ(parse_roce_frame(a.host.wire[i], p), ParseError::None);
        EXPECT_EQ(p.fields.bth.opcode, ops[i]);
        EXPECT_EQ(p.payload.size(), i < 3 ? bytes : 5u);
        EXPECT_EQ(p.fields.bth.psn, psn_add(0x100 + side[0].qp.qpn, uint32_t(i)));
        EXPECT_EQ(p.fields.bth.dest_qp, side[1].qp.qpn);
        EXPECT_EQ(p.fields.bth.ack_req, i == 3);
        EXPECT_EQ(p.fields.bth.pad, i == 3 ? 3 : 0);
        EXPECT_EQ(p.smac, a.mac);
        EXPECT_EQ(p.dmac, b.mac);
        EXPECT_EQ(p.sgid, a.gid);
        EXPECT_EQ(p.dgid, b.gid);
    }
    ASSERT_TRUE(run([&] { return !b.poll(side[1].rcq).empty(); }));
    EXPECT_TRUE(same(side[0].buf, side[1].buf, len));
    ASSERT_TRUE(run([&] { return !a.poll(side[0].scq).empty(); }));
    // RDMA WRITE and READ of the same size.
    SendReq w;
    w.opcode = OHCA_WR_RDMA_WRITE;
    w.remote_addr = side[1].buf + 0x10000;
    w.rkey = side[1].key;
    w.sges = {{side[0].buf + 0x10000, len, side[0].key}};
    a.post_send(side[0].qp, w);
    w.opcode = OHCA_WR_RDMA_READ;
    w.remote_addr = side[1].buf + 0x20000;
    w.sges = {{side[0].buf + 0x30000, len, side[0].key}};
    a.post_send(side[0].qp, w);
    ASSERT_TRUE(run([&] { return sends() == 2; }));
    EXPECT_TRUE(same(side[0].buf + 0x10000, side[1].buf + 0x10000, len));
    EXPECT_TRUE(same(side[0].buf + 0x30000, side[1].buf + 0x20000, len));
}

INSTANTIATE_TEST_SUITE_P(AllMtus, MtuTest, ::testing::Values(1, 2, 3, 4, 5));

// Found by fuzz_rdma: a zero-length SEND over IPv4 is 58 bytes; the device
// pads it to the Ethernet minimum, and the peer still takes it (it goes by
// the IP length, not the frame length).
TEST_F(WireTest, ZeroLengthSendIsPaddedToTheEthernetMinimum) {
    setup();
    node(1).post_recv(side[1].qp, 9, {{side[1].buf, 64, side[1].key}});
    SendReq r;
    node(0).post_send(side[0].qp, r);
    node(0).process();
    ASSERT_EQ(node(0).host.wire.size(), 1u);
    EXPECT_EQ(node(0).host.wire[0].size(), size_t{OHCA_ETH_MIN_FRAME});
    ASSERT_TRUE(run([&] { return !node(0).poll(side[0].scq).empty(); }));
    const auto rcqe = node(1).poll(side[1].rcq);
    ASSERT_EQ(rcqe.size(), 1u);
    EXPECT_EQ(rcqe[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(rcqe[0].byte_len, 0u);
}

// The UDP source port (flow entropy) is the driver's: MODIFY_QP with the AV
// sets it for every packet of the QP, requests and ACKs alike; without it
// the device picks 0xc000 | (qpn & 0x3fff). Out-of-range ports, a port
// without the AV and reserved bytes are refused.
TEST_F(WireTest, UdpSourcePortFromTheDriver) {
    a.udp_sport = 0xd00d;
    b.udp_sport = 0xe00e;
    setup();
    node(1).post_recv(side[1].qp, 9, {{side[1].buf, 64, side[1].key}});
    SendReq r;
    r.sges = {{side[0].buf, 64, side[0].key}};
    node(0).post_send(side[0].qp, r);
    constexpr size_t kUdpSrc = 14 + 20; // Ethernet, IPv4
    std::set<uint16_t> from0, from1;
    ASSERT_TRUE(run([&] { return sends() == 1; },
                    [&](bool from_a, const std::vector<uint8_t> &f) {
                        const auto port =
                            static_cast<uint16_t>(f.at(kUdpSrc) << 8 | f.at(kUdpSrc + 1));
                        (from_a ? from0 : from1).insert(port);
                        return false;
                    }));
    EXPECT_EQ(from0, std::set<uint16_t>{0xd00d});
    EXPECT_EQ(from1, std::set<uint16_t>{0xe00e});

    auto &n = node(0);
    const uint32_t pd = n.create_pd();
    const CqInfo cq = n.create_cq(4);
    const QpInfo qp = n.create_qp(pd, cq.cqn, cq.cqn, 2, 2);
    ohca_qp_attr at{};
    at.qp_state = OHCA_QPS_INIT;
    ASSERT_EQ(n.modify(qp.qpn,
                       OHCA_QP_STATE | OHCA_QP_PKEY_INDEX | OHCA_QP_PORT | OHCA_QP_ACCESS_FLAGS, at)
                  .status,
              OHCA_STATUS_OK);
    at = {};
    at.qp_state = OHCA_QPS_RTR;
    at.path_mtu = 3;
    at.av.vlan_id = 0xffff;
    at.av.network_type = OHCA_NET_IPV4;
    std::copy(node(1).gid.begin(), node(1).gid.end(), at.av.dgid);
    const uint32_t rtr = OHCA_QP_STATE | OHCA_QP_AV | OHCA_QP_PATH_MTU | OHCA_QP_DEST_QPN |
                         OHCA_QP_RQ_PSN | OHCA_QP_MAX_DEST_RD_ATOMIC | OHCA_QP_MIN_RNR_TIMER;
    auto out = n.modify(qp.qpn, rtr | OHCA_QP_UDP_SPORT, at, OHCA_UDP_SPORT_MIN - 1);
    EXPECT_EQ(out.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(out.syndrome, offsetof(ohca_modify_qp_in, udp_sport));
    out = n.modify(qp.qpn, (rtr & ~OHCA_QP_AV) | OHCA_QP_UDP_SPORT, at, 0xd00d);
    EXPECT_EQ(out.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(out.syndrome, offsetof(ohca_modify_qp_in, attr_mask));
    ohca_modify_qp_in in{};
    in.qpn = qp.qpn;
    in.attr_mask = rtr;
    in.attr = at;
    in.rsvd[5] = 1;
    out = n.cmd_in(OHCA_CMD_MODIFY_QP, in);
    EXPECT_EQ(out.status, OHCA_STATUS_RESERVED_NONZERO);
    EXPECT_EQ(out.syndrome, offsetof(ohca_modify_qp_in, rsvd) + 5);
    EXPECT_EQ(n.modify(qp.qpn, rtr | OHCA_QP_UDP_SPORT, at, 0xffff).status, OHCA_STATUS_OK);
}

TEST_F(WireTest, SendWriteReadOverIpv6) {
    setup(true);
    RdmaNode &x = node(0), &y = node(1);
    y.post_recv(side[1].qp, 5, {{side[1].buf, 8192, side[1].key}});
    SendReq s;
    s.sges = {{side[0].buf, 5000, side[0].key}};
    x.post_send(side[0].qp, s);
    SendReq w;
    w.opcode = OHCA_WR_RDMA_WRITE;
    w.remote_addr = side[1].buf + 0x10000;
    w.rkey = side[1].key;
    w.sges = {{side[0].buf + 0x20000, 7000, side[0].key}};
    x.post_send(side[0].qp, w);
    SendReq r;
    r.opcode = OHCA_WR_RDMA_READ;
    r.flags = OHCA_WQE_SIGNALED | OHCA_WQE_FENCE;
    r.remote_addr = side[1].buf + 0x40000;
    r.rkey = side[1].key;
    r.sges = {{side[0].buf + 0x50000, 9000, side[0].key}};
    x.post_send(side[0].qp, r);
    ParsedPacket p;
    x.process();
    ASSERT_FALSE(x.host.wire.empty());
    ASSERT_EQ(parse_roce_frame(x.host.wire[0], p), ParseError::None);
    EXPECT_TRUE(p.ipv6);
    ASSERT_TRUE(run([&] { return sends() == 3; }));
    for (const auto &c : sc) {
        EXPECT_EQ(c.status, OHCA_CQE_SUCCESS);
    }
    EXPECT_EQ(sc[2].opcode, OHCA_CQE_RDMA_READ);
    rc = y.poll(side[1].rcq);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].byte_len, 5000u);
    EXPECT_TRUE(same(side[0].buf, side[1].buf, 5000));
    EXPECT_TRUE(same(side[0].buf + 0x20000, side[1].buf + 0x10000, 7000));
    EXPECT_TRUE(same(side[0].buf + 0x50000, side[1].buf + 0x40000, 9000));
}

class LossTest : public WireTest, public ::testing::WithParamInterface<int> {};

TEST_P(LossTest, RecoveredByRetransmission) {
    setup();
    const int every = GetParam();
    for (int i = 0; i < 8; ++i) {
        b.post_recv(side[1].qp, 100 + i, {{side[1].buf + 0x10000ull * i, 0x10000, side[1].key}});
    }
    for (int i = 0; i < 8; ++i) {
        SendReq s;
        s.wr_id = i;
        s.sges = {{side[0].buf + 0x10000ull * i, 10000, side[0].key}};
        a.post_send(side[0].qp, s);
    }
    SendReq r;
    r.opcode = OHCA_WR_RDMA_READ;
    r.wr_id = 99;
    r.remote_addr = side[1].buf + 0x90000;
    r.rkey = side[1].key;
    r.sges = {{side[0].buf + 0x90000, 20000, side[0].key}};
    a.post_send(side[0].qp, r);
    // Positive: lose 1 in n frames; negative: only frames from b (ACKs,
    // NAKs, READ responses). Pseudo-random with a fixed seed.
    std::mt19937 rng(static_cast<unsigned int>(every + 100));
    auto drop = [&](bool from_a, const std::vector<uint8_t> &) {
        return (every > 0 || !from_a) && rng() % static_cast<unsigned>(std::abs(every)) == 0;
    };
    ASSERT_TRUE(run(
        [&] {
            const size_t s = sends(); // both polled every round
            return receives() == 8 && s == 9;
        },
        drop, 2000))
        << sc.size() << " " << rc.size() << " state " << int(a.query(side[0].qp.qpn).qp_state)
        << " " << int(b.query(side[1].qp.qpn).qp_state) << " "
        << (sc.empty() ? -1 : int(sc.back().status)) << " wr "
        << (sc.empty() ? 0 : sc.back().wr_id);
    for (int i = 0; i < 8; ++i) {
        EXPECT_EQ(sc[i].status, OHCA_CQE_SUCCESS);
        EXPECT_EQ(sc[i].wr_id, uint64_t(i));
        EXPECT_EQ(rc[i].wr_id, uint64_t(100 + i)); // delivered once, in order
        EXPECT_EQ(rc[i].byte_len, 10000u);
        EXPECT_TRUE(same(side[0].buf + 0x10000ull * i, side[1].buf + 0x10000ull * i, 10000));
    }
    EXPECT_EQ(sc[8].wr_id, 99u);
    EXPECT_EQ(sc[8].status, OHCA_CQE_SUCCESS);
    EXPECT_TRUE(same(side[0].buf + 0x90000, side[1].buf + 0x90000, 20000));
    EXPECT_TRUE(b.poll(side[1].rcq).empty());
}

INSTANTIATE_TEST_SUITE_P(DropRates, LossTest, ::testing::Values(3, 4, 5, 7, 11, -2, -3));

TEST_F(WireTest, DuplicatesAreAckedNotRedelivered) {
    setup();
    b.post_recv(side[1].qp, 1, {{side[1].buf, 4096, side[1].key}});
    b.post_recv(side[1].qp, 2, {{side[1].buf + 4096, 4096, side[1].key}});
    SendReq s;
    s.sges = {{side[0].buf, 100, side[0].key}};
    a.post_send(side[0].qp, s);
    a.process();
    ASSERT_EQ(a.host.wire.size(), 1u);
    const auto frame = a.host.wire[0];
    pump(a, b);
    ohca_engine_receive_frame(b.e, frame.data(), frame.size()); // again
    pump(a, b);
    EXPECT_EQ(b.poll(side[1].rcq).size(), 1u);
    EXPECT_EQ(a.poll(side[0].scq).size(), 1u);
    // A corrupted frame is dropped and counted.
    auto bad = frame;
    bad[bad.size() - 10] ^= 0x40;
    const uint64_t dropped = b.stats().roce_rx_dropped;
    ohca_engine_receive_frame(b.e, bad.data(), bad.size());
    b.process();
    EXPECT_EQ(b.stats().roce_rx_dropped, dropped + 1);
}

TEST_F(WireTest, RnrNakThenRecvPosted) {
    setup();
    SendReq s;
    s.sges = {{side[0].buf, 100, side[0].key}};
    a.post_send(side[0].qp, s);
    pump(a, b);
    EXPECT_TRUE(a.poll(side[0].scq).empty());
    b.post_recv(side[1].qp, 1, {{side[1].buf, 4096, side[1].key}});
    ASSERT_TRUE(run([&] { return !b.poll(side[1].rcq).empty(); }));
    ASSERT_TRUE(run([&] {
        sc = a.poll(side[0].scq);
        return !sc.empty();
    }));
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
}

TEST_F(WireTest, RnrRetryExhausted) {
    setup(false, 3, 7, 2);
    SendReq s;
    s.sges = {{side[0].buf, 100, side[0].key}};
    a.post_send(side[0].qp, s);
    s.wr_id = 2;
    a.post_send(side[0].qp, s);
    ASSERT_TRUE(run([&] { return sends() == 2; }));
    EXPECT_EQ(sc[0].status, OHCA_CQE_RNR_RETRY_EXC_ERR);
    EXPECT_EQ(sc[1].status, OHCA_CQE_WR_FLUSH_ERR);
    EXPECT_EQ(sc[1].vendor_err, OHCA_VERR_FLUSH);
    EXPECT_EQ(a.query(side[0].qp.qpn).qp_state, OHCA_QPS_ERR);
}

TEST_F(WireTest, RetryExhaustedWhenThePeerIsGone) {
    setup(false, 3, 2);
    SendReq w;
    w.opcode = OHCA_WR_RDMA_WRITE;
    w.remote_addr = side[1].buf;
    w.rkey = side[1].key;
    w.sges = {{side[0].buf, 100, side[0].key}};
    a.post_send(side[0].qp, w);
    auto all = [](bool, const std::vector<uint8_t> &) { return true; };
    unsigned int sent = 0;
    ASSERT_TRUE(run(
        [&] {
            sent += static_cast<unsigned int>(a.host.wire.size());
            sc = a.poll(side[0].scq);
            return !sc.empty();
        },
        all, 60));
    EXPECT_EQ(sc[0].status, OHCA_CQE_RETRY_EXC_ERR);
    EXPECT_EQ(a.query(side[0].qp.qpn).qp_state, OHCA_QPS_ERR);
    // Later work requests complete with WR_FLUSH_ERR.
    w.wr_id = 7;
    a.post_send(side[0].qp, w);
    a.process();
    sc = a.poll(side[0].scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].wr_id, 7u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_WR_FLUSH_ERR);
}

TEST_F(WireTest, RemoteAccessErrors) {
    struct Case {
        uint64_t addr;
        uint32_t key;
        uint8_t op;
    };
    setup();
    const Case cases[] = {
        {side[1].buf, side[1].key ^ 1, OHCA_WR_RDMA_WRITE},              // stale tag
        {side[1].buf + (1 << 20) - 10, side[1].key, OHCA_WR_RDMA_WRITE}, // bounds
        {side[1].buf, side[1].key + 0x100, OHCA_WR_RDMA_READ},           // no such index
    };
    for (const Case &c : cases) {
        SendReq w;
        w.opcode = c.op;
        w.remote_addr = c.addr;
        w.rkey = c.key;
        w.sges = {{side[0].buf, 100, side[0].key}};
        a.post_send(side[0].qp, w);
        b.post_recv(side[1].qp, 1, {{side[1].buf, 16, side[1].key}});
        ASSERT_TRUE(run([&] {
            sc = a.poll(side[0].scq);
            return !sc.empty();
        }));
        EXPECT_EQ(sc[0].status, OHCA_CQE_REM_ACCESS_ERR);
        EXPECT_EQ(sc[0].vendor_err, OHCA_VERR_REMOTE_NAK);
        EXPECT_EQ(a.query(side[0].qp.qpn).qp_state, OHCA_QPS_ERR);
        // The responder went to ERR: its receive WQE is flushed, and the
        // driver hears about it on EQ 0.
        rc = b.poll(side[1].rcq);
        ASSERT_EQ(rc.size(), 1u);
        EXPECT_EQ(rc[0].status, OHCA_CQE_WR_FLUSH_ERR);
        auto ev = b.events();
        ASSERT_FALSE(ev.empty());
        EXPECT_EQ(ev.back().code, OHCA_QP_EV_ACCESS_ERR);
        // Both back to RTS for the next case.
        for (int i = 0; i < 2; ++i) {
            ohca_qp_attr at{};
            at.qp_state = OHCA_QPS_RESET;
            ASSERT_EQ(node(i).modify(side[i].qp.qpn, OHCA_QP_STATE, at).status, OHCA_STATUS_OK);
            side[i].qp.sq_pi = side[i].qp.rq_pi = 0;
            node(i).connect(side[i].qp, side[1 - i].qp.qpn, node(1 - i));
        }
    }
}

TEST_F(WireTest, QpWithoutRemoteWriteAccess) {
    setup();
    ohca_qp_attr at{};
    at.access_flags = OHCA_ACCESS_REMOTE_READ;
    ASSERT_EQ(b.modify(side[1].qp.qpn, OHCA_QP_ACCESS_FLAGS, at).status, OHCA_STATUS_OK);
    SendReq w;
    w.opcode = OHCA_WR_RDMA_WRITE;
    w.remote_addr = side[1].buf;
    w.rkey = side[1].key;
    w.sges = {{side[0].buf, 100, side[0].key}};
    a.post_send(side[0].qp, w);
    ASSERT_TRUE(run([&] {
        sc = a.poll(side[0].scq);
        return !sc.empty();
    }));
    EXPECT_EQ(sc[0].status, OHCA_CQE_REM_ACCESS_ERR);
}

TEST_F(WireTest, ReceiveBufferTooSmall) {
    setup();
    b.post_recv(side[1].qp, 1, {{side[1].buf, 50, side[1].key}});
    SendReq s;
    s.sges = {{side[0].buf, 100, side[0].key}};
    a.post_send(side[0].qp, s);
    ASSERT_TRUE(run([&] {
        sc = a.poll(side[0].scq);
        return !sc.empty();
    }));
    EXPECT_EQ(sc[0].status, OHCA_CQE_REM_INV_REQ_ERR);
    rc = b.poll(side[1].rcq);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, OHCA_CQE_LOC_LEN_ERR);
    EXPECT_EQ(rc[0].vendor_err, OHCA_VERR_RECV_TOO_SMALL);
}

TEST_F(WireTest, LocalKeyErrors) {
    setup();
    const uint32_t other_pd = a.create_pd();
    const uint32_t foreign = a.reg_mr(other_pd, side[0].buf, 4096, kAllAccess);
    const uint32_t ro = a.reg_mr(side[0].pd, side[0].buf, 4096, 0);
    struct Case {
        ohca_sge sge;
        uint8_t op;
        uint8_t verr;
    };
    const Case cases[] = {
        {{side[0].buf, 100, side[0].key + 0x10000}, OHCA_WR_SEND, OHCA_VERR_BAD_LKEY},
        {{side[0].buf - 1, 100, side[0].key}, OHCA_WR_SEND, OHCA_VERR_LKEY_BOUNDS},
        {{side[0].buf, 100, foreign}, OHCA_WR_SEND, OHCA_VERR_LKEY_PD},
        {{side[0].buf, 100, ro}, OHCA_WR_RDMA_READ, OHCA_VERR_LKEY_ACCESS},
    };
    for (const Case &c : cases) {
        SendReq s;
        s.opcode = c.op;
        s.remote_addr = side[1].buf;
        s.rkey = side[1].key;
        s.sges = {c.sge};
        a.post_send(side[0].qp, s);
        a.process();
        sc = a.poll(side[0].scq);
        ASSERT_EQ(sc.size(), 1u);
        EXPECT_EQ(sc[0].status, OHCA_CQE_LOC_PROT_ERR);
        EXPECT_EQ(sc[0].vendor_err, c.verr);
        EXPECT_TRUE(a.host.wire.empty());
        ohca_qp_attr at{};
        at.qp_state = OHCA_QPS_RESET;
        ASSERT_EQ(a.modify(side[0].qp.qpn, OHCA_QP_STATE, at).status, OHCA_STATUS_OK);
        side[0].qp.sq_pi = 0;
        a.connect(side[0].qp, side[1].qp.qpn, b);
    }
}

} // namespace
} // namespace ohca::test

namespace ohca::test {
namespace {

TEST_F(WireTest, SqdDrainsOutstandingWork) {
    setup();
    SendReq w;
    w.opcode = OHCA_WR_RDMA_WRITE;
    w.remote_addr = side[1].buf;
    w.rkey = side[1].key;
    w.sges = {{side[0].buf, 5000, side[0].key}};
    a.post_send(side[0].qp, w);
    a.process(); // sent, not acknowledged
    ohca_qp_attr at{};
    at.qp_state = OHCA_QPS_SQD;
    ASSERT_EQ(a.modify(side[0].qp.qpn, OHCA_QP_STATE, at).status, OHCA_STATUS_OK);
    EXPECT_EQ(a.query(side[0].qp.qpn).sq_draining, 1);
    a.post_send(side[0].qp, w); // not started while SQD
    EXPECT_TRUE(a.events().empty());
    pump(a, b);
    auto ev = a.events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].code, OHCA_QP_EV_SQ_DRAINED);
    EXPECT_EQ(a.query(side[0].qp.qpn).sq_draining, 0);
    EXPECT_EQ(a.poll(side[0].scq).size(), 1u);
    at.qp_state = OHCA_QPS_RTS;
    ASSERT_EQ(a.modify(side[0].qp.qpn, OHCA_QP_STATE, at).status, OHCA_STATUS_OK);
    pump(a, b);
    EXPECT_EQ(a.poll(side[0].scq).size(), 1u);
}

TEST_F(WireTest, FenceWaitsForReads) {
    setup();
    SendReq r;
    r.opcode = OHCA_WR_RDMA_READ;
    r.remote_addr = side[1].buf;
    r.rkey = side[1].key;
    r.sges = {{side[0].buf + 0x8000, 3000, side[0].key}};
    a.post_send(side[0].qp, r);
    SendReq w;
    w.opcode = OHCA_WR_RDMA_WRITE;
    w.flags = OHCA_WQE_SIGNALED | OHCA_WQE_FENCE;
    w.remote_addr = side[1].buf + 0x10000;
    w.rkey = side[1].key;
    w.sges = {{side[0].buf + 0x8000, 3000, side[0].key}}; // what the READ fetched
    a.post_send(side[0].qp, w);
    a.process();
    ASSERT_EQ(a.host.wire.size(), 1u); // only the READ request
    ASSERT_TRUE(run([&] { return sends() == 2; }));
    // The WRITE carried the data the READ brought back.
    std::vector<uint8_t> x(3000), y(3000);
    ASSERT_TRUE(b.host.read(side[1].buf, x.data(), 3000));
    ASSERT_TRUE(b.host.read(side[1].buf + 0x10000, y.data(), 3000));
    EXPECT_EQ(x, y);
}

TEST_F(WireTest, SolicitedEvent) {
    setup();
    b.cq_doorbell(side[1].rcq, OHCA_DB_CQ_ARM_SOLICITED);
    for (int i = 0; i < 2; ++i) {
        b.post_recv(side[1].qp, i, {{side[1].buf, 4096, side[1].key}});
    }
    SendReq s;
    s.sges = {{side[0].buf, 10, side[0].key}};
    a.post_send(side[0].qp, s); // not solicited: no event
    pump(a, b);
    auto ev = b.events();
    EXPECT_TRUE(ev.empty());
    s.flags = OHCA_WQE_SIGNALED | OHCA_WQE_SOLICITED;
    a.post_send(side[0].qp, s);
    pump(a, b);
    ev = b.events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].type, OHCA_EQE_CQ_COMPLETION);
    EXPECT_EQ(ev[0].param0, side[1].rcq.cqn);
    EXPECT_EQ(b.poll(side[1].rcq).size(), 2u);
}

// 16 outstanding 1 MiB READs over the wire: the receiver holds frames back
// (RX_RETRY) instead of dropping them, so nothing is retransmitted.
TEST_F(WireTest, SixteenLargeReadsOutstanding) {
    constexpr uint32_t kLen = 1 << 20;
    setup(false, 3, 7, 7, 16);
    RdmaNode &x = node(0), &y = node(1);
    std::vector<uint64_t> bufs;
    std::vector<uint32_t> keys;
    for (uint32_t i = 0; i < 16; ++i) {
        bufs.push_back(x.alloc(kLen));
        keys.push_back(x.reg_mr(side[0].pd, bufs[i], kLen, kAllAccess));
    }
    for (uint32_t i = 0; i < 16; ++i) {
        SendReq r;
        r.wr_id = 1000 + i;
        r.opcode = OHCA_WR_RDMA_READ;
        r.remote_addr = side[1].buf;
        r.rkey = side[1].key;
        r.sges = {{bufs[i], kLen, keys[i]}};
        x.post_send(side[0].qp, r, false);
    }
    x.ring_sq(side[0].qp);
    ASSERT_TRUE(run([&] { return sends() == 16; }));
    for (uint32_t i = 0; i < 16; ++i) {
        EXPECT_EQ(sc[i].status, OHCA_CQE_SUCCESS);
        EXPECT_EQ(sc[i].wr_id, 1000u + i);
        std::vector<uint8_t> p(kLen), q(kLen);
        EXPECT_TRUE(x.host.read(bufs[i], p.data(), kLen));
        EXPECT_TRUE(y.host.read(side[1].buf, q.data(), kLen));
        EXPECT_TRUE(p == q) << i;
    }
    for (int i = 0; i < 2; ++i) {
        const auto &c = device_of(node(i).e).roce_counters();
        EXPECT_EQ(c.retransmits, 0u) << i;
        EXPECT_EQ(c.timeouts, 0u) << i;
        EXPECT_EQ(c.rx_out_of_seq, 0u) << i;
        EXPECT_EQ(node(i).stats().roce_rx_dropped, 0u) << i;
    }
    EXPECT_EQ(device_of(y.e).roce_counters().tx_packets, 16u * 1024);
}

// A long READ at a small MTU followed by a WRITE, with responses (and
// requests) lost: the requester asks again from the first missing response
// PSN with an adjusted RETH, the responder restarts its response stream
// there, and the READ completes with the right data (two VMs once ended such
// a 64 KiB READ with RETRY_EXC_ERR: an ACK past the READ moved una beyond
// it, so the responses asked again were dropped as duplicates).
class LongReadLossTest : public WireTest,
                         public ::testing::WithParamInterface<std::tuple<uint8_t, int, int>> {};

TEST_P(LongReadLossTest, ReadResumesAndCompletes) {
    const uint8_t mtu = std::get<0>(GetParam());
    const int every = std::get<1>(GetParam()); // captured below: not a structured binding
    const int seed = std::get<2>(GetParam());
    setup(false, mtu);
    SendReq r;
    r.opcode = OHCA_WR_RDMA_READ;
    r.wr_id = 1;
    r.remote_addr = side[1].buf + 0x10001;
    r.rkey = side[1].key;
    r.sges = {{side[0].buf + 0x20003, 30000, side[0].key},
              {side[0].buf + 0x40005, 30352, side[0].key}};
    a.post_send(side[0].qp, r);
    SendReq w;
    w.opcode = OHCA_WR_RDMA_WRITE;
    w.wr_id = 2;
    w.remote_addr = side[1].buf + 0x80000;
    w.rkey = side[1].key;
    w.sges = {{side[0].buf + 0x80000, 5000, side[0].key}};
    a.post_send(side[0].qp, w);
    std::mt19937 rng(static_cast<unsigned int>(seed));
    auto drop = [&](bool from_a, const std::vector<uint8_t> &) {
        return (every > 0 || !from_a) && rng() % static_cast<unsigned>(std::abs(every)) == 0;
    };
    ASSERT_TRUE(
        run([&] { return sends() >= 2 || (!sc.empty() && sc.back().status != OHCA_CQE_SUCCESS); },
            drop, 4000))
        << sc.size() << " state " << int(a.query(side[0].qp.qpn).qp_state);
    ASSERT_EQ(sc.size(), 2u) << "status " << int(sc.back().status);
    EXPECT_EQ(sc[0].wr_id, 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(sc[0].byte_len, 60352u);
    EXPECT_EQ(sc[1].wr_id, 2u);
    EXPECT_EQ(sc[1].status, OHCA_CQE_SUCCESS);
    EXPECT_TRUE(same(side[0].buf + 0x20003, side[1].buf + 0x10001, 30000));
    EXPECT_TRUE(same(side[0].buf + 0x40005, side[1].buf + 0x10001 + 30000, 30352));
    EXPECT_TRUE(same(side[0].buf + 0x80000, side[1].buf + 0x80000, 5000));
}

INSTANTIATE_TEST_SUITE_P(MtuDropSeed, LongReadLossTest,
                         ::testing::Combine(::testing::Values(uint8_t{1}, uint8_t{3}),
                                            ::testing::Values(-5, -17, 9, 50),
                                            ::testing::Values(1, 2, 3)));

// A wire that carries at most 'capacity' frames each way per round (1 ms)
// and drops the rest, as a full socket buffer between two VMs does: bursts
// beyond what the path holds are lost together. The requester must find the
// rate the path takes (its window) instead of re-requesting everything on
// every sign of loss, which ended 64 KiB ib_read_bw runs in RETRY_EXC_ERR.
class CongestedWireTest : public WireTest {
  protected:
    bool run_congested(const std::function<bool()> &pred, size_t capacity, int rounds = 20000) {
        for (int r = 0; r < rounds; ++r) {
            node(0).process();
            node(1).process();
            if (pred()) {
                return true;
            }
            const bool idle = node(0).host.wire.empty() && node(1).host.wire.empty();
            for (int from = 0; from < 2; ++from) {
                auto frames = std::move(node(from).host.wire);
                node(from).host.wire.clear();
                sent[from] += frames.size();
                const size_t n = std::min(capacity, frames.size());
                dropped[from] += frames.size() - n;
                for (size_t k = 0; k < n; ++k) {
                    if (ohca_engine_receive_frame(node(1 - from).e, frames[k].data(),
                                                  frames[k].size()) == OHCA_ENGINE_RX_RETRY) {
                        ++dropped[from];
                    }
                }
            }
            const uint64_t step = idle ? 20'000'000 : 1'000'000;
            node(0).host.now += step;
            node(1).host.now += step;
        }
        return pred();
    }
    // Posts n READs of len bytes (wr_id first + i) from remote(i) on node 1
    // into local(i) on node 0, then waits until all have completed or one
    // has failed, through a path of 100 frames a round each way.
    bool reads_complete(uint32_t n, uint32_t len, uint64_t first,
                        const std::function<uint64_t(uint32_t)> &remote,
                        const std::function<uint64_t(uint32_t)> &local) {
        for (uint32_t i = 0; i < n; ++i) {
            SendReq r;
            r.wr_id = first + i;
            r.opcode = OHCA_WR_RDMA_READ;
            r.remote_addr = remote(i);
            r.rkey = side[1].key;
            r.sges = {{local(i), len, side[0].key}};
            a.post_send(side[0].qp, r, false);
        }
        a.ring_sq(side[0].qp);
        return run_congested(
            [&] { return sends() == n || (!sc.empty() && sc.back().status != OHCA_CQE_SUCCESS); },
            100);
    }
    uint64_t sent[2] = {0, 0};
    uint64_t dropped[2] = {0, 0};
};

TEST_F(CongestedWireTest, SixteenReadsFindThePathRate) {
    constexpr uint32_t kLen = 64 * 1024;
    setup(false, 3, 7, 7, 16); // MTU 1024: 64 responses per READ
    auto remote = [&](uint32_t i) { return side[1].buf + (i % 4) * kLen; };
    auto local = [&](uint32_t i) { return side[0].buf + i * kLen % (1 << 20); };
    ASSERT_TRUE(reads_complete(16, kLen, 100, remote, local)) << sc.size();
    ASSERT_EQ(sc.size(), 16u);
    for (uint32_t i = 0; i < 16; ++i) {
        EXPECT_EQ(sc[i].status, OHCA_CQE_SUCCESS) << i;
        EXPECT_EQ(sc[i].wr_id, 100u + i);
    }
    // The last four READs landed last in the same 1 MiB buffer.
    for (uint32_t i = 12; i < 16; ++i) {
        EXPECT_TRUE(same(local(i), remote(i), kLen)) << i;
    }
    const auto &c = device_of(a.e).roce_counters();
    EXPECT_GT(dropped[1], 0u); // the path did overflow ...
    EXPECT_EQ(c.retry_exceeded, 0u);
    // ... and the responder sent at most twice the 1024 responses needed.
    EXPECT_LE(sent[1], 2u * 1024) << "retransmits " << c.retransmits << " timeouts " << c.timeouts;
}

// READs longer than the path holds: once responses have come, the rest is
// asked for in parts no longer than the window, not replayed whole.
TEST_F(CongestedWireTest, LongReadsAreAskedAgainInParts) {
    constexpr uint32_t kLen = 256 * 1024;
    setup(false, 1, 7, 7, 4); // MTU 256: 1024 responses per READ
    auto remote = [&](uint32_t i) { return side[1].buf + (3 - i) * kLen; };
    auto local = [&](uint32_t i) { return side[0].buf + i * kLen; };
    ASSERT_TRUE(reads_complete(4, kLen, 300, remote, local)) << sc.size();
    ASSERT_EQ(sc.size(), 4u);
    for (uint32_t i = 0; i < 4; ++i) {
        EXPECT_EQ(sc[i].status, OHCA_CQE_SUCCESS) << i;
        EXPECT_EQ(sc[i].byte_len, kLen);
    }
    for (uint32_t i = 0; i < 4; ++i) {
        EXPECT_TRUE(same(local(i), remote(i), kLen)) << i;
    }
    const auto &c = device_of(a.e).roce_counters();
    EXPECT_GT(dropped[1], 0u);
    EXPECT_EQ(c.retry_exceeded, 0u);
    EXPECT_LE(sent[1], 2u * 4096) << "retransmits " << c.retransmits << " timeouts " << c.timeouts;
}

// 20 % of the frames lost each way, long messages: go-back-N with a full
// window rarely gets a window through, so the window has to shrink.
TEST_F(CongestedWireTest, LongMessagesThroughTwentyPercentLoss) {
    constexpr uint32_t kLen = 256 * 1024;
    setup(false, 3, 7, 7, 4);
    for (uint32_t i = 0; i < 4; ++i) {
        SendReq r;
        r.wr_id = 200 + i;
        r.opcode = i % 2 == 0 ? OHCA_WR_RDMA_WRITE : OHCA_WR_RDMA_READ;
        r.remote_addr = side[1].buf + i * kLen;
        r.rkey = side[1].key;
        r.sges = {{side[0].buf + i * kLen, kLen, side[0].key}};
        a.post_send(side[0].qp, r, false);
    }
    a.ring_sq(side[0].qp);
    std::mt19937 rng(20);
    uint64_t frames[2] = {0, 0};
    ASSERT_TRUE(
        run([&] { return sends() == 4 || (!sc.empty() && sc.back().status != OHCA_CQE_SUCCESS); },
            [&](bool from_a, const std::vector<uint8_t> &) {
                ++frames[from_a ? 0 : 1];
                return rng() % 5 == 0;
            },
            20000, 5'000'000))
        << sc.size();
    ASSERT_EQ(sc.size(), 4u);
    for (uint32_t i = 0; i < 4; ++i) {
        EXPECT_EQ(sc[i].status, OHCA_CQE_SUCCESS) << i;
        EXPECT_TRUE(same(side[0].buf + i * kLen, side[1].buf + i * kLen, kLen)) << i;
    }
    const auto &c = device_of(a.e).roce_counters();
    EXPECT_GT(c.retransmits, 0u);
    EXPECT_EQ(c.retry_exceeded, 0u);
    // 1024 data packets are needed; re-requesting every outstanding READ on
    // each sign of loss, with a fixed window, took 46 times as many frames.
    EXPECT_LE(frames[0] + frames[1], 5u * 1024) << "timeouts " << c.timeouts;
}

} // namespace
} // namespace ohca::test

namespace ohca::test {
namespace {

// After an ACK timeout the requester sends again from the oldest
// unacknowledged PSN. When that resend loses its first packet as well, the
// next sign of it -- a NAK sequence error, a READ response past the missing
// one, an ACK past a READ whose responses are missing -- goes back again at
// once: nothing sent before the timeout is still on the way, so it is not a
// stale sign of the loss already being recovered. (It was taken for one, and
// each such loss cost another timeout; at 20 % loss each way that ended
// two-VM runs of ohca_rc_integrity in RETRY_EXC_ERR.)
enum class ResendLoss { WriteNak, ReadResponseGap, AckPastRead };

class ResendLossTest : public WireTest, public ::testing::WithParamInterface<ResendLoss> {};

TEST_P(ResendLossTest, SignOfTheResendsLossGoesBackAtOnce) {
    setup();
    const ResendLoss c = GetParam();
    const uint32_t psn0 = psn_add(0x100 + side[0].qp.qpn, 0);
    SendReq r;
    r.opcode = c == ResendLoss::WriteNak ? OHCA_WR_RDMA_WRITE : OHCA_WR_RDMA_READ;
    r.remote_addr = side[1].buf + 0x10000;
    r.rkey = side[1].key;
    r.sges = {{side[0].buf + 0x20000, c == ResendLoss::AckPastRead ? 2048u : 4096u, side[0].key}};
    a.post_send(side[0].qp, r);
    if (c == ResendLoss::AckPastRead) {
        SendReq w;
        w.opcode = OHCA_WR_RDMA_WRITE;
        w.wr_id = 2;
        w.remote_addr = side[1].buf + 0x30000;
        w.rkey = side[1].key;
        w.sges = {{side[0].buf + 0x40000, 100, side[0].key}};
        a.post_send(side[0].qp, w);
    }
    const auto &ca = device_of(a.e).roce_counters();
    unsigned int dropped = 0;
    // Before the timeout every request is lost (so the responder has sent
    // no NAK yet); after it, the resend loses its first packet (WRITE), the
    // first READ response, or both READ responses (the ACK of the WRITE
    // behind them comes through).
    auto drop = [&](bool from_a, const std::vector<uint8_t> &f) {
        ParsedPacket p;
        EXPECT_EQ(parse_roce_frame(f, p), ParseError::None);
        if (ca.timeouts == 0) {
            return from_a;
        }
        const uint8_t op = p.fields.bth.opcode;
        const bool response = op >= rc::kReadRespFirst && op <= rc::kReadRespOnly;
        bool lose = false;
        switch (c) {
        case ResendLoss::WriteNak:
            lose = from_a && p.fields.bth.psn == psn0 && dropped == 0;
            break;
        case ResendLoss::ReadResponseGap:
            lose = !from_a && response && p.fields.bth.psn == psn0 && dropped == 0;
            break;
        case ResendLoss::AckPastRead:
            lose = !from_a && response && dropped < 2;
            break;
        }
        dropped += lose ? 1 : 0;
        return lose;
    };
    const size_t want = c == ResendLoss::AckPastRead ? 2 : 1;
    ASSERT_TRUE(run([&] { return sends() == want; }, drop, 100)) << sc.size();
    for (const ohca_cqe &e : sc) {
        EXPECT_EQ(e.status, OHCA_CQE_SUCCESS);
    }
    EXPECT_EQ(dropped, c == ResendLoss::AckPastRead ? 2u : 1u);
    EXPECT_EQ(ca.timeouts, 1u); // not a second one
    EXPECT_EQ(ca.seq_naks_rcvd, c == ResendLoss::WriteNak ? 1u : 0u);
    if (c == ResendLoss::WriteNak) {
        EXPECT_TRUE(same(side[0].buf + 0x20000, side[1].buf + 0x10000, 4096));
    } else {
        EXPECT_TRUE(same(side[0].buf + 0x20000, side[1].buf + 0x10000, r.sges[0].length));
    }
}

INSTANTIATE_TEST_SUITE_P(Cases, ResendLossTest,
                         ::testing::Values(ResendLoss::WriteNak, ResendLoss::ReadResponseGap,
                                           ResendLoss::AckPastRead));

// A NAK past a READ whose response was lost: a sequence error, or an RNR
// NAK of a SEND. The READ is asked for again and everything after it resent.
// The NAK's own PSN, further on, is no place to resume: with una held at the
// READ the window had no room there, and with the ACK timer stopped by the
// progress before the READ, the QP sent nothing ever again (found by
// LossyTrafficTest).
class NakPastReadTest : public WireTest, public ::testing::WithParamInterface<bool> {};

TEST_P(NakPastReadTest, ResendsTheRead) {
    const bool rnr = GetParam();
    setup();
    const uint32_t psn0 = psn_add(0x100 + side[0].qp.qpn, 0);
    SendReq w;
    w.opcode = OHCA_WR_RDMA_WRITE;
    w.remote_addr = side[1].buf;
    w.rkey = side[1].key;
    w.sges = {{side[0].buf, 100, side[0].key}}; // psn0
    a.post_send(side[0].qp, w);
    SendReq r;
    r.opcode = OHCA_WR_RDMA_READ;
    r.wr_id = 2;
    r.remote_addr = side[1].buf + 0x10000;
    r.rkey = side[1].key;
    r.sges = {{side[0].buf + 0x10000, 1000, side[0].key}}; // psn0 + 1
    a.post_send(side[0].qp, r);
    // All of it inside the initial window (64 packets at MTU 1024).
    constexpr uint32_t kWritePkts = 50;
    w.wr_id = 3;
    w.remote_addr = side[1].buf + 0x20000;
    w.sges = {{side[0].buf + 0x20000, kWritePkts * 1024, side[0].key}}; // psn0 + 2 ... + 51
    a.post_send(side[0].qp, w);
    SendReq snd;
    snd.wr_id = 4;
    snd.sges = {{side[0].buf + 0x80000, 10, side[0].key}}; // psn0 + 52, no receive yet
    a.post_send(side[0].qp, snd);
    if (!rnr) {
        b.post_recv(side[1].qp, 9, {{side[1].buf + 0x80000, 64, side[1].key}});
    }
    // The NAK: RNR for the SEND, or a sequence error for the WRITE's 40th
    // packet, lost (beyond the window once halved). Everything from b is
    // lost up to the NAK.
    const uint32_t at = psn_add(psn0, rnr ? 2 + kWritePkts : 2 + 40);
    const uint8_t kind = rnr ? kAethRnrNak : kAethNak;
    bool nak = false, dropped = false;
    auto drop = [&](bool from_a, const std::vector<uint8_t> &f) {
        ParsedPacket p;
        EXPECT_EQ(parse_roce_frame(f, p), ParseError::None);
        if (from_a) {
            const bool lose = !rnr && !dropped && p.fields.bth.psn == at;
            dropped = dropped || lose;
            return lose;
        }
        if (!nak && p.fields.bth.opcode == rc::kAck && p.fields.bth.psn == at &&
            (p.fields.aeth->syndrome & 0x60) == kind) {
            nak = true;
            return false;
        }
        return !nak;
    };
    ASSERT_TRUE(run(
        [&] {
            if (nak && side[1].qp.rq_pi == 0) {
                b.post_recv(side[1].qp, 9, {{side[1].buf + 0x80000, 64, side[1].key}});
            }
            return sends() == 4;
        },
        drop, 100))
        << sc.size() << " completions, NAK " << nak << ", timer " << a.host.timer;
    for (const ohca_cqe &e : sc) {
        EXPECT_EQ(e.status, OHCA_CQE_SUCCESS);
    }
    EXPECT_EQ(device_of(a.e).roce_counters().rnr_naks_rcvd, rnr ? 1u : 0u);
    EXPECT_TRUE(same(side[0].buf + 0x10000, side[1].buf + 0x10000, 1000));
    EXPECT_TRUE(same(side[0].buf + 0x20000, side[1].buf + 0x20000, kWritePkts * 1024));
    EXPECT_TRUE(same(side[0].buf + 0x80000, side[1].buf + 0x80000, 10));
}

INSTANTIATE_TEST_SUITE_P(SeqOrRnr, NakPastReadTest, ::testing::Bool());

std::string strf(const char *f, ...) __attribute__((format(printf, 1, 2)));
std::string strf(const char *f, ...) {
    char buf[256];
    va_list ap;
    va_start(ap, f);
    std::vsnprintf(buf, sizeof(buf), f, ap);
    va_end(ap);
    return buf;
}

// What ohca_rc_integrity does between two VMs through the fault wire
// (test_rc_faults.py, loss20): batches of 1..8 SEND, SEND_IMM, WRITE,
// WRITE_IMM and READ of up to 70000 bytes at MTU 1024, retry_cnt 7, through
// a wire that loses 20 % of the frames each way, here with both ends
// requesting at once. Every WR must complete successfully with its bytes in
// place. Each QP's streaks of ACK timeouts without progress are counted and
// printed (retry_cnt 7 fails at the eighth in a row).
//
// Even a flawless requester fails now and then at this loss: the last packet
// of a batch and its ACK both get through with p = 0.8 * 0.8, so eight tries
// in a row fail with 0.36^8 = 3e-4. Measured (Release build, environment
// below): about 1 RETRY_EXC_ERR in 2300 iterations with both ends
// requesting, 1 in 3900 with one (before the two fixes above: 1 in 880 and
// 1 in 1500, and 1 in 10000 connections hung). The 800 iterations here pass;
// if a change to the requester makes them fail, look at the streaks and the
// trace of the failing seed before calling it bad luck.
//
// OHCA_LOSSY_SEEDS, _FIRST, _ITERS, _PERMILLE and _BOTH change the run (e.g.
// thousands of seeds at 30 % loss), OHCA_LOSSY_TRACE=seed prints its frames
// and timeouts.
class LossyTrafficTest : public WireTest {
  protected:
    static constexpr uint32_t kMaxMsg = 70000;
    static constexpr uint64_t kSlot = 128 * 1024; // per WR of a batch
    static constexpr uint64_t kIn = 1 << 20;      // second half: the peer's target
    static constexpr uint8_t kRetry = 7;

    struct Wr {
        uint8_t op = OHCA_WR_SEND;
        uint32_t len = 0;
        uint64_t local = 0;  // requester's buffer offset: source, or READ target
        uint64_t remote = 0; // responder's: receive buffer, WRITE target, READ source
        uint32_t slack = 0;  // receive buffer beyond len
        bool recv = false;   // takes a receive WQE
    };
    struct Batch {
        std::vector<Wr> wrs;
        size_t sends_seen = 0, recvs_seen = 0;
    };

    void SetUp() override {
        side_bytes = 2 << 20;
        setup(false, 3, kRetry, 7, 4);
        streak_hist.assign(kRetry + 2, 0);
    }
    const Qp &qp_of(int i) { return *device_of(node(i).e).qp_state_of(side[i].qp.qpn); }
    // Lengths as ohca_rc_integrity picks them (pick_len).
    uint32_t pick_len(std::mt19937_64 &g) {
        const uint32_t mtu = 1024;
        switch (g() % 8) {
        case 0:
            return static_cast<uint32_t>(g() % 9);
        case 1:
            return std::min<uint32_t>(kMaxMsg, mtu * (1 + g() % 4) - 2 + g() % 5);
        case 2:
            return static_cast<uint32_t>(g() % (kMaxMsg + 1));
        default:
            return static_cast<uint32_t>(g() % (8192 + 1));
        }
    }
    Batch plan(std::mt19937_64 &g) {
        Batch b;
        const size_t n = g() % 3 != 0 ? 1 + g() % 3 : 1 + g() % 8;
        const uint8_t ops[5] = {OHCA_WR_SEND, OHCA_WR_SEND_IMM, OHCA_WR_RDMA_WRITE,
                                OHCA_WR_RDMA_WRITE_IMM, OHCA_WR_RDMA_READ};
        for (size_t w = 0; w < n; ++w) {
            Wr r;
            r.op = ops[g() % 5];
            r.len = pick_len(g);
            r.local = w * kSlot + (g() % 4096 | 1);
            r.remote = kIn + w * kSlot + (g() % 4096 | 1);
            r.slack = static_cast<uint32_t>(g() % 100);
            r.recv =
                r.op == OHCA_WR_SEND || r.op == OHCA_WR_SEND_IMM || r.op == OHCA_WR_RDMA_WRITE_IMM;
            b.wrs.push_back(r);
        }
        return b;
    }
    void fill(RdmaNode &n, uint64_t at, uint32_t len, std::mt19937_64 &g) {
        std::vector<uint8_t> v(len);
        for (uint32_t k = 0; k < len; k += 8) {
            const uint64_t x = g();
            std::memcpy(v.data() + k, &x, std::min<uint32_t>(8, len - k));
        }
        ASSERT_TRUE(n.host.write(at, v.data(), len));
    }
    // Posts node r's batch towards node 1 - r: data in place, receives first.
    void post(int r, const Batch &b, uint64_t iter, std::mt19937_64 &g) {
        RdmaNode &req = node(r), &resp = node(1 - r);
        Side &s = side[r], &t = side[1 - r];
        for (size_t w = 0; w < b.wrs.size(); ++w) {
            const Wr &x = b.wrs[w];
            const bool read = x.op == OHCA_WR_RDMA_READ;
            fill(read ? resp : req, (read ? t.buf + x.remote : s.buf + x.local), x.len, g);
            if (read) {
                req.host.fill(s.buf + x.local, 0xa5, x.len + 1);
            } else {
                resp.host.fill(t.buf + x.remote, 0xa5, x.len + x.slack + 1);
            }
            if (x.recv) {
                resp.post_recv(t.qp, iter << 8 | w, {{t.buf + x.remote, x.len + x.slack, t.key}});
            }
        }
        for (size_t w = 0; w < b.wrs.size(); ++w) {
            const Wr &x = b.wrs[w];
            SendReq q;
            q.wr_id = iter << 8 | w;
            q.opcode = x.op;
            q.imm = static_cast<uint32_t>(iter << 8 | w);
            q.remote_addr = t.buf + x.remote;
            q.rkey = t.key;
            if (x.len != 0) {
                q.sges = {{s.buf + x.local, x.len, s.key}};
            }
            req.post_send(s.qp, q, false);
        }
        req.ring_sq(s.qp);
    }
    // Takes node r's send completions ('recv': its peer's receive
    // completions) of batch b; false with 'why' on the first wrong one.
    bool collect(int r, Batch &b, uint64_t iter, bool recv, std::string &why) {
        for (const ohca_cqe &c : recv ? std::vector<ohca_cqe>{} : node(r).poll(side[r].scq)) {
            const size_t w = b.sends_seen++;
            if (w >= b.wrs.size() || c.wr_id != (iter << 8 | w) || c.status != OHCA_CQE_SUCCESS) {
                why = strf("node %d: WR %zu of %zu (opcode %d, %u bytes) completed as wr_id "
                           "0x%llx status %u",
                           r, w, b.wrs.size(), w < b.wrs.size() ? b.wrs[w].op : -1,
                           w < b.wrs.size() ? b.wrs[w].len : 0,
                           static_cast<unsigned long long>(c.wr_id), c.status);
                return false;
            }
        }
        for (const ohca_cqe &c :
             recv ? node(1 - r).poll(side[1 - r].rcq) : std::vector<ohca_cqe>{}) {
            size_t w = b.recvs_seen;
            while (w < b.wrs.size() && !b.wrs[w].recv) {
                ++w;
            }
            if (w >= b.wrs.size() || c.wr_id != (iter << 8 | w) || c.status != OHCA_CQE_SUCCESS ||
                c.byte_len != b.wrs[w].len) {
                why = strf("node %d: receive wr_id 0x%llx status %u byte_len %u", 1 - r,
                           static_cast<unsigned long long>(c.wr_id), c.status, c.byte_len);
                return false;
            }
            b.recvs_seen = w + 1;
        }
        return true;
    }
    bool done(const Batch &b) const {
        size_t recvs = 0;
        for (const Wr &x : b.wrs) {
            recvs += x.recv ? 1 : 0;
        }
        size_t seen = 0;
        for (size_t w = 0; w < b.recvs_seen; ++w) {
            seen += b.wrs[w].recv ? 1 : 0;
        }
        return b.sends_seen == b.wrs.size() && seen == recvs;
    }
    bool bytes_ok(int r, const Batch &b) {
        const Side &s = side[r], &t = side[1 - r];
        for (const Wr &x : b.wrs) {
            const bool read = x.op == OHCA_WR_RDMA_READ;
            std::vector<uint8_t> src(x.len), dst(x.len + 1);
            EXPECT_TRUE(
                node(read ? 1 - r : r)
                    .host.read((read ? t.buf + x.remote : s.buf + x.local), src.data(), x.len));
            EXPECT_TRUE(
                node(read ? r : 1 - r)
                    .host.read((read ? s.buf + x.local : t.buf + x.remote), dst.data(), x.len + 1));
            if (!std::equal(src.begin(), src.end(), dst.begin()) || dst[x.len] != 0xa5) {
                return false;
            }
        }
        return true;
    }
    // One frame of the lossy wire each way, and its clock: every round of
    // the pump is one hop (100 us); an idle wire jumps to the next timer.
    // Samples each QP's timeouts-without-progress streak after every run.
    void round() {
        for (int i = 0; i < 2; ++i) {
            const uint64_t before = device_of(node(i).e).roce_counters().timeouts;
            node(i).process();
            const uint64_t fired = device_of(node(i).e).roce_counters().timeouts - before;
            const Qp &q = qp_of(i);
            unsigned int now = q.state == OHCA_QPS_ERR ? streak[i] + static_cast<unsigned>(fired)
                                                       : kRetry - q.retry_left;
            if (fired != 0 && now == 0) {
                now = streak[i] + static_cast<unsigned>(fired); // ended in this run
                end_streak(i, now);
                now = 0;
            } else if (now < streak[i]) {
                end_streak(i, streak[i]);
            }
            streak[i] = now;
            if (trace && fired != 0) {
                std::printf("%9.3f ms node %d: timeout, %u in a row; una %06x next %06x "
                            "cwnd %u recovering %d, its responder's epsn %06x\n",
                            ms(), i, now, q.una_psn, q.next_psn, q.cwnd, q.recovering, q.epsn);
            }
        }
        bool idle = true;
        for (int from = 0; from < 2; ++from) {
            auto frames = std::move(node(from).host.wire);
            node(from).host.wire.clear();
            idle = idle && frames.empty();
            for (size_t k = 0; k < frames.size(); ++k) {
                ++sent[from];
                const bool drop = rng() % 1000 < loss_permille;
                if (trace) {
                    ParsedPacket p;
                    if (parse_roce_frame(frames[k], p) == ParseError::None) {
                        std::printf("%9.3f ms %s op %02x psn %06x%s aeth %02x reth %u len %zu%s\n",
                                    ms(), from == 0 ? "0>1" : "1>0", p.fields.bth.opcode,
                                    p.fields.bth.psn, p.fields.bth.ack_req ? " A" : "",
                                    p.fields.aeth ? p.fields.aeth->syndrome : 0,
                                    p.fields.reth ? p.fields.reth->dma_len : 0, p.payload.size(),
                                    drop ? " LOST" : "");
                    }
                }
                if (drop) {
                    ++lost[from];
                    continue;
                }
                if (ohca_engine_receive_frame(node(1 - from).e, frames[k].data(),
                                              frames[k].size()) == OHCA_ENGINE_RX_RETRY) {
                    node(from).host.wire.insert(node(from).host.wire.begin(),
                                                std::make_move_iterator(frames.begin() + k),
                                                std::make_move_iterator(frames.end()));
                    break;
                }
            }
        }
        uint64_t next = node(0).host.now + 100'000;
        if (idle) {
            uint64_t t = UINT64_MAX;
            for (int i = 0; i < 2; ++i) {
                if (node(i).host.timer > node(i).host.now) {
                    t = std::min(t, node(i).host.timer);
                }
            }
            next = t == UINT64_MAX ? next : std::max(next, t);
        }
        node(0).host.now = node(1).host.now = next;
    }
    void end_streak(int i, unsigned int n) {
        if (n > 0) {
            ++streak_hist[std::min<unsigned int>(n, kRetry + 1)];
            max_streak[i] = std::max(max_streak[i], n);
        }
    }
    // One connection: 'iters' iterations, each a batch from one end (or from
    // both at once when 'both'). Empty when every WR completed correctly.
    std::string run_seed(uint64_t seed, int iters, bool both) {
        std::mt19937_64 g(seed);
        rng.seed(seed ^ 0x5eed);
        streak[0] = streak[1] = 0;
        max_streak[0] = max_streak[1] = 0;
        for (int it = 0; it < iters; ++it) {
            const auto iter = static_cast<uint64_t>(it + 1);
            const int first = static_cast<int>(g() % 2);
            Batch b[2];
            bool on[2] = {false, false};
            for (int k = 0; k < (both ? 2 : 1); ++k) {
                const int r = (first + k) % 2;
                b[r] = plan(g);
                on[r] = true;
                post(r, b[r], iter, g);
            }
            std::string why;
            const uint64_t limit = node(0).host.now + 120'000'000'000;
            while (node(0).host.now < limit) {
                round();
                bool all = true;
                // Send completions first: a receive flushed by a QP that
                // went to ERR says less than the send that took it there.
                for (int k = 0; k < 4; ++k) {
                    const int r = k % 2;
                    if (on[r] && !collect(r, b[r], iter, k >= 2, why)) {
                        return strf("seed %llu iteration %llu: %s",
                                    static_cast<unsigned long long>(seed),
                                    static_cast<unsigned long long>(iter), why.c_str());
                    }
                    all = all && (!on[r] || done(b[r]));
                }
                if (all) {
                    break;
                }
            }
            for (int r = 0; r < 2; ++r) {
                if (on[r] && !done(b[r])) {
                    return strf("seed %llu iteration %llu: node %d has not finished",
                                static_cast<unsigned long long>(seed),
                                static_cast<unsigned long long>(iter), r);
                }
                if (on[r] && !bytes_ok(r, b[r])) {
                    return strf("seed %llu iteration %llu: wrong bytes from node %d",
                                static_cast<unsigned long long>(seed),
                                static_cast<unsigned long long>(iter), r);
                }
            }
        }
        return {};
    }
    // The next connection: both QPs through RESET, the wire drained.
    void reconnect() {
        for (int k = 0; k < 100 && (!node(0).host.wire.empty() || !node(1).host.wire.empty());
             ++k) {
            pump(node(0), node(1));
        }
        for (int i = 0; i < 2; ++i) {
            ohca_qp_attr at{};
            at.qp_state = OHCA_QPS_RESET;
            ASSERT_EQ(node(i).modify(side[i].qp.qpn, OHCA_QP_STATE, at).status, OHCA_STATUS_OK);
            side[i].qp.sq_pi = side[i].qp.rq_pi = 0;
            (void)node(i).poll(side[i].scq);
            (void)node(i).poll(side[i].rcq);
            node(i).host.traces.clear();
        }
        const uint32_t remote = OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_READ;
        for (int i = 0; i < 2; ++i) {
            node(i).connect(side[i].qp, side[1 - i].qp.qpn, node(1 - i), 3, 14, kRetry, 7, remote,
                            4);
        }
    }

    double ms() const { return static_cast<double>(a.host.now - t0) / 1e6; }

    unsigned int loss_permille = 200;
    bool trace = false; // print every frame and timeout
    uint64_t t0 = 0;
    std::mt19937_64 rng;
    uint64_t sent[2] = {0, 0}, lost[2] = {0, 0};
    unsigned int streak[2] = {0, 0}, max_streak[2] = {0, 0};
    std::vector<uint64_t> streak_hist; // [n]: streaks of n timeouts; [kRetry + 1]: failures
};

// Seeds, iterations per seed and loss in permille from the environment, for
// longer searches (OHCA_LOSSY_SEEDS=2000 OHCA_LOSSY_PERMILLE=300 ...).
unsigned long env_or(const char *name, unsigned long dflt) {
    const char *v = std::getenv(name);
    return v != nullptr ? std::strtoul(v, nullptr, 0) : dflt;
}

TEST_F(LossyTrafficTest, TwentyPercentLossBothWays) {
    const unsigned long seeds = env_or("OHCA_LOSSY_SEEDS", 200);
    const auto iters = static_cast<int>(env_or("OHCA_LOSSY_ITERS", 4));
    loss_permille = static_cast<unsigned int>(env_or("OHCA_LOSSY_PERMILLE", 200));
    const bool both = env_or("OHCA_LOSSY_BOTH", 1) != 0;
    unsigned long failed = 0;
    // Eight lost tries in a row end a QP in RETRY_EXC_ERR whatever the
    // requester does: about 3e-4 per stall at 20 % each way, 0.35 expected
    // in the default 800 iterations. Up to three such runs are that floor;
    // any other failure (a hang, wrong bytes, another status) is a bug.
    unsigned long at_floor = 0;
    const std::string retry_exc = strf(" status %u", OHCA_CQE_RETRY_EXC_ERR);
    std::vector<unsigned long> runs_by_max(kRetry + 2, 0);
    for (unsigned long seed = env_or("OHCA_LOSSY_FIRST", 1); seed <= seeds; ++seed) {
        trace = seed == env_or("OHCA_LOSSY_TRACE", 0);
        t0 = node(0).host.now;
        const std::string err = run_seed(seed, iters, both);
        if (err.ends_with(retry_exc)) {
            ++at_floor;
        } else {
            EXPECT_EQ(err, "");
        }
        failed += err.empty() ? 0 : 1;
        ++runs_by_max[std::min<unsigned int>(std::max(max_streak[0], max_streak[1]), kRetry + 1)];
        reconnect();
    }
    std::string hist, runs;
    for (size_t n = 1; n < streak_hist.size(); ++n) {
        hist += strf(" %zu:%llu", n, static_cast<unsigned long long>(streak_hist[n]));
    }
    for (size_t n = 0; n < runs_by_max.size(); ++n) {
        runs += strf(" %zu:%lu", n, runs_by_max[n]);
    }
    std::printf("lossy: %lu seeds x %d iterations, loss %u/1000, both %d: %lu failed; "
                "frames %lu/%lu lost %lu/%lu\n  streaks of timeouts without progress:%s\n"
                "  runs by longest streak:%s\n",
                seeds, iters, loss_permille, both, failed, (unsigned long)sent[0],
                (unsigned long)sent[1], (unsigned long)lost[0], (unsigned long)lost[1],
                hist.c_str(), runs.c_str());
    EXPECT_LE(at_floor, 3u);
    // (both ends of one run may give up)
    EXPECT_LE(device_of(node(0).e).roce_counters().retry_exceeded +
                  device_of(node(1).e).roce_counters().retry_exceeded,
              2 * at_floor);
}

} // namespace
} // namespace ohca::test
