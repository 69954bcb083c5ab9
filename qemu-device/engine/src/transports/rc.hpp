// SPDX-License-Identifier: GPL-2.0-or-later
// The RC transport as the device's table sees it (transport.hpp): the
// requester (requester.cpp, with the completer in completer.cpp and the
// retransmission and congestion window in rc_retransmit.cpp) and the
// responder (responder.cpp) behind one Transport. XRC (xrc.hpp) reuses the
// same requester and responder.
#pragma once

#include "transports/requester.hpp"
#include "transports/responder.hpp"
#include "transports/transport.hpp"

namespace ohca {

// One visit of a connected QP that has a requester and a responder (RC,
// XRC): the flush in ERR, else queued responses, then the send queue.
void rc_visit(TransportServices &svc, RcRequester &req, RcResponder &resp, Qp &qp,
              unsigned int &quantum);

class RcTransport final : public Transport {
  public:
    RcTransport(TransportServices &svc, RcRequester &req, RcResponder &resp)
        : svc_(svc), req_(req), resp_(resp) {}

    void visit(Qp &qp, unsigned int &quantum) override { rc_visit(svc_, req_, resp_, qp, quantum); }
    // ACKs, NAKs and READ responses to the completer, requests to the
    // responder.
    void rx(Qp &qp, const ParsedPacket &pkt) override;
    // ACK timeout, RNR wait or ODP retry (requester).
    void timer_expired(Qp &qp) override { req_.timer_expired(qp); }
    // The requester goes on (its ACK timer, if packets are outstanding).
    void odp_resumed(Qp &qp) override { req_.odp_resumed(qp); }

  private:
    TransportServices &svc_;
    RcRequester &req_;
    RcResponder &resp_;
};

} // namespace ohca
