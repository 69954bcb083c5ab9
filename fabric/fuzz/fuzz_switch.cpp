// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer: byte streams from hostile peers into ohca-switch's ports.
// Input: chunks of [port/op byte][length byte][bytes...]; ops connect,
// disconnect, receive, drain output, advance time. After each chunk the
// switch's memory must stay within its bounds.
#include "switch.hpp"

#include <cstdlib>

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
    // Make the ports Active and give routes, as an SM would, so data flows.
    auto &st = sw.sma_state();
    st.ports[0].info.lid = 1;
    for (uint8_t p = 0; p <= 3; ++p) {
        st.ports[p].info.port_state = ohca::ib::port_state::Active;
        st.lft[1u + p] = p;
    }
    uint64_t now = 0;
    size_t i = 0;
    while (i + 2 <= size) {
        const uint8_t op = data[i];
        const size_t len = std::min<size_t>(data[i + 1] * 8u + 1, size - i - 2);
        const auto port = static_cast<uint8_t>(1 + (op & 3) % 3);
        const std::span<const uint8_t> chunk(data + i + 2, len);
        switch (op >> 5) {
        case 0:
            sw.connect(port, now);
            break;
        case 1:
            sw.disconnect(port, now);
            break;
        case 2:
            sw.consumed(port, sw.output(port).size(), now);
            break;
        case 3:
            now += static_cast<uint64_t>(len) * 10'000'000;
            sw.tick(now);
            break;
        default:
            sw.receive(port, chunk, now);
            break;
        }
        i += 2 + (op >> 5 >= 4 ? len : 0);
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
