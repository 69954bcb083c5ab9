// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca: shared receive queues. A user SRQ's ring lives in the process's
 * memory (the provider posts to it), its producer index too when the
 * provider gives it a doorbell record (ohca_dbrec.c); a kernel SRQ has a
 * coherent ring that ohca_post_srq_recv() fills and rings on the kernel's
 * doorbell page 0 (kernel QPs and CQs have no records either).
 *
 * The device takes WQEs in ring order, so a slot is free again once the
 * WQE in it has completed: poll_cq counts the receive completions of QPs
 * on the SRQ (srq->done) and posting may run as far as done + size.
 */
#include <linux/dma-mapping.h>
#include <rdma/uverbs_ioctl.h>

#include <ohca/ohca-abi.h>

#include "ohca_ib.h"

/**
 * ohca_srq_event() - an SRQ_EVENT from the device
 * @dev: the RDMA device
 * @srqn: the SRQ's number
 * @code: the event (limit reached, or error)
 *
 * Calls the SRQ's event handler. EQ 0, IRQ context.
 */
void ohca_srq_event(struct ohca_ibdev *dev, u32 srqn, u16 code)
{
	struct ohca_srq *srq = xa_load(&dev->srq_xa, srqn);
	struct ib_event event;

	switch (code) {
	case OHCA_SRQ_EV_LIMIT_REACHED:
		event.event = IB_EVENT_SRQ_LIMIT_REACHED;
		break;
	case OHCA_SRQ_EV_ERR:
		dev_warn_ratelimited(&dev->cdev->pdev->dev,
				     "SRQ 0x%x ring not readable, stopped\n",
				     srqn);
		event.event = IB_EVENT_SRQ_ERR;
		break;
	default:
		dev_warn_ratelimited(&dev->cdev->pdev->dev,
				     "unknown event %u for SRQ 0x%x ignored\n",
				     code, srqn);
		return;
	}
	if (!srq) {
		dev_dbg_ratelimited(&dev->cdev->pdev->dev,
				    "event %u for unknown SRQ 0x%x\n", code, srqn);
		return;
	}
	if (!srq->ibsrq.event_handler)
		return;
	event.device = &dev->ibdev;
	event.element.srq = &srq->ibsrq;
	srq->ibsrq.event_handler(&event, srq->ibsrq.srq_context);
}

static u32 ohca_max_srq_wr(struct ohca_ibdev *dev)
{
	return le32_to_cpu(dev->cdev->attr.max_srq_wr);
}

static u32 ohca_max_srq_sge(struct ohca_ibdev *dev)
{
	return le32_to_cpu(dev->cdev->attr.max_srq_sge);
}

static int ohca_srq_create_user(struct ohca_ibdev *dev, struct ohca_srq *srq,
				struct ib_srq_init_attr *init,
				struct ohca_create_srq_in *in,
				struct ohca_pbl_mem *mem, struct ib_udata *udata)
{
	struct ohca_ucontext *uctx =
		rdma_udata_to_drv_context(udata, struct ohca_ucontext,
					  ibucontext);
	struct ohca_ibv_create_srq ucmd = {};
	int err;

