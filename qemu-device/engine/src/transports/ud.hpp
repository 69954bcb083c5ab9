// SPDX-License-Identifier: GPL-2.0-or-later
// The UD transport, beside RC (requester.cpp, responder.cpp): UD and GSI
// QPs send and receive single-packet SENDs with a DETH, no ACKs, no
// retransmission. Each send WQE carries its address vector.
#pragma once

#include "link/roce_packet.hpp"
#include "objects/rdma_objects.hpp"

#include <cstdint>
#include <optional>

namespace ohca {

class Device;
class GidTable;

class UdTransport {
  public:
    // The work loop's turn for a UD QP: send WQEs, or flush in SQE/ERR.
    static void process_sq(Device &d, Qp &qp, unsigned int &budget);
    // A parsed UD packet addressed to this UD QP.
    static void rx(Device &d, Qp &qp, const ParsedPacket &pkt);
    // Largest UD message for a port Ethernet MTU (ohca_cmd.h).
    [[nodiscard]] static uint32_t mtu_bytes(uint32_t eth_mtu);

  private:
    static bool send_one(Device &d, Qp &qp);
    static bool load_recv(Device &d, Qp &qp, uint64_t &wr_id, std::vector<Sge> &sges);
    static void flush_sq(Device &d, Qp &qp);
    [[nodiscard]] static bool is_local_gid_of(const Device &d, const ohca_av &av);
};

// Byte offset in struct ohca_av of the first invalid field, if any:
// source GID present and of the vector's network type, a destination of
// that type, VLAN and flow label in range. For MODIFY_QP and UD WQEs.
std::optional<size_t> av_bad_field(const GidTable &gids, const ohca_av &av);

} // namespace ohca
