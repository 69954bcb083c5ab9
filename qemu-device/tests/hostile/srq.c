// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ohca_hostile: SRQs and XRC: CREATE_SRQ fields and limits, XRC domains, XRC SRQs and
 * QPs.
 */
#include "hostile.h"

/* SRQs: every CREATE_SRQ field, MODIFY_SRQ, a QP on an SRQ (no RQ, same PD,
 * RQ doorbells refused), SRQ doorbells out of range, destroy in use, and
 * the max_srq limit with everything freed afterwards. */
static void srq_in(struct ohca_create_srq_in *in, uint32_t pd)
{
	memset(in, 0, sizeof(*in));
	in->pdn = pd;
	in->log_size = 5;	/* 32 x 128 B = one page */
	in->log_stride = 7;
	pbl1(&in->pbl, P_PBL, P_RQ);
}

bool t_srq_fields(void)
{
	uint32_t pd = mk_pd(), pd2 = mk_pd(), cq = mk_cq(0, 0), srq, qp;
	struct ohca_create_srq_in in;
	struct ohca_modify_srq_in m = { 0 };
	struct ohca_create_qp_in q;
	uint64_t before;

	CHECK(pd && pd2 && cq, "setup");
#define SRQ_BAD(field, val, st, syn) do {				\
	srq_in(&in, pd);						\
	in.field = (val);						\
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_SRQ, &in, sizeof(in), 8), st, syn);	\
} while (0)
	SRQ_BAD(pdn, 999, OHCA_STATUS_BAD_HANDLE, 999);
	SRQ_BAD(uar_index, 256, OHCA_STATUS_BAD_FIELD, 4);
	SRQ_BAD(log_size, 0, OHCA_STATUS_BAD_FIELD, 8);
	SRQ_BAD(log_size, 0xff, OHCA_STATUS_BAD_FIELD, 8);
	SRQ_BAD(log_stride, 4, OHCA_STATUS_BAD_FIELD, 9);
	SRQ_BAD(rsvd0, 1, OHCA_STATUS_RESERVED_NONZERO, 11);
	SRQ_BAD(type, 2, OHCA_STATUS_BAD_FIELD, 10);
	SRQ_BAD(xrcdn, 1, OHCA_STATUS_BAD_FIELD, 32);	/* basic: none */
	SRQ_BAD(limit, 32, OHCA_STATUS_BAD_FIELD, 12);
	SRQ_BAD(log_size, 6, OHCA_STATUS_BAD_FIELD, 16 + 8);	/* 2 pages */
	SRQ_BAD(pbl.addr, NOWHERE, OHCA_STATUS_BAD_ADDR, 0);
	srq_in(&in, pd);
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_SRQ, &in, sizeof(in), 8), 0, 0);
	srq = out_handle();
	m.srqn = srq;
	m.attr_mask = OHCA_SRQ_LIMIT;
	m.limit = 32;
	EXPECT_CMD(cmd(OHCA_CMD_MODIFY_SRQ, &m, 16, 0), OHCA_STATUS_BAD_FIELD, 8);
	m.attr_mask = 1u << 0;	/* IBV_SRQ_MAX_WR: no resizing */
	m.limit = 4;
	EXPECT_CMD(cmd(OHCA_CMD_MODIFY_SRQ, &m, 16, 0), OHCA_STATUS_BAD_FIELD, 4);
	m.attr_mask = OHCA_SRQ_LIMIT;
	m.rsvd = 1;
	EXPECT_CMD(cmd(OHCA_CMD_MODIFY_SRQ, &m, 16, 0),
		   OHCA_STATUS_RESERVED_NONZERO, 12);
	m.rsvd = 0;
	m.srqn = 0x999;
	EXPECT_CMD(cmd(OHCA_CMD_MODIFY_SRQ, &m, 16, 0), OHCA_STATUS_BAD_HANDLE, 0x999);
	/* A QP on the SRQ: RQ fields must be zero, same PD, RC only. */
	qp_in(&q, pd, cq);
	q.srqn = srq;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_QP, &q, 64, 8), OHCA_STATUS_BAD_FIELD, 2);
	q.rq_log_size = 0;
	q.rq_log_stride = 0;
	memset(&q.rq_pbl, 0, sizeof(q.rq_pbl));
	q.pdn = pd2;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_QP, &q, 64, 8), OHCA_STATUS_BAD_FIELD, 28);
	q.pdn = pd;
	q.srqn = 0x7777;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_QP, &q, 64, 8), OHCA_STATUS_BAD_HANDLE, 0x7777);
	q.srqn = srq;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_QP, &q, 64, 8), 0, 0);
	qp = out_handle();
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_SRQ, srq), OHCA_STATUS_BAD_STATE, srq);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_PD, pd), OHCA_STATUS_BAD_STATE, pd);
	before = db_errors();
	db64(0, OHCA_DB_RQ, qp, 1);		/* the QP has no RQ */
	db64(0, OHCA_DB_SRQ, srq, 33);		/* beyond the ring */
	db64(0, OHCA_DB_SRQ, srq + 1, 1);	/* no such SRQ */
	db64(0, OHCA_DB_SRQ, srq, 3);
	db64(0, OHCA_DB_SRQ, srq, 2);		/* backwards */
	CHECK(db_errors() == before + 4, "db_errors %llu, want %llu",
	      (unsigned long long)db_errors(), (unsigned long long)before + 4);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_QP, qp), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_SRQ, srq), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_SRQ, srq), OHCA_STATUS_BAD_HANDLE, srq);
	return destroy(OHCA_CMD_DESTROY_CQ, cq) == 0 &&
	       destroy(OHCA_CMD_DESTROY_PD, pd2) == 0 &&
	       destroy(OHCA_CMD_DESTROY_PD, pd) == 0;
}

