// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ohca_hostile: device memory: ALLOC_DM fields and limit, MRs on it, BAR2's window.
 */
#include "hostile.h"

static uint8_t dm_alloc(uint64_t len, uint32_t log_align, uint32_t *h,
			uint64_t *off)
{
	struct ohca_alloc_dm_in in = { .length = len, .log_align = log_align };
	struct ohca_alloc_dm_out *o = pva(P_OUT);
	uint8_t st = cmd(OHCA_CMD_ALLOC_DM, &in, sizeof(in), sizeof(*o));

	if (h)
		*h = o->handle;
	if (off)
		*off = o->bar_offset;
	return st;
}

static uint8_t dm_reg(uint32_t pd, uint32_t h, uint64_t off, uint64_t len,
		      uint32_t access)
{
	struct ohca_reg_dm_mr_in in = { .pdn = pd, .access = access,
		.dm_handle = h, .offset = off, .length = len };

	return cmd(OHCA_CMD_REG_DM_MR, &in, sizeof(in), 8);
}

bool t_dm_fields(void)
{
	struct ohca_alloc_dm_in bad = { .length = 64, .rsvd = 1 };
	uint32_t pd = mk_pd(), h, mr;
	uint64_t off;

	CHECK(pd, "setup");
	EXPECT_CMD(dm_alloc(0, 0, NULL, NULL), OHCA_STATUS_BAD_FIELD, 0);
	EXPECT_CMD(dm_alloc(OHCA_DM_SIZE + 1, 0, NULL, NULL),
		   OHCA_STATUS_BAD_FIELD, 0);
	EXPECT_CMD(dm_alloc(~0ull, 0, NULL, NULL), OHCA_STATUS_BAD_FIELD, 0);
	EXPECT_CMD(dm_alloc(64, OHCA_DM_CHUNK_SHIFT + 1, NULL, NULL),
		   OHCA_STATUS_BAD_FIELD, 8);
	EXPECT_CMD(dm_alloc(64, ~0u, NULL, NULL), OHCA_STATUS_BAD_FIELD, 8);
	EXPECT_CMD(cmd(OHCA_CMD_ALLOC_DM, &bad, sizeof(bad), 16),
		   OHCA_STATUS_RESERVED_NONZERO, 12);
	EXPECT_CMD(dm_alloc(100, 6, &h, &off), 0, 0);
	CHECK(off >= OHCA_DM_BAR_OFFSET && off % PG == 0 &&
	      off + PG <= OHCA_DM_BAR_OFFSET + OHCA_DM_SIZE,
	      "bar_offset %#llx", (unsigned long long)off);

	/* REG_DM_MR: handles, the range ALLOC_DM asked for, the rights. */
	EXPECT_CMD(dm_reg(999, h, 0, 100, 0), OHCA_STATUS_BAD_HANDLE, 999);
	EXPECT_CMD(dm_reg(pd, h ^ 1, 0, 100, 0), OHCA_STATUS_BAD_HANDLE, h ^ 1);
	EXPECT_CMD(dm_reg(pd, h, 0, 104, 0), OHCA_STATUS_BAD_FIELD, 24);
	EXPECT_CMD(dm_reg(pd, h, 101, 0, 0), OHCA_STATUS_BAD_FIELD, 16);
	EXPECT_CMD(dm_reg(pd, h, 4, ~0ull, 0), OHCA_STATUS_BAD_FIELD, 24);
	EXPECT_CMD(dm_reg(pd, h, ~0ull, 8, 0), OHCA_STATUS_BAD_FIELD, 16);
	EXPECT_CMD(dm_reg(pd, h, 0, 100, OHCA_ACCESS_LOCAL_WRITE |
			  OHCA_ACCESS_MW_BIND), OHCA_STATUS_BAD_FIELD, 4);
	EXPECT_CMD(dm_reg(pd, h, 0, 100, OHCA_ACCESS_REMOTE_WRITE),
		   OHCA_STATUS_BAD_FIELD, 4);
	EXPECT_CMD(dm_reg(pd, h, 0, 100, OHCA_ACCESS_LOCAL_WRITE), 0, 0);
	mr = out_handle();

	/* Busy while registered; gone for good once freed. */
	EXPECT_CMD(destroy(OHCA_CMD_FREE_DM, h), OHCA_STATUS_BAD_STATE, h);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_PD, pd), OHCA_STATUS_BAD_STATE, pd);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_MR, mr), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_FREE_DM, h ^ 0x100), OHCA_STATUS_BAD_HANDLE,
		   h ^ 0x100);
	EXPECT_CMD(destroy(OHCA_CMD_FREE_DM, h), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_FREE_DM, h), OHCA_STATUS_BAD_HANDLE, h);
	EXPECT_CMD(dm_reg(pd, h, 0, 4, 0), OHCA_STATUS_BAD_HANDLE, h);
	return destroy(OHCA_CMD_DESTROY_PD, pd) == 0;
}

