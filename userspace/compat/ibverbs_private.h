/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * The private libibverbs provider interface that libohca uses, declared
 * here because distributions (Debian bookworm among them) do not install
 * rdma-core's libibverbs/driver.h, kern-abi.h, ccan/ or util/.
 *
 * Only what the provider uses is declared.  Every structure marked
 * LAYOUT-CRITICAL is shared by address with the running libibverbs.so.1,
 * so it must match the layout that library was compiled with, byte for
 * byte.  These layouts changed between rdma-core releases while the symbol
 * version stayed IBVERBS_PRIVATE_34 (see docs / research provider-abi.md),
 * so this file records the facts per rdma-core release and refuses to
 * compile for a release it has no record for.  The build passes
 * OHCA_RDMA_CORE_VERSION (the major number of the installed rdma-core,
 * read by userspace/Makefile).
 *
 * rdma-core 44 (Debian bookworm 44.0-2) facts were read from the v44.0
 * sources: libibverbs/driver.h, libibverbs/kern-abi.h, libibverbs/init.c,
 * libibverbs/cmd_device.c, ccan/list.h, util/udma_barrier.h, util/mmio.h.
 * The numbers in the static asserts below are x86_64 (LP64) values.
 *
 * rdma-core 56 (Debian trixie 56.1-1): the private structures declared
 * here have the same members in the same order in v56.1's
 * libibverbs/driver.h (76 context ops, still IBVERBS_PRIVATE_34); the
 * public ibv_qp_ex (360 bytes) and ibv_port_attr (56) grew, and with
 * ibv_qp_ex the provider's verbs_qp.  So one library per release: a
 * provider built against v44 must not be loaded by libibverbs 56.
 *
 * rdma-core 65 (Debian sid 65.0-1.1), read from v65.0's driver.h,
 * cmd_ioctl.h and verbs.h: the private ABI label is 65
 * (verbs_register_driver_65, so the library is libohca-rdmav65.so);
 * verbs_context_ops has 93 slots (17 new, OHCA_SLOT_65), verbs_context 6
 * more entry points at its front (696 bytes), ibv_cmd_get_context() an
 * fd_arr parameter (since 57).  verbs_sysfs_dev, verbs_device(_ops),
 * verbs_match_ent, verbs_mr/cq/qp/srq/xrcd/dm and ibv_command_buffer
 * are v56's, as are every ibv_cmd_* signature libohca uses.
 */
#ifndef OHCA_COMPAT_IBVERBS_PRIVATE_H
#define OHCA_COMPAT_IBVERBS_PRIVATE_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <infiniband/verbs.h>	/* public: verbs_context, ibv_device, ... */
#include <rdma/ib_user_verbs.h>	/* kernel uAPI: struct ib_uverbs_* */
#include <rdma/rdma_user_ioctl_cmds.h> /* ioctl header and attributes */

#ifndef OHCA_RDMA_CORE_VERSION
#error "OHCA_RDMA_CORE_VERSION is not set: build through userspace/Makefile"
#endif

#if OHCA_RDMA_CORE_VERSION == 44 || OHCA_RDMA_CORE_VERSION == 56
/* Private ABI label exported by these releases: IBVERBS_PRIVATE_34. */
#define OHCA_IBVERBS_PABI	34
#elif OHCA_RDMA_CORE_VERSION == 65
/* From rdma-core 57 on, the label follows the release. */
#define OHCA_IBVERBS_PABI	65
#else
#error "no layout record for this rdma-core release in compat/ibverbs_private.h"
#endif

#if !defined(__x86_64__)
#error "the recorded layouts are for x86_64 (LP64) only"
#endif

/* ccan/list.h: struct list_node is two pointers; embedded in the structs. */
struct ohca_list_node {
	struct ohca_list_node *next;
	struct ohca_list_node *prev;
};

#define ohca_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/* ------------------------------------------------------------------ */
/* Logging (driver.h).  __verbs_log exists since rdma-core 37.         */
/* ------------------------------------------------------------------ */

enum {
	VERBS_LOG_LEVEL_NONE,
	VERBS_LOG_ERR,
	VERBS_LOG_WARN,
	VERBS_LOG_INFO,
	VERBS_LOG_DEBUG,
};

/* libibverbs prints only with VERBS_LOG_LEVEL and VERBS_LOG_FILE set in
 * the environment; ctx may be NULL (v44 does not dereference it). */
