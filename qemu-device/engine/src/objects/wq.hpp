// SPDX-License-Identifier: GPL-2.0-or-later
// Receive work queues, RWQ indirection tables and the RSS configuration of
// RSS QPs (programming manual section 23). WqTable owns the three, runs
// their commands and the WQ doorbell, and picks the WQ of a frame an RSS
// QP received; RawEth (raw_eth.cpp) writes the frame into it.
#pragma once

#include "device/command.hpp"
#include "device/uar_table.hpp"
#include "objects/page_list.hpp"
#include "objects/pbl_budget.hpp"
#include "objects/rdma_objects.hpp"
#include "state/refs.hpp"
#include "state/stream.hpp"
#include "transports/rss.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace ohca {

class CompletionServices;
class CqTable;
class PdTable;
class QpTable;

struct Wq {
    uint32_t wqn = 0;
    uint32_t pdn = 0;
    uint32_t cqn = 0;
    uint32_t uar = 0;
    uint8_t state = OHCA_WQS_RESET;
    unsigned int log_size = 0;
    unsigned int log_stride = 0;
    PageList ring;
    uint32_t pi = 0;         // producer index from doorbells, free running
    uint32_t ci = 0;         // WQEs completed
    uint32_t table_refs = 0; // indirection table entries naming it

    [[nodiscard]] uint32_t size() const { return 1u << log_size; }
    [[nodiscard]] uint64_t offset(uint32_t index) const {
        return uint64_t{index & (size() - 1)} << log_stride;
    }
};

struct RwqIndTable {
    unsigned int log_size = 0;
    std::vector<uint32_t> wqns; // 2^log_size live WQs
    uint32_t qp_refs = 0;
};

// An RSS QP's hash: its table, fields and key (slot Qp::rss of WqTable).
struct RssConf {
    uint32_t table = 0;
    uint32_t fields = 0;
    RssKey key{};
};

// Limits of the family (QUERY_DEVICE). Host memory: 8 bytes per possible
// WQ plus, per WQ created, its Wq and page list (charged to the device's
// page-list budget); at most 64 tables of 256 entries (1 KiB each); at
// most 256 RSS configurations (48 bytes each).
struct WqLimits {
    static constexpr uint32_t max_wq = 1024;
    static constexpr uint32_t max_wq_wr = 4096;
    static constexpr uint32_t max_ind_tbl = 64;
    static constexpr uint32_t max_ind_tbl_size = 1u << OHCA_RWQ_IND_TBL_LOG_MAX;
    static constexpr uint32_t max_rss_qp = 256;
};

class WqTable {
  public:
    struct Deps {
        const Host &host;
        PblBudget &pbl;
        const UarTable &uars;
        UarRefs &uar_refs;
        PdTable &pds;
        CqTable &cqs;
        QpTable &qps;
        CompletionServices &completions;
    };
    explicit WqTable(const Deps &d) : d_(d) {}
    WqTable(const WqTable &) = delete;
    WqTable &operator=(const WqTable &) = delete;

    void reset();
    [[nodiscard]] Wq *find(uint32_t wqn) { return wqn < wqs_.size() ? wqs_[wqn].get() : nullptr; }
    [[nodiscard]] const RwqIndTable *table(uint32_t n) const {
        return n < tables_.size() ? tables_[n].get() : nullptr;
    }

    CmdResult cmd_create_wq(const Command &cmd);
    CmdResult cmd_modify_wq(const Command &cmd);
    CmdResult cmd_destroy_wq(const Command &cmd);
    CmdResult cmd_create_ind_tbl(const Command &cmd);
    CmdResult cmd_destroy_ind_tbl(const Command &cmd);
    CmdResult cmd_create_rss_qp(const Command &cmd);
    // The WQ doorbell; false: ignored (counted by the caller). In ERR the
    // WQEs it posts complete at once with WR_FLUSH_ERR.
    bool doorbell(uint32_t page, uint32_t wqn, uint32_t value);

    // The WQ an RSS QP (configuration slot 'slot') gives 'frame' to, or
    // null (no such WQ: the frame is dropped).
    Wq *pick(uint32_t slot, std::span<const uint8_t> frame);
    // DESTROY_QP of an RSS QP: its configuration and table reference go.
    void release_rss(uint32_t slot);
    // A receive completion of 'wq' (CQE flag OHCA_CQE_F_WQ); retires one WQE.
    void complete(Wq &wq, uint64_t wr_id, uint32_t byte_len, uint8_t status, uint8_t verr);
    // The WQ's ring failed: ERR, and its posted WQEs flush.
    void to_error(Wq &wq);

    // The WQs, tables and RSS configurations (objects/snapshot.cpp). A
    // loaded WQ passes CREATE_WQ's checks and a table CREATE_RWQ_IND_TBL's;
    // every RSS configuration is that of exactly one loaded RSS QP
    // ('refs.rss'); the counts each holds of the others must match.
    void save(state::Writer &w) const;
    void load(state::Reader &r, state::Refs &refs);

  private:
    void flush(Wq &wq);

    Deps d_;
    Table<Wq> wqs_;
    Table<RwqIndTable> tables_;
    std::vector<RssConf> rss_; // slot 0 unused; table 0: a free slot
    uint32_t live_wqs_ = 0;
};

} // namespace ohca
