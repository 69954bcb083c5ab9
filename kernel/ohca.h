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
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include <ohca/ohca_regs.h>
#include <ohca/ohca_cmd.h>
#include <ohca/ohca_queue.h>

#define DRV_NAME		"ohca"

/* Command queue: 2^OHCA_CMDQ_LOG entries and as many command contexts. */
#define OHCA_CMDQ_LOG		3
#define OHCA_CMDQ_DEPTH		BIT(OHCA_CMDQ_LOG)
#define OHCA_CMD_TIMEOUT_MS	5000

/*
 * Event queue 0 holds a burst of asynchronous events while its handler
 * cannot run: up to OHCA_EQ0_QP_EVENTS per QP (a link loss errors them
 * all at once) and one per CQ, command completions and the spare below.
 * 2^12 entries (64 KiB) cover the 1024 QPs and CQs of today's device;
 * ohca_eq0_fit_limits() lowers the limits reported for a larger one.
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
	u32 abi_minor;			/* OHCA_REG_ABI_VERSION low half */
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
	atomic_t port_active;		/* RoCE port state last reported */

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
	struct work_struct tx_timeout_work;	/* restarts the rings */
	bool eth_up;			/* rings exist; under RTNL */
	struct work_struct rx_mode_work;
	u32 rx_mode;			/* last mode sent; rx_mode_work only */

	/* Completion EQs, created at probe; read-only afterwards. */
	struct ohca_comp_eq comp_eqs[OHCA_MAX_COMP_EQS];
	int num_comp_eqs;

	/* Kernel doorbell page (BAR2 page 0), for kernel CQs and QPs. */
	void __iomem *kdb;

	/*
	 * cqn -> struct ohca_cq and qpn -> struct ohca_qp, for the event
	 * handlers. The xarrays lock themselves (IRQ-safe); the handlers
	 * only load. An object is erased after the device destroyed it and
	 * freed only after synchronize_irq() on the vectors whose handlers
	 * may still hold it (see ohca_cq.c and ohca_qp.c).
	 */
	struct xarray cq_xa;
	struct xarray qp_xa;
	struct xarray srq_xa;		/* srqn -> struct ohca_srq, as qp_xa */
	/* ODP MRs by key, for page faults and prefetch (ohca_odp.c). */
	struct xarray odp_xa;
	atomic_t odp_works;		/* page-fault work items queued */
	bool odp_stopped;		/* teardown: fault events dropped */

	struct dentry *debugfs;
};

struct ohca_ucontext {
	struct ib_ucontext ibucontext;	/* must be first */
	u32 uar_index;
	struct rdma_user_mmap_entry *db_entry;
};

struct ohca_pd {
	struct ib_pd ibpd;		/* must be first */
	u32 pdn;
};

/* Page list memory in DMA-coherent 4 KiB pages, live while in use. */
struct ohca_pbl_mem {
	__le64 *top;			/* level 1: the list; level 2: leaves */
	dma_addr_t top_dma;
	u32 nleaves;			/* level 2 only */
	__le64 **leaf;
	dma_addr_t *leaf_dma;
};

struct ohca_mr {
	struct ib_mr ibmr;
	struct ib_umem *umem;		/* NULL for the DMA MR */
	u32 handle;			/* CREATE_MR's key, for DESTROY_MR */
	int access;			/* user MR: IB access flags (rereg) */
	/*
	 * Fast-registration MR: coherent page list of max_pages entries,
	 * npages of them filled by map_mr_sg (the ULP serialises map_mr_sg
	 * and posting the REG_MR).
	 */
	__le64 *pages;
	dma_addr_t pages_dma;
	size_t pages_bytes;
	u32 max_pages;
	u32 npages;
	/*
	 * On-demand paging (ohca_odp.c): the umem (an implicit MR's root),
	 * the children of an implicit MR by 2 MiB range (created under
	 * odp_lock), and references held by fault work (odp_done when the
	 * last goes).
	 */
	struct ohca_dev *dev;
	struct ib_umem_odp *odp;
	bool odp_implicit;
	unsigned int odp_shift;
	struct mutex odp_lock;		/* creating odp_children */
	struct xarray odp_children;
	refcount_t odp_refs;
	struct completion odp_done;
};

/*
 * A completion queue. User CQs live in user memory (umem); kernel CQs
 * have a coherent ring that poll_cq reads under @lock.
 */
