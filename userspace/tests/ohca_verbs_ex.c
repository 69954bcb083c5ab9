// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The extended verbs on one device, two RC QPs looped back through the
 * port's own GID: an extended CQ polled with start/next/end_poll and the
 * read_* accessors, QPs made by ibv_create_qp_ex and fed through the
 * ibv_wr_* API (one chain of WRITE, WRITE_WITH_IMM, SEND with an inline
 * list, READ and both atomics, checked byte by byte and completion by
 * completion), an RDMA ATOMIC WRITE, wr_abort, an error inside a chain, posting in RESET,
 * ibv_resize_cq with completions waiting in the ring, ibv_rereg_mr of
 * translation and access seen by the peer's RDMA WRITE, and completion
 * event moderation (ibv_modify_cq) on a CQ with a completion channel.
 *
 *   ohca_verbs_ex [-d DEV] [-g GID_INDEX]
 *
 * Prints "ohca_verbs_ex: PASS" and exits 0, or names the first failed
 * check and exits 1 (2: setup).
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include "ohca_rc_common.h"


#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		printf("FAIL %s:%d: ", __func__, __LINE__);		\
		printf(__VA_ARGS__);					\
		putchar('\n');						\
		printf("ohca_verbs_ex: FAIL\n");			\
		exit(1);						\
	}								\
} while (0)

#define BUF 65536
#define SEND_OPS (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |	\
		  IBV_QP_EX_WITH_RDMA_WRITE |				\
		  IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |			\
		  IBV_QP_EX_WITH_RDMA_READ |				\
		  IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |			\
		  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |			\
		  IBV_QP_EX_WITH_ATOMIC_WRITE)

struct wc {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t byte_len, qp_num, src_qp, wc_flags;
	uint32_t imm;
};

static struct ibv_cq_ex *cq;
static struct ibv_qp *qa, *qb;
static struct ibv_qp_ex *xa;
static uint8_t *abuf, *bbuf;
static struct ibv_mr *amr, *bmr;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void read_wc(struct wc *w)
{
	w->wr_id = cq->wr_id;
	w->status = cq->status;
	w->opcode = ibv_wc_read_opcode(cq);
	w->byte_len = ibv_wc_read_byte_len(cq);
	w->qp_num = ibv_wc_read_qp_num(cq);
	w->src_qp = ibv_wc_read_src_qp(cq);
	w->wc_flags = ibv_wc_read_wc_flags(cq);
	w->imm = w->wc_flags & IBV_WC_WITH_IMM ?
		 ntohl(ibv_wc_read_imm_data(cq)) : 0;
}

/* Exactly n completions through start/next/end_poll within 10 s (and no
 * more within 'extra' seconds). */
static void poll_n(struct wc *w, int n, double extra)
{
	struct ibv_poll_cq_attr attr = {};
	double end = now() + 10;
	int got = 0;

	while (got < n || extra > 0) {
		int rc = ibv_start_poll(cq, &attr);

		if (rc == ENOENT) {
			if (got >= n) {
				usleep(20000);
				extra -= 0.02;
				if (extra <= 0)
					break;
				continue;
			}
			CHECK(now() < end, "%d of %d completions after 10 s",
			      got, n);
			usleep(1000);
			continue;
		}
		CHECK(rc == 0, "start_poll: %d", rc);
		do {
			CHECK(got < n, "completion %d beyond the %d expected "
			      "(wr_id %llu status %d)", got + 1, n,
			      (unsigned long long)cq->wr_id, cq->status);
			read_wc(&w[got++]);
			rc = ibv_next_poll(cq);
		} while (rc == 0);
		CHECK(rc == ENOENT, "next_poll: %d", rc);
		ibv_end_poll(cq);
	}
}

static struct wc *find(struct wc *w, int n, uint64_t wr_id)
{
	for (int i = 0; i < n; i++)
		if (w[i].wr_id == wr_id)
			return &w[i];
	CHECK(0, "no completion with wr_id %llu", (unsigned long long)wr_id);
	return NULL;
}

