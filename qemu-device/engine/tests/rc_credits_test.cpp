// SPDX-License-Identifier: GPL-2.0-or-later
// RC end-to-end credits (transports/credits.hpp): the code table, what the
// responder advertises, the requester's limit, probe and wait, a slow
// receiver, SRQs and XRC ("invalid"), an rxe-like peer and a hostile one.
#include "device/device.hpp"
#include "link/roce_packet.hpp"
#include "link/roce_v2.hpp"
#include "rdma_node.hpp"
#include "transports/credits.hpp"

#include <gtest/gtest.h>

#include <malloc.h>

#include <algorithm>

#include <optional>

namespace ohca::test {
namespace {

constexpr uint32_t kRemote = OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_READ;

// The AETH of a response frame (nullopt: a request, or no AETH).
std::optional<Aeth> aeth_of(const std::vector<uint8_t> &frame) {
    ParsedPacket p;
    if (parse_roce_frame(frame, p) != ParseError::None) {
        return std::nullopt;
    }
    return p.fields.aeth;
}

uint8_t opcode_of(const std::vector<uint8_t> &frame) {
    ParsedPacket p;
    EXPECT_EQ(parse_roce_frame(frame, p), ParseError::None);
    return p.fields.bth.opcode;
}

TEST(CreditTable, IbtaValues) {
    const uint16_t want[31] = {0,    1,    2,    3,    4,    6,     8,     12,    16,   24,   32,
                               48,   64,   96,   128,  192,  256,   384,   512,   768,  1024, 1536,
                               2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768};
    for (size_t i = 0; i < 31; ++i) {
        EXPECT_EQ(credits::kCount[i], want[i]) << i;
        EXPECT_EQ(credits::code_for(want[i]), i);
    }
}

// Every count is rounded down to the largest code that does not exceed it.
TEST(CreditTable, RoundsDown) {
    for (uint32_t n = 0; n < 70000; ++n) {
        const uint8_t c = credits::code_for(n);
        ASSERT_LE(c, 30);
        ASSERT_LE(credits::kCount[c], n) << n;
        if (c < 30) {
            ASSERT_GT(credits::kCount[c + 1u], n) << n;
        }
    }
    EXPECT_EQ(credits::code_for(UINT32_MAX), 30);
}

class CreditTest : public ::testing::Test {
  protected:
    void SetUp() override {
        for (int i = 0; i < 2; ++i) {
            side[i] = make_side(node(i), 1 << 20, 7);
        }
        a.connect(side[0].qp, side[1].qp.qpn, b, 3, 14, 7, 7, kRemote, 4);
        b.connect(side[1].qp, side[0].qp.qpn, a, 3, 14, 7, 7, kRemote, 4);
    }
    RdmaNode &node(int i) { return i == 0 ? a : b; }
    void post_recvs(int n) {
        for (int i = 0; i < n; ++i) {
            b.post_recv(side[1].qp, next_recv,
                        {{side[1].buf + 256 * (next_recv % 1024), 256, side[1].key}});
            ++next_recv;
        }
    }
    void send(uint64_t wr_id, uint8_t opcode = OHCA_WR_SEND) {
        SendReq s;
        s.wr_id = wr_id;
        s.opcode = opcode;
        s.remote_addr = side[1].buf + 0x80000;
        s.rkey = side[1].key;
        s.sges = {{side[0].buf + 256 * (wr_id % 1024), 100, side[0].key}};
        a.post_send(side[0].qp, s, true);
    }
    // Pumps the wire, noting every frame: requests a->b, AETHs b->a.
    void pump_noting(const std::function<bool(bool, const std::vector<uint8_t> &)> &drop = {}) {
        pump(a, b, [&](bool from_a, const std::vector<uint8_t> &f) {
            if (from_a) {
                requests.push_back(opcode_of(f));
            } else if (auto ae = aeth_of(f)) {
                aeths.push_back(*ae);
            }
            return drop && drop(from_a, f);
        });
    }
    size_t sends() {
        for (const auto &c : a.poll(side[0].scq)) {
            EXPECT_EQ(c.status, OHCA_CQE_SUCCESS);
            sc.push_back(c);
        }
        return sc.size();
    }
    size_t receives() {
        for (const auto &c : b.poll(side[1].rcq)) {
            EXPECT_EQ(c.status, OHCA_CQE_SUCCESS);
            rc.push_back(c);
        }
        return rc.size();
    }
    const RoceCounters &counters(int i) { return device_of(node(i).e).roce_counters(); }

