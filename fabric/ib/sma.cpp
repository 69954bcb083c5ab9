// SPDX-License-Identifier: GPL-2.0-or-later
// Attribute semantics follow IBTA Vol 1 §14.2.5 (SMA) and §16.1 (PMA).
#include "ib/sma.hpp"

#include "ib/bytes.hpp"
#include "ib/packet.hpp"

#include <algorithm>
#include <cstring>

namespace ohca::ib {

uint16_t SmaState::mft_mask(uint16_t mlid, size_t position) const {
    const size_t positions = mft_positions();
    if (!is_multicast_lid(mlid) || position >= positions) {
        return 0;
    }
    const size_t i = static_cast<size_t>(mlid - kMulticastLidFirst) * positions + position;
    return i < mft.size() ? mft[i] : 0;
}

uint8_t SmaState::sl_to_vl(uint8_t in, uint8_t out, uint8_t sl) const {
    if (!is_switch()) {
        return ports.size() > 1 ? ports[1].sl2vl[sl & 0xF] : 0;
    }
    const size_t n = ports.size();
    const size_t i = (static_cast<size_t>(in) * n + out) * 16 + (sl & 0xF);
    return in < n && out < n && i < sl2vl.size() ? sl2vl[i] : 0;
}

namespace {

SmaPortState make_port(const SmaDefaults &d, uint8_t num, bool with_pkeys) {
    SmaPortState p;
    PortInfo &i = p.info;
    i.local_port_num = num;
    i.port_state = port_state::Down;
    i.phys_state = phys_state::Polling;
    i.link_down_default_state = phys_state::Polling;
    // 4x at 2.5 Gb/s a lane: 10 Gb/s, the Ethernet port's speed, and the
    // rate of opensm's default IPoIB broadcast group, which the SA lets
    // no slower port join.
    i.link_width_supported = 3; // 1x, 4x
    i.link_width_enabled = 3;
    i.link_width_active = 2;    // 4x
    i.link_speed_supported = 1; // 2.5 Gb/s a lane
    i.link_speed_enabled = 1;
    i.link_speed_active = 1;
    i.mtu_cap = d.mtu_cap;
    i.neighbor_mtu = d.mtu_cap;
    i.vl_cap = d.vl_cap;
    i.operational_vls = d.vl_cap;
    i.vl_high_limit = 0;
    i.vl_arb_high_cap = 8;
    i.vl_arb_low_cap = 8;
    i.guid_cap = 1;
    i.gid_prefix = 0xFE80000000000000ull;
    i.hoq_life = 0x1F;
    i.subnet_timeout = 18;
    i.resp_time_value = 18;
    i.local_phy_errors = 8;
    i.overrun_errors = 8;
    if (with_pkeys) {
        p.pkeys.assign(d.pkey_entries, 0);
        if (!p.pkeys.empty()) {
            p.pkeys[0] = kDefaultPKey;
        }
    }
    const uint8_t vls = std::max<uint8_t>(vls_for_code(d.vl_cap), 1);
    for (uint8_t sl = 0; sl < 16; ++sl) {
        p.sl2vl[sl] = static_cast<uint8_t>(sl % vls);
    }
    for (size_t e = 0; e < 8 && e < vls; ++e) {
        p.vlarb_low[e] = {static_cast<uint8_t>(e), 1};
    }
    return p;
}

void copy_description(SmaState &s, const char *text) {
    s.description.fill(0);
    if (text != nullptr) {
        // NodeDescription is 64 bytes of text, NUL-padded, not NUL-terminated
        // when it is full.
        std::memcpy(s.description.data(), text, strnlen(text, s.description.size()));
    }
}

} // namespace

bool pkey_in_table(uint16_t pkey, std::span<const uint16_t> table) {
    const auto base = static_cast<uint16_t>(pkey & 0x7FFF);
    return base != 0 && std::any_of(table.begin(), table.end(),
                                    [base](uint16_t e) { return (e & 0x7FFF) == base; });
}

SmaState make_ca_state(const SmaDefaults &d) {
    SmaState s;
    s.node_type = node_type::Ca;
    s.node_guid = d.node_guid;
    s.system_image_guid = d.node_guid;
    copy_description(s, d.description);
    s.ports.push_back(SmaPortState{}); // no port 0 on a CA
    s.ports.push_back(make_port(d, 1, true));
    s.ports[1].guid = d.port_guid;
    // No IsSMdisabled: that is a port whose SM the board forbids (or a
    // GSI-only plane, to rdma-core's libibumad), not one where no SM runs.
    s.ports[1].info.capability_mask =
        port_cap::IsTrapSupported | port_cap::IsSystemImageGuidSupported | port_cap::IsCmSupported |
        port_cap::IsClientReregistrationSupported;
    return s;
}

SmaState make_switch_state(const SmaDefaults &d, uint8_t ports, uint16_t lft_cap,
                           uint16_t mft_cap) {
    SmaState s;
    ports = std::clamp<uint8_t>(ports, 1, kMaxSmaPorts);
    s.node_type = node_type::Switch;
    s.node_guid = d.node_guid;
    s.system_image_guid = d.node_guid;
    copy_description(s, d.description);
    for (uint8_t p = 0; p <= ports; ++p) {
        // Port 0 holds the switch's P_Key table; each external port one
        // for partition enforcement (the SM copies its CA's there).
        s.ports.push_back(make_port(d, p, true));
    }
    SmaPortState &p0 = s.ports[0];
    p0.guid = d.port_guid;
    // Base switch port 0: no physical link; it is up once the switch runs.
    p0.info.phys_state = phys_state::LinkUp;
    p0.info.port_state = port_state::Init;
    p0.info.capability_mask =
        port_cap::IsTrapSupported | port_cap::IsSmDisabled | port_cap::IsSystemImageGuidSupported;
    SwitchInfo &w = s.switch_info;
    w.linear_fdb_cap = std::min<uint16_t>(lft_cap, kMulticastLidFirst);
    w.multicast_fdb_cap = std::min<uint16_t>(mft_cap, kMulticastLidLast - kMulticastLidFirst + 1);
    w.linear_fdb_top = 0;
    w.default_port = 0;
    w.default_mcast_primary_port = 0xFF;
    w.default_mcast_not_primary_port = 0xFF;
    w.life_time_value = 0x12;
    // Every external port's table can be enforced both ways (the SM then
    // sets PortInfo's enforcement bits); raw packets are not filtered.
    w.partition_enforcement_cap = d.pkey_entries;
    w.inbound_enforcement_cap = true;
    w.outbound_enforcement_cap = true;
    w.multicast_fdb_top = 0xBFFF; // none used yet
    s.lft.assign(w.linear_fdb_cap, kLftNoPort);
    s.mft.assign(static_cast<size_t>(w.multicast_fdb_cap) * s.mft_positions(), 0);
    const size_t n = s.ports.size();
    s.sl2vl.assign(n * n * 16, 0);
    for (size_t i = 0; i < n * n; ++i) {
        std::copy(p0.sl2vl.begin(), p0.sl2vl.end(), s.sl2vl.begin() + static_cast<long>(i * 16));
    }
    return s;
}

// ---------------------------------------------------------------------------

int Sma::port_for(uint32_t port_field, uint8_t in_port) const {
    if (!s_.is_switch()) {
        // A CA's tables belong to the port the SMP arrived on; 0 names it too.
        return port_field == 0 || port_field == 1 ? 1 : -1;
    }
    (void)in_port;
    return port_field <= s_.num_ports() ? static_cast<int>(port_field) : -1;
}

bool Sma::m_key_ok(const Smp &req, uint8_t in_port, bool &hide_mkey) {
    (void)in_port;
    SmaPortState &p = s_.ports[s_.mgmt_port()];
    const uint64_t key = p.info.m_key;
    hide_mkey = false;
    if (key == 0 || req.m_key == key) {
        return true;
    }
    const bool get = req.hdr.method == method::Get;
    const uint8_t protect = p.info.m_key_protect_bits;
    if (get && protect <= 1) {
        hide_mkey = protect == 1;
        return true;
    }
    sat_add(p.info.m_key_violations, 1, 0xFFFF);
    changes_.m_key_violation = true;
    return false;
}

SmaResult Sma::process(const Mad &in, uint8_t in_port, Mad &out, MKey mkey) {
    const MadHeader h = MadHeader::read(in);
    if ((h.method & method::Response) != 0) {
        return SmaResult::Drop; // responses are not ours
    }
    if (h.mgmt_class == mgmt_class::Perf) {
        return perf(in, out);
    }
    if (h.mgmt_class != mgmt_class::SubnLidRouted &&
        h.mgmt_class != mgmt_class::SubnDirectedRoute) {
        return SmaResult::Drop;
    }
    if (s_.ports.size() < 2 || in_port >= s_.ports.size()) {
        return SmaResult::Drop;
    }
    Smp smp = Smp::read(in);
    if (h.method == method::TrapRepress) {
        return SmaResult::Drop; // the SM acknowledged a trap
    }
    bool hide_mkey = false;
    if (mkey == MKey::Check && !m_key_ok(smp, in_port, hide_mkey)) {
        return SmaResult::Drop;
    }
    uint16_t status = mad_status::Ok;
    if (h.base_version != 1 || h.class_version != 1) {
        status = mad_status::BadVersion;
    } else if (h.method != method::Get && h.method != method::Set) {
        status = mad_status::MethodUnsupported;
    } else {
        SmpData data = smp.data;
        status = get_set(smp, in_port, data, h.method == method::Set, hide_mkey);
        if (status == mad_status::Ok || status == mad_status::InvalidField) {
            smp.data = data;
        }
    }
    smp.hdr.method = method::GetResp;
    smp.hdr.status = status;
    if (smp.directed()) {
        smp.direction = true; // the response returns along the path
    }
    smp.write(out);
    return SmaResult::Reply;
}

uint16_t Sma::get_set(const Smp &req, uint8_t in_port, SmpData &data, bool set, bool &hide_mkey) {
    const uint32_t mod = req.hdr.attr_mod;
    const bool sw = s_.is_switch();
    switch (req.hdr.attr_id) {
    case attr::NodeDescription:
        if (set) {
            return mad_status::MethodAttrUnsupported;
        }
        std::copy(s_.description.begin(), s_.description.end(), data.begin());
        return mad_status::Ok;
    case attr::NodeInfo:
        if (set) {
            return mad_status::MethodAttrUnsupported;
        }
        return node_info(in_port, data);
    case attr::PortInfo: {
        const uint16_t st = port_info(mod, in_port, data, set);
        if (hide_mkey) {
            std::fill(data.begin(), data.begin() + 8, 0);
        }
        return st;
    }
    case attr::SwitchInfo:
        return sw ? switch_info(data, set) : mad_status::MethodAttrUnsupported;
    case attr::GuidInfo:
        return guid_info(mod, in_port, data, set);
    case attr::PKeyTable:
        return pkey_table(mod, in_port, data, set);
    case attr::SlToVlTable:
        return sl2vl_table(mod, in_port, data, set);
    case attr::VlArbTable:
        return vlarb_table(mod, in_port, data, set);
    case attr::LinearFdb:
        return sw ? lft_block(mod, data, set) : mad_status::MethodAttrUnsupported;
    case attr::MulticastFdb:
        return sw ? mft_block(mod, data, set) : mad_status::MethodAttrUnsupported;
    default:
        return mad_status::MethodAttrUnsupported;
    }
}

uint16_t Sma::node_info(uint8_t in_port, SmpData &data) const {
    NodeInfo n;
    n.node_type = s_.node_type;
    n.num_ports = s_.num_ports();
    n.system_image_guid = s_.system_image_guid;
    n.node_guid = s_.node_guid;
    n.port_guid = s_.ports[s_.is_switch() ? 0 : 1].guid;
    n.partition_cap = static_cast<uint16_t>(s_.ports[s_.mgmt_port()].pkeys.size());
    n.device_id = s_.device_id;
    n.revision = s_.revision;
    n.local_port_num = s_.is_switch() ? in_port : 1;
    n.vendor_id = s_.vendor_id;
    data.fill(0);
    n.write(data);
    return mad_status::Ok;
}

uint16_t Sma::port_info(uint32_t mod, uint8_t in_port, SmpData &data, bool set) {
    // Bits 7:0 name the port; bit 31 is SMSupportsExtendedSpeeds (ignored).
    const int port = (mod & 0x7FFFFF00) != 0 ? -1 : port_for(mod & 0xFF, in_port);
    if (port < 0) {
        data.fill(0);
        return mad_status::InvalidField;
    }
    SmaPortState &p = s_.ports[static_cast<size_t>(port)];
    PortInfo &cur = p.info;
    const bool has_lid = !s_.is_switch() || port == 0; // switch external ports have none
    if (set) {
        const PortInfo want = PortInfo::read(data);
        // Validate everything first: a refused Set changes nothing.
        bool ok = true;
        const uint8_t st = want.port_state;
        if (st == port_state::Init || st > port_state::Active) {
            ok = false;
        } else if (st == port_state::Armed && cur.port_state != port_state::Init &&
                   cur.port_state != port_state::Armed) {
            ok = false;
        } else if (st == port_state::Active && cur.port_state != port_state::Armed &&
                   cur.port_state != port_state::Active) {
            ok = false;
        }
        // PortPhysicalState: NoChange, Polling or Disabled; the current
        // value is taken as no change (an SM that echoes a Get back).
        const uint8_t ps =
            want.phys_state == cur.phys_state ? phys_state::NoChange : want.phys_state;
        if (ps != phys_state::NoChange && ps != phys_state::Polling && ps != phys_state::Disabled) {
            ok = false;
        }
        if (want.neighbor_mtu != 0 &&
            (mtu_bytes(want.neighbor_mtu) == 0 || want.neighbor_mtu > cur.mtu_cap)) {
            ok = false;
        }
        if (want.operational_vls != 0 &&
            (vls_for_code(want.operational_vls) == 0 || want.operational_vls > cur.vl_cap)) {
            ok = false;
        }
        if (has_lid && want.lid >= kMulticastLidFirst && want.lid != 0) {
            ok = false; // a port's LID is unicast
        }
        if (!ok) {
            cur.write(data);
            return mad_status::InvalidField;
        }
        const auto bit = 1ull << static_cast<unsigned>(port);
        if (has_lid) {
            cur.m_key = want.m_key;
            cur.gid_prefix = want.gid_prefix;
            cur.lid = want.lid;
            cur.master_sm_lid = want.master_sm_lid;
            cur.m_key_lease_period = want.m_key_lease_period;
            cur.m_key_protect_bits = want.m_key_protect_bits;
            cur.lmc = want.lmc;
            cur.master_sm_sl = want.master_sm_sl;
            cur.subnet_timeout = want.subnet_timeout;
            if (want.client_reregister && !s_.is_switch()) {
                changes_.client_reregister = true;
            }
        }
        if (want.link_width_enabled == 0xFF) {
            cur.link_width_enabled = cur.link_width_supported;
        } else if (want.link_width_enabled != 0) {
            cur.link_width_enabled =
                static_cast<uint8_t>(want.link_width_enabled & cur.link_width_supported);
        }
        if (want.link_speed_enabled == 0xF) {
            cur.link_speed_enabled = cur.link_speed_supported;
        } else if (want.link_speed_enabled != 0) {
            cur.link_speed_enabled =
                static_cast<uint8_t>(want.link_speed_enabled & cur.link_speed_supported);
        }
        if (want.neighbor_mtu != 0) {
            cur.neighbor_mtu = want.neighbor_mtu;
        }
        if (want.operational_vls != 0) {
            cur.operational_vls = want.operational_vls;
        }
        cur.vl_high_limit = want.vl_high_limit;
        cur.vl_stall_count = want.vl_stall_count;
        cur.hoq_life = want.hoq_life;
        cur.partition_enforcement_inbound = want.partition_enforcement_inbound;
        cur.partition_enforcement_outbound = want.partition_enforcement_outbound;
        cur.filter_raw_inbound = want.filter_raw_inbound;
        cur.filter_raw_outbound = want.filter_raw_outbound;
        cur.local_phy_errors = want.local_phy_errors;
        cur.overrun_errors = want.overrun_errors;
        if (want.m_key_violations == 0) {
            cur.m_key_violations = 0;
        }
        changes_.port_config |= bit;
        if (st != port_state::NoChange && st != cur.port_state) {
            cur.port_state = st;
            changes_.port_state |= bit;
        }
        if (ps == phys_state::Disabled && cur.phys_state != phys_state::Disabled) {
            cur.phys_state = phys_state::Disabled;
            cur.port_state = port_state::Down;
            changes_.port_state |= bit;
        } else if (ps == phys_state::Polling && cur.phys_state == phys_state::Disabled) {
            cur.phys_state = phys_state::Polling;
            changes_.port_state |= bit;
        }
        if (st == port_state::Down && cur.phys_state == phys_state::LinkUp && port != 0) {
            // Down retrains the link: the owner sees the state change.
            cur.phys_state = phys_state::Polling;
        }
    }
    PortInfo reply = cur;
    reply.local_port_num = s_.is_switch() ? in_port : 1;
    if (s_.is_switch() && port != 0) {
        reply.lid = 0;
        reply.m_key = 0;
    }
    data.fill(0);
    reply.write(data);
    return mad_status::Ok;
}

uint16_t Sma::switch_info(SmpData &data, bool set) {
    SwitchInfo &w = s_.switch_info;
    if (set) {
        const SwitchInfo want = SwitchInfo::read(data);
        if (want.linear_fdb_top >= w.linear_fdb_cap || want.default_port > s_.num_ports() ||
            (want.multicast_fdb_top != 0 && want.multicast_fdb_top != 0xBFFF &&
             (want.multicast_fdb_top < kMulticastLidFirst ||
              want.multicast_fdb_top - kMulticastLidFirst >= w.multicast_fdb_cap))) {
            w.write(data);
            return mad_status::InvalidField;
        }
        w.linear_fdb_top = want.linear_fdb_top;
        w.default_port = want.default_port;
        w.default_mcast_primary_port = want.default_mcast_primary_port;
        w.default_mcast_not_primary_port = want.default_mcast_not_primary_port;
        w.life_time_value = want.life_time_value;
        if (want.port_state_change) {
            w.port_state_change = false; // writing 1 clears it
        }
        if (want.multicast_fdb_top != 0) {
            w.multicast_fdb_top = want.multicast_fdb_top;
        }
        changes_.switch_info = true;
    }
    data.fill(0);
    w.write(data);
    return mad_status::Ok;
}

uint16_t Sma::guid_info(uint32_t mod, uint8_t in_port, SmpData &data, bool set) {
    const int port = s_.is_switch() ? 0 : port_for(0, in_port);
    const SmaPortState &p = s_.ports[static_cast<size_t>(port)];
    const size_t cap = std::max<size_t>(p.info.guid_cap, 1);
    if (mod > (cap - 1) / kGuidsPerBlock) {
        data.fill(0);
        return mad_status::InvalidField;
    }
    // One GUID per port (GUIDCap 1): index 0 is the port GUID, read-only;
    // a Set is answered with the table as it is.
    (void)set;
    data.fill(0);
    if (mod == 0) {
        put64(data.data(), p.guid);
    }
    return mad_status::Ok;
}

uint16_t Sma::pkey_table(uint32_t mod, uint8_t in_port, SmpData &data, bool set) {
    const int port = port_for(s_.is_switch() ? mod >> 16 : 0, in_port);
    const uint32_t block = mod & 0xFFFF;
    if (port < 0) {
        data.fill(0);
        return mad_status::InvalidField;
    }
    std::vector<uint16_t> &t = s_.ports[static_cast<size_t>(port)].pkeys;
    const size_t first = static_cast<size_t>(block) * kPKeysPerBlock;
    if (first >= t.size()) {
        data.fill(0);
        return mad_status::InvalidField;
    }
    const size_t n = std::min(kPKeysPerBlock, t.size() - first);
    if (set) {
        for (size_t i = 0; i < n; ++i) {
            t[first + i] = get16(&data[2 * i]);
        }
        changes_.pkeys = true;
    }
    data.fill(0);
    for (size_t i = 0; i < n; ++i) {
        put16(&data[2 * i], t[first + i]);
    }
    return mad_status::Ok;
}

uint16_t Sma::sl2vl_table(uint32_t mod, uint8_t in_port, SmpData &data, bool set) {
    uint8_t *table = nullptr;
    if (s_.is_switch()) {
        const uint32_t in = (mod >> 8) & 0xFF;
        const uint32_t out = mod & 0xFF;
        const size_t n = s_.ports.size();
        if (in >= n || out >= n) {
            data.fill(0);
            return mad_status::InvalidField;
        }
        table = &s_.sl2vl[(in * n + out) * 16];
    } else {
        table = s_.ports[static_cast<size_t>(port_for(0, in_port))].sl2vl.data();
    }
    if (set) {
        for (size_t i = 0; i < 8; ++i) {
            table[2 * i] = static_cast<uint8_t>(data[i] >> 4);
            table[2 * i + 1] = static_cast<uint8_t>(data[i] & 0xF);
        }
        changes_.sl2vl = true;
    }
    data.fill(0);
    for (size_t i = 0; i < 8; ++i) {
        data[i] = static_cast<uint8_t>((table[2 * i] << 4) | (table[2 * i + 1] & 0xF));
    }
    return mad_status::Ok;
}

uint16_t Sma::vlarb_table(uint32_t mod, uint8_t in_port, SmpData &data, bool set) {
    const uint32_t block = mod >> 16;
    const int port = port_for(s_.is_switch() ? mod & 0xFFFF : 0, in_port);
    if (port < 0 || block < 1 || block > 4 || (s_.is_switch() && port == 0)) {
        data.fill(0);
        return mad_status::InvalidField;
    }
    SmaPortState &p = s_.ports[static_cast<size_t>(port)];
    const bool high = block >= 3;
    auto &t = high ? p.vlarb_high : p.vlarb_low;
    const size_t cap =
        std::min<size_t>(high ? p.info.vl_arb_high_cap : p.info.vl_arb_low_cap, kVlArbEntries);
    const size_t first = ((block - 1) % 2) * kVlArbEntriesPerBlock;
    if (first >= cap) {
        data.fill(0);
        return mad_status::InvalidField;
    }
    const size_t n = std::min(kVlArbEntriesPerBlock, cap - first);
    if (set) {
        for (size_t i = 0; i < n; ++i) {
            t[first + i] = {static_cast<uint8_t>(data[2 * i] & 0xF), data[2 * i + 1]};
        }
        changes_.vlarb = true;
    }
    data.fill(0);
    for (size_t i = 0; i < n; ++i) {
        data[2 * i] = t[first + i].vl;
        data[2 * i + 1] = t[first + i].weight;
    }
    return mad_status::Ok;
}

uint16_t Sma::lft_block(uint32_t mod, SmpData &data, bool set) {
    const size_t first = static_cast<size_t>(mod) * kLftEntriesPerBlock;
    if (mod > 0xFFFF || first >= s_.lft.size()) {
        data.fill(0);
        return mad_status::InvalidField;
    }
    const size_t n = std::min(kLftEntriesPerBlock, s_.lft.size() - first);
    if (set) {
        std::copy(data.begin(), data.begin() + static_cast<long>(n),
                  s_.lft.begin() + static_cast<long>(first));
        changes_.lft = true;
    }
    data.fill(0);
    std::copy(s_.lft.begin() + static_cast<long>(first),
              s_.lft.begin() + static_cast<long>(first + n), data.begin());
    return mad_status::Ok;
}

uint16_t Sma::mft_block(uint32_t mod, SmpData &data, bool set) {
    const size_t position = mod >> 28;
    const size_t block = mod & 0x1FF;
    const size_t positions = s_.mft_positions();
    const size_t first = block * kMftEntriesPerBlock;
    const size_t cap = s_.switch_info.multicast_fdb_cap;
    if (position >= positions || first >= cap || (mod & 0x0FFFFE00) != 0) {
        data.fill(0);
        return mad_status::InvalidField;
    }
    const size_t n = std::min(kMftEntriesPerBlock, cap - first);
    // Ports a mask may name at this position (port 0 .. num_ports).
    const size_t ports_here = std::min<size_t>(16, s_.num_ports() + 1 - position * 16);
    const auto valid = static_cast<uint16_t>(ports_here >= 16 ? 0xFFFF : (1u << ports_here) - 1);
    if (set) {
        for (size_t i = 0; i < n; ++i) {
            s_.mft[(first + i) * positions + position] = get16(&data[2 * i]) & valid;
        }
        changes_.mft = true;
    }
    data.fill(0);
    for (size_t i = 0; i < n; ++i) {
        put16(&data[2 * i], s_.mft[(first + i) * positions + position]);
    }
    return mad_status::Ok;
}

SmaResult Sma::perf(const Mad &in, Mad &out) {
    MadHeader h = MadHeader::read(in);
    out = in;
    std::span<uint8_t> d(out.data() + kPmaDataOffset, kMadBytes - kPmaDataOffset);
    uint16_t status = mad_status::Ok;
    const bool set = h.method == method::Set;
    if (h.base_version != 1 || h.class_version != 1) {
        status = mad_status::BadVersion;
    } else if (h.method != method::Get && !set) {
        status = mad_status::MethodUnsupported;
    } else if (h.attr_id == attr::ClassPortInfo) {
        if (set) {
            status = mad_status::MethodAttrUnsupported;
        } else {
            std::fill(d.begin(), d.end(), 0);
            ClassPortInfo c;
            c.capability_mask = pma_cap::ExtendedWidth;
            c.resp_time_value = 18;
            c.write(d);
        }
    } else if (h.attr_id == attr::PortCounters || h.attr_id == attr::PortCountersExtended) {
        const uint8_t sel = d[1];
        const int port = s_.is_switch() ? (sel <= s_.num_ports() ? sel : -1)
                                        : (sel == 0 || sel == 1 ? 1 : -1); // 0xFF (all) unsupported
        if (port < 0) {
            status = mad_status::InvalidField;
        } else {
            SmaPortState &p = s_.ports[static_cast<size_t>(port)];
            const uint16_t select = get16(&d[2]);
            if (h.attr_id == attr::PortCounters) {
                if (set) {
                    // CounterSelect bits 0-15: which counters to clear
                    // (the commonly used subset: errors and data/packets).
                    PortCounters &c = p.counters;
                    if ((select & 0x0001) != 0)
                        c.symbol_errors = 0;
                    if ((select & 0x0002) != 0)
                        c.link_error_recovery = 0;
                    if ((select & 0x0004) != 0)
                        c.link_downed = 0;
                    if ((select & 0x0008) != 0)
                        c.rcv_errors = 0;
                    if ((select & 0x0010) != 0)
                        c.rcv_remote_phys_errors = 0;
                    if ((select & 0x0020) != 0)
                        c.rcv_switch_relay_errors = 0;
                    if ((select & 0x0040) != 0)
                        c.xmit_discards = 0;
                    if ((select & 0x0080) != 0)
                        c.xmit_constraint_errors = 0;
                    if ((select & 0x0100) != 0)
                        c.rcv_constraint_errors = 0;
                    if ((select & 0x0200) != 0)
                        c.local_link_integrity_errors = 0;
                    if ((select & 0x0400) != 0)
                        c.excessive_buffer_overrun_errors = 0;
                    if ((select & 0x0800) != 0)
                        c.vl15_dropped = 0;
                    if ((select & 0x1000) != 0)
                        c.xmit_data = 0;
                    if ((select & 0x2000) != 0)
                        c.rcv_data = 0;
                    if ((select & 0x4000) != 0)
                        c.xmit_pkts = 0;
                    if ((select & 0x8000) != 0)
                        c.rcv_pkts = 0;
                    if ((d[18] & 0x01) != 0)
                        c.xmit_wait = 0;
                }
                PortCounters c = p.counters;
                c.port_select = sel;
                c.counter_select = select;
                c.write(d);
            } else {
                PortCountersExtended &c = p.counters_ext;
                if (set) {
                    if ((select & 0x01) != 0)
                        c.xmit_data = 0;
                    if ((select & 0x02) != 0)
                        c.rcv_data = 0;
                    if ((select & 0x04) != 0)
                        c.xmit_pkts = 0;
                    if ((select & 0x08) != 0)
                        c.rcv_pkts = 0;
                    if ((select & 0x10) != 0)
                        c.unicast_xmit_pkts = 0;
                    if ((select & 0x20) != 0)
                        c.unicast_rcv_pkts = 0;
                    if ((select & 0x40) != 0)
                        c.multicast_xmit_pkts = 0;
                    if ((select & 0x80) != 0)
                        c.multicast_rcv_pkts = 0;
                }
                PortCountersExtended r = c;
                r.port_select = sel;
                r.counter_select = select;
                r.write(d);
            }
        }
    } else {
        status = mad_status::MethodAttrUnsupported;
    }
    h.method = method::GetResp;
    h.status = status;
    h.write(out);
    return SmaResult::Reply;
}

void Sma::link_up(uint8_t port) {
    if (port >= s_.ports.size()) {
        return;
    }
    PortInfo &i = s_.ports[port].info;
    if (i.phys_state == phys_state::Disabled) {
        return; // the SM disabled it
    }
    i.phys_state = phys_state::LinkUp;
    i.port_state = port_state::Init;
    changes_.port_state |= 1ull << port;
    if (s_.is_switch() && port != 0) {
        s_.switch_info.port_state_change = true;
    }
}

void Sma::link_down(uint8_t port) {
    if (port >= s_.ports.size()) {
        return;
    }
    PortInfo &i = s_.ports[port].info;
    const bool was_up = i.phys_state == phys_state::LinkUp;
    if (i.phys_state != phys_state::Disabled) {
        i.phys_state = phys_state::Polling;
    }
    i.port_state = port_state::Down;
    if (was_up) {
        sat_add(s_.ports[port].counters.link_downed, 1, 0xFF);
    }
    changes_.port_state |= 1ull << port;
    if (s_.is_switch() && port != 0) {
        s_.switch_info.port_state_change = true;
    }
}

Smp Sma::make_trap(uint16_t number, uint8_t type, std::span<const uint8_t> details, uint64_t tid) {
    const PortInfo &mgmt = s_.ports[s_.mgmt_port()].info;
    Smp t;
    t.hdr.mgmt_class = mgmt_class::SubnLidRouted;
    t.hdr.method = method::Trap;
    t.hdr.tid = tid;
    t.hdr.attr_id = attr::Notice;
    t.m_key = mgmt.m_key;
    Notice n;
    n.is_generic = true;
    n.type = type;
    n.producer_type = s_.node_type;
    n.trap_number = number;
    n.issuer_lid = mgmt.lid;
    n.count = static_cast<uint16_t>(++trap_count_ & 0x7FFF);
    std::copy_n(details.begin(), std::min(details.size(), n.details.size()), n.details.begin());
    n.write(t.data);
    return t;
}

} // namespace ohca::ib
