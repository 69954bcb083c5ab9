// SPDX-License-Identifier: GPL-2.0-or-later
// Memory windows (programming manual, "Memory windows"): ALLOC_MW and
// DEALLOC_MW, the BIND_MW work request, the remote access check through a
// window's rkey, and the invalidation of type 2 windows. Windows take key
// indices from the same table as MRs, so a key names one or the other, and
// a window's key is never accepted as an lkey (check_key sees no MR there).
// Type 1 windows belong to their PD; type 2 windows (IBTA type 2B) are also
// tied to the QP that bound them until they are invalidated.
#include "device/command.hpp"
#include "link/byte_order.hpp"
#include "objects/keys.hpp"

namespace ohca {

namespace {

constexpr uint32_t kWindowAccess = OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_WRITE |
                                   OHCA_ACCESS_REMOTE_READ | OHCA_ACCESS_REMOTE_ATOMIC;

} // namespace

CmdResult MemoryKeys::cmd_alloc_mw(const Command &cmd) {
    const auto in = cmd.input<ohca_alloc_mw_in>();
    const uint32_t pdn = le(in.pdn);
    Pd *pd = find_pd(pdn);
    if (pd == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, pdn};
    }
    if (in.type != OHCA_MW_TYPE_1 && in.type != OHCA_MW_TYPE_2) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_alloc_mw_in, type)};
    }
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_alloc_mw_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    const std::optional<uint32_t> index = free_key_slot();
    if (!index || mw_count_ >= DeviceLimits::max_mw) {
        return {OHCA_STATUS_NO_RESOURCES, 0};
    }
    Mw mw;
    mw.type = in.type;
    mw.pdn = pdn;
    const auto tag = static_cast<uint8_t>(tags_[*index] + 1);
    mw.key = (*index << 8) | tag;
    mw.handle = mw.key;
    if (CmdResult r = write_create_out(host_, cmd, mw.key, mw.key); r.status != OHCA_STATUS_OK) {
        return r;
    }
    tags_[*index] = tag;
    slots_[*index].mw = std::make_unique<Mw>(mw);
    ++mw_count_;
    ++pd->refs;
    return {};
}

CmdResult MemoryKeys::cmd_dealloc_mw(const Command &cmd) {
    const auto in = cmd.input<ohca_handle_in>();
    const uint32_t key = le(in.handle);
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_handle_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    const uint32_t index = OHCA_KEY_INDEX(key);
    if (index == 0 || index >= slots_.size() || !slots_[index].mw ||
        slots_[index].mw->handle != key) {
        return {OHCA_STATUS_BAD_HANDLE, key};
    }
    Mw &mw = *slots_[index].mw;
    unbind_window(mw); // a bound window goes with its binding
    if (Pd *pd = find_pd(mw.pdn)) {
        --pd->refs;
    }
    slots_[index].mw.reset();
    --mw_count_;
    return {};
}

void MemoryKeys::unbind_window(Mw &mw) {
    if (!mw.bound) {
        return;
    }
    if (Mr *mr = slots_[mw.mr_index].mr.get()) {
        --mr->windows;
    }
    if (mw.type == OHCA_MW_TYPE_2) {
        if (Qp *qp = links_.find_qp(mw.qpn)) {
            --qp->windows;
        }
    }
    mw.bound = false;
    mw.qpn = 0;
    mw.mr_index = 0;
    mw.mr_key = 0;
    mw.addr = 0;
    mw.length = 0;
    mw.access = 0;
}

// A QP that is destroyed frees the type 2 windows bound through it: its
// number may name another QP later, which must not inherit them. Bounded
// by the key table; only QPs that bound a window pay for it.
void MemoryKeys::unbind_qp_windows(const Qp &qp) {
    for (auto &slot : slots_) {
        if (slot.mw && slot.mw->bound && slot.mw->type == OHCA_MW_TYPE_2 &&
            slot.mw->qpn == qp.qpn) {
            unbind_window(*slot.mw);
        }
    }
}

