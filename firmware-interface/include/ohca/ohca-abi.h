/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * ohca kernel <-> provider uAPI: the driver-specific parts of the uverbs
 * commands, following the layout rules of include/uapi/rdma/ *-abi.h
 * (naturally aligned, explicit padding, no implicit holes).
 */
#ifndef OHCA_ABI_USER_H
#define OHCA_ABI_USER_H

#include <linux/types.h>

/*
 * Bumped on any incompatible change; the provider refuses other values.
 * 2: comp_mask in the requests, a ucontext request, max_inline in the
 * ucontext response; the unused uar_index, device_caps and PD response
 * are gone.
 *
 * Extension rules: a request's comp_mask names the optional fields the
 * provider filled in (and so the size it sent); the kernel refuses
 * unknown comp_mask bits and nonzero reserved or trailing bytes. A
 * response's comp_mask names the optional fields the kernel filled in;
 * a field whose bit is clear (an older kernel, or a response buffer too
 * short to hold it) reads as 0 and means "not known". Requests define the
 * comp_mask bits for doorbell records (enum ohca_create_cq_mask, enum
 * ohca_create_qp_mask), offered when the ucontext response has
 * OHCA_UCTX_RESP_DB_RECORD, and enum ohca_create_srq_mask, offered when
 * it has OHCA_UCTX_RESP_SRQ_DB_RECORD.
 */
#define OHCA_UVERBS_ABI_VERSION		2

/* ibv_get_context request (optional: an empty one means all zero). */
struct ohca_ibv_alloc_ucontext {
	__u32 comp_mask;
	__u32 reserved;
};

/* The optional fields of struct ohca_ibv_alloc_ucontext_resp. */
enum ohca_alloc_ucontext_resp_mask {
	/*
	 * device_caps holds the device's OHCA_DEV_CAP_* bits (QUERY_DEVICE's
	 * dev_caps). Without it the provider offers no optional work request
	 * opcode (ATOMIC_WRITE; LOCAL_INV and SEND_INV; BIND_MW): it cannot
	 * tell whether the device executes them. The word was reserved (0)
	 * before, so an older kernel reads as none.
	 */
	OHCA_UCTX_RESP_DEVICE_CAPS	= 1u << 0,
	/*
	 * The kernel takes doorbell records (OHCA_CREATE_CQ_DB_RECORD,
	 * OHCA_CREATE_QP_DB_RECORD) and the device keeps them: the provider
	 * may keep a CQ's consumer index and an RQ's producer index in its
	 * memory instead of writing MMIO doorbells. Without it (an older
	 * kernel, or a device without OHCA_DEV_CAP_DB_RECORD), MMIO only.
	 */
	OHCA_UCTX_RESP_DB_RECORD	= 1u << 1,
	/*
	 * The kernel takes an SRQ's doorbell record (OHCA_CREATE_SRQ_DB_RECORD)
	 * and the device keeps it (OHCA_DEV_CAP_SRQ_DB_RECORD): posting to an
	 * SRQ need not write its MMIO doorbell. A bit of its own, as a kernel
	 * that offers OHCA_UCTX_RESP_DB_RECORD alone refuses the SRQ's.
	 */
	OHCA_UCTX_RESP_SRQ_DB_RECORD	= 1u << 2,
};

/*
 * ibv_get_context response: this context's doorbell page, the limits
 * the provider sizes its work requests by and the device's optional
 * features.
 */
struct ohca_ibv_alloc_ucontext_resp {
	__u32 comp_mask;		/* enum ohca_alloc_ucontext_resp_mask */
	__u32 db_page_size;
	__aligned_u64 db_mmap_key;	/* mmap offset of the doorbell page */
	__u32 max_inline;		/* largest inline data of a send WQE */
	__u32 device_caps;		/* OHCA_UCTX_RESP_DEVICE_CAPS */
};

/*
 * Doorbell records (OHCA_UCTX_RESP_DB_RECORD): db_addr is the user address
 * of a struct ohca_db_record (8-byte aligned, inside one page), which the
 * kernel pins, one pin per page per context shared by the records in it.
 */
enum ohca_create_cq_mask {
	OHCA_CREATE_CQ_DB_RECORD	= 1u << 0,	/* db_addr is valid */
};

/*
 * ibv_create_cq: the provider allocates the ring (a power-of-two number of
 * struct ohca_cqe, page aligned, zeroed) and the kernel pins it.
 */
struct ohca_ibv_create_cq {
	__aligned_u64 buf_addr;
	__u32 log_size;
	__u32 comp_mask;		/* enum ohca_create_cq_mask */
	__aligned_u64 db_addr;		/* OHCA_CREATE_CQ_DB_RECORD */
};

struct ohca_ibv_create_cq_resp {
	__u32 cqn;
	__u32 reserved;
};

/*
 * ibv_resize_cq: a new ring as for ibv_create_cq. The provider holds its
 * CQ lock across the command, with every polled entry returned through
 * the CQ doorbell; the unpolled CQEs are then in slots 0..cqes-1 of the
 * new ring and its consumer index restarts at 0.
 */
