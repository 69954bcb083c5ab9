// SPDX-License-Identifier: GPL-2.0-or-later
// ohca-switch: an emulated InfiniBand switch between ohca ports (and other
// switches) joined by stream sockets in QEMU's `-netdev stream` framing.
// See fabric/README.md for the options and the design.
#include "pcap.hpp"
#include "switch.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>
#include <vector>

using ohca::fabric::PcapWriter;
using ohca::fabric::Switch;
using ohca::fabric::SwitchConfig;

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) {
    g_stop = 1;
}

uint64_t mono_ns() {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(t.tv_nsec);
}
uint64_t real_ns() {
    timespec t{};
    clock_gettime(CLOCK_REALTIME, &t);
    return static_cast<uint64_t>(t.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(t.tv_nsec);
}

void usage(FILE *f) {
    std::fputs(
        "usage: ohca-switch [options]\n"
        "  --port SPEC       the next external port (1, 2, ...), repeatable. SPEC:\n"
        "                      FD | fd:FD          an inherited connected stream socket\n"
        "                      listen:PATH         listen on a unix socket, one peer at a time\n"
        "                      connect:PATH        connect to a unix socket (retried)\n"
        "                      tcp-listen:HOST:PORT, tcp-connect:HOST:PORT\n"
        "                      none                an unconnected port\n"
        "  --ports N         external ports (default: the number of --port; at most 63)\n"
        "  --guid HEX        node GUID (default 0x0002c90300fab000)\n"
        "  --vl-buffer N     receive buffer per data VL in 64-byte blocks (default 256)\n"
        "  --description S   NodeDescription (default ohca-switch)\n"
        "  --stats FILE      write the counters as JSON to FILE at exit\n"
        "  --capture FILE    write every data packet received to FILE (pcap, LINKTYPE 247)\n"
        "Stops on SIGTERM or SIGINT.\n",
        f);
}

enum class Mode { None, Fd, UnixListen, UnixConnect, TcpListen, TcpConnect };

struct PortIo {
    Mode mode = Mode::None;
    std::string path; // unix path, or host
    std::string service;
    int fd = -1;        // the connection
    int listen_fd = -1; // listen modes
    uint64_t next_try = 0;
};

bool set_nonblock(int fd) {
    const int fl = fcntl(fd, F_GETFL);
    return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

bool parse_spec(const std::string &s, PortIo &io) {
    auto rest = [&](const char *prefix) { return s.substr(std::strlen(prefix)); };
    auto host_port = [&](const std::string &hp) {
        const auto colon = hp.rfind(':');
        if (colon == std::string::npos || colon == 0 || colon + 1 == hp.size()) {
            return false;
        }
        io.path = hp.substr(0, colon);
        io.service = hp.substr(colon + 1);
        return true;
    };
    if (s == "none") {
        io.mode = Mode::None;
        return true;
    }
    if (s.rfind("listen:", 0) == 0) {
        io.mode = Mode::UnixListen;
        io.path = rest("listen:");
        return !io.path.empty() && io.path.size() < sizeof(sockaddr_un::sun_path);
    }
    if (s.rfind("connect:", 0) == 0) {
        io.mode = Mode::UnixConnect;
        io.path = rest("connect:");
        return !io.path.empty() && io.path.size() < sizeof(sockaddr_un::sun_path);
    }
    if (s.rfind("tcp-listen:", 0) == 0) {
        io.mode = Mode::TcpListen;
        return host_port(rest("tcp-listen:"));
    }
    if (s.rfind("tcp-connect:", 0) == 0) {
        io.mode = Mode::TcpConnect;
        return host_port(rest("tcp-connect:"));
    }
    const std::string num = s.rfind("fd:", 0) == 0 ? rest("fd:") : s;
    char *end = nullptr;
    const long fd = std::strtol(num.c_str(), &end, 10);
    if (num.empty() || *end != '\0' || fd < 0 || fd > 65535) {
        return false;
    }
    io.mode = Mode::Fd;
    io.fd = static_cast<int>(fd);
    return true;
}

sockaddr_un unix_addr(const std::string &path) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.c_str(), path.size());
    return a;
}

int open_listen(PortIo &io) {
    if (io.mode == Mode::UnixListen) {
        const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            return -1;
        }
        unlink(io.path.c_str());
        const sockaddr_un a = unix_addr(io.path);
        if (bind(fd, reinterpret_cast<const sockaddr *>(&a), sizeof a) != 0 || listen(fd, 1) != 0) {
            close(fd);
            return -1;
        }
        set_nonblock(fd);
        return fd;
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    addrinfo *res = nullptr;
    if (getaddrinfo(io.path.c_str(), io.service.c_str(), &hints, &res) != 0) {
        return -1;
    }
    int fd = -1;
    for (addrinfo *r = res; r != nullptr && fd < 0; r = r->ai_next) {
        fd = socket(r->ai_family, r->ai_socktype | SOCK_CLOEXEC, r->ai_protocol);
        if (fd < 0) {
            continue;
        }
        const int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, r->ai_addr, r->ai_addrlen) != 0 || listen(fd, 1) != 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd >= 0) {
        set_nonblock(fd);
    }
    return fd;
}

