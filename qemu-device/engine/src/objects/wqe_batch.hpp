// SPDX-License-Identifier: GPL-2.0-or-later
// Consecutive posted WQEs of one work queue read in one DMA: a QP's visit
// fetches its WQEs one after the other, and a DMA per WQE cost more than
// the WQE's own checks (each is a pci_dma_read in QEMU).
#pragma once

#include "objects/rdma_objects.hpp"

#include <array>
#include <cstdint>

namespace ohca {

class WqeBatch {
  public:
    // Up to this many bytes of WQEs in one read, and never across a page
    // of the ring. Small on purpose: with many QPs each visit or packet
    // may use one WQE of a batch before another QP's replaces it, and then
    // reads at most this much in vain (16 receive WQEs of 64 bytes, 4 send
    // WQEs of 256).
    static constexpr size_t kBytes = 1024;

    // Copies the first 'len' bytes (at most the stride) of WQE 'index' of
    // 'wq' to 'out': from what the last read brought when it holds that
    // WQE, else by reading it and the WQEs after it up to 'end' (the
    // producer index: only posted WQEs), within the ring's page, the ring
    // and kBytes. False when the WQE cannot be read (as PageList::read).
    // Posted WQEs do not change until they complete, and a slot is posted
    // again only at index + the queue's size: what the batch holds stays
    // right until the queue is reset (read() drops it at index 0).
    [[nodiscard]] bool read(const Host &host, const WorkQueue &wq, uint32_t index, uint32_t end,
                            void *out, size_t len);
    void clear() { count_ = 0; }

  private:
    const WorkQueue *wq_ = nullptr;
    uint32_t first_ = 0;
    uint32_t count_ = 0;
    std::array<uint8_t, kBytes> buf_;
};

} // namespace ohca
