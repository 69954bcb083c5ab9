// SPDX-License-Identifier: GPL-2.0-or-later
// Raw Ethernet QPs and flow steering: the frame key and the rules of a
// flow's match, the flow table's order and bound, frames sent as they are,
// loopback to a local flow, frames from the wire steered away from the
// Ethernet ring, bad frame lengths, drops without a WQE, QP and flow
// lifetimes.
#include "device/device.hpp"
#include "rdma_node.hpp"
#include "transports/raw_eth.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

namespace ohca::test {
namespace {

constexpr uint8_t kDstMac[6] = {0x01, 0x50, 0x56, 0x19, 0x20, 0xa7};
constexpr uint8_t kSrcMac[6] = {0x24, 0x8a, 0x07, 0xa5, 0x28, 0xc8};

// Ethernet | IPv4 or IPv6 | UDP or TCP, 'len' bytes in all, as the
// rdma-core suite builds its raw frames.
std::vector<uint8_t> frame(size_t len, bool v6 = false, bool tcp = false, uint16_t dport = 5678,
                           uint8_t last_ip_byte = 2) {
    std::vector<uint8_t> f(std::max<size_t>(len, 64), 'a'); // cut to len below
    std::memcpy(f.data(), kDstMac, 6);
    std::memcpy(f.data() + 6, kSrcMac, 6);
    f[12] = v6 ? 0x86 : 0x08;
    f[13] = v6 ? 0xdd : 0x00;
    size_t l4 = 0;
    if (!v6) {
        f[14] = 0x45;
        f[15] = 0;
        f[20] = 0x40; // DF
        f[21] = 0;
        f[22] = 64;
        f[23] = tcp ? 6 : 17;
        const uint8_t ips[8] = {1, 1, 1, 1, 2, 2, 2, last_ip_byte};
        std::memcpy(&f[26], ips, 8);
        l4 = 34;
    } else {
        f[14] = 0x60;
        f[15] = f[16] = f[17] = 0;
        f[20] = tcp ? 6 : 17;
        f[21] = 64;
        for (int i = 0; i < 16; ++i) {
            f[22 + i] = static_cast<uint8_t>(0xa0 + i);
            f[38 + i] = static_cast<uint8_t>(0xb0 + i);
        }
        f[53] = last_ip_byte;
        l4 = 54;
    }
    f[l4] = 1234 >> 8;
    f[l4 + 1] = 1234 & 0xff;
    f[l4 + 2] = static_cast<uint8_t>(dport >> 8);
    f[l4 + 3] = static_cast<uint8_t>(dport);
    f.resize(len);
    return f;
}

void set_all(uint8_t *p, size_t n) {
    std::memset(p, 0xff, n);
}

ohca_create_flow_in eth_flow(uint32_t qpn) {
    ohca_create_flow_in in{};
    in.qpn = qpn;
    std::memcpy(in.value.dmac, kDstMac, 6);
    set_all(in.mask.dmac, 6);
    std::memcpy(in.value.smac, kSrcMac, 6);
    set_all(in.mask.smac, 6);
    in.value.ether_type = htobe16(0x0800);
    in.mask.ether_type = 0xffff;
    return in;
}

ohca_create_flow_in udp6_flow(uint32_t qpn, uint16_t dport = 5678) {
    ohca_create_flow_in in{};
    in.qpn = qpn;
    in.value.ip_version = 6;
    in.mask.ip_version = 0xff;
    for (int i = 0; i < 16; ++i) {
        in.value.dst_ip[i] = static_cast<uint8_t>(0xb0 + i);
    }
    in.value.dst_ip[15] = 2;
    set_all(in.mask.dst_ip, 16);
    in.value.ip_proto = 17;
    in.mask.ip_proto = 0xff;
    in.value.dst_port = htobe16(dport);
    in.mask.dst_port = 0xffff;
    return in;
}

TEST(FlowKey, ReadsEthIpAndPorts) {
    ohca_flow_spec k{};
    const auto f4 = frame(100);
    flow_key(f4, k);
    EXPECT_EQ(0, std::memcmp(k.dmac, kDstMac, 6));
    EXPECT_EQ(0, std::memcmp(k.smac, kSrcMac, 6));
    EXPECT_EQ(be16toh(k.ether_type), 0x0800);
    EXPECT_EQ(k.ip_version, 4);
    EXPECT_EQ(k.ip_proto, 17);
    EXPECT_EQ(k.ttl, 64);
    EXPECT_EQ(k.src_ip[12], 1);
    EXPECT_EQ(k.dst_ip[15], 2);
    EXPECT_EQ(k.src_ip[0], 0);
    EXPECT_EQ(be16toh(k.src_port), 1234);
    EXPECT_EQ(be16toh(k.dst_port), 5678);

    const auto f6 = frame(100, true, true);
    flow_key(f6, k);
    EXPECT_EQ(k.ip_version, 6);
    EXPECT_EQ(k.ip_proto, 6);
    EXPECT_EQ(k.src_ip[0], 0xa0);
    EXPECT_EQ(k.dst_ip[15], 2);
    EXPECT_EQ(be16toh(k.dst_port), 5678);

    // Cut short: the headers that are whole, nothing past the end.
    flow_key(std::span<const uint8_t>(f4.data(), 30), k);
    EXPECT_EQ(k.ip_version, 0);
    EXPECT_EQ(be16toh(k.ether_type), 0x0800);
    flow_key(std::span<const uint8_t>(f4.data(), 36), k);
    EXPECT_EQ(k.ip_version, 4);
    EXPECT_EQ(k.dst_port, 0);
    flow_key(std::span<const uint8_t>(f4.data(), 5), k);
    EXPECT_EQ(k.ether_type, 0);

    // A VLAN tag: the type after it, the TCI.
    auto tagged = f4;
    const uint8_t tag[4] = {0x81, 0x00, 0xac, 0x0c};
    tagged.insert(tagged.begin() + 12, tag, tag + 4);
    flow_key(tagged, k);
    EXPECT_EQ(be16toh(k.vlan_tci), 0xac0c);
    EXPECT_EQ(be16toh(k.ether_type), 0x0800);
    EXPECT_EQ(be16toh(k.dst_port), 5678);
}

TEST(FlowKey, RulesOfAMatch) {
    using In = ohca_create_flow_in;
    constexpr size_t V = offsetof(In, value);
    constexpr size_t M = offsetof(In, mask);
    EXPECT_FALSE(flow_bad_field(eth_flow(2).value, eth_flow(2).mask));
    EXPECT_FALSE(flow_bad_field(udp6_flow(2).value, udp6_flow(2).mask));
    EXPECT_FALSE(flow_bad_field({}, {})); // matches every frame

    auto in = eth_flow(2);
    in.mask.dmac[5] = 0; // a value bit outside the mask
    EXPECT_EQ(flow_bad_field(in.value, in.mask), V + 5);

    in = udp6_flow(2);
    in.mask.ip_version = 0; // IP fields without the version
    in.value.ip_version = 0;
    EXPECT_EQ(flow_bad_field(in.value, in.mask), M + offsetof(ohca_flow_spec, ip_version));
    in = udp6_flow(2);
    in.value.ip_version = 5;
    EXPECT_EQ(flow_bad_field(in.value, in.mask), V + offsetof(ohca_flow_spec, ip_version));
    in = udp6_flow(2);
    in.mask.ip_version = 0x0f;
    in.value.ip_version = 6;
    EXPECT_EQ(flow_bad_field(in.value, in.mask), M + offsetof(ohca_flow_spec, ip_version));
    in = udp6_flow(2);
    in.value.ip_version = 4; // IPv4 with a full 16-byte address
    EXPECT_EQ(flow_bad_field(in.value, in.mask), M + offsetof(ohca_flow_spec, dst_ip));
    in = udp6_flow(2);
    in.mask.ip_proto = 0; // ports without TCP/UDP
    in.value.ip_proto = 0;
    EXPECT_EQ(flow_bad_field(in.value, in.mask), M + offsetof(ohca_flow_spec, ip_proto));
    in = udp6_flow(2);
    in.value.ip_proto = 1; // ICMP has no ports
    EXPECT_EQ(flow_bad_field(in.value, in.mask), M + offsetof(ohca_flow_spec, ip_proto));
    in = udp6_flow(2);
    in.mask.flow_label = 0xffffffff; // 32 bits of a 20-bit label
    EXPECT_EQ(flow_bad_field(in.value, in.mask), M + offsetof(ohca_flow_spec, flow_label));
}

TEST(FlowTable, PriorityThenAgeAndABound) {
    FlowTable t(4);
    const auto any = ohca_flow_spec{};
    auto udp = udp6_flow(0);
    const auto h1 = t.add(10, 5, any, any);
    const auto h2 = t.add(11, 1, udp.value, udp.mask);
    const auto h3 = t.add(12, 1, any, any);
    ASSERT_TRUE(h1 && h2 && h3);
    EXPECT_NE(*h1, *h2);
    ohca_flow_spec k{};
    flow_key(frame(100, true), k);
    EXPECT_EQ(t.match(k), 11u); // priority 1, the older of two
    flow_key(frame(100), k);
    EXPECT_EQ(t.match(k), 12u); // not UDP6: the next of priority 1
    EXPECT_TRUE(t.add(13, 0, udp.value, udp.mask));
    EXPECT_FALSE(t.add(14, 0, any, any)); // the bound
    EXPECT_EQ(t.remove(*h3), 12u);
    EXPECT_FALSE(t.remove(*h3));
    flow_key(frame(100), k);
    EXPECT_EQ(t.match(k), 10u);
    EXPECT_EQ(t.size(), 3u);
}

struct RawQp {
    uint32_t pd = 0;
    CqInfo cq;
    QpInfo q;
    uint64_t buf = 0; // 64 KiB
    uint32_t key = 0;
};

RawQp make_raw(RdmaNode &n, bool to_rts = true) {
    RawQp r;
    r.pd = n.create_pd();
    r.cq = n.create_cq(8);
    r.q = n.create_qp(r.pd, r.cq.cqn, r.cq.cqn, 6, 6, 0, OHCA_QPT_RAW_ETH);
    r.buf = n.alloc(1 << 16);
    r.key = n.reg_mr(r.pd, r.buf, 1 << 16, OHCA_ACCESS_LOCAL_WRITE);
    if (to_rts) {
        ohca_qp_attr a{};
        a.qp_state = OHCA_QPS_INIT;
        EXPECT_EQ(n.modify(r.q.qpn, OHCA_QP_STATE | OHCA_QP_PORT, a).status, OHCA_STATUS_OK);
        a.qp_state = OHCA_QPS_RTR;
        EXPECT_EQ(n.modify(r.q.qpn, OHCA_QP_STATE, a).status, OHCA_STATUS_OK);
        a.qp_state = OHCA_QPS_RTS;
        EXPECT_EQ(n.modify(r.q.qpn, OHCA_QP_STATE, a).status, OHCA_STATUS_OK);
    }
    return r;
}

CmdOutcome create_flow(RdmaNode &n, const ohca_create_flow_in &in, uint32_t *handle = nullptr) {
    ohca_create_out o{};
    const CmdOutcome r = n.cmd(OHCA_CMD_CREATE_FLOW, &in, sizeof(in), &o, sizeof(o));
    if (handle != nullptr) {
        *handle = o.handle;
    }
    return r;
}

CmdOutcome destroy(RdmaNode &n, uint16_t op, uint32_t handle) {
    ohca_handle_in in{};
    in.handle = handle;
    return n.cmd_in(op, in);
}

void send_frame(RdmaNode &n, RawQp &r, const std::vector<uint8_t> &f, uint64_t wr_id = 7) {
    EXPECT_TRUE(n.host.write(r.buf, f.data(), f.size()));
    SendReq s;
    s.wr_id = wr_id;
    s.sges = {{r.buf, static_cast<uint32_t>(f.size()), r.key}};
    n.post_send(r.q, s);
    n.process();
}

void post_buf(RdmaNode &n, RawQp &r, uint64_t wr_id, uint32_t len = 4096) {
    n.post_recv(r.q, wr_id, {{r.buf + 0x8000, len, r.key}});
}

TEST(RawEth, StatesFollowTheRawColumn) {
    RdmaNode n(1);
    RawQp r = make_raw(n, false);
    ohca_qp_attr a{};
    a.qp_state = OHCA_QPS_INIT;
    EXPECT_EQ(n.modify(r.q.qpn, OHCA_QP_STATE, a).status, OHCA_STATUS_BAD_FIELD); // no port
    EXPECT_EQ(n.modify(r.q.qpn, OHCA_QP_STATE | OHCA_QP_PORT | OHCA_QP_QKEY, a).status,
              OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(n.modify(r.q.qpn, OHCA_QP_STATE | OHCA_QP_PORT, a).status, OHCA_STATUS_OK);
    a.qp_state = OHCA_QPS_RTR;
    EXPECT_EQ(n.modify(r.q.qpn, OHCA_QP_STATE | OHCA_QP_AV, a).status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(n.modify(r.q.qpn, OHCA_QP_STATE, a).status, OHCA_STATUS_OK);
    a.qp_state = OHCA_QPS_RTS;
    EXPECT_EQ(n.modify(r.q.qpn, OHCA_QP_STATE | OHCA_QP_SQ_PSN, a).status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(n.modify(r.q.qpn, OHCA_QP_STATE, a).status, OHCA_STATUS_OK);
    EXPECT_EQ(n.query(r.q.qpn).qp_state, OHCA_QPS_RTS);
    // No SRQ for a raw QP.
    ohca_query_device_out d{};
    EXPECT_EQ(n.cmd(OHCA_CMD_QUERY_DEVICE, nullptr, 0, &d, sizeof(d)).status, OHCA_STATUS_OK);
    EXPECT_NE(d.dev_caps & OHCA_DEV_CAP_RAW_ETH, 0u);
    EXPECT_EQ(d.max_flow, DeviceLimits::max_flow);
    EXPECT_EQ(d.max_raw_frame, 18u);
}

TEST(RawEth, SendsTheFrameAsItIsAndLoopsItBackToAFlow) {
    RdmaNode n(1);
    RawQp client = make_raw(n);
    RawQp server = make_raw(n);
    uint32_t h = 0;
    ASSERT_EQ(create_flow(n, eth_flow(server.q.qpn), &h).status, OHCA_STATUS_OK);
    post_buf(n, server, 0x51);
    post_buf(n, client, 0x52);
    n.host.wire.clear();
    const auto f = frame(1024);
    send_frame(n, client, f);
    // On the wire exactly as posted: no RoCE headers, no ICRC.
    ASSERT_EQ(n.host.wire.size(), 1u);
    EXPECT_EQ(n.host.wire[0], f);
    auto sc = n.poll(client.cq);
    auto rc = n.poll(server.cq);
    ASSERT_EQ(sc.size(), 1u);
    EXPECT_EQ(sc[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(sc[0].opcode, OHCA_CQE_SEND);
    EXPECT_EQ(sc[0].byte_len, 1024u);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(rc[0].opcode, OHCA_CQE_RECV);
    EXPECT_EQ(rc[0].wr_id, 0x51u);
    EXPECT_EQ(rc[0].qpn, server.q.qpn);
    EXPECT_EQ(rc[0].byte_len, 1024u);
    EXPECT_EQ(rc[0].flags, 0); // no GRH
    std::vector<uint8_t> got(1024);
    ASSERT_TRUE(n.host.read(server.buf + 0x8000, got.data(), got.size()));
    EXPECT_EQ(got, f);
    // The sender has no flow: its own receive WQE stays posted.
    EXPECT_TRUE(n.poll(client.cq).empty());
    const auto st = n.stats();
    EXPECT_EQ(st.raw_tx_frames, 1u);
    EXPECT_EQ(st.raw_rx_frames, 1u);
    EXPECT_EQ(st.raw_rx_dropped, 0u);

    // A frame the flow does not match (IPv6) goes to the wire only.
    post_buf(n, server, 0x53);
    send_frame(n, client, frame(200, true));
    EXPECT_EQ(n.poll(client.cq).size(), 1u);
    EXPECT_TRUE(n.poll(server.cq).empty());
    // Inline frames too.
    SendReq s;
    s.wr_id = 9;
    s.inline_data = frame(100);
    n.post_send(client.q, s);
    n.process();
    EXPECT_EQ(n.poll(client.cq).size(), 1u);
    rc = n.poll(server.cq);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].byte_len, 100u);
    // Destroyed, the flow takes nothing.
    ASSERT_EQ(destroy(n, OHCA_CMD_DESTROY_FLOW, h).status, OHCA_STATUS_OK);
    EXPECT_EQ(destroy(n, OHCA_CMD_DESTROY_FLOW, h).status, OHCA_STATUS_BAD_HANDLE);
    post_buf(n, server, 0x54);
    send_frame(n, client, f);
    EXPECT_TRUE(n.poll(server.cq).empty());
}

TEST(RawEth, MasksSelectTheFlowAndItsQp) {
    RdmaNode n(1);
    RawQp client = make_raw(n);
    RawQp a = make_raw(n);
    RawQp b = make_raw(n);
    ASSERT_EQ(create_flow(n, udp6_flow(a.q.qpn, 5678)).status, OHCA_STATUS_OK);
    ASSERT_EQ(create_flow(n, udp6_flow(b.q.qpn, 5679)).status, OHCA_STATUS_OK);
    // IPv4 ext spec: source and destination addresses, protocol.
    ohca_create_flow_in v4{};
    v4.qpn = b.q.qpn;
    v4.value.ip_version = 4;
    v4.mask.ip_version = 0xff;
    const uint8_t dst[4] = {2, 2, 2, 9};
    std::memcpy(v4.value.dst_ip + 12, dst, 4);
    set_all(v4.mask.dst_ip + 12, 4);
    ASSERT_EQ(create_flow(n, v4).status, OHCA_STATUS_OK);
    for (int i = 0; i < 4; ++i) {
        post_buf(n, a, 0xa0 + i);
        post_buf(n, b, 0xb0 + i);
    }
    send_frame(n, client, frame(300, true, false, 5678));
    send_frame(n, client, frame(300, true, false, 5679));
    send_frame(n, client, frame(300, true, true, 5678)); // TCP: no flow
    send_frame(n, client, frame(300, false, false, 5678, 9));
    send_frame(n, client, frame(300, false, false, 5678, 8)); // other address
    EXPECT_EQ(n.poll(client.cq).size(), 5u);
    const auto ra = n.poll(a.cq);
    const auto rb = n.poll(b.cq);
    ASSERT_EQ(ra.size(), 1u);
    EXPECT_EQ(ra[0].wr_id, 0xa0u);
    ASSERT_EQ(rb.size(), 2u);
    EXPECT_EQ(rb[0].wr_id, 0xb0u);
    EXPECT_EQ(rb[1].wr_id, 0xb1u);
}

TEST(RawEth, FramesFromTheWireGoToTheFlowNotTheEthernetRing) {
    RdmaNode n(1);
    RawQp r = make_raw(n);
    ASSERT_EQ(create_flow(n, eth_flow(r.q.qpn)).status, OHCA_STATUS_OK);
    post_buf(n, r, 1);
    const auto f = frame(600);
    EXPECT_EQ(ohca_engine_receive_frame(n.e, f.data(), f.size()), OHCA_ENGINE_RX_CONSUMED);
    n.process();
    const auto rc = n.poll(r.cq);
    ASSERT_EQ(rc.size(), 1u);
    EXPECT_EQ(rc[0].byte_len, 600u);
    // No Ethernet RX ring in this node: a frame not steered is counted
    // there as dropped, a steered one is not.
    EXPECT_EQ(n.stats().eth_rx_dropped_no_desc, 0u);
    const auto other = frame(600, true);
    (void)ohca_engine_receive_frame(n.e, other.data(), other.size());
    EXPECT_EQ(n.stats().eth_rx_dropped_no_desc, 1u);
    // Steered without a WQE: dropped and counted, not queued.
    (void)ohca_engine_receive_frame(n.e, f.data(), f.size());
    EXPECT_EQ(n.stats().raw_rx_dropped, 1u);
    EXPECT_EQ(n.stats().eth_rx_dropped_no_desc, 1u);
    // A buffer too small: that WQE completes in error, the QP goes on.
    n.post_recv(r.q, 2, {{r.buf, 100, r.key}});
    post_buf(n, r, 3);
    (void)ohca_engine_receive_frame(n.e, f.data(), f.size());
    (void)ohca_engine_receive_frame(n.e, f.data(), f.size());
    const auto rc2 = n.poll(r.cq);
    ASSERT_EQ(rc2.size(), 2u);
    EXPECT_EQ(rc2[0].status, OHCA_CQE_LOC_LEN_ERR);
    EXPECT_EQ(rc2[1].status, OHCA_CQE_SUCCESS);
    EXPECT_EQ(n.query(r.q.qpn).qp_state, OHCA_QPS_RTS);
}

TEST(RawEth, RoceFramesAndRocePacketsNeverReachARawQp) {
    RdmaNode n(1);
    RawQp r = make_raw(n);
    ohca_create_flow_in all{};
    all.qpn = r.q.qpn;
    ASSERT_EQ(create_flow(n, all).status, OHCA_STATUS_OK);
    post_buf(n, r, 1);
    // Matches every frame, but UDP 4791 belongs to the RDMA transport.
    auto roce = frame(200, false, false, 4791);
    (void)ohca_engine_receive_frame(n.e, roce.data(), roce.size());
    n.process();
    EXPECT_TRUE(n.poll(r.cq).empty());
    EXPECT_EQ(n.stats().raw_rx_frames, 0u);
}

TEST(RawEth, BadFrameLengthsCompleteInError) {
    RdmaNode n(1);
    RawQp r = make_raw(n);
    send_frame(n, r, frame(13), 1); // shorter than an Ethernet header
    auto c = n.poll(r.cq);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, OHCA_CQE_LOC_LEN_ERR);
    EXPECT_EQ(c[0].vendor_err, OHCA_VERR_BAD_FRAME_LEN);
    EXPECT_EQ(n.query(r.q.qpn).qp_state, OHCA_QPS_SQE);
    ohca_qp_attr a{};
    a.qp_state = OHCA_QPS_RTS;
    ASSERT_EQ(n.modify(r.q.qpn, OHCA_QP_STATE, a).status, OHCA_STATUS_OK);
    n.host.wire.clear();
    send_frame(n, r, frame(1500 + 18), 2); // the largest: MTU + header + tag
    c = n.poll(r.cq);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, OHCA_CQE_SUCCESS);
    send_frame(n, r, frame(1500 + 19), 3);
    c = n.poll(r.cq);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, OHCA_CQE_LOC_LEN_ERR);
    EXPECT_EQ(n.host.wire.size(), 1u);
    // A short frame is padded on the wire.
    ASSERT_EQ(n.modify(r.q.qpn, OHCA_QP_STATE, a).status, OHCA_STATUS_OK);
    send_frame(n, r, frame(20), 4);
    ASSERT_EQ(n.host.wire.size(), 2u);
    EXPECT_EQ(n.host.wire[1].size(), size_t{OHCA_ETH_MIN_FRAME});
    // Other opcodes are not raw sends.
    SendReq s;
    s.opcode = OHCA_WR_RDMA_WRITE;
    s.sges = {{r.buf, 64, r.key}};
    n.post_send(r.q, s);
    n.process();
    c = n.poll(r.cq);
    ASSERT_GE(c.size(), 2u);
    EXPECT_EQ(c.back().status, OHCA_CQE_LOC_QP_OP_ERR);
}

TEST(RawEth, FlowCommandsCheckEveryFieldAndTheLimit) {
    RdmaNode n(1);
    RawQp r = make_raw(n);
    const uint32_t pd = n.create_pd();
    const CqInfo cq = n.create_cq(6);
    const QpInfo rc = n.create_qp(pd, cq.cqn, cq.cqn);
    auto in = eth_flow(r.q.qpn);
    in.rsvd0 = 1;
    EXPECT_EQ(create_flow(n, in).status, OHCA_STATUS_RESERVED_NONZERO);
    in = eth_flow(r.q.qpn);
    in.mask.rsvd = 1;
    EXPECT_EQ(create_flow(n, in).status, OHCA_STATUS_RESERVED_NONZERO);
    in = eth_flow(rc.qpn);
    EXPECT_EQ(create_flow(n, in).status, OHCA_STATUS_BAD_STATE); // not raw
    in = eth_flow(999);
    EXPECT_EQ(create_flow(n, in).status, OHCA_STATUS_BAD_HANDLE);
    in = eth_flow(r.q.qpn);
    in.value.ether_type = 0x1234;
    in.mask.ether_type = 0x00ff;
    const CmdOutcome bad = create_flow(n, in);
    EXPECT_EQ(bad.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(bad.syndrome, offsetof(ohca_create_flow_in, value) + 13);

    std::vector<uint32_t> handles;
    for (uint32_t i = 0; i < DeviceLimits::max_flow; ++i) {
        uint32_t h = 0;
        ASSERT_EQ(create_flow(n, eth_flow(r.q.qpn), &h).status, OHCA_STATUS_OK);
        handles.push_back(h);
    }
    EXPECT_EQ(create_flow(n, eth_flow(r.q.qpn)).status, OHCA_STATUS_NO_RESOURCES);
    // The QP cannot go while flows steer to it; reset keeps them.
    EXPECT_EQ(destroy(n, OHCA_CMD_DESTROY_QP, r.q.qpn).status, OHCA_STATUS_BAD_STATE);
    ohca_qp_attr a{};
    a.qp_state = OHCA_QPS_RESET;
    ASSERT_EQ(n.modify(r.q.qpn, OHCA_QP_STATE, a).status, OHCA_STATUS_OK);
    EXPECT_EQ(destroy(n, OHCA_CMD_DESTROY_QP, r.q.qpn).status, OHCA_STATUS_BAD_STATE);
    for (const uint32_t h : handles) {
        ASSERT_EQ(destroy(n, OHCA_CMD_DESTROY_FLOW, h).status, OHCA_STATUS_OK);
    }
    EXPECT_EQ(destroy(n, OHCA_CMD_DESTROY_QP, r.q.qpn).status, OHCA_STATUS_OK);
    // A function reset forgets every flow.
    RawQp r2 = make_raw(n);
    ASSERT_EQ(create_flow(n, eth_flow(r2.q.qpn)).status, OHCA_STATUS_OK);
    n.reset();
    RawQp r3 = make_raw(n);
    for (uint32_t i = 0; i < DeviceLimits::max_flow; ++i) {
        ASSERT_EQ(create_flow(n, eth_flow(r3.q.qpn)).status, OHCA_STATUS_OK);
    }
}

TEST(RawEth, AFloodOfFramesCostsNoMemory) {
    RdmaNode n(1);
    RawQp r = make_raw(n);
    for (uint32_t i = 0; i < DeviceLimits::max_flow - 1; ++i) {
        auto in = udp6_flow(r.q.qpn, static_cast<uint16_t>(1000 + i));
        ASSERT_EQ(create_flow(n, in).status, OHCA_STATUS_OK);
    }
    ASSERT_EQ(create_flow(n, eth_flow(r.q.qpn)).status, OHCA_STATUS_OK);
    const auto f = frame(1400);
    const auto miss = frame(1400, true, true);
    for (int i = 0; i < 10000; ++i) {
        (void)ohca_engine_receive_frame(n.e, f.data(), f.size());
        (void)ohca_engine_receive_frame(n.e, miss.data(), miss.size());
    }
    n.process();
    // No WQE was posted: all dropped and counted, nothing queued.
    EXPECT_EQ(n.stats().raw_rx_dropped, 10000u);
    EXPECT_TRUE(n.poll(r.cq).empty());
}

} // namespace
} // namespace ohca::test
