// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca_core: PCI probe and remove, device bring-up, the PCI lifecycle
 * (function reset, AER, shutdown) and the RDMA function's auxiliary
 * device.
 */
#include <linux/dma-mapping.h>
#include <linux/etherdevice.h>
#include <linux/idr.h>
#include <linux/interrupt.h>
#include <linux/iopoll.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "ohca_core_priv.h"

#define OHCA_RESET_TIMEOUT_US	5000000
#define OHCA_READY_TIMEOUT_US	5000000

static const struct pci_device_id ohca_pci_ids[] = {
	{ PCI_DEVICE(OHCA_PCI_VENDOR_ID, OHCA_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, ohca_pci_ids);

/* Function reset: the device drops every ring and resource. */
static int ohca_dev_reset(struct ohca_dev *dev)
{
	u32 val;
	int err;

	ohca_wr32(dev, OHCA_REG_DEV_CTRL, OHCA_DEV_CTRL_RESET);
	err = readl_poll_timeout(dev->regs + OHCA_REG_DEV_STATUS, val,
				 val & OHCA_DEV_STATUS_RESET_DONE, 1000,
				 OHCA_RESET_TIMEOUT_US);
	if (err)
		dev_err(&dev->pdev->dev,
			"device reset did not complete (DEV_STATUS 0x%x)\n",
			val);
	return err;
}

static int ohca_dev_enable(struct ohca_dev *dev)
{
	u32 val;
	int err;

	ohca_wr32(dev, OHCA_REG_DEV_CTRL, OHCA_DEV_CTRL_ENABLE);
	err = readl_poll_timeout(dev->regs + OHCA_REG_DEV_STATUS, val,
				 val & (OHCA_DEV_STATUS_READY |
					OHCA_DEV_STATUS_FATAL),
				 1000, OHCA_READY_TIMEOUT_US);
	if (err) {
		dev_err(&dev->pdev->dev,
			"device did not become ready (DEV_STATUS 0x%x)\n", val);
		return err;
	}
	if (val & OHCA_DEV_STATUS_FATAL) {
		dev_err(&dev->pdev->dev,
			"device refused to start: fatal code %u\n",
			ohca_rd32(dev, OHCA_REG_FATAL_CODE));
		return -EIO;
	}
	return 0;
}

static int ohca_check_identity(struct ohca_dev *dev)
{
	struct device *d = &dev->pdev->dev;
	u32 magic, abi;

	magic = ohca_rd32(dev, OHCA_REG_MAGIC);
	if (magic != OHCA_MAGIC) {
		dev_err(d, "bad magic 0x%08x (expected 0x%08x): not an ohca device\n",
			magic, OHCA_MAGIC);
		return -ENODEV;
	}
	abi = ohca_rd32(dev, OHCA_REG_ABI_VERSION);
	if ((abi >> 16) != OHCA_ABI_MAJOR) {
		dev_err(d, "device interface %u.%u is not supported by this driver (%u.%u)\n",
			abi >> 16, abi & 0xffff, OHCA_ABI_MAJOR, OHCA_ABI_MINOR);
		return -ENODEV;
	}
	dev->abi_minor = abi & 0xffff;
	dev->caps = ohca_rd32(dev, OHCA_REG_CAPS);
	dev->fw_version = ohca_rd32(dev, OHCA_REG_FW_VERSION);
	if (!(dev->caps & OHCA_CAP_ETH)) {
		dev_err(d, "device lacks the Ethernet capability (caps 0x%x)\n",
			dev->caps);
		return -ENODEV;
	}
	dev_info(d, "interface %u.%u, firmware %u.%u.%u, caps 0x%x\n",
		 abi >> 16, abi & 0xffff, dev->fw_version >> 16,
		 (dev->fw_version >> 8) & 0xff, dev->fw_version & 0xff,
		 dev->caps);
	return 0;
}

static int ohca_query_caps(struct ohca_dev *dev)
{
	struct ohca_query_port_out port;
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_QUERY_DEVICE,
		.out = &dev->attr,
		.out_len = sizeof(dev->attr),
	};
	int err;

	err = ohca_cmd_exec(dev, &args);
	if (err)
		return err;
	err = ohca_cmd_query_port(dev, &port);
	if (err)
		return err;

	/* Bytes 48.. of the answer are zero on an Ethernet port. */
	dev->ib_port = port.link_layer == OHCA_LINK_IB &&
		       (le32_to_cpu(dev->attr.dev_caps) & OHCA_DEV_CAP_IB_LINK);
	if (port.link_layer > OHCA_LINK_IB)
		dev_warn(&dev->pdev->dev, "unknown link layer %u: Ethernet\n",
			 port.link_layer);
	ether_addr_copy(dev->port_mac, port.mac);
	dev->port_mtu = clamp_t(u32, le32_to_cpu(port.mtu), OHCA_ETH_MIN_MTU,
				OHCA_ETH_MAX_MTU);
	dev->max_mtu = clamp_t(u32, le32_to_cpu(port.max_mtu),
			       OHCA_ETH_MIN_MTU, OHCA_ETH_MAX_MTU);
	dev->speed_mbps = le32_to_cpu(port.speed_mbps);
	dev->gid_tbl_len = le32_to_cpu(port.gid_table_len);
	dev->pkey_tbl_len = le32_to_cpu(port.pkey_table_len);
	atomic_set(&dev->link_up, port.state == OHCA_PORT_ACTIVE);
	atomic_set(&dev->port_state, port.state);
	atomic_set(&dev->port_changes, 0);
	ohca_eq0_fit_limits(dev);
	if (!dev->ib_port && !is_valid_ether_addr(dev->port_mac)) {
		dev_err(&dev->pdev->dev, "device reports invalid MAC %pM\n",
			dev->port_mac);
		return -EINVAL;
	}
	return 0;
}

static DEFINE_IDA(ohca_aux_ida);

static void ohca_aux_release(struct device *d)
{
	struct ohca_aux_dev *aux = container_of(d, struct ohca_aux_dev,
						adev.dev);

	ida_free(&ohca_aux_ida, aux->adev.id);
	kfree(aux);
}

/*
 * The RDMA function's auxiliary device, ohca_core.rdma.<n>: adding it
 * binds the RDMA driver if it is loaded (and lets udev load it).
 */
static int ohca_aux_add(struct ohca_dev *dev)
{
	struct ohca_aux_dev *aux;
	int err;

	aux = kzalloc(sizeof(*aux), GFP_KERNEL);
	if (!aux)
		return -ENOMEM;
	err = ida_alloc(&ohca_aux_ida, GFP_KERNEL);
	if (err < 0) {
		kfree(aux);
		return err;
	}
	aux->dev = dev;
	aux->adev.id = err;
	aux->adev.name = OHCA_AUX_RDMA;
	aux->adev.dev.parent = &dev->pdev->dev;
	aux->adev.dev.release = ohca_aux_release;
	err = auxiliary_device_init(&aux->adev);
	if (err) {
		ida_free(&ohca_aux_ida, aux->adev.id);
		kfree(aux);
		return err;
	}
	err = auxiliary_device_add(&aux->adev);
	if (err) {
		auxiliary_device_uninit(&aux->adev);	/* frees it */
		return err;
	}
	dev->aux = aux;
	return 0;
}

/* Unbinds the RDMA driver: its ib_device is gone on return. */
static void ohca_aux_del(struct ohca_dev *dev)
{
	auxiliary_device_delete(&dev->aux->adev);
	auxiliary_device_uninit(&dev->aux->adev);
	dev->aux = NULL;
}

static int ohca_map_bars(struct ohca_dev *dev)
{
	struct pci_dev *pdev = dev->pdev;
	int err;

	if (!(pci_resource_flags(pdev, OHCA_BAR_REGS) & IORESOURCE_MEM) ||
	    pci_resource_len(pdev, OHCA_BAR_REGS) < OHCA_REGS_BAR_SIZE ||
	    !(pci_resource_flags(pdev, OHCA_BAR_DB) & IORESOURCE_MEM) ||
	    pci_resource_len(pdev, OHCA_BAR_DB) < OHCA_DB_PAGE_SIZE) {
		dev_err(&pdev->dev, "unexpected BAR layout\n");
		return -ENODEV;
	}

	err = pci_request_mem_regions(pdev, DRV_NAME);
	if (err)
		return err;

	dev->regs = pci_iomap(pdev, OHCA_BAR_REGS, OHCA_REGS_BAR_SIZE);
	if (!dev->regs) {
		pci_release_mem_regions(pdev);
		return -ENOMEM;
	}
	/* The kernel's doorbell page 0, for kernel CQs and QPs. */
	dev->kdb = pci_iomap_range(pdev, OHCA_BAR_DB, 0, OHCA_DB_PAGE_SIZE);
	if (!dev->kdb) {
		pci_iounmap(pdev, dev->regs);
		pci_release_mem_regions(pdev);
		return -ENOMEM;
	}
	dev->db_bar_addr = pci_resource_start(pdev, OHCA_BAR_DB);
	dev->db_bar_len = pci_resource_len(pdev, OHCA_BAR_DB);
	return 0;
}

static void ohca_unmap_bars(struct ohca_dev *dev)
{
	pci_iounmap(dev->pdev, dev->kdb);
	pci_iounmap(dev->pdev, dev->regs);
	pci_release_mem_regions(dev->pdev);
}

static int ohca_alloc_vectors(struct ohca_dev *dev)
{
	u32 hw = ohca_rd32(dev, OHCA_REG_NUM_MSIX);
	int max = clamp_t(u32, hw, 2, OHCA_NUM_MSIX);
	int n;

	n = pci_alloc_irq_vectors(dev->pdev, 2, max, PCI_IRQ_MSIX);
	if (n < 0) {
		dev_err(&dev->pdev->dev,
			"cannot allocate MSI-X vectors (device has %u): %d\n",
			hw, n);
		return n;
	}
	dev->num_vectors = n;
	return 0;
}

/*
 * Bring the function up from scratch: at probe and again after a function
 * reset, which the driver rides through by tearing everything down and
 * starting over (the ib_device cannot be registered twice). Sets the PCI
 * driver data on success only. Each step may be replaced by an injected
 * failure (ohca_init_fault(), the debugfs fail_init hook).
 */
static struct ohca_dev *ohca_dev_init(struct pci_dev *pdev)
{
	unsigned int step = 0;
	struct ohca_dev *dev;
	int err;

	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return ERR_PTR(-ENOMEM);
	dev->pdev = pdev;

	err = ohca_init_fault(dev, &step) ?: pci_enable_device_mem(pdev);
	if (err) {
		dev_err(&pdev->dev, "cannot enable the PCI device: %d\n", err);
		goto err_dealloc;
	}
	err = ohca_init_fault(dev, &step) ?:
	      dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(64));
	if (err) {
		dev_err(&pdev->dev, "no usable 64-bit DMA: %d\n", err);
		goto err_disable;
	}
	/*
	 * The device takes page lists, not scatter lists: without this the
	 * 64 KiB default caps umem segments and so the MR page size.
	 */
	dma_set_max_seg_size(&pdev->dev, UINT_MAX);
	pci_set_master(pdev);

	err = ohca_init_fault(dev, &step) ?: ohca_map_bars(dev);
	if (err)
		goto err_clear_master;
	err = ohca_init_fault(dev, &step) ?: ohca_check_identity(dev);
	if (err)
		goto err_unmap;
	err = ohca_init_fault(dev, &step) ?: ohca_dev_reset(dev);
	if (err)
		goto err_unmap;
	err = ohca_init_fault(dev, &step) ?: ohca_alloc_vectors(dev);
	if (err)
		goto err_unmap;
	err = ohca_init_fault(dev, &step) ?: ohca_eq0_init(dev);
	if (err)
		goto err_free_vectors;
	err = ohca_init_fault(dev, &step) ?: ohca_cmdq_init(dev);
	if (err)
		goto err_reset_eq;
	err = ohca_init_fault(dev, &step) ?: ohca_dev_enable(dev);
	if (err)
		goto err_reset_cmdq;
	err = ohca_init_fault(dev, &step) ?: ohca_query_caps(dev);
	if (err)
		goto err_reset_cmdq;
	err = ohca_init_fault(dev, &step) ?: ohca_comp_eqs_create(dev);
	if (err)
		goto err_comp_eqs;	/* it may have made some */
	/*
	 * An InfiniBand port carries no Ethernet frames: no net_device there
	 * (ib_ipoib makes the port's interface), nor its rings and interrupt.
	 */
	err = ohca_init_fault(dev, &step) ?:
	      (dev->ib_port ? 0 : ohca_netdev_create(dev));
	if (err)
		goto err_comp_eqs;
	ohca_debugfs_init(dev);
	err = ohca_init_fault(dev, &step) ?: ohca_aux_add(dev);
	if (err)
		goto err_debugfs;
	pci_set_drvdata(pdev, dev);
	/* What slot_reset restores after an AER reset of the link. */
	pci_save_state(pdev);

	if (dev->ib_port)	/* no MAC: the SM addresses it by GUID and LID */
		dev_info(&pdev->dev, "%s ready, node GUID %016llx, RDMA function %s\n",
			 ohca_port_name(dev), le64_to_cpu(dev->attr.node_guid),
			 dev_name(&dev->aux->adev.dev));
	else
		dev_info(&pdev->dev, "%s ready, MAC %pM, node GUID %016llx, RDMA function %s\n",
			 ohca_port_name(dev), dev->port_mac,
			 le64_to_cpu(dev->attr.node_guid), dev_name(&dev->aux->adev.dev));
	return dev;

err_debugfs:
	ohca_debugfs_cleanup(dev);
	ohca_netdev_destroy(dev);
err_comp_eqs:
	ohca_dev_reset(dev);
	ohca_comp_eqs_free(dev);
	ohca_cmdq_destroy(dev);
	goto err_eq;
err_reset_cmdq:
	ohca_dev_reset(dev);
	ohca_cmdq_destroy(dev);
	goto err_eq;
err_reset_eq:
	ohca_dev_reset(dev);
err_eq:
	ohca_eq0_destroy(dev);
err_free_vectors:
	pci_free_irq_vectors(pdev);
err_unmap:
	ohca_unmap_bars(dev);
err_clear_master:
	pci_clear_master(pdev);
err_disable:
	pci_disable_device(pdev);
err_dealloc:
	kfree(dev);
	return ERR_PTR(err);
}

