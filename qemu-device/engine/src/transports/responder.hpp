// SPDX-License-Identifier: GPL-2.0-or-later
// The RC responder (responder.cpp): requests (SEND, RDMA WRITE, RDMA READ,
// atomics) executed in PSN order, ACK/NAK generation, READ responses sent a
// bounded number at a time. Per-QP state lives in Qp.
#pragma once

#include "objects/wqe_batch.hpp"
#include "transports/transport.hpp"

namespace ohca {

class RcResponder {
  public:
    explicit RcResponder(TransportServices &svc) : svc_(svc) {}

    // The QPs are gone or replaced (reset, a snapshot loaded): a QP made
    // again at the same address may restart at an index the batch holds.
    void forget_wqes() { rq_batch_.clear(); }

    // A request packet for this QP.
    void rx(Qp &qp, const ParsedPacket &pkt);
    // Sends queued ACKs and READ responses in order; 'quantum' counts down
    // per packet and is left at 0 when there may be more to send.
    void process_responses(Qp &qp, unsigned int &quantum);
    // Refuses the request at the expected PSN that a transport beside RC
    // found invalid (XRC: its XRCETH): NAK 'nak', event, QP to ERR. Nothing
    // happens outside the states in which the QP takes requests.
    void reject(Qp &qp, uint8_t nak, uint16_t event);
    // After an acknowledgement that advertised no credits, receive WQEs
    // were posted: an ACK of the last PSN tells the requester, which may be
    // waiting for them (credits.hpp). Nothing otherwise.
    void credit_update(Qp &qp);

  private:
    // The steps of rx().
    bool check_psn(Qp &qp, const ParsedPacket &pkt);
    bool check_opcode_and_length(Qp &qp, const ParsedPacket &pkt);
    void execute_read(Qp &qp, const ParsedPacket &pkt);
    bool take_recv_wqe(Qp &qp, const ParsedPacket &pkt);
    bool execute_send(Qp &qp, const ParsedPacket &pkt);
    bool execute_write(Qp &qp, const ParsedPacket &pkt);
    void acknowledge(Qp &qp, const ParsedPacket &pkt);

    uint8_t ack_syndrome(Qp &qp);
    // 'coalesce': the request was looped back, so a plain ACK may wait in
    // the QP's response queue for the visit after this run of packets.
    void send_ack(Qp &qp, uint32_t psn, uint8_t syndrome, bool coalesce = false);
    void error(Qp &qp, uint8_t nak, uint16_t event);
    // On-demand paging: true when the request cannot go on now -- a page
    // fault is pending (RNR NAK: the requester sends it again after its
    // RNR wait) or failed (the access error; 'recv': the receive WQE
    // completes with it first).
    bool odp_blocked(Qp &qp, OdpState st, uint32_t psn, bool recv = false);
    bool load_recv_wqe(Qp &qp);
    bool read_allowed(const Qp &qp, const Reth &r);
    void duplicate_read(Qp &qp, uint32_t psn, const Reth &r);
    void duplicate_atomic(Qp &qp, uint32_t psn);
    void execute_atomic(Qp &qp, const ParsedPacket &pkt);
    void execute_atomic_write(Qp &qp, const ParsedPacket &pkt);

    TransportServices &svc_;
    // The RQ's posted WQEs, read in one DMA: consumed in order, one per
    // message, from one visit or received packet to the next.
    WqeBatch rq_batch_;
};

} // namespace ohca
