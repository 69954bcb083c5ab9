/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * ohca kernel <-> provider uAPI: the driver-specific parts of the uverbs
 * commands, following the layout rules of include/uapi/rdma/ *-abi.h
 * (naturally aligned, explicit padding, no implicit holes).
 */
#ifndef OHCA_ABI_USER_H
#define OHCA_ABI_USER_H

#include <linux/types.h>

/* Bumped on any incompatible change; the provider refuses other values. */
#define OHCA_UVERBS_ABI_VERSION		1

/* ibv_get_context: the doorbell page of this context. */
struct ohca_ibv_alloc_ucontext_resp {
	__aligned_u64 db_mmap_key;	/* mmap offset of the doorbell page */
	__u32 uar_index;		/* page index in the doorbell BAR */
	__u32 db_page_size;
	__u32 device_caps;		/* enum ohca_caps */
	__u32 reserved;
};

#endif /* OHCA_ABI_USER_H */
