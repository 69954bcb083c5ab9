/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ohca_core.h: the interface between ohca_core.ko and the RDMA driver.
 *
 * ohca_core.ko is the PCI driver of the function: it owns the BARs, the
 * MSI-X vectors, the command queue, the event queues (EQ 0 and the
 * completion EQs), the Ethernet net_device, debugfs and the PCI
 * lifecycle (reset, AER, shutdown). Per function it creates an
 * auxiliary device "ohca_core.rdma.<n>" (struct ohca_aux_dev); the RDMA
 * driver ohca_ib.ko binds to it and registers the ib_device. The
 * auxiliary device exists from the end of probe (or of a reset) until
 * the start of removal (or of the next reset): the core deletes it, and
 * so unbinds the RDMA driver, before it takes anything below down.
 *
 * What the RDMA driver may use, all valid while it is bound:
 *  - the "RDMA driver reads" fields of struct ohca_dev: device limits
 *    (@attr, @caps, @abi_minor, ...), the doorbell BAR for user mmaps,
 *    the kernel doorbell page (ohca_kdb()), the completion EQs for CQs,
 *    the net_device of the port, link and fatal state;
 *  - commands: ohca_cmd_exec(), ohca_cmd_create(), ohca_cmd_destroy();
 *  - events: ohca_register_events() / ohca_unregister_events() and the
 *    barriers ohca_sync_async_events() / ohca_sync_comp_events();
 *  - ohca_mark_dead() when it finds the device misbehaving.
 * Every other field belongs to the core.
 */
#ifndef OHCA_CORE_H
#define OHCA_CORE_H

#include <linux/atomic.h>
#include <linux/auxiliary_bus.h>
#include <linux/completion.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/kobject.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/pci.h>
#include <linux/rcupdate.h>
#include <linux/semaphore.h>
#include <linux/spinlock.h>
#include <linux/u64_stats_sync.h>
#include <linux/workqueue.h>

#include <ohca/ohca_regs.h>
#include <ohca/ohca_cmd.h>
#include <ohca/ohca_queue.h>

/* The auxiliary device's name, "ohca_core.rdma" (module name first). */
#define OHCA_AUX_RDMA		"rdma"

/* Command queue: 2^OHCA_CMDQ_LOG entries and as many command contexts. */
#define OHCA_CMDQ_LOG		3
#define OHCA_CMDQ_DEPTH		BIT(OHCA_CMDQ_LOG)

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

/*
 * A completion EQ holds one event per armed CQ (any CQ may use any EQ)
 * plus the spare: its size follows max_cq (ohca_comp_eq_log()).
 */
#define OHCA_MAX_COMP_EQS	(OHCA_NUM_MSIX - 2)

/*
 * A completion EQ on MSI-X vector 2 + index. Like EQ 0, only its
 * interrupt handler touches the ring and ci once it exists.
 */
