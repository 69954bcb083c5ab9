// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca: receive work queues, RWQ indirection tables and RSS QPs
 * (programming manual section 23). User objects only, as mlx5's: a WQ's
 * ring lives in the process's memory (the provider posts to it and rings
 * OHCA_DB_WQ on the context's doorbell page); an RSS QP has no queues and
 * spreads the frames its flows take over the table's WQs by a Toeplitz
 * hash, in the device.
 *
 * No kernel consumer uses them, so, like XRCDs and flows, they have no
 * kernel reserve (ohca_quota.c); the device bounds them (max_wq,
 * max_rwq_ind_tbl) and an RSS QP counts as a QP.
 */
#include <rdma/uverbs_ioctl.h>

#include <ohca/ohca-abi.h>

#include "ohca_ib.h"

/**
 * ohca_has_rss() - whether the device offers WQs and RSS QPs
 * @dev: the RDMA device
 *
 * Return: true on an Ethernet port of a device with OHCA_DEV_CAP_RSS.
 */
bool ohca_has_rss(struct ohca_ibdev *dev)
{
	return ohca_has_raw(dev) &&
	       (le32_to_cpu(dev->cdev->attr.dev_caps) & OHCA_DEV_CAP_RSS);
}

static u32 ohca_rwq_max_sge(struct ohca_ibdev *dev)
{
	return le32_to_cpu(dev->cdev->attr.max_sge);
}

static void ohca_rwq_free(struct ohca_rwq *rwq)
{
	ib_umem_release(rwq->wq.umem);
	kfree(rwq);
}

/**
 * ohca_create_wq() - ib_device_ops.create_wq: a receive WQ
 * @ibpd: its PD
 * @init: its type (IB_WQT_RQ), CQ and size, rounded up and written back
 * @udata: the provider's request (struct ohca_ibv_create_wq)
 *
 * Return: the WQ, or ERR_PTR of -EOPNOTSUPP (a kernel caller, another
 * type, flags), -EINVAL (sizes, reserved bytes) or the ring's or the
 * command's errno.
 */
struct ib_wq *ohca_create_wq(struct ib_pd *ibpd, struct ib_wq_init_attr *init,
			     struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibpd->device);
	struct ohca_ucontext *uctx;
	struct ohca_ibv_create_wq ucmd;
	struct ohca_create_wq_in in = {};
	struct ohca_pbl_mem mem;
	struct ohca_rwq *rwq;
	u32 max_wr = le32_to_cpu(dev->cdev->attr.max_wq_wr);
	int err;

	if (!udata || init->wq_type != IB_WQT_RQ || init->create_flags)
		return ERR_PTR(-EOPNOTSUPP);
	if (udata->inlen < sizeof(ucmd))
		return ERR_PTR(-EINVAL);
	err = ib_copy_from_udata(&ucmd, udata, sizeof(ucmd));
	if (err)
		return ERR_PTR(err);
	if (ucmd.reserved0 || ucmd.comp_mask ||
	    (udata->inlen > sizeof(ucmd) &&
	     !ib_is_udata_cleared(udata, sizeof(ucmd),
				  udata->inlen - sizeof(ucmd))))
		return ERR_PTR(-EINVAL);
	if (!init->max_wr || init->max_wr > max_wr ||
	    init->max_sge > ohca_rwq_max_sge(dev) ||
	    ucmd.log_size < 1 || ucmd.log_size > OHCA_WQ_LOG_MAX ||
	    BIT(ucmd.log_size) > max_wr || BIT(ucmd.log_size) < init->max_wr ||
	    ucmd.log_stride < OHCA_RQ_LOG_STRIDE_MIN ||
	    ucmd.log_stride > OHCA_WQ_LOG_STRIDE_MAX ||
	    sizeof(struct ohca_recv_wqe) +
	    init->max_sge * sizeof(struct ohca_sge) > BIT(ucmd.log_stride))
		return ERR_PTR(-EINVAL);

	rwq = kzalloc(sizeof(*rwq), GFP_KERNEL);
	if (!rwq)
		return ERR_PTR(-ENOMEM);
	rwq->wq.log_size = ucmd.log_size;
	rwq->wq.log_stride = ucmd.log_stride;
	rwq->wq.umem = ohca_umem_ring(dev, ucmd.buf_addr,
				      BIT(ucmd.log_size + ucmd.log_stride),
				      &in.pbl, &mem);
	if (IS_ERR(rwq->wq.umem)) {
		err = PTR_ERR(rwq->wq.umem);
		rwq->wq.umem = NULL;
		goto err_free;
	}
	uctx = rdma_udata_to_drv_context(udata, struct ohca_ucontext,
					 ibucontext);
	in.pdn = cpu_to_le32(to_ohca_pd(ibpd)->pdn);
	in.cqn = cpu_to_le32(to_ohca_cq(init->cq)->cqn);
	in.uar_index = cpu_to_le32(uctx->uar_index);
	in.log_size = ucmd.log_size;
	in.log_stride = ucmd.log_stride;
	err = ohca_cmd_create(dev->cdev, OHCA_CMD_CREATE_WQ, &in, sizeof(in),
			      &rwq->wqn, NULL);
	/* The device copied the list. */
	ohca_pbl_free(dev, &mem);
	if (err)
		goto err_free;

	rwq->ibwq.wq_num = rwq->wqn;
	init->max_wr = BIT(ucmd.log_size);
	init->max_sge = min_t(u32, ohca_rwq_max_sge(dev),
			      (BIT(ucmd.log_stride) -
			       sizeof(struct ohca_recv_wqe)) /
			      sizeof(struct ohca_sge));
	return &rwq->ibwq;

