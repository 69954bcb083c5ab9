// SPDX-License-Identifier: GPL-2.0-or-later
// The shared SMA/PMA core, as a CA (the device) and as a switch.
#include "ib/bytes.hpp"
#include "ib/packet.hpp"
#include "ib/sma.hpp"

#include <gtest/gtest.h>

#include <random>

using namespace ohca::ib;

namespace {

Mad smp(uint8_t cls, uint8_t meth, uint16_t attr_id, uint32_t mod, const SmpData &data = {},
        uint64_t m_key = 0) {
    Smp s;
    s.hdr.mgmt_class = cls;
    s.hdr.method = meth;
    s.hdr.tid = 0x42;
    s.hdr.attr_id = attr_id;
    s.hdr.attr_mod = mod;
    s.m_key = m_key;
    s.data = data;
    if (cls == mgmt_class::SubnDirectedRoute) {
        s.hop_cnt = 1;
        s.hop_ptr = 2;
        s.dr_slid = kPermissiveLid;
        s.dr_dlid = kPermissiveLid;
        s.initial_path[1] = 1;
    }
    Mad m{};
    s.write(m);
    return m;
}

Smp ask(Sma &sma, const Mad &in, uint8_t port = 1) {
    Mad out{};
    EXPECT_EQ(sma.process(in, port, out), SmaResult::Reply);
    return Smp::read(out);
}

SmaDefaults ca_defaults() {
    SmaDefaults d;
    d.node_guid = 0x0002c90300001000ull;
    d.port_guid = 0x0002c90300001001ull;
    d.description = "ohca0 test";
    return d;
}

constexpr uint8_t LR = mgmt_class::SubnLidRouted;
constexpr uint8_t DR = mgmt_class::SubnDirectedRoute;

} // namespace

TEST(IbSma, CaNodeInfoAndDescription) {
    SmaState st = make_ca_state(ca_defaults());
    Sma sma(st);
    const Smp r = ask(sma, smp(DR, method::Get, attr::NodeInfo, 0));
    EXPECT_EQ(r.hdr.method, method::GetResp);
    EXPECT_EQ(r.status(), 0);
    EXPECT_TRUE(r.direction); // D set on a directed route response
    EXPECT_EQ(r.hop_ptr, 2);  // hop fields left for the MAD layer
    EXPECT_EQ(r.hdr.tid, 0x42u);
    const NodeInfo n = NodeInfo::read(r.data);
    EXPECT_EQ(n.node_type, node_type::Ca);
    EXPECT_EQ(n.num_ports, 1);
    EXPECT_EQ(n.node_guid, 0x0002c90300001000ull);
    EXPECT_EQ(n.port_guid, 0x0002c90300001001ull);
    EXPECT_EQ(n.local_port_num, 1);
    EXPECT_EQ(n.partition_cap, 64);
    const Smp d = ask(sma, smp(LR, method::Get, attr::NodeDescription, 0));
    EXPECT_STREQ(reinterpret_cast<const char *>(d.data.data()), "ohca0 test");
}

TEST(IbSma, StatusCodes) {
    SmaState st = make_ca_state(ca_defaults());
    Sma sma(st);
    EXPECT_EQ(ask(sma, smp(LR, method::Set, attr::NodeInfo, 0)).status(),
              mad_status::MethodAttrUnsupported);
    EXPECT_EQ(ask(sma, smp(LR, method::Get, 0x7777, 0)).status(),
              mad_status::MethodAttrUnsupported);
    EXPECT_EQ(ask(sma, smp(LR, method::Get, attr::SwitchInfo, 0)).status(),
              mad_status::MethodAttrUnsupported); // a CA has none
    EXPECT_EQ(ask(sma, smp(LR, method::Send, attr::NodeInfo, 0)).status(),
              mad_status::MethodUnsupported);
    EXPECT_EQ(ask(sma, smp(LR, method::Get, attr::PortInfo, 2)).status(),
              mad_status::InvalidField); // no port 2
    EXPECT_EQ(ask(sma, smp(LR, method::Get, attr::PKeyTable, 2)).status(),
              mad_status::InvalidField); // 64 entries = blocks 0, 1
    Mad bad = smp(LR, method::Get, attr::NodeInfo, 0);
    bad[2] = 2; // class version
    EXPECT_EQ(ask(sma, bad).status(), mad_status::BadVersion);
    Mad out{};
    EXPECT_EQ(sma.process(smp(LR, method::GetResp, attr::NodeInfo, 0), 1, out), SmaResult::Drop);
    EXPECT_EQ(sma.process(smp(LR, method::TrapRepress, attr::Notice, 0), 1, out), SmaResult::Drop);
    EXPECT_EQ(sma.process(smp(mgmt_class::SubnAdm, method::Get, 1, 0), 1, out), SmaResult::Drop);
}

