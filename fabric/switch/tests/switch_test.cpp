// SPDX-License-Identifier: GPL-2.0-or-later
// ohca-switch's core through the fake socket layer (fake_peer.hpp).
#include "fake_peer.hpp"
#include "golden.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>

using namespace ohca::fabric;
using namespace ohca::fabric::test;
using namespace ohca::ib;

namespace {

constexpr uint64_t kMs = 1'000'000;

Smp dr_smp(uint8_t meth, uint16_t attr_id, uint32_t mod, std::initializer_list<uint8_t> path,
           const SmpData &data = {}) {
    Smp s;
    s.hdr.mgmt_class = mgmt_class::SubnDirectedRoute;
    s.hdr.method = meth;
    s.hdr.tid = 0x1234;
    s.hdr.attr_id = attr_id;
    s.hdr.attr_mod = mod;
    s.dr_slid = kPermissiveLid;
    s.dr_dlid = kPermissiveLid;
    s.hop_cnt = static_cast<uint8_t>(path.size());
    s.hop_ptr = 1; // as the SM's node sends it: already past its own hop
    uint8_t i = 1;
    for (uint8_t p : path) {
        s.initial_path[i++] = p;
    }
    s.data = data;
    return s;
}

struct Fabric {
    std::unique_ptr<Switch> sw;
    std::vector<std::unique_ptr<FakePeer>> peers; // [0] unused
    // sm()'s time: advanced by `step` per SMP (a shaped switch earns the
    // tokens for its replies); 0 for the tests that keep time at 0.
    uint64_t clock = 0;
    uint64_t step = 0;
    explicit Fabric(uint8_t ports = 4, SwitchConfig cfg = {}) {
        cfg.ports = ports;
        sw = std::make_unique<Switch>(cfg);
        peers.emplace_back();
        for (uint8_t p = 1; p <= ports; ++p) {
            peers.push_back(std::make_unique<FakePeer>(*sw, p));
        }
    }
    FakePeer &peer(uint8_t p) { return *peers[p]; }
    void connect_all() {
        for (size_t p = 1; p < peers.size(); ++p) {
            peers[p]->connect();
        }
        pump();
    }
    void pump(uint64_t now = 0) {
        for (int round = 0; round < 4; ++round) {
            for (size_t p = 1; p < peers.size(); ++p) {
                peers[p]->pump(now);
            }
        }
    }
    // An SMP from port 1's peer (the SM's node); returns the reply.
    Smp sm(const Smp &s) {
        FakePeer &p1 = peer(1);
        p1.data.clear();
        clock += step;
        p1.send_raw(framed(smp_frame(s)), clock);
        pump(clock);
        EXPECT_EQ(p1.data.size(), 1u);
        if (p1.data.empty()) {
            return {};
        }
        Packet pkt;
        EXPECT_EQ(parse(p1.data.back(), pkt), PacketError::Ok);
        return Smp::read(mad_of(p1.data.back()));
    }
    // PortInfo of 'port' as the SM reads it, changed by 'edit' and Set
    // (PortState NoChange unless 'edit' sets one); the reply's status.
    uint16_t edit_port_info(uint8_t port, const std::function<void(PortInfo &)> &edit) {
        PortInfo pi = PortInfo::read(sm(dr_smp(method::Get, attr::PortInfo, port, {1})).data);
        pi.port_state = port_state::NoChange;
        edit(pi);
        SmpData d{};
        pi.write(d);
        return sm(dr_smp(method::Set, attr::PortInfo, port, {1}, d)).status();
    }
    // What an SM does: the switch's LID 1, LFT: LID 1+p -> port p, every
    // port Armed then Active.
    void program() {
        SmpData d{};
        PortInfo pi = PortInfo::read(sm(dr_smp(method::Get, attr::PortInfo, 0, {1})).data);
        pi.lid = 1;
        pi.port_state = port_state::NoChange;
        pi.write(d);
        EXPECT_EQ(sm(dr_smp(method::Set, attr::PortInfo, 0, {1}, d)).status(), 0);
        d.fill(kLftNoPort);
        d[1] = 0;
        for (uint8_t p = 1; p <= sw->ports(); ++p) {
            d[1 + p] = p;
        }
        EXPECT_EQ(sm(dr_smp(method::Set, attr::LinearFdb, 0, {1}, d)).status(), 0);
        for (uint8_t st : {port_state::Armed, port_state::Active}) {
            for (uint8_t p = 0; p <= sw->ports(); ++p) {
                PortInfo q = PortInfo::read(sm(dr_smp(method::Get, attr::PortInfo, p, {1})).data);
                q.port_state = st;
                q.write(d);
                EXPECT_EQ(sm(dr_smp(method::Set, attr::PortInfo, p, {1}, d)).status(), 0) << int(p);
            }
        }
        for (size_t p = 1; p < peers.size(); ++p) {
            peers[p]->data.clear();
        }
    }
};

} // namespace

TEST(Switch, LinkInitAdvertisesCredit) {
    Fabric f(2);
    f.connect_all();
    // 4 VLs, 256 blocks each, from the switch's initialization FCPs.
    for (uint8_t vl = 0; vl < 4; ++vl) {
        EXPECT_EQ(f.peer(1).credits.credit(vl), 256) << int(vl);
    }
    EXPECT_TRUE(f.sw->credits(1).may_send(0, 66));
    EXPECT_GE(f.peer(1).fcps, 4u);
}

TEST(Switch, DirectedRouteNodeInfo) {
    Fabric f(4);
    f.connect_all();
    const Smp r = f.sm(dr_smp(method::Get, attr::NodeInfo, 0, {1}));
    EXPECT_EQ(r.hdr.method, method::GetResp);
    EXPECT_TRUE(r.direction);
    EXPECT_EQ(r.hop_ptr, 1);
    EXPECT_EQ(r.return_path[1], 1);
    const NodeInfo n = NodeInfo::read(r.data);
    EXPECT_EQ(n.node_type, node_type::Switch);
    EXPECT_EQ(n.num_ports, 4);
    EXPECT_EQ(n.local_port_num, 1);
    EXPECT_EQ(f.sw->stats(1).smp_local, 1u);
}

