// SPDX-License-Identifier: GPL-2.0-or-later
// ohca-switch's Ethernet mode, without I/O: a learning bridge with N
// ports (1..N) for RoCE, with what a data-centre switch does to make a
// bottleneck and manage it:
//  * every egress port is shaped to a virtual line rate (token bucket),
//    so the bottleneck is the switch, not the host CPU;
//  * one shared packet buffer, bounded; a frame that does not fit is
//    dropped (drop-tail);
//  * ECN marking (RED): an ECT(0)/ECT(1) IP packet enqueued on an egress
//    queue deeper than Kmin is marked CE with a probability rising
//    linearly to Pmax at Kmax, always above Kmax;
//  * PFC (IEEE 802.1Qbb): per ingress port and priority, the bytes it has
//    in the buffer; crossing XOFF sends a PFC frame pausing that priority
//    upstream, falling to XON sends one resuming it (quanta 0). A PFC
//    frame received stops that egress priority for its quanta.
// Time is a number the caller passes (the event loop's monotonic clock,
// a test's fake one); nothing here reads a clock. fabric/README.md has
// the long form.
#pragma once

#include "eth/frame.hpp"
#include "framing.hpp"

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace ohca::fabric {

enum class PrioTrust : uint8_t { Pcp, Dscp };

struct EthConfig {
    uint8_t ports = 4;
    uint64_t line_rate_bps = 1'000'000'000; // every egress port
    uint32_t burst_bytes = 0;               // token bucket depth; 0: two largest frames
    uint32_t wire_overhead = 24;            // preamble 8, FCS 4, gap 12: per frame on the line
    // A port with frames queued keeps earning its line's time beyond the
    // burst for up to this long: the switch's process, woken late by a
    // loaded host, sends what the line would have sent meanwhile instead
    // of losing it (0: the burst is the only bound, as before).
    uint64_t catch_up_ns = 50'000'000;
    // A gap between two events longer than this is the switch's process
    // away (not scheduled), not its loop waiting, which looks at least
    // every millisecond: an idle port earns that time too, up to
    // away_max_ns, for the frames that gathered in the sockets meanwhile,
    // and a port with frames queued earns it beyond catch_up_ns (0: off,
    // an idle port earns the burst only).
    uint64_t away_after_ns = 0;
    // The longest absence credited (a process stopped for longer, e.g.
    // by a debugger, gets this much): the loaded host of make fabric-bench
    // kept the switch away 126 and 244 ms (2026-12-07 06:53), while the
    // senders put 29 Mbit/s into their sockets, which a 50 ms credit left
    // queued as 327 and 569 KB that no line would have held.
    uint64_t away_max_ns = 1'000'000'000;
    size_t buffer_bytes = 1 << 20; // the shared buffer
    // PFC headroom: buffer beyond buffer_bytes that only frames of the
    // lossless priorities may fill (what a peer sends after XOFF before it
    // stops), as switch ASICs reserve it out of their buffer.
    size_t headroom_bytes = 0;
    size_t max_frame = eth::kMaxFrameBytes; // longer frames are dropped
    size_t out_limit = 16 * 1024;           // bytes handed to a port's socket at a time
    // ECN (RED) on egress queue depth in bytes.
    bool ecn = false;
    uint32_t kmin_bytes = 20'000;
    uint32_t kmax_bytes = 200'000;
    double pmax = 0.1;
    uint64_t seed = 1;
    // PFC: the priorities that are lossless, thresholds per ingress port
    // and priority, the quanta of an XOFF.
    uint8_t pfc_enable = 0;
    PrioTrust trust = PrioTrust::Pcp;
    uint32_t xoff_bytes = 64 * 1024;
    uint32_t xon_bytes = 32 * 1024;
    uint16_t pause_quanta = 0xFFFF;
    // MAC table bounds and ageing.
    size_t mac_table = 4096;
    size_t mac_per_port = 1024;
    uint64_t mac_age_ns = 300'000'000'000ull;
    eth::Mac base_mac{0x02, 0x00, 0x0c, 0xa0, 0x00, 0x00}; // port p sends PFC from base + p
};

struct EthPrioStats {
    uint64_t rx_bytes = 0;
    uint64_t rx_packets = 0;
    uint64_t tx_bytes = 0;
    uint64_t tx_packets = 0;
    uint64_t drops = 0;           // egress: no room in the shared buffer
    uint64_t ecn_marks = 0;       // egress: marked CE
    uint64_t pauses_sent = 0;     // ingress: PFC frames with this priority's quanta > 0
    uint64_t resumes_sent = 0;    // ingress: quanta 0
    uint64_t pauses_received = 0; // egress: PFC frames pausing this priority
    uint64_t resumes_received = 0;
    uint64_t queue_hwm = 0;   // egress queue bytes, high-water
    uint64_t ingress_hwm = 0; // bytes from this ingress port and priority, high-water
};

struct EthPortStats {
    uint64_t frames_in = 0;
    uint64_t bytes_in = 0;
    uint64_t frames_out = 0; // data frames (PFC frames in pauses_sent/resumes_sent)
    uint64_t bytes_out = 0;
    uint64_t bad_frames = 0;    // runt, oversize, too many tags, group source, short control
    uint64_t mac_control = 0;   // MAC control frames other than PFC (802.3x PAUSE...): dropped
    uint64_t link_local = 0;    // to 01:80:C2:00:00:0x: not forwarded
    uint64_t filtered = 0;      // destination learned on the ingress port
    uint64_t flooded = 0;       // unknown unicast, broadcast, multicast
    uint64_t learn_refused = 0; // MAC table (or this port's share) full
    // Where the egress port's time went (connected, in ns), to tell a line
    // kept busy from one starved or held: nothing queued (idle); frames
    // queued and the line sending them (line: at the shaped rate); frames
    // queued but the peer not reading what was handed to its socket
    // (blocked: the receiving process is the bottleneck); frames queued
    // but every one of their priorities paused by the peer (paused).
    uint64_t egress_idle_ns = 0;
    uint64_t egress_line_ns = 0;
    uint64_t egress_blocked_ns = 0;
    uint64_t egress_paused_ns = 0;
    // Line time (in bytes) a backlogged port earned beyond a full burst
    // between two looks: what the switch's late wake-ups lost before
    // catch_up_ns (now credited, up to catch_up_ns of it per look).
    uint64_t egress_catch_up_bytes = 0;
    std::array<EthPrioStats, eth::kPriorities> prio{};
};

class EthSwitch {
  public:
    static constexpr uint8_t kMaxPorts = 63;

    explicit EthSwitch(const EthConfig &cfg);

    [[nodiscard]] uint8_t ports() const { return cfg_.ports; }
    [[nodiscard]] const EthConfig &config() const { return cfg_; }

    // Transport events for external port p (1..N), as Switch's.
    void connect(uint8_t p, uint64_t now_ns);
    void disconnect(uint8_t p, uint64_t now_ns);
    [[nodiscard]] bool connected(uint8_t p) const { return port(p).connected; }
    void receive(uint8_t p, std::span<const uint8_t> bytes, uint64_t now_ns);
    [[nodiscard]] std::span<const uint8_t> output(uint8_t p) const;
    void consumed(uint8_t p, size_t n, uint64_t now_ns);
    // Timers: the shaper, pause expiry, XOFF refresh, MAC ageing.
    void tick(uint64_t now_ns);
    // When tick() has something to do next (at most 1 ms from now).
    [[nodiscard]] uint64_t next_wake(uint64_t now_ns) const;

    [[nodiscard]] const EthPortStats &stats(uint8_t p) const { return port(p).stats; }
    [[nodiscard]] size_t buffer_used() const { return used_; }
    [[nodiscard]] size_t buffer_hwm() const { return used_hwm_; }
    [[nodiscard]] size_t mac_entries() const { return macs_.size(); }
    [[nodiscard]] size_t queue_bytes(uint8_t p, uint8_t prio) const {
        return port(p).q_bytes[prio];
    }
    [[nodiscard]] size_t ingress_bytes(uint8_t p, uint8_t prio) const {
        return port(p).in_bytes[prio];
    }
    [[nodiscard]] bool xoff(uint8_t p, uint8_t prio) const { return port(p).xoff[prio]; }
    [[nodiscard]] bool paused(uint8_t p, uint8_t prio, uint64_t now) const {
        return port(p).paused_until[prio] > now;
    }
    [[nodiscard]] size_t output_bytes(uint8_t p) const;
    // The port a MAC was learned on (0: unknown or aged out).
    [[nodiscard]] uint8_t lookup(const eth::Mac &mac, uint64_t now) const;
    // The priority a frame is classified into (PCP or DSCP / 8).
    [[nodiscard]] uint8_t priority(const eth::FrameInfo &f) const;
    // Nanoseconds a PFC quanta value pauses for at the line rate.
    [[nodiscard]] uint64_t quanta_ns(uint16_t quanta) const;

    // The egress queue depth (all priorities) that arriving frames meet,
    // as a histogram of kDepthBuckets buckets over the buffer's size: the
    // quantile q (0..1) of port p, in bytes (the bucket's upper edge).
    static constexpr size_t kDepthBuckets = 512;
    [[nodiscard]] uint64_t depth_quantile(uint8_t p, double q) const;
    [[nodiscard]] size_t queue_bytes(uint8_t p) const;

    // A timeline for plots: every interval, tick() passes one JSON line
    // (no newline) with each port's queue depth and running counters, and
    // the time frames waited in its egress queue in the interval, per
    // ingress port ("sojourn": [[in, frames, max_us], ...], the ingress
    // ports that had a frame leave): the fabric's queueing delay as one
    // flow met it (a latency probe's, whose host sends nothing else).
    using TimelineFn = std::function<void(const std::string &line)>;
    void set_timeline(uint64_t interval_ns, TimelineFn fn) {
        timeline_ns_ = interval_ns;
        timeline_ = std::move(fn);
    }
    // One timeline line now, due or not (the program's last, at exit).
    void timeline_now(uint64_t now_ns) { timeline(now_ns, true); }

    // Every frame as it arrives, and every PFC frame the switch sends.
    using CaptureFn = std::function<void(uint8_t port, std::span<const uint8_t> frame)>;
    void set_capture(CaptureFn fn) { capture_ = std::move(fn); }

    [[nodiscard]] std::string stats_json() const;

  private:
    struct Queued {
        std::vector<uint8_t> frame;
        uint32_t charge = 0; // bytes of shared buffer it holds
        uint64_t queued_at = 0;
        uint8_t in = 0;
        uint8_t prio = 0;
    };
    struct Port {
        bool connected = false;
        BasicStreamReader<eth::kMaxFrameBytes> reader;
        std::array<std::deque<Queued>, eth::kPriorities> q;
        std::array<size_t, eth::kPriorities> q_bytes{};
        // Ingress side (PFC): bytes this port's frames hold, XOFF state.
        std::array<size_t, eth::kPriorities> in_bytes{};
        std::array<bool, eth::kPriorities> xoff{};
        std::array<uint64_t, eth::kPriorities> xoff_sent{};
        uint8_t announce = 0; // priorities whose XOFF/XON is to be sent
        // Egress side.
        std::array<uint64_t, eth::kPriorities> paused_until{};
        uint64_t tokens = 0; // bits x 1e9 (a ns at R bit/s adds R)
        uint64_t last_fill = 0;
        uint8_t rr = 0;
        StreamWriter out;                            // framed, waiting for the socket
        size_t macs = 0;                             // MAC table entries learned here
        std::array<uint64_t, kDepthBuckets> depth{}; // what arriving frames met
        uint64_t depth_samples = 0;
        size_t depth_max = 0; // the deepest met since the last timeline line
        // Since the last timeline line, per ingress port: frames that left
        // this egress queue and the longest any of them waited in it.
        std::array<uint32_t, kMaxPorts + 1> sojourn_frames{};
        std::array<uint32_t, kMaxPorts + 1> sojourn_max_us{};
        // The egress state since 'egress_since' (EthPortStats::egress_*).
        uint64_t egress_since = 0;
        uint8_t egress_state = 0;
        EthPortStats stats;
    };
    struct MacEntry {
        uint8_t port = 0;
        uint64_t seen = 0;
    };

    enum : uint8_t { kEgressIdle, kEgressLine, kEgressBlocked, kEgressPaused };

    [[nodiscard]] const Port &port(uint8_t p) const { return ports_[p]; }
    Port &port(uint8_t p) { return ports_[p]; }

    void on_frame(uint8_t p, std::span<const uint8_t> frame, uint64_t now);
    void on_pfc(uint8_t p, const eth::PfcInfo &pfc, uint64_t now);
    void learn(uint8_t p, const eth::Mac &mac, uint64_t now);
    void enqueue(uint8_t o, uint8_t in, uint8_t prio, std::span<const uint8_t> frame,
                 const eth::FrameInfo &info, uint64_t now);
    void clock(uint64_t now);
    [[nodiscard]] bool red_mark(size_t depth);
    void release(const Queued &q);
    void fill(Port &pt, uint64_t now);
    void schedule(uint64_t now);
    void transmit(uint8_t o, uint64_t now);
    void transmit_frames(uint8_t o, uint64_t now);
    void account_egress(Port &pt, uint8_t o, uint64_t now);
    void emit_pfc(uint8_t o, uint64_t now);
    void append(Port &pt, std::span<const uint8_t> frame);
    void age(uint64_t now);
    void sample_depth(Port &pt, size_t ready);
    void timeline(uint64_t now, bool force = false);
    [[nodiscard]] uint64_t burst_units() const;
    [[nodiscard]] uint64_t cost_units(size_t bytes) const;

    EthConfig cfg_;
    std::vector<Port> ports_; // [0] unused
    std::unordered_map<uint64_t, MacEntry> macs_;
    size_t used_ = 0;
    size_t used_hwm_ = 0;
    uint64_t rng_;
    uint64_t last_age_ = 0;
    // The last event's time (clock()) and the gap before it: how long the
    // switch's process was away, during which frames gathered in the sockets.
    uint64_t now_ = 0;
    uint64_t away_ns_ = 0;
    bool clocked_ = false;
    uint64_t timeline_ns_ = 0;
    uint64_t timeline_start_ = 0;
    uint64_t last_timeline_ = 0;
    bool timeline_started_ = false;
    TimelineFn timeline_;
    CaptureFn capture_;
};

} // namespace ohca::fabric
