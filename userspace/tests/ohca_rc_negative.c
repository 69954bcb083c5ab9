// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca_rc_negative: RC error completions.  Every case builds a fresh pair of
 * RC QPs (A requester, B responder) connected to each other through the
 * port's RoCEv2 GID, provokes one error and checks the completion status on
 * both sides (and that no other completion appears).
 *
 *   ohca_rc_negative [-d ohca0] [-g GID_INDEX] [CASE...]   (default: all)
 *
 * Prints "PASS case: ..." or "FAIL case: ..." per case and
 * "ohca_rc_negative: N passed, M failed"; exits 1 if any failed.
 */
#include <getopt.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "ohca_rc_common.h"

#define BUF 65536
#define DEPTH 16

struct pair {
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2];
	struct ibv_mr *mr[2];
	uint8_t *buf[2];
};

static int failures;
static char why[256];

static struct pair *pair_new(int b_mr_access, uint8_t a_rnr_retry,
			     uint8_t b_min_rnr_timer)
{
	struct pair *p = calloc(1, sizeof(*p));

	if (!p)
		die("out of memory");
	for (int i = 0; i < 2; i++) {
		p->buf[i] = aligned_alloc(4096, BUF);
		if (!p->buf[i])
			die("out of memory");
		memset(p->buf[i], 0x5a + i, BUF);
		p->mr[i] = ibv_reg_mr(pd, p->buf[i], BUF, i ? b_mr_access : ACC_ALL);
		if (!p->mr[i])
			die("ibv_reg_mr: %s", strerror(errno));
		p->cq[i] = ibv_create_cq(ctx, 4 * DEPTH, NULL, NULL, 0);
		if (!p->cq[i])
			die("ibv_create_cq: %s", strerror(errno));
		p->qp[i] = make_qp(p->cq[i], DEPTH);
	}
	connect_qp(p->qp[0], p->qp[1]->qp_num, ACC_ALL, a_rnr_retry, 12);
	connect_qp(p->qp[1], p->qp[0]->qp_num, ACC_ALL, 7, b_min_rnr_timer);
	return p;
}

static void pair_free(struct pair *p)
{
	for (int i = 0; i < 2; i++) {
		if (ibv_destroy_qp(p->qp[i]) || ibv_destroy_cq(p->cq[i]) ||
		    ibv_dereg_mr(p->mr[i]))
			die("destroy: %s", strerror(errno));
		free(p->buf[i]);
	}
	free(p);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One completion from side i within timeout_s, or -1 (why set). */
static int get_wc(struct pair *p, int i, struct ibv_wc *wc, double timeout_s)
{
	double end = now() + timeout_s;

	for (;;) {
		int n = ibv_poll_cq(p->cq[i], 1, wc);

		if (n == 1)
			return 0;
		if (n < 0) {
			snprintf(why, sizeof(why), "ibv_poll_cq(%s) = %d", i ? "B" : "A", n);
			return -1;
		}
		if (now() > end) {
			snprintf(why, sizeof(why), "no completion on %s within %.0f s",
				 i ? "B" : "A", timeout_s);
			return -1;
		}
		usleep(100);
	}
}

/* Expects a completion with wr_id and status on side i. */
static int expect(struct pair *p, int i, uint64_t wr_id, enum ibv_wc_status st,
		  char *got, size_t gotlen)
{
	struct ibv_wc wc;

	if (get_wc(p, i, &wc, 20))
		return -1;
	snprintf(got + strlen(got), gotlen - strlen(got), "%s%s wr %llu %s",
		 *got ? ", " : "", i ? "B" : "A", (unsigned long long)wc.wr_id,
		 ibv_wc_status_str(wc.status));
	if (wc.wr_id != wr_id || wc.status != st) {
		snprintf(why, sizeof(why), "%s: expected wr %llu %s, got wr %llu %s (%d, vendor_err 0x%x)",
			 i ? "B" : "A", (unsigned long long)wr_id,
			 ibv_wc_status_str(st), (unsigned long long)wc.wr_id,
			 ibv_wc_status_str(wc.status), wc.status, wc.vendor_err);
		return -1;
	}
	return 0;
}

/* No further completion on either side (after a short grace period). */
static int expect_quiet(struct pair *p)
{
	struct ibv_wc wc;

	usleep(200000);
	for (int i = 0; i < 2; i++)
		if (ibv_poll_cq(p->cq[i], 1, &wc) == 1) {
			snprintf(why, sizeof(why), "extra completion on %s: wr %llu %s",
				 i ? "B" : "A", (unsigned long long)wc.wr_id,
				 ibv_wc_status_str(wc.status));
			return -1;
		}
	return 0;
}

static int post_send(struct pair *p, int i, enum ibv_wr_opcode op,
		     uint64_t laddr, uint32_t len, uint32_t lkey,
		     uint64_t raddr, uint32_t rkey, uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = laddr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	int err;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	err = ibv_post_send(p->qp[i], &wr, &bad);
	if (err)
		snprintf(why, sizeof(why), "ibv_post_send: %s", strerror(err));
	return err ? -1 : 0;
}

static int post_recv(struct pair *p, int i, uint32_t off, uint32_t len,
		     uint64_t wr_id)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)p->buf[i] + off, .length = len,
		.lkey = p->mr[i]->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 },
		*bad;
	int err = ibv_post_recv(p->qp[i], &wr, &bad);

	if (err)
		snprintf(why, sizeof(why), "ibv_post_recv: %s", strerror(err));
	return err ? -1 : 0;
}

