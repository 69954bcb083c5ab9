// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca: the Ethernet personality (net_device, one TX and one RX ring, NAPI).
 *
 * Ring ownership: ohca_start_xmit() runs under the netdev TX lock and is
 * the only writer of tx.pi; the NAPI poll is the only writer of tx.ci and
 * of everything in the RX ring. The two sides read each other's index
 * with READ_ONCE() and the stop/wake handshake uses smp_mb() on both
 * sides. Open and stop run under RTNL with NAPI and the queue disabled.
 */
#include <linux/dma-mapping.h>
#include <linux/etherdevice.h>
#include <linux/ethtool.h>
#include <linux/if_vlan.h>
#include <linux/interrupt.h>

#include "ohca_core_priv.h"

static struct ohca_dev *ohca_ndev_to_dev(struct net_device *ndev)
{
	struct ohca_netdev_priv *priv = netdev_priv(ndev);

	return priv->dev;
}

/* Receive buffer size: the largest frame at the current MTU. */
static u32 ohca_rx_buf_len(struct net_device *ndev)
{
	return ndev->mtu + ETH_HLEN + VLAN_HLEN;
}

static u32 ohca_tx_free(struct ohca_eth_ring *ring)
{
	return ring->size - (READ_ONCE(ring->pi) - READ_ONCE(ring->ci));
}

static int ohca_ring_alloc(struct ohca_dev *dev, struct ohca_eth_ring *ring,
			   u32 log_size)
{
	ring->log_size = log_size;
	ring->size = BIT(log_size);
	ring->pi = 0;
	ring->ci = 0;
	ring->skb = kcalloc(ring->size, sizeof(*ring->skb), GFP_KERNEL);
	if (!ring->skb)
		return -ENOMEM;
	ring->dma = kcalloc(ring->size, sizeof(*ring->dma), GFP_KERNEL);
	if (!ring->dma)
		goto err_free_skb;
	ring->desc = dma_alloc_coherent(&dev->pdev->dev,
					ring->size * sizeof(*ring->desc),
					&ring->desc_dma, GFP_KERNEL);
	if (!ring->desc)
		goto err_free_dma;
	return 0;

err_free_dma:
	kfree(ring->dma);
err_free_skb:
	kfree(ring->skb);
	return -ENOMEM;
}

static void ohca_ring_free(struct ohca_dev *dev, struct ohca_eth_ring *ring)
{
	dma_free_coherent(&dev->pdev->dev, ring->size * sizeof(*ring->desc),
			  ring->desc, ring->desc_dma);
	kfree(ring->dma);
	kfree(ring->skb);
}

static int ohca_create_ring(struct ohca_dev *dev, struct ohca_eth_ring *ring,
			    enum ohca_eth_ring_type type)
{
	struct ohca_create_eth_ring_in in = {
		.type = type,
		.log_size = ring->log_size,
		.base = cpu_to_le64(ring->desc_dma),
	};
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_CREATE_ETH_RING,
		.in = &in,
		.in_len = sizeof(in),
	};

	return ohca_cmd_exec(dev, &args);
}

static int ohca_destroy_ring(struct ohca_dev *dev, enum ohca_eth_ring_type type)
{
	struct ohca_destroy_eth_ring_in in = { .type = type };
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_DESTROY_ETH_RING,
		.in = &in,
		.in_len = sizeof(in),
	};

	return ohca_cmd_exec(dev, &args);
}

static void ohca_rx_post(struct ohca_eth_ring *ring, u32 idx, u32 buf_len)
{
	struct ohca_eth_desc *desc = &ring->desc[idx];

	desc->addr = cpu_to_le64(ring->dma[idx]);
	desc->len = cpu_to_le16(buf_len);
	desc->flags = 0;
	desc->rsvd = 0;
}

static int ohca_rx_alloc_buf(struct ohca_dev *dev, u32 buf_len,
			     struct sk_buff **skbp, dma_addr_t *dmap)
{
	struct sk_buff *skb;
	dma_addr_t dma;

