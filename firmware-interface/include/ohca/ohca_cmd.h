/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * ohca firmware interface: the command set.
 *
 * The driver writes struct ohca_cmd entries into the command ring and rings
 * OHCA_REG_CMDQ_PI. The device executes entries in order, writes status and
 * syndrome back into the entry, advances OHCA_REG_CMDQ_CI and posts an
 * OHCA_EQE_CMD_DONE event carrying the token on EQ 0.
 *
 * Input: in_len bytes, inline in the entry when in_len <= OHCA_CMD_INLINE_MAX,
 * otherwise read by DMA from in_addr. Output: written by DMA to out_addr,
 * which must hold out_len >= the command's output size (0 if none).
 */
#ifndef OHCA_CMD_H
#define OHCA_CMD_H

#include "ohca_types.h"

#define OHCA_CMD_INLINE_MAX		32
#define OHCA_CMD_MAILBOX_MAX		4096	/* largest in_len/out_len */

struct ohca_cmd {
	ohca_le16 opcode;		/* enum ohca_cmd_opcode */
	ohca_le16 token;		/* echoed in the completion event */
	ohca_u8 status;			/* device writes enum ohca_cmd_status */
	ohca_u8 rsvd0;
	ohca_le16 in_len;
	ohca_le32 syndrome;		/* device writes: detail for status */
	ohca_le16 out_len;
	ohca_le16 rsvd1;
	ohca_le64 in_addr;		/* mailbox when in_len > INLINE_MAX */
	ohca_le64 out_addr;
	ohca_u8 inline_in[OHCA_CMD_INLINE_MAX];
};
OHCA_ASSERT_SIZE(struct ohca_cmd, 64);
OHCA_ASSERT_OFFSET(struct ohca_cmd, status, 4);
OHCA_ASSERT_OFFSET(struct ohca_cmd, syndrome, 8);
OHCA_ASSERT_OFFSET(struct ohca_cmd, in_addr, 16);
OHCA_ASSERT_OFFSET(struct ohca_cmd, out_addr, 24);
OHCA_ASSERT_OFFSET(struct ohca_cmd, inline_in, 32);

enum ohca_cmd_opcode {
	OHCA_CMD_NOP			= 0x00,
	OHCA_CMD_QUERY_DEVICE		= 0x01,
	OHCA_CMD_QUERY_PORT		= 0x02,
	OHCA_CMD_SET_PORT		= 0x03,
	OHCA_CMD_CREATE_ETH_RING	= 0x04,
	OHCA_CMD_DESTROY_ETH_RING	= 0x05,
	OHCA_CMD_ALLOC_UAR		= 0x06,
	OHCA_CMD_DEALLOC_UAR		= 0x07,
	OHCA_CMD_ADD_GID		= 0x08,
	OHCA_CMD_DEL_GID		= 0x09,
	OHCA_CMD_QUERY_STATS		= 0x0a,
	/* RDMA resources (ABI 1.1) */
	OHCA_CMD_CREATE_EQ		= 0x10,
	OHCA_CMD_DESTROY_EQ		= 0x11,
	OHCA_CMD_CREATE_PD		= 0x12,
	OHCA_CMD_DESTROY_PD		= 0x13,
	OHCA_CMD_CREATE_MR		= 0x14,
	OHCA_CMD_DESTROY_MR		= 0x15,
	OHCA_CMD_CREATE_CQ		= 0x16,
	OHCA_CMD_DESTROY_CQ		= 0x17,
	OHCA_CMD_CREATE_QP		= 0x18,
	OHCA_CMD_MODIFY_QP		= 0x19,
	OHCA_CMD_QUERY_QP		= 0x1a,
	OHCA_CMD_DESTROY_QP		= 0x1b,
	/* With OHCA_DEV_CAP_RESIZE_CQ / OHCA_DEV_CAP_REREG_MR (ABI 1.2) */
	OHCA_CMD_RESIZE_CQ		= 0x1c,
	OHCA_CMD_REREG_MR		= 0x1d,
	/* Shared receive queues (ABI 1.2) */
	OHCA_CMD_CREATE_SRQ		= 0x20,
	OHCA_CMD_MODIFY_SRQ		= 0x21,
	OHCA_CMD_QUERY_SRQ		= 0x22,
	OHCA_CMD_DESTROY_SRQ		= 0x23,
	OHCA_CMD_ALLOC_MW		= 0x24,	/* OHCA_DEV_CAP_MW */
	OHCA_CMD_DEALLOC_MW		= 0x25,

	OHCA_CMD_ATTACH_MCAST		= 0x28,
	OHCA_CMD_DETACH_MCAST		= 0x29,
	/* XRC domains (OHCA_DEV_CAP_XRC) */
	OHCA_CMD_ALLOC_XRCD		= 0x2a,
	OHCA_CMD_DEALLOC_XRCD		= 0x2b,
	/* OHCA_DEV_CAP_DM (ABI 1.3) */
	OHCA_CMD_ALLOC_DM		= 0x2c,
	OHCA_CMD_FREE_DM		= 0x2d,
	OHCA_CMD_REG_DM_MR		= 0x2e,
	/* OHCA_DEV_CAP_RAW_ETH: flow steering to raw Ethernet QPs */
	OHCA_CMD_CREATE_FLOW		= 0x30,
	OHCA_CMD_DESTROY_FLOW		= 0x31,
	/* OHCA_DEV_CAP_ODP: on-demand paging (programming manual section 19) */
	OHCA_CMD_ODP_MAP		= 0x32,
	OHCA_CMD_ODP_UNMAP		= 0x33,
	/* OHCA_DEV_CAP_CQ_MODERATION (ABI 1.4, programming manual section 20) */
	OHCA_CMD_MODIFY_CQ		= 0x34,
	/* An InfiniBand port (OHCA_LINK_IB, ABI 1.5): the management agents */
	OHCA_CMD_MAD_IFC		= 0x35,
	OHCA_CMD_CC_PARAM		= 0x36,	/* DCQCN, docs/congestion.md */
	OHCA_CMD_SET_PORT_CAP		= 0x37,	/* IB port: the host's capability bits */
	/* OHCA_DEV_CAP_PFC: pause and priority flow control (section 22) */
	OHCA_CMD_QUERY_PFC		= 0x38,
	OHCA_CMD_SET_PFC		= 0x39,
	/* Receive work queues and RSS (OHCA_DEV_CAP_RSS) */
	OHCA_CMD_CREATE_WQ		= 0x3a,
	OHCA_CMD_MODIFY_WQ		= 0x3b,
	OHCA_CMD_DESTROY_WQ		= 0x3c,
	OHCA_CMD_CREATE_RWQ_IND_TBL	= 0x3d,
	OHCA_CMD_DESTROY_RWQ_IND_TBL	= 0x3e,
	OHCA_CMD_CREATE_RSS_QP		= 0x3f,
	OHCA_CMD_MAX
};

enum ohca_cmd_status {
	OHCA_STATUS_OK			= 0x00,
	OHCA_STATUS_BAD_OPCODE		= 0x01,	/* syndrome: the opcode */
	OHCA_STATUS_BAD_LEN		= 0x02,	/* syndrome: required length */
	OHCA_STATUS_BAD_FIELD		= 0x03,	/* syndrome: byte offset in input */
	OHCA_STATUS_BAD_ADDR		= 0x04,	/* DMA failed; syndrome: 0 in, 1 out */
	OHCA_STATUS_NO_RESOURCES	= 0x05,
	OHCA_STATUS_BAD_HANDLE		= 0x06,	/* syndrome: the handle */
	OHCA_STATUS_BAD_STATE		= 0x07,	/* object busy or in wrong state */
	OHCA_STATUS_RESERVED_NONZERO	= 0x08,	/* syndrome: byte offset */
	OHCA_STATUS_INTERNAL		= 0x09,
};

/*
 * BAD_FIELD and RESERVED_NONZERO syndromes are byte offsets within the
 * command's input. With OHCA_SYNDROME_ENTRY set they are byte offsets within
 * the struct ohca_cmd entry itself instead: rsvd0 (5), rsvd1 (14), or
 * out_addr (24) when out_len is 0 but out_addr is not. (rev 1.0 addition)
 */
#define OHCA_SYNDROME_ENTRY		0x10000u

/* ---- QUERY_DEVICE: no input ------------------------------------------- */
struct ohca_query_device_out {
	ohca_le32 fw_version;		/* OHCA_FW_VERSION() */
	ohca_le32 hw_version;
	ohca_le64 node_guid;		/* GUID as a number: 0x0002c9... */
	ohca_le64 sys_image_guid;
	ohca_le64 max_mr_size;
	ohca_le64 page_size_cap;	/* bit n set: 2^n pages supported */
	ohca_le32 vendor_id;		/* IEEE OUI */
	ohca_le32 vendor_part_id;
	ohca_le32 max_qp;
	ohca_le32 max_qp_wr;
	ohca_le32 max_sge;
	ohca_le32 max_sge_rd;
	ohca_le32 max_cq;
	ohca_le32 max_cqe;
	ohca_le32 max_mr;
	ohca_le32 max_pd;
	ohca_le32 max_qp_rd_atom;
	ohca_le32 max_qp_init_rd_atom;
	ohca_le32 max_ah;
	ohca_le32 max_srq;
	ohca_le32 max_srq_wr;
	ohca_le32 max_inline_data;
	ohca_le32 max_uar;
	ohca_le32 max_eq;
	ohca_le32 max_msg_size;
	ohca_le32 gid_table_len;
	ohca_le32 pkey_table_len;
	ohca_le32 num_ports;
	ohca_le32 atomic_cap;		/* enum ohca_atomic_cap (ABI 1.2) */
	ohca_le32 max_srq_sge;		/* SGEs per SRQ WQE (ABI 1.2) */
	ohca_le32 dev_caps;		/* enum ohca_dev_caps (ABI 1.2) */
	ohca_le32 max_fast_reg_page_list_len; /* with OHCA_DEV_CAP_FAST_REG */
	ohca_le32 max_mw;		/* memory windows (OHCA_DEV_CAP_MW) */
	/* Multicast (ATTACH_MCAST): 0 on a device without it. */
	ohca_le32 max_mcast_grp;	/* groups with at least one QP */
	ohca_le32 max_mcast_qp_attach;	/* QPs in one group */
	ohca_le32 max_total_mcast_qp_attach; /* attachments in all groups */
	ohca_le32 max_xrcd;		/* XRC domains (OHCA_DEV_CAP_XRC) */
	ohca_le32 rsvd_xrc;
	/* Device memory (OHCA_DEV_CAP_DM, ABI 1.3): 0 without it. */
	ohca_le32 max_dm;		/* live ALLOC_DM allocations */
	ohca_le32 dm_chunk_size;	/* allocation granule, bytes */
	ohca_le64 max_dm_size;		/* bytes of device memory */
	/* Raw Ethernet (OHCA_DEV_CAP_RAW_ETH): 0 without it. */
	ohca_le32 max_flow;		/* live CREATE_FLOW rules, all QPs */
	ohca_le32 max_raw_frame;	/* longest raw frame beyond the MTU:
					 * Ethernet header and one VLAN tag */
	/* On-demand paging (OHCA_DEV_CAP_ODP): 0 without it. */
	ohca_le32 odp_caps;		/* enum ohca_odp_caps */
	ohca_le32 max_odp_faults;	/* page faults outstanding, device */
	ohca_le32 max_odp_chunks;	/* translation chunks of
					 * OHCA_ODP_CHUNK_PAGES entries, all
					 * ODP MRs together */
	ohca_le32 rsvd_odp;
	/*
	 * Completion event moderation (OHCA_DEV_CAP_CQ_MODERATION, ABI 1.4):
	 * the largest cq_count and cq_period (microseconds) MODIFY_CQ takes;
	 * 0 without it.
	 */
	ohca_le32 max_cq_mod_count;
	ohca_le32 max_cq_mod_period;
	/*
	 * Receive work queues and RSS (OHCA_DEV_CAP_RSS, ABI 1.6): 0 without
	 * it. rss_fields: the enum ohca_rss_fields bits CREATE_RSS_QP takes.
	 */
	ohca_le32 max_wq;		/* live CREATE_WQ queues */
	ohca_le32 max_wq_wr;		/* 2^log_size of one WQ */
	ohca_le32 max_rwq_ind_tbl;	/* live indirection tables */
	ohca_le32 max_rwq_ind_tbl_size;	/* entries of one table */
	ohca_le32 rss_fields;
	ohca_le32 rsvd_rss;
};
/*
 * QUERY_DEVICE grows compatibly (as QUERY_STATS): the device accepts
 * out_len >= OHCA_QUERY_DEVICE_OUT_MIN_SIZE (the output of ABI 1.3) and
 * writes min(out_len, sizeof) bytes. A driver passes a zeroed buffer of
 * the size it knows: fields a device does not write stay 0, which every
 * field added since reads as "not supported".
 */
