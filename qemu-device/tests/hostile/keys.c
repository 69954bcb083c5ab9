// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ohca_hostile: memory keys: PDs, MRs and their page lists, REREG_MR, memory windows
 * and their binding, fast registration.
 */
#include "hostile.h"

bool t_pd_double_destroy(void)
{
	uint32_t pd = mk_pd();

	CHECK(pd, "CREATE_PD");
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_PD, pd), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_PD, pd), OHCA_STATUS_BAD_HANDLE, pd);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_PD, 0xffffffff), OHCA_STATUS_BAD_HANDLE,
		   0xffffffff);
	return true;
}

bool t_pd_destroy_with_live_mr(void)
{
	uint32_t pd = mk_pd(), mr;

	CHECK(pd, "CREATE_PD");
	mr = mk_mr(pd, 0);
	CHECK(mr, "CREATE_MR %#x/%#x", last_status, last_syn);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_PD, pd), OHCA_STATUS_BAD_STATE, pd);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_MR, mr), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_PD, pd), 0, 0);
	return true;
}

bool t_mr_stale_key(void)
{
	uint32_t pd = mk_pd(), mr, mr2;

	mr = mk_mr(pd, 0);
	CHECK(mr, "CREATE_MR");
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_MR, mr), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_MR, mr), OHCA_STATUS_BAD_HANDLE, mr);
	mr2 = mk_mr(pd, 0);
	CHECK(mr2 && mr2 != mr && OHCA_KEY_INDEX(mr2) == OHCA_KEY_INDEX(mr),
	      "reused key %#x after %#x", mr2, mr);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_MR, mr), OHCA_STATUS_BAD_HANDLE, mr);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_MR, mr2), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_PD, pd), 0, 0);
	return true;
}

static bool mr_expect(struct ohca_create_mr_in *in, uint8_t st, uint32_t syn)
{
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_MR, in, sizeof(*in), 8), st, syn);
	return true;
}

#define PBL(f) (offsetof(struct ohca_create_mr_in, pbl) + \
		offsetof(struct ohca_pbl, f))

bool t_mr_fields(void)
{
	uint32_t pd = mk_pd();
	struct ohca_create_mr_in in = { .pdn = pd, .iova = 0, .length = PG };

	pbl1(&in.pbl, P_PBL, P_DATA);
	in.pdn = 0x12345;
	if (!mr_expect(&in, OHCA_STATUS_BAD_HANDLE, 0x12345))
		return false;
	in.pdn = pd;
	in.access = OHCA_ACCESS_REMOTE_WRITE;	/* without LOCAL_WRITE */
	if (!mr_expect(&in, OHCA_STATUS_BAD_FIELD, 4))
		return false;
	in.access = 0;
	in.length = 0;
	if (!mr_expect(&in, OHCA_STATUS_BAD_FIELD, 16))
		return false;
	in.length = ~0ull;
	if (!mr_expect(&in, OHCA_STATUS_BAD_FIELD, 16))
		return false;
	in.length = 100;
	in.iova = ~0ull - 10;
	if (!mr_expect(&in, OHCA_STATUS_BAD_FIELD, 8))
		return false;
	in.iova = 0;
	in.flags = 16;	/* unknown (2 FAST_REG, 4 and 8 ODP) */
	if (!mr_expect(&in, OHCA_STATUS_BAD_FIELD, 24))
		return false;
	in.flags = 0;
	in.rsvd = 1;
	if (!mr_expect(&in, OHCA_STATUS_RESERVED_NONZERO, 28))
		return false;
	return destroy(OHCA_CMD_DESTROY_PD, pd) == 0;
}