void __verbs_log(struct verbs_context *ctx, uint32_t level,
		 const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* As driver.h: prefix "<ibdev>: <function>:<line>: ", keep errno.  ctx
 * must be a live context; before one exists call __verbs_log(NULL, ...). */
#define verbs_log(ctx, level, format, ...)                                  \
	do {                                                                \
		int verbs_log_errno_ = errno;                               \
		__verbs_log(ctx, level, "%s: %s:%d: " format,               \
			    (ctx)->context.device->name, __func__, __LINE__, \
			    ##__VA_ARGS__);                                 \
		errno = verbs_log_errno_;                                   \
	} while (0)
#define verbs_debug(ctx, format, ...) \
	verbs_log(ctx, VERBS_LOG_DEBUG, format, ##__VA_ARGS__)
#define verbs_info(ctx, format, ...) \
	verbs_log(ctx, VERBS_LOG_INFO, format, ##__VA_ARGS__)
#define verbs_warn(ctx, format, ...) \
	verbs_log(ctx, VERBS_LOG_WARN, format, ##__VA_ARGS__)
#define verbs_err(ctx, format, ...) \
	verbs_log(ctx, VERBS_LOG_ERR, format, ##__VA_ARGS__)

/* ------------------------------------------------------------------ */
/* Device matching and registration (driver.h).                       */
/* ------------------------------------------------------------------ */

enum {
	VERBS_MATCH_SENTINEL = 0,
	VERBS_MATCH_PCI = 1,
	VERBS_MATCH_MODALIAS = 2,
	VERBS_MATCH_DRIVER_ID = 3,
};

/* LAYOUT-CRITICAL: libibverbs walks the table until kind == SENTINEL. */
struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;
		uint64_t driver_id;
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;
};

#define VERBS_PCI_MATCH(_vendor, _device, _data)                          \
	{                                                                  \
		.driver_data = (void *)(_data), .vendor = (_vendor),       \
		.device = (_device), .kind = VERBS_MATCH_PCI,              \
	}

/*
 * LAYOUT-CRITICAL: one uverbs device as libibverbs found it (netlink or
 * sysfs), allocated by libibverbs and passed to alloc_device().  The
 * provider reads ibdev_name, sysfs_name and abi_ver.  rdma-core 34 lacks
 * num_ports (abi_ver 4 bytes earlier) although it is also PRIVATE_34.
 */
struct verbs_sysfs_dev {
	struct ohca_list_node entry;
	void *provider_data;
	const struct verbs_match_ent *match;
	unsigned int flags;
	char sysfs_name[IBV_SYSFS_NAME_MAX];
	dev_t sysfs_cdev;
	char ibdev_name[IBV_SYSFS_NAME_MAX];
	char ibdev_path[IBV_SYSFS_PATH_MAX];
	char modalias[512];
	uint64_t node_guid;
	uint32_t driver_id;
	enum ibv_node_type node_type;
	int ibdev_idx;
	uint32_t num_ports;
	uint32_t abi_ver;
	struct timespec time_created;
};

struct verbs_device;

/* LAYOUT-CRITICAL: read by libibverbs from the provider's const object. */
struct verbs_device_ops {
	const char *name;
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct verbs_match_ent *match_table;
	const struct verbs_device_ops **static_providers;
	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);
	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd, void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);
	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};

/* LAYOUT-CRITICAL: the provider allocates it (alloc_device); libibverbs
 * fills ops, refcount, entry, sysfs and the embedded ibv_device. */
struct verbs_device {
	struct ibv_device device; /* must be first */
	const struct verbs_device_ops *ops;
	atomic_int refcount;
	struct ohca_list_node entry;
	struct verbs_sysfs_dev *sysfs;
	uint64_t core_support;
};

/* The symbol name carries the private ABI number: a libibverbs with
 * another PABI fails the dlopen (RTLD_NOW) instead of misbehaving.
 * ohca_verbs_register_driver is verbs_register_driver_<PABI>. */
#define OHCA_PASTE_(a, b) a##b
#define OHCA_PASTE(a, b) OHCA_PASTE_(a, b)
#define ohca_verbs_register_driver \
	OHCA_PASTE(verbs_register_driver_, OHCA_IBVERBS_PABI)
void ohca_verbs_register_driver(const struct verbs_device_ops *ops);

/* ------------------------------------------------------------------ */
/* Verbs objects the ibv_cmd_* helpers fill (driver.h).                */
/* ------------------------------------------------------------------ */

enum ibv_mr_type {
	IBV_MR_TYPE_MR,
	IBV_MR_TYPE_NULL_MR,
	IBV_MR_TYPE_IMPORTED_MR,
	IBV_MR_TYPE_DMABUF_MR,
};

/* LAYOUT-CRITICAL: ibv_cmd_reg_mr writes ibv_mr, mr_type and access;
 * ibv_cmd_dereg_mr and libibverbs' ibv_dereg_mr read them. */
struct verbs_mr {
	struct ibv_mr ibv_mr;
	enum ibv_mr_type mr_type;
	int access;
};

/* LAYOUT-CRITICAL: the provider's CQ starts with it (libibverbs converts
 * between ibv_cq and ibv_cq_ex by this union). */
struct verbs_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	};
};

/* LAYOUT-CRITICAL: ibv_cmd_open_xrcd writes handle (and comp_mask);
 * ibv_cmd_create_srq_ex and ibv_cmd_create_qp_ex read handle. */
struct verbs_xrcd {
	struct ibv_xrcd xrcd;
	uint32_t comp_mask;
	uint32_t handle;
};

/* LAYOUT-CRITICAL: ibv_cmd_create_srq_ex writes srq_type, xrcd, cq and
 * srq_num after the ibv_srq (no comp_mask in this layout). */
struct verbs_srq {
	struct ibv_srq srq;
	enum ibv_srq_type srq_type;
	struct verbs_xrcd *xrcd;
	struct ibv_cq *cq;
	uint32_t srq_num;
};

/* LAYOUT-CRITICAL: ibv_cmd_alloc_dm writes dm.context and handle;
 * ibv_cmd_free_dm and ibv_cmd_reg_dm_mr read handle. */
struct verbs_dm {
	struct ibv_dm dm;
	uint32_t handle;
};

/*
 * LAYOUT-CRITICAL: one block of ioctl attributes (cmd_ioctl.h).  A
 * provider passes its driver attributes to an ibv_cmd_* helper as a
 * "link" block: libibverbs copies the attributes from hdr.attrs up to
 * next_attr into the command it sends.  uhw_in_idx must be
 * OHCA_CMDB_NO_UHW_INDEX in a link without driver udata.
 */
struct ibv_command_buffer {
	struct ibv_command_buffer *next;
	struct ib_uverbs_attr *next_attr;
	struct ib_uverbs_attr *last_attr;
	uint8_t uhw_in_idx;
	uint8_t uhw_out_idx;
	uint8_t uhw_in_headroom_dwords;
	uint8_t uhw_out_headroom_dwords;
	uint8_t buffer_error:1;
	uint8_t fallback_require_ex:1;
	uint8_t fallback_ioctl_only:1;
	struct ib_uverbs_ioctl_hdr hdr;
};

#define OHCA_CMDB_NO_UHW_INDEX 0xff

enum verbs_qp_mask {
	VERBS_QP_XRCD = 1 << 0,
	VERBS_QP_EX = 1 << 1,
};

/* LAYOUT-CRITICAL: the provider's QP starts with it.  ibv_cmd_create_qp
 * (the only create helper libohca uses) writes only the ibv_qp part;
 * comp_mask stays 0 (no XRC, no ibv_qp_ex).  comp_mask moved with every
 * growth of the public ibv_qp_ex (344 in v43, 352 in v44, 360 in v45-56). */
struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;
	struct verbs_xrcd *xrcd;
};

