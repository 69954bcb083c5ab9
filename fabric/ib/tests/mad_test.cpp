// SPDX-License-Identifier: GPL-2.0-or-later
// MAD layouts against offsets written out from IBTA Vol 1 §13.4, §14.2.5
// and §16.1.3 (and, for cross-checking, Linux's ib_smi.h / ib_pma.h).
#include "ib/mad.hpp"
#include "ib/packet.hpp"

#include <gtest/gtest.h>

using namespace ohca::ib;

TEST(IbMad, HeaderOffsets) {
    MadHeader h;
    h.mgmt_class = mgmt_class::SubnLidRouted;
    h.method = method::Get;
    h.status = 0x001C;
    h.tid = 0x0102030405060708ull;
    h.attr_id = attr::PortInfo;
    h.attr_mod = 0xA0B0C0D0;
    Mad m{};
    h.write(m);
    const uint8_t want[24] = {1, 0x01, 1, 0x01, 0x00, 0x1C, 0, 0, 1,    2,    3,    4,
                              5, 6,    7, 8,    0x00, 0x15, 0, 0, 0xA0, 0xB0, 0xC0, 0xD0};
    EXPECT_TRUE(std::equal(want, want + 24, m.begin()));
    const MadHeader r = MadHeader::read(m);
    EXPECT_EQ(r.tid, h.tid);
    EXPECT_EQ(r.attr_mod, h.attr_mod);
}

TEST(IbMad, DirectedRouteFields) {
    Smp s;
    s.hdr.mgmt_class = mgmt_class::SubnDirectedRoute;
    s.hdr.method = method::GetResp;
    s.hdr.status = mad_status::InvalidField;
    s.direction = true;
    s.hop_ptr = 2;
    s.hop_cnt = 3;
    s.m_key = 0x1122334455667788ull;
    s.dr_slid = kPermissiveLid;
    s.dr_dlid = 0x0005;
    s.initial_path[1] = 4;
    s.return_path[2] = 9;
    s.data[0] = 0xAB;
    Mad m{};
    s.write(m);
    EXPECT_EQ(m[1], 0x81);
    EXPECT_EQ(m[4], 0x80); // D
    EXPECT_EQ(m[5], 0x1C);
    EXPECT_EQ(m[6], 2);
    EXPECT_EQ(m[7], 3);
    EXPECT_EQ(m[24], 0x11);
    EXPECT_EQ(m[31], 0x88);
    EXPECT_EQ(m[32], 0xFF);
    EXPECT_EQ(m[33], 0xFF);
    EXPECT_EQ(m[35], 0x05);
    EXPECT_EQ(m[64], 0xAB);
    EXPECT_EQ(m[129], 4);
    EXPECT_EQ(m[194], 9);
    const Smp r = Smp::read(m);
    EXPECT_TRUE(r.direction);
    EXPECT_EQ(r.status(), mad_status::InvalidField);
    EXPECT_EQ(r.hop_ptr, 2);
    EXPECT_EQ(r.hop_cnt, 3);
    EXPECT_EQ(r.dr_slid, 0xFFFF);
    EXPECT_EQ(r.initial_path[1], 4);
    EXPECT_EQ(r.return_path[2], 9);
}

TEST(IbMad, NodeInfoOffsets) {
    NodeInfo n;
    n.node_type = node_type::Switch;
    n.num_ports = 8;
    n.system_image_guid = 0x0001020304050607ull;
    n.node_guid = 0x1011121314151617ull;
    n.port_guid = 0x2021222324252627ull;
    n.partition_cap = 0x40;
    n.device_id = 0xABCD;
    n.revision = 0x11223344;
    n.local_port_num = 3;
    n.vendor_id = 0x123456;
    SmpData d{};
    n.write(d);
    EXPECT_EQ(d[2], 2);
    EXPECT_EQ(d[3], 8);
    EXPECT_EQ(d[4], 0x00);
    EXPECT_EQ(d[11], 0x07);
    EXPECT_EQ(d[12], 0x10);
    EXPECT_EQ(d[20], 0x20);
    EXPECT_EQ(d[29], 0x40);
    EXPECT_EQ(d[30], 0xAB);
    EXPECT_EQ(d[35], 0x44);
    EXPECT_EQ(d[36], 3);
    EXPECT_EQ(d[37], 0x12);
    EXPECT_EQ(d[39], 0x56);
    const NodeInfo r = NodeInfo::read(d);
    EXPECT_EQ(r.vendor_id, 0x123456u);
    EXPECT_EQ(r.port_guid, n.port_guid);
}