static struct ibv_qp *make_qp_ex(void)
{
	struct ibv_qp_init_attr_ex init = {
		.qp_type = IBV_QPT_RC,
		.send_cq = ibv_cq_ex_to_cq(cq),
		.recv_cq = ibv_cq_ex_to_cq(cq),
		.cap = { .max_send_wr = 32, .max_recv_wr = 32,
			 .max_send_sge = 2, .max_recv_sge = 2,
			 .max_inline_data = 64 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_CREATE_FLAGS |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.create_flags = 0,
		.send_ops_flags = SEND_OPS,
	};
	struct ibv_qp *qp = ibv_create_qp_ex(ctx, &init);

	CHECK(qp, "ibv_create_qp_ex: %s", strerror(errno));
	CHECK(ibv_qp_to_qp_ex(qp), "no ibv_qp_ex");
	return qp;
}

static void post_recv(struct ibv_qp *qp, uint64_t wr_id, void *addr,
		      uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	CHECK(!ibv_post_recv(qp, &wr, &bad), "post_recv");
}

static void setup(void)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = 64,
		.wc_flags = IBV_WC_STANDARD_FLAGS };
	struct ibv_qp_init_attr_ex bad = {
		.qp_type = IBV_QPT_RC, .cap = { .max_send_wr = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd, .send_ops_flags = IBV_QP_EX_WITH_TSO,
	};

	/* What the device cannot fill is refused as "not supported". */
	ca.wc_flags = IBV_WC_STANDARD_FLAGS |
		      IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	CHECK(!ibv_create_cq_ex(ctx, &ca) && errno == EOPNOTSUPP,
	      "timestamp CQ: errno %d", errno);
	ca.wc_flags = IBV_WC_STANDARD_FLAGS;
	ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	ca.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	CHECK(!ibv_create_cq_ex(ctx, &ca) && errno == EOPNOTSUPP,
	      "ignore-overrun CQ: errno %d", errno);
	ca.flags = 0;
	cq = ibv_create_cq_ex(ctx, &ca);
	CHECK(cq, "ibv_create_cq_ex: %s", strerror(errno));
	bad.send_cq = bad.recv_cq = ibv_cq_ex_to_cq(cq);
	CHECK(!ibv_create_qp_ex(ctx, &bad) && errno == EOPNOTSUPP,
	      "TSO send op: errno %d", errno);

	qa = make_qp_ex();
	qb = make_qp_ex();
	xa = ibv_qp_to_qp_ex(qa);
	abuf = calloc(1, BUF);
	bbuf = calloc(1, BUF);
	CHECK(abuf && bbuf, "buffers");
	amr = ibv_reg_mr(pd, abuf, BUF, ACC_ALL | IBV_ACCESS_REMOTE_ATOMIC);
	bmr = ibv_reg_mr(pd, bbuf, BUF, ACC_ALL | IBV_ACCESS_REMOTE_ATOMIC);
	CHECK(amr && bmr, "ibv_reg_mr: %s", strerror(errno));
}

/* Posting to a QP in RESET fails with EINVAL, through either API. */
static void reset_refused(void)
{
	struct ibv_sge sge = { (uintptr_t)abuf, 8, amr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND }, *bad;
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *rbad;

	CHECK(ibv_post_send(qa, &wr, &bad) == EINVAL, "post_send in RESET");
	CHECK(ibv_post_recv(qa, &rwr, &rbad) == EINVAL, "post_recv in RESET");
	ibv_wr_start(xa);
	ibv_wr_send(xa);
	ibv_wr_set_sge(xa, amr->lkey, (uintptr_t)abuf, 8);
	CHECK(ibv_wr_complete(xa) == EINVAL, "wr_complete in RESET");
}