TEST(IbSma, PortInfoSetBringsPortActive) {
    SmaState st = make_ca_state(ca_defaults());
    Sma sma(st);
    sma.link_up(1);
    EXPECT_EQ(st.ports[1].info.port_state, port_state::Init);
    EXPECT_EQ(st.ports[1].info.phys_state, phys_state::LinkUp);
    sma.clear_changes();

    PortInfo want = PortInfo::read(ask(sma, smp(LR, method::Get, attr::PortInfo, 1)).data);
    EXPECT_EQ(want.port_state, port_state::Init);
    EXPECT_EQ(want.mtu_cap, 5);
    want.lid = 7;
    want.master_sm_lid = 1;
    want.lmc = 0;
    want.neighbor_mtu = 4;
    want.port_state = port_state::Active; // Init -> Active is not allowed
    SmpData d{};
    want.write(d);
    Smp r = ask(sma, smp(LR, method::Set, attr::PortInfo, 1, d));
    EXPECT_EQ(r.status(), mad_status::InvalidField);
    EXPECT_EQ(st.ports[1].info.lid, 0); // nothing applied

    want.port_state = port_state::Armed;
    want.write(d);
    r = ask(sma, smp(LR, method::Set, attr::PortInfo, 0, d)); // 0 = this port
    EXPECT_EQ(r.status(), 0);
    EXPECT_EQ(st.ports[1].info.lid, 7);
    EXPECT_EQ(st.ports[1].info.port_state, port_state::Armed);
    EXPECT_EQ(st.ports[1].info.neighbor_mtu, 4);
    EXPECT_EQ(sma.changes().port_state, 2u);
    EXPECT_EQ(PortInfo::read(r.data).lid, 7);

    want.port_state = port_state::Active;
    want.write(d);
    EXPECT_EQ(ask(sma, smp(LR, method::Set, attr::PortInfo, 1, d)).status(), 0);
    EXPECT_EQ(st.ports[1].info.port_state, port_state::Active);

    // Invalid values: MTU above the cap, OperationalVLs above VLCap, a
    // multicast LID, PortState Init, an unknown physical state.
    for (int k = 0; k < 5; ++k) {
        PortInfo w = st.ports[1].info;
        w.port_state = port_state::NoChange;
        if (k == 0)
            w.neighbor_mtu = 6;
        if (k == 1)
            w.operational_vls = 5;
        if (k == 2)
            w.lid = 0xC001;
        if (k == 3)
            w.port_state = port_state::Init;
        if (k == 4)
            w.phys_state = phys_state::Training;
        w.write(d);
        EXPECT_EQ(ask(sma, smp(LR, method::Set, attr::PortInfo, 1, d)).status(),
                  mad_status::InvalidField)
            << k;
    }
    EXPECT_EQ(st.ports[1].info.lid, 7);

    // Down: the link retrains.
    PortInfo w = st.ports[1].info;
    w.port_state = port_state::Down;
    w.write(d);
    EXPECT_EQ(ask(sma, smp(LR, method::Set, attr::PortInfo, 1, d)).status(), 0);
    EXPECT_EQ(st.ports[1].info.port_state, port_state::Down);
    EXPECT_EQ(st.ports[1].info.phys_state, phys_state::Polling);
}

TEST(IbSma, ClientReregister) {
    SmaState st = make_ca_state(ca_defaults());
    Sma sma(st);
    PortInfo w = st.ports[1].info;
    w.client_reregister = true;
    w.port_state = port_state::NoChange;
    SmpData d{};
    w.write(d);
    EXPECT_EQ(ask(sma, smp(LR, method::Set, attr::PortInfo, 1, d)).status(), 0);
    EXPECT_TRUE(sma.changes().client_reregister);
}