    RdmaNode a{1};
    RdmaNode b{2};
    Side side[2];
    uint64_t next_recv = 0;
    std::vector<uint8_t> requests;
    std::vector<Aeth> aeths;
    std::vector<ohca_cqe> sc, rc;
};

// Each ACK carries the receive WQEs posted and not consumed, rounded down.
TEST_F(CreditTest, ResponderAdvertisesPostedCount) {
    post_recvs(8);
    send(0);
    pump_noting();
    ASSERT_EQ(aeths.size(), 1u);
    EXPECT_EQ(aeths[0].syndrome, kAethAck | credits::code_for(7)); // 7 left: code 5 (6)
    EXPECT_EQ(aeths[0].msn, 1u);
    for (uint64_t i = 1; i < 8; ++i) {
        send(i);
        pump_noting();
        ASSERT_EQ(aeths.size(), i + 1);
        EXPECT_EQ(aeths.back().syndrome, kAethAck | credits::code_for(uint32_t(7 - i))) << i;
        EXPECT_EQ(aeths.back().msn, i + 1);
    }
    EXPECT_EQ(aeths.back().syndrome, kAethAck | 0); // none left
    // RDMA READ responses and atomic acknowledges carry them too.
    post_recvs(3);
    SendReq r;
    r.opcode = OHCA_WR_RDMA_READ;
    r.wr_id = 100;
    r.remote_addr = side[1].buf;
    r.rkey = side[1].key;
    r.sges = {{side[0].buf + 0x90000, 4000, side[0].key}}; // 4 responses: FIRST and LAST
    a.post_send(side[0].qp, r);
    const size_t before = aeths.size();
    pump_noting();
    ASSERT_GE(aeths.size(), before + 2);
    for (size_t i = before; i < aeths.size(); ++i) {
        EXPECT_EQ(aeths[i].syndrome, kAethAck | 3) << i;
    }
    EXPECT_EQ(sends(), 9u);
    EXPECT_EQ(receives(), 8u);
}

// With no credits known, the requester starts one message (the probe) and
// waits; the receiver's posting raises the limit (its update) and the rest
// goes. No RNR NAK, no busy loop.
TEST_F(CreditTest, ZeroCreditsProbeThenWaitThenResume) {
    post_recvs(1);
    for (uint64_t i = 0; i < 4; ++i) {
        send(i);
    }
    pump_noting();
    EXPECT_EQ(requests.size(), 1u); // the probe only
    EXPECT_EQ(sends(), 1u);
    // Waiting: the QP left the run loop (nothing to do when run again).
    a.process();
    EXPECT_TRUE(a.host.wire.empty());
    post_recvs(3);
    pump_noting();
    EXPECT_EQ(requests.size(), 4u);
    EXPECT_EQ(sends(), 4u);
    EXPECT_EQ(receives(), 4u);
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(rc[i].wr_id, i);
        EXPECT_EQ(sc[i].wr_id, i);
    }
    EXPECT_EQ(counters(1).rnr_naks_sent, 0u);
    EXPECT_EQ(counters(0).rnr_naks_rcvd, 0u);
}

// The credit update lost: one RTO later (10 ms here; the round trip was
// measured) the requester asks for an ACK -- a zero-length RDMA WRITE at
// the last acknowledged PSN, a duplicate to the responder, answered with
// an ACK that carries its credits -- and the rest goes. Before
// (2026-12-06) it waited the local ACK timeout (200 ms here, 1.07 s at
// timeout 18: docs/migration.md, the peer's gap) and then probed.
TEST_F(CreditTest, ALostUpdateCostsOneRtoNotTheLocalAckTimeout) {
    post_recvs(1);
    for (uint64_t i = 0; i < 4; ++i) {
        send(i);
    }
    pump_noting();
    ASSERT_EQ(sends(), 1u);
    post_recvs(3);
    // Every frame b sends now is lost: the update.
    pump_noting([](bool from_a, const std::vector<uint8_t> &) { return !from_a; });
    EXPECT_EQ(requests.size(), 1u);
    a.host.now += DeviceLimits::min_rto_ns + 1;
    b.host.now += DeviceLimits::min_rto_ns + 1;
    pump_noting();
    EXPECT_EQ(sends(), 4u);
    EXPECT_EQ(receives(), 4u);
    ASSERT_EQ(requests.size(), 5u);
    EXPECT_EQ(requests[1], rc::kWriteOnly); // the ACK asked for
    EXPECT_EQ(counters(1).rx_duplicates, 1u);
    EXPECT_EQ(counters(1).rnr_naks_sent, 0u);
    EXPECT_EQ(counters(0).timeouts, 0u);
    EXPECT_EQ(counters(0).credit_timeouts, 1u);
    EXPECT_EQ(counters(0).credit_probes, 0u);
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(rc[i].wr_id, i);
    }
}

