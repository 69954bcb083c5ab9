// SPDX-License-Identifier: GPL-2.0-or-later
// The RC data path inside one device: two QPs connected to each other over
// the device's own GID (frames loop back without touching the wire).
#include "device/device.hpp"
#include "rdma_node.hpp"

#include <gtest/gtest.h>

#include <numeric>

namespace ohca::test {
namespace {

constexpr uint32_t kAllAccess =
    OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_READ;

class LoopbackTest : public ::testing::Test {
  protected:
    void SetUp() override { setup(3); }

    void setup(uint8_t mtu) {
        pd = n.create_pd();
        scq = n.create_cq();
        rcq = n.create_cq();
        a = n.create_qp(pd, scq.cqn, rcq.cqn);
        b = n.create_qp(pd, scq.cqn, rcq.cqn);
        n.connect(a, b.qpn, n, mtu);
        n.connect(b, a.qpn, n, mtu);
        src = n.alloc(1 << 20);
        dst = n.alloc(1 << 20);
        std::vector<uint8_t> pattern(1 << 20);
        for (uint32_t i = 0; i < pattern.size(); ++i) {
            pattern[i] = static_cast<uint8_t>(i * 7 + 3);
        }
        EXPECT_TRUE(n.host.write(src, pattern.data(), pattern.size()));
        lsrc = n.reg_mr(pd, src, 1 << 20, kAllAccess);
        ldst = n.reg_mr(pd, dst, 1 << 20, kAllAccess);
    }

    bool same(uint64_t x, uint64_t y, size_t len) {
        std::vector<uint8_t> p(len), q(len);
        EXPECT_TRUE(n.host.read(x, p.data(), len));
        EXPECT_TRUE(n.host.read(y, q.data(), len));
        return p == q;
    }

    RdmaNode n{1};
    uint32_t pd = 0;
    CqInfo scq, rcq;
    QpInfo a, b;
    uint64_t src = 0, dst = 0;
    uint32_t lsrc = 0, ldst = 0;
};

TEST_F(LoopbackTest, SendSingleSge) {
    n.post_recv(b, 77, {{dst, 4096, ldst}});
    SendReq r;
    r.wr_id = 5;
    r.sges = {{src, 3000, lsrc}};
    n.post_send(a, r);
    n.process();
    auto sc = n.poll(scq);
    auto rc = n.poll(rcq);
    ASSERT_EQ(sc.size(), 1u);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(sc[0].opcode, OHCA_CQE_SEND);
    EXPECT_EQ(sc[0].wr_id, 5u);
    EXPECT_EQ(sc[0].qpn, a.qpn);
    EXPECT_EQ(sc[0].wqe_index, 0u);
    EXPECT_EQ(rc[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(rc[0].opcode, OHCA_CQE_RECV);
    EXPECT_EQ(rc[0].wr_id, 77u);
    EXPECT_EQ(rc[0].byte_len, 3000u);
    EXPECT_EQ(rc[0].qpn, b.qpn);
    EXPECT_EQ(rc[0].src_qp, a.qpn);
    EXPECT_EQ(rc[0].flags, 0u);
    EXPECT_TRUE(same(src, dst, 3000));
    EXPECT_TRUE(n.host.wire.empty());
}

TEST_F(LoopbackTest, QueryQpReportsThePsnsAsTheyAreNow) {
    const uint32_t sq_psn = n.query(a.qpn).sq_psn;
    const uint32_t rq_psn = n.query(b.qpn).rq_psn;
    n.post_recv(b, 1, {{dst, 4096, ldst}});
    SendReq r;
    r.sges = {{src, 3000, lsrc}}; // three packets at MTU 1024
    n.post_send(a, r);
    n.process();
    ASSERT_EQ(n.poll(scq).size(), 1u);
    EXPECT_EQ(n.query(a.qpn).sq_psn, (sq_psn + 3) & kPsnMask);
    EXPECT_EQ(n.query(b.qpn).rq_psn, (rq_psn + 3) & kPsnMask);
    EXPECT_EQ(n.query(a.qpn).rq_psn, n.query(b.qpn).sq_psn); // nothing sent b -> a
}

TEST_F(LoopbackTest, SendMultipleSgesImmAndScatter) {
    n.post_recv(b, 1, {{dst, 100, ldst}, {dst + 1000, 5000, ldst}});
    SendReq r;
    r.opcode = OHCA_WR_SEND_IMM;
    r.imm = 0x78563412; // wire bytes 12 34 56 78
    r.sges = {{src, 50, lsrc}, {src + 50, 0, lsrc}, {src + 50, 2000, lsrc}};
    n.post_send(a, r);
    n.process();
    auto rc = n.poll(rcq);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].byte_len, 2050u);
    EXPECT_EQ(rc[0].flags, OHCA_CQE_F_IMM);
    EXPECT_EQ(rc[0].imm_data, 0x78563412u);
    EXPECT_TRUE(same(src, dst, 100));
    EXPECT_TRUE(same(src + 100, dst + 1000, 1950));
    EXPECT_EQ(n.poll(scq).size(), 1u);
}

TEST_F(LoopbackTest, InlineSend) {
    n.post_recv(b, 1, {{dst, 256, ldst}});
    SendReq r;
    r.inline_data = {1, 2, 3, 4, 5};
    n.post_send(a, r);
    n.process();
    auto rc = n.poll(rcq);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].byte_len, 5u);
    EXPECT_EQ(n.host.get<uint8_t>(dst + 4), 5u);
}

