// SPDX-License-Identifier: GPL-2.0-or-later
// RDMA objects owned by the device: completion EQs, PDs, MRs, CQs and QPs,
// in tables indexed by their handle. Plain values; the behaviour lives in
// their owners (objects/: the tables and their commands, completions.cpp)
// and the transports (transports/).
#pragma once

#include "device/event_queue.hpp"
#include "device/sched.hpp"
#include "objects/odp.hpp"
#include "objects/page_list.hpp"
#include "transports/dcqcn.hpp"
#include "transports/responder_resources.hpp"

#include <ohca/ohca_cmd.h>
#include <ohca/ohca_queue.h>

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

namespace ohca {

struct CompletionEq {
    explicit CompletionEq(unsigned int vector) : eq(vector) {}
    EventQueue eq;
    uint32_t cq_refs = 0;
    bool stopped = false; // overran its consumer
};

struct Pd {
    uint32_t refs = 0; // MRs and QPs
};

struct Mr {
    uint32_t key = 0;    // current key: only it grants access
    uint32_t handle = 0; // the key CREATE_MR returned (DESTROY_MR)
    uint32_t pdn = 0;
    uint32_t access = 0;
    uint64_t iova = 0;
    uint64_t length = 0;
    bool physical = false;
    // Fast registration (fast_reg.cpp): free (no translation) until a
    // REG_MR WQE, free again after an invalidation; at most 'capacity'
    // pages.
    bool fast_reg = false;
    bool valid = true;
    uint32_t capacity = 0;
    PageList pages;       // page 0 holds iova & ~(page_size - 1)
    uint32_t windows = 0; // memory windows bound to it: no DESTROY_MR
    // On device memory (REG_DM_MR, dm.cpp): the allocation's handle (0:
    // guest memory) and the byte of device memory at iova 0.
    uint32_t dm_handle = 0;
    uint64_t dm_base = 0;
    // On-demand paging (odp.cpp): the translations the driver installed;
    // null for an MR with a page list. 'implicit': the whole address space.
    std::unique_ptr<OdpPages> odp;
    bool implicit = false;
};

// A memory window (mw.cpp): a range of an MR with its own rkey and rights.
struct Mw {
    uint8_t type = OHCA_MW_TYPE_1;
    uint32_t pdn = 0;
    uint32_t key = 0;    // current key: only it grants access
    uint32_t handle = 0; // the key ALLOC_MW returned (DEALLOC_MW)
    bool bound = false;  // has an MR and a nonzero range
    uint32_t qpn = 0;    // type 2: the QP it was bound through
    uint32_t mr_index = 0;
    uint32_t mr_key = 0; // the MR's key at the bind: it must still be current
    uint64_t addr = 0;
    uint64_t length = 0;
    uint32_t access = 0;
};

struct Cq {
    uint32_t cqn = 0;
    uint32_t eqn = 0;
    uint32_t uar = 0;
    unsigned int log_size = 0;
    PageList ring;
    uint32_t pi = 0; // CQEs written, free running
    uint32_t ci = 0; // consumer index (24 bits significant in doorbells)
    // Its doorbell record (db_record.hpp): 0, or where the consumer keeps
    // the consumer index; record values refused, saturating.
    uint64_t db_record = 0;
    uint32_t record_errors = 0;
    // A consumer index from a doorbell or the record (24 bits): taken
    // unless it claims CQEs not yet written.
    [[nodiscard]] bool take_ci(uint32_t value) {
        const uint32_t delta = (value - ci) & OHCA_DB_CQ_CI_MASK;
        if (delta > pi - ci) {
            return false;
        }
        ci += delta;
        return true;
    }
    bool arm_next = false;
    bool arm_solicited = false;
    bool error = false;
    // Events of this CQ waiting for room in EQ 0 (device/async_events.cpp).
    uint8_t held_events = 0;
    uint32_t qp_refs = 0;
    // The QPs that complete into it, each once (QpTable keeps the list), so
    // that RESIZE_CQ looks at those only, not at every QP.
    std::vector<uint32_t> qpns;
    // Completion event moderation (MODIFY_CQ; completion.cpp): the event
    // of an armed CQ waits for mod_count eligible CQEs or mod_period_us
    // after the first of them. mod_pending counts those written since the
    // CQ was armed; deadline_ns is the period's end (0: no timer), the CQ
    // timer heap's key.
    uint16_t mod_count = 0;
    uint16_t mod_period_us = 0;
    uint32_t mod_pending = 0;
    uint64_t deadline_ns = 0;
    HeapHook timer; // place in the CQ timer heap
};

struct Sge {
    uint64_t addr = 0;
    uint32_t length = 0;
    uint32_t lkey = 0;
};

// A send WQE the requester has taken from the SQ and not yet retired.
struct SendWr {
    uint32_t index = 0; // SQ index (free running)
    uint64_t wr_id = 0;
    uint8_t opcode = 0;
    uint8_t flags = 0;
    uint32_t imm = 0; // wire value (big-endian interpretation)
    uint64_t remote_addr = 0;
    uint32_t rkey = 0;
    uint32_t length = 0;
    uint64_t cmp_add = 0;  // atomics: compare value or addend
    uint64_t swap = 0;     // ATOMIC_CMP_SWP: the new value
    uint32_t xrc_srqn = 0; // XRC initiator: the XRCETH of its requests
    std::vector<Sge> sges;
    std::vector<uint8_t> inline_data;
    bool is_inline = false;
    // A memory-management WQE (REG_MR, LOCAL_INV) executed when fetched:
    // no packets, completes in order once everything before it has.
    bool local_op = false;
    uint32_t first_psn = 0;
    uint32_t npkts = 1;
    uint32_t ssn = 0; // send sequence number, its message's (credits.hpp)
    // READ and atomics (one "response packet", the atomic acknowledge):
    uint32_t read_pkts = 0;  // READ: response packets received in order
    uint32_t read_start = 0; // READ: packets the last request asked for:
    uint32_t read_end = 0;   // [read_start, read_end)
    bool read_done = false;
    // A WQE that failed local checks is never transmitted: it completes
    // with this status once everything before it has completed.
    uint8_t local_status = OHCA_CQE_SUCCESS;
    uint8_t local_verr = OHCA_VERR_NONE;

