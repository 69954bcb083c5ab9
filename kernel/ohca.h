/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ohca: driver-private definitions shared by the driver's files.
 */
#ifndef OHCA_H
#define OHCA_H

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/io.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/pci.h>
#include <linux/semaphore.h>
#include <linux/spinlock.h>
#include <linux/u64_stats_sync.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>

#include <ohca/ohca_regs.h>
#include <ohca/ohca_cmd.h>
#include <ohca/ohca_queue.h>

#define DRV_NAME		"ohca"

/* Command queue: 2^OHCA_CMDQ_LOG entries and as many command contexts. */
#define OHCA_CMDQ_LOG		3
#define OHCA_CMDQ_DEPTH		BIT(OHCA_CMDQ_LOG)
#define OHCA_CMD_TIMEOUT_MS	5000

/* Event queue 0. */
#define OHCA_EQ0_LOG		8

/* Ethernet rings. */
#define OHCA_ETH_TX_LOG		8
#define OHCA_ETH_RX_LOG		8

/*
 * A command context: the in/out mailboxes and the waiter of one command.
 * The token of a command is the context index in the low OHCA_CMDQ_LOG
 * bits and a per-context sequence number above, so a stray completion
 * for an earlier use of the context is recognised and dropped.
 */
enum ohca_cmd_ctx_state {
	OHCA_CTX_FREE,
	OHCA_CTX_POSTED,	/* waiter sleeping on @done */
	OHCA_CTX_DONE,		/* completion recorded, waiter not yet back */
	OHCA_CTX_ABANDONED,	/* waiter timed out, device still owns it */
};

struct ohca_cmd_ctx {
	struct completion done;
	void *in_buf;			/* OHCA_CMD_MAILBOX_MAX bytes */
	dma_addr_t in_dma;
	void *out_buf;			/* OHCA_CMD_MAILBOX_MAX bytes */
	dma_addr_t out_dma;
	/* Fields below are guarded by ohca_cmdq.lock. */
	enum ohca_cmd_ctx_state state;
	u16 token;
	u16 opcode;
	u8 status;
	u32 syndrome;
	int result;			/* -EIO when the device went fatal */
};

/*
 * Command queue. Up to OHCA_CMDQ_DEPTH commands may be outstanding; the
 * semaphore counts free contexts. A context is taken before posting and
 * given back when its waiter has read the result or, for a command that
 * timed out, when its late completion arrives. Because the device
 * completes in ring order and at most DEPTH - 1 other contexts are busy
 * when one is taken, the ring slot at the producer index is always free.
 */
struct ohca_cmdq {
	struct ohca_cmd *ring;
	dma_addr_t ring_dma;
	struct semaphore sem;		/* free contexts */
	spinlock_t lock;		/* guards pi, ctx[].state/result, seq */
	u16 pi;				/* free-running producer index */
	u16 seq;			/* token sequence */
	struct ohca_cmd_ctx ctx[OHCA_CMDQ_DEPTH];
};

/* Event queue 0: only touched by its interrupt handler after setup. */
struct ohca_eq {
	struct ohca_eqe *ring;
	dma_addr_t ring_dma;
	u32 log_size;
	u32 ci;				/* free-running consumer index */
};

/* Ethernet ring: descriptors plus the skb and mapping of each slot. */
struct ohca_eth_ring {
	struct ohca_eth_desc *desc;
	dma_addr_t desc_dma;
	struct sk_buff **skb;
	dma_addr_t *dma;
	u32 log_size;
	u32 size;
	u32 pi;				/* next slot to post */
	u32 ci;				/* next slot to complete */
};

struct ohca_eth_stats {
	u64 packets;
	u64 bytes;
	u64 dropped;
	u64 errors;
	struct u64_stats_sync syncp;
};

/* netdev_priv() of the Ethernet personality. */
struct ohca_netdev_priv {
	struct ohca_dev *dev;
};

/* Device-wide flags (ohca_dev.flags), set and cleared atomically. */
enum ohca_dev_flag {
	OHCA_FLAG_FATAL,		/* device stopped until reset */
	OHCA_FLAG_IB_REGISTERED,	/* port events go to the IB core */
	OHCA_FLAG_NETDEV_READY,		/* carrier events go to the netdev */
};

struct ohca_dev {
	struct ib_device ibdev;		/* must be first (ib_alloc_device) */
	struct pci_dev *pdev;
	void __iomem *regs;		/* BAR0 */
	resource_size_t db_bar_addr;	/* BAR2 bus address, for user mmaps */
	resource_size_t db_bar_len;
	u32 caps;			/* OHCA_REG_CAPS */
	u32 fw_version;			/* OHCA_REG_FW_VERSION */
	unsigned long flags;		/* enum ohca_dev_flag */

