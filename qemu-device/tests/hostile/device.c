// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ohca_hostile: registers and bring-up: identity, read-only and unknown registers, ENABLE with bad
 * configurations, rings outside RAM or on the device's own BARs, EQ 0 full,
 * bus mastering off, a reset in the middle of a command, random register writes.
 */
#include "hostile.h"

bool t_reg_identity(void)
{
	CHECK(rd(OHCA_REG_MAGIC) == OHCA_MAGIC, "magic %#x", rd(OHCA_REG_MAGIC));
	CHECK(rd(OHCA_REG_ABI_VERSION) >> 16 == OHCA_ABI_MAJOR, "abi %#x",
	      rd(OHCA_REG_ABI_VERSION));
	CHECK(rd(OHCA_REG_NUM_DB_PAGES) == OHCA_NUM_DB_PAGES, "db pages");
	return true;
}

bool t_reg_readonly_writes(void)
{
	static const uint32_t ro[] = { OHCA_REG_MAGIC, OHCA_REG_ABI_VERSION,
		OHCA_REG_FW_VERSION, OHCA_REG_CAPS, OHCA_REG_NUM_DB_PAGES,
		OHCA_REG_NUM_MSIX, OHCA_REG_MAX_CMDQ_LOG, OHCA_REG_MAX_EQ_LOG,
		OHCA_REG_DEV_STATUS, OHCA_REG_FATAL_CODE, OHCA_REG_ERR_COUNT,
		OHCA_REG_CMDQ_CI, OHCA_REG_PORT_STATUS };
	uint32_t before = rd(OHCA_REG_ERR_COUNT);

	for (size_t i = 0; i < sizeof(ro) / sizeof(ro[0]); i++)
		wr(ro[i], 0xdeadbeef);
	CHECK(rd(OHCA_REG_MAGIC) == OHCA_MAGIC, "magic changed");
	CHECK(rd(OHCA_REG_ERR_COUNT) - before == sizeof(ro) / sizeof(ro[0]),
	      "ERR_COUNT +%u, want +%zu", rd(OHCA_REG_ERR_COUNT) - before,
	      sizeof(ro) / sizeof(ro[0]));
	return true;
}

bool t_reg_narrow_wide_unaligned(void)
{
	uint32_t before;
	uint8_t b;

	if (!dev_reset())	/* ring registers writable and 0 */
		return failf("reset");
	before = rd(OHCA_REG_ERR_COUNT);
	b = *(volatile uint8_t *)(bar0 + OHCA_REG_MAGIC);
	uint16_t h = *(volatile uint16_t *)(bar0 + OHCA_REG_MAGIC + 2);
	uint64_t q = *(volatile uint64_t *)(bar0 + OHCA_REG_MAGIC);

	*(volatile uint8_t *)(bar0 + OHCA_REG_DEV_CTRL) = OHCA_DEV_CTRL_RESET;
	*(volatile uint16_t *)(bar0 + OHCA_REG_CMDQ_LOG_SIZE) = 3;
	*(volatile uint32_t *)(bar0 + OHCA_REG_CMDQ_BASE_LO + 1) = 0x1000;
	*(volatile uint64_t *)(bar0 + OHCA_REG_CMDQ_BASE_LO) = ~0ull;
	__sync_synchronize();
	CHECK(b == 0 && h == 0 && q == 0, "narrow/wide reads not 0: %#x %#x %#llx",
	      b, h, (unsigned long long)q);
	CHECK(rd(OHCA_REG_CMDQ_LOG_SIZE) == 0 && rd(OHCA_REG_CMDQ_BASE_LO) == 0,
	      "a rejected write landed");
	/* QEMU may split a rejected access into several: at least one count
	 * each. */
	CHECK(rd(OHCA_REG_ERR_COUNT) - before >= 7, "ERR_COUNT +%u, want >= +7",
	      rd(OHCA_REG_ERR_COUNT) - before);
	return true;
}

bool t_reg_unknown_offsets(void)
{
	uint32_t before = rd(OHCA_REG_ERR_COUNT), n = 0;

	for (uint32_t off = 0x0b0; off < 0x400; off += 4, n++)
		wr(off, 0xffffffff);
	for (uint32_t off = OHCA_REG_EQ_DB(OHCA_MAX_EQ); off < OHCA_REGS_BAR_SIZE;
	     off += 4, n++) {
		if (rd(off) != 0)
			return failf("offset %#x reads %#x", off, rd(off));
		n++;
		wr(off, 0x12345678);
	}
	CHECK(rd(OHCA_REG_ERR_COUNT) - before == n, "ERR_COUNT +%u, want +%u",
	      rd(OHCA_REG_ERR_COUNT) - before, n);
	return true;
}

