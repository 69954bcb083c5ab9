// SPDX-License-Identifier: GPL-2.0-or-later
// DEV_STATUS and FATAL_CODE: whether the device runs. The device's parts
// read it (a stopped device takes no work); only the register file and
// the fatal path change it.
#pragma once

#include <ohca/ohca_regs.h>

#include <cstdint>

namespace ohca {

struct DevStatus {
    uint32_t bits = OHCA_DEV_STATUS_RESET_DONE;
    uint32_t fatal_code = OHCA_FATAL_NONE;

    [[nodiscard]] bool running() const { return (bits & OHCA_DEV_STATUS_READY) != 0; }
    [[nodiscard]] bool fatal() const { return (bits & OHCA_DEV_STATUS_FATAL) != 0; }
};

} // namespace ohca
