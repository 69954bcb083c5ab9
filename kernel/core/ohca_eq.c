// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca_core: event queue 0 (command completions, port changes, fatal
 * errors, the RDMA objects' events) and the completion EQs, their MSI-X
 * vectors, and the hand-off of RDMA events to the RDMA driver. What a
 * fatal error does is in ohca_health.c.
 */
#include <linux/dma-mapping.h>
#include <linux/interrupt.h>

#include "ohca_core_priv.h"

/**
 * ohca_register_events() - bind the RDMA driver's event callbacks
 * @dev: the function
 * @client: the callbacks and their argument
 *
 * One client per device: from the auxiliary driver's probe, before it
 * registers its ib_device. The client pointer is published here and
 * cleared by ohca_unregister_events(); every callback runs under
 * rcu_read_lock().
 *
 * Return: 0, or -EBUSY when a client is registered.
 */
int ohca_register_events(struct ohca_dev *dev,
			 struct ohca_event_client *client)
{
	if (rcu_access_pointer(dev->events))
		return -EBUSY;
	rcu_assign_pointer(dev->events, client);
	return 0;
}
EXPORT_SYMBOL_GPL(ohca_register_events);

/**
 * ohca_unregister_events() - unbind the RDMA driver's event callbacks
 * @dev: the function
 *
 * From the auxiliary driver's remove, after it unregistered its ib_device.
 * On return no callback runs or will run (synchronize_rcu()); events that
 * come meanwhile are counted in events_dropped.
 */
void ohca_unregister_events(struct ohca_dev *dev)
{
	RCU_INIT_POINTER(dev->events, NULL);
	synchronize_rcu();
}
EXPORT_SYMBOL_GPL(ohca_unregister_events);

static void ohca_dispatch_comp(struct ohca_dev *dev, u32 cqn)
{
	struct ohca_event_client *client;

	rcu_read_lock();
	client = rcu_dereference(dev->events);
	if (client)
		client->ops->comp(client->priv, cqn);
	else
		atomic_inc(&dev->events_dropped);
	rcu_read_unlock();
}

static void ohca_dispatch_async(struct ohca_dev *dev,
				const struct ohca_eqe *eqe)
{
	struct ohca_event_client *client;

	rcu_read_lock();
	client = rcu_dereference(dev->events);
	if (client)
		client->ops->async(client->priv, eqe);
	else
		atomic_inc(&dev->events_dropped);
	rcu_read_unlock();
}

/**
 * ohca_port_changed() - tell the RDMA driver the port may have changed
 * @dev: the function
 *
 * It reads the port state again. Any context the callback allows (the EQ 0
 * interrupt, ndo_open/ndo_stop).
 */
void ohca_port_changed(struct ohca_dev *dev)
{
	struct ohca_event_client *client;

	rcu_read_lock();
	client = rcu_dereference(dev->events);
	if (client)
		client->ops->port_change(client->priv);
	rcu_read_unlock();
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
		if (dev->ib_port) {
			/*
			 * The subnet manager moves an IB port through INIT and
			 * ARMED, and changes its LID, SM and P_Keys while it
			 * stays ACTIVE: every event goes to the RDMA driver.
			 */
			atomic_set(&dev->port_state, code);
			atomic_or(le32_to_cpu(eqe->param1), &dev->port_changes);
			if (atomic_xchg(&dev->link_up, up) != up)
				dev_info(&dev->pdev->dev, "port %s\n",
					 up ? "active" : "not active");
			ohca_port_changed(dev);
			break;
		}
		if (atomic_xchg(&dev->link_up, up) == up)
			break;
		dev_info(&dev->pdev->dev, "link %s\n", up ? "up" : "down");
		if (test_bit(OHCA_FLAG_NETDEV_READY, &dev->flags))
			ohca_netdev_link_change(dev, up);
		ohca_port_changed(dev);
		break;
	case OHCA_EQE_DEVICE_FATAL:
		ohca_handle_fatal(dev, code);
		break;
	case OHCA_EQE_QP_EVENT:
	case OHCA_EQE_CQ_ERROR:
	case OHCA_EQE_SRQ_EVENT:
	case OHCA_EQE_PAGE_FAULT:
		ohca_dispatch_async(dev, eqe);
		break;
	default:
		dev_warn_ratelimited(&dev->pdev->dev,
				     "unknown event type %u ignored\n",
				     eqe->type);
		break;
	}
}

