// SPDX-License-Identifier: GPL-2.0-or-later
// On-demand paging: an ODP MR starts without translations; the requester
// waits for a fault, the responder answers RNR NAK until ODP_MAP; ODP_UNMAP
// removes translations under traffic; a failed fault fails the access; the
// commands' validation and the device's bounds.
#include "device/device.hpp"
#include "engine_state.hpp"
#include "rdma_node.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

namespace ohca::test {
namespace {

constexpr uint32_t kAll = OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_WRITE |
                          OHCA_ACCESS_REMOTE_READ | OHCA_ACCESS_REMOTE_ATOMIC;

class OdpTest : public ::testing::Test {
  protected:
    void SetUp() override {
        pd = n.create_pd();
        scq = n.create_cq(8);
        rcq = n.create_cq(8);
        a = n.create_qp(pd, scq.cqn, rcq.cqn);
        b = n.create_qp(pd, scq.cqn, rcq.cqn);
        n.connect(a, b.qpn, n, 3, 14, 7, 7, kAll - OHCA_ACCESS_LOCAL_WRITE);
        n.connect(b, a.qpn, n, 3, 14, 7, 7, kAll - OHCA_ACCESS_LOCAL_WRITE);
        src = n.alloc(1 << 16);
        dst = n.alloc(1 << 16);
        for (uint32_t i = 0; i < (1u << 16); ++i) {
            n.host.put<uint8_t>(src + i, static_cast<uint8_t>(i * 7 + 3));
        }
    }

    CmdOutcome create_odp(uint64_t iova, uint64_t len, uint32_t &key, bool implicit = false,
                          unsigned int shift = 12) {
        ohca_create_mr_in in{};
        in.pdn = pd;
        in.access = kAll;
        in.iova = iova;
        in.length = len;
        in.flags = OHCA_MR_F_ODP | (implicit ? OHCA_MR_F_IMPLICIT : 0);
        in.pbl.page_shift = static_cast<uint8_t>(shift);
        ohca_create_out out{};
        const CmdOutcome r = n.cmd(OHCA_CMD_CREATE_MR, &in, sizeof(in), &out, sizeof(out));
        key = out.handle;
        return r;
    }
    uint32_t odp_mr(uint64_t iova, uint64_t len, bool implicit = false) {
        uint32_t key = 0;
        EXPECT_EQ(create_odp(iova, len, key, implicit).status, OHCA_STATUS_OK);
        return key;
    }
    // ODP_MAP of npages pages from va, identity translation (the fake
    // host's bus addresses are the MR's addresses).
    CmdOutcome map(uint32_t key, uint64_t va, uint32_t npages, bool write = true,
                   bool fail = false) {
        std::vector<uint8_t> buf(sizeof(ohca_odp_map_in) + (fail ? 0 : npages * 8ull));
        ohca_odp_map_in in{};
        in.key = key;
        in.flags = fail ? OHCA_ODP_MAP_FAIL : 0;
        in.va = va;
        in.npages = npages;
        std::memcpy(buf.data(), &in, sizeof(in));
        for (uint32_t i = 0; !fail && i < npages; ++i) {
            const uint64_t pte =
                (va + i * 4096ull) | OHCA_ODP_PTE_VALID | (write ? OHCA_ODP_PTE_WRITE : 0);
            std::memcpy(buf.data() + sizeof(in) + i * 8ull, &pte, 8);
        }
        return n.cmd(OHCA_CMD_ODP_MAP, buf.data(), static_cast<uint16_t>(buf.size()));
    }
    CmdOutcome unmap(uint32_t key, uint64_t va, uint64_t npages) {
        ohca_odp_unmap_in in{};
        in.key = key;
        in.va = va;
        in.npages = npages;
        return n.cmd_in(OHCA_CMD_ODP_UNMAP, in);
    }
    std::vector<ohca_eqe> faults() {
        std::vector<ohca_eqe> f;
        for (const ohca_eqe &e : n.events()) {
            if (e.type == OHCA_EQE_PAGE_FAULT) {
                f.push_back(e);
            }
        }
        return f;
    }
    static uint64_t fault_va(const ohca_eqe &e) { return e.param1 | uint64_t{e.param2} << 32; }
    // A driver: answers every fault with its pages; returns how many.
    size_t resolve(bool fail = false) {
        const auto f = faults();
        for (const ohca_eqe &e : f) {
            EXPECT_EQ(map(e.param0, fault_va(e), e.code & OHCA_PF_NPAGES_MASK, true, fail).status,
                      OHCA_STATUS_OK);
        }
        return f.size();
    }
    // Time passes (RNR waits, retry timers) and the engine runs.
    void later(uint64_t ns = 5'000'000) {
        n.host.now += ns;
        n.process();
    }
    bool same(uint64_t x, uint64_t y, size_t len) {
        std::vector<uint8_t> p(len), q(len);
        EXPECT_TRUE(n.host.read(x, p.data(), len));
        EXPECT_TRUE(n.host.read(y, q.data(), len));
        return p == q;
    }

