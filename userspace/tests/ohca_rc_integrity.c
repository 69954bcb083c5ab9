// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * ohca_rc_integrity: RC data integrity between two nodes (two VMs over the
 * wire, or two processes on one port looped back inside the device).
 *
 *   server: ohca_rc_integrity [options]
 *   client: ohca_rc_integrity [options] server_ip
 *
 * The client sends its parameters (seed, iterations, MTU, maximum message
 * size) over TCP; both ends then exchange QP number, PSN, GID, rkey and
 * address like ibv_rc_pingpong, and derive every iteration's plan from the
 * seed, so each end knows what must land in its memory without shipping
 * the data.  On an InfiniBand port the QPs are addressed by the peer's
 * LID (exchanged too) without a GRH, as the fabric's switches route.  An
 * iteration picks a direction and posts a batch of 1..8 work
 * requests (SEND, SEND_WITH_IMM, RDMA WRITE, WRITE_WITH_IMM, READ; odd
 * sizes, offsets and SGE counts, inline, unsignaled) in one chain.  Each
 * end checks every completion (wr_id, status, opcode, byte_len, imm, in
 * order, nothing missing, nothing extra) and every byte of its buffers
 * (data where it must land, the canary everywhere else).
 *
 * With -u (the client's choice, adopted by the server) the QPs are UC
 * instead: no READs, and each batch ends with a zero-length SEND, since on
 * UC a send completion says only that the data left; that last SEND's
 * receive completion tells the responder that the batch before it has
 * landed (UC keeps a QP's messages in order). On a lossless path every
 * byte must arrive as on RC.
 *
 * Waits are bounded (-t): a completion or a peer that does not arrive is
 * reported, with the QP state, instead of hanging, so the program can run
 * over a lossy wire with long retries.  The summary's max_gap_ms is the
 * longest time this end went without a completion or a finished iteration
 * (what a peer's migration or a retransmission costs it); each progress
 * line (every 50 iterations) gives the longest since the line before,
 * and after a SIGUSR1 a line before the summary the longest that overlaps
 * the 3 s before the signal.  The last line is one summary:
 * "ohca_rc_integrity: PASS ..." or "ohca_rc_integrity: FAIL ...".
 * Exit 0 when everything matched, 1 on any mismatch, error or timeout,
 * 2 on bad usage or setup failure.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "ohca_rc_connect.h"

#define AREA		(1024 * 1024)	/* local SGE area, then RDMA area */
#define BUF_SIZE	(2 * AREA)
#define MAX_SGE		4
#define MAX_INLINE	64
#define MAX_BATCH	8
#define QUEUE_DEPTH	64
#define CANARY		0x5a
#define MAX_MSG_LIMIT	(AREA / MAX_BATCH - 8192)

enum { OP_SEND, OP_SEND_IMM, OP_WRITE, OP_WRITE_IMM, OP_READ, N_OPS };
static const char *const op_names[N_OPS] = {
	"SEND", "SEND_IMM", "WRITE", "WRITE_IMM", "READ"
};

/* What both ends exchange at the start (network byte order). */
struct conn_info {
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint32_t mtu;		/* bytes */
	uint64_t addr;		/* the RDMA area */
	uint8_t gid[16];
	uint16_t lid;		/* InfiniBand: the port's LID; RoCE: 0 */
	uint16_t pad[3];
};

/* The client's parameters, adopted by the server. */
struct params {
	uint64_t seed;
	uint32_t iters;
	uint32_t mtu;
	uint32_t max_msg;
	uint32_t flags;		/* PRM_UC */
};

#define PRM_UC		1u	/* UC QPs (-u) */

struct wr_plan {
	int op;
	uint32_t len;
	int nsge, nrsge, inl, signaled;
	uint32_t imm;
	struct ibv_sge sge[MAX_SGE];	/* requester's SGEs */
	struct ibv_sge rsge[MAX_SGE];	/* responder's receive SGEs */
	uint32_t roff;			/* offset in the RDMA area */
	uint64_t wr_id, recv_wr_id;
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qp;
static struct ibv_mr *mr;
static uint8_t *buf, *expect, *msg;
static struct conn_info local, remote;
static struct params prm;
static int sock = -1, is_client, timeout_s = 60;
static int gid_idx = 1, verbose;
static uint8_t port_num = 1;
static uint8_t qp_timeout = 14, retry_cnt = 7;
static unsigned long n_ops[N_OPS], n_bytes, n_wc;
static unsigned long cur_iter;
/*
 * The longest stall between two completions (a peer's migration, a retry):
 * in the whole run, and since the last progress line (printed in it).
 */
static uint64_t t_start_ms, last_wc_ms, max_gap_ms, line_gap_ms;

/*
 * SIGUSR1 marks a moment (a test sends it when a peer's migration has
 * completed): the longest stall that overlaps the MARK_WINDOW_MS before it
 * is printed at the end.  The stalls of the last window are kept to look
 * back when the signal comes; the one in progress then is measured when it
 * ends.
 */
#define MARK_WINDOW_MS 3000
#define MARK_MIN_GAP_MS 10
#define MARK_RING 256
static volatile sig_atomic_t mark_seen;
static uint64_t mark_ms;
static int mark_looked_back;
/*
 * A stall and what it was made of: the time this end spent in its TCP
 * syncs with the peer (waiting for the peer's program), the longest time
 * between two polls of the CQ (this process not running: the guest or
 * its host stalled) and the wait that ended it.
 */
struct stall {
	uint64_t start, end, tcp_ms, poll_ms;
	char what[48];
};
static struct stall gap_ring[MARK_RING], mark_gap, cur_gap;
/* every stall of at least MARK_LIST_MS in the window, for the host to
 * find the one the stop fell in (the longest may be another) */
#define MARK_LIST_MS 50
#define MARK_LIST 16
static struct stall mark_list[MARK_LIST];
static unsigned int mark_listed;
static unsigned int gap_next;
static uint64_t last_poll_ms;
static const char *role;
static int uc;			/* prm.flags & PRM_UC */

static void print_stall(const char *which, const struct stall *g)
{
	printf("%s: %s from %" PRId64 " to %" PRId64 " ms after SIGUSR1, %" PRIu64 " ms of it in TCP syncs, longest between two CQ polls %" PRIu64 " ms, ended by %s\n",
	       role, which, (int64_t)(g->start - mark_ms),
	       (int64_t)(g->end - mark_ms), g->tcp_ms, g->poll_ms, g->what);
}

static void summary(const char *result, const char *why)
{
	if (mark_seen) {
		const struct stall *g = &mark_gap;
		uint64_t len = g->end - g->start;

		printf("%s: longest gap in the %u ms before SIGUSR1: %" PRIu64 " ms\n",
		       role, MARK_WINDOW_MS, len);
		/* (its place against the signal, for the host's timeline) */
		if (len)
			print_stall("that gap", g);
		for (unsigned int i = 0; i < mark_listed; i++)
			print_stall("a gap", &mark_list[i]);
	}
	printf("ohca_rc_integrity: %s role=%s mtu=%u seed=0x%" PRIx64
	       " iterations=%lu/%u completions=%lu bytes=%lu SEND=%lu SEND_IMM=%lu WRITE=%lu WRITE_IMM=%lu READ=%lu max_gap_ms=%" PRIu64 " qp=%s%s%s\n",
	       result, role, prm.mtu, prm.seed, cur_iter, prm.iters, n_wc,
	       n_bytes, n_ops[OP_SEND], n_ops[OP_SEND_IMM], n_ops[OP_WRITE],
	       n_ops[OP_WRITE_IMM], n_ops[OP_READ], max_gap_ms,
	       prm.flags & PRM_UC ? "UC" : "RC", why ? ": " : "",
	       why ? why : "");
	fflush(stdout);
}

static void fail_code(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));
static void fail_code(int code, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	printf("%s: %s\n", code == 2 ? "SETUP" : "ERROR", why);
	if (qp) {
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;

		if (!ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
			printf("qp %u state %d\n", qp->qp_num, a.qp_state);
	}
	/* tell the peer, so it reports instead of waiting for its timeout */
	if (sock >= 0) {
		char f = 'F';

		/* the peer may be gone already: nothing to do then */
		if (write(sock, &f, 1) < 0)
			sock = -1;
	}
	summary("FAIL", why);
	exit(code);
}
#define fail(...) fail_code(1, __VA_ARGS__)
#define setup_fail(...) fail_code(2, __VA_ARGS__)

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* splitmix64: per-iteration and per-message streams from the seed */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t rng;

static uint64_t rnd(void)
{
	rng = mix(rng);
	return rng;
}

static uint32_t rnd_below(uint32_t n)
{
	return n ? (uint32_t)(rnd() % n) : 0;
}

/* The message of WR w in iteration it: the same on both ends. */
static void make_msg(unsigned long it, int w, uint32_t len)
{
	uint64_t s = mix(prm.seed ^ mix(((uint64_t)it << 8) | (uint64_t)w));

	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t v = s = mix(s);

		memcpy(msg + i, &v, len - i < 8 ? len - i : 8);
	}
}

/* --- TCP side channel ---------------------------------------------------- */

static void sock_io(void *p, size_t len, int out, const char *what)
{
	uint8_t *b = p;
	uint64_t t0 = now_ms();

	while (len) {
		struct pollfd pfd = { .fd = sock,
				      .events = out ? POLLOUT : POLLIN };
		ssize_t n;
		int r;

		/* the peer may itself wait up to timeout_s for completions */
		do
			r = poll(&pfd, 1, (2 * timeout_s + 10) * 1000);
		while (r < 0 && errno == EINTR);	/* SIGUSR1 */
		if (r != 1)
			fail("iteration %lu: peer silent for %d s (%s)",
			     cur_iter, 2 * timeout_s + 10, what);
		n = out ? write(sock, b, len) : read(sock, b, len);
		if (n <= 0)
			fail("iteration %lu: TCP %s failed (%s): %s", cur_iter,
			     out ? "write" : "read", what,
			     n ? strerror(errno) : "peer closed");
		b += n;
		len -= (size_t)n;
	}
	cur_gap.tcp_ms += now_ms() - t0;
	snprintf(cur_gap.what, sizeof(cur_gap.what), "TCP %s", what);
}

/* One byte each way; 'F' from the peer means it failed. */
static void sync_peer(const char *what)
{
	char c = 'S', r;

	sock_io(&c, 1, 1, what);
	sock_io(&r, 1, 0, what);
	if (r != 'S')
		fail("iteration %lu: peer reported a failure (%s)", cur_iter,
		     what);
}

static void tcp_connect(const char *host, int port)
{
	char ps[16];
	struct addrinfo hints = { .ai_family = AF_INET,
				  .ai_socktype = SOCK_STREAM }, *res;
	uint64_t deadline = now_ms() + (uint64_t)timeout_s * 1000;
	int one = 1;

	snprintf(ps, sizeof(ps), "%d", port);
	if (host) {
		if (getaddrinfo(host, ps, &hints, &res))
			setup_fail("cannot resolve %s", host);
		/* the server may not listen yet: retry until the timeout */
		for (;;) {
			sock = socket(AF_INET, SOCK_STREAM, 0);
			if (sock < 0)
				setup_fail("socket: %s", strerror(errno));
			if (!connect(sock, res->ai_addr, res->ai_addrlen))
				break;
			close(sock);
			sock = -1;
			if (now_ms() > deadline)
				setup_fail("cannot connect to %s:%d", host,
					   port);
			usleep(200000);
		}
		freeaddrinfo(res);
	} else {
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_port = htons((uint16_t)port) };
		struct pollfd pfd;
		int l = socket(AF_INET, SOCK_STREAM, 0);

		if (l < 0 ||
		    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
		    bind(l, (struct sockaddr *)&sa, sizeof(sa)) || listen(l, 1))
			setup_fail("listen on port %d: %s", port,
				   strerror(errno));
		printf("listening on TCP port %d\n", port);
		pfd = (struct pollfd){ .fd = l, .events = POLLIN };
		if (poll(&pfd, 1, timeout_s * 1000) != 1)
			setup_fail("no client within %d s", timeout_s);
		sock = accept(l, NULL, NULL);
		if (sock < 0)
			setup_fail("accept: %s", strerror(errno));
		close(l);
	}
	setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* --- verbs setup ---------------------------------------------------------- */

static enum ibv_mtu mtu_enum(uint32_t bytes)
{
	switch (bytes) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	case 4096: return IBV_MTU_4096;
	default: return 0;
	}
}

static void open_verbs(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_port_attr pa;
	union ibv_gid gid;
	struct ibv_qp_init_attr init = {
		.cap = { .max_send_wr = QUEUE_DEPTH,
			 .max_recv_wr = QUEUE_DEPTH,
			 .max_send_sge = MAX_SGE, .max_recv_sge = MAX_SGE,
			 .max_inline_data = MAX_INLINE },
	};

	if (!list)
		setup_fail("ibv_get_device_list: %s", strerror(errno));
	for (int i = 0; list[i]; i++) {
		const char *n = ibv_get_device_name(list[i]);

		if (name ? !strcmp(n, name) : !strncmp(n, "ohca", 4)) {
			ctx = ibv_open_device(list[i]);
			break;
		}
	}
	ibv_free_device_list(list);
	if (!ctx)
		setup_fail("cannot open device %s", name ? name : "ohca*");
	if (ibv_query_port(ctx, port_num, &pa))
		setup_fail("ibv_query_port: %s", strerror(errno));
	if (pa.state != IBV_PORT_ACTIVE)
		setup_fail("port %u not active", port_num);
	if (!prm.mtu)
		prm.mtu = 128u << pa.active_mtu;
	if (!mtu_enum(prm.mtu))
		setup_fail("MTU %u is not an IB MTU", prm.mtu);
	if (mtu_enum(prm.mtu) > pa.active_mtu)
		setup_fail("MTU %u above the port's active MTU %u (raise the netdev MTU)",
			   prm.mtu, 128u << pa.active_mtu);
	if (ibv_query_gid(ctx, port_num, gid_idx, &gid))
		setup_fail("ibv_query_gid(%d): %s", gid_idx, strerror(errno));
	pd = ibv_alloc_pd(ctx);
	buf = aligned_alloc(4096, BUF_SIZE);
	expect = malloc(BUF_SIZE);
	msg = malloc(AREA);
	if (!pd || !buf || !expect || !msg)
		setup_fail("alloc_pd or memory: %s", strerror(errno));
	mr = ibv_reg_mr(pd, buf, BUF_SIZE, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	cq = ibv_create_cq(ctx, 2 * QUEUE_DEPTH, NULL, NULL, 0);
	if (!mr || !cq)
		setup_fail("reg_mr/create_cq: %s", strerror(errno));
	uc = !!(prm.flags & PRM_UC);
	init.qp_type = uc ? IBV_QPT_UC : IBV_QPT_RC;
	init.send_cq = cq;
	init.recv_cq = cq;
	qp = ibv_create_qp(pd, &init);
	if (!qp)
		setup_fail("ibv_create_qp: %s", strerror(errno));
	local.qpn = qp->qp_num;
	local.psn = (uint32_t)(mix(prm.seed ^ now_ms() ^ (uint64_t)getpid()) &
			       0xffffff);
	local.rkey = mr->rkey;
	local.addr = (uintptr_t)buf + AREA;
	local.mtu = prm.mtu;
	memcpy(local.gid, gid.raw, 16);
	if (pa.link_layer == IBV_LINK_LAYER_INFINIBAND)
		local.lid = pa.lid;
}

static void connect_qp(void)
{
	struct rc_path path = {
		.port = port_num, .sgid_index = (uint8_t)gid_idx,
		.mtu = mtu_enum(prm.mtu), .dest_qpn = remote.qpn,
		.rq_psn = remote.psn, .sq_psn = local.psn,
		.access = uc ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE : ACC_ALL,
		.rd_atomic = 4, .min_rnr_timer = 12, .timeout = qp_timeout,
		.retry_cnt = retry_cnt, .rnr_retry = 7,
	};
	const char *step;
	int err;

	memcpy(path.dgid.raw, remote.gid, 16);
	path.dlid = remote.lid;
	err = rc_connect(qp, &path, &step);
	if (err)
		setup_fail("%s: %s", step, strerror(err));
}

static void exchange(const char *host, int port)
{
	tcp_connect(host, port);
	if (is_client) {
		struct params p = prm;

		p.seed = htobe64(p.seed);
		p.iters = htonl(p.iters);
		p.mtu = htonl(p.mtu);
		p.max_msg = htonl(p.max_msg);
		p.flags = htonl(p.flags);
		sock_io(&p, sizeof(p), 1, "parameters");
	} else {
		sock_io(&prm, sizeof(prm), 0, "parameters");
		prm.seed = be64toh(prm.seed);
		prm.iters = ntohl(prm.iters);
		prm.mtu = ntohl(prm.mtu);
		prm.max_msg = ntohl(prm.max_msg);
		prm.flags = ntohl(prm.flags);
		if (prm.max_msg > MAX_MSG_LIMIT)
			setup_fail("client asks for messages of %u bytes", prm.max_msg);
	}
}

static void exchange_qp(void)
{
	struct conn_info out = local, in;

	out.qpn = htonl(out.qpn);
	out.psn = htonl(out.psn);
	out.rkey = htonl(out.rkey);
	out.mtu = htonl(out.mtu);
	out.addr = htobe64(out.addr);
	out.lid = htons(out.lid);
	sock_io(&out, sizeof(out), 1, "connection info");
	sock_io(&in, sizeof(in), 0, "connection info");
	remote = in;
	remote.qpn = ntohl(in.qpn);
	remote.psn = ntohl(in.psn);
	remote.rkey = ntohl(in.rkey);
	remote.mtu = ntohl(in.mtu);
	remote.addr = be64toh(in.addr);
	remote.lid = ntohs(in.lid);
	if (remote.mtu != prm.mtu)
		setup_fail("peer uses MTU %u, this end %u", remote.mtu, prm.mtu);
	if (!remote.lid != !local.lid)
		setup_fail("peer LID %u, this end's %u: one InfiniBand port, one RoCE",
			   remote.lid, local.lid);
	printf("%s: qp %u psn 0x%06x <-> peer qp %u psn 0x%06x, mtu %u, seed 0x%" PRIx64 ", %u iterations, messages up to %u bytes\n",
	       role, local.qpn, local.psn, remote.qpn, remote.psn, prm.mtu,
	       prm.seed, prm.iters, prm.max_msg);
	if (local.lid)
		printf("%s: by LID, %u -> %u\n", role, local.lid, remote.lid);
}

/* --- one iteration -------------------------------------------------------- */

/*
 * Lay n SGEs for len (+slack) bytes from *cursor in the local area at odd
 * offsets with gaps; returns the SGE count (0 for an empty message).
 */
static int lay_sges(uint32_t *cursor, uint32_t len, uint32_t slack, int n,
		    struct ibv_sge *sge)
{
	uint32_t total = len + slack, left = total, off = *cursor | 1;

	if (!total)
		return 0;
	if ((uint32_t)n > total)
		n = (int)total;
	for (int i = 0; i < n; i++) {
		uint32_t piece = i == n - 1 ? left :
				 1 + rnd_below(left - (uint32_t)(n - 1 - i));

		sge[i].addr = (uintptr_t)buf + off;
		sge[i].length = piece;
		sge[i].lkey = mr->lkey;
		off += piece + rnd_below(64);
		left -= piece;
	}
	*cursor = off + 1 + rnd_below(512);
	return n;
}

static uint32_t pick_len(void)
{
	switch (rnd_below(8)) {
	case 0:
		return rnd_below(9);
	case 1: {	/* around a multiple of the MTU */
		uint32_t l = prm.mtu * (1 + rnd_below(4)) - 2 + rnd_below(5);

		return l > prm.max_msg ? prm.max_msg : l;
	}
	case 2:
		return rnd_below(prm.max_msg + 1);
	default:
		return rnd_below((prm.max_msg < 8192 ? prm.max_msg : 8192) + 1);
	}
}

/*
 * The plan of iteration it, computed the same way on both ends: who
 * requests, the WRs with their SGEs (laid in the requester's local area,
 * receive SGEs in the responder's local area), RDMA offsets.  SGE
 * addresses are in this end's buffer; an end only posts its own.
 */
static int plan(unsigned long it, struct wr_plan *p, int *nwr)
{
	uint32_t lcur = (uint32_t)rnd_below(4096), rcur = 0, rdcur = 0;
	int requester;

	rng = mix(prm.seed ^ mix(it + 1));
	requester = (int)rnd_below(2);	/* 0: client, 1: server */
	*nwr = rnd_below(3) ? 1 + (int)rnd_below(3) :
			      1 + (int)rnd_below(MAX_BATCH);
	for (int w = 0; w < *nwr; w++) {
		struct wr_plan *q = &p[w];

		memset(q, 0, sizeof(*q));
		q->op = (int)rnd_below(uc ? OP_READ : N_OPS);
		q->len = pick_len();
		q->nsge = lay_sges(&lcur, q->len, 0, 1 + (int)rnd_below(MAX_SGE),
				   q->sge);
		q->inl = q->op != OP_READ && q->len <= MAX_INLINE &&
			 rnd_below(2);
		q->signaled = w == *nwr - 1 || rnd_below(2);
		q->imm = (uint32_t)rnd();
		q->wr_id = ((uint64_t)it << 8) | (uint64_t)w;
		q->recv_wr_id = q->wr_id | 0x80;
		if (q->op == OP_SEND || q->op == OP_SEND_IMM ||
		    (q->op == OP_WRITE_IMM && rnd_below(2)))
			q->nrsge = lay_sges(&rcur, q->len, rnd_below(100),
					    1 + (int)rnd_below(MAX_SGE),
					    q->rsge);
		if (q->op >= OP_WRITE) {
			q->roff = (rdcur + (uint32_t)rnd_below(4096)) | 1;
			rdcur = q->roff + q->len + 1;
		}
	}
	if (lcur > AREA || rcur > AREA || rdcur > AREA)
		fail("internal: plan of iteration %lu beyond the areas", it);
	return requester;
}

static void scatter(uint8_t *img, const struct ibv_sge *sge, int n,
		    uint32_t len)
{
	const uint8_t *m = msg;

	for (int i = 0; i < n && len; i++) {
		uint32_t l = sge[i].length < len ? sge[i].length : len;

		memcpy(img + ((uintptr_t)sge[i].addr - (uintptr_t)buf), m, l);
		m += l;
		len -= l;
	}
}

static void on_mark(int sig)
{
	struct timespec ts;

	(void)sig;
	if (mark_seen)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	mark_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	mark_seen = 1;
}

/* Whether the stall overlaps the window before the mark. */
static void mark_consider(const struct stall *g)
{
	if (g->start > mark_ms || g->end + MARK_WINDOW_MS < mark_ms)
		return;
	if (g->end - g->start > mark_gap.end - mark_gap.start)
		mark_gap = *g;
	if (g->end - g->start >= MARK_LIST_MS && mark_listed < MARK_LIST)
		mark_list[mark_listed++] = *g;
}

static void note_progress(void)
{
	uint64_t t = now_ms();
	unsigned int i;

	if (last_wc_ms && t - last_wc_ms > max_gap_ms)
		max_gap_ms = t - last_wc_ms;
	if (last_wc_ms && t - last_wc_ms > line_gap_ms)
		line_gap_ms = t - last_wc_ms;
	if (mark_seen && !mark_looked_back) {
		mark_looked_back = 1;
		for (i = 0; i < MARK_RING; i++)
			if (gap_ring[i].end)
				mark_consider(&gap_ring[i]);
	}
	if (last_wc_ms && t - last_wc_ms >= MARK_MIN_GAP_MS) {
		cur_gap.start = last_wc_ms;
		cur_gap.end = t;
		if (mark_seen)
			mark_consider(&cur_gap);
		gap_ring[gap_next] = cur_gap;
		gap_next = (gap_next + 1) % MARK_RING;
	}
	memset(&cur_gap, 0, sizeof(cur_gap));
	last_poll_ms = 0;
	last_wc_ms = t;
}

static void wait_wc(struct ibv_wc *wc, const char *what)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_s * 1000;
	int n;

	for (;;) {
		uint64_t t;

		n = ibv_poll_cq(cq, 1, wc);
		t = now_ms();
		if (last_poll_ms && t - last_poll_ms > cur_gap.poll_ms)
			cur_gap.poll_ms = t - last_poll_ms;
		last_poll_ms = t;
		if (n != 0)
			break;
		if (t > deadline)
			fail("iteration %lu: no completion for %s within %d s",
			     cur_iter, what, timeout_s);
	}
	snprintf(cur_gap.what, sizeof(cur_gap.what), "completion of %s", what);
	if (n < 0)
		fail("iteration %lu: ibv_poll_cq: %d", cur_iter, n);
	n_wc++;
	note_progress();
}

static void check_wc(const struct ibv_wc *wc, uint64_t wr_id,
		     enum ibv_wc_opcode opc, int check_len, uint32_t len,
		     int imm_flag, uint32_t imm, const char *what)
{
	if (wc->status != IBV_WC_SUCCESS)
		fail("iteration %lu %s: status %s (%d) vendor_err 0x%x wr_id 0x%" PRIx64,
		     cur_iter, what, ibv_wc_status_str(wc->status), wc->status,
		     wc->vendor_err, wc->wr_id);
	if (wc->wr_id != wr_id)
		fail("iteration %lu %s: wr_id 0x%" PRIx64 ", expected 0x%" PRIx64 " (lost, duplicated or reordered completion)",
		     cur_iter, what, wc->wr_id, wr_id);
	if (wc->opcode != opc)
		fail("iteration %lu %s: opcode %d, expected %d", cur_iter, what,
		     wc->opcode, opc);
	if (wc->qp_num != qp->qp_num)
		fail("iteration %lu %s: qp_num %u, expected %u", cur_iter, what,
		     wc->qp_num, qp->qp_num);
	if (check_len && wc->byte_len != len)
		fail("iteration %lu %s: byte_len %u, expected %u", cur_iter,
		     what, wc->byte_len, len);
	if (imm_flag >= 0 && !!(wc->wc_flags & IBV_WC_WITH_IMM) != imm_flag)
		fail("iteration %lu %s: wc_flags 0x%x", cur_iter, what,
		     wc->wc_flags);
	if (imm_flag > 0 && ntohl(wc->imm_data) != imm)
		fail("iteration %lu %s: imm 0x%08x, expected 0x%08x", cur_iter,
		     what, ntohl(wc->imm_data), imm);
}

static void check_mem(const char *what)
{
	if (!memcmp(buf, expect, BUF_SIZE))
		return;
	for (size_t i = 0; i < BUF_SIZE; i++) {
		if (buf[i] != expect[i]) {
			size_t j = i;

			while (j < BUF_SIZE && buf[j] != expect[j])
				j++;
			fail("iteration %lu %s: byte %zu of the %s area is 0x%02x, expected 0x%02x (%zu bytes differ from there)",
			     cur_iter, what, i % AREA,
			     i >= AREA ? "RDMA" : "local", buf[i], expect[i],
			     j - i);
		}
	}
}

static void iteration(unsigned long it)
{
	/* one more of each for UC's closing zero-length SEND */
	struct wr_plan p[MAX_BATCH];
	struct ibv_send_wr wr[MAX_BATCH + 1], *bad_s;
	struct ibv_recv_wr rwr[MAX_BATCH + 1], *bad_r;
	const uint64_t marker = ((uint64_t)it << 8) | 0x7f;
	char what[64];
	struct ibv_wc wc;
	int nwr, me = is_client ? 0 : 1, nrecv = 0, err;
	int requester = plan(it, p, &nwr);

	memset(buf, CANARY, BUF_SIZE);
	memset(expect, CANARY, BUF_SIZE);
	if (requester == me) {
		for (int w = 0; w < nwr; w++) {
			struct wr_plan *q = &p[w];

			make_msg(it, w, q->len);
			if (q->op == OP_READ) {
				scatter(expect, q->sge, q->nsge, q->len);
			} else {
				scatter(buf, q->sge, q->nsge, q->len);
				scatter(expect, q->sge, q->nsge, q->len);
			}
			memset(&wr[w], 0, sizeof(wr[w]));
			wr[w].wr_id = q->wr_id;
			wr[w].sg_list = q->sge;
			wr[w].num_sge = q->nsge;
			wr[w].opcode = q->op == OP_SEND ? IBV_WR_SEND :
				       q->op == OP_SEND_IMM ? IBV_WR_SEND_WITH_IMM :
				       q->op == OP_WRITE ? IBV_WR_RDMA_WRITE :
				       q->op == OP_WRITE_IMM ? IBV_WR_RDMA_WRITE_WITH_IMM :
				       IBV_WR_RDMA_READ;
			wr[w].send_flags = (q->signaled ? IBV_SEND_SIGNALED : 0) |
					   (q->inl ? IBV_SEND_INLINE : 0);
			wr[w].imm_data = htonl(q->imm);
			wr[w].wr.rdma.remote_addr = remote.addr + q->roff;
			wr[w].wr.rdma.rkey = remote.rkey;
			wr[w].next = w + 1 < nwr ? &wr[w + 1] : NULL;
		}
		if (uc) {
			memset(&wr[nwr], 0, sizeof(wr[nwr]));
			wr[nwr].wr_id = marker;
			wr[nwr].opcode = IBV_WR_SEND;
			wr[nwr].send_flags = IBV_SEND_SIGNALED;
			wr[nwr - 1].next = &wr[nwr];
		}
	} else {
		for (int w = 0; w < nwr; w++) {
			struct wr_plan *q = &p[w];

			make_msg(it, w, q->len);
			if (q->op == OP_READ) {
				memcpy(buf + AREA + q->roff, msg, q->len);
				memcpy(expect + AREA + q->roff, msg, q->len);
			} else if (q->op >= OP_WRITE) {
				memcpy(expect + AREA + q->roff, msg, q->len);
			}
			if (q->op == OP_SEND || q->op == OP_SEND_IMM)
				scatter(expect, q->rsge, q->nrsge, q->len);
			if (q->op == OP_SEND || q->op == OP_SEND_IMM ||
			    q->op == OP_WRITE_IMM) {
				memset(&rwr[nrecv], 0, sizeof(rwr[0]));
				rwr[nrecv].wr_id = q->recv_wr_id;
				rwr[nrecv].sg_list = q->rsge;
				rwr[nrecv].num_sge = q->nrsge;
				if (nrecv)
					rwr[nrecv - 1].next = &rwr[nrecv];
				nrecv++;
			}
		}
		if (uc) {
			memset(&rwr[nrecv], 0, sizeof(rwr[0]));
			rwr[nrecv].wr_id = marker | 0x80;
			if (nrecv)
				rwr[nrecv - 1].next = &rwr[nrecv];
			nrecv++;
		}
		if (nrecv) {
			err = ibv_post_recv(qp, rwr, &bad_r);
			if (err)
				fail("iteration %lu: ibv_post_recv: %s", it,
				     strerror(err));
		}
	}
	/* the responder's receives and READ sources are in place */
	sync_peer("ready");

	if (requester == me) {
		err = ibv_post_send(qp, wr, &bad_s);
		if (err)
			fail("iteration %lu: ibv_post_send: %s (WR %td)", it,
			     strerror(err), bad_s - wr);
		for (int w = 0; w < nwr; w++) {
			struct wr_plan *q = &p[w];

			n_ops[q->op]++;
			n_bytes += q->len;
			if (!q->signaled)
				continue;
			snprintf(what, sizeof(what), "%s WR %d/%d len %u%s",
				 op_names[q->op], w + 1, nwr, q->len,
				 q->inl ? " inline" : "");
			wait_wc(&wc, what);
			check_wc(&wc, q->wr_id,
				 q->op == OP_READ ? IBV_WC_RDMA_READ :
				 q->op >= OP_WRITE ? IBV_WC_RDMA_WRITE :
						     IBV_WC_SEND,
				 q->op == OP_READ, q->len, -1, 0, what);
		}
		if (uc) {
			wait_wc(&wc, "the closing SEND");
			check_wc(&wc, marker, IBV_WC_SEND, 0, 0, -1, 0,
				 "the closing SEND");
		}
	} else {
		for (int w = 0; w < nwr; w++) {
			struct wr_plan *q = &p[w];

			if (q->op != OP_SEND && q->op != OP_SEND_IMM &&
			    q->op != OP_WRITE_IMM)
				continue;
			snprintf(what, sizeof(what), "receive of %s WR %d/%d len %u",
				 op_names[q->op], w + 1, nwr, q->len);
			wait_wc(&wc, what);
			check_wc(&wc, q->recv_wr_id,
				 q->op == OP_WRITE_IMM ? IBV_WC_RECV_RDMA_WITH_IMM :
							 IBV_WC_RECV,
				 1, q->len, q->op != OP_SEND, q->imm, what);
		}
		if (uc) {
			wait_wc(&wc, "receive of the closing SEND");
			check_wc(&wc, marker | 0x80, IBV_WC_RECV, 1, 0, 0, 0,
				 "receive of the closing SEND");
		}
	}
	/* RC: the requester has every ACK; UC: the responder has the closing
	 * SEND. Either way all data has landed on both ends. */
	sync_peer("done");
	if (ibv_poll_cq(cq, 1, &wc) != 0)
		fail("iteration %lu: extra completion wr_id 0x%" PRIx64 " status %s opcode %d",
		     it, wc.wr_id, ibv_wc_status_str(wc.status), wc.opcode);
	/* the next iteration's "ready" orders this check before any write */
	check_mem(requester == me ? "(requester)" : "(responder)");
}

static void usage(const char *argv0)
{
	printf("usage: %s [-d ibdev] [-i port] [-g gid_index] [-p tcp_port] [-n iterations]\n"
	       "          [-s seed] [-M mtu] [-m max_msg] [-t timeout_s] [-T qp_timeout] [-r retry_cnt]\n"
	       "          [-u] [server_ip]\n"
	       "Without server_ip: server (takes the client's -n -s -M -m -u). -u: UC QPs. MTU is 256..4096\n"
	       "and at most the port's active MTU (default: the active MTU).\n",
	       argv0);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *dev = NULL;
	int tcp_port = 19875, opt;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	sigaction(SIGUSR1, &(struct sigaction){ .sa_handler = on_mark,
						.sa_flags = SA_RESTART }, NULL);
	prm.iters = 100;
	prm.max_msg = 70000;
	while ((opt = getopt(argc, argv, "d:i:g:p:n:s:M:m:t:T:r:uvh")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'i': port_num = (uint8_t)atoi(optarg); break;
		case 'g': gid_idx = atoi(optarg); break;
		case 'p': tcp_port = atoi(optarg); break;
		case 'n': prm.iters = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 's': prm.seed = strtoull(optarg, NULL, 0); break;
		case 'M': prm.mtu = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'm': prm.max_msg = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 't': timeout_s = atoi(optarg); break;
		case 'T': qp_timeout = (uint8_t)atoi(optarg); break;
		case 'r': retry_cnt = (uint8_t)atoi(optarg); break;
		case 'u': prm.flags |= PRM_UC; break;
		case 'v': verbose = 1; break;
		default: usage(argv[0]);
		}
	}
	if (optind < argc - 1 || prm.max_msg > MAX_MSG_LIMIT ||
	    timeout_s <= 0 || retry_cnt > 7 || qp_timeout > 31 ||
	    (prm.mtu && !mtu_enum(prm.mtu)))
		usage(argv[0]);
	is_client = optind == argc - 1;
	role = is_client ? "client" : "server";
	if (is_client && !prm.seed)
		prm.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);

	exchange(is_client ? argv[optind] : NULL, tcp_port);
	open_verbs(dev);
	exchange_qp();
	connect_qp();
	sync_peer("connected");

	t_start_ms = now_ms();
	for (cur_iter = 0; cur_iter < prm.iters; cur_iter++) {
		iteration(cur_iter);
		note_progress();
		if (verbose || (cur_iter + 1) % 50 == 0) {
			printf("%s: %lu/%u iterations (%lu s), longest gap %" PRIu64 " ms\n",
			       role, cur_iter + 1, prm.iters,
			       (unsigned long)((now_ms() - t_start_ms) / 1000),
			       line_gap_ms);
			line_gap_ms = 0;
		}
	}

	/* the peer's last memory check passed too */
	sync_peer("end");
	if (ibv_destroy_qp(qp) || ibv_destroy_cq(cq) || ibv_dereg_mr(mr) ||
	    ibv_dealloc_pd(pd) || ibv_close_device(ctx))
		fail("teardown: %s", strerror(errno));
	qp = NULL;
	summary("PASS", NULL);
	return 0;
}