struct ohca_cq {
	struct ib_cq ibcq;		/* must be first */
	u32 cqn;
	u32 log_size;
	struct ohca_comp_eq *ceq;
	struct ib_umem *umem;		/* user CQ */
	struct ohca_cqe *ring;		/* kernel CQ */
	dma_addr_t ring_dma;
	size_t ring_bytes;
	/* Kernel CQ: guards ci, the ring and the two QP lists below. */
	spinlock_t lock;
	u32 ci;				/* free-running consumer index */
	/* User CQ: serialises ohca_resize_cq()'s swap of umem and size. */
	struct mutex resize_lock;
	/* Kernel QPs whose SQ / RQ complete here (software flushes). */
	struct list_head sq_list;
	struct list_head rq_list;
};

/* One work queue (SQ or RQ) of a QP. */
struct ohca_wq {
	struct ib_umem *umem;		/* user QP */
	void *buf;			/* kernel QP: coherent ring */
	dma_addr_t buf_dma;
	size_t bytes;
	u32 log_size;
	u32 log_stride;
	u32 pi;				/* kernel QP: free-running, under lock */
	u32 ci;				/* kernel QP: free-running, under CQ lock */
	spinlock_t lock;		/* kernel QP: guards pi and the ring */
};

struct ohca_qp {
	struct ib_qp ibqp;		/* must be first */
	u32 qpn;
	enum ib_qp_type type;		/* RC, UC, UD, GSI, XRC_INI/TGT */
	struct ohca_wq sq;
	struct ohca_wq rq;
	u32 max_inline;
	u32 max_send_sge;
	u32 max_recv_sge;
	enum ib_sig_type sq_sig_type;
	struct mutex state_lock;	/* serialises modify_qp, guards state */
	enum ib_qp_state state;		/* last state set by modify_qp */
	/* Kernel QP: on its send / recv CQ's lists, under that CQ's lock. */
	struct list_head scq_node;
	struct list_head rcq_node;
};

/*
 * An address handle: the address vector UD WQEs carry. Written once by
 * create_ah, read by post_send; no device object behind it.
 */
struct ohca_ah {
	struct ib_ah ibah;		/* must be first */
	struct ohca_av av;
};

/*
 * A shared receive queue. @wq.pi is the producer index under @wq.lock
 * (kernel SRQ); @done counts the receive completions of its QPs, which
 * poll_cq of any of their CQs adds to (slots up to done + size are free).
 */
struct ohca_srq {
	struct ib_srq ibsrq;		/* must be first */
	u32 srqn;
	struct ohca_wq wq;
	atomic_t done;
	u32 max_sge;
};

struct ohca_user_mmap_entry {
	struct rdma_user_mmap_entry rdma_entry;
	u64 address;			/* bus address of the first page */
	u32 dm_handle;			/* device memory: freed with the entry */
};

static inline struct ohca_dev *to_ohca_dev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct ohca_dev, ibdev);
}

static inline struct ohca_ucontext *to_ohca_uctx(struct ib_ucontext *uctx)
{
	return container_of(uctx, struct ohca_ucontext, ibucontext);
}

struct ohca_xrcd {
	struct ib_xrcd ibxrcd;
	u32 xrcdn;			/* ALLOC_XRCD's number */
};

static inline struct ohca_xrcd *to_ohca_xrcd(struct ib_xrcd *ibxrcd)
{
	return container_of(ibxrcd, struct ohca_xrcd, ibxrcd);
}

struct ohca_mw {
	struct ib_mw ibmw;		/* must be first */
	u32 handle;			/* ALLOC_MW's key, for DEALLOC_MW */
};

static inline struct ohca_mw *to_ohca_mw(struct ib_mw *ibmw)
{
	return container_of(ibmw, struct ohca_mw, ibmw);
}

static inline struct ohca_pd *to_ohca_pd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct ohca_pd, ibpd);
}

static inline struct ohca_mr *to_ohca_mr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct ohca_mr, ibmr);
}

static inline struct ohca_cq *to_ohca_cq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct ohca_cq, ibcq);
}

static inline struct ohca_qp *to_ohca_qp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct ohca_qp, ibqp);
}

static inline struct ohca_ah *to_ohca_ah(struct ib_ah *ibah)
{
	return container_of(ibah, struct ohca_ah, ibah);
}

static inline struct ohca_srq *to_ohca_srq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct ohca_srq, ibsrq);
}

static inline struct ohca_user_mmap_entry *
to_ohca_mmap_entry(struct rdma_user_mmap_entry *entry)
{
	return container_of(entry, struct ohca_user_mmap_entry, rdma_entry);
}

/*
 * uAPI extension rule (ohca-abi.h): the bytes of a request past the @len
 * this driver knows, which a newer provider may send, must be zero.
 */
