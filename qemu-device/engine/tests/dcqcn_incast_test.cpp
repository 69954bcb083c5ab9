// SPDX-License-Identifier: GPL-2.0-or-later
// DCQCN in a 3:1 incast on a fake clock (issue 23; docs/congestion.md,
// "Tuning for the emulated fabric"): three senders, each with two RC QPs
// that always have data, each paced by its reaction point
// (dcqcn::ReactionPoint) and by its port's token bucket at the line rate;
// one switch egress port at the same line rate with a bounded buffer and
// RED/ECN marking (ohca-switch's rule: Kmin..Kmax, Pmax, always above
// Kmax); the receiver's notification point (dcqcn::np_should_send) answers
// a CE-marked packet with a CNP that reaches the sender after the feedback
// delay. The figures are make fabric-bench's: the queue depth arriving
// packets meet (p99 against Kmax), drops, Jain's index over the senders'
// delivered bytes, the bottleneck's utilisation, once converged.
//
// The feedback delay is what the emulation adds: a CNP crosses two QEMU
// processes and the switch, each scheduled on a loaded host, so it comes
// back milliseconds after the mark, not microseconds. With mlx5's
// defaults (a QP recovers in a few rp_time_reset periods of 300 us, a CNP
// every 4 us) the queue swings past Kmax and overflows the buffer there;
// the tuned set (kTuned, what the fabric bench writes into cc_params)
// converges below Kmax without a drop.
#include "transports/dcqcn.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <vector>

namespace ohca::test {
namespace {

using dcqcn::Params;
using dcqcn::ReactionPoint;
using dcqcn::RpState;

constexpr uint64_t kUs = 1000;
constexpr uint64_t kMs = 1000 * kUs;

// make fabric-bench's fabric (tests/bench/fabric_bench.py: keep RED in
// step with its ECN). RED at 5 / 50 KB, Pmax 0.5 (0.8 and 8 ms of the
// line) since 2026-12-07: the 20 / 200 KB, Pmax 0.2 before held the queue
// at 94-147 KB, 15-24 ms of the line, where the probe's goal (3x an
// unloaded p50 of about 4 ms) allows 7 ms; 5 / 40 KB, Pmax 0.2 held
// 21-26 KB up to a 20 ms round trip but 50 KB, past its Kmax, at 40 ms.
constexpr uint32_t kLineMbps = 50;
constexpr uint64_t kLineBps = uint64_t{kLineMbps} * 1'000'000;
constexpr size_t kBuffer = 1 << 20;
constexpr size_t kKmin = 5'000;
constexpr size_t kKmax = 50'000;
constexpr double kPmax = 0.5;
constexpr size_t kPacket = 1024 + 58; // RoCEv2 payload at MTU 1024 + headers
constexpr size_t kWire = 20;          // preamble, delimiter, gap: what the shapers charge
constexpr size_t kPortBurst = 16 * 1024;
constexpr unsigned int kSenders = 3;
constexpr unsigned int kQps = 2;
constexpr uint64_t kStep = 5 * kUs;

// The parameters make fabric-bench sets (and docs/congestion.md explains):
// one cut per feedback round trip, recovery paced to it.
struct Setting {
    unsigned int param;
    uint32_t value;
};
// Keep in step with DCQCN_TUNED in tests/bench/fabric_bench.py.
constexpr std::array kTuned = {
    Setting{OHCA_CC_RP_TIME_RESET, 80000},                // recover per 2 round trips, not 300 us
    Setting{OHCA_CC_RP_BYTE_RESET, 0},                    // nor per 32 KB sent
    Setting{OHCA_CC_RP_THRESHOLD, 5},                     // 5 stages back to the rate cut
    Setting{OHCA_CC_RP_AI_RATE, 1},                       // then 1 Mb/s per stage
    Setting{OHCA_CC_RP_HAI_RATE, 5},                      // and 5
    Setting{OHCA_CC_RP_RATE_TO_SET_ON_FIRST_CNP, 10},     // about the fair share of 6 QPs
    Setting{OHCA_CC_RP_RATE_REDUCE_MONITOR_PERIOD, 4000}, // one cut per 4 ms
    Setting{OHCA_CC_NP_MIN_TIME_BETWEEN_CNPS, 4000},      // one CNP per QP per 4 ms
    Setting{OHCA_CC_RP_DCE_TCP_RTT, 4000},                // alpha per 4 ms, not per 1 us
    Setting{OHCA_CC_RP_DCE_TCP_G, 960},                   // g = 1/16
};

struct Outcome {
    size_t queue_p99 = 0;
    size_t queue_max = 0;
    uint64_t drops = 0;
    uint64_t marks = 0;
    uint64_t cnps = 0;
    double jain = 0;
    double utilisation = 0;
};

class Incast {
  public:
    // 'rtt': mark to CNP at the sender (half to the receiver's NP, half back).
    Incast(const Params &p, uint64_t rtt) : p_(p), rp_(p, dcqcn::kbps(kLineMbps)), rtt_(rtt) {}