#define A_ADDR(p, off) ((uintptr_t)(p)->buf[0] + (off))
#define B_ADDR(p, off) ((uintptr_t)(p)->buf[1] + (off))

/* An RDMA op from A towards B that must fail with want on A; B's memory
 * must be unchanged. */
static int remote_err(struct pair *p, enum ibv_wr_opcode op, uint64_t raddr,
		      uint32_t rkey, uint32_t len, enum ibv_wc_status want,
		      char *got, size_t gl)
{
	uint8_t *copy = malloc(BUF);
	int rc;

	memcpy(copy, p->buf[1], BUF);
	memset(p->buf[0], 0x11, 4096);
	rc = post_send(p, 0, op, A_ADDR(p, 0), len, p->mr[0]->lkey, raddr,
		       rkey, 1) ?: expect(p, 0, 1, want, got, gl) ?: expect_quiet(p);
	if (!rc && memcmp(copy, p->buf[1], BUF)) {
		snprintf(why, sizeof(why), "B's buffer changed");
		rc = -1;
	}
	free(copy);
	return rc;
}

static int c_bad_rkey(char *got, size_t gl)
{
	struct pair *p = pair_new(ACC_ALL, 7, 12);
	int rc = remote_err(p, IBV_WR_RDMA_WRITE, B_ADDR(p, 0),
			    p->mr[1]->rkey ^ 0x5a5a00, 64, IBV_WC_REM_ACCESS_ERR, got, gl);
	pair_free(p);
	return rc;
}

static int c_bad_rkey_read(char *got, size_t gl)
{
	struct pair *p = pair_new(ACC_ALL, 7, 12);
	int rc = remote_err(p, IBV_WR_RDMA_READ, B_ADDR(p, 0),
			    p->mr[1]->rkey ^ 0x5a5a00, 64, IBV_WC_REM_ACCESS_ERR, got, gl);
	pair_free(p);
	return rc;
}

static int c_write_oob(char *got, size_t gl)
{
	struct pair *p = pair_new(ACC_ALL, 7, 12);
	/* 64 bytes starting 8 bytes before the end of B's MR */
	int rc = remote_err(p, IBV_WR_RDMA_WRITE, B_ADDR(p, BUF - 8),
			    p->mr[1]->rkey, 64, IBV_WC_REM_ACCESS_ERR, got, gl);
	pair_free(p);
	return rc;
}

static int c_write_below(char *got, size_t gl)
{
	struct pair *p = pair_new(ACC_ALL, 7, 12);
	/* starts 8 bytes before B's MR */
	int rc = remote_err(p, IBV_WR_RDMA_WRITE, B_ADDR(p, 0) - 8,
			    p->mr[1]->rkey, 64, IBV_WC_REM_ACCESS_ERR, got, gl);
	pair_free(p);
	return rc;
}

static int c_read_oob(char *got, size_t gl)
{
	struct pair *p = pair_new(ACC_ALL, 7, 12);
	int rc = remote_err(p, IBV_WR_RDMA_READ, B_ADDR(p, BUF - 8),
			    p->mr[1]->rkey, 64, IBV_WC_REM_ACCESS_ERR, got, gl);
	pair_free(p);
	return rc;
}

static int c_no_remote_write(char *got, size_t gl)
{
	struct pair *p = pair_new(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
				  7, 12);
	int rc = remote_err(p, IBV_WR_RDMA_WRITE, B_ADDR(p, 0), p->mr[1]->rkey,
			    64, IBV_WC_REM_ACCESS_ERR, got, gl);
	pair_free(p);
	return rc;
}

