// SPDX-License-Identifier: GPL-2.0-or-later
#include "ports.hpp"

#include "json.hpp"

#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/time.h>
#include <sys/un.h>

namespace ohca::fabric {

const char *const kPortSpecHelp =
    "                      FD | fd:FD          an inherited connected stream socket\n"
    "                      dgram-fd:FD         an inherited connected datagram socket, a frame\n"
    "                                          per datagram (a VM that migrates: its QEMUs\n"
    "                                          share the peer socket)\n"
    "                      listen:PATH         listen on a unix socket, one peer at a time\n"
    "                      connect:PATH        connect to a unix socket (retried)\n"
    "                      tcp-listen:HOST:PORT, tcp-connect:HOST:PORT\n"
    "                      none                an unconnected port\n";

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

namespace {

bool set_nonblock(int fd) {
    const int fl = fcntl(fd, F_GETFL);
    return fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0;
}

sockaddr_un unix_addr(const std::string &path) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.c_str(), path.size());
    return a;
}

int open_listen(PortIo &io) {
    if (io.mode == PortMode::UnixListen) {
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
int connect_once(const PortIo &io) {
    if (io.mode == PortMode::UnixConnect) {
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

bool parse_port_spec(const std::string &s, PortIo &io) {
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
        io.mode = PortMode::None;
        return true;
    }
    if (s.rfind("listen:", 0) == 0) {
        io.mode = PortMode::UnixListen;
        io.path = rest("listen:");
        return !io.path.empty() && io.path.size() < sizeof(sockaddr_un::sun_path);
    }
    if (s.rfind("connect:", 0) == 0) {
        io.mode = PortMode::UnixConnect;
        io.path = rest("connect:");
        return !io.path.empty() && io.path.size() < sizeof(sockaddr_un::sun_path);
    }
    if (s.rfind("tcp-listen:", 0) == 0) {
        io.mode = PortMode::TcpListen;
        return host_port(rest("tcp-listen:"));
    }
    if (s.rfind("tcp-connect:", 0) == 0) {
        io.mode = PortMode::TcpConnect;
        return host_port(rest("tcp-connect:"));
    }
    const bool dgram = s.rfind("dgram-fd:", 0) == 0;
    const std::string num = dgram ? rest("dgram-fd:") : s.rfind("fd:", 0) == 0 ? rest("fd:") : s;
    char *end = nullptr;
    const long fd = std::strtol(num.c_str(), &end, 10);
    if (num.empty() || *end != '\0' || fd < 0 || fd > 65535) {
        return false;
    }
    io.mode = dgram ? PortMode::DgramFd : PortMode::Fd;
    io.fd = static_cast<int>(fd);
    return true;
}

std::string PortSet::dgram_stats_json() const {
    std::string s;
    JsonWriter w(s);
    for (uint8_t p = 1; p <= ports(); ++p) {
        const PortIo &io = ios_[p];
        if (io.mode != PortMode::DgramFd && io.dgram_oversize == 0 && io.dgram_unsent == 0) {
            continue;
        }
        if (s.empty()) {
            w.begin_array("datagram_ports");
        }
        w.begin_object();
        w.num("port", p);
        w.num("oversize", io.dgram_oversize);
        w.num("unsent", io.dgram_unsent);
        w.end_object();
    }
    if (!s.empty()) {
        w.end_array();
    }
    return s;
}

PortSet::~PortSet() {
    for (const PortIo &io : ios_) {
        if (io.listen_fd >= 0 && io.mode == PortMode::UnixListen) {
            unlink(io.path.c_str());
        }
    }
}

bool PortSet::open(const char *prog) {
    for (uint8_t p = 1; p <= ports(); ++p) {
        PortIo &io = ios_[p];
        if (inherited(p)) {
            if (!set_nonblock(io.fd)) {
                std::fprintf(stderr, "%s: port %u: fd %d: %s\n", prog, p, io.fd,
                             std::strerror(errno));
                return false;
            }
        } else if (io.mode == PortMode::UnixListen || io.mode == PortMode::TcpListen) {
            io.listen_fd = open_listen(io);
            if (io.listen_fd < 0) {
                std::fprintf(stderr, "%s: port %u: cannot listen on %s%s%s: %s\n", prog, p,
                             io.path.c_str(), io.service.empty() ? "" : ":", io.service.c_str(),
                             std::strerror(errno));
                return false;
            }
        }
    }
    return true;
}

void PortSet::try_connect(uint8_t p, uint64_t now) {
    PortIo &io = ios_[p];
    io.fd = connect_once(io);
    io.next_try = now + 100'000'000;
    if (io.fd >= 0) {
        set_nonblock(io.fd);
        if (io.mode == PortMode::TcpConnect) {
            tcp_nodelay(io.fd);
        }
    }
}

int PortSet::accept_one(uint8_t p) {
    PortIo &io = ios_[p];
    const int fd = accept4(io.listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd >= 0) {
        io.fd = fd;
        if (io.mode == PortMode::TcpListen) {
            tcp_nodelay(fd);
        }
    }
    return fd;
}

void PortSet::close_conn(uint8_t p) {
    PortIo &io = ios_[p];
    if (io.fd >= 0) {
        close(io.fd);
    }
    io.fd = -1;
    if (inherited(p)) {
        io.mode = PortMode::None; // an inherited socket does not come back
    }
}

} // namespace ohca::fabric