TEST(Switch, DirectedRouteForwardingBothWays) {
    Fabric f(4);
    f.connect_all();
    // SM on port 1, target two hops away through port 3.
    f.peer(1).send_raw(framed(smp_frame(dr_smp(method::Get, attr::NodeInfo, 0, {1, 3}))));
    f.pump();
    ASSERT_EQ(f.peer(3).data.size(), 1u);
    Packet pkt;
    ASSERT_EQ(parse(f.peer(3).data[0], pkt), PacketError::Ok); // resealed
    EXPECT_EQ(pkt.lrh.vl, kVl15);
    Smp out = Smp::read(mad_of(f.peer(3).data[0]));
    EXPECT_EQ(out.hop_ptr, 2);
    EXPECT_EQ(out.return_path[1], 1);
    EXPECT_FALSE(out.direction);

    // The node behind port 3 answers (its MAD layer: D set, pointer 2).
    out.direction = true;
    out.hdr.method = method::GetResp;
    f.peer(3).send_raw(framed(smp_frame(out)));
    f.pump();
    ASSERT_EQ(f.peer(1).data.size(), 1u);
    const Smp back = Smp::read(mad_of(f.peer(1).data[0]));
    EXPECT_TRUE(back.direction);
    EXPECT_EQ(back.hop_ptr, 1);

    // Paths naming port 0, a port beyond N, or a bad hop pointer: dropped.
    const uint64_t drops = f.sw->stats(1).relay_drops;
    f.peer(1).send_raw(framed(smp_frame(dr_smp(method::Get, attr::NodeInfo, 0, {1, 9}))));
    f.peer(1).send_raw(framed(smp_frame(dr_smp(method::Get, attr::NodeInfo, 0, {1, 0}))));
    Smp bad = dr_smp(method::Get, attr::NodeInfo, 0, {1, 2});
    bad.hop_ptr = 0;
    f.peer(1).send_raw(framed(smp_frame(bad)));
    f.pump();
    EXPECT_EQ(f.sw->stats(1).relay_drops, drops + 3);
}

TEST(Switch, UnicastForwardingByLft) {
    Fabric f(4);
    f.connect_all();
    f.program();
    for (uint8_t p = 1; p <= 4; ++p) {
        EXPECT_EQ(f.sw->sma_state().ports[p].info.port_state, port_state::Active);
    }
    const auto pkt = data_frame(0, 0, 4, 2, 100); // LID 4 = port 3
    ASSERT_TRUE(f.peer(1).send(pkt));
    f.pump();
    ASSERT_EQ(f.peer(3).data.size(), 1u);
    EXPECT_EQ(f.peer(3).data[0], pkt);
    EXPECT_TRUE(f.peer(2).data.empty());
    // No route: LID 9 (no entry), LID 2 (back to the input).
    f.peer(1).send(data_frame(0, 0, 9, 2, 12));
    f.peer(1).send(data_frame(0, 0, 2, 2, 12));
    f.pump();
    EXPECT_EQ(f.sw->stats(1).relay_drops, 2u);
    EXPECT_EQ(f.sw->sma_state().ports[1].counters.rcv_switch_relay_errors, 2);
    EXPECT_EQ(f.sw->sma_state().ports[3].counters_ext.xmit_pkts, 1u);
}

TEST(Switch, DataWaitsForActive) {
    Fabric f(2);
    f.connect_all();
    // Ports in Init: data is not accepted (SMPs are).
    f.peer(1).send(data_frame(0, 0, 3, 2, 12));
    f.pump();
    EXPECT_EQ(f.sw->stats(1).inactive_discards, 1u);
    EXPECT_TRUE(f.peer(2).data.empty());
}

TEST(Switch, SlToVlRewritesVlAndVcrc) {
    Fabric f(2);
    f.connect_all();
    f.program();
    SmpData d{};
    d[0] = 0x02; // SL0 -> VL0, SL1 -> VL2
    EXPECT_EQ(f.sm(dr_smp(method::Set, attr::SlToVlTable, (1u << 8) | 2, {1}, d)).status(), 0);
    f.peer(1).send(data_frame(0, 1, 3, 2, 40));
    f.pump();
    ASSERT_EQ(f.peer(2).data.size(), 1u);
    Packet pkt;
    ASSERT_EQ(parse(f.peer(2).data[0], pkt), PacketError::Ok);
    EXPECT_EQ(pkt.lrh.vl, 2);
}

TEST(Switch, MulticastReplication) {
    Fabric f(4);
    f.connect_all();
    f.program();
    SmpData d{};
    put16(&d[2], 0x000C | 0x0002); // MLID 0xC001: ports 1, 2, 3
    EXPECT_EQ(f.sm(dr_smp(method::Set, attr::MulticastFdb, 0, {1}, d)).status(), 0);
    f.peer(1).data.clear();
    f.peer(1).send(data_frame(0, 0, 0xC001, 2, 64));
    f.pump();
    EXPECT_TRUE(f.peer(1).data.empty()); // never back to the input
    EXPECT_EQ(f.peer(2).data.size(), 1u);
    EXPECT_EQ(f.peer(3).data.size(), 1u);
    EXPECT_TRUE(f.peer(4).data.empty());
    EXPECT_EQ(f.sw->queued_packets(1), 0u);
}

// The heart of it: a slow receiver is backpressure, not loss.
TEST(Switch, CreditBackpressureIsLossless) {
    SwitchConfig cfg;
    cfg.vl_buffer_blocks = 40;
    Fabric f(3, cfg);
    f.connect_all();
    f.program();
    FakePeer &rx = f.peer(2);
    rx.auto_credit = false; // holds its buffer until told
    // The receiver's buffer is 256 blocks; each packet is 33 blocks.
    std::vector<std::vector<uint8_t>> sent;
    uint32_t psn = 0;
    for (int round = 0; round < 200; ++round) {
        auto pkt = data_frame(0, 0, 3, 2, 2048, psn);
        if (f.peer(1).send(pkt)) {
            sent.push_back(pkt);
            ++psn;
        }
        f.pump();
    }
    // Receiver full (7 x 33 = 231 of 256), switch input full (1 x 33 of
    // 40), the sender out of credit: nothing else moved, nothing dropped.
    EXPECT_EQ(rx.data.size(), 7u);
    EXPECT_EQ(f.sw->queued_packets(1), 1u);
    EXPECT_LE(f.sw->queued_blocks(1), 40u);
    EXPECT_FALSE(f.peer(1).credits.may_send(0, 33));
    EXPECT_EQ(sent.size(), 8u);
    // The receiver drains: everything flows, in order.
    rx.auto_credit = true;
    for (size_t i = 0; i < rx.data.size(); ++i) {
        rx.credits.on_released(0, 33);
    }
    for (int round = 0; round < 400 && sent.size() < 100; ++round) {
        auto pkt = data_frame(0, 0, 3, 2, 2048, psn);
        if (f.peer(1).send(pkt)) {
            sent.push_back(pkt);
            ++psn;
        }
        f.pump();
    }
    f.pump();
    ASSERT_EQ(rx.data.size(), sent.size());
    EXPECT_EQ(rx.data, sent);
    EXPECT_EQ(f.sw->stats(1).overruns, 0u);
    EXPECT_EQ(f.sw->sma_state().ports[2].counters.xmit_discards, 0);
    EXPECT_GT(f.sw->stats(2).credit_waits, 0u);
}

