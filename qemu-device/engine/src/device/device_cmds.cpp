// SPDX-License-Identifier: GPL-2.0-or-later
// The device's own commands (device_cmds.hpp).
#include "device/device_cmds.hpp"

#include "device/limits.hpp"
#include "device/wire_port.hpp"
#include "link/byte_order.hpp"
#include "objects/wq.hpp"
#include "transports/raw_eth.hpp"

#include <algorithm>
#include <cstddef>
#include <optional>

namespace ohca {

CmdResult DeviceCommands::cmd_query_device(const Command &cmd) {
    using L = DeviceLimits;
    ohca_query_device_out out{};
    out.fw_version = le(L::fw_version);
    out.hw_version = le(L::hw_version);
    out.node_guid = le(d_.cfg.node_guid);
    out.sys_image_guid = le(d_.cfg.sys_image_guid);
    out.max_mr_size = le(L::max_mr_size);
    out.page_size_cap = le(L::page_size_cap);
    out.vendor_id = le(L::vendor_id);
    out.vendor_part_id = le(L::vendor_part_id);
    out.max_qp = le(d_.cfg.max_qp);
    out.max_qp_wr = le(L::max_qp_wr);
    out.max_sge = le(L::max_sge);
    out.max_sge_rd = le(L::max_sge_rd);
    out.max_cq = le(L::max_cq);
    out.max_cqe = le(L::max_cqe);
    out.max_mr = le(L::max_mr);
    out.max_pd = le(L::max_pd);
    out.max_qp_rd_atom = le(L::max_qp_rd_atom);
    out.max_qp_init_rd_atom = le(L::max_qp_init_rd_atom);
    out.max_ah = le(L::max_ah);
    out.max_srq = le(L::max_srq);
    out.max_srq_wr = le(L::max_srq_wr);
    out.max_srq_sge = le(L::max_srq_sge);
    out.atomic_cap = le(L::atomic_cap);
    out.max_inline_data = le(L::max_inline_data);
    out.max_uar = le(L::max_uar);
    out.max_eq = le(L::max_eq);
    out.max_msg_size = le(L::max_msg_size);
    out.gid_table_len = le(L::gid_table_len);
    out.pkey_table_len = le(L::pkey_table_len);
    out.num_ports = le(L::num_ports);
    out.dev_caps = le(L::dev_caps);
    out.max_fast_reg_page_list_len = le(L::max_fast_reg_page_list_len);
    out.max_mw = le(L::max_mw);
    out.max_mcast_grp = le(L::max_mcast_grp);
    out.max_mcast_qp_attach = le(L::max_mcast_qp_attach);
    out.max_total_mcast_qp_attach = le(L::max_total_mcast_qp_attach);
    out.max_xrcd = le(L::max_xrcd);
    out.max_dm = le(L::max_dm);
    out.dm_chunk_size = le(uint32_t{OHCA_DM_CHUNK_SIZE});
    out.max_dm_size = le(L::max_dm_size);
    out.max_flow = le(L::max_flow);
    out.max_raw_frame = le(RawEth::max_frame(0));
    out.odp_caps = le(L::odp_caps);
    out.max_odp_faults = le(L::max_odp_faults);
    out.max_odp_chunks = le(L::max_odp_chunks);
    out.max_cq_mod_count = le(L::max_cq_mod_count);
    out.max_cq_mod_period = le(L::max_cq_mod_period_us);
    out.max_wq = le(WqLimits::max_wq);
    out.max_wq_wr = le(WqLimits::max_wq_wr);
    out.max_rwq_ind_tbl = le(WqLimits::max_ind_tbl);
    out.max_rwq_ind_tbl_size = le(WqLimits::max_ind_tbl_size);
    out.rss_fields = le(uint32_t{OHCA_RSS_ALL_FIELDS});
    // A driver that knows a shorter output gets only that part.
    return write_output(d_.host, cmd, &out, std::min<size_t>(cmd.out_len, sizeof(out)));
}

CmdResult DeviceCommands::cmd_query_port(const Command &cmd) {
    const auto in = cmd.input<ohca_query_port_in>();
    if (in.port != 1) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_query_port_in, port)};
    }
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_query_port_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    const PortState &port = d_.port.state();
    ohca_query_port_out out{};
    out.state = port.state();
    out.link_up = port.link_up ? 1 : 0;
    std::copy(port.mac.begin(), port.mac.end(), out.mac);
    out.max_mtu = le(uint32_t{OHCA_ETH_MAX_MTU});
    out.mtu = le(port.mtu);
    out.speed_mbps = le(port.speed_mbps);
    out.gid_table_len = le(DeviceLimits::gid_table_len);
    out.pkey_table_len = le(DeviceLimits::pkey_table_len);
    out.max_msg_size = le(DeviceLimits::max_msg_size);
    out.rx_frames = le(port.rx_frames);
    out.tx_frames = le(port.tx_frames);
    if (port.ib) {
        // No MAC and no Ethernet MTU: the IB part says what the port is.
        std::fill(std::begin(out.mac), std::end(out.mac), uint8_t{0});
        out.max_mtu = 0;
        out.mtu = 0;
        port.ib->fill_query(out);
    }
    // A driver that knows a shorter output gets only that part.
    return write_output(d_.host, cmd, &out, std::min<size_t>(cmd.out_len, sizeof(out)));
}

