// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca: completion queues. User CQs are rings in the process's memory
 * that the provider polls; kernel CQs are coherent rings polled here,
 * with their doorbells on the kernel's doorbell page 0.
 */
#include <linux/dma-mapping.h>
#include <rdma/uverbs_ioctl.h>

#include <ohca/ohca-abi.h>

#include "ohca.h"

/* Completion (CQ_COMPLETION, comp EQ) or CQ_ERROR (EQ 0) in IRQ context. */
void ohca_cq_event(struct ohca_dev *dev, u32 cqn, bool error, u16 code)
{
	struct ohca_cq *cq = xa_load(&dev->cq_xa, cqn);
	struct ib_event event;

	if (!cq) {
		dev_dbg_ratelimited(&dev->pdev->dev,
				    "event for unknown CQ 0x%x\n", cqn);
		return;
	}
	if (!error) {
		if (cq->ibcq.comp_handler)
			cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
		return;
	}

	dev_warn_ratelimited(&dev->pdev->dev, "CQ 0x%x error %u (%s)\n", cqn,
			     code, code == OHCA_CQ_ERR_OVERRUN ? "overrun" :
			     code == OHCA_CQ_ERR_ACCESS ? "ring not writable" :
			     "unknown");
	if (cq->ibcq.event_handler) {
		event.device = &dev->ibdev;
		event.event = IB_EVENT_CQ_ERR;
		event.element.cq = &cq->ibcq;
		cq->ibcq.event_handler(&event, cq->ibcq.cq_context);
	}
}

static int ohca_cq_create_user(struct ohca_dev *dev, struct ohca_cq *cq,
			       struct ohca_create_cq_in *in,
			       struct ohca_pbl_mem *mem, struct ib_udata *udata)
{
	struct ohca_ibv_create_cq ucmd = {};
	struct ohca_ucontext *uctx =
		rdma_udata_to_drv_context(udata, struct ohca_ucontext,
					  ibucontext);
	int err;

	if (udata->inlen < sizeof(ucmd))
		return -EINVAL;
	err = ib_copy_from_udata(&ucmd, udata, sizeof(ucmd));
	if (err)
		return err;
	if (ucmd.reserved ||
	    (udata->inlen > sizeof(ucmd) &&
	     !ib_is_udata_cleared(udata, sizeof(ucmd),
				  udata->inlen - sizeof(ucmd))))
		return -EINVAL;
	if (ucmd.log_size < 1 || ucmd.log_size > OHCA_CQ_LOG_MAX ||
	    BIT(ucmd.log_size) > le32_to_cpu(dev->attr.max_cqe) + 1) {
		ibdev_dbg(&dev->ibdev, "CQ log_size %u out of range\n",
			  ucmd.log_size);
		return -EINVAL;
	}
	cq->log_size = ucmd.log_size;
	cq->umem = ohca_umem_ring(dev, ucmd.buf_addr,
				  BIT(cq->log_size) * sizeof(struct ohca_cqe),
				  &in->pbl, mem);
	if (IS_ERR(cq->umem)) {
		err = PTR_ERR(cq->umem);
		cq->umem = NULL;
		return err;
	}
	in->uar_index = cpu_to_le32(uctx->uar_index);
	return 0;
}

static int ohca_cq_create_kernel(struct ohca_dev *dev, struct ohca_cq *cq,
				 int cqe, struct ohca_create_cq_in *in,
				 struct ohca_pbl_mem *mem)
{
	int err;

	cq->log_size = max(1, order_base_2(cqe + 1));
	if (cq->log_size > OHCA_CQ_LOG_MAX)
		return -EINVAL;
	cq->ring_bytes = PAGE_ALIGN(BIT(cq->log_size) * sizeof(*cq->ring));
	cq->ring = dma_alloc_coherent(&dev->pdev->dev, cq->ring_bytes,
				      &cq->ring_dma, GFP_KERNEL);
	if (!cq->ring)
		return -ENOMEM;
	err = ohca_pbl_from_coherent(dev, cq->ring_dma, cq->ring_bytes,
				     &in->pbl, mem);
	if (err) {
		dma_free_coherent(&dev->pdev->dev, cq->ring_bytes, cq->ring,
				  cq->ring_dma);
		cq->ring = NULL;
		return err;
	}
	in->uar_index = 0;
	return 0;
}

static void ohca_cq_free_buf(struct ohca_dev *dev, struct ohca_cq *cq)
{
	ib_umem_release(cq->umem);
	cq->umem = NULL;
	if (cq->ring)
		dma_free_coherent(&dev->pdev->dev, cq->ring_bytes, cq->ring,
				  cq->ring_dma);
	cq->ring = NULL;
}

