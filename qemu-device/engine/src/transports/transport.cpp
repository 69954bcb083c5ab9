// SPDX-License-Identifier: GPL-2.0-or-later
// The transport services (transport.hpp) and what every transport shares:
// packets out (framed for the wire or looped back inside the device) and in
// (parsed, matched to a QP, handed to its transport), QP doorbells, the
// ready list and timer heap, and the run loop that visits only ready QPs
// within a time bound.
#include "device/device.hpp"
#include "link/byte_order.hpp"

#include <algorithm>
#include <cstring>

namespace ohca {

// ---- what every transport shares ----------------------------------------------

void TransportServices::flush_posted_sends(Qp &qp) {
    while (qp.sq_fetched != qp.sq.pi) {
        SendWr wr;
        wr.index = qp.sq_fetched;
        ohca_send_wqe w{};
        if (qp.sq.ring.read(host(), qp.sq.offset(wr.index), &w, sizeof(w))) {
            wr.wr_id = le(w.wr_id);
        }
        wr.opcode = OHCA_WR_SEND;
        complete_send(qp, wr, OHCA_CQE_WR_FLUSH_ERR, OHCA_VERR_FLUSH);
        ++qp.sq_fetched;
    }
}

bool TransportServices::gather(const Qp &qp, const SendWr &wr, uint32_t offset,
                               std::span<uint8_t> out) const {
    if (wr.is_inline) {
        // A zero-length inline WQE has no data buffer (memcpy from NULL).
        if (!out.empty()) {
            std::memcpy(out.data(), wr.inline_data.data() + offset, out.size());
        }
        return true;
    }
    size_t done = 0;
    for (const Sge &s : wr.sges) {
        if (done == out.size()) {
            break;
        }
        if (offset >= s.length) {
            offset -= s.length;
            continue;
        }
        const size_t n = std::min<size_t>(s.length - offset, out.size() - done);
        const KeyResult k = check_key(s.lkey, s.addr + offset, n, 0, qp.pdn);
        if (k.mr == nullptr || !mr_read(*k.mr, s.addr + offset, out.data() + done, n)) {
            return false;
        }
        done += n;
        offset = 0;
    }
    return done == out.size();
}

OdpState TransportServices::odp_touch_sges(const Qp &qp, const std::vector<Sge> &sges,
                                           uint64_t offset, uint64_t len, bool write) {
    if (!has_odp_mrs()) {
        return OdpState::Resident; // skips a key lookup per SGE per packet
    }
    uint64_t done = 0;
    for (const Sge &s : sges) {
        if (done == len) {
            break;
        }
        if (offset >= s.length) {
            offset -= s.length;
            continue;
        }
        const uint64_t n = std::min<uint64_t>(s.length - offset, len - done);
        const KeyResult k =
            check_key(s.lkey, s.addr + offset, n, write ? OHCA_ACCESS_LOCAL_WRITE : 0, qp.pdn);
        if (k.mr != nullptr) {
            const OdpState st = odp_touch(*k.mr, s.addr + offset, n, write);
            if (st != OdpState::Resident) {
                return st;
            }
        }
        done += n;
        offset = 0;
    }
    return OdpState::Resident;
}

void odp_retry_expired(TransportServices &svc, Qp &qp) {
    svc.set_deadline(qp, 0);
    if (qp.odp_wait) {
        qp.odp_wait = false; // try the fault again
        svc.mark_ready(qp);
    }
}

// ---- packets out --------------------------------------------------------------

bool Device::is_local_gid(const std::array<uint8_t, 16> &gid) const {
    return gids_.contains(gid);
}

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
} // namespace

bool Device::build_path(const Qp &qp, PacketPath &path) const {
    if (ib_) {
        return ib_path(qp.attrs.av, qp.type == OHCA_QPT_SMI, path);
    }
    const auto &gid = gids_.get(qp.attrs.av.sgid_index);
    if (!gid) {
        return false;
    }
    path_of(qp.attrs.av, *gid, path);
    path.udp_src_port = qp.attrs.udp_sport != 0 ? qp.attrs.udp_sport
                                                : static_cast<uint16_t>(0xc000 | (qp.qpn & 0x3fff));
    return true;
}