bool t_reg_dev_ctrl_unknown_bits(void)
{
	uint32_t before = rd(OHCA_REG_ERR_COUNT);

	wr(OHCA_REG_DEV_CTRL, 0xfffffffc);
	wr(OHCA_REG_DEV_CTRL, OHCA_DEV_CTRL_ENABLE | 8);
	CHECK(rd(OHCA_REG_ERR_COUNT) - before == 2, "ERR_COUNT +%u",
	      rd(OHCA_REG_ERR_COUNT) - before);
	CHECK(rd(OHCA_REG_DEV_STATUS) == OHCA_DEV_STATUS_READY, "status %#x",
	      rd(OHCA_REG_DEV_STATUS));
	return nop_ok();
}

static bool bad_config(uint64_t eq, unsigned int eql, uint64_t cq,
		       unsigned int cql)
{
	if (!bring_up_with(eq, eql, cq, cql))
		return false;
	return expect_fatal(OHCA_FATAL_BAD_CMDQ_CONFIG);
}

bool t_enable_cmdq_log0(void) { return bad_config(pba(P_EQ), 8, pba(P_CMDQ), 0); }
bool t_enable_cmdq_log11(void) { return bad_config(pba(P_EQ), 8, pba(P_CMDQ), 11); }
bool t_enable_cmdq_log_huge(void) { return bad_config(pba(P_EQ), 8, pba(P_CMDQ), 0xffffffff); }
bool t_enable_cmdq_unaligned(void) { return bad_config(pba(P_EQ), 8, pba(P_CMDQ) + 32, 6); }
bool t_enable_cmdq_base0(void) { return bad_config(pba(P_EQ), 8, 0, 6); }
bool t_enable_eq_base0(void) { return bad_config(0, 8, pba(P_CMDQ), 6); }
bool t_enable_eq_log17(void) { return bad_config(pba(P_EQ), 17, pba(P_CMDQ), 6); }
bool t_enable_eq_unaligned(void) { return bad_config(pba(P_EQ) + 8, 8, pba(P_CMDQ), 6); }

bool t_enable_while_fatal(void)
{
	uint32_t before;

	if (!bad_config(pba(P_EQ), 8, pba(P_CMDQ), 0))
		return false;
	before = rd(OHCA_REG_ERR_COUNT);
	wr(OHCA_REG_DEV_CTRL, OHCA_DEV_CTRL_ENABLE);
	CHECK(rd(OHCA_REG_ERR_COUNT) - before == 1, "ENABLE while FATAL not counted");
	return expect_fatal(OHCA_FATAL_BAD_CMDQ_CONFIG);
}

bool t_config_frozen_when_ready(void)
{
	uint32_t before = rd(OHCA_REG_ERR_COUNT);
	uint32_t base = rd(OHCA_REG_CMDQ_BASE_LO);

	wr(OHCA_REG_CMDQ_BASE_LO, 0x1000);
	wr(OHCA_REG_EQ0_LOG_SIZE, 2);
	CHECK(rd(OHCA_REG_CMDQ_BASE_LO) == base && rd(OHCA_REG_EQ0_LOG_SIZE) == EQ_LOG,
	      "ring registers changed while READY");
	CHECK(rd(OHCA_REG_ERR_COUNT) - before == 2, "ERR_COUNT +%u",
	      rd(OHCA_REG_ERR_COUNT) - before);
	return nop_ok();
}

bool t_cmdq_ring_outside_ram(void)
{
	if (!bring_up_with(pba(P_EQ), EQ_LOG, NOWHERE, CMDQ_LOG))
		return false;
	wr(OHCA_REG_CMDQ_PI, 1);
	return expect_fatal(OHCA_FATAL_CMDQ_DMA);
}

bool t_cmdq_ring_on_own_bar0(void)
{
	if (!bring_up_with(pba(P_EQ), EQ_LOG, bar0_bus, CMDQ_LOG))
		return false;
	wr(OHCA_REG_CMDQ_PI, 1);
	return expect_fatal(OHCA_FATAL_CMDQ_DMA);
}

bool t_eq0_outside_ram(void)
{
	if (!bring_up_with(NOWHERE, EQ_LOG, pba(P_CMDQ), CMDQ_LOG))
		return false;
	CHECK(rd(OHCA_REG_DEV_STATUS) == OHCA_DEV_STATUS_READY, "not READY");
	wr(OHCA_REG_CMDQ_PI, 1);	/* NOP: its CMD_DONE cannot be posted */
	return expect_fatal(OHCA_FATAL_EQ_DMA);
}

