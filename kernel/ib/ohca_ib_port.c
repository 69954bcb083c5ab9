// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca: the InfiniBand port (QUERY_PORT's link_layer OHCA_LINK_IB, ABI
 * 1.5). The device holds the port as its subnet management agent sees
 * it, and the subnet manager changes it with SMPs the device answers:
 * the verbs read it back with QUERY_PORT (state, LIDs, MTUs, GID) and
 * with MAD_IFC Gets of the local SMA (P_Key table), as mlx4 reads its
 * firmware, so the driver keeps no copy that could go stale. The RDMA
 * core's own cache (ib_cache) is refreshed by the events that the
 * device's PORT_CHANGE events become here.
 */
#include <rdma/ib_mad.h>
#include <rdma/ib_smi.h>

#include "ohca_ib.h"

/* A MAD_IFC carries one IB MAD whole. */
static_assert(sizeof(struct ib_mad) == OHCA_MAD_SIZE,
	      "MAD_IFC carries one IB MAD");
static_assert(sizeof(struct ib_smp) == OHCA_MAD_SIZE,
	      "MAD_IFC carries one SMP");
static_assert(sizeof(struct ohca_av_ib) == sizeof(struct ohca_av),
	      "an IB address vector is read in place of a RoCE one");
/* SET_PORT_CAP's bits are the CapabilityMask's, as ib_core's. */
static_assert((u32)OHCA_PORT_CAP_IS_SM == (u32)IB_PORT_SM &&
	      (u32)OHCA_PORT_CAP_IS_CM == (u32)IB_PORT_CM_SUP &&
	      (u32)OHCA_PORT_CAP_IS_SNMP_TUNNEL == (u32)IB_PORT_SNMP_TUNNEL_SUP &&
	      (u32)OHCA_PORT_CAP_IS_DEVICE_MGMT == (u32)IB_PORT_DEVICE_MGMT_SUP &&
	      (u32)OHCA_PORT_CAP_IS_VENDOR_CLASS ==
	      (u32)IB_PORT_VENDOR_CLASS_SUP &&
	      (u32)OHCA_PORT_CAP_IS_BOOT_MGMT == (u32)IB_PORT_BOOT_MGMT_SUP,
	      "SET_PORT_CAP bits match IB_PORT_*");

/* PKeyTable blocks hold 32 P_Keys (IBTA 14.2.5.7). */
#define OHCA_PKEYS_PER_BLOCK	32
/*
 * The P_Key table the driver shows: the RDMA core reads every entry
 * with one MAD_IFC each at every cache refresh, so it is kept small.
 */
#define OHCA_IB_MAX_PKEYS	128

/**
 * ohca_ib_pkey_tbl_len() - the P_Key table length of an InfiniBand port
 * @dev: the RDMA device
 *
 * Return: the device's, between 1 and OHCA_IB_MAX_PKEYS.
 */
u32 ohca_ib_pkey_tbl_len(struct ohca_ibdev *dev)
{
	return clamp_t(u32, dev->cdev->pkey_tbl_len, 1, OHCA_IB_MAX_PKEYS);
}

/* QUERY_PORT of the IB port: the SMA's view of it. */
static int ohca_ib_query_port_cmd(struct ohca_ibdev *dev,
				  struct ohca_query_port_out *out)
{
	struct ohca_query_port_in in = { .port = 1 };
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_QUERY_PORT,
		.in = &in,
		.in_len = sizeof(in),
		.out = out,
		.out_len = sizeof(*out),
	};

	return ohca_cmd_exec(dev->cdev, &args);
}

static enum ib_mtu ohca_ib_mtu(u8 mtu)
{
	return clamp_t(u8, mtu, IB_MTU_256, IB_MTU_4096);
}

/* IBTA LinkWidthActive: one bit set; anything else reads as 1x. */
static u16 ohca_ib_width(u8 width)
{
	switch (width) {
	case IB_WIDTH_1X:
	case IB_WIDTH_2X:
	case IB_WIDTH_4X:
	case IB_WIDTH_8X:
	case IB_WIDTH_12X:
		return width;
	default:
		return IB_WIDTH_1X;
	}
}

/* IBTA LinkSpeedActive: one bit set; anything else reads as SDR. */
static u16 ohca_ib_speed(u8 speed)
{
	return speed && !(speed & (speed - 1)) ? speed : IB_SPEED_SDR;
}

