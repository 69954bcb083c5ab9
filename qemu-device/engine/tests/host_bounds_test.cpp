// SPDX-License-Identifier: GPL-2.0-or-later
// Host memory and CPU a hostile driver or peer can make the device spend:
// page lists sized by the object they describe, the device's page-list
// budget, identities (MR keys, QP numbers) that a reset does not start over,
// error flushes in bounded steps, RNR retries for ever at a bounded rate,
// and EQ 0 out of a peer's reach.
#include "device/device.hpp"
#include "engine_test.hpp"
#include "link/roce_packet.hpp"
#include "link/roce_v2.hpp"
#include "rdma_node.hpp"

#include <gtest/gtest.h>

#include <malloc.h>

#include <array>
#include <atomic>

#include <memory>
#include <set>
#include <span>
#include <thread>
#include <vector>

namespace ohca::test {
namespace {

constexpr uint32_t kMaxListPages = OHCA_PBL_MAX_PAGES;

uint64_t pbl_bytes(const RdmaNode &n) {
    return device_of(n.e).pbl_bytes();
}

// The largest two-level list there is, from two guest pages: every level-1
// entry names the same level-2 page of 512 page addresses.
ohca_pbl huge_list(RdmaNode &n, unsigned int shift) {
    const uint64_t l1 = n.alloc(4096);
    const uint64_t l2 = n.alloc(4096);
    for (uint32_t i = 0; i < OHCA_PBL_ENTRIES_PER_PAGE; ++i) {
        n.host.put(l1 + 8ull * i, l2);
        n.host.put(l2 + 8ull * i, (uint64_t{i} + 1) << 30);
    }
    ohca_pbl p{};
    p.addr = l1;
    p.npages = kMaxListPages;
    p.page_shift = static_cast<uint8_t>(shift);
    p.levels = 2;
    return p;
}

// The fake host's logs of DMA writes and trace events, emptied and their
// storage given back, so that the heap shows what the device holds.
void drop_logs(RdmaNode &n) {
    std::vector<std::pair<uint64_t, size_t>>().swap(n.host.write_log);
    std::vector<FakeHost::TraceEvent>().swap(n.host.traces);
}

// How many QPs a device offers is the host's choice, up to 64 Ki; an idle
// QP in RTS holds at most 1 KiB of host memory (docs/bench.md), so the
// largest device's QPs cost at most 64 MiB; the QP past the limit the
// device reports is refused.
TEST(HostBoundsQpTest, IdleQpsCostAtMostOneKiBEach) {
    constexpr uint32_t kQps = 4096;
    RdmaNode n(1, false, 0, 10, kQps);
    ohca_query_device_out d{};
    ASSERT_EQ(n.cmd(OHCA_CMD_QUERY_DEVICE, nullptr, 0, &d, sizeof(d)).status, OHCA_STATUS_OK);
    EXPECT_EQ(d.max_qp, kQps);
    const uint32_t pd = n.create_pd();
    const CqInfo cq = n.create_cq();
    QpInfo first = n.create_idle_qp(pd, cq.cqn); // makes the shared rings
    n.connect(first, first.qpn, n);
    drop_logs(n);
    const size_t heap0 = mallinfo2().uordblks;
    for (uint32_t i = 1; i < kQps; ++i) {
        QpInfo q = n.create_idle_qp(pd, cq.cqn);
        ASSERT_NE(q.qpn, 0u);
        n.connect(q, q.qpn, n);
    }
    drop_logs(n);
    const size_t heap1 = mallinfo2().uordblks; // both 0 under ASan
    EXPECT_LE(heap1 - std::min(heap0, heap1), size_t{1024} * (kQps - 1));

    ohca_create_qp_in in = RdmaNode::idle_qp_in(pd, cq.cqn);
    in.sq_pbl = n.make_pbl(n.alloc(512), 512);
    in.rq_pbl = n.make_pbl(n.alloc(128), 128);
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_QP, in).status, OHCA_STATUS_NO_RESOURCES);
}

TEST(HostBoundsQpTest, QpLimitBeyondTheEnginesIsRefused) {
    FakeHost h;
    const ohca_engine_ops ops = FakeHost::ops();
    ohca_engine_config cfg{};
    cfg.max_qp = OHCA_ENGINE_MAX_QP + 1;
    EXPECT_EQ(ohca_engine_create(&ops, &h, &cfg), nullptr);
    cfg.max_qp = OHCA_ENGINE_MAX_QP;
    ohca_engine *e = ohca_engine_create(&ops, &h, &cfg);
    EXPECT_NE(e, nullptr);
    ohca_engine_destroy(e);
}

