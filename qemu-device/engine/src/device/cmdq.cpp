// SPDX-License-Identifier: GPL-2.0-or-later
// The command queue and the command set (programming manual section 4).
//
// Order of checks for every entry:
//   1. opcode known                      BAD_OPCODE (syndrome: opcode)
//   2. entry rsvd0, rsvd1 zero           RESERVED_NONZERO (ENTRY | offset)
//   3. out_addr 0 when out_len is 0      BAD_FIELD (ENTRY | 24)
//   4. in_len, out_len <= MAILBOX_MAX    BAD_LEN (syndrome: MAILBOX_MAX)
//   5. input fetched (mailbox by DMA)    BAD_ADDR (syndrome 0)
//   6. in_len == input size              BAD_LEN (syndrome: input size)
//   7. out_len >= output size            BAD_LEN (syndrome: output size)
//   8. the command's own fields          BAD_FIELD / RESERVED_NONZERO /
//                                        BAD_HANDLE / BAD_STATE / ...
//   9. output written by DMA             BAD_ADDR (syndrome 1)
// A failed command changes no state: state is committed after step 9.
#include "device/device.hpp"

#include "device/command.hpp"
#include "link/byte_order.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

namespace ohca {

// The command set, indexed by opcode: the input and (minimum) output sizes
// the queue checks (steps 6 and 7), and the owner that runs the command.
// Opcodes without a row are BAD_OPCODE after the size checks.
#define OHCA_CMD(op, in, out, fn)                                                                  \
    t[op] = CmdSpec {                                                                              \
        in, out, false, [](Device &d, const Command &c) -> CmdResult { return fn; }                \
    }

const std::array<Device::CmdSpec, OHCA_CMD_MAX> Device::kCommands = [] {
    std::array<CmdSpec, OHCA_CMD_MAX> t{};
    constexpr size_t kCreateOut = sizeof(ohca_create_out);
    constexpr size_t kHandle = sizeof(ohca_handle_in);
    OHCA_CMD(OHCA_CMD_NOP, 0, 0, (void(d), void(c), CmdResult{}));
    // Grown compatibly: the ABI 1.3 part is the minimum.
    OHCA_CMD(OHCA_CMD_QUERY_DEVICE, 0, OHCA_QUERY_DEVICE_OUT_MIN_SIZE, d.cmd_query_device(c));
    // Grown compatibly: the ABI 1.4 part is the minimum.
    OHCA_CMD(OHCA_CMD_QUERY_PORT, sizeof(ohca_query_port_in), OHCA_QUERY_PORT_OUT_MIN_SIZE,
             d.cmd_query_port(c));
    OHCA_CMD(OHCA_CMD_SET_PORT, sizeof(ohca_set_port_in), 0, d.cmd_set_port(c));
    OHCA_CMD(OHCA_CMD_CREATE_ETH_RING, sizeof(ohca_create_eth_ring_in), 0,
             d.cmd_create_eth_ring(c));
    OHCA_CMD(OHCA_CMD_DESTROY_ETH_RING, sizeof(ohca_destroy_eth_ring_in), 0,
             d.cmd_destroy_eth_ring(c));
    OHCA_CMD(OHCA_CMD_ALLOC_UAR, 0, sizeof(ohca_alloc_uar_out), d.cmd_alloc_uar(c));
    OHCA_CMD(OHCA_CMD_DEALLOC_UAR, sizeof(ohca_dealloc_uar_in), 0, d.cmd_dealloc_uar(c));
    OHCA_CMD(OHCA_CMD_ADD_GID, sizeof(ohca_add_gid_in), 0, d.cmd_add_gid(c));
    OHCA_CMD(OHCA_CMD_DEL_GID, sizeof(ohca_del_gid_in), 0, d.cmd_del_gid(c));
    // Grown compatibly: the rev 1.0 part is the minimum.
    OHCA_CMD(OHCA_CMD_QUERY_STATS, 0, OHCA_QUERY_STATS_OUT_V1_SIZE, d.cmd_query_stats(c));
    OHCA_CMD(OHCA_CMD_CREATE_EQ, sizeof(ohca_create_eq_in), kCreateOut, d.cqs_.cmd_create_eq(c));
    OHCA_CMD(OHCA_CMD_DESTROY_EQ, kHandle, 0, d.cqs_.cmd_destroy_eq(c));
    OHCA_CMD(OHCA_CMD_CREATE_PD, 0, kCreateOut, d.pds_.cmd_create_pd(c));
    OHCA_CMD(OHCA_CMD_DESTROY_PD, kHandle, 0, d.pds_.cmd_destroy_pd(c));
    OHCA_CMD(OHCA_CMD_CREATE_MR, sizeof(ohca_create_mr_in), kCreateOut, d.keys_.execute(c));
    OHCA_CMD(OHCA_CMD_DESTROY_MR, kHandle, 0, d.keys_.execute(c));
    OHCA_CMD(OHCA_CMD_CREATE_CQ, sizeof(ohca_create_cq_in), kCreateOut, d.cqs_.cmd_create_cq(c));
    OHCA_CMD(OHCA_CMD_DESTROY_CQ, kHandle, 0, d.cqs_.cmd_destroy_cq(c));
    OHCA_CMD(OHCA_CMD_CREATE_QP, sizeof(ohca_create_qp_in), kCreateOut, d.qps_.cmd_create_qp(c));
    OHCA_CMD(OHCA_CMD_MODIFY_QP, sizeof(ohca_modify_qp_in), 0, d.qps_.cmd_modify_qp(c));
    OHCA_CMD(OHCA_CMD_QUERY_QP, kHandle, sizeof(ohca_qp_attr), d.qps_.cmd_query_qp(c));
    OHCA_CMD(OHCA_CMD_DESTROY_QP, kHandle, 0, d.qps_.cmd_destroy_qp(c));
    OHCA_CMD(OHCA_CMD_RESIZE_CQ, sizeof(ohca_resize_cq_in), sizeof(ohca_resize_cq_out),
             d.cqs_.cmd_resize_cq(c, d.qps_));
    OHCA_CMD(OHCA_CMD_REREG_MR, sizeof(ohca_rereg_mr_in), kCreateOut, d.keys_.execute(c));
    OHCA_CMD(OHCA_CMD_CREATE_SRQ, sizeof(ohca_create_srq_in), kCreateOut,
             d.srqs_.cmd_create_srq(c));
    OHCA_CMD(OHCA_CMD_MODIFY_SRQ, sizeof(ohca_modify_srq_in), 0, d.srqs_.cmd_modify_srq(c));
    OHCA_CMD(OHCA_CMD_QUERY_SRQ, kHandle, sizeof(ohca_query_srq_out), d.srqs_.cmd_query_srq(c));
    OHCA_CMD(OHCA_CMD_DESTROY_SRQ, kHandle, 0, d.srqs_.cmd_destroy_srq(c));
    OHCA_CMD(OHCA_CMD_ALLOC_MW, sizeof(ohca_alloc_mw_in), kCreateOut, d.keys_.execute(c));
    OHCA_CMD(OHCA_CMD_DEALLOC_MW, kHandle, 0, d.keys_.execute(c));
    OHCA_CMD(OHCA_CMD_ATTACH_MCAST, sizeof(ohca_mcast_in), 0, d.qps_.cmd_mcast(c, true));
    OHCA_CMD(OHCA_CMD_DETACH_MCAST, sizeof(ohca_mcast_in), 0, d.qps_.cmd_mcast(c, false));
    OHCA_CMD(OHCA_CMD_ALLOC_XRCD, 0, kCreateOut, d.pds_.cmd_alloc_xrcd(c));
    OHCA_CMD(OHCA_CMD_DEALLOC_XRCD, kHandle, 0, d.pds_.cmd_dealloc_xrcd(c));
    OHCA_CMD(OHCA_CMD_ALLOC_DM, sizeof(ohca_alloc_dm_in), sizeof(ohca_alloc_dm_out),
             d.keys_.execute(c));
    OHCA_CMD(OHCA_CMD_FREE_DM, kHandle, 0, d.keys_.execute(c));
    OHCA_CMD(OHCA_CMD_REG_DM_MR, sizeof(ohca_reg_dm_mr_in), kCreateOut, d.keys_.execute(c));
    OHCA_CMD(OHCA_CMD_CREATE_FLOW, sizeof(ohca_create_flow_in), kCreateOut,
             d.raw_.flows().cmd_create_flow(c, d.host_, d.qps_));
    OHCA_CMD(OHCA_CMD_DESTROY_FLOW, kHandle, 0, d.raw_.flows().cmd_destroy_flow(c, d.qps_));
    // And its page entries: cmd_odp_map checks in_len.
    OHCA_CMD(OHCA_CMD_ODP_MAP, sizeof(ohca_odp_map_in), 0, d.keys_.execute(c));
    t[OHCA_CMD_ODP_MAP].in_at_least = true;
    OHCA_CMD(OHCA_CMD_ODP_UNMAP, sizeof(ohca_odp_unmap_in), 0, d.keys_.execute(c));
    OHCA_CMD(OHCA_CMD_MODIFY_CQ, sizeof(ohca_modify_cq_in), 0, d.cqs_.cmd_modify_cq(c));
    OHCA_CMD(OHCA_CMD_MAD_IFC, sizeof(ohca_mad_ifc_in), sizeof(ohca_mad_ifc_out), d.cmd_mad_ifc(c));
    return t;
}();

#undef OHCA_CMD

void Device::cmdq_doorbell(uint32_t value) {
    if (!running() || (value & ~OHCA_RING_INDEX_MASK) != 0) {
        ++stats_.reg_errors;
        return;
    }
    const auto pi = static_cast<uint16_t>(value);
    const auto ahead = static_cast<uint16_t>(pi - cmdq_ci_);
    if (ahead > cmdq_size_ || ahead < static_cast<uint16_t>(cmdq_pi_ - cmdq_ci_)) {
        ++stats_.reg_errors;
        return;
    }
    cmdq_pi_ = pi;
    if (ahead != 0) {
        host_.schedule();
    }
}

void Device::process_cmdq() {
    // At most one ring's worth per call; the rest in a later process().
    // Commands wait while EQ 0 is full or events wait for it, so that
    // every CMD_DONE is posted and none waits behind another (the
    // event-driven restart is drain_held_events()).
    for (uint32_t budget = cmdq_size_;
         budget > 0 && running() && cmdq_ci_ != cmdq_pi_ && eq0_takes_command(); --budget) {
        const uint32_t slot = cmdq_ci_ & (cmdq_size_ - 1);
        const uint64_t addr = cmdq_base_ + uint64_t{slot} * sizeof(ohca_cmd);
        ohca_cmd raw;
        if (!host_.read_obj(addr, raw)) {
            enter_fatal(OHCA_FATAL_CMDQ_DMA);
            return;
        }

        CmdResult r;
        Command cmd;
        cmd.opcode = le(raw.opcode);
        cmd.in_len = le(raw.in_len);
        cmd.out_addr = le(raw.out_addr);
        cmd.out_len = le(raw.out_len);
        if (cmd.opcode >= OHCA_CMD_MAX) {
            r = {OHCA_STATUS_BAD_OPCODE, cmd.opcode};
        } else if (raw.rsvd0 != 0) {
            r = {OHCA_STATUS_RESERVED_NONZERO, OHCA_SYNDROME_ENTRY | offsetof(ohca_cmd, rsvd0)};
        } else if (raw.rsvd1 != 0) {
            r = {OHCA_STATUS_RESERVED_NONZERO, OHCA_SYNDROME_ENTRY | offsetof(ohca_cmd, rsvd1)};
        } else if (cmd.out_len == 0 && cmd.out_addr != 0) {
            r = {OHCA_STATUS_BAD_FIELD, OHCA_SYNDROME_ENTRY | offsetof(ohca_cmd, out_addr)};
        } else if (cmd.in_len > OHCA_CMD_MAILBOX_MAX || cmd.out_len > OHCA_CMD_MAILBOX_MAX) {
            r = {OHCA_STATUS_BAD_LEN, OHCA_CMD_MAILBOX_MAX};
        } else {
            bool fetched = true;
            if (cmd.in_len <= OHCA_CMD_INLINE_MAX) {
                std::memcpy(cmd.in.data(), raw.inline_in, cmd.in_len);
            } else {
                fetched = host_.read(le(raw.in_addr), cmd.in.data(), cmd.in_len);
            }
            const CmdSpec &spec = kCommands[cmd.opcode];
            if (!fetched) {
                r = {OHCA_STATUS_BAD_ADDR, 0};
            } else if (cmd.in_len != spec.in && !(spec.in_at_least && cmd.in_len > spec.in)) {
                r = {OHCA_STATUS_BAD_LEN, static_cast<uint32_t>(spec.in)};
            } else if (cmd.out_len < spec.out) {
                r = {OHCA_STATUS_BAD_LEN, static_cast<uint32_t>(spec.out)};
            } else if (spec.run == nullptr) {
                r = {OHCA_STATUS_BAD_OPCODE, cmd.opcode};
            } else {
                r = spec.run(*this, cmd);
            }
        }

        host_.trace(OHCA_ENGINE_TRACE_CMD, cmd.opcode, r.status, r.syndrome);
        const uint8_t status = r.status;
        const uint32_t syndrome = le(r.syndrome);
        if (!host_.write(addr + offsetof(ohca_cmd, status), &status, sizeof(status)) ||
            !host_.write(addr + offsetof(ohca_cmd, syndrome), &syndrome, sizeof(syndrome))) {
            enter_fatal(OHCA_FATAL_CMDQ_DMA);
            return;
        }
        cmdq_ci_ = static_cast<uint16_t>(cmdq_ci_ + 1);
        if (r.status == OHCA_STATUS_OK) {
            ++stats_.cmd_completed;
        } else {
            ++stats_.cmd_failed;
        }
        post_event(OHCA_EQE_CMD_DONE, r.status, le(raw.token), r.syndrome, slot);
    }
    if (running() && cmdq_ci_ != cmdq_pi_ && eq0_takes_command()) {
        host_.schedule();
    }
}

CmdResult write_output(const Host &host, const Command &cmd, const void *out, size_t len) {
    if (!host.write(cmd.out_addr, out, len)) {
        return {OHCA_STATUS_BAD_ADDR, 1};
    }
    return {};
}

CmdResult write_create_out(const Host &host, const Command &cmd, uint32_t h1, uint32_t h2) {
    ohca_create_out out{};
    out.handle = le(h1);
    out.handle2 = le(h2);
    return write_output(host, cmd, &out, sizeof(out));
}

CmdResult Device::cmd_query_device(const Command &cmd) {
    using L = DeviceLimits;
    ohca_query_device_out out{};
    out.fw_version = le(L::fw_version);
    out.hw_version = le(L::hw_version);
    out.node_guid = le(cfg_.node_guid);
    out.sys_image_guid = le(cfg_.sys_image_guid);
    out.max_mr_size = le(L::max_mr_size);
    out.page_size_cap = le(L::page_size_cap);
    out.vendor_id = le(L::vendor_id);
    out.vendor_part_id = le(L::vendor_part_id);
    out.max_qp = le(cfg_.max_qp);
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
    // A driver that knows a shorter output gets only that part.
    return write_output(host_, cmd, &out, std::min<size_t>(cmd.out_len, sizeof(out)));
}

CmdResult Device::cmd_query_port(const Command &cmd) {
    const auto in = cmd.input<ohca_query_port_in>();
    if (in.port != 1) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_query_port_in, port)};
    }
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_query_port_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    ohca_query_port_out out{};
    out.state = cfg_.link_up ? OHCA_PORT_ACTIVE : OHCA_PORT_DOWN;
    out.link_up = cfg_.link_up ? 1 : 0;
    std::copy(cfg_.mac.begin(), cfg_.mac.end(), out.mac);
    out.max_mtu = le(uint32_t{OHCA_ETH_MAX_MTU});
    out.mtu = le(mtu_);
    out.speed_mbps = le(DeviceLimits::speed_mbps);
    out.gid_table_len = le(DeviceLimits::gid_table_len);
    out.pkey_table_len = le(DeviceLimits::pkey_table_len);
    out.max_msg_size = le(DeviceLimits::max_msg_size);
    out.rx_frames = le(stats_.port_rx_frames);
    out.tx_frames = le(stats_.port_tx_frames);
    if (ib_) {
        // No MAC and no Ethernet MTU: the IB part says what the port is.
        std::fill(std::begin(out.mac), std::end(out.mac), uint8_t{0});
        out.max_mtu = 0;
        out.mtu = 0;
        ib_->fill_query(out);
    }
    // A driver that knows a shorter output gets only that part.
    return write_output(host_, cmd, &out, std::min<size_t>(cmd.out_len, sizeof(out)));
}