    Outcome run(uint64_t warmup, uint64_t length) {
        Outcome o;
        std::array<uint64_t, kSenders> delivered{};
        std::vector<size_t> met;
        const uint64_t end = warmup + length;
        for (uint64_t now = kStep; now <= end; now += kStep) {
            const bool measuring = now > warmup;
            deliver_cnps(now);
            // The senders' order turns every step: none is always first
            // to the room the line made.
            const auto first = static_cast<unsigned int>(now / kStep % kSenders);
            for (unsigned int i = 0; i < kSenders; ++i) {
                send((first + i) % kSenders, now, met, measuring, o);
            }
            drain(now, measuring ? &delivered : nullptr, o);
        }
        std::sort(met.begin(), met.end());
        if (!met.empty()) {
            o.queue_p99 = met[(met.size() * 99 + 99) / 100 - 1];
            o.queue_max = met.back();
        }
        double sum = 0;
        double sq = 0;
        for (uint64_t d : delivered) {
            sum += static_cast<double>(d);
            sq += static_cast<double>(d) * static_cast<double>(d);
        }
        o.jain = sq > 0 ? sum * sum / (kSenders * sq) : 0;
        o.utilisation = sum * 8 * 1e9 / static_cast<double>(length) / kLineBps;
        return o;
    }

  private:
    struct Packet {
        unsigned int sender;
        unsigned int qp;
        bool ce;
    };
    struct Cnp {
        uint64_t at;
        unsigned int sender;
        unsigned int qp;
    };
    struct Sender {
        std::array<RpState, kQps> qp{};
        int64_t tokens = kPortBurst;
        unsigned int rr = 0;
    };

    // ohca-switch's RED: never up to Kmin, always from Kmax, linear between.
    bool red(size_t depth) {
        if (depth <= kKmin) {
            return false;
        }
        if (depth >= kKmax) {
            return true;
        }
        rng_ ^= rng_ << 13;
        rng_ ^= rng_ >> 7;
        rng_ ^= rng_ << 17;
        const double u = static_cast<double>(rng_ >> 11) * 0x1.0p-53;
        return u < kPmax * static_cast<double>(depth - kKmin) / static_cast<double>(kKmax - kKmin);
    }

