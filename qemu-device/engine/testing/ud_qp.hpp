// SPDX-License-Identifier: GPL-2.0-or-later
// A UD QP on an RdmaNode (its CQs, a registered buffer) and a SEND posted
// to a peer node's UD QP: what the tests that run UD beside RC share.
// Part of the shared test driver: a failed step is a failed check.
#pragma once

#include "rdma_node.hpp"

#include <cstdint>

namespace ohca::test {

inline constexpr uint32_t kUdQkey = 0x11111111;

struct UdQp {
    QpInfo q;
    uint32_t pd = 0;
    CqInfo scq, rcq;
    uint64_t buf = 0; // 64 KiB, registered for local write (key)
    uint32_t key = 0;
};

// A UD (or GSI) QP created in RESET: 64-entry queues, 256-byte send stride,
// 64-byte receive stride, its own PD, CQs and 64 KiB buffer.
CmdOutcome create_ud(RdmaNode &n, UdQp &u, uint8_t type = OHCA_QPT_UD, uint32_t uar = 0);
// A UD QP in RTS with 64-entry queues and Q_Key kUdQkey.
UdQp make_ud(RdmaNode &n);
// A signaled SEND of [addr, addr+len) to 'dqpn' on 'peer'; the doorbell
// rung with ohca_engine_db_write, or, with 'fast', as QEMU rings it
// (ohca_engine_doorbell_fast: the QP takes the first turn of a run).
void post_ud(RdmaNode &n, UdQp &u, const RdmaNode &peer, uint32_t dqpn, uint64_t wr_id,
             uint64_t addr, uint32_t len, bool fast = false);

} // namespace ohca::test
