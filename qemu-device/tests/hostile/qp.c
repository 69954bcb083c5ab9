// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ohca_hostile: QPs and WQEs: CREATE_QP/MODIFY_QP fields, multicast, QPs up to max_qp,
 * use after destroy, malformed send WQEs, UC QPs, flush, an SQ outside RAM.
 */
#include "hostile.h"

bool t_destroy_in_use(void)
{
	struct ohca_create_eq_in eq = { .base = pba(P_SCRATCH), .log_size = 4,
		.msix_vector = 2 };
	uint32_t eqn, uar, pd, cq, qp;
	struct ohca_dealloc_uar_in du;

	EXPECT_CMD(cmd(OHCA_CMD_CREATE_EQ, &eq, 16, 8), 0, 0);
	eqn = out_handle();
	EXPECT_CMD(cmd(OHCA_CMD_ALLOC_UAR, NULL, 0, 8), 0, 0);
	uar = out_handle();
	pd = mk_pd();
	cq = mk_cq(eqn, uar);
	CHECK(cq, "CREATE_CQ %#x/%#x", last_status, last_syn);
	qp = mk_qp(pd, cq);
	CHECK(qp, "CREATE_QP %#x/%#x", last_status, last_syn);
	du.uar_index = uar;
	du.rsvd = 0;
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_CQ, cq), OHCA_STATUS_BAD_STATE, cq);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_PD, pd), OHCA_STATUS_BAD_STATE, pd);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_EQ, eqn), OHCA_STATUS_BAD_STATE, eqn);
	EXPECT_CMD(cmd(OHCA_CMD_DEALLOC_UAR, &du, 8, 0), OHCA_STATUS_BAD_STATE, uar);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_QP, qp), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_QP, qp), OHCA_STATUS_BAD_HANDLE, qp);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_CQ, cq), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_EQ, eqn), 0, 0);
	EXPECT_CMD(cmd(OHCA_CMD_DEALLOC_UAR, &du, 8, 0), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_PD, pd), 0, 0);
	return true;
}

bool t_qp_fields(void)
{
	uint32_t pd = mk_pd(), cq = mk_cq(0, 0);
	struct ohca_create_qp_in in;

	CHECK(pd && cq, "setup");
#define QP_BAD(field, val, st, syn) do {				\
	qp_in(&in, pd, cq);						\
	in.field = (val);						\
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_QP, &in, 64, 8), st, syn);	\
} while (0)
	QP_BAD(type, 7, OHCA_STATUS_BAD_FIELD, 0);	/* 3 UC, 4/5 XRC, 6 raw */
	QP_BAD(sq_log_size, 13, OHCA_STATUS_BAD_FIELD, 1);
	QP_BAD(rq_log_size, 0xff, OHCA_STATUS_BAD_FIELD, 2);
	QP_BAD(sq_log_stride, 6, OHCA_STATUS_BAD_FIELD, 3);
	QP_BAD(rq_log_stride, 13, OHCA_STATUS_BAD_FIELD, 4);
	QP_BAD(pdn, 999, OHCA_STATUS_BAD_HANDLE, 999);
	QP_BAD(send_cqn, 0, OHCA_STATUS_BAD_HANDLE, 0);
	QP_BAD(recv_cqn, 0xffffffff, OHCA_STATUS_BAD_HANDLE, 0xffffffff);
	QP_BAD(uar_index, 256, OHCA_STATUS_BAD_FIELD, 20);
	QP_BAD(max_inline, 65, OHCA_STATUS_BAD_FIELD, 24);
	QP_BAD(sq_pbl.addr, NOWHERE, OHCA_STATUS_BAD_ADDR, 0);
	QP_BAD(sq_log_size, 6, OHCA_STATUS_BAD_FIELD, 32 + 8);
	return destroy(OHCA_CMD_DESTROY_CQ, cq) == 0 &&
	       destroy(OHCA_CMD_DESTROY_PD, pd) == 0;
}

/* Multicast: ATTACH/DETACH_MCAST fields, only UD QPs, no double attach, the
 * max_mcast_grp bound, and DESTROY_QP leaving every group (the same groups
 * attach again afterwards). */
