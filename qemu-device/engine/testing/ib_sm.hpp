// SPDX-License-Identifier: GPL-2.0-or-later
// The test as the subnet manager of an InfiniBand port: SMPs through
// MAD_IFC, as the driver hands down the SM's, and the bring-up opensm
// does (LID, SM LID, ARMED, ACTIVE).
#pragma once

#include "ib/mad.hpp"
#include "rdma_node.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>

namespace ohca::test {

// One SMP through MAD_IFC; 'result' gets MAD_IFC's result word.
ib::Smp smp(RdmaNode &n, uint8_t method, uint16_t attr, uint32_t mod, const ib::SmpData &data,
            uint32_t *result = nullptr);
// 'req' through MAD_IFC: the host's own (slid 0), or with slid as one
// from the wire (OHCA_MAD_IFC_NET).
ib::Smp mad_ifc(RdmaNode &n, const ib::Smp &req, uint16_t slid, uint32_t *result = nullptr);
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
    // An RC QP on each port with a buffer of 'bytes' (A's filled with
    // pattern(k), B's zeroed), connected to each other at MTU 4096.
    std::pair<Side, Side> rc(size_t bytes, unsigned int qp_log,
                             const std::function<uint8_t(size_t)> &pattern) {
        Side sa = make_side(a, bytes, qp_log, pattern);
        Side sb = make_side(b, bytes, qp_log, [](size_t) { return uint8_t{0}; });
        a.connect(sa.qp, sb.qp.qpn, b, 5);
        b.connect(sb.qp, sa.qp.qpn, a, 5);
        return {sa, sb};
    }
};

} // namespace ohca::test