/* ------------------------------------------------------------------ */
/* Context (driver.h).                                                 */
/* ------------------------------------------------------------------ */

/*
 * LAYOUT-CRITICAL: verbs_set_ops() copies every non-NULL slot by offset,
 * so the slot count and (alphabetical) order must be the running
 * library's: 76 slots in rdma-core 44 and 56, 93 in 65 (the 17 slots
 * OHCA_SLOT_65 adds).  The slots libohca fills are typed; the others are
 * placeholders of pointer size and must stay NULL.
 */
typedef void (*ohca_unused_op)(void);

#if OHCA_RDMA_CORE_VERSION >= 65
#define OHCA_SLOT_65(name) ohca_unused_op name;
#else
#define OHCA_SLOT_65(name)
#endif

struct verbs_context_ops {
	int (*advise_mr)(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			 uint32_t flags, struct ibv_sge *sg_list,
			 uint32_t num_sges);
	OHCA_SLOT_65(alloc_buf)
	struct ibv_dm *(*alloc_dm)(struct ibv_context *context,
				   struct ibv_alloc_dm_attr *attr);
	OHCA_SLOT_65(alloc_dmah)
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	ohca_unused_op alloc_null_mr;
	struct ibv_pd *(*alloc_parent_domain)(
		struct ibv_context *context,
		struct ibv_parent_domain_init_attr *attr);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	ohca_unused_op alloc_td;
	ohca_unused_op async_event;
	ohca_unused_op attach_counters_point_flow;
	int (*attach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw,
		       struct ibv_mw_bind *mw_bind);
	int (*close_xrcd)(struct ibv_xrcd *xrcd);
	ohca_unused_op cq_event;
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd,
				    struct ibv_ah_attr *attr);
	OHCA_SLOT_65(create_comp_cntr)
	ohca_unused_op create_counters;
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel,
				    int comp_vector);
	struct ibv_cq_ex *(*create_cq_ex)(
		struct ibv_context *context,
		struct ibv_cq_init_attr_ex *init_attr);
	struct ibv_flow *(*create_flow)(struct ibv_qp *qp,
				       struct ibv_flow_attr *flow_attr);
	ohca_unused_op create_flow_action_esp;
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *context,
				       struct ibv_qp_init_attr_ex *qp_init_attr_ex);
	struct ibv_rwq_ind_table *(*create_rwq_ind_table)(
		struct ibv_context *context,
		struct ibv_rwq_ind_table_init_attr *init_attr);
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *srq_init_attr);
	struct ibv_srq *(*create_srq_ex)(
		struct ibv_context *context,
		struct ibv_srq_init_attr_ex *srq_init_attr_ex);
	struct ibv_wq *(*create_wq)(struct ibv_context *context,
				    struct ibv_wq_init_attr *wq_init_attr);
	OHCA_SLOT_65(dealloc_dmah)
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*dealloc_pd)(struct ibv_pd *pd);
	ohca_unused_op dealloc_td;
	int (*dereg_mr)(struct verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
	OHCA_SLOT_65(destroy_comp_cntr)
	ohca_unused_op destroy_counters;
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*destroy_flow)(struct ibv_flow *flow);
	ohca_unused_op destroy_flow_action;
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*destroy_rwq_ind_table)(struct ibv_rwq_ind_table *rwq_ind_table);
	int (*destroy_srq)(struct ibv_srq *srq);
	int (*destroy_wq)(struct ibv_wq *wq);
	int (*detach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid,
			    uint16_t lid);
	OHCA_SLOT_65(dm_export_dmabuf_fd)
	OHCA_SLOT_65(free_buf)
	void (*free_context)(struct ibv_context *context);
	int (*free_dm)(struct ibv_dm *dm);
	int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	ohca_unused_op import_dm;
	ohca_unused_op import_mr;
	ohca_unused_op import_pd;
	OHCA_SLOT_65(inc_comp_cntr)
	OHCA_SLOT_65(inc_err_comp_cntr)
	int (*modify_cq)(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);
	ohca_unused_op modify_flow_action_esp;
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask);
	ohca_unused_op modify_qp_rate_limit;
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
			  int srq_attr_mask);
	int (*modify_wq)(struct ibv_wq *wq, struct ibv_wq_attr *wq_attr);
	ohca_unused_op open_qp;
	struct ibv_xrcd *(*open_xrcd)(
		struct ibv_context *context,
		struct ibv_xrcd_init_attr *xrcd_init_attr);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	ohca_unused_op post_srq_ops;
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *recv_wr,
			     struct ibv_recv_wr **bad_recv_wr);
	OHCA_SLOT_65(qp_attach_comp_cntr)
	OHCA_SLOT_65(query_comp_cntr_caps)
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size);
	ohca_unused_op query_ece;
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
	OHCA_SLOT_65(query_port_speed)
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr);
	ohca_unused_op query_qp_data_in_order;
	ohca_unused_op query_rt_values;
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr);
	OHCA_SLOT_65(read_comp_cntr)
	ohca_unused_op read_counters;
	OHCA_SLOT_65(read_err_comp_cntr)
	struct ibv_mr *(*reg_dm_mr)(struct ibv_pd *pd, struct ibv_dm *dm,
				    uint64_t dm_offset, size_t length,
				    unsigned int access);
	ohca_unused_op reg_dmabuf_mr;
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
	OHCA_SLOT_65(reg_mr_ex)
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			void *addr, size_t length, int access);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
	OHCA_SLOT_65(set_comp_cntr)
	ohca_unused_op set_ece;
	OHCA_SLOT_65(set_err_comp_cntr)
	ohca_unused_op unimport_dm;
	ohca_unused_op unimport_mr;
	ohca_unused_op unimport_pd;
};