static uint8_t mcast_cmd(uint16_t op, uint32_t qpn, uint32_t group)
{
	struct ohca_mcast_in in = { .qpn = qpn };

	in.gid[10] = 0xff;
	in.gid[11] = 0xff;
	in.gid[12] = 239;
	in.gid[13] = (uint8_t)(group >> 16);
	in.gid[14] = (uint8_t)(group >> 8);
	in.gid[15] = (uint8_t)group;
	return cmd(op, &in, sizeof(in), 0);
}

bool t_mcast_fields(void)
{
	uint32_t pd = mk_pd(), cq = mk_cq(0, 0), rc = mk_qp(pd, cq), ud, i;
	struct ohca_create_qp_in q;
	struct ohca_mcast_in in = { 0 };

	qp_in(&q, pd, cq);
	q.type = OHCA_QPT_UD;
	q.max_inline = 0;	/* a 128-byte UD WQE has no room for inline data */
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_QP, &q, sizeof(q), 8), 0, 0);
	ud = out_handle();
	EXPECT_CMD(mcast_cmd(OHCA_CMD_ATTACH_MCAST, rc, 1), OHCA_STATUS_BAD_STATE, rc);
	EXPECT_CMD(mcast_cmd(OHCA_CMD_ATTACH_MCAST, 0x777, 1), OHCA_STATUS_BAD_HANDLE, 0x777);
	in.qpn = ud;
	memcpy(in.gid, gid_v4, sizeof(in.gid));	/* unicast */
	EXPECT_CMD(cmd(OHCA_CMD_ATTACH_MCAST, &in, sizeof(in), 0), OHCA_STATUS_BAD_FIELD, 8);
	in.gid[12] = 239;
	in.rsvd = 1;
	EXPECT_CMD(cmd(OHCA_CMD_ATTACH_MCAST, &in, sizeof(in), 0),
		   OHCA_STATUS_RESERVED_NONZERO, 4);
	EXPECT_CMD(cmd(OHCA_CMD_ATTACH_MCAST, &in, 16, 0), OHCA_STATUS_BAD_LEN, sizeof(in));
	EXPECT_CMD(mcast_cmd(OHCA_CMD_DETACH_MCAST, ud, 1), OHCA_STATUS_BAD_FIELD, 8);
	EXPECT_CMD(mcast_cmd(OHCA_CMD_ATTACH_MCAST, ud, 1), 0, 0);
	EXPECT_CMD(mcast_cmd(OHCA_CMD_ATTACH_MCAST, ud, 1), OHCA_STATUS_BAD_STATE, ud);
	EXPECT_CMD(mcast_cmd(OHCA_CMD_DETACH_MCAST, ud, 1), 0, 0);
	/* The group bound, then the QP's destruction frees every group. */
	for (i = 0; i < 256; i++)
		EXPECT_CMD(mcast_cmd(OHCA_CMD_ATTACH_MCAST, ud, i), 0, 0);
	EXPECT_CMD(mcast_cmd(OHCA_CMD_ATTACH_MCAST, ud, 256), OHCA_STATUS_NO_RESOURCES, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_QP, ud), 0, 0);
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_QP, &q, sizeof(q), 8), 0, 0);
	ud = out_handle();
	for (i = 0; i < 256; i++)
		EXPECT_CMD(mcast_cmd(OHCA_CMD_ATTACH_MCAST, ud, i + 1000), 0, 0);
	return destroy(OHCA_CMD_DESTROY_QP, ud) == 0 &&
	       destroy(OHCA_CMD_DESTROY_QP, rc) == 0 &&
	       destroy(OHCA_CMD_DESTROY_CQ, cq) == 0 &&
	       destroy(OHCA_CMD_DESTROY_PD, pd) == 0;
}

/*
 * QPs up to QUERY_DEVICE's max_qp (65536 by default: EQ 0's size does not
 * limit them), NO_RESOURCES past it, all destroyed and one created again;
 * 32 commands per doorbell. The test harness checks QEMU's memory around
 * it (test_hostile.py).
 */
