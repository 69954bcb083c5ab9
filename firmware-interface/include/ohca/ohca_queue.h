/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * ohca firmware interface: entries of the rings the device shares with the
 * driver in guest memory (event queues and the Ethernet rings).
 */
#ifndef OHCA_QUEUE_H
#define OHCA_QUEUE_H

#include "ohca_types.h"
#include "ohca_cmd.h"

/*
 * Event queue entry. The device writes entries in ring order; the owner
 * bit (OHCA_EQE_OWNER in 'flags') is 1 on the first pass over the ring and
 * flips on every wrap, so a zeroed ring holds no valid entry. The device
 * writes the whole entry before the byte holding the owner bit becomes
 * visible. The driver returns entries by writing its consumer index to the
 * EQ doorbell; with OHCA_EQ_DB_ARM the device raises the EQ's MSI-X vector
 * for the next event (events that arrive while unarmed raise it on arm).
 * An EQ that would overrun its consumer stops and reports a fatal error.
 */
struct ohca_eqe {
	ohca_u8 type;			/* enum ohca_eqe_type */
	ohca_u8 flags;			/* OHCA_EQE_OWNER */
	ohca_le16 code;			/* per type, see below */
	ohca_le32 param0;
	ohca_le32 param1;
	ohca_le32 param2;
};
OHCA_ASSERT_SIZE(struct ohca_eqe, 16);
OHCA_ASSERT_OFFSET(struct ohca_eqe, flags, 1);
OHCA_ASSERT_OFFSET(struct ohca_eqe, param0, 4);

#define OHCA_EQE_OWNER			0x01

enum ohca_eqe_type {
	/* code: enum ohca_cmd_status, param0: token, param1: syndrome,
	 * param2: command ring slot. */
	OHCA_EQE_CMD_DONE		= 1,
	/* code: enum ohca_port_state, param0: port number, param1: enum
	 * ohca_port_change (ABI 1.5; 0 on an Ethernet port). */
	OHCA_EQE_PORT_CHANGE		= 2,
	/* code: enum ohca_fatal; the device stops until reset. */
	OHCA_EQE_DEVICE_FATAL		= 3,
	/* On the CQ's EQ, once per arming: param0: cqn. */
	OHCA_EQE_CQ_COMPLETION		= 4,
	/* On EQ 0: code: enum ohca_qp_event, param0: qpn. */
	OHCA_EQE_QP_EVENT		= 5,
	/* On EQ 0: code: enum ohca_cq_error, param0: cqn. */
	OHCA_EQE_CQ_ERROR		= 6,
	/* On EQ 0: code: enum ohca_srq_event, param0: srqn (ABI 1.2). */
	OHCA_EQE_SRQ_EVENT		= 7,
	/*
	 * On EQ 0 (OHCA_DEV_CAP_ODP): an access to ODP MR param0 (its key)
	 * found no valid translation for a page. param1/param2: the low and
	 * high 32 bits of the first missing page's address (aligned to the
	 * MR's page size); code: OHCA_PF_WRITE if the device would write,
	 * and in OHCA_PF_NPAGES_MASK how many MR pages from there the access
	 * spans (1..OHCA_ODP_MAP_MAX_PAGES; a longer access faults again).
	 * The driver answers with ODP_MAP (or ODP_MAP with OHCA_ODP_MAP_FAIL).
	 */
	OHCA_EQE_PAGE_FAULT		= 8,
};

#define OHCA_PF_WRITE			0x8000u
#define OHCA_PF_NPAGES_MASK		0x7fffu

enum ohca_qp_event {
	OHCA_QP_EV_COMM_EST		= 1,	/* first packet in RTR */
	OHCA_QP_EV_SQ_DRAINED		= 2,
	OHCA_QP_EV_LAST_WQE_REACHED	= 3,
	OHCA_QP_EV_FATAL		= 4,	/* WQ catastrophic: bad ring DMA */
	OHCA_QP_EV_REQ_ERR		= 5,	/* invalid request received */
	OHCA_QP_EV_ACCESS_ERR		= 6,	/* remote access violation */
};

enum ohca_srq_event {
	OHCA_SRQ_EV_LIMIT_REACHED	= 1,	/* fewer WQEs than the limit */
	OHCA_SRQ_EV_ERR			= 2,	/* ring not readable: stopped */
};