void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    struct verbs_context *context_offset,
				    uint32_t driver_id);

/* Allocates a zeroed provider context of *drv_ctx_ptr's type whose
 * struct verbs_context member ctx_memb is initialised by libibverbs. */
#define verbs_init_and_alloc_context(ibdev, cmd_fd, drv_ctx_ptr, ctx_memb,   \
				     driver_id)                               \
	((typeof(drv_ctx_ptr))_verbs_init_and_alloc_context(                  \
		ibdev, cmd_fd, sizeof(*(drv_ctx_ptr)),                        \
		&((typeof(drv_ctx_ptr))NULL)->ctx_memb, (driver_id)))

void verbs_uninit_context(struct verbs_context *context);
void verbs_set_ops(struct verbs_context *vctx,
		   const struct verbs_context_ops *ops);

/* ------------------------------------------------------------------ */
/* Commands (kern-abi.h).  libibverbs builds the header and the core   */
/* payload itself; only the SIZE of each wrapper matters, because the */
/* driver data starts right after it.                                 */
/* ------------------------------------------------------------------ */

struct ibv_get_context {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_get_context core_payload;
};

struct ibv_query_port {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_query_port core_payload;
};

struct ibv_alloc_pd {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_alloc_pd core_payload;
};

struct ibv_reg_mr {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_reg_mr core_payload;
};

struct ibv_alloc_mw {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_alloc_mw core_payload;
};

struct ibv_create_cq {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_create_cq core_payload;
};

struct ibv_create_qp {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_create_qp core_payload;
};

struct ibv_modify_qp {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_modify_qp core_payload;
};

struct ibv_query_qp {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_query_qp core_payload;
};

struct ibv_create_srq {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_create_srq core_payload;
};

struct ibv_create_xsrq {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_create_xsrq core_payload;
};

struct ibv_open_xrcd {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_open_xrcd core_payload;
};

struct ibv_modify_srq {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_modify_srq core_payload;
};

struct ibv_query_srq {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_query_srq core_payload;
};

struct ibv_resize_cq {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_resize_cq core_payload;
};

struct ibv_rereg_mr {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_rereg_mr core_payload;
};

/* An extended (write_ex) command: the ex header follows the header. */
struct ibv_modify_cq {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_ex_cmd_hdr ex_hdr;
	struct ib_uverbs_ex_modify_cq core_payload;
};

struct ibv_create_wq {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_ex_cmd_hdr ex_hdr;
	struct ib_uverbs_ex_create_wq core_payload;
};

struct ibv_modify_wq {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_ex_cmd_hdr ex_hdr;
	struct ib_uverbs_ex_modify_wq core_payload;
};

struct ibv_create_qp_ex {
	struct ib_uverbs_cmd_hdr hdr;
	struct ib_uverbs_ex_cmd_hdr ex_hdr;
	struct ib_uverbs_ex_create_qp core_payload;
};

/*
 * Signatures as of rdma-core 44.  get_context gains fd_arr in 57 (file
 * descriptors handed to the driver's context; libohca passes none):
 * ohca_cmd_get_context() is the call for either.
 */
#if OHCA_RDMA_CORE_VERSION >= 57
struct ibv_fd_arr;
int ibv_cmd_get_context(struct verbs_context *context,
			struct ibv_get_context *cmd, size_t cmd_size,
			struct ibv_fd_arr *fd_arr,
			struct ib_uverbs_get_context_resp *resp,
			size_t resp_size);
#define ohca_cmd_get_context(ctx, cmd, cmd_size, resp, resp_size) \
	ibv_cmd_get_context(ctx, cmd, cmd_size, NULL, resp, resp_size)
#else
int ibv_cmd_get_context(struct verbs_context *context,
			struct ibv_get_context *cmd, size_t cmd_size,
			struct ib_uverbs_get_context_resp *resp,
			size_t resp_size);
#define ohca_cmd_get_context ibv_cmd_get_context
#endif
int ibv_cmd_query_device_any(struct ibv_context *context,
			     const struct ibv_query_device_ex_input *input,
			     struct ibv_device_attr_ex *attr, size_t attr_size,
			     struct ib_uverbs_ex_query_device_resp *resp,
			     size_t *resp_size);
int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr,
		       struct ibv_query_port *cmd, size_t cmd_size);

int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd,
		     struct ibv_alloc_pd *cmd, size_t cmd_size,
		     struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);
int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
		   uint64_t hca_va, int access, struct verbs_mr *vmr,
		   struct ibv_reg_mr *cmd, size_t cmd_size,
		   struct ib_uverbs_reg_mr_resp *resp, size_t resp_size);
int ibv_cmd_dereg_mr(struct verbs_mr *vmr);
int ibv_cmd_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		      uint32_t flags, struct ibv_sge *sg_list,
		      uint32_t num_sge);
int ibv_cmd_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type,
		     struct ibv_mw *mw, struct ibv_alloc_mw *cmd,
		     size_t cmd_size,
		     struct ib_uverbs_alloc_mw_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_mw(struct ibv_mw *mw);
/* Fills flow_id's context and handle; ucmd (driver data) may be NULL. */
int ibv_cmd_create_flow(struct ibv_qp *qp, struct ibv_flow *flow_id,
			struct ibv_flow_attr *flow_attr, void *ucmd,
			size_t ucmd_size);
