// SPDX-License-Identifier: GPL-2.0-or-later
// XRC (xrc.hpp): domains and the receive side of the XRC wire; sending
// is RcRequester's (a WQE's xrc_srqn becomes the XRCETH) with the prefix
// added as they are sent (rc_emit_fill, xrc.hpp).
#include "transports/xrc.hpp"

namespace ohca {

std::optional<uint32_t> XrcTransport::alloc_domain() {
    for (uint32_t i = 1; i < refs_.size(); ++i) {
        if (refs_[i] == kFree) {
            refs_[i] = 0;
            return i;
        }
    }
    return std::nullopt;
}

uint8_t XrcTransport::dealloc_domain(uint32_t xrcdn) {
    if (!domain_exists(xrcdn)) {
        return OHCA_STATUS_BAD_HANDLE;
    }
    if (refs_[xrcdn] != 0) {
        return OHCA_STATUS_BAD_STATE;
    }
    refs_[xrcdn] = kFree;
    return OHCA_STATUS_OK;
}

void XrcTransport::rx(Qp &qp, const ParsedPacket &pkt) {
    if (!connected_accepts(svc_, qp, pkt)) {
        return;
    }
    ParsedPacket p = pkt;
    p.fields.bth.opcode = static_cast<uint8_t>(pkt.fields.bth.opcode & 0x1f);
    const bool response = rc_is_response(p.fields.bth.opcode);
    // Responses go to an initiator, requests to a target, and nothing
    // else: a target has no requester, an initiator no responder.
    if (response != (qp.type == OHCA_QPT_XRC_INI)) {
        ++svc_.counters().rx_bad_opcode;
        return;
    }
    ++svc_.counters().rx_packets;
    if (response) {
        req_.rx(qp, p);
        return;
    }
    rx_request(qp, p);
}

// The XRCETH names the SRQ the request is for: it must be an XRC SRQ of
// the target QP's domain (IBTA: else NAK Invalid Request). A message keeps
// its SRQ from first to last packet.
void XrcTransport::rx_request(Qp &qp, ParsedPacket &p) {
    const uint32_t srqn = p.fields.xrceth.value_or(0);
    const Srq *srq = svc_.srq(srqn);
    const bool ok = srq != nullptr && srq->type == OHCA_SRQT_XRC && srq->xrcdn == qp.xrcdn &&
                    (qp.in_msg == Qp::InMsg::None || srqn == qp.srqn);
    if (!ok) {
        ++svc_.counters().xrc_bad_srq;
        // Only a request at the expected PSN is refused (NAK, the QP goes
        // to ERR); a duplicate or early one naming no valid SRQ is dropped
        // (a duplicate READ must not run under the previous SRQ's PD).
        if (psn_diff(p.fields.bth.psn, qp.epsn) == 0) {
            resp_.reject(qp, kNakInvalidRequest, OHCA_QP_EV_REQ_ERR);
        }
        return;
    }
    qp.srqn = srqn;
    qp.pdn = srq->pdn;
    qp.recv_cqn = srq->cqn;
    resp_.rx(qp, p);
    // Borrowed for this request only: once nothing of it is left (no
    // message under way, no receive WQE held, no READ or atomic response
    // to send under the PD), the numbers go.
    if (qp.in_msg == Qp::InMsg::None && !qp.recv_loaded && qp.resp.pending() == 0) {
        release_xrc_srq(qp);
    }
}

} // namespace ohca
