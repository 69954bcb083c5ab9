// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca_ib: page lists, protection domains and
 * memory regions.
 */
#include <linux/dma-mapping.h>
#include <rdma/ib_umem.h>
#include <rdma/uverbs_ioctl.h>
/* Newer stable kernels moved the block iterators out of ib_umem.h. */
#ifdef OHCA_HAVE_RDMA_ITER_H
#include <rdma/iter.h>
#endif

#include <ohca/ohca-abi.h>

#include "ohca_ib.h"

#define OHCA_PBL_PAGE_SIZE	4096

/*
 * A DESTROY_* command failed. With the device stopped (fatal) it no longer
 * touches guest memory and the host side may be freed: returns false.
 * Otherwise the device may still own the object's memory; the caller
 * keeps it (leaks it) and the object is gone for the core: returns true.
 */
bool ohca_destroy_failed(struct ohca_ibdev *dev, int err, const char *what,
			 u32 handle)
{
	if (!err || test_bit(OHCA_FLAG_FATAL, &dev->cdev->flags))
		return false;
	dev_err(&dev->cdev->pdev->dev,
		"cannot destroy %s 0x%x (%d): its memory stays with the device\n",
		what, handle, err);
	return true;
}

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

/* Page list of @umem in blocks of @pgsz (from ib_umem_find_best_pgsz()). */
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

/* Page list of a contiguous coherent buffer, in 4 KiB pages. */
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

static unsigned long ohca_pgsz_bitmap(struct ohca_ibdev *dev)
{
	return le64_to_cpu(dev->cdev->attr.page_size_cap) &
	       GENMASK_ULL(OHCA_PAGE_SHIFT_MAX, OHCA_PAGE_SHIFT_MIN);
}

/*
 * Pin a user ring of @bytes at @addr (page aligned: the device starts
 * rings at offset 0 of the first listed page) and build its page list.
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
	umem = ib_umem_get(&dev->ibdev, addr, bytes, IB_ACCESS_LOCAL_WRITE);
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

int ohca_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibpd->device);
	struct ohca_pd *pd = to_ohca_pd(ibpd);

	/* No driver data either way: the provider needs no PD number. */
	return ohca_cmd_create(dev->cdev, OHCA_CMD_CREATE_PD, NULL, 0, &pd->pdn,
			       NULL);
}

int ohca_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibpd->device);
	u32 pdn = to_ohca_pd(ibpd)->pdn;
	int err;

	err = ohca_cmd_destroy(dev->cdev, OHCA_CMD_DESTROY_PD, pdn);
	ohca_destroy_failed(dev, err, "PD", pdn);
	return 0;
}

/*
 * REMOTE_ATOMIC is accepted (and kept in the MR) whether or not the
 * device executes atomics: applications ask for it on every MR, and the
 * responder refuses atomic requests it cannot execute.
 */
#define OHCA_MR_ACCESS_SUPPORTED (IB_ACCESS_LOCAL_WRITE | \
				  IB_ACCESS_REMOTE_WRITE | \
				  IB_ACCESS_REMOTE_READ | \
				  IB_ACCESS_REMOTE_ATOMIC)

static int ohca_create_mr_cmd(struct ohca_ibdev *dev, struct ohca_mr *mr,
			      struct ohca_create_mr_in *in)
{
	u32 lkey, rkey;
	int err;

	err = ohca_cmd_create(dev->cdev, OHCA_CMD_CREATE_MR, in, sizeof(*in), &lkey,
			      &rkey);
	if (err)
		return err;
	mr->handle = lkey;
	mr->ibmr.lkey = lkey;
	mr->ibmr.rkey = rkey;
	return 0;
}

