// SPDX-License-Identifier: GPL-2.0-or-later
// RoCEv2 packets: Ethernet (optional 802.1Q) / IPv4 or IPv6 / UDP 4791 /
// BTH [+ DETH | XRCETH] [+ RETH | AtomicETH] [+ AETH [+ AtomicAckETH]] [+ ImmDt | IETH] /
// payload / pad / ICRC. Building and
// parsing are pure functions over byte buffers (IBTA vol. 1 ch. 9, annex A17).
#pragma once

#include "eth/frame.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace ohca {

inline constexpr uint16_t kDefaultPkey = 0xffff;

// RC opcodes (transport bits 000).
namespace rc {
inline constexpr uint8_t kSendFirst = 0x00;
inline constexpr uint8_t kSendMiddle = 0x01;
inline constexpr uint8_t kSendLast = 0x02;
inline constexpr uint8_t kSendLastImm = 0x03;
inline constexpr uint8_t kSendOnly = 0x04;
inline constexpr uint8_t kSendOnlyImm = 0x05;
inline constexpr uint8_t kWriteFirst = 0x06;
inline constexpr uint8_t kWriteMiddle = 0x07;
inline constexpr uint8_t kWriteLast = 0x08;
inline constexpr uint8_t kWriteLastImm = 0x09;
inline constexpr uint8_t kWriteOnly = 0x0a;
inline constexpr uint8_t kWriteOnlyImm = 0x0b;
inline constexpr uint8_t kReadRequest = 0x0c;
inline constexpr uint8_t kReadRespFirst = 0x0d;
inline constexpr uint8_t kReadRespMiddle = 0x0e;
inline constexpr uint8_t kReadRespLast = 0x0f;
inline constexpr uint8_t kReadRespOnly = 0x10;
inline constexpr uint8_t kAck = 0x11;
inline constexpr uint8_t kAtomicAck = 0x12;
inline constexpr uint8_t kCompareSwap = 0x13;
inline constexpr uint8_t kFetchAdd = 0x14;
inline constexpr uint8_t kSendLastInv = 0x16; // + IETH
inline constexpr uint8_t kSendOnlyInv = 0x17; // + IETH
// IBTA 1.5 RDMA ATOMIC WRITE: RETH + 8-byte payload, answered by an ACK.
inline constexpr uint8_t kAtomicWrite = 0x1d;
} // namespace rc

// RoCEv2's Congestion Notification Packet (annex A17.9.2): BTH (BECN
// set) and 16 reserved bytes; transports/dcqcn.hpp.
inline constexpr uint8_t kCnpOpcode = 0x81;

// UD opcodes (transport bits 011): single-packet SENDs only.
// UC: the RC SEND and WRITE opcodes with the UC prefix (0x20 | op).
namespace uc {
inline constexpr uint8_t kSendFirst = 0x20;
inline constexpr uint8_t kSendMiddle = 0x21;
inline constexpr uint8_t kSendLast = 0x22;
inline constexpr uint8_t kSendLastImm = 0x23;
inline constexpr uint8_t kSendOnly = 0x24;
inline constexpr uint8_t kSendOnlyImm = 0x25;
inline constexpr uint8_t kWriteFirst = 0x26;
inline constexpr uint8_t kWriteMiddle = 0x27;
inline constexpr uint8_t kWriteLast = 0x28;
inline constexpr uint8_t kWriteLastImm = 0x29;
inline constexpr uint8_t kWriteOnly = 0x2a;
inline constexpr uint8_t kWriteOnlyImm = 0x2b;
} // namespace uc

// XRC (IBTA 9.2, transport bits 101): the RC opcodes with the XRC prefix
// (0xa0 | op); requests carry an XRCETH (the target SRQ) after the BTH,
// responses do not.
namespace xrc {
inline constexpr uint8_t kPrefix = 0xa0;
} // namespace xrc