LocalOpResult MemoryKeys::execute_bind_mw(const Qp &qp, const ohca_bind_mw_wqe &w) {
    constexpr LocalOpResult kBad{OHCA_CQE_MW_BIND_ERR, OHCA_VERR_MW_BIND};
    if (w.rsvd0[0] != 0 || w.rsvd0[1] != 0 || (w.flags & OHCA_WQE_INLINE) != 0 ||
        qp.type != OHCA_QPT_RC) {
        return {OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_WQE};
    }
    for (const auto r : w.rsvd1) {
        if (le(r) != 0) {
            return {OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_WQE};
        }
    }
    const uint32_t key = le(w.mw_key);
    const uint32_t index = OHCA_KEY_INDEX(key);
    if (index == 0 || index >= slots_.size() || !slots_[index].mw) {
        return {OHCA_CQE_MW_BIND_ERR, OHCA_VERR_BAD_LKEY};
    }
    Mw &mw = *slots_[index].mw;
    if (mw.pdn != qp.pdn) {
        return {OHCA_CQE_MW_BIND_ERR, OHCA_VERR_LKEY_PD};
    }
    const uint32_t access = le(w.access);
    const uint64_t addr = le(w.addr);
    const uint64_t length = le(w.length);
    if ((access & ~kWindowAccess) != 0) {
        return kBad;
    }
    if (mw.type == OHCA_MW_TYPE_2 && (mw.bound || length == 0)) {
        return kBad; // a type 2 window is bound once, then invalidated
    }
    if (length == 0) {
        // Type 1: a zero-length bind leaves the window unbound, new key.
        unbind_window(mw);
        mw.key = key;
        tags_[index] = static_cast<uint8_t>(OHCA_KEY_TAG(key));
        return {};
    }
    const uint32_t lkey = le(w.mr_lkey);
    const uint32_t mr_index = OHCA_KEY_INDEX(lkey);
    if (mr_index == 0 || mr_index >= slots_.size() || !slots_[mr_index].mr) {
        return {OHCA_CQE_MW_BIND_ERR, OHCA_VERR_BAD_LKEY};
    }
    Mr &mr = *slots_[mr_index].mr;
    if (mr.key != lkey || !mr.valid || mr.physical) {
        return {OHCA_CQE_MW_BIND_ERR, OHCA_VERR_BAD_LKEY};
    }
    if (mr.pdn != qp.pdn) {
        return {OHCA_CQE_MW_BIND_ERR, OHCA_VERR_LKEY_PD};
    }
    const bool writes = (access & (OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_ATOMIC)) != 0;
    if ((mr.access & OHCA_ACCESS_MW_BIND) == 0 ||
        (writes && (mr.access & OHCA_ACCESS_LOCAL_WRITE) == 0)) {
        return {OHCA_CQE_MW_BIND_ERR, OHCA_VERR_LKEY_ACCESS};
    }
    if (addr + (length - 1) < addr || addr < mr.iova || addr - mr.iova > mr.length ||
        length > mr.length - (addr - mr.iova)) {
        return {OHCA_CQE_MW_BIND_ERR, OHCA_VERR_LKEY_BOUNDS};
    }
    unbind_window(mw); // type 1: the old binding and key end here
    mw.bound = true;
    mw.key = key;
    mw.mr_index = mr_index;
    mw.mr_key = lkey;
    mw.addr = addr;
    mw.length = length;
    mw.access = access & ~uint32_t{OHCA_ACCESS_LOCAL_WRITE};
    ++mr.windows;
    if (mw.type == OHCA_MW_TYPE_2) {
        mw.qpn = qp.qpn;
        if (Qp *q = links_.find_qp(qp.qpn)) {
            ++q->windows;
        }
    }
    tags_[index] = static_cast<uint8_t>(OHCA_KEY_TAG(key));
    return {};
}

KeyResult MemoryKeys::check_window(const Qp &qp, const Mw &mw, uint32_t key, uint64_t va,
                                   uint64_t len, uint32_t access) const {
    if (mw.key != key || !mw.bound) {
        return {OHCA_VERR_BAD_LKEY, nullptr};
    }
    if (mw.pdn != qp.pdn || (mw.type == OHCA_MW_TYPE_2 && mw.qpn != qp.qpn)) {
        return {OHCA_VERR_LKEY_PD, nullptr};
    }
    if ((mw.access & access) != access) {
        return {OHCA_VERR_LKEY_ACCESS, nullptr};
    }
    if (len != 0 && (va + (len - 1) < va || va < mw.addr || va - mw.addr > mw.length ||
                     len > mw.length - (va - mw.addr))) {
        return {OHCA_VERR_LKEY_BOUNDS, nullptr};
    }
    // The MR underneath must still hold the translation the window was
    // bound to (a fast-registration MR may have been invalidated since).
    const Mr *mr = slots_[mw.mr_index].mr.get();
    if (mr == nullptr || mr->key != mw.mr_key || !mr->valid) {
        return {OHCA_VERR_MR_STATE, nullptr};
    }
    const KeyResult in_mr = check_key(mr->key, va, len, 0, mr->pdn);
    return in_mr;
}

KeyResult MemoryKeys::check_rkey(const Qp &qp, uint32_t key, uint64_t va, uint64_t len,
                                 uint32_t access) const {
    const uint32_t index = OHCA_KEY_INDEX(key);
    if (index != 0 && index < slots_.size() && slots_[index].mw) {
        return check_window(qp, *slots_[index].mw, key, va, len, access);
    }
    return check_key(key, va, len, access, qp.pdn);
}

uint8_t MemoryKeys::invalidate_window(Mw &mw, uint32_t key, const Qp &qp, bool remote) {
    // IBTA o10-37.2.26: only type 2 windows are invalidated by key.
    if (mw.type != OHCA_MW_TYPE_2 || mw.key != key || !mw.bound) {
        return OHCA_VERR_MR_STATE;
    }
    if (mw.pdn != qp.pdn) {
        return OHCA_VERR_LKEY_PD;
    }
    // Type 2B: a remote invalidation comes through the window's own QP.
    if (remote && mw.qpn != qp.qpn) {
        return OHCA_VERR_MR_STATE;
    }
    unbind_window(mw);
    return OHCA_VERR_NONE;
}

} // namespace ohca
