// SPDX-License-Identifier: GPL-2.0-or-later
// The port's transmit pacer (device/tx_pacer.hpp) on the fake clock: a
// burst leaves at the port's speed (never more than the bucket plus the
// line rate over any interval, and not much slower, a stalled host
// included), nothing is dropped or
// sent again, ACKs leave while the data waits, a guest that posts all it
// can costs bounded work per run and no memory, looped-back packets and an
// unpaced port are not held, and the configuration is checked.
#include "rdma_node.hpp"
#include "ud_qp.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace ohca::test {
namespace {

constexpr uint32_t kSpeed = 1000; // Mbit/s: 8 ns a byte
constexpr uint32_t kBurst = 16384;
constexpr size_t kBthOff = 14 + 20 + 8; // untagged IPv4
constexpr uint8_t kAckOpcode = 0x11;

uint8_t opcode_of(const std::vector<uint8_t> &f) {
    return f.size() > kBthOff ? f[kBthOff] : 0xff;
}

class TxPacerTest : public ::testing::Test {
  protected:
    void SetUp() override { a.pace(kSpeed, kBurst); }
    void connect(size_t bytes) {
        for (int i = 0; i < 2; ++i) {
            side[i] = make_side(i == 0 ? a : b, bytes, 8,
                                [i](size_t k) { return static_cast<uint8_t>(k * (i + 5) + 3); });
        }
        a.connect(side[0].qp, side[1].qp.qpn, b);
        b.connect(side[1].qp, side[0].qp.qpn, a);
    }
    static void write(RdmaNode &from, Side &s, const Side &to, size_t len, uint64_t wr_id) {
        SendReq r;
        r.opcode = OHCA_WR_RDMA_WRITE;
        r.wr_id = wr_id;
        r.flags = OHCA_WQE_SIGNALED;
        r.remote_addr = to.buf;
        r.rkey = to.key;
        r.sges = {{s.buf, static_cast<uint32_t>(len), s.key}};
        from.post_send(s.qp, r);
    }
    // Frames from 'from' to 'to' at once (a wire without delay).
    static void deliver(RdmaNode &from, RdmaNode &to) {
        auto frames = std::move(from.host.wire);
        from.host.wire.clear();
        for (auto &f : frames) {
            ASSERT_EQ(ohca_engine_receive_frame(to.e, f.data(), f.size()), OHCA_ENGINE_RX_CONSUMED);
        }
    }
    // Runs both ends until 'done', each frame a sends logged with its
    // time; when nothing moves the clocks go to a's timer (the pacer's
    // wake) and its run. At most 'max_steps' timer runs.
    template <class Done> void run_until(Done done, unsigned int max_steps = 100000) {
        for (unsigned int step = 0; step < max_steps && !done(); ++step) {
            a.process();
            for (auto &f : a.host.wire) {
                sent.emplace_back(a.host.now, f.size());
            }
            const bool moved = !a.host.wire.empty();
            deliver(a, b);
            b.process();
            deliver(b, a);
            if (!moved && a.host.wire.empty() && !done()) {
                ASSERT_GT(a.host.timer, a.host.now) << "nothing to send and no timer";
                a.host.now = a.host.timer;
                if (stall_ns != 0 && sent.size() >= stall_after_frames) {
                    a.host.now += stall_ns; // the process descheduled: the timer runs late
                    stall_ns = 0;
                }
                b.host.now = a.host.now;
                ohca_engine_process(a.e); // the timer's run
            }
        }
        ASSERT_TRUE(done());
    }
    // Connects, WRITEs 'len' bytes from a to b and runs until it completed.
    void write_and_wait(size_t len) {
        connect(len);
        write(a, side[0], side[1], len, 1);
        std::vector<ohca_cqe> cqes;
        run_until([&] {
            auto c = a.poll(side[0].scq);
            cqes.insert(cqes.end(), c.begin(), c.end());
            return !cqes.empty();
        });
        ASSERT_EQ(cqes.size(), 1u);
        EXPECT_EQ(cqes[0].status, OHCA_CQE_SUCCESS);
    }
    RdmaNode a{1};
    RdmaNode b{2};
    Side side[2];
    std::vector<std::pair<uint64_t, size_t>> sent; // (time ns, frame bytes)
    // run_until: once this many frames went, the next timer run comes
    // stall_ns late (once).
    size_t stall_after_frames = 0;
    uint64_t stall_ns = 0;
};

// Over every interval [sent[i], sent[j]]: at most the bucket, one frame
// and the interval's time at the line rate (1000 Mbit/s: 8 ns a byte).
void expect_within_the_line(const std::vector<std::pair<uint64_t, size_t>> &sent) {
    size_t largest = 0;
    for (const auto &f : sent) {
        largest = std::max(largest, f.second + 20);
    }
    for (size_t i = 0; i < sent.size(); ++i) {
        uint64_t bytes = 0;
        for (size_t j = i; j < sent.size(); ++j) {
            bytes += sent[j].second + 20;
            const uint64_t t = sent[j].first - sent[i].first;
            ASSERT_LE(bytes, kBurst + largest + t / 8)
                << "frames " << i << ".." << j << " in " << t << " ns";
        }
    }
}

// 1 MiB in 1 KiB packets: over every interval from the first frame the
// bytes on the wire (with preamble and gap) stay within the bucket, one
// frame and the line rate; the whole takes the line rate's time, not less
// and at most a bucket's time more; every byte arrives once.
TEST_F(TxPacerTest, ABurstLeavesAtThePortsSpeed) {
    constexpr size_t kLen = 1 << 20;
    write_and_wait(kLen);
    std::vector<uint8_t> got(kLen);
    ASSERT_TRUE(b.host.read(side[1].buf, got.data(), got.size()));
    for (size_t k = 0; k < kLen; k += 4093) {
        ASSERT_EQ(got[k], static_cast<uint8_t>(k * 5 + 3)) << k;
    }
    ASSERT_FALSE(sent.empty());
    const uint64_t t0 = sent.front().first;
    uint64_t bytes = 0;
    size_t largest = 0;
    for (const auto &[t, len] : sent) {
        bytes += len + 20;
        largest = std::max(largest, len + 20);
        // 1000 Mbit/s: 8 ns a byte.
        ASSERT_LE(bytes, kBurst + largest + (t - t0) / 8) << "at " << (t - t0) << " ns";
    }
    const uint64_t took = sent.back().first - t0;
    EXPECT_GE(took, (bytes - kBurst - largest) * 8);
    EXPECT_LE(took, (bytes + kBurst) * 8);
    EXPECT_EQ(sent.size(), kLen / 1024); // nothing sent twice
    const auto st = a.stats();
    EXPECT_EQ(st.rc_retrans_pkts, 0u);
    EXPECT_EQ(st.rc_local_ack_timeouts, 0u);
}

// The host stops running the device for 50 ms in the middle of a 1 MiB
// WRITE (QEMU descheduled: the pacer's timer runs late): the bucket does
// not bank the time it missed, so after the stall the port sends one
// bucket and then the line rate again, within the bucket, one frame and
// the line rate over every interval that spans the stall or not (a burst
// the line never makes would queue at the switch and be marked).
TEST_F(TxPacerTest, AStalledHostDoesNotBankTheLineTime) {
    constexpr size_t kLen = 1 << 20;
    stall_after_frames = 256;
    stall_ns = 50'000'000;
    write_and_wait(kLen);
    EXPECT_EQ(stall_ns, 0u) << "the stall happened";
    EXPECT_EQ(sent.size(), kLen / 1024);
    expect_within_the_line(sent);
}

// While b's data waits for its bucket, its ACKs for a's requests leave at
// once (they are charged, never held).
TEST_F(TxPacerTest, AcksLeaveWhileTheDataWaits) {
    b.pace(kSpeed, kBurst); // before any object
    connect(1 << 20);
    write(b, side[1], side[0], 1 << 20, 9);
    b.process();
    const size_t burst_frames = b.host.wire.size();
    ASSERT_GT(burst_frames, 0u);
    ASSERT_LT(burst_frames, 40u); // held: 16 KiB and one 1 KiB packet
    b.host.wire.clear();          // lost on the way; no matter here
    b.process();
    ASSERT_TRUE(b.host.wire.empty()) << "the data waits for the bucket";
    write(a, side[0], side[1], 64, 1);
    a.process();
    deliver(a, b);
    b.process();
    ASSERT_EQ(b.host.wire.size(), 1u);
    EXPECT_EQ(opcode_of(b.host.wire[0]), kAckOpcode);
    deliver(b, a);
    a.process();
    const auto c = a.poll(side[0].scq);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, OHCA_CQE_SUCCESS);
}

