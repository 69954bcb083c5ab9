// SPDX-License-Identifier: GPL-2.0-or-later
// An SRQ's doorbell record (OHCA_DEV_CAP_SRQ_DB_RECORD, objects/srq.cpp):
// CREATE_SRQ with and without one (the input of ABI 1.6 still works),
// receives the device learns of only from the record (a basic SRQ under
// an RC QP, an XRC SRQ), hostile record values (ignored, counted in
// db_errors), the SRQ limit against a record that runs ahead of the
// device's count, QUERY_SRQ, migration and the older SRQ section.
#include "engine_state.hpp"
#include "rdma_node.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>

namespace ohca::test {
namespace {

struct SrqSpec {
    unsigned int log = 3;
    uint32_t limit = 0;
    uint64_t record = 0;
    uint16_t in_len = sizeof(ohca_create_srq_in);
    uint8_t type = OHCA_SRQT_BASIC;
    uint32_t xrcdn = 0;
    uint32_t cqn = 0;
};

// CREATE_SRQ as 'spec' says; srq.srqn is 0 when it failed.
CmdOutcome create_srq(RdmaNode &n, uint32_t pd, const SrqSpec &spec, SrqInfo &srq) {
    srq.size = 1u << spec.log;
    srq.ring = n.alloc(uint64_t{srq.size} * srq.stride);
    ohca_create_srq_in in{};
    in.pdn = pd;
    in.log_size = static_cast<uint8_t>(spec.log);
    in.log_stride = 6;
    in.limit = spec.limit;
    in.type = spec.type;
    in.xrcdn = spec.xrcdn;
    in.cqn = spec.cqn;
    in.pbl = n.make_pbl(srq.ring, uint64_t{srq.size} * srq.stride);
    in.db_record = spec.record;
    ohca_create_out o{};
    const CmdOutcome r = n.cmd(OHCA_CMD_CREATE_SRQ, &in, spec.in_len, &o, sizeof(o));
    srq.srqn = r.status == OHCA_STATUS_OK ? o.handle : 0;
    return r;
}

void set_record(RdmaNode &n, uint64_t record, uint32_t index) {
    ohca_db_record r{};
    r.index = index;
    n.host.put(record, r);
}

ohca_query_srq_out query_srq(RdmaNode &n, uint32_t srqn) {
    ohca_handle_in h{};
    h.handle = srqn;
    ohca_query_srq_out out{};
    EXPECT_EQ(n.cmd(OHCA_CMD_QUERY_SRQ, &h, sizeof(h), &out, sizeof(out)).status, OHCA_STATUS_OK);
    return out;
}

int limit_events(RdmaNode &n, uint32_t srqn) {
    int k = 0;
    for (const auto &ev : n.events()) {
        k += ev.type == OHCA_EQE_SRQ_EVENT && ev.code == OHCA_SRQ_EV_LIMIT_REACHED &&
                     ev.param0 == srqn
                 ? 1
                 : 0;
    }
    return k;
}

TEST(DbRecordSrqCommands, AdvertisedBothInputSizesAndBadRecords) {
    RdmaNode n(1);
    ohca_query_device_out dev{};
    ASSERT_EQ(n.cmd(OHCA_CMD_QUERY_DEVICE, nullptr, 0, &dev, sizeof(dev)).status, OHCA_STATUS_OK);
    EXPECT_NE(dev.dev_caps & OHCA_DEV_CAP_SRQ_DB_RECORD, 0u);
    const uint32_t pd = n.create_pd();
    SrqInfo s;
    SrqSpec spec;
    spec.in_len = OHCA_CREATE_SRQ_IN_V1_SIZE; // a driver of ABI 1.6
    EXPECT_EQ(create_srq(n, pd, spec, s).status, OHCA_STATUS_OK);
    spec.in_len = sizeof(ohca_create_srq_in);
    spec.record = n.alloc(8, 8);
    EXPECT_EQ(create_srq(n, pd, spec, s).status, OHCA_STATUS_OK);
    spec.in_len = OHCA_CREATE_SRQ_IN_V1_SIZE + 4;
    CmdOutcome r = create_srq(n, pd, spec, s);
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_LEN);
    EXPECT_EQ(r.syndrome, OHCA_CREATE_SRQ_IN_V1_SIZE);
    spec.in_len = sizeof(ohca_create_srq_in);
    for (const uint64_t bad : {n.alloc(8, 8) + 4, uint64_t{UINT64_MAX - 7}}) {
        spec.record = bad;
        r = create_srq(n, pd, spec, s);
        EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD) << bad;
        EXPECT_EQ(r.syndrome, offsetof(ohca_create_srq_in, db_record)) << bad;
    }
}