TEST(IbSma, MKeyProtection) {
    SmaState st = make_ca_state(ca_defaults());
    Sma sma(st);
    st.ports[1].info.m_key = 0x1234;
    Mad out{};
    for (uint8_t protect = 0; protect < 4; ++protect) {
        st.ports[1].info.m_key_protect_bits = protect;
        const SmaResult get = sma.process(smp(LR, method::Get, attr::PortInfo, 1), 1, out);
        if (protect <= 1) {
            ASSERT_EQ(get, SmaResult::Reply) << int(protect);
            // Protect bits 1: the M_Key reads as zero.
            EXPECT_EQ(PortInfo::read(Smp::read(out).data).m_key, protect == 1 ? 0u : 0x1234u);
        } else {
            EXPECT_EQ(get, SmaResult::Drop) << int(protect);
        }
        EXPECT_EQ(sma.process(smp(LR, method::Set, attr::PortInfo, 1), 1, out), SmaResult::Drop);
        // The right key always works.
        EXPECT_EQ(sma.process(smp(LR, method::Get, attr::PortInfo, 1, {}, 0x1234), 1, out),
                  SmaResult::Reply);
    }
    EXPECT_TRUE(sma.changes().m_key_violation);
    EXPECT_EQ(st.ports[1].info.m_key_violations, 6);
}

TEST(IbSma, PKeySl2VlVlArb) {
    SmaState st = make_ca_state(ca_defaults());
    Sma sma(st);
    Smp r = ask(sma, smp(LR, method::Get, attr::PKeyTable, 0));
    EXPECT_EQ(get16(r.data.data()), 0xFFFF);
    SmpData d{};
    put16(&d[0], 0xFFFF);
    put16(&d[2], 0x8001);
    r = ask(sma, smp(LR, method::Set, attr::PKeyTable, 1, d)); // block 1 = entries 32..63
    EXPECT_EQ(r.status(), 0);
    EXPECT_EQ(st.ports[1].pkeys[33], 0x8001);
    EXPECT_TRUE(sma.changes().pkeys);

    d.fill(0);
    d[0] = 0x01; // SL0 -> 0, SL1 -> 1
    d[1] = 0x23;
    EXPECT_EQ(ask(sma, smp(LR, method::Set, attr::SlToVlTable, 0, d)).status(), 0);
    EXPECT_EQ(st.sl_to_vl(0, 1, 3), 3);

    d.fill(0);
    d[0] = 0x02;
    d[1] = 0x40;
    EXPECT_EQ(ask(sma, smp(LR, method::Set, attr::VlArbTable, 1u << 16, d)).status(), 0);
    EXPECT_EQ(st.ports[1].vlarb_low[0].vl, 2);
    EXPECT_EQ(st.ports[1].vlarb_low[0].weight, 0x40);
    // Cap 8 entries: blocks 2 and 4 (entries 32-63) do not exist; 5 never.
    EXPECT_EQ(ask(sma, smp(LR, method::Get, attr::VlArbTable, 2u << 16)).status(),
              mad_status::InvalidField);
    EXPECT_EQ(ask(sma, smp(LR, method::Get, attr::VlArbTable, 5u << 16)).status(),
              mad_status::InvalidField);
    EXPECT_EQ(ask(sma, smp(LR, method::Get, attr::VlArbTable, 3u << 16)).status(), 0);
}

