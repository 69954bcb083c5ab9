// SPDX-License-Identifier: GPL-2.0-or-later
// The input both switch fuzzers read: chunks of [op][length][bytes...],
// the length byte counting 8-byte units (plus one). The op's low 2 bits
// pick port 1-3, its high 3 bits the action: 0 connect, 1 disconnect,
// 2 drain the port's output, 3 advance time (length x 'tick_ns'), 6 one
// whole frame the fuzzer builds from the chunk ('frame'), 7 the mode's
// own action ('op7'; false: the chunk goes in as raw bytes), anything
// else raw stream bytes ('raw'). 'check' runs after every chunk: the
// switch's memory within its bounds. The caller connects the ports
// first.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

namespace ohca::fabric {

template <class Switch, class Frame, class Op7, class Raw, class Check>
void drive_ports(Switch &sw, const uint8_t *data, size_t size, uint64_t tick_ns, Frame frame,
                 Op7 op7, Raw raw, Check check) {
    uint64_t now = 0;
    size_t i = 0;
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
            now += static_cast<uint64_t>(len) * tick_ns;
            sw.tick(now);
            used = false;
            break;
        case 6:
            frame(port, chunk, now);
            break;
        case 7:
            if (!op7(port, chunk, now)) {
                raw(port, chunk, now);
            }
            break;
        default:
            raw(port, chunk, now);
            break;
        }
        i += 2 + (used ? len : 0);
        check();
    }
}

} // namespace ohca::fabric