// a sends over RC; b's QP takes its receives from an SRQ of 8 WQEs with a
// record, which is all b writes when it posts (no OHCA_DB_SRQ doorbell).
class DbRecordSrq : public ::testing::Test {
  protected:
    void SetUp() override {
        sa = make_side(a, 1 << 16, 6);
        pd = b.create_pd();
        buf = b.alloc(1 << 16);
        key =
            b.reg_mr(pd, buf, 1 << 16,
                     OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_READ);
        scq = b.create_cq(6);
        rcq = b.create_cq(7);
        rec = b.alloc(8, 8);
        spec.record = rec;
        spec.log = log;
        spec.limit = limit;
        ASSERT_EQ(create_srq(b, pd, spec, srq).status, OHCA_STATUS_OK);
        qb = b.create_qp_on_srq(pd, scq.cqn, rcq.cqn, srq.srqn);
        a.connect(sa.qp, qb.qpn, b);
        b.connect(qb, sa.qp.qpn, a);
    }
    // A receive WQE and the record only, or the doorbell too.
    void post(uint64_t wr_id, bool ring = false) {
        b.put_recv_wqe(srq.ring + uint64_t{srq.pi % srq.size} * srq.stride, wr_id,
                       {{buf + 256 * (wr_id % 64), 256, key}});
        ++srq.pi;
        set_record(b, rec, srq.pi);
        if (ring) {
            ohca_engine_db_write(b.e, srq.uar, OHCA_DB_SRQ, OHCA_DB_VALUE(srq.srqn, srq.pi), 8);
        }
    }
    void send(uint64_t wr_id) {
        SendReq s;
        s.wr_id = wr_id;
        s.sges = {{sa.buf, 64, sa.key}};
        a.post_send(sa.qp, s);
        pump(a, b);
    }
    // Past any RNR timer: the requester sends again.
    void later() {
        a.host.now += 1'000'000'000;
        pump(a, b);
    }
    unsigned int log = 3;
    uint32_t limit = 0;
    RdmaNode a{1};
    RdmaNode b{2};
    Side sa;
    uint32_t pd = 0;
    uint64_t buf = 0;
    uint32_t key = 0;
    CqInfo scq, rcq;
    SrqSpec spec;
    SrqInfo srq;
    QpInfo qb;
    uint64_t rec = 0;
};

// Receives posted through the record only are found when a SEND needs
// one, over five wraps of the 8-WQE ring; a doorbell now and then beside
// the record changes nothing. No RNR NAK, nothing refused.
TEST_F(DbRecordSrq, RecordDrivenReceives) {
    post(100);
    for (uint64_t i = 0; i < 40; ++i) {
        post(101 + i, i % 7 == 3);
        send(i);
        const auto v = b.poll(rcq);
        ASSERT_EQ(v.size(), 1u) << i;
        EXPECT_EQ(v[0].status, OHCA_CQE_SUCCESS);
        EXPECT_EQ(v[0].wr_id, 100 + i);
    }
    EXPECT_EQ(a.poll(sa.scq).size(), 40u);
    EXPECT_EQ(b.stats().rc_rnr_naks_sent, 0u);
    EXPECT_EQ(b.stats().db_errors, 0u);
}

// An empty SRQ answers RNR NAK; once the record holds a WQE the retry
// lands, with no doorbell.
TEST_F(DbRecordSrq, RnrUntilTheRecordMoves) {
    send(1);
    EXPECT_TRUE(b.poll(rcq).empty());
    EXPECT_GE(b.stats().rc_rnr_naks_sent, 1u);
    post(7);
    later();
    const auto v = b.poll(rcq);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].wr_id, 7u);
    EXPECT_EQ(v[0].status, OHCA_CQE_SUCCESS);
}