enum ohca_cq_error {
	OHCA_CQ_ERR_OVERRUN		= 1,	/* CQ full; the CQ is in error */
	OHCA_CQ_ERR_ACCESS		= 2,	/* ring not writable */
};

/*
 * Ethernet descriptor, for both rings. The driver fills addr and len
 * (frame length for TX, buffer size for RX), clears flags, and advances the
 * ring's producer doorbell. The device consumes descriptors in order; when
 * done it writes len (RX: received frame length) and then flags with
 * OHCA_ETH_DESC_DONE, and raises MSI-X vector OHCA_MSIX_ETH unless masked.
 * A TX descriptor the device cannot use completes with DONE | ERROR.
 */
struct ohca_eth_desc {
	ohca_le64 addr;
	ohca_le16 len;
	ohca_le16 flags;		/* enum ohca_eth_desc_flags */
	ohca_le32 rsvd;
};
OHCA_ASSERT_SIZE(struct ohca_eth_desc, 16);
OHCA_ASSERT_OFFSET(struct ohca_eth_desc, len, 8);
OHCA_ASSERT_OFFSET(struct ohca_eth_desc, flags, 10);

enum ohca_eth_desc_flags {
	OHCA_ETH_DESC_DONE		= 1u << 0,
	OHCA_ETH_DESC_ERROR		= 1u << 1,
};

/* Frames: 60..(mtu + 18) bytes without FCS; the device pads short TX frames. */
#define OHCA_ETH_MIN_FRAME		60
#define OHCA_ETH_HDR_LEN		14
#define OHCA_ETH_MAX_FRAME		(9000 + 18)

/* ======================================================================
 * RDMA queues (ABI 1.1)
 * ====================================================================== */

/*
 * Doorbells in a doorbell page (BAR2 page uar_index), written as one
 * aligned 64-bit store: low 32 bits the queue number, high 32 bits the
 * value. Producer indices are free-running 32-bit WQE counts; a doorbell
 * whose index moves backwards or more than the queue size ahead of the
 * device's consumer index, or that names a queue not created on this page,
 * is ignored and counted in db_errors. (1.1 clarification) So are other
 * store widths or offsets, and SQ/RQ doorbells for a QP in RESET.
 */
#define OHCA_DB_SQ			0x00	/* value: SQ producer index */
#define OHCA_DB_RQ			0x08	/* value: RQ producer index */
#define OHCA_DB_CQ			0x10	/* value: CI (bits 23:0) | ARM */
#define OHCA_DB_SRQ			0x18	/* value: SRQ producer index
						 * (ABI 1.2) */
#define OHCA_DB_WQ			0x20	/* value: WQ producer index
						 * (OHCA_DEV_CAP_RSS) */
#define OHCA_DB_CQ_CI_MASK		0x00ffffffu
#define OHCA_DB_CQ_ARM_NEXT		(1u << 30)	/* any completion */
#define OHCA_DB_CQ_ARM_SOLICITED	(1u << 31)	/* solicited or error */
#define OHCA_DB_VALUE(qn, value)	(((uint64_t)(value) << 32) | (qn))

/*
 * (OHCA_DEV_CAP_DB_RECORD) A doorbell record: 8 bytes in guest memory,
 * 8-byte aligned, named by CREATE_CQ's db_record, CREATE_QP's
 * rq_db_record or (OHCA_DEV_CAP_SRQ_DB_RECORD) CREATE_SRQ's db_record.
 * The consumer stores the index there (after a write barrier
 * that orders the WQEs, or the CQEs read, before it) instead of writing an
 * MMIO doorbell; the device reads it by DMA only when it needs to, so a
 * record costs no exit to the device. A record the device cannot read, or
 * whose index fails the checks of the matching doorbell, is ignored and
 * counted in db_errors, as that doorbell would be.
 */
struct ohca_db_record {
	ohca_le32 index;	/* RQ, SRQ: producer index; CQ: CI, 23:0 */
	ohca_le32 rsvd;		/* not read by the device */
};
OHCA_ASSERT_SIZE(struct ohca_db_record, 8);
#define OHCA_DB_RECORD_ALIGN		8