bool t_qp_exhaustion(void)
{
	struct ohca_query_device_out *d = pva(P_OUT);
	struct ohca_create_qp_in in;
	uint32_t pd = mk_pd(), cq = mk_cq(0, 0), max_qp, n = 0, *qpn;
	uint8_t st[32] = { 0 };
	bool ok = true, full = false;

	CHECK(pd && cq, "setup");
	EXPECT_CMD(cmd(OHCA_CMD_QUERY_DEVICE, NULL, 0, sizeof(*d)), 0, 0);
	max_qp = d->max_qp;
	CHECK(max_qp >= 1 && max_qp <= 65536, "max_qp %u", max_qp);
	qpn = calloc(max_qp + 32, sizeof(*qpn));
	CHECK(qpn, "calloc");
	qp_in(&in, pd, cq);
	while (ok && !full && n <= max_qp) {
		ok = cmd_batch(OHCA_CMD_CREATE_QP, &in, sizeof(in), NULL, 32, st);
		for (unsigned int i = 0; ok && i < 32; i++) {
			if (st[i] == OHCA_STATUS_OK && !full)
				qpn[n++] = ((struct ohca_create_out *)pva(P_OUT))[i].handle;
			else if (st[i] == OHCA_STATUS_NO_RESOURCES)
				full = true;
			else
				ok = failf("CREATE_QP %u: status %#x", n, st[i]);
		}
	}
	printf("qp_exhaustion: %u QPs of max_qp %u, then %s\n", n, max_qp,
	       full ? "NO_RESOURCES" : "no refusal");
	if (ok && (n != max_qp || !full))
		ok = failf("%u QPs created, max_qp %u", n, max_qp);
	while (n) {
		unsigned int k = n < 32 ? n : 32;

		n -= k;
		if (!cmd_batch(OHCA_CMD_DESTROY_QP, NULL, 0, qpn + n, k, st))
			ok = failf("DESTROY_QP: no completion");
		for (unsigned int i = 0; i < k; i++)
			if (st[i] != OHCA_STATUS_OK)
				ok = failf("destroy QP %#x: status %#x",
					   qpn[n + i], st[i]);
	}
	free(qpn);
	if (!ok)
		return false;	/* fail_msg says why */
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_QP, &in, sizeof(in), 8), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_QP, out_handle()), 0, 0);
	return true;
}

bool t_modify_qp_bad(void)
{
	struct ohca_qp_attr a = { 0 };

	if (!rdma_setup())
		return false;
	a.qp_state = OHCA_QPS_INIT;	/* RTS -> INIT is not in the diagram */
	EXPECT_CMD(modify(g_qp, OHCA_QP_STATE, &a), OHCA_STATUS_BAD_FIELD, 4);
	EXPECT_CMD(modify(g_qp, 1u << 25, &a), OHCA_STATUS_BAD_FIELD, 4);
	a.qp_state = 9;
	EXPECT_CMD(modify(g_qp, OHCA_QP_STATE, &a), OHCA_STATUS_BAD_FIELD, 8);
	a.cur_qp_state = OHCA_QPS_INIT;
	EXPECT_CMD(modify(g_qp, OHCA_QP_CUR_STATE, &a), OHCA_STATUS_BAD_FIELD, 9);
	a.qp_state = OHCA_QPS_RTS;
	a.min_rnr_timer = 32;
	EXPECT_CMD(modify(g_qp, OHCA_QP_STATE | OHCA_QP_MIN_RNR_TIMER, &a),
		   OHCA_STATUS_BAD_FIELD, 8 + 6);
	EXPECT_CMD(modify(0x777, OHCA_QP_STATE, &a), OHCA_STATUS_BAD_HANDLE, 0x777);
	return true;
}

