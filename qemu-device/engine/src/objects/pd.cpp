// SPDX-License-Identifier: GPL-2.0-or-later
// Protection domains and XRC domains (programming manual section 8).
#include "objects/pd.hpp"

#include "link/byte_order.hpp"
#include "transports/xrc.hpp"

namespace ohca {

void PdTable::reset() {
    pds_.clear();
    pds_.resize(DeviceLimits::max_pd + 1);
}

CmdResult PdTable::cmd_create_pd(const Command &cmd) {
    std::optional<uint32_t> pdn;
    for (uint32_t i = 1; i < pds_.size(); ++i) {
        if (!pds_[i]) {
            pdn = i;
            break;
        }
    }
    if (!pdn) {
        return {OHCA_STATUS_NO_RESOURCES, 0};
    }
    if (CmdResult r = write_create_out(host_, cmd, *pdn, 0); r.status != OHCA_STATUS_OK) {
        return r;
    }
    pds_[*pdn] = std::make_unique<Pd>();
    return {};
}

CmdResult PdTable::cmd_destroy_pd(const Command &cmd) {
    const auto in = cmd.input<ohca_handle_in>();
    const uint32_t pdn = le(in.handle);
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_handle_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    Pd *pd = find(pdn);
    if (pd == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, pdn};
    }
    if (pd->refs != 0) {
        return {OHCA_STATUS_BAD_STATE, pdn};
    }
    pds_[pdn].reset();
    return {};
}

CmdResult PdTable::cmd_alloc_xrcd(const Command &cmd) {
    // A number and a count, kept by XrcTransport (xrc.cpp).
    const std::optional<uint32_t> n = xrc_.alloc_domain();
    if (!n) {
        return {OHCA_STATUS_NO_RESOURCES, 0};
    }
    const CmdResult res = write_create_out(host_, cmd, *n, 0);
    if (res.status != OHCA_STATUS_OK) {
        (void)xrc_.dealloc_domain(*n);
    }
    return res;
}

CmdResult PdTable::cmd_dealloc_xrcd(const Command &cmd) {
    const auto in = cmd.input<ohca_handle_in>();
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_handle_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    const uint8_t st = xrc_.dealloc_domain(le(in.handle));
    return {st, st == OHCA_STATUS_OK ? 0 : le(in.handle)};
}

} // namespace ohca