err_free:
	ohca_rwq_free(rwq);
	return ERR_PTR(err);
}

/**
 * ohca_destroy_wq() - ib_device_ops.destroy_wq
 * @ibwq: the WQ (the core destroys its tables first)
 * @udata: unused
 *
 * The ring is released unless the device may still use it
 * (ohca_destroy_object()).
 *
 * Return: 0.
 */
int ohca_destroy_wq(struct ib_wq *ibwq, struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibwq->device);
	struct ohca_rwq *rwq = to_ohca_rwq(ibwq);

	if (ohca_destroy_object(dev, NULL, OHCA_CMD_DESTROY_WQ, rwq->wqn, "WQ",
				NULL))
		ohca_rwq_free(rwq);
	return 0;
}

/**
 * ohca_modify_wq() - ib_device_ops.modify_wq: the WQ's state
 * @ibwq: the WQ
 * @attr: the new state, and the current one with IB_WQ_CUR_STATE
 * @mask: IB_WQ_STATE and IB_WQ_CUR_STATE (no flags are offered)
 * @udata: the provider's (no request data)
 *
 * Return: 0, -EOPNOTSUPP for flags, -EINVAL for a state out of range or
 * a transition the device refuses, or the command's errno.
 */
int ohca_modify_wq(struct ib_wq *ibwq, struct ib_wq_attr *attr, u32 mask,
		   struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibwq->device);
	struct ohca_modify_wq_in in = {
		.wqn = cpu_to_le32(to_ohca_rwq(ibwq)->wqn),
		.cur_state = 0xff,
	};
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_MODIFY_WQ,
		.in = &in,
		.in_len = sizeof(in),
	};
	int err;

	if (mask & ~(IB_WQ_STATE | IB_WQ_CUR_STATE))
		return -EOPNOTSUPP;
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;
	if (!(mask & IB_WQ_STATE))
		return 0;
	if (attr->wq_state > IB_WQS_ERR ||
	    ((mask & IB_WQ_CUR_STATE) && attr->curr_wq_state > IB_WQS_ERR))
		return -EINVAL;
	in.state = attr->wq_state;	/* the IB values are the device's */
	if (mask & IB_WQ_CUR_STATE)
		in.cur_state = attr->curr_wq_state;
	err = ohca_cmd_exec(dev->cdev, &args);
	/* A refused transition is the caller's error, not the device's. */
	return err == -EBUSY ? -EINVAL : err;
}

/**
 * ohca_create_rwq_ind_table() - ib_device_ops.create_rwq_ind_table
 * @ibtbl: the table, allocated by the core
 * @init: its size and WQs
 * @udata: the provider's (no request data)
 *
 * Return: 0, -EINVAL for a size above the device's, or the command's errno.
 */
int ohca_create_rwq_ind_table(struct ib_rwq_ind_table *ibtbl,
			      struct ib_rwq_ind_table_init_attr *init,
			      struct ib_udata *udata)
{
	struct ohca_rwq_ind_table *tbl = to_ohca_ind_tbl(ibtbl);
	struct ohca_create_rwq_ind_tbl_in *in;
	struct ohca_ibdev *dev;
	u32 n, i;
	int err;

	if (init->log_ind_tbl_size > OHCA_RWQ_IND_TBL_LOG_MAX)
		return -EINVAL;
	/* The table's own device field may not be set yet: its WQs' is. */
	dev = to_ohca_dev(init->ind_tbl[0]->device);
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;
	/* 1 KiB: too large for the stack. */
	in = kzalloc(sizeof(*in), GFP_KERNEL);
	if (!in)
		return -ENOMEM;
	n = BIT(init->log_ind_tbl_size);
	in->log_size = init->log_ind_tbl_size;
	for (i = 0; i < n; i++)
		in->wqn[i] = cpu_to_le32(to_ohca_rwq(init->ind_tbl[i])->wqn);
	err = ohca_cmd_create(dev->cdev, OHCA_CMD_CREATE_RWQ_IND_TBL, in,
			      sizeof(*in), &tbl->tbl_num, NULL);
	kfree(in);
	if (err)
		return err;
	ibtbl->ind_tbl_num = tbl->tbl_num;
	return 0;
}

