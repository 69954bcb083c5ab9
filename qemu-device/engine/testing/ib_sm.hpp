// SPDX-License-Identifier: GPL-2.0-or-later
// The test as the subnet manager of an InfiniBand port: SMPs through
// MAD_IFC, as the driver hands down the SM's, and the bring-up opensm
// does (LID, SM LID, ARMED, ACTIVE).
#pragma once

#include "ib/mad.hpp"
#include "rdma_node.hpp"

#include <cstdint>

namespace ohca::test {

// One SMP through MAD_IFC; 'result' gets MAD_IFC's result word.
ib::Smp smp(RdmaNode &n, uint8_t method, uint16_t attr, uint32_t mod, const ib::SmpData &data,
            uint32_t *result = nullptr);
ib::PortInfo port_info(RdmaNode &n);
// PortInfo Set of 'pi'; the response's status.
uint16_t set_port_info(RdmaNode &n, const ib::PortInfo &pi);
// What opensm does to a CA port in INIT: LID, SM LID 1, ARMED, ACTIVE.
void sm_bring_up(RdmaNode &n, uint16_t lid);

// Two InfiniBand ports back to back, brought up by the test's SM (LIDs
// 0x10 and 0x20), their links' first FCPs exchanged: credit both ways.
struct IbPair {
    RdmaNode a{1, false, 0, 10, 0, nullptr, OHCA_LINK_IB};
    RdmaNode b{2, false, 0, 10, 0, nullptr, OHCA_LINK_IB};
    IbPair() {
        sm_bring_up(a, 0x10);
        sm_bring_up(b, 0x20);
        pump(a, b);
    }
};

} // namespace ohca::test
