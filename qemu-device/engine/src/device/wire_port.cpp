// SPDX-License-Identifier: GPL-2.0-or-later
// The port's wire side (wire_port.hpp): packets out (framed for the wire or
// looped back inside the device) and in (filtered, queued, parsed, matched
// to a QP and handed to its transport).
#include "device/wire_port.hpp"

#include "device/dev_status.hpp"
#include "device/run_loop.hpp"
#include "eth/frame.hpp"
#include "link/byte_order.hpp"
#include "link/ib_link.hpp"
#include "link/roce_v2.hpp"
#include "objects/mcast.hpp"
#include "objects/qp_table.hpp"
#include "transports/ud.hpp"

#include <algorithm>

namespace ohca {

namespace {
// Below the BTH: the caller's (tests), else the port's link layer's.
const LinkLayer &link_of(const DeviceConfig &cfg) {
    if (cfg.link != nullptr) {
        return *cfg.link;
    }
    return cfg.link_layer == OHCA_LINK_IB ? ib_link() : roce_v2_link();
}
} // namespace

WirePort::WirePort(const Deps &deps, const DeviceConfig &cfg)
    : host_(deps.host), stats_(deps.stats), status_(deps.status), qps_(deps.qps),
      mcast_(deps.mcast), transports_(deps.transports), ud_(deps.ud), loop_(deps.loop),
      link_(link_of(cfg)) {
    watch_pauses(pfc_.pauses_set());
    state_.mac = cfg.mac;
    state_.link_up = cfg.link_up;
    state_.speed_mbps = cfg.speed_mbps;
    if (cfg.link_layer == OHCA_LINK_IB) {
        state_.ib.emplace(cfg.node_guid, cfg.port_guid);
    } else {
        state_.pacer.configure(cfg.speed_mbps, cfg.tx_burst_bytes);
    }
}

void WirePort::reset() {
    state_.power_on();
    gids_.reset();
    roce_ = RoceCounters{};
    cc_params_ = dcqcn::Params{};
    cc_ = dcqcn::Counters{};
    backlog_.clear();
    pfc_.reset();
}

Qp *WirePort::qp_by_number(uint32_t qpn) {
    return qps_.find(qpn);
}

// ---- packets out --------------------------------------------------------------

namespace {
// The QPs whose packets DCQCN controls: RC and XRC, whose requests and
// READ responses the RP paces (and which alone are ECN-capable: a packet
// that says ECT has a sender that reacts). The NP answers any QP with a
// peer QP (UC too: the peer may react). UD and raw QPs are left alone.
bool cc_connected(const Qp &qp) {
    return qp.type == OHCA_QPT_RC || qp.type == OHCA_QPT_UC || qp.type == OHCA_QPT_XRC_INI ||
           qp.type == OHCA_QPT_XRC_TGT;
}
bool cc_paced(const Qp &qp) {
    return qp.type == OHCA_QPT_RC || qp.type == OHCA_QPT_XRC_INI || qp.type == OHCA_QPT_XRC_TGT;
}
// A RoCE packet's length beyond its payload (Ethernet, IPv4, UDP, BTH,
// ICRC): what the pacer and the byte counter charge besides the payload.
constexpr size_t kRoceOverhead = 14 + 20 + 8 + kBthLen + kIcrcLen;

// ECN-capable transport (ECT(0)) on the packets of a QP whose priority
// has the reaction point enabled: a switch may then mark them CE instead
// of dropping them. Inline: every packet of an RC QP asks.
inline void mark_ect(const dcqcn::Params &cc, const Qp &qp, PacketPath &path) {
    if (cc_paced(qp) && cc.rp_enabled(dcqcn::priority_of_tclass(path.traffic_class))) {
        path.traffic_class = static_cast<uint8_t>((path.traffic_class & ~eth::kEcnMask) |
                                                  static_cast<uint8_t>(eth::Ecn::Ect0));
    }
}
} // namespace

namespace {
// The path of an address vector whose source GID is 'gid'.
void path_of(const ohca_av &av, const GidEntry &gid, PacketPath &path) {
    path.smac = gid.mac;
    std::copy(std::begin(av.dmac), std::end(av.dmac), path.dmac.begin());
    const uint16_t vlan = le(av.vlan_id);
    path.vlan_id = vlan != kNoVlan ? vlan : gid.vlan_id;
    path.ipv6 = av.network_type == OHCA_NET_IPV6;
    path.sgid = gid.gid;
    std::copy(std::begin(av.dgid), std::end(av.dgid), path.dgid.begin());
    path.hop_limit = av.hop_limit != 0 ? av.hop_limit : 64;
    path.traffic_class = av.traffic_class;
    path.flow_label = le(av.flow_label) & 0xfffff;
}
// A connected QP's UDP source port: the one MODIFY_QP set, else one of
// its number (RoCEv2's entropy).
uint16_t udp_sport_of(const Qp &qp) {
    return qp.attrs.udp_sport != 0 ? qp.attrs.udp_sport
                                   : static_cast<uint16_t>(0xc000 | (qp.qpn & 0x3fff));
}
} // namespace

bool WirePort::build_path(const Qp &qp, PacketPath &path) const {
    if (state_.ib) {
        return ib_.path(qp.attrs.av, qp.type == OHCA_QPT_SMI, path);
    }
    const auto &gid = gids_.get(qp.attrs.av.sgid_index);
    if (!gid) {
        return false;
    }
    path_of(qp.attrs.av, *gid, path);
    path.udp_src_port = udp_sport_of(qp);
    return true;
}

EmitResult WirePort::emit_fill(const Qp &qp, const PacketFields &fields, size_t payload_len,
                               PayloadFill fill) {
    if (state_.ib) {
        PacketPath path;
        if (!build_path(qp, path)) {
            return EmitResult::NoPath;
        }
        // The QP's partition (QP0: the default one).
        PacketFields x = fields;
        x.bth.pkey = pkey_of(qp, 0);
        return send(path, x, payload_len, fill, true);
    }
    const auto &gid = gids_.get(qp.attrs.av.sgid_index);
    if (!gid) {
        return EmitResult::NoPath; // the source GID went away: the packet is lost
    }
    PacketPath path;
    std::copy(std::begin(qp.attrs.av.dgid), std::end(qp.attrs.av.dgid), path.dgid.begin());
    if (is_local_gid(path.dgid)) {
        // Looped back as fields: of the path only the GIDs and the IP
        // version count (loop_back), so the rest is not built (what send()
        // would decide, without the cost on every looped-back packet).
        path.sgid = gid->gid;
        path.ipv6 = qp.attrs.av.network_type == OHCA_NET_IPV6;
        return loop_back(path, fields, payload_len, fill, true);
    }
    path_of(qp.attrs.av, *gid, path);
    path.udp_src_port = udp_sport_of(qp);
    mark_ect(cc_params_, qp, path);
    return send(path, fields, payload_len, fill, true);
}

bool WirePort::av_path(const Qp &qp, const ohca_av &av, PacketPath &path) const {
    if (state_.ib) {
        return !av_ib_bad_field(av) && ib_.path(av, qp.type == OHCA_QPT_SMI, path);
    }
    if (av_bad_field(gids_, av)) {
        return false;
    }
    const GidEntry &gid = *gids_.get(av.sgid_index);
    path_of(av, gid, path);
    // A user writes a UD WQE's address: its VLAN is the source GID's (its
    // interface's), never the WQE's, or a user could tag frames for any VLAN.
    path.vlan_id = gid.vlan_id;
    return true;
}

// UD's packets: as frames even when looped back (the receiver's GRH
// comes from the IP header).
void WirePort::emit_path(const PacketPath &path, const PacketFields &fields,
                         std::span<const uint8_t> payload) {
    auto copy = [&](std::span<uint8_t> out) {
        std::copy(payload.begin(), payload.end(), out.begin());
        return true;
    };
    (void)send(path, fields, payload.size(), copy, false);
}

// A packet for one of the device's own GIDs (or a multicast group with
// QPs here) onto the backlog: as fields and payload ('shortcut': RC, which
// needs nothing of the frame) or as a frame (UD: the receiver's GRH comes
// from the IP header). Either way the payload is written once, in place.
EmitResult WirePort::loop_back(const PacketPath &path, const PacketFields &fields,
                               size_t payload_len, PayloadFill fill, bool shortcut) {
    // Producers of looped-back packets wait for room (tx_room), so the
    // backlog stays within its bound; if it is full all the same, the
    // packet is lost as on a wire.
    RoceSlot *s = backlog_.push();
    if (s == nullptr) {
        ++roce_.loopback_packets;
        ++stats_.roce_rx_dropped;
        ++stats_.rx_backlog_dropped;
        return EmitResult::Sent;
    }
    s->prio = Pfc::kNone;
    if (shortcut) {
        s->looped = true;
        s->buf.resize(payload_len);
        if (!fill(s->buf)) {
            backlog_.unpush();
            return EmitResult::FillFailed;
        }
        ParsedPacket &p = s->pkt;
        p.fields = fields;
        p.fields.bth.pad = static_cast<uint8_t>((4 - (payload_len & 3)) & 3);
        p.sgid = path.sgid;
        p.dgid = path.dgid;
        p.ipv6 = path.ipv6;
        p.payload = s->buf;
        p.looped = true;
        p.is_ib = state_.ib.has_value();
        p.ib = path.ib;
    } else {
        s->looped = false;
        s->wire = false;
        const FrameLayout l = link_.build(s->buf, path, fields, payload_len);
        if (!fill(std::span<uint8_t>(s->buf).subspan(l.payload_off, payload_len))) {
            backlog_.unpush();
            return EmitResult::FillFailed;
        }
        link_.seal(s->buf, l);
    }
    ++roce_.loopback_packets;
    loop_.kick();
    return EmitResult::Sent;
}

// One packet to the wire, framed in tx_frame_, or looped back (loop_back)
// when its destination GID is ours (on Ethernet, emit_fill's packets,
// 'shortcut', come here only when it is not: asked once per packet).
EmitResult WirePort::send(const PacketPath &path, const PacketFields &fields, size_t payload_len,
                          PayloadFill fill, bool shortcut) {
    if (state_.ib ? ib_.is_local(path) : (!shortcut && is_local_gid(path.dgid))) {
        return loop_back(path, fields, payload_len, fill, shortcut);
    }
    if (!state_.ib && pfc_.any_paused() && pfc_.paused(pfc_.roce_priority(path.traffic_class))) {
        // Every sender asks first (tx_room, tx_paused) and waits; one that
        // does not (a CNP: lossy by design, rate-limited) is dropped
        // rather than sent into the peer's pause.
        pfc_.count_dropped();
        return EmitResult::Sent;
    }
    // (RC's packets, 'shortcut', never go to a group: not tested for them)
    if (!shortcut &&
        (state_.ib ? IbPort::is_mcast_lid(path.ib.dlid) && path.ib.grh
                   : gid_is_multicast(path.dgid)) &&
        !mcast_.members(path.dgid).empty()) {
        // QPs of this device in the group get the packet too, as a host's
        // IP stack loops its own multicast back; the wire gets it as well.
        const EmitResult r = loop_back(path, fields, payload_len, fill, false);
        if (r != EmitResult::Sent) {
            return r;
        }
    }
    const FrameLayout l = link_.build(tx_frame_, path, fields, payload_len);
    if (!fill(std::span<uint8_t>(tx_frame_).subspan(l.payload_off, payload_len))) {
        return EmitResult::FillFailed;
    }
    link_.seal(tx_frame_, l);
    if (state_.ib) {
        if (ib_.may_send(path, tx_frame_.size())) {
            ++roce_.tx_packets;
            ib_.transmit(path, tx_frame_);
        }
        return EmitResult::Sent; // else lost as on a wire, counted
    }
    ++roce_.tx_packets;
    if (tx_frame_.size() < OHCA_ETH_MIN_FRAME) {
        // A zero-length SEND or WRITE over IPv4 is 58 bytes: Ethernet
        // padding after the ICRC (receivers go by the IP length).
        tx_frame_.resize(OHCA_ETH_MIN_FRAME, 0);
    }
    transmit(tx_frame_);
    return EmitResult::Sent;
}

void WirePort::transmit(std::span<const uint8_t> frame) {
    if (state_.link_up) {
        ++state_.tx_frames;
        host_.transmit(frame.data(), frame.size());
        state_.pacer.sent(frame.size());
    }
}

bool WirePort::loopback_room() const {
    return backlog_.size() + DeviceLimits::loopback_reserve < DeviceLimits::max_roce_backlog;
}

TxRoom WirePort::tx_room(const Qp &qp) const {
    if (state_.ib) {
        // The room and the credit from one path (an Ethernet port has no
        // link credit: never CreditShort).
        PacketPath path;
        return build_path(qp, path) ? ib_.room(path, loopback_room()) : TxRoom::None;
    }
    if (loopback_room() && !pfc_.any_paused() && state_.pacer.has_credit()) {
        return TxRoom::Room;
    }
    std::array<uint8_t, 16> dgid{};
    std::copy(std::begin(qp.attrs.av.dgid), std::end(qp.attrs.av.dgid), dgid.begin());
    const bool room = is_local_gid(dgid) ? loopback_room()
                                         : !pause_holds(qp.attrs.av.traffic_class, dgid) &&
                                               state_.pacer.may_send(host_);
    return room ? TxRoom::Room : TxRoom::None;
}

bool WirePort::tx_room_to(const PacketPath &path) const {
    if (state_.ib) {
        return ib_.room(path, loopback_room()) != TxRoom::None;
    }
    if (is_local_gid(path.dgid)) {
        return loopback_room();
    }
    return !pause_holds(path.traffic_class, path.dgid) && state_.pacer.may_send(host_);
}

// A packet leaving the device on a priority the peer paused waits in its
// QP (the transports ask before they make one); a looped-back one never
// touches the wire.
bool WirePort::pause_holds(uint8_t tclass, const std::array<uint8_t, 16> &dgid) const {
    return pfc_.any_paused() && !is_local_gid(dgid) && pfc_.hold(pfc_.roce_priority(tclass));
}

bool WirePort::tx_paused(const Qp &qp) const {
    if (state_.ib || !pfc_.any_paused()) {
        return false;
    }
    std::array<uint8_t, 16> dgid{};
    std::copy(std::begin(qp.attrs.av.dgid), std::end(qp.attrs.av.dgid), dgid.begin());
    return pause_holds(qp.attrs.av.traffic_class, dgid);
}

// An InfiniBand link is lossless by its credits (IbFlow; a switch's the
// same): a late ACK there is a queue behind a credit wait, never a drop.
bool WirePort::lossless(const Qp &qp) const {
    return state_.ib || pfc_.honoured(pfc_.roce_priority(qp.attrs.av.traffic_class));
}

uint16_t WirePort::pkey_of(const Qp &qp, uint16_t wqe_index) const {
    return state_.ib ? ib_.pkey_of(qp, wqe_index) : kDefaultPkey;
}

// UD's largest message (UdTransport::mtu_bytes) comes from this: on an
// InfiniBand port the active MTU as if it were an Ethernet one.
uint32_t WirePort::port_mtu() const {
    return state_.ib ? ib_.port_mtu() : state_.mtu;
}

// ---- packets in ---------------------------------------------------------------

bool WirePort::mac_filter_accepts(std::span<const uint8_t> frame) const {
    if ((state_.rx_mode & OHCA_RX_MODE_PROMISC) != 0) {
        return true;
    }
    // Broadcast and every multicast: the device has no multicast filter
    // list, so ALLMULTI is always in effect.
    if ((frame[0] & 1) != 0) {
        return true;
    }
    return std::equal(state_.mac.begin(), state_.mac.end(), frame.begin());
}

std::optional<ohca_engine_rx_result> WirePort::receive(std::span<const uint8_t> frame) {
    if (state_.ib) {
        return receive_ib(frame); // raw IB packets: no Ethernet header
    }
    if (frame.size() < OHCA_ETH_HDR_LEN || !mac_filter_accepts(frame)) {
        ++stats_.eth_rx_dropped_filter;
        return OHCA_ENGINE_RX_CONSUMED;
    }
    if (Pfc::is_mac_control(frame)) {
        // The link's own (PAUSE, PFC): never the guest's.
        pfc_.receive(frame);
        loop_.update_timer(); // a pause's end
        return OHCA_ENGINE_RX_CONSUMED;
    }
    if (!link_.claims(frame)) {
        return std::nullopt;
    }
    if (frame.size() > DeviceLimits::max_roce_frame) {
        // Longer than any packet of a 4096-byte MTU: never queued, so
        // the backlog holds at most max_roce_backlog such frames.
        ++roce_.rx_malformed;
        ++stats_.roce_rx_dropped;
        return OHCA_ENGINE_RX_CONSUMED;
    }
    if (status_.running() && state_.link_up && backlog_.size() >= DeviceLimits::max_roce_backlog) {
        // Backpressure: the host holds the frame until rx_resume.
        hold_rx();
        return OHCA_ENGINE_RX_RETRY;
    }
    enqueue(frame); // handled by the run loop
    return OHCA_ENGINE_RX_CONSUMED;
}

ohca_engine_rx_result WirePort::receive_ib(std::span<const uint8_t> frame) {
    if (const auto r = ib_.screen(frame)) {
        return *r;
    }
    const bool live = status_.running() && state_.link_up;
    if (live && backlog_.size() >= DeviceLimits::max_roce_backlog) {
        hold_rx(); // the host holds the frame until rx_resume
        return OHCA_ENGINE_RX_RETRY;
    }
    if (live && !ib_.take_credit(frame)) {
        return OHCA_ENGINE_RX_CONSUMED; // beyond the credit we gave
    }
    if (live) {
        ib_.count_rcv(frame);
    }
    enqueue(frame);
    return OHCA_ENGINE_RX_CONSUMED;
}

void WirePort::hold_rx() {
    rx_waiting_ = true;
    host_.schedule();
}

void WirePort::resume_rx() {
    if (rx_waiting_ && backlog_.size() < DeviceLimits::max_roce_backlog) {
        rx_waiting_ = false;
        host_.rx_resume();
    }
}

void WirePort::enqueue(std::span<const uint8_t> frame) {
    if (!status_.running() || !state_.link_up || backlog_.full()) {
        ++stats_.roce_rx_dropped;
        ++stats_.rx_backlog_dropped;
        return;
    }
    ++stats_.roce_rx_frames;
    ++state_.rx_frames;
    RoceSlot *s = backlog_.push();
    s->looped = false;
    s->wire = true;
    s->buf.assign(frame.begin(), frame.end());
    // The receive side's level per priority, only while XOFF may be sent.
    s->prio = Pfc::kNone;
    if (pfc_.generating() && !state_.ib) {
        s->prio = pfc_.frame_priority(frame);
        pfc_.roce_in(s->prio, backlog_.size());
    }
    host_.schedule();
}

// The oldest received (or looped-back) packet to its QP. A looped-back
// packet is what parsing would have found in its frame.
void WirePort::take_frame() {
    // The slot stays intact while its packet is handled.
    const RoceSlot &slot = backlog_.pop();
    if (slot.prio != Pfc::kNone) {
        pfc_.roce_out(slot.prio, backlog_.size()); // counted when it came in
    }
    if (slot.looped) {
        deliver(slot.pkt);
    } else {
        rx(slot.buf);
        if (slot.wire && state_.ib) {
            ib_.consumed(slot.buf); // its buffer is free: credit to return
        }
    }
}

void WirePort::rx(std::span<const uint8_t> frame) {
    ParsedPacket p;
    const ParseError err = link_.parse(frame, p);
    if (err != ParseError::None && state_.ib) {
        ib_.parse_error(err);
        return;
    }
    if (err != ParseError::None) {
        ++(err == ParseError::BadIcrc     ? roce_.rx_bad_icrc
           : err == ParseError::BadOpcode ? roce_.rx_bad_opcode
                                          : roce_.rx_malformed);
        ++stats_.roce_rx_dropped;
        return;
    }
    deliver(p);
}

// Each attached QP takes the packet by its own rules (UdTransport::receive:
// state, Q_Key, a posted receive WQE); at most max_mcast_qp_attach of them.
void WirePort::mcast_deliver(const ParsedPacket &p) {
    const Bth &h = p.fields.bth;
    const auto members = mcast_.members(p.dgid);
    if (members.empty() || (h.pkey & 0x7fff) != 0x7fff || !is_ud_opcode(h.opcode)) {
        if (members.empty()) {
            ++roce_.mcast_rx_no_group;
        }
        ++roce_.rx_no_qp;
        ++stats_.roce_rx_dropped;
        return;
    }
    ++roce_.mcast_rx_packets;
    for (const uint32_t qpn : members) {
        if (Qp *qp = qps_.find(qpn)) {
            ud_.receive(*qp, p);
        }
    }
}

// A valid packet to its QP and transport.
void WirePort::deliver(const ParsedPacket &p) {
    if (state_.ib) {
        ib_.deliver(p); // the LID, P_Key and VL rules first
        return;
    }
    const Bth &h = p.fields.bth;
    if (h.opcode == kCnpOpcode) {
        rp_cnp(p);
        return;
    }
    if (h.dest_qp == OHCA_MCAST_QPN) {
        mcast_deliver(p);
        return;
    }
    Qp *qp = qps_.find(h.dest_qp);
    // A looped-back packet's destination GID was found ours when it was
    // sent (emit_fill): not asked a second time.
    if (qp == nullptr || (!p.looped && !is_local_gid(p.dgid)) || (h.pkey & 0x7fff) != 0x7fff) {
        ++roce_.rx_no_qp;
        ++stats_.roce_rx_dropped;
        return;
    }
    if (p.ecn == eth::Ecn::Ce) {
        np_marked(*qp, p);
    }
    transport_of(transports_, *qp).rx(*qp, p); // source, opcode and the rest: the transport's
}

// ---- DCQCN -------------------------------------------------------------------------

dcqcn::ReactionPoint WirePort::reaction_point() const {
    return dcqcn::ReactionPoint{cc_params_, dcqcn::kbps(state_.speed_mbps)};
}

// A CNP: the QP it names cuts its rate, if it is a paced QP of this device
// with the reaction point enabled on its priority. O(1), and whatever a
// peer sends, the rate stays at or above rp_min_rate.
void WirePort::rp_cnp(const ParsedPacket &p) {
    Qp *qp = qps_.find(p.fields.bth.dest_qp);
    if (qp == nullptr || !is_local_gid(p.dgid) || !cc_paced(*qp) ||
        (qp->state != OHCA_QPS_RTR && qp->state != OHCA_QPS_RTS && qp->state != OHCA_QPS_SQD) ||
        !cc_params_.rp_enabled(dcqcn::priority_of_tclass(qp->attrs.av.traffic_class))) {
        ++cc_.rp_cnp_ignored;
        return;
    }
    ++cc_.rp_cnp_handled;
    reaction_point().on_cnp(qp->cc.rp, host_.now_ns());
}

// A packet a switch marked CE: a CNP to the sending QP, at most one per
// np_min_time_between_cnps, if the notification point is enabled on the
// packet's priority.
void WirePort::np_marked(Qp &qp, const ParsedPacket &p) {
    ++cc_.np_ecn_marked_roce_packets;
    if (!cc_connected(qp) || !cc_params_.np_enabled(dcqcn::priority_of_tclass(p.traffic_class)) ||
        !dcqcn::np_should_send(cc_params_, qp.cc.np, host_.now_ns())) {
        return;
    }
    PacketPath path;
    if (!build_path(qp, path)) {
        return;
    }
    path.traffic_class = static_cast<uint8_t>(cc_params_[OHCA_CC_NP_CNP_DSCP] << 2); // not ECT
    auto zeros = [](std::span<uint8_t> out) {
        std::fill(out.begin(), out.end(), uint8_t{0});
        return true;
    };
    ++cc_.np_cnp_sent;
    (void)send(path, dcqcn::cnp_fields(qp.attrs.dest_qpn), dcqcn::kCnpPayloadLen, zeros, false);
}

bool WirePort::cc_may_send(Qp &qp) {
    dcqcn::RpState &s = qp.cc.rp;
    if (!s.limited) {
        return true;
    }
    if (state_.ib || !cc_params_.rp_enabled(dcqcn::priority_of_tclass(qp.attrs.av.traffic_class))) {
        s = dcqcn::RpState{}; // disabled meanwhile: line rate
        return true;
    }
    uint64_t wake = 0;
    if (reaction_point().may_send(s, host_.now_ns(), wake)) {
        return true;
    }
    loop_.set_pace(qp, wake);
    return false;
}

void WirePort::cc_sent(Qp &qp, size_t payload_len) {
    if (qp.cc.rp.limited) {
        reaction_point().on_sent(qp.cc.rp, host_.now_ns(), payload_len + kRoceOverhead);
    }
}

} // namespace ohca