int ibv_cmd_destroy_flow(struct ibv_flow *flow_id);
int ibv_cmd_alloc_dm(struct ibv_context *ctx,
		     const struct ibv_alloc_dm_attr *dm_attr,
		     struct verbs_dm *dm, struct ibv_command_buffer *link);
int ibv_cmd_free_dm(struct verbs_dm *dm);
int ibv_cmd_reg_dm_mr(struct ibv_pd *pd, struct verbs_dm *dm,
		      uint64_t offset, size_t length, unsigned int access,
		      struct verbs_mr *vmr, struct ibv_command_buffer *link);
int ibv_cmd_create_ah(struct ibv_pd *pd, struct ibv_ah *ah,
		      struct ibv_ah_attr *attr,
		      struct ib_uverbs_create_ah_resp *resp,
		      size_t resp_size);
int ibv_cmd_destroy_ah(struct ibv_ah *ah);
int ibv_cmd_create_cq(struct ibv_context *context, int cqe,
		      struct ibv_comp_channel *channel, int comp_vector,
		      struct ibv_cq *cq, struct ibv_create_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_create_cq_resp *resp,
		      size_t resp_size);
int ibv_cmd_destroy_cq(struct ibv_cq *cq);
/* IB_USER_VERBS_EX_CMD_MODIFY_CQ; EINVAL for attr_mask bits it lacks. */
int ibv_cmd_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr,
		      struct ibv_modify_cq *cmd, size_t cmd_size);
/* Writes cq->cqe from the response. */
int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe, struct ibv_resize_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_resize_cq_resp *resp,
		      size_t resp_size);
/* Writes the new lkey and rkey into vmr (and the context on a PD
 * change); libibverbs' ibv_rereg_mr updates pd, addr and length. */
int ibv_cmd_rereg_mr(struct verbs_mr *vmr, uint32_t flags, void *addr,
		     size_t length, uint64_t hca_va, int access,
		     struct ibv_pd *pd, struct ibv_rereg_mr *cmd,
		     size_t cmd_sz, struct ib_uverbs_rereg_mr_resp *resp,
		     size_t resp_sz);
/* Takes a plain ibv_qp: libibverbs touches no verbs_qp field through it. */
int ibv_cmd_create_qp(struct ibv_pd *pd, struct ibv_qp *qp,
		      struct ibv_qp_init_attr *attr, struct ibv_create_qp *cmd,
		      size_t cmd_size, struct ib_uverbs_create_qp_resp *resp,
		      size_t resp_size);
int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		      int attr_mask, struct ibv_modify_qp *cmd,
		      size_t cmd_size);
int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr,
		     int attr_mask, struct ibv_qp_init_attr *qp_init_attr,
		     struct ibv_query_qp *cmd, size_t cmd_size);
/* comp_mask PD, XRCD and SEND_OPS_FLAGS only (CREATE_FLAGS is EINVAL);
 * writes verbs_qp.comp_mask (0, or VERBS_QP_XRCD). */
int ibv_cmd_create_qp_ex(struct ibv_context *context, struct verbs_qp *qp,
			 struct ibv_qp_init_attr_ex *attr_ex,
			 struct ibv_create_qp *cmd, size_t cmd_size,
			 struct ib_uverbs_create_qp_resp *resp,
			 size_t resp_size);
int ibv_cmd_destroy_qp(struct ibv_qp *qp);
/* Every comp_mask bit of a QP, IND_TABLE and RX_HASH among them (the
 * hash itself is the provider's to pass); writes verbs_qp.comp_mask. */
/*
 * create_qp_ex2 gains a driver attribute chain in 65 (not in 56, whose
 * private ABI is still 34; the releases between are not supported):
 * ohca_cmd_create_qp_ex2() is the call for either, with no chain. Called
 * with 44's arguments, 65's libibverbs walked stack garbage as the chain
 * (test_rss_traffic's RSS QP crashed in __ioctl_final_num_attrs).
 */
#if OHCA_RDMA_CORE_VERSION >= 65
int ibv_cmd_create_qp_ex2(struct ibv_context *context, struct verbs_qp *qp,
			  struct ibv_qp_init_attr_ex *attr_ex,
			  struct ibv_create_qp_ex *cmd, size_t cmd_size,
			  struct ib_uverbs_ex_create_qp_resp *resp,
			  size_t resp_size, struct ibv_command_buffer *driver);
#define ohca_cmd_create_qp_ex2(ctx, qp, attr, cmd, cmd_size, resp, resp_size) \
	ibv_cmd_create_qp_ex2(ctx, qp, attr, cmd, cmd_size, resp, resp_size, \
			      NULL)
#else
int ibv_cmd_create_qp_ex2(struct ibv_context *context, struct verbs_qp *qp,
			  struct ibv_qp_init_attr_ex *attr_ex,
			  struct ibv_create_qp_ex *cmd, size_t cmd_size,
			  struct ib_uverbs_ex_create_qp_resp *resp,
			  size_t resp_size);
#define ohca_cmd_create_qp_ex2 ibv_cmd_create_qp_ex2
#endif
/* Receive WQs and indirection tables (libibverbs/cmd_wq.c). create_wq
 * fills handle, wq_num, context, cq, pd and wq_type and writes max_wr
 * and max_sge back; modify_wq records the new state in wq->state. */
int ibv_cmd_create_wq(struct ibv_context *context,
		      struct ibv_wq_init_attr *wq_init_attr, struct ibv_wq *wq,
		      struct ibv_create_wq *cmd, size_t cmd_size,
		      struct ib_uverbs_ex_create_wq_resp *resp,
		      size_t resp_size);
int ibv_cmd_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr,
		      struct ibv_modify_wq *cmd, size_t cmd_size);
