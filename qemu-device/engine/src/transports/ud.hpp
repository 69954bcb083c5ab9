// SPDX-License-Identifier: GPL-2.0-or-later
// The UD transport, beside RC (requester.cpp, responder.cpp): UD and GSI
// QPs send and receive single-packet SENDs with a DETH, no ACKs, no
// retransmission. Each send WQE carries its address vector.
#pragma once

#include "link/roce_packet.hpp"
#include "objects/rdma_objects.hpp"
#include "transports/transport.hpp"

#include <cstdint>
#include <optional>

namespace ohca {

class GidTable;

// The transport of UD and GSI QPs.
class UdTransport final : public Transport {
  public:
    explicit UdTransport(TransportServices &svc) : svc_(svc) {}

    // The work loop's turn for a UD QP: send WQEs, or flush in SQE/ERR.
    void visit(Qp &qp, unsigned int &budget) override;
    // A packet addressed to this UD QP: UD opcodes only, then receive().
    void rx(Qp &qp, const ParsedPacket &pkt) override;
    void timer_expired(Qp &qp) override { odp_retry_expired(svc_, qp); }
    void odp_resumed(Qp &qp) override { odp_retry_resumed(svc_, qp); }
    // A UD packet for this QP (by its number or its multicast group): the
    // QP's state, Q_Key and a posted receive WQE decide.
    void receive(Qp &qp, const ParsedPacket &pkt);
    // Largest UD message for a port Ethernet MTU (ohca_cmd.h).
    [[nodiscard]] static uint32_t mtu_bytes(uint32_t eth_mtu);

  private:
    bool send_one(Qp &qp);
    bool load_recv(Qp &qp, uint64_t &wr_id, std::vector<Sge> &sges);
    void drop(uint64_t RoceCounters::*counter);

    TransportServices &svc_;
};

// Byte offset in struct ohca_av of the first invalid field, if any:
// source GID present and of the vector's network type, a destination of
// that type, VLAN and flow label in range. For MODIFY_QP and UD WQEs.
std::optional<size_t> av_bad_field(const GidTable &gids, const ohca_av &av);

} // namespace ohca
