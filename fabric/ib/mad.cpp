// SPDX-License-Identifier: GPL-2.0-or-later
// Offsets are the IBTA's (Vol 1 §13.4.2, §14.2.1, §14.2.5, §16.1.3).
#include "ib/mad.hpp"

#include "ib/bytes.hpp"
#include "ib/packet.hpp"

#include <algorithm>
#include <cstring>

namespace ohca::ib {

MadHeader MadHeader::read(const Mad &m) {
    MadHeader h;
    h.base_version = m[0];
    h.mgmt_class = m[1];
    h.class_version = m[2];
    h.method = m[3];
    h.status = get16(&m[4]);
    h.class_specific = get16(&m[6]);
    h.tid = get64(&m[8]);
    h.attr_id = get16(&m[16]);
    h.attr_mod = get32(&m[20]);
    return h;
}

void MadHeader::write(Mad &m) const {
    m[0] = base_version;
    m[1] = mgmt_class;
    m[2] = class_version;
    m[3] = method;
    put16(&m[4], status);
    put16(&m[6], class_specific);
    put64(&m[8], tid);
    put16(&m[16], attr_id);
    put16(&m[18], 0);
    put32(&m[20], attr_mod);
}

Smp Smp::read(const Mad &m) {
    Smp s;
    s.hdr = MadHeader::read(m);
    s.m_key = get64(&m[24]);
    if (s.directed()) {
        s.direction = (s.hdr.status & 0x8000) != 0;
        s.hop_ptr = m[6];
        s.hop_cnt = m[7];
        s.dr_slid = get16(&m[32]);
        s.dr_dlid = get16(&m[34]);
        std::memcpy(s.initial_path.data(), &m[kDrInitialPathOffset], kDrPathBytes);
        std::memcpy(s.return_path.data(), &m[kDrReturnPathOffset], kDrPathBytes);
    }
    std::memcpy(s.data.data(), &m[kSmpDataOffset], kSmpDataBytes);
    return s;
}

void Smp::write(Mad &m) const {
    m.fill(0);
    MadHeader h = hdr;
    if (directed()) {
        h.status = static_cast<uint16_t>((hdr.status & 0x7FFF) | (direction ? 0x8000 : 0));
        h.class_specific = static_cast<uint16_t>((hop_ptr << 8) | hop_cnt);
    }
    h.write(m);
    put64(&m[24], m_key);
    if (directed()) {
        put16(&m[32], dr_slid);
        put16(&m[34], dr_dlid);
        std::memcpy(&m[kDrInitialPathOffset], initial_path.data(), kDrPathBytes);
        std::memcpy(&m[kDrReturnPathOffset], return_path.data(), kDrPathBytes);
    }
    std::memcpy(&m[kSmpDataOffset], data.data(), kSmpDataBytes);
}

NodeInfo NodeInfo::read(std::span<const uint8_t, kSmpDataBytes> d) {
    NodeInfo n;
    n.base_version = d[0];
    n.class_version = d[1];
    n.node_type = d[2];
    n.num_ports = d[3];
    n.system_image_guid = get64(&d[4]);
    n.node_guid = get64(&d[12]);
    n.port_guid = get64(&d[20]);
    n.partition_cap = get16(&d[28]);
    n.device_id = get16(&d[30]);
    n.revision = get32(&d[32]);
    n.local_port_num = d[36];
    n.vendor_id = get24(&d[37]);
    return n;
}

void NodeInfo::write(std::span<uint8_t, kSmpDataBytes> d) const {
    d[0] = base_version;
    d[1] = class_version;
    d[2] = node_type;
    d[3] = num_ports;
    put64(&d[4], system_image_guid);
    put64(&d[12], node_guid);
    put64(&d[20], port_guid);
    put16(&d[28], partition_cap);
    put16(&d[30], device_id);
    put32(&d[32], revision);
    d[36] = local_port_num;
    put24(&d[37], vendor_id);
}

namespace {
uint8_t hi(uint8_t b) {
    return static_cast<uint8_t>(b >> 4);
}
uint8_t lo(uint8_t b) {
    return static_cast<uint8_t>(b & 0xF);
}
uint8_t nib(uint8_t h, uint8_t l) {
    return static_cast<uint8_t>(((h & 0xF) << 4) | (l & 0xF));
}
} // namespace

PortInfo PortInfo::read(std::span<const uint8_t, kSmpDataBytes> d) {
    PortInfo p;
    p.m_key = get64(&d[0]);
    p.gid_prefix = get64(&d[8]);
    p.lid = get16(&d[16]);
    p.master_sm_lid = get16(&d[18]);
    p.capability_mask = get32(&d[20]);
    p.diag_code = get16(&d[24]);
    p.m_key_lease_period = get16(&d[26]);
    p.local_port_num = d[28];
    p.link_width_enabled = d[29];
    p.link_width_supported = d[30];
    p.link_width_active = d[31];
    p.link_speed_supported = hi(d[32]);
    p.port_state = lo(d[32]);
    p.phys_state = hi(d[33]);
    p.link_down_default_state = lo(d[33]);
    p.m_key_protect_bits = static_cast<uint8_t>(d[34] >> 6);
    p.lmc = static_cast<uint8_t>(d[34] & 0x7);
    p.link_speed_active = hi(d[35]);
    p.link_speed_enabled = lo(d[35]);
    p.neighbor_mtu = hi(d[36]);
    p.master_sm_sl = lo(d[36]);
    p.vl_cap = hi(d[37]);
    p.init_type = lo(d[37]);
    p.vl_high_limit = d[38];
    p.vl_arb_high_cap = d[39];
    p.vl_arb_low_cap = d[40];
    p.init_type_reply = hi(d[41]);
    p.mtu_cap = lo(d[41]);
    p.vl_stall_count = static_cast<uint8_t>(d[42] >> 5);
    p.hoq_life = static_cast<uint8_t>(d[42] & 0x1F);
    p.operational_vls = hi(d[43]);
    p.partition_enforcement_inbound = (d[43] & 0x8) != 0;
    p.partition_enforcement_outbound = (d[43] & 0x4) != 0;
    p.filter_raw_inbound = (d[43] & 0x2) != 0;
    p.filter_raw_outbound = (d[43] & 0x1) != 0;
    p.m_key_violations = get16(&d[44]);
    p.p_key_violations = get16(&d[46]);
    p.q_key_violations = get16(&d[48]);
    p.guid_cap = d[50];
    p.client_reregister = (d[51] & 0x80) != 0;
    p.subnet_timeout = static_cast<uint8_t>(d[51] & 0x1F);
    p.resp_time_value = static_cast<uint8_t>(d[52] & 0x1F);
    p.local_phy_errors = hi(d[53]);
    p.overrun_errors = lo(d[53]);
    p.max_credit_hint = get16(&d[54]);
    p.link_round_trip_latency = get24(&d[57]);
    p.capability_mask2 = get16(&d[60]);
    return p;
}

void PortInfo::write(std::span<uint8_t, kSmpDataBytes> d) const {
    std::memset(d.data(), 0, d.size());
    put64(&d[0], m_key);
    put64(&d[8], gid_prefix);
    put16(&d[16], lid);
    put16(&d[18], master_sm_lid);
    put32(&d[20], capability_mask);
    put16(&d[24], diag_code);
    put16(&d[26], m_key_lease_period);
    d[28] = local_port_num;
    d[29] = link_width_enabled;
    d[30] = link_width_supported;
    d[31] = link_width_active;
    d[32] = nib(link_speed_supported, port_state);
    d[33] = nib(phys_state, link_down_default_state);
    d[34] = static_cast<uint8_t>(((m_key_protect_bits & 0x3) << 6) | (lmc & 0x7));
    d[35] = nib(link_speed_active, link_speed_enabled);
    d[36] = nib(neighbor_mtu, master_sm_sl);
    d[37] = nib(vl_cap, init_type);
    d[38] = vl_high_limit;
    d[39] = vl_arb_high_cap;
    d[40] = vl_arb_low_cap;
    d[41] = nib(init_type_reply, mtu_cap);
    d[42] = static_cast<uint8_t>(((vl_stall_count & 0x7) << 5) | (hoq_life & 0x1F));
    d[43] = static_cast<uint8_t>(((operational_vls & 0xF) << 4) |
                                 (partition_enforcement_inbound ? 0x8 : 0) |
                                 (partition_enforcement_outbound ? 0x4 : 0) |
                                 (filter_raw_inbound ? 0x2 : 0) | (filter_raw_outbound ? 0x1 : 0));
    put16(&d[44], m_key_violations);
    put16(&d[46], p_key_violations);
    put16(&d[48], q_key_violations);
    d[50] = guid_cap;
    d[51] = static_cast<uint8_t>((client_reregister ? 0x80 : 0) | (subnet_timeout & 0x1F));
    d[52] = static_cast<uint8_t>(resp_time_value & 0x1F);
    d[53] = nib(local_phy_errors, overrun_errors);
    put16(&d[54], max_credit_hint);
    put24(&d[57], link_round_trip_latency);
    put16(&d[60], capability_mask2);
}

SwitchInfo SwitchInfo::read(std::span<const uint8_t, kSmpDataBytes> d) {
    SwitchInfo s;
    s.linear_fdb_cap = get16(&d[0]);
    s.random_fdb_cap = get16(&d[2]);
    s.multicast_fdb_cap = get16(&d[4]);
    s.linear_fdb_top = get16(&d[6]);
    s.default_port = d[8];
    s.default_mcast_primary_port = d[9];
    s.default_mcast_not_primary_port = d[10];
    s.life_time_value = static_cast<uint8_t>(d[11] >> 3);
    s.port_state_change = (d[11] & 0x4) != 0;
    s.optimized_sl2vl = static_cast<uint8_t>(d[11] & 0x3);
    s.lids_per_port = get16(&d[12]);
    s.partition_enforcement_cap = get16(&d[14]);
    s.inbound_enforcement_cap = (d[16] & 0x80) != 0;
    s.outbound_enforcement_cap = (d[16] & 0x40) != 0;
    s.filter_raw_inbound_cap = (d[16] & 0x20) != 0;
    s.filter_raw_outbound_cap = (d[16] & 0x10) != 0;
    s.enhanced_port0 = (d[16] & 0x08) != 0;
    s.multicast_fdb_top = get16(&d[18]);
    return s;
}

void SwitchInfo::write(std::span<uint8_t, kSmpDataBytes> d) const {
    std::memset(d.data(), 0, d.size());
    put16(&d[0], linear_fdb_cap);
    put16(&d[2], random_fdb_cap);
    put16(&d[4], multicast_fdb_cap);
    put16(&d[6], linear_fdb_top);
    d[8] = default_port;
    d[9] = default_mcast_primary_port;
    d[10] = default_mcast_not_primary_port;
    d[11] = static_cast<uint8_t>(((life_time_value & 0x1F) << 3) | (port_state_change ? 0x4 : 0) |
                                 (optimized_sl2vl & 0x3));
    put16(&d[12], lids_per_port);
    put16(&d[14], partition_enforcement_cap);
    d[16] = static_cast<uint8_t>(
        (inbound_enforcement_cap ? 0x80 : 0) | (outbound_enforcement_cap ? 0x40 : 0) |
        (filter_raw_inbound_cap ? 0x20 : 0) | (filter_raw_outbound_cap ? 0x10 : 0) |
        (enhanced_port0 ? 0x08 : 0));
    put16(&d[18], multicast_fdb_top);
}

Notice Notice::read(std::span<const uint8_t, kSmpDataBytes> d) {
    Notice n;
    n.is_generic = (d[0] & 0x80) != 0;
    n.type = static_cast<uint8_t>(d[0] & 0x7F);
    n.producer_type = get24(&d[1]);
    n.trap_number = get16(&d[4]);
    n.issuer_lid = get16(&d[6]);
    n.toggle = (d[8] & 0x80) != 0;
    n.count = static_cast<uint16_t>(get16(&d[8]) & 0x7FFF);
    std::memcpy(n.details.data(), &d[10], n.details.size());
    return n;
}

void Notice::write(std::span<uint8_t, kSmpDataBytes> d) const {
    d[0] = static_cast<uint8_t>((is_generic ? 0x80 : 0) | (type & 0x7F));
    put24(&d[1], producer_type);
    put16(&d[4], trap_number);
    put16(&d[6], issuer_lid);
    put16(&d[8], static_cast<uint16_t>((toggle ? 0x8000 : 0) | (count & 0x7FFF)));
    std::memcpy(&d[10], details.data(), details.size());
}

// DataValid, LIDADDR1, LIDADDR2, PKey, then SL (4 bits) with QP1 (24)
// after 4 reserved bits, QP2 (24) after 8 reserved, GIDADDR1, GIDADDR2,
// SWLIDADDR, PortNo.
void SwitchPKeyViolation::write(std::span<uint8_t, kBytes> d) const {
    std::fill(d.begin(), d.end(), uint8_t{0});
    put16(&d[0], valid);
    put16(&d[2], lid1);
    put16(&d[4], lid2);
    put16(&d[6], pkey);
    put32(&d[8], (uint32_t{sl} << 28) | (qp1 & kQpnMask));
    put32(&d[12], qp2 & kQpnMask);
    std::memcpy(&d[16], gid1.data(), gid1.size());
    std::memcpy(&d[32], gid2.data(), gid2.size());
    put16(&d[48], sw_lid);
    d[50] = port;
}

SwitchPKeyViolation SwitchPKeyViolation::read(std::span<const uint8_t, kBytes> d) {
    SwitchPKeyViolation v;
    v.valid = get16(&d[0]);
    v.lid1 = get16(&d[2]);
    v.lid2 = get16(&d[4]);
    v.pkey = get16(&d[6]);
    v.sl = static_cast<uint8_t>(d[8] >> 4);
    v.qp1 = get32(&d[8]) & kQpnMask;
    v.qp2 = get32(&d[12]) & kQpnMask;
    std::memcpy(v.gid1.data(), &d[16], v.gid1.size());
    std::memcpy(v.gid2.data(), &d[32], v.gid2.size());
    v.sw_lid = get16(&d[48]);
    v.port = d[50];
    return v;
}

void ClassPortInfo::write(std::span<uint8_t> d) const {
    d[0] = base_version;
    d[1] = class_version;
    put16(&d[2], capability_mask);
    put32(&d[4], ((capability_mask2 & 0x7FFFFFF) << 5) | (resp_time_value & 0x1F));
}

PortCounters PortCounters::read(std::span<const uint8_t> d) {
    PortCounters c;
    c.port_select = d[1];
    c.counter_select = get16(&d[2]);
    c.symbol_errors = get16(&d[4]);
    c.link_error_recovery = d[6];
    c.link_downed = d[7];
    c.rcv_errors = get16(&d[8]);
    c.rcv_remote_phys_errors = get16(&d[10]);
    c.rcv_switch_relay_errors = get16(&d[12]);
    c.xmit_discards = get16(&d[14]);
    c.xmit_constraint_errors = d[16];
    c.rcv_constraint_errors = d[17];
    c.local_link_integrity_errors = hi(d[19]);
    c.excessive_buffer_overrun_errors = lo(d[19]);
    c.vl15_dropped = get16(&d[22]);
    c.xmit_data = get32(&d[24]);
    c.rcv_data = get32(&d[28]);
    c.xmit_pkts = get32(&d[32]);
    c.rcv_pkts = get32(&d[36]);
    c.xmit_wait = get32(&d[40]);
    return c;
}

void PortCounters::write(std::span<uint8_t> d) const {
    std::memset(d.data(), 0, 44);
    d[1] = port_select;
    put16(&d[2], counter_select);
    put16(&d[4], symbol_errors);
    d[6] = link_error_recovery;
    d[7] = link_downed;
    put16(&d[8], rcv_errors);
    put16(&d[10], rcv_remote_phys_errors);
    put16(&d[12], rcv_switch_relay_errors);
    put16(&d[14], xmit_discards);
    d[16] = xmit_constraint_errors;
    d[17] = rcv_constraint_errors;
    d[19] = nib(local_link_integrity_errors, excessive_buffer_overrun_errors);
    put16(&d[22], vl15_dropped);
    put32(&d[24], xmit_data);
    put32(&d[28], rcv_data);
    put32(&d[32], xmit_pkts);
    put32(&d[36], rcv_pkts);
    put32(&d[40], xmit_wait);
}

PortCountersExtended PortCountersExtended::read(std::span<const uint8_t> d) {
    PortCountersExtended c;
    c.port_select = d[1];
    c.counter_select = get16(&d[2]);
    c.xmit_data = get64(&d[8]);
    c.rcv_data = get64(&d[16]);
    c.xmit_pkts = get64(&d[24]);
    c.rcv_pkts = get64(&d[32]);
    c.unicast_xmit_pkts = get64(&d[40]);
    c.unicast_rcv_pkts = get64(&d[48]);
    c.multicast_xmit_pkts = get64(&d[56]);
    c.multicast_rcv_pkts = get64(&d[64]);
    return c;
}

void PortCountersExtended::write(std::span<uint8_t> d) const {
    std::memset(d.data(), 0, 72);
    d[1] = port_select;
    put16(&d[2], counter_select);
    put64(&d[8], xmit_data);
    put64(&d[16], rcv_data);
    put64(&d[24], xmit_pkts);
    put64(&d[32], rcv_pkts);
    put64(&d[40], unicast_xmit_pkts);
    put64(&d[48], unicast_rcv_pkts);
    put64(&d[56], multicast_xmit_pkts);
    put64(&d[64], multicast_rcv_pkts);
}

void write_ud_mad_frame(std::span<uint8_t, kUdMadFrameBytes> frame, const MadRoute &r,
                        const Mad &mad) {
    static_assert(kUdMadFrameBytes ==
                  kLrhBytes + kBthBytes + kDethBytes + kMadBytes + kIcrcBytes + kVcrcBytes);
    Lrh l;
    l.vl = r.vl;
    l.sl = r.sl;
    l.lnh = Lnh::IbaLocal;
    l.dlid = r.dlid;
    l.slid = r.slid;
    l.write(frame.data());
    Bth b;
    b.opcode = kOpUdSendOnly;
    b.pkey = r.pkey;
    b.dest_qp = r.dest_qp & kQpnMask;
    b.psn = r.psn & kQpnMask;
    b.write(frame.data() + kLrhBytes);
    uint8_t *deth = frame.data() + kLrhBytes + kBthBytes;
    put32(deth, r.qkey);
    put32(deth + 4, r.src_qp & kQpnMask);
    std::memcpy(deth + kDethBytes, mad.data(), kMadBytes);
    (void)seal(frame); // the size is a valid one (static_assert above)
}

} // namespace ohca::ib
