// SPDX-License-Identifier: GPL-2.0-or-later
// The device's port, wire side: what leaves and enters the device below
// the transports. It owns the port's state (port_state.hpp), its GID
// table, the link layer (link_layer.hpp; RoCEv2 by default), the backlog
// of received and looped-back packets, and the RoCE counters; it is the
// transports' WireServices (packets out, framed by the link layer or
// looped back) and the link's Port (frames to the host, paced at the
// line rate: tx_pacer.hpp). Received frames
// pass its MAC filter; those the link layer claims wait in the backlog
// until the run loop (run_loop.hpp) hands them, parsed, to their QP's
// transport.
//
// An InfiniBand port (DeviceConfig::link_layer) has the IB link layer
// (link/ib_link.hpp: LRH framing, no Ethernet) below it, its attributes in
// PortState (IbPort) and its rules for packets out and in in IbWire
// (ib_wire.hpp); its management agents answer MAD_IFC (device_cmds.hpp).
#pragma once

#include "device/device_config.hpp"
#include "device/gid_table.hpp"
#include "device/host.hpp"
#include "device/ib_wire.hpp"
#include "device/pfc.hpp"
#include "device/port_state.hpp"
#include "device/roce_backlog.hpp"
#include "device/stats.hpp"
#include "link/link_layer.hpp"
#include "link/roce_packet.hpp"
#include "transports/dcqcn.hpp"
#include "transports/transport.hpp"

#include <ohca_engine.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace ohca {

class McastTable;
class QpTable;
class RunLoop;
class UdTransport;
struct DevStatus;

class WirePort final : public WireServices, public Port {
  public:
    // What the port reaches: the device's counters and status, QPs and
    // multicast groups to deliver to, their transports, and the run loop
    // (a looped-back packet asks for a run).
    struct Deps {
        const Host &host;
        Stats &stats;
        const DevStatus &status;
        QpTable &qps;
        McastTable &mcast;
        const TransportTable &transports;
        UdTransport &ud;
        RunLoop &loop;
    };
    // The board's MAC, link state and link layer (an InfiniBand port: its
    // GUIDs) come from 'cfg'.
    WirePort(const Deps &deps, const DeviceConfig &cfg);
    ~WirePort() = default;

    // Power-on: what the driver set (MTU, receive mode, GIDs), the
    // counters and the backlog; the MAC and the link stay.
    void reset();
    [[nodiscard]] PortState &state() { return state_; }
    [[nodiscard]] const PortState &state() const { return state_; }
    [[nodiscard]] GidTable &gids() { return gids_; }
    [[nodiscard]] const GidTable &gids() const { return gids_; }
    [[nodiscard]] const RoceCounters &roce_counters() const { return roce_; }
    // DCQCN's parameters (OHCA_CMD_CC_PARAM) and counters (QUERY_STATS).
    [[nodiscard]] dcqcn::Params &cc_params() { return cc_params_; }
    [[nodiscard]] const dcqcn::Counters &cc_counters() const { return cc_; }
    // An InfiniBand port's wire side; none on Ethernet.
    [[nodiscard]] const IbWire *ib_wire() const { return state_.ib ? &ib_ : nullptr; }
    // An Ethernet port's PAUSE / PFC (pfc.hpp).
    [[nodiscard]] Pfc &pfc() { return pfc_; }
    [[nodiscard]] const Pfc &pfc() const { return pfc_; }

    // A frame from the host: the MAC filter, then the link layer's claim.
    // nullopt: an Ethernet frame the link does not claim (raw flows, then
    // the RX ring take it).
    std::optional<ohca_engine_rx_result> receive(std::span<const uint8_t> frame);
    // A frame refused with RX_RETRY waits in the host; resume_rx() asks
    // for it once the backlog has room.
    void hold_rx();
    [[nodiscard]] bool rx_waiting() const { return rx_waiting_; }
    void resume_rx();
    // The run loop's side of the backlog: the oldest packet to its QP.
    [[nodiscard]] size_t backlog_size() const { return backlog_.size(); }
    [[nodiscard]] bool backlog_empty() const { return backlog_.empty(); }
    void take_frame();
    // The link's flow control (an InfiniBand port's credits; Ethernet's
    // PAUSE and PFC): link_init() when the device starts or the link comes
    // up; end_run() after each run of the run loop sends the credit (or
    // XOFF refresh) due and says whether a transport waited for the peer's
    // credit or pause in it (then the peer's FCP or the pause's end, not
    // another run, lets it go on); link_deadline() when the periodic FCPs,
    // a pause's end or an XOFF refresh are due (0: none).
    void link_init() {
        if (state_.ib) {
            ib_.link_init();
        }
    }
    bool end_run() {
        if (state_.ib) {
            return ib_.end_run();
        }
        pfc_.tick();
        const bool paced = state_.pacer.end_run(); // both, whatever the first says
        return pfc_.end_run() || paced;
    }
    // Whether the port's pace holds every data packet back now (its bucket
    // empty; the wait noted as tx_room notes it). The run loop then ends
    // its round: the QPs not visited yet keep their places at the head of
    // the ready list and send first at the refill, so the QPs that share
    // the line take turns (a visit that was refused would have put each
    // behind the QP that took the bucket, the same order at every refill).
    // Never on an InfiniBand port (its credits are per VL) or unpaced.
    [[nodiscard]] bool pace_holds() const { return !state_.ib && !state_.pacer.may_send(host_); }
    // Whether the last run left data waiting for the pace (its refill is
    // armed): a doorbell's QP then takes no turn ahead of those QPs.
    [[nodiscard]] bool pace_waiting() const { return !state_.ib && state_.pacer.deadline() != 0; }
    [[nodiscard]] uint64_t link_deadline() const {
        if (state_.ib) {
            return ib_.deadline();
        }
        const uint64_t p = pfc_.deadline();
        const uint64_t t = state_.pacer.deadline();
        return p == 0 ? t : t == 0 ? p : std::min(p, t);
    }