// Nothing posted at all: the QP asks for an ACK at 10, 20, 40, 80 and
// 160 ms of its wait (the wait doubles each time: a receiver that is only
// slow costs a few small packets, no RNR NAK), and at the local ACK
// timeout (200 ms here) one message goes as the probe, which draws an RNR
// NAK; once receives are posted, everything completes in order.
TEST_F(CreditTest, NothingPostedAsksLessOftenThenProbes) {
    post_recvs(1);
    for (uint64_t i = 0; i < 4; ++i) {
        send(i);
    }
    pump_noting();
    ASSERT_EQ(sends(), 1u);
    requests.clear();
    const uint64_t start = a.host.now;
    std::vector<uint64_t> asked;
    while (counters(0).credit_probes == 0 && a.host.now - start < 300'000'000) {
        a.host.now += 1'000'000;
        b.host.now += 1'000'000;
        const size_t n = requests.size();
        pump_noting();
        if (requests.size() > n && requests.back() == rc::kWriteOnly) {
            asked.push_back((a.host.now - start) / 1'000'000);
        }
    }
    EXPECT_EQ(asked, (std::vector<uint64_t>{10, 20, 40, 80, 160}));
    EXPECT_EQ(a.host.now - start, DeviceLimits::min_ack_timeout_ns);
    EXPECT_EQ(counters(0).credit_timeouts, 6u);
    EXPECT_EQ(counters(0).credit_probes, 1u);
    EXPECT_GE(counters(1).rnr_naks_sent, 1u); // the probe's
    EXPECT_EQ(counters(0).timeouts, 0u);
    post_recvs(3);
    for (int ms = 0; ms < 50 && sends() < 4; ++ms) {
        a.host.now += 1'000'000;
        b.host.now += 1'000'000;
        pump_noting();
    }
    EXPECT_EQ(sends(), 4u);
    EXPECT_EQ(receives(), 4u);
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(sc[i].wr_id, i);
        EXPECT_EQ(rc[i].wr_id, i);
    }
}

