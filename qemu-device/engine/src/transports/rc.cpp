// SPDX-License-Identifier: GPL-2.0-or-later
// The RC transport's entry points (rc.hpp).
#include "transports/rc.hpp"

#include "transports/xrc.hpp"

#include "link/byte_order.hpp"

#include <cstddef>
#include <cstring>

namespace ohca {

// Here rather than in transport.cpp: RC, the hot path, gets it inlined.
bool connected_accepts(TransportServices &svc, const Qp &qp, const ParsedPacket &pkt) {
    static_assert(sizeof(qp.attrs.av.dgid) == 16);
    // The peer: its GID on RoCE, its LID on InfiniBand (the AV read as
    // struct ohca_av_ib names it).
    static_assert(sizeof(ohca_av_ib) == sizeof(qp.attrs.av));
    bool peer = false;
    if (pkt.is_ib) {
        ohca_le16 dlid{}; // only the field the check reads, per packet
        std::memcpy(&dlid,
                    reinterpret_cast<const uint8_t *>(&qp.attrs.av) + offsetof(ohca_av_ib, dlid),
                    sizeof(dlid));
        peer = le(dlid) == pkt.ib.slid;
    } else {
        peer = std::memcmp(qp.attrs.av.dgid, pkt.sgid.data(), 16) == 0;
    }
    if (!peer) {
        ++svc.counters().rx_no_qp; // not from the connection's peer
        svc.count_rx_dropped();
        return false;
    }
    const uint8_t op = pkt.fields.bth.opcode;
    if (is_ud_opcode(op) || is_uc_opcode(op) != (qp.type == OHCA_QPT_UC) ||
        is_xrc_opcode(op) != is_xrc_qp(qp.type)) {
        // UD to a connected QP, or RC, UC and XRC crossed.
        ++svc.counters().rx_bad_opcode;
        svc.count_rx_dropped();
        return false;
    }
    return true;
}

void rc_visit(TransportServices &svc, RcRequester &req, RcResponder &resp, Qp &qp,
              unsigned int &quantum) {
    if (qp.state == OHCA_QPS_ERR) {
        svc.flush(qp, quantum);
        return;
    }
    resp.credit_update(qp);
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
