// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ohca_hostile: CQs and EQs: CREATE_EQ/CREATE_CQ fields and limits, RESIZE_CQ,
 * completion moderation, a CQ ring outside RAM.
 */
#include "hostile.h"

bool t_cmd_eq_fields(void)
{
	struct ohca_create_eq_in in = { .base = pba(P_SCRATCH), .log_size = 4,
		.msix_vector = 1 };

	EXPECT_CMD(cmd(OHCA_CMD_CREATE_EQ, &in, 16, 8), OHCA_STATUS_BAD_FIELD, 9);
	in.msix_vector = OHCA_NUM_MSIX;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_EQ, &in, 16, 8), OHCA_STATUS_BAD_FIELD, 9);
	in.msix_vector = 2;
	in.log_size = 17;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_EQ, &in, 16, 8), OHCA_STATUS_BAD_FIELD, 8);
	in.log_size = 4;
	in.base += 4;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_EQ, &in, 16, 8), OHCA_STATUS_BAD_FIELD, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_EQ, 0), OHCA_STATUS_BAD_HANDLE, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_EQ, 7), OHCA_STATUS_BAD_HANDLE, 7);
	return true;
}

bool t_cmd_eq_exhaustion(void)
{
	struct ohca_create_eq_in in = { .base = NOWHERE, .log_size = 4,
		.msix_vector = 2 };
	uint32_t n = 0;

	while (cmd(OHCA_CMD_CREATE_EQ, &in, 16, 8) == OHCA_STATUS_OK)
		n++;
	CHECK(last_status == OHCA_STATUS_NO_RESOURCES && n == 6,
	      "%u EQs, then %#x", n, last_status);
	for (uint32_t e = 1; e <= n; e++)
		CHECK(destroy(OHCA_CMD_DESTROY_EQ, e) == 0, "destroy EQ %u", e);
	return true;
}

bool t_cq_fields(void)
{
	struct ohca_create_cq_in in = { .eqn = 3, .log_size = 7 };

	pbl1(&in.pbl, P_PBL2, P_CQ);
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_CQ, &in, 32, 8), OHCA_STATUS_BAD_HANDLE, 3);
	in.eqn = 0;
	in.uar_index = 9;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_CQ, &in, 32, 8), OHCA_STATUS_BAD_FIELD, 4);
	in.uar_index = 0;
	in.log_size = OHCA_CQ_LOG_MAX + 1;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_CQ, &in, 32, 8), OHCA_STATUS_BAD_FIELD, 8);
	in.log_size = 8;	/* 8 KiB ring in a one-page list */
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_CQ, &in, 32, 8), OHCA_STATUS_BAD_FIELD,
		   16 + offsetof(struct ohca_pbl, npages));
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_CQ, 1), OHCA_STATUS_BAD_HANDLE, 1);
	return true;
}

/* RESIZE_CQ with hostile fields, onto its own ring and back many times
 * (the page-list budget must not leak), then of a destroyed CQ. */
bool t_resize_cq_fields(void)
{
	struct ohca_resize_cq_in in;
	uint32_t cq = mk_cq(0, 0);
	int i;

	CHECK(cq, "setup");
#define RESIZE_BAD(field, val, st, syn) do {				\
	memset(&in, 0, sizeof(in));					\
	in.cqn = cq;							\
	in.log_size = 7;						\
	pbl1(&in.pbl, P_PBL2, P_CQ);					\
	in.field = (val);						\
	EXPECT_CMD(cmd(OHCA_CMD_RESIZE_CQ, &in, 24, 8), st, syn);	\
} while (0)
	RESIZE_BAD(cqn, 0x999, OHCA_STATUS_BAD_HANDLE, 0x999);
	RESIZE_BAD(rsvd[2], 1, OHCA_STATUS_RESERVED_NONZERO, 7);
	RESIZE_BAD(log_size, 0, OHCA_STATUS_BAD_FIELD, 4);
	RESIZE_BAD(log_size, OHCA_CQ_LOG_MAX + 1, OHCA_STATUS_BAD_FIELD, 4);
	RESIZE_BAD(log_size, 8, OHCA_STATUS_BAD_FIELD,	/* one page: 4 KiB */
		   8 + offsetof(struct ohca_pbl, npages));
	RESIZE_BAD(pbl.addr, NOWHERE, OHCA_STATUS_BAD_ADDR, 0);
	RESIZE_BAD(pbl.levels, 3, OHCA_STATUS_BAD_FIELD,
		   8 + offsetof(struct ohca_pbl, levels));
	/* Empty: nothing to copy, so onto the same page and back works. */
	for (i = 0; i < 300; i++) {
		memset(&in, 0, sizeof(in));
		in.cqn = cq;
		in.log_size = (uint8_t)(1 + i % 7);
		pbl1(&in.pbl, P_PBL2, i % 2 ? P_CQ : P_SCRATCH);
		EXPECT_CMD(cmd(OHCA_CMD_RESIZE_CQ, &in, 24, 8), 0, 0);
		CHECK(out_handle() == 0, "moved %u CQEs of an empty CQ",
		      out_handle());
	}
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_CQ, cq), 0, 0);
	RESIZE_BAD(cqn, cq, OHCA_STATUS_BAD_HANDLE, cq);
	return true;
}