/* The next valid entry of @eq, or NULL. */
static struct ohca_eqe *ohca_eq_next(struct ohca_eq *eq)
{
	struct ohca_eqe *eqe = &eq->ring[eq->ci & (BIT(eq->log_size) - 1)];
	u8 owner = ((eq->ci >> eq->log_size) & 1) ? 0 : OHCA_EQE_OWNER;

	if ((READ_ONCE(eqe->flags) & OHCA_EQE_OWNER) != owner)
		return NULL;
	/* Read the body only after seeing the owner bit. */
	dma_rmb();
	return eqe;
}

/*
 * Take at most OHCA_EQ_BUDGET entries of @eq, handing each to @handle;
 * the consumer index reaches the device every OHCA_EQ_CI_BATCH entries,
 * and with ARM at the end (the device interrupts again at once if more
 * entries are waiting). Returns the number taken.
 */
static u32 ohca_eq_poll(struct ohca_dev *dev, struct ohca_eq *eq, u32 db_reg,
			void (*handle)(void *arg, const struct ohca_eqe *eqe),
			void *arg)
{
	struct ohca_eqe *eqe;
	u32 n = 0;

	while (n < OHCA_EQ_BUDGET && (eqe = ohca_eq_next(eq))) {
		handle(arg, eqe);
		eq->ci++;
		if (!(++n % OHCA_EQ_CI_BATCH))
			ohca_wr32(dev, db_reg, eq->ci & OHCA_RING_INDEX_MASK);
	}
	ohca_wr32(dev, db_reg, (eq->ci & OHCA_RING_INDEX_MASK) | OHCA_EQ_DB_ARM);
	return n;
}

static void ohca_eq0_handle(void *arg, const struct ohca_eqe *eqe)
{
	ohca_eqe_handle(arg, eqe);
}

static irqreturn_t ohca_eq0_irq(int irq, void *data)
{
	struct ohca_dev *dev = data;

	ohca_eq_poll(dev, &dev->eq0, OHCA_REG_EQ0_DB, ohca_eq0_handle, dev);
	return IRQ_HANDLED;
}

static void ohca_comp_eq_handle(void *arg, const struct ohca_eqe *eqe)
{
	struct ohca_comp_eq *ceq = arg;

	if (eqe->type == OHCA_EQE_CQ_COMPLETION)
		ohca_dispatch_comp(ceq->dev, le32_to_cpu(eqe->param0));
	else
		dev_warn_ratelimited(&ceq->dev->pdev->dev,
				     "event type %u on completion EQ %u ignored\n",
				     eqe->type, ceq->eqn);
}

static irqreturn_t ohca_comp_eq_irq(int irq, void *data)
{
	struct ohca_comp_eq *ceq = data;

	ohca_eq_poll(ceq->dev, &ceq->eq, OHCA_REG_EQ_DB(ceq->eqn),
		     ohca_comp_eq_handle, ceq);
	return IRQ_HANDLED;
}

/* The device's largest EQ, from its MAX_EQ_LOG register. */
static u32 ohca_max_eq_log(struct ohca_dev *dev)
{
	return clamp_t(u32, ohca_rd32(dev, OHCA_REG_MAX_EQ_LOG),
		       OHCA_EQ_LOG_MIN, OHCA_EQ_LOG_MAX);
}

/**
 * ohca_eq0_fit_limits() - fit the reported limits to EQ 0
 * @dev: the function
 *
 * EQ 0 exists before the device's limits are known (their query is a
 * command, answered on EQ 0). Once they are, on a device where a full EQ 0
 * is fatal (no OHCA_DEV_CAP_EQ0_HOLD): lower the QP and CQ limits reported
 * to the RDMA core until their worst-case burst fits EQ 0.
 */
