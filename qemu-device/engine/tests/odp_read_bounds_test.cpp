// SPDX-License-Identifier: GPL-2.0-or-later
// A peer's READ requests against an ODP MR (audit N3): a READ the responder
// has no resource for is refused before its pages are looked at, and the
// look at an MR's translations is bounded per request whatever its length;
// the resends of a request waiting for a fault do not walk again.
#include "device/device.hpp"
#include "link/roce_packet.hpp"
#include "rdma_node.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace ohca::test {
namespace {

constexpr uint32_t kPeerQpn = 0xabc;
constexpr uint32_t kAccess = OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_WRITE |
                             OHCA_ACCESS_REMOTE_READ | OHCA_ACCESS_REMOTE_ATOMIC;
constexpr uint64_t kOdpBase = 0x7000'0000'0000;

// A device with an RC QP in RTS whose partner is a peer crafted here, one
// READ resource (max_dest_rd_atomic 1), a 1 MiB region with a page list
// and an ODP MR with no translations.
class OdpReadBoundsTest : public ::testing::Test {
  protected:
    void SetUp() override {
        s = make_side(n, 1 << 20, 8, [](size_t k) { return static_cast<uint8_t>(k); });
        n.connect(s.qp, kPeerQpn, peer_id, 3 /* 1024 */, 14, 7, 7, kAccess, 1);
        psn = n.query(s.qp.qpn).rq_psn;
        ohca_create_mr_in in{};
        in.pdn = s.pd;
        in.access = kAccess;
        in.iova = kOdpBase;
        in.length = uint64_t{1} << 30;
        in.flags = OHCA_MR_F_ODP;
        in.pbl.page_shift = 12;
        ohca_create_out out{};
        ASSERT_EQ(n.cmd(OHCA_CMD_CREATE_MR, &in, sizeof(in), &out, sizeof(out)).status,
                  OHCA_STATUS_OK);
        odp_key = out.handle;
        (void)n.events();
    }

    // ODP_MAP of npages pages from va (identity translations, writable).
    CmdOutcome map(uint64_t va, uint32_t npages) {
        std::vector<uint8_t> buf(sizeof(ohca_odp_map_in) + npages * 8ull);
        ohca_odp_map_in in{};
        in.key = odp_key;
        in.va = va;
        in.npages = npages;
        std::memcpy(buf.data(), &in, sizeof(in));
        for (uint32_t i = 0; i < npages; ++i) {
            const uint64_t pte = (va + i * 4096ull) | OHCA_ODP_PTE_VALID | OHCA_ODP_PTE_WRITE;
            std::memcpy(buf.data() + sizeof(in) + i * 8ull, &pte, 8);
        }
        return n.cmd(OHCA_CMD_ODP_MAP, buf.data(), static_cast<uint16_t>(buf.size()));
    }

    void read_request(uint32_t at, uint64_t va, uint32_t rkey, uint32_t len) {
        PacketPath p;
        std::copy(peer_id.mac.begin(), peer_id.mac.end(), p.smac.begin());
        std::copy(n.mac.begin(), n.mac.end(), p.dmac.begin());
        p.sgid = peer_id.gid;
        p.dgid = n.gid;
        PacketFields f;
        f.bth.opcode = rc::kReadRequest;
        f.bth.dest_qp = s.qp.qpn;
        f.bth.psn = at & kPsnMask;
        f.bth.ack_req = true;
        f.reth = Reth{va, rkey, len};
        const std::vector<uint8_t> frame = build_roce_frame(p, f, {});
        (void)ohca_engine_receive_frame(n.e, frame.data(), frame.size());
    }

    [[nodiscard]] uint64_t walk_steps() const {
        return device_of(n.e).memory_keys().odp_walk_steps();
    }

    RdmaNode n{1};
    RdmaNode peer_id{2}; // only its GID and MAC: the frames are crafted here
    Side s;
    uint32_t psn = 0;
    uint32_t odp_key = 0;
};

// The one READ resource is taken by a long READ still being answered; the
// next READ names ODP pages without translations. It is refused (NAK,
// the QP goes to ERR) without a page fault: the resources are checked
// before the pages.
TEST_F(OdpReadBoundsTest, ReadWithoutResourceIsRefusedBeforeTheFault) {
    read_request(psn, s.buf, s.key, 1 << 20); // 1024 responses
    read_request(psn + 1024, kOdpBase, odp_key, 4096);
    n.process();
    EXPECT_EQ(device_of(n.e).stats().odp_faults, 0u);
    EXPECT_EQ(device_of(n.e).stats().odp_faults_dropped, 0u);
    EXPECT_EQ(walk_steps(), 0u);
    EXPECT_EQ(device_of(n.e).roce_counters().rnr_naks_sent, 0u);
    EXPECT_GE(device_of(n.e).roce_counters().error_naks_sent, 1u);
    EXPECT_EQ(n.query(s.qp.qpn).qp_state, OHCA_QPS_ERR);
}

// 8192 mapped pages (16 translation chunks) and the next one missing: a
// READ over all of them faults on the missing page after a look at each
// chunk, not at each page, and its resends (the fault still pending) do
// not look again.
TEST_F(OdpReadBoundsTest, WalkIsBoundedPerRequest) {
    constexpr uint32_t kPages = 8192;
    for (uint32_t i = 0; i < kPages; i += OHCA_ODP_MAP_MAX_PAGES) {
        ASSERT_EQ(map(kOdpBase + uint64_t{i} * 4096, OHCA_ODP_MAP_MAX_PAGES).status,
                  OHCA_STATUS_OK);
    }
    (void)n.events();
    const uint32_t len = (kPages + 1) * 4096;
    read_request(psn, kOdpBase, odp_key, len);
    n.process();
    const auto ev = n.events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].type, OHCA_EQE_PAGE_FAULT);
    EXPECT_EQ(ev[0].param1 | uint64_t{ev[0].param2} << 32, kOdpBase + uint64_t{kPages} * 4096);
    EXPECT_EQ(device_of(n.e).roce_counters().rnr_naks_sent, 1u);
    const uint64_t first = walk_steps();
    EXPECT_GT(first, 0u);
    // A chunk lookup per 512 pages, and a page at most at both ends.
    EXPECT_LE(first, kPages / OHCA_ODP_CHUNK_PAGES + 2 * OHCA_ODP_CHUNK_PAGES + 2);
    EXPECT_LT(first, kPages / 4);
    for (int i = 0; i < 100; ++i) {
        read_request(psn, kOdpBase, odp_key, len);
    }
    n.process();
    EXPECT_EQ(walk_steps(), first);
    EXPECT_EQ(device_of(n.e).roce_counters().rnr_naks_sent, 101u);
    EXPECT_TRUE(n.events().empty()); // the fault is still the one posted
    // Unanswered for too long (an event the driver lost): the next resend
    // walks again and the fault is posted again.
    n.host.now += DeviceLimits::odp_fault_repost_ns;
    read_request(psn, kOdpBase, odp_key, len);
    n.process();
    EXPECT_GT(walk_steps(), first);
    EXPECT_EQ(n.events().size(), 1u);
}

} // namespace
} // namespace ohca::test