// RDMA WRITE without immediate and READ are not limited; WRITE with
// immediate is.
TEST_F(CreditTest, OnlyMessagesThatConsumeAReceiveAreLimited) {
    post_recvs(1);
    send(0);
    pump_noting();
    ASSERT_EQ(sends(), 1u); // no credits left
    requests.clear();
    send(1, OHCA_WR_RDMA_WRITE);
    send(2, OHCA_WR_RDMA_WRITE);
    send(3, OHCA_WR_RDMA_WRITE_IMM);
    pump_noting();
    EXPECT_EQ(requests, (std::vector<uint8_t>{rc::kWriteOnly, rc::kWriteOnly}));
    EXPECT_EQ(sends(), 3u);
    post_recvs(1);
    pump_noting();
    EXPECT_EQ(sends(), 4u);
    EXPECT_EQ(receives(), 2u);
    EXPECT_EQ(rc[1].opcode, OHCA_CQE_RECV_RDMA_WITH_IMM);
    EXPECT_EQ(counters(1).rnr_naks_sent, 0u);
}

// The slow receiver: one receive WQE posted per millisecond, 50 SENDs
// posted at once. With credits the sender waits for each: no RNR NAK, all
// in order. (A QP on an SRQ gives no credits: RNR NAKs, as before.)
TEST_F(CreditTest, SlowReceiverCausesWaitingNotRnrNaks) {
    constexpr int kMsgs = 50;
    post_recvs(1);
    for (int i = 0; i < kMsgs; ++i) {
        send(static_cast<uint64_t>(i));
    }
    for (int tick = 0; tick < 400 && (sends() < kMsgs || receives() < kMsgs); ++tick) {
        pump_noting();
        a.host.now += 1'000'000;
        b.host.now += 1'000'000;
        if (next_recv < kMsgs) {
            post_recvs(1);
        }
    }
    ASSERT_EQ(sends(), size_t{kMsgs});
    ASSERT_EQ(receives(), size_t{kMsgs});
    for (size_t i = 0; i < kMsgs; ++i) {
        EXPECT_EQ(sc[i].wr_id, i);
        EXPECT_EQ(rc[i].wr_id, i);
    }
    EXPECT_EQ(counters(1).rnr_naks_sent, 0u);
    EXPECT_EQ(counters(0).rnr_naks_rcvd, 0u);
    EXPECT_EQ(counters(0).retrans_pkts, 0u);
    EXPECT_EQ(requests.size(), size_t{kMsgs}); // each SEND went once
}

// A peer whose every ACK says "invalid" (Linux rxe) is never waited for:
// after its first ACK the whole window goes.
struct FakePeer {
    RdmaNode n{1};
    RdmaNode peer_id{2}; // only its GID and MAC: its frames are crafted here
    Side s;
    uint32_t peer_qpn = 0xabc;

    FakePeer() {
        s = make_side(n, 1 << 20, 8);
        n.connect(s.qp, peer_qpn, peer_id, 3, 14, 7, 7, kRemote, 1);
    }
    void send(uint64_t wr_id) {
        SendReq r;
        r.wr_id = wr_id;
        r.sges = {{s.buf, 64, s.key}};
        n.post_send(s.qp, r);
    }
    // The PSNs of the requests the device sent since the last call.
    std::vector<uint32_t> sent() {
        n.process();
        std::vector<uint32_t> psns;
        for (const auto &f : n.host.wire) {
            ParsedPacket p;
            EXPECT_EQ(parse_roce_frame(f, p), ParseError::None);
            psns.push_back(p.fields.bth.psn);
        }
        n.host.wire.clear();
        return psns;
    }
    void ack(uint32_t psn, uint8_t syndrome, uint32_t msn) {
        PacketPath p;
        std::copy(peer_id.mac.begin(), peer_id.mac.end(), p.smac.begin());
        std::copy(n.mac.begin(), n.mac.end(), p.dmac.begin());
        p.sgid = peer_id.gid;
        p.dgid = n.gid;
        PacketFields f;
        f.bth.opcode = rc::kAck;
        f.bth.dest_qp = s.qp.qpn;
        f.bth.psn = psn & kPsnMask;
        f.aeth = Aeth{syndrome, msn & kPsnMask};
        const auto frame = build_roce_frame(p, f, {});
        (void)ohca_engine_receive_frame(n.e, frame.data(), frame.size());
    }
};

