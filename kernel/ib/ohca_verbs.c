// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca: ib_device_ops: the device, port, GID table, user contexts and
 * doorbell mmap here; PDs and MRs in ohca_mr.c, CQs in ohca_cq.c, QPs
 * in ohca_qp.c, address handles in ohca_ah.c.
 */
#include <linux/etherdevice.h>
#include <linux/if_vlan.h>
#include <net/ipv6.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>
#include <rdma/uverbs_ioctl.h>

#include <ohca/ohca-abi.h>

#include "ohca_ib.h"

/*
 * RoCE path MTU of an Ethernet MTU: iboe_get_mtu() takes off the largest
 * header stack inside the MTU. Below 256 bytes there is no IB MTU; 256 is
 * reported (the netdev's minimum MTU keeps that case theoretical).
 */
static enum ib_mtu ohca_eth_mtu_to_ib(u32 eth_mtu)
{
	int mtu = iboe_get_mtu(eth_mtu);

	return mtu ? mtu : IB_MTU_256;
}

/**
 * ohca_port_active() - whether the port is up
 * @dev: the RDMA device
 *
 * Return: true when the wire is up and the Ethernet interface is too; on
 * an InfiniBand port, when the subnet manager made it ACTIVE.
 */
bool ohca_port_active(struct ohca_ibdev *dev)
{
	struct net_device *ndev = dev->cdev->netdev;

	if (dev->cdev->ib_port)
		return atomic_read(&dev->cdev->port_state) == OHCA_PORT_ACTIVE &&
		       !test_bit(OHCA_FLAG_FATAL, &dev->cdev->flags);
	return atomic_read(&dev->cdev->link_up) &&
	       !test_bit(OHCA_FLAG_FATAL, &dev->cdev->flags) &&
	       netif_running(ndev) && netif_carrier_ok(ndev);
}