TEST(IbMad, PortInfoOffsets) {
    PortInfo p;
    p.m_key = 0x0102030405060708ull;
    p.gid_prefix = 0xfe80000000000000ull;
    p.lid = 0x1234;
    p.master_sm_lid = 0x0001;
    p.capability_mask = port_cap::IsTrapSupported | port_cap::IsSmDisabled;
    p.local_port_num = 1;
    p.link_width_enabled = 2;
    p.link_width_supported = 3;
    p.link_width_active = 2;
    p.link_speed_supported = 1;
    p.port_state = port_state::Armed;
    p.phys_state = phys_state::LinkUp;
    p.link_down_default_state = 2;
    p.m_key_protect_bits = 2;
    p.lmc = 3;
    p.link_speed_active = 1;
    p.link_speed_enabled = 1;
    p.neighbor_mtu = 5;
    p.master_sm_sl = 0xA;
    p.vl_cap = 3;
    p.vl_high_limit = 0x77;
    p.mtu_cap = 5;
    p.hoq_life = 0x13;
    p.vl_stall_count = 7;
    p.operational_vls = 3;
    p.partition_enforcement_inbound = true;
    p.filter_raw_outbound = true;
    p.m_key_violations = 0x0A0B;
    p.guid_cap = 1;
    p.client_reregister = true;
    p.subnet_timeout = 18;
    p.resp_time_value = 0x11;
    p.local_phy_errors = 8;
    p.overrun_errors = 8;
    p.link_round_trip_latency = 0xABCDEF;
    p.capability_mask2 = 0x0102;
    SmpData d{};
    p.write(d);
    EXPECT_EQ(d[0], 0x01);
    EXPECT_EQ(d[8], 0xfe);
    EXPECT_EQ(d[16], 0x12);
    EXPECT_EQ(d[17], 0x34);
    EXPECT_EQ(d[19], 0x01);
    EXPECT_EQ(d[22], 0x04); // bit 10
    EXPECT_EQ(d[23], 0x08); // bit 3
    EXPECT_EQ(d[28], 1);
    EXPECT_EQ(d[32], 0x13);
    EXPECT_EQ(d[33], 0x52);
    EXPECT_EQ(d[34], 0x83);
    EXPECT_EQ(d[35], 0x11);
    EXPECT_EQ(d[36], 0x5A);
    EXPECT_EQ(d[37], 0x30);
    EXPECT_EQ(d[38], 0x77);
    EXPECT_EQ(d[41], 0x05);
    EXPECT_EQ(d[42], 0xF3);
    EXPECT_EQ(d[43], 0x39);
    EXPECT_EQ(d[44], 0x0A);
    EXPECT_EQ(d[50], 1);
    EXPECT_EQ(d[51], 0x92);
    EXPECT_EQ(d[52], 0x11);
    EXPECT_EQ(d[53], 0x88);
    EXPECT_EQ(d[56], 0x00);
    EXPECT_EQ(d[57], 0xAB);
    EXPECT_EQ(d[59], 0xEF);
    EXPECT_EQ(d[60], 0x01);
    EXPECT_EQ(d[61], 0x02);
    const PortInfo r = PortInfo::read(d);
    EXPECT_EQ(r.lid, p.lid);
    EXPECT_EQ(r.port_state, port_state::Armed);
    EXPECT_EQ(r.phys_state, phys_state::LinkUp);
    EXPECT_EQ(r.lmc, 3);
    EXPECT_EQ(r.m_key_protect_bits, 2);
    EXPECT_EQ(r.neighbor_mtu, 5);
    EXPECT_EQ(r.operational_vls, 3);
    EXPECT_TRUE(r.partition_enforcement_inbound);
    EXPECT_FALSE(r.partition_enforcement_outbound);
    EXPECT_TRUE(r.client_reregister);
    EXPECT_EQ(r.subnet_timeout, 18);
    EXPECT_EQ(r.link_round_trip_latency, 0xABCDEFu);
    EXPECT_EQ(r.hoq_life, 0x13);
    EXPECT_EQ(r.vl_stall_count, 7);
}

TEST(IbMad, SwitchInfoOffsets) {
    SwitchInfo s;
    s.linear_fdb_cap = 0xC000;
    s.multicast_fdb_cap = 0x0200;
    s.linear_fdb_top = 0x0010;
    s.default_port = 1;
    s.life_time_value = 0x12;
    s.port_state_change = true;
    s.lids_per_port = 0;
    s.partition_enforcement_cap = 32;
    s.enhanced_port0 = false;
    s.filter_raw_inbound_cap = true;
    s.multicast_fdb_top = 0xC01F;
    SmpData d{};
    s.write(d);
    EXPECT_EQ(d[0], 0xC0);
    EXPECT_EQ(d[4], 0x02);
    EXPECT_EQ(d[7], 0x10);
    EXPECT_EQ(d[8], 1);
    EXPECT_EQ(d[11], 0x94);
    EXPECT_EQ(d[15], 32);
    EXPECT_EQ(d[16], 0x20);
    EXPECT_EQ(d[18], 0xC0);
    EXPECT_EQ(d[19], 0x1F);
    const SwitchInfo r = SwitchInfo::read(d);
    EXPECT_EQ(r.life_time_value, 0x12);
    EXPECT_TRUE(r.port_state_change);
    EXPECT_EQ(r.multicast_fdb_top, 0xC01F);
}

