// SPDX-License-Identifier: GPL-2.0-or-later
// PortSet's datagram ports (dgram-fd:) on real socket pairs, with a core
// that records what it is given: a datagram reaches the core as one
// framed frame, the core's framed output leaves as one datagram per frame,
// a datagram longer than the largest frame is dropped and counted, and a
// peer that does not read holds frames back instead of losing them; a
// stream peer's hang-up takes its port down, except while stopping.
#include "ports.hpp"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

namespace ohca::fabric {
namespace {

constexpr size_t kMax = 4222; // the IB mode's largest frame

// The switch cores' port interface, recording; it stops the loop when
// `done` says so or after `rounds` ticks (one a millisecond).
struct RecordingCore {
    volatile std::sig_atomic_t *stop = nullptr;
    std::array<bool, 3> up{};
    std::array<std::vector<uint8_t>, 3> out;
    std::vector<std::vector<uint8_t>> received;            // each receive() call's bytes
    std::vector<std::pair<uint8_t, uint64_t>> received_at; // and its port and time
    size_t consumed_bytes = 0;
    int ticks = 0;
    int rounds = 200;
    bool (*done)(const RecordingCore &) = nullptr;

    void connect(uint8_t p, uint64_t) { up[p] = true; }
    void disconnect(uint8_t p, uint64_t) { up[p] = false; }
    [[nodiscard]] bool connected(uint8_t p) const { return up[p]; }
    void receive(uint8_t p, std::span<const uint8_t> b, uint64_t now) {
        received.emplace_back(b.begin(), b.end());
        received_at.emplace_back(p, now);
        check();
    }
    [[nodiscard]] std::span<const uint8_t> output(uint8_t p) const { return out[p]; }
    void consumed(uint8_t p, size_t n, uint64_t) {
        out[p].erase(out[p].begin(), out[p].begin() + static_cast<long>(n));
        consumed_bytes += n;
    }
    void tick(uint64_t) {
        if (++ticks >= rounds) {
            *stop = 1;
        }
        check();
    }
    void check() {
        if (done != nullptr && done(*this)) {
            *stop = 1;
        }
    }
    void queue(uint8_t p, size_t len, uint8_t fill) {
        const uint8_t hdr[4] = {static_cast<uint8_t>(len >> 24), static_cast<uint8_t>(len >> 16),
                                static_cast<uint8_t>(len >> 8), static_cast<uint8_t>(len)};
        out[p].insert(out[p].end(), hdr, hdr + 4);
        out[p].insert(out[p].end(), len, fill);
    }
};

struct DgramPair {
    int sw = -1;   // the switch's end (its port)
    int peer = -1; // the VM's end
    DgramPair() {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) == 0) {
            sw = sv[0];
            peer = sv[1];
        }
    }
    ~DgramPair() {
        close(peer); // the switch's end is closed by the PortSet that took it
    }
    DgramPair(const DgramPair &) = delete;
    DgramPair &operator=(const DgramPair &) = delete;
};

PortIo dgram_port(int fd) {
    PortIo io;
    EXPECT_TRUE(parse_port_spec("dgram-fd:" + std::to_string(fd), io));
    EXPECT_EQ(io.mode, PortMode::DgramFd);
    return io;
}

void run(PortSet &set, RecordingCore &core) {
    volatile std::sig_atomic_t stop = 0;
    core.stop = &stop;
    set.set_max_frame(kMax);
    ASSERT_TRUE(set.open("ports_test"));
    set.run(core, &stop);
}

TEST(DgramPorts, SpecForms) {
    PortIo io;
    EXPECT_TRUE(parse_port_spec("dgram-fd:7", io));
    EXPECT_EQ(io.mode, PortMode::DgramFd);
    EXPECT_EQ(io.fd, 7);
    EXPECT_FALSE(parse_port_spec("dgram-fd:", io));
    EXPECT_FALSE(parse_port_spec("dgram-fd:x", io));
    EXPECT_FALSE(parse_port_spec("dgram-fd:-1", io));
    EXPECT_TRUE(parse_port_spec("fd:7", io));
    EXPECT_EQ(io.mode, PortMode::Fd);
}

