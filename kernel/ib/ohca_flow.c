// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca: raw Ethernet QPs' flow steering (OHCA_DEV_CAP_RAW_ETH). The core's
 * ib_flow_attr and its specs become one masked match, struct ohca_flow_spec,
 * in a CREATE_FLOW command; the device keeps the rules (at most max_flow),
 * matches frames against them and answers NO_RESOURCES at its limit.
 */
#include <linux/in.h>
#include <linux/slab.h>

#include <ohca/ohca_cmd.h>

#include "ohca_ib.h"

struct ohca_flow {
	struct ib_flow ibflow;
	u32 handle;
};

/**
 * ohca_has_raw() - whether the device has raw Ethernet QPs and flows
 * @dev: the RDMA device
 *
 * Return: true with OHCA_DEV_CAP_RAW_ETH on an Ethernet port. An
 * InfiniBand port has no Ethernet frames; its flow steering flag would
 * also make IPoIB ask for a QP create flag (NETIF_QP) it has no use for.
 */
bool ohca_has_raw(struct ohca_ibdev *dev)
{
	return !dev->cdev->ib_port &&
	       (le32_to_cpu(dev->cdev->attr.dev_caps) & OHCA_DEV_CAP_RAW_ETH);
}

/* Each spec layer at most once: a second one would have to be merged. */
#define OHCA_FLOW_SEEN_ETH	BIT(0)
#define OHCA_FLOW_SEEN_L3	BIT(1)
#define OHCA_FLOW_SEEN_L4	BIT(2)

static int ohca_flow_l3(struct ohca_create_flow_in *in, u8 version)
{
	in->value.ip_version = version;
	in->mask.ip_version = 0xff;
	return 0;
}

static int ohca_flow_eth(struct ohca_create_flow_in *in,
			 const struct ib_flow_spec_eth *s)
{
	memcpy(in->value.dmac, s->val.dst_mac, ETH_ALEN);
	memcpy(in->mask.dmac, s->mask.dst_mac, ETH_ALEN);
	memcpy(in->value.smac, s->val.src_mac, ETH_ALEN);
	memcpy(in->mask.smac, s->mask.src_mac, ETH_ALEN);
	in->value.ether_type = s->val.ether_type;
	in->mask.ether_type = s->mask.ether_type;
	in->value.vlan_tci = s->val.vlan_tag;
	in->mask.vlan_tci = s->mask.vlan_tag;
	return 0;
}

static int ohca_flow_ipv4(struct ohca_create_flow_in *in,
			  const struct ib_flow_spec_ipv4 *s)
{
	/* The device matches no fragmentation flags. */
	if (s->mask.flags)
		return -EOPNOTSUPP;
	memcpy(&in->value.src_ip[12], &s->val.src_ip, 4);
	memcpy(&in->mask.src_ip[12], &s->mask.src_ip, 4);
	memcpy(&in->value.dst_ip[12], &s->val.dst_ip, 4);
	memcpy(&in->mask.dst_ip[12], &s->mask.dst_ip, 4);
	in->value.ip_proto = s->val.proto;
	in->mask.ip_proto = s->mask.proto;
	in->value.tos = s->val.tos;
	in->mask.tos = s->mask.tos;
	in->value.ttl = s->val.ttl;
	in->mask.ttl = s->mask.ttl;
	return ohca_flow_l3(in, 4);
}

static int ohca_flow_ipv6(struct ohca_create_flow_in *in,
			  const struct ib_flow_spec_ipv6 *s)
{
	if (be32_to_cpu(s->mask.flow_label) > 0xfffff)
		return -EINVAL;
	memcpy(in->value.src_ip, s->val.src_ip, 16);
	memcpy(in->mask.src_ip, s->mask.src_ip, 16);
	memcpy(in->value.dst_ip, s->val.dst_ip, 16);
	memcpy(in->mask.dst_ip, s->mask.dst_ip, 16);
	in->value.flow_label = s->val.flow_label;
	in->mask.flow_label = s->mask.flow_label;
	in->value.ip_proto = s->val.next_hdr;
	in->mask.ip_proto = s->mask.next_hdr;
	in->value.tos = s->val.traffic_class;
	in->mask.tos = s->mask.traffic_class;
	in->value.ttl = s->val.hop_limit;
	in->mask.ttl = s->mask.hop_limit;
	return ohca_flow_l3(in, 6);
}

static int ohca_flow_l4(struct ohca_create_flow_in *in,
			const struct ib_flow_spec_tcp_udp *s, u8 proto)
{
	/* Ports only behind an IP header (the L3 spec comes first). */
	if (!in->mask.ip_version)
		return -EOPNOTSUPP;
	if ((in->value.ip_proto & in->mask.ip_proto) !=
	    (proto & in->mask.ip_proto))
		return -EINVAL;
	in->value.ip_proto = proto;
	in->mask.ip_proto = 0xff;
	in->value.src_port = s->val.src_port;
	in->mask.src_port = s->mask.src_port;
	in->value.dst_port = s->val.dst_port;
	in->mask.dst_port = s->mask.dst_port;
	return 0;
}