bool t_qp_use_after_destroy(void)
{
	struct ohca_handle_in h = { .handle = g_qp };
	struct ohca_qp_attr a = { .qp_state = OHCA_QPS_ERR };
	uint64_t before;

	EXPECT_CMD(cmd(OHCA_CMD_QUERY_QP, &h, 8, 64), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_QP, g_qp), 0, 0);
	EXPECT_CMD(cmd(OHCA_CMD_QUERY_QP, &h, 8, 64), OHCA_STATUS_BAD_HANDLE, g_qp);
	EXPECT_CMD(modify(g_qp, OHCA_QP_STATE, &a), OHCA_STATUS_BAD_HANDLE, g_qp);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_QP, g_qp), OHCA_STATUS_BAD_HANDLE, g_qp);
	before = db_errors();
	db64(0, OHCA_DB_SQ, g_qp, 1);
	db64(0, OHCA_DB_RQ, g_qp, 1);
	CHECK(db_errors() - before == 2, "doorbells of a destroyed QP not counted");
	return true;
}

/* UC QPs: no SRQ, an unknown QP type, the UC column of MODIFY_QP (RC and
 * UD attributes refused), then connected to itself: a READ WQE fails with
 * BAD_WQE. */
bool t_uc_qp(void)
{
	struct ohca_create_qp_in in;
	struct ohca_qp_attr a = { 0 };
	struct ohca_send_wqe w = { .wr_id = 0x77, .opcode = OHCA_WR_RDMA_READ,
				   .flags = OHCA_WQE_SIGNALED };
	uint32_t pd, cq, init_mask, qpn;

	if (!bring_up() || !add_gid0())
		return false;
	pd = mk_pd();
	cq = mk_cq(0, 0);
	CHECK(pd && cq, "setup");
	qp_in(&in, pd, cq);
	in.type = OHCA_QPT_UC;
	in.srqn = 1;
	in.rq_log_size = 0;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_QP, &in, sizeof(in), 8),
		   OHCA_STATUS_BAD_FIELD, offsetof(struct ohca_create_qp_in, srqn));
	qp_in(&in, pd, cq);
	in.type = OHCA_QPT_RAW_ETH + 1;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_QP, &in, sizeof(in), 8),
		   OHCA_STATUS_BAD_FIELD, offsetof(struct ohca_create_qp_in, type));
	in.type = OHCA_QPT_UC;
	memset(pva(P_SQ), 0, PG);
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_QP, &in, sizeof(in), 8), 0, 0);
	qpn = out_handle();
	init_mask = OHCA_QP_STATE | OHCA_QP_PKEY_INDEX | OHCA_QP_PORT |
		 OHCA_QP_ACCESS_FLAGS;
	a.qp_state = OHCA_QPS_INIT;
	EXPECT_CMD(modify(qpn, init_mask | OHCA_QP_QKEY, &a), OHCA_STATUS_BAD_FIELD,
		   offsetof(struct ohca_modify_qp_in, attr_mask));
	EXPECT_CMD(modify(qpn, init_mask, &a), 0, 0);
	a.qp_state = OHCA_QPS_RTR;
	a.path_mtu = 3;
	a.dest_qpn = qpn;
	memcpy(a.av.dgid, gid_v4, 16);
	memcpy(a.av.dmac, "\x02\0\0\0\x99\x01", 6);
	a.av.vlan_id = 0xffff;
	a.av.network_type = OHCA_NET_IPV4;
	EXPECT_CMD(modify(qpn, OHCA_QP_STATE | OHCA_QP_AV | OHCA_QP_PATH_MTU |
			  OHCA_QP_DEST_QPN | OHCA_QP_RQ_PSN |
			  OHCA_QP_MAX_DEST_RD_ATOMIC, &a),
		   OHCA_STATUS_BAD_FIELD,
		   offsetof(struct ohca_modify_qp_in, attr_mask));
	EXPECT_CMD(modify(qpn, OHCA_QP_STATE | OHCA_QP_AV | OHCA_QP_PATH_MTU |
			  OHCA_QP_DEST_QPN | OHCA_QP_RQ_PSN, &a), 0, 0);
	a.qp_state = OHCA_QPS_RTS;
	EXPECT_CMD(modify(qpn, OHCA_QP_STATE | OHCA_QP_SQ_PSN | OHCA_QP_TIMEOUT,
			  &a), OHCA_STATUS_BAD_FIELD,
		   offsetof(struct ohca_modify_qp_in, attr_mask));
	EXPECT_CMD(modify(qpn, OHCA_QP_STATE | OHCA_QP_SQ_PSN, &a), 0, 0);
	/* READ is not a UC operation: the WQE fails, the QP goes to ERR. */
	g_qp = qpn;
	return post_wqe(&w, NULL, 0, OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_WQE);
}