    RdmaNode n{1};
    uint32_t pd = 0;
    CqInfo scq, rcq;
    QpInfo a, b;
    uint64_t src = 0, dst = 0;
};

TEST_F(OdpTest, QueryDeviceReportsOdp) {
    ohca_query_device_out out{};
    ASSERT_EQ(n.cmd(OHCA_CMD_QUERY_DEVICE, nullptr, 0, &out, sizeof(out)).status, OHCA_STATUS_OK);
    EXPECT_NE(out.dev_caps & OHCA_DEV_CAP_ODP, 0u);
    EXPECT_EQ(out.odp_caps, DeviceLimits::odp_caps);
    EXPECT_EQ(out.max_odp_faults, DeviceLimits::max_odp_faults);
    EXPECT_EQ(out.max_odp_chunks, DeviceLimits::max_odp_chunks);
}

TEST_F(OdpTest, RequesterWaitsForTheFaultAndResumes) {
    const uint32_t skey = odp_mr(src, 1 << 16);
    const uint32_t dkey = n.reg_mr(pd, dst, 1 << 16, kAll);
    n.post_recv(b, 9, {{dst, 8192, dkey}});
    SendReq r;
    r.sges = {{src + 100, 6000, skey}};
    n.post_send(a, r);
    n.process();
    EXPECT_TRUE(n.poll(scq).empty()); // waiting, not failed
    auto f = faults();
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].param0, skey);
    EXPECT_EQ(fault_va(f[0]), src);
    EXPECT_EQ(f[0].code & OHCA_PF_WRITE, 0u); // the device reads a SEND's source
    // The first packet (1024 bytes at src + 100) needs one page.
    EXPECT_EQ(f[0].code & OHCA_PF_NPAGES_MASK, 1u);
    ASSERT_EQ(map(skey, src, 1).status, OHCA_STATUS_OK);
    // Later packets fault again (the next page), until all are mapped.
    for (int i = 0; i < 8; ++i) {
        resolve();
        later();
    }
    auto sc = n.poll(scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
    auto rc = n.poll(rcq);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].byte_len, 6000u);
    EXPECT_TRUE(same(src + 100, dst, 6000));
}

// Without ODP MRs the data path skips the ODP checks (a key lookup per
// SGE); they come back with the first ODP MR and stay while any is left.
TEST_F(OdpTest, ChecksFollowTheOdpMrsThatExist) {
    const uint32_t dkey = n.reg_mr(pd, dst, 1 << 16, kAll);
    const uint32_t skey = odp_mr(src, 1 << 16);
    const uint32_t other = odp_mr(dst, 1 << 16);
    ohca_handle_in h{};
    h.handle = other;
    ASSERT_EQ(n.cmd_in(OHCA_CMD_DESTROY_MR, h).status, OHCA_STATUS_OK);
    n.post_recv(b, 9, {{dst, 64, dkey}});
    SendReq r;
    r.sges = {{src, 64, skey}};
    n.post_send(a, r);
    n.process();
    EXPECT_TRUE(n.poll(scq).empty()); // the ODP MR left still faults
    ASSERT_EQ(faults().size(), 1u);
    ASSERT_EQ(map(skey, src, 1).status, OHCA_STATUS_OK);
    later();
    ASSERT_EQ(n.poll(scq).size(), 1u);
    EXPECT_TRUE(same(src, dst, 64));
}

