// SPDX-License-Identifier: GPL-2.0-or-later
// The device's hooks for an InfiniBand port (programming manual section
// 21): MAD_IFC to the port's management agents, and the port change
// events they and the link cause.
#include "device/device.hpp"

#include "device/command.hpp"
#include "ib/link.hpp"
#include "ib/packet.hpp"
#include "link/byte_order.hpp"

#include <algorithm>

namespace ohca {

void Device::ib_port_changed(uint32_t changed) {
    if (changed != 0) {
        post_event(OHCA_EQE_PORT_CHANGE, ib_->state(), 1, changed, 0);
    }
}

// ---- the data path's hooks ----------------------------------------------------

bool Device::ib_path(const ohca_av &av, bool smi, PacketPath &path) const {
    const ohca_av_ib a = av_ib_of(av);
    path.ib.dlid = le(a.dlid);
    path.ib.sl = a.sl & 0xf;
    path.ib.vl = smi ? IbPort::kVl15 : ib_->vl_of(a.sl);
    // Before the SM gives a LID, SMPs go from the permissive LID.
    path.ib.slid = ib_->lid() != 0 ? ib_->slid(a.src_path_bits) : IbPort::kPermissiveLid;
    path.ib.grh = (a.flags & OHCA_AV_IB_GRH) != 0;
    path.ipv6 = true; // a GRH is laid out as an IPv6 header
    path.sgid = ib_->gid();
    std::copy(std::begin(a.dgid), std::end(a.dgid), path.dgid.begin());
    path.hop_limit = a.hop_limit;
    path.traffic_class = a.traffic_class;
    path.flow_label = le(a.flow_label) & 0xfffff;
    return true;
}

bool Device::ib_is_local(const PacketPath &path) const {
    uint8_t bits = 0;
    return ib_->unicast_dlid(path.ib.dlid, bits);
}

bool Device::ib_may_send(const PacketPath &path, size_t frame_len) {
    if (!cfg_.link_up || (path.ib.vl != IbPort::kVl15 && !ib_->can_send_data())) {
        ib_->count_xmit_discard(); // data before the SM made the port ACTIVE
        return false;
    }
    ib_->count_xmit(frame_len, IbPort::is_mcast_lid(path.ib.dlid));
    return true;
}

void Device::ib_transmit(const PacketPath &path, std::span<const uint8_t> frame) {
    if (path.ib.vl == IbPort::kVl15) {
        transmit(frame); // subnet management is not flow controlled
        return;
    }
    switch (ib_flow_->send(frame, path.ib.vl)) {
    case IbFlow::Out::Sent:
        break;
    case IbFlow::Out::Held:
        ib_->count_xmit_wait();
        break;
    case IbFlow::Out::Dropped:
        ib_->count_xmit_discard();
        break;
    }
}

void Device::ib_link_init() {
    if (running() && cfg_.link_up) {
        ib_flow_->reset(host_.now_ns());
    }
}

void Device::ib_drop(void (IbPort::*count)()) {
    (*ib_.*count)();
    ++stats_.roce_rx_dropped;
}

// The port's rules (programming manual section 21) before the transport's:
// a DLID of this port (or an attached group's, or the permissive one for
// QP0), VL15 for QP0 only and QP0 on VL15 only, a P_Key of the table and
// of the QP (QP0 exempt), data only while ARMED or ACTIVE.
void Device::ib_deliver(const ParsedPacket &p) {
    const Bth &h = p.fields.bth;
    const uint16_t dlid = p.ib.dlid;
    const bool mcast = IbPort::is_mcast_lid(dlid);
    uint8_t bits = 0;
    if (dlid == IbPort::kPermissiveLid ? h.dest_qp != 0
                                       : !mcast && !ib_->unicast_dlid(dlid, bits)) {
        ib_drop(&IbPort::count_bad_dlid);
        return;
    }
    const bool vl15 = p.ib.vl == IbPort::kVl15;
    if (vl15 != (h.dest_qp == 0)) {
        ib_drop(&IbPort::count_vl15_dropped);
        return;
    }
    if (!vl15 && !ib_->can_receive_data()) {
        ++roce_.rx_no_qp;
        ++stats_.roce_rx_dropped;
        return;
    }
    if (!vl15 && !ib_->pkey_matches(h.pkey)) {
        ib_drop(&IbPort::count_pkey_violation);
        return;
    }
    ParsedPacket q = p;
    q.ib.path_bits = bits;
    if (mcast) {
        const auto members = mcast_.members(p.dgid);
        if (!p.ib.grh || h.dest_qp != OHCA_MCAST_QPN || members.empty() ||
            !is_ud_opcode(h.opcode)) {
            ++roce_.rx_no_qp;
            ++stats_.roce_rx_dropped;
            return;
        }
        ++roce_.mcast_rx_packets;
        for (const uint32_t qpn : members) {
            Qp *qp = qps_.find(qpn);
            if (qp != nullptr && IbPort::pkeys_match(ib_->pkey_at(qp->attrs.pkey_index), h.pkey)) {
                ud_.receive(*qp, q);
            }
        }
        return;
    }
    Qp *qp = qps_.find(h.dest_qp);
    if (qp == nullptr || (p.ib.grh && p.dgid != ib_->gid())) {
        ++roce_.rx_no_qp;
        ++stats_.roce_rx_dropped;
        return;
    }
    // A QP takes its own partition; QP1 any of the table's, QP0 any.
    if (qp->type != OHCA_QPT_SMI && qp->type != OHCA_QPT_GSI &&
        !IbPort::pkeys_match(ib_->pkey_at(qp->attrs.pkey_index), h.pkey)) {
        ib_drop(&IbPort::count_pkey_violation);
        return;
    }
    transport_of(*qp).rx(*qp, q);
}

// ---- frames in ------------------------------------------------------------------

ohca_engine_rx_result Device::ib_receive(std::span<const uint8_t> frame) {
    if (ib::is_link_packet(frame.size())) {
        // Credit from the peer: held packets go, waiting QPs run again.
        if (running() && cfg_.link_up && ib_flow_->on_link_packet(frame) && !ready_.empty()) {
            host_.schedule();
        }
        return OHCA_ENGINE_RX_CONSUMED;
    }
    if (frame.size() > ib::kMaxFrameBytes) {
        // Longer than any packet of a 4096-byte MTU: never queued.
        ib_->count_rcv_error();
        ++roce_.rx_malformed;
        ++stats_.roce_rx_dropped;
        return OHCA_ENGINE_RX_CONSUMED;
    }
    if (running() && cfg_.link_up && roce_backlog_.size() >= DeviceLimits::max_roce_backlog) {
        rx_waiting_ = true; // the host holds the frame until rx_resume
        host_.schedule();
        return OHCA_ENGINE_RX_RETRY;
    }
    const auto vl = static_cast<uint8_t>(frame.empty() ? 0 : frame[0] >> 4);
    if (running() && cfg_.link_up && vl != IbPort::kVl15 &&
        !ib_flow_->on_received(vl, frame.size())) {
        // Beyond the credit we gave: a broken or hostile peer.
        ib_->count_rcv_error();
        ++stats_.roce_rx_dropped;
        return OHCA_ENGINE_RX_CONSUMED;
    }
    if (running() && cfg_.link_up) {
        ib_->count_rcv(frame.size(),
                       frame.size() >= ib::kLrhBytes &&
                           IbPort::is_mcast_lid(static_cast<uint16_t>((frame[2] << 8) | frame[3])));
    }
    roce_enqueue(frame);
    return OHCA_ENGINE_RX_CONSUMED;
}

void Device::ib_parse_error(ParseError err) {
    switch (err) {
    case ParseError::BadIcrc:
        ++roce_.rx_bad_icrc;
        break;
    case ParseError::BadVcrc:
        ib_->count_bad_vcrc();
        ++roce_.rx_bad_icrc;
        break;
    case ParseError::Vl15Rule:
        ib_->count_vl15_dropped();
        ++stats_.roce_rx_dropped;
        return;
    case ParseError::BadOpcode:
        ++roce_.rx_bad_opcode;
        break;
    default:
        ++roce_.rx_malformed;
        break;
    }
    ib_->count_rcv_error();
    ++stats_.roce_rx_dropped;
}

CmdResult Device::cmd_mad_ifc(const Command &cmd) {
    using In = ohca_mad_ifc_in;
    const auto in = cmd.input<In>();
    if (!ib_) {
        return {OHCA_STATUS_BAD_STATE, 0}; // no agents on an Ethernet port
    }
    if (in.port != 1) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, port)};
    }
    if ((in.flags & ~(OHCA_MAD_IFC_IGNORE_MKEY | OHCA_MAD_IFC_NET)) != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(In, flags)};
    }
    if (auto off = nonzero_at(cmd.in, offsetof(In, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    ib::Mad mad{};
    ib::Mad reply{};
    std::copy(std::begin(in.mad), std::end(in.mad), mad.begin());
    // Work on a copy: nothing changes unless the output reaches the driver.
    IbPort next = *ib_;
    uint32_t changed = 0;
    ohca_mad_ifc_out out{};
    out.result = le(next.process_mad(mad, reply, changed));
    std::copy(reply.begin(), reply.end(), std::begin(out.mad));
    if (CmdResult r = write_output(host_, cmd, &out, sizeof(out)); r.status != OHCA_STATUS_OK) {
        return r;
    }
    *ib_ = next;
    ib_port_changed(changed);
    return {};
}

} // namespace ohca
