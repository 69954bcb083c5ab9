// SPDX-License-Identifier: GPL-2.0-or-later
// On-demand paging: ODP MR translations (OdpPages), the outstanding page
// faults (OdpFaults), and the keys' side: the access check that raises
// a fault (MemoryKeys::odp_touch), QPs waiting for one, and the ODP_MAP and
// ODP_UNMAP commands. Programming manual section 19, docs/odp.md.
#include "objects/odp.hpp"

#include "device/command.hpp"
#include "link/byte_order.hpp"
#include "objects/keys.hpp"

#include <algorithm>

namespace ohca {

// ---- OdpPages -------------------------------------------------------------------

namespace {
constexpr uint64_t kChunk = OHCA_ODP_CHUNK_PAGES;
} // namespace

uint64_t OdpPages::pte(uint64_t page) const {
    const auto it = chunks_.find(page / kChunk);
    return it == chunks_.end() ? 0 : it->second->pte[page % kChunk];
}

uint32_t OdpPages::chunks_needed(uint64_t first, uint64_t n) const {
    uint32_t need = 0;
    if (n == 0) {
        return 0;
    }
    for (uint64_t c = first / kChunk; c <= (first + n - 1) / kChunk; ++c) {
        need += chunks_.contains(c) ? 0 : 1;
    }
    return need;
}

void OdpPages::set(uint64_t page, uint64_t pte) {
    auto &c = chunks_[page / kChunk];
    if (!c) {
        c = std::make_unique<Chunk>();
    }
    uint64_t &e = c->pte[page % kChunk];
    if ((e & OHCA_ODP_PTE_VALID) == 0) {
        ++c->valid;
    } else if ((e & OHCA_ODP_PTE_WRITE) != 0) {
        --c->writable;
    }
    if ((pte & OHCA_ODP_PTE_WRITE) != 0) {
        ++c->writable;
    }
    e = pte;
}

uint32_t OdpPages::clear(uint64_t first, uint64_t n) {
    uint32_t freed = 0;
    if (n == 0) {
        return 0;
    }
    const uint64_t last = first + n - 1 < first ? ~uint64_t{0} : first + n - 1;
    for (auto it = chunks_.begin(); it != chunks_.end();) {
        const uint64_t base = it->first * kChunk;
        if (base + kChunk - 1 < first || base > last) {
            ++it;
            continue;
        }
        const uint64_t lo = std::max(first, base) - base;
        const uint64_t hi = std::min(last, base + kChunk - 1) - base;
        Chunk &c = *it->second;
        for (uint64_t i = lo; i <= hi; ++i) {
            if ((c.pte[i] & OHCA_ODP_PTE_VALID) != 0) {
                --c.valid;
                if ((c.pte[i] & OHCA_ODP_PTE_WRITE) != 0) {
                    --c.writable;
                }
            }
            c.pte[i] = 0;
        }
        if (c.valid == 0) {
            it = chunks_.erase(it);
            ++freed;
        } else {
            ++it;
        }
    }
    return freed;
}

bool OdpPages::first_missing(uint64_t va, uint64_t len, bool write, uint64_t &page,
                             uint64_t &steps) const {
    if (len == 0) {
        return false;
    }
    // One lookup per chunk, its pages looked at only when some are not
    // there: a chunk inside the range that is not full holds the page
    // looked for, so at most three chunks are walked page by page.
    const uint64_t last = (va + (len - 1)) >> shift_;
    uint64_t p = va >> shift_;
    while (true) {
        ++steps;
        const auto it = chunks_.find(p / kChunk);
        if (it == chunks_.end()) {
            page = p;
            return true;
        }
        const uint64_t end = std::min(last, (p / kChunk) * kChunk + kChunk - 1);
        const Chunk &c = *it->second;
        if ((write ? c.writable : c.valid) != kChunk) {
            for (; p <= end; ++p) {
                ++steps;
                const uint64_t e = c.pte[p % kChunk];
                if ((e & OHCA_ODP_PTE_VALID) == 0 || (write && (e & OHCA_ODP_PTE_WRITE) == 0)) {
                    page = p;
                    return true;
                }
            }
        }
        if (end == last) {
            return false;
        }
        p = end + 1;
    }
}

// ---- OdpFaults ------------------------------------------------------------------

OdpFaults::Fault *OdpFaults::find(uint32_t key, uint64_t page) {
    for (Fault &f : faults_) {
        if (f.key == key && page >= f.first && page <= f.last) {
            return &f;
        }
    }
    return nullptr;
}

OdpFaults::Fault *OdpFaults::add(uint32_t key, uint64_t first, uint64_t last, uint64_t now_ns,
                                 uint64_t from, bool write) {
    if (faults_.size() >= max_) {
        // A failed fault nobody came back for gives way to a new one.
        const auto it =
            std::find_if(faults_.begin(), faults_.end(), [](const Fault &f) { return f.failed; });
        if (it == faults_.end()) {
            return nullptr;
        }
        faults_.erase(it);
    }
    faults_.push_back(Fault{key, first, last, false, now_ns, from, write});
    return &faults_.back();
}

bool OdpFaults::waiting(uint32_t key, uint64_t first, uint64_t last, bool write, uint64_t now_ns,
                        uint64_t max_age_ns) const {
    return std::any_of(faults_.begin(), faults_.end(), [&](const Fault &f) {
        return f.key == key && !f.failed && (f.write || !write) && f.from <= first &&
               first <= f.first && f.first <= last && now_ns - f.posted_ns < max_age_ns;
    });
}

void OdpFaults::remove(const Fault *f) {
    faults_.erase(faults_.begin() + (f - faults_.data()));
}

size_t OdpFaults::resolve(uint32_t key, uint64_t first, uint64_t last, bool fail) {
    size_t n = 0;
    for (auto it = faults_.begin(); it != faults_.end();) {
        if (it->key == key && it->first <= last && first <= it->last) {
            ++n;
            if (fail) {
                it->failed = true;
            } else {
                it = faults_.erase(it);
                continue;
            }
        }
        ++it;
    }
    return n;
}

void OdpFaults::drop_key(uint32_t key) {
    std::erase_if(faults_, [key](const Fault &f) { return f.key == key; });
}

// ---- the keys' side -----------------------------------------------------------------

OdpState MemoryKeys::odp_touch(const Mr &mr, uint64_t va, uint64_t len, bool write) {
    if (!mr.odp || len == 0) {
        return OdpState::Resident;
    }
    const OdpPages &pages = *mr.odp;
    const uint64_t from = va >> pages.shift();
    const uint64_t last_page = (va + (len - 1)) >> pages.shift();
    // Asked again while its fault is pending (a resend, a retry): no walk.
    if (odp_faults_.size() != 0 &&
        odp_faults_.waiting(mr.key, from, last_page, write, host_.now_ns(),
                            DeviceLimits::odp_fault_repost_ns)) {
        return OdpState::Pending;
    }
    uint64_t page = 0;
    uint64_t steps = 0;
    const bool missing = pages.first_missing(va, len, write, page, steps);
    odp_walk_steps_ += steps;
    if (!missing) {
        return OdpState::Resident;
    }
    const uint64_t now = host_.now_ns();
    if (OdpFaults::Fault *f = odp_faults_.find(mr.key, page)) {
        if (f->failed) {
            odp_faults_.remove(f);
            return OdpState::Failed;
        }
        // A fault the driver never answered (its event lost) is posted
        // again once it is this old, so a waiting QP does not wait for
        // ever.
        if (now - f->posted_ns < DeviceLimits::odp_fault_repost_ns) {
            return OdpState::Pending;
        }
        odp_faults_.remove(f);
    }
    // A fault is posted on EQ 0 only while it is less than half full (as
    // a peer's QP events): a peer's requests cause faults too. Without a
    // post the access still waits; it faults again when retried.
    if (!links_.fault_event_room()) {
        ++stats_.odp_faults_dropped;
        return OdpState::Pending;
    }
    const uint64_t n = std::min<uint64_t>(last_page - page + 1, OHCA_ODP_MAP_MAX_PAGES);
    if (odp_faults_.add(mr.key, page, page + n - 1, now, from, write) == nullptr) {
        ++stats_.odp_faults_dropped;
        return OdpState::Pending;
    }
    ++stats_.odp_faults;
    const uint64_t addr = page << pages.shift();
    events_.post_event(
        OHCA_EQE_PAGE_FAULT,
        static_cast<uint16_t>((write ? OHCA_PF_WRITE : 0) | static_cast<uint32_t>(n)), mr.key,
        static_cast<uint32_t>(addr), static_cast<uint32_t>(addr >> 32));
    return OdpState::Pending;
}

void MemoryKeys::odp_wait(Qp &qp) {
    if (!qp.odp_wait) {
        qp.odp_wait = true;
        // A QP reset while waiting leaves its entry behind: drop those
        // (and duplicates) before the list outgrows the QPs.
        if (odp_waiters_.size() >= max_qp_) {
            std::sort(odp_waiters_.begin(), odp_waiters_.end());
            odp_waiters_.erase(std::unique(odp_waiters_.begin(), odp_waiters_.end()),
                               odp_waiters_.end());
            std::erase_if(odp_waiters_, [this](uint32_t qpn) {
                const Qp *q = links_.find_qp(qpn);
                return q == nullptr || !q->odp_wait;
            });
        }
        odp_waiters_.push_back(qp.qpn);
    }
}

// Every QP waiting for a fault goes on: the one it waited for may be among
// those just resolved; one still missing a page faults again. At most one
// entry per QP (odp_wait), so this is bounded by max_qp.
void MemoryKeys::odp_wake() {
    std::vector<uint32_t> waiters;
    waiters.swap(odp_waiters_);
    for (const uint32_t qpn : waiters) {
        Qp *qp = links_.find_qp(qpn);
        if (qp != nullptr && qp->odp_wait) {
            qp->odp_wait = false;
            links_.odp_resume(*qp);
        }
    }
}

namespace {
// The ODP MR a command names, and the page range [first, first + n) it
// gives, inside the MR.
struct OdpRange {
    Mr *mr = nullptr;
    uint64_t first = 0;
    uint64_t n = 0;
};
} // namespace

CmdResult MemoryKeys::cmd_odp_map(const Command &cmd) {
    const auto in = cmd.input<ohca_odp_map_in>();
    const uint32_t key = le(in.key);
    const uint32_t flags = le(in.flags);
    const uint64_t va = le(in.va);
    const uint32_t npages = le(in.npages);
    Mr *found = mr_by_key(key);
    if (found == nullptr || !found->odp) {
        return {OHCA_STATUS_BAD_HANDLE, key};
    }
    Mr &mr = *found;
    if ((flags & ~uint32_t{OHCA_ODP_MAP_FAIL}) != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_odp_map_in, flags)};
    }
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_odp_map_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    const bool fail = (flags & OHCA_ODP_MAP_FAIL) != 0;
    const uint64_t psize = mr.odp->page_size();
    if ((va & (psize - 1)) != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_odp_map_in, va)};
    }
    if (npages == 0 || (!fail && npages > OHCA_ODP_MAP_MAX_PAGES)) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_odp_map_in, npages)};
    }
    const size_t want = sizeof(ohca_odp_map_in) + (fail ? 0 : size_t{npages} * sizeof(uint64_t));
    if (cmd.in_len != want) {
        return {OHCA_STATUS_BAD_LEN, static_cast<uint32_t>(want)};
    }
    // Inside the MR: [va, va + npages pages) within [iova, iova + length)
    // rounded out to whole pages.
    const uint64_t shift = mr.odp->shift();
    const uint64_t first = va >> shift;
    const uint64_t mr_first = mr.iova >> shift;
    const uint64_t mr_last = (mr.iova + (mr.length - 1)) >> shift;
    if (first < mr_first || first > mr_last || npages - 1 > mr_last - first) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_odp_map_in, va)};
    }
    if (!fail) {
        std::array<uint64_t, OHCA_ODP_MAP_MAX_PAGES> pte{};
        std::memcpy(pte.data(), cmd.in.data() + sizeof(ohca_odp_map_in),
                    size_t{npages} * sizeof(uint64_t));
        for (uint32_t i = 0; i < npages; ++i) {
            const uint64_t e = le(pte[i]);
            const uint64_t bits = OHCA_ODP_PTE_VALID | OHCA_ODP_PTE_WRITE;
            if ((e & OHCA_ODP_PTE_VALID) != 0 && (e & (psize - 1) & ~bits) != 0) {
                return {OHCA_STATUS_BAD_FIELD,
                        static_cast<uint32_t>(sizeof(ohca_odp_map_in) + i * sizeof(uint64_t))};
            }
            pte[i] = e;
        }
        const uint32_t need = mr.odp->chunks_needed(first, npages);
        if (need > DeviceLimits::max_odp_chunks - odp_chunks_) {
            return {OHCA_STATUS_NO_RESOURCES, 0};
        }
        const uint32_t before = mr.odp->chunks();
        for (uint32_t i = 0; i < npages; ++i) {
            if ((pte[i] & OHCA_ODP_PTE_VALID) != 0) {
                mr.odp->set(first + i, pte[i]);
            }
        }
        odp_chunks_ += mr.odp->chunks() - before;
    }
    odp_faults_.resolve(key, first, first + npages - 1, fail);
    odp_wake();
    return {};
}

