/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ohca_ib: definitions shared by the RDMA driver's files (kernel/ib/).
 * ohca_ib.ko binds to the auxiliary device ohca_core.ko creates for the
 * function and registers the ib_device; everything it asks of the device
 * goes through ohca_core.h.
 */
#ifndef OHCA_IB_H
#define OHCA_IB_H

#include <linux/mutex.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "ohca_compat.h"
#include "ohca_core.h"

/* ohca_ibdev.flags, set and cleared atomically. */
enum ohca_ib_flag {
	OHCA_IB_REGISTERED,		/* port events go to the IB core */
};

/* The device-wide tables with a kernel reserve (ohca_quota.c). */
enum ohca_quota_res {
	OHCA_QUOTA_UCTX,		/* doorbell pages: the admin's reserve */
	OHCA_QUOTA_PD,
	OHCA_QUOTA_CQ,
	OHCA_QUOTA_QP,
	OHCA_QUOTA_SRQ,
	OHCA_QUOTA_MR,
	OHCA_QUOTA_NR
};

/*
 * What each table holds (user and kernel objects), the most user objects
 * may fill it to and the entries kept back from them.
 */
struct ohca_quota {
	atomic_t used[OHCA_QUOTA_NR];
	u32 user_max[OHCA_QUOTA_NR];
	u32 reserve[OHCA_QUOTA_NR];
};

/* The RDMA function: one per auxiliary device bound. */
struct ohca_ibdev {
	struct ib_device ibdev;		/* must be first (ib_alloc_device) */
	struct ohca_dev *cdev;		/* the function, owned by ohca_core */
	struct ohca_event_client events;
	unsigned long flags;		/* enum ohca_ib_flag */
	/*
	 * Serializes ohca_port_update(): reading the port state, storing it
	 * in port_active and dispatching its event, so that the last event
	 * the core gets is for the last state read (updates come from EQ 0's
	 * interrupt, ndo_open/ndo_stop and registration). IRQ-safe; guards
	 * port_active once OHCA_IB_REGISTERED is set.
	 */
	spinlock_t port_lock;
	bool port_active;		/* port state last reported */
	/*
	 * IB port: CapabilityMask bits the host's agents set (IsSM, IsCM),
	 * given to the device with SET_PORT_CAP. port_cap_lock (a mutex:
	 * the command sleeps) serializes ohca_ib_modify_port(); query_port
	 * reads port_cap_set without it (READ_ONCE).
	 */
	struct mutex port_cap_lock;
	u32 port_cap_set;

	/*
	 * cqn -> struct ohca_cq and qpn -> struct ohca_qp, for the event
	 * callbacks. The xarrays lock themselves (IRQ-safe); the callbacks
	 * only load. An object is erased after the device destroyed it and
	 * freed only after ohca_sync_*_events() for the EQs whose callbacks
	 * may still hold it (see ohca_cq.c and ohca_qp.c).
	 */
	struct xarray cq_xa;
	struct xarray qp_xa;
	struct xarray srq_xa;		/* srqn -> struct ohca_srq, as qp_xa */
	/* ODP MRs by key, for page faults and prefetch (ohca_odp.c). */
	struct xarray odp_xa;
	atomic_t odp_works;		/* page-fault work items queued */
	bool odp_stopped;		/* teardown: fault events dropped */
	struct ohca_quota quota;	/* the kernel's reserve (ohca_quota.c) */
};

struct ohca_ucontext {
	struct ib_ucontext ibucontext;	/* must be first */
	u32 uar_index;
	struct rdma_user_mmap_entry *db_entry;
	/* Pinned pages of doorbell records (ohca_dbrec.c). */
	struct mutex db_lock;
	struct list_head db_pages;
	u32 db_npages;
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
	struct ohca_ibdev *dev;
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
	u32 foreign;			/* CQEs dropped: not this CQ's */
	struct ohca_db_page *db_page;	/* user CQ: its doorbell record */
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
	struct ohca_db_page *rq_db_page;	/* user RQ's doorbell record */
	u32 max_inline;
	u32 max_send_sge;
	u32 max_recv_sge;
	enum ib_sig_type sq_sig_type;
	struct mutex state_lock;	/* serialises modify_qp, guards state */
	enum ib_qp_state state;		/* last state set by modify_qp */
	/* Kernel QP: on its send / recv CQ's lists, under that CQ's lock. */
	struct list_head scq_node;
	struct list_head rcq_node;
	bool rss;			/* an RSS QP: no queues (ohca_wq.c) */
};

