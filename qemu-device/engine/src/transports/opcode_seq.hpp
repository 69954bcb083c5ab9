// SPDX-License-Identifier: GPL-2.0-or-later
// The next-opcode rule RC and UC share (IBTA 9.8.3.1 and its UC
// counterpart): a request packet either starts a message (FIRST, ONLY,
// and READ and atomics, which are single packets) when none is in
// progress, or continues one of its own kind (MIDDLE, LAST). One table,
// by the operation's RC number (a UC opcode & 0x1f), for both responders.
#pragma once

#include "link/roce_packet.hpp"
#include "objects/rdma_objects.hpp"

#include <array>
#include <cstdint>

namespace ohca {

struct OpcodeSeq {
    bool starts = false;              // may begin a message
    bool ends = false;                // a SEND's or WRITE's LAST or ONLY
    bool imm = false;                 // carries immediate data
    Qp::InMsg kind = Qp::InMsg::None; // the message it belongs to (None: READ, atomics)
};

namespace opseq_detail {
constexpr std::array<OpcodeSeq, 32> make_table() {
    using M = Qp::InMsg;
    std::array<OpcodeSeq, 32> t{};
    t[rc::kSendFirst] = {true, false, false, M::Send};
    t[rc::kSendMiddle] = {false, false, false, M::Send};
    t[rc::kSendLast] = {false, true, false, M::Send};
    t[rc::kSendLastImm] = {false, true, true, M::Send};
    t[rc::kSendOnly] = {true, true, false, M::Send};
    t[rc::kSendOnlyImm] = {true, true, true, M::Send};
    t[rc::kSendLastInv] = {false, true, false, M::Send};
    t[rc::kSendOnlyInv] = {true, true, false, M::Send};
    t[rc::kWriteFirst] = {true, false, false, M::Write};
    t[rc::kWriteMiddle] = {false, false, false, M::Write};
    t[rc::kWriteLast] = {false, true, false, M::Write};
    t[rc::kWriteLastImm] = {false, true, true, M::Write};
    t[rc::kWriteOnly] = {true, true, false, M::Write};
    t[rc::kWriteOnlyImm] = {true, true, true, M::Write};
    t[rc::kReadRequest] = {true, false, false, M::None};
    t[rc::kCompareSwap] = {true, false, false, M::None};
    t[rc::kFetchAdd] = {true, false, false, M::None};
    t[rc::kAtomicWrite] = {true, false, false, M::None};
    return t;
}
inline constexpr std::array<OpcodeSeq, 32> kTable = make_table();
} // namespace opseq_detail

// A request opcode's place in the sequence (RC numbering; UC's & 0x1f).
[[nodiscard]] constexpr const OpcodeSeq &opcode_seq(uint8_t op) {
    return opseq_detail::kTable[op & 0x1f];
}

// Whether a packet of 'op' may come while 'in_msg' is in progress.
[[nodiscard]] constexpr bool opcode_follows(Qp::InMsg in_msg, uint8_t op) {
    const OpcodeSeq &s = opcode_seq(op);
    return s.starts ? in_msg == Qp::InMsg::None : in_msg == s.kind;
}

} // namespace ohca
