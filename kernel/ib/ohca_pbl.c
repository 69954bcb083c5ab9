// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca_ib: page lists (struct ohca_pbl: the device's description of a
 * buffer's pages, in DMA-coherent list pages the driver frees once the
 * command that took it completed), pinned user rings, and the access
 * flags as the device numbers them. Used by MRs, CQs, QPs and SRQs.
 */
#include <linux/dma-mapping.h>
#include <rdma/ib_umem.h>
/* Newer stable kernels moved the block iterators out of ib_umem.h. */
#ifdef OHCA_HAVE_RDMA_ITER_H
#include <rdma/iter.h>
#endif

#include "ohca_ib.h"

#define OHCA_PBL_PAGE_SIZE	4096

/**
 * ohca_pbl_free() - free a page list's memory
 * @dev: the RDMA device
 * @mem: the list pages (zeroed here; freeing a zeroed one does nothing)
 *
 * Once the command that took the list completed: the device copied it.
 */
void ohca_pbl_free(struct ohca_ibdev *dev, struct ohca_pbl_mem *mem)
{
	struct device *dmadev = &dev->cdev->pdev->dev;
	u32 i;

	for (i = 0; i < mem->nleaves; i++)
		dma_free_coherent(dmadev, OHCA_PBL_PAGE_SIZE, mem->leaf[i],
				  mem->leaf_dma[i]);
	kfree(mem->leaf_dma);
	kfree(mem->leaf);
	if (mem->top)
		dma_free_coherent(dmadev, OHCA_PBL_PAGE_SIZE, mem->top,
				  mem->top_dma);
	memset(mem, 0, sizeof(*mem));
}

/* Allocate the list pages for @npages entries and describe them in @pbl. */
static int ohca_pbl_alloc(struct ohca_ibdev *dev, u32 npages, u32 page_shift,
			  struct ohca_pbl *pbl, struct ohca_pbl_mem *mem)
{
	struct device *dmadev = &dev->cdev->pdev->dev;
	u32 i;

	memset(mem, 0, sizeof(*mem));
	if (!npages || npages > OHCA_PBL_MAX_PAGES)
		return -EINVAL;

	mem->top = dma_alloc_coherent(dmadev, OHCA_PBL_PAGE_SIZE,
				      &mem->top_dma, GFP_KERNEL);
	if (!mem->top)
		return -ENOMEM;

	memset(pbl, 0, sizeof(*pbl));
	pbl->addr = cpu_to_le64(mem->top_dma);
	pbl->npages = cpu_to_le32(npages);
	pbl->page_shift = page_shift;
	pbl->levels = 1;
	if (npages <= OHCA_PBL_ENTRIES_PER_PAGE)
		return 0;

	pbl->levels = 2;
	mem->leaf = kcalloc(DIV_ROUND_UP(npages, OHCA_PBL_ENTRIES_PER_PAGE),
			    sizeof(*mem->leaf), GFP_KERNEL);
	mem->leaf_dma = kcalloc(DIV_ROUND_UP(npages, OHCA_PBL_ENTRIES_PER_PAGE),
				sizeof(*mem->leaf_dma), GFP_KERNEL);
	if (!mem->leaf || !mem->leaf_dma)
		goto err_free;
	for (i = 0; i < DIV_ROUND_UP(npages, OHCA_PBL_ENTRIES_PER_PAGE); i++) {
		mem->leaf[i] = dma_alloc_coherent(dmadev, OHCA_PBL_PAGE_SIZE,
						  &mem->leaf_dma[i],
						  GFP_KERNEL);
		if (!mem->leaf[i])
			goto err_free;
		mem->nleaves++;
		mem->top[i] = cpu_to_le64(mem->leaf_dma[i]);
	}
	return 0;

err_free:
	ohca_pbl_free(dev, mem);
	return -ENOMEM;
}

static void ohca_pbl_set(struct ohca_pbl_mem *mem, u32 i, u64 addr)
{
	if (!mem->nleaves)
		mem->top[i] = cpu_to_le64(addr);
	else
		mem->leaf[i / OHCA_PBL_ENTRIES_PER_PAGE]
			 [i % OHCA_PBL_ENTRIES_PER_PAGE] = cpu_to_le64(addr);
}

/**
 * ohca_pbl_from_umem() - the page list of user memory
 * @dev: the RDMA device
 * @umem: the pinned memory
 * @pgsz: the block size, from ib_umem_find_best_pgsz()
 * @pbl: the list's description for a command
 * @mem: the list's memory, for ohca_pbl_free()
 *
 * Return: 0, -EINVAL for more than OHCA_PBL_MAX_PAGES blocks, or -ENOMEM.
 */
int ohca_pbl_from_umem(struct ohca_ibdev *dev, struct ib_umem *umem,
		       unsigned long pgsz, struct ohca_pbl *pbl,
		       struct ohca_pbl_mem *mem)
{
	size_t npages = ib_umem_num_dma_blocks(umem, pgsz);
	struct ib_block_iter biter;
	u32 i = 0;
	int err;

	if (npages > OHCA_PBL_MAX_PAGES) {
		ibdev_dbg(&dev->ibdev, "%zu pages of %lu bytes: too many\n",
			  npages, pgsz);
		return -EINVAL;
	}
	err = ohca_pbl_alloc(dev, npages, ilog2(pgsz), pbl, mem);
	if (err)
		return err;
	rdma_umem_for_each_dma_block(umem, &biter, pgsz) {
		if (WARN_ON_ONCE(i >= npages))
			break;
		ohca_pbl_set(mem, i++, rdma_block_iter_dma_address(&biter));
	}
	return 0;
}

