// SPDX-License-Identifier: GPL-2.0-or-later
// Responder resources against a hostile peer (READ and duplicate floods,
// duplicate READ checks), atomics between two devices (results, errors,
// duplicates, contention, max_rd_atomic) and shared receive queues.
#include "device/device.hpp"
#include "link/roce_packet.hpp"
#include "link/roce_v2.hpp"
#include "rdma_node.hpp"

#include <gtest/gtest.h>

#include <set>

namespace ohca::test {
namespace {

constexpr uint32_t kAll = OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_WRITE |
                          OHCA_ACCESS_REMOTE_READ | OHCA_ACCESS_REMOTE_ATOMIC;
constexpr uint32_t kRemote =
    OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_READ | OHCA_ACCESS_REMOTE_ATOMIC;

using End = Side;

class TwoNodes : public ::testing::Test {
  protected:
    // One QP on each node, connected; buffers of 'bytes' registered with
    // every access including REMOTE_ATOMIC.
    void setup(uint8_t rd_atomic_a = 4, uint8_t rd_atomic_b = 4, uint32_t access_b = kRemote,
               uint8_t mtu = 3, size_t bytes = 1 << 16) {
        end[0] = make_end(a, bytes);
        end[1] = make_end(b, bytes);
        a.connect(end[0].qp, end[1].qp.qpn, b, mtu, 14, 7, 7, kRemote, rd_atomic_a);
        b.connect(end[1].qp, end[0].qp.qpn, a, mtu, 14, 7, 7, access_b, rd_atomic_b);
    }
    static End make_end(RdmaNode &n, size_t bytes) { return make_side(n, bytes, 8, {}, 10, kAll); }
    // Pumps the wire, moving time on when it goes idle, until pred() holds.
    bool run(const std::function<bool()> &pred,
             const std::function<bool(bool, const std::vector<uint8_t> &)> &drop = {},
             int rounds = 40) {
        for (int r = 0; r < rounds; ++r) {
            pump(a, b, drop);
            if (pred()) {
                return true;
            }
            a.host.now += 300'000'000;
            b.host.now += 300'000'000;
        }
        return pred();
    }
    std::vector<ohca_cqe> wait_cqes(RdmaNode &n, CqInfo &cq, size_t count) {
        std::vector<ohca_cqe> got;
        run([&] {
            auto v = n.poll(cq);
            got.insert(got.end(), v.begin(), v.end());
            return got.size() >= count;
        });
        return got;
    }
    SendReq atomic(uint8_t op, uint64_t remote, uint64_t cmp_add, uint64_t swap, uint64_t result_at,
                   uint64_t wr_id = 1) {
        SendReq r;
        r.wr_id = wr_id;
        r.opcode = op;
        r.remote_addr = remote;
        r.rkey = end[1].key;
        r.cmp_add = cmp_add;
        r.swap = swap;
        r.sges = {{result_at, 8, end[0].key}};
        return r;
    }
    static uint8_t opcode_of(const std::vector<uint8_t> &f) {
        ParsedPacket p;
        return parse_roce_frame(f, p) == ParseError::None ? p.fields.bth.opcode : 0xff;
    }

