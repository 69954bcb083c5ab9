// SPDX-License-Identifier: GPL-2.0-or-later
// Receive WQs, RWQ indirection tables and RSS QPs (programming manual
// section 23): the Toeplitz hash against Microsoft's published
// verification values, the hash input of each field set, WQ lifecycle and
// states, table rules and limits, traffic spread over the WQs as the
// hash says, and hostile values: bad numbers, doorbells, WQEs, a table
// naming a destroyed WQ, destroy order, exhaustion bounded.
#include "device/device.hpp"
#include "engine_state.hpp"
#include "objects/wq.hpp"
#include "rdma_node.hpp"
#include "transports/rss.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>

namespace ohca::test {
namespace {

// Microsoft's "Verifying the RSS Hash Calculation" key and vectors.
constexpr RssKey kMsKey = {0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
                           0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
                           0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
                           0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};

struct V4Vector {
    uint8_t dst[4];
    uint16_t dport;
    uint8_t src[4];
    uint16_t sport;
    uint32_t ip;
    uint32_t ip_tcp;
};

constexpr V4Vector kV4[] = {
    {{161, 142, 100, 80}, 1766, {66, 9, 149, 187}, 2794, 0x323e8fc2, 0x51ccc178},
    {{65, 69, 140, 83}, 4739, {199, 92, 111, 2}, 14230, 0xd718262a, 0xc626b0ea},
    {{12, 22, 207, 184}, 38024, {24, 19, 198, 95}, 12898, 0xd2d0a5de, 0x5c2b394a},
    {{209, 142, 163, 6}, 2217, {38, 27, 205, 30}, 48228, 0x82989176, 0xafc7327f},
    {{202, 188, 127, 2}, 1303, {153, 39, 163, 191}, 44251, 0x5d1809c5, 0x10e828a2},
};

constexpr uint8_t kDstMac[6] = {0x01, 0x50, 0x56, 0x19, 0x20, 0xa7};
constexpr uint8_t kSrcMac[6] = {0x24, 0x8a, 0x07, 0xa5, 0x28, 0xc8};

// Ethernet | IPv4 | UDP or TCP: 'len' bytes, the given addresses and ports.
std::vector<uint8_t> frame4(const uint8_t src[4], const uint8_t dst[4], uint16_t sport,
                            uint16_t dport, bool tcp = false, size_t len = 128) {
    std::vector<uint8_t> f(len, 'a');
    std::memcpy(f.data(), kDstMac, 6);
    std::memcpy(f.data() + 6, kSrcMac, 6);
    f[12] = 0x08;
    f[13] = 0x00;
    f[14] = 0x45;
    f[20] = 0x40; // DF, fragment offset 0
    f[21] = 0;
    f[22] = 64;
    f[23] = tcp ? 6 : 17;
    std::memcpy(&f[26], src, 4);
    std::memcpy(&f[30], dst, 4);
    f[34] = static_cast<uint8_t>(sport >> 8);
    f[35] = static_cast<uint8_t>(sport);
    f[36] = static_cast<uint8_t>(dport >> 8);
    f[37] = static_cast<uint8_t>(dport);
    return f;
}

TEST(Toeplitz, MicrosoftVerificationValuesIpv4) {
    for (const V4Vector &v : kV4) {
        const auto f = frame4(v.src, v.dst, v.sport, v.dport, true);
        EXPECT_EQ(rss_hash(f, OHCA_RSS_SRC_IPV4 | OHCA_RSS_DST_IPV4, kMsKey), v.ip);
        EXPECT_EQ(rss_hash(f,
                           OHCA_RSS_SRC_IPV4 | OHCA_RSS_DST_IPV4 | OHCA_RSS_SRC_PORT_TCP |
                               OHCA_RSS_DST_PORT_TCP,
                           kMsKey),
                  v.ip_tcp);
        // UDP port fields on a TCP frame: not part of the input.
        EXPECT_EQ(rss_hash(f,
                           OHCA_RSS_SRC_IPV4 | OHCA_RSS_DST_IPV4 | OHCA_RSS_SRC_PORT_UDP |
                               OHCA_RSS_DST_PORT_UDP,
                           kMsKey),
                  v.ip);
    }
}

TEST(Toeplitz, MicrosoftVerificationValuesIpv6) {
    struct V6 {
        uint8_t dst[16];
        uint8_t src[16];
        uint32_t ip;
    };
    const V6 vs[] = {
        {{0x3f, 0xfe, 0x25, 0x01, 0x02, 0x00, 0x00, 0x03, 0, 0, 0, 0, 0, 0, 0, 1},
         {0x3f, 0xfe, 0x25, 0x01, 0x02, 0x00, 0x1f, 0xff, 0, 0, 0, 0, 0, 0, 0, 7},
         0x2cc18cd5},
        {{0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1},
         {0x3f, 0xfe, 0x05, 0x01, 0x00, 0x08, 0, 0, 0x02, 0x60, 0x97, 0xff, 0xfe, 0x40, 0xef, 0xab},
         0x0f0c461c},
        {{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x00, 0xf8, 0xff, 0xfe, 0x21, 0x67, 0xcf},
         {0x3f, 0xfe, 0x19, 0x00, 0x45, 0x45, 0x00, 0x03, 0x02, 0x00, 0xf8, 0xff, 0xfe, 0x21, 0x67,
          0xcf},
         0x4b61e985},
    };
    for (const V6 &v : vs) {
        uint8_t in[32];
        std::memcpy(in, v.src, 16);
        std::memcpy(in + 16, v.dst, 16);
        EXPECT_EQ(toeplitz_hash(kMsKey, in), v.ip);
    }
}

TEST(Toeplitz, InputFollowsTheFieldsAndTheFrame) {
    const uint8_t s[4] = {1, 2, 3, 4};
    const uint8_t d[4] = {5, 6, 7, 8};
    const auto f = frame4(s, d, 0x1234, 0x5678);
    std::array<uint8_t, 36> in{};
    EXPECT_EQ(rss_input(f, OHCA_RSS_SRC_IPV4, in), 4u);
    EXPECT_EQ(0, std::memcmp(in.data(), s, 4));
    EXPECT_EQ(rss_input(f, OHCA_RSS_DST_IPV4 | OHCA_RSS_DST_PORT_UDP, in), 6u);
    EXPECT_EQ(0, std::memcmp(in.data(), d, 4));
    EXPECT_EQ(in[4], 0x56);
    EXPECT_EQ(in[5], 0x78);
    // IPv6 fields on an IPv4 frame, a frame cut before its IP header, a
    // runt: nothing to hash (entry 0), never a read past the frame.
    EXPECT_EQ(rss_input(f, OHCA_RSS_SRC_IPV6 | OHCA_RSS_DST_IPV6, in), 0u);
    EXPECT_EQ(rss_input(std::span<const uint8_t>(f.data(), 20), OHCA_RSS_SRC_IPV4, in), 0u);
    EXPECT_EQ(rss_input(std::span<const uint8_t>(f.data(), 3), OHCA_RSS_SRC_IPV4, in), 0u);
    // A key shorter than the input needs: no hash rather than a read past it.
    EXPECT_EQ(toeplitz_hash(std::span<const uint8_t>(kMsKey.data(), 8),
                            std::span<const uint8_t>(kMsKey.data(), 8)),
              0u);
}

TEST(Toeplitz, FieldSetsFollowMlx5Rules) {
    EXPECT_TRUE(rss_fields_valid(OHCA_RSS_SRC_IPV4 | OHCA_RSS_DST_IPV4));
    EXPECT_TRUE(rss_fields_valid(OHCA_RSS_DST_IPV6 | OHCA_RSS_SRC_PORT_TCP));
    EXPECT_FALSE(rss_fields_valid(0));
    EXPECT_FALSE(rss_fields_valid(OHCA_RSS_SRC_IPV4 | OHCA_RSS_DST_IPV6));
    EXPECT_FALSE(rss_fields_valid(OHCA_RSS_SRC_PORT_TCP | OHCA_RSS_DST_PORT_UDP));
    EXPECT_FALSE(rss_fields_valid(1u << 8));  // IPsec SPI
    EXPECT_FALSE(rss_fields_valid(1u << 31)); // inner headers
}

// ---- the device -------------------------------------------------------------

struct WqInfo {
    uint32_t wqn = 0;
    uint64_t ring = 0;
    uint32_t size = 0;
    uint32_t stride = 64;
    uint32_t pi = 0;
    uint32_t uar = 0;
};

ohca_create_wq_in wq_in(RdmaNode &n, uint32_t pd, uint32_t cqn, unsigned int log_size,
                        uint64_t *ring) {
    ohca_create_wq_in in{};
    in.pdn = pd;
    in.cqn = cqn;
    in.log_size = static_cast<uint8_t>(log_size);
    in.log_stride = 6;
    *ring = n.alloc(uint64_t{64} << log_size);
    in.pbl = n.make_pbl(*ring, uint64_t{64} << log_size);
    return in;
}

CmdOutcome create_wq(RdmaNode &n, const ohca_create_wq_in &in, uint32_t *wqn) {
    ohca_create_out o{};
    const CmdOutcome r = n.cmd(OHCA_CMD_CREATE_WQ, &in, sizeof(in), &o, sizeof(o));
    *wqn = o.handle;
    return r;
}

WqInfo make_wq(RdmaNode &n, uint32_t pd, uint32_t cqn, unsigned int log_size = 6) {
    WqInfo w;
    w.size = 1u << log_size;
    const auto in = wq_in(n, pd, cqn, log_size, &w.ring);
    EXPECT_EQ(create_wq(n, in, &w.wqn).status, OHCA_STATUS_OK);
    return w;
}

CmdOutcome modify_wq(RdmaNode &n, uint32_t wqn, uint8_t state, uint8_t cur = 0xff) {
    ohca_modify_wq_in in{};
    in.wqn = wqn;
    in.state = state;
    in.cur_state = cur;
    return n.cmd_in(OHCA_CMD_MODIFY_WQ, in);
}

CmdOutcome destroy(RdmaNode &n, uint16_t op, uint32_t handle) {
    ohca_handle_in in{};
    in.handle = handle;
    return n.cmd_in(op, in);
}

CmdOutcome create_table(RdmaNode &n, const std::vector<uint32_t> &wqns, unsigned int log,
                        uint32_t *tn) {
    ohca_create_rwq_ind_tbl_in in{};
    in.log_size = static_cast<uint8_t>(log);
    for (size_t i = 0; i < wqns.size() && i < std::size(in.wqn); ++i) {
        in.wqn[i] = wqns[i];
    }
    ohca_create_out o{};
    const CmdOutcome r = n.cmd(OHCA_CMD_CREATE_RWQ_IND_TBL, &in, sizeof(in), &o, sizeof(o));
    *tn = o.handle;
    return r;
}

ohca_create_rss_qp_in rss_in(uint32_t pd, uint32_t tn) {
    ohca_create_rss_qp_in in{};
    in.pdn = pd;
    in.ind_tbl = tn;
    in.fields = OHCA_RSS_SRC_IPV4 | OHCA_RSS_DST_IPV4;
    in.hash_function = OHCA_RSS_HASH_TOEPLITZ;
    std::memcpy(in.key, kMsKey.data(), kMsKey.size());
    return in;
}

CmdOutcome create_rss_qp(RdmaNode &n, const ohca_create_rss_qp_in &in, uint32_t *qpn) {
    ohca_create_out o{};
    const CmdOutcome r = n.cmd(OHCA_CMD_CREATE_RSS_QP, &in, sizeof(in), &o, sizeof(o));
    *qpn = o.handle;
    return r;
}

void post_wq(RdmaNode &n, WqInfo &w, uint64_t wr_id, const std::vector<ohca_sge> &sges,
             uint8_t num_sge_override = 0) {
    const uint64_t at = w.ring + uint64_t{w.pi % w.size} * w.stride;
    ohca_recv_wqe h{};
    h.wr_id = wr_id;
    h.num_sge = num_sge_override != 0 ? num_sge_override : static_cast<uint8_t>(sges.size());
    EXPECT_TRUE(n.host.write(at, &h, sizeof(h)));
    if (!sges.empty()) {
        EXPECT_TRUE(n.host.write(at + sizeof(h), sges.data(), sges.size() * sizeof(ohca_sge)));
    }
    ++w.pi;
    ohca_engine_db_write(n.e, w.uar, OHCA_DB_WQ, OHCA_DB_VALUE(w.wqn, w.pi), 8);
}

// A raw client QP in RTS sending frames, as the rdma-core suite's client.
struct Client {
    uint32_t pd = 0;
    CqInfo cq;
    QpInfo q;
    uint64_t buf = 0;
    uint32_t key = 0;
};

Client make_client(RdmaNode &n) {
    Client c;
    c.pd = n.create_pd();
    c.cq = n.create_cq(8);
    c.q = n.create_qp(c.pd, c.cq.cqn, c.cq.cqn, 6, 6, 0, OHCA_QPT_RAW_ETH);
    c.buf = n.alloc(1 << 16);
    c.key = n.reg_mr(c.pd, c.buf, 1 << 16, OHCA_ACCESS_LOCAL_WRITE);
    ohca_qp_attr a{};
    a.qp_state = OHCA_QPS_INIT;
    EXPECT_EQ(n.modify(c.q.qpn, OHCA_QP_STATE | OHCA_QP_PORT, a).status, OHCA_STATUS_OK);
    a.qp_state = OHCA_QPS_RTR;
    EXPECT_EQ(n.modify(c.q.qpn, OHCA_QP_STATE, a).status, OHCA_STATUS_OK);
    a.qp_state = OHCA_QPS_RTS;
    EXPECT_EQ(n.modify(c.q.qpn, OHCA_QP_STATE, a).status, OHCA_STATUS_OK);
    return c;
}

void send_frame(RdmaNode &n, Client &c, const std::vector<uint8_t> &f) {
    EXPECT_TRUE(n.host.write(c.buf, f.data(), f.size()));
    SendReq s;
    s.sges = {{c.buf, static_cast<uint32_t>(f.size()), c.key}};
    n.post_send(c.q, s);
    n.process();
    EXPECT_EQ(n.poll(c.cq).size(), 1u);
}

CmdOutcome eth_flow(RdmaNode &n, uint32_t qpn, uint32_t *h = nullptr) {
    ohca_create_flow_in in{};
    in.qpn = qpn;
    std::memcpy(in.value.dmac, kDstMac, 6);
    std::memset(in.mask.dmac, 0xff, 6);
    in.value.ether_type = htobe16(0x0800);
    in.mask.ether_type = 0xffff;
    ohca_create_out o{};
    const CmdOutcome r = n.cmd(OHCA_CMD_CREATE_FLOW, &in, sizeof(in), &o, sizeof(o));
    if (h != nullptr) {
        *h = o.handle;
    }
    return r;
}

TEST(Wq, QueryDeviceReportsTheFamily) {
    RdmaNode n(1);
    ohca_query_device_out d{};
    ASSERT_EQ(n.cmd(OHCA_CMD_QUERY_DEVICE, nullptr, 0, &d, sizeof(d)).status, OHCA_STATUS_OK);
    EXPECT_NE(d.dev_caps & OHCA_DEV_CAP_RSS, 0u);
    EXPECT_EQ(d.max_wq, 1024u);
    EXPECT_EQ(d.max_wq_wr, 4096u);
    EXPECT_EQ(d.max_rwq_ind_tbl, 64u);
    EXPECT_EQ(d.max_rwq_ind_tbl_size, 256u);
    EXPECT_EQ(d.rss_fields, uint32_t{OHCA_RSS_ALL_FIELDS});
    // A driver of ABI 1.5 asks for its 216 bytes and gets exactly those.
    std::array<uint8_t, sizeof(d)> old{};
    ASSERT_EQ(n.cmd(OHCA_CMD_QUERY_DEVICE, nullptr, 0, old.data(), 216).status, OHCA_STATUS_OK);
    EXPECT_EQ(old[216], 0);
}

TEST(Wq, LifecycleChecksEveryField) {
    RdmaNode n(1);
    const uint32_t pd = n.create_pd();
    CqInfo cq = n.create_cq(6);
    uint64_t ring = 0;
    uint32_t wqn = 0;
    using In = ohca_create_wq_in;
    auto in = wq_in(n, pd, cq.cqn, 4, &ring);
    auto bad = in;
    bad.pdn = 999;
    EXPECT_EQ(create_wq(n, bad, &wqn).status, OHCA_STATUS_BAD_HANDLE);
    bad = in;
    bad.cqn = 999;
    EXPECT_EQ(create_wq(n, bad, &wqn).status, OHCA_STATUS_BAD_HANDLE);
    bad = in;
    bad.log_size = 0;
    EXPECT_EQ(create_wq(n, bad, &wqn).status, OHCA_STATUS_BAD_FIELD);
    bad.log_size = 13;
    EXPECT_EQ(create_wq(n, bad, &wqn).syndrome, offsetof(In, log_size));
    bad = in;
    bad.log_stride = 3;
    EXPECT_EQ(create_wq(n, bad, &wqn).syndrome, offsetof(In, log_stride));
    bad = in;
    bad.rsvd0[1] = 1;
    EXPECT_EQ(create_wq(n, bad, &wqn).status, OHCA_STATUS_RESERVED_NONZERO);
    bad = in;
    bad.uar_index = 5; // not allocated
    EXPECT_EQ(create_wq(n, bad, &wqn).syndrome, offsetof(In, uar_index));
    bad = in;
    bad.pbl.npages = 0; // too short for the ring
    EXPECT_NE(create_wq(n, bad, &wqn).status, OHCA_STATUS_OK);
    ASSERT_EQ(create_wq(n, in, &wqn).status, OHCA_STATUS_OK);
    // It holds its PD and CQ.
    EXPECT_EQ(destroy(n, OHCA_CMD_DESTROY_CQ, cq.cqn).status, OHCA_STATUS_BAD_STATE);
    EXPECT_EQ(destroy(n, OHCA_CMD_DESTROY_PD, pd).status, OHCA_STATUS_BAD_STATE);
    // States: RESET -> RDY -> ERR -> (not RDY) -> RESET -> RDY.
    EXPECT_EQ(modify_wq(n, wqn, 3).status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(modify_wq(n, wqn, OHCA_WQS_RDY, OHCA_WQS_ERR).status, OHCA_STATUS_BAD_STATE);
    EXPECT_EQ(modify_wq(n, wqn, OHCA_WQS_RDY, OHCA_WQS_RESET).status, OHCA_STATUS_OK);
    EXPECT_EQ(modify_wq(n, wqn, OHCA_WQS_ERR).status, OHCA_STATUS_OK);
    EXPECT_EQ(modify_wq(n, wqn, OHCA_WQS_RDY).status, OHCA_STATUS_BAD_STATE);
    EXPECT_EQ(modify_wq(n, wqn, OHCA_WQS_RESET).status, OHCA_STATUS_OK);
    EXPECT_EQ(modify_wq(n, wqn, OHCA_WQS_RDY).status, OHCA_STATUS_OK);
    EXPECT_EQ(modify_wq(n, 999, OHCA_WQS_RDY).status, OHCA_STATUS_BAD_HANDLE);
    EXPECT_EQ(destroy(n, OHCA_CMD_DESTROY_WQ, wqn).status, OHCA_STATUS_OK);
    EXPECT_EQ(destroy(n, OHCA_CMD_DESTROY_WQ, wqn).status, OHCA_STATUS_BAD_HANDLE);
    EXPECT_EQ(destroy(n, OHCA_CMD_DESTROY_WQ, 0).status, OHCA_STATUS_BAD_HANDLE);
    EXPECT_EQ(destroy(n, OHCA_CMD_DESTROY_WQ, 0xffffffffu).status, OHCA_STATUS_BAD_HANDLE);
    EXPECT_EQ(destroy(n, OHCA_CMD_DESTROY_CQ, cq.cqn).status, OHCA_STATUS_OK);
    EXPECT_EQ(destroy(n, OHCA_CMD_DESTROY_PD, pd).status, OHCA_STATUS_OK);
}

TEST(Wq, TablesAndRssQpsKeepTheirOrder) {
    RdmaNode n(1);
    const uint32_t pd = n.create_pd();
    CqInfo cq = n.create_cq(6);
    WqInfo a = make_wq(n, pd, cq.cqn, 2);
    WqInfo b = make_wq(n, pd, cq.cqn, 2);
    uint32_t tn = 0;
    using T = ohca_create_rwq_ind_tbl_in;
    EXPECT_EQ(create_table(n, {a.wqn, b.wqn}, 9, &tn).syndrome, offsetof(T, log_size));
    EXPECT_EQ(create_table(n, {a.wqn, 777}, 1, &tn).status, OHCA_STATUS_BAD_HANDLE);
    EXPECT_EQ(create_table(n, {a.wqn, 0}, 1, &tn).status, OHCA_STATUS_BAD_HANDLE);
    // An entry past the table's size must be 0.
    EXPECT_EQ(create_table(n, {a.wqn, b.wqn, a.wqn}, 1, &tn).syndrome, offsetof(T, wqn) + 8);
    ASSERT_EQ(create_table(n, {a.wqn, b.wqn, b.wqn, a.wqn}, 2, &tn).status, OHCA_STATUS_OK);
    // A WQ a table names stays.
    EXPECT_EQ(destroy(n, OHCA_CMD_DESTROY_WQ, a.wqn).status, OHCA_STATUS_BAD_STATE);
    uint32_t qpn = 0;
    auto in = rss_in(pd, tn);
    auto bad = in;
    bad.ind_tbl = 55;
    EXPECT_EQ(create_rss_qp(n, bad, &qpn).status, OHCA_STATUS_BAD_HANDLE);
    bad = in;
    bad.fields = OHCA_RSS_SRC_IPV4 | OHCA_RSS_SRC_IPV6;
    EXPECT_EQ(create_rss_qp(n, bad, &qpn).status, OHCA_STATUS_BAD_FIELD);
    bad = in;
    bad.hash_function = 2; // XOR: not offered
    EXPECT_EQ(create_rss_qp(n, bad, &qpn).status, OHCA_STATUS_BAD_FIELD);
    bad = in;
    bad.rsvd[2] = 1;
    EXPECT_EQ(create_rss_qp(n, bad, &qpn).status, OHCA_STATUS_RESERVED_NONZERO);
    bad = in;
    bad.pdn = 77;
    EXPECT_EQ(create_rss_qp(n, bad, &qpn).status, OHCA_STATUS_BAD_HANDLE);
    ASSERT_EQ(create_rss_qp(n, in, &qpn).status, OHCA_STATUS_OK);
    // No queues of its own: no states to walk, no doorbells.
    ohca_qp_attr at{};
    at.qp_state = OHCA_QPS_INIT;
    EXPECT_EQ(n.modify(qpn, OHCA_QP_STATE | OHCA_QP_PORT, at).status, OHCA_STATUS_BAD_STATE);
    const uint64_t db0 = n.stats().db_errors;
    ohca_engine_db_write(n.e, 0, OHCA_DB_SQ, OHCA_DB_VALUE(qpn, 1), 8);
    ohca_engine_db_write(n.e, 0, OHCA_DB_RQ, OHCA_DB_VALUE(qpn, 1), 8);
    EXPECT_EQ(n.stats().db_errors, db0 + 2);
    EXPECT_EQ(n.query(qpn).qp_state, OHCA_QPS_RESET);
    // The table stays while the QP uses it; the QP goes once its flows have.
    EXPECT_EQ(destroy(n, OHCA_CMD_DESTROY_RWQ_IND_TBL, tn).status, OHCA_STATUS_BAD_STATE);
    uint32_t fh = 0;
    ASSERT_EQ(eth_flow(n, qpn, &fh).status, OHCA_STATUS_OK);
    EXPECT_EQ(destroy(n, OHCA_CMD_DESTROY_QP, qpn).status, OHCA_STATUS_BAD_STATE);
    EXPECT_EQ(destroy(n, OHCA_CMD_DESTROY_FLOW, fh).status, OHCA_STATUS_OK);
    EXPECT_EQ(destroy(n, OHCA_CMD_DESTROY_QP, qpn).status, OHCA_STATUS_OK);
    EXPECT_EQ(destroy(n, OHCA_CMD_DESTROY_RWQ_IND_TBL, tn).status, OHCA_STATUS_OK);
    EXPECT_EQ(destroy(n, OHCA_CMD_DESTROY_RWQ_IND_TBL, tn).status, OHCA_STATUS_BAD_HANDLE);
    EXPECT_EQ(destroy(n, OHCA_CMD_DESTROY_WQ, a.wqn).status, OHCA_STATUS_OK);
    EXPECT_EQ(destroy(n, OHCA_CMD_DESTROY_WQ, b.wqn).status, OHCA_STATUS_OK);
    // A table cannot name the WQ that is gone.
    EXPECT_EQ(create_table(n, {a.wqn}, 0, &tn).status, OHCA_STATUS_BAD_HANDLE);
}

// 32 frames into an RSS QP over 8 WQs on two CQs; with 'migrate' the
// engine is saved and loaded (a new engine) after the first 16.
void frames_spread_as_the_hash_says(bool migrate) {
    RdmaNode n(1);
    Client client = make_client(n);
    const uint32_t pd = n.create_pd();
    CqInfo cqs[2] = {n.create_cq(8), n.create_cq(8)};
    const uint64_t buf = n.alloc(1 << 17);
    const uint32_t key = n.reg_mr(pd, buf, 1 << 17, OHCA_ACCESS_LOCAL_WRITE);
    std::vector<WqInfo> wqs;
    std::vector<uint32_t> wqns;
    for (int i = 0; i < 8; ++i) {
        wqs.push_back(make_wq(n, pd, cqs[i % 2].cqn, 6));
        ASSERT_EQ(modify_wq(n, wqs.back().wqn, OHCA_WQS_RDY).status, OHCA_STATUS_OK);
        wqns.push_back(wqs.back().wqn);
    }
    uint32_t tn = 0;
    ASSERT_EQ(create_table(n, wqns, 3, &tn).status, OHCA_STATUS_OK);
    uint32_t qpn = 0;
    ASSERT_EQ(create_rss_qp(n, rss_in(pd, tn), &qpn).status, OHCA_STATUS_OK);
    ASSERT_EQ(eth_flow(n, qpn).status, OHCA_STATUS_OK);
    // 32 receives on each WQ, as the suite posts them.
    for (size_t w = 0; w < wqs.size(); ++w) {
        for (uint64_t i = 0; i < 32; ++i) {
            post_wq(n, wqs[w], (w << 8) | i, {{buf + ((w * 32 + i) % 64) * 2048, 2048, key}});
        }
    }
    // 32 frames with source addresses i.i+1.i+2.i+3 (the suite's).
    std::map<uint32_t, int> want;
    const uint8_t dst[4] = {192, 168, 1, 1};
    for (uint8_t i = 0; i < 32; ++i) {
        const uint8_t src[4] = {i, static_cast<uint8_t>(i + 1), static_cast<uint8_t>(i + 2),
                                static_cast<uint8_t>(i + 3)};
        const auto f = frame4(src, dst, 1000, 2000, false, 200);
        const uint32_t h = rss_hash(f, OHCA_RSS_SRC_IPV4 | OHCA_RSS_DST_IPV4, kMsKey);
        ++want[wqns[h & 7]];
        send_frame(n, client, f);
        if (migrate && i == 15) {
            n.load_state(n.save_state());
        }
    }
    std::map<uint32_t, int> got;
    for (CqInfo &cq : cqs) {
        for (const ohca_cqe &c : n.poll(cq)) {
            EXPECT_EQ(c.status, OHCA_CQE_SUCCESS);
            EXPECT_EQ(c.opcode, OHCA_CQE_RECV);
            EXPECT_EQ(c.flags, OHCA_CQE_F_WQ);
            EXPECT_EQ(c.byte_len, 200u);
            // wr_id says which WQ the WQE was posted to: the CQE's qpn.
            EXPECT_EQ(wqns[c.wr_id >> 8], c.qpn);
            // Each WQ completes into its own CQ.
            EXPECT_EQ(&cq == &cqs[0], ((c.wr_id >> 8) % 2) == 0);
            ++got[c.qpn];
        }
    }
    EXPECT_EQ(got, want);
    EXPECT_GE(got.size(), 4u); // 32 addresses reach most of 8 WQs
    EXPECT_EQ(n.stats().raw_rx_frames, 32u);
    // The frame arrived whole.
    std::vector<uint8_t> first(200);
    ASSERT_TRUE(n.host.read(buf, first.data(), first.size()));
    EXPECT_EQ(first[12], 0x08);
}

TEST(Wq, FramesSpreadAsTheHashSays) {
    frames_spread_as_the_hash_says(false);
}

// WQs, their table and the RSS QP's hash travel in the saved engine:
// after the load, frames go on to the WQEs and CQs the hash picks.
TEST(Wq, FramesSpreadTheSameAfterASaveAndLoad) {
    frames_spread_as_the_hash_says(true);
}

TEST(Wq, StatesDropFlushAndStopOnABadWqe) {
    RdmaNode n(1);
    Client client = make_client(n);
    const uint32_t pd = n.create_pd();
    CqInfo cq = n.create_cq(8);
    const uint64_t buf = n.alloc(1 << 16);
    const uint32_t key = n.reg_mr(pd, buf, 1 << 16, OHCA_ACCESS_LOCAL_WRITE);
    WqInfo w = make_wq(n, pd, cq.cqn, 3);
    uint32_t tn = 0;
    ASSERT_EQ(create_table(n, {w.wqn}, 0, &tn).status, OHCA_STATUS_OK);
    uint32_t qpn = 0;
    ASSERT_EQ(create_rss_qp(n, rss_in(pd, tn), &qpn).status, OHCA_STATUS_OK);
    ASSERT_EQ(eth_flow(n, qpn).status, OHCA_STATUS_OK);
    const uint8_t s[4] = {1, 1, 1, 1};
    const uint8_t d[4] = {2, 2, 2, 2};
    const auto f = frame4(s, d, 1, 2);
    // RESET: posted, but frames are dropped and counted.
    post_wq(n, w, 1, {{buf, 4096, key}});
    send_frame(n, client, f);
    EXPECT_TRUE(n.poll(cq).empty());
    EXPECT_EQ(n.stats().raw_rx_dropped, 1u);
    // RDY: received; with no WQE left, dropped.
    ASSERT_EQ(modify_wq(n, w.wqn, OHCA_WQS_RDY).status, OHCA_STATUS_OK);
    send_frame(n, client, f);
    send_frame(n, client, f);
    auto c = n.poll(cq);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].wr_id, 1u);
    EXPECT_EQ(n.stats().raw_rx_dropped, 2u);
    // Too small a buffer: that WQE fails, the WQ goes on.
    post_wq(n, w, 2, {{buf, 10, key}});
    post_wq(n, w, 3, {{buf, 4096, key}});
    send_frame(n, client, f);
    send_frame(n, client, f);
    c = n.poll(cq);
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0].status, OHCA_CQE_LOC_LEN_ERR);
    EXPECT_EQ(c[1].status, OHCA_CQE_SUCCESS);
    // A WQE with more segments than its stride holds: the WQ goes to ERR and
    // flushes the rest, later posts flush at once.
    post_wq(n, w, 4, {{buf, 4096, key}}, 200);
    post_wq(n, w, 5, {{buf, 4096, key}});
    send_frame(n, client, f);
    c = n.poll(cq);
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0].status, OHCA_CQE_LOC_QP_OP_ERR);
    EXPECT_EQ(c[1].status, OHCA_CQE_WR_FLUSH_ERR);
    EXPECT_EQ(c[1].wr_id, 5u);
    post_wq(n, w, 6, {{buf, 4096, key}});
    c = n.poll(cq);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, OHCA_CQE_WR_FLUSH_ERR);
    // A bad lkey is a protection error for the WQ.
    ASSERT_EQ(modify_wq(n, w.wqn, OHCA_WQS_RESET).status, OHCA_STATUS_OK);
    w.pi = 0;
    ASSERT_EQ(modify_wq(n, w.wqn, OHCA_WQS_RDY).status, OHCA_STATUS_OK);
    post_wq(n, w, 7, {{buf, 4096, key + 0x100}});
    send_frame(n, client, f);
    c = n.poll(cq);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, OHCA_CQE_LOC_PROT_ERR);
}