// A blocking connect, bounded: Linux's connect() honours SO_SNDTIMEO, so
// an unreachable TCP peer costs at most 200 ms of the loop per attempt.
int try_connect(const PortIo &io) {
    if (io.mode == Mode::UnixConnect) {
        const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        const sockaddr_un a = unix_addr(io.path);
        if (fd >= 0 && connect(fd, reinterpret_cast<const sockaddr *>(&a), sizeof a) == 0) {
            return fd;
        }
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *res = nullptr;
    if (getaddrinfo(io.path.c_str(), io.service.c_str(), &hints, &res) != 0) {
        return -1;
    }
    int fd = -1;
    for (addrinfo *r = res; r != nullptr && fd < 0; r = r->ai_next) {
        fd = socket(r->ai_family, r->ai_socktype | SOCK_CLOEXEC, r->ai_protocol);
        if (fd < 0) {
            continue;
        }
        const timeval limit{0, 200'000};
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
        if (connect(fd, r->ai_addr, r->ai_addrlen) != 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    return fd;
}

void tcp_nodelay(int fd) {
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

} // namespace

int main(int argc, char **argv) {
    SwitchConfig cfg;
    std::vector<PortIo> ios(1); // [0] unused: port 0 is the switch itself
    int ports = -1;
    const char *stats_path = nullptr;
    const char *capture_path = nullptr;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> const char * {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "ohca-switch: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--help" || a == "-h") {
            usage(stdout);
            return 0;
        } else if (a == "--port") {
            PortIo io;
            const char *v = value();
            if (!parse_spec(v, io)) {
                std::fprintf(stderr, "ohca-switch: bad --port '%s' (see --help)\n", v);
                return 2;
            }
            ios.push_back(io);
        } else if (a == "--ports") {
            ports = std::atoi(value());
        } else if (a == "--guid") {
            const char *v = value();
            char *end = nullptr;
            cfg.guid = std::strtoull(v, &end, 16);
            if (*end != '\0' || cfg.guid == 0) {
                std::fprintf(stderr, "ohca-switch: bad --guid '%s' (hex, not 0)\n", v);
                return 2;
            }
        } else if (a == "--vl-buffer") {
            const int n = std::atoi(value());
            if (n < 66 || n > 4095) {
                std::fprintf(stderr, "ohca-switch: --vl-buffer must be 66..4095 blocks "
                                     "(room for one 4 KiB packet)\n");
                return 2;
            }
            cfg.vl_buffer_blocks = static_cast<uint16_t>(n);
        } else if (a == "--description") {
            cfg.description = value();
        } else if (a == "--stats") {
            stats_path = value();
        } else if (a == "--capture") {
            capture_path = value();
        } else {
            std::fprintf(stderr, "ohca-switch: unknown option '%s'\n", a.c_str());
            usage(stderr);
            return 2;
        }
    }
    const int given = static_cast<int>(ios.size()) - 1;
    if (ports < 0) {
        ports = given;
    }
    if (ports < 1 || ports > ohca::ib::kMaxSmaPorts || given > ports) {
        std::fprintf(stderr,
                     "ohca-switch: need 1..63 ports and no more --port than --ports "
                     "(got %d ports, %d --port)\n",
                     ports, given);
        return 2;
    }
    ios.resize(static_cast<size_t>(ports) + 1);
    cfg.ports = static_cast<uint8_t>(ports);

    std::signal(SIGPIPE, SIG_IGN);
    std::signal(SIGTERM, on_signal);
    std::signal(SIGINT, on_signal);

    Switch sw(cfg);
    PcapWriter pcap;
    if (capture_path != nullptr) {
        if (!pcap.open(capture_path)) {
            std::fprintf(stderr, "ohca-switch: cannot write %s: %s\n", capture_path,
                         std::strerror(errno));
            return 1;
        }
        sw.set_capture([&](uint8_t, std::span<const uint8_t> f) { pcap.write(f, real_ns()); });
    }

    uint64_t now = mono_ns();
    for (uint8_t p = 1; p <= cfg.ports; ++p) {
        PortIo &io = ios[p];
        if (io.mode == Mode::Fd) {
            if (!set_nonblock(io.fd)) {
                std::fprintf(stderr, "ohca-switch: port %u: fd %d: %s\n", p, io.fd,
                             std::strerror(errno));
                return 1;
            }
            sw.connect(p, now);
        } else if (io.mode == Mode::UnixListen || io.mode == Mode::TcpListen) {
            io.listen_fd = open_listen(io);
            if (io.listen_fd < 0) {
                std::fprintf(stderr, "ohca-switch: port %u: cannot listen on %s%s%s: %s\n", p,
                             io.path.c_str(), io.service.empty() ? "" : ":", io.service.c_str(),
                             std::strerror(errno));
                return 1;
            }
        }
    }
    std::printf("ohca-switch: %u ports, GUID 0x%016llx\n", cfg.ports,
                static_cast<unsigned long long>(cfg.guid));
    std::fflush(stdout);

    std::vector<uint8_t> buf(64 * 1024);
    std::vector<pollfd> pfds;
    std::vector<std::pair<uint8_t, bool>> who; // port, is listen fd
    uint64_t last_tick = now;
    auto drop_conn = [&](uint8_t p) {
        PortIo &io = ios[p];
        if (io.fd >= 0) {
            close(io.fd);
        }
        io.fd = -1;
        sw.disconnect(p, mono_ns());
        if (io.mode == Mode::Fd) {
            io.mode = Mode::None; // an inherited socket does not come back
        }
    };
    while (g_stop == 0) {
        now = mono_ns();
        pfds.clear();
        who.clear();
        for (uint8_t p = 1; p <= cfg.ports; ++p) {
            PortIo &io = ios[p];
            if ((io.mode == Mode::UnixConnect || io.mode == Mode::TcpConnect) && io.fd < 0 &&
                now >= io.next_try) {
                io.fd = try_connect(io);
                io.next_try = now + 100'000'000;
                if (io.fd >= 0) {
                    set_nonblock(io.fd);
                    if (io.mode == Mode::TcpConnect) {
                        tcp_nodelay(io.fd);
                    }
                    sw.connect(p, now);
                }
            }
            if (io.fd >= 0 && sw.connected(p)) {
                const short ev = static_cast<short>(POLLIN | (sw.output(p).empty() ? 0 : POLLOUT));
                pfds.push_back({io.fd, ev, 0});
                who.emplace_back(p, false);
            } else if (io.listen_fd >= 0 && io.fd < 0) {
                pfds.push_back({io.listen_fd, POLLIN, 0});
                who.emplace_back(p, true);
            }
        }
        const int n = poll(pfds.data(), pfds.size(), 1);
        if (n < 0 && errno != EINTR) {
            std::perror("ohca-switch: poll");
            break;
        }
        now = mono_ns();
        for (size_t i = 0; n > 0 && i < pfds.size(); ++i) {
            const auto [p, is_listen] = who[i];
            PortIo &io = ios[p];
            if (pfds[i].revents == 0) {
                continue;
            }
            if (is_listen) {
                const int fd =
                    accept4(io.listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (fd >= 0) {
                    io.fd = fd;
                    if (io.mode == Mode::TcpListen) {
                        tcp_nodelay(fd);
                    }
                    sw.connect(p, now);
                }
                continue;
            }
            if ((pfds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
                // One bounded read per port per round: a fast sender cannot
                // starve the others.
                const ssize_t r = read(io.fd, buf.data(), buf.size());
                if (r > 0) {
                    sw.receive(p, std::span<const uint8_t>(buf.data(), static_cast<size_t>(r)),
                               now);
                } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
                    drop_conn(p);
                    continue;
                }
            }
        }
        // Writes: as much as each socket takes.
        for (uint8_t p = 1; p <= cfg.ports; ++p) {
            PortIo &io = ios[p];
            while (io.fd >= 0 && sw.connected(p) && !sw.output(p).empty()) {
                auto out = sw.output(p);
                const ssize_t w = send(io.fd, out.data(), out.size(), MSG_NOSIGNAL);
                if (w > 0) {
                    sw.consumed(p, static_cast<size_t>(w), now);
                } else {
                    if (w < 0 && errno != EAGAIN && errno != EINTR) {
                        drop_conn(p);
                    }
                    break;
                }
            }
        }
        if (now - last_tick >= 1'000'000) {
            sw.tick(now);
            last_tick = now;
        }
    }
    const std::string json = sw.stats_json();
    std::printf("ohca-switch: %s\n", json.c_str());
    if (stats_path != nullptr) {
        FILE *f = std::fopen(stats_path, "w");
        if (f == nullptr) {
            std::fprintf(stderr, "ohca-switch: cannot write %s: %s\n", stats_path,
                         std::strerror(errno));
            return 1;
        }
        std::fprintf(f, "%s\n", json.c_str());
        std::fclose(f);
    }
    pcap.close();
    for (uint8_t p = 1; p <= cfg.ports; ++p) {
        if (ios[p].listen_fd >= 0 && ios[p].mode == Mode::UnixListen) {
            unlink(ios[p].path.c_str());
        }
    }
    return 0;
}