#define OHCA_QUERY_DEVICE_OUT_MIN_SIZE	208
OHCA_ASSERT_SIZE(struct ohca_query_device_out, 240);
OHCA_ASSERT_OFFSET(struct ohca_query_device_out, max_wq, 216);
OHCA_ASSERT_OFFSET(struct ohca_query_device_out, rss_fields, 232);
OHCA_ASSERT_OFFSET(struct ohca_query_device_out, max_cq_mod_count,
		   OHCA_QUERY_DEVICE_OUT_MIN_SIZE);
OHCA_ASSERT_OFFSET(struct ohca_query_device_out, odp_caps, 192);
OHCA_ASSERT_OFFSET(struct ohca_query_device_out, max_flow, 184);
OHCA_ASSERT_OFFSET(struct ohca_query_device_out, max_xrcd, 160);
OHCA_ASSERT_OFFSET(struct ohca_query_device_out, max_dm, 168);
OHCA_ASSERT_OFFSET(struct ohca_query_device_out, max_dm_size, 176);
OHCA_ASSERT_OFFSET(struct ohca_query_device_out, atomic_cap, 128);
OHCA_ASSERT_OFFSET(struct ohca_query_device_out, dev_caps, 136);
OHCA_ASSERT_OFFSET(struct ohca_query_device_out, max_fast_reg_page_list_len,
		   140);
OHCA_ASSERT_OFFSET(struct ohca_query_device_out, max_mw, 144);
OHCA_ASSERT_OFFSET(struct ohca_query_device_out, max_mcast_grp, 148);

/* Optional features, in QUERY_DEVICE's dev_caps (ABI 1.2). */
enum ohca_dev_caps {
	/*
	 * Fast registration: CREATE_MR with OHCA_MR_F_FAST_REG, the
	 * OHCA_WR_REG_MR, OHCA_WR_LOCAL_INV and OHCA_WR_SEND_INV work
	 * requests, and remote invalidation (IETH) at the responder.
	 */
	OHCA_DEV_CAP_FAST_REG		= 1u << 0,
	/* RESIZE_CQ: a CQ moves to a new ring, unpolled CQEs included. */
	OHCA_DEV_CAP_RESIZE_CQ		= 1u << 1,
	/* REREG_MR: an MR's translation, PD or access change in place. */
	OHCA_DEV_CAP_REREG_MR		= 1u << 2,
	/*
	 * Memory windows of type 1 and type 2B: ALLOC_MW/DEALLOC_MW,
	 * OHCA_WR_BIND_MW, OHCA_ACCESS_MW_BIND, and the invalidation of a
	 * type 2 window's key by OHCA_WR_LOCAL_INV and OHCA_WR_SEND_INV.
	 */
	OHCA_DEV_CAP_MW			= 1u << 3,
	/*
	 * XRC (programming manual section 16): ALLOC_XRCD/DEALLOC_XRCD, XRC
	 * SRQs (CREATE_SRQ with OHCA_SRQT_XRC), OHCA_QPT_XRC_INI and
	 * OHCA_QPT_XRC_TGT QPs, the xrc_srqn of a send WQE.
	 */
	OHCA_DEV_CAP_XRC		= 1u << 4,
	/* Device memory: ALLOC_DM, FREE_DM, REG_DM_MR and BAR2's window. */
	OHCA_DEV_CAP_DM			= 1u << 5,
	/*
	 * Raw Ethernet (programming manual section 18): OHCA_QPT_RAW_ETH
	 * QPs, CREATE_FLOW/DESTROY_FLOW, max_flow in QUERY_DEVICE.
	 */
	OHCA_DEV_CAP_RAW_ETH		= 1u << 6,
	/*
	 * RDMA ATOMIC WRITE (IBTA 1.5): OHCA_WR_ATOMIC_WRITE on RC QPs, and
	 * its requests (BTH opcode 0x1d) executed by the responder.
	 */
	OHCA_DEV_CAP_ATOMIC_WRITE	= 1u << 7,
	/*
	 * On-demand paging (programming manual section 19): CREATE_MR with
	 * OHCA_MR_F_ODP (and OHCA_MR_F_IMPLICIT), the OHCA_EQE_PAGE_FAULT
	 * event, ODP_MAP and ODP_UNMAP; odp_caps says where a fault is
	 * resolved rather than failed.
	 */
	OHCA_DEV_CAP_ODP		= 1u << 8,
	/*
	 * Completion event moderation (programming manual section 20):
	 * MODIFY_CQ, max_cq_mod_count and max_cq_mod_period in QUERY_DEVICE.
	 */
	OHCA_DEV_CAP_CQ_MODERATION	= 1u << 9,
	/*
	 * EQ 0 never overflows (programming manual section 5): an event that
	 * finds it full waits in the device, merged with an identical waiting
	 * one of the same object, and commands wait for room for their
	 * CMD_DONE. EQ 0's size need not grow with max_qp; without this
	 * capability a full EQ 0 is fatal (OHCA_FATAL_EQ_OVERFLOW).
	 */
	OHCA_DEV_CAP_EQ0_HOLD		= 1u << 10,
	/*
	 * (ABI 1.5) The port may be an InfiniBand port: QUERY_PORT's
	 * link_layer says whether it is. On an InfiniBand port: MAD_IFC,
	 * OHCA_QPT_SMI, address vectors read as struct ohca_av_ib, the IB
	 * fields of UD receive completions (ohca_queue.h) and port states
	 * driven by the subnet manager (programming manual section 21).
	 */
	OHCA_DEV_CAP_IB_LINK		= 1u << 11,
	/*
	 * An Ethernet port honours and sends 802.3x PAUSE and 802.1Qbb
	 * priority flow control frames as SET_PFC configures (off at
	 * power-on); QUERY_PFC reads the setting and the pause counters.
	 */
	OHCA_DEV_CAP_PFC		= 1u << 12,
	/*
	 * (ABI 1.6) Receive work queues, RWQ indirection tables and RSS QPs
	 * (programming manual section 23): CREATE/MODIFY/DESTROY_WQ,
	 * CREATE/DESTROY_RWQ_IND_TBL, CREATE_RSS_QP, the OHCA_DB_WQ
	 * doorbell and the limits after max_cq_mod_period in QUERY_DEVICE.
	 */
	OHCA_DEV_CAP_RSS		= 1u << 13,
	/*
	 * Doorbell records (struct ohca_db_record, ohca_queue.h): CREATE_CQ
	 * and CREATE_QP take the input grown by db_record, the guest address
	 * of a record that holds the CQ's consumer index or the RQ's producer
	 * index instead of (or besides) the MMIO doorbell.
	 */
	OHCA_DEV_CAP_DB_RECORD		= 1u << 14,
	/*
	 * CREATE_SRQ takes the input grown by db_record: the address of a
	 * record that holds the SRQ's producer index instead of (or besides)
	 * the OHCA_DB_SRQ doorbell. A device with OHCA_DEV_CAP_DB_RECORD but
	 * not this bit refuses that input (BAD_LEN).
	 */
	OHCA_DEV_CAP_SRQ_DB_RECORD	= 1u << 15,
};

/*
 * Where an access to a page of an ODP MR without a translation raises a
 * page fault and waits for it (the verbs' odp_caps): the RC and XRC
 * requester's local buffers (SEND/WRITE source, READ and atomic result),
 * the responder's receive buffers (QP or SRQ) and RDMA WRITE, READ and
 * atomic targets; the UD requester's send buffers. Anywhere else (UC, raw
 * QPs, UD receive buffers) such an access fails as a DMA error would.
 */
enum ohca_odp_caps {
	OHCA_ODP_RC			= 1u << 0,
	OHCA_ODP_XRC			= 1u << 1,
	OHCA_ODP_UD_SEND		= 1u << 2,
	OHCA_ODP_IMPLICIT		= 1u << 3,	/* OHCA_MR_F_IMPLICIT */
};
OHCA_ASSERT_OFFSET(struct ohca_query_device_out, node_guid, 8);
OHCA_ASSERT_OFFSET(struct ohca_query_device_out, vendor_id, 40);
OHCA_ASSERT_OFFSET(struct ohca_query_device_out, num_ports, 124);

/*
 * What the device's atomics are atomic against (the IBTA atomic capability).
 * HCA: atomic against every atomic operation of this device (all QPs), but
 * not against the host CPUs or other devices writing the same memory. GLOB:
 * also against those. NONE: no atomics.
 */
enum ohca_atomic_cap {
	OHCA_ATOMIC_NONE		= 0,
	OHCA_ATOMIC_HCA			= 1,
	OHCA_ATOMIC_GLOB		= 2,
};

/* ---- QUERY_PORT -------------------------------------------------------- */
struct ohca_query_port_in {
	ohca_u8 port;			/* must be 1 */
	ohca_u8 rsvd[7];
};
OHCA_ASSERT_SIZE(struct ohca_query_port_in, 8);

/*
 * Port states. An Ethernet port is DOWN or ACTIVE with its link. An
 * InfiniBand port follows the IBTA logical states: DOWN without a link,
 * INIT once the link is up, then ARMED and ACTIVE as the subnet manager
 * sets them (PortInfo through MAD_IFC); the device never makes it ACTIVE
 * on its own.
 */
enum ohca_port_state {		/* values of struct ohca_query_port_out.state */
	OHCA_PORT_DOWN			= 1,
	OHCA_PORT_INIT			= 2,
	OHCA_PORT_ARMED			= 3,
	OHCA_PORT_ACTIVE		= 4,
};

enum ohca_link_layer {
	OHCA_LINK_ETH			= 0,	/* RoCEv2 on Ethernet */
	OHCA_LINK_IB			= 1,	/* InfiniBand (LRH, VCRC) */
};

/* IBTA PortPhysicalState values the device reports. */
enum ohca_phys_state {
	OHCA_PHYS_POLLING		= 2,	/* no link */
	OHCA_PHYS_DISABLED		= 3,
	OHCA_PHYS_LINK_UP		= 5,
};

/*
 * The device writes min(out_len, sizeof) bytes: a driver of ABI 1.4 asks
 * for 64 and reads link_layer as 0 (Ethernet). Bytes 48..127 are zero on
 * an Ethernet port.
 */
struct ohca_query_port_out {
	ohca_u8 state;			/* enum ohca_port_state */
	ohca_u8 link_up;		/* 1 when the netdev link is up */
	ohca_u8 mac[6];			/* Ethernet ports only */
	ohca_le32 max_mtu;		/* largest Ethernet MTU accepted by SET_PORT */
	ohca_le32 mtu;			/* current Ethernet MTU */
	ohca_le32 speed_mbps;
	ohca_le32 gid_table_len;
	ohca_le32 pkey_table_len;
	ohca_le32 max_msg_size;
	ohca_le64 rx_frames;
	ohca_le64 tx_frames;
	/* (ABI 1.5) InfiniBand ports: the port as its SMA holds it. */
	ohca_u8 link_layer;		/* enum ohca_link_layer */
	ohca_u8 phys_state;		/* enum ohca_phys_state */
	ohca_u8 lmc;			/* 0..7 */
	ohca_u8 sm_sl;
	ohca_le16 lid;			/* 0: none assigned yet */
	ohca_le16 sm_lid;
	ohca_u8 active_mtu;		/* IBTA enum: 1=256 .. 5=4096 */
	ohca_u8 max_ib_mtu;		/* IBTA enum */
	ohca_u8 max_vl_num;		/* IBTA VLCap: 1=VL0, 2=VL0-1, 3=VL0-3, 4=VL0-7 */
	ohca_u8 init_type_reply;
	ohca_le32 port_cap_flags;	/* PortInfo CapabilityMask */
	ohca_u8 port_guid[8];		/* network byte order */
	ohca_u8 subnet_prefix[8];	/* network byte order */
	ohca_le32 pkey_violations;	/* PortInfo P_KeyViolations */
	ohca_le32 qkey_violations;	/* PortInfo Q_KeyViolations */
	ohca_u8 active_width;		/* IBTA LinkWidthActive: 1=1x, 2=4x */
	ohca_u8 active_speed;		/* IBTA LinkSpeedActive: 1=SDR .. */
	ohca_u8 subnet_timeout;
	ohca_u8 rsvd1[5];
	ohca_le32 rsvd2[8];
};
/* The smallest out_len the device accepts: the output of ABI 1.4. */
#define OHCA_QUERY_PORT_OUT_MIN_SIZE	64
OHCA_ASSERT_SIZE(struct ohca_query_port_out, 128);
OHCA_ASSERT_OFFSET(struct ohca_query_port_out, mac, 2);
OHCA_ASSERT_OFFSET(struct ohca_query_port_out, rx_frames, 32);
OHCA_ASSERT_OFFSET(struct ohca_query_port_out, link_layer, 48);
OHCA_ASSERT_OFFSET(struct ohca_query_port_out, lid, 52);
OHCA_ASSERT_OFFSET(struct ohca_query_port_out, port_cap_flags, 60);
OHCA_ASSERT_OFFSET(struct ohca_query_port_out, port_guid, 64);
OHCA_ASSERT_OFFSET(struct ohca_query_port_out, pkey_violations, 80);
OHCA_ASSERT_OFFSET(struct ohca_query_port_out, active_width, 88);