static int ohca_query_device(struct ib_device *ibdev,
			     struct ib_device_attr *props,
			     struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibdev);
	const struct ohca_query_device_out *a = &dev->cdev->attr;

	if (udata && !ohca_udata_tail_clear(udata, 0))
		return -EINVAL;

	memset(props, 0, sizeof(*props));
	props->fw_ver = le32_to_cpu(a->fw_version);
	props->sys_image_guid = cpu_to_be64(le64_to_cpu(a->sys_image_guid));
	props->max_mr_size = le64_to_cpu(a->max_mr_size);
	/* The MR page sizes the driver uses (ohca_pgsz_bitmap()). */
	props->page_size_cap = le64_to_cpu(a->page_size_cap) &
			       GENMASK_ULL(OHCA_PAGE_SHIFT_MAX,
					   OHCA_PAGE_SHIFT_MIN);
	props->vendor_id = le32_to_cpu(a->vendor_id);
	props->vendor_part_id = le32_to_cpu(a->vendor_part_id);
	props->hw_ver = le32_to_cpu(a->hw_version);
	props->max_qp = le32_to_cpu(a->max_qp);
	props->max_qp_wr = le32_to_cpu(a->max_qp_wr);
	props->max_send_sge = le32_to_cpu(a->max_sge);
	props->max_recv_sge = le32_to_cpu(a->max_sge);
	props->max_sge_rd = le32_to_cpu(a->max_sge_rd);
	props->max_cq = le32_to_cpu(a->max_cq);
	props->max_cqe = le32_to_cpu(a->max_cqe);
	props->max_mr = le32_to_cpu(a->max_mr);
	props->max_pd = le32_to_cpu(a->max_pd);
	props->max_qp_rd_atom = le32_to_cpu(a->max_qp_rd_atom);
	props->max_qp_init_rd_atom = le32_to_cpu(a->max_qp_init_rd_atom);
	props->max_res_rd_atom = min_t(u64, (u64)props->max_qp *
				       props->max_qp_rd_atom, INT_MAX);
	/*
	 * The flags for what the device does: RNR NAKs on an empty receive
	 * queue, port state events, a system image GUID; fast registration
	 * below when the device offers it. Atomics and SRQs are stated by
	 * atomic_cap and max_srq; memory windows below when the
	 * device offers them; no SRQ resizing and no checksum offload. CQ resizing and MR
	 * re-registration have no flag: the verbs answer EOPNOTSUPP when
	 * the device lacks them (dev_caps).
	 */
	props->device_cap_flags = IB_DEVICE_RC_RNR_NAK_GEN |
				  IB_DEVICE_PORT_ACTIVE_EVENT;
	if (props->sys_image_guid)
		props->device_cap_flags |= IB_DEVICE_SYS_IMAGE_GUID;
	/* No kernel-only capability (IBK_*) applies: local_dma_lkey is 0. */
	props->kernel_cap_flags = 0;
	/* Address handles cost the device nothing (see ohca_ah.c). */
	props->max_ah = dev->cdev->caps & OHCA_CAP_UD ? le32_to_cpu(a->max_ah) : 0;
	props->max_srq = le32_to_cpu(a->max_srq);
	props->max_srq_wr = le32_to_cpu(a->max_srq_wr);
	props->max_srq_sge = le32_to_cpu(a->max_srq_sge);
	if (ohca_has_rss(dev)) {
		props->max_wq_type_rq = le32_to_cpu(a->max_wq);
		props->rss_caps.supported_qpts = BIT(IB_QPT_RAW_PACKET);
		props->rss_caps.max_rwq_indirection_tables =
			le32_to_cpu(a->max_rwq_ind_tbl);
		props->rss_caps.max_rwq_indirection_table_size =
			le32_to_cpu(a->max_rwq_ind_tbl_size);
	}
	props->max_pkeys = dev->cdev->ib_port ? ohca_ib_pkey_tbl_len(dev) : 1;
	props->max_mcast_grp = le32_to_cpu(a->max_mcast_grp);
	props->max_mcast_qp_attach = le32_to_cpu(a->max_mcast_qp_attach);
	props->max_total_mcast_qp_attach =
		le32_to_cpu(a->max_total_mcast_qp_attach);
	/* What the device guarantees: see the programming manual, section 10. */
	switch (le32_to_cpu(a->atomic_cap)) {
	case OHCA_ATOMIC_HCA:
		props->atomic_cap = IB_ATOMIC_HCA;
		break;
	case OHCA_ATOMIC_GLOB:
		props->atomic_cap = IB_ATOMIC_GLOB;
		break;
	default:
		props->atomic_cap = IB_ATOMIC_NONE;
		break;
	}
	props->masked_atomic_cap = IB_ATOMIC_NONE;
	props->max_fast_reg_page_list_len = ohca_fast_reg_page_list_len(dev);
	if (props->max_fast_reg_page_list_len)
		props->device_cap_flags |= IB_DEVICE_MEM_MGT_EXTENSIONS;
	/* Windows of type 1 and 2B (ohca_mw.c; programming manual). */
	props->max_mw = ohca_max_mw(dev);
	props->max_dm_size = ohca_max_dm_size(dev);
	if (props->max_mw)
		props->device_cap_flags |= IB_DEVICE_MEM_WINDOW |
					   IB_DEVICE_MEM_WINDOW_TYPE_2B;
	/* XRC domains, SRQs and QPs (ohca_xrc.c); max_xrcd is the device's. */
	if (ohca_has_xrc(dev))
		props->device_cap_flags |= IB_DEVICE_XRC;
	/* On-demand paging (ohca_odp.c): where faults are resolved. */
	ohca_odp_query_caps(dev, props);
	/* Completion event moderation (ohca_cq.c). */
	ohca_cq_query_caps(dev, props);
	/* Raw Ethernet QPs and their flows (ohca_flow.c). */
	if (ohca_has_raw(dev)) {
		props->max_raw_ethy_qp = props->max_qp;
		props->device_cap_flags |= IB_DEVICE_MANAGED_FLOW_STEERING;
	}
	return 0;
}

static void ohca_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibdev);
	u32 fw = le32_to_cpu(dev->cdev->attr.fw_version);

	snprintf(str, IB_FW_VERSION_NAME_MAX, "%u.%u.%u", fw >> 16,
		 (fw >> 8) & 0xff, fw & 0xff);
}

