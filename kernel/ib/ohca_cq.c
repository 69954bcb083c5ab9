// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca: completion queues. User CQs are rings in the process's memory
 * that the provider polls; kernel CQs are coherent rings polled here,
 * with their doorbells on the kernel's doorbell page 0.
 */
#include <linux/dma-mapping.h>
#include <rdma/uverbs_ioctl.h>

#include <ohca/ohca-abi.h>

#include "ohca_ib.h"

/**
 * ohca_cq_event() - a CQ's event from the device
 * @dev: the RDMA device
 * @cqn: the CQ's number
 * @error: a CQ_ERROR event (EQ 0) rather than a completion (completion EQ)
 * @code: the CQ_ERROR code (OHCA_CQ_ERR_*)
 *
 * Calls the CQ's completion handler, or its event handler with
 * IB_EVENT_CQ_ERR. An event for an unknown CQ is dropped. IRQ context.
 */
void ohca_cq_event(struct ohca_ibdev *dev, u32 cqn, bool error, u16 code)
{
	struct ohca_cq *cq = xa_load(&dev->cq_xa, cqn);
	struct ib_event event;

	if (!cq) {
		dev_dbg_ratelimited(&dev->cdev->pdev->dev,
				    "event for unknown CQ 0x%x\n", cqn);
		return;
	}
	if (!error) {
		if (cq->ibcq.comp_handler)
			cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
		return;
	}

	dev_warn_ratelimited(&dev->cdev->pdev->dev, "CQ 0x%x error %u (%s)\n", cqn,
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

static int ohca_cq_create_user(struct ohca_ibdev *dev, struct ohca_cq *cq,
			       struct ohca_create_cq_in *in,
			       struct ohca_pbl_mem *mem, struct ib_udata *udata)
{
	struct ohca_ibv_create_cq ucmd = {};
	struct ohca_ucontext *uctx =
		rdma_udata_to_drv_context(udata, struct ohca_ucontext,
					  ibucontext);
	int err;

	/* A provider from before doorbell records sends no db_addr. */
	if (udata->inlen < offsetof(typeof(ucmd), db_addr))
		return -EINVAL;
	err = ib_copy_from_udata(&ucmd, udata, min(sizeof(ucmd), udata->inlen));
	if (err)
		return err;
	if ((ucmd.comp_mask & ~OHCA_CREATE_CQ_DB_RECORD) ||
	    !ohca_udata_tail_clear(udata, sizeof(ucmd)))
		return -EINVAL;
	if (ucmd.comp_mask & OHCA_CREATE_CQ_DB_RECORD) {
		if (udata->inlen < offsetofend(typeof(ucmd), db_addr))
			return -EINVAL;
		if (!ohca_db_record_ok(dev))
			return -EOPNOTSUPP;
	} else if (ucmd.db_addr) {
		return -EINVAL;
	}
	if (ucmd.log_size < 1 || ucmd.log_size > OHCA_CQ_LOG_MAX ||
	    BIT(ucmd.log_size) > le32_to_cpu(dev->cdev->attr.max_cqe) + 1) {
		ibdev_dbg(&dev->ibdev, "CQ log_size %u out of range\n",
			  ucmd.log_size);
		return -EINVAL;
	}
	cq->log_size = ucmd.log_size;
	if (ucmd.comp_mask & OHCA_CREATE_CQ_DB_RECORD) {
		err = ohca_db_record_get(dev, uctx, ucmd.db_addr,
					 &cq->db_page, &in->db_record);
		if (err)
			return err;
	}
	cq->umem = ohca_umem_ring(dev, ucmd.buf_addr,
				  BIT(cq->log_size) * sizeof(struct ohca_cqe),
				  &in->pbl, mem);
	if (IS_ERR(cq->umem)) {
		err = PTR_ERR(cq->umem);
		cq->umem = NULL;
		ohca_db_record_unmap(cq->db_page);
		cq->db_page = NULL;
		return err;
	}
	in->uar_index = cpu_to_le32(uctx->uar_index);
	return 0;
}

static int ohca_cq_create_kernel(struct ohca_ibdev *dev, struct ohca_cq *cq,
				 int cqe, struct ohca_create_cq_in *in,
				 struct ohca_pbl_mem *mem)
{
	int err;

	cq->log_size = max(1, order_base_2(cqe + 1));
	if (cq->log_size > OHCA_CQ_LOG_MAX)
		return -EINVAL;
	cq->ring_bytes = PAGE_ALIGN(BIT(cq->log_size) * sizeof(*cq->ring));
	cq->ring = dma_alloc_coherent(&dev->cdev->pdev->dev, cq->ring_bytes,
				      &cq->ring_dma, GFP_KERNEL);
	if (!cq->ring)
		return -ENOMEM;
	err = ohca_pbl_from_coherent(dev, cq->ring_dma, cq->ring_bytes,
				     &in->pbl, mem);
	if (err) {
		dma_free_coherent(&dev->cdev->pdev->dev, cq->ring_bytes, cq->ring,
				  cq->ring_dma);
		cq->ring = NULL;
		return err;
	}
	in->uar_index = 0;
	return 0;
}

static void ohca_cq_free_buf(struct ohca_ibdev *dev, struct ohca_cq *cq)
{
	ib_umem_release(cq->umem);
	cq->umem = NULL;
	ohca_db_record_unmap(cq->db_page);
	cq->db_page = NULL;
	if (cq->ring)
		dma_free_coherent(&dev->cdev->pdev->dev, cq->ring_bytes, cq->ring,
				  cq->ring_dma);
	cq->ring = NULL;
}

/**
 * ohca_create_cq() - ib_device_ops.create_cq
 * @ibcq: the CQ, allocated by the core
 * @attr: its size and completion vector (no flags)
 * @udata: a user CQ's request (its ring) and response (its number), or NULL
 *         for a kernel CQ, whose ring is allocated here
 *
 * Return: 0, -EINVAL for a size out of range, -EOPNOTSUPP for flags or a
 * device without completion EQs, or the errno of the ring or the command.
 */
int ohca_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		   struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibcq->device);
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
	if (attr->cqe < 1 || attr->cqe > le32_to_cpu(dev->cdev->attr.max_cqe))
		return -EINVAL;
	if (!dev->cdev->num_comp_eqs) {
		ibdev_dbg(&dev->ibdev, "no completion EQs: no CQs\n");
		return -EOPNOTSUPP;
	}

	spin_lock_init(&cq->lock);
	mutex_init(&cq->resize_lock);
	INIT_LIST_HEAD(&cq->sq_list);
	INIT_LIST_HEAD(&cq->rq_list);
	cq->ci = 0;
	cq->ceq = &dev->cdev->comp_eqs[attr->comp_vector % dev->cdev->num_comp_eqs];

	if (udata)
		err = ohca_cq_create_user(dev, cq, &in, &mem, udata);
	else
		err = ohca_cq_create_kernel(dev, cq, attr->cqe, &in, &mem);
	if (err)
		return err;

	in.eqn = cpu_to_le32(cq->ceq->eqn);
	in.log_size = cq->log_size;
	/* The grown input only with a record: an older device takes V1. */
	err = ohca_cmd_create(dev->cdev, OHCA_CMD_CREATE_CQ, &in,
			      cq->db_page ? sizeof(in) :
			      OHCA_CREATE_CQ_IN_V1_SIZE, &cq->cqn, NULL);
	ohca_pbl_free(dev, &mem);
	if (err)
		goto err_free_buf;

	err = xa_insert_irq(&dev->cq_xa, cq->cqn, cq, GFP_KERNEL);
	if (err) {
		dev_err(&dev->cdev->pdev->dev, "device reused CQ number 0x%x\n",
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
	if (!ohca_destroy_object(dev, NULL, OHCA_CMD_DESTROY_CQ, cq->cqn, "CQ",
				 cq->ceq))
		return err;
err_free_buf:
	ohca_cq_free_buf(dev, cq);
	return err;
}

/**
 * ohca_destroy_cq() - ib_device_ops.destroy_cq
 * @ibcq: the CQ
 * @udata: the user's (unused)
 *
 * The ring is freed unless the device may still write it
 * (ohca_destroy_object()).
 *
 * Return: 0.
 */
int ohca_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibcq->device);
	struct ohca_cq *cq = to_ohca_cq(ibcq);

	if (ohca_destroy_object(dev, &dev->cq_xa, OHCA_CMD_DESTROY_CQ, cq->cqn,
				"CQ", cq->ceq))
		ohca_cq_free_buf(dev, cq);
	return 0;
}

