// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca_ib: the RDMA driver. It binds to the auxiliary device
 * "ohca_core.rdma.<n>" that ohca_core.ko creates for each function,
 * registers the ib_device and takes the RDMA objects' events from the
 * core. Unbinding (rmmod ohca_ib, or the core removing or resetting the
 * function) unregisters the ib_device; the function's net_device stays.
 */
#include <linux/module.h>

#include "ohca_ib.h"

static void ohca_ib_comp_event(void *priv, u32 cqn)
{
	ohca_cq_event(priv, cqn, false, 0);
}

static void ohca_ib_async_event(void *priv, const struct ohca_eqe *eqe)
{
	struct ohca_ibdev *dev = priv;
	u32 num = le32_to_cpu(eqe->param0);
	u16 code = le16_to_cpu(eqe->code);

	switch (eqe->type) {
	case OHCA_EQE_QP_EVENT:
		ohca_qp_event(dev, num, code);
		break;
	case OHCA_EQE_CQ_ERROR:
		ohca_cq_event(dev, num, true, code);
		break;
	case OHCA_EQE_SRQ_EVENT:
		ohca_srq_event(dev, num, code);
		break;
	case OHCA_EQE_PAGE_FAULT:
		ohca_odp_fault_event(dev, eqe);
		break;
	default:
		break;
	}
}

static void ohca_ib_port_change(void *priv)
{
	ohca_port_update(priv);
}

static void ohca_ib_fatal(void *priv)
{
	struct ohca_ibdev *dev = priv;
	struct ib_event event = {
		.device = &dev->ibdev,
		.event = IB_EVENT_DEVICE_FATAL,
		.element.port_num = 1,
	};

	if (test_bit(OHCA_IB_REGISTERED, &dev->flags))
		ib_dispatch_event(&event);
}

static const struct ohca_event_ops ohca_ib_event_ops = {
	.comp = ohca_ib_comp_event,
	.async = ohca_ib_async_event,
	.port_change = ohca_ib_port_change,
	.fatal = ohca_ib_fatal,
};

static int ohca_ib_register(struct ohca_ibdev *dev)
{
	struct ohca_dev *cdev = dev->cdev;
	struct ib_device *ibdev = &dev->ibdev;
	int err;

	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = max(1, cdev->num_comp_eqs);
	/* The PCI function: libibverbs matches the provider by its modalias. */
	ibdev->dev.parent = &cdev->pdev->dev;
	ibdev->node_guid = cpu_to_be64(le64_to_cpu(cdev->attr.node_guid));
	strscpy(ibdev->node_desc, cdev->ib_port ? "ohca InfiniBand HCA" :
		"ohca RoCEv2 HCA", sizeof(ibdev->node_desc));
	ib_set_device_ops(ibdev, &ohca_dev_ops);
	ib_set_device_ops(ibdev, &ohca_stats_ops);
	if (ohca_has_rss(dev))
		ib_set_device_ops(ibdev, &ohca_rss_ops);
	if (IS_ENABLED(CONFIG_INFINIBAND_USER_ACCESS))
		ibdev->driver_def = ohca_uapi_defs;

	/* An InfiniBand port has no net_device (IPoIB makes one on it). */
	err = cdev->netdev ? ib_device_set_netdev(ibdev, cdev->netdev, 1) : 0;
	if (err)
		return err;
	dev->port_active = ohca_port_active(dev);
	err = ib_register_device(ibdev, "ohca%d", &cdev->pdev->dev);
	if (err) {
		dev_err(&cdev->pdev->dev,
			"cannot register the RDMA device: %d\n", err);
		/* Drop the netdev reference, or unregistering it would hang. */
		if (cdev->netdev)
			ib_device_set_netdev(ibdev, NULL, 1);
		return err;
	}

	/*
	 * Pass on a port change the core may have missed while registering
	 * (ohca_port_update() orders it with one from EQ 0's interrupt).
	 */
	set_bit(OHCA_IB_REGISTERED, &dev->flags);
	ohca_port_update(dev);
	return 0;
}

