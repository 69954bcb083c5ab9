// SPDX-License-Identifier: GPL-2.0-or-later
// Ethernet frames as ohca's netdev transports carry them (QEMU's stream
// framing: the frame from the destination MAC to the end of the payload,
// no preamble, no FCS): the header with up to two VLAN tags, the IPv4 /
// IPv6 header's DSCP and ECN, and the MAC control frames of priority flow
// control (IEEE 802.1Qbb). Everything here works in place on the frame's
// bytes, bounded by the frame, without allocating.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace ohca::eth {

constexpr size_t kHeaderBytes = 14;     // dst, src, EtherType
constexpr size_t kMinFrameBytes = 60;   // without FCS; shorter frames are padded here
constexpr size_t kMaxFrameBytes = 9022; // 9000-byte MTU, header, two VLAN tags
constexpr size_t kMaxTags = 2;
constexpr uint16_t kTypeVlan = 0x8100;
constexpr uint16_t kTypeQinQ = 0x88A8;
constexpr uint16_t kTypeIpv4 = 0x0800;
constexpr uint16_t kTypeIpv6 = 0x86DD;
constexpr uint16_t kTypeMacControl = 0x8808;
constexpr uint16_t kOpPause = 0x0001; // 802.3x PAUSE
constexpr uint16_t kOpPfc = 0x0101;   // 802.1Qbb priority-based flow control
constexpr size_t kPriorities = 8;
constexpr std::array<uint8_t, 6> kPfcDst{0x01, 0x80, 0xC2, 0x00, 0x00, 0x01};

// IP ECN codepoints (RFC 3168): the low two bits of the IPv4 TOS / IPv6
// traffic class.
enum class Ecn : uint8_t { NotEct = 0, Ect1 = 1, Ect0 = 2, Ce = 3 };
constexpr uint8_t kEcnMask = 0x03;

enum class FrameError : uint8_t {
    Ok,
    Runt,          // shorter than an Ethernet header (or its tags)
    Oversize,      // longer than the switch takes
    TooManyTags,   // more than two VLAN tags
    GroupSource,   // the source MAC is a group address
    BadMacControl, // MAC control frame too short
};

using Mac = std::array<uint8_t, 6>;

inline bool is_group(const Mac &m) {
    return (m[0] & 1) != 0;
}
// 01:80:C2:00:00:00-0F: link-local, never forwarded by a bridge.
inline bool is_link_local(const Mac &m) {
    return m[0] == 0x01 && m[1] == 0x80 && m[2] == 0xC2 && m[3] == 0 && m[4] == 0 &&
           (m[5] & 0xF0) == 0;
}

struct PfcInfo {
    uint8_t enable = 0; // class-enable vector: bit i = priority i
    std::array<uint16_t, kPriorities> quanta{};
};

struct FrameInfo {
    Mac dst{};
    Mac src{};
    uint16_t type = 0; // the EtherType after the tags
    uint8_t tags = 0;
    bool has_pcp = false; // an 802.1Q tag (its PCP)
    uint8_t pcp = 0;
    size_t l3 = 0;    // offset of the payload after the tags
    uint8_t ip = 0;   // 4 or 6 when a well-formed IP header follows
    uint8_t dscp = 0; // when ip != 0
    Ecn ecn = Ecn::NotEct;
    bool mac_control = false;
    uint16_t opcode = 0; // MAC control opcode
    PfcInfo pfc;         // opcode kOpPfc
};

// Parses a frame's headers. An IP header that is truncated or malformed
// leaves ip = 0 (the frame is still a valid Ethernet frame; the bridge
// forwards it and never marks it).
FrameError parse(std::span<const uint8_t> frame, FrameInfo &out, size_t max_bytes = kMaxFrameBytes);

// Marks an ECN-capable IP packet Congestion Experienced in place (IPv4:
// the header checksum updated incrementally, RFC 1624, so a bad checksum
// stays bad). `info` is parse()'s result for this frame. False when the
// packet is not ECT(0)/ECT(1).
bool mark_ce(std::span<uint8_t> frame, const FrameInfo &info);

// The IPv4 header checksum over `hdr` (its length a multiple of 2):
// 0 when a header with its checksum field verifies.
uint16_t ip_checksum(std::span<const uint8_t> hdr);

// A PFC frame (60 bytes, padded; no VLAN tag, no FCS) from `src`.
std::array<uint8_t, kMinFrameBytes> make_pfc(const Mac &src, const PfcInfo &pfc);
// An 802.3x PAUSE frame (60 bytes, padded) from `src`: every priority
// for `quanta` (0: resume).
std::array<uint8_t, kMinFrameBytes> make_pause(const Mac &src, uint16_t quanta);
// A PAUSE frame's time (opcode kOpPause; parse() leaves it to this):
// nullopt when the frame is too short to hold it.
std::optional<uint16_t> pause_quanta(std::span<const uint8_t> frame, const FrameInfo &info);

} // namespace ohca::eth