struct ib_mr *ohca_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
			       u64 iova, int access, struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibpd->device);
	struct ohca_create_mr_in in = {};
	struct ohca_pbl_mem mem;
	unsigned long pgsz;
	struct ohca_mr *mr;
	int err;

	if ((access & IB_ACCESS_ON_DEMAND) &&
	    !(access & ~(OHCA_MR_ACCESS_SUPPORTED | IB_ACCESS_OPTIONAL |
			 IB_ACCESS_ON_DEMAND | IB_ACCESS_HUGETLB)))
		return ohca_reg_user_mr_odp(ibpd, start, length, iova, access);
	if (access & ~(OHCA_MR_ACCESS_SUPPORTED | IB_ACCESS_OPTIONAL |
		       (ohca_has_mw(dev) ? IB_ACCESS_MW_BIND : 0))) {
		ibdev_dbg(&dev->ibdev, "MR access flags %#x not supported\n",
			  access);
		return ERR_PTR(-EOPNOTSUPP);
	}
	if (!length || length > le64_to_cpu(dev->cdev->attr.max_mr_size))
		return ERR_PTR(-EINVAL);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);

	mr->umem = ib_umem_get(ibpd->device, start, length, access);
	if (IS_ERR(mr->umem)) {
		err = PTR_ERR(mr->umem);
		goto err_free;
	}
	pgsz = ib_umem_find_best_pgsz(mr->umem, ohca_pgsz_bitmap(dev), iova);
	if (!pgsz) {
		err = -EINVAL;
		goto err_release;
	}
	err = ohca_pbl_from_umem(dev, mr->umem, pgsz, &in.pbl, &mem);
	if (err)
		goto err_release;

	in.pdn = cpu_to_le32(to_ohca_pd(ibpd)->pdn);
	in.access = cpu_to_le32(ohca_access_to_dev(access) |
				(access & IB_ACCESS_MW_BIND ?
				 OHCA_ACCESS_MW_BIND : 0));
	in.iova = cpu_to_le64(iova);
	in.length = cpu_to_le64(length);
	err = ohca_create_mr_cmd(dev, mr, &in);
	/* The device copied the list. */
	ohca_pbl_free(dev, &mem);
	if (err)
		goto err_release;
	mr->access = access;
	return &mr->ibmr;

err_release:
	ib_umem_release(mr->umem);
err_free:
	kfree(mr);
	return ERR_PTR(err);
}

struct ib_mr *ohca_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibpd->device);
	struct ohca_create_mr_in in = {};
	struct ohca_mr *mr;
	int err;

	/* The physical MR is for local access only. */
	if (access & ~(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_OPTIONAL)) {
		ibdev_dbg(&dev->ibdev, "DMA MR access %#x not supported\n",
			  access);
		return ERR_PTR(-EOPNOTSUPP);
	}

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);

	in.pdn = cpu_to_le32(to_ohca_pd(ibpd)->pdn);
	in.access = cpu_to_le32(ohca_access_to_dev(access));
	in.length = dev->cdev->attr.max_mr_size;
	in.flags = cpu_to_le32(OHCA_MR_F_PHYSICAL);
	err = ohca_create_mr_cmd(dev, mr, &in);
	if (err) {
		kfree(mr);
		return ERR_PTR(err);
	}
	return &mr->ibmr;
}

/*
 * Re-registration in place (REREG_MR): the MR keeps its keys (IBTA lets
 * them change; keeping them lets a peer that holds the rkey go on after
 * an access change). A new translation is pinned and listed first and the
 * old pages released only once the device uses the new ones; an access
 * change that makes a read-only MR writable pins its pages again for
 * writing, as if the translation changed. Returns NULL: the core keeps
 * the ib_mr and updates its PD, iova and length.
 */