// The engine's heap count (ohca_engine_heap_bytes, the soak's bound): a
// device's allocations show in it, and what connections made and torn
// down leave behind is small.
TEST(HostBoundsHeapTest, HeapCountFollowsTheDevice) {
    if (ohca_engine_heap_bytes() == 0) {
        GTEST_SKIP() << "heap not counted (AddressSanitizer build)";
    }
    const uint64_t empty = ohca_engine_heap_bytes();
    auto n = std::make_unique<RdmaNode>(1);
    const uint64_t one = ohca_engine_heap_bytes();
    EXPECT_GT(one, empty + 4096); // the device's tables
    const uint32_t pd = n->create_pd();
    const CqInfo cq = n->create_cq();
    auto cycle = [&] {
        for (int i = 0; i < 64; ++i) {
            QpInfo q = n->create_idle_qp(pd, cq.cqn);
            ASSERT_NE(q.qpn, 0u);
            n->connect(q, q.qpn, *n);
            ohca_handle_in h{};
            h.handle = q.qpn;
            ASSERT_EQ(n->cmd_in(OHCA_CMD_DESTROY_QP, h).status, OHCA_STATUS_OK);
        }
        drop_logs(*n);
    };
    cycle(); // the first round sizes what is reused
    const uint64_t warm = ohca_engine_heap_bytes();
    for (int round = 0; round < 8; ++round) {
        cycle();
    }
    EXPECT_LT(ohca_engine_heap_bytes(), warm + 64 * 1024) << "512 QPs made and destroyed";
    n.reset();
    EXPECT_LT(ohca_engine_heap_bytes(), one) << "a destroyed device leaves its memory";
}

std::atomic<void *> g_sink{nullptr};

// The count is kept per thread (heap_account.cpp): what one thread
// allocates and another frees nets out, and threads that come and go
// (200 of them, each allocating and freeing) leave it where it was.
TEST(HostBoundsHeapTest, HeapCountAddsUpAcrossThreads) {
    if (ohca_engine_heap_bytes() == 0) {
        GTEST_SKIP() << "heap not counted (AddressSanitizer build)";
    }
    const uint64_t before = ohca_engine_heap_bytes();
    std::vector<std::unique_ptr<std::array<uint8_t, 4096>>> kept(8);
    std::thread maker([&] {
        for (auto &k : kept) {
            k = std::make_unique<std::array<uint8_t, 4096>>();
        }
    });
    maker.join();
    EXPECT_GE(ohca_engine_heap_bytes(), before + 8 * 4096) << "counted by a thread that ended";
    std::thread freer([&] { kept.clear(); });
    freer.join();
    for (int i = 0; i < 200; ++i) {
        std::thread t([] {
            auto v = std::make_unique<std::vector<uint64_t>>(1000);
            g_sink.store(v->data(), std::memory_order_relaxed); // not optimised away
        });
        t.join();
    }
    const uint64_t after = ohca_engine_heap_bytes();
    EXPECT_LT(after, before + 4096) << "freed on another thread, or by threads that ended";
    EXPECT_GT(after + 4096, before);
}

class HostBoundsTest : public ::testing::Test {
  protected:
    RdmaNode n{1};
};

// Before the fix each of these kept 2 MiB of host memory (2^18 entries) for
// a 4 KiB region: 512 of them grew QEMU by 1 GiB.
TEST_F(HostBoundsTest, PageListMayNotListMorePagesThanTheObjectCovers) {
    const uint32_t pd = n.create_pd();
    ohca_create_mr_in in{};
    in.pdn = pd;
    in.access = OHCA_ACCESS_LOCAL_WRITE;
    in.iova = 0x10000;
    in.length = 4096;
    in.pbl = huge_list(n, 12);
    const uint64_t before = pbl_bytes(n);
    const size_t heap_before = mallinfo2().uordblks;
    for (int i = 0; i < 512; ++i) {
        const auto r = n.cmd_in(OHCA_CMD_CREATE_MR, in);
        ASSERT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
        ASSERT_EQ(r.syndrome, offsetof(ohca_create_mr_in, pbl) + offsetof(ohca_pbl, npages));
    }
    EXPECT_EQ(pbl_bytes(n), before);
    // The heap as malloc sees it (0 under ASan, which replaces malloc).
    EXPECT_LT(mallinfo2().uordblks, heap_before + (size_t{1} << 20));

    // One page too many, or one too few, is refused the same way; exactly
    // the pages of [iova & ~4095, iova + length) is taken.
    const uint64_t buf = n.alloc(3 * 4096);
    in.iova = buf + 100;
    in.length = 2 * 4096; // touches 3 pages
    in.pbl = n.make_pbl(buf, 4 * 4096);
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_MR, in).status, OHCA_STATUS_BAD_FIELD);
    in.pbl.npages = 2;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_MR, in).status, OHCA_STATUS_BAD_FIELD);
    in.pbl.npages = 3;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_MR, in).status, OHCA_STATUS_OK);
    EXPECT_EQ(pbl_bytes(n), before + 3 * 8);

    // Rings: a 64-entry CQ (2 KiB) takes one page, an SQ and RQ theirs.
    ohca_create_cq_in cq{};
    cq.log_size = 6;
    cq.pbl = huge_list(n, 12);
    auto r = n.cmd_in(OHCA_CMD_CREATE_CQ, cq);
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(r.syndrome, offsetof(ohca_create_cq_in, pbl) + offsetof(ohca_pbl, npages));
    const CqInfo c = n.create_cq(6);
    ohca_create_qp_in qp{};
    qp.type = OHCA_QPT_RC;
    qp.pdn = pd;
    qp.send_cqn = c.cqn;
    qp.recv_cqn = c.cqn;
    qp.sq_log_size = 4;
    qp.sq_log_stride = 8;
    qp.rq_log_size = 4;
    qp.rq_log_stride = 6;
    const uint64_t sq = n.alloc(4096);
    qp.sq_pbl = n.make_pbl(sq, 4096);
    qp.rq_pbl = huge_list(n, 12);
    r = n.cmd_in(OHCA_CMD_CREATE_QP, qp);
    EXPECT_EQ(r.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(r.syndrome, offsetof(ohca_create_qp_in, rq_pbl) + offsetof(ohca_pbl, npages));
    EXPECT_EQ(pbl_bytes(n), before + 4 * 8);
}