// A guest that fills its send queues: each run sends at most the bucket
// and ends (no rescheduling, the timer at the bucket's refill), further
// runs before then send nothing and allocate nothing.
TEST_F(TxPacerTest, AFloodCostsBoundedWorkAndNoMemory) {
    connect(1 << 20);
    for (uint64_t i = 0; i < 200; ++i) { // 2^8 - 1 fit; the rest wait in the guest
        write(a, side[0], side[1], 64 << 10, i);
    }
    a.process();
    size_t bytes = 0;
    for (const auto &f : a.host.wire) {
        bytes += f.size() + 20;
    }
    EXPECT_LE(bytes, kBurst + 1100u);
    a.host.wire.clear();
    const unsigned int schedules = a.host.schedules;
    const uint64_t wake = a.host.timer;
    EXPECT_GT(wake, a.host.now);
    EXPECT_LE(wake, a.host.now + uint64_t{8 * 1200}); // one frame's time at most
    const uint64_t heap = ohca_engine_heap_bytes();
    for (int i = 0; i < 1000; ++i) {
        ohca_engine_process(a.e);
    }
    EXPECT_TRUE(a.host.wire.empty());
    EXPECT_EQ(a.host.schedules, schedules) << "a held QP must not spin";
    EXPECT_EQ(ohca_engine_heap_bytes(), heap);
    // At the wake the next packets go, again within the bucket.
    a.host.now = wake;
    ohca_engine_process(a.e);
    a.process();
    EXPECT_FALSE(a.host.wire.empty());
}

