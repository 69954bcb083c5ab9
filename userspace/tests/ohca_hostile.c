// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ohca_hostile: a hostile guest for the ohca device. Runs as root in a test
 * VM with ohca.ko unbound: maps BAR0 and BAR2 through sysfs, takes DMA memory
 * from locked anonymous pages (bus address = physical address from
 * /proc/self/pagemap; the VM has no IOMMU) and drives the device directly
 * with adversarial registers, commands, WQEs and doorbells. Every case
 * checks the reaction docs/programming-manual.md and qemu-device/README.md
 * document (a status and syndrome, a fatal state, a counted and ignored
 * write, an error completion) and prints "PASS name" or "FAIL name: why".
 * At the end the device is reset and left for the driver to bind again.
 *
 *   ohca_hostile [-v] [-l] [-s seed] [case...]   (-l lists the cases)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <ohca/ohca_cmd.h>
#include <ohca/ohca_queue.h>
#include <ohca/ohca_regs.h>

/* Bus addresses that are never RAM or MMIO in the 2 GiB test VM. */
#define NOWHERE		0x00007f0000000000ull
#define WRAPS		0xffffffffffffffc0ull
#define NPAGES		48
#define PG		4096u

static volatile uint8_t *bar0;
static volatile uint8_t *bar2;
static uint64_t bar0_bus, bar2_bus;
static char pci_dir[300];
static int verbose;

/* DMA pages: virtual address and bus address. */
static uint8_t *pages;
static uint64_t page_bus[NPAGES];
enum { P_EQ, P_CMDQ, P_IN, P_OUT, P_CQ, P_SQ, P_RQ, P_DATA, P_PBL, P_PBL2,
	P_SCRATCH };

static void *pva(int p) { return pages + (size_t)p * PG; }
static uint64_t pba(int p) { return page_bus[p]; }

static char fail_msg[512];
static bool failf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fail_msg, sizeof(fail_msg), fmt, ap);
	va_end(ap);
	return false;
}

#define CHECK(cond, ...) do { if (!(cond)) return failf(__VA_ARGS__); } while (0)

/* ---- registers ---------------------------------------------------------- */

static uint32_t rd(uint32_t off)
{
	return *(volatile uint32_t *)(bar0 + off);
}

static void wr(uint32_t off, uint32_t v)
{
	*(volatile uint32_t *)(bar0 + off) = v;
	__sync_synchronize();
}

static void db64(uint32_t page, uint32_t off, uint32_t qn, uint32_t value)
{
	*(volatile uint64_t *)(bar2 + (size_t)page * PG + off) =
		OHCA_DB_VALUE(qn, value);
	__sync_synchronize();
}

static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Polls until (reg & mask) == want, at most 3 s (TCG is slow). */
static bool wait_reg(uint32_t off, uint32_t mask, uint32_t want)
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

#define CMDQ_LOG 6
#define EQ_LOG 8
static uint16_t cmd_pi;
static uint32_t eq_ci;

static bool dev_reset(void)
{
	wr(OHCA_REG_DEV_CTRL, OHCA_DEV_CTRL_RESET);
	return wait_reg(OHCA_REG_DEV_STATUS, ~0u, OHCA_DEV_STATUS_RESET_DONE);
}

