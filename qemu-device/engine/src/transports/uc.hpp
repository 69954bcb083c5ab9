// SPDX-License-Identifier: GPL-2.0-or-later
// The UC transport (IBTA 9.7, unreliable connected), beside RC and UD:
// SEND and RDMA WRITE (with and without immediate) segmented by path MTU,
// no ACKs, no retransmission. A send WQE completes once its last packet is
// on the wire. The responder takes packets in PSN order; a PSN it did not
// expect drops the message in progress, and it resynchronises on the next
// FIRST or ONLY packet (whatever its PSN). Per-QP state lives in Qp.
#pragma once

#include "transports/transport.hpp"

namespace ohca {

class UcTransport final : public Transport {
  public:
    explicit UcTransport(TransportServices &svc) : svc_(svc) {}

    // The flush in ERR, else what the QP may send (process_sq).
    void visit(Qp &qp, unsigned int &quantum) override;
    // A UC request packet for this QP.
    void rx(Qp &qp, const ParsedPacket &pkt) override;
    void timer_expired(Qp &qp) override { odp_retry_expired(svc_, qp); }
    void odp_resumed(Qp &qp) override { odp_retry_resumed(svc_, qp); }

  private:
    // Sends what the QP may send (one WQE at a time, packet by packet);
    // 'quantum' counts down per packet.
    void process_sq(Qp &qp, unsigned int &quantum);
    void receive(Qp &qp, const ParsedPacket &pkt);
    bool fetch(Qp &qp);
    bool send_packet(Qp &qp);
    void local_error(Qp &qp, const SendWr &wr, uint8_t status, uint8_t verr);
    // The message in progress is given up: its receive WQE stays for the
    // next one (IBTA: an incomplete UC message is silently dropped).
    void drop_message(Qp &qp);
    bool load_recv(Qp &qp);
    bool place_send(Qp &qp, std::span<const uint8_t> data);

    TransportServices &svc_;
};

} // namespace ohca