void Device::emit(const Qp &qp, const PacketFields &fields, std::span<const uint8_t> payload) {
    auto copy = [&](std::span<uint8_t> out) {
        std::copy(payload.begin(), payload.end(), out.begin());
        return true;
    };
    (void)emit_fill(qp, fields, payload.size(), copy);
}

EmitResult Device::emit_fill(const Qp &qp, const PacketFields &fields, size_t payload_len,
                             PayloadFill fill) {
    PacketPath path;
    if (!build_path(qp, path)) {
        return EmitResult::NoPath; // the source GID went away: the packet is lost
    }
    if (ib_) {
        // The QP's partition (QP0: the default one).
        PacketFields x = fields;
        x.bth.pkey = pkey_of(qp, 0);
        if (is_xrc_qp(qp.type)) {
            x.bth.opcode = static_cast<uint8_t>(xrc::kPrefix | (fields.bth.opcode & 0x1f));
        }
        return send_roce(path, x, payload_len, fill, true);
    }
    if (is_xrc_qp(qp.type)) {
        // RC's requester and responder build XRC's packets: the wire
        // opcode is theirs with the XRC prefix (the XRCETH is the WQE's).
        PacketFields x = fields;
        x.bth.opcode = static_cast<uint8_t>(xrc::kPrefix | (fields.bth.opcode & 0x1f));
        return send_roce(path, x, payload_len, fill, true);
    }
    return send_roce(path, fields, payload_len, fill, true);
}

