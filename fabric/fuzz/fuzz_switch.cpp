// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer: byte streams from hostile peers into ohca-switch's ports.
// Input: chunks of [op][length][bytes...]. The op's low 2 bits pick the
// port, its high 3 bits the action: connect, disconnect, drain the output,
// advance time, raw stream bytes (x2), a frame the fuzzer seals (valid
// VCRC/ICRC, so the forwarding paths are reached), a flow control packet
// with a valid LPCRC. After each chunk the switch's memory must be within
// its bounds.
#include "ib/bytes.hpp"
#include "ib/link.hpp"
#include "ib/packet.hpp"
#include "switch.hpp"

#include <cstdlib>
#include <vector>

using namespace ohca::fabric;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    SwitchConfig cfg;
    cfg.ports = 3;
    cfg.vl_buffer_blocks = 80;
    cfg.lft_cap = 64; // small tables: more inputs per second
    cfg.mft_cap = 32;
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
    uint64_t now = 0;
    size_t i = 0;
    std::vector<uint8_t> buf;
    while (i + 2 <= size) {
        const uint8_t op = data[i];
        const size_t len = std::min<size_t>(data[i + 1] * 8u + 1, size - i - 2);
        const auto port = static_cast<uint8_t>(1 + (op & 3) % 3);
        const std::span<const uint8_t> chunk(data + i + 2, len);
        bool used = true;
        switch (op >> 5) {
        case 0:
            sw.connect(port, now);
            used = false;
            break;
        case 1:
            sw.disconnect(port, now);
            used = false;
            break;
        case 2:
            sw.consumed(port, sw.output(port).size(), now);
            used = false;
            break;
        case 3:
            now += static_cast<uint64_t>(len) * 10'000'000;
            sw.tick(now);
            used = false;
            break;
        case 6: {
            // A frame of 4k + 2 bytes from the chunk, sealed.
            size_t n = std::max<size_t>(len, ohca::ib::kMinRawFrameBytes);
            n = std::min(n - (n + 2) % 4, ohca::ib::kMaxFrameBytes);
            buf.assign(4 + n, 0);
            ohca::ib::put32(buf.data(), static_cast<uint32_t>(n));
            std::copy_n(chunk.begin(), std::min(n, len), buf.begin() + 4);
            ohca::ib::seal(std::span<uint8_t>(buf).subspan(4));
            sw.receive(port, buf, now);
            break;
        }
        case 7: {
            buf.assign(4 + ohca::ib::kLinkPacketBytes, 0);
            ohca::ib::put32(buf.data(), ohca::ib::kLinkPacketBytes);
            std::copy_n(chunk.begin(), std::min<size_t>(4, len), buf.begin() + 4);
            ohca::ib::FlowControlPacket f;
            f.op = static_cast<ohca::ib::FcOp>(buf[4] >> 4 & 1);
            f.fctbs = static_cast<uint16_t>((buf[4] & 0xF) << 8 | buf[5]);
            f.vl = static_cast<uint8_t>(buf[6] >> 4);
            f.fccl = static_cast<uint16_t>((buf[6] & 0xF) << 8 | buf[7]);
            f.write(std::span<uint8_t, 6>(buf.data() + 4, 6));
            sw.receive(port, buf, now);
            break;
        }
        default:
            sw.receive(port, chunk, now);
            break;
        }
        i += 2 + (used ? len : 0);
        for (uint8_t p = 1; p <= 3; ++p) {
            if (sw.queued_blocks(p) > cfg.vl_buffer_blocks * 4u ||
                sw.queued_packets(p) > cfg.vl_buffer_blocks * 4u + cfg.vl15_queue ||
                sw.output_bytes(p) > cfg.out_limit + 8 * 1024 + 64 * 12) {
                std::abort();
            }
        }
    }
    return 0;
}
