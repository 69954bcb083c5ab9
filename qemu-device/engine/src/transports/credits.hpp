// SPDX-License-Identifier: GPL-2.0-or-later
// RC end-to-end credits (IBTA 9.7.7.2): the responder's ACKs carry, in the
// AETH's 5-bit credit field, a code for the receive WQEs posted and not yet
// consumed; the requester may start a message that consumes one (SEND,
// RDMA WRITE with immediate) only while its SSN is within the limit, MSN +
// credits, of the latest AETH. Code 0x1f: the responder gives no credits
// (a QP on an SRQ, or Linux rxe always): the requester is not limited.
#pragma once

#include "link/roce_packet.hpp"
#include "objects/rdma_objects.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>

namespace ohca::credits {

inline constexpr uint8_t kInvalid = 0x1f;

// The count each code stands for (IBTA's table: 0-4, then two values per
// power of two, up to 32768).
inline constexpr std::array<uint16_t, 31> kCount = {
    0,   1,   2,   3,   4,    6,    8,    12,   16,   24,   32,   48,    64,    96,    128,  192,
    256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768};

// The largest code whose count is at most 'n': a responder never
// advertises more receive WQEs than are posted. O(1) (every ACK takes
// one): from 4 on the codes go two per power of two, 2^b at code 2b and
// 1.5 x 2^b at 2b + 1, up to code 30 (32768).
[[nodiscard]] constexpr uint8_t code_for(uint32_t n) {
    if (n < 4) {
        return static_cast<uint8_t>(n);
    }
    const auto b = static_cast<uint32_t>(std::bit_width(n) - 1); // 2^b <= n
    return static_cast<uint8_t>(
        std::min<uint32_t>(2 * b + ((n >> (b - 1)) & 1), kCount.size() - 1));
}
static_assert(code_for(0) == 0 && code_for(5) == 4 && code_for(6) == 5 && code_for(7) == 5 &&
              code_for(32767) == 29 && code_for(32768) == 30 && code_for(UINT32_MAX) == 30);

// Whether a message of this WR opcode consumes a receive WQE at the
// responder (the only ones credits limit).
[[nodiscard]] constexpr bool consumes_recv(uint8_t wr_opcode) {
    return wr_opcode == OHCA_WR_SEND || wr_opcode == OHCA_WR_SEND_IMM ||
           wr_opcode == OHCA_WR_SEND_INV || wr_opcode == OHCA_WR_RDMA_WRITE_IMM;
}

// Whether the responder of this QP generates credits: an RC QP with its
// own receive queue (a QP on an SRQ, an XRC target: "invalid"). With a
// doorbell record the count is the record's, read when an ACK is built;
// the provider rings the RQ doorbell too when it posts into an RQ it saw
// empty (the device may have sent zero credits: the doorbell has it send
// the update), and a requester still waiting after a record-only post
// asks with its ACK request one RTO later (rc_credit_timeouts).
[[nodiscard]] inline bool generates(const Qp &qp) {
    return qp.type == OHCA_QPT_RC && qp.srqn == 0;
}

} // namespace ohca::credits
