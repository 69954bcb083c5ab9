// SPDX-License-Identifier: GPL-2.0-or-later
// The RC requester (requester.cpp): send WQEs in order, segmentation by path
// MTU, ACK/NAK and READ response handling, go-back-N retransmission with a
// congestion window, ACK and RNR timers. Per-QP state lives in Qp.
#pragma once

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
    bool fetch_send_wqe(Qp &qp);
    void send_packet(Qp &qp);
    void ack_through(Qp &qp, uint32_t psn);
    void atomic_ack(Qp &qp, uint32_t psn, uint64_t orig);
    void go_back(Qp &qp, uint32_t psn);
    void recover_from(Qp &qp, uint32_t psn, bool timeout);
    void advance_una(Qp &qp, uint32_t una);
    void fail(Qp &qp, uint8_t status, uint8_t verr);
    void restart_ack_timer(Qp &qp);
    // What a response after an ACK timeout says of it.
    enum class Frto : uint8_t { None, Spurious, Loss };
    Frto frto_decide(Qp &qp, uint32_t through);
    void frto_undo(Qp &qp);
    void seek(Qp &qp, uint32_t psn);
    static uint64_t rto(const Qp &qp);
    static void rtt_sample(Qp &qp, uint64_t r);
    // On-demand paging: whether the next packet's local buffers have
    // translations; false when the QP must wait (or the WQE failed).
    bool odp_ready(Qp &qp);
    void fail_current(Qp &qp, uint8_t verr);

    TransportServices &svc_;
};

} // namespace ohca
