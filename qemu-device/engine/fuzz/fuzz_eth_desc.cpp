// SPDX-License-Identifier: GPL-2.0-or-later
// Fuzzer (d): Ethernet TX/RX descriptors. The device is brought up with
// both rings (sizes, bases and IRQ mask from the input); then descriptors
// with fuzzed address / length / flags / reserved bytes are posted, the
// producer doorbells are rung with plausible or hostile indices, the guest
// rewrites descriptors and buffers behind the device's back, holes open
// under rings and buffers, rings are destroyed and recreated, and frames
// arrive for the RX ring.
#include "fuzz_common.hpp"

#include <vector>

using namespace ohca::fuzz;

namespace {

ohca_eth_desc make_desc(Input &in, uint32_t slot) {
    ohca_eth_desc desc{};
    if (in.one_in(4)) {
        desc.addr = pick_addr(in, kBuffers + 0x2400ull * (slot % 28));
    } else {
        desc.addr = kBuffers + 0x2400ull * (slot % 28) + in.below(64);
    }
    switch (in.below(8)) {
    case 0:
        desc.len = in.u16();
        break;
    case 1:
        desc.len = static_cast<uint16_t>(in.below(61)); // 0 .. min frame
        break;
    case 2:
        desc.len = static_cast<uint16_t>(OHCA_ETH_MAX_FRAME - 2 + in.below(5));
        break;
    default:
        desc.len = static_cast<uint16_t>(in.range(14, 1600));
        break;
    }
    if (in.one_in(8)) {
        desc.flags = in.u16();
        desc.rsvd = in.u32();
    }
    return desc;
}

uint32_t pi_value(Input &in, uint32_t pi) {
    switch (in.below(8)) {
    case 0:
        return in.u32();
    case 1:
        return in.u16();
    case 2:
        return (pi - in.range(1, 4)) & 0xffff; // backwards
    case 3:
        return (pi + in.range(1, 4096)) & 0xffff; // beyond the ring
    default:
        return pi & 0xffff;
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Input in(data, size);
    Host host;
    Driver d(host, !in.one_in(16));
    d.bring_up(in.range(1, 10), in.range(2, kEqLogMax));
    const bool tx = d.create_ring(OHCA_ETH_RING_TX, in.range(2, kEthLogMax));
    const bool rx = d.create_ring(OHCA_ETH_RING_RX, in.range(2, kEthLogMax));
    (void)tx;
    (void)rx;
    d.wr(OHCA_REG_ETH_IRQ_MASK, in.below(2));
    if (in.one_in(4)) {
        (void)d.set_port(OHCA_SET_PORT_RX_MODE, 0, OHCA_RX_MODE_PROMISC);
    }

    for (unsigned int ops = 0; !in.empty() && ops < 512; ++ops) {
        switch (in.below(16)) {
        case 0:
        case 1:
        case 2:
        case 3:
        case 4: { // TX descriptors + doorbell + process
            const uint32_t n = in.range(1, 8);
            for (uint32_t i = 0; i < n; ++i) {
                const uint32_t slot = d.ring_pi(OHCA_ETH_RING_TX);
                ohca_eth_desc desc = make_desc(in, slot);
                if (Host::in_arena(desc.addr, 64) && !in.one_in(4)) {
                    uint8_t hdr[64];
                    in.bytes(hdr, sizeof(hdr));
                    host.put_bytes(desc.addr, hdr, sizeof(hdr));
                }
                d.post_desc(OHCA_ETH_RING_TX, desc);
            }
            if (in.one_in(4)) {
                d.wr(OHCA_REG_ETH_TX_PI, pi_value(in, d.ring_pi(OHCA_ETH_RING_TX)));
            } else {
                d.ring_eth(OHCA_ETH_RING_TX);
            }
            if (!in.one_in(4)) {
                d.drain(in.range(1, 4));
            }
            break;
        }
        case 5:
        case 6: { // RX descriptors + doorbell
            const uint32_t n = in.range(1, 8);
            for (uint32_t i = 0; i < n; ++i) {
                d.post_desc(OHCA_ETH_RING_RX, make_desc(in, d.ring_pi(OHCA_ETH_RING_RX)));
            }
            if (in.one_in(4)) {
                d.wr(OHCA_REG_ETH_RX_PI, pi_value(in, d.ring_pi(OHCA_ETH_RING_RX)));
            } else {
                d.ring_eth(OHCA_ETH_RING_RX);
            }
            break;
        }
        case 7:
        case 8: { // frames for the RX ring
            static uint8_t f[OHCA_ETH_MAX_FRAME + 64];
            const size_t n = build_frame(in, f, sizeof(f));
            std::vector<uint8_t> exact(f, f + n);
            (void)ohca_engine_receive_frame(d.engine(), exact.data(), exact.size());
            break;
        }
        case 9: { // the guest rewrites a descriptor behind the device's back
            const auto type = static_cast<uint8_t>(in.below(2));
            const unsigned int log = d.ring_log(type);
            if (log != 0) {
                ohca_eth_desc desc{};
                in.bytes(&desc, sizeof(desc));
                host.put(d.ring_base(type) + 16ull * in.below(1u << log), desc);
            }
            break;
        }
        case 10: { // holes under rings or buffers
            switch (in.below(4)) {
            case 0:
                host.clear_hole();
                break;
            case 1: {
                const uint64_t lo = kTxRing + 16 * in.below(0x800);
                host.set_hole(lo, lo + 16 * in.range(1, 64), in.one_in(2));
                break;
            }
            case 2: {
                const uint64_t lo = kRxRing + 16 * in.below(0x800);
                host.set_hole(lo + in.below(16), lo + 16 * in.range(1, 64), in.one_in(2));
                break;
            }
            default: {
                const uint64_t lo = kBuffers + in.below(kBuffersSize);
                host.set_hole(lo, lo + in.range(1, 0x4000), in.one_in(2));
                break;
            }
            }
            break;
        }
        case 11: { // destroy / recreate a ring (with a fuzzed base sometimes)
            const auto type = static_cast<uint8_t>(in.below(2));
            if (in.flag()) {
                (void)d.destroy_ring(type);
            } else if (in.one_in(4)) {
                ohca_create_eth_ring_in c{};
                c.type = type;
                c.log_size = static_cast<uint8_t>(in.range(2, 12));
                c.base = pick_addr(in, d.ring_base(type), 16);
                (void)d.cmd_in(OHCA_CMD_CREATE_ETH_RING, c);
            } else {
                (void)d.create_ring(type, in.range(2, kEthLogMax));
            }
            break;
        }
        case 12: // IRQ mask / EQ
            d.wr(OHCA_REG_ETH_IRQ_MASK, in.below(3));
            (void)d.consume_eq(in.flag());
            break;
        case 13:
            ohca_engine_set_link(d.engine(), in.flag());
            break;
        case 14:
            d.drain(in.range(1, 8));
            break;
        case 15:
            if (in.one_in(4)) {
                ohca_engine_reset(d.engine());
            } else if (in.flag()) {
                d.bring_up(in.range(1, 10), in.range(2, kEqLogMax));
                (void)d.create_ring(OHCA_ETH_RING_TX, in.range(2, kEthLogMax));
                (void)d.create_ring(OHCA_ETH_RING_RX, in.range(2, kEthLogMax));
            } else {
                ohca_engine_process(d.engine());
            }
            break;
        }
    }
    d.check_recovers();
    return 0;
}