bool t_wqe_then_flush(void)
{
	/* After a failed WQE the QP is in ERR: the next WQE is flushed. */
	struct ohca_send_wqe w = { .opcode = 0x77, .wr_id = 1,
		.flags = OHCA_WQE_SIGNALED };
	struct ohca_cqe *cqe = pva(P_CQ);
	uint8_t *sq = pva(P_SQ);

	if (!rdma_setup())
		return false;
	memcpy(sq, &w, sizeof(w));
	w.opcode = OHCA_WR_SEND;
	w.wr_id = 2;
	memcpy(sq + 128, &w, sizeof(w));
	__sync_synchronize();
	db64(0, OHCA_DB_SQ, g_qp, 2);
	for (int i = 0; i < 3000 && !(cqe[1].owner & 1); i++)
		msleep(1);
	CHECK(cqe[0].status == OHCA_CQE_LOC_QP_OP_ERR && cqe[0].wr_id == 1,
	      "first CQE %u", cqe[0].status);
	CHECK((cqe[1].owner & 1) && cqe[1].status == OHCA_CQE_WR_FLUSH_ERR &&
	      cqe[1].wr_id == 2, "second CQE status %u owner %u", cqe[1].status,
	      cqe[1].owner);
	return nop_ok();
}

/*
 * An MR whose page is MMIO another device owns (the I/O APIC's registers,
 * harmless to read): a SEND gathering from it fails with LOC_PROT_ERR /
 * DMA. The device reaches guest RAM only: a doorbell's run holds the
 * engine lock without the BQL, which an MMIO access would need (before
 * 2026-12-06 the SEND read the I/O APIC and waited for a receive WQE).
 */
bool t_wqe_sge_on_mmio(void)
{
	struct ohca_create_mr_in in = { .access = OHCA_ACCESS_LOCAL_WRITE,
		.iova = 0x10000, .length = PG };
	struct ohca_send_wqe w = { .wr_id = 0x5e9d, .opcode = OHCA_WR_SEND,
		.flags = OHCA_WQE_SIGNALED, .num_sge = 1 };
	struct ohca_sge sg = { 0x10000, 64, 0 };
	uint64_t *l = pva(P_PBL);

	/* (page lists are read when the object is made: P_PBL is free) */
	if (!rdma_setup())
		return false;
	in.pdn = g_pd;
	in.pbl.addr = pba(P_PBL);
	in.pbl.npages = 1;
	in.pbl.page_shift = 12;
	in.pbl.levels = 1;
	l[0] = IOAPIC_MMIO;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_MR, &in, sizeof(in), 8), 0, 0);
	sg.lkey = out_handle();
	return post_wqe(&w, &sg, 1, OHCA_CQE_LOC_PROT_ERR, OHCA_VERR_DMA);
}

bool t_sq_ring_outside_ram(void)
{
	/* The SQ page list names memory that does not exist: the WQE cannot
	 * be read -> LOC_QP_OP_ERR / DMA and QP_EVENT FATAL on EQ 0. */
	uint64_t *l = pva(P_SCRATCH);
	struct ohca_cqe *cqe = pva(P_CQ);

	if (!rdma_setup())
		return false;
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_QP, g_qp), 0, 0);
	{
		struct ohca_create_qp_in in;

		qp_in(&in, g_pd, g_cq);
		l[0] = NOWHERE;
		EXPECT_CMD(cmd(OHCA_CMD_CREATE_QP, &in, 64, 8), 0, 0);
		g_qp = out_handle();
	}
	if (!qp_to_rts(g_qp))
		return false;
	db64(0, OHCA_DB_SQ, g_qp, 1);
	for (int i = 0; i < 3000 && !(cqe[0].owner & 1); i++)
		msleep(1);
	CHECK((cqe[0].owner & 1) && cqe[0].status == OHCA_CQE_LOC_QP_OP_ERR &&
	      cqe[0].vendor_err == OHCA_VERR_DMA, "CQE status %u verr %u owner %u",
	      cqe[0].status, cqe[0].vendor_err, cqe[0].owner);
	return nop_ok();
}

