// SPDX-License-Identifier: GPL-2.0-or-later
// Doorbell records (OHCA_DEV_CAP_DB_RECORD, objects/db_record.hpp): CREATE_CQ
// and CREATE_QP with and without them (the input of ABI 1.6 still works),
// an RQ the device learns of only from its record, a CQ whose consumer
// index only its record returns, hostile record values (ignored, counted
// in db_errors), migration.
#include "link/roce_packet.hpp"
#include "link/roce_v2.hpp"
#include "rdma_node.hpp"
#include "transports/credits.hpp"

#include <gtest/gtest.h>

#include <cstddef>

namespace ohca::test {
namespace {

constexpr uint32_t kRemote = OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_READ;

// CREATE_CQ with a record at 'record' (0: none) and the given in_len.
CmdOutcome create_cq(RdmaNode &n, CqInfo &cq, unsigned int log, uint64_t record,
                     uint16_t in_len = sizeof(ohca_create_cq_in)) {
    cq.size = 1u << log;
    cq.ring = n.alloc(32ull * cq.size);
    ohca_create_cq_in in{};
    in.log_size = static_cast<uint8_t>(log);
    in.pbl = n.make_pbl(cq.ring, 32ull * cq.size);
    in.db_record = record;
    ohca_create_out o{};
    const CmdOutcome r = n.cmd(OHCA_CMD_CREATE_CQ, &in, in_len, &o, sizeof(o));
    cq.cqn = o.handle;
    return r;
}

// CREATE_QP (RC, 2^log WQEs each way) with an RQ record at 'record'.
CmdOutcome create_qp(RdmaNode &n, QpInfo &q, uint32_t pd, uint32_t scq, uint32_t rcq,
                     unsigned int log, uint64_t record, uint16_t in_len = sizeof(ohca_create_qp_in),
                     uint32_t srqn = 0) {
    q.sq_size = 1u << log;
    q.rq_size = srqn != 0 ? 0 : 1u << log;
    q.sq_stride = 256;
    q.rq_stride = 64;
    q.sq = n.alloc(uint64_t{q.sq_size} * q.sq_stride);
    ohca_create_qp_in in{};
    in.type = OHCA_QPT_RC;
    in.sq_log_size = static_cast<uint8_t>(log);
    in.sq_log_stride = 8;
    in.pdn = pd;
    in.send_cqn = scq;
    in.recv_cqn = rcq;
    in.max_inline = 128;
    in.srqn = srqn;
    in.sq_pbl = n.make_pbl(q.sq, uint64_t{q.sq_size} * q.sq_stride);
    if (srqn == 0) {
        q.rq = n.alloc(uint64_t{q.rq_size} * q.rq_stride);
        in.rq_log_size = static_cast<uint8_t>(log);
        in.rq_log_stride = 6;
        in.rq_pbl = n.make_pbl(q.rq, uint64_t{q.rq_size} * q.rq_stride);
    }
    in.rq_db_record = record;
    ohca_create_out o{};
    const CmdOutcome r = n.cmd(OHCA_CMD_CREATE_QP, &in, in_len, &o, sizeof(o));
    q.qpn = o.handle;
    return r;
}

void set_record(RdmaNode &n, uint64_t record, uint32_t index) {
    ohca_db_record r{};
    r.index = index;
    n.host.put(record, r);
}

TEST(DbRecordCaps, Advertised) {
    RdmaNode n(1);
    ohca_query_device_out out{};
    ASSERT_EQ(n.cmd(OHCA_CMD_QUERY_DEVICE, nullptr, 0, &out, sizeof(out)).status, OHCA_STATUS_OK);
    EXPECT_NE(out.dev_caps & OHCA_DEV_CAP_DB_RECORD, 0u);
}

// A driver of ABI 1.6 sends the shorter inputs: they still work, and
// only the two sizes are accepted.
TEST(DbRecordCommands, BothInputSizes) {
    RdmaNode n(1);
    const uint32_t pd = n.create_pd();
    CqInfo cq;
    EXPECT_EQ(create_cq(n, cq, 4, 0, OHCA_CREATE_CQ_IN_V1_SIZE).status, OHCA_STATUS_OK);
    CqInfo cq2;
    EXPECT_EQ(create_cq(n, cq2, 4, n.alloc(8, 8)).status, OHCA_STATUS_OK);
    CqInfo bad;
    const CmdOutcome r = create_cq(n, bad, 4, 0, OHCA_CREATE_CQ_IN_V1_SIZE + 4);
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_LEN);
    EXPECT_EQ(r.syndrome, OHCA_CREATE_CQ_IN_V1_SIZE);
    QpInfo q;
    EXPECT_EQ(create_qp(n, q, pd, cq.cqn, cq.cqn, 4, 0, OHCA_CREATE_QP_IN_V1_SIZE).status,
              OHCA_STATUS_OK);
    QpInfo q2;
    EXPECT_EQ(create_qp(n, q2, pd, cq.cqn, cq.cqn, 4, n.alloc(8, 8)).status, OHCA_STATUS_OK);
    QpInfo q3;
    EXPECT_EQ(create_qp(n, q3, pd, cq.cqn, cq.cqn, 4, 0, OHCA_CREATE_QP_IN_V1_SIZE + 4).status,
              OHCA_STATUS_BAD_LEN);
}

// A record not 8-byte aligned, or for a QP without an RQ of its own, is
// refused at its field.
TEST(DbRecordCommands, BadRecords) {
    RdmaNode n(1);
    const uint32_t pd = n.create_pd();
    CqInfo cq;
    CmdOutcome r = create_cq(n, cq, 4, n.alloc(8, 8) + 4);
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(r.syndrome, offsetof(ohca_create_cq_in, db_record));
    r = create_cq(n, cq, 4, UINT64_MAX - 7);
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
    ASSERT_EQ(create_cq(n, cq, 4, 0).status, OHCA_STATUS_OK);
    QpInfo q;
    r = create_qp(n, q, pd, cq.cqn, cq.cqn, 4, n.alloc(8, 8) + 2);
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(r.syndrome, offsetof(ohca_create_qp_in, rq_db_record));
    const SrqInfo srq = n.create_srq(pd);
    r = create_qp(n, q, pd, cq.cqn, cq.cqn, 4, n.alloc(8, 8), sizeof(ohca_create_qp_in), srq.srqn);
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(r.syndrome, offsetof(ohca_create_qp_in, rq_db_record));
}

// Two nodes: a sends, b receives on a QP whose RQ has a record and whose
// receive CQ has one.
class DbRecordRc : public ::testing::Test {
  protected:
    void SetUp() override {
        sa = make_side(a, 1 << 16, 6);
        pd = b.create_pd();
        buf = b.alloc(1 << 16);
        key = b.reg_mr(pd, buf, 1 << 16, OHCA_ACCESS_LOCAL_WRITE | kRemote);
        scq = b.create_cq(6);
        rq_rec = b.alloc(8, 8);
        cq_rec = b.alloc(8, 8);
        ASSERT_EQ(create_cq(b, rcq, 2, cq_rec).status, OHCA_STATUS_OK);
        ASSERT_EQ(create_qp(b, qb, pd, scq.cqn, rcq.cqn, 3, rq_rec).status, OHCA_STATUS_OK);
        a.connect(sa.qp, qb.qpn, b, 3, 14, 7, 7, kRemote, 4);
        b.connect(qb, sa.qp.qpn, a, 3, 14, 7, 7, kRemote, 4);
    }
    // A receive WQE and the record; as the provider does, the doorbell too
    // when every receive posted before was completed and polled (the
    // device may have advertised zero credits), unless 'record_only'.
    void post_recv_record(uint64_t wr_id, bool record_only = false) {
        const bool was_empty = qb.rq_pi == rq_polled;
        b.put_recv_wqe(qb.rq + uint64_t{qb.rq_pi % qb.rq_size} * qb.rq_stride, wr_id,
                       {{buf + 256 * (wr_id % 64), 256, key}});
        ++qb.rq_pi;
        set_record(b, rq_rec, qb.rq_pi);
        if (was_empty && !record_only) {
            ohca_engine_db_write(b.e, qb.uar, OHCA_DB_RQ, OHCA_DB_VALUE(qb.qpn, qb.rq_pi), 8);
        }
    }
    void send(uint64_t wr_id) {
        SendReq s;
        s.wr_id = wr_id;
        s.sges = {{sa.buf, 64, sa.key}};
        a.post_send(sa.qp, s);
        pump(a, b);
    }
    // The receive CQ's entries, the consumer index returned by the
    // record only.
    std::vector<ohca_cqe> poll_record() {
        std::vector<ohca_cqe> v;
        while (true) {
            const auto c = b.host.get<ohca_cqe>(rcq.ring + 32ull * (rcq.ci & (rcq.size - 1)));
            const uint8_t want = ((rcq.ci / rcq.size) & 1) == 0 ? OHCA_CQE_OWNER : 0;
            if ((c.owner & OHCA_CQE_OWNER) != want) {
                break;
            }
            v.push_back(c);
            ++rcq.ci;
            ++rq_polled; // the receive CQ is qb's alone
        }
        set_record(b, cq_rec, rcq.ci & OHCA_DB_CQ_CI_MASK);
        return v;
    }
    RdmaNode a{1};
    RdmaNode b{2};
    Side sa;
    uint32_t pd = 0;
    uint64_t buf = 0;
    uint32_t key = 0;
    CqInfo scq, rcq;
    QpInfo qb;
    uint64_t rq_rec = 0;
    uint64_t cq_rec = 0;
    uint32_t rq_polled = 0; // receive completions polled, as the provider counts
};

// Receives posted through the record only are found when a SEND needs
// one; the 4-entry receive CQ wraps many times with its consumer index
// returned through its record only (no CQ doorbell at all).
TEST_F(DbRecordRc, RecordDrivenRqAndCq) {
    uint64_t got = 0;
    post_recv_record(100); // one spare: every later post goes to the record alone
    for (uint64_t i = 0; i < 40; ++i) {
        post_recv_record(101 + i);
        send(i);
        const auto v = poll_record();
        ASSERT_EQ(v.size(), 1u) << i;
        EXPECT_EQ(v[0].status, OHCA_CQE_SUCCESS);
        EXPECT_EQ(v[0].wr_id, 100 + i);
        got += v.size();
    }
    EXPECT_EQ(got, 40u);
    EXPECT_EQ(b.stats().db_errors, 0u);
    // Every SEND completed at the sender without an RNR NAK's delay.
    EXPECT_EQ(a.poll(sa.scq).size(), 40u);
}

// The responder's ACKs advertise the receives the record holds (real
// credits, not "invalid"), read when the ACK is built. A post into an RQ
// seen empty rings the doorbell too, whose credit update releases a
// waiting requester at once; after a record-only post the requester's
// ACK request one RTO later finds the record moved. No RNR NAK either way.
TEST_F(DbRecordRc, CreditsComeFromTheRecord) {
    for (uint64_t i = 0; i < 3; ++i) {
        post_recv_record(40 + i);
    }
    std::vector<uint8_t> syndromes;
    auto acks = [&](bool from_a, std::vector<uint8_t> &f) {
        ParsedPacket p;
        if (!from_a && parse_roce_frame(f, p) == ParseError::None && p.fields.aeth) {
            syndromes.push_back(p.fields.aeth->syndrome);
        }
        return false;
    };
    SendReq s;
    s.sges = {{sa.buf, 64, sa.key}};
    a.post_send(sa.qp, s);
    pump(a, b, acks);
    EXPECT_EQ(poll_record().size(), 1u);
    ASSERT_FALSE(syndromes.empty());
    EXPECT_EQ(syndromes.back(), kAethAck | credits::code_for(2)); // 3 posted, 1 used
    for (uint64_t i = 1; i < 4; ++i) {                            // one more than the 2 credits
        s.wr_id = i;
        a.post_send(sa.qp, s);
    }
    pump(a, b, acks);
    EXPECT_EQ(poll_record().size(), 2u);
    EXPECT_EQ(syndromes.back(), kAethAck | credits::code_for(0));
    post_recv_record(50); // into an empty RQ: the doorbell too
    pump(a, b, acks);
    EXPECT_EQ(b.stats().rc_rnr_naks_sent, 0u);
    EXPECT_EQ(a.stats().rc_credit_timeouts, 0u);
    post_recv_record(51); // 50 used, not yet polled: the record alone
    s.wr_id = 5;
    a.post_send(sa.qp, s);
    pump(a, b, acks);
    EXPECT_EQ(poll_record().size(), 1u); // 50's
    a.host.now += 1'000'000'000;         // the requester's credit wait: its ACK request
    pump(a, b, acks);
    EXPECT_EQ(poll_record().size(), 1u); // 51's
    EXPECT_EQ(b.stats().rc_rnr_naks_sent, 0u);
    EXPECT_GE(a.stats().rc_credit_timeouts, 1u);
}

// Without a receive posted, a SEND (the first: no credits known yet) gets
// an RNR NAK; once the record has one, the retry lands (no doorbell).
TEST_F(DbRecordRc, RnrUntilTheRecordMoves) {
    send(1);
    EXPECT_TRUE(poll_record().empty());
    post_recv_record(7, true);
    a.host.now += 1'000'000'000; // past any RNR timer
    pump(a, b);
    const auto v = poll_record();
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].wr_id, 7u);
    EXPECT_EQ(v[0].status, OHCA_CQE_SUCCESS);
}

