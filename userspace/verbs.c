// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libohca: the control path.  Device and port queries, PDs, MRs, CQs and
 * QPs go through the kernel (ibv_cmd_*); the provider sizes and allocates
 * the rings the kernel pins for the device.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ohca.h"

int ohca_query_device_ex(struct ibv_context *ibctx,
			 const struct ibv_query_device_ex_input *input,
			 struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp = {};
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int err;

	err = ibv_cmd_query_device_any(ibctx, input, attr, attr_size, &resp,
				       &resp_size);
	if (err) {
		verbs_debug(&to_ohca_ctx(ibctx)->vctx,
			    "QUERY_DEVICE failed: errno %d\n", err);
		return err;
	}

	/* fw_ver as OHCA_FW_VERSION(major, minor, sub), see ohca_regs.h */
	fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u.%u", (unsigned int)(fw >> 16) & 0xffff,
		 (unsigned int)(fw >> 8) & 0xff, (unsigned int)fw & 0xff);
	return 0;
}

int ohca_query_port(struct ibv_context *ibctx, uint8_t port,
		    struct ibv_port_attr *port_attr)
{
	struct ibv_query_port cmd = {};

	return ibv_cmd_query_port(ibctx, port, port_attr, &cmd, sizeof(cmd));
}

/* Limits the provider sizes queues against, read once per context. */
int ohca_query_limits(struct ohca_context *ctx)
{
	struct ibv_port_attr port = {};
	struct ibv_device_attr_ex attr;
	int err;

	err = ibv_cmd_query_device_any(&ctx->vctx.context, NULL, &attr,
				       sizeof(attr), NULL, NULL);
	if (err)
		return err;
	ctx->max_qp_wr = attr.orig_attr.max_qp_wr;
	ctx->max_sge = attr.orig_attr.max_sge;
	ctx->max_cqe = attr.orig_attr.max_cqe;
	/* The kernel offers address handles only when the device does UD. */
	ctx->ud = attr.orig_attr.max_ah > 0;
	ctx->max_srq_wr = attr.orig_attr.max_srq_wr;
	ctx->max_srq_sge = attr.orig_attr.max_srq_sge;
	/*
	 * The port's link layer decides the address vectors and the
	 * receive completions' source fields; a kernel that cannot say is
	 * an Ethernet one.
	 */
	ctx->ib_port = !ohca_query_port(&ctx->vctx.context, 1, &port) &&
		       port.link_layer == IBV_LINK_LAYER_INFINIBAND;
	return 0;
}

/* ------------------------------------------------------------------ */
/* MR                                                                 */
/* ------------------------------------------------------------------ */

struct ibv_mr *ohca_reg_mr(struct ibv_pd *ibpd, void *addr, size_t length,
			   uint64_t hca_va, int access)
{
	struct ib_uverbs_reg_mr_resp resp = {};
	struct ibv_reg_mr cmd = {};
	struct ohca_mr *mr;
	int err;

	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_reg_mr(ibpd, addr, length, hca_va, access, &mr->vmr,
			     &cmd, sizeof(cmd), &resp, sizeof(resp));
	if (err) {
		verbs_debug(&to_ohca_ctx(ibpd->context)->vctx,
			    "REG_MR failed: errno %d\n", err);
		free(mr);
		errno = err;
		return NULL;
	}
	return &mr->vmr.ibv_mr;
}

/*
 * In place (the device's REREG_MR): the keys stay, so a peer holding the
 * rkey goes on after an access change; libibverbs updates pd, addr and
 * length, the kernel pins a new translation.
 */
int ohca_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		  void *addr, size_t length, int access)
{
	struct ib_uverbs_rereg_mr_resp resp = {};
	struct ibv_rereg_mr cmd = {};
	int err;

	err = ibv_cmd_rereg_mr(vmr, (uint32_t)flags, addr, length,
			       (uintptr_t)addr, access, pd, &cmd, sizeof(cmd),
			       &resp, sizeof(resp));
	if (err) {
		verbs_debug(&to_ohca_ctx(vmr->ibv_mr.context)->vctx,
			    "REREG_MR flags %#x failed: errno %d\n", flags, err);
		return err;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		vmr->access = access;
	return 0;
}

/*
 * Prefetch of ODP MRs (ibv_advise_mr): the kernel maps the ranges on the
 * device (ohca_odp.c); without IBV_ADVISE_MR_FLAG_FLUSH errors are not
 * reported.
 */
int ohca_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		   uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sges)
{
	return ibv_cmd_advise_mr(pd, advice, flags, sg_list, num_sges);
}

int ohca_dereg_mr(struct verbs_mr *vmr)
{
	int err;

	err = ibv_cmd_dereg_mr(vmr);
	if (err)
		return err;
	free(ohca_container_of(vmr, struct ohca_mr, vmr));
	return 0;
}

/* ------------------------------------------------------------------ */
/* CQ                                                                 */
/* ------------------------------------------------------------------ */

OHCA_DRV_CMD_REQ(ohca_create_cq_cmd, ibv_create_cq, ohca_ibv_create_cq, 8);
OHCA_DRV_CMD_RESP(ohca_create_cq_resp, ib_uverbs_create_cq_resp,
		  ohca_ibv_create_cq_resp, 8);

