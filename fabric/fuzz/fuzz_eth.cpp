// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer: the Ethernet frame parser and ohca-switch's Ethernet mode
// under byte streams from hostile peers. Input: port_stream.hpp's chunks;
// its frame action (6) sends one whole frame from the chunk, its first
// bytes steered to a VLAN tag, IPv4/IPv6 or a PFC frame, so the deeper
// paths are reached. Every frame is also parsed on its own and, when
// ECN-capable, marked: an IPv4 header that verified must still verify.
// After each chunk the switch's memory must be within its bounds.
#include "eth/frame.hpp"
#include "eth_switch.hpp"
#include "port_stream.hpp"

#include <cstdlib>
#include <vector>

using namespace ohca::fabric;
namespace eth = ohca::eth;

namespace {

void check_parser(std::span<const uint8_t> frame) {
    eth::FrameInfo info;
    if (eth::parse(frame, info) != eth::FrameError::Ok) {
        return;
    }
    if (info.l3 > frame.size() || info.tags > eth::kMaxTags) {
        std::abort();
    }
    std::vector<uint8_t> copy(frame.begin(), frame.end());
    const bool ok4 = info.ip == 4 && eth::ip_checksum(std::span<const uint8_t>(copy).subspan(
                                         info.l3, (copy[info.l3] & 0xF) * 4u)) == 0;
    if (eth::mark_ce(copy, info)) {
        eth::FrameInfo again;
        if (eth::parse(copy, again) != eth::FrameError::Ok || again.ecn != eth::Ecn::Ce ||
            again.dscp != info.dscp) {
            std::abort();
        }
        if (ok4 && eth::ip_checksum(std::span<const uint8_t>(copy).subspan(
                       info.l3, (copy[info.l3] & 0xF) * 4u)) != 0) {
            std::abort();
        }
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    EthConfig cfg;
    cfg.ports = 3;
    cfg.buffer_bytes = 32 * 1024;
    cfg.headroom_bytes = 16 * 1024; // priorities 0-3 (pfc_enable) only
    cfg.mac_table = 16;
    cfg.mac_per_port = 8;
    cfg.mac_age_ns = 50'000'000;
    cfg.line_rate_bps = 100'000'000;
    cfg.ecn = true;
    cfg.kmin_bytes = 2'000;
    cfg.kmax_bytes = 8'000;
    cfg.pmax = 0.5;
    cfg.pfc_enable = 0x0F;
    cfg.xoff_bytes = 6'000;
    cfg.xon_bytes = 3'000;
    cfg.pause_quanta = 50;
    EthSwitch sw(cfg);
    for (uint8_t p = 1; p <= 3; ++p) {
        sw.connect(p, 0);
    }
    std::vector<uint8_t> buf;
    auto frame = [&](uint8_t port, std::span<const uint8_t> chunk, uint64_t now) {
        const size_t len = chunk.size();
        // One frame: the chunk, with a header steered by its first byte.
        const size_t n = std::max<size_t>(len, 14);
        buf.assign(4 + n, 0);
        const auto n32 = static_cast<uint32_t>(n);
        buf[0] = static_cast<uint8_t>(n32 >> 24);
        buf[1] = static_cast<uint8_t>(n32 >> 16);
        buf[2] = static_cast<uint8_t>(n32 >> 8);
        buf[3] = static_cast<uint8_t>(n32);
        std::copy_n(chunk.begin(), std::min(n, len), buf.begin() + 4);
        uint8_t *f = buf.data() + 4;
        f[6] &= 0xFE; // a unicast source, mostly
        size_t off = 12;
        const uint8_t steer = len > 0 ? chunk[0] : 0;
        if ((steer & 1) != 0 && n >= off + 6) {
            f[off] = 0x81, f[off + 1] = 0x00;
            off += 4;
        }
        static constexpr uint16_t kTypes[4] = {eth::kTypeIpv4, eth::kTypeIpv6, eth::kTypeMacControl,
                                               0x88B5};
        const uint16_t type = kTypes[steer >> 1 & 3];
        f[off] = static_cast<uint8_t>(type >> 8);
        f[off + 1] = static_cast<uint8_t>(type);
        if (type == eth::kTypeIpv4 && n > off + 2) {
            f[off + 2] = static_cast<uint8_t>(0x40 | (f[off + 2] & 0xF));
        } else if (type == eth::kTypeIpv6 && n > off + 2) {
            f[off + 2] = static_cast<uint8_t>(0x60 | (f[off + 2] & 0xF));
        } else if (type == eth::kTypeMacControl && n > off + 4) {
            f[off + 2] = 0x01, f[off + 3] = 0x01;
        }
        check_parser(std::span<const uint8_t>(f, n));
        sw.receive(port, buf, now);
    };
    auto raw = [&](uint8_t port, std::span<const uint8_t> chunk, uint64_t now) {
        check_parser(chunk);
        sw.receive(port, chunk, now);
    };
    auto check = [&] {
        if (sw.buffer_used() > cfg.buffer_bytes + cfg.headroom_bytes ||
            sw.mac_entries() > cfg.mac_table) {
            std::abort();
        }
        size_t queued = 0;
        for (uint8_t p = 1; p <= 3; ++p) {
            if (sw.output_bytes(p) > cfg.out_limit + eth::kMaxFrameBytes + 4) {
                std::abort();
            }
            for (uint8_t prio = 0; prio < eth::kPriorities; ++prio) {
                queued += sw.queue_bytes(p, prio);
            }
        }
        if (queued != sw.buffer_used()) {
            std::abort();
        }
    };
    drive_ports(
        sw, data, size, 100'000, frame,
        [](uint8_t, std::span<const uint8_t>, uint64_t) { return false; }, raw, check);
    return 0;
}
