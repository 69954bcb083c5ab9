// SPDX-License-Identifier: GPL-2.0-or-later
// A page list copied from guest memory at object creation (struct ohca_pbl,
// levels 1 and 2), and the translation of byte offsets through it.
#pragma once

#include "device/host.hpp"
#include "state/stream.hpp"

#include <ohca/ohca_cmd.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace ohca {

class PageList {
  public:
    enum class Error { None, Field, Dma, NoResources };
    struct LoadResult {
        Error error = Error::None;
        uint32_t field = 0; // offset within struct ohca_pbl for Field
    };

    // Validates the descriptor and copies the page addresses. 'min_bytes'
    // is the size the pages must cover, and npages must be exactly the
    // pages that takes: host memory follows the object's size, never the
    // guest's npages. More than 'max_entries' pages is NoResources (the
    // device's budget of page-list entries).
    LoadResult load(const Host &host, const ohca_pbl &pbl, uint64_t min_bytes,
                    uint64_t max_entries = static_cast<uint64_t>(OHCA_PBL_MAX_PAGES));

    // Pages a buffer of 'bytes' takes in pages of 2^shift bytes.
    [[nodiscard]] static uint64_t pages_for(uint64_t bytes, unsigned int shift) {
        return (bytes >> shift) + ((bytes & ((uint64_t{1} << shift) - 1)) != 0 ? 1 : 0);
    }
    // Host memory the copied list takes (what the device budget counts).
    [[nodiscard]] uint64_t host_bytes() const { return pages_.size() * sizeof(uint64_t); }

    [[nodiscard]] unsigned int page_shift() const { return shift_; }
    [[nodiscard]] uint64_t page_size() const { return uint64_t{1} << shift_; }
    [[nodiscard]] uint64_t bytes() const { return uint64_t{pages_.size()} << shift_; }
    [[nodiscard]] size_t npages() const { return pages_.size(); }

    // Bus address of byte 'offset'; nullopt beyond the list.
    [[nodiscard]] std::optional<uint64_t> translate(uint64_t offset) const {
        uint64_t a = 0;
        return translate(offset, a) ? std::optional<uint64_t>(a) : std::nullopt;
    }
    // The same without std::optional (on every DMA of the data path: an
    // optional returned through memory costs a store-forwarding stall).
    [[nodiscard]] bool translate(uint64_t offset, uint64_t &addr) const {
        const uint64_t idx = offset >> shift_;
        if (idx >= pages_.size()) {
            return false;
        }
        addr = pages_[idx] + (offset & (page_size() - 1));
        return true;
    }

    // Copies len bytes at 'offset' (may span pages). False on any failure.
    bool read(const Host &host, uint64_t offset, void *buf, size_t len) const;
    bool write(const Host &host, uint64_t offset, const void *buf, size_t len) const;
    // Host::write_ordered at 'offset'; a range that crosses a page is
    // written in pieces, the bytes [last_off, last_off + last_len) last.
    bool write_ordered(const Host &host, uint64_t offset, const void *buf, size_t len,
                       size_t last_off, size_t last_len) const;

    // Saved and loaded with its object (state/stream.hpp). A loaded list
    // has a valid page shift, aligned pages, exactly the pages 'min_bytes'
    // takes (0: any number) and at most 'max_entries' (the device's budget
    // left).
    void save(state::Writer &w) const;
    void load(state::Reader &r, uint64_t min_bytes, uint64_t max_entries);

  private:
    unsigned int shift_ = 12;
    std::vector<uint64_t> pages_;
};

} // namespace ohca