	skb = netdev_alloc_skb_ip_align(dev->netdev, buf_len);
	if (!skb)
		return -ENOMEM;
	dma = dma_map_single(&dev->pdev->dev, skb->data, buf_len,
			     DMA_FROM_DEVICE);
	if (dma_mapping_error(&dev->pdev->dev, dma)) {
		dev_kfree_skb_any(skb);
		return -ENOMEM;
	}
	*skbp = skb;
	*dmap = dma;
	return 0;
}

static void ohca_rx_free_bufs(struct ohca_dev *dev, u32 buf_len)
{
	struct ohca_eth_ring *ring = &dev->rx;
	u32 i;

	for (i = 0; i < ring->size; i++) {
		if (!ring->skb[i])
			continue;
		dma_unmap_single(&dev->pdev->dev, ring->dma[i], buf_len,
				 DMA_FROM_DEVICE);
		dev_kfree_skb_any(ring->skb[i]);
		ring->skb[i] = NULL;
	}
}

static int ohca_rx_fill(struct ohca_dev *dev, u32 buf_len)
{
	struct ohca_eth_ring *ring = &dev->rx;
	u32 i;
	int err;

	for (i = 0; i < ring->size; i++) {
		err = ohca_rx_alloc_buf(dev, buf_len, &ring->skb[i],
					&ring->dma[i]);
		if (err) {
			ohca_rx_free_bufs(dev, buf_len);
			return err;
		}
		ohca_rx_post(ring, i, buf_len);
	}
	return 0;
}

static void ohca_tx_free_bufs(struct ohca_dev *dev)
{
	struct ohca_eth_ring *ring = &dev->tx;
	u32 i;

	/* The frames still in the ring are dropped: BQL starts over. */
	netdev_reset_queue(dev->netdev);
	for (i = 0; i < ring->size; i++) {
		if (!ring->skb[i])
			continue;
		dma_unmap_single(&dev->pdev->dev, ring->dma[i],
				 ring->skb[i]->len, DMA_TO_DEVICE);
		dev_kfree_skb_any(ring->skb[i]);
		ring->skb[i] = NULL;
	}
}

static void ohca_tx_reclaim(struct ohca_dev *dev, int budget)
{
	struct ohca_eth_ring *ring = &dev->tx;
	u32 mask = ring->size - 1;
	u32 pi = READ_ONCE(ring->pi);
	u32 ci = ring->ci;
	u64 packets = 0, bytes = 0, errors = 0;
	unsigned int bql_bytes = 0;

	while (ci != pi) {
		u32 idx = ci & mask;
		struct sk_buff *skb = ring->skb[idx];
		u16 flags = le16_to_cpu(READ_ONCE(ring->desc[idx].flags));

		if (!(flags & OHCA_ETH_DESC_DONE))
			break;
		dma_rmb();
		dma_unmap_single(&dev->pdev->dev, ring->dma[idx], skb->len,
				 DMA_TO_DEVICE);
		bql_bytes += skb->len;
		if (flags & OHCA_ETH_DESC_ERROR) {
			errors++;
		} else {
			packets++;
			bytes += skb->len;
		}
		ring->skb[idx] = NULL;
		napi_consume_skb(skb, budget);
		ci++;
	}
	if (ci == ring->ci)
		return;

	u64_stats_update_begin(&dev->tx_stats.syncp);
	dev->tx_stats.packets += packets;
	dev->tx_stats.bytes += bytes;
	dev->tx_stats.errors += errors;
	u64_stats_update_end(&dev->tx_stats.syncp);

	WRITE_ONCE(ring->ci, ci);
	/* BQL counts every retired frame, errors included, as sent. */
	netdev_completed_queue(dev->netdev, packets + errors, bql_bytes);
	/* Publish ci before looking at the queue state (pairs with xmit). */
	smp_mb();
	if (netif_queue_stopped(dev->netdev) &&
	    ohca_tx_free(ring) >= ring->size / 4)
		netif_wake_queue(dev->netdev);
}

