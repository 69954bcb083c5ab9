// SPDX-License-Identifier: GPL-2.0-or-later
// ohca-switch: an emulated switch between ohca ports (and other switches)
// joined by stream sockets in QEMU's `-netdev stream` framing. Two modes:
// InfiniBand (the default; switch.hpp) and Ethernet (--mode eth;
// eth_switch.hpp). The port transports, --stats and --capture are the
// same in both. See fabric/README.md for the options and the design.
#include "eth_switch.hpp"
#include "pcap.hpp"
#include "ports.hpp"
#include "switch.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace ohca::fabric;

namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) {
    g_stop = 1;
}

void usage(FILE *f) {
    std::fprintf(
        f,
        "usage: ohca-switch [--mode ib|eth] [options]\n"
        "  --mode ib|eth     InfiniBand switch (default) or Ethernet bridge\n"
        "  --port SPEC       the next external port (1, 2, ...), repeatable. SPEC:\n"
        "%s"
        "  --ports N         external ports (default: the number of --port; at most 63)\n"
        "  --stats FILE      write the counters as JSON to FILE at exit\n"
        "  --capture FILE    write every frame received to FILE (pcap; LINKTYPE 247 for\n"
        "                    InfiniBand, 1 for Ethernet)\n"
        "  --timeline FILE   one JSON line per interval: each port's counters (Ethernet:\n"
        "                    and its queue; InfiniBand: bytes in and out, input blocks)\n"
        "  --timeline-ms N   the timeline's interval (default 10)\n"
        "InfiniBand mode:\n"
        "  --guid HEX        node GUID (default 0x0002c90300fab000)\n"
        "  --vl-buffer N     receive buffer per data VL in 64-byte blocks (default 256)\n"
        "  --description S   NodeDescription (default ohca-switch)\n"
        "  --line-rate MBPS  every egress port's line rate in Mbit/s (default: unshaped)\n"
        "Ethernet mode (sizes in bytes; see fabric/README.md):\n"
        "  --line-rate MBPS  every egress port's line rate in Mbit/s (default 1000)\n"
        "  --burst BYTES     token bucket depth (default: two largest frames)\n"
        "  --away-after-us N a gap between events longer than this is the process away:\n"
        "                    an idle port earns that time too (default 0: off)\n"
        "  --buffer BYTES    the shared buffer (default 1048576)\n"
        "  --headroom BYTES  more buffer for the lossless priorities only (default 0)\n"
        "  --mtu BYTES       largest frame, header and tags included (60..9022, default 9022)\n"
        "  --ecn KMIN:KMAX:PMAX  RED marking of ECT packets on egress queue depth\n"
        "  --seed N          the marking's random seed (default 1)\n"
        "  --pfc PRIOS       lossless priorities, e.g. 3 or 3,4 (default: none)\n"
        "  --pfc-trust pcp|dscp  priority from the VLAN PCP (default) or DSCP / 8\n"
        "  --xoff BYTES, --xon BYTES  per ingress port and priority (default 65536, 32768)\n"
        "  --pause-quanta N  quanta of an XOFF (1..65535, default 65535)\n"
        "  --mac-table N     MAC table entries (default 4096), --mac-per-port N (1024)\n"
        "  --mac-age SECONDS (default 300)\n"
        "Stops on SIGTERM or SIGINT.\n",
        kPortSpecHelp);
}

[[noreturn]] void bad(const char *opt, const char *v, const char *why) {
    std::fprintf(stderr, "ohca-switch: bad %s '%s': %s\n", opt, v, why);
    std::exit(2);
}

uint64_t number(const char *opt, const char *v, uint64_t lo, uint64_t hi) {
    char *end = nullptr;
    errno = 0;
    const unsigned long long n = std::strtoull(v, &end, 0);
    if (*v == '\0' || *end != '\0' || errno != 0 || n < lo || n > hi || *v == '-') {
        char why[96];
        std::snprintf(why, sizeof why, "a number from %llu to %llu",
                      static_cast<unsigned long long>(lo), static_cast<unsigned long long>(hi));
        bad(opt, v, why);
    }
    return n;
}

bool parse_ecn(const char *v, EthConfig &c) {
    unsigned long kmin = 0;
    unsigned long kmax = 0;
    double pmax = 0;
    char tail = 0;
    if (std::sscanf(v, "%lu:%lu:%lf%c", &kmin, &kmax, &pmax, &tail) != 3 || kmin > kmax ||
        kmax > 0xFFFFFFFFul || pmax < 0 || pmax > 1) {
        return false;
    }
    c.ecn = true;
    c.kmin_bytes = static_cast<uint32_t>(kmin);
    c.kmax_bytes = static_cast<uint32_t>(kmax);
    c.pmax = pmax;
    return true;
}