TEST(Switch, OverrunningPeerIsBounded) {
    SwitchConfig cfg;
    cfg.vl_buffer_blocks = 64;
    Fabric f(2, cfg);
    f.connect_all();
    f.program();
    f.peer(2).reads = false; // and the output never drains
    for (int i = 0; i < 500; ++i) {
        f.peer(1).send(data_frame(0, 0, 3, 2, 1000, static_cast<uint32_t>(i)), 0, true);
    }
    EXPECT_LE(f.sw->queued_blocks(1), 64u);
    EXPECT_GT(f.sw->stats(1).overruns, 400u);
    EXPECT_LE(f.sw->output_bytes(2), cfg.out_limit + 4 + kMaxFrameBytes + 200);
    EXPECT_EQ(f.sw->sma_state().ports[1].counters.excessive_buffer_overrun_errors, 15);
}

TEST(Switch, GarbageAndHugeLengthsDoNotHurtOtherPorts) {
    Fabric f(3);
    f.connect_all();
    f.program();
    std::mt19937 rng(5);
    for (int i = 0; i < 2000; ++i) {
        std::vector<uint8_t> junk(rng() % 300);
        for (auto &b : junk) {
            b = static_cast<uint8_t>(rng());
        }
        f.peer(3).send_raw(framed(junk));
    }
    EXPECT_GT(f.sw->stats(3).bad_frames + f.sw->stats(3).bad_link_packets, 1900u);
    // A length prefix of 4 GiB: skipped as it arrives, never stored.
    const uint8_t huge[4] = {0xFF, 0xFF, 0xFF, 0xF0};
    f.peer(3).send_raw(huge);
    std::vector<uint8_t> filler(1 << 20, 0xAB);
    f.peer(3).send_raw(filler);
    EXPECT_EQ(f.sw->queued_packets(3), 0u);
    // Ports 1 and 2 still work.
    const auto pkt = data_frame(0, 0, 3, 2, 100);
    ASSERT_TRUE(f.peer(1).send(pkt));
    f.pump();
    ASSERT_EQ(f.peer(2).data.size(), 1u);
    EXPECT_EQ(f.peer(2).data[0], pkt);
}

// An FCP for a VL the port does not operate (a CA with more VLs, before
// the SM set OperationalVLs on both ends) is ignored, not an error; a
// corrupted one is an error. Neither gives credit.
TEST(Switch, LinkPacketsForOtherVlsAreIgnoredCorruptOnesBad) {
    Fabric f(2);
    f.connect_all();
    const PortStats before = f.sw->stats(1);
    std::array<uint8_t, 6> b{};
    FlowControlPacket{FcOp::Normal, 0, 6, 100}.write(b); // VL6: the switch has VL0-3
    f.peer(1).send_raw(framed(b));
    FlowControlPacket{FcOp::Normal, 0, 0, 100}.write(b);
    b[4] ^= 1; // LPCRC
    f.peer(1).send_raw(framed(b));
    f.pump();
    const PortStats &st = f.sw->stats(1);
    EXPECT_EQ(st.ignored_link_packets, before.ignored_link_packets + 1);
    EXPECT_EQ(st.bad_link_packets, before.bad_link_packets + 1);
    EXPECT_EQ(st.link_packets_in, before.link_packets_in);
    EXPECT_NE(f.sw->stats_json().find("\"ignored_link_packets\": 1"), std::string::npos);
}

TEST(Switch, LyingFcclIsCappedAndOutputBounded) {
    Fabric f(2);
    f.connect_all();
    f.program();
    FakePeer &liar = f.peer(2);
    liar.reads = false;
    // Claims 2048 blocks of credit on VL0 repeatedly without reading.
    for (int i = 0; i < 50; ++i) {
        std::array<uint8_t, 6> b{};
        FlowControlPacket{FcOp::Normal, 0, 0, 2048}.write(b);
        liar.send_raw(framed(b));
        f.peer(1).send(data_frame(0, 0, 3, 2, 4000, static_cast<uint32_t>(i)));
    }
    EXPECT_LE(f.sw->output_bytes(2), SwitchConfig{}.out_limit + 4 + kMaxFrameBytes + 200);
    EXPECT_LE(f.sw->queued_blocks(1), 256u);
    // A lie "ahead by more than 2048" gives no credit at all.
    std::array<uint8_t, 6> b{};
    FlowControlPacket{FcOp::Normal, 0, 0, 3000}.write(b);
    liar.send_raw(framed(b));
    EXPECT_EQ(f.sw->credits(2).credit(0), 0);
}

TEST(Switch, PeerThatNeverReturnsCreditCannotWedgeOthers) {
    Fabric f(4);
    f.connect_all();
    f.program();
    // The SM's HOQLife for port 2: 4.096 us << 12 = 16.8 ms.
    SmpData d{};
    PortInfo pi = PortInfo::read(f.sm(dr_smp(method::Get, attr::PortInfo, 2, {1})).data);
    pi.port_state = port_state::NoChange;
    pi.hoq_life = 12;
    pi.write(d);
    EXPECT_EQ(f.sm(dr_smp(method::Set, attr::PortInfo, 2, {1}, d)).status(), 0);
    f.peer(1).data.clear();
    FakePeer &stuck = f.peer(2);
    stuck.auto_credit = false;
    // Port 1 fills port 2's credit and its own input buffer towards it.
    for (int i = 0; i < 40; ++i) {
        f.peer(1).send(data_frame(0, 0, 3, 2, 2000, static_cast<uint32_t>(i)));
        f.pump();
    }
    EXPECT_FALSE(f.peer(1).credits.may_send(0, 33));
    // Another input is not held by it: port 4 -> port 3 flows at once.
    ASSERT_TRUE(f.peer(4).send(data_frame(0, 0, 4, 5, 100, 7)));
    f.pump();
    EXPECT_EQ(f.peer(3).data.size(), 1u);
    // Port 1's own packet to port 3 waits behind the stuck heads until
    // each reaches its lifetime; then port 1 gets its credit back.
    uint64_t now = 0;
    bool sent = false;
    for (int s = 0; s < 100 && f.peer(3).data.size() < 2; ++s) {
        now += 20 * kMs;
        f.sw->tick(now);
        f.pump(now);
        if (!sent) {
            sent = f.peer(1).send(data_frame(0, 0, 4, 2, 100, 999), now);
            f.pump(now);
        }
    }
    EXPECT_EQ(f.peer(3).data.size(), 2u);
    EXPECT_GT(f.sw->stats(2).hoq_discards, 0u);
    EXPECT_GT(f.sw->sma_state().ports[2].counters.xmit_discards, 0);
    EXPECT_EQ(f.sw->stats(1).overruns, 0u);
}

