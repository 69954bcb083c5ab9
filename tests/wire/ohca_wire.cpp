// SPDX-License-Identifier: GPL-2.0-or-later
// ohca_wire: a faulty Ethernet wire between two QEMU `-netdev dgram`
// endpoints on 127.0.0.1 (one UDP datagram = one frame). Each direction
// drops, duplicates, reorders, delays and corrupts frames at its own rates,
// from a seeded PRNG; statistics go to stderr (and a JSON file) when it is
// stopped with SIGTERM/SIGINT; a pcap of the forwarded frames on request.
// See docs/wire.md.
#include "wire_faults.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

using ohca_wire::DirStats;
using ohca_wire::FaultConfig;
using ohca_wire::FaultLine;

namespace {

volatile sig_atomic_t g_stop = 0;

void on_signal(int) {
    g_stop = 1;
}

constexpr int kRcvBuf = 16 << 20; // bytes of socket receive buffer per side

uint64_t mono_us() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000 + uint64_t(ts.tv_nsec) / 1000;
}

[[noreturn]] void usage(const char *msg) {
    std::fprintf(stderr,
                 "ohca_wire: %s\n"
                 "usage: ohca_wire --a LISTEN:PEER --b LISTEN:PEER [options]\n"
                 "  --a/--b L:P   UDP ports on 127.0.0.1: the wire listens on L for that\n"
                 "                side's frames and sends the other side's frames to P\n"
                 "  --loss|--dup|--reorder|--delay|--corrupt P   probability 0..1, both\n"
                 "                directions; suffix -ab (A to B) or -ba for one\n"
                 "  --delay-us N  largest extra delay of a delayed frame (2000)\n"
                 "  --hold-us N   a reordered frame waits at most this long (5000)\n"
                 "  --seed N      PRNG seed (1)\n"
                 "  --all-frames  faults for every frame, not only UDP/4791 RoCE\n"
                 "  --pcap FILE   write the forwarded frames (after faults)\n"
                 "  --stats FILE  write the statistics as JSON at exit\n",
                 msg);
    std::exit(2);
}

bool parse_ports(const char *s, uint16_t &listen, uint16_t &peer) {
    unsigned int l = 0, p = 0;
    if (std::sscanf(s, "%u:%u", &l, &p) != 2 || l == 0 || p == 0 || l > 65535 || p > 65535) {
        return false;
    }
    listen = static_cast<uint16_t>(l);
    peer = static_cast<uint16_t>(p);
    return true;
}

int open_socket(uint16_t port) {
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        std::perror("ohca_wire: socket");
        std::exit(1);
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) != 0) {
        std::fprintf(stderr, "ohca_wire: bind 127.0.0.1:%u: %s\n", port, std::strerror(errno));
        std::exit(1);
    }
    // Room for a burst (a 64 KiB READ response at MTU 1024 is 64 frames of
    // about 2.3 KiB of buffer each): the wire must lose only the frames its
    // faults drop, and a capture of it must hold every frame a VM sent. As
    // root, SO_RCVBUFFORCE passes the host's rmem_max; else what it allows.
    const int want = kRcvBuf;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &want, sizeof(want)) != 0) {
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &want, sizeof(want));
    }
    return fd;
}

class Pcap {
  public:
    explicit Pcap(const char *path) : f_(path ? std::fopen(path, "wb") : nullptr) {
        if (path && !f_) {
            std::fprintf(stderr, "ohca_wire: %s: %s\n", path, std::strerror(errno));
            std::exit(1);
        }
        if (f_) {
            const uint32_t hdr[6] = {0xa1b2c3d4, 0x00040002, 0, 0, 65535, 1}; // Ethernet
            std::fwrite(hdr, sizeof(hdr), 1, f_);
        }
    }
    ~Pcap() {
        if (f_) {
            std::fclose(f_);
        }
    }
    Pcap(const Pcap &) = delete;
    Pcap &operator=(const Pcap &) = delete;
    void write(const std::vector<uint8_t> &frame) {
        if (!f_) {
            return;
        }
        timespec ts{};
        clock_gettime(CLOCK_REALTIME, &ts);
        const uint32_t rec[4] = {static_cast<uint32_t>(ts.tv_sec),
                                 static_cast<uint32_t>(ts.tv_nsec / 1000),
                                 static_cast<uint32_t>(frame.size()),
                                 static_cast<uint32_t>(frame.size())};
        std::fwrite(rec, sizeof(rec), 1, f_);
        std::fwrite(frame.data(), frame.size(), 1, f_);
    }

  private:
    std::FILE *f_;
};

std::string stats_json(const char *name, const DirStats &s) {
    char buf[512];
    std::snprintf(buf, sizeof(buf),
                  "\"%s\": {\"rx\": %llu, \"tx\": %llu, \"roce\": %llu, \"dropped\": %llu, "
                  "\"duplicated\": %llu, \"reordered\": %llu, \"delayed\": %llu, "
                  "\"corrupted\": %llu}",
                  name, (unsigned long long)s.rx, (unsigned long long)s.tx,
                  (unsigned long long)s.roce, (unsigned long long)s.dropped,
                  (unsigned long long)s.duplicated, (unsigned long long)s.reordered,
                  (unsigned long long)s.delayed, (unsigned long long)s.corrupted);
    return buf;
}

} // namespace

