// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca: pause and priority flow control of the Ethernet port
 * (OHCA_DEV_CAP_PFC, programming manual section 22).
 *
 * The device keeps the setting (QUERY_PFC / SET_PFC); the driver only
 * translates: ethtool's pause parameters (`ethtool -a` / `-A`) are 802.3x
 * global pause, dcbnl's IEEE PFC (`dcb pfc show|set dev X`) is per
 * priority, and `ethtool -S` shows the pause counters. Global pause and
 * PFC exclude each other, as on mlx5. Every entry point runs under RTNL,
 * which serialises the read-modify-write of the setting.
 */
#include <linux/ethtool.h>
#include <linux/netdevice.h>
#include <net/dcbnl.h>

#include "ohca_core_priv.h"

static struct ohca_dev *ohca_pfc_dev(struct net_device *ndev)
{
	struct ohca_netdev_priv *priv = netdev_priv(ndev);

	return priv->dev;
}

static bool ohca_pfc_supported(struct ohca_dev *dev)
{
	return le32_to_cpu(dev->attr.dev_caps) & OHCA_DEV_CAP_PFC;
}

static int ohca_pfc_query(struct ohca_dev *dev, struct ohca_query_pfc_out *out)
{
	struct ohca_query_pfc_in in = { .port = 1 };
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_QUERY_PFC,
		.in = &in,
		.in_len = sizeof(in),
		.out = out,
		.out_len = sizeof(*out),
	};

	if (!ohca_pfc_supported(dev))
		return -EOPNOTSUPP;
	return ohca_cmd_exec(dev, &args);
}

static int ohca_pfc_set(struct ohca_dev *dev, const struct ohca_pfc_config *cfg)
{
	struct ohca_set_pfc_in in = { .port = 1, .cfg = *cfg };
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_SET_PFC,
		.in = &in,
		.in_len = sizeof(in),
	};

	return ohca_cmd_exec(dev, &args);
}

/* ---- ethtool: global pause and the counters ---------------------------- */

/**
 * ohca_get_pauseparam() - ethtool's get_pauseparam: the 802.3x setting
 * @ndev: the port's net_device
 * @pause: filled in; autonegotiation is never on
 */
void ohca_get_pauseparam(struct net_device *ndev,
			 struct ethtool_pauseparam *pause)
{
	struct ohca_query_pfc_out out;

	pause->autoneg = AUTONEG_DISABLE;
	pause->rx_pause = 0;
	pause->tx_pause = 0;
	if (ohca_pfc_query(ohca_pfc_dev(ndev), &out))
		return;
	pause->rx_pause = !!(out.cfg.pause & OHCA_PAUSE_RX);
	pause->tx_pause = !!(out.cfg.pause & OHCA_PAUSE_TX);
}

/**
 * ohca_set_pauseparam() - ethtool's set_pauseparam: 802.3x global pause
 * @ndev: the port's net_device
 * @pause: rx_pause and tx_pause; autonegotiation is refused
 *
 * Return: 0, -EINVAL for autonegotiation, -EOPNOTSUPP while PFC is on or
 * without the device's support, or the command's error.
 */
int ohca_set_pauseparam(struct net_device *ndev,
			struct ethtool_pauseparam *pause)
{
	struct ohca_dev *dev = ohca_pfc_dev(ndev);
	struct ohca_query_pfc_out out;
	int err;

	if (pause->autoneg) {
		netdev_err(ndev, "pause autonegotiation is not supported\n");
		return -EINVAL;
	}
	err = ohca_pfc_query(dev, &out);
	if (err)
		return err;
	if (out.cfg.pfc_en && (pause->rx_pause || pause->tx_pause)) {
		netdev_err(ndev, "global pause and PFC exclude each other: turn PFC off first (dcb pfc set dev %s prio-pfc all:off)\n",
			   ndev->name);
		return -EOPNOTSUPP;
	}
	out.cfg.pause = (pause->rx_pause ? OHCA_PAUSE_RX : 0) |
			(pause->tx_pause ? OHCA_PAUSE_TX : 0);
	return ohca_pfc_set(dev, &out.cfg);
}

#define OHCA_PFC_PER_PRIO_STATS	2	/* rx_prio%u_pause, tx_prio%u_pause */

static const char * const ohca_pfc_stat_names[] = {
	"rx_pause_ctrl_phy",
	"tx_pause_ctrl_phy",
	"rx_pause_ignored",
	"rx_pfc_storm_events",
	"tx_pause_held",
	"tx_pause_dropped",
};

#define OHCA_PFC_STATS	(ARRAY_SIZE(ohca_pfc_stat_names) + \
			 OHCA_PFC_PER_PRIO_STATS * OHCA_PFC_PRIOS)

/**
 * ohca_get_sset_count() - ethtool's get_sset_count
 * @ndev: the port's net_device
 * @sset: the string set
 *
 * Return: the number of statistics, or -EOPNOTSUPP for other sets.
 */
int ohca_get_sset_count(struct net_device *ndev, int sset)
{
	if (sset != ETH_SS_STATS || !ohca_pfc_supported(ohca_pfc_dev(ndev)))
		return -EOPNOTSUPP;
	return OHCA_PFC_STATS;
}