void ohca_eq0_fit_limits(struct ohca_dev *dev)
{
	u32 size = BIT(dev->eq0.log_size);
	u32 room = size > OHCA_CMDQ_DEPTH + OHCA_EQ_SPARE ?
		   size - OHCA_CMDQ_DEPTH - OHCA_EQ_SPARE : 0;
	u32 max_qp = le32_to_cpu(dev->attr.max_qp);
	u32 max_cq = le32_to_cpu(dev->attr.max_cq);

	if (le32_to_cpu(dev->attr.dev_caps) & OHCA_DEV_CAP_EQ0_HOLD)
		return;	/* it waits for room instead */
	if ((u64)OHCA_EQ0_QP_EVENTS * max_qp + max_cq <= room)
		return;
	max_qp = min(max_qp, room / (OHCA_EQ0_QP_EVENTS + 1));
	max_cq = min(max_cq, room - OHCA_EQ0_QP_EVENTS * max_qp);
	dev_warn(&dev->pdev->dev,
		 "event queue 0 (%u entries) carries the events of %u QPs and %u CQs, not %u and %u\n",
		 size, max_qp, max_cq,
		 le32_to_cpu(dev->attr.max_qp), le32_to_cpu(dev->attr.max_cq));
	dev->attr.max_qp = cpu_to_le32(max_qp);
	dev->attr.max_cq = cpu_to_le32(max_cq);
}

/* A completion EQ for every CQ's event plus the spare. */
static u32 ohca_comp_eq_log(struct ohca_dev *dev)
{
	u32 want = le32_to_cpu(dev->attr.max_cq) + OHCA_EQ_SPARE;

	return clamp_t(u32, order_base_2(want), OHCA_EQ_LOG_MIN,
		       ohca_max_eq_log(dev));
}

/**
 * ohca_eq0_init() - create event queue 0 and its interrupt
 * @dev: the function
 *
 * The ring (2^OHCA_EQ0_LOG entries or the device's maximum), the MSI-X
 * vector OHCA_MSIX_ASYNC_EQ, the EQ0 registers, armed.
 *
 * Return: 0, -ENOMEM, or request_irq()'s error.
 */