/* ---- MAD_IFC (OHCA_DEV_CAP_IB_LINK, ABI 1.5) ---------------------------- */
/*
 * Hands one management datagram to the port's agents in the device: the
 * subnet management agent (SMP classes 0x01 and 0x81: NodeInfo,
 * NodeDescription, PortInfo, GUIDInfo, P_KeyTable, SLtoVLMappingTable,
 * VLArbitrationTable, SMInfo not included) and the performance management
 * agent (class 0x04: ClassPortInfo, PortCounters, PortCountersExtended).
 * The driver passes every MAD that ib_mad gives its process_mad, as
 * mlx4's firmware takes them: the kernel's SMI layer has already done the
 * directed-route hop processing. result tells whether 'mad' in the output
 * is a response to send back. Only on an InfiniBand port: elsewhere
 * BAD_STATE. A Set that changes the port (LID, SM LID, state, P_Keys)
 * posts OHCA_EQE_PORT_CHANGE with the change in param1.
 */
#define OHCA_MAD_SIZE			256

enum ohca_mad_ifc_flags {
	/* Sent by the local host itself: skip the M_Key check. */
	OHCA_MAD_IFC_IGNORE_MKEY	= 1u << 0,
	/* Received from the wire: the source fields below are valid. */
	OHCA_MAD_IFC_NET		= 1u << 1,
};

struct ohca_mad_ifc_in {
	ohca_u8 port;			/* must be 1 */
	ohca_u8 flags;			/* enum ohca_mad_ifc_flags */
	ohca_le16 slid;			/* with OHCA_MAD_IFC_NET */
	ohca_le32 src_qp;		/* with OHCA_MAD_IFC_NET: 0 or 1 */
	ohca_u8 sl;
	ohca_u8 dlid_path_bits;
	ohca_le16 pkey_index;
	ohca_le32 rsvd;
	ohca_u8 mad[OHCA_MAD_SIZE];
};
OHCA_ASSERT_SIZE(struct ohca_mad_ifc_in, 16 + OHCA_MAD_SIZE);
OHCA_ASSERT_OFFSET(struct ohca_mad_ifc_in, mad, 16);

enum ohca_mad_ifc_result {
	OHCA_MAD_IFC_CONSUMED		= 0,	/* no response (a trap repress, M_Key failure) */
	OHCA_MAD_IFC_REPLY		= 1,	/* send 'mad' back */
	OHCA_MAD_IFC_NOT_MINE		= 2,	/* the host's: a response, trap, SMInfo, other class */
};

struct ohca_mad_ifc_out {
	ohca_le32 result;		/* enum ohca_mad_ifc_result */
	ohca_le32 rsvd[3];
	ohca_u8 mad[OHCA_MAD_SIZE];
};
OHCA_ASSERT_SIZE(struct ohca_mad_ifc_out, 16 + OHCA_MAD_SIZE);

/* ---- SET_PORT_CAP (OHCA_DEV_CAP_IB_LINK) ------------------------------- */
/*
 * The PortInfo CapabilityMask bits that the host's agents own (IBTA
 * 14.2.5.6): the driver passes the whole set it has (ib_core's
 * modify_port: ib_cm's IsCM, umad's issm device's IsSM). The device's SMA
 * shows them in PortInfo and QUERY_PORT's port_cap_flags beside its own
 * (IsSMdisabled only while IsSM is clear) and, when the set changes on an
 * ACTIVE port with a subnet manager, sends it trap 144 (section 21,
 * "Traps"). Only on an InfiniBand port: elsewhere BAD_STATE.
 */
enum ohca_port_cap_host {
	OHCA_PORT_CAP_IS_SM		= 1u << 1,
	OHCA_PORT_CAP_IS_CM		= 1u << 16,
	OHCA_PORT_CAP_IS_SNMP_TUNNEL	= 1u << 17,
	OHCA_PORT_CAP_IS_DEVICE_MGMT	= 1u << 19,
	OHCA_PORT_CAP_IS_VENDOR_CLASS	= 1u << 20,
	OHCA_PORT_CAP_IS_BOOT_MGMT	= 1u << 23,
};
#define OHCA_PORT_CAP_HOST_MASK						\
	(OHCA_PORT_CAP_IS_SM | OHCA_PORT_CAP_IS_CM |			\
	 OHCA_PORT_CAP_IS_SNMP_TUNNEL | OHCA_PORT_CAP_IS_DEVICE_MGMT |	\
	 OHCA_PORT_CAP_IS_VENDOR_CLASS | OHCA_PORT_CAP_IS_BOOT_MGMT)

struct ohca_set_port_cap_in {
	ohca_u8 port;			/* must be 1 */
	ohca_u8 rsvd[3];
	ohca_le32 host_caps;		/* enum ohca_port_cap_host bits only */
};
OHCA_ASSERT_SIZE(struct ohca_set_port_cap_in, 8);
OHCA_ASSERT_OFFSET(struct ohca_set_port_cap_in, host_caps, 4);

/* What changed, in OHCA_EQE_PORT_CHANGE's param1 (ABI 1.5; 0 before). */
enum ohca_port_change {
	OHCA_PORT_CHG_STATE		= 1u << 0,
	OHCA_PORT_CHG_LID		= 1u << 1,	/* LID or LMC */
	OHCA_PORT_CHG_SM		= 1u << 2,	/* SM LID or SL */
	OHCA_PORT_CHG_PKEY		= 1u << 3,
	OHCA_PORT_CHG_GUID		= 1u << 4,
	OHCA_PORT_CHG_CLIENT_REREG	= 1u << 5,
};

/* ---- SET_PORT ---------------------------------------------------------- */
enum ohca_set_port_mask {
	OHCA_SET_PORT_MTU		= 1u << 0,
	OHCA_SET_PORT_RX_MODE		= 1u << 1,
};

enum ohca_rx_mode {
	OHCA_RX_MODE_PROMISC		= 1u << 0,	/* every frame */
	OHCA_RX_MODE_ALLMULTI		= 1u << 1,	/* every multicast */
};

#define OHCA_ETH_MIN_MTU		68
#define OHCA_ETH_MAX_MTU		9000

struct ohca_set_port_in {
	ohca_u8 port;			/* must be 1 */
	ohca_u8 rsvd0[3];
	ohca_le32 mask;			/* enum ohca_set_port_mask */
	ohca_le32 mtu;
	ohca_le32 rx_mode;		/* enum ohca_rx_mode */
};
OHCA_ASSERT_SIZE(struct ohca_set_port_in, 16);

/* ---- CREATE_ETH_RING / DESTROY_ETH_RING -------------------------------- */
enum ohca_eth_ring_type {
	OHCA_ETH_RING_TX		= 0,
	OHCA_ETH_RING_RX		= 1,
};

/*
 * One ring of each type may exist. The ring is physically contiguous in
 * guest memory (2^log_size struct ohca_eth_desc) and its indices start at 0.
 * Completions raise MSI-X vector OHCA_MSIX_ETH (see OHCA_REG_ETH_IRQ_MASK).
 */
struct ohca_create_eth_ring_in {
	ohca_u8 type;			/* enum ohca_eth_ring_type */
	ohca_u8 log_size;
	ohca_le16 rsvd0;
	ohca_le32 rsvd1;
	ohca_le64 base;			/* 16-byte aligned DMA address */
};
OHCA_ASSERT_SIZE(struct ohca_create_eth_ring_in, 16);

struct ohca_destroy_eth_ring_in {
	ohca_u8 type;
	ohca_u8 rsvd[7];
};
OHCA_ASSERT_SIZE(struct ohca_destroy_eth_ring_in, 8);

/* ---- ALLOC_UAR / DEALLOC_UAR ------------------------------------------- */
/* A UAR is one doorbell page in BAR OHCA_BAR_DB; page 0 is never handed out. */
struct ohca_alloc_uar_out {
	ohca_le32 uar_index;
	ohca_le32 rsvd;
};
OHCA_ASSERT_SIZE(struct ohca_alloc_uar_out, 8);

struct ohca_dealloc_uar_in {
	ohca_le32 uar_index;
	ohca_le32 rsvd;
};
OHCA_ASSERT_SIZE(struct ohca_dealloc_uar_in, 8);

/* ---- ADD_GID / DEL_GID ------------------------------------------------- */
enum ohca_gid_type {
	OHCA_GID_TYPE_ROCE_V2_IPV4	= 1,	/* ::ffff:a.b.c.d */
	OHCA_GID_TYPE_ROCE_V2_IPV6	= 2,
};

/* Programs the port's source GID table, from which frames take their
 * source IP and MAC. The inline input is exactly 32 bytes. */
struct ohca_add_gid_in {
	ohca_u8 gid[16];		/* network byte order */
	ohca_le16 index;
	ohca_u8 port;
	ohca_u8 type;			/* enum ohca_gid_type */
	ohca_u8 mac[6];
	ohca_le16 vlan_id;		/* 0xffff: no VLAN */
	ohca_le32 rsvd;
};
OHCA_ASSERT_SIZE(struct ohca_add_gid_in, 32);
OHCA_ASSERT_OFFSET(struct ohca_add_gid_in, index, 16);

struct ohca_del_gid_in {
	ohca_le16 index;
	ohca_u8 port;
	ohca_u8 rsvd[5];
};
OHCA_ASSERT_SIZE(struct ohca_del_gid_in, 8);