/* A receive WQ (ohca_wq.c): user only, its ring in @wq.umem. */
struct ohca_rwq {
	struct ib_wq ibwq;		/* must be first */
	u32 wqn;
	struct ohca_wq wq;
};

/* An RWQ indirection table; the core allocates it. */
struct ohca_rwq_ind_table {
	struct ib_rwq_ind_table ibtbl;	/* must be first */
	u32 tbl_num;
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
	struct ohca_db_page *db_page;	/* user SRQ: its doorbell record */
	atomic_t done;
	u32 max_sge;
};

struct ohca_user_mmap_entry {
	struct rdma_user_mmap_entry rdma_entry;
	u64 address;			/* bus address of the first page */
	u32 dm_handle;			/* device memory: freed with the entry */
};

static inline struct ohca_ibdev *to_ohca_dev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct ohca_ibdev, ibdev);
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

static inline struct ohca_rwq *to_ohca_rwq(struct ib_wq *ibwq)
{
	return container_of(ibwq, struct ohca_rwq, ibwq);
}

static inline struct ohca_rwq_ind_table *
to_ohca_ind_tbl(struct ib_rwq_ind_table *ibtbl)
{
	return container_of(ibtbl, struct ohca_rwq_ind_table, ibtbl);
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

/**
 * ohca_udata_tail_clear() - whether a request's unknown tail is zero
 * @udata: the request
 * @len: the bytes of it this driver knows
 *
 * uAPI extension rule (ohca-abi.h): the bytes past @len, which a newer
 * provider may send, must be zero.
 *
 * Return: true if there are none or all are zero.
 */
static inline bool ohca_udata_tail_clear(struct ib_udata *udata, size_t len)
{
	return udata->inlen <= len ||
	       ib_is_udata_cleared(udata, len, udata->inlen - len);
}

/* ohca_verbs.c */
extern const struct ib_device_ops ohca_dev_ops;
bool ohca_port_active(struct ohca_ibdev *dev);
void ohca_port_update(struct ohca_ibdev *dev);

/* ohca_ib_port.c: the InfiniBand port */
/* The GID table of an IB port: the port GUID's GID (no alias GUIDs). */
#define OHCA_IB_GID_TBL_LEN	1
u32 ohca_ib_pkey_tbl_len(struct ohca_ibdev *dev);
int ohca_ib_query_port(struct ohca_ibdev *dev, struct ib_port_attr *props);
int ohca_ib_modify_port(struct ohca_ibdev *dev, int mask,
			struct ib_port_modify *props);
int ohca_query_gid(struct ib_device *ibdev, u32 port, int index,
		   union ib_gid *gid);
int ohca_ib_query_pkey(struct ohca_ibdev *dev, u16 index, u16 *pkey);
int ohca_process_mad(struct ib_device *ibdev, int mad_flags, u32 port,
		     const struct ib_wc *in_wc, const struct ib_grh *in_grh,
		     const struct ib_mad *in, struct ib_mad *out,
		     size_t *out_mad_size, u16 *out_mad_pkey_index);
void ohca_ib_port_events(struct ohca_ibdev *dev);
int ohca_av_ib_from_ah(struct ohca_ibdev *dev, const struct rdma_ah_attr *ah,
		       struct ohca_av *av);
void ohca_av_ib_to_ah(const struct ohca_av *av, struct rdma_ah_attr *ah);

/* ohca_destroy.c */
bool ohca_destroy_failed(struct ohca_ibdev *dev, int err, const char *what,
			 u32 handle);
bool ohca_destroy_object(struct ohca_ibdev *dev, struct xarray *xa, u16 opcode,
			 u32 handle, const char *what, struct ohca_comp_eq *ceq);

/* ohca_pbl.c */
int ohca_pbl_from_umem(struct ohca_ibdev *dev, struct ib_umem *umem,
		       unsigned long pgsz, struct ohca_pbl *pbl,
		       struct ohca_pbl_mem *mem);
int ohca_pbl_from_coherent(struct ohca_ibdev *dev, dma_addr_t addr,
			   size_t bytes, struct ohca_pbl *pbl,
			   struct ohca_pbl_mem *mem);
void ohca_pbl_free(struct ohca_ibdev *dev, struct ohca_pbl_mem *mem);
struct ib_umem *ohca_umem_ring(struct ohca_ibdev *dev, u64 addr, size_t bytes,
			       struct ohca_pbl *pbl, struct ohca_pbl_mem *mem);
unsigned long ohca_pgsz_bitmap(struct ohca_ibdev *dev);
struct ohca_db_page;
int ohca_db_record_get(struct ohca_ibdev *dev, struct ohca_ucontext *uctx,
		       u64 uaddr, struct ohca_db_page **page, __le64 *record);
void ohca_db_record_unmap(struct ohca_db_page *page);
bool ohca_db_record_ok(struct ohca_ibdev *dev);
bool ohca_srq_db_record_ok(struct ohca_ibdev *dev);
u32 ohca_access_to_dev(int ib_access);
int ohca_access_from_dev(u32 access);

/* ohca_mr.c */
int ohca_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int ohca_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
struct ib_mr *ohca_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
			       u64 iova, int access, struct ib_udata *udata);
