// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ohca_hostile: the command queue: bad opcodes, reserved fields, lengths, mailboxes and
 * outputs outside RAM or on the device's own BARs, port, Ethernet ring and GID
 * commands, random command entries.
 */
#include "hostile.h"

static bool raw_expect(struct ohca_cmd *c, uint8_t st, uint32_t syn)
{
	uint8_t s;
	uint32_t y;

	CHECK(post_raw(c, &s, &y) == 0, "no completion");
	CHECK(s == st && y == syn, "status %#x syndrome %#x, want %#x/%#x", s, y,
	      st, syn);
	return nop_ok();
}

bool t_cmd_bad_opcodes(void)
{
	static const uint16_t ops[] = { 0x0b, 0x0f, OHCA_CMD_MAX, 0x7fff, 0xffff };

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct ohca_cmd c = { .opcode = ops[i] };

		if (!raw_expect(&c, OHCA_STATUS_BAD_OPCODE, ops[i]))
			return false;
	}
	return true;
}

bool t_cmd_rsvd0(void)
{
	struct ohca_cmd c = { .rsvd0 = 1 };

	return raw_expect(&c, OHCA_STATUS_RESERVED_NONZERO, OHCA_SYNDROME_ENTRY | 5);
}

bool t_cmd_rsvd1(void)
{
	struct ohca_cmd c = { .rsvd1 = 0x8000 };

	return raw_expect(&c, OHCA_STATUS_RESERVED_NONZERO, OHCA_SYNDROME_ENTRY | 14);
}

bool t_cmd_out_addr_no_len(void)
{
	struct ohca_cmd c = { .out_addr = NOWHERE };

	return raw_expect(&c, OHCA_STATUS_BAD_FIELD, OHCA_SYNDROME_ENTRY | 24);
}

bool t_cmd_in_len_huge(void)
{
	struct ohca_cmd c = { .opcode = OHCA_CMD_CREATE_MR, .in_len = 0xffff,
		.in_addr = pba(P_IN) };

	return raw_expect(&c, OHCA_STATUS_BAD_LEN, OHCA_CMD_MAILBOX_MAX);
}

bool t_cmd_out_len_huge(void)
{
	struct ohca_cmd c = { .opcode = OHCA_CMD_QUERY_DEVICE, .out_len = 4097,
		.out_addr = pba(P_OUT) };

	return raw_expect(&c, OHCA_STATUS_BAD_LEN, OHCA_CMD_MAILBOX_MAX);
}

bool t_cmd_in_len_wrong(void)
{
	uint8_t in[64] = { 1 };

	EXPECT_CMD(cmd(OHCA_CMD_QUERY_PORT, in, 7, 64), OHCA_STATUS_BAD_LEN, 8);
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_QP, in, 63, 8), OHCA_STATUS_BAD_LEN, 64);
	EXPECT_CMD(cmd(OHCA_CMD_NOP, in, 1, 0), OHCA_STATUS_BAD_LEN, 0);
	return true;
}

bool t_cmd_out_len_short(void)
{
	/* QUERY_DEVICE grew compatibly: the ABI 1.3 size is the minimum. */
	EXPECT_CMD(cmd(OHCA_CMD_QUERY_DEVICE, NULL, 0,
		       OHCA_QUERY_DEVICE_OUT_MIN_SIZE - 1),
		   OHCA_STATUS_BAD_LEN, OHCA_QUERY_DEVICE_OUT_MIN_SIZE);
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_PD, NULL, 0, 7), OHCA_STATUS_BAD_LEN, 8);
	return true;
}

bool t_cmd_mailbox_outside_ram(void)
{
	struct ohca_cmd c = { .opcode = OHCA_CMD_CREATE_MR, .in_len = 48,
		.in_addr = NOWHERE, .out_len = 8, .out_addr = pba(P_OUT) };

	return raw_expect(&c, OHCA_STATUS_BAD_ADDR, 0);
}

bool t_cmd_mailbox_wraps(void)
{
	struct ohca_cmd c = { .opcode = OHCA_CMD_CREATE_QP, .in_len = 64,
		.in_addr = WRAPS + 32, .out_len = 8, .out_addr = pba(P_OUT) };

	return raw_expect(&c, OHCA_STATUS_BAD_ADDR, 0);
}

bool t_cmd_mailbox_on_own_bar0(void)
{
	struct ohca_cmd c = { .opcode = OHCA_CMD_CREATE_MR, .in_len = 48,
		.in_addr = bar0_bus, .out_len = 8, .out_addr = pba(P_OUT) };

	/* The device must not read its own registers as input. */
	return raw_expect(&c, OHCA_STATUS_BAD_ADDR, 0);
}