CmdResult Device::cmd_set_port(const Command &cmd) {
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
    if ((mask & OHCA_SET_PORT_MTU) != 0) {
        mtu_ = mtu;
    }
    if ((mask & OHCA_SET_PORT_RX_MODE) != 0) {
        rx_mode_ = rx_mode;
    }
    return {};
}

CmdResult Device::cmd_create_eth_ring(const Command &cmd) {
    const auto in = cmd.input<ohca_create_eth_ring_in>();
    if (ib_) {
        return {OHCA_STATUS_BAD_STATE, 0}; // an InfiniBand port carries no Ethernet
    }
    const uint64_t base = le(in.base);
    if (in.type != OHCA_ETH_RING_TX && in.type != OHCA_ETH_RING_RX) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_eth_ring_in, type)};
    }
    if (in.log_size < OHCA_ETH_RING_LOG_MIN || in.log_size > OHCA_ETH_RING_LOG_MAX) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_eth_ring_in, log_size)};
    }
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_create_eth_ring_in, rsvd0),
                              sizeof(in.rsvd0) + sizeof(in.rsvd1))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    if (base == 0 || base % sizeof(ohca_eth_desc) != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_eth_ring_in, base)};
    }
    EthRing &ring = in.type == OHCA_ETH_RING_TX ? tx_ring_ : rx_ring_;
    if (ring.exists()) {
        return {OHCA_STATUS_BAD_STATE, 0};
    }
    // The whole ring must be readable now (it may still vanish later; the
    // data path handles that too).
    const size_t bytes = (size_t{1} << in.log_size) * sizeof(ohca_eth_desc);
    std::array<uint8_t, 4096> chunk{};
    for (size_t off = 0; off < bytes; off += chunk.size()) {
        if (!host_.read(base + off, chunk.data(), std::min(chunk.size(), bytes - off))) {
            return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_eth_ring_in, base)};
        }
    }
    ring.create(base, in.log_size);
    return {};
}

