// SPDX-License-Identifier: GPL-2.0-or-later
// XRC (xrc.cpp) on the fake wire between two devices: the XRC wire format
// (0xa0 opcode prefix, XRCETH after the BTH on requests only), SENDs
// steered by the XRCETH to XRC SRQs of the target's domain with their
// completions on each SRQ's own CQ, RDMA WRITE/READ and atomics checked
// against the SRQ's PD, NAK Invalid Request for an SRQ of another domain
// or a basic SRQ, and the commands' checks (domains, limits, the fields of
// XRC QPs and SRQs, references).
#include "device/device.hpp"
#include "link/roce_packet.hpp"
#include "link/roce_v2.hpp"
#include "rdma_node.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace ohca::test {
namespace {

constexpr uint32_t kBuf = 1 << 16;

TEST(XrcWire, XrcEthFollowsTheBthOnRequestsOnly) {
    PacketPath path;
    path.sgid[10] = path.sgid[11] = 0xff;
    path.dgid[10] = path.dgid[11] = 0xff;
    PacketFields f;
    f.bth.opcode = xrc::kPrefix | rc::kSendOnly; // 0xa4
    f.bth.dest_qp = 0x123456;
    f.bth.psn = 0x10;
    f.xrceth = 0xabcdef;
    const std::vector<uint8_t> payload{1, 2, 3, 4};
    std::vector<uint8_t> frame = build_roce_frame(path, f, payload);
    const size_t bth = 14 + 20 + 8;
    EXPECT_EQ(frame[bth], 0xa4);
    // XRCETH: reserved byte, then the 24-bit XRC SRQ number (IBTA 9.3.7.1).
    EXPECT_EQ(frame[bth + 12], 0x00);
    EXPECT_EQ(frame[bth + 13], 0xab);
    EXPECT_EQ(frame[bth + 14], 0xcd);
    EXPECT_EQ(frame[bth + 15], 0xef);
    EXPECT_EQ(frame[bth + 16], 1); // payload right behind it
    ParsedPacket p;
    ASSERT_EQ(parse_roce_frame(frame, p), ParseError::None);
    ASSERT_TRUE(p.fields.xrceth.has_value());
    EXPECT_EQ(*p.fields.xrceth, 0xabcdefu);
    EXPECT_EQ(p.payload.size(), 4u);

    // A WRITE: XRCETH before the RETH.
    PacketFields w;
    w.bth.opcode = xrc::kPrefix | rc::kWriteOnly; // 0xaa
    w.xrceth = 7;
    w.reth = Reth{0x1122334455667788ull, 0x99, 4};
    frame = build_roce_frame(path, w, payload);
    EXPECT_EQ(frame[bth], 0xaa);
    EXPECT_EQ(frame[bth + 15], 7);
    EXPECT_EQ(frame[bth + 16], 0x11); // RETH VA
    ASSERT_EQ(parse_roce_frame(frame, p), ParseError::None);
    EXPECT_EQ(p.fields.reth->va, 0x1122334455667788ull);
    EXPECT_EQ(*p.fields.xrceth, 7u);

    // The ACK (0xb1) has an AETH and no XRCETH.
    PacketFields ack;
    ack.bth.opcode = xrc::kPrefix | rc::kAck;
    ack.aeth = Aeth{0x1f, 5};
    frame = build_roce_frame(path, ack, {});
    EXPECT_EQ(frame[bth], 0xb1);
    EXPECT_EQ(frame.size(), bth + 12 + 4 + 4u); // BTH, AETH, ICRC
    ASSERT_EQ(parse_roce_frame(frame, p), ParseError::None);
    EXPECT_FALSE(p.fields.xrceth.has_value());
    EXPECT_EQ(p.fields.aeth->msn, 5u);

    // 0xb5 (XRC's reserved 0x15) is no opcode; a truncated XRCETH is malformed.
    std::vector<uint8_t> bad = build_roce_frame(path, f, payload);
    bad[bth] = 0xb5;
    EXPECT_NE(parse_roce_frame(bad, p), ParseError::None);
    PacketFields nopay = f;
    frame = build_roce_frame(path, nopay, {});
    frame[bth] = xrc::kPrefix | rc::kReadRequest; // needs XRCETH + RETH: 20 bytes
    EXPECT_NE(parse_roce_frame(frame, p), ParseError::None);
}

class XrcTest : public ::testing::Test {
  protected:
    void SetUp() override {
        // A: the initiator.
        apd = a.create_pd();
        ascq = a.create_cq(8);
        ini = a.create_xrc_ini(apd, ascq.cqn);
        abuf = a.alloc(kBuf);
        akey = a.reg_mr(apd, abuf, kBuf, OHCA_ACCESS_LOCAL_WRITE);
        for (uint32_t k = 0; k < kBuf; ++k) {
            a.host.put(abuf + k, static_cast<uint8_t>(k * 7 + 3));
        }
        // B: domain 1 with two SRQs (own CQs), domain 2 with one, a basic
        // SRQ, and the target QP of domain 1.
        bpd = b.create_pd();
        d1 = b.alloc_xrcd();
        d2 = b.alloc_xrcd();
        cq1 = b.create_cq(8);
        cq2 = b.create_cq(8);
        cq3 = b.create_cq(8);
        srq1 = b.create_xrc_srq(bpd, d1, cq1.cqn);
        srq2 = b.create_xrc_srq(bpd, d1, cq2.cqn);
        other = b.create_xrc_srq(bpd, d2, cq3.cqn);
        basic = b.create_srq(bpd);
        tgt = b.create_xrc_tgt(d1);
        bbuf = b.alloc(kBuf);
        bkey = b.reg_mr(bpd, bbuf, kBuf,
                        OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_WRITE |
                            OHCA_ACCESS_REMOTE_READ | OHCA_ACCESS_REMOTE_ATOMIC);
        a.connect(ini, tgt.qpn, b);
        b.connect(tgt, ini.qpn, a, 3, 14, 7, 7,
                  OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_READ | OHCA_ACCESS_REMOTE_ATOMIC);
    }