// Hostile records: an index more than the ring ahead of the consumer, or
// behind what the device already saw, is ignored (no WQE taken, no stray
// CQE); the queue goes on once the record is sane again.
TEST_F(DbRecordRc, HostileRqRecordIgnored) {
    set_record(b, rq_rec, qb.rq_size + 1); // beyond the ring
    send(1);
    EXPECT_TRUE(poll_record().empty());
    post_recv_record(10); // the record says 1 again: sane
    a.host.now += 1'000'000'000;
    pump(a, b);
    auto v = poll_record();
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].wr_id, 10u);
    post_recv_record(11);
    post_recv_record(12);
    send(2); // the device has now seen PI 3
    set_record(b, rq_rec, 1);
    send(3);
    v = poll_record();
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0].wr_id, 11u);
    EXPECT_EQ(v[1].wr_id, 12u);
    EXPECT_TRUE(a.poll(sa.scq).size() >= 2u);
}

// A CQ record that lies (beyond the CQEs written, or 8 MiB ahead) frees no
// slot: the CQ overruns as it would with such a doorbell, and the device
// goes on for everyone else.
TEST_F(DbRecordRc, HostileCqRecordOverruns) {
    for (uint64_t i = 0; i < 4; ++i) {
        post_recv_record(20 + i);
    }
    for (uint64_t i = 0; i < 4; ++i) {
        send(i);
    }
    set_record(b, cq_rec, 0x00800000); // not a consumer index it could have
    post_recv_record(30);
    send(9);
    a.host.now += 1'000'000'000; // zero credits: the ACK request finds 30
    pump(a, b);
    bool overrun = false;
    for (const auto &ev : b.events()) {
        overrun |= ev.type == OHCA_EQE_CQ_ERROR && ev.param0 == rcq.cqn;
    }
    EXPECT_TRUE(overrun);
}

