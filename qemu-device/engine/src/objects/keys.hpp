// SPDX-License-Identifier: GPL-2.0-or-later
// The memory keys: MRs and memory windows in one key table, fast
// registration, re-registration, device memory and on-demand paging, and
// their commands (CREATE_MR, DESTROY_MR, REREG_MR, ALLOC_MW, DEALLOC_MW,
// ALLOC_DM, FREE_DM, REG_DM_MR, ODP_MAP, ODP_UNMAP). MemoryKeys owns all of
// it and is the transports' MemoryServices.
//
// Member functions are split by what they own:
//   keys.cpp      the key table, power-on, the commands' dispatch
//   mr.cpp        CREATE_MR, DESTROY_MR, key checks and MR access
//   mr_rereg.cpp  REREG_MR
//   fast_reg.cpp  fast-registration MRs, REG_MR/LOCAL_INV, invalidation
//   mw.cpp        memory windows: ALLOC_MW, DEALLOC_MW, BIND_MW, rkeys
//   dm.cpp        device memory: ALLOC_DM, FREE_DM, REG_DM_MR, the BAR
//   odp.cpp       on-demand paging: faults, waiters, ODP_MAP, ODP_UNMAP
#pragma once

#include "device/command.hpp"
#include "device/host.hpp"
#include "device/stats.hpp"
#include "objects/dm.hpp"
#include "objects/event_sink.hpp"
#include "objects/odp.hpp"
#include "objects/pbl_budget.hpp"
#include "objects/qp_windows.hpp"
#include "objects/rdma_objects.hpp"
#include "state/refs.hpp"
#include "state/stream.hpp"
#include "transports/transport.hpp"

#include <ohca/ohca_cmd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ohca {

// What the keys need of the rest of the device besides the references
// MemoryKeys is built with (Device implements it): the QPs that windows
// and page faults name, and room on EQ 0 for a page fault.
class KeyLinks {
  public:
    KeyLinks() = default;
    KeyLinks(const KeyLinks &) = delete;
    KeyLinks &operator=(const KeyLinks &) = delete;

    // The QP with number 'qpn', or null: a type 2 window counts on the QP
    // it was bound through; a QP waiting for a fault is found again.
    virtual Qp *find_qp(uint32_t qpn) = 0;
    // A QP that waited for a page fault goes on (its requester resumes and
    // it is scheduled).
    virtual void odp_resume(Qp &qp) = 0;
    // Whether EQ 0 takes a page-fault event now: the device runs and EQ 0
    // is less than half full (a peer's requests cause faults too).
    [[nodiscard]] virtual bool fault_event_room() const = 0;

  protected:
    ~KeyLinks() = default;
};

class MemoryKeys final : public MemoryServices, public QpWindows {
  public:
    MemoryKeys(const Host &host, Table<Pd> &pds, PblBudget &pbl, EventSink &events, KeyLinks &links,
               Stats &stats, uint32_t max_qp);

    // Power-on state: no MRs, windows, allocations or faults. The key tags
    // survive (seed_tags).
    void reset();
    // Key tags start from the host's seed and are kept across resets:
    // after one, a peer's stale rkeys name nothing.
    void seed_tags(uint32_t seed);
    // CREATE_MR, DESTROY_MR, REREG_MR, ALLOC_MW, DEALLOC_MW, ALLOC_DM,
    // FREE_DM, REG_DM_MR, ODP_MAP, ODP_UNMAP (the command queue checked
    // their sizes).
    CmdResult execute(const Command &cmd);

    // BAR2's device memory window, 'offset' from its start (dm.cpp); a bad
    // access counts in reg_errors.
    uint64_t dm_read(uint64_t offset, unsigned int size);
    void dm_write(uint64_t offset, uint64_t value, unsigned int size);
    // A QP is destroyed: the type 2 windows bound through it are freed.
    void unbind_qp_windows(const Qp &qp) override;

    // MemoryServices.
    [[nodiscard]] KeyResult check_key(uint32_t key, uint64_t va, uint64_t len, uint32_t access,
                                      uint32_t pdn) const override;
    [[nodiscard]] KeyResult check_rkey(const Qp &qp, uint32_t key, uint64_t va, uint64_t len,
                                       uint32_t access) const override;
    bool mr_read(const Mr &mr, uint64_t va, void *buf, size_t len) const override;
    bool mr_write(const Mr &mr, uint64_t va, const void *buf, size_t len) const override;
    OdpState odp_touch(const Mr &mr, uint64_t va, uint64_t len, bool write) override;
    [[nodiscard]] bool has_odp_mrs() const override { return odp_mrs_ != 0; }
    void odp_wait(Qp &qp) override;
    LocalOpResult execute_local_op(const Qp &qp, const ohca_send_wqe &w, SendWr &wr) override;
    uint8_t invalidate_key(uint32_t key, const Qp &qp, bool remote) override;