TEST_F(OdpTest, ResponderRnrNaksUntilMapped) {
    const uint32_t skey = n.reg_mr(pd, src, 1 << 16, kAll);
    const uint32_t dkey = odp_mr(dst, 1 << 16);
    SendReq w;
    w.opcode = OHCA_WR_RDMA_WRITE;
    w.remote_addr = dst + 4096;
    w.rkey = dkey;
    w.sges = {{src, 3000, skey}};
    n.post_send(a, w);
    n.process();
    EXPECT_TRUE(n.poll(scq).empty());
    auto f = faults();
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].param0, dkey);
    EXPECT_EQ(fault_va(f[0]), dst + 4096);
    EXPECT_NE(f[0].code & OHCA_PF_WRITE, 0u);
    const auto before = n.stats();
    EXPECT_GE(before.rc_rnr_naks_sent, 1u);
    // The RNR wait passes without ODP_MAP: asked again, no second event
    // (the fault is still outstanding), still no completion.
    later();
    EXPECT_TRUE(faults().empty());
    EXPECT_TRUE(n.poll(scq).empty());
    // Unanswered for a second (an event the driver lost): posted again.
    later(DeviceLimits::odp_fault_repost_ns);
    later();
    EXPECT_EQ(faults().size(), 1u);
    ASSERT_EQ(map(dkey, dst + 4096, 1).status, OHCA_STATUS_OK);
    later();
    auto sc = n.poll(scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
    EXPECT_TRUE(same(src, dst + 4096, 3000));
}