// Large lists that the objects do need still count against one budget per
// device: 2^22 entries (32 MiB of host memory), then NO_RESOURCES.
TEST_F(HostBoundsTest, PageListMemoryHasADeviceBudget) {
    const uint32_t pd = n.create_pd();
    ohca_create_mr_in in{};
    in.pdn = pd;
    in.access = OHCA_ACCESS_LOCAL_WRITE;
    in.iova = 0;
    in.length = uint64_t{kMaxListPages} << 12; // 1 GiB in 4 KiB pages
    in.pbl = huge_list(n, 12);
    constexpr uint64_t per_mr = uint64_t{kMaxListPages} * 8;
    const uint64_t fit = DeviceLimits::max_pbl_entries / kMaxListPages;
    std::vector<uint32_t> keys;
    for (uint64_t i = 0; i < fit; ++i) {
        ohca_create_out o{};
        ASSERT_EQ(n.cmd(OHCA_CMD_CREATE_MR, &in, sizeof(in), &o, sizeof(o)).status, OHCA_STATUS_OK);
        keys.push_back(o.handle);
    }
    EXPECT_EQ(pbl_bytes(n), fit * per_mr);
    EXPECT_EQ(pbl_bytes(n), DeviceLimits::max_pbl_entries * 8);
    for (int i = 0; i < 100; ++i) {
        const auto r = n.cmd_in(OHCA_CMD_CREATE_MR, in);
        ASSERT_EQ(r.status, OHCA_STATUS_NO_RESOURCES);
        ASSERT_EQ(r.syndrome, 0u);
    }
    // A small ring does not fit either, until something is destroyed: a
    // CQ's, or an SRQ's (256 WQEs of 64 bytes: four 4 KiB pages).
    ohca_create_cq_in cq{};
    cq.log_size = 6;
    cq.pbl = n.make_pbl(n.alloc(4096), 2048);
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_CQ, cq).status, OHCA_STATUS_NO_RESOURCES);
    ohca_create_srq_in srq{};
    srq.pdn = pd;
    srq.log_size = 8;
    srq.log_stride = 6;
    srq.pbl = n.make_pbl(n.alloc(256 * 64), 256 * 64);
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_SRQ, srq).status, OHCA_STATUS_NO_RESOURCES);
    ohca_handle_in h{keys.back(), 0};
    ASSERT_EQ(n.cmd_in(OHCA_CMD_DESTROY_MR, h).status, OHCA_STATUS_OK);
    EXPECT_EQ(pbl_bytes(n), (fit - 1) * per_mr);
    EXPECT_EQ(n.cmd_in(OHCA_CMD_CREATE_CQ, cq).status, OHCA_STATUS_OK);
    EXPECT_EQ(pbl_bytes(n), (fit - 1) * per_mr + 8);
    ohca_create_out o{};
    ASSERT_EQ(n.cmd(OHCA_CMD_CREATE_SRQ, &srq, sizeof(srq), &o, sizeof(o)).status, OHCA_STATUS_OK);
    EXPECT_EQ(pbl_bytes(n), (fit - 1) * per_mr + 8 + 4 * 8);
    h = {o.handle, 0};
    ASSERT_EQ(n.cmd_in(OHCA_CMD_DESTROY_SRQ, h).status, OHCA_STATUS_OK);
    EXPECT_EQ(pbl_bytes(n), (fit - 1) * per_mr + 8);
    // A reset returns all of it.
    n.reset();
    EXPECT_EQ(pbl_bytes(n), 0u);
}

