// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca: on-demand paging (programming manual section 19, docs/odp.md).
 *
 * An ODP MR is registered without pinning: the device starts with no
 * translation and raises OHCA_EQE_PAGE_FAULT when it needs a page. The
 * fault is resolved here, in a work item (not the EQ interrupt): the pages
 * are faulted in and DMA-mapped by ib_umem_odp_map_dma_and_lock(), and
 * ODP_MAP installs them while umem_mutex is held, so an invalidation
 * cannot slip in between. The MMU notifier's invalidation removes them
 * with ODP_UNMAP, whose completion means the device no longer uses the
 * pages, before the DMA mappings go. An implicit MR (the whole address
 * space) gets a child umem per OHCA_ODP_CHILD_SHIFT-aligned range the
 * device touches.
 */
#include <linux/sched/mm.h>
#include <rdma/ib_umem_odp.h>
#include <rdma/uverbs_ioctl.h>

#include "ohca_ib.h"

/* Children of an implicit MR: 2 MiB ranges, 512 small pages each. */
#define OHCA_ODP_CHILD_SHIFT	21
/*
 * Fault work items in flight: the device has at most max_odp_faults
 * outstanding, the rest is slack for events of MRs being destroyed.
 */
#define OHCA_ODP_MAX_WORKS	128

struct ohca_odp_fault {
	struct work_struct work;
	struct ohca_ibdev *dev;
	u32 key;
	u32 npages;
	u64 va;
};

/**
 * ohca_has_odp() - whether the device has on-demand paging
 * @dev: the RDMA device
 *
 * Return: true with OHCA_DEV_CAP_ODP.
 */
bool ohca_has_odp(struct ohca_ibdev *dev)
{
	return le32_to_cpu(dev->cdev->attr.dev_caps) & OHCA_DEV_CAP_ODP;
}

/**
 * ohca_odp_query_caps() - the ODP capabilities for query_device
 * @dev: the RDMA device
 * @props: its odp_caps and IBK_ON_DEMAND_PAGING are set (RC, and XRC, UD
 *         send, implicit MRs as the device has them)
 */
void ohca_odp_query_caps(struct ohca_ibdev *dev, struct ib_device_attr *props)
{
	u32 caps = le32_to_cpu(dev->cdev->attr.odp_caps);
	u32 rc = IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_RECV |
		 IB_ODP_SUPPORT_WRITE | IB_ODP_SUPPORT_READ |
		 IB_ODP_SUPPORT_ATOMIC | IB_ODP_SUPPORT_SRQ_RECV;

	if (!ohca_has_odp(dev) || !(caps & OHCA_ODP_RC))
		return;
	props->kernel_cap_flags |= IBK_ON_DEMAND_PAGING;
	props->odp_caps.general_caps = IB_ODP_SUPPORT;
	if (caps & OHCA_ODP_IMPLICIT)
		props->odp_caps.general_caps |= IB_ODP_SUPPORT_IMPLICIT;
	props->odp_caps.per_transport_caps.rc_odp_caps = rc;
	if (caps & OHCA_ODP_XRC)
		props->odp_caps.per_transport_caps.xrc_odp_caps = rc;
	if (caps & OHCA_ODP_UD_SEND)
		props->odp_caps.per_transport_caps.ud_odp_caps =
			IB_ODP_SUPPORT_SEND;
}

static struct ohca_mr *ohca_odp_get(struct ohca_ibdev *dev, u32 key)
{
	struct ohca_mr *mr;

	xa_lock_irq(&dev->odp_xa);
	mr = xa_load(&dev->odp_xa, key);
	if (mr && !refcount_inc_not_zero(&mr->odp_refs))
		mr = NULL;
	xa_unlock_irq(&dev->odp_xa);
	return mr;
}

static void ohca_odp_put(struct ohca_mr *mr)
{
	if (refcount_dec_and_test(&mr->odp_refs))
		complete(&mr->odp_done);
}

