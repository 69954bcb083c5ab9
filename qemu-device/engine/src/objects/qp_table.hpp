// SPDX-License-Identifier: GPL-2.0-or-later
// The QP table: QPN allocation, CREATE/MODIFY/QUERY/DESTROY_QP and the QP
// state machine (the transition rules are qp_state.hpp). It keeps, for each
// CQ, the QPs that complete into it (Cq::qpns), so that RESIZE_CQ looks at
// those only.
#pragma once

#include "device/command.hpp"
#include "device/gid_table.hpp"
#include "device/uar_table.hpp"
#include "objects/mcast.hpp"
#include "objects/pbl_budget.hpp"
#include "objects/qp_windows.hpp"
#include "objects/qpn_alloc.hpp"
#include "objects/rdma_objects.hpp"
#include "objects/scheduler.hpp"
#include "objects/srq.hpp"
#include "state/refs.hpp"
#include "state/stream.hpp"

#include <cstdint>

namespace ohca {

class CompletionServices;
class IbPort;
class CqTable;
class PdTable;
class XrcTransport;
class WqTable;

class QpTable : public XrcSrqBorrowers {
  public:
    struct Deps {
        const Host &host;
        PblBudget &pbl;
        const UarTable &uars;
        UarRefs &uar_refs;
        const GidTable &gids;
        PdTable &pds;
        CqTable &cqs;
        SrqTable &srqs;
        XrcTransport &xrc;
        McastTable &mcast;
        QpScheduler &sched;
        CompletionServices &completions; // qp_to_error
        QpWindows &windows;
        // An InfiniBand port (null: Ethernet): QP0, the IB address vector,
        // its P_Key table.
        const IbPort *ib;
    };
    QpTable(const Deps &deps, uint32_t max_qp) : d_(deps), max_qp_(max_qp) {}
    QpTable(const QpTable &) = delete;
    QpTable &operator=(const QpTable &) = delete;

    // QPNs start from the host's seed and go on across resets: after one,
    // a peer's stale QPNs name nothing (or, once the numbers come round
    // again, a QP it must still match GID and PSN of).
    void seed(uint32_t seed) { next_qpn_ = DeviceLimits::first_qpn + seed % max_qp_; }
    void reset();
    // Every XRC target QP borrowing XRC SRQ 'srqn' lets it go (O(max_qp):
    // once per DESTROY_SRQ of an XRC SRQ, like the guest's own command).
    void release_xrc_srq(uint32_t srqn) override;
    [[nodiscard]] Qp *find(uint32_t qpn) { return qpn < qps_.size() ? qps_[qpn].get() : nullptr; }
    [[nodiscard]] const Qp *find(uint32_t qpn) const {
        return qpn < qps_.size() ? qps_[qpn].get() : nullptr;
    }

    CmdResult cmd_create_qp(const Command &cmd);
    CmdResult cmd_modify_qp(const Command &cmd);
    CmdResult cmd_query_qp(const Command &cmd);
    CmdResult cmd_destroy_qp(const Command &cmd);
    // ATTACH_MCAST / DETACH_MCAST of a UD QP to a group (the groups are
    // McastTable's).
    CmdResult cmd_mcast(const Command &cmd, bool attach);
    // CREATE_RSS_QP's QP (its checks done by WqTable): a raw Ethernet QP
    // on PD 'pdn' without queues, RSS configuration 'slot'.
    CmdResult create_rss_qp(const Command &cmd, uint32_t pdn, uint32_t slot);
    // The owner of RSS configurations, told when an RSS QP goes.
    void set_rss_owner(WqTable &w) { rss_owner_ = &w; }

    // A doorbell of the SQ ('sq') or the RQ of QP 'qpn' on UAR page 'page'
    // with its new producer index. Null (the caller counts it) for a QP not
    // of this page or in RESET, a queue it does not have (an XRC target
    // none, an initiator or a QP on an SRQ no RQ), or an index that overruns
    // the ring or goes back. 'made_ready': the QP has work now (its SQ; its
    // RQ in ERR, to be flushed).
    Qp *doorbell(uint32_t page, uint32_t qpn, bool sq, uint32_t value, bool &made_ready);

    // CQEs the device owes 'cq' for work its QPs were given: a CQE for
    // each send WQE rung and not completed, and in ERR the flush of each
    // posted receive (RESIZE_CQ).
    [[nodiscard]] uint64_t cqes_owed(const Cq &cq) const;
    // Words the QPN searches looked at (tests bound the work).
    [[nodiscard]] uint64_t qpn_probes() const { return qpns_.probes(); }

    // Every QP with its transport state (objects/qp_snapshot.cpp): a
    // loaded QP names objects that exist, as its create command checked,
    // and is rescheduled (its ACK/RNR and pacer timers re-armed, and made
    // ready to look at what it owes); its references go into 'refs'.
    void save(state::Writer &w) const;
    // Version 2 of the section added RSS QPs' configuration slots.
    void load(state::Reader &r, uint16_t version, state::Refs &refs);
    void load_records(state::Reader &r); // qp_snapshot.cpp

  private:
    void apply_state(Qp &qp, uint8_t next);
    // A QP without queues (XRC target, RSS QP) of 'type', its number
    // taken and written as the command's output; null with 'res' set.
    Qp *add_queueless(const Command &cmd, uint8_t type, CmdResult &res);
    std::optional<uint32_t> free_qpn() const { return qpns_.next_free(next_qpn_); }
    void link_cqs(const Qp &qp);
    void unlink_cqs(const Qp &qp);

    Deps d_;
    uint32_t max_qp_;
    Table<Qp> qps_;
    QpnAllocator qpns_; // [first_qpn, first_qpn + max_qp)
    // Where the next QPN search starts (not part of the power-on state).
    uint32_t next_qpn_ = DeviceLimits::first_qpn;
    WqTable *rss_owner_ = nullptr;
};

} // namespace ohca
