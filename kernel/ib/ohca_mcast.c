// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca: multicast. A UD QP joins or leaves a group with ATTACH_MCAST /
 * DETACH_MCAST; the device then hands every UD SEND to the group's GID to
 * the QP. The Ethernet port receives all multicast frames (no filter list),
 * so the RDMA core's IGMP/MLD joins on the net_device are all the network
 * side needs. The LID is meaningless on RoCE and ignored.
 */
#include <rdma/ib_verbs.h>

#include "ohca_ib.h"

static int ohca_mcast_cmd(struct ib_qp *ibqp, union ib_gid *gid, u16 opcode)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibqp->device);
	struct ohca_mcast_in in = {};
	struct ohca_cmd_args args = {
		.opcode = opcode,
		.in = &in,
		.in_len = sizeof(in),
	};

	if (!dev->cdev->attr.max_mcast_grp)
		return -EOPNOTSUPP;
	if (ibqp->qp_type != IB_QPT_UD)
		return -EINVAL;
	in.qpn = cpu_to_le32(to_ohca_qp(ibqp)->qpn);
	memcpy(in.gid, gid->raw, sizeof(in.gid));
	return ohca_cmd_exec(dev->cdev, &args);
}

/**
 * ohca_attach_mcast() - ib_device_ops.attach_mcast
 * @ibqp: a UD QP
 * @gid: the multicast group
 * @lid: unused (RoCE)
 *
 * Return: 0, -EOPNOTSUPP without multicast, -EINVAL for another QP type,
 * or the command's errno.
 */
int ohca_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return ohca_mcast_cmd(ibqp, gid, OHCA_CMD_ATTACH_MCAST);
}

/**
 * ohca_detach_mcast() - ib_device_ops.detach_mcast
 * @ibqp: a UD QP
 * @gid: the multicast group
 * @lid: unused (RoCE)
 *
 * Return: as ohca_attach_mcast().
 */
int ohca_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid)
{
	return ohca_mcast_cmd(ibqp, gid, OHCA_CMD_DETACH_MCAST);
}