static int ohca_odp_unmap_cmd(struct ohca_ibdev *dev, u32 key, u64 va,
			      u64 npages)
{
	struct ohca_odp_unmap_in in = {
		.key = cpu_to_le32(key),
		.va = cpu_to_le64(va),
		.npages = cpu_to_le64(npages),
	};
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_ODP_UNMAP,
		.in = &in,
		.in_len = sizeof(in),
	};

	return ohca_cmd_exec(dev->cdev, &args);
}

static int ohca_odp_fail_cmd(struct ohca_ibdev *dev, u32 key, u64 va,
			     u32 npages)
{
	struct ohca_odp_map_in in = {
		.key = cpu_to_le32(key),
		.flags = cpu_to_le32(OHCA_ODP_MAP_FAIL),
		.va = cpu_to_le64(va),
		.npages = cpu_to_le32(max(npages, 1U)),
	};
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_ODP_MAP,
		.in = &in,
		.in_len = sizeof(in),
	};

	return ohca_cmd_exec(dev->cdev, &args);
}

/*
 * The invalidation: called with no device lock held; it may sleep when
 * the range is blockable (the command waits for the device).
 */
static bool ohca_odp_invalidate(struct mmu_interval_notifier *mni,
				const struct mmu_notifier_range *range,
				unsigned long cur_seq)
{
	struct ib_umem_odp *odp = container_of(mni, struct ib_umem_odp,
					       notifier);
	struct ohca_mr *mr = odp->private;
	unsigned long start, end;
	int err;

	if (!mmu_notifier_range_blockable(range))
		return false;
	mutex_lock(&odp->umem_mutex);
	mmu_interval_set_seq(mni, cur_seq);
	start = max_t(u64, ib_umem_start(odp), range->start);
	end = min_t(u64, ib_umem_end(odp), range->end);
	if (start < end && odp->npages) {
		start = ALIGN_DOWN(start, 1UL << odp->page_shift);
		end = ALIGN(end, 1UL << odp->page_shift);
		/* Not on the device yet (registration under way): no entry. */
		if (mr && mr->handle) {
			err = ohca_odp_unmap_cmd(mr->dev, mr->handle, start,
						 (end - start) >>
						 odp->page_shift);
			/* A stopped device no longer touches memory. */
			if (err && !test_bit(OHCA_FLAG_FATAL, &mr->dev->cdev->flags))
				ibdev_warn_ratelimited(&mr->dev->ibdev,
						       "ODP_UNMAP failed: %d\n",
						       err);
		}
		ib_umem_odp_unmap_dma_pages(odp, start, end);
	}
	mutex_unlock(&odp->umem_mutex);
	return true;
}

static const struct mmu_interval_notifier_ops ohca_odp_ops = {
	.invalidate = ohca_odp_invalidate,
};

/*
 * Maps [va, va + bytes) of one umem (an explicit MR's, or an implicit
 * MR's child) on the device, OHCA_ODP_MAP_MAX_PAGES pages per command.
 * @buf holds one ODP_MAP input; it is allocated before umem_mutex is
 * taken, since reclaim could call the invalidation, which takes it.
 */
