/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * ohca firmware interface: PCI identity, BAR layout and the BAR0 register map.
 * docs/programming-manual.md describes the semantics of every register.
 */
#ifndef OHCA_REGS_H
#define OHCA_REGS_H

#include "ohca_types.h"

/* PCI identity: QEMU's range for experimental devices (docs/specs/pci-ids.txt). */
#define OHCA_PCI_VENDOR_ID		0x1af4
#define OHCA_PCI_DEVICE_ID		0x10f0
#define OHCA_PCI_REVISION		0x01
#define OHCA_PCI_CLASS			0x0200	/* Ethernet controller */
#define OHCA_PCI_SUBSYS_VENDOR_ID	0x1af4
#define OHCA_PCI_SUBSYS_ID		0x0001

/* BARs. BAR0 and BAR2 are 64-bit memory BARs, BAR4 holds MSI-X. */
#define OHCA_BAR_REGS			0
#define OHCA_BAR_DB			2
#define OHCA_BAR_MSIX			4
#define OHCA_REGS_BAR_SIZE		0x4000
#define OHCA_DB_PAGE_SHIFT		12
#define OHCA_DB_PAGE_SIZE		(1u << OHCA_DB_PAGE_SHIFT)
#define OHCA_NUM_DB_PAGES		256	/* page 0 belongs to the kernel */
#define OHCA_DB_BAR_SIZE		(OHCA_NUM_DB_PAGES * OHCA_DB_PAGE_SIZE)
#define OHCA_MSIX_BAR_SIZE		0x1000

/*
 * Device memory (OHCA_DEV_CAP_DM): on-chip memory that BAR2 exposes after
 * its doorbell pages, so BAR2 is twice the doorbell area. ALLOC_DM hands
 * it out in chunks of one page, so the driver can map an allocation, and
 * nothing else, to a process. Guest reads and writes of the window reach
 * the memory directly (any naturally aligned access of 1, 2, 4 or 8
 * bytes); an access outside an allocated chunk reads 0 and is ignored on
 * write (counted in OHCA_REG_ERR_COUNT).
 */
#define OHCA_BAR2_SIZE			(2 * OHCA_DB_BAR_SIZE)
#define OHCA_DM_BAR_OFFSET		OHCA_DB_BAR_SIZE
#define OHCA_DM_CHUNK_SHIFT		12
#define OHCA_DM_CHUNK_SIZE		(1u << OHCA_DM_CHUNK_SHIFT)
#define OHCA_DM_SIZE			(256u * 1024)
#define OHCA_DM_NUM_CHUNKS		(OHCA_DM_SIZE / OHCA_DM_CHUNK_SIZE)
#define OHCA_DM_MAX_ALLOCS		OHCA_DM_NUM_CHUNKS
OHCA_STATIC_ASSERT((OHCA_BAR2_SIZE & (OHCA_BAR2_SIZE - 1)) == 0,
		   "a BAR's size is a power of two");
OHCA_STATIC_ASSERT(OHCA_DM_BAR_OFFSET + OHCA_DM_SIZE <= OHCA_BAR2_SIZE,
		   "device memory must fit in BAR2");
OHCA_STATIC_ASSERT(OHCA_DM_BAR_OFFSET % OHCA_DM_CHUNK_SIZE == 0 &&
		   OHCA_DM_SIZE % OHCA_DM_CHUNK_SIZE == 0,
		   "device memory chunks must be page aligned in BAR2");
OHCA_STATIC_ASSERT(OHCA_DM_CHUNK_SIZE == OHCA_DB_PAGE_SIZE,
		   "a device memory chunk is one page");
#define OHCA_NUM_MSIX			8

/* MSI-X vectors with a fixed role. Vectors 2.. serve completion EQs. */
#define OHCA_MSIX_ASYNC_EQ		0	/* EQ 0: commands, port, errors */
#define OHCA_MSIX_ETH			1	/* Ethernet TX/RX rings */

/* Register values that identify the device and interface revision. */
#define OHCA_MAGIC			0x4143484fu	/* "OHCA" little endian */
#define OHCA_ABI_MAJOR			1
#define OHCA_ABI_MINOR			5
#define OHCA_ABI_VERSION		((OHCA_ABI_MAJOR << 16) | OHCA_ABI_MINOR)
#define OHCA_FW_VERSION(maj, min, sub)	(((maj) << 16) | ((min) << 8) | (sub))

/*
 * BAR0 registers: 32-bit, little endian, accessed with naturally aligned
 * 32-bit reads and writes only. Other widths or offsets read as 0 and are
 * ignored on write (counted in OHCA_REG_ERR_COUNT).
 */
enum ohca_reg {
	/* Identity (read-only). */
	OHCA_REG_MAGIC		= 0x000,
	OHCA_REG_ABI_VERSION	= 0x004,
	OHCA_REG_FW_VERSION	= 0x008,
	OHCA_REG_CAPS		= 0x00c,	/* enum ohca_caps */
	OHCA_REG_NUM_DB_PAGES	= 0x010,
	OHCA_REG_NUM_MSIX	= 0x014,
	OHCA_REG_MAX_CMDQ_LOG	= 0x018,	/* largest log2(entries) */
	OHCA_REG_MAX_EQ_LOG	= 0x01c,

