// SPDX-License-Identifier: GPL-2.0-or-later
#include "eth_switch.hpp"

#include "json.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ohca::fabric {

using namespace ohca::eth;

namespace {

constexpr uint64_t kNsPerS = 1'000'000'000ull;
constexpr uint32_t kMinCharge = 64; // a frame holds at least this much buffer
constexpr uint64_t kAgeSweepNs = 1'000'000'000ull;

uint64_t mac_key(const Mac &m) {
    uint64_t k = 0;
    for (uint8_t b : m) {
        k = k << 8 | b;
    }
    return k;
}

uint8_t bit(size_t prio) {
    return static_cast<uint8_t>(1u << prio);
}

// splitmix64: a small deterministic generator (the seed makes RED
// marking reproducible in tests).
uint64_t next_random(uint64_t &state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

} // namespace

EthSwitch::EthSwitch(const EthConfig &cfg) : cfg_(cfg), rng_(cfg.seed) {
    cfg_.ports = std::clamp<uint8_t>(cfg_.ports, 1, kMaxPorts);
    cfg_.line_rate_bps = std::max<uint64_t>(cfg_.line_rate_bps, 1'000'000);
    cfg_.max_frame = std::clamp<size_t>(cfg_.max_frame, kMinFrameBytes, kMaxFrameBytes);
    if (cfg_.burst_bytes == 0) {
        cfg_.burst_bytes = static_cast<uint32_t>(2 * (cfg_.max_frame + cfg_.wire_overhead));
    }
    cfg_.burst_bytes = std::max<uint32_t>(cfg_.burst_bytes, static_cast<uint32_t>(cfg_.max_frame) +
                                                                cfg_.wire_overhead);
    cfg_.xon_bytes = std::min(cfg_.xon_bytes, cfg_.xoff_bytes);
    cfg_.kmax_bytes = std::max(cfg_.kmax_bytes, cfg_.kmin_bytes);
    cfg_.pmax = std::clamp(cfg_.pmax, 0.0, 1.0);
    ports_.resize(cfg_.ports + 1u);
    macs_.reserve(cfg_.mac_table);
}

uint64_t EthSwitch::burst_units() const {
    return static_cast<uint64_t>(cfg_.burst_bytes) * 8 * kNsPerS;
}

uint64_t EthSwitch::cost_units(size_t bytes) const {
    return static_cast<uint64_t>(bytes + cfg_.wire_overhead) * 8 * kNsPerS;
}

uint64_t EthSwitch::quanta_ns(uint16_t quanta) const {
    // A quantum is 512 bit times at the port's speed.
    return static_cast<uint64_t>(quanta) * 512 * kNsPerS / cfg_.line_rate_bps;
}

uint8_t EthSwitch::priority(const FrameInfo &f) const {
    if (cfg_.trust == PrioTrust::Pcp) {
        return f.has_pcp ? f.pcp : 0;
    }
    return f.ip != 0 ? static_cast<uint8_t>(f.dscp >> 3) : 0;
}

// ---------------------------------------------------------------------------
// Transport events

void EthSwitch::connect(uint8_t p, uint64_t now) {
    if (p == 0 || p > cfg_.ports || port(p).connected) {
        return;
    }
    Port &pt = port(p);
    pt.connected = true;
    pt.reader.reset();
    pt.out.clear();
    pt.paused_until.fill(0);
    pt.xoff.fill(false);
    pt.announce = 0;
    pt.tokens = burst_units();
    pt.last_fill = now;
    pt.egress_since = now;
    pt.egress_state = kEgressIdle;
}

void EthSwitch::disconnect(uint8_t p, uint64_t now) {
    if (p == 0 || p > cfg_.ports || !port(p).connected) {
        return;
    }
    Port &pt = port(p);
    pt.connected = false;
    pt.out.clear();
    pt.xoff.fill(false);
    pt.announce = 0;
    for (size_t prio = 0; prio < kPriorities; ++prio) {
        while (!pt.q[prio].empty()) {
            const Queued q = std::move(pt.q[prio].front());
            pt.q[prio].pop_front();
            pt.q_bytes[prio] -= q.charge;
            release(q);
        }
    }
    // Its stations are gone with the link.
    std::erase_if(macs_, [&](const auto &e) { return e.second.port == p; });
    pt.macs = 0;
    schedule(now);
}

// Every event gives the time. The gap since the event before is the time
// the switch's process was away (a loaded host ran others): what it reads
// now arrived in the sockets during that gap.
void EthSwitch::clock(uint64_t now) {
    if (!clocked_) {
        clocked_ = true;
        now_ = now;
    }
    if (now > now_) {
        const uint64_t gap = now - now_;
        away_ns_ = cfg_.away_after_ns != 0 && gap > cfg_.away_after_ns ? gap : 0;
        now_ = now;
    }
}

void EthSwitch::receive(uint8_t p, std::span<const uint8_t> bytes, uint64_t now) {
    clock(now);
    if (p == 0 || p > cfg_.ports || !port(p).connected) {
        return;
    }
    port(p).reader.feed(bytes, [&](std::span<const uint8_t> f) { on_frame(p, f, now); });
    schedule(now);
}

std::span<const uint8_t> EthSwitch::output(uint8_t p) const {
    const Port &pt = port(p);
    return pt.out.pending();
}

size_t EthSwitch::output_bytes(uint8_t p) const {
    return port(p).out.size();
}

void EthSwitch::consumed(uint8_t p, size_t n, uint64_t now) {
    clock(now);
    Port &pt = port(p);
    pt.out.consume(n, cfg_.out_limit);
    schedule(now);
}

void EthSwitch::tick(uint64_t now) {
    clock(now);
    for (uint8_t p = 1; p <= cfg_.ports; ++p) {
        Port &pt = port(p);
        if (!pt.connected) {
            continue;
        }
        // An XOFF expires at the peer after its quanta: refresh it halfway
        // while the queue is still above XON.
        const uint64_t refresh = quanta_ns(cfg_.pause_quanta) / 2;
        for (size_t prio = 0; prio < kPriorities; ++prio) {
            if (pt.xoff[prio] && now - pt.xoff_sent[prio] >= refresh) {
                pt.announce |= bit(prio);
            }
        }
    }
    if (now - last_age_ >= kAgeSweepNs) {
        age(now);
        last_age_ = now;
    }
    schedule(now);
    timeline(now);
}

size_t EthSwitch::queue_bytes(uint8_t p) const {
    size_t n = 0;
    for (size_t b : port(p).q_bytes) {
        n += b;
    }
    return n;
}

// 'ready': bytes the line has time for at once, which wait for nothing.
void EthSwitch::sample_depth(Port &pt, size_t ready) {
    size_t d = 0;
    for (size_t b : pt.q_bytes) {
        d += b;
    }
    d -= std::min(d, ready);
    const size_t all = cfg_.buffer_bytes + cfg_.headroom_bytes;
    const size_t bucket = std::min(kDepthBuckets - 1, d * kDepthBuckets / all);
    ++pt.depth[bucket];
    ++pt.depth_samples;
    pt.depth_max = std::max(pt.depth_max, d);
}

uint64_t EthSwitch::depth_quantile(uint8_t p, double q) const {
    const Port &pt = port(p);
    if (pt.depth_samples == 0) {
        return 0;
    }
    const auto want = static_cast<uint64_t>(std::ceil(q * static_cast<double>(pt.depth_samples)));
    uint64_t seen = 0;
    for (size_t b = 0; b < kDepthBuckets; ++b) {
        seen += pt.depth[b];
        if (seen >= std::max<uint64_t>(want, 1)) {
            return (b + 1) * (cfg_.buffer_bytes + cfg_.headroom_bytes) / kDepthBuckets;
        }
    }
    return cfg_.buffer_bytes + cfg_.headroom_bytes;
}

void EthSwitch::timeline(uint64_t now, bool force) {
    if (!timeline_ || timeline_ns_ == 0) {
        return;
    }
    if (!timeline_started_) {
        timeline_started_ = true;
        timeline_start_ = now;
    } else if (now - last_timeline_ < timeline_ns_ && !force) {
        return;
    }
    last_timeline_ = now;
    std::string s;
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "{\"t_us\": %llu, \"mono_us\": %llu, \"buffer_used\": %zu, \"ports\": [",
                  static_cast<unsigned long long>((now - timeline_start_) / 1000),
                  static_cast<unsigned long long>(now / 1000), used_);
    s += buf;
    for (uint8_t p = 1; p <= cfg_.ports; ++p) {
        Port &pt = port(p);
        const EthPortStats &st = pt.stats;
        uint64_t drops = 0;
        uint64_t marks = 0;
        uint64_t pauses = 0;
        for (const EthPrioStats &x : st.prio) {
            drops += x.drops;
            marks += x.ecn_marks;
            pauses += x.pauses_sent;
        }
        std::snprintf(
            buf, sizeof buf,
            "%s{\"port\": %u, \"queue_bytes\": %zu, \"queue_max_bytes\": %zu, "
            "\"rx_bytes\": %llu, \"tx_bytes\": %llu, \"drops\": %llu, \"ecn_marks\": %llu, "
            "\"pauses_sent\": %llu, \"idle_us\": %llu, \"line_us\": %llu, \"blocked_us\": %llu, "
            "\"paused_us\": %llu, \"sojourn\": [",
            p == 1 ? "" : ", ", p, queue_bytes(p), pt.depth_max,
            static_cast<unsigned long long>(st.bytes_in),
            static_cast<unsigned long long>(st.bytes_out), static_cast<unsigned long long>(drops),
            static_cast<unsigned long long>(marks), static_cast<unsigned long long>(pauses),
            static_cast<unsigned long long>(st.egress_idle_ns / 1000),
            static_cast<unsigned long long>(st.egress_line_ns / 1000),
            static_cast<unsigned long long>(st.egress_blocked_ns / 1000),
            static_cast<unsigned long long>(st.egress_paused_ns / 1000));
        s += buf;
        const char *sep = "";
        for (uint8_t in = 1; in <= cfg_.ports; ++in) {
            if (pt.sojourn_frames[in] != 0) {
                std::snprintf(buf, sizeof buf, "%s[%u, %u, %u]", sep, in, pt.sojourn_frames[in],
                              pt.sojourn_max_us[in]);
                s += buf;
                sep = ", ";
            }
        }
        s += "]}";
        pt.depth_max = 0;
        pt.sojourn_frames.fill(0);
        pt.sojourn_max_us.fill(0);
    }
    s += "]}";
    timeline_(s);
}