static int ohca_odp_map_umem(struct ohca_ibdev *dev, struct ohca_mr *mr,
			     struct ib_umem_odp *odp, u64 va, u64 bytes,
			     bool fault, struct ohca_odp_map_in *buf)
{
	unsigned int shift = odp->page_shift;
	u64 access = ohca_odp_access(odp);
	__le64 *pte = (__le64 *)(buf + 1);
	u64 end = min_t(u64, va + bytes, ib_umem_end(odp));
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_ODP_MAP,
		.in = buf,
	};
	int npages, i, err;
	u64 idx;

	va = max_t(u64, ALIGN_DOWN(va, 1ULL << shift), ib_umem_start(odp));
	while (va < end) {
		u64 len = min_t(u64, end - va,
				(u64)OHCA_ODP_MAP_MAX_PAGES << shift);

		npages = ib_umem_odp_map_dma_and_lock(odp, va, len, access,
						      fault);
		if (npages < 0)
			return npages;
		npages = min_t(int, npages, OHCA_ODP_MAP_MAX_PAGES);
		if (!npages) {
			mutex_unlock(&odp->umem_mutex);
			return fault ? -EFAULT : 0;
		}
		idx = (va - ib_umem_start(odp)) >> shift;
		for (i = 0; i < npages; i++) {
			bool write = false;
			dma_addr_t d = 0;
			u64 e = 0;

			err = ohca_odp_page(odp, idx + i, &d, &write);
			if (err < 0) {
				mutex_unlock(&odp->umem_mutex);
				return err;
			}
			if (err) {
				e = d | OHCA_ODP_PTE_VALID;
				if (write)
					e |= OHCA_ODP_PTE_WRITE;
			}
			pte[i] = cpu_to_le64(e);
		}
		memset(buf, 0, sizeof(*buf));
		buf->key = cpu_to_le32(mr->handle);
		buf->va = cpu_to_le64(va);
		buf->npages = cpu_to_le32(npages);
		args.in_len = sizeof(*buf) + npages * sizeof(*pte);
		err = ohca_cmd_exec(dev->cdev, &args);
		mutex_unlock(&odp->umem_mutex);
		if (err)
			return err;
		va += (u64)npages << shift;
	}
	return 0;
}

/* The child of an implicit MR covering @va, created on first use. */
static struct ib_umem_odp *ohca_odp_child(struct ohca_mr *mr, u64 va)
{
	unsigned long index = va >> OHCA_ODP_CHILD_SHIFT;
	struct ib_umem_odp *child;
	int err;

	mutex_lock(&mr->odp_lock);
	child = xa_load(&mr->odp_children, index);
	if (child)
		goto out;
	child = ib_umem_odp_alloc_child(mr->odp, index << OHCA_ODP_CHILD_SHIFT,
					1UL << OHCA_ODP_CHILD_SHIFT,
					&ohca_odp_ops);
	if (IS_ERR(child))
		goto out;
	child->private = mr;
	err = xa_err(xa_store(&mr->odp_children, index, child, GFP_KERNEL));
	if (err) {
		ib_umem_odp_release(child);
		child = ERR_PTR(err);
	}
out:
	mutex_unlock(&mr->odp_lock);
	return child;
}