/*
 * The reverse of ohca_dev_init(). Deleting the auxiliary device unbinds
 * the RDMA driver first, which unregisters the ib_device: open user
 * contexts are disassociated (they get IB_EVENT_DEVICE_FATAL and their
 * resources are destroyed) instead of waiting for the processes.
 */
static void ohca_dev_teardown(struct ohca_dev *dev)
{
	struct pci_dev *pdev = dev->pdev;

	pci_set_drvdata(pdev, NULL);
	ohca_aux_del(dev);
	ohca_debugfs_cleanup(dev);
	ohca_netdev_destroy(dev);
	/* Stop all device DMA before its buffers go away. */
	ohca_dev_reset(dev);
	ohca_comp_eqs_free(dev);
	ohca_cmdq_destroy(dev);
	ohca_eq0_destroy(dev);
	pci_free_irq_vectors(pdev);
	ohca_unmap_bars(dev);
	pci_clear_master(pdev);
	pci_disable_device(pdev);
	WARN_ON(rcu_access_pointer(dev->events));
	kfree(dev);
}

static int ohca_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	return PTR_ERR_OR_ZERO(ohca_dev_init(pdev));
}

/* No driver data: a reset the device did not come back from. */
static void ohca_remove(struct pci_dev *pdev)
{
	struct ohca_dev *dev = pci_get_drvdata(pdev);

	if (dev)
		ohca_dev_teardown(dev);
}