static inline bool ohca_udata_tail_clear(struct ib_udata *udata, size_t len)
{
	return udata->inlen <= len ||
	       ib_is_udata_cleared(udata, len, udata->inlen - len);
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
int ohca_cmd_exec_template(struct ohca_dev *dev, struct ohca_cmd *entry,
			   bool use_mbox, void *out, u16 out_cap);
void ohca_cmdq_complete(struct ohca_dev *dev, const struct ohca_eqe *eqe);
void ohca_cmdq_fail_all(struct ohca_dev *dev);
int ohca_cmd_query_port(struct ohca_dev *dev, struct ohca_query_port_out *out);
int ohca_cmd_set_port(struct ohca_dev *dev, u32 mask, u32 mtu, u32 rx_mode);

/* Kernel doorbell: one 64-bit store on doorbell page 0. */
static inline void ohca_kdb(struct ohca_dev *dev, u32 offset, u32 qn, u32 val)
{
	writeq(OHCA_DB_VALUE(qn, val), dev->kdb + offset);
}

/* ohca_eq.c */
int ohca_eq0_init(struct ohca_dev *dev);
void ohca_eq0_fit_limits(struct ohca_dev *dev);
void ohca_eq0_destroy(struct ohca_dev *dev);
int ohca_comp_eqs_create(struct ohca_dev *dev);
void ohca_comp_eqs_free(struct ohca_dev *dev);
void ohca_comp_eqs_sync(struct ohca_dev *dev);
void ohca_handle_fatal(struct ohca_dev *dev, u32 code);
void ohca_mark_dead(struct ohca_dev *dev, const char *why);
void ohca_check_fatal(struct ohca_dev *dev);

/* ohca_netdev.c */
int ohca_netdev_create(struct ohca_dev *dev);
void ohca_netdev_destroy(struct ohca_dev *dev);
void ohca_netdev_link_change(struct ohca_dev *dev, bool up);
irqreturn_t ohca_eth_irq(int irq, void *data);

/* ohca_verbs.c */
extern const struct ib_device_ops ohca_dev_ops;
bool ohca_port_active(struct ohca_dev *dev);
void ohca_port_update(struct ohca_dev *dev);

/* ohca_mr.c */
int ohca_cmd_create(struct ohca_dev *dev, u16 opcode, const void *in,
		    u16 in_len, u32 *handle, u32 *handle2);
int ohca_cmd_destroy(struct ohca_dev *dev, u16 opcode, u32 handle);
bool ohca_destroy_failed(struct ohca_dev *dev, int err, const char *what,
			 u32 handle);
int ohca_pbl_from_umem(struct ohca_dev *dev, struct ib_umem *umem,
		       unsigned long pgsz, struct ohca_pbl *pbl,
		       struct ohca_pbl_mem *mem);
int ohca_pbl_from_coherent(struct ohca_dev *dev, dma_addr_t addr,
			   size_t bytes, struct ohca_pbl *pbl,
			   struct ohca_pbl_mem *mem);
void ohca_pbl_free(struct ohca_dev *dev, struct ohca_pbl_mem *mem);
struct ib_umem *ohca_umem_ring(struct ohca_dev *dev, u64 addr, size_t bytes,
			       struct ohca_pbl *pbl, struct ohca_pbl_mem *mem);
u32 ohca_access_to_dev(int ib_access);
int ohca_access_from_dev(u32 access);
int ohca_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int ohca_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
struct ib_mr *ohca_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
			       u64 iova, int access, struct ib_udata *udata);
struct ib_mr *ohca_get_dma_mr(struct ib_pd *ibpd, int access);
int ohca_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
/* ohca_odp.c */
bool ohca_has_odp(struct ohca_dev *dev);
void ohca_odp_query_caps(struct ohca_dev *dev, struct ib_device_attr *props);
void ohca_odp_fault_event(struct ohca_dev *dev, const struct ohca_eqe *eqe);
void ohca_odp_drain(struct ohca_dev *dev);
struct ib_mr *ohca_reg_user_mr_odp(struct ib_pd *ibpd, u64 start, u64 length,
				   u64 iova, int access);
int ohca_dereg_mr_odp(struct ohca_mr *mr);
int ohca_advise_mr(struct ib_pd *pd, enum ib_uverbs_advise_mr_advice advice,
		   u32 flags, struct ib_sge *sg_list, u32 num_sge,
		   struct uverbs_attr_bundle *attrs);
struct ib_mr *ohca_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				 u64 length, u64 iova, int access,
				 struct ib_pd *ibpd, struct ib_udata *udata);

/* ohca_fastreg.c */
u32 ohca_fast_reg_page_list_len(struct ohca_dev *dev);
struct ib_mr *ohca_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type mr_type,
			    u32 max_num_sg);
