// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca: queue pairs (RC, UD and the GSI QP) and address handles. User QPs
 * have their rings in the process's memory; kernel QPs have coherent rings
 * posted to here and rung on the kernel's doorbell page 0. An address
 * handle is only an address vector in host memory: UD send WQEs carry it,
 * so creating one needs no command and never sleeps.
 */
#include <linux/dma-mapping.h>
#include <linux/if_vlan.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/uverbs_ioctl.h>

#include <ohca/ohca-abi.h>

#include "ohca_ib.h"

/**
 * ohca_qp_event_type() - a QP_EVENT's code as the RDMA core's event
 * @code: OHCA_QP_EV_*
 * @ok: set to whether @code is known
 *
 * Return: the ib_event_type (IB_EVENT_QP_FATAL for an unknown code).
 */
enum ib_event_type ohca_qp_event_type(u16 code, bool *ok)
{
	*ok = true;
	switch (code) {
	case OHCA_QP_EV_COMM_EST:
		return IB_EVENT_COMM_EST;
	case OHCA_QP_EV_SQ_DRAINED:
		return IB_EVENT_SQ_DRAINED;
	case OHCA_QP_EV_LAST_WQE_REACHED:
		return IB_EVENT_QP_LAST_WQE_REACHED;
	case OHCA_QP_EV_FATAL:
		return IB_EVENT_QP_FATAL;
	case OHCA_QP_EV_REQ_ERR:
		return IB_EVENT_QP_REQ_ERR;
	case OHCA_QP_EV_ACCESS_ERR:
		return IB_EVENT_QP_ACCESS_ERR;
	default:
		*ok = false;
		return IB_EVENT_QP_FATAL;
	}
}

/**
 * ohca_qp_event() - a QP_EVENT from the device
 * @dev: the RDMA device
 * @qpn: the QP's number
 * @code: OHCA_QP_EV_*
 *
 * Calls the QP's event handler; an event of an unknown QP or with an
 * unknown code is dropped. EQ 0, IRQ context.
 */
void ohca_qp_event(struct ohca_ibdev *dev, u32 qpn, u16 code)
{
	struct ohca_qp *qp = xa_load(&dev->qp_xa, qpn);
	struct ib_event event;
	bool ok;

	event.event = ohca_qp_event_type(code, &ok);
	if (!ok) {
		dev_warn_ratelimited(&dev->cdev->pdev->dev,
				     "unknown event %u for QP 0x%x ignored\n",
				     code, qpn);
		return;
	}
	if (!qp) {
		dev_dbg_ratelimited(&dev->cdev->pdev->dev,
				    "event %u for unknown QP 0x%x\n", code, qpn);
		return;
	}
	if (!qp->ibqp.event_handler)
		return;
	event.device = &dev->ibdev;
	event.element.qp = &qp->ibqp;
	qp->ibqp.event_handler(&event, qp->ibqp.qp_context);
}

static u32 ohca_max_wr(struct ohca_ibdev *dev)
{
	return le32_to_cpu(dev->cdev->attr.max_qp_wr);
}

static u32 ohca_max_sge(struct ohca_ibdev *dev)
{
	return le32_to_cpu(dev->cdev->attr.max_sge);
}

static u32 ohca_max_inline(struct ohca_ibdev *dev)
{
	return le32_to_cpu(dev->cdev->attr.max_inline_data);
}

/* A queue of 2^log_size WQEs must hold @wr and stay within the limits. */
static bool ohca_wq_size_ok(struct ohca_ibdev *dev, u32 log_size, u32 wr)
{
	return log_size <= OHCA_WQ_LOG_MAX && BIT(log_size) >= wr &&
	       BIT(log_size) <= roundup_pow_of_two(ohca_max_wr(dev));
}

/*
 * RC, UC and XRC QPs have a peer set by modify_qp; UD and GSI WQEs name
 * theirs.
 */
static bool ohca_qp_connected(enum ib_qp_type type)
{
	return type == IB_QPT_RC || type == IB_QPT_UC ||
	       type == IB_QPT_XRC_INI || type == IB_QPT_XRC_TGT;
}

/* No receive queue of its own: on an SRQ, or an XRC initiator. */
static bool ohca_qp_no_rq(const struct ib_qp_init_attr *init)
{
	return init->srq || init->qp_type == IB_QPT_XRC_INI;
}

/* Bytes of a send WQE before its data segments or inline data. */
static u32 ohca_sq_hdr_len(enum ib_qp_type type)
{
	/* A raw Ethernet WQE carries its frame behind the plain header. */
	return ohca_qp_connected(type) || type == IB_QPT_RAW_PACKET ?
		sizeof(struct ohca_send_wqe) : OHCA_UD_WQE_HDR_LEN;
}

static int ohca_check_caps(struct ohca_ibdev *dev, struct ib_qp_init_attr *init,
			   struct ib_udata *udata)
{
	struct ib_qp_cap *cap = &init->cap;

	switch (init->qp_type) {
	case IB_QPT_RC:
		break;
	case IB_QPT_UC:
		/* No SRQ: the device takes SRQ receives for RC only. */
		if ((dev->cdev->caps & OHCA_CAP_UC) && !init->srq)
			break;
		goto unsupported;
	case IB_QPT_XRC_INI:
		/*
		 * A send queue only (ohca_xrc.c has the target side), from
		 * user space: no kernel consumer uses XRC.
		 */
		if (ohca_has_xrc(dev) && udata && !init->srq && !init->recv_cq)
			break;
		goto unsupported;
	case IB_QPT_RAW_PACKET:
		/*
		 * From user space (the core checked CAP_NET_RAW), with its
		 * own receive queue: frames come to it by its flows.
		 */
		if (ohca_has_raw(dev) && udata && !init->srq)
			break;
		goto unsupported;
	case IB_QPT_SMI:
		/* QP0: an InfiniBand port's only (ib_mad makes it). */
		if (!dev->cdev->ib_port)
			goto unsupported;
		fallthrough;
	case IB_QPT_GSI:
		if (udata)
			return -EINVAL;
		fallthrough;
	case IB_QPT_UD:
		if (dev->cdev->caps & OHCA_CAP_UD)
			break;
		fallthrough;
	default:
unsupported:
		ibdev_dbg(&dev->ibdev, "QP type %d not supported\n",
			  init->qp_type);
		return -EOPNOTSUPP;
	}
	if (init->create_flags || init->rwq_ind_tbl || init->xrcd) {
		ibdev_dbg(&dev->ibdev,
			  "QP with XRC, RSS or create flags %#x not supported\n",
			  init->create_flags);
		return -EOPNOTSUPP;
	}
	/* The receive queue of a QP on an SRQ is the SRQ. */
	if (ohca_qp_no_rq(init)) {
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
	}
	if (cap->max_send_wr > ohca_max_wr(dev) ||
	    cap->max_recv_wr > ohca_max_wr(dev) ||
	    cap->max_send_sge > ohca_max_sge(dev) ||
	    cap->max_recv_sge > ohca_max_sge(dev) ||
	    cap->max_inline_data > ohca_max_inline(dev)) {
		ibdev_dbg(&dev->ibdev,
			  "QP caps wr %u/%u sge %u/%u inline %u beyond the device's\n",
			  cap->max_send_wr, cap->max_recv_wr, cap->max_send_sge,
			  cap->max_recv_sge, cap->max_inline_data);
		return -EINVAL;
	}
	return 0;
}

