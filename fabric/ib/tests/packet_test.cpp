// SPDX-License-Identifier: GPL-2.0-or-later
// Byte vectors: fields laid out by hand from IBTA Vol 1 §5.2, §7.7, §8.3,
// §9.2; CRCs computed by an independent implementation (Python's zlib for
// the ICRC, an MSB-first bitwise CRC-16 for the VCRC), not by this code.
#include "ib/crc.hpp"
#include "ib/packet.hpp"

#include <gtest/gtest.h>

#include <string_view>
#include <vector>

using namespace ohca::ib;

namespace {

std::span<const uint8_t> bytes(std::string_view s) {
    return {reinterpret_cast<const uint8_t *>(s.data()), s.size()};
}

// RC SEND only, VL3 SL5, DLID 0x12 SLID 0x34, SE, P_Key 0xFFFF, QP 0x102,
// AckReq, PSN 0x304, payload DEADBEEF. ICRC 0x1dd9db5b, VCRC 0xc138.
const std::vector<uint8_t> kLocal = {0x30, 0x52, 0x00, 0x12, 0x00, 0x07, 0x00, 0x34, 0x04, 0x80,
                                     0xff, 0xff, 0x00, 0x00, 0x01, 0x02, 0x80, 0x00, 0x03, 0x04,
                                     0xde, 0xad, 0xbe, 0xef, 0x5b, 0xdb, 0xd9, 0x1d, 0x38, 0xc1};

// The same with a GRH: VL0, LNH global, TClass 0xA5, FlowLabel 0x12345,
// PayLen 20, HopLmt 0x40, SGID 10..1f, DGID 20..2f; BTH Resv8a 0x7e.
const std::vector<uint8_t> kGlobal = {
    0x00, 0x03, 0x00, 0x12, 0x00, 0x11, 0x00, 0x34, 0x6a, 0x51, 0x23, 0x45, 0x00, 0x14,
    0x1b, 0x40, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b,
    0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29,
    0x2a, 0x2b, 0x2c, 0x2d, 0x2e, 0x2f, 0x04, 0x00, 0x80, 0x01, 0x7e, 0x00, 0x00, 0x05,
    0x00, 0x00, 0x00, 0x01, 0xde, 0xad, 0xbe, 0xef, 0x6e, 0xfe, 0xf0, 0xa1, 0xc6, 0x66};

} // namespace

TEST(IbCrc, CheckValues) {
    // The catalogue check value of CRC-32 and this CRC-16's over "123456789".
    EXPECT_EQ(crc32(bytes("123456789")), 0xCBF43926u);
    EXPECT_EQ(crc16(bytes("123456789")), 0x0A3Du);
    EXPECT_EQ(crc16({}), 0u);
}

TEST(IbPacket, LrhFields) {
    const Lrh h = Lrh::read(kLocal.data());
    EXPECT_EQ(h.vl, 3);
    EXPECT_EQ(h.lver, 0);
    EXPECT_EQ(h.sl, 5);
    EXPECT_EQ(h.lnh, Lnh::IbaLocal);
    EXPECT_EQ(h.dlid, 0x12);
    EXPECT_EQ(h.pkt_len, 7);
    EXPECT_EQ(h.slid, 0x34);
    uint8_t out[8];
    h.write(out);
    EXPECT_TRUE(std::equal(out, out + 8, kLocal.begin()));
}

TEST(IbPacket, SealMatchesVectorLocal) {
    std::vector<uint8_t> f(kLocal.begin(), kLocal.end());
    std::fill(f.end() - 6, f.end(), 0);
    f[5] = 0; // PktLen is seal()'s
    ASSERT_TRUE(seal(f));
    EXPECT_EQ(f, kLocal);
}

TEST(IbPacket, SealMatchesVectorGlobal) {
    std::vector<uint8_t> f(kGlobal.begin(), kGlobal.end());
    std::fill(f.end() - 6, f.end(), 0);
    ASSERT_TRUE(seal(f));
    EXPECT_EQ(f, kGlobal);
}

TEST(IbPacket, ParseLocal) {
    Packet p;
    ASSERT_EQ(parse(kLocal, p), PacketError::Ok);
    EXPECT_FALSE(p.has_grh);
    ASSERT_TRUE(p.has_bth);
    EXPECT_EQ(p.bth.opcode, 0x04);
    EXPECT_TRUE(p.bth.solicited);
    EXPECT_EQ(p.bth.pkey, 0xFFFF);
    EXPECT_EQ(p.bth.dest_qp, 0x102u);
    EXPECT_TRUE(p.bth.ack_req);
    EXPECT_EQ(p.bth.psn, 0x304u);
    EXPECT_EQ(p.payload_offset, 20u);
    EXPECT_EQ(p.payload_end, 24u);
}

TEST(IbPacket, ParseGlobal) {
    Packet p;
    ASSERT_EQ(parse(kGlobal, p), PacketError::Ok);
    ASSERT_TRUE(p.has_grh);
    EXPECT_EQ(p.grh.tclass, 0xA5);
    EXPECT_EQ(p.grh.flow_label, 0x12345u);
    EXPECT_EQ(p.grh.pay_len, 20);
    EXPECT_EQ(p.grh.hop_limit, 0x40);
    EXPECT_EQ(p.grh.sgid[0], 0x10);
    EXPECT_EQ(p.grh.dgid[15], 0x2f);
    EXPECT_EQ(p.bth.resv8a, 0x7e);
    EXPECT_EQ(p.bth.pkey, 0x8001);
    EXPECT_EQ(p.bth.dest_qp, 5u);
    EXPECT_EQ(p.bth.psn, 1u);
}

