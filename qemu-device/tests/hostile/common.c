// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ohca_hostile: the harness of the cases: registers, bring-up, the command
 * queue and helpers that create RDMA objects and post WQEs.
 */
#include "hostile.h"

uint16_t cmd_pi;
uint32_t eq_ci;
char fail_msg[512];
bool failf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fail_msg, sizeof(fail_msg), fmt, ap);
	va_end(ap);
	return false;
}

/* ---- registers ---------------------------------------------------------- */

uint32_t rd(uint32_t off)
{
	return *(volatile uint32_t *)(bar0 + off);
}

void wr(uint32_t off, uint32_t v)
{
	*(volatile uint32_t *)(bar0 + off) = v;
	__sync_synchronize();
}

void db64(uint32_t page, uint32_t off, uint32_t qn, uint32_t value)
{
	*(volatile uint64_t *)(bar2 + (size_t)page * PG + off) =
		OHCA_DB_VALUE(qn, value);
	__sync_synchronize();
}

void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Polls until (reg & mask) == want, at most 3 s (TCG is slow). */
bool wait_reg(uint32_t off, uint32_t mask, uint32_t want)
{
	for (int i = 0; i < 3200; i++) {
		if ((rd(off) & mask) == want)
			return true;
		/* a command takes microseconds: yield before sleeping */
		if (i < 200)
			sched_yield();
		else
			msleep(1);
	}
	return false;
}

/* ---- bring-up and the command queue ------------------------------------ */

bool dev_reset(void)
{
	wr(OHCA_REG_DEV_CTRL, OHCA_DEV_CTRL_RESET);
	return wait_reg(OHCA_REG_DEV_STATUS, ~0u, OHCA_DEV_STATUS_RESET_DONE);
}

bool bring_up_with(uint64_t eq, unsigned int eq_log, uint64_t cq,
			  unsigned int cq_log)
{
	if (!dev_reset())
		return failf("no RESET_DONE after reset (status %#x)",
			     rd(OHCA_REG_DEV_STATUS));
	memset(pva(P_EQ), 0, PG);
	memset(pva(P_CMDQ), 0, PG);
	cmd_pi = 0;
	eq_ci = 0;
	wr(OHCA_REG_EQ0_BASE_LO, (uint32_t)eq);
	wr(OHCA_REG_EQ0_BASE_HI, (uint32_t)(eq >> 32));
	wr(OHCA_REG_EQ0_LOG_SIZE, eq_log);
	wr(OHCA_REG_CMDQ_BASE_LO, (uint32_t)cq);
	wr(OHCA_REG_CMDQ_BASE_HI, (uint32_t)(cq >> 32));
	wr(OHCA_REG_CMDQ_LOG_SIZE, cq_log);
	wr(OHCA_REG_DEV_CTRL, OHCA_DEV_CTRL_ENABLE);
	return true;
}

bool bring_up(void)
{
	if (!bring_up_with(pba(P_EQ), EQ_LOG, pba(P_CMDQ), CMDQ_LOG))
		return false;
	CHECK(rd(OHCA_REG_DEV_STATUS) == OHCA_DEV_STATUS_READY,
	      "not READY after bring-up: status %#x fatal %u",
	      rd(OHCA_REG_DEV_STATUS), rd(OHCA_REG_FATAL_CODE));
	return true;
}

/* Returns every valid EQ 0 entry to the device. */
void eq_drain(void)
{
	struct ohca_eqe *eq = pva(P_EQ);

	for (;;) {
		struct ohca_eqe *e = &eq[eq_ci & ((1u << EQ_LOG) - 1)];
		bool owner = !((eq_ci >> EQ_LOG) & 1);

		if (!!(__atomic_load_n(&e->flags, __ATOMIC_ACQUIRE) &
		       OHCA_EQE_OWNER) != owner)
			break;
		eq_ci++;
	}
	wr(OHCA_REG_EQ0_DB, eq_ci & OHCA_RING_INDEX_MASK);
}

struct ohca_cmd *slot_of(uint16_t pi)
{
	return (struct ohca_cmd *)pva(P_CMDQ) + (pi & ((1u << CMDQ_LOG) - 1));
}

