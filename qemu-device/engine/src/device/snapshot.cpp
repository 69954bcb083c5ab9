// SPDX-License-Identifier: GPL-2.0-or-later
// The device-side owners' parts of a saved engine (state/stream.hpp,
// docs/migration.md): EQ 0 and its waiting events, the Ethernet rings, the
// UARs, the GID table and the port (with an InfiniBand port's attributes
// and link credits). Every loaded field is checked as the command, SMP or
// register write that set it would have checked it.
#include "device/async_events.hpp"
#include "device/eth.hpp"
#include "device/event_queue.hpp"
#include "device/gid_table.hpp"
#include "device/ib_flow.hpp"
#include "device/ib_port.hpp"
#include "device/ib_traps.hpp"
#include "device/limits.hpp"
#include "device/uar_table.hpp"
#include "device/wire_port.hpp"

#include "state/stream.hpp"

#include <ohca/ohca_regs.h>

namespace ohca {

void EventQueue::save(state::Writer &w) const {
    w.u64(base_);
    w.u8(static_cast<uint8_t>(log_size_));
    w.u32(pi_);
    w.u32(ci_);
    w.boolean(armed_);
}

void EventQueue::load(state::Reader &r) {
    const uint64_t base = r.u64();
    const unsigned int log = r.u8();
    const uint32_t pi = r.u32();
    const uint32_t ci = r.u32();
    const bool armed = r.boolean();
    if (!r.ok()) {
        return;
    }
    if (log != 0 && (log < OHCA_EQ_LOG_MIN || log > OHCA_EQ_LOG_MAX || base == 0 ||
                     base % sizeof(ohca_eqe) != 0)) {
        r.fail("event queue: bad base or size");
        return;
    }
    if (pi - ci > (log != 0 ? 1u << log : 0)) {
        r.fail("event queue: consumer beyond the producer");
        return;
    }
    base_ = base;
    log_size_ = log;
    pi_ = pi;
    ci_ = ci;
    armed_ = armed;
}

void EthRing::save(state::Writer &w) const {
    w.u64(base_);
    w.u8(static_cast<uint8_t>(log_size_));
    w.u16(pi_);
    w.u16(ci_);
    w.boolean(broken_);
}

void EthRing::load(state::Reader &r) {
    const uint64_t base = r.u64();
    const unsigned int log = r.u8();
    const uint16_t pi = r.u16();
    const uint16_t ci = r.u16();
    const bool broken = r.boolean();
    if (!r.ok()) {
        return;
    }
    if (log != 0 && (log < OHCA_ETH_RING_LOG_MIN || log > OHCA_ETH_RING_LOG_MAX || base == 0 ||
                     base % sizeof(ohca_eth_desc) != 0)) {
        r.fail("Ethernet ring: bad base or size");
        return;
    }
    if (static_cast<uint16_t>(pi - ci) > (log != 0 ? 1u << log : 0)) {
        r.fail("Ethernet ring: indices more than a ring apart");
        return;
    }
    base_ = base;
    log_size_ = log;
    pi_ = pi;
    ci_ = ci;
    broken_ = broken;
}

void EthRings::save(state::Writer &w) const {
    tx_ring_.save(w);
    rx_ring_.save(w);
    w.u32(irq_mask_);
    w.boolean(irq_pending_);
}

void EthRings::load(state::Reader &r) {
    tx_ring_.load(r);
    rx_ring_.load(r);
    const uint32_t mask = r.u32();
    const bool pending = r.boolean();
    if (r.ok() && mask > 1) {
        r.fail("Ethernet interrupt mask: bad value");
        return;
    }
    irq_mask_ = mask;
    irq_pending_ = pending;
}

void UarTable::save(state::Writer &w) const {
    for (uint32_t i = 0; i < OHCA_NUM_DB_PAGES; ++i) {
        w.boolean(used_[i]);
    }
}

void UarTable::load(state::Reader &r) {
    used_.reset();
    for (uint32_t i = 0; i < OHCA_NUM_DB_PAGES; ++i) {
        if (r.boolean()) {
            if (i == 0) {
                r.fail("UAR 0 is the kernel's, never allocated");
                return;
            }
            used_.set(i);
        }
    }
}

void GidTable::save(state::Writer &w) const {
    for (const auto &e : entries_) {
        w.boolean(e.has_value());
        if (e) {
            w.array(e->gid);
            w.u8(e->type);
            w.array(e->mac);
            w.u16(e->vlan_id);
        }
    }
}

void GidTable::load(state::Reader &r) {
    reset();
    for (uint32_t i = 0; i < kGidTableLen && r.ok(); ++i) {
        if (!r.boolean()) {
            continue;
        }
        GidEntry e;
        r.array(e.gid);
        e.type = r.u8();
        r.array(e.mac);
        e.vlan_id = r.u16();
        if (r.ok() && e.type != OHCA_GID_TYPE_ROCE_V2_IPV4 &&
            e.type != OHCA_GID_TYPE_ROCE_V2_IPV6) {
            r.fail("GID table: bad GID type");
        }
        if (r.ok() && e.vlan_id != kNoVlan && e.vlan_id > 4095) {
            r.fail("GID table: bad VLAN");
        }
        if (r.ok()) {
            set(i, e);
        }
    }
}

void AsyncEvents::save(state::Writer &w) const {
    eq0_.save(w);
    w.u32(static_cast<uint32_t>(held_.size()));
    for (const HeldRef &h : held_) {
        w.u8(static_cast<uint8_t>(h.kind));
        w.u32(h.id);
    }
    w.u16(held_port_state_);
    w.u32(held_port_change_);
    w.boolean(held_cmd_valid_);
    w.bytes({reinterpret_cast<const uint8_t *>(&held_cmd_), sizeof(held_cmd_)});
}

void AsyncEvents::load(state::Reader &r) {
    reset();
    eq0_.load(r);
    // Each object waits at most once: every QP, CQ and SRQ, the port and
    // a command (async_events.hpp).
    constexpr uint32_t kMaxHeld =
        OHCA_ENGINE_MAX_QP + 2 + DeviceLimits::max_cq + DeviceLimits::max_srq + 2;
    const uint32_t n = r.count(kMaxHeld, 5, "events waiting for EQ 0");
    for (uint32_t i = 0; i < n && r.ok(); ++i) {
        const uint8_t kind = r.u8();
        const uint32_t id = r.u32();
        if (r.ok() && kind > static_cast<uint8_t>(HeldKind::Cmd)) {
            r.fail("events waiting for EQ 0: bad kind");
            return;
        }
        // An object that is gone or holds no event is skipped when its
        // turn comes (take_held), as for one destroyed while it waited.
        held_.push_back({static_cast<HeldKind>(kind), id});
    }
    held_port_state_ = r.u16();
    held_port_change_ = r.u32();
    held_cmd_valid_ = r.boolean();
    r.bytes({reinterpret_cast<uint8_t *>(&held_cmd_), sizeof(held_cmd_)});
    if (!r.ok()) {
        reset();
    }
}

void Pfc::save(state::Writer &w) const {
    w.u8(cfg_.pfc_en);
    w.u8(cfg_.pause);
    w.u8(cfg_.trust);
    w.u32(cfg_.speed_mbps);
    state::save_counters(w, counters_);
    for (size_t i = 0; i < kPrios; ++i) {
        w.time(until_[i]);
        w.time(since_[i]);
        w.boolean(storm_counted_[i]);
    }
    w.u8(paused_mask_);
    w.u8(eth_hold_);
    w.u8(xoff_);
    w.boolean(xoff_global_);
    w.time(refresh_ns_);
}

void Pfc::load(state::Reader &r) {
    reset();
    ohca_pfc_config cfg{};
    cfg.pfc_en = r.u8();
    cfg.pause = r.u8();
    cfg.trust = r.u8();
    cfg.speed_mbps = r.u32();
    if (r.ok() && bad_field(cfg)) {
        r.fail("PFC: a setting SET_PFC refuses");
    }
    cfg_ = cfg;
    state::load_counters(r, counters_, "PFC counters");
    // No pause or refresh lasts longer than the largest pause a frame can
    // ask for at this speed, as receive() and update_xoff() set them.
    const uint64_t now = d_.host.now_ns();
    const uint64_t longest = now + quanta_ns(kXoffQuanta);
    for (size_t i = 0; i < kPrios && r.ok(); ++i) {
        until_[i] = r.time();
        since_[i] = r.time();
        storm_counted_[i] = r.boolean();
        if (r.ok() && (until_[i] > longest || since_[i] > now)) {
            r.fail("PFC: a pause beyond what a frame can ask for");
        }
    }
    paused_mask_ = r.u8();
    eth_hold_ = r.u8();
    xoff_ = r.u8();
    xoff_global_ = r.boolean();
    refresh_ns_ = r.time();
    if (r.ok() && refresh_ns_ > longest) {
        r.fail("PFC: an XOFF refresh beyond its pause");
    }
    if (!r.ok()) {
        reset();
    }
}

void IbFlow::save(state::Writer &w) const {
    w.u8(credits_.vls());
    for (uint8_t vl = 0; vl < credits_.vls(); ++vl) {
        const ib::LinkCredits::VlCounters c = credits_.counters(vl);
        w.u16(c.fctbs);
        w.u16(c.fccl);
        w.boolean(c.heard);
        w.u16(c.abr);
    }
}

void IbFlow::load(state::Reader &r, uint64_t now_ns) {
    credits_.reset();
    clear_held();
    returned_ = {};
    next_fcp_ns_ = now_ns; // the first run sends every VL's FCP
    if (r.u8() != credits_.vls() && r.ok()) {
        r.fail("IB link: another number of data VLs");
    }
    for (uint8_t vl = 0; vl < credits_.vls() && r.ok(); ++vl) {
        ib::LinkCredits::VlCounters c;
        c.fctbs = r.u16();
        c.fccl = r.u16();
        c.heard = r.boolean();
        c.abr = r.u16();
        if (r.ok() && !credits_.restore(vl, c)) {
            r.fail("IB link: a credit counter beyond 12 bits");
        }
    }
    if (!r.ok()) {
        credits_.reset();
    }
}

namespace {

// The CapabilityMask bits the host sets (SET_PORT_CAP), and IsSMdisabled,
// which a stream of an engine before 2026-12-07 has while IsSM is clear
// (the next SET_PORT_CAP clears it).
constexpr uint32_t kHostCapBits = OHCA_PORT_CAP_HOST_MASK | ib::port_cap::IsSmDisabled;

// What the SM (SubnSet(PortInfo)), the host (SET_PORT_CAP), the link and
// the port's own counting change in PortInfo; everything else is the
// board's, as reset() made it.
void copy_settable(ib::PortInfo &to, const ib::PortInfo &from) {
    to.capability_mask =
        (to.capability_mask & ~kHostCapBits) | (from.capability_mask & kHostCapBits);
    to.m_key = from.m_key;
    to.gid_prefix = from.gid_prefix;
    to.lid = from.lid;
    to.master_sm_lid = from.master_sm_lid;
    to.m_key_lease_period = from.m_key_lease_period;
    to.m_key_protect_bits = from.m_key_protect_bits;
    to.lmc = from.lmc;
    to.master_sm_sl = from.master_sm_sl;
    to.subnet_timeout = from.subnet_timeout;
    to.link_width_enabled = from.link_width_enabled;
    to.link_speed_enabled = from.link_speed_enabled;
    to.neighbor_mtu = from.neighbor_mtu;
    to.operational_vls = from.operational_vls;
    to.vl_high_limit = from.vl_high_limit;
    to.vl_stall_count = from.vl_stall_count;
    to.hoq_life = from.hoq_life;
    to.partition_enforcement_inbound = from.partition_enforcement_inbound;
    to.partition_enforcement_outbound = from.partition_enforcement_outbound;
    to.filter_raw_inbound = from.filter_raw_inbound;
    to.filter_raw_outbound = from.filter_raw_outbound;
    to.local_phy_errors = from.local_phy_errors;
    to.overrun_errors = from.overrun_errors;
    to.m_key_violations = from.m_key_violations;
    to.p_key_violations = from.p_key_violations;
    to.q_key_violations = from.q_key_violations;
    to.port_state = from.port_state;
    to.phys_state = from.phys_state;
}

// Why a loaded PortInfo could not have come from this board, its SM and
// its link ('link_up'); nullptr if it could.
const char *port_info_refused(const ib::PortInfo &got, const ib::PortInfo &board, bool link_up) {
    ib::PortInfo expect = board;
    copy_settable(expect, got);
    std::array<uint8_t, ib::kSmpDataBytes> a{};
    std::array<uint8_t, ib::kSmpDataBytes> b{};
    expect.write(a);
    got.write(b);
    if (a != b) {
        return "an attribute the board fixes differs";
    }
    if ((got.capability_mask & ib::port_cap::IsSm) != 0 &&
        (got.capability_mask & ib::port_cap::IsSmDisabled) != 0) {
        return "IsSM and IsSMdisabled together";
    }
    const bool up = got.phys_state == ib::phys_state::LinkUp;
    if (got.port_state < ib::port_state::Down || got.port_state > ib::port_state::Active ||
        (got.phys_state != ib::phys_state::Polling && got.phys_state != ib::phys_state::Disabled &&
         !up) ||
        (up && !link_up) || (got.port_state != ib::port_state::Down && !up)) {
        return "a port state its link cannot be in";
    }
    if (got.lid >= ib::kMulticastLidFirst || ib::mtu_bytes(got.neighbor_mtu) == 0 ||
        got.neighbor_mtu > board.mtu_cap || ib::vls_for_code(got.operational_vls) == 0 ||
        got.operational_vls > board.vl_cap || got.link_width_enabled == 0 ||
        (got.link_width_enabled & ~board.link_width_supported) != 0 ||
        got.link_speed_enabled == 0 ||
        (got.link_speed_enabled & ~board.link_speed_supported) != 0) {
        return "a value the SM cannot set";
    }
    return nullptr;
}

void save_vlarb(state::Writer &w, const std::array<ib::VlArbEntry, ib::kVlArbEntries> &t) {
    for (const ib::VlArbEntry &e : t) {
        w.u8(e.vl);
        w.u8(e.weight);
    }
}

void load_vlarb(state::Reader &r, std::array<ib::VlArbEntry, ib::kVlArbEntries> &t) {
    for (ib::VlArbEntry &e : t) {
        e.vl = r.u8();
        e.weight = r.u8();
        if (r.ok() && e.vl > ib::kVl15) {
            r.fail("IB port: a VL arbitration entry beyond VL15");
        }
    }
}

// The PMA's counters as their attributes lay them out (port_select and
// counter_select included, so the layout is the MAD's).
constexpr size_t kCountersBytes = 44;
constexpr size_t kCountersExtBytes = 72;

} // namespace

void IbTraps::save(state::Writer &w) const {
    w.u64(seq_);
    w.boolean(pending_.has_value());
    if (pending_) {
        ib::Mad m{};
        pending_->smp.write(m);
        w.array(m);
        w.u8(pending_->sends);
        w.time(pending_->next_ns);
    }
}

void IbTraps::load(state::Reader &r, uint64_t now_ns) {
    clear();
    seq_ = r.u64();
    if (!r.boolean()) {
        return;
    }
    ib::Mad m{};
    r.array(m);
    Pending p;
    p.smp = ib::Smp::read(m);
    p.sends = r.u8();
    p.next_ns = r.time();
    // What raise() and due() make: a Notice Trap with our TID, sent at
    // most kMaxSends times (a fresh one not yet), the next send no further
    // away than the longest SubnetTimeout (4.096 us << 31).
    const uint64_t longest = now_ns + (uint64_t{4096} << 31);
    if (r.ok() && (p.smp.hdr.method != ib::method::Trap || p.smp.hdr.attr_id != ib::attr::Notice ||
                   (p.smp.hdr.tid & ~kTidSeqMask) != kTidBase || p.sends > kMaxSends ||
                   (p.sends == 0) != (p.next_ns == 0) || p.next_ns > longest)) {
        r.fail("IB port: a pending trap no SMA could have raised");
    }
    if (r.ok()) {
        pending_ = p;
    }
}

void IbPort::save(state::Writer &w) const {
    const ib::SmaPortState &p = port();
    std::array<uint8_t, ib::kSmpDataBytes> info{};
    p.info.write(info);
    w.array(info);
    w.u32(static_cast<uint32_t>(p.pkeys.size()));
    for (const uint16_t k : p.pkeys) {
        w.u16(k);
    }
    w.array(p.sl2vl);
    save_vlarb(w, p.vlarb_low);
    save_vlarb(w, p.vlarb_high);
    std::array<uint8_t, kCountersBytes> c{};
    p.counters.write(c);
    w.array(c);
    std::array<uint8_t, kCountersExtBytes> x{};
    p.counters_ext.write(x);
    w.array(x);
    state::save_counters(w, own_);
    traps_.save(w);
}

void IbPort::load(state::Reader &r, bool link_up, uint64_t now_ns) {
    reset(link_up);
    const ib::PortInfo board = info();
    ib::SmaPortState p = port();
    std::array<uint8_t, ib::kSmpDataBytes> info_bytes{};
    r.array(info_bytes);
    p.info = ib::PortInfo::read(info_bytes);
    if (r.ok()) {
        if (const char *why = port_info_refused(p.info, board, link_up)) {
            r.fail(std::string("IB port: ") + why);
        }
    }
    if (r.u32() != p.pkeys.size() && r.ok()) {
        r.fail("IB port: another P_Key table size");
    }
    for (size_t i = 0; i < p.pkeys.size() && r.ok(); ++i) {
        p.pkeys[i] = r.u16();
    }
    r.array(p.sl2vl);
    for (const uint8_t vl : p.sl2vl) {
        if (r.ok() && vl > ib::kVl15) {
            r.fail("IB port: an SL mapped beyond VL15");
        }
    }
    load_vlarb(r, p.vlarb_low);
    load_vlarb(r, p.vlarb_high);
    std::array<uint8_t, kCountersBytes> c{};
    r.array(c);
    p.counters = ib::PortCounters::read(c);
    std::array<uint8_t, kCountersExtBytes> x{};
    r.array(x);
    p.counters_ext = ib::PortCountersExtended::read(x);
    IbPortCounters own;
    state::load_counters(r, own, "IB port counters");
    traps_.load(r, now_ns);
    if (!r.ok()) {
        reset(link_up);
        return;
    }
    port() = std::move(p);
    own_ = own;
}

void WirePort::save(state::Writer &w) const {
    w.boolean(state_.link_up);
    w.u32(state_.mtu);
    w.u32(state_.rx_mode);
    w.u64(state_.rx_frames);
    w.u64(state_.tx_frames);
    gids_.save(w);
    state::save_counters(w, roce_);
    for (unsigned int p = 0; p < OHCA_CC_PARAM_MAX; ++p) {
        w.u32(cc_params_[p]);
    }
    state::save_counters(w, cc_);
    pfc_.save(w);
    if (state_.ib) {
        state_.ib->save(w);
        ib_.save(w);
    }
}

void WirePort::load(state::Reader &r, uint16_t version) {
    reset();
    const bool link_up = r.boolean();
    const uint32_t mtu = r.u32();
    const uint32_t rx_mode = r.u32();
    const uint64_t rx_frames = r.u64();
    const uint64_t tx_frames = r.u64();
    if (r.ok() && (mtu < OHCA_ETH_MIN_MTU || mtu > OHCA_ETH_MAX_MTU ||
                   (rx_mode & ~uint32_t{OHCA_RX_MODE_PROMISC | OHCA_RX_MODE_ALLMULTI}) != 0)) {
        r.fail("port: bad MTU or receive mode");
    }
    gids_.load(r);
    state::load_counters(r, roce_, "RoCE counters");
    for (unsigned int p = 0; p < OHCA_CC_PARAM_MAX && r.ok(); ++p) {
        if (!cc_params_.set(p, r.u32()) && r.ok()) {
            r.fail("DCQCN parameter out of its range");
        }
    }
    state::load_counters(r, cc_, "DCQCN counters");
    // Version 1 had no PAUSE/PFC (saved only with them off), versions 1
    // and 2 no InfiniBand port (a save refused it).
    if (version >= 2) {
        pfc_.load(r);
    }
    if (state_.ib && version < 3 && r.ok()) {
        r.fail("port: saved without the InfiniBand port's state");
    }
    if (state_.ib && r.ok()) {
        state_.ib->load(r, link_up, host_.now_ns());
        ib_.load(r);
    }
    if (!r.ok()) {
        reset();
        return;
    }
    state_.link_up = link_up;
    state_.mtu = mtu;
    state_.rx_mode = rx_mode;
    state_.rx_frames = rx_frames;
    state_.tx_frames = tx_frames;
}

} // namespace ohca