static int ohca_qp_create_user(struct ohca_ibdev *dev, struct ohca_qp *qp,
			       struct ib_qp_init_attr *init,
			       struct ohca_create_qp_in *in,
			       struct ohca_pbl_mem *sq_mem,
			       struct ohca_pbl_mem *rq_mem,
			       struct ib_udata *udata)
{
	struct ohca_ucontext *uctx =
		rdma_udata_to_drv_context(udata, struct ohca_ucontext,
					  ibucontext);
	struct ib_qp_cap *cap = &init->cap;
	struct ohca_ibv_create_qp ucmd = {};
	int err;

	/* A provider from before doorbell records sends no rq_db_addr. */
	if (udata->inlen < offsetof(typeof(ucmd), rq_db_addr))
		return -EINVAL;
	err = ib_copy_from_udata(&ucmd, udata, min(sizeof(ucmd), udata->inlen));
	if (err)
		return err;
	if ((ucmd.comp_mask & ~OHCA_CREATE_QP_DB_RECORD) || ucmd.reserved ||
	    !ohca_udata_tail_clear(udata, sizeof(ucmd)))
		return -EINVAL;
	if (ucmd.comp_mask & OHCA_CREATE_QP_DB_RECORD) {
		/* Only for a receive queue of its own. */
		if (udata->inlen < offsetofend(typeof(ucmd), rq_db_addr) ||
		    ohca_qp_no_rq(init))
			return -EINVAL;
		if (!ohca_db_record_ok(dev))
			return -EOPNOTSUPP;
	} else if (ucmd.rq_db_addr) {
		return -EINVAL;
	}

	if (ohca_qp_no_rq(init) &&
	    (ucmd.rq_buf_addr || ucmd.rq_log_size || ucmd.rq_log_stride)) {
		ibdev_dbg(&dev->ibdev, "user QP without RQ with a receive ring\n");
		return -EINVAL;
	}
	if (!ohca_wq_size_ok(dev, ucmd.sq_log_size, cap->max_send_wr) ||
	    (!ohca_qp_no_rq(init) &&
	     !ohca_wq_size_ok(dev, ucmd.rq_log_size, cap->max_recv_wr)) ||
	    ucmd.sq_log_stride < OHCA_SQ_LOG_STRIDE_MIN ||
	    ucmd.sq_log_stride > OHCA_WQ_LOG_STRIDE_MAX ||
	    (!ohca_qp_no_rq(init) &&
	     (ucmd.rq_log_stride < OHCA_RQ_LOG_STRIDE_MIN ||
	      ucmd.rq_log_stride > OHCA_WQ_LOG_STRIDE_MAX)) ||
	    ohca_sq_hdr_len(qp->type) +
	    cap->max_send_sge * sizeof(struct ohca_sge) >
	    BIT(ucmd.sq_log_stride) ||
	    (!ohca_qp_no_rq(init) && sizeof(struct ohca_recv_wqe) +
	     cap->max_recv_sge * sizeof(struct ohca_sge) >
	     BIT(ucmd.rq_log_stride)) ||
	    ucmd.max_inline < cap->max_inline_data ||
	    ucmd.max_inline > ohca_max_inline(dev) ||
	    ucmd.max_inline > BIT(ucmd.sq_log_stride) -
			      ohca_sq_hdr_len(qp->type)) {
		ibdev_dbg(&dev->ibdev,
			  "bad user QP geometry: sq %u/%u rq %u/%u inline %u\n",
			  ucmd.sq_log_size, ucmd.sq_log_stride,
			  ucmd.rq_log_size, ucmd.rq_log_stride,
			  ucmd.max_inline);
		return -EINVAL;
	}

	qp->sq.log_size = ucmd.sq_log_size;
	qp->sq.log_stride = ucmd.sq_log_stride;
	qp->rq.log_size = ucmd.rq_log_size;
	qp->rq.log_stride = ucmd.rq_log_stride;
	qp->max_inline = ucmd.max_inline;

	qp->sq.umem = ohca_umem_ring(dev, ucmd.sq_buf_addr,
				     BIT(qp->sq.log_size + qp->sq.log_stride),
				     &in->sq_pbl, sq_mem);
	if (IS_ERR(qp->sq.umem)) {
		err = PTR_ERR(qp->sq.umem);
		qp->sq.umem = NULL;
		return err;
	}
	if (ohca_qp_no_rq(init))
		goto out;
	qp->rq.umem = ohca_umem_ring(dev, ucmd.rq_buf_addr,
				     BIT(qp->rq.log_size + qp->rq.log_stride),
				     &in->rq_pbl, rq_mem);
	if (IS_ERR(qp->rq.umem)) {
		err = PTR_ERR(qp->rq.umem);
		qp->rq.umem = NULL;
		goto err_sq;
	}
	if (ucmd.comp_mask & OHCA_CREATE_QP_DB_RECORD) {
		err = ohca_db_record_get(dev, uctx, ucmd.rq_db_addr,
					 &qp->rq_db_page, &in->rq_db_record);
		if (err)
			goto err_rq;
	}
out:
	in->uar_index = cpu_to_le32(uctx->uar_index);
	return 0;

err_rq:
	ohca_pbl_free(dev, rq_mem);
	ib_umem_release(qp->rq.umem);
	qp->rq.umem = NULL;
err_sq:
	ohca_pbl_free(dev, sq_mem);
	ib_umem_release(qp->sq.umem);
	qp->sq.umem = NULL;
	return err;
}

static void ohca_wq_free_kernel(struct ohca_ibdev *dev, struct ohca_wq *wq)
{
	if (wq->buf)
		dma_free_coherent(&dev->cdev->pdev->dev, wq->bytes, wq->buf,
				  wq->buf_dma);
	wq->buf = NULL;
}

static int ohca_wq_alloc_kernel(struct ohca_ibdev *dev, struct ohca_wq *wq,
				u32 wr, u32 log_stride, struct ohca_pbl *pbl,
				struct ohca_pbl_mem *mem)
{
	int err;

