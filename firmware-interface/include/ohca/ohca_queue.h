/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * ohca firmware interface: entries of the rings the device shares with the
 * driver in guest memory (event queues and the Ethernet rings).
 */
#ifndef OHCA_QUEUE_H
#define OHCA_QUEUE_H

#include "ohca_types.h"

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
	/* code: enum ohca_port_state, param0: port number. */
	OHCA_EQE_PORT_CHANGE		= 2,
	/* code: enum ohca_fatal; the device stops until reset. */
	OHCA_EQE_DEVICE_FATAL		= 3,
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

#endif /* OHCA_QUEUE_H */