	/* A provider from before SRQ doorbell records sends no db_addr. */
	if (udata->inlen < offsetof(typeof(ucmd), db_addr))
		return -EINVAL;
	err = ib_copy_from_udata(&ucmd, udata, min(sizeof(ucmd), udata->inlen));
	if (err)
		return err;
	if ((ucmd.comp_mask & ~OHCA_CREATE_SRQ_DB_RECORD) || ucmd.reserved0 ||
	    !ohca_udata_tail_clear(udata, sizeof(ucmd)))
		return -EINVAL;
	if (ucmd.comp_mask & OHCA_CREATE_SRQ_DB_RECORD) {
		if (udata->inlen < offsetofend(typeof(ucmd), db_addr))
			return -EINVAL;
		if (!ohca_srq_db_record_ok(dev))
			return -EOPNOTSUPP;
	} else if (ucmd.db_addr) {
		return -EINVAL;
	}
	if (ucmd.log_size < 1 || ucmd.log_size > OHCA_WQ_LOG_MAX ||
	    BIT(ucmd.log_size) > ohca_max_srq_wr(dev) ||
	    BIT(ucmd.log_size) < init->attr.max_wr ||
	    ucmd.log_stride < OHCA_RQ_LOG_STRIDE_MIN ||
	    ucmd.log_stride > OHCA_WQ_LOG_STRIDE_MAX ||
	    sizeof(struct ohca_recv_wqe) +
	    init->attr.max_sge * sizeof(struct ohca_sge) >
	    BIT(ucmd.log_stride)) {
		ibdev_dbg(&dev->ibdev, "bad user SRQ geometry %u/%u\n",
			  ucmd.log_size, ucmd.log_stride);
		return -EINVAL;
	}
	srq->wq.log_size = ucmd.log_size;
	srq->wq.log_stride = ucmd.log_stride;
	srq->wq.umem = ohca_umem_ring(dev, ucmd.buf_addr,
				      BIT(ucmd.log_size + ucmd.log_stride),
				      &in->pbl, mem);
	if (IS_ERR(srq->wq.umem)) {
		err = PTR_ERR(srq->wq.umem);
		srq->wq.umem = NULL;
		return err;
	}
	if (ucmd.comp_mask & OHCA_CREATE_SRQ_DB_RECORD) {
		err = ohca_db_record_get(dev, uctx, ucmd.db_addr,
					 &srq->db_page, &in->db_record);
		if (err)
			goto err_ring;
	}
	in->uar_index = cpu_to_le32(uctx->uar_index);
	return 0;

err_ring:
	ohca_pbl_free(dev, mem);
	ib_umem_release(srq->wq.umem);
	srq->wq.umem = NULL;
	return err;
}

static int ohca_srq_create_kernel(struct ohca_ibdev *dev, struct ohca_srq *srq,
				  struct ib_srq_init_attr *init,
				  struct ohca_create_srq_in *in,
				  struct ohca_pbl_mem *mem)
{
	struct ohca_wq *wq = &srq->wq;
	int err;

	wq->log_size = max_t(u32, 1, order_base_2(init->attr.max_wr));
	wq->log_stride = max_t(u32, OHCA_RQ_LOG_STRIDE_MIN,
			       order_base_2(sizeof(struct ohca_recv_wqe) +
					    init->attr.max_sge *
					    sizeof(struct ohca_sge)));
	if (BIT(wq->log_size) > ohca_max_srq_wr(dev) ||
	    wq->log_stride > OHCA_WQ_LOG_STRIDE_MAX)
		return -EINVAL;
	wq->bytes = PAGE_ALIGN(BIT(wq->log_size + wq->log_stride));
	wq->buf = dma_alloc_coherent(&dev->cdev->pdev->dev, wq->bytes, &wq->buf_dma,
				     GFP_KERNEL);
	if (!wq->buf)
		return -ENOMEM;
	err = ohca_pbl_from_coherent(dev, wq->buf_dma, wq->bytes, &in->pbl,
				     mem);
	if (err) {
		dma_free_coherent(&dev->cdev->pdev->dev, wq->bytes, wq->buf,
				  wq->buf_dma);
		wq->buf = NULL;
		return err;
	}
	in->uar_index = 0;
	return 0;
}

/* In reverse: the record was taken after the ring. */
static void ohca_srq_free_buf(struct ohca_ibdev *dev, struct ohca_srq *srq)
{
	ohca_db_record_unmap(srq->db_page);
	srq->db_page = NULL;
	ib_umem_release(srq->wq.umem);
	srq->wq.umem = NULL;
	if (srq->wq.buf)
		dma_free_coherent(&dev->cdev->pdev->dev, srq->wq.bytes, srq->wq.buf,
				  srq->wq.buf_dma);
	srq->wq.buf = NULL;
}

/**
 * ohca_create_srq() - ib_device_ops.create_srq
 * @ibsrq: the SRQ, allocated by the core
 * @init: its type (basic, or XRC for users), size and limit
 * @udata: a user SRQ's request (its ring) and response (its number), or
 *         NULL for a kernel SRQ, whose ring is allocated here
 *
 * Return: 0, -EOPNOTSUPP for an SRQ type not supported, -EINVAL for sizes
 * out of range, or the errno of the ring or the command.
 */
