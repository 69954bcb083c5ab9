// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer: byte streams from hostile peers into ohca-switch's ports.
// Input: port_stream.hpp's chunks; its frame action (6) sends a frame the
// fuzzer seals (valid VCRC/ICRC, so the forwarding paths are reached), its
// own action (7) a flow control packet with a valid LPCRC. After each chunk
// the switch's memory must be within its bounds.
#include "ib/bytes.hpp"
#include "ib/link.hpp"
#include "ib/packet.hpp"
#include "port_stream.hpp"
#include "switch.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <vector>

using namespace ohca::fabric;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    SwitchConfig cfg;
    cfg.ports = 3;
    cfg.vl_buffer_blocks = 80;
    cfg.lft_cap = 64; // small tables: more inputs per second
    cfg.mft_cap = 32;
    // Half the inputs run shaped, at 1 Mbit/s to 1.3 Gbit/s (the last
    // byte's choice, so the corpus's streams keep their meaning).
    if (size > 0 && (data[size - 1] & 1) != 0) {
        cfg.line_rate_bps = (1 + (data[size - 1] >> 1) * 10ull) * 1'000'000;
    }
    Switch sw(cfg);
    for (uint8_t p = 1; p <= 3; ++p) {
        sw.connect(p, 0);
    }
    // Ports Active and routes, as an SM would leave them, so data flows.
    auto &st = sw.sma_state();
    st.ports[0].info.lid = 1;
    st.ports[0].info.master_sm_lid = 2;
    for (uint8_t p = 0; p <= 3; ++p) {
        st.ports[p].info.port_state = ohca::ib::port_state::Active;
        st.lft[1u + p] = p;
    }
    st.mft[1 * st.mft_positions()] = 0x000E;
    // With the last byte's bit 1, partitions enforced both ways on every
    // port (each its own table, as opensm copies its CA's) and port 3's
    // outputs weighed by VLArbitration tables from the first bytes (any
    // VL and weight, both tables, any VLHighLimit).
    if (size > 0 && (data[size - 1] & 2) != 0) {
        const std::array<std::array<uint16_t, 2>, 3> pkeys{
            {{0xFFFF, 0x8001}, {0xFFFF, 0}, {0x8001, 0x0002}}};
        for (uint8_t p = 1; p <= 3; ++p) {
            auto &sp = st.ports[p];
            sp.info.partition_enforcement_inbound = true;
            sp.info.partition_enforcement_outbound = true;
            std::fill(sp.pkeys.begin(), sp.pkeys.end(), 0);
            std::copy(pkeys[p - 1].begin(), pkeys[p - 1].end(), sp.pkeys.begin());
        }
        auto &p3 = st.ports[3];
        for (size_t i = 0; i < 16 && i + 1 < size; i += 2) {
            p3.vlarb_low[i / 2] = {static_cast<uint8_t>(data[i] & 0xF), data[i + 1]};
            p3.vlarb_high[i / 2] = {static_cast<uint8_t>(data[i] >> 4), data[i + 1]};
        }
        p3.info.vl_high_limit = data[0];
    }
    std::vector<uint8_t> buf;
    // A frame of 4k + 2 bytes from the chunk, sealed.
    auto frame = [&](uint8_t port, std::span<const uint8_t> chunk, uint64_t now) {
        size_t n = std::max<size_t>(chunk.size(), ohca::ib::kMinRawFrameBytes);
        n = std::min(n - (n + 2) % 4, ohca::ib::kMaxFrameBytes);
        buf.assign(4 + n, 0);
        ohca::ib::put32(buf.data(), static_cast<uint32_t>(n));
        std::copy_n(chunk.begin(), std::min(n, chunk.size()), buf.begin() + 4);
        ohca::ib::seal(std::span<uint8_t>(buf).subspan(4));
        sw.receive(port, buf, now);
    };
    // A flow control packet with a valid LPCRC.
    auto fcp = [&](uint8_t port, std::span<const uint8_t> chunk, uint64_t now) {
        buf.assign(4 + ohca::ib::kLinkPacketBytes, 0);
        ohca::ib::put32(buf.data(), ohca::ib::kLinkPacketBytes);
        std::copy_n(chunk.begin(), std::min<size_t>(4, chunk.size()), buf.begin() + 4);
        ohca::ib::FlowControlPacket f;
        f.op = static_cast<ohca::ib::FcOp>(buf[4] >> 4 & 1);
        f.fctbs = static_cast<uint16_t>((buf[4] & 0xF) << 8 | buf[5]);
        f.vl = static_cast<uint8_t>(buf[6] >> 4);
        f.fccl = static_cast<uint16_t>((buf[6] & 0xF) << 8 | buf[7]);
        f.write(std::span<uint8_t, 6>(buf.data() + 4, 6));
        sw.receive(port, buf, now);
        return true;
    };
    auto raw = [&](uint8_t port, std::span<const uint8_t> chunk, uint64_t now) {
        sw.receive(port, chunk, now);
    };
    auto check = [&] {
        for (uint8_t p = 1; p <= 3; ++p) {
            if (sw.queued_blocks(p) > cfg.vl_buffer_blocks * 4u ||
                sw.queued_packets(p) > cfg.vl_buffer_blocks * 4u + cfg.vl15_queue ||
                sw.output_bytes(p) > cfg.out_limit + 8 * 1024 + 64 * 12) {
                std::abort();
            }
        }
    };
    drive_ports(sw, data, size, 10'000'000, frame, fcp, raw, check);
    return 0;
}