struct ib_mr *ohca_get_dma_mr(struct ib_pd *ibpd, int access);
int ohca_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
/* ohca_odp.c */
bool ohca_has_odp(struct ohca_ibdev *dev);
void ohca_odp_query_caps(struct ohca_ibdev *dev, struct ib_device_attr *props);
void ohca_odp_fault_event(struct ohca_ibdev *dev, const struct ohca_eqe *eqe);
void ohca_odp_drain(struct ohca_ibdev *dev);
struct ib_mr *ohca_reg_user_mr_odp(struct ib_pd *ibpd, u64 start, u64 length,
				   u64 iova, int access);
void ohca_dereg_mr_odp(struct ohca_mr *mr);
int ohca_advise_mr(struct ib_pd *pd, enum ib_uverbs_advise_mr_advice advice,
		   u32 flags, struct ib_sge *sg_list, u32 num_sge,
		   struct uverbs_attr_bundle *attrs);
struct ib_mr *ohca_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				 u64 length, u64 iova, int access,
				 struct ib_pd *ibpd, struct ib_udata *udata);

/* ohca_fastreg.c */
u32 ohca_fast_reg_page_list_len(struct ohca_ibdev *dev);
struct ib_mr *ohca_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type mr_type,
			    u32 max_num_sg);
int ohca_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		   unsigned int *sg_offset);
void ohca_fast_reg_free(struct ohca_ibdev *dev, struct ohca_mr *mr);
int ohca_build_reg_mr_wqe(struct ohca_ibdev *dev, const struct ib_reg_wr *wr,
			  bool signaled, struct ohca_reg_mr_wqe *wqe);

