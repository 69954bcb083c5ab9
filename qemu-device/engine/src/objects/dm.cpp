// SPDX-License-Identifier: GPL-2.0-or-later
// Device memory: the allocator, the BAR window, and the keys' commands
// ALLOC_DM, FREE_DM and REG_DM_MR (programming manual, "Device memory").
// An MR on an allocation keeps a byte offset into this memory instead of a
// page list; MemoryKeys::mr_read/mr_write send its accesses here.
#include "objects/dm.hpp"

#include "device/command.hpp"
#include "link/byte_order.hpp"
#include "objects/keys.hpp"

#include <algorithm>
#include <cstring>

namespace ohca {

namespace {

// Handles: slot in bits 15..8, a tag bumped on every reuse in bits 7..0.
constexpr uint32_t slot_of(uint32_t handle) {
    return handle >> 8;
}

} // namespace

DeviceMemory::DeviceMemory() : mem_(std::make_unique<uint8_t[]>(kSize)) {
    reset();
}

void DeviceMemory::reset() {
    std::memset(mem_.get(), 0, kSize);
    owner_.fill(0);
    slots_.fill(Alloc{});
    live_ = 0;
}

DeviceMemory::Result DeviceMemory::alloc(uint64_t length, uint32_t log_align, uint32_t &handle,
                                         uint64_t &base) {
    if (length == 0 || length > kSize) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_alloc_dm_in, length)};
    }
    // Every chunk starts on a page: any alignment up to a page holds.
    if (log_align > OHCA_DM_CHUNK_SHIFT) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_alloc_dm_in, log_align)};
    }
    if (live_ >= kMaxAllocs) {
        return {OHCA_STATUS_NO_RESOURCES, 0};
    }
    const auto want = static_cast<uint32_t>((length + kChunk - 1) / kChunk);
    // First fit over kChunks entries: bounded work per command.
    uint32_t run = 0;
    uint32_t first = 0;
    for (uint32_t c = 0; c < kChunks && run < want; ++c) {
        if (owner_[c] != 0) {
            run = 0;
            continue;
        }
        if (run == 0) {
            first = c;
        }
        ++run;
    }
    if (run < want) {
        return {OHCA_STATUS_NO_RESOURCES, 0};
    }
    uint32_t slot = 1;
    while (slots_[slot].handle != 0) {
        ++slot; // live_ < kMaxAllocs: a free slot exists
    }
    tags_[slot] = static_cast<uint8_t>(tags_[slot] + 1);
    Alloc &a = slots_[slot];
    a.handle = (slot << 8) | tags_[slot];
    a.first = first;
    a.chunks = want;
    a.length = length;
    a.mrs = 0;
    std::fill_n(owner_.begin() + first, want, static_cast<uint8_t>(slot));
    // Zeroed when handed out: nothing of an earlier allocation shows.
    std::memset(mem_.get() + a.base(), 0, uint64_t{want} * kChunk);
    ++live_;
    handle = a.handle;
    base = a.base();
    return {};
}

DeviceMemory::Alloc *DeviceMemory::find(uint32_t handle) {
    const uint32_t slot = slot_of(handle);
    if (slot == 0 || slot > kMaxAllocs || slots_[slot].handle != handle || handle == 0) {
        return nullptr;
    }
    return &slots_[slot];
}

DeviceMemory::Result DeviceMemory::free(uint32_t handle) {
    Alloc *a = find(handle);
    if (a == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, handle};
    }
    if (a->mrs != 0) {
        return {OHCA_STATUS_BAD_STATE, handle};
    }
    std::fill_n(owner_.begin() + a->first, a->chunks, uint8_t{0});
    // Zeroed now as well, so freed memory holds nothing of the guest's.
    std::memset(mem_.get() + a->base(), 0, uint64_t{a->chunks} * kChunk);
    *a = Alloc{};
    --live_;
    return {};
}

bool DeviceMemory::read(uint64_t offset, void *buf, size_t len) const {
    if (offset > kSize || len > kSize - offset) {
        return false;
    }
    std::memcpy(buf, mem_.get() + offset, len);
    return true;
}

bool DeviceMemory::write(uint64_t offset, const void *buf, size_t len) const {
    if (offset > kSize || len > kSize - offset) {
        return false;
    }
    std::memcpy(mem_.get() + offset, buf, len);
    return true;
}

bool DeviceMemory::mapped(uint64_t offset, unsigned int size) const {
    if (size != 1 && size != 2 && size != 4 && size != 8) {
        return false;
    }
    if (offset >= kSize || offset % size != 0) {
        return false;
    }
    // Aligned and at most 8 bytes: never crosses a chunk.
    return owner_[offset / kChunk] != 0;
}

