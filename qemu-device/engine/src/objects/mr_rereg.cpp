// SPDX-License-Identifier: GPL-2.0-or-later
// REREG_MR (programming manual, "Re-registering an MR"): an MR's
// translation, PD or access change in place; the MR keeps its keys.
#include "device/command.hpp"
#include "device/limits.hpp"
#include "link/byte_order.hpp"
#include "objects/keys.hpp"

namespace ohca {

namespace {

constexpr uint32_t kReregAll = OHCA_REREG_MR_TRANSLATION | OHCA_REREG_MR_PD | OHCA_REREG_MR_ACCESS;

} // namespace

CmdResult MemoryKeys::cmd_rereg_mr(const Command &cmd) {
    using In = ohca_rereg_mr_in;
    const auto in = cmd.input<In>();
    const uint32_t key = le(in.key);
    const uint32_t flags = le(in.flags);
    const uint32_t pdn = le(in.pdn);
    const uint32_t access = le(in.access);
    const uint64_t iova = le(in.iova);
    const uint64_t length = le(in.length);
    if (flags == 0 || (flags & ~kReregAll) != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, flags)};
    }
    // The fields of a part not named are 0, so a driver that sends one it
    // meant to apply learns that it did not.
    if ((flags & OHCA_REREG_MR_PD) == 0 && pdn != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, pdn)};
    }
    if ((flags & OHCA_REREG_MR_ACCESS) == 0 && access != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, access)};
    }
    if ((flags & OHCA_REREG_MR_TRANSLATION) == 0) {
        if (auto off = nonzero_at(cmd.in, offsetof(In, iova), sizeof(In) - offsetof(In, iova))) {
            return {OHCA_STATUS_BAD_FIELD, *off};
        }
    }
    Mr *found = mr_by_key(key);
    if (found == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, key};
    }
    Mr &mr = *found;
    if (mr.physical || mr.fast_reg || mr.dm_handle != 0 || mr.odp) {
        return {OHCA_STATUS_BAD_STATE, key};
    }
    Pd *new_pd = nullptr;
    if ((flags & OHCA_REREG_MR_PD) != 0) {
        new_pd = find_pd(pdn);
        if (new_pd == nullptr) {
            return {OHCA_STATUS_BAD_HANDLE, pdn};
        }
    }
    if ((flags & OHCA_REREG_MR_ACCESS) != 0) {
        const bool remote = (access & (OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_ATOMIC)) != 0;
        if ((access & ~kAccessAll) != 0 || (remote && (access & OHCA_ACCESS_LOCAL_WRITE) == 0)) {
            return {OHCA_STATUS_BAD_FIELD, offsetof(In, access)};
        }
    }
    PageList pages;
    if ((flags & OHCA_REREG_MR_TRANSLATION) != 0) {
        if (length == 0 || length > DeviceLimits::max_mr_size) {
            return {OHCA_STATUS_BAD_FIELD, offsetof(In, length)};
        }
        if (iova + (length - 1) < iova) {
            return {OHCA_STATUS_BAD_FIELD, offsetof(In, iova)};
        }
        const unsigned int shift = in.pbl.page_shift;
        if (shift < OHCA_PAGE_SHIFT_MIN || shift > OHCA_PAGE_SHIFT_MAX) {
            return {OHCA_STATUS_BAD_FIELD, offsetof(In, pbl) + offsetof(ohca_pbl, page_shift)};
        }
        // The old list returns to the budget when the new one is in.
        const uint64_t first = iova & ((uint64_t{1} << shift) - 1);
        const auto r = pages.load(host_, in.pbl, first + length, pbl_.room() + mr.pages.npages());
        if (r.error != PageList::Error::None) {
            return pbl_error(r, offsetof(In, pbl));
        }
    }
    if (CmdResult r = write_create_out(host_, cmd, mr.key, mr.key); r.status != OHCA_STATUS_OK) {
        return r;
    }
    // Everything checked: apply. Later key checks see the new values.
    if (new_pd != nullptr && pdn != mr.pdn) {
        if (Pd *old_pd = find_pd(mr.pdn)) {
            --old_pd->refs;
        }
        ++new_pd->refs;
        mr.pdn = pdn;
    }
    if ((flags & OHCA_REREG_MR_ACCESS) != 0) {
        mr.access = access;
    }
    if ((flags & OHCA_REREG_MR_TRANSLATION) != 0) {
        pbl_.release(mr.pages.npages());
        pbl_.charge(pages.npages());
        mr.pages = std::move(pages);
        mr.iova = iova;
        mr.length = length;
    }
    return {};
}

} // namespace ohca