/* ohca_cq.c */
int ohca_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		   struct ib_udata *udata);
int ohca_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int ohca_modify_cq(struct ib_cq *ibcq, u16 cq_count, u16 cq_period);
void ohca_cq_query_caps(struct ohca_ibdev *dev, struct ib_device_attr *props);
int ohca_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int ohca_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int ohca_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
void ohca_cq_event(struct ohca_ibdev *dev, u32 cqn, bool error, u16 code);
enum ib_wc_status ohca_wc_status(u8 status);
void ohca_cq_clean(struct ohca_ibdev *dev, struct ohca_cq *cq, u32 qpn);
void ohca_cq_kick(struct ohca_cq *cq);
bool ohca_cqe_is_cq_own(const struct ohca_cq *cq, const struct ohca_qp *qp,
			const struct ohca_cqe *cqe);

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
void ohca_qp_event(struct ohca_ibdev *dev, u32 qpn, u16 code);
enum ib_event_type ohca_qp_event_type(u16 code, bool *ok);
u32 ohca_qp_mask_to_dev(int ib_mask);
int ohca_qp_flush_sw(struct ohca_qp *qp, bool sq, struct ib_wc *wc, int num);
int ohca_av_from_ah(struct ohca_ibdev *dev, const struct rdma_ah_attr *ah,
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
u64 ohca_max_dm_size(struct ohca_ibdev *dev);
struct ib_dm *ohca_alloc_dm(struct ib_device *ibdev,
			    struct ib_ucontext *ibuctx,
			    struct ib_dm_alloc_attr *attr,
			    struct uverbs_attr_bundle *attrs);
int ohca_dealloc_dm(struct ib_dm *ibdm, struct uverbs_attr_bundle *attrs);
struct ib_mr *ohca_reg_dm_mr(struct ib_pd *ibpd, struct ib_dm *ibdm,
			     struct ib_dm_mr_attr *attr,
			     struct uverbs_attr_bundle *attrs);
void ohca_dm_release(struct ohca_ibdev *dev, u32 handle);

/* ohca_mw.c */
bool ohca_has_xrc(struct ohca_ibdev *dev);

/* ohca_flow.c */
bool ohca_has_raw(struct ohca_ibdev *dev);
struct ib_flow *ohca_create_flow(struct ib_qp *ibqp,
				 struct ib_flow_attr *attr,
				 struct ib_udata *udata);
int ohca_destroy_flow(struct ib_flow *ibflow);
int ohca_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);
int ohca_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);
u32 ohca_xrcdn(struct ib_xrcd *ibxrcd);
int ohca_create_xrc_tgt_qp(struct ohca_ibdev *dev, struct ohca_qp *qp,
			   struct ib_qp_init_attr *init);
bool ohca_has_mw(struct ohca_ibdev *dev);
u32 ohca_max_mw(struct ohca_ibdev *dev);
int ohca_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int ohca_dealloc_mw(struct ib_mw *ibmw);

/* ohca_wq.c */
extern const struct ib_device_ops ohca_rss_ops;
bool ohca_has_rss(struct ohca_ibdev *dev);
struct ib_wq *ohca_create_wq(struct ib_pd *ibpd, struct ib_wq_init_attr *init,
			     struct ib_udata *udata);
int ohca_destroy_wq(struct ib_wq *ibwq, struct ib_udata *udata);
int ohca_modify_wq(struct ib_wq *ibwq, struct ib_wq_attr *attr, u32 mask,
		   struct ib_udata *udata);
int ohca_create_rwq_ind_table(struct ib_rwq_ind_table *ibtbl,
			      struct ib_rwq_ind_table_init_attr *init,
			      struct ib_udata *udata);
int ohca_destroy_rwq_ind_table(struct ib_rwq_ind_table *ibtbl);
int ohca_create_rss_qp(struct ohca_ibdev *dev, struct ohca_qp *qp,
		       struct ib_qp_init_attr *init, struct ib_udata *udata);

/* ohca_srq.c */
int ohca_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		    struct ib_udata *udata);
int ohca_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int ohca_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		    enum ib_srq_attr_mask mask, struct ib_udata *udata);
int ohca_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int ohca_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
		       const struct ib_recv_wr **bad_wr);
void ohca_srq_event(struct ohca_ibdev *dev, u32 srqn, u16 code);

/* ohca_quota.c */
u32 ohca_quota_reserve(u32 max);
void ohca_quota_init(struct ohca_ibdev *dev);
int ohca_quota_get(struct ohca_ibdev *dev, enum ohca_quota_res res,
		   bool user);
void ohca_quota_put(struct ohca_ibdev *dev, enum ohca_quota_res res);
int ohca_quota_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int ohca_quota_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int ohca_quota_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
			 struct ohca_create_cq_arg *arg);
int ohca_quota_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int ohca_quota_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
			 struct ib_udata *udata);
int ohca_quota_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int ohca_quota_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
			  struct ib_udata *udata);
int ohca_quota_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
struct ib_mr *ohca_quota_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				     u64 iova, int access,
				     struct ib_udata *udata);
struct ib_mr *ohca_quota_reg_dm_mr(struct ib_pd *ibpd, struct ib_dm *ibdm,
				   struct ib_dm_mr_attr *attr,
				   struct uverbs_attr_bundle *attrs);
struct ib_mr *ohca_quota_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *ohca_quota_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type mr_type,
				  u32 max_num_sg);
int ohca_quota_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);

/* ohca_stats.c */
extern const struct ib_device_ops ohca_stats_ops;

#endif /* OHCA_IB_H */