/**
 * ohca_pbl_from_coherent() - the page list of a contiguous coherent buffer
 * @dev: the RDMA device
 * @addr: the buffer's DMA address
 * @bytes: its length, listed in 4 KiB pages
 * @pbl: the list's description for a command
 * @mem: the list's memory, for ohca_pbl_free()
 *
 * Return: 0, -EINVAL for too many pages, or -ENOMEM.
 */
int ohca_pbl_from_coherent(struct ohca_ibdev *dev, dma_addr_t addr,
			   size_t bytes, struct ohca_pbl *pbl,
			   struct ohca_pbl_mem *mem)
{
	u32 npages = DIV_ROUND_UP(bytes, OHCA_PBL_PAGE_SIZE);
	u32 i;
	int err;

	err = ohca_pbl_alloc(dev, npages, ilog2(OHCA_PBL_PAGE_SIZE), pbl, mem);
	if (err)
		return err;
	for (i = 0; i < npages; i++)
		ohca_pbl_set(mem, i, addr + (u64)i * OHCA_PBL_PAGE_SIZE);
	return 0;
}

/**
 * ohca_pgsz_bitmap() - the page sizes a page list may use
 * @dev: the RDMA device
 *
 * Return: the device's page_size_cap within OHCA_PAGE_SHIFT_MIN..MAX, for
 * ib_umem_find_best_pgsz().
 */
unsigned long ohca_pgsz_bitmap(struct ohca_ibdev *dev)
{
	return le64_to_cpu(dev->cdev->attr.page_size_cap) &
	       GENMASK_ULL(OHCA_PAGE_SHIFT_MAX, OHCA_PAGE_SHIFT_MIN);
}

/**
 * ohca_umem_ring() - pin a user ring and build its page list
 * @dev: the RDMA device
 * @addr: the ring's user address, page aligned (the device starts rings at
 *        offset 0 of the first listed page)
 * @bytes: its length
 * @pbl: the list's description for a command
 * @mem: the list's memory, for ohca_pbl_free()
 *
 * Only page sizes the ring's start is aligned to are used.
 *
 * Return: the pinned memory, or an ERR_PTR: -EINVAL (alignment, no usable
 * page size, too many pages), or the errno of pinning or allocating.
 */
struct ib_umem *ohca_umem_ring(struct ohca_ibdev *dev, u64 addr, size_t bytes,
			       struct ohca_pbl *pbl, struct ohca_pbl_mem *mem)
{
	unsigned long bitmap = ohca_pgsz_bitmap(dev);
	struct ib_umem *umem;
	unsigned long pgsz;
	int err;

	if (!addr || !PAGE_ALIGNED(addr)) {
		ibdev_dbg(&dev->ibdev, "ring address %#llx not page aligned\n",
			  addr);
		return ERR_PTR(-EINVAL);
	}
	/* Only page sizes the ring start is aligned to. */
	bitmap &= GENMASK_ULL(__ffs64(addr), 0);
	umem = ohca_umem_get(&dev->ibdev, addr, bytes, IB_ACCESS_LOCAL_WRITE);
	if (IS_ERR(umem))
		return umem;
	pgsz = ib_umem_find_best_pgsz(umem, bitmap, addr);
	if (!pgsz) {
		err = -EINVAL;
		goto err_release;
	}
	err = ohca_pbl_from_umem(dev, umem, pgsz, pbl, mem);
	if (err)
		goto err_release;
	return umem;

err_release:
	ib_umem_release(umem);
	return ERR_PTR(err);
}

/**
 * ohca_access_to_dev() - IB access flags as the device's
 * @ib_access: IB_ACCESS_* flags
 *
 * Return: the OHCA_ACCESS_* flags of local write and remote write, read
 * and atomic; other bits are not passed on.
 */
u32 ohca_access_to_dev(int ib_access)
{
	u32 access = 0;

	if (ib_access & IB_ACCESS_LOCAL_WRITE)
		access |= OHCA_ACCESS_LOCAL_WRITE;
	if (ib_access & IB_ACCESS_REMOTE_WRITE)
		access |= OHCA_ACCESS_REMOTE_WRITE;
	if (ib_access & IB_ACCESS_REMOTE_READ)
		access |= OHCA_ACCESS_REMOTE_READ;
	if (ib_access & IB_ACCESS_REMOTE_ATOMIC)
		access |= OHCA_ACCESS_REMOTE_ATOMIC;
	return access;
}

/**
 * ohca_access_from_dev() - the device's access flags as IB access flags
 * @access: OHCA_ACCESS_* flags
 *
 * Return: the IB_ACCESS_* flags of local write and remote write, read and
 * atomic.
 */
int ohca_access_from_dev(u32 access)
{
	int ib_access = 0;

	if (access & OHCA_ACCESS_LOCAL_WRITE)
		ib_access |= IB_ACCESS_LOCAL_WRITE;
	if (access & OHCA_ACCESS_REMOTE_WRITE)
		ib_access |= IB_ACCESS_REMOTE_WRITE;
	if (access & OHCA_ACCESS_REMOTE_READ)
		ib_access |= IB_ACCESS_REMOTE_READ;
	if (access & OHCA_ACCESS_REMOTE_ATOMIC)
		ib_access |= IB_ACCESS_REMOTE_ATOMIC;
	return ib_access;
}
