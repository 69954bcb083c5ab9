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
	ohca_le32 rsvd[8];
};
OHCA_ASSERT_SIZE(struct ohca_query_device_out, 160);
OHCA_ASSERT_OFFSET(struct ohca_query_device_out, node_guid, 8);
OHCA_ASSERT_OFFSET(struct ohca_query_device_out, vendor_id, 40);
OHCA_ASSERT_OFFSET(struct ohca_query_device_out, num_ports, 124);

/* ---- QUERY_PORT -------------------------------------------------------- */
struct ohca_query_port_in {
	ohca_u8 port;			/* must be 1 */
	ohca_u8 rsvd[7];
};
OHCA_ASSERT_SIZE(struct ohca_query_port_in, 8);

enum ohca_port_state {		/* values of struct ohca_query_port_out.state */
	OHCA_PORT_DOWN			= 1,
	OHCA_PORT_ACTIVE		= 4,
};

struct ohca_query_port_out {
	ohca_u8 state;			/* enum ohca_port_state */
	ohca_u8 link_up;		/* 1 when the netdev link is up */
	ohca_u8 mac[6];
	ohca_le32 max_mtu;		/* largest Ethernet MTU accepted by SET_PORT */
	ohca_le32 mtu;			/* current Ethernet MTU */
	ohca_le32 speed_mbps;
	ohca_le32 gid_table_len;
	ohca_le32 pkey_table_len;
	ohca_le32 max_msg_size;
	ohca_le64 rx_frames;
	ohca_le64 tx_frames;
	ohca_le32 rsvd[4];
};
OHCA_ASSERT_SIZE(struct ohca_query_port_out, 64);
OHCA_ASSERT_OFFSET(struct ohca_query_port_out, mac, 2);
OHCA_ASSERT_OFFSET(struct ohca_query_port_out, rx_frames, 32);

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
};
OHCA_ASSERT_SIZE(struct ohca_query_stats_out, 128);

#endif /* OHCA_CMD_H */
