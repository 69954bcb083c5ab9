// SPDX-License-Identifier: GPL-2.0-or-later
// The engine's state saved and loaded (ohca_engine_save / ohca_engine_load,
// docs/migration.md): two devices on the fake wire with traffic in the
// middle of its messages; one (or both) saved, destroyed, created again and
// loaded, and the traffic goes on -- every completion a success, every byte
// where it belongs. And the stream as hostile input: every truncation and
// random bit flips refused, streams whose checksum was made right again
// after damage refused or loaded without harm, counts beyond the limits
// refused before anything is allocated for them.
#include "device/device.hpp"
#include "engine_state.hpp"
#include "eth/frame.hpp"
#include "ib/link.hpp"
#include "ib_sm.hpp"
#include "rdma_node.hpp"
#include "ud_qp.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>

namespace ohca::test {
namespace {

constexpr uint32_t kAccess = OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_WRITE |
                             OHCA_ACCESS_REMOTE_READ | OHCA_ACCESS_REMOTE_ATOMIC;
constexpr uint32_t kRemote =
    OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_READ | OHCA_ACCESS_REMOTE_ATOMIC;

// The configuration node 'n' was created with; 'seed' is not part of what
// must match.
ohca_engine_config config_of(const RdmaNode &n, uint32_t seed, uint8_t link_layer = OHCA_LINK_ETH) {
    ohca_engine_config cfg = n.config;
    cfg.id_seed = seed;
    cfg.link_layer = link_layer;
    return cfg;
}

// Saved, destroyed, created and loaded: what a migration does to a device.
void migrate(RdmaNode &n) {
    const std::vector<uint8_t> s = n.save_state();
    n.load_state(s);
}

// Runs both engines and delivers at most 'frames' frames in all, oldest
// first, alternating directions; what is not delivered stays on the wire.
void partial(RdmaNode &a, RdmaNode &b, size_t frames) {
    size_t done = 0;
    for (int round = 0; round < 1000 && done < frames; ++round) {
        a.process();
        b.process();
        if (a.host.wire.empty() && b.host.wire.empty()) {
            return;
        }
        for (RdmaNode *from : {&a, &b}) {
            RdmaNode &to = from == &a ? b : a;
            while (!from->host.wire.empty() && done < frames) {
                std::vector<uint8_t> f = std::move(from->host.wire.front());
                from->host.wire.erase(from->host.wire.begin());
                if (ohca_engine_receive_frame(to.e, f.data(), f.size()) == OHCA_ENGINE_RX_RETRY) {
                    from->host.wire.insert(from->host.wire.begin(), std::move(f));
                    break;
                }
                ++done;
                if (from->host.wire.size() % 2 == 0) {
                    break; // let the other direction go
                }
            }
        }
    }
}

// Pumps both until 'pred' holds, advancing both clocks whenever the wire
// goes idle (ACK timeouts recover what was lost).
bool run(RdmaNode &a, RdmaNode &b, const std::function<bool()> &pred, int rounds = 400) {
    for (int r = 0; r < rounds; ++r) {
        pump(a, b);
        if (pred()) {
            return true;
        }
        a.host.now += 20'000'000;
        b.host.now += 20'000'000;
    }
    return pred();
}

uint8_t pa(size_t k) {
    return static_cast<uint8_t>(k * 3 + 1);
}
uint8_t pb(size_t k) {
    return static_cast<uint8_t>(k * 5 + 7);
}

std::vector<uint8_t> read(RdmaNode &n, uint64_t at, size_t len) {
    std::vector<uint8_t> v(len);
    EXPECT_TRUE(n.host.read(at, v.data(), len));
    return v;
}
std::vector<uint8_t> pattern(uint8_t (*p)(size_t), size_t from, size_t len) {
    std::vector<uint8_t> v(len);
    for (size_t i = 0; i < len; ++i) {
        v[i] = p(from + i);
    }
    return v;
}

// Completions gathered from a CQ; each must be a success.
struct Done {
    std::vector<ohca_cqe> cqes;
    size_t take(RdmaNode &n, CqInfo &cq) {
        for (const ohca_cqe &c : n.poll(cq)) {
            EXPECT_EQ(c.status, OHCA_CQE_SUCCESS) << "wr_id " << c.wr_id << " opcode "
                                                  << int(c.opcode) << " verr " << int(c.vendor_err);
            cqes.push_back(c);
        }
        return cqes.size();
    }
};

// RC traffic both ways, of every kind: multi-packet SENDs, WRITEs, WRITE
// with immediate, READs, atomics and inline SENDs from A; SENDs, a WRITE
// and a READ from B. Offsets in each side's 1 MiB buffer do not overlap,
// so every byte's final value follows from the patterns.
class RcSnapshot : public ::testing::TestWithParam<std::tuple<int, int, bool>> {
  protected:
    void SetUp() override {
        sa = make_side(a, kBytes, 6, pa, 8, kAccess);
        sb = make_side(b, kBytes, 6, pb, 8, kAccess);
        a.connect(sa.qp, sb.qp.qpn, b, 3, 14, 7, 7, kRemote, 4);
        b.connect(sb.qp, sa.qp.qpn, a, 3, 14, 7, 7, kRemote, 4);
    }
    void post_all() {
        // B's receives: one big SEND, six SENDs, one WRITE with immediate.
        b.post_recv(sb.qp, 100, {{sb.buf + 0x80000, 4096, sb.key}});
        for (uint32_t i = 0; i < 6; ++i) {
            b.post_recv(sb.qp, 101 + i, {{sb.buf + 0x90000 + i * 0x1000, 4096, sb.key}});
        }
        b.post_recv(sb.qp, 107, {});
        b.post_recv(sb.qp, 108, {{sb.buf + 0x98000, 64, sb.key}});
        // A's receives: B's four SENDs.
        for (uint32_t i = 0; i < 4; ++i) {
            a.post_recv(sa.qp, 200 + i, {{sa.buf + 0xa0000 + i * 0x1000, 4096, sa.key}});
        }
        SendReq r;
        r.wr_id = 1;
        r.sges = {{sa.buf, 3300, sa.key}};
        a.post_send(sa.qp, r, false);
        r = {};
        r.wr_id = 2;
        r.opcode = OHCA_WR_RDMA_WRITE;
        r.remote_addr = sb.buf + 0x10000;
        r.rkey = sb.key;
        r.sges = {{sa.buf + 0x10000, 5000, sa.key}};
        a.post_send(sa.qp, r, false);
        r = {};
        r.wr_id = 3;
        r.opcode = OHCA_WR_RDMA_READ;
        r.remote_addr = sb.buf + 0x20000;
        r.rkey = sb.key;
        r.sges = {{sa.buf + 0x20000, 6000, sa.key}};
        a.post_send(sa.qp, r, false);
        r = {};
        r.wr_id = 4;
        r.opcode = OHCA_WR_ATOMIC_FETCH_ADD;
        r.remote_addr = sb.buf + 0x30000;
        r.rkey = sb.key;
        r.cmp_add = 5;
        r.sges = {{sa.buf + 0x30000, 8, sa.key}};
        a.post_send(sa.qp, r, false);
        r.wr_id = 5;
        r.opcode = OHCA_WR_ATOMIC_CMP_SWP;
        r.remote_addr = sb.buf + 0x30008;
        r.cmp_add = b.host.get<uint64_t>(sb.buf + 0x30008);
        r.swap = 0x1111222233334444ull;
        r.sges = {{sa.buf + 0x30008, 8, sa.key}};
        a.post_send(sa.qp, r, false);
        for (uint32_t i = 0; i < 6; ++i) {
            r = {};
            r.wr_id = 6 + i;
            r.sges = {{sa.buf + 0x40000 + i * 0x1000, 2000, sa.key}};
            a.post_send(sa.qp, r, false);
        }
        r = {};
        r.wr_id = 12;
        r.opcode = OHCA_WR_RDMA_WRITE_IMM;
        r.imm = 0x01020304;
        r.remote_addr = sb.buf + 0x50000;
        r.rkey = sb.key;
        r.sges = {{sa.buf + 0x50000, 3000, sa.key}};
        a.post_send(sa.qp, r, false);
        r = {};
        r.wr_id = 13;
        r.inline_data = {9, 8, 7, 6, 5, 4, 3, 2, 1};
        a.post_send(sa.qp, r);
        for (uint32_t i = 0; i < 4; ++i) {
            r = {};
            r.wr_id = 300 + i;
            r.sges = {{sb.buf + 0x60000 + i * 0x1000, 2500, sb.key}};
            b.post_send(sb.qp, r, false);
        }
        r = {};
        r.wr_id = 304;
        r.opcode = OHCA_WR_RDMA_WRITE;
        r.remote_addr = sa.buf + 0x70000;
        r.rkey = sa.key;
        r.sges = {{sb.buf + 0x70000, 4000, sb.key}};
        b.post_send(sb.qp, r, false);
        r = {};
        r.wr_id = 305;
        r.opcode = OHCA_WR_RDMA_READ;
        r.remote_addr = sa.buf + 0x78000;
        r.rkey = sa.key;
        r.sges = {{sb.buf + 0x78000, 3000, sb.key}};
        b.post_send(sb.qp, r);
    }
    bool all_done() {
        as.take(a, sa.scq);
        ar.take(a, sa.rcq);
        bs.take(b, sb.scq);
        br.take(b, sb.rcq);
        return as.cqes.size() == 13 && ar.cqes.size() == 4 && bs.cqes.size() == 6 &&
               br.cqes.size() == 9;
    }
    void verify() {
        EXPECT_EQ(read(b, sb.buf + 0x80000, 3300), pattern(pa, 0, 3300));
        EXPECT_EQ(read(b, sb.buf + 0x10000, 5000), pattern(pa, 0x10000, 5000));
        EXPECT_EQ(read(a, sa.buf + 0x20000, 6000), pattern(pb, 0x20000, 6000));
        uint64_t b0 = 0;
        uint64_t b8 = 0;
        const std::vector<uint8_t> o0 = pattern(pb, 0x30000, 8);
        const std::vector<uint8_t> o8 = pattern(pb, 0x30008, 8);
        std::memcpy(&b0, o0.data(), 8);
        std::memcpy(&b8, o8.data(), 8);
        EXPECT_EQ(a.host.get<uint64_t>(sa.buf + 0x30000), b0);
        EXPECT_EQ(b.host.get<uint64_t>(sb.buf + 0x30000), b0 + 5);
        EXPECT_EQ(a.host.get<uint64_t>(sa.buf + 0x30008), b8);
        EXPECT_EQ(b.host.get<uint64_t>(sb.buf + 0x30008), 0x1111222233334444ull);
        for (uint32_t i = 0; i < 6; ++i) {
            EXPECT_EQ(read(b, sb.buf + 0x90000 + i * 0x1000, 2000),
                      pattern(pa, 0x40000 + i * 0x1000, 2000));
        }
        EXPECT_EQ(read(b, sb.buf + 0x50000, 3000), pattern(pa, 0x50000, 3000));
        EXPECT_EQ(read(b, sb.buf + 0x98000, 9), (std::vector<uint8_t>{9, 8, 7, 6, 5, 4, 3, 2, 1}));
        for (uint32_t i = 0; i < 4; ++i) {
            EXPECT_EQ(read(a, sa.buf + 0xa0000 + i * 0x1000, 2500),
                      pattern(pb, 0x60000 + i * 0x1000, 2500));
        }
        EXPECT_EQ(read(a, sa.buf + 0x70000, 4000), pattern(pb, 0x70000, 4000));
        EXPECT_EQ(read(b, sb.buf + 0x78000, 3000), pattern(pa, 0x78000, 3000));
        // Each side's completions in order, once each.
        for (size_t i = 0; i < as.cqes.size(); ++i) {
            EXPECT_EQ(as.cqes[i].wr_id, i + 1);
        }
        for (size_t i = 0; i < br.cqes.size(); ++i) {
            EXPECT_EQ(br.cqes[i].wr_id, 100 + i);
        }
        ASSERT_EQ(br.cqes.size(), 9u);
        EXPECT_EQ(br.cqes[7].opcode, OHCA_CQE_RECV_RDMA_WITH_IMM);
        EXPECT_EQ(br.cqes[7].byte_len, 3000u);
    }