/*
 * Send work request opcodes (the ibv_wr_opcode numbering where one exists).
 * The memory-management ones (OHCA_DEV_CAP_FAST_REG) are executed by the
 * device in SQ order, before any later WQE is transmitted, send nothing on
 * the wire and complete in order with the WQEs around them.
 *  SEND_INV:  a SEND whose last packet carries 'rkey' in an IETH: the
 *             responder invalidates that fast-registration MR once the
 *             message is placed (the receive completes with
 *             OHCA_CQE_F_INV).
 *  LOCAL_INV: 'rkey' names the current key of a fast-registration MR of
 *             the QP's PD; the MR becomes free (its keys stop working).
 *             (OHCA_DEV_CAP_MW) Or of a bound type 2 window of the QP's
 *             PD, which becomes free; a SEND_INV's key may name a type 2
 *             window bound through the receiving QP. A type 1 window's
 *             key is refused (LOC_PROT_ERR / MR_STATE; a received SEND
 *             with invalidate: REM_INV_REQ_ERR).
 *  BIND_MW:   struct ohca_bind_mw_wqe (OHCA_DEV_CAP_MW).
 *  REG_MR:    struct ohca_reg_mr_wqe; only on QPs of doorbell page 0 (the
 *             page list holds bus addresses).
 *  ATOMIC_WRITE: (OHCA_DEV_CAP_ATOMIC_WRITE, RC QPs only) IBTA 1.5's RDMA
 *             ATOMIC WRITE: exactly 8 bytes (one or more SGEs, or inline
 *             data) written at 'remote_addr' (8-byte aligned, checked by
 *             the responder) with 'rkey', which needs REMOTE_WRITE. One
 *             packet (RETH, 8-byte payload), acknowledged like an RDMA
 *             WRITE; the responder stores the 8 bytes in one access, so a
 *             reader through the device never sees half of them. Any
 *             other length, or a non-RC QP: LOC_QP_OP_ERR / BAD_WQE.
 */
enum ohca_wr_opcode {
	OHCA_WR_RDMA_WRITE		= 0x00,
	OHCA_WR_RDMA_WRITE_IMM		= 0x01,
	OHCA_WR_SEND			= 0x02,
	OHCA_WR_SEND_IMM		= 0x03,
	OHCA_WR_RDMA_READ		= 0x04,
	/* (ABI 1.2) 8-byte atomics on an 8-byte aligned remote_addr; one SGE
	 * of 8 bytes with LOCAL_WRITE receives the value the remote memory
	 * held before the operation. */
	OHCA_WR_ATOMIC_CMP_SWP		= 0x05,	/* if *va == cmp_add: *va = swap */
	OHCA_WR_ATOMIC_FETCH_ADD	= 0x06,	/* *va += cmp_add (mod 2^64) */
	OHCA_WR_LOCAL_INV		= 0x07,
	OHCA_WR_BIND_MW			= 0x08,	/* struct ohca_bind_mw_wqe */
	OHCA_WR_SEND_INV		= 0x09,
	OHCA_WR_REG_MR			= 0x0a,
	OHCA_WR_ATOMIC_WRITE		= 0x0f,	/* IBV_WR_ATOMIC_WRITE's number */
};

enum ohca_send_flags {
	OHCA_WQE_SIGNALED		= 1u << 0,	/* write a CQE on success */
	OHCA_WQE_SOLICITED		= 1u << 1,
	OHCA_WQE_FENCE			= 1u << 2,	/* wait for prior READs */
	OHCA_WQE_INLINE			= 1u << 3,	/* data follows the header */
};

/* Scatter/gather element, in send and receive WQEs. */
struct ohca_sge {
	ohca_le64 addr;
	ohca_le32 length;
	ohca_le32 lkey;
};
OHCA_ASSERT_SIZE(struct ohca_sge, 16);

/*
 * Send WQE: this header, then num_sge struct ohca_sge, or with
 * OHCA_WQE_INLINE inline_len bytes of data. The whole WQE fits its stride.
 */
