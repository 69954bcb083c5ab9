// SPDX-License-Identifier: GPL-2.0-or-later
// DCQCN (transports/dcqcn.hpp): the reaction point's rate machine against
// the published algorithm on a fake clock (the cut, alpha, fast recovery,
// additive and hyper-additive increase, the byte counter, the floor), the
// notification point's CNP spacing, the CNP's wire format and ECN parsing,
// and, between two devices on a fake wire that marks CE as a switch
// would: ECT on the wire, CNPs, the cut rate pacing the requester on a
// timer, a hostile CNP flood, the counters and OHCA_CMD_CC_PARAM.
#include "device/device.hpp"
#include "device/limits.hpp"
#include "eth/frame.hpp"
#include "link/roce_packet.hpp"
#include "link/roce_v2.hpp"
#include "rdma_node.hpp"
#include "transports/dcqcn.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

namespace ohca::test {
namespace {

using dcqcn::Params;
using dcqcn::ReactionPoint;
using dcqcn::RpState;
using dcqcn::Stage;

constexpr uint64_t kUs = 1000;
constexpr uint32_t kLine = dcqcn::kbps(OHCA_ENGINE_DEFAULT_SPEED_MBPS);
constexpr uint64_t kT0 = 1'000'000'000;

// The cut of rate r with alpha a (1/1024), rp_gd 11, min_dec_fac 50.
uint32_t cut(uint32_t r, uint32_t a) {
    const uint64_t next = r - ((uint64_t{r} * a) >> 11);
    return static_cast<uint32_t>(std::max<uint64_t>(next, uint64_t{r} / 2));
}

TEST(Dcqcn, DefaultsAreMlx5sAndRangesAreChecked) {
    Params p;
    EXPECT_EQ(p[OHCA_CC_RP_TIME_RESET], 300u);
    EXPECT_EQ(p[OHCA_CC_RP_BYTE_RESET], 32767u);
    EXPECT_EQ(p[OHCA_CC_RP_AI_RATE], 5u);
    EXPECT_EQ(p[OHCA_CC_RP_HAI_RATE], 50u);
    EXPECT_EQ(p[OHCA_CC_RP_GD], 11u);
    EXPECT_EQ(p[OHCA_CC_RP_DCE_TCP_G], 1019u);
    EXPECT_EQ(p[OHCA_CC_RP_INITIAL_ALPHA_VALUE], 1023u);
    EXPECT_EQ(p[OHCA_CC_NP_CNP_DSCP], 48u);
    // RP off (the traffic class as the AV says), NP on.
    EXPECT_FALSE(p.rp_enabled(0) || p.rp_enabled(7));
    EXPECT_TRUE(p.np_enabled(0) && p.np_enabled(7));
    ASSERT_TRUE(p.set(OHCA_CC_RP_ENABLE_MASK, 0xff));
    EXPECT_TRUE(p.rp_enabled(0) && p.rp_enabled(7));
    EXPECT_FALSE(p.rp_enabled(8) || p.np_enabled(8));
    p = Params{};
    EXPECT_STREQ(dcqcn::param_spec(OHCA_CC_RP_MIN_DEC_FAC).name, "rp_min_dec_fac");
    for (unsigned int i = 0; i < OHCA_CC_PARAM_MAX; ++i) {
        const dcqcn::ParamSpec &s = dcqcn::param_spec(i);
        EXPECT_EQ(p[i], s.def) << s.name;
        EXPECT_FALSE(p.set(i, s.max + 1)) << s.name;
        EXPECT_EQ(p[i], s.def) << s.name; // a refused value changes nothing
        if (s.min > 0) {
            EXPECT_FALSE(p.set(i, s.min - 1)) << s.name;
        }
        EXPECT_TRUE(p.set(i, s.max)) << s.name;
        EXPECT_EQ(p[i], s.max);
    }
    EXPECT_FALSE(p.set(OHCA_CC_PARAM_MAX, 0));
}

TEST(Dcqcn, FirstCnpCutsFromLineRateWithInitialAlpha) {
    Params p;
    ReactionPoint rp(p, kLine);
    RpState s;
    uint64_t wake = 0;
    EXPECT_TRUE(rp.may_send(s, kT0, wake)); // never congested: unlimited
    rp.on_cnp(s, kT0);
    EXPECT_TRUE(s.limited);
    EXPECT_EQ(s.rt_kbps, kLine);
    EXPECT_EQ(s.rc_kbps, cut(kLine, 1023)); // Rc (1 - alpha / 2), alpha ~ 1
    EXPECT_EQ(s.alpha, 1023);
}

TEST(Dcqcn, RateToSetOnFirstCnp) {
    Params p;
    ASSERT_TRUE(p.set(OHCA_CC_RP_RATE_TO_SET_ON_FIRST_CNP, 100));
    ReactionPoint rp(p, kLine);
    RpState s;
    rp.on_cnp(s, kT0);
    EXPECT_EQ(s.rc_kbps, 100'000u);
    EXPECT_EQ(s.rt_kbps, 100'000u);
}

TEST(Dcqcn, MonitorPeriodAllowsOneCutAndMinRateIsTheFloor) {
    Params p;
    ReactionPoint rp(p, kLine);
    RpState s;
    rp.on_cnp(s, kT0);
    const uint32_t after_first = s.rc_kbps;
    rp.on_cnp(s, kT0 + 1 * kUs); // within rp_rate_reduce_monitor_period (4 us)
    EXPECT_EQ(s.rc_kbps, after_first);
    rp.on_cnp(s, kT0 + 5 * kUs);
    EXPECT_LT(s.rc_kbps, after_first);
    // A peer flooding CNPs (one every monitor period, each O(1)): the rate
    // goes down to rp_min_rate and stays there, whatever it sends.
    uint64_t t = kT0 + 5 * kUs;
    for (int i = 0; i < 100000; ++i) {
        t += 4 * kUs;
        rp.on_cnp(s, t);
        ASSERT_GE(s.rc_kbps, dcqcn::kbps(p[OHCA_CC_RP_MIN_RATE]));
    }
    EXPECT_EQ(s.rc_kbps, dcqcn::kbps(1));
    // min_dec_fac: no single cut below half the rate.
    RpState h;
    rp.on_cnp(h, kT0);
    const uint32_t r = h.rc_kbps;
    h.alpha = 1023;
    rp.on_cnp(h, kT0 + 10 * kUs);
    EXPECT_GE(h.rc_kbps, r / 2);
}

TEST(Dcqcn, AlphaRisesWithCnpsAndDecaysWithout) {
    Params p;
    ASSERT_TRUE(p.set(OHCA_CC_RP_INITIAL_ALPHA_VALUE, 512));
    ASSERT_TRUE(p.set(OHCA_CC_RP_DCE_TCP_RTT, 10)); // alpha period 10 us
    ReactionPoint rp(p, kLine);
    RpState s;
    rp.on_cnp(s, kT0);
    EXPECT_EQ(s.alpha, 512);
    // The period with the CNP ends: alpha = g' alpha + (1 - g'), g' = 1019/1024.
    rp.advance(s, kT0 + 10 * kUs);
    uint32_t a = 512 * 1019 / 1024 + 5;
    EXPECT_EQ(s.alpha, a);
    // Nine periods without a CNP: alpha = g' alpha each.
    rp.advance(s, kT0 + 100 * kUs);
    for (int i = 0; i < 9; ++i) {
        a = a * 1019 / 1024;
    }
    EXPECT_EQ(s.alpha, a);
    // A CNP in the next period raises it again at the period's end.
    rp.on_cnp(s, kT0 + 105 * kUs);
    rp.advance(s, kT0 + 110 * kUs);
    EXPECT_EQ(s.alpha, a * 1019 / 1024 + 5);
    // A long quiet time takes alpha to 0 (bounded work however long).
    rp.advance(s, kT0 + 290 * kUs);
    EXPECT_LT(s.alpha, a);
}

TEST(Dcqcn, FastRecoveryThenAdditiveThenHyperAdditive) {
    Params p;
    ASSERT_TRUE(p.set(OHCA_CC_RP_CLAMP_TGT_RATE, 1)); // Rt = Rc on every cut
    ASSERT_TRUE(p.set(OHCA_CC_RP_THRESHOLD, 2));
    ASSERT_TRUE(p.set(OHCA_CC_RP_BYTE_RESET, 0)); // the timer alone first
    ReactionPoint rp(p, kLine);
    RpState s;
    rp.on_cnp(s, kT0);
    rp.on_cnp(s, kT0 + 10 * kUs); // a second cut: Rt is the rate before it
    uint32_t rt = s.rt_kbps;
    uint32_t rc = s.rc_kbps;
    ASSERT_LT(rc, rt);
    uint64_t t = kT0 + 10 * kUs;
    auto period = [&] {
        t += 300 * kUs; // rp_time_reset
        rp.advance(s, t);
    };
    // Fast recovery: rp_threshold (2) stages of Rc = (Rt + Rc) / 2, Rt kept.
    for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(rp.stage(s), Stage::FastRecovery);
        period();
        rc = (rt + rc + 1) / 2;
        EXPECT_EQ(s.rt_kbps, rt);
        EXPECT_EQ(s.rc_kbps, rc);
    }
    // Then additive increase: Rt += rp_ai_rate, Rc = (Rt + Rc) / 2.
    for (int i = 0; i < 3; ++i) {
        period();
        EXPECT_EQ(rp.stage(s), Stage::Additive);
        rt += dcqcn::kbps(5);
        rc = (rt + rc + 1) / 2;
        EXPECT_EQ(s.rt_kbps, rt);
        EXPECT_EQ(s.rc_kbps, rc);
    }
    // The byte counter past the threshold too: hyper-additive increase.
    ASSERT_TRUE(p.set(OHCA_CC_RP_BYTE_RESET, 1000));
    for (int i = 0; i < 3; ++i) {
        rp.on_sent(s, t, 1000); // each a byte counter stage
        rt += dcqcn::kbps(i < 2 ? 5 : 50);
        rc = (rt + rc + 1) / 2;
        EXPECT_EQ(s.rt_kbps, rt);
        EXPECT_EQ(s.rc_kbps, rc);
    }
    EXPECT_EQ(rp.stage(s), Stage::HyperAdditive);
    period();
    rt += dcqcn::kbps(50);
    rc = (rt + rc + 1) / 2;
    EXPECT_EQ(s.rt_kbps, rt);
    EXPECT_EQ(s.rc_kbps, rc);
    // A CNP starts the stages over.
    rp.on_cnp(s, t + kUs);
    EXPECT_EQ(rp.stage(s), Stage::FastRecovery);
    EXPECT_EQ(s.rt_kbps, rc);
}

TEST(Dcqcn, ByteCounterDrivesIncreasesWithoutTheTimer) {
    Params p;
    ReactionPoint rp(p, kLine);
    RpState s;
    rp.on_cnp(s, kT0);
    const uint32_t rc = s.rc_kbps;
    rp.on_sent(s, kT0 + kUs, 32766);
    EXPECT_EQ(s.rc_kbps, rc); // not yet rp_byte_reset bytes
    rp.on_sent(s, kT0 + kUs, 1);
    EXPECT_EQ(s.bc_stage, 1);
    EXPECT_EQ(s.t_stage, 0);
    EXPECT_EQ(s.rc_kbps, (kLine + rc + 1) / 2); // a fast recovery stage
    // One huge packet causes a bounded number of stages.
    RpState b;
    ASSERT_TRUE(p.set(OHCA_CC_RP_BYTE_RESET, 1));
    rp.on_cnp(b, kT0);
    rp.on_sent(b, kT0, 1'000'000);
    EXPECT_LE(b.bc_stage, 16);
}

TEST(Dcqcn, RecoversToLineRateAndStopsPacing) {
    Params p;
    ReactionPoint rp(p, kLine);
    RpState s;
    rp.on_cnp(s, kT0);
    uint64_t t = kT0;
    for (int i = 0; i < 1000 && s.limited; ++i) {
        t += 300 * kUs;
        rp.advance(s, t);
    }
    EXPECT_FALSE(s.limited);
    uint64_t wake = 0;
    EXPECT_TRUE(rp.may_send(s, t, wake));
    // A QP silent for long is released at once (bounded catch-up).
    RpState q;
    ASSERT_TRUE(p.set(OHCA_CC_RP_RATE_TO_SET_ON_FIRST_CNP, 1));
    rp.on_cnp(q, kT0);
    EXPECT_TRUE(rp.may_send(q, kT0 + 3'600'000'000'000ull, wake));
    EXPECT_FALSE(q.limited);
}

TEST(Dcqcn, PacerSpacesPacketsByTheRate) {
    Params p;
    ASSERT_TRUE(p.set(OHCA_CC_RP_RATE_TO_SET_ON_FIRST_CNP, 8)); // 8 Mb/s: 1 byte/us
    ASSERT_TRUE(p.set(OHCA_CC_RP_BYTE_RESET, 0));
    ReactionPoint rp(p, kLine);
    RpState s;
    rp.on_cnp(s, kT0);
    uint64_t wake = 0;
    ASSERT_TRUE(rp.may_send(s, kT0, wake));
    rp.on_sent(s, kT0, 100);
    EXPECT_FALSE(rp.may_send(s, kT0 + 50 * kUs, wake));
    EXPECT_EQ(wake, kT0 + 100 * kUs);
    EXPECT_TRUE(rp.may_send(s, kT0 + 100 * kUs, wake));
}

// A paced QP whose sender was not run for 100 ms (the host descheduled
// QEMU) does not bank the time: over every interval, before and after the
// stall, it sends at most the interval at its rate, the pacer's 10 us of
// catch-up and one packet.
TEST(Dcqcn, PacerAfterAStallSendsNoFasterThanItsRate) {
    Params p;
    ASSERT_TRUE(p.set(OHCA_CC_RP_RATE_TO_SET_ON_FIRST_CNP, 8)); // 1 byte/us
    ASSERT_TRUE(p.set(OHCA_CC_RP_BYTE_RESET, 0));
    ASSERT_TRUE(p.set(OHCA_CC_RP_TIME_RESET, 131071)); // no increase meanwhile
    ReactionPoint rp(p, kLine);
    RpState s;
    rp.on_cnp(s, kT0);
    constexpr size_t kLen = 1000;
    std::vector<uint64_t> sent;
    uint64_t t = kT0;
    bool stalled = false;
    while (sent.size() < 60) {
        if (sent.size() == 20 && !stalled) {
            t += 100'000 * kUs; // nothing runs for 100 ms
            stalled = true;
        }
        uint64_t wake = 0;
        if (rp.may_send(s, t, wake)) {
            rp.on_sent(s, t, kLen);
            sent.push_back(t);
        } else {
            ASSERT_GT(wake, t);
            t = wake;
        }
    }
    for (size_t i = 0; i < sent.size(); ++i) {
        for (size_t j = i; j < sent.size(); ++j) {
            const uint64_t bytes = (j - i + 1) * kLen;
            ASSERT_LE(bytes, (sent[j] - sent[i]) / kUs + 10 + kLen) << i << ".." << j;
        }
    }
}

TEST(Dcqcn, NotificationPointSpacesCnpsPerQp) {
    Params p; // np_min_time_between_cnps 4 us
    dcqcn::NpState a;
    dcqcn::NpState b;
    EXPECT_TRUE(dcqcn::np_should_send(p, a, kT0));
    EXPECT_FALSE(dcqcn::np_should_send(p, a, kT0 + 3 * kUs));
    EXPECT_TRUE(dcqcn::np_should_send(p, b, kT0 + 3 * kUs)); // per QP
    EXPECT_TRUE(dcqcn::np_should_send(p, a, kT0 + 4 * kUs));
    ASSERT_TRUE(p.set(OHCA_CC_NP_MIN_TIME_BETWEEN_CNPS, 0));
    EXPECT_TRUE(dcqcn::np_should_send(p, a, kT0 + 4 * kUs));
}

PacketPath test_path(bool ipv6, uint8_t tclass) {
    PacketPath path;
    path.smac = {2, 0, 0, 0, 0, 1};
    path.dmac = {2, 0, 0, 0, 0, 2};
    path.ipv6 = ipv6;
    path.sgid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
    path.dgid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};
    if (ipv6) {
        path.sgid[0] = 0xfe;
        path.dgid[0] = 0xfe;
    }
    path.traffic_class = tclass;
    return path;
}

TEST(Dcqcn, CnpWireFormatParsesBack) {
    const std::array<uint8_t, dcqcn::kCnpPayloadLen> zeros{};
    const auto f = build_roce_frame(test_path(false, 48 << 2), dcqcn::cnp_fields(0x123456), zeros);
    // Ethernet 14, IPv4 20, UDP 8, BTH 12, 16 reserved bytes, ICRC 4.
    ASSERT_EQ(f.size(), 14u + 20 + 8 + 12 + 16 + 4);
    EXPECT_EQ(f[15], 48 << 2); // DSCP 48, not ECT
    const size_t bth = 14 + 20 + 8;
    EXPECT_EQ(f[bth], 0x81);
    EXPECT_EQ(f[bth + 1], 0);    // SE, M, pad, TVer 0
    EXPECT_EQ(f[bth + 4], 0x40); // BECN
    EXPECT_EQ(f[bth + 5], 0x12);
    EXPECT_EQ(f[bth + 7], 0x56);
    for (size_t i = bth + 12; i < bth + 28; ++i) {
        EXPECT_EQ(f[i], 0);
    }
    ParsedPacket p;
    ASSERT_EQ(parse_roce_frame(f, p), ParseError::None);
    EXPECT_EQ(p.fields.bth.opcode, kCnpOpcode);
    EXPECT_TRUE(p.fields.bth.becn);
    EXPECT_FALSE(p.fields.bth.fecn);
    EXPECT_EQ(p.fields.bth.dest_qp, 0x123456u);
    EXPECT_EQ(p.payload.size(), dcqcn::kCnpPayloadLen);
    EXPECT_EQ(p.ecn, eth::Ecn::NotEct);
}

TEST(Dcqcn, EcnBitsAreExtractedOnIpv4AndIpv6) {
    for (const bool v6 : {false, true}) {
        for (const uint8_t ecn : {0, 1, 2, 3}) {
            PacketFields fl;
            fl.bth.opcode = rc::kSendOnly;
            const std::array<uint8_t, 8> pl{};
            const auto f = build_roce_frame(test_path(v6, uint8_t(0xa0 | ecn)), fl, pl);
            ParsedPacket p;
            ASSERT_EQ(parse_roce_frame(f, p), ParseError::None);
            EXPECT_EQ(p.ecn, static_cast<eth::Ecn>(ecn));
            EXPECT_EQ(p.traffic_class, 0xa0 | ecn);
        }
    }
    // The switch's CE mark is outside the ICRC (TOS is masked).
    PacketFields fl;
    fl.bth.opcode = rc::kSendOnly;
    const std::array<uint8_t, 8> pl{};
    auto f = build_roce_frame(test_path(false, static_cast<uint8_t>(eth::Ecn::Ect0)), fl, pl);
    f[15] |= static_cast<uint8_t>(eth::Ecn::Ce);
    ParsedPacket p;
    ASSERT_EQ(parse_roce_frame(f, p), ParseError::None);
    EXPECT_EQ(p.ecn, eth::Ecn::Ce);
}

// ---- two devices --------------------------------------------------------------------

constexpr size_t kIpTos = 15;  // IPv4 TOS in an untagged frame
constexpr size_t kBthOff = 42; // BTH in an untagged IPv4 frame

void set_ce(std::vector<uint8_t> &f) {
    f[kIpTos] |= static_cast<uint8_t>(eth::Ecn::Ce);
    // The IPv4 header checksum again.
    f[24] = 0;
    f[25] = 0;
    uint32_t sum = 0;
    for (size_t i = 14; i < 34; i += 2) {
        sum += uint32_t(f[i] << 8) | f[i + 1];
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    f[24] = uint8_t(~sum >> 8);
    f[25] = uint8_t(~sum);
}

class DcqcnWire : public ::testing::Test {
  protected:
    void SetUp() override {
        for (int i = 0; i < 2; ++i) {
            side[i] = make_side(i == 0 ? a : b, 1 << 20, 6, [](size_t k) { return uint8_t(k); });
        }
        a.connect(side[0].qp, side[1].qp.qpn, b);
        b.connect(side[1].qp, side[0].qp.qpn, a);
        // The RP on every priority (off by default).
        ASSERT_EQ(cc(a, OHCA_CC_RP_ENABLE_MASK, OHCA_CC_PARAM_SET, 0xff).status, OHCA_STATUS_OK);
    }
    void write(uint32_t len, uint64_t wr_id = 1) {
        SendReq r;
        r.wr_id = wr_id;
        r.opcode = OHCA_WR_RDMA_WRITE;
        r.sges = {{side[0].buf, len, side[0].key}};
        r.remote_addr = side[1].buf;
        r.rkey = side[1].key;
        a.post_send(side[0].qp, r);
    }
    CmdOutcome cc(RdmaNode &n, uint32_t param, uint32_t op, uint32_t value,
                  uint32_t *out = nullptr) {
        ohca_cc_param_in in{};
        in.param = param;
        in.op = op;
        in.value = value;
        ohca_cc_param_out o{};
        const CmdOutcome r = n.cmd(OHCA_CMD_CC_PARAM, &in, sizeof(in), &o, sizeof(o));
        if (out != nullptr) {
            *out = o.value;
        }
        return r;
    }
    // The first message, a 1 KiB WRITE that a switch marks CE: b's CNP
    // limits a's QP, and it completes.
    void marked_write() {
        write(1024);
        pump(a, b, [&](bool from_a, std::vector<uint8_t> &f) {
            if (from_a) {
                set_ce(f);
            }
            return false; // delivered, marked or not
        });
        ASSERT_EQ(a.stats().rp_cnp_handled, 1u);
        ASSERT_EQ(a.poll(side[0].scq).size(), 1u);
    }
    // One frame from b to a, as a peer would send it.
    void inject_to_a(const std::vector<uint8_t> &f) {
        ASSERT_EQ(ohca_engine_receive_frame(a.e, f.data(), f.size()), OHCA_ENGINE_RX_CONSUMED);
    }
    RdmaNode a{1};
    RdmaNode b{2};
    Side side[2];
};

TEST_F(DcqcnWire, EctOnTheWireAndCeAnsweredByOneCnp) {
    write(8192); // 8 packets at MTU 1024
    std::vector<std::vector<uint8_t>> cnps;
    int data = 0;
    pump(a, b, [&](bool from_a, std::vector<uint8_t> &f) {
        if (from_a) {
            EXPECT_EQ(f[kIpTos] & eth::kEcnMask,
                      static_cast<uint8_t>(eth::Ecn::Ect0)); // ECN-capable
            set_ce(f);                                       // a switch marks them all
            ++data;
        } else if (f[kBthOff] == kCnpOpcode) {
            cnps.push_back(f);
        }
        return false; // delivered, marked or not
    });
    ASSERT_EQ(data, 8);
    auto sc = a.poll(side[0].scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
    // The clock did not move: one CNP for all 8 (np_min_time_between_cnps).
    ASSERT_EQ(cnps.size(), 1u);
    ParsedPacket p;
    ASSERT_EQ(parse_roce_frame(cnps[0], p), ParseError::None);
    EXPECT_EQ(p.fields.bth.dest_qp, side[0].qp.qpn);
    EXPECT_TRUE(p.fields.bth.becn);
    EXPECT_EQ(p.traffic_class, 48 << 2);
    const ohca_query_stats_out sb = b.stats();
    EXPECT_EQ(sb.np_ecn_marked_roce_packets, 8u);
    EXPECT_EQ(sb.np_cnp_sent, 1u);
    const ohca_query_stats_out sa = a.stats();
    EXPECT_EQ(sa.rp_cnp_handled, 1u);
    EXPECT_EQ(sa.rp_cnp_ignored, 0u);
    EXPECT_EQ(sa.rc_retrans_pkts, 0u);
}

TEST_F(DcqcnWire, CutRatePacesTheRequesterOnATimer) {
    uint32_t v = 0;
    ASSERT_EQ(cc(a, OHCA_CC_RP_RATE_TO_SET_ON_FIRST_CNP, OHCA_CC_PARAM_SET, 10, &v).status,
              OHCA_STATUS_OK); // 10 Mb/s
    EXPECT_EQ(v, 10u);
    ASSERT_EQ(cc(a, OHCA_CC_RP_BYTE_RESET, OHCA_CC_PARAM_SET, 0).status, OHCA_STATUS_OK);
    // The first message, marked: b's CNP cuts a's QP to 10 Mb/s.
    ASSERT_NO_FATAL_FAILURE(marked_write());
    // Four packets now: one goes, the next waits (1082 bytes at 10 Mb/s:
    // 866 us) on the engine's timer, not a busy loop.
    const uint64_t sent0 = a.stats().roce_tx_pkts;
    const unsigned int schedules0 = a.host.schedules;
    write(4096, 2);
    pump(a, b);
    EXPECT_EQ(a.stats().roce_tx_pkts - sent0, 1u);
    EXPECT_GT(a.host.timer, a.host.now);
    EXPECT_LE(a.host.timer, a.host.now + 900 * kUs);
    EXPECT_LE(a.host.schedules - schedules0, 4u);
    a.host.now += 500 * kUs;
    b.host.now += 500 * kUs;
    pump(a, b);
    EXPECT_EQ(a.stats().roce_tx_pkts - sent0, 1u); // not yet
    for (int i = 0; i < 3; ++i) {
        a.host.now = a.host.timer;
        b.host.now = a.host.now;
        pump(a, b);
    }
    EXPECT_EQ(a.stats().roce_tx_pkts - sent0, 4u);
    auto sc = a.poll(side[0].scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
}

TEST_F(DcqcnWire, ReadResponsesArePacedToo) {
    ASSERT_EQ(cc(a, OHCA_CC_RP_RATE_TO_SET_ON_FIRST_CNP, OHCA_CC_PARAM_SET, 10).status,
              OHCA_STATUS_OK);
    ASSERT_EQ(cc(a, OHCA_CC_RP_BYTE_RESET, OHCA_CC_PARAM_SET, 0).status, OHCA_STATUS_OK);
    PacketPath path;
    path.smac = b.mac;
    path.dmac = a.mac;
    path.sgid = b.gid;
    path.dgid = a.gid;
    const std::array<uint8_t, dcqcn::kCnpPayloadLen> zeros{};
    inject_to_a(build_roce_frame(path, dcqcn::cnp_fields(side[0].qp.qpn), zeros));
    a.process();
    ASSERT_EQ(a.stats().rp_cnp_handled, 1u);
    // b READs 4 packets from a: a's responses go at a's cut rate.
    SendReq r;
    r.opcode = OHCA_WR_RDMA_READ;
    r.sges = {{side[1].buf, 4096, side[1].key}};
    r.remote_addr = side[0].buf;
    r.rkey = side[0].key;
    b.post_send(side[1].qp, r);
    const uint64_t sent0 = a.stats().roce_tx_pkts;
    pump(a, b);
    EXPECT_EQ(a.stats().roce_tx_pkts - sent0, 1u);
    for (int i = 0; i < 3; ++i) {
        ASSERT_GT(a.host.timer, a.host.now);
        a.host.now = a.host.timer;
        b.host.now = a.host.now;
        pump(a, b);
    }
    EXPECT_EQ(a.stats().roce_tx_pkts - sent0, 4u);
    auto sc = b.poll(side[1].scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
}

// The requester asks the port's pacer only for a QP a CNP has limited
// (TransportServices::cc_may_send tests qp.cc.rp.limited first): with the
// RP on and no CNP every packet goes at once; the first CNP sets the flag,
// and from then on the pacer spaces the packets.
TEST_F(DcqcnWire, PacerAskedFromTheFirstCnpOnNotBefore) {
    ASSERT_EQ(cc(a, OHCA_CC_RP_RATE_TO_SET_ON_FIRST_CNP, OHCA_CC_PARAM_SET, 10).status,
              OHCA_STATUS_OK);
    ASSERT_EQ(cc(a, OHCA_CC_RP_BYTE_RESET, OHCA_CC_PARAM_SET, 0).status, OHCA_STATUS_OK);
    uint64_t sent0 = a.stats().roce_tx_pkts;
    write(8192, 1); // 8 packets, not limited: all in one go
    a.process();
    EXPECT_EQ(a.stats().roce_tx_pkts - sent0, 8u);
    pump(a, b);
    ASSERT_EQ(a.poll(side[0].scq).size(), 1u);
    PacketPath path;
    path.smac = b.mac;
    path.dmac = a.mac;
    path.sgid = b.gid;
    path.dgid = a.gid;
    const std::array<uint8_t, dcqcn::kCnpPayloadLen> zeros{};
    inject_to_a(build_roce_frame(path, dcqcn::cnp_fields(side[0].qp.qpn), zeros));
    a.process();
    ASSERT_EQ(a.stats().rp_cnp_handled, 1u);
    sent0 = a.stats().roce_tx_pkts;
    write(8192, 2); // limited now: one packet, the rest when the pacer allows
    a.process();
    EXPECT_EQ(a.stats().roce_tx_pkts - sent0, 1u);
}

// The ACK timer times the fabric, not the sender's own pacer (the
// spurious timeouts of make fabric-bench's DCQCN cells, issue 23). A QP
// held to 2 Mb/s sends a 64 KiB WRITE's packets 4.3 ms apart, asking for an
// ACK only on every 32nd and the last: 134 ms from one request to the
// next, past the measured RTO (10 ms) and the local ACK timeout (200 ms
// here). Every packet arrives at once and every ACK asked for comes at
// once: no timeout, nothing sent twice (before: 3 timeouts, 3 packets
// sent twice). Then a WRITE whose last packet is lost: the timer, started
// when that packet went, still finds it.
TEST_F(DcqcnWire, PacedPacketsRunNoAckTimer) {
    ASSERT_EQ(cc(a, OHCA_CC_RP_RATE_TO_SET_ON_FIRST_CNP, OHCA_CC_PARAM_SET, 2).status,
              OHCA_STATUS_OK);
    ASSERT_EQ(cc(a, OHCA_CC_RP_BYTE_RESET, OHCA_CC_PARAM_SET, 0).status, OHCA_STATUS_OK);
    // One increase per 131 ms: the rate stays near 2 Mb/s through the test.
    ASSERT_EQ(cc(a, OHCA_CC_RP_TIME_RESET, OHCA_CC_PARAM_SET, 131071).status, OHCA_STATUS_OK);
    // The first message, marked: its CNP limits the QP, its ACK (on the
    // fake wire at once) is a round trip of 0, so the RTO is its floor.
    ASSERT_NO_FATAL_FAILURE(marked_write());
    // 'lose': the data packet to drop (its index among a's), or none.
    auto transfer = [&](uint64_t wr_id, int lose) {
        write(64 * 1024, wr_id);
        int data = 0;
        std::vector<ohca_cqe> sc;
        for (int i = 0; i < 400 && sc.empty(); ++i) {
            pump(a, b,
                 [&](bool from_a, std::vector<uint8_t> &) { return from_a && data++ == lose; });
            sc = a.poll(side[0].scq);
            if (sc.empty()) {
                EXPECT_GT(a.host.timer, a.host.now); // waiting on a timer, not spinning
                a.host.now = std::max(a.host.timer, a.host.now);
                b.host.now = a.host.now;
            }
        }
        EXPECT_EQ(sc.size(), 1u);
        EXPECT_TRUE(!sc.empty() && sc[0].status == OHCA_CQE_SUCCESS);
        return data;
    };
    const uint64_t t0 = a.host.now;
    EXPECT_EQ(transfer(2, -1), 64);
    EXPECT_GT(a.host.now - t0, 250'000 * kUs); // paced: 64 x 4.3 ms
    ohca_query_stats_out s = a.stats();
    EXPECT_EQ(s.rc_local_ack_timeouts, 0u);
    EXPECT_EQ(s.rc_retrans_pkts, 0u);
    EXPECT_EQ(s.rp_cnp_handled, 1u);
    const int sent = transfer(3, 63); // the last packet lost
    s = a.stats();
    // The first expiry sends it again as a tail-loss probe, which fills it
    // in: no timeout.
    EXPECT_EQ(device_of(a.e).roce_counters().tail_probes, 1u);
    EXPECT_EQ(s.rc_local_ack_timeouts, 0u);
    EXPECT_EQ(s.rc_retrans_pkts, 1u);
    EXPECT_EQ(static_cast<uint64_t>(sent), 64 + s.rc_retrans_pkts);
    std::vector<uint8_t> u(64 * 1024), v(64 * 1024);
    EXPECT_TRUE(a.host.read(side[0].buf, u.data(), u.size()));
    EXPECT_TRUE(b.host.read(side[1].buf, v.data(), v.size()));
    EXPECT_TRUE(u == v);
}

TEST_F(DcqcnWire, HostileCnpFloodIsBoundedAndUnknownQpIgnored) {
    // CNPs as b would send them, to a's QP and to a QP a does not have.
    PacketPath path;
    path.smac = b.mac;
    path.dmac = a.mac;
    path.sgid = b.gid;
    path.dgid = a.gid;
    const std::array<uint8_t, dcqcn::kCnpPayloadLen> zeros{};
    const auto to_qp = build_roce_frame(path, dcqcn::cnp_fields(side[0].qp.qpn), zeros);
    const auto to_none = build_roce_frame(path, dcqcn::cnp_fields(0xabcde), zeros);
    for (int i = 0; i < 20000; ++i) {
        a.host.now += kUs;
        inject_to_a(to_qp);
        inject_to_a(to_none);
        if (i % 64 == 0) {
            a.process();
        }
    }
    a.process();
    const ohca_query_stats_out s = a.stats();
    EXPECT_EQ(s.rp_cnp_handled, 20000u);
    EXPECT_EQ(s.rp_cnp_ignored, 20000u);
    EXPECT_EQ(s.roce_bad_opcode, 0u);
    // At rp_min_rate (1 Mb/s) the QP still sends: one 1024-byte packet
    // per 8.7 ms.
    const uint64_t sent0 = s.roce_tx_pkts;
    write(1024, 3);
    pump(a, b);
    for (int i = 0; i < 10 && a.stats().roce_tx_pkts == sent0; ++i) {
        a.host.now += 10'000 * kUs;
        b.host.now = a.host.now;
        pump(a, b);
    }
    EXPECT_EQ(a.stats().roce_tx_pkts, sent0 + 1);
    EXPECT_EQ(a.poll(side[0].scq).size(), 1u);
}

TEST_F(DcqcnWire, ByDefaultTheTrafficClassIsTheAvsAndCnpsAreIgnored) {
    ASSERT_EQ(cc(a, OHCA_CC_RP_ENABLE_MASK, OHCA_CC_PARAM_SET, 0).status, OHCA_STATUS_OK);
    write(2048);
    std::vector<std::vector<uint8_t>> cnps;
    pump(a, b, [&](bool from_a, std::vector<uint8_t> &f) {
        if (from_a) {
            EXPECT_EQ(f[kIpTos], 0); // the AV's traffic class, not ECT
        } else if (f[kBthOff] == kCnpOpcode) {
            cnps.push_back(f);
        }
        return false; // delivered, marked or not
    });
    EXPECT_TRUE(cnps.empty());
    EXPECT_EQ(b.stats().np_ecn_marked_roce_packets, 0u);
}

TEST_F(DcqcnWire, DisabledPrioritySendsNotEctAndIgnoresCnps) {
    ASSERT_EQ(cc(a, OHCA_CC_RP_ENABLE_MASK, OHCA_CC_PARAM_SET, 0).status, OHCA_STATUS_OK);
    ASSERT_EQ(cc(b, OHCA_CC_NP_ENABLE_MASK, OHCA_CC_PARAM_SET, 0).status, OHCA_STATUS_OK);
    write(2048);
    pump(a, b, [&](bool from_a, std::vector<uint8_t> &f) {
        if (from_a) {
            EXPECT_EQ(f[kIpTos] & eth::kEcnMask,
                      static_cast<uint8_t>(eth::Ecn::NotEct)); // as before DCQCN
            set_ce(f);
        }
        return false; // delivered, marked or not
    });
    EXPECT_EQ(b.stats().np_ecn_marked_roce_packets, 2u);
    EXPECT_EQ(b.stats().np_cnp_sent, 0u);
    PacketPath path;
    path.smac = b.mac;
    path.dmac = a.mac;
    path.sgid = b.gid;
    path.dgid = a.gid;
    const std::array<uint8_t, dcqcn::kCnpPayloadLen> zeros{};
    inject_to_a(build_roce_frame(path, dcqcn::cnp_fields(side[0].qp.qpn), zeros));
    a.process();
    EXPECT_EQ(a.stats().rp_cnp_ignored, 1u);
    EXPECT_EQ(a.stats().rp_cnp_handled, 0u);
}

TEST_F(DcqcnWire, CcParamCommandChecksEveryValue) {
    uint32_t v = 0;
    ASSERT_EQ(cc(a, OHCA_CC_RP_ENABLE_MASK, OHCA_CC_PARAM_SET, 0).status, OHCA_STATUS_OK);
    ASSERT_EQ(cc(a, OHCA_CC_RP_AI_RATE, OHCA_CC_PARAM_GET, 0, &v).status, OHCA_STATUS_OK);
    EXPECT_EQ(v, 5u);
    for (unsigned int i = 0; i < OHCA_CC_PARAM_MAX; ++i) {
        const dcqcn::ParamSpec &s = dcqcn::param_spec(i);
        const CmdOutcome r = cc(a, i, OHCA_CC_PARAM_SET, s.max + 1);
        EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD) << s.name;
        EXPECT_EQ(r.syndrome, offsetof(ohca_cc_param_in, value)) << s.name;
        ASSERT_EQ(cc(a, i, OHCA_CC_PARAM_GET, 0, &v).status, OHCA_STATUS_OK);
        EXPECT_EQ(v, s.def) << s.name;
    }
    EXPECT_EQ(cc(a, OHCA_CC_PARAM_MAX, OHCA_CC_PARAM_GET, 0).status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(cc(a, OHCA_CC_RP_GD, 7, 0).status, OHCA_STATUS_BAD_FIELD);
    ASSERT_EQ(cc(a, OHCA_CC_RP_GD, OHCA_CC_PARAM_SET, 9, &v).status, OHCA_STATUS_OK);
    EXPECT_EQ(v, 9u);
    a.reset(); // defaults again
    ASSERT_EQ(cc(a, OHCA_CC_RP_GD, OHCA_CC_PARAM_GET, 0, &v).status, OHCA_STATUS_OK);
    EXPECT_EQ(v, 11u);
}

} // namespace
} // namespace ohca::test