/**
 * ohca_resize_cq() - ib_device_ops.resize_cq: a user CQ moves to a new ring
 * @ibcq: the CQ
 * @cqe: the entries asked for
 * @udata: the new ring (request) and the unpolled CQEs copied (response)
 *
 * The provider holds its CQ lock across the call, so the device's consumer
 * index is the provider's, and the device (RESIZE_CQ) copies the unpolled
 * CQEs to the start of the new ring. Kernel CQs are not resized: no kernel
 * consumer asks for it.
 *
 * Return: 0, -EOPNOTSUPP (kernel CQ, no OHCA_DEV_CAP_RESIZE_CQ), -EINVAL
 * (sizes, or more unpolled CQEs than the new ring holds), or the errno of
 * pinning the ring or of the command.
 */
int ohca_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibcq->device);
	struct ohca_cq *cq = to_ohca_cq(ibcq);
	struct ohca_ibv_resize_cq_resp resp = {};
	struct ohca_ibv_resize_cq ucmd = {};
	struct ohca_resize_cq_in in = {};
	struct ohca_resize_cq_out out = {};
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_RESIZE_CQ,
		.in = &in,
		.in_len = sizeof(in),
		.out = &out,
		.out_len = sizeof(out),
	};
	struct ohca_pbl_mem mem;
	struct ib_umem *umem;
	int err;

	if (!udata || !cq->umem ||
	    !(le32_to_cpu(dev->cdev->attr.dev_caps) & OHCA_DEV_CAP_RESIZE_CQ))
		return -EOPNOTSUPP;
	if (cqe < 1 || cqe > le32_to_cpu(dev->cdev->attr.max_cqe))
		return -EINVAL;
	if (udata->inlen < sizeof(ucmd))
		return -EINVAL;
	err = ib_copy_from_udata(&ucmd, udata, sizeof(ucmd));
	if (err)
		return err;
	if (ucmd.comp_mask || !ohca_udata_tail_clear(udata, sizeof(ucmd)))
		return -EINVAL;
	/* The ring holds the entries asked for, one slot kept free. */
	if (ucmd.log_size < 1 || ucmd.log_size > OHCA_CQ_LOG_MAX ||
	    BIT(ucmd.log_size) < (u32)cqe + 1 ||
	    BIT(ucmd.log_size) > le32_to_cpu(dev->cdev->attr.max_cqe) + 1)
		return -EINVAL;

	mutex_lock(&cq->resize_lock);
	umem = ohca_umem_ring(dev, ucmd.buf_addr,
			      BIT(ucmd.log_size) * sizeof(struct ohca_cqe),
			      &in.pbl, &mem);
	if (IS_ERR(umem)) {
		err = PTR_ERR(umem);
		goto out_unlock;
	}
	in.cqn = cpu_to_le32(cq->cqn);
	in.log_size = ucmd.log_size;
	/* More unpolled CQEs than the new ring holds: BAD_FIELD, -EINVAL. */
	err = ohca_cmd_exec(dev->cdev, &args);
	ohca_pbl_free(dev, &mem);
	if (err) {
		ib_umem_release(umem);
		goto out_unlock;
	}
	/* The device no longer touches the old ring. */
	ib_umem_release(cq->umem);
	cq->umem = umem;
	cq->log_size = ucmd.log_size;
	ibcq->cqe = BIT(cq->log_size) - 1;
	resp.cqes = le32_to_cpu(out.cqes);
	err = ib_copy_to_udata(udata, &resp, min(sizeof(resp), udata->outlen));