TEST(DgramPorts, EachDatagramIsOneFramedFrameAndTooLongOnesAreDropped) {
    DgramPair a;
    ASSERT_GE(a.sw, 0);
    // 0 bytes, the largest frame, one byte more (dropped), then 60 bytes.
    const std::vector<size_t> sizes = {0, kMax, kMax + 1, 60};
    for (size_t i = 0; i < sizes.size(); ++i) {
        const std::vector<uint8_t> d(sizes[i], static_cast<uint8_t>(0xa0 + i));
        ASSERT_EQ(send(a.peer, d.data(), d.size(), 0), static_cast<ssize_t>(d.size()));
    }
    PortSet set;
    set.add(dgram_port(a.sw));
    RecordingCore core;
    core.done = [](const RecordingCore &c) { return c.received.size() >= 3; };
    run(set, core);
    ASSERT_EQ(core.received.size(), 3u);
    const std::vector<size_t> want = {0, kMax, 60};
    const std::vector<uint8_t> fill = {0xa0, 0xa1, 0xa3};
    for (size_t i = 0; i < want.size(); ++i) {
        const auto &r = core.received[i];
        ASSERT_EQ(r.size(), want[i] + 4);
        const size_t n = (size_t{r[0]} << 24) | (size_t{r[1]} << 16) | (size_t{r[2]} << 8) | r[3];
        EXPECT_EQ(n, want[i]);
        for (size_t j = 4; j < r.size(); ++j) {
            ASSERT_EQ(r[j], fill[i]);
        }
    }
    EXPECT_EQ(set.io(1).dgram_oversize, 1u);
    EXPECT_EQ(set.io(1).dgram_unsent, 0u);
    EXPECT_EQ(set.dgram_stats_json(),
              "\"datagram_ports\": [{\"port\": 1, \"oversize\": 1, \"unsent\": 0}]");
}

TEST(DgramPorts, TheCoresFramedOutputLeavesAsOneDatagramPerFrame) {
    DgramPair a;
    DgramPair b;
    ASSERT_GE(a.sw, 0);
    ASSERT_GE(b.sw, 0);
    PortSet set;
    set.add(dgram_port(a.sw));
    set.add(dgram_port(b.sw));
    RecordingCore core;
    core.queue(2, 60, 1);
    core.queue(2, kMax, 2);
    core.queue(2, 1, 3);
    core.done = [](const RecordingCore &c) { return c.out[2].empty(); };
    run(set, core);
    EXPECT_TRUE(core.out[2].empty());
    std::vector<uint8_t> d(kMax + 100);
    const std::vector<size_t> want = {60, kMax, 1};
    for (size_t i = 0; i < want.size(); ++i) {
        const ssize_t r = recv(b.peer, d.data(), d.size(), MSG_DONTWAIT);
        ASSERT_EQ(r, static_cast<ssize_t>(want[i]));
        EXPECT_EQ(d[0], i + 1);
        EXPECT_EQ(d[want[i] - 1], i + 1);
    }
    EXPECT_LT(recv(b.peer, d.data(), d.size(), MSG_DONTWAIT), 0); // nothing more
    EXPECT_LT(recv(a.peer, d.data(), d.size(), MSG_DONTWAIT), 0); // nor on the other port
}

TEST(DgramPorts, APeerThatDoesNotReadHoldsFramesBackWithoutLosingThem) {
    DgramPair a;
    ASSERT_GE(a.sw, 0);
    PortSet set;
    set.add(dgram_port(a.sw));
    RecordingCore core;
    constexpr size_t kFrames = 4000; // far more than a socket pair queues
    for (size_t i = 0; i < kFrames; ++i) {
        core.queue(1, 1000, static_cast<uint8_t>(i));
    }
    core.rounds = 20;
    run(set, core);
    const size_t sent = core.consumed_bytes / 1004;
    EXPECT_EQ(core.consumed_bytes % 1004, 0u);
    EXPECT_GT(sent, 0u);
    EXPECT_LT(sent, kFrames); // the full queue stopped the port, not a loss
    EXPECT_EQ(set.io(1).dgram_unsent, 0u);
    std::vector<uint8_t> d(2000);
    size_t got = 0;
    while (recv(a.peer, d.data(), d.size(), MSG_DONTWAIT) == 1000) {
        ASSERT_EQ(d[0], static_cast<uint8_t>(got));
        ++got;
    }
    EXPECT_EQ(got, sent); // every datagram the port sent is there, in order
}