static bool bring_up_with(uint64_t eq, unsigned int eq_log, uint64_t cq,
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

static bool bring_up(void)
{
	if (!bring_up_with(pba(P_EQ), EQ_LOG, pba(P_CMDQ), CMDQ_LOG))
		return false;
	CHECK(rd(OHCA_REG_DEV_STATUS) == OHCA_DEV_STATUS_READY,
	      "not READY after bring-up: status %#x fatal %u",
	      rd(OHCA_REG_DEV_STATUS), rd(OHCA_REG_FATAL_CODE));
	return true;
}

/* Returns every valid EQ 0 entry to the device. */
static void eq_drain(void)
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

static struct ohca_cmd *slot_of(uint16_t pi)
{
	return (struct ohca_cmd *)pva(P_CMDQ) + (pi & ((1u << CMDQ_LOG) - 1));
}

/* Posts *c as the next entry and waits for it; 0 or -1 (no completion). */
static int post_raw(const struct ohca_cmd *c, uint8_t *status, uint32_t *syn)
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

static uint8_t last_status;
static uint32_t last_syn;

/* A command with input (inline or from the P_IN mailbox) and output to
 * P_OUT; returns its status (0xfe: no completion). */
static uint8_t cmd(uint16_t op, const void *in, uint16_t in_len,
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

#define EXPECT_CMD(call, st, syn) do {					\
	uint8_t s_ = (call);						\
	CHECK(s_ == (st) && last_syn == (uint32_t)(syn),			\
	      "%s: status %#x syndrome %#x, want %#x/%#x", #call, s_,	\
	      last_syn, (unsigned int)(st), (unsigned int)(syn));		\
} while (0)

static uint32_t out_handle(void)
{
	return ((struct ohca_create_out *)pva(P_OUT))->handle;
}

static uint64_t db_errors(void)
{
	if (cmd(OHCA_CMD_QUERY_STATS, NULL, 0, 128) != OHCA_STATUS_OK)
		return ~0ull;
	return ((struct ohca_query_stats_out *)pva(P_OUT))->db_errors;
}

static bool nop_ok(void)
{
	CHECK(cmd(OHCA_CMD_NOP, NULL, 0, 0) == OHCA_STATUS_OK,
	      "NOP afterwards: status %#x", last_status);
	return true;
}

static bool expect_fatal(uint32_t code)
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

static uint32_t mk_pd(void)
{
	return cmd(OHCA_CMD_CREATE_PD, NULL, 0, 8) ? 0 : out_handle();
}

static void pbl1(struct ohca_pbl *p, int page_list, int data_page)
{
	uint64_t *l = pva(page_list);

	l[0] = pba(data_page);
	p->addr = pba(page_list);
	p->npages = 1;
	p->page_shift = 12;
	p->levels = 1;
}

static uint32_t mk_mr(uint32_t pd, uint32_t access)
{
	struct ohca_create_mr_in in = { .pdn = pd, .access = access,
		.iova = 0x10000, .length = PG };

	pbl1(&in.pbl, P_PBL, P_DATA);
	return cmd(OHCA_CMD_CREATE_MR, &in, sizeof(in), 8) ? 0 : out_handle();
}

static uint32_t mk_cq(uint32_t eqn, uint32_t uar)
{
	struct ohca_create_cq_in in = { .eqn = eqn, .uar_index = uar,
		.log_size = 7 };

	memset(pva(P_CQ), 0, PG);
	pbl1(&in.pbl, P_PBL2, P_CQ);
	return cmd(OHCA_CMD_CREATE_CQ, &in, sizeof(in), 8) ? 0 : out_handle();
}

static void qp_in(struct ohca_create_qp_in *in, uint32_t pd, uint32_t cq)
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

static uint32_t mk_qp(uint32_t pd, uint32_t cq)
{
	struct ohca_create_qp_in in;

	qp_in(&in, pd, cq);
	return cmd(OHCA_CMD_CREATE_QP, &in, sizeof(in), 8) ? 0 : out_handle();
}

static uint8_t destroy(uint16_t op, uint32_t h)
{
	struct ohca_handle_in in = { .handle = h };

	return cmd(op, &in, sizeof(in), 0);
}

static const uint8_t gid_v4[16] = { [10] = 0xff, [11] = 0xff, 10, 99, 0, 1 };

static bool add_gid0(void)
{
	struct ohca_add_gid_in g = { .index = 0, .port = 1,
		.type = OHCA_GID_TYPE_ROCE_V2_IPV4,
		.mac = { 0x02, 0, 0, 0, 0x99, 1 }, .vlan_id = 0xffff };

	memcpy(g.gid, gid_v4, 16);
	CHECK(cmd(OHCA_CMD_ADD_GID, &g, sizeof(g), 0) == 0, "ADD_GID: %#x",
	      last_status);
	return true;
}

static uint8_t modify(uint32_t qpn, uint32_t mask, const struct ohca_qp_attr *a)
{
	struct ohca_modify_qp_in in = { .qpn = qpn, .attr_mask = mask };

	if (a)
		in.attr = *a;
	return cmd(OHCA_CMD_MODIFY_QP, &in, sizeof(in), 0);
}

/* RESET -> INIT -> RTR -> RTS, the QP connected to itself (loopback). */
static bool qp_to_rts(uint32_t qpn)
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
static uint32_t g_pd, g_mr, g_cq, g_qp;

static bool rdma_setup(void)
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
static bool post_wqe(const struct ohca_send_wqe *w, const struct ohca_sge *sg,
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

/* ===== the cases ========================================================== */

static bool t_reg_identity(void)
{
	CHECK(rd(OHCA_REG_MAGIC) == OHCA_MAGIC, "magic %#x", rd(OHCA_REG_MAGIC));
	CHECK(rd(OHCA_REG_ABI_VERSION) >> 16 == OHCA_ABI_MAJOR, "abi %#x",
	      rd(OHCA_REG_ABI_VERSION));
	CHECK(rd(OHCA_REG_NUM_DB_PAGES) == OHCA_NUM_DB_PAGES, "db pages");
	return true;
}

static bool t_reg_readonly_writes(void)
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

static bool t_reg_narrow_wide_unaligned(void)
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

static bool t_reg_unknown_offsets(void)
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

static bool t_reg_dev_ctrl_unknown_bits(void)
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

static bool t_enable_cmdq_log0(void) { return bad_config(pba(P_EQ), 8, pba(P_CMDQ), 0); }
static bool t_enable_cmdq_log11(void) { return bad_config(pba(P_EQ), 8, pba(P_CMDQ), 11); }
static bool t_enable_cmdq_log_huge(void) { return bad_config(pba(P_EQ), 8, pba(P_CMDQ), 0xffffffff); }
static bool t_enable_cmdq_unaligned(void) { return bad_config(pba(P_EQ), 8, pba(P_CMDQ) + 32, 6); }
static bool t_enable_cmdq_base0(void) { return bad_config(pba(P_EQ), 8, 0, 6); }
static bool t_enable_eq_base0(void) { return bad_config(0, 8, pba(P_CMDQ), 6); }
static bool t_enable_eq_log17(void) { return bad_config(pba(P_EQ), 17, pba(P_CMDQ), 6); }
static bool t_enable_eq_unaligned(void) { return bad_config(pba(P_EQ) + 8, 8, pba(P_CMDQ), 6); }

static bool t_enable_while_fatal(void)
{
	uint32_t before;

	if (!bad_config(pba(P_EQ), 8, pba(P_CMDQ), 0))
		return false;
	before = rd(OHCA_REG_ERR_COUNT);
	wr(OHCA_REG_DEV_CTRL, OHCA_DEV_CTRL_ENABLE);
	CHECK(rd(OHCA_REG_ERR_COUNT) - before == 1, "ENABLE while FATAL not counted");
	return expect_fatal(OHCA_FATAL_BAD_CMDQ_CONFIG);
}

static bool t_config_frozen_when_ready(void)
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

static bool pi_rejected(uint32_t v)
{
	uint32_t before = rd(OHCA_REG_ERR_COUNT), ci = rd(OHCA_REG_CMDQ_CI);

	wr(OHCA_REG_CMDQ_PI, v);
	msleep(20);
	CHECK(rd(OHCA_REG_ERR_COUNT) - before == 1, "PI %#x not counted", v);
	CHECK(rd(OHCA_REG_CMDQ_CI) == ci, "PI %#x moved CI", v);
	return nop_ok();
}

static bool t_cmdq_pi_high_bits(void) { return pi_rejected(0x10000 | (cmd_pi + 1)); }
static bool t_cmdq_pi_beyond_ring(void) { return pi_rejected((uint16_t)(cmd_pi + (1u << CMDQ_LOG) + 1)); }
static bool t_cmdq_pi_backwards(void) { return pi_rejected((uint16_t)(cmd_pi - 1)); }

static bool t_eq0_db_bad(void)
{
	uint32_t before = rd(OHCA_REG_ERR_COUNT);

	wr(OHCA_REG_EQ0_DB, (eq_ci & 0xffff) | (1u << 20));
	wr(OHCA_REG_EQ0_DB, (eq_ci + 5) & 0xffff);	/* beyond the producer */
	CHECK(rd(OHCA_REG_ERR_COUNT) - before == 2, "ERR_COUNT +%u",
	      rd(OHCA_REG_ERR_COUNT) - before);
	return nop_ok();
}

static bool t_comp_eq_db_missing(void)
{
	uint32_t before = rd(OHCA_REG_ERR_COUNT);

	for (uint32_t n = 1; n < OHCA_MAX_EQ; n++)
		wr(OHCA_REG_EQ_DB(n), OHCA_EQ_DB_ARM | n);
	CHECK(rd(OHCA_REG_ERR_COUNT) - before == OHCA_MAX_EQ - 1, "ERR_COUNT +%u",
	      rd(OHCA_REG_ERR_COUNT) - before);
	return nop_ok();
}

static bool t_eth_doorbells_without_ring(void)
{
	uint32_t before = rd(OHCA_REG_ERR_COUNT);

	wr(OHCA_REG_ETH_TX_PI, 1);
	wr(OHCA_REG_ETH_RX_PI, 7);
	wr(OHCA_REG_ETH_IRQ_MASK, 2);
	CHECK(rd(OHCA_REG_ERR_COUNT) - before == 3, "ERR_COUNT +%u",
	      rd(OHCA_REG_ERR_COUNT) - before);
	return nop_ok();
}

static bool t_cmdq_ring_outside_ram(void)
{
	if (!bring_up_with(pba(P_EQ), EQ_LOG, NOWHERE, CMDQ_LOG))
		return false;
	wr(OHCA_REG_CMDQ_PI, 1);
	return expect_fatal(OHCA_FATAL_CMDQ_DMA);
}

static bool t_cmdq_ring_on_own_bar0(void)
{
	if (!bring_up_with(pba(P_EQ), EQ_LOG, bar0_bus, CMDQ_LOG))
		return false;
	wr(OHCA_REG_CMDQ_PI, 1);
	return expect_fatal(OHCA_FATAL_CMDQ_DMA);
}

static bool t_eq0_outside_ram(void)
{
	if (!bring_up_with(NOWHERE, EQ_LOG, pba(P_CMDQ), CMDQ_LOG))
		return false;
	CHECK(rd(OHCA_REG_DEV_STATUS) == OHCA_DEV_STATUS_READY, "not READY");
	wr(OHCA_REG_CMDQ_PI, 1);	/* NOP: its CMD_DONE cannot be posted */
	return expect_fatal(OHCA_FATAL_EQ_DMA);
}

static bool t_eq0_on_own_bar2(void)
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
static bool t_eq0_full_holds_commands(void)
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

static bool t_bus_master_off(void)
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

static bool t_reset_mid_command(void)
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

static bool t_reg_random_sweep(void)
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

/* ---- commands ------------------------------------------------------------ */

static bool raw_expect(struct ohca_cmd *c, uint8_t st, uint32_t syn)
{
	uint8_t s;
	uint32_t y;

	CHECK(post_raw(c, &s, &y) == 0, "no completion");
	CHECK(s == st && y == syn, "status %#x syndrome %#x, want %#x/%#x", s, y,
	      st, syn);
	return nop_ok();
}

static bool t_cmd_bad_opcodes(void)
{
	static const uint16_t ops[] = { 0x0b, 0x0f, OHCA_CMD_MAX, 0x7fff, 0xffff };

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct ohca_cmd c = { .opcode = ops[i] };

		if (!raw_expect(&c, OHCA_STATUS_BAD_OPCODE, ops[i]))
			return false;
	}
	return true;
}

static bool t_cmd_rsvd0(void)
{
	struct ohca_cmd c = { .rsvd0 = 1 };

	return raw_expect(&c, OHCA_STATUS_RESERVED_NONZERO, OHCA_SYNDROME_ENTRY | 5);
}

static bool t_cmd_rsvd1(void)
{
	struct ohca_cmd c = { .rsvd1 = 0x8000 };

	return raw_expect(&c, OHCA_STATUS_RESERVED_NONZERO, OHCA_SYNDROME_ENTRY | 14);
}

static bool t_cmd_out_addr_no_len(void)
{
	struct ohca_cmd c = { .out_addr = NOWHERE };

	return raw_expect(&c, OHCA_STATUS_BAD_FIELD, OHCA_SYNDROME_ENTRY | 24);
}

static bool t_cmd_in_len_huge(void)
{
	struct ohca_cmd c = { .opcode = OHCA_CMD_CREATE_MR, .in_len = 0xffff,
		.in_addr = pba(P_IN) };

	return raw_expect(&c, OHCA_STATUS_BAD_LEN, OHCA_CMD_MAILBOX_MAX);
}

static bool t_cmd_out_len_huge(void)
{
	struct ohca_cmd c = { .opcode = OHCA_CMD_QUERY_DEVICE, .out_len = 4097,
		.out_addr = pba(P_OUT) };

	return raw_expect(&c, OHCA_STATUS_BAD_LEN, OHCA_CMD_MAILBOX_MAX);
}

static bool t_cmd_in_len_wrong(void)
{
	uint8_t in[64] = { 1 };

	EXPECT_CMD(cmd(OHCA_CMD_QUERY_PORT, in, 7, 64), OHCA_STATUS_BAD_LEN, 8);
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_QP, in, 63, 8), OHCA_STATUS_BAD_LEN, 64);
	EXPECT_CMD(cmd(OHCA_CMD_NOP, in, 1, 0), OHCA_STATUS_BAD_LEN, 0);
	return true;
}

