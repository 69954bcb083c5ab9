// SPDX-License-Identifier: GPL-2.0-or-later
// The InfiniBand port over fabric/ib's SMA state (ib_port.hpp).
#include "device/ib_port.hpp"

#include "ib/bytes.hpp"
#include "link/byte_order.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace ohca {

IbPort::IbPort(uint64_t node_guid, uint64_t port_guid) {
    defaults_.node_guid = node_guid;
    defaults_.port_guid = port_guid != 0 ? port_guid : node_guid;
    defaults_.mtu_cap = kMaxMtu;
    defaults_.vl_cap = kVlCap;
    defaults_.pkey_entries = kPkeyTableLen;
    defaults_.description = "ohca";
    reset(false);
}

void IbPort::reset(bool link_up) {
    sma_ = ib::make_ca_state(defaults_);
    // The host's bits are the host's to set (SET_PORT_CAP), after a reset
    // too.
    port().info.capability_mask &= ~uint32_t{OHCA_PORT_CAP_HOST_MASK};
    own_ = {};
    traps_.clear();
    if (link_up) {
        ib::Sma(sma_).link_up(1);
    }
}

uint32_t IbPort::set_link(bool up) {
    if (up == link_up()) {
        return 0;
    }
    const uint8_t before = state();
    ib::Sma sma(sma_);
    if (up) {
        sma.link_up(1);
    } else {
        sma.link_down(1);
    }
    return state() != before ? uint32_t{OHCA_PORT_CHG_STATE} : 0;
}

// What the port's agents answer; the rest is the host's: responses to its
// own requests (the SM's sweep), traps and reports for its SM, SMInfo
// (the SM's attribute), other classes.
bool IbPort::for_agents(const ib::MadHeader &h) {
    switch (h.mgmt_class) {
    case ib::mgmt_class::SubnLidRouted:
    case ib::mgmt_class::SubnDirectedRoute:
        return (h.method == ib::method::Get || h.method == ib::method::Set ||
                h.method == ib::method::TrapRepress) &&
               h.attr_id != ib::attr::SmInfo;
    case ib::mgmt_class::Perf:
        return h.method == ib::method::Get || h.method == ib::method::Set;
    default:
        return false;
    }
}

uint32_t IbPort::process_mad(const ib::Mad &in, ib::Mad &out, uint32_t &changed, uint16_t slid,
                             ib::Sma::MKey mkey) {
    const ib::MadHeader h = ib::MadHeader::read(in);
    if (!for_agents(h)) {
        return OHCA_MAD_IFC_NOT_MINE;
    }
    const ib::PortInfo before = info();
    const auto pkeys = port().pkeys;
    ib::Sma sma(sma_);
    const ib::SmaResult r = sma.process(in, 1, out, mkey);
    if (h.method == ib::method::TrapRepress && h.attr_id == ib::attr::Notice &&
        h.mgmt_class == ib::mgmt_class::SubnLidRouted) {
        (void)traps_.repress(h.tid, own_.traps); // the SM heard the pending trap
    }
    const ib::PortInfo &now = info();
    // The SM set the port Down (opensm does so to renegotiate a link): the
    // link retrains and, the wire being up, the port is back in Init at
    // once with its LID, as a switch's port is; left in Polling it would
    // wait for a carrier change that never comes.
    if (before.phys_state == ib::phys_state::LinkUp && now.port_state == ib::port_state::Down &&
        now.phys_state == ib::phys_state::Polling) {
        sma.link_up(1);
    }
    if (now.port_state != before.port_state) {
        changed |= OHCA_PORT_CHG_STATE;
    }
    if (now.lid != before.lid || now.lmc != before.lmc) {
        changed |= OHCA_PORT_CHG_LID;
    }
    if (now.master_sm_lid != before.master_sm_lid || now.master_sm_sl != before.master_sm_sl) {
        changed |= OHCA_PORT_CHG_SM;
    }
    if (now.gid_prefix != before.gid_prefix) {
        changed |= OHCA_PORT_CHG_GUID;
    }
    if (port().pkeys != pkeys) {
        changed |= OHCA_PORT_CHG_PKEY;
    }
    if (sma.changes().client_reregister) {
        changed |= OHCA_PORT_CHG_CLIENT_REREG;
    }
    if (sma.changes().m_key_violation) {
        (void)m_key_violation(in, slid); // one pending trap at most: bounded
    }
    return r == ib::SmaResult::Reply ? OHCA_MAD_IFC_REPLY : OHCA_MAD_IFC_CONSUMED;
}

bool IbPort::can_trap() const {
    const ib::PortInfo &i = info();
    return i.port_state == ib::port_state::Active && i.lid != 0 && i.master_sm_lid != 0;
}

bool IbPort::sm_here() const {
    uint8_t bits = 0;
    return unicast_dlid(info().master_sm_lid, bits);
}

bool IbPort::raise_trap(uint16_t number, uint8_t type, std::span<const uint8_t> details) {
    if (!can_trap()) {
        return false; // no SM to tell yet: its sweep reads the port
    }
    return traps_.raise(ib::Sma(sma_).make_trap(number, type, details, 0), own_.traps);
}