int ohca_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		    struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibsrq->device);
	struct ohca_srq *srq = to_ohca_srq(ibsrq);
	struct ohca_ibv_create_srq_resp resp = {};
	struct ohca_create_srq_in in = {};
	struct ohca_pbl_mem mem;
	int err;

	if (init->srq_type == IB_SRQT_XRC && ohca_has_xrc(dev) && udata) {
		/* Its domain and CQ; target QPs of the domain reach it. */
		in.type = OHCA_SRQT_XRC;
		in.xrcdn = cpu_to_le32(ohca_xrcdn(init->ext.xrc.xrcd));
		in.cqn = cpu_to_le32(to_ohca_cq(init->ext.cq)->cqn);
	} else if (init->srq_type != IB_SRQT_BASIC) {
		ibdev_dbg(&dev->ibdev, "SRQ type %d not supported\n",
			  init->srq_type);
		return -EOPNOTSUPP;
	}
	if (!init->attr.max_wr || init->attr.max_wr > ohca_max_srq_wr(dev) ||
	    init->attr.max_sge > ohca_max_srq_sge(dev) ||
	    init->attr.srq_limit >= init->attr.max_wr)
		return -EINVAL;

	spin_lock_init(&srq->wq.lock);
	atomic_set(&srq->done, 0);
	if (udata)
		err = ohca_srq_create_user(dev, srq, init, &in, &mem, udata);
	else
		err = ohca_srq_create_kernel(dev, srq, init, &in, &mem);
	if (err)
		return err;

	in.pdn = cpu_to_le32(to_ohca_pd(ibsrq->pd)->pdn);
	in.log_size = srq->wq.log_size;
	in.log_stride = srq->wq.log_stride;
	in.limit = cpu_to_le32(init->attr.srq_limit);
	/* The grown input only with a record: an older device takes V1. */
	err = ohca_cmd_create(dev->cdev, OHCA_CMD_CREATE_SRQ, &in,
			      srq->db_page ? sizeof(in) :
			      OHCA_CREATE_SRQ_IN_V1_SIZE, &srq->srqn, NULL);
	/* The device copied the list. */
	ohca_pbl_free(dev, &mem);
	if (err)
		goto err_free_buf;

	err = xa_insert_irq(&dev->srq_xa, srq->srqn, srq, GFP_KERNEL);
	if (err) {
		dev_err(&dev->cdev->pdev->dev, "device reused SRQ number 0x%x\n",
			srq->srqn);
		goto err_destroy;
	}
	srq->max_sge = min_t(u32, ohca_max_srq_sge(dev),
			     (BIT(srq->wq.log_stride) -
			      sizeof(struct ohca_recv_wqe)) /
			     sizeof(struct ohca_sge));
	init->attr.max_wr = BIT(srq->wq.log_size);
	init->attr.max_sge = srq->max_sge;
	if (init->srq_type == IB_SRQT_XRC)
		ibsrq->ext.xrc.srq_num = srq->srqn;

	if (udata) {
		resp.srqn = srq->srqn;
		err = ib_copy_to_udata(udata, &resp,
				       min(sizeof(resp), udata->outlen));
		if (err)
			goto err_erase;
	}
	return 0;

err_erase:
	xa_erase_irq(&dev->srq_xa, srq->srqn);
err_destroy:
	if (!ohca_destroy_object(dev, NULL, OHCA_CMD_DESTROY_SRQ, srq->srqn,
				 "SRQ", NULL))
		return err;
err_free_buf:
	ohca_srq_free_buf(dev, srq);
	return err;
}

/**
 * ohca_destroy_srq() - ib_device_ops.destroy_srq
 * @ibsrq: the SRQ
 * @udata: unused
 *
 * The ring is freed unless the device may still use it
 * (ohca_destroy_object()).
 *
 * Return: 0.
 */
int ohca_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibsrq->device);
	struct ohca_srq *srq = to_ohca_srq(ibsrq);

	if (ohca_destroy_object(dev, &dev->srq_xa, OHCA_CMD_DESTROY_SRQ,
				srq->srqn, "SRQ", NULL))
		ohca_srq_free_buf(dev, srq);
	return 0;
}