bool t_mr_page_list(void)
{
	uint32_t pd = mk_pd();
	struct ohca_create_mr_in in = { .pdn = pd, .length = 3 * PG };
	uint64_t *l = pva(P_PBL);

	pbl1(&in.pbl, P_PBL, P_DATA);
	in.pbl.page_shift = 11;
	if (!mr_expect(&in, OHCA_STATUS_BAD_FIELD, PBL(page_shift)))
		return false;
	in.pbl.page_shift = 31;
	if (!mr_expect(&in, OHCA_STATUS_BAD_FIELD, PBL(page_shift)))
		return false;
	in.pbl.page_shift = 12;
	in.pbl.npages = 1;	/* too short for 3 pages */
	if (!mr_expect(&in, OHCA_STATUS_BAD_FIELD, PBL(npages)))
		return false;
	in.pbl.npages = 513;
	if (!mr_expect(&in, OHCA_STATUS_BAD_FIELD, PBL(npages)))
		return false;
	in.pbl.npages = 3;
	in.pbl.levels = 3;
	if (!mr_expect(&in, OHCA_STATUS_BAD_FIELD, PBL(levels)))
		return false;
	in.pbl.levels = 1;
	in.pbl.addr = NOWHERE;
	if (!mr_expect(&in, OHCA_STATUS_BAD_ADDR, 0))
		return false;
	in.pbl.addr = bar0_bus;
	if (!mr_expect(&in, OHCA_STATUS_BAD_ADDR, 0))
		return false;
	in.pbl.addr = pba(P_PBL) + 4;
	if (!mr_expect(&in, OHCA_STATUS_BAD_FIELD, PBL(addr)))
		return false;
	in.pbl.addr = pba(P_PBL);
	l[0] = pba(P_DATA);
	l[1] = pba(P_DATA) + 8;	/* misaligned page */
	l[2] = pba(P_DATA);
	if (!mr_expect(&in, OHCA_STATUS_BAD_FIELD, PBL(addr)))
		return false;
	return destroy(OHCA_CMD_DESTROY_PD, pd) == 0;
}

bool t_mr_huge_two_level(void)
{
	/* The largest list: 2^18 pages of 2 MiB for a 512 GiB region, all
	 * outside RAM (the device only records them). The same list for a
	 * 2 GiB region lists more pages than it covers and is refused, 512
	 * times: it would keep 2 MiB of host memory each. Then one with an L1
	 * entry of 0, and one the device cannot read. */
	uint32_t pd = mk_pd(), key;
	struct ohca_create_mr_in in = { .pdn = pd, .length = 1ull << 39 };
	uint64_t *l1 = pva(P_PBL), *l2 = pva(P_PBL2);

	for (int i = 0; i < 512; i++) {
		l1[i] = pba(P_PBL2);
		l2[i] = (uint64_t)(i + 1) << 40;
	}
	in.pbl = (struct ohca_pbl){ pba(P_PBL), OHCA_PBL_MAX_PAGES, 21, 2, 0 };
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_MR, &in, sizeof(in), 8), 0, 0);
	key = out_handle();
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_MR, key), 0, 0);
	in.length = 1ull << 31;
	for (int i = 0; i < 512; i++)
		if (!mr_expect(&in, OHCA_STATUS_BAD_FIELD, PBL(npages)))
			return false;
	in.length = 1ull << 39;
	l1[100] = 0;
	if (!mr_expect(&in, OHCA_STATUS_BAD_FIELD, PBL(addr)))
		return false;
	l1[100] = NOWHERE;
	if (!mr_expect(&in, OHCA_STATUS_BAD_ADDR, 0))
		return false;
	return destroy(OHCA_CMD_DESTROY_PD, pd) == 0;
}

/* REREG_MR with hostile fields: unknown and missing flags, fields of parts
 * not named, stale keys, a missing PD, bad access and page lists, the
 * physical MR; the MR still destroys cleanly and its PD with it. */
bool t_rereg_mr_fields(void)
{
	uint32_t pd = mk_pd(), pd2 = mk_pd(), mr, phys;
	struct ohca_create_mr_in pin = { .access = OHCA_ACCESS_LOCAL_WRITE,
		.length = 1, .flags = OHCA_MR_F_PHYSICAL };
	struct ohca_rereg_mr_in in;

	CHECK(pd && pd2, "setup");
	mr = mk_mr(pd, OHCA_ACCESS_LOCAL_WRITE);
	CHECK(mr, "mr");
	pin.pdn = pd;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_MR, &pin, 48, 8), 0, 0);
	phys = out_handle();