    void send(uint32_t srqn, uint32_t off, uint32_t len, uint64_t wr_id) {
        SendReq r;
        r.wr_id = wr_id;
        r.xrc_srqn = srqn;
        r.sges = {{abuf + off, len, akey}};
        a.post_send(ini, r);
    }
    void wire() {
        pump(a, b, [&](bool from_a, const std::vector<uint8_t> &f) {
            ParsedPacket p;
            EXPECT_EQ(parse_roce_frame(f, p), ParseError::None);
            (from_a ? a_ops : b_ops).push_back(p.fields.bth.opcode);
            if (from_a) {
                a_xrceth.push_back(p.fields.xrceth.value_or(0));
            }
            return false;
        });
    }
    bool same(uint64_t boff, uint64_t aoff, uint32_t len) {
        for (uint32_t k = 0; k < len; ++k) {
            if (b.host.get<uint8_t>(bbuf + boff + k) != static_cast<uint8_t>((aoff + k) * 7 + 3)) {
                return false;
            }
        }
        return true;
    }

    RdmaNode a{1};
    RdmaNode b{2};
    uint32_t apd = 0, akey = 0, bpd = 0, bkey = 0, d1 = 0, d2 = 0;
    uint64_t abuf = 0, bbuf = 0;
    CqInfo ascq, cq1, cq2, cq3;
    QpInfo ini, tgt;
    SrqInfo srq1, srq2, other, basic;
    std::vector<uint8_t> a_ops, b_ops;
    std::vector<uint32_t> a_xrceth;
};

TEST_F(XrcTest, SendsGoToTheSrqTheXrcEthNames) {
    b.post_srq_recv(srq1, 11, {{bbuf, 4096, bkey}});
    b.post_srq_recv(srq2, 22, {{bbuf + 8192, 4096, bkey}});
    send(srq2.srqn, 0, 3000, 1); // three packets at 1024
    send(srq1.srqn, 100, 500, 2);
    wire();
    const auto s = a.poll(ascq);
    ASSERT_EQ(s.size(), 2u);
    EXPECT_EQ(s[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(s[1].status, OHCA_CQE_SUCCESS);
    const auto c1 = b.poll(cq1);
    const auto c2 = b.poll(cq2);
    ASSERT_EQ(c1.size(), 1u);
    ASSERT_EQ(c2.size(), 1u);
    EXPECT_EQ(c2[0].wr_id, 22u);
    EXPECT_EQ(c2[0].byte_len, 3000u);
    EXPECT_EQ(c2[0].qpn, tgt.qpn);
    EXPECT_EQ(c2[0].src_qp, srq2.srqn);
    EXPECT_NE(c2[0].flags & OHCA_CQE_F_XRC, 0);
    EXPECT_EQ(c2[0].opcode, OHCA_CQE_RECV);
    EXPECT_EQ(c1[0].wr_id, 11u);
    EXPECT_EQ(c1[0].byte_len, 500u);
    EXPECT_EQ(c1[0].src_qp, srq1.srqn);
    EXPECT_TRUE(same(8192, 0, 3000));
    EXPECT_TRUE(same(0, 100, 500));
    // On the wire: SEND FIRST/MIDDLE/LAST then ONLY, XRC opcodes, each
    // with its XRCETH; the target answers with XRC ACKs.
    const std::vector<uint8_t> want{0xa0, 0xa1, 0xa2, 0xa4};
    EXPECT_EQ(a_ops, want);
    const std::vector<uint32_t> srqs{srq2.srqn, srq2.srqn, srq2.srqn, srq1.srqn};
    EXPECT_EQ(a_xrceth, srqs);
    ASSERT_FALSE(b_ops.empty());
    for (uint8_t op : b_ops) {
        EXPECT_EQ(op, 0xb1);
    }
    EXPECT_TRUE(b.poll(cq3).empty());
}

TEST_F(XrcTest, WriteReadAndAtomicsUseTheSrqsPd) {
    SendReq w;
    w.opcode = OHCA_WR_RDMA_WRITE;
    w.xrc_srqn = srq1.srqn;
    w.remote_addr = bbuf + 4096;
    w.rkey = bkey;
    w.sges = {{abuf, 2000, akey}};
    a.post_send(ini, w);
    SendReq r;
    r.wr_id = 2;
    r.opcode = OHCA_WR_RDMA_READ;
    r.xrc_srqn = srq1.srqn;
    r.remote_addr = bbuf + 4096;
    r.rkey = bkey;
    const uint32_t rkey_local = a.reg_mr(apd, abuf + 32768, 4096, OHCA_ACCESS_LOCAL_WRITE);
    r.sges = {{abuf + 32768, 2000, rkey_local}};
    a.post_send(ini, r);
    b.host.put<uint64_t>(bbuf + 16, 40);
    SendReq f;
    f.wr_id = 3;
    f.opcode = OHCA_WR_ATOMIC_FETCH_ADD;
    f.xrc_srqn = srq2.srqn;
    f.remote_addr = bbuf + 16;
    f.rkey = bkey;
    f.cmp_add = 2;
    f.sges = {{abuf + 40000, 8, akey}};
    a.post_send(ini, f);
    wire();
    const auto s = a.poll(ascq);
    ASSERT_EQ(s.size(), 3u);
    for (const auto &c : s) {
        EXPECT_EQ(c.status, OHCA_CQE_SUCCESS) << c.wr_id;
    }
    EXPECT_TRUE(same(4096, 0, 2000));
    for (uint32_t k = 0; k < 2000; ++k) {
        ASSERT_EQ(a.host.get<uint8_t>(abuf + 32768 + k), static_cast<uint8_t>(k * 7 + 3));
    }
    EXPECT_EQ(b.host.get<uint64_t>(bbuf + 16), 42u);
    EXPECT_EQ(a.host.get<uint64_t>(abuf + 40000), 40u);
    // READ responses and the atomic ACK carry XRC opcodes too.
    EXPECT_NE(std::find(b_ops.begin(), b_ops.end(), 0xad), b_ops.end()); // READ RESPONSE FIRST
    EXPECT_NE(std::find(b_ops.begin(), b_ops.end(), 0xaf), b_ops.end()); // READ RESPONSE LAST
    EXPECT_NE(std::find(b_ops.begin(), b_ops.end(), 0xb2), b_ops.end()); // ATOMIC ACK
    EXPECT_TRUE(b.poll(cq1).empty());                                    // no receive consumed
}

TEST_F(XrcTest, AnSrqOfAnotherDomainIsNakedInvalidRequest) {
    b.post_srq_recv(other, 1, {{bbuf, 4096, bkey}});
    send(other.srqn, 0, 100, 7);
    wire();
    auto s = a.poll(ascq);
    ASSERT_EQ(s.size(), 1u);
    EXPECT_EQ(s[0].status, OHCA_CQE_REM_INV_REQ_ERR);
    EXPECT_TRUE(b.poll(cq3).empty()); // its WQE was not taken
    EXPECT_EQ(b.query(tgt.qpn).qp_state, OHCA_QPS_ERR);
    EXPECT_EQ(device_of(b.e).roce_counters().xrc_bad_srq, 1u);
    bool req_err = false;
    for (const auto &ev : b.events()) {
        req_err = req_err || (ev.type == OHCA_EQE_QP_EVENT && ev.code == OHCA_QP_EV_REQ_ERR &&
                              ev.param0 == tgt.qpn);
    }
    EXPECT_TRUE(req_err);
}

TEST_F(XrcTest, ABasicSrqOrNoSrqIsNakedInvalidRequest) {
    for (uint32_t srqn : {basic.srqn, 200u}) {
        b.post_srq_recv(basic, 1, {{bbuf, 4096, bkey}});
        send(srqn, 0, 100, 7);
        wire();
        auto s = a.poll(ascq);
        ASSERT_EQ(s.size(), 1u);
        EXPECT_EQ(s[0].status, OHCA_CQE_REM_INV_REQ_ERR);
        // Start over: both QPs back through RESET.
        ohca_qp_attr x{};
        x.qp_state = OHCA_QPS_RESET;
        ASSERT_EQ(a.modify(ini.qpn, OHCA_QP_STATE, x).status, OHCA_STATUS_OK);
        ASSERT_EQ(b.modify(tgt.qpn, OHCA_QP_STATE, x).status, OHCA_STATUS_OK);
        ini.sq_pi = 0;
        a.psn_base += 1000;
        b.psn_base += 1000;
        a.connect(ini, tgt.qpn, b);
        b.connect(tgt, ini.qpn, a);
    }
}

TEST_F(XrcTest, AnInitiatorWqeMustNameAnSrq) {
    send(0, 0, 10, 5);
    wire();
    const auto s = a.poll(ascq);
    ASSERT_EQ(s.size(), 1u);
    EXPECT_EQ(s[0].status, OHCA_CQE_LOC_QP_OP_ERR);
    EXPECT_EQ(s[0].vendor_err, OHCA_VERR_BAD_WQE);
    EXPECT_TRUE(a_ops.empty());
}

TEST_F(XrcTest, TargetHasNoQueuesToRing) {
    const uint64_t errs = b.stats().db_errors;
    ohca_engine_db_write(b.e, 0, OHCA_DB_SQ, OHCA_DB_VALUE(tgt.qpn, 1), 8);
    ohca_engine_db_write(b.e, 0, OHCA_DB_RQ, OHCA_DB_VALUE(tgt.qpn, 1), 8);
    ohca_engine_db_write(a.e, 0, OHCA_DB_RQ, OHCA_DB_VALUE(ini.qpn, 1), 8);
    EXPECT_EQ(b.stats().db_errors, errs + 2);
    EXPECT_EQ(a.stats().db_errors, 1u);
}

// Audit N1: a target QP in the middle of a SEND holds a receive WQE of
// the SRQ the message names (borrowing its PD and CQ too). Destroying that
// SRQ and its CQ, and giving the CQ's number to a new CQ, must not let the
// held WQE (its wr_id chosen by whoever posted it) complete into the new
// CQ when the target is moved to ERR.
TEST_F(XrcTest, AHeldWqeOfADestroyedSrqCompletesIntoNoOtherCq) {
    constexpr uint64_t kWrId = 0xdeadbeefcafe0000;
    b.post_srq_recv(srq1, kWrId, {{bbuf, 4096, bkey}});
    send(srq1.srqn, 0, 3000, 1); // three packets: only the FIRST arrives
    pump(a, b, [](bool from_a, const std::vector<uint8_t> &f) {
        ParsedPacket p;
        return from_a && (parse_roce_frame(f, p) != ParseError::None ||
                          p.fields.bth.opcode != (xrc::kPrefix | rc::kSendFirst));
    });
    ohca_handle_in h{};
    h.handle = srq1.srqn;
    const uint8_t srq_status = b.cmd_in(OHCA_CMD_DESTROY_SRQ, h).status;
    EXPECT_TRUE(srq_status == OHCA_STATUS_OK || srq_status == OHCA_STATUS_BAD_STATE);
    h.handle = cq1.cqn;
    const uint8_t cq_status = b.cmd_in(OHCA_CMD_DESTROY_CQ, h).status;
    CqInfo victim = b.create_cq(8);
    if (cq_status == OHCA_STATUS_OK) {
        EXPECT_EQ(victim.cqn, cq1.cqn); // the lowest free number: reused
    }
    ohca_qp_attr x{};
    x.qp_state = OHCA_QPS_ERR;
    ASSERT_EQ(b.modify(tgt.qpn, OHCA_QP_STATE, x).status, OHCA_STATUS_OK);
    b.process();
    EXPECT_TRUE(b.poll(victim).empty());
    EXPECT_TRUE(b.poll(cq2).empty());
    EXPECT_TRUE(b.poll(cq3).empty());
}

// The same, with the SRQ's number given to a new XRC SRQ of the same
// domain before the rest of the message arrives: the message does not go
// on into it (its held WQE was of the old SRQ), and nothing completes.
TEST_F(XrcTest, AMessageDoesNotGoOnInANewSrqWithTheSameNumber) {
    constexpr uint64_t kOld = 0xdeadbeefcafe0000;
    b.post_srq_recv(srq1, kOld, {{bbuf, 4096, bkey}});
    send(srq1.srqn, 0, 3000, 1);
    std::vector<std::vector<uint8_t>> held;
    pump(a, b, [&](bool from_a, const std::vector<uint8_t> &f) {
        ParsedPacket p;
        if (from_a && (parse_roce_frame(f, p) != ParseError::None ||
                       p.fields.bth.opcode != (xrc::kPrefix | rc::kSendFirst))) {
            held.push_back(f);
            return true;
        }
        return false;
    });
    ASSERT_EQ(held.size(), 2u); // MIDDLE and LAST
    ohca_handle_in h{};
    h.handle = srq1.srqn;
    ASSERT_EQ(b.cmd_in(OHCA_CMD_DESTROY_SRQ, h).status, OHCA_STATUS_OK);
    SrqInfo again = b.create_xrc_srq(bpd, d1, cq1.cqn);
    ASSERT_EQ(again.srqn, srq1.srqn);
    b.post_srq_recv(again, 5, {{bbuf + 8192, 4096, bkey}});
    for (auto &f : held) {
        ASSERT_EQ(ohca_engine_receive_frame(b.e, f.data(), f.size()), OHCA_ENGINE_RX_CONSUMED);
    }
    b.process();
    EXPECT_TRUE(b.poll(cq1).empty());
    EXPECT_EQ(b.query(tgt.qpn).qp_state, OHCA_QPS_ERR); // refused: NAK Invalid Request
    b.process();
    EXPECT_TRUE(b.poll(cq1).empty());
}

TEST(XrcCommands, DomainsAreLimitedAndCounted) {
    RdmaNode n{3};
    ohca_query_device_out d{};
    ASSERT_EQ(n.cmd(OHCA_CMD_QUERY_DEVICE, nullptr, 0, &d, sizeof(d)).status, OHCA_STATUS_OK);
    EXPECT_NE(d.dev_caps & OHCA_DEV_CAP_XRC, 0u);
    ASSERT_EQ(d.max_xrcd, DeviceLimits::max_xrcd);
    std::vector<uint32_t> all;
    for (uint32_t i = 0; i < d.max_xrcd; ++i) {
        all.push_back(n.alloc_xrcd());
    }
    ohca_create_out o{};
    EXPECT_EQ(n.cmd(OHCA_CMD_ALLOC_XRCD, nullptr, 0, &o, sizeof(o)).status,
              OHCA_STATUS_NO_RESOURCES);
    ohca_handle_in h{};
    h.handle = all[0];
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DEALLOC_XRCD, h).status, OHCA_STATUS_OK);
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DEALLOC_XRCD, h).status, OHCA_STATUS_BAD_HANDLE);
    h.handle = 0;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DEALLOC_XRCD, h).status, OHCA_STATUS_BAD_HANDLE);
    h.handle = all[1];
    h.rsvd = 1;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DEALLOC_XRCD, h).status, OHCA_STATUS_RESERVED_NONZERO);

    // An SRQ and a target QP hold their domain.
    const uint32_t pd = n.create_pd();
    const CqInfo cq = n.create_cq(6);
    const SrqInfo s = n.create_xrc_srq(pd, all[1], cq.cqn);
    const QpInfo t = n.create_xrc_tgt(all[2]);
    h = {};
    h.handle = all[1];
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DEALLOC_XRCD, h).status, OHCA_STATUS_BAD_STATE);
    h.handle = all[2];
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DEALLOC_XRCD, h).status, OHCA_STATUS_BAD_STATE);
    // The SRQ holds its CQ.
    ohca_handle_in c{};
    c.handle = cq.cqn;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_CQ, c).status, OHCA_STATUS_BAD_STATE);
    ohca_handle_in x{};
    x.handle = s.srqn;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_SRQ, x).status, OHCA_STATUS_OK);
    x.handle = t.qpn;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_QP, x).status, OHCA_STATUS_OK);
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_CQ, c).status, OHCA_STATUS_OK);
    h.handle = all[1];
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DEALLOC_XRCD, h).status, OHCA_STATUS_OK);
    h.handle = all[2];
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DEALLOC_XRCD, h).status, OHCA_STATUS_OK);
    ohca_handle_in pdin{};
    pdin.handle = pd;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_PD, pdin).status, OHCA_STATUS_OK);
}