bool t_srq_exhaustion(void)
{
	uint32_t pd = mk_pd(), n = 0, first = 0, last = 0;
	struct ohca_create_srq_in in;

	CHECK(pd, "setup");
	srq_in(&in, pd);
	while (cmd(OHCA_CMD_CREATE_SRQ, &in, sizeof(in), 8) == OHCA_STATUS_OK) {
		last = out_handle();
		if (!n++)
			first = last;
		CHECK(n <= 4096, "no SRQ limit");
	}
	CHECK(last_status == OHCA_STATUS_NO_RESOURCES, "status %#x", last_status);
	CHECK(n == 256, "%u SRQs, QUERY_DEVICE says 256", n);
	for (uint32_t h = first; h <= last; h++)
		EXPECT_CMD(destroy(OHCA_CMD_DESTROY_SRQ, h), 0, 0);
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_SRQ, &in, sizeof(in), 8), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_SRQ, out_handle()), 0, 0);
	return destroy(OHCA_CMD_DESTROY_PD, pd) == 0;
}

/* XRC domains: QUERY_DEVICE's limit is the device's, DEALLOC_XRCD's
 * handle and reserved word are checked, a domain with an SRQ is busy. */
bool t_xrcd_exhaustion(void)
{
	struct ohca_query_device_out *q = pva(P_OUT);
	struct ohca_handle_in h = { 0 };
	struct ohca_create_srq_in s;
	uint32_t pd = mk_pd(), cq = mk_cq(0, 0), n = 0, d[300], srq;

	CHECK(pd && cq, "setup");
	CHECK(cmd(OHCA_CMD_QUERY_DEVICE, NULL, 0, sizeof(*q)) == 0 &&
	      (q->dev_caps & OHCA_DEV_CAP_XRC) && q->max_xrcd == 256,
	      "QUERY_DEVICE: caps %#x max_xrcd %u", q->dev_caps, q->max_xrcd);
	while (cmd(OHCA_CMD_ALLOC_XRCD, NULL, 0, 8) == OHCA_STATUS_OK) {
		CHECK(n < 300, "no XRC domain limit");
		d[n++] = out_handle();
	}
	CHECK(last_status == OHCA_STATUS_NO_RESOURCES, "status %#x", last_status);
	CHECK(n == 256, "%u domains, QUERY_DEVICE says 256", n);
	EXPECT_CMD(destroy(OHCA_CMD_DEALLOC_XRCD, 0), OHCA_STATUS_BAD_HANDLE, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DEALLOC_XRCD, 257), OHCA_STATUS_BAD_HANDLE,
		   257);
	h.handle = d[0];
	h.rsvd = 1;
	EXPECT_CMD(cmd(OHCA_CMD_DEALLOC_XRCD, &h, sizeof(h), 0),
		   OHCA_STATUS_RESERVED_NONZERO, 4);
	srq_in(&s, pd);
	s.type = OHCA_SRQT_XRC;
	s.xrcdn = d[0];
	s.cqn = cq;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_SRQ, &s, sizeof(s), 8), 0, 0);
	srq = out_handle();
	EXPECT_CMD(destroy(OHCA_CMD_DEALLOC_XRCD, d[0]), OHCA_STATUS_BAD_STATE,
		   d[0]);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_CQ, cq), OHCA_STATUS_BAD_STATE, cq);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_SRQ, srq), 0, 0);
	for (uint32_t i = 0; i < n; i++)
		EXPECT_CMD(destroy(OHCA_CMD_DEALLOC_XRCD, d[i]), 0, 0);
	return destroy(OHCA_CMD_DESTROY_CQ, cq) == 0 &&
	       destroy(OHCA_CMD_DESTROY_PD, pd) == 0;
}

