// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * ohca_holder: holds RDMA resources on a device while its driver goes away.
 *
 * Opens the device, creates a PD, an MR, a CQ and an RC QP connected to
 * itself (RTS), proves the fast path with one RDMA WRITE through the mmapped
 * doorbell page, prints READY and waits for an asynchronous event.  Removing
 * the driver must disassociate the context: the process gets
 * IBV_EVENT_DEVICE_FATAL (port and GID events may come first), and its later
 * verbs fail with an error instead of hanging or crashing.  Prints
 * FATAL-EVENT and VERBS-FAIL-CLEANLY; exits 0 only if both happened.
 *
 *   ohca_holder DEVICE GID_INDEX [TIMEOUT_S]
 *
 * The lifecycle tests run one per driver reload, 50 in a row: a C program
 * starts in a fraction of the time the Python bindings take under TCG.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

#include "ohca_rc_connect.h"

#define BUF_SIZE	8192
#define MSG		"lifecycle"
#define MSG_LEN		72	/* MSG eight times */
#define TARGET_OFF	4096

static int fail(const char *what, int err)
{
	printf("FAIL: %s: %s\n", what, strerror(err));
	return 1;
}

static struct ibv_context *open_device(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i;

	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

/* One signaled RDMA WRITE from the MR to itself, to its completion. */
static int write_self(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_mr *mr)
{
	char *buf = mr->addr;
	struct ibv_sge sge = {
		.addr = (uintptr_t)buf, .length = MSG_LEN, .lkey = mr->lkey,
	};
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)buf + TARGET_OFF,
			     .rkey = mr->rkey },
	};
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	struct timespec t0, t;
	int i, n;

	for (i = 0; i < MSG_LEN; i++)
		buf[i] = MSG[i % (sizeof(MSG) - 1)];
	n = ibv_post_send(qp, &wr, &bad);
	if (n)
		return fail("post_send", n);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		n = ibv_poll_cq(cq, 1, &wc);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (n == 0 && t.tv_sec - t0.tv_sec < 10);
	if (n != 1) {
		printf("FAIL: no completion for the RDMA WRITE\n");
		return 1;
	}
	if (wc.status != IBV_WC_SUCCESS ||
	    memcmp(buf, buf + TARGET_OFF, MSG_LEN)) {
		printf("FAIL: RDMA WRITE status %d (%s)\n", wc.status,
		       ibv_wc_status_str(wc.status));
		return 1;
	}
	return 0;
}

/* Waits for IBV_EVENT_DEVICE_FATAL, allowing port and GID events first. */
static int wait_fatal(struct ibv_context *ctx, int timeout_s)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	enum ibv_event_type kind;

	for (;;) {
		if (poll(&pfd, 1, timeout_s * 1000) != 1) {
			printf("FAIL: no IBV_EVENT_DEVICE_FATAL in %d s\n",
			       timeout_s);
			return 1;
		}
		if (ibv_get_async_event(ctx, &ev))
			return fail("get_async_event", errno);
		kind = ev.event_type;
		ibv_ack_async_event(&ev);
		printf("event %d (%s)\n", kind, ibv_event_type_str(kind));
		if (kind == IBV_EVENT_DEVICE_FATAL)
			return 0;
		if (kind != IBV_EVENT_GID_CHANGE &&
		    kind != IBV_EVENT_PORT_ACTIVE &&
		    kind != IBV_EVENT_PORT_ERR &&
		    kind != IBV_EVENT_LID_CHANGE) {
			printf("FAIL: expected IBV_EVENT_DEVICE_FATAL\n");
			return 1;
		}
	}
}

/* A verb that created obj after disassociation: it must have failed. */
static int expect_failed(const char *what, const void *obj)
{
	if (obj) {
		printf("FAIL: %s succeeded after disassociation\n", what);
		return 0;
	}
	printf("%s failed as expected: %s\n", what, strerror(errno));
	return 1;
}

/* After disassociation: slow-path verbs fail, nothing completes. */
static int verbs_fail(struct ibv_context *ctx, struct ibv_pd *pd,
		      struct ibv_qp *qp, struct ibv_cq *cq)
{
	static char spare[4096];
	struct ibv_send_wr wr = { .opcode = IBV_WR_RDMA_WRITE };
	struct ibv_send_wr *bad;
	struct ibv_wc wc;
	int failed = 0;

	failed += expect_failed("alloc_pd", ibv_alloc_pd(ctx));
	failed += expect_failed("create_cq", ibv_create_cq(ctx, 4, NULL, NULL, 0));
	failed += expect_failed("reg_mr", ibv_reg_mr(pd, spare, sizeof(spare), ACC_ALL));
	/* the doorbell page is dead: posting may fail or go nowhere */
	if (ibv_post_send(qp, &wr, &bad))
		printf("post_send failed\n");
	if (ibv_poll_cq(cq, 1, &wc) > 0) {
		printf("FAIL: a completion after disassociation\n");
		return 1;
	}
	return failed == 3 ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct rc_path path = {
		.port = 1, .mtu = IBV_MTU_1024, .access = ACC_ALL,
		.rd_atomic = 1, .min_rnr_timer = 12, .timeout = 14,
		.retry_cnt = 7, .rnr_retry = 7,
	};
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	const char *step;
	int timeout_s, err;
	void *buf;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: %s DEVICE GID_INDEX [TIMEOUT_S]\n", argv[0]);
		return 2;
	}
	path.sgid_index = atoi(argv[2]);
	timeout_s = argc > 3 ? atoi(argv[3]) : 120;
	setvbuf(stdout, NULL, _IOLBF, 0);

	ctx = open_device(argv[1]);
	if (!ctx)
		return fail("open device", errno ? errno : ENODEV);
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		return fail("alloc_pd", errno);
	buf = aligned_alloc(4096, BUF_SIZE);
	if (!buf)
		return fail("buffer", ENOMEM);
	memset(buf, 0, BUF_SIZE);
	mr = ibv_reg_mr(pd, buf, BUF_SIZE, ACC_ALL);
	if (!mr)
		return fail("reg_mr", errno);
	cq = ibv_create_cq(ctx, 16, NULL, NULL, 0);
	if (!cq)
		return fail("create_cq", errno);
	init.send_cq = cq;
	init.recv_cq = cq;
	qp = ibv_create_qp(pd, &init);
	if (!qp)
		return fail("create_qp", errno);
	err = ibv_query_gid(ctx, path.port, path.sgid_index, &path.dgid);
	if (err)
		return fail("query_gid", errno);
	path.dest_qpn = qp->qp_num;
	err = rc_connect(qp, &path, &step);
	if (err)
		return fail(step, err);
	if (write_self(qp, cq, mr))
		return 1;
	printf("READY\n");

	if (wait_fatal(ctx, timeout_s))
		return 1;
	printf("FATAL-EVENT\n");
	if (verbs_fail(ctx, pd, qp, cq))
		return 1;
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	free(buf);
	printf("VERBS-FAIL-CLEANLY\n");
	return 0;
}
