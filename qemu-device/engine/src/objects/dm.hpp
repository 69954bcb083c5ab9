// SPDX-License-Identifier: GPL-2.0-or-later
// Device memory (programming manual, "Device memory"): OHCA_DM_SIZE bytes of
// on-chip memory held by the device, handed out in page-sized chunks by
// ALLOC_DM, reached by the guest through BAR2's window and by the transport
// through MRs registered on an allocation (REG_DM_MR). This type owns the
// memory and the allocations; dm.cpp also holds MemoryKeys' commands for it.
#pragma once

#include "state/stream.hpp"

#include <ohca/ohca_cmd.h>
#include <ohca/ohca_regs.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace ohca {

class DeviceMemory {
  public:
    static constexpr uint64_t kSize = static_cast<uint64_t>(OHCA_DM_SIZE);
    static constexpr uint32_t kChunk = OHCA_DM_CHUNK_SIZE;
    static constexpr uint32_t kChunks = OHCA_DM_NUM_CHUNKS;
    static constexpr uint32_t kMaxAllocs = OHCA_DM_MAX_ALLOCS;

    struct Alloc {
        uint32_t handle = 0; // 0: slot free
        uint32_t first = 0;  // first chunk
        uint32_t chunks = 0;
        uint64_t length = 0; // as ALLOC_DM asked
        uint32_t mrs = 0;    // MRs registered on it: no FREE_DM
        [[nodiscard]] uint64_t base() const { return uint64_t{first} * kChunk; }
    };
    struct Result {
        uint8_t status = OHCA_STATUS_OK;
        uint32_t syndrome = 0;
    };

    DeviceMemory();

    // Power-on state: nothing allocated, every byte zero.
    void reset();

    // ALLOC_DM: a run of zeroed chunks; 'handle' and 'base' (byte offset in
    // the memory) on success.
    Result alloc(uint64_t length, uint32_t log_align, uint32_t &handle, uint64_t &base);
    // FREE_DM.
    Result free(uint32_t handle);
    [[nodiscard]] Alloc *find(uint32_t handle);
    [[nodiscard]] uint32_t live() const { return live_; }

    // The transport's access for an MR on an allocation: false when
    // [offset, offset + len) leaves the memory (never for a checked MR).
    bool read(uint64_t offset, void *buf, size_t len) const;
    bool write(uint64_t offset, const void *buf, size_t len) const;

    // A guest access to the BAR window at 'offset' (from its start): a
    // naturally aligned 1, 2, 4 or 8 byte access inside an allocated chunk.
    // Anything else reads 0, is not written, and returns false.
    bool mmio_read(uint64_t offset, unsigned int size, uint64_t &value) const;
    bool mmio_write(uint64_t offset, uint64_t value, unsigned int size);

    // The allocations, their handles' tags and what they hold
    // (objects/keys_snapshot.cpp). The MR counts are checked by the keys.
    void save(state::Writer &w) const;
    void load(state::Reader &r);
    // Whether each allocation's count of MRs is mrs[its slot].
    [[nodiscard]] bool mrs_match(const std::array<uint32_t, kMaxAllocs + 1> &mrs) const;

  private:
    [[nodiscard]] bool mapped(uint64_t offset, unsigned int size) const;

    // Host memory, bounded by kSize; write() is const because an MR's
    // access reaches it through the const MR path, as guest memory does.
    std::unique_ptr<uint8_t[]> mem_;
    std::array<uint8_t, kChunks> owner_{}; // slot of the chunk's allocation, 0: free
    std::array<Alloc, kMaxAllocs + 1> slots_{};
    // Survives reset like the MR key tags, so a stale handle misses.
    std::array<uint8_t, kMaxAllocs + 1> tags_{};
    uint32_t live_ = 0;
};

static_assert(DeviceMemory::kMaxAllocs < 256, "owner_ holds a slot in a byte");

} // namespace ohca
