// SPDX-License-Identifier: GPL-2.0-or-later
#include "switch.hpp"

#include "json.hpp"

#include "ib/bytes.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace ohca::fabric {

using namespace ohca::ib;

namespace {

constexpr uint64_t kMaxHoqNs = 4096ull << 20; // HOQLife 20 (~4.3 s) and above
constexpr uint64_t kNsPerS = 1'000'000'000;
constexpr uint64_t kMaxLineRateBps = 400'000'000'000ull; // 400 Gbit/s

uint64_t bit(uint8_t p) {
    return 1ull << p;
}

// A UD SEND-only packet carrying one MAD: LRH, BTH, DETH, MAD, ICRC, VCRC.
std::vector<uint8_t> ud_mad_frame(uint8_t vl, uint8_t sl, uint16_t dlid, uint16_t slid,
                                  uint16_t pkey, uint32_t dest_qp, uint32_t src_qp, uint32_t qkey,
                                  uint32_t psn, const Mad &mad) {
    std::vector<uint8_t> f(kUdMadFrameBytes);
    write_ud_mad_frame(std::span<uint8_t, kUdMadFrameBytes>(f.data(), kUdMadFrameBytes),
                       {vl, sl, dlid, slid, pkey, dest_qp, src_qp, qkey, psn}, mad);
    return f;
}

} // namespace

Switch::Switch(const SwitchConfig &cfg)
    : cfg_(cfg), sma_state_([&] {
          SmaDefaults d;
          d.node_guid = cfg.guid;
          d.port_guid = cfg.guid;
          d.vl_cap = cfg.vl_cap;
          d.pkey_entries = 32;
          d.description = cfg.description.c_str();
          return make_switch_state(d, cfg.ports, cfg.lft_cap, cfg.mft_cap);
      }()),
      sma_(sma_state_) {
    cfg_.ports = sma_state_.num_ports();
    cfg_.line_rate_bps = std::min(cfg_.line_rate_bps, kMaxLineRateBps);
    const LinkCredits proto(cfg.vl_buffer_blocks, std::max<uint8_t>(vls_for_code(cfg.vl_cap), 1));
    ports_.reserve(cfg_.ports + 1u);
    for (unsigned p = 0; p <= cfg_.ports; ++p) {
        ports_.emplace_back(proto);
    }
    // Port 0 is the switch itself: up from the start.
    ports_[0].connected = true;
}

// ---------------------------------------------------------------------------
// Transport events

void Switch::connect(uint8_t p, uint64_t now) {
    if (p == 0 || p > cfg_.ports || port(p).connected) {
        return;
    }
    now_ = now;
    Port &pt = port(p);
    pt.connected = true;
    pt.reader.reset();
    pt.credits.reset();
    pt.out.clear();
    pt.last_fcp = now;
    pt.tokens = burst_units();
    pt.tokens_at = now;
    pt.want = 0;
    pt.arb.reset();
    sma_.link_up(p);
    write_fcps(p, true);
    apply_sma_changes(now);
    trap_link_state(now);
    schedule(now);
}

void Switch::disconnect(uint8_t p, uint64_t now) {
    if (p == 0 || p > cfg_.ports || !port(p).connected) {
        return;
    }
    now_ = now;
    Port &pt = port(p);
    pt.connected = false;
    pt.out.clear();
    // What it had sent us is gone with the link; its credits too.
    for (auto &q : pt.in) {
        q.clear();
    }
    pt.in15.clear();
    pt.credits.reset();
    sma_.link_down(p);
    apply_sma_changes(now); // trap 128 too: the port went Down
    schedule(now);          // heads waiting for p are discarded now
}

void Switch::receive(uint8_t p, std::span<const uint8_t> bytes, uint64_t now) {
    if (p == 0 || p > cfg_.ports || !port(p).connected) {
        return;
    }
    now_ = now;
    port(p).reader.feed(bytes, [&](std::span<const uint8_t> f) { on_frame(p, f, now); });
    apply_sma_changes(now);
    schedule(now);
}

std::span<const uint8_t> Switch::output(uint8_t p) const {
    const Port &pt = port(p);
    return pt.out.pending();
}

void Switch::consumed(uint8_t p, size_t n, uint64_t now) {
    Port &pt = port(p);
    pt.out.consume(n, cfg_.out_limit);
    schedule(now);
}

void Switch::tick(uint64_t now) {
    now_ = now;
    for (uint8_t p = 1; p <= cfg_.ports; ++p) {
        Port &pt = port(p);
        if (pt.connected && now - pt.last_fcp >= cfg_.fcp_refresh_ns) {
            pt.credits.mark_all_pending();
            pt.last_fcp = now;
        }
    }
    discard_heads(now);
    schedule(now);
    timeline(now);
}