struct ohca_send_wqe {
	ohca_le64 wr_id;		/* returned in the CQE */
	ohca_u8 opcode;			/* enum ohca_wr_opcode */
	ohca_u8 flags;			/* enum ohca_send_flags */
	ohca_u8 num_sge;
	ohca_u8 rsvd0;
	ohca_be32 imm_data;		/* as sent on the wire (big endian) */
	ohca_le64 remote_addr;		/* RDMA WRITE/READ */
	ohca_le32 rkey;			/* WRITE/READ; SEND_INV, LOCAL_INV:
					 * the key to invalidate */
	ohca_le32 inline_len;
	ohca_le64 cmp_add;		/* ATOMIC_CMP_SWP: compare value;
					 * ATOMIC_FETCH_ADD: the addend */
	ohca_le64 swap;			/* ATOMIC_CMP_SWP: the new value */
	/* OHCA_QPT_XRC_INI: the remote XRC SRQ (24 bits, nonzero) the
	 * request's XRCETH names; zero on other QPs. */
	ohca_le32 xrc_srqn;
	ohca_le32 rsvd1[3];
};
OHCA_ASSERT_SIZE(struct ohca_send_wqe, 64);
OHCA_ASSERT_OFFSET(struct ohca_send_wqe, xrc_srqn, 48);
OHCA_ASSERT_OFFSET(struct ohca_send_wqe, imm_data, 12);
OHCA_ASSERT_OFFSET(struct ohca_send_wqe, remote_addr, 16);
OHCA_ASSERT_OFFSET(struct ohca_send_wqe, inline_len, 28);
OHCA_ASSERT_OFFSET(struct ohca_send_wqe, cmp_add, 32);
OHCA_ASSERT_OFFSET(struct ohca_send_wqe, swap, 40);

/*
 * (ABI 1.2) UD send WQE, on QPs of type OHCA_QPT_UD and OHCA_QPT_GSI:
 * struct ohca_send_wqe (opcode SEND or SEND_IMM; remote_addr and rkey
 * unused), then this segment, then num_sge struct ohca_sge or inline data.
 * The address vector travels in every WQE, so the device keeps no address
 * handle table and creating an address handle needs no command (the kernel
 * creates them in atomic context). The device validates the vector for each
 * WQE as MODIFY_QP validates a QP's: a bad one completes the WQE with
 * LOC_QP_OP_ERR / OHCA_VERR_BAD_AV.
 * A Q_Key with bit 31 set (a controlled Q_Key) is never sent as given: the
 * device sends the QP's own Q_Key instead (IBTA 10.2.5). Only the driver
 * sets a QP's Q_Key, so only a QP it let have a controlled Q_Key (GSI, or
 * a privileged creator) can send one.
 */
struct ohca_ud_seg {
	struct ohca_av av;		/* see struct ohca_av (ohca_cmd.h) */
	ohca_le32 remote_qpn;		/* 24 bits */
	ohca_le32 qkey;
	/*
	 * (ABI 1.5) The GSI QP on an InfiniBand port: the P_Key table index
	 * of this packet's P_Key (a MAD answers in its request's partition).
	 * Other QPs send with their own (OHCA_QP_PKEY_INDEX); 0 elsewhere.
	 */
	ohca_le16 pkey_index;
	ohca_le16 rsvd0;
	ohca_le32 rsvd;
};
OHCA_ASSERT_SIZE(struct ohca_ud_seg, 48);
OHCA_ASSERT_OFFSET(struct ohca_ud_seg, pkey_index, 40);
OHCA_ASSERT_OFFSET(struct ohca_ud_seg, remote_qpn, 32);
OHCA_ASSERT_OFFSET(struct ohca_ud_seg, qkey, 36);

/* Where a UD WQE's data segments or inline data start. */
#define OHCA_UD_WQE_HDR_LEN	(64 + 48)
OHCA_STATIC_ASSERT(OHCA_UD_WQE_HDR_LEN ==
		   sizeof(struct ohca_send_wqe) + sizeof(struct ohca_ud_seg),
		   "UD WQE header");

/*
 * A UD receive buffer starts with the 40-byte GRH (IBTA 11.4.1.2): for an
 * IPv6 packet its IPv6 header; for an IPv4 packet 20 zero bytes followed
 * by its IPv4 header (the RoCEv2 convention). Payload follows; byte_len
 * counts both.
 */
#define OHCA_UD_GRH_LEN			40
#define OHCA_GSI_QPN			1
#define OHCA_GSI_QKEY			0x80010000u
#define OHCA_QKEY_CONTROLLED		0x80000000u