static void chain(void)
{
	struct ibv_data_buf inl[2] = { { abuf + 8192, 15 },
				       { abuf + 12288, 25 } };
	struct ibv_sge two[2] = {
		{ (uintptr_t)abuf, 1000, amr->lkey },
		{ (uintptr_t)abuf + 3000, 3096, amr->lkey },
	};
	uint64_t *counter = (uint64_t *)(bbuf + 40960);
	uint64_t *fetched = (uint64_t *)(abuf + 40960);
	uint64_t *swapped = (uint64_t *)(abuf + 40968);
	struct wc w[8];
	struct wc *c;

	for (int i = 0; i < 16384; i++)
		abuf[i] = (uint8_t)(i * 7 + 1);
	for (int i = 0; i < 512; i++)
		bbuf[20480 + i] = (uint8_t)(i * 3 + 5);
	*counter = 1000;
	post_recv(qb, 101, bbuf + 30000, 64, bmr->lkey);
	post_recv(qb, 102, bbuf + 32768, 64, bmr->lkey);

	ibv_wr_start(xa);
	xa->wr_flags = IBV_SEND_SIGNALED;
	xa->wr_id = 1;
	ibv_wr_rdma_write(xa, bmr->rkey, (uintptr_t)bbuf);
	ibv_wr_set_sge_list(xa, 2, two);
	xa->wr_id = 2;
	ibv_wr_rdma_write_imm(xa, bmr->rkey, (uintptr_t)bbuf + 8192,
			      htonl(0x11223344));
	ibv_wr_set_sge(xa, amr->lkey, (uintptr_t)abuf + 100, 100);
	xa->wr_id = 3;
	ibv_wr_send(xa);
	ibv_wr_set_inline_data_list(xa, 2, inl);
	xa->wr_id = 4;
	ibv_wr_rdma_read(xa, bmr->rkey, (uintptr_t)bbuf + 20480);
	ibv_wr_set_sge(xa, amr->lkey, (uintptr_t)abuf + 20480, 512);
	xa->wr_id = 5;
	ibv_wr_atomic_fetch_add(xa, bmr->rkey, (uintptr_t)counter, 5);
	ibv_wr_set_sge(xa, amr->lkey, (uintptr_t)fetched, 8);
	xa->wr_id = 6;
	ibv_wr_atomic_cmp_swp(xa, bmr->rkey, (uintptr_t)counter, 1005, 0xabc);
	ibv_wr_set_sge(xa, amr->lkey, (uintptr_t)swapped, 8);
	CHECK(ibv_wr_complete(xa) == 0, "wr_complete of the chain");

	poll_n(w, 8, 0.1);
	for (int i = 0; i < 8; i++)
		CHECK(w[i].status == IBV_WC_SUCCESS, "wr_id %llu status %d",
		      (unsigned long long)w[i].wr_id, w[i].status);
	c = find(w, 8, 1);
	CHECK(c->opcode == IBV_WC_RDMA_WRITE && c->byte_len == 4096 &&
	      c->qp_num == qa->qp_num, "WRITE completion");
	CHECK(!memcmp(bbuf, abuf, 1000) && !memcmp(bbuf + 1000, abuf + 3000,
						    3096), "WRITE data");
	c = find(w, 8, 2);
	CHECK(c->opcode == IBV_WC_RDMA_WRITE, "WRITE_IMM send opcode %d",
	      c->opcode);
	c = find(w, 8, 101);
	CHECK(c->opcode == IBV_WC_RECV_RDMA_WITH_IMM && c->imm == 0x11223344 &&
	      (c->wc_flags & IBV_WC_WITH_IMM) && c->qp_num == qb->qp_num &&
	      c->src_qp == qa->qp_num, "WRITE_IMM receive: opcode %d imm %#x",
	      c->opcode, c->imm);
	CHECK(!memcmp(bbuf + 8192, abuf + 100, 100), "WRITE_IMM data");
	c = find(w, 8, 3);
	CHECK(c->opcode == IBV_WC_SEND, "SEND opcode %d", c->opcode);
	c = find(w, 8, 102);
	CHECK(c->opcode == IBV_WC_RECV && c->byte_len == 40 &&
	      !(c->wc_flags & IBV_WC_WITH_IMM), "inline SEND receive: len %u",
	      c->byte_len);
	CHECK(!memcmp(bbuf + 32768, abuf + 8192, 15) &&
	      !memcmp(bbuf + 32768 + 15, abuf + 12288, 25), "inline data");
	c = find(w, 8, 4);
	CHECK(c->opcode == IBV_WC_RDMA_READ && c->byte_len == 512, "READ");
	CHECK(!memcmp(abuf + 20480, bbuf + 20480, 512), "READ data");
	c = find(w, 8, 5);
	CHECK(c->opcode == IBV_WC_FETCH_ADD && c->byte_len == 8 &&
	      *fetched == 1000, "FETCH_ADD: opcode %d fetched %llu",
	      c->opcode, (unsigned long long)*fetched);
	c = find(w, 8, 6);
	CHECK(c->opcode == IBV_WC_COMP_SWAP && *swapped == 1005 &&
	      *counter == 0xabc, "CMP_SWP: got %llu, counter %#llx",
	      (unsigned long long)*swapped, (unsigned long long)*counter);
	printf("chain: 6 WRs in one wr_complete, 8 completions checked\n");
}