int ohca_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		   struct ib_udata *udata)
{
	struct ohca_dev *dev = to_ohca_dev(ibcq->device);
	struct ohca_cq *cq = to_ohca_cq(ibcq);
	struct ohca_ibv_create_cq_resp resp = {};
	struct ohca_create_cq_in in = {};
	struct ohca_pbl_mem mem;
	int err;

	if (attr->flags) {
		ibdev_dbg(&dev->ibdev, "CQ flags %#x not supported\n",
			  attr->flags);
		return -EOPNOTSUPP;
	}
	if (attr->cqe < 1 || attr->cqe > le32_to_cpu(dev->attr.max_cqe))
		return -EINVAL;
	if (!dev->num_comp_eqs) {
		ibdev_dbg(&dev->ibdev, "no completion EQs: no CQs\n");
		return -EOPNOTSUPP;
	}

	spin_lock_init(&cq->lock);
	cq->ci = 0;
	cq->ceq = &dev->comp_eqs[attr->comp_vector % dev->num_comp_eqs];

	if (udata)
		err = ohca_cq_create_user(dev, cq, &in, &mem, udata);
	else
		err = ohca_cq_create_kernel(dev, cq, attr->cqe, &in, &mem);
	if (err)
		return err;

	in.eqn = cpu_to_le32(cq->ceq->eqn);
	in.log_size = cq->log_size;
	err = ohca_cmd_create(dev, OHCA_CMD_CREATE_CQ, &in, sizeof(in),
			      &cq->cqn, NULL);
	ohca_pbl_free(dev, &mem);
	if (err)
		goto err_free_buf;

	err = xa_insert_irq(&dev->cq_xa, cq->cqn, cq, GFP_KERNEL);
	if (err) {
		dev_err(&dev->pdev->dev, "device reused CQ number 0x%x\n",
			cq->cqn);
		goto err_destroy;
	}

	ibcq->cqe = BIT(cq->log_size) - 1;
	if (udata) {
		resp.cqn = cq->cqn;
		err = ib_copy_to_udata(udata, &resp,
				       min(sizeof(resp), udata->outlen));
		if (err)
			goto err_erase;
	}
	return 0;

err_erase:
	xa_erase_irq(&dev->cq_xa, cq->cqn);
err_destroy:
	if (ohca_destroy_failed(dev, ohca_cmd_destroy(dev, OHCA_CMD_DESTROY_CQ,
						      cq->cqn), "CQ", cq->cqn))
		return err;
	synchronize_irq(pci_irq_vector(dev->pdev, OHCA_MSIX_ASYNC_EQ));
	synchronize_irq(pci_irq_vector(dev->pdev, cq->ceq->vector));
err_free_buf:
	ohca_cq_free_buf(dev, cq);
	return err;
}

int ohca_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct ohca_dev *dev = to_ohca_dev(ibcq->device);
	struct ohca_cq *cq = to_ohca_cq(ibcq);
	int err;

	/* Erase first: the device may reuse the number once it is destroyed. */
	xa_erase_irq(&dev->cq_xa, cq->cqn);
	err = ohca_cmd_destroy(dev, OHCA_CMD_DESTROY_CQ, cq->cqn);
	/* No event handler may still hold the CQ. */
	synchronize_irq(pci_irq_vector(dev->pdev, OHCA_MSIX_ASYNC_EQ));
	synchronize_irq(pci_irq_vector(dev->pdev, cq->ceq->vector));
	if (!ohca_destroy_failed(dev, err, "CQ", cq->cqn))
		ohca_cq_free_buf(dev, cq);
	return 0;
}

enum ib_wc_status ohca_wc_status(u8 status)
{
	switch (status) {
	case OHCA_CQE_SUCCESS:
		return IB_WC_SUCCESS;
	case OHCA_CQE_LOC_LEN_ERR:
		return IB_WC_LOC_LEN_ERR;
	case OHCA_CQE_LOC_QP_OP_ERR:
		return IB_WC_LOC_QP_OP_ERR;
	case OHCA_CQE_LOC_PROT_ERR:
		return IB_WC_LOC_PROT_ERR;
	case OHCA_CQE_WR_FLUSH_ERR:
		return IB_WC_WR_FLUSH_ERR;
	case OHCA_CQE_BAD_RESP_ERR:
		return IB_WC_BAD_RESP_ERR;
	case OHCA_CQE_LOC_ACCESS_ERR:
		return IB_WC_LOC_ACCESS_ERR;
	case OHCA_CQE_REM_INV_REQ_ERR:
		return IB_WC_REM_INV_REQ_ERR;
	case OHCA_CQE_REM_ACCESS_ERR:
		return IB_WC_REM_ACCESS_ERR;
	case OHCA_CQE_REM_OP_ERR:
		return IB_WC_REM_OP_ERR;
	case OHCA_CQE_RETRY_EXC_ERR:
		return IB_WC_RETRY_EXC_ERR;
	case OHCA_CQE_RNR_RETRY_EXC_ERR:
		return IB_WC_RNR_RETRY_EXC_ERR;
	case OHCA_CQE_FATAL_ERR:
		return IB_WC_FATAL_ERR;
	default:
		return IB_WC_GENERAL_ERR;
	}
}