/* Maps [va, va + bytes) of an ODP MR; @fault: fault in missing pages. */
static int ohca_odp_map(struct ohca_ibdev *dev, struct ohca_mr *mr, u64 va,
			u64 bytes, bool fault)
{
	struct ohca_odp_map_in *buf;
	int err = 0;

	if (!bytes)
		return 0;
	if (va + bytes < va)
		return -EINVAL;
	buf = kmalloc(sizeof(*buf) + OHCA_ODP_MAP_MAX_PAGES * sizeof(__le64),
		      GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	if (!mr->odp_implicit) {
		if (va < ib_umem_start(mr->odp) ||
		    va + bytes > ib_umem_end(mr->odp))
			err = -EFAULT;
		else
			err = ohca_odp_map_umem(dev, mr, mr->odp, va, bytes,
						fault, buf);
		kfree(buf);
		return err;
	}
	while (bytes && !err) {
		u64 next = ALIGN_DOWN(va, 1ULL << OHCA_ODP_CHILD_SHIFT) +
			   (1ULL << OHCA_ODP_CHILD_SHIFT);
		u64 len = min_t(u64, bytes, next - va);
		struct ib_umem_odp *child;

		if (va >= TASK_SIZE) {
			err = -EFAULT;
			break;
		}
		child = ohca_odp_child(mr, va);
		if (IS_ERR(child)) {
			err = PTR_ERR(child);
			break;
		}
		err = ohca_odp_map_umem(dev, mr, child, va, len, fault, buf);
		va += len;
		bytes -= len;
	}
	kfree(buf);
	return err;
}

static void ohca_odp_fault_work(struct work_struct *work)
{
	struct ohca_odp_fault *f = container_of(work, struct ohca_odp_fault,
						work);
	struct ohca_ibdev *dev = f->dev;
	struct ohca_mr *mr = ohca_odp_get(dev, f->key);
	int err;

	if (mr) {
		err = ohca_odp_map(dev, mr, f->va,
				   (u64)f->npages << mr->odp_shift, true);
		if (err) {
			ibdev_dbg(&dev->ibdev,
				  "page fault of MR 0x%x at %#llx failed: %d\n",
				  f->key, f->va, err);
			ohca_odp_fail_cmd(dev, f->key, f->va, f->npages);
		}
		ohca_odp_put(mr);
	}
	kfree(f);
	if (atomic_dec_and_test(&dev->odp_works))
		wake_up_var(&dev->odp_works);
}

/**
 * ohca_odp_fault_event() - an OHCA_EQE_PAGE_FAULT event
 * @dev: the RDMA device
 * @eqe: the event (MR key, address, pages)
 *
 * Resolved in a work item. Past OHCA_ODP_MAX_WORKS in flight, or during
 * teardown, the event is dropped: the device posts the fault again once it
 * has aged out. EQ 0, IRQ context.
 */
void ohca_odp_fault_event(struct ohca_ibdev *dev, const struct ohca_eqe *eqe)
{
	u16 code = le16_to_cpu(eqe->code);
	struct ohca_odp_fault *f;

	/* Counted before the check: ohca_odp_drain() waits for the count. */
	if (atomic_inc_return(&dev->odp_works) > OHCA_ODP_MAX_WORKS ||
	    READ_ONCE(dev->odp_stopped))
		goto drop;
	f = kzalloc(sizeof(*f), GFP_ATOMIC);
	if (!f)
		goto drop;
	f->dev = dev;
	f->key = le32_to_cpu(eqe->param0);
	f->va = le32_to_cpu(eqe->param1) |
		(u64)le32_to_cpu(eqe->param2) << 32;
	f->npages = clamp_t(u32, code & OHCA_PF_NPAGES_MASK, 1,
			    OHCA_ODP_MAP_MAX_PAGES);
	INIT_WORK(&f->work, ohca_odp_fault_work);
	queue_work(ohca_unbound_wq, &f->work);
	return;
drop:
	/* The device posts the fault again once it has aged out. */
	if (!READ_ONCE(dev->odp_stopped))
		dev_warn_ratelimited(&dev->cdev->pdev->dev,
				     "page fault event dropped\n");
	if (atomic_dec_and_test(&dev->odp_works))
		wake_up_var(&dev->odp_works);
}

/**
 * ohca_odp_drain() - stop the page-fault work, for teardown
 * @dev: the RDMA device
 *
 * Later fault events are dropped; no fault work runs after this returns.
 */
void ohca_odp_drain(struct ohca_ibdev *dev)
{
	WRITE_ONCE(dev->odp_stopped, true);
	smp_mb(); /* pairs with the event handler's atomic_inc_return() */
	wait_var_event(&dev->odp_works, !atomic_read(&dev->odp_works));
}

/**
 * ohca_reg_user_mr_odp() - register an ODP MR (from ohca_reg_user_mr())
 * @ibpd: the PD
 * @start: the user address; 0 with @length U64_MAX for an implicit MR
 * @length: the length
 * @iova: must be @start: the device indexes an ODP MR's pages by their
 *        user address
 * @access: IB access flags, IB_ACCESS_ON_DEMAND among them
 *
 * Nothing is pinned: the device starts with no translation and raises page
 * faults.
 *
 * Return: the MR, or an ERR_PTR: -EOPNOTSUPP (no ODP, or no implicit
 * ODP, or @iova not @start), -EINVAL for a length out of range, or the
 * errno of the umem or of the command.
 */
struct ib_mr *ohca_reg_user_mr_odp(struct ib_pd *ibpd, u64 start, u64 length,
				   u64 iova, int access)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibpd->device);
	bool implicit = !start && length == U64_MAX;
	u32 caps = le32_to_cpu(dev->cdev->attr.odp_caps);
	struct ohca_create_mr_in in = {};
	u32 lkey, rkey, flags;
	struct ohca_mr *mr;
	int err;

	if (!ohca_has_odp(dev) || (implicit && !(caps & OHCA_ODP_IMPLICIT)))
		return ERR_PTR(-EOPNOTSUPP);
	/* The device indexes an ODP MR's pages by their user address. */
	if (iova != start)
		return ERR_PTR(-EOPNOTSUPP);
	if (!implicit &&
	    (!length || length > le64_to_cpu(dev->cdev->attr.max_mr_size)))
		return ERR_PTR(-EINVAL);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->dev = dev;
	mutex_init(&mr->odp_lock);
	xa_init(&mr->odp_children);
	refcount_set(&mr->odp_refs, 1);
	init_completion(&mr->odp_done);
	mr->odp_implicit = implicit;
	if (implicit)
		mr->odp = ib_umem_odp_alloc_implicit(ibpd->device, access);
	else
		mr->odp = ib_umem_odp_get(ibpd->device, start, length, access,
					  &ohca_odp_ops);
	if (IS_ERR(mr->odp)) {
		err = PTR_ERR(mr->odp);
		goto err_free;
	}
	mr->odp->private = mr;
	mr->odp_shift = mr->odp->page_shift;

	flags = OHCA_MR_F_ODP | (implicit ? OHCA_MR_F_IMPLICIT : 0);
	in.pdn = cpu_to_le32(to_ohca_pd(ibpd)->pdn);
	in.access = cpu_to_le32(ohca_access_to_dev(access));
	in.flags = cpu_to_le32(flags);
	if (!implicit) {
		in.iova = cpu_to_le64(iova);
		in.length = cpu_to_le64(length);
	}
	in.pbl.page_shift = mr->odp_shift;
	err = ohca_cmd_create(dev->cdev, OHCA_CMD_CREATE_MR, &in, sizeof(in), &lkey,
			      &rkey);
	if (err)
		goto err_release;
	/* Under umem_mutex: the invalidation reads the handle under it. */
	mutex_lock(&mr->odp->umem_mutex);
	mr->handle = lkey;
	mutex_unlock(&mr->odp->umem_mutex);
	mr->ibmr.lkey = lkey;
	mr->ibmr.rkey = rkey;
	mr->access = access;
	err = xa_err(xa_store_irq(&dev->odp_xa, lkey, mr, GFP_KERNEL));
	if (err) {
		ohca_cmd_destroy(dev->cdev, OHCA_CMD_DESTROY_MR, lkey);
		goto err_release;
	}
	return &mr->ibmr;

