// SPDX-License-Identifier: GPL-2.0-or-later
// Hostile input to the transport: mutated frames that still carry a valid
// ICRC (so they reach the deep checks), hostile WQEs and doorbells. The
// devices must neither crash nor touch memory outside what the guest
// registered; traffic afterwards may fail but must complete.
#include "link/roce_packet.hpp"
#include "rdma_node.hpp"

#include <gtest/gtest.h>

#include <random>

namespace ohca::test {
namespace {

constexpr uint32_t kAllAccess =
    OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_READ;

TEST(RdmaRobustness, MutatedFramesWithValidIcrc) {
    RdmaNode a(1), b(2);
    uint32_t pd[2];
    CqInfo cq[2];
    QpInfo qp[2];
    uint64_t buf[2];
    uint32_t key[2];
    RdmaNode *n[2] = {&a, &b};
    for (int i = 0; i < 2; ++i) {
        pd[i] = n[i]->create_pd();
        cq[i] = n[i]->create_cq(10);
        qp[i] = n[i]->create_qp(pd[i], cq[i].cqn, cq[i].cqn, 8, 8);
        buf[i] = n[i]->alloc(1 << 16);
        key[i] = n[i]->reg_mr(pd[i], buf[i], 1 << 16, kAllAccess);
    }
    a.connect(qp[0], qp[1].qpn, b);
    b.connect(qp[1], qp[0].qpn, a);
    std::mt19937 rng(1234);
    for (int round = 0; round < 300; ++round) {
        for (int k = 0; k < 2; ++k) {
            b.post_recv(qp[1], round, {{buf[1], 1 << 12, key[1]}});
        }
        SendReq r;
        r.opcode = static_cast<uint8_t>(rng() % 5);
        r.remote_addr = buf[1] + rng() % 0x8000;
        r.rkey = key[1];
        r.imm = rng();
        r.sges = {{buf[0] + rng() % 0x8000, static_cast<uint32_t>(rng() % 6000), key[0]}};
        a.post_send(qp[0], r);
        a.process();
        // Mutate what a sent and what b answers; deliver originals too.
        for (int hop = 0; hop < 4; ++hop) {
            RdmaNode &from = hop % 2 == 0 ? a : b;
            RdmaNode &to = hop % 2 == 0 ? b : a;
            auto frames = std::move(from.host.wire);
            from.host.wire.clear();
            for (auto &f : frames) {
                auto m = f;
                const int kind = static_cast<int>(rng() % 4);
                if (kind == 0 && !m.empty()) {
                    m[rng() % m.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
                } else if (kind == 1) {
                    m.resize(rng() % (m.size() + 1));
                } else if (kind == 2 && m.size() > 60) {
                    // Header fields after Ethernet/IP/UDP: opcode, QPN, PSN,
                    // RETH, AETH.
                    const size_t at = 42 + rng() % 30;
                    if (at < m.size() - 4) {
                        m[at] = static_cast<uint8_t>(rng());
                    }
                }
                fix_icrc(m);
                ohca_engine_receive_frame(to.e, m.data(), m.size());
                ohca_engine_receive_frame(to.e, f.data(), f.size());
            }
            to.process();
        }
        a.host.now += 30'000'000;
        b.host.now += 30'000'000;
        (void)a.poll(cq[0]);
        (void)b.poll(cq[1]);
        if (round % 50 == 49) {
            // Bring both back to a clean state now and then.
            for (int i = 0; i < 2; ++i) {
                ohca_qp_attr at{};
                at.qp_state = OHCA_QPS_RESET;
                ASSERT_EQ(n[i]->modify(qp[i].qpn, OHCA_QP_STATE, at).status, OHCA_STATUS_OK);
                qp[i].sq_pi = qp[i].rq_pi = 0;
                (void)n[i]->poll(cq[i]);
            }
            a.connect(qp[0], qp[1].qpn, b);
            b.connect(qp[1], qp[0].qpn, a);
        }
    }
    // Still alive and consistent.
    EXPECT_EQ(ohca_engine_reg_read(a.e, OHCA_REG_DEV_STATUS, 4), uint32_t{OHCA_DEV_STATUS_READY});
    EXPECT_EQ(ohca_engine_reg_read(b.e, OHCA_REG_DEV_STATUS, 4), uint32_t{OHCA_DEV_STATUS_READY});
}

TEST(RdmaRobustness, HostileWqes) {
    RdmaNode a(1);
    const uint32_t pd = a.create_pd();
    CqInfo cq = a.create_cq(10);
    QpInfo q1 = a.create_qp(pd, cq.cqn, cq.cqn, 6, 6);
    QpInfo q2 = a.create_qp(pd, cq.cqn, cq.cqn, 6, 6);
    a.connect(q1, q2.qpn, a);
    a.connect(q2, q1.qpn, a);
    std::mt19937 rng(99);
    for (int i = 0; i < 2000; ++i) {
        QpInfo &q = i % 2 == 0 ? q1 : q2;
        // Random bytes in the next SQ and RQ slots.
        std::vector<uint8_t> junk(256);
        for (auto &x : junk) {
            x = static_cast<uint8_t>(rng());
        }
        EXPECT_TRUE(a.host.write(q.sq + 256ull * (q.sq_pi % q.sq_size), junk.data(), 256));
        EXPECT_TRUE(a.host.write(q.rq + 64ull * (q.rq_pi % q.rq_size), junk.data(), 64));
        ++q.sq_pi;
        ++q.rq_pi;
        a.ring_sq(q);
        ohca_engine_db_write(a.e, 0, OHCA_DB_RQ, OHCA_DB_VALUE(q.qpn, q.rq_pi), 8);
        ohca_engine_db_write(a.e, 0, static_cast<uint32_t>(rng() % 0x20), rng(), 8);
        a.host.now += 20'000'000;
        a.process();
        (void)a.poll(cq);
        if (a.query(q.qpn).qp_state == OHCA_QPS_ERR) {
            ohca_qp_attr at{};
            at.qp_state = OHCA_QPS_RESET;
            for (QpInfo *p : {&q1, &q2}) {
                ASSERT_EQ(a.modify(p->qpn, OHCA_QP_STATE, at).status, OHCA_STATUS_OK);
                p->sq_pi = p->rq_pi = 0;
            }
            (void)a.poll(cq);
            a.connect(q1, q2.qpn, a);
            a.connect(q2, q1.qpn, a);
        }
    }
    EXPECT_EQ(ohca_engine_reg_read(a.e, OHCA_REG_DEV_STATUS, 4), uint32_t{OHCA_DEV_STATUS_READY});
}

} // namespace
} // namespace ohca::test