out_unlock:
	mutex_unlock(&cq->resize_lock);
	return err;
}

static bool ohca_has_cq_moderation(struct ohca_ibdev *dev)
{
	return le32_to_cpu(dev->cdev->attr.dev_caps) & OHCA_DEV_CAP_CQ_MODERATION;
}

/**
 * ohca_modify_cq() - ib_device_ops.modify_cq: completion event moderation
 * @ibcq: the CQ
 * @cq_count: completions an armed CQ's event waits for (0 or 1: none)
 * @cq_period: microseconds after the first completion it waits at most
 *
 * rdma_set_cq_moderation(), ibv_modify_cq (programming manual section 20).
 * The device refuses a count above 1 without a period, which could hold an
 * event for ever; 0/0 turns moderation off.
 *
 * Return: 0, -EOPNOTSUPP without OHCA_DEV_CAP_CQ_MODERATION, -EINVAL for
 * values over the device's limits, or the command's errno.
 */
int ohca_modify_cq(struct ib_cq *ibcq, u16 cq_count, u16 cq_period)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibcq->device);
	struct ohca_modify_cq_in in = {
		.cqn = cpu_to_le32(to_ohca_cq(ibcq)->cqn),
		.mask = cpu_to_le32(OHCA_MODIFY_CQ_MODERATION),
		.cq_count = cpu_to_le16(cq_count),
		.cq_period = cpu_to_le16(cq_period),
	};
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_MODIFY_CQ,
		.in = &in,
		.in_len = sizeof(in),
	};

	if (!ohca_has_cq_moderation(dev))
		return -EOPNOTSUPP;
	if (cq_count > le32_to_cpu(dev->cdev->attr.max_cq_mod_count) ||
	    cq_period > le32_to_cpu(dev->cdev->attr.max_cq_mod_period))
		return -EINVAL;
	return ohca_cmd_exec(dev->cdev, &args);
}

