// SPDX-License-Identifier: GPL-2.0-or-later
// The key table (MRs and windows share its indices), power-on, and the
// dispatch of the keys' commands (keys.hpp says where each one is).
#include "objects/keys.hpp"

#include "device/limits.hpp"

namespace ohca {

MemoryKeys::MemoryKeys(const Host &host, Table<Pd> &pds, PblBudget &pbl, EventSink &events,
                       KeyLinks &links, Stats &stats, uint32_t max_qp)
    : host_(host), pds_(pds), pbl_(pbl), events_(events), links_(links), stats_(stats),
      max_qp_(max_qp) {
    tags_.assign(DeviceLimits::max_keys + 1, 0);
    reset();
}

void MemoryKeys::reset() {
    slots_.clear();
    slots_.resize(DeviceLimits::max_keys + 1);
    mr_count_ = 0;
    mw_count_ = 0;
    dm_.reset();
    odp_faults_.clear();
    odp_waiters_.clear();
    odp_chunks_ = 0;
    odp_mrs_ = 0;
    odp_walk_steps_ = 0;
}

void MemoryKeys::seed_tags(uint32_t seed) {
    tags_.assign(DeviceLimits::max_keys + 1, 0);
    uint32_t x = seed;
    for (auto &t : tags_) {
        x = x * 1664525u + 1013904223u; // an LCG is enough: spread, not secrecy
        t = static_cast<uint8_t>(x >> 24);
    }
}

CmdResult MemoryKeys::execute(const Command &cmd) {
    switch (cmd.opcode) {
    case OHCA_CMD_CREATE_MR:
        return cmd_create_mr(cmd);
    case OHCA_CMD_DESTROY_MR:
        return cmd_destroy_mr(cmd);
    case OHCA_CMD_REREG_MR:
        return cmd_rereg_mr(cmd);
    case OHCA_CMD_ALLOC_MW:
        return cmd_alloc_mw(cmd);
    case OHCA_CMD_DEALLOC_MW:
        return cmd_dealloc_mw(cmd);
    case OHCA_CMD_ALLOC_DM:
        return cmd_alloc_dm(cmd);
    case OHCA_CMD_FREE_DM:
        return cmd_free_dm(cmd);
    case OHCA_CMD_REG_DM_MR:
        return cmd_reg_dm_mr(cmd);
    case OHCA_CMD_ODP_MAP: // and its page entries: cmd_odp_map checks in_len
        return cmd_odp_map(cmd);
    case OHCA_CMD_ODP_UNMAP:
        return cmd_odp_unmap(cmd);
    default:
        return {OHCA_STATUS_BAD_OPCODE, cmd.opcode};
    }
}

Pd *MemoryKeys::find_pd(uint32_t pdn) const {
    return pdn < pds_.size() ? pds_[pdn].get() : nullptr;
}

Mr *MemoryKeys::mr_by_key(uint32_t key) const {
    const uint32_t index = OHCA_KEY_INDEX(key);
    Mr *mr = index != 0 && index < slots_.size() ? slots_[index].mr.get() : nullptr;
    return mr != nullptr && mr->handle == key ? mr : nullptr;
}

std::optional<uint32_t> MemoryKeys::free_key_slot() const {
    for (uint32_t i = 1; i < slots_.size(); ++i) {
        if (!slots_[i].mr && !slots_[i].mw) {
            return i;
        }
    }
    return std::nullopt;
}

// Its list, or for a fast-registration MR the capacity its registrations
// may fill.
uint64_t MemoryKeys::pbl_charge(const Mr &mr) {
    return mr.fast_reg ? mr.capacity : mr.pages.npages();
}

} // namespace ohca
