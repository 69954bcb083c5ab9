/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * libohca: the rdma-core provider for the ohca RoCEv2 device.
 */
#ifndef OHCA_PROVIDER_H
#define OHCA_PROVIDER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compat/ibverbs_private.h"
#include "ohca_mmio.h"

#include <ohca/ohca-abi.h>
#include <ohca/ohca_cmd.h>
#include <ohca/ohca_queue.h>
#include <ohca/ohca_regs.h>

struct ohca_device {
	struct verbs_device vdev;
	uint32_t abi_ver;	/* the kernel driver's uverbs ABI */
};

/* No QP has this number (QPNs are 24 bits): marks cleaned CQEs. */
#define OHCA_NO_QPN 0xffffffffu

/* The bits of a GRH flow label (struct ohca_av takes no more). */
#define OHCA_FLOW_LABEL_MASK 0xfffffu

/*
 * QPs by number, for retiring WQEs from CQEs (a CQ may serve many QPs): a
 * two-level table over the 24-bit QPN, leaves allocated on first use and
 * kept until the context goes. poll_cq reads it without a lock (atomic
 * loads) under its CQ spinlock; writers hold qp_table_lock. A reader only
 * dereferences the QP of a CQE on its own CQ, and destroy_qp takes that
 * CQ's lock (ohca_cq_clean) after removing the QP and before freeing it.
 */
#define OHCA_QP_LEAF_SHIFT 12
#define OHCA_QP_LEAF_SIZE (1u << OHCA_QP_LEAF_SHIFT)
#define OHCA_QP_TOP_SIZE (1u << (24 - OHCA_QP_LEAF_SHIFT))

struct ohca_qp;

struct ohca_context {
	struct verbs_context vctx;
	void *db_page;		/* this context's doorbell page (BAR2) */
	size_t db_page_size;
	/* Largest inline send (the kernel's ucontext response). */
	uint32_t max_inline;
	/*
	 * The device's OHCA_DEV_CAP_* bits (the ucontext response; 0 from a
	 * kernel that does not send them) and, from them, the optional send
	 * opcodes it does not execute: bit OHCA_WR_* set (ohca_op_refused).
	 */
	uint32_t device_caps;
	uint32_t refused_ops;
	/*
	 * Doorbell records (dbrec.c): used for CQs and RQs when the kernel
	 * takes them, for SRQs when it takes theirs too (use_srq_dbrec);
	 * their pages, under dbrec_lock.
	 */
	bool use_dbrec;
	bool use_srq_dbrec;
	pthread_mutex_t dbrec_lock;
	struct ohca_dbrec_page *dbrec_pages;
	/* Device limits (query_device at context creation). */
	uint32_t max_qp_wr;
	uint32_t max_sge;
	uint32_t max_cqe;
	bool ud;		/* UD QPs and address handles (max_ah > 0) */
	bool ib_port;		/* port 1's link layer is InfiniBand */
	uint32_t max_srq_wr;
	uint32_t max_srq_sge;
	pthread_mutex_t qp_table_lock;	/* writers of qp_table */
	struct ohca_qp **qp_table[OHCA_QP_TOP_SIZE];
	/*
	 * XRC SRQs by number (xrc.c): their receive CQEs name the SRQ, not a
	 * QP of this context. Allocated with the first one; read as
	 * qp_table is, written under qp_table_lock.
	 */
	struct ohca_srq **xrc_srqs;
	/* Receive WQs by number (wq.c), read and written as xrc_srqs. */
	struct ohca_rwq **wqs;
};

/* WQ numbers the provider can look up (the device's are 1..max_wq). */
#define OHCA_MAX_WQN 4096u

/* Resource types a parent domain's allocator is called with. */
enum ohca_res_type {
	OHCA_RES_TYPE_QP = 1,	/* a send or receive queue of a QP */
	OHCA_RES_TYPE_CQ,
	OHCA_RES_TYPE_SRQ,
};