    static constexpr size_t kBytes = 1 << 20;
    RdmaNode a{1};
    RdmaNode b{2};
    Side sa, sb;
    Done as, ar, bs, br;
};

// Cut after 'frames' frames; migrate A (0), B (1) or both (2); with
// 'lossy' the frames in flight at the cut are lost.
TEST_P(RcSnapshot, TrafficGoesOnAfterTheLoad) {
    const auto [frames, which, lossy] = GetParam();
    post_all();
    partial(a, b, static_cast<size_t>(frames));
    // The cut is in the middle of the traffic.
    if (frames < 34) {
        ASSERT_FALSE(all_done());
    }
    if (lossy) {
        a.host.wire.clear();
        b.host.wire.clear();
    }
    if (which != 1) {
        migrate(a);
    }
    if (which != 0) {
        migrate(b);
    }
    ASSERT_TRUE(run(a, b, [&] { return all_done(); }))
        << as.cqes.size() << " " << ar.cqes.size() << " " << bs.cqes.size() << " "
        << br.cqes.size();
    verify();
    const ohca_query_stats_out st = a.stats();
    EXPECT_EQ(st.rc_retry_exceeded, 0u);
}

INSTANTIATE_TEST_SUITE_P(Cuts, RcSnapshot,
                         ::testing::Combine(::testing::Values(1, 3, 8, 21),
                                            ::testing::Values(0, 1, 2), ::testing::Bool()));

// Saved twice in a row without running in between: the same stream (the
// load restores exactly what was saved, timers included).
TEST_F(RcSnapshot, SaveLoadSaveIsTheSame) {
    post_all();
    partial(a, b, 13);
    const std::vector<uint8_t> s1 = a.save_state();
    a.load_state(s1);
    const std::vector<uint8_t> s2 = a.save_state();
    EXPECT_EQ(s1, s2);
}

// savevm, more traffic, loadvm into the same engine (QEMU's loadvm keeps
// the device): the guest's memory is that of the save, so the receive
// WQEs at the restored consumer index are read from it again, not served
// from what the responder read ahead before the load (a QP made again at
// the same address once got those).
TEST(Snapshot, ALoadIntoTheSameEngineReadsTheReceiveRingAgain) {
    RdmaNode a{1};
    RdmaNode b{2};
    Side sa = make_side(a, 1 << 16, 4, pa);
    Side sb = make_side(b, 1 << 16, 4);
    a.connect(sa.qp, sb.qp.qpn, b);
    b.connect(sb.qp, sa.qp.qpn, a);
    const auto slot = [&](uint32_t i) { return sb.qp.rq + uint64_t{i} * sb.qp.rq_stride; };
    for (uint32_t i = 0; i < 4; ++i) {
        b.post_recv(sb.qp, 10 + i, {{sb.buf + 1024ull * i, 256, sb.key}});
    }
    SendReq r;
    r.sges = {{sa.buf, 64, sa.key}};
    a.post_send(sa.qp, r);
    Done got;
    ASSERT_TRUE(run(a, b, [&] { return got.take(b, sb.rcq) == 1; }));
    EXPECT_EQ(got.cqes[0].wr_id, 10u);
    // Saved with WQEs 1-3 posted and read ahead; in the saved memory slots
    // 1-3 hold other WQEs (here written after the save, which is the same
    // thing to the device), on buffers of their own.
    const std::vector<uint8_t> saved = b.save_state();
    for (uint32_t i = 1; i < 4; ++i) {
        b.put_recv_wqe(slot(i), 20 + i, {{sb.buf + 0x8000 + 1024ull * i, 256, sb.key}});
    }
    char err[256] = "";
    ASSERT_EQ(ohca_engine_load(b.e, saved.data(), saved.size(), err, sizeof(err)), 0) << err;
    for (uint32_t i = 1; i < 4; ++i) {
        r.wr_id = 1 + i;
        r.sges = {{sa.buf + 64ull * i, 64, sa.key}};
        a.post_send(sa.qp, r);
    }
    ASSERT_TRUE(run(a, b, [&] { return got.take(b, sb.rcq) == 4; })) << got.cqes.size();
    for (uint32_t i = 1; i < 4; ++i) {
        EXPECT_EQ(got.cqes[i].wr_id, 20u + i);
        EXPECT_EQ(read(b, sb.buf + 0x8000 + 1024ull * i, 64), pattern(pa, 64ull * i, 64));
    }
}

// A stream of an engine before RSS QPs, on-demand paging and doorbell
// records (QP section version 1, KEYS, CQ and SRQ version 1, no WQ section),
// made by hand from the layout those versions had: a QP record without its
// RSS slot (the u32 after the flows), no records after the QPs and CQs, an
// MR without its ODP flag, KEYS without the page faults and their waiting
// QPs. It loads, the device saves the stream of today again
// byte for byte, and the traffic goes on.
std::vector<uint8_t> with_section(const std::vector<uint8_t> &s, const char *tag, uint16_t version,
                                  size_t cut_at, size_t cut_len) {
    const StateSection sec = state_section(s, tag);
    std::vector<uint8_t> v = s;
    v.erase(v.begin() + static_cast<std::ptrdiff_t>(sec.body + cut_at),
            v.begin() + static_cast<std::ptrdiff_t>(sec.body + cut_at + cut_len));
    const auto len = static_cast<uint32_t>(sec.len - cut_len);
    std::memcpy(v.data() + sec.at + 4, &version, 2);
    std::memcpy(v.data() + sec.at + 6, &len, 4);
    return v;
}

TEST_F(RcSnapshot, AVersion1QpAndKeysStreamLoads) {
    post_all();
    partial(a, b, 13);
    ASSERT_FALSE(all_done());
    const std::vector<uint8_t> v2 = a.save_state();
    // A's one QP: the QPN cursor, the count, then the QP's fixed fields;
    // its RSS slot (0) follows qpn, type, state, held events and nine u32s.
    const StateSection qps = state_section(v2, "QP  ");
    constexpr size_t kRss = 8 + 4 + 3 + 9 * 4;
    uint32_t count = 0;
    uint32_t qpn = 0;
    uint32_t rss = 1;
    std::memcpy(&count, v2.data() + qps.body + 4, 4);
    std::memcpy(&qpn, v2.data() + qps.body + 8, 4);
    std::memcpy(&rss, v2.data() + qps.body + kRss, 4);
    ASSERT_EQ(count, 1u);
    ASSERT_EQ(qpn, sa.qp.qpn);
    ASSERT_EQ(rss, 0u);
    std::vector<uint8_t> v1 = with_section(v2, "QP  ", 1, kRss, 4);
    // QP version 3 and CQ version 2 end with the doorbell records (none
    // here: 12 zero bytes per QP and per CQ); the older versions had none.
    const StateSection qps1 = state_section(v1, "QP  ");
    v1 = with_section(v1, "QP  ", 1, qps1.len - 12, 12);
    const StateSection cqs = state_section(v1, "CQ  ");
    ASSERT_GE(cqs.len, 24u);
    ASSERT_EQ(
        std::vector<uint8_t>(v1.begin() + static_cast<std::ptrdiff_t>(cqs.body + cqs.len - 24),
                             v1.begin() + static_cast<std::ptrdiff_t>(cqs.body + cqs.len)),
        std::vector<uint8_t>(24, 0));
    v1 = with_section(v1, "CQ  ", 1, cqs.len - 24, 24);
    // SRQ version 2 ends with the SRQs' records (no SRQ here: nothing).
    v1 = with_section(v1, "SRQ ", 1, 0, 0);
    const StateSection wqs = state_section(v1, "WQ  ");
    ASSERT_LT(wqs.at, v1.size());
    v1.erase(v1.begin() + static_cast<std::ptrdiff_t>(wqs.at),
             v1.begin() + static_cast<std::ptrdiff_t>(wqs.body + wqs.len));
    // KEYS ends with A's one MR's ODP flag (false), no page fault (a u32
    // count) and no waiting QP (a u32 count): version 1 had none of them.
    const StateSection keys = state_section(v1, "KEYS");
    ASSERT_GE(keys.len, 9u);
    const std::vector<uint8_t> tail(v1.begin() +
                                        static_cast<std::ptrdiff_t>(keys.body + keys.len - 9),
                                    v1.begin() + static_cast<std::ptrdiff_t>(keys.body + keys.len));
    ASSERT_EQ(tail, std::vector<uint8_t>(9, 0));
    v1 = with_section(v1, "KEYS", 1, keys.len - 9, 9);
    reseal_state(v1);
    // The layouts differ: the version-2 bytes under version-1 headers are refused.
    std::vector<uint8_t> mislabelled = with_section(v2, "QP  ", 1, 0, 0);
    reseal_state(mislabelled);
    SpareEngine spare(config_of(a, 7));
    EXPECT_NE(spare.load(mislabelled), "");
    a.load_state(v1);
    EXPECT_EQ(a.save_state(), v2);
    ASSERT_TRUE(run(a, b, [&] { return all_done(); }));
    verify();
    EXPECT_EQ(a.stats().rc_retry_exceeded, 0u);
}

// Timers keep the time they had left, on the new engine's clock.
TEST_F(RcSnapshot, TimersTravelAsTimeLeft) {
    post_all();
    a.process();
    a.host.wire.clear(); // everything A sent is lost: its ACK timer runs
    ASSERT_NE(a.host.timer, 0u);
    const uint64_t left = a.host.timer - a.host.now;
    const std::vector<uint8_t> s = a.save_state();
    a.host.now += 123'456'789; // the new host's clock is elsewhere
    a.host.timer = 0;
    a.load_state(s);
    EXPECT_EQ(a.host.timer, a.host.now + left);
    ASSERT_TRUE(run(a, b, [&] { return all_done(); }));
    verify();
}

// ---- UD, SRQ, XRC ------------------------------------------------------------------

// UD loses nothing it was given: what was on the wire at the save arrives
// at the loaded engine (UD, unlike RC, does not recover a loss, so no
// frame is dropped here).
TEST(Snapshot, UdGoesOn) {
    RdmaNode a{1};
    RdmaNode b{2};
    UdQp ua = make_ud(a);
    UdQp ub = make_ud(b);
    for (uint32_t i = 0; i < 16; ++i) {
        a.host.put_bytes(ua.buf + i * 1024, pattern(pa, i * 1024, 1024).data(), 1024);
        b.post_recv(ub.q, 50 + i, {{ub.buf + i * 2048, 1024 + 40, ub.key}});
    }
    for (uint32_t i = 0; i < 8; ++i) {
        post_ud(a, ua, b, ub.q.qpn, i, ua.buf + i * 1024, 1000);
    }
    partial(a, b, 3);
    // What the engines took in is handled before the save (a datagram
    // left in the receive backlog would be lost, docs/migration.md); what
    // is still on the wire arrives at the loaded engine.
    a.process();
    b.process();
    ASSERT_FALSE(a.host.wire.empty());
    migrate(a);
    migrate(b);
    for (uint32_t i = 8; i < 16; ++i) {
        post_ud(a, ua, b, ub.q.qpn, i, ua.buf + i * 1024, 1000);
    }
    Done sent;
    Done got;
    ASSERT_TRUE(run(a, b, [&] { return sent.take(a, ua.scq) == 16 && got.take(b, ub.rcq) == 16; }))
        << sent.cqes.size() << " " << got.cqes.size();
    for (uint32_t i = 0; i < 16; ++i) {
        EXPECT_EQ(got.cqes[i].wr_id, 50 + i);
        // A UD receive starts with the 40-byte GRH.
        EXPECT_EQ(read(b, ub.buf + i * 2048 + 40, 1000), pattern(pa, i * 1024, 1000));
    }
}

// A UD flood beside RC traffic both ways, across a save and load of the
// flooding end (the migration test's ib_send_bw -c UD beside RC, issue 26):
// the UD sender keeps its send queue full, the receiver has fewer receives
// than datagrams (the rest are dropped), the RC QPs have WQEs in flight
// and frames on the wire at the cut, which are lost. The RC traffic must
// complete, every WQE a success and no retry exhausted, while the flood
// goes on after the load.
TEST(Snapshot, UdFloodBesideRcGoesOn) {
    RdmaNode a{1};
    RdmaNode b{2};
    Side sa = make_side(a, 1 << 18, 6, pa, 8, kAccess);
    Side sb = make_side(b, 1 << 18, 6, pb, 8, kAccess);
    a.connect(sa.qp, sb.qp.qpn, b);
    b.connect(sb.qp, sa.qp.qpn, a);
    UdQp ua = make_ud(a);
    UdQp ub = make_ud(b);
    for (uint32_t i = 0; i < 32; ++i) {
        a.host.put_bytes(ua.buf + i * 1024, pattern(pa, i * 1024, 512).data(), 512);
    }
    uint64_t ud_posted = 0;
    uint64_t ud_recv_posted = 0;
    Done ud_sent;
    Done ud_got;
    // Keeps A's UD send queue full and B's receive queue at 'recvs'.
    auto flood = [&](uint32_t recvs) {
        ud_sent.take(a, ua.scq);
        while (ud_posted - ud_sent.cqes.size() < ua.q.sq_size) {
            post_ud(a, ua, b, ub.q.qpn, ud_posted, ua.buf + (ud_posted % 32) * 1024, 512);
            ++ud_posted;
        }
        ud_got.take(b, ub.rcq);
        while (ud_recv_posted - ud_got.cqes.size() < recvs) {
            b.post_recv(ub.q, 1000 + ud_recv_posted,
                        {{ub.buf + (ud_recv_posted % 16) * 2048, 512 + 40, ub.key}});
            ++ud_recv_posted;
        }
    };
    // RC: A SENDs to B and WRITEs; B SENDs to A; 48 messages each way.
    constexpr uint32_t kMsgs = 48;
    uint32_t a_posted = 0;
    uint32_t b_posted = 0;
    Done as;
    Done ar;
    Done bs;
    Done br;
    auto rc = [&] {
        as.take(a, sa.scq);
        ar.take(a, sa.rcq);
        bs.take(b, sb.scq);
        br.take(b, sb.rcq);
        while (a_posted < kMsgs && a_posted - as.cqes.size() < 16) {
            const uint32_t i = a_posted++;
            b.post_recv(sb.qp, 500 + i, {{sb.buf + 0x20000 + (i % 16) * 0x1000, 4096, sb.key}});
            SendReq r;
            r.wr_id = i;
            r.opcode = i % 3 == 2 ? OHCA_WR_RDMA_WRITE : OHCA_WR_SEND;
            r.remote_addr = sb.buf + 0x30000 + (i % 16) * 0x1000;
            r.rkey = sb.key;
            r.sges = {{sa.buf + (i % 16) * 0x1000, 3000, sa.key}};
            a.post_send(sa.qp, r);
        }
        while (b_posted < kMsgs && b_posted - bs.cqes.size() < 16) {
            const uint32_t i = b_posted++;
            a.post_recv(sa.qp, 700 + i, {{sa.buf + 0x20000 + (i % 16) * 0x1000, 4096, sa.key}});
            SendReq r;
            r.wr_id = 100 + i;
            r.sges = {{sb.buf + (i % 16) * 0x1000, 1500, sb.key}};
            b.post_send(sb.qp, r);
        }
        return as.cqes.size() == kMsgs && bs.cqes.size() == kMsgs && ar.cqes.size() == kMsgs &&
               br.cqes.size() == kMsgs - kMsgs / 3;
    };
    for (int round = 0; round < 6; ++round) {
        flood(8);
        rc();
        partial(a, b, 40);
    }
    ASSERT_FALSE(rc());
    ASSERT_FALSE(a.host.wire.empty());
    a.host.wire.clear();
    b.host.wire.clear();
    migrate(a);
    const uint64_t ud_before = ud_got.cqes.size();
    ASSERT_TRUE(run(a, b,
                    [&] {
                        flood(8);
                        return rc();
                    }))
        << as.cqes.size() << " " << ar.cqes.size() << " " << bs.cqes.size() << " "
        << br.cqes.size();
    EXPECT_GT(ud_got.cqes.size(), ud_before + 16); // the flood went on
    EXPECT_EQ(a.stats().rc_retry_exceeded, 0u);
    EXPECT_EQ(b.stats().rc_retry_exceeded, 0u);
}

// RC QPs on an SRQ at the receiver: the SRQ's ring, its taken WQEs and
// the WQE a QP holds travel.
TEST(Snapshot, SrqGoesOn) {
    RdmaNode a{1};
    RdmaNode b{2};
    Side sa = make_side(a, 1 << 18, 6, pa, 8, kAccess);
    const uint32_t bpd = b.create_pd();
    CqInfo bscq = b.create_cq(8);
    CqInfo brcq = b.create_cq(8);
    SrqInfo srq = b.create_srq(bpd, 6);
    QpInfo bq = b.create_qp_on_srq(bpd, bscq.cqn, brcq.cqn, srq.srqn);
    const uint64_t bbuf = b.alloc(1 << 18);
    const uint32_t bkey = b.reg_mr(bpd, bbuf, 1 << 18, kAccess);
    a.connect(sa.qp, bq.qpn, b);
    b.connect(bq, sa.qp.qpn, a);
    for (uint32_t i = 0; i < 12; ++i) {
        b.post_srq_recv(srq, 500 + i, {{bbuf + i * 0x2000, 0x2000, bkey}});
    }
    for (uint32_t i = 0; i < 12; ++i) {
        SendReq r;
        r.wr_id = i;
        r.sges = {{sa.buf + i * 0x2000, 5000, sa.key}};
        a.post_send(sa.qp, r, i == 11);
    }
    partial(a, b, 9);
    a.host.wire.clear();
    migrate(b);
    Done sent;
    Done got;
    ASSERT_TRUE(run(a, b, [&] { return sent.take(a, sa.scq) == 12 && got.take(b, brcq) == 12; }));
    for (uint32_t i = 0; i < 12; ++i) {
        EXPECT_EQ(got.cqes[i].wr_id, 500 + i);
        EXPECT_EQ(read(b, bbuf + i * 0x2000, 5000), pattern(pa, i * 0x2000, 5000));
    }
}

// XRC: an initiator on A, a target and two XRC SRQs of one domain on B.
TEST(Snapshot, XrcGoesOn) {
    RdmaNode a{1};
    RdmaNode b{2};
    const uint32_t apd = a.create_pd();
    CqInfo ascq = a.create_cq(8);
    QpInfo ini = a.create_xrc_ini(apd, ascq.cqn);
    const uint64_t abuf = a.alloc(1 << 18);
    const uint32_t akey = a.reg_mr(apd, abuf, 1 << 18, OHCA_ACCESS_LOCAL_WRITE);
    a.host.put_bytes(abuf, pattern(pa, 0, 1 << 18).data(), 1 << 18);
    const uint32_t bpd = b.create_pd();
    const uint32_t xd = b.alloc_xrcd();
    CqInfo cq1 = b.create_cq(8);
    CqInfo cq2 = b.create_cq(8);
    SrqInfo srq1 = b.create_xrc_srq(bpd, xd, cq1.cqn);
    SrqInfo srq2 = b.create_xrc_srq(bpd, xd, cq2.cqn);
    QpInfo tgt = b.create_xrc_tgt(xd);
    const uint64_t bbuf = b.alloc(1 << 18);
    const uint32_t bkey = b.reg_mr(bpd, bbuf, 1 << 18, kAccess);
    a.connect(ini, tgt.qpn, b);
    b.connect(tgt, ini.qpn, a, 3, 14, 7, 7, kRemote);
    for (uint32_t i = 0; i < 6; ++i) {
        b.post_srq_recv(srq1, 600 + i, {{bbuf + i * 0x2000, 0x2000, bkey}});
        b.post_srq_recv(srq2, 700 + i, {{bbuf + 0x10000 + i * 0x2000, 0x2000, bkey}});
    }
    for (uint32_t i = 0; i < 12; ++i) {
        SendReq r;
        r.wr_id = i;
        r.xrc_srqn = i % 2 == 0 ? srq1.srqn : srq2.srqn;
        r.sges = {{abuf + i * 0x2000, 3000, akey}};
        a.post_send(ini, r, i == 11);
    }
    partial(a, b, 7);
    migrate(a);
    migrate(b);
    Done sent;
    Done got1;
    Done got2;
    ASSERT_TRUE(run(a, b, [&] {
        return sent.take(a, ascq) == 12 && got1.take(b, cq1) + got2.take(b, cq2) == 12;
    }));
    for (uint32_t i = 0; i < 6; ++i) {
        EXPECT_EQ(got1.cqes[i].wr_id, 600 + i);
        EXPECT_EQ(got2.cqes[i].wr_id, 700 + i);
        EXPECT_EQ(read(b, bbuf + i * 0x2000, 3000), pattern(pa, 2 * i * 0x2000, 3000));
        EXPECT_EQ(read(b, bbuf + 0x10000 + i * 0x2000, 3000),
                  pattern(pa, (2 * i + 1) * 0x2000, 3000));
    }
}

// ---- the stream as hostile input ---------------------------------------------------

// A stream of a busy device: RC mid-stream, a UD QP, an SRQ, XRC objects,
// device memory, a memory window.
ohca_query_pfc_out query_pfc(RdmaNode &n) {
    ohca_query_pfc_in in{};
    in.port = 1;
    ohca_query_pfc_out out{};
    EXPECT_EQ(n.cmd(OHCA_CMD_QUERY_PFC, &in, sizeof(in), &out, sizeof(out)).status, OHCA_STATUS_OK);
    return out;
}

// PFC on priority 'prio' at 'speed_mbps', and a pause of it for 'quanta'
// received.
void paused_by_peer(RdmaNode &n, uint8_t prio, uint32_t speed_mbps, uint16_t quanta) {
    ohca_set_pfc_in in{};
    in.port = 1;
    in.cfg.pfc_en = static_cast<uint8_t>(1u << prio);
    in.cfg.trust = OHCA_PFC_TRUST_PCP;
    in.cfg.speed_mbps = speed_mbps;
    ASSERT_EQ(n.cmd_in(OHCA_CMD_SET_PFC, in).status, OHCA_STATUS_OK);
    eth::PfcInfo p;
    p.enable = in.cfg.pfc_en;
    p.quanta[prio] = quanta;
    const auto f = eth::make_pfc(eth::Mac{0x02, 0, 0, 0, 0, 0x42}, p);
    ASSERT_EQ(ohca_engine_receive_frame(n.e, f.data(), f.size()), OHCA_ENGINE_RX_CONSUMED);
}

class HostileStream : public RcSnapshot {
  protected:
    void SetUp() override {
        RcSnapshot::SetUp();
        make_ud(a);
        const uint32_t pd = a.create_pd();
        a.create_srq(pd, 4, 2);
        const uint32_t xd = a.alloc_xrcd();
        CqInfo cq = a.create_cq(4);
        a.create_xrc_srq(pd, xd, cq.cqn);
        a.create_xrc_tgt(xd);
        ohca_alloc_dm_in dm{};
        dm.length = 5000;
        ohca_alloc_dm_out dmo{};
        ASSERT_EQ(a.cmd(OHCA_CMD_ALLOC_DM, &dm, sizeof(dm), &dmo, sizeof(dmo)).status,
                  OHCA_STATUS_OK);
        ohca_create_out o{};
        ohca_engine_dm_write(a.e, 8, 0x1234567890abcdefull, 8);
        ohca_alloc_mw_in mw{};
        mw.pdn = sa.pd;
        mw.type = OHCA_MW_TYPE_1;
        ASSERT_EQ(a.cmd(OHCA_CMD_ALLOC_MW, &mw, sizeof(mw), &o, sizeof(o)).status, OHCA_STATUS_OK);
        post_all();
        partial(a, b, 11);
        stream = a.save_state();
        ASSERT_GT(stream.size(), 1000u);
    }
    // Loads 's' into a fresh engine of A's configuration: the result, and
    // the engine left in its power-on state when it failed.
    int load(const std::vector<uint8_t> &s, std::string *why = nullptr) {
        char err[256] = "";
        const int rc = ohca_engine_load(fresh, s.data(), s.size(), err, sizeof(err));
        if (why != nullptr) {
            *why = err;
        }
        if (rc != 0) {
            EXPECT_NE(err[0], '\0');
            EXPECT_EQ(ohca_engine_reg_read(fresh, OHCA_REG_DEV_STATUS, 4),
                      uint64_t{OHCA_DEV_STATUS_RESET_DONE});
        }
        return rc;
    }
    void TearDown() override { ohca_engine_destroy(fresh); }