/*
 * Function reset (sysfs "reset", VFIO, ...), with the device lock held:
 * everything goes down as on removal before the PCI core saves the config
 * space and resets the function.
 */
static void ohca_reset_prepare(struct pci_dev *pdev)
{
	struct ohca_dev *dev = pci_get_drvdata(pdev);

	if (!dev)
		return;
	dev_info(&pdev->dev, "function reset: stopping %s and the RDMA function\n",
		 ohca_port_name(dev));
	ohca_dev_teardown(dev);
}

/*
 * After the reset the device is brought up from scratch. If that fails
 * the function stays without driver data and with nothing allocated:
 * removal is then a no-op, and a further reset tries again.
 */
static void ohca_reset_done(struct pci_dev *pdev)
{
	struct ohca_dev *dev = ohca_dev_init(pdev);

	if (IS_ERR(dev))
		dev_err(&pdev->dev,
			"device did not come back after the function reset (%pe); it stays down until the next reset or driver reload\n",
			dev);
}

/*
 * AER: the link or the function reported an error. The device may not
 * answer any more, so it is marked dead first (no command is sent and no
 * DMA is allowed during the teardown), then everything goes down as for a
 * function reset; slot_reset brings it up again with the reset_done code.
 */
static pci_ers_result_t ohca_error_detected(struct pci_dev *pdev,
					    pci_channel_state_t state)
{
	struct ohca_dev *dev = pci_get_drvdata(pdev);

	dev_err(&pdev->dev, "PCI error detected (channel state %d)\n", state);
	if (dev) {
		ohca_mark_dead(dev, "PCI error");
		ohca_dev_teardown(dev);
	}
	if (state == pci_channel_io_perm_failure)
		return PCI_ERS_RESULT_DISCONNECT;
	return PCI_ERS_RESULT_NEED_RESET;
}

