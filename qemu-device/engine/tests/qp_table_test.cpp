// SPDX-License-Identifier: GPL-2.0-or-later
// QPN allocation (objects/qpn_alloc.hpp, QpTable): the next free number from
// the cursor, found in a few words whatever the fragmentation, and the same
// numbers through CREATE_QP after the table is fragmented.
#include "objects/qpn_alloc.hpp"
#include "rdma_node.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <set>
#include <vector>

using namespace ohca;
using namespace ohca::test;

namespace {

// The reference: the scan the table did before (one QPN at a time).
std::optional<uint32_t> scan_free(const std::vector<bool> &used, uint32_t first, uint32_t cursor) {
    const auto count = static_cast<uint32_t>(used.size());
    for (uint32_t i = 0; i < count; ++i) {
        const uint32_t n = first + (cursor - first + i) % count;
        if (!used[n - first]) {
            return n;
        }
    }
    return std::nullopt;
}

} // namespace

TEST(QpnAllocatorTest, MatchesTheScanAndLooksAtFewWords) {
    for (const uint32_t count : {1u, 63u, 64u, 65u, 1024u, 4097u, 65536u}) {
        constexpr uint32_t kFirst = 2;
        QpnAllocator a;
        a.init(kFirst, count);
        std::vector<bool> used(count, false);
        std::mt19937 rng(count);
        uint32_t cursor = kFirst + count / 3;
        uint64_t max_probes = 0;
        const int steps = count > 4096 ? 4000 : 20000; // the reference scan is slow
        for (int step = 0; step < steps; ++step) {
            // Mostly takes (so the table fills up and fragments), sometimes
            // releases a random QPN.
            if (rng() % 4 != 0) {
                const uint64_t before = a.probes();
                const std::optional<uint32_t> got = a.next_free(cursor);
                max_probes = std::max(max_probes, a.probes() - before);
                ASSERT_EQ(got, scan_free(used, kFirst, cursor)) << count << " step " << step;
                if (got) {
                    a.take(*got);
                    used[*got - kFirst] = true;
                    cursor = *got + 1;
                }
            } else {
                const uint32_t n = kFirst + rng() % count;
                if (used[n - kFirst]) {
                    a.release(n);
                    used[n - kFirst] = false;
                }
            }
            ASSERT_EQ(a.taken(kFirst + step % count), used[step % count]);
        }
        // A word, the summary words (one per 4096 QPNs), a word; twice
        // when the search wraps round.
        EXPECT_LE(max_probes, 2 * (2 + (count + 4095) / 4096)) << count;
    }
}

TEST(QpnAllocatorTest, FullThenOneFreeIsFoundFromAnyCursor) {
    QpnAllocator a;
    a.init(2, 65536);
    for (uint32_t n = 2; n < 2 + 65536; ++n) {
        a.take(n);
    }
    EXPECT_EQ(a.next_free(2), std::nullopt);
    a.release(40000);
    EXPECT_EQ(a.next_free(2), 40000u);
    EXPECT_EQ(a.next_free(40001), 40000u); // wraps round
    EXPECT_EQ(a.next_free(2 + 65536), 40000u);
    a.clear();
    EXPECT_EQ(a.next_free(7), 7u);
}

// CREATE_QP after the table was filled and every other QP destroyed: the
// freed numbers come back in cursor order, each once, then the table is
// full again.
TEST(QpTableTest, CreateAfterFragmentationReusesFreedNumbersInOrder) {
    constexpr uint32_t kQps = 256;
    RdmaNode n(1, false, 0, 10, kQps);
    const uint32_t pd = n.create_pd();
    const CqInfo cq = n.create_cq();
    std::vector<uint32_t> qpns;
    for (uint32_t i = 0; i < kQps; ++i) {
        qpns.push_back(n.create_idle_qp(pd, cq.cqn).qpn);
    }
    std::set<uint32_t> freed;
    for (size_t i = 0; i < qpns.size(); i += 2) {
        ohca_handle_in in{};
        in.handle = qpns[i];
        ASSERT_EQ(n.cmd_in(OHCA_CMD_DESTROY_QP, in).status, OHCA_STATUS_OK);
        freed.insert(qpns[i]);
    }
    // The cursor is past the last QPN made: the search wraps round to the
    // lowest freed number, then goes up.
    std::vector<uint32_t> again;
    for (size_t i = 0; i < freed.size(); ++i) {
        const QpInfo q = n.create_idle_qp(pd, cq.cqn);
        ASSERT_TRUE(freed.count(q.qpn)) << q.qpn;
        again.push_back(q.qpn);
    }
    const std::vector<uint32_t> expect(freed.begin(), freed.end());
    std::vector<uint32_t> sorted_again = again;
    std::sort(sorted_again.begin(), sorted_again.end());
    EXPECT_EQ(sorted_again, expect);
    const uint32_t last = qpns.back();
    // In cursor order: those above the last QPN made first (none here: it
    // was the highest), then from the bottom up.
    for (size_t i = 1; i < again.size(); ++i) {
        if (again[i - 1] < last) {
            EXPECT_LT(again[i - 1], again[i]);
        }
    }
    ohca_create_qp_in in = RdmaNode::idle_qp_in(pd, cq.cqn);
    in.sq_pbl = n.make_pbl(n.alloc(512), 512);
    in.rq_pbl = n.make_pbl(n.alloc(128), 128);
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_QP, in).status, OHCA_STATUS_NO_RESOURCES);
}

// RESIZE_CQ looks at the QPs of that CQ (send or receive side) and forgets
// destroyed QPs.
TEST(QpTableTest, ResizeCqCountsOnlyItsOwnQps) {
    RdmaNode n(1);
    const uint32_t pd = n.create_pd();
    const CqInfo a = n.create_cq(2);
    const CqInfo b = n.create_cq(2);
    const QpInfo qa = n.create_qp(pd, a.cqn, b.cqn, 2, 2);
    const QpInfo qb = n.create_qp(pd, b.cqn, b.cqn, 2, 2);
    ohca_resize_cq_in in{};
    auto resize = [&](uint32_t cqn, unsigned int log) {
        in = {};
        in.cqn = cqn;
        in.log_size = static_cast<uint8_t>(log);
        in.pbl = n.make_pbl(n.alloc(sizeof(ohca_cqe) << log), sizeof(ohca_cqe) << log);
        return n.cmd_in(OHCA_CMD_RESIZE_CQ, in).status;
    };
    // Nothing owed yet: both shrink to 2 entries.
    EXPECT_EQ(resize(a.cqn, 1), OHCA_STATUS_OK);
    EXPECT_EQ(resize(b.cqn, 1), OHCA_STATUS_OK);
    ohca_handle_in h{};
    h.handle = qb.qpn;
    ASSERT_EQ(n.cmd_in(OHCA_CMD_DESTROY_QP, h).status, OHCA_STATUS_OK);
    EXPECT_EQ(resize(b.cqn, 2), OHCA_STATUS_OK);
    h.handle = b.cqn;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_CQ, h).status, OHCA_STATUS_BAD_STATE); // qa's receives
    h.handle = qa.qpn;
    ASSERT_EQ(n.cmd_in(OHCA_CMD_DESTROY_QP, h).status, OHCA_STATUS_OK);
    EXPECT_EQ(resize(a.cqn, 3), OHCA_STATUS_OK);
    h.handle = b.cqn;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_CQ, h).status, OHCA_STATUS_OK);
}