void Switch::timeline(uint64_t now, bool force) {
    if (!timeline_.due(now, force)) {
        return;
    }
    std::string s;
    char buf[320];
    std::snprintf(buf, sizeof buf, "{\"t_us\": %llu, \"mono_us\": %llu, \"ports\": [",
                  static_cast<unsigned long long>(timeline_.since_start_us(now)),
                  static_cast<unsigned long long>(now / 1000));
    s += buf;
    for (uint8_t p = 1; p <= cfg_.ports; ++p) {
        const PortStats &st = port(p).stats;
        std::snprintf(buf, sizeof buf,
                      "%s{\"port\": %u, \"rx_bytes\": %llu, \"tx_bytes\": %llu, "
                      "\"in_blocks\": %zu, \"credit_waits\": %llu, \"rate_waits\": %llu, "
                      "\"busy_ns\": %llu}",
                      p == 1 ? "" : ", ", p, static_cast<unsigned long long>(st.bytes_in),
                      static_cast<unsigned long long>(st.bytes_out), queued_blocks(p),
                      static_cast<unsigned long long>(st.credit_waits),
                      static_cast<unsigned long long>(st.rate_waits),
                      static_cast<unsigned long long>(st.busy_ns));
        s += buf;
    }
    s += "]}";
    timeline_.write(s);
}

uint64_t Switch::next_wake(uint64_t now) const {
    uint64_t wake = now + 1'000'000;
    if (cfg_.line_rate_bps == 0) {
        return wake;
    }
    for (uint8_t p = 1; p <= cfg_.ports; ++p) {
        const Port &pt = port(p);
        if (!pt.connected || pt.want == 0) {
            continue;
        }
        const uint64_t elapsed = now - std::min(now, pt.tokens_at);
        const uint64_t need = pt.want - std::min(pt.want, pt.tokens);
        const uint64_t dt = (need + cfg_.line_rate_bps - 1) / cfg_.line_rate_bps;
        wake = std::min(wake, now + (dt > elapsed ? dt - elapsed : 0));
    }
    return wake;
}

// ---------------------------------------------------------------------------
// Receive

void Switch::on_frame(uint8_t p, std::span<const uint8_t> frame, uint64_t now) {
    Port &pt = port(p);
    ++pt.stats.frames_in;
    if (is_link_packet(frame.size())) {
        // An FCP for a VL above ours is the peer's OperationalVLs ahead of
        // the SM's (before it set both ends alike): not an error, ignored.
        FlowControlPacket fcp;
        if (!FlowControlPacket::read(frame, fcp)) {
            ++pt.stats.bad_link_packets;
        } else if (pt.credits.on_fcp(fcp)) {
            ++pt.stats.link_packets_in;
        } else {
            ++pt.stats.ignored_link_packets;
        }
        return;
    }
    Lrh lrh;
    if (check_link(frame, lrh) != PacketError::Ok) {
        ++pt.stats.bad_frames;
        sat_add(sma_port(p).counters.rcv_errors, 1, 0xFFFF);
        return;
    }
    if (capture_) {
        capture_(p, frame);
    }
    if (lrh.vl == kVl15) {
        on_vl15(p, frame, now);
        return;
    }
    on_data(p, frame, lrh, now);
}

void Switch::count_in(uint8_t p, size_t bytes, uint16_t dlid) {
    port(p).stats.bytes_in += bytes;
    SmaPortState &s = sma_port(p);
    sat_add(s.counters.rcv_pkts, 1, 0xFFFFFFFF);
    sat_add(s.counters.rcv_data, bytes / 4, 0xFFFFFFFF);
    s.counters_ext.rcv_pkts++;
    s.counters_ext.rcv_data += bytes / 4;
    if (is_multicast_lid(dlid)) {
        s.counters_ext.multicast_rcv_pkts++;
    } else {
        s.counters_ext.unicast_rcv_pkts++;
    }
}

void Switch::count_out(uint8_t p, size_t bytes, uint16_t dlid) {
    port(p).stats.bytes_out += bytes;
    SmaPortState &s = sma_port(p);
    sat_add(s.counters.xmit_pkts, 1, 0xFFFFFFFF);
    sat_add(s.counters.xmit_data, bytes / 4, 0xFFFFFFFF);
    s.counters_ext.xmit_pkts++;
    s.counters_ext.xmit_data += bytes / 4;
    if (is_multicast_lid(dlid)) {
        s.counters_ext.multicast_xmit_pkts++;
    } else {
        s.counters_ext.unicast_xmit_pkts++;
    }
}

bool Switch::active(uint8_t p) const {
    if (p == 0) {
        return true;
    }
    return port(p).connected && sma_state_.ports[p].info.port_state == port_state::Active;
}

bool Switch::own_lid(uint16_t dlid) const {
    const PortInfo &i = sma_state_.ports[0].info;
    if (i.lid == 0) {
        return false;
    }
    const uint32_t last = i.lid + (1u << i.lmc) - 1;
    return dlid >= i.lid && dlid <= last;
}