	/* Control and status. */
	OHCA_REG_DEV_CTRL	= 0x020,	/* enum ohca_dev_ctrl, write */
	OHCA_REG_DEV_STATUS	= 0x024,	/* enum ohca_dev_status */
	OHCA_REG_FATAL_CODE	= 0x028,	/* enum ohca_fatal when FATAL */
	OHCA_REG_ERR_COUNT	= 0x02c,	/* rejected register accesses */

	/* Command queue: ring of struct ohca_cmd in guest memory. */
	OHCA_REG_CMDQ_BASE_LO	= 0x040,
	OHCA_REG_CMDQ_BASE_HI	= 0x044,
	OHCA_REG_CMDQ_LOG_SIZE	= 0x048,	/* log2 of the entry count */
	OHCA_REG_CMDQ_PI	= 0x04c,	/* doorbell: producer index */
	OHCA_REG_CMDQ_CI	= 0x050,	/* device consumer index, RO */

	/* Event queue 0 (async EQ on MSI-X vector 0). */
	OHCA_REG_EQ0_BASE_LO	= 0x060,
	OHCA_REG_EQ0_BASE_HI	= 0x064,
	OHCA_REG_EQ0_LOG_SIZE	= 0x068,
	OHCA_REG_EQ0_DB		= 0x06c,	/* consumer index | ARM */

	/* Ethernet path doorbells (rings are set up by commands). */
	OHCA_REG_ETH_TX_PI	= 0x080,	/* producer index */
	OHCA_REG_ETH_RX_PI	= 0x084,
	OHCA_REG_ETH_IRQ_MASK	= 0x088,	/* 1 = masked; write 0 re-arms */

	/* Port status mirror (read-only), for the driver's quick checks. */
	OHCA_REG_PORT_STATUS	= 0x0a0,	/* enum ohca_port_status */
};

/*
 * OHCA_REG_CMDQ_PI, OHCA_REG_EQ0_DB and the Ethernet doorbells carry free
 * running 16-bit indices (bits 15:0); the ring slot is index & (size - 1).
 */
#define OHCA_RING_INDEX_MASK		0xffffu
#define OHCA_EQ_DB_ARM			(1u << 31)

enum ohca_caps {
	OHCA_CAP_ROCE_V2		= 1u << 0,
	OHCA_CAP_ETH			= 1u << 1,
	OHCA_CAP_RESET			= 1u << 2,
	/* UD and GSI QPs, the UD WQE segment and UD CQE fields (ABI 1.2) */
	OHCA_CAP_UD			= 1u << 3,
	/* UC QPs (OHCA_QPT_UC) (ABI 1.2) */
	OHCA_CAP_UC			= 1u << 4,
};

enum ohca_dev_ctrl {
	/* Start processing the command queue (base/size read at this edge). */
	OHCA_DEV_CTRL_ENABLE		= 1u << 0,
	/* Function reset: every resource, ring and register goes back to its
	 * power-on value; DEV_STATUS reads RESET_DONE after it. */
	OHCA_DEV_CTRL_RESET		= 1u << 1,
};

enum ohca_dev_status {
	OHCA_DEV_STATUS_READY		= 1u << 0,	/* command queue running */
	OHCA_DEV_STATUS_FATAL		= 1u << 1,	/* see FATAL_CODE */
	OHCA_DEV_STATUS_RESET_DONE	= 1u << 2,	/* reset completed */
};

enum ohca_fatal {
	OHCA_FATAL_NONE			= 0,
	OHCA_FATAL_CMDQ_DMA		= 1,	/* command ring not readable */
	OHCA_FATAL_EQ_DMA		= 2,	/* EQ 0 not writable */
	OHCA_FATAL_EQ_OVERFLOW		= 3,	/* EQ 0 overran the consumer */
	OHCA_FATAL_BAD_CMDQ_CONFIG	= 4,	/* ENABLE with a bad ring */
};

enum ohca_port_status {
	OHCA_PORT_STATUS_LINK_UP	= 1u << 0,
};

/* Doorbell of completion event queue n (1..max_eq-1), semantics of EQ0_DB;
 * write-only. A write for an EQ that does not exist is ignored and counted
 * in OHCA_REG_ERR_COUNT (1.1 clarification). */
#define OHCA_REG_EQ_DB(n)		(0x400 + 4 * (n))
#define OHCA_MAX_EQ			64

/* Ring size limits enforced by the device. */
#define OHCA_CMDQ_LOG_MIN		1
#define OHCA_CMDQ_LOG_MAX		10
#define OHCA_EQ_LOG_MIN			2
#define OHCA_EQ_LOG_MAX			16
#define OHCA_ETH_RING_LOG_MIN		2
#define OHCA_ETH_RING_LOG_MAX		12

#endif /* OHCA_REGS_H */
