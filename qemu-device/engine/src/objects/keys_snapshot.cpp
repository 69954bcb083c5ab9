// SPDX-License-Identifier: GPL-2.0-or-later
// The memory keys of a saved engine (state/stream.hpp, docs/migration.md):
// the key table (MRs and memory windows with their current keys, handles
// and bindings), the tags every key index had last (so keys from before
// the save still name nothing new after it), and device memory with its
// allocations and contents. Each loaded MR or window passes the checks of
// the command that made it; the counts between them (an MR's windows, an
// allocation's MRs) must match what the loaded objects say.
#include "device/command.hpp"
#include "device/limits.hpp"
#include "objects/keys.hpp"

#include <cstring>

namespace ohca {

// ---- device memory ---------------------------------------------------------------

void DeviceMemory::save(state::Writer &w) const {
    w.bytes(tags_);
    w.u32(live_);
    for (uint32_t s = 1; s <= kMaxAllocs; ++s) {
        const Alloc &a = slots_[s];
        if (a.handle == 0) {
            continue;
        }
        w.u32(s);
        w.u32(a.handle);
        w.u32(a.first);
        w.u32(a.chunks);
        w.u64(a.length);
        w.u32(a.mrs);
        w.bytes({mem_.get() + a.base(), uint64_t{a.chunks} * kChunk});
    }
}

bool DeviceMemory::mrs_match(const std::array<uint32_t, kMaxAllocs + 1> &mrs) const {
    for (uint32_t s = 1; s <= kMaxAllocs; ++s) {
        if (slots_[s].mrs != (slots_[s].handle != 0 ? mrs[s] : 0)) {
            return false;
        }
    }
    return true;
}

void DeviceMemory::load(state::Reader &r) {
    reset();
    r.bytes(tags_);
    const uint32_t n = r.count(kMaxAllocs, 28 + kChunk, "device memory allocations");
    for (uint32_t k = 0; k < n && r.ok(); ++k) {
        const uint32_t s = r.u32();
        Alloc a;
        a.handle = r.u32();
        a.first = r.u32();
        a.chunks = r.u32();
        a.length = r.u64();
        a.mrs = r.u32();
        if (!r.ok()) {
            break;
        }
        if (s == 0 || s > kMaxAllocs || slots_[s].handle != 0 ||
            a.handle != ((s << 8) | tags_[s]) || a.chunks == 0 || a.first >= kChunks ||
            a.chunks > kChunks - a.first || a.length == 0 ||
            (a.length + kChunk - 1) / kChunk != a.chunks) {
            r.fail("device memory: bad or repeated allocation");
            break;
        }
        for (uint32_t c = a.first; c < a.first + a.chunks; ++c) {
            if (owner_[c] != 0) {
                r.fail("device memory: allocations overlap");
                break;
            }
            owner_[c] = static_cast<uint8_t>(s);
        }
        r.bytes({mem_.get() + a.base(), uint64_t{a.chunks} * kChunk});
        slots_[s] = a;
        ++live_;
    }
    if (!r.ok()) {
        reset();
    }
}

// ---- the key table ---------------------------------------------------------------

namespace {

enum : uint8_t { kSlotMr = 1, kSlotMw = 2 };

void save_mr(state::Writer &w, const Mr &m) {
    w.u32(m.key);
    w.u32(m.handle);
    w.u32(m.pdn);
    w.u32(m.access);
    w.u64(m.iova);
    w.u64(m.length);
    w.boolean(m.physical);
    w.boolean(m.fast_reg);
    w.boolean(m.valid);
    w.u32(m.capacity);
    m.pages.save(w);
    w.u32(m.windows);
    w.u32(m.dm_handle);
    w.u64(m.dm_base);
}

void save_mw(state::Writer &w, const Mw &m) {
    w.u8(m.type);
    w.u32(m.pdn);
    w.u32(m.key);
    w.u32(m.handle);
    w.boolean(m.bound);
    w.u32(m.qpn);
    w.u32(m.mr_index);
    w.u32(m.mr_key);
    w.u64(m.addr);
    w.u64(m.length);
    w.u32(m.access);
}

} // namespace

bool MemoryKeys::save(state::Writer &w, std::string &why) const {
    if (odp_mrs_ != 0) {
        why = "on-demand paging MRs cannot be saved yet (docs/migration.md)";
        return false;
    }
    w.bytes(tags_);
    dm_.save(w);
    w.u32(mr_count_ + mw_count_);
    for (uint32_t i = 1; i < slots_.size(); ++i) {
        if (const Mr *mr = slots_[i].mr.get()) {
            w.u32(i);
            w.u8(kSlotMr);
            save_mr(w, *mr);
        } else if (const Mw *mw = slots_[i].mw.get()) {
            w.u32(i);
            w.u8(kSlotMw);
            save_mw(w, *mw);
        }
    }
    return true;
}

void MemoryKeys::load(state::Reader &r, state::Refs &refs) {
    reset();
    r.bytes(tags_);
    dm_.load(r);
    const uint32_t n = r.count(DeviceLimits::max_keys, 30, "MRs and windows");
    std::array<uint32_t, DeviceMemory::kMaxAllocs + 1> dm_mrs{};
    for (uint32_t k = 0; k < n && r.ok(); ++k) {
        const uint32_t i = r.u32();
        const uint8_t kind = r.u8();
        if (!r.ok()) {
            break;
        }
        if (i == 0 || i >= slots_.size() || slots_[i].mr || slots_[i].mw ||
            (kind != kSlotMr && kind != kSlotMw)) {
            r.fail("key table: bad or repeated index");
            break;
        }
        if (kind == kSlotMr) {
            auto m = std::make_unique<Mr>();
            m->key = r.u32();
            m->handle = r.u32();
            m->pdn = r.u32();
            m->access = r.u32();
            m->iova = r.u64();
            m->length = r.u64();
            m->physical = r.boolean();
            m->fast_reg = r.boolean();
            m->valid = r.boolean();
            m->capacity = r.u32();
            if (!r.ok()) {
                break;
            }
            const bool regular = !m->physical && !m->fast_reg;
            // The pages a regular MR's range takes; a fast-registration
            // MR's registration, at most its capacity; none otherwise.
            const uint64_t room = DeviceLimits::max_pbl_entries - refs.pbl;
            m->pages.load(r, 0, m->fast_reg ? std::min<uint64_t>(m->capacity, room) : room);
            m->windows = r.u32();
            m->dm_handle = r.u32();
            m->dm_base = r.u64();
            if (!r.ok()) {
                break;
            }
            bool ok = OHCA_KEY_INDEX(m->key) == i && OHCA_KEY_INDEX(m->handle) == i &&
                      find_pd(m->pdn) != nullptr &&
                      (m->access & ~(kAccessAll | OHCA_ACCESS_MW_BIND)) == 0;
            if (m->physical) {
                ok = ok && !m->fast_reg && m->dm_handle == 0 && m->iova == 0 &&
                     m->length == ~uint64_t{0} && m->pages.npages() == 0 && m->valid;
            } else if (m->fast_reg) {
                ok = ok && m->dm_handle == 0 && m->capacity != 0 &&
                     m->capacity <= DeviceLimits::max_fast_reg_page_list_len;
            } else if (m->dm_handle != 0) {
                const DeviceMemory::Alloc *a = dm_.find(m->dm_handle);
                ok = ok && a != nullptr && m->iova == 0 && m->pages.npages() == 0 && m->valid &&
                     m->dm_base >= a->base() && m->dm_base - a->base() <= a->length &&
                     m->length <= a->length - (m->dm_base - a->base());
                if (ok) {
                    ++dm_mrs[m->dm_handle >> 8];
                }
            } else {
                const uint64_t first = m->iova & (m->pages.page_size() - 1);
                ok = ok && regular && m->valid && m->length != 0 &&
                     m->length <= DeviceLimits::max_mr_size &&
                     m->iova + (m->length - 1) >= m->iova &&
                     m->pages.npages() ==
                         PageList::pages_for(first + m->length, m->pages.page_shift());
            }
            if (!ok) {
                r.fail("MR: not one its command could have made");
                break;
            }
            refs.pbl += pbl_charge(*m);
            ++refs.pd[m->pdn];
            ++mr_count_;
            slots_[i].mr = std::move(m);
        } else {
            auto m = std::make_unique<Mw>();
            m->type = r.u8();
            m->pdn = r.u32();
            m->key = r.u32();
            m->handle = r.u32();
            m->bound = r.boolean();
            m->qpn = r.u32();
            m->mr_index = r.u32();
            m->mr_key = r.u32();
            m->addr = r.u64();
            m->length = r.u64();
            m->access = r.u32();
            if (!r.ok()) {
                break;
            }
            const bool type2 = m->type == OHCA_MW_TYPE_2;
            if ((m->type != OHCA_MW_TYPE_1 && !type2) || OHCA_KEY_INDEX(m->key) != i ||
                OHCA_KEY_INDEX(m->handle) != i || find_pd(m->pdn) == nullptr ||
                (m->access & ~kAccessAll) != 0 ||
                (m->bound
                     ? m->mr_index == 0 || m->mr_index >= slots_.size() ||
                           (type2 && links_.find_qp(m->qpn) == nullptr) || (!type2 && m->qpn != 0)
                     : m->qpn != 0 || m->mr_index != 0)) {
                r.fail("memory window: not one its commands could have made");
                break;
            }
            ++refs.pd[m->pdn];
            if (m->bound && type2) {
                ++refs.qp_windows[m->qpn];
            }
            ++mw_count_;
            slots_[i].mw = std::move(m);
        }
    }
    if (r.ok() && (mr_count_ > DeviceLimits::max_mr || mw_count_ > DeviceLimits::max_mw)) {
        r.fail("key table: more MRs or windows than the device has");
    }
    // The counts between the keys' own objects.
    std::vector<uint32_t> windows(slots_.size());
    for (uint32_t i = 1; i < slots_.size() && r.ok(); ++i) {
        if (const Mw *m = slots_[i].mw.get(); m != nullptr && m->bound) {
            if (!slots_[m->mr_index].mr) {
                r.fail("memory window: bound to an MR that does not exist");
                break;
            }
            ++windows[m->mr_index];
        }
    }
    for (uint32_t i = 1; i < slots_.size() && r.ok(); ++i) {
        if (const Mr *m = slots_[i].mr.get(); m != nullptr && m->windows != windows[i]) {
            r.fail("MR: its count of windows is off");
        }
    }
    if (r.ok() && !dm_.mrs_match(dm_mrs)) {
        r.fail("device memory: an allocation's count of MRs is off");
    }
    if (!r.ok()) {
        reset();
    }
}

} // namespace ohca