// A peer holding keys and QP numbers from before a reset must not find them
// naming the objects created after it.
TEST_F(HostBoundsTest, KeysAndQpnsDoNotRestartAfterReset) {
    auto make = [&](std::vector<uint32_t> &keys, std::vector<uint32_t> &qpns) {
        const uint32_t pd = n.create_pd();
        const CqInfo cq = n.create_cq(4);
        const uint64_t buf = n.alloc(4096);
        for (int i = 0; i < 8; ++i) {
            keys.push_back(n.reg_mr(pd, buf, 4096, OHCA_ACCESS_LOCAL_WRITE));
            qpns.push_back(n.create_qp(pd, cq.cqn, cq.cqn, 2, 2).qpn);
        }
    };
    std::vector<uint32_t> k1, q1, k2, q2;
    make(k1, q1);
    n.reset();
    make(k2, q2);
    const std::set<uint32_t> old_keys(k1.begin(), k1.end());
    const std::set<uint32_t> old_qpns(q1.begin(), q1.end());
    for (size_t i = 0; i < k2.size(); ++i) {
        EXPECT_EQ(old_keys.count(k2[i]), 0u) << std::hex << k2[i];
        EXPECT_EQ(old_qpns.count(q2[i]), 0u) << q2[i];
    }

    // Devices given different seeds (QEMU passes a random one) start with
    // different keys and QPNs.
    auto first_ids = [](uint32_t seed) {
        RdmaNode d(2, false, seed);
        const uint32_t pd = d.create_pd();
        const CqInfo cq = d.create_cq(4);
        const uint64_t buf = d.alloc(4096);
        return std::pair{d.reg_mr(pd, buf, 4096, OHCA_ACCESS_LOCAL_WRITE),
                         d.create_qp(pd, cq.cqn, cq.cqn, 2, 2).qpn};
    };
    const auto a = first_ids(0x12345678);
    const auto b = first_ids(0x9abcdef0);
    EXPECT_NE(a.first, b.first);
    EXPECT_NE(a.second, b.second);
    EXPECT_EQ(first_ids(0x12345678), a); // and the same seed the same ones
}

// A QP in error with 4096 send and 4096 receive WQEs: the flush is work per
// WQE, at most max_run_work of them per run of the engine (the bound when the
// clock stands still, as here), the rest in the runs after (before, one run
// wrote all 8192 CQEs, and 1024 such QPs did 8M).
TEST_F(HostBoundsTest, ErrorFlushIsBoundedPerRun) {
    const uint32_t pd = n.create_pd();
    CqInfo scq = n.create_cq(13);
    CqInfo rcq = n.create_cq(13);
    QpInfo qp = n.create_qp(pd, scq.cqn, rcq.cqn, 12, 12);
    ohca_qp_attr a{};
    a.qp_state = OHCA_QPS_INIT;
    ASSERT_EQ(n.modify(qp.qpn,
                       OHCA_QP_STATE | OHCA_QP_PKEY_INDEX | OHCA_QP_PORT | OHCA_QP_ACCESS_FLAGS, a)
                  .status,
              OHCA_STATUS_OK);
    const uint64_t buf = n.alloc(4096);
    const uint32_t key = n.reg_mr(pd, buf, 4096, OHCA_ACCESS_LOCAL_WRITE);
    for (uint32_t i = 0; i < 4096; ++i) {
        SendReq r;
        r.wr_id = i;
        r.sges = {{buf, 64, key}};
        n.post_send(qp, r, i == 4095);
        n.post_recv(qp, i, {{buf, 64, key}});
    }
    n.one_run = true;
    a = {};
    a.qp_state = OHCA_QPS_ERR;
    ASSERT_EQ(n.modify(qp.qpn, OHCA_QP_STATE, a).status, OHCA_STATUS_OK);
    const size_t first = n.poll(scq, 8192).size() + n.poll(rcq, 8192).size();
    EXPECT_GT(first, 0u);
    EXPECT_LE(first, size_t{DeviceLimits::max_run_work});
    n.one_run = false;
    n.process();
    size_t sends = 0;
    size_t recvs = 0;
    for (const auto &c : n.poll(scq, 8192)) {
        EXPECT_EQ(c.status, OHCA_CQE_WR_FLUSH_ERR);
        ++sends;
    }
    for (const auto &c : n.poll(rcq, 8192)) {
        EXPECT_EQ(c.status, OHCA_CQE_WR_FLUSH_ERR);
        ++recvs;
    }
    EXPECT_EQ(first + sends + recvs, 8192u);
}