TEST(XrcCommands, FieldsOfXrcQpsAndSrqs) {
    RdmaNode n{3};
    const uint32_t pd = n.create_pd();
    const CqInfo cq = n.create_cq(6);
    const uint32_t d = n.alloc_xrcd();
    // Target: type and domain only.
    auto tgt_bad = [&](size_t off, uint8_t val, uint8_t status) {
        ohca_create_qp_in in{};
        in.type = OHCA_QPT_XRC_TGT;
        in.xrcdn = d;
        reinterpret_cast<uint8_t *>(&in)[off] = val;
        EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_QP, in).status, status) << off;
    };
    tgt_bad(offsetof(ohca_create_qp_in, sq_log_size), 1, OHCA_STATUS_BAD_FIELD);
    tgt_bad(offsetof(ohca_create_qp_in, send_cqn), 1, OHCA_STATUS_BAD_FIELD);
    tgt_bad(offsetof(ohca_create_qp_in, uar_index), 1, OHCA_STATUS_BAD_FIELD);
    tgt_bad(offsetof(ohca_create_qp_in, srqn), 1, OHCA_STATUS_BAD_FIELD);
    tgt_bad(offsetof(ohca_create_qp_in, sq_pbl), 1, OHCA_STATUS_BAD_FIELD);
    tgt_bad(offsetof(ohca_create_qp_in, xrcdn), 99, OHCA_STATUS_BAD_HANDLE);
    // Initiator: no receive CQ or SRQ.
    QpInfo q = n.create_xrc_ini(pd, cq.cqn);
    EXPECT_NE(q.qpn, 0u);
    ohca_create_qp_in in{};
    in.type = OHCA_QPT_XRC_INI;
    in.sq_log_size = 2;
    in.sq_log_stride = 8;
    in.pdn = pd;
    in.send_cqn = cq.cqn;
    in.sq_pbl = n.make_pbl(n.alloc(4096), 4096);
    ohca_create_qp_in x = in;
    x.recv_cqn = cq.cqn;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_QP, x).status, OHCA_STATUS_BAD_FIELD);
    x = in;
    x.srqn = 1;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_QP, x).status, OHCA_STATUS_BAD_FIELD);
    x = in;
    x.rq_log_size = 2;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_QP, x).status, OHCA_STATUS_BAD_FIELD);
    x = in;
    x.type = 6; // the first unknown type
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_QP, x).status, OHCA_STATUS_BAD_FIELD);
    // XRC SRQ: an existing domain and CQ.
    ohca_create_srq_in s{};
    s.pdn = pd;
    s.log_size = 4;
    s.log_stride = 6;
    s.type = OHCA_SRQT_XRC;
    s.xrcdn = 77;
    s.cqn = cq.cqn;
    s.pbl = n.make_pbl(n.alloc(4096), 1024);
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_SRQ, s).status, OHCA_STATUS_BAD_HANDLE);
    s.xrcdn = d;
    s.cqn = 999;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_SRQ, s).status, OHCA_STATUS_BAD_HANDLE);
    // An RC QP names only a basic SRQ: XRC SRQs take no QPs.
    const SrqInfo xs = n.create_xrc_srq(pd, d, cq.cqn);
    ohca_create_qp_in r{};
    r.type = OHCA_QPT_RC;
    r.sq_log_size = 2;
    r.sq_log_stride = 8;
    r.pdn = pd;
    r.send_cqn = cq.cqn;
    r.recv_cqn = cq.cqn;
    r.srqn = xs.srqn;
    r.sq_pbl = n.make_pbl(n.alloc(4096), 4096);
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_QP, r).status, OHCA_STATUS_BAD_FIELD);
}