/* ---- QUERY_STATS: no input --------------------------------------------- */
struct ohca_query_stats_out {
	ohca_le64 eth_rx_frames;
	ohca_le64 eth_rx_bytes;
	ohca_le64 eth_rx_dropped_no_desc;	/* RX ring empty */
	ohca_le64 eth_rx_dropped_filter;	/* not for our MAC */
	ohca_le64 eth_rx_dropped_too_long;	/* larger than the buffer */
	ohca_le64 eth_tx_frames;
	ohca_le64 eth_tx_bytes;
	ohca_le64 eth_tx_errors;		/* bad descriptors */
	ohca_le64 roce_rx_frames;		/* UDP 4791, to the RDMA engine */
	ohca_le64 roce_rx_dropped;
	ohca_le64 cmd_completed;
	ohca_le64 cmd_failed;
	ohca_le64 reg_errors;
	ohca_le64 db_errors;			/* writes to unowned pages */
	ohca_le64 eth_rx_errors;		/* RX buffer not writable: the
						 * descriptor completes with
						 * DONE | ERROR (rev 1.0 addition) */
	ohca_le64 rsvd[1];
	/*
	 * RoCE transport counters (rev 1.1 addition). The device writes
	 * min(out_len, sizeof) bytes and accepts out_len >= the first 128
	 * (OHCA_QUERY_STATS_OUT_V1_SIZE), so a driver that knows only the
	 * first part keeps working. Totals over all QPs since reset.
	 */
	ohca_le64 roce_tx_pkts;			/* put on the wire or looped back */
	ohca_le64 roce_rx_pkts;			/* accepted for a QP */
	ohca_le64 rc_retrans_pkts;		/* packets sent again */
	ohca_le64 rc_retrans_events;		/* go-back-N restarts */
	ohca_le64 rc_local_ack_timeouts;	/* ACK timer expired */
	ohca_le64 rc_seq_naks_sent;		/* NAK PSN sequence error */
	ohca_le64 rc_seq_naks_rcvd;
	ohca_le64 rc_rnr_naks_sent;
	ohca_le64 rc_rnr_naks_rcvd;
	ohca_le64 rc_dup_requests;		/* responder: PSN already seen */
	ohca_le64 rc_out_of_seq_dropped;	/* PSN ahead, or unexpected
						 * READ response */
	ohca_le64 rc_stale_responses;		/* ACK/response outside the
						 * outstanding PSN window */
	ohca_le64 rc_retry_exceeded;		/* retry_cnt exhausted */
	ohca_le64 rc_rnr_retry_exceeded;	/* rnr_retry exhausted */
	ohca_le64 rc_error_naks_sent;		/* invalid request, remote
						 * access, remote operation */
	ohca_le64 rc_error_naks_rcvd;
	ohca_le64 roce_icrc_errors;		/* dropped: bad ICRC */
	ohca_le64 roce_bad_header;		/* dropped: bad Ethernet/IP/UDP/
						 * BTH header or length */
	ohca_le64 roce_bad_opcode;		/* dropped: unknown opcode */
	ohca_le64 roce_bad_qpn;			/* dropped: no such QP, QP not
						 * ready, wrong GID or P_Key */
	ohca_le64 ud_rx_no_wqe;			/* UD: dropped, no receive WQE
						 * posted (ABI 1.2) */
	ohca_le64 ud_rx_bad_qkey;		/* UD: dropped, Q_Key mismatch */
	/* Raw Ethernet QPs (OHCA_DEV_CAP_RAW_ETH) */
	ohca_le64 raw_tx_frames;		/* sent by raw QPs */
	ohca_le64 raw_rx_frames;		/* steered by a flow into a WQE */
	ohca_le64 raw_rx_dropped;		/* steered, but the QP had no
						 * WQE or was not ready */
	/* EQ 0 (OHCA_DEV_CAP_EQ0_HOLD; 0 without it) */
	ohca_le64 eq0_events_held;		/* found EQ 0 full and waited */
	ohca_le64 eq0_events_merged;		/* into an identical waiting
						 * event of the same object */
	ohca_le64 eq0_events_dropped;		/* not posted: a QP event a
						 * peer caused with EQ 0 half
						 * full, or waiting for an
						 * object that is gone */
	ohca_le64 rc_spurious_timeouts;		/* ACK timeouts undone: a
						 * response showed a packet
						 * sent before it arrived */
	/* DCQCN (OHCA_CMD_CC_PARAM, docs/congestion.md) */
	ohca_le64 np_ecn_marked_roce_packets;	/* received with ECN CE */
	ohca_le64 np_cnp_sent;
	ohca_le64 rp_cnp_handled;		/* CNPs that a QP reacted to */
	ohca_le64 rp_cnp_ignored;		/* no such QP, or RP disabled */
	/*
	 * Why received packets were dropped (each also counts in
	 * roce_rx_dropped, and some in roce_bad_qpn as well).
	 */
	ohca_le64 mcast_rx_pkts;		/* UD to a group with QPs here */
	ohca_le64 mcast_rx_no_group;		/* to a group no QP here is
						 * attached to (also in
						 * roce_bad_qpn) */
	ohca_le64 rx_backlog_dropped;		/* the receive backlog full
						 * (looped back), or the port
						 * down or stopped */
	/* InfiniBand port only (link-layer=ib; 0 on Ethernet) */
	ohca_le64 ib_rx_bad_dlid;		/* DLID not the port's LIDs, a
						 * group's, or permissive */
	ohca_le64 ib_rx_vl15_dropped;		/* VL15 not to QP0, QP0 not on
						 * VL15 */
	ohca_le64 ib_rx_pkey_dropped;		/* P_Key not the port's or not
						 * the QP's (a group member's:
						 * one per member) */
	ohca_le64 ib_rx_credit_overrun;		/* beyond the credit the port
						 * advertised */
	ohca_le64 ib_rx_port_not_ready;		/* data while the port is not
						 * ARMED or ACTIVE (also in
						 * roce_bad_qpn) */
	/*
	 * Why an RC requester waited (docs/wire.md, "What a requester waits
	 * for"). Tail-loss probes are not local ACK timeouts; the four
	 * rc_timeouts_* split rc_local_ack_timeouts (one timeout may count in
	 * several); the credit ones are waits for end-to-end credits, no
	 * timeouts.
	 */
	ohca_le64 rc_tail_probes;		/* the RTO's first expiry: the
						 * newest packet sent again */
	ohca_le64 rc_timeouts_full;		/* at the full local ACK
						 * timeout (use up retry_cnt) */
	ohca_le64 rc_timeouts_no_rtt;		/* before any round trip was
						 * measured (RTO: the initial
						 * 200 ms, backed off) */
	ohca_le64 rc_timeouts_after_probe;	/* the tail-loss probe went
						 * unanswered too */
	ohca_le64 rc_timeouts_read;		/* a READ or atomic oldest:
						 * request or response lost */
	ohca_le64 rc_credit_timeouts;		/* no credit update within the
						 * wait: an ACK asked for */
	ohca_le64 rc_credit_probes;		/* a message sent past the
						 * credit limit after waiting
						 * the local ACK timeout */
	/*
	 * Of rc_local_ack_timeouts in neither rc_timeouts_after_probe nor
	 * rc_timeouts_full: why the expiry sent no tail-loss probe, the
	 * first that applied (each such timeout counts in exactly one).
	 */
	ohca_le64 rc_timeouts_frto;		/* a timeout before it not yet
						 * decided (F-RTO): a series */
	ohca_le64 rc_timeouts_recovery;		/* a NAK's (or a READ's)
						 * go-back under way */
	ohca_le64 rc_timeouts_goback;		/* a go-back still resending
						 * (after a timeout, an RNR
						 * NAK) */
	ohca_le64 rc_timeouts_read_newest;	/* the newest packet a READ or
						 * atomic request (or a WQE
						 * failed) */
};
#define OHCA_QUERY_STATS_OUT_V1_SIZE	128
OHCA_ASSERT_SIZE(struct ohca_query_stats_out, 544);
OHCA_ASSERT_OFFSET(struct ohca_query_stats_out, eth_rx_errors, 112);
OHCA_ASSERT_OFFSET(struct ohca_query_stats_out, roce_tx_pkts,
		   OHCA_QUERY_STATS_OUT_V1_SIZE);
OHCA_ASSERT_OFFSET(struct ohca_query_stats_out, roce_bad_qpn, 280);
OHCA_ASSERT_OFFSET(struct ohca_query_stats_out, ud_rx_bad_qkey, 296);
OHCA_ASSERT_OFFSET(struct ohca_query_stats_out, raw_rx_dropped, 320);
OHCA_ASSERT_OFFSET(struct ohca_query_stats_out, eq0_events_held, 328);
OHCA_ASSERT_OFFSET(struct ohca_query_stats_out, eq0_events_dropped, 344);
OHCA_ASSERT_OFFSET(struct ohca_query_stats_out, rc_spurious_timeouts, 352);
OHCA_ASSERT_OFFSET(struct ohca_query_stats_out, np_ecn_marked_roce_packets, 360);
OHCA_ASSERT_OFFSET(struct ohca_query_stats_out, rp_cnp_ignored, 384);
OHCA_ASSERT_OFFSET(struct ohca_query_stats_out, mcast_rx_pkts, 392);
OHCA_ASSERT_OFFSET(struct ohca_query_stats_out, ib_rx_port_not_ready, 448);
OHCA_ASSERT_OFFSET(struct ohca_query_stats_out, rc_tail_probes, 456);
OHCA_ASSERT_OFFSET(struct ohca_query_stats_out, rc_credit_probes, 504);
OHCA_ASSERT_OFFSET(struct ohca_query_stats_out, rc_timeouts_frto, 512);
OHCA_ASSERT_OFFSET(struct ohca_query_stats_out, rc_timeouts_read_newest, 536);

/*
 * OHCA_CMD_CC_PARAM: reads, or writes and reads back, one DCQCN parameter
 * of the port (docs/congestion.md: meaning, unit, range and default of
 * each, under mlx5's cc_params names). A value outside the parameter's
 * range fails with BAD_FIELD (syndrome 8, the offset of 'value') and
 * changes nothing; an unknown 'param' fails with BAD_FIELD (syndrome 0).
 * Device reset restores the defaults. An InfiniBand port has no DCQCN:
 * BAD_STATE.
 */
enum ohca_cc_param {
	OHCA_CC_RP_ENABLE_MASK			= 0,	/* bit n: priority n */
	OHCA_CC_NP_ENABLE_MASK			= 1,	/* bit n: priority n */
	OHCA_CC_RP_CLAMP_TGT_RATE		= 2,
	OHCA_CC_RP_CLAMP_TGT_RATE_ATI		= 3,
	OHCA_CC_RP_TIME_RESET			= 4,	/* us */
	OHCA_CC_RP_BYTE_RESET			= 5,	/* bytes */
	OHCA_CC_RP_THRESHOLD			= 6,
	OHCA_CC_RP_AI_RATE			= 7,	/* Mb/s */
	OHCA_CC_RP_HAI_RATE			= 8,	/* Mb/s */
	OHCA_CC_RP_MIN_DEC_FAC			= 9,	/* percent */
	OHCA_CC_RP_MIN_RATE			= 10,	/* Mb/s */
	OHCA_CC_RP_RATE_TO_SET_ON_FIRST_CNP	= 11,	/* Mb/s, 0: none */
	OHCA_CC_RP_DCE_TCP_G			= 12,	/* 1/1024 */
	OHCA_CC_RP_DCE_TCP_RTT			= 13,	/* us */
	OHCA_CC_RP_RATE_REDUCE_MONITOR_PERIOD	= 14,	/* us */
	OHCA_CC_RP_INITIAL_ALPHA_VALUE		= 15,	/* 1/1024 */
	OHCA_CC_RP_GD				= 16,	/* shift */
	OHCA_CC_NP_MIN_TIME_BETWEEN_CNPS	= 17,	/* us */
	OHCA_CC_NP_CNP_DSCP			= 18,
	OHCA_CC_NP_CNP_PRIO_MODE		= 19,
	OHCA_CC_NP_CNP_PRIO			= 20,
	OHCA_CC_PARAM_MAX
};

enum ohca_cc_param_op {
	OHCA_CC_PARAM_GET			= 0,
	OHCA_CC_PARAM_SET			= 1,
};

struct ohca_cc_param_in {
	ohca_le32 param;		/* enum ohca_cc_param */
	ohca_le32 op;			/* enum ohca_cc_param_op */
	ohca_le32 value;		/* OHCA_CC_PARAM_SET */
	ohca_le32 rsvd;
};
OHCA_ASSERT_SIZE(struct ohca_cc_param_in, 16);
OHCA_ASSERT_OFFSET(struct ohca_cc_param_in, value, 8);

struct ohca_cc_param_out {
	ohca_le32 value;		/* the parameter's value now */
	ohca_le32 rsvd;
};
OHCA_ASSERT_SIZE(struct ohca_cc_param_out, 8);

/* ======================================================================
 * RDMA resources (ABI 1.1). docs/programming-manual.md §8 gives the rules.
 * ====================================================================== */

/*
 * A page list describes a buffer in guest memory (a queue ring or a memory
 * region) as 'npages' pages of 2^page_shift bytes (12..30), each address
 * aligned to its page size.
 *  levels 1: addr points at npages le64 page addresses (npages <= 512).
 *  levels 2: addr points at ceil(npages / 512) le64 addresses of 4 KiB
 *            pages, each holding up to 512 page addresses (npages <= 2^18).
 * The device copies the list when the command executes; later changes to
 * the list memory have no effect.
 */
#define OHCA_PBL_ENTRIES_PER_PAGE	512
#define OHCA_PBL_MAX_PAGES		(512 * 512)
#define OHCA_PAGE_SHIFT_MIN		12
#define OHCA_PAGE_SHIFT_MAX		30

struct ohca_pbl {
	ohca_le64 addr;
	ohca_le32 npages;
	ohca_u8 page_shift;
	ohca_u8 levels;			/* 1 or 2 */
	ohca_le16 rsvd;
};
OHCA_ASSERT_SIZE(struct ohca_pbl, 16);

/* ---- CREATE_EQ / DESTROY_EQ: completion event queues ------------------- */
/*
 * A completion EQ is physically contiguous (2^log_size struct ohca_eqe,
 * 16-byte aligned) and raises MSI-X vector 'msix_vector' (2..NUM_MSIX-1).
 * Its doorbell is OHCA_REG_EQ_DB(eqn), with the semantics of EQ0_DB.
 * (1.1 clarification) eqn is 1..max_eq-1 (max_eq counts EQ 0). A completion
 * EQ that would overrun its consumer stops posting events; the device and
 * EQ 0 keep running.
 */
struct ohca_create_eq_in {
	ohca_le64 base;
	ohca_u8 log_size;		/* OHCA_EQ_LOG_MIN..OHCA_EQ_LOG_MAX */
	ohca_u8 msix_vector;
	ohca_u8 rsvd[6];
};
OHCA_ASSERT_SIZE(struct ohca_create_eq_in, 16);

/* Output of every CREATE_* command: the new object's number or key. */
struct ohca_create_out {
	ohca_le32 handle;		/* eqn, pdn, cqn or qpn */
	ohca_le32 handle2;		/* CREATE_MR: rkey (handle is the lkey;
					 * the device returns rkey == lkey) */
};
OHCA_ASSERT_SIZE(struct ohca_create_out, 8);

/* Input of every DESTROY_* command and of QUERY_QP. */
struct ohca_handle_in {
	ohca_le32 handle;		/* eqn, pdn, lkey, cqn or qpn */
	ohca_le32 rsvd;
};
OHCA_ASSERT_SIZE(struct ohca_handle_in, 8);

/* ---- CREATE_PD / DESTROY_PD: no input; output ohca_create_out ---------- */