// A refused record value is counted in QUERY_STATS' db_errors, where the
// refused doorbells are (the hostile-guest tests and the driver's counters
// read it): an RQ record beyond the ring, then a CQ record claiming CQEs
// never written. Sane records count nothing.
TEST_F(DbRecordRc, RefusedRecordsCountInDbErrors) {
    EXPECT_EQ(b.stats().db_errors, 0u);
    set_record(b, rq_rec, qb.rq_size + 1);
    send(1); // needs a receive: the record is read and refused
    const uint64_t rq_refused = b.stats().db_errors;
    EXPECT_GE(rq_refused, 1u);
    post_recv_record(10); // sane again: the retry lands, nothing counted
    a.host.now += 1'000'000'000;
    pump(a, b);
    ASSERT_EQ(poll_record().size(), 1u);
    EXPECT_EQ(b.stats().db_errors, rq_refused);
    for (uint64_t i = 0; i < 4; ++i) { // the 4-entry receive CQ full
        post_recv_record(20 + i);
        send(2 + i);
    }
    EXPECT_EQ(b.stats().db_errors, rq_refused);
    set_record(b, cq_rec, (rcq.ci + 5) & OHCA_DB_CQ_CI_MASK); // 5 polled of 4
    post_recv_record(30);
    send(9);
    a.host.now += 1'000'000'000; // zero credits: the ACK request finds 30
    pump(a, b);
    EXPECT_GT(b.stats().db_errors, rq_refused);
}

