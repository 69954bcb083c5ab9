// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * ohca_rc_loopback: two RC QPs on one ohca port, connected to each other
 * through the device (RoCEv2 to the port's own GID), moving random data
 * with SEND, SEND_WITH_IMM, RDMA WRITE, RDMA WRITE_WITH_IMM and RDMA READ
 * at odd sizes, offsets and SGE counts, inline and not, signaled and
 * unsignaled, in both directions.  Every byte of every destination area is
 * compared with its expected image (data where it should land, the canary
 * everywhere else) and every completion is checked (wr_id, status, opcode,
 * byte_len, imm, qp_num).  A last phase waits for completions through a
 * completion channel (req_notify_cq + ibv_get_cq_event).  Then (unless
 * -E) a WRITE with a bad rkey must fail with REM_ACCESS_ERR, the next WR
 * be flushed, and after RESET and a new connection traffic runs again.
 *
 *   ohca_rc_loopback [-d ibdev] [-p port] [-n iterations] [-s seed]
 *                    [-m max_msg] [-E] gid_index
 *
 * gid_index: a RoCEv2 GID of the port (e.g. the IPv4-mapped one); both QPs
 * use it as source and destination.  Exits 0 when everything matched,
 * 1 on any mismatch or failure, 2 on bad usage.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "ohca_rc_connect.h"

#define AREA		(128 * 1024)	/* per side: local area + remote area */
#define BUF_SIZE	(2 * AREA)
#define MAX_SGE		4
#define MAX_INLINE	64
#define QUEUE_DEPTH	32
#define CANARY		0x5a
#define TIMEOUT_MS	5000

struct side {
	const char *name;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;	/* [0, AREA): local SGEs; [AREA, 2 AREA): RDMA target */
	uint8_t *expect;	/* expected image of buf */
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_comp_channel *channel;
static struct side sides[2];
static uint64_t rng_state;
static unsigned int max_msg = 20000;
static uint64_t next_wr_id = 1;
static unsigned long n_ops[8];
static uint32_t mtu_bytes;
static uint8_t port_num;
static int gid_idx;
static union ibv_gid port_gid;
static enum ibv_mtu port_mtu;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	printf("FAIL: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

static uint64_t rnd(void)	/* xorshift64* */
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static uint32_t rnd_below(uint32_t n)
{
	return n ? (uint32_t)(rnd() % n) : 0;
}

static void fill_random(uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)rnd();
}

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *c = NULL;

	if (!list)
		die("ibv_get_device_list: %s", strerror(errno));
	for (int i = 0; list[i]; i++) {
		const char *n = ibv_get_device_name(list[i]);

		if (name ? !strcmp(n, name) : !strncmp(n, "ohca", 4)) {
			c = ibv_open_device(list[i]);
			if (!c)
				die("ibv_open_device(%s): %s", n,
				    strerror(errno));
			break;
		}
	}
	ibv_free_device_list(list);
	if (!c)
		die("no device %s", name ? name : "ohca*");
	return c;
}

static void connect_qp(struct ibv_qp *qp, uint32_t dest_qpn, uint8_t port,
		       int gid_index, const union ibv_gid *gid,
		       enum ibv_mtu mtu)
{
	const struct rc_path path = {
		.port = port, .sgid_index = (uint8_t)gid_index, .dgid = *gid,
		.mtu = mtu, .dest_qpn = dest_qpn,
		.rq_psn = 0x1234, .sq_psn = 0x1234, .access = ACC_ALL,
		.rd_atomic = 4, .min_rnr_timer = 12, .timeout = 14,
		.retry_cnt = 7, .rnr_retry = 7,
	};
	const char *step;
	int err = rc_connect(qp, &path, &step);

	if (err)
		die("qp %u %s (dest qpn %u, gid index %d): %s", qp->qp_num,
		    step, dest_qpn, gid_index, strerror(err));
}

static void setup(const char *dev, uint8_t port, int gid_index)
{
	struct ibv_port_attr pattr;
	union ibv_gid gid;

	ctx = open_dev(dev);
	if (ibv_query_port(ctx, port, &pattr))
		die("ibv_query_port(%u): %s", port, strerror(errno));
	if (pattr.state != IBV_PORT_ACTIVE)
		die("port %u is not active (state %d)", port, pattr.state);
	if (ibv_query_gid(ctx, port, gid_index, &gid))
		die("ibv_query_gid(%u, %d): %s", port, gid_index,
		    strerror(errno));
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd: %s", strerror(errno));
	channel = ibv_create_comp_channel(ctx);
	if (!channel)
		die("ibv_create_comp_channel: %s", strerror(errno));

	for (int i = 0; i < 2; i++) {
		struct side *s = &sides[i];
		struct ibv_qp_init_attr init = {
			.qp_type = IBV_QPT_RC,
			.cap = {
				.max_send_wr = QUEUE_DEPTH,
				.max_recv_wr = QUEUE_DEPTH,
				.max_send_sge = MAX_SGE,
				.max_recv_sge = MAX_SGE,
				.max_inline_data = MAX_INLINE,
			},
		};

		s->name = i ? "B" : "A";
		s->buf = aligned_alloc(4096, BUF_SIZE);
		s->expect = malloc(BUF_SIZE);
		if (!s->buf || !s->expect)
			die("out of memory");
		memset(s->buf, CANARY, BUF_SIZE);
		memset(s->expect, CANARY, BUF_SIZE);
		s->mr = ibv_reg_mr(pd, s->buf, BUF_SIZE,
				   IBV_ACCESS_LOCAL_WRITE |
					   IBV_ACCESS_REMOTE_WRITE |
					   IBV_ACCESS_REMOTE_READ);
		if (!s->mr)
			die("ibv_reg_mr: %s", strerror(errno));
		/* one CQ per side, for its sends and its receives */
		s->cq = ibv_create_cq(ctx, 2 * QUEUE_DEPTH, NULL, channel, 0);
		if (!s->cq)
			die("ibv_create_cq: %s", strerror(errno));
		init.send_cq = s->cq;
		init.recv_cq = s->cq;
		s->qp = ibv_create_qp(pd, &init);
		if (!s->qp)
			die("ibv_create_qp: %s", strerror(errno));
		if (init.cap.max_send_sge < MAX_SGE ||
		    init.cap.max_recv_sge < MAX_SGE ||
		    init.cap.max_inline_data < MAX_INLINE ||
		    init.cap.max_send_wr < QUEUE_DEPTH ||
		    init.cap.max_recv_wr < QUEUE_DEPTH)
			die("qp caps smaller than requested");
	}
	port_num = port;
	gid_idx = gid_index;
	port_gid = gid;
	port_mtu = pattr.active_mtu;
	for (int i = 0; i < 2; i++)
		connect_qp(sides[i].qp, sides[!i].qp->qp_num, port, gid_index,
			   &gid, pattr.active_mtu);
	mtu_bytes = 128u << pattr.active_mtu;
	printf("qp A %u <-> qp B %u on %s port %u gid index %d, mtu %d\n",
	       sides[0].qp->qp_num, sides[1].qp->qp_num,
	       ibv_get_device_name(ctx->device), port, gid_index,
	       128 << pattr.active_mtu);
}

/*
 * Split len bytes into n SGEs laid out in order in the local area at a
 * random odd start with random gaps; each SGE gets at least one byte
 * unless len < n (then fewer SGEs).  Returns the SGE count.
 */
static int make_sges(struct side *s, uint32_t len, int n, uint32_t slack,
		     struct ibv_sge *sge)
{
	uint32_t total = len + slack, off, left = total;

	if (total == 0)
		return 0;
	if ((uint32_t)n > total)
		n = (int)total;
	off = rnd_below(4096) | 1;
	for (int i = 0; i < n; i++) {
		uint32_t piece = i == n - 1 ? left :
			1 + rnd_below(left - (uint32_t)(n - 1 - i));

		sge[i].addr = (uintptr_t)s->buf + off;
		sge[i].length = piece;
		sge[i].lkey = s->mr->lkey;
		off += piece + rnd_below(64);
		left -= piece;
	}
	if (off > AREA)
		die("internal: SGEs beyond the local area");
	return n;
}

/* Copy len bytes of a message into the expected image along sges. */
static void scatter_expect(struct side *s, const struct ibv_sge *sge, int n,
			   const uint8_t *msg, uint32_t len)
{
	for (int i = 0; i < n && len; i++) {
		uint32_t l = sge[i].length < len ? sge[i].length : len;
		size_t off = (uintptr_t)sge[i].addr - (uintptr_t)s->buf;

		memcpy(s->expect + off, msg, l);
		msg += l;
		len -= l;
	}
}

/* Gather a message from the (already randomised) buffer along sges. */
static void gather(struct side *s, const struct ibv_sge *sge, int n,
		   uint8_t *msg)
{
	for (int i = 0; i < n; i++) {
		memcpy(msg, (void *)(uintptr_t)sge[i].addr, sge[i].length);
		msg += sge[i].length;
		(void)s;
	}
}

static void check_side(struct side *s, const char *what, unsigned long iter)
{
	for (size_t i = 0; i < BUF_SIZE; i++) {
		if (s->buf[i] != s->expect[i]) {
			size_t j = i;

			while (j < BUF_SIZE && s->buf[j] != s->expect[j])
				j++;
			die("iteration %lu %s: side %s byte %zu%s: 0x%02x, expected 0x%02x (%zu bytes differ from there)",
			    iter, what, s->name, i % AREA,
			    i >= AREA ? " of the RDMA area" : "", s->buf[i],
			    s->expect[i], j - i);
		}
	}
}

static void reset_side(struct side *s)
{
	memset(s->buf, CANARY, BUF_SIZE);
	memset(s->expect, CANARY, BUF_SIZE);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int use_events;

/* Wait for one completion on s's CQ, busy polling or through the channel. */
static void get_wc(struct side *s, struct ibv_wc *wc, const char *what,
		   unsigned long iter)
{
	uint64_t deadline = now_ms() + TIMEOUT_MS;
	int n;

	for (;;) {
		n = ibv_poll_cq(s->cq, 1, wc);
		if (n < 0)
			die("iteration %lu %s: ibv_poll_cq: %d", iter, what, n);
		if (n == 1)
			return;
		if (now_ms() > deadline)
			die("iteration %lu %s: no completion on side %s within %d ms",
			    iter, what, s->name, TIMEOUT_MS);
		if (use_events) {
			struct pollfd pfd = { .fd = channel->fd,
					      .events = POLLIN };
			struct ibv_cq *ev_cq;
			void *ev_ctx;

			if (ibv_req_notify_cq(s->cq, 0))
				die("ibv_req_notify_cq failed");
			/* a completion may have arrived before the arm */
			n = ibv_poll_cq(s->cq, 1, wc);
			if (n == 1)
				return;
			if (poll(&pfd, 1, TIMEOUT_MS) != 1)
				die("iteration %lu %s: no CQ event for side %s within %d ms",
				    iter, what, s->name, TIMEOUT_MS);
			if (ibv_get_cq_event(channel, &ev_cq, &ev_ctx))
				die("ibv_get_cq_event: %s", strerror(errno));
			ibv_ack_cq_events(ev_cq, 1);
			if (ev_cq != sides[0].cq && ev_cq != sides[1].cq)
				die("CQ event for an unknown CQ");
		}
	}
}

static const char *op_name(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:		return "SEND";
	case IBV_WR_SEND_WITH_IMM:	return "SEND_IMM";
	case IBV_WR_RDMA_WRITE:		return "WRITE";
	case IBV_WR_RDMA_WRITE_WITH_IMM: return "WRITE_IMM";
	case IBV_WR_RDMA_READ:		return "READ";
	default:			return "?";
	}
}

static void check_wc(const struct ibv_wc *wc, uint64_t wr_id,
		     enum ibv_wc_opcode opcode, int check_len,
		     uint32_t byte_len, int with_imm, uint32_t imm,
		     const struct side *s, const char *what,
		     unsigned long iter)
{
	if (wc->status != IBV_WC_SUCCESS)
		die("iteration %lu %s: side %s completion status %s (%d), vendor_err %u, opcode %d",
		    iter, what, s->name, ibv_wc_status_str(wc->status),
		    wc->status, wc->vendor_err, wc->opcode);
	if (wc->wr_id != wr_id)
		die("iteration %lu %s: side %s wr_id 0x%" PRIx64 ", expected 0x%" PRIx64,
		    iter, what, s->name, wc->wr_id, wr_id);
	if (wc->opcode != opcode)
		die("iteration %lu %s: side %s opcode %d, expected %d", iter,
		    what, s->name, wc->opcode, opcode);
	if (wc->qp_num != s->qp->qp_num)
		die("iteration %lu %s: side %s qp_num %u, expected %u", iter,
		    what, s->name, wc->qp_num, s->qp->qp_num);
	if (check_len && wc->byte_len != byte_len)
		die("iteration %lu %s: side %s byte_len %u, expected %u", iter,
		    what, s->name, wc->byte_len, byte_len);
	/* wc_flags and imm_data are defined for receive completions only */
	if (with_imm >= 0 && !!(wc->wc_flags & IBV_WC_WITH_IMM) != with_imm)
		die("iteration %lu %s: side %s wc_flags 0x%x, IBV_WC_WITH_IMM expected %s",
		    iter, what, s->name, wc->wc_flags, with_imm ? "set" : "clear");
	if (with_imm > 0 && ntohl(wc->imm_data) != imm)
		die("iteration %lu %s: side %s imm 0x%08x, expected 0x%08x",
		    iter, what, s->name, ntohl(wc->imm_data), imm);
}

/*
 * One operation from side req to side resp, preceded by nunsig unsignaled
 * RDMA WRITEs (retired by the signaled WR's completion).
 */
static void one_op(unsigned long iter, enum ibv_wr_opcode op, int ri,
		   int nunsig, long force_len)
{
	struct side *req = &sides[ri], *resp = &sides[!ri];
	struct ibv_send_wr wr[5], *bad_s;
	struct ibv_recv_wr rwr, *bad_r;
	struct ibv_sge ssge[5][MAX_SGE], rsge[MAX_SGE];
	static uint8_t msg[AREA], umsg[4][AREA / 8];
	uint32_t len, imm = (uint32_t)rnd(), ulen[4], uoff[4];
	int ns, nr = 0, inl = 0, with_imm, is_recv;
	char what[96];
	struct ibv_wc wc;
	int err;

	reset_side(req);
	reset_side(resp);
	if (force_len >= 0)
		len = (uint32_t)force_len;
	else
		len = rnd_below(8) == 0 ? rnd_below(8) : rnd_below(max_msg + 1);
	with_imm = op == IBV_WR_SEND_WITH_IMM ||
		   op == IBV_WR_RDMA_WRITE_WITH_IMM;
	is_recv = op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM ||
		  op == IBV_WR_RDMA_WRITE_WITH_IMM;
	if (op != IBV_WR_RDMA_READ && len <= MAX_INLINE && rnd_below(2))
		inl = 1;

	/* unsignaled WRITEs first: into the lower part of resp's RDMA area */
	for (int u = 0; u < nunsig; u++) {
		int n;

		ulen[u] = 1 + rnd_below(AREA / 16);
		uoff[u] = (uint32_t)u * (AREA / 8) + rnd_below(64);
		n = make_sges(req, ulen[u], 1 + (int)rnd_below(MAX_SGE), 0,
			      ssge[u]);
		/* the source pieces overlap neither the main op's (below
		 * AREA / 2) nor each other's: a 16 KiB slot each above */
		for (int i = 0; i < n; i++)
			ssge[u][i].addr += AREA / 2 + (uint32_t)u * (AREA / 8);
		fill_random(umsg[u], ulen[u]);
		{
			const uint8_t *p = umsg[u];

			for (int i = 0; i < n; i++) {
				memcpy((void *)(uintptr_t)ssge[u][i].addr, p,
				       ssge[u][i].length);
				p += ssge[u][i].length;
			}
		}
		memset(&wr[u], 0, sizeof(wr[u]));
		wr[u].wr_id = next_wr_id++;
		wr[u].opcode = IBV_WR_RDMA_WRITE;
		wr[u].sg_list = ssge[u];
		wr[u].num_sge = n;
		wr[u].wr.rdma.remote_addr =
			(uintptr_t)resp->buf + AREA + uoff[u];
		wr[u].wr.rdma.rkey = resp->mr->rkey;
		wr[u].next = &wr[u + 1];
		memcpy(resp->expect + AREA + uoff[u], umsg[u], ulen[u]);
	}
	/* the copies of the unsignaled sources are expected on req too */
	for (int u = 0; u < nunsig; u++)
		for (int i = 0; i < wr[u].num_sge; i++) {
			size_t off = (uintptr_t)ssge[u][i].addr -
				     (uintptr_t)req->buf;

			memcpy(req->expect + off,
			       (void *)(uintptr_t)ssge[u][i].addr,
			       ssge[u][i].length);
		}

	/* the main operation */
	memset(&wr[nunsig], 0, sizeof(wr[nunsig]));
	wr[nunsig].wr_id = next_wr_id++;
	wr[nunsig].opcode = op;
	wr[nunsig].send_flags = IBV_SEND_SIGNALED |
				(inl ? IBV_SEND_INLINE : 0) |
				(rnd_below(4) == 0 ? IBV_SEND_FENCE : 0) |
				(rnd_below(4) == 0 ? IBV_SEND_SOLICITED : 0);
	wr[nunsig].imm_data = htonl(imm);
	ns = make_sges(req, len, 1 + (int)rnd_below(MAX_SGE), 0,
		       ssge[nunsig]);
	wr[nunsig].sg_list = ssge[nunsig];
	wr[nunsig].num_sge = ns;
	snprintf(what, sizeof(what), "%s %s->%s len %u sges %d%s%s +%d unsig",
		 op_name(op), req->name, resp->name, len, ns,
		 inl ? " inline" : "", use_events ? " events" : "", nunsig);

	if (op == IBV_WR_RDMA_READ) {
		/* source: random bytes in resp's RDMA area (above the
		 * unsignaled writes' targets) */
		uint32_t roff = AREA / 2 + rnd_below(AREA / 2 - max_msg - 1);

		fill_random(resp->buf + AREA + roff, len);
		memcpy(resp->expect + AREA + roff, resp->buf + AREA + roff,
		       len);
		memcpy(msg, resp->buf + AREA + roff, len);
		scatter_expect(req, ssge[nunsig], ns, msg, len);
		wr[nunsig].wr.rdma.remote_addr =
			(uintptr_t)resp->buf + AREA + roff;
		wr[nunsig].wr.rdma.rkey = resp->mr->rkey;
	} else {
		fill_random(msg, len);
		{
			const uint8_t *p = msg;

			for (int i = 0; i < ns; i++) {
				memcpy((void *)(uintptr_t)ssge[nunsig][i].addr,
				       p, ssge[nunsig][i].length);
				p += ssge[nunsig][i].length;
			}
		}
		/* the source stays as written */
		for (int i = 0; i < ns; i++) {
			size_t off = (uintptr_t)ssge[nunsig][i].addr -
				     (uintptr_t)req->buf;

			memcpy(req->expect + off,
			       (void *)(uintptr_t)ssge[nunsig][i].addr,
			       ssge[nunsig][i].length);
		}
		gather(req, ssge[nunsig], ns, msg);
		if (op == IBV_WR_RDMA_WRITE ||
		    op == IBV_WR_RDMA_WRITE_WITH_IMM) {
			uint32_t roff = AREA / 2 +
					rnd_below(AREA / 2 - max_msg - 1);

			wr[nunsig].wr.rdma.remote_addr =
				(uintptr_t)resp->buf + AREA + roff;
			wr[nunsig].wr.rdma.rkey = resp->mr->rkey;
			memcpy(resp->expect + AREA + roff, msg, len);
		}
	}

	if (is_recv) {
		memset(&rwr, 0, sizeof(rwr));
		rwr.wr_id = next_wr_id++;
		if (op == IBV_WR_RDMA_WRITE_WITH_IMM && rnd_below(2)) {
			nr = 0;	/* WRITE_IMM needs a WQE, not its buffers */
		} else {
			nr = make_sges(resp, len, 1 + (int)rnd_below(MAX_SGE),
				       rnd_below(100), rsge);
			if (op != IBV_WR_RDMA_WRITE_WITH_IMM)
				scatter_expect(resp, rsge, nr, msg, len);
		}
		rwr.sg_list = rsge;
		rwr.num_sge = nr;
		err = ibv_post_recv(resp->qp, &rwr, &bad_r);
		if (err)
			die("iteration %lu %s: ibv_post_recv: %s", iter, what,
			    strerror(err));
	}

	err = ibv_post_send(req->qp, &wr[0], &bad_s);
	if (err)
		die("iteration %lu %s: ibv_post_send: %s (bad_wr %td)", iter,
		    what, strerror(err), bad_s - wr);

	/* completions: the signaled WR on req, the receive on resp */
	get_wc(req, &wc, what, iter);
	check_wc(&wc, wr[nunsig].wr_id,
		 op == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ :
		 op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM ?
					  IBV_WC_RDMA_WRITE : IBV_WC_SEND,
		 op == IBV_WR_RDMA_READ, len, -1, 0, req, what, iter);
	if (is_recv) {
		get_wc(resp, &wc, what, iter);
		check_wc(&wc, rwr.wr_id,
			 op == IBV_WR_RDMA_WRITE_WITH_IMM ?
				 IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV,
			 1, len, with_imm, imm, resp, what, iter);
	}
	/* nothing else may have completed */
	for (int i = 0; i < 2; i++)
		if (ibv_poll_cq(sides[i].cq, 1, &wc) != 0)
			die("iteration %lu %s: extra completion on side %s: wr_id 0x%" PRIx64 " status %s opcode %d",
			    iter, what, sides[i].name, wc.wr_id,
			    ibv_wc_status_str(wc.status), wc.opcode);

	check_side(req, what, iter);
	check_side(resp, what, iter);
	n_ops[op]++;
}

/*
 * An RDMA WRITE with a wrong rkey must complete with REM_ACCESS_ERR and
 * put the requester in the error state, where the next WR is flushed;
 * then both QPs go through RESET and are connected again (the provider
 * and the device restart their ring indices at 0).
 */
static void error_and_recovery(unsigned long iter)
{
	struct side *a = &sides[0], *b = &sides[1];
	struct ibv_send_wr wr, *bad_s;
	struct ibv_qp_attr attr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	uint64_t deadline;
	int err;

	reset_side(a);
	reset_side(b);
	fill_random(a->buf, 100);
	memcpy(a->expect, a->buf, 100);
	sge = (struct ibv_sge){ (uintptr_t)a->buf, 100, a->mr->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = next_wr_id++;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.wr.rdma.remote_addr = (uintptr_t)b->buf + AREA;
	wr.wr.rdma.rkey = b->mr->rkey ^ 0x5500;	/* another index */
	err = ibv_post_send(a->qp, &wr, &bad_s);
	if (err)
		die("error phase: ibv_post_send: %s", strerror(err));
	get_wc(a, &wc, "WRITE with a bad rkey", iter);
	if (wc.wr_id != wr.wr_id || wc.status != IBV_WC_REM_ACCESS_ERR)
		die("error phase: WRITE with a bad rkey completed with wr_id 0x%" PRIx64 " status %s (%d) vendor_err %u, expected REM_ACCESS_ERR",
		    wc.wr_id, ibv_wc_status_str(wc.status), wc.status,
		    wc.vendor_err);
	/* the requester is in error now: the next WR is flushed */
	wr.wr_id = next_wr_id++;
	wr.wr.rdma.rkey = b->mr->rkey;
	err = ibv_post_send(a->qp, &wr, &bad_s);
	if (err)
		die("error phase: ibv_post_send after the error: %s",
		    strerror(err));
	get_wc(a, &wc, "WRITE after the error", iter);
	if (wc.wr_id != wr.wr_id || wc.status != IBV_WC_WR_FLUSH_ERR)
		die("error phase: WRITE after the error completed with wr_id 0x%" PRIx64 " status %s (%d), expected WR_FLUSH_ERR",
		    wc.wr_id, ibv_wc_status_str(wc.status), wc.status);
	/* nothing was written on B; B may report no completion at all */
	deadline = now_ms() + 200;
	while (now_ms() < deadline)
		if (ibv_poll_cq(b->cq, 1, &wc) > 0 &&
		    wc.status != IBV_WC_WR_FLUSH_ERR)
			die("error phase: side B completion status %s",
			    ibv_wc_status_str(wc.status));
	check_side(a, "error phase", iter);
	check_side(b, "error phase", iter);

	for (int i = 0; i < 2; i++) {
		memset(&attr, 0, sizeof(attr));
		attr.qp_state = IBV_QPS_RESET;
		err = ibv_modify_qp(sides[i].qp, &attr, IBV_QP_STATE);
		if (err)
			die("error phase: qp %u to RESET: %s",
			    sides[i].qp->qp_num, strerror(err));
	}
	for (int i = 0; i < 2; i++)
		connect_qp(sides[i].qp, sides[!i].qp->qp_num, port_num,
			   gid_idx, &port_gid, port_mtu);
	for (int i = 0; i < 2; i++)
		if (ibv_poll_cq(sides[i].cq, 1, &wc) != 0)
			die("error phase: completion on side %s after RESET: wr_id 0x%" PRIx64 " status %s",
			    sides[i].name, wc.wr_id,
			    ibv_wc_status_str(wc.status));
	printf("error phase: REM_ACCESS_ERR, WR_FLUSH_ERR, RESET and reconnect ok\n");
}

static void usage(const char *argv0)
{
	printf("usage: %s [-d ibdev] [-p port] [-n iterations] [-s seed] [-m max_msg] [-E] gid_index\n",
	       argv0);
	exit(2);
}

int main(int argc, char **argv)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
	};
	unsigned long iters = 500, iter = 0;
	const char *dev = NULL;
	uint64_t seed = 0;
	int port = 1, gid_index, opt, no_error_phase = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "d:p:n:s:m:Eh")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'n': iters = strtoul(optarg, NULL, 0); break;
		case 's': seed = strtoull(optarg, NULL, 0); break;
		case 'm': max_msg = (unsigned int)strtoul(optarg, NULL, 0); break;
		case 'E': no_error_phase = 1; break;
		default: usage(argv[0]);
		}
	}
	if (optind != argc - 1)
		usage(argv[0]);
	gid_index = atoi(argv[optind]);
	if (port < 1 || port > 255 || gid_index < 0 ||
	    max_msg > AREA / 2 - 4096 - 64 * MAX_SGE)
		usage(argv[0]);
	if (!seed)
		seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	rng_state = seed;
	printf("ohca_rc_loopback: seed 0x%" PRIx64 " (-s to repeat), %lu iterations, messages up to %u bytes\n",
	       seed, iters, max_msg);

	setup(dev, (uint8_t)port, gid_index);

	/* every opcode in both directions first, at the edge sizes */
	{
		const long lens[] = { 1, 0, mtu_bytes - 1, mtu_bytes,
				      mtu_bytes + 1, 3 * mtu_bytes + 7,
				      max_msg };

		for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
			for (int d = 0; d < 2; d++)
				for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++)
					if (lens[l] <= (long)max_msg)
						one_op(iter++, ops[o], d, 0,
						       lens[l]);
	}
	/* random mix, busy polling */
	for (; iter < iters; iter++)
		one_op(iter, ops[rnd_below(5)], (int)rnd_below(2),
		       rnd_below(4) == 0 ? 1 + (int)rnd_below(4) : 0, -1);
	/* through the completion channel */
	use_events = 1;
	for (unsigned long e = 0; e < 20; e++, iter++)
		one_op(iter, ops[rnd_below(5)], (int)rnd_below(2), 0, -1);
	use_events = 0;
	/* an error, RESET, and traffic again on the restarted rings */
	if (!no_error_phase) {
		error_and_recovery(iter++);
		for (unsigned long e = 0; e < 50; e++, iter++)
			one_op(iter, ops[rnd_below(5)], (int)rnd_below(2),
			       rnd_below(4) == 0 ? 1 + (int)rnd_below(4) : 0,
			       -1);
	}

	printf("ops: SEND %lu SEND_IMM %lu WRITE %lu WRITE_IMM %lu READ %lu\n",
	       n_ops[IBV_WR_SEND], n_ops[IBV_WR_SEND_WITH_IMM],
	       n_ops[IBV_WR_RDMA_WRITE], n_ops[IBV_WR_RDMA_WRITE_WITH_IMM],
	       n_ops[IBV_WR_RDMA_READ]);

	for (int i = 0; i < 2; i++) {
		if (ibv_destroy_qp(sides[i].qp))
			die("ibv_destroy_qp: %s", strerror(errno));
	}
	for (int i = 0; i < 2; i++) {
		if (ibv_destroy_cq(sides[i].cq))
			die("ibv_destroy_cq: %s", strerror(errno));
		if (ibv_dereg_mr(sides[i].mr))
			die("ibv_dereg_mr: %s", strerror(errno));
		free(sides[i].buf);
		free(sides[i].expect);
	}
	if (ibv_destroy_comp_channel(channel))
		die("ibv_destroy_comp_channel: %s", strerror(errno));
	if (ibv_dealloc_pd(pd))
		die("ibv_dealloc_pd: %s", strerror(errno));
	if (ibv_close_device(ctx))
		die("ibv_close_device: %s", strerror(errno));
	printf("ohca_rc_loopback: OK (%lu operations)\n", iter);
	return 0;
}