// Two stream ports, one peer sent a frame, both hung up: the frame and the
// second's EOF come in one poll round; the core may stop at the frame.
// Stopping (SIGTERM to switches in a line reaches both at once), the
// other's EOF is the neighbour stopping too: the link stays up in the
// statistics written next.
void hang_up_round(bool stop_at_first_frame, std::array<bool, 3> &up) {
    std::array<std::array<int, 2>, 2> sv{};
    for (auto &pair : sv) {
        ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair.data()), 0);
    }
    const uint8_t frame[5] = {0, 0, 0, 1, 0x5a};
    ASSERT_EQ(write(sv[0][1], frame, sizeof(frame)), 5);
    close(sv[0][1]);
    close(sv[1][1]);
    PortSet set;
    for (auto &pair : sv) {
        PortIo io;
        ASSERT_TRUE(parse_port_spec("fd:" + std::to_string(pair[0]), io));
        set.add(io);
    }
    RecordingCore core;
    if (stop_at_first_frame) {
        core.done = [](const RecordingCore &c) { return !c.received.empty(); };
    } else {
        core.rounds = 20;
    }
    run(set, core);
    up = core.up;
}

TEST(StreamPorts, AHangUpTakesThePortDownButNotWhileStopping) {
    std::array<bool, 3> up{};
    hang_up_round(false, up);
    EXPECT_FALSE(up[1]);
    EXPECT_FALSE(up[2]);
    hang_up_round(true, up);
    EXPECT_TRUE(up[1]);
    EXPECT_TRUE(up[2]);
}

// Two stream peers wrote 180000 bytes each while the switch's loop was
// not looking (its process away): the loop's next round reads all of it,
// at the one time it woke, one read per port in turn. Before, it read one
// 64 KiB buffer per port per round: the rest came rounds later, at later
// times, after the core had credited the absence (EthSwitch's
// away_after_ns), as a burst into the queue.
TEST(StreamPorts, WhatTheSocketsHoldIsReadInOneRoundAtOneTime) {
    constexpr size_t kBytes = 180000;
    std::array<std::array<int, 2>, 2> sv{};
    PortSet set;
    for (auto &pair : sv) {
        ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair.data()), 0);
        const int big = 1 << 20;
        ASSERT_EQ(setsockopt(pair[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof big), 0);
        ASSERT_EQ(setsockopt(pair[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof big), 0);
        PortIo io;
        ASSERT_TRUE(parse_port_spec("fd:" + std::to_string(pair[0]), io));
        set.add(io);
    }
    const std::vector<uint8_t> data(kBytes, 0x5a);
    for (auto &pair : sv) {
        size_t off = 0;
        while (off < kBytes) {
            const ssize_t w =
                send(pair[1], data.data() + off, kBytes - off, MSG_DONTWAIT | MSG_NOSIGNAL);
            ASSERT_GT(w, 0) << "the socket pair holds less than " << kBytes << " bytes";
            off += static_cast<size_t>(w);
        }
    }
    RecordingCore core;
    core.done = [](const RecordingCore &c) {
        size_t n = 0;
        for (const auto &r : c.received) {
            n += r.size();
        }
        return n >= 2 * kBytes;
    };
    run(set, core);
    std::array<size_t, 3> got{};
    for (size_t i = 0; i < core.received.size(); ++i) {
        got[core.received_at[i].first] += core.received[i].size();
        EXPECT_EQ(core.received_at[i].second, core.received_at[0].second) << "read " << i;
    }
    EXPECT_EQ(got[1], kBytes);
    EXPECT_EQ(got[2], kBytes);
    ASSERT_GE(core.received_at.size(), 4u);
    EXPECT_NE(core.received_at[0].first, core.received_at[1].first); // in turns
    for (auto &pair : sv) {
        close(pair[1]);
    }
}

} // namespace
} // namespace ohca::fabric