/**
 * ohca_cq_query_caps() - the moderation limits for query_device
 * @dev: the RDMA device
 * @props: its cq_caps are set (left 0 without moderation)
 */
void ohca_cq_query_caps(struct ohca_ibdev *dev, struct ib_device_attr *props)
{
	if (!ohca_has_cq_moderation(dev))
		return;
	props->cq_caps.max_cq_moderation_count =
		min_t(u32, le32_to_cpu(dev->cdev->attr.max_cq_mod_count), U16_MAX);
	props->cq_caps.max_cq_moderation_period =
		min_t(u32, le32_to_cpu(dev->cdev->attr.max_cq_mod_period), U16_MAX);
}

/**
 * ohca_wc_status() - a CQE's status as the RDMA core's
 * @status: enum ohca_cqe_status (the IBTA numbering)
 *
 * Return: the ib_wc_status; IB_WC_GENERAL_ERR for a status not known.
 */
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
	case OHCA_CQE_MW_BIND_ERR:
		return IB_WC_MW_BIND_ERR;
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

/* The CQE at free-running index @idx if the device has written it. */
static struct ohca_cqe *ohca_cqe_at(struct ohca_cq *cq, u32 idx)
{
	struct ohca_cqe *cqe = &cq->ring[idx & (BIT(cq->log_size) - 1)];
	u8 owner = ((idx >> cq->log_size) & 1) ? 0 : OHCA_CQE_OWNER;

	if ((READ_ONCE(cqe->owner) & OHCA_CQE_OWNER) != owner)
		return NULL;
	/* Read the body only after seeing the owner bit. */
	dma_rmb();
	return cqe;
}

/* The next valid CQE of a kernel CQ, or NULL. Under cq->lock. */
static struct ohca_cqe *ohca_cq_next(struct ohca_cq *cq)
{
	return ohca_cqe_at(cq, cq->ci);
}

/**
 * ohca_cq_clean() - drop a QP's CQEs from a kernel CQ
 * @dev: the RDMA device
 * @cq: the CQ (a user CQ: nothing to do)
 * @qpn: the QP's number
 *
 * Once the device no longer produces any for the QP (it was destroyed or
 * is in RESET): otherwise a stale send CQE moves a restarted QP's consumer
 * index, retires another QP's WQEs after the number is reused, or hands
 * the core a freed consumer's wr_cqe. Later CQEs move up over the dropped
 * ones, keeping the owner bit of their new slot; the device only writes
 * past them. Takes the CQ lock.
 */