int main(int argc, char **argv) {
    FaultConfig cfg[2]; // 0: A to B, 1: B to A
    uint16_t listen[2] = {0, 0}, peer[2] = {0, 0};
    uint64_t seed = 1;
    const char *pcap_path = nullptr;
    const char *stats_path = nullptr;
    for (int i = 1; i < argc; ++i) {
        const std::string opt = argv[i];
        auto value = [&]() -> const char * {
            if (i + 1 >= argc) {
                usage(("missing value for " + opt).c_str());
            }
            return argv[++i];
        };
        auto prob = [&](const char *v) {
            char *end = nullptr;
            const double p = std::strtod(v, &end);
            if (end == v || *end != '\0' || p < 0 || p > 1) {
                usage(("bad probability for " + opt).c_str());
            }
            return p;
        };
        std::string base = opt;
        int only = -1;
        if (base.size() > 3 && base.compare(base.size() - 3, 3, "-ab") == 0) {
            only = 0;
            base.resize(base.size() - 3);
        } else if (base.size() > 3 && base.compare(base.size() - 3, 3, "-ba") == 0) {
            only = 1;
            base.resize(base.size() - 3);
        }
        double FaultConfig::*field = base == "--loss"      ? &FaultConfig::loss
                                     : base == "--dup"     ? &FaultConfig::dup
                                     : base == "--reorder" ? &FaultConfig::reorder
                                     : base == "--delay"   ? &FaultConfig::delay
                                     : base == "--corrupt" ? &FaultConfig::corrupt
                                                           : nullptr;
        if (field != nullptr) {
            const double p = prob(value());
            for (int d = 0; d < 2; ++d) {
                if (only < 0 || only == d) {
                    cfg[d].*field = p;
                }
            }
        } else if (opt == "--a" || opt == "--b") {
            const int side = opt == "--a" ? 0 : 1;
            if (!parse_ports(value(), listen[side], peer[side])) {
                usage("bad ports, want LISTEN:PEER");
            }
        } else if (opt == "--delay-us") {
            cfg[0].delay_us = cfg[1].delay_us = std::strtoull(value(), nullptr, 0);
        } else if (opt == "--hold-us") {
            cfg[0].hold_us = cfg[1].hold_us = std::strtoull(value(), nullptr, 0);
        } else if (opt == "--seed") {
            seed = std::strtoull(value(), nullptr, 0);
        } else if (opt == "--all-frames") {
            cfg[0].roce_only = cfg[1].roce_only = false;
        } else if (opt == "--pcap") {
            pcap_path = value();
        } else if (opt == "--stats") {
            stats_path = value();
        } else {
            usage(("unknown option " + opt).c_str());
        }
    }
    if (listen[0] == 0 || listen[1] == 0) {
        usage("--a and --b are required");
    }

    struct sigaction sa{};
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);

    const int fd[2] = {open_socket(listen[0]), open_socket(listen[1])};
    // Independent streams per direction: one side's traffic does not shift
    // the other's fates.
    FaultLine line[2] = {FaultLine(cfg[0], seed * 2 + 0x5eed), FaultLine(cfg[1], seed * 2 + 1)};
    Pcap pcap(pcap_path);
    std::fprintf(stderr, "ohca_wire: A 127.0.0.1:%u <-> B 127.0.0.1:%u, seed %llu\n", listen[0],
                 listen[1], (unsigned long long)seed);

    std::vector<uint8_t> buf(65536);
    while (!g_stop) {
        int timeout_ms = 1000;
        for (const FaultLine &l : line) {
            if (auto due = l.next_due()) {
                const uint64_t now = mono_us();
                const int ms = *due <= now ? 0 : static_cast<int>((*due - now + 999) / 1000);
                timeout_ms = std::min(timeout_ms, ms);
            }
        }
        pollfd pfd[2] = {{fd[0], POLLIN, 0}, {fd[1], POLLIN, 0}};
        if (poll(pfd, 2, timeout_ms) < 0 && errno != EINTR) {
            std::perror("ohca_wire: poll");
            break;
        }
        for (int d = 0; d < 2; ++d) {
            // Frames from side d travel in direction d (A to B is 0).
            for (;;) {
                const ssize_t n = recv(fd[d], buf.data(), buf.size(), 0);
                if (n < 0) {
                    break;
                }
                line[d].push(mono_us(), std::vector<uint8_t>(buf.begin(), buf.begin() + n));
            }
        }
        const uint64_t now = mono_us();
        for (int d = 0; d < 2; ++d) {
            const int to = 1 - d;
            sockaddr_in a{};
            a.sin_family = AF_INET;
            a.sin_port = htons(peer[to]);
            a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            for (const auto &f : line[d].pop_due(now)) {
                // Sent from the receiving side's socket, as QEMU expects.
                sendto(fd[to], f.data(), f.size(), 0, reinterpret_cast<sockaddr *>(&a),
                       sizeof(a));
                pcap.write(f);
            }
        }
    }
    const std::string json = "{" + stats_json("a_to_b", line[0].stats()) + ", " +
                             stats_json("b_to_a", line[1].stats()) + "}\n";
    std::fprintf(stderr, "ohca_wire: stats %s", json.c_str());
    if (stats_path) {
        if (std::FILE *f = std::fopen(stats_path, "w")) {
            std::fputs(json.c_str(), f);
            std::fclose(f);
        }
    }
    close(fd[0]);
    close(fd[1]);
    return 0;
}