/**
 * ohca_destroy_rwq_ind_table() - ib_device_ops.destroy_rwq_ind_table
 * @ibtbl: the table (its RSS QPs are gone: the core counts them)
 *
 * Return: 0, or the command's errno (the table then stays).
 */
int ohca_destroy_rwq_ind_table(struct ib_rwq_ind_table *ibtbl)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibtbl->device);

	return ohca_cmd_destroy(dev->cdev, OHCA_CMD_DESTROY_RWQ_IND_TBL,
				to_ohca_ind_tbl(ibtbl)->tbl_num);
}

/**
 * ohca_create_rss_qp() - create_qp of a QP with an indirection table
 * @dev: the RDMA device
 * @qp: the QP, allocated by the core
 * @init: IB_QPT_RAW_PACKET with rwq_ind_tbl, no queues of its own
 * @udata: the provider's hash (struct ohca_ibv_create_rss_qp)
 *
 * Return: 0, -EOPNOTSUPP (a kernel caller, no RSS, another type, a send
 * queue), -EINVAL (the hash) or the command's errno.
 */
int ohca_create_rss_qp(struct ohca_ibdev *dev, struct ohca_qp *qp,
		       struct ib_qp_init_attr *init, struct ib_udata *udata)
{
	struct ohca_ibv_create_qp_resp resp = {};
	struct ohca_ibv_create_rss_qp ucmd;
	struct ohca_create_rss_qp_in in = {};
	int err;

	if (!udata || !ohca_has_rss(dev) ||
	    init->qp_type != IB_QPT_RAW_PACKET || init->create_flags ||
	    init->cap.max_send_wr || init->cap.max_recv_wr || init->srq)
		return -EOPNOTSUPP;
	if (udata->inlen < sizeof(ucmd))
		return -EINVAL;
	err = ib_copy_from_udata(&ucmd, udata, sizeof(ucmd));
	if (err)
		return err;
	if (ucmd.reserved0 || ucmd.comp_mask ||
	    (udata->inlen > sizeof(ucmd) &&
	     !ib_is_udata_cleared(udata, sizeof(ucmd),
				  udata->inlen - sizeof(ucmd))))
		return -EINVAL;
	/* The device checks the fields' rules (one IP version, one L4). */
	if (ucmd.rx_hash_function != OHCA_RSS_HASH_TOEPLITZ ||
	    ucmd.rx_key_len != OHCA_RSS_KEY_LEN ||
	    ucmd.rx_hash_fields_mask & ~(u64)OHCA_RSS_ALL_FIELDS)
		return -EINVAL;

	in.pdn = cpu_to_le32(to_ohca_pd(qp->ibqp.pd)->pdn);
	in.ind_tbl = cpu_to_le32(to_ohca_ind_tbl(init->rwq_ind_tbl)->tbl_num);
	in.fields = cpu_to_le32((u32)ucmd.rx_hash_fields_mask);
	in.hash_function = OHCA_RSS_HASH_TOEPLITZ;
	memcpy(in.key, ucmd.rx_hash_key, sizeof(in.key));

	qp->type = IB_QPT_RAW_PACKET;
	qp->rss = true;
	mutex_init(&qp->state_lock);
	qp->state = IB_QPS_RESET;
	err = ohca_cmd_create(dev->cdev, OHCA_CMD_CREATE_RSS_QP, &in,
			      sizeof(in), &qp->qpn, NULL);
	if (err)
		goto err_mutex;
	err = xa_insert_irq(&dev->qp_xa, qp->qpn, qp, GFP_KERNEL);
	if (err) {
		dev_err(&dev->cdev->pdev->dev, "device reused QP number 0x%x\n",
			qp->qpn);
		goto err_destroy;
	}
	qp->ibqp.qp_num = qp->qpn;
	memset(&init->cap, 0, sizeof(init->cap));
	resp.qpn = qp->qpn;
	err = ib_copy_to_udata(udata, &resp, min(sizeof(resp), udata->outlen));
	if (err)
		goto err_erase;
	return 0;

err_erase:
	xa_erase_irq(&dev->qp_xa, qp->qpn);
err_destroy:
	ohca_destroy_object(dev, NULL, OHCA_CMD_DESTROY_QP, qp->qpn, "QP", NULL);
err_mutex:
	mutex_destroy(&qp->state_lock);
	return err;
}

/* Registered only when the device offers them (ohca_ib_main.c). */
const struct ib_device_ops ohca_rss_ops = {
	.create_rwq_ind_table = ohca_create_rwq_ind_table,
	.create_wq = ohca_create_wq,
	.destroy_rwq_ind_table = ohca_destroy_rwq_ind_table,
	.destroy_wq = ohca_destroy_wq,
	.modify_wq = ohca_modify_wq,

	INIT_RDMA_OBJ_SIZE(ib_rwq_ind_table, ohca_rwq_ind_table, ibtbl),
};