static int ohca_rx_poll(struct ohca_dev *dev, int budget)
{
	struct ohca_eth_ring *ring = &dev->rx;
	struct net_device *ndev = dev->netdev;
	u32 buf_len = ohca_rx_buf_len(ndev);
	u32 mask = ring->size - 1;
	u64 packets = 0, bytes = 0, dropped = 0, errors = 0;
	int done = 0;

	while (done < budget) {
		u32 idx = ring->ci & mask;
		struct ohca_eth_desc *desc = &ring->desc[idx];
		u16 flags = le16_to_cpu(READ_ONCE(desc->flags));
		struct sk_buff *skb, *nskb;
		dma_addr_t ndma;
		u32 len;

		if (!(flags & OHCA_ETH_DESC_DONE))
			break;
		dma_rmb();
		len = le16_to_cpu(desc->len);

		if ((flags & OHCA_ETH_DESC_ERROR) || len < ETH_HLEN ||
		    len > buf_len) {
			errors++;
		} else if (ohca_rx_alloc_buf(dev, buf_len, &nskb, &ndma)) {
			/* Keep the old buffer in the ring, drop the frame. */
			dropped++;
		} else {
			skb = ring->skb[idx];
			dma_unmap_single(&dev->pdev->dev, ring->dma[idx],
					 buf_len, DMA_FROM_DEVICE);
			ring->skb[idx] = nskb;
			ring->dma[idx] = ndma;
			skb_put(skb, len);
			skb->protocol = eth_type_trans(skb, ndev);
			napi_gro_receive(&dev->napi, skb);
			packets++;
			bytes += len;
		}

		ohca_rx_post(ring, idx, buf_len);
		ring->ci++;
		ring->pi++;
		done++;
	}
	if (!done)
		return 0;

	ohca_wr32(dev, OHCA_REG_ETH_RX_PI, ring->pi & OHCA_RING_INDEX_MASK);

	u64_stats_update_begin(&dev->rx_stats.syncp);
	dev->rx_stats.packets += packets;
	dev->rx_stats.bytes += bytes;
	dev->rx_stats.dropped += dropped;
	dev->rx_stats.errors += errors;
	u64_stats_update_end(&dev->rx_stats.syncp);
	return done;
}

static int ohca_napi_poll(struct napi_struct *napi, int budget)
{
	struct ohca_dev *dev = container_of(napi, struct ohca_dev, napi);
	int done;

	ohca_tx_reclaim(dev, budget);
	done = ohca_rx_poll(dev, budget);
	/* The device masked the vector when it raised it; unmasking
	 * re-raises it for completions that arrived in between.
	 */
	if (done < budget && napi_complete_done(napi, done))
		ohca_wr32(dev, OHCA_REG_ETH_IRQ_MASK, 0);
	return done;
}

/**
 * ohca_eth_irq() - the Ethernet rings' interrupt
 * @irq: its vector (OHCA_MSIX_ETH)
 * @data: the function (struct ohca_dev)
 *
 * The work is done in NAPI.
 *
 * Return: IRQ_HANDLED.
 */
irqreturn_t ohca_eth_irq(int irq, void *data)
{
	struct ohca_dev *dev = data;

	napi_schedule_irqoff(&dev->napi);
	return IRQ_HANDLED;
}

static int ohca_eth_up(struct ohca_dev *dev)
{
	struct net_device *ndev = dev->netdev;
	u32 buf_len = ohca_rx_buf_len(ndev);
	int err;

	err = ohca_ring_alloc(dev, &dev->tx, OHCA_ETH_TX_LOG);
	if (err)
		return err;
	err = ohca_ring_alloc(dev, &dev->rx, OHCA_ETH_RX_LOG);
	if (err)
		goto err_free_tx;
	err = ohca_rx_fill(dev, buf_len);
	if (err)
		goto err_free_rx;
	err = ohca_create_ring(dev, &dev->tx, OHCA_ETH_RING_TX);
	if (err)
		goto err_free_rx_bufs;
	err = ohca_create_ring(dev, &dev->rx, OHCA_ETH_RING_RX);
	if (err)
		goto err_destroy_tx;

	napi_enable(&dev->napi);
	dev->rx.pi = dev->rx.size;
	ohca_wr32(dev, OHCA_REG_ETH_RX_PI, dev->rx.pi & OHCA_RING_INDEX_MASK);
	ohca_wr32(dev, OHCA_REG_ETH_IRQ_MASK, 0);
	netif_start_queue(ndev);
	dev->eth_up = true;
	return 0;

err_destroy_tx:
	if (ohca_destroy_ring(dev, OHCA_ETH_RING_TX) == -ETIMEDOUT)
		return err;	/* the device may still own the ring: leak it */
err_free_rx_bufs:
	ohca_rx_free_bufs(dev, buf_len);
err_free_rx:
	ohca_ring_free(dev, &dev->rx);
err_free_tx:
	ohca_ring_free(dev, &dev->tx);
	return err;
}