uint64_t Switch::route(uint16_t dlid, uint8_t in) const {
    if (is_multicast_lid(dlid)) {
        uint64_t mask = 0;
        for (size_t pos = 0; pos < sma_state_.mft_positions(); ++pos) {
            mask |= static_cast<uint64_t>(sma_state_.mft_mask(dlid, pos)) << (16 * pos);
        }
        // Never back to the input, never to port 0 (no multicast member).
        return mask & ~bit(in) & ~1ull;
    }
    if (dlid == 0 || dlid == kPermissiveLid || dlid >= sma_state_.lft.size()) {
        return 0;
    }
    const uint8_t out = sma_state_.lft[dlid];
    if (out == 0 || out > cfg_.ports || out == in) {
        return 0;
    }
    return bit(out);
}

void Switch::on_data(uint8_t p, std::span<const uint8_t> frame, const Lrh &lrh, uint64_t now) {
    Port &pt = port(p);
    const uint16_t blocks = blocks_for(frame.size());
    if (lrh.vl >= pt.credits.vls()) {
        ++pt.stats.relay_drops;
        sat_add(sma_port(p).counters.rcv_errors, 1, 0xFFFF);
        return;
    }
    if (!pt.credits.on_received(lrh.vl, blocks)) {
        // Beyond the credit we advertised: the peer broke the protocol.
        ++pt.stats.overruns;
        sat_add(sma_port(p).counters.excessive_buffer_overrun_errors, 1, 0xF);
        sat_add(sma_port(p).counters.rcv_errors, 1, 0xFFFF);
        return;
    }
    pt.stats.in_hwm_blocks = std::max(pt.stats.in_hwm_blocks, pt.credits.occupied(lrh.vl));
    count_in(p, frame.size(), lrh.dlid);
    Queued q;
    q.blocks = blocks;
    q.in_vl = lrh.vl;
    q.sl = lrh.sl;
    const uint8_t state = sma_state_.ports[p].info.port_state;
    if (state != port_state::Armed && state != port_state::Active) {
        ++pt.stats.inactive_discards;
        release(p, q);
        return;
    }
    if (!pkey_passes(p, frame, true)) {
        sat_add(sma_port(p).counters.rcv_constraint_errors, 1, 0xFF);
        trap_bad_pkey(p, frame, now);
        release(p, q);
        return;
    }
    if (own_lid(lrh.dlid)) {
        on_local_data(p, frame, now);
        release(p, q);
        return;
    }
    q.out_mask = route(lrh.dlid, p);
    if (q.out_mask == 0) {
        ++pt.stats.relay_drops;
        sat_add(sma_port(p).counters.rcv_switch_relay_errors, 1, 0xFFFF);
        release(p, q);
        return;
    }
    q.frame.assign(frame.begin(), frame.end());
    auto &queue = pt.in[lrh.vl];
    q.head_since = now;
    queue.push_back(std::move(q));
}

void Switch::release(uint8_t in, const Queued &q) {
    if (in != 0) {
        port(in).credits.on_released(q.in_vl, q.blocks);
    }
}

// A GMP to the switch's own LID on QP1: the PMA answers (perfquery).
void Switch::on_local_data(uint8_t p, std::span<const uint8_t> frame, uint64_t now) {
    Packet pkt;
    if (parse(frame, pkt) != PacketError::Ok || pkt.has_grh || !pkt.has_bth ||
        pkt.bth.opcode != kOpUdSendOnly || pkt.bth.dest_qp != 1 ||
        pkt.payload_end - pkt.payload_offset < kDethBytes + kMadBytes) {
        ++port(p).stats.relay_drops;
        return;
    }
    const uint8_t *deth = frame.data() + pkt.payload_offset;
    if (get32(deth) != kGsiQKey) {
        sat_add(sma_port(p).info.q_key_violations, 1, 0xFFFF);
        return;
    }
    Mad in{};
    std::memcpy(in.data(), deth + kDethBytes, kMadBytes);
    if (in[1] != mgmt_class::Perf) {
        return; // no other class is served by a switch here
    }
    Mad out{};
    if (sma_.process(in, p, out) != SmaResult::Reply) {
        return;
    }
    const uint32_t src_qp = get32(deth + 4) & kQpnMask;
    if (src_qp == 0) {
        return; // a GMP from QP0 cannot be answered on QP0
    }
    const uint16_t my_lid = sma_state_.ports[0].info.lid;
    auto f = ud_mad_frame(0, pkt.lrh.sl, pkt.lrh.slid, my_lid, pkt.bth.pkey, src_qp, 1, kGsiQKey,
                          psn_++, out);
    const uint64_t mask = route(pkt.lrh.slid, 0);
    if (mask == 0) {
        ++port(p).stats.relay_drops;
        return;
    }
    send_local(static_cast<uint8_t>(__builtin_ctzll(mask)), std::move(f), now, false, 0xFF);
}

