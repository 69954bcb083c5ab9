// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca_rc_nosyscall: proves that the RC fast path (ibv_post_send,
 * ibv_post_recv, ibv_poll_cq) makes no system calls.
 *
 * After all setup (two RC QPs on one device connected to each other through
 * the port's RoCEv2 GID, MRs registered, buffers touched, one warm-up round)
 * the process enters seccomp strict mode: from then on only read, write,
 * _exit and sigreturn are allowed and any other system call kills it with
 * SIGKILL.  It then runs ITERS operations (SEND, RDMA WRITE, RDMA READ in
 * turn, sizes 1..4096, busy polling, every payload checked), reports with
 * write(2) and leaves with SYS_exit (exit_group is not allowed).
 *
 *   ohca_rc_nosyscall [-d ohca0] [-n 3000] [-G] GID_INDEX
 *
 * -G calls getpid() in the loop: the negative control, killed by SIGKILL.
 * Exit 0 and "ohca_rc_nosyscall: OK" on success; 1 on a data/completion
 * error (reported with write), 2 on a setup error.
 */
#include <getopt.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ohca_rc_common.h"

#define BUF 8192
#define DEPTH 16

static struct ibv_cq *cq[2];
static struct ibv_qp *qp[2];
static struct ibv_mr *mr[2];
static uint8_t *buf[2];

static void out(const char *s)
{
	size_t n = strlen(s);

	while (n) {
		ssize_t w = write(1, s, n);

		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

static char *utoa(char *p, unsigned long v)
{
	char t[24];
	int n = 0;

	do {
		t[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = t[--n];
	*p = 0;
	return p;
}

static void fail(const char *what, unsigned long iter, unsigned long val)
{
	char line[160], *p = line;

	p = stpcpy(p, "ohca_rc_nosyscall: FAIL ");
	p = stpcpy(p, what);
	p = stpcpy(p, " at op ");
	p = utoa(p, iter);
	p = stpcpy(p, " value ");
	p = utoa(p, val);
	stpcpy(p, "\n");
	out(line);
	syscall(SYS_exit, 1);
	__builtin_unreachable();
}

/* Busy-polls cq[i] for one completion; checks status and wr_id. */
static void wait_wc(int i, uint64_t wr_id, enum ibv_wc_opcode op,
		    unsigned long iter)
{
	struct ibv_wc wc;
	unsigned long spins = 0;
	int n;

	while ((n = ibv_poll_cq(cq[i], 1, &wc)) == 0)
		if (++spins > 4000000000ul)
			fail("completion timeout", iter, (unsigned long)i);
	if (n < 0)
		fail("ibv_poll_cq error", iter, (unsigned long)-n);
	if (wc.status != IBV_WC_SUCCESS)
		fail("completion status", iter, wc.status);
	if (wc.wr_id != wr_id)
		fail("wr_id", iter, wc.wr_id);
	if (wc.opcode != op)
		fail("opcode", iter, wc.opcode);
}

static void post_send(int i, enum ibv_wr_opcode op, uint32_t off,
		      uint32_t len, uint64_t wr_id, unsigned long iter)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf[i] + off, .length = len, .lkey = mr[i]->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	int err;

	if (op != IBV_WR_SEND) {
		wr.wr.rdma.remote_addr = (uintptr_t)buf[!i] + BUF / 2 + off;
		wr.wr.rdma.rkey = mr[!i]->rkey;
	}
	err = ibv_post_send(qp[i], &wr, &bad);
	if (err)
		fail("ibv_post_send", iter, (unsigned long)err);
}

static void post_recv(int i, uint32_t off, uint32_t len, uint64_t wr_id,
		      unsigned long iter)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf[i] + off, .length = len, .lkey = mr[i]->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 },
		*bad;
	int err = ibv_post_recv(qp[i], &wr, &bad);

	if (err)
		fail("ibv_post_recv", iter, (unsigned long)err);
}

/* One operation; the payload is a pattern depending on iter, checked at
 * the destination. */
static void one_op(unsigned long iter, int bad_syscall)
{
	uint32_t len = 1 + (uint32_t)((iter * 2654435761u) % 4096);
	uint8_t pat = (uint8_t)(iter * 7 + 1);
	uint64_t id = iter + 1;
	uint8_t *src, *dst;

	if (bad_syscall)
		syscall(SYS_getpid);	/* forbidden in strict mode: SIGKILL */
	switch (iter % 3) {
	case 0:	/* SEND A -> B: A's [0, len) into B's [BUF/2, BUF/2+len) */
		src = buf[0];
		dst = buf[1] + BUF / 2;
		memset(src, pat, len);
		post_recv(1, BUF / 2, BUF / 2, id, iter);
		post_send(0, IBV_WR_SEND, 0, len, id, iter);
		wait_wc(0, id, IBV_WC_SEND, iter);
		wait_wc(1, id, IBV_WC_RECV, iter);
		break;
	case 1:	/* WRITE B -> A */
		src = buf[1];
		dst = buf[0] + BUF / 2;
		memset(src, pat, len);
		post_send(1, IBV_WR_RDMA_WRITE, 0, len, id, iter);
		wait_wc(1, id, IBV_WC_RDMA_WRITE, iter);
		break;
	default: /* READ: A reads B's [BUF/2, ...) into A's [0, len) */
		src = buf[1] + BUF / 2;
		dst = buf[0];
		memset(src, pat, len);
		post_send(0, IBV_WR_RDMA_READ, 0, len, id, iter);
		wait_wc(0, id, IBV_WC_RDMA_READ, iter);
		break;
	}
	for (uint32_t k = 0; k < len; k++)
		if (dst[k] != pat)
			fail("payload byte", iter, k);
}

int main(int argc, char **argv)
{
	const char *dev = NULL;
	unsigned long iters = 3000;
	int bad_syscall = 0, opt;
	char line[200], *p;

	while ((opt = getopt(argc, argv, "d:n:G")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'n': iters = strtoul(optarg, NULL, 0); break;
		case 'G': bad_syscall = 1; break;
		default:
			fprintf(stderr, "usage: %s [-d dev] [-n iters] [-G] GID_INDEX\n",
				argv[0]);
			return 2;
		}
	}
	if (optind < argc)
		gid_idx = atoi(argv[optind]);

	open_dev(dev);
	for (int i = 0; i < 2; i++) {
		buf[i] = aligned_alloc(4096, BUF);
		if (!buf[i])
			die("out of memory");
		memset(buf[i], 0, BUF);		/* touched before strict mode */
		mr[i] = ibv_reg_mr(pd, buf[i], BUF, ACC_ALL);
		if (!mr[i])
			die("ibv_reg_mr: %s", strerror(errno));
		cq[i] = ibv_create_cq(ctx, 2 * DEPTH, NULL, NULL, 0);
		if (!cq[i])
			die("ibv_create_cq: %s", strerror(errno));
		qp[i] = make_qp(cq[i], DEPTH);
	}
	for (int i = 0; i < 2; i++)
		connect_qp(qp[i], qp[!i]->qp_num, ACC_ALL, 7, 12);
	/* warm-up round outside strict mode (lazy binding, first faults) */
	for (unsigned long i = 0; i < 3; i++)
		one_op(i, 0);
	printf("qp %u <-> qp %u on %s gid index %d; entering seccomp strict mode "
	       "for %lu ops%s\n", qp[0]->qp_num, qp[1]->qp_num,
	       ibv_get_device_name(ctx->device), gid_idx, iters,
	       bad_syscall ? " (with getpid() in the loop: must be killed)" : "");
	fflush(stdout);

	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT))
		die("prctl(PR_SET_SECCOMP, STRICT): %s", strerror(errno));
	out("seccomp strict mode on\n");
	for (unsigned long i = 0; i < iters; i++)
		one_op(i, bad_syscall);

	p = stpcpy(line, "ohca_rc_nosyscall: OK ");
	p = utoa(p, iters);
	p = stpcpy(p, " ops (SEND ");
	p = utoa(p, (iters + 2) / 3);
	p = stpcpy(p, ", WRITE ");
	p = utoa(p, (iters + 1) / 3);
	p = stpcpy(p, ", READ ");
	p = utoa(p, iters / 3);
	stpcpy(p, ") in seccomp strict mode\n");
	out(line);
	syscall(SYS_exit, 0);
	return 0;
}
