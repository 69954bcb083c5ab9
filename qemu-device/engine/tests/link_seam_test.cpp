// SPDX-License-Identifier: GPL-2.0-or-later
// The link-layer seam (link_layer.hpp): RC between two devices over a link
// layer written only for this test -- no IP, no UDP, no ICRC masks -- so
// nothing of RoCEv2 can be what carries the transport.
#include "device/device.hpp"
#include "link/link_layer.hpp"
#include "link/roce_packet.hpp"
#include "link/roce_v2.hpp"
#include "rdma_node.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace ohca::test {
namespace {

// The test's link: an Ethernet header with a local experimental EtherType
// (so a MAC filter and the fake wire carry it), the frame's length, the
// source and destination GIDs (the only routing), the IB headers and
// payload, then a plain CRC-32 over everything before it.
class GidLink final : public LinkLayer {
  public:
    static constexpr uint16_t kType = 0x88b5;
    static constexpr size_t kHdr = 14 + 2 + 32;

    FrameLayout build(std::vector<uint8_t> &f, const PacketPath &path, const PacketFields &fields,
                      size_t payload_len) const override {
        const size_t ib = ib_headers_len(fields);
        const size_t pad = (4 - (payload_len & 3)) & 3;
        f.assign(kHdr + ib + payload_len + pad + 4, 0);
        std::copy(path.dmac.begin(), path.dmac.end(), f.begin());
        std::copy(path.smac.begin(), path.smac.end(), f.begin() + 6);
        f[12] = kType >> 8;
        f[13] = kType & 0xff;
        f[14] = static_cast<uint8_t>(f.size() >> 8);
        f[15] = static_cast<uint8_t>(f.size());
        std::copy(path.sgid.begin(), path.sgid.end(), f.begin() + 16);
        std::copy(path.dgid.begin(), path.dgid.end(), f.begin() + 32);
        write_ib_headers(std::span<uint8_t>(f).subspan(kHdr, ib), fields, pad);
        return FrameLayout{kHdr, kHdr + ib, false};
    }
    void seal(std::span<uint8_t> f, const FrameLayout & /*layout*/) const override {
        const uint32_t crc = ~crc32_update(0xffffffffu, f.first(f.size() - 4));
        for (size_t i = 0; i < 4; ++i) {
            f[f.size() - 4 + i] = static_cast<uint8_t>(crc >> (8 * i));
        }
    }
    ParseError parse(std::span<const uint8_t> f, ParsedPacket &out) const override {
        if (f.size() < kHdr + kBthLen + 4) {
            return ParseError::Malformed;
        }
        const size_t len = (size_t{f[14]} << 8) | f[15];
        if (len < kHdr + kBthLen + 4 || len > f.size()) {
            return ParseError::Malformed;
        }
        f = f.first(len);
        uint32_t crc = 0;
        for (size_t i = 0; i < 4; ++i) {
            crc |= uint32_t{f[len - 4 + i]} << (8 * i);
        }
        if (~crc32_update(0xffffffffu, f.first(len - 4)) != crc) {
            return ParseError::BadIcrc;
        }
        std::copy_n(f.begin(), 6, out.dmac.begin());
        std::copy_n(f.begin() + 6, 6, out.smac.begin());
        std::copy_n(f.begin() + 16, 16, out.sgid.begin());
        std::copy_n(f.begin() + 32, 16, out.dgid.begin());
        out.ipv6 = false;
        out.vlan_pcp = 0;
        out.ip_header = {};
        if (const ParseError e = parse_bth(f.subspan(kHdr), out.fields.bth);
            e != ParseError::None) {
            return e;
        }
        return parse_ib_headers(f.subspan(kHdr, len - 4 - kHdr), out);
    }
    [[nodiscard]] bool claims(std::span<const uint8_t> f) const override {
        return f.size() >= 14 && ((f[12] << 8) | f[13]) == kType;
    }
};

const GidLink kLink;

TEST(LinkSeam, RcSendWriteReadOverATestOnlyLinkLayer) {
    RdmaNode a(1, false, 0, 10, 0, &kLink);
    RdmaNode b(2, false, 0, 10, 0, &kLink);
    Side sa = make_side(a, 1 << 20, 6, [](size_t k) { return static_cast<uint8_t>(k * 3 + 1); });
    Side sb = make_side(b, 1 << 20, 6, [](size_t k) { return static_cast<uint8_t>(k * 7 + 5); });
    a.connect(sa.qp, sb.qp.qpn, b);
    b.connect(sb.qp, sa.qp.qpn, a);

    b.post_recv(sb.qp, 5, {{sb.buf, 8192, sb.key}});
    SendReq s;
    s.sges = {{sa.buf, 5000, sa.key}};
    a.post_send(sa.qp, s);
    SendReq w;
    w.wr_id = 2;
    w.opcode = OHCA_WR_RDMA_WRITE;
    w.remote_addr = sb.buf + 0x10000;
    w.rkey = sb.key;
    w.sges = {{sa.buf + 0x20000, 7000, sa.key}};
    a.post_send(sa.qp, w);
    SendReq r;
    r.wr_id = 3;
    r.opcode = OHCA_WR_RDMA_READ;
    r.flags = OHCA_WQE_SIGNALED | OHCA_WQE_FENCE;
    r.remote_addr = sb.buf + 0x40000;
    r.rkey = sb.key;
    r.sges = {{sa.buf + 0x50000, 9000, sa.key}};
    a.post_send(sa.qp, r);

    a.process();
    ASSERT_FALSE(a.host.wire.empty());
    // The test's frames, not RoCEv2 ones: no IP, no UDP.
    for (const auto &f : a.host.wire) {
        EXPECT_TRUE(kLink.claims(f));
        EXPECT_FALSE(is_roce_v2_frame(f));
        ParsedPacket p;
        EXPECT_NE(parse_roce_frame(f, p), ParseError::None);
    }
    pump(a, b);

    const auto sc = a.poll(sa.scq);
    ASSERT_EQ(sc.size(), 3u);
    for (const auto &c : sc) {
        EXPECT_EQ(c.status, OHCA_CQE_SUCCESS);
    }
    EXPECT_EQ(sc[0].opcode, OHCA_CQE_SEND);
    EXPECT_EQ(sc[1].opcode, OHCA_CQE_RDMA_WRITE);
    EXPECT_EQ(sc[2].opcode, OHCA_CQE_RDMA_READ);
    const auto rc = b.poll(sb.rcq);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(rc[0].byte_len, 5000u);

    auto same = [&](uint64_t x, uint64_t y, size_t len) {
        std::vector<uint8_t> p(len), q(len);
        EXPECT_TRUE(a.host.read(x, p.data(), len));
        EXPECT_TRUE(b.host.read(y, q.data(), len));
        return p == q;
    };
    EXPECT_TRUE(same(sa.buf, sb.buf, 5000));
    EXPECT_TRUE(same(sa.buf + 0x20000, sb.buf + 0x10000, 7000));
    EXPECT_TRUE(same(sa.buf + 0x50000, sb.buf + 0x40000, 9000));
    EXPECT_EQ(device_of(a.e).roce_counters().rx_bad_icrc, 0u);
    EXPECT_EQ(device_of(b.e).roce_counters().rx_malformed, 0u);
}

// A corrupted frame of the test link is refused by its own check, counted
// as the transport's counters count a bad ICRC.
TEST(LinkSeam, TheLinkLayerChecksItsOwnTrailer) {
    RdmaNode a(1, false, 0, 10, 0, &kLink);
    RdmaNode b(2, false, 0, 10, 0, &kLink);
    Side sa = make_side(a, 1 << 16, 6, [](size_t k) { return static_cast<uint8_t>(k); });
    Side sb = make_side(b, 1 << 16, 6, [](size_t k) { return static_cast<uint8_t>(~k); });
    a.connect(sa.qp, sb.qp.qpn, b);
    b.connect(sb.qp, sa.qp.qpn, a);
    b.post_recv(sb.qp, 1, {{sb.buf, 256, sb.key}});
    SendReq s;
    s.sges = {{sa.buf, 100, sa.key}};
    a.post_send(sa.qp, s);
    a.process();
    ASSERT_EQ(a.host.wire.size(), 1u);
    std::vector<uint8_t> f = a.host.wire[0];
    f[GidLink::kHdr + kBthLen + 3] ^= 1;
    EXPECT_EQ(ohca_engine_receive_frame(b.e, f.data(), f.size()), OHCA_ENGINE_RX_CONSUMED);
    b.process();
    EXPECT_EQ(device_of(b.e).roce_counters().rx_bad_icrc, 1u);
    EXPECT_TRUE(b.poll(sb.rcq).empty());
}

} // namespace
} // namespace ohca::test