TEST(IbSma, PmaCounters) {
    SmaState st = make_ca_state(ca_defaults());
    Sma sma(st);
    st.ports[1].counters.xmit_pkts = 10;
    st.ports[1].counters.rcv_errors = 3;
    st.ports[1].counters_ext.xmit_pkts = 1ull << 40;
    Mad in{};
    MadHeader h;
    h.mgmt_class = mgmt_class::Perf;
    h.method = method::Get;
    h.attr_id = attr::PortCounters;
    h.write(in);
    in[kPmaDataOffset + 1] = 1;
    Mad out{};
    ASSERT_EQ(sma.process(in, 1, out), SmaResult::Reply);
    EXPECT_EQ(MadHeader::read(out).status, 0);
    PortCounters c = PortCounters::read(std::span(out).subspan(kPmaDataOffset));
    EXPECT_EQ(c.xmit_pkts, 10u);
    EXPECT_EQ(c.rcv_errors, 3);
    EXPECT_EQ(c.port_select, 1);

    h.method = method::Set;
    h.write(in);
    put16(&in[kPmaDataOffset + 2], 0x0008); // clear PortRcvErrors only
    ASSERT_EQ(sma.process(in, 1, out), SmaResult::Reply);
    EXPECT_EQ(st.ports[1].counters.rcv_errors, 0);
    EXPECT_EQ(st.ports[1].counters.xmit_pkts, 10u);

    h.method = method::Get;
    h.attr_id = attr::PortCountersExtended;
    h.write(in);
    ASSERT_EQ(sma.process(in, 1, out), SmaResult::Reply);
    EXPECT_EQ(PortCountersExtended::read(std::span(out).subspan(kPmaDataOffset)).xmit_pkts,
              1ull << 40);

    h.attr_id = attr::ClassPortInfo;
    h.write(in);
    ASSERT_EQ(sma.process(in, 1, out), SmaResult::Reply);
    EXPECT_EQ(get16(&out[kPmaDataOffset + 2]), pma_cap::ExtendedWidth);

    in[kPmaDataOffset + 1] = 0xFF; // all ports: not supported
    h.attr_id = attr::PortCounters;
    h.write(in);
    ASSERT_EQ(sma.process(in, 1, out), SmaResult::Reply);
    EXPECT_EQ(MadHeader::read(out).status, mad_status::InvalidField);
}

TEST(IbSma, SwitchTables) {
    SmaDefaults d;
    d.node_guid = 0x0011223344556600ull;
    d.port_guid = d.node_guid;
    SmaState st = make_switch_state(d, 8);
    Sma sma(st);
    Smp r = ask(sma, smp(DR, method::Get, attr::NodeInfo, 0), 3);
    NodeInfo n = NodeInfo::read(r.data);
    EXPECT_EQ(n.node_type, node_type::Switch);
    EXPECT_EQ(n.num_ports, 8);
    EXPECT_EQ(n.local_port_num, 3);

    const SwitchInfo si =
        SwitchInfo::read(ask(sma, smp(LR, method::Get, attr::SwitchInfo, 0)).data);
    EXPECT_EQ(si.linear_fdb_cap, 0xC000);
    EXPECT_EQ(si.multicast_fdb_cap, 512);

    // LFT block 0: LID i -> port i % 9.
    SmpData b{};
    for (int i = 0; i < 64; ++i) {
        b[i] = static_cast<uint8_t>(i % 9);
    }
    EXPECT_EQ(ask(sma, smp(LR, method::Set, attr::LinearFdb, 0, b)).status(), 0);
    EXPECT_EQ(st.lft[10], 1);
    EXPECT_TRUE(sma.changes().lft);
    EXPECT_EQ(ask(sma, smp(LR, method::Get, attr::LinearFdb, 0xC000 / 64)).status(),
              mad_status::InvalidField);

    // MFT block 1 (MLIDs 0xC020..), position 0: port masks, bits above
    // port 8 cleared.
    b.fill(0);
    put16(&b[0], 0xFFFF);
    put16(&b[2], 0x0006);
    EXPECT_EQ(ask(sma, smp(LR, method::Set, attr::MulticastFdb, 1, b)).status(), 0);
    EXPECT_EQ(st.mft_mask(0xC020, 0), 0x01FF);
    EXPECT_EQ(st.mft_mask(0xC021, 0), 0x0006);
    EXPECT_EQ(ask(sma, smp(LR, method::Get, attr::MulticastFdb, (1u << 28) | 1)).status(),
              mad_status::InvalidField); // 9 ports: one position
    EXPECT_EQ(ask(sma, smp(LR, method::Get, attr::MulticastFdb, 16)).status(),
              mad_status::InvalidField); // 512 entries = blocks 0..15

    // SwitchInfo Set: LinearFDBTop; PortStateChange written 1 clears it.
    sma.link_up(4);
    EXPECT_TRUE(st.switch_info.port_state_change);
    SwitchInfo w = st.switch_info;
    w.linear_fdb_top = 20;
    w.write(b);
    EXPECT_EQ(ask(sma, smp(LR, method::Set, attr::SwitchInfo, 0, b)).status(), 0);
    EXPECT_EQ(st.switch_info.linear_fdb_top, 20);
    EXPECT_FALSE(st.switch_info.port_state_change);
    w.linear_fdb_top = 0xC000;
    w.write(b);
    EXPECT_EQ(ask(sma, smp(LR, method::Set, attr::SwitchInfo, 0, b)).status(),
              mad_status::InvalidField);

    // PortInfo of an external port: no LID; port 9 does not exist.
    r = ask(sma, smp(LR, method::Get, attr::PortInfo, 4));
    EXPECT_EQ(PortInfo::read(r.data).port_state, port_state::Init);
    EXPECT_EQ(ask(sma, smp(LR, method::Get, attr::PortInfo, 9)).status(), mad_status::InvalidField);
    // Bit 31 (SMSupportsExtendedSpeeds) is a flag, not part of the port.
    EXPECT_EQ(ask(sma, smp(LR, method::Get, attr::PortInfo, 0x80000004u)).status(), 0);
    EXPECT_EQ(ask(sma, smp(LR, method::Get, attr::PortInfo, 0x104)).status(),
              mad_status::InvalidField);

    // SL2VL by (in, out); VLArb of port 0 does not exist (base port 0).
    b.fill(0);
    b[0] = 0x10; // SL0 -> VL1
    EXPECT_EQ(ask(sma, smp(LR, method::Set, attr::SlToVlTable, (2u << 8) | 5, b)).status(), 0);
    EXPECT_EQ(st.sl_to_vl(2, 5, 0), 1);
    EXPECT_EQ(st.sl_to_vl(5, 2, 0), 0);
    EXPECT_EQ(ask(sma, smp(LR, method::Get, attr::SlToVlTable, (9u << 8) | 5)).status(),
              mad_status::InvalidField);
    EXPECT_EQ(ask(sma, smp(LR, method::Get, attr::VlArbTable, 1u << 16)).status(),
              mad_status::InvalidField);
    EXPECT_EQ(ask(sma, smp(LR, method::Get, attr::VlArbTable, (1u << 16) | 3)).status(), 0);

    // P_Key table of port 0 (modifier: port in the high half).
    EXPECT_EQ(ask(sma, smp(LR, method::Get, attr::PKeyTable, 0)).status(), 0);
}