/*
 * A protection domain, or a parent domain (protection != NULL), which
 * carries the handle of the PD it stands for and the caller's allocator.
 */
struct ohca_pd {
	struct ibv_pd ibv_pd;
	struct ohca_pd *protection;
	void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size,
		       size_t alignment, uint64_t resource_type);
	void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr,
		     uint64_t resource_type);
	void *pd_context;
	/* Parent domains on a PD; rings from a parent domain's allocator. */
	unsigned int users;
};

/* The memory of a ring the device reads or writes (pd.c). */
struct ohca_ring {
	void *buf;		/* page aligned, len bytes */
	size_t len;
	struct ohca_pd *pdom;	/* parent domain to allocate from, or NULL */
	uint64_t type;		/* enum ohca_res_type, for its allocator */
	bool external;		/* buf came from pdom's allocator */
};

struct ohca_mr {
	struct verbs_mr vmr;
};

struct ohca_cq {
	struct verbs_cq vcq;
	pthread_spinlock_t lock;
	struct ohca_ring ring;	/* 2^log_size struct ohca_cqe */
	uint32_t log_size;
	uint32_t ci;		/* free-running consumer index */
	uint32_t cqn;
	/* Its doorbell record (the CI goes there, not to MMIO), or NULL. */
	struct ohca_db_record *dbrec;
	struct ohca_qp *last_qp;	/* lookup cache, under lock */
	/* Extended CQ polling: from start_poll to end_poll, under lock. */
	const struct ohca_cqe *cur_cqe;	/* the CQE read_* decode */
	uint32_t poll_ci;		/* ci at start_poll */
	bool polling;
};

/* One work queue (SQ or RQ) of a QP. */
struct ohca_wq {
	pthread_spinlock_t lock;
	struct ohca_ring ring;	/* 2^log_size WQEs of 2^log_stride bytes */
	uint32_t log_size;
	uint32_t log_stride;
	uint32_t pi;		/* free-running producer index */
	uint32_t ci;		/* free-running: WQEs retired by CQEs */
	uint32_t max_sge;
	/*
	 * An RQ's doorbell record, or NULL. Posting writes the PI there and
	 * rings no MMIO doorbell while the QP is in RTR or RTS and has seen
	 * no error completion (mmio_too): the device reads the record when a
	 * request needs a WQE, but only a doorbell makes it flush WQEs
	 * posted in the error state.
	 */
	struct ohca_db_record *dbrec;
	bool mmio_too;
};

/*
 * A shared receive queue. The device takes its WQEs in ring order, so a
 * slot is free once the WQE in it completed: wq.ci counts the receive
 * completions of the QPs on it, which the pollers of their CQs (under
 * different locks) add to atomically. With a doorbell record (wq.dbrec)
 * posting rings no MMIO doorbell at all (ohca_post_srq_recv()).
 */
struct ohca_srq {
	struct verbs_srq vsrq;	/* an ibv_srq first; XRC fields after */
	struct ohca_wq wq;
	uint32_t srqn;
	bool xrc;		/* in ohca_context.xrc_srqs (xrc.c) */
};

struct ohca_qp {
	struct verbs_qp vqp;
	struct ohca_wq sq;
	struct ohca_wq rq;		/* unused (no ring) on an SRQ */
	struct ohca_srq *srq;
	uint32_t qpn;
	enum ibv_qp_type qp_type;	/* RC or UD */
	uint32_t max_inline;
	int sq_sig_all;
	/* ibv_wr_* posting, from wr_start to wr_complete/abort (sq.lock). */
	struct ohca_send_wqe *ex_wqe;	/* the WQE the setters fill */
	uint32_t ex_start_pi;		/* sq.pi at wr_start */
	int ex_err;			/* first error since wr_start */
	bool rss;			/* an RSS QP: no queues (wq.c) */
};