	wq->log_size = order_base_2(max(wr, 1U));
	wq->log_stride = log_stride;
	wq->bytes = PAGE_ALIGN(BIT(wq->log_size + wq->log_stride));
	wq->buf = dma_alloc_coherent(&dev->cdev->pdev->dev, wq->bytes, &wq->buf_dma,
				     GFP_KERNEL);
	if (!wq->buf)
		return -ENOMEM;
	err = ohca_pbl_from_coherent(dev, wq->buf_dma, wq->bytes, pbl, mem);
	if (err)
		ohca_wq_free_kernel(dev, wq);
	return err;
}

static int ohca_qp_create_kernel(struct ohca_ibdev *dev, struct ohca_qp *qp,
				 struct ib_qp_init_attr *init,
				 struct ohca_create_qp_in *in,
				 struct ohca_pbl_mem *sq_mem,
				 struct ohca_pbl_mem *rq_mem)
{
	struct ib_qp_cap *cap = &init->cap;
	u32 sq_stride, rq_stride;
	int err;

	sq_stride = max_t(u32, OHCA_SQ_LOG_STRIDE_MIN,
			  order_base_2(ohca_sq_hdr_len(qp->type) +
				       max(cap->max_send_sge * sizeof(struct ohca_sge),
					   (size_t)cap->max_inline_data)));
	rq_stride = max_t(u32, OHCA_RQ_LOG_STRIDE_MIN,
			  order_base_2(sizeof(struct ohca_recv_wqe) +
				       cap->max_recv_sge * sizeof(struct ohca_sge)));
	if (sq_stride > OHCA_WQ_LOG_STRIDE_MAX ||
	    rq_stride > OHCA_WQ_LOG_STRIDE_MAX)
		return -EINVAL;

	spin_lock_init(&qp->sq.lock);
	spin_lock_init(&qp->rq.lock);
	err = ohca_wq_alloc_kernel(dev, &qp->sq, cap->max_send_wr, sq_stride,
				   &in->sq_pbl, sq_mem);
	if (err)
		return err;
	if (ohca_qp_no_rq(init))
		goto out;
	err = ohca_wq_alloc_kernel(dev, &qp->rq, cap->max_recv_wr, rq_stride,
				   &in->rq_pbl, rq_mem);
	if (err) {
		ohca_pbl_free(dev, sq_mem);
		ohca_wq_free_kernel(dev, &qp->sq);
		return err;
	}
out:
	qp->max_inline = min_t(u32, ohca_max_inline(dev),
			       BIT(sq_stride) - ohca_sq_hdr_len(qp->type));
	in->uar_index = 0;
	return 0;
}

static void ohca_qp_free_bufs(struct ohca_ibdev *dev, struct ohca_qp *qp)
{
	ib_umem_release(qp->rq.umem);
	ib_umem_release(qp->sq.umem);
	qp->rq.umem = NULL;
	qp->sq.umem = NULL;
	ohca_db_record_unmap(qp->rq_db_page);
	qp->rq_db_page = NULL;
	ohca_wq_free_kernel(dev, &qp->rq);
	ohca_wq_free_kernel(dev, &qp->sq);
}

/* The caps the queues really have, reported back to the creator. */
static void ohca_qp_fill_caps(struct ohca_ibdev *dev, struct ohca_qp *qp,
			      struct ib_qp_cap *cap)
{
	cap->max_send_wr = BIT(qp->sq.log_size);
	bool no_rq = qp->ibqp.srq || qp->type == IB_QPT_XRC_INI;

	if (qp->type == IB_QPT_XRC_TGT) {	/* no queues at all */
		memset(cap, 0, sizeof(*cap));
		return;
	}
	cap->max_recv_wr = no_rq ? 0 : BIT(qp->rq.log_size);
	cap->max_send_sge = min_t(u32, ohca_max_sge(dev),
				  (BIT(qp->sq.log_stride) -
				   ohca_sq_hdr_len(qp->type)) /
				  sizeof(struct ohca_sge));
	cap->max_recv_sge = no_rq ? 0 :
			    min_t(u32, ohca_max_sge(dev),
				  (BIT(qp->rq.log_stride) -
				   sizeof(struct ohca_recv_wqe)) /
				  sizeof(struct ohca_sge));
	cap->max_inline_data = qp->max_inline;
}

/*
 * Kernel QPs are listed on their CQs, which flush them in software once
 * the device is stopped (ohca_poll_cq).
 */
static void ohca_qp_attach_cqs(struct ohca_qp *qp)
{
	struct ohca_cq *scq = to_ohca_cq(qp->ibqp.send_cq);
	struct ohca_cq *rcq = to_ohca_cq(qp->ibqp.recv_cq);
	unsigned long flags;

	spin_lock_irqsave(&scq->lock, flags);
	list_add_tail(&qp->scq_node, &scq->sq_list);
	spin_unlock_irqrestore(&scq->lock, flags);
	spin_lock_irqsave(&rcq->lock, flags);
	list_add_tail(&qp->rcq_node, &rcq->rq_list);
	spin_unlock_irqrestore(&rcq->lock, flags);
}

/* The QP is gone from the device: off the CQ lists, its CQEs dropped. */
static void ohca_qp_detach_cqs(struct ohca_ibdev *dev, struct ohca_qp *qp)
{
	struct ohca_cq *scq = to_ohca_cq(qp->ibqp.send_cq);
	struct ohca_cq *rcq = to_ohca_cq(qp->ibqp.recv_cq);
	unsigned long flags;

	spin_lock_irqsave(&scq->lock, flags);
	list_del(&qp->scq_node);
	spin_unlock_irqrestore(&scq->lock, flags);
	spin_lock_irqsave(&rcq->lock, flags);
	list_del(&qp->rcq_node);
	spin_unlock_irqrestore(&rcq->lock, flags);
	ohca_cq_clean(dev, scq, qp->qpn);
	if (rcq != scq)
		ohca_cq_clean(dev, rcq, qp->qpn);
}

/**
 * ohca_create_qp() - ib_device_ops.create_qp
 * @ibqp: the QP, allocated by the core (its CQs and SRQ already set)
 * @init: its type (RC, UC, UD, GSI, raw packet, XRC initiator or target)
 *        and capabilities, which are rounded up and written back
 * @udata: a user QP's request (its rings) and response (its number), or
 *         NULL for a kernel QP, whose rings are allocated here
 *
 * Return: 0, -EOPNOTSUPP for a type or flags not supported, -EINVAL for
 * capabilities out of range, or the errno of the rings or the command.
 */