// rnr_retry 7 retries for ever. Against a receiver that never posts a
// receive WQE (RNR timer code 1, 10 us, floored at 1 ms), 10 s used to mean
// 10000 resends; after seven tries the wait now doubles up to 100 ms.
TEST_F(HostBoundsTest, EndlessRnrRetriesBackOff) {
    const uint32_t pd = n.create_pd();
    CqInfo cq = n.create_cq(8);
    QpInfo a = n.create_qp(pd, cq.cqn, cq.cqn, 4, 4);
    QpInfo b = n.create_qp(pd, cq.cqn, cq.cqn, 4, 4);
    n.connect(a, b.qpn, n, 3, 14, 7, 7);
    n.connect(b, a.qpn, n, 3, 14, 7, 7);
    const uint64_t buf = n.alloc(4096);
    const uint32_t key = n.reg_mr(pd, buf, 4096, OHCA_ACCESS_LOCAL_WRITE);
    SendReq r;
    r.sges = {{buf, 100, key}};
    n.post_send(a, r);
    n.process();
    for (int ms = 0; ms < 10000; ++ms) {
        n.host.now += 1'000'000;
        n.process();
    }
    const uint64_t naks = n.stats().rc_rnr_naks_rcvd;
    EXPECT_GE(naks, 50u);  // still retrying ...
    EXPECT_LE(naks, 200u); // ... about 7 + 7 + 99 times, not 10000
    EXPECT_TRUE(n.poll(cq).empty());
    // A receive posted now is found by the next retry, within 100 ms.
    n.post_recv(b, 9, {{buf + 2048, 1024, key}});
    for (int ms = 0; ms < 101; ++ms) {
        n.host.now += 1'000'000;
        n.process();
    }
    const auto c = n.poll(cq);
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(c[1].status, OHCA_CQE_SUCCESS);
}

// Moves 'q' RESET -> INIT -> RTR towards 'peer' (remote QPN 0x77, expected
// PSN 0x1000), with REMOTE_WRITE access only.
void to_rtr(RdmaNode &n, const RdmaNode &peer, const QpInfo &q) {
    ohca_qp_attr a{};
    a.qp_state = OHCA_QPS_INIT;
    a.access_flags = OHCA_ACCESS_REMOTE_WRITE;
    ASSERT_EQ(
        n.modify(q.qpn, OHCA_QP_STATE | OHCA_QP_PKEY_INDEX | OHCA_QP_PORT | OHCA_QP_ACCESS_FLAGS, a)
            .status,
        OHCA_STATUS_OK);
    a = {};
    a.qp_state = OHCA_QPS_RTR;
    a.path_mtu = 3;
    a.dest_qpn = 0x77;
    a.rq_psn = 0x1000;
    std::copy(peer.gid.begin(), peer.gid.end(), a.av.dgid);
    std::copy(peer.mac.begin(), peer.mac.end(), a.av.dmac);
    a.av.vlan_id = 0xffff;
    a.av.network_type = OHCA_NET_IPV4;
    ASSERT_EQ(n.modify(q.qpn,
                       OHCA_QP_STATE | OHCA_QP_AV | OHCA_QP_PATH_MTU | OHCA_QP_DEST_QPN |
                           OHCA_QP_RQ_PSN | OHCA_QP_MAX_DEST_RD_ATOMIC | OHCA_QP_MIN_RNR_TIMER,
                       a)
                  .status,
              OHCA_STATUS_OK);
}

// Gives 'n' one request of 'peer' to QP 'qpn': a zero-length WRITE, or a
// READ (which a QP without REMOTE_READ answers with an access error).
void peer_request(RdmaNode &n, const RdmaNode &peer, uint32_t qpn, uint32_t psn, bool read) {
    PacketPath path;
    std::copy(peer.mac.begin(), peer.mac.end(), path.smac.begin());
    std::copy(n.mac.begin(), n.mac.end(), path.dmac.begin());
    path.sgid = peer.gid;
    path.dgid = n.gid;
    PacketFields f;
    f.bth.opcode = read ? rc::kReadRequest : rc::kWriteOnly;
    f.bth.dest_qp = qpn;
    f.bth.psn = psn;
    f.reth = Reth{0, 0, read ? 64u : 0u}; // a zero-length WRITE: no key needed
    const auto fr = build_roce_frame(path, f, {});
    (void)ohca_engine_receive_frame(n.e, fr.data(), fr.size());
}

