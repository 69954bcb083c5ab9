// SPDX-License-Identifier: GPL-2.0-or-later
// ohca-switch's core, without I/O: N external ports (1..N) and the
// management port 0 with its SMA. The event loop (main.cpp) or a test
// feeds each port's received bytes in, takes each port's bytes to send
// out, and reports connects, disconnects and the passing of time.
//
// Design (fabric/README.md has the long form):
//  * input-queued: a data packet waits in its input port's buffer for its
//    VL (bounded by the credit that port advertises) until every output it
//    goes to can take it; only then is the input buffer released and
//    credit returned upstream. No data packet is dropped for lack of
//    buffer; a sender without credit waits, hop by hop.
//  * an output takes a packet only against the peer's credit for the
//    packet's output VL (SL2VL), and only into a small bounded byte buffer.
//  * a packet stuck at the head of a queue longer than the output's
//    HOQLife is discarded (PortXmitDiscards): a peer that never returns
//    credit cannot wedge the other ports.
//  * VL15 (SMPs) is not flow controlled: a small queue per port, drops
//    counted in VL15Dropped.
//  * an output's data VLs take turns by its VLArbitration tables
//    (ib/vlarb.hpp); within a VL the inputs take turns.
//  * partitions: with PartitionEnforcementInbound/Outbound set in a port's
//    PortInfo (opensm does so on a CA's switch port), a data packet whose
//    P_Key is not in that port's P_Key table is dropped on the way in
//    (PortRcvConstraintErrors) or out (PortXmitConstraintErrors).
#pragma once