#define REREG(k, f) do {						\
	memset(&in, 0, sizeof(in));					\
	in.key = (k);							\
	in.flags = (f);							\
} while (0)
	REREG(mr, 0);
	EXPECT_CMD(cmd(OHCA_CMD_REREG_MR, &in, 48, 8), OHCA_STATUS_BAD_FIELD, 4);
	REREG(mr, 0x80000000u);
	EXPECT_CMD(cmd(OHCA_CMD_REREG_MR, &in, 48, 8), OHCA_STATUS_BAD_FIELD, 4);
	REREG(mr, OHCA_REREG_MR_ACCESS);
	in.access = OHCA_ACCESS_LOCAL_WRITE;
	in.pdn = pd2;
	EXPECT_CMD(cmd(OHCA_CMD_REREG_MR, &in, 48, 8), OHCA_STATUS_BAD_FIELD, 8);
	in.pdn = 0;
	in.pbl.npages = 1;
	EXPECT_CMD(cmd(OHCA_CMD_REREG_MR, &in, 48, 8), OHCA_STATUS_BAD_FIELD,
		   32 + offsetof(struct ohca_pbl, npages));
	in.pbl.npages = 0;
	in.access = OHCA_ACCESS_REMOTE_WRITE;	/* without LOCAL_WRITE */
	EXPECT_CMD(cmd(OHCA_CMD_REREG_MR, &in, 48, 8), OHCA_STATUS_BAD_FIELD, 12);
	in.access = 0xffffffffu;
	EXPECT_CMD(cmd(OHCA_CMD_REREG_MR, &in, 48, 8), OHCA_STATUS_BAD_FIELD, 12);
	REREG(mr ^ 0x1, OHCA_REREG_MR_PD);	/* another tag */
	in.pdn = pd2;
	EXPECT_CMD(cmd(OHCA_CMD_REREG_MR, &in, 48, 8), OHCA_STATUS_BAD_HANDLE,
		   mr ^ 0x1);
	REREG(mr, OHCA_REREG_MR_PD);
	in.pdn = 0x999;
	EXPECT_CMD(cmd(OHCA_CMD_REREG_MR, &in, 48, 8), OHCA_STATUS_BAD_HANDLE, 0x999);
	REREG(phys, OHCA_REREG_MR_PD);
	in.pdn = pd2;
	EXPECT_CMD(cmd(OHCA_CMD_REREG_MR, &in, 48, 8), OHCA_STATUS_BAD_STATE, phys);
	REREG(mr, OHCA_REREG_MR_TRANSLATION);
	in.iova = 0x20000;
	in.length = 0;
	pbl1(&in.pbl, P_PBL, P_DATA);
	EXPECT_CMD(cmd(OHCA_CMD_REREG_MR, &in, 48, 8), OHCA_STATUS_BAD_FIELD, 24);
	in.length = ~0ull;
	EXPECT_CMD(cmd(OHCA_CMD_REREG_MR, &in, 48, 8), OHCA_STATUS_BAD_FIELD, 24);
	in.length = PG + 1;	/* beyond the one page */
	EXPECT_CMD(cmd(OHCA_CMD_REREG_MR, &in, 48, 8), OHCA_STATUS_BAD_FIELD,
		   32 + offsetof(struct ohca_pbl, npages));
	in.length = PG;
	in.pbl.addr = NOWHERE;
	EXPECT_CMD(cmd(OHCA_CMD_REREG_MR, &in, 48, 8), OHCA_STATUS_BAD_ADDR, 0);
	/* All three at once, then the PD it left can go, the new one not. */
	pbl1(&in.pbl, P_PBL, P_DATA);
	in.flags = OHCA_REREG_MR_TRANSLATION | OHCA_REREG_MR_PD |
		   OHCA_REREG_MR_ACCESS;
	in.pdn = pd2;
	in.access = OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_READ;
	EXPECT_CMD(cmd(OHCA_CMD_REREG_MR, &in, 48, 8), 0, 0);
	CHECK(out_handle() == mr, "key %#x after rereg, was %#x", out_handle(),
	      mr);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_MR, phys), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_PD, pd), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_PD, pd2), OHCA_STATUS_BAD_STATE, pd2);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_MR, mr), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_PD, pd2), 0, 0);
	return true;
}

/*
 * Fast registration (programming manual section 11): a fast-registration
 * MR of capacity 1 on the QP's PD, then one REG_MR WQE naming it with a
 * new key variant and 'npages' entries of the list at 'list'.
 */
static bool fast_reg_wqe(uint32_t npages, uint64_t list, uint8_t st,
			 uint8_t verr)
{
	struct ohca_create_mr_in in = { .flags = OHCA_MR_F_FAST_REG };
	struct ohca_reg_mr_wqe r = { .wr_id = 0xfa57, .opcode = OHCA_WR_REG_MR,
		.flags = OHCA_WQE_SIGNALED, .page_shift = 12, .iova = 0x10000,
		.length = 64, .access = OHCA_ACCESS_LOCAL_WRITE };
	struct ohca_send_wqe w;
	uint64_t *l = pva(P_PBL);	/* the MR's list, copied at creation */

	if (!rdma_setup())
		return false;
	in.pdn = g_pd;
	in.pbl.npages = 1;
	CHECK(cmd(OHCA_CMD_CREATE_MR, &in, sizeof(in), 8) == OHCA_STATUS_OK,
	      "CREATE_MR fast-reg: %#x/%#x", last_status, last_syn);
	l[0] = pba(P_DATA);
	l[1] = pba(P_DATA);
	r.key = (out_handle() & ~0xffu) | ((out_handle() + 1) & 0xff);
	r.npages = npages;
	r.pbl_addr = list ? list : pba(P_PBL);
	memcpy(&w, &r, sizeof(w));
	return post_wqe(&w, NULL, 0, st, verr);
}