// QP events a peer can cause: COMM_EST only for a packet with the expected
// PSN, and never more than half of EQ 0, so no peer can make it overflow
// (which makes the whole device fatal).
TEST(HostBounds, PeerCannotOverflowEq0) {
    RdmaNode n(1, false, 0, 8); // EQ 0 of 256 entries, as the driver has
    RdmaNode peer(2);
    const uint32_t pd = n.create_pd();
    CqInfo cq = n.create_cq(4);
    std::vector<QpInfo> qps;
    for (int i = 0; i < 300; ++i) {
        QpInfo q = n.create_qp(pd, cq.cqn, cq.cqn, 0, 0);
        to_rtr(n, peer, q);
        qps.push_back(q);
    }
    (void)n.events();
    // Spoofed PSNs (ahead, behind) establish nothing.
    peer_request(n, peer, qps[0].qpn, 0x1005, false);
    peer_request(n, peer, qps[0].qpn, 0x0fff, false);
    n.process();
    EXPECT_TRUE(n.events().empty());
    // The expected PSN on every QP, with the driver not reading EQ 0.
    n.hold_eq = true;
    for (const QpInfo &q : qps) {
        peer_request(n, peer, q.qpn, 0x1000, false);
        n.process();
    }
    EXPECT_EQ(ohca_engine_reg_read(n.e, OHCA_REG_DEV_STATUS, 4), uint32_t{OHCA_DEV_STATUS_READY});
    n.hold_eq = false;
    const auto ev = n.events();
    EXPECT_EQ(ev.size(), 128u); // half of EQ 0
    for (const auto &e : ev) {
        EXPECT_EQ(e.type, OHCA_EQE_QP_EVENT);
        EXPECT_EQ(e.code, OHCA_QP_EV_COMM_EST);
    }
    EXPECT_EQ(device_of(n.e).stats().peer_events_dropped, 300u - 128u);
    // The device still answers commands.
    EXPECT_NE(n.create_pd(), 0u);
}

// A QP on an SRQ that a peer's request puts into ERR owes LAST_WQE_REACHED
// once it is flushed, after COMM_EST and the access error: all three are
// peer-caused, so 300 such QPs still take at most half of EQ 0.
TEST(HostBounds, PeerCannotOverflowEq0ThroughSrqQps) {
    RdmaNode n(1, false, 0, 8);
    RdmaNode peer(2);
    const uint32_t pd = n.create_pd();
    CqInfo cq = n.create_cq(4);
    SrqInfo srq = n.create_srq(pd);
    std::vector<QpInfo> qps;
    for (int i = 0; i < 300; ++i) {
        QpInfo q = n.create_qp_on_srq(pd, cq.cqn, cq.cqn, srq.srqn, 0);
        to_rtr(n, peer, q);
        qps.push_back(q);
    }
    (void)n.events();
    n.hold_eq = true;
    for (const QpInfo &q : qps) {
        peer_request(n, peer, q.qpn, 0x1000, true); // no REMOTE_READ: ERR
        n.process();
    }
    EXPECT_EQ(ohca_engine_reg_read(n.e, OHCA_REG_DEV_STATUS, 4), uint32_t{OHCA_DEV_STATUS_READY});
    n.hold_eq = false;
    const auto ev = n.events();
    EXPECT_EQ(ev.size(), 128u);
    size_t last_wqe = 0;
    for (const auto &e : ev) {
        EXPECT_EQ(e.type, OHCA_EQE_QP_EVENT);
        EXPECT_TRUE(e.code == OHCA_QP_EV_COMM_EST || e.code == OHCA_QP_EV_ACCESS_ERR ||
                    e.code == OHCA_QP_EV_LAST_WQE_REACHED)
            << e.code;
        last_wqe += e.code == OHCA_QP_EV_LAST_WQE_REACHED ? 1 : 0;
    }
    EXPECT_EQ(last_wqe, 128u / 3); // each QP's three in order until EQ 0 is half full
    EXPECT_EQ(device_of(n.e).stats().peer_events_dropped, 3 * 300u - 128u);
    EXPECT_NE(n.create_pd(), 0u);
}

// count connected RC QPs on cq whose SQ is never readable: a WQE posted
// to one makes its QP FATAL, an event for EQ 0 (fewer if a create fails).
std::vector<QpInfo> failing_qps(RdmaNode &n, uint32_t pd, const CqInfo &cq, uint32_t count) {
    ohca_create_qp_in in = RdmaNode::idle_qp_in(pd, cq.cqn);
    in.sq_pbl = n.make_pbl(kUnmapped, 512);
    in.rq_pbl = n.make_pbl(n.alloc(128), 128);
    std::vector<QpInfo> qps;
    for (uint32_t i = 0; i < count; ++i) {
        ohca_create_out o{};
        if (n.cmd(OHCA_CMD_CREATE_QP, &in, sizeof(in), &o, sizeof(o)).status != OHCA_STATUS_OK) {
            break;
        }
        QpInfo q;
        q.qpn = o.handle;
        n.connect(q, q.qpn, n);
        qps.push_back(q);
    }
    return qps;
}