uint64_t EthSwitch::next_wake(uint64_t now) const {
    uint64_t wake = now + 1'000'000;
    const uint64_t refresh = quanta_ns(cfg_.pause_quanta) / 2;
    for (uint8_t p = 1; p <= cfg_.ports; ++p) {
        const Port &pt = port(p);
        if (!pt.connected) {
            continue;
        }
        if (output_bytes(p) >= cfg_.out_limit) {
            continue; // the socket's writability wakes the loop
        }
        if (pt.announce != 0) {
            return now;
        }
        for (size_t prio = 0; prio < kPriorities; ++prio) {
            if (pt.xoff[prio]) {
                wake = std::min(wake, pt.xoff_sent[prio] + refresh);
            }
        }
        uint64_t tokens = pt.tokens;
        const uint64_t dt = now - pt.last_fill;
        const uint64_t room = burst_units() - std::min(tokens, burst_units());
        tokens += dt >= room / cfg_.line_rate_bps + 1 ? room : dt * cfg_.line_rate_bps;
        tokens = std::min(tokens, burst_units());
        // The frame transmit() would send next: the first unpaused head in
        // round-robin order; paused heads wake the loop when they expire.
        for (size_t i = 0; i < kPriorities; ++i) {
            const size_t prio = (pt.rr + i) % kPriorities;
            if (pt.q[prio].empty()) {
                continue;
            }
            if (pt.paused_until[prio] > now) {
                wake = std::min(wake, pt.paused_until[prio]);
                continue;
            }
            const uint64_t cost = cost_units(pt.q[prio].front().frame.size());
            if (tokens >= cost) {
                return now;
            }
            wake =
                std::min(wake, now + (cost - tokens + cfg_.line_rate_bps - 1) / cfg_.line_rate_bps);
            break;
        }
    }
    return wake;
}