static int ohca_query_port(struct ib_device *ibdev, u32 port,
			   struct ib_port_attr *props)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibdev);
	bool up = ohca_port_active(dev);
	int err;

	if (port != 1)
		return -EINVAL;
	if (dev->cdev->ib_port)
		return ohca_ib_query_port(dev, props);

	/* The core zeroed *props. */
	props->state = up ? IB_PORT_ACTIVE : IB_PORT_DOWN;
	props->phys_state = up ? IB_PORT_PHYS_STATE_LINK_UP :
				 IB_PORT_PHYS_STATE_DISABLED;
	props->max_mtu = ohca_eth_mtu_to_ib(dev->cdev->max_mtu);
	props->active_mtu = ohca_eth_mtu_to_ib(READ_ONCE(dev->cdev->netdev->mtu));
	props->gid_tbl_len = dev->cdev->gid_tbl_len;
	props->pkey_tbl_len = 1;
	props->port_cap_flags = IB_PORT_CM_SUP;
	props->ip_gids = true;
	props->max_msg_sz = le32_to_cpu(dev->cdev->attr.max_msg_size);
	props->max_vl_num = 1;
	/* From the netdev's ethtool link settings (ohca_netdev.c). */
	err = ib_get_eth_speed(ibdev, port, &props->active_speed,
			       &props->active_width);
	return err;
}

static int ohca_get_port_immutable(struct ib_device *ibdev, u32 port,
				   struct ib_port_immutable *immutable)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibdev);

	if (port != 1)
		return -EINVAL;

	if (dev->cdev->ib_port) {
		/* ib_mad makes QP0 and QP1 for it; the GID table is the device's. */
		immutable->core_cap_flags = RDMA_CORE_PORT_IBA_IB;
		immutable->gid_tbl_len = OHCA_IB_GID_TBL_LEN;
		immutable->pkey_tbl_len = ohca_ib_pkey_tbl_len(dev);
		immutable->max_mad_size = IB_MGMT_MAD_SIZE;
		return 0;
	}
	/* RoCEv2 only: the device has no RoCEv1 (raw Ethernet) transport. */
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->gid_tbl_len = dev->cdev->gid_tbl_len;
	immutable->pkey_tbl_len = 1;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer ohca_get_link_layer(struct ib_device *ibdev,
						u32 port)
{
	return to_ohca_dev(ibdev)->cdev->ib_port ? IB_LINK_LAYER_INFINIBAND :
						   IB_LINK_LAYER_ETHERNET;
}

static int ohca_modify_port(struct ib_device *ibdev, u32 port, int mask,
			    struct ib_port_modify *props)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibdev);

	if (dev->cdev->ib_port)
		return ohca_ib_modify_port(dev, mask, props);
	/* What the core answers a RoCE port without the op. */
	if (!(props->set_port_cap_mask & ~IB_PORT_CM_SUP) ||
	    !(props->clr_port_cap_mask & ~IB_PORT_CM_SUP))
		return 0;
	return -EOPNOTSUPP;
}

static int ohca_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			   u16 *pkey)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibdev);

	if (dev->cdev->ib_port)
		return ohca_ib_query_pkey(dev, index, pkey);
	if (index)
		return -EINVAL;
	*pkey = IB_DEFAULT_PKEY_FULL;
	return 0;
}

static int ohca_add_gid(const struct ib_gid_attr *attr, void **context)
{
	struct ohca_ibdev *dev = to_ohca_dev(attr->device);
	struct ohca_add_gid_in in = {};
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_ADD_GID,
		.in = &in,
		.in_len = sizeof(in),
	};
	u16 vlan_id;
	int err;

	if (attr->gid_type != IB_GID_TYPE_ROCE_UDP_ENCAP)
		return -EINVAL;

	err = rdma_read_gid_l2_fields(attr, &vlan_id, in.mac);
	if (err)
		return err;

	memcpy(in.gid, attr->gid.raw, sizeof(in.gid));
	in.index = cpu_to_le16(attr->index);
	in.port = attr->port_num;
	in.type = ipv6_addr_v4mapped((const struct in6_addr *)attr->gid.raw) ?
		  OHCA_GID_TYPE_ROCE_V2_IPV4 : OHCA_GID_TYPE_ROCE_V2_IPV6;
	in.vlan_id = cpu_to_le16(vlan_id < VLAN_N_VID ? vlan_id : 0xffff);

	return ohca_cmd_exec(dev->cdev, &args);
}

static int ohca_del_gid(const struct ib_gid_attr *attr, void **context)
{
	struct ohca_ibdev *dev = to_ohca_dev(attr->device);
	struct ohca_del_gid_in in = {
		.index = cpu_to_le16(attr->index),
		.port = attr->port_num,
	};
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_DEL_GID,
		.in = &in,
		.in_len = sizeof(in),
	};

	return ohca_cmd_exec(dev->cdev, &args);
}