// Found by fuzz_rdma: a zero-length inline SEND has no data buffer; it
// completes on both sides with length 0 (and no memcpy from NULL, which
// the UBSan fuzz build reports).
TEST_F(LoopbackTest, InlineSendZeroLength) {
    n.post_recv(b, 1, {{dst, 256, ldst}});
    SendReq r;
    r.flags = OHCA_WQE_SIGNALED | OHCA_WQE_INLINE;
    n.post_send(a, r);
    n.process();
    auto rc = n.poll(rcq);
    auto sc = n.poll(scq);
    ASSERT_EQ(rc.size(), 1u);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(rc[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(rc[0].byte_len, 0u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
}

TEST_F(LoopbackTest, RdmaWriteLarge) {
    SendReq r;
    r.opcode = OHCA_WR_RDMA_WRITE;
    r.remote_addr = dst + 10;
    r.rkey = ldst;
    r.sges = {{src, 100000, lsrc}};
    n.post_send(a, r);
    n.process();
    auto sc = n.poll(scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(sc[0].opcode, OHCA_CQE_RDMA_WRITE);
    EXPECT_TRUE(same(src, dst + 10, 100000));
    EXPECT_TRUE(n.poll(rcq).empty()); // no receive completion without IMM
}

TEST_F(LoopbackTest, RdmaWriteImm) {
    n.post_recv(b, 9, {});
    SendReq r;
    r.opcode = OHCA_WR_RDMA_WRITE_IMM;
    r.imm = 0xaabbccdd;
    r.remote_addr = dst;
    r.rkey = ldst;
    r.sges = {{src, 5000, lsrc}};
    n.post_send(a, r);
    n.process();
    auto rc = n.poll(rcq);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].opcode, OHCA_CQE_RECV_RDMA_WITH_IMM);
    EXPECT_EQ(rc[0].byte_len, 5000u);
    EXPECT_EQ(rc[0].imm_data, 0xaabbccddu);
    EXPECT_EQ(rc[0].wr_id, 9u);
    EXPECT_TRUE(same(src, dst, 5000));
}

TEST_F(LoopbackTest, RdmaRead) {
    SendReq r;
    r.opcode = OHCA_WR_RDMA_READ;
    r.remote_addr = src + 3;
    r.rkey = lsrc;
    r.sges = {{dst, 1000, ldst}, {dst + 2000, 9000, ldst}};
    n.post_send(a, r);
    n.process();
    auto sc = n.poll(scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(sc[0].opcode, OHCA_CQE_RDMA_READ);
    EXPECT_EQ(sc[0].byte_len, 10000u);
    EXPECT_TRUE(same(src + 3, dst, 1000));
    EXPECT_TRUE(same(src + 1003, dst + 2000, 9000));
}

TEST_F(LoopbackTest, UnsignaledRetiredBySignaled) {
    SendReq r;
    r.opcode = OHCA_WR_RDMA_WRITE;
    r.remote_addr = dst;
    r.rkey = ldst;
    r.sges = {{src, 64, lsrc}};
    r.flags = 0;
    n.post_send(a, r, false);
    n.post_send(a, r, false);
    r.flags = OHCA_WQE_SIGNALED;
    r.wr_id = 3;
    n.post_send(a, r);
    n.process();
    auto sc = n.poll(scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].wr_id, 3u);
    EXPECT_EQ(sc[0].wqe_index, 2u);
}

TEST_F(LoopbackTest, ManyMessagesInOrder) {
    for (uint32_t i = 0; i < 40; ++i) {
        n.post_recv(b, 100 + i, {{dst + 4096ull * i, 4096, ldst}});
    }
    for (uint32_t i = 0; i < 40; ++i) {
        SendReq r;
        r.wr_id = i;
        r.sges = {{src + 100ull * i, 1000 + i, lsrc}};
        n.post_send(a, r);
    }
    n.process();
    auto sc = n.poll(scq);
    auto rc = n.poll(rcq);
    ASSERT_EQ(sc.size(), 40u);
    ASSERT_EQ(rc.size(), 40u);
    for (uint32_t i = 0; i < 40; ++i) {
        EXPECT_EQ(sc[i].wr_id, i);
        EXPECT_EQ(rc[i].wr_id, 100 + i);
        EXPECT_EQ(rc[i].byte_len, 1000 + i);
        EXPECT_TRUE(same(src + 100ull * i, dst + 4096ull * i, 1000 + i));
    }
}

// 16 outstanding 1 MiB READs looped back: 16384 response packets, far more
// than the RX backlog holds. They are generated a bounded number at a time
// and paced by the backlog, so nothing is dropped or retransmitted.
TEST_F(LoopbackTest, SixteenLargeReadsOutstanding) {
    constexpr uint32_t kLen = 1 << 20;
    CqInfo cq = n.create_cq(8);
    QpInfo c = n.create_qp(pd, cq.cqn, cq.cqn);
    QpInfo d = n.create_qp(pd, cq.cqn, cq.cqn);
    const uint32_t remote = OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_READ;
    n.connect(c, d.qpn, n, 3, 14, 7, 7, remote, 16);
    n.connect(d, c.qpn, n, 3, 14, 7, 7, remote, 16);
    std::vector<uint64_t> bufs;
    std::vector<uint32_t> keys;
    for (uint32_t i = 0; i < 16; ++i) {
        bufs.push_back(n.alloc(kLen));
        keys.push_back(n.reg_mr(pd, bufs[i], kLen, kAllAccess));
    }
    for (uint32_t i = 0; i < 16; ++i) {
        SendReq r;
        r.wr_id = 1000 + i;
        r.opcode = OHCA_WR_RDMA_READ;
        r.remote_addr = src;
        r.rkey = lsrc;
        r.sges = {{bufs[i], kLen, keys[i]}};
        n.post_send(c, r, false);
    }
    n.ring_sq(c);
    // One pass at a time with the clock running: a READ that is making
    // progress must not time out.
    std::vector<ohca_cqe> v;
    for (int pass = 0; pass < 1000 && v.size() < 16; ++pass) {
        ohca_engine_process(n.e);
        n.host.now += 5'000'000;
        auto got = n.poll(cq);
        v.insert(v.end(), got.begin(), got.end());
    }
    ASSERT_EQ(v.size(), 16u);
    for (uint32_t i = 0; i < 16; ++i) {
        EXPECT_EQ(v[i].status, OHCA_CQE_SUCCESS);
        EXPECT_EQ(v[i].wr_id, 1000u + i);
        EXPECT_EQ(v[i].byte_len, kLen);
        EXPECT_TRUE(same(src, bufs[i], kLen)) << i;
    }
    const auto &rc = device_of(n.e).roce_counters();
    EXPECT_EQ(rc.retransmits, 0u);
    EXPECT_EQ(rc.timeouts, 0u);
    EXPECT_EQ(rc.rx_duplicates, 0u);
    EXPECT_EQ(rc.rx_out_of_seq, 0u);
    EXPECT_EQ(rc.loopback_packets, 16u * 1024 + 16);
    EXPECT_EQ(n.stats().roce_rx_dropped, 0u);
}

// Loopback coalesces the ACKs of a run of requests into one, sent on the
// responder's next visit from its response queue: READ responses and
// atomic acknowledgements that follow a coalesced ACK stay behind it (a
// requester that saw an ACK after a later READ response would count it
// stale), and every packet that does go is counted on both sides.
TEST_F(LoopbackTest, CoalescedAcksKeepTheirOrderWithReadsAndAtomics) {
    constexpr uint32_t kAtomic =
        OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_READ | OHCA_ACCESS_REMOTE_ATOMIC;
    QpInfo c = n.create_qp(pd, scq.cqn, rcq.cqn);
    QpInfo d = n.create_qp(pd, scq.cqn, rcq.cqn);
    n.connect(c, d.qpn, n, 3, 14, 7, 7, kAtomic);
    n.connect(d, c.qpn, n, 3, 14, 7, 7, kAtomic);
    const uint32_t all = kAllAccess | OHCA_ACCESS_REMOTE_ATOMIC;
    const uint64_t mem = n.alloc(1 << 16);
    const uint32_t key = n.reg_mr(pd, mem, 1 << 16, all);
    const uint64_t target = mem + 0x8000; // the atomic's 8 bytes, 0
    constexpr int kSends = 8;
    for (int i = 0; i < 2 * kSends + 1; ++i) {
        n.post_recv(d, 500 + i, {{mem + 0x1000 + 64ull * i, 64, key}});
    }
    uint64_t wr = 1;
    auto send = [&] {
        SendReq r;
        r.wr_id = wr++;
        r.sges = {{src, 64, lsrc}};
        n.post_send(c, r, false);
    };
    for (int i = 0; i < kSends; ++i) {
        send();
    }
    SendReq rd;
    rd.wr_id = wr++;
    rd.opcode = OHCA_WR_RDMA_READ;
    rd.remote_addr = src;
    rd.rkey = lsrc;
    rd.sges = {{mem, 256, key}};
    n.post_send(c, rd, false);
    for (int i = 0; i < kSends; ++i) {
        send();
    }
    SendReq at;
    at.wr_id = wr++;
    at.opcode = OHCA_WR_ATOMIC_FETCH_ADD;
    at.remote_addr = target;
    at.rkey = key;
    at.cmp_add = 5;
    at.sges = {{mem + 0x800, 8, key}};
    n.post_send(c, at, false);
    send(); // one more SEND after the atomic
    n.ring_sq(c);
    const auto before = device_of(n.e).roce_counters();
    n.process();
    const auto sc = n.poll(scq);
    ASSERT_EQ(sc.size(), wr - 1);
    for (size_t i = 0; i < sc.size(); ++i) {
        EXPECT_EQ(sc[i].status, OHCA_CQE_SUCCESS) << i;
        EXPECT_EQ(sc[i].wr_id, i + 1) << i;
    }
    EXPECT_EQ(n.poll(rcq).size(), 2u * kSends + 1);
    EXPECT_TRUE(same(src, mem, 256));
    EXPECT_EQ(n.host.get<uint64_t>(target), 5u);
    const auto &rc = device_of(n.e).roce_counters();
    EXPECT_EQ(rc.stale_responses, before.stale_responses);
    EXPECT_EQ(rc.rx_out_of_seq, before.rx_out_of_seq);
    EXPECT_EQ(rc.retransmits, before.retransmits);
    // 2 x 8 + 1 SENDs, the READ and the atomic; the READ's response and the
    // atomic acknowledgement; one ACK for each run of SENDs (before the
    // READ, before the atomic, the last one): 19 + 2 + 3 (an ACK per SEND,
    // but those merged behind the pending READ response, made it 31); and
    // one for the first SEND, which goes alone as the credit probe (no
    // credits known yet: rc_credits_test.cpp).
    EXPECT_EQ(rc.loopback_packets - before.loopback_packets, 25u);
    EXPECT_EQ(rc.rx_packets - before.rx_packets, 25u);
    EXPECT_EQ(n.stats().roce_rx_dropped, 0u);
}

// The RQ's posted WQEs are read ahead in one DMA (WqeBatch): after the QP
// is reset, its queue starts again at index 0 with WQEs posted anew in the
// same slots, which must be read again, not taken from what was read
// before the reset.
TEST_F(LoopbackTest, RecvWqesPostedAfterResetAreReadAgain) {
    for (uint32_t i = 0; i < 4; ++i) {
        n.post_recv(b, 10 + i, {{dst + 64ull * i, 64, ldst}});
    }
    SendReq r;
    r.sges = {{src, 64, lsrc}};
    n.post_send(a, r);
    n.process();
    ASSERT_EQ(n.poll(scq).size(), 1u);
    auto rc = n.poll(rcq);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].wr_id, 10u);
    // Both QPs through RESET and connected again; the RQ's slot 0 gets a
    // new WQE on a buffer of its own.
    for (QpInfo *q : {&a, &b}) {
        ohca_qp_attr at{};
        at.qp_state = OHCA_QPS_RESET;
        ASSERT_EQ(n.modify(q->qpn, OHCA_QP_STATE, at).status, OHCA_STATUS_OK);
        q->sq_pi = 0;
        q->rq_pi = 0;
    }
    n.connect(a, b.qpn, n);
    n.connect(b, a.qpn, n);
    n.post_recv(b, 20, {{dst + 4096, 64, ldst}});
    r.sges = {{src + 64, 64, lsrc}};
    n.post_send(a, r);
    n.process();
    auto sc = n.poll(scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
    rc = n.poll(rcq);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(rc[0].wr_id, 20u);
    EXPECT_TRUE(same(src + 64, dst + 4096, 64));
}

// The CQEs of a run go to their CQ together (CqTable::post_cqe_held): one
// DMA where the host orders the first one's owner byte after the rest
// (dma_write_ordered), three writes where it cannot; either way that byte
// lands last, so the consumer, which polls in order, finds every CQE of the
// batch whole, and the CQEs read the same.
void send_one_and_check_cqe_writes(bool ordered) {
    FakeHost::ops_without_ordered_write = !ordered;
    RdmaNode n{1};
    FakeHost::ops_without_ordered_write = false;
    const uint32_t pd = n.create_pd();
    CqInfo cq = n.create_cq();
    QpInfo a = n.create_qp(pd, cq.cqn, cq.cqn);
    QpInfo b = n.create_qp(pd, cq.cqn, cq.cqn);
    n.connect(a, b.qpn, n);
    n.connect(b, a.qpn, n);
    const uint64_t buf = n.alloc(4096);
    const uint32_t key = n.reg_mr(pd, buf, 4096, kAllAccess);
    n.post_recv(b, 9, {{buf + 2048, 64, key}});
    SendReq r;
    r.sges = {{buf, 64, key}};
    n.post_send(a, r);
    n.host.write_log.clear();
    const unsigned int writes = n.host.dma_writes;
    n.process();
    const auto c = n.poll(cq);
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0].opcode, OHCA_CQE_RECV);
    EXPECT_EQ(c[0].wr_id, 9u);
    EXPECT_EQ(c[1].opcode, OHCA_CQE_SEND);
    for (const ohca_cqe &e : c) {
        EXPECT_EQ(e.status, OHCA_CQE_SUCCESS);
    }
    EXPECT_EQ(n.host.ordered_writes, ordered ? 1u : 0u);
    // The receive's payload, then the two CQEs: all but the first one's
    // owner byte (before it, after it), then that byte.
    EXPECT_EQ(n.host.dma_writes - writes, ordered ? 2u : 4u);
    constexpr size_t owner = offsetof(ohca_cqe, owner);
    const auto &log = n.host.write_log;
    ASSERT_GE(log.size(), 3u);
    const size_t k = log.size() - 3;
    EXPECT_EQ(log[k], std::make_pair(cq.ring, owner));
    EXPECT_EQ(log[k + 1], std::make_pair(cq.ring + owner + 1, 2 * sizeof(ohca_cqe) - owner - 1));
    EXPECT_EQ(log[k + 2], std::make_pair(cq.ring + owner, size_t{1}));
}

