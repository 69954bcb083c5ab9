// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ohca_hostile: on-demand paging (programming manual section 19): ODP_MAP/ODP_UNMAP
 * fields and limits, page faults and failed faults.
 */
#include "hostile.h"

static uint8_t odp_map(uint32_t key, uint32_t flags, uint64_t va,
		       uint32_t npages, const uint64_t *pte, uint16_t in_len)
{
	uint8_t buf[sizeof(struct ohca_odp_map_in) + 8 * 8];
	struct ohca_odp_map_in in = { .key = key, .flags = flags, .va = va,
		.npages = npages };

	memcpy(buf, &in, sizeof(in));
	if (pte)
		memcpy(buf + sizeof(in), pte,
		       in_len > sizeof(in) ? in_len - sizeof(in) : 0);
	return cmd(OHCA_CMD_ODP_MAP, buf, in_len, 0);
}

static uint8_t odp_unmap(uint32_t key, uint64_t va, uint64_t npages)
{
	struct ohca_odp_unmap_in in = { .key = key, .va = va,
		.npages = npages };

	return cmd(OHCA_CMD_ODP_UNMAP, &in, sizeof(in), 0);
}

static uint32_t mk_odp_mr(uint32_t pd, uint64_t iova, uint64_t len,
			  uint32_t flags)
{
	struct ohca_create_mr_in in = { .pdn = pd,
		.access = OHCA_ACCESS_LOCAL_WRITE, .iova = iova,
		.length = len, .flags = OHCA_MR_F_ODP | flags };

	in.pbl.page_shift = 12;
	return cmd(OHCA_CMD_CREATE_MR, &in, sizeof(in), 8) ? 0 : out_handle();
}

#define MAP_LEN(n) ((uint16_t)(sizeof(struct ohca_odp_map_in) + 8 * (n)))

bool t_odp_fields(void)
{
	uint64_t pte[2] = { pba(P_DATA) | OHCA_ODP_PTE_VALID, 0 };
	uint32_t pd, mr, odp;

	if (!bring_up())
		return false;
	pd = mk_pd();
	mr = mk_mr(pd, OHCA_ACCESS_LOCAL_WRITE);
	odp = mk_odp_mr(pd, 0x40000000, 2 * PG, 0);
	CHECK(pd && mr && odp, "setup: %#x/%#x", last_status, last_syn);
	/* CREATE_MR: no page list, page size, implicit with a range. */
	{
		struct ohca_create_mr_in in = { .pdn = pd, .iova = 0x1000,
			.length = PG, .flags = OHCA_MR_F_ODP };

		in.pbl.page_shift = 12;
		in.pbl.npages = 1;
		EXPECT_CMD(cmd(OHCA_CMD_CREATE_MR, &in, sizeof(in), 8),
			   OHCA_STATUS_BAD_FIELD,
			   offsetof(struct ohca_create_mr_in, pbl));
		in.pbl.npages = 0;
		in.pbl.page_shift = 40;
		EXPECT_CMD(cmd(OHCA_CMD_CREATE_MR, &in, sizeof(in), 8),
			   OHCA_STATUS_BAD_FIELD,
			   offsetof(struct ohca_create_mr_in, pbl) +
			   offsetof(struct ohca_pbl, page_shift));
		in.pbl.page_shift = 12;
		in.flags = OHCA_MR_F_ODP | OHCA_MR_F_IMPLICIT;
		EXPECT_CMD(cmd(OHCA_CMD_CREATE_MR, &in, sizeof(in), 8),
			   OHCA_STATUS_BAD_FIELD,
			   offsetof(struct ohca_create_mr_in, iova));
		in.flags = OHCA_MR_F_IMPLICIT;
		EXPECT_CMD(cmd(OHCA_CMD_CREATE_MR, &in, sizeof(in), 8),
			   OHCA_STATUS_BAD_FIELD,
			   offsetof(struct ohca_create_mr_in, flags));
	}
	/* ODP_MAP: the key, the range, the length, the entries. */
	EXPECT_CMD(odp_map(mr, 0, 0x10000, 1, pte, MAP_LEN(1)),
		   OHCA_STATUS_BAD_HANDLE, mr);
	EXPECT_CMD(odp_map(0xdead00, 0, 0x40000000, 1, pte, MAP_LEN(1)),
		   OHCA_STATUS_BAD_HANDLE, 0xdead00);
	EXPECT_CMD(odp_map(odp, 0, 0x40000008, 1, pte, MAP_LEN(1)),
		   OHCA_STATUS_BAD_FIELD, offsetof(struct ohca_odp_map_in, va));
	EXPECT_CMD(odp_map(odp, 0, 0x40001000, 2, pte, MAP_LEN(2)),
		   OHCA_STATUS_BAD_FIELD, offsetof(struct ohca_odp_map_in, va));
	EXPECT_CMD(odp_map(odp, 0, 0x3ffff000, 1, pte, MAP_LEN(1)),
		   OHCA_STATUS_BAD_FIELD, offsetof(struct ohca_odp_map_in, va));
	EXPECT_CMD(odp_map(odp, 0, 0x40000000, 0, pte, MAP_LEN(0)),
		   OHCA_STATUS_BAD_FIELD,
		   offsetof(struct ohca_odp_map_in, npages));
	EXPECT_CMD(odp_map(odp, 0, 0x40000000, 2, pte, MAP_LEN(1)),
		   OHCA_STATUS_BAD_LEN, MAP_LEN(2));
	EXPECT_CMD(odp_map(odp, OHCA_ODP_MAP_FAIL, 0x40000000, 1, pte,
			   MAP_LEN(1)), OHCA_STATUS_BAD_LEN, MAP_LEN(0));
	EXPECT_CMD(odp_map(odp, 0x80, 0x40000000, 1, pte, MAP_LEN(1)),
		   OHCA_STATUS_BAD_FIELD, offsetof(struct ohca_odp_map_in, flags));
	pte[0] |= 0x100;
	EXPECT_CMD(odp_map(odp, 0, 0x40000000, 1, pte, MAP_LEN(1)),
		   OHCA_STATUS_BAD_FIELD, sizeof(struct ohca_odp_map_in));
	/* Entries without VALID are skipped; any bus address is taken (it
	 * is checked by DMA when used). */
	pte[0] = 0x100;
	pte[1] = NOWHERE | OHCA_ODP_PTE_VALID | OHCA_ODP_PTE_WRITE;
	EXPECT_CMD(odp_map(odp, 0, 0x40000000, 2, pte, MAP_LEN(2)), 0, 0);
	/* ODP_UNMAP. */
	EXPECT_CMD(odp_unmap(odp, 0x40000000, 0), OHCA_STATUS_BAD_FIELD,
		   offsetof(struct ohca_odp_unmap_in, npages));
	EXPECT_CMD(odp_unmap(odp, 0x40000000, ~0ull), OHCA_STATUS_BAD_FIELD,
		   offsetof(struct ohca_odp_unmap_in, npages));
	EXPECT_CMD(odp_unmap(odp, 0x40000001, 1), OHCA_STATUS_BAD_FIELD,
		   offsetof(struct ohca_odp_unmap_in, va));
	EXPECT_CMD(odp_unmap(mr, 0x10000, 1), OHCA_STATUS_BAD_HANDLE, mr);
	EXPECT_CMD(odp_unmap(odp, 0x40000000, 2), 0, 0);
	/* Gone with its MR. */
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_MR, odp), 0, 0);
	EXPECT_CMD(odp_unmap(odp, 0x40000000, 1), OHCA_STATUS_BAD_HANDLE, odp);
	return nop_ok();
}