int ohca_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		   struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibqp->device);
	struct ohca_qp *qp = to_ohca_qp(ibqp);
	struct ohca_ibv_create_qp_resp resp = {};
	struct ohca_pbl_mem sq_mem = {}, rq_mem = {};
	struct ohca_create_qp_in in = {};
	int err;

	if (init->qp_type == IB_QPT_XRC_TGT)
		return ohca_create_xrc_tgt_qp(dev, qp, init);
	if (init->rwq_ind_tbl)
		return ohca_create_rss_qp(dev, qp, init, udata);
	err = ohca_check_caps(dev, init, udata);
	if (err)
		return err;

	qp->type = init->qp_type;
	mutex_init(&qp->state_lock);
	qp->state = IB_QPS_RESET;
	qp->sq_sig_type = init->sq_sig_type;

	if (udata)
		err = ohca_qp_create_user(dev, qp, init, &in, &sq_mem, &rq_mem,
					  udata);
	else
		err = ohca_qp_create_kernel(dev, qp, init, &in, &sq_mem,
					    &rq_mem);
	if (err)
		goto err_mutex;

	in.type = qp->type == IB_QPT_RC ? OHCA_QPT_RC :
		  qp->type == IB_QPT_UC ? OHCA_QPT_UC :
		  qp->type == IB_QPT_XRC_INI ? OHCA_QPT_XRC_INI :
		  qp->type == IB_QPT_RAW_PACKET ? OHCA_QPT_RAW_ETH :
		  qp->type == IB_QPT_UD ? OHCA_QPT_UD :
		  qp->type == IB_QPT_SMI ? OHCA_QPT_SMI : OHCA_QPT_GSI;
	in.sq_log_size = qp->sq.log_size;
	in.rq_log_size = qp->rq.log_size;
	in.sq_log_stride = qp->sq.log_stride;
	in.rq_log_stride = qp->rq.log_stride;
	in.pdn = cpu_to_le32(to_ohca_pd(ibqp->pd)->pdn);
	in.send_cqn = cpu_to_le32(to_ohca_cq(init->send_cq)->cqn);
	if (init->recv_cq)
		in.recv_cqn = cpu_to_le32(to_ohca_cq(init->recv_cq)->cqn);
	in.max_inline = cpu_to_le32(qp->max_inline);
	if (init->srq)
		in.srqn = cpu_to_le32(to_ohca_srq(init->srq)->srqn);
	/* The grown input only with a record: an older device takes V1. */
	err = ohca_cmd_create(dev->cdev, OHCA_CMD_CREATE_QP, &in,
			      qp->rq_db_page ? sizeof(in) :
			      OHCA_CREATE_QP_IN_V1_SIZE, &qp->qpn, NULL);
	/* The device copied the lists. */
	ohca_pbl_free(dev, &rq_mem);
	ohca_pbl_free(dev, &sq_mem);
	if (err)
		goto err_free_bufs;

	err = xa_insert_irq(&dev->qp_xa, qp->qpn, qp, GFP_KERNEL);
	if (err) {
		dev_err(&dev->cdev->pdev->dev, "device reused QP number 0x%x\n",
			qp->qpn);
		goto err_destroy;
	}
	/* ib_mad knows QP0 and QP1 by their numbers. */
	if ((qp->type == IB_QPT_SMI && qp->qpn != 0) ||
	    (qp->type == IB_QPT_GSI && qp->qpn != OHCA_GSI_QPN)) {
		dev_err(&dev->cdev->pdev->dev,
			"device gave QP type %d the number 0x%x\n", qp->type,
			qp->qpn);
		err = -EIO;
		goto err_erase;
	}
	ibqp->qp_num = qp->qpn;
	ohca_qp_fill_caps(dev, qp, &init->cap);
	qp->max_send_sge = init->cap.max_send_sge;
	qp->max_recv_sge = init->cap.max_recv_sge;

	if (udata) {
		resp.qpn = qp->qpn;
		err = ib_copy_to_udata(udata, &resp,
				       min(sizeof(resp), udata->outlen));
		if (err)
			goto err_erase;
	} else {
		ohca_qp_attach_cqs(qp);
	}
	return 0;

err_erase:
	xa_erase_irq(&dev->qp_xa, qp->qpn);
err_destroy:
	if (!ohca_destroy_object(dev, NULL, OHCA_CMD_DESTROY_QP, qp->qpn, "QP",
				 NULL))
		goto err_mutex;
err_free_bufs:
	ohca_qp_free_bufs(dev, qp);
err_mutex:
	mutex_destroy(&qp->state_lock);
	return err;
}

/**
 * ohca_destroy_qp() - ib_device_ops.destroy_qp
 * @ibqp: the QP
 * @udata: unused
 *
 * A kernel QP leaves its CQs' lists and its CQEs are purged from them
 * (ohca_cq_clean()); the rings are freed unless the device may still use
 * them (ohca_destroy_object()).
 *
 * Return: 0.
 */
int ohca_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibqp->device);
	struct ohca_qp *qp = to_ohca_qp(ibqp);
	bool free_bufs;

	free_bufs = ohca_destroy_object(dev, &dev->qp_xa, OHCA_CMD_DESTROY_QP,
					qp->qpn, "QP", NULL);
	/* Then off its CQs: a poller holds the QP only under their locks. */
	if (qp->sq.buf)
		ohca_qp_detach_cqs(dev, qp);
	if (free_bufs)
		ohca_qp_free_bufs(dev, qp);
	mutex_destroy(&qp->state_lock);
	return 0;
}

#define OHCA_QP_ATTR_SUPPORTED (IB_QP_STATE | IB_QP_CUR_STATE | \
				IB_QP_ACCESS_FLAGS | IB_QP_PKEY_INDEX | \
				IB_QP_PORT | IB_QP_AV | IB_QP_PATH_MTU | \
				IB_QP_TIMEOUT | IB_QP_RETRY_CNT | \
				IB_QP_RNR_RETRY | IB_QP_RQ_PSN | \
				IB_QP_MAX_QP_RD_ATOMIC | IB_QP_MIN_RNR_TIMER | \
				IB_QP_SQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC | \
				IB_QP_DEST_QPN | IB_QP_QKEY)