    // The sender's device: its port's bucket (device/tx_pacer) and, under
    // it, each QP's pacer; a QP with data sends whenever both allow.
    void send(unsigned int s, uint64_t now, std::vector<size_t> &met, bool measuring, Outcome &o) {
        Sender &sd = senders_[s];
        sd.tokens = std::min<int64_t>(
            kPortBurst, sd.tokens + static_cast<int64_t>(kLineBps * kStep / 8 / 1'000'000'000));
        while (sd.tokens > 0) {
            bool sent = false;
            for (unsigned int i = 0; i < kQps && !sent; ++i) {
                const unsigned int q = (sd.rr + i) % kQps;
                uint64_t wake = 0;
                if (!rp_.may_send(sd.qp[q], now, wake)) {
                    continue;
                }
                rp_.on_sent(sd.qp[q], now, kPacket);
                sd.tokens -= static_cast<int64_t>(kPacket + kWire);
                sd.rr = (q + 1) % kQps;
                sent = true;
                arrive(Packet{s, q, false}, met, measuring, o);
            }
            if (!sent) {
                break;
            }
        }
    }

    void arrive(Packet pk, std::vector<size_t> &met, bool measuring, Outcome &o) {
        if (measuring) {
            met.push_back(queue_);
        }
        if (queue_ + kPacket > kBuffer) {
            o.drops += measuring ? 1 : 0;
            return;
        }
        pk.ce = red(queue_);
        o.marks += pk.ce ? 1 : 0;
        queue_ += kPacket;
        q_.push_back(pk);
    }

    // The bottleneck: the switch's egress shaper at the line rate; a
    // CE-marked packet reaches the NP, whose CNP reaches the sender rtt later.
    void drain(uint64_t now, std::array<uint64_t, kSenders> *delivered, Outcome &o) {
        line_tokens_ = std::min<int64_t>(
            2 * (kPacket + kWire),
            line_tokens_ + static_cast<int64_t>(kLineBps * kStep / 8 / 1'000'000'000));
        while (!q_.empty() && line_tokens_ >= static_cast<int64_t>(kPacket + kWire)) {
            const Packet pk = q_.front();
            q_.pop_front();
            queue_ -= kPacket;
            line_tokens_ -= static_cast<int64_t>(kPacket + kWire);
            if (delivered != nullptr) {
                (*delivered)[pk.sender] += kPacket;
            }
            if (pk.ce && dcqcn::np_should_send(p_, np_[pk.sender][pk.qp], now + rtt_ / 2)) {
                cnps_.push_back(Cnp{now + rtt_, pk.sender, pk.qp});
                ++o.cnps;
            }
        }
    }

    void deliver_cnps(uint64_t now) {
        while (!cnps_.empty() && cnps_.front().at <= now) {
            const Cnp c = cnps_.front();
            cnps_.pop_front();
            rp_.on_cnp(senders_[c.sender].qp[c.qp], now);
        }
    }

    const Params &p_;
    ReactionPoint rp_;
    uint64_t rtt_;
    std::array<Sender, kSenders> senders_{};
    std::array<std::array<dcqcn::NpState, kQps>, kSenders> np_{};
    std::deque<Packet> q_;
    size_t queue_ = 0;
    int64_t line_tokens_ = 0;
    std::deque<Cnp> cnps_;
    uint64_t rng_ = 0x9e3779b97f4a7c15ull;
};

Params tuned() {
    Params p;
    for (const Setting &s : kTuned) {
        EXPECT_TRUE(p.set(s.param, s.value)) << dcqcn::param_spec(s.param).name;
    }
    return p;
}

void print(const char *what, uint64_t rtt, const Outcome &o) {
    std::printf("%s, CNP round trip %llu us: queue p99 %zu max %zu B, drops %llu, marks %llu, "
                "CNPs %llu, Jain %.3f, utilisation %.2f\n",
                what, static_cast<unsigned long long>(rtt / kUs), o.queue_p99, o.queue_max,
                static_cast<unsigned long long>(o.drops), static_cast<unsigned long long>(o.marks),
                static_cast<unsigned long long>(o.cnps), o.jain, o.utilisation);
}

// Feedback delays from a lightly loaded host's to one at load 25 (three
// QEMU processes and the switch scheduled in turn: docs/congestion.md).
constexpr std::array<uint64_t, 4> kRtts = {2 * kMs, 10 * kMs, 20 * kMs, 40 * kMs};

TEST(DcqcnIncast, Mlx5DefaultsOvershootKmaxWithTheEmulationsFeedbackDelay) {
    const Params p;
    for (const uint64_t rtt : kRtts) {
        Incast sim(p, rtt);
        const Outcome o = sim.run(500 * kMs, 2000 * kMs);
        print("mlx5 defaults", rtt, o);
        EXPECT_GT(o.queue_p99, kKmax);
        EXPECT_GT(o.drops, 0u);
    }
}

TEST(DcqcnIncast, TunedConvergesBelowKmaxWithoutDropsAndFair) {
    const Params p = tuned();
    for (const uint64_t rtt : kRtts) {
        Incast sim(p, rtt);
        const Outcome o = sim.run(500 * kMs, 2000 * kMs);
        print("tuned", rtt, o);
        EXPECT_LE(o.queue_p99, kKmax);
        EXPECT_EQ(o.drops, 0u);
        EXPECT_GE(o.jain, 0.95);
        // Cuts come a round trip late, so the queue runs dry at times:
        // 0.96 of the line at 2 ms, 0.79 at 40 ms (queue p99 14-42 KB).
        EXPECT_GE(o.utilisation, 0.7);
    }
}

// What make fabric-bench's dcqcn cells meet and the test above leaves
// out: a cold start. Each cell's QPs are new, so all six send at the
// line rate (each port's bucket) until their first CNP, a feedback round
// trip after the queue passed Kmin. At 50 Mbit/s the queue that makes
// peaks at 155 KB (2 ms) to 617 KB (40 ms; 417 to 876 KB with RED at
// 20 / 200 KB), within the 1 MiB buffer: no
// drop (at 200 Mbit/s, the bench's line before 2026-12-06 16:00, the
// same start overfilled it at 20 ms and more: 386 and 1294 drops). The
// run's first 100 ms hold its deepest queue (the simulation is
// deterministic, so its first 100 ms are the 2 s run's).
TEST(DcqcnIncast, TunedColdStartStaysWithinTheBuffer) {
    const Params p = tuned();
    for (const uint64_t rtt : kRtts) {
        const Outcome first = Incast(p, rtt).run(0, 100 * kMs);
        const Outcome all = Incast(p, rtt).run(0, 2000 * kMs);
        print("tuned, cold start, first 100 ms", rtt, first);
        EXPECT_EQ(all.drops, 0u);
        EXPECT_LT(first.queue_max, kBuffer);
        EXPECT_EQ(all.queue_max, first.queue_max);
    }
}

} // namespace
} // namespace ohca::test