/**
 * ohca_ib_query_port() - query_port of an InfiniBand port
 * @dev: the RDMA device
 * @props: zeroed by the core, filled from QUERY_PORT
 *
 * Return: 0 or the command's errno.
 */
int ohca_ib_query_port(struct ohca_ibdev *dev, struct ib_port_attr *props)
{
	struct ohca_query_port_out out;
	int err;

	err = ohca_ib_query_port_cmd(dev, &out);
	if (err)
		return err;

	props->state = out.state >= OHCA_PORT_DOWN &&
		       out.state <= OHCA_PORT_ACTIVE ? out.state : IB_PORT_DOWN;
	if (test_bit(OHCA_FLAG_FATAL, &dev->cdev->flags))
		props->state = IB_PORT_DOWN;
	props->phys_state = out.phys_state >= IB_PORT_PHYS_STATE_SLEEP &&
			    out.phys_state <= IB_PORT_PHYS_STATE_PHY_TEST ?
			    out.phys_state : IB_PORT_PHYS_STATE_POLLING;
	props->lid = le16_to_cpu(out.lid);
	props->sm_lid = le16_to_cpu(out.sm_lid);
	props->lmc = out.lmc & 7;
	props->sm_sl = out.sm_sl & 0xf;
	props->max_mtu = ohca_ib_mtu(out.max_ib_mtu);
	props->active_mtu = min(ohca_ib_mtu(out.active_mtu), props->max_mtu);
	props->gid_tbl_len = OHCA_IB_GID_TBL_LEN;
	props->pkey_tbl_len = ohca_ib_pkey_tbl_len(dev);
	/*
	 * The host's agents' bits (IsSM, IsCM: ohca_ib_modify_port()) are
	 * the device's too; added here for those it does not keep.
	 */
	props->port_cap_flags = le32_to_cpu(out.port_cap_flags) |
				READ_ONCE(dev->port_cap_set);
	props->max_msg_sz = le32_to_cpu(dev->cdev->attr.max_msg_size);
	props->max_vl_num = clamp_t(u8, out.max_vl_num, 1, 4);
	props->bad_pkey_cntr = min_t(u32, le32_to_cpu(out.pkey_violations),
				     U16_MAX);
	props->qkey_viol_cntr = min_t(u32, le32_to_cpu(out.qkey_violations),
				      U16_MAX);
	props->active_width = ohca_ib_width(out.active_width);
	props->active_speed = ohca_ib_speed(out.active_speed);
	props->subnet_timeout = out.subnet_timeout & 0x1f;
	props->init_type_reply = out.init_type_reply;
	props->subnet_prefix = get_unaligned_be64(out.subnet_prefix);
	return 0;
}

/**
 * ohca_ib_modify_port() - modify_port of an InfiniBand port
 * @dev: the RDMA device
 * @mask: IB_PORT_* modifications
 * @props: the capability bits to set and clear
 *
 * The host's agents announce themselves here (ib_cm sets IsCM, opening
 * umad's issm device sets IsSM). The bits the device's SMA shows go to
 * it with SET_PORT_CAP: it puts them in PortInfo, where the subnet
 * manager reads them, and tells the SM of a change with trap 144. The
 * others, and all of them on a device without the command, are only
 * added to query_port's. Process context (the core's modify_port).
 *
 * Return: 0, -EOPNOTSUPP for a port shutdown or an init type, or the
 * command's errno.
 */
int ohca_ib_modify_port(struct ohca_ibdev *dev, int mask,
			struct ib_port_modify *props)
{
	struct ohca_set_port_cap_in in = { .port = 1 };
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_SET_PORT_CAP,
		.in = &in,
		.in_len = sizeof(in),
	};
	u32 caps;
	int err;

	if (mask & ~(IB_PORT_RESET_QKEY_CNTR))
		return -EOPNOTSUPP;
	mutex_lock(&dev->port_cap_lock);
	caps = (dev->port_cap_set | props->set_port_cap_mask) &
	       ~props->clr_port_cap_mask;
	in.host_caps = cpu_to_le32(caps & OHCA_PORT_CAP_HOST_MASK);
	err = ohca_cmd_exec(dev->cdev, &args);
	if (err == -EOPNOTSUPP)
		err = 0;	/* a device of ABI 1.5: query_port adds them */
	if (!err)
		WRITE_ONCE(dev->port_cap_set, caps);
	mutex_unlock(&dev->port_cap_lock);
	return err;
}

