// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca: event queue 0 (command completions, port changes, fatal errors)
 * and its MSI-X vector.
 */
#include <linux/dma-mapping.h>
#include <linux/interrupt.h>

#include "ohca.h"

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

/*
 * The device stopped and will not answer until reset: fail every command
 * waiter, drop the carrier and tell the RDMA core. May run in IRQ context.
 */
void ohca_handle_fatal(struct ohca_dev *dev, u32 code)
{
	if (test_and_set_bit(OHCA_FLAG_FATAL, &dev->flags))
		return;

	dev_err(&dev->pdev->dev,
		"device fatal error %u (%s); the device is stopped until the driver is reloaded\n",
		code, ohca_fatal_name(code));
	ohca_cmdq_fail_all(dev);

	if (test_bit(OHCA_FLAG_NETDEV_READY, &dev->flags))
		netif_carrier_off(dev->netdev);
	if (test_bit(OHCA_FLAG_IB_REGISTERED, &dev->flags)) {
		struct ib_event event = {
			.device = &dev->ibdev,
			.event = IB_EVENT_DEVICE_FATAL,
			.element.port_num = 1,
		};

		ib_dispatch_event(&event);
	}
}

/* Catch a fatal state that could not be reported on EQ 0. */
void ohca_check_fatal(struct ohca_dev *dev)
{
	if (ohca_rd32(dev, OHCA_REG_DEV_STATUS) & OHCA_DEV_STATUS_FATAL)
		ohca_handle_fatal(dev, ohca_rd32(dev, OHCA_REG_FATAL_CODE));
}

static void ohca_eqe_handle(struct ohca_dev *dev, const struct ohca_eqe *eqe)
{
	u16 code = le16_to_cpu(eqe->code);
	bool up;

	switch (eqe->type) {
	case OHCA_EQE_CMD_DONE:
		ohca_cmdq_complete(dev, eqe);
		break;
	case OHCA_EQE_PORT_CHANGE:
		if (le32_to_cpu(eqe->param0) != 1) {
			dev_warn_ratelimited(&dev->pdev->dev,
					     "port change event for port %u ignored\n",
					     le32_to_cpu(eqe->param0));
			break;
		}
		up = code == OHCA_PORT_ACTIVE;
		if (atomic_xchg(&dev->link_up, up) == up)
			break;
		dev_info(&dev->pdev->dev, "link %s\n", up ? "up" : "down");
		if (test_bit(OHCA_FLAG_NETDEV_READY, &dev->flags))
			ohca_netdev_link_change(dev, up);
		if (test_bit(OHCA_FLAG_IB_REGISTERED, &dev->flags))
			ohca_port_event(dev, up);
		break;
	case OHCA_EQE_DEVICE_FATAL:
		ohca_handle_fatal(dev, code);
		break;
	default:
		dev_warn_ratelimited(&dev->pdev->dev,
				     "unknown event type %u ignored\n",
				     eqe->type);
		break;
	}
}

static irqreturn_t ohca_eq0_irq(int irq, void *data)
{
	struct ohca_dev *dev = data;
	struct ohca_eq *eq = &dev->eq0;
	u32 mask = BIT(eq->log_size) - 1;

	for (;;) {
		struct ohca_eqe *eqe = &eq->ring[eq->ci & mask];
		u8 owner = ((eq->ci >> eq->log_size) & 1) ? 0 : OHCA_EQE_OWNER;

		if ((READ_ONCE(eqe->flags) & OHCA_EQE_OWNER) != owner)
			break;
		/* Read the body only after seeing the owner bit. */
		dma_rmb();
		ohca_eqe_handle(dev, eqe);
		eq->ci++;
	}

	ohca_wr32(dev, OHCA_REG_EQ0_DB,
		  (eq->ci & OHCA_RING_INDEX_MASK) | OHCA_EQ_DB_ARM);
	return IRQ_HANDLED;
}

int ohca_eq0_init(struct ohca_dev *dev)
{
	struct device *dmadev = &dev->pdev->dev;
	struct ohca_eq *eq = &dev->eq0;
	size_t size;
	int err;

	eq->log_size = OHCA_EQ0_LOG;
	eq->ci = 0;
	size = BIT(eq->log_size) * sizeof(*eq->ring);
	eq->ring = dma_alloc_coherent(dmadev, size, &eq->ring_dma, GFP_KERNEL);
	if (!eq->ring)
		return -ENOMEM;

	snprintf(dev->eq0_irq_name, sizeof(dev->eq0_irq_name), "ohca-eq0@%s",
		 pci_name(dev->pdev));
	err = request_irq(pci_irq_vector(dev->pdev, OHCA_MSIX_ASYNC_EQ),
			  ohca_eq0_irq, 0, dev->eq0_irq_name, dev);
	if (err) {
		dev_err(dmadev, "cannot request the EQ 0 interrupt: %d\n", err);
		goto err_free_ring;
	}

	ohca_wr32(dev, OHCA_REG_EQ0_BASE_LO, lower_32_bits(eq->ring_dma));
	ohca_wr32(dev, OHCA_REG_EQ0_BASE_HI, upper_32_bits(eq->ring_dma));
	ohca_wr32(dev, OHCA_REG_EQ0_LOG_SIZE, eq->log_size);
	ohca_wr32(dev, OHCA_REG_EQ0_DB, OHCA_EQ_DB_ARM);
	return 0;

err_free_ring:
	dma_free_coherent(dmadev, size, eq->ring, eq->ring_dma);
	return err;
}

/* Called after the device was reset: it no longer writes the ring. */
void ohca_eq0_destroy(struct ohca_dev *dev)
{
	struct ohca_eq *eq = &dev->eq0;

	free_irq(pci_irq_vector(dev->pdev, OHCA_MSIX_ASYNC_EQ), dev);
	dma_free_coherent(&dev->pdev->dev,
			  BIT(eq->log_size) * sizeof(*eq->ring),
			  eq->ring, eq->ring_dma);
}
