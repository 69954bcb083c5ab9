// SPDX-License-Identifier: GPL-2.0-or-later
#include "objects/page_list.hpp"

#include "link/byte_order.hpp"

#include <algorithm>
#include <array>
#include <cstddef>

namespace ohca {

PageList::LoadResult PageList::load(const Host &host, const ohca_pbl &pbl, uint64_t min_bytes,
                                    uint64_t max_entries) {
    const uint64_t addr = le(pbl.addr);
    const uint32_t npages = le(pbl.npages);
    const unsigned int shift = pbl.page_shift;
    if (shift < OHCA_PAGE_SHIFT_MIN || shift > OHCA_PAGE_SHIFT_MAX) {
        return {Error::Field, offsetof(ohca_pbl, page_shift)};
    }
    if (pbl.levels != 1 && pbl.levels != 2) {
        return {Error::Field, offsetof(ohca_pbl, levels)};
    }
    if (le(pbl.rsvd) != 0) {
        return {Error::Field, offsetof(ohca_pbl, rsvd)};
    }
    const uint32_t max = pbl.levels == 1 ? OHCA_PBL_ENTRIES_PER_PAGE : OHCA_PBL_MAX_PAGES;
    // Exactly the pages the object needs: fewer cannot hold it, more would
    // make the device keep host memory for pages nothing can reach.
    if (npages == 0 || npages > max ||
        npages != pages_for(std::max<uint64_t>(min_bytes, 1), shift)) {
        return {Error::Field, offsetof(ohca_pbl, npages)};
    }
    if (npages > max_entries) {
        return {Error::NoResources, 0};
    }
    if (addr == 0 || addr % 8 != 0) {
        return {Error::Field, offsetof(ohca_pbl, addr)};
    }
    std::vector<uint64_t> pages(npages);
    auto read_entries = [&](uint64_t at, uint64_t *dst, size_t n) {
        if (!host.read(at, dst, n * sizeof(uint64_t))) {
            return false;
        }
        for (size_t i = 0; i < n; ++i) {
            dst[i] = le(dst[i]);
        }
        return true;
    };
    if (pbl.levels == 1) {
        if (!read_entries(addr, pages.data(), npages)) {
            return {Error::Dma, 0};
        }
    } else {
        const size_t nl1 = (npages + OHCA_PBL_ENTRIES_PER_PAGE - 1) / OHCA_PBL_ENTRIES_PER_PAGE;
        std::vector<uint64_t> l1(nl1);
        if (!read_entries(addr, l1.data(), nl1)) {
            return {Error::Dma, 0};
        }
        for (size_t i = 0; i < nl1; ++i) {
            if (l1[i] == 0 || l1[i] % 4096 != 0) {
                return {Error::Field, offsetof(ohca_pbl, addr)};
            }
            const size_t n =
                std::min<size_t>(OHCA_PBL_ENTRIES_PER_PAGE, npages - i * OHCA_PBL_ENTRIES_PER_PAGE);
            if (!read_entries(l1[i], pages.data() + i * OHCA_PBL_ENTRIES_PER_PAGE, n)) {
                return {Error::Dma, 0};
            }
        }
    }
    const uint64_t psize = uint64_t{1} << shift;
    for (uint64_t p : pages) {
        if (p % psize != 0 || p + (psize - 1) < p) {
            return {Error::Field, offsetof(ohca_pbl, addr)};
        }
    }
    shift_ = shift;
    pages_ = std::move(pages);
    return {};
}

void PageList::save(state::Writer &w) const {
    w.u8(static_cast<uint8_t>(shift_));
    w.u32(static_cast<uint32_t>(pages_.size()));
    for (const uint64_t p : pages_) {
        w.u64(p);
    }
}

void PageList::load(state::Reader &r, uint64_t min_bytes, uint64_t max_entries) {
    const unsigned int shift = r.u8();
    if (r.ok() && (shift < OHCA_PAGE_SHIFT_MIN || shift > OHCA_PAGE_SHIFT_MAX)) {
        r.fail("page list: bad page shift");
        return;
    }
    const uint32_t n = r.count(OHCA_PBL_MAX_PAGES, sizeof(uint64_t), "page list entries");
    if (!r.ok()) {
        return;
    }
    if (min_bytes != 0 && n != pages_for(min_bytes, shift)) {
        r.fail("page list: not the pages its object takes");
        return;
    }
    if (n > max_entries) {
        r.fail("page lists beyond the device's budget");
        return;
    }
    const uint64_t psize = uint64_t{1} << shift;
    std::vector<uint64_t> pages(n);
    for (uint64_t &p : pages) {
        p = r.u64();
        if (r.ok() && (p % psize != 0 || p + (psize - 1) < p)) {
            r.fail("page list: a page is not aligned");
            return;
        }
    }
    if (r.ok()) {
        shift_ = shift;
        pages_ = std::move(pages);
    }
}

bool PageList::read(const Host &host, uint64_t offset, void *buf, size_t len) const {
    auto *p = static_cast<uint8_t *>(buf);
    while (len > 0) {
        uint64_t a = 0;
        if (!translate(offset, a)) {
            return false;
        }
        const size_t n = static_cast<size_t>(
            std::min<uint64_t>(len, page_size() - (offset & (page_size() - 1))));
        if (!host.read(a, p, n)) {
            return false;
        }
        p += n;
        offset += n;
        len -= n;
    }
    return true;
}

bool PageList::write_ordered(const Host &host, uint64_t offset, const void *buf, size_t len,
                             size_t last_off, size_t last_len) const {
    uint64_t a = 0;
    if (len != 0 && (offset & (page_size() - 1)) + len <= page_size() && translate(offset, a)) {
        return host.write_ordered(a, buf, len, last_off, last_len);
    }
    if (last_off > len || last_len > len - last_off) {
        return false;
    }
    const auto *p = static_cast<const uint8_t *>(buf);
    const size_t after = last_off + last_len;
    return write(host, offset, p, last_off) &&
           write(host, offset + after, p + after, len - after) &&
           write(host, offset + last_off, p + last_off, last_len);
}

bool PageList::write(const Host &host, uint64_t offset, const void *buf, size_t len) const {
    const auto *p = static_cast<const uint8_t *>(buf);
    while (len > 0) {
        uint64_t a = 0;
        if (!translate(offset, a)) {
            return false;
        }
        const size_t n = static_cast<size_t>(
            std::min<uint64_t>(len, page_size() - (offset & (page_size() - 1))));
        if (!host.write(a, p, n)) {
            return false;
        }
        p += n;
        offset += n;
        len -= n;
    }
    return true;
}

} // namespace ohca