void Switch::on_vl15(uint8_t p, std::span<const uint8_t> frame, uint64_t now) {
    Port &pt = port(p);
    Packet pkt;
    if (parse(frame, pkt) != PacketError::Ok || !pkt.has_bth || pkt.has_grh ||
        pkt.bth.opcode != kOpUdSendOnly ||
        pkt.payload_end - pkt.payload_offset < kDethBytes + kMadBytes) {
        sat_add(sma_port(p).counters.rcv_errors, 1, 0xFFFF);
        ++pt.stats.bad_frames;
        return;
    }
    count_in(p, frame.size(), pkt.lrh.dlid);
    const uint8_t cls = frame[pkt.payload_offset + kDethBytes + 1];
    if (cls == mgmt_class::SubnDirectedRoute) {
        forward_dr(p, pkt, frame, now);
        return;
    }
    if (cls != mgmt_class::SubnLidRouted) {
        ++pt.stats.relay_drops;
        return;
    }
    if (pkt.lrh.dlid == kPermissiveLid || own_lid(pkt.lrh.dlid)) {
        local_smp(p, pkt, frame, now);
        return;
    }
    const uint64_t mask = route(pkt.lrh.dlid, p);
    if (mask == 0) {
        ++pt.stats.relay_drops;
        sat_add(sma_port(p).counters.rcv_switch_relay_errors, 1, 0xFFFF);
        return;
    }
    if (pt.in15.size() >= cfg_.vl15_queue) {
        ++pt.stats.vl15_dropped;
        sat_add(sma_port(p).counters.vl15_dropped, 1, 0xFFFF);
        return;
    }
    Queued q;
    q.frame.assign(frame.begin(), frame.end());
    q.out_mask = mask;
    q.head_since = now;
    q.in_vl = kVl15;
    pt.in15.push_back(std::move(q));
    ++pt.stats.smp_forwarded;
}

// Directed route SMPs (IBTA §14.2.2): outbound, an intermediate switch
// records its input in ReturnPath[HopPointer], advances the pointer and
// sends out InitialPath[HopPointer]; at HopPointer == HopCount the SMP is
// ours. Returning, a switch decrements the pointer and sends out
// ReturnPath[HopPointer]. The LID-routed parts a DR path may have at
// either end (DrSLID/DrDLID not permissive) are not supported: dropped.
bool Switch::forward_dr(uint8_t p, const Packet &pkt, std::span<const uint8_t> frame,
                        uint64_t now) {
    Port &pt = port(p);
    const size_t mad_at = pkt.payload_offset + kDethBytes;
    Mad mad{};
    std::memcpy(mad.data(), frame.data() + mad_at, kMadBytes);
    Smp smp = Smp::read(mad);
    const uint8_t h = smp.hop_ptr;
    const uint8_t n = smp.hop_cnt;
    uint8_t out = 0;
    if (n == 0 || n > kMaxDrHops) {
        ++pt.stats.relay_drops;
        return false;
    }
    if (!smp.direction) {
        if (h == 0 || h > n) {
            ++pt.stats.relay_drops;
            return false;
        }
        smp.return_path[h] = p;
        if (h == n) {
            if (smp.dr_dlid != kPermissiveLid) {
                ++pt.stats.relay_drops;
                return false;
            }
            smp.write(mad);
            std::vector<uint8_t> f(frame.begin(), frame.end());
            std::memcpy(f.data() + mad_at, mad.data(), kMadBytes);
            Packet p2 = pkt;
            local_smp(p, p2, f, now);
            return true;
        }
        smp.hop_ptr = static_cast<uint8_t>(h + 1);
        out = smp.initial_path[h + 1];
    } else {
        if (h < 2 || h > n) {
            ++pt.stats.relay_drops;
            return false;
        }
        smp.hop_ptr = static_cast<uint8_t>(h - 1);
        out = smp.return_path[h - 1];
    }
    if (out == 0 || out > cfg_.ports) {
        ++pt.stats.relay_drops;
        return false;
    }
    if (pt.in15.size() >= cfg_.vl15_queue) {
        ++pt.stats.vl15_dropped;
        sat_add(sma_port(p).counters.vl15_dropped, 1, 0xFFFF);
        return false;
    }
    smp.write(mad);
    Queued q;
    q.frame.assign(frame.begin(), frame.end());
    std::memcpy(q.frame.data() + mad_at, mad.data(), kMadBytes);
    seal(q.frame); // the MAD changed: new ICRC and VCRC
    q.out_mask = bit(out);
    q.head_since = now;
    q.in_vl = kVl15;
    pt.in15.push_back(std::move(q));
    ++pt.stats.smp_forwarded;
    return true;
}

