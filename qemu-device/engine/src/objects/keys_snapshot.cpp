// SPDX-License-Identifier: GPL-2.0-or-later
// The memory keys of a saved engine (state/stream.hpp, docs/migration.md):
// the key table (MRs and memory windows with their current keys, handles
// and bindings), the tags every key index had last (so keys from before
// the save still name nothing new after it), and device memory with its
// allocations and contents, and on-demand paging: an ODP MR's
// translations, the outstanding faults and the QPs waiting for one. Each
// loaded MR or window passes the checks of the command that made it; the
// counts between them (an MR's windows, an allocation's MRs) must match
// what the loaded objects say.
#include "device/command.hpp"
#include "device/limits.hpp"
#include "objects/keys.hpp"

#include <algorithm>
#include <cstring>

namespace ohca {

// ---- on-demand paging --------------------------------------------------------------

namespace {
constexpr uint64_t kOdpChunk = OHCA_ODP_CHUNK_PAGES;
} // namespace

void OdpPages::save(state::Writer &w) const {
    std::vector<uint64_t> order;
    order.reserve(chunks_.size());
    for (const auto &[index, chunk] : chunks_) {
        order.push_back(index);
    }
    std::sort(order.begin(), order.end()); // the same state, the same stream
    w.u32(static_cast<uint32_t>(order.size()));
    for (const uint64_t index : order) {
        w.u64(index);
        for (const uint64_t e : chunks_.at(index)->pte) {
            w.u64(e);
        }
    }
}

void OdpPages::load(state::Reader &r, uint64_t first, uint64_t last, uint32_t max_chunks) {
    const uint32_t n = r.count(max_chunks, 8 + 8 * kOdpChunk, "ODP translation chunks");
    const uint64_t bits = OHCA_ODP_PTE_VALID | OHCA_ODP_PTE_WRITE;
    uint64_t prev = 0;
    for (uint32_t k = 0; k < n && r.ok(); ++k) {
        const uint64_t index = r.u64();
        if (r.ok() &&
            ((k != 0 && index <= prev) || index > last / kOdpChunk || index < first / kOdpChunk)) {
            r.fail("ODP MR: a translation chunk out of order or outside the MR");
            return;
        }
        prev = index;
        bool any = false;
        for (uint64_t i = 0; i < kOdpChunk; ++i) {
            const uint64_t e = r.u64();
            const uint64_t page = index * kOdpChunk + i;
            if (e == 0 || !r.ok()) {
                continue;
            }
            // As ODP_MAP sets them: valid, page aligned, inside the MR.
            if ((e & OHCA_ODP_PTE_VALID) == 0 || (e & (page_size() - 1) & ~bits) != 0 ||
                page < first || page > last) {
                r.fail("ODP MR: a translation ODP_MAP could not have set");
                return;
            }
            set(page, e);
            any = true;
        }
        if (r.ok() && !any) {
            r.fail("ODP MR: an empty translation chunk");
        }
    }
}

void OdpFaults::save(state::Writer &w) const {
    w.u32(static_cast<uint32_t>(faults_.size()));
    for (const Fault &f : faults_) {
        w.u32(f.key);
        w.u64(f.first);
        w.u64(f.last);
        w.boolean(f.failed);
        w.time(f.posted_ns);
        w.u64(f.from);
        w.boolean(f.write);
    }
}

void OdpFaults::load(
    state::Reader &r,
    const std::function<bool(uint32_t key, uint64_t &first, uint64_t &last)> &mr_pages) {
    faults_.clear();
    const uint32_t n = r.count(static_cast<uint32_t>(max_), 38, "ODP page faults");
    for (uint32_t k = 0; k < n && r.ok(); ++k) {
        Fault f;
        f.key = r.u32();
        f.first = r.u64();
        f.last = r.u64();
        f.failed = r.boolean();
        f.posted_ns = r.time();
        f.from = r.u64();
        f.write = r.boolean();
        uint64_t lo = 0;
        uint64_t hi = 0;
        if (r.ok() && (!mr_pages(f.key, lo, hi) || f.first > f.last || f.first < lo ||
                       f.last > hi || f.last - f.first >= OHCA_ODP_MAP_MAX_PAGES ||
                       f.from > f.first || f.from < lo || find(f.key, f.first) != nullptr)) {
            r.fail("ODP page fault: not one an access to an ODP MR could have raised");
        }
        faults_.push_back(f);
    }
    if (!r.ok()) {
        faults_.clear();
    }
}

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
    w.boolean(m.odp != nullptr);
    if (m.odp) {
        w.boolean(m.implicit);
        w.u8(static_cast<uint8_t>(m.odp->shift()));
        m.odp->save(w);
    }
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

void MemoryKeys::save(state::Writer &w) const {
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
    odp_faults_.save(w);
    // Each waiting QP once: a QP reset while it waited leaves a stale entry
    // behind, and one that waits again a second.
    std::vector<uint32_t> waiters = odp_waiters_;
    std::sort(waiters.begin(), waiters.end());
    waiters.erase(std::unique(waiters.begin(), waiters.end()), waiters.end());
    std::erase_if(waiters, [this](uint32_t qpn) {
        const Qp *qp = links_.find_qp(qpn);
        return qp == nullptr || !qp->odp_wait;
    });
    w.u32(static_cast<uint32_t>(waiters.size()));
    for (const uint32_t qpn : waiters) {
        w.u32(qpn);
    }
}

// An ODP MR's fields after those every MR has (version 2 of the section):
// its translations, as CREATE_MR with OHCA_MR_F_ODP and ODP_MAP made them.
// False when the MR is not one those could have made.
bool MemoryKeys::load_odp(state::Reader &r, Mr &m) {
    m.implicit = r.boolean();
    const unsigned int shift = r.u8();
    if (!r.ok()) {
        return false;
    }
    if (shift < OHCA_PAGE_SHIFT_MIN || shift > OHCA_PAGE_SHIFT_MAX ||
        ((uint64_t{1} << shift) & DeviceLimits::page_size_cap) == 0 || m.physical || m.fast_reg ||
        m.dm_handle != 0 || m.pages.npages() != 0 || !m.valid ||
        (m.implicit ? m.iova != 0 || m.length != ~uint64_t{0}
                    : m.length == 0 || m.length > DeviceLimits::max_mr_size ||
                          m.iova + (m.length - 1) < m.iova)) {
        return false;
    }
    m.odp = std::make_unique<OdpPages>(shift);
    m.odp->load(r, m.iova >> shift, (m.iova + (m.length - 1)) >> shift,
                DeviceLimits::max_odp_chunks - odp_chunks_);
    odp_chunks_ += m.odp->chunks();
    ++odp_mrs_;
    return true;
}

void MemoryKeys::load(state::Reader &r, uint16_t version, state::Refs &refs) {
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
            const bool odp = version >= 2 && r.boolean();
            const bool odp_ok = odp && load_odp(r, *m);
            if (!r.ok()) {
                break;
            }
            bool ok = OHCA_KEY_INDEX(m->key) == i && OHCA_KEY_INDEX(m->handle) == i &&
                      find_pd(m->pdn) != nullptr &&
                      (m->access & ~(kAccessAll | OHCA_ACCESS_MW_BIND)) == 0;
            if (odp) {
                ok = ok && odp_ok;
            } else if (m->physical) {
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
    if (version >= 2) {
        odp_faults_.load(r, [this](uint32_t key, uint64_t &first, uint64_t &last) {
            const Mr *m = mr_by_key(key);
            if (m == nullptr || !m->odp) {
                return false;
            }
            first = m->iova >> m->odp->shift();
            last = (m->iova + (m->length - 1)) >> m->odp->shift();
            return true;
        });
        // The QPs waiting for a fault, in increasing order (so each once).
        const uint32_t waiting = r.count(max_qp_ + 2, 4, "QPs waiting for a page fault");
        for (uint32_t k = 0; k < waiting && r.ok(); ++k) {
            const uint32_t qpn = r.u32();
            const Qp *qp = links_.find_qp(qpn);
            if (r.ok() && (qp == nullptr || !qp->odp_wait ||
                           (!odp_waiters_.empty() && qpn <= odp_waiters_.back()))) {
                r.fail("ODP: a waiting QP that does not wait, or out of order");
            }
            odp_waiters_.push_back(qpn);
        }
    }
    if (!r.ok()) {
        reset();
    }
}

} // namespace ohca
