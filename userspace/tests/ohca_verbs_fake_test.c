// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * ohca_verbs_fake_test: the provider's verbs and data path against the
 * fake uverbs kernel of tests/fake_uverbs.so (LD_PRELOAD, tests/fakedev.sh),
 * with this program playing the device: it reads the WQEs the provider
 * wrote into the rings and the doorbells it rang, and writes CQEs into the
 * CQ rings for ibv_poll_cq to find.
 *
 * Ring contents are checked at raw byte offsets, independently of the
 * structs in ohca_queue.h, so a layout drift on either side shows up.
 * Host test only: it needs the fake_uverbs_*() hooks.  Exits non-zero on
 * any failure.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#include <ohca/ohca-abi.h>
#include <ohca/ohca_queue.h>

#include "ohca_rc_connect.h"

static int failures;

#define CHECK(cond, ...)                                                   \
	do {                                                               \
		if (!(cond)) {                                             \
			printf("FAIL %s:%d: %s: ", __FILE__, __LINE__,     \
			       #cond);                                     \
			printf(__VA_ARGS__);                               \
			printf("\n");                                      \
			failures++;                                        \
		}                                                          \
	} while (0)
/* Evaluates each side once (some have side effects: ibv_poll_cq). */
#define CHECK_EQ(a, b)                                                     \
	do {                                                               \
		uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);           \
		if (a_ != b_) {                                            \
			printf("FAIL %s:%d: %s == %s: 0x%" PRIx64          \
			       " != 0x%" PRIx64 "\n", __FILE__, __LINE__,  \
			       #a, #b, a_, b_);                            \
			failures++;                                        \
		}                                                          \
	} while (0)

static uint64_t (*db_read)(unsigned int off);
static void (*db_clear)(void);
static int (*fake_cq)(uint32_t cqn, void **ring, uint32_t *log_size);
static int (*fake_cqn)(int slot);
static const struct ohca_ibv_create_qp *(*fake_qp)(
	uint32_t qpn, const struct ib_uverbs_create_qp **core, uint8_t *state);
static void *(*fake_cq_dbrec)(uint32_t cqn);
static const struct ohca_ibv_create_srq *(*fake_srq)(uint32_t srqn);
/* FAKE_UVERBS_DB_RECORD=1: the kernel takes doorbell records. */
static bool dbrec;
/* FAKE_UVERBS_SRQ_DB_RECORD=1 too: for SRQs as well. */
static bool srq_dbrec;

static uint64_t rd(const void *base, size_t off, int bytes)
{
	const uint8_t *p = (const uint8_t *)base + off;
	uint64_t v = 0;

	for (int i = bytes - 1; i >= 0; i--)	/* little endian */
		v = v << 8 | p[i];
	return v;
}

static void wr(void *base, size_t off, int bytes, uint64_t v)
{
	uint8_t *p = (uint8_t *)base + off;

	for (int i = 0; i < bytes; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

/* The device side of a CQ: a producer index and the owner phase. */
struct dev_cq {
	uint8_t *ring;
	uint32_t log;
	uint32_t pi;
	uint32_t cqn;
};

struct cqe_spec {
	uint64_t wr_id;
	uint32_t byte_len;
	uint8_t imm[4];		/* wire bytes */
	uint32_t qpn, src_qp;
	uint8_t opcode, status, flags, vendor_err;
	uint16_t wqe_index;
};

/* Writes the entry and then, last, its owner byte (as the device does). */
static void push_cqe(struct dev_cq *dcq, const struct cqe_spec *c)
{
	uint8_t *e = dcq->ring + 32 * (dcq->pi & ((1u << dcq->log) - 1));

	memset(e, 0, 31);
	wr(e, 0, 8, c->wr_id);
	wr(e, 8, 4, c->byte_len);
	memcpy(e + 12, c->imm, 4);
	wr(e, 16, 4, c->qpn);
	wr(e, 20, 4, c->src_qp);
	e[24] = c->opcode;
	e[25] = c->status;
	e[26] = c->flags;
	wr(e, 28, 2, c->wqe_index);
	e[30] = c->vendor_err;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	e[31] = !((dcq->pi >> dcq->log) & 1);	/* 1 on the first pass */
	dcq->pi++;
}

static uint64_t dbv(uint32_t qn, uint32_t value)
{
	return (uint64_t)value << 32 | qn;
}

/*
 * The RQ's producer index as the device learns it: the OHCA_DB_RQ
 * doorbell, or with doorbell records the QP's record, and a doorbell only
 * when the post went into an empty RQ (@was_empty: every receive completed
 * and polled; the device may have advertised zero credits).
 */
static void check_rq_pi(int line, uint32_t qpn, uint32_t pi, bool was_empty)
{
	const struct ohca_ibv_create_qp *k = fake_qp(qpn, NULL, NULL);
	uint64_t want_db = was_empty ? dbv(qpn, pi) : 0;

	if (!dbrec) {
		if (db_read(OHCA_DB_RQ) != dbv(qpn, pi)) {
			printf("FAIL line %d: RQ doorbell 0x%" PRIx64 ", PI %u\n",
			       line, db_read(OHCA_DB_RQ), pi);
			failures++;
		}
		return;
	}
	if (!k || !(k->comp_mask & OHCA_CREATE_QP_DB_RECORD) ||
	    rd((void *)(uintptr_t)k->rq_db_addr, 0, 4) != pi ||
	    db_read(OHCA_DB_RQ) != want_db) {
		printf("FAIL line %d: RQ record of qp 0x%x not PI %u, or doorbell 0x%" PRIx64
		       " not 0x%" PRIx64 "\n", line, qpn, pi, db_read(OHCA_DB_RQ), want_db);
		failures++;
	}
	db_clear();
}

/* The CQ's consumer index: the OHCA_DB_CQ doorbell, or its record. */
static void check_cq_ci(int line, uint32_t cqn, uint32_t ci)
{
	void *rec = fake_cq_dbrec(cqn);

	if (!dbrec) {
		if (db_read(OHCA_DB_CQ) != dbv(cqn, ci)) {
			printf("FAIL line %d: CQ doorbell 0x%" PRIx64 ", CI %u\n",
			       line, db_read(OHCA_DB_CQ), ci);
			failures++;
		}
		return;
	}
	if (!rec || rd(rec, 0, 4) != ci) {
		printf("FAIL line %d: CQ record of cq 0x%x not CI %u\n", line,
		       cqn, ci);
		failures++;
	}
}

static struct ibv_context *open_ohca(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	return ctx;
}

static int resolve_hooks(void)
{
	db_read = (uint64_t (*)(unsigned int))dlsym(RTLD_DEFAULT,
						    "fake_uverbs_db_read");
	db_clear = (void (*)(void))dlsym(RTLD_DEFAULT, "fake_uverbs_db_clear");
	fake_cq = (int (*)(uint32_t, void **, uint32_t *))dlsym(
		RTLD_DEFAULT, "fake_uverbs_cq");
	fake_cqn = (int (*)(int))dlsym(RTLD_DEFAULT, "fake_uverbs_cqn");
	fake_qp = (const struct ohca_ibv_create_qp *(*)(
		uint32_t, const struct ib_uverbs_create_qp **,
		uint8_t *))dlsym(RTLD_DEFAULT, "fake_uverbs_qp");
	fake_cq_dbrec = (void *(*)(uint32_t))dlsym(RTLD_DEFAULT,
						   "fake_uverbs_cq_dbrec");
	fake_srq = (const struct ohca_ibv_create_srq *(*)(uint32_t))dlsym(
		RTLD_DEFAULT, "fake_uverbs_srq");
	return db_read && db_clear && fake_cq && fake_cqn && fake_qp &&
	       fake_cq_dbrec && fake_srq ? 0 : -1;
}

static int to_rts(struct ibv_qp *qp, uint32_t dest_qpn)
{
	const struct rc_path path = {
		.port = 1, .sgid_index = 1, .mtu = IBV_MTU_1024,
		.dest_qpn = dest_qpn,
		.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
		.rd_atomic = 1, .min_rnr_timer = 12, .timeout = 14,
		.retry_cnt = 7, .rnr_retry = 7,
	};
	const char *step;

	return rc_connect(qp, &path, &step);
}

/* A parent domain's allocator: a bump arena, counting calls. */
struct arena {
	uint8_t *base;
	size_t used, size;
	int allocs, frees, defaults;
	bool use_default;
	uint64_t last_type;
};

static void *arena_alloc(struct ibv_pd *pd, void *pd_context, size_t size,
			 size_t alignment, uint64_t resource_type)
{
	struct arena *a = pd_context;
	size_t at = (a->used + alignment - 1) & ~(alignment - 1);

	(void)pd;
	a->last_type = resource_type;
	if (a->use_default) {
		a->defaults++;
		return IBV_ALLOCATOR_USE_DEFAULT;
	}
	if (at + size > a->size)
		return NULL;
	a->used = at + size;
	a->allocs++;
	return a->base + at;
}

static void arena_free(struct ibv_pd *pd, void *pd_context, void *ptr,
		       uint64_t resource_type)
{
	struct arena *a = pd_context;

	(void)pd;
	(void)resource_type;
	if ((uint8_t *)ptr >= a->base && (uint8_t *)ptr < a->base + a->size)
		a->frees++;
}

/*
 * Parent domains: the rings of a QP and an extended CQ come from the
 * caller's allocator (and go back to it), the kernel sees the PD's
 * handle, and neither domain goes while something depends on it.
 */
static void parent_domain_checks(struct ibv_context *ctx, struct ibv_pd *pd,
				 struct ibv_cq *cq)
{
	struct arena a = { .size = 1 << 20 };
	struct ibv_parent_domain_init_attr pa = {
		.pd = pd,
		.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			     IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT,
		.alloc = arena_alloc,
		.free = arena_free,
		.pd_context = &a,
	};
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 10,
		.wc_flags = IBV_WC_STANDARD_FLAGS,
		.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD,
	};
	struct ibv_qp_init_attr qi = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	const struct ohca_ibv_create_qp *kdrv;
	struct ibv_parent_domain_init_attr bad;
	struct ibv_pd *pdom, *pdom2;
	struct ibv_cq_ex *cx;
	struct ibv_qp *qp;
	uint8_t state;

	a.base = aligned_alloc(4096, a.size);
	CHECK(a.base, "arena");
	if (!a.base)
		return;
	bad = pa;
	bad.comp_mask |= 1u << 7;
	CHECK(!ibv_alloc_parent_domain(ctx, &bad) && errno == EOPNOTSUPP,
	      "unknown comp_mask bit is EOPNOTSUPP");
	/*
	 * A confidential-computing guest's PD (rdma-core 65): accepted,
	 * ohca needs no shared bounce memory; before 65 the bit is unknown.
	 */
	bad = pa;
	bad.comp_mask |= 1u << 2;
	pdom = ibv_alloc_parent_domain(ctx, &bad);
#if OHCA_RDMA_CORE_VERSION >= 65
	CHECK(pdom, "a CC parent domain: %s", strerror(errno));
	if (pdom)
		CHECK_EQ(ibv_dealloc_pd(pdom), 0);
#else
	CHECK(!pdom && errno == EOPNOTSUPP,
	      "comp_mask bit 2 before rdma-core 65 is EOPNOTSUPP");
#endif
	bad = pa;
	bad.free = NULL;
	CHECK(!ibv_alloc_parent_domain(ctx, &bad) && errno == EINVAL,
	      "an allocator without its free is EINVAL");
	bad = pa;
	bad.td = (struct ibv_td *)&a;
	CHECK(!ibv_alloc_parent_domain(ctx, &bad) && errno == EINVAL,
	      "a thread domain (none is ever ours) is EINVAL");

	pdom = ibv_alloc_parent_domain(ctx, &pa);
	CHECK(pdom, "ibv_alloc_parent_domain: %s", strerror(errno));
	if (!pdom)
		goto out;
	CHECK_EQ(pdom->handle, pd->handle);
	bad = pa;
	bad.pd = pdom;
	CHECK(!ibv_alloc_parent_domain(ctx, &bad) && errno == EINVAL,
	      "a parent domain of a parent domain is EINVAL");
	CHECK_EQ(ibv_dealloc_pd(pd), EBUSY);

	ca.parent_domain = pd;
	CHECK(!ibv_create_cq_ex(ctx, &ca) && errno == EINVAL,
	      "a plain PD as a CQ's parent domain is EINVAL");
	ca.parent_domain = pdom;
	cx = ibv_create_cq_ex(ctx, &ca);
	CHECK(cx, "create_cq_ex on a parent domain: %s", strerror(errno));
	CHECK_EQ(a.allocs, 1);
	CHECK_EQ(a.last_type, 2);	/* OHCA_RES_TYPE_CQ (README) */

	qp = ibv_create_qp(pdom, &qi);
	CHECK(qp, "create_qp on a parent domain: %s", strerror(errno));
	CHECK_EQ(a.allocs, 3);
	CHECK_EQ(a.last_type, 1);	/* OHCA_RES_TYPE_QP */
	if (qp) {
		CHECK(qp->pd == pdom, "the QP's pd is the parent domain");
		kdrv = fake_qp(qp->qp_num, NULL, &state);
		CHECK(kdrv && (uint8_t *)(uintptr_t)kdrv->sq_buf_addr >= a.base &&
		      (uint8_t *)(uintptr_t)kdrv->rq_buf_addr <
			      a.base + a.used,
		      "the kernel was given the allocator's rings");
	}
	CHECK_EQ(ibv_dealloc_pd(pdom), EBUSY);
	if (qp)
		CHECK_EQ(ibv_destroy_qp(qp), 0);
	if (cx)
		CHECK_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cx)), 0);
	CHECK_EQ(a.frees, 3);
	CHECK_EQ(ibv_dealloc_pd(pdom), 0);

	/* IBV_ALLOCATOR_USE_DEFAULT: the provider's own rings. */
	a.use_default = true;
	pdom2 = ibv_alloc_parent_domain(ctx, &pa);
	CHECK(pdom2, "second parent domain: %s", strerror(errno));
	if (pdom2) {
		qp = ibv_create_qp(pdom2, &qi);
		CHECK(qp && a.defaults == 2, "QP with the default allocator");
		if (qp)
			CHECK_EQ(ibv_destroy_qp(qp), 0);
		CHECK_EQ(a.frees, 3);
		CHECK_EQ(ibv_dealloc_pd(pdom2), 0);
	}