// An SMP for port 0's SMA, arrived on port p; the reply goes back out p.
void Switch::local_smp(uint8_t p, const Packet &pkt, std::span<const uint8_t> frame, uint64_t now) {
    Port &pt = port(p);
    const uint8_t *deth = frame.data() + pkt.payload_offset;
    Mad in{};
    std::memcpy(in.data(), deth + kDethBytes, kMadBytes);
    Mad out{};
    ++pt.stats.smp_local;
    if (sma_.process(in, p, out) != SmaResult::Reply) {
        apply_sma_changes(now);
        return;
    }
    if (in[1] == mgmt_class::SubnDirectedRoute) {
        // Leaves with HopPointer = HopCount, out the port it came in by.
        Smp r = Smp::read(out);
        r.hop_ptr = r.hop_cnt;
        r.write(out);
    }
    const uint16_t my_lid = sma_state_.ports[0].info.lid;
    const uint16_t slid = my_lid != 0 ? my_lid : kPermissiveLid;
    auto f = ud_mad_frame(kVl15, 0, pkt.lrh.slid, slid, pkt.bth.pkey, get32(deth + 4) & kQpnMask, 0,
                          0, psn_++, out);
    uint8_t dest = p;
    if (in[1] == mgmt_class::SubnLidRouted && pkt.lrh.slid != kPermissiveLid && pkt.lrh.slid != 0) {
        // A LID-routed reply follows the LFT to the requester.
        const uint64_t mask = route(pkt.lrh.slid, 0);
        if (mask != 0) {
            dest = static_cast<uint8_t>(__builtin_ctzll(mask));
        }
    }
    apply_sma_changes(now);
    send_local(dest, std::move(f), now, true, kVl15);
}

void Switch::send_local(uint8_t out, std::vector<uint8_t> frame, uint64_t now, bool vl15,
                        uint8_t vl) {
    Port &p0 = port(0);
    auto &queue = vl15 ? p0.in15 : p0.in[0];
    if (queue.size() >= cfg_.vl15_queue) {
        ++p0.stats.vl15_dropped;
        return;
    }
    if (capture_) {
        capture_(0, frame);
    }
    Queued q;
    q.frame = std::move(frame);
    q.out_mask = bit(out);
    q.head_since = now;
    q.blocks = blocks_for(q.frame.size());
    q.in_vl = vl15 ? kVl15 : 0;
    q.sl = static_cast<uint8_t>(q.frame[1] >> 4);
    q.fixed_vl = vl;
    queue.push_back(std::move(q));
}

// Partition enforcement (IBTA 10.9.4) on external port p, inbound or
// outbound as its PortInfo asks: a packet with a BTH passes if its P_Key's
// base is in p's table (a switch port's table is its CA's, full and
// limited alike). Raw packets pass (no FilterRaw). Port 0 enforces none.
bool Switch::pkey_passes(uint8_t p, std::span<const uint8_t> frame, bool inbound) const {
    const SmaPortState &sp = sma_state_.ports[p];
    if (p == 0 || !(inbound ? sp.info.partition_enforcement_inbound
                            : sp.info.partition_enforcement_outbound)) {
        return true;
    }
    const std::optional<uint16_t> pkey = frame_pkey(frame);
    return !pkey || pkey_in_table(*pkey, sp.pkeys);
}

// ---------------------------------------------------------------------------
// Transmit

uint8_t Switch::out_vl(const Queued &q, uint8_t in, uint8_t out) const {
    if (q.fixed_vl != 0xFF) {
        return q.fixed_vl;
    }
    return sma_state_.sl_to_vl(in, out, q.sl);
}

uint64_t Switch::hoq_ns(uint8_t out) const {
    const uint8_t life = sma_state_.ports[out].info.hoq_life;
    return std::min<uint64_t>(4096ull << std::min<uint8_t>(life, 20), kMaxHoqNs);
}

void Switch::write_fcps(uint8_t o, bool all) {
    Port &pt = port(o);
    for (uint8_t vl = 0; vl < pt.credits.vls(); ++vl) {
        if (!all && !pt.credits.fcp_pending(vl)) {
            continue;
        }
        const FlowControlPacket f = pt.credits.take_fcp(vl, all ? FcOp::Init : FcOp::Normal);
        std::array<uint8_t, kLinkPacketBytes> b{};
        f.write(b);
        pt.out.append(b);
        ++pt.stats.link_packets_out;
    }
}

void Switch::emit(uint8_t o, const Queued &q, uint8_t vl) {
    Port &pt = port(o);
    const std::span<uint8_t> f = pt.out.append(q.frame);
    if ((f[0] >> 4) != vl) {
        set_vl(f, vl);
    }
    ++pt.stats.frames_out;
    count_out(o, q.frame.size(), get16(&q.frame[2]));
}

// Pops the head of `qs` while it has no outputs left; a data packet's
// input buffer is released (credit returns upstream).
void Switch::pop_done(std::deque<Queued> &qs, uint8_t in, bool data, uint64_t now) {
    while (!qs.empty() && qs.front().out_mask == 0) {
        if (data) {
            release(in, qs.front());
        }
        qs.pop_front();
        if (!qs.empty()) {
            qs.front().head_since = now;
        }
    }
}