bool t_eq0_on_own_bar2(void)
{
	if (!bring_up_with(bar2_bus, EQ_LOG, pba(P_CMDQ), CMDQ_LOG))
		return false;
	wr(OHCA_REG_CMDQ_PI, 1);
	return expect_fatal(OHCA_FATAL_EQ_DMA);
}

/*
 * A full EQ 0 is not fatal (OHCA_DEV_CAP_EQ0_HOLD): of 5 commands with 4
 * entries and none returned, the fifth waits for room for its CMD_DONE
 * and runs when the driver returns entries.
 */
bool t_eq0_full_holds_commands(void)
{
	struct ohca_eqe *eq = pva(P_EQ);

	if (!bring_up_with(pba(P_EQ), 2, pba(P_CMDQ), CMDQ_LOG))
		return false;
	wr(OHCA_REG_CMDQ_PI, 5);	/* zeroed entries: NOPs */
	CHECK(wait_reg(OHCA_REG_CMDQ_CI, 0xffff, 4), "CMDQ_CI %u, want 4",
	      rd(OHCA_REG_CMDQ_CI));
	msleep(50);
	CHECK(rd(OHCA_REG_CMDQ_CI) == 4,
	      "a command ran with no room for its completion");
	CHECK(rd(OHCA_REG_DEV_STATUS) == OHCA_DEV_STATUS_READY,
	      "status %#x fatal %u", rd(OHCA_REG_DEV_STATUS),
	      rd(OHCA_REG_FATAL_CODE));
	wr(OHCA_REG_EQ0_DB, 4);
	CHECK(wait_reg(OHCA_REG_CMDQ_CI, 0xffff, 5), "CMDQ_CI %u, want 5",
	      rd(OHCA_REG_CMDQ_CI));
	CHECK(eq[0].type == OHCA_EQE_CMD_DONE &&
	      !(eq[0].flags & OHCA_EQE_OWNER),
	      "fifth completion: type %u flags %#x", eq[0].type, eq[0].flags);
	return bring_up() && nop_ok();
}

bool t_bus_master_off(void)
{
	char path[400];
	uint16_t cmdreg;
	int fd;
	bool ok;

	snprintf(path, sizeof(path), "%s/config", pci_dir);
	fd = open(path, O_RDWR);
	CHECK(fd >= 0, "open config: %s", strerror(errno));
	CHECK(pread(fd, &cmdreg, 2, 4) == 2, "read command register");
	cmdreg &= ~4;
	CHECK(pwrite(fd, &cmdreg, 2, 4) == 2, "clear bus master");
	wr(OHCA_REG_CMDQ_PI, cmd_pi + 1);
	ok = expect_fatal(OHCA_FATAL_CMDQ_DMA);
	cmdreg |= 4;
	if (pwrite(fd, &cmdreg, 2, 4) != 2)
		ok = failf("restore bus master");
	close(fd);
	return ok;
}

bool t_reset_mid_command(void)
{
	for (int i = 0; i < (1 << CMDQ_LOG); i++) {
		struct ohca_cmd *e = slot_of(i);

		memset(e, 0, sizeof(*e));
		e->opcode = i & 1 ? OHCA_CMD_QUERY_DEVICE : OHCA_CMD_CREATE_PD;
		e->out_len = sizeof(struct ohca_query_device_out);
		e->out_addr = pba(P_OUT);
	}
	wr(OHCA_REG_CMDQ_PI, 1u << CMDQ_LOG);
	wr(OHCA_REG_DEV_CTRL, OHCA_DEV_CTRL_RESET);
	CHECK(rd(OHCA_REG_DEV_STATUS) == OHCA_DEV_STATUS_RESET_DONE,
	      "status %#x after reset", rd(OHCA_REG_DEV_STATUS));
	CHECK(rd(OHCA_REG_CMDQ_CI) == 0 && rd(OHCA_REG_CMDQ_LOG_SIZE) == 0,
	      "registers survived the reset");
	return bring_up() && nop_ok();
}

bool t_reg_random_sweep(void)
{
	/* Random values to every BAR0 offset, three rounds; then the device
	 * must still reset and come up. */
	for (int round = 0; round < 3; round++)
		for (uint32_t off = 0; off < OHCA_REGS_BAR_SIZE; off += 4) {
			uint32_t v = (uint32_t)random();

			if (off == OHCA_REG_DEV_CTRL)
				v &= OHCA_DEV_CTRL_ENABLE;
			wr(off, v);
		}
	CHECK(rd(OHCA_REG_MAGIC) == OHCA_MAGIC, "magic");
	return bring_up() && nop_ok();
}