    // Back to a new WQE's values, keeping the vectors' storage: a reused
    // SendWr costs no allocation.
    void reset() {
        std::vector<Sge> s = std::move(sges);
        std::vector<uint8_t> d = std::move(inline_data);
        *this = SendWr{};
        s.clear();
        d.clear();
        sges = std::move(s);
        inline_data = std::move(d);
    }
};

// The requester's WQEs in flight, oldest first: a ring of SendWr whose
// slots are reused, so taking a WQE allocates nothing once the ring has
// grown to the QP's depth (at most its SQ size: the SQ bounds what is in
// flight). An idle QP holds no storage; a drained ring that grew large
// gives it back.
class WrQueue {
  public:
    [[nodiscard]] size_t size() const { return count_; }
    [[nodiscard]] bool empty() const { return count_ == 0; }
    SendWr &operator[](size_t i) { return slots_[(head_ + i) & (slots_.size() - 1)]; }
    const SendWr &operator[](size_t i) const { return slots_[(head_ + i) & (slots_.size() - 1)]; }
    SendWr &front() { return (*this)[0]; }
    [[nodiscard]] const SendWr &front() const { return (*this)[0]; }
    SendWr &back() { return (*this)[count_ - 1]; }
    [[nodiscard]] const SendWr &back() const { return (*this)[count_ - 1]; }