    std::vector<uint8_t> stream;
    FakeHost host2;
    ohca_engine *fresh = [this] {
        const ohca_engine_ops ops = FakeHost::ops();
        const ohca_engine_config cfg = config_of(a, 7);
        return ohca_engine_create(&ops, &host2, &cfg);
    }();
};

TEST_F(HostileStream, TheWholeStreamLoads) {
    EXPECT_EQ(load(stream), 0);
    EXPECT_EQ(ohca_engine_dm_read(fresh, 8, 8), 0x1234567890abcdefull);
}

TEST_F(HostileStream, EveryTruncationIsRefused) {
    for (size_t n = 0; n < stream.size(); ++n) {
        const std::vector<uint8_t> s(stream.begin(), stream.begin() + static_cast<ptrdiff_t>(n));
        ASSERT_NE(load(s), 0) << n;
    }
    // ... and so is one resealed after the cut: the sections say what is missing.
    for (size_t n = 4; n < stream.size(); n += 97) {
        std::vector<uint8_t> s(stream.begin(), stream.begin() + static_cast<ptrdiff_t>(n));
        reseal_state(s);
        ASSERT_NE(load(s), 0) << n;
    }
}

TEST_F(HostileStream, RandomBitFlipsAreRefused) {
    std::mt19937 rng(26);
    for (int k = 0; k < 3000; ++k) {
        std::vector<uint8_t> s = stream;
        const size_t i = rng() % s.size();
        s[i] ^= static_cast<uint8_t>(1u << (rng() % 8));
        ASSERT_NE(load(s), 0) << i;
    }
}

// Damage the checksum does not see: each load is refused, or loads a
// device that then runs without harm (ASan and UBSan builds check it).
TEST_F(HostileStream, ResealedDamageIsRefusedOrHarmless) {
    std::mt19937 rng(2026);
    unsigned int loaded = 0;
    for (int k = 0; k < 3000; ++k) {
        std::vector<uint8_t> s = stream;
        const int flips = 1 + static_cast<int>(rng() % 3);
        for (int f = 0; f < flips; ++f) {
            const size_t i = rng() % (s.size() - 4);
            if (rng() % 4 == 0) {
                s[i] = static_cast<uint8_t>(rng());
            } else {
                s[i] ^= static_cast<uint8_t>(1u << (rng() % 8));
            }
        }
        reseal_state(s);
        if (load(s) == 0) {
            ++loaded;
            ohca_engine_process(fresh);
            host2.now += 1'000'000'000;
            ohca_engine_process(fresh);
            host2.wire.clear();
        }
    }
    // A flip in a value field (a PSN, a wr_id, a counter) loads.
    EXPECT_GT(loaded, 0u);
}

TEST_F(HostileStream, CountsBeyondTheLimitsAreRefusedBeforeAllocating) {
    // The QP count (after the QPN cursor), the PD count, the CQ section's
    // EQ count, the SRQ count, the WQ count: each to the largest value.
    for (const auto &[tag, skip] : std::vector<std::pair<const char *, size_t>>{
             {"QP  ", 4}, {"PD  ", 0}, {"CQ  ", 0}, {"SRQ ", 0}, {"WQ  ", 0}}) {
        std::vector<uint8_t> s = stream;
        const size_t at = state_section(s, tag).at;
        ASSERT_LT(at, s.size()) << tag;
        const size_t field = at + 10 + skip;
        const uint32_t big = 0xffffffffu;
        std::memcpy(s.data() + field, &big, 4);
        reseal_state(s);
        std::string why;
        ASSERT_NE(load(s, &why), 0) << tag;
        EXPECT_NE(why.find("above the limit"), std::string::npos) << why;
    }
    // A count within the limit that the bytes left cannot hold: refused
    // before anything is allocated for it.
    std::vector<uint8_t> s = stream;
    const size_t at = state_section(s, "QP  ").at;
    const uint32_t n = 1025; // max_qp + 1
    std::memcpy(s.data() + at + 10 + 4, &n, 4);
    reseal_state(s);
    std::string why;
    ASSERT_NE(load(s, &why), 0);
    EXPECT_NE(why.find("do not fit"), std::string::npos) << why;
}

TEST_F(HostileStream, AnotherConfigurationIsRefused) {
    ohca_engine_destroy(fresh);
    const ohca_engine_ops ops = FakeHost::ops();
    ohca_engine_config cfg = config_of(a, 7);
    cfg.mac[5] ^= 1;
    fresh = ohca_engine_create(&ops, &host2, &cfg);
    std::string why;
    ASSERT_NE(load(stream, &why), 0);
    EXPECT_NE(why.find("configured otherwise"), std::string::npos) << why;
}

// A loaded pause may not outlast what a frame can ask for: a 3.4 s pause
// at 10 Mbit/s, its speed made 400 Gbit/s (the longest pause 84 us).
TEST_F(HostileStream, APauseLongerThanAFrameCanAskIsRefused) {
    paused_by_peer(a, 0, 10, 0xffff);
    std::vector<uint8_t> s = a.save_state();
    const std::array<uint8_t, 7> cfg{0x01, 0, OHCA_PFC_TRUST_PCP, 10, 0, 0, 0};
    const auto at = std::search(s.begin() + static_cast<ptrdiff_t>(state_section(s, "PORT").at),
                                s.end(), cfg.begin(), cfg.end());
    ASSERT_NE(at, s.end());
    at[3] = 0x80; // 400000 = 0x061a80
    at[4] = 0x1a;
    at[5] = 0x06;
    reseal_state(s);
    std::string why;
    ASSERT_NE(load(s, &why), 0);
    EXPECT_NE(why.find("PFC: a pause beyond"), std::string::npos) << why;
    // unpatched, it loads
    EXPECT_EQ(load(a.save_state(), &why), 0) << why;
}

TEST_F(HostileStream, ANewerSectionVersionIsRefusedByName) {
    std::vector<uint8_t> s = stream;
    const size_t at = state_section(s, "SRQ ").at;
    s[at + 4] = 3; // version 3
    reseal_state(s);
    std::string why;
    ASSERT_NE(load(s, &why), 0);
    EXPECT_NE(why.find("SRQs: version 3"), std::string::npos) << why;
}

// PAUSE/PFC travel: the settings, the counters and a pause in force with
// the time it has left.
TEST(Snapshot, PfcSettingsAndPausesTravel) {
    RdmaNode a{1};
    paused_by_peer(a, 3, 1000, 1000); // 512 us at 1 Gbit/s
    a.host.now += 100'000;
    migrate(a);
    const ohca_query_pfc_out q = query_pfc(a);
    EXPECT_EQ(q.cfg.pfc_en, 0x08);
    EXPECT_EQ(q.cfg.speed_mbps, 1000u);
    EXPECT_EQ(q.rx_pfc[3], 1u);
    EXPECT_EQ(q.paused, 0x08);
    a.host.now += 411'999; // the pause's last nanosecond
    EXPECT_EQ(query_pfc(a).paused, 0x08);
    a.host.now += 1;
    EXPECT_EQ(query_pfc(a).paused, 0);
}

TEST(Snapshot, NotFromInsideACallback) {
    RdmaNode a{1};
    std::string why;
    int rc = 0;
    a.host.on_dma = [&] {
        uint8_t *buf = nullptr;
        size_t len = 0;
        char err[128] = "";
        rc = ohca_engine_save(a.e, &buf, &len, err, sizeof(err));
        why = err;
        a.host.on_dma = nullptr;
    };
    a.create_pd();
    EXPECT_EQ(rc, -1);
    EXPECT_NE(why.find("callback"), std::string::npos);
}

} // namespace
} // namespace ohca::test

