// SPDX-License-Identifier: GPL-2.0-or-later
// Fuzzer (c): received frames. Setup from the input: device up or not, link,
// RX ring size and descriptors, port mode (promiscuous / MTU), GIDs. Then a
// sequence of structured frames (Ethernet, optional 802.1Q, IPv4 / IPv6 /
// other, UDP to 4791 most of the time, payload — the RoCE path will parse
// BTH and beyond) and raw frames, interleaved with descriptor posts, link
// changes, process() and resets. The frame buffer handed to the engine is
// an exact-size heap block, so ASan flags any read past the frame.
#include "fuzz_common.hpp"

#include <vector>

using namespace ohca::fuzz;

namespace {

void post_rx(Input &in, Driver &d) {
    ohca_eth_desc desc{};
    const uint32_t slot = d.ring_pi(OHCA_ETH_RING_RX);
    desc.addr = in.one_in(8) ? pick_addr(in, kBuffers) : kBuffers + 0x2400ull * (slot % 28);
    desc.len = in.one_in(8) ? in.u16() : static_cast<uint16_t>(in.one_in(2) ? 0x2400 : 1536);
    d.post_desc(OHCA_ETH_RING_RX, desc);
}

void add_gid(Input &in, Driver &d) {
    ohca_add_gid_in g{};
    in.bytes(g.gid, 16);
    if (in.flag()) {
        std::memset(g.gid, 0, 10);
        g.gid[10] = g.gid[11] = 0xff;
        g.type = OHCA_GID_TYPE_ROCE_V2_IPV4;
    } else {
        g.gid[0] = 0xfe;
        g.type = OHCA_GID_TYPE_ROCE_V2_IPV6;
    }
    g.index = static_cast<uint16_t>(in.below(16));
    g.port = 1;
    std::memcpy(g.mac, Host::kMac, 6);
    g.vlan_id = in.flag() ? 0xffff : static_cast<uint16_t>(in.below(4096));
    (void)d.cmd_in(OHCA_CMD_ADD_GID, g);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Input in(data, size);
    Host host;
    Driver d(host, !in.one_in(16));
    if (!in.one_in(16)) {
        d.bring_up(in.range(1, 10), in.range(2, kEqLogMax));
        if (!in.one_in(8)) {
            (void)d.create_ring(OHCA_ETH_RING_RX, in.range(2, kEthLogMax));
            for (uint32_t i = 0, n = in.below(40); i < n; ++i) {
                post_rx(in, d);
            }
            d.ring_eth(OHCA_ETH_RING_RX);
        }
        if (in.one_in(2)) {
            (void)d.set_port(OHCA_SET_PORT_RX_MODE | OHCA_SET_PORT_MTU, in.range(68, 9000),
                             in.below(4));
        }
        for (uint32_t i = 0, n = in.below(3); i < n; ++i) {
            add_gid(in, d);
        }
        d.wr(OHCA_REG_ETH_IRQ_MASK, in.below(2));
    }

    for (unsigned int ops = 0; !in.empty() && ops < 256; ++ops) {
        switch (in.below(16)) {
        default: { // a structured frame, in a buffer of exactly its size
            static uint8_t f[OHCA_ETH_MAX_FRAME + 64];
            const size_t n = build_frame(in, f, sizeof(f));
            std::vector<uint8_t> exact(f, f + n);
            (void)ohca_engine_receive_frame(d.engine(), exact.data(), exact.size());
            break;
        }
        case 8: { // a raw frame
            auto raw = in.take(in.below(2048));
            std::vector<uint8_t> exact(raw.begin(), raw.end());
            (void)ohca_engine_receive_frame(d.engine(), exact.data(), exact.size());
            break;
        }
        case 9: // a NULL frame with a length
            (void)ohca_engine_receive_frame(d.engine(), nullptr, in.u16());
            break;
        case 10: // more RX descriptors
            for (uint32_t i = 0, n = in.range(1, 8); i < n; ++i) {
                post_rx(in, d);
            }
            d.ring_eth(OHCA_ETH_RING_RX);
            break;
        case 11:
            d.drain(in.range(1, 4));
            (void)d.consume_eq(true);
            if (in.flag()) {
                d.wr(OHCA_REG_ETH_IRQ_MASK, 0);
            }
            break;
        case 12:
            ohca_engine_set_link(d.engine(), in.flag());
            break;
        case 13: { // the ring or a buffer vanishes
            if (in.flag()) {
                host.clear_hole();
            } else {
                const uint64_t lo =
                    in.flag() ? kRxRing + 16 * in.below(0x800) : kBuffers + in.below(kBuffersSize);
                host.set_hole(lo, lo + in.range(1, 0x4000), in.one_in(2));
            }
            break;
        }
        case 14:
            switch (in.below(4)) {
            case 0:
                (void)d.destroy_ring(OHCA_ETH_RING_RX);
                break;
            case 1:
                (void)d.create_ring(OHCA_ETH_RING_RX, in.range(2, kEthLogMax));
                break;
            case 2:
                (void)d.set_port(OHCA_SET_PORT_RX_MODE, 0, in.below(4));
                break;
            default:
                add_gid(in, d);
                break;
            }
            break;
        case 15:
            if (in.flag()) {
                ohca_engine_reset(d.engine());
            } else {
                d.bring_up(in.range(1, 10), in.range(2, kEqLogMax));
                (void)d.create_ring(OHCA_ETH_RING_RX, in.range(2, kEthLogMax));
            }
            break;
        }
    }
    d.check_recovers();
    return 0;
}