int ohca_eq0_init(struct ohca_dev *dev)
{
	struct device *dmadev = &dev->pdev->dev;
	struct ohca_eq *eq = &dev->eq0;
	size_t size;
	int err;

	eq->log_size = min_t(u32, OHCA_EQ0_LOG, ohca_max_eq_log(dev));
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

/**
 * ohca_eq0_destroy() - free event queue 0 and its interrupt
 * @dev: the function
 *
 * Called after the device was reset: it no longer writes the ring.
 */
void ohca_eq0_destroy(struct ohca_dev *dev)
{
	struct ohca_eq *eq = &dev->eq0;

	free_irq(pci_irq_vector(dev->pdev, OHCA_MSIX_ASYNC_EQ), dev);
	dma_free_coherent(&dev->pdev->dev,
			  BIT(eq->log_size) * sizeof(*eq->ring),
			  eq->ring, eq->ring_dma);
}

static void ohca_comp_eq_free(struct ohca_dev *dev, struct ohca_comp_eq *ceq)
{
	unsigned int irq = pci_irq_vector(dev->pdev, ceq->vector);

	irq_set_affinity_hint(irq, NULL);
	free_irq(irq, ceq);
	dma_free_coherent(&dev->pdev->dev,
			  BIT(ceq->eq.log_size) * sizeof(*ceq->eq.ring),
			  ceq->eq.ring, ceq->eq.ring_dma);
}

static int ohca_comp_eq_create(struct ohca_dev *dev, struct ohca_comp_eq *ceq,
			       int vector)
{
	struct device *dmadev = &dev->pdev->dev;
	struct ohca_eq *eq = &ceq->eq;
	struct ohca_create_eq_in in = {};
	unsigned int irq, cpu;
	size_t size;
	int err;

	ceq->dev = dev;
	ceq->vector = vector;
	eq->log_size = ohca_comp_eq_log(dev);
	eq->ci = 0;
	size = BIT(eq->log_size) * sizeof(*eq->ring);
	eq->ring = dma_alloc_coherent(dmadev, size, &eq->ring_dma, GFP_KERNEL);
	if (!eq->ring)
		return -ENOMEM;

	irq = pci_irq_vector(dev->pdev, vector);
	snprintf(ceq->irq_name, sizeof(ceq->irq_name), "ohca-ceq%d@%s",
		 vector - 2, pci_name(dev->pdev));
	err = request_irq(irq, ohca_comp_eq_irq, 0, ceq->irq_name, ceq);
	if (err)
		goto err_free_ring;
	cpu = cpumask_local_spread(vector - 2, dev_to_node(dmadev));
	irq_set_affinity_hint(irq, cpumask_of(cpu));

	in.base = cpu_to_le64(eq->ring_dma);
	in.log_size = eq->log_size;
	in.msix_vector = vector;
	err = ohca_cmd_create(dev, OHCA_CMD_CREATE_EQ, &in, sizeof(in),
			      &ceq->eqn, NULL);
	if (err)
		goto err_free_irq;
	if (!ceq->eqn || ceq->eqn > OHCA_MAX_EQ) {
		/* It may write the ring under a number it cannot be told. */
		dev_err(dmadev, "device returned bad EQ number %u\n", ceq->eqn);
		ohca_mark_dead(dev, "bad CREATE_EQ answer");
		err = -EIO;
		goto err_free_irq;
	}
	ohca_wr32(dev, OHCA_REG_EQ_DB(ceq->eqn), OHCA_EQ_DB_ARM);
	return 0;

err_free_irq:
	irq_set_affinity_hint(irq, NULL);
	free_irq(irq, ceq);
err_free_ring:
	dma_free_coherent(dmadev, size, eq->ring, eq->ring_dma);
	return err;
}

/**
 * ohca_comp_eqs_create() - create the completion EQs
 * @dev: the function
 *
 * One per online CPU, up to the spare MSI-X vectors and the device's EQ
 * limit (max_eq counts EQ 0). A device without the RDMA resource commands
 * gets none; the ib_device then cannot create CQs. If the device refuses
 * one after the first, the ones it made are used.
 *
 * Return: 0, or a negative errno if not even the first could be made.
 */
int ohca_comp_eqs_create(struct ohca_dev *dev)
{
	int max_eq = le32_to_cpu(dev->attr.max_eq);
	int want = min3((int)num_online_cpus(), dev->num_vectors - 2,
			max_eq - 1);
	int i, err = 0;

	dev->num_comp_eqs = 0;
	if (dev->abi_minor < 1) {
		dev_info(&dev->pdev->dev,
			 "interface 1.%u has no RDMA queues: no completion EQs\n",
			 dev->abi_minor);
		return 0;
	}
	for (i = 0; i < want; i++) {
		err = ohca_comp_eq_create(dev, &dev->comp_eqs[i], 2 + i);
		if (err)
			break;
		dev->num_comp_eqs++;
	}
	if (err == -EOPNOTSUPP && !i) {
		dev_info(&dev->pdev->dev,
			 "device has no completion EQs: RDMA queues unavailable\n");
		return 0;
	}
	if (err && (!i || test_bit(OHCA_FLAG_FATAL, &dev->flags)))
		return err;	/* the caller resets, then frees the ones made */
	if (err)
		dev_warn(&dev->pdev->dev,
			 "%d of %d completion EQs (next one failed: %d)\n",
			 i, want, err);
	return 0;
}

/**
 * ohca_comp_eqs_free() - free the completion EQs and their interrupts
 * @dev: the function
 *
 * Called after the device was reset: it no longer writes the rings.
 */
void ohca_comp_eqs_free(struct ohca_dev *dev)
{
	int i;

	for (i = dev->num_comp_eqs - 1; i >= 0; i--)
		ohca_comp_eq_free(dev, &dev->comp_eqs[i]);
	dev->num_comp_eqs = 0;
}