void Switch::discard_heads(uint64_t now) {
    for (uint8_t in = 0; in <= cfg_.ports; ++in) {
        Port &pt = port(in);
        auto check = [&](std::deque<Queued> &qs, bool data) {
            // Heads for a dead port go at once, one after the other; a
            // lifetime discard makes the next packet the head (a new clock).
            for (size_t guard = qs.size(); guard > 0 && !qs.empty(); --guard) {
                Queued &q = qs.front();
                for (uint8_t o = 1; o <= cfg_.ports; ++o) {
                    if ((q.out_mask & bit(o)) == 0) {
                        continue;
                    }
                    // Not connected, or (data) not Active: discard now;
                    // otherwise after the output's head-of-queue lifetime.
                    const bool dead = !port(o).connected || (data && !active(o));
                    if (dead || now - q.head_since > hoq_ns(o)) {
                        q.out_mask &= ~bit(o);
                        if (dead) {
                            ++port(o).stats.inactive_discards;
                        } else {
                            ++port(o).stats.hoq_discards;
                        }
                        sat_add(sma_port(o).counters.xmit_discards, 1, 0xFFFF);
                    }
                }
                if (q.out_mask != 0) {
                    break;
                }
                pop_done(qs, in, data, now);
            }
        };
        for (uint8_t vl = 0; vl < kMaxDataVls; ++vl) {
            check(pt.in[vl], true);
        }
        check(pt.in15, false);
    }
}

// Shaping (cfg_.line_rate_bps): a token bucket per output, in bit x ns
// units, two largest packets deep.
uint64_t Switch::burst_units() const {
    return 2 * kMaxFrameBytes * 8 * kNsPerS;
}

void Switch::refill(Port &pt, uint64_t now) const {
    const uint64_t burst = burst_units();
    const uint64_t dt = now - std::min(now, pt.tokens_at);
    const uint64_t room = burst - std::min(pt.tokens, burst);
    // dt * rate could overflow after a long idle: a full bucket then.
    pt.tokens = dt >= room / cfg_.line_rate_bps + 1
                    ? burst
                    : std::min(burst, pt.tokens + dt * cfg_.line_rate_bps);
    pt.tokens_at = std::max(pt.tokens_at, now);
}

// Whether output pt's line may send a packet of `bytes` now (and if so,
// its tokens are spent); else the cost is kept for next_wake().
bool Switch::take_line(Port &pt, size_t bytes, uint64_t now) {
    if (cfg_.line_rate_bps == 0) {
        return true;
    }
    refill(pt, now);
    const uint64_t cost = static_cast<uint64_t>(bytes) * 8 * kNsPerS;
    if (pt.tokens < cost) {
        pt.want = cost;
        ++pt.stats.rate_waits;
        return false;
    }
    pt.tokens -= cost;
    pt.want = 0;
    pt.stats.busy_ns += cost / cfg_.line_rate_bps;
    return true;
}

bool Switch::schedule_port(uint8_t o, uint64_t now) {
    Port &op = port(o);
    // Only a packet that waits for the line in this pass sets it again.
    op.want = 0;
    if (!op.connected || op.out.size() >= cfg_.out_limit) {
        return false;
    }
    const unsigned n = cfg_.ports + 1u;
    // VL15 first: SMPs are not flow controlled and go ahead of data.
    for (unsigned k = 0; k < n; ++k) {
        const auto in = static_cast<uint8_t>((op.rr_in + k) % n);
        auto &qs = port(in).in15;
        if (!qs.empty() && (qs.front().out_mask & bit(o)) != 0) {
            if (!take_line(op, qs.front().frame.size(), now)) {
                return false;
            }
            emit(o, qs.front(), kVl15);
            qs.front().out_mask &= ~bit(o);
            pop_done(qs, in, false, now);
            op.rr_in = static_cast<uint8_t>((in + 1) % n);
            return true;
        }
    }
    if (!active(o)) {
        return false;
    }
    // Data: the output's VL arbitration picks the VL among those whose
    // packet may go (credit); within a VL the inputs take turns.
    const uint8_t vls = op.credits.vls();
    struct Head {
        uint8_t in = 0;
        uint8_t in_vl = 0;
    };
    std::array<Head, kMaxDataVls> heads{};
    uint16_t ready = 0;
    for (unsigned k = 0; k < n; ++k) {
        const auto in = static_cast<uint8_t>((op.rr_in + k) % n);
        for (uint8_t in_vl = 0; in_vl < kMaxDataVls; ++in_vl) {
            auto &qs = port(in).in[in_vl];
            if (qs.empty() || (qs.front().out_mask & bit(o)) == 0) {
                continue;
            }
            Queued &q = qs.front();
            const uint8_t vl = out_vl(q, in, o);
            if (vl >= vls || !pkey_passes(o, q.frame, false)) {
                // SL2VL maps it to VL15 (drop) or a VL the port lacks, or
                // its partition is not the output's.
                q.out_mask &= ~bit(o);
                if (vl >= vls) {
                    ++op.stats.relay_drops;
                    sat_add(sma_port(o).counters.xmit_discards, 1, 0xFFFF);
                } else {
                    sat_add(sma_port(o).counters.xmit_constraint_errors, 1, 0xFF);
                    trap_bad_pkey(o, q.frame, now);
                }
                pop_done(qs, in, in != 0, now);
                return true;
            }
            if ((ready & (1u << vl)) != 0) {
                continue; // an earlier input has this VL's turn
            }
            if (!op.credits.may_send(vl, q.blocks)) {
                ++op.stats.credit_waits;
                continue;
            }
            heads[vl] = {in, in_vl};
            ready = static_cast<uint16_t>(ready | (1u << vl));
        }
    }
    if (ready == 0) {
        return false;
    }
    const int pick = op.arb.pick(ready, sma_port(o), vls);
    if (pick < 0) {
        return false; // the tables serve none of them: they wait (HOQ)
    }
    const auto vl = static_cast<uint8_t>(pick);
    const Head h = heads[vl];
    auto &qs = port(h.in).in[h.in_vl];
    Queued &q = qs.front();
    if (!take_line(op, q.frame.size(), now)) {
        return false;
    }
    op.credits.on_sent(vl, q.blocks);
    op.arb.sent(q.frame.size());
    emit(o, q, vl);
    q.out_mask &= ~bit(o);
    pop_done(qs, h.in, h.in != 0, now);
    op.rr_in = static_cast<uint8_t>((h.in + 1) % n);
    return true;
}