// Hostile records: an index more than the ring ahead of the consumer,
// one behind what the device saw, a record it cannot read. Each is
// ignored and counted in db_errors (no WQE taken, no stray CQE), and the
// SRQ goes on with what the device knew once the record is sane.
TEST_F(DbRecordSrq, HostileRecordsIgnoredAndCounted) {
    set_record(b, rec, srq.size + 1); // beyond the ring
    send(1);
    EXPECT_TRUE(b.poll(rcq).empty());
    uint64_t refused = b.stats().db_errors;
    EXPECT_GE(refused, 1u);
    post(10); // the record says 1: sane
    later();
    auto v = b.poll(rcq);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].wr_id, 10u);
    EXPECT_EQ(b.stats().db_errors, refused);
    post(11);
    post(12);
    send(2); // the device reads PI 3
    send(3);
    EXPECT_EQ(b.poll(rcq).size(), 2u);
    set_record(b, rec, 1); // behind the device's copy
    send(4);
    EXPECT_TRUE(b.poll(rcq).empty());
    EXPECT_GT(b.stats().db_errors, refused);
    refused = b.stats().db_errors;
    post(13);
    later();
    v = b.poll(rcq);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].wr_id, 13u);
    b.host.set_hole(rec, rec + 8); // a record the device cannot read
    post(14);
    send(5);
    EXPECT_TRUE(b.poll(rcq).empty());
    EXPECT_GT(b.stats().db_errors, refused);
    b.host.clear_hole();
    later();
    v = b.poll(rcq);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].wr_id, 14u);
    EXPECT_EQ(a.poll(sa.scq).size(), 5u);
}

// QUERY_SRQ counts the WQEs posted through the record.
TEST_F(DbRecordSrq, QueryReadsTheRecord) {
    for (uint64_t i = 0; i < 5; ++i) {
        post(i);
    }
    EXPECT_EQ(query_srq(b, srq.srqn).wqes, 5u);
    send(0);
    EXPECT_EQ(query_srq(b, srq.srqn).wqes, 4u);
}

// The record's address migrates with the SRQ.
TEST_F(DbRecordSrq, SurvivesSaveAndLoad) {
    post(1);
    send(1);
    ASSERT_EQ(b.poll(rcq).size(), 1u);
    b.load_state(b.save_state());
    for (uint64_t i = 2; i < 12; ++i) {
        post(i);
        send(i);
        const auto v = b.poll(rcq);
        ASSERT_EQ(v.size(), 1u) << i;
        EXPECT_EQ(v[0].wr_id, i);
    }
    EXPECT_EQ(b.stats().rc_rnr_naks_sent, 0u);
}

// An SRQ section of version 1 (an engine before SRQ records: the same
// without the records after the SRQs) loads; its SRQ has no record, so
// it learns of WQEs by the doorbell again.
TEST_F(DbRecordSrq, AVersion1SectionLoads) {
    post(1);
    send(1);
    ASSERT_EQ(b.poll(rcq).size(), 1u);
    std::vector<uint8_t> s = b.save_state();
    const StateSection sec = state_section(s, "SRQ ");
    ASSERT_GE(sec.len, 12u);
    uint64_t saved = 0;
    std::memcpy(&saved, s.data() + sec.body + sec.len - 12, 8);
    ASSERT_EQ(saved, rec); // the one SRQ's record, then its refused count
    s.erase(s.begin() + static_cast<std::ptrdiff_t>(sec.body + sec.len - 12),
            s.begin() + static_cast<std::ptrdiff_t>(sec.body + sec.len));
    const uint16_t version = 1;
    const auto len = static_cast<uint32_t>(sec.len - 12);
    std::memcpy(s.data() + sec.at + 4, &version, 2);
    std::memcpy(s.data() + sec.at + 6, &len, 4);
    reseal_state(s);
    b.load_state(s);
    post(2); // the record alone: not read any more
    send(2);
    EXPECT_TRUE(b.poll(rcq).empty());
    ohca_engine_db_write(b.e, srq.uar, OHCA_DB_SRQ, OHCA_DB_VALUE(srq.srqn, srq.pi), 8);
    later();
    const auto v = b.poll(rcq);
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].wr_id, 2u);
    const std::vector<uint8_t> again = b.save_state();
    const StateSection sec2 = state_section(again, "SRQ ");
    std::memcpy(&saved, again.data() + sec2.body + sec2.len - 12, 8);
    EXPECT_EQ(saved, 0u);
}

