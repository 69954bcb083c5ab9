// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ohca_hostile: doorbells and UAR pages: command-queue producer indices, EQ, CQ and
 * Ethernet doorbells that name nothing, UAR pages exhausted, SQ/RQ doorbells
 * rejected, backwards, flooding and random.
 */
#include "hostile.h"

static bool pi_rejected(uint32_t v)
{
	uint32_t before = rd(OHCA_REG_ERR_COUNT), ci = rd(OHCA_REG_CMDQ_CI);

	wr(OHCA_REG_CMDQ_PI, v);
	msleep(20);
	CHECK(rd(OHCA_REG_ERR_COUNT) - before == 1, "PI %#x not counted", v);
	CHECK(rd(OHCA_REG_CMDQ_CI) == ci, "PI %#x moved CI", v);
	return nop_ok();
}

bool t_cmdq_pi_high_bits(void) { return pi_rejected(0x10000 | (cmd_pi + 1)); }
bool t_cmdq_pi_beyond_ring(void) { return pi_rejected((uint16_t)(cmd_pi + (1u << CMDQ_LOG) + 1)); }
bool t_cmdq_pi_backwards(void) { return pi_rejected((uint16_t)(cmd_pi - 1)); }

bool t_eq0_db_bad(void)
{
	uint32_t before = rd(OHCA_REG_ERR_COUNT);

	wr(OHCA_REG_EQ0_DB, (eq_ci & 0xffff) | (1u << 20));
	wr(OHCA_REG_EQ0_DB, (eq_ci + 5) & 0xffff);	/* beyond the producer */
	CHECK(rd(OHCA_REG_ERR_COUNT) - before == 2, "ERR_COUNT +%u",
	      rd(OHCA_REG_ERR_COUNT) - before);
	return nop_ok();
}

bool t_comp_eq_db_missing(void)
{
	uint32_t before = rd(OHCA_REG_ERR_COUNT);

	for (uint32_t n = 1; n < OHCA_MAX_EQ; n++)
		wr(OHCA_REG_EQ_DB(n), OHCA_EQ_DB_ARM | n);
	CHECK(rd(OHCA_REG_ERR_COUNT) - before == OHCA_MAX_EQ - 1, "ERR_COUNT +%u",
	      rd(OHCA_REG_ERR_COUNT) - before);
	return nop_ok();
}

bool t_eth_doorbells_without_ring(void)
{
	uint32_t before = rd(OHCA_REG_ERR_COUNT);

	wr(OHCA_REG_ETH_TX_PI, 1);
	wr(OHCA_REG_ETH_RX_PI, 7);
	wr(OHCA_REG_ETH_IRQ_MASK, 2);
	CHECK(rd(OHCA_REG_ERR_COUNT) - before == 3, "ERR_COUNT +%u",
	      rd(OHCA_REG_ERR_COUNT) - before);
	return nop_ok();
}

bool t_cmd_uar_exhaustion(void)
{
	struct ohca_dealloc_uar_in d = { 0 };
	uint32_t n = 0;

	while (cmd(OHCA_CMD_ALLOC_UAR, NULL, 0, 8) == OHCA_STATUS_OK)
		n++;
	CHECK(last_status == OHCA_STATUS_NO_RESOURCES && n == OHCA_NUM_DB_PAGES - 1,
	      "%u UARs, then status %#x", n, last_status);
	for (d.uar_index = 1; d.uar_index < OHCA_NUM_DB_PAGES; d.uar_index++)
		CHECK(cmd(OHCA_CMD_DEALLOC_UAR, &d, 8, 0) == 0, "dealloc %u",
		      d.uar_index);
	d.uar_index = 0;
	EXPECT_CMD(cmd(OHCA_CMD_DEALLOC_UAR, &d, 8, 0), OHCA_STATUS_BAD_HANDLE, 0);
	d.uar_index = 0xffffffff;
	EXPECT_CMD(cmd(OHCA_CMD_DEALLOC_UAR, &d, 8, 0), OHCA_STATUS_BAD_HANDLE,
		   0xffffffff);
	d.uar_index = 5;
	EXPECT_CMD(cmd(OHCA_CMD_DEALLOC_UAR, &d, 8, 0), OHCA_STATUS_BAD_HANDLE, 5);
	return true;
}

bool t_db_rejected(void)
{
	uint64_t before;

	if (!rdma_setup())
		return false;
	before = db_errors();
	db64(0, OHCA_DB_SQ, 999, 1);		/* no such QP */
	db64(0, OHCA_DB_SQ, g_qp, 33);		/* beyond the ring */
	db64(7, OHCA_DB_SQ, g_qp, 1);		/* page not allocated */
	db64(0, 0x18, g_qp, 1);			/* no such doorbell */
	db64(0, OHCA_DB_CQ, g_cq, 1u << 25);	/* bits 29..24 */
	db64(0, OHCA_DB_CQ, 12345, 0);		/* no such CQ */
	*(volatile uint32_t *)(bar2 + OHCA_DB_SQ) = g_qp;	/* 32-bit store */
	*(volatile uint8_t *)(bar2 + 3) = 1;
	__sync_synchronize();
	CHECK(db_errors() - before == 8, "db_errors +%llu, want +8",
	      (unsigned long long)(db_errors() - before));
	CHECK(*(volatile uint64_t *)bar2 == 0, "doorbell page reads non-zero");
	return nop_ok();
}

bool t_db_backwards_and_reset_qp(void)
{
	struct ohca_qp_attr a = { .qp_state = OHCA_QPS_RESET };
	uint64_t before;

	if (!rdma_setup())
		return false;
	/* NOPs on the SQ would fail; post nothing, move PI back instead. */
	before = db_errors();
	db64(0, OHCA_DB_RQ, g_qp, 4);
	db64(0, OHCA_DB_RQ, g_qp, 2);		/* backwards */
	EXPECT_CMD(modify(g_qp, OHCA_QP_STATE, &a), 0, 0);
	db64(0, OHCA_DB_SQ, g_qp, 1);		/* QP in RESET */
	CHECK(db_errors() - before == 2, "db_errors +%llu, want +2",
	      (unsigned long long)(db_errors() - before));
	return nop_ok();
}

bool t_db_flood(void)
{
	uint64_t before;

	if (!rdma_setup())
		return false;
	before = db_errors();
	for (int i = 0; i < 200000; i++) {
		uint32_t page = random() % 4, off = (random() % 4) * 8;

		db64(page, off, (uint32_t)random() % 8, (uint32_t)random());
	}
	CHECK(db_errors() > before, "no doorbell error counted");
	return nop_ok();
}

bool t_db_random_everything(void)
{
	/* Random widths, offsets and values over all of BAR2. */
	for (int i = 0; i < 50000; i++) {
		size_t off = (size_t)random() % OHCA_DB_BAR_SIZE;

		switch (random() % 4) {
		case 0: *(volatile uint8_t *)(bar2 + off) = random(); break;
		case 1: *(volatile uint16_t *)(bar2 + (off & ~1ul)) = random(); break;
		case 2: *(volatile uint32_t *)(bar2 + (off & ~3ul)) = random(); break;
		default:
			*(volatile uint64_t *)(bar2 + (off & ~7ul)) =
				((uint64_t)random() << 32) | random();
		}
	}
	__sync_synchronize();
	return nop_ok();
}