    RdmaNode a{1};
    RdmaNode b{2};
    End end[2];
};

// ---- responder resources against a hostile peer --------------------------------

class HostilePeer : public TwoNodes {
  protected:
    // A request to b's QP as if from a's QP (valid ICRC and addressing).
    std::vector<uint8_t> frame(uint8_t opcode, uint32_t psn, std::optional<Reth> reth = {},
                               std::vector<uint8_t> payload = {}) {
        PacketPath p;
        p.smac = a.mac;
        p.dmac = b.mac;
        p.sgid = a.gid;
        p.dgid = b.gid;
        PacketFields f;
        f.bth.opcode = opcode;
        f.bth.dest_qp = end[1].qp.qpn;
        f.bth.psn = psn & kPsnMask;
        f.bth.ack_req = true;
        f.reth = reth;
        return build_roce_frame(p, f, payload);
    }
    void inject(const std::vector<uint8_t> &f) {
        ASSERT_EQ(ohca_engine_receive_frame(b.e, f.data(), f.size()), OHCA_ENGINE_RX_CONSUMED);
    }
    const ResponderResources &res() { return *device_of(b.e).responder_resources(end[1].qp.qpn); }
    const RoceCounters &counters() { return device_of(b.e).roce_counters(); }
    uint32_t first_psn() { return (a.psn_base + end[0].qp.qpn) & kPsnMask; }
};

TEST_F(HostilePeer, ReadFloodBeyondMaxDestRdAtomicIsNakedAndBounded) {
    setup(1, 1);
    const Reth r{end[1].buf, end[1].key, 4096};
    uint32_t psn = first_psn();
    size_t most = 0;
    // 10^5 in-sequence READ requests of 4 KiB (4 response packets each at
    // MTU 1024), 1000 per engine run.
    for (int batch = 0; batch < 100; ++batch) {
        for (int i = 0; i < 1000; ++i) {
            inject(frame(rc::kReadRequest, psn, r));
            psn = psn_add(psn, 4);
        }
        b.process();
        most = std::max(most, res().queued());
        b.host.wire.clear();
    }
    // The second READ found the only resource busy: NAK invalid request,
    // the QP went to ERR and everything after it was dropped unanswered.
    EXPECT_EQ(counters().error_naks_sent, 1u);
    EXPECT_EQ(b.query(end[1].qp.qpn).qp_state, OHCA_QPS_ERR);
    EXPECT_LE(most, 1u);
    EXPECT_EQ(res().queued(), 0u);
    EXPECT_GE(counters().rx_no_qp, 99000u);
    bool req_err = false;
    for (const auto &ev : b.events()) {
        req_err = req_err || (ev.type == OHCA_EQE_QP_EVENT && ev.code == OHCA_QP_EV_REQ_ERR);
    }
    EXPECT_TRUE(req_err);
}

TEST_F(HostilePeer, ReadsWithinTheLimitAreAllAnswered) {
    setup(4, 4);
    const Reth r{end[1].buf, end[1].key, 1024};
    uint32_t psn = first_psn();
    for (int i = 0; i < 4; ++i) {
        inject(frame(rc::kReadRequest, psn, r));
        psn = psn_add(psn, 1);
    }
    b.process();
    EXPECT_EQ(counters().error_naks_sent, 0u);
    EXPECT_EQ(b.host.wire.size(), 4u);
    EXPECT_EQ(b.query(end[1].qp.qpn).qp_state, OHCA_QPS_RTS);
}

TEST_F(HostilePeer, DuplicateFloodBehindALongReadStaysBounded) {
    setup(1, 2, kRemote, 1); // MTU 256: a 1 MiB READ is 4096 responses
    const uint32_t p0 = first_psn();
    inject(frame(rc::kReadRequest, p0, Reth{end[1].buf, end[1].key, 1 << 16}));
    b.process(); // 256 responses at MTU 256, sent over several passes
    const uint32_t after = psn_add(p0, 256);
    size_t most = 0;
    for (int batch = 0; batch < 100; ++batch) {
        for (int i = 0; i < 1000; ++i) {
            switch (i % 4) {
            case 0: // duplicate SEND: an ACK each
                inject(frame(rc::kSendOnly, psn_add(p0, static_cast<uint32_t>(i % 200)), {},
                             std::vector<uint8_t>(16, 1)));
                break;
            case 1: // the READ again from inside
                inject(frame(rc::kReadRequest, psn_add(p0, 100),
                             Reth{end[1].buf + 100 * 256, end[1].key, 156 * 256}));
                break;
            case 2: // a "duplicate" READ reaching past what was executed
                inject(frame(rc::kReadRequest, psn_add(p0, 200),
                             Reth{end[1].buf, end[1].key, 60 * 256}));
                break;
            default: // one too long for any READ
                inject(frame(rc::kReadRequest, psn_add(p0, 10),
                             Reth{end[1].buf, end[1].key, 0x80000001u}));
                break;
            }
        }
        // Between runs the queue holds at most 2 READ responses and the
        // ACKs between them.
        ohca_engine_process(b.e);
        most = std::max(most, res().queued());
        b.host.wire.clear();
    }
    EXPECT_LE(most, 2u * 2 + 1);
    EXPECT_EQ(counters().error_naks_sent, 0u);
    EXPECT_EQ(counters().rx_dup_dropped, 50000u);
    EXPECT_EQ(b.query(end[1].qp.qpn).qp_state, OHCA_QPS_RTS);
    // Nothing moved the expected PSN: the next new READ is answered.
    b.process();
    b.host.wire.clear();
    inject(frame(rc::kReadRequest, after, Reth{end[1].buf, end[1].key, 256}));
    b.process();
    ASSERT_EQ(b.host.wire.size(), 1u);
    ParsedPacket p;
    ASSERT_EQ(parse_roce_frame(b.host.wire[0], p), ParseError::None);
    EXPECT_EQ(p.fields.bth.opcode, rc::kReadRespOnly);
    EXPECT_EQ(p.fields.bth.psn, after);
}

TEST_F(HostilePeer, DuplicateReadsGetTheSameChecksAsNewOnes) {
    setup(1, 1, kRemote, 1);
    const uint32_t p0 = first_psn();
    inject(frame(rc::kReadRequest, p0, Reth{end[1].buf, end[1].key, 256}));
    b.process();
    ASSERT_EQ(b.host.wire.size(), 1u);
    b.host.wire.clear();
    const uint64_t dropped = counters().rx_dup_dropped;
    // Longer than the maximum message (and 2^32 - 1 would wrap a 32-bit
    // packet count to 1), past the expected PSN, beyond the MR, bad key.
    inject(frame(rc::kReadRequest, p0, Reth{end[1].buf, end[1].key, 0xffffffffu}));
    inject(frame(rc::kReadRequest, p0, Reth{end[1].buf, end[1].key, 0x80000001u}));
    inject(frame(rc::kReadRequest, p0, Reth{end[1].buf, end[1].key, 512}));
    inject(frame(rc::kReadRequest, p0, Reth{end[1].buf + (1 << 16) - 128, end[1].key, 256}));
    inject(frame(rc::kReadRequest, p0, Reth{end[1].buf, end[1].key + 1, 256}));
    b.process();
    EXPECT_TRUE(b.host.wire.empty());
    EXPECT_EQ(counters().rx_dup_dropped, dropped + 5);
    // The genuine duplicate is answered again.
    inject(frame(rc::kReadRequest, p0, Reth{end[1].buf, end[1].key, 256}));
    b.process();
    ASSERT_EQ(b.host.wire.size(), 1u);
    ParsedPacket p;
    ASSERT_EQ(parse_roce_frame(b.host.wire[0], p), ParseError::None);
    EXPECT_EQ(p.fields.bth.opcode, rc::kReadRespOnly);
    EXPECT_EQ(p.fields.bth.psn, p0);
    EXPECT_EQ(b.query(end[1].qp.qpn).qp_state, OHCA_QPS_RTS);
}

TEST_F(TwoNodes, RequesterKeepsToMaxRdAtomic) {
    setup(2, 4);
    for (uint64_t i = 0; i < 6; ++i) {
        a.post_send(end[0].qp,
                    atomic(OHCA_WR_ATOMIC_FETCH_ADD, end[1].buf, 1, 0, end[0].buf + 8 * i, i));
    }
    SendReq r;
    r.opcode = OHCA_WR_RDMA_READ;
    r.remote_addr = end[1].buf;
    r.rkey = end[1].key;
    r.sges = {{end[0].buf + 256, 64, end[0].key}};
    a.post_send(end[0].qp, r);
    a.process();
    size_t requests = 0;
    for (const auto &f : a.host.wire) {
        const uint8_t op = opcode_of(f);
        requests += op == rc::kFetchAdd || op == rc::kReadRequest ? 1 : 0;
    }
    EXPECT_EQ(requests, 2u);
    const auto c = wait_cqes(a, end[0].scq, 7);
    ASSERT_EQ(c.size(), 7u);
    for (const auto &e : c) {
        EXPECT_EQ(e.status, OHCA_CQE_SUCCESS);
    }
    EXPECT_EQ(b.host.get<uint64_t>(end[1].buf), 6u);
}

TEST_F(TwoNodes, ExcessReadsAreNakedInvalidRequest) {
    // A requester allowed 4 outstanding READs against a responder that
    // grants 1: the second one is refused, as IBTA demands.
    setup(4, 1);
    for (uint64_t i = 0; i < 4; ++i) {
        SendReq r;
        r.wr_id = i;
        r.opcode = OHCA_WR_RDMA_READ;
        r.remote_addr = end[1].buf;
        r.rkey = end[1].key;
        r.sges = {{end[0].buf, 4096, end[0].key}};
        a.post_send(end[0].qp, r);
    }
    // The responder went to ERR before the first READ's responses left, so
    // the requester fails the first outstanding READ and flushes the rest.
    const auto c = wait_cqes(a, end[0].scq, 4);
    ASSERT_EQ(c.size(), 4u);
    EXPECT_EQ(c[0].status, OHCA_CQE_REM_INV_REQ_ERR);
    for (size_t i = 1; i < 4; ++i) {
        EXPECT_EQ(c[i].status, OHCA_CQE_WR_FLUSH_ERR);
    }
    EXPECT_EQ(device_of(b.e).roce_counters().error_naks_sent, 1u);
    EXPECT_EQ(device_of(a.e).roce_counters().error_naks_rcvd, 1u);
}

// ---- atomics ------------------------------------------------------------------

TEST_F(TwoNodes, CompareSwapAndFetchAdd) {
    setup();
    b.host.put<uint64_t>(end[1].buf, 0x1122334455667788ull);
    // Compare fails: memory unchanged, the old value returned.
    a.post_send(end[0].qp, atomic(OHCA_WR_ATOMIC_CMP_SWP, end[1].buf, 5, 9, end[0].buf, 1));
    // Compare matches: swapped.
    a.post_send(end[0].qp, atomic(OHCA_WR_ATOMIC_CMP_SWP, end[1].buf, 0x1122334455667788ull,
                                  0xaaaabbbbccccddddull, end[0].buf + 8, 2));
    // Fetch and add wraps modulo 2^64.
    a.post_send(end[0].qp, atomic(OHCA_WR_ATOMIC_FETCH_ADD, end[1].buf, 0x5555444433332223ull, 0,
                                  end[0].buf + 16, 3));
    const auto c = wait_cqes(a, end[0].scq, 3);
    ASSERT_EQ(c.size(), 3u);
    const uint8_t ops[3] = {OHCA_CQE_COMP_SWAP, OHCA_CQE_COMP_SWAP, OHCA_CQE_FETCH_ADD};
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(c[i].status, OHCA_CQE_SUCCESS);
        EXPECT_EQ(c[i].opcode, ops[i]);
        EXPECT_EQ(c[i].byte_len, 8u);
        EXPECT_EQ(c[i].wr_id, i + 1);
    }
    EXPECT_EQ(a.host.get<uint64_t>(end[0].buf), 0x1122334455667788ull);
    EXPECT_EQ(a.host.get<uint64_t>(end[0].buf + 8), 0x1122334455667788ull);
    EXPECT_EQ(a.host.get<uint64_t>(end[0].buf + 16), 0xaaaabbbbccccddddull);
    EXPECT_EQ(b.host.get<uint64_t>(end[1].buf), 0xaaaabbbbccccddddull + 0x5555444433332223ull);
}

TEST_F(TwoNodes, AtomicWireFormat) {
    setup();
    a.post_send(end[0].qp, atomic(OHCA_WR_ATOMIC_CMP_SWP, end[1].buf + 8, 0x0102030405060708ull,
                                  0x1112131415161718ull, end[0].buf));
    a.process();
    ASSERT_EQ(a.host.wire.size(), 1u);
    const auto &f = a.host.wire[0];
    ParsedPacket p;
    ASSERT_EQ(parse_roce_frame(f, p), ParseError::None);
    EXPECT_EQ(p.fields.bth.opcode, rc::kCompareSwap);
    ASSERT_TRUE(p.fields.atomic_eth.has_value());
    EXPECT_EQ(p.fields.atomic_eth->va, end[1].buf + 8);
    EXPECT_EQ(p.fields.atomic_eth->rkey, end[1].key);
    EXPECT_EQ(p.fields.atomic_eth->swap_add, 0x1112131415161718ull);
    EXPECT_EQ(p.fields.atomic_eth->compare, 0x0102030405060708ull);
    // IPv4 (20) + UDP (8) + BTH (12) + AtomicETH (28) + ICRC (4); the
    // AtomicETH is big endian: VA, R_Key, Swap, Compare.
    EXPECT_EQ(f.size(), 14u + 20 + 8 + 12 + 28 + 4);
    const size_t eth = 14 + 20 + 8 + 12;
    EXPECT_EQ(f[eth + 12], 0x11);
    EXPECT_EQ(f[eth + 19], 0x18);
    EXPECT_EQ(f[eth + 20], 0x01);
    EXPECT_EQ(f[eth + 27], 0x08);
}

TEST_F(TwoNodes, AtomicErrors) {
    struct Case {
        const char *what;
        uint64_t remote;
        uint32_t rkey_delta;
        uint8_t status;
    };
    const Case cases[] = {
        {"misaligned", 4, 0, OHCA_CQE_REM_INV_REQ_ERR},
        {"bad rkey", 0, 0x100, OHCA_CQE_REM_ACCESS_ERR},
        {"out of bounds", 1 << 16, 0, OHCA_CQE_REM_ACCESS_ERR},
    };
    for (size_t i = 0; i < std::size(cases); ++i) {
        SCOPED_TRACE(cases[i].what);
        RdmaNode n1{1};
        RdmaNode n2{2};
        End e0 = make_end(n1, 1 << 16);
        End e1 = make_end(n2, 1 << 16);
        n1.connect(e0.qp, e1.qp.qpn, n2, 3, 14, 7, 7, kRemote, 4);
        n2.connect(e1.qp, e0.qp.qpn, n1, 3, 14, 7, 7, kRemote, 4);
        SendReq r;
        r.opcode = OHCA_WR_ATOMIC_FETCH_ADD;
        r.remote_addr = e1.buf + cases[i].remote;
        r.rkey = e1.key + cases[i].rkey_delta;
        r.cmp_add = 1;
        r.sges = {{e0.buf, 8, e0.key}};
        n1.post_send(e0.qp, r);
        pump(n1, n2);
        const auto c = n1.poll(e0.scq);
        ASSERT_EQ(c.size(), 1u);
        EXPECT_EQ(c[0].status, cases[i].status);
        EXPECT_EQ(n2.host.get<uint64_t>(e1.buf), 0u);
    }
}

TEST_F(TwoNodes, AtomicNeedsRemoteAtomicOnTheQp) {
    setup(4, 4, OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_READ);
    a.post_send(end[0].qp, atomic(OHCA_WR_ATOMIC_FETCH_ADD, end[1].buf, 1, 0, end[0].buf));
    const auto c = wait_cqes(a, end[0].scq, 1);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, OHCA_CQE_REM_ACCESS_ERR);
    EXPECT_EQ(b.host.get<uint64_t>(end[1].buf), 0u);
}