/* Posts *c as the next entry and waits for it; 0 or -1 (no completion). */
int post_raw(const struct ohca_cmd *c, uint8_t *status, uint32_t *syn)
{
	struct ohca_cmd *e = slot_of(cmd_pi);
	uint16_t want = cmd_pi + 1;

	memcpy(e, c, sizeof(*e));
	e->status = 0xff;
	__sync_synchronize();
	cmd_pi = want;
	wr(OHCA_REG_CMDQ_PI, cmd_pi);
	if (!wait_reg(OHCA_REG_CMDQ_CI, 0xffff, want))
		return -1;
	__sync_synchronize();
	*status = e->status;
	*syn = e->syndrome;
	eq_drain();
	return 0;
}

uint8_t last_status;
uint32_t last_syn;

/* A command with input (inline or from the P_IN mailbox) and output to
 * P_OUT; returns its status (0xfe: no completion). */
uint8_t cmd(uint16_t op, const void *in, uint16_t in_len,
		   uint16_t out_len)
{
	struct ohca_cmd c = { 0 };

	c.opcode = op;
	c.token = 0x5a5a;
	c.in_len = in_len;
	c.out_len = out_len;
	if (out_len)
		c.out_addr = pba(P_OUT);
	if (in_len <= OHCA_CMD_INLINE_MAX) {
		memcpy(c.inline_in, in, in_len);
	} else {
		memcpy(pva(P_IN), in, in_len);
		c.in_addr = pba(P_IN);
	}
	if (post_raw(&c, &last_status, &last_syn))
		return last_status = 0xfe;
	return last_status;
}

uint32_t out_handle(void)
{
	return ((struct ohca_create_out *)pva(P_OUT))->handle;
}

uint64_t db_errors(void)
{
	if (cmd(OHCA_CMD_QUERY_STATS, NULL, 0, 128) != OHCA_STATUS_OK)
		return ~0ull;
	return ((struct ohca_query_stats_out *)pva(P_OUT))->db_errors;
}

bool nop_ok(void)
{
	CHECK(cmd(OHCA_CMD_NOP, NULL, 0, 0) == OHCA_STATUS_OK,
	      "NOP afterwards: status %#x", last_status);
	return true;
}

bool expect_fatal(uint32_t code)
{
	CHECK(wait_reg(OHCA_REG_DEV_STATUS, OHCA_DEV_STATUS_FATAL,
		       OHCA_DEV_STATUS_FATAL),
	      "not FATAL: status %#x", rd(OHCA_REG_DEV_STATUS));
	CHECK(rd(OHCA_REG_FATAL_CODE) == code, "fatal code %u, want %u",
	      rd(OHCA_REG_FATAL_CODE), code);
	CHECK(!(rd(OHCA_REG_DEV_STATUS) & OHCA_DEV_STATUS_READY),
	      "READY and FATAL at once");
	return true;
}

/* ---- RDMA objects -------------------------------------------------------- */

uint32_t mk_pd(void)
{
	return cmd(OHCA_CMD_CREATE_PD, NULL, 0, 8) ? 0 : out_handle();
}

void pbl1(struct ohca_pbl *p, int page_list, int data_page)
{
	uint64_t *l = pva(page_list);

	l[0] = pba(data_page);
	p->addr = pba(page_list);
	p->npages = 1;
	p->page_shift = 12;
	p->levels = 1;
}

uint32_t mk_mr(uint32_t pd, uint32_t access)
{
	struct ohca_create_mr_in in = { .pdn = pd, .access = access,
		.iova = 0x10000, .length = PG };

	pbl1(&in.pbl, P_PBL, P_DATA);
	return cmd(OHCA_CMD_CREATE_MR, &in, sizeof(in), 8) ? 0 : out_handle();
}

uint32_t mk_cq(uint32_t eqn, uint32_t uar)
{
	struct ohca_create_cq_in in = { .eqn = eqn, .uar_index = uar,
		.log_size = 7 };

	memset(pva(P_CQ), 0, PG);
	pbl1(&in.pbl, P_PBL2, P_CQ);
	return cmd(OHCA_CMD_CREATE_CQ, &in, sizeof(in), 8) ? 0 : out_handle();
}