// A UD QP that keeps its send queue full (its doorbells rung as QEMU rings
// them, each giving it the first turn of a run) beside an RC WRITE on the
// same paced port: the port's pace is shared between them turn by turn,
// so neither starves. While the WRITE is under way each has at least a
// third of the bytes on the wire. (The order of the QPs waiting for the
// bucket once stayed the same at every refill: the first took it all.)
TEST_F(TxPacerTest, UdFloodAndRcShareThePace) {
    constexpr size_t kLen = 256 << 10;
    constexpr uint32_t kUdLen = 1024;
    constexpr uint8_t kUdSend = 0x64;
    connect(kLen);
    UdQp ua = make_ud(a);
    UdQp ub = make_ud(b);
    uint64_t ud_posted = 0;
    uint64_t ud_done = 0;
    auto flood = [&] {
        ud_done += a.poll(ua.scq).size();
        (void)b.poll(ub.rcq); // b posts no receive: its device drops them
        while (ud_posted - ud_done < ua.q.sq_size) {
            post_ud(a, ua, b, ub.q.qpn, ud_posted, ua.buf, kUdLen, true);
            ++ud_posted;
        }
    };
    flood();
    a.process();
    for (auto &f : a.host.wire) {
        sent.emplace_back(a.host.now, f.size());
    }
    ASSERT_FALSE(a.host.wire.empty()) << "the flood has the bucket";
    const size_t before = sent.size();
    write(a, side[0], side[1], kLen, 1);
    std::vector<ohca_cqe> cqes;
    std::vector<std::vector<uint8_t>> frames; // what a sent from the WRITE on
    run_until([&] {
        for (const auto &f : a.host.wire) {
            frames.push_back(f);
        }
        flood();
        auto c = a.poll(side[0].scq);
        cqes.insert(cqes.end(), c.begin(), c.end());
        return !cqes.empty();
    });
    ASSERT_EQ(cqes.size(), 1u);
    EXPECT_EQ(cqes[0].status, OHCA_CQE_SUCCESS);
    ASSERT_GT(sent.size(), before);
    uint64_t ud_bytes = 0;
    uint64_t rc_bytes = 0;
    for (const auto &f : frames) {
        (opcode_of(f) == kUdSend ? ud_bytes : rc_bytes) += f.size() + 20;
    }
    const uint64_t all = ud_bytes + rc_bytes;
    EXPECT_GE(rc_bytes * 3, all) << "RC " << rc_bytes << " of " << all;
    EXPECT_GE(ud_bytes * 3, all) << "UD " << ud_bytes << " of " << all;
    const auto st = a.stats();
    EXPECT_EQ(st.rc_retrans_pkts, 0u);
    EXPECT_EQ(st.rc_local_ack_timeouts, 0u);
}

