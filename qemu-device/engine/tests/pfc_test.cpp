// SPDX-License-Identifier: GPL-2.0-or-later
// Pause and priority flow control (device/pfc.hpp): SET_PFC / QUERY_PFC,
// pause frames honoured per priority for exactly their time (the guest's
// Ethernet frames and the device's RoCE packets, ACKs included), XON,
// frames of other priorities unaffected, MAC control frames never in the
// RX ring, XOFF / XON generated with hysteresis, and a flood of pause
// frames bounded.
#include "engine_test.hpp"
#include "eth/frame.hpp"
#include "rdma_node.hpp"

#include <algorithm>

namespace ohca::test {
namespace {

constexpr uint8_t kPeer[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x42};
constexpr eth::Mac kPeerMac{0x02, 0x00, 0x00, 0x00, 0x00, 0x42};

// A frame to the peer; 'pcp' >= 0: with an 802.1Q tag of that priority.
std::vector<uint8_t> frame_to_peer(int pcp, uint8_t fill, size_t len = 100) {
    std::vector<uint8_t> f(len, fill);
    std::copy(std::begin(kPeer), std::end(kPeer), f.begin());
    std::copy(std::begin(kMac), std::end(kMac), f.begin() + 6);
    if (pcp >= 0) {
        f[12] = 0x81;
        f[13] = 0x00;
        f[14] = static_cast<uint8_t>(pcp << 5);
        f[15] = 5; // VLAN 5
        f[16] = 0x08;
        f[17] = 0x00;
    } else {
        f[12] = 0x08;
        f[13] = 0x00;
    }
    return f;
}

// The same from the peer to the device.
std::vector<uint8_t> frame_to_us(int pcp, uint8_t fill) {
    auto f = frame_to_peer(pcp, fill);
    std::copy(std::begin(kMac), std::end(kMac), f.begin());
    std::copy(std::begin(kPeer), std::end(kPeer), f.begin() + 6);
    return f;
}

std::vector<uint8_t> pfc_frame(uint8_t enable, uint16_t quanta) {
    eth::PfcInfo p;
    p.enable = enable;
    for (size_t i = 0; i < eth::kPriorities; ++i) {
        if ((enable & (1u << i)) != 0) {
            p.quanta[i] = quanta;
        }
    }
    const auto f = eth::make_pfc(kPeerMac, p);
    return {f.begin(), f.end()};
}

ohca_set_pfc_in pfc_in(uint8_t pfc_en, uint32_t speed_mbps = 1000,
                       uint8_t trust = OHCA_PFC_TRUST_PCP, uint8_t pause = 0) {
    ohca_set_pfc_in in{};
    in.port = 1;
    in.cfg.pfc_en = pfc_en;
    in.cfg.pause = pause;
    in.cfg.trust = trust;
    in.cfg.speed_mbps = speed_mbps;
    return in;
}

// 512 bit times per quantum at 1000 Mbit/s: 512 ns.
constexpr uint64_t kQuantumNs1G = 512;

class PfcTest : public EngineTest {
  protected:
    void SetUp() override {
        EngineTest::SetUp();
        bring_up();
        host_.irqs.clear();
    }
    void set_pfc(const ohca_set_pfc_in &in) {
        ASSERT_EQ(cmd_in(OHCA_CMD_SET_PFC, in).status, OHCA_STATUS_OK);
    }
    // A query command of port 1 and its output.
    template <class In, class Out> Out query_port_cmd(uint16_t op) {
        In in{};
        in.port = 1;
        EXPECT_EQ(cmd(op, &in, sizeof(in), sizeof(Out), kOutBuf).status, OHCA_STATUS_OK);
        return host_.get<Out>(kOutBuf);
    }
    ohca_query_pfc_out query() {
        return query_port_cmd<ohca_query_pfc_in, ohca_query_pfc_out>(OHCA_CMD_QUERY_PFC);
    }
    // The PFC / PAUSE frames the device sent (taken off the wire).
    std::vector<eth::FrameInfo> control_frames() {
        std::vector<eth::FrameInfo> v;
        std::vector<std::vector<uint8_t>> rest;
        for (auto &f : host_.wire) {
            eth::FrameInfo i;
            if (eth::parse(f, i) == eth::FrameError::Ok && i.mac_control) {
                v.push_back(i);
            } else {
                rest.push_back(f);
            }
        }
        host_.wire = std::move(rest);
        return v;
    }
};

// ---- configuration --------------------------------------------------------------

TEST_F(PfcTest, OffAtPowerOnAndSetAsGiven) {
    ohca_query_device_out d{};
    ASSERT_EQ(cmd_out(OHCA_CMD_QUERY_DEVICE, d).status, OHCA_STATUS_OK);
    EXPECT_NE(d.dev_caps & OHCA_DEV_CAP_PFC, 0u);
    auto q = query();
    EXPECT_EQ(q.cfg.pfc_en, 0);
    EXPECT_EQ(q.cfg.pause, 0);
    EXPECT_EQ(q.cfg.trust, OHCA_PFC_TRUST_PCP);
    set_pfc(pfc_in(0x18, 25000, OHCA_PFC_TRUST_DSCP, OHCA_PAUSE_RX));
    q = query();
    EXPECT_EQ(q.cfg.pfc_en, 0x18);
    EXPECT_EQ(q.cfg.pause, OHCA_PAUSE_RX);
    EXPECT_EQ(q.cfg.trust, OHCA_PFC_TRUST_DSCP);
    EXPECT_EQ(q.cfg.speed_mbps, 25000u);
    // A function reset turns it off again.
    bring_up();
    EXPECT_EQ(query().cfg.pfc_en, 0);
}

TEST_F(PfcTest, BadSettingsAreRefusedWithTheField) {
    auto in = pfc_in(1);
    in.port = 2;
    auto r = cmd_in(OHCA_CMD_SET_PFC, in);
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(r.syndrome, offsetof(ohca_set_pfc_in, port));
    in = pfc_in(1);
    in.rsvd[3] = 1;
    r = cmd_in(OHCA_CMD_SET_PFC, in);
    EXPECT_EQ(r.status, OHCA_STATUS_RESERVED_NONZERO);
    EXPECT_EQ(r.syndrome, offsetof(ohca_set_pfc_in, rsvd) + 3);
    in = pfc_in(1, 1000, 2);
    r = cmd_in(OHCA_CMD_SET_PFC, in);
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(r.syndrome, offsetof(ohca_set_pfc_in, cfg) + offsetof(ohca_pfc_config, trust));
    in = pfc_in(1, 1000, OHCA_PFC_TRUST_PCP, 4);
    r = cmd_in(OHCA_CMD_SET_PFC, in);
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(r.syndrome, offsetof(ohca_set_pfc_in, cfg) + offsetof(ohca_pfc_config, pause));
    in = pfc_in(1, 400001);
    r = cmd_in(OHCA_CMD_SET_PFC, in);
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
    in = pfc_in(1);
    in.cfg.rsvd0 = 1;
    EXPECT_EQ(cmd_in(OHCA_CMD_SET_PFC, in).status, OHCA_STATUS_RESERVED_NONZERO);
    EXPECT_EQ(query().cfg.pfc_en, 0); // nothing changed
}

// ---- honour ---------------------------------------------------------------------

TEST_F(PfcTest, PauseFramesNeverReachTheRxRing) {
    create_ring(OHCA_ETH_RING_RX, 4, kRxRing);
    for (int i = 0; i < 4; ++i) {
        post_rx(2048);
    }
    // Off: counted and ignored; on: honoured. Neither reaches the guest.
    EXPECT_EQ(rx(pfc_frame(0x08, 100)), OHCA_ENGINE_RX_CONSUMED);
    set_pfc(pfc_in(0x08));
    EXPECT_EQ(rx(pfc_frame(0x08, 100)), OHCA_ENGINE_RX_CONSUMED);
    const auto pause = eth::make_pause(kPeerMac, 100);
    EXPECT_EQ(rx({pause.begin(), pause.end()}), OHCA_ENGINE_RX_CONSUMED);
    drain();
    EXPECT_EQ(rx_desc(0).flags, 0); // no descriptor used
    EXPECT_EQ(stats().eth_rx_frames, 0u);
    const auto q = query();
    EXPECT_EQ(q.rx_pfc[3], 2u);
    EXPECT_EQ(q.rx_pause, 1u);
    EXPECT_EQ(q.rx_ignored, 2u); // PFC while off, PAUSE while PFC is on
    EXPECT_EQ(q.paused, 0x08);
}

TEST_F(PfcTest, GuestFramesOfThePausedPriorityWaitForExactlyTheQuanta) {
    set_pfc(pfc_in(0x08, 1000));
    create_ring(OHCA_ETH_RING_TX, 4, kTxRing);
    const uint64_t t0 = host_.now;
    ASSERT_EQ(rx(pfc_frame(0x08, 1000)), OHCA_ENGINE_RX_CONSUMED);
    const uint64_t end = t0 + 1000 * kQuantumNs1G;
    EXPECT_EQ(host_.timer, end); // a timer, not a spin
    const auto p3a = frame_to_peer(3, 0xa1);
    const auto p0 = frame_to_peer(0, 0xb0);
    const auto p3b = frame_to_peer(3, 0xa2);
    const auto untagged = frame_to_peer(-1, 0xc0);
    post_tx(p3a);
    post_tx(p0);
    post_tx(p3b);
    post_tx(untagged);
    drain(); // fails if the engine keeps asking for runs
    // Priority 3's first frame is held (its descriptor done), the other
    // priorities go; its second frame waits in the ring with what follows.
    ASSERT_EQ(host_.wire.size(), 1u);
    EXPECT_EQ(host_.wire[0], p0);
    EXPECT_EQ(tx_desc(0).flags, OHCA_ETH_DESC_DONE);
    EXPECT_EQ(tx_desc(1).flags, OHCA_ETH_DESC_DONE);
    EXPECT_EQ(tx_desc(2).flags, 0);
    EXPECT_EQ(query().tx_held, 1u);
    host_.wire.clear();
    host_.now = end - 1;
    ohca_engine_process(e_);
    drain();
    EXPECT_TRUE(host_.wire.empty());
    host_.now = end;
    ohca_engine_process(e_); // the timer's run
    drain();
    ASSERT_EQ(host_.wire.size(), 3u);
    EXPECT_EQ(host_.wire[0], p3a);
    EXPECT_EQ(host_.wire[1], p3b);
    EXPECT_EQ(host_.wire[2], untagged);
    EXPECT_EQ(query().paused, 0);
}

TEST_F(PfcTest, XonResumesAtOnceAndTheTimeFollowsTheSpeed) {
    set_pfc(pfc_in(0x01, 100)); // 100 Mbit/s: a quantum is 5120 ns
    create_ring(OHCA_ETH_RING_TX, 4, kTxRing);
    ASSERT_EQ(rx(pfc_frame(0x01, 0xffff)), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(host_.timer, host_.now + 0xffffull * 5120);
    const auto a = frame_to_peer(-1, 1);
    const auto b = frame_to_peer(-1, 2);
    post_tx(a);
    post_tx(b);
    drain();
    EXPECT_TRUE(host_.wire.empty());
    const unsigned int before = host_.schedules;
    ASSERT_EQ(rx(pfc_frame(0x01, 0)), OHCA_ENGINE_RX_CONSUMED); // XON
    EXPECT_GT(host_.schedules, before);
    drain();
    ASSERT_EQ(host_.wire.size(), 2u);
    EXPECT_EQ(host_.wire[0], a);
    EXPECT_EQ(host_.wire[1], b);
}

// The board's link speed (QEMU's speed property: a switch port's line
// rate) is the port's: QUERY_PORT shows it, and a SET_PFC speed of 0
// times the pause quanta at it.
class PfcBoardSpeedTest : public PfcTest {
  protected:
    PfcBoardSpeedTest() { speed_mbps_ = 200; }
};

TEST_F(PfcBoardSpeedTest, PauseTimedAtTheLinksSpeed) {
    const auto port = query_port_cmd<ohca_query_port_in, ohca_query_port_out>(OHCA_CMD_QUERY_PORT);
    EXPECT_EQ(port.speed_mbps, 200u);
    set_pfc(pfc_in(0x01, 0)); // 0: the port's speed; at 200 Mbit/s a quantum is 2560 ns
    ASSERT_EQ(rx(pfc_frame(0x01, 1000)), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(host_.timer, host_.now + 1000ull * 2560);
}

TEST(PfcBoardSpeed, OutOfRangeSpeedRefusedAtCreation) {
    FakeHost host;
    const ohca_engine_ops ops = FakeHost::ops();
    ohca_engine_config cfg{};
    for (uint32_t bad : {OHCA_ENGINE_MIN_SPEED_MBPS - 1, OHCA_ENGINE_MAX_SPEED_MBPS + 1}) {
        cfg.speed_mbps = bad;
        EXPECT_EQ(ohca_engine_create(&ops, &host, &cfg), nullptr) << bad;
    }
    cfg.speed_mbps = OHCA_ENGINE_MAX_SPEED_MBPS;
    ohca_engine *e = ohca_engine_create(&ops, &host, &cfg);
    EXPECT_NE(e, nullptr);
    ohca_engine_destroy(e);
}

TEST_F(PfcTest, PriorityFromDscpUnderDscpTrust) {
    set_pfc(pfc_in(0x20, 1000, OHCA_PFC_TRUST_DSCP));
    create_ring(OHCA_ETH_RING_TX, 4, kTxRing);
    ASSERT_EQ(rx(pfc_frame(0x20, 1000)), OHCA_ENGINE_RX_CONSUMED);
    auto ip = [](uint8_t dscp, uint8_t fill) {
        auto f = frame_to_peer(-1, fill);
        f[14] = 0x45;
        f[15] = static_cast<uint8_t>(dscp << 2);
        f[16] = 0;
        f[17] = 86; // total length: the frame's 100 - 14
        return f;
    };
    const auto af41 = ip(40, 1); // priority 5
    const auto cs1 = ip(8, 2);   // priority 1
    post_tx(af41);
    post_tx(cs1);
    drain();
    ASSERT_EQ(host_.wire.size(), 1u);
    EXPECT_EQ(host_.wire[0], cs1);
}

TEST_F(PfcTest, GlobalPauseStopsEveryPriority) {
    set_pfc(pfc_in(0, 1000, OHCA_PFC_TRUST_PCP, OHCA_PAUSE_RX));
    create_ring(OHCA_ETH_RING_TX, 4, kTxRing);
    const auto pause = eth::make_pause(kPeerMac, 10);
    ASSERT_EQ(rx({pause.begin(), pause.end()}), OHCA_ENGINE_RX_CONSUMED);
    post_tx(frame_to_peer(0, 1));
    post_tx(frame_to_peer(6, 2));
    drain();
    EXPECT_TRUE(host_.wire.empty());
    host_.now += 10 * kQuantumNs1G;
    ohca_engine_process(e_);
    drain();
    EXPECT_EQ(host_.wire.size(), 2u);
}

// A peer that pauses without end: each frame costs a parse and eight
// timers, nothing queues, a second without a break counts a storm once,
// and the other priorities keep going.
TEST_F(PfcTest, AFloodOfPauseFramesIsBounded) {
    set_pfc(pfc_in(0xff, 1000));
    create_ring(OHCA_ETH_RING_TX, 4, kTxRing);
    create_ring(OHCA_ETH_RING_RX, 4, kRxRing);
    const auto xoff = pfc_frame(0x04, 0xffff);
    const auto xon = pfc_frame(0x04, 0);
    const unsigned int before = host_.schedules;
    for (int i = 0; i < 200000; ++i) {
        ASSERT_EQ(rx(xoff), OHCA_ENGINE_RX_CONSUMED);
        host_.now += 10'000; // 2 s in all
    }
    EXPECT_EQ(host_.schedules, before); // an XOFF asks for no run
    post_tx(frame_to_peer(2, 1));       // held
    post_tx(frame_to_peer(1, 2));       // goes
    drain();
    EXPECT_EQ(host_.wire.size(), 1u);
    const unsigned int mid = host_.schedules;
    for (int i = 0; i < 1000; ++i) {
        ASSERT_EQ(rx(xon), OHCA_ENGINE_RX_CONSUMED);
    }
    // Only the XON that ended the pause asked for a run.
    EXPECT_EQ(host_.schedules, mid + 1);
    drain();
    EXPECT_EQ(host_.wire.size(), 2u);
    const auto q = query();
    EXPECT_EQ(q.rx_pfc[2], 201000u);
    EXPECT_EQ(q.rx_storm, 1u);
    EXPECT_EQ(stats().eth_rx_frames, 0u);
}

// ---- generate -------------------------------------------------------------------

TEST_F(PfcTest, XoffWhenTheRxRingRunsDryXonOnceRefilled) {
    set_pfc(pfc_in(0x08, 1000));
    create_ring(OHCA_ETH_RING_RX, 4, kRxRing); // 16 descriptors, none posted
    ASSERT_EQ(rx(frame_to_us(3, 1)), OHCA_ENGINE_RX_CONSUMED);
    ASSERT_EQ(rx(frame_to_us(3, 2)), OHCA_ENGINE_RX_CONSUMED);
    ASSERT_EQ(rx(frame_to_us(0, 3)), OHCA_ENGINE_RX_CONSUMED); // priority 0: no PFC
    auto c = control_frames();
    ASSERT_EQ(c.size(), 1u); // one XOFF, not one per frame
    EXPECT_EQ(c[0].opcode, eth::kOpPfc);
    EXPECT_EQ(c[0].pfc.enable, 0x08);
    EXPECT_EQ(c[0].pfc.quanta[3], 0xffff);
    EXPECT_EQ(c[0].dst, eth::kPfcDst);
    EXPECT_EQ(query().xoff, 0x08);
    // Refreshed halfway through its time while still dry.
    host_.now += 0xffffull * kQuantumNs1G / 2;
    ohca_engine_process(e_);
    drain();
    c = control_frames();
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].pfc.quanta[3], 0xffff);
    // Hysteresis: three descriptors are not a quarter of the ring.
    for (int i = 0; i < 3; ++i) {
        post_rx(2048);
    }
    EXPECT_TRUE(control_frames().empty());
    post_rx(2048);
    c = control_frames();
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].pfc.enable, 0x08);
    EXPECT_EQ(c[0].pfc.quanta[3], 0);
    const auto q = query();
    EXPECT_EQ(q.xoff, 0);
    EXPECT_EQ(q.tx_pfc[3], 3u);
    EXPECT_EQ(q.tx_pfc[0], 0u);
}