/* Memory windows: ALLOC_MW fields and handles, the max_mw limit, BIND_MW
 * to an MR with and without MW_BIND access, DESTROY_MR refused while a
 * window is bound to it and DEALLOC_MW unbinding it. */
bool t_mw_fields(void)
{
	struct ohca_alloc_mw_in in = { .pdn = 999, .type = OHCA_MW_TYPE_1 };
	uint32_t pd = mk_pd(), h;

	CHECK(pd, "setup");
	EXPECT_CMD(cmd(OHCA_CMD_ALLOC_MW, &in, sizeof(in), 8),
		   OHCA_STATUS_BAD_HANDLE, 999);
	in.pdn = pd;
	in.type = 3;
	EXPECT_CMD(cmd(OHCA_CMD_ALLOC_MW, &in, sizeof(in), 8),
		   OHCA_STATUS_BAD_FIELD, 4);
	in.type = 0;
	EXPECT_CMD(cmd(OHCA_CMD_ALLOC_MW, &in, sizeof(in), 8),
		   OHCA_STATUS_BAD_FIELD, 4);
	in.type = OHCA_MW_TYPE_2;
	in.rsvd[2] = 1;
	EXPECT_CMD(cmd(OHCA_CMD_ALLOC_MW, &in, sizeof(in), 8),
		   OHCA_STATUS_RESERVED_NONZERO, 7);
	in.rsvd[2] = 0;
	EXPECT_CMD(cmd(OHCA_CMD_ALLOC_MW, &in, sizeof(in), 8), 0, 0);
	h = out_handle();
	/* A window's key is no MR, a stale tag no window. */
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_MR, h), OHCA_STATUS_BAD_HANDLE, h);
	EXPECT_CMD(destroy(OHCA_CMD_DEALLOC_MW, h ^ 1), OHCA_STATUS_BAD_HANDLE,
		   h ^ 1);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_PD, pd), OHCA_STATUS_BAD_STATE, pd);
	EXPECT_CMD(destroy(OHCA_CMD_DEALLOC_MW, h), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DEALLOC_MW, h), OHCA_STATUS_BAD_HANDLE, h);
	return destroy(OHCA_CMD_DESTROY_PD, pd) == 0;
}

bool t_mw_exhaustion(void)
{
	struct ohca_alloc_mw_in in = { .type = OHCA_MW_TYPE_1 };
	struct ohca_query_device_out *q = pva(P_OUT);
	uint32_t pd = mk_pd(), n = 0, keys[1100];

	CHECK(pd, "setup");
	CHECK(cmd(OHCA_CMD_QUERY_DEVICE, NULL, 0, sizeof(*q)) == 0 &&
	      (q->dev_caps & OHCA_DEV_CAP_MW) && q->max_mw == 1024,
	      "QUERY_DEVICE: caps %#x max_mw %u", q->dev_caps, q->max_mw);
	in.pdn = pd;
	while (cmd(OHCA_CMD_ALLOC_MW, &in, sizeof(in), 8) == OHCA_STATUS_OK) {
		CHECK(n < 1100, "no window limit");
		keys[n++] = out_handle();
	}
	CHECK(last_status == OHCA_STATUS_NO_RESOURCES, "status %#x", last_status);
	CHECK(n == 1024, "%u windows, QUERY_DEVICE says 1024", n);
	for (uint32_t i = 0; i < n; i++)
		EXPECT_CMD(destroy(OHCA_CMD_DEALLOC_MW, keys[i]), 0, 0);
	EXPECT_CMD(cmd(OHCA_CMD_ALLOC_MW, &in, sizeof(in), 8), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DEALLOC_MW, out_handle()), 0, 0);
	return destroy(OHCA_CMD_DESTROY_PD, pd) == 0;
}

