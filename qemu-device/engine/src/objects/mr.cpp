// SPDX-License-Identifier: GPL-2.0-or-later
// MRs: CREATE_MR and DESTROY_MR (programming manual section 8), the lkey
// check, and access to an MR's memory (its page list, device memory, the
// bus, or its ODP translations).
#include "device/command.hpp"
#include "device/limits.hpp"
#include "link/byte_order.hpp"
#include "objects/keys.hpp"

namespace ohca {

namespace {

// MRs may also allow memory windows to be bound to them.
constexpr uint32_t kMrAccessAll = kAccessAll | OHCA_ACCESS_MW_BIND;

} // namespace

CmdResult MemoryKeys::cmd_create_mr(const Command &cmd) {
    const auto in = cmd.input<ohca_create_mr_in>();
    const uint32_t pdn = le(in.pdn);
    const uint32_t access = le(in.access);
    const uint64_t iova = le(in.iova);
    const uint64_t length = le(in.length);
    const uint32_t flags = le(in.flags);
    Pd *pd = find_pd(pdn);
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
        if (mr.capacity > pbl_.room()) {
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
        const auto r = mr.pages.load(host_, in.pbl, first + length, pbl_.room());
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
    Slot &slot = slots_[*index];
    const auto tag = static_cast<uint8_t>(tags_[*index] + 1);
    mr.key = (*index << 8) | tag;
    mr.handle = mr.key;
    if (CmdResult r = write_create_out(host_, cmd, mr.key, mr.key); r.status != OHCA_STATUS_OK) {
        return r;
    }
    tags_[*index] = tag;
    pbl_.charge(pbl_charge(mr));
    if (mr.odp) {
        ++odp_mrs_; // odp_mr_destroyed() counts it down
    }
    slot.mr = std::make_unique<Mr>(std::move(mr));
    ++mr_count_;
    ++pd->refs;
    return {};
}

CmdResult MemoryKeys::cmd_destroy_mr(const Command &cmd) {
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
    if (Pd *pd = find_pd(mr->pdn)) {
        --pd->refs;
    }
    pbl_.release(pbl_charge(*mr));
    dm_mr_destroyed(*mr);
    odp_mr_destroyed(*mr);
    slots_[OHCA_KEY_INDEX(key)].mr.reset();
    --mr_count_;
    return {};
}

KeyResult MemoryKeys::check_key(uint32_t key, uint64_t va, uint64_t len, uint32_t access,
                                uint32_t pdn) const {
    const uint32_t index = OHCA_KEY_INDEX(key);
    if (index == 0 || index >= slots_.size() || !slots_[index].mr || slots_[index].mr->key != key ||
        !slots_[index].mr->valid) {
        return {OHCA_VERR_BAD_LKEY, nullptr};
    }
    const Mr &mr = *slots_[index].mr;
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

bool MemoryKeys::mr_read(const Mr &mr, uint64_t va, void *buf, size_t len) const {
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

bool MemoryKeys::mr_write(const Mr &mr, uint64_t va, const void *buf, size_t len) const {
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
