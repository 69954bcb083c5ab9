// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ohca_hostile: receive WQs, RWQ indirection tables and RSS QPs: every
 * table filled to the limit QUERY_DEVICE reports and no further, tables
 * naming WQs that do not exist or are gone, destroy order, hostile WQ
 * doorbells; afterwards the device creates them again.
 */
#include "hostile.h"

static uint8_t wq_cmd(uint32_t pd, uint32_t cq)
{
	struct ohca_create_wq_in in = { 0 };

	in.pdn = pd;
	in.cqn = cq;
	in.log_size = 5;	/* 32 x 128 B = one page, shared by all */
	in.log_stride = 7;
	pbl1(&in.pbl, P_PBL, P_RQ);
	return cmd(OHCA_CMD_CREATE_WQ, &in, sizeof(in), 8);
}

static uint8_t tbl_cmd(const uint32_t *wqn, uint8_t log)
{
	static struct ohca_create_rwq_ind_tbl_in in;

	memset(&in, 0, sizeof(in));
	in.log_size = log;
	for (uint32_t i = 0; i < (1u << log) && i < 256; i++)
		in.wqn[i] = wqn[i];
	return cmd(OHCA_CMD_CREATE_RWQ_IND_TBL, &in, sizeof(in), 8);
}

static uint8_t rss_qp_cmd(uint32_t pd, uint32_t tbl)
{
	struct ohca_create_rss_qp_in in = { 0 };

	in.pdn = pd;
	in.ind_tbl = tbl;
	in.fields = OHCA_RSS_SRC_IPV4 | OHCA_RSS_DST_IPV4;
	in.hash_function = OHCA_RSS_HASH_TOEPLITZ;
	memset(in.key, 0x6d, sizeof(in.key));
	return cmd(OHCA_CMD_CREATE_RSS_QP, &in, sizeof(in), 8);
}

bool t_rss_exhaustion(void)
{
	struct ohca_query_device_out *q = pva(P_OUT);
	static uint32_t wq[4096], t[256], tbl[256], qp[1024];
	uint32_t pd, cq, max_wq, max_tbl, nw = 0, nt = 0, nq = 0, gone;
	uint64_t before;

	CHECK(cmd(OHCA_CMD_QUERY_DEVICE, NULL, 0, sizeof(*q)) == 0 &&
	      (q->dev_caps & OHCA_DEV_CAP_RSS) && q->max_wq > 0 &&
	      q->max_wq <= 4096 && q->max_rwq_ind_tbl > 0 &&
	      q->max_rwq_ind_tbl <= 256 && q->max_rwq_ind_tbl_size == 256,
	      "QUERY_DEVICE: caps %#x max_wq %u tables %u of %u",
	      q->dev_caps, q->max_wq, q->max_rwq_ind_tbl,
	      q->max_rwq_ind_tbl_size);
	max_wq = q->max_wq;
	max_tbl = q->max_rwq_ind_tbl;
	pd = mk_pd();
	cq = mk_cq(0, 0);
	CHECK(pd && cq, "setup");

	/* Bad handles, sizes and reserved bytes change nothing. */
	EXPECT_CMD(wq_cmd(0xdead, cq), OHCA_STATUS_BAD_HANDLE, 0xdead);
	EXPECT_CMD(wq_cmd(pd, 0xbeef), OHCA_STATUS_BAD_HANDLE, 0xbeef);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_WQ, 0), OHCA_STATUS_BAD_HANDLE, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_WQ, 0xffffffff),
		   OHCA_STATUS_BAD_HANDLE, 0xffffffff);

	/* WQs up to max_wq, then NO_RESOURCES. */
	while (wq_cmd(pd, cq) == OHCA_STATUS_OK) {
		CHECK(nw < max_wq, "no WQ limit");
		wq[nw++] = out_handle();
	}
	CHECK(last_status == OHCA_STATUS_NO_RESOURCES, "WQ status %#x",
	      last_status);
	CHECK(nw == max_wq, "%u WQs, QUERY_DEVICE says %u", nw, max_wq);

	/* Tables: a size past the largest, a WQ that does not exist. */
	EXPECT_CMD(tbl_cmd(wq, 9), OHCA_STATUS_BAD_FIELD, 0);
	gone = wq[--nw];
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_WQ, gone), 0, 0);
	memcpy(t, wq, sizeof(t));
	t[1] = gone;
	EXPECT_CMD(tbl_cmd(t, 1), OHCA_STATUS_BAD_HANDLE, gone);
	/* The largest tables up to max_rwq_ind_tbl, then NO_RESOURCES. */
	while (tbl_cmd(wq, 8) == OHCA_STATUS_OK) {
		CHECK(nt < max_tbl, "no table limit");
		tbl[nt++] = out_handle();
	}
	CHECK(last_status == OHCA_STATUS_NO_RESOURCES, "table status %#x",
	      last_status);
	CHECK(nt == max_tbl, "%u tables, QUERY_DEVICE says %u", nt, max_tbl);
	/* A WQ a table names stays. */
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_WQ, wq[0]), OHCA_STATUS_BAD_STATE,
		   wq[0]);

	/* RSS QPs until the device refuses (its configurations, or QPNs). */
	while (rss_qp_cmd(pd, tbl[0]) == OHCA_STATUS_OK) {
		CHECK(nq < 1024, "no RSS QP limit");
		qp[nq++] = out_handle();
	}
	CHECK(last_status == OHCA_STATUS_NO_RESOURCES && nq > 0,
	      "RSS QP status %#x after %u", last_status, nq);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_RWQ_IND_TBL, tbl[0]),
		   OHCA_STATUS_BAD_STATE, tbl[0]);

	/* Doorbells: unknown WQs, past the ring, backwards: counted. */
	before = db_errors();
	db64(0, OHCA_DB_WQ, 0, 1);
	db64(0, OHCA_DB_WQ, 0xffffffff, 1);
	db64(0, OHCA_DB_WQ, wq[0], 33);
	db64(0, OHCA_DB_WQ, wq[0], 2);
	db64(0, OHCA_DB_WQ, wq[0], 1);
	CHECK(db_errors() == before + 4, "db_errors %llu -> %llu",
	      (unsigned long long)before, (unsigned long long)db_errors());

	/* In order: QPs, tables, WQs; then everything comes again. */
	for (uint32_t i = 0; i < nq; i++)
		EXPECT_CMD(destroy(OHCA_CMD_DESTROY_QP, qp[i]), 0, 0);
	for (uint32_t i = 0; i < nt; i++)
		EXPECT_CMD(destroy(OHCA_CMD_DESTROY_RWQ_IND_TBL, tbl[i]), 0, 0);
	for (uint32_t i = 0; i < nw; i++)
		EXPECT_CMD(destroy(OHCA_CMD_DESTROY_WQ, wq[i]), 0, 0);
	EXPECT_CMD(wq_cmd(pd, cq), 0, 0);
	wq[0] = out_handle();
	EXPECT_CMD(tbl_cmd(wq, 0), 0, 0);
	tbl[0] = out_handle();
	EXPECT_CMD(rss_qp_cmd(pd, tbl[0]), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_QP, out_handle()), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_RWQ_IND_TBL, tbl[0]), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_WQ, wq[0]), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_CQ, cq), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_PD, pd), 0, 0);
	return nop_ok();
}