	struct ohca_cmdq cmdq;
	struct ohca_eq eq0;
	int num_vectors;
	char eq0_irq_name[32];
	char eth_irq_name[32];

	/* Written once at probe, read-only afterwards. */
	struct ohca_query_device_out attr;
	u8 port_mac[ETH_ALEN];
	u32 max_mtu;
	u32 port_mtu;			/* MTU the device had at probe */
	u32 speed_mbps;
	u32 gid_tbl_len;
	u32 pkey_tbl_len;
	atomic_t link_up;		/* from PORT_CHANGE events */

	/* Ethernet personality. */
	struct net_device *netdev;
	struct napi_struct napi;
	struct ohca_eth_ring tx;	/* xmit path under the netdev tx lock,
					 * reclaim in NAPI (see ohca_netdev.c)
					 */
	struct ohca_eth_ring rx;	/* NAPI only */
	struct ohca_eth_stats tx_stats;	/* updated in xmit and NAPI */
	struct ohca_eth_stats rx_stats;	/* updated in NAPI only */
	atomic64_t tx_dropped;		/* updated in xmit */
	bool eth_up;			/* rings exist; under RTNL */
	struct work_struct rx_mode_work;
	u32 rx_mode;			/* last mode sent; rx_mode_work only */

	struct dentry *debugfs;
};

struct ohca_ucontext {
	struct ib_ucontext ibucontext;	/* must be first */
	u32 uar_index;
	struct rdma_user_mmap_entry *db_entry;
};

struct ohca_user_mmap_entry {
	struct rdma_user_mmap_entry rdma_entry;
	u64 address;			/* bus address of the page */
};

static inline struct ohca_dev *to_ohca_dev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct ohca_dev, ibdev);
}

static inline struct ohca_ucontext *to_ohca_uctx(struct ib_ucontext *uctx)
{
	return container_of(uctx, struct ohca_ucontext, ibucontext);
}

static inline struct ohca_user_mmap_entry *
to_ohca_mmap_entry(struct rdma_user_mmap_entry *entry)
{
	return container_of(entry, struct ohca_user_mmap_entry, rdma_entry);
}

static inline u32 ohca_rd32(struct ohca_dev *dev, enum ohca_reg reg)
{
	return readl(dev->regs + reg);
}

static inline void ohca_wr32(struct ohca_dev *dev, enum ohca_reg reg, u32 val)
{
	writel(val, dev->regs + reg);
}

/* ohca_cmdq.c */
struct ohca_cmd_args {
	u16 opcode;
	const void *in;			/* may be NULL when in_len is 0 */
	u16 in_len;
	void *out;			/* may be NULL when out_len is 0 */
	u16 out_len;
};

int ohca_cmdq_init(struct ohca_dev *dev);
void ohca_cmdq_destroy(struct ohca_dev *dev);
int ohca_cmd_exec(struct ohca_dev *dev, const struct ohca_cmd_args *args);
int ohca_cmd_exec_raw(struct ohca_dev *dev, struct ohca_cmd *entry,
		      void *out, u16 out_cap);
void ohca_cmdq_complete(struct ohca_dev *dev, const struct ohca_eqe *eqe);
void ohca_cmdq_fail_all(struct ohca_dev *dev);
int ohca_cmd_query_port(struct ohca_dev *dev, struct ohca_query_port_out *out);
int ohca_cmd_set_port(struct ohca_dev *dev, u32 mask, u32 mtu, u32 rx_mode);

/* ohca_eq.c */
int ohca_eq0_init(struct ohca_dev *dev);
void ohca_eq0_destroy(struct ohca_dev *dev);
void ohca_handle_fatal(struct ohca_dev *dev, u32 code);
void ohca_check_fatal(struct ohca_dev *dev);

/* ohca_netdev.c */
int ohca_netdev_create(struct ohca_dev *dev);
void ohca_netdev_destroy(struct ohca_dev *dev);
void ohca_netdev_link_change(struct ohca_dev *dev, bool up);
irqreturn_t ohca_eth_irq(int irq, void *data);

/* ohca_verbs.c */
extern const struct ib_device_ops ohca_dev_ops;
void ohca_port_event(struct ohca_dev *dev, bool up);

/* ohca_debugfs.c */
void ohca_debugfs_init(struct ohca_dev *dev);
void ohca_debugfs_cleanup(struct ohca_dev *dev);
void ohca_debugfs_module_init(void);
void ohca_debugfs_module_exit(void);

#endif /* OHCA_H */