static bool t_cmd_out_len_short(void)
{
	/* QUERY_DEVICE grew compatibly: the ABI 1.3 size is the minimum. */
	EXPECT_CMD(cmd(OHCA_CMD_QUERY_DEVICE, NULL, 0,
		       OHCA_QUERY_DEVICE_OUT_MIN_SIZE - 1),
		   OHCA_STATUS_BAD_LEN, OHCA_QUERY_DEVICE_OUT_MIN_SIZE);
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_PD, NULL, 0, 7), OHCA_STATUS_BAD_LEN, 8);
	return true;
}

static bool t_cmd_mailbox_outside_ram(void)
{
	struct ohca_cmd c = { .opcode = OHCA_CMD_CREATE_MR, .in_len = 48,
		.in_addr = NOWHERE, .out_len = 8, .out_addr = pba(P_OUT) };

	return raw_expect(&c, OHCA_STATUS_BAD_ADDR, 0);
}

static bool t_cmd_mailbox_wraps(void)
{
	struct ohca_cmd c = { .opcode = OHCA_CMD_CREATE_QP, .in_len = 64,
		.in_addr = WRAPS + 32, .out_len = 8, .out_addr = pba(P_OUT) };

	return raw_expect(&c, OHCA_STATUS_BAD_ADDR, 0);
}

static bool t_cmd_mailbox_on_own_bar0(void)
{
	struct ohca_cmd c = { .opcode = OHCA_CMD_CREATE_MR, .in_len = 48,
		.in_addr = bar0_bus, .out_len = 8, .out_addr = pba(P_OUT) };

	/* The device must not read its own registers as input. */
	return raw_expect(&c, OHCA_STATUS_BAD_ADDR, 0);
}

static bool t_cmd_output_outside_ram(void)
{
	struct ohca_cmd c = { .opcode = OHCA_CMD_QUERY_DEVICE,
		.out_len = sizeof(struct ohca_query_device_out),
		.out_addr = NOWHERE };

	if (!raw_expect(&c, OHCA_STATUS_BAD_ADDR, 1))
		return false;
	c.out_addr = WRAPS;
	return raw_expect(&c, OHCA_STATUS_BAD_ADDR, 1);
}

static bool t_cmd_output_on_own_bars(void)
{
	struct ohca_cmd c = { .opcode = OHCA_CMD_QUERY_STATS, .out_len = 128,
		.out_addr = bar0_bus + OHCA_REG_DEV_CTRL };

	if (!raw_expect(&c, OHCA_STATUS_BAD_ADDR, 1))
		return false;
	c.out_addr = bar2_bus;
	return raw_expect(&c, OHCA_STATUS_BAD_ADDR, 1);
}

static bool t_cmd_output_over_own_entry(void)
{
	struct ohca_cmd c = { .opcode = OHCA_CMD_ALLOC_UAR, .out_len = 8,
		.out_addr = pba(P_CMDQ) + (cmd_pi & ((1u << CMDQ_LOG) - 1)) * 64 + 32 };

	return raw_expect(&c, OHCA_STATUS_OK, 0);
}

static bool t_cmd_port_fields(void)
{
	struct ohca_query_port_in qp = { .port = 2 };
	struct ohca_set_port_in sp = { .port = 1, .mask = OHCA_SET_PORT_MTU,
		.mtu = 67 };

	EXPECT_CMD(cmd(OHCA_CMD_QUERY_PORT, &qp, 8, 64), OHCA_STATUS_BAD_FIELD, 0);
	EXPECT_CMD(cmd(OHCA_CMD_SET_PORT, &sp, 16, 0), OHCA_STATUS_BAD_FIELD, 8);
	sp.mtu = 9001;
	EXPECT_CMD(cmd(OHCA_CMD_SET_PORT, &sp, 16, 0), OHCA_STATUS_BAD_FIELD, 8);
	sp.mask = 0x80000000;
	EXPECT_CMD(cmd(OHCA_CMD_SET_PORT, &sp, 16, 0), OHCA_STATUS_BAD_FIELD, 4);
	return true;
}

static bool t_cmd_eth_ring_outside_ram(void)
{
	struct ohca_create_eth_ring_in in = { .type = OHCA_ETH_RING_RX,
		.log_size = 12, .base = NOWHERE };

	EXPECT_CMD(cmd(OHCA_CMD_CREATE_ETH_RING, &in, 16, 0), OHCA_STATUS_BAD_FIELD, 8);
	in.base = bar0_bus;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_ETH_RING, &in, 16, 0), OHCA_STATUS_BAD_FIELD, 8);
	in.log_size = 13;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_ETH_RING, &in, 16, 0), OHCA_STATUS_BAD_FIELD, 1);
	in.type = 2;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_ETH_RING, &in, 16, 0), OHCA_STATUS_BAD_FIELD, 0);
	return true;
}

