// SPDX-License-Identifier: GPL-2.0-or-later
// A decoded command entry, shared by cmdq.cpp and rdma_cmds.cpp.
#pragma once

#include "device/device.hpp"

#include <cstring>
#include <optional>

namespace ohca {

struct Device::Command {
    uint16_t opcode = 0;
    std::array<uint8_t, OHCA_CMD_MAILBOX_MAX> in{};
    size_t in_len = 0;
    uint64_t out_addr = 0;
    uint32_t out_len = 0;

    template <class T> [[nodiscard]] T input() const {
        static_assert(sizeof(T) <= OHCA_CMD_MAILBOX_MAX);
        T v;
        std::memcpy(&v, in.data(), sizeof(T));
        return v;
    }
};

constexpr uint32_t kAccessAll = OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_WRITE |
                                OHCA_ACCESS_REMOTE_READ | OHCA_ACCESS_REMOTE_ATOMIC;

// The status of a page list that failed to load: BAD_ADDR, NO_RESOURCES,
// or BAD_FIELD at its field (the list is at 'pbl_offset' in the input).
inline Device::CmdResult pbl_error(PageList::LoadResult r, size_t pbl_offset) {
    if (r.error == PageList::Error::Dma) {
        return {OHCA_STATUS_BAD_ADDR, 0};
    }
    if (r.error == PageList::Error::NoResources) {
        return {OHCA_STATUS_NO_RESOURCES, 0};
    }
    return {OHCA_STATUS_BAD_FIELD, static_cast<uint32_t>(pbl_offset + r.field)};
}

// First nonzero byte in [off, off + len) of the input, if any.
inline std::optional<uint32_t> nonzero_at(std::span<const uint8_t> in, size_t off, size_t len) {
    for (size_t i = off; i < off + len && i < in.size(); ++i) {
        if (in[i] != 0) {
            return static_cast<uint32_t>(i);
        }
    }
    return std::nullopt;
}

} // namespace ohca