// ---------------------------------------------------------------------------
// Receive

void EthSwitch::on_frame(uint8_t p, std::span<const uint8_t> frame, uint64_t now) {
    Port &pt = port(p);
    ++pt.stats.frames_in;
    pt.stats.bytes_in += frame.size();
    FrameInfo info;
    if (parse(frame, info, cfg_.max_frame) != FrameError::Ok) {
        ++pt.stats.bad_frames;
        return;
    }
    if (capture_) {
        capture_(p, frame);
    }
    if (info.mac_control) {
        // MAC control frames end at the link: PFC is honoured, the rest
        // (802.3x PAUSE included) dropped.
        if (info.opcode == kOpPfc) {
            on_pfc(p, info.pfc, now);
        } else {
            ++pt.stats.mac_control;
        }
        return;
    }
    if (is_link_local(info.dst)) {
        ++pt.stats.link_local;
        return;
    }
    const uint8_t prio = priority(info);
    ++pt.stats.prio[prio].rx_packets;
    pt.stats.prio[prio].rx_bytes += frame.size();
    learn(p, info.src, now);
    uint64_t mask = 0;
    const uint8_t to = is_group(info.dst) ? 0 : lookup(info.dst, now);
    if (to == p) {
        ++pt.stats.filtered;
        return;
    }
    if (to != 0) {
        mask = 1ull << to;
    } else {
        ++pt.stats.flooded;
        for (uint8_t o = 1; o <= cfg_.ports; ++o) {
            if (o != p) {
                mask |= 1ull << o;
            }
        }
    }
    for (uint8_t o = 1; o <= cfg_.ports; ++o) {
        if ((mask & (1ull << o)) != 0 && port(o).connected) {
            enqueue(o, p, prio, frame, info, now);
        }
    }
}