static bool t_cmd_eth_tx_bad_descriptors(void)
{
	struct ohca_create_eth_ring_in in = { .type = OHCA_ETH_RING_TX,
		.log_size = 2, .base = pba(P_SCRATCH) };
	struct ohca_eth_desc *d = pva(P_SCRATCH);

	memset(d, 0, 64);
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_ETH_RING, &in, 16, 0), 0, 0);
	d[0] = (struct ohca_eth_desc){ .addr = NOWHERE, .len = 100 };
	d[1] = (struct ohca_eth_desc){ .addr = pba(P_DATA), .len = 0 };
	d[2] = (struct ohca_eth_desc){ .addr = pba(P_DATA), .len = 0xffff };
	d[3] = (struct ohca_eth_desc){ .addr = WRAPS, .len = 200 };
	__sync_synchronize();
	wr(OHCA_REG_ETH_TX_PI, 4);
	for (int i = 0; i < 3000 && !(d[3].flags & OHCA_ETH_DESC_DONE); i++)
		msleep(1);
	for (int i = 0; i < 4; i++)
		CHECK(d[i].flags == (OHCA_ETH_DESC_DONE | OHCA_ETH_DESC_ERROR),
		      "descriptor %d flags %#x", i, d[i].flags);
	{
		struct ohca_destroy_eth_ring_in dt = { .type = OHCA_ETH_RING_TX };

		EXPECT_CMD(cmd(OHCA_CMD_DESTROY_ETH_RING, &dt, 8, 0), 0, 0);
	}
	return true;
}

static bool t_cmd_uar_exhaustion(void)
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

static bool t_cmd_gid_fields(void)
{
	struct ohca_add_gid_in g = { .index = 16, .port = 1,
		.type = OHCA_GID_TYPE_ROCE_V2_IPV4, .mac = { 2, 0, 0, 0, 0, 9 },
		.vlan_id = 0xffff };
	struct ohca_del_gid_in d = { .index = 3, .port = 1 };

	memcpy(g.gid, gid_v4, 16);
	EXPECT_CMD(cmd(OHCA_CMD_ADD_GID, &g, 32, 0), OHCA_STATUS_BAD_FIELD, 16);
	g.index = 0;
	g.mac[0] = 1;
	EXPECT_CMD(cmd(OHCA_CMD_ADD_GID, &g, 32, 0), OHCA_STATUS_BAD_FIELD, 20);
	g.mac[0] = 2;
	g.vlan_id = 4096;
	EXPECT_CMD(cmd(OHCA_CMD_ADD_GID, &g, 32, 0), OHCA_STATUS_BAD_FIELD, 26);
	EXPECT_CMD(cmd(OHCA_CMD_DEL_GID, &d, 8, 0), OHCA_STATUS_BAD_HANDLE, 3);
	d.index = 0xffff;
	EXPECT_CMD(cmd(OHCA_CMD_DEL_GID, &d, 8, 0), OHCA_STATUS_BAD_FIELD, 0);
	return true;
}

static bool t_cmd_eq_fields(void)
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

static bool t_cmd_eq_exhaustion(void)
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

static bool t_pd_double_destroy(void)
{
	uint32_t pd = mk_pd();

	CHECK(pd, "CREATE_PD");
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_PD, pd), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_PD, pd), OHCA_STATUS_BAD_HANDLE, pd);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_PD, 0xffffffff), OHCA_STATUS_BAD_HANDLE,
		   0xffffffff);
	return true;
}

static bool t_pd_destroy_with_live_mr(void)
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

static bool t_mr_stale_key(void)
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

static bool t_mr_fields(void)
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

static bool t_mr_page_list(void)
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

static bool t_mr_huge_two_level(void)
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

static bool t_cq_fields(void)
{
	struct ohca_create_cq_in in = { .eqn = 3, .log_size = 7 };

	pbl1(&in.pbl, P_PBL2, P_CQ);
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_CQ, &in, 32, 8), OHCA_STATUS_BAD_HANDLE, 3);
	in.eqn = 0;
	in.uar_index = 9;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_CQ, &in, 32, 8), OHCA_STATUS_BAD_FIELD, 4);
	in.uar_index = 0;
	in.log_size = 17;
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_CQ, &in, 32, 8), OHCA_STATUS_BAD_FIELD, 8);
	in.log_size = 8;	/* 8 KiB ring in a one-page list */
	EXPECT_CMD(cmd(OHCA_CMD_CREATE_CQ, &in, 32, 8), OHCA_STATUS_BAD_FIELD,
		   16 + offsetof(struct ohca_pbl, npages));
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_CQ, 1), OHCA_STATUS_BAD_HANDLE, 1);
	return true;
}

static bool t_destroy_in_use(void)
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

static bool t_qp_fields(void)
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

static bool t_srq_fields(void)
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

static bool t_mcast_fields(void)
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

/* RESIZE_CQ with hostile fields, onto its own ring and back many times
 * (the page-list budget must not leak), then of a destroyed CQ. */
static bool t_resize_cq_fields(void)
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
	RESIZE_BAD(log_size, 17, OHCA_STATUS_BAD_FIELD, 4);
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
static bool t_cq_moderation(void)
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

/* REREG_MR with hostile fields: unknown and missing flags, fields of parts
 * not named, stale keys, a missing PD, bad access and page lists, the
 * physical MR; the MR still destroys cleanly and its PD with it. */
static bool t_rereg_mr_fields(void)
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

static bool t_srq_exhaustion(void)
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

/*
 * n (at most 32) commands of one opcode behind one doorbell: create (@in,
 * from the P_IN mailbox, entry i's output at P_OUT + 8 * i) or destroy
 * (@h[i] inline). Entry i's status in st[i]; false if they did not
 * complete.
 */
static bool cmd_batch(uint16_t op, const void *in, uint16_t in_len,
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

/*
 * QPs up to QUERY_DEVICE's max_qp (65536 by default: EQ 0's size does not
 * limit them), NO_RESOURCES past it, all destroyed and one created again;
 * 32 commands per doorbell. The test harness checks QEMU's memory around
 * it (test_hostile.py).
 */
static bool t_qp_exhaustion(void)
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

static bool t_modify_qp_bad(void)
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

static bool t_qp_use_after_destroy(void)
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

/* ---- WQEs ------------------------------------------------------------------ */

/* A malformed send WQE and the error completion it must get. */
struct wqe_case {
	struct ohca_send_wqe w;
	struct ohca_sge sg[3];
	int nsg;		/* SGEs written after the WQE */
	bool own_lkey;		/* the SGEs use the MR rdma_setup() registered */
	uint8_t status, verr;
};

static bool run_wqe_case(const struct wqe_case *c)
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

/* One case function per malformed WQE, named as in cases[]. */
#define WQE_CASE(fn, ...)						\
static bool fn(void)							\
{									\
	static const struct wqe_case c = { __VA_ARGS__ };		\
									\
	return run_wqe_case(&c);					\
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
static bool t_mw_fields(void)
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

static bool t_mw_exhaustion(void)
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

/* ---- device memory ------------------------------------------------------ */

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

static bool t_dm_fields(void)
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

static bool t_dm_exhaustion(void)
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

static bool t_dm_window(void)
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

/* ---- raw Ethernet QPs and flows ------------------------------------------ */

#define FLOW_V(f) (offsetof(struct ohca_create_flow_in, value) + \
		   offsetof(struct ohca_flow_spec, f))
#define FLOW_M(f) (offsetof(struct ohca_create_flow_in, mask) + \
		   offsetof(struct ohca_flow_spec, f))

