// SPDX-License-Identifier: GPL-2.0-or-later
// The RoCE reliability counters of QUERY_STATS (rev 1.1 part): each one is
// driven by a fault made on purpose on the fake wire, and a seeded lossy
// wire (loss, duplication, reordering, corruption) keeps every byte and
// completion while the counters show the recovery.
#include "device/device.hpp"
#include "link/roce_packet.hpp"
#include "link/roce_v2.hpp"
#include "rdma_node.hpp"

#include <gtest/gtest.h>

#include <random>

namespace ohca::test {
namespace {

constexpr uint32_t kRemote = OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_READ;
constexpr size_t kBuf = 1 << 20;

// What a wire does to one frame.
struct Fate {
    bool drop = false;
    bool dup = false;
    bool hold = false; // delivered after the next frame of its direction
    bool corrupt = false;
};
using FaultFn = std::function<Fate(bool from_a, const std::vector<uint8_t> &)>;

// Like pump(), with duplication, reordering and corruption as well.
void fault_pump(RdmaNode &a, RdmaNode &b, const FaultFn &fault) {
    std::vector<uint8_t> held[2];
    bool holding[2] = {false, false};
    for (int i = 0; i < 100000; ++i) {
        a.process();
        b.process();
        if (a.host.wire.empty() && b.host.wire.empty()) {
            // Nothing follows a held frame: it goes now.
            bool any = false;
            for (int d = 0; d < 2; ++d) {
                if (holding[d]) {
                    holding[d] = false;
                    any = true;
                    RdmaNode &to = d == 0 ? b : a;
                    ohca_engine_receive_frame(to.e, held[d].data(), held[d].size());
                }
            }
            if (!any) {
                return;
            }
            continue;
        }
        auto fa = std::move(a.host.wire);
        auto fb = std::move(b.host.wire);
        a.host.wire.clear();
        b.host.wire.clear();
        auto deliver = [&](std::vector<std::vector<uint8_t>> &frames, RdmaNode &to, int d) {
            for (auto &f : frames) {
                const Fate fate = fault ? fault(d == 0, f) : Fate{};
                if (fate.drop) {
                    continue;
                }
                std::vector<uint8_t> g = f;
                if (fate.corrupt) {
                    g[g.size() - 6] ^= 0x10; // payload or AETH: the ICRC catches it
                }
                if (fate.hold && !holding[d]) {
                    held[d] = std::move(g);
                    holding[d] = true;
                    continue;
                }
                // Frames the receiver holds back (RX_RETRY) are lost here;
                // the retransmission timer recovers them like any loss.
                ohca_engine_receive_frame(to.e, g.data(), g.size());
                if (fate.dup) {
                    ohca_engine_receive_frame(to.e, f.data(), f.size());
                }
                if (holding[d]) {
                    holding[d] = false;
                    ohca_engine_receive_frame(to.e, held[d].data(), held[d].size());
                }
            }
        };
        deliver(fa, b, 0);
        deliver(fb, a, 1);
    }
    ADD_FAILURE() << "wire never went idle";
}

class CountersTest : public ::testing::Test {
  protected:
    void setup(uint8_t retry = 7, uint8_t rnr_retry = 7, uint32_t psn_base = 0x100) {
        a.psn_base = b.psn_base = psn_base;
        for (int i = 0; i < 2; ++i) {
            side[i] = make_side(node(i), kBuf, 8, [i](size_t k) {
                return static_cast<uint8_t>(k * (i + 5) + (k >> 11) + 7);
            });
        }
        a.connect(side[0].qp, side[1].qp.qpn, b, 3, 14, retry, rnr_retry, kRemote);
        b.connect(side[1].qp, side[0].qp.qpn, a, 3, 14, retry, rnr_retry, kRemote);
    }
    RdmaNode &node(int i) { return i == 0 ? a : b; }
    // Pumps, advancing time by 20 ms whenever the wire goes idle, until
    // pred() holds or 'rounds' are used up.
    bool run(const std::function<bool()> &pred, const FaultFn &fault = {}, int rounds = 200) {
        for (int r = 0; r < rounds; ++r) {
            fault_pump(a, b, fault);
            if (pred()) {
                return true;
            }
            a.host.now += 20'000'000;
            b.host.now += 20'000'000;
        }
        return pred();
    }
    bool completes(size_t nsend, size_t nrecv, const FaultFn &fault = {}, int rounds = 200) {
        return run(
            [&] {
                auto v = a.poll(side[0].scq);
                sc.insert(sc.end(), v.begin(), v.end());
                auto w = b.poll(side[1].rcq);
                rc.insert(rc.end(), w.begin(), w.end());
                return sc.size() >= nsend && rc.size() >= nrecv;
            },
            fault, rounds);
    }
    bool same(uint64_t x, uint64_t y, size_t len) {
        std::vector<uint8_t> p(len), q(len);
        EXPECT_TRUE(a.host.read(x, p.data(), len));
        EXPECT_TRUE(b.host.read(y, q.data(), len));
        return p == q;
    }
    // A one-packet WRITE (wr_id 1) carried to b by hand: b's ACK of it, a
    // copy of the frame, which a's completes() then takes.
    std::vector<uint8_t> acked_write() {
        a.post_send(side[0].qp, rdma(OHCA_WR_RDMA_WRITE, 1, 0, 100));
        a.process();
        ohca_engine_receive_frame(b.e, a.host.wire[0].data(), a.host.wire[0].size());
        a.host.wire.clear();
        b.process();
        EXPECT_EQ(b.host.wire.size(), 1u);
        return b.host.wire.at(0);
    }
    SendReq send(uint64_t wr_id, uint64_t off, uint32_t len) {
        SendReq s;
        s.wr_id = wr_id;
        s.sges = {{side[0].buf + off, len, side[0].key}};
        return s;
    }
    SendReq rdma(uint8_t op, uint64_t wr_id, uint64_t off, uint32_t len) {
        SendReq s = send(wr_id, off, len);
        s.opcode = op;
        s.remote_addr = side[1].buf + off;
        s.rkey = side[1].key;
        return s;
    }