static const struct {
	int ib;
	u32 dev;
} ohca_qp_mask_map[] = {
	{ IB_QP_STATE, OHCA_QP_STATE },
	{ IB_QP_CUR_STATE, OHCA_QP_CUR_STATE },
	{ IB_QP_ACCESS_FLAGS, OHCA_QP_ACCESS_FLAGS },
	{ IB_QP_PKEY_INDEX, OHCA_QP_PKEY_INDEX },
	{ IB_QP_PORT, OHCA_QP_PORT },
	{ IB_QP_QKEY, OHCA_QP_QKEY },
	{ IB_QP_AV, OHCA_QP_AV },
	{ IB_QP_PATH_MTU, OHCA_QP_PATH_MTU },
	{ IB_QP_TIMEOUT, OHCA_QP_TIMEOUT },
	{ IB_QP_RETRY_CNT, OHCA_QP_RETRY_CNT },
	{ IB_QP_RNR_RETRY, OHCA_QP_RNR_RETRY },
	{ IB_QP_RQ_PSN, OHCA_QP_RQ_PSN },
	{ IB_QP_MAX_QP_RD_ATOMIC, OHCA_QP_MAX_QP_RD_ATOMIC },
	{ IB_QP_MIN_RNR_TIMER, OHCA_QP_MIN_RNR_TIMER },
	{ IB_QP_SQ_PSN, OHCA_QP_SQ_PSN },
	{ IB_QP_MAX_DEST_RD_ATOMIC, OHCA_QP_MAX_DEST_RD_ATOMIC },
	{ IB_QP_DEST_QPN, OHCA_QP_DEST_QPN },
};

/**
 * ohca_qp_mask_to_dev() - an IB_QP_* attribute mask as MODIFY_QP's
 * @ib_mask: IB_QP_* bits
 *
 * Return: the OHCA_QP_ATTR_* bits of the attributes the device takes.
 */
u32 ohca_qp_mask_to_dev(int ib_mask)
{
	u32 mask = 0;
	int i;

	for (i = 0; i < ARRAY_SIZE(ohca_qp_mask_map); i++)
		if (ib_mask & ohca_qp_mask_map[i].ib)
			mask |= ohca_qp_mask_map[i].dev;
	return mask;
}

/**
 * ohca_av_from_ah() - the device's address vector of an address
 * @dev: the RDMA device
 * @ah: the address the core resolved (dmac included), with its GID
 *      attribute
 * @av: the vector to fill
 *
 * Called from create_ah, which may run in atomic context: nothing here
 * sleeps (the GID attribute is read under RCU).
 *
 * Return: 0, or -EINVAL for an address that is not RoCE with a GRH and a
 * usable source GID (on an InfiniBand port: not an IB address, see
 * ohca_av_ib_from_ah()).
 */
int ohca_av_from_ah(struct ohca_ibdev *dev, const struct rdma_ah_attr *ah,
		    struct ohca_av *av)
{
	const struct ib_global_route *grh;
	const struct ib_gid_attr *sgid_attr;
	u16 vlan_id = 0xffff;
	int err;

	if (dev->cdev->ib_port)
		return ohca_av_ib_from_ah(dev, ah, av);
	if (ah->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(ah) & IB_AH_GRH)) {
		ibdev_dbg(&dev->ibdev, "address vector without a RoCE GRH\n");
		return -EINVAL;
	}
	grh = rdma_ah_read_grh(ah);
	sgid_attr = grh->sgid_attr;
	if (!sgid_attr)
		return -EINVAL;

	switch (rdma_gid_attr_network_type(sgid_attr)) {
	case RDMA_NETWORK_IPV4:
		av->network_type = OHCA_NET_IPV4;
		break;
	case RDMA_NETWORK_IPV6:
		av->network_type = OHCA_NET_IPV6;
		break;
	default:
		ibdev_dbg(&dev->ibdev, "source GID %u is not RoCEv2\n",
			  grh->sgid_index);
		return -EINVAL;
	}
	err = rdma_read_gid_l2_fields(sgid_attr, &vlan_id, NULL);
	if (err)
		return err;

	memcpy(av->dgid, grh->dgid.raw, sizeof(av->dgid));
	memcpy(av->dmac, ah->roce.dmac, sizeof(av->dmac));
	av->vlan_id = cpu_to_le16(vlan_id < VLAN_N_VID ? vlan_id : 0xffff);
	/*
	 * 20 bits in the GRH; users set more (UCX: ~path_index, for the UDP
	 * source port), which the device would refuse (BAD_FIELD / BAD_AV).
	 */
	av->flow_label = cpu_to_le32(grh->flow_label & IB_GRH_FLOWLABEL_MASK);
	av->hop_limit = grh->hop_limit;
	av->traffic_class = grh->traffic_class;
	av->sgid_index = grh->sgid_index;
	return 0;
}

/* Kernel QP back in RESET: nothing is posted or outstanding any more. */
static void ohca_wq_reset(struct ohca_wq *wq)
{
	unsigned long flags;

	spin_lock_irqsave(&wq->lock, flags);
	wq->pi = 0;
	WRITE_ONCE(wq->ci, 0);
	spin_unlock_irqrestore(&wq->lock, flags);
}

/**
 * ohca_modify_qp() - ib_device_ops.modify_qp
 * @ibqp: the QP
 * @attr: the new attributes
 * @attr_mask: IB_QP_* of those to set
 * @udata: the user's (no request data)
 *
 * The transition is checked (ib_modify_qp_is_ok()) before MODIFY_QP; a
 * kernel QP moved to RESET loses what was posted and its CQEs.
 *
 * Return: 0, -EOPNOTSUPP for attributes not supported, -EINVAL for a
 * transition or values refused here or by the device, or the command's
 * errno.
 */