out:
	free(a.base);
}

/*
 * An RSS QP's CREATE_QP goes through ibv_cmd_create_qp_ex2, whose
 * signature changed in rdma-core 65 (a driver attribute chain): called
 * with the wrong one, libibverbs walks stack bytes as the chain and
 * crashes before any command. The fake kernel has no extended CREATE_QP,
 * so the command must come back refused, with no crash.
 */
static void rss_qp_check(struct ibv_context *ctx, struct ibv_pd *pd)
{
	uint8_t key[40] = { 1 };
	struct ibv_rwq_ind_table tbl = { .context = ctx };
	struct ibv_qp_init_attr_ex ia = {
		.qp_type = IBV_QPT_RAW_PACKET,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE |
			     IBV_QP_INIT_ATTR_RX_HASH,
		.pd = pd,
		.rwq_ind_tbl = &tbl,
		.rx_hash_conf = {
			.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ,
			.rx_hash_key_len = sizeof(key),
			.rx_hash_key = key,
			.rx_hash_fields_mask = IBV_RX_HASH_SRC_IPV4 |
					       IBV_RX_HASH_DST_IPV4,
		},
	};
	struct ibv_qp *qp;

	errno = 0;
	qp = ibv_create_qp_ex(ctx, &ia);
	CHECK(!qp && errno == EOPNOTSUPP,
	      "RSS QP: the fake kernel's refusal came back (errno %d)", errno);
	if (qp)
		ibv_destroy_qp(qp);
}

/*
 * An SRQ's producer index: with a record from a kernel that takes SRQ
 * records, the record alone (never the OHCA_DB_SRQ doorbell, not even
 * into an empty SRQ: it advertises no credits); else the doorbell, and no
 * record offered to a kernel that would refuse it.
 */
static void srq_checks(struct ibv_pd *pd, struct ibv_mr *mr)
{
	struct ibv_srq_init_attr ia = {
		.attr = { .max_wr = 8, .max_sge = 1 },
	};
	const struct ohca_ibv_create_srq *k;
	struct ibv_recv_wr rwr[9], *bad = NULL;
	struct ibv_sge sge[9];
	struct ibv_srq *srq;
	uint8_t *ring;
	uint32_t srqn;
	int rc;

	srq = ibv_create_srq(pd, &ia);
	CHECK(srq, "ibv_create_srq: %s", strerror(errno));
	if (!srq)
		return;
	CHECK_EQ(ia.attr.max_wr, 8);
	srqn = 0;
	for (uint32_t n = 0x60; n < 0x70 && !srqn; n++)
		if (fake_srq(n))
			srqn = n;
	k = fake_srq(srqn);
	CHECK(k, "SRQ known to the kernel");
	if (!k) {
		ibv_destroy_srq(srq);
		return;
	}
	CHECK_EQ(k->comp_mask, srq_dbrec ? OHCA_CREATE_SRQ_DB_RECORD : 0);
	CHECK(srq_dbrec == (k->db_addr != 0) &&
	      k->db_addr % OHCA_DB_RECORD_ALIGN == 0,
	      "SRQ record 0x%llx", (unsigned long long)k->db_addr);
	ring = (uint8_t *)(uintptr_t)k->buf_addr;
	for (int i = 0; i < 9; i++) {
		sge[i] = (struct ibv_sge){ .addr = (uintptr_t)mr->addr + 64 * i,
					   .length = 64, .lkey = mr->lkey };
		rwr[i] = (struct ibv_recv_wr){ .wr_id = 0x500 + i,
					       .sg_list = &sge[i],
					       .num_sge = 1,
					       .next = i < 8 ? &rwr[i + 1] : NULL };
	}
	/* Three into the empty SRQ, then five: full. */
	db_clear();
	rwr[2].next = NULL;
	CHECK_EQ(ibv_post_srq_recv(srq, &rwr[0], &bad), 0);
	for (int i = 0; i < 3; i++) {
		const uint8_t *w = ring + ((size_t)i << k->log_stride);

		CHECK_EQ(rd(w, 0, 8), 0x500 + i);
		CHECK_EQ(rd(w, 8, 1), 1);
		CHECK_EQ(rd(w, 16, 8), (uintptr_t)mr->addr + 64 * i);
		CHECK_EQ(rd(w, 28, 4), mr->lkey);
	}
	if (srq_dbrec) {
		CHECK_EQ(rd((void *)(uintptr_t)k->db_addr, 0, 4), 3);
		CHECK_EQ(db_read(OHCA_DB_SRQ), 0);
	} else {
		CHECK_EQ(db_read(OHCA_DB_SRQ), dbv(srqn, 3));
	}
	rwr[2].next = &rwr[3];
	rc = ibv_post_srq_recv(srq, &rwr[3], &bad);
	CHECK(rc == ENOMEM && bad == &rwr[8], "the 9th WQE: rc %d", rc);
	if (srq_dbrec) {
		CHECK_EQ(rd((void *)(uintptr_t)k->db_addr, 0, 4), 8);
		CHECK_EQ(db_read(OHCA_DB_SRQ), 0);
	} else {
		CHECK_EQ(db_read(OHCA_DB_SRQ), dbv(srqn, 8));
	}
	CHECK_EQ(ibv_destroy_srq(srq), 0);
	CHECK(!fake_srq(srqn), "SRQ destroyed in the kernel");
}

