// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca_core: device health. The device stops (a fatal error it reports on
 * EQ 0 or in DEV_STATUS) or the driver gives up on it (a command timed
 * out, a PCI error, a bad answer, shutdown): either way OHCA_FLAG_FATAL is
 * set once, every command waiter fails, the carrier drops and the RDMA
 * driver is told, so that teardown never waits for the device again.
 */
#include "ohca_core_priv.h"

static const char *ohca_fatal_name(u32 code)
{
	switch (code) {
	case OHCA_FATAL_CMDQ_DMA:
		return "command ring not readable";
	case OHCA_FATAL_EQ_DMA:
		return "event queue not writable";
	case OHCA_FATAL_EQ_OVERFLOW:
		return "event queue overflow";
	case OHCA_FATAL_BAD_CMDQ_CONFIG:
		return "bad command queue configuration";
	default:
		return "unknown";
	}
}

/* Fail every command waiter, drop the carrier and tell the RDMA driver. */
static void ohca_dev_stopped(struct ohca_dev *dev)
{
	struct ohca_event_client *client;

	ohca_cmdq_fail_all(dev);

	if (test_bit(OHCA_FLAG_NETDEV_READY, &dev->flags))
		netif_carrier_off(dev->netdev);
	rcu_read_lock();
	client = rcu_dereference(dev->events);
	if (client)
		client->ops->fatal(client->priv);
	rcu_read_unlock();
}

/**
 * ohca_handle_fatal() - the device reported that it stopped
 * @dev: the function
 * @code: its fatal code (enum ohca_fatal: an EQ 0 event's code or
 *        the FATAL_CODE register)
 *
 * The device will not answer until a function reset: logged once, then
 * the waiters fail and the RDMA driver is told. May run in IRQ context.
 */
void ohca_handle_fatal(struct ohca_dev *dev, u32 code)
{
	if (test_and_set_bit(OHCA_FLAG_FATAL, &dev->flags))
		return;

	dev_err(&dev->pdev->dev,
		"device fatal error %u (%s); the device is stopped until a function reset or driver reload\n",
		code, ohca_fatal_name(code));
	ohca_dev_stopped(dev);
}

/**
 * ohca_mark_dead() - give up on a device that misbehaves
 * @dev: the function
 * @why: logged as an error; NULL for an orderly stop (shutdown)
 *
 * For a device that did not report a fatal state (a command timed out, a
 * PCI error, a bad answer, shutdown): every later command fails at once
 * instead of waiting out its own timeout, so tearing down N objects does
 * not take N timeouts. Bus mastering goes off first, because objects
 * destroyed from now on are freed without a DESTROY command the device
 * could have acknowledged. Does nothing if the device is already stopped.
 * Process context. Exported: the RDMA driver calls it too.
 */
void ohca_mark_dead(struct ohca_dev *dev, const char *why)
{
	if (test_and_set_bit(OHCA_FLAG_FATAL, &dev->flags))
		return;

	pci_clear_master(dev->pdev);
	if (why)
		dev_err(&dev->pdev->dev,
			"%s: device treated as dead until a function reset or driver reload\n",
			why);
	ohca_dev_stopped(dev);
}
EXPORT_SYMBOL_GPL(ohca_mark_dead);

/**
 * ohca_check_fatal() - catch a fatal state not reported on EQ 0
 * @dev: the function
 *
 * Reads DEV_STATUS (a full or unwritable EQ 0 cannot carry the event) and
 * handles a fatal state as ohca_handle_fatal() does.
 */
void ohca_check_fatal(struct ohca_dev *dev)
{
	if (ohca_rd32(dev, OHCA_REG_DEV_STATUS) & OHCA_DEV_STATUS_FATAL)
		ohca_handle_fatal(dev, ohca_rd32(dev, OHCA_REG_FATAL_CODE));
}