namespace ud {
inline constexpr uint8_t kSendOnly = 0x64;
inline constexpr uint8_t kSendOnlyImm = 0x65;
} // namespace ud

// Which extension headers an opcode carries.
struct OpcodeInfo {
    bool valid = false;
    bool deth = false;
    bool xrceth = false;
    bool reth = false;
    bool atomic_eth = false;
    bool aeth = false;
    bool atomic_ack_eth = false;
    bool imm = false;
    bool ieth = false;
    bool payload = false;
};
OpcodeInfo rc_opcode_info(uint8_t opcode);
// Any opcode the device parses: RC (rc_opcode_info) and UD.
OpcodeInfo opcode_info(uint8_t opcode);
[[nodiscard]] constexpr bool is_ud_opcode(uint8_t op) {
    return op == ud::kSendOnly || op == ud::kSendOnlyImm;
}
[[nodiscard]] constexpr bool is_uc_opcode(uint8_t op) {
    return op >= uc::kSendFirst && op <= uc::kWriteOnlyImm;
}
[[nodiscard]] constexpr bool is_xrc_opcode(uint8_t op) {
    return (op & 0xe0) == xrc::kPrefix;
}

// AETH syndromes (bits 7:5 type, 4:0 value).
inline constexpr uint8_t kAethAck = 0x00;    // | credit count (0x1f: invalid)
inline constexpr uint8_t kAethRnrNak = 0x20; // | RNR timer code
inline constexpr uint8_t kAethNak = 0x60;    // | NAK code
inline constexpr uint8_t kNakPsnSeq = 0;
inline constexpr uint8_t kNakInvalidRequest = 1;
inline constexpr uint8_t kNakRemoteAccess = 2;
inline constexpr uint8_t kNakRemoteOp = 3;

struct Bth {
    uint8_t opcode = 0;
    bool solicited = false;
    // Congestion notification (IBTA annex A17, the top bits of the BTH's
    // second word, once resv8a): a CNP carries BECN.
    bool fecn = false;
    bool becn = false;
    uint8_t pad = 0;
    uint16_t pkey = kDefaultPkey;
    uint32_t dest_qp = 0;
    bool ack_req = false;
    uint32_t psn = 0;
};

struct Deth {
    uint32_t qkey = 0;
    uint32_t src_qp = 0; // 24 bits
};

struct Reth {
    uint64_t va = 0;
    uint32_t rkey = 0;
    uint32_t dma_len = 0;
};

struct Aeth {
    uint8_t syndrome = 0;
    uint32_t msn = 0;
};

// AtomicETH of CompareSwap and FetchAdd requests (IBTA 9.3.4).
struct AtomicEth {
    uint64_t va = 0;
    uint32_t rkey = 0;
    uint64_t swap_add = 0; // CompareSwap: the swap value; FetchAdd: the addend
    uint64_t compare = 0;
};

// An InfiniBand link's routing header (the LRH): where a packet goes and
// comes from on the subnet, its service level and virtual lane, and
// whether a GRH follows.
struct IbRoute {
    uint16_t dlid = 0;
    uint16_t slid = 0;
    uint8_t sl = 0;
    uint8_t vl = 0;
    bool grh = false;
    uint8_t path_bits = 0; // received: the DLID's low LMC bits
};

// Where a packet goes and where it comes from (from the QP's AV and the
// source GID entry).
struct PacketPath {
    std::array<uint8_t, 6> smac{};
    std::array<uint8_t, 6> dmac{};
    uint16_t vlan_id = 0xffff; // none
    bool ipv6 = false;
    std::array<uint8_t, 16> sgid{};
    std::array<uint8_t, 16> dgid{};
    uint8_t hop_limit = 64;
    uint8_t traffic_class = 0;
    uint32_t flow_label = 0;
    uint16_t udp_src_port = 0xc000;
    IbRoute ib; // an InfiniBand link: the LRH (the GID fields: the GRH)
};