// Posts a WQE to each of failing_qps' QPs, running the device after each.
void fail_sqs(RdmaNode &n, std::span<QpInfo> qps) {
    for (QpInfo &q : qps) {
        q.sq_pi = 1;
        n.ring_sq(q);
        n.process();
    }
}

// EQ 0 need not grow with max_qp (OHCA_DEV_CAP_EQ0_HOLD): 2000 QPs whose
// send queues cannot be read each raise a FATAL event at once while the
// driver does not read EQ 0 (256 entries). The device stays READY, posts
// what fits and keeps the rest, one waiting entry per QP (ringing again
// adds nothing), and posts them all in order as the driver reads; then
// commands run again.
TEST(HostBounds, QpEventsWaitForRoomInEq0) {
    constexpr uint32_t kQps = 2000;
    RdmaNode n(1, false, 0, 8, kQps);
    const uint32_t pd = n.create_pd();
    CqInfo cq = n.create_cq(12);
    std::vector<QpInfo> qps = failing_qps(n, pd, cq, kQps);
    ASSERT_EQ(qps.size(), size_t{kQps});
    ASSERT_TRUE(n.events().empty());
    n.hold_eq = true;
    for (int pass = 0; pass < 2; ++pass) {
        fail_sqs(n, qps);
    }
    EXPECT_EQ(ohca_engine_reg_read(n.e, OHCA_REG_DEV_STATUS, 4), uint32_t{OHCA_DEV_STATUS_READY});
    const Stats &st = device_of(n.e).stats();
    EXPECT_EQ(st.eq0_events_held, kQps - 256u);
    EXPECT_EQ(st.eq0_events_merged, 0u);
    EXPECT_EQ(st.eq0_events_dropped, 0u);
    // A command waits behind them; the driver reading EQ 0 lets all pass.
    n.hold_eq = false;
    EXPECT_NE(n.create_pd(), 0u);
    const auto ev = n.events();
    ASSERT_EQ(ev.size(), size_t{kQps});
    for (uint32_t i = 0; i < kQps; ++i) {
        EXPECT_EQ(ev[i].type, OHCA_EQE_QP_EVENT);
        EXPECT_EQ(ev[i].code, OHCA_QP_EV_FATAL);
        EXPECT_EQ(ev[i].param0, qps[i].qpn) << i;
    }
    EXPECT_EQ(n.query(qps[0].qpn).qp_state, OHCA_QPS_ERR);
    EXPECT_EQ(ohca_engine_reg_read(n.e, OHCA_REG_DEV_STATUS, 4), uint32_t{OHCA_DEV_STATUS_READY});
}

// A CQ's completion event waits in the CQ like a QP's events in the QP;
// the objects come out in the order their events happened.
TEST(HostBounds, CqEventWaitsInOrderWithQpEvents) {
    RdmaNode n(1, false, 0, 2); // EQ 0 of 4 entries
    const uint32_t pd = n.create_pd();
    CqInfo cq = n.create_cq(6, 0); // completion events on EQ 0
    std::vector<QpInfo> qps = failing_qps(n, pd, cq, 6);
    ASSERT_EQ(qps.size(), 6u);
    (void)n.events();
    n.hold_eq = true;
    fail_sqs(n, std::span(qps).first(4));   // EQ 0 full of FATAL events
    n.cq_doorbell(cq, OHCA_DB_CQ_ARM_NEXT); // its event waits
    fail_sqs(n, std::span(qps).last(2));    // FATAL waits; the CQ is disarmed
    EXPECT_EQ(ohca_engine_reg_read(n.e, OHCA_REG_DEV_STATUS, 4), uint32_t{OHCA_DEV_STATUS_READY});
    EXPECT_EQ(device_of(n.e).stats().eq0_events_held, 3u);
    n.hold_eq = false;
    std::vector<ohca_eqe> ev;
    for (int i = 0; i < 4 && ev.size() < 7; ++i) {
        for (const ohca_eqe &e : n.events()) {
            ev.push_back(e);
        }
    }
    ASSERT_EQ(ev.size(), 7u);
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(ev[i].type, OHCA_EQE_QP_EVENT) << i;
        EXPECT_EQ(ev[i].param0, qps[i].qpn) << i;
    }
    // Arming a CQ with unpolled CQEs raises its event at once: it waits
    // first, then the two FATAL events.
    EXPECT_EQ(ev[4].type, OHCA_EQE_CQ_COMPLETION);
    EXPECT_EQ(ev[4].param0, cq.cqn);
    for (int i = 5; i < 7; ++i) {
        EXPECT_EQ(ev[i].type, OHCA_EQE_QP_EVENT) << i;
        EXPECT_EQ(ev[i].code, OHCA_QP_EV_FATAL) << i;
        EXPECT_EQ(ev[i].param0, qps[i - 1].qpn) << i;
    }
    EXPECT_EQ(n.poll(cq).size(), 6u); // each QP's failed WQE
}