CmdResult DeviceCommands::cmd_set_port(const Command &cmd) {
    const auto in = cmd.input<ohca_set_port_in>();
    const uint32_t mask = le(in.mask);
    const uint32_t mtu = le(in.mtu);
    const uint32_t rx_mode = le(in.rx_mode);
    if (in.port != 1) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_set_port_in, port)};
    }
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_set_port_in, rsvd0), sizeof(in.rsvd0))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    if ((mask & ~uint32_t{OHCA_SET_PORT_MTU | OHCA_SET_PORT_RX_MODE}) != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_set_port_in, mask)};
    }
    if ((mask & OHCA_SET_PORT_MTU) != 0 && (mtu < OHCA_ETH_MIN_MTU || mtu > OHCA_ETH_MAX_MTU)) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_set_port_in, mtu)};
    }
    if ((mask & OHCA_SET_PORT_RX_MODE) != 0 &&
        (rx_mode & ~uint32_t{OHCA_RX_MODE_PROMISC | OHCA_RX_MODE_ALLMULTI}) != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_set_port_in, rx_mode)};
    }
    PortState &port = d_.port.state();
    if ((mask & OHCA_SET_PORT_MTU) != 0) {
        port.mtu = mtu;
    }
    if ((mask & OHCA_SET_PORT_RX_MODE) != 0) {
        port.rx_mode = rx_mode;
    }
    return {};
}

CmdResult DeviceCommands::cmd_alloc_uar(const Command &cmd) {
    const auto index = d_.uars.find_free();
    if (!index) {
        return {OHCA_STATUS_NO_RESOURCES, 0};
    }
    ohca_alloc_uar_out out{};
    out.uar_index = le(*index);
    if (CmdResult r = write_output(d_.host, cmd, &out, sizeof(out)); r.status != OHCA_STATUS_OK) {
        return r;
    }
    d_.uars.take(*index);
    return {};
}

CmdResult DeviceCommands::cmd_dealloc_uar(const Command &cmd) {
    const auto in = cmd.input<ohca_dealloc_uar_in>();
    const uint32_t index = le(in.uar_index);
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_dealloc_uar_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    if (index < OHCA_NUM_DB_PAGES && d_.uar_refs[index] != 0) {
        return {OHCA_STATUS_BAD_STATE, index}; // CQs or QPs ring on it
    }
    if (!d_.uars.release(index)) {
        return {OHCA_STATUS_BAD_HANDLE, index};
    }
    return {};
}

CmdResult DeviceCommands::cmd_add_gid(const Command &cmd) {
    const auto in = cmd.input<ohca_add_gid_in>();
    const uint32_t index = le(in.index);
    const uint16_t vlan = le(in.vlan_id);
    GidEntry entry;
    std::copy(std::begin(in.gid), std::end(in.gid), entry.gid.begin());
    std::copy(std::begin(in.mac), std::end(in.mac), entry.mac.begin());
    entry.type = in.type;
    entry.vlan_id = vlan;

    if (index >= kGidTableLen) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_add_gid_in, index)};
    }
    if (in.port != 1) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_add_gid_in, port)};
    }
    if (in.type != OHCA_GID_TYPE_ROCE_V2_IPV4 && in.type != OHCA_GID_TYPE_ROCE_V2_IPV6) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_add_gid_in, type)};
    }
    // An IPv4 GID is ::ffff:a.b.c.d; an IPv6 GID is anything else but the
    // unspecified address.
    const bool mapped = gid_is_ipv4_mapped(entry.gid);
    const bool zero =
        std::all_of(entry.gid.begin(), entry.gid.end(), [](uint8_t b) { return b == 0; });
    if ((in.type == OHCA_GID_TYPE_ROCE_V2_IPV4) != mapped || zero) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_add_gid_in, gid)};
    }
    // The source MAC must be unicast and not zero.
    const bool mac_zero =
        std::all_of(entry.mac.begin(), entry.mac.end(), [](uint8_t b) { return b == 0; });
    if ((entry.mac[0] & 1) != 0 || mac_zero) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_add_gid_in, mac)};
    }
    if (vlan != kNoVlan && vlan > 4095) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_add_gid_in, vlan_id)};
    }
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_add_gid_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    d_.port.gids().set(index, entry);
    return {};
}

