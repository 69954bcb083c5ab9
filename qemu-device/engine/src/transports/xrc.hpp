// SPDX-License-Identifier: GPL-2.0-or-later
// The XRC transport (IBTA 9.7 with the XRC additions of 14.x): RC's
// protocol between an XRC initiator QP and an XRC target QP, so the RC
// requester and responder do the work; this type owns what XRC adds --
// the XRC domains, the XRCETH on requests, the XRC opcode prefix on the
// wire, and the target's per-request choice of an XRC SRQ (same domain,
// XRC type, else NAK Invalid Request), whose PD, WQEs and CQ the request
// then uses. Per-QP state lives in Qp (xrcdn, and on a target the SRQ,
// PD and CQ of the request being received).
#pragma once

#include "device/limits.hpp"
#include "transports/rc.hpp"
#include "transports/requester.hpp"
#include "transports/responder.hpp"
#include "transports/transport.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace ohca {

[[nodiscard]] inline bool is_xrc_qp(uint8_t type) {
    return type == OHCA_QPT_XRC_INI || type == OHCA_QPT_XRC_TGT;
}

// RC's requester and responder build XRC QPs' packets too: on the wire
// their opcodes carry the XRC prefix (the XRCETH is the WQE's). They send
// through these, so the port below sends what it is given.
inline EmitResult rc_emit_fill(TransportServices &svc, const Qp &qp, const PacketFields &f,
                               size_t payload_len, PayloadFill fill) {
    if (is_xrc_qp(qp.type)) {
        PacketFields x = f;
        x.bth.opcode = static_cast<uint8_t>(xrc::kPrefix | (f.bth.opcode & 0x1f));
        return svc.emit_fill(qp, x, payload_len, fill);
    }
    return svc.emit_fill(qp, f, payload_len, fill);
}
// A packet without payload (ACKs, atomic ACKs).
inline void rc_emit(TransportServices &svc, const Qp &qp, const PacketFields &f) {
    (void)rc_emit_fill(svc, qp, f, 0, [](std::span<uint8_t> /*out*/) { return true; });
}

class XrcTransport final : public Transport {
  public:
    XrcTransport(TransportServices &svc, RcRequester &req, RcResponder &resp)
        : svc_(svc), req_(req), resp_(resp) {}

    // XRC domains: numbers 1..max_xrcd, each counting the SRQs and target
    // QPs that belong to it.
    void reset() override { refs_.assign(DeviceLimits::max_xrcd + 1, kFree); }
    std::optional<uint32_t> alloc_domain();
    // OK, BAD_HANDLE (no such domain) or BAD_STATE (still in use).
    uint8_t dealloc_domain(uint32_t xrcdn);
    [[nodiscard]] bool domain_exists(uint32_t xrcdn) const {
        return xrcdn < refs_.size() && refs_[xrcdn] != kFree;
    }
    void get(uint32_t xrcdn) { ++refs_[xrcdn]; }
    void put(uint32_t xrcdn) {
        if (domain_exists(xrcdn) && refs_[xrcdn] > 0) {
            --refs_[xrcdn];
        }
    }

    // The domains and their counts (transports/snapshot.cpp); the counts
    // are checked once everything is loaded (state/refs.hpp).
    void save(state::Writer &w) const;
    void load(state::Reader &r);
    [[nodiscard]] uint32_t refs(uint32_t xrcdn) const { return refs_[xrcdn]; }

    // RC's visit: an initiator sends, a target answers.
    void visit(Qp &qp, unsigned int &quantum) override { rc_visit(svc_, req_, resp_, qp, quantum); }
    // A packet for an XRC QP: responses to an initiator's requester,
    // requests (after the XRCETH check) to a target's responder, with the
    // opcode's RC value.
    void rx(Qp &qp, const ParsedPacket &pkt) override;
    void timer_expired(Qp &qp) override { req_.timer_expired(qp); }
    void odp_resumed(Qp &qp) override { req_.odp_resumed(qp); }

  private:
    static constexpr uint32_t kFree = UINT32_MAX;
    void rx_request(Qp &qp, ParsedPacket &pkt);

    TransportServices &svc_;
    RcRequester &req_;
    RcResponder &resp_;
    std::vector<uint32_t> refs_ = std::vector<uint32_t>(DeviceLimits::max_xrcd + 1, kFree);
};

} // namespace ohca