int ohca_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		   int attr_mask, struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibqp->device);
	struct ohca_qp *qp = to_ohca_qp(ibqp);
	enum ib_qp_state cur, new;
	struct ohca_modify_qp_in in = {};
	struct ohca_qp_attr *a = &in.attr;
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_MODIFY_QP,
		.in = &in,
		.in_len = sizeof(in),
	};
	u16 sport;
	int err;

	/* An RSS QP has no queues and no states of its own (ohca_wq.c). */
	if (qp->rss)
		return -EOPNOTSUPP;
	if (attr_mask & ~OHCA_QP_ATTR_SUPPORTED) {
		ibdev_dbg(&dev->ibdev, "QP attributes %#x not supported\n",
			  attr_mask & ~OHCA_QP_ATTR_SUPPORTED);
		return -EOPNOTSUPP;
	}
	if (udata && !ohca_udata_tail_clear(udata, 0))
		return -EINVAL;

	mutex_lock(&qp->state_lock);
	cur = attr_mask & IB_QP_CUR_STATE ? attr->cur_qp_state : qp->state;
	new = attr_mask & IB_QP_STATE ? attr->qp_state : cur;
	if (!ib_modify_qp_is_ok(cur, new, qp->type, attr_mask)) {
		ibdev_dbg(&dev->ibdev,
			  "QP 0x%x: bad transition %d -> %d with mask %#x\n",
			  qp->qpn, cur, new, attr_mask);
		err = -EINVAL;
		goto out;
	}
	if ((attr_mask & IB_QP_PORT) && attr->port_num != 1) {
		err = -EINVAL;
		goto out;
	}
	if ((attr_mask & IB_QP_PKEY_INDEX) &&
	    attr->pkey_index >= (dev->cdev->ib_port ?
				 ohca_ib_pkey_tbl_len(dev) : 1)) {
		err = -EINVAL;
		goto out;
	}
	/*
	 * A controlled Q_Key (bit 31) lets a UD QP send with a privileged
	 * Q_Key such as the GSI one: the device sends the QP's own Q_Key
	 * for any controlled Q_Key in a WQE. Only kernel QPs and privileged
	 * users may have one. REMOTE_ATOMIC is accepted: the device executes
	 * atomics (and the CM asks for it on every responder).
	 */
	if ((attr_mask & IB_QP_QKEY) && (attr->qkey & OHCA_QKEY_CONTROLLED) &&
	    udata && !capable(CAP_NET_RAW)) {
		err = -EPERM;
		goto out;
	}

	in.qpn = cpu_to_le32(qp->qpn);
	in.attr_mask = cpu_to_le32(ohca_qp_mask_to_dev(attr_mask));
	a->qp_state = new;
	a->cur_qp_state = cur;
	if (attr_mask & IB_QP_AV) {
		err = ohca_av_from_ah(dev, &attr->ah_attr, &a->av);
		if (err)
			goto out;
	}
	/*
	 * Flow entropy for ECMP/RSS, the way every RoCE driver does; an
	 * InfiniBand packet has no UDP header.
	 */
	if ((attr_mask & IB_QP_AV) && !dev->cdev->ib_port) {
		sport = rdma_get_udp_sport(le32_to_cpu(a->av.flow_label),
					   qp->qpn, attr_mask & IB_QP_DEST_QPN ?
					   attr->dest_qp_num : 0);
		in.udp_sport = cpu_to_le16(sport);
		in.attr_mask |= cpu_to_le32(OHCA_QP_UDP_SPORT);
	}
	if (attr_mask & IB_QP_PATH_MTU)
		a->path_mtu = attr->path_mtu;
	if (attr_mask & IB_QP_TIMEOUT)
		a->timeout = attr->timeout;
	if (attr_mask & IB_QP_RETRY_CNT)
		a->retry_cnt = attr->retry_cnt;
	if (attr_mask & IB_QP_RNR_RETRY)
		a->rnr_retry = attr->rnr_retry;
	if (attr_mask & IB_QP_MIN_RNR_TIMER)
		a->min_rnr_timer = attr->min_rnr_timer;
	if (attr_mask & IB_QP_MAX_QP_RD_ATOMIC)
		a->max_rd_atomic = attr->max_rd_atomic;
	if (attr_mask & IB_QP_MAX_DEST_RD_ATOMIC)
		a->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (attr_mask & IB_QP_PKEY_INDEX)
		a->pkey_index = cpu_to_le16(attr->pkey_index);
	if (attr_mask & IB_QP_ACCESS_FLAGS)
		a->access_flags =
			cpu_to_le32(ohca_access_to_dev(attr->qp_access_flags));
	if (attr_mask & IB_QP_DEST_QPN)
		a->dest_qpn = cpu_to_le32(attr->dest_qp_num);
	if (attr_mask & IB_QP_RQ_PSN)
		a->rq_psn = cpu_to_le32(attr->rq_psn);
	if (attr_mask & IB_QP_SQ_PSN)
		a->sq_psn = cpu_to_le32(attr->sq_psn);
	if (attr_mask & IB_QP_QKEY)
		a->qkey = cpu_to_le32(attr->qkey);

	err = ohca_cmd_exec(dev->cdev, &args);
	/*
	 * A stopped device changes no state, but a kernel QP still goes to
	 * ERR or RESET in software: its outstanding work is flushed by
	 * poll_cq, which ib_drain_qp() and the ULPs' teardown wait for.
	 */
	if (err && test_bit(OHCA_FLAG_FATAL, &dev->cdev->flags) && qp->sq.buf &&
	    (new == IB_QPS_ERR || new == IB_QPS_RESET))
		err = 0;
	if (!err) {
		qp->state = new;
		/*
		 * The device starts the rings of a QP in RESET at index 0 and
		 * completes nothing more of the old ones.
		 */
		if (new == IB_QPS_RESET && qp->sq.buf) {
			ohca_cq_clean(dev, to_ohca_cq(ibqp->send_cq), qp->qpn);
			if (ibqp->recv_cq != ibqp->send_cq)
				ohca_cq_clean(dev, to_ohca_cq(ibqp->recv_cq),
					      qp->qpn);
			ohca_wq_reset(&qp->sq);
			ohca_wq_reset(&qp->rq);
		}
	}
out:
	mutex_unlock(&qp->state_lock);
	return err;
}

/**
 * ohca_query_qp() - ib_device_ops.query_qp
 * @ibqp: the QP
 * @attr: its attributes, from QUERY_QP
 * @attr_mask: the attributes asked for (all are filled)
 * @init: its creation attributes
 *
 * Return: 0 or the command's errno.
 */
int ohca_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		  int attr_mask, struct ib_qp_init_attr *init)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibqp->device);
	struct ohca_qp *qp = to_ohca_qp(ibqp);
	struct ohca_handle_in in = { .handle = cpu_to_le32(qp->qpn) };
	struct ohca_qp_attr a;
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_QUERY_QP,
		.in = &in,
		.in_len = sizeof(in),
		.out = &a,
		.out_len = sizeof(a),
	};
	union ib_gid dgid;
	int err;

	err = ohca_cmd_exec(dev->cdev, &args);
	if (err)
		return err;

	memset(attr, 0, sizeof(*attr));
	attr->qp_state = a.qp_state;
	attr->cur_qp_state = a.qp_state;
	attr->path_mtu = a.path_mtu;
	attr->path_mig_state = IB_MIG_MIGRATED;
	attr->qkey = le32_to_cpu(a.qkey);
	attr->rq_psn = le32_to_cpu(a.rq_psn);
	attr->sq_psn = le32_to_cpu(a.sq_psn);
	attr->dest_qp_num = le32_to_cpu(a.dest_qpn);
	attr->qp_access_flags = ohca_access_from_dev(le32_to_cpu(a.access_flags));
	attr->pkey_index = le16_to_cpu(a.pkey_index);
	attr->sq_draining = a.sq_draining;
	attr->max_rd_atomic = a.max_rd_atomic;
	attr->max_dest_rd_atomic = a.max_dest_rd_atomic;
	attr->min_rnr_timer = a.min_rnr_timer;
	attr->port_num = 1;
	attr->timeout = a.timeout;
	attr->retry_cnt = a.retry_cnt;
	attr->rnr_retry = a.rnr_retry;
	ohca_qp_fill_caps(dev, qp, &attr->cap);

	if (ohca_qp_connected(qp->type) && dev->cdev->ib_port) {
		ohca_av_ib_to_ah(&a.av, &attr->ah_attr);
	} else if (ohca_qp_connected(qp->type)) {
		attr->ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
		rdma_ah_set_port_num(&attr->ah_attr, 1);
		memcpy(dgid.raw, a.av.dgid, sizeof(dgid.raw));
		rdma_ah_set_grh(&attr->ah_attr, &dgid,
				le32_to_cpu(a.av.flow_label), a.av.sgid_index,
				a.av.hop_limit, a.av.traffic_class);
		memcpy(attr->ah_attr.roce.dmac, a.av.dmac, ETH_ALEN);
	}

	memset(init, 0, sizeof(*init));
	init->qp_type = qp->type;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->sq_sig_type = qp->sq_sig_type;
	init->cap = attr->cap;
	return 0;
}

