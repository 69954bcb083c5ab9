// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca_ib: protection domains and memory regions (user, DMA, rereg,
 * deregistration). Page lists and access flags are in ohca_pbl.c,
 * on-demand paging MRs in ohca_odp.c.
 */
#include <rdma/ib_umem.h>
#include <rdma/uverbs_ioctl.h>

#include <ohca/ohca-abi.h>

#include "ohca_ib.h"

/**
 * ohca_alloc_pd() - ib_device_ops.alloc_pd
 * @ibpd: the PD, allocated by the core
 * @udata: unused: the provider needs no PD number
 *
 * Return: 0 or the command's errno.
 */
int ohca_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibpd->device);
	struct ohca_pd *pd = to_ohca_pd(ibpd);

	/* No driver data either way: the provider needs no PD number. */
	return ohca_cmd_create(dev->cdev, OHCA_CMD_CREATE_PD, NULL, 0, &pd->pdn,
			       NULL);
}

/**
 * ohca_dealloc_pd() - ib_device_ops.dealloc_pd
 * @ibpd: the PD
 * @udata: unused
 *
 * Return: 0 (a failed DESTROY_PD is logged: ohca_destroy_failed()).
 */
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

/**
 * ohca_reg_user_mr() - ib_device_ops.reg_user_mr
 * @ibpd: the PD
 * @start: the user address of the memory
 * @length: its length
 * @iova: the address the MR's users give for @start
 * @access: IB access flags; with IB_ACCESS_ON_DEMAND, an ODP MR
 *          (ohca_reg_user_mr_odp())
 * @udata: the user's (no request data)
 *
 * The memory is pinned and its page list built in the largest page size
 * the device takes.
 *
 * Return: the MR, or an ERR_PTR: -EOPNOTSUPP for access flags the device
 * does not have, -EINVAL for a length out of range, or the errno of
 * pinning or of the command.
 */
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

	mr->umem = ohca_umem_get(ibpd->device, start, length, access);
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

/**
 * ohca_get_dma_mr() - ib_device_ops.get_dma_mr: the physical MR
 * @ibpd: the PD
 * @access: local access only (IB_ACCESS_LOCAL_WRITE)
 *
 * Return: the MR, or an ERR_PTR (-EOPNOTSUPP for remote access, or the
 * command's errno).
 */
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

/**
 * ohca_rereg_user_mr() - ib_device_ops.rereg_user_mr, in place
 * @ibmr: the MR (a user MR)
 * @flags: IB_MR_REREG_TRANS, IB_MR_REREG_PD, IB_MR_REREG_ACCESS
 * @start: the new user address (IB_MR_REREG_TRANS)
 * @length: the new length (IB_MR_REREG_TRANS)
 * @iova: the new iova (IB_MR_REREG_TRANS)
 * @access: the new access flags (IB_MR_REREG_ACCESS)
 * @ibpd: the new PD (IB_MR_REREG_PD)
 * @udata: the user's (no request data)
 *
 * REREG_MR: the MR keeps its keys (IBTA lets them change; keeping them
 * lets a peer that holds the rkey go on after an access change). A new
 * translation is pinned and listed first and the old pages released only
 * once the device uses the new ones; an access change that makes a
 * read-only MR writable pins its pages again for writing, as if the
 * translation changed.
 *
 * Return: NULL (the core keeps the ib_mr and updates its PD, iova and
 * length), or an ERR_PTR: -EOPNOTSUPP (no OHCA_DEV_CAP_REREG_MR, not a
 * user MR, flags), -EINVAL, or the errno of pinning or of the command.
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
		umem = ohca_umem_get(ibmr->device, start, length, new_access);
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

/**
 * ohca_dereg_mr() - ib_device_ops.dereg_mr
 * @ibmr: the MR (any kind: user, ODP, DMA, fast registration, DM)
 * @udata: unused
 *
 * Memory the device may still use after a failed DESTROY_MR stays pinned
 * (ohca_destroy_failed()); an ODP MR goes through ohca_dereg_mr_odp().
 *
 * Return: 0, or -EBUSY while memory windows are bound to the MR (IBTA:
 * deregistration fails; uverbs retries once they are gone).
 */
int ohca_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibmr->device);
	struct ohca_mr *mr = to_ohca_mr(ibmr);
	int err;

	/* Frees the MR, or leaks it with what the device may still use. */
	if (mr->odp) {
		ohca_dereg_mr_odp(mr);
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