TEST(Switch, DisconnectDiscardsWhatWaitsForThePort) {
    Fabric f(3);
    f.connect_all();
    f.program();
    f.peer(2).auto_credit = false;
    for (int i = 0; i < 20; ++i) {
        f.peer(1).send(data_frame(0, 0, 3, 2, 2000, static_cast<uint32_t>(i)));
        f.pump();
    }
    EXPECT_GT(f.sw->queued_packets(1), 0u);
    f.sw->disconnect(2, 0);
    EXPECT_EQ(f.sw->queued_packets(1), 0u);
    EXPECT_EQ(f.sw->sma_state().ports[2].info.port_state, port_state::Down);
    EXPECT_TRUE(f.sw->sma_state().switch_info.port_state_change);
    // Port 1 got its credit back.
    f.pump();
    EXPECT_EQ(f.peer(1).credits.credit(0), 256);
}

TEST(Switch, Vl15QueueBounded) {
    Fabric f(3);
    f.connect_all();
    f.peer(3).reads = false;
    for (int i = 0; i < 2000; ++i) {
        f.peer(1).send_raw(framed(smp_frame(dr_smp(method::Get, attr::NodeInfo, 0, {1, 3}))));
    }
    EXPECT_LE(f.sw->queued_packets(1), 16u);
    EXPECT_GT(f.sw->stats(1).vl15_dropped, 0u);
    EXPECT_GT(f.sw->sma_state().ports[1].counters.vl15_dropped, 0);
}

TEST(Switch, LidRoutedSmpAndPma) {
    Fabric f(2);
    f.connect_all();
    f.program();
    // LID-routed Get NodeInfo to the switch's LID 1 from LID 2 (port 1).
    Smp s;
    s.hdr.mgmt_class = mgmt_class::SubnLidRouted;
    s.hdr.method = method::Get;
    s.hdr.attr_id = attr::NodeInfo;
    f.peer(1).send_raw(framed(smp_frame(s, 1, 2)));
    f.pump();
    ASSERT_EQ(f.peer(1).data.size(), 1u);
    Packet pkt;
    ASSERT_EQ(parse(f.peer(1).data[0], pkt), PacketError::Ok);
    EXPECT_EQ(pkt.lrh.dlid, 2);
    EXPECT_EQ(pkt.lrh.slid, 1);
    EXPECT_EQ(NodeInfo::read(Smp::read(mad_of(f.peer(1).data[0])).data).node_type,
              node_type::Switch);
    f.peer(1).data.clear();

    // perfquery: PortCounters of port 2 through QP1 on VL0.
    Mad m{};
    MadHeader h;
    h.mgmt_class = mgmt_class::Perf;
    h.method = method::Get;
    h.attr_id = attr::PortCounters;
    h.write(m);
    m[kPmaDataOffset + 1] = 2;
    Smp carrier = Smp::read(m);
    auto gmp = smp_frame(carrier, 1, 2, 1, 0, 0x80010000);
    std::memcpy(gmp.data() + kLrhBytes + kBthBytes + 8, m.data(), kMadBytes);
    put32(gmp.data() + kLrhBytes + kBthBytes + 4, 1); // from QP1
    seal(gmp);
    ASSERT_TRUE(f.peer(1).send(gmp));
    f.pump();
    ASSERT_EQ(f.peer(1).data.size(), 1u);
    ASSERT_EQ(parse(f.peer(1).data[0], pkt), PacketError::Ok);
    EXPECT_EQ(pkt.lrh.vl, 0);
    EXPECT_EQ(pkt.bth.dest_qp, 1u);
    const Mad r = mad_of(f.peer(1).data[0]);
    EXPECT_EQ(MadHeader::read(r).method, method::GetResp);
    EXPECT_EQ(MadHeader::read(r).status, 0);
    EXPECT_EQ(r[kPmaDataOffset + 1], 2);
}

TEST(Switch, TrapToTheSmOnLinkChange) {
    Fabric f(3);
    f.connect_all();
    f.program();
    // The SM (LID 2, behind port 1) tells the switch where it is.
    EXPECT_EQ(f.edit_port_info(0, [](PortInfo &pi) { pi.master_sm_lid = 2; }), 0);
    f.peer(1).data.clear();
    f.sw->disconnect(3, 0);
    f.pump();
    ASSERT_EQ(f.peer(1).data.size(), 1u);
    Packet pkt;
    ASSERT_EQ(parse(f.peer(1).data[0], pkt), PacketError::Ok);
    EXPECT_EQ(pkt.lrh.dlid, 2);
    EXPECT_EQ(pkt.lrh.slid, 1);
    const Smp t = Smp::read(mad_of(f.peer(1).data[0]));
    EXPECT_EQ(t.hdr.method, method::Trap);
    const Notice n = Notice::read(t.data);
    EXPECT_EQ(n.trap_number, trap::LinkStateChange);
    EXPECT_EQ(n.details[1], 1); // LIDADDR: the switch
    EXPECT_EQ(f.sw->stats(0).traps_sent, 1u);
}