TEST_F(TwoNodes, AtomicNeedsRemoteAtomicOnTheMr) {
    setup();
    const uint64_t buf = b.alloc(4096);
    const uint32_t key =
        b.reg_mr(end[1].pd, buf, 4096, OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_WRITE);
    SendReq r = atomic(OHCA_WR_ATOMIC_FETCH_ADD, buf, 1, 0, end[0].buf);
    r.rkey = key;
    a.post_send(end[0].qp, r);
    const auto c = wait_cqes(a, end[0].scq, 1);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, OHCA_CQE_REM_ACCESS_ERR);
}

TEST_F(TwoNodes, MalformedAtomicWqesFailLocally) {
    setup();
    SendReq r = atomic(OHCA_WR_ATOMIC_FETCH_ADD, end[1].buf, 1, 0, end[0].buf);
    r.sges = {{end[0].buf, 4, end[0].key}}; // not 8 bytes
    a.post_send(end[0].qp, r);
    auto c = wait_cqes(a, end[0].scq, 1);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, OHCA_CQE_LOC_QP_OP_ERR);
    EXPECT_EQ(c[0].vendor_err, OHCA_VERR_BAD_WQE);
    EXPECT_EQ(b.host.get<uint64_t>(end[1].buf), 0u);
}

TEST_F(TwoNodes, ResultNeedsLocalWrite) {
    setup();
    const uint64_t buf = a.alloc(4096);
    const uint32_t ro = a.reg_mr(end[0].pd, buf, 4096, 0);
    SendReq r = atomic(OHCA_WR_ATOMIC_FETCH_ADD, end[1].buf, 1, 0, buf);
    r.sges = {{buf, 8, ro}};
    a.post_send(end[0].qp, r);
    auto c = wait_cqes(a, end[0].scq, 1);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, OHCA_CQE_LOC_PROT_ERR);
    EXPECT_EQ(b.host.get<uint64_t>(end[1].buf), 0u);
}

