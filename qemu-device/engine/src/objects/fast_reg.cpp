// SPDX-License-Identifier: GPL-2.0-or-later
// Fast-registration MRs (programming manual, "Fast registration"): created
// free with a page-list capacity, given a translation and a key by a REG_MR
// work request, made free again by LOCAL_INV or a received SEND with
// invalidate. The key's low byte is the consumer's "key" variant: every
// registration may name a new one, and only the current key of a valid MR
// passes check_key, so a key from before an invalidation is refused.
#include "device/command.hpp"
#include "link/byte_order.hpp"
#include "objects/keys.hpp"

#include <cstring>

namespace ohca {

CmdResult MemoryKeys::init_fast_reg_mr(const ohca_create_mr_in &in, Mr &mr) {
    using In = ohca_create_mr_in;
    if (le(in.access) != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, access)};
    }
    if (le(in.iova) != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, iova)};
    }
    if (le(in.length) != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, length)};
    }
    const uint32_t capacity = le(in.pbl.npages);
    if (capacity == 0 || capacity > DeviceLimits::max_fast_reg_page_list_len) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, pbl) + offsetof(ohca_pbl, npages)};
    }
    if (le(in.pbl.addr) != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, pbl) + offsetof(ohca_pbl, addr)};
    }
    if (in.pbl.page_shift != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, pbl) + offsetof(ohca_pbl, page_shift)};
    }
    if (in.pbl.levels != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, pbl) + offsetof(ohca_pbl, levels)};
    }
    if (le(in.pbl.rsvd) != 0) {
        return {OHCA_STATUS_RESERVED_NONZERO, offsetof(In, pbl) + offsetof(ohca_pbl, rsvd)};
    }
    // No host memory until a registration: the list is copied by REG_MR.
    mr.fast_reg = true;
    mr.valid = false;
    mr.capacity = capacity;
    return {};
}

LocalOpResult MemoryKeys::execute_reg_mr(const Qp &qp, const ohca_reg_mr_wqe &w) {
    constexpr LocalOpResult kBad{OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_REG_MR};
    // Page lists hold bus addresses: only the kernel's QPs may use them.
    if (qp.uar != 0) {
        return {OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_WQE};
    }
    if (w.rsvd0 != 0 || le(w.rsvd1[0]) != 0 || le(w.rsvd1[1]) != 0 || le(w.rsvd1[2]) != 0 ||
        le(w.rsvd1[3]) != 0 || (w.flags & OHCA_WQE_INLINE) != 0) {
        return {OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_WQE};
    }
    const uint32_t key = le(w.key);
    const uint32_t index = OHCA_KEY_INDEX(key);
    if (index == 0 || index >= slots_.size() || !slots_[index].mr) {
        return {OHCA_CQE_LOC_PROT_ERR, OHCA_VERR_BAD_LKEY};
    }
    Mr &mr = *slots_[index].mr;
    if (!mr.fast_reg || mr.valid) {
        return {OHCA_CQE_LOC_PROT_ERR, OHCA_VERR_MR_STATE};
    }
    if (mr.pdn != qp.pdn) {
        return {OHCA_CQE_LOC_PROT_ERR, OHCA_VERR_LKEY_PD};
    }
    const uint32_t access = le(w.access);
    const bool remote = (access & (OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_ATOMIC)) != 0;
    if ((access & ~kAccessAll) != 0 || (remote && (access & OHCA_ACCESS_LOCAL_WRITE) == 0)) {
        return kBad;
    }
    const uint64_t iova = le(w.iova);
    const uint64_t length = le(w.length);
    const uint32_t npages = le(w.npages);
    const unsigned int shift = w.page_shift;
    if (length == 0 || length > DeviceLimits::max_mr_size || iova + (length - 1) < iova ||
        npages == 0 || npages > mr.capacity || shift < OHCA_PAGE_SHIFT_MIN ||
        shift > OHCA_PAGE_SHIFT_MAX) {
        return kBad;
    }
    ohca_pbl pbl{};
    pbl.addr = w.pbl_addr;
    pbl.npages = w.npages;
    pbl.page_shift = w.page_shift;
    pbl.levels = 1;
    const uint64_t first = iova & ((uint64_t{1} << shift) - 1);
    PageList pages;
    const auto r = pages.load(host_, pbl, first + length);
    if (r.error == PageList::Error::Dma) {
        return {OHCA_CQE_LOC_PROT_ERR, OHCA_VERR_DMA};
    }
    if (r.error != PageList::Error::None) {
        return kBad;
    }
    mr.pages = std::move(pages);
    mr.iova = iova;
    mr.length = length;
    mr.access = access;
    mr.key = key;
    mr.valid = true;
    // The next MR created at this index starts after the newest variant.
    tags_[index] = static_cast<uint8_t>(OHCA_KEY_TAG(key));
    return {};
}

uint8_t MemoryKeys::invalidate_key(uint32_t key, const Qp &qp, bool remote) {
    const uint32_t index = OHCA_KEY_INDEX(key);
    if (index != 0 && index < slots_.size() && slots_[index].mw) {
        return invalidate_window(*slots_[index].mw, key, qp, remote);
    }
    if (index == 0 || index >= slots_.size() || !slots_[index].mr) {
        return OHCA_VERR_BAD_LKEY;
    }
    Mr &mr = *slots_[index].mr;
    if (!mr.fast_reg || mr.key != key) {
        return OHCA_VERR_MR_STATE;
    }
    if (mr.pdn != qp.pdn) {
        return OHCA_VERR_LKEY_PD;
    }
    mr.valid = false;
    mr.pages = PageList{}; // the translation goes with the registration
    return OHCA_VERR_NONE;
}

LocalOpResult MemoryKeys::execute_local_op(const Qp &qp, const ohca_send_wqe &w, SendWr &wr) {
    wr.local_op = true;
    if (w.opcode == OHCA_WR_REG_MR) {
        ohca_reg_mr_wqe reg{};
        static_assert(sizeof(reg) == sizeof(w));
        std::memcpy(&reg, &w, sizeof(reg));
        return execute_reg_mr(qp, reg);
    }
    if (w.opcode == OHCA_WR_BIND_MW) {
        ohca_bind_mw_wqe bind{};
        static_assert(sizeof(bind) == sizeof(w));
        std::memcpy(&bind, &w, sizeof(bind));
        return execute_bind_mw(qp, bind);
    }
    if ((w.flags & OHCA_WQE_INLINE) != 0) {
        return {OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_WQE};
    }
    const uint8_t verr = invalidate_key(le(w.rkey), qp, false);
    if (verr != OHCA_VERR_NONE) {
        return {OHCA_CQE_LOC_PROT_ERR, verr};
    }
    return {};
}

} // namespace ohca
