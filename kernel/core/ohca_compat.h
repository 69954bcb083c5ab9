/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ohca: the differences between the kernels the driver builds against
 * (6.1 as Debian 12 ships it, 6.12 as Debian 13 does, 7.2 as unstable
 * does), one definition per difference, named by the release that made it.
 * The sources stay one. Each is detected from the headers by
 * kernel/Makefile (OHCA_* flags), not from the version number:
 * distributions backport. Two 7.x op changes are adapted next to the ops
 * table (ohca_verbs.c): OHCA_RESIZE_USER_CQ, OHCA_REG_MR_DMAH.
 */
#ifndef OHCA_COMPAT_H
#define OHCA_COMPAT_H

/* 6.12: <asm/unaligned.h> moved to <linux/unaligned.h> (gone in 7.x). */
#ifdef OHCA_HAVE_LINUX_UNALIGNED_H
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif
#include <rdma/ib_umem.h>
#include <rdma/ib_umem_odp.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

/*
 * 6.10: ib_device_ops.create_cq takes the uverbs attribute bundle (NULL for
 * a kernel CQ) instead of the udata. The op's third parameter is a
 * struct ohca_create_cq_arg; ohca_create_cq_udata() gives its udata.
 */
#ifdef OHCA_CREATE_CQ_ATTRS
#define ohca_create_cq_arg uverbs_attr_bundle
static inline struct ib_udata *
ohca_create_cq_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}
#else
#define ohca_create_cq_arg ib_udata
static inline struct ib_udata *ohca_create_cq_udata(struct ib_udata *udata)
{
	return udata;
}
#endif

/*
 * 6.17: system_unbound_wq is named system_dfl_wq; 7.x warns once about
 * work queued on the old name.
 */
#ifdef OHCA_HAVE_SYSTEM_DFL_WQ
#define ohca_unbound_wq system_dfl_wq
#else
#define ohca_unbound_wq system_unbound_wq
#endif

/* 7.x: ib_umem_get() is ib_umem_get_va(), with the same arguments. */
#ifdef OHCA_UMEM_GET_VA
#define ohca_umem_get ib_umem_get_va
#else
#define ohca_umem_get ib_umem_get
#endif

/*
 * 6.14: an ODP umem keeps the pages hmm_range_fault() found (map.pfn_list,
 * HMM_PFN_* bits) and the driver DMA-maps each one it hands the device
 * (hmm_dma_map_pfn(), which sets HMM_PFN_DMA_MAPPED; the core unmaps them
 * in ib_umem_odp_unmap_dma_pages()); before,
 * ib_umem_odp_map_dma_and_lock() mapped them into dma_list, flagged
 * ODP_*_ALLOWED_BIT.
 * The umem's npages (pages mapped for DMA) is counted by the core's
 * mapping before 6.14, by the driver since: the core's unmap only counts
 * it down. ohca_odp_invalidate() acts only while it is not 0; left at 0, an
 * invalidation left the device and pfn_list on pages the kernel had
 * already freed (stale data, and set_page_dirty() on freed pages at
 * release: "Bad page state").
 * ohca_odp_access(): the access mask for ib_umem_odp_map_dma_and_lock().
 * ohca_odp_page(): page @idx's DMA address and whether it may be written;
 * 0 if the page is not present, 1 if it is, -EFAULT if it cannot be mapped.
 * Called under umem_mutex, after ib_umem_odp_map_dma_and_lock().
 */
#ifdef OHCA_ODP_HMM_DMA
#include <linux/hmm.h>
#include <linux/pci-p2pdma.h>

static inline u64 ohca_odp_access(struct ib_umem_odp *odp)
{
	return odp->umem.writable ? HMM_PFN_WRITE : 0;
}

static inline int ohca_odp_page(struct ib_umem_odp *odp, size_t idx,
				dma_addr_t *dma, bool *write)
{
	struct ib_device *ibdev = odp->umem.ibdev;
	unsigned long pfn = odp->map.pfn_list[idx];
	struct pci_p2pdma_map_state p2p = {};

	if (!(pfn & HMM_PFN_VALID))
		return 0;
	*dma = hmm_dma_map_pfn(ibdev->dma_device, &odp->map, idx, &p2p);
	if (ib_dma_mapping_error(ibdev, *dma))
		return -EFAULT;
	/* A page mapped again (flags resynced) is counted once. */
	if (!(pfn & HMM_PFN_DMA_MAPPED))
		odp->npages++;
	*write = pfn & HMM_PFN_WRITE;
	return 1;
}
#else
static inline u64 ohca_odp_access(struct ib_umem_odp *odp)
{
	return ODP_READ_ALLOWED_BIT |
	       (odp->umem.writable ? ODP_WRITE_ALLOWED_BIT : 0);
}

static inline int ohca_odp_page(struct ib_umem_odp *odp, size_t idx,
				dma_addr_t *dma, bool *write)
{
	dma_addr_t d = odp->dma_list[idx];

	if (!(d & ODP_READ_ALLOWED_BIT))
		return 0;
	*dma = d & ODP_DMA_ADDR_MASK;
	*write = d & ODP_WRITE_ALLOWED_BIT;
	return 1;
}
#endif

#endif /* OHCA_COMPAT_H */