bool Device::av_path(const Qp &qp, const ohca_av &av, PacketPath &path) const {
    if (ib_) {
        return !av_ib_bad_field(av) && ib_path(av, qp.type == OHCA_QPT_SMI, path);
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
void Device::emit_path(const PacketPath &path, const PacketFields &fields,
                       std::span<const uint8_t> payload) {
    auto copy = [&](std::span<uint8_t> out) {
        std::copy(payload.begin(), payload.end(), out.begin());
        return true;
    };
    (void)send_roce(path, fields, payload.size(), copy, false);
}

// A packet for one of the device's own GIDs (or a multicast group with
// QPs here) onto the backlog: as fields and payload ('shortcut': RC, which
// needs nothing of the frame) or as a frame (UD: the receiver's GRH comes
// from the IP header). Either way the payload is written once, in place.
EmitResult Device::loop_back(const PacketPath &path, const PacketFields &fields, size_t payload_len,
                             PayloadFill fill, bool shortcut) {
    // Producers of looped-back packets wait for room (tx_room), so the
    // backlog stays within its bound; if it is full all the same, the
    // packet is lost as on a wire.
    RoceSlot *s = roce_backlog_.push();
    if (s == nullptr) {
        ++roce_.loopback_packets;
        ++stats_.roce_rx_dropped;
        return EmitResult::Sent;
    }
    if (shortcut) {
        s->looped = true;
        s->buf.resize(payload_len);
        if (!fill(s->buf)) {
            roce_backlog_.unpush();
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
        p.is_ib = ib_.has_value();
        p.ib = path.ib;
    } else {
        s->looped = false;
        const FrameLayout l = link_.build(s->buf, path, fields, payload_len);
        if (!fill(std::span<uint8_t>(s->buf).subspan(l.payload_off, payload_len))) {
            roce_backlog_.unpush();
            return EmitResult::FillFailed;
        }
        link_.seal(s->buf, l);
    }
    ++roce_.loopback_packets;
    if (!in_run_) {
        host_.schedule();
    }
    return EmitResult::Sent;
}

// One packet to the wire, framed in tx_frame_, or looped back (loop_back)
// when its destination GID is ours.
EmitResult Device::send_roce(const PacketPath &path, const PacketFields &fields, size_t payload_len,
                             PayloadFill fill, bool shortcut) {
    if (ib_ ? ib_is_local(path) : is_local_gid(path.dgid)) {
        return loop_back(path, fields, payload_len, fill, shortcut);
    }
    const bool mcast =
        ib_ ? IbPort::is_mcast_lid(path.ib.dlid) && path.ib.grh : gid_is_multicast(path.dgid);
    if (!shortcut && mcast && !mcast_.members(path.dgid).empty()) {
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
    if (ib_) {
        if (ib_may_send(path, tx_frame_.size())) {
            ++roce_.tx_packets;
            ib_transmit(path, tx_frame_);
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

void Device::transmit(std::span<const uint8_t> frame) {
    if (cfg_.link_up) {
        ++stats_.port_tx_frames;
        host_.transmit(frame.data(), frame.size());
    }
}

bool Device::loopback_room() const {
    return roce_backlog_.size() + DeviceLimits::loopback_reserve < DeviceLimits::max_roce_backlog;
}

bool Device::tx_room(const Qp &qp) const {
    if (ib_) {
        PacketPath path;
        return build_path(qp, path) && tx_room_to(path);
    }
    if (loopback_room()) {
        return true;
    }
    std::array<uint8_t, 16> dgid{};
    std::copy(std::begin(qp.attrs.av.dgid), std::end(qp.attrs.av.dgid), dgid.begin());
    return !is_local_gid(dgid);
}

bool Device::tx_room_to(const PacketPath &path) const {
    if (ib_) {
        if (ib_is_local(path)) {
            return loopback_room();
        }
        const bool room = ib_flow_->room(path.ib.vl, ib::kMaxFrameBytes);
        ib_credit_wait_ = ib_credit_wait_ || !room;
        return room;
    }
    return loopback_room() || !is_local_gid(path.dgid);
}

uint16_t Device::pkey_of(const Qp &qp, uint16_t wqe_index) const {
    if (!ib_ || qp.type == OHCA_QPT_SMI) {
        return kDefaultPkey;
    }
    return ib_->pkey_at(qp.type == OHCA_QPT_GSI ? wqe_index : qp.attrs.pkey_index);
}

// UD's largest message (UdTransport::mtu_bytes) comes from this: on an
// InfiniBand port the active MTU as if it were an Ethernet one.
uint32_t Device::port_mtu() const {
    return ib_ ? (128u << ib_->active_mtu()) + OHCA_ROCE_HDR_OVERHEAD : mtu_;
}

// ---- packets in ---------------------------------------------------------------

void Device::roce_enqueue(std::span<const uint8_t> frame) {
    if (!running() || !cfg_.link_up || roce_backlog_.full()) {
        ++stats_.roce_rx_dropped;
        return;
    }
    ++stats_.roce_rx_frames;
    ++stats_.port_rx_frames;
    RoceSlot *s = roce_backlog_.push();
    s->looped = false;
    s->buf.assign(frame.begin(), frame.end());
    host_.schedule();
}

void Device::roce_rx(std::span<const uint8_t> frame) {
    ParsedPacket p;
    const ParseError err = link_.parse(frame, p);
    if (err != ParseError::None && ib_) {
        ib_parse_error(err);
        return;
    }
    if (err != ParseError::None) {
        ++(err == ParseError::BadIcrc     ? roce_.rx_bad_icrc
           : err == ParseError::BadOpcode ? roce_.rx_bad_opcode
                                          : roce_.rx_malformed);
        ++stats_.roce_rx_dropped;
        return;
    }
    roce_deliver(p);
}

// A looped-back packet: what parsing would have found in its frame.
void Device::roce_rx_looped(const RoceSlot &slot) {
    roce_deliver(slot.pkt);
}

// Each attached QP takes the packet by its own rules (UdTransport::receive: state,
// Q_Key, a posted receive WQE); at most max_mcast_qp_attach of them.
void Device::mcast_deliver(const ParsedPacket &p) {
    const Bth &h = p.fields.bth;
    const auto members = mcast_.members(p.dgid);
    if (members.empty() || (h.pkey & 0x7fff) != 0x7fff || !is_ud_opcode(h.opcode)) {
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
void Device::roce_deliver(const ParsedPacket &p) {
    if (ib_) {
        ib_deliver(p); // the LID, P_Key and VL rules first
        return;
    }
    const Bth &h = p.fields.bth;
    if (h.dest_qp == OHCA_MCAST_QPN) {
        mcast_deliver(p);
        return;
    }
    Qp *qp = qps_.find(h.dest_qp);
    if (qp == nullptr || !is_local_gid(p.dgid) || (h.pkey & 0x7fff) != 0x7fff) {
        ++roce_.rx_no_qp;
        ++stats_.roce_rx_dropped;
        return;
    }
    transport_of(*qp).rx(*qp, p); // source, opcode and the rest: the transport's
}

// ---- doorbells ----------------------------------------------------------------

// A doorbell's QP with its new producer index taken: a QP of this UAR page,
// out of RESET, and an index that neither overruns the ring nor goes back;
// anything else is counted and ignored.
Qp *Device::take_doorbell(uint32_t page, uint32_t qpn, WorkQueue Qp::*wq, uint32_t value) {
    Qp *qp = qps_.find(qpn);
    // An XRC target has no queues, an initiator no RQ.
    if (qp == nullptr || qp->uar != page || qp->state == OHCA_QPS_RESET ||
        qp->type == OHCA_QPT_XRC_TGT || (qp->type == OHCA_QPT_XRC_INI && wq == &Qp::rq)) {
        ++stats_.db_errors;
        return nullptr;
    }
    WorkQueue &q = qp->*wq;
    const uint32_t ahead = value - q.ci;
    if (ahead > q.size() || ahead < q.pi - q.ci) {
        ++stats_.db_errors;
        return nullptr;
    }
    q.pi = value;
    return qp;
}

Qp *Device::sq_doorbell(uint32_t page, uint32_t qpn, uint32_t value) {
    Qp *qp = take_doorbell(page, qpn, &Qp::sq, value);
    if (qp != nullptr) {
        mark_ready(*qp);
    }
    return qp;
}

Qp *Device::rq_doorbell(uint32_t page, uint32_t qpn, uint32_t value) {
    // A QP on an SRQ has no receive queue of its own to ring.
    if (const Qp *q = qps_.find(qpn); q != nullptr && q->srqn != 0) {
        ++stats_.db_errors;
        return nullptr;
    }
    Qp *qp = take_doorbell(page, qpn, &Qp::rq, value);
    if (qp != nullptr && qp->state == OHCA_QPS_ERR) {
        mark_ready(*qp); // flushed by process()
        return qp;
    }
    return nullptr;
}

// ---- readiness and timers ------------------------------------------------------

void Device::mark_ready(Qp &qp) {
    ready_.push(qp);
    if (!in_run_) {
        host_.schedule();
    }
}

void Device::set_deadline(Qp &qp, uint64_t deadline_ns) {
    timers_.set(qp, deadline_ns);
}

void Device::unschedule(Qp &qp) {
    ready_.remove(qp);
    timers_.set(qp, 0);
}

bool Device::check_timers() {
    const uint64_t now = host_.now_ns();
    // Each expiry disarms the QP's timer or moves it into the future; the
    // run handles at most max_run_timers of them, like its other work.
    unsigned int budget = DeviceLimits::max_run_timers;
    for (size_t n = timers_.size(); n > 0; --n) {
        Qp *qp = timers_.top();
        if (qp == nullptr || now < qp->deadline_ns) {
            break;
        }
        if (budget == 0) {
            ++sched_stats_.timers_capped;
            return false;
        }
        --budget;
        ++sched_stats_.timer_expiries;
        transport_of(*qp).timer_expired(*qp);
    }
    // Moderated completion events whose period ended, within what is left
    // of the run's bound.
    const unsigned int n = cqs_.expire_timers(now, budget);
    sched_stats_.timer_expiries += n;
    if (n == budget && cqs_.timer_due(now)) {
        ++sched_stats_.timers_capped;
        return false;
    }
    return true;
}

void Device::update_timer() {
    const uint64_t q = timers_.earliest();
    const uint64_t c = cqs_.earliest_timer();
    uint64_t earliest = q == 0 ? c : c == 0 ? q : std::min(q, c);
    if (ib_ && running() && cfg_.link_up) {
        const uint64_t f = ib_flow_->deadline(); // the periodic FCPs
        earliest = earliest == 0 ? f : std::min(earliest, f);
    }
    if (earliest != timer_deadline_) {
        timer_deadline_ = earliest;
        host_.set_timer(earliest);
    }
}

// ---- the run loop ---------------------------------------------------------------

// One visit of a ready QP: at most 'quantum' packets or WQEs.
void Device::visit(Qp &qp, unsigned int &quantum) {
    transport_of(qp).visit(qp, quantum);
}

// The oldest received (or looped-back) frame to its QP.
void Device::take_frame() {
    // The slot stays intact while its packet is handled.
    const RoceSlot &slot = roce_backlog_.pop();
    if (slot.looped) {
        roce_rx_looped(slot);
    } else {
        roce_rx(slot.buf);
        if (ib_ && !slot.buf.empty() && (slot.buf[0] >> 4) != IbPort::kVl15) {
            // Its buffer is free: credit to return (the FCP after the run).
            ib_flow_->on_consumed(static_cast<uint8_t>(slot.buf[0] >> 4), slot.buf.size());
        }
    }
}

// The frames received before the run, then the timers that expired, then
// rounds of: the received frames, then one visit of each QP ready at the
// start of the round (a QP that used its whole quantum goes to the back).
// The run ends when nothing is left or max_run_ns has passed; then it asks
// to be scheduled again if anything is left.
void Device::process_rdma() {
    run_rdma(nullptr, DeviceLimits::max_run_work, DeviceLimits::max_run_ns);
}

// A doorbell's run (doorbell_fast) gives the QP it rang the first visit,
// ahead of the QPs already ready: its packets are the ones the guest waits
// for. The QP leaves the ready list for that visit and goes back to its
// end if it has more, as in any round, so the list stays the one record
// of what has work.
void Device::run_rdma(Qp *first, unsigned int max_work, uint64_t max_ns) {
    in_run_ = true;
    ib_credit_wait_ = false;
    bool stalled = false; // the last round made no progress
    ++sched_stats_.runs;
    const uint64_t start = host_.now_ns();
    unsigned int work = 0;
    bool out_of_time = false;
    // Counts units of work (a frame, a packet, a WQE); reads the clock now
    // and then.
    auto account = [&](unsigned int units) {
        const unsigned int before = work;
        work += units;
        out_of_time =
            out_of_time || work >= max_work ||
            (work / DeviceLimits::run_clock_every != before / DeviceLimits::run_clock_every &&
             host_.now_ns() - start >= max_ns);
    };
    // What was received before the run started (ACKs, NAKs, responses)
    // is taken in before the timers: after a long pause of the host's loop
    // a timer can be past its deadline with the ACK that stops it already
    // waiting here. The doorbell's QP keeps its first turn.
    size_t received = roce_backlog_.size();
    if (first != nullptr && first->sched.ready && running()) {
        ready_.remove(*first);
        ++sched_stats_.visits;
        const unsigned int q = std::min(DeviceLimits::qp_quantum, max_work);
        unsigned int quantum = q;
        visit(*first, quantum);
        if (quantum == 0) {
            ready_.push(*first);
        }
        account(q - quantum);
    }
    for (; received > 0 && !out_of_time && running() && !roce_backlog_.empty(); --received) {
        take_frame();
        account(1);
    }
    // If the run's bound cut that short, the timers wait for the next run,
    // which checks them whatever it holds: a peer that keeps the backlog
    // full delays a deadline by one run, never for good.
    // Expired timers beyond the run's bound go first in the next run too.
    if (received == 0 || roce_backlog_.empty() || timers_deferred_ || !running()) {
        timers_deferred_ = !check_timers();
    } else {
        timers_deferred_ = true;
        ++sched_stats_.timers_deferred;
    }
    while (!out_of_time && running() && (!roce_backlog_.empty() || !ready_.empty())) {
        bool progress = false;
        while (!out_of_time && !roce_backlog_.empty()) {
            take_frame();
            progress = true;
            account(1);
        }
        for (size_t n = ready_.size(); n > 0 && !out_of_time && running(); --n) {
            Qp *qp = ready_.pop();
            ++sched_stats_.visits;
            unsigned int quantum = DeviceLimits::qp_quantum;
            visit(*qp, quantum);
            if (quantum == 0) {
                ready_.push(*qp); // more to send: after the others
            }
            if (quantum != DeviceLimits::qp_quantum) {
                progress = true;
                account(DeviceLimits::qp_quantum - quantum);
            }
        }
        if (!progress) {
            stalled = true;
            break; // only QPs waiting for room that did not come
        }
    }
    in_run_ = false;
    if (out_of_time) {
        ++sched_stats_.out_of_time;
    }
    if (ib_ && running()) {
        ib_flow_->send_fcps(host_.now_ns()); // credit returned, or the period
    }
    // QPs that wait for the peer's credit run again when its FCP comes.
    const bool credit_stall = stalled && ib_credit_wait_;
    if (running() &&
        (!roce_backlog_.empty() || (!ready_.empty() && !credit_stall) || timers_deferred_)) {
        host_.schedule();
    }
    update_timer();
}

} // namespace ohca