/* A raw QP of page 0 in RTS (RESET->INIT needs the port, nothing else). */
static uint32_t mk_raw_qp(uint32_t pd, uint32_t cq)
{
	struct ohca_create_qp_in in;
	struct ohca_qp_attr a = { .qp_state = OHCA_QPS_INIT };
	uint32_t qpn;

	qp_in(&in, pd, cq);
	in.type = OHCA_QPT_RAW_ETH;
	if (cmd(OHCA_CMD_CREATE_QP, &in, sizeof(in), 8))
		return 0;
	qpn = out_handle();
	if (modify(qpn, OHCA_QP_STATE, &a) != OHCA_STATUS_BAD_FIELD ||
	    modify(qpn, OHCA_QP_STATE | OHCA_QP_PORT, &a))
		return 0;
	a.qp_state = OHCA_QPS_RTR;
	if (modify(qpn, OHCA_QP_STATE, &a))
		return 0;
	a.qp_state = OHCA_QPS_RTS;
	return modify(qpn, OHCA_QP_STATE, &a) ? 0 : qpn;
}

/* An Ethernet match on the multicast MAC the rdma-core suite uses. */
static void eth_flow_in(struct ohca_create_flow_in *in, uint32_t qpn)
{
	static const uint8_t mac[6] = { 0x01, 0x50, 0x56, 0x19, 0x20, 0xa7 };

	memset(in, 0, sizeof(*in));
	in->qpn = qpn;
	memcpy(in->value.dmac, mac, 6);
	memset(in->mask.dmac, 0xff, 6);
}

static uint8_t flow_cmd(const struct ohca_create_flow_in *in)
{
	return cmd(OHCA_CMD_CREATE_FLOW, in, sizeof(*in), 8);
}

static bool t_raw_flow_fields(void)
{
	struct ohca_create_flow_in in;
	uint32_t pd, cq, raw, rc, h;

	if (!bring_up() || !add_gid0())
		return false;
	pd = mk_pd();
	cq = mk_cq(0, 0);
	CHECK(pd && cq, "setup");
	raw = mk_raw_qp(pd, cq);
	CHECK(raw, "raw QP: %#x/%#x", last_status, last_syn);
	rc = mk_qp(pd, cq);
	CHECK(rc, "RC QP: %#x/%#x", last_status, last_syn);

	eth_flow_in(&in, raw);
	in.rsvd0 = 1;
	EXPECT_CMD(flow_cmd(&in), OHCA_STATUS_RESERVED_NONZERO, 6);
	eth_flow_in(&in, raw);
	in.mask.rsvd = 1;
	EXPECT_CMD(flow_cmd(&in), OHCA_STATUS_RESERVED_NONZERO, FLOW_M(rsvd));
	eth_flow_in(&in, 0xdead);
	EXPECT_CMD(flow_cmd(&in), OHCA_STATUS_BAD_HANDLE, 0xdead);
	eth_flow_in(&in, rc);
	EXPECT_CMD(flow_cmd(&in), OHCA_STATUS_BAD_STATE, rc);
	/* A value bit the mask does not cover. */
	eth_flow_in(&in, raw);
	in.mask.dmac[5] = 0x0f;
	EXPECT_CMD(flow_cmd(&in), OHCA_STATUS_BAD_FIELD, FLOW_V(dmac) + 5);
	/* IP fields without the IP version, a version that is not one. */
	eth_flow_in(&in, raw);
	memset(in.mask.dst_ip, 0xff, 16);
	EXPECT_CMD(flow_cmd(&in), OHCA_STATUS_BAD_FIELD, FLOW_M(ip_version));
	in.mask.ip_version = 0xff;
	in.value.ip_version = 5;
	EXPECT_CMD(flow_cmd(&in), OHCA_STATUS_BAD_FIELD, FLOW_V(ip_version));
	/* IPv4 with 16 address bytes; a 32-bit IPv6 flow label. */
	in.value.ip_version = 4;
	EXPECT_CMD(flow_cmd(&in), OHCA_STATUS_BAD_FIELD, FLOW_M(dst_ip));
	in.value.ip_version = 6;
	in.mask.flow_label = 0xffffffff;
	EXPECT_CMD(flow_cmd(&in), OHCA_STATUS_BAD_FIELD, FLOW_M(flow_label));
	/* Ports without TCP or UDP. */
	in.mask.flow_label = 0;
	in.mask.dst_port = 0xffff;
	EXPECT_CMD(flow_cmd(&in), OHCA_STATUS_BAD_FIELD, FLOW_M(ip_proto));
	in.mask.ip_proto = 0xff;
	in.value.ip_proto = 1;
	EXPECT_CMD(flow_cmd(&in), OHCA_STATUS_BAD_FIELD, FLOW_M(ip_proto));
	in.value.ip_proto = 17;
	EXPECT_CMD(flow_cmd(&in), 0, 0);
	h = out_handle();

	/* The QP cannot go while a flow steers to it; the flow goes once. */
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_QP, raw), OHCA_STATUS_BAD_STATE, raw);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_FLOW, h), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_FLOW, h), OHCA_STATUS_BAD_HANDLE, h);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_QP, raw), 0, 0);
	eth_flow_in(&in, raw);
	EXPECT_CMD(flow_cmd(&in), OHCA_STATUS_BAD_HANDLE, raw);
	return nop_ok();
}

static bool t_raw_flow_exhaustion(void)
{
	struct ohca_query_device_out *q = pva(P_OUT);
	struct ohca_create_flow_in in;
	uint32_t pd, cq, raw, max, n = 0;
	static uint32_t h[1024];

	if (!bring_up())
		return false;
	CHECK(cmd(OHCA_CMD_QUERY_DEVICE, NULL, 0, sizeof(*q)) == 0 &&
	      (q->dev_caps & OHCA_DEV_CAP_RAW_ETH) && q->max_flow > 0 &&
	      q->max_flow < 1024, "QUERY_DEVICE: caps %#x max_flow %u",
	      q->dev_caps, q->max_flow);
	max = q->max_flow;
	pd = mk_pd();
	cq = mk_cq(0, 0);
	raw = pd && cq ? mk_raw_qp(pd, cq) : 0;
	CHECK(raw, "setup: %#x/%#x", last_status, last_syn);
	eth_flow_in(&in, raw);
	while (flow_cmd(&in) == OHCA_STATUS_OK) {
		CHECK(n < max, "no flow limit");
		h[n++] = out_handle();
	}
	CHECK(last_status == OHCA_STATUS_NO_RESOURCES, "status %#x", last_status);
	CHECK(n == max, "%u flows, QUERY_DEVICE says %u", n, max);
	for (uint32_t i = 0; i < n; i++)
		EXPECT_CMD(destroy(OHCA_CMD_DESTROY_FLOW, h[i]), 0, 0);
	EXPECT_CMD(flow_cmd(&in), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_FLOW, out_handle()), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_QP, raw), 0, 0);
	return nop_ok();
}

