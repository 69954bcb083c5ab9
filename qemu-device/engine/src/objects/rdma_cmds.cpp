// SPDX-License-Identifier: GPL-2.0-or-later
// The RDMA resource commands (programming manual section 8). Every command
// validates all of its input before it changes any state.
#include "device/command.hpp"
#include "device/device.hpp"
#include "link/byte_order.hpp"
#include "objects/qp_state.hpp"

#include <algorithm>

namespace ohca {

namespace {

// MRs may also allow memory windows to be bound to them.
constexpr uint32_t kMrAccessAll = kAccessAll | OHCA_ACCESS_MW_BIND;

} // namespace

void Device::rdma_power_on() {
    pds_.reset();
    cqs_.reset();
    mrs_.clear();
    mrs_.resize(DeviceLimits::max_keys + 1);
    mr_count_ = 0;
    dm_.reset();
    mw_count_ = 0;
    ready_.clear();
    timers_.clear();
    qps_.reset();
    srqs_.reset();
    mcast_.clear();
    raw_.reset();
    xrc_.reset();
    uar_refs_.fill(0);
    pbl_.reset();
    odp_faults_.clear();
    odp_waiters_.clear();
    odp_chunks_ = 0;
    odp_mrs_ = 0;
    roce_backlog_.clear();
    timers_deferred_ = false;
    if (timer_deadline_ != 0) {
        timer_deadline_ = 0;
        host_.set_timer(0);
    }
}

// MR key tags and the QPN cursor start from the host's seed and are kept
// across resets: after one, a peer's stale rkeys and QPNs name nothing (or,
// once the numbers come round again, an object it must still match GID and
// PSN of).
void Device::seed_ids(uint32_t seed) {
    mr_tags_.assign(DeviceLimits::max_keys + 1, 0);
    uint32_t x = seed;
    for (auto &t : mr_tags_) {
        x = x * 1664525u + 1013904223u; // an LCG is enough: spread, not secrecy
        t = static_cast<uint8_t>(x >> 24);
    }
    qps_.seed(seed);
}

// Page-list entries an MR holds against the budget: its list, or for a
// fast-registration MR the capacity its registrations may fill.
uint64_t Device::pbl_charge(const Mr &mr) {
    return mr.fast_reg ? mr.capacity : mr.pages.npages();
}

uint64_t Device::pbl_room() const {
    return pbl_.room();
}

CmdResult Device::write_create_out(const Command &cmd, uint32_t h1, uint32_t h2) {
    return ohca::write_create_out(host_, cmd, h1, h2);
}

// ---- MR ---------------------------------------------------------------------

CmdResult Device::cmd_create_mr(const Command &cmd) {
    const auto in = cmd.input<ohca_create_mr_in>();
    const uint32_t pdn = le(in.pdn);
    const uint32_t access = le(in.access);
    const uint64_t iova = le(in.iova);
    const uint64_t length = le(in.length);
    const uint32_t flags = le(in.flags);
    Pd *pd = pds_.find(pdn);
    if (pd == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, pdn};
    }
    const bool remote = (access & (OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_ATOMIC)) != 0;
    const bool physical = (flags & OHCA_MR_F_PHYSICAL) != 0;
    if ((access & ~kMrAccessAll) != 0 || (remote && (access & OHCA_ACCESS_LOCAL_WRITE) == 0) ||
        (physical && (access & ~uint32_t{OHCA_ACCESS_LOCAL_WRITE}) != 0)) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_mr_in, access)};
    }
    const bool odp = (flags & OHCA_MR_F_ODP) != 0;
    if (flags != 0 && flags != OHCA_MR_F_PHYSICAL && flags != OHCA_MR_F_FAST_REG &&
        flags != OHCA_MR_F_ODP && flags != (OHCA_MR_F_ODP | OHCA_MR_F_IMPLICIT)) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_mr_in, flags)};
    }
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_create_mr_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    Mr mr;
    mr.pdn = pdn;
    mr.access = access;
    mr.physical = physical;
    if (flags == OHCA_MR_F_FAST_REG) {
        if (CmdResult r = init_fast_reg_mr(in, mr); r.status != OHCA_STATUS_OK) {
            return r;
        }
        // Its registrations may copy up to 'capacity' entries: that much of
        // the page-list budget is taken now.
        if (mr.capacity > pbl_room()) {
            return {OHCA_STATUS_NO_RESOURCES, 0};
        }
    } else if (odp) {
        if (CmdResult r = init_odp_mr(in, mr); r.status != OHCA_STATUS_OK) {
            return r;
        }
    } else if (physical) {
        // The whole bus address space: iova and length are not used.
        mr.iova = 0;
        mr.length = ~uint64_t{0};
    } else {
        if (length == 0 || length > DeviceLimits::max_mr_size) {
            return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_mr_in, length)};
        }
        if (iova + (length - 1) < iova) {
            return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_mr_in, iova)};
        }
        const unsigned int shift = in.pbl.page_shift;
        if (shift < OHCA_PAGE_SHIFT_MIN || shift > OHCA_PAGE_SHIFT_MAX) {
            return {OHCA_STATUS_BAD_FIELD,
                    offsetof(ohca_create_mr_in, pbl) + offsetof(ohca_pbl, page_shift)};
        }
        const uint64_t first = iova & ((uint64_t{1} << shift) - 1);
        const auto r = mr.pages.load(host_, in.pbl, first + length, pbl_room());
        if (r.error != PageList::Error::None) {
            return pbl_error(r, offsetof(ohca_create_mr_in, pbl));
        }
        mr.iova = iova;
        mr.length = length;
    }
    const std::optional<uint32_t> index = free_key_slot();
    if (!index || mr_count_ >= DeviceLimits::max_mr) {
        return {OHCA_STATUS_NO_RESOURCES, 0};
    }
    MrSlot &slot = mrs_[*index];
    const auto tag = static_cast<uint8_t>(mr_tags_[*index] + 1);
    mr.key = (*index << 8) | tag;
    mr.handle = mr.key;
    if (CmdResult r = write_create_out(cmd, mr.key, mr.key); r.status != OHCA_STATUS_OK) {
        return r;
    }
    mr_tags_[*index] = tag;
    pbl_.charge(pbl_charge(mr));
    if (mr.odp) {
        ++odp_mrs_; // odp_mr_destroyed() counts it down
    }
    slot.mr = std::make_unique<Mr>(std::move(mr));
    ++mr_count_;
    ++pd->refs;
    return {};
}