// A switch may change VL and Resv8a, a router the LRH, TClass, FlowLabel
// and HopLmt: none of them changes the ICRC. Anything else does.
TEST(IbPacket, IcrcIgnoresVariantFields) {
    std::vector<uint8_t> f = kLocal;
    f[0] = 0xF0;  // VL 15
    f[12] = 0x55; // Resv8a
    EXPECT_EQ(compute_icrc(std::span(f).first(24)), 0x1dd9db5bu);
    f[3] ^= 1; // DLID: invariant on a local packet
    EXPECT_NE(compute_icrc(std::span(f).first(24)), 0x1dd9db5bu);

    std::vector<uint8_t> g = kGlobal;
    g[0] = 0x70;
    g[3] = 0x99;  // DLID: a router rewrites the LRH of a global packet
    g[7] = 0x01;  // SLID
    g[8] = 0x6F;  // TClass high nibble
    g[9] = 0xFF;  // TClass low nibble, FlowLabel
    g[15] = 0x01; // HopLmt
    g[52] = 0x00; // Resv8a
    EXPECT_EQ(compute_icrc(std::span(g).first(64)), 0xa1f0fe6eu);
    g[20] ^= 1; // SGID
    EXPECT_NE(compute_icrc(std::span(g).first(64)), 0xa1f0fe6eu);
}

TEST(IbPacket, ReceiverChecks) {
    Packet p;
    auto bad = [&](std::vector<uint8_t> f) { return parse(f, p); };
    std::vector<uint8_t> f = kLocal;
    f[22] ^= 0x01; // payload bit: VCRC catches it first
    EXPECT_EQ(bad(f), PacketError::BadVcrc);
    reseal_vcrc(f); // a corrupted packet with a fresh VCRC: ICRC catches it
    EXPECT_EQ(bad(f), PacketError::BadIcrc);

    f = kLocal;
    f[0] = 0x31; // LVer 1
    reseal_vcrc(f);
    EXPECT_EQ(bad(f), PacketError::BadLVer);

    f = kLocal;
    f.push_back(0); // one byte more than PktLen says
    EXPECT_EQ(bad(f), PacketError::LengthMismatch);
    EXPECT_EQ(bad({0x30, 0x52}), PacketError::TooShort);
    EXPECT_EQ(bad(std::vector<uint8_t>(kMaxFrameBytes + 4, 0)), PacketError::TooLong);

    f = kLocal;
    f[0] = 0xF0; // VL15 to QP 0x102
    reseal_vcrc(f);
    EXPECT_EQ(bad(f), PacketError::Vl15NotQp0);

    f = kLocal;
    f[13] = f[14] = f[15] = 0; // QP0 on VL3
    ASSERT_TRUE(seal(f));
    EXPECT_EQ(bad(f), PacketError::Qp0NotVl15);
    set_vl(f, 15);
    EXPECT_EQ(bad(f), PacketError::Ok);

    f = kLocal;
    f[9] = 0x01; // TVer 1
    ASSERT_TRUE(seal(f));
    EXPECT_EQ(bad(f), PacketError::BadTver);

    f = kGlobal;
    f[14] = 0x11; // NxtHdr not BTH
    ASSERT_TRUE(seal(f));
    EXPECT_EQ(bad(f), PacketError::BadGrh);
    f = kGlobal;
    f[13] = 0x18; // PayLen wrong
    ASSERT_TRUE(seal(f));
    EXPECT_EQ(bad(f), PacketError::BadGrh);
}

TEST(IbPacket, PadCountBounded) {
    // LRH + BTH with PadCnt 3 and no payload: the pad cannot exceed it.
    std::vector<uint8_t> f(kLrhBytes + kBthBytes + kIcrcBytes + kVcrcBytes, 0);
    Lrh l;
    l.vl = 0;
    l.lnh = Lnh::IbaLocal;
    l.write(f.data());
    Bth b;
    b.dest_qp = 7;
    b.pad = 3;
    b.write(f.data() + kLrhBytes);
    ASSERT_TRUE(seal(f));
    Packet p;
    EXPECT_EQ(parse(f, p), PacketError::BadPad);
}

TEST(IbPacket, SealRefusesBadSizes) {
    std::vector<uint8_t> f(kMinIbaFrameBytes + 1, 0);
    f[1] = 2;
    EXPECT_FALSE(seal(f)); // not 4k + 2
    std::vector<uint8_t> big(kMaxFrameBytes + 4, 0);
    EXPECT_FALSE(seal(big));
    std::vector<uint8_t> raw(kMinRawFrameBytes, 0); // LNH raw: no ICRC
    ASSERT_TRUE(seal(raw));
    Packet p;
    EXPECT_EQ(parse(raw, p), PacketError::Ok);
    EXPECT_FALSE(p.has_bth);
    set_vl(raw, 15);
    EXPECT_EQ(parse(raw, p), PacketError::Vl15NotQp0);
}

TEST(IbPacket, LargestFrame) {
    std::vector<uint8_t> f(kMaxFrameBytes, 0);
    Lrh l;
    l.write(f.data());
    Bth b;
    b.dest_qp = 9;
    b.write(f.data() + kLrhBytes);
    ASSERT_TRUE(seal(f));
    Lrh got;
    ASSERT_EQ(check_link(f, got), PacketError::Ok);
    EXPECT_EQ(got.pkt_len, 1055);
    Packet p;
    EXPECT_EQ(parse(f, p), PacketError::Ok);
}