/* ---- CREATE_MR / DESTROY_MR -------------------------------------------- */
/* Access flags, for MRs and QPs (the IBTA verbs values). */
enum ohca_access {
	OHCA_ACCESS_LOCAL_WRITE		= 1u << 0,
	OHCA_ACCESS_REMOTE_WRITE	= 1u << 1,
	OHCA_ACCESS_REMOTE_READ		= 1u << 2,
	OHCA_ACCESS_REMOTE_ATOMIC	= 1u << 3,
	/* MRs only (OHCA_DEV_CAP_MW): memory windows may be bound to it. */
	OHCA_ACCESS_MW_BIND		= 1u << 4,
};

enum ohca_mr_flags {
	/* The MR spans all of the bus address space with iova == bus
	 * address and no page list (the kernel's DMA MR). Local access only. */
	OHCA_MR_F_PHYSICAL		= 1u << 0,
	/*
	 * A fast-registration MR (OHCA_DEV_CAP_FAST_REG): created free, with
	 * no translation and a page-list capacity of pbl.npages entries
	 * (1..max_fast_reg_page_list_len); access, iova, length, pbl.addr,
	 * pbl.page_shift and pbl.levels must be 0. OHCA_WR_REG_MR gives it a
	 * translation and makes it valid, OHCA_WR_LOCAL_INV or a received
	 * SEND with invalidate makes it free again.
	 */
	OHCA_MR_F_FAST_REG		= 1u << 1,
	/*
	 * On-demand paging (OHCA_DEV_CAP_ODP): the MR has no page list
	 * (pbl.addr, pbl.npages and pbl.levels must be 0; pbl.page_shift
	 * gives its page size) and every translation starts invalid. An
	 * access to a page without one raises OHCA_EQE_PAGE_FAULT; ODP_MAP
	 * installs translations, ODP_UNMAP removes them.
	 */
	OHCA_MR_F_ODP			= 1u << 2,
	/*
	 * With OHCA_MR_F_ODP (OHCA_ODP_IMPLICIT): the MR covers the whole
	 * 64-bit address space (iova and length must be 0).
	 */
	OHCA_MR_F_IMPLICIT		= 1u << 3,
};

/*
 * Keys: bits 31..8 index the device's MR table, bits 7..0 are a tag the
 * device changes every time the index is reused, so a stale key misses.
 * Address 'va' in the MR maps to page (va - (iova & ~(pgsz-1))) >> shift.
 * The key CREATE_MR returns is the MR's handle for DESTROY_MR for its whole
 * life. A fast-registration MR's current key takes the tag (the IBTA
 * "key" variant, owned by the consumer) that each OHCA_WR_REG_MR names;
 * only the current key of a valid MR grants access.
 */
#define OHCA_KEY_INDEX(key)		((key) >> 8)
#define OHCA_KEY_TAG(key)		((key) & 0xff)
#define OHCA_MAX_FAST_REG_PAGES		512	/* page list of one 4 KiB page */

struct ohca_create_mr_in {
	ohca_le32 pdn;
	ohca_le32 access;		/* enum ohca_access */
	ohca_le64 iova;
	ohca_le64 length;		/* 1..max_mr_size */
	ohca_le32 flags;		/* enum ohca_mr_flags */
	ohca_le32 rsvd;
	struct ohca_pbl pbl;		/* unused with OHCA_MR_F_PHYSICAL */
};
OHCA_ASSERT_SIZE(struct ohca_create_mr_in, 48);
OHCA_ASSERT_OFFSET(struct ohca_create_mr_in, pbl, 32);

/* ---- REREG_MR (OHCA_DEV_CAP_REREG_MR) ------------------------------------ */
/*
 * Changes an MR made by CREATE_MR without flags (not PHYSICAL, not
 * FAST_REG: those are BAD_STATE) in place: with OHCA_REREG_MR_TRANSLATION
 * its iova, length and page list (validated as CREATE_MR's; the new list is
 * charged to the page-list budget and the old one released), with
 * OHCA_REREG_MR_PD its PD (BAD_HANDLE if 'pdn' does not exist), with
 * OHCA_REREG_MR_ACCESS its access (as CREATE_MR's). Fields of the parts not
 * named must be 0; 'flags' must name at least one part. The MR keeps its
 * index and keys (the output repeats them, lkey then rkey, as CREATE_MR's);
 * every access checked after the command uses the new values, and on any
 * error the MR is unchanged.
 */
enum ohca_rereg_mr_flags {
	OHCA_REREG_MR_TRANSLATION	= 1u << 0,
	OHCA_REREG_MR_PD		= 1u << 1,
	OHCA_REREG_MR_ACCESS		= 1u << 2,
};

struct ohca_rereg_mr_in {
	ohca_le32 key;			/* the handle CREATE_MR returned */
	ohca_le32 flags;		/* enum ohca_rereg_mr_flags */
	ohca_le32 pdn;			/* OHCA_REREG_MR_PD */
	ohca_le32 access;		/* OHCA_REREG_MR_ACCESS */
	ohca_le64 iova;			/* OHCA_REREG_MR_TRANSLATION: */
	ohca_le64 length;		/*  1..max_mr_size */
	struct ohca_pbl pbl;
};
OHCA_ASSERT_SIZE(struct ohca_rereg_mr_in, 48);
OHCA_ASSERT_OFFSET(struct ohca_rereg_mr_in, iova, 16);
OHCA_ASSERT_OFFSET(struct ohca_rereg_mr_in, pbl, 32);
/* ---- ALLOC_MW / DEALLOC_MW (OHCA_DEV_CAP_MW) ----------------------------- */
/*
 * A memory window of PD 'pdn', type 1 or 2 (type 2B: a bound window is
 * used through the QP that bound it only). Windows share the key space
 * with MRs: output ohca_create_out, handle == handle2 == the window's first
 * key, which is also its handle for DEALLOC_MW (input ohca_handle_in).
 * A type 1 window starts valid and unbound (zero length), a type 2 window
 * free. OHCA_WR_BIND_MW binds it to an MR; each bind names the window's
 * next key (its tag, the IBTA "key" variant). DEALLOC_MW of a bound window
 * unbinds it first. At most max_mw windows exist; NO_RESOURCES beyond.
 */
enum ohca_mw_type {
	OHCA_MW_TYPE_1			= 1,
	OHCA_MW_TYPE_2			= 2,
};

struct ohca_alloc_mw_in {
	ohca_le32 pdn;
	ohca_u8 type;			/* enum ohca_mw_type */
	ohca_u8 rsvd[3];
};
OHCA_ASSERT_SIZE(struct ohca_alloc_mw_in, 8);

/* ---- ODP_MAP / ODP_UNMAP (OHCA_DEV_CAP_ODP) ------------------------------ */
/*
 * Translations of an ODP MR ('key': the handle CREATE_MR returned). 'va' is
 * an address in the MR aligned to the MR's page size; the range is
 * 'npages' MR pages from it and must lie inside the MR (BAD_FIELD).
 *
 * ODP_MAP: input struct ohca_odp_map_in followed by npages (1..
 * OHCA_ODP_MAP_MAX_PAGES) le64 entries, one per page in order: a bus
 * address aligned to the MR's page size ORed with OHCA_ODP_PTE_* bits. An
 * entry without OHCA_ODP_PTE_VALID leaves that page as it is. A page with
 * OHCA_ODP_PTE_WRITE may be written by the device, one without is read
 * only (a write to it faults again). Translations are stored in chunks
 * of OHCA_ODP_CHUNK_PAGES aligned MR pages: NO_RESOURCES when the
 * command needs more than the max_odp_chunks the device has (nothing is
 * installed then). Page faults of the MR that overlap the range are
 * resolved: the QPs waiting for them go on (and fault again if they still
 * miss a page).
 * With OHCA_ODP_MAP_FAIL instead (npages 1..2^32-1, no entries): the
 * faults of the MR overlapping the range cannot be resolved; the accesses
 * waiting for them fail (programming manual section 19).
 *
 * ODP_UNMAP: input struct ohca_odp_unmap_in, inline; npages may cover the
 * whole MR. When the command completes, the device no longer uses those
 * translations: nothing the device does after it reads or writes the
 * pages, and nothing it did before is still under way (every DMA the
 * device makes completes before its next command executes).
 */
#define OHCA_ODP_MAP_MAX_PAGES		256
#define OHCA_ODP_CHUNK_PAGES		512
#define OHCA_ODP_PTE_VALID		(1ull << 0)
#define OHCA_ODP_PTE_WRITE		(1ull << 1)

enum ohca_odp_map_flags {
	OHCA_ODP_MAP_FAIL		= 1u << 0,
};

struct ohca_odp_map_in {
	ohca_le32 key;
	ohca_le32 flags;		/* enum ohca_odp_map_flags */
	ohca_le64 va;
	ohca_le32 npages;
	ohca_le32 rsvd;
	/* ohca_le64 pte[npages] follows (not with OHCA_ODP_MAP_FAIL) */
};
OHCA_ASSERT_SIZE(struct ohca_odp_map_in, 24);
OHCA_ASSERT_OFFSET(struct ohca_odp_map_in, npages, 16);

struct ohca_odp_unmap_in {
	ohca_le32 key;
	ohca_le32 rsvd;
	ohca_le64 va;
	ohca_le64 npages;
};
OHCA_ASSERT_SIZE(struct ohca_odp_unmap_in, 24);
OHCA_ASSERT_OFFSET(struct ohca_odp_unmap_in, npages, 16);

/* ---- ALLOC_DM / FREE_DM / REG_DM_MR (OHCA_DEV_CAP_DM) ------------------- */
/*
 * ALLOC_DM takes 'length' bytes (1..max_dm_size) of device memory, rounded
 * up to whole chunks (dm_chunk_size), contiguous and aligned to
 * 2^log_align bytes (log_align <= OHCA_DM_CHUNK_SHIFT: every chunk is page
 * aligned). The chunks read as zero when handed out, whatever an earlier
 * allocation left there. Output: the allocation's handle and its byte
 * offset in BAR2 (OHCA_DM_BAR_OFFSET + chunk * chunk size). NO_RESOURCES
 * when max_dm allocations exist or no run of free chunks is long enough.
 *
 * FREE_DM (input ohca_handle_in) releases it; BAD_STATE while an MR is
 * registered on it, BAD_HANDLE for an unknown or freed handle.
 *
 * REG_DM_MR registers bytes [offset, offset + length) of allocation
 * 'dm_handle' as an MR of PD 'pdn' (output ohca_create_out, keys as
 * CREATE_MR's; DESTROY_MR deregisters it). The MR is zero based: address
 * 0 in its keys' range is byte 'offset' of the allocation, and the device
 * reads and writes its own memory for it, never the guest's. 'length' may
 * be 0 (the MR then covers nothing); 'offset' + 'length' must lie inside
 * the allocation as ALLOC_DM's length asked for (BAD_FIELD). 'access' is
 * CREATE_MR's without OHCA_ACCESS_MW_BIND (BAD_FIELD). REREG_MR of such an
 * MR is BAD_STATE.
 */
struct ohca_alloc_dm_in {
	ohca_le64 length;
	ohca_le32 log_align;
	ohca_le32 rsvd;
};
OHCA_ASSERT_SIZE(struct ohca_alloc_dm_in, 16);

struct ohca_alloc_dm_out {
	ohca_le32 handle;
	ohca_le32 rsvd;
	ohca_le64 bar_offset;		/* in BAR2 */
};
OHCA_ASSERT_SIZE(struct ohca_alloc_dm_out, 16);

struct ohca_reg_dm_mr_in {
	ohca_le32 pdn;
	ohca_le32 access;		/* enum ohca_access */
	ohca_le32 dm_handle;
	ohca_le32 rsvd;
	ohca_le64 offset;		/* in the allocation */
	ohca_le64 length;
};
OHCA_ASSERT_SIZE(struct ohca_reg_dm_mr_in, 32);
OHCA_ASSERT_OFFSET(struct ohca_reg_dm_mr_in, offset, 16);

/* ---- CREATE_CQ / DESTROY_CQ -------------------------------------------- */
/*
 * The ring is 2^log_size struct ohca_cqe in the pages of 'pbl'. Doorbells
 * for the CQ (consumer index, arming) are accepted only on the doorbell page
 * 'uar_index' (0: the kernel's page). Completion events go to EQ 'eqn'
 * (1.1 clarification: eqn 0 selects EQ 0). A page list that cannot be read
 * fails any CREATE_* with BAD_ADDR, syndrome 0.
 */