/* Shared by create_cq and create_cq_ex: the ring and the kernel's CQ. */
static struct ohca_cq *ohca_cq_alloc(struct ibv_context *ibctx, int cqe,
				     struct ibv_comp_channel *channel,
				     int comp_vector, struct ohca_pd *pdom)
{
	struct ohca_context *ctx = to_ohca_ctx(ibctx);
	struct ohca_create_cq_resp resp = {};
	struct ohca_create_cq_cmd cmd = {};
	struct ohca_cq *cq;
	uint32_t log;
	int err;

	/* One slot stays free, so 2^log >= cqe + 1 entries. */
	if (cqe < 1 || (uint32_t)cqe > ctx->max_cqe) {
		verbs_debug(&ctx->vctx, "cqe %d out of range 1..%u\n", cqe,
			    ctx->max_cqe);
		errno = EINVAL;
		return NULL;
	}
	log = ohca_roundup_pow2_log((uint32_t)cqe + 1);
	if (log > OHCA_CQ_LOG_MAX) {
		errno = EINVAL;
		return NULL;
	}

	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	if (pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE)) {
		err = ENOMEM;
		goto err_free;
	}
	cq->log_size = log;
	cq->ring.pdom = pdom;
	cq->ring.type = OHCA_RES_TYPE_CQ;
	err = ohca_ring_alloc(&cq->ring, sizeof(struct ohca_cqe) << log);
	if (err)
		goto err_lock;

	cmd.drv.buf_addr = (uintptr_t)cq->ring.buf;
	cmd.drv.log_size = log;
	cq->dbrec = ohca_dbrec_alloc(ctx);
	if (cq->dbrec) {
		cmd.drv.comp_mask |= OHCA_CREATE_CQ_DB_RECORD;
		cmd.drv.db_addr = (uintptr_t)cq->dbrec;
	}
	err = ibv_cmd_create_cq(ibctx, cqe, channel, comp_vector,
				&cq->vcq.cq, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (err) {
		verbs_debug(&ctx->vctx, "CREATE_CQ failed: errno %d\n", err);
		goto err_ring;
	}
	cq->cqn = resp.drv.cqn;
	/* What the ring holds, whatever the kernel echoed. */
	cq->vcq.cq.cqe = (int)((1u << log) - 1);
	verbs_debug(&ctx->vctx, "cq %u: %u entries at %p, record %p\n",
		    cq->cqn, 1u << log, cq->ring.buf, (void *)cq->dbrec);
	return cq;

err_ring:
	ohca_dbrec_free(ctx, cq->dbrec);
	ohca_ring_free(&cq->ring);
err_lock:
	pthread_spin_destroy(&cq->lock);
err_free:
	free(cq);
	errno = err;
	return NULL;
}

struct ibv_cq *ohca_create_cq(struct ibv_context *ibctx, int cqe,
			      struct ibv_comp_channel *channel,
			      int comp_vector)
{
	struct ohca_cq *cq = ohca_cq_alloc(ibctx, cqe, channel, comp_vector,
					   NULL);

	return cq ? &cq->vcq.cq : NULL;
}

/*
 * The work completion fields a CQE holds (RoCE has no LIDs: SLID and
 * DLID_PATH_BITS read 0, as in poll_cq). The device stamps no completion
 * time, and a time taken when polling would not be one: no timestamps.
 */
#define OHCA_CQ_EX_WC_FLAGS IBV_WC_STANDARD_FLAGS
/* A hint the CQ's lock already honours; overrun cannot be ignored. */
#define OHCA_CQ_EX_FLAGS IBV_CREATE_CQ_ATTR_SINGLE_THREADED

struct ibv_cq_ex *ohca_create_cq_ex(struct ibv_context *ibctx,
				    struct ibv_cq_init_attr_ex *attr)
{
	struct ohca_context *ctx = to_ohca_ctx(ibctx);
	struct ohca_pd *pdom = NULL;
	struct ohca_cq *cq;

	if ((attr->wc_flags & ~(uint64_t)OHCA_CQ_EX_WC_FLAGS) ||
	    (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS |
					   IBV_CQ_INIT_ATTR_MASK_PD)) ||
	    ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	     (attr->flags & ~(uint32_t)OHCA_CQ_EX_FLAGS))) {
		verbs_debug(&ctx->vctx,
			    "cq_ex wc_flags %#llx comp_mask %#x flags %#x not supported\n",
			    (unsigned long long)attr->wc_flags,
			    attr->comp_mask, attr->flags);
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->cqe > (uint32_t)INT32_MAX) {
		errno = EINVAL;
		return NULL;
	}
	/* The ring from a parent domain's allocator; a plain PD is wrong. */
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
		pdom = ohca_parent_domain(attr->parent_domain);
		if (!pdom || attr->parent_domain->context != ibctx) {
			errno = EINVAL;
			return NULL;
		}
	}
	/* libibverbs runs verbs_init_cq() on what this returns. */
	cq = ohca_cq_alloc(ibctx, (int)attr->cqe, attr->channel,
			   (int)attr->comp_vector, pdom);
	if (!cq)
		return NULL;
	ohca_cq_ex_init_ops(cq, attr->wc_flags);
	return &cq->vcq.cq_ex;
}

OHCA_DRV_CMD_REQ(ohca_resize_cq_cmd, ibv_resize_cq, ohca_ibv_resize_cq, 4);
OHCA_DRV_CMD_RESP(ohca_resize_cq_resp, ib_uverbs_resize_cq_resp,
		  ohca_ibv_resize_cq_resp, 4);

/*
 * A new ring; the device copies the unpolled CQEs to its start (slots
 * 0..resp.cqes-1) and both indices restart at 0. The CQ lock is held
 * across the command so that nobody polls the old ring meanwhile; every
 * entry polled before was already returned through the CQ doorbell.
 */