static int ohca_alloc_uar(struct ohca_ibdev *dev, u32 *index)
{
	struct ohca_alloc_uar_out out;
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_ALLOC_UAR,
		.out = &out,
		.out_len = sizeof(out),
	};
	int err;

	err = ohca_cmd_exec(dev->cdev, &args);
	if (err)
		return err;
	*index = le32_to_cpu(out.uar_index);
	if (!*index || *index >= dev->cdev->db_bar_len >> OHCA_DB_PAGE_SHIFT) {
		dev_err(&dev->cdev->pdev->dev, "device returned bad UAR index %u\n",
			*index);
		return -EIO;
	}
	return 0;
}

static void ohca_dealloc_uar(struct ohca_ibdev *dev, u32 index)
{
	struct ohca_dealloc_uar_in in = { .uar_index = cpu_to_le32(index) };
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_DEALLOC_UAR,
		.in = &in,
		.in_len = sizeof(in),
	};

	ohca_cmd_exec(dev->cdev, &args);
}

static int ohca_alloc_ucontext(struct ib_ucontext *ibuctx,
			       struct ib_udata *udata)
{
	struct ohca_ucontext *uctx = to_ohca_uctx(ibuctx);
	struct ohca_ibdev *dev = to_ohca_dev(ibuctx->device);
	struct ohca_ibv_alloc_ucontext_resp resp = {};
	struct ohca_ibv_alloc_ucontext req = {};
	struct ohca_user_mmap_entry *entry;
	int err;

	/* An empty request is an all-zero one; no comp_mask bit exists yet. */
	if (udata->inlen) {
		err = ib_copy_from_udata(&req, udata,
					 min(sizeof(req), udata->inlen));
		if (err)
			return err;
		if (req.comp_mask || req.reserved ||
		    !ohca_udata_tail_clear(udata, sizeof(req)))
			return -EINVAL;
	}
	if (udata->outlen < offsetofend(typeof(resp), max_inline))
		return -EINVAL;

	mutex_init(&uctx->db_lock);
	INIT_LIST_HEAD(&uctx->db_pages);
	uctx->db_npages = 0;
	/* The last doorbell pages are the administrator's (ohca_quota.c). */
	err = ohca_quota_get(dev, OHCA_QUOTA_UCTX, true);
	if (err)
		return err;
	err = ohca_alloc_uar(dev, &uctx->uar_index);
	if (err)
		goto err_quota;

	entry = kzalloc(sizeof(*entry), GFP_KERNEL);
	if (!entry) {
		err = -ENOMEM;
		goto err_dealloc_uar;
	}
	entry->address = dev->cdev->db_bar_addr +
			 ((u64)uctx->uar_index << OHCA_DB_PAGE_SHIFT);
	err = rdma_user_mmap_entry_insert(ibuctx, &entry->rdma_entry,
					  PAGE_SIZE);
	if (err) {
		kfree(entry);
		goto err_dealloc_uar;
	}
	uctx->db_entry = &entry->rdma_entry;

	resp.db_mmap_key = rdma_user_mmap_get_offset(uctx->db_entry);
	resp.db_page_size = OHCA_DB_PAGE_SIZE;
	resp.max_inline = le32_to_cpu(dev->cdev->attr.max_inline_data);
	/* A provider from before device_caps gives a shorter buffer. */
	if (udata->outlen >= offsetofend(typeof(resp), device_caps)) {
		resp.comp_mask |= OHCA_UCTX_RESP_DEVICE_CAPS;
		resp.device_caps = le32_to_cpu(dev->cdev->attr.dev_caps);
	}
	if (ohca_db_record_ok(dev))
		resp.comp_mask |= OHCA_UCTX_RESP_DB_RECORD;
	if (ohca_srq_db_record_ok(dev))
		resp.comp_mask |= OHCA_UCTX_RESP_SRQ_DB_RECORD;
	err = ib_copy_to_udata(udata, &resp, min(sizeof(resp), udata->outlen));
	if (err)
		goto err_remove_entry;
	return 0;

err_remove_entry:
	/* mmap_free() frees the entry once the last reference is gone. */
	rdma_user_mmap_entry_remove(uctx->db_entry);
err_dealloc_uar:
	ohca_dealloc_uar(dev, uctx->uar_index);
err_quota:
	ohca_quota_put(dev, OHCA_QUOTA_UCTX);
	mutex_destroy(&uctx->db_lock);
	return err;
}