    // MRs, windows, their key tags and device memory with its contents
    // (objects/keys_snapshot.cpp). Loaded after the QPs (type 2 windows
    // name theirs); references into 'refs'. Version 2 of the section
    // added ODP MRs (translations), outstanding faults and waiting QPs.
    void save(state::Writer &w) const;
    void load(state::Reader &r, uint16_t version, state::Refs &refs);

    // For tests of the ODP walk's bound (audit N3): translation chunks and
    // entries odp_touch looked at since power-on.
    [[nodiscard]] uint64_t odp_walk_steps() const { return odp_walk_steps_; }

  private:
    // A key index names an MR or a memory window (never both).
    struct Slot {
        std::unique_ptr<Mr> mr;
        std::unique_ptr<Mw> mw;
    };

    [[nodiscard]] Pd *find_pd(uint32_t pdn) const;
    // The MR a command names by its key (index and tag), or null.
    [[nodiscard]] Mr *mr_by_key(uint32_t key) const;
    [[nodiscard]] std::optional<uint32_t> free_key_slot() const;
    // Page-list entries an MR holds against the budget.
    [[nodiscard]] static uint64_t pbl_charge(const Mr &mr);

    // mr.cpp
    CmdResult cmd_create_mr(const Command &cmd);
    CmdResult cmd_destroy_mr(const Command &cmd);
    // mr_rereg.cpp
    CmdResult cmd_rereg_mr(const Command &cmd);
    // fast_reg.cpp
    static CmdResult init_fast_reg_mr(const ohca_create_mr_in &in, Mr &mr);
    LocalOpResult execute_reg_mr(const Qp &qp, const ohca_reg_mr_wqe &w);
    // mw.cpp
    CmdResult cmd_alloc_mw(const Command &cmd);
    CmdResult cmd_dealloc_mw(const Command &cmd);
    LocalOpResult execute_bind_mw(const Qp &qp, const ohca_bind_mw_wqe &w);
    [[nodiscard]] KeyResult check_window(const Qp &qp, const Mw &mw, uint32_t key, uint64_t va,
                                         uint64_t len, uint32_t access) const;
    uint8_t invalidate_window(Mw &mw, uint32_t key, const Qp &qp, bool remote);
    void unbind_window(Mw &mw);
    // dm.cpp
    CmdResult cmd_alloc_dm(const Command &cmd);
    CmdResult cmd_free_dm(const Command &cmd);
    CmdResult cmd_reg_dm_mr(const Command &cmd);
    void dm_mr_destroyed(const Mr &mr);
    // odp.cpp
    CmdResult cmd_odp_map(const Command &cmd);
    CmdResult cmd_odp_unmap(const Command &cmd);
    static CmdResult init_odp_mr(const ohca_create_mr_in &in, Mr &mr);
    void odp_mr_destroyed(const Mr &mr);
    bool load_odp(state::Reader &r, Mr &m); // keys_snapshot.cpp
    void odp_wake();

    const Host &host_;
    Table<Pd> &pds_;
    PblBudget &pbl_;
    EventSink &events_;
    KeyLinks &links_;
    Stats &stats_;
    uint32_t max_qp_;

    std::vector<Slot> slots_;
    // Identity that survives reset: the key tag each index had last.
    std::vector<uint8_t> tags_;
    uint32_t mr_count_ = 0; // <= max_mr
    uint32_t mw_count_ = 0; // <= max_mw
    DeviceMemory dm_;
    // On-demand paging: outstanding faults, the QPs waiting for one (each
    // at most once, Qp::odp_wait), translation chunks in use, ODP MRs in
    // the key table (created, not yet destroyed or reset).
    OdpFaults odp_faults_{DeviceLimits::max_odp_faults};
    std::vector<uint32_t> odp_waiters_;
    uint32_t odp_chunks_ = 0;
    uint32_t odp_mrs_ = 0;
    uint64_t odp_walk_steps_ = 0;
};

} // namespace ohca