int ibv_cmd_destroy_wq(struct ibv_wq *wq);
int ibv_cmd_create_rwq_ind_table(struct ibv_context *context,
				 struct ibv_rwq_ind_table_init_attr *init_attr,
				 struct ibv_rwq_ind_table *rwq_ind_table,
				 struct ib_uverbs_ex_create_rwq_ind_table_resp *resp,
				 size_t resp_size);
int ibv_cmd_destroy_rwq_ind_table(struct ibv_rwq_ind_table *rwq_ind_table);
/* Takes a plain ibv_srq for a basic SRQ (no verbs_srq fields touched). */
int ibv_cmd_create_srq(struct ibv_pd *pd, struct ibv_srq *srq,
		       struct ibv_srq_init_attr *attr,
		       struct ibv_create_srq *cmd, size_t cmd_size,
		       struct ib_uverbs_create_srq_resp *resp,
		       size_t resp_size);
/* XRC SRQs: fills the verbs_srq fields after the ibv_srq. */
int ibv_cmd_create_srq_ex(struct ibv_context *context, struct verbs_srq *srq,
			  struct ibv_srq_init_attr_ex *attr_ex,
			  struct ibv_create_xsrq *cmd, size_t cmd_size,
			  struct ib_uverbs_create_srq_resp *resp,
			  size_t resp_size);
int ibv_cmd_open_xrcd(struct ibv_context *context, struct verbs_xrcd *xrcd,
		      int vxrcd_size, struct ibv_xrcd_init_attr *attr,
		      struct ibv_open_xrcd *cmd, size_t cmd_size,
		      struct ib_uverbs_open_xrcd_resp *resp, size_t resp_size);
int ibv_cmd_close_xrcd(struct verbs_xrcd *xrcd);
int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		       int srq_attr_mask, struct ibv_modify_srq *cmd,
		       size_t cmd_size);
int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		      struct ibv_query_srq *cmd, size_t cmd_size);
int ibv_cmd_destroy_srq(struct ibv_srq *srq);
int ibv_cmd_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);
int ibv_cmd_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid,
			 uint16_t lid);

/* Exported as IBVERBS_1.1 but prototyped only in driver.h: madvise
 * (MADV_DONTFORK) the pages of a buffer the device accesses, when the
 * application enabled fork support (ibv_fork_init), else a no-op. */
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

/*
 * A request or response with driver data: the core part immediately
 * followed by the driver's uAPI struct, no padding anywhere.  Legacy write
 * commands count 4-byte words, so the totals must be multiples of 4 (8 for
 * ex commands).
 */
