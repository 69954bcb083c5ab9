// SPDX-License-Identifier: GPL-2.0-or-later
// Link packets and credit-based link-level flow control (IBTA Vol 1 §7.9).
//
// A flow control packet (FCP) is 6 bytes:
//
//   byte 0  Op (4 bits: 0 normal, 1 initialization) | FCTBS[11:8]
//   byte 1  FCTBS[7:0]   flow control total blocks sent on this VL
//   byte 2  VL (4 bits) | FCCL[11:8]
//   byte 3  FCCL[7:0]    flow control credit limit for this VL
//   byte 4-5 LPCRC      the VCRC's CRC-16 over bytes 0-3, LSB first
//
// On ohca's stream transports a frame of exactly 6 bytes is a link packet;
// every other frame is a data packet (the smallest is 22 bytes).
//
// Credits count 64-byte blocks with 12-bit wrapping counters. The sender
// keeps FCTBS (blocks sent, per VL) and the peer's last FCCL; it may send
// a packet of N blocks when (FCCL - (FCTBS + N)) mod 4096 <= 2048; here
// the credit D = (FCCL - FCTBS) mod 4096 counts only when D <= 2048 (an
// honest receiver never advertises more; a larger D is a limit behind us,
// whatever N), and then N <= D. The
// receiver keeps ABR (adjusted blocks received: set to FCTBS by every FCP,
// advanced by every data packet) and advertises FCCL = ABR + free blocks
// (at most 2048 ahead). VL15 is not flow controlled.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace ohca::ib {

inline constexpr size_t kLinkPacketBytes = 6;
inline constexpr uint32_t kBlockBytes = 64;
inline constexpr uint16_t kCreditMask = 0xFFF; // 12-bit counters
inline constexpr uint16_t kMaxCreditWindow = 2048;
inline constexpr uint8_t kMaxDataVls = 15;       // VL0..VL14
inline constexpr uint16_t kMaxPacketBlocks = 66; // ceil(4222 / 64)

inline constexpr bool is_link_packet(size_t frame_bytes) {
    return frame_bytes == kLinkPacketBytes;
}
// Blocks a frame (LRH..VCRC) uses in a receive buffer: ceil(bytes / 64).
inline constexpr uint16_t blocks_for(size_t frame_bytes) {
    return static_cast<uint16_t>((frame_bytes + kBlockBytes - 1) / kBlockBytes);
}

enum class FcOp : uint8_t { Normal = 0, Init = 1 };

struct FlowControlPacket {
    FcOp op = FcOp::Normal;
    uint16_t fctbs = 0; // 12 bits
    uint8_t vl = 0;     // 4 bits, a data VL
    uint16_t fccl = 0;  // 12 bits

    void write(std::span<uint8_t, kLinkPacketBytes> out) const;
    // False for a wrong size, an unknown Op, VL15 (never flow controlled)
    // or a bad LPCRC.
    static bool read(std::span<const uint8_t> in, FlowControlPacket &out);
};

// One link's flow-control state, both directions, for the data VLs.
// Counters are 12 bits; every method is O(1).
class LinkCredits {
  public:
    // buffer_blocks: the receive buffer of each data VL (set_buffer()
    // changes one), in 64-byte blocks; vls: how many data VLs are
    // operational (1..15).
    LinkCredits(uint16_t buffer_blocks, uint8_t vls);

    // ---- sender side ----
    // May a packet of `blocks` blocks go out on `vl` now? VL15: always.
    [[nodiscard]] bool may_send(uint8_t vl, uint16_t blocks) const;
    // Account a packet sent on `vl` (VL15: nothing).
    void on_sent(uint8_t vl, uint16_t blocks);
    // Blocks the peer still has room for on `vl` (0 while it has sent no FCP).
    [[nodiscard]] uint16_t credit(uint8_t vl) const;

    // ---- receiver side ----
    // A data packet of `blocks` arrived on `vl`: false when it does not fit
    // in the buffer (the peer sent beyond its credit: an overrun, to drop
    // and count). VL15 and non-operational VLs return false too; the owner
    // handles VL15 apart.
    [[nodiscard]] bool on_received(uint8_t vl, uint16_t blocks);
    // A packet of `blocks` left the buffer of `vl`: credit to return.
    void on_released(uint8_t vl, uint16_t blocks);
    // The receive buffer of `vl` from now on (a receiver that shares one
    // pool among the VLs in operation), with an FCP pending. FCCL follows
    // it, down too: change it only while no data flows (a port in Init,
    // as when the SM sets OperationalVLs), or a peer may send against the
    // larger limit it had.
    void set_buffer(uint8_t vl, uint16_t blocks);
    [[nodiscard]] uint16_t buffer(uint8_t vl) const { return vl < vls_ ? rx_[vl].buffer : 0; }
    // The peer's FCP: its FCCL limits our sends, its FCTBS resets our ABR.
    // Returns false (and changes nothing) for a VL that is not operational.
    bool on_fcp(const FlowControlPacket &fcp);
    // The FCCL we advertise on `vl`.
    [[nodiscard]] uint16_t fccl(uint8_t vl) const;
    [[nodiscard]] uint16_t occupied(uint8_t vl) const { return rx_[vl].occupied; }

    // ---- when to send FCPs ----
    // An FCP is pending for `vl` after its buffer drained (and for every VL
    // after reset() or mark_all_pending(), which the owner calls from a
    // periodic timer so a lost FCP is repaired).
    [[nodiscard]] bool fcp_pending(uint8_t vl) const { return vl < vls_ && rx_[vl].pending; }
    FlowControlPacket take_fcp(uint8_t vl, FcOp op = FcOp::Normal);
    void mark_all_pending();

    // Link (re)initialization: every counter to zero, no credit from the
    // peer until its first FCP, an FCP pending on every VL.
    void reset();

    // The counters both ends keep in step on a VL, for a save of the
    // link's owner (the device's migration). The receive buffer is not
    // among them: its packets are dropped with the owner's other frames
    // in flight, which the FCTBS/ABR resynchronization absorbs.
    struct VlCounters {
        uint16_t fctbs = 0; // blocks sent
        uint16_t fccl = 0;  // the peer's last limit
        bool heard = false; // an FCP arrived since reset
        uint16_t abr = 0;   // blocks received
    };
    [[nodiscard]] VlCounters counters(uint8_t vl) const;
    // Restores a VL's counters with an empty buffer and an FCP pending (the
    // peer learns where this end stands); false, changing nothing, for a VL
    // that is not operational or a counter wider than 12 bits.
    bool restore(uint8_t vl, const VlCounters &c);

    [[nodiscard]] uint8_t vls() const { return vls_; }

  private:
    struct Tx {
        uint16_t fctbs = 0;
        uint16_t fccl = 0;
        bool heard = false; // an FCP arrived since reset
    };
    struct Rx {
        uint16_t abr = 0;
        uint16_t occupied = 0;
        uint16_t buffer = 0;
        bool pending = true;
    };
    uint8_t vls_;
    std::array<Tx, kMaxDataVls> tx_{};
    std::array<Rx, kMaxDataVls> rx_{};
};

} // namespace ohca::ib
