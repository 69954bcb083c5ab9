// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca: memory windows (OHCA_DEV_CAP_MW).  The device allocates a window's
 * key and does everything else: binding is a work request the provider
 * posts, invalidation a LOCAL_INV or a received SEND with invalidate.
 */
#include <ohca/ohca_cmd.h>

#include "ohca_ib.h"

/**
 * ohca_has_mw() - whether the device has memory windows
 * @dev: the RDMA device
 *
 * Return: true with OHCA_DEV_CAP_MW.
 */
bool ohca_has_mw(struct ohca_ibdev *dev)
{
	return le32_to_cpu(dev->cdev->attr.dev_caps) & OHCA_DEV_CAP_MW;
}

/**
 * ohca_max_mw() - max_mw for query_device
 * @dev: the RDMA device
 *
 * Return: the device's limit, 0 without memory windows.
 */
u32 ohca_max_mw(struct ohca_ibdev *dev)
{
	return ohca_has_mw(dev) ? le32_to_cpu(dev->cdev->attr.max_mw) : 0;
}

/**
 * ohca_alloc_mw() - ib_device_ops.alloc_mw
 * @ibmw: the window (type 1 or 2), allocated by the core
 * @udata: the user's (no request data)
 *
 * Return: 0, -EOPNOTSUPP, -EINVAL for a window type not known, or the
 * command's errno.
 */
int ohca_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibmw->device);
	struct ohca_mw *mw = to_ohca_mw(ibmw);
	struct ohca_alloc_mw_in in = {};
	u32 key;
	int err;

	if (!ohca_has_mw(dev))
		return -EOPNOTSUPP;
	/* The provider sends no request data of its own. */
	if (udata && !ohca_udata_tail_clear(udata, 0))
		return -EOPNOTSUPP;
	switch (ibmw->type) {
	case IB_MW_TYPE_1:
		in.type = OHCA_MW_TYPE_1;
		break;
	case IB_MW_TYPE_2:
		in.type = OHCA_MW_TYPE_2;
		break;
	default:
		return -EINVAL;
	}
	in.pdn = cpu_to_le32(to_ohca_pd(ibmw->pd)->pdn);
	err = ohca_cmd_create(dev->cdev, OHCA_CMD_ALLOC_MW, &in, sizeof(in), &key,
			      NULL);
	if (err)
		return err;
	mw->handle = key;
	ibmw->rkey = key;
	return 0;
}

/**
 * ohca_dealloc_mw() - ib_device_ops.dealloc_mw
 * @ibmw: the window
 *
 * Return: 0 (a failed DEALLOC_MW is logged: ohca_destroy_failed()).
 */
int ohca_dealloc_mw(struct ib_mw *ibmw)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibmw->device);
	struct ohca_mw *mw = to_ohca_mw(ibmw);
	int err;

	/* A window holds no guest memory: a failure leaks nothing here. */
	err = ohca_cmd_destroy(dev->cdev, OHCA_CMD_DEALLOC_MW, mw->handle);
	ohca_destroy_failed(dev, err, "MW", mw->handle);
	return 0;
}
