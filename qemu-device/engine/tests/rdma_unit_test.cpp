// SPDX-License-Identifier: GPL-2.0-or-later
// Pure parts of the transport: ICRC, framing, page lists, the QP state
// diagram.
#include "device/host.hpp"
#include "fake_host.hpp"
#include "known_captures.hpp"
#include "link/roce_packet.hpp"
#include "link/roce_v2.hpp"
#include "objects/page_list.hpp"
#include "objects/qp_state.hpp"

#include <gtest/gtest.h>

namespace ohca::test {
namespace {

// A CNP captured from a ConnectX-4 Lx (public capture): its ICRC bytes on
// the wire are 82 fd 00 2a.
TEST(Icrc, KnownGoodCapture) {
    const std::vector<uint8_t> &f = cx4_cnp_capture();
    EXPECT_EQ(compute_icrc(f, 14, false), 0x2a00fd82u);
}

TEST(Icrc, Crc32Check) {
    const char *s = "123456789";
    const auto *p = reinterpret_cast<const uint8_t *>(s);
    EXPECT_EQ(~crc32_update(0xffffffffu, std::span<const uint8_t>(p, 9)), 0xcbf43926u);
}

PacketPath test_path(bool ipv6) {
    PacketPath p;
    p.smac = {2, 0, 0, 0, 0, 1};
    p.dmac = {2, 0, 0, 0, 0, 2};
    p.ipv6 = ipv6;
    if (ipv6) {
        p.sgid = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
        p.dgid = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
    } else {
        p.sgid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
        p.dgid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};
    }
    return p;
}

TEST(RocePacket, RoundTripAllHeaders) {
    for (bool v6 : {false, true}) {
        for (uint16_t vlan : {uint16_t{0xffff}, uint16_t{5}}) {
            PacketPath path = test_path(v6);
            path.vlan_id = vlan;
            PacketFields f;
            f.bth.opcode = rc::kWriteOnlyImm;
            f.bth.solicited = true;
            f.bth.dest_qp = 0x123456;
            f.bth.ack_req = true;
            f.bth.psn = 0xabcdef;
            f.reth = Reth{0x1122334455667788ull, 0xdeadbeef, 7};
            f.imm = 0x01020304;
            const std::vector<uint8_t> payload = {1, 2, 3, 4, 5, 6, 7};
            auto frame = build_roce_frame(path, f, payload);
            ParsedPacket p;
            ASSERT_EQ(parse_roce_frame(frame, p), ParseError::None);
            EXPECT_EQ(p.ipv6, v6);
            EXPECT_EQ(p.sgid, path.sgid);
            EXPECT_EQ(p.dgid, path.dgid);
            EXPECT_EQ(p.fields.bth.opcode, rc::kWriteOnlyImm);
            EXPECT_TRUE(p.fields.bth.solicited);
            EXPECT_TRUE(p.fields.bth.ack_req);
            EXPECT_EQ(p.fields.bth.pad, 1);
            EXPECT_EQ(p.fields.bth.dest_qp, 0x123456u);
            EXPECT_EQ(p.fields.bth.psn, 0xabcdefu);
            ASSERT_TRUE(p.fields.reth);
            EXPECT_EQ(p.fields.reth->va, 0x1122334455667788ull);
            EXPECT_EQ(p.fields.reth->rkey, 0xdeadbeefu);
            EXPECT_EQ(p.fields.reth->dma_len, 7u);
            EXPECT_EQ(*p.fields.imm, 0x01020304u);
            EXPECT_EQ(std::vector<uint8_t>(p.payload.begin(), p.payload.end()), payload);
            // Variant fields do not change the ICRC; invariant ones do.
            auto g = frame;
            const size_t l3 = vlan == 0xffff ? 14 : 18;
            g[l3 + (v6 ? 7 : 8)] = 3; // hop limit / TTL
            if (!v6) {
                g[l3 + 10] ^= 0xff; // checksum
            }
            EXPECT_EQ(parse_roce_frame(g, p), ParseError::None);
            g = frame;
            g[g.size() - 8] ^= 1; // payload
            EXPECT_EQ(parse_roce_frame(g, p), ParseError::BadIcrc);
        }
    }
}

TEST(RocePacket, Ipv4HeaderChecksumAndLengths) {
    PacketFields f;
    f.bth.opcode = rc::kAck;
    f.aeth = Aeth{0x1f, 3};
    auto frame = build_roce_frame(test_path(false), f, {});
    ASSERT_EQ(frame.size(), 14u + 20 + 8 + 12 + 4 + 4);
    uint32_t sum = 0;
    for (size_t i = 14; i < 34; i += 2) {
        sum += (frame[i] << 8) | frame[i + 1];
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    EXPECT_EQ(sum, 0xffffu);
    EXPECT_EQ((frame[36] << 8) | frame[37], 4791);
}

TEST(RocePacket, RejectsMalformed) {
    PacketFields f;
    f.bth.opcode = rc::kSendOnly;
    const std::vector<uint8_t> payload(10, 1);
    auto frame = build_roce_frame(test_path(false), f, payload);
    ParsedPacket p;
    for (size_t cut = 0; cut < frame.size(); ++cut) {
        EXPECT_NE(parse_roce_frame(std::span<const uint8_t>(frame).first(cut), p),
                  ParseError::None);
    }
    // Ethernet padding beyond the IP datagram is ignored.
    auto padded = frame;
    padded.resize(frame.size() + 6, 0);
    EXPECT_EQ(parse_roce_frame(padded, p), ParseError::None);
    // An unknown opcode with a valid ICRC.
    f.bth.opcode = 0x44; // RD SEND ONLY: no RD transport
    auto rd = build_roce_frame(test_path(false), f, payload);
    EXPECT_EQ(parse_roce_frame(rd, p), ParseError::BadOpcode);
}

TEST(Psn, Arithmetic) {
    EXPECT_EQ(psn_add(0xffffff, 1), 0u);
    EXPECT_EQ(psn_diff(0, 0xffffff), 1);
    EXPECT_EQ(psn_diff(0xffffff, 0), -1);
    EXPECT_EQ(psn_diff(5, 3), 2);
}

// The fake host's memory: the region the last lookup found is asked first
// (FakeHost::find); a neighbour, a removed region and one added again
// must still be what the map says.
TEST(FakeHostMemory, LastRegionNeverAnswersForAnother) {
    FakeHost h;
    h.add_region(0x1000, 0x1000);
    h.add_region(0x2000, 0x1000); // adjacent
    h.put<uint32_t>(0x1ffc, 1);   // the first region's last word
    h.put<uint32_t>(0x2000, 2);   // the second's first
    EXPECT_EQ(h.get<uint32_t>(0x1ffc), 1u);
    EXPECT_EQ(h.get<uint32_t>(0x2000), 2u);
    EXPECT_FALSE(h.contains(0x1ffe, 4)); // across the two: no region holds it
    EXPECT_FALSE(h.contains(0xffc, 8));  // below the first
    EXPECT_TRUE(h.contains(0x2000, 0x1000));
    h.remove_region(0x2000);
    EXPECT_FALSE(h.contains(0x2000, 4)); // the region last found is gone
    EXPECT_TRUE(h.contains(0x1000, 4));
    h.add_region(0x2000, 0x100); // again, smaller
    EXPECT_TRUE(h.contains(0x2000, 0x100));
    EXPECT_FALSE(h.contains(0x2000, 0x101));
}

// ---- page lists -----------------------------------------------------------------

class PageListTest : public ::testing::Test {
  protected:
    void SetUp() override {
        fake.add_region(0x100000, 0x10000);    // lists
        fake.add_region(0x10000000, 0x800000); // pages
    }
    FakeHost fake;
    ohca_engine_ops ops = FakeHost::ops();
    Host host{ops, &fake};
};

TEST_F(PageListTest, Level1FourK) {
    for (uint64_t i = 0; i < 4; ++i) {
        fake.put<uint64_t>(0x100000 + 8 * i, 0x10000000 + 0x1000 * (3 - i)); // reversed
    }
    ohca_pbl pbl{0x100000, 4, 12, 1, 0};
    PageList pl;
    ASSERT_EQ(pl.load(host, pbl, 4 * 4096).error, PageList::Error::None);
    EXPECT_EQ(pl.bytes(), 4u * 4096);
    EXPECT_EQ(*pl.translate(0), 0x10003000u);
    EXPECT_EQ(*pl.translate(4096 + 5), 0x10002005u);
    EXPECT_FALSE(pl.translate(4 * 4096));
    // A copy spanning pages lands in the right places.
    std::vector<uint8_t> data(5000, 0xab);
    ASSERT_TRUE(pl.write(host, 4000, data.data(), data.size()));
    EXPECT_EQ(fake.get<uint8_t>(0x10003000 + 4095), 0xab);
    EXPECT_EQ(fake.get<uint8_t>(0x10002000 + 0), 0xab);
    EXPECT_EQ(fake.get<uint8_t>(0x10001000 + 5000 - 96 - 4096 - 1), 0xab);
    EXPECT_EQ(fake.get<uint8_t>(0x10001000 + 5000 - 96 - 4096), 0);
    EXPECT_FALSE(pl.write(host, 4 * 4096 - 2, data.data(), 4));
    // The device copied the list: later changes have no effect.
    fake.put<uint64_t>(0x100000, 0);
    EXPECT_EQ(*pl.translate(0), 0x10003000u);
}

TEST_F(PageListTest, Level2TwoMeg) {
    // 3 pages of 2 MiB through a two-level list.
    fake.put<uint64_t>(0x100000, 0x101000); // level 1: one 4K page of entries
    for (uint64_t i = 0; i < 3; ++i) {
        fake.put<uint64_t>(0x101000 + 8 * i, 0x10000000 + 0x200000 * i);
    }
    ohca_pbl pbl{0x100000, 3, 21, 2, 0};
    PageList pl;
    ASSERT_EQ(pl.load(host, pbl, 3 << 21).error, PageList::Error::None);
    EXPECT_EQ(*pl.translate((2u << 21) + 7), 0x10400007u);
}

TEST_F(PageListTest, Level2ManyPages) {
    // 600 4K pages: two level-1 entries.
    fake.put<uint64_t>(0x100000, 0x102000);
    fake.put<uint64_t>(0x100008, 0x103000);
    for (uint64_t i = 0; i < 600; ++i) {
        const uint64_t at = i < 512 ? 0x102000 + 8 * i : 0x103000 + 8 * (i - 512);
        fake.put<uint64_t>(at, 0x10000000 + 0x1000 * i);
    }
    ohca_pbl pbl{0x100000, 600, 12, 2, 0};
    PageList pl;
    ASSERT_EQ(pl.load(host, pbl, 600 * 4096).error, PageList::Error::None);
    EXPECT_EQ(*pl.translate(599ull * 4096 + 1), 0x10000000u + 599 * 4096 + 1);
}

TEST_F(PageListTest, Rejects) {
    fake.put<uint64_t>(0x100000, 0x10000800); // not 4K aligned
    PageList pl;
    EXPECT_EQ(pl.load(host, ohca_pbl{0x100000, 1, 12, 1, 0}, 1).error, PageList::Error::Field);
    fake.put<uint64_t>(0x100000, 0x10001000); // 4K but not 2M aligned
    EXPECT_EQ(pl.load(host, ohca_pbl{0x100000, 1, 21, 1, 0}, 1).field, offsetof(ohca_pbl, addr));
    EXPECT_EQ(pl.load(host, ohca_pbl{0x100000, 1, 11, 1, 0}, 1).field,
              offsetof(ohca_pbl, page_shift));
    EXPECT_EQ(pl.load(host, ohca_pbl{0x100000, 1, 31, 1, 0}, 1).field,
              offsetof(ohca_pbl, page_shift));
    EXPECT_EQ(pl.load(host, ohca_pbl{0x100000, 1, 12, 3, 0}, 1).field, offsetof(ohca_pbl, levels));
    EXPECT_EQ(pl.load(host, ohca_pbl{0x100000, 0, 12, 1, 0}, 1).field, offsetof(ohca_pbl, npages));
    EXPECT_EQ(pl.load(host, ohca_pbl{0x100000, 513, 12, 1, 0}, 1).field,
              offsetof(ohca_pbl, npages));
    EXPECT_EQ(pl.load(host, ohca_pbl{0x100000, 1, 12, 1, 0}, 4097).field,
              offsetof(ohca_pbl, npages)); // too small for the ring
    EXPECT_EQ(pl.load(host, ohca_pbl{0x100004, 1, 12, 1, 0}, 1).field, offsetof(ohca_pbl, addr));
    EXPECT_EQ(pl.load(host, ohca_pbl{0xdead0000, 1, 12, 1, 0}, 1).error, PageList::Error::Dma);
    EXPECT_EQ(pl.load(host, ohca_pbl{0x100000, 1, 12, 1, 1}, 1).field, offsetof(ohca_pbl, rsvd));
}

// ---- the QP state diagram -----------------------------------------------------------

TEST(QpStateDiagram, Transitions) {
    constexpr uint32_t kInit = OHCA_QP_PKEY_INDEX | OHCA_QP_PORT | OHCA_QP_ACCESS_FLAGS;
    constexpr uint32_t kRtr = OHCA_QP_AV | OHCA_QP_PATH_MTU | OHCA_QP_DEST_QPN | OHCA_QP_RQ_PSN |
                              OHCA_QP_MAX_DEST_RD_ATOMIC | OHCA_QP_MIN_RNR_TIMER;
    constexpr uint32_t kRts = OHCA_QP_SQ_PSN | OHCA_QP_TIMEOUT | OHCA_QP_RETRY_CNT |
                              OHCA_QP_RNR_RETRY | OHCA_QP_MAX_QP_RD_ATOMIC;
    EXPECT_TRUE(qp_mask_ok(OHCA_QPS_RESET, OHCA_QPS_INIT, OHCA_QP_STATE | kInit));
    EXPECT_FALSE(qp_mask_ok(OHCA_QPS_RESET, OHCA_QPS_INIT, OHCA_QP_STATE | OHCA_QP_PORT));
    EXPECT_FALSE(
        qp_mask_ok(OHCA_QPS_RESET, OHCA_QPS_INIT, OHCA_QP_STATE | kInit | OHCA_QP_PATH_MTU));
    EXPECT_TRUE(qp_mask_ok(OHCA_QPS_INIT, OHCA_QPS_INIT, OHCA_QP_ACCESS_FLAGS));
    EXPECT_TRUE(qp_mask_ok(OHCA_QPS_INIT, OHCA_QPS_RTR, OHCA_QP_STATE | kRtr));
    EXPECT_TRUE(qp_mask_ok(OHCA_QPS_INIT, OHCA_QPS_RTR, OHCA_QP_STATE | kRtr | OHCA_QP_PKEY_INDEX));
    EXPECT_FALSE(qp_mask_ok(OHCA_QPS_INIT, OHCA_QPS_RTR, OHCA_QP_STATE | (kRtr & ~OHCA_QP_AV)));
    EXPECT_FALSE(qp_mask_ok(OHCA_QPS_INIT, OHCA_QPS_RTR, OHCA_QP_STATE | kRtr | OHCA_QP_SQ_PSN));
    EXPECT_TRUE(qp_mask_ok(OHCA_QPS_RTR, OHCA_QPS_RTS, OHCA_QP_STATE | kRts));
    EXPECT_TRUE(qp_mask_ok(OHCA_QPS_RTR, OHCA_QPS_RTS,
                           OHCA_QP_STATE | kRts | OHCA_QP_MIN_RNR_TIMER | OHCA_QP_CUR_STATE));
    EXPECT_FALSE(qp_mask_ok(OHCA_QPS_RTR, OHCA_QPS_RTS, OHCA_QP_STATE | OHCA_QP_SQ_PSN));
    EXPECT_TRUE(qp_mask_ok(OHCA_QPS_RTS, OHCA_QPS_SQD, OHCA_QP_STATE));
    EXPECT_TRUE(qp_mask_ok(OHCA_QPS_SQD, OHCA_QPS_RTS, OHCA_QP_STATE));
    EXPECT_TRUE(qp_mask_ok(OHCA_QPS_SQD, OHCA_QPS_SQD, OHCA_QP_STATE | OHCA_QP_TIMEOUT));
    EXPECT_TRUE(qp_mask_ok(OHCA_QPS_SQD, OHCA_QPS_SQD, OHCA_QP_PORT | OHCA_QP_AV));
    EXPECT_FALSE(qp_mask_ok(OHCA_QPS_SQD, OHCA_QPS_SQD, OHCA_QP_SQ_PSN));
    EXPECT_TRUE(qp_mask_ok(OHCA_QPS_SQE, OHCA_QPS_RTS, OHCA_QP_STATE));
    EXPECT_FALSE(qp_mask_ok(OHCA_QPS_RESET, OHCA_QPS_RTR, OHCA_QP_STATE | kRtr));
    EXPECT_FALSE(qp_mask_ok(OHCA_QPS_RESET, OHCA_QPS_RTS, OHCA_QP_STATE | kRts));
    EXPECT_FALSE(qp_mask_ok(OHCA_QPS_INIT, OHCA_QPS_RTS, OHCA_QP_STATE | kRts));
    EXPECT_FALSE(qp_mask_ok(OHCA_QPS_ERR, OHCA_QPS_RTS, OHCA_QP_STATE));
    EXPECT_FALSE(qp_mask_ok(OHCA_QPS_RTR, OHCA_QPS_RTR, OHCA_QP_STATE));
    for (uint8_t s = OHCA_QPS_RESET; s <= OHCA_QPS_ERR; ++s) {
        EXPECT_TRUE(qp_mask_ok(s, OHCA_QPS_RESET, OHCA_QP_STATE));
        EXPECT_TRUE(qp_mask_ok(s, OHCA_QPS_ERR, OHCA_QP_STATE));
        EXPECT_FALSE(qp_mask_ok(s, OHCA_QPS_ERR, OHCA_QP_STATE | OHCA_QP_TIMEOUT));
    }
    EXPECT_FALSE(qp_mask_ok(OHCA_QPS_RESET, 7, OHCA_QP_STATE));
}

} // namespace
} // namespace ohca::test