#define BAD_WQE .status = OHCA_CQE_LOC_QP_OP_ERR, .verr = OHCA_VERR_BAD_WQE
WQE_CASE(t_wqe_bad_opcode, .w = { .opcode = 0x77 }, BAD_WQE)
WQE_CASE(t_wqe_unknown_flags,
	 .w = { .opcode = OHCA_WR_SEND, .flags = 0x80 }, BAD_WQE)
WQE_CASE(t_wqe_num_sge_huge,
	 .w = { .opcode = OHCA_WR_SEND, .num_sge = 255 }, BAD_WQE)
WQE_CASE(t_wqe_num_sge_beyond_stride,
	 .w = { .opcode = OHCA_WR_SEND, .num_sge = 5 }, BAD_WQE)
WQE_CASE(t_wqe_bad_lkey, .w = { .opcode = OHCA_WR_SEND, .num_sge = 1 },
	 .sg = { { 0x10000, 16, 0xffffff00 } }, .nsg = 1,
	 .status = OHCA_CQE_LOC_PROT_ERR, .verr = OHCA_VERR_BAD_LKEY)
/* Within max_msg_size, but past the end of the MR. */
WQE_CASE(t_wqe_length_overflow,
	 .w = { .opcode = OHCA_WR_SEND, .num_sge = 1 },
	 .sg = { { 0x10000 + PG - 1, 0x7fffffff, 0 } }, .nsg = 1,
	 .own_lkey = true, .status = OHCA_CQE_LOC_PROT_ERR,
	 .verr = OHCA_VERR_LKEY_BOUNDS)
/* Three 4 GiB - 1 segments: more than max_msg_size. */
WQE_CASE(t_wqe_message_too_long,
	 .w = { .opcode = OHCA_WR_SEND, .num_sge = 3 },
	 .sg = { { 0x10000, 0xffffffff, 0 }, { 0x10000, 0xffffffff, 0 },
		 { 0x10000, 0xffffffff, 0 } }, .nsg = 3,
	 .own_lkey = true, .status = OHCA_CQE_LOC_LEN_ERR,
	 .verr = OHCA_VERR_BAD_WQE)
WQE_CASE(t_wqe_sge_address_wraps,
	 .w = { .opcode = OHCA_WR_RDMA_WRITE, .num_sge = 1,
		.remote_addr = 0x10000 },
	 .sg = { { ~0ull - 8, 64, 0 } }, .nsg = 1, .own_lkey = true,
	 .status = OHCA_CQE_LOC_PROT_ERR, .verr = OHCA_VERR_LKEY_BOUNDS)
WQE_CASE(t_wqe_inline_too_long,
	 .w = { .opcode = OHCA_WR_SEND, .flags = OHCA_WQE_INLINE,
		.inline_len = 0xfffffff0 }, BAD_WQE)
WQE_CASE(t_wqe_inline_read,
	 .w = { .opcode = OHCA_WR_RDMA_READ, .flags = OHCA_WQE_INLINE,
		.inline_len = 8 }, BAD_WQE)
/* ATOMIC WRITE carries exactly 8 bytes: 16 inline, or none at all. */
WQE_CASE(t_wqe_atomic_write_len,
	 .w = { .opcode = OHCA_WR_ATOMIC_WRITE, .flags = OHCA_WQE_INLINE,
		.inline_len = 16 }, BAD_WQE)
WQE_CASE(t_wqe_atomic_write_no_data,
	 .w = { .opcode = OHCA_WR_ATOMIC_WRITE, .num_sge = 0 }, BAD_WQE)
#undef BAD_WQE
