// SPDX-License-Identifier: GPL-2.0-or-later
// An InfiniBand port (programming manual section 21), without the wire:
// QUERY_PORT's IB part, MAD_IFC and the performance agent, QP0, the IB
// address vector, port change events; and an Ethernet port unchanged.
#include "rdma_node.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace ohca::test {
namespace {

ohca_query_port_out query_port(RdmaNode &n, uint16_t out_len = sizeof(ohca_query_port_out)) {
    ohca_query_port_in in{};
    in.port = 1;
    ohca_query_port_out out{};
    EXPECT_EQ(n.cmd(OHCA_CMD_QUERY_PORT, &in, sizeof(in), &out, out_len).status, OHCA_STATUS_OK);
    return out;
}

// A MAD of class 'mclass' (Get unless told), attribute 'attr'.
ohca_mad_ifc_in mad(uint8_t mclass, uint16_t attr, uint8_t method = 0x01) {
    ohca_mad_ifc_in in{};
    in.port = 1;
    in.flags = OHCA_MAD_IFC_IGNORE_MKEY;
    in.mad[0] = 1;
    in.mad[1] = mclass;
    in.mad[2] = 1;
    in.mad[3] = method;
    in.mad[15] = 0x42; // transaction ID
    in.mad[16] = static_cast<uint8_t>(attr >> 8);
    in.mad[17] = static_cast<uint8_t>(attr);
    return in;
}

CmdOutcome mad_ifc(RdmaNode &n, const ohca_mad_ifc_in &in, ohca_mad_ifc_out &out) {
    return n.cmd(OHCA_CMD_MAD_IFC, &in, sizeof(in), &out, sizeof(out));
}

uint32_t be32(const uint8_t *p) {
    return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

TEST(IbPort, QueryPortSaysInfiniBandInitWithoutLid) {
    RdmaNode n(1, false, 0, 10, 0, nullptr, OHCA_LINK_IB);
    const auto p = query_port(n);
    EXPECT_EQ(p.link_layer, OHCA_LINK_IB);
    // The link is up, but only the SM makes the port ACTIVE.
    EXPECT_EQ(p.state, OHCA_PORT_INIT);
    EXPECT_EQ(p.phys_state, OHCA_PHYS_LINK_UP);
    EXPECT_EQ(p.link_up, 1);
    EXPECT_EQ(p.lid, 0u);
    EXPECT_EQ(p.lmc, 0u);
    EXPECT_EQ(p.sm_lid, 0u);
    EXPECT_EQ(p.max_ib_mtu, 5u);
    EXPECT_EQ(p.active_mtu, 5u);
    EXPECT_EQ(p.max_vl_num, 4u);
    EXPECT_EQ(p.pkey_table_len, 16u);
    EXPECT_EQ(p.gid_table_len, 1u);
    const uint8_t guid[8] = {0x00, 0x02, 0xc9, 0xff, 0xfe, 0x00, 0x00, 0x01};
    EXPECT_EQ(0, std::memcmp(p.port_guid, guid, 8));
    const uint8_t prefix[8] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0};
    EXPECT_EQ(0, std::memcmp(p.subnet_prefix, prefix, 8));
    EXPECT_EQ(p.mtu, 0u); // no Ethernet MTU
}

// A driver of ABI 1.4 asks for 64 bytes and gets them; less is refused.
TEST(IbPort, QueryPortOfAnOldDriver) {
    RdmaNode n(1, false, 0, 10, 0, nullptr, OHCA_LINK_IB);
    const auto p = query_port(n, OHCA_QUERY_PORT_OUT_MIN_SIZE);
    EXPECT_EQ(p.state, OHCA_PORT_INIT);
    EXPECT_EQ(p.pkey_violations, 0u); // beyond 64: not written
    ohca_query_port_in in{};
    in.port = 1;
    std::array<uint8_t, 128> out{};
    EXPECT_EQ(n.cmd(OHCA_CMD_QUERY_PORT, &in, sizeof(in), out.data(), 48).status,
              OHCA_STATUS_BAD_LEN);
}

// Ethernet: the same port as before, its IB part all zero.
TEST(IbPort, EthernetPortHasNoIbPart) {
    RdmaNode n(1);
    const auto p = query_port(n);
    EXPECT_EQ(p.link_layer, OHCA_LINK_ETH);
    EXPECT_EQ(p.state, OHCA_PORT_ACTIVE);
    EXPECT_EQ(p.mtu, 1500u);
    const auto *b = reinterpret_cast<const uint8_t *>(&p);
    for (size_t i = offsetof(ohca_query_port_out, link_layer); i < sizeof(p); ++i) {
        EXPECT_EQ(b[i], 0) << i;
    }
    ohca_mad_ifc_out out{};
    EXPECT_EQ(mad_ifc(n, mad(0x04, 0x0001), out).status, OHCA_STATUS_BAD_STATE);
    ohca_query_device_out d{};
    ASSERT_EQ(n.cmd(OHCA_CMD_QUERY_DEVICE, nullptr, 0, &d, sizeof(d)).status, OHCA_STATUS_OK);
    EXPECT_NE(d.dev_caps & OHCA_DEV_CAP_IB_LINK, 0u);
}

TEST(IbPort, MadIfcChecksItsInput) {
    RdmaNode n(1, false, 0, 10, 0, nullptr, OHCA_LINK_IB);
    ohca_mad_ifc_out out{};
    auto in = mad(0x04, 0x0001);
    in.port = 2;
    EXPECT_EQ(mad_ifc(n, in, out).status, OHCA_STATUS_BAD_FIELD);
    in = mad(0x04, 0x0001);
    in.flags = 0x80;
    EXPECT_EQ(mad_ifc(n, in, out).status, OHCA_STATUS_BAD_FIELD);
    in = mad(0x04, 0x0001);
    in.rsvd = 1;
    EXPECT_EQ(mad_ifc(n, in, out).status, OHCA_STATUS_RESERVED_NONZERO);
    // A class without an agent here is the driver's.
    in = mad(0x07, 0x0010);
    ASSERT_EQ(mad_ifc(n, in, out).status, OHCA_STATUS_OK);
    EXPECT_EQ(out.result, uint32_t{OHCA_MAD_IFC_NOT_MINE});
}

TEST(IbPort, PerformanceAgentAnswersFromTheCounters) {
    RdmaNode n(1, false, 0, 10, 0, nullptr, OHCA_LINK_IB);
    ohca_mad_ifc_out out{};
    ASSERT_EQ(mad_ifc(n, mad(0x04, 0x0001), out).status, OHCA_STATUS_OK);
    ASSERT_EQ(out.result, uint32_t{OHCA_MAD_IFC_REPLY});
    EXPECT_EQ(out.mad[3], 0x81);           // GetResp
    EXPECT_EQ(out.mad[4] | out.mad[5], 0); // status
    EXPECT_EQ(out.mad[15], 0x42);          // the request's TID
    EXPECT_NE(out.mad[64 + 2] & 0x02, 0);  // PortCountersExtended
    auto in = mad(0x04, 0x0012);
    in.mad[64 + 1] = 1;
    ASSERT_EQ(mad_ifc(n, in, out).status, OHCA_STATUS_OK);
    ASSERT_EQ(out.result, uint32_t{OHCA_MAD_IFC_REPLY});
    EXPECT_EQ(out.mad[4] | out.mad[5], 0);
    EXPECT_EQ(be32(out.mad + 64 + 32), 0u); // PortXmitPkts: nothing sent yet
    in = mad(0x04, 0x001d);
    in.mad[64 + 1] = 1;
    ASSERT_EQ(mad_ifc(n, in, out).status, OHCA_STATUS_OK);
    EXPECT_EQ(out.mad[4] | out.mad[5], 0);
    // An attribute it does not have, a port it is not.
    ASSERT_EQ(mad_ifc(n, mad(0x04, 0x0099), out).status, OHCA_STATUS_OK);
    EXPECT_EQ(out.mad[5], 0x0c);
    in = mad(0x04, 0x0012);
    in.mad[64 + 1] = 2;
    ASSERT_EQ(mad_ifc(n, in, out).status, OHCA_STATUS_OK);
    EXPECT_EQ(out.mad[5], 0x1c);
    // A response is the host's (an answer to its performance manager).
    ASSERT_EQ(mad_ifc(n, mad(0x04, 0x0012, 0x81), out).status, OHCA_STATUS_OK);
    EXPECT_EQ(out.result, uint32_t{OHCA_MAD_IFC_NOT_MINE});
}

// What reaches the SMA and what the host's SM gets: an answer to the SM's
// own directed-route Get(NodeInfo) must reach it, not be swallowed here
// (the SM's sweep of a peer timed out on every SMP).
TEST(IbPort, ResponsesTrapsAndSmInfoAreTheHosts) {
    RdmaNode n(1, false, 0, 10, 0, nullptr, OHCA_LINK_IB);
    ohca_mad_ifc_out out{};
    for (const uint8_t mclass : {uint8_t{0x01}, uint8_t{0x81}}) {
        for (const uint8_t method : {uint8_t{0x81}, uint8_t{0x05}, uint8_t{0x06}}) {
            ASSERT_EQ(mad_ifc(n, mad(mclass, 0x0011, method), out).status, OHCA_STATUS_OK);
            EXPECT_EQ(out.result, uint32_t{OHCA_MAD_IFC_NOT_MINE})
                << int{mclass} << " " << int{method};
        }
        // SMInfo is the SM's attribute, Get and Set alike.
        ASSERT_EQ(mad_ifc(n, mad(mclass, 0x0020), out).status, OHCA_STATUS_OK);
        EXPECT_EQ(out.result, uint32_t{OHCA_MAD_IFC_NOT_MINE});
        ASSERT_EQ(mad_ifc(n, mad(mclass, 0x0020, 0x02), out).status, OHCA_STATUS_OK);
        EXPECT_EQ(out.result, uint32_t{OHCA_MAD_IFC_NOT_MINE});
        // The SMA's own: a Get is answered, a TrapRepress taken.
        ASSERT_EQ(mad_ifc(n, mad(mclass, 0x0011), out).status, OHCA_STATUS_OK);
        EXPECT_EQ(out.result, uint32_t{OHCA_MAD_IFC_REPLY});
        ASSERT_EQ(mad_ifc(n, mad(mclass, 0x0002, 0x07), out).status, OHCA_STATUS_OK);
        EXPECT_EQ(out.result, uint32_t{OHCA_MAD_IFC_CONSUMED});
    }
}

TEST(IbPort, Qp0OnlyOnAnIbPortAndOnlyOne) {
    RdmaNode eth(1);
    const uint32_t pd = eth.create_pd();
    const CqInfo cq = eth.create_cq();
    ohca_create_qp_in in{};
    in.type = OHCA_QPT_SMI;
    in.pdn = pd;
    in.send_cqn = cq.cqn;
    in.recv_cqn = cq.cqn;
    in.sq_log_size = 2;
    in.rq_log_size = 2;
    in.sq_log_stride = 7;
    in.rq_log_stride = 5;
    ohca_create_out o{};
    in.sq_pbl = eth.make_pbl(eth.alloc(4096), 4096);
    in.rq_pbl = eth.make_pbl(eth.alloc(4096), 4096);
    EXPECT_EQ(eth.cmd(OHCA_CMD_CREATE_QP, &in, sizeof(in), &o, sizeof(o)).status,
              OHCA_STATUS_BAD_FIELD);

    RdmaNode ib(2, false, 0, 10, 0, nullptr, OHCA_LINK_IB);
    const QpInfo qp0 =
        ib.create_qp(ib.create_pd(), ib.create_cq().cqn, ib.create_cq().cqn, 2, 2, 0, OHCA_QPT_SMI);
    EXPECT_EQ(qp0.qpn, 0u);
    const uint32_t pd2 = ib.create_pd();
    const CqInfo cq2 = ib.create_cq();
    in.pdn = pd2;
    in.send_cqn = cq2.cqn;
    in.recv_cqn = cq2.cqn;
    in.sq_pbl = ib.make_pbl(ib.alloc(4096), 4096);
    in.rq_pbl = ib.make_pbl(ib.alloc(4096), 4096);
    EXPECT_EQ(ib.cmd(OHCA_CMD_CREATE_QP, &in, sizeof(in), &o, sizeof(o)).status,
              OHCA_STATUS_BAD_STATE);
    // No raw Ethernet QP and no Ethernet rings on an InfiniBand port.
    in.type = OHCA_QPT_RAW_ETH;
    EXPECT_EQ(ib.cmd(OHCA_CMD_CREATE_QP, &in, sizeof(in), &o, sizeof(o)).status,
              OHCA_STATUS_BAD_FIELD);
    ohca_create_eth_ring_in r{};
    r.type = OHCA_ETH_RING_RX;
    r.log_size = 2;
    r.base = ib.alloc(4096);
    EXPECT_EQ(ib.cmd_in(OHCA_CMD_CREATE_ETH_RING, r).status, OHCA_STATUS_BAD_STATE);
}

// MODIFY_QP reads the AV as struct ohca_av_ib and checks it as today's.
TEST(IbPort, IbAddressVectorChecked) {
    RdmaNode n(1, false, 0, 10, 0, nullptr, OHCA_LINK_IB);
    const uint32_t pd = n.create_pd();
    const CqInfo cq = n.create_cq();
    const QpInfo qp = n.create_qp(pd, cq.cqn, cq.cqn);
    ohca_qp_attr a{};
    a.qp_state = OHCA_QPS_INIT;
    a.pkey_index = 15; // the IB port's table has 16 entries
    ASSERT_EQ(n.modify(qp.qpn,
                       OHCA_QP_STATE | OHCA_QP_PKEY_INDEX | OHCA_QP_PORT | OHCA_QP_ACCESS_FLAGS, a)
                  .status,
              OHCA_STATUS_OK);
    a.pkey_index = 16;
    EXPECT_EQ(n.modify(qp.qpn, OHCA_QP_PKEY_INDEX, a).status, OHCA_STATUS_BAD_FIELD);
    auto rtr = [&](const ohca_av_ib &av) {
        ohca_qp_attr r{};
        r.qp_state = OHCA_QPS_RTR;
        r.path_mtu = 5;
        r.dest_qpn = 7;
        std::memcpy(&r.av, &av, sizeof(av));
        return n.modify(qp.qpn,
                        OHCA_QP_STATE | OHCA_QP_AV | OHCA_QP_PATH_MTU | OHCA_QP_DEST_QPN |
                            OHCA_QP_RQ_PSN | OHCA_QP_MAX_DEST_RD_ATOMIC | OHCA_QP_MIN_RNR_TIMER,
                        r);
    };
    const size_t av = offsetof(ohca_modify_qp_in, attr) + offsetof(ohca_qp_attr, av);
    ohca_av_ib bad{};
    EXPECT_EQ(rtr(bad).syndrome, av + offsetof(ohca_av_ib, dlid));
    bad.dlid = 5;
    bad.sl = 16;
    EXPECT_EQ(rtr(bad).syndrome, av + offsetof(ohca_av_ib, sl));
    bad.sl = 0;
    bad.flags = 0x80;
    EXPECT_EQ(rtr(bad).syndrome, av + offsetof(ohca_av_ib, flags));
    bad.flags = OHCA_AV_IB_GRH;
    bad.sgid_index = 1;
    EXPECT_EQ(rtr(bad).syndrome, av + offsetof(ohca_av_ib, sgid_index));
    ohca_av_ib good{};
    good.dlid = 5;
    good.sl = 3;
    EXPECT_EQ(rtr(good).status, OHCA_STATUS_OK);
}

// The link's changes: DOWN without it, INIT with it, and what changed in
// param1.
TEST(IbPort, LinkLossTakesThePortDownAndBackToInit) {
    RdmaNode n(1, false, 0, 10, 0, nullptr, OHCA_LINK_IB);
    (void)n.events();
    ohca_engine_set_link(n.e, false);
    auto ev = n.events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].type, OHCA_EQE_PORT_CHANGE);
    EXPECT_EQ(ev[0].code, OHCA_PORT_DOWN);
    EXPECT_EQ(ev[0].param1, uint32_t{OHCA_PORT_CHG_STATE});
    EXPECT_EQ(query_port(n).phys_state, OHCA_PHYS_POLLING);
    ohca_engine_set_link(n.e, true);
    ev = n.events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].code, OHCA_PORT_INIT);
    EXPECT_EQ(query_port(n).state, OHCA_PORT_INIT);
}

} // namespace
} // namespace ohca::test