/* A receive WQ (wq.c): a receive ring of its own, rung with OHCA_DB_WQ. */
struct ohca_rwq {
	struct ibv_wq ibv_wq;
	struct ohca_wq wq;
	uint32_t wqn;
};

static inline struct ohca_rwq *to_ohca_rwq(struct ibv_wq *ibwq)
{
	return ohca_container_of(ibwq, struct ohca_rwq, ibv_wq);
}

/*
 * An address handle exists only here: post_send copies its vector into
 * each UD WQE (struct ohca_ud_seg). The kernel resolved the MAC.
 */
struct ohca_ah {
	struct ibv_ah ibv_ah;
	struct ohca_av av;
};

static inline struct ohca_ah *to_ohca_ah(struct ibv_ah *ibah)
{
	return ohca_container_of(ibah, struct ohca_ah, ibv_ah);
}

static inline struct ohca_device *to_ohca_dev(struct ibv_device *ibdev)
{
	return ohca_container_of(ibdev, struct ohca_device, vdev.device);
}

static inline struct ohca_context *to_ohca_ctx(struct ibv_context *ibctx)
{
	return ohca_container_of(ibctx, struct ohca_context, vctx.context);
}

/* An optional send opcode (OHCA_WR_*) the device does not execute. */
static inline bool ohca_op_refused(const struct ohca_context *ctx,
				   uint8_t opcode)
{
	return opcode < 32 && (ctx->refused_ops & (1u << opcode));
}

static inline struct ohca_pd *to_ohca_pd(struct ibv_pd *ibpd)
{
	return ohca_container_of(ibpd, struct ohca_pd, ibv_pd);
}

static inline struct ohca_cq *to_ohca_cq(struct ibv_cq *ibcq)
{
	return ohca_container_of(ibcq, struct ohca_cq, vcq.cq);
}

static inline struct ohca_qp *to_ohca_qp(struct ibv_qp *ibqp)
{
	return ohca_container_of(ibqp, struct ohca_qp, vqp.qp);
}

static inline struct ohca_srq *to_ohca_srq(struct ibv_srq *ibsrq)
{
	return ohca_container_of(ibsrq, struct ohca_srq, vsrq.srq);
}

static inline struct ohca_context *ohca_ctx_of_cq(struct ohca_cq *cq)
{
	return to_ohca_ctx(cq->vcq.cq.context);
}

static inline void *ohca_wq_entry(struct ohca_wq *wq, uint32_t idx)
{
	return (uint8_t *)wq->ring.buf +
	       ((size_t)(idx & ((1u << wq->log_size) - 1)) << wq->log_stride);
}

static inline struct ohca_cqe *ohca_cqe_at(struct ohca_cq *cq, uint32_t ci)
{
	return (struct ohca_cqe *)cq->ring.buf +
	       (ci & ((1u << cq->log_size) - 1));
}

static inline uint32_t ohca_roundup_pow2_log(uint32_t n)
{
	uint32_t log = 0;

	while ((1ull << log) < n)
		log++;
	return log;
}

/* A receive queue's WQE stride (QP RQ, SRQ, WQ): header + segments. */
static inline uint32_t ohca_rq_log_stride(uint32_t max_sge)
{
	uint32_t log = ohca_roundup_pow2_log(
		(uint32_t)sizeof(struct ohca_recv_wqe) +
		(uint32_t)sizeof(struct ohca_sge) * max_sge);

	return log < OHCA_RQ_LOG_STRIDE_MIN ? OHCA_RQ_LOG_STRIDE_MIN : log;
}

/* verbs.c: control path */
int ohca_rq_stride(struct ohca_wq *wq, uint32_t max_sge,
		   uint32_t dev_max_sge);
int ohca_query_device_ex(struct ibv_context *ibctx,
			 const struct ibv_query_device_ex_input *input,
			 struct ibv_device_attr_ex *attr, size_t attr_size);
int ohca_query_port(struct ibv_context *ibctx, uint8_t port,
		    struct ibv_port_attr *port_attr);