void EthSwitch::on_pfc(uint8_t p, const PfcInfo &pfc, uint64_t now) {
    Port &pt = port(p);
    for (size_t prio = 0; prio < kPriorities; ++prio) {
        if ((pfc.enable & bit(prio)) == 0) {
            continue;
        }
        if (pfc.quanta[prio] == 0) {
            pt.paused_until[prio] = 0;
            ++pt.stats.prio[prio].resumes_received;
        } else {
            pt.paused_until[prio] = now + quanta_ns(pfc.quanta[prio]);
            ++pt.stats.prio[prio].pauses_received;
        }
    }
}

uint8_t EthSwitch::lookup(const Mac &mac, uint64_t now) const {
    const auto it = macs_.find(mac_key(mac));
    if (it == macs_.end() || now - it->second.seen >= cfg_.mac_age_ns) {
        return 0;
    }
    return it->second.port;
}

void EthSwitch::learn(uint8_t p, const Mac &mac, uint64_t now) {
    const uint64_t key = mac_key(mac);
    const auto it = macs_.find(key);
    if (it != macs_.end()) {
        if (it->second.port != p) { // a station moved
            if (port(p).macs >= cfg_.mac_per_port) {
                ++port(p).stats.learn_refused;
                return;
            }
            --port(it->second.port).macs;
            ++port(p).macs;
            it->second.port = p;
        }
        it->second.seen = now;
        return;
    }
    if (macs_.size() >= cfg_.mac_table || port(p).macs >= cfg_.mac_per_port) {
        ++port(p).stats.learn_refused;
        return;
    }
    macs_.emplace(key, MacEntry{p, now});
    ++port(p).macs;
}

void EthSwitch::age(uint64_t now) {
    std::erase_if(macs_, [&](const auto &e) {
        if (now - e.second.seen < cfg_.mac_age_ns) {
            return false;
        }
        --port(e.second.port).macs;
        return true;
    });
}

bool EthSwitch::red_mark(size_t depth) {
    if (depth <= cfg_.kmin_bytes) {
        return false;
    }
    if (depth >= cfg_.kmax_bytes) {
        return true;
    }
    const double p = cfg_.pmax * static_cast<double>(depth - cfg_.kmin_bytes) /
                     static_cast<double>(cfg_.kmax_bytes - cfg_.kmin_bytes);
    const double u = static_cast<double>(next_random(rng_) >> 11) * 0x1.0p-53;
    return u < p;
}

