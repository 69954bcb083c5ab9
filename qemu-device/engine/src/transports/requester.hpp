// SPDX-License-Identifier: GPL-2.0-or-later
// The RC requester, in three files as rxe splits it: the send side
// (requester.cpp: send WQEs in order, segmentation by path MTU), the
// completer (completer.cpp: ACK/NAK, READ responses, atomic acknowledges)
// and retransmission (rc_retransmit.cpp: go-back-N with a congestion
// window, ACK and RNR timers, F-RTO). Per-QP state lives in Qp.
#pragma once

#include "objects/wqe_batch.hpp"
#include "transports/transport.hpp"

namespace ohca {

class RcRequester {
  public:
    explicit RcRequester(TransportServices &svc) : svc_(svc) {}

    // Sends what the QP may send (fetching WQEs, packets within the window),
    // or flushes it in the error state; 'quantum' counts down per packet or
    // WQE. Left at 0 when there may be more to do.
    void process_sq(Qp &qp, unsigned int &quantum);
    // An ACK, NAK or READ response for this QP.
    void rx(Qp &qp, const ParsedPacket &pkt);
    // The QP's deadline has passed (ACK timeout or end of an RNR wait).
    void timer_expired(Qp &qp);
    // A page fault it waited for was resolved (odp.cpp wakes it).
    void odp_resumed(Qp &qp);

  private:
    // completer.cpp: the response steps of rx()
    bool rx_state_ok(const Qp &qp);
    bool rx_psn_ok(const Qp &qp, uint32_t psn);
    void on_aeth(Qp &qp, uint32_t psn, uint8_t syndrome);
    void take_credits(Qp &qp, const Aeth &aeth);
    void credit_wake(Qp &qp);
    void on_rnr_nak(Qp &qp, uint32_t psn, uint8_t code);
    void on_nak(Qp &qp, uint32_t psn, uint8_t code);
    void on_read_response(Qp &qp, const ParsedPacket &pkt);
    SendWr *read_response_wqe(Qp &qp, uint32_t psn);
    static bool read_response_opcode_ok(const SendWr &w, uint8_t opcode);
    bool place_read_response(Qp &qp, const SendWr &w, uint32_t offset,
                             std::span<const uint8_t> payload);
    void read_response_placed(Qp &qp, SendWr &w, uint32_t psn);

    // requester.cpp: the send queue
    bool fetch_send_wqe(Qp &qp);
    bool credit_allows(Qp &qp, const SendWr &w);
    void message_started(Qp &qp, const SendWr &w);
    // 'credit_short': tx_room said TxRoom::CreditShort for this packet.
    void send_packet(Qp &qp, bool credit_short);
    void ack_through(Qp &qp, uint32_t psn);
    void atomic_ack(Qp &qp, uint32_t psn, uint64_t orig);
    void go_back(Qp &qp, uint32_t psn, bool asked_stay_owed = false);
    void recover_from(Qp &qp, uint32_t psn, bool timeout);
    void advance_una(Qp &qp, uint32_t una);
    void fail(Qp &qp, uint8_t status, uint8_t verr);
    void restart_ack_timer(Qp &qp);
    // Why an ACK timer expiry sent no tail-loss probe (Sent: it did), in
    // the order tail_probe() asks; each but Sent is a timeout.
    enum class NoProbe : uint8_t { Sent, AfterProbe, Full, Frto, Recovery, GoBack, Read };
    // (traced as enum ohca_engine_rc_timeout)
    static_assert(static_cast<int>(NoProbe::AfterProbe) == OHCA_ENGINE_RC_AFTER_PROBE &&
                  static_cast<int>(NoProbe::Read) == OHCA_ENGINE_RC_READ);
    NoProbe tail_probe(Qp &qp);
    void credit_wait_expired(Qp &qp, uint64_t late_ns);
    void emit_ack_request(const Qp &qp);
    // What a response after an ACK timeout says of it.
    enum class Frto : uint8_t { None, Spurious, Loss };
    Frto frto_decide(Qp &qp, uint32_t through);
    void frto_undo(Qp &qp);
    static void seek(Qp &qp, uint32_t psn);
    [[nodiscard]] uint64_t rto(const Qp &qp) const;
    static void rtt_sample(Qp &qp, uint64_t r);
    // On-demand paging: whether the next packet's local buffers have
    // translations; false when the QP must wait (or the WQE failed).
    bool odp_ready(Qp &qp);
    void fail_current(Qp &qp, uint8_t verr);

    TransportServices &svc_;
    WqeBatch sq_batch_; // the visiting QP's next WQEs, read in one DMA
};

} // namespace ohca