    // The slot after the last, reset, not yet in the queue: filled in place
    // and added by commit(). References to queued WRs stay valid until then
    // only if the ring did not grow (callers hold none across it).
    SendWr &stage() {
        if (count_ == slots_.size()) {
            grow();
        }
        SendWr &w = slots_[(head_ + count_) & (slots_.size() - 1)];
        w.reset();
        return w;
    }
    void commit() { ++count_; }
    void push_back(SendWr &&wr) {
        stage() = std::move(wr);
        commit();
    }
    void pop_front() {
        head_ = (head_ + 1) & (slots_.size() - 1);
        if (--count_ == 0 && slots_.size() > kKeep) {
            slots_.clear();
            slots_.shrink_to_fit();
            head_ = 0;
        }
    }

  private:
    static constexpr size_t kKeep = 64; // slots kept by a drained ring
    void grow() {
        std::vector<SendWr> n(slots_.empty() ? 4 : slots_.size() * 2);
        for (size_t i = 0; i < count_; ++i) {
            n[i] = std::move((*this)[i]);
        }
        slots_ = std::move(n);
        head_ = 0;
    }
    std::vector<SendWr> slots_; // a power of two in size
    size_t head_ = 0;
    size_t count_ = 0;
};

struct QpAttrs {
    uint8_t path_mtu = 0; // IBTA enum
    uint8_t timeout = 0;
    uint8_t retry_cnt = 0;
    uint8_t rnr_retry = 0;
    uint8_t min_rnr_timer = 0;
    uint8_t max_rd_atomic = 0;
    uint8_t max_dest_rd_atomic = 0;
    uint16_t pkey_index = 0;
    uint32_t access = 0;
    uint32_t dest_qpn = 0;
    uint32_t rq_psn = 0;
    uint32_t sq_psn = 0;
    uint32_t qkey = 0;
    ohca_av av{};
    uint16_t udp_sport = 0; // from MODIFY_QP with the AV; 0: the device's choice
};

struct WorkQueue {
    unsigned int log_size = 0;
    unsigned int log_stride = 0;
    PageList ring;
    uint32_t pi = 0; // producer index from doorbells
    uint32_t ci = 0; // next WQE the device consumes / retires
    // An RQ's doorbell record (db_record.hpp): 0, or where the producer
    // keeps the producer index; record values refused, saturating.
    uint64_t db_record = 0;
    uint32_t record_errors = 0;
    [[nodiscard]] uint32_t size() const { return 1u << log_size; }
    [[nodiscard]] uint64_t offset(uint32_t index) const {
        return uint64_t{index & (size() - 1)} << log_stride;
    }
};

// A producer index from a doorbell or a record, for every ring the
// consumer fills (a QP's SQ and RQ, an SRQ, a receive WQ: their free
// running pi and ci, and size()): taken unless it is behind the device's
// copy or more than the ring ahead of ci.
template <class Ring> [[nodiscard]] bool take_pi(Ring &q, uint32_t value) {
    const uint32_t ahead = value - q.ci;
    if (ahead > q.size() || ahead < q.pi - q.ci) {
        return false;
    }
    q.pi = value;
    return true;
}

struct Qp {
    uint32_t qpn = 0;
    uint8_t type = OHCA_QPT_RC; // enum ohca_qp_type
    uint8_t state = OHCA_QPS_RESET;
    // QP events waiting for room in EQ 0, bit n for event code n
    // (device/async_events.cpp).
    uint8_t held_events = 0;
    uint32_t pdn = 0;
    uint32_t send_cqn = 0;
    uint32_t recv_cqn = 0;
    uint32_t uar = 0;
    uint32_t max_inline = 0;
    uint32_t srqn = 0; // receives come from this SRQ (then rq is unused)
    // XRC target: its domain. Its srqn, pdn and recv_cqn are those of the
    // XRC SRQ the request being received names (xrc.cpp), not references:
    // 0, or those of a live SRQ (DESTROY_SRQ takes them back, srq.cpp).
    uint32_t xrcdn = 0;
    uint32_t windows = 0; // type 2 windows bound through it (mw.cpp)
    uint32_t flows = 0;   // raw Ethernet: flows steering to it (raw_eth.cpp)
    // An RSS QP (CREATE_RSS_QP): its hash configuration's slot in the
    // WQ table (objects/wq.hpp); it has no SQ or RQ of its own.
    uint32_t rss = 0;
    WorkQueue sq;
    WorkQueue rq;
    QpAttrs attrs;