TEST_F(PfcTest, NoXoffWithoutPfcTxAndXonWhenTurnedOff) {
    create_ring(OHCA_ETH_RING_RX, 4, kRxRing);
    ASSERT_EQ(rx(frame_to_us(3, 1)), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_TRUE(control_frames().empty());
    set_pfc(pfc_in(0x08));
    ASSERT_EQ(rx(frame_to_us(3, 1)), OHCA_ENGINE_RX_CONSUMED);
    EXPECT_EQ(control_frames().size(), 1u);
    set_pfc(pfc_in(0)); // the XOFF in force is released
    auto c = control_frames();
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].pfc.quanta[3], 0);
}

TEST_F(PfcTest, GlobalPauseSentWithPauseTx) {
    set_pfc(pfc_in(0, 1000, OHCA_PFC_TRUST_PCP, OHCA_PAUSE_TX));
    create_ring(OHCA_ETH_RING_RX, 4, kRxRing);
    ASSERT_EQ(rx(frame_to_us(5, 1)), OHCA_ENGINE_RX_CONSUMED);
    auto c = control_frames();
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].opcode, eth::kOpPause);
    for (int i = 0; i < 4; ++i) {
        post_rx(2048);
    }
    c = control_frames();
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(query().tx_pause, 2u);
}