/*
 * MODIFY_CQ (completion event moderation): its fields; an event held at
 * the largest count and period on a CQ destroyed under it; an event the
 * period releases, seen on a completion EQ; a reset with an event held.
 */
bool t_cq_moderation(void)
{
	struct ohca_modify_cq_in in;
	struct ohca_create_eq_in eq = { .base = pba(P_SCRATCH), .log_size = 4,
		.msix_vector = 2 };
	struct ohca_send_wqe w = { .opcode = OHCA_WR_RDMA_WRITE,
		.flags = OHCA_WQE_SIGNALED };
	struct ohca_eqe *eqe = pva(P_SCRATCH);
	struct ohca_cqe *cqe = pva(P_CQ);
	uint8_t *sq = pva(P_SQ);
	uint32_t eqn, cq2;
	int i;

	if (!rdma_setup())
		return false;
#define MODCQ(cqn_, mask_, count_, period_, rsvd_, st, syn) do {	\
	memset(&in, 0, sizeof(in));					\
	in.cqn = (cqn_);						\
	in.mask = (mask_);						\
	in.cq_count = (count_);						\
	in.cq_period = (period_);					\
	in.rsvd = (rsvd_);						\
	EXPECT_CMD(cmd(OHCA_CMD_MODIFY_CQ, &in, sizeof(in), 0), st, syn); \
} while (0)
	MODCQ(0x999, OHCA_MODIFY_CQ_MODERATION, 2, 10, 0,
	      OHCA_STATUS_BAD_HANDLE, 0x999);
	MODCQ(g_cq, 0, 2, 10, 0, OHCA_STATUS_BAD_FIELD,
	      offsetof(struct ohca_modify_cq_in, mask));
	MODCQ(g_cq, OHCA_MODIFY_CQ_MODERATION | 0x80000000u, 2, 10, 0,
	      OHCA_STATUS_BAD_FIELD, offsetof(struct ohca_modify_cq_in, mask));
	/* A count without a period could hold an event for ever. */
	MODCQ(g_cq, OHCA_MODIFY_CQ_MODERATION, 0xffff, 0, 0,
	      OHCA_STATUS_BAD_FIELD,
	      offsetof(struct ohca_modify_cq_in, cq_period));
	MODCQ(g_cq, OHCA_MODIFY_CQ_MODERATION, 2, 10, 1,
	      OHCA_STATUS_RESERVED_NONZERO,
	      offsetof(struct ohca_modify_cq_in, rsvd));
	EXPECT_CMD(cmd(OHCA_CMD_MODIFY_CQ, &in, 12, 0), OHCA_STATUS_BAD_LEN,
		   sizeof(in));

	/* 20 CQEs with the event held at the largest count and period,
	 * then the QP and the CQ go with the event's timer running. */
	MODCQ(g_cq, OHCA_MODIFY_CQ_MODERATION, 0xffff, 0xffff, 0, 0, 0);
	db64(0, OHCA_DB_CQ, g_cq, OHCA_DB_CQ_ARM_NEXT);
	for (i = 0; i < 20; i++) {
		w.wr_id = i;
		memcpy(sq + 128 * i, &w, sizeof(w));
	}
	__sync_synchronize();
	db64(0, OHCA_DB_SQ, g_qp, 20);
	for (i = 0; i < 3000 && !(cqe[19].owner & OHCA_CQE_OWNER); i++)
		msleep(1);
	CHECK(cqe[19].owner & OHCA_CQE_OWNER, "20 WRITEs did not complete");
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_QP, g_qp), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_CQ, g_cq), 0, 0);
	MODCQ(g_cq, OHCA_MODIFY_CQ_MODERATION, 1, 0, 0,
	      OHCA_STATUS_BAD_HANDLE, g_cq);

	/* On a completion EQ: a count never reached, the period (2 ms)
	 * releases the event of the one CQE. */
	memset(eqe, 0, PG);
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_EQ, &eq, sizeof(eq), 8), 0, 0);
	eqn = out_handle();
	cq2 = mk_cq(eqn, 0);
	CHECK(cq2, "CREATE_CQ: %#x/%#x", last_status, last_syn);
	memset(pva(P_SQ), 0, PG);
	memset(pva(P_RQ), 0, PG);
	g_qp = mk_qp(g_pd, cq2);
	CHECK(g_qp && qp_to_rts(g_qp), "QP on the new CQ");
	MODCQ(cq2, OHCA_MODIFY_CQ_MODERATION, 1000, 2000, 0, 0, 0);
	db64(0, OHCA_DB_CQ, cq2, OHCA_DB_CQ_ARM_NEXT);
	w.wr_id = 100;
	memcpy(sq, &w, sizeof(w));
	__sync_synchronize();
	db64(0, OHCA_DB_SQ, g_qp, 1);
	for (i = 0; i < 3000 && !(__atomic_load_n(&eqe->flags, __ATOMIC_ACQUIRE) &
				  OHCA_EQE_OWNER); i++)
		msleep(1);
	CHECK(cqe[0].owner & OHCA_CQE_OWNER, "no CQE");
	CHECK((eqe->flags & OHCA_EQE_OWNER) &&
	      eqe->type == OHCA_EQE_CQ_COMPLETION && eqe->param0 == cq2,
	      "held event: flags %#x type %u param0 %#x", eqe->flags,
	      eqe->type, eqe->param0);
	CHECK(!(eqe[1].flags & OHCA_EQE_OWNER), "a second event");

	/* Held again, then a function reset: nothing survives it. */
	MODCQ(cq2, OHCA_MODIFY_CQ_MODERATION, 0xffff, 0xffff, 0, 0, 0);
	db64(0, OHCA_DB_CQ, cq2, 1 | OHCA_DB_CQ_ARM_NEXT);
	w.wr_id = 101;
	memcpy(sq + 128, &w, sizeof(w));
	__sync_synchronize();
	db64(0, OHCA_DB_SQ, g_qp, 2);
	for (i = 0; i < 3000 && !(cqe[1].owner & OHCA_CQE_OWNER); i++)
		msleep(1);
	CHECK(cqe[1].owner & OHCA_CQE_OWNER, "no second CQE");
	CHECK(dev_reset() && bring_up(), "reset with an event held");
