// SPDX-License-Identifier: GPL-2.0-or-later
// Protection domains and XRC domains: CREATE/DESTROY_PD, ALLOC/DEALLOC_XRCD.
// A PD counts the objects in it (MRs, MWs, QPs, SRQs); it cannot be
// destroyed while any is left. XRC domains are numbers with a count, kept
// by XrcTransport, which checks requests against them.
#pragma once

#include "device/command.hpp"
#include "objects/rdma_objects.hpp"
#include "state/refs.hpp"
#include "state/stream.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace ohca {

class XrcTransport;

class PdTable {
  public:
    PdTable(const Host &host, XrcTransport &xrc) : host_(host), xrc_(xrc) {}
    PdTable(const PdTable &) = delete;
    PdTable &operator=(const PdTable &) = delete;

    void reset();
    [[nodiscard]] Pd *find(uint32_t pdn) { return pdn < pds_.size() ? pds_[pdn].get() : nullptr; }
    // The table itself, for owners that count references in it (MRs and
    // memory windows hold their PD).
    [[nodiscard]] Table<Pd> &table() { return pds_; }
    [[nodiscard]] size_t size() const { return pds_.size(); }
    std::unique_ptr<Pd> &operator[](size_t pdn) { return pds_[pdn]; }
    // An object in PD 'pdn' goes away (no-op for a PD that is gone).
    void put(uint32_t pdn) {
        if (Pd *pd = find(pdn)) {
            --pd->refs;
        }
    }

    // The PDs and their counts (objects/snapshot.cpp); the counts are
    // checked once everything is loaded (state/refs.hpp).
    void save(state::Writer &w) const;
    void load(state::Reader &r);

    CmdResult cmd_create_pd(const Command &cmd);
    CmdResult cmd_destroy_pd(const Command &cmd);
    CmdResult cmd_alloc_xrcd(const Command &cmd);
    CmdResult cmd_dealloc_xrcd(const Command &cmd);

  private:
    const Host &host_;
    XrcTransport &xrc_;
    Table<Pd> pds_;
};

} // namespace ohca