/**
 * ohca_query_gid() - ib_device_ops.query_gid of an InfiniBand port
 * @ibdev: the device
 * @port: 1
 * @index: the GID index: 0, the port GUID's (no alias GUIDs)
 * @gid: the subnet prefix and the port GUID, from QUERY_PORT
 *
 * The RoCE port's table is the core's (add_gid/del_gid); this is not
 * called for it.
 *
 * Return: 0, -EINVAL for another port or index, or the command's errno.
 */
int ohca_query_gid(struct ib_device *ibdev, u32 port, int index,
		   union ib_gid *gid)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibdev);
	struct ohca_query_port_out out;
	int err;

	if (!dev->cdev->ib_port || port != 1 || index < 0 ||
	    index >= OHCA_IB_GID_TBL_LEN)
		return -EINVAL;
	err = ohca_ib_query_port_cmd(dev, &out);
	if (err)
		return err;
	memcpy(gid->raw, out.subnet_prefix, sizeof(out.subnet_prefix));
	memcpy(gid->raw + 8, out.port_guid, sizeof(out.port_guid));
	return 0;
}

/* One MAD_IFC: @in's mad filled by the caller, @out's result on success. */
static int ohca_mad_ifc(struct ohca_ibdev *dev, struct ohca_mad_ifc_in *in,
			struct ohca_mad_ifc_out *out)
{
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_MAD_IFC,
		.in = in,
		.in_len = sizeof(*in),
		.out = out,
		.out_len = sizeof(*out),
	};

	in->port = 1;
	return ohca_cmd_exec(dev->cdev, &args);
}

/* The MAD_IFC buffers, too large together for the stack. */
struct ohca_mad_ifc_buf {
	struct ohca_mad_ifc_in in;
	struct ohca_mad_ifc_out out;
};

/**
 * ohca_ib_query_pkey() - query_pkey of an InfiniBand port
 * @dev: the RDMA device
 * @index: the entry
 * @pkey: its P_Key
 *
 * A Get(PKeyTable) of the local SMA for the entry's block. Process
 * context (the core's cache update).
 *
 * Return: 0, -EINVAL for an index past the table, -ENOMEM, -EIO for an
 * answer that is not a good GetResp, or the command's errno.
 */
