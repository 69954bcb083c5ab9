// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libohca: XRC. A domain is the kernel's (and the device's) object; an
 * XRC SRQ is an SRQ whose receive completions name it rather than a QP
 * of this context (CQE flag OHCA_CQE_F_XRC, src_qp = its number), so
 * the pollers find it in ctx->xrc_srqs; a target QP (XRC_RECV) has no
 * queues here at all; an initiator (XRC_SEND) is an RC send queue whose
 * WQEs carry the remote SRQ number (fastpath.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ohca.h"

struct ibv_xrcd *ohca_open_xrcd(struct ibv_context *ibctx,
				struct ibv_xrcd_init_attr *attr)
{
	struct ib_uverbs_open_xrcd_resp resp = {};
	struct ibv_open_xrcd cmd = {};
	struct verbs_xrcd *xrcd;
	int err;

	xrcd = calloc(1, sizeof(*xrcd));
	if (!xrcd) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_open_xrcd(ibctx, xrcd, sizeof(*xrcd), attr, &cmd,
				sizeof(cmd), &resp, sizeof(resp));
	if (err) {
		free(xrcd);
		errno = err;
		return NULL;
	}
	return &xrcd->xrcd;
}

int ohca_close_xrcd(struct ibv_xrcd *ibxrcd)
{
	struct verbs_xrcd *xrcd =
		ohca_container_of(ibxrcd, struct verbs_xrcd, xrcd);
	int err;

	err = ibv_cmd_close_xrcd(xrcd);
	if (err)
		return err;
	free(xrcd);
	return 0;
}

struct ohca_srq *ohca_find_xrc_srq(struct ohca_context *ctx, uint32_t srqn)
{
	struct ohca_srq **t = __atomic_load_n(&ctx->xrc_srqs, __ATOMIC_ACQUIRE);

	if (!t || srqn >= OHCA_MAX_XRC_SRQN)
		return NULL;
	return __atomic_load_n(&t[srqn], __ATOMIC_ACQUIRE);
}

static int ohca_xrc_srq_insert(struct ohca_context *ctx, struct ohca_srq *srq)
{
	int err = 0;

	if (srq->srqn >= OHCA_MAX_XRC_SRQN)
		return ENOMEM;
	pthread_mutex_lock(&ctx->qp_table_lock);
	if (!ctx->xrc_srqs) {
		struct ohca_srq **t = calloc(OHCA_MAX_XRC_SRQN, sizeof(*t));

		if (!t)
			err = ENOMEM;
		else
			__atomic_store_n(&ctx->xrc_srqs, t, __ATOMIC_RELEASE);
	}
	if (!err) {
		__atomic_store_n(&ctx->xrc_srqs[srq->srqn], srq,
				 __ATOMIC_RELEASE);
		srq->xrc = true;
	}
	pthread_mutex_unlock(&ctx->qp_table_lock);
	return err;
}

void ohca_xrc_srq_remove(struct ohca_context *ctx, struct ohca_srq *srq)
{
	pthread_mutex_lock(&ctx->qp_table_lock);
	if (ctx->xrc_srqs && srq->srqn < OHCA_MAX_XRC_SRQN &&
	    ctx->xrc_srqs[srq->srqn] == srq)
		__atomic_store_n(&ctx->xrc_srqs[srq->srqn], NULL,
				 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ctx->qp_table_lock);
}

OHCA_DRV_CMD_REQ(ohca_create_xsrq_cmd, ibv_create_xsrq, ohca_ibv_create_srq,
		 8);
OHCA_DRV_CMD_RESP(ohca_create_xsrq_resp, ib_uverbs_create_srq_resp,
		  ohca_ibv_create_srq_resp, 8);

/*
 * ibv_create_srq_ex: a basic SRQ (PD) or an XRC SRQ (PD, XRCD and CQ);
 * other types and comp_mask bits are EOPNOTSUPP.
 */
struct ibv_srq *ohca_create_srq_ex(struct ibv_context *ibctx,
				   struct ibv_srq_init_attr_ex *attr)
{
	const uint32_t need = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
	struct ohca_context *ctx = to_ohca_ctx(ibctx);
	struct ohca_create_xsrq_resp resp = {};
	struct ohca_create_xsrq_cmd cmd = {};
	struct ibv_srq_attr want = attr->attr;
	struct ohca_srq *srq;
	int err;

	if (attr->comp_mask & ~(uint32_t)(need | IBV_SRQ_INIT_ATTR_XRCD |
					  IBV_SRQ_INIT_ATTR_CQ)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((attr->comp_mask & need) != need || !attr->pd) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->srq_type == IBV_SRQT_BASIC) {
		struct ibv_srq_init_attr basic = {
			.srq_context = attr->srq_context,
			.attr = attr->attr,
		};
		struct ibv_srq *s = ohca_create_srq(attr->pd, &basic);

		if (s)
			attr->attr = basic.attr;
		return s;
	}
	if (attr->srq_type != IBV_SRQT_XRC) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !attr->xrcd ||
	    !(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->cq) {
		errno = EINVAL;
		return NULL;
	}
	srq = ohca_srq_new(ctx, attr->pd, &want);
	if (!srq)
		return NULL;
	ohca_srq_cmd(srq, &cmd.drv);
	err = ibv_cmd_create_srq_ex(ibctx, &srq->vsrq, attr, &cmd.ibv_cmd,
				    sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (err) {
		verbs_debug(&ctx->vctx, "CREATE_XSRQ failed: errno %d\n", err);
		goto err_free;
	}
	srq->srqn = resp.drv.srqn;
	if (srq->vsrq.srq_num != srq->srqn)
		verbs_warn(&ctx->vctx, "srqn %u in the driver response, %u in the core one\n",
			   srq->srqn, srq->vsrq.srq_num);
	err = ohca_xrc_srq_insert(ctx, srq);
	if (err) {
		ibv_cmd_destroy_srq(&srq->vsrq.srq);
		goto err_free;
	}
	attr->attr.max_wr = want.max_wr;
	attr->attr.max_sge = want.max_sge;
	return &srq->vsrq.srq;

err_free:
	ohca_srq_free(ctx, srq);
	errno = err;
	return NULL;
}

int ohca_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	struct ohca_srq *srq = to_ohca_srq(ibsrq);

	if (!srq->xrc)
		return EOPNOTSUPP;
	*srq_num = srq->srqn;
	return 0;
}

OHCA_DRV_CMD_REQ(ohca_create_tgt_cmd, ibv_create_qp, ohca_ibv_create_qp, 8);
OHCA_DRV_CMD_RESP(ohca_create_tgt_resp, ib_uverbs_create_qp_resp,
		  ohca_ibv_create_qp_resp, 8);

/*
 * An XRC target QP: the kernel creates it for the domain (no udata reaches
 * the driver, so the driver part stays zero); here it is only a handle
 * for modify, query and destroy.
 */
struct ibv_qp *ohca_create_xrc_recv_qp(struct ibv_context *ibctx,
				       struct ibv_qp_init_attr_ex *attr)
{
	struct ohca_create_tgt_resp resp = {};
	struct ohca_create_tgt_cmd cmd = {};
	struct ibv_qp_init_attr_ex kattr;
	struct ohca_qp *qp;
	int err;

	if (attr->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_XRCD |
					  IBV_QP_INIT_ATTR_CREATE_FLAGS)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
	     attr->create_flags)) {
		errno = attr->create_flags ? EOPNOTSUPP : EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	qp->qp_type = IBV_QPT_XRC_RECV;
	if (pthread_spin_init(&qp->sq.lock, PTHREAD_PROCESS_PRIVATE)) {
		free(qp);
		errno = ENOMEM;
		return NULL;
	}
	if (pthread_spin_init(&qp->rq.lock, PTHREAD_PROCESS_PRIVATE)) {
		pthread_spin_destroy(&qp->sq.lock);
		free(qp);
		errno = ENOMEM;
		return NULL;
	}
	kattr = *attr;
	kattr.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	memset(&kattr.cap, 0, sizeof(kattr.cap));
	err = ibv_cmd_create_qp_ex(ibctx, &qp->vqp, &kattr, &cmd.ibv_cmd,
				   sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (err) {
		pthread_spin_destroy(&qp->rq.lock);
		pthread_spin_destroy(&qp->sq.lock);
		free(qp);
		errno = err;
		return NULL;
	}
	qp->qpn = qp->vqp.qp.qp_num;
	memset(&attr->cap, 0, sizeof(attr->cap));
	return &qp->vqp.qp;
}
