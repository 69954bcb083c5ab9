// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libohca: receive work queues, RWQ indirection tables and RSS QPs
 * (programming manual section 23). A WQ is a receive ring of the RQ's
 * format in this process's memory, rung with OHCA_DB_WQ; its receive
 * CQEs carry OHCA_CQE_F_WQ and the wqn, so the poller retires its slots
 * through ctx->wqs. An RSS QP has no queues: the device spreads the
 * frames of its flows over the table's WQs by the hash given here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ohca.h"

OHCA_DRV_CMD_REQ(ohca_create_wq_cmd, ibv_create_wq, ohca_ibv_create_wq, 8);
OHCA_DRV_CMD_REQ(ohca_create_rss_qp_cmd, ibv_create_qp_ex,
		 ohca_ibv_create_rss_qp, 8);
OHCA_DRV_CMD_RESP(ohca_create_rss_qp_resp, ib_uverbs_ex_create_qp_resp,
		  ohca_ibv_create_qp_resp, 8);

/* Lock-free for pollers, as ohca_find_qp(). */
struct ohca_rwq *ohca_find_wq(struct ohca_context *ctx, uint32_t wqn)
{
	struct ohca_rwq **wqs = __atomic_load_n(&ctx->wqs, __ATOMIC_ACQUIRE);

	if (!wqs || wqn >= OHCA_MAX_WQN)
		return NULL;
	return __atomic_load_n(&wqs[wqn], __ATOMIC_ACQUIRE);
}

static int ohca_wq_table_set(struct ohca_context *ctx, uint32_t wqn,
			     struct ohca_rwq *rwq)
{
	struct ohca_rwq **wqs;

	if (wqn >= OHCA_MAX_WQN)
		return EINVAL;
	pthread_mutex_lock(&ctx->qp_table_lock);
	wqs = ctx->wqs;
	if (!wqs) {
		wqs = calloc(OHCA_MAX_WQN, sizeof(*wqs));
		if (!wqs) {
			pthread_mutex_unlock(&ctx->qp_table_lock);
			return ENOMEM;
		}
		__atomic_store_n(&ctx->wqs, wqs, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&wqs[wqn], rwq, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ctx->qp_table_lock);
	return 0;
}

static int ohca_post_wq_recv(struct ibv_wq *ibwq, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad_wr)
{
	struct ohca_rwq *rwq = to_ohca_rwq(ibwq);

	return ohca_post_recv_ring(to_ohca_ctx(ibwq->context), &rwq->wq,
				   OHCA_DB_WQ, rwq->wqn, true, wr, bad_wr);
}

struct ibv_wq *ohca_create_wq(struct ibv_context *ibctx,
			      struct ibv_wq_init_attr *attr)
{
	struct ohca_context *ctx = to_ohca_ctx(ibctx);
	struct ib_uverbs_ex_create_wq_resp resp = {};
	struct ohca_create_wq_cmd cmd = {};
	struct ohca_rwq *rwq;
	int err;