err_release:
	ib_umem_odp_release(mr->odp);
err_free:
	kfree(mr);
	return ERR_PTR(err);
}

/* ODP_UNMAP of all of one umem, under its umem_mutex as an invalidation. */
static int ohca_odp_unmap_umem(struct ohca_mr *mr, struct ib_umem_odp *odp)
{
	u64 start = ib_umem_start(odp);
	u64 end = ib_umem_end(odp);
	int err;

	mutex_lock(&odp->umem_mutex);
	err = ohca_odp_unmap_cmd(mr->dev, mr->handle, start,
				 (end - start) >> odp->page_shift);
	mutex_unlock(&odp->umem_mutex);
	/* BAD_HANDLE: the device has no such MR, so no translation of it. */
	return err == -ENOENT ? 0 : err;
}

/*
 * DESTROY_MR failed on a device that still runs: it may still hold
 * translations of the MR's pages, which ODP does not pin. Asks it to drop
 * every one of them; 0 once it confirmed (ODP_UNMAP's completion means
 * the device no longer uses the pages).
 */
static int ohca_odp_unmap_all(struct ohca_mr *mr)
{
	struct ib_umem_odp *child;
	unsigned long index;
	int err;

	if (!mr->odp_implicit)
		return ohca_odp_unmap_umem(mr, mr->odp);
	xa_for_each(&mr->odp_children, index, child) {
		err = ohca_odp_unmap_umem(mr, child);
		if (err)
			return err;
	}
	return 0;
}

