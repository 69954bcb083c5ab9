// SPDX-License-Identifier: GPL-2.0-or-later
// The wire side of an InfiniBand port (ib_wire.hpp).
#include "device/ib_wire.hpp"

#include "ib/link.hpp"
#include "ib/packet.hpp"
#include "link/byte_order.hpp"
#include "link/ib_link.hpp"
#include "objects/mcast.hpp"
#include "objects/qp_table.hpp"
#include "transports/ud.hpp"

#include <algorithm>

namespace ohca {

// ---- packets out ----------------------------------------------------------------

bool IbWire::path(const ohca_av &av, bool smi, PacketPath &path) const {
    const ohca_av_ib a = av_ib_of(av);
    path.ib.dlid = le(a.dlid);
    path.ib.sl = a.sl & 0xf;
    path.ib.vl = smi ? IbPort::kVl15 : port().vl_of(a.sl);
    // Before the SM gives a LID, SMPs go from the permissive LID.
    path.ib.slid = port().lid() != 0 ? port().slid(a.src_path_bits) : IbPort::kPermissiveLid;
    path.ib.grh = (a.flags & OHCA_AV_IB_GRH) != 0;
    path.ipv6 = true; // a GRH is laid out as an IPv6 header
    path.sgid = port().gid();
    std::copy(std::begin(a.dgid), std::end(a.dgid), path.dgid.begin());
    path.hop_limit = a.hop_limit;
    path.traffic_class = a.traffic_class;
    path.flow_label = le(a.flow_label) & 0xfffff;
    return true;
}

bool IbWire::is_local(const PacketPath &path) const {
    uint8_t bits = 0;
    return port().unicast_dlid(path.ib.dlid, bits);
}

bool IbWire::may_send(const PacketPath &path, size_t frame_len) {
    if (!d_.state.link_up || (path.ib.vl != IbPort::kVl15 && !port().can_send_data())) {
        port().count_xmit_discard(); // data before the SM made the port ACTIVE
        return false;
    }
    port().count_xmit(frame_len, IbPort::is_mcast_lid(path.ib.dlid));
    return true;
}

void IbWire::transmit(const PacketPath &path, std::span<const uint8_t> frame) {
    if (path.ib.vl == IbPort::kVl15) {
        d_.link.transmit(frame); // subnet management is not flow controlled
        return;
    }
    data_bytes_ += frame.size();
    switch (flow_.send(frame, path.ib.vl)) {
    case IbFlow::Out::Sent:
        break;
    case IbFlow::Out::Held:
        port().count_xmit_wait();
        break;
    case IbFlow::Out::Dropped:
        port().count_xmit_discard();
        break;
    }
}

TxRoom IbWire::room(const PacketPath &path, bool loopback_room) const {
    if (is_local(path)) {
        return loopback_room ? TxRoom::Room : TxRoom::None;
    }
    if (!flow_.room(path.ib.vl, ib::kMaxFrameBytes)) {
        credit_wait_ = true;
        return TxRoom::None;
    }
    return flow_.short_of_credit(path.ib.vl) ? TxRoom::CreditShort : TxRoom::Room;
}

uint8_t IbWire::qp_vl(const Qp &qp) const {
    return qp.type == OHCA_QPT_SMI ? IbPort::kVl15 : port().vl_of(av_ib_of(qp.attrs.av).sl);
}

void IbWire::link_init() {
    if (live()) {
        flow_.set_operational(port().data_vls());
        flow_.reset(d_.host.now_ns());
    }
}

bool IbWire::end_run() {
    if (d_.status.running()) {
        if (!port().can_receive_data()) {
            flow_.set_operational(port().data_vls()); // no data in flight
        }
        flow_.send_fcps(d_.host.now_ns());
    }
    if (live()) {
        send_trap();
    }
    const bool waited = credit_wait_;
    credit_wait_ = false;
    return waited;
}

uint64_t IbWire::deadline() const {
    if (!live()) {
        return 0;
    }
    const uint64_t f = flow_.deadline();
    const uint64_t t = port().trap_deadline();
    return f == 0 ? t : t == 0 ? f : std::min(f, t);
}

// The SMA's pending trap, when due: on VL15, not flow controlled. To an
// SM on this port (opensm in this host) it comes back to the host's QP0
// as a packet looped back would, through the port's receive rules; the
// SM's TrapRepress returns the same way (a QP0 send to our LID).
void IbWire::send_trap() {
    std::array<uint8_t, ib::kUdMadFrameBytes> f{};
    if (!port().trap_due(d_.host.now_ns(), f)) {
        return;
    }
    if (!port().sm_here()) {
        port().count_xmit(f.size(), false);
        d_.link.transmit(f);
        return;
    }
    ParsedPacket p;
    if (ib_link().parse(f, p) == ParseError::None) {
        ++d_.roce.loopback_packets;
        deliver(p);
    }
}

uint16_t IbWire::pkey_of(const Qp &qp, uint16_t wqe_index) const {
    if (qp.type == OHCA_QPT_SMI) {
        return kDefaultPkey;
    }
    return port().pkey_at(qp.type == OHCA_QPT_GSI ? wqe_index : qp.attrs.pkey_index);
}

uint32_t IbWire::port_mtu() const {
    return (128u << port().active_mtu()) + OHCA_ROCE_HDR_OVERHEAD;
}

// ---- packets in -----------------------------------------------------------------

std::optional<ohca_engine_rx_result> IbWire::screen(std::span<const uint8_t> frame) {
    if (ib::is_link_packet(frame.size())) {
        // Credit from the peer: held packets go, waiting QPs run again.
        if (live() && flow_.on_link_packet(frame)) {
            d_.host.schedule();
        }
        return OHCA_ENGINE_RX_CONSUMED;
    }
    if (frame.size() > ib::kMaxFrameBytes) {
        // Longer than any packet of a 4096-byte MTU: never queued.
        port().count_rcv_error();
        ++d_.roce.rx_malformed;
        ++d_.stats.roce_rx_dropped;
        return OHCA_ENGINE_RX_CONSUMED;
    }
    return std::nullopt;
}

bool IbWire::take_credit(std::span<const uint8_t> frame) {
    const auto vl = static_cast<uint8_t>(frame.empty() ? 0 : frame[0] >> 4);
    if (vl == IbPort::kVl15 || flow_.on_received(vl, frame.size())) {
        return true;
    }
    port().count_credit_overrun();
    port().count_rcv_error();
    ++d_.stats.roce_rx_dropped;
    return false;
}

void IbWire::consumed(std::span<const uint8_t> frame) {
    if (!frame.empty() && (frame[0] >> 4) != IbPort::kVl15) {
        flow_.on_consumed(static_cast<uint8_t>(frame[0] >> 4), frame.size());
    }
}

void IbWire::count_rcv(std::span<const uint8_t> frame) {
    port().count_rcv(frame.size(),
                     frame.size() >= ib::kLrhBytes &&
                         IbPort::is_mcast_lid(static_cast<uint16_t>((frame[2] << 8) | frame[3])));
}

void IbWire::parse_error(ParseError err) {
    switch (err) {
    case ParseError::BadIcrc:
        ++d_.roce.rx_bad_icrc;
        break;
    case ParseError::BadVcrc:
        port().count_bad_vcrc();
        ++d_.roce.rx_bad_icrc;
        break;
    case ParseError::Vl15Rule:
        port().count_vl15_dropped();
        ++d_.stats.roce_rx_dropped;
        return;
    case ParseError::BadOpcode:
        ++d_.roce.rx_bad_opcode;
        break;
    default:
        ++d_.roce.rx_malformed;
        break;
    }
    port().count_rcv_error();
    ++d_.stats.roce_rx_dropped;
}

void IbWire::drop(void (IbPort::*count)()) {
    (port().*count)();
    ++d_.stats.roce_rx_dropped;
}

// A P_Key violation: counted, and told to the SM (trap 257) unless a trap
// is pending already; end_run() sends it.
void IbWire::pkey_drop(const ParsedPacket &p) {
    IbPkeyViolation v;
    v.slid = p.ib.slid;
    v.dlid = p.ib.dlid;
    v.pkey = p.fields.bth.pkey;
    v.sl = p.ib.sl;
    v.src_qp = p.fields.deth ? p.fields.deth->src_qp : 0;
    v.dest_qp = p.fields.bth.dest_qp;
    v.grh = p.ib.grh;
    v.sgid = p.sgid;
    v.dgid = p.dgid;
    (void)port().pkey_violation(v);
    ++d_.stats.roce_rx_dropped;
}

// The port's rules (programming manual section 21) before the transport's:
// a DLID of this port (or an attached group's, or the permissive one for
// QP0), VL15 for QP0 only and QP0 on VL15 only, a P_Key of the table and
// of the QP (QP0 exempt), data only while ARMED or ACTIVE.
void IbWire::deliver(const ParsedPacket &p) {
    const Bth &h = p.fields.bth;
    const uint16_t dlid = p.ib.dlid;
    const bool mcast = IbPort::is_mcast_lid(dlid);
    uint8_t bits = 0;
    if (dlid == IbPort::kPermissiveLid ? h.dest_qp != 0
                                       : !mcast && !port().unicast_dlid(dlid, bits)) {
        drop(&IbPort::count_bad_dlid);
        return;
    }
    const bool vl15 = p.ib.vl == IbPort::kVl15;
    if (vl15 != (h.dest_qp == 0)) {
        drop(&IbPort::count_vl15_dropped);
        return;
    }
    if (!vl15 && !port().can_receive_data()) {
        port().count_not_ready();
        ++d_.roce.rx_no_qp;
        ++d_.stats.roce_rx_dropped;
        return;
    }
    if (!vl15 && !port().pkey_matches(h.pkey)) {
        pkey_drop(p);
        return;
    }
    ParsedPacket q = p;
    q.ib.path_bits = bits;
    if (mcast) {
        const auto members = d_.mcast.members(p.dgid);
        if (!p.ib.grh || h.dest_qp != OHCA_MCAST_QPN || members.empty() ||
            !is_ud_opcode(h.opcode)) {
            if (p.ib.grh && members.empty()) {
                ++d_.roce.mcast_rx_no_group;
            }
            ++d_.roce.rx_no_qp;
            ++d_.stats.roce_rx_dropped;
            return;
        }
        ++d_.roce.mcast_rx_packets;
        for (const uint32_t qpn : members) {
            Qp *qp = d_.qps.find(qpn);
            if (qp == nullptr) {
                continue;
            }
            if (IbPort::pkeys_match(port().pkey_at(qp->attrs.pkey_index), h.pkey)) {
                d_.ud.receive(*qp, q);
            } else {
                port().count_mcast_pkey_skipped();
            }
        }
        return;
    }
    Qp *qp = d_.qps.find(h.dest_qp);
    if (qp == nullptr || (p.ib.grh && p.dgid != port().gid())) {
        ++d_.roce.rx_no_qp;
        ++d_.stats.roce_rx_dropped;
        return;
    }
    // A QP takes its own partition; QP1 any of the table's, QP0 any.
    if (qp->type != OHCA_QPT_SMI && qp->type != OHCA_QPT_GSI &&
        !IbPort::pkeys_match(port().pkey_at(qp->attrs.pkey_index), h.pkey)) {
        pkey_drop(p);
        return;
    }
    transport_of(d_.transports, *qp).rx(*qp, q);
}

} // namespace ohca