// ---- RoCE -----------------------------------------------------------------------

class PfcRoceTest : public ::testing::Test {
  protected:
    void SetUp() override {
        for (int i = 0; i < 2; ++i) {
            side[i] = make_side(n(i), 1 << 16, 6,
                                [i](size_t k) { return static_cast<uint8_t>(k * (i + 3) + 1); });
        }
        a.connect(side[0].qp, side[1].qp.qpn, b);
        b.connect(side[1].qp, side[0].qp.qpn, a);
    }
    RdmaNode &n(int i) { return i == 0 ? a : b; }
    void set_pfc(RdmaNode &x, uint8_t en) {
        ohca_set_pfc_in in = pfc_in(en, 1000);
        ASSERT_EQ(x.cmd(OHCA_CMD_SET_PFC, &in, sizeof(in)).status, OHCA_STATUS_OK);
    }
    ohca_query_pfc_out query(RdmaNode &x) {
        ohca_query_pfc_in in{};
        in.port = 1;
        ohca_query_pfc_out out{};
        EXPECT_EQ(x.cmd(OHCA_CMD_QUERY_PFC, &in, sizeof(in), &out, sizeof(out)).status,
                  OHCA_STATUS_OK);
        return out;
    }
    void write(size_t len) {
        SendReq r;
        r.opcode = OHCA_WR_RDMA_WRITE;
        r.wr_id = 7;
        r.flags = OHCA_WQE_SIGNALED;
        r.remote_addr = side[1].buf;
        r.rkey = side[1].key;
        r.sges = {{side[0].buf, static_cast<uint32_t>(len), side[0].key}};
        a.post_send(side[0].qp, r);
    }
    static bool is_roce(const std::vector<uint8_t> &f) {
        eth::FrameInfo i;
        return eth::parse(f, i) == eth::FrameError::Ok && !i.mac_control;
    }
    RdmaNode a{1};
    RdmaNode b{2};
    Side side[2];
};

