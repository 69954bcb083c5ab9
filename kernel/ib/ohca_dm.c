// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca: device memory (OHCA_DEV_CAP_DM). The device hands out page-sized
 * chunks of its memory (ALLOC_DM); the process that allocated them maps
 * exactly those pages of BAR2 and reads and writes them directly, and MRs
 * registered on them (REG_DM_MR) let the device use them as the source or
 * target of any work request.
 */
#define UVERBS_MODULE_NAME ohca_ib
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/uverbs_ioctl.h>
#include <rdma/uverbs_named_ioctl.h>

#include <ohca/ohca-abi.h>
#include <ohca/ohca_cmd.h>
#include <ohca/ohca_regs.h>

#include "ohca_ib.h"

/* A user mapping of an allocation covers whole chunks, nothing more. */
static_assert(PAGE_SIZE == OHCA_DM_CHUNK_SIZE,
	      "a device memory mapping must cover exactly its chunks");

struct ohca_dm {
	struct ib_dm ibdm;
	struct ohca_user_mmap_entry *entry;
	u32 handle;
};

static struct ohca_dm *to_ohca_dm(struct ib_dm *ibdm)
{
	return container_of(ibdm, struct ohca_dm, ibdm);
}

/**
 * ohca_max_dm_size() - the device memory a user may allocate at most
 * @dev: the RDMA device
 *
 * Return: the size in bytes, 0 without OHCA_DEV_CAP_DM.
 */
u64 ohca_max_dm_size(struct ohca_ibdev *dev)
{
	if (!(le32_to_cpu(dev->cdev->attr.dev_caps) & OHCA_DEV_CAP_DM))
		return 0;
	return le64_to_cpu(dev->cdev->attr.max_dm_size);
}

static int ohca_free_dm_cmd(struct ohca_ibdev *dev, u32 handle)
{
	return ohca_cmd_destroy(dev->cdev, OHCA_CMD_FREE_DM, handle);
}

/**
 * ohca_dm_release() - give an allocation's chunks back to the device
 * @dev: the RDMA device
 * @handle: ALLOC_DM's handle
 *
 * The last reference to the allocation's mmap entry is gone (the DM was
 * freed and no process maps it any more): only now may the device hand
 * the chunks to someone else.
 */
void ohca_dm_release(struct ohca_ibdev *dev, u32 handle)
{
	ohca_destroy_failed(dev, ohca_free_dm_cmd(dev, handle), "DM", handle);
}

/**
 * ohca_alloc_dm() - ib_device_ops.alloc_dm: device memory for a user
 * @ibdev: the RDMA device
 * @ibuctx: the user context the memory is mapped into
 * @attr: length and alignment (log2)
 * @attrs: the response: the mmap offset of the memory (in BAR2)
 *
 * The device's answer is checked against the device-memory window before
 * anything is mapped.
 *
 * Return: the DM, or an ERR_PTR: -EOPNOTSUPP without device memory,
 * -EINVAL (length, alignment), -EIO (a bad answer), or another errno.
 */
struct ib_dm *ohca_alloc_dm(struct ib_device *ibdev,
			    struct ib_ucontext *ibuctx,
			    struct ib_dm_alloc_attr *attr,
			    struct uverbs_attr_bundle *attrs)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibdev);
	struct ohca_alloc_dm_in in = {};
	struct ohca_alloc_dm_out out = {};
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_ALLOC_DM,
		.in = &in,
		.in_len = sizeof(in),
		.out = &out,
		.out_len = sizeof(out),
	};
	struct ohca_user_mmap_entry *entry;
	u64 max = ohca_max_dm_size(dev);
	u64 bar_offset, mmap_offset, len;
	struct ohca_dm *dm;
	int err;

	if (!max)
		return ERR_PTR(-EOPNOTSUPP);
	if (!attr->length || attr->length > max)
		return ERR_PTR(-EINVAL);
	if (attr->alignment > OHCA_DM_CHUNK_SHIFT)
		return ERR_PTR(-EINVAL);
	len = PAGE_ALIGN(attr->length);

	dm = kzalloc(sizeof(*dm), GFP_KERNEL);
	if (!dm)
		return ERR_PTR(-ENOMEM);
	entry = kzalloc(sizeof(*entry), GFP_KERNEL);
	if (!entry) {
		err = -ENOMEM;
		goto err_free_dm;
	}

	in.length = cpu_to_le64(attr->length);
	in.log_align = cpu_to_le32(attr->alignment);
	err = ohca_cmd_exec(dev->cdev, &args);
	if (err)
		goto err_free_entry;
	dm->handle = le32_to_cpu(out.handle);
	bar_offset = le64_to_cpu(out.bar_offset);
	/* Never map what the device did not hand out as device memory. */
	if (bar_offset < OHCA_DM_BAR_OFFSET ||
	    bar_offset > OHCA_DM_BAR_OFFSET + OHCA_DM_SIZE - len ||
	    !PAGE_ALIGNED(bar_offset) ||
	    bar_offset + len > dev->cdev->db_bar_len) {
		ibdev_err(ibdev, "ALLOC_DM answered BAR2 offset %#llx\n",
			  bar_offset);
		err = -EIO;
		goto err_free_cmd;
	}

	entry->address = dev->cdev->db_bar_addr + bar_offset;
	entry->dm_handle = dm->handle;
	err = rdma_user_mmap_entry_insert(ibuctx, &entry->rdma_entry, len);
	if (err)
		goto err_free_cmd;
	dm->entry = entry;

	mmap_offset = rdma_user_mmap_get_offset(&entry->rdma_entry);
	err = uverbs_copy_to(attrs, OHCA_IB_ATTR_ALLOC_DM_RESP_MMAP_OFFSET,
			     &mmap_offset, sizeof(mmap_offset));
	if (err) {
		/* mmap_free() returns the chunks and frees the entry. */
		rdma_user_mmap_entry_remove(&entry->rdma_entry);
		kfree(dm);
		return ERR_PTR(err);
	}
	return &dm->ibdm;