#undef MODCQ
	return nop_ok();
}

bool t_cq_ring_outside_ram(void)
{
	/* A CQ that cannot be written: CQ_ERROR ACCESS on EQ 0, device alive. */
	struct ohca_create_cq_in in = { .log_size = 7 };
	uint64_t *l = pva(P_PBL2);
	struct ohca_send_wqe w = { .opcode = 0x77, .flags = OHCA_WQE_SIGNALED };
	struct ohca_eqe *eq = pva(P_EQ);
	bool seen = false;

	if (!bring_up() || !add_gid0())
		return false;
	g_pd = mk_pd();
	in.pbl = (struct ohca_pbl){ pba(P_PBL2), 1, 12, 1, 0 };
	l[0] = NOWHERE;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_CQ, &in, 32, 8), 0, 0);
	g_cq = out_handle();
	memset(pva(P_SQ), 0, PG);
	g_qp = mk_qp(g_pd, g_cq);
	CHECK(g_qp && qp_to_rts(g_qp), "QP");
	memcpy(pva(P_SQ), &w, sizeof(w));
	__sync_synchronize();
	db64(0, OHCA_DB_SQ, g_qp, 1);
	for (int t = 0; t < 3000 && !seen; t++) {
		for (int i = 0; i < (1 << EQ_LOG); i++)
			if ((eq[i].flags & 1) && eq[i].type == OHCA_EQE_CQ_ERROR &&
			    eq[i].code == OHCA_CQ_ERR_ACCESS && eq[i].param0 == g_cq)
				seen = true;
		msleep(1);
	}
	CHECK(seen, "no CQ_ERROR ACCESS event");
	eq_drain();
	return nop_ok();
}