bool t_cmd_output_outside_ram(void)
{
	struct ohca_cmd c = { .opcode = OHCA_CMD_QUERY_DEVICE,
		.out_len = sizeof(struct ohca_query_device_out),
		.out_addr = NOWHERE };

	if (!raw_expect(&c, OHCA_STATUS_BAD_ADDR, 1))
		return false;
	c.out_addr = WRAPS;
	return raw_expect(&c, OHCA_STATUS_BAD_ADDR, 1);
}

bool t_cmd_output_on_own_bars(void)
{
	struct ohca_cmd c = { .opcode = OHCA_CMD_QUERY_STATS, .out_len = 128,
		.out_addr = bar0_bus + OHCA_REG_DEV_CTRL };

	if (!raw_expect(&c, OHCA_STATUS_BAD_ADDR, 1))
		return false;
	c.out_addr = bar2_bus;
	return raw_expect(&c, OHCA_STATUS_BAD_ADDR, 1);
}

bool t_cmd_output_over_own_entry(void)
{
	struct ohca_cmd c = { .opcode = OHCA_CMD_ALLOC_UAR, .out_len = 8,
		.out_addr = pba(P_CMDQ) + (cmd_pi & ((1u << CMDQ_LOG) - 1)) * 64 + 32 };

	return raw_expect(&c, OHCA_STATUS_OK, 0);
}

bool t_cmd_port_fields(void)
{
	struct ohca_query_port_in qp = { .port = 2 };
	struct ohca_set_port_in sp = { .port = 1, .mask = OHCA_SET_PORT_MTU,
		.mtu = 67 };

	EXPECT_CMD(cmd(OHCA_CMD_QUERY_PORT, &qp, 8, 64), OHCA_STATUS_BAD_FIELD, 0);
	EXPECT_CMD(cmd(OHCA_CMD_SET_PORT, &sp, 16, 0), OHCA_STATUS_BAD_FIELD, 8);
	sp.mtu = 9001;
	EXPECT_CMD(cmd(OHCA_CMD_SET_PORT, &sp, 16, 0), OHCA_STATUS_BAD_FIELD, 8);
	sp.mask = 0x80000000;
	EXPECT_CMD(cmd(OHCA_CMD_SET_PORT, &sp, 16, 0), OHCA_STATUS_BAD_FIELD, 4);
	return true;
}

bool t_cmd_eth_ring_outside_ram(void)
{
	struct ohca_create_eth_ring_in in = { .type = OHCA_ETH_RING_RX,
		.log_size = 12, .base = NOWHERE };

	EXPECT_CMD(cmd(OHCA_CMD_CREATE_ETH_RING, &in, 16, 0), OHCA_STATUS_BAD_FIELD, 8);
	in.base = bar0_bus;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_ETH_RING, &in, 16, 0), OHCA_STATUS_BAD_FIELD, 8);
	in.log_size = 13;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_ETH_RING, &in, 16, 0), OHCA_STATUS_BAD_FIELD, 1);
	in.type = 2;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_ETH_RING, &in, 16, 0), OHCA_STATUS_BAD_FIELD, 0);
	return true;
}

bool t_cmd_eth_tx_bad_descriptors(void)
{
	struct ohca_create_eth_ring_in in = { .type = OHCA_ETH_RING_TX,
		.log_size = 2, .base = pba(P_SCRATCH) };
	struct ohca_eth_desc *d = pva(P_SCRATCH);

	memset(d, 0, 64);
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_ETH_RING, &in, 16, 0), 0, 0);
	d[0] = (struct ohca_eth_desc){ .addr = NOWHERE, .len = 100 };
	d[1] = (struct ohca_eth_desc){ .addr = pba(P_DATA), .len = 0 };
	d[2] = (struct ohca_eth_desc){ .addr = pba(P_DATA), .len = 0xffff };
	d[3] = (struct ohca_eth_desc){ .addr = WRAPS, .len = 200 };
	__sync_synchronize();
	wr(OHCA_REG_ETH_TX_PI, 4);
	for (int i = 0; i < 3000 && !(d[3].flags & OHCA_ETH_DESC_DONE); i++)
		msleep(1);
	for (int i = 0; i < 4; i++)
		CHECK(d[i].flags == (OHCA_ETH_DESC_DONE | OHCA_ETH_DESC_ERROR),
		      "descriptor %d flags %#x", i, d[i].flags);
	{
		struct ohca_destroy_eth_ring_in dt = { .type = OHCA_ETH_RING_TX };

		EXPECT_CMD(cmd(OHCA_CMD_DESTROY_ETH_RING, &dt, 8, 0), 0, 0);
	}
	return true;
}