static void ohca_ib_unregister(struct ohca_ibdev *dev)
{
	/*
	 * No port or fatal event may reach the core once unregistering
	 * starts; the objects' events go on until they are destroyed.
	 */
	clear_bit(OHCA_IB_REGISTERED, &dev->flags);
	synchronize_rcu();
	ib_unregister_device(&dev->ibdev);
}

static void ohca_ib_free(struct ohca_ibdev *dev)
{
	WARN_ON(!xa_empty(&dev->qp_xa) || !xa_empty(&dev->cq_xa) ||
		!xa_empty(&dev->srq_xa));
	xa_destroy(&dev->odp_xa);
	xa_destroy(&dev->srq_xa);
	xa_destroy(&dev->qp_xa);
	xa_destroy(&dev->cq_xa);
	ib_dealloc_device(&dev->ibdev);
}

/*
 * The events are taken before the ib_device registers: registration
 * runs the RDMA core's clients (ib_mad, rdma_cm), which create CQs and
 * QPs and wait for their completions.
 */
static int ohca_ib_probe(struct auxiliary_device *adev,
			 const struct auxiliary_device_id *id)
{
	struct ohca_dev *cdev = ohca_aux_to_dev(adev);
	struct ohca_ibdev *dev;
	int err;

	dev = ib_alloc_device(ohca_ibdev, ibdev);
	if (!dev)
		return -ENOMEM;
	dev->cdev = cdev;
	spin_lock_init(&dev->port_lock);
	mutex_init(&dev->port_cap_lock);
	xa_init_flags(&dev->cq_xa, XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&dev->qp_xa, XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&dev->srq_xa, XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&dev->odp_xa, XA_FLAGS_LOCK_IRQ);
	ohca_quota_init(dev);
	dev->events.ops = &ohca_ib_event_ops;
	dev->events.priv = dev;

	err = ohca_register_events(cdev, &dev->events);
	if (err)
		goto err_free;
	err = ohca_ib_register(dev);
	if (err)
		goto err_events;
	auxiliary_set_drvdata(adev, dev);
	dev_info(&adev->dev, "%s on %s of %s\n", dev_name(&dev->ibdev.dev),
		 ohca_port_name(cdev), pci_name(cdev->pdev));
	return 0;

err_events:
	ohca_unregister_events(cdev);
err_free:
	ohca_ib_free(dev);
	return err;
}

/*
 * Unregistering the ib_device disassociates open user contexts (they get
 * IB_EVENT_DEVICE_FATAL and their resources are destroyed) and tells
 * kernel clients IB_EVENT_DEVICE_REMOVAL; after the events are given
 * back no callback runs any more.
 */
static void ohca_ib_remove(struct auxiliary_device *adev)
{
	struct ohca_ibdev *dev = auxiliary_get_drvdata(adev);

	ohca_ib_unregister(dev);
	ohca_odp_drain(dev);
	ohca_unregister_events(dev->cdev);
	ohca_ib_free(dev);
}

static const struct auxiliary_device_id ohca_ib_id_table[] = {
	{ .name = "ohca_core." OHCA_AUX_RDMA },
	{ }
};
MODULE_DEVICE_TABLE(auxiliary, ohca_ib_id_table);

static struct auxiliary_driver ohca_ib_driver = {
	.name		= "rdma",
	.probe		= ohca_ib_probe,
	.remove		= ohca_ib_remove,
	.id_table	= ohca_ib_id_table,
};
module_auxiliary_driver(ohca_ib_driver);

MODULE_DESCRIPTION("ohca emulated RoCEv2 NIC: RDMA (ib_device) driver");
MODULE_AUTHOR("The ohca authors");
MODULE_LICENSE("Dual BSD/GPL");
