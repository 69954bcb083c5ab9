/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * ohca device engine: the C interface between the QEMU glue (hw/ohca.c)
 * and the C++20 engine that implements the device's behaviour.
 *
 * The engine owns all device state: the BAR0 register file, the command
 * queue, event queue 0, the Ethernet rings, UARs, the GID table and the
 * counters. It never touches guest memory or the network itself; it calls
 * back into its host through struct ohca_engine_ops. Unit tests supply fake
 * guest memory and a fake wire through the same callbacks.
 *
 * Threading: the engine is not thread safe. Every entry point must be
 * called from one thread at a time (in QEMU: under the device's engine
 * lock, docs/architecture.md "Threads"; a doorbell's run without the
 * BQL, so its callbacks may be called without it). Entry points
 * called re-entrantly from inside a callback (e.g. a DMA that hits the
 * device's own BAR) are rejected: register and doorbell accesses are
 * counted as errors, frames are dropped.
 */
#ifndef OHCA_ENGINE_H
#define OHCA_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ohca_engine;

struct ohca_engine_ops {
    /* Copy len bytes of guest memory at addr into buf / from buf.
     * Return 0 on success, nonzero if any byte could not be accessed. */
    int (*dma_read)(void *ctx, uint64_t addr, void *buf, size_t len);
    int (*dma_write)(void *ctx, uint64_t addr, const void *buf, size_t len);
    /* Signal MSI-X vector 'vector' (< OHCA_NUM_MSIX). */
    void (*raise_irq)(void *ctx, unsigned int vector);
    /* Put one Ethernet frame (no FCS) on the wire. */
    void (*transmit)(void *ctx, const uint8_t *frame, size_t len);
    /* Ask the host to call ohca_engine_process() soon, from a context where
     * no engine entry point is active (a QEMU bottom half). */
    void (*schedule)(void *ctx);
    /* The engine can take frames it refused with OHCA_ENGINE_RX_RETRY:
     * the host should deliver its queued frames again. Called from
     * ohca_engine_process() after the engine has left its critical section,
     * so the host may call ohca_engine_receive_frame() from it. */
    void (*rx_resume)(void *ctx);
    /* Optional (may be NULL; added with the RDMA transport). now_ns: a
     * monotonic clock in nanoseconds, the time base of the transport's
     * timers (local ACK timeout, RNR wait). set_timer: call
     * ohca_engine_process() once the clock reaches deadline_ns; a new
     * deadline replaces the previous one, 0 cancels. Without them the
     * transport never retransmits on timeout. */
    uint64_t (*now_ns)(void *ctx);
    void (*set_timer)(void *ctx, uint64_t deadline_ns);
    /* Optional (may be NULL): one call per thing the engine did, for the
     * host's tracing (QEMU: the ohca_* trace events). The arguments per
     * kind are in enum ohca_engine_trace_kind. Called synchronously from
     * inside the engine: it must not call back into it. */
    void (*trace)(void *ctx, unsigned int kind, uint32_t a, uint32_t b, uint32_t c, uint64_t d);
    /* Optional (may be NULL): dma_write of len bytes at addr in which the
     * bytes [last_off, last_off + last_len) become visible to the guest's
     * CPUs no earlier than all the others (a CQE's owner byte after its
     * body), for one callback where the engine would otherwise make two
     * dma_write calls, the rest first. The range lies within one page of
     * the engine's page lists (4 KiB aligned at least). Returns as
     * dma_write; on failure the guest may see any part written. */
    int (*dma_write_ordered)(void *ctx, uint64_t addr, const void *buf, size_t len, size_t last_off,
                             size_t last_len);
};

enum ohca_engine_trace_kind {
    /* a command completed: a opcode, b status, c syndrome */
    OHCA_ENGINE_TRACE_CMD = 0,
    /* an event queue entry on EQ 0: a type, b code, c param0, d param1 */
    OHCA_ENGINE_TRACE_EQE = 1,
    /* a CQE written: a cqn, b qpn, c opcode << 8 | status, d wr_id */
    OHCA_ENGINE_TRACE_CQE = 2,
    /* a send WQE taken for execution: a qpn, b WQE index, c opcode */
    OHCA_ENGINE_TRACE_WQE = 3,
    /* an RC requester's wait decided (rare: not per packet): a qpn, b enum
     * ohca_engine_rc_event | reason << 8 (a timeout's: enum
     * ohca_engine_rc_timeout), c the retransmission timeout in force after
     * it (us), d for a timer's expiry how late it ran (ns past its deadline:
     * the host's stall), else 0 */
    OHCA_ENGINE_TRACE_RC = 4,
};

enum ohca_engine_rc_event {
    OHCA_ENGINE_RC_TLP = 0,          /* a tail-loss probe sent */
    OHCA_ENGINE_RC_TIMEOUT = 1,      /* a timeout: a go-back from the oldest */
    OHCA_ENGINE_RC_CREDIT_ASK = 2,   /* no credit update in time: an ACK asked */
    OHCA_ENGINE_RC_CREDIT_PROBE = 3, /* a message past the credit limit */
    OHCA_ENGINE_RC_SPURIOUS = 4,     /* a timeout undone (F-RTO) */
    OHCA_ENGINE_RC_TLP_ANSWERED = 5, /* progress with a probe out */
};

/* Why a timer's expiry was a timeout and no probe (QUERY_STATS rc_timeouts_*) */
enum ohca_engine_rc_timeout {
    OHCA_ENGINE_RC_AFTER_PROBE = 1,
    OHCA_ENGINE_RC_FULL = 2,
    OHCA_ENGINE_RC_FRTO = 3,
    OHCA_ENGINE_RC_RECOVERY = 4,
    OHCA_ENGINE_RC_GOBACK = 5,
    OHCA_ENGINE_RC_READ = 6,
};

struct ohca_engine_config {
    uint8_t mac[6];
    uint64_t node_guid;
    uint64_t sys_image_guid;
    bool link_up; /* initial link state */
    /* Where MR key tags and QP numbers start (the host passes a random
     * value; tests 0). They then carry on across resets, so a peer's keys
     * and QPNs from before a reset do not name the new objects. */
    uint32_t id_seed;
    /* QPs the device offers (QUERY_DEVICE max_qp, QPNs 2..max_qp+1):
     * 0 is OHCA_ENGINE_DEFAULT_MAX_QP; more than OHCA_ENGINE_MAX_QP fails
     * ohca_engine_create(). The device's host memory grows by 16 bytes per
     * QP it may have (tables) and by what each QP holds (docs/bench.md). */
    uint32_t max_qp;
    /* The port's link layer: enum ohca_link_layer (ohca_cmd.h), 0 is
     * Ethernet (RoCEv2). On an InfiniBand port frames are raw IB packets
     * (LRH first, no Ethernet header; 6 bytes: a flow control packet). */
    uint8_t link_layer;
    /* InfiniBand: the port GUID; 0 takes node_guid. */
    uint64_t port_guid;
    /* An Ethernet port's speed in Mbit/s, the link's (a switch port's line
     * rate): what ethtool shows, the time of a pause quantum, DCQCN's line
     * rate. 0 is OHCA_ENGINE_DEFAULT_SPEED_MBPS; outside
     * OHCA_ENGINE_MIN/MAX_SPEED_MBPS fails ohca_engine_create(). */
    uint32_t speed_mbps;
    /* An Ethernet port's transmit pacing: 0, not paced (frames leave as
     * fast as the engine makes them: unit tests whose clock stands still);
     * otherwise the port sends at speed_mbps with bursts of at most this
     * many bytes, as a NIC's MAC does (docs/congestion.md).
     * OHCA_ENGINE_MIN/MAX_TX_BURST bound it; outside fails
     * ohca_engine_create(). No effect on an InfiniBand port (its link's
     * credits pace it). */
    uint32_t tx_burst_bytes;
};

#define OHCA_ENGINE_DEFAULT_SPEED_MBPS 10000u
#define OHCA_ENGINE_MIN_SPEED_MBPS 10u
#define OHCA_ENGINE_MAX_SPEED_MBPS 400000u
/* Two of the longest frames, and 16 MiB. */
#define OHCA_ENGINE_MIN_TX_BURST 8704u
#define OHCA_ENGINE_MAX_TX_BURST (16u << 20)
/* QEMU: 100 us of the line, at least this (the pace property). */
#define OHCA_ENGINE_DEFAULT_TX_BURST 16384u

#define OHCA_ENGINE_DEFAULT_MAX_QP 1024u
#define OHCA_ENGINE_MAX_QP 65536u

enum ohca_engine_rx_result {
    OHCA_ENGINE_RX_CONSUMED = 0, /* delivered or dropped (counted) */
    OHCA_ENGINE_RX_RETRY = 1,    /* no RX descriptor: hold and retry */
};

/* Returns NULL if ops lacks a callback or allocation fails. The engine
 * starts in its power-on state (as after OHCA_DEV_CTRL_RESET). */
struct ohca_engine *ohca_engine_create(const struct ohca_engine_ops *ops, void *ctx,
                                       const struct ohca_engine_config *cfg);
void ohca_engine_destroy(struct ohca_engine *e);

/* BAR0 access of 'size' bytes (1, 2, 4 or 8) at 'offset'. Only aligned
 * 32-bit accesses are valid; others read 0 / are ignored, and counted. */
uint64_t ohca_engine_reg_read(struct ohca_engine *e, uint64_t offset, unsigned int size);
void ohca_engine_reg_write(struct ohca_engine *e, uint64_t offset, uint64_t value,
                           unsigned int size);

/* BAR2 doorbell write: 'page' < OHCA_NUM_DB_PAGES, 'offset' within it. */
void ohca_engine_db_write(struct ohca_engine *e, uint32_t page, uint32_t offset, uint64_t value,
                          unsigned int size);

/* The same doorbell write, and then, before returning, at most 'budget'
 * units of the work it made (a unit is a packet or WQE sent, or a frame
 * received or looped back) and at most 50 us of the host's clock
 * (now_ns): the rung QP's send queue first, then the packets it
 * looped back and what they answer, in the order ohca_engine_process()
 * would take them. What is left waits for ohca_engine_process() (the
 * engine calls schedule() for it); when nothing is left, the doorbell
 * asks for nothing. A doorbell that gives no QP work (CQ doorbells, one
 * that is refused) does only what ohca_engine_db_write() does. For hosts
 * that want a doorbell's first packets on the wire before the MMIO write
 * returns (QEMU: in the vCPU thread, under the engine lock). */
void ohca_engine_doorbell_fast(struct ohca_engine *e, uint32_t page, uint32_t offset,
                               uint64_t value, unsigned int size, unsigned int budget);

/* BAR2 device memory window: 'offset' from OHCA_DM_BAR_OFFSET, 'size' 1, 2,
 * 4 or 8. Naturally aligned accesses inside an allocation reach the memory;
 * others read 0 / are ignored, and counted. */
uint64_t ohca_engine_dm_read(struct ohca_engine *e, uint64_t offset, unsigned int size);
void ohca_engine_dm_write(struct ohca_engine *e, uint64_t offset, uint64_t value,
                          unsigned int size);

/* A frame from the wire (no FCS). */
enum ohca_engine_rx_result ohca_engine_receive_frame(struct ohca_engine *e, const uint8_t *frame,
                                                     size_t len);
void ohca_engine_set_link(struct ohca_engine *e, bool up);

/* Function-level reset: back to the power-on state; the link state, MAC
 * and GUIDs (properties of the wire and the board) are kept. */
void ohca_engine_reset(struct ohca_engine *e);

/* Host memory the engines of this process hold on the heap, in bytes
 * (every C++ allocation: in QEMU, the devices' own memory). 0 when built
 * with AddressSanitizer, whose allocator keeps its own checks. */
uint64_t ohca_engine_heap_bytes(void);

/* Drain pending work (command queue, Ethernet TX, the RDMA transport:
 * received RoCE frames, send queues, expired timers). */
void ohca_engine_process(struct ohca_engine *e);

/* The engine's whole state as a byte stream, for migration and snapshots
 * (docs/migration.md): registers, queues, every object with its transport
 * state, counters; timers as the time they have left on now_ns. Call it
 * between two engine entry points (in QEMU: under the engine lock,
 * outside the engine), where no work request is half executed. Frames in flight and
 * received frames waiting for a run are not part of it: RC recovers them
 * as from a loss. On success returns 0 and *buf (free it with
 * ohca_engine_state_free()) of *len bytes. Fails (-1, a reason in err,
 * err_len bytes at most, NUL-terminated) when called from inside a
 * callback, on an InfiniBand port, with ODP MRs, or out of memory. */
int ohca_engine_save(struct ohca_engine *e, uint8_t **buf, size_t *len, char *err, size_t err_len);
void ohca_engine_state_free(uint8_t *buf);

/* The longest stream ohca_engine_load() takes. */
#define OHCA_ENGINE_STATE_MAX (96u << 20)

/* Replaces the engine's state with a stream ohca_engine_save() made on an
 * engine of the same configuration (MAC, GUIDs, max_qp, link layer; not
 * id_seed). The stream is hostile input: every field is checked as the
 * command that set it would check it, and what it makes the engine hold
 * is bounded by the device's limits. Timers are re-armed (set_timer) and a
 * run is asked for (schedule). Returns 0, or -1 with a reason in err; the
 * engine is then in its power-on state. Not from inside a callback. */
int ohca_engine_load(struct ohca_engine *e, const uint8_t *buf, size_t len, char *err,
                     size_t err_len);

#ifdef __cplusplus
}
#endif

#endif /* OHCA_ENGINE_H */