int ohca_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct ohca_context *ctx = to_ohca_ctx(ibcq->context);
	struct ohca_cq *cq = to_ohca_cq(ibcq);
	struct ohca_resize_cq_resp resp = {};
	struct ohca_resize_cq_cmd cmd = {};
	struct ohca_ring ring = {
		.pdom = cq->ring.pdom,
		.type = OHCA_RES_TYPE_CQ,
	};
	uint32_t log;
	int err;

	if (cqe < 1 || (uint32_t)cqe > ctx->max_cqe)
		return EINVAL;
	log = ohca_roundup_pow2_log((uint32_t)cqe + 1);
	if (log > OHCA_CQ_LOG_MAX)
		return EINVAL;
	err = ohca_ring_alloc(&ring, sizeof(struct ohca_cqe) << log);
	if (err)
		return err;
	cmd.drv.buf_addr = (uintptr_t)ring.buf;
	cmd.drv.log_size = log;

	pthread_spin_lock(&cq->lock);
	err = ibv_cmd_resize_cq(ibcq, cqe, &cmd.ibv_cmd, sizeof(cmd),
				&resp.ibv_resp, sizeof(resp));
	if (!err && resp.drv.cqes > (1u << log)) {
		/* The kernel swapped the rings: keep the new one regardless. */
		verbs_err(&ctx->vctx, "resize moved %u CQEs into %u slots\n",
			  resp.drv.cqes, 1u << log);
	}
	if (!err) {
		struct ohca_ring old = cq->ring;

		cq->ring = ring;
		cq->log_size = log;
		cq->ci = 0;
		/*
		 * The device's consumer index restarted at 0 too; the device
		 * wrote 0 into the record, and so does the provider.
		 */
		if (cq->dbrec)
			ohca_dbrec_set(cq->dbrec, 0);
		ibcq->cqe = (int)((1u << log) - 1);
		ring = old;
	}
	pthread_spin_unlock(&cq->lock);
	ohca_ring_free(&ring);
	if (err)
		verbs_debug(&ctx->vctx, "RESIZE_CQ %u to %d failed: errno %d\n",
			    cq->cqn, cqe, err);
	return err;
}

/*
 * Completion event moderation (ibv_modify_cq): no driver data; the kernel
 * checks the values against the device's limits and the device applies
 * them to the CQ's events.
 */
int ohca_modify_cq(struct ibv_cq *ibcq, struct ibv_modify_cq_attr *attr)
{
	struct ibv_modify_cq cmd = {};

	return ibv_cmd_modify_cq(ibcq, attr, &cmd, sizeof(cmd));
}

int ohca_destroy_cq(struct ibv_cq *ibcq)
{
	struct ohca_cq *cq = to_ohca_cq(ibcq);
	int err;

	err = ibv_cmd_destroy_cq(ibcq);
	if (err)
		return err;
	ohca_dbrec_free(to_ohca_ctx(ibcq->context), cq->dbrec);
	ohca_ring_free(&cq->ring);
	pthread_spin_destroy(&cq->lock);
	free(cq);
	return 0;
}

/* ------------------------------------------------------------------ */
/* QP                                                                 */
/* ------------------------------------------------------------------ */

OHCA_DRV_CMD_REQ(ohca_create_qp_cmd, ibv_create_qp, ohca_ibv_create_qp, 8);
OHCA_DRV_CMD_RESP(ohca_create_qp_resp, ib_uverbs_create_qp_resp,
		  ohca_ibv_create_qp_resp, 4);

/* Lock-free: see OHCA_QP_LEAF_SHIFT. */
struct ohca_qp *ohca_find_qp(struct ohca_context *ctx, uint32_t qpn)
{
	struct ohca_qp **leaf;

	if (qpn >> 24)
		return NULL;
	leaf = __atomic_load_n(&ctx->qp_table[qpn >> OHCA_QP_LEAF_SHIFT],
			       __ATOMIC_ACQUIRE);
	if (!leaf)
		return NULL;
	return __atomic_load_n(&leaf[qpn & (OHCA_QP_LEAF_SIZE - 1)],
			       __ATOMIC_ACQUIRE);
}

static int ohca_qp_table_insert(struct ohca_context *ctx, struct ohca_qp *qp)
{
	struct ohca_qp ***top = &ctx->qp_table[qp->qpn >> OHCA_QP_LEAF_SHIFT];
	struct ohca_qp **leaf;

	if (qp->qpn >> 24)
		return EINVAL;
	pthread_mutex_lock(&ctx->qp_table_lock);
	leaf = *top;
	if (!leaf) {
		leaf = calloc(OHCA_QP_LEAF_SIZE, sizeof(*leaf));
		if (!leaf) {
			pthread_mutex_unlock(&ctx->qp_table_lock);
			return ENOMEM;
		}
		__atomic_store_n(top, leaf, __ATOMIC_RELEASE);
	}
	/* The QP is complete before a poller can find it. */
	__atomic_store_n(&leaf[qp->qpn & (OHCA_QP_LEAF_SIZE - 1)], qp,
			 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ctx->qp_table_lock);
	return 0;
}

static void ohca_qp_table_remove(struct ohca_context *ctx, struct ohca_qp *qp)
{
	struct ohca_qp **leaf;

	pthread_mutex_lock(&ctx->qp_table_lock);
	leaf = ctx->qp_table[qp->qpn >> OHCA_QP_LEAF_SHIFT];
	if (leaf && leaf[qp->qpn & (OHCA_QP_LEAF_SIZE - 1)] == qp)
		__atomic_store_n(&leaf[qp->qpn & (OHCA_QP_LEAF_SIZE - 1)],
				 NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ctx->qp_table_lock);
}

/*
 * The QP is going away (destroy) or starting over (RESET): forget it in
 * the CQ's lookup cache, and turn the completions of it that the device
 * already wrote but nobody polled yet into entries of no QP, which
 * poll_cq consumes and drops.  A later QP with the same number must not
 * see them, nor must they retire the restarted rings' slots.
 */