/*
 * "nocaps" mode: a device (or a kernel that does not say) without
 * OHCA_DEV_CAP_ATOMIC_WRITE, FAST_REG and MW. The optional opcodes are
 * refused with EOPNOTSUPP, at ibv_create_qp_ex (their send_ops_flags) and
 * at ibv_post_send, before anything reaches the ring; the rest works.
 */
static int nocaps_checks(struct ibv_context *ctx)
{
	static uint8_t buf[4096] __attribute__((aligned(4096)));
	struct ibv_qp_init_attr_ex xi = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
	};
	static const uint64_t refused[] = {
		IBV_QP_EX_WITH_ATOMIC_WRITE, IBV_QP_EX_WITH_LOCAL_INV,
		IBV_QP_EX_WITH_SEND_WITH_INV, IBV_QP_EX_WITH_BIND_MW,
	};
	static const enum ibv_wr_opcode refused_ops[] = {
		IBV_WR_ATOMIC_WRITE, IBV_WR_LOCAL_INV, IBV_WR_SEND_WITH_INV,
	};
	struct ibv_send_wr swr = {}, *bad = NULL;
	struct ibv_sge sge;
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	size_t i;

	mr = pd ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) :
		  NULL;
	cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	CHECK(pd && mr && cq, "pd/mr/cq: %s", strerror(errno));
	if (!pd || !mr || !cq)
		return 1;
	xi.send_cq = cq;
	xi.recv_cq = cq;
	xi.pd = pd;
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		xi.send_ops_flags = IBV_QP_EX_WITH_SEND | refused[i];
		errno = 0;
		qp = ibv_create_qp_ex(ctx, &xi);
		CHECK(!qp && errno == EOPNOTSUPP,
		      "send_ops_flags %#llx: qp %p errno %d",
		      (unsigned long long)refused[i], (void *)qp, errno);
	}
	/* The mandatory opcodes still work. */
	xi.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE |
			    IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	qp = ibv_create_qp_ex(ctx, &xi);
	CHECK(qp, "ibv_create_qp_ex without optional opcodes: %s",
	      strerror(errno));
	if (!qp)
		return 1;
	CHECK_EQ(to_rts(qp, qp->qp_num), 0);
	db_clear();
	sge = (struct ibv_sge){ .addr = (uintptr_t)buf, .length = 8,
				.lkey = mr->lkey };
	swr.sg_list = &sge;
	swr.num_sge = 1;
	for (i = 0; i < sizeof(refused_ops) / sizeof(refused_ops[0]); i++) {
		swr.opcode = refused_ops[i];
		bad = NULL;
		CHECK_EQ(ibv_post_send(qp, &swr, &bad), EOPNOTSUPP);
		CHECK(bad == &swr, "bad_wr of opcode %d", refused_ops[i]);
	}
	CHECK_EQ(db_read(OHCA_DB_SQ), 0);
	swr.opcode = IBV_WR_RDMA_WRITE;
	CHECK_EQ(ibv_post_send(qp, &swr, &bad), 0);
	CHECK(db_read(OHCA_DB_SQ) == dbv(qp->qp_num, 1), "RDMA WRITE rung");
	CHECK_EQ(ibv_destroy_qp(qp), 0);
	CHECK_EQ(ibv_destroy_cq(cq), 0);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
	if (failures) {
		printf("ohca_verbs_fake_test nocaps: %d failure(s)\n", failures);
		return 1;
	}
	printf("ohca_verbs_fake_test nocaps: OK\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : "ohca0";
	const struct ib_uverbs_create_qp *kcore;
	const struct ohca_ibv_create_qp *kdrv;
	struct ibv_qp_init_attr init = {}, qinit;
	struct ibv_send_wr swr[8], *bad_s;
	struct ibv_recv_wr rwr[8], *bad_r;
	struct ibv_sge sge[8];
	struct ibv_qp_attr qattr;
	struct ibv_context *ctx;
	struct ibv_cq *scq, *rcq;
	struct dev_cq dscq, drcq;
	struct ibv_wc wc[8];
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_qp *qp, *qp2;
	uint8_t *sq, *rq, *buf, state;
	uint32_t qpn, sq_ci;
	void *ring;
	int rc, n;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (resolve_hooks()) {
		printf("FAIL: fake_uverbs hooks not found (run under fakedev.sh)\n");
		return 1;
	}
	dbrec = getenv("FAKE_UVERBS_DB_RECORD") &&
		!strcmp(getenv("FAKE_UVERBS_DB_RECORD"), "1");
	srq_dbrec = dbrec && getenv("FAKE_UVERBS_SRQ_DB_RECORD") &&
		    !strcmp(getenv("FAKE_UVERBS_SRQ_DB_RECORD"), "1");
	printf("doorbell records: %s, SRQ records: %s\n",
	       dbrec ? "on" : "off (MMIO doorbells)",
	       srq_dbrec ? "on" : "off");
	ctx = open_ohca(name);
	if (!ctx) {
		printf("FAIL: cannot open %s: %s\n", name, strerror(errno));
		return 1;
	}
	if (argc > 2 && !strcmp(argv[2], "nocaps"))
		return nocaps_checks(ctx);

	/* ---- PD, MR ---- */
	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "ibv_alloc_pd: %s", strerror(errno));
	buf = aligned_alloc(4096, 65536);
	memset(buf, 0, 65536);
	mr = ibv_reg_mr(pd, buf, 65536,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_READ);
	CHECK(mr, "ibv_reg_mr: %s", strerror(errno));
	if (!pd || !mr)
		return 1;
	CHECK_EQ(mr->lkey, 0x111);
	CHECK_EQ(mr->rkey, 0x122);
	CHECK(mr->addr == buf && mr->length == 65536 && mr->pd == pd,
	      "ibv_mr fields");

	/* ---- CQs: 2^n >= cqe + 1 entries ---- */
	scq = ibv_create_cq(ctx, 5, NULL, NULL, 0);
	rcq = ibv_create_cq(ctx, 100, NULL, NULL, 0);
	CHECK(scq && rcq, "ibv_create_cq: %s", strerror(errno));
	if (!scq || !rcq)
		return 1;
	CHECK_EQ(scq->cqe, 7);
	CHECK_EQ(rcq->cqe, 127);
	dscq.cqn = (uint32_t)fake_cqn(0);
	drcq.cqn = (uint32_t)fake_cqn(1);
	CHECK(!fake_cq(dscq.cqn, &ring, &dscq.log), "send cq known");
	dscq.ring = ring;
	dscq.pi = 0;
	CHECK(!fake_cq(drcq.cqn, &ring, &drcq.log), "recv cq known");
	drcq.ring = ring;
	drcq.pi = 0;
	CHECK_EQ(dscq.log, 3);
	CHECK_EQ(drcq.log, 7);
	CHECK(!ibv_create_cq(ctx, 0, NULL, NULL, 0) && errno == EINVAL,
	      "cqe 0 refused");
	CHECK(!ibv_create_cq(ctx, 70000, NULL, NULL, 0) && errno == EINVAL,
	      "cqe beyond max_cqe refused");

	/* ---- QP: sizes from the caps ---- */
	init.send_cq = scq;
	init.recv_cq = rcq;
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = 5;
	init.cap.max_recv_wr = 3;
	init.cap.max_send_sge = 3;
	init.cap.max_recv_sge = 2;
	init.cap.max_inline_data = 100;
	qinit = init;
	qp = ibv_create_qp(pd, &qinit);
	CHECK(qp, "ibv_create_qp: %s", strerror(errno));
	if (!qp)
		return 1;
	qpn = qp->qp_num;
	/* send stride roundup(64 + max(16*3, 100)) = 256: 12 SGEs, capped
	 * by the device's max_sge 4, and 192 inline bytes, capped by the
	 * kernel's max_inline 128; recv stride roundup(16 + 32) = 64: 3 */
	CHECK_EQ(qinit.cap.max_send_wr, 8);
	CHECK_EQ(qinit.cap.max_recv_wr, 4);
	CHECK_EQ(qinit.cap.max_send_sge, 4);
	CHECK_EQ(qinit.cap.max_recv_sge, 3);
	CHECK_EQ(qinit.cap.max_inline_data, 128);
	kdrv = fake_qp(qpn, &kcore, &state);
	CHECK(kdrv, "qp 0x%x unknown to the fake kernel", qpn);
	if (!kdrv)
		return 1;
	CHECK_EQ(kdrv->sq_log_size, 3);
	CHECK_EQ(kdrv->rq_log_size, 2);
	CHECK_EQ(kdrv->sq_log_stride, 8);
	CHECK_EQ(kdrv->rq_log_stride, 6);
	CHECK_EQ(kdrv->max_inline, 128);
	CHECK_EQ(kcore->max_send_wr, 8);
	CHECK_EQ(kcore->max_recv_wr, 4);
	CHECK_EQ(kcore->max_send_sge, 4);
	CHECK_EQ(kcore->max_recv_sge, 3);
	CHECK_EQ(kcore->max_inline_data, 128);
	sq = (uint8_t *)(uintptr_t)kdrv->sq_buf_addr;
	rq = (uint8_t *)(uintptr_t)kdrv->rq_buf_addr;

	qinit = init;
	qinit.cap.max_send_sge = 5;
	CHECK(!ibv_create_qp(pd, &qinit) && errno == EINVAL,
	      "max_send_sge beyond max_sge refused");
	qinit = init;
	qinit.cap.max_inline_data = 129;
	CHECK(!ibv_create_qp(pd, &qinit) && errno == EINVAL,
	      "max_inline_data beyond the kernel's max_inline 128 refused");
	qinit = init;
	qinit.cap.max_send_wr = 4097;
	CHECK(!ibv_create_qp(pd, &qinit) && errno == EINVAL,
	      "max_send_wr beyond max_qp_wr refused");

	/* ---- modify to RTS, query ---- */
	rc = to_rts(qp, qpn);
	CHECK(!rc, "modify to RTS: %s", strerror(rc));
	fake_qp(qpn, NULL, &state);
	CHECK_EQ(state, IBV_QPS_RTS);
	memset(&qattr, 0, sizeof(qattr));
	memset(&qinit, 0, sizeof(qinit));
	rc = ibv_query_qp(qp, &qattr, IBV_QP_STATE | IBV_QP_CAP, &qinit);
	CHECK(!rc, "ibv_query_qp: %s", strerror(rc));
	CHECK_EQ(qattr.qp_state, IBV_QPS_RTS);
	CHECK_EQ(qattr.cap.max_send_wr, 8);
	CHECK_EQ(qinit.cap.max_send_wr, 8);
	CHECK_EQ(qinit.cap.max_recv_sge, 3);
	CHECK_EQ(qinit.cap.max_inline_data, 128);

	/* ---- post_send: the WQE bytes ---- */
	db_clear();
	memset(swr, 0, sizeof(swr));
	for (int i = 0; i < 64; i++)
		buf[2000 + i] = (uint8_t)(0xa0 + i);
	memcpy(buf + 3000, "hello, inline", 13);
	sge[0] = (struct ibv_sge){ (uintptr_t)buf + 1, 100, mr->lkey };
	sge[1] = (struct ibv_sge){ (uintptr_t)buf + 1000, 37, mr->lkey };
	sge[2] = (struct ibv_sge){ (uintptr_t)buf + 4097, 4000, mr->lkey };
	sge[3] = (struct ibv_sge){ (uintptr_t)buf + 8192, 3, mr->lkey };
	sge[4] = (struct ibv_sge){ (uintptr_t)buf + 3000, 13, mr->lkey };
	sge[5] = (struct ibv_sge){ (uintptr_t)buf + 2000, 50, mr->lkey };
	swr[0].wr_id = 0x1111;
	swr[0].opcode = IBV_WR_SEND;
	swr[0].sg_list = &sge[0];
	swr[0].num_sge = 2;
	swr[0].send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	swr[0].next = &swr[1];
	swr[1].wr_id = 0x2222;
	swr[1].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	swr[1].imm_data = htonl(0xdeadbeef);
	swr[1].sg_list = &sge[2];
	swr[1].num_sge = 1;
	swr[1].send_flags = IBV_SEND_FENCE;
	swr[1].wr.rdma.remote_addr = 0x123456789abull;
	swr[1].wr.rdma.rkey = 0x4242;
	swr[1].next = &swr[2];
	swr[2].wr_id = 0x3333;
	swr[2].opcode = IBV_WR_RDMA_READ;
	swr[2].sg_list = &sge[3];
	swr[2].num_sge = 1;
	swr[2].send_flags = IBV_SEND_SIGNALED;
	swr[2].wr.rdma.remote_addr = 0xfedcba98765ull;
	swr[2].wr.rdma.rkey = 0x77;
	swr[2].next = &swr[3];
	swr[3].wr_id = 0x4444;
	swr[3].opcode = IBV_WR_SEND_WITH_IMM;
	swr[3].imm_data = htonl(0x01020304);
	swr[3].sg_list = &sge[4];
	swr[3].num_sge = 2;
	swr[3].send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	bad_s = NULL;
	rc = ibv_post_send(qp, &swr[0], &bad_s);
	CHECK(!rc && !bad_s, "post_send: %s", strerror(rc));
	CHECK_EQ(db_read(OHCA_DB_SQ), dbv(qpn, 4));
	CHECK_EQ(db_read(OHCA_DB_RQ), 0);
	/* WQE 0: SEND, 2 SGEs */
	CHECK_EQ(rd(sq, 0, 8), 0x1111);
	CHECK_EQ(rd(sq, 8, 1), OHCA_WR_SEND);
	CHECK_EQ(rd(sq, 9, 1), OHCA_WQE_SIGNALED | OHCA_WQE_SOLICITED);
	CHECK_EQ(rd(sq, 10, 1), 2);
	CHECK_EQ(rd(sq, 64, 8), (uintptr_t)buf + 1);
	CHECK_EQ(rd(sq, 72, 4), 100);
	CHECK_EQ(rd(sq, 76, 4), 0x111);
	CHECK_EQ(rd(sq, 80, 8), (uintptr_t)buf + 1000);
	CHECK_EQ(rd(sq, 88, 4), 37);
	CHECK_EQ(rd(sq, 92, 4), 0x111);
	/* WQE 1: WRITE_IMM, fenced, unsignaled */
	CHECK_EQ(rd(sq, 256 + 0, 8), 0x2222);
	CHECK_EQ(rd(sq, 256 + 8, 1), OHCA_WR_RDMA_WRITE_IMM);
	CHECK_EQ(rd(sq, 256 + 9, 1), OHCA_WQE_FENCE);
	CHECK_EQ(rd(sq, 256 + 10, 1), 1);
	CHECK(!memcmp(sq + 256 + 12, "\xde\xad\xbe\xef", 4),
	      "imm_data as on the wire");
	CHECK_EQ(rd(sq, 256 + 16, 8), 0x123456789abull);
	CHECK_EQ(rd(sq, 256 + 24, 4), 0x4242);
	CHECK_EQ(rd(sq, 256 + 64, 8), (uintptr_t)buf + 4097);
	CHECK_EQ(rd(sq, 256 + 72, 4), 4000);
	/* WQE 2: READ */
	CHECK_EQ(rd(sq, 512 + 0, 8), 0x3333);
	CHECK_EQ(rd(sq, 512 + 8, 1), OHCA_WR_RDMA_READ);
	CHECK_EQ(rd(sq, 512 + 9, 1), OHCA_WQE_SIGNALED);
	CHECK_EQ(rd(sq, 512 + 16, 8), 0xfedcba98765ull);
	CHECK_EQ(rd(sq, 512 + 24, 4), 0x77);
	CHECK_EQ(rd(sq, 512 + 64, 8), (uintptr_t)buf + 8192);
	CHECK_EQ(rd(sq, 512 + 72, 4), 3);
	/* WQE 3: SEND_IMM inline, 63 bytes from two SGEs after the header */
	CHECK_EQ(rd(sq, 768 + 0, 8), 0x4444);
	CHECK_EQ(rd(sq, 768 + 8, 1), OHCA_WR_SEND_IMM);
	CHECK_EQ(rd(sq, 768 + 9, 1), OHCA_WQE_SIGNALED | OHCA_WQE_INLINE);
	CHECK_EQ(rd(sq, 768 + 10, 1), 0);
	CHECK(!memcmp(sq + 768 + 12, "\x01\x02\x03\x04", 4), "inline imm");
	CHECK_EQ(rd(sq, 768 + 28, 4), 63);
	CHECK(!memcmp(sq + 768 + 64, "hello, inline", 13) &&
		      !memcmp(sq + 768 + 64 + 13, buf + 2000, 50),
	      "inline data copied");

	/* invalid requests: EINVAL with bad_wr, the good ones before posted */
	memset(&swr[4], 0, sizeof(swr[4]) * 4);
	swr[4].wr_id = 0x5555;
	swr[4].opcode = IBV_WR_SEND;
	swr[4].sg_list = &sge[0];
	swr[4].num_sge = 1;
	swr[4].next = &swr[5];
	swr[5].opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	swr[5].sg_list = &sge[0];
	swr[5].num_sge = 1;
	rc = ibv_post_send(qp, &swr[4], &bad_s);
	CHECK(rc == EINVAL && bad_s == &swr[5], "atomic refused: rc %d", rc);
	CHECK_EQ(db_read(OHCA_DB_SQ), dbv(qpn, 5));
	swr[5].opcode = IBV_WR_SEND;
	swr[5].num_sge = 5;
	rc = ibv_post_send(qp, &swr[5], &bad_s);
	CHECK(rc == EINVAL && bad_s == &swr[5], "5 SGEs refused: rc %d", rc);
	swr[5].num_sge = 2;
	sge[6] = (struct ibv_sge){ (uintptr_t)buf, 100, 0 };
	sge[7] = (struct ibv_sge){ (uintptr_t)buf, 93, 0 };
	swr[5].sg_list = &sge[6];
	swr[5].send_flags = IBV_SEND_INLINE;
	rc = ibv_post_send(qp, &swr[5], &bad_s);
	CHECK(rc == EINVAL && bad_s == &swr[5], "193 inline bytes refused: rc %d", rc);
	swr[5].opcode = IBV_WR_RDMA_READ;
	swr[5].num_sge = 1;
	rc = ibv_post_send(qp, &swr[5], &bad_s);
	CHECK(rc == EINVAL && bad_s == &swr[5], "inline READ refused: rc %d", rc);
	CHECK_EQ(db_read(OHCA_DB_SQ), dbv(qpn, 5));

	/* queue full: 8 slots, 5 used */
	for (int i = 4; i < 8; i++) {
		memset(&swr[i], 0, sizeof(swr[i]));
		swr[i].wr_id = 0x6000 + i;
		swr[i].opcode = IBV_WR_SEND;
		swr[i].next = i < 7 ? &swr[i + 1] : NULL;
	}
	rc = ibv_post_send(qp, &swr[4], &bad_s);
	CHECK(rc == ENOMEM && bad_s == &swr[7], "full SQ: rc %d", rc);
	CHECK_EQ(db_read(OHCA_DB_SQ), dbv(qpn, 8));
	CHECK_EQ(rd(sq, 7 * 256, 8), 0x6006);

	/* ---- poll: nothing yet, no doorbell ---- */
	CHECK_EQ(ibv_poll_cq(scq, 8, wc), 0);
	CHECK_EQ(db_read(OHCA_DB_CQ), 0);

	/* send CQE for WQE 0 retires 1 slot */
	push_cqe(&dscq, &(struct cqe_spec){ .wr_id = 0x1111, .qpn = qpn,
					   .opcode = OHCA_CQE_SEND,
					   .wqe_index = 0 });
	memset(wc, 0xff, sizeof(wc));
	n = ibv_poll_cq(scq, 8, wc);
	CHECK_EQ(n, 1);
	CHECK_EQ(wc[0].wr_id, 0x1111);
	CHECK_EQ(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(wc[0].opcode, IBV_WC_SEND);
	CHECK_EQ(wc[0].qp_num, qpn);
	CHECK_EQ(wc[0].wc_flags, 0);
	CHECK_EQ(wc[0].vendor_err, 0);
	check_cq_ci(__LINE__, dscq.cqn, 1);
	swr[7].next = &swr[6];
	swr[6].next = NULL;
	rc = ibv_post_send(qp, &swr[7], &bad_s);
	CHECK(rc == ENOMEM && bad_s == &swr[6], "one slot freed: rc %d", rc);
	CHECK_EQ(db_read(OHCA_DB_SQ), dbv(qpn, 9));
	CHECK_EQ(rd(sq, 0, 8), 0x6007);	/* wrapped into slot 0 */

	/* READ completion at wqe_index 2 retires the unsignaled WRITE too */
	push_cqe(&dscq, &(struct cqe_spec){ .wr_id = 0x3333, .qpn = qpn,
					   .byte_len = 3,
					   .opcode = OHCA_CQE_RDMA_READ,
					   .wqe_index = 2 });
	n = ibv_poll_cq(scq, 8, wc);
	CHECK_EQ(n, 1);
	CHECK_EQ(wc[0].wr_id, 0x3333);
	CHECK_EQ(wc[0].opcode, IBV_WC_RDMA_READ);
	CHECK_EQ(wc[0].byte_len, 3);
	swr[4].next = &swr[5];
	swr[5] = swr[6];
	swr[5].next = &swr[6];
	swr[6].next = NULL;
	rc = ibv_post_send(qp, &swr[4], &bad_s);
	CHECK(rc == ENOMEM && bad_s == &swr[6], "two slots freed: rc %d", rc);
	CHECK_EQ(db_read(OHCA_DB_SQ), dbv(qpn, 11));
	sq_ci = 3;

	/* ---- post_recv ---- */
	memset(rwr, 0, sizeof(rwr));
	rwr[0].wr_id = 0xa0;
	rwr[0].sg_list = &sge[0];
	rwr[0].num_sge = 2;
	rwr[0].next = &rwr[1];
	rwr[1].wr_id = 0xa1;
	rwr[1].sg_list = &sge[1];
	rwr[1].num_sge = 3;
	rc = ibv_post_recv(qp, &rwr[0], &bad_r);
	CHECK(!rc, "post_recv: %s", strerror(rc));
	check_rq_pi(__LINE__, qpn, 2, true);
	CHECK_EQ(rd(rq, 0, 8), 0xa0);
	CHECK_EQ(rd(rq, 8, 1), 2);
	CHECK_EQ(rd(rq, 16, 8), (uintptr_t)buf + 1);
	CHECK_EQ(rd(rq, 24, 4), 100);
	CHECK_EQ(rd(rq, 28, 4), 0x111);
	CHECK_EQ(rd(rq, 32 + 8, 4), 37);
	CHECK_EQ(rd(rq, 64, 8), 0xa1);
	CHECK_EQ(rd(rq, 64 + 8, 1), 3);
	CHECK_EQ(rd(rq, 64 + 16, 8), (uintptr_t)buf + 1000);
	CHECK_EQ(rd(rq, 64 + 32, 8), (uintptr_t)buf + 4097);
	CHECK_EQ(rd(rq, 64 + 32 + 8, 4), 4000);
	CHECK_EQ(rd(rq, 64 + 48, 8), (uintptr_t)buf + 8192);
	rwr[2] = rwr[0];
	rwr[2].num_sge = 4;
	rwr[2].next = NULL;
	rc = ibv_post_recv(qp, &rwr[2], &bad_r);
	CHECK(rc == EINVAL && bad_r == &rwr[2], "4 recv SGEs refused: %d", rc);
	for (int i = 2; i < 5; i++) {
		rwr[i] = rwr[0];
		rwr[i].wr_id = 0xa0 + i;
		rwr[i].next = i < 4 ? &rwr[i + 1] : NULL;
	}
	rc = ibv_post_recv(qp, &rwr[2], &bad_r);
	CHECK(rc == ENOMEM && bad_r == &rwr[4], "full RQ: rc %d", rc);
	check_rq_pi(__LINE__, qpn, 4, false);

	/* receive completions: imm as on the wire, RDMA_WITH_IMM */
	push_cqe(&drcq, &(struct cqe_spec){ .wr_id = 0xa0, .qpn = qpn,
					   .byte_len = 137, .src_qp = 0x77,
					   .imm = { 0xde, 0xad, 0xbe, 0xef },
					   .opcode = OHCA_CQE_RECV,
					   .flags = OHCA_CQE_F_IMM });
	push_cqe(&drcq, &(struct cqe_spec){ .wr_id = 0xa1, .qpn = qpn,
					   .byte_len = 4000, .src_qp = 0x77,
					   .imm = { 1, 2, 3, 4 },
					   .opcode = OHCA_CQE_RECV_RDMA_WITH_IMM,
					   .flags = OHCA_CQE_F_IMM });
	push_cqe(&drcq, &(struct cqe_spec){ .wr_id = 0xa2, .qpn = qpn,
					   .byte_len = 5, .src_qp = 0x77,
					   .opcode = OHCA_CQE_RECV });
	n = ibv_poll_cq(rcq, 2, wc);
	CHECK_EQ(n, 2);
	CHECK_EQ(wc[0].wr_id, 0xa0);
	CHECK_EQ(wc[0].opcode, IBV_WC_RECV);
	CHECK_EQ(wc[0].byte_len, 137);
	CHECK_EQ(wc[0].src_qp, 0x77);
	CHECK_EQ(wc[0].wc_flags, IBV_WC_WITH_IMM);
	CHECK_EQ(ntohl(wc[0].imm_data), 0xdeadbeef);
	CHECK_EQ(wc[1].wr_id, 0xa1);
	CHECK_EQ(wc[1].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	CHECK_EQ(ntohl(wc[1].imm_data), 0x01020304);
	check_cq_ci(__LINE__, drcq.cqn, 2);
	n = ibv_poll_cq(rcq, 8, wc);
	CHECK_EQ(n, 1);
	CHECK_EQ(wc[0].wr_id, 0xa2);
	CHECK_EQ(wc[0].wc_flags, 0);
	check_cq_ci(__LINE__, drcq.cqn, 3);
	rwr[4].next = &rwr[5];
	rwr[5] = rwr[4];
	rwr[5].wr_id = 0xa5;
	rwr[5].next = &rwr[6];
	rwr[6] = rwr[4];
	rwr[6].wr_id = 0xa6;
	rwr[6].next = &rwr[7];
	rwr[7] = rwr[4];
	rwr[7].next = NULL;
	rc = ibv_post_recv(qp, &rwr[4], &bad_r);
	CHECK(rc == ENOMEM && bad_r == &rwr[7], "3 RQ slots freed: rc %d", rc);
	check_rq_pi(__LINE__, qpn, 7, false);

	/* error statuses and vendor errors */
	push_cqe(&dscq, &(struct cqe_spec){ .wr_id = 0x10, .qpn = qpn,
					   .opcode = OHCA_CQE_SEND,
					   .status = OHCA_CQE_WR_FLUSH_ERR,
					   .vendor_err = OHCA_VERR_FLUSH,
					   .wqe_index = (uint16_t)(sq_ci - 1) });
	push_cqe(&dscq, &(struct cqe_spec){ .wr_id = 0x11, .qpn = qpn,
					   .opcode = OHCA_CQE_RDMA_WRITE,
					   .status = OHCA_CQE_FATAL_ERR,
					   .vendor_err = OHCA_VERR_DMA,
					   .wqe_index = (uint16_t)(sq_ci - 1) });
	push_cqe(&dscq, &(struct cqe_spec){ .wr_id = 0x12, .qpn = qpn,
					   .opcode = OHCA_CQE_SEND,
					   .status = OHCA_CQE_REM_ACCESS_ERR,
					   .vendor_err = OHCA_VERR_REMOTE_NAK,
					   .wqe_index = (uint16_t)(sq_ci - 1) });
	push_cqe(&dscq, &(struct cqe_spec){ .wr_id = 0x13, .qpn = qpn,
					   .opcode = OHCA_CQE_SEND,
					   .status = 200,
					   .wqe_index = (uint16_t)(sq_ci - 1) });
	/* a CQE of an unknown QP is consumed and dropped */
	push_cqe(&dscq, &(struct cqe_spec){ .wr_id = 0x14, .qpn = 0xabcdef,
					   .opcode = OHCA_CQE_SEND });
	n = ibv_poll_cq(scq, 8, wc);
	CHECK_EQ(n, 4);
	CHECK_EQ(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	CHECK_EQ(wc[0].vendor_err, OHCA_VERR_FLUSH);
	CHECK_EQ(wc[1].status, IBV_WC_FATAL_ERR);
	CHECK_EQ(wc[1].opcode, IBV_WC_RDMA_WRITE);
	CHECK_EQ(wc[1].vendor_err, OHCA_VERR_DMA);
	CHECK_EQ(wc[2].status, IBV_WC_REM_ACCESS_ERR);
	CHECK_EQ(wc[3].status, IBV_WC_GENERAL_ERR);
	CHECK_EQ(wc[3].wr_id, 0x13);
	check_cq_ci(__LINE__, dscq.cqn, 7);
	/* a stale wqe_index (before the consumer index) retired nothing */
	rc = ibv_post_send(qp, &swr[6], &bad_s);
	CHECK(rc == ENOMEM, "SQ still full: rc %d", rc);

	/* ---- owner-bit phase over several wraps of the 8-entry CQ ---- */
	{
		uint64_t next_wr = 0x1000, expect_wr = 0x1000;
		int total = 0;

		for (int round = 0; round < 6; round++) {
			int batch = 1 + (round * 3) % 7;

			for (int i = 0; i < batch; i++)
				push_cqe(&dscq, &(struct cqe_spec){
					.wr_id = next_wr++, .qpn = qpn,
					.opcode = OHCA_CQE_SEND,
					.wqe_index = (uint16_t)(sq_ci - 1) });
			for (int got = 0; got < batch;) {
				n = ibv_poll_cq(scq, 3, wc);
				CHECK(n > 0 && n <= 3, "round %d: polled %d",
				      round, n);
				if (n <= 0)
					break;
				for (int i = 0; i < n; i++)
					CHECK_EQ(wc[i].wr_id, expect_wr++);
				got += n;
			}
			/* the previous pass's entries are not taken again */
			CHECK_EQ(ibv_poll_cq(scq, 8, wc), 0);
			total += batch;
			check_cq_ci(__LINE__, dscq.cqn,
				    dscq.pi & OHCA_DB_CQ_CI_MASK);
		}
		CHECK(dscq.pi >= 3 * 8, "only %u CQEs: %d passes", dscq.pi,
		      total);
	}

	/* Doorbell records: polling rang no CQ doorbell at all. */
	if (dbrec)
		CHECK_EQ(db_read(OHCA_DB_CQ), 0);

	/* ---- arming: a doorbell with the consumer index ---- */
	CHECK_EQ(ibv_req_notify_cq(scq, 0), 0);
	CHECK_EQ(db_read(OHCA_DB_CQ),
		 dbv(dscq.cqn, dscq.pi | OHCA_DB_CQ_ARM_NEXT));
	CHECK_EQ(ibv_req_notify_cq(rcq, 1), 0);
	CHECK_EQ(db_read(OHCA_DB_CQ),
		 dbv(drcq.cqn, drcq.pi | OHCA_DB_CQ_ARM_SOLICITED));

	/* ---- back to RESET: the rings start over, its unpolled CQEs are
	 * dropped (they must not retire the new rings' slots) ---- */
	push_cqe(&dscq, &(struct cqe_spec){ .wr_id = 0x98, .qpn = qpn,
					   .opcode = OHCA_CQE_SEND,
					   .wqe_index = 5 });
	memset(&qattr, 0, sizeof(qattr));
	qattr.qp_state = IBV_QPS_RESET;
	rc = ibv_modify_qp(qp, &qattr, IBV_QP_STATE);
	CHECK(!rc, "modify to RESET: %s", strerror(rc));
	CHECK(sq[0] == 0 && rq[0] == 0, "rings cleared");
	CHECK_EQ(ibv_poll_cq(scq, 8, wc), 0);
	check_cq_ci(__LINE__, dscq.cqn, dscq.pi & OHCA_DB_CQ_CI_MASK);
	rc = to_rts(qp, qpn);
	CHECK(!rc, "modify to RTS again: %s", strerror(rc));
	swr[6].next = NULL;
	rc = ibv_post_send(qp, &swr[6], &bad_s);
	CHECK(!rc, "post after RESET: rc %d", rc);
	CHECK_EQ(db_read(OHCA_DB_SQ), dbv(qpn, 1));

	/* ---- UD: the address vector from the AH in each send WQE, the GRH
	 * flag of UD receive completions ---- */
	{
		struct ibv_ah_attr aa = {};
		struct ibv_qp *ud;
		struct ibv_ah *ah;
		uint8_t *usq;

		aa.port_num = 1;
		CHECK(!ibv_create_ah(pd, &aa) && errno == EINVAL,
		      "AH without GRH refused with EINVAL");
		aa.is_global = 1;
		memcpy(aa.grh.dgid.raw,
		       "\0\0\0\0\0\0\0\0\0\0\xff\xff\x0a\0\0\x07", 16);
		aa.grh.sgid_index = 1;
		aa.grh.hop_limit = 9;
		aa.grh.traffic_class = 0x20;
		aa.grh.flow_label = 0x12345;
		ah = ibv_create_ah(pd, &aa);
		CHECK(ah, "ibv_create_ah: %s", strerror(errno));
		qinit = init;
		qinit.qp_type = IBV_QPT_UD;
		qinit.cap.max_inline_data = 0;
		ud = ibv_create_qp(pd, &qinit);
		CHECK(ud, "UD QP: %s", strerror(errno));
		if (!ah || !ud)
			return 1;
		/* stride roundup(112 + 48) = 256: (256 - 112) / 16 = 9 SGEs
		 * (the device's 4), 144 inline bytes, capped at the kernel's
		 * max_inline 128 */
		CHECK_EQ(qinit.cap.max_send_sge, 4);
		CHECK_EQ(qinit.cap.max_inline_data, 128);
		kdrv = fake_qp(ud->qp_num, &kcore, NULL);
		CHECK(kdrv && kcore->qp_type == IB_UVERBS_QPT_UD, "UD QP known");
		if (!kdrv)
			return 1;
		usq = (uint8_t *)(uintptr_t)kdrv->sq_buf_addr;
		db_clear();
		memset(&swr[0], 0, sizeof(swr[0]));
		swr[0].wr_id = 0x7777;
		swr[0].opcode = IBV_WR_SEND_WITH_IMM;
		swr[0].imm_data = htonl(0x0a0b0c0d);
		swr[0].sg_list = &sge[0];
		swr[0].num_sge = 1;
		swr[0].send_flags = IBV_SEND_SIGNALED;
		swr[0].wr.ud.ah = ah;
		swr[0].wr.ud.remote_qpn = 0x123456;
		swr[0].wr.ud.remote_qkey = 0x11111111;
		/* A QP in RESET takes no work requests (IBTA): EINVAL. */
		rc = ibv_post_send(ud, &swr[0], &bad_s);
		CHECK(rc == EINVAL && bad_s == &swr[0], "post_send in RESET: rc %d", rc);
		CHECK_EQ(db_read(OHCA_DB_SQ), 0);
		memset(&qattr, 0, sizeof(qattr));
		qattr.qp_state = IBV_QPS_INIT;
		rc = ibv_modify_qp(ud, &qattr, IBV_QP_STATE);
		CHECK(!rc, "UD to INIT: %s", strerror(rc));
		rc = ibv_post_send(ud, &swr[0], &bad_s);
		CHECK(!rc, "UD post_send: %s", strerror(rc));
		CHECK_EQ(db_read(OHCA_DB_SQ), dbv(ud->qp_num, 1));
		CHECK_EQ(rd(usq, 8, 1), OHCA_WR_SEND_IMM);
		CHECK_EQ(rd(usq, 10, 1), 1);
		CHECK(!memcmp(usq + 64, aa.grh.dgid.raw, 16), "AV dgid");
		CHECK(!memcmp(usq + 80, "\x02\0\0\0\0\x07", 6),
		      "AV dmac from the kernel");
		CHECK_EQ(rd(usq, 86, 2), 0xffff);
		CHECK_EQ(rd(usq, 88, 4), 0x12345);
		CHECK_EQ(rd(usq, 92, 1), 9);
		CHECK_EQ(rd(usq, 93, 1), 0x20);
		CHECK_EQ(rd(usq, 94, 1), 1);
		CHECK_EQ(rd(usq, 95, 1), OHCA_NET_IPV4);
		CHECK_EQ(rd(usq, 96, 4), 0x123456);
		CHECK_EQ(rd(usq, 100, 4), 0x11111111);
		CHECK_EQ(rd(usq, 112, 8), (uintptr_t)buf + 1);
		CHECK_EQ(rd(usq, 120, 4), 100);
		/*
		 * UCX's UD send (ud_verbs, UCX 1.13): an AH whose flow label
		 * is ~(path factor * path index), all 32 bits set for path 0
		 * (UCX picks the RoCE UDP source port that way), and an
		 * inline SEND of two SGEs (its header, then the payload). The
		 * GRH has 20 bits of flow label: the vector carries those
		 * only, the device refuses one with more (LOC_QP_OP_ERR /
		 * BAD_AV, the UD send error UCX hit).
		 */
		{
			struct ibv_ah_attr ua = aa;
			uint8_t hdr[24], payload[8];
			struct ibv_sge usge[2] = {
				{ (uintptr_t)hdr, sizeof(hdr), 0 },
				{ (uintptr_t)payload, sizeof(payload), 0 },
			};
			struct ibv_send_wr uwr = {
				.wr_id = 0xbeebbeeb, .sg_list = usge,
				.num_sge = 2, .opcode = IBV_WR_SEND,
				.send_flags = IBV_SEND_INLINE |
					      IBV_SEND_SIGNALED,
			};
			struct ibv_ah *uah;
			uint8_t *w;

			for (size_t i = 0; i < sizeof(hdr); i++)
				hdr[i] = (uint8_t)(0x10 + i);
			memset(payload, 0xcd, sizeof(payload));
			ua.grh.flow_label = ~0u;
			uah = ibv_create_ah(pd, &ua);
			CHECK(uah, "UCX's AH: %s", strerror(errno));
			if (!uah)
				return 1;
			uwr.wr.ud.ah = uah;
			uwr.wr.ud.remote_qpn = 0x1234;
			uwr.wr.ud.remote_qkey = 0x1ee7a330;
			rc = ibv_post_send(ud, &uwr, &bad_s);
			CHECK(!rc, "UCX's UD post_send: %s", strerror(rc));
			w = usq + 256; /* WQE 1 of a 256-byte stride */
			CHECK_EQ(db_read(OHCA_DB_SQ), dbv(ud->qp_num, 2));
			CHECK_EQ(rd(w, 8, 1), OHCA_WR_SEND);
			CHECK_EQ(rd(w, 9, 1), OHCA_WQE_INLINE |
						OHCA_WQE_SIGNALED);
			CHECK_EQ(rd(w, 28, 4), sizeof(hdr) + sizeof(payload));
			CHECK_EQ(rd(w, 88, 4), 0xfffff);
			CHECK_EQ(rd(w, 96, 4), 0x1234);
			CHECK_EQ(rd(w, 100, 4), 0x1ee7a330);
			CHECK(!memcmp(w + 112, hdr, sizeof(hdr)) &&
			      !memcmp(w + 112 + sizeof(hdr), payload,
				      sizeof(payload)), "inline data");
			CHECK_EQ(ibv_destroy_ah(uah), 0);
		}
		/* RDMA opcodes have no place on UD */
		swr[0].opcode = IBV_WR_RDMA_WRITE;
		rc = ibv_post_send(ud, &swr[0], &bad_s);
		CHECK(rc == EINVAL && bad_s == &swr[0], "RDMA on UD refused");
		/* a UD receive: GRH flag, source QP, SL */
		push_cqe(&drcq, &(struct cqe_spec){
			.wr_id = 0x88, .byte_len = 40 + 5, .qpn = ud->qp_num,
			.src_qp = 0x42, .opcode = OHCA_CQE_RECV,
			.flags = OHCA_CQE_F_GRH | OHCA_CQE_F_IPV4 });
		memset(wc, 0, sizeof(wc));
		CHECK_EQ(ibv_poll_cq(rcq, 8, wc), 1);
		CHECK_EQ(wc[0].wr_id, 0x88);
		CHECK_EQ(wc[0].byte_len, 45);
		CHECK_EQ(wc[0].src_qp, 0x42);
		CHECK(wc[0].wc_flags == IBV_WC_GRH, "wc_flags %#x",
		      wc[0].wc_flags);
		/* the SL tells the frame's L3 header as mlx5 does (UDP bit
		 * 3, IPv4 2): UCX's UD reads the GRH's destination by it */
		CHECK_EQ(wc[0].sl, 0x8 | 0x2);
		push_cqe(&drcq, &(struct cqe_spec){
			.wr_id = 0x89, .byte_len = 40, .qpn = ud->qp_num,
			.opcode = OHCA_CQE_RECV, .flags = OHCA_CQE_F_GRH });
		CHECK_EQ(ibv_poll_cq(rcq, 8, wc), 1);
		CHECK_EQ(wc[0].sl, 0x8 | 0x1);
		CHECK_EQ(ibv_destroy_qp(ud), 0);
		CHECK_EQ(ibv_destroy_ah(ah), 0);
	}

	/* ---- teardown: unpolled CQEs of a destroyed QP are dropped, those
	 * of another QP on the same CQ stay ---- */
	qinit = init;
	qp2 = ibv_create_qp(pd, &qinit);
	CHECK(qp2, "second qp: %s", strerror(errno));
	if (!qp2)
		return 1;
	push_cqe(&dscq, &(struct cqe_spec){ .wr_id = 0x99, .qpn = qpn,
					   .opcode = OHCA_CQE_SEND });
	push_cqe(&dscq, &(struct cqe_spec){ .wr_id = 0x9a,
					   .qpn = qp2->qp_num,
					   .opcode = OHCA_CQE_SEND,
					   .status = OHCA_CQE_WR_FLUSH_ERR });
	push_cqe(&dscq, &(struct cqe_spec){ .wr_id = 0x9b, .qpn = qpn,
					   .opcode = OHCA_CQE_SEND });
	CHECK_EQ(ibv_destroy_qp(qp), 0);
	CHECK(!fake_qp(qpn, NULL, NULL), "qp gone from the fake kernel");
	memset(wc, 0, sizeof(wc));
	CHECK_EQ(ibv_poll_cq(scq, 8, wc), 1);
	CHECK_EQ(wc[0].wr_id, 0x9a);
	CHECK_EQ(wc[0].qp_num, qp2->qp_num);
	check_cq_ci(__LINE__, dscq.cqn, dscq.pi & OHCA_DB_CQ_CI_MASK);
	/* and one arriving for a QP number nobody has is dropped too */
	push_cqe(&dscq, &(struct cqe_spec){ .wr_id = 0x9c, .qpn = qpn,
					   .opcode = OHCA_CQE_SEND });
	CHECK_EQ(ibv_poll_cq(scq, 8, wc), 0);

	/* ---- extended CQ and QP: start/next/end_poll and read_* on the
	 * ring poll_cq reads, one doorbell when the poll ends; an ibv_wr_*
	 * chain of two WQEs in one doorbell; wr_abort and a failed chain
	 * ring none ---- */
	{
		struct ibv_cq_init_attr_ex ca = { .cqe = 7,
			.wc_flags = IBV_WC_STANDARD_FLAGS |
				    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP };
		struct ibv_qp_init_attr_ex xi = {
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 4, .max_recv_wr = 4,
				 .max_send_sge = 2, .max_recv_sge = 1,
				 .max_inline_data = 32 },
			.comp_mask = IBV_QP_INIT_ATTR_PD |
				     IBV_QP_INIT_ATTR_CREATE_FLAGS |
				     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.pd = pd,
			.send_ops_flags = IBV_QP_EX_WITH_SEND |
					  IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
					  IBV_QP_EX_WITH_BIND_MW |
					  IBV_QP_EX_WITH_LOCAL_INV |
					  IBV_QP_EX_WITH_ATOMIC_WRITE,
		};
		const uint8_t aw[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
		uint32_t aw_at;
		/* the provider reads these fields only (ALLOC_MW is the
		 * kernel's) */
		struct ibv_mw mw2 = { .context = ctx, .pd = pd,
				      .rkey = 0x4500, .handle = 1,
				      .type = IBV_MW_TYPE_2 };
		struct ibv_mw mw1 = mw2;
		struct ibv_mw_bind_info bi = { .mr = mr,
			.addr = (uintptr_t)buf + 64, .length = 128,
			.mw_access_flags = IBV_ACCESS_REMOTE_WRITE };
		struct ibv_sge many[32] = {};
		struct ibv_poll_cq_attr pa = {};
		bool used[64] = { false };
		struct ibv_cq_ex *cx;
		struct ibv_qp_ex *xe;
		struct ibv_qp *xq;
		struct dev_cq dx = { 0 };
		uint8_t *xsq;
		uint32_t stride;
		void *xring;
		int slot;

		CHECK(!ibv_create_cq_ex(ctx, &ca) && errno == EOPNOTSUPP,
		      "completion timestamps refused with EOPNOTSUPP");
		ca.wc_flags = IBV_WC_STANDARD_FLAGS;
		for (slot = 0; slot < 64; slot++)
			used[slot] = fake_cqn(slot) >= 0;
		cx = ibv_create_cq_ex(ctx, &ca);
		CHECK(cx, "ibv_create_cq_ex: %s", strerror(errno));
		if (!cx)
			return 1;
		for (slot = 0; slot < 64 && (used[slot] || fake_cqn(slot) < 0);
		     slot++)
			;
		dx.cqn = (uint32_t)fake_cqn(slot);
		CHECK(!fake_cq(dx.cqn, &xring, &dx.log), "cq_ex known");
		dx.ring = xring;
		xi.send_cq = xi.recv_cq = ibv_cq_ex_to_cq(cx);
		xq = ibv_create_qp_ex(ctx, &xi);
		CHECK(xq, "ibv_create_qp_ex: %s", strerror(errno));
		if (!xq)
			return 1;
		xe = ibv_qp_to_qp_ex(xq);
		CHECK(xe, "ibv_qp_to_qp_ex");
		kdrv = fake_qp(xq->qp_num, NULL, NULL);
		CHECK(kdrv, "qp_ex known");
		if (!xe || !kdrv)
			return 1;
		xsq = (uint8_t *)(uintptr_t)kdrv->sq_buf_addr;
		stride = 1u << kdrv->sq_log_stride;
		rc = to_rts(xq, 0x77);
		CHECK(!rc, "qp_ex to RTS: %s", strerror(rc));

		db_clear();
		ibv_wr_start(xe);
		xe->wr_id = 0x51;
		xe->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write_imm(xe, 0xabcd, 0x1122334455ull,
				      htonl(0xc0ffee));
		ibv_wr_set_sge(xe, mr->lkey, (uintptr_t)buf, 100);
		xe->wr_id = 0x52;
		xe->wr_flags = 0;
		ibv_wr_send(xe);
		ibv_wr_set_inline_data(xe, buf, 10);
		CHECK_EQ(ibv_wr_complete(xe), 0);
		CHECK_EQ(db_read(OHCA_DB_SQ), dbv(xq->qp_num, 2));
		CHECK_EQ(rd(xsq, 0, 8), 0x51);
		CHECK_EQ(rd(xsq, 8, 1), OHCA_WR_RDMA_WRITE_IMM);
		CHECK_EQ(rd(xsq, 9, 1), OHCA_WQE_SIGNALED);
		CHECK_EQ(rd(xsq, 10, 1), 1);
		CHECK_EQ(rd(xsq, 12, 4), htonl(0xc0ffee));
		CHECK_EQ(rd(xsq, 16, 8), 0x1122334455ull);
		CHECK_EQ(rd(xsq, 24, 4), 0xabcd);
		CHECK_EQ(rd(xsq, 64, 8), (uintptr_t)buf);
		CHECK_EQ(rd(xsq, 72, 4), 100);
		CHECK_EQ(rd(xsq, 76, 4), mr->lkey);
		CHECK_EQ(rd(xsq, stride + 8, 1), OHCA_WR_SEND);
		CHECK_EQ(rd(xsq, stride + 9, 1), OHCA_WQE_INLINE);
		CHECK_EQ(rd(xsq, stride + 28, 4), 10);
		CHECK(!memcmp(xsq + stride + 64, buf, 10), "inline bytes");
		db_clear();
		ibv_wr_start(xe);
		ibv_wr_send(xe);
		ibv_wr_set_sge(xe, mr->lkey, (uintptr_t)buf, 8);
		ibv_wr_abort(xe);
		ibv_wr_start(xe);
		ibv_wr_send(xe);
		/* one SGE more than the QP holds */
		ibv_wr_set_sge_list(xe, xi.cap.max_send_sge + 1, many);
		CHECK_EQ(ibv_wr_complete(xe), EINVAL);
		CHECK_EQ(db_read(OHCA_DB_SQ), 0);

		push_cqe(&dx, &(struct cqe_spec){ .wr_id = 0x51,
			.qpn = xq->qp_num, .opcode = OHCA_CQE_RDMA_WRITE,
			.byte_len = 100, .wqe_index = 0 });
		push_cqe(&dx, &(struct cqe_spec){ .wr_id = 0x61,
			.qpn = xq->qp_num, .opcode = OHCA_CQE_RECV_RDMA_WITH_IMM,
			.flags = OHCA_CQE_F_IMM, .imm = { 0xde, 0xad, 0xbe, 0xef },
			.src_qp = 0x77 });
		db_clear();
		CHECK_EQ(ibv_start_poll(cx, &pa), 0);
		CHECK_EQ(cx->wr_id, 0x51);
		CHECK_EQ(cx->status, IBV_WC_SUCCESS);
		CHECK_EQ(ibv_wc_read_opcode(cx), IBV_WC_RDMA_WRITE);
		CHECK_EQ(ibv_wc_read_byte_len(cx), 100);
		CHECK_EQ(ibv_wc_read_qp_num(cx), xq->qp_num);
		CHECK_EQ(ibv_wc_read_wc_flags(cx), 0);
		CHECK_EQ(ibv_next_poll(cx), 0);
		CHECK_EQ(cx->wr_id, 0x61);
		CHECK_EQ(ibv_wc_read_opcode(cx), IBV_WC_RECV_RDMA_WITH_IMM);
		CHECK_EQ(ibv_wc_read_wc_flags(cx), IBV_WC_WITH_IMM);
		CHECK_EQ(ntohl(ibv_wc_read_imm_data(cx)), 0xdeadbeef);
		CHECK_EQ(ibv_wc_read_src_qp(cx), 0x77);
		CHECK_EQ(ibv_next_poll(cx), ENOENT);
		CHECK_EQ(db_read(OHCA_DB_CQ), 0);	/* slots still ours */
		ibv_end_poll(cx);
		check_cq_ci(__LINE__, dx.cqn, 2);
		CHECK_EQ(ibv_start_poll(cx, &pa), ENOENT);

		/* wr_bind_mw and wr_local_inv: the WQEs post_send's
		 * IBV_WR_BIND_MW and IBV_WR_LOCAL_INV make (slots 2 and 3) */
		db_clear();
		ibv_wr_start(xe);
		xe->wr_id = 0x71;
		xe->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
		ibv_wr_bind_mw(xe, &mw2, 0x4501, &bi);
		xe->wr_id = 0x72;
		xe->wr_flags = 0;
		ibv_wr_local_inv(xe, 0x4501);
		CHECK_EQ(ibv_wr_complete(xe), 0);
		CHECK_EQ(db_read(OHCA_DB_SQ), dbv(xq->qp_num, 4));
		CHECK_EQ(rd(xsq, 2 * stride, 8), 0x71);
		CHECK_EQ(rd(xsq, 2 * stride + 8, 1), OHCA_WR_BIND_MW);
		CHECK_EQ(rd(xsq, 2 * stride + 9, 1),
			 OHCA_WQE_SIGNALED | OHCA_WQE_FENCE);
		CHECK_EQ(rd(xsq, 2 * stride + 12, 4), 0x4501);
		CHECK_EQ(rd(xsq, 2 * stride + 16, 8), (uintptr_t)buf + 64);
		CHECK_EQ(rd(xsq, 2 * stride + 24, 8), 128);
		CHECK_EQ(rd(xsq, 2 * stride + 32, 4), mr->lkey);
		CHECK_EQ(rd(xsq, 2 * stride + 36, 4), OHCA_ACCESS_REMOTE_WRITE);
		CHECK_EQ(rd(xsq, 3 * stride, 8), 0x72);
		CHECK_EQ(rd(xsq, 3 * stride + 8, 1), OHCA_WR_LOCAL_INV);
		CHECK_EQ(rd(xsq, 3 * stride + 9, 1), 0);
		CHECK_EQ(rd(xsq, 3 * stride + 24, 4), 0x4501);
		/* refused, nothing rung: a type 1 window (ibv_bind_mw's), a
		 * key with another index, a setter after a bind */
		db_clear();
		mw1.type = IBV_MW_TYPE_1;
		ibv_wr_start(xe);
		ibv_wr_bind_mw(xe, &mw1, 0x4501, &bi);
		CHECK_EQ(ibv_wr_complete(xe), EINVAL);
		ibv_wr_start(xe);
		ibv_wr_bind_mw(xe, &mw2, 0x4601, &bi);
		CHECK_EQ(ibv_wr_complete(xe), EINVAL);
		ibv_wr_start(xe);
		ibv_wr_bind_mw(xe, &mw2, 0x4502, &bi);
		ibv_wr_set_sge(xe, mr->lkey, (uintptr_t)buf, 8);
		CHECK_EQ(ibv_wr_complete(xe), EINVAL);
		CHECK_EQ(db_read(OHCA_DB_SQ), 0);

		/* wr_atomic_write: the caller's 8 bytes inline, RETH fields
		 * as an RDMA WRITE's (slot 4 of the ring); no setter after */
		aw_at = (4u & ((1u << kdrv->sq_log_size) - 1)) * stride;
		db_clear();
		ibv_wr_start(xe);
		ibv_wr_atomic_write(xe, 0x5566, 0x10008ull, aw);
		ibv_wr_set_sge(xe, mr->lkey, (uintptr_t)buf, 8);
		CHECK_EQ(ibv_wr_complete(xe), EINVAL);
		CHECK_EQ(db_read(OHCA_DB_SQ), 0);
		ibv_wr_start(xe);
		xe->wr_id = 0x81;
		xe->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_atomic_write(xe, 0x5566, 0x10008ull, aw);
		CHECK_EQ(ibv_wr_complete(xe), 0);
		CHECK_EQ(db_read(OHCA_DB_SQ), dbv(xq->qp_num, 5));
		CHECK_EQ(rd(xsq, aw_at, 8), 0x81);
		CHECK_EQ(rd(xsq, aw_at + 8, 1), OHCA_WR_ATOMIC_WRITE);
		CHECK_EQ(rd(xsq, aw_at + 9, 1),
			 OHCA_WQE_SIGNALED | OHCA_WQE_INLINE);
		CHECK_EQ(rd(xsq, aw_at + 16, 8), 0x10008ull);
		CHECK_EQ(rd(xsq, aw_at + 24, 4), 0x5566);
		CHECK_EQ(rd(xsq, aw_at + 28, 4), 8);
		CHECK(!memcmp(xsq + aw_at + 64, aw, 8), "atomic write bytes");
		CHECK_EQ(ibv_destroy_qp(xq), 0);
		CHECK_EQ(ibv_destroy_cq(ibv_cq_ex_to_cq(cx)), 0);
	}
	parent_domain_checks(ctx, pd, scq);
	rss_qp_check(ctx, pd);
	srq_checks(pd, mr);
	CHECK_EQ(ibv_destroy_qp(qp2), 0);
	CHECK_EQ(ibv_destroy_cq(scq), 0);
	CHECK_EQ(ibv_destroy_cq(rcq), 0);
	CHECK_EQ(ibv_dereg_mr(mr), 0);
	CHECK_EQ(ibv_dealloc_pd(pd), 0);
	CHECK_EQ(ibv_close_device(ctx), 0);
	free(buf);

	if (failures) {
		printf("ohca_verbs_fake_test: %d failure(s)\n", failures);
		return 1;
	}
	printf("ohca_verbs_fake_test: OK\n");
	return 0;
}