/* A raw QP as g_qp (post_wqe's), then one send WQE and its completion. */
static bool raw_wqe_case(struct ohca_send_wqe w, const struct ohca_sge *sg,
			 int nsg, uint8_t st, uint8_t verr)
{
	struct ohca_sge s[2];

	if (!bring_up() || !add_gid0())
		return false;
	g_pd = mk_pd();
	g_mr = mk_mr(g_pd, OHCA_ACCESS_LOCAL_WRITE);
	g_cq = mk_cq(0, 0);
	CHECK(g_pd && g_mr && g_cq, "setup");
	memset(pva(P_SQ), 0, PG);
	memset(pva(P_RQ), 0, PG);
	g_qp = mk_raw_qp(g_pd, g_cq);
	CHECK(g_qp, "raw QP: %#x/%#x", last_status, last_syn);
	for (int i = 0; i < nsg; i++) {
		s[i] = sg[i];
		s[i].lkey = g_mr;
	}
	w.wr_id = 0x5aa5;
	w.flags |= OHCA_WQE_SIGNALED;
	return post_wqe(&w, s, nsg, st, verr);
}

/* Shorter than an Ethernet header. */
static bool t_raw_frame_short(void)
{
	static const struct ohca_sge sg = { 0x10000, 13, 0 };

	return raw_wqe_case((struct ohca_send_wqe){ .opcode = OHCA_WR_SEND,
						    .num_sge = 1 },
			    &sg, 1, OHCA_CQE_LOC_LEN_ERR,
			    OHCA_VERR_BAD_FRAME_LEN);
}

/* Two pages: longer than the port's MTU allows, whatever the keys say. */
static bool t_raw_frame_long(void)
{
	static const struct ohca_sge sg[2] = { { 0x10000, PG, 0 },
					       { 0x10000, PG, 0 } };

	return raw_wqe_case((struct ohca_send_wqe){ .opcode = OHCA_WR_SEND,
						    .num_sge = 2 },
			    sg, 2, OHCA_CQE_LOC_LEN_ERR,
			    OHCA_VERR_BAD_FRAME_LEN);
}