bool t_cmd_gid_fields(void)
{
	struct ohca_add_gid_in g = { .index = 16, .port = 1,
		.type = OHCA_GID_TYPE_ROCE_V2_IPV4, .mac = { 2, 0, 0, 0, 0, 9 },
		.vlan_id = 0xffff };
	struct ohca_del_gid_in d = { .index = 3, .port = 1 };

	memcpy(g.gid, gid_v4, 16);
	EXPECT_CMD(cmd(OHCA_CMD_ADD_GID, &g, 32, 0), OHCA_STATUS_BAD_FIELD, 16);
	g.index = 0;
	g.mac[0] = 1;
	EXPECT_CMD(cmd(OHCA_CMD_ADD_GID, &g, 32, 0), OHCA_STATUS_BAD_FIELD, 20);
	g.mac[0] = 2;
	g.vlan_id = 4096;
	EXPECT_CMD(cmd(OHCA_CMD_ADD_GID, &g, 32, 0), OHCA_STATUS_BAD_FIELD, 26);
	EXPECT_CMD(cmd(OHCA_CMD_DEL_GID, &d, 8, 0), OHCA_STATUS_BAD_HANDLE, 3);
	d.index = 0xffff;
	EXPECT_CMD(cmd(OHCA_CMD_DEL_GID, &d, 8, 0), OHCA_STATUS_BAD_FIELD, 0);
	return true;
}

bool t_cmd_random_entries(void)
{
	/* Random entries (addresses never inside the guest's RAM except the
	 * mailbox pages): every one completes, the queue keeps going. */
	for (int i = 0; i < 2000; i++) {
		struct ohca_cmd c;
		uint8_t *p = (uint8_t *)&c, s;
		uint32_t y;

		for (size_t j = 0; j < sizeof(c); j++)
			p[j] = random();
		c.opcode %= OHCA_CMD_MAX + 2;
		if (random() % 2)
			c.rsvd0 = c.rsvd1 = 0;
		switch (random() % 3) {
		case 0: c.in_addr = pba(P_IN); break;
		case 1: c.in_addr = NOWHERE + (random() & ~63); break;
		default: break;
		}
		switch (random() % 3) {
		case 0: c.out_addr = pba(P_OUT); c.out_len %= PG; break;
		case 1: c.out_addr = 0; c.out_len = 0; break;
		default: c.out_addr |= 1ull << 62; break;
		}
		c.in_len %= random() % 2 ? 80 : 0x2000;
		memset(pva(P_IN), (int)random(), PG);
		if (post_raw(&c, &s, &y))
			return failf("entry %d (opcode %#x) never completed", i, c.opcode);
		if (!(rd(OHCA_REG_DEV_STATUS) & OHCA_DEV_STATUS_READY))
			return failf("device left READY after entry %d: %#x", i,
				     rd(OHCA_REG_DEV_STATUS));
		CHECK(s <= OHCA_STATUS_INTERNAL, "status %#x", s);
	}
	return nop_ok();
}

bool t_rdma_random_commands(void)
{
	/* Random but well-formed-length RDMA commands against live objects. */
	static const uint16_t ops[] = { OHCA_CMD_CREATE_MR, OHCA_CMD_DESTROY_MR,
		OHCA_CMD_CREATE_CQ, OHCA_CMD_DESTROY_CQ, OHCA_CMD_CREATE_QP,
		OHCA_CMD_MODIFY_QP, OHCA_CMD_QUERY_QP, OHCA_CMD_DESTROY_QP,
		OHCA_CMD_DESTROY_PD, OHCA_CMD_CREATE_EQ, OHCA_CMD_DESTROY_EQ };
	static const uint16_t lens[] = { 48, 8, 32, 8, 64, 80, 8, 8, 8, 16, 8 };
	uint8_t in[80];

	if (!rdma_setup())
		return false;
	for (int i = 0; i < 2000; i++) {
		int k = random() % 11;

		for (size_t j = 0; j < sizeof(in); j++)
			in[j] = random() % 4 ? random() % 4 : random();
		if (k == 2 || k == 4) {	/* page lists into our pages */
			struct ohca_pbl *p = (struct ohca_pbl *)(in + (k == 2 ? 16 : 32));

			p->addr = pba(P_PBL) + (random() % 4) * 8;
		}
		if (cmd(ops[k], in, lens[k], 80) == 0xfe)
			return failf("command %#x never completed", ops[k]);
		CHECK(rd(OHCA_REG_DEV_STATUS) & OHCA_DEV_STATUS_READY,
		      "device left READY: %#x", rd(OHCA_REG_DEV_STATUS));
	}
	return nop_ok();
}
