// SPDX-License-Identifier: GPL-2.0-or-later
// A decoded command entry and its result: what the command queue hands the
// owner of an object family, and what that owner answers. Owners include
// this header, never the device's.
#pragma once

#include "device/host.hpp"
#include "objects/page_list.hpp"

#include <ohca/ohca_cmd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>

namespace ohca {

struct CmdResult {
    uint8_t status = OHCA_STATUS_OK;
    uint32_t syndrome = 0;
};

struct Command {
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

// The command's output (out_len checked by the queue) into its mailbox.
CmdResult write_output(const Host &host, const Command &cmd, const void *out, size_t len);
// The output of a command that creates an object: its handle(s).
CmdResult write_create_out(const Host &host, const Command &cmd, uint32_t h1, uint32_t h2);

constexpr uint32_t kAccessAll = OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_WRITE |
                                OHCA_ACCESS_REMOTE_READ | OHCA_ACCESS_REMOTE_ATOMIC;

// The status of a page list that failed to load: BAD_ADDR, NO_RESOURCES,
// or BAD_FIELD at its field (the list is at 'pbl_offset' in the input).
inline CmdResult pbl_error(PageList::LoadResult r, size_t pbl_offset) {
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