/*
 * OHCA_WR_REG_MR: the whole 64-byte WQE (wr_id, opcode and flags where a
 * send WQE has them; only SIGNALED and FENCE are meaningful). The
 * fast-registration MR with index OHCA_KEY_INDEX(key), which must be free
 * and in the QP's PD, becomes valid with key 'key' (its new tag chosen by
 * the driver), 'access' (enum ohca_access; remote write or atomic needs
 * local write), and 'length' bytes at 'iova' translated through the
 * 'npages' (1..the MR's capacity) le64 page addresses at 'pbl_addr'
 * (8-byte aligned, one contiguous list), each aligned to 2^page_shift
 * (12..30); 'iova' lies in page 0 at offset iova & (2^page_shift - 1) and
 * the pages must cover the length. The device copies the list when it
 * executes the WQE.
 */
struct ohca_reg_mr_wqe {
	ohca_le64 wr_id;
	ohca_u8 opcode;			/* OHCA_WR_REG_MR */
	ohca_u8 flags;			/* enum ohca_send_flags */
	ohca_u8 page_shift;
	ohca_u8 rsvd0;
	ohca_le32 key;
	ohca_le64 iova;
	ohca_le64 length;
	ohca_le64 pbl_addr;
	ohca_le32 npages;
	ohca_le32 access;		/* enum ohca_access */
	ohca_le32 rsvd1[4];
};
OHCA_ASSERT_SIZE(struct ohca_reg_mr_wqe, 64);
OHCA_ASSERT_OFFSET(struct ohca_reg_mr_wqe, opcode, 8);
OHCA_ASSERT_OFFSET(struct ohca_reg_mr_wqe, flags, 9);
OHCA_ASSERT_OFFSET(struct ohca_reg_mr_wqe, key, 12);
OHCA_ASSERT_OFFSET(struct ohca_reg_mr_wqe, pbl_addr, 32);
OHCA_ASSERT_OFFSET(struct ohca_reg_mr_wqe, npages, 40);

/*
 * OHCA_WR_BIND_MW (OHCA_DEV_CAP_MW): the whole 64-byte WQE (wr_id, opcode
 * and flags where a send WQE has them; only SIGNALED and FENCE are
 * meaningful), on RC QPs. Executed in SQ order like REG_MR. The window
 * with index OHCA_KEY_INDEX(mw_key), in the QP's PD, is bound to
 * [addr, addr + length) of the MR whose current key is 'mr_lkey' with
 * 'access' (REMOTE_READ, REMOTE_WRITE, REMOTE_ATOMIC; LOCAL_WRITE is
 * accepted and means nothing for a window), and its key becomes 'mw_key'
 * (the tag is the caller's). The MR must be valid, in the QP's PD, have
 * OHCA_ACCESS_MW_BIND, contain the range, and have LOCAL_WRITE if the
 * window grants remote write or atomic access. A type 1 window may be
 * bound again at any time (the old key stops working); length 0 unbinds it
 * (mr_lkey is not looked at then). A type 2 window must be free, length
 * nonzero, and it is then used only through this QP until LOCAL_INV or a
 * SEND with invalidate (on this QP) frees it. Any check failing completes
 * the WQE with OHCA_CQE_MW_BIND_ERR / OHCA_VERR_MW_BIND (LOC_PROT_ERR /
 * BAD_LKEY for a key that names no window) and moves the QP to ERR.
 */
struct ohca_bind_mw_wqe {
	ohca_le64 wr_id;
	ohca_u8 opcode;			/* OHCA_WR_BIND_MW */
	ohca_u8 flags;			/* enum ohca_send_flags */
	ohca_u8 rsvd0[2];
	ohca_le32 mw_key;		/* the window's index and new tag */
	ohca_le64 addr;
	ohca_le64 length;
	ohca_le32 mr_lkey;
	ohca_le32 access;		/* enum ohca_access */
	ohca_le32 rsvd1[6];
};
OHCA_ASSERT_SIZE(struct ohca_bind_mw_wqe, 64);
OHCA_ASSERT_OFFSET(struct ohca_bind_mw_wqe, opcode, 8);
OHCA_ASSERT_OFFSET(struct ohca_bind_mw_wqe, flags, 9);
OHCA_ASSERT_OFFSET(struct ohca_bind_mw_wqe, mw_key, 12);
OHCA_ASSERT_OFFSET(struct ohca_bind_mw_wqe, addr, 16);
OHCA_ASSERT_OFFSET(struct ohca_bind_mw_wqe, length, 24);
OHCA_ASSERT_OFFSET(struct ohca_bind_mw_wqe, mr_lkey, 32);
OHCA_ASSERT_OFFSET(struct ohca_bind_mw_wqe, access, 36);