/* The next valid CQE of a kernel CQ, or NULL. Under cq->lock. */
static struct ohca_cqe *ohca_cq_next(struct ohca_cq *cq)
{
	struct ohca_cqe *cqe = &cq->ring[cq->ci & (BIT(cq->log_size) - 1)];
	u8 owner = ((cq->ci >> cq->log_size) & 1) ? 0 : OHCA_CQE_OWNER;

	if ((READ_ONCE(cqe->owner) & OHCA_CQE_OWNER) != owner)
		return NULL;
	/* Read the body only after seeing the owner bit. */
	dma_rmb();
	return cqe;
}

static void ohca_cqe_to_wc(struct ohca_dev *dev, const struct ohca_cqe *cqe,
			   struct ib_wc *wc)
{
	u32 qpn = le32_to_cpu(cqe->qpn);
	struct ohca_qp *qp = xa_load(&dev->qp_xa, qpn);

	memset(wc, 0, sizeof(*wc));
	wc->wr_id = le64_to_cpu(cqe->wr_id);
	wc->status = ohca_wc_status(cqe->status);
	wc->vendor_err = cqe->vendor_err;
	wc->byte_len = le32_to_cpu(cqe->byte_len);
	wc->src_qp = le32_to_cpu(cqe->src_qp);
	wc->port_num = 1;
	wc->qp = qp ? &qp->ibqp : NULL;
	if (cqe->flags & OHCA_CQE_F_IMM) {
		wc->ex.imm_data = (__force __be32)cqe->imm_data;
		wc->wc_flags |= IB_WC_WITH_IMM;
	}

	switch (cqe->opcode) {
	case OHCA_CQE_SEND:
		wc->opcode = IB_WC_SEND;
		break;
	case OHCA_CQE_RDMA_WRITE:
		wc->opcode = IB_WC_RDMA_WRITE;
		break;
	case OHCA_CQE_RDMA_READ:
		wc->opcode = IB_WC_RDMA_READ;
		break;
	case OHCA_CQE_RECV_RDMA_WITH_IMM:
		wc->opcode = IB_WC_RECV_RDMA_WITH_IMM;
		break;
	default:
		wc->opcode = IB_WC_RECV;
		break;
	}

	if (!qp)
		return;
	/* Retire the work queue entries the completion covers. */
	if (cqe->opcode & OHCA_CQE_RECV) {
		WRITE_ONCE(qp->rq.ci, qp->rq.ci + 1);
	} else {
		u32 ci = READ_ONCE(qp->sq.ci);

		ci += ((le16_to_cpu(cqe->wqe_index) - ci) & 0xffff) + 1;
		WRITE_ONCE(qp->sq.ci, ci);
	}
}

int ohca_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct ohca_dev *dev = to_ohca_dev(ibcq->device);
	struct ohca_cq *cq = to_ohca_cq(ibcq);
	struct ohca_cqe *cqe;
	unsigned long flags;
	int n = 0;

	if (WARN_ON_ONCE(!cq->ring))
		return -EINVAL;

	spin_lock_irqsave(&cq->lock, flags);
	while (n < num_entries && (cqe = ohca_cq_next(cq))) {
		ohca_cqe_to_wc(dev, cqe, &wc[n++]);
		cq->ci++;
	}
	if (n)
		ohca_kdb(dev, OHCA_DB_CQ, cq->cqn,
			 cq->ci & OHCA_DB_CQ_CI_MASK);
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

int ohca_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct ohca_dev *dev = to_ohca_dev(ibcq->device);
	struct ohca_cq *cq = to_ohca_cq(ibcq);
	unsigned long irqflags;
	u32 arm;
	int ret = 0;

	arm = (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
	      OHCA_DB_CQ_ARM_SOLICITED : OHCA_DB_CQ_ARM_NEXT;

	spin_lock_irqsave(&cq->lock, irqflags);
	ohca_kdb(dev, OHCA_DB_CQ, cq->cqn,
		 (cq->ci & OHCA_DB_CQ_CI_MASK) | arm);
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) && ohca_cq_next(cq))
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}