TEST_F(PfcRoceTest, DataWaitsForThePauseOnItsPriorityOnly) {
    set_pfc(a, 0x09); // priorities 0 (the RoCE packets' under PCP trust) and 3
    // Priority 3 paused: RoCE (priority 0) goes on.
    auto f3 = pfc_frame(0x08, 0xffff);
    ASSERT_EQ(ohca_engine_receive_frame(a.e, f3.data(), f3.size()), OHCA_ENGINE_RX_CONSUMED);
    write(4096);
    a.process();
    EXPECT_FALSE(a.host.wire.empty());
    pump(a, b);
    EXPECT_EQ(a.poll(side[0].scq).size(), 1u);
    // Priority 0 paused for 2000 quanta: nothing leaves, no spinning.
    const uint64_t t0 = a.host.now;
    auto f0 = pfc_frame(0x01, 2000);
    ASSERT_EQ(ohca_engine_receive_frame(a.e, f0.data(), f0.size()), OHCA_ENGINE_RX_CONSUMED);
    write(4096);
    a.process(); // fails if the engine keeps rescheduling
    EXPECT_TRUE(a.host.wire.empty());
    EXPECT_EQ(a.host.timer, t0 + 2000 * kQuantumNs1G);
    a.host.now = t0 + 2000 * kQuantumNs1G - 1;
    ohca_engine_process(a.e);
    a.process();
    EXPECT_TRUE(a.host.wire.empty());
    a.host.now += 1;
    ohca_engine_process(a.e); // the timer's run
    a.process();
    EXPECT_FALSE(a.host.wire.empty());
    pump(a, b);
    EXPECT_EQ(a.poll(side[0].scq).size(), 1u);
}