bool DeviceMemory::mmio_read(uint64_t offset, unsigned int size, uint64_t &value) const {
    value = 0;
    if (!mapped(offset, size)) {
        return false;
    }
    uint8_t bytes[8] = {};
    std::memcpy(bytes, mem_.get() + offset, size);
    for (unsigned int i = 0; i < size; ++i) {
        value |= uint64_t{bytes[i]} << (8 * i); // the BAR is little endian
    }
    return true;
}

bool DeviceMemory::mmio_write(uint64_t offset, uint64_t value, unsigned int size) {
    if (!mapped(offset, size)) {
        return false;
    }
    for (unsigned int i = 0; i < size; ++i) {
        mem_[offset + i] = static_cast<uint8_t>(value >> (8 * i));
    }
    return true;
}

// ---- MemoryKeys' side: commands and the BAR window -----------------------

uint64_t MemoryKeys::dm_read(uint64_t offset, unsigned int size) {
    uint64_t value = 0;
    if (!dm_.mmio_read(offset, size, value)) {
        ++stats_.reg_errors;
    }
    return value;
}

void MemoryKeys::dm_write(uint64_t offset, uint64_t value, unsigned int size) {
    if (!dm_.mmio_write(offset, value, size)) {
        ++stats_.reg_errors;
    }
}

CmdResult MemoryKeys::cmd_alloc_dm(const Command &cmd) {
    const auto in = cmd.input<ohca_alloc_dm_in>();
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_alloc_dm_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    // Placed first and given back if the output cannot be written, so a
    // failed command changes nothing (the chunks were zero either way).
    uint32_t handle = 0;
    uint64_t base = 0;
    const DeviceMemory::Result r = dm_.alloc(le(in.length), le(in.log_align), handle, base);
    if (r.status != OHCA_STATUS_OK) {
        return {r.status, r.syndrome};
    }
    ohca_alloc_dm_out out{};
    out.handle = le(handle);
    out.bar_offset = le(static_cast<uint64_t>(OHCA_DM_BAR_OFFSET) + base);
    if (CmdResult w = write_output(host_, cmd, &out, sizeof(out)); w.status != OHCA_STATUS_OK) {
        (void)dm_.free(handle);
        return w;
    }
    return {};
}

CmdResult MemoryKeys::cmd_free_dm(const Command &cmd) {
    const auto in = cmd.input<ohca_handle_in>();
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_handle_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    const DeviceMemory::Result r = dm_.free(le(in.handle));
    return {r.status, r.syndrome};
}

CmdResult MemoryKeys::cmd_reg_dm_mr(const Command &cmd) {
    const auto in = cmd.input<ohca_reg_dm_mr_in>();
    const uint32_t pdn = le(in.pdn);
    const uint32_t access = le(in.access);
    const uint32_t dm_handle = le(in.dm_handle);
    const uint64_t offset = le(in.offset);
    const uint64_t length = le(in.length);
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_reg_dm_mr_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    Pd *pd = find_pd(pdn);
    if (pd == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, pdn};
    }
    // No windows on device memory: MW_BIND is not among the rights.
    const bool remote = (access & (OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_ATOMIC)) != 0;
    if ((access & ~kAccessAll) != 0 || (remote && (access & OHCA_ACCESS_LOCAL_WRITE) == 0)) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_reg_dm_mr_in, access)};
    }
    DeviceMemory::Alloc *a = dm_.find(dm_handle);
    if (a == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, dm_handle};
    }
    if (offset > a->length) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_reg_dm_mr_in, offset)};
    }
    if (length > a->length - offset) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_reg_dm_mr_in, length)};
    }
    const std::optional<uint32_t> index = free_key_slot();
    if (!index || mr_count_ >= DeviceLimits::max_mr) {
        return {OHCA_STATUS_NO_RESOURCES, 0};
    }
    Mr mr;
    mr.pdn = pdn;
    mr.access = access;
    mr.iova = 0; // zero based
    mr.length = length;
    mr.dm_handle = dm_handle;
    mr.dm_base = a->base() + offset;
    const auto tag = static_cast<uint8_t>(tags_[*index] + 1);
    mr.key = (*index << 8) | tag;
    mr.handle = mr.key;
    if (CmdResult r = write_create_out(host_, cmd, mr.key, mr.key); r.status != OHCA_STATUS_OK) {
        return r;
    }
    tags_[*index] = tag;
    slots_[*index].mr = std::make_unique<Mr>(std::move(mr));
    ++mr_count_;
    ++pd->refs;
    ++a->mrs;
    return {};
}

void MemoryKeys::dm_mr_destroyed(const Mr &mr) {
    if (mr.dm_handle == 0) {
        return;
    }
    if (DeviceMemory::Alloc *a = dm_.find(mr.dm_handle); a != nullptr && a->mrs != 0) {
        --a->mrs;
    }
}

} // namespace ohca