CmdResult DeviceCommands::cmd_del_gid(const Command &cmd) {
    const auto in = cmd.input<ohca_del_gid_in>();
    const uint32_t index = le(in.index);
    if (index >= kGidTableLen) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_del_gid_in, index)};
    }
    if (in.port != 1) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_del_gid_in, port)};
    }
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_del_gid_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    if (!d_.port.gids().clear(index)) {
        return {OHCA_STATUS_BAD_HANDLE, index};
    }
    return {};
}

CmdResult DeviceCommands::cmd_query_stats(const Command &cmd) {
    ohca_query_stats_out out{};
    out.eth_rx_frames = le(d_.stats.eth_rx_frames);
    out.eth_rx_bytes = le(d_.stats.eth_rx_bytes);
    out.eth_rx_dropped_no_desc = le(d_.stats.eth_rx_dropped_no_desc);
    out.eth_rx_dropped_filter = le(d_.stats.eth_rx_dropped_filter);
    out.eth_rx_dropped_too_long = le(d_.stats.eth_rx_dropped_too_long);
    out.eth_tx_frames = le(d_.stats.eth_tx_frames);
    out.eth_tx_bytes = le(d_.stats.eth_tx_bytes);
    out.eth_tx_errors = le(d_.stats.eth_tx_errors);
    out.roce_rx_frames = le(d_.stats.roce_rx_frames);
    out.roce_rx_dropped = le(d_.stats.roce_rx_dropped);
    out.cmd_completed = le(d_.stats.cmd_completed);
    out.cmd_failed = le(d_.stats.cmd_failed);
    out.reg_errors = le(d_.stats.reg_errors);
    out.db_errors = le(d_.stats.db_errors);
    out.eth_rx_errors = le(d_.stats.eth_rx_errors);
    const RoceCounters &r = d_.port.roce_counters();
    out.roce_tx_pkts = le(r.tx_packets + r.loopback_packets);
    out.roce_rx_pkts = le(r.rx_packets);
    out.rc_retrans_pkts = le(r.retrans_pkts);
    out.rc_retrans_events = le(r.retransmits);
    out.rc_local_ack_timeouts = le(r.timeouts);
    out.rc_seq_naks_sent = le(r.seq_naks_sent);
    out.rc_seq_naks_rcvd = le(r.seq_naks_rcvd);
    out.rc_rnr_naks_sent = le(r.rnr_naks_sent);
    out.rc_rnr_naks_rcvd = le(r.rnr_naks_rcvd);
    out.rc_dup_requests = le(r.rx_duplicates);
    out.rc_out_of_seq_dropped = le(r.rx_out_of_seq);
    out.rc_stale_responses = le(r.stale_responses);
    out.rc_retry_exceeded = le(r.retry_exceeded);
    out.rc_rnr_retry_exceeded = le(r.rnr_retry_exceeded);
    out.rc_error_naks_sent = le(r.error_naks_sent);
    out.rc_error_naks_rcvd = le(r.error_naks_rcvd);
    out.roce_icrc_errors = le(r.rx_bad_icrc);
    out.roce_bad_header = le(r.rx_malformed);
    out.roce_bad_opcode = le(r.rx_bad_opcode);
    out.roce_bad_qpn = le(r.rx_no_qp);
    out.ud_rx_no_wqe = le(r.ud_rx_no_wqe);
    out.ud_rx_bad_qkey = le(r.ud_rx_bad_qkey);
    out.raw_tx_frames = le(d_.raw.counters().tx_frames);
    out.raw_rx_frames = le(d_.raw.counters().rx_frames);
    out.raw_rx_dropped = le(d_.raw.counters().rx_dropped);
    out.eq0_events_held = le(d_.stats.eq0_events_held);
    out.eq0_events_merged = le(d_.stats.eq0_events_merged);
    out.eq0_events_dropped = le(d_.stats.eq0_events_dropped + d_.stats.peer_events_dropped);
    out.rc_spurious_timeouts = le(r.spurious_timeouts);
    const dcqcn::Counters &cc = d_.port.cc_counters();
    out.np_ecn_marked_roce_packets = le(cc.np_ecn_marked_roce_packets);
    out.np_cnp_sent = le(cc.np_cnp_sent);
    out.rp_cnp_handled = le(cc.rp_cnp_handled);
    out.rp_cnp_ignored = le(cc.rp_cnp_ignored);
    out.mcast_rx_pkts = le(r.mcast_rx_packets);
    out.mcast_rx_no_group = le(r.mcast_rx_no_group);
    out.rx_backlog_dropped = le(d_.stats.rx_backlog_dropped);
    out.rc_tail_probes = le(r.tail_probes);
    out.rc_timeouts_full = le(r.timeouts_full);
    out.rc_timeouts_no_rtt = le(r.timeouts_no_rtt);
    out.rc_timeouts_after_probe = le(r.timeouts_after_probe);
    out.rc_timeouts_read = le(r.timeouts_read);
    out.rc_credit_timeouts = le(r.credit_timeouts);
    out.rc_credit_probes = le(r.credit_probes);
    out.rc_timeouts_frto = le(r.timeouts_frto);
    out.rc_timeouts_recovery = le(r.timeouts_recovery);
    out.rc_timeouts_goback = le(r.timeouts_goback);
    out.rc_timeouts_read_newest = le(r.timeouts_read_newest);
    if (const std::optional<IbPort> &ib = d_.port.state().ib) {
        const IbPortCounters &c = ib->counters();
        out.ib_rx_bad_dlid = le(c.bad_dlid);
        out.ib_rx_vl15_dropped = le(c.vl15_dropped);
        out.ib_rx_pkey_dropped = le(c.pkey_violations + c.mcast_pkey_skipped);
        out.ib_rx_credit_overrun = le(c.credit_overrun);
        out.ib_rx_port_not_ready = le(c.not_ready);
    }
    // A driver that knows only the rev 1.0 part gets only that part.
    return write_output(d_.host, cmd, &out, std::min<size_t>(cmd.out_len, sizeof(out)));
}