#define OHCA_DRV_CMD_RESP(name, core_resp, drv_resp, align)                 \
	struct name {                                                       \
		struct core_resp ibv_resp;                                  \
		struct drv_resp drv;                                        \
	};                                                                  \
	_Static_assert(sizeof(struct name) ==                               \
			       sizeof(struct core_resp) +                   \
				       sizeof(struct drv_resp),             \
		       #name ": padding around the driver response");       \
	_Static_assert(sizeof(struct name) % (align) == 0,                  \
		       #name ": size not a multiple of " #align)

/* The same for a request: core command wrapper, then the driver's part. */
#define OHCA_DRV_CMD_REQ(name, core_cmd, drv_req, align)                    \
	struct name {                                                       \
		struct core_cmd ibv_cmd;                                    \
		struct drv_req drv;                                         \
	};                                                                  \
	_Static_assert(sizeof(struct name) ==                               \
			       sizeof(struct core_cmd) +                    \
				       sizeof(struct drv_req),              \
		       #name ": padding around the driver request");        \
	_Static_assert(sizeof(struct name) % (align) == 0,                  \
		       #name ": size not a multiple of " #align)

/* ------------------------------------------------------------------ */
/* Recorded layout facts.  tests/layout_check.c re-checks the public   */
/* ones against the installed headers and prints every fact; the      */
/* fake-device test (tests/fakedev.sh) proves the private ones at run */
/* time inside the installed libibverbs.                              */
/* ------------------------------------------------------------------ */

#define OHCA_COMPAT_ASSERT_SIZE(t, n) \
	_Static_assert(sizeof(t) == (n), "sizeof(" #t ") != " #n);
#define OHCA_COMPAT_ASSERT_OFF(t, m, n) \
	_Static_assert(offsetof(t, m) == (n), "offsetof(" #t ", " #m ") != " #n);

/* The public structures that differ between the recorded releases. */
#if OHCA_RDMA_CORE_VERSION == 44
#define OHCA_IBV_QP_EX_SIZE	352
#define OHCA_IBV_PORT_ATTR_SIZE	52
#elif OHCA_RDMA_CORE_VERSION == 56 || OHCA_RDMA_CORE_VERSION == 65
#define OHCA_IBV_QP_EX_SIZE	360
#define OHCA_IBV_PORT_ATTR_SIZE	56
#endif

/*
 * rdma-core 65 added 17 context ops (OHCA_SLOT_65) and 6 verbs_context
 * entry points at its front: OHCA_OPS_OFF(v44/v56 value, v65 value).
 */
#if OHCA_RDMA_CORE_VERSION >= 65
#define OHCA_OPS_OFF(before, v65)	(v65)
#else
#define OHCA_OPS_OFF(before, v65)	(before)
#endif

#if OHCA_RDMA_CORE_VERSION == 44 || OHCA_RDMA_CORE_VERSION == 56 || \
	OHCA_RDMA_CORE_VERSION == 65
/* OHCA_LAYOUT_FACTS(S, O): S(type, size) / O(type, member, offset). */
#define OHCA_LAYOUT_FACTS(S, O)                                             \
	S(struct ohca_list_node, 16)                                        \
	S(struct verbs_match_ent, 24)                                       \
	O(struct verbs_match_ent, u, 8)                                     \
	O(struct verbs_match_ent, vendor, 16)                               \
	O(struct verbs_match_ent, device, 18)                               \
	O(struct verbs_match_ent, kind, 20)                                 \
	S(struct verbs_sysfs_dev, 992)                                      \
	O(struct verbs_sysfs_dev, provider_data, 16)                        \
	O(struct verbs_sysfs_dev, match, 24)                                \
	O(struct verbs_sysfs_dev, flags, 32)                                \
	O(struct verbs_sysfs_dev, sysfs_name, 36)                           \
	O(struct verbs_sysfs_dev, sysfs_cdev, 104)                          \
	O(struct verbs_sysfs_dev, ibdev_name, 112)                          \
	O(struct verbs_sysfs_dev, ibdev_path, 176)                          \
	O(struct verbs_sysfs_dev, modalias, 432)                            \
	O(struct verbs_sysfs_dev, node_guid, 944)                           \
	O(struct verbs_sysfs_dev, driver_id, 952)                           \
	O(struct verbs_sysfs_dev, node_type, 956)                           \
	O(struct verbs_sysfs_dev, ibdev_idx, 960)                           \
	O(struct verbs_sysfs_dev, num_ports, 964)                           \
	O(struct verbs_sysfs_dev, abi_ver, 968)                             \
	O(struct verbs_sysfs_dev, time_created, 976)                        \
	S(struct verbs_device_ops, 72)                                      \
	O(struct verbs_device_ops, match_min_abi_version, 8)                \
	O(struct verbs_device_ops, match_max_abi_version, 12)               \
	O(struct verbs_device_ops, match_table, 16)                         \
	O(struct verbs_device_ops, static_providers, 24)                    \
	O(struct verbs_device_ops, match_device, 32)                        \
	O(struct verbs_device_ops, alloc_context, 40)                       \
	O(struct verbs_device_ops, import_context, 48)                      \
	O(struct verbs_device_ops, alloc_device, 56)                        \
	O(struct verbs_device_ops, uninit_device, 64)                       \
	S(struct verbs_device, 712)                                         \
	O(struct verbs_device, ops, 664)                                    \
	O(struct verbs_device, refcount, 672)                               \
	O(struct verbs_device, entry, 680)                                  \
	O(struct verbs_device, sysfs, 696)                                  \
	O(struct verbs_device, core_support, 704)                           \
	S(struct verbs_context_ops, OHCA_OPS_OFF(608, 744))                 \
	O(struct verbs_context_ops, alloc_dm, OHCA_OPS_OFF(8, 16))          \
	O(struct verbs_context_ops, alloc_mw, OHCA_OPS_OFF(16, 32))         \
	O(struct verbs_context_ops, alloc_parent_domain, OHCA_OPS_OFF(32, 48)) \
	O(struct verbs_context_ops, close_xrcd, OHCA_OPS_OFF(88, 104))      \
	O(struct verbs_context_ops, create_srq_ex, OHCA_OPS_OFF(184, 208))  \
	O(struct verbs_context_ops, get_srq_num, OHCA_OPS_OFF(328, 384))    \
	O(struct verbs_context_ops, open_xrcd, OHCA_OPS_OFF(416, 488))      \
	O(struct verbs_context_ops, alloc_pd, OHCA_OPS_OFF(40, 56))         \
	O(struct verbs_context_ops, bind_mw, OHCA_OPS_OFF(80, 96))          \
	O(struct verbs_context_ops, create_ah, OHCA_OPS_OFF(104, 120))      \
	O(struct verbs_context_ops, create_cq, OHCA_OPS_OFF(120, 144))      \
	O(struct verbs_context_ops, create_cq_ex, OHCA_OPS_OFF(128, 152))   \
	O(struct verbs_context_ops, create_qp, OHCA_OPS_OFF(152, 176))      \
	O(struct verbs_context_ops, create_qp_ex, OHCA_OPS_OFF(160, 184))   \
	O(struct verbs_context_ops, create_srq, OHCA_OPS_OFF(176, 200))     \
	O(struct verbs_context_ops, dealloc_mw, OHCA_OPS_OFF(200, 232))     \
	O(struct verbs_context_ops, dealloc_pd, OHCA_OPS_OFF(208, 240))     \
	O(struct verbs_context_ops, dereg_mr, OHCA_OPS_OFF(224, 256))       \
	O(struct verbs_context_ops, destroy_ah, OHCA_OPS_OFF(232, 264))     \
	O(struct verbs_context_ops, destroy_cq, OHCA_OPS_OFF(248, 288))     \
	O(struct verbs_context_ops, destroy_qp, OHCA_OPS_OFF(272, 312))     \
	O(struct verbs_context_ops, destroy_srq, OHCA_OPS_OFF(288, 328))    \
	O(struct verbs_context_ops, free_context, OHCA_OPS_OFF(312, 368))   \
	O(struct verbs_context_ops, free_dm, OHCA_OPS_OFF(320, 376))        \
	O(struct verbs_context_ops, modify_cq, OHCA_OPS_OFF(360, 432))      \
	O(struct verbs_context_ops, modify_qp, OHCA_OPS_OFF(376, 448))      \
	O(struct verbs_context_ops, modify_srq, OHCA_OPS_OFF(392, 464))     \
	O(struct verbs_context_ops, create_rwq_ind_table, OHCA_OPS_OFF(168, 192)) \
	O(struct verbs_context_ops, create_wq, OHCA_OPS_OFF(192, 216))      \
	O(struct verbs_context_ops, destroy_rwq_ind_table, OHCA_OPS_OFF(280, 320)) \
	O(struct verbs_context_ops, destroy_wq, OHCA_OPS_OFF(296, 336))     \
	O(struct verbs_context_ops, modify_wq, OHCA_OPS_OFF(400, 472))      \
	O(struct verbs_context_ops, poll_cq, OHCA_OPS_OFF(424, 496))        \
	O(struct verbs_context_ops, post_recv, OHCA_OPS_OFF(432, 504))      \
	O(struct verbs_context_ops, post_send, OHCA_OPS_OFF(440, 512))      \
	O(struct verbs_context_ops, post_srq_recv, OHCA_OPS_OFF(456, 528))  \
	O(struct verbs_context_ops, query_device_ex, OHCA_OPS_OFF(464, 552)) \
	O(struct verbs_context_ops, query_port, OHCA_OPS_OFF(480, 568))     \
	O(struct verbs_context_ops, query_qp, OHCA_OPS_OFF(488, 584))       \
	O(struct verbs_context_ops, query_srq, OHCA_OPS_OFF(512, 608))      \
	O(struct verbs_context_ops, reg_dm_mr, OHCA_OPS_OFF(528, 640))      \
	O(struct verbs_context_ops, reg_mr, OHCA_OPS_OFF(544, 656))         \
	O(struct verbs_context_ops, req_notify_cq, OHCA_OPS_OFF(552, 672))  \
	O(struct verbs_context_ops, rereg_mr, OHCA_OPS_OFF(560, 680))       \
	O(struct verbs_context_ops, resize_cq, OHCA_OPS_OFF(568, 688))      \
	O(struct verbs_context_ops, unimport_pd, OHCA_OPS_OFF(600, 736))    \
	S(struct verbs_mr, 56)                                              \
	S(struct verbs_dm, 40)                                              \
	O(struct verbs_dm, handle, 32)                                      \
	S(struct ibv_command_buffer, 56)                                    \
	O(struct ibv_command_buffer, hdr, 32)                               \
	O(struct verbs_mr, mr_type, 48)                                     \
	O(struct verbs_mr, access, 52)                                      \
	S(struct verbs_cq, 288)                                             \
	S(struct verbs_qp, OHCA_IBV_QP_EX_SIZE + 16)                        \
	O(struct verbs_qp, comp_mask, OHCA_IBV_QP_EX_SIZE)                  \
	O(struct verbs_qp, xrcd, OHCA_IBV_QP_EX_SIZE + 8)                   \
	S(struct verbs_xrcd, 16)                                            \
	O(struct verbs_xrcd, handle, 12)                                    \
	S(struct verbs_srq, 160)                                            \
	O(struct verbs_srq, srq_type, 128)                                  \
	O(struct verbs_srq, xrcd, 136)                                      \
	O(struct verbs_srq, srq_num, 152)                                   \
	S(struct ibv_create_xsrq, 56)                                       \
	S(struct ibv_open_xrcd, 24)                                         \
	S(struct ib_uverbs_open_xrcd_resp, 4)                               \
	S(struct ibv_get_context, 16)                                       \
	S(struct ibv_query_port, 24)                                        \
	S(struct ibv_alloc_pd, 16)                                          \
	S(struct ibv_reg_mr, 48)                                            \
	S(struct ibv_alloc_mw, 24)                                          \
	S(struct ibv_create_cq, 40)                                         \
	S(struct ibv_create_qp, 64)                                         \
	S(struct ibv_modify_qp, 120)                                        \
	S(struct ibv_query_qp, 24)                                          \
	S(struct ibv_create_srq, 40)                                        \
	S(struct ibv_modify_srq, 24)                                        \
	S(struct ibv_query_srq, 24)                                         \
	S(struct ib_uverbs_create_srq_resp, 16)                             \
	S(struct ibv_resize_cq, 24)                                         \
	S(struct ibv_rereg_mr, 56)                                          \
	S(struct ibv_modify_cq, 40)                                         \
	S(struct ibv_create_wq, 64)                                         \
	S(struct ibv_modify_wq, 48)                                         \
	S(struct ibv_create_qp_ex, 88)                                      \
	S(struct ib_uverbs_ex_create_qp_resp, 40)                           \
	S(struct ib_uverbs_ex_create_wq_resp, 24)                           \
	S(struct ib_uverbs_ex_create_rwq_ind_table_resp, 16)                \
	S(struct ib_uverbs_resize_cq_resp, 8)                               \
	S(struct ib_uverbs_rereg_mr_resp, 8)                                \
	S(struct ib_uverbs_alloc_pd_resp, 4)                                \
	S(struct ib_uverbs_reg_mr_resp, 12)                                 \
	S(struct ib_uverbs_alloc_mw_resp, 8)                                \
	S(struct ib_uverbs_create_cq_resp, 8)                               \
	S(struct ib_uverbs_create_qp_resp, 32)                              \
	S(struct ib_uverbs_create_ah_resp, 4)                               \
	S(struct ibv_mr, 48)                                                \
	S(struct ibv_cq, 128)                                               \
	S(struct ibv_cq_ex, 288)                                            \
	S(struct ibv_qp, 160)                                               \
	S(struct ibv_qp_ex, OHCA_IBV_QP_EX_SIZE)                            \
	S(struct ib_uverbs_get_context_resp, 8)                             \
	S(struct ib_uverbs_ex_query_device_resp, 304)                       \
	S(struct ibv_device, 664)                                           \
	S(struct ibv_context, 328)                                          \
	S(struct verbs_context, OHCA_OPS_OFF(648, 696))                     \
	O(struct verbs_context, context, OHCA_OPS_OFF(320, 368))            \
	O(struct verbs_context, sz, OHCA_OPS_OFF(312, 360))                 \
	S(struct ibv_device_attr_ex, 400)                                   \
	S(struct ibv_port_attr, OHCA_IBV_PORT_ATTR_SIZE)
#endif

OHCA_LAYOUT_FACTS(OHCA_COMPAT_ASSERT_SIZE, OHCA_COMPAT_ASSERT_OFF)

#endif /* OHCA_COMPAT_IBVERBS_PRIVATE_H */