TEST(XrcCommands, ModifyFollowsTheXrcColumns) {
    RdmaNode n{3};
    const uint32_t pd = n.create_pd();
    const CqInfo cq = n.create_cq(6);
    const uint32_t d = n.alloc_xrcd();
    const QpInfo ini = n.create_xrc_ini(pd, cq.cqn);
    const QpInfo tgt = n.create_xrc_tgt(d);
    ohca_qp_attr x{};
    x.qp_state = OHCA_QPS_INIT;
    // Both need the access flags (the verbs' columns), as RC.
    EXPECT_EQ(n.modify(ini.qpn, OHCA_QP_STATE | OHCA_QP_PKEY_INDEX | OHCA_QP_PORT, x).status,
              OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(n.modify(ini.qpn,
                       OHCA_QP_STATE | OHCA_QP_PKEY_INDEX | OHCA_QP_PORT | OHCA_QP_ACCESS_FLAGS, x)
                  .status,
              OHCA_STATUS_OK);
    EXPECT_EQ(n.modify(tgt.qpn, OHCA_QP_STATE | OHCA_QP_PKEY_INDEX | OHCA_QP_PORT, x).status,
              OHCA_STATUS_BAD_FIELD);
    // A Q_Key is a UD attribute.
    EXPECT_EQ(n.modify(tgt.qpn,
                       OHCA_QP_STATE | OHCA_QP_PKEY_INDEX | OHCA_QP_PORT | OHCA_QP_ACCESS_FLAGS |
                           OHCA_QP_QKEY,
                       x)
                  .status,
              OHCA_STATUS_BAD_FIELD);
    ohca_qp_attr r{};
    r.qp_state = OHCA_QPS_RTR;
    r.path_mtu = 3;
    r.dest_qpn = 77;
    r.av.vlan_id = 0xffff;
    r.av.network_type = OHCA_NET_IPV4;
    std::copy(n.gid.begin(), n.gid.end(), r.av.dgid);
    // An initiator's RTR needs no responder resources or RNR timer.
    EXPECT_EQ(
        n.modify(ini.qpn,
                 OHCA_QP_STATE | OHCA_QP_AV | OHCA_QP_PATH_MTU | OHCA_QP_DEST_QPN | OHCA_QP_RQ_PSN,
                 r)
            .status,
        OHCA_STATUS_OK);
    ohca_qp_attr tx{};
    tx.qp_state = OHCA_QPS_INIT;
    tx.access_flags = OHCA_ACCESS_REMOTE_WRITE;
    ASSERT_EQ(n.modify(tgt.qpn,
                       OHCA_QP_STATE | OHCA_QP_PKEY_INDEX | OHCA_QP_PORT | OHCA_QP_ACCESS_FLAGS, tx)
                  .status,
              OHCA_STATUS_OK);
    // A target's does.
    EXPECT_EQ(
        n.modify(tgt.qpn,
                 OHCA_QP_STATE | OHCA_QP_AV | OHCA_QP_PATH_MTU | OHCA_QP_DEST_QPN | OHCA_QP_RQ_PSN,
                 r)
            .status,
        OHCA_STATUS_BAD_FIELD);
    ASSERT_EQ(n.modify(tgt.qpn,
                       OHCA_QP_STATE | OHCA_QP_AV | OHCA_QP_PATH_MTU | OHCA_QP_DEST_QPN |
                           OHCA_QP_RQ_PSN | OHCA_QP_MAX_DEST_RD_ATOMIC | OHCA_QP_MIN_RNR_TIMER,
                       r)
                  .status,
              OHCA_STATUS_OK);
    // A target's RTS needs no retries or initiator depth; an initiator's does.
    ohca_qp_attr ts{};
    ts.qp_state = OHCA_QPS_RTS;
    EXPECT_EQ(n.modify(tgt.qpn, OHCA_QP_STATE | OHCA_QP_SQ_PSN | OHCA_QP_TIMEOUT, ts).status,
              OHCA_STATUS_OK);
    ohca_qp_attr s{};
    s.qp_state = OHCA_QPS_RTS;
    EXPECT_EQ(n.modify(ini.qpn, OHCA_QP_STATE | OHCA_QP_SQ_PSN | OHCA_QP_TIMEOUT, s).status,
              OHCA_STATUS_BAD_FIELD); // retries and rd_atomic are required
}

} // namespace
} // namespace ohca::test