TEST(CreditPeer, InvalidCodeIsNeverThrottled) {
    FakePeer v;
    v.send(0);
    v.send(1);
    auto psns = v.sent();
    ASSERT_EQ(psns.size(), 1u); // the probe: nothing known of the peer yet
    v.ack(psns[0], kAethAck | credits::kInvalid, 1);
    psns = v.sent();
    ASSERT_EQ(psns.size(), 1u);
    for (uint64_t i = 2; i < 30; ++i) {
        v.send(i);
    }
    psns = v.sent();
    EXPECT_EQ(psns.size(), 28u); // all of them, no credit in sight
    // A later valid code does not take it back (the peer gives none).
    v.ack(psns.back(), kAethAck | 0, 29);
    for (uint64_t i = 30; i < 40; ++i) {
        v.send(i);
    }
    EXPECT_EQ(v.sent().size(), 10u);
}

// A hostile peer: MSNs far ahead let the requester start no more than
// MSN (at most the last message it has fetched) + credits; a reserved
// syndrome carries no credits; a flood of codes allocates nothing.
TEST(CreditPeer, HostileCodesStayWithinTheSpec) {
    FakePeer v;
    v.send(0);
    auto psns = v.sent();
    ASSERT_EQ(psns.size(), 1u);
    const uint32_t psn0 = psns[0];
    // An MSN half the space ahead with no credits: no more than message 1.
    v.ack(psn0, kAethAck | 0, 0x800000);
    v.send(1);
    v.send(2);
    EXPECT_TRUE(v.sent().empty());
    // A reserved syndrome whose low bits would be a big code: no credits.
    v.ack(psn0, 0x40 | 30, 1);
    EXPECT_TRUE(v.sent().empty());
    // Two credits from an MSN far beyond anything sent: counted from the
    // last message fetched (the one waiting, SSN 2), so up to SSN 4: three
    // messages go, the next three wait.
    v.ack(psn0, kAethAck | 2, 0x400000);
    for (uint64_t i = 3; i < 7; ++i) {
        v.send(i);
    }
    EXPECT_EQ(v.sent().size(), 3u);
    EXPECT_TRUE(v.sent().empty());
    // A flood of random codes and MSNs: after a first round (the device's
    // buffers reach their size), the heap stays as it is.
    auto flood = [&](int from, int to) {
        for (int i = from; i < to; ++i) {
            v.ack(psn0, static_cast<uint8_t>(kAethAck | (i % 31)),
                  static_cast<uint32_t>(i) * 7919u);
            if (i % 64 == 0) {
                v.n.process();
                v.n.host.wire.clear();
            }
        }
        v.n.process();
        v.n.host.wire.clear();
    };
    flood(0, 2000);
    const size_t heap0 = mallinfo2().uordblks;
    flood(2000, 12000);
    EXPECT_LE(mallinfo2().uordblks, heap0 + 4096);
    EXPECT_NE(v.n.query(v.s.qp.qpn).qp_state, OHCA_QPS_ERR);
}