    RdmaNode a{1};
    RdmaNode b{2};
    Side side[2];
    std::vector<ohca_cqe> sc, rc;
};

// Drop exactly the frames whose index (per direction) is listed.
FaultFn drop_nth(std::vector<int> from_a, std::vector<int> from_b = {}) {
    auto n = std::make_shared<std::array<int, 2>>();
    return [=](bool fa, const std::vector<uint8_t> &) {
        const int k = (*n)[fa ? 0 : 1]++;
        const auto &v = fa ? from_a : from_b;
        Fate f;
        f.drop = std::find(v.begin(), v.end(), k) != v.end();
        return f;
    };
}

TEST_F(CountersTest, NoFaultsNoRecoveryCounters) {
    setup();
    a.post_send(side[0].qp, rdma(OHCA_WR_RDMA_WRITE, 1, 0, 10000));
    ASSERT_TRUE(completes(1, 0));
    for (int i = 0; i < 2; ++i) {
        const ohca_query_stats_out s = node(i).stats();
        EXPECT_EQ(s.rc_retrans_pkts, 0u);
        EXPECT_EQ(s.rc_retrans_events, 0u);
        EXPECT_EQ(s.rc_local_ack_timeouts, 0u);
        EXPECT_EQ(s.rc_seq_naks_sent + s.rc_seq_naks_rcvd, 0u);
        EXPECT_EQ(s.rc_dup_requests + s.rc_out_of_seq_dropped, 0u);
        EXPECT_EQ(s.roce_icrc_errors + s.roce_bad_header + s.roce_bad_opcode, 0u);
    }
    // 10 WRITE packets at MTU 1024 and one ACK back.
    EXPECT_EQ(a.stats().roce_tx_pkts, 10u);
    EXPECT_EQ(b.stats().roce_rx_pkts, 10u);
    EXPECT_EQ(b.stats().roce_tx_pkts, 1u);
    EXPECT_EQ(a.stats().roce_rx_pkts, 1u);
}

TEST_F(CountersTest, LostPacketNakSequenceAndGoBackN) {
    setup();
    a.post_send(side[0].qp, rdma(OHCA_WR_RDMA_WRITE, 1, 0, 10000));
    ASSERT_TRUE(completes(1, 0, drop_nth({2})));
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
    EXPECT_TRUE(same(side[0].buf, side[1].buf, 10000));
    const ohca_query_stats_out sa = a.stats(), sb = b.stats();
    // Packets 3..9 arrive ahead of the expected PSN: one NAK for them all.
    EXPECT_EQ(sb.rc_out_of_seq_dropped, 7u);
    EXPECT_EQ(sb.rc_seq_naks_sent, 1u);
    EXPECT_EQ(sa.rc_seq_naks_rcvd, 1u);
    EXPECT_EQ(sa.rc_retrans_events, 1u);
    EXPECT_EQ(sa.rc_retrans_pkts, 8u); // packets 2..9 again
    EXPECT_EQ(sa.roce_tx_pkts, 18u);
    EXPECT_EQ(sa.rc_local_ack_timeouts, 0u);
}

TEST_F(CountersTest, LostAckTimeoutAndDuplicateRequest) {
    setup();
    a.post_send(side[0].qp, rdma(OHCA_WR_RDMA_WRITE, 1, 0, 100));
    ASSERT_TRUE(completes(1, 0, drop_nth({}, {0})));
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
    const ohca_query_stats_out sa = a.stats(), sb = b.stats();
    EXPECT_EQ(sa.rc_local_ack_timeouts, 1u);
    EXPECT_EQ(sa.rc_retrans_events, 1u);
    EXPECT_EQ(sa.rc_retrans_pkts, 1u);
    EXPECT_EQ(sb.rc_dup_requests, 1u); // ACKed again, not written twice
    EXPECT_EQ(sb.roce_tx_pkts, 2u);
}

TEST_F(CountersTest, RetryExceeded) {
    setup(2);
    a.post_send(side[0].qp, rdma(OHCA_WR_RDMA_WRITE, 1, 0, 100));
    auto all = [](bool, const std::vector<uint8_t> &) { return Fate{true}; };
    ASSERT_TRUE(completes(1, 0, all, 60));
    EXPECT_EQ(sc[0].status, OHCA_CQE_RETRY_EXC_ERR);
    const ohca_query_stats_out s = a.stats();
    EXPECT_EQ(s.rc_retry_exceeded, 1u);
    EXPECT_EQ(s.rc_local_ack_timeouts, 3u); // retry_cnt 2: two resends, then fail
    EXPECT_EQ(s.rc_retrans_pkts, 2u);
}

TEST_F(CountersTest, RnrNaksAndRnrRetryExceeded) {
    setup(7, 2);
    a.post_send(side[0].qp, send(1, 0, 100));
    ASSERT_TRUE(completes(1, 0));
    EXPECT_EQ(sc[0].status, OHCA_CQE_RNR_RETRY_EXC_ERR);
    const ohca_query_stats_out sa = a.stats(), sb = b.stats();
    EXPECT_EQ(sb.rc_rnr_naks_sent, 3u); // the first try and two retries
    EXPECT_EQ(sa.rc_rnr_naks_rcvd, 3u);
    EXPECT_EQ(sa.rc_rnr_retry_exceeded, 1u);
    EXPECT_EQ(sa.rc_retry_exceeded, 0u);
}

TEST_F(CountersTest, RemoteErrorNaks) {
    setup();
    SendReq w = rdma(OHCA_WR_RDMA_WRITE, 1, 0, 100);
    w.rkey ^= 0x100; // no such key
    a.post_send(side[0].qp, w);
    ASSERT_TRUE(completes(1, 0));
    EXPECT_EQ(sc[0].status, OHCA_CQE_REM_ACCESS_ERR);
    EXPECT_EQ(b.stats().rc_error_naks_sent, 1u);
    EXPECT_EQ(a.stats().rc_error_naks_rcvd, 1u);
}

TEST_F(CountersTest, StaleResponseIgnored) {
    setup();
    const auto ack = acked_write();
    ASSERT_TRUE(completes(1, 0));
    a.post_send(side[0].qp, rdma(OHCA_WR_RDMA_WRITE, 2, 0, 100));
    ASSERT_TRUE(completes(2, 0));
    // The first ACK again, now older than una - 1.
    ohca_engine_receive_frame(a.e, ack.data(), ack.size());
    a.process();
    EXPECT_EQ(a.stats().rc_stale_responses, 1u);
    EXPECT_TRUE(a.poll(side[0].scq).empty());
}

// A NAK for a request already acknowledged (Linux rxe replays a duplicate
// READ after its MR is gone and NAKs it, behind the requester's
// completion): a ghost, ignored; the WQE at una must not fail for it.
TEST_F(CountersTest, ErrorNakForAcknowledgedRequestIgnored) {
    setup();
    auto nak = acked_write();
    ASSERT_TRUE(completes(1, 0));
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
    // The ACK made a remote access NAK of the same PSN (una - 1 now).
    ASSERT_EQ(nak[kBthOffV4], rc::kAck);
    nak[kBthOffV4 + kBthLen] = 0x62; // the AETH's syndrome
    fix_icrc(nak);
    ohca_engine_receive_frame(a.e, nak.data(), nak.size());
    a.process();
    EXPECT_EQ(a.stats().rc_stale_responses, 1u);
    EXPECT_EQ(a.stats().rc_error_naks_rcvd, 0u);
    a.post_send(side[0].qp, rdma(OHCA_WR_RDMA_WRITE, 2, 0, 100));
    ASSERT_TRUE(completes(2, 0));
    EXPECT_EQ(sc[1].status, OHCA_CQE_SUCCESS);
}

TEST_F(CountersTest, DroppedFramesByReason) {
    setup();
    a.post_send(side[0].qp, rdma(OHCA_WR_RDMA_WRITE, 1, 0, 100));
    a.process();
    ASSERT_EQ(a.host.wire.size(), 1u);
    const auto good = a.host.wire[0];
    a.host.wire.clear();
    const size_t bth = kBthOffV4;
    auto inject = [&](std::vector<uint8_t> f) {
        ohca_engine_receive_frame(b.e, f.data(), f.size());
        b.process();
    };
    auto bad = good;
    bad[bad.size() - 5] ^= 1; // ICRC
    inject(bad);
    bad = good;
    bad[bth + 1] |= 1; // transport header version 1
    inject(bad);
    bad = good;
    bad[14 + 20 + 4] ^= 0x01; // UDP length
    inject(bad);
    // A valid frame (ICRC and all) with a reserved opcode, and one for a
    // QP that does not exist.
    PacketPath path;
    path.smac = a.mac;
    path.dmac = b.mac;
    path.sgid = a.gid;
    path.dgid = b.gid;
    PacketFields f;
    f.bth.opcode = 0x1f;
    f.bth.dest_qp = side[1].qp.qpn;
    inject(build_roce_frame(path, f, {}));
    f.bth.opcode = rc::kSendOnly;
    f.bth.dest_qp = 999;
    inject(build_roce_frame(path, f, {}));
    const ohca_query_stats_out s = b.stats();
    EXPECT_EQ(s.roce_icrc_errors, 1u);
    EXPECT_EQ(s.roce_bad_header, 2u);
    EXPECT_EQ(s.roce_bad_opcode, 1u);
    EXPECT_EQ(s.roce_bad_qpn, 1u);
    EXPECT_EQ(s.roce_rx_dropped, 5u);
    EXPECT_EQ(s.roce_rx_pkts, 0u);
    // The good frame still works.
    inject(good);
    ASSERT_TRUE(completes(1, 0));
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
}

TEST_F(CountersTest, Rev10DriverGetsTheFirstPartOnly) {
    setup();
    std::array<uint8_t, sizeof(ohca_query_stats_out)> out;
    out.fill(0xa5);
    ASSERT_EQ(
        a.cmd(OHCA_CMD_QUERY_STATS, nullptr, 0, out.data(), OHCA_QUERY_STATS_OUT_V1_SIZE).status,
        OHCA_STATUS_OK);
    for (size_t i = OHCA_QUERY_STATS_OUT_V1_SIZE; i < out.size(); ++i) {
        ASSERT_EQ(out[i], 0xa5) << i;
    }
    EXPECT_EQ(a.cmd(OHCA_CMD_QUERY_STATS, nullptr, 0, out.data(), 120).status, OHCA_STATUS_BAD_LEN);
}

// A seeded lossy wire: SENDs, WRITEs and READs keep every byte, complete
// once and in order, and the counters show the recovery.
struct LossyCase {
    const char *name;
    unsigned int loss, dup, hold, corrupt; // per mille
    uint32_t psn_base;
};

class LossyWireTest : public CountersTest, public ::testing::WithParamInterface<LossyCase> {};

TEST_P(LossyWireTest, EveryByteOnceAndCountersMove) {
    const LossyCase c = GetParam();
    setup(7, 7, c.psn_base);
    std::mt19937 rng(1234);
    Fate made; // which faults happened at least once
    FaultFn fault = [&](bool, const std::vector<uint8_t> &) {
        Fate f;
        f.drop = rng() % 1000 < c.loss;
        f.dup = rng() % 1000 < c.dup;
        f.hold = rng() % 1000 < c.hold;
        f.corrupt = rng() % 1000 < c.corrupt;
        made.drop |= f.drop;
        made.dup |= f.dup && !f.drop;
        made.hold |= f.hold && !f.drop;
        made.corrupt |= f.corrupt && !f.drop;
        return f;
    };
    constexpr int kMsgs = 24;
    constexpr uint32_t kLen = 9000;
    // SEND j lands at kRecvArea + 0x8000 * j; WRITE and READ i at 0x8000 * i.
    constexpr uint64_t kRecvArea = 0xc0000;
    for (int j = 0; j < kMsgs / 3; ++j) {
        b.post_recv(side[1].qp, 1000 + j,
                    {{side[1].buf + kRecvArea + 0x8000ull * j, 0x8000, side[1].key}});
    }
    for (int i = 0; i < kMsgs; ++i) {
        const uint64_t off = 0x8000ull * i;
        switch (i % 3) {
        case 0:
            a.post_send(side[0].qp, send(i, off, kLen));
            break;
        case 1:
            a.post_send(side[0].qp, rdma(OHCA_WR_RDMA_WRITE, i, off, kLen));
            break;
        default:
            a.post_send(side[0].qp, rdma(OHCA_WR_RDMA_READ, i, off, kLen));
            break;
        }
    }
    ASSERT_TRUE(completes(kMsgs, kMsgs / 3, fault, 2000))
        << sc.size() << " " << rc.size() << " state " << int(a.query(side[0].qp.qpn).qp_state)
        << " " << int(b.query(side[1].qp.qpn).qp_state) << " first error " << [&] {
               for (const auto &q : sc) {
                   if (q.status != OHCA_CQE_SUCCESS) {
                       return std::to_string(q.wr_id) + ":" + std::to_string(q.status) + "/" +
                              std::to_string(q.vendor_err);
                   }
               }
               return std::string("none");
           }();
    for (int i = 0; i < kMsgs; ++i) {
        EXPECT_EQ(sc[i].status, OHCA_CQE_SUCCESS) << i;
        EXPECT_EQ(sc[i].wr_id, uint64_t(i));
        const uint64_t there = i % 3 == 0 ? kRecvArea + 0x8000ull * (i / 3) : 0x8000ull * i;
        EXPECT_TRUE(same(side[0].buf + 0x8000ull * i, side[1].buf + there, kLen)) << i;
    }
    for (int i = 0; i < kMsgs / 3; ++i) {
        EXPECT_EQ(rc[i].wr_id, uint64_t(1000 + i)); // each SEND delivered once
        EXPECT_EQ(rc[i].byte_len, kLen);
    }
    a.host.now += 1'000'000'000;
    b.host.now += 1'000'000'000;
    fault_pump(a, b, {});
    EXPECT_TRUE(a.poll(side[0].scq).empty());
    EXPECT_TRUE(b.poll(side[1].rcq).empty());
    const ohca_query_stats_out sa = a.stats(), sb = b.stats();
    EXPECT_EQ(made.drop, c.loss > 0);
    EXPECT_EQ(made.corrupt, c.corrupt > 0);
    // A lost ACK may be covered by the next one, so a few drops need not
    // cost a retransmission; at 5 % and more some always do.
    if (c.loss >= 50 || made.corrupt) {
        EXPECT_GT(sa.rc_retrans_pkts, 0u);
        EXPECT_GT(sa.rc_retrans_events, 0u);
    }
    if (c.dup > 0) {
        EXPECT_GT(sa.rc_stale_responses + sb.rc_dup_requests, 0u);
    }
    if (made.corrupt) {
        EXPECT_GT(sa.roce_icrc_errors + sb.roce_icrc_errors, 0u);
    } else {
        EXPECT_EQ(sa.roce_icrc_errors + sb.roce_icrc_errors, 0u);
    }
    if (c.loss >= 50) {
        EXPECT_GT(sb.rc_out_of_seq_dropped + sa.rc_local_ack_timeouts, 0u);
    }
}

INSTANTIATE_TEST_SUITE_P(Faults, LossyWireTest,
                         ::testing::Values(LossyCase{"loss1", 10, 0, 0, 0, 0x100},
                                           LossyCase{"loss5", 50, 0, 0, 0, 0x100},
                                           LossyCase{"loss20", 200, 0, 0, 0, 0x100},
                                           LossyCase{"dup_reorder", 0, 50, 50, 0, 0x100},
                                           LossyCase{"corrupt", 0, 0, 0, 50, 0x100},
                                           LossyCase{"all_psn_wrap", 50, 20, 20, 20, 0xffff80}),
                         [](const ::testing::TestParamInfo<LossyCase> &i) {
                             return std::string(i.param.name);
                         });

} // namespace
} // namespace ohca::test