/* Receive WQE: this header, then num_sge struct ohca_sge. */
struct ohca_recv_wqe {
	ohca_le64 wr_id;
	ohca_u8 num_sge;
	ohca_u8 rsvd[7];
};
OHCA_ASSERT_SIZE(struct ohca_recv_wqe, 16);

/* Completion opcodes. */
enum ohca_cqe_opcode {
	OHCA_CQE_SEND			= 0x00,
	OHCA_CQE_RDMA_WRITE		= 0x01,
	OHCA_CQE_RDMA_READ		= 0x02,
	OHCA_CQE_COMP_SWAP		= 0x03,	/* byte_len 8 (ABI 1.2) */
	OHCA_CQE_FETCH_ADD		= 0x04,	/* byte_len 8 (ABI 1.2) */
	OHCA_CQE_BIND_MW		= 0x05,
	OHCA_CQE_LOCAL_INV		= 0x06,
	OHCA_CQE_REG_MR			= 0x08,
	OHCA_CQE_ATOMIC_WRITE		= 0x09,	/* OHCA_DEV_CAP_ATOMIC_WRITE */
	OHCA_CQE_RECV			= 0x80,
	OHCA_CQE_RECV_RDMA_WITH_IMM	= 0x81,
};

/* Completion status: the IBTA work completion status numbering. */
enum ohca_cqe_status {
	OHCA_CQE_SUCCESS		= 0,
	OHCA_CQE_LOC_LEN_ERR		= 1,
	OHCA_CQE_LOC_QP_OP_ERR		= 2,
	OHCA_CQE_LOC_PROT_ERR		= 4,
	OHCA_CQE_WR_FLUSH_ERR		= 5,
	OHCA_CQE_MW_BIND_ERR		= 6,	/* OHCA_WR_BIND_MW refused */
	OHCA_CQE_BAD_RESP_ERR		= 7,
	OHCA_CQE_LOC_ACCESS_ERR		= 8,
	OHCA_CQE_REM_INV_REQ_ERR	= 9,
	OHCA_CQE_REM_ACCESS_ERR		= 10,
	OHCA_CQE_REM_OP_ERR		= 11,
	OHCA_CQE_RETRY_EXC_ERR		= 12,
	OHCA_CQE_RNR_RETRY_EXC_ERR	= 13,
	OHCA_CQE_FATAL_ERR		= 19,
	OHCA_CQE_GENERAL_ERR		= 21,
};

enum ohca_cqe_flags {
	OHCA_CQE_F_IMM			= 1u << 0,	/* imm_data valid */
	/* (ABI 1.2) UD receives: the buffer starts with the GRH */
	OHCA_CQE_F_GRH			= 1u << 1,
	/* (ABI 1.2) UD receives: the packet was RoCEv2 over IPv4 */
	OHCA_CQE_F_IPV4			= 1u << 2,
	/* (ABI 1.2) A SEND with invalidate received: imm_data holds the invalidated
	 * R_Key as a little-endian number. */
	OHCA_CQE_F_INV			= 1u << 3,
	/* A receive on an XRC SRQ (through an XRC target QP, qpn): src_qp
	 * holds the SRQ's number. */
	OHCA_CQE_F_XRC			= 1u << 4,
	/* (OHCA_DEV_CAP_RSS) A receive on a WQ: qpn is the wqn. */
	OHCA_CQE_F_WQ			= 1u << 5,
};

#define OHCA_CQE_OWNER			0x01

/*
 * Completion queue entry. Ownership works as for EQ entries: the owner bit
 * (last byte) is 1 on the first pass over the ring and flips on every wrap;
 * the device writes it after the rest of the entry. For a send completion,
 * wqe_index is the low 16 bits of the SQ index of the completed WQE, which
 * also retires every unsignaled WQE before it.
 * (1.1 clarification) A send completion's byte_len is the message length.
 * A receive completion's wqe_index is the RQ index of the consumed WQE (the
 * SRQ index for a QP on an SRQ, ABI 1.2) and src_qp the QP's dest_qpn. OHCA_DB_CQ_ARM_NEXT with completions the CQ
 * doorbell has not consumed yet raises the event at once.
 * (ABI 1.2) A UD or GSI receive completion has src_qp from the packet's
 * DETH, flags OHCA_CQE_F_GRH (always) and OHCA_CQE_F_IPV4, byte_len
 * including the 40 GRH bytes, and sl the 802.1Q priority of a tagged frame
 * (0 untagged); the P_Key index is always 0.
 * (ABI 1.5) On an InfiniBand port a successful receive completion of a UD,
 * GSI or SMI QP says where the packet came from as an LRH does: OHCA_CQE_F_GRH
 * only when it had a GRH (byte_len still counts the 40 bytes), sl its LRH
 * service level, the source LID in the top byte of qpn (bits 8..15) and
 * in vendor_err (bits 0..7; a success has no vendor error), and the DLID
 * path bits in the top 7 bits of src_qp (bits 24..30). OHCA_CQE_IB_SLID()
 * and OHCA_CQE_IB_PATH_BITS() read them; the QP numbers are the low 24
 * bits of qpn and src_qp on every port.
 */
