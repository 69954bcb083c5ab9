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
    OHCA_CMD(OHCA_CMD_QUERY_DEVICE, 0, OHCA_QUERY_DEVICE_OUT_MIN_SIZE, d.cmds_.cmd_query_device(c));
    // Grown compatibly: the ABI 1.4 part is the minimum.
    OHCA_CMD(OHCA_CMD_QUERY_PORT, sizeof(ohca_query_port_in), OHCA_QUERY_PORT_OUT_MIN_SIZE,
             d.cmds_.cmd_query_port(c));
    OHCA_CMD(OHCA_CMD_SET_PORT, sizeof(ohca_set_port_in), 0, d.cmds_.cmd_set_port(c));
    OHCA_CMD(OHCA_CMD_CREATE_ETH_RING, sizeof(ohca_create_eth_ring_in), 0,
             d.eth_.cmd_create_ring(c));
    OHCA_CMD(OHCA_CMD_DESTROY_ETH_RING, sizeof(ohca_destroy_eth_ring_in), 0,
             d.eth_.cmd_destroy_ring(c));
    OHCA_CMD(OHCA_CMD_ALLOC_UAR, 0, sizeof(ohca_alloc_uar_out), d.cmds_.cmd_alloc_uar(c));
    OHCA_CMD(OHCA_CMD_DEALLOC_UAR, sizeof(ohca_dealloc_uar_in), 0, d.cmds_.cmd_dealloc_uar(c));
    OHCA_CMD(OHCA_CMD_ADD_GID, sizeof(ohca_add_gid_in), 0, d.cmds_.cmd_add_gid(c));
    OHCA_CMD(OHCA_CMD_DEL_GID, sizeof(ohca_del_gid_in), 0, d.cmds_.cmd_del_gid(c));
    // Grown compatibly: the rev 1.0 part is the minimum.
    OHCA_CMD(OHCA_CMD_QUERY_STATS, 0, OHCA_QUERY_STATS_OUT_V1_SIZE, d.cmds_.cmd_query_stats(c));
    OHCA_CMD(OHCA_CMD_CREATE_EQ, sizeof(ohca_create_eq_in), kCreateOut, d.cqs_.cmd_create_eq(c));
    OHCA_CMD(OHCA_CMD_DESTROY_EQ, kHandle, 0, d.cqs_.cmd_destroy_eq(c));
    OHCA_CMD(OHCA_CMD_CREATE_PD, 0, kCreateOut, d.pds_.cmd_create_pd(c));
    OHCA_CMD(OHCA_CMD_DESTROY_PD, kHandle, 0, d.pds_.cmd_destroy_pd(c));
    OHCA_CMD(OHCA_CMD_CREATE_MR, sizeof(ohca_create_mr_in), kCreateOut, d.keys_.execute(c));
    OHCA_CMD(OHCA_CMD_DESTROY_MR, kHandle, 0, d.keys_.execute(c));
    // Grown compatibly (OHCA_DEV_CAP_DB_RECORD): the command checks in_len.
    OHCA_CMD(OHCA_CMD_CREATE_CQ, OHCA_CREATE_CQ_IN_V1_SIZE, kCreateOut, d.cqs_.cmd_create_cq(c));
    t[OHCA_CMD_CREATE_CQ].in_at_least = true;
    OHCA_CMD(OHCA_CMD_DESTROY_CQ, kHandle, 0, d.cqs_.cmd_destroy_cq(c));
    OHCA_CMD(OHCA_CMD_CREATE_QP, OHCA_CREATE_QP_IN_V1_SIZE, kCreateOut, d.qps_.cmd_create_qp(c));
    t[OHCA_CMD_CREATE_QP].in_at_least = true;
    OHCA_CMD(OHCA_CMD_MODIFY_QP, sizeof(ohca_modify_qp_in), 0, d.qps_.cmd_modify_qp(c));
    OHCA_CMD(OHCA_CMD_QUERY_QP, kHandle, sizeof(ohca_qp_attr), d.qps_.cmd_query_qp(c));
    OHCA_CMD(OHCA_CMD_DESTROY_QP, kHandle, 0, d.qps_.cmd_destroy_qp(c));
    OHCA_CMD(OHCA_CMD_RESIZE_CQ, sizeof(ohca_resize_cq_in), sizeof(ohca_resize_cq_out),
             d.cqs_.cmd_resize_cq(c, d.qps_));
    OHCA_CMD(OHCA_CMD_REREG_MR, sizeof(ohca_rereg_mr_in), kCreateOut, d.keys_.execute(c));
    // Grown compatibly (OHCA_DEV_CAP_SRQ_DB_RECORD): the command checks in_len.
    OHCA_CMD(OHCA_CMD_CREATE_SRQ, OHCA_CREATE_SRQ_IN_V1_SIZE, kCreateOut,
             d.srqs_.cmd_create_srq(c));
    t[OHCA_CMD_CREATE_SRQ].in_at_least = true;
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
    OHCA_CMD(OHCA_CMD_MAD_IFC, sizeof(ohca_mad_ifc_in), sizeof(ohca_mad_ifc_out),
             d.cmds_.cmd_mad_ifc(c));
    OHCA_CMD(OHCA_CMD_SET_PORT_CAP, sizeof(ohca_set_port_cap_in), 0, d.cmds_.cmd_set_port_cap(c));
    OHCA_CMD(OHCA_CMD_CC_PARAM, sizeof(ohca_cc_param_in), sizeof(ohca_cc_param_out),
             d.cmds_.cmd_cc_param(c));
    OHCA_CMD(OHCA_CMD_QUERY_PFC, sizeof(ohca_query_pfc_in), sizeof(ohca_query_pfc_out),
             d.cmds_.cmd_query_pfc(c));
    OHCA_CMD(OHCA_CMD_SET_PFC, sizeof(ohca_set_pfc_in), 0, d.cmds_.cmd_set_pfc(c));
    OHCA_CMD(OHCA_CMD_CREATE_WQ, sizeof(ohca_create_wq_in), kCreateOut, d.wqs_.cmd_create_wq(c));
    OHCA_CMD(OHCA_CMD_MODIFY_WQ, sizeof(ohca_modify_wq_in), 0, d.wqs_.cmd_modify_wq(c));
    OHCA_CMD(OHCA_CMD_DESTROY_WQ, kHandle, 0, d.wqs_.cmd_destroy_wq(c));
    OHCA_CMD(OHCA_CMD_CREATE_RWQ_IND_TBL, sizeof(ohca_create_rwq_ind_tbl_in), kCreateOut,
             d.wqs_.cmd_create_ind_tbl(c));
    OHCA_CMD(OHCA_CMD_DESTROY_RWQ_IND_TBL, kHandle, 0, d.wqs_.cmd_destroy_ind_tbl(c));
    OHCA_CMD(OHCA_CMD_CREATE_RSS_QP, sizeof(ohca_create_rss_qp_in), kCreateOut,
             d.wqs_.cmd_create_rss_qp(c));
    return t;
}();

#undef OHCA_CMD

void Device::cmdq_doorbell(uint32_t value) {
    if (!status_.running() || (value & ~OHCA_RING_INDEX_MASK) != 0) {
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
         budget > 0 && status_.running() && cmdq_ci_ != cmdq_pi_ && events_.takes_command();
         --budget) {
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
        events_.post_event(OHCA_EQE_CMD_DONE, r.status, le(raw.token), r.syndrome, slot);
    }
    if (status_.running() && cmdq_ci_ != cmdq_pi_ && events_.takes_command()) {
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

} // namespace ohca