/**
 * ohca_modify_srq() - ib_device_ops.modify_srq: arm the limit
 * @ibsrq: the SRQ
 * @attr: the new srq_limit
 * @mask: IB_SRQ_LIMIT only (no resize)
 * @udata: the user's (no request data)
 *
 * Return: 0, -EOPNOTSUPP for a resize, -EINVAL for a limit not below the
 * size, or the command's errno.
 */
int ohca_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		    enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibsrq->device);
	struct ohca_srq *srq = to_ohca_srq(ibsrq);
	struct ohca_modify_srq_in in = {};
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_MODIFY_SRQ,
		.in = &in,
		.in_len = sizeof(in),
	};

	/* No resizing: IB_DEVICE_SRQ_RESIZE is not reported. */
	if (mask & ~IB_SRQ_LIMIT)
		return -EOPNOTSUPP;
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EINVAL;
	if (!(mask & IB_SRQ_LIMIT))
		return 0;
	if (attr->srq_limit >= BIT(srq->wq.log_size))
		return -EINVAL;
	in.srqn = cpu_to_le32(srq->srqn);
	in.attr_mask = cpu_to_le32(OHCA_SRQ_LIMIT);
	in.limit = cpu_to_le32(attr->srq_limit);
	return ohca_cmd_exec(dev->cdev, &args);
}

/**
 * ohca_query_srq() - ib_device_ops.query_srq
 * @ibsrq: the SRQ
 * @attr: its size, SGEs and current limit
 *
 * Return: 0 or the command's errno.
 */
int ohca_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibsrq->device);
	struct ohca_srq *srq = to_ohca_srq(ibsrq);
	struct ohca_handle_in in = { .handle = cpu_to_le32(srq->srqn) };
	struct ohca_query_srq_out out;
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_QUERY_SRQ,
		.in = &in,
		.in_len = sizeof(in),
		.out = &out,
		.out_len = sizeof(out),
	};
	int err;

	err = ohca_cmd_exec(dev->cdev, &args);
	if (err)
		return err;
	attr->max_wr = BIT(srq->wq.log_size);
	attr->max_sge = srq->max_sge;
	attr->srq_limit = le32_to_cpu(out.limit);
	return 0;
}

/**
 * ohca_post_srq_recv() - ib_device_ops.post_srq_recv of a kernel SRQ
 * @ibsrq: the SRQ
 * @wr: the receive work requests
 * @bad_wr: the first one not posted, on error
 *
 * Return: 0, -ENOMEM when the SRQ is full, or -EINVAL for too many SGEs.
 */
int ohca_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibsrq->device);
	struct ohca_srq *srq = to_ohca_srq(ibsrq);
	struct ohca_wq *wq = &srq->wq;
	unsigned long flags;
	u32 start;
	int err = 0;
	int i;

	spin_lock_irqsave(&wq->lock, flags);
	start = wq->pi;
	for (; wr; wr = wr->next) {
		struct ohca_recv_wqe *wqe;
		struct ohca_sge *seg;

		if (wq->pi - (u32)atomic_read(&srq->done) >=
		    BIT(wq->log_size)) {
			err = -ENOMEM;
			break;
		}
		if (wr->num_sge > srq->max_sge) {
			err = -EINVAL;
			break;
		}
		wqe = wq->buf + ((wq->pi & (BIT(wq->log_size) - 1)) <<
				 wq->log_stride);
		seg = (struct ohca_sge *)(wqe + 1);
		memset(wqe, 0, sizeof(*wqe));
		wqe->wr_id = cpu_to_le64(wr->wr_id);
		wqe->num_sge = wr->num_sge;
		for (i = 0; i < wr->num_sge; i++) {
			seg[i].addr = cpu_to_le64(wr->sg_list[i].addr);
			seg[i].length = cpu_to_le32(wr->sg_list[i].length);
			seg[i].lkey = cpu_to_le32(wr->sg_list[i].lkey);
		}
		wq->pi++;
	}
	/* writeq() orders the WQE stores before the doorbell. */
	if (wq->pi != start)
		ohca_kdb(dev->cdev, OHCA_DB_SRQ, srq->srqn, wq->pi);
	spin_unlock_irqrestore(&wq->lock, flags);

	if (err)
		*bad_wr = wr;
	return err;
}