TEST_F(TwoNodes, DuplicateAtomicIsAnsweredFromTheSavedResult) {
    setup();
    b.host.put<uint64_t>(end[1].buf, 100);
    a.post_send(end[0].qp, atomic(OHCA_WR_ATOMIC_FETCH_ADD, end[1].buf, 7, 0, end[0].buf));
    int dropped = 0;
    const auto lose_first_ack = [&](bool from_a, const std::vector<uint8_t> &f) {
        if (!from_a && opcode_of(f) == rc::kAtomicAck && dropped == 0) {
            ++dropped;
            return true;
        }
        return false;
    };
    std::vector<ohca_cqe> c;
    ASSERT_TRUE(run(
        [&] {
            auto v = a.poll(end[0].scq);
            c.insert(c.end(), v.begin(), v.end());
            return !c.empty();
        },
        lose_first_ack));
    EXPECT_EQ(dropped, 1);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(a.host.get<uint64_t>(end[0].buf), 100u);
    // Executed once although requested twice.
    EXPECT_EQ(b.host.get<uint64_t>(end[1].buf), 107u);
    EXPECT_GE(device_of(b.e).roce_counters().rx_duplicates, 1u);
    EXPECT_GE(device_of(a.e).roce_counters().retrans_pkts, 1u);
}

// ---- RDMA ATOMIC WRITE (IBTA 1.5) ---------------------------------------------