static int ohca_flow_spec(struct ohca_create_flow_in *in,
			  const union ib_flow_spec *s, u32 *seen)
{
	u32 layer;
	int err;

	switch (s->type) {
	case IB_FLOW_SPEC_ETH:
		layer = OHCA_FLOW_SEEN_ETH;
		break;
	case IB_FLOW_SPEC_IPV4:
	case IB_FLOW_SPEC_IPV6:
		layer = OHCA_FLOW_SEEN_L3;
		break;
	case IB_FLOW_SPEC_TCP:
	case IB_FLOW_SPEC_UDP:
		layer = OHCA_FLOW_SEEN_L4;
		break;
	default:
		return -EOPNOTSUPP;	/* tunnels, inner headers, actions */
	}
	if (*seen & layer)
		return -EINVAL;
	*seen |= layer;

	switch (s->type) {
	case IB_FLOW_SPEC_ETH:
		err = ohca_flow_eth(in, &s->eth);
		break;
	case IB_FLOW_SPEC_IPV4:
		err = ohca_flow_ipv4(in, &s->ipv4);
		break;
	case IB_FLOW_SPEC_IPV6:
		err = ohca_flow_ipv6(in, &s->ipv6);
		break;
	case IB_FLOW_SPEC_TCP:
		err = ohca_flow_l4(in, &s->tcp_udp, IPPROTO_TCP);
		break;
	default:
		err = ohca_flow_l4(in, &s->tcp_udp, IPPROTO_UDP);
		break;
	}
	return err;
}

/* The device wants no value bit outside its mask. */
static void ohca_flow_mask_values(struct ohca_create_flow_in *in)
{
	u8 *v = (u8 *)&in->value;
	const u8 *m = (const u8 *)&in->mask;
	size_t i;

	for (i = 0; i < sizeof(in->value); i++)
		v[i] &= m[i];
}

/**
 * ohca_create_flow() - ib_device_ops.create_flow: steer frames to a raw QP
 * @ibqp: the raw packet QP
 * @attr: the flow: its specs (each layer at most once)
 * @udata: the user's (no request data)
 *
 * Return: the flow, or an ERR_PTR with a negative errno.
 */
struct ib_flow *ohca_create_flow(struct ib_qp *ibqp,
				 struct ib_flow_attr *attr,
				 struct ib_udata *udata)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibqp->device);
	struct ohca_create_flow_in in = {};
	const union ib_flow_spec *s;
	struct ohca_flow *flow;
	u32 seen = 0, left;
	int err, i;

	if (!ohca_has_raw(dev) || ibqp->qp_type != IB_QPT_RAW_PACKET)
		return ERR_PTR(-EOPNOTSUPP);
	/* Steering by rule only: no default, sniffer or egress rules. */
	if (attr->type != IB_FLOW_ATTR_NORMAL || attr->flags)
		return ERR_PTR(-EOPNOTSUPP);
	if (attr->port != 1)
		return ERR_PTR(-EINVAL);
	if (udata && !ohca_udata_tail_clear(udata, 0))
		return ERR_PTR(-EINVAL);

	in.qpn = cpu_to_le32(to_ohca_qp(ibqp)->qpn);
	in.priority = cpu_to_le16(attr->priority);
	s = (const union ib_flow_spec *)(attr + 1);
	left = attr->size > sizeof(*attr) ? attr->size - sizeof(*attr) : 0;
	for (i = 0; i < attr->num_of_specs; i++) {
		if (left < sizeof(s->type) + sizeof(s->size) ||
		    s->size > left || !s->size)
			return ERR_PTR(-EINVAL);
		err = ohca_flow_spec(&in, s, &seen);
		if (err) {
			ibdev_dbg(&dev->ibdev, "flow spec %#x refused (%d)\n",
				  s->type, err);
			return ERR_PTR(err);
		}
		left -= s->size;
		s = (const void *)s + s->size;
	}
	ohca_flow_mask_values(&in);

	flow = kzalloc(sizeof(*flow), GFP_KERNEL);
	if (!flow)
		return ERR_PTR(-ENOMEM);
	err = ohca_cmd_create(dev->cdev, OHCA_CMD_CREATE_FLOW, &in, sizeof(in),
			      &flow->handle, NULL);
	if (err) {
		kfree(flow);
		return ERR_PTR(err);
	}
	return &flow->ibflow;
}

/**
 * ohca_destroy_flow() - ib_device_ops.destroy_flow
 * @ibflow: the flow
 *
 * Return: 0 (a failed DESTROY_FLOW is logged: ohca_destroy_failed()).
 */
int ohca_destroy_flow(struct ib_flow *ibflow)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibflow->device);
	struct ohca_flow *flow = container_of(ibflow, struct ohca_flow, ibflow);

	ohca_destroy_failed(dev, ohca_cmd_destroy(dev->cdev, OHCA_CMD_DESTROY_FLOW,
						  flow->handle),
			    "flow", flow->handle);
	kfree(flow);
	return 0;
}