	if (attr->wq_type != IBV_WQT_RQ || attr->comp_mask ||
	    (attr->create_flags)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!attr->max_wr || attr->max_wr > ctx->max_qp_wr ||
	    attr->max_sge > ctx->max_sge || !attr->pd || !attr->cq) {
		errno = EINVAL;
		return NULL;
	}
	rwq = calloc(1, sizeof(*rwq));
	if (!rwq) {
		errno = ENOMEM;
		return NULL;
	}
	rwq->wq.log_size = ohca_roundup_pow2_log(attr->max_wr);
	if (rwq->wq.log_size < 1)
		rwq->wq.log_size = 1;
	err = ohca_rq_stride(&rwq->wq, attr->max_sge, ctx->max_sge);
	if (!err)
		err = ohca_wq_init(&rwq->wq, attr->pd, OHCA_RES_TYPE_QP);
	if (err)
		goto err_free;
	cmd.drv.buf_addr = (uintptr_t)rwq->wq.ring.buf;
	cmd.drv.log_size = (uint8_t)rwq->wq.log_size;
	cmd.drv.log_stride = (uint8_t)rwq->wq.log_stride;
	err = ibv_cmd_create_wq(ibctx, attr, &rwq->ibv_wq, &cmd.ibv_cmd,
				sizeof(cmd), &resp, sizeof(resp));
	if (err) {
		verbs_debug(&ctx->vctx, "CREATE_WQ failed: errno %d\n", err);
		goto err_fini;
	}
	rwq->wqn = rwq->ibv_wq.wq_num;
	err = ohca_wq_table_set(ctx, rwq->wqn, rwq);
	if (err) {
		ibv_cmd_destroy_wq(&rwq->ibv_wq);
		goto err_fini;
	}
	rwq->ibv_wq.post_recv = ohca_post_wq_recv;
	attr->max_wr = 1u << rwq->wq.log_size;
	attr->max_sge = rwq->wq.max_sge;
	return &rwq->ibv_wq;

err_fini:
	ohca_wq_fini(&rwq->wq);
err_free:
	free(rwq);
	errno = err;
	return NULL;
}

int ohca_modify_wq(struct ibv_wq *ibwq, struct ibv_wq_attr *attr)
{
	struct ohca_rwq *rwq = to_ohca_rwq(ibwq);
	struct ibv_modify_wq cmd = {};
	int err;

	if (attr->attr_mask & ~(uint32_t)(IBV_WQ_ATTR_STATE |
					  IBV_WQ_ATTR_CURR_STATE))
		return EOPNOTSUPP;
	err = ibv_cmd_modify_wq(ibwq, attr, &cmd, sizeof(cmd));
	if (err)
		return err;
	/* Back in RESET the device starts the ring again at index 0. */
	if ((attr->attr_mask & IBV_WQ_ATTR_STATE) &&
	    attr->wq_state == IBV_WQS_RESET)
		ohca_wq_reset(&rwq->wq);
	return 0;
}

int ohca_destroy_wq(struct ibv_wq *ibwq)
{
	struct ohca_context *ctx = to_ohca_ctx(ibwq->context);
	struct ohca_rwq *rwq = to_ohca_rwq(ibwq);
	struct ohca_cq *cq = to_ohca_cq(ibwq->cq);
	int err;

	err = ibv_cmd_destroy_wq(ibwq);
	if (err)
		return err;
	(void)ohca_wq_table_set(ctx, rwq->wqn, NULL);
	/* A poller holds the WQ only under its CQ's lock: wait it out; its
	 * later CQEs find no WQ and are dropped. */
	pthread_spin_lock(&cq->lock);
	pthread_spin_unlock(&cq->lock);
	ohca_wq_fini(&rwq->wq);
	free(rwq);
	return 0;
}

struct ibv_rwq_ind_table *
ohca_create_rwq_ind_table(struct ibv_context *ibctx,
			  struct ibv_rwq_ind_table_init_attr *attr)
{
	struct ib_uverbs_ex_create_rwq_ind_table_resp resp = {};
	struct ibv_rwq_ind_table *tbl;
	int err;

	tbl = calloc(1, sizeof(*tbl));
	if (!tbl) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_create_rwq_ind_table(ibctx, attr, tbl, &resp,
					   sizeof(resp));
	if (err) {
		free(tbl);
		errno = err;
		return NULL;
	}
	return tbl;
}

int ohca_destroy_rwq_ind_table(struct ibv_rwq_ind_table *tbl)
{
	int err = ibv_cmd_destroy_rwq_ind_table(tbl);

	if (err)
		return err;
	free(tbl);
	return 0;
}

/*
 * ibv_create_qp_ex with IBV_QP_INIT_ATTR_IND_TABLE: a raw packet QP
 * without queues, the Toeplitz hash of rx_hash_conf's fields. The kernel
 * and the device check the rest (fields, table, type).
 */
struct ibv_qp *ohca_create_rss_qp(struct ibv_context *ibctx,
				  struct ibv_qp_init_attr_ex *attr)
{
	struct ohca_context *ctx = to_ohca_ctx(ibctx);
	struct ohca_create_rss_qp_resp resp = {};
	struct ohca_create_rss_qp_cmd cmd = {};
	struct ibv_rx_hash_conf *h = &attr->rx_hash_conf;
	struct ohca_qp *qp;
	int err;

	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_RX_HASH) ||
	    attr->qp_type != IBV_QPT_RAW_PACKET ||
	    h->rx_hash_function != IBV_RX_HASH_FUNC_TOEPLITZ ||
	    h->rx_hash_key_len != sizeof(cmd.drv.rx_hash_key) ||
	    !h->rx_hash_key) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	if (ohca_wq_init_empty(&qp->sq) || ohca_wq_init_empty(&qp->rq)) {
		free(qp);
		errno = ENOMEM;
		return NULL;
	}
	cmd.drv.rx_hash_fields_mask = h->rx_hash_fields_mask;
	cmd.drv.rx_hash_function = h->rx_hash_function;
	cmd.drv.rx_key_len = h->rx_hash_key_len;
	memcpy(cmd.drv.rx_hash_key, h->rx_hash_key,
	       sizeof(cmd.drv.rx_hash_key));
	err = ohca_cmd_create_qp_ex2(ibctx, &qp->vqp, attr, &cmd.ibv_cmd,
				     sizeof(cmd), &resp.ibv_resp, sizeof(resp));
	if (err) {
		verbs_debug(&ctx->vctx, "CREATE_QP (RSS) failed: errno %d\n",
			    err);
		ohca_wq_fini(&qp->sq);
		ohca_wq_fini(&qp->rq);
		free(qp);
		errno = err;
		return NULL;
	}
	qp->qpn = resp.drv.qpn;
	qp->qp_type = IBV_QPT_RAW_PACKET;
	qp->rss = true;
	memset(&attr->cap, 0, sizeof(attr->cap));
	return &qp->vqp.qp;
}