err_free_cmd:
	ohca_dm_release(dev, dm->handle);
err_free_entry:
	kfree(entry);
err_free_dm:
	kfree(dm);
	return ERR_PTR(err);
}

/**
 * ohca_dealloc_dm() - ib_device_ops.dealloc_dm
 * @ibdm: the DM
 * @attrs: unused
 *
 * No new mapping from here on; the chunks go back to the device once the
 * process has unmapped them too (ohca_dm_release()).
 *
 * Return: 0.
 */
int ohca_dealloc_dm(struct ib_dm *ibdm, struct uverbs_attr_bundle *attrs)
{
	struct ohca_dm *dm = to_ohca_dm(ibdm);

	/*
	 * No new mapping from here on; the chunks go back to the device in
	 * mmap_free(), once the process has unmapped them too.
	 */
	rdma_user_mmap_entry_remove(&dm->entry->rdma_entry);
	kfree(dm);
	return 0;
}

/**
 * ohca_reg_dm_mr() - ib_device_ops.reg_dm_mr: an MR over device memory
 * @ibpd: the PD
 * @ibdm: the DM
 * @attr: offset and length in the DM, access flags
 * @attrs: unused
 *
 * Return: the MR, or an ERR_PTR with a negative errno.
 */
struct ib_mr *ohca_reg_dm_mr(struct ib_pd *ibpd, struct ib_dm *ibdm,
			     struct ib_dm_mr_attr *attr,
			     struct uverbs_attr_bundle *attrs)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibpd->device);
	struct ohca_reg_dm_mr_in in = {};
	struct ohca_mr *mr;
	u32 lkey, rkey;
	int err;

	/*
	 * The core made sure of IB_ZERO_BASED and the range; windows cannot
	 * be bound to device memory.
	 */
	if (attr->access_flags & ~(IB_ZERO_BASED | IB_ACCESS_LOCAL_WRITE |
				   IB_ACCESS_REMOTE_WRITE |
				   IB_ACCESS_REMOTE_READ |
				   IB_ACCESS_REMOTE_ATOMIC |
				   IB_ACCESS_OPTIONAL))
		return ERR_PTR(-EOPNOTSUPP);

	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	in.pdn = cpu_to_le32(to_ohca_pd(ibpd)->pdn);
	in.access = cpu_to_le32(ohca_access_to_dev(attr->access_flags));
	in.dm_handle = cpu_to_le32(to_ohca_dm(ibdm)->handle);
	in.offset = cpu_to_le64(attr->offset);
	in.length = cpu_to_le64(attr->length);
	err = ohca_cmd_create(dev->cdev, OHCA_CMD_REG_DM_MR, &in, sizeof(in), &lkey,
			      &rkey);
	if (err) {
		kfree(mr);
		return ERR_PTR(err);
	}
	mr->handle = lkey;
	mr->access = attr->access_flags;
	mr->ibmr.lkey = lkey;
	mr->ibmr.rkey = rkey;
	mr->ibmr.iova = 0;
	mr->ibmr.length = attr->length;
	return &mr->ibmr;
}

/* The allocation's mmap offset, beside the core's DM_ALLOC attributes. */
ADD_UVERBS_ATTRIBUTES_SIMPLE(ohca_dm_alloc_attrs, UVERBS_OBJECT_DM,
			     UVERBS_METHOD_DM_ALLOC,
			     UVERBS_ATTR_PTR_OUT(OHCA_IB_ATTR_ALLOC_DM_RESP_MMAP_OFFSET,
						 UVERBS_ATTR_TYPE(u64),
						 UA_MANDATORY));

const struct uapi_definition ohca_uapi_defs[] = {
	UAPI_DEF_CHAIN_OBJ_TREE(UVERBS_OBJECT_DM, &ohca_dm_alloc_attrs),
	{},
};
