// SPDX-License-Identifier: GPL-2.0-or-later
// The wire side of an InfiniBand port (programming manual section 21), for
// WirePort: the LRH (and GRH) of a packet on an address vector, the
// port's rules for a packet leaving (state, VL15) and for one arriving
// (DLID, VL15, P_Key, port state) before its QP's transport sees it, the
// link's credits (ib_flow.hpp: data leaves only against the peer's credit,
// ours is returned as received packets are taken in), and the port's
// counters on the way. The port's attributes are PortState's
// (port_state.hpp: IbPort); WirePort calls in here only when the port has
// them.
#pragma once

#include "device/dev_status.hpp"
#include "device/host.hpp"
#include "device/ib_flow.hpp"
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

namespace state {
class Reader;
class Writer;
} // namespace state

class McastTable;
class QpTable;
class UdTransport;

class IbWire {
  public:
    struct Deps {
        const Host &host;
        const DevStatus &status;
        Port &link;       // frames to the host (WirePort)
        PortState &state; // its IbPort, and whether the link is up
        Stats &stats;
        RoceCounters &roce;
        QpTable &qps;
        McastTable &mcast;
        const TransportTable &transports;
        UdTransport &ud;
    };
    explicit IbWire(const Deps &deps) : d_(deps), flow_(deps.link, kDataVls) {}

    // The LRH (and GRH) of a packet on an address vector ('smi': QP0's,
    // on VL15).
    bool path(const ohca_av &av, bool smi, PacketPath &path) const;
    // Whether a packet on 'path' stays in the device.
    [[nodiscard]] bool is_local(const PacketPath &path) const;
    // The port's rules for a packet leaving: false drops it (counted).
    bool may_send(const PacketPath &path, size_t frame_len);
    // A framed packet to the link: VL15 at once, data against credit.
    void transmit(const PacketPath &path, std::span<const uint8_t> frame);
    // Whether a packet on 'path' may be made now: room to loop it back
    // ('loopback_room') or the peer's credit on its VL, and whether the
    // packets after it are about to wait for that credit (CreditShort:
    // IbFlow::short_of_credit; never for one looped back). A transport
    // that finds no credit is noted (end_run).
    [[nodiscard]] TxRoom room(const PacketPath &path, bool loopback_room) const;

    // Link (re)initialization while the device runs: credits from zero,
    // our FCPs out.
    void link_init();
    // The end of a run: the receive buffer split among the VLs the SM put
    // in operation (while the port is in Init), the FCPs due (credit
    // returned, or the period), and the SMA's trap if one is due.
    // True if a transport waited for credit in it: the peer's FCP, not
    // another run, lets it go on.
    bool end_run();
    // When the periodic FCPs or the pending trap are due (0: never, the
    // link is down).
    [[nodiscard]] uint64_t deadline() const;
    // The P_Key a QP's packet carries (QP0: the default one).
    [[nodiscard]] uint16_t pkey_of(const Qp &qp, uint16_t wqe_index) const;
    // UD's largest message: the active MTU as if it were an Ethernet one.
    [[nodiscard]] uint32_t port_mtu() const;
    // The VL a QP's packets take (its address vector's SL through the
    // SL2VL table; QP0: VL15; an SL the port does not map: VL15 too).
    [[nodiscard]] uint8_t qp_vl(const Qp &qp) const;
    // Bytes of data packets (not VL15) made so far, sent or held: what VL
    // arbitration charges a visit (vl_arbiter.hpp).
    [[nodiscard]] uint64_t data_bytes() const { return data_bytes_; }
    [[nodiscard]] const IbPort &ib_port() const { return port(); }

    // A frame from the host before the backlog: link packets (the peer's
    // credit) and frames too long for any MTU end here (nullopt: it may
    // be queued).
    std::optional<ohca_engine_rx_result> screen(std::span<const uint8_t> frame);
    // A data packet into the backlog: false if beyond the credit we gave
    // (a broken or hostile peer; dropped and counted).
    [[nodiscard]] bool take_credit(std::span<const uint8_t> frame);
    // A received packet left the backlog: its buffer's credit returns.
    void consumed(std::span<const uint8_t> frame);
    // A frame accepted from the wire, into the PMA's counters.
    void count_rcv(std::span<const uint8_t> frame);
    // A received frame the link layer refused: the port's counters.
    void parse_error(ParseError err);
    // A received (or looped-back) packet through the port's rules to its QP.
    void deliver(const ParsedPacket &p);

    // The link's credits in a saved engine (device/snapshot.cpp).
    void save(state::Writer &w) const { flow_.save(w); }
    void load(state::Reader &r) {
        flow_.load(r, d_.host.now_ns());
        flow_.set_operational(port().data_vls());
    }

  private:
    [[nodiscard]] IbPort &port() { return *d_.state.ib; }
    [[nodiscard]] const IbPort &port() const { return *d_.state.ib; }
    void drop(void (IbPort::*count)());
    void pkey_drop(const ParsedPacket &p);
    void send_trap();
    [[nodiscard]] bool live() const { return d_.status.running() && d_.state.link_up; }

    static constexpr uint8_t kDataVls = 8;
    Deps d_;
    IbFlow flow_;
    // A transport found no credit for its packet in this run (room()).
    mutable bool credit_wait_ = false;
    uint64_t data_bytes_ = 0;
};

} // namespace ohca