/*
 * RDMA ATOMIC WRITE: offered only because the kernel passed the device's
 * OHCA_DEV_CAP_ATOMIC_WRITE in the ucontext response (make_qp_ex asked
 * for it); the 8 bytes land at once.
 */
static void atomic_write(void)
{
	static const uint8_t val[8] = { 0xa1, 0xb2, 0xc3, 0xd4,
					0xe5, 0xf6, 0x07, 0x18 };
	uint8_t *target = bbuf + 49152;
	struct wc w[1];

	memset(target, 0x55, 16);
	ibv_wr_start(xa);
	xa->wr_flags = IBV_SEND_SIGNALED;
	xa->wr_id = 7;
	ibv_wr_atomic_write(xa, bmr->rkey, (uintptr_t)target, val);
	CHECK(ibv_wr_complete(xa) == 0, "wr_complete of ATOMIC_WRITE");
	poll_n(w, 1, 0.05);
	CHECK(w[0].wr_id == 7 && w[0].status == IBV_WC_SUCCESS &&
	      w[0].opcode == IBV_WC_ATOMIC_WRITE, "ATOMIC_WRITE completion: "
	      "wr_id %llu status %d opcode %d",
	      (unsigned long long)w[0].wr_id, w[0].status, w[0].opcode);
	CHECK(!memcmp(target, val, 8) && target[8] == 0x55,
	      "ATOMIC_WRITE data");
	printf("atomic_write: 8 bytes written, none beside them\n");
}

/* wr_abort drops what it started; an error inside a chain drops the
 * whole chain and wr_complete returns it. */