static void ohca_cq_clean(struct ibv_cq *ibcq, struct ohca_qp *qp)
{
	struct ohca_cq *cq;
	uint32_t ci;

	if (!ibcq)
		return;
	cq = to_ohca_cq(ibcq);
	pthread_spin_lock(&cq->lock);
	if (cq->last_qp == qp)
		cq->last_qp = NULL;
	for (ci = cq->ci;; ci++) {
		struct ohca_cqe *cqe =
			ohca_cqe_at(cq, ci);
		uint8_t owner = !((ci >> cq->log_size) & 1);

		if ((*(volatile uint8_t *)&cqe->owner & OHCA_CQE_OWNER) !=
		    owner)
			break;
		udma_from_device_barrier();
		if (le32toh(cqe->qpn) == qp->qpn) {
			/* Its SRQ slot is free all the same. */
			if (qp->srq && (cqe->opcode & OHCA_CQE_RECV))
				__atomic_fetch_add(&qp->srq->wq.ci, 1,
						   __ATOMIC_RELAXED);
			cqe->qpn = htole32(OHCA_NO_QPN);
		}
		if (ci - cq->ci == (1u << cq->log_size) - 1)
			break;
	}
	pthread_spin_unlock(&cq->lock);
}

static void ohca_fill_caps(const struct ohca_qp *qp, struct ibv_qp_cap *cap)
{
	cap->max_send_wr = 1u << qp->sq.log_size;
	bool no_rq = !qp->rq.ring.buf;

	cap->max_recv_wr = no_rq ? 0 : 1u << qp->rq.log_size;
	cap->max_send_sge = qp->sq.max_sge;
	cap->max_recv_sge = no_rq ? 0 : qp->rq.max_sge;
	cap->max_inline_data = qp->max_inline;
}

/* Bytes of a send WQE before its segments: UD adds the address vector. */
static uint32_t ohca_sq_hdr_len(const struct ohca_qp *qp)
{
	return qp->qp_type == IBV_QPT_UD ? OHCA_UD_WQE_HDR_LEN :
					   (uint32_t)sizeof(struct ohca_send_wqe);
}

static int ohca_size_qp(struct ohca_context *ctx, struct ohca_qp *qp,
			const struct ibv_qp_cap *cap)
{
	uint32_t send_wr = cap->max_send_wr ? cap->max_send_wr : 1;
	uint32_t recv_wr = cap->max_recv_wr ? cap->max_recv_wr : 1;
	uint32_t send_seg, stride;

	if (cap->max_send_wr > ctx->max_qp_wr ||
	    cap->max_recv_wr > ctx->max_qp_wr ||
	    cap->max_send_sge > ctx->max_sge ||
	    cap->max_recv_sge > ctx->max_sge ||
	    cap->max_inline_data > ctx->max_inline) {
		verbs_debug(&ctx->vctx,
			    "caps wr %u/%u sge %u/%u inline %u beyond the device's wr %u sge %u inline %u\n",
			    cap->max_send_wr, cap->max_recv_wr,
			    cap->max_send_sge, cap->max_recv_sge,
			    cap->max_inline_data, ctx->max_qp_wr,
			    ctx->max_sge, ctx->max_inline);
		return EINVAL;
	}

	qp->sq.log_size = ohca_roundup_pow2_log(send_wr);
	qp->rq.log_size = ohca_roundup_pow2_log(recv_wr);
	if (qp->sq.log_size > OHCA_WQ_LOG_MAX ||
	    qp->rq.log_size > OHCA_WQ_LOG_MAX)
		return EINVAL;

	/* send: header + max(segments, inline data) */
	send_seg = 16 * cap->max_send_sge;
	if (cap->max_inline_data > send_seg)
		send_seg = cap->max_inline_data;
	qp->sq.log_stride = ohca_roundup_pow2_log(ohca_sq_hdr_len(qp) +
						  send_seg);
	if (qp->sq.log_stride < OHCA_SQ_LOG_STRIDE_MIN)
		qp->sq.log_stride = OHCA_SQ_LOG_STRIDE_MIN;
	if (qp->sq.log_stride > OHCA_WQ_LOG_STRIDE_MAX ||
	    ohca_rq_stride(&qp->rq, cap->max_recv_sge, ctx->max_sge))
		return EINVAL;

	/* What the strides hold, within the device's limits. */
	stride = 1u << qp->sq.log_stride;
	qp->sq.max_sge = (stride - ohca_sq_hdr_len(qp)) /
			 (uint32_t)sizeof(struct ohca_sge);
	if (qp->sq.max_sge > ctx->max_sge)
		qp->sq.max_sge = ctx->max_sge;
	qp->max_inline = stride - ohca_sq_hdr_len(qp);
	if (qp->max_inline > ctx->max_inline)
		qp->max_inline = ctx->max_inline;
	return 0;
}

/*
 * A receive ring's stride for @max_sge segments (QP RQ, SRQ, WQ), and the
 * segments it holds, at most @dev_max_sge; EINVAL past the largest stride.
 */
int ohca_rq_stride(struct ohca_wq *wq, uint32_t max_sge, uint32_t dev_max_sge)
{
	uint32_t stride;

	wq->log_stride = ohca_rq_log_stride(max_sge);
	if (wq->log_stride > OHCA_WQ_LOG_STRIDE_MAX)
		return EINVAL;
	stride = 1u << wq->log_stride;
	wq->max_sge = (stride - (uint32_t)sizeof(struct ohca_recv_wqe)) /
		      (uint32_t)sizeof(struct ohca_sge);
	if (wq->max_sge > dev_max_sge)
		wq->max_sge = dev_max_sge;
	return 0;
}