static void ohca_dealloc_ucontext(struct ib_ucontext *ibuctx)
{
	struct ohca_ucontext *uctx = to_ohca_uctx(ibuctx);

	rdma_user_mmap_entry_remove(uctx->db_entry);
	ohca_dealloc_uar(to_ohca_dev(ibuctx->device), uctx->uar_index);
	ohca_quota_put(to_ohca_dev(ibuctx->device), OHCA_QUOTA_UCTX);
	/*
	 * Every CQ and QP is gone and with them their records' pages, but
	 * for those of objects the device may still write (a failed destroy,
	 * ohca_destroy_object()): they stay pinned, as those rings do.
	 */
	mutex_destroy(&uctx->db_lock);
}

/*
 * Device removal with the context still open: the core has already zapped
 * the doorbell mappings and calls dealloc_ucontext() next, so there is
 * nothing left to stop here. Having the op lets removal proceed without
 * waiting for the process to close the device.
 */
static void ohca_disassociate_ucontext(struct ib_ucontext *ibuctx)
{
}

/*
 * A context maps one system page of BAR2 (its doorbell page). Were a
 * system page larger than a doorbell page, that mapping would reach the
 * kernel's page 0 and other contexts' doorbells.
 */
static_assert(PAGE_SIZE == OHCA_DB_PAGE_SIZE,
	      "a user doorbell mapping must cover exactly one doorbell page");

static int ohca_mmap(struct ib_ucontext *ibuctx, struct vm_area_struct *vma)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibuctx->device);
	struct rdma_user_mmap_entry *rdma_entry;
	struct ohca_user_mmap_entry *entry;
	int err;

	rdma_entry = rdma_user_mmap_entry_get(ibuctx, vma);
	if (!rdma_entry) {
		ibdev_dbg(&dev->ibdev, "mmap: no entry at page offset %#lx\n",
			  vma->vm_pgoff);
		return -EINVAL;
	}
	entry = to_ohca_mmap_entry(rdma_entry);

	if (vma->vm_flags & VM_EXEC) {
		err = -EPERM;
		goto out_put;
	}
	/* The core matched the VMA's size to the entry's. */
	err = rdma_user_mmap_io(ibuctx, vma, PFN_DOWN(entry->address),
				rdma_entry->npages * PAGE_SIZE,
				pgprot_noncached(vma->vm_page_prot),
				rdma_entry);
out_put:
	rdma_user_mmap_entry_put(rdma_entry);
	return err;
}

static void ohca_mmap_free(struct rdma_user_mmap_entry *rdma_entry)
{
	struct ohca_user_mmap_entry *entry = to_ohca_mmap_entry(rdma_entry);

	if (entry->dm_handle)
		ohca_dm_release(to_ohca_dev(rdma_entry->ucontext->device),
				entry->dm_handle);
	kfree(entry);
}

/**
 * ohca_port_update() - tell the RDMA core about a port state change
 * @dev: the RDMA device
 *
 * When the port state (wire link, netdev carrier and admin state, fatal)
 * changed since the core was last told: from the EQ 0 interrupt,
 * ndo_open/ndo_stop (through ohca_core's port_change callback) and
 * registration. Takes port_lock (IRQ-safe).
 */
void ohca_port_update(struct ohca_ibdev *dev)
{
	struct ib_event event = {
		.device = &dev->ibdev,
		.element.port_num = 1,
	};
	unsigned long flags;
	bool up;

	if (!test_bit(OHCA_IB_REGISTERED, &dev->flags))
		return;
	spin_lock_irqsave(&dev->port_lock, flags);
	if (dev->cdev->ib_port) {
		ohca_ib_port_events(dev);
		spin_unlock_irqrestore(&dev->port_lock, flags);
		return;
	}
	up = ohca_port_active(dev);
	if (dev->port_active != up) {
		dev->port_active = up;
		event.event = up ? IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR;
		ib_dispatch_event(&event);
	}
	spin_unlock_irqrestore(&dev->port_lock, flags);
}

#ifdef OHCA_REG_MR_DMAH
/*
 * 7.x passes reg_user_mr a DMA handle (TPH steering hints). A handle comes
 * from ib_device_ops.alloc_dmah, which ohca does not offer, so any handle
 * here is refused rather than ignored.
 */