/**
 * ohca_dereg_mr_odp() - deregister an ODP MR and free it
 * @mr: the MR (mr->odp set)
 *
 * No new fault work finds the MR, the device forgets it (and its
 * translations), the running fault work ends, then the umems go (their
 * interval notifiers and DMA mappings) and the MR is freed.
 *
 * If DESTROY_MR fails on a device that still runs (audit N4), the device
 * is asked to drop every translation first; the umems and the MR go only
 * once it confirmed. Otherwise the MR is leaked with its umems, never
 * freed under them: their interval notifiers point at it, and a later
 * munmap() of the range still runs ohca_odp_invalidate() on it.
 */
void ohca_dereg_mr_odp(struct ohca_mr *mr)
{
	struct ohca_ibdev *dev = mr->dev;
	struct ib_umem_odp *child;
	unsigned long index;
	int err;

	xa_erase_irq(&dev->odp_xa, mr->handle);
	err = ohca_cmd_destroy(dev->cdev, OHCA_CMD_DESTROY_MR, mr->handle);
	ohca_odp_put(mr);
	wait_for_completion(&mr->odp_done);
	if (ohca_destroy_failed(dev, err, "MR", mr->handle)) {
		err = ohca_odp_unmap_all(mr);
		if (err && !test_bit(OHCA_FLAG_FATAL, &dev->cdev->flags)) {
			dev_err_ratelimited(&dev->cdev->pdev->dev,
					    "ODP MR 0x%x: pages not unmapped (%d), the MR is leaked\n",
					    mr->handle, err);
			return;
		}
	}
	xa_for_each(&mr->odp_children, index, child)
		ib_umem_odp_release(child);
	xa_destroy(&mr->odp_children);
	ib_umem_odp_release(mr->odp);
	kfree(mr);
}

/**
 * ohca_advise_mr() - ib_device_ops.advise_mr: ODP prefetch
 * @pd: the PD the MRs must be in
 * @advice: PREFETCH, PREFETCH_WRITE or PREFETCH_NO_FAULT
 * @flags: IB_UVERBS_ADVISE_MR_FLAG_FLUSH: wait for the result
 * @sg_list: the ranges, by ODP MR lkey
 * @num_sge: their number
 * @attrs: unused
 *
 * The ranges are mapped now. Without IB_UVERBS_ADVISE_MR_FLAG_FLUSH the
 * caller does not wait for the result, so errors are not reported; the
 * work is the same.
 *
 * Return: 0, -EOPNOTSUPP (advice, flags), -ENOENT for a key that is no
 * ODP MR, or with the flush flag the mapping's errno.
 */
int ohca_advise_mr(struct ib_pd *pd, enum ib_uverbs_advise_mr_advice advice,
		   u32 flags, struct ib_sge *sg_list, u32 num_sge,
		   struct uverbs_attr_bundle *attrs)
{
	struct ohca_ibdev *dev = to_ohca_dev(pd->device);
	bool fault = advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT;
	int err = 0;
	u32 i;

	if (advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH &&
	    advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    advice != IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return -EOPNOTSUPP;
	if (flags & ~IB_UVERBS_ADVISE_MR_FLAG_FLUSH)
		return -EOPNOTSUPP;
	for (i = 0; i < num_sge && !err; i++) {
		struct ohca_mr *mr = ohca_odp_get(dev, sg_list[i].lkey);

		if (!mr)
			return -ENOENT;
		if (mr->ibmr.pd != pd)
			err = -EINVAL;
		else
			err = ohca_odp_map(dev, mr, sg_list[i].addr,
					   sg_list[i].length, fault);
		ohca_odp_put(mr);
	}
	return flags & IB_UVERBS_ADVISE_MR_FLAG_FLUSH ? err : 0;
}