void Switch::schedule(uint64_t now) {
    discard_heads(now);
    // FCPs for freed buffers go out first on every connected port.
    for (uint8_t p = 1; p <= cfg_.ports; ++p) {
        if (port(p).connected) {
            write_fcps(p, false);
        }
    }
    // Then packets, one per output per round, until nothing moves. Each
    // round moves at least one packet out of a bounded buffer, so this ends.
    bool moved = true;
    while (moved) {
        moved = false;
        for (uint8_t o = 1; o <= cfg_.ports; ++o) {
            moved |= schedule_port(o, now);
        }
    }
    for (uint8_t p = 1; p <= cfg_.ports; ++p) {
        if (port(p).connected) {
            write_fcps(p, false);
        }
    }
}

bool Switch::send_trap(uint16_t number, uint8_t type, std::span<const uint8_t> details,
                       uint64_t now) {
    const PortInfo &mgmt = sma_state_.ports[0].info;
    if (mgmt.lid == 0 || mgmt.master_sm_lid == 0 || own_lid(mgmt.master_sm_lid)) {
        return false;
    }
    const uint64_t mask = route(mgmt.master_sm_lid, 0);
    if (mask == 0) {
        return false;
    }
    const Smp t = sma_.make_trap(number, type, details, (0xFAB0ull << 48) | ++trap_tid_);
    Mad m{};
    t.write(m);
    auto f = ud_mad_frame(kVl15, mgmt.master_sm_sl, mgmt.master_sm_lid, mgmt.lid, kDefaultPKey, 0,
                          0, 0, psn_++, m);
    ++port(0).stats.traps_sent;
    send_local(static_cast<uint8_t>(__builtin_ctzll(mask)), std::move(f), now, true, kVl15);
    return true;
}

// Trap 128 (IBTA §14.2.5.1): a port's link state changed; the switch
// tells the master SM, once it knows its own LID and the SM's (before
// that the SM has not swept yet and will see the port anyway).
void Switch::trap_link_state(uint64_t now) {
    const uint16_t lid = sma_state_.ports[0].info.lid;
    const uint8_t details[2] = {static_cast<uint8_t>(lid >> 8), static_cast<uint8_t>(lid)};
    (void)send_trap(trap::LinkStateChange, notice_type::Urgent, details, now);
}

// Trap 259 (IBTA §14.2.5.1, "Bad P_Key, switch external port"): what the
// dropped packet's headers say (only the LRH and P_Key when it does not
// parse as a whole), the switch's LID and the port.
void Switch::trap_bad_pkey(uint8_t p, std::span<const uint8_t> frame, uint64_t now) {
    if (now < next_bad_pkey_trap_ns_) {
        ++port(0).stats.bad_pkey_traps_suppressed;
        return;
    }
    SwitchPKeyViolation v;
    v.sw_lid = sma_state_.ports[0].info.lid;
    v.port = p;
    Lrh lrh;
    if (check_link(frame, lrh) == PacketError::Ok) {
        v.lid1 = lrh.slid;
        v.lid2 = lrh.dlid;
        v.sl = lrh.sl;
        v.valid |= SwitchPKeyViolation::Lid1 | SwitchPKeyViolation::Lid2 | SwitchPKeyViolation::Sl;
    }
    if (const std::optional<uint16_t> pkey = frame_pkey(frame)) {
        v.pkey = *pkey;
        v.valid |= SwitchPKeyViolation::PKey;
    }
    Packet pkt;
    if (parse(frame, pkt) == PacketError::Ok && pkt.has_bth) {
        v.qp2 = pkt.bth.dest_qp;
        v.valid |= SwitchPKeyViolation::Qp2;
        // UD (and RD) carry the source QP in a DETH after the BTH.
        if ((pkt.bth.opcode & 0xE0) == 0x60 && pkt.payload_offset + kDethBytes <= frame.size()) {
            v.qp1 = get32(&frame[pkt.payload_offset + 4]) & kQpnMask;
            v.valid |= SwitchPKeyViolation::Qp1;
        }
        if (pkt.has_grh) {
            v.gid1 = pkt.grh.sgid;
            v.gid2 = pkt.grh.dgid;
            v.valid |= SwitchPKeyViolation::Gid1 | SwitchPKeyViolation::Gid2;
        }
    }
    std::array<uint8_t, SwitchPKeyViolation::kBytes> d{};
    v.write(d);
    if (send_trap(trap::SwitchPKeyViolation, notice_type::Security, d, now)) {
        ++port(0).stats.bad_pkey_traps;
        next_bad_pkey_trap_ns_ = now + kBadPKeyTrapPeriodNs;
    } else {
        ++port(0).stats.bad_pkey_traps_suppressed;
    }
}