void ohca_cq_clean(struct ohca_ibdev *dev, struct ohca_cq *cq, u32 qpn)
{
	u32 mask = BIT(cq->log_size) - 1;
	u32 n = 0, nfreed = 0, k;
	unsigned long flags;

	if (!cq->ring)
		return;
	spin_lock_irqsave(&cq->lock, flags);
	while (n <= mask && ohca_cqe_at(cq, cq->ci + n))
		n++;
	for (k = n; k-- > 0;) {
		struct ohca_cqe *cqe = &cq->ring[(cq->ci + k) & mask];
		struct ohca_cqe *dst;
		u8 owner;

		if ((le32_to_cpu(cqe->qpn) & OHCA_CQE_QPN_MASK) == qpn) {
			nfreed++;
			continue;
		}
		if (!nfreed)
			continue;
		dst = &cq->ring[(cq->ci + k + nfreed) & mask];
		owner = dst->owner;
		*dst = *cqe;
		dst->owner = owner;
	}
	if (nfreed) {
		cq->ci += nfreed;
		ohca_kdb(dev->cdev, OHCA_DB_CQ, cq->cqn, cq->ci & OHCA_DB_CQ_CI_MASK);
	}
	spin_unlock_irqrestore(&cq->lock, flags);
}

/**
 * ohca_cq_kick() - have a stopped device's CQ polled
 * @cq: the CQ
 *
 * The device is stopped: completions exist only in software now (poll_cq
 * flushes the kernel QPs' work). Tell the CQ's consumer, as a completion
 * event would (not for IB_POLL_DIRECT CQs, whose owner polls them itself).
 */
void ohca_cq_kick(struct ohca_cq *cq)
{
	if (cq->ibcq.comp_handler && cq->ibcq.poll_ctx != IB_POLL_DIRECT)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
}

/**
 * ohca_cqe_is_cq_own() - whether a CQE of a kernel CQ is that CQ's to report
 * @cq: the kernel CQ polled
 * @qp: the QP the CQE names (by number)
 * @cqe: the CQE
 *
 * A send CQE must name a QP whose send CQ is @cq, a receive CQE one whose
 * receive CQ is @cq. A receive through an XRC target QP (OHCA_CQE_F_XRC)
 * completes on a user XRC SRQ's CQ, never on a kernel CQ. Anything else
 * (a CQ number the device still uses for a destroyed object's work after
 * it was reused, a confused device) would hand the CQ's consumer a wr_id
 * it never posted: for a kernel ULP, a wr_cqe pointer it calls.
 *
 * Return: true if @cqe may be reported on @cq, false if it is dropped.
 */
bool ohca_cqe_is_cq_own(const struct ohca_cq *cq, const struct ohca_qp *qp,
			const struct ohca_cqe *cqe)
{
	if (cqe->flags & OHCA_CQE_F_XRC)
		return false;
	if (cqe->opcode & OHCA_CQE_RECV)
		return qp->ibqp.recv_cq == &cq->ibcq;
	return qp->ibqp.send_cq == &cq->ibcq;
}

/*
 * A successful receive of a datagram QP on an InfiniBand port: its CQE
 * carries the LRH's source in the top bits of qpn and src_qp.
 */
static bool ohca_cqe_ib_source(const struct ohca_qp *qp,
			       const struct ohca_cqe *cqe)
{
	return (cqe->opcode & OHCA_CQE_RECV) && cqe->status == OHCA_CQE_SUCCESS &&
	       (qp->type == IB_QPT_UD || qp->type == IB_QPT_GSI ||
		qp->type == IB_QPT_SMI);
}

/*
 * False for a CQE that is not reported: its QP is gone, or it is not this
 * CQ's (ohca_cqe_is_cq_own(), counted in @cq->foreign). Under cq->lock.
 */
