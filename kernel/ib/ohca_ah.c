// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca: address handles. The device keeps no address handle table: an AH
 * is the address vector every UD send WQE carries (struct ohca_ud_seg), so
 * create_ah and destroy_ah need no command. The RDMA core calls them in
 * atomic context (RDMA_CREATE_AH_SLEEPABLE unset) for MADs and rdma_cm,
 * where waiting for a command would be a bug.
 */
#include <rdma/ib_verbs.h>

#include <ohca/ohca-abi.h>

#include "ohca_ib.h"

/**
 * ohca_create_ah() - ib_device_ops.create_ah: a UD address handle
 * @ibah: the AH, allocated by the core
 * @init_attr: its attributes (a RoCE address: the GRH is required; an IB
 *             address on an InfiniBand port)
 * @udata: a user AH's response (the vector's MAC, VLAN, network type), or NULL
 *
 * No command: the address vector is built here (ohca_av_from_ah()) and
 * carried by every UD WQE; safe in atomic context.
 *
 * Return: 0, -EOPNOTSUPP without UD, -EINVAL for an address without a GRH
 * or unknown request bytes, or ib_copy_to_udata()'s error.
 */
int ohca_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init_attr,
		   struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibah->device);
	struct ohca_ah *ah = to_ohca_ah(ibah);
	struct ohca_ibv_create_ah_resp resp = {};
	int err;

	if (!(dev->cdev->caps & OHCA_CAP_UD))
		return -EOPNOTSUPP;
	/* Without a GRH there is no RoCE address: -EINVAL, not EOPNOTSUPP. */
	err = ohca_av_from_ah(dev, init_attr->ah_attr, &ah->av);
	if (err)
		return err;
	if (!udata)
		return 0;
	/* No request is defined: anything the provider sends must be zero. */
	if (!ohca_udata_tail_clear(udata, 0))
		return -EINVAL;

	/*
	 * The provider builds its WQEs from the same vector; on an
	 * InfiniBand port it has all it needs (no MAC, no VLAN): the
	 * response stays zero.
	 */
	if (dev->cdev->ib_port)
		return ib_copy_to_udata(udata, &resp,
					min(sizeof(resp), udata->outlen));
	memcpy(resp.dmac, ah->av.dmac, sizeof(resp.dmac));
	resp.vlan_id = le16_to_cpu(ah->av.vlan_id);
	resp.network_type = ah->av.network_type;
	return ib_copy_to_udata(udata, &resp, min(sizeof(resp), udata->outlen));
}

/**
 * ohca_destroy_ah() - ib_device_ops.destroy_ah
 * @ibah: the AH
 * @flags: RDMA_DESTROY_AH_* (unused)
 *
 * Nothing in the device; the core frees the object.
 *
 * Return: 0.
 */
int ohca_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	/* Nothing in the device; the core frees the object. */
	return 0;
}

/**
 * ohca_query_ah() - ib_device_ops.query_ah
 * @ibah: the AH
 * @ah_attr: filled from its address vector (a RoCE address on port 1, an
 *           IB one on an InfiniBand port)
 *
 * Return: 0.
 */
int ohca_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *ah_attr)
{
	const struct ohca_av *av = &to_ohca_ah(ibah)->av;
	union ib_gid dgid;

	memset(ah_attr, 0, sizeof(*ah_attr));
	if (to_ohca_dev(ibah->device)->cdev->ib_port) {
		ohca_av_ib_to_ah(av, ah_attr);
		return 0;
	}
	ah_attr->type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(ah_attr, 1);
	memcpy(dgid.raw, av->dgid, sizeof(dgid.raw));
	rdma_ah_set_grh(ah_attr, &dgid, le32_to_cpu(av->flow_label),
			av->sgid_index, av->hop_limit, av->traffic_class);
	memcpy(ah_attr->roce.dmac, av->dmac, ETH_ALEN);
	return 0;
}