static bool mw_bind_case(uint32_t mr_access, uint8_t st, uint8_t verr)
{
	struct ohca_bind_mw_wqe b = { .wr_id = 0x42, .opcode = OHCA_WR_BIND_MW,
		.flags = OHCA_WQE_SIGNALED, .addr = 0x10000, .length = 64,
		.access = OHCA_ACCESS_REMOTE_WRITE };
	struct ohca_alloc_mw_in in = { .type = OHCA_MW_TYPE_2 };
	struct ohca_send_wqe w;
	uint32_t mr, mw;

	if (!rdma_setup())
		return false;
	mr = mk_mr(g_pd, mr_access);
	CHECK(mr, "CREATE_MR: %#x/%#x", last_status, last_syn);
	in.pdn = g_pd;
	EXPECT_CMD(cmd(OHCA_CMD_ALLOC_MW, &in, sizeof(in), 8), 0, 0);
	mw = out_handle();
	b.mw_key = (mw & ~0xffu) | ((mw + 1) & 0xff);
	b.mr_lkey = mr;
	memcpy(&w, &b, sizeof(w));
	if (!post_wqe(&w, NULL, 0, st, verr))
		return false;
	if (st == OHCA_CQE_SUCCESS)
		EXPECT_CMD(destroy(OHCA_CMD_DESTROY_MR, mr),
			   OHCA_STATUS_BAD_STATE, mr);
	EXPECT_CMD(destroy(OHCA_CMD_DEALLOC_MW, mw), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_MR, mr), 0, 0);
	return true;
}

bool t_mw_bind_ok(void)
{
	return mw_bind_case(OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_MW_BIND,
			    OHCA_CQE_SUCCESS, OHCA_VERR_NONE);
}

bool t_mw_bind_without_mw_bind_access(void)
{
	return mw_bind_case(OHCA_ACCESS_LOCAL_WRITE, OHCA_CQE_MW_BIND_ERR,
			    OHCA_VERR_LKEY_ACCESS);
}

bool t_fast_reg_fields(void)
{
	struct ohca_create_mr_in in = { .flags = OHCA_MR_F_FAST_REG };

	if (!rdma_setup())
		return false;
	in.pdn = g_pd;
	if (!mr_expect(&in, OHCA_STATUS_BAD_FIELD, PBL(npages)))
		return false;
	in.pbl.npages = OHCA_MAX_FAST_REG_PAGES + 1;
	if (!mr_expect(&in, OHCA_STATUS_BAD_FIELD, PBL(npages)))
		return false;
	in.pbl.npages = 1;
	in.access = OHCA_ACCESS_LOCAL_WRITE;
	if (!mr_expect(&in, OHCA_STATUS_BAD_FIELD, 4))
		return false;
	in.access = 0;
	in.pbl.addr = pba(P_PBL);
	if (!mr_expect(&in, OHCA_STATUS_BAD_FIELD, PBL(addr)))
		return false;
	in.pbl.addr = 0;
	in.length = PG;
	if (!mr_expect(&in, OHCA_STATUS_BAD_FIELD, 16))
		return false;
	in.length = 0;
	return mr_expect(&in, OHCA_STATUS_OK, 0);
}

bool t_fast_reg_ok(void)
{
	return fast_reg_wqe(1, 0, OHCA_CQE_SUCCESS, OHCA_VERR_NONE);
}

bool t_fast_reg_past_capacity(void)
{
	return fast_reg_wqe(2, 0, OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_REG_MR);
}

bool t_fast_reg_list_outside_ram(void)
{
	return fast_reg_wqe(1, NOWHERE, OHCA_CQE_LOC_PROT_ERR, OHCA_VERR_DMA);
}

/* BIND_MW's window key lies where a send WQE has imm_data. */
WQE_CASE(t_wqe_bind_mw_bad_key,
	 .w = { .opcode = OHCA_WR_BIND_MW, .imm_data = 0xffffff00 },
	 .status = OHCA_CQE_MW_BIND_ERR, .verr = OHCA_VERR_BAD_LKEY)
/* Reserved words of the bind WQE (rsvd1[0] is the send WQE's swap). */
WQE_CASE(t_wqe_bind_mw_reserved,
	 .w = { .opcode = OHCA_WR_BIND_MW, .swap = 1 },
	 .status = OHCA_CQE_LOC_QP_OP_ERR, .verr = OHCA_VERR_BAD_WQE)
#define BAD_KEY .status = OHCA_CQE_LOC_PROT_ERR, .verr = OHCA_VERR_BAD_LKEY
WQE_CASE(t_wqe_local_inv_bad_key,
	 .w = { .opcode = OHCA_WR_LOCAL_INV, .rkey = 0xffffff00 }, BAD_KEY)
/* REG_MR's key lies where a send WQE has imm_data. */
WQE_CASE(t_wqe_reg_mr_bad_key,
	 .w = { .opcode = OHCA_WR_REG_MR, .imm_data = 0xffffff00 }, BAD_KEY)
#undef BAD_KEY
