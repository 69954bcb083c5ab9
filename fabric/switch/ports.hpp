// SPDX-License-Identifier: GPL-2.0-or-later
// The switch program's port transports, shared by its InfiniBand and
// Ethernet modes: each external port is one stream socket in QEMU's
// `-netdev stream` framing (fd:, listen:, connect:, tcp-listen:,
// tcp-connect:, none) or one connected datagram socket, a frame per
// datagram as QEMU's `-netdev dgram` sends them (dgram-fd:), and the poll
// loop that moves bytes between the sockets and a switch core. The cores
// take and give the stream framing; a datagram port frames what it reads
// and sends each framed frame as one datagram. A core has connect/disconnect/connected/
// receive/output/consumed/tick (Switch and EthSwitch); a core that also
// has next_wake(now) is woken at that time, not only every millisecond
// (the Ethernet mode's line-rate shaper).
#pragma once

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <functional>
#include <poll.h>
#include <span>
#include <string>
#include <sys/socket.h>
#include <unistd.h>
#include <utility>
#include <vector>

namespace ohca::fabric {

enum class PortMode { None, Fd, DgramFd, UnixListen, UnixConnect, TcpListen, TcpConnect };

struct PortIo {
    PortMode mode = PortMode::None;
    std::string path; // unix path, or host
    std::string service;
    int fd = -1;        // the connection
    int listen_fd = -1; // listen modes
    uint64_t next_try = 0;
    // Datagram ports: datagrams longer than the largest frame, dropped
    // unread; frames the socket refused (no peer, too large), dropped.
    uint64_t dgram_oversize = 0;
    uint64_t dgram_unsent = 0;
};

uint64_t mono_ns();
uint64_t real_ns();

// The --port SPEC forms, for usage texts.
extern const char *const kPortSpecHelp;

bool parse_port_spec(const std::string &s, PortIo &io);

// The external ports 1..N of one switch program (ios[0] unused).
class PortSet {
  public:
    PortSet() : ios_(1) {}
    PortSet(const PortSet &) = delete;
    PortSet &operator=(const PortSet &) = delete;
    ~PortSet();

    void add(const PortIo &io) { ios_.push_back(io); }
    [[nodiscard]] int given() const { return static_cast<int>(ios_.size()) - 1; }
    void resize(int ports) { ios_.resize(static_cast<size_t>(ports) + 1); }
    [[nodiscard]] uint8_t ports() const { return static_cast<uint8_t>(ios_.size() - 1); }

    // Makes inherited sockets non-blocking and opens the listening ones;
    // false after printing why (prefixed with `prog`).
    bool open(const char *prog);
    // Inherited (fd:, dgram-fd:) ports are connected from the start.
    [[nodiscard]] bool inherited(uint8_t p) const {
        return ios_[p].mode == PortMode::Fd || ios_[p].mode == PortMode::DgramFd;
    }
    // The largest frame a datagram port takes (the core's mode's).
    void set_max_frame(size_t n) { max_frame_ = n; }
    [[nodiscard]] const PortIo &io(uint8_t p) const { return ios_[p]; }
    // The datagram ports' counters as JSON members (empty without one).
    [[nodiscard]] std::string dgram_stats_json() const;

    // Runs until *stop is set: bytes in and out of the core, connects,
    // accepts, disconnects, and the core's timers.
    template <typename Core> void run(Core &core, volatile std::sig_atomic_t *stop);

  private:
    void try_connect(uint8_t p, uint64_t now);
    int accept_one(uint8_t p);
    void close_conn(uint8_t p);
    // A read's outcome: maybe more to read, the socket drained, or the
    // port to be dropped.
    enum class Read : uint8_t { More, Drained, Drop };
    // One datagram in (framed for the core), or the stream's next bytes;
    // out, framed frames, one datagram each (false: drop the port).
    template <typename Core>
    Read dgram_read(Core &core, uint8_t p, std::vector<uint8_t> &buf, uint64_t now);
    template <typename Core>
    Read stream_read(Core &core, uint8_t p, std::vector<uint8_t> &buf, uint64_t now);
    // Every readable socket's bytes, in turns of one read per port.
    template <typename Core>
    void read_all(Core &core, std::vector<uint8_t> &buf, uint64_t now,
                  std::vector<uint8_t> &readable, const std::function<void(uint8_t)> &drop);
    template <typename Core> bool dgram_write(Core &core, uint8_t p, uint64_t now);