// The SM (or a tool such as ibportstate) sets a port Down: the link
// retrains to Init, SwitchInfo says a port changed, and the SM hears it
// at once: trap 128, LID-routed from QP0 on VL15 to the master SM, with
// the switch's LID as issuer and LIDADDR; one trap per Set. A port the SM
// disables traps too.
TEST(Switch, TrapToTheSmWhenAPortIsSetDown) {
    Fabric f(3);
    f.connect_all();
    f.program();
    EXPECT_EQ(f.edit_port_info(0, [](PortInfo &pi) { pi.master_sm_lid = 2; }), 0);
    // A Set of port 3: what came back to the SM's port (the reply, a trap).
    auto set_port3 = [&f](const PortInfo &q) {
        SmpData d{};
        q.write(d);
        f.peer(1).data.clear();
        f.peer(1).send_raw(framed(smp_frame(dr_smp(method::Set, attr::PortInfo, 3, {1}, d))), 0);
        f.pump();
        return f.peer(1).data;
    };
    PortInfo pi;
    for (int round = 0; round < 2; ++round) {
        pi = PortInfo::read(f.sm(dr_smp(method::Get, attr::PortInfo, 3, {1})).data);
        EXPECT_EQ(pi.port_state, port_state::Active);
        pi.port_state = port_state::Down;
        pi.phys_state = phys_state::NoChange;
        const auto back = set_port3(pi);
        ASSERT_EQ(back.size(), 2u) << round;
        std::vector<uint8_t> fr;
        for (const auto &got : back) {
            const Smp m = Smp::read(mad_of(got));
            if (m.hdr.method == method::GetResp) {
                EXPECT_EQ(m.status(), 0);
            } else {
                fr = got;
            }
        }
        ASSERT_FALSE(fr.empty());
        Packet pkt;
        ASSERT_EQ(parse(fr, pkt), PacketError::Ok);
        EXPECT_EQ(pkt.lrh.vl, kVl15);
        EXPECT_EQ(pkt.lrh.dlid, 2);
        EXPECT_EQ(pkt.lrh.slid, 1);
        EXPECT_FALSE(pkt.has_grh);
        EXPECT_EQ(pkt.bth.dest_qp, 0u);
        EXPECT_EQ(get32(fr.data() + pkt.payload_offset + 4) & kQpnMask, 0u); // DETH: QP0
        const Smp t = Smp::read(mad_of(fr));
        EXPECT_EQ(t.hdr.mgmt_class, mgmt_class::SubnLidRouted);
        EXPECT_EQ(t.hdr.method, method::Trap);
        EXPECT_EQ(t.hdr.attr_id, attr::Notice);
        const Notice n = Notice::read(t.data);
        EXPECT_TRUE(n.is_generic);
        EXPECT_EQ(n.type, notice_type::Urgent);
        EXPECT_EQ(n.producer_type, 2u); // a switch
        EXPECT_EQ(n.trap_number, trap::LinkStateChange);
        EXPECT_EQ(n.issuer_lid, 1);
        EXPECT_EQ(n.details[0], 0); // LIDADDR: the switch's
        EXPECT_EQ(n.details[1], 1);
        EXPECT_EQ(f.sw->stats(0).traps_sent, static_cast<uint64_t>(round + 1));
        const SwitchInfo si =
            SwitchInfo::read(f.sm(dr_smp(method::Get, attr::SwitchInfo, 0, {1})).data);
        EXPECT_TRUE(si.port_state_change);
        // Retrained to Init; the SM activates it again (no trap for that).
        pi = PortInfo::read(f.sm(dr_smp(method::Get, attr::PortInfo, 3, {1})).data);
        EXPECT_EQ(pi.port_state, port_state::Init);
        for (uint8_t st : {port_state::Armed, port_state::Active}) {
            EXPECT_EQ(f.edit_port_info(3, [st](PortInfo &q) { q.port_state = st; }), 0);
        }
        EXPECT_EQ(f.sw->stats(0).traps_sent, static_cast<uint64_t>(round + 1));
    }
    // Disabled: Down for good, and a trap.
    pi.port_state = port_state::NoChange;
    pi.phys_state = phys_state::Disabled;
    EXPECT_EQ(set_port3(pi).size(), 2u); // the reply and the trap
    EXPECT_EQ(PortInfo::read(f.sm(dr_smp(method::Get, attr::PortInfo, 3, {1})).data).port_state,
              port_state::Down);
    EXPECT_EQ(f.sw->stats(0).traps_sent, 3u);
}

// Two switches in a line: A port 2 <-> B port 1, the SM's node on A port
// 1, a host on B port 2. Directed route through both, then data with
// credits on the inter-switch link too.
TEST(Switch, TwoSwitchesInALine) {
    Fabric a(2), b(2);
    a.peer(1).connect();
    b.peer(2).connect();
    a.sw->connect(2, 0);
    b.sw->connect(1, 0);
    auto wire = [&] {
        for (int i = 0; i < 8; ++i) {
            auto x = a.sw->output(2);
            std::vector<uint8_t> ab(x.begin(), x.end());
            a.sw->consumed(2, ab.size(), 0);
            b.sw->receive(1, ab, 0);
            auto y = b.sw->output(1);
            std::vector<uint8_t> ba(y.begin(), y.end());
            b.sw->consumed(1, ba.size(), 0);
            a.sw->receive(2, ba, 0);
            a.peer(1).pump();
            b.peer(2).pump();
        }
    };
    wire();
    EXPECT_EQ(a.sw->credits(2).credit(0), 256); // B's buffer, seen by A
    // NodeInfo of B: path {1, 2} (A's port 2).
    a.peer(1).data.clear();
    a.peer(1).send_raw(framed(smp_frame(dr_smp(method::Get, attr::NodeInfo, 0, {1, 2}))));
    wire();
    ASSERT_EQ(a.peer(1).data.size(), 1u);
    const Smp r = Smp::read(mad_of(a.peer(1).data[0]));
    EXPECT_TRUE(r.direction);
    EXPECT_EQ(r.hop_ptr, 1);
    EXPECT_EQ(r.return_path[1], 1);
    EXPECT_EQ(r.return_path[2], 1); // B's input port
    const NodeInfo n = NodeInfo::read(r.data);
    EXPECT_EQ(n.local_port_num, 1);
    // Routes by hand (as the SM would program them): LID 10 behind B port 2.
    for (Switch *sw : {a.sw.get(), b.sw.get()}) {
        for (uint8_t p = 0; p <= 2; ++p) {
            sw->sma_state().ports[p].info.port_state = port_state::Active;
        }
    }
    a.sw->sma_state().lft[10] = 2;
    b.sw->sma_state().lft[10] = 2;
    b.peer(2).data.clear();
    std::vector<std::vector<uint8_t>> sent;
    for (uint32_t i = 0; i < 300; ++i) {
        auto pkt = data_frame(1, 0, 10, 3, 1024, i);
        pkt[0] = 0x00; // VL0
        seal(pkt);
        if (a.peer(1).send(pkt)) {
            sent.push_back(pkt);
        }
        wire();
    }
    EXPECT_EQ(b.peer(2).data, sent);
    EXPECT_GT(sent.size(), 250u);
    EXPECT_EQ(a.sw->stats(2).overruns + b.sw->stats(1).overruns, 0u);
}