TEST_F(PfcRoceTest, AcksWaitForThePauseToo) {
    set_pfc(b, 0x01);
    auto f0 = pfc_frame(0x01, 0xffff);
    ASSERT_EQ(ohca_engine_receive_frame(b.e, f0.data(), f0.size()), OHCA_ENGINE_RX_CONSUMED);
    write(64);
    a.process();
    ASSERT_EQ(a.host.wire.size(), 1u);
    auto req = a.host.wire[0];
    a.host.wire.clear();
    ASSERT_EQ(ohca_engine_receive_frame(b.e, req.data(), req.size()), OHCA_ENGINE_RX_CONSUMED);
    b.process();
    EXPECT_TRUE(b.host.wire.empty()); // the ACK waits in the QP
    auto xon = pfc_frame(0x01, 0);
    ASSERT_EQ(ohca_engine_receive_frame(b.e, xon.data(), xon.size()), OHCA_ENGINE_RX_CONSUMED);
    b.process();
    ASSERT_EQ(b.host.wire.size(), 1u);
    pump(a, b);
    EXPECT_EQ(a.poll(side[0].scq).size(), 1u);
}

// An ACK asks the port whether its priority is paused only once some
// pause has been set (TransportServices::tx_paused tests the port's record
// of set pauses first): before any PFC frame, with a pause on another
// priority, on its own priority, and after XON.
TEST_F(PfcRoceTest, AckAsksThePortExactlyWhileAPauseIsSet) {
    set_pfc(b, 0x09);
    auto exchange = [&](uint64_t wr_id) {
        write(64);
        a.process();
        EXPECT_EQ(a.host.wire.size(), 1u) << wr_id;
        const auto req = a.host.wire.at(0);
        a.host.wire.clear();
        EXPECT_EQ(ohca_engine_receive_frame(b.e, req.data(), req.size()), OHCA_ENGINE_RX_CONSUMED);
        b.process();
    };
    exchange(1); // no pause ever set: the ACK goes
    EXPECT_EQ(b.host.wire.size(), 1u);
    pump(a, b);
    EXPECT_EQ(a.poll(side[0].scq).size(), 1u);
    auto f3 = pfc_frame(0x08, 0xffff); // priority 3 only: the ACK (priority 0) goes
    ASSERT_EQ(ohca_engine_receive_frame(b.e, f3.data(), f3.size()), OHCA_ENGINE_RX_CONSUMED);
    exchange(2);
    EXPECT_EQ(b.host.wire.size(), 1u);
    pump(a, b);
    EXPECT_EQ(a.poll(side[0].scq).size(), 1u);
    auto f0 = pfc_frame(0x01, 0xffff); // priority 0: the ACK waits
    ASSERT_EQ(ohca_engine_receive_frame(b.e, f0.data(), f0.size()), OHCA_ENGINE_RX_CONSUMED);
    exchange(3);
    EXPECT_TRUE(b.host.wire.empty());
    auto xon = pfc_frame(0x09, 0);
    ASSERT_EQ(ohca_engine_receive_frame(b.e, xon.data(), xon.size()), OHCA_ENGINE_RX_CONSUMED);
    b.process();
    EXPECT_EQ(b.host.wire.size(), 1u);
    pump(a, b);
    EXPECT_EQ(a.poll(side[0].scq).size(), 1u);
}