void EthSwitch::enqueue(uint8_t o, uint8_t in, uint8_t prio, std::span<const uint8_t> frame,
                        const FrameInfo &info, uint64_t now) {
    Port &out = port(o);
    Port &src = port(in);
    // What the line earned beyond its burst while the switch was away (or
    // catching up) it spends in this round, on frames that a line would
    // have sent as they came: they wait for nothing, and the queue that RED
    // and the depth figures judge is the one beyond them (with
    // away_after_ns on; off, every queued byte counts, as before).
    size_t ready = 0;
    if (cfg_.away_after_ns != 0) {
        fill(out, now);
        const uint64_t burst = burst_units();
        ready = static_cast<size_t>(out.tokens > burst ? (out.tokens - burst) / (8 * kNsPerS) : 0);
    }
    sample_depth(out, ready);
    const auto charge = static_cast<uint32_t>(std::max<size_t>(frame.size(), kMinCharge));
    const size_t limit =
        cfg_.buffer_bytes + ((cfg_.pfc_enable & bit(prio)) != 0 ? cfg_.headroom_bytes : 0);
    if (used_ + charge > limit) {
        ++out.stats.prio[prio].drops;
        return;
    }
    Queued q;
    q.frame.assign(frame.begin(), frame.end());
    q.charge = charge;
    q.queued_at = now;
    q.in = in;
    q.prio = prio;
    if (cfg_.ecn && (info.ecn == Ecn::Ect0 || info.ecn == Ecn::Ect1) &&
        red_mark(out.q_bytes[prio] - std::min(out.q_bytes[prio], ready)) &&
        mark_ce(q.frame, info)) {
        ++out.stats.prio[prio].ecn_marks;
    }
    out.q[prio].push_back(std::move(q));
    out.q_bytes[prio] += charge;
    used_ += charge;
    used_hwm_ = std::max(used_hwm_, used_);
    EthPrioStats &os = out.stats.prio[prio];
    os.queue_hwm = std::max<uint64_t>(os.queue_hwm, out.q_bytes[prio]);
    src.in_bytes[prio] += charge;
    EthPrioStats &is = src.stats.prio[prio];
    is.ingress_hwm = std::max<uint64_t>(is.ingress_hwm, src.in_bytes[prio]);
    if ((cfg_.pfc_enable & bit(prio)) != 0 && !src.xoff[prio] &&
        src.in_bytes[prio] >= cfg_.xoff_bytes) {
        src.xoff[prio] = true;
        src.announce |= bit(prio);
    }
}

void EthSwitch::release(const Queued &q) {
    used_ -= q.charge;
    Port &src = port(q.in);
    src.in_bytes[q.prio] -= q.charge;
    if (src.xoff[q.prio] && src.in_bytes[q.prio] <= cfg_.xon_bytes) {
        src.xoff[q.prio] = false;
        if (src.connected) {
            src.announce |= bit(q.prio);
        }
    }
}

// ---------------------------------------------------------------------------
// Transmit

void EthSwitch::fill(Port &pt, uint64_t now) {
    const uint64_t burst = burst_units();
    const uint64_t dt = now - pt.last_fill;
    pt.last_fill = now;
    // A port that had frames to send since its last look (the line busy,
    // or its socket momentarily full) earns the whole time, up to
    // catch_up_ns of it. Blocked counts as busy: the socket took the last
    // 16 KiB and will take more (else a catch-up ends at the first full
    // hand-off). An idle port earns the burst, or the time the switch was
    // away (up to away_max_ns): the frames it reads now came meanwhile,
    // and a line would have sent them as they came; a busy one that time
    // too when it is longer than catch_up_ns. A paused one the burst.
    const bool busy = pt.egress_state == kEgressLine || pt.egress_state == kEgressBlocked;
    const uint64_t away = std::min(away_ns_, cfg_.away_max_ns);
    uint64_t span = 0;
    if (busy) {
        span = std::max(cfg_.catch_up_ns, away);
    } else if (pt.egress_state == kEgressIdle) {
        span = away;
    }
    const uint64_t cap =
        std::max(burst, std::min(span, UINT64_MAX / cfg_.line_rate_bps) * cfg_.line_rate_bps);
    const uint64_t before = std::min(pt.tokens, cap); // an idle port keeps no catch-up
    const uint64_t room = cap - before;
    pt.tokens = dt >= room / cfg_.line_rate_bps + 1 ? cap : before + dt * cfg_.line_rate_bps;
    if (cap > burst) {
        // What a bucket capped at the burst would have thrown away.
        const uint64_t earned =
            std::min({dt, span, UINT64_MAX / 2 / cfg_.line_rate_bps}) * cfg_.line_rate_bps;
        const uint64_t held = std::min(before, burst);
        if (held + earned > burst) {
            pt.stats.egress_catch_up_bytes += (held + earned - burst) / 8 / kNsPerS;
        }
    }
}