static void abort_and_error(void)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	struct ibv_sge many[64];
	struct wc w[2];

	/* One SGE more than the QP holds (its caps may exceed the request). */
	CHECK(!ibv_query_qp(qa, &attr, IBV_QP_CAP, &init), "query_qp");
	CHECK(attr.cap.max_send_sge < 64, "max_send_sge %u",
	      attr.cap.max_send_sge);
	for (int i = 0; i < 64; i++)
		many[i] = (struct ibv_sge){ (uintptr_t)abuf + 8 * i, 8,
					    amr->lkey };

	post_recv(qb, 201, bbuf + 30000, 64, bmr->lkey);
	ibv_wr_start(xa);
	xa->wr_id = 20;
	ibv_wr_send(xa);
	ibv_wr_set_sge(xa, amr->lkey, (uintptr_t)abuf, 16);
	ibv_wr_abort(xa);

	ibv_wr_start(xa);
	xa->wr_id = 21;
	ibv_wr_send(xa);
	ibv_wr_set_sge(xa, amr->lkey, (uintptr_t)abuf, 16);
	xa->wr_id = 22;
	ibv_wr_send(xa);
	ibv_wr_set_sge_list(xa, attr.cap.max_send_sge + 1, many);
	CHECK(ibv_wr_complete(xa) == EINVAL, "chain with %u SGEs",
	      attr.cap.max_send_sge + 1);

	ibv_wr_start(xa);
	xa->wr_id = 23;
	ibv_wr_send(xa);
	ibv_wr_set_sge(xa, amr->lkey, (uintptr_t)abuf, 16);
	CHECK(ibv_wr_complete(xa) == 0, "wr_complete");
	poll_n(w, 2, 0.2);
	CHECK((w[0].wr_id == 23 && w[1].wr_id == 201) ||
	      (w[0].wr_id == 201 && w[1].wr_id == 23),
	      "after abort and error: wr_ids %llu, %llu",
	      (unsigned long long)w[0].wr_id, (unsigned long long)w[1].wr_id);
	printf("wr_abort and a failed chain posted nothing\n");
}

/* Six SENDs complete (12 CQEs) into the CQ; it cannot shrink below them,
 * and grows with all of them kept, in order. */
static void resize(void)
{
	struct ibv_cq *bcq = ibv_cq_ex_to_cq(cq);
	struct wc w[12];
	int na = 0, nb = 0;

	for (int i = 0; i < 6; i++)
		post_recv(qb, 300 + i, bbuf + 30000, 64, bmr->lkey);
	ibv_wr_start(xa);
	for (int i = 0; i < 6; i++) {
		xa->wr_id = 400 + i;
		ibv_wr_send(xa);
		ibv_wr_set_sge(xa, amr->lkey, (uintptr_t)abuf, 32);
	}
	CHECK(ibv_wr_complete(xa) == 0, "wr_complete");
	usleep(500000);	/* the device writes all 12 CQEs meanwhile */
	CHECK(ibv_resize_cq(bcq, 4) == EINVAL, "shrink below 12 waiting CQEs");
	CHECK(ibv_resize_cq(bcq, 200) == 0, "grow: %s", strerror(errno));
	CHECK(bcq->cqe >= 200, "cqe %d after resize", bcq->cqe);
	poll_n(w, 12, 0.1);
	for (int i = 0; i < 12; i++) {
		CHECK(w[i].status == IBV_WC_SUCCESS, "status %d", w[i].status);
		if (w[i].qp_num == qa->qp_num)
			CHECK(w[i].wr_id == 400u + na++, "send order");
		else
			CHECK(w[i].wr_id == 300u + nb++, "receive order");
	}
	CHECK(na == 6 && nb == 6, "%d sends, %d receives", na, nb);
	CHECK(ibv_resize_cq(bcq, 20) == 0, "shrink of an empty CQ");
	printf("resize_cq: 12 waiting CQEs kept in order\n");
}

static void write_to(uint64_t va, uint32_t rkey, enum ibv_wc_status want)
{
	struct wc w;

	ibv_wr_start(xa);
	xa->wr_id = 500;
	ibv_wr_rdma_write(xa, rkey, va);
	ibv_wr_set_sge(xa, amr->lkey, (uintptr_t)abuf, 256);
	CHECK(ibv_wr_complete(xa) == 0, "wr_complete");
	poll_n(&w, 1, 0);
	CHECK(w.status == want, "WRITE status %d, want %d", w.status, want);
}