bool t_dm_exhaustion(void)
{
	struct ohca_query_device_out *q = pva(P_OUT);
	uint32_t n = 0, max, h[OHCA_DM_MAX_ALLOCS + 1], whole;

	CHECK(cmd(OHCA_CMD_QUERY_DEVICE, NULL, 0, sizeof(*q)) == 0 &&
	      (q->dev_caps & OHCA_DEV_CAP_DM) && q->max_dm_size == OHCA_DM_SIZE &&
	      q->max_dm == OHCA_DM_MAX_ALLOCS,
	      "QUERY_DEVICE: caps %#x max_dm %u max_dm_size %llu", q->dev_caps,
	      q->max_dm, (unsigned long long)q->max_dm_size);
	max = q->max_dm;
	while (dm_alloc(1, 0, &h[n], NULL) == OHCA_STATUS_OK) {
		CHECK(n < max, "no allocation limit");
		n++;
	}
	CHECK(last_status == OHCA_STATUS_NO_RESOURCES, "status %#x", last_status);
	CHECK(n == max, "%u allocations, QUERY_DEVICE says %u", n, max);
	for (uint32_t i = 0; i < n; i++)
		EXPECT_CMD(destroy(OHCA_CMD_FREE_DM, h[i]), 0, 0);
	/* All of the memory at once, then not a byte more. */
	EXPECT_CMD(dm_alloc(OHCA_DM_SIZE, OHCA_DM_CHUNK_SHIFT, &whole, NULL), 0, 0);
	EXPECT_CMD(dm_alloc(1, 0, NULL, NULL), OHCA_STATUS_NO_RESOURCES, 0);
	EXPECT_CMD(destroy(OHCA_CMD_FREE_DM, whole), 0, 0);
	return nop_ok();
}

bool t_dm_window(void)
{
	volatile uint8_t *win = bar2 + OHCA_DM_BAR_OFFSET;
	uint32_t errs, h, h2;
	uint64_t off, off2;
	volatile uint8_t *a;

	EXPECT_CMD(dm_alloc(PG, 0, &h, &off), 0, 0);
	a = bar2 + off;
	*(volatile uint64_t *)(a + 8) = 0x1122334455667788ull;
	*(volatile uint32_t *)(a + 16) = 0xaabbccdd;
	CHECK(*(volatile uint64_t *)(a + 8) == 0x1122334455667788ull &&
	      *(volatile uint32_t *)(a + 16) == 0xaabbccdd &&
	      *(volatile uint8_t *)(a + 17) == 0xcc, "window readback");

	errs = rd(OHCA_REG_ERR_COUNT);
	/*
	 * Every free chunk, past the memory, BAR2's end. (A misaligned CPU
	 * access never reaches the device as such: TCG splits it into
	 * aligned ones; the engine tests cover misaligned window accesses.)
	 */
	for (uint64_t c = 0; c < OHCA_DM_SIZE; c += PG) {
		if (OHCA_DM_BAR_OFFSET + c == off)
			continue;
		*(volatile uint64_t *)(win + c) = ~0ull;
		CHECK(*(volatile uint64_t *)(win + c) == 0,
		      "free chunk %#llx readable", (unsigned long long)c);
	}
	*(volatile uint64_t *)(win + OHCA_DM_SIZE) = ~0ull;
	CHECK(*(volatile uint64_t *)(bar2 + OHCA_BAR2_SIZE - 8) == 0,
	      "BAR2's end not 0");
	CHECK(rd(OHCA_REG_ERR_COUNT) - errs >= 2 * (OHCA_DM_SIZE / PG - 1) + 2,
	      "errors %u -> %u", errs, rd(OHCA_REG_ERR_COUNT));
	CHECK(*(volatile uint64_t *)(a + 8) == 0x1122334455667788ull,
	      "a rejected write landed");

	/* Freed: no access; handed out again: zero. */
	EXPECT_CMD(destroy(OHCA_CMD_FREE_DM, h), 0, 0);
	CHECK(*(volatile uint64_t *)(a + 8) == 0, "freed chunk readable");
	EXPECT_CMD(dm_alloc(PG, 0, &h2, &off2), 0, 0);
	CHECK(off2 == off, "first fit: %#llx, was %#llx",
	      (unsigned long long)off2, (unsigned long long)off);
	for (uint32_t i = 0; i < PG; i += 8)
		CHECK(*(volatile uint64_t *)(a + i) == 0, "old data at %u", i);
	EXPECT_CMD(destroy(OHCA_CMD_FREE_DM, h2), 0, 0);
	return nop_ok();
}
