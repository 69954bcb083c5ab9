// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca: XRC (OHCA_DEV_CAP_XRC). An XRC domain is a device object
 * (ALLOC_XRCD), so the device enforces max_xrcd and checks that a request
 * reaches only XRC SRQs of its target QP's domain. Target QPs have no
 * queues and belong to the kernel (the core creates them without udata);
 * initiator QPs are RC send queues and XRC SRQs user SRQs, both created
 * by ohca_qp.c and ohca_srq.c with the few fields XRC adds.
 */
#include <ohca/ohca_cmd.h>

#include "ohca_ib.h"

/**
 * ohca_has_xrc() - whether the device has XRC
 * @dev: the RDMA device
 *
 * Return: true with OHCA_DEV_CAP_XRC.
 */
bool ohca_has_xrc(struct ohca_ibdev *dev)
{
	return le32_to_cpu(dev->cdev->attr.dev_caps) & OHCA_DEV_CAP_XRC;
}

/**
 * ohca_alloc_xrcd() - ib_device_ops.alloc_xrcd
 * @ibxrcd: the domain, allocated by the core
 * @udata: the user's (no request data)
 *
 * Return: 0, -EOPNOTSUPP without XRC, -EINVAL, or the command's errno.
 */
int ohca_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibxrcd->device);
	struct ohca_xrcd *xrcd = to_ohca_xrcd(ibxrcd);

	if (!ohca_has_xrc(dev))
		return -EOPNOTSUPP;
	if (udata && !ohca_udata_tail_clear(udata, 0))
		return -EINVAL;
	return ohca_cmd_create(dev->cdev, OHCA_CMD_ALLOC_XRCD, NULL, 0,
			       &xrcd->xrcdn, NULL);
}

/**
 * ohca_dealloc_xrcd() - ib_device_ops.dealloc_xrcd
 * @ibxrcd: the domain
 * @udata: unused
 *
 * A domain holds no guest memory: a failure leaks nothing here.
 *
 * Return: 0.
 */
int ohca_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibxrcd->device);
	struct ohca_xrcd *xrcd = to_ohca_xrcd(ibxrcd);
	int err;

	/* A domain holds no guest memory: a failure leaks nothing here. */
	err = ohca_cmd_destroy(dev->cdev, OHCA_CMD_DEALLOC_XRCD, xrcd->xrcdn);
	ohca_destroy_failed(dev, err, "XRCD", xrcd->xrcdn);
	return 0;
}

/**
 * ohca_xrcdn() - an XRC domain's device number
 * @ibxrcd: the domain
 *
 * Return: ALLOC_XRCD's number.
 */
u32 ohca_xrcdn(struct ib_xrcd *ibxrcd)
{
	return to_ohca_xrcd(ibxrcd)->xrcdn;
}

/**
 * ohca_create_xrc_tgt_qp() - create an XRC target QP
 * @dev: the RDMA device
 * @qp: the QP, allocated by the core
 * @init: its attributes: an XRC domain, no CQ, SRQ or queues
 *
 * A number in the domain and a state, nothing else: its receives complete
 * on the CQ of the XRC SRQ each request names.
 *
 * Return: 0, -EOPNOTSUPP, -EINVAL, or the errno of the command.
 */
int ohca_create_xrc_tgt_qp(struct ohca_ibdev *dev, struct ohca_qp *qp,
			   struct ib_qp_init_attr *init)
{
	struct ohca_create_qp_in in = {};
	int err;

	if (!ohca_has_xrc(dev) || !init->xrcd)
		return -EOPNOTSUPP;
	if (init->create_flags || init->srq || init->send_cq ||
	    init->recv_cq || init->rwq_ind_tbl)
		return -EINVAL;
	qp->type = IB_QPT_XRC_TGT;
	mutex_init(&qp->state_lock);
	qp->state = IB_QPS_RESET;
	in.type = OHCA_QPT_XRC_TGT;
	in.xrcdn = cpu_to_le32(ohca_xrcdn(init->xrcd));
	err = ohca_cmd_create(dev->cdev, OHCA_CMD_CREATE_QP, &in,
			      OHCA_CREATE_QP_IN_V1_SIZE, &qp->qpn, NULL);
	if (err)
		goto err_mutex;
	err = xa_insert_irq(&dev->qp_xa, qp->qpn, qp, GFP_KERNEL);
	if (err) {
		dev_err(&dev->cdev->pdev->dev, "device reused QP number 0x%x\n",
			qp->qpn);
		ohca_destroy_object(dev, NULL, OHCA_CMD_DESTROY_QP, qp->qpn,
				    "QP", NULL);
		goto err_mutex;
	}
	qp->ibqp.qp_num = qp->qpn;
	memset(&init->cap, 0, sizeof(init->cap));
	return 0;

err_mutex:
	mutex_destroy(&qp->state_lock);
	return err;
}