static bool ohca_cqe_to_wc(struct ohca_ibdev *dev, struct ohca_cq *cq,
			   const struct ohca_cqe *cqe, struct ib_wc *wc)
{
	u32 raw_qpn = le32_to_cpu(cqe->qpn);
	u32 qpn = raw_qpn & OHCA_CQE_QPN_MASK;
	struct ohca_qp *qp = xa_load(&dev->qp_xa, qpn);

	if (!qp) {
		dev_dbg_ratelimited(&dev->cdev->pdev->dev,
				    "CQE of unknown QP 0x%x dropped\n", qpn);
		return false;
	}
	if (!ohca_cqe_is_cq_own(cq, qp, cqe)) {
		cq->foreign++;
		dev_warn_ratelimited(&dev->cdev->pdev->dev,
				     "CQ 0x%x: CQE of QP 0x%x (opcode 0x%x flags 0x%x) not this CQ's, dropped (%u so far)\n",
				     cq->cqn, qpn, cqe->opcode, cqe->flags,
				     cq->foreign);
		return false;
	}
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = le64_to_cpu(cqe->wr_id);
	wc->status = ohca_wc_status(cqe->status);
	wc->vendor_err = cqe->vendor_err;
	wc->byte_len = le32_to_cpu(cqe->byte_len);
	wc->src_qp = le32_to_cpu(cqe->src_qp) & OHCA_CQE_QPN_MASK;
	wc->port_num = 1;
	wc->qp = &qp->ibqp;
	if (cqe->flags & OHCA_CQE_F_IMM) {
		wc->ex.imm_data = cqe->imm_data;
		wc->wc_flags |= IB_WC_WITH_IMM;
	} else if (cqe->flags & OHCA_CQE_F_INV) {
		/* The field holds the R_Key little endian (OHCA_CQE_F_INV). */
		wc->ex.invalidate_rkey =
			le32_to_cpu((__force __le32)cqe->imm_data);
		wc->wc_flags |= IB_WC_WITH_INVALIDATE;
	}
	/* UD receives: what ib_init_ah_attr_from_wc() needs for a reply. */
	if (dev->cdev->ib_port && ohca_cqe_ib_source(qp, cqe)) {
		/* The LRH's source (ohca_queue.h), a GRH only if it had one. */
		wc->slid = OHCA_CQE_IB_SLID(raw_qpn, cqe->vendor_err);
		wc->dlid_path_bits =
			OHCA_CQE_IB_PATH_BITS(le32_to_cpu(cqe->src_qp));
		wc->sl = cqe->sl & 0xf;
		wc->vendor_err = 0;
		wc->pkey_index = 0;
		if (cqe->flags & OHCA_CQE_F_GRH)
			wc->wc_flags |= IB_WC_GRH;
	} else if (cqe->flags & OHCA_CQE_F_GRH) {
		wc->wc_flags |= IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE;
		wc->network_hdr_type = cqe->flags & OHCA_CQE_F_IPV4 ?
				       RDMA_NETWORK_IPV4 : RDMA_NETWORK_IPV6;
		wc->sl = cqe->sl;
		wc->pkey_index = 0;
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
	case OHCA_CQE_LOCAL_INV:
		wc->opcode = IB_WC_LOCAL_INV;
		break;
	case OHCA_CQE_REG_MR:
		wc->opcode = IB_WC_REG_MR;
		break;
	case OHCA_CQE_COMP_SWAP:
		wc->opcode = IB_WC_COMP_SWAP;
		break;
	case OHCA_CQE_FETCH_ADD:
		wc->opcode = IB_WC_FETCH_ADD;
		break;
	case OHCA_CQE_RECV_RDMA_WITH_IMM:
		wc->opcode = IB_WC_RECV_RDMA_WITH_IMM;
		break;
	default:
		wc->opcode = IB_WC_RECV;
		break;
	}

	/* Retire the work queue entries the completion covers. */
	if ((cqe->opcode & OHCA_CQE_RECV) && qp->ibqp.srq) {
		atomic_inc(&to_ohca_srq(qp->ibqp.srq)->done);
	} else if (cqe->opcode & OHCA_CQE_RECV) {
		WRITE_ONCE(qp->rq.ci, qp->rq.ci + 1);
	} else {
		u32 ci = READ_ONCE(qp->sq.ci);

		ci += ((le16_to_cpu(cqe->wqe_index) - ci) & 0xffff) + 1;
		WRITE_ONCE(qp->sq.ci, ci);
	}
	return true;
}