/* The MR moves to another buffer with its keys, then loses remote write. */
static void rereg(void)
{
	uint32_t lkey = bmr->lkey, rkey = bmr->rkey;
	uint8_t *nbuf = aligned_alloc(4096, 8192);

	CHECK(nbuf, "buffer");
	memset(nbuf, 0, 8192);
	CHECK(ibv_rereg_mr(bmr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, nbuf,
			   8192, 0) == 0, "rereg translation: %s",
	      strerror(errno));
	CHECK(bmr->lkey == lkey && bmr->rkey == rkey && bmr->addr == nbuf,
	      "keys %#x/%#x after rereg, were %#x/%#x", bmr->lkey, bmr->rkey,
	      lkey, rkey);
	write_to((uintptr_t)nbuf + 4096, rkey, IBV_WC_SUCCESS);
	CHECK(!memcmp(nbuf + 4096, abuf, 256), "WRITE into the new buffer");
	CHECK(ibv_rereg_mr(bmr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_REMOTE_WRITE) != 0,
	      "remote write without local write accepted");
	CHECK(ibv_rereg_mr(bmr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			   IBV_ACCESS_LOCAL_WRITE) == 0, "rereg access: %s",
	      strerror(errno));
	write_to((uintptr_t)nbuf, rkey, IBV_WC_REM_ACCESS_ERR);
	printf("rereg_mr: translation and access changed in place\n");
}

/* ---- completion event moderation ------------------------------------- */

static struct ibv_comp_channel *mch;
static struct ibv_cq *mcq;
static struct ibv_qp *ma, *mb;
static struct ibv_mr *mmr;	/* bmr lost remote write in rereg() */
static int mod_cqes, mod_events;

static void mod_write(uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)abuf, 8, amr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { (uintptr_t)mmr->addr + 8 * (wr_id % 64),
			     mmr->rkey },
	}, *bad;

	CHECK(!ibv_post_send(ma, &wr, &bad), "post_send");
}

/* At least 'n' completions (all successful) within 10 s; returns how many. */
static int mod_poll(int n)
{
	double end = now() + 10;
	struct ibv_wc wc[16];
	int got = 0, k;

	for (;;) {
		k = ibv_poll_cq(mcq, 16, wc);
		CHECK(k >= 0, "poll_cq: %d", k);
		for (int i = 0; i < k; i++)
			CHECK(wc[i].status == IBV_WC_SUCCESS, "wr_id %llu status %d",
			      (unsigned long long)wc[i].wr_id, wc[i].status);
		got += k;
		if (got >= n && k == 0)
			break;
		CHECK(now() < end, "%d of %d completions after 10 s", got, n);
		if (k == 0)
			usleep(100);
	}
	mod_cqes += got;
	return got;
}

/* A completion event within 'ms' milliseconds (taken and acknowledged). */
static bool mod_event(int ms)
{
	struct pollfd p = { .fd = mch->fd, .events = POLLIN };
	struct ibv_cq *ecq;
	void *ectx;

	if (poll(&p, 1, ms) != 1)
		return false;
	CHECK(!ibv_get_cq_event(mch, &ecq, &ectx) && ecq == mcq,
	      "get_cq_event");
	ibv_ack_cq_events(ecq, 1);
	mod_events++;
	return true;
}

static void mod_set(uint16_t count, uint16_t period)
{
	struct ibv_modify_cq_attr a = { .attr_mask = IBV_CQ_ATTR_MODERATE,
		.moderate = { count, period } };
	int err = ibv_modify_cq(mcq, &a);

	CHECK(!err, "ibv_modify_cq(%u, %u): %s", count, period, strerror(err));
}

/*
 * The limits in ibv_query_device_ex; a count without a period refused;
 * off (the default): the event comes with the first completion; count 4
 * (period 65 ms): none after 3 completions, one with the 4th; count 1000
 * with a 20 ms period: the period releases the event of one completion;
 * 0/0: off again. The held event is checked with a 10 ms look while the
 * period has 65 ms to run, so a round may see it early only if the VM
 * stalls that long: at most 2 of 8 rounds may (moderation that does
 * nothing shows it in all 8).
 */