struct ohca_create_cq_in {
	ohca_le32 eqn;
	ohca_le32 uar_index;
	ohca_u8 log_size;		/* 1..OHCA_CQ_LOG_MAX */
	ohca_u8 rsvd[7];
	struct ohca_pbl pbl;
	/*
	 * (OHCA_DEV_CAP_DB_RECORD; in_len OHCA_CREATE_CQ_IN_V1_SIZE leaves it
	 * out, as 0) 0, or the address of the CQ's doorbell record: its
	 * index is the consumer index (bits 23:0, as OHCA_DB_CQ's), read by
	 * the device when its own copy says the ring is full and before
	 * RESIZE_CQ moves the unpolled CQEs; RESIZE_CQ writes 0 into it, the
	 * new ring's consumer index. The OHCA_DB_CQ doorbell still
	 * works (and is the only way to arm). Not 8-byte aligned: BAD_FIELD.
	 */
	ohca_le64 db_record;
};
#define OHCA_CREATE_CQ_IN_V1_SIZE	32
OHCA_ASSERT_SIZE(struct ohca_create_cq_in, 40);
OHCA_ASSERT_OFFSET(struct ohca_create_cq_in, db_record, OHCA_CREATE_CQ_IN_V1_SIZE);

/*
 * 2^20 entries (32 MiB): libfabric's ofi_rxm over verbs (1.17) opens its
 * CQ at its universe size times its queue depths (262144 entries by
 * default) and fails when the device's max_cqe is smaller.
 */
#define OHCA_CQ_LOG_MAX			20

/* ---- RESIZE_CQ (OHCA_DEV_CAP_RESIZE_CQ) ---------------------------------- */
/*
 * CQ 'cqn' moves to a new ring of 2^log_size CQEs in the pages of 'pbl'
 * (same rules as CREATE_CQ). The CQEs the device has written and the
 * consumer has not yet returned through the CQ doorbell (producer index
 * minus the doorbell's consumer index) are copied, in order, to slots
 * 0..n-1 of the new ring with the owner bit of the first pass; then both
 * indices restart: the consumer index is 0 and the next CQE goes to slot n.
 * The output gives n. The doorbell page, EQ and arming are kept. The old
 * ring is not written again once the command completes, so the consumer
 * must not poll it meanwhile (it holds its CQ lock across the command) and
 * must return every entry it polled before (the CQ doorbell) first.
 * Errors leave the CQ as it was: BAD_HANDLE (no such CQ), BAD_STATE (the
 * CQ is in error), BAD_FIELD log_size (out of 1..OHCA_CQ_LOG_MAX, or fewer
 * than n slots), BAD_ADDR (page list, old or new ring not accessible),
 * NO_RESOURCES (the page-list budget, counted without the old ring's).
 * The copy is at most 2^OHCA_CQ_LOG_MAX entries.
 */
struct ohca_resize_cq_in {
	ohca_le32 cqn;
	ohca_u8 log_size;		/* 1..OHCA_CQ_LOG_MAX */
	ohca_u8 rsvd[3];
	struct ohca_pbl pbl;
};
OHCA_ASSERT_SIZE(struct ohca_resize_cq_in, 24);
OHCA_ASSERT_OFFSET(struct ohca_resize_cq_in, log_size, 4);
OHCA_ASSERT_OFFSET(struct ohca_resize_cq_in, pbl, 8);

struct ohca_resize_cq_out {
	ohca_le32 cqes;			/* n: unpolled CQEs moved */
	ohca_le32 rsvd;
};
OHCA_ASSERT_SIZE(struct ohca_resize_cq_out, 8);

/* ---- MODIFY_CQ (OHCA_DEV_CAP_CQ_MODERATION) ------------------------------ */
/*
 * Changes the attributes of CQ 'cqn' that 'mask' selects (enum
 * ohca_modify_cq_mask; at least one, no unknown bit). MODERATION: its
 * completion events are moderated (programming manual section 20): an
 * armed CQ raises its event once cq_count eligible CQEs were written since
 * it was armed, or cq_period microseconds after the first of them,
 * whichever comes first. cq_count 0 means no count (the period alone);
 * cq_count 0 or 1 with cq_period 0 turns moderation off (an event per
 * arming at the first eligible CQE, the power-on behaviour). A count above
 * 1 needs a period, so that no event waits for ever: cq_period 0 with
 * cq_count > 1 is BAD_FIELD at cq_period. Values above QUERY_DEVICE's
 * max_cq_mod_count / max_cq_mod_period are BAD_FIELD at their field.
 * The new values apply to an event already held: if they release it, it
 * is raised at once, otherwise its period restarts from the command.
 * Errors change nothing: BAD_HANDLE (no such CQ), BAD_FIELD (mask or a
 * value), RESERVED_NONZERO (rsvd).
 */
struct ohca_modify_cq_in {
	ohca_le32 cqn;
	ohca_le32 mask;			/* enum ohca_modify_cq_mask */
	ohca_le16 cq_count;		/* 0..max_cq_mod_count */
	ohca_le16 cq_period;		/* microseconds, 0..max_cq_mod_period */
	ohca_le32 rsvd;
};
OHCA_ASSERT_SIZE(struct ohca_modify_cq_in, 16);
OHCA_ASSERT_OFFSET(struct ohca_modify_cq_in, cq_count, 8);
OHCA_ASSERT_OFFSET(struct ohca_modify_cq_in, cq_period, 10);

enum ohca_modify_cq_mask {
	OHCA_MODIFY_CQ_MODERATION	= 1u << 0,
};

/* ---- CREATE_QP / MODIFY_QP / QUERY_QP / DESTROY_QP ---------------------- */
/*
 * (ABI 1.2, OHCA_CAP_UD) UD QPs send and receive single-packet SENDs with a
 * DETH; their send WQEs carry an address vector (struct ohca_ud_seg,
 * ohca_queue.h). The GSI QP is a UD QP with number OHCA_GSI_QPN that
 * receives the packets addressed to QP 1; one may exist, created on
 * doorbell page 0 (by the kernel). UD QPs take the UD transitions of the
 * verbs' modify QP: RESET->INIT needs PKEY_INDEX and QKEY (PORT optional,
 * as for the verbs' GSI QP); RTR->RTS
 * needs SQ_PSN; QKEY may change in any later transition; AV, PATH_MTU,
 * DEST_QPN and the RC attributes are refused. A UD message may be as long
 * as the largest IBTA MTU (256..4096) not above the port's Ethernet MTU
 * minus OHCA_ROCE_HDR_OVERHEAD; a longer one completes with LOC_LEN_ERR.
 */
/* IPv6 + UDP + BTH + the largest extension headers + ICRC, rounded up. */
#define OHCA_ROCE_HDR_OVERHEAD		80

enum ohca_qp_type {
	OHCA_QPT_RC			= 0,
	OHCA_QPT_UD			= 1,
	OHCA_QPT_GSI			= 2,
	/* (ABI 1.2, OHCA_CAP_UC) unreliable connected: SEND and RDMA WRITE,
	 * no ACKs; see the programming manual, section 15. */
	OHCA_QPT_UC			= 3,
	/*
	 * (OHCA_DEV_CAP_XRC) XRC initiator: an SQ, a PD and a send CQ like
	 * an RC QP, no receive side (recv_cqn, srqn and the RQ fields zero);
	 * each send WQE names the remote XRC SRQ (xrc_srqn).
	 */
	OHCA_QPT_XRC_INI		= 4,
	/*
	 * XRC target: no queues, no PD, no CQ (everything but type and
	 * xrcdn zero, uar_index 0: the kernel owns it). Each request names an
	 * XRC SRQ of the QP's domain in its XRCETH; that SRQ's PD checks the
	 * request's keys, its WQEs take SENDs and its CQ their completions.
	 */
	OHCA_QPT_XRC_TGT		= 5,
	/*
	 * (OHCA_DEV_CAP_RAW_ETH) Raw Ethernet: a send WQE (opcode SEND,
	 * struct ohca_send_wqe and its SGEs or inline data) is one whole
	 * Ethernet frame, sent as it is; the receive queue takes the frames
	 * a flow (CREATE_FLOW) steers to the QP. No SRQ. States: RESET->INIT
	 * needs OHCA_QP_PORT, the other transitions no attribute.
	 */
	OHCA_QPT_RAW_ETH		= 6,
	/*
	 * (OHCA_DEV_CAP_IB_LINK) QP0, the subnet management QP of an
	 * InfiniBand port: one per port, created like OHCA_QPT_GSI, its
	 * packets on VL15 with the default P_Key and no Q_Key check; the
	 * device takes it only on an InfiniBand port.
	 */
	OHCA_QPT_SMI			= 7,
};

/* QP states, the IBTA numbering. */
enum ohca_qp_state {
	OHCA_QPS_RESET			= 0,
	OHCA_QPS_INIT			= 1,
	OHCA_QPS_RTR			= 2,
	OHCA_QPS_RTS			= 3,
	OHCA_QPS_SQD			= 4,
	OHCA_QPS_SQE			= 5,
	OHCA_QPS_ERR			= 6,
};

/*
 * Send and receive queues: 2^log_size WQEs of 2^log_stride bytes each in
 * the pages of their page list. A send WQE stride holds the 64-byte header
 * plus num_sge segments or inline data; a receive WQE stride holds the
 * 16-byte header plus segments. Doorbells only from page 'uar_index'.
 */
#define OHCA_WQ_LOG_MAX			15
#define OHCA_SQ_LOG_STRIDE_MIN		7	/* header + 4 SGEs */
#define OHCA_RQ_LOG_STRIDE_MIN		5	/* header + 1 SGE */
#define OHCA_WQ_LOG_STRIDE_MAX		12

struct ohca_create_qp_in {
	ohca_u8 type;			/* enum ohca_qp_type */
	ohca_u8 sq_log_size;
	ohca_u8 rq_log_size;
	ohca_u8 sq_log_stride;
	ohca_u8 rq_log_stride;
	ohca_u8 rsvd0[3];
	union {
		ohca_le32 pdn;
		ohca_le32 xrcdn;	/* OHCA_QPT_XRC_TGT: its XRC domain */
	};
	ohca_le32 send_cqn;
	ohca_le32 recv_cqn;
	ohca_le32 uar_index;
	ohca_le32 max_inline;		/* <= stride - 64 and max_inline_data */
	/*
	 * (ABI 1.2) 0: the QP has its own receive queue. Otherwise the SRQ
	 * (in the same PD) its receives come from; the QP then has no RQ:
	 * rq_log_size, rq_log_stride and rq_pbl must be zero.
	 */
	ohca_le32 srqn;
	struct ohca_pbl sq_pbl;
	struct ohca_pbl rq_pbl;
	/*
	 * (OHCA_DEV_CAP_DB_RECORD; in_len OHCA_CREATE_QP_IN_V1_SIZE leaves it
	 * out, as 0) 0, or the address of the RQ's doorbell record: its index
	 * is the RQ producer index, read by the device when a request needs a
	 * receive WQE and none it knows of is left, and when the QP's receive
	 * WQEs are flushed. A value behind the device's copy or more than the
	 * RQ's size ahead of its consumer index is ignored, as such an
	 * OHCA_DB_RQ doorbell is. The OHCA_DB_RQ doorbell still works. Only
	 * with a receive queue of its own (else BAD_FIELD), 8-byte aligned.
	 */
	ohca_le64 rq_db_record;
};
#define OHCA_CREATE_QP_IN_V1_SIZE	64
OHCA_ASSERT_SIZE(struct ohca_create_qp_in, 72);
OHCA_ASSERT_OFFSET(struct ohca_create_qp_in, rq_db_record, OHCA_CREATE_QP_IN_V1_SIZE);
OHCA_ASSERT_OFFSET(struct ohca_create_qp_in, srqn, 28);
OHCA_ASSERT_OFFSET(struct ohca_create_qp_in, sq_pbl, 32);

/* MODIFY_QP attribute mask: the IBTA verbs bit values. */
enum ohca_qp_attr_mask {
	OHCA_QP_STATE			= 1u << 0,
	OHCA_QP_CUR_STATE		= 1u << 1,
	OHCA_QP_ACCESS_FLAGS		= 1u << 3,
	OHCA_QP_PKEY_INDEX		= 1u << 4,
	OHCA_QP_PORT			= 1u << 5,	/* port 1; no attr field */
	OHCA_QP_QKEY			= 1u << 6,
	OHCA_QP_AV			= 1u << 7,
	OHCA_QP_PATH_MTU		= 1u << 8,
	OHCA_QP_TIMEOUT			= 1u << 9,
	OHCA_QP_RETRY_CNT		= 1u << 10,
	OHCA_QP_RNR_RETRY		= 1u << 11,
	OHCA_QP_RQ_PSN			= 1u << 12,
	OHCA_QP_MAX_QP_RD_ATOMIC	= 1u << 13,
	OHCA_QP_MIN_RNR_TIMER		= 1u << 15,
	OHCA_QP_SQ_PSN			= 1u << 16,
	OHCA_QP_MAX_DEST_RD_ATOMIC	= 1u << 17,
	OHCA_QP_DEST_QPN		= 1u << 20,
	/* Not an IBTA attribute: ohca_modify_qp_in.udp_sport, with OHCA_QP_AV. */
	OHCA_QP_UDP_SPORT		= 1u << 30,
};