    // The port's state, GIDs, counters and DCQCN parameters
    // (device/snapshot.cpp). Not the backlog: received and looped-back
    // packets waiting for a run are dropped (docs/migration.md).
    void save(state::Writer &w) const;
    void load(state::Reader &r, uint16_t version);

    // WireServices.
    [[nodiscard]] const Host &host() const override { return host_; }
    EmitResult emit_fill(const Qp &qp, const PacketFields &fields, size_t payload_len,
                         PayloadFill fill) override;
    [[nodiscard]] TxRoom tx_room(const Qp &qp) const override;
    [[nodiscard]] bool tx_paused(const Qp &qp) const override;
    [[nodiscard]] bool lossless(const Qp &qp) const override;
    void emit_path(const PacketPath &path, const PacketFields &fields,
                   std::span<const uint8_t> payload) override;
    bool av_path(const Qp &qp, const ohca_av &av, PacketPath &path) const override;
    [[nodiscard]] bool tx_room_to(const PacketPath &path) const override;
    [[nodiscard]] uint16_t pkey_of(const Qp &qp, uint16_t wqe_index) const override;
    [[nodiscard]] uint32_t port_mtu() const override;
    void count_rx_dropped() override { ++stats_.roce_rx_dropped; }
    Qp *qp_by_number(uint32_t qpn) override;
    RoceCounters &counters() override { return roce_; }
    bool cc_may_send(Qp &qp) override;
    void cc_sent(Qp &qp, size_t payload_len) override;
    // Port: a frame to the host while the link is up.
    void transmit(std::span<const uint8_t> frame) override;

  private:
    [[nodiscard]] bool mac_filter_accepts(std::span<const uint8_t> frame) const;
    // receive() on an InfiniBand port.
    ohca_engine_rx_result receive_ib(std::span<const uint8_t> frame);
    [[nodiscard]] bool is_local_gid(const std::array<uint8_t, 16> &gid) const {
        return gids_.contains(gid);
    }
    [[nodiscard]] bool build_path(const Qp &qp, PacketPath &path) const;
    // Whether a packet of 'tclass' to 'dgid' waits for a pause (noted).
    [[nodiscard]] bool pause_holds(uint8_t tclass, const std::array<uint8_t, 16> &dgid) const;
    // Whether a looped-back packet may be generated now (see tx_room).
    [[nodiscard]] bool loopback_room() const;
    EmitResult send(const PacketPath &path, const PacketFields &fields, size_t payload_len,
                    PayloadFill fill, bool shortcut);
    EmitResult loop_back(const PacketPath &path, const PacketFields &fields, size_t payload_len,
                         PayloadFill fill, bool shortcut);
    void enqueue(std::span<const uint8_t> frame);
    void rx(std::span<const uint8_t> frame);
    void deliver(const ParsedPacket &p);
    // A UD packet to OHCA_MCAST_QPN, to every QP attached to its group.
    void mcast_deliver(const ParsedPacket &p);
    // DCQCN on an Ethernet port: the reaction point's CNPs, the
    // notification point's answer to CE (ECT on a QP's packets: emit_fill).
    void rp_cnp(const ParsedPacket &p);
    void np_marked(Qp &qp, const ParsedPacket &p);
    [[nodiscard]] dcqcn::ReactionPoint reaction_point() const;

    const Host &host_;
    Stats &stats_;
    const DevStatus &status_;
    QpTable &qps_;
    McastTable &mcast_;
    const TransportTable &transports_;
    UdTransport &ud_;
    RunLoop &loop_;
    // Below the BTH; stateless, chosen at construction.
    const LinkLayer &link_;
    PortState state_;
    GidTable gids_;
    RoceCounters roce_;
    dcqcn::Params cc_params_;
    dcqcn::Counters cc_;
    Pfc pfc_{{host_, *this, state_}};
    // An InfiniBand port's rules (used only when state_.ib is set).
    IbWire ib_{{host_, status_, *this, state_, stats_, roce_, qps_, mcast_, transports_, ud_}};
    // RoCE frames received (or looped back), handled by the run loop.
    RoceBacklog backlog_{DeviceLimits::max_roce_backlog};
    std::vector<uint8_t> tx_frame_; // the frame being sent, storage reused
    // A frame was refused with RX_RETRY (backlog full, or offered from
    // inside a callback) and waits in the host.
    bool rx_waiting_ = false;
};

} // namespace ohca