// The limit (4 of 16) against a record that runs ahead of the device's
// count: WQEs posted through the record while the device's count falls
// below the limit do not fire it; it fires once, when the WQEs the
// consumer posted and the device has not taken drop below 4.
class DbRecordSrqLimit : public DbRecordSrq {
  protected:
    DbRecordSrqLimit() {
        log = 4;
        limit = 4;
    }
};

TEST_F(DbRecordSrqLimit, FiresOnTheConsumersCount) {
    uint64_t wr = 0;
    for (int i = 0; i < 8; ++i) {
        post(wr++);
    }
    send(0); // the device reads the record: 8 posted, 7 left
    EXPECT_EQ(limit_events(b, srq.srqn), 0);
    for (int i = 0; i < 8; ++i) {
        post(wr++); // 15 left; the device knows of 7
    }
    uint64_t sent = 1;
    for (; sent < 12; ++sent) { // 14 .. 4 left
        send(sent);
        EXPECT_EQ(limit_events(b, srq.srqn), 0) << sent;
    }
    EXPECT_EQ(query_srq(b, srq.srqn).limit, 4u);
    send(sent++); // 3 left: below 4
    EXPECT_EQ(limit_events(b, srq.srqn), 1);
    EXPECT_EQ(query_srq(b, srq.srqn).limit, 0u);
    send(sent++);
    EXPECT_EQ(limit_events(b, srq.srqn), 0);
    EXPECT_EQ(b.poll(rcq).size(), sent);
    EXPECT_EQ(b.stats().db_errors, 0u);
}

// An XRC SRQ with a record: the target QP borrows it per request and
// finds the WQEs posted through the record.
TEST(DbRecordXrcSrq, RecordDrivenReceives) {
    RdmaNode a{1};
    RdmaNode b{2};
    const uint32_t apd = a.create_pd();
    CqInfo ascq = a.create_cq(8);
    QpInfo ini = a.create_xrc_ini(apd, ascq.cqn);
    const uint64_t abuf = a.alloc(1 << 12);
    const uint32_t akey = a.reg_mr(apd, abuf, 1 << 12, OHCA_ACCESS_LOCAL_WRITE);
    const uint32_t bpd = b.create_pd();
    const uint32_t xd = b.alloc_xrcd();
    CqInfo cq = b.create_cq(7);
    const uint64_t bbuf = b.alloc(1 << 12);
    const uint32_t bkey = b.reg_mr(bpd, bbuf, 1 << 12, OHCA_ACCESS_LOCAL_WRITE);
    SrqSpec spec;
    spec.type = OHCA_SRQT_XRC;
    spec.xrcdn = xd;
    spec.cqn = cq.cqn;
    spec.record = b.alloc(8, 8);
    SrqInfo srq;
    ASSERT_EQ(create_srq(b, bpd, spec, srq).status, OHCA_STATUS_OK);
    QpInfo tgt = b.create_xrc_tgt(xd);
    a.connect(ini, tgt.qpn, b);
    b.connect(tgt, ini.qpn, a);
    for (uint64_t i = 0; i < 20; ++i) {
        b.put_recv_wqe(srq.ring + uint64_t{srq.pi % srq.size} * srq.stride, 900 + i,
                       {{bbuf, 1 << 12, bkey}});
        ++srq.pi;
        set_record(b, spec.record, srq.pi);
        SendReq r;
        r.wr_id = i;
        r.xrc_srqn = srq.srqn;
        r.sges = {{abuf, 100, akey}};
        a.post_send(ini, r);
        pump(a, b);
        const auto v = b.poll(cq);
        ASSERT_EQ(v.size(), 1u) << i;
        EXPECT_EQ(v[0].status, OHCA_CQE_SUCCESS);
        EXPECT_EQ(v[0].wr_id, 900 + i);
        EXPECT_EQ(v[0].src_qp, srq.srqn);
    }
    EXPECT_EQ(a.poll(ascq).size(), 20u);
    EXPECT_EQ(b.stats().rc_rnr_naks_sent, 0u);
    EXPECT_EQ(b.stats().db_errors, 0u);
}

} // namespace
} // namespace ohca::test