// The RoCE backlog filling past its XOFF mark sends XOFF for the
// priority of the frames in it; draining below the XON mark sends XON.
TEST_F(PfcRoceTest, XoffWhenTheRoceBacklogFillsXonWhenDrained) {
    set_pfc(b, 0x01);
    write(64);
    a.process();
    ASSERT_EQ(a.host.wire.size(), 1u);
    const auto req = a.host.wire[0];
    a.host.wire.clear();
    for (size_t i = 0; i < 800; ++i) {
        ASSERT_EQ(ohca_engine_receive_frame(b.e, req.data(), req.size()), OHCA_ENGINE_RX_CONSUMED);
    }
    auto ctl = [](RdmaNode &x) {
        std::vector<eth::FrameInfo> v;
        for (auto &f : x.host.wire) {
            eth::FrameInfo i;
            if (eth::parse(f, i) == eth::FrameError::Ok && i.mac_control) {
                v.push_back(i);
            }
        }
        x.host.wire.clear();
        return v;
    };
    auto c = ctl(b);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].pfc.enable, 0x01);
    EXPECT_EQ(c[0].pfc.quanta[0], 0xffff);
    b.process(); // the backlog drains (duplicates answered)
    std::vector<eth::FrameInfo> after;
    for (auto &f : b.host.wire) {
        eth::FrameInfo i;
        if (eth::parse(f, i) == eth::FrameError::Ok && i.mac_control) {
            after.push_back(i);
        }
    }
    ASSERT_EQ(after.size(), 1u);
    EXPECT_EQ(after[0].pfc.quanta[0], 0);
    EXPECT_EQ(query(b).xoff, 0);
}

} // namespace
} // namespace ohca::test