namespace ohca::test {
namespace {

// The data packets a node put on the wire, without link packets (FCPs).
size_t data_frames_on(const RdmaNode &n) {
    return static_cast<size_t>(
        std::count_if(n.host.wire.begin(), n.host.wire.end(),
                      [](const auto &f) { return f.size() != ib::kLinkPacketBytes; }));
}

// An InfiniBand port (issue 26 item 4): the SM's settings, the PMA's
// counters and the link's credits travel with the device.
class IbSnapshot : public ::testing::Test {
  protected:
    void SetUp() override {
        sm_bring_up(a, 0x10);
        sm_bring_up(b, 0x20);
        // Beyond the bring-up: a partition in the P_Key table (entry 1) and
        // SL 1 on VL 1.
        ib::SmpData d{};
        d[0] = 0xff;
        d[1] = 0xff;
        d[2] = 0x80;
        d[3] = 0x01;
        ASSERT_EQ(smp(a, ib::method::Set, ib::attr::PKeyTable, 0, d).status(), 0);
        d = {};
        d[0] = 0x01; // SL0 -> VL0, SL1 -> VL1
        ASSERT_EQ(smp(a, ib::method::Set, ib::attr::SlToVlTable, 0, d).status(), 0);
        pump(a, b);
        sa = make_side(a, 1 << 20, 6, pa);
        sb = make_side(b, 1 << 20, 6, pb);
        a.connect(sa.qp, sb.qp.qpn, b, 5);
        b.connect(sb.qp, sa.qp.qpn, a, 5);
    }
    // A's saved stream 'good' with its PortInfo (as A has it now) replaced
    // by 'pi' and resealed, loaded into a new engine: the error, "" if it
    // loaded.
    std::string load_with_port_info(const std::vector<uint8_t> &good, const ib::PortInfo &pi) {
        ib::SmpData want{};
        port_info(a).write(want);
        const auto at = std::search(good.begin(), good.end(), want.begin(), want.end());
        EXPECT_NE(at, good.end());
        if (at == good.end()) {
            return "no PortInfo in the stream";
        }
        std::vector<uint8_t> s = good;
        ib::SmpData bytes{};
        pi.write(bytes);
        std::copy(bytes.begin(), bytes.end(), s.begin() + (at - good.begin()));
        reseal_state(s);
        FakeHost h;
        const ohca_engine_ops ops = FakeHost::ops();
        const ohca_engine_config cfg = config_of(a, 3, OHCA_LINK_IB);
        ohca_engine *e = ohca_engine_create(&ops, &h, &cfg);
        char err[256] = "";
        const int rc = ohca_engine_load(e, s.data(), s.size(), err, sizeof(err));
        ohca_engine_destroy(e);
        return rc == 0 ? std::string() : std::string(err);
    }
    RdmaNode a{1, false, 0, 10, 0, nullptr, OHCA_LINK_IB};
    RdmaNode b{2, false, 0, 10, 0, nullptr, OHCA_LINK_IB};
    Side sa, sb;
};

// Saved in the middle of a SEND, a WRITE and a READ by LID, loaded into a
// new engine: the port is ACTIVE with its LID and the SM's tables, and the
// traffic completes with every byte in place (what was in flight is sent
// again; the credits resynchronize through FCPs, with no overrun).
TEST_F(IbSnapshot, ThePortKeepsItsLidAndTrafficGoesOn) {
    b.post_recv(sb.qp, 5, {{sb.buf, 20000, sb.key}});
    SendReq s;
    s.sges = {{sa.buf, 20000, sa.key}};
    a.post_send(sa.qp, s);
    SendReq w;
    w.wr_id = 2;
    w.opcode = OHCA_WR_RDMA_WRITE;
    w.remote_addr = sb.buf + 0x10000;
    w.rkey = sb.key;
    w.sges = {{sa.buf + 0x20000, 30000, sa.key}};
    a.post_send(sa.qp, w);
    SendReq r;
    r.wr_id = 3;
    r.opcode = OHCA_WR_RDMA_READ;
    r.remote_addr = sb.buf + 0x40000;
    r.rkey = sb.key;
    r.sges = {{sa.buf + 0x50000, 30000, sa.key}};
    a.post_send(sa.qp, r);
    partial(a, b, 9);
    const auto before = port_info(a);
    a.host.wire.clear(); // in flight when A stopped: lost
    a.load_state(a.save_state());
    const ib::PortInfo after = port_info(a);
    EXPECT_EQ(after.port_state, ib::port_state::Active);
    EXPECT_EQ(after.lid, 0x10);
    EXPECT_EQ(after.master_sm_lid, 1);
    EXPECT_EQ(after.m_key, before.m_key);
    const ib::Smp pk = smp(a, ib::method::Get, ib::attr::PKeyTable, 0, {});
    EXPECT_EQ(pk.data[2], 0x80);
    EXPECT_EQ(pk.data[3], 0x01);
    EXPECT_EQ(smp(a, ib::method::Get, ib::attr::SlToVlTable, 0, {}).data[0], 0x01);
    // One more SEND, posted after the load.
    b.post_recv(sb.qp, 6, {{sb.buf + 0x80000, 100, sb.key}});
    SendReq more;
    more.wr_id = 4;
    more.sges = {{sa.buf + 0x80000, 100, sa.key}};
    a.post_send(sa.qp, more);
    Done da;
    Done db;
    ASSERT_TRUE(run(a, b, [&] { return da.take(a, sa.scq) == 4 && db.take(b, sb.rcq) == 2; }));
    EXPECT_EQ(read(b, sb.buf + 0x80000, 100), pattern(pa, 0x80000, 100));
    EXPECT_EQ(read(b, sb.buf, 20000), pattern(pa, 0, 20000));
    EXPECT_EQ(read(b, sb.buf + 0x10000, 30000), pattern(pa, 0x20000, 30000));
    EXPECT_EQ(read(a, sa.buf + 0x50000, 30000), pattern(pb, 0x40000, 30000));
    // Neither end sent beyond the credit the other gave (an overrun is a
    // receive error).
    EXPECT_EQ(device_of(a.e).ib_counters()->rcv_errors, 0u);
    EXPECT_EQ(device_of(b.e).ib_counters()->rcv_errors, 0u);
}

// The credit B gave travels: after a load on an idle link, a SEND leaves
// at once, before any FCP from B (a reset link would wait for one).
TEST_F(IbSnapshot, TheCreditTravels) {
    pump(a, b);
    a.load_state(a.save_state());
    b.post_recv(sb.qp, 6, {{sb.buf, 100, sb.key}});
    SendReq s;
    s.sges = {{sa.buf, 100, sa.key}};
    a.post_send(sa.qp, s);
    a.process();
    EXPECT_GT(data_frames_on(a), 0u);
    Done da;
    ASSERT_TRUE(run(a, b, [&] { return da.take(a, sa.scq) == 1; }));
}

// A trap the SM has not repressed travels: the loaded port sends it again
// one SubnetTimeout after its last send, with the same TID, and the SM's
// TrapRepress of that TID ends it.
TEST_F(IbSnapshot, APendingTrapTravels) {
    ohca_set_port_cap_in in{};
    in.port = 1;
    in.host_caps = OHCA_PORT_CAP_IS_SM;
    ASSERT_EQ(a.cmd_in(OHCA_CMD_SET_PORT_CAP, in).status, OHCA_STATUS_OK);
    a.process();
    a.host.wire.clear(); // the first send
    const uint64_t period = uint64_t{4096} << port_info(a).subnet_timeout;
    a.load_state(a.save_state());
    EXPECT_EQ(device_of(a.e).ib_counters()->traps.sent, 1u);
    a.host.now += period;
    a.process();
    EXPECT_EQ(device_of(a.e).ib_counters()->traps.sent, 2u);
    EXPECT_EQ(port_info(a).capability_mask & ib::port_cap::IsSm, ib::port_cap::IsSm);
}

// The kernel's QP 0 (SMI) and QP 1 (GSI) of an InfiniBand port travel with
// their fixed numbers (a VM on an IB fabric always has both): after the
// load a second QP 0 is refused, and both can be destroyed (their objects'
// counts came back right).
TEST_F(IbSnapshot, Qp0AndQp1Travel) {
    const uint32_t pd = a.create_pd();
    const CqInfo cq = a.create_cq();
    const QpInfo qp0 = a.create_qp(pd, cq.cqn, cq.cqn, 2, 2, 0, OHCA_QPT_SMI);
    const QpInfo qp1 = a.create_qp(pd, cq.cqn, cq.cqn, 2, 2, 0, OHCA_QPT_GSI);
    ASSERT_EQ(qp0.qpn, 0u);
    ASSERT_EQ(qp1.qpn, uint32_t{OHCA_GSI_QPN});
    const std::vector<uint8_t> s = a.save_state();
    a.load_state(s);
    EXPECT_EQ(a.save_state(), s);
    ohca_create_qp_in in{};
    in.type = OHCA_QPT_SMI;
    in.pdn = pd;
    in.send_cqn = cq.cqn;
    in.recv_cqn = cq.cqn;
    in.sq_log_size = 2;
    in.rq_log_size = 2;
    in.sq_log_stride = 7;
    in.rq_log_stride = 5;
    in.sq_pbl = a.make_pbl(a.alloc(4096), 4096);
    in.rq_pbl = a.make_pbl(a.alloc(4096), 4096);
    ohca_create_out o{};
    EXPECT_EQ(a.cmd(OHCA_CMD_CREATE_QP, &in, sizeof(in), &o, sizeof(o)).status,
              OHCA_STATUS_BAD_STATE);
    for (const uint32_t qpn : {0u, uint32_t{OHCA_GSI_QPN}}) {
        ohca_handle_in h{};
        h.handle = qpn;
        EXPECT_EQ(a.cmd_in(OHCA_CMD_DESTROY_QP, h).status, OHCA_STATUS_OK) << qpn;
    }
}

TEST_F(IbSnapshot, SaveLoadSaveIsTheSame) {
    const std::vector<uint8_t> s = a.save_state();
    a.load_state(s);
    EXPECT_EQ(a.save_state(), s);
}

// The stream's PortInfo (64 bytes in the PORT section) changed where the
// SM cannot reach (MTUCap) or to a value no Set takes (a multicast LID),
// resealed: refused, with the reason.
TEST_F(IbSnapshot, APortInfoNoSmCouldSetIsRefused) {
    const std::vector<uint8_t> good = a.save_state();
    const auto try_load = [&](const ib::PortInfo &pi) { return load_with_port_info(good, pi); };
    ib::PortInfo pi = port_info(a);
    EXPECT_EQ(try_load(pi), "");
    pi.mtu_cap = 1;
    EXPECT_NE(try_load(pi).find("IB port: an attribute the board fixes"), std::string::npos);
    pi = port_info(a);
    pi.lid = 0xC001;
    EXPECT_NE(try_load(pi).find("IB port: a value the SM cannot set"), std::string::npos);
    pi = port_info(a);
    pi.phys_state = ib::phys_state::Polling; // ACTIVE without a link
    EXPECT_NE(try_load(pi).find("IB port: a port state"), std::string::npos);
}

// The host's CapabilityMask bits (SET_PORT_CAP) travel; a stream with IsSM
// and IsSMdisabled together (no SET_PORT_CAP makes that) is refused, one
// with IsSMdisabled alone (an engine's before 2026-12-07) is taken.
TEST_F(IbSnapshot, TheHostsCapabilityBitsTravel) {
    ohca_set_port_cap_in in{};
    in.port = 1;
    in.host_caps = OHCA_PORT_CAP_IS_SM | OHCA_PORT_CAP_IS_CM;
    ASSERT_EQ(a.cmd_in(OHCA_CMD_SET_PORT_CAP, in).status, OHCA_STATUS_OK);
    const uint32_t mask = port_info(a).capability_mask;
    const std::vector<uint8_t> s = a.save_state();
    a.load_state(s);
    EXPECT_EQ(port_info(a).capability_mask, mask);
    EXPECT_NE(mask & ib::port_cap::IsSm, 0u);
    EXPECT_EQ(mask & ib::port_cap::IsSmDisabled, 0u);
    ib::PortInfo pi = port_info(a);
    EXPECT_EQ(load_with_port_info(s, pi), "");
    pi.capability_mask |= ib::port_cap::IsSmDisabled;
    EXPECT_NE(load_with_port_info(s, pi).find("IB port: IsSM"), std::string::npos);
    pi.capability_mask &= ~uint32_t{ib::port_cap::IsSm};
    EXPECT_EQ(load_with_port_info(s, pi), "");
}

// An Ethernet engine refuses an InfiniBand stream and the reverse: the
// configuration says which link the stream's port has.
TEST_F(IbSnapshot, TheOtherLinkLayerIsRefused) {
    const std::vector<uint8_t> s = a.save_state();
    FakeHost h;
    const ohca_engine_ops ops = FakeHost::ops();
    const ohca_engine_config cfg = config_of(a, 3, OHCA_LINK_ETH);
    ohca_engine *e = ohca_engine_create(&ops, &h, &cfg);
    char err[256] = "";
    EXPECT_NE(ohca_engine_load(e, s.data(), s.size(), err, sizeof(err)), 0);
    EXPECT_NE(std::string(err).find("configured otherwise"), std::string::npos) << err;
    ohca_engine_destroy(e);
}

} // namespace
} // namespace ohca::test