static void moderation(void)
{
	struct ibv_device_attr_ex dattr;
	struct ibv_modify_cq_attr bad = { .attr_mask = IBV_CQ_ATTR_MODERATE,
		.moderate = { 4, 0 } };
	int early = 0, i, k;
	bool held;

	CHECK(!ibv_query_device_ex(ctx, NULL, &dattr), "query_device_ex");
	CHECK(dattr.cq_mod_caps.max_cq_count == 0xffff &&
	      dattr.cq_mod_caps.max_cq_period == 0xffff,
	      "cq_mod_caps %u/%u", dattr.cq_mod_caps.max_cq_count,
	      dattr.cq_mod_caps.max_cq_period);
	mch = ibv_create_comp_channel(ctx);
	CHECK(mch, "create_comp_channel: %s", strerror(errno));
	mcq = ibv_create_cq(ctx, 64, NULL, mch, 0);
	CHECK(mcq, "create_cq: %s", strerror(errno));
	mmr = ibv_reg_mr(pd, bbuf, 4096, ACC_ALL);
	CHECK(mmr, "ibv_reg_mr: %s", strerror(errno));
	ma = make_qp(mcq, 32);
	mb = make_qp(mcq, 32);
	connect_qp(ma, mb->qp_num, ACC_ALL, 7, 12);
	connect_qp(mb, ma->qp_num, ACC_ALL, 7, 12);
	CHECK(ibv_modify_cq(mcq, &bad) == EINVAL, "count without a period");

	CHECK(!ibv_req_notify_cq(mcq, 0), "req_notify_cq");
	mod_write(1);
	CHECK(mod_event(5000), "no event without moderation");
	mod_poll(1);

	mod_set(4, 0xffff);
	for (i = 0; i < 8; i++) {
		CHECK(!ibv_req_notify_cq(mcq, 0), "req_notify_cq");
		for (k = 0; k < 3; k++) {
			mod_write(10 + 4 * i + k);
			mod_poll(1);
		}
		/* An event already here left the CQ disarmed. */
		held = !mod_event(10);
		early += !held;
		mod_write(13 + 4 * i);
		CHECK(!held || mod_event(5000),
		      "no event after the 4th completion (round %d)", i);
		mod_poll(1);
	}
	CHECK(early <= 2, "%d of 8 rounds had their event before the 4th "
	      "completion", early);

	mod_set(1000, 20000);
	CHECK(!ibv_req_notify_cq(mcq, 0), "req_notify_cq");
	mod_write(50);
	mod_poll(1);
	CHECK(mod_event(5000), "the period did not release the event");

	mod_set(0, 0);
	CHECK(!ibv_req_notify_cq(mcq, 0), "req_notify_cq");
	mod_write(51);
	CHECK(mod_event(5000), "no event with moderation off again");
	mod_poll(1);
	CHECK(mod_cqes == 35 && mod_events < mod_cqes, "%d completions, %d events",
	      mod_cqes, mod_events);
	printf("cq moderation: %d completions, %d events (%d early)\n", mod_cqes,
	       mod_events, early);
	CHECK(!ibv_destroy_qp(ma) && !ibv_destroy_qp(mb) &&
	      !ibv_destroy_cq(mcq) && !ibv_destroy_comp_channel(mch) &&
	      !ibv_dereg_mr(mmr),
	      "teardown");
}

int main(int argc, char **argv)
{
	const char *dev = NULL;
	int opt;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "d:g:")) != -1) {
		if (opt == 'd')
			dev = optarg;
		else if (opt == 'g')
			gid_idx = atoi(optarg);
		else
			die("usage: ohca_verbs_ex [-d DEV] [-g GID_INDEX]");
	}
	open_dev(dev);
	setup();
	reset_refused();
	connect_qp(qa, qb->qp_num, ACC_ALL | IBV_ACCESS_REMOTE_ATOMIC, 7, 12);
	connect_qp(qb, qa->qp_num, ACC_ALL | IBV_ACCESS_REMOTE_ATOMIC, 7, 12);
	chain();
	atomic_write();
	abort_and_error();
	resize();
	rereg();
	moderation();
	printf("ohca_verbs_ex: PASS\n");
	return 0;
}