    // Requester (UD: sq_fetched, next_psn and sq_draining only).
    // sq.ci: oldest WQE not retired; 'fetched': next to take.
    uint32_t sq_fetched = 0;
    WrQueue inflight;
    size_t cur_wr = 0;    // transmit cursor: inflight[cur_wr] ...
    uint32_t cur_pkt = 0; // ... packet cur_pkt of it
    uint32_t next_psn = 0;
    uint32_t una_psn = 0;  // oldest unacknowledged PSN
    uint32_t sent_psn = 0; // past the highest PSN sent: below it is a resend
    uint8_t retry_left = 0;
    uint8_t rnr_left = 0;
    uint8_t rnr_streak = 0; // RNR NAKs in a row without progress
    bool rnr_wait = false;
    // Waiting for a page fault of an ODP MR (odp.cpp): the SQ does not go
    // on until ODP_MAP resolves one, or the retry timer expires.
    bool odp_wait = false;
    // READ and atomic WQEs in 'inflight' whose responses have not all
    // arrived (kept so that fences and the initiator depth, max_rd_atomic,
    // cost O(1) per WQE, not a scan).
    uint32_t reads_pending = 0;
    uint32_t wqes_failed = 0; // WQEs in 'inflight' that failed local checks
    uint64_t deadline_ns = 0; // ACK or RNR timer, 0 = none (set by TimerHeap)
    uint32_t cwnd = 0;        // congestion window, packets (DeviceLimits)
    uint32_t ssthresh = 0;    // slow start below it, +1 per window above
    uint32_t cwnd_acked = 0;  // packets acknowledged towards the next +1
    // Retransmission timeout (rc_retransmit.cpp): smoothed round trip and
    // its variation, from ACKs of one timed packet at a time that was sent
    // once (Karn's rule); rto_ns 0 until the first sample (the local ACK
    // timeout applies), doubled on each expiry up to it and kept so until
    // the next sample (a spurious timeout undone gives none).
    uint64_t srtt_ns = 0;
    uint64_t rttvar_ns = 0;
    uint64_t rto_ns = 0;
    uint64_t rtt_sent_ns = 0; // the timed packet was sent then ...
    uint32_t rtt_psn = 0;     // ... with this PSN, while rtt_timing
    bool rtt_timing = false;
    // The newest packet went again as a tail-loss probe since the last
    // progress (rc_retransmit.cpp, tail_probe): the next expiry is a
    // timeout. Not in the snapshot: a loaded QP probes once more at most.
    bool tlp_out = false;
    // Gone back to recover_psn for a loss: further signs of the same loss
    // (responses of later READs, duplicate ACKs) do not go back again.
    bool recovering = false;
    uint32_t recover_psn = 0;
    // When the ACK timer was last started (until 2026-12-06 a spurious
    // timeout's undo took the silence since then as a round-trip sample;
    // now not read, kept in the snapshot's layout).
    uint64_t ack_timer_start_ns = 0;
    // The PSN after the last packet sent that asked for an ACK (AckReq: a
    // READ or atomic request, a message's last packet, ...): the ACK timer
    // runs only while one of those is unacknowledged (rc_common.hpp,
    // ack_owed). Not in the snapshot: a loaded QP takes sent_psn, which
    // at worst runs the timer as if every packet had asked.
    uint32_t ack_req_psn = 0;
    // Telling a spurious ACK timeout (requester.cpp, F-RTO): after the
    // timeout only the oldest unacknowledged packets go again (Probe), and
    // the responses decide. One acknowledging everything sent, or two in
    // a row past what was sent again (Confirm in between), answer packets
    // sent before the timeout: it is undone, the window, the transmit
    // cursor (at frto_resume) and the recovery state are again those kept
    // here. Anything else: the loss was real.
    enum class Frto : uint8_t { Off, Probe, Confirm };
    Frto frto = Frto::Off;
    bool frto_recovering = false; // 'recovering' before the timeout
    // Probe: past what was sent again since the timeout; Confirm: past
    // what the first response acknowledged.
    uint32_t frto_end = 0;
    uint32_t frto_resume = 0; // the transmit cursor's PSN at the timeout
    uint32_t frto_recover_psn = 0;
    uint32_t frto_cwnd = 0;
    uint32_t frto_ssthresh = 0;
    uint32_t frto_cwnd_acked = 0;
    uint64_t frto_rto_ns = 0; // no longer read; kept in the snapshot's layout
    bool sq_draining = false;
    // End-to-end credits (transports/credits.hpp): the SSN of the last
    // message fetched, the limit the peer's AETHs allow, whether the peer
    // gives no credits (code 0x1f); 'credit_probe': one message past the
    // limit may start (at first, and after 'credit_wait', the timer a QP
    // with nothing outstanding waits on for credits, expired).
    uint32_t ssn = 0;
    uint32_t credit_lsn = 0;
    bool credits_unlimited = false;
    bool credit_probe = true;
    bool credit_wait = false;
    // When the credit wait began (its ACK requests double from there up to
    // the local ACK timeout: rc_retransmit.cpp, credit_wait_expired). Its
    // own field, not the ACK timer's start: the two never run at once (a
    // QP waits for credits only with nothing outstanding), but a wait that
    // shares the timer's field breaks as soon as the timer's start is read.
    // In the snapshot it takes the slot of frto_since_ns, unused since
    // 2026-12-06 (an older snapshot's 0 there: a loaded credit wait sends
    // its one message past the limit at its next expiry).
    uint64_t credit_wait_since_ns = 0;