static int c_no_remote_read(char *got, size_t gl)
{
	struct pair *p = pair_new(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
				  7, 12);
	int rc = remote_err(p, IBV_WR_RDMA_READ, B_ADDR(p, 0), p->mr[1]->rkey,
			    64, IBV_WC_REM_ACCESS_ERR, got, gl);
	pair_free(p);
	return rc;
}

/* Local SGE beyond the end of A's MR. */
static int c_lkey_oob(char *got, size_t gl)
{
	struct pair *p = pair_new(ACC_ALL, 7, 12);
	int rc = post_recv(p, 1, 0, 4096, 7) ?:
		post_send(p, 0, IBV_WR_SEND, A_ADDR(p, BUF - 8), 64,
			  p->mr[0]->lkey, 0, 0, 1) ?:
		expect(p, 0, 1, IBV_WC_LOC_PROT_ERR, got, gl);

	/* B's receive stays posted; nothing else may complete on B */
	rc = rc ?: expect_quiet(p);
	pair_free(p);
	return rc;
}

static int c_bad_lkey(char *got, size_t gl)
{
	struct pair *p = pair_new(ACC_ALL, 7, 12);
	int rc = post_recv(p, 1, 0, 4096, 7) ?:
		post_send(p, 0, IBV_WR_SEND, A_ADDR(p, 0), 64,
			  p->mr[0]->lkey ^ 0x5a5a00, 0, 0, 1) ?:
		expect(p, 0, 1, IBV_WC_LOC_PROT_ERR, got, gl) ?: expect_quiet(p);
	pair_free(p);
	return rc;
}

/* READ into a local SGE past the end of A's MR. */
static int c_read_lkey_oob(char *got, size_t gl)
{
	struct pair *p = pair_new(ACC_ALL, 7, 12);
	int rc = post_send(p, 0, IBV_WR_RDMA_READ, A_ADDR(p, BUF - 8), 64,
			   p->mr[0]->lkey, B_ADDR(p, 0), p->mr[1]->rkey, 1) ?:
		expect(p, 0, 1, IBV_WC_LOC_PROT_ERR, got, gl) ?: expect_quiet(p);
	pair_free(p);
	return rc;
}

static int c_rnr_zero(char *got, size_t gl)
{
	struct pair *p = pair_new(ACC_ALL, 0, 1);	/* rnr_retry 0 */
	int rc = post_send(p, 0, IBV_WR_SEND, A_ADDR(p, 0), 64, p->mr[0]->lkey,
			   0, 0, 1) ?:
		expect(p, 0, 1, IBV_WC_RNR_RETRY_EXC_ERR, got, gl) ?:
		expect_quiet(p);
	pair_free(p);
	return rc;
}

/* rnr_retry > 0: the receive posted late still gets the message. */
static int rnr_late(uint8_t retry, uint8_t timer, useconds_t delay,
		    char *got, size_t gl)
{
	struct pair *p = pair_new(ACC_ALL, retry, timer);
	int rc;

	memset(p->buf[0], 0x77, 64);
	rc = post_send(p, 0, IBV_WR_SEND, A_ADDR(p, 0), 64, p->mr[0]->lkey, 0, 0, 1);
	if (!rc) {
		usleep(delay);
		rc = post_recv(p, 1, 100, 4096, 7) ?:
			expect(p, 0, 1, IBV_WC_SUCCESS, got, gl) ?:
			expect(p, 1, 7, IBV_WC_SUCCESS, got, gl) ?: expect_quiet(p);
	}
	if (!rc)
		for (int k = 0; k < 64; k++)
			if (p->buf[1][100 + k] != 0x77) {
				snprintf(why, sizeof(why), "payload byte %d wrong", k);
				rc = -1;
				break;
			}
	pair_free(p);
	return rc;
}

static int c_rnr_late_infinite(char *got, size_t gl)
{
	return rnr_late(7, 14, 100000, got, gl);	/* 1.28 ms NAKs, 100 ms */
}

static int c_rnr_late_finite(char *got, size_t gl)
{
	/* 3 retries of 163.84 ms each; the receive comes after 100 ms */
	return rnr_late(3, 28, 100000, got, gl);
}

/* 64-byte SEND into a 16-byte receive: LOC_LEN_ERR on B; A sees the
 * NAK Invalid Request (IBTA 9.7.5.2.2 / C9-98: REM_INV_REQ_ERR). */