struct ibv_mr *ohca_reg_mr(struct ibv_pd *ibpd, void *addr, size_t length,
			   uint64_t hca_va, int access);
int ohca_dereg_mr(struct verbs_mr *vmr);
int ohca_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		   uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sges);
struct ibv_cq *ohca_create_cq(struct ibv_context *ibctx, int cqe,
			      struct ibv_comp_channel *channel,
			      int comp_vector);
int ohca_destroy_cq(struct ibv_cq *ibcq);
int ohca_resize_cq(struct ibv_cq *ibcq, int cqe);
int ohca_modify_cq(struct ibv_cq *ibcq, struct ibv_modify_cq_attr *attr);
int ohca_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		  void *addr, size_t length, int access);
struct ibv_cq_ex *ohca_create_cq_ex(struct ibv_context *ibctx,
				    struct ibv_cq_init_attr_ex *attr);
struct ibv_qp *ohca_create_qp(struct ibv_pd *ibpd,
			      struct ibv_qp_init_attr *attr);
struct ibv_qp *ohca_create_qp_ex(struct ibv_context *ibctx,
				 struct ibv_qp_init_attr_ex *attr);
int ohca_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		   int attr_mask);
int ohca_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		  int attr_mask, struct ibv_qp_init_attr *init_attr);
int ohca_destroy_qp(struct ibv_qp *ibqp);
struct ibv_ah *ohca_create_ah(struct ibv_pd *ibpd, struct ibv_ah_attr *attr);
int ohca_destroy_ah(struct ibv_ah *ibah);
struct ibv_srq *ohca_create_srq(struct ibv_pd *ibpd,
				struct ibv_srq_init_attr *attr);
int ohca_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		    int attr_mask);
int ohca_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr);
int ohca_destroy_srq(struct ibv_srq *ibsrq);
struct ohca_srq *ohca_srq_new(struct ohca_context *ctx, struct ibv_pd *ibpd,
			      struct ibv_srq_attr *attr);
void ohca_srq_free(struct ohca_context *ctx, struct ohca_srq *srq);
void ohca_srq_cmd(const struct ohca_srq *srq, struct ohca_ibv_create_srq *drv);
/* xrc.c: XRC domains, SRQs and QPs */
#define OHCA_MAX_XRC_SRQN 4096
struct ibv_xrcd *ohca_open_xrcd(struct ibv_context *ibctx,
				struct ibv_xrcd_init_attr *attr);
int ohca_close_xrcd(struct ibv_xrcd *ibxrcd);
struct ibv_srq *ohca_create_srq_ex(struct ibv_context *ibctx,
				   struct ibv_srq_init_attr_ex *attr);
int ohca_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num);
struct ohca_srq *ohca_find_xrc_srq(struct ohca_context *ctx, uint32_t srqn);
void ohca_xrc_srq_remove(struct ohca_context *ctx, struct ohca_srq *srq);
struct ibv_qp *ohca_create_xrc_recv_qp(struct ibv_context *ibctx,
				       struct ibv_qp_init_attr_ex *attr);
int ohca_query_limits(struct ohca_context *ctx);
struct ohca_qp *ohca_find_qp(struct ohca_context *ctx, uint32_t qpn);

/* pd.c */
struct ibv_pd *ohca_alloc_pd(struct ibv_context *ibctx);
struct ibv_pd *ohca_alloc_parent_domain(struct ibv_context *ibctx,
					struct ibv_parent_domain_init_attr *attr);
int ohca_dealloc_pd(struct ibv_pd *ibpd);
struct ohca_pd *ohca_parent_domain(struct ibv_pd *ibpd);
int ohca_ring_alloc(struct ohca_ring *ring, size_t size);
/* A work queue's lock and ring (verbs.c), shared with wq.c. */
int ohca_wq_init(struct ohca_wq *wq, struct ibv_pd *pd, uint64_t type);
int ohca_wq_init_empty(struct ohca_wq *wq);
void ohca_wq_fini(struct ohca_wq *wq);
void ohca_wq_reset(struct ohca_wq *wq);
/* dbrec.c */
/* A doorbell record's index: one aligned 32-bit store. */
static inline void ohca_dbrec_set(struct ohca_db_record *rec, uint32_t index)
{
	__atomic_store_n(&rec->index, htole32(index), __ATOMIC_RELAXED);
}