/* RoCEv2 UDP source ports a QP may use (IBTA A17.5.3: 0xC000 and up). */
#define OHCA_UDP_SPORT_MIN		0xc000

enum ohca_network_type {
	OHCA_NET_IPV4			= 1,
	OHCA_NET_IPV6			= 2,
};

/* Address vector: where the QP's packets go. The driver resolves dmac. */
struct ohca_av {
	ohca_u8 dgid[16];		/* network byte order */
	ohca_u8 dmac[6];
	ohca_le16 vlan_id;		/* 0xffff: none */
	ohca_le32 flow_label;
	ohca_u8 hop_limit;
	ohca_u8 traffic_class;
	ohca_u8 sgid_index;
	ohca_u8 network_type;		/* enum ohca_network_type */
};
OHCA_ASSERT_SIZE(struct ohca_av, 32);

/*
 * (OHCA_DEV_CAP_IB_LINK) On an InfiniBand port the same 32 bytes are read
 * as this: the packet goes to dlid (LRH) on service level sl; with
 * OHCA_AV_IB_GRH it carries a GRH to dgid as well (flow_label, hop_limit,
 * traffic_class and sgid_index as in struct ohca_av, which shares their
 * offsets). The source LID is the port's LID with src_path_bits in its
 * low LMC bits.
 */
enum ohca_av_ib_flags {
	OHCA_AV_IB_GRH			= 1u << 0,
};

struct ohca_av_ib {
	ohca_u8 dgid[16];		/* network byte order; with OHCA_AV_IB_GRH */
	ohca_le16 dlid;
	ohca_u8 sl;			/* 0..15 */
	ohca_u8 src_path_bits;		/* < 2^LMC */
	ohca_u8 flags;			/* enum ohca_av_ib_flags */
	ohca_u8 static_rate;		/* IBTA rate enum; 0: port rate */
	ohca_u8 rsvd[2];
	ohca_le32 flow_label;
	ohca_u8 hop_limit;
	ohca_u8 traffic_class;
	ohca_u8 sgid_index;
	ohca_u8 rsvd2;
};
OHCA_ASSERT_SIZE(struct ohca_av_ib, 32);
OHCA_ASSERT_OFFSET(struct ohca_av_ib, dlid, 16);
OHCA_ASSERT_OFFSET(struct ohca_av_ib, flow_label, 24);
OHCA_ASSERT_OFFSET(struct ohca_av_ib, hop_limit, 28);
OHCA_ASSERT_OFFSET(struct ohca_av_ib, sgid_index, 30);

struct ohca_qp_attr {
	ohca_u8 qp_state;		/* enum ohca_qp_state */
	ohca_u8 cur_qp_state;
	ohca_u8 path_mtu;		/* IBTA enum: 1=256 .. 5=4096 */
	ohca_u8 timeout;		/* 4.096 us * 2^timeout, 0 = infinite */
	ohca_u8 retry_cnt;		/* 0..7 */
	ohca_u8 rnr_retry;		/* 0..7, 7 = infinite */
	ohca_u8 min_rnr_timer;		/* IBTA RNR timer code 0..31 */
	ohca_u8 max_rd_atomic;
	ohca_u8 max_dest_rd_atomic;
	ohca_u8 sq_draining;		/* QUERY_QP only */
	ohca_le16 pkey_index;
	ohca_le32 access_flags;		/* enum ohca_access (remote ones) */
	ohca_le32 dest_qpn;
	ohca_le32 rq_psn;
	ohca_le32 sq_psn;
	ohca_le32 qkey;
	struct ohca_av av;
};
OHCA_ASSERT_SIZE(struct ohca_qp_attr, 64);
OHCA_ASSERT_OFFSET(struct ohca_qp_attr, access_flags, 12);
OHCA_ASSERT_OFFSET(struct ohca_qp_attr, av, 32);

struct ohca_modify_qp_in {
	ohca_le32 qpn;
	ohca_le32 attr_mask;		/* enum ohca_qp_attr_mask */
	struct ohca_qp_attr attr;
	/*
	 * With OHCA_QP_UDP_SPORT: the UDP source port of every packet of
	 * the QP (OHCA_UDP_SPORT_MIN..0xffff), the flow's entropy for ECMP
	 * and RSS, chosen by the driver (from the flow label). Without it
	 * the device uses 0xc000 | (qpn & 0x3fff).
	 */
	ohca_le16 udp_sport;
	ohca_u8 rsvd[6];
};
OHCA_ASSERT_SIZE(struct ohca_modify_qp_in, 80);
OHCA_ASSERT_OFFSET(struct ohca_modify_qp_in, udp_sport, 72);

/*
 * QUERY_QP: input ohca_handle_in, output ohca_qp_attr. rq_psn is the PSN
 * the responder expects next (from RTR to SQE) and sq_psn the one the
 * requester sends next (from RTS to SQE), as they are when the command runs;
 * in other states both are the values last set.
 */

/* ---- CREATE_SRQ / MODIFY_SRQ / QUERY_SRQ / DESTROY_SRQ (ABI 1.2) ------- */
/*
 * A shared receive queue: 2^log_size receive WQEs (struct ohca_recv_wqe and
 * its segments) of 2^log_stride bytes in the pages of 'pbl', posted through
 * the OHCA_DB_SRQ doorbell of page 'uar_index'. QPs created with its srqn
 * take their receive WQEs from it, in ring order, whichever QP comes first.
 * A WQE's slot may be reused once the device has taken it, which is no
 * later than its completion. 2^log_size <= max_srq_wr; srqn 1..max_srq.
 *
 * 'limit' arms the SRQ limit: when the WQEs the device has not taken yet
 * drop below it, the device posts OHCA_EQE_SRQ_EVENT LIMIT_REACHED once and
 * disarms (limit becomes 0). MODIFY_SRQ with OHCA_SRQ_LIMIT sets it again;
 * a limit at or above 2^log_size is BAD_FIELD. An SRQ ring the device cannot
 * read posts SRQ_EVENT ERR and the SRQ stops (its QPs get RNR NAKs).
 * DESTROY_SRQ of an SRQ that QPs still use is BAD_STATE.
 */
struct ohca_create_srq_in {
	ohca_le32 pdn;
	ohca_le32 uar_index;
	ohca_u8 log_size;		/* 1..OHCA_WQ_LOG_MAX, <= max_srq_wr */
	ohca_u8 log_stride;		/* OHCA_RQ_LOG_STRIDE_MIN..MAX */
	ohca_u8 type;			/* enum ohca_srq_type */
	ohca_u8 rsvd0;
	ohca_le32 limit;		/* 0: not armed */
	struct ohca_pbl pbl;
	/* OHCA_SRQT_XRC: its domain and the CQ of its receive completions;
	 * zero for a basic SRQ. */
	ohca_le32 xrcdn;
	ohca_le32 cqn;
	/*
	 * (OHCA_DEV_CAP_SRQ_DB_RECORD; in_len OHCA_CREATE_SRQ_IN_V1_SIZE
	 * leaves it out, as 0) 0, or the address of the SRQ's doorbell
	 * record: its index is the SRQ producer index, read by the device
	 * when a request needs a receive WQE and none it knows of is left,
	 * when the WQEs it knows of drop below an armed limit (before it posts
	 * LIMIT_REACHED) and by QUERY_SRQ. A value behind the device's copy
	 * or more than the SRQ's size ahead of its consumer index is ignored,
	 * as such an OHCA_DB_SRQ doorbell is. The OHCA_DB_SRQ doorbell still
	 * works. Not 8-byte aligned: BAD_FIELD.
	 */
	ohca_le64 db_record;
};
#define OHCA_CREATE_SRQ_IN_V1_SIZE	40
OHCA_ASSERT_SIZE(struct ohca_create_srq_in, 48);
OHCA_ASSERT_OFFSET(struct ohca_create_srq_in, db_record, OHCA_CREATE_SRQ_IN_V1_SIZE);
OHCA_ASSERT_OFFSET(struct ohca_create_srq_in, type, 10);
OHCA_ASSERT_OFFSET(struct ohca_create_srq_in, xrcdn, 32);
OHCA_ASSERT_OFFSET(struct ohca_create_srq_in, limit, 12);
OHCA_ASSERT_OFFSET(struct ohca_create_srq_in, pbl, 16);

enum ohca_srq_type {
	OHCA_SRQT_BASIC			= 0,
	/*
	 * (OHCA_DEV_CAP_XRC) An XRC SRQ: no QP is created on it; XRC target
	 * QPs of its domain reach it by its srqn in a request's XRCETH, and
	 * its receive completions go to its own CQ (flag OHCA_CQE_F_XRC,
	 * src_qp = srqn). DESTROY_SRQ does not wait for target QPs.
	 */
	OHCA_SRQT_XRC			= 1,
};

enum ohca_srq_attr_mask {
	OHCA_SRQ_LIMIT			= 1u << 1,	/* IBV_SRQ_LIMIT */
};

struct ohca_modify_srq_in {
	ohca_le32 srqn;
	ohca_le32 attr_mask;		/* enum ohca_srq_attr_mask */
	ohca_le32 limit;
	ohca_le32 rsvd;
};
OHCA_ASSERT_SIZE(struct ohca_modify_srq_in, 16);

/* QUERY_SRQ: input ohca_handle_in (srqn), output: */
struct ohca_query_srq_out {
	ohca_le32 limit;		/* 0 once the limit event fired */
	ohca_le32 wqes;			/* posted, not yet taken by the device */
	ohca_u8 log_size;
	ohca_u8 log_stride;
	ohca_u8 error;			/* 1: stopped after a ring access error */
	ohca_u8 rsvd0;
	ohca_le32 qp_refs;		/* QPs using the SRQ */
};
OHCA_ASSERT_SIZE(struct ohca_query_srq_out, 16);

/* ---- ATTACH_MCAST / DETACH_MCAST -------------------------------------- */
/*
 * A UD QP joins or leaves a multicast group (IBTA 10.5.2.2): a UD SEND whose
 * BTH destination QP is OHCA_MCAST_QPN and whose destination GID is 'gid'
 * reaches every QP attached to it, each by its own Q_Key check and receive
 * WQE, including QPs on this device when one of them sent it (the frame also
 * goes to the wire). The GID must be multicast: ff00::/8, or an IPv4-mapped
 * 224.0.0.0/4. Only UD QPs attach (BAD_STATE otherwise); attaching twice is
 * BAD_STATE, detaching what is not attached BAD_FIELD (offset of gid).
 * NO_RESOURCES past max_mcast_grp groups, max_mcast_qp_attach QPs in one
 * group or max_total_mcast_qp_attach attachments (QUERY_DEVICE). DESTROY_QP
 * detaches the QP from every group. The Ethernet port receives every
 * multicast frame (no filter list), so no filter needs programming.
 */
#define OHCA_MCAST_QPN			0xffffffu

struct ohca_mcast_in {
	ohca_le32 qpn;
	ohca_le32 rsvd;
	ohca_u8 gid[16];		/* network byte order */
};
OHCA_ASSERT_SIZE(struct ohca_mcast_in, 24);
OHCA_ASSERT_OFFSET(struct ohca_mcast_in, gid, 8);

/* ---- ALLOC_XRCD / DEALLOC_XRCD (OHCA_DEV_CAP_XRC) ---------------------- */
/*
 * An XRC domain groups XRC SRQs and XRC target QPs: a request reaches an
 * SRQ only through a target QP of the SRQ's domain. ALLOC_XRCD: no input,
 * output ohca_create_out (handle: xrcdn, 1..max_xrcd); NO_RESOURCES past
 * max_xrcd. DEALLOC_XRCD: input ohca_handle_in; BAD_STATE while SRQs or
 * QPs of the domain exist.
 */