/* A raw QP sends frames only: no RDMA, no immediate, no huge inline. */
static bool t_raw_wqe_bad(void)
{
	static const struct ohca_sge sg = { 0x10000, 64, 0 };

	if (!raw_wqe_case((struct ohca_send_wqe){ .opcode = OHCA_WR_RDMA_WRITE,
						  .num_sge = 1 },
			  &sg, 1, OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_WQE))
		return false;
	if (!raw_wqe_case((struct ohca_send_wqe){ .opcode = OHCA_WR_SEND_IMM,
						  .num_sge = 1 },
			  &sg, 1, OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_WQE))
		return false;
	return raw_wqe_case((struct ohca_send_wqe){ .opcode = OHCA_WR_SEND,
						    .flags = OHCA_WQE_INLINE,
						    .inline_len = 0xfffffff0 },
			    NULL, 0, OHCA_CQE_LOC_QP_OP_ERR,
			    OHCA_VERR_BAD_WQE);
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

static bool t_mw_bind_ok(void)
{
	return mw_bind_case(OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_MW_BIND,
			    OHCA_CQE_SUCCESS, OHCA_VERR_NONE);
}

static bool t_mw_bind_without_mw_bind_access(void)
{
	return mw_bind_case(OHCA_ACCESS_LOCAL_WRITE, OHCA_CQE_MW_BIND_ERR,
			    OHCA_VERR_LKEY_ACCESS);
}

/* UC QPs: no SRQ, an unknown QP type, the UC column of MODIFY_QP (RC and
 * UD attributes refused), then connected to itself: a READ WQE fails with
 * BAD_WQE. */
static bool t_uc_qp(void)
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

/* XRC domains: QUERY_DEVICE's limit is the device's, DEALLOC_XRCD's
 * handle and reserved word are checked, a domain with an SRQ is busy. */
static bool t_xrcd_exhaustion(void)
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
static bool t_xrc_fields(void)
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
static bool t_xrc_ini_no_srqn(void)
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

static bool t_fast_reg_fields(void)
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

static bool t_fast_reg_ok(void)
{
	return fast_reg_wqe(1, 0, OHCA_CQE_SUCCESS, OHCA_VERR_NONE);
}

static bool t_fast_reg_past_capacity(void)
{
	return fast_reg_wqe(2, 0, OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_REG_MR);
}

static bool t_fast_reg_list_outside_ram(void)
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

#undef WQE_CASE

/* ---- on-demand paging (programming manual section 19) -------------------- */

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

static bool t_odp_fields(void)
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

static bool t_odp_exhaustion(void)
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

static bool t_odp_fault(void)
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

static bool t_odp_fault_fail(void)
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

static bool t_wqe_then_flush(void)
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

static bool t_sq_ring_outside_ram(void)
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

static bool t_cq_ring_outside_ram(void)
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

/* ---- doorbells --------------------------------------------------------------- */

static bool t_db_rejected(void)
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

static bool t_db_backwards_and_reset_qp(void)
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

static bool t_db_flood(void)
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

static bool t_db_random_everything(void)
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

static bool t_cmd_random_entries(void)
{
	/* Random entries (addresses never inside the guest's RAM except the
	 * mailbox pages): every one completes, the queue keeps going. */
	for (int i = 0; i < 2000; i++) {
		struct ohca_cmd c;
		uint8_t *p = (uint8_t *)&c, s;
		uint32_t y;

		for (size_t j = 0; j < sizeof(c); j++)
			p[j] = random();
		c.opcode %= OHCA_CMD_MAX + 2;
		if (random() % 2)
			c.rsvd0 = c.rsvd1 = 0;
		switch (random() % 3) {
		case 0: c.in_addr = pba(P_IN); break;
		case 1: c.in_addr = NOWHERE + (random() & ~63); break;
		default: break;
		}
		switch (random() % 3) {
		case 0: c.out_addr = pba(P_OUT); c.out_len %= PG; break;
		case 1: c.out_addr = 0; c.out_len = 0; break;
		default: c.out_addr |= 1ull << 62; break;
		}
		c.in_len %= random() % 2 ? 80 : 0x2000;
		memset(pva(P_IN), (int)random(), PG);
		if (post_raw(&c, &s, &y))
			return failf("entry %d (opcode %#x) never completed", i, c.opcode);
		if (!(rd(OHCA_REG_DEV_STATUS) & OHCA_DEV_STATUS_READY))
			return failf("device left READY after entry %d: %#x", i,
				     rd(OHCA_REG_DEV_STATUS));
		CHECK(s <= OHCA_STATUS_INTERNAL, "status %#x", s);
	}
	return nop_ok();
}

static bool t_rdma_random_commands(void)
{
	/* Random but well-formed-length RDMA commands against live objects. */
	static const uint16_t ops[] = { OHCA_CMD_CREATE_MR, OHCA_CMD_DESTROY_MR,
		OHCA_CMD_CREATE_CQ, OHCA_CMD_DESTROY_CQ, OHCA_CMD_CREATE_QP,
		OHCA_CMD_MODIFY_QP, OHCA_CMD_QUERY_QP, OHCA_CMD_DESTROY_QP,
		OHCA_CMD_DESTROY_PD, OHCA_CMD_CREATE_EQ, OHCA_CMD_DESTROY_EQ };
	static const uint16_t lens[] = { 48, 8, 32, 8, 64, 80, 8, 8, 8, 16, 8 };
	uint8_t in[80];

	if (!rdma_setup())
		return false;
	for (int i = 0; i < 2000; i++) {
		int k = random() % 11;

		for (size_t j = 0; j < sizeof(in); j++)
			in[j] = random() % 4 ? random() % 4 : random();
		if (k == 2 || k == 4) {	/* page lists into our pages */
			struct ohca_pbl *p = (struct ohca_pbl *)(in + (k == 2 ? 16 : 32));

			p->addr = pba(P_PBL) + (random() % 4) * 8;
		}
		if (cmd(ops[k], in, lens[k], 80) == 0xfe)
			return failf("command %#x never completed", ops[k]);
		CHECK(rd(OHCA_REG_DEV_STATUS) & OHCA_DEV_STATUS_READY,
		      "device left READY: %#x", rd(OHCA_REG_DEV_STATUS));
	}
	return nop_ok();
}

/* ---- table ------------------------------------------------------------------ */

struct hcase {
	const char *name;
	bool (*fn)(void);
	bool fresh;	/* bring the device up first */
};

static const struct hcase cases[] = {
	{ "reg_identity", t_reg_identity, true },
	{ "reg_readonly_writes", t_reg_readonly_writes, true },
	{ "reg_narrow_wide_unaligned", t_reg_narrow_wide_unaligned, false },
	{ "reg_unknown_offsets", t_reg_unknown_offsets, true },
	{ "reg_dev_ctrl_unknown_bits", t_reg_dev_ctrl_unknown_bits, true },
	{ "enable_cmdq_log0", t_enable_cmdq_log0, false },
	{ "enable_cmdq_log11", t_enable_cmdq_log11, false },
	{ "enable_cmdq_log_huge", t_enable_cmdq_log_huge, false },
	{ "enable_cmdq_unaligned", t_enable_cmdq_unaligned, false },
	{ "enable_cmdq_base0", t_enable_cmdq_base0, false },
	{ "enable_eq_base0", t_enable_eq_base0, false },
	{ "enable_eq_log17", t_enable_eq_log17, false },
	{ "enable_eq_unaligned", t_enable_eq_unaligned, false },
	{ "enable_while_fatal", t_enable_while_fatal, false },
	{ "config_frozen_when_ready", t_config_frozen_when_ready, true },
	{ "cmdq_pi_high_bits", t_cmdq_pi_high_bits, true },
	{ "cmdq_pi_beyond_ring", t_cmdq_pi_beyond_ring, true },
	{ "cmdq_pi_backwards", t_cmdq_pi_backwards, true },
	{ "eq0_db_bad", t_eq0_db_bad, true },
	{ "comp_eq_db_missing", t_comp_eq_db_missing, true },
	{ "eth_doorbells_without_ring", t_eth_doorbells_without_ring, true },
	{ "cmdq_ring_outside_ram", t_cmdq_ring_outside_ram, false },
	{ "cmdq_ring_on_own_bar0", t_cmdq_ring_on_own_bar0, false },
	{ "eq0_outside_ram", t_eq0_outside_ram, false },
	{ "eq0_on_own_bar2", t_eq0_on_own_bar2, false },
	{ "eq0_full_holds_commands", t_eq0_full_holds_commands, false },
	{ "bus_master_off", t_bus_master_off, true },
	{ "reset_mid_command", t_reset_mid_command, true },
	{ "reg_random_sweep", t_reg_random_sweep, true },
	{ "cmd_bad_opcodes", t_cmd_bad_opcodes, true },
	{ "cmd_rsvd0", t_cmd_rsvd0, true },
	{ "cmd_rsvd1", t_cmd_rsvd1, true },
	{ "cmd_out_addr_no_len", t_cmd_out_addr_no_len, true },
	{ "cmd_in_len_huge", t_cmd_in_len_huge, true },
	{ "cmd_out_len_huge", t_cmd_out_len_huge, true },
	{ "cmd_in_len_wrong", t_cmd_in_len_wrong, true },
	{ "cmd_out_len_short", t_cmd_out_len_short, true },
	{ "cmd_mailbox_outside_ram", t_cmd_mailbox_outside_ram, true },
	{ "cmd_mailbox_wraps", t_cmd_mailbox_wraps, true },
	{ "cmd_mailbox_on_own_bar0", t_cmd_mailbox_on_own_bar0, true },
	{ "cmd_output_outside_ram", t_cmd_output_outside_ram, true },
	{ "cmd_output_on_own_bars", t_cmd_output_on_own_bars, true },
	{ "cmd_output_over_own_entry", t_cmd_output_over_own_entry, true },
	{ "cmd_port_fields", t_cmd_port_fields, true },
	{ "cmd_eth_ring_outside_ram", t_cmd_eth_ring_outside_ram, true },
	{ "cmd_eth_tx_bad_descriptors", t_cmd_eth_tx_bad_descriptors, true },
	{ "cmd_uar_exhaustion", t_cmd_uar_exhaustion, true },
	{ "cmd_gid_fields", t_cmd_gid_fields, true },
	{ "cmd_eq_fields", t_cmd_eq_fields, true },
	{ "cmd_eq_exhaustion", t_cmd_eq_exhaustion, true },
	{ "pd_double_destroy", t_pd_double_destroy, true },
	{ "pd_destroy_with_live_mr", t_pd_destroy_with_live_mr, true },
	{ "mr_stale_key", t_mr_stale_key, true },
	{ "mr_fields", t_mr_fields, true },
	{ "mr_page_list", t_mr_page_list, true },
	{ "mr_huge_two_level", t_mr_huge_two_level, true },
	{ "cq_fields", t_cq_fields, true },
	{ "destroy_in_use", t_destroy_in_use, true },
	{ "qp_fields", t_qp_fields, true },
	{ "srq_fields", t_srq_fields, true },
	{ "srq_exhaustion", t_srq_exhaustion, true },
	{ "qp_exhaustion", t_qp_exhaustion, true },
	{ "mcast_fields", t_mcast_fields, true },
	{ "resize_cq_fields", t_resize_cq_fields, true },
	{ "cq_moderation", t_cq_moderation, false },
	{ "rereg_mr_fields", t_rereg_mr_fields, true },
	{ "modify_qp_bad", t_modify_qp_bad, false },
	{ "qp_use_after_destroy", t_qp_use_after_destroy, false },
	{ "wqe_bad_opcode", t_wqe_bad_opcode, false },
	{ "wqe_unknown_flags", t_wqe_unknown_flags, false },
	{ "wqe_num_sge_huge", t_wqe_num_sge_huge, false },
	{ "wqe_num_sge_beyond_stride", t_wqe_num_sge_beyond_stride, false },
	{ "wqe_bad_lkey", t_wqe_bad_lkey, false },
	{ "wqe_length_overflow", t_wqe_length_overflow, false },
	{ "wqe_message_too_long", t_wqe_message_too_long, false },
	{ "wqe_sge_address_wraps", t_wqe_sge_address_wraps, false },
	{ "wqe_inline_too_long", t_wqe_inline_too_long, false },
	{ "wqe_inline_read", t_wqe_inline_read, false },
	{ "wqe_atomic_write_len", t_wqe_atomic_write_len, false },
	{ "wqe_atomic_write_no_data", t_wqe_atomic_write_no_data, false },
	{ "wqe_local_inv_bad_key", t_wqe_local_inv_bad_key, false },
	{ "wqe_reg_mr_bad_key", t_wqe_reg_mr_bad_key, false },
	{ "wqe_bind_mw_bad_key", t_wqe_bind_mw_bad_key, false },
	{ "wqe_bind_mw_reserved", t_wqe_bind_mw_reserved, false },
	{ "uc_qp", t_uc_qp, false },
	{ "xrcd_exhaustion", t_xrcd_exhaustion, true },
	{ "xrc_fields", t_xrc_fields, true },
	{ "xrc_ini_no_srqn", t_xrc_ini_no_srqn, false },
	{ "dm_fields", t_dm_fields, true },
	{ "dm_exhaustion", t_dm_exhaustion, true },
	{ "dm_window", t_dm_window, true },
	{ "raw_flow_fields", t_raw_flow_fields, false },
	{ "raw_flow_exhaustion", t_raw_flow_exhaustion, false },
	{ "raw_frame_short", t_raw_frame_short, false },
	{ "raw_frame_long", t_raw_frame_long, false },
	{ "raw_wqe_bad", t_raw_wqe_bad, false },
	{ "odp_fields", t_odp_fields, false },
	{ "odp_exhaustion", t_odp_exhaustion, false },
	{ "odp_fault", t_odp_fault, false },
	{ "odp_fault_fail", t_odp_fault_fail, false },
	{ "mw_fields", t_mw_fields, true },
	{ "mw_exhaustion", t_mw_exhaustion, true },
	{ "mw_bind_ok", t_mw_bind_ok, false },
	{ "mw_bind_without_mw_bind_access", t_mw_bind_without_mw_bind_access,
	  false },
	{ "fast_reg_fields", t_fast_reg_fields, false },
	{ "fast_reg_ok", t_fast_reg_ok, false },
	{ "fast_reg_past_capacity", t_fast_reg_past_capacity, false },
	{ "fast_reg_list_outside_ram", t_fast_reg_list_outside_ram, false },
	{ "wqe_then_flush", t_wqe_then_flush, false },
	{ "sq_ring_outside_ram", t_sq_ring_outside_ram, false },
	{ "cq_ring_outside_ram", t_cq_ring_outside_ram, false },
	{ "db_rejected", t_db_rejected, false },
	{ "db_backwards_and_reset_qp", t_db_backwards_and_reset_qp, false },
	{ "db_flood", t_db_flood, false },
	{ "db_random_everything", t_db_random_everything, true },
	{ "cmd_random_entries", t_cmd_random_entries, true },
	{ "rdma_random_commands", t_rdma_random_commands, false },
};

/* ---- setup ------------------------------------------------------------------ */

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY), rc;

	if (fd < 0)
		return -1;
	rc = write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : -1;
	close(fd);
	return rc;
}