/**
 * ohca_wr_opcode() - a send work request's opcode as the device's
 * @opcode: IB_WR_*
 *
 * Return: the OHCA_WR_* opcode, or -EINVAL for one the device does not
 * execute (masked atomics, ...).
 */
int ohca_wr_opcode(enum ib_wr_opcode opcode)
{
	switch (opcode) {
	case IB_WR_RDMA_WRITE:
		return OHCA_WR_RDMA_WRITE;
	case IB_WR_RDMA_WRITE_WITH_IMM:
		return OHCA_WR_RDMA_WRITE_IMM;
	case IB_WR_SEND:
		return OHCA_WR_SEND;
	case IB_WR_SEND_WITH_IMM:
		return OHCA_WR_SEND_IMM;
	case IB_WR_RDMA_READ:
		return OHCA_WR_RDMA_READ;
	case IB_WR_SEND_WITH_INV:
		return OHCA_WR_SEND_INV;
	case IB_WR_LOCAL_INV:
		return OHCA_WR_LOCAL_INV;
	case IB_WR_REG_MR:
		return OHCA_WR_REG_MR;
	case IB_WR_ATOMIC_CMP_AND_SWP:
		return OHCA_WR_ATOMIC_CMP_SWP;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		return OHCA_WR_ATOMIC_FETCH_ADD;
	default:
		return -EINVAL;
	}
}

static void *ohca_wqe(struct ohca_wq *wq, u32 index)
{
	return wq->buf + ((index & (BIT(wq->log_size) - 1)) << wq->log_stride);
}

/**
 * ohca_qp_flush_sw() - flush completions of a stopped device's kernel QP
 * @qp: the kernel QP
 * @sq: its SQ (true) or RQ (false)
 * @wc: the completions
 * @num: room in @wc
 *
 * With the device stopped: up to @num IB_WC_WR_FLUSH_ERR completions for
 * the WQEs the device never completed, in ring order (both WQE formats
 * start with wr_id). Under the CQ lock of the queue.
 *
 * Return: the number of completions in @wc.
 */
int ohca_qp_flush_sw(struct ohca_qp *qp, bool sq, struct ib_wc *wc, int num)
{
	struct ohca_wq *wq = sq ? &qp->sq : &qp->rq;
	int n = 0;

	while (n < num && wq->ci != READ_ONCE(wq->pi)) {
		const __le64 *wr_id = ohca_wqe(wq, wq->ci);

		memset(&wc[n], 0, sizeof(wc[n]));
		wc[n].wr_id = le64_to_cpu(*wr_id);
		wc[n].status = IB_WC_WR_FLUSH_ERR;
		wc[n].opcode = sq ? IB_WC_SEND : IB_WC_RECV;
		wc[n].qp = &qp->ibqp;
		wc[n].port_num = 1;
		n++;
		WRITE_ONCE(wq->ci, wq->ci + 1);
	}
	return n;
}

/* Copy the data of an inline send; kernel SGEs hold virtual addresses. */
static int ohca_copy_inline(struct ohca_qp *qp, const struct ib_send_wr *wr,
			    struct ohca_send_wqe *wqe)
{
	u8 *dst = (u8 *)wqe + ohca_sq_hdr_len(qp->type);
	u32 len = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		const struct ib_sge *sge = &wr->sg_list[i];

		if (sge->length > qp->max_inline - len)
			return -EINVAL;
		memcpy(dst + len, (void *)(uintptr_t)sge->addr, sge->length);
		len += sge->length;
	}
	wqe->inline_len = cpu_to_le32(len);
	wqe->flags |= OHCA_WQE_INLINE;
	return 0;
}

/*
 * The UD segment: the AH's address vector, remote QPN and Q_Key; on an
 * InfiniBand port the GSI QP's P_Key index too (ib_mad answers a MAD in
 * its request's partition).
 */
static int ohca_build_ud_seg(const struct ohca_qp *qp,
			     const struct ib_send_wr *wr,
			     struct ohca_ud_seg *seg)
{
	struct ohca_ibdev *dev = to_ohca_dev(qp->ibqp.device);
	const struct ib_ud_wr *ud = ud_wr(wr);

	if ((wr->opcode != IB_WR_SEND && wr->opcode != IB_WR_SEND_WITH_IMM) ||
	    !ud->ah)
		return -EINVAL;
	memset(seg, 0, sizeof(*seg));
	seg->av = to_ohca_ah(ud->ah)->av;
	seg->remote_qpn = cpu_to_le32(ud->remote_qpn);
	seg->qkey = cpu_to_le32(ud->remote_qkey);
	if (qp->type == IB_QPT_GSI && dev->cdev->ib_port) {
		if (ud->pkey_index >= ohca_ib_pkey_tbl_len(dev))
			return -EINVAL;
		seg->pkey_index = cpu_to_le16(ud->pkey_index);
	}
	return 0;
}

static int ohca_build_send_wqe(struct ohca_qp *qp, const struct ib_send_wr *wr,
			       struct ohca_send_wqe *wqe)
{
	struct ohca_sge *seg =
		(struct ohca_sge *)((u8 *)wqe + ohca_sq_hdr_len(qp->type));
	int opcode = ohca_wr_opcode(wr->opcode);
	bool signaled = (wr->send_flags & IB_SEND_SIGNALED) ||
			qp->sq_sig_type == IB_SIGNAL_ALL_WR;
	int err, i;