    std::vector<PortIo> ios_;
    size_t max_frame_ = 9022; // eth::kMaxFrameBytes, the larger mode's
};

template <typename Core>
PortSet::Read PortSet::dgram_read(Core &core, uint8_t p, std::vector<uint8_t> &buf, uint64_t now) {
    PortIo &io = ios_[p];
    // One byte more than the largest frame: a datagram that fills it was
    // longer (the kernel drops the rest of a datagram that does not fit).
    const size_t room = std::min(buf.size() - 4, max_frame_ + 1);
    const ssize_t r = recv(io.fd, buf.data() + 4, room, 0);
    if (r < 0) {
        // ECONNREFUSED: a UDP peer not (yet) there, reported on a later call.
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNREFUSED
                   ? Read::Drained
                   : Read::Drop;
    }
    const auto n = static_cast<size_t>(r);
    if (n > max_frame_) {
        ++io.dgram_oversize;
        return Read::More;
    }
    buf[0] = static_cast<uint8_t>(n >> 24);
    buf[1] = static_cast<uint8_t>(n >> 16);
    buf[2] = static_cast<uint8_t>(n >> 8);
    buf[3] = static_cast<uint8_t>(n);
    core.receive(p, std::span<const uint8_t>(buf.data(), n + 4), now);
    return Read::More;
}

template <typename Core>
PortSet::Read PortSet::stream_read(Core &core, uint8_t p, std::vector<uint8_t> &buf, uint64_t now) {
    const ssize_t r = read(ios_[p].fd, buf.data(), buf.size());
    if (r > 0) {
        core.receive(p, std::span<const uint8_t>(buf.data(), static_cast<size_t>(r)), now);
        // A short read emptied the socket (what came since waits for the
        // next round).
        return static_cast<size_t>(r) == buf.size() ? Read::More : Read::Drained;
    }
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        return Read::Drained;
    }
    return Read::Drop; // EOF or an error
}

// What the sockets hold now came before 'now': all of it is read in this
// round, at that one time, in turns of one read per port (a fast sender
// cannot starve the others), at most kReadTurns turns. A core that credits
// a port for the time its process was away (EthSwitch's away_after_ns)
// then sees every frame that gathered meanwhile at the time it measured
// the absence: read one buffer per round, all but the first buffer came
// rounds later, after the credit, as a burst the senders never made
// (make fabric-bench 2026-12-06 20:10: 616 KB from one port in the 30 ms
// after a 163 ms absence, 528 CE marks, at 28 Mbit/s of its sender).
template <typename Core>
void PortSet::read_all(Core &core, std::vector<uint8_t> &buf, uint64_t now,
                       std::vector<uint8_t> &readable, const std::function<void(uint8_t)> &drop) {
    // 64 KiB a stream read: 2 MiB a port, and as many datagrams.
    constexpr int kReadTurns = 32;
    for (int turn = 0; turn < kReadTurns && !readable.empty(); ++turn) {
        size_t keep = 0;
        for (const uint8_t p : readable) {
            if (ios_[p].fd < 0 || !core.connected(p)) {
                continue;
            }
            const Read r = ios_[p].mode == PortMode::DgramFd ? dgram_read(core, p, buf, now)
                                                             : stream_read(core, p, buf, now);
            if (r == Read::Drop) {
                drop(p);
            } else if (r == Read::More) {
                readable[keep++] = p;
            }
        }
        readable.resize(keep);
    }
}

template <typename Core> bool PortSet::dgram_write(Core &core, uint8_t p, uint64_t now) {
    PortIo &io = ios_[p];
    while (core.connected(p)) {
        const auto out = core.output(p);
        if (out.size() < 4) {
            return true; // nothing (the cores give whole frames)
        }
        const size_t n = (static_cast<size_t>(out[0]) << 24) | (static_cast<size_t>(out[1]) << 16) |
                         (static_cast<size_t>(out[2]) << 8) | out[3];
        if (out.size() - 4 < n) {
            return true;
        }
        const ssize_t w = send(io.fd, out.data() + 4, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EAGAIN || errno == EINTR || errno == ENOBUFS) {
                return true; // the peer's queue is full: it holds the frame back
            }
            if (errno != ECONNREFUSED && errno != EMSGSIZE) {
                return false;
            }
            ++io.dgram_unsent; // a datagram socket may lose a frame
        }
        core.consumed(p, n + 4, now);
    }
    return true;
}