struct ohca_comp_eq {
	struct ohca_eq eq;
	struct ohca_dev *dev;
	u32 eqn;
	int vector;			/* MSI-X vector index */
	char irq_name[32];
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

/*
 * Events for the RDMA driver. Each callback gets the @priv of its
 * struct ohca_event_client and must not sleep:
 * @comp:	completion event of CQ @cqn, from the interrupt of the CQ's
 *		completion EQ (hardirq).
 * @async:	an EQ 0 event about an RDMA object: eqe->type is
 *		OHCA_EQE_QP_EVENT, OHCA_EQE_CQ_ERROR, OHCA_EQE_SRQ_EVENT or
 *		OHCA_EQE_PAGE_FAULT; from the EQ 0 interrupt (hardirq).
 * @port_change: the RoCE port's state (wire link, netdev carrier and
 *		admin state, fatal) may have changed, or on an InfiniBand
 *		port a PORT_CHANGE event arrived (@port_state and
 *		@port_changes of struct ohca_dev say what); hardirq or
 *		process context. ohca_port_active() style checks read it
 *		again.
 * @fatal:	the device stopped (a fatal error, or treated as dead); any
 *		context, once per stop. Every command fails from now on.
 * @comp and @async events that arrive while no client is registered are
 * dropped and counted (debugfs "events_dropped").
 */
struct ohca_event_ops {
	void (*comp)(void *priv, u32 cqn);
	void (*async)(void *priv, const struct ohca_eqe *eqe);
	void (*port_change)(void *priv);
	void (*fatal)(void *priv);
};

/* Owned by the RDMA driver, registered with ohca_register_events(). */
struct ohca_event_client {
	const struct ohca_event_ops *ops;
	void *priv;
};

/* Device-wide flags (ohca_dev.flags), set and cleared atomically. */
enum ohca_dev_flag {
	OHCA_FLAG_FATAL,		/* device stopped until reset */
	OHCA_FLAG_NETDEV_READY,		/* carrier events go to the netdev */
};

/* netdev_priv() of the Ethernet personality. */
struct ohca_netdev_priv {
	struct ohca_dev *dev;
};

/* Priorities of DCQCN's per-priority switches. */
#define OHCA_ECN_PRIOS	8

/* One per PCI function, allocated by ohca_core at probe. */
struct ohca_dev {
	/* RDMA driver reads: set at probe, read-only afterwards. */
	struct pci_dev *pdev;		/* DMA device and ib_device parent */
	resource_size_t db_bar_addr;	/* BAR2 bus address, for user mmaps */
	resource_size_t db_bar_len;
	void __iomem *kdb;		/* BAR2 page 0: kernel doorbells */
	u32 caps;			/* OHCA_REG_CAPS */
	u32 abi_minor;			/* OHCA_REG_ABI_VERSION low half */
	u32 fw_version;			/* OHCA_REG_FW_VERSION */
	struct ohca_query_device_out attr;	/* limits, EQ 0 fitted */
	u8 port_mac[ETH_ALEN];
	u32 max_mtu;
	u32 port_mtu;			/* MTU the device had at probe */
	u32 speed_mbps;
	u32 gid_tbl_len;
	u32 pkey_tbl_len;
	/*
	 * An InfiniBand port (QUERY_PORT's link_layer, ABI 1.5): no
	 * Ethernet net_device (@netdev is NULL), port states driven by the
	 * subnet manager (@port_state, @port_changes).
	 */
	bool ib_port;
	struct net_device *netdev;	/* Ethernet port's net_device or NULL */
	/* Completion EQs for CQs: any CQ may use any of them. */
	struct ohca_comp_eq comp_eqs[OHCA_MAX_COMP_EQS];
	int num_comp_eqs;

	/* RDMA driver reads: live state. */
	unsigned long flags;		/* enum ohca_dev_flag */
	atomic_t link_up;		/* from PORT_CHANGE events */
	atomic_t port_state;		/* enum ohca_port_state, likewise */
	/*
	 * enum ohca_port_change bits of the PORT_CHANGE events not yet
	 * taken by the RDMA driver (atomic_xchg() to 0); IB port only.
	 */
	atomic_t port_changes;

	/* Core only from here on. */
	void __iomem *regs;		/* BAR0 */
	int num_vectors;
	char eq0_irq_name[32];
	char eth_irq_name[32];
	struct ohca_cmdq cmdq;
	struct ohca_eq eq0;

	/*
	 * The RDMA driver's event callbacks: written by
	 * ohca_{,un}register_events() from the auxiliary driver's probe and
	 * remove (serialised by the driver core), read under RCU by the EQ
	 * handlers (ohca_eq.c).
	 */
	struct ohca_event_client __rcu *events;
	atomic_t events_dropped;	/* RDMA events with no client */
	struct ohca_aux_dev *aux;	/* the RDMA function's device */

	/* Ethernet personality. */
	struct napi_struct napi;
	struct ohca_eth_ring tx;	/* xmit path under the netdev tx lock,
					 * reclaim in NAPI (see ohca_netdev.c)
					 */
	struct ohca_eth_ring rx;	/* NAPI only */
	struct ohca_eth_stats tx_stats;	/* updated in xmit and NAPI */
	struct ohca_eth_stats rx_stats;	/* updated in NAPI only */
	atomic64_t tx_dropped;		/* updated in xmit */
	struct work_struct tx_timeout_work;	/* restarts the rings */
	bool eth_up;			/* rings exist; under RTNL */
	struct work_struct rx_mode_work;
	u32 rx_mode;			/* last mode sent; rx_mode_work only */