static void ohca_eth_down(struct ohca_dev *dev)
{
	struct net_device *ndev = dev->netdev;
	int err_rx, err_tx;

	/* Down after a failed restart (MTU change): nothing to undo. */
	if (!dev->eth_up)
		return;
	dev->eth_up = false;

	napi_disable(&dev->napi);
	netif_tx_disable(ndev);
	ohca_wr32(dev, OHCA_REG_ETH_IRQ_MASK, 1);

	err_rx = ohca_destroy_ring(dev, OHCA_ETH_RING_RX);
	err_tx = ohca_destroy_ring(dev, OHCA_ETH_RING_TX);

	/* A ring whose destruction timed out may still be in use by the
	 * device: leaking it is the only safe choice.
	 */
	if (err_rx != -ETIMEDOUT) {
		ohca_rx_free_bufs(dev, ohca_rx_buf_len(ndev));
		ohca_ring_free(dev, &dev->rx);
	} else {
		netdev_err(ndev, "RX ring leaked: the device did not release it\n");
	}
	if (err_tx != -ETIMEDOUT) {
		ohca_tx_free_bufs(dev);
		ohca_ring_free(dev, &dev->tx);
	} else {
		netdev_err(ndev, "TX ring leaked: the device did not release it\n");
	}
}

static int ohca_open(struct net_device *ndev)
{
	struct ohca_dev *dev = ohca_ndev_to_dev(ndev);
	int err;

	err = ohca_eth_up(dev);
	if (!err)
		ohca_port_changed(dev);	/* the RoCE port follows */
	return err;
}

static int ohca_stop(struct net_device *ndev)
{
	struct ohca_dev *dev = ohca_ndev_to_dev(ndev);

	ohca_eth_down(dev);
	ohca_port_changed(dev);	/* the RoCE port follows */
	return 0;
}

static netdev_tx_t ohca_start_xmit(struct sk_buff *skb, struct net_device *ndev)
{
	struct ohca_dev *dev = ohca_ndev_to_dev(ndev);
	struct ohca_eth_ring *ring = &dev->tx;
	struct ohca_eth_desc *desc;
	unsigned int len = skb->len;
	dma_addr_t dma;
	u32 idx;

	/* The queue stops before the ring fills (below), so a full ring
	 * here is a driver bug, not flow control.
	 */
	if (unlikely(!ohca_tx_free(ring))) {
		netif_stop_queue(ndev);
		netdev_err_once(ndev, "xmit with a full TX ring\n");
		return NETDEV_TX_BUSY;
	}
	if (unlikely(skb->len > OHCA_ETH_MAX_FRAME))
		goto drop;
	dma = dma_map_single(&dev->pdev->dev, skb->data, skb->len,
			     DMA_TO_DEVICE);
	if (unlikely(dma_mapping_error(&dev->pdev->dev, dma)))
		goto drop;

	idx = ring->pi & (ring->size - 1);
	ring->skb[idx] = skb;
	ring->dma[idx] = dma;
	desc = &ring->desc[idx];
	desc->addr = cpu_to_le64(dma);
	desc->len = cpu_to_le16(skb->len);
	desc->flags = 0;
	desc->rsvd = 0;
	skb_tx_timestamp(skb);

	WRITE_ONCE(ring->pi, ring->pi + 1);

	if (unlikely(!ohca_tx_free(ring))) {
		netif_stop_queue(ndev);
		/* Pairs with the barrier in ohca_tx_reclaim(). */
		smp_mb();
		if (ohca_tx_free(ring) >= ring->size / 4)
			netif_start_queue(ndev);
	}
	/*
	 * One doorbell for a batch: the stack says more frames follow
	 * (xmit_more) unless the queue just stopped, by BQL or a full ring.
	 * writel() orders the descriptors before it.
	 */
	if (__netdev_tx_sent_queue(netdev_get_tx_queue(ndev, 0), len,
				   netdev_xmit_more()))
		ohca_wr32(dev, OHCA_REG_ETH_TX_PI,
			  ring->pi & OHCA_RING_INDEX_MASK);
	return NETDEV_TX_OK;

drop:
	atomic64_inc(&dev->tx_dropped);
	dev_kfree_skb_any(skb);
	/* The doorbell the frames before this one may have deferred. */
	if (!netdev_xmit_more())
		ohca_wr32(dev, OHCA_REG_ETH_TX_PI,
			  ring->pi & OHCA_RING_INDEX_MASK);
	return NETDEV_TX_OK;
}