/* The ring from @pd's allocator if @pd is a parent domain that has one. */
int ohca_wq_init(struct ohca_wq *wq, struct ibv_pd *pd, uint64_t type)
{
	int err;

	if (pthread_spin_init(&wq->lock, PTHREAD_PROCESS_PRIVATE))
		return ENOMEM;
	wq->ring.pdom = ohca_parent_domain(pd);
	wq->ring.type = type;
	err = ohca_ring_alloc(&wq->ring,
			      (size_t)1 << (wq->log_size + wq->log_stride));
	if (err) {
		pthread_spin_destroy(&wq->lock);
		return err;
	}
	return 0;
}

void ohca_wq_fini(struct ohca_wq *wq)
{
	ohca_ring_free(&wq->ring);
	pthread_spin_destroy(&wq->lock);
}

/* The receive queue of a QP on an SRQ: no ring, nothing to post to. */
int ohca_wq_init_empty(struct ohca_wq *wq)
{
	memset(wq, 0, sizeof(*wq));
	if (pthread_spin_init(&wq->lock, PTHREAD_PROCESS_PRIVATE))
		return ENOMEM;
	return 0;
}

/*
 * Shared by create_qp and create_qp_ex: @attr has comp_mask PD (the
 * caller checked the rest); the caps are written back.
 */
static struct ohca_qp *ohca_qp_alloc(struct ibv_context *ibctx,
				     struct ibv_qp_init_attr_ex *attr)
{
	struct ohca_context *ctx = to_ohca_ctx(ibctx);
	struct ohca_create_qp_resp resp = {};
	struct ohca_create_qp_cmd cmd = {};
	struct ibv_qp_init_attr_ex kattr;
	struct ohca_qp *qp;
	int err;

