// SPDX-License-Identifier: GPL-2.0-or-later
// On-demand paging (programming manual section 19): the translations of an
// ODP MR, stored sparsely by what the driver mapped, and the device's table
// of outstanding page faults.
#pragma once

#include "state/stream.hpp"

#include <ohca/ohca_cmd.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

namespace ohca {

// One ODP MR's translations: page number (address >> shift, so explicit
// and implicit MRs index alike) to a PTE (bus address | OHCA_ODP_PTE_*),
// in chunks of OHCA_ODP_CHUNK_PAGES aligned pages, allocated when the
// driver maps a page in them and freed when their last page is unmapped.
// An MR covering the whole address space costs what is mapped, not its
// length.
class OdpPages {
  public:
    explicit OdpPages(unsigned int shift) : shift_(shift) {}
    [[nodiscard]] unsigned int shift() const { return shift_; }
    [[nodiscard]] uint64_t page_size() const { return uint64_t{1} << shift_; }
    [[nodiscard]] uint64_t pte(uint64_t page) const;
    // Chunks the pages [first, first + n) would add (for the budget).
    [[nodiscard]] uint32_t chunks_needed(uint64_t first, uint64_t n) const;
    void set(uint64_t page, uint64_t pte);
    // Removes [first, first + n) by walking the chunks present, not the
    // range; returns the chunks freed.
    uint32_t clear(uint64_t first, uint64_t n);
    [[nodiscard]] uint32_t chunks() const { return static_cast<uint32_t>(chunks_.size()); }
    // The chunks in order of their index (objects/keys_snapshot.cpp). A
    // loaded one lies in pages [first, last], has a valid entry, and each
    // entry is one ODP_MAP could have set; at most 'max_chunks' of them.
    void save(state::Writer &w) const;
    void load(state::Reader &r, uint64_t first, uint64_t last, uint32_t max_chunks);
    // The first page of [va, va + len) that is not valid (or not writable
    // with 'write'); nullopt-like: returns false when all are. A chunk
    // whose pages are all there is passed in one step, so the walk takes
    // at most a step per chunk present plus the pages of three chunks (the
    // two ends and the one with the missing page), whatever 'len' is;
    // 'steps' counts them.
    bool first_missing(uint64_t va, uint64_t len, bool write, uint64_t &page,
                       uint64_t &steps) const;
    // DMA through the translations: the callback gets (bus address, bytes).
    template <class F> bool walk(uint64_t va, size_t len, bool write, F &&f) const {
        size_t done = 0;
        while (done < len) {
            const uint64_t a = va + done;
            const uint64_t p = pte(a >> shift_);
            if ((p & OHCA_ODP_PTE_VALID) == 0 || (write && (p & OHCA_ODP_PTE_WRITE) == 0)) {
                return false;
            }
            const uint64_t off = a & (page_size() - 1);
            const size_t n = static_cast<size_t>(std::min<uint64_t>(page_size() - off, len - done));
            if (!f((p & ~(page_size() - 1)) + off, done, n)) {
                return false;
            }
            done += n;
        }
        return true;
    }

  private:
    struct Chunk {
        std::array<uint64_t, OHCA_ODP_CHUNK_PAGES> pte{};
        uint32_t valid = 0;
        uint32_t writable = 0; // of the valid ones
    };
    unsigned int shift_;
    std::unordered_map<uint64_t, std::unique_ptr<Chunk>> chunks_;
};

enum class OdpState {
    Resident, // every page has a translation: go on
    Pending,  // a fault is outstanding: wait (requester) or RNR NAK (responder)
    Failed,   // the driver could not resolve it: the access fails
};

// Outstanding page faults of the whole device: at most max_odp_faults, so
// what guests and peers can make the device remember, and the events it
// posts for them, stay bounded. A fault is pending from its event until
// ODP_MAP (or ODP_MAP with FAIL) names its range; a failed one is kept
// until the access that waits for it sees it (or its MR goes).
class OdpFaults {
  public:
    struct Fault {
        uint32_t key = 0;
        uint64_t first = 0; // pages [first, last]
        uint64_t last = 0;
        bool failed = false;
        uint64_t posted_ns = 0; // when its event was posted
        // The access that raised it: its pages [from, first) were there
        // ('write': writable) when it was posted.
        uint64_t from = 0;
        bool write = false;
    };
    explicit OdpFaults(size_t max) : max_(max) {}
    [[nodiscard]] Fault *find(uint32_t key, uint64_t page);
    // nullptr when the table is full of pending faults.
    Fault *add(uint32_t key, uint64_t first, uint64_t last, uint64_t now_ns, uint64_t from,
               bool write);
    // Whether an access to pages [first, last] of 'key' waits for a pending
    // fault younger than max_age_ns without a walk: one raised by an access
    // from at most 'first' (no less writable) whose missing page is in the
    // range. The resends of a request that faulted take this path.
    [[nodiscard]] bool waiting(uint32_t key, uint64_t first, uint64_t last, bool write,
                               uint64_t now_ns, uint64_t max_age_ns) const;
    void remove(const Fault *f);
    // ODP_MAP: the faults of 'key' overlapping [first, last] are resolved
    // (removed) or, with 'fail', failed. Returns how many.
    size_t resolve(uint32_t key, uint64_t first, uint64_t last, bool fail);
    void drop_key(uint32_t key); // its MR is gone
    void clear() { faults_.clear(); }
    [[nodiscard]] size_t size() const { return faults_.size(); }
    // Saved and loaded (objects/keys_snapshot.cpp): 'mr_pages' gives the
    // page range of the ODP MR a key names (false: none), which a loaded
    // fault must lie in.
    void save(state::Writer &w) const;
    void load(state::Reader &r,
              const std::function<bool(uint32_t key, uint64_t &first, uint64_t &last)> &mr_pages);

  private:
    size_t max_;
    std::vector<Fault> faults_;
};

} // namespace ohca