TEST(CqeWriteTest, OneOrderedDmaPerRunFirstOwnerLast) {
    send_one_and_check_cqe_writes(true);
}

TEST(CqeWriteTest, WithoutTheCallbackThreeWritesFirstOwnerLast) {
    send_one_and_check_cqe_writes(false);
}

// A 1 MiB SEND and WRITE loop back in a send window: no drops, no retries.
TEST_F(LoopbackTest, LargeSendAndWritePaced) {
    constexpr uint32_t kLen = 1 << 20;
    const uint64_t rbuf = n.alloc(kLen);
    const uint32_t rkey = n.reg_mr(pd, rbuf, kLen, kAllAccess);
    n.post_recv(b, 7, {{rbuf, kLen, rkey}});
    SendReq s;
    s.sges = {{src, kLen, lsrc}};
    n.post_send(a, s);
    SendReq w;
    w.wr_id = 2;
    w.opcode = OHCA_WR_RDMA_WRITE;
    w.remote_addr = dst;
    w.rkey = ldst;
    w.sges = {{src, kLen, lsrc}};
    n.post_send(a, w);
    n.process();
    auto sc = n.poll(scq);
    auto rc = n.poll(rcq);
    ASSERT_EQ(sc.size(), 2u);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(sc[1].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(rc[0].byte_len, kLen);
    EXPECT_TRUE(same(src, rbuf, kLen));
    EXPECT_TRUE(same(src, dst, kLen));
    EXPECT_EQ(device_of(n.e).roce_counters().retransmits, 0u);
    EXPECT_EQ(n.stats().roce_rx_dropped, 0u);
}

} // namespace
} // namespace ohca::test