namespace ohca::test {
namespace {

// Initiator and target on one device: the packets loop back inside it
// (fields, not frames) and still take the XRC path both ways.
TEST(XrcLoopback, SendWithinOneDevice) {
    RdmaNode n{4};
    const uint32_t pd = n.create_pd();
    CqInfo scq = n.create_cq(6);
    CqInfo rcq = n.create_cq(6);
    const uint32_t d = n.alloc_xrcd();
    SrqInfo srq = n.create_xrc_srq(pd, d, rcq.cqn);
    QpInfo ini = n.create_xrc_ini(pd, scq.cqn);
    const QpInfo tgt = n.create_xrc_tgt(d);
    const uint64_t buf = n.alloc(8192);
    const uint32_t key = n.reg_mr(pd, buf, 8192, OHCA_ACCESS_LOCAL_WRITE);
    for (uint32_t k = 0; k < 4096; ++k) {
        n.host.put(buf + k, static_cast<uint8_t>(k ^ 0x5a));
    }
    n.connect(ini, tgt.qpn, n);
    n.connect(tgt, ini.qpn, n);
    n.post_srq_recv(srq, 9, {{buf + 4096, 4096, key}});
    SendReq r;
    r.xrc_srqn = srq.srqn;
    r.sges = {{buf, 2500, key}};
    n.post_send(ini, r);
    n.process();
    const auto s = n.poll(scq);
    ASSERT_EQ(s.size(), 1u);
    EXPECT_EQ(s[0].status, OHCA_CQE_SUCCESS);
    const auto c = n.poll(rcq);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].byte_len, 2500u);
    EXPECT_EQ(c[0].src_qp, srq.srqn);
    for (uint32_t k = 0; k < 2500; ++k) {
        ASSERT_EQ(n.host.get<uint8_t>(buf + 4096 + k), static_cast<uint8_t>(k ^ 0x5a));
    }
    EXPECT_GE(device_of(n.e).roce_counters().loopback_packets, 3u);
}

} // namespace
} // namespace ohca::test
