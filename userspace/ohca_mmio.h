/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * Memory ordering and MMIO helpers for the provider's fast path, with the
 * semantics of rdma-core's util/udma_barrier.h and util/mmio.h (which are
 * not installed by distributions).  Every doorbell write and every barrier
 * in libohca goes through these names.
 *
 * x86 (TSO): stores are not reordered with other stores, loads are not
 * reordered with other loads, and UC MMIO stores are not reordered with
 * earlier WB stores.  So ordering host-memory writes before a doorbell
 * needs only a compiler barrier; ordering the read of a CQE owner bit
 * before the reads of the CQE body needs only a compiler barrier too, but
 * rdma-core uses lfence there and so do we; flushing write-combining
 * buffers needs sfence.
 */
#ifndef OHCA_MMIO_H
#define OHCA_MMIO_H

#include <stdint.h>
#include <endian.h>

#if !defined(__x86_64__)
#error "define the barriers for this architecture (see util/udma_barrier.h)"
#endif

/* Order CPU writes to DMA-visible host memory (WQEs) before a following
 * write that tells the device to read them (the doorbell). */
static inline void udma_to_device_barrier(void)
{
	__asm__ volatile("" ::: "memory");
}

/* Order the read of a device-written validity/owner bit before the reads
 * of the rest of that entry. */
static inline void udma_from_device_barrier(void)
{
	__asm__ volatile("lfence" ::: "memory");
}

/* Make earlier MMIO stores (write-combining included) visible to the
 * device before anything that follows. */
static inline void mmio_flush_writes(void)
{
	__asm__ volatile("sfence" ::: "memory");
}

/* Start of a write-combining burst: order host memory before it. */
static inline void mmio_wc_start(void)
{
	mmio_flush_writes();
}

/* One naturally aligned, non-torn little-endian store to device memory.
 * The volatile access keeps the compiler from splitting, merging or
 * dropping it; on x86 a single aligned mov is atomic. */
static inline void mmio_write32(void *addr, uint32_t value)
{
	*(volatile uint32_t *)addr = htole32(value);
}

static inline void mmio_write64(void *addr, uint64_t value)
{
	*(volatile uint64_t *)addr = htole64(value);
}

static inline uint32_t mmio_read32(const void *addr)
{
	return le32toh(*(const volatile uint32_t *)addr);
}

#endif /* OHCA_MMIO_H */