struct ohca_ibv_resize_cq {
	__aligned_u64 buf_addr;
	__u32 log_size;
	__u32 comp_mask;
};

struct ohca_ibv_resize_cq_resp {
	__u32 cqes;			/* unpolled CQEs moved */
	__u32 reserved;
};

/*
 * ibv_create_qp: the provider sizes the queues from the requested caps,
 * allocates both rings (page aligned, zeroed) and the kernel pins them.
 * A QP on an SRQ has no receive ring: rq_buf_addr, rq_log_size and
 * rq_log_stride are 0.
 * max_inline is at most the ucontext response's.
 */
enum ohca_create_qp_mask {
	/* rq_db_addr is valid: the RQ's doorbell record (not on an SRQ) */
	OHCA_CREATE_QP_DB_RECORD	= 1u << 0,
};

struct ohca_ibv_create_qp {
	__aligned_u64 sq_buf_addr;
	__aligned_u64 rq_buf_addr;
	__u8 sq_log_size;
	__u8 rq_log_size;
	__u8 sq_log_stride;
	__u8 rq_log_stride;
	__u32 max_inline;
	__u32 comp_mask;		/* enum ohca_create_qp_mask */
	__u32 reserved;
	__aligned_u64 rq_db_addr;	/* OHCA_CREATE_QP_DB_RECORD */
};

struct ohca_ibv_create_qp_resp {
	__u32 qpn;
	__u32 reserved;
};

/*
 * ibv_create_srq (and an XRC SRQ's ibv_create_srq_ex): the provider
 * allocates the ring of 2^log_size receive WQEs of 2^log_stride bytes
 * (page aligned, zeroed); the kernel pins it. comp_mask was reserved (0)
 * and the request 16 bytes: an older provider sends that, which the
 * kernel still takes (no record).
 */
enum ohca_create_srq_mask {
	/* db_addr is valid: the SRQ's doorbell record */
	OHCA_CREATE_SRQ_DB_RECORD	= 1u << 0,
};

struct ohca_ibv_create_srq {
	__aligned_u64 buf_addr;
	__u8 log_size;
	__u8 log_stride;
	__u16 reserved0;
	__u32 comp_mask;		/* enum ohca_create_srq_mask */
	__aligned_u64 db_addr;		/* OHCA_CREATE_SRQ_DB_RECORD */
};

struct ohca_ibv_create_srq_resp {
	__u32 srqn;
	__u32 reserved;
};

/*
 * ibv_create_wq (a receive WQ, OHCA_DEV_CAP_RSS): the provider allocates
 * the ring of 2^log_size receive WQEs of 2^log_stride bytes (page
 * aligned, zeroed); the kernel pins it. The WQ's number is the core's
 * response (wqn); it is rung with OHCA_DB_WQ on the context's page.
 */
struct ohca_ibv_create_wq {
	__aligned_u64 buf_addr;
	__u8 log_size;
	__u8 log_stride;
	__u16 reserved0;
	__u32 comp_mask;
};

/*
 * ibv_create_qp_ex of an RSS QP (IBV_QP_INIT_ATTR_IND_TABLE and
 * IBV_QP_INIT_ATTR_RX_HASH): the hash, sent instead of struct
 * ohca_ibv_create_qp; the response is struct ohca_ibv_create_qp_resp.
 */
struct ohca_ibv_create_rss_qp {
	__aligned_u64 rx_hash_fields_mask;	/* enum ibv_rx_hash_fields */
	__u8 rx_hash_function;			/* IBV_RX_HASH_FUNC_TOEPLITZ */
	__u8 rx_key_len;			/* 40 */
	__u16 reserved0;
	__u32 comp_mask;
	__u8 rx_hash_key[40];
};

/*
 * ibv_create_ah: the address handle lives in the provider only; it puts
 * the address vector into every UD send WQE (struct ohca_ud_seg). The
 * kernel answers with what the provider cannot know: the destination MAC
 * the RDMA core resolved, the source GID's VLAN and network type.
 */
struct ohca_ibv_create_ah_resp {
	__u8 dmac[6];
	__u16 vlan_id;			/* 0xffff: no VLAN */
	__u8 network_type;		/* enum ohca_network_type */
	__u8 reserved[7];
};

/*
 * Driver attributes of the uverbs ioctl methods, in the driver's
 * namespace (bit UVERBS_ID_NS_SHIFT, 12, of the attribute id).
 *
 * ibv_alloc_dm (UVERBS_METHOD_DM_ALLOC) answers, besides the common
 * handle, the mmap offset (__u64, mandatory) under which the allocation's
 * pages of BAR2, and nothing else, can be mapped: PAGE_ALIGN(length)
 * bytes, uncached. The provider reads and writes device memory through
 * that mapping; the device's memory returns to the free pool once the DM
 * is freed and no mapping of it is left.
 */
#define OHCA_IB_ATTR_NS_DRIVER		(1U << 12)
enum ohca_ib_dm_alloc_attrs {
	OHCA_IB_ATTR_ALLOC_DM_RESP_MMAP_OFFSET = OHCA_IB_ATTR_NS_DRIVER,
};

#endif /* OHCA_ABI_USER_H */