    // Responder.
    uint32_t epsn = 0;
    uint32_t msn = 0;
    bool nak_sent = false;
    bool comm_est = false;
    // The last AETH advertised no credits: receive WQEs posted since are
    // told to the requester at once (an ACK of the last PSN).
    bool credits_zero_sent = false;
    enum class InMsg : uint8_t { None, Send, Write };
    InMsg in_msg = InMsg::None;
    bool recv_loaded = false;
    uint64_t recv_wr_id = 0;
    uint32_t recv_index = 0;       // SRQ index of the loaded WQE
    bool last_wqe_pending = false; // in ERR on an SRQ: LAST_WQE_REACHED owed
    std::vector<Sge> recv_sges;
    uint32_t recv_offset = 0;
    uint64_t write_va = 0;
    uint32_t write_key = 0;
    uint32_t write_left = 0;
    uint32_t write_total = 0;
    ResponderResources resp; // responses owed, saved atomic results

    // DCQCN (transports/dcqcn.hpp): the rate this QP sends at, the CNPs
    // it sent.
    dcqcn::QpState cc;

    SchedHook sched; // ready list and timer heap links (sched.hpp)
};

// An XRC target QP lets go of the XRC SRQ it borrowed, and of the SRQ's PD
// and CQ: a receive WQE it holds of it is dropped (no completion).
inline void release_xrc_srq(Qp &qp) {
    qp.srqn = 0;
    qp.pdn = 0;
    qp.recv_cqn = 0;
    qp.recv_loaded = false;
    qp.recv_sges.clear();
    qp.recv_offset = 0;
}

// Ordered by handle; slot 0 unused where 0 is not a valid handle. Objects
// live on the heap so that an empty table is cheap to create and reset.
template <class T> using Table = std::vector<std::unique_ptr<T>>;

// A table's lowest free slot from 1 (O(size), once per create command).
template <class T> std::optional<uint32_t> free_slot(const Table<T> &t) {
    for (uint32_t i = 1; i < t.size(); ++i) {
        if (!t[i]) {
            return i;
        }
    }
    return std::nullopt;
}

} // namespace ohca