bool t_odp_exhaustion(void)
{
	/* Translation chunks: max_odp_chunks of them, NO_RESOURCES past
	 * that; given back by ODP_UNMAP and DESTROY_MR. */
	struct ohca_query_device_out *q = pva(P_OUT);
	uint64_t pte = pba(P_DATA) | OHCA_ODP_PTE_VALID;
	const uint64_t chunk = (uint64_t)OHCA_ODP_CHUNK_PAGES * PG;
	uint32_t pd, odp, max, i;

	if (!bring_up())
		return false;
	CHECK(cmd(OHCA_CMD_QUERY_DEVICE, NULL, 0, sizeof(*q)) == 0,
	      "QUERY_DEVICE %#x", last_status);
	CHECK(q->dev_caps & OHCA_DEV_CAP_ODP, "no ODP");
	max = q->max_odp_chunks;
	CHECK(max > 0 && max < 100000, "max_odp_chunks %u", max);
	pd = mk_pd();
	odp = mk_odp_mr(pd, 0, 0, OHCA_MR_F_IMPLICIT);
	CHECK(pd && odp, "setup: %#x/%#x", last_status, last_syn);
	for (i = 0; i < max; i++)
		EXPECT_CMD(odp_map(odp, 0, i * chunk, 1, &pte, MAP_LEN(1)), 0,
			   0);
	EXPECT_CMD(odp_map(odp, 0, i * chunk, 1, &pte, MAP_LEN(1)),
		   OHCA_STATUS_NO_RESOURCES, 0);
	/* The whole address space at once: walks what is mapped. */
	EXPECT_CMD(odp_unmap(odp, 0, 1ull << 52), 0, 0);
	EXPECT_CMD(odp_map(odp, 0, i * chunk, 1, &pte, MAP_LEN(1)), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_MR, odp), 0, 0);
	return nop_ok();
}

/* The next PAGE_FAULT on EQ 0 at or after index 'from' (the ring holds
 * 2^EQ_LOG entries: these cases post far fewer). */