void EthSwitch::schedule(uint64_t now) {
    // Two passes: a frame sent in the first may release buffer and bring
    // a port before it to XON.
    for (int pass = 0; pass < 2; ++pass) {
        for (uint8_t o = 1; o <= cfg_.ports; ++o) {
            if (port(o).connected) {
                transmit(o, now);
            }
        }
    }
}

void EthSwitch::append(Port &pt, std::span<const uint8_t> frame) {
    pt.out.append(frame);
}

void EthSwitch::emit_pfc(uint8_t o, uint64_t now) {
    Port &pt = port(o);
    PfcInfo pfc;
    pfc.enable = pt.announce;
    for (size_t prio = 0; prio < kPriorities; ++prio) {
        if ((pt.announce & bit(prio)) == 0) {
            continue;
        }
        if (pt.xoff[prio]) {
            pfc.quanta[prio] = cfg_.pause_quanta;
            pt.xoff_sent[prio] = now;
            ++pt.stats.prio[prio].pauses_sent;
        } else {
            ++pt.stats.prio[prio].resumes_sent;
        }
    }
    pt.announce = 0;
    Mac src = cfg_.base_mac;
    src[5] = static_cast<uint8_t>(src[5] + o);
    const auto f = make_pfc(src, pfc);
    append(pt, f);
    if (capture_) {
        capture_(o, f);
    }
}

// The time since the port's last look goes to the state it was left in;
// then the state it is left in now. Called after every transmit(), which
// every event and timer runs, so a state's time is exact to the event.
void EthSwitch::account_egress(Port &pt, uint8_t o, uint64_t now) {
    if (now > pt.egress_since) {
        const uint64_t dt = now - pt.egress_since;
        EthPortStats &st = pt.stats;
        switch (pt.egress_state) {
        case kEgressLine:
            st.egress_line_ns += dt;
            break;
        case kEgressBlocked:
            st.egress_blocked_ns += dt;
            break;
        case kEgressPaused:
            st.egress_paused_ns += dt;
            break;
        default:
            st.egress_idle_ns += dt;
            break;
        }
        pt.egress_since = now;
    }
    bool queued = false;
    bool unpaused = false;
    for (size_t prio = 0; prio < kPriorities; ++prio) {
        if (!pt.q[prio].empty()) {
            queued = true;
            unpaused = unpaused || pt.paused_until[prio] <= now;
        }
    }
    pt.egress_state = !queued                             ? kEgressIdle
                      : output_bytes(o) >= cfg_.out_limit ? kEgressBlocked
                      : !unpaused                         ? kEgressPaused
                                                          : kEgressLine;
}

void EthSwitch::transmit(uint8_t o, uint64_t now) {
    Port &pt = port(o);
    fill(pt, now);
    transmit_frames(o, now);
    account_egress(pt, o, now);
}