// Reads, or range-checks and writes, one DCQCN parameter; the value after
// the command goes back. A failed set changes nothing.
CmdResult DeviceCommands::cmd_cc_param(const Command &cmd) {
    using In = ohca_cc_param_in;
    const auto in = cmd.input<In>();
    if (d_.port.state().ib) {
        return {OHCA_STATUS_BAD_STATE, 0}; // DCQCN is RoCE's
    }
    const uint32_t param = le(in.param);
    const uint32_t op = le(in.op);
    if (param >= OHCA_CC_PARAM_MAX) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, param)};
    }
    if (op != OHCA_CC_PARAM_GET && op != OHCA_CC_PARAM_SET) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, op)};
    }
    if (in.rsvd != 0) {
        return {OHCA_STATUS_RESERVED_NONZERO, offsetof(In, rsvd)};
    }
    dcqcn::Params &params = d_.port.cc_params();
    dcqcn::Params next = params;
    if (op == OHCA_CC_PARAM_SET && !next.set(param, le(in.value))) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, value)};
    }
    ohca_cc_param_out out{};
    out.value = le(next[param]);
    const CmdResult r = write_output(d_.host, cmd, &out, sizeof(out));
    if (r.status == OHCA_STATUS_OK) {
        params = next; // committed once the output is written
    }
    return r;
}