int ohca_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		   unsigned int *sg_offset);
void ohca_fast_reg_free(struct ohca_dev *dev, struct ohca_mr *mr);
int ohca_build_reg_mr_wqe(struct ohca_dev *dev, const struct ib_reg_wr *wr,
			  bool signaled, struct ohca_reg_mr_wqe *wqe);

/* ohca_cq.c */
int ohca_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		   struct ib_udata *udata);
int ohca_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int ohca_modify_cq(struct ib_cq *ibcq, u16 cq_count, u16 cq_period);
void ohca_cq_query_caps(struct ohca_dev *dev, struct ib_device_attr *props);
int ohca_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int ohca_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int ohca_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
void ohca_cq_event(struct ohca_dev *dev, u32 cqn, bool error, u16 code);
enum ib_wc_status ohca_wc_status(u8 status);
void ohca_cq_clean(struct ohca_dev *dev, struct ohca_cq *cq, u32 qpn);
void ohca_cq_kick(struct ohca_cq *cq);

/* ohca_qp.c; ohca_ah.c for the AH functions */
int ohca_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		   struct ib_udata *udata);
int ohca_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		   int attr_mask, struct ib_udata *udata);
int ohca_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr,
		  int attr_mask, struct ib_qp_init_attr *init);
int ohca_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int ohca_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		   const struct ib_send_wr **bad_wr);
int ohca_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		   const struct ib_recv_wr **bad_wr);
void ohca_qp_event(struct ohca_dev *dev, u32 qpn, u16 code);
enum ib_event_type ohca_qp_event_type(u16 code, bool *ok);
u32 ohca_qp_mask_to_dev(int ib_mask);
int ohca_qp_flush_sw(struct ohca_qp *qp, bool sq, struct ib_wc *wc, int num);
int ohca_av_from_ah(struct ohca_dev *dev, const struct rdma_ah_attr *ah,
		    struct ohca_av *av);
int ohca_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init_attr,
		   struct ib_udata *udata);
int ohca_destroy_ah(struct ib_ah *ibah, u32 flags);

/* ohca_mcast.c */
int ohca_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int ohca_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int ohca_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *ah_attr);
int ohca_wr_opcode(enum ib_wr_opcode opcode);

/* ohca_dm.c */
extern const struct uapi_definition ohca_uapi_defs[];
u64 ohca_max_dm_size(struct ohca_dev *dev);
struct ib_dm *ohca_alloc_dm(struct ib_device *ibdev,
			    struct ib_ucontext *ibuctx,
			    struct ib_dm_alloc_attr *attr,
			    struct uverbs_attr_bundle *attrs);
int ohca_dealloc_dm(struct ib_dm *ibdm, struct uverbs_attr_bundle *attrs);
struct ib_mr *ohca_reg_dm_mr(struct ib_pd *ibpd, struct ib_dm *ibdm,
			     struct ib_dm_mr_attr *attr,
			     struct uverbs_attr_bundle *attrs);
void ohca_dm_release(struct ohca_dev *dev, u32 handle);

/* ohca_mw.c */
bool ohca_has_xrc(struct ohca_dev *dev);

/* ohca_flow.c */
bool ohca_has_raw(struct ohca_dev *dev);
struct ib_flow *ohca_create_flow(struct ib_qp *ibqp,
				 struct ib_flow_attr *attr,
				 struct ib_udata *udata);
int ohca_destroy_flow(struct ib_flow *ibflow);
int ohca_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);
int ohca_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);
u32 ohca_xrcdn(struct ib_xrcd *ibxrcd);
int ohca_create_xrc_tgt_qp(struct ohca_dev *dev, struct ohca_qp *qp,
			   struct ib_qp_init_attr *init);
bool ohca_has_mw(struct ohca_dev *dev);
u32 ohca_max_mw(struct ohca_dev *dev);
int ohca_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int ohca_dealloc_mw(struct ib_mw *ibmw);

/* ohca_srq.c */
int ohca_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		    struct ib_udata *udata);
int ohca_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int ohca_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		    enum ib_srq_attr_mask mask, struct ib_udata *udata);
int ohca_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int ohca_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr);
void ohca_srq_event(struct ohca_dev *dev, u32 srqn, u16 code);

/* ohca_stats.c */
extern const struct ib_device_ops ohca_stats_ops;

/* ohca_debugfs.c */
void ohca_debugfs_init(struct ohca_dev *dev);
void ohca_debugfs_cleanup(struct ohca_dev *dev);
int ohca_init_fault(struct ohca_dev *dev, unsigned int *step);
void ohca_debugfs_module_init(void);
void ohca_debugfs_module_exit(void);

#endif /* OHCA_H */