TEST(Wq, HostileDoorbellsAreCountedAndIgnored) {
    RdmaNode n(1);
    const uint32_t pd = n.create_pd();
    CqInfo cq = n.create_cq(6);
    WqInfo w = make_wq(n, pd, cq.cqn, 2);
    const uint64_t db0 = n.stats().db_errors;
    ohca_engine_db_write(n.e, 0, OHCA_DB_WQ, OHCA_DB_VALUE(w.wqn, 5), 8); // past the ring
    ohca_engine_db_write(n.e, 0, OHCA_DB_WQ, OHCA_DB_VALUE(0, 1), 8);
    ohca_engine_db_write(n.e, 0, OHCA_DB_WQ, OHCA_DB_VALUE(5000, 1), 8);
    ohca_engine_db_write(n.e, 0, OHCA_DB_WQ, OHCA_DB_VALUE(0xffffffffu, 1), 8);
    EXPECT_EQ(n.stats().db_errors, db0 + 4);
    ohca_engine_db_write(n.e, 0, OHCA_DB_WQ, OHCA_DB_VALUE(w.wqn, 3), 8);
    ohca_engine_db_write(n.e, 0, OHCA_DB_WQ, OHCA_DB_VALUE(w.wqn, 2), 8); // backwards
    EXPECT_EQ(n.stats().db_errors, db0 + 5);
    // In ERR the device flushes what the doorbell posts: at most a ring.
    ASSERT_EQ(modify_wq(n, w.wqn, OHCA_WQS_ERR).status, OHCA_STATUS_OK);
    EXPECT_EQ(n.poll(cq).size(), 3u);
    ohca_engine_db_write(n.e, 0, OHCA_DB_WQ, OHCA_DB_VALUE(w.wqn, 7), 8);
    EXPECT_EQ(n.poll(cq).size(), 4u);
}