void qp_in(struct ohca_create_qp_in *in, uint32_t pd, uint32_t cq)
{
	uint64_t *l = pva(P_SCRATCH);

	memset(in, 0, sizeof(*in));
	in->sq_log_size = 5;	/* 32 x 128 B = one page */
	in->rq_log_size = 5;
	in->sq_log_stride = 7;
	in->rq_log_stride = 7;
	in->pdn = pd;
	in->send_cqn = cq;
	in->recv_cqn = cq;
	in->max_inline = 64;
	l[0] = pba(P_SQ);
	l[1] = pba(P_RQ);
	in->sq_pbl = (struct ohca_pbl){ pba(P_SCRATCH), 1, 12, 1, 0 };
	in->rq_pbl = (struct ohca_pbl){ pba(P_SCRATCH) + 8, 1, 12, 1, 0 };
}

uint32_t mk_qp(uint32_t pd, uint32_t cq)
{
	struct ohca_create_qp_in in;

	qp_in(&in, pd, cq);
	return cmd(OHCA_CMD_CREATE_QP, &in, sizeof(in), 8) ? 0 : out_handle();
}

uint8_t destroy(uint16_t op, uint32_t h)
{
	struct ohca_handle_in in = { .handle = h };

	return cmd(op, &in, sizeof(in), 0);
}

const uint8_t gid_v4[16] = { [10] = 0xff, [11] = 0xff, 10, 99, 0, 1 };

bool add_gid0(void)
{
	struct ohca_add_gid_in g = { .index = 0, .port = 1,
		.type = OHCA_GID_TYPE_ROCE_V2_IPV4,
		.mac = { 0x02, 0, 0, 0, 0x99, 1 }, .vlan_id = 0xffff };

	memcpy(g.gid, gid_v4, 16);
	CHECK(cmd(OHCA_CMD_ADD_GID, &g, sizeof(g), 0) == 0, "ADD_GID: %#x",
	      last_status);
	return true;
}

uint8_t modify(uint32_t qpn, uint32_t mask, const struct ohca_qp_attr *a)
{
	struct ohca_modify_qp_in in = { .qpn = qpn, .attr_mask = mask };

	if (a)
		in.attr = *a;
	return cmd(OHCA_CMD_MODIFY_QP, &in, sizeof(in), 0);
}

/* RESET -> INIT -> RTR -> RTS, the QP connected to itself (loopback). */
bool qp_to_rts(uint32_t qpn)
{
	struct ohca_qp_attr a = { 0 };

	a.qp_state = OHCA_QPS_INIT;
	CHECK(modify(qpn, OHCA_QP_STATE | OHCA_QP_PKEY_INDEX | OHCA_QP_PORT |
		     OHCA_QP_ACCESS_FLAGS, &a) == 0, "to INIT: %#x/%#x",
	      last_status, last_syn);
	a.qp_state = OHCA_QPS_RTR;
	a.path_mtu = 3;
	a.dest_qpn = qpn;
	a.min_rnr_timer = 1;
	memcpy(a.av.dgid, gid_v4, 16);
	memcpy(a.av.dmac, "\x02\0\0\0\x99\x01", 6);
	a.av.vlan_id = 0xffff;
	a.av.network_type = OHCA_NET_IPV4;
	CHECK(modify(qpn, OHCA_QP_STATE | OHCA_QP_AV | OHCA_QP_PATH_MTU |
		     OHCA_QP_DEST_QPN | OHCA_QP_RQ_PSN |
		     OHCA_QP_MAX_DEST_RD_ATOMIC | OHCA_QP_MIN_RNR_TIMER, &a) == 0,
	      "to RTR: %#x/%#x", last_status, last_syn);
	a.qp_state = OHCA_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 1;
	a.rnr_retry = 1;
	CHECK(modify(qpn, OHCA_QP_STATE | OHCA_QP_SQ_PSN | OHCA_QP_TIMEOUT |
		     OHCA_QP_RETRY_CNT | OHCA_QP_RNR_RETRY |
		     OHCA_QP_MAX_QP_RD_ATOMIC, &a) == 0, "to RTS: %#x/%#x",
	      last_status, last_syn);
	return true;
}

/* A fresh device with GID 0, a PD, an MR on P_DATA, a CQ and an RTS QP on
 * page 0. */
uint32_t g_pd, g_mr, g_cq, g_qp;

