// SPDX-License-Identifier: GPL-2.0-or-later
// What the RC requester's three files share (requester.cpp: the send
// queue; completer.cpp: responses; rc_retransmit.cpp: timeouts, go-back-N
// and the congestion window): facts about WQEs in flight and PSNs.
#pragma once

#include "transports/transport.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ohca::rc_req {

inline constexpr uint8_t kSendFlagsKnown =
    OHCA_WQE_SIGNALED | OHCA_WQE_SOLICITED | OHCA_WQE_FENCE | OHCA_WQE_INLINE;

// IBTA RNR timer codes, in microseconds x 100 (code 0 is 655.36 ms).
inline constexpr std::array<uint32_t, 32> kRnrTimer100us = {
    65536, 1,    2,    3,    4,    6,     8,     12,    16,    24,   32,
    48,    64,   96,   128,  192,  256,   384,   512,   768,   1024, 1536,
    2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152};

inline bool is_read(const SendWr &w) {
    return w.opcode == OHCA_WR_RDMA_READ;
}
inline bool is_atomic(const SendWr &w) {
    return w.opcode == OHCA_WR_ATOMIC_CMP_SWP || w.opcode == OHCA_WR_ATOMIC_FETCH_ADD;
}
// READs and atomics complete only with their response data (an ACK past
// them means it was lost); they count against max_rd_atomic.
inline bool awaits_response(const SendWr &w) {
    return is_read(w) || is_atomic(w);
}

// Memory-management WQEs: executed here, no packets, no XRCETH.
inline bool is_local_opcode(uint8_t op) {
    return op == OHCA_WR_LOCAL_INV || op == OHCA_WR_REG_MR || op == OHCA_WR_BIND_MW;
}

inline bool known_opcode(uint8_t op) {
    return op <= OHCA_WR_ATOMIC_FETCH_ADD || op == OHCA_WR_SEND_INV || op == OHCA_WR_LOCAL_INV ||
           op == OHCA_WR_REG_MR || op == OHCA_WR_BIND_MW || op == OHCA_WR_ATOMIC_WRITE;
}

// Index of the WQE whose PSNs hold 'psn', or q.size(): a binary search, as
// the WQEs' PSN ranges follow each other in 'inflight' (a local operation
// has an empty one; only a WQE that failed before it was given PSNs has
// none, and it is always the last).
inline size_t wqe_at_psn(const WrQueue &q, uint32_t psn) {
    size_t n = q.size();
    if (n > 0 && q[n - 1].npkts == 0) {
        --n;
    }
    size_t lo = 0;
    size_t hi = n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (psn_diff(psn, psn_add(q[mid].first_psn, q[mid].npkts)) >= 0) {
            lo = mid + 1; // wholly before psn
        } else {
            hi = mid;
        }
    }
    return lo < n && psn_diff(psn, q[lo].first_psn) >= 0 ? lo : q.size();
}

// Where a NAK at 'psn' resumes once ack_through() has taken what it
// acknowledges: at 'psn', or at una if that stayed at a READ (or atomic)
// before it whose responses are missing. ack_through() went back there;
// resuming past it left the window full from una and no packet, so no ACK
// timer, to come.
inline uint32_t nak_resume(const Qp &qp, uint32_t psn) {
    return psn_diff(qp.una_psn, psn) < 0 ? qp.una_psn : psn;
}

// Packets sent and not acknowledged: the transmit cursor is past the start
// of the oldest WQE or, after a timeout while the cursor waits behind
// packets sent before it (frto), PSNs before sent_psn are unacknowledged.
inline bool outstanding(const Qp &qp) {
    return qp.cur_wr > 0 || qp.cur_pkt > 0 ||
           (qp.frto != Qp::Frto::Off && psn_diff(qp.sent_psn, qp.una_psn) > 0);
}

// An ACK is owed: a packet that asked for one is unacknowledged.
// outstanding() alone also holds while the rest of a message waits to be
// sent with every packet that asked acknowledged, and the responder
// answers the packets sent without asking only with the next one that
// asks, which the sender's own delays may hold back (the DCQCN pacer, the
// port's bucket or a pause, the link's credit, the host's scheduling of
// the engine's run): the ACK timer times the fabric, so it runs only while
// this holds, and the next packet that asks starts it. After a timeout,
// until the responses decide (frto), the requester sends nothing new and
// waits for them: anything sent and unacknowledged is owed then.
inline bool ack_owed(const Qp &qp) {
    return psn_diff(qp.ack_req_psn, qp.una_psn) > 0 ||
           (qp.frto != Qp::Frto::Off && psn_diff(qp.sent_psn, qp.una_psn) > 0);
}

// The transmit cursor goes back to 'psn' (RcRequester::go_back): no ACK
// asked for beyond it is owed before it goes again.
inline void ack_requests_void_from(Qp &qp, uint32_t psn) {
    if (psn_diff(qp.ack_req_psn, psn) > 0) {
        qp.ack_req_psn = psn;
    }
}

// The PSN of the transmit cursor: the next packet process_sq() sends.
inline uint32_t cursor_psn(const Qp &qp) {
    return qp.cur_wr < qp.inflight.size() ? psn_add(qp.inflight[qp.cur_wr].first_psn, qp.cur_pkt)
                                          : qp.next_psn;
}

// A requester's wait decided, for the host's tracing (OHCA_ENGINE_TRACE_RC):
// what it was, why, the RTO in force after it and how late a timer's
// expiry ran -- what a migration's gap is made of (docs/migration.md).
inline void trace_rc(TransportServices &svc, const Qp &qp, unsigned int event, unsigned int reason,
                     uint64_t rto_ns, uint64_t late_ns) {
    const uint64_t us = rto_ns / 1000;
    svc.host().trace(OHCA_ENGINE_TRACE_RC, qp.qpn, event | reason << 8,
                     static_cast<uint32_t>(us > UINT32_MAX ? UINT32_MAX : us), late_ns);
}

inline uint32_t wire_imm(uint32_t le_field) {
    // The WQE holds the immediate as the wire bytes; read them in order.
    uint8_t b[4];
    std::memcpy(b, &le_field, 4);
    return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}

} // namespace ohca::rc_req