// The WQ section as hostile input: targeted lies refused with their
// reason, random resealed damage refused or loaded without harm (a frame
// then received and the engine run; ASan and UBSan builds check it).
TEST(Wq, ADamagedWqSectionIsRefusedOrHarmless) {
    RdmaNode n(1);
    const uint32_t pd = n.create_pd();
    CqInfo cq = n.create_cq(8);
    const uint64_t buf = n.alloc(1 << 16);
    const uint32_t key = n.reg_mr(pd, buf, 1 << 16, OHCA_ACCESS_LOCAL_WRITE);
    std::vector<WqInfo> wqs;
    std::vector<uint32_t> wqns;
    for (int i = 0; i < 4; ++i) {
        wqs.push_back(make_wq(n, pd, cq.cqn, 4));
        ASSERT_EQ(modify_wq(n, wqs.back().wqn, OHCA_WQS_RDY).status, OHCA_STATUS_OK);
        wqns.push_back(wqs.back().wqn);
        for (uint64_t k = 0; k < 8; ++k) {
            post_wq(n, wqs.back(), k, {{buf + (i * 8 + k) * 1024, 1024, key}});
        }
    }
    uint32_t tn = 0;
    ASSERT_EQ(create_table(n, wqns, 2, &tn).status, OHCA_STATUS_OK);
    uint32_t qpn = 0;
    ASSERT_EQ(create_rss_qp(n, rss_in(pd, tn), &qpn).status, OHCA_STATUS_OK);
    ASSERT_EQ(eth_flow(n, qpn).status, OHCA_STATUS_OK);
    const std::vector<uint8_t> good = n.save_state();
    const StateSection wq = state_section(good, "WQ  ");
    ASSERT_LT(wq.at, good.size());
    ASSERT_GT(wq.len, 4u * 24);

    SpareEngine fresh(n.config);
    ASSERT_EQ(fresh.load(good), "");
    // The first WQ's number, PD and CQ (fields 0, 4 and 8 after the count).
    const auto lie = [&](size_t field, uint32_t value) {
        std::vector<uint8_t> s = good;
        std::memcpy(s.data() + wq.body + 4 + field, &value, 4);
        reseal_state(s);
        return fresh.load(s);
    };
    EXPECT_NE(lie(0, 0).find("WQ: bad or repeated handle"), std::string::npos);
    EXPECT_NE(lie(0, wqns[1]).find("WQ: bad or repeated handle"), std::string::npos);
    EXPECT_NE(lie(4, 999).find("its PD or CQ"), std::string::npos);
    EXPECT_NE(lie(8, 999).find("its PD or CQ"), std::string::npos);

    std::mt19937 rng(23);
    unsigned int loaded = 0;
    const uint8_t src[4] = {10, 0, 0, 1};
    const uint8_t dst[4] = {10, 0, 0, 2};
    const auto frame = frame4(src, dst, 1000, 2000);
    for (int k = 0; k < 2000; ++k) {
        std::vector<uint8_t> s = good;
        for (int f = 1 + static_cast<int>(rng() % 2); f > 0; --f) {
            const size_t i = wq.body + rng() % wq.len;
            s[i] ^= static_cast<uint8_t>(1u << (rng() % 8));
        }
        reseal_state(s);
        if (fresh.load(s).empty()) {
            ++loaded;
            (void)ohca_engine_receive_frame(fresh.e, frame.data(), frame.size());
            fresh.run_after(0);
        }
    }
    EXPECT_GT(loaded, 0u); // a flip in an index or a key loads
}