/*
 * The device kept a frame for longer than the watchdog's timeout (far more
 * than a TX ring takes even on a loaded host): log where the ring stands
 * and restart both rings from a work item, where RTNL can be taken.
 */
static void ohca_tx_timeout(struct net_device *ndev, unsigned int txqueue)
{
	struct ohca_dev *dev = ohca_ndev_to_dev(ndev);

	netdev_warn(ndev, "TX timeout: ring ci %u pi %u; restarting the rings\n",
		    READ_ONCE(dev->tx.ci), READ_ONCE(dev->tx.pi));
	schedule_work(&dev->tx_timeout_work);
}

static void ohca_tx_timeout_work(struct work_struct *work)
{
	struct ohca_dev *dev = container_of(work, struct ohca_dev,
					    tx_timeout_work);
	int err;

	rtnl_lock();
	if (netif_running(dev->netdev) && dev->eth_up) {
		ohca_eth_down(dev);
		err = ohca_eth_up(dev);
		if (err)
			netdev_err(dev->netdev,
				   "cannot restart the rings after a TX timeout: %d\n",
				   err);
		ohca_port_changed(dev);
	}
	rtnl_unlock();
}

static int ohca_change_mtu(struct net_device *ndev, int new_mtu)
{
	struct ohca_dev *dev = ohca_ndev_to_dev(ndev);
	int err;

	err = ohca_cmd_set_port(dev, OHCA_SET_PORT_MTU, new_mtu, 0);
	if (err)
		return err;
	if (!netif_running(ndev)) {
		WRITE_ONCE(ndev->mtu, new_mtu);
		return 0;
	}
	/* The receive buffers follow the MTU: rebuild the rings. */
	ohca_eth_down(dev);
	WRITE_ONCE(ndev->mtu, new_mtu);
	err = ohca_eth_up(dev);
	if (err)
		netdev_err(ndev, "cannot restart after the MTU change: %d\n",
			   err);
	return err;
}

static void ohca_rx_mode_work(struct work_struct *work)
{
	struct ohca_dev *dev = container_of(work, struct ohca_dev,
					    rx_mode_work);
	unsigned int flags = READ_ONCE(dev->netdev->flags);
	u32 mode = 0;

	if (flags & IFF_PROMISC)
		mode |= OHCA_RX_MODE_PROMISC;
	if (flags & IFF_ALLMULTI)
		mode |= OHCA_RX_MODE_ALLMULTI;
	if (mode == dev->rx_mode)
		return;
	if (!ohca_cmd_set_port(dev, OHCA_SET_PORT_RX_MODE, 0, mode))
		dev->rx_mode = mode;
}

/*
 * Called under the netdev address lock, so it cannot sleep for a command.
 * The device accepts every multicast frame, so only the mode matters.
 */
static void ohca_set_rx_mode(struct net_device *ndev)
{
	struct ohca_dev *dev = ohca_ndev_to_dev(ndev);

	schedule_work(&dev->rx_mode_work);
}

static void ohca_get_stats64(struct net_device *ndev,
			     struct rtnl_link_stats64 *stats)
{
	struct ohca_dev *dev = ohca_ndev_to_dev(ndev);
	unsigned int start;

	do {
		start = u64_stats_fetch_begin(&dev->rx_stats.syncp);
		stats->rx_packets = dev->rx_stats.packets;
		stats->rx_bytes = dev->rx_stats.bytes;
		stats->rx_dropped = dev->rx_stats.dropped;
		stats->rx_errors = dev->rx_stats.errors;
	} while (u64_stats_fetch_retry(&dev->rx_stats.syncp, start));