static int c_recv_too_small(char *got, size_t gl)
{
	struct pair *p = pair_new(ACC_ALL, 7, 12);
	int rc = post_recv(p, 1, 0, 16, 7) ?:
		post_send(p, 0, IBV_WR_SEND, A_ADDR(p, 0), 64, p->mr[0]->lkey,
			  0, 0, 1) ?:
		expect(p, 1, 7, IBV_WC_LOC_LEN_ERR, got, gl) ?:
		expect(p, 0, 1, IBV_WC_REM_INV_REQ_ERR, got, gl) ?: expect_quiet(p);
	pair_free(p);
	return rc;
}

/* After an error the QP is in ERROR: later WRs (send and receive) flush. */
static int c_flush_after_error(char *got, size_t gl)
{
	struct pair *p = pair_new(ACC_ALL, 7, 12);
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	int rc = post_send(p, 0, IBV_WR_RDMA_WRITE, A_ADDR(p, 0), 64,
			   p->mr[0]->lkey, B_ADDR(p, 0), p->mr[1]->rkey ^ 0x5a5a00, 1) ?:
		expect(p, 0, 1, IBV_WC_REM_ACCESS_ERR, got, gl);

	if (!rc && (ibv_query_qp(p->qp[0], &a, IBV_QP_STATE, &ia) ||
		    a.qp_state != IBV_QPS_ERR)) {
		snprintf(why, sizeof(why), "A's state after the error: %d, not ERR",
			 a.qp_state);
		rc = -1;
	}
	rc = rc ?: post_send(p, 0, IBV_WR_SEND, A_ADDR(p, 0), 8, p->mr[0]->lkey,
			     0, 0, 2) ?:
		post_send(p, 0, IBV_WR_RDMA_WRITE, A_ADDR(p, 0), 8,
			  p->mr[0]->lkey, B_ADDR(p, 0), p->mr[1]->rkey, 3) ?:
		post_recv(p, 0, 0, 64, 4) ?:
		expect(p, 0, 2, IBV_WC_WR_FLUSH_ERR, got, gl) ?:
		expect(p, 0, 3, IBV_WC_WR_FLUSH_ERR, got, gl) ?:
		expect(p, 0, 4, IBV_WC_WR_FLUSH_ERR, got, gl) ?: expect_quiet(p);
	pair_free(p);
	return rc;
}

/* modify_qp(ERR) flushes posted receives and later sends. */
static int c_flush_modify_err(char *got, size_t gl)
{
	struct pair *p = pair_new(ACC_ALL, 7, 12);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	int rc = post_recv(p, 1, 0, 64, 5) ?: post_recv(p, 1, 64, 64, 6);

	if (!rc && ibv_modify_qp(p->qp[1], &a, IBV_QP_STATE)) {
		snprintf(why, sizeof(why), "modify_qp(ERR): %s", strerror(errno));
		rc = -1;
	}
	rc = rc ?: expect(p, 1, 5, IBV_WC_WR_FLUSH_ERR, got, gl) ?:
		expect(p, 1, 6, IBV_WC_WR_FLUSH_ERR, got, gl) ?:
		post_send(p, 1, IBV_WR_SEND, B_ADDR(p, 0), 8, p->mr[1]->lkey, 0, 0, 8) ?:
		expect(p, 1, 8, IBV_WC_WR_FLUSH_ERR, got, gl) ?:
		post_recv(p, 1, 0, 64, 9) ?:
		expect(p, 1, 9, IBV_WC_WR_FLUSH_ERR, got, gl) ?: expect_quiet(p);
	pair_free(p);
	return rc;
}

/*
 * On-demand paging after munmap: an ODP MR's pages go with the mapping
 * (the driver's MMU notifier sends ODP_UNMAP before the pages are freed),
 * and the device's next access to that range faults, the fault cannot be
 * resolved (no mapping), and the work request completes in error instead
 * of reaching freed memory. First an access that works, so the range was
 * mapped on the device when munmap came.
 */
#define ODP_LEN 8192