TEST(Switch, StatsJson) {
    Fabric f(2);
    f.connect_all();
    const std::string j = f.sw->stats_json();
    EXPECT_NE(j.find("\"ports\": ["), std::string::npos);
    EXPECT_NE(j.find("\"port\": 2"), std::string::npos);
    EXPECT_EQ(j.back(), '}');
}

// Three senders into one receiver through an output shaped to 1 Gbit/s:
// the line is the bottleneck, the inputs' buffers fill and hold the
// senders back by credit; nothing is dropped, every sender's packets
// arrive in order, the line is busy all the time and shared evenly.
TEST(Switch, LineRateShapesAnIncastLosslessly) {
    SwitchConfig cfg;
    cfg.line_rate_bps = 1'000'000'000;
    cfg.vl_buffer_blocks = 100;
    Fabric f(4, cfg);
    f.step = kMs;
    f.connect_all();
    f.program();
    const uint64_t t0 = f.clock;
    constexpr uint64_t kStep = 10'000; // 10 us
    constexpr uint64_t kRun = 20 * kMs;
    // the timeline the benches take a sender's share from
    std::vector<std::string> lines;
    f.sw->set_timeline(5 * kMs, [&](const std::string &l) { lines.push_back(l); });
    std::array<uint32_t, 4> psn{};
    std::array<uint64_t, 4> refused{};
    uint64_t waits_checked = 0;
    for (uint64_t now = t0; now < t0 + kRun; now += kStep) {
        for (uint8_t s = 1; s <= 3; ++s) {
            // each sender offers more than the line takes: a packet a step
            // (2076 bytes per 10 us, 1.66 Gbit/s each)
            auto pkt = data_frame(0, 0, 5, static_cast<uint16_t>(1 + s), 2048, psn[s]);
            pkt[kLrhBytes + 5] = s; // DestQP's low byte names the sender
            seal(pkt);
            if (f.peer(s).send(pkt, now)) {
                ++psn[s];
            } else {
                ++refused[s];
            }
        }
        f.sw->tick(now);
        f.pump(now);
        if (f.sw->next_wake(now) < now + kMs) {
            // an output waits for its tokens: the wake-up is due within
            // one packet's time at the line rate (2.1 KB: 16.6 us)
            EXPECT_LE(f.sw->next_wake(now), now + 17'000);
            ++waits_checked;
        }
        for (uint8_t s = 1; s <= 3; ++s) {
            EXPECT_LE(f.sw->queued_blocks(s), 100u);
        }
    }
    EXPECT_GT(waits_checked, 0u);
    const auto &got = f.peer(4).data;
    std::array<uint32_t, 4> next{};
    size_t bytes = 0;
    for (const auto &pkt : got) {
        Packet p;
        ASSERT_EQ(parse(pkt, p), PacketError::Ok);
        const uint8_t s = pkt[kLrhBytes + 5];
        ASSERT_TRUE(s >= 1 && s <= 3);
        EXPECT_EQ(p.bth.psn, next[s]) << int(s); // in order, none missing
        next[s] = p.bth.psn + 1;
        bytes += pkt.size();
    }
    // 20 ms at 1 Gbit/s: 2.5 MB, give or take the bucket and a packet.
    const double expect = 1e9 / 8 * (static_cast<double>(kRun) / 1e9);
    EXPECT_NEAR(static_cast<double>(bytes), expect, 2.0 * 2 * kMaxFrameBytes + 2100);
    for (uint8_t s = 1; s <= 3; ++s) {
        EXPECT_GT(refused[s], 0u) << int(s);                           // held back by credit
        EXPECT_GT(f.sw->stats(s).in_hwm_blocks, 100u - 33u) << int(s); // its input filled
        EXPECT_NEAR(next[s], got.size() / 3.0, 2.0) << int(s);
        EXPECT_EQ(f.sw->stats(s).overruns, 0u);
    }
    EXPECT_EQ(f.sw->stats(4).hoq_discards, 0u);
    EXPECT_EQ(f.sw->sma_state().ports[4].counters.xmit_discards, 0);
    EXPECT_GT(f.sw->stats(4).rate_waits, 0u);
    EXPECT_NEAR(static_cast<double>(f.sw->stats(4).busy_ns), static_cast<double>(kRun),
                kRun * 0.02);
    // A line per 5 ms (the first at the first tick), each port's bytes so
    // far: the senders' in, the bottleneck's out, as counted above.
    f.sw->timeline_now(t0 + kRun);
    EXPECT_GE(lines.size(), 5u);
    EXPECT_LE(lines.size(), 6u);
    auto field = [&](const std::string &line, unsigned p, const char *key) {
        const std::string at = "{\"port\": " + std::to_string(p) + ", ";
        const size_t i = line.find(at);
        const size_t k = line.find(std::string("\"") + key + "\": ", i);
        return i == std::string::npos || k == std::string::npos
                   ? ~uint64_t{0}
                   : std::stoull(line.substr(k + std::strlen(key) + 4));
    };
    EXPECT_EQ(lines.back().rfind("{\"t_us\": ", 0), 0u) << lines.back();
    EXPECT_EQ(field(lines.back(), 4, "tx_bytes"), f.sw->stats(4).bytes_out);
    EXPECT_GE(field(lines.back(), 4, "tx_bytes"), bytes);
    for (uint8_t s = 1; s <= 3; ++s) {
        const uint64_t in = field(lines.back(), s, "rx_bytes");
        EXPECT_EQ(in, f.sw->stats(s).bytes_in) << int(s);
        // a third of what left, within the round robin's two packets and
        // the three still in the input buffer (over the run: the set-up's
        // SMPs came in before it)
        EXPECT_NEAR(static_cast<double>(in - field(lines.front(), s, "rx_bytes")),
                    static_cast<double>(bytes) / 3, 6.0 * 2100)
            << int(s);
        EXPECT_LE(field(lines.back(), s, "in_blocks"), 100u) << int(s);
    }
}

// An unshaped switch (the default) never waits for a line, and a wake-up
// is at most a millisecond away; a shaped one after a long idle has a
// full bucket, not an overflowed one.
TEST(Switch, LineRateIdleAndUnshaped) {
    Fabric plain(2);
    plain.connect_all();
    plain.program();
    EXPECT_EQ(plain.sw->next_wake(5 * kMs), 6 * kMs);
    SwitchConfig cfg;
    cfg.line_rate_bps = 400'000'000'000ull;
    Fabric f(2, cfg);
    f.step = kMs;
    f.connect_all();
    f.program();
    const uint64_t later = f.clock + 3600ull * 1'000'000'000ull; // an hour idle
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(f.peer(1).send(data_frame(0, 0, 3, 2, 4000, static_cast<uint32_t>(i)), later));
        f.pump(later);
    }
    // two largest packets' worth of tokens: two go at once, the third waits
    EXPECT_EQ(f.peer(2).data.size(), 2u);
    EXPECT_GT(f.sw->next_wake(later), later);
    f.sw->tick(f.sw->next_wake(later));
    f.pump(f.sw->next_wake(later));
    EXPECT_EQ(f.peer(2).data.size(), 3u);
    EXPECT_NE(f.sw->stats_json().find("\"line_rate_bps\": 400000000000"), std::string::npos);
}