TEST_F(OdpTest, ReadAndAtomicTargetsFaultIn) {
    const uint32_t lkey = odp_mr(src, 1 << 16); // READ result and atomic result
    const uint32_t rkey = odp_mr(dst, 1 << 16); // READ source, atomic target
    n.host.put<uint64_t>(dst + 8192, 40);
    SendReq rd;
    rd.opcode = OHCA_WR_RDMA_READ;
    rd.remote_addr = dst;
    rd.rkey = rkey;
    rd.sges = {{src, 2048, lkey}};
    n.post_send(a, rd);
    SendReq at;
    at.wr_id = 2;
    at.opcode = OHCA_WR_ATOMIC_FETCH_ADD;
    at.remote_addr = dst + 8192;
    at.rkey = rkey;
    at.cmp_add = 2;
    at.sges = {{src + 8192, 8, lkey}};
    n.post_send(a, at);
    std::vector<ohca_cqe> sc;
    for (int i = 0; i < 10 && sc.size() < 2; ++i) {
        n.process();
        resolve();
        later();
        auto v = n.poll(scq);
        sc.insert(sc.end(), v.begin(), v.end());
    }
    ASSERT_EQ(sc.size(), 2u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(sc[1].status, OHCA_CQE_SUCCESS);
    EXPECT_TRUE(same(src, dst, 2048));
    EXPECT_EQ(n.host.get<uint64_t>(src + 8192), 40u);
    EXPECT_EQ(n.host.get<uint64_t>(dst + 8192), 42u); // executed once
}

TEST_F(OdpTest, UnmapUnderTrafficFaultsAgain) {
    const uint32_t skey = odp_mr(src, 1 << 16);
    const uint32_t dkey = odp_mr(dst, 1 << 16);
    ASSERT_EQ(map(skey, src, 16).status, OHCA_STATUS_OK);
    ASSERT_EQ(map(dkey, dst, 16).status, OHCA_STATUS_OK);
    for (uint64_t i = 0; i < 4; ++i) {
        n.post_recv(b, i, {{dst + i * 4096, 4096, dkey}});
        SendReq r;
        r.wr_id = i;
        r.sges = {{src + i * 4096, 4096, skey}};
        n.post_send(a, r);
        if (i == 2) {
            // The invalidation: both sides lose their pages mid-stream.
            ASSERT_EQ(unmap(skey, src, 16).status, OHCA_STATUS_OK);
            ASSERT_EQ(unmap(dkey, dst, 16).status, OHCA_STATUS_OK);
        }
        n.process();
    }
    std::vector<ohca_cqe> sc;
    size_t resolved = 0;
    for (int i = 0; i < 20 && sc.size() < 4; ++i) {
        resolved += resolve();
        later();
        auto v = n.poll(scq);
        sc.insert(sc.end(), v.begin(), v.end());
    }
    EXPECT_GE(resolved, 2u); // both MRs faulted again
    ASSERT_EQ(sc.size(), 4u);
    for (const auto &c : sc) {
        EXPECT_EQ(c.status, OHCA_CQE_SUCCESS);
    }
    EXPECT_TRUE(same(src, dst, 4 * 4096));
}

TEST_F(OdpTest, FailedFaultFailsTheWqe) {
    const uint32_t skey = odp_mr(src, 1 << 16);
    const uint32_t dkey = n.reg_mr(pd, dst, 1 << 16, kAll);
    n.post_recv(b, 9, {{dst, 4096, dkey}});
    SendReq r;
    r.sges = {{src, 100, skey}};
    n.post_send(a, r);
    n.process();
    EXPECT_EQ(resolve(true), 1u);
    later();
    auto sc = n.poll(scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_LOC_PROT_ERR);
    EXPECT_EQ(sc[0].vendor_err, OHCA_VERR_ODP_FAULT);
}

TEST_F(OdpTest, FailedResponderFaultIsARemoteAccessError) {
    const uint32_t skey = n.reg_mr(pd, src, 1 << 16, kAll);
    const uint32_t dkey = odp_mr(dst, 1 << 16);
    SendReq w;
    w.opcode = OHCA_WR_RDMA_WRITE;
    w.remote_addr = dst;
    w.rkey = dkey;
    w.sges = {{src, 64, skey}};
    n.post_send(a, w);
    n.process();
    EXPECT_EQ(resolve(true), 1u);
    later();
    auto sc = n.poll(scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_REM_ACCESS_ERR);
}

TEST_F(OdpTest, ImplicitMrCostsWhatIsMapped) {
    const uint32_t key = odp_mr(0, 0, true);
    const uint32_t dkey = n.reg_mr(pd, dst, 1 << 16, kAll);
    n.post_recv(b, 9, {{dst, 4096, dkey}});
    SendReq r;
    r.sges = {{src, 512, key}};
    n.post_send(a, r);
    n.process();
    EXPECT_EQ(resolve(), 1u);
    later();
    auto sc = n.poll(scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
    EXPECT_TRUE(same(src, dst, 512));
    // Far apart addresses of the whole space: one chunk each, and
    // unmapping the whole space walks what is there.
    EXPECT_EQ(map(key, uint64_t{1} << 47, 1).status, OHCA_STATUS_OK);
    EXPECT_EQ(unmap(key, 0, uint64_t{1} << 52).status, OHCA_STATUS_OK);
    EXPECT_EQ(map(key, ~uint64_t{0} & ~uint64_t{4095}, 1).status, OHCA_STATUS_OK);
}

TEST_F(OdpTest, CommandsValidateEveryField) {
    const uint32_t key = odp_mr(src, 1 << 16);
    const uint32_t plain = n.reg_mr(pd, dst, 4096, kAll);
    EXPECT_EQ(map(plain, dst, 1).status, OHCA_STATUS_BAD_HANDLE);
    EXPECT_EQ(map(key + 1, src, 1).status, OHCA_STATUS_BAD_HANDLE);
    EXPECT_EQ(map(key, src + 8, 1).status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(map(key, src - 4096, 1).status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(map(key, src, 17).status, OHCA_STATUS_BAD_FIELD); // past the MR
    EXPECT_EQ(map(key, src, 0).status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(map(key, src, OHCA_ODP_MAP_MAX_PAGES + 1).status, OHCA_STATUS_BAD_FIELD);
    // A PTE with stray low bits.
    std::vector<uint8_t> buf(sizeof(ohca_odp_map_in) + 8);
    ohca_odp_map_in in{};
    in.key = key;
    in.va = src;
    in.npages = 1;
    std::memcpy(buf.data(), &in, sizeof(in));
    const uint64_t bad = src | OHCA_ODP_PTE_VALID | 0x10;
    std::memcpy(buf.data() + sizeof(in), &bad, 8);
    EXPECT_EQ(n.cmd(OHCA_CMD_ODP_MAP, buf.data(), static_cast<uint16_t>(buf.size())).status,
              OHCA_STATUS_BAD_FIELD);
    // in_len that does not match npages.
    in.npages = 2;
    std::memcpy(buf.data(), &in, sizeof(in));
    EXPECT_EQ(n.cmd(OHCA_CMD_ODP_MAP, buf.data(), static_cast<uint16_t>(buf.size())).status,
              OHCA_STATUS_BAD_LEN);
    in.npages = 1;
    in.rsvd = 1;
    std::memcpy(buf.data(), &in, sizeof(in));
    EXPECT_EQ(n.cmd(OHCA_CMD_ODP_MAP, buf.data(), static_cast<uint16_t>(buf.size())).status,
              OHCA_STATUS_RESERVED_NONZERO);
    EXPECT_EQ(unmap(key, src, 0).status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(unmap(key, src, 17).status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(unmap(plain, dst, 1).status, OHCA_STATUS_BAD_HANDLE);
    // CREATE_MR: an ODP MR has no page list; implicit needs iova/length 0.
    uint32_t k = 0;
    EXPECT_EQ(create_odp(src, 0, k).status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(create_odp(src, 4096, k, true).status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(create_odp(src, 4096, k, false, 13).status, OHCA_STATUS_BAD_FIELD);
    // No REREG_MR of an ODP MR.
    ohca_rereg_mr_in rr{};
    rr.key = key;
    rr.flags = OHCA_REREG_MR_ACCESS;
    rr.access = OHCA_ACCESS_LOCAL_WRITE;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_REREG_MR, rr).status, OHCA_STATUS_BAD_STATE);
}

TEST_F(OdpTest, TranslationChunksAreBounded) {
    const uint32_t key = odp_mr(0, 0, true);
    uint32_t ok = 0;
    for (uint32_t i = 0; i <= DeviceLimits::max_odp_chunks; ++i) {
        const CmdOutcome r = map(key, uint64_t{i} * OHCA_ODP_CHUNK_PAGES * 4096, 1);
        if (r.status == OHCA_STATUS_OK) {
            ++ok;
        } else {
            EXPECT_EQ(r.status, OHCA_STATUS_NO_RESOURCES);
        }
    }
    EXPECT_EQ(ok, DeviceLimits::max_odp_chunks);
    // Unmapping frees them; destroying the MR frees the rest.
    EXPECT_EQ(unmap(key, 0, uint64_t{OHCA_ODP_CHUNK_PAGES} * 4).status, OHCA_STATUS_OK);
    EXPECT_EQ(map(key, uint64_t{1} << 40, 1).status, OHCA_STATUS_OK);
    ohca_handle_in d{};
    d.handle = key;
    EXPECT_EQ(n.cmd_in(OHCA_CMD_DESTROY_MR, d).status, OHCA_STATUS_OK);
    const uint32_t key2 = odp_mr(0, 0, true);
    EXPECT_EQ(map(key2, 0, 1).status, OHCA_STATUS_OK);
}

TEST_F(OdpTest, OutstandingFaultsAreBounded) {
    // Many QPs, each faulting on its own page: at most max_odp_faults
    // events until some are resolved; every send completes in the end.
    const uint32_t key = odp_mr(0, 0, true);
    constexpr uint32_t kQps = DeviceLimits::max_odp_faults + 8;
    std::vector<QpInfo> qs;
    for (uint32_t i = 0; i < kQps; ++i) {
        QpInfo q = n.create_qp(pd, scq.cqn, rcq.cqn, 2, 2);
        n.connect(q, b.qpn, n);
        SendReq r;
        r.wr_id = i;
        r.sges = {{(uint64_t{i} + 1) << 30, 8, key}}; // not guest memory yet
        n.post_send(q, r);
        qs.push_back(q);
    }
    n.process();
    EXPECT_EQ(faults().size(), DeviceLimits::max_odp_faults);
    EXPECT_TRUE(n.poll(scq).empty());
}

// An ODP MR travels in the saved engine with its translations, the
// outstanding fault and the QP waiting for it: after the load the driver's
// answer to the fault it saw before resumes the QP at once (no retry
// timer), and the pages mapped before are not faulted again.
TEST_F(OdpTest, AFaultInFlightTravelsInTheSavedEngine) {
    const uint32_t skey = odp_mr(src, 1 << 16);
    const uint32_t dkey = n.reg_mr(pd, dst, 1 << 16, kAll);
    ASSERT_EQ(map(skey, src, 2).status, OHCA_STATUS_OK);
    n.post_recv(b, 9, {{dst, 16384, dkey}});
    SendReq r;
    r.sges = {{src + 100, 9000, skey}}; // pages 0-2: page 2 faults
    n.post_send(a, r);
    n.process();
    const auto f = faults();
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(fault_va(f[0]), src + 2 * 4096);
    const uint64_t raised = device_of(n.e).stats().odp_faults;

    const std::vector<uint8_t> s = n.save_state();
    n.load_state(s);
    EXPECT_EQ(n.save_state(), s);
    n.process();
    EXPECT_TRUE(n.poll(scq).empty());
    EXPECT_EQ(device_of(n.e).stats().odp_faults, raised); // still pending, not raised again
    ASSERT_EQ(map(skey, fault_va(f[0]), f[0].code & OHCA_PF_NPAGES_MASK).status, OHCA_STATUS_OK);
    n.process(); // no time passes: the waiting QP was woken
    auto sc = n.poll(scq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
    ASSERT_EQ(n.poll(rcq).size(), 1u);
    EXPECT_TRUE(same(src + 100, dst, 9000));
    EXPECT_EQ(device_of(n.e).stats().odp_faults, raised);
}

// The ODP part of the KEYS section as hostile input: a translation ODP_MAP
// could not have set is refused; random resealed damage in the section is
// refused or loads without harm.
TEST_F(OdpTest, ADamagedOdpStateIsRefusedOrHarmless) {
    const uint32_t skey = odp_mr(src, 1 << 16);
    (void)odp_mr(0, 0, true);
    ASSERT_EQ(map(skey, src, 2).status, OHCA_STATUS_OK);
    SendReq r;
    r.sges = {{src + 100, 9000, skey}};
    n.post_send(a, r);
    n.process();
    ASSERT_EQ(faults().size(), 1u);
    const std::vector<uint8_t> good = n.save_state();
    const StateSection keys = state_section(good, "KEYS");
    ASSERT_LT(keys.at, good.size());

    SpareEngine fresh(n.config);
    ASSERT_EQ(fresh.load(good), "");
    // The first page's translation (identity, valid and writable).
    const uint64_t pte = src | OHCA_ODP_PTE_VALID | OHCA_ODP_PTE_WRITE;
    const auto at = std::search(good.begin() + static_cast<ptrdiff_t>(keys.body), good.end(),
                                reinterpret_cast<const uint8_t *>(&pte),
                                reinterpret_cast<const uint8_t *>(&pte) + 8);
    ASSERT_NE(at, good.end());
    const auto lie = [&](uint64_t value) {
        std::vector<uint8_t> v = good;
        std::memcpy(v.data() + (at - good.begin()), &value, 8);
        reseal_state(v);
        return fresh.load(v);
    };
    EXPECT_EQ(lie(src | OHCA_ODP_PTE_VALID), ""); // read only: ODP_MAP could
    EXPECT_NE(lie(src | OHCA_ODP_PTE_WRITE).find("ODP MR"), std::string::npos); // not valid
    EXPECT_NE(lie(pte | 0x10).find("ODP MR"), std::string::npos); // bits below the page

    std::mt19937 rng(19);
    unsigned int loaded = 0;
    for (int k = 0; k < 2000; ++k) {
        std::vector<uint8_t> v = good;
        for (int i = 1 + static_cast<int>(rng() % 2); i > 0; --i) {
            v[keys.body + rng() % keys.len] ^= static_cast<uint8_t>(1u << (rng() % 8));
        }
        reseal_state(v);
        if (fresh.load(v).empty()) {
            ++loaded;
            fresh.run_after(2'000'000'000); // the retry timer and a fault's repost
        }
    }
    EXPECT_GT(loaded, 0u);
}

} // namespace
} // namespace ohca::test