	/* UC, XRC: the kernel answers EOPNOTSUPP for a device without it. */
	/* RAW_PACKET: the kernel answers for root and the device's cap. */
	if ((attr->qp_type != IBV_QPT_RC && attr->qp_type != IBV_QPT_UC &&
	     attr->qp_type != IBV_QPT_XRC_SEND &&
	     attr->qp_type != IBV_QPT_RAW_PACKET &&
	     (attr->qp_type != IBV_QPT_UD ||
	      !ctx->ud)) ||
	    (attr->srq && attr->qp_type != IBV_QPT_RC)) {
		verbs_debug(&ctx->vctx,
			    "RC, UC, UD and raw QPs, SRQ for RC only (type %d, srq %p)\n",
			    attr->qp_type, (void *)attr->srq);
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* An XRC initiator sends only: a receive CQ is ignored (as the
	 * kernel ignores it). */
	if (!attr->send_cq ||
	    (!attr->recv_cq && attr->qp_type != IBV_QPT_XRC_SEND)) {
		errno = EINVAL;
		return NULL;
	}

	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	qp->qp_type = attr->qp_type;
	if (attr->srq || attr->qp_type == IBV_QPT_XRC_SEND) {
		/* Receives come from the SRQ (or none for XRC): no RQ. */
		struct ibv_qp_cap cap = attr->cap;

		cap.max_recv_wr = 0;
		cap.max_recv_sge = 0;
		if (attr->srq)
			qp->srq = to_ohca_srq(attr->srq);
		err = ohca_size_qp(ctx, qp, &cap);
	} else {
		err = ohca_size_qp(ctx, qp, &attr->cap);
	}
	if (err)
		goto err_free;
	err = ohca_wq_init(&qp->sq, attr->pd, OHCA_RES_TYPE_QP);
	if (err)
		goto err_free;
	err = qp->srq || qp->qp_type == IBV_QPT_XRC_SEND ?
	      ohca_wq_init_empty(&qp->rq) :
	      ohca_wq_init(&qp->rq, attr->pd, OHCA_RES_TYPE_QP);
	if (err)
		goto err_sq;

	cmd.drv.sq_buf_addr = (uintptr_t)qp->sq.ring.buf;
	cmd.drv.sq_log_size = (uint8_t)qp->sq.log_size;
	cmd.drv.sq_log_stride = (uint8_t)qp->sq.log_stride;
	if (qp->rq.ring.buf) {
		cmd.drv.rq_buf_addr = (uintptr_t)qp->rq.ring.buf;
		cmd.drv.rq_log_size = (uint8_t)qp->rq.log_size;
		cmd.drv.rq_log_stride = (uint8_t)qp->rq.log_stride;
		qp->rq.dbrec = ohca_dbrec_alloc(ctx);
		if (qp->rq.dbrec) {
			cmd.drv.comp_mask |= OHCA_CREATE_QP_DB_RECORD;
			cmd.drv.rq_db_addr = (uintptr_t)qp->rq.dbrec;
		}
	}
	cmd.drv.max_inline = qp->max_inline;

	/* The kernel sees the caps the rings really have; the send ops are
	 * the provider's business. */
	kattr = *attr;
	kattr.comp_mask = IBV_QP_INIT_ATTR_PD;
	ohca_fill_caps(qp, &kattr.cap);
	err = ibv_cmd_create_qp_ex(ibctx, &qp->vqp, &kattr, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (err) {
		verbs_debug(&ctx->vctx, "CREATE_QP failed: errno %d\n", err);
		goto err_rq;
	}
	qp->qpn = resp.drv.qpn;
	if (qp->qpn != qp->vqp.qp.qp_num)
		verbs_warn(&ctx->vctx, "qpn %u in the driver response, %u in the core one\n",
			   qp->qpn, qp->vqp.qp.qp_num);
	qp->sq_sig_all = attr->sq_sig_all;
	ohca_fill_caps(qp, &attr->cap);
	err = ohca_qp_table_insert(ctx, qp);
	if (err) {
		ibv_cmd_destroy_qp(&qp->vqp.qp);
		goto err_rq;
	}
	verbs_debug(&ctx->vctx,
		    "qp %u: sq %u x %u B at %p, rq %u x %u B at %p, inline %u\n",
		    qp->qpn, 1u << qp->sq.log_size, 1u << qp->sq.log_stride,
		    qp->sq.ring.buf, 1u << qp->rq.log_size,
		    1u << qp->rq.log_stride, qp->rq.ring.buf,
		    qp->max_inline);
	return qp;

err_rq:
	ohca_dbrec_free(ctx, qp->rq.dbrec);
	ohca_wq_fini(&qp->rq);
err_sq:
	ohca_wq_fini(&qp->sq);
err_free:
	free(qp);
	errno = err;
	return NULL;
}

struct ibv_qp *ohca_create_qp(struct ibv_pd *ibpd,
			      struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex = {
		.qp_context = attr->qp_context,
		.send_cq = attr->send_cq,
		.recv_cq = attr->recv_cq,
		.srq = attr->srq,
		.cap = attr->cap,
		.qp_type = attr->qp_type,
		.sq_sig_all = attr->sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = ibpd,
	};
	struct ohca_qp *qp = ohca_qp_alloc(ibpd->context, &ex);

	if (!qp)
		return NULL;
	attr->cap = ex.cap;
	return &qp->vqp.qp;
}

/*
 * ibv_create_qp_ex: what create_qp does, plus the ibv_wr_* posting API
 * for the send_ops_flags asked for. No creation flag is supported (0 is
 * accepted); an indirection table makes an RSS QP (wq.c); other
 * comp_mask bits and send
 * opcodes the QP type cannot post are EOPNOTSUPP, so callers can tell
 * "not supported" from "invalid".
 */
struct ibv_qp *ohca_create_qp_ex(struct ibv_context *ibctx,
				 struct ibv_qp_init_attr_ex *attr)
{
	struct ohca_context *ctx = to_ohca_ctx(ibctx);
	struct ibv_qp_init_attr_ex ex = *attr;
	uint64_t send_ops = 0;
	struct ohca_qp *qp;

	/* XRC targets: no queues here, a domain instead of a PD (xrc.c). */
	if (attr->qp_type == IBV_QPT_XRC_RECV)
		return ohca_create_xrc_recv_qp(ibctx, attr);
	/* RSS QPs: no queues either, an indirection table (wq.c). */
	if (attr->comp_mask & IBV_QP_INIT_ATTR_IND_TABLE)
		return ohca_create_rss_qp(ibctx, attr);
	if (attr->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD |
					  IBV_QP_INIT_ATTR_CREATE_FLAGS |
					  IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) {
		verbs_debug(&ctx->vctx, "qp_ex comp_mask %#x not supported\n",
			    attr->comp_mask);
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		errno = EINVAL;
		return NULL;
	}
	if ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	    attr->create_flags) {
		verbs_debug(&ctx->vctx, "qp_ex create_flags %#x not supported\n",
			    attr->create_flags);
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		send_ops = attr->send_ops_flags;
		if (send_ops & ~ohca_qp_ex_send_ops(attr->qp_type)) {
			verbs_debug(&ctx->vctx,
				    "qp_ex send_ops_flags %#llx not supported on qp_type %d\n",
				    (unsigned long long)send_ops,
				    attr->qp_type);
			errno = EOPNOTSUPP;
			return NULL;
		}
		if (send_ops & ohca_qp_ex_refused_ops(ctx)) {
			verbs_err(&ctx->vctx,
				  "qp_ex send_ops_flags %#llx: the device does not execute %#llx (device caps %#x)\n",
				  (unsigned long long)send_ops,
				  (unsigned long long)(send_ops &
						       ohca_qp_ex_refused_ops(ctx)),
				  ctx->device_caps);
			errno = EOPNOTSUPP;
			return NULL;
		}
	}
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	qp = ohca_qp_alloc(ibctx, &ex);
	if (!qp)
		return NULL;
	attr->cap = ex.cap;
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		ohca_qp_ex_init_ops(qp, send_ops);
		/* ibv_qp_to_qp_ex() hands out the ibv_qp_ex only with this. */
		qp->vqp.comp_mask |= VERBS_QP_EX;
	}
	return &qp->vqp.qp;
}

void ohca_wq_reset(struct ohca_wq *wq)
{
	pthread_spin_lock(&wq->lock);
	wq->pi = 0;
	__atomic_store_n(&wq->ci, 0, __ATOMIC_RELAXED);
	if (wq->ring.buf)
		memset(wq->ring.buf, 0, wq->ring.len);
	/* The device's producer index restarted at 0 too. */
	if (wq->dbrec)
		ohca_dbrec_set(wq->dbrec, 0);
	wq->mmio_too = false;
	pthread_spin_unlock(&wq->lock);
}