TEST_F(TwoNodes, AtomicWriteStoresEightBytesAndCompletesOnTheAck) {
    setup();
    a.host.put<uint64_t>(end[0].buf, 0x0123456789abcdefull);
    SendReq r;
    r.wr_id = 0x77;
    r.opcode = OHCA_WR_ATOMIC_WRITE;
    r.remote_addr = end[1].buf + 16;
    r.rkey = end[1].key;
    r.sges = {{end[0].buf, 8, end[0].key}};
    a.post_send(end[0].qp, r);
    a.process();
    // One request: RETH (length 8) and the 8 bytes as they are in memory.
    ASSERT_EQ(a.host.wire.size(), 1u);
    ParsedPacket p;
    ASSERT_EQ(parse_roce_frame(a.host.wire[0], p), ParseError::None);
    EXPECT_EQ(p.fields.bth.opcode, rc::kAtomicWrite);
    EXPECT_TRUE(p.fields.bth.ack_req);
    ASSERT_TRUE(p.fields.reth.has_value());
    EXPECT_EQ(p.fields.reth->va, end[1].buf + 16);
    EXPECT_EQ(p.fields.reth->rkey, end[1].key);
    EXPECT_EQ(p.fields.reth->dma_len, 8u);
    ASSERT_EQ(p.payload.size(), 8u);
    EXPECT_EQ(a.host.wire[0].size(), 14u + 20 + 8 + 12 + 16 + 8 + 4);
    // Inline: the same 8 bytes from the WQE.
    SendReq in = r;
    in.wr_id = 0x78;
    in.remote_addr = end[1].buf + 24;
    in.sges.clear();
    in.inline_data = {1, 2, 3, 4, 5, 6, 7, 8};
    a.post_send(end[0].qp, in);
    const auto c = wait_cqes(a, end[0].scq, 2);
    ASSERT_EQ(c.size(), 2u);
    for (const auto &e : c) {
        EXPECT_EQ(e.status, OHCA_CQE_SUCCESS);
        EXPECT_EQ(e.opcode, OHCA_CQE_ATOMIC_WRITE);
    }
    EXPECT_EQ(c[0].wr_id, 0x77u);
    EXPECT_EQ(b.host.get<uint64_t>(end[1].buf + 16), 0x0123456789abcdefull);
    EXPECT_EQ(b.host.get<uint64_t>(end[1].buf + 24), 0x0807060504030201ull);
    EXPECT_EQ(b.host.get<uint64_t>(end[1].buf + 8), 0u);
    EXPECT_EQ(b.host.get<uint64_t>(end[1].buf + 32), 0u);
}

TEST_F(TwoNodes, AtomicWriteErrors) {
    struct Case {
        const char *what;
        uint64_t remote;
        uint32_t rkey_delta;
        uint32_t len;       // of the one SGE
        uint32_t mr_access; // of the target MR
        uint8_t status;
    };
    const uint32_t rw = OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_WRITE;
    const Case cases[] = {
        {"misaligned", 4, 0, 8, rw, OHCA_CQE_REM_INV_REQ_ERR},
        {"bad rkey", 0, 0x100, 8, rw, OHCA_CQE_REM_ACCESS_ERR},
        {"out of bounds", 4096, 0, 8, rw, OHCA_CQE_REM_ACCESS_ERR},
        {"no remote write", 0, 0, 8,
         OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_READ | OHCA_ACCESS_REMOTE_ATOMIC,
         OHCA_CQE_REM_ACCESS_ERR},
        {"4 bytes", 0, 0, 4, rw, OHCA_CQE_LOC_QP_OP_ERR},
        {"16 bytes", 0, 0, 16, rw, OHCA_CQE_LOC_QP_OP_ERR},
    };
    for (const Case &k : cases) {
        SCOPED_TRACE(k.what);
        RdmaNode n1{1};
        RdmaNode n2{2};
        End e0 = make_end(n1, 1 << 16);
        End e1 = make_end(n2, 1 << 16);
        const uint64_t target = n2.alloc(4096);
        const uint32_t tkey = n2.reg_mr(e1.pd, target, 4096, k.mr_access);
        n1.connect(e0.qp, e1.qp.qpn, n2, 3, 14, 7, 7, kRemote, 4);
        n2.connect(e1.qp, e0.qp.qpn, n1, 3, 14, 7, 7, kRemote, 4);
        n1.host.put<uint64_t>(e0.buf, ~0ull);
        SendReq r;
        r.opcode = OHCA_WR_ATOMIC_WRITE;
        r.remote_addr = target + k.remote;
        r.rkey = tkey + k.rkey_delta;
        r.sges = {{e0.buf, k.len, e0.key}};
        n1.post_send(e0.qp, r);
        pump(n1, n2);
        const auto c = n1.poll(e0.scq);
        ASSERT_EQ(c.size(), 1u);
        EXPECT_EQ(c[0].status, k.status);
        EXPECT_EQ(n2.host.get<uint64_t>(target), 0u);
        EXPECT_EQ(n2.host.get<uint64_t>(target + 8), 0u);
    }
}

TEST_F(HostilePeer, AtomicWriteWithAWrongLengthOrADuplicateIsNotExecuted) {
    setup();
    const uint32_t psn = first_psn();
    const std::vector<uint8_t> v1 = {1, 1, 1, 1, 1, 1, 1, 1};
    inject(frame(rc::kAtomicWrite, psn, Reth{end[1].buf, end[1].key, 8}, v1));
    b.process();
    EXPECT_EQ(b.host.get<uint64_t>(end[1].buf), 0x0101010101010101ull);
    // A duplicate with other bytes: ACKed, not executed again.
    b.host.put<uint64_t>(end[1].buf, 5);
    inject(frame(rc::kAtomicWrite, psn, Reth{end[1].buf, end[1].key, 8}, {2, 2, 2, 2, 2, 2, 2, 2}));
    b.process();
    EXPECT_EQ(b.host.get<uint64_t>(end[1].buf), 5u);
    EXPECT_GE(counters().rx_duplicates, 1u);
    // 16 bytes of payload: NAK invalid request, nothing written.
    inject(frame(rc::kAtomicWrite, psn + 1, Reth{end[1].buf + 8, end[1].key, 8},
                 std::vector<uint8_t>(16, 3)));
    b.process();
    EXPECT_EQ(b.host.get<uint64_t>(end[1].buf + 8), 0u);
    EXPECT_GE(counters().error_naks_sent, 1u);
}

