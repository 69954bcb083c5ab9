// SPDX-License-Identifier: GPL-2.0-or-later
// The Toeplitz hash and its input (rss.hpp). Per frame: one parse of the
// headers (flow_key) and at most 36 x 8 key-window steps; no allocation.
#include "transports/rss.hpp"

#include "transports/raw_eth.hpp"

#include <cstring>

namespace ohca {

uint32_t toeplitz_hash(std::span<const uint8_t> key, std::span<const uint8_t> input) {
    if (key.size() < 4 || input.size() + 4 > key.size()) {
        return 0; // callers never ask for more than the key covers
    }
    // 'window' holds the 32 key bits starting at the input bit looked at.
    uint32_t window = (uint32_t{key[0]} << 24) | (uint32_t{key[1]} << 16) |
                      (uint32_t{key[2]} << 8) | uint32_t{key[3]};
    uint32_t hash = 0;
    for (size_t i = 0; i < input.size(); ++i) {
        for (int bit = 7; bit >= 0; --bit) {
            if (((input[i] >> bit) & 1u) != 0) {
                hash ^= window;
            }
            window = (window << 1) | ((key[i + 4] >> bit) & 1u);
        }
    }
    return hash;
}

size_t rss_input(std::span<const uint8_t> frame, uint32_t fields, std::array<uint8_t, 36> &out) {
    ohca_flow_spec k;
    flow_key(frame, k);
    size_t n = 0;
    auto put = [&](const void *p, size_t len) {
        std::memcpy(out.data() + n, p, len);
        n += len;
    };
    if (k.ip_version == 4) {
        if ((fields & OHCA_RSS_SRC_IPV4) != 0) {
            put(k.src_ip + 12, 4);
        }
        if ((fields & OHCA_RSS_DST_IPV4) != 0) {
            put(k.dst_ip + 12, 4);
        }
    } else if (k.ip_version == 6) {
        if ((fields & OHCA_RSS_SRC_IPV6) != 0) {
            put(k.src_ip, 16);
        }
        if ((fields & OHCA_RSS_DST_IPV6) != 0) {
            put(k.dst_ip, 16);
        }
    }
    // flow_key leaves the ports 0 when the frame has none (or is a later
    // fragment): then they are not part of the input.
    const bool ports = k.src_port != 0 || k.dst_port != 0;
    uint32_t src = 0;
    uint32_t dst = 0;
    if (ports && k.ip_proto == OHCA_FLOW_IP_PROTO_TCP) {
        src = OHCA_RSS_SRC_PORT_TCP;
        dst = OHCA_RSS_DST_PORT_TCP;
    } else if (ports && k.ip_proto == OHCA_FLOW_IP_PROTO_UDP) {
        src = OHCA_RSS_SRC_PORT_UDP;
        dst = OHCA_RSS_DST_PORT_UDP;
    }
    if ((fields & src) != 0) {
        put(&k.src_port, 2); // network order, as in the frame
    }
    if ((fields & dst) != 0) {
        put(&k.dst_port, 2);
    }
    return n;
}

uint32_t rss_hash(std::span<const uint8_t> frame, uint32_t fields, const RssKey &key) {
    std::array<uint8_t, 36> in{};
    const size_t n = rss_input(frame, fields, in);
    return toeplitz_hash(key, std::span<const uint8_t>(in.data(), n));
}

bool rss_fields_valid(uint32_t fields) {
    constexpr uint32_t v4 = OHCA_RSS_SRC_IPV4 | OHCA_RSS_DST_IPV4;
    constexpr uint32_t v6 = OHCA_RSS_SRC_IPV6 | OHCA_RSS_DST_IPV6;
    constexpr uint32_t tcp = OHCA_RSS_SRC_PORT_TCP | OHCA_RSS_DST_PORT_TCP;
    constexpr uint32_t udp = OHCA_RSS_SRC_PORT_UDP | OHCA_RSS_DST_PORT_UDP;
    return fields != 0 && (fields & ~uint32_t{OHCA_RSS_ALL_FIELDS}) == 0 &&
           !((fields & v4) != 0 && (fields & v6) != 0) &&
           !((fields & tcp) != 0 && (fields & udp) != 0);
}

} // namespace ohca