bool IbPort::set_host_caps(uint32_t caps) {
    uint32_t &mask = port().info.capability_mask;
    // IsSMdisabled stays clear: a CA port where no SM runs is not one whose
    // SM is disabled (a real HCA's is clear too), and rdma-core's libibumad
    // (since the SMI/GSI split, trixie's 56) takes a port with it set for a
    // GSI-only plane, so smpquery and perfquery found no port to use.
    // (Cleared here for a state loaded from a stream that still has it.)
    const uint32_t next = (mask & ~uint32_t{OHCA_PORT_CAP_HOST_MASK | ib::port_cap::IsSmDisabled}) |
                          (caps & OHCA_PORT_CAP_HOST_MASK);
    if (next == mask) {
        return false;
    }
    mask = next;
    // Trap 144's details (IBTA 14.2.5.1): LIDADDR, no other local change,
    // the new CapabilityMask, no change flags.
    std::array<uint8_t, 14> d{};
    ib::put16(&d[2], lid());
    ib::put32(&d[6], mask);
    return raise_trap(ib::trap::CapabilityMaskChange, ib::notice_type::Info, d);
}

bool IbPort::m_key_violation(const ib::Mad &in, uint16_t slid) {
    // Trap 256's details (IBTA 14.2.5.1): LIDADDR the requester's LID,
    // DRSLID, the method, attribute and modifier, the M_Key it carried,
    // and for a directed route SMP its hop count and return path.
    const ib::Smp s = ib::Smp::read(in);
    std::array<uint8_t, 54> d{};
    ib::put16(&d[2], slid);
    d[6] = s.hdr.method;
    ib::put16(&d[8], s.hdr.attr_id);
    ib::put32(&d[10], s.hdr.attr_mod);
    ib::put64(&d[14], s.m_key);
    if (s.directed()) {
        ib::put16(&d[4], s.dr_slid);
        d[23] = static_cast<uint8_t>(0x80 | (s.hop_cnt & 0x3f)); // DRNotice, DRHopCount
        std::copy_n(s.return_path.begin() + 1, 30, d.begin() + 24);
    }
    return raise_trap(ib::trap::MKeyViolation, ib::notice_type::Security, d);
}

bool IbPort::pkey_violation(const IbPkeyViolation &v) {
    count_pkey_violation();
    // Trap 257's details (IBTA 14.2.5.1): LID1/LID2 the packet's source and
    // destination, the P_Key, SL and QP1 (the source's QP), QP2, the GIDs.
    std::array<uint8_t, 50> d{};
    ib::put16(&d[2], v.slid);
    ib::put16(&d[4], v.dlid);
    ib::put32(&d[6], v.pkey);
    ib::put32(&d[10], (uint32_t{v.sl} << 28) | (v.src_qp & ib::kQpnMask));
    ib::put32(&d[14], v.dest_qp & ib::kQpnMask);
    if (v.grh) {
        std::copy(v.sgid.begin(), v.sgid.end(), d.begin() + 18);
        std::copy(v.dgid.begin(), v.dgid.end(), d.begin() + 34);
    }
    return raise_trap(ib::trap::PKeyViolation, ib::notice_type::Security, d);
}

bool IbPort::trap_due(uint64_t now_ns, std::span<uint8_t, ib::kUdMadFrameBytes> frame) {
    if (!traps_.pending()) {
        return false;
    }
    if (!can_trap()) {
        traps_.clear(); // the port left ACTIVE or lost its SM
        return false;
    }
    const ib::PortInfo &i = info();
    // SubnetTimeout: 4.096 us x 2^timeout (5 bits).
    const uint64_t period = uint64_t{4096} << (i.subnet_timeout & 0x1f);
    const std::optional<ib::Mad> mad = traps_.due(now_ns, period, own_.traps);
    if (!mad) {
        return false;
    }
    ib::MadRoute r;
    r.vl = kVl15;
    r.sl = i.master_sm_sl;
    r.dlid = i.master_sm_lid;
    r.slid = lid();
    r.pkey = ib::kDefaultPKey;
    r.psn = trap_psn_++;
    ib::write_ud_mad_frame(frame, r, *mad);
    return true;
}

uint8_t IbPort::active_mtu() const {
    const uint8_t n = info().neighbor_mtu;
    return n >= 1 && n <= kMaxMtu ? std::min(n, info().mtu_cap) : kMaxMtu;
}

bool IbPort::pkey_matches(uint16_t pkey) const {
    return std::any_of(port().pkeys.begin(), port().pkeys.end(),
                       [pkey](uint16_t e) { return pkeys_match(e, pkey); });
}

uint8_t IbPort::data_vls() const {
    const uint8_t n = ib::vls_for_code(info().operational_vls);
    return n != 0 ? n : 1;
}

uint8_t IbPort::vl_of(uint8_t sl) const {
    const uint8_t vl = port().sl2vl[sl & 0xf];
    // A VL the port does not operate drops the SL's packets: VL15 carries
    // no data, so the send path refuses them.
    return vl < data_vls() ? vl : kVl15;
}