TEST_F(TwoNodes, AtomicsFromManyQpsAreAtomicAgainstEachOther) {
    setup(4, 4);
    // A second connection between the nodes on the same buffer.
    End x = make_end(a, 1 << 16);
    QpInfo y = b.create_qp(end[1].pd, end[1].scq.cqn, end[1].rcq.cqn, 8, 8);
    a.connect(x.qp, y.qpn, b, 3, 14, 7, 7, kRemote, 4);
    b.connect(y, x.qp.qpn, a, 3, 14, 7, 7, kRemote, 4);
    constexpr uint64_t kN = 200;
    for (uint64_t i = 0; i < kN; ++i) {
        a.post_send(end[0].qp,
                    atomic(OHCA_WR_ATOMIC_FETCH_ADD, end[1].buf, 1, 0, end[0].buf + 8 * i, i));
        SendReq r = atomic(OHCA_WR_ATOMIC_FETCH_ADD, end[1].buf, 1, 0, x.buf + 8 * i, i);
        r.sges = {{x.buf + 8 * i, 8, x.key}};
        a.post_send(x.qp, r);
        if (i % 32 == 31) {
            pump(a, b);
        }
    }
    std::vector<ohca_cqe> c1, c2;
    ASSERT_TRUE(run([&] {
        auto v = a.poll(end[0].scq);
        c1.insert(c1.end(), v.begin(), v.end());
        v = a.poll(x.scq);
        c2.insert(c2.end(), v.begin(), v.end());
        return c1.size() == kN && c2.size() == kN;
    }));
    EXPECT_EQ(b.host.get<uint64_t>(end[1].buf), 2 * kN);
    std::set<uint64_t> seen;
    for (uint64_t i = 0; i < kN; ++i) {
        seen.insert(a.host.get<uint64_t>(end[0].buf + 8 * i));
        seen.insert(a.host.get<uint64_t>(x.buf + 8 * i));
    }
    EXPECT_EQ(seen.size(), 2 * kN); // every fetched value once: 0 .. 2N-1
    EXPECT_EQ(*seen.rbegin(), 2 * kN - 1);
}

TEST_F(TwoNodes, QueryDeviceReportsAtomicsAndSrqLimits) {
    ohca_query_device_out d{};
    ASSERT_EQ(a.cmd(OHCA_CMD_QUERY_DEVICE, nullptr, 0, &d, sizeof(d)).status, OHCA_STATUS_OK);
    EXPECT_EQ(d.atomic_cap, uint32_t{OHCA_ATOMIC_HCA});
    EXPECT_NE(d.dev_caps & OHCA_DEV_CAP_ATOMIC_WRITE, 0u);
    EXPECT_EQ(d.max_srq, DeviceLimits::max_srq);
    EXPECT_EQ(d.max_srq_wr, DeviceLimits::max_srq_wr);
    EXPECT_EQ(d.max_srq_sge, DeviceLimits::max_srq_sge);
}

// ---- shared receive queues ---------------------------------------------------------

class SrqTest : public TwoNodes {
  protected:
    // b: SRQ with two QPs on it (shared receive CQ); a: two QPs to them.
    void setup_srq(unsigned int log_size = 6, uint32_t limit = 0) {
        for (int i = 0; i < 2; ++i) {
            ae[i] = make_end(a, 1 << 16);
        }
        pd = b.create_pd();
        scq = b.create_cq(8);
        rcq = b.create_cq(8);
        srq = b.create_srq(pd, log_size, limit);
        buf = b.alloc(1 << 16);
        key = b.reg_mr(pd, buf, 1 << 16, kAll);
        for (int i = 0; i < 2; ++i) {
            bq[i] = b.create_qp_on_srq(pd, scq.cqn, rcq.cqn, srq.srqn);
            a.connect(ae[i].qp, bq[i].qpn, b, 3, 14, 7, 7, kRemote, 4);
            b.connect(bq[i], ae[i].qp.qpn, a, 3, 14, 7, 7, kRemote, 4);
        }
    }
    void send(int i, uint32_t len, uint64_t wr_id) {
        SendReq r;
        r.wr_id = wr_id;
        r.sges = {{ae[i].buf, len, ae[i].key}};
        a.post_send(ae[i].qp, r);
    }
    ohca_query_srq_out query_srq() {
        ohca_handle_in in{};
        in.handle = srq.srqn;
        ohca_query_srq_out o{};
        EXPECT_EQ(b.cmd(OHCA_CMD_QUERY_SRQ, &in, sizeof(in), &o, sizeof(o)).status, OHCA_STATUS_OK);
        return o;
    }
    int count_events(uint8_t type, uint16_t code, uint32_t p0) {
        int n = 0;
        for (const auto &ev : b.events()) {
            n += ev.type == type && ev.code == code && ev.param0 == p0 ? 1 : 0;
        }
        return n;
    }

    End ae[2];
    uint32_t pd = 0, key = 0;
    uint64_t buf = 0;
    CqInfo scq, rcq;
    SrqInfo srq;
    QpInfo bq[2];
};

TEST_F(SrqTest, ManyQpsTakeFromOneSrqInOrder) {
    setup_srq();
    for (uint64_t k = 0; k < 6; ++k) {
        b.post_srq_recv(srq, 100 + k, {{buf + 1024 * k, 1024, key}});
    }
    send(0, 100, 1);
    pump(a, b);
    send(1, 200, 2);
    pump(a, b);
    send(0, 300, 3);
    send(1, 400, 4);
    pump(a, b);
    const auto c = b.poll(rcq);
    ASSERT_EQ(c.size(), 4u);
    std::set<uint32_t> qpns;
    for (size_t k = 0; k < 4; ++k) {
        EXPECT_EQ(c[k].status, OHCA_CQE_SUCCESS);
        EXPECT_EQ(c[k].opcode, OHCA_CQE_RECV);
        EXPECT_EQ(c[k].wr_id, 100 + k);
        EXPECT_EQ(c[k].wqe_index, k);
        qpns.insert(c[k].qpn);
    }
    EXPECT_EQ(qpns.size(), 2u);
    EXPECT_EQ(c[0].byte_len, 100u);
    EXPECT_EQ(c[1].byte_len, 200u);
    EXPECT_EQ(query_srq().wqes, 2u);
}