static uint8_t *odp_region(struct ibv_mr **mr)
{
	uint8_t *at = mmap(NULL, ODP_LEN, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (at == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	memset(at, 0x33, ODP_LEN);
	*mr = ibv_reg_mr(pd, at, ODP_LEN, ACC_ALL | IBV_ACCESS_ON_DEMAND);
	if (!*mr)
		snprintf(why, sizeof(why), "ibv_reg_mr(ON_DEMAND): %s",
			 strerror(errno));
	return at;
}

/*
 * A's access to an ODP MR, twice: before munmap it must succeed (the fault
 * resolved, the data moved), after munmap fail with @want and move
 * nothing. @send: A SENDs from the ODP buffer to B (a requester fault);
 * else A writes into it (a responder fault: RNR NAKs, then the NAK).
 */
static int odp_munmap(bool send, enum ibv_wc_status want, char *got,
		      size_t gl)
{
	struct pair *p = pair_new(ACC_ALL, 7, 12);
	struct ibv_mr *mr;
	uint8_t *at = odp_region(&mr);
	uint64_t va = (uintptr_t)at + 4096;
	int rc = mr ? 0 : -1;

	memset(p->buf[0], 0x44, 64);
	for (uint64_t wr = 1; wr <= 2 && !rc; wr++) {
		if (wr == 2)
			munmap(at, ODP_LEN);
		if (send)
			rc = post_recv(p, 1, 4096 * wr, 4096, 10 + wr) ?:
			     post_send(p, 0, IBV_WR_SEND, va, 64, mr->lkey, 0,
				       0, wr);
		else
			rc = post_send(p, 0, IBV_WR_RDMA_WRITE, A_ADDR(p, 0),
				       64, p->mr[0]->lkey, va, mr->rkey, wr);
		rc = rc ?: expect(p, 0, wr, wr == 2 ? want : IBV_WC_SUCCESS,
				  got, gl);
		if (rc || wr == 2)
			continue;
		rc = send ? expect(p, 1, 11, IBV_WC_SUCCESS, got, gl) : 0;
		if (!rc && (send ? p->buf[1][4096] : at[4096]) != (send ? 0x33 : 0x44)) {
			snprintf(why, sizeof(why), "no data moved before munmap");
			rc = -1;
		}
	}
	rc = rc ?: expect_quiet(p);
	if (!mr || rc)
		munmap(at, ODP_LEN);	/* not yet unmapped: harmless again */
	if (mr && ibv_dereg_mr(mr))
		die("ibv_dereg_mr: %s", strerror(errno));
	pair_free(p);
	return rc;
}

static int c_odp_munmap_send(char *got, size_t gl)
{
	return odp_munmap(true, IBV_WC_LOC_PROT_ERR, got, gl);
}

static int c_odp_munmap_write(char *got, size_t gl)
{
	return odp_munmap(false, IBV_WC_REM_ACCESS_ERR, got, gl);
}

static const struct {
	const char *name;
	int (*fn)(char *got, size_t gl);
} cases[] = {
	{ "bad_rkey", c_bad_rkey },
	{ "bad_rkey_read", c_bad_rkey_read },
	{ "write_oob", c_write_oob },
	{ "write_below", c_write_below },
	{ "read_oob", c_read_oob },
	{ "no_remote_write", c_no_remote_write },
	{ "no_remote_read", c_no_remote_read },
	{ "lkey_oob", c_lkey_oob },
	{ "bad_lkey", c_bad_lkey },
	{ "read_lkey_oob", c_read_lkey_oob },
	{ "rnr_zero", c_rnr_zero },
	{ "rnr_late_infinite", c_rnr_late_infinite },
	{ "rnr_late_finite", c_rnr_late_finite },
	{ "recv_too_small", c_recv_too_small },
	{ "flush_after_error", c_flush_after_error },
	{ "flush_modify_err", c_flush_modify_err },
	{ "odp_munmap_send", c_odp_munmap_send },
	{ "odp_munmap_write", c_odp_munmap_write },
};

static void run(int k)
{
	char got[512] = "";

	why[0] = 0;
	if (cases[k].fn(got, sizeof(got))) {
		printf("FAIL %s: %s [completions: %s]\n", cases[k].name, why, got);
		failures++;
	} else {
		printf("PASS %s: %s\n", cases[k].name, got);
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *dev = NULL;
	int opt, n = (int)(sizeof(cases) / sizeof(cases[0])), ran = 0;

	while ((opt = getopt(argc, argv, "d:g:l")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'g': gid_idx = atoi(optarg); break;
		case 'l':
			for (int k = 0; k < n; k++)
				puts(cases[k].name);
			return 0;
		default:
			fprintf(stderr, "usage: %s [-d dev] [-g gid] [-l] [case...]\n", argv[0]);
			return 2;
		}
	}
	open_dev(dev);
	printf("%s gid index %d\n", ibv_get_device_name(ctx->device), gid_idx);
	if (optind == argc) {
		for (int k = 0; k < n; k++, ran++)
			run(k);
	} else {
		for (int a = optind; a < argc; a++) {
			int k;

			for (k = 0; k < n && strcmp(cases[k].name, argv[a]); k++)
				;
			if (k == n)
				die("unknown case %s", argv[a]);
			run(k);
			ran++;
		}
	}
	printf("ohca_rc_negative: %d passed, %d failed\n", ran - failures, failures);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return failures ? 1 : 0;
}