	if (opcode < 0)
		return opcode;
	if (!ohca_qp_connected(qp->type)) {
		/* SEND and SEND_WITH_IMM only */
		err = ohca_build_ud_seg(qp, wr, (struct ohca_ud_seg *)(wqe + 1));
		if (err)
			return err;
	}
	BUILD_BUG_ON(sizeof(struct ohca_reg_mr_wqe) !=
		     sizeof(struct ohca_send_wqe));
	if (wr->opcode == IB_WR_REG_MR)
		return ohca_build_reg_mr_wqe(to_ohca_dev(qp->ibqp.device),
					     reg_wr(wr), signaled,
					     (struct ohca_reg_mr_wqe *)wqe);

	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = cpu_to_le64(wr->wr_id);
	wqe->opcode = opcode;
	if (signaled)
		wqe->flags |= OHCA_WQE_SIGNALED;
	if (wr->send_flags & IB_SEND_SOLICITED)
		wqe->flags |= OHCA_WQE_SOLICITED;
	if (wr->send_flags & IB_SEND_FENCE)
		wqe->flags |= OHCA_WQE_FENCE;
	if (wr->opcode == IB_WR_SEND_WITH_IMM ||
	    wr->opcode == IB_WR_RDMA_WRITE_WITH_IMM)
		wqe->imm_data = wr->ex.imm_data;
	if (wr->opcode == IB_WR_RDMA_WRITE ||
	    wr->opcode == IB_WR_RDMA_WRITE_WITH_IMM ||
	    wr->opcode == IB_WR_RDMA_READ) {
		wqe->remote_addr = cpu_to_le64(rdma_wr(wr)->remote_addr);
		wqe->rkey = cpu_to_le32(rdma_wr(wr)->rkey);
	}
	if (wr->opcode == IB_WR_SEND_WITH_INV ||
	    wr->opcode == IB_WR_LOCAL_INV)
		wqe->rkey = cpu_to_le32(wr->ex.invalidate_rkey);
	if (wr->opcode == IB_WR_LOCAL_INV)
		return 0;

	if (opcode == OHCA_WR_ATOMIC_CMP_SWP ||
	    opcode == OHCA_WR_ATOMIC_FETCH_ADD) {
		/* One 8-byte SGE receives the original value. */
		if (wr->num_sge != 1 || wr->sg_list[0].length != 8)
			return -EINVAL;
		wqe->remote_addr = cpu_to_le64(atomic_wr(wr)->remote_addr);
		wqe->rkey = cpu_to_le32(atomic_wr(wr)->rkey);
		wqe->cmp_add = cpu_to_le64(atomic_wr(wr)->compare_add);
		wqe->swap = cpu_to_le64(atomic_wr(wr)->swap);
	} else if ((wr->send_flags & IB_SEND_INLINE) &&
		   wr->opcode != IB_WR_RDMA_READ) {
		return ohca_copy_inline(qp, wr, wqe);
	}

	if (wr->num_sge > qp->max_send_sge)
		return -EINVAL;
	wqe->num_sge = wr->num_sge;
	for (i = 0; i < wr->num_sge; i++) {
		seg[i].addr = cpu_to_le64(wr->sg_list[i].addr);
		seg[i].length = cpu_to_le32(wr->sg_list[i].length);
		seg[i].lkey = cpu_to_le32(wr->sg_list[i].lkey);
	}
	return 0;
}

/**
 * ohca_post_send() - ib_device_ops.post_send of a kernel QP
 * @ibqp: the QP
 * @wr: the work requests
 * @bad_wr: the first one not posted, on error
 *
 * One doorbell for the whole list.
 *
 * Return: 0, -ENOMEM when the SQ is full, or -EINVAL for a request the
 * device cannot execute.
 */
int ohca_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		   const struct ib_send_wr **bad_wr)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibqp->device);
	struct ohca_qp *qp = to_ohca_qp(ibqp);
	struct ohca_wq *sq = &qp->sq;
	unsigned long flags;
	bool posted;
	u32 start;
	int err = 0;

	spin_lock_irqsave(&sq->lock, flags);
	start = sq->pi;
	for (; wr; wr = wr->next) {
		if (sq->pi - READ_ONCE(sq->ci) >= BIT(sq->log_size)) {
			err = -ENOMEM;
			break;
		}
		err = ohca_build_send_wqe(qp, wr, ohca_wqe(sq, sq->pi));
		if (err)
			break;
		sq->pi++;
	}
	/* writeq() orders the WQE stores before the doorbell. */
	posted = sq->pi != start;
	if (posted)
		ohca_kdb(dev->cdev, OHCA_DB_SQ, qp->qpn, sq->pi);
	spin_unlock_irqrestore(&sq->lock, flags);
	/* A stopped device: poll_cq flushes what was posted. */
	if (posted && test_bit(OHCA_FLAG_FATAL, &dev->cdev->flags))
		ohca_cq_kick(to_ohca_cq(ibqp->send_cq));

	if (err)
		*bad_wr = wr;
	return err;
}

/**
 * ohca_post_recv() - ib_device_ops.post_recv of a kernel QP
 * @ibqp: the QP
 * @wr: the receive work requests
 * @bad_wr: the first one not posted, on error
 *
 * Return: 0, -EINVAL for a QP on an SRQ or too many SGEs, or -ENOMEM when
 * the RQ is full.
 */
int ohca_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		   const struct ib_recv_wr **bad_wr)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibqp->device);
	struct ohca_qp *qp = to_ohca_qp(ibqp);
	struct ohca_wq *rq = &qp->rq;
	unsigned long flags;
	bool posted;
	u32 start;
	int err = 0;
	int i;

	if (ibqp->srq) {
		*bad_wr = wr;
		return -EINVAL;
	}
	spin_lock_irqsave(&rq->lock, flags);
	start = rq->pi;
	for (; wr; wr = wr->next) {
		struct ohca_recv_wqe *wqe;
		struct ohca_sge *seg;

		if (rq->pi - READ_ONCE(rq->ci) >= BIT(rq->log_size)) {
			err = -ENOMEM;
			break;
		}
		if (wr->num_sge > qp->max_recv_sge) {
			err = -EINVAL;
			break;
		}
		wqe = ohca_wqe(rq, rq->pi);
		seg = (struct ohca_sge *)(wqe + 1);
		memset(wqe, 0, sizeof(*wqe));
		wqe->wr_id = cpu_to_le64(wr->wr_id);
		wqe->num_sge = wr->num_sge;
		for (i = 0; i < wr->num_sge; i++) {
			seg[i].addr = cpu_to_le64(wr->sg_list[i].addr);
			seg[i].length = cpu_to_le32(wr->sg_list[i].length);
			seg[i].lkey = cpu_to_le32(wr->sg_list[i].lkey);
		}
		rq->pi++;
	}
	posted = rq->pi != start;
	if (posted)
		ohca_kdb(dev->cdev, OHCA_DB_RQ, qp->qpn, rq->pi);
	spin_unlock_irqrestore(&rq->lock, flags);
	if (posted && test_bit(OHCA_FLAG_FATAL, &dev->cdev->flags))
		ohca_cq_kick(to_ohca_cq(ibqp->recv_cq));

	if (err)
		*bad_wr = wr;
	return err;
}