void EthSwitch::transmit_frames(uint8_t o, uint64_t now) {
    Port &pt = port(o);
    while (output_bytes(o) < cfg_.out_limit) {
        // PFC frames go first and are not shaped: they are what stops the
        // line upstream.
        if (pt.announce != 0) {
            emit_pfc(o, now);
            continue;
        }
        size_t pick = kPriorities;
        for (size_t i = 0; i < kPriorities; ++i) {
            const size_t prio = (pt.rr + i) % kPriorities;
            if (!pt.q[prio].empty() && pt.paused_until[prio] <= now) {
                pick = prio;
                break;
            }
        }
        if (pick == kPriorities) {
            return;
        }
        const uint64_t cost = cost_units(pt.q[pick].front().frame.size());
        if (pt.tokens < cost) {
            return; // the line is busy until next_wake()
        }
        pt.tokens -= cost;
        // The line's time the bucket still holds beyond this frame is time
        // the line was free before now (the switch's late wake-up that
        // fill() caught up, or the burst of an idle port): a line would
        // have begun this frame that much earlier, or when it came.
        const uint64_t unused_ns = pt.tokens / cfg_.line_rate_bps;
        const Queued q = std::move(pt.q[pick].front());
        const uint64_t began = std::max(q.queued_at, now - std::min(now, unused_ns));
        pt.q[pick].pop_front();
        pt.q_bytes[pick] -= q.charge;
        append(pt, q.frame);
        ++pt.stats.frames_out;
        pt.stats.bytes_out += q.frame.size();
        ++pt.stats.prio[pick].tx_packets;
        pt.stats.prio[pick].tx_bytes += q.frame.size();
        pt.rr = static_cast<uint8_t>((pick + 1) % kPriorities);
        const uint64_t waited_us = (std::min(now, began) - std::min(began, q.queued_at)) / 1000;
        pt.sojourn_max_us[q.in] =
            std::max(pt.sojourn_max_us[q.in],
                     static_cast<uint32_t>(std::min<uint64_t>(waited_us, UINT32_MAX)));
        ++pt.sojourn_frames[q.in];
        release(q);
    }
}

// ---------------------------------------------------------------------------
// Counters

std::string EthSwitch::stats_json() const {
    std::string s;
    JsonWriter w(s);
    w.begin_object();
    w.str("mode", "eth");
    w.num("line_rate_bps", cfg_.line_rate_bps);
    w.num("buffer_bytes", cfg_.buffer_bytes);
    w.num("buffer_used", used_);
    w.num("buffer_hwm", used_hwm_);
    w.num("mac_entries", macs_.size());
    w.begin_array("ports");
    for (uint8_t p = 1; p <= cfg_.ports; ++p) {
        const Port &pt = port(p);
        const EthPortStats &st = pt.stats;
        w.begin_object();
        w.num("port", p);
        w.flag("connected", pt.connected);
        w.num("frames_in", st.frames_in);
        w.num("bytes_in", st.bytes_in);
        w.num("frames_out", st.frames_out);
        w.num("bytes_out", st.bytes_out);
        w.num("bad_frames", st.bad_frames);
        w.num("oversize_frames", pt.reader.stats().oversize);
        w.num("mac_control", st.mac_control);
        w.num("link_local", st.link_local);
        w.num("filtered", st.filtered);
        w.num("flooded", st.flooded);
        w.num("learn_refused", st.learn_refused);
        w.num("macs", pt.macs);
        w.num("queue_p50_bytes", depth_quantile(p, 0.5));
        w.num("queue_p99_bytes", depth_quantile(p, 0.99));
        w.num("queue_samples", pt.depth_samples);
        w.num("egress_idle_us", st.egress_idle_ns / 1000);
        w.num("egress_line_us", st.egress_line_ns / 1000);
        w.num("egress_blocked_us", st.egress_blocked_ns / 1000);
        w.num("egress_paused_us", st.egress_paused_ns / 1000);
        w.num("egress_catch_up_bytes", st.egress_catch_up_bytes);
        w.begin_array("prio");
        for (size_t prio = 0; prio < kPriorities; ++prio) {
            const EthPrioStats &x = st.prio[prio];
            w.begin_object();
            w.num("prio", prio);
            w.num("rx_bytes", x.rx_bytes);
            w.num("rx_packets", x.rx_packets);
            w.num("tx_bytes", x.tx_bytes);
            w.num("tx_packets", x.tx_packets);
            w.num("drops", x.drops);
            w.num("ecn_marks", x.ecn_marks);
            w.num("pauses_sent", x.pauses_sent);
            w.num("resumes_sent", x.resumes_sent);
            w.num("pauses_received", x.pauses_received);
            w.num("resumes_received", x.resumes_received);
            w.num("queue_bytes", pt.q_bytes[prio]);
            w.num("queue_hwm_bytes", x.queue_hwm);
            w.num("ingress_hwm_bytes", x.ingress_hwm);
            w.end_object();
        }
        w.end_array();
        w.end_object();
    }
    w.end_array();
    w.end_object();
    return s;
}

} // namespace ohca::fabric