int ohca_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		   int attr_mask)
{
	struct ohca_qp *qp = to_ohca_qp(ibqp);
	struct ibv_modify_qp cmd = {};
	int err;

	err = ibv_cmd_modify_qp(ibqp, attr, attr_mask, &cmd, sizeof(cmd));
	if (err) {
		verbs_debug(&to_ohca_ctx(ibqp->context)->vctx,
			    "MODIFY_QP %u mask 0x%x failed: errno %d\n",
			    qp->qpn, attr_mask, err);
		return err;
	}
	/* A QP back in RESET starts its rings again at index 0, as the
	 * device's do. */
	if ((attr_mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET) {
		ohca_cq_clean(ibqp->send_cq, qp);
		if (ibqp->recv_cq != ibqp->send_cq)
			ohca_cq_clean(ibqp->recv_cq, qp);
		ohca_wq_reset(&qp->sq);
		ohca_wq_reset(&qp->rq);
	}
	return 0;
}

int ohca_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
		  int attr_mask, struct ibv_qp_init_attr *init_attr)
{
	struct ohca_qp *qp = to_ohca_qp(ibqp);
	struct ibv_query_qp cmd = {};
	int err;

	err = ibv_cmd_query_qp(ibqp, attr, attr_mask, init_attr, &cmd,
			       sizeof(cmd));
	if (err)
		return err;
	ohca_fill_caps(qp, &attr->cap);
	init_attr->cap = attr->cap;
	init_attr->sq_sig_all = qp->sq_sig_all;
	return 0;
}

int ohca_destroy_qp(struct ibv_qp *ibqp)
{
	struct ohca_context *ctx = to_ohca_ctx(ibqp->context);
	struct ohca_qp *qp = to_ohca_qp(ibqp);
	int err;

	err = ibv_cmd_destroy_qp(ibqp);
	if (err)
		return err;
	if (qp->rss) {		/* no queues, CQs or table entry (wq.c) */
		ohca_wq_fini(&qp->sq);
		ohca_wq_fini(&qp->rq);
		free(qp);
		return 0;
	}
	/* An XRC target has no queues, CQs or table entry here (xrc.c); an
	 * initiator no receive CQ. */
	if (qp->qp_type != IBV_QPT_XRC_RECV) {
		ohca_qp_table_remove(ctx, qp);
		ohca_cq_clean(ibqp->send_cq, qp);
	}
	if (ibqp->recv_cq && ibqp->recv_cq != ibqp->send_cq)
		ohca_cq_clean(ibqp->recv_cq, qp);
	ohca_dbrec_free(ctx, qp->rq.dbrec);
	ohca_wq_fini(&qp->sq);
	ohca_wq_fini(&qp->rq);
	free(qp);
	return 0;
}

OHCA_DRV_CMD_RESP(ohca_create_ah_resp, ib_uverbs_create_ah_resp,
		  ohca_ibv_create_ah_resp, 4);

/*
 * An InfiniBand port's vector (struct ohca_av_ib): the LRH's DLID, SL and
 * source path bits, a GRH only when the address has one.
 */
static void ohca_av_ib_from_attr(const struct ibv_ah_attr *attr,
				 struct ohca_av *av)
{
	struct ohca_av_ib ib = {};

	ib.dlid = htole16(attr->dlid);
	ib.sl = attr->sl;
	ib.src_path_bits = attr->src_path_bits & 0x7f;
	ib.static_rate = attr->static_rate;
	if (attr->is_global) {
		ib.flags = OHCA_AV_IB_GRH;
		memcpy(ib.dgid, attr->grh.dgid.raw, sizeof(ib.dgid));
		ib.flow_label = htole32(attr->grh.flow_label &
					OHCA_FLOW_LABEL_MASK);
		ib.hop_limit = attr->grh.hop_limit;
		ib.traffic_class = attr->grh.traffic_class;
		ib.sgid_index = attr->grh.sgid_index;
	}
	OHCA_STATIC_ASSERT(sizeof(ib) == sizeof(*av), "one vector, two readings");
	memcpy(av, &ib, sizeof(*av));
}

/*
 * The kernel resolves the destination MAC (as it does for every RoCE
 * provider) and tells the source GID's network type; the device needs no
 * object, so the AH is this vector.
 */
struct ibv_ah *ohca_create_ah(struct ibv_pd *ibpd, struct ibv_ah_attr *attr)
{
	struct ohca_context *ctx = to_ohca_ctx(ibpd->context);
	struct ohca_create_ah_resp resp = {};
	struct ohca_ah *ah;
	int err;

	if (!ctx->ud) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/*
	 * RoCE addresses are GIDs: an AH without a GRH cannot be built. An
	 * InfiniBand one is a LID (the kernel checks the rest).
	 */
	if ((!attr->is_global && !ctx->ib_port) || attr->port_num != 1 ||
	    (ctx->ib_port && attr->sl > 15)) {
		errno = EINVAL;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_create_ah(ibpd, &ah->ibv_ah, attr, &resp.ibv_resp,
				sizeof(resp));
	if (err) {
		free(ah);
		errno = err;
		return NULL;
	}
	if (ctx->ib_port) {
		ohca_av_ib_from_attr(attr, &ah->av);
		return &ah->ibv_ah;
	}
	memcpy(ah->av.dgid, attr->grh.dgid.raw, sizeof(ah->av.dgid));
	memcpy(ah->av.dmac, resp.drv.dmac, sizeof(ah->av.dmac));
	ah->av.vlan_id = htole16(resp.drv.vlan_id);
	/*
	 * The GRH has 20 bits of flow label, ibv_global_route 32: callers
	 * set more (UCX puts ~path_index there to pick the RoCE UDP source
	 * port, as rdma-core's conversion reads the low 20 bits only), and
	 * the device refuses a vector with more (LOC_QP_OP_ERR, BAD_AV).
	 */
	ah->av.flow_label = htole32(attr->grh.flow_label & OHCA_FLOW_LABEL_MASK);
	ah->av.hop_limit = attr->grh.hop_limit;
	ah->av.traffic_class = attr->grh.traffic_class;
	ah->av.sgid_index = attr->grh.sgid_index;
	ah->av.network_type = resp.drv.network_type;
	return &ah->ibv_ah;
}

int ohca_destroy_ah(struct ibv_ah *ibah)
{
	int err;

	err = ibv_cmd_destroy_ah(ibah);
	if (err)
		return err;
	free(to_ohca_ah(ibah));
	return 0;
}

/* ------------------------------------------------------------------ */
/* SRQ                                                                */
/* ------------------------------------------------------------------ */

OHCA_DRV_CMD_REQ(ohca_create_srq_cmd, ibv_create_srq, ohca_ibv_create_srq, 8);
OHCA_DRV_CMD_RESP(ohca_create_srq_resp, ib_uverbs_create_srq_resp,
		  ohca_ibv_create_srq_resp, 8);

/*
 * An SRQ's ring sized for @attr (max_wr and max_sge written back), for
 * create_srq and create_srq_ex; NULL with errno set.
 */
struct ohca_srq *ohca_srq_new(struct ohca_context *ctx, struct ibv_pd *ibpd,
			      struct ibv_srq_attr *attr)
{
	struct ohca_srq *srq;
	int err;