bool rdma_setup(void)
{
	if (!bring_up() || !add_gid0())
		return false;
	g_pd = mk_pd();
	CHECK(g_pd, "CREATE_PD: %#x", last_status);
	g_mr = mk_mr(g_pd, OHCA_ACCESS_LOCAL_WRITE);
	CHECK(g_mr, "CREATE_MR: %#x/%#x", last_status, last_syn);
	g_cq = mk_cq(0, 0);
	CHECK(g_cq, "CREATE_CQ: %#x/%#x", last_status, last_syn);
	memset(pva(P_SQ), 0, PG);
	memset(pva(P_RQ), 0, PG);
	g_qp = mk_qp(g_pd, g_cq);
	CHECK(g_qp, "CREATE_QP: %#x/%#x", last_status, last_syn);
	return qp_to_rts(g_qp);
}

/* Posts the send WQE 'w' (+ sges) at SQ index 0, rings, waits for CQE 0. */
bool post_wqe(const struct ohca_send_wqe *w, const struct ohca_sge *sg,
		     int nsg, uint8_t want_status, uint8_t want_verr)
{
	uint8_t *slot = pva(P_SQ);
	struct ohca_cqe *cqe = pva(P_CQ);

	memcpy(slot, w, sizeof(*w));
	if (nsg)
		memcpy(slot + sizeof(*w), sg, sizeof(*sg) * nsg);
	__sync_synchronize();
	db64(0, OHCA_DB_SQ, g_qp, 1);
	for (int i = 0; i < 3000 && !(cqe->owner & OHCA_CQE_OWNER); i++)
		msleep(1);
	CHECK(cqe->owner & OHCA_CQE_OWNER, "no completion");
	CHECK(cqe->status == want_status && cqe->vendor_err == want_verr,
	      "CQE status %u verr %u, want %u/%u", cqe->status,
	      cqe->vendor_err, want_status, want_verr);
	CHECK(cqe->qpn == g_qp && cqe->wr_id == w->wr_id,
	      "CQE qpn %u wr_id %#llx", cqe->qpn,
	      (unsigned long long)cqe->wr_id);
	return nop_ok();
}

/*
 * n (at most 32) commands of one opcode behind one doorbell: create (@in,
 * from the P_IN mailbox, entry i's output at P_OUT + 8 * i) or destroy
 * (@h[i] inline). Entry i's status in st[i]; false if they did not
 * complete.
 */
bool cmd_batch(uint16_t op, const void *in, uint16_t in_len,
		      const uint32_t *h, unsigned int n, uint8_t *st)
{
	uint16_t first = cmd_pi;

	if (in)
		memcpy(pva(P_IN), in, in_len);
	for (unsigned int i = 0; i < n; i++) {
		struct ohca_cmd *e = slot_of(cmd_pi++);
		struct ohca_handle_in hin = { .handle = h ? h[i] : 0 };

		memset(e, 0, sizeof(*e));
		e->opcode = op;
		e->status = 0xff;
		if (in) {
			e->in_len = in_len;
			e->in_addr = pba(P_IN);
			e->out_len = 8;
			e->out_addr = pba(P_OUT) + 8 * i;
		} else {
			e->in_len = sizeof(hin);
			memcpy(e->inline_in, &hin, sizeof(hin));
		}
	}
	__sync_synchronize();
	wr(OHCA_REG_CMDQ_PI, cmd_pi);
	if (!wait_reg(OHCA_REG_CMDQ_CI, 0xffff, cmd_pi))
		return false;
	__sync_synchronize();
	for (unsigned int i = 0; i < n; i++)
		st[i] = slot_of(first + i)->status;
	eq_drain();
	return true;
}

bool run_wqe_case(const struct wqe_case *c)
{
	struct ohca_send_wqe w = c->w;
	struct ohca_sge sg[3];

	if (!rdma_setup())
		return false;
	memcpy(sg, c->sg, sizeof(sg));
	for (int i = 0; c->own_lkey && i < c->nsg; i++)
		sg[i].lkey = g_mr;
	w.wr_id = 0xabcdef;
	w.flags |= OHCA_WQE_SIGNALED;
	return post_wqe(&w, sg, c->nsg, c->status, c->verr);
}