// The records' addresses migrate with the CQ and the QP.
TEST_F(DbRecordRc, SurvivesSaveAndLoad) {
    post_recv_record(1);
    send(1);
    ASSERT_EQ(poll_record().size(), 1u);
    const std::vector<uint8_t> state = b.save_state();
    b.load_state(state);
    for (uint64_t i = 2; i < 10; ++i) {
        post_recv_record(i);
        send(i);
        const auto v = poll_record();
        ASSERT_EQ(v.size(), 1u) << i;
        EXPECT_EQ(v[0].wr_id, i);
    }
}

// RESIZE_CQ restarts the consumer index at 0 and the device writes that
// into the record itself: the old ring's index left there (3 here) would
// otherwise count as 3 CQEs of the new ring polled until the provider
// writes the record after the command returns, and a CQ filled in that
// window would overwrite entries nobody polled.
TEST_F(DbRecordRc, ResizeRestartsTheRecordWithTheIndex) {
    for (uint64_t i = 0; i < 3; ++i) {
        post_recv_record(i);
        send(i);
        ASSERT_EQ(poll_record().size(), 1u) << i;
    }
    ASSERT_EQ(b.host.get<ohca_db_record>(cq_rec).index, 3u);
    const uint64_t ring = b.alloc(uint64_t{32} * 4);
    ohca_resize_cq_in r{};
    r.cqn = rcq.cqn;
    r.log_size = 2;
    r.pbl = b.make_pbl(ring, uint64_t{32} * 4);
    ohca_resize_cq_out o{};
    ASSERT_EQ(b.cmd(OHCA_CMD_RESIZE_CQ, &r, sizeof(r), &o, sizeof(o)).status, OHCA_STATUS_OK);
    EXPECT_EQ(o.cqes, 0u);
    EXPECT_EQ(b.host.get<ohca_db_record>(cq_rec).index, 0u);
    // Nothing polled from the new ring: its fifth CQE overruns the CQ and
    // the first four stay as written.
    rcq.ring = ring;
    rcq.ci = 0;
    for (uint64_t i = 10; i < 15; ++i) {
        post_recv_record(i);
        send(i);
        a.host.now += 1'000'000'000;
        pump(a, b);
    }
    bool overrun = false;
    for (const auto &ev : b.events()) {
        overrun |= ev.type == OHCA_EQE_CQ_ERROR && ev.param0 == rcq.cqn;
    }
    EXPECT_TRUE(overrun);
    EXPECT_EQ(b.host.get<ohca_cqe>(ring).wr_id, 10u);
}

// A QP that goes to ERR flushes the receives its record holds.
TEST_F(DbRecordRc, FlushReadsTheRecord) {
    post_recv_record(41);
    post_recv_record(42);
    ohca_qp_attr attr{};
    attr.qp_state = OHCA_QPS_ERR;
    ASSERT_EQ(b.modify(qb.qpn, OHCA_QP_STATE, attr).status, OHCA_STATUS_OK);
    b.process();
    const auto v = poll_record();
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0].status, OHCA_CQE_WR_FLUSH_ERR);
    EXPECT_EQ(v[1].wr_id, 42u);
}

} // namespace
} // namespace ohca::test