TEST(IbMad, NoticeOffsets) {
    Notice n;
    n.type = notice_type::Urgent;
    n.producer_type = node_type::Switch;
    n.trap_number = trap::LinkStateChange;
    n.issuer_lid = 0x0007;
    n.toggle = true;
    n.count = 5;
    n.details[0] = 0x00;
    n.details[1] = 0x07; // LIDADDR
    SmpData d{};
    n.write(d);
    EXPECT_EQ(d[0], 0x81);
    EXPECT_EQ(d[3], 0x02);
    EXPECT_EQ(d[5], 128);
    EXPECT_EQ(d[7], 7);
    EXPECT_EQ(d[8], 0x80);
    EXPECT_EQ(d[9], 5);
    EXPECT_EQ(d[11], 7);
    const Notice r = Notice::read(d);
    EXPECT_EQ(r.trap_number, 128);
    EXPECT_TRUE(r.toggle);
}

TEST(IbMad, PmaOffsets) {
    PortCounters c;
    c.port_select = 2;
    c.counter_select = 0xFFFF;
    c.symbol_errors = 0x0102;
    c.link_downed = 3;
    c.rcv_errors = 0x0405;
    c.xmit_discards = 0x0607;
    c.local_link_integrity_errors = 0xA;
    c.excessive_buffer_overrun_errors = 0xB;
    c.vl15_dropped = 0x0809;
    c.xmit_data = 0x11111111;
    c.rcv_data = 0x22222222;
    c.xmit_pkts = 0x33333333;
    c.rcv_pkts = 0x44444444;
    c.xmit_wait = 0x55555555;
    std::array<uint8_t, 192> d{};
    c.write(d);
    EXPECT_EQ(d[1], 2);
    EXPECT_EQ(d[4], 0x01);
    EXPECT_EQ(d[7], 3);
    EXPECT_EQ(d[9], 0x05);
    EXPECT_EQ(d[15], 0x07);
    EXPECT_EQ(d[19], 0xAB);
    EXPECT_EQ(d[23], 0x09);
    EXPECT_EQ(d[24], 0x11);
    EXPECT_EQ(d[28], 0x22);
    EXPECT_EQ(d[32], 0x33);
    EXPECT_EQ(d[36], 0x44);
    EXPECT_EQ(d[43], 0x55);
    EXPECT_EQ(PortCounters::read(d).xmit_wait, 0x55555555u);

    PortCountersExtended e;
    e.port_select = 1;
    e.xmit_data = 1;
    e.rcv_data = 2;
    e.xmit_pkts = 3;
    e.rcv_pkts = 4;
    e.unicast_xmit_pkts = 5;
    e.unicast_rcv_pkts = 6;
    e.multicast_xmit_pkts = 7;
    e.multicast_rcv_pkts = 8;
    d.fill(0);
    e.write(d);
    for (int i = 0; i < 8; ++i) {
        EXPECT_EQ(d[15 + 8 * i], i + 1) << i;
    }
    EXPECT_EQ(PortCountersExtended::read(d).multicast_rcv_pkts, 8u);

    ClassPortInfo cpi;
    cpi.capability_mask = pma_cap::ExtendedWidth;
    cpi.resp_time_value = 18;
    cpi.capability_mask2 = 1;
    d.fill(0);
    cpi.write(d);
    EXPECT_EQ(d[0], 1);
    EXPECT_EQ(d[2], 0x02);
    EXPECT_EQ(d[3], 0x00);
    EXPECT_EQ(d[7], 0x32); // CapabilityMask2 bit 0 above RespTimeValue 18
}

TEST(IbMad, SaturatingCounters) {
    uint16_t c = 0xFFFE;
    sat_add(c, 5, 0xFFFF);
    EXPECT_EQ(c, 0xFFFF);
    uint8_t n = 14;
    sat_add(n, 3, 0xF);
    EXPECT_EQ(n, 0xF);
    uint64_t x = ~0ull - 1;
    sat_add(x, 10, ~0ull);
    EXPECT_EQ(x, ~0ull);
}
