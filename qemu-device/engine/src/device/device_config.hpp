// SPDX-License-Identifier: GPL-2.0-or-later
// What the board gives the device at creation (ohca_engine_config).
#pragma once

#include "link/link_layer.hpp"

#include <ohca/ohca_cmd.h>
#include <ohca_engine.h>

#include <array>
#include <cstdint>

namespace ohca {

struct DeviceConfig {
    std::array<uint8_t, 6> mac{};
    uint64_t node_guid = 0;
    uint64_t sys_image_guid = 0;
    bool link_up = true;
    uint32_t id_seed = 0;
    uint32_t max_qp = OHCA_ENGINE_DEFAULT_MAX_QP; // 1..OHCA_ENGINE_MAX_QP
    // What lies below the BTH on the wire; null: RoCEv2 (roce_v2_link()).
    // Tests choose another; the C API always has RoCEv2. It must outlive
    // the device.
    const LinkLayer *link = nullptr;
    // OHCA_LINK_IB: an InfiniBand port (ib_port.hpp, link/ib_link.hpp);
    // 'link' null then means the IB link layer.
    uint8_t link_layer = OHCA_LINK_ETH;
    uint64_t port_guid = 0;                               // InfiniBand; 0: node_guid
    uint32_t speed_mbps = OHCA_ENGINE_DEFAULT_SPEED_MBPS; // Ethernet: the link's speed
    uint32_t tx_burst_bytes = 0; // Ethernet: the transmit pacer's bucket (0: not paced)
};

} // namespace ohca