bool parse_prios(const char *v, uint8_t &mask) {
    mask = 0;
    for (const char *s = v; *s != '\0'; ++s) {
        if (*s >= '0' && *s <= '7') {
            mask = static_cast<uint8_t>(mask | 1u << (*s - '0'));
        } else if (*s != ',') {
            return false;
        }
    }
    return true;
}

template <typename Core> int serve(Core &core, PortSet &io, const char *stats_path) {
    io.run(core, &g_stop);
    std::string json = core.stats_json();
    const std::string dgram = io.dgram_stats_json();
    if (!dgram.empty() && json.size() > 1 && json.back() == '}') {
        json.insert(json.size() - 1, ", " + dgram);
    }
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
    return 0;
}

// serve() with the core's timeline written to 'path' (nullptr: none), its
// last line at exit.
template <typename Core>
int serve_timeline(Core &core, PortSet &io, const char *stats_path, const char *path,
                   uint64_t interval_ms) {
    FILE *tl = nullptr;
    if (path != nullptr) {
        tl = std::fopen(path, "w");
        if (tl == nullptr) {
            std::fprintf(stderr, "ohca-switch: cannot write %s: %s\n", path, std::strerror(errno));
            return 1;
        }
        core.set_timeline(interval_ms * 1'000'000, [tl](const std::string &line) {
            std::fputs(line.c_str(), tl);
            std::fputc('\n', tl);
        });
    }
    const int rc = serve(core, io, stats_path);
    if (tl != nullptr) {
        core.timeline_now(mono_ns());
        std::fclose(tl);
    }
    return rc;
}

} // namespace

