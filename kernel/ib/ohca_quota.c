// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca: the kernel's reserve in the device-wide tables (audit N7).
 *
 * The device's tables are shared by every process and by the kernel's own
 * consumers (ib_mad's QP 1 and its PD and CQ, NVMe-oF, NFS/RDMA, rdma_cm
 * listeners). Without a reserve one unprivileged process can take every
 * CQ or PD and the kernel gets nothing. So the driver counts what each
 * table holds (user and kernel objects alike: the count is the table's
 * occupancy as the driver sees it) and refuses a user object once the
 * table is filled to within its reserve, 1/16 of it (rounded down, at
 * least one entry when the table has two or more). Kernel objects are
 * not checked here: they may use the reserve, and the device refuses them
 * when the table is full.
 *
 * Counted: PDs, CQs, QPs (not the GSI QP, which has its own number outside
 * the QP table), SRQs and MRs (every kind, including the DMA MR
 * ib_alloc_pd() asks for). User contexts take a doorbell page each; the
 * kernel rings page 0, which ALLOC_UAR never hands out, so their reserve
 * is for CAP_SYS_ADMIN instead: an administrator can still open the
 * device (ibv_devinfo, rdma tools) when other users hold every other page.
 * XRCDs, memory windows, device memory and flows have no kernel consumer
 * and no reserve. A user's share of everything is bounded by the rdma
 * cgroup (docs/architecture.md, "Sharing the device between users").
 *
 * A refusal is -ENOMEM, the errno of the device's own NO_RESOURCES
 * (ohca_cmdq.c), so a process sees one code for a full table whichever
 * refused it, as rdma-core and the ULPs expect of resource exhaustion.
 *
 * QUERY_DEVICE's maxima stay the device's: the core caches one
 * ib_device_attr for kernel and user consumers alike.
 */
#include "ohca_ib.h"

static const char *const ohca_quota_names[OHCA_QUOTA_NR] = {
	[OHCA_QUOTA_UCTX] = "user context",
	[OHCA_QUOTA_PD] = "PD",
	[OHCA_QUOTA_CQ] = "CQ",
	[OHCA_QUOTA_QP] = "QP",
	[OHCA_QUOTA_SRQ] = "SRQ",
	[OHCA_QUOTA_MR] = "MR",
};

/**
 * ohca_quota_reserve() - the entries of a table user objects cannot take
 * @max: the table's size
 *
 * Return: @max / 16, and at least 1 when @max is 2 or more.
 */
u32 ohca_quota_reserve(u32 max)
{
	if (max < 2)
		return 0;
	return max(max / 16, 1U);
}

/**
 * ohca_quota_init() - size the user limits from QUERY_DEVICE
 * @dev: the RDMA device, its attributes read
 *
 * Called once before the device is registered.
 */
void ohca_quota_init(struct ohca_ibdev *dev)
{
	const struct ohca_query_device_out *a = &dev->cdev->attr;
	struct ohca_quota *q = &dev->quota;
	u32 max[OHCA_QUOTA_NR] = {
		[OHCA_QUOTA_UCTX] = le32_to_cpu(a->max_uar),
		[OHCA_QUOTA_PD] = le32_to_cpu(a->max_pd),
		[OHCA_QUOTA_CQ] = le32_to_cpu(a->max_cq),
		[OHCA_QUOTA_QP] = le32_to_cpu(a->max_qp),
		[OHCA_QUOTA_SRQ] = le32_to_cpu(a->max_srq),
		[OHCA_QUOTA_MR] = le32_to_cpu(a->max_mr),
	};
	int i;

	for (i = 0; i < OHCA_QUOTA_NR; i++) {
		atomic_set(&q->used[i], 0);
		q->reserve[i] = ohca_quota_reserve(max[i]);
		q->user_max[i] = max[i] - q->reserve[i];
	}
}

/**
 * ohca_quota_get() - count one object in its table
 * @dev: the RDMA device
 * @res: the table
 * @user: whether a user process asks for it (the limit applies)
 *
 * Pair with ohca_quota_put() when the object is gone or its creation
 * failed.
 *
 * Return: 0, or -ENOMEM when a user object would take the reserve.
 */
int ohca_quota_get(struct ohca_ibdev *dev, enum ohca_quota_res res, bool user)
{
	struct ohca_quota *q = &dev->quota;
	u32 used = atomic_inc_return(&q->used[res]);

	if (!user || used <= q->user_max[res])
		return 0;
	/* The doorbell pages' reserve is the administrator's (see above). */
	if (res == OHCA_QUOTA_UCTX && capable(CAP_SYS_ADMIN))
		return 0;
	atomic_dec(&q->used[res]);
	dev_dbg_ratelimited(&dev->cdev->pdev->dev,
			    "%s refused: %u in use, the last %u are the kernel's\n",
			    ohca_quota_names[res], used - 1, q->reserve[res]);
	return -ENOMEM;
}

/**
 * ohca_quota_put() - uncount one object
 * @dev: the RDMA device
 * @res: its table
 */
void ohca_quota_put(struct ohca_ibdev *dev, enum ohca_quota_res res)
{
	atomic_dec(&dev->quota.used[res]);
}