CmdResult Device::cmd_destroy_eth_ring(const Command &cmd) {
    const auto in = cmd.input<ohca_destroy_eth_ring_in>();
    if (in.type != OHCA_ETH_RING_TX && in.type != OHCA_ETH_RING_RX) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_destroy_eth_ring_in, type)};
    }
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_destroy_eth_ring_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    EthRing &ring = in.type == OHCA_ETH_RING_TX ? tx_ring_ : rx_ring_;
    if (!ring.exists()) {
        return {OHCA_STATUS_BAD_STATE, 0};
    }
    ring.destroy();
    return {};
}

CmdResult Device::cmd_alloc_uar(const Command &cmd) {
    const auto index = uars_.find_free();
    if (!index) {
        return {OHCA_STATUS_NO_RESOURCES, 0};
    }
    ohca_alloc_uar_out out{};
    out.uar_index = le(*index);
    if (CmdResult r = write_output(host_, cmd, &out, sizeof(out)); r.status != OHCA_STATUS_OK) {
        return r;
    }
    uars_.take(*index);
    return {};
}

CmdResult Device::cmd_dealloc_uar(const Command &cmd) {
    const auto in = cmd.input<ohca_dealloc_uar_in>();
    const uint32_t index = le(in.uar_index);
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_dealloc_uar_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    if (index < OHCA_NUM_DB_PAGES && uar_refs_[index] != 0) {
        return {OHCA_STATUS_BAD_STATE, index}; // CQs or QPs ring on it
    }
    if (!uars_.release(index)) {
        return {OHCA_STATUS_BAD_HANDLE, index};
    }
    return {};
}