TEST(Wq, ExhaustionIsBoundedAndSaves) {
    RdmaNode n(1);
    const uint32_t pd = n.create_pd();
    CqInfo cq = n.create_cq(6);
    const uint64_t pbl0 = device_of(n.e).pbl_bytes();
    // Every WQ on one shared one-page ring (the device copies page lists).
    const uint64_t ring = n.alloc(4096);
    ohca_create_wq_in in{};
    in.pdn = pd;
    in.cqn = cq.cqn;
    in.log_size = 1;
    in.log_stride = 6;
    in.pbl = n.make_pbl(ring, 4096);
    std::vector<uint32_t> wqns;
    uint32_t wqn = 0;
    while (create_wq(n, in, &wqn).status == OHCA_STATUS_OK) {
        wqns.push_back(wqn);
        ASSERT_LE(wqns.size(), WqLimits::max_wq);
    }
    EXPECT_EQ(wqns.size(), WqLimits::max_wq);
    EXPECT_EQ(create_wq(n, in, &wqn).status, OHCA_STATUS_NO_RESOURCES);
    // Tables: 64 of the largest size, then none.
    std::vector<uint32_t> full(wqns.begin(), wqns.begin() + 256);
    std::vector<uint32_t> tables;
    uint32_t tn = 0;
    while (create_table(n, full, 8, &tn).status == OHCA_STATUS_OK) {
        tables.push_back(tn);
        ASSERT_LE(tables.size(), WqLimits::max_ind_tbl);
    }
    EXPECT_EQ(tables.size(), WqLimits::max_ind_tbl);
    // RSS QPs: 256 configurations, then none.
    std::vector<uint32_t> qps;
    uint32_t qpn = 0;
    while (create_rss_qp(n, rss_in(pd, tables[0]), &qpn).status == OHCA_STATUS_OK) {
        qps.push_back(qpn);
        ASSERT_LE(qps.size(), WqLimits::max_rss_qp);
    }
    EXPECT_EQ(qps.size(), WqLimits::max_rss_qp);
    // All of it saves and loads (a full device's stream stays within
    // the bound the glue's vmstate allows), and saves the same again.
    const std::vector<uint8_t> s = n.save_state();
    EXPECT_LE(s.size(), size_t{OHCA_ENGINE_STATE_MAX});
    n.load_state(s);
    EXPECT_EQ(n.save_state(), s);
    // Everything goes in order, and the device is as before.
    for (const uint32_t q : qps) {
        EXPECT_EQ(destroy(n, OHCA_CMD_DESTROY_QP, q).status, OHCA_STATUS_OK);
    }
    for (const uint32_t t : tables) {
        EXPECT_EQ(destroy(n, OHCA_CMD_DESTROY_RWQ_IND_TBL, t).status, OHCA_STATUS_OK);
    }
    for (const uint32_t w : wqns) {
        EXPECT_EQ(destroy(n, OHCA_CMD_DESTROY_WQ, w).status, OHCA_STATUS_OK);
    }
    EXPECT_EQ(device_of(n.e).pbl_bytes(), pbl0);
}

} // namespace
} // namespace ohca::test