	struct dentry *debugfs;
	/* sysfs ecn/roce_{rp,np}/enable/<prio> (ohca_ecn.c) */
	struct kobject *ecn_kobj;
	struct kobject *ecn_dirs[2];	/* roce_rp, roce_np */
	struct kobject *ecn_enable[2];
	struct ohca_ecn_attr {
		struct kobj_attribute attr;
		struct ohca_dev *dev;
		u8 np;			/* 0: roce_rp, 1: roce_np */
		u8 prio;
		char name[2];
	} ecn_attrs[2][OHCA_ECN_PRIOS];
	struct mutex ecn_lock;		/* one mask update at a time */
	/* debugfs cc_params/<name>: the DCQCN parameter of each file */
	struct ohca_cc_file {
		struct ohca_dev *dev;
		u32 param;		/* enum ohca_cc_param */
	} cc_files[OHCA_CC_PARAM_MAX];
};

/* The auxiliary device of the RDMA function. */
struct ohca_aux_dev {
	struct auxiliary_device adev;
	struct ohca_dev *dev;
};

/**
 * ohca_aux_to_dev() - the function of the RDMA auxiliary device
 * @adev: the auxiliary device ohca_ib is bound to
 *
 * Return: the function, valid while the driver is bound.
 */
static inline struct ohca_dev *ohca_aux_to_dev(struct auxiliary_device *adev)
{
	return container_of(adev, struct ohca_aux_dev, adev)->dev;
}

/**
 * ohca_port_name() - the port's name for messages
 * @dev: the function
 *
 * Return: the net_device's name, or "InfiniBand port" on an IB port.
 */
static inline const char *ohca_port_name(const struct ohca_dev *dev)
{
	return dev->netdev ? dev->netdev->name : "InfiniBand port";
}

/**
 * ohca_rd32() - read a BAR0 register
 * @dev: the function
 * @reg: the register
 *
 * Return: its value.
 */
static inline u32 ohca_rd32(struct ohca_dev *dev, enum ohca_reg reg)
{
	return readl(dev->regs + reg);
}

/**
 * ohca_wr32() - write a BAR0 register
 * @dev: the function
 * @reg: the register
 * @val: the value
 */
static inline void ohca_wr32(struct ohca_dev *dev, enum ohca_reg reg, u32 val)
{
	writel(val, dev->regs + reg);
}

/**
 * ohca_kdb() - ring a kernel doorbell
 * @dev: the function
 * @offset: the doorbell (OHCA_DB_SQ, OHCA_DB_RQ, OHCA_DB_CQ, ...)
 * @qn: the queue's number
 * @val: the doorbell's value (an index, arm bits)
 *
 * One 64-bit store on doorbell page 0; writeq() orders the queue's
 * entries before it.
 */
static inline void ohca_kdb(struct ohca_dev *dev, u32 offset, u32 qn, u32 val)
{
	writeq(OHCA_DB_VALUE(qn, val), dev->kdb + offset);
}

/**
 * ohca_sync_async_events() - wait for the running EQ 0 callbacks
 * @dev: the function
 *
 * On return no @async (EQ 0) callback that started before the call is
 * still running: after erasing an object from a lookup the callbacks
 * use, before freeing it. Process context.
 */
static inline void ohca_sync_async_events(struct ohca_dev *dev)
{
	synchronize_irq(pci_irq_vector(dev->pdev, OHCA_MSIX_ASYNC_EQ));
}

/**
 * ohca_sync_comp_events() - wait for the running callbacks of one completion EQ
 * @dev: the function
 * @ceq: the completion EQ
 *
 * As ohca_sync_async_events(), for the @comp callbacks of @ceq.
 */
static inline void ohca_sync_comp_events(struct ohca_dev *dev,
					 struct ohca_comp_eq *ceq)
{
	synchronize_irq(pci_irq_vector(dev->pdev, ceq->vector));
}

/*
 * Commands (ohca_cmdq.c); process context, they sleep. Each returns 0
 * or the errno of the device's status (see kernel/README.md); -EIO at
 * once when the device is stopped.
 */
struct ohca_cmd_args {
	u16 opcode;
	const void *in;			/* may be NULL when in_len is 0 */
	u16 in_len;
	void *out;			/* may be NULL when out_len is 0 */
	u16 out_len;
};

int ohca_cmd_exec(struct ohca_dev *dev, const struct ohca_cmd_args *args);
/* A CREATE_* command: its handle (and second handle, may be NULL). */
int ohca_cmd_create(struct ohca_dev *dev, u16 opcode, const void *in,
		    u16 in_len, u32 *handle, u32 *handle2);
/* A DESTROY_* command of one handle. */
int ohca_cmd_destroy(struct ohca_dev *dev, u16 opcode, u32 handle);

/*
 * Events (ohca_eq.c). One client per device, from the auxiliary driver's
 * probe (before it registers its ib_device, whose clients create CQs)
 * and remove (after unregistering it): -EBUSY when one is registered.
 * On return from ohca_unregister_events() no callback runs or will run.
 */
int ohca_register_events(struct ohca_dev *dev,
			 struct ohca_event_client *client);
void ohca_unregister_events(struct ohca_dev *dev);

/*
 * Give up on a device that misbehaves: bus mastering off, every command
 * fails with -EIO from now on, @fatal is called. Process context; @why
 * is logged (NULL for an orderly stop).
 */
void ohca_mark_dead(struct ohca_dev *dev, const char *why);

#endif /* OHCA_CORE_H */