namespace {

// A data packet (2048 bytes of payload) on VL = SL 'vl' with P_Key 'pkey'.
std::vector<uint8_t> pkey_frame(uint8_t vl, uint16_t dlid, uint16_t slid, uint16_t pkey,
                                uint32_t psn = 0, size_t payload = 64) {
    auto f = data_frame(vl, vl, dlid, slid, payload, psn);
    put16(&f[kLrhBytes + 2], pkey);
    seal(f);
    return f;
}

} // namespace

// The output's VLArbitration table weighs its VLs (IBTA 7.6.9): two
// senders into one line-rate output, one on VL0 and one on VL1, both
// always backlogged; with weights 96 and 32 (6 KiB and 2 KiB a turn) the
// output sends three 2 KiB packets of VL0 for each of VL1. Before, the
// switch took its VLs in turn (1:1) whatever the tables said.
TEST(Switch, VlArbitrationTableWeighsTheOutput) {
    SwitchConfig cfg;
    cfg.line_rate_bps = 1'000'000'000;
    Fabric f(3, cfg);
    f.step = kMs;
    f.connect_all();
    f.program();
    SmpData d{};
    d[0] = 0; // VL0, weight 96
    d[1] = 96;
    d[2] = 1; // VL1, weight 32
    d[3] = 32;
    // block 1 (low-priority entries 0-31) of port 3
    EXPECT_EQ(f.sm(dr_smp(method::Set, attr::VlArbTable, (1u << 16) | 3, {1}, d)).status(), 0);
    const uint64_t t0 = f.clock;
    std::array<uint32_t, 3> psn{};
    for (uint64_t now = t0; now < t0 + 10 * kMs; now += 10'000) {
        for (uint8_t s = 1; s <= 2; ++s) {
            const auto vl = static_cast<uint8_t>(s - 1);
            if (f.peer(s).send(
                    pkey_frame(vl, 4, static_cast<uint16_t>(1 + s), 0xFFFF, psn[s], 2048), now)) {
                ++psn[s];
            }
        }
        f.sw->tick(now);
        f.pump(now);
    }
    std::array<size_t, 2> by_vl{};
    for (const auto &pkt : f.peer(3).data) {
        ASSERT_LT(pkt[0] >> 4, 2);
        ++by_vl[pkt[0] >> 4];
    }
    ASSERT_GT(by_vl[1], 100u);
    EXPECT_NEAR(static_cast<double>(by_vl[0]) / static_cast<double>(by_vl[1]), 3.0, 0.05);
    EXPECT_EQ(f.sw->stats(3).hoq_discards, 0u);
}

// Partition enforcement (IBTA 10.9.4), as opensm sets it up on a switch
// whose SwitchInfo offers it: each CA's P_Key table copied to its switch
// port, PortInfo's inbound and outbound bits set. A packet whose P_Key
// base is not in the table is dropped coming in (PortRcvConstraintErrors)
// or going out (PortXmitConstraintErrors), its input credit returned; the
// membership bit is the CAs' to judge; a port without the bits passes all.
TEST(Switch, PartitionEnforcementInboundAndOutbound) {
    Fabric f(4);
    f.connect_all();
    f.program();
    const SwitchInfo si =
        SwitchInfo::read(f.sm(dr_smp(method::Get, attr::SwitchInfo, 0, {1})).data);
    EXPECT_EQ(si.partition_enforcement_cap, 32);
    EXPECT_TRUE(si.inbound_enforcement_cap);
    EXPECT_TRUE(si.outbound_enforcement_cap);
    // port 2's CA is in 0x8001, port 3's only in the default partition
    SmpData d{};
    put16(&d[0], 0xFFFF);
    put16(&d[2], 0x8001);
    EXPECT_EQ(f.sm(dr_smp(method::Set, attr::PKeyTable, 2u << 16, {1}, d)).status(), 0);
    d.fill(0);
    put16(&d[0], 0xFFFF);
    EXPECT_EQ(f.sm(dr_smp(method::Set, attr::PKeyTable, 3u << 16, {1}, d)).status(), 0);
    const Smp t = f.sm(dr_smp(method::Get, attr::PKeyTable, 2u << 16, {1}));
    EXPECT_EQ(get16(&t.data[2]), 0x8001);
    for (uint8_t p : {2, 3}) {
        EXPECT_EQ(f.edit_port_info(p,
                                   [](PortInfo &pi) {
                                       pi.partition_enforcement_inbound = true;
                                       pi.partition_enforcement_outbound = true;
                                   }),
                  0);
    }
    auto counters = [&](uint8_t p) { return f.sw->sma_state().ports[p].counters; };
    f.peer(1).data.clear(); // the SM's replies
    // 0x8001 from port 2 to port 3: out of port 3's partitions, dropped there.
    f.peer(2).send(pkey_frame(0, 4, 3, 0x8001));
    f.pump();
    EXPECT_TRUE(f.peer(3).data.empty());
    EXPECT_EQ(counters(3).xmit_constraint_errors, 1);
    // ... to port 1, which does not enforce: through, as a limited member
    // (0x0001) too.
    f.peer(2).send(pkey_frame(0, 2, 3, 0x8001));
    f.peer(2).send(pkey_frame(0, 2, 3, 0x0001));
    f.pump();
    EXPECT_EQ(f.peer(1).data.size(), 2u);
    // 0x8001 from port 3, whose table lacks it: dropped coming in.
    f.peer(3).send(pkey_frame(0, 3, 4, 0x8001));
    f.pump();
    EXPECT_TRUE(f.peer(2).data.empty());
    EXPECT_EQ(counters(3).rcv_constraint_errors, 1);
    EXPECT_EQ(f.sw->queued_blocks(3), 0u); // its credit returned
    // the default partition passes both ways, full or limited
    f.peer(3).send(pkey_frame(0, 3, 4, 0x7FFF));
    f.peer(2).send(pkey_frame(0, 4, 3, 0xFFFF));
    f.pump();
    EXPECT_EQ(f.peer(2).data.size(), 1u);
    EXPECT_EQ(f.peer(3).data.size(), 1u);
    EXPECT_EQ(counters(2).rcv_constraint_errors + counters(2).xmit_constraint_errors, 0);
    // the SM clears the bits: 0x8001 reaches port 3 again
    EXPECT_EQ(f.edit_port_info(3,
                               [](PortInfo &pi) {
                                   pi.partition_enforcement_inbound = false;
                                   pi.partition_enforcement_outbound = false;
                               }),
              0);
    f.peer(2).send(pkey_frame(0, 4, 3, 0x8001));
    f.pump();
    EXPECT_EQ(f.peer(3).data.size(), 2u);
    EXPECT_NE(f.sw->stats_json().find("\"xmit_constraint_errors\": 1"), std::string::npos);
}