	if (!attr->max_wr || attr->max_wr > ctx->max_srq_wr ||
	    attr->max_sge > ctx->max_srq_sge ||
	    attr->srq_limit >= attr->max_wr) {
		verbs_debug(&ctx->vctx,
			    "SRQ wr %u sge %u limit %u beyond wr %u sge %u\n",
			    attr->max_wr, attr->max_sge, attr->srq_limit,
			    ctx->max_srq_wr, ctx->max_srq_sge);
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	srq->wq.log_size = ohca_roundup_pow2_log(attr->max_wr);
	if (srq->wq.log_size < 1)
		srq->wq.log_size = 1;
	if (srq->wq.log_size > OHCA_WQ_LOG_MAX ||
	    ohca_rq_stride(&srq->wq, attr->max_sge, ctx->max_srq_sge)) {
		err = EINVAL;
		goto err_free;
	}
	err = ohca_wq_init(&srq->wq, ibpd, OHCA_RES_TYPE_SRQ);
	if (err)
		goto err_free;
	if (ctx->use_srq_dbrec)
		srq->wq.dbrec = ohca_dbrec_alloc(ctx);
	attr->max_wr = 1u << srq->wq.log_size;
	attr->max_sge = srq->wq.max_sge;
	return srq;

err_free:
	free(srq);
	errno = err;
	return NULL;
}

/* Once the kernel destroyed it, or never created it. */
void ohca_srq_free(struct ohca_context *ctx, struct ohca_srq *srq)
{
	ohca_dbrec_free(ctx, srq->wq.dbrec);
	ohca_wq_fini(&srq->wq);
	free(srq);
}

/* The driver part of CREATE_SRQ (basic and XRC alike). */
void ohca_srq_cmd(const struct ohca_srq *srq, struct ohca_ibv_create_srq *drv)
{
	drv->buf_addr = (uintptr_t)srq->wq.ring.buf;
	drv->log_size = (uint8_t)srq->wq.log_size;
	drv->log_stride = (uint8_t)srq->wq.log_stride;
	if (srq->wq.dbrec) {
		drv->comp_mask |= OHCA_CREATE_SRQ_DB_RECORD;
		drv->db_addr = (uintptr_t)srq->wq.dbrec;
	}
}

struct ibv_srq *ohca_create_srq(struct ibv_pd *ibpd,
				struct ibv_srq_init_attr *attr)
{
	struct ohca_context *ctx = to_ohca_ctx(ibpd->context);
	struct ohca_create_srq_resp resp = {};
	struct ohca_create_srq_cmd cmd = {};
	struct ibv_srq_attr want = attr->attr;
	struct ohca_srq *srq;
	int err;

	srq = ohca_srq_new(ctx, ibpd, &want);
	if (!srq)
		return NULL;
	ohca_srq_cmd(srq, &cmd.drv);
	err = ibv_cmd_create_srq(ibpd, &srq->vsrq.srq, attr, &cmd.ibv_cmd,
				 sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (err) {
		verbs_debug(&ctx->vctx, "CREATE_SRQ failed: errno %d\n", err);
		ohca_srq_free(ctx, srq);
		errno = err;
		return NULL;
	}
	srq->srqn = resp.drv.srqn;
	attr->attr.max_wr = want.max_wr;
	attr->attr.max_sge = want.max_sge;
	verbs_debug(&ctx->vctx, "srq %u: %u x %u B at %p, record %p\n",
		    srq->srqn, 1u << srq->wq.log_size, 1u << srq->wq.log_stride,
		    srq->wq.ring.buf, (void *)srq->wq.dbrec);
	return &srq->vsrq.srq;
}

int ohca_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		    int attr_mask)
{
	struct ibv_modify_srq cmd = {};

	/* No resizing (IBV_DEVICE_SRQ_RESIZE is not reported). */
	if (attr_mask & ~IBV_SRQ_LIMIT)
		return EOPNOTSUPP;
	return ibv_cmd_modify_srq(ibsrq, attr, attr_mask, &cmd, sizeof(cmd));
}

int ohca_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd = {};

	return ibv_cmd_query_srq(ibsrq, attr, &cmd, sizeof(cmd));
}

int ohca_destroy_srq(struct ibv_srq *ibsrq)
{
	struct ohca_srq *srq = to_ohca_srq(ibsrq);
	int err;

	err = ibv_cmd_destroy_srq(ibsrq);
	if (err)
		return err;
	if (srq->xrc)
		ohca_xrc_srq_remove(to_ohca_ctx(ibsrq->context), srq);
	ohca_srq_free(to_ohca_ctx(ibsrq->context), srq);
	return 0;
}