	do {
		start = u64_stats_fetch_begin(&dev->tx_stats.syncp);
		stats->tx_packets = dev->tx_stats.packets;
		stats->tx_bytes = dev->tx_stats.bytes;
		stats->tx_errors = dev->tx_stats.errors;
	} while (u64_stats_fetch_retry(&dev->tx_stats.syncp, start));

	stats->tx_dropped = atomic64_read(&dev->tx_dropped);
}

static const struct net_device_ops ohca_netdev_ops = {
	.ndo_open		= ohca_open,
	.ndo_stop		= ohca_stop,
	.ndo_start_xmit		= ohca_start_xmit,
	.ndo_tx_timeout		= ohca_tx_timeout,
	.ndo_change_mtu		= ohca_change_mtu,
	.ndo_set_rx_mode	= ohca_set_rx_mode,
	.ndo_get_stats64	= ohca_get_stats64,
	.ndo_validate_addr	= eth_validate_addr,
};

static void ohca_get_drvinfo(struct net_device *ndev,
			     struct ethtool_drvinfo *info)
{
	struct ohca_dev *dev = ohca_ndev_to_dev(ndev);

	strscpy(info->driver, DRV_NAME, sizeof(info->driver));
	snprintf(info->fw_version, sizeof(info->fw_version), "%u.%u.%u",
		 dev->fw_version >> 16, (dev->fw_version >> 8) & 0xff,
		 dev->fw_version & 0xff);
	strscpy(info->bus_info, pci_name(dev->pdev), sizeof(info->bus_info));
}

static int ohca_get_link_ksettings(struct net_device *ndev,
				   struct ethtool_link_ksettings *cmd)
{
	struct ohca_dev *dev = ohca_ndev_to_dev(ndev);

	ethtool_link_ksettings_zero_link_mode(cmd, supported);
	ethtool_link_ksettings_zero_link_mode(cmd, advertising);
	cmd->base.speed = netif_carrier_ok(ndev) && dev->speed_mbps ?
			  dev->speed_mbps : SPEED_UNKNOWN;
	cmd->base.duplex = netif_carrier_ok(ndev) ? DUPLEX_FULL :
			   DUPLEX_UNKNOWN;
	cmd->base.port = PORT_OTHER;
	cmd->base.autoneg = AUTONEG_DISABLE;
	return 0;
}

static void ohca_get_ringparam(struct net_device *ndev,
			       struct ethtool_ringparam *ring,
			       struct kernel_ethtool_ringparam *kring,
			       struct netlink_ext_ack *extack)
{
	ring->rx_max_pending = BIT(OHCA_ETH_RING_LOG_MAX);
	ring->tx_max_pending = BIT(OHCA_ETH_RING_LOG_MAX);
	ring->rx_pending = BIT(OHCA_ETH_RX_LOG);
	ring->tx_pending = BIT(OHCA_ETH_TX_LOG);
}

static const struct ethtool_ops ohca_ethtool_ops = {
	.get_drvinfo		= ohca_get_drvinfo,
	.get_link		= ethtool_op_get_link,
	.get_link_ksettings	= ohca_get_link_ksettings,
	.get_ringparam		= ohca_get_ringparam,
	.get_pauseparam		= ohca_get_pauseparam,
	.set_pauseparam		= ohca_set_pauseparam,
	.get_sset_count		= ohca_get_sset_count,
	.get_strings		= ohca_get_strings,
	.get_ethtool_stats	= ohca_get_ethtool_stats,
};

/**
 * ohca_netdev_link_change() - the port's link went up or down
 * @dev: the function
 * @up: the new state
 *
 * Sets the carrier. EQ 0 interrupt context (PORT_CHANGE event), or the
 * netdev's creation with EQ 0's interrupt held off.
 */
void ohca_netdev_link_change(struct ohca_dev *dev, bool up)
{
	if (up)
		netif_carrier_on(dev->netdev);
	else
		netif_carrier_off(dev->netdev);
}

/**
 * ohca_netdev_create() - create and register the port's net_device
 * @dev: the function
 *
 * eth%d with the port's MAC and MTU, NAPI, the Ethernet interrupt; the
 * carrier follows the link from then on. The rings are made by ndo_open.
 *
 * Return: 0 or a negative errno.
 */