void Switch::apply_sma_changes(uint64_t now) {
    const SmaChanges &c = sma_.changes();
    bool went_down = false;
    if (c.port_state != 0) {
        // Ports the SM took down lose what waits for them (discard_heads
        // at the next schedule); a port set Down retrains: nothing to do
        // for a socket, the link stays up and the port returns to Init.
        for (uint8_t p = 1; p <= cfg_.ports; ++p) {
            PortInfo &i = sma_port(p).info;
            if ((c.port_state & bit(p)) == 0 || i.port_state != port_state::Down) {
                continue;
            }
            if (port(p).connected && i.phys_state == phys_state::Polling) {
                i.phys_state = phys_state::LinkUp;
                i.port_state = port_state::Init;
            }
            went_down = true;
        }
    }
    sma_.clear_changes();
    if (went_down) {
        // A port went Down (and retrained, unless disabled): a change the
        // SM's sweep must see (PortStateChange) and the SM hears of at
        // once (trap 128), whoever set it: one trap per Set at most.
        sma_state_.switch_info.port_state_change = true;
        trap_link_state(now);
    }
}

// ---------------------------------------------------------------------------

size_t Switch::queued_packets(uint8_t p) const {
    size_t n = port(p).in15.size();
    for (const auto &q : port(p).in) {
        n += q.size();
    }
    return n;
}

size_t Switch::queued_blocks(uint8_t p) const {
    size_t n = 0;
    for (const auto &q : port(p).in) {
        for (const auto &e : q) {
            n += e.blocks;
        }
    }
    return n;
}

size_t Switch::output_bytes(uint8_t p) const {
    return port(p).out.size();
}

std::string Switch::stats_json() const {
    std::string s;
    JsonWriter w(s);
    w.begin_object();
    w.hex64("guid", cfg_.guid);
    w.num("lid", sma_state_.ports[0].info.lid);
    w.num("line_rate_bps", cfg_.line_rate_bps);
    w.begin_array("ports");
    for (uint8_t p = 0; p <= cfg_.ports; ++p) {
        const PortStats &st = port(p).stats;
        const SmaPortState &sp = sma_state_.ports[p];
        const PortCountersExtended &x = sp.counters_ext;
        w.begin_object();
        w.num("port", p);
        w.flag("connected", port(p).connected);
        w.num("state", sp.info.port_state);
        w.num("phys_state", sp.info.phys_state);
        w.num("frames_in", st.frames_in);
        w.num("frames_out", st.frames_out);
        w.num("link_packets_in", st.link_packets_in);
        w.num("link_packets_out", st.link_packets_out);
        w.num("bad_link_packets", st.bad_link_packets);
        w.num("ignored_link_packets", st.ignored_link_packets);
        w.num("bad_frames", st.bad_frames);
        w.num("overruns", st.overruns);
        w.num("relay_drops", st.relay_drops);
        w.num("hoq_discards", st.hoq_discards);
        w.num("inactive_discards", st.inactive_discards);
        w.num("vl15_dropped", st.vl15_dropped);
        w.num("smp_local", st.smp_local);
        w.num("smp_forwarded", st.smp_forwarded);
        w.num("credit_waits", st.credit_waits);
        w.num("oversize_frames", port(p).reader.stats().oversize);
        w.num("traps_sent", st.traps_sent);
        w.num("bad_pkey_traps", st.bad_pkey_traps);
        w.num("bad_pkey_traps_suppressed", st.bad_pkey_traps_suppressed);
        w.num("rate_waits", st.rate_waits);
        w.num("busy_ns", st.busy_ns);
        w.num("in_hwm_blocks", st.in_hwm_blocks);
        w.num("bytes_in", st.bytes_in);
        w.num("bytes_out", st.bytes_out);
        w.num("xmit_pkts", x.xmit_pkts);
        w.num("rcv_pkts", x.rcv_pkts);
        w.num("xmit_words", x.xmit_data);
        w.num("rcv_words", x.rcv_data);
        w.num("xmit_discards", sp.counters.xmit_discards);
        w.num("rcv_errors", sp.counters.rcv_errors);
        w.num("xmit_constraint_errors", sp.counters.xmit_constraint_errors);
        w.num("rcv_constraint_errors", sp.counters.rcv_constraint_errors);
        w.end_object();
    }
    w.end_array();
    w.end_object();
    return s;
}

} // namespace ohca::fabric