static struct ib_mr *ohca_reg_user_mr_dmah(struct ib_pd *ibpd, u64 start,
					   u64 length, u64 iova, int access,
					   struct ib_dmah *dmah,
					   struct ib_udata *udata)
{
	if (dmah)
		return ERR_PTR(-EOPNOTSUPP);
	return ohca_quota_reg_user_mr(ibpd, start, length, iova, access, udata);
}
#endif

#ifdef OHCA_RESIZE_USER_CQ
/* 7.x: resize_cq became resize_user_cq (user CQs only, entries unsigned). */
static int ohca_resize_user_cq(struct ib_cq *ibcq, unsigned int cqe,
			       struct ib_udata *udata)
{
	if (cqe > INT_MAX)
		return -EINVAL;
	return ohca_resize_cq(ibcq, cqe, udata);
}
#endif

const struct ib_device_ops ohca_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = OHCA_UVERBS_ABI_VERSION,

	.add_gid = ohca_add_gid,
	.alloc_dm = ohca_alloc_dm,
	.alloc_mr = ohca_quota_alloc_mr,
	.alloc_mw = ohca_alloc_mw,
	.alloc_xrcd = ohca_alloc_xrcd,
	.alloc_pd = ohca_quota_alloc_pd,
	.alloc_ucontext = ohca_alloc_ucontext,
	.attach_mcast = ohca_attach_mcast,
	.create_ah = ohca_create_ah,
	.create_cq = ohca_quota_create_cq,
	.create_flow = ohca_create_flow,
	.create_qp = ohca_quota_create_qp,
	.create_srq = ohca_quota_create_srq,
	.create_user_ah = ohca_create_ah,
	.dealloc_dm = ohca_dealloc_dm,
	.dealloc_mw = ohca_dealloc_mw,
	.dealloc_xrcd = ohca_dealloc_xrcd,
	.dealloc_pd = ohca_quota_dealloc_pd,
	.dealloc_ucontext = ohca_dealloc_ucontext,
	.del_gid = ohca_del_gid,
	.dereg_mr = ohca_quota_dereg_mr,
	.destroy_ah = ohca_destroy_ah,
	.destroy_cq = ohca_quota_destroy_cq,
	.destroy_flow = ohca_destroy_flow,
	.destroy_qp = ohca_quota_destroy_qp,
	.destroy_srq = ohca_quota_destroy_srq,
	.detach_mcast = ohca_detach_mcast,
	.disassociate_ucontext = ohca_disassociate_ucontext,
	.get_dev_fw_str = ohca_get_dev_fw_str,
	.get_dma_mr = ohca_quota_get_dma_mr,
	.get_link_layer = ohca_get_link_layer,
	.get_port_immutable = ohca_get_port_immutable,
	.map_mr_sg = ohca_map_mr_sg,
	.mmap = ohca_mmap,
	.mmap_free = ohca_mmap_free,
	.modify_cq = ohca_modify_cq,
	.modify_port = ohca_modify_port,
	.modify_qp = ohca_modify_qp,
	.modify_srq = ohca_modify_srq,
	.poll_cq = ohca_poll_cq,
	.post_recv = ohca_post_recv,
	.post_send = ohca_post_send,
	.post_srq_recv = ohca_post_srq_recv,
	.process_mad = ohca_process_mad,
	.query_device = ohca_query_device,
	.query_gid = ohca_query_gid,
	.query_ah = ohca_query_ah,
	.query_pkey = ohca_query_pkey,
	.query_port = ohca_query_port,
	.query_qp = ohca_query_qp,
	.query_srq = ohca_query_srq,
	.reg_dm_mr = ohca_quota_reg_dm_mr,
#ifdef OHCA_REG_MR_DMAH
	.reg_user_mr = ohca_reg_user_mr_dmah,
#else
	.reg_user_mr = ohca_quota_reg_user_mr,
#endif
	.advise_mr = ohca_advise_mr,
	.req_notify_cq = ohca_req_notify_cq,
	.rereg_user_mr = ohca_rereg_user_mr,
#ifdef OHCA_RESIZE_USER_CQ
	.resize_user_cq = ohca_resize_user_cq,
#else
	.resize_cq = ohca_resize_cq,
#endif

	INIT_RDMA_OBJ_SIZE(ib_ah, ohca_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, ohca_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, ohca_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, ohca_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, ohca_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, ohca_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_xrcd, ohca_xrcd, ibxrcd),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, ohca_ucontext, ibucontext),
};