CmdResult Device::cmd_destroy_mr(const Command &cmd) {
    const auto in = cmd.input<ohca_handle_in>();
    const uint32_t key = le(in.handle);
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_handle_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    Mr *mr = mr_by_key(key);
    if (mr == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, key};
    }
    // IBTA: an MR with windows bound to it cannot be deregistered.
    if (mr->windows != 0) {
        return {OHCA_STATUS_BAD_STATE, key};
    }
    if (Pd *pd = pds_.find(mr->pdn)) {
        --pd->refs;
    }
    pbl_.release(pbl_charge(*mr));
    dm_mr_destroyed(*mr);
    odp_mr_destroyed(*mr);
    mrs_[OHCA_KEY_INDEX(key)].mr.reset();
    --mr_count_;
    return {};
}

KeyResult Device::check_key(uint32_t key, uint64_t va, uint64_t len, uint32_t access,
                            uint32_t pdn) const {
    const uint32_t index = OHCA_KEY_INDEX(key);
    if (index == 0 || index >= mrs_.size() || !mrs_[index].mr || mrs_[index].mr->key != key ||
        !mrs_[index].mr->valid) {
        return {OHCA_VERR_BAD_LKEY, nullptr};
    }
    const Mr &mr = *mrs_[index].mr;
    if (mr.pdn != pdn) {
        return {OHCA_VERR_LKEY_PD, nullptr};
    }
    if ((mr.access & access) != access) {
        return {OHCA_VERR_LKEY_ACCESS, nullptr};
    }
    if (len != 0 && !mr.physical &&
        (va < mr.iova || va - mr.iova > mr.length || len > mr.length - (va - mr.iova))) {
        return {OHCA_VERR_LKEY_BOUNDS, nullptr};
    }
    if (len != 0 && va + (len - 1) < va) {
        return {OHCA_VERR_LKEY_BOUNDS, nullptr};
    }
    return {OHCA_VERR_NONE, &mr};
}

bool Device::mr_read(const Mr &mr, uint64_t va, void *buf, size_t len) const {
    if (mr.dm_handle != 0) {
        return dm_.read(mr.dm_base + (va - mr.iova), buf, len);
    }
    if (mr.physical) {
        return host_.read(va, buf, len);
    }
    if (mr.odp) {
        // Only what has a translation now; the caller faulted it in first.
        return mr.odp->walk(va, len, false, [&](uint64_t bus, size_t at, size_t n) {
            return host_.read(bus, static_cast<uint8_t *>(buf) + at, n);
        });
    }
    return mr.pages.read(host_, va - (mr.iova & ~(mr.pages.page_size() - 1)), buf, len);
}

bool Device::mr_write(const Mr &mr, uint64_t va, const void *buf, size_t len) const {
    if (mr.dm_handle != 0) {
        return dm_.write(mr.dm_base + (va - mr.iova), buf, len);
    }
    if (mr.physical) {
        return host_.write(va, buf, len);
    }
    if (mr.odp) {
        return mr.odp->walk(va, len, true, [&](uint64_t bus, size_t at, size_t n) {
            return host_.write(bus, static_cast<const uint8_t *>(buf) + at, n);
        });
    }
    return mr.pages.write(host_, va - (mr.iova & ~(mr.pages.page_size() - 1)), buf, len);
}

} // namespace ohca
