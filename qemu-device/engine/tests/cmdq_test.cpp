// SPDX-License-Identifier: GPL-2.0-or-later
// The command set: every command's success path and malformed commands.
#include "engine_test.hpp"

#include <array>

namespace ohca::test {
namespace {

class CmdqTest : public EngineTest {
  protected:
    void SetUp() override {
        EngineTest::SetUp();
        bring_up();
    }

    ohca_add_gid_in gid4(uint16_t index) {
        ohca_add_gid_in in{};
        in.gid[10] = 0xff;
        in.gid[11] = 0xff;
        in.gid[12] = 10;
        in.gid[15] = static_cast<uint8_t>(index + 1);
        in.index = index;
        in.port = 1;
        in.type = OHCA_GID_TYPE_ROCE_V2_IPV4;
        std::copy(std::begin(kMac), std::end(kMac), in.mac);
        in.vlan_id = 0xffff;
        return in;
    }

    ohca_add_gid_in gid6(uint16_t index) {
        ohca_add_gid_in in = gid4(index);
        std::array<uint8_t, 16> g = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xfe, 0, 0, 1};
        std::copy(g.begin(), g.end(), in.gid);
        in.type = OHCA_GID_TYPE_ROCE_V2_IPV6;
        return in;
    }

    CmdOutcome outcome(uint8_t status, uint32_t syndrome) { return {status, syndrome}; }
};

void expect(const CmdOutcome &got, uint8_t status, uint32_t syndrome) {
    EXPECT_EQ(got.status, status);
    EXPECT_EQ(got.syndrome, syndrome);
}

// ---- success paths --------------------------------------------------------

TEST_F(CmdqTest, Nop) {
    expect(cmd(OHCA_CMD_NOP), OHCA_STATUS_OK, 0);
    EXPECT_EQ(stats().cmd_completed, 1u);
}

TEST_F(CmdqTest, QueryDevice) {
    ohca_query_device_out d{};
    expect(cmd_out(OHCA_CMD_QUERY_DEVICE, d), OHCA_STATUS_OK, 0);
    EXPECT_EQ(d.fw_version, uint32_t{OHCA_FW_VERSION(1, 0, 0)});
    EXPECT_EQ(d.hw_version, 1u);
    EXPECT_EQ(d.node_guid, kNodeGuid);
    EXPECT_EQ(d.sys_image_guid, kNodeGuid);
    EXPECT_EQ(d.max_mr_size, uint64_t{1} << 40);
    EXPECT_EQ(d.page_size_cap, (1ull << 12) | (1ull << 21) | (1ull << 30));
    EXPECT_EQ(d.vendor_id, 0x1af4u);
    EXPECT_EQ(d.vendor_part_id, 0x10f0u);
    EXPECT_EQ(d.max_qp, 1024u);
    EXPECT_EQ(d.max_qp_wr, 4096u);
    EXPECT_EQ(d.max_sge, 16u);
    EXPECT_EQ(d.max_cq, 1024u);
    EXPECT_EQ(d.max_cqe, 1048575u);
    EXPECT_EQ(d.max_mr, 4096u);
    EXPECT_EQ(d.max_pd, 1024u);
    EXPECT_EQ(d.max_inline_data, 256u);
    EXPECT_EQ(d.max_uar, 255u);
    EXPECT_EQ(d.max_msg_size, 1u << 31);
    EXPECT_EQ(d.gid_table_len, 16u);
    EXPECT_EQ(d.pkey_table_len, 1u);
    EXPECT_EQ(d.num_ports, 1u);
    EXPECT_EQ(d.max_mw, 1024u);
    EXPECT_EQ(d.max_mcast_grp, 256u);
    EXPECT_EQ(d.max_mcast_qp_attach, 32u);
    EXPECT_EQ(d.max_total_mcast_qp_attach, 1024u);
}

TEST_F(CmdqTest, QueryDeviceLargerOutLenWritesOnlyTheStruct) {
    host_.fill(kOutBuf, 0xaa, 512);
    expect(cmd(OHCA_CMD_QUERY_DEVICE, nullptr, 0, 512, kOutBuf), OHCA_STATUS_OK, 0);
    EXPECT_EQ(host_.get<uint8_t>(kOutBuf + sizeof(ohca_query_device_out)), 0xaa);
}

// A driver of ABI 1.3 asks for the 208 bytes it knows and gets exactly
// those; the moderation limits follow for one that knows them.
TEST_F(CmdqTest, QueryDeviceGrewCompatibly) {
    host_.fill(kOutBuf, 0xaa, 512);
    expect(cmd(OHCA_CMD_QUERY_DEVICE, nullptr, 0, OHCA_QUERY_DEVICE_OUT_MIN_SIZE, kOutBuf),
           OHCA_STATUS_OK, 0);
    EXPECT_EQ(host_.get<uint8_t>(kOutBuf + OHCA_QUERY_DEVICE_OUT_MIN_SIZE), 0xaa);
    ohca_query_device_out d{};
    expect(cmd_out(OHCA_CMD_QUERY_DEVICE, d), OHCA_STATUS_OK, 0);
    EXPECT_NE(d.dev_caps & OHCA_DEV_CAP_CQ_MODERATION, 0u);
    EXPECT_EQ(d.max_cq_mod_count, 0xffffu);
    EXPECT_EQ(d.max_cq_mod_period, 0xffffu);
}

TEST_F(CmdqTest, QueryPort) {
    ohca_query_port_in in{};
    in.port = 1;
    expect(cmd(OHCA_CMD_QUERY_PORT, &in, sizeof(in), sizeof(ohca_query_port_out), kOutBuf),
           OHCA_STATUS_OK, 0);
    const auto p = host_.get<ohca_query_port_out>(kOutBuf);
    EXPECT_EQ(p.state, OHCA_PORT_ACTIVE);
    EXPECT_EQ(p.link_up, 1);
    EXPECT_EQ(0, std::memcmp(p.mac, kMac, 6));
    EXPECT_EQ(p.max_mtu, 9000u);
    EXPECT_EQ(p.mtu, 1500u);
    EXPECT_GT(p.speed_mbps, 0u);
    EXPECT_EQ(p.gid_table_len, 16u);
    EXPECT_EQ(p.pkey_table_len, 1u);
    EXPECT_EQ(p.max_msg_size, 1u << 31);
}

TEST_F(CmdqTest, QueryPortFollowsLink) {
    ohca_engine_set_link(e_, false);
    ohca_eqe eqe{};
    ASSERT_TRUE(next_eqe(eqe));
    eq_doorbell(true);
    ohca_query_port_in in{};
    in.port = 1;
    expect(cmd(OHCA_CMD_QUERY_PORT, &in, sizeof(in), sizeof(ohca_query_port_out), kOutBuf),
           OHCA_STATUS_OK, 0);
    const auto p = host_.get<ohca_query_port_out>(kOutBuf);
    EXPECT_EQ(p.state, OHCA_PORT_DOWN);
    EXPECT_EQ(p.link_up, 0);
}

TEST_F(CmdqTest, SetPortMtuAndRxMode) {
    ohca_set_port_in in{};
    in.port = 1;
    in.mask = OHCA_SET_PORT_MTU | OHCA_SET_PORT_RX_MODE;
    in.mtu = 9000;
    in.rx_mode = OHCA_RX_MODE_PROMISC;
    expect(cmd_in(OHCA_CMD_SET_PORT, in), OHCA_STATUS_OK, 0);
    ohca_query_port_in q{};
    q.port = 1;
    ASSERT_EQ(cmd(OHCA_CMD_QUERY_PORT, &q, sizeof(q), 64, kOutBuf).status, OHCA_STATUS_OK);
    EXPECT_EQ(host_.get<ohca_query_port_out>(kOutBuf).mtu, 9000u);
    // Only masked fields change.
    in.mask = OHCA_SET_PORT_RX_MODE;
    in.mtu = 1; // ignored
    in.rx_mode = 0;
    expect(cmd_in(OHCA_CMD_SET_PORT, in), OHCA_STATUS_OK, 0);
    ASSERT_EQ(cmd(OHCA_CMD_QUERY_PORT, &q, sizeof(q), 64, kOutBuf).status, OHCA_STATUS_OK);
    EXPECT_EQ(host_.get<ohca_query_port_out>(kOutBuf).mtu, 9000u);
}

TEST_F(CmdqTest, CreateDestroyEthRings) {
    ohca_create_eth_ring_in in{};
    in.type = OHCA_ETH_RING_TX;
    in.log_size = 12;
    in.base = kTxRing;
    expect(cmd_in(OHCA_CMD_CREATE_ETH_RING, in), OHCA_STATUS_OK, 0);
    in.type = OHCA_ETH_RING_RX;
    in.log_size = 2;
    in.base = kRxRing;
    expect(cmd_in(OHCA_CMD_CREATE_ETH_RING, in), OHCA_STATUS_OK, 0);
    ohca_destroy_eth_ring_in d{};
    d.type = OHCA_ETH_RING_TX;
    expect(cmd_in(OHCA_CMD_DESTROY_ETH_RING, d), OHCA_STATUS_OK, 0);
    d.type = OHCA_ETH_RING_RX;
    expect(cmd_in(OHCA_CMD_DESTROY_ETH_RING, d), OHCA_STATUS_OK, 0);
    // Gone: doorbells are rejected.
    const uint32_t errs = rd(OHCA_REG_ERR_COUNT);
    wr(OHCA_REG_ETH_TX_PI, 1);
    EXPECT_EQ(rd(OHCA_REG_ERR_COUNT), errs + 1);
}

TEST_F(CmdqTest, AllocDeallocUar) {
    ohca_alloc_uar_out a{}, b{};
    expect(cmd_out(OHCA_CMD_ALLOC_UAR, a), OHCA_STATUS_OK, 0);
    expect(cmd_out(OHCA_CMD_ALLOC_UAR, b), OHCA_STATUS_OK, 0);
    EXPECT_EQ(a.uar_index, 1u);
    EXPECT_EQ(b.uar_index, 2u);
    ohca_dealloc_uar_in d{};
    d.uar_index = a.uar_index;
    expect(cmd_in(OHCA_CMD_DEALLOC_UAR, d), OHCA_STATUS_OK, 0);
    // Lowest free again.
    expect(cmd_out(OHCA_CMD_ALLOC_UAR, a), OHCA_STATUS_OK, 0);
    EXPECT_EQ(a.uar_index, 1u);
}

TEST_F(CmdqTest, UarExhaustionAndDoubleFree) {
    for (uint32_t i = 1; i < 256; ++i) {
        ohca_alloc_uar_out a{};
        ASSERT_EQ(cmd_out(OHCA_CMD_ALLOC_UAR, a).status, OHCA_STATUS_OK);
        ASSERT_EQ(a.uar_index, i);
    }
    ohca_alloc_uar_out a{};
    expect(cmd_out(OHCA_CMD_ALLOC_UAR, a), OHCA_STATUS_NO_RESOURCES, 0);
    ohca_dealloc_uar_in d{};
    d.uar_index = 77;
    expect(cmd_in(OHCA_CMD_DEALLOC_UAR, d), OHCA_STATUS_OK, 0);
    expect(cmd_in(OHCA_CMD_DEALLOC_UAR, d), OHCA_STATUS_BAD_HANDLE, 77);
    d.uar_index = 0;
    expect(cmd_in(OHCA_CMD_DEALLOC_UAR, d), OHCA_STATUS_BAD_HANDLE, 0);
    d.uar_index = 256;
    expect(cmd_in(OHCA_CMD_DEALLOC_UAR, d), OHCA_STATUS_BAD_HANDLE, 256);
    d.uar_index = 0xffffffff;
    expect(cmd_in(OHCA_CMD_DEALLOC_UAR, d), OHCA_STATUS_BAD_HANDLE, 0xffffffff);
    expect(cmd_out(OHCA_CMD_ALLOC_UAR, a), OHCA_STATUS_OK, 0);
    EXPECT_EQ(a.uar_index, 77u);
}

TEST_F(CmdqTest, AddDelGid) {
    expect(cmd_in(OHCA_CMD_ADD_GID, gid4(0)), OHCA_STATUS_OK, 0);
    expect(cmd_in(OHCA_CMD_ADD_GID, gid6(15)), OHCA_STATUS_OK, 0);
    expect(cmd_in(OHCA_CMD_ADD_GID, gid6(0)), OHCA_STATUS_OK, 0); // overwrite
    auto v = gid4(3);
    v.vlan_id = 100;
    expect(cmd_in(OHCA_CMD_ADD_GID, v), OHCA_STATUS_OK, 0);
    ohca_del_gid_in d{};
    d.index = 15;
    d.port = 1;
    expect(cmd_in(OHCA_CMD_DEL_GID, d), OHCA_STATUS_OK, 0);
    expect(cmd_in(OHCA_CMD_DEL_GID, d), OHCA_STATUS_BAD_HANDLE, 15);
    d.index = 7;
    expect(cmd_in(OHCA_CMD_DEL_GID, d), OHCA_STATUS_BAD_HANDLE, 7);
}

TEST_F(CmdqTest, QueryStatsCountsCommands) {
    EXPECT_EQ(cmd(0x7f).status, OHCA_STATUS_BAD_OPCODE);
    EXPECT_EQ(cmd(OHCA_CMD_NOP).status, OHCA_STATUS_OK);
    const auto s = stats();
    EXPECT_EQ(s.cmd_completed, 1u);
    EXPECT_EQ(s.cmd_failed, 1u);
    EXPECT_EQ(s.rsvd[0], 0u);
}

// ---- malformed entries ------------------------------------------------------

TEST_F(CmdqTest, BadOpcode) {
    expect(cmd(OHCA_CMD_MAX), OHCA_STATUS_BAD_OPCODE, OHCA_CMD_MAX);
    expect(cmd(0xffff), OHCA_STATUS_BAD_OPCODE, 0xffff);
}

TEST_F(CmdqTest, EntryReservedFields) {
    ohca_cmd c{};
    c.opcode = OHCA_CMD_NOP;
    c.rsvd0 = 1;
    post_raw(c);
    c.rsvd0 = 0;
    c.rsvd1 = 0x100;
    post_raw(c);
    c.rsvd1 = 0;
    c.out_addr = kOutBuf; // with out_len 0
    post_raw(c);
    ring_cmdq();
    drain();
    auto e0 = host_.get<ohca_cmd>(kCmdqBase);
    auto e1 = host_.get<ohca_cmd>(kCmdqBase + 64);
    auto e2 = host_.get<ohca_cmd>(kCmdqBase + 128);
    EXPECT_EQ(e0.status, OHCA_STATUS_RESERVED_NONZERO);
    EXPECT_EQ(e0.syndrome, OHCA_SYNDROME_ENTRY | 5u);
    EXPECT_EQ(e1.status, OHCA_STATUS_RESERVED_NONZERO);
    EXPECT_EQ(e1.syndrome, OHCA_SYNDROME_ENTRY | 14u);
    EXPECT_EQ(e2.status, OHCA_STATUS_BAD_FIELD);
    EXPECT_EQ(e2.syndrome, OHCA_SYNDROME_ENTRY | 24u);
}

TEST_F(CmdqTest, BadInLen) {
    std::array<uint8_t, 16> in{};
    in[0] = 1; // port
    expect(cmd(OHCA_CMD_QUERY_PORT, in.data(), 7, 64, kOutBuf), OHCA_STATUS_BAD_LEN, 8);
    expect(cmd(OHCA_CMD_QUERY_PORT, in.data(), 9, 64, kOutBuf), OHCA_STATUS_BAD_LEN, 8);
    expect(cmd(OHCA_CMD_NOP, in.data(), 4), OHCA_STATUS_BAD_LEN, 0);
    ohca_cmd c{};
    c.opcode = OHCA_CMD_NOP;
    c.in_len = 4097;
    c.in_addr = kMailbox;
    post_raw(c);
    ring_cmdq();
    drain();
    const auto e = host_.get<ohca_cmd>(kCmdqBase + 64ull * ((drv_.cmd_pi - 1) & 15));
    EXPECT_EQ(e.status, OHCA_STATUS_BAD_LEN);
    EXPECT_EQ(e.syndrome, 4096u);
}

TEST_F(CmdqTest, BadOutLen) {
    expect(cmd(OHCA_CMD_QUERY_DEVICE, nullptr, 0, OHCA_QUERY_DEVICE_OUT_MIN_SIZE - 1, kOutBuf),
           OHCA_STATUS_BAD_LEN, OHCA_QUERY_DEVICE_OUT_MIN_SIZE);
    expect(cmd(OHCA_CMD_QUERY_STATS, nullptr, 0, 0, 0), OHCA_STATUS_BAD_LEN, 128);
    expect(cmd(OHCA_CMD_ALLOC_UAR, nullptr, 0, 4, kOutBuf), OHCA_STATUS_BAD_LEN, 8);
    expect(cmd(OHCA_CMD_QUERY_DEVICE, nullptr, 0, 4097, kOutBuf), OHCA_STATUS_BAD_LEN, 4096);
}

TEST_F(CmdqTest, MailboxInputIsFetchedByDma) {
    // 64 bytes do not fit inline: fetched from in_addr, then too long.
    std::array<uint8_t, 64> big{};
    expect(cmd(OHCA_CMD_NOP, big.data(), 64), OHCA_STATUS_BAD_LEN, 0);
    ohca_cmd c{};
    c.opcode = OHCA_CMD_NOP;
    c.in_len = 64;
    c.in_addr = kUnmapped;
    post_raw(c);
    ring_cmdq();
    drain();
    const auto e = host_.get<ohca_cmd>(kCmdqBase + 64ull * ((drv_.cmd_pi - 1) & 15));
    EXPECT_EQ(e.status, OHCA_STATUS_BAD_ADDR);
    EXPECT_EQ(e.syndrome, 0u);
    // Wrapping the address space is a DMA error too.
    c.in_addr = ~uint64_t{0} - 8;
    post_raw(c);
    ring_cmdq();
    drain();
    EXPECT_EQ(host_.get<ohca_cmd>(kCmdqBase + 64ull * ((drv_.cmd_pi - 1) & 15)).status,
              OHCA_STATUS_BAD_ADDR);
}

TEST_F(CmdqTest, OutputOutsideGuestMemory) {
    expect(cmd(OHCA_CMD_QUERY_DEVICE, nullptr, 0, sizeof(ohca_query_device_out), kUnmapped),
           OHCA_STATUS_BAD_ADDR, 1);
    // A failed ALLOC_UAR allocates nothing.
    expect(cmd(OHCA_CMD_ALLOC_UAR, nullptr, 0, 8, kUnmapped), OHCA_STATUS_BAD_ADDR, 1);
    ohca_alloc_uar_out a{};
    expect(cmd_out(OHCA_CMD_ALLOC_UAR, a), OHCA_STATUS_OK, 0);
    EXPECT_EQ(a.uar_index, 1u);
    // Straddling the end of a region.
    expect(cmd(OHCA_CMD_QUERY_STATS, nullptr, 0, 128, kMailbox + 0x10000 - 64),
           OHCA_STATUS_BAD_ADDR, 1);
}

TEST_F(CmdqTest, BadPort) {
    ohca_query_port_in q{};
    q.port = 2;
    expect(cmd(OHCA_CMD_QUERY_PORT, &q, 8, 64, kOutBuf), OHCA_STATUS_BAD_FIELD, 0);
    q.port = 0;
    expect(cmd(OHCA_CMD_QUERY_PORT, &q, 8, 64, kOutBuf), OHCA_STATUS_BAD_FIELD, 0);
    ohca_set_port_in s{};
    s.port = 2;
    expect(cmd_in(OHCA_CMD_SET_PORT, s), OHCA_STATUS_BAD_FIELD, 0);
    auto g = gid4(0);
    g.port = 0;
    expect(cmd_in(OHCA_CMD_ADD_GID, g), OHCA_STATUS_BAD_FIELD, 18);
    ohca_del_gid_in d{};
    d.port = 3;
    expect(cmd_in(OHCA_CMD_DEL_GID, d), OHCA_STATUS_BAD_FIELD, 2);
}

TEST_F(CmdqTest, ReservedInputBytes) {
    ohca_query_port_in q{};
    q.port = 1;
    q.rsvd[6] = 1;
    expect(cmd(OHCA_CMD_QUERY_PORT, &q, 8, 64, kOutBuf), OHCA_STATUS_RESERVED_NONZERO, 7);
    ohca_set_port_in s{};
    s.port = 1;
    s.rsvd0[1] = 1;
    expect(cmd_in(OHCA_CMD_SET_PORT, s), OHCA_STATUS_RESERVED_NONZERO, 2);
    ohca_create_eth_ring_in c{};
    c.type = OHCA_ETH_RING_TX;
    c.log_size = 4;
    c.base = kTxRing;
    c.rsvd1 = 0x01000000;
    expect(cmd_in(OHCA_CMD_CREATE_ETH_RING, c), OHCA_STATUS_RESERVED_NONZERO, 7);
    ohca_destroy_eth_ring_in d{};
    d.rsvd[0] = 1;
    expect(cmd_in(OHCA_CMD_DESTROY_ETH_RING, d), OHCA_STATUS_RESERVED_NONZERO, 1);
    ohca_dealloc_uar_in u{};
    u.uar_index = 1;
    u.rsvd = 1;
    expect(cmd_in(OHCA_CMD_DEALLOC_UAR, u), OHCA_STATUS_RESERVED_NONZERO, 4);
    auto g = gid4(0);
    g.rsvd = 0x100;
    expect(cmd_in(OHCA_CMD_ADD_GID, g), OHCA_STATUS_RESERVED_NONZERO, 29);
    ohca_del_gid_in dg{};
    dg.port = 1;
    dg.rsvd[4] = 9;
    expect(cmd_in(OHCA_CMD_DEL_GID, dg), OHCA_STATUS_RESERVED_NONZERO, 7);
}

TEST_F(CmdqTest, SetPortBadFields) {
    ohca_set_port_in s{};
    s.port = 1;
    s.mask = 4;
    expect(cmd_in(OHCA_CMD_SET_PORT, s), OHCA_STATUS_BAD_FIELD, 4);
    s.mask = OHCA_SET_PORT_MTU;
    s.mtu = 67;
    expect(cmd_in(OHCA_CMD_SET_PORT, s), OHCA_STATUS_BAD_FIELD, 8);
    s.mtu = 9001;
    expect(cmd_in(OHCA_CMD_SET_PORT, s), OHCA_STATUS_BAD_FIELD, 8);
    s.mask = OHCA_SET_PORT_RX_MODE;
    s.rx_mode = 4;
    expect(cmd_in(OHCA_CMD_SET_PORT, s), OHCA_STATUS_BAD_FIELD, 12);
}

TEST_F(CmdqTest, CreateEthRingBadFields) {
    ohca_create_eth_ring_in c{};
    c.type = 2;
    c.log_size = 4;
    c.base = kTxRing;
    expect(cmd_in(OHCA_CMD_CREATE_ETH_RING, c), OHCA_STATUS_BAD_FIELD, 0);
    c.type = OHCA_ETH_RING_TX;
    c.log_size = 1;
    expect(cmd_in(OHCA_CMD_CREATE_ETH_RING, c), OHCA_STATUS_BAD_FIELD, 1);
    c.log_size = 13;
    expect(cmd_in(OHCA_CMD_CREATE_ETH_RING, c), OHCA_STATUS_BAD_FIELD, 1);
    c.log_size = 4;
    c.base = kTxRing + 8;
    expect(cmd_in(OHCA_CMD_CREATE_ETH_RING, c), OHCA_STATUS_BAD_FIELD, 8);
    c.base = 0;
    expect(cmd_in(OHCA_CMD_CREATE_ETH_RING, c), OHCA_STATUS_BAD_FIELD, 8);
    c.base = kUnmapped;
    expect(cmd_in(OHCA_CMD_CREATE_ETH_RING, c), OHCA_STATUS_BAD_FIELD, 8);
    // The ring must fit: 4096 descriptors at 64 KiB - 16 overrun the region.
    c.log_size = 12;
    c.base = kTxRing + 16;
    expect(cmd_in(OHCA_CMD_CREATE_ETH_RING, c), OHCA_STATUS_BAD_FIELD, 8);
}

TEST_F(CmdqTest, DoubleCreateAndDestroyNonexistent) {
    ohca_destroy_eth_ring_in d{};
    d.type = OHCA_ETH_RING_RX;
    expect(cmd_in(OHCA_CMD_DESTROY_ETH_RING, d), OHCA_STATUS_BAD_STATE, 0);
    d.type = 5;
    expect(cmd_in(OHCA_CMD_DESTROY_ETH_RING, d), OHCA_STATUS_BAD_FIELD, 0);
    ohca_create_eth_ring_in c{};
    c.type = OHCA_ETH_RING_RX;
    c.log_size = 4;
    c.base = kRxRing;
    expect(cmd_in(OHCA_CMD_CREATE_ETH_RING, c), OHCA_STATUS_OK, 0);
    expect(cmd_in(OHCA_CMD_CREATE_ETH_RING, c), OHCA_STATUS_BAD_STATE, 0);
}

TEST_F(CmdqTest, AddGidBadFields) {
    auto g = gid4(16);
    expect(cmd_in(OHCA_CMD_ADD_GID, g), OHCA_STATUS_BAD_FIELD, 16);
    g = gid4(0xffff);
    expect(cmd_in(OHCA_CMD_ADD_GID, g), OHCA_STATUS_BAD_FIELD, 16);
    g = gid4(1);
    g.type = 3;
    expect(cmd_in(OHCA_CMD_ADD_GID, g), OHCA_STATUS_BAD_FIELD, 19);
    g = gid4(1);
    g.type = OHCA_GID_TYPE_ROCE_V2_IPV6; // IPv4-mapped GID with IPv6 type
    expect(cmd_in(OHCA_CMD_ADD_GID, g), OHCA_STATUS_BAD_FIELD, 0);
    g = gid6(1);
    g.type = OHCA_GID_TYPE_ROCE_V2_IPV4;
    expect(cmd_in(OHCA_CMD_ADD_GID, g), OHCA_STATUS_BAD_FIELD, 0);
    g = gid6(1);
    std::memset(g.gid, 0, 16);
    expect(cmd_in(OHCA_CMD_ADD_GID, g), OHCA_STATUS_BAD_FIELD, 0);
    g = gid4(1);
    g.mac[0] = 0x01; // multicast
    expect(cmd_in(OHCA_CMD_ADD_GID, g), OHCA_STATUS_BAD_FIELD, 20);
    g = gid4(1);
    g.vlan_id = 4096;
    expect(cmd_in(OHCA_CMD_ADD_GID, g), OHCA_STATUS_BAD_FIELD, 26);
    ohca_del_gid_in d{};
    d.index = 16;
    d.port = 1;
    expect(cmd_in(OHCA_CMD_DEL_GID, d), OHCA_STATUS_BAD_FIELD, 0);
}

TEST_F(CmdqTest, StatusWriteBackFailureIsFatal) {
    // The entry is readable but the ring becomes read-only: model it by
    // removing the ring after the fetch, from inside the DMA callback.
    ohca_cmd c{};
    c.opcode = OHCA_CMD_NOP;
    post_raw(c);
    bool removed = false;
    host_.on_dma = [&] {
        if (!removed) {
            removed = true;
            host_.remove_region(kCmdqBase);
        }
    };
    ring_cmdq();
    drain();
    host_.on_dma = nullptr;
    EXPECT_EQ(rd(OHCA_REG_DEV_STATUS), uint32_t{OHCA_DEV_STATUS_FATAL});
    EXPECT_EQ(rd(OHCA_REG_FATAL_CODE), uint32_t{OHCA_FATAL_CMDQ_DMA});
}

TEST_F(CmdqTest, ManyCommandsAcrossRingWrap) {
    for (int i = 0; i < 100; ++i) {
        ASSERT_EQ(cmd(OHCA_CMD_NOP).status, OHCA_STATUS_OK);
    }
    EXPECT_EQ(rd(OHCA_REG_CMDQ_CI), 100u);
}

TEST_F(CmdqTest, CiWrapsAt16Bits) {
    for (int i = 0; i < 65536 + 3; ++i) {
        ohca_cmd c{};
        c.opcode = OHCA_CMD_NOP;
        post_raw(c);
        ring_cmdq();
        ohca_engine_process(e_);
        ohca_eqe eqe{};
        ASSERT_TRUE(next_eqe(eqe));
        eq_doorbell(false);
    }
    EXPECT_EQ(rd(OHCA_REG_CMDQ_CI), 3u);
    EXPECT_EQ(rd(OHCA_REG_DEV_STATUS), uint32_t{OHCA_DEV_STATUS_READY});
}

} // namespace
} // namespace ohca::test