TEST_F(SrqTest, LimitEventOnceWhenBelowTheLimit) {
    setup_srq();
    for (uint64_t k = 0; k < 10; ++k) {
        b.post_srq_recv(srq, k, {{buf + 1024 * k, 1024, key}});
    }
    ohca_modify_srq_in m{};
    m.srqn = srq.srqn;
    m.attr_mask = OHCA_SRQ_LIMIT;
    m.limit = 7;
    ASSERT_EQ(b.cmd_in(OHCA_CMD_MODIFY_SRQ, m).status, OHCA_STATUS_OK);
    EXPECT_EQ(query_srq().limit, 7u);
    for (int k = 0; k < 3; ++k) {
        send(k % 2, 64, k);
        pump(a, b);
    }
    EXPECT_EQ(count_events(OHCA_EQE_SRQ_EVENT, OHCA_SRQ_EV_LIMIT_REACHED, srq.srqn), 0);
    send(1, 64, 3); // 6 left: below 7
    pump(a, b);
    EXPECT_EQ(count_events(OHCA_EQE_SRQ_EVENT, OHCA_SRQ_EV_LIMIT_REACHED, srq.srqn), 1);
    EXPECT_EQ(query_srq().limit, 0u);
    send(0, 64, 4);
    pump(a, b);
    EXPECT_EQ(count_events(OHCA_EQE_SRQ_EVENT, OHCA_SRQ_EV_LIMIT_REACHED, srq.srqn), 0);
    EXPECT_EQ(b.poll(rcq).size(), 5u);
}

TEST_F(SrqTest, EmptySrqAnswersRnrUntilAWqeIsPosted) {
    setup_srq();
    send(0, 64, 1);
    pump(a, b);
    EXPECT_GE(device_of(b.e).roce_counters().rnr_naks_sent, 1u);
    b.post_srq_recv(srq, 9, {{buf, 1024, key}});
    std::vector<ohca_cqe> c;
    ASSERT_TRUE(run([&] {
        auto v = b.poll(rcq);
        c.insert(c.end(), v.begin(), v.end());
        return !c.empty();
    }));
    EXPECT_EQ(c[0].wr_id, 9u);
    EXPECT_EQ(c[0].status, OHCA_CQE_SUCCESS);
}

TEST_F(SrqTest, QpToErrorFlushesOnlyItsWqeAndReportsLastWqe) {
    setup_srq();
    for (uint64_t k = 0; k < 4; ++k) {
        b.post_srq_recv(srq, k, {{buf + 1024 * k, 1024, key}});
    }
    // A two-packet SEND of which only the first arrives: bq[0] holds WQE 0.
    SendReq r;
    r.wr_id = 1;
    r.sges = {{ae[0].buf, 2048 + 100, ae[0].key}};
    a.post_send(ae[0].qp, r);
    a.process();
    ASSERT_GE(a.host.wire.size(), 2u);
    const auto f = a.host.wire[0];
    a.host.wire.clear();
    ASSERT_EQ(ohca_engine_receive_frame(b.e, f.data(), f.size()), OHCA_ENGINE_RX_CONSUMED);
    b.process();
    b.host.wire.clear();
    EXPECT_EQ(query_srq().wqes, 3u);
    ohca_qp_attr at{};
    at.qp_state = OHCA_QPS_ERR;
    ASSERT_EQ(b.modify(bq[0].qpn, OHCA_QP_STATE, at).status, OHCA_STATUS_OK);
    const auto c = b.poll(rcq);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, OHCA_CQE_WR_FLUSH_ERR);
    EXPECT_EQ(c[0].wr_id, 0u);
    EXPECT_EQ(count_events(OHCA_EQE_QP_EVENT, OHCA_QP_EV_LAST_WQE_REACHED, bq[0].qpn), 1);
    EXPECT_EQ(query_srq().wqes, 3u); // the others stay for the other QP
    send(1, 64, 7);
    pump(a, b);
    const auto d = b.poll(rcq);
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].wr_id, 1u);
}