bool IbPort::unicast_dlid(uint16_t dlid, uint8_t &path_bits) const {
    if (lid() == 0 || dlid == 0 || dlid >= ib::kMulticastLidFirst) {
        return false;
    }
    const auto mask = static_cast<uint16_t>((1u << lmc()) - 1);
    if ((dlid & ~mask) != (lid() & ~mask)) {
        return false;
    }
    path_bits = static_cast<uint8_t>(dlid & mask);
    return true;
}

std::array<uint8_t, 16> IbPort::gid() const {
    std::array<uint8_t, 16> g{};
    ib::put64(g.data(), info().gid_prefix);
    ib::put64(g.data() + 8, port().guid);
    return g;
}

void IbPort::count_xmit(size_t frame_len, bool mcast) {
    ib::SmaPortState &p = port();
    ib::sat_add(p.counters.xmit_pkts, 1, 0xffffffffu);
    ib::sat_add(p.counters.xmit_data, frame_len / 4, 0xffffffffu);
    ++p.counters_ext.xmit_pkts;
    p.counters_ext.xmit_data += frame_len / 4;
    ++(mcast ? p.counters_ext.multicast_xmit_pkts : p.counters_ext.unicast_xmit_pkts);
}

void IbPort::count_rcv(size_t frame_len, bool mcast) {
    ib::SmaPortState &p = port();
    ib::sat_add(p.counters.rcv_pkts, 1, 0xffffffffu);
    ib::sat_add(p.counters.rcv_data, frame_len / 4, 0xffffffffu);
    ++p.counters_ext.rcv_pkts;
    p.counters_ext.rcv_data += frame_len / 4;
    ++(mcast ? p.counters_ext.multicast_rcv_pkts : p.counters_ext.unicast_rcv_pkts);
}

void IbPort::count_rcv_error() {
    ++own_.rcv_errors;
    ib::sat_add(port().counters.rcv_errors, 1, 0xffff);
}

void IbPort::count_vl15_dropped() {
    ++own_.vl15_dropped;
    ib::sat_add(port().counters.vl15_dropped, 1, 0xffff);
}

void IbPort::count_pkey_violation() {
    ++own_.pkey_violations;
    ib::sat_add(port().info.p_key_violations, 1, 0xffff);
}

void IbPort::count_xmit_discard() {
    ++own_.xmit_discards;
    ib::sat_add(port().counters.xmit_discards, 1, 0xffff);
}

void IbPort::count_xmit_wait() {
    ++own_.xmit_wait;
    ib::sat_add(port().counters.xmit_wait, 1, 0xffffffffu);
}

void IbPort::fill_query(ohca_query_port_out &out) const {
    const ib::PortInfo &i = info();
    out.state = i.port_state;
    out.link_up = link_up() ? 1 : 0;
    out.link_layer = OHCA_LINK_IB;
    out.phys_state = i.phys_state;
    out.lmc = i.lmc;
    out.sm_sl = i.master_sm_sl;
    out.lid = le(i.lid);
    out.sm_lid = le(i.master_sm_lid);
    out.active_mtu = active_mtu();
    out.max_ib_mtu = i.mtu_cap;
    out.max_vl_num = i.vl_cap;
    out.init_type_reply = i.init_type_reply;
    out.port_cap_flags = le(i.capability_mask);
    ib::put64(out.port_guid, port().guid);
    ib::put64(out.subnet_prefix, i.gid_prefix);
    out.pkey_violations = le(uint32_t{i.p_key_violations});
    out.qkey_violations = le(uint32_t{i.q_key_violations});
    out.active_width = i.link_width_active;
    out.active_speed = i.link_speed_active;
    out.subnet_timeout = i.subnet_timeout;
    out.pkey_table_len = le(static_cast<uint32_t>(port().pkeys.size()));
    out.gid_table_len = le(uint32_t{1});
}

ohca_av_ib av_ib_of(const ohca_av &av) {
    static_assert(sizeof(ohca_av_ib) == sizeof(ohca_av));
    ohca_av_ib ib{};
    std::memcpy(&ib, &av, sizeof(ib));
    return ib;
}

std::optional<size_t> av_ib_bad_field(const ohca_av &av) {
    const ohca_av_ib ib = av_ib_of(av);
    if (le(ib.dlid) == 0) {
        return offsetof(ohca_av_ib, dlid);
    }
    if (ib.sl > 15) {
        return offsetof(ohca_av_ib, sl);
    }
    if (ib.src_path_bits > 0x7f) {
        return offsetof(ohca_av_ib, src_path_bits);
    }
    if ((ib.flags & ~uint8_t{OHCA_AV_IB_GRH}) != 0) {
        return offsetof(ohca_av_ib, flags);
    }
    if ((ib.flags & OHCA_AV_IB_GRH) != 0) {
        if (ib.sgid_index != 0) {
            return offsetof(ohca_av_ib, sgid_index);
        }
        if (le(ib.flow_label) > 0xfffff) {
            return offsetof(ohca_av_ib, flow_label);
        }
    }
    return std::nullopt;
}

} // namespace ohca