// A doorbell rung while a QP waits for the bucket, after the refill but
// before the timer's run (a host's timer is late): the waiting QP sends
// first, the rung one at the next refill, not the other way round.
TEST_F(TxPacerTest, ADoorbellWaitsItsTurnForThePace) {
    constexpr uint8_t kUdSend = 0x64;
    connect(1 << 20);
    UdQp ua = make_ud(a);
    UdQp ub = make_ud(b);
    write(a, side[0], side[1], 1 << 20, 1);
    a.process();
    ASSERT_FALSE(a.host.wire.empty());
    a.host.wire.clear(); // lost on the way; no matter here
    const uint64_t wake = a.host.timer;
    ASSERT_GT(wake, a.host.now) << "the WRITE waits for the bucket";
    a.host.now = wake + 1'000'000; // the bucket full again, its timer not run yet
    post_ud(a, ua, b, ub.q.qpn, 7, ua.buf, 512, true);
    ASSERT_FALSE(a.host.wire.empty());
    EXPECT_NE(opcode_of(a.host.wire.front()), kUdSend) << "the waiting WRITE goes first";
    EXPECT_NE(opcode_of(a.host.wire.back()), kUdSend) << "the WRITE's turn took the bucket";
    a.host.wire.clear();
    ASSERT_GT(a.host.timer, a.host.now);
    a.host.now = a.host.timer;
    ohca_engine_process(a.e); // the refill: the UD QP's turn
    ASSERT_FALSE(a.host.wire.empty());
    EXPECT_EQ(opcode_of(a.host.wire.front()), kUdSend);
}

// Looped-back packets never touch the wire: not paced, with time frozen.
TEST_F(TxPacerTest, LoopbackIsNotPaced) {
    Side x = make_side(a, 1 << 20, 8);
    Side y = make_side(a, 1 << 20, 8);
    a.connect(x.qp, y.qp.qpn, a);
    a.connect(y.qp, x.qp.qpn, a);
    write(a, x, y, 1 << 20, 3);
    a.process();
    const auto c = a.poll(x.scq);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, OHCA_CQE_SUCCESS);
    EXPECT_TRUE(a.host.wire.empty());
}

// tx_burst_bytes outside its range is refused at creation; 0 is unpaced.
TEST(TxPacerConfig, BurstOutsideItsRangeIsRefused) {
    FakeHost host;
    const ohca_engine_ops ops = FakeHost::ops();
    ohca_engine_config cfg{};
    cfg.link_up = true;
    for (const uint32_t bad : {1u, OHCA_ENGINE_MIN_TX_BURST - 1, OHCA_ENGINE_MAX_TX_BURST + 1}) {
        cfg.tx_burst_bytes = bad;
        EXPECT_EQ(ohca_engine_create(&ops, &host, &cfg), nullptr) << bad;
    }
    for (const uint32_t good : {0u, OHCA_ENGINE_MIN_TX_BURST, OHCA_ENGINE_MAX_TX_BURST}) {
        cfg.tx_burst_bytes = good;
        ohca_engine *e = ohca_engine_create(&ops, &host, &cfg);
        EXPECT_NE(e, nullptr) << good;
        ohca_engine_destroy(e);
    }
}

} // namespace
} // namespace ohca::test