/* ---- CREATE_FLOW / DESTROY_FLOW (OHCA_DEV_CAP_RAW_ETH) ------------------- */
/*
 * A flow steers received Ethernet frames to a raw Ethernet QP. Its match is
 * one struct ohca_flow_spec of values and one of masks: a frame matches
 * when, for every mask bit set, the frame's field has the value's bit.
 * Fields, all in network byte order as on the wire:
 *  dmac, smac, ether_type  the Ethernet header; ether_type is the one after
 *                          an 802.1Q tag when the frame has one
 *  vlan_tci                the tag's TCI (0 for an untagged frame)
 *  ip_version              4 or 6 for an IPv4 or IPv6 frame, else 0
 *  src_ip, dst_ip          IPv6 addresses, or IPv4 ones in bytes 12..15
 *  ip_proto                IPv4 protocol, IPv6 next header
 *  tos                     IPv4 TOS, IPv6 traffic class
 *  ttl                     IPv4 TTL, IPv6 hop limit
 *  flow_label              IPv6 flow label (low 20 bits)
 *  src_port, dst_port      TCP or UDP ports (0 in any other frame)
 * Rules (BAD_FIELD with the offset of the first field that breaks one):
 * a value has no bit outside its mask; any IP field needs ip_version
 * masked 0xff with value 4 or 6; an IPv4 match masks no byte of src_ip or
 * dst_ip below 12 and no flow_label bit; a port needs ip_proto masked 0xff
 * with value 6 (TCP) or 17 (UDP); flow_label has 20 bits. The qpn names a
 * raw Ethernet QP (BAD_HANDLE, or BAD_STATE for another type); priority
 * orders the flows, lowest first, then the older first.
 *
 * Which frames: every frame the port accepts (its MAC filter) that is not
 * RoCEv2 (UDP port 4791: those belong to the RDMA transport), and every
 * frame a raw Ethernet QP of this device sends. A received frame matching
 * a flow goes to that one flow's QP and not to the Ethernet RX ring; in
 * that QP's receive queue it needs a WQE in RTR, RTS, SQD or SQE (else it
 * is dropped and counted: raw_rx_dropped). A frame a raw QP sends that
 * matches a flow of this device is delivered to it as well as sent on the
 * wire (the loopback of a NIC with a local switch).
 *
 * Output: ohca_create_out, handle 1..2^31. NO_RESOURCES once max_flow flows
 * exist. DESTROY_FLOW (input ohca_handle_in) removes one; DESTROY_QP of a
 * QP that still has flows is BAD_STATE.
 */
struct ohca_flow_spec {
	ohca_u8 dmac[6];
	ohca_u8 smac[6];
	ohca_be16 ether_type;
	ohca_be16 vlan_tci;
	ohca_u8 src_ip[16];
	ohca_u8 dst_ip[16];
	ohca_u8 ip_version;
	ohca_u8 ip_proto;
	ohca_u8 tos;
	ohca_u8 ttl;
	ohca_be32 flow_label;
	ohca_be16 src_port;
	ohca_be16 dst_port;
	ohca_le32 rsvd;			/* zero in value and mask */
};
OHCA_ASSERT_SIZE(struct ohca_flow_spec, 64);
OHCA_ASSERT_OFFSET(struct ohca_flow_spec, ether_type, 12);
OHCA_ASSERT_OFFSET(struct ohca_flow_spec, src_ip, 16);
OHCA_ASSERT_OFFSET(struct ohca_flow_spec, ip_version, 48);
OHCA_ASSERT_OFFSET(struct ohca_flow_spec, flow_label, 52);
OHCA_ASSERT_OFFSET(struct ohca_flow_spec, src_port, 56);

struct ohca_create_flow_in {
	ohca_le32 qpn;
	ohca_le16 priority;
	ohca_le16 rsvd0;
	ohca_le32 rsvd1[2];
	struct ohca_flow_spec value;
	struct ohca_flow_spec mask;
};
OHCA_ASSERT_SIZE(struct ohca_create_flow_in, 144);
OHCA_ASSERT_OFFSET(struct ohca_create_flow_in, value, 16);
OHCA_ASSERT_OFFSET(struct ohca_create_flow_in, mask, 80);

/* ---- QUERY_PFC / SET_PFC (OHCA_DEV_CAP_PFC) ------------------------------ */
/*
 * Flow control of an Ethernet port (programming manual section 22). With
 * PFC on for priority i (bit i of pfc_en) the device stops sending frames
 * of priority i for the time a received PFC frame names (quanta of 512 bit
 * times at speed_mbps; 0 resumes at once), and sends XOFF for priority i
 * when its receive side fills (the RoCE receive backlog, or the Ethernet
 * RX ring out of descriptors), XON when it has drained. With pfc_en 0,
 * OHCA_PAUSE_RX / OHCA_PAUSE_TX do the same for 802.3x PAUSE (every
 * priority at once). A frame's priority: the PCP of its 802.1Q tag
 * (untagged: 0) with OHCA_PFC_TRUST_PCP, its IP DSCP / 8 (not IP: 0) with
 * OHCA_PFC_TRUST_DSCP; the device's RoCE packets carry PCP 0, so under
 * PCP trust they are priority 0, under DSCP trust their traffic class / 32.
 * MAC control frames (EtherType 0x8808) are never given to the RX ring.
 * BAD_STATE on an InfiniBand port.
 */
#define OHCA_PFC_PRIOS			8

enum ohca_pause_flags {
	OHCA_PAUSE_RX			= 1u << 0,	/* honour 802.3x PAUSE */
	OHCA_PAUSE_TX			= 1u << 1,	/* send 802.3x PAUSE */
};

enum ohca_pfc_trust {
	OHCA_PFC_TRUST_PCP		= 0,
	OHCA_PFC_TRUST_DSCP		= 1,
};

struct ohca_pfc_config {
	ohca_u8 pfc_en;			/* bit i: PFC on priority i */
	ohca_u8 pause;			/* enum ohca_pause_flags */
	ohca_u8 trust;			/* enum ohca_pfc_trust */
	ohca_u8 rsvd0;
	ohca_le32 speed_mbps;		/* quanta's bit time; 0: the port's speed */
};
OHCA_ASSERT_SIZE(struct ohca_pfc_config, 8);
OHCA_ASSERT_OFFSET(struct ohca_pfc_config, speed_mbps, 4);

struct ohca_set_pfc_in {
	ohca_u8 port;			/* must be 1 */
	ohca_u8 rsvd[7];
	struct ohca_pfc_config cfg;
};
OHCA_ASSERT_SIZE(struct ohca_set_pfc_in, 16);
OHCA_ASSERT_OFFSET(struct ohca_set_pfc_in, cfg, 8);

struct ohca_query_pfc_in {
	ohca_u8 port;			/* must be 1 */
	ohca_u8 rsvd[7];
};
OHCA_ASSERT_SIZE(struct ohca_query_pfc_in, 8);

struct ohca_query_pfc_out {
	struct ohca_pfc_config cfg;
	ohca_le64 rx_pfc[OHCA_PFC_PRIOS];	/* PFC frames received naming priority i */
	ohca_le64 tx_pfc[OHCA_PFC_PRIOS];	/* PFC frames sent naming priority i */
	ohca_le64 rx_pause;		/* 802.3x PAUSE frames received */
	ohca_le64 tx_pause;		/* 802.3x PAUSE frames sent */
	ohca_le64 rx_ignored;		/* MAC control frames not acted on */
	ohca_le64 rx_storm;		/* pauses that lasted over a second */
	ohca_le64 tx_held;		/* Ethernet frames held by a pause */
	ohca_le64 tx_dropped;		/* packets sent without waiting (CNPs), dropped */
	ohca_u8 paused;			/* priorities stopped by the peer now */
	ohca_u8 xoff;			/* priorities we hold XOFF for now */
	ohca_u8 rsvd[6];
};
OHCA_ASSERT_SIZE(struct ohca_query_pfc_out, 192);
OHCA_ASSERT_OFFSET(struct ohca_query_pfc_out, rx_pfc, 8);
OHCA_ASSERT_OFFSET(struct ohca_query_pfc_out, tx_pfc, 72);
OHCA_ASSERT_OFFSET(struct ohca_query_pfc_out, rx_pause, 136);
OHCA_ASSERT_OFFSET(struct ohca_query_pfc_out, tx_held, 168);
OHCA_ASSERT_OFFSET(struct ohca_query_pfc_out, tx_dropped, 176);
OHCA_ASSERT_OFFSET(struct ohca_query_pfc_out, paused, 184);

#define OHCA_FLOW_IP_PROTO_TCP		6
#define OHCA_FLOW_IP_PROTO_UDP		17

/* ---- Receive WQs, indirection tables, RSS QPs (OHCA_DEV_CAP_RSS) -------- */
/*
 * A receive work queue (programming manual section 23): 2^log_size receive
 * WQEs (struct ohca_recv_wqe and its segments, as an RQ's) of 2^log_stride
 * bytes in the pages of 'pbl', posted through the OHCA_DB_WQ doorbell of
 * page 'uar_index', completing into CQ 'cqn' (CQE flag OHCA_CQE_F_WQ, qpn
 * the wqn). It receives only through an RSS QP's indirection table, and
 * only in state RDY. wqn 1..max_wq; 2^log_size <= max_wq_wr.
 */
enum ohca_wq_state {
	OHCA_WQS_RESET			= 0,	/* posted WQEs are dropped */
	OHCA_WQS_RDY			= 1,
	OHCA_WQS_ERR			= 2,	/* posted WQEs flush */
};

struct ohca_create_wq_in {
	ohca_le32 pdn;
	ohca_le32 cqn;
	ohca_le32 uar_index;
	ohca_u8 log_size;		/* 1..OHCA_WQ_LOG_MAX */
	ohca_u8 log_stride;		/* OHCA_RQ_LOG_STRIDE_MIN..MAX */
	ohca_u8 rsvd0[2];
	struct ohca_pbl pbl;
};
OHCA_ASSERT_SIZE(struct ohca_create_wq_in, 32);
OHCA_ASSERT_OFFSET(struct ohca_create_wq_in, log_size, 12);
OHCA_ASSERT_OFFSET(struct ohca_create_wq_in, pbl, 16);

/*
 * MODIFY_WQ: the state (enum ohca_wq_state). cur_state, when not 0xff,
 * must be the WQ's state (BAD_STATE otherwise). RESET empties the queue
 * (producer and consumer index 0, nothing completes); ERR completes every
 * posted WQE with WR_FLUSH_ERR, then each one posted later; RDY only from
 * RESET or RDY. DESTROY_WQ (ohca_handle_in) of a WQ an indirection table
 * names is BAD_STATE.
 */
struct ohca_modify_wq_in {
	ohca_le32 wqn;
	ohca_u8 state;
	ohca_u8 cur_state;		/* 0xff: any */
	ohca_u8 rsvd[2];
};
OHCA_ASSERT_SIZE(struct ohca_modify_wq_in, 8);

/*
 * An indirection table of 2^log_size entries (0..log2 of
 * max_rwq_ind_tbl_size), each a live WQ (a WQ may appear more than once);
 * entries from 2^log_size on must be 0. Output ohca_create_out: the table
 * number (1..max_rwq_ind_tbl). DESTROY_RWQ_IND_TBL (ohca_handle_in) of a
 * table an RSS QP uses is BAD_STATE.
 */
#define OHCA_RWQ_IND_TBL_LOG_MAX	8
struct ohca_create_rwq_ind_tbl_in {
	ohca_u8 log_size;
	ohca_u8 rsvd[7];
	ohca_le32 wqn[1u << OHCA_RWQ_IND_TBL_LOG_MAX];
};
OHCA_ASSERT_SIZE(struct ohca_create_rwq_ind_tbl_in, 1032);
OHCA_ASSERT_OFFSET(struct ohca_create_rwq_ind_tbl_in, wqn, 8);

/*
 * What an RSS QP hashes (the verbs' ibv_rx_hash_fields bits): the IPv4
 * or IPv6 addresses (not both families), the TCP or UDP ports (not both).
 * A frame without a chosen field (another IP version or L4 protocol)
 * hashes without it.
 */
enum ohca_rss_fields {
	OHCA_RSS_SRC_IPV4		= 1u << 0,
	OHCA_RSS_DST_IPV4		= 1u << 1,
	OHCA_RSS_SRC_IPV6		= 1u << 2,
	OHCA_RSS_DST_IPV6		= 1u << 3,
	OHCA_RSS_SRC_PORT_TCP		= 1u << 4,
	OHCA_RSS_DST_PORT_TCP		= 1u << 5,
	OHCA_RSS_SRC_PORT_UDP		= 1u << 6,
	OHCA_RSS_DST_PORT_UDP		= 1u << 7,
	OHCA_RSS_ALL_FIELDS		= 0xffu,
};

#define OHCA_RSS_HASH_TOEPLITZ		1	/* ibv_rx_hash_function_flags */
#define OHCA_RSS_KEY_LEN		40

/*
 * CREATE_RSS_QP: a raw Ethernet QP (OHCA_QPT_RAW_ETH) without send or
 * receive queue of its own. Frames its flows steer to it go to the WQ of
 * entry (Toeplitz hash of 'fields' with 'key', the input bytes in the
 * order source address, destination address, source port, destination
 * port, each in network order) mod table size. It has no doorbell and
 * MODIFY_QP is BAD_STATE; DESTROY_QP destroys it. Output ohca_create_out:
 * the qpn.
 */
struct ohca_create_rss_qp_in {
	ohca_le32 pdn;
	ohca_le32 ind_tbl;
	ohca_le32 fields;		/* enum ohca_rss_fields */
	ohca_u8 hash_function;		/* OHCA_RSS_HASH_TOEPLITZ */
	ohca_u8 rsvd[3];
	ohca_u8 key[OHCA_RSS_KEY_LEN];
};
OHCA_ASSERT_SIZE(struct ohca_create_rss_qp_in, 56);
OHCA_ASSERT_OFFSET(struct ohca_create_rss_qp_in, key, 16);

#endif /* OHCA_CMD_H */
