// SPDX-License-Identifier: GPL-2.0-or-later
// InfiniBand data packets (IBTA Vol 1 ch. 5, 7, 8, 9): the Local Route
// Header (LRH), the Global Route Header (GRH), the Base Transport Header
// (BTH), and the two CRCs that end every packet.
//
//   frame = LRH(8) [GRH(40)] [BTH(12) ... payload, pad] [ICRC(4)] VCRC(2)
//
// LRH.PktLen counts 4-byte words from the first byte of the LRH to the
// last byte of the ICRC (the VCRC is not counted), so a frame is always
// 4 * PktLen + 2 bytes. Raw packets (LNH 0 or 1) have no ICRC.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace ohca::ib {

inline constexpr size_t kLrhBytes = 8;
inline constexpr size_t kGrhBytes = 40;
inline constexpr size_t kBthBytes = 12;
inline constexpr size_t kIcrcBytes = 4;
inline constexpr size_t kVcrcBytes = 2;
// All headers + ICRC + VCRC of the largest packet (IBTA: 126 bytes).
inline constexpr size_t kMaxHeaderBytes = 126;
inline constexpr size_t kMaxMtu = 4096;
// The largest frame on a link (LRH..VCRC), 4222 bytes (PktLen 1055).
inline constexpr size_t kMaxFrameBytes = kMaxMtu + kMaxHeaderBytes;
// The smallest: LRH + BTH + ICRC (+ VCRC); raw: LRH + 12 bytes (+ VCRC).
inline constexpr size_t kMinIbaFrameBytes = kLrhBytes + kBthBytes + kIcrcBytes + kVcrcBytes;
inline constexpr size_t kMinRawFrameBytes = 4 * 5 + kVcrcBytes;

inline constexpr uint8_t kLVer = 0;                // the only link version
inline constexpr uint8_t kVl15 = 15;               // subnet management VL
inline constexpr uint8_t kGrhIpVersion = 6;        // GRH.IPVer
inline constexpr uint8_t kGrhNextHeaderBth = 0x1B; // GRH.NxtHdr: a BTH follows
inline constexpr uint16_t kPermissiveLid = 0xFFFF;
inline constexpr uint16_t kMulticastLidFirst = 0xC000;
inline constexpr uint16_t kMulticastLidLast = 0xFFFE;
inline constexpr uint32_t kQpnMask = 0xFFFFFF;

inline constexpr bool is_multicast_lid(uint16_t lid) {
    return lid >= kMulticastLidFirst && lid <= kMulticastLidLast;
}

// LRH.LNH: what follows the LRH.
enum class Lnh : uint8_t {
    Raw = 0,       // raw packet, no IBA transport
    RawIpv6 = 1,   // raw IPv6 datagram
    IbaLocal = 2,  // BTH follows
    IbaGlobal = 3, // GRH, then BTH
};

struct Lrh {
    uint8_t vl = 0; // 4 bits
    uint8_t lver = kLVer;
    uint8_t sl = 0; // 4 bits
    Lnh lnh = Lnh::IbaLocal;
    uint16_t dlid = 0;
    uint16_t pkt_len = 0; // 11 bits, 4-byte words LRH..ICRC
    uint16_t slid = 0;

    static Lrh read(const uint8_t *p);
    void write(uint8_t *p) const; // reserved bits written as zero
};

struct Grh {
    uint8_t ip_ver = kGrhIpVersion;
    uint8_t tclass = 0;
    uint32_t flow_label = 0; // 20 bits
    uint16_t pay_len = 0;    // bytes after the GRH up to and including the ICRC
    uint8_t next_hdr = kGrhNextHeaderBth;
    uint8_t hop_limit = 0;
    std::array<uint8_t, 16> sgid{};
    std::array<uint8_t, 16> dgid{};

    static Grh read(const uint8_t *p);
    void write(uint8_t *p) const;
};

struct Bth {
    uint8_t opcode = 0;
    bool solicited = false; // SE
    bool mig_req = false;   // M
    uint8_t pad = 0;        // PadCnt, 2 bits
    uint8_t tver = 0;       // 4 bits
    uint16_t pkey = 0;
    uint8_t resv8a = 0;   // variant: a switch may change it
    uint32_t dest_qp = 0; // 24 bits
    bool ack_req = false;
    uint32_t psn = 0; // 24 bits

    static Bth read(const uint8_t *p);
    void write(uint8_t *p) const;
};

// Why a frame was refused (the receiver's checks, IBTA §7.11 / §9.6).
enum class PacketError : uint8_t {
    Ok,
    TooShort,       // shorter than the smallest packet of its kind
    TooLong,        // longer than kMaxFrameBytes
    LengthMismatch, // 4 * LRH.PktLen + 2 != frame size
    BadLVer,        // LRH.LVer != 0
    BadVcrc,
    BadIcrc,
    BadGrh,     // IPVer != 6, NxtHdr != BTH, PayLen wrong
    BadTver,    // BTH.TVer != 0
    BadPad,     // PadCnt longer than what follows the BTH
    Vl15NotQp0, // VL15 carries QP0 only (and no raw packets)
    Qp0NotVl15, // QP0 is reached on VL15 only
};
const char *to_string(PacketError e);

// A frame that passed parse(): the headers and where things are.
struct Packet {
    Lrh lrh;
    bool has_grh = false;
    Grh grh;
    bool has_bth = false;
    Bth bth;
    size_t bth_offset = 0;     // valid when has_bth
    size_t payload_offset = 0; // first byte after the BTH (raw: after the LRH)
    size_t payload_end = 0;    // offset of the ICRC (raw: of the VCRC), pad included
};

// What every port checks before it uses the LRH (a switch's whole check):
// frame size bounds, PktLen against the size, LVer, VCRC.
PacketError check_link(std::span<const uint8_t> frame, Lrh &lrh);
// Everything a channel adapter checks: check_link(), then the GRH, the
// BTH, the ICRC and the VL15/QP0 rule. Bounded: one pass over the frame.
PacketError parse(std::span<const uint8_t> frame, Packet &out);

// The ICRC of a packet (LRH..last payload byte, without ICRC and VCRC),
// with the variant fields taken as ones: LRH.VL for a local packet, the
// whole LRH for a global one (a router rewrites it), GRH.TClass,
// FlowLabel and HopLmt, BTH.Resv8a. Not defined for raw packets.
uint32_t compute_icrc(std::span<const uint8_t> packet);
// The VCRC over LRH..ICRC (everything but the VCRC itself).
uint16_t compute_vcrc(std::span<const uint8_t> lrh_to_icrc);

// Finish a frame whose headers and payload are written, with room for the
// trailing CRCs (the frame's last 6 bytes, or 2 for a raw packet): sets
// LRH.PktLen from the size, then writes ICRC and VCRC. The size must be
// 4k + 2 and within the bounds above; false (frame untouched) otherwise.
bool seal(std::span<uint8_t> frame);
// The BTH's P_Key of a frame that passed check_link(): none for a raw
// packet (LNH 0 or 1) or a frame too short to hold its BTH.
std::optional<uint16_t> frame_pkey(std::span<const uint8_t> frame);
// Recompute only the VCRC, after a switch changed the LRH's VL.
void reseal_vcrc(std::span<uint8_t> frame);
// Rewrite LRH.VL and the VCRC (what a switch does when SL2VL maps a
// packet to another VL on its output port).
void set_vl(std::span<uint8_t> frame, uint8_t vl);

} // namespace ohca::ib