bool ohca_dbrec_wanted(uint32_t resp_comp_mask);
struct ohca_db_record *ohca_dbrec_alloc(struct ohca_context *ctx);
void ohca_dbrec_free(struct ohca_context *ctx, struct ohca_db_record *rec);
void ohca_dbrec_cleanup(struct ohca_context *ctx);

/* fastpath.c */
int ohca_post_recv_ring(struct ohca_context *ctx, struct ohca_wq *wq,
			unsigned int db, uint32_t handle, bool ring_too,
			struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);

/* wq.c */
struct ohca_rwq *ohca_find_wq(struct ohca_context *ctx, uint32_t wqn);
struct ibv_wq *ohca_create_wq(struct ibv_context *ibctx,
			      struct ibv_wq_init_attr *attr);
int ohca_modify_wq(struct ibv_wq *ibwq, struct ibv_wq_attr *attr);
int ohca_destroy_wq(struct ibv_wq *ibwq);
struct ibv_rwq_ind_table *
ohca_create_rwq_ind_table(struct ibv_context *ibctx,
			  struct ibv_rwq_ind_table_init_attr *attr);
int ohca_destroy_rwq_ind_table(struct ibv_rwq_ind_table *tbl);
struct ibv_qp *ohca_create_rss_qp(struct ibv_context *ibctx,
				  struct ibv_qp_init_attr_ex *attr);
void ohca_ring_free(struct ohca_ring *ring);

/* mw.c */
struct ibv_mw *ohca_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type);

/* flow.c */
struct ibv_flow *ohca_create_flow(struct ibv_qp *qp,
				  struct ibv_flow_attr *flow_attr);
int ohca_destroy_flow(struct ibv_flow *flow);

/* dm.c */
struct ibv_dm *ohca_alloc_dm(struct ibv_context *ibctx,
			     struct ibv_alloc_dm_attr *attr);
int ohca_free_dm(struct ibv_dm *ibdm);
struct ibv_mr *ohca_reg_dm_mr(struct ibv_pd *ibpd, struct ibv_dm *ibdm,
			      uint64_t dm_offset, size_t length,
			      unsigned int access);
int ohca_dealloc_mw(struct ibv_mw *mw);
int ohca_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		 struct ibv_mw_bind *mw_bind);
int ohca_build_bind_wqe(struct ohca_qp *qp, const struct ibv_send_wr *wr,
			bool type1_ok, struct ohca_bind_mw_wqe *wqe);
int ohca_encode_bind_wqe(struct ohca_qp *qp, struct ibv_mw *mw, uint32_t rkey,
			 const struct ibv_mw_bind_info *bi, uint64_t wr_id,
			 unsigned int send_flags, bool type1_ok,
			 struct ohca_bind_mw_wqe *wqe);

/* fastpath.c: no system calls */
int ohca_post_send_list(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			struct ibv_send_wr **bad_wr, bool type1_ok);
int ohca_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr);
int ohca_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr);
int ohca_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr);
int ohca_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc);
int ohca_req_notify_cq(struct ibv_cq *ibcq, int solicited_only);
void ohca_cq_ex_init_ops(struct ohca_cq *cq, uint64_t wc_flags);
uint64_t ohca_qp_ex_send_ops(enum ibv_qp_type qp_type);
uint64_t ohca_qp_ex_refused_ops(const struct ohca_context *ctx);
void ohca_qp_ex_init_ops(struct ohca_qp *qp, uint64_t send_ops);

#endif /* OHCA_PROVIDER_H */