static const struct ohca_eqe *find_fault(uint32_t from)
{
	const struct ohca_eqe *eq = pva(P_EQ);

	for (uint32_t i = from; i != eq_ci; i++) {
		const struct ohca_eqe *e = &eq[i & ((1u << EQ_LOG) - 1)];

		if (e->type == OHCA_EQE_PAGE_FAULT)
			return e;
	}
	return NULL;
}

bool t_odp_fault(void)
{
	/* A SEND from an implicit ODP MR: one fault event, the WQE waits;
	 * a translation to memory that does not exist fails it as a DMA
	 * error would; a failed fault fails the next with ODP_FAULT. */
	struct ohca_send_wqe w = { .opcode = OHCA_WR_SEND, .wr_id = 7,
		.flags = OHCA_WQE_SIGNALED, .num_sge = 1 };
	struct ohca_cqe *cqe = pva(P_CQ);
	const struct ohca_eqe *f;
	struct ohca_sge sg;
	uint8_t *sq = pva(P_SQ);
	uint64_t pte;
	uint32_t odp, from;

	if (!rdma_setup())
		return false;
	odp = mk_odp_mr(g_pd, 0, 0, OHCA_MR_F_IMPLICIT);
	CHECK(odp, "ODP MR: %#x/%#x", last_status, last_syn);
	sg = (struct ohca_sge){ .addr = 0x50000010, .length = 16,
		.lkey = odp };
	memcpy(sq, &w, sizeof(w));
	memcpy(sq + sizeof(w), &sg, sizeof(sg));
	from = eq_ci;
	__sync_synchronize();
	db64(0, OHCA_DB_SQ, g_qp, 1);
	msleep(50);
	CHECK(!(cqe[0].owner & OHCA_CQE_OWNER), "completed without a page");
	eq_drain();
	f = find_fault(from);
	CHECK(f && f->param0 == odp && f->param1 == 0x50000000 &&
	      f->param2 == 0 && (f->code & OHCA_PF_NPAGES_MASK) == 1 &&
	      !(f->code & OHCA_PF_WRITE), "fault event %p", (const void *)f);
	/* Answered with a page that is not RAM. */
	pte = NOWHERE | OHCA_ODP_PTE_VALID;
	EXPECT_CMD(odp_map(odp, 0, 0x50000000, 1, &pte, MAP_LEN(1)), 0, 0);
	for (int i = 0; i < 3000 && !(cqe[0].owner & OHCA_CQE_OWNER); i++)
		msleep(1);
	CHECK(cqe[0].owner & OHCA_CQE_OWNER, "no completion");
	CHECK(cqe[0].status == OHCA_CQE_LOC_PROT_ERR &&
	      cqe[0].vendor_err == OHCA_VERR_DMA, "CQE %u/%u", cqe[0].status,
	      cqe[0].vendor_err);
	return nop_ok();
}

bool t_odp_fault_fail(void)
{
	struct ohca_send_wqe w = { .opcode = OHCA_WR_SEND, .wr_id = 8,
		.flags = OHCA_WQE_SIGNALED, .num_sge = 1 };
	struct ohca_cqe *cqe = pva(P_CQ);
	const struct ohca_eqe *f;
	struct ohca_sge sg;
	uint8_t *sq = pva(P_SQ);
	uint32_t odp, from;

	if (!rdma_setup())
		return false;
	odp = mk_odp_mr(g_pd, 0x60000000, 1ull << 30, 0);
	CHECK(odp, "ODP MR: %#x/%#x", last_status, last_syn);
	sg = (struct ohca_sge){ .addr = 0x60003000, .length = 8192,
		.lkey = odp };
	memcpy(sq, &w, sizeof(w));
	memcpy(sq + sizeof(w), &sg, sizeof(sg));
	from = eq_ci;
	__sync_synchronize();
	db64(0, OHCA_DB_SQ, g_qp, 1);
	msleep(50);
	eq_drain();
	f = find_fault(from);
	CHECK(f && f->param0 == odp && f->param1 == 0x60003000,
	      "fault event %p", (const void *)f);
	/* Failing a range that covers it, with more pages than one map. */
	EXPECT_CMD(odp_map(odp, OHCA_ODP_MAP_FAIL, 0x60000000, 100000, NULL,
			   MAP_LEN(0)), 0, 0);
	for (int i = 0; i < 3000 && !(cqe[0].owner & OHCA_CQE_OWNER); i++)
		msleep(1);
	CHECK(cqe[0].owner & OHCA_CQE_OWNER, "no completion");
	CHECK(cqe[0].status == OHCA_CQE_LOC_PROT_ERR &&
	      cqe[0].vendor_err == OHCA_VERR_ODP_FAULT, "CQE %u/%u",
	      cqe[0].status, cqe[0].vendor_err);
	return nop_ok();
}