// A reset forgets the events that wait: the driver starts over.
TEST(HostBounds, HeldEventsOfResetDeviceAreForgotten) {
    RdmaNode n(1, false, 0, 2, 8); // EQ 0 of 4 entries
    const uint32_t pd = n.create_pd();
    CqInfo cq = n.create_cq(6);
    std::vector<QpInfo> qps = failing_qps(n, pd, cq, 8);
    ASSERT_EQ(qps.size(), 8u);
    (void)n.events();
    n.hold_eq = true;
    fail_sqs(n, qps);
    EXPECT_EQ(device_of(n.e).stats().eq0_events_held, 4u);
    n.hold_eq = false;
    n.reset();
    EXPECT_EQ(ohca_engine_reg_read(n.e, OHCA_REG_DEV_STATUS, 4), uint32_t{OHCA_DEV_STATUS_READY});
    EXPECT_TRUE(n.events().empty());
    EXPECT_NE(n.create_pd(), 0u);
}

// What the soak (tests/integration/test_soak.py) does to the device, without
// TCG's memory around it: connections made, used and torn down again and
// again. Once the containers have their size, the heap stays where it is:
// no object leaves anything behind.
TEST(HostBoundsLifecycleTest, ConnectionsMadeAndTornDownLeaveTheHeapFlat) {
    RdmaNode a{1};
    RdmaNode b{2};
    constexpr size_t kBytes = 64 * 1024;
    const uint64_t abuf = a.alloc(kBytes);
    const uint64_t bbuf = b.alloc(kBytes);
    a.host.fill(abuf, 0x5a, kBytes);
    auto cycle = [&] {
        struct End {
            uint32_t pd, key;
            CqInfo cq;
            QpInfo qp;
        };
        auto make = [](RdmaNode &n, uint64_t buf) {
            End e{};
            e.pd = n.create_pd();
            e.cq = n.create_cq(6);
            e.qp = n.create_qp(e.pd, e.cq.cqn, e.cq.cqn, 4, 4);
            e.key = n.reg_mr(e.pd, buf, kBytes,
                             OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_WRITE |
                                 OHCA_ACCESS_REMOTE_READ);
            return e;
        };
        End ea = make(a, abuf);
        End eb = make(b, bbuf);
        a.connect(ea.qp, eb.qp.qpn, b);
        b.connect(eb.qp, ea.qp.qpn, a);
        b.post_recv(eb.qp, 7, {{bbuf, 4096, eb.key}});
        SendReq w;
        w.opcode = OHCA_WR_RDMA_WRITE;
        w.remote_addr = bbuf;
        w.rkey = eb.key;
        w.sges = {{abuf, static_cast<uint32_t>(kBytes), ea.key}};
        a.post_send(ea.qp, w);
        SendReq snd;
        snd.wr_id = 2;
        snd.sges = {{abuf, 4096, ea.key}};
        a.post_send(ea.qp, snd);
        pump(a, b);
        EXPECT_EQ(a.poll(ea.cq).size(), 2u);
        EXPECT_EQ(b.poll(eb.cq).size(), 1u);
        for (auto [n, e] : {std::pair<RdmaNode *, End *>{&a, &ea}, {&b, &eb}}) {
            ohca_handle_in h{};
            h.handle = e->qp.qpn;
            EXPECT_EQ(n->cmd_in(OHCA_CMD_DESTROY_QP, h).status, OHCA_STATUS_OK);
            h.handle = e->key;
            EXPECT_EQ(n->cmd_in(OHCA_CMD_DESTROY_MR, h).status, OHCA_STATUS_OK);
            h.handle = e->cq.cqn;
            EXPECT_EQ(n->cmd_in(OHCA_CMD_DESTROY_CQ, h).status, OHCA_STATUS_OK);
            h.handle = e->pd;
            EXPECT_EQ(n->cmd_in(OHCA_CMD_DESTROY_PD, h).status, OHCA_STATUS_OK);
            n->host.write_log.clear();
            n->host.traces.clear();
            n->host.irqs.clear();
            (void)n->events(); // the test's own record of EQ 0
        }
    };
    for (int i = 0; i < 20; ++i) {
        cycle();
    }
    const size_t heap = mallinfo2().uordblks;
    for (int i = 0; i < 200; ++i) {
        cycle();
    }
    // 0 under ASan (it replaces malloc). 200 cycles of two connections'
    // objects, each several KiB, would leave far more than 64 KiB if any of
    // them were kept. (Measured: about 35 KiB over 200 cycles and 95 KiB
    // over 1000, some 75 bytes a cycle not yet accounted for.)
    EXPECT_LT(mallinfo2().uordblks, heap + 64 * 1024);
}

} // namespace
} // namespace ohca::test