struct ib_mr *ohca_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				 u64 length, u64 iova, int access,
				 struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibmr->device);
	struct ohca_mr *mr = to_ohca_mr(ibmr);
	struct ohca_rereg_mr_in in = {};
	struct ohca_create_out out = {};
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_REREG_MR,
		.in = &in,
		.in_len = sizeof(in),
		.out = &out,
		.out_len = sizeof(out),
	};
	struct ib_umem *umem = NULL;
	struct ohca_pbl_mem mem = {};
	int new_access = flags & IB_MR_REREG_ACCESS ? access : mr->access;
	u32 dflags = 0;
	int err;

	if (!(le32_to_cpu(dev->cdev->attr.dev_caps) & OHCA_DEV_CAP_REREG_MR) ||
	    !mr->umem)
		return ERR_PTR(-EOPNOTSUPP);
	if (flags & ~(IB_MR_REREG_TRANS | IB_MR_REREG_PD | IB_MR_REREG_ACCESS))
		return ERR_PTR(-EOPNOTSUPP);
	if (udata && !ohca_udata_tail_clear(udata, 0))
		return ERR_PTR(-EINVAL);
	if (flags & IB_MR_REREG_ACCESS) {
		if (access & ~(OHCA_MR_ACCESS_SUPPORTED | IB_ACCESS_OPTIONAL))
			return ERR_PTR(-EOPNOTSUPP);
		dflags |= OHCA_REREG_MR_ACCESS;
		in.access = cpu_to_le32(ohca_access_to_dev(access));
		/* Pages pinned read-only cannot take the device's writes. */
		if (ib_access_writable(access) && !mr->umem->writable &&
		    !(flags & IB_MR_REREG_TRANS)) {
			flags |= IB_MR_REREG_TRANS;
			start = mr->umem->address;
			length = mr->umem->length;
			iova = ibmr->iova;
		}
	}
	if (flags & IB_MR_REREG_PD) {
		dflags |= OHCA_REREG_MR_PD;
		in.pdn = cpu_to_le32(to_ohca_pd(ibpd)->pdn);
	}
	if (flags & IB_MR_REREG_TRANS) {
		unsigned long pgsz;

		if (!length || length > le64_to_cpu(dev->cdev->attr.max_mr_size))
			return ERR_PTR(-EINVAL);
		umem = ib_umem_get(ibmr->device, start, length, new_access);
		if (IS_ERR(umem))
			return ERR_CAST(umem);
		pgsz = ib_umem_find_best_pgsz(umem, ohca_pgsz_bitmap(dev), iova);
		err = pgsz ? ohca_pbl_from_umem(dev, umem, pgsz, &in.pbl, &mem) :
			     -EINVAL;
		if (err)
			goto err_release;
		dflags |= OHCA_REREG_MR_TRANSLATION;
		in.iova = cpu_to_le64(iova);
		in.length = cpu_to_le64(length);
	}
	/* Nothing left to change (the core drops a PD that is the MR's). */
	if (!dflags)
		return NULL;
	in.key = cpu_to_le32(mr->handle);
	in.flags = cpu_to_le32(dflags);
	err = ohca_cmd_exec(dev->cdev, &args);
	ohca_pbl_free(dev, &mem);
	if (err)
		goto err_release;
	if (umem) {
		ib_umem_release(mr->umem);
		mr->umem = umem;
	}
	mr->access = new_access;
	ibmr->lkey = le32_to_cpu(out.handle);
	ibmr->rkey = le32_to_cpu(out.handle2);
	return NULL;

err_release:
	ib_umem_release(umem);
	return ERR_PTR(err);
}

int ohca_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibmr->device);
	struct ohca_mr *mr = to_ohca_mr(ibmr);
	int err;

	if (mr->odp) {
		ohca_dereg_mr_odp(mr);
		kfree(mr);
		return 0;
	}
	/* The handle: a fast-registration MR's keys change with each REG_MR. */
	err = ohca_cmd_destroy(dev->cdev, OHCA_CMD_DESTROY_MR, mr->handle);
	/*
	 * Memory windows are bound to it (IBTA: deregistration fails): the
	 * MR stays as it is, and uverbs retries once the windows are gone.
	 */
	if (err == -EBUSY && !test_bit(OHCA_FLAG_FATAL, &dev->cdev->flags))
		return err;
	if (!ohca_destroy_failed(dev, err, "MR", mr->handle)) {
		ib_umem_release(mr->umem);
		ohca_fast_reg_free(dev, mr);
	}
	kfree(mr);
	return 0;
}