int main(int argc, char **argv) {
    SwitchConfig cfg;
    EthConfig ecfg;
    PortSet io;
    bool eth = false;
    bool ib_only = false;
    const char *eth_only = nullptr;
    int ports = -1;
    const char *stats_path = nullptr;
    const char *capture_path = nullptr;
    const char *timeline_path = nullptr;
    uint64_t timeline_ms = 10;
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
        } else if (a == "--mode") {
            const std::string m = value();
            if (m != "ib" && m != "eth") {
                bad("--mode", m.c_str(), "ib or eth");
            }
            eth = m == "eth";
        } else if (a == "--port") {
            PortIo p;
            const char *v = value();
            if (!parse_port_spec(v, p)) {
                std::fprintf(stderr, "ohca-switch: bad --port '%s' (see --help)\n", v);
                return 2;
            }
            io.add(p);
        } else if (a == "--ports") {
            ports = std::atoi(value());
        } else if (a == "--stats") {
            stats_path = value();
        } else if (a == "--capture") {
            capture_path = value();
        } else if (a == "--guid") {
            const char *v = value();
            char *end = nullptr;
            cfg.guid = std::strtoull(v, &end, 16);
            if (*end != '\0' || cfg.guid == 0) {
                std::fprintf(stderr, "ohca-switch: bad --guid '%s' (hex, not 0)\n", v);
                return 2;
            }
            ib_only = true;
        } else if (a == "--vl-buffer") {
            const int n = std::atoi(value());
            if (n < 66 || n > 4095) {
                std::fprintf(stderr, "ohca-switch: --vl-buffer must be 66..4095 blocks "
                                     "(room for one 4 KiB packet)\n");
                return 2;
            }
            cfg.vl_buffer_blocks = static_cast<uint16_t>(n);
            ib_only = true;
        } else if (a == "--description") {
            cfg.description = value();
            ib_only = true;
        } else if (a == "--line-rate") {
            // both modes: every egress port's rate
            const uint64_t mbps = number("--line-rate", value(), 1, 400'000);
            ecfg.line_rate_bps = mbps * 1'000'000;
            cfg.line_rate_bps = mbps * 1'000'000;
        } else if (a == "--away-after-us") {
            ecfg.away_after_ns = number("--away-after-us", value(), 0, 10'000'000) * 1000;
            eth_only = argv[i - 1];
        } else if (a == "--burst") {
            ecfg.burst_bytes = static_cast<uint32_t>(number("--burst", value(), 1, 1u << 30));
            eth_only = argv[i - 1];
        } else if (a == "--buffer") {
            ecfg.buffer_bytes = number("--buffer", value(), ohca::eth::kMaxFrameBytes, 1ull << 32);
            eth_only = argv[i - 1];
        } else if (a == "--headroom") {
            ecfg.headroom_bytes = number("--headroom", value(), 0, 1ull << 32);
            eth_only = argv[i - 1];
        } else if (a == "--mtu") {
            ecfg.max_frame =
                number("--mtu", value(), ohca::eth::kMinFrameBytes, ohca::eth::kMaxFrameBytes);
            eth_only = argv[i - 1];
        } else if (a == "--ecn") {
            const char *v = value();
            if (!parse_ecn(v, ecfg)) {
                bad("--ecn", v, "KMIN:KMAX:PMAX, bytes with KMIN <= KMAX, PMAX in 0..1");
            }
            eth_only = argv[i - 1];
        } else if (a == "--seed") {
            ecfg.seed = number("--seed", value(), 0, UINT64_MAX);
            eth_only = argv[i - 1];
        } else if (a == "--pfc") {
            const char *v = value();
            if (!parse_prios(v, ecfg.pfc_enable)) {
                bad("--pfc", v, "priorities 0..7 separated by commas");
            }
            eth_only = argv[i - 1];
        } else if (a == "--pfc-trust") {
            const std::string t = value();
            if (t != "pcp" && t != "dscp") {
                bad("--pfc-trust", t.c_str(), "pcp or dscp");
            }
            ecfg.trust = t == "pcp" ? PrioTrust::Pcp : PrioTrust::Dscp;
            eth_only = argv[i - 1];
        } else if (a == "--xoff") {
            ecfg.xoff_bytes = static_cast<uint32_t>(number("--xoff", value(), 1, 1u << 30));
            eth_only = argv[i - 1];
        } else if (a == "--xon") {
            ecfg.xon_bytes = static_cast<uint32_t>(number("--xon", value(), 0, 1u << 30));
            eth_only = argv[i - 1];
        } else if (a == "--pause-quanta") {
            ecfg.pause_quanta = static_cast<uint16_t>(number("--pause-quanta", value(), 1, 65535));
            eth_only = argv[i - 1];
        } else if (a == "--mac-table") {
            ecfg.mac_table = number("--mac-table", value(), 1, 1u << 20);
            eth_only = argv[i - 1];
        } else if (a == "--mac-per-port") {
            ecfg.mac_per_port = number("--mac-per-port", value(), 1, 1u << 20);
            eth_only = argv[i - 1];
        } else if (a == "--timeline") {
            timeline_path = value();
        } else if (a == "--timeline-ms") {
            timeline_ms = number("--timeline-ms", value(), 1, 60'000);
        } else if (a == "--mac-age") {
            ecfg.mac_age_ns = number("--mac-age", value(), 1, 1'000'000) * 1'000'000'000ull;
            eth_only = argv[i - 1];
        } else {
            std::fprintf(stderr, "ohca-switch: unknown option '%s'\n", a.c_str());
            usage(stderr);
            return 2;
        }
    }
    if (eth && ib_only) {
        std::fprintf(stderr, "ohca-switch: --guid, --vl-buffer, --description are for --mode ib\n");
        return 2;
    }
    if (!eth && eth_only != nullptr) {
        std::fprintf(stderr, "ohca-switch: %s needs --mode eth\n", eth_only);
        return 2;
    }
    if (eth && ecfg.xon_bytes > ecfg.xoff_bytes) {
        std::fprintf(stderr, "ohca-switch: --xon (%u) must not exceed --xoff (%u)\n",
                     ecfg.xon_bytes, ecfg.xoff_bytes);
        return 2;
    }
    const int given = io.given();
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
    io.resize(ports);
    cfg.ports = static_cast<uint8_t>(ports);
    ecfg.ports = static_cast<uint8_t>(ports);

    std::signal(SIGPIPE, SIG_IGN);
    std::signal(SIGTERM, on_signal);
    std::signal(SIGINT, on_signal);

    PcapWriter pcap;
    if (capture_path != nullptr &&
        !pcap.open(capture_path,
                   eth ? PcapWriter::kLinkTypeEthernet : PcapWriter::kLinkTypeInfiniband)) {
        std::fprintf(stderr, "ohca-switch: cannot write %s: %s\n", capture_path,
                     std::strerror(errno));
        return 1;
    }
    auto capture = [&](uint8_t, std::span<const uint8_t> f) { pcap.write(f, real_ns()); };
    if (!io.open("ohca-switch")) {
        return 1;
    }
    io.set_max_frame(eth ? ecfg.max_frame : ohca::ib::kMaxFrameBytes);
    if (eth) {
        EthSwitch sw(ecfg);
        if (pcap.is_open()) {
            sw.set_capture(capture);
        }
        std::printf("ohca-switch: %u ports, Ethernet, %llu Mbit/s\n", ecfg.ports,
                    static_cast<unsigned long long>(ecfg.line_rate_bps / 1'000'000));
        std::fflush(stdout);
        return serve_timeline(sw, io, stats_path, timeline_path, timeline_ms);
    }
    Switch sw(cfg);
    if (pcap.is_open()) {
        sw.set_capture(capture);
    }
    std::printf("ohca-switch: %u ports, GUID 0x%016llx", cfg.ports,
                static_cast<unsigned long long>(cfg.guid));
    if (cfg.line_rate_bps != 0) {
        std::printf(", %llu Mbit/s",
                    static_cast<unsigned long long>(cfg.line_rate_bps / 1'000'000));
    }
    std::printf("\n");
    std::fflush(stdout);
    return serve_timeline(sw, io, stats_path, timeline_path, timeline_ms);
}
