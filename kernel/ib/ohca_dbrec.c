// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca: doorbell records of user CQs, RQs (OHCA_DEV_CAP_DB_RECORD) and
 * SRQs (OHCA_DEV_CAP_SRQ_DB_RECORD). The provider keeps a CQ's consumer
 * index and an RQ's or SRQ's producer index in its own memory; the
 * device reads them by DMA when it needs them. Each page holding records
 * is pinned once per context, shared by the records in it (a reference
 * count under the context's lock), and the pages a context may pin are
 * bounded.
 */
#include <rdma/ib_umem.h>
#ifdef OHCA_HAVE_RDMA_ITER_H
#include <rdma/iter.h>
#endif
#include <rdma/uverbs_ioctl.h>

#include "ohca_ib.h"

/*
 * Record pages a context may pin: 512 records each, so a provider that
 * packs its records never reaches the bound (the device has fewer queues);
 * a process spreading them over pages does. The refusal is -ENOMEM, as
 * ib_umem_get()'s over RLIMIT_MEMLOCK and the quota's (ohca_quota.c): a
 * pin limit, not a full device.
 */
#define OHCA_DB_PAGES_MAX	64

struct ohca_db_page {
	struct list_head list;
	struct ohca_ucontext *uctx;
	unsigned long user_page;	/* page aligned user address */
	struct ib_umem *umem;
	unsigned int refs;		/* under uctx->db_lock */
};

/* The DMA address of the one page a record page's umem holds. */
static dma_addr_t ohca_db_page_dma(struct ib_umem *umem)
{
	struct ib_block_iter biter;

	rdma_umem_for_each_dma_block(umem, &biter, PAGE_SIZE)
		return rdma_block_iter_dma_address(&biter);
	return 0;
}

/**
 * ohca_db_record_map() - pin the page of a user doorbell record
 * @dev: the RDMA device
 * @uctx: the process's context
 * @uaddr: the record's user address (struct ohca_db_record, 8-byte aligned)
 * @dma: the record's DMA address, for the create command
 *
 * Return: the page (for ohca_db_record_unmap()), or an ERR_PTR: -EINVAL
 * (address), -ENOMEM (the context pins OHCA_DB_PAGES_MAX pages already),
 * or the errno of pinning.
 */
static struct ohca_db_page *ohca_db_record_map(struct ohca_ibdev *dev,
					       struct ohca_ucontext *uctx,
					       u64 uaddr, dma_addr_t *dma)
{
	unsigned long page_addr = uaddr & PAGE_MASK;
	struct ohca_db_page *page;
	struct ib_umem *umem;

	/* Aligned, so the 8 bytes are inside the page. */
	if (!uaddr || !IS_ALIGNED(uaddr, OHCA_DB_RECORD_ALIGN) ||
	    uaddr > ULONG_MAX - sizeof(struct ohca_db_record)) {
		ibdev_dbg(&dev->ibdev, "doorbell record %#llx not aligned\n",
			  uaddr);
		return ERR_PTR(-EINVAL);
	}

	mutex_lock(&uctx->db_lock);
	list_for_each_entry(page, &uctx->db_pages, list) {
		if (page->user_page == page_addr) {
			page->refs++;
			goto found;
		}
	}
	if (uctx->db_npages >= OHCA_DB_PAGES_MAX) {
		ibdev_dbg_ratelimited(&dev->ibdev,
				      "doorbell record %#llx refused: this context pins %u record pages, the most it may\n",
				      uaddr, OHCA_DB_PAGES_MAX);
		page = ERR_PTR(-ENOMEM);
		goto out;
	}
	page = kzalloc(sizeof(*page), GFP_KERNEL);
	if (!page) {
		page = ERR_PTR(-ENOMEM);
		goto out;
	}
	umem = ohca_umem_get(&dev->ibdev, page_addr, PAGE_SIZE, 0);
	if (IS_ERR(umem)) {
		kfree(page);
		page = ERR_CAST(umem);
		goto out;
	}
	page->uctx = uctx;
	page->user_page = page_addr;
	page->umem = umem;
	page->refs = 1;
	list_add(&page->list, &uctx->db_pages);
	uctx->db_npages++;
found:
	*dma = ohca_db_page_dma(page->umem) + (uaddr & ~PAGE_MASK);
out:
	mutex_unlock(&uctx->db_lock);
	return page;
}

/**
 * ohca_db_record_get() - a user doorbell record for a create command
 * @dev: the RDMA device
 * @uctx: the process's context
 * @uaddr: the record's user address (struct ohca_db_record, 8-byte aligned)
 * @page: set to its pinned page (for ohca_db_record_unmap()), or NULL
 * @record: set to its DMA address, the command's record field
 *
 * Return: 0, or the errno of ohca_db_record_map().
 */
int ohca_db_record_get(struct ohca_ibdev *dev, struct ohca_ucontext *uctx,
		       u64 uaddr, struct ohca_db_page **page, __le64 *record)
{
	dma_addr_t dma;

	*page = ohca_db_record_map(dev, uctx, uaddr, &dma);
	if (IS_ERR(*page)) {
		int err = PTR_ERR(*page);

		*page = NULL;
		return err;
	}
	*record = cpu_to_le64(dma);
	return 0;
}

/**
 * ohca_db_record_unmap() - drop a record's reference to its page
 * @page: from ohca_db_record_map(), or NULL
 *
 * The page is unpinned with its last record. Call it only once the device
 * no longer reads the record (its object destroyed).
 */
void ohca_db_record_unmap(struct ohca_db_page *page)
{
	struct ohca_ucontext *uctx;

	if (!page)
		return;
	uctx = page->uctx;
	mutex_lock(&uctx->db_lock);
	if (--page->refs == 0) {
		list_del(&page->list);
		uctx->db_npages--;
		ib_umem_release(page->umem);
		kfree(page);
	}
	mutex_unlock(&uctx->db_lock);
}

/**
 * ohca_db_record_ok() - whether this context may use doorbell records
 * @dev: the RDMA device
 *
 * Return: the device executes them (OHCA_DEV_CAP_DB_RECORD).
 */
bool ohca_db_record_ok(struct ohca_ibdev *dev)
{
	return le32_to_cpu(dev->cdev->attr.dev_caps) & OHCA_DEV_CAP_DB_RECORD;
}

/**
 * ohca_srq_db_record_ok() - whether user SRQs may have doorbell records
 * @dev: the RDMA device
 *
 * Return: the device takes CREATE_SRQ's grown input
 * (OHCA_DEV_CAP_SRQ_DB_RECORD); one with OHCA_DEV_CAP_DB_RECORD alone
 * refuses it.
 */
bool ohca_srq_db_record_ok(struct ohca_ibdev *dev)
{
	return le32_to_cpu(dev->cdev->attr.dev_caps) &
	       OHCA_DEV_CAP_SRQ_DB_RECORD;
}