template <typename Core> void PortSet::run(Core &core, volatile std::sig_atomic_t *stop) {
    uint64_t now = mono_ns();
    for (uint8_t p = 1; p <= ports(); ++p) {
        if (inherited(p)) {
            core.connect(p, now);
        }
    }
    std::vector<uint8_t> buf(64 * 1024);
    std::vector<pollfd> pfds;
    std::vector<std::pair<uint8_t, bool>> who; // port, is listen fd
    std::vector<uint8_t> readable;             // ports with something to read
    uint64_t last_tick = now;
    const std::function<void(uint8_t)> drop_conn = [&](uint8_t p) {
        // Once stopping, a neighbour's hang-up is the fabric stopping with
        // us (its SIGTERM came with ours), not the link going down: the
        // statistics written next keep the link as it was.
        if (*stop != 0) {
            return;
        }
        close_conn(p);
        core.disconnect(p, mono_ns());
    };
    while (*stop == 0) {
        now = mono_ns();
        pfds.clear();
        who.clear();
        for (uint8_t p = 1; p <= ports(); ++p) {
            PortIo &io = ios_[p];
            if ((io.mode == PortMode::UnixConnect || io.mode == PortMode::TcpConnect) &&
                io.fd < 0 && now >= io.next_try) {
                try_connect(p, now);
                if (io.fd >= 0) {
                    core.connect(p, now);
                }
            }
            if (io.fd >= 0 && core.connected(p)) {
                const short ev =
                    static_cast<short>(POLLIN | (core.output(p).empty() ? 0 : POLLOUT));
                pfds.push_back({io.fd, ev, 0});
                who.emplace_back(p, false);
            } else if (io.listen_fd >= 0 && io.fd < 0) {
                pfds.push_back({io.listen_fd, POLLIN, 0});
                who.emplace_back(p, true);
            }
        }
        uint64_t wait_ns = 1'000'000;
        if constexpr (requires { core.next_wake(now); }) {
            const uint64_t w = core.next_wake(now);
            wait_ns = w <= now ? 0 : std::min<uint64_t>(wait_ns, w - now);
        }
        const timespec ts{0, static_cast<long>(wait_ns)};
        const int n = ppoll(pfds.data(), pfds.size(), &ts, nullptr);
        if (n < 0 && errno != EINTR) {
            std::perror("ohca-switch: poll");
            break;
        }
        now = mono_ns();
        readable.clear();
        for (size_t i = 0; n > 0 && i < pfds.size(); ++i) {
            const auto [p, is_listen] = who[i];
            if (pfds[i].revents == 0) {
                continue;
            }
            if (is_listen) {
                if (accept_one(p) >= 0) {
                    core.connect(p, now);
                }
                continue;
            }
            const short in = ios_[p].mode == PortMode::DgramFd ? (POLLIN | POLLERR)
                                                               : (POLLIN | POLLHUP | POLLERR);
            if ((pfds[i].revents & in) != 0) {
                readable.push_back(p);
            }
        }
        read_all(core, buf, now, readable, drop_conn);
        if constexpr (requires { core.next_wake(now); }) {
            if (core.next_wake(now) <= now) {
                core.tick(now);
                last_tick = now;
            }
        }
        // Writes: as much as each socket takes.
        for (uint8_t p = 1; p <= ports(); ++p) {
            PortIo &io = ios_[p];
            if (io.mode == PortMode::DgramFd) {
                if (io.fd >= 0 && !dgram_write(core, p, now)) {
                    drop_conn(p);
                }
                continue;
            }
            while (io.fd >= 0 && core.connected(p) && !core.output(p).empty()) {
                auto out = core.output(p);
                const ssize_t w = send(io.fd, out.data(), out.size(), MSG_NOSIGNAL);
                if (w > 0) {
                    core.consumed(p, static_cast<size_t>(w), now);
                } else {
                    if (w < 0 && errno != EAGAIN && errno != EINTR) {
                        drop_conn(p);
                    }
                    break;
                }
            }
        }
        if (now - last_tick >= 1'000'000) {
            core.tick(now);
            last_tick = now;
        }
    }
}

} // namespace ohca::fabric
