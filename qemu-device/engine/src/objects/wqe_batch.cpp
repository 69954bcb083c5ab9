// SPDX-License-Identifier: GPL-2.0-or-later
#include "objects/wqe_batch.hpp"

#include <algorithm>
#include <cstring>

namespace ohca {

bool WqeBatch::read(const Host &host, const WorkQueue &wq, uint32_t index, uint32_t end, void *out,
                    size_t len) {
    const unsigned int shift = wq.log_stride;
    // Every queue starts again at 0 after a reset (RESET, destroy, create),
    // the only time an index is read again: what the batch holds then may
    // be of the queue before, at the same place. (A read at 0 after the
    // index wrapped just reads again.)
    if (index == 0) {
        count_ = 0;
    }
    if (count_ != 0 && wq_ == &wq && index - first_ < count_) {
        std::memcpy(out, buf_.data() + (size_t{index - first_} << shift), len);
        return true;
    }
    count_ = 0;
    const uint64_t off = wq.offset(index);
    if (end - index >= 2) {
        const uint64_t page = std::min<uint64_t>(wq.ring.page_size(), kBytes);
        // WQEs from 'index' that are posted, before the ring's end and in
        // the same page (slots are stride-aligned, so whole ones).
        const uint64_t n =
            std::min({uint64_t{end - index}, uint64_t{wq.size() - (index & (wq.size() - 1))},
                      (page - (off & (page - 1))) >> shift});
        if (n >= 2 && n <= wq.size() && wq.ring.read(host, off, buf_.data(), n << shift)) {
            wq_ = &wq;
            first_ = index;
            count_ = static_cast<uint32_t>(n);
            std::memcpy(out, buf_.data(), len);
            return true;
        }
    }
    // One WQE (or a read of several that failed: this one alone says
    // whether it is readable).
    return wq.ring.read(host, off, out, len);
}

} // namespace ohca