// A QP on an SRQ and an XRC target give no credits: "invalid".
TEST(CreditSrq, SrqQpAdvertisesInvalid) {
    RdmaNode a{1};
    RdmaNode b{2};
    Side sa = make_side(a, 1 << 16, 6);
    const uint32_t pd = b.create_pd();
    CqInfo scq = b.create_cq(6);
    CqInfo rcq = b.create_cq(6);
    SrqInfo srq = b.create_srq(pd, 6);
    const uint64_t buf = b.alloc(1 << 16);
    const uint32_t key = b.reg_mr(pd, buf, 1 << 16, kSideAccess);
    QpInfo bq = b.create_qp_on_srq(pd, scq.cqn, rcq.cqn, srq.srqn);
    a.connect(sa.qp, bq.qpn, b, 3, 14, 7, 7, kRemote, 4);
    b.connect(bq, sa.qp.qpn, a, 3, 14, 7, 7, kRemote, 4);
    for (uint64_t k = 0; k < 8; ++k) {
        b.post_srq_recv(srq, k, {{buf + 1024 * k, 1024, key}});
    }
    std::vector<Aeth> aeths;
    for (uint64_t k = 0; k < 8; ++k) {
        SendReq s;
        s.wr_id = k;
        s.sges = {{sa.buf, 100, sa.key}};
        a.post_send(sa.qp, s);
    }
    pump(a, b, [&](bool from_a, const std::vector<uint8_t> &f) {
        if (!from_a) {
            if (auto ae = aeth_of(f)) {
                aeths.push_back(*ae);
            }
        }
        return false;
    });
    ASSERT_FALSE(aeths.empty());
    for (const Aeth &ae : aeths) {
        EXPECT_EQ(ae.syndrome, kAethAck | credits::kInvalid);
    }
    EXPECT_EQ(b.poll(rcq).size(), 8u);
    EXPECT_EQ(a.poll(sa.scq).size(), 8u);
}

// The slow receiver again with the receiving QP on an SRQ, which gives no
// credits: the same 50 SENDs complete in order, by RNR NAKs and resends
// (what the credits save).
TEST(CreditSrq, SlowReceiverOnAnSrqTakesRnrNaks) {
    RdmaNode a{1};
    RdmaNode b{2};
    Side sa = make_side(a, 1 << 16, 7);
    const uint32_t pd = b.create_pd();
    CqInfo scq = b.create_cq(6);
    CqInfo rcq = b.create_cq(7);
    SrqInfo srq = b.create_srq(pd, 7);
    const uint64_t buf = b.alloc(1 << 16);
    const uint32_t key = b.reg_mr(pd, buf, 1 << 16, kSideAccess);
    QpInfo bq = b.create_qp_on_srq(pd, scq.cqn, rcq.cqn, srq.srqn);
    a.connect(sa.qp, bq.qpn, b, 3, 14, 7, 7, kRemote, 4);
    b.connect(bq, sa.qp.qpn, a, 3, 14, 7, 7, kRemote, 4);
    constexpr uint64_t kMsgs = 50;
    uint64_t posted = 0;
    b.post_srq_recv(srq, posted++, {{buf, 256, key}});
    for (uint64_t k = 0; k < kMsgs; ++k) {
        SendReq s;
        s.wr_id = k;
        s.sges = {{sa.buf, 100, sa.key}};
        a.post_send(sa.qp, s);
    }
    std::vector<ohca_cqe> sc, rc;
    for (int tick = 0; tick < 2000 && (sc.size() < kMsgs || rc.size() < kMsgs); ++tick) {
        pump(a, b);
        for (const auto &c : a.poll(sa.scq)) {
            sc.push_back(c);
        }
        for (const auto &c : b.poll(rcq)) {
            rc.push_back(c);
        }
        a.host.now += 1'000'000;
        b.host.now += 1'000'000;
        if (posted < kMsgs) {
            b.post_srq_recv(srq, posted, {{buf + 256 * (posted % 64), 256, key}});
            ++posted;
        }
    }
    ASSERT_EQ(sc.size(), kMsgs);
    ASSERT_EQ(rc.size(), kMsgs);
    for (uint64_t k = 0; k < kMsgs; ++k) {
        EXPECT_EQ(sc[k].status, OHCA_CQE_SUCCESS);
        EXPECT_EQ(sc[k].wr_id, k);
        EXPECT_EQ(rc[k].wr_id, k);
    }
    EXPECT_GT(device_of(b.e).roce_counters().rnr_naks_sent, 0u);
}

} // namespace
} // namespace ohca::test