/**
 * ohca_poll_cq() - ib_device_ops.poll_cq of a kernel CQ
 * @ibcq: the CQ
 * @num_entries: room in @wc
 * @wc: the completions
 *
 * CQEs the CQ must not report (their QP is gone, or not attached to this
 * CQ: ohca_cqe_is_cq_own()) are consumed and dropped. On a stopped device
 * the work its kernel QPs still have outstanding is flushed here, so that
 * ib_drain_qp() and the ULPs' teardown finish.
 *
 * Return: the number of completions in @wc, or -EINVAL for a user CQ.
 */
int ohca_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibcq->device);
	struct ohca_cq *cq = to_ohca_cq(ibcq);
	struct ohca_cqe *cqe;
	unsigned long flags;
	bool moved = false;
	int n = 0;

	if (WARN_ON_ONCE(!cq->ring))
		return -EINVAL;

	spin_lock_irqsave(&cq->lock, flags);
	while (n < num_entries && (cqe = ohca_cq_next(cq))) {
		if (ohca_cqe_to_wc(dev, cq, cqe, &wc[n]))
			n++;
		cq->ci++;
		moved = true;
	}
	if (moved)
		ohca_kdb(dev->cdev, OHCA_DB_CQ, cq->cqn,
			 cq->ci & OHCA_DB_CQ_CI_MASK);
	/*
	 * A stopped device completes nothing more: what the kernel QPs still
	 * have outstanding is flushed here, so ib_drain_qp() and the ULPs'
	 * teardown finish.
	 */
	if (test_bit(OHCA_FLAG_FATAL, &dev->cdev->flags)) {
		struct ohca_qp *qp;

		list_for_each_entry(qp, &cq->sq_list, scq_node)
			n += ohca_qp_flush_sw(qp, true, wc + n, num_entries - n);
		list_for_each_entry(qp, &cq->rq_list, rcq_node)
			n += ohca_qp_flush_sw(qp, false, wc + n,
					      num_entries - n);
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

/*
 * Under the CQ lock, with the device stopped: whether a kernel QP of this
 * CQ holds work that poll_cq would flush.
 */
static bool ohca_cq_has_sw_flush(struct ohca_cq *cq)
{
	struct ohca_qp *qp;

	list_for_each_entry(qp, &cq->sq_list, scq_node)
		if (qp->sq.ci != READ_ONCE(qp->sq.pi))
			return true;
	list_for_each_entry(qp, &cq->rq_list, rcq_node)
		if (qp->rq.ci != READ_ONCE(qp->rq.pi))
			return true;
	return false;
}

/**
 * ohca_req_notify_cq() - ib_device_ops.req_notify_cq of a kernel CQ
 * @ibcq: the CQ
 * @flags: IB_CQ_SOLICITED or IB_CQ_NEXT_COMP, and IB_CQ_REPORT_MISSED_EVENTS
 *
 * Arms the CQ with its consumer index.
 *
 * Return: 1 if IB_CQ_REPORT_MISSED_EVENTS was asked and there is something
 * to poll already (a CQE, or software flushes of a stopped device), else 0.
 */
int ohca_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibcq->device);
	struct ohca_cq *cq = to_ohca_cq(ibcq);
	unsigned long irqflags;
	u32 arm;
	int ret = 0;

	arm = (flags & IB_CQ_SOLICITED_MASK) == IB_CQ_SOLICITED ?
	      OHCA_DB_CQ_ARM_SOLICITED : OHCA_DB_CQ_ARM_NEXT;

	spin_lock_irqsave(&cq->lock, irqflags);
	ohca_kdb(dev->cdev, OHCA_DB_CQ, cq->cqn,
		 (cq->ci & OHCA_DB_CQ_CI_MASK) | arm);
	/*
	 * On a stopped device, work posted while the core's poller was
	 * finishing (its kick found the poller still scheduled) is only
	 * flushed if the poller is told to run again: ib_drain_qp() would
	 * wait forever for its marker.
	 */
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) &&
	    (ohca_cq_next(cq) ||
	     (test_bit(OHCA_FLAG_FATAL, &dev->cdev->flags) &&
	      ohca_cq_has_sw_flush(cq))))
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}