int ohca_ib_query_pkey(struct ohca_ibdev *dev, u16 index, u16 *pkey)
{
	struct ohca_mad_ifc_buf *buf;
	struct ib_smp *smp;
	__be16 *table;
	int err;

	if (index >= ohca_ib_pkey_tbl_len(dev))
		return -EINVAL;
	buf = kzalloc(sizeof(*buf), GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	smp = (struct ib_smp *)buf->in.mad;
	smp->base_version = IB_MGMT_BASE_VERSION;
	smp->mgmt_class = IB_MGMT_CLASS_SUBN_LID_ROUTED;
	smp->class_version = 1;
	smp->method = IB_MGMT_METHOD_GET;
	smp->attr_id = IB_SMP_ATTR_PKEY_TABLE;
	smp->attr_mod = cpu_to_be32(index / OHCA_PKEYS_PER_BLOCK);
	buf->in.flags = OHCA_MAD_IFC_IGNORE_MKEY;

	err = ohca_mad_ifc(dev, &buf->in, &buf->out);
	if (err)
		goto out;
	smp = (struct ib_smp *)buf->out.mad;
	if (le32_to_cpu(buf->out.result) != OHCA_MAD_IFC_REPLY ||
	    smp->method != IB_MGMT_METHOD_GET_RESP || smp->status) {
		dev_warn_ratelimited(&dev->cdev->pdev->dev,
				     "Get(PKeyTable) of the port's SMA failed: result %u, status %#x\n",
				     le32_to_cpu(buf->out.result),
				     be16_to_cpu(smp->status));
		err = -EIO;
		goto out;
	}
	table = (__be16 *)smp->data;
	*pkey = be16_to_cpu(table[index % OHCA_PKEYS_PER_BLOCK]);
out:
	kfree(buf);
	return err;
}

/* The classes the device has agents for: SMPs and the PMA. */
static bool ohca_mad_for_device(const struct ib_mad_hdr *hdr)
{
	return hdr->mgmt_class == IB_MGMT_CLASS_SUBN_LID_ROUTED ||
	       hdr->mgmt_class == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE ||
	       hdr->mgmt_class == IB_MGMT_CLASS_PERF_MGMT;
}

/**
 * ohca_process_mad() - ib_device_ops.process_mad: the device's agents
 * @ibdev: the device
 * @mad_flags: IB_MAD_IGNORE_*
 * @port: the port
 * @in_wc: the receive completion, or the one ib_mad makes up for a
 *         directed-route SMP of this host to its own port
 * @in_grh: the received GRH; NULL for those SMPs (locally generated)
 * @in: the MAD (IB_MGMT_MAD_SIZE bytes: the port's max_mad_size)
 * @out: the response, when the result has IB_MAD_RESULT_REPLY
 * @out_mad_size: its size (IB_MGMT_MAD_SIZE)
 * @out_mad_pkey_index: unused: the response goes out on the P_Key index
 *                      the request came on
 *
 * SMPs and performance MADs go to the device's SMA and PMA with one
 * MAD_IFC (a fixed 272 bytes each way, whatever the MAD says); every
 * other class, and anything on an Ethernet port, is left to the
 * kernel's agents. Process context: ib_mad's receive work, or posting
 * a directed-route SMP.
 *
 * Return: IB_MAD_RESULT_* flags.
 */
int ohca_process_mad(struct ib_device *ibdev, int mad_flags, u32 port,
		     const struct ib_wc *in_wc, const struct ib_grh *in_grh,
		     const struct ib_mad *in, struct ib_mad *out,
		     size_t *out_mad_size, u16 *out_mad_pkey_index)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibdev);
	struct ohca_mad_ifc_buf *buf;
	int ret;

	if (!dev->cdev->ib_port || port != 1 || !ohca_mad_for_device(&in->mad_hdr))
		return IB_MAD_RESULT_SUCCESS;
	if (*out_mad_size < sizeof(*out))
		return IB_MAD_RESULT_FAILURE;
	buf = kzalloc(sizeof(*buf), GFP_KERNEL);
	if (!buf)
		return IB_MAD_RESULT_FAILURE;

	memcpy(buf->in.mad, in, sizeof(buf->in.mad));
	if (!in_wc || !in_grh || (mad_flags & IB_MAD_IGNORE_MKEY)) {
		/* This host's own SMP: no M_Key check (IBTA 14.2.4). */
		buf->in.flags = OHCA_MAD_IFC_IGNORE_MKEY;
	} else {
		buf->in.flags = OHCA_MAD_IFC_NET;
		buf->in.slid = cpu_to_le16(in_wc->slid);
		buf->in.src_qp = cpu_to_le32(in_wc->src_qp);
		buf->in.sl = in_wc->sl;
		buf->in.dlid_path_bits = in_wc->dlid_path_bits;
		buf->in.pkey_index = cpu_to_le16(in_wc->pkey_index);
	}

	if (ohca_mad_ifc(dev, &buf->in, &buf->out)) {
		ret = IB_MAD_RESULT_FAILURE;
		goto out;
	}
	switch (le32_to_cpu(buf->out.result)) {
	case OHCA_MAD_IFC_REPLY:
		memcpy(out, buf->out.mad, sizeof(*out));
		*out_mad_size = sizeof(*out);
		ret = IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_REPLY;
		break;
	case OHCA_MAD_IFC_NOT_MINE:
		ret = IB_MAD_RESULT_SUCCESS;
		break;
	case OHCA_MAD_IFC_CONSUMED:
		ret = IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_CONSUMED;
		break;
	default:
		dev_warn_ratelimited(&dev->cdev->pdev->dev,
				     "MAD_IFC: unknown result %u, MAD dropped\n",
				     le32_to_cpu(buf->out.result));
		ret = IB_MAD_RESULT_FAILURE;
		break;
	}
out:
	kfree(buf);
	return ret;
}

/* What the device's PORT_CHANGE bits mean to the RDMA core's clients. */
static const struct {
	u32 change;
	enum ib_event_type event;
} ohca_port_change_events[] = {
	{ OHCA_PORT_CHG_LID, IB_EVENT_LID_CHANGE },
	{ OHCA_PORT_CHG_SM, IB_EVENT_SM_CHANGE },
	{ OHCA_PORT_CHG_PKEY, IB_EVENT_PKEY_CHANGE },
	{ OHCA_PORT_CHG_GUID, IB_EVENT_GID_CHANGE },
	{ OHCA_PORT_CHG_CLIENT_REREG, IB_EVENT_CLIENT_REREGISTER },
};