struct PacketFields {
    Bth bth;
    std::optional<Deth> deth;
    std::optional<uint32_t> xrceth; // XRC requests: the XRC SRQ number (24 bits)
    std::optional<Reth> reth;
    std::optional<AtomicEth> atomic_eth;
    std::optional<Aeth> aeth;
    std::optional<uint64_t> atomic_ack; // AtomicAckETH: the original data
    std::optional<uint32_t> imm;        // as on the wire: the 4 bytes, big endian
    std::optional<uint32_t> ieth;       // R_Key to invalidate (SEND with invalidate)
};

// Requests travel requester -> responder, responses the other way.
constexpr bool rc_is_response(uint8_t op) {
    return op >= rc::kReadRespFirst && op <= rc::kAtomicAck;
}

// Where a link layer put a frame's parts (link_layer.hpp): the headers
// of a frame with a payload_len-byte payload (the frame resized; pad and
// trailer zeroed), then the caller writes the payload at payload_off, then
// the link seals it -- one pass, no allocation once the storage has grown.
struct FrameLayout {
    size_t l3 = 0; // offset of the link's network header (RoCEv2: IP)
    size_t payload_off = 0;
    bool ipv6 = false;
};

struct ParsedPacket {
    std::array<uint8_t, 6> smac{};
    std::array<uint8_t, 6> dmac{};
    bool ipv6 = false;
    std::array<uint8_t, 16> sgid{};
    std::array<uint8_t, 16> dgid{};
    uint8_t vlan_pcp = 0;               // 802.1Q priority, 0 untagged
    eth::Ecn ecn = eth::Ecn::NotEct;    // IP ECN bits (RFC 3168); NotEct looped back
    uint8_t traffic_class = 0;          // IP TOS / traffic class, ECN included
    std::span<const uint8_t> ip_header; // the 20 (IPv4) or 40 (IPv6) bytes
    PacketFields fields;
    std::span<const uint8_t> payload; // without pad and ICRC
    // Looped back inside the device (never framed): its ACK goes back to a
    // QP of this device too, so the responder may coalesce it (responder.cpp).
    bool looped = false;
    // Received on an InfiniBand link: its LRH (with a GRH: sgid, dgid and
    // ip_header, the 40 GRH bytes, are set, ipv6 true).
    bool is_ib = false;
    IbRoute ib;
};

// BadVcrc and Vl15Rule: an InfiniBand link's (ib_link.hpp).
enum class ParseError { None, Malformed, BadIcrc, BadOpcode, BadVersion, BadVcrc, Vl15Rule };

// The BTH and the extension headers after it, the same on every link
// layer (roce_packet.cpp).
inline constexpr size_t kBthLen = 12;
inline constexpr size_t kIcrcLen = 4;
// Bytes from the BTH to the last extension header the fields name.
[[nodiscard]] size_t ib_headers_len(const PacketFields &fields);
// Writes them (ib_headers_len bytes at 'f'); 'pad': the payload's pad
// count for the BTH.
void write_ib_headers(std::span<uint8_t> f, const PacketFields &fields, size_t pad);
// The BTH at the start of 'f' (at least kBthLen bytes); BadVersion for a
// transport version other than 0.
ParseError parse_bth(std::span<const uint8_t> f, Bth &h);
// The rest, once parse_bth filled out.fields.bth: 'f' spans from the BTH
// to the end of the pad (the link's trailer stripped); the opcode's
// extension headers, the payload (without pad) into 'out'.
ParseError parse_ib_headers(std::span<const uint8_t> f, ParsedPacket &out);

// 24-bit PSN arithmetic.
inline constexpr uint32_t kPsnMask = 0xffffff;
inline int32_t psn_diff(uint32_t a, uint32_t b) {
    return static_cast<int32_t>((a - b) << 8) >> 8;
}
inline uint32_t psn_add(uint32_t a, uint32_t n) {
    return (a + n) & kPsnMask;
}

} // namespace ohca
