// SPDX-License-Identifier: GPL-2.0-or-later
// Which QPNs of [first, first + count) are taken, and the next free one at
// or after a cursor (wrapping): a bit per QPN and a bit per 64 of them that
// are all taken, so a search looks at a few words, not at every QPN, however
// fragmented the table is (count is at most OHCA_ENGINE_MAX_QP: 16 summary
// words).
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <vector>

namespace ohca {

class QpnAllocator {
  public:
    // Every QPN free.
    void init(uint32_t first, uint32_t count) {
        first_ = first;
        count_ = count;
        const size_t words = (size_t{count} + 63) / 64;
        used_.assign(words, 0);
        full_.assign((words + 63) / 64, 0);
        // The bits past count in the last word are taken for good, the
        // summary bits past the last word full: no search ever finds them.
        if (count % 64 != 0) {
            used_.back() = ~uint64_t{0} << (count % 64);
        }
        if (words % 64 != 0) {
            full_.back() = ~uint64_t{0} << (words % 64);
        }
    }
    void clear() { init(first_, count_); }

    // The first free QPN at or after 'cursor' (any number: taken modulo
    // the range), wrapping round; nullopt when all are taken.
    [[nodiscard]] std::optional<uint32_t> next_free(uint32_t cursor) const {
        if (count_ == 0) {
            return std::nullopt;
        }
        const uint32_t start = (cursor - first_) % count_;
        std::optional<uint32_t> i = find_from(start);
        if (!i && start != 0) {
            i = find_from(0); // what is free now is below start
        }
        if (!i) {
            return std::nullopt;
        }
        return first_ + *i;
    }
    [[nodiscard]] bool taken(uint32_t qpn) const {
        const uint32_t i = qpn - first_;
        return (used_[i / 64] >> (i % 64) & 1) != 0;
    }
    void take(uint32_t qpn) {
        const uint32_t i = qpn - first_;
        uint64_t &w = used_[i / 64];
        w |= uint64_t{1} << (i % 64);
        if (w == ~uint64_t{0}) {
            full_[i / 4096] |= uint64_t{1} << (i / 64 % 64);
        }
    }
    void release(uint32_t qpn) {
        const uint32_t i = qpn - first_;
        used_[i / 64] &= ~(uint64_t{1} << (i % 64));
        full_[i / 4096] &= ~(uint64_t{1} << (i / 64 % 64));
    }
    // Words looked at by the searches so far (tests bound the work).
    [[nodiscard]] uint64_t probes() const { return probes_; }

  private:
    // The first free index >= lo, if any.
    [[nodiscard]] std::optional<uint32_t> find_from(uint32_t lo) const {
        const size_t w = lo / 64;
        ++probes_;
        const uint64_t f = ~used_[w] & (~uint64_t{0} << (lo % 64));
        if (f != 0) {
            return static_cast<uint32_t>(w * 64 + std::countr_zero(f));
        }
        // The next word that is not all taken, from the summary.
        const size_t next = w + 1;
        for (size_t s = next / 64, bit = next % 64; s < full_.size(); ++s, bit = 0) {
            ++probes_;
            const uint64_t open = ~full_[s] & (~uint64_t{0} << bit);
            if (open != 0) {
                const size_t word = s * 64 + std::countr_zero(open);
                ++probes_;
                return static_cast<uint32_t>(word * 64 + std::countr_zero(~used_[word]));
            }
        }
        return std::nullopt;
    }

    uint32_t first_ = 0;
    uint32_t count_ = 0;
    std::vector<uint64_t> used_; // bit i: QPN first + i taken
    std::vector<uint64_t> full_; // bit j: used_[j] all taken
    mutable uint64_t probes_ = 0;
};

} // namespace ohca