/* The fields of XRC QPs and SRQs: a target has type and domain only, an
 * initiator no receive side, an XRC SRQ a live domain and CQ, and no QP
 * is created on an XRC SRQ. */
bool t_xrc_fields(void)
{
	uint32_t pd = mk_pd(), cq = mk_cq(0, 0), xrcd, srq;
	struct ohca_create_qp_in in;
	struct ohca_create_srq_in s;

	CHECK(pd && cq, "setup");
	EXPECT_CMD(cmd(OHCA_CMD_ALLOC_XRCD, NULL, 0, 8), 0, 0);
	xrcd = out_handle();
	memset(&in, 0, sizeof(in));
	in.type = OHCA_QPT_XRC_TGT;
	in.xrcdn = 99;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_QP, &in, sizeof(in), 8),
		   OHCA_STATUS_BAD_HANDLE, 99);
	in.xrcdn = xrcd;
	in.send_cqn = cq;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_QP, &in, sizeof(in), 8),
		   OHCA_STATUS_BAD_FIELD,
		   offsetof(struct ohca_create_qp_in, send_cqn));
	in.send_cqn = 0;
	in.sq_log_size = 5;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_QP, &in, sizeof(in), 8),
		   OHCA_STATUS_BAD_FIELD,
		   offsetof(struct ohca_create_qp_in, sq_log_size));
	in.sq_log_size = 0;
	in.uar_index = 1;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_QP, &in, sizeof(in), 8),
		   OHCA_STATUS_BAD_FIELD,
		   offsetof(struct ohca_create_qp_in, uar_index));
	qp_in(&in, pd, cq);
	in.type = OHCA_QPT_XRC_INI;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_QP, &in, sizeof(in), 8),
		   OHCA_STATUS_BAD_FIELD,
		   offsetof(struct ohca_create_qp_in, recv_cqn));
	srq_in(&s, pd);
	s.type = OHCA_SRQT_XRC;
	s.xrcdn = xrcd + 1;
	s.cqn = cq;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_SRQ, &s, sizeof(s), 8),
		   OHCA_STATUS_BAD_HANDLE, xrcd + 1);
	s.xrcdn = xrcd;
	s.cqn = 999;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_SRQ, &s, sizeof(s), 8),
		   OHCA_STATUS_BAD_HANDLE, 999);
	s.cqn = cq;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_SRQ, &s, sizeof(s), 8), 0, 0);
	srq = out_handle();
	qp_in(&in, pd, cq);
	in.srqn = srq;
	in.rq_log_size = 0;
	in.rq_log_stride = 0;
	memset(&in.rq_pbl, 0, sizeof(in.rq_pbl));
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_QP, &in, sizeof(in), 8),
		   OHCA_STATUS_BAD_FIELD, offsetof(struct ohca_create_qp_in, srqn));
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_SRQ, srq), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DEALLOC_XRCD, xrcd), 0, 0);
	return destroy(OHCA_CMD_DESTROY_CQ, cq) == 0 &&
	       destroy(OHCA_CMD_DESTROY_PD, pd) == 0;
}

/* An XRC initiator's SEND must name a remote SRQ: xrc_srqn 0 fails the
 * WQE (LOC_QP_OP_ERR, BAD_WQE) and nothing is sent. */
bool t_xrc_ini_no_srqn(void)
{
	struct ohca_send_wqe w = { .wr_id = 0x78, .opcode = OHCA_WR_SEND,
				   .flags = OHCA_WQE_SIGNALED };
	struct ohca_create_qp_in in;

	if (!bring_up() || !add_gid0())
		return false;
	g_pd = mk_pd();
	g_cq = mk_cq(0, 0);
	CHECK(g_pd && g_cq, "setup");
	memset(pva(P_SQ), 0, PG);
	qp_in(&in, g_pd, g_cq);
	in.type = OHCA_QPT_XRC_INI;
	in.recv_cqn = 0;
	in.rq_log_size = 0;
	in.rq_log_stride = 0;
	memset(&in.rq_pbl, 0, sizeof(in.rq_pbl));
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_QP, &in, sizeof(in), 8), 0, 0);
	g_qp = out_handle();
	if (!qp_to_rts(g_qp))
		return false;
	/* RQ doorbells of an initiator are refused (it has none). */
	{
		uint64_t before = db_errors();

		db64(0, OHCA_DB_RQ, g_qp, 1);
		CHECK(db_errors() == before + 1, "RQ doorbell of an XRC initiator");
	}
	return post_wqe(&w, NULL, 0, OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_WQE);
}
