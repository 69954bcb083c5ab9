/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ohca_core: definitions private to ohca_core.ko (kernel/core/). The
 * interface to the RDMA driver is ohca_core.h.
 */
#ifndef OHCA_CORE_PRIV_H
#define OHCA_CORE_PRIV_H

#include "ohca_core.h"

/* The PCI driver's name, as the module's. */
#define DRV_NAME		KBUILD_MODNAME

/* A command gets no answer in this time: the device is treated as dead. */
#define OHCA_CMD_TIMEOUT_MS	5000

/*
 * Event queue 0: 2^12 entries (64 KiB), whatever max_qp is. A device with
 * OHCA_DEV_CAP_EQ0_HOLD keeps the events that find it full and posts them
 * as entries come back (and holds commands meanwhile), as a real HCA's
 * fixed-size async EQ does. Without the capability a full EQ 0 is fatal,
 * so it must hold the worst-case burst: up to OHCA_EQ0_QP_EVENTS per QP
 * (a link loss errors them all at once) and one per CQ, command
 * completions and the spare below; ohca_eq0_fit_limits() then lowers the
 * limits reported until they fit.
 */
#define OHCA_EQ0_LOG		12
#define OHCA_EQ0_QP_EVENTS	2

/*
 * Work per interrupt: an EQ handler takes at most OHCA_EQ_BUDGET entries,
 * publishes its consumer index every OHCA_EQ_CI_BATCH entries so the
 * device sees room early, and re-arms at the end; the device interrupts
 * again at once when entries are left, so other work runs in between.
 */
#define OHCA_EQ_BUDGET		64
#define OHCA_EQ_CI_BATCH	16
/* Entries beyond the per-object worst case: one budget, port events. */
#define OHCA_EQ_SPARE		(OHCA_EQ_BUDGET + 16)

/* Ethernet rings. */
#define OHCA_ETH_TX_LOG		8
/* The netdev watchdog's TX timeout: generous, TCG hosts can be slow. */
#define OHCA_TX_TIMEOUT		(20 * HZ)
#define OHCA_ETH_RX_LOG		8

/* ohca_cmdq.c */
int ohca_cmdq_init(struct ohca_dev *dev);
void ohca_cmdq_destroy(struct ohca_dev *dev);
int ohca_cmd_exec_template(struct ohca_dev *dev, struct ohca_cmd *entry,
			   bool use_mbox, void *out, u16 out_cap);
void ohca_cmdq_complete(struct ohca_dev *dev, const struct ohca_eqe *eqe);
void ohca_cmdq_fail_all(struct ohca_dev *dev);
int ohca_cmd_query_port(struct ohca_dev *dev, struct ohca_query_port_out *out);
int ohca_cmd_set_port(struct ohca_dev *dev, u32 mask, u32 mtu, u32 rx_mode);

/* ohca_eq.c */
int ohca_eq0_init(struct ohca_dev *dev);
void ohca_eq0_fit_limits(struct ohca_dev *dev);
void ohca_eq0_destroy(struct ohca_dev *dev);
int ohca_comp_eqs_create(struct ohca_dev *dev);
void ohca_comp_eqs_free(struct ohca_dev *dev);
void ohca_port_changed(struct ohca_dev *dev);

/* ohca_health.c (and ohca_mark_dead(), ohca_core.h) */
void ohca_handle_fatal(struct ohca_dev *dev, u32 code);
void ohca_check_fatal(struct ohca_dev *dev);

/* ohca_netdev.c */
int ohca_netdev_create(struct ohca_dev *dev);
void ohca_netdev_destroy(struct ohca_dev *dev);
void ohca_netdev_link_change(struct ohca_dev *dev, bool up);

/* ohca_ecn.c */
int ohca_cc_param_cmd(struct ohca_dev *dev, u32 param, u32 op, u32 value,
		      u32 *out);
int ohca_ecn_sysfs_create(struct ohca_dev *dev);
void ohca_ecn_sysfs_destroy(struct ohca_dev *dev);
irqreturn_t ohca_eth_irq(int irq, void *data);

/* ohca_pfc.c: pause, PFC (ethtool, dcbnl) and their counters */
struct ethtool_pauseparam;
struct ethtool_stats;
void ohca_pfc_netdev_init(struct ohca_dev *dev, struct net_device *ndev);
void ohca_get_pauseparam(struct net_device *ndev,
			 struct ethtool_pauseparam *pause);
int ohca_set_pauseparam(struct net_device *ndev,
			struct ethtool_pauseparam *pause);
int ohca_get_sset_count(struct net_device *ndev, int sset);
void ohca_get_strings(struct net_device *ndev, u32 sset, u8 *data);
void ohca_get_ethtool_stats(struct net_device *ndev,
			    struct ethtool_stats *stats, u64 *data);

/* ohca_debugfs.c */
void ohca_debugfs_init(struct ohca_dev *dev);
void ohca_debugfs_cleanup(struct ohca_dev *dev);
int ohca_init_fault(struct ohca_dev *dev, unsigned int *step);
void ohca_debugfs_module_init(void);
void ohca_debugfs_module_exit(void);

#endif /* OHCA_CORE_PRIV_H */