CmdResult MemoryKeys::cmd_odp_unmap(const Command &cmd) {
    const auto in = cmd.input<ohca_odp_unmap_in>();
    const uint32_t key = le(in.key);
    const uint64_t va = le(in.va);
    const uint64_t npages = le(in.npages);
    Mr *found = mr_by_key(key);
    if (found == nullptr || !found->odp) {
        return {OHCA_STATUS_BAD_HANDLE, key};
    }
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_odp_unmap_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    Mr &mr = *found;
    const uint64_t shift = mr.odp->shift();
    if ((va & (mr.odp->page_size() - 1)) != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_odp_unmap_in, va)};
    }
    const uint64_t first = va >> shift;
    const uint64_t mr_first = mr.iova >> shift;
    const uint64_t mr_last = (mr.iova + (mr.length - 1)) >> shift;
    if (npages == 0 || first < mr_first || first > mr_last || npages - 1 > mr_last - first) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_odp_unmap_in, npages)};
    }
    // The engine's DMA is synchronous (every access completes inside the
    // call that makes it), so once the entries are gone nothing uses the
    // pages: the command's completion is the driver's guarantee.
    odp_chunks_ -= mr.odp->clear(first, npages);
    return {};
}

} // namespace ohca

namespace ohca {

// CREATE_MR with OHCA_MR_F_ODP: no page list, every translation invalid.
CmdResult MemoryKeys::init_odp_mr(const ohca_create_mr_in &in, Mr &mr) {
    const bool implicit = (le(in.flags) & OHCA_MR_F_IMPLICIT) != 0;
    const uint64_t iova = le(in.iova);
    const uint64_t length = le(in.length);
    const unsigned int shift = in.pbl.page_shift;
    if (shift < OHCA_PAGE_SHIFT_MIN || shift > OHCA_PAGE_SHIFT_MAX ||
        ((uint64_t{1} << shift) & DeviceLimits::page_size_cap) == 0) {
        return {OHCA_STATUS_BAD_FIELD,
                offsetof(ohca_create_mr_in, pbl) + offsetof(ohca_pbl, page_shift)};
    }
    if (le(in.pbl.addr) != 0 || le(in.pbl.npages) != 0 || in.pbl.levels != 0 ||
        le(in.pbl.rsvd) != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_mr_in, pbl)};
    }
    if (implicit) {
        if (iova != 0 || length != 0) {
            return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_mr_in, iova)};
        }
        mr.iova = 0;
        mr.length = ~uint64_t{0};
    } else {
        if (length == 0 || length > DeviceLimits::max_mr_size) {
            return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_mr_in, length)};
        }
        if (iova + (length - 1) < iova) {
            return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_mr_in, iova)};
        }
        mr.iova = iova;
        mr.length = length;
    }
    mr.implicit = implicit;
    mr.odp = std::make_unique<OdpPages>(shift);
    return {};
}

void MemoryKeys::odp_mr_destroyed(const Mr &mr) {
    if (mr.odp) {
        --odp_mrs_;
        odp_chunks_ -= mr.odp->chunks();
        odp_faults_.drop_key(mr.key);
    }
}

} // namespace ohca