CmdResult Device::cmd_add_gid(const Command &cmd) {
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
    gids_.set(index, entry);
    return {};
}

CmdResult Device::cmd_del_gid(const Command &cmd) {
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
    if (!gids_.clear(index)) {
        return {OHCA_STATUS_BAD_HANDLE, index};
    }
    return {};
}

CmdResult Device::cmd_query_stats(const Command &cmd) {
    ohca_query_stats_out out{};
    out.eth_rx_frames = le(stats_.eth_rx_frames);
    out.eth_rx_bytes = le(stats_.eth_rx_bytes);
    out.eth_rx_dropped_no_desc = le(stats_.eth_rx_dropped_no_desc);
    out.eth_rx_dropped_filter = le(stats_.eth_rx_dropped_filter);
    out.eth_rx_dropped_too_long = le(stats_.eth_rx_dropped_too_long);
    out.eth_tx_frames = le(stats_.eth_tx_frames);
    out.eth_tx_bytes = le(stats_.eth_tx_bytes);
    out.eth_tx_errors = le(stats_.eth_tx_errors);
    out.roce_rx_frames = le(stats_.roce_rx_frames);
    out.roce_rx_dropped = le(stats_.roce_rx_dropped);
    out.cmd_completed = le(stats_.cmd_completed);
    out.cmd_failed = le(stats_.cmd_failed);
    out.reg_errors = le(stats_.reg_errors);
    out.db_errors = le(stats_.db_errors);
    out.eth_rx_errors = le(stats_.eth_rx_errors);
    const RoceCounters &r = roce_;
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
    out.raw_tx_frames = le(raw_.counters().tx_frames);
    out.raw_rx_frames = le(raw_.counters().rx_frames);
    out.raw_rx_dropped = le(raw_.counters().rx_dropped);
    out.eq0_events_held = le(stats_.eq0_events_held);
    out.eq0_events_merged = le(stats_.eq0_events_merged);
    out.eq0_events_dropped = le(stats_.eq0_events_dropped + stats_.peer_events_dropped);
    out.rc_spurious_timeouts = le(r.spurious_timeouts);
    // A driver that knows only the rev 1.0 part gets only that part.
    return write_output(host_, cmd, &out, std::min<size_t>(cmd.out_len, sizeof(out)));
}

} // namespace ohca
