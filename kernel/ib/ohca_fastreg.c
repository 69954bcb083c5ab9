// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca: fast-registration MRs (IB_MR_TYPE_MEM_REG). alloc_mr creates a free
 * MR on the device with a page-list capacity and a coherent page list the
 * driver owns; map_mr_sg fills that list; IB_WR_REG_MR hands it to the
 * device together with iova, length, access and the new key.
 */
#include <linux/dma-mapping.h>

#include "ohca_ib.h"

static u32 ohca_max_frmr_pages(struct ohca_ibdev *dev)
{
	if (!(le32_to_cpu(dev->cdev->attr.dev_caps) & OHCA_DEV_CAP_FAST_REG))
		return 0;
	return min_t(u32, le32_to_cpu(dev->cdev->attr.max_fast_reg_page_list_len),
		     OHCA_MAX_FAST_REG_PAGES);
}

/**
 * ohca_fast_reg_page_list_len() - max_fast_reg_page_list_len for query_device
 * @dev: the RDMA device
 *
 * Return: the entries a fast-registration MR may have; 0 (no fast
 * registration) without the capability.
 */
u32 ohca_fast_reg_page_list_len(struct ohca_ibdev *dev)
{
	return ohca_max_frmr_pages(dev);
}

/**
 * ohca_alloc_mr() - ib_device_ops.alloc_mr: a fast-registration MR
 * @ibpd: the PD
 * @mr_type: IB_MR_TYPE_MEM_REG only
 * @max_num_sg: the entries its page list holds
 *
 * Return: the MR, or an ERR_PTR with a negative errno.
 */
struct ib_mr *ohca_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type mr_type,
			    u32 max_num_sg)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibpd->device);
	struct ohca_create_mr_in in = {};
	struct ohca_mr *mr;
	int err;

	if (mr_type != IB_MR_TYPE_MEM_REG || !ohca_max_frmr_pages(dev))
		return ERR_PTR(-EOPNOTSUPP);
	if (!max_num_sg || max_num_sg > ohca_max_frmr_pages(dev)) {
		ibdev_dbg(&dev->ibdev, "fast-reg MR of %u pages: limit %u\n",
			  max_num_sg, ohca_max_frmr_pages(dev));
		return ERR_PTR(-EINVAL);
	}

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->max_pages = max_num_sg;
	mr->pages_bytes = PAGE_ALIGN(max_num_sg * sizeof(*mr->pages));
	mr->pages = dma_alloc_coherent(&dev->cdev->pdev->dev, mr->pages_bytes,
				       &mr->pages_dma, GFP_KERNEL);
	if (!mr->pages) {
		err = -ENOMEM;
		goto err_free;
	}

	in.pdn = cpu_to_le32(to_ohca_pd(ibpd)->pdn);
	in.flags = cpu_to_le32(OHCA_MR_F_FAST_REG);
	in.pbl.npages = cpu_to_le32(max_num_sg);
	err = ohca_cmd_create(dev->cdev, OHCA_CMD_CREATE_MR, &in, sizeof(in),
			      &mr->handle, NULL);
	if (err)
		goto err_pages;
	mr->ibmr.lkey = mr->handle;
	mr->ibmr.rkey = mr->handle;
	return &mr->ibmr;

err_pages:
	dma_free_coherent(&dev->cdev->pdev->dev, mr->pages_bytes, mr->pages,
			  mr->pages_dma);
err_free:
	kfree(mr);
	return ERR_PTR(err);
}

/**
 * ohca_fast_reg_free() - free a fast-registration MR's page list
 * @dev: the RDMA device
 * @mr: the MR (nothing to do when mr->pages is NULL)
 */
void ohca_fast_reg_free(struct ohca_ibdev *dev, struct ohca_mr *mr)
{
	if (mr->pages)
		dma_free_coherent(&dev->cdev->pdev->dev, mr->pages_bytes, mr->pages,
				  mr->pages_dma);
	mr->pages = NULL;
}

static int ohca_set_page(struct ib_mr *ibmr, u64 addr)
{
	struct ohca_mr *mr = to_ohca_mr(ibmr);

	if (mr->npages >= mr->max_pages)
		return -ENOMEM;
	mr->pages[mr->npages++] = cpu_to_le64(addr);
	return 0;
}

/**
 * ohca_map_mr_sg() - ib_device_ops.map_mr_sg
 * @ibmr: a fast-registration MR
 * @sg: the scatterlist
 * @sg_nents: its entries
 * @sg_offset: the offset into the first entry (in/out, ib_sg_to_pages())
 *
 * Fills the MR's page list for the next IB_WR_REG_MR.
 *
 * Return: the number of entries mapped, or -EINVAL for an MR without a
 * page list.
 */
int ohca_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		   unsigned int *sg_offset)
{
	struct ohca_mr *mr = to_ohca_mr(ibmr);

	if (!mr->pages)
		return -EINVAL;
	mr->npages = 0;
	return ib_sg_to_pages(ibmr, sg, sg_nents, sg_offset, ohca_set_page);
}

/**
 * ohca_build_reg_mr_wqe() - an IB_WR_REG_MR as the device's REG_MR WQE
 * @dev: the RDMA device
 * @wr: the work request
 * @signaled: the WQE asks for a CQE
 * @wqe: the WQE to fill
 *
 * The page list is coherent memory: the doorbell's writeq() orders it and
 * the WQE before the device reads either.
 *
 * Return: 0, or -EINVAL for an MR or access the device cannot register.
 */
int ohca_build_reg_mr_wqe(struct ohca_ibdev *dev, const struct ib_reg_wr *wr,
			  bool signaled, struct ohca_reg_mr_wqe *wqe)
{
	struct ohca_mr *mr = to_ohca_mr(wr->mr);
	u32 shift;

	if (!mr->pages || !mr->npages || !is_power_of_2(wr->mr->page_size))
		return -EINVAL;
	shift = ilog2(wr->mr->page_size);
	if (shift < OHCA_PAGE_SHIFT_MIN || shift > OHCA_PAGE_SHIFT_MAX ||
	    !(le64_to_cpu(dev->cdev->attr.page_size_cap) & BIT_ULL(shift)))
		return -EINVAL;
	/* Only the key variant (low byte) is the consumer's to change. */
	if (OHCA_KEY_INDEX(wr->key) != OHCA_KEY_INDEX(mr->handle))
		return -EINVAL;

	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = cpu_to_le64(wr->wr.wr_id);
	wqe->opcode = OHCA_WR_REG_MR;
	if (signaled)
		wqe->flags |= OHCA_WQE_SIGNALED;
	if (wr->wr.send_flags & IB_SEND_FENCE)
		wqe->flags |= OHCA_WQE_FENCE;
	wqe->page_shift = shift;
	wqe->key = cpu_to_le32(wr->key);
	wqe->iova = cpu_to_le64(wr->mr->iova);
	wqe->length = cpu_to_le64(wr->mr->length);
	wqe->pbl_addr = cpu_to_le64(mr->pages_dma);
	wqe->npages = cpu_to_le32(mr->npages);
	wqe->access = cpu_to_le32(ohca_access_to_dev(wr->access));
	return 0;
}