TEST_F(SrqTest, Commands) {
    setup_srq(4);
    // Destroying an SRQ that QPs use.
    ohca_handle_in h{};
    h.handle = srq.srqn;
    EXPECT_EQ(b.cmd_in(OHCA_CMD_DESTROY_SRQ, h).status, OHCA_STATUS_BAD_STATE);
    // An RQ doorbell for a QP on an SRQ is an error.
    const uint64_t errs = b.stats().db_errors;
    ohca_engine_db_write(b.e, 0, OHCA_DB_RQ, OHCA_DB_VALUE(bq[0].qpn, 1), 8);
    EXPECT_EQ(b.stats().db_errors, errs + 1);
    // SRQ doorbells beyond the ring or backwards.
    ohca_engine_db_write(b.e, 0, OHCA_DB_SRQ, OHCA_DB_VALUE(srq.srqn, 17), 8);
    ohca_engine_db_write(b.e, 0, OHCA_DB_SRQ, OHCA_DB_VALUE(srq.srqn + 1, 1), 8);
    EXPECT_EQ(b.stats().db_errors, errs + 3);
    // Bad fields of CREATE_SRQ.
    ohca_create_srq_in in{};
    in.pdn = pd;
    in.log_size = 4;
    in.log_stride = 6;
    in.pbl = b.make_pbl(b.alloc(4096), 4096);
    auto bad = [&](ohca_create_srq_in x, uint8_t status, uint32_t syndrome) {
        const auto r = b.cmd_in(OHCA_CMD_CREATE_SRQ, x);
        EXPECT_EQ(r.status, status);
        EXPECT_EQ(r.syndrome, syndrome);
    };
    auto x = in;
    x.pdn = 999;
    bad(x, OHCA_STATUS_BAD_HANDLE, 999);
    x = in;
    x.log_size = 13;
    bad(x, OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_srq_in, log_size));
    x = in;
    x.log_stride = 4;
    bad(x, OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_srq_in, log_stride));
    x = in;
    x.limit = 16;
    bad(x, OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_srq_in, limit));
    x = in;
    x.rsvd0 = 1;
    bad(x, OHCA_STATUS_RESERVED_NONZERO, offsetof(ohca_create_srq_in, rsvd0));
    x = in;
    x.type = 2; // neither basic nor XRC
    bad(x, OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_srq_in, type));
    x = in;
    x.cqn = 1; // a basic SRQ has no CQ of its own
    bad(x, OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_srq_in, cqn));
    x = in;
    x.uar_index = 7;
    bad(x, OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_srq_in, uar_index));
    // MODIFY_SRQ: limit within the ring, known mask bits only.
    ohca_modify_srq_in m{};
    m.srqn = srq.srqn;
    m.attr_mask = OHCA_SRQ_LIMIT;
    m.limit = 16;
    EXPECT_EQ(b.cmd_in(OHCA_CMD_MODIFY_SRQ, m).status, OHCA_STATUS_BAD_FIELD);
    m.limit = 3;
    m.attr_mask = 1;
    EXPECT_EQ(b.cmd_in(OHCA_CMD_MODIFY_SRQ, m).status, OHCA_STATUS_BAD_FIELD);
    // A QP on an SRQ of another PD, or with RQ fields.
    const uint32_t pd2 = b.create_pd();
    ohca_create_qp_in q{};
    q.type = OHCA_QPT_RC;
    q.sq_log_size = 2;
    q.sq_log_stride = 8;
    q.pdn = pd2;
    q.send_cqn = scq.cqn;
    q.recv_cqn = rcq.cqn;
    q.srqn = srq.srqn;
    q.sq_pbl = b.make_pbl(b.alloc(4096), 4096);
    auto r = b.cmd_in(OHCA_CMD_CREATE_QP, q);
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(r.syndrome, offsetof(ohca_create_qp_in, srqn));
    q.pdn = pd;
    q.rq_log_size = 2;
    EXPECT_EQ(b.cmd_in(OHCA_CMD_CREATE_QP, q).status, OHCA_STATUS_BAD_FIELD);
    q.rq_log_size = 0;
    q.srqn = 200;
    EXPECT_EQ(b.cmd_in(OHCA_CMD_CREATE_QP, q).status, OHCA_STATUS_BAD_HANDLE);
    // Destroyable once its QPs are gone.
    for (auto &qp : bq) {
        ohca_handle_in d{};
        d.handle = qp.qpn;
        EXPECT_EQ(b.cmd_in(OHCA_CMD_DESTROY_QP, d).status, OHCA_STATUS_OK);
    }
    EXPECT_EQ(b.cmd_in(OHCA_CMD_DESTROY_SRQ, h).status, OHCA_STATUS_OK);
    EXPECT_EQ(b.cmd_in(OHCA_CMD_DESTROY_SRQ, h).status, OHCA_STATUS_BAD_HANDLE);
}

TEST_F(SrqTest, ExhaustionAtMaxSrq) {
    RdmaNode n{3};
    const uint32_t p = n.create_pd();
    const uint64_t ring = n.alloc(4096);
    ohca_create_srq_in in{};
    in.pdn = p;
    in.log_size = 1;
    in.log_stride = 6;
    in.pbl = n.make_pbl(ring, 4096);
    std::vector<uint32_t> made;
    for (uint32_t i = 0; i < DeviceLimits::max_srq; ++i) {
        ohca_create_out o{};
        ASSERT_EQ(n.cmd(OHCA_CMD_CREATE_SRQ, &in, sizeof(in), &o, sizeof(o)).status,
                  OHCA_STATUS_OK);
        made.push_back(o.handle);
    }
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_SRQ, in).status, OHCA_STATUS_NO_RESOURCES);
    ohca_handle_in h{};
    h.handle = p;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_PD, h).status, OHCA_STATUS_BAD_STATE);
    for (uint32_t s : made) {
        h.handle = s;
        EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_SRQ, h).status, OHCA_STATUS_OK);
    }
}

TEST_F(SrqTest, UnreadableRingStopsTheSrq) {
    setup_srq();
    // Point the SRQ's ring outside guest memory.
    ohca_create_srq_in in{};
    in.pdn = pd;
    in.log_size = 2;
    in.log_stride = 6;
    const uint64_t list = b.alloc(4096);
    b.host.put<uint64_t>(list, 0x7000000000ull); // no RAM there
    in.pbl.addr = list;
    in.pbl.npages = 1;
    in.pbl.page_shift = 12;
    in.pbl.levels = 1;
    ohca_create_out o{};
    ASSERT_EQ(b.cmd(OHCA_CMD_CREATE_SRQ, &in, sizeof(in), &o, sizeof(o)).status, OHCA_STATUS_OK);
    QpInfo q = b.create_qp_on_srq(pd, scq.cqn, rcq.cqn, o.handle);
    End e = make_end(a, 4096);
    a.connect(e.qp, q.qpn, b, 3, 14, 7, 1, kRemote, 4);
    b.connect(q, e.qp.qpn, a, 3, 14, 7, 1, kRemote, 4);
    ohca_engine_db_write(b.e, 0, OHCA_DB_SRQ, OHCA_DB_VALUE(o.handle, 1), 8);
    SendReq r;
    r.sges = {{e.buf, 16, e.key}};
    a.post_send(e.qp, r);
    pump(a, b);
    EXPECT_EQ(count_events(OHCA_EQE_SRQ_EVENT, OHCA_SRQ_EV_ERR, o.handle), 1);
    ohca_handle_in h{};
    h.handle = o.handle;
    ohca_query_srq_out out{};
    ASSERT_EQ(b.cmd(OHCA_CMD_QUERY_SRQ, &h, sizeof(h), &out, sizeof(out)).status, OHCA_STATUS_OK);
    EXPECT_EQ(out.error, 1);
}

} // namespace
} // namespace ohca::test