static int find_device(void)
{
	DIR *d = opendir("/sys/bus/pci/devices");
	struct dirent *e;
	char p[400], buf[32];
	int found = 0;

	if (!d)
		return -1;
	while (!found && (e = readdir(d))) {
		unsigned int ven = 0, dev = 0;
		FILE *f;

		snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/vendor", e->d_name);
		f = fopen(p, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f))
			ven = strtoul(buf, NULL, 0);
		fclose(f);
		snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/device", e->d_name);
		f = fopen(p, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f))
			dev = strtoul(buf, NULL, 0);
		fclose(f);
		if (ven == OHCA_PCI_VENDOR_ID && dev == OHCA_PCI_DEVICE_ID) {
			snprintf(pci_dir, sizeof(pci_dir), "/sys/bus/pci/devices/%s",
				 e->d_name);
			found = 1;
		}
	}
	closedir(d);
	return found ? 0 : -1;
}

static void *map_bar(int bar, size_t len, uint64_t *bus)
{
	char p[400];
	FILE *f;
	unsigned long long start = 0, end, flags;
	void *m;
	int fd;

	snprintf(p, sizeof(p), "%s/resource", pci_dir);
	f = fopen(p, "r");
	if (!f)
		return NULL;
	for (int i = 0; i <= bar; i++)
		if (fscanf(f, "%llx %llx %llx", &start, &end, &flags) != 3)
			start = 0;
	fclose(f);
	*bus = start;
	snprintf(p, sizeof(p), "%s/resource%d", pci_dir, bar);
	fd = open(p, O_RDWR | O_SYNC);
	if (fd < 0)
		return NULL;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return m == MAP_FAILED ? NULL : m;
}

static int setup_dma(void)
{
	int fd;

	pages = mmap(NULL, (size_t)NPAGES * PG, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED | MAP_POPULATE, -1, 0);
	if (pages == MAP_FAILED)
		return -1;
	memset(pages, 0, (size_t)NPAGES * PG);
	fd = open("/proc/self/pagemap", O_RDONLY);
	if (fd < 0)
		return -1;
	for (int i = 0; i < NPAGES; i++) {
		uint64_t ent;
		off_t off = (off_t)(((uintptr_t)pages / PG) + i) * 8;

		if (pread(fd, &ent, 8, off) != 8 || !(ent & (1ull << 63)) ||
		    !(ent & ((1ull << 55) - 1))) {
			close(fd);
			return -1;
		}
		page_bus[i] = (ent & ((1ull << 55) - 1)) * PG;
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	char p[450];
	unsigned int seed = 1;
	int opt, pass = 0, fail = 0;
	uint16_t cmdreg;
	int fd;

	while ((opt = getopt(argc, argv, "vls:")) != -1) {
		switch (opt) {
		case 'v': verbose = 1; break;
		case 's': seed = strtoul(optarg, NULL, 0); break;
		case 'l':
			for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
				printf("%s\n", cases[i].name);
			return 0;
		default:
			fprintf(stderr, "usage: %s [-v] [-l] [-s seed] [case...]\n", argv[0]);
			return 2;
		}
	}
	srandom(seed);
	if (find_device()) {
		fprintf(stderr, "ohca_hostile: no ohca PCI function\n");
		return 2;
	}
	snprintf(p, sizeof(p), "%s/driver/unbind", pci_dir);
	if (access(p, W_OK) == 0 && write_str(p, strrchr(pci_dir, '/') + 1)) {
		fprintf(stderr, "ohca_hostile: cannot unbind the driver\n");
		return 2;
	}
	snprintf(p, sizeof(p), "%s/enable", pci_dir);
	write_str(p, "1");
	snprintf(p, sizeof(p), "%s/config", pci_dir);
	fd = open(p, O_RDWR);
	if (fd < 0 || pread(fd, &cmdreg, 2, 4) != 2) {
		fprintf(stderr, "ohca_hostile: config space: %s\n", strerror(errno));
		return 2;
	}
	cmdreg |= 6;	/* memory space, bus master */
	if (pwrite(fd, &cmdreg, 2, 4) != 2)
		return 2;
	close(fd);
	bar0 = map_bar(OHCA_BAR_REGS, OHCA_REGS_BAR_SIZE, &bar0_bus);
	bar2 = map_bar(OHCA_BAR_DB, OHCA_BAR2_SIZE, &bar2_bus);
	if (!bar0 || !bar2 || setup_dma()) {
		fprintf(stderr, "ohca_hostile: cannot map the BARs or DMA memory\n");
		return 2;
	}
	if (verbose)
		printf("device %s BAR0 %#llx BAR2 %#llx, DMA page 0 at %#llx\n",
		       pci_dir, (unsigned long long)bar0_bus,
		       (unsigned long long)bar2_bus, (unsigned long long)page_bus[0]);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct hcase *c = &cases[i];
		bool ok, want = optind >= argc;

		for (int a = optind; a < argc; a++)
			want |= strcmp(argv[a], c->name) == 0;
		if (!want)
			continue;
		fail_msg[0] = 0;
		ok = (!c->fresh || bring_up()) && c->fn();
		if (ok) {
			printf("PASS %s\n", c->name);
			pass++;
		} else {
			printf("FAIL %s: %s\n", c->name, fail_msg);
			fail++;
		}
		fflush(stdout);
	}
	/* Leave the device as the driver expects it. */
	if (!dev_reset()) {
		printf("FAIL final_reset: no RESET_DONE\n");
		fail++;
	}
	printf("ohca_hostile: %d passed, %d failed\n", pass, fail);
	return fail ? 1 : 0;
}