#include "framing.hpp"
#include "ib/link.hpp"
#include "ib/mad.hpp"
#include "ib/packet.hpp"
#include "ib/sma.hpp"
#include "ib/vlarb.hpp"
#include "timeline.hpp"

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace ohca::fabric {

struct SwitchConfig {
    uint8_t ports = 4; // external ports
    uint64_t guid = 0x0002c90300fab000ull;
    uint16_t vl_buffer_blocks = 256;      // receive buffer per data VL, 64-byte blocks
    uint8_t vl_cap = 3;                   // VLCap code: 3 = VL0-3
    size_t vl15_queue = 16;               // SMPs waiting per port
    size_t out_limit = 16 * 1024;         // bytes waiting in a port's output buffer
    uint64_t fcp_refresh_ns = 50'000'000; // resend every VL's FCP this often
    uint16_t lft_cap = 0xC000;            // LinearFDBCap: unicast LIDs routed
    uint16_t mft_cap = 512;               // MulticastFDBCap
    // Every external port's egress line rate, bit/s of packet bytes
    // (LRH to VCRC; FCPs are not charged); 0: as fast as the sockets go.
    // A token bucket two largest packets deep: a shaped output is the
    // fabric's bottleneck, and its input queues fill and hold back credit.
    uint64_t line_rate_bps = 0;
    std::string description = "ohca-switch";
};

// What the switch counts per port besides the PMA counters.
struct PortStats {
    uint64_t frames_in = 0;
    uint64_t link_packets_in = 0;
    uint64_t bad_link_packets = 0;     // wrong LPCRC, Op or VL15
    uint64_t ignored_link_packets = 0; // an FCP for a VL this port does not operate
    uint64_t bad_frames = 0;           // failed the link checks (length, LVer, VCRC)
    uint64_t overruns = 0;             // data beyond the credit we advertised
    uint64_t relay_drops = 0;          // no route, route back to the input, bad VL
    uint64_t hoq_discards = 0;         // stuck at a queue head past HOQLife (output side)
    uint64_t inactive_discards = 0;    // output port not Active / not connected
    uint64_t vl15_dropped = 0;
    uint64_t smp_local = 0; // SMPs answered by port 0's SMA
    uint64_t smp_forwarded = 0;
    uint64_t frames_out = 0;
    uint64_t link_packets_out = 0;
    uint64_t credit_waits = 0;  // schedule passes a head packet waited for credit
    uint64_t rate_waits = 0;    // schedule passes the output waited for its line rate
    uint64_t busy_ns = 0;       // shaped: the time the line spent sending (frame bytes / rate)
    uint64_t bytes_in = 0;      // packets taken in, LRH to VCRC (never reset, unlike the PMA's)
    uint64_t bytes_out = 0;     // packets sent
    uint16_t in_hwm_blocks = 0; // the fullest a data VL's input buffer was (of vl_buffer_blocks)
    uint64_t traps_sent = 0;    // port 0: Traps (Notices 128, 259) to the master SM
    // Port 0: P_Key drops told to the SM (trap 259), and those not told:
    // within kBadPKeyTrapPeriodNs of the last, or before the SM is known.
    uint64_t bad_pkey_traps = 0;
    uint64_t bad_pkey_traps_suppressed = 0;
};

class Switch {
  public:
    // Trap 259 (a packet dropped for its P_Key) at most this often: a
    // flood of bad P_Keys sends the SM ten traps a second, no more.
    static constexpr uint64_t kBadPKeyTrapPeriodNs = 100'000'000;

    explicit Switch(const SwitchConfig &cfg);

    [[nodiscard]] uint8_t ports() const { return cfg_.ports; }

    // Transport events for external port p (1..N).
    void connect(uint8_t p, uint64_t now_ns);
    void disconnect(uint8_t p, uint64_t now_ns);
    [[nodiscard]] bool connected(uint8_t p) const { return port(p).connected; }
    void receive(uint8_t p, std::span<const uint8_t> bytes, uint64_t now_ns);
    // The bytes port p has to send; the caller writes a prefix of them and
    // reports how many with consumed().
    [[nodiscard]] std::span<const uint8_t> output(uint8_t p) const;
    void consumed(uint8_t p, size_t n, uint64_t now_ns);
    // Timers: FCP refresh, HOQ discards. Call every millisecond or so.
    void tick(uint64_t now_ns);
    // When a shaped output has earned the tokens its next packet waits
    // for (at most 1 ms ahead): the event loop's wake-up.
    [[nodiscard]] uint64_t next_wake(uint64_t now_ns) const;

    [[nodiscard]] const PortStats &stats(uint8_t p) const { return port(p).stats; }
    [[nodiscard]] ib::SmaState &sma_state() { return sma_state_; }
    [[nodiscard]] const ib::SmaState &sma_state() const { return sma_state_; }
    [[nodiscard]] const ib::LinkCredits &credits(uint8_t p) const { return port(p).credits; }
    // Data packets buffered at input port p (all VLs), and bytes waiting
    // in its output buffer: what a test checks stays bounded.
    [[nodiscard]] size_t queued_packets(uint8_t p) const;
    [[nodiscard]] size_t queued_blocks(uint8_t p) const;
    [[nodiscard]] size_t output_bytes(uint8_t p) const;

    // Every data frame once, as it arrives (port 0: as the SMA sends it).
    using CaptureFn = std::function<void(uint8_t port, std::span<const uint8_t> frame)>;
    void set_capture(CaptureFn fn) { capture_ = std::move(fn); }

    // JSON with every port's counters.
    [[nodiscard]] std::string stats_json() const;

    // A timeline for the benches: every interval_ns, tick() passes one JSON
    // line (the time; per external port the data bytes in and out so far,
    // the blocks held in its input buffer now, its credit and line waits),
    // so a sender's share can be taken over any interval of a run.
    using TimelineFn = Timeline::Fn;
    void set_timeline(uint64_t interval_ns, TimelineFn fn) {
        timeline_.set(interval_ns, std::move(fn));
    }
    // One timeline line now, due or not (the program's last, at exit).
    void timeline_now(uint64_t now_ns) { timeline(now_ns, true); }

  private:
    struct Queued {
        std::vector<uint8_t> frame;
        uint64_t out_mask = 0;   // outputs still to send to
        uint64_t head_since = 0; // when it became the head of its queue
        uint16_t blocks = 0;
        uint8_t in_vl = 0;
        uint8_t sl = 0;
        uint8_t fixed_vl = 0xFF; // a local packet's output VL; 0xFF: SL2VL
    };
    struct Port {
        bool connected = false;
        StreamReader reader;
        ib::LinkCredits credits;
        std::array<std::deque<Queued>, ib::kMaxDataVls> in;
        std::deque<Queued> in15;
        StreamWriter out;  // framed, waiting for the socket
        ib::VlArbiter arb; // output arbitration: which data VL sends next
        uint8_t rr_in = 0; // output arbitration: next input (within a VL)
        uint64_t last_fcp = 0;
        uint64_t tokens = 0;    // shaped: bits x 1e9 (a ns at R bit/s adds R)
        uint64_t tokens_at = 0; // when tokens were last topped up
        uint64_t want = 0;      // tokens the packet waiting for the line needs (0: none)
        PortStats stats;
        explicit Port(const ib::LinkCredits &c) : credits(c) {}
    };

    [[nodiscard]] const Port &port(uint8_t p) const { return ports_[p]; }
    Port &port(uint8_t p) { return ports_[p]; }
    ib::SmaPortState &sma_port(uint8_t p) { return sma_state_.ports[p]; }

    void on_frame(uint8_t p, std::span<const uint8_t> frame, uint64_t now);
    void on_data(uint8_t p, std::span<const uint8_t> frame, const ib::Lrh &lrh, uint64_t now);
    void on_vl15(uint8_t p, std::span<const uint8_t> frame, uint64_t now);
    void on_local_data(uint8_t p, std::span<const uint8_t> frame, uint64_t now);
    void local_smp(uint8_t p, const ib::Packet &pkt, std::span<const uint8_t> frame, uint64_t now);
    bool forward_dr(uint8_t p, const ib::Packet &pkt, std::span<const uint8_t> frame, uint64_t now);
    void send_local(uint8_t out, std::vector<uint8_t> frame, uint64_t now, bool vl15, uint8_t vl);
    [[nodiscard]] uint64_t route(uint16_t dlid, uint8_t in) const;
    [[nodiscard]] bool own_lid(uint16_t dlid) const;
    [[nodiscard]] bool active(uint8_t p) const;
    [[nodiscard]] bool pkey_passes(uint8_t p, std::span<const uint8_t> frame, bool inbound) const;
    [[nodiscard]] uint8_t out_vl(const Queued &q, uint8_t in, uint8_t out) const;
    [[nodiscard]] uint64_t hoq_ns(uint8_t out) const;

    void schedule(uint64_t now);
    [[nodiscard]] uint64_t burst_units() const;
    void refill(Port &pt, uint64_t now) const;
    bool take_line(Port &pt, size_t bytes, uint64_t now);
    bool schedule_port(uint8_t o, uint64_t now);
    void write_fcps(uint8_t o, bool all);
    void emit(uint8_t o, const Queued &q, uint8_t vl);
    void pop_done(std::deque<Queued> &qs, uint8_t in, bool data, uint64_t now);
    void discard_heads(uint64_t now);
    void release(uint8_t in, const Queued &q);
    void count_in(uint8_t p, size_t bytes, uint16_t dlid);
    void count_out(uint8_t p, size_t bytes, uint16_t dlid);
    void apply_sma_changes(uint64_t now);
    void trap_link_state(uint64_t now);
    // Trap 259 for a packet partition enforcement dropped on port p, at
    // most one per kBadPKeyTrapPeriodNs (a peer flooding bad P_Keys costs
    // one comparison per packet beyond it).
    void trap_bad_pkey(uint8_t p, std::span<const uint8_t> frame, uint64_t now);
    // A Trap(Notice) SMP to the master SM; false if the switch knows no SM
    // or no route to it.
    bool send_trap(uint16_t number, uint8_t type, std::span<const uint8_t> details, uint64_t now);
    void timeline(uint64_t now, bool force = false);

    SwitchConfig cfg_;
    ib::SmaState sma_state_;
    ib::Sma sma_;
    std::vector<Port> ports_; // [0] = management port (its `in` holds local packets)
    uint64_t now_ = 0;
    uint32_t psn_ = 0;
    uint64_t trap_tid_ = 0;
    uint64_t next_bad_pkey_trap_ns_ = 0;
    CaptureFn capture_;
    Timeline timeline_;
};

} // namespace ohca::fabric