/**
 * ohca_ib_port_events() - pass an InfiniBand port's changes on
 * @dev: the RDMA device, registered, with port_lock held
 *
 * PORT_ACTIVE or PORT_ERR when the port entered or left ACTIVE, then one
 * event per change the device reported since the last call. The core's
 * cache updates itself on them (it reads the port, GID and P_Key tables
 * again through query_port, query_gid and query_pkey).
 */
void ohca_ib_port_events(struct ohca_ibdev *dev)
{
	struct ib_event event = {
		.device = &dev->ibdev,
		.element.port_num = 1,
	};
	bool up = ohca_port_active(dev);
	u32 changes = atomic_xchg(&dev->cdev->port_changes, 0);
	int i;

	lockdep_assert_held(&dev->port_lock);
	if (dev->port_active != up) {
		dev->port_active = up;
		event.event = up ? IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR;
		ib_dispatch_event(&event);
	}
	for (i = 0; i < ARRAY_SIZE(ohca_port_change_events); i++) {
		if (!(changes & ohca_port_change_events[i].change))
			continue;
		event.event = ohca_port_change_events[i].event;
		ib_dispatch_event(&event);
	}
}

/**
 * ohca_av_ib_from_ah() - the device's address vector on an InfiniBand port
 * @dev: the RDMA device
 * @ah: an IB address: DLID, SL, source path bits, a GRH with IB_AH_GRH
 * @av: the vector, filled as struct ohca_av_ib
 *
 * No MAC to resolve and nothing that sleeps (create_ah may be atomic).
 *
 * Return: 0, or -EINVAL for an address that is not an IB one.
 */
int ohca_av_ib_from_ah(struct ohca_ibdev *dev, const struct rdma_ah_attr *ah,
		       struct ohca_av *av)
{
	struct ohca_av_ib ib = {};
	const struct ib_global_route *grh;
	u32 dlid = rdma_ah_get_dlid(ah);
	u8 rate = rdma_ah_get_static_rate(ah);

	if (ah->type != RDMA_AH_ATTR_TYPE_IB || dlid > U16_MAX ||
	    rdma_ah_get_sl(ah) > 15) {
		ibdev_dbg(&dev->ibdev,
			  "address vector type %d DLID %#x SL %u is not an IB one\n",
			  ah->type, dlid, rdma_ah_get_sl(ah));
		return -EINVAL;
	}
	ib.dlid = cpu_to_le16(dlid);
	ib.sl = rdma_ah_get_sl(ah);
	ib.src_path_bits = rdma_ah_get_path_bits(ah) & 0x7f;
	/* The IBTA rate enum, 0 (the port's rate) for a value it lacks. */
	ib.static_rate = rate <= IB_RATE_600_GBPS ? rate : 0;
	if (rdma_ah_get_ah_flags(ah) & IB_AH_GRH) {
		grh = rdma_ah_read_grh(ah);
		ib.flags = OHCA_AV_IB_GRH;
		memcpy(ib.dgid, grh->dgid.raw, sizeof(ib.dgid));
		ib.flow_label = cpu_to_le32(grh->flow_label &
					    IB_GRH_FLOWLABEL_MASK);
		ib.hop_limit = grh->hop_limit;
		ib.traffic_class = grh->traffic_class;
		ib.sgid_index = grh->sgid_index;
	}
	memcpy(av, &ib, sizeof(*av));
	return 0;
}

/**
 * ohca_av_ib_to_ah() - an IB address from the device's address vector
 * @av: the vector (struct ohca_av_ib)
 * @ah: filled: port 1, DLID, SL, path bits, the GRH if the vector has one
 */
void ohca_av_ib_to_ah(const struct ohca_av *av, struct rdma_ah_attr *ah)
{
	struct ohca_av_ib ib;
	union ib_gid dgid;

	memcpy(&ib, av, sizeof(ib));
	ah->type = RDMA_AH_ATTR_TYPE_IB;
	rdma_ah_set_port_num(ah, 1);
	rdma_ah_set_dlid(ah, le16_to_cpu(ib.dlid));
	rdma_ah_set_sl(ah, ib.sl);
	rdma_ah_set_path_bits(ah, ib.src_path_bits);
	rdma_ah_set_static_rate(ah, ib.static_rate);
	if (ib.flags & OHCA_AV_IB_GRH) {
		memcpy(dgid.raw, ib.dgid, sizeof(dgid.raw));
		rdma_ah_set_grh(ah, &dgid, le32_to_cpu(ib.flow_label),
				ib.sgid_index, ib.hop_limit, ib.traffic_class);
	}
}
