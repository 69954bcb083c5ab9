// SPDX-License-Identifier: GPL-2.0-or-later
// The wire side of an InfiniBand port (programming manual section 21), for
// WirePort: the LRH (and GRH) of a packet on an address vector, the
// port's rules for a packet leaving (state, VL15) and for one arriving
// (DLID, VL15, P_Key, port state) before its QP's transport sees it, and
// the port's counters on the way. The port's attributes are PortState's
// (port_state.hpp: IbPort); WirePort calls in here only when the port has
// them.
#pragma once

#include "device/port_state.hpp"
#include "device/stats.hpp"
#include "link/roce_packet.hpp"
#include "transports/transport.hpp"

#include <ohca_engine.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace ohca {

class McastTable;
class QpTable;
class UdTransport;

class IbWire {
  public:
    struct Deps {
        PortState &state; // its IbPort, and whether the link is up
        Stats &stats;
        RoceCounters &roce;
        QpTable &qps;
        McastTable &mcast;
        const TransportTable &transports;
        UdTransport &ud;
    };
    explicit IbWire(const Deps &deps) : d_(deps) {}

    // The LRH (and GRH) of a packet on an address vector ('smi': QP0's,
    // on VL15).
    bool path(const ohca_av &av, bool smi, PacketPath &path) const;
    // Whether a packet on 'path' stays in the device.
    [[nodiscard]] bool is_local(const PacketPath &path) const;
    // The port's rules for a packet leaving: false drops it (counted).
    bool may_send(const PacketPath &path, size_t frame_len);
    // The P_Key a QP's packet carries (QP0: the default one).
    [[nodiscard]] uint16_t pkey_of(const Qp &qp, uint16_t wqe_index) const;
    // UD's largest message: the active MTU as if it were an Ethernet one.
    [[nodiscard]] uint32_t port_mtu() const;

    // A frame from the host before the backlog: link packets and frames
    // too long for any MTU end here (nullopt: it may be queued).
    std::optional<ohca_engine_rx_result> screen(std::span<const uint8_t> frame);
    // A frame accepted from the wire, into the PMA's counters.
    void count_rcv(std::span<const uint8_t> frame);
    // A received frame the link layer refused: the port's counters.
    void parse_error(ParseError err);
    // A received (or looped-back) packet through the port's rules to its QP.
    void deliver(const ParsedPacket &p);

  private:
    [[nodiscard]] IbPort &port() { return *d_.state.ib; }
    [[nodiscard]] const IbPort &port() const { return *d_.state.ib; }
    void drop(void (IbPort::*count)());

    Deps d_;
};

} // namespace ohca