TEST(IbSma, TrapAndLinkDown) {
    SmaState st = make_ca_state(ca_defaults());
    Sma sma(st);
    st.ports[1].info.lid = 9;
    sma.link_up(1);
    sma.link_down(1);
    EXPECT_EQ(st.ports[1].counters.link_downed, 1);
    const uint8_t details[2] = {0, 9};
    const Smp t = sma.make_trap(trap::LinkStateChange, notice_type::Urgent, details, 7);
    EXPECT_EQ(t.hdr.method, method::Trap);
    EXPECT_EQ(t.hdr.attr_id, attr::Notice);
    const Notice n = Notice::read(t.data);
    EXPECT_EQ(n.trap_number, 128);
    EXPECT_EQ(n.issuer_lid, 9);
    EXPECT_EQ(n.count, 1);
    EXPECT_EQ(n.details[1], 9);
}

// Any 256 bytes: an answer or a drop, never out of bounds (ASan runs this
// too in the fuzz build), and the tables keep their sizes.
TEST(IbSma, RandomMadsAreBounded) {
    SmaDefaults d;
    SmaState sw = make_switch_state(d, 4);
    SmaState ca = make_ca_state(d);
    Sma a(sw), b(ca);
    std::mt19937 rng(3);
    const uint8_t classes[] = {LR, DR, mgmt_class::Perf, 0x03};
    const uint16_t attrs[] = {0x01, 0x10, 0x11, 0x12, 0x14, 0x15,
                              0x16, 0x17, 0x18, 0x19, 0x1B, 0x1D};
    for (int i = 0; i < 20000; ++i) {
        Mad m{};
        for (auto &x : m) {
            x = static_cast<uint8_t>(rng());
        }
        m[0] = 1;
        m[1] = classes[rng() % 4];
        m[2] = 1;
        m[3] = static_cast<uint8_t>(1 + rng() % 2);
        put16(&m[16], attrs[rng() % 12]);
        put64(&m[24], 0);
        Mad out{};
        a.process(m, static_cast<uint8_t>(rng() % 5), out);
        b.process(m, 1, out);
    }
    EXPECT_EQ(sw.lft.size(), 0xC000u);
    EXPECT_EQ(sw.mft.size(), 512u);
    EXPECT_EQ(ca.ports[1].pkeys.size(), 64u);
}