static pci_ers_result_t ohca_slot_reset(struct pci_dev *pdev)
{
	struct ohca_dev *dev;

	pci_restore_state(pdev);
	dev = ohca_dev_init(pdev);
	if (IS_ERR(dev)) {
		dev_err(&pdev->dev,
			"device did not come back after the PCI error reset (%pe)\n",
			dev);
		return PCI_ERS_RESULT_DISCONNECT;
	}
	return PCI_ERS_RESULT_RECOVERED;
}

static void ohca_resume(struct pci_dev *pdev)
{
	dev_info(&pdev->dev, "recovered from the PCI error\n");
}

static const struct pci_error_handlers ohca_err_handlers = {
	.error_detected	= ohca_error_detected,
	.slot_reset	= ohca_slot_reset,
	.resume		= ohca_resume,
	.reset_prepare	= ohca_reset_prepare,
	.reset_done	= ohca_reset_done,
};

/*
 * Power-off, reboot and kexec: the next kernel must not find the device
 * still writing into memory it reuses. Objects are not torn down (no
 * command is sent); stopping DMA and interrupts is enough.
 */
static void ohca_shutdown(struct pci_dev *pdev)
{
	struct ohca_dev *dev = pci_get_drvdata(pdev);

	if (!dev)
		return;
	ohca_mark_dead(dev, NULL);
	ohca_dev_reset(dev);
	dev_info(&pdev->dev, "shutdown: device reset, DMA stopped\n");
}

static struct pci_driver ohca_pci_driver = {
	.name		= DRV_NAME,
	.id_table	= ohca_pci_ids,
	.probe		= ohca_probe,
	.remove		= ohca_remove,
	.shutdown	= ohca_shutdown,
	.err_handler	= &ohca_err_handlers,
};

static int __init ohca_init(void)
{
	int err;

	ohca_debugfs_module_init();
	err = pci_register_driver(&ohca_pci_driver);
	if (err)
		ohca_debugfs_module_exit();
	return err;
}

static void __exit ohca_exit(void)
{
	pci_unregister_driver(&ohca_pci_driver);
	ohca_debugfs_module_exit();
}

module_init(ohca_init);
module_exit(ohca_exit);

MODULE_DESCRIPTION("ohca emulated RoCEv2 NIC: PCI function, command and event queues, Ethernet");
MODULE_AUTHOR("The ohca authors");
MODULE_LICENSE("Dual BSD/GPL");
