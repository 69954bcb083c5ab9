// SPDX-License-Identifier: GPL-2.0-or-later
// The RC transport's entry points (rc.hpp).
#include "transports/rc.hpp"

namespace ohca {

void rc_visit(TransportServices &svc, RcRequester &req, RcResponder &resp, Qp &qp,
              unsigned int &quantum) {
    if (qp.state == OHCA_QPS_ERR) {
        svc.flush(qp, quantum);
        return;
    }
    resp.process_responses(qp, quantum);
    req.process_sq(qp, quantum);
}

void RcTransport::rx(Qp &qp, const ParsedPacket &pkt) {
    if (!connected_accepts(svc_, qp, pkt)) {
        return;
    }
    ++svc_.counters().rx_packets;
    if (rc_is_response(pkt.fields.bth.opcode)) {
        req_.rx(qp, pkt);
    } else {
        resp_.rx(qp, pkt);
    }
}

} // namespace ohca