/**
 * ohca_get_strings() - ethtool's get_strings: the statistics' names
 * @ndev: the port's net_device
 * @sset: the string set
 * @data: ETH_GSTRING_LEN bytes per name
 */
void ohca_get_strings(struct net_device *ndev, u32 sset, u8 *data)
{
	unsigned int i;

	if (sset != ETH_SS_STATS)
		return;
	for (i = 0; i < OHCA_PFC_PRIOS; i++)
		ethtool_sprintf(&data, "rx_prio%u_pause", i);
	for (i = 0; i < OHCA_PFC_PRIOS; i++)
		ethtool_sprintf(&data, "tx_prio%u_pause", i);
	for (i = 0; i < ARRAY_SIZE(ohca_pfc_stat_names); i++)
		ethtool_sprintf(&data, "%s", ohca_pfc_stat_names[i]);
}

/**
 * ohca_get_ethtool_stats() - ethtool's get_ethtool_stats
 * @ndev: the port's net_device
 * @stats: unused
 * @data: one value per name of ohca_get_strings(); zeros if the device
 *        cannot be asked
 */
void ohca_get_ethtool_stats(struct net_device *ndev,
			    struct ethtool_stats *stats, u64 *data)
{
	struct ohca_query_pfc_out out;
	unsigned int i;

	memset(data, 0, OHCA_PFC_STATS * sizeof(*data));
	if (ohca_pfc_query(ohca_pfc_dev(ndev), &out))
		return;
	for (i = 0; i < OHCA_PFC_PRIOS; i++) {
		data[i] = le64_to_cpu(out.rx_pfc[i]);
		data[OHCA_PFC_PRIOS + i] = le64_to_cpu(out.tx_pfc[i]);
	}
	data += OHCA_PFC_PER_PRIO_STATS * OHCA_PFC_PRIOS;
	data[0] = le64_to_cpu(out.rx_pause);
	data[1] = le64_to_cpu(out.tx_pause);
	data[2] = le64_to_cpu(out.rx_ignored);
	data[3] = le64_to_cpu(out.rx_storm);
	data[4] = le64_to_cpu(out.tx_held);
	data[5] = le64_to_cpu(out.tx_dropped);
}

/* ---- dcbnl: IEEE 802.1Qbb PFC ------------------------------------------- */

#ifdef CONFIG_DCB
static int ohca_dcbnl_ieee_getpfc(struct net_device *ndev,
				  struct ieee_pfc *pfc)
{
	struct ohca_query_pfc_out out;
	unsigned int i;
	int err;

	err = ohca_pfc_query(ohca_pfc_dev(ndev), &out);
	if (err)
		return err;
	memset(pfc, 0, sizeof(*pfc));
	pfc->pfc_cap = OHCA_PFC_PRIOS;
	pfc->pfc_en = out.cfg.pfc_en;
	for (i = 0; i < OHCA_PFC_PRIOS; i++) {
		pfc->requests[i] = le64_to_cpu(out.tx_pfc[i]);
		pfc->indications[i] = le64_to_cpu(out.rx_pfc[i]);
	}
	return 0;
}

static int ohca_dcbnl_ieee_setpfc(struct net_device *ndev,
				  struct ieee_pfc *pfc)
{
	struct ohca_dev *dev = ohca_pfc_dev(ndev);
	struct ohca_query_pfc_out out;
	int err;

	err = ohca_pfc_query(dev, &out);
	if (err)
		return err;
	if (pfc->pfc_en && out.cfg.pause) {
		netdev_err(ndev, "PFC and global pause exclude each other: turn pause off first (ethtool -A %s rx off tx off)\n",
			   ndev->name);
		return -EOPNOTSUPP;
	}
	out.cfg.pfc_en = pfc->pfc_en;
	return ohca_pfc_set(dev, &out.cfg);
}

static u8 ohca_dcbnl_getdcbx(struct net_device *ndev)
{
	return DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_IEEE;
}

static u8 ohca_dcbnl_setdcbx(struct net_device *ndev, u8 mode)
{
	/* Only the host's own IEEE mode: non-zero refuses the rest. */
	return mode != (DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_IEEE);
}

static const struct dcbnl_rtnl_ops ohca_dcbnl_ops = {
	.ieee_getpfc	= ohca_dcbnl_ieee_getpfc,
	.ieee_setpfc	= ohca_dcbnl_ieee_setpfc,
	.getdcbx	= ohca_dcbnl_getdcbx,
	.setdcbx	= ohca_dcbnl_setdcbx,
};
#endif

/**
 * ohca_pfc_netdev_init() - hook PFC into a new net_device
 * @dev: the function
 * @ndev: its net_device, not yet registered
 *
 * The dcbnl operations when the kernel has DCB and the device PFC.
 */
void ohca_pfc_netdev_init(struct ohca_dev *dev, struct net_device *ndev)
{
#ifdef CONFIG_DCB
	if (ohca_pfc_supported(dev))
		ndev->dcbnl_ops = &ohca_dcbnl_ops;
#endif
}
