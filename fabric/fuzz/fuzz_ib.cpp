// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer: everything fabric/ib parses from a peer — data frames (the
// link checks and a CA's full parse), flow control packets and credits,
// and MADs through the SMA/PMA core as a CA and as a switch; a frame's
// P_Key against a switch port's table, and VL arbitration over whatever
// tables the MADs left.
#include "ib/link.hpp"
#include "ib/mad.hpp"
#include "ib/packet.hpp"
#include "ib/sma.hpp"
#include "ib/vlarb.hpp"

#include <cstdlib>
#include <cstring>

using namespace ohca::ib;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::span<const uint8_t> in(data, size);
    Lrh lrh;
    (void)check_link(in, lrh);
    Packet p;
    if (parse(in, p) == PacketError::Ok) {
        // Invariants of an accepted packet.
        if (p.payload_offset > p.payload_end || p.payload_end > size) {
            std::abort();
        }
    }
    FlowControlPacket fcp;
    if (FlowControlPacket::read(in, fcp)) {
        LinkCredits c(64, 4);
        c.on_fcp(fcp);
        if (c.credit(fcp.vl) > kMaxCreditWindow) {
            std::abort();
        }
    }
    static SmaState ca = make_ca_state(SmaDefaults{});
    static SmaState sw = make_switch_state(SmaDefaults{}, 8);
    static Sma ca_sma(ca), sw_sma(sw);
    Mad m{};
    std::memcpy(m.data(), data, std::min(size, m.size()));
    Mad out{};
    ca_sma.process(m, 1, out);
    sw_sma.process(m, size > 256 ? static_cast<uint8_t>(data[256] % 9) : 0, out);
    ca_sma.clear_changes();
    sw_sma.clear_changes();
    if (sw.lft.size() != 0xC000 || ca.ports[1].pkeys.size() != 64) {
        std::abort();
    }
    for (const SmaPortState &sp : sw.ports) {
        if (sp.pkeys.size() != 64) {
            std::abort(); // a switch port's table keeps its size
        }
    }
    if (const auto pkey = frame_pkey(in)) {
        (void)pkey_in_table(*pkey, sw.ports[1].pkeys);
    }
    static VlArbiter arb;
    const auto ready = static_cast<uint16_t>(size > 1 ? data[0] | data[1] << 8 : 0);
    const auto vls = static_cast<uint8_t>(1 + (size > 2 ? data[2] % 8 : 0));
    const SmaPortState &out_port = sw.ports[1 + (size > 3 ? data[3] % 8 : 0)];
    for (int i = 0; i < 4; ++i) {
        const int vl = arb.pick(ready, out_port, vls);
        if (vl >= vls || (vl >= 0 && (ready >> vl & 1) == 0)) {
            std::abort(); // only a ready VL in operation, or none
        }
        if (vl >= 0) {
            arb.sent(size);
        }
    }
    return 0;
}