struct ohca_cqe {
	ohca_le64 wr_id;
	ohca_le32 byte_len;
	ohca_be32 imm_data;		/* as received (big endian) */
	ohca_le32 qpn;
	ohca_le32 src_qp;
	ohca_u8 opcode;			/* enum ohca_cqe_opcode */
	ohca_u8 status;			/* enum ohca_cqe_status */
	ohca_u8 flags;			/* enum ohca_cqe_flags */
	ohca_u8 sl;			/* UD receives; 0 otherwise */
	ohca_le16 wqe_index;
	ohca_u8 vendor_err;		/* enum ohca_vendor_err */
	ohca_u8 owner;			/* OHCA_CQE_OWNER */
};
OHCA_ASSERT_SIZE(struct ohca_cqe, 32);
OHCA_ASSERT_OFFSET(struct ohca_cqe, opcode, 24);
OHCA_ASSERT_OFFSET(struct ohca_cqe, sl, 27);
OHCA_ASSERT_OFFSET(struct ohca_cqe, wqe_index, 28);
OHCA_ASSERT_OFFSET(struct ohca_cqe, owner, 31);

#define OHCA_CQE_QPN_MASK		0x00ffffffu

/* The IB source of a UD receive (see above), from qpn and src_qp in CPU order. */
#define OHCA_CQE_IB_SLID(qpn, vendor_err) \
	((((qpn) >> 24) << 8) | (vendor_err))
#define OHCA_CQE_IB_PATH_BITS(src_qp)	(((src_qp) >> 24) & 0x7f)

/* Why a completion failed, in more detail than the status. */
enum ohca_vendor_err {
	OHCA_VERR_NONE			= 0,
	OHCA_VERR_BAD_WQE		= 1,	/* opcode, num_sge or lengths */
	OHCA_VERR_BAD_LKEY		= 2,
	OHCA_VERR_LKEY_BOUNDS		= 3,
	OHCA_VERR_LKEY_ACCESS		= 4,
	OHCA_VERR_LKEY_PD		= 5,
	OHCA_VERR_DMA			= 6,	/* guest memory not accessible */
	OHCA_VERR_REMOTE_NAK		= 7,	/* see the status */
	OHCA_VERR_RECV_TOO_SMALL	= 8,
	OHCA_VERR_FLUSH			= 9,
	OHCA_VERR_BAD_AV		= 10,	/* UD: address vector (ABI 1.2) */
	OHCA_VERR_MSG_TOO_LONG		= 11,	/* UD: message over the MTU */
	/* Memory management (REG_MR, LOCAL_INV, remote invalidation): the
	 * MR is not a fast-registration MR, is not free (REG_MR), or the key
	 * is not its current key. */
	OHCA_VERR_MR_STATE		= 12,
	/* REG_MR: page list longer than the MR's capacity, not covering the
	 * length, badly aligned or unreadable; bad access or length. */
	OHCA_VERR_REG_MR		= 13,
	/* BIND_MW: see struct ohca_bind_mw_wqe for the checks. */
	OHCA_VERR_MW_BIND		= 14,
	/* Raw Ethernet: a frame shorter than the 14-byte Ethernet header or
	 * longer than the port MTU plus 18 (header and one VLAN tag); the
	 * status is LOC_LEN_ERR. */
	OHCA_VERR_BAD_FRAME_LEN		= 15,
	/* An ODP MR's page fault could not be resolved (ODP_MAP FAIL). */
	OHCA_VERR_ODP_FAULT		= 16,
};

#endif /* OHCA_QUEUE_H */
