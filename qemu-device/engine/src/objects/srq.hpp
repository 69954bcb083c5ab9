// SPDX-License-Identifier: GPL-2.0-or-later
// Shared receive queues (programming manual section 10): a ring of receive
// WQEs that many QPs take from in ring order, its doorbell and its limit
// event; SrqTable owns them, runs their commands and hands the responder
// its WQEs (srq.cpp).
#pragma once

#include "device/command.hpp"
#include "device/uar_table.hpp"
#include "objects/event_sink.hpp"
#include "objects/page_list.hpp"
#include "objects/pbl_budget.hpp"
#include "objects/rdma_objects.hpp"
#include "state/refs.hpp"
#include "state/stream.hpp"

#include <cstdint>
#include <vector>

namespace ohca {

// One receive WQE as the device takes it: the header's wr_id and the
// segments (at most max_sge).
struct RecvWqe {
    uint64_t wr_id = 0;
    std::vector<Sge> sges;
};

// Reads the receive WQE at 'offset' of 'ring' whose stride is 'stride'
// bytes: OHCA_VERR_NONE, OHCA_VERR_DMA (not readable) or OHCA_VERR_BAD_WQE
// (num_sge above max_sge or beyond the stride; wr_id is valid then).
uint8_t read_recv_wqe(const Host &host, const PageList &ring, uint64_t offset, uint32_t stride,
                      unsigned int max_sge, RecvWqe &out);

// What taking a QP's next receive WQE from its SRQ gave: a WQE (loaded into
// the QP), nothing (the SRQ is empty or stopped: RNR NAK), or a WQE whose
// segment list is malformed (taken, its wr_id in the QP, to complete with
// an error).
enum class SrqTake : uint8_t { Ok, Empty, BadWqe };

struct Srq {
    uint8_t type = OHCA_SRQT_BASIC;
    uint32_t xrcdn = 0; // XRC: its domain and the CQ of its receives
    uint32_t cqn = 0;
    uint32_t pdn = 0;
    uint32_t uar = 0;
    unsigned int log_size = 0;
    unsigned int log_stride = 0;
    PageList ring;
    uint32_t pi = 0;    // producer index from doorbells or the record, free running
    uint32_t ci = 0;    // WQEs taken by the device
    uint32_t limit = 0; // armed when nonzero
    bool error = false; // the ring could not be read: stopped
    // Its doorbell record (db_record.hpp): 0, or where the producer keeps
    // the producer index; record values refused, saturating.
    uint64_t db_record = 0;
    uint32_t record_errors = 0;
    // Events waiting for room in EQ 0, bit n for event code n.
    uint8_t held_events = 0;
    uint32_t qp_refs = 0;

    [[nodiscard]] uint32_t size() const { return 1u << log_size; }
    [[nodiscard]] uint32_t available() const { return pi - ci; }
    [[nodiscard]] uint64_t offset(uint32_t index) const {
        return uint64_t{index & (size() - 1)} << log_stride;
    }
    // After taking a WQE: true once when the armed limit is crossed (the
    // limit disarms).
    bool limit_reached();
};

class CqTable;
class DbRecords;
class PdTable;
class XrcTransport;

// The XRC target QPs that borrow an XRC SRQ per request (the QP table):
// told when the SRQ goes, so that none keeps its numbers.
class XrcSrqBorrowers {
  public:
    XrcSrqBorrowers() = default;
    XrcSrqBorrowers(const XrcSrqBorrowers &) = delete;
    XrcSrqBorrowers &operator=(const XrcSrqBorrowers &) = delete;
    virtual void release_xrc_srq(uint32_t srqn) = 0;

  protected:
    ~XrcSrqBorrowers() = default;
};

class SrqTable {
  public:
    SrqTable(const Host &host, PblBudget &pbl, DbRecords &records, EventSink &events,
             const UarTable &uars, UarRefs &uar_refs, PdTable &pds, CqTable &cqs, XrcTransport &xrc)
        : host_(host), pbl_(pbl), records_(records), events_(events), uars_(uars),
          uar_refs_(uar_refs), pds_(pds), cqs_(cqs), xrc_(xrc) {}
    SrqTable(const SrqTable &) = delete;
    SrqTable &operator=(const SrqTable &) = delete;

    // The QP table, created after this one.
    void set_borrowers(XrcSrqBorrowers &b) { borrowers_ = &b; }
    void reset();
    [[nodiscard]] Srq *find(uint32_t srqn) {
        return srqn < srqs_.size() ? srqs_[srqn].get() : nullptr;
    }

    CmdResult cmd_create_srq(const Command &cmd);
    CmdResult cmd_modify_srq(const Command &cmd);
    CmdResult cmd_query_srq(const Command &cmd);
    CmdResult cmd_destroy_srq(const Command &cmd);
    // The SRQ doorbell; false: ignored (counted by the caller).
    bool doorbell(uint32_t page, uint32_t srqn, uint32_t value);
    // The next receive WQE of a QP on an SRQ (qp.srqn), into the QP's
    // recv_* fields.
    SrqTake take_wqe(Qp &qp);

    // The SRQs (objects/snapshot.cpp); the references they hold into 'refs'.
    // Version 2 of the section adds their doorbell records.
    void save(state::Writer &w) const;
    void load(state::Reader &r, uint16_t version, state::Refs &refs);

  private:
    const Host &host_;
    PblBudget &pbl_;
    DbRecords &records_;
    EventSink &events_;
    const UarTable &uars_;
    UarRefs &uar_refs_;
    PdTable &pds_;
    CqTable &cqs_;
    XrcTransport &xrc_;
    XrcSrqBorrowers *borrowers_ = nullptr;
    Table<Srq> srqs_;
};

} // namespace ohca