/* The ib_device_ops entries: each counts around the driver's own op. */

int ohca_quota_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibpd->device);
	int err;

	err = ohca_quota_get(dev, OHCA_QUOTA_PD, !!udata);
	if (err)
		return err;
	err = ohca_alloc_pd(ibpd, udata);
	if (err)
		ohca_quota_put(dev, OHCA_QUOTA_PD);
	return err;
}

int ohca_quota_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	int err = ohca_dealloc_pd(ibpd, udata);

	if (!err)
		ohca_quota_put(to_ohca_dev(ibpd->device), OHCA_QUOTA_PD);
	return err;
}

int ohca_quota_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
			 struct ohca_create_cq_arg *arg)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibcq->device);
	struct ib_udata *udata = ohca_create_cq_udata(arg);
	int err;

	err = ohca_quota_get(dev, OHCA_QUOTA_CQ, !!udata);
	if (err)
		return err;
	err = ohca_create_cq(ibcq, attr, udata);
	if (err)
		ohca_quota_put(dev, OHCA_QUOTA_CQ);
	return err;
}

int ohca_quota_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibcq->device);
	int err = ohca_destroy_cq(ibcq, udata);

	if (!err)
		ohca_quota_put(dev, OHCA_QUOTA_CQ);
	return err;
}

/* QP 1 has its own number outside the device's QP table. */
static bool ohca_quota_qp_counted(enum ib_qp_type type)
{
	return type != IB_QPT_GSI && type != IB_QPT_SMI;
}

int ohca_quota_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
			 struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibqp->device);
	bool counted = ohca_quota_qp_counted(init->qp_type);
	int err;

	/*
	 * The core creates an XRC target QP without udata for the process
	 * that opens it; only processes do (no kernel consumer uses XRC).
	 */
	if (counted) {
		err = ohca_quota_get(dev, OHCA_QUOTA_QP,
				     udata || init->qp_type == IB_QPT_XRC_TGT);
		if (err)
			return err;
	}
	err = ohca_create_qp(ibqp, init, udata);
	if (err && counted)
		ohca_quota_put(dev, OHCA_QUOTA_QP);
	return err;
}

int ohca_quota_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibqp->device);
	bool counted = ohca_quota_qp_counted(ibqp->qp_type);
	int err = ohca_destroy_qp(ibqp, udata);

	if (!err && counted)
		ohca_quota_put(dev, OHCA_QUOTA_QP);
	return err;
}

int ohca_quota_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
			  struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibsrq->device);
	int err;

	err = ohca_quota_get(dev, OHCA_QUOTA_SRQ, !!udata);
	if (err)
		return err;
	err = ohca_create_srq(ibsrq, init, udata);
	if (err)
		ohca_quota_put(dev, OHCA_QUOTA_SRQ);
	return err;
}

int ohca_quota_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibsrq->device);
	int err = ohca_destroy_srq(ibsrq, udata);

	if (!err)
		ohca_quota_put(dev, OHCA_QUOTA_SRQ);
	return err;
}

/* An MR op's result: uncount when it failed. */
static struct ib_mr *ohca_quota_mr_done(struct ohca_ibdev *dev,
					struct ib_mr *mr)
{
	if (IS_ERR_OR_NULL(mr))
		ohca_quota_put(dev, OHCA_QUOTA_MR);
	return mr;
}

struct ib_mr *ohca_quota_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				     u64 iova, int access,
				     struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibpd->device);
	int err = ohca_quota_get(dev, OHCA_QUOTA_MR, !!udata);

	if (err)
		return ERR_PTR(err);
	return ohca_quota_mr_done(dev, ohca_reg_user_mr(ibpd, start, length,
							iova, access, udata));
}

struct ib_mr *ohca_quota_reg_dm_mr(struct ib_pd *ibpd, struct ib_dm *ibdm,
				   struct ib_dm_mr_attr *attr,
				   struct uverbs_attr_bundle *attrs)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibpd->device);
	int err = ohca_quota_get(dev, OHCA_QUOTA_MR, true);

	if (err)
		return ERR_PTR(err);
	return ohca_quota_mr_done(dev, ohca_reg_dm_mr(ibpd, ibdm, attr, attrs));
}

struct ib_mr *ohca_quota_get_dma_mr(struct ib_pd *ibpd, int access)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibpd->device);

	ohca_quota_get(dev, OHCA_QUOTA_MR, false);
	return ohca_quota_mr_done(dev, ohca_get_dma_mr(ibpd, access));
}

struct ib_mr *ohca_quota_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type mr_type,
				  u32 max_num_sg)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibpd->device);

	ohca_quota_get(dev, OHCA_QUOTA_MR, false);
	return ohca_quota_mr_done(dev, ohca_alloc_mr(ibpd, mr_type,
						     max_num_sg));
}

int ohca_quota_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibmr->device);
	int err = ohca_dereg_mr(ibmr, udata);

	if (!err)
		ohca_quota_put(dev, OHCA_QUOTA_MR);
	return err;
}