int ohca_netdev_create(struct ohca_dev *dev)
{
	unsigned int eq0_irq = pci_irq_vector(dev->pdev, OHCA_MSIX_ASYNC_EQ);
	struct ohca_netdev_priv *priv;
	struct net_device *ndev;
	int err;

	ndev = alloc_etherdev(sizeof(*priv));
	if (!ndev)
		return -ENOMEM;
	SET_NETDEV_DEV(ndev, &dev->pdev->dev);
	priv = netdev_priv(ndev);
	priv->dev = dev;
	dev->netdev = ndev;

	ndev->netdev_ops = &ohca_netdev_ops;
	ndev->ethtool_ops = &ohca_ethtool_ops;
	ohca_pfc_netdev_init(dev, ndev);
	ndev->min_mtu = OHCA_ETH_MIN_MTU;
	ndev->max_mtu = dev->max_mtu;
	ndev->mtu = min(dev->port_mtu, dev->max_mtu);
	eth_hw_addr_set(ndev, dev->port_mac);

	u64_stats_init(&dev->tx_stats.syncp);
	u64_stats_init(&dev->rx_stats.syncp);
	atomic64_set(&dev->tx_dropped, 0);
	INIT_WORK(&dev->rx_mode_work, ohca_rx_mode_work);
	INIT_WORK(&dev->tx_timeout_work, ohca_tx_timeout_work);
	ndev->watchdog_timeo = OHCA_TX_TIMEOUT;
	dev->rx_mode = 0;

	netif_napi_add(ndev, &dev->napi, ohca_napi_poll);
	ohca_wr32(dev, OHCA_REG_ETH_IRQ_MASK, 1);
	snprintf(dev->eth_irq_name, sizeof(dev->eth_irq_name), "ohca-eth@%s",
		 pci_name(dev->pdev));
	err = request_irq(pci_irq_vector(dev->pdev, OHCA_MSIX_ETH),
			  ohca_eth_irq, 0, dev->eth_irq_name, dev);
	if (err) {
		dev_err(&dev->pdev->dev,
			"cannot request the Ethernet interrupt: %d\n", err);
		goto err_napi_del;
	}

	/* The link is set below, with PORT_CHANGE events held off. */
	netif_carrier_off(ndev);
	err = register_netdev(ndev);
	if (err) {
		dev_err(&dev->pdev->dev, "cannot register the netdev: %d\n",
			err);
		goto err_free_irq;
	}
	/* Optional: the port works without mlx5's ecn/ switches. */
	err = ohca_ecn_sysfs_create(dev);
	if (err)
		dev_warn(&dev->pdev->dev,
			 "no ecn/ directory in sysfs (DCQCN switches): %d\n",
			 err);

	disable_irq(eq0_irq);
	set_bit(OHCA_FLAG_NETDEV_READY, &dev->flags);
	ohca_netdev_link_change(dev, atomic_read(&dev->link_up));
	enable_irq(eq0_irq);
	return 0;

err_free_irq:
	free_irq(pci_irq_vector(dev->pdev, OHCA_MSIX_ETH), dev);
err_napi_del:
	netif_napi_del(&dev->napi);
	free_netdev(ndev);
	dev->netdev = NULL;
	return err;
}

/**
 * ohca_netdev_destroy() - unregister and free the port's net_device
 * @dev: the function
 *
 * After this no PORT_CHANGE event touches it.
 */
void ohca_netdev_destroy(struct ohca_dev *dev)
{
	if (!dev->netdev)	/* an InfiniBand port has none */
		return;
	clear_bit(OHCA_FLAG_NETDEV_READY, &dev->flags);
	synchronize_irq(pci_irq_vector(dev->pdev, OHCA_MSIX_ASYNC_EQ));
	ohca_ecn_sysfs_destroy(dev);
	unregister_netdev(dev->netdev);
	cancel_work_sync(&dev->rx_mode_work);
	cancel_work_sync(&dev->tx_timeout_work);
	free_irq(pci_irq_vector(dev->pdev, OHCA_MSIX_ETH), dev);
	netif_napi_del(&dev->napi);
	free_netdev(dev->netdev);
	dev->netdev = NULL;
}
