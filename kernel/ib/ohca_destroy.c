// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca_ib: the destroy sequence of device objects. An object the event
 * handlers look up by number (CQ, SRQ, QP) leaves its table before the
 * device forgets it (the device may hand the number to a new object at
 * once), and is freed only once no handler can hold it. A DESTROY_*
 * command that fails on a device that still runs leaves the object's
 * memory with the device: it is kept (leaked), never freed under it.
 */
#include "ohca_ib.h"

/**
 * ohca_destroy_failed() - whether a failed DESTROY_* leaves memory with the device
 * @dev: the RDMA device
 * @err: what the DESTROY_* (or DEALLOC_*, FREE_*) command returned
 * @what: the object's kind, for the log ("CQ", "MR", ...)
 * @handle: the object's number or key, for the log
 *
 * With the device stopped (fatal) it no longer touches guest memory and
 * the host side may be freed. Otherwise the device may still own the
 * object's memory: the caller keeps it (leaks it) and reports success,
 * since the object is gone for the RDMA core either way. Logged
 * (rate-limited).
 *
 * Return: true if the caller must keep the object's memory, false if it
 * may free it (@err is 0, or the device is stopped).
 */
bool ohca_destroy_failed(struct ohca_ibdev *dev, int err, const char *what,
			 u32 handle)
{
	if (!err || test_bit(OHCA_FLAG_FATAL, &dev->cdev->flags))
		return false;
	dev_err_ratelimited(&dev->cdev->pdev->dev,
			    "cannot destroy %s 0x%x (%d): its memory stays with the device\n",
			    what, handle, err);
	return true;
}

/**
 * ohca_destroy_object() - destroy a CQ, SRQ or QP on the device
 * @dev: the RDMA device
 * @xa: the table the event handlers find the object in, or NULL if the
 *      object is not (or no longer) in it
 * @opcode: OHCA_CMD_DESTROY_CQ, OHCA_CMD_DESTROY_SRQ or OHCA_CMD_DESTROY_QP
 * @handle: the object's number (its index in @xa)
 * @what: the object's kind, for the log
 * @ceq: the completion EQ whose handler may hold the object (a CQ), or NULL
 *
 * Erases @handle from @xa, has the device destroy the object, then waits
 * for the event handlers (EQ 0's, and @ceq's) that may still hold it.
 * Process context.
 *
 * Return: true if the object's memory may be freed, false if it stays
 * with the device (see ohca_destroy_failed()).
 */
bool ohca_destroy_object(struct ohca_ibdev *dev, struct xarray *xa, u16 opcode,
			 u32 handle, const char *what, struct ohca_comp_eq *ceq)
{
	int err;

	/* First: once destroyed, the number may go to a new object. */
	if (xa)
		xa_erase_irq(xa, handle);
	err = ohca_cmd_destroy(dev->cdev, opcode, handle);
	/* No event handler may still hold the object. */
	ohca_sync_async_events(dev->cdev);
	if (ceq)
		ohca_sync_comp_events(dev->cdev, ceq);
	return !ohca_destroy_failed(dev, err, what, handle);
}