// Trap 259 ("Bad P_Key, switch external port"): a packet partition
// enforcement drops, coming in or going out, is told to the master SM
// with its LIDs, P_Key, SL, QP and the port; a peer flooding bad P_Keys
// gets the SM one trap per Switch::kBadPKeyTrapPeriodNs, the rest counted.
TEST(Switch, BadPKeyTrap259ToTheSmRateLimited) {
    Fabric f(4);
    f.connect_all();
    f.program();
    EXPECT_EQ(f.edit_port_info(0, [](PortInfo &pi) { pi.master_sm_lid = 2; }), 0);
    SmpData d{};
    put16(&d[0], 0xFFFF);
    EXPECT_EQ(f.sm(dr_smp(method::Set, attr::PKeyTable, 3u << 16, {1}, d)).status(), 0);
    EXPECT_EQ(f.edit_port_info(3,
                               [](PortInfo &pi) {
                                   pi.partition_enforcement_inbound = true;
                                   pi.partition_enforcement_outbound = true;
                               }),
              0);
    auto traps = [&] {
        std::vector<Notice> v;
        for (const auto &fr : f.peer(1).data) {
            Packet pkt;
            if (parse(fr, pkt) == PacketError::Ok && pkt.lrh.vl == kVl15) {
                const Smp t = Smp::read(mad_of(fr));
                if (t.hdr.method == method::Trap) {
                    v.push_back(Notice::read(t.data));
                }
            }
        }
        return v;
    };
    f.peer(1).data.clear();
    uint64_t now = 1'000'000'000;
    f.peer(3).send(pkey_frame(0, 3, 4, 0x8001, 7), now);
    f.pump(now);
    auto t = traps();
    ASSERT_EQ(t.size(), 1u);
    EXPECT_EQ(t[0].trap_number, trap::SwitchPKeyViolation);
    EXPECT_EQ(t[0].type, notice_type::Security);
    EXPECT_EQ(t[0].issuer_lid, 1);
    const auto v = SwitchPKeyViolation::read(std::span<const uint8_t, SwitchPKeyViolation::kBytes>(
        t[0].details.data(), SwitchPKeyViolation::kBytes));
    EXPECT_EQ(v.lid1, 4);
    EXPECT_EQ(v.lid2, 3);
    EXPECT_EQ(v.pkey, 0x8001);
    EXPECT_EQ(v.sw_lid, 1);
    EXPECT_EQ(v.port, 3);
    const uint16_t want = SwitchPKeyViolation::Lid1 | SwitchPKeyViolation::Lid2 |
                          SwitchPKeyViolation::PKey | SwitchPKeyViolation::Sl |
                          SwitchPKeyViolation::Qp2;
    EXPECT_EQ(v.valid & want, want);
    EXPECT_EQ(v.valid & (SwitchPKeyViolation::Gid1 | SwitchPKeyViolation::Gid2), 0);
    EXPECT_EQ(f.sw->stats(0).bad_pkey_traps, 1u);
    // A flood within the period, coming in at port 3 and going out of it
    // (from port 2): dropped and counted, no trap.
    size_t sent = 0;
    for (uint32_t i = 0; i < 600; ++i) {
        const uint64_t at = now + 1000 + i;
        sent += f.peer(3).send(pkey_frame(0, 3, 4, 0x8001, i), at) ? 1 : 0;
        sent += f.peer(2).send(pkey_frame(0, 4, 3, 0x8002, i), at) ? 1 : 0;
        f.pump(at);
    }
    EXPECT_GT(sent, 1000u);
    EXPECT_EQ(traps().size(), 1u);
    EXPECT_EQ(f.sw->stats(0).bad_pkey_traps_suppressed, sent);
    // The next period: one more, the outbound one, from port 3.
    f.peer(2).send(pkey_frame(0, 4, 3, 0x8002, 9), now + Switch::kBadPKeyTrapPeriodNs);
    f.pump(now + Switch::kBadPKeyTrapPeriodNs);
    t = traps();
    ASSERT_EQ(t.size(), 2u);
    const auto w = SwitchPKeyViolation::read(std::span<const uint8_t, SwitchPKeyViolation::kBytes>(
        t[1].details.data(), SwitchPKeyViolation::kBytes));
    EXPECT_EQ(w.pkey, 0x8002);
    EXPECT_EQ(w.lid1, 3);
    EXPECT_EQ(w.port, 3);
    EXPECT_EQ(f.sw->stats(0).bad_pkey_traps, 2u);
    EXPECT_NE(f.sw->stats_json().find("\"bad_pkey_traps\": 2"), std::string::npos);
    // The whole JSON: every counter of every port, the traps' and the
    // constraint errors' among them.
    test::expect_golden("ib_switch_bad_pkey", f.sw->stats_json());
}