// One MAD to an InfiniBand port's management agents (fabric/ib's SMA and
// PMA, through IbPort); what a Set changed goes to the driver as a port
// change event.
CmdResult DeviceCommands::cmd_mad_ifc(const Command &cmd) {
    using In = ohca_mad_ifc_in;
    const auto in = cmd.input<In>();
    std::optional<IbPort> &ib = d_.port.state().ib;
    if (!ib) {
        return {OHCA_STATUS_BAD_STATE, 0}; // no agents on an Ethernet port
    }
    if (in.port != 1) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, port)};
    }
    if ((in.flags & ~(OHCA_MAD_IFC_IGNORE_MKEY | OHCA_MAD_IFC_NET)) != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, flags)};
    }
    if (auto off = nonzero_at(cmd.in, offsetof(In, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    ib::Mad mad{};
    ib::Mad reply{};
    std::copy(std::begin(in.mad), std::end(in.mad), mad.begin());
    // Work on a copy: nothing changes unless the output reaches the driver.
    IbPort next = *ib;
    uint32_t changed = 0;
    ohca_mad_ifc_out out{};
    const uint16_t slid = (in.flags & OHCA_MAD_IFC_NET) != 0 ? le(in.slid) : 0;
    const auto mkey =
        (in.flags & OHCA_MAD_IFC_IGNORE_MKEY) != 0 ? ib::Sma::MKey::Skip : ib::Sma::MKey::Check;
    out.result = le(next.process_mad(mad, reply, changed, slid, mkey));
    std::copy(reply.begin(), reply.end(), std::begin(out.mad));
    if (CmdResult r = write_output(d_.host, cmd, &out, sizeof(out)); r.status != OHCA_STATUS_OK) {
        return r;
    }
    *ib = next;
    d_.port.state().report_change(d_.events, changed);
    return {};
}

// The host's CapabilityMask bits to an InfiniBand port's SMA; a change the
// SM must hear of raises trap 144, which the run's end sends.
CmdResult DeviceCommands::cmd_set_port_cap(const Command &cmd) {
    using In = ohca_set_port_cap_in;
    const auto in = cmd.input<In>();
    std::optional<IbPort> &ib = d_.port.state().ib;
    if (!ib) {
        return {OHCA_STATUS_BAD_STATE, 0};
    }
    if (in.port != 1) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, port)};
    }
    if (auto off = nonzero_at(cmd.in, offsetof(In, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    const uint32_t caps = le(in.host_caps);
    if ((caps & ~uint32_t{OHCA_PORT_CAP_HOST_MASK}) != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, host_caps)};
    }
    if (ib->set_host_caps(caps)) {
        d_.host.schedule();
    }
    return {};
}

// ---- pause and PFC (section 22) --------------------------------------------------

CmdResult DeviceCommands::cmd_query_pfc(const Command &cmd) {
    const auto in = cmd.input<ohca_query_pfc_in>();
    if (in.port != 1) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_query_pfc_in, port)};
    }
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_query_pfc_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    if (d_.port.state().ib) {
        return {OHCA_STATUS_BAD_STATE, 0}; // no Ethernet below an InfiniBand port
    }
    const Pfc &pfc = d_.port.pfc();
    const PfcCounters &c = pfc.counters();
    ohca_query_pfc_out out{};
    out.cfg = pfc.config();
    out.cfg.speed_mbps = le(pfc.config().speed_mbps);
    for (size_t i = 0; i < Pfc::kPrios; ++i) {
        out.rx_pfc[i] = le(c.rx_pfc[i]);
        out.tx_pfc[i] = le(c.tx_pfc[i]);
    }
    out.rx_pause = le(c.rx_pause);
    out.tx_pause = le(c.tx_pause);
    out.rx_ignored = le(c.rx_ignored);
    out.rx_storm = le(c.rx_storm);
    out.tx_held = le(c.tx_held);
    out.tx_dropped = le(c.tx_dropped);
    out.paused = pfc.paused_mask();
    out.xoff = pfc.xoff_mask();
    return write_output(d_.host, cmd, &out, sizeof(out));
}

CmdResult DeviceCommands::cmd_set_pfc(const Command &cmd) {
    const auto in = cmd.input<ohca_set_pfc_in>();
    if (in.port != 1) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_set_pfc_in, port)};
    }
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_set_pfc_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    constexpr size_t cfg_at = offsetof(ohca_set_pfc_in, cfg);
    ohca_pfc_config cfg = in.cfg;
    cfg.speed_mbps = le(in.cfg.speed_mbps);
    if (auto off = Pfc::bad_field(cfg)) {
        const auto at = static_cast<uint32_t>(cfg_at + *off);
        if (*off == offsetof(ohca_pfc_config, rsvd0)) {
            return {OHCA_STATUS_RESERVED_NONZERO, at};
        }
        return {OHCA_STATUS_BAD_FIELD, at};
    }
    if (d_.port.state().ib) {
        return {OHCA_STATUS_BAD_STATE, 0};
    }
    d_.port.pfc().configure(cfg);
    return {};
}

} // namespace ohca
