/*
 * ohca: an emulated RoCEv2 RDMA NIC (PCI function, BARs, MSI-X, netdev).
 *
 * This file is the QEMU glue only. The device's behaviour - registers,
 * command queue, event queues, Ethernet rings, RoCE classification - lives
 * in the C++ engine behind engine/include/ohca_engine.h; the glue gives it
 * DMA through pci_dma_read/pci_dma_write, MSI-X, the netdev and a bottom
 * half, and forwards BAR accesses and received frames.
 *
 * The contract with drivers is firmware-interface/include/ohca/ and
 * docs/programming-manual.md.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/module.h"
#include "qemu/range.h"
#include "qemu/main-loop.h"
#include "qemu/timer.h"
#include "qemu/guest-random.h"
#include "qemu/error-report.h"
#include "qemu/thread.h"
#include "qemu/units.h"
#include "qemu/queue.h"
#include "qemu/host-utils.h"
#include "qemu/processor.h"
#include "hw/core/cpu.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "hw/pci/pci.h"
#include "hw/pci/msix.h"
#include "migration/vmstate.h"
#include "net/net.h"
#include "qom/object.h"
#include "trace.h"
#include "ohca-compat.h"

#include "ohca/ohca_queue.h"
#include "ohca/ohca_regs.h"
#include "ohca_engine.h"

#define TYPE_OHCA "ohca"
OBJECT_DECLARE_SIMPLE_TYPE(OhcaState, OHCA)

/* MSI-X table and PBA share BAR4. */
#define OHCA_MSIX_TABLE_OFFSET  0x000
#define OHCA_MSIX_PBA_OFFSET    0x800

/*
 * Frames the engine made in a doorbell's run without the BQL wait here
 * for a BQL holder to send them, in order. The run is bounded (at most
 * doorbell-budget units and 50 us), and so is this queue: beyond it a
 * frame is dropped and counted (x-deferred-drops), a loss RC recovers.
 */
#define OHCA_TXQ_MAX_FRAMES     512
#define OHCA_TXQ_MAX_BYTES      (4 * MiB)

typedef struct OhcaFrame {
    QSIMPLEQ_ENTRY(OhcaFrame) next;
    size_t len;
    uint8_t data[];
} OhcaFrame;

struct OhcaState {
    PCIDevice parent_obj;

    /*
     * The engine lock: every engine entry point runs under it. Lock
     * order: BQL -> engine lock, and the engine lock is a leaf: while it
     * is held nothing waits for the BQL or another lock (DMA is to guest
     * RAM only, without the BQL; MSI-X, frames sent without the BQL and
     * rx_resume are deferred to a BQL holder). owner is the holding
     * thread's ohca_self, so that an engine callback reaching the device
     * again (a frame looped through a hub, an access to its own BAR) is
     * refused instead of deadlocking. Guards everything below up to the
     * counters.
     */
    QemuMutex lock;
    void *owner;
    QSIMPLEQ_HEAD(, OhcaFrame) txq;
    uint32_t txq_frames;
    size_t txq_bytes;
    uint32_t irq_pending;       /* deferred MSI-X vectors (atomic) */
    bool rx_resume_pending;     /* atomic */
    /*
     * Without a vIOMMU: DMA reaches guest RAM only (never MMIO, so never
     * the BQL) and doorbells run their work without the BQL. Behind one,
     * everything stays under the BQL (its fault reporting interrupts).
     */
    bool lockless;

    /*
     * x-lock-waits, x-lock-sleeps, x-lock-wait-max-ns, x-deferred-drops
     * (atomic)
     */
    uint64_t lock_waits;
    uint64_t lock_sleeps;
    uint64_t lock_wait_max_ns;
    uint64_t deferred_drops;

    MemoryRegion regs;
    MemoryRegion db;
    MemoryRegion msix;

    NICConf conf;
    NICState *nic;
    QEMUBH *bh;
    QEMUTimer *timer;           /* the transport's ACK/RNR deadline */
    uint64_t timer_want;        /* the engine's deadline (atomic), 0: none */
    VMChangeStateEntry *vmstate_change;
    struct ohca_engine *engine;

    uint64_t node_guid;
    uint64_t sys_image_guid;
    uint64_t port_guid;         /* InfiniBand: 0 takes node-guid */
    char *link_layer;           /* "eth" (default) or "ib" */
    bool sync_doorbells;        /* run a doorbell's work in its thread */
    uint32_t doorbell_budget;   /* ... at most this many units of it */
    bool unlock_bql;            /* ... without the BQL (x-unlock-bql) */
    uint32_t lock_spin_ns;      /* engine lock: spin before sleeping */
    uint32_t max_qp;            /* QPs offered (QUERY_DEVICE max_qp) */
    uint32_t speed;             /* Ethernet: the link's Mbit/s */
    bool pace;                  /* Ethernet: transmit at the link's speed */
    uint32_t tx_burst;          /* ... in bursts of this many bytes (0: auto) */

    uint8_t af_cap;             /* config offset of the AF capability */

    /* The engine's saved state while the vmstate is saved or loaded. */
    uint8_t *state;
    uint32_t state_len;
};

/* ---- the engine lock --------------------------------------------------- */

/* This thread's identity for OhcaState.owner. */
static __thread char ohca_self;
/* How many ohca entry points this thread is inside (any device). */
static __thread unsigned int ohca_depth;

static void ohca_note_wait(OhcaState *s, int64_t ns)
{
    uint64_t max = qatomic_read(&s->lock_wait_max_ns);

    qatomic_inc(&s->lock_waits);
    while (ns > max) {
        uint64_t seen = qatomic_cmpxchg(&s->lock_wait_max_ns, max, ns);

        if (seen == max) {
            break;
        }
        max = seen;
    }
}

/*
 * Takes the engine lock; false (and nothing taken) when this thread holds
 * it already: an engine callback has reached the device again, which the
 * caller refuses as the engine refuses re-entered entry points. A holder
 * never waits for anything, so the wait is bounded by its run (200 us at
 * most for the bottom half, 50 us for a doorbell, a few us typically).
 * So a waiter spins first, up to x-lock-spin-ns: sleeping on the mutex
 * costs a futex wait and wake, and on a busy host the woken thread waits
 * for a core (a vCPU whose guest polls for the holder's completion, or
 * the main loop with the BQL held). Only then does it sleep.
 */
static bool ohca_lock(OhcaState *s)
{
    int64_t start, now;

    if (qatomic_read(&s->owner) == &ohca_self) {
        trace_ohca_reentered();
        return false;
    }
    if (qemu_mutex_trylock(&s->lock)) {
        start = get_clock();
        do {
            cpu_relax();
            now = get_clock();
            if (!qatomic_read(&s->owner) && !qemu_mutex_trylock(&s->lock)) {
                goto locked;
            }
        } while (now - start < s->lock_spin_ns);
        qatomic_inc(&s->lock_sleeps);
        qemu_mutex_lock(&s->lock);
        now = get_clock();
locked:
        ohca_note_wait(s, now - start);
    }
    qatomic_set(&s->owner, &ohca_self);
    return true;
}

static void ohca_unlock(OhcaState *s)
{
    qatomic_set(&s->owner, NULL);
    qemu_mutex_unlock(&s->lock);
}

static void ohca_send_frame(OhcaState *s, const uint8_t *frame, size_t len)
{
    trace_ohca_tx(len);
    qemu_send_packet(qemu_get_queue(s->nic), frame, len);
}

/* With the engine lock and the BQL held: the deferred frames, in order. */
static void ohca_send_deferred_locked(OhcaState *s)
{
    OhcaFrame *f;

    while ((f = QSIMPLEQ_FIRST(&s->txq))) {
        QSIMPLEQ_REMOVE_HEAD(&s->txq, next);
        qatomic_set(&s->txq_frames, s->txq_frames - 1);
        s->txq_bytes -= f->len;
        ohca_send_frame(s, f->data, f->len);
        g_free(f);
    }
}

static void ohca_drop_deferred_locked(OhcaState *s)
{
    OhcaFrame *f;

    while ((f = QSIMPLEQ_FIRST(&s->txq))) {
        QSIMPLEQ_REMOVE_HEAD(&s->txq, next);
        g_free(f);
    }
    qatomic_set(&s->txq_frames, 0);
    s->txq_bytes = 0;
    qatomic_set(&s->irq_pending, 0);
}

static void ohca_deliver_irqs(OhcaState *s)
{
    PCIDevice *d = PCI_DEVICE(s);
    uint32_t pending = qatomic_xchg(&s->irq_pending, 0);

    while (pending) {
        unsigned int vector = ctz32(pending);
        bool deliver = msix_enabled(d);

        pending &= pending - 1;
        trace_ohca_irq(vector, deliver);
        if (deliver) {
            msix_notify(d, vector);
        }
    }
}

/*
 * What the engine deferred, delivered by a BQL holder with the engine
 * lock released: MSI-X vectors and frames (queued by a doorbell's run
 * without the BQL). Without the BQL: left to the bottom half.
 */
static void ohca_flush_deferred(OhcaState *s)
{
    if (!bql_locked()) {
        if (qatomic_read(&s->irq_pending) || qatomic_read(&s->txq_frames)) {
            qemu_bh_schedule(s->bh);
        }
        return;
    }
    ohca_depth++;
    if (qatomic_read(&s->txq_frames) && ohca_lock(s)) {
        ohca_send_deferred_locked(s);
        ohca_unlock(s);
    }
    ohca_deliver_irqs(s);
    ohca_depth--;
}

/*
 * Around an engine entry point: the engine lock (false: refused, see
 * ohca_lock), then what the entry deferred.
 */
static bool ohca_enter(OhcaState *s)
{
    if (!ohca_lock(s)) {
        return false;
    }
    if (!s->engine) { /* an access racing the device's unplug */
        ohca_unlock(s);
        return false;
    }
    ohca_depth++;
    return true;
}

static void ohca_leave(OhcaState *s)
{
    ohca_unlock(s);
    ohca_flush_deferred(s);
    ohca_depth--;
}

/* ---- engine callbacks (the engine lock held) ---------------------------- */

/*
 * Guest RAM through the bus master address space, without the BQL: a
 * MemoryRegionCache per contiguous piece (its region referenced, so a
 * concurrent change of the memory map cannot free it). A write is followed
 * by address_space_cache_invalidate, which marks the pages dirty (for
 * migration) and invalidates translated code, as pci_dma_write does:
 * address_space_write_cached itself does neither.
 * Anything but RAM (MMIO, ROM for a write, no mapping, bus mastering off)
 * is refused: its access would take the BQL with the engine lock held.
 */
static int ohca_ram_rw(OhcaState *s, uint64_t addr, void *buf, size_t len,
                       bool is_write)
{
    AddressSpace *as = pci_get_address_space(PCI_DEVICE(s));
    uint8_t *p = buf;

    while (len) {
        MemoryRegionCache cache = MEMORY_REGION_CACHE_INVALID;
        int64_t l = address_space_cache_init(&cache, as, addr, len, is_write);
        bool ram = l > 0 && cache.ptr;

        if (ram && is_write) {
            address_space_write_cached(&cache, 0, p, l);
            /* the cache's write leaves the dirty bitmaps to its user */
            address_space_cache_invalidate(&cache, 0, l);
        } else if (ram) {
            address_space_read_cached(&cache, 0, p, l);
        }
        address_space_cache_destroy(&cache);
        if (!ram) {
            trace_ohca_dma_error(addr, len, is_write);
            return -1;
        }
        addr += l;
        p += l;
        len -= l;
    }
    return 0;
}

static int ohca_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
    OhcaState *s = opaque;

    if (s->lockless) {
        return ohca_ram_rw(s, addr, buf, len, false);
    }
    if (pci_dma_read(PCI_DEVICE(s), addr, buf, len) != MEMTX_OK) {
        trace_ohca_dma_error(addr, len, 0);
        return -1;
    }
    return 0;
}

static int ohca_dma_write(void *opaque, uint64_t addr, const void *buf,
                          size_t len)
{
    OhcaState *s = opaque;

    if (s->lockless) {
        return ohca_ram_rw(s, addr, (void *)buf, len, true);
    }
    if (pci_dma_write(PCI_DEVICE(s), addr, buf, len) != MEMTX_OK) {
        trace_ohca_dma_error(addr, len, 1);
        return -1;
    }
    return 0;
}

/*
 * A CQE in one DMA with its owner byte (the bytes [last_off, last_off +
 * last_len)) visible after the rest: the rest is copied, then smp_wmb(),
 * then the last part (a polling vCPU that sees the owner byte then sees
 * the body: it reads the owner, then the body after a read barrier).
 * Without a vIOMMU through one MemoryRegionCache, RAM only as every DMA;
 * behind one, pci_dma_map goes through the IOMMU as pci_dma_write does,
 * and the unmap with access_len = len marks the pages dirty (migration)
 * and invalidates translated code. A range that is not plain RAM in one
 * mapping takes the ordinary writes, rest first (refused without a
 * vIOMMU), so errors are reported as before.
 */
static int ohca_dma_write_ordered(void *opaque, uint64_t addr, const void *buf,
                                  size_t len, size_t last_off, size_t last_len)
{
    OhcaState *s = opaque;
    PCIDevice *d = PCI_DEVICE(s);
    const uint8_t *p = buf;
    size_t after = last_off + last_len;

    if (s->lockless) {
        MemoryRegionCache cache = MEMORY_REGION_CACHE_INVALID;
        int64_t l = address_space_cache_init(&cache, pci_get_address_space(d),
                                             addr, len, true);
        bool ram = l == len && cache.ptr;

        if (ram) {
            /* (the cache refuses empty accesses at its end) */
            if (last_off) {
                address_space_write_cached(&cache, 0, p, last_off);
            }
            if (len > after) {
                address_space_write_cached(&cache, after, p + after,
                                           len - after);
            }
            smp_wmb(); /* the rest is visible before the owner byte */
            if (last_len) {
                address_space_write_cached(&cache, last_off, p + last_off,
                                           last_len);
            }
            address_space_cache_invalidate(&cache, 0, len);
        }
        address_space_cache_destroy(&cache);
        if (ram) {
            return 0;
        }
    } else {
        dma_addr_t plen = len;
        ram_addr_t ram_off;
        uint8_t *host = pci_dma_map(d, addr, &plen, DMA_DIRECTION_FROM_DEVICE);

        if (host && plen == len && memory_region_from_host(host, &ram_off)) {
            memcpy(host, p, last_off);
            memcpy(host + after, p + after, len - after);
            smp_wmb(); /* the rest is visible before the owner byte */
            memcpy(host + last_off, p + last_off, last_len);
            pci_dma_unmap(d, host, plen, DMA_DIRECTION_FROM_DEVICE, len);
            return 0;
        }
        if (host) {
            pci_dma_unmap(d, host, plen, DMA_DIRECTION_FROM_DEVICE, 0);
        }
    }
    if (last_off && ohca_dma_write(s, addr, p, last_off)) {
        return -1;
    }
    if (len > after &&
        ohca_dma_write(s, addr + after, p + after, len - after)) {
        return -1;
    }
    if (last_len &&
        ohca_dma_write(s, addr + last_off, p + last_off, last_len)) {
        return -1;
    }
    return 0;
}

/*
 * MSI-X is deferred to when the engine lock is released (a BQL holder
 * delivers it, ohca_flush_deferred): msix_notify writes through the bus
 * master address space, which takes the BQL, and may reach the device's
 * own BAR. The device signals through MSI-X only.
 */
static void ohca_raise_irq(void *opaque, unsigned int vector)
{
    OhcaState *s = opaque;

    if (vector < OHCA_NUM_MSIX) {
        qatomic_or(&s->irq_pending, 1u << vector);
    }
}

/*
 * With the BQL: sent at once, after the frames deferred before it (an
 * answer that comes back inside qemu_send_packet finds the engine lock
 * held and waits in QEMU's queue, ohca_receive). Without the BQL (a
 * doorbell's run): queued for a BQL holder.
 */
static void ohca_transmit(void *opaque, const uint8_t *frame, size_t len)
{
    OhcaState *s = opaque;
    OhcaFrame *f;

    if (bql_locked()) {
        ohca_send_deferred_locked(s);
        ohca_send_frame(s, frame, len);
        return;
    }
    if (s->txq_frames >= OHCA_TXQ_MAX_FRAMES ||
        s->txq_bytes + len > OHCA_TXQ_MAX_BYTES) {
        qatomic_inc(&s->deferred_drops);
        trace_ohca_tx_deferred(len, s->txq_frames, true);
        return;
    }
    f = g_malloc(sizeof(*f) + len);
    f->len = len;
    memcpy(f->data, frame, len);
    QSIMPLEQ_INSERT_TAIL(&s->txq, f, next);
    qatomic_set(&s->txq_frames, s->txq_frames + 1);
    s->txq_bytes += len;
    trace_ohca_tx_deferred(len, s->txq_frames, false);
}

/* qemu_bh_schedule is thread safe. */
static void ohca_schedule(void *opaque)
{
    OhcaState *s = opaque;

    qemu_bh_schedule(s->bh);
}

/*
 * qemu_flush_queued_packets delivers to ohca_receive, which takes the
 * engine lock: the bottom half does it, after its run.
 */
static void ohca_rx_resume(void *opaque)
{
    OhcaState *s = opaque;

    qatomic_set(&s->rx_resume_pending, true);
    qemu_bh_schedule(s->bh);
}

/*
 * Transport timers run on the VM's virtual clock: it stops while the VM is
 * paused (stop, migration, snapshot), so a paused guest sees no ACK timeout
 * expire and no retry counted against it. The deadline only makes the
 * bottom half run.
 */
static uint64_t ohca_now_ns(void *opaque)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

/*
 * The engine moves its deadline with almost every doorbell (an ACK
 * deadline set, then met). A QEMU timer that becomes the earliest wakes
 * the main loop (qemu_notify_event), which then takes the BQL: per
 * doorbell, the vCPU's next MMIO would wait for it. So the timer is only
 * ever brought forward here: a later deadline, or none, leaves it as it
 * is, and when it fires early ohca_timer_cb re-arms it for the deadline
 * wanted then (timer_want). Both only ever bring it forward
 * (timer_mod_anticipate, atomic under the timer list's lock). Store
 * timer_want, then arm; the callback runs once the timer is no longer
 * pending, then reads timer_want: either it sees the new deadline or the
 * new deadline found the timer not pending and armed it.
 */
static void ohca_set_timer(void *opaque, uint64_t deadline_ns)
{
    OhcaState *s = opaque;

    trace_ohca_timer(deadline_ns);
    qatomic_set(&s->timer_want, deadline_ns);
    smp_mb(); /* timer_want stored before the timer is read: see above */
    if (deadline_ns) {
        timer_mod_anticipate(s->timer, deadline_ns);
    }
}

/* The engine's own events (enum ohca_engine_trace_kind) as trace events. */
static void ohca_trace(void *opaque, unsigned int kind, uint32_t a,
                       uint32_t b, uint32_t c, uint64_t d)
{
    switch (kind) {
    case OHCA_ENGINE_TRACE_CMD:
        trace_ohca_cmd(a, b, c);
        break;
    case OHCA_ENGINE_TRACE_EQE:
        trace_ohca_eqe(a, b, c, d);
        break;
    case OHCA_ENGINE_TRACE_CQE:
        trace_ohca_cqe(a, b, c >> 8, c & 0xff, d);
        break;
    case OHCA_ENGINE_TRACE_WQE:
        trace_ohca_wqe(a, b, c);
        break;
    case OHCA_ENGINE_TRACE_RC:
        trace_ohca_rc(a, b & 0xff, b >> 8, c, d / 1000);
        break;
    }
}

static void ohca_timer_cb(void *opaque)
{
    OhcaState *s = opaque;
    uint64_t want;

    smp_mb(); /* the timer is no longer pending: see ohca_set_timer */
    want = qatomic_read(&s->timer_want);
    if (!want) {
        return;
    }
    if (want > (uint64_t)qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL)) {
        timer_mod_anticipate(s->timer, want);
        return;
    }
    qemu_bh_schedule(s->bh);
}

static const struct ohca_engine_ops ohca_engine_ops = {
    .dma_read = ohca_dma_read,
    .dma_write = ohca_dma_write,
    .raise_irq = ohca_raise_irq,
    .transmit = ohca_transmit,
    .schedule = ohca_schedule,
    .rx_resume = ohca_rx_resume,
    .now_ns = ohca_now_ns,
    .set_timer = ohca_set_timer,
    .trace = ohca_trace,
    .dma_write_ordered = ohca_dma_write_ordered,
};

/*
 * Command queue and TX doorbells only schedule this; the work runs here.
 * Not while the VM is stopped: the device then writes no guest memory (a
 * snapshot's RAM is written with the main loop running), and its queued
 * work waits for the VM to run again (ohca_vm_state_change).
 */
static void ohca_bh(void *opaque)
{
    OhcaState *s = opaque;
    int64_t start;

    if (runstate_is_running() && ohca_enter(s)) {
        start = trace_event_get_state_backends(TRACE_OHCA_RUN) ?
                get_clock() : 0;
        ohca_engine_process(s->engine);
        if (start) {
            trace_ohca_run(get_clock() - start);
        }
        ohca_leave(s);
    } else {
        ohca_flush_deferred(s);
    }
    if (qatomic_xchg(&s->rx_resume_pending, false)) {
        qemu_flush_queued_packets(qemu_get_queue(s->nic));
    }
}

/*
 * Stopping: the vCPUs are paused, so no doorbell runs; what the last runs
 * deferred is delivered now, before the device's and the interrupt
 * controllers' state is saved.
 */
static void ohca_vm_state_change(void *opaque, bool running, RunState state)
{
    OhcaState *s = opaque;

    trace_ohca_vm_running(running);
    if (running) {
        qemu_bh_schedule(s->bh);
    } else {
        ohca_flush_deferred(s);
    }
}

/* ---- BARs ------------------------------------------------------------- */

static uint64_t ohca_regs_read(void *opaque, hwaddr addr, unsigned size)
{
    OhcaState *s = opaque;
    uint64_t val = 0;

    if (ohca_enter(s)) {
        val = ohca_engine_reg_read(s->engine, addr, size);
        ohca_leave(s);
    }
    trace_ohca_reg_read(addr, size, val);
    return val;
}

static void ohca_regs_write(void *opaque, hwaddr addr, uint64_t val,
                            unsigned size)
{
    OhcaState *s = opaque;

    trace_ohca_reg_write(addr, size, val);
    if (ohca_enter(s)) {
        ohca_engine_reg_write(s->engine, addr, val, size);
        ohca_leave(s);
    }
}

/*
 * Every width and alignment reaches the engine, which accepts aligned
 * 32-bit accesses only and counts the rest in ERR_COUNT.
 */
static const MemoryRegionOps ohca_regs_ops = {
    .read = ohca_regs_read,
    .write = ohca_regs_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
    .impl = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
};

/*
 * BAR2: doorbell pages (write-only), then the device memory window. The
 * engine checks every device memory access against its allocations.
 */
static uint64_t ohca_db_read(void *opaque, hwaddr addr, unsigned size)
{
    OhcaState *s = opaque;
    uint64_t val = 0;

    if (addr >= OHCA_DM_BAR_OFFSET && ohca_enter(s)) {
        val = ohca_engine_dm_read(s->engine, addr - OHCA_DM_BAR_OFFSET, size);
        ohca_leave(s);
    }
    return val;
}

/*
 * Whether this doorbell may let go of the BQL for its run. Only a guest CPU's
 * own store, at the top of its vCPU thread: TCG took the BQL for it (on every
 * version: its stores ignore lockless I/O, ohca-compat.h; where an
 * accelerator honours it the store arrives without the BQL and there is
 * nothing to let go) and holds nothing else (its attributes are the CPU's:
 * none of a DMA's "unspecified" or "memory", no requester ID as an MSI has).
 * A doorbell reached from inside other code that holds the BQL (another
 * device's DMA or MSI, one of this device's own entry points, the monitor)
 * keeps it: that code may rely on it for the whole call.
 */
static bool ohca_db_may_unlock(OhcaState *s, MemTxAttrs attrs)
{
    return s->lockless && s->unlock_bql && current_cpu && !ohca_depth &&
           bql_locked() && !attrs.unspecified && !attrs.memory &&
           !attrs.requester_id;
}

/*
 * With sync-doorbells (the default) the first work a doorbell makes runs
 * here, in the vCPU thread that rang it, as e1000 transmits from its TDT
 * write: a bottom half would wait for the main loop thread, which on a
 * busy host competes for a core with the vCPUs themselves (the guest's
 * pollers spin), and costs an eventfd write to wake it. The engine does at
 * most doorbell-budget units of it (packets, WQEs, frames looped back) and
 * 50 us, the rung QP first, and schedules the bottom half only for what it
 * leaves.
 *
 * The run holds the engine lock and not the BQL (docs/architecture.md,
 * "Threads"): TCG takes the BQL for the access (also on QEMU >= 10.2:
 * lockless I/O does not reach TCG's stores), the handler lets go of it before
 * taking the engine lock and takes it back after releasing it, so the main
 * loop and the other vCPUs run meanwhile, and the handler never holds one
 * lock while waiting for the other. What the run deferred (MSI-X, frames) is
 * delivered once the BQL is back, before the store completes.
 */
static MemTxResult ohca_db_write(void *opaque, hwaddr addr, uint64_t val,
                                 unsigned size, MemTxAttrs attrs)
{
    OhcaState *s = opaque;
    hwaddr off = addr & (OHCA_DB_PAGE_SIZE - 1);
    uint32_t page = addr >> OHCA_DB_PAGE_SHIFT;
    bool unlock;
    int64_t start;

    if (addr >= OHCA_DM_BAR_OFFSET) {
        if (ohca_enter(s)) {
            ohca_engine_dm_write(s->engine, addr - OHCA_DM_BAR_OFFSET, val,
                                 size);
            ohca_leave(s);
        }
        return MEMTX_OK;
    }

    trace_ohca_db_write(page, off, val, size);
    if (!s->sync_doorbells || !s->doorbell_budget) {
        if (ohca_enter(s)) {
            ohca_engine_db_write(s->engine, page, off, val, size);
            ohca_leave(s);
        }
        return MEMTX_OK;
    }
    unlock = ohca_db_may_unlock(s, attrs);
    if (unlock) {
        bql_unlock();
    }
    if (ohca_enter(s)) {
        start = trace_event_get_state_backends(TRACE_OHCA_DB_RUN) ?
                get_clock() : 0;
        ohca_engine_doorbell_fast(s->engine, page, off, val, size,
                                  s->doorbell_budget);
        if (start) {
            trace_ohca_db_run(get_clock() - start);
        }
        ohca_unlock(s);
        ohca_depth--;
    }
    if (unlock) {
        /* how long the vCPU waits for the main loop or another vCPU */
        start = trace_event_get_state_backends(TRACE_OHCA_DB_BQL) ?
                get_clock() : 0;
        bql_lock();
        if (start) {
            trace_ohca_db_bql(get_clock() - start);
        }
    }
    ohca_flush_deferred(s);
    return MEMTX_OK;
}

static const MemoryRegionOps ohca_db_ops = {
    .read = ohca_db_read,
    .write_with_attrs = ohca_db_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
    .impl = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
};

/* ---- network ---------------------------------------------------------- */

/*
 * Frames are always offered to the engine: it answers RETRY only for an
 * ordinary frame waiting for an RX descriptor (QEMU then queues it until
 * the engine calls rx_resume), so RoCE traffic and drops never wait here.
 */
static bool ohca_can_receive(NetClientState *nc)
{
    OhcaState *s = qemu_get_nic_opaque(nc);

    return s->engine != NULL;
}

static ssize_t ohca_receive(NetClientState *nc, const uint8_t *buf,
                            size_t size)
{
    OhcaState *s = qemu_get_nic_opaque(nc);
    bool retry;

    if (ohca_enter(s)) {
        retry = ohca_engine_receive_frame(s->engine, buf, size) ==
                OHCA_ENGINE_RX_RETRY;
        ohca_leave(s);
    } else {
        /*
         * An answer to a frame this thread is sending, delivered before
         * qemu_send_packet returns (slirp's ARP replies, a hub): QEMU
         * holds it until the bottom half flushes the queue, as the engine
         * holds a frame offered from inside its callbacks.
         */
        retry = true;
        qatomic_set(&s->rx_resume_pending, true);
        qemu_bh_schedule(s->bh);
    }
    trace_ohca_rx(size, retry);
    return retry ? 0 : size;
}

static void ohca_link_status_changed(NetClientState *nc)
{
    OhcaState *s = qemu_get_nic_opaque(nc);

    trace_ohca_link(!nc->link_down);
    if (ohca_enter(s)) {
        ohca_engine_set_link(s->engine, !nc->link_down);
        ohca_leave(s);
    }
}

static NetClientInfo ohca_net_info = {
    .type = NET_CLIENT_DRIVER_NIC,
    .size = sizeof(NICState),
    .can_receive = ohca_can_receive,
    .receive = ohca_receive,
    .link_status_changed = ohca_link_status_changed,
};

/* ---- lifecycle -------------------------------------------------------- */

/* EUI-64 of the MAC, as InfiniBand GUIDs are formed from Ethernet MACs. */
static uint64_t ohca_guid_from_mac(const uint8_t *mac)
{
    return ((uint64_t)(mac[0] ^ 0x02) << 56) | ((uint64_t)mac[1] << 48) |
           ((uint64_t)mac[2] << 40) | ((uint64_t)0xff << 32) |
           ((uint64_t)0xfe << 24) | ((uint64_t)mac[3] << 16) |
           ((uint64_t)mac[4] << 8) | mac[5];
}

static void ohca_realize(PCIDevice *pdev, Error **errp)
{
    OhcaState *s = OHCA(pdev);
    DeviceState *dev = DEVICE(pdev);
    struct ohca_engine_config cfg = { 0 };
    int i, ret;

    qemu_macaddr_default_if_unset(&s->conf.macaddr);
    if (s->node_guid == 0) {
        s->node_guid = ohca_guid_from_mac(s->conf.macaddr.a);
    }
    if (s->sys_image_guid == 0) {
        s->sys_image_guid = s->node_guid;
    }

    /*
     * EQ 0 holds back what it has no room for (OHCA_DEV_CAP_EQ0_HOLD), so
     * its size does not limit the QPs; each costs 16 bytes of host memory
     * while it may exist and about 600 while it does (docs/architecture.md).
     */
    if (s->max_qp < 1 || s->max_qp > OHCA_ENGINE_MAX_QP) {
        error_setg(errp, "ohca: max-qp must be 1..%u, not %" PRIu32,
                   OHCA_ENGINE_MAX_QP, s->max_qp);
        return;
    }
    cfg.max_qp = s->max_qp;
    /* The link's speed, both ends alike: a switch port's line rate. */
    if (s->speed < OHCA_ENGINE_MIN_SPEED_MBPS ||
        s->speed > OHCA_ENGINE_MAX_SPEED_MBPS) {
        error_setg(errp, "ohca: speed must be %u..%u Mbit/s, not %" PRIu32,
                   OHCA_ENGINE_MIN_SPEED_MBPS, OHCA_ENGINE_MAX_SPEED_MBPS,
                   s->speed);
        return;
    }
    cfg.speed_mbps = s->speed;
    /*
     * pace: the port sends at its speed, in bursts of at most tx-burst
     * bytes; 0 is 100 us of the line (at least the engine's minimum, 16
     * KiB at the switch's 200 Mbit/s). Off: as fast as the engine makes
     * frames (the behaviour before pacing).
     */
    if (s->tx_burst && (s->tx_burst < OHCA_ENGINE_MIN_TX_BURST ||
                        s->tx_burst > OHCA_ENGINE_MAX_TX_BURST)) {
        error_setg(errp, "ohca: tx-burst must be 0 or %u..%u bytes, not %" PRIu32,
                   OHCA_ENGINE_MIN_TX_BURST, OHCA_ENGINE_MAX_TX_BURST,
                   s->tx_burst);
        return;
    }
    if (s->pace) {
        cfg.tx_burst_bytes = s->tx_burst ? s->tx_burst :
            MAX(OHCA_ENGINE_DEFAULT_TX_BURST, s->speed * 25 / 2);
    }
    if (!s->link_layer || !strcmp(s->link_layer, "eth")) {
        cfg.link_layer = OHCA_LINK_ETH;
    } else if (!strcmp(s->link_layer, "ib")) {
        cfg.link_layer = OHCA_LINK_IB;
    } else {
        error_setg(errp, "ohca: link-layer must be eth or ib, not '%s'",
                   s->link_layer);
        return;
    }
    cfg.port_guid = s->port_guid;
    memcpy(cfg.mac, s->conf.macaddr.a, sizeof(cfg.mac));
    cfg.node_guid = s->node_guid;
    cfg.sys_image_guid = s->sys_image_guid;
    cfg.link_up = true;
    /* MR keys and QPNs of this instance differ from a previous run's. */
    qemu_guest_getrandom_nofail(&cfg.id_seed, sizeof(cfg.id_seed));
    s->timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, ohca_timer_cb, s);
    s->engine = ohca_engine_create(&ohca_engine_ops, s, &cfg);
    if (!s->engine) {
        timer_free(s->timer);
        s->timer = NULL;
        error_setg(errp, "ohca: cannot create the device engine");
        return;
    }

    pdev->config[PCI_INTERRUPT_PIN] = 0;

    memory_region_init_io(&s->regs, OBJECT(s), &ohca_regs_ops, s,
                          "ohca-regs", OHCA_REGS_BAR_SIZE);
    pci_register_bar(pdev, OHCA_BAR_REGS,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->regs);

    memory_region_init_io(&s->db, OBJECT(s), &ohca_db_ops, s,
                          "ohca-doorbells", OHCA_BAR2_SIZE);
    /*
     * Behind a vIOMMU DMA goes through the IOMMU (whose faults raise
     * interrupts) under the BQL as before. Otherwise a doorbell's run lets go
     * of the BQL TCG took for it, and from 10.2 on BAR2 is lockless I/O for
     * accelerators that honour it; its accesses to the device are then
     * serialised by the engine lock, and its re-entries refused by ohca_lock,
     * not by the per-device reentrancy guard (which another thread's access
     * to BAR0 would trip over while a doorbell runs).
     */
    s->lockless = pci_device_iommu_address_space(pdev) == &address_space_memory;
    if (s->lockless) {
#if OHCA_HAVE_LOCKLESS_IO
        memory_region_enable_lockless_io(&s->db);
#else
        s->db.disable_reentrancy_guard = true;
#endif
    }
    pci_register_bar(pdev, OHCA_BAR_DB,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->db);

    memory_region_init(&s->msix, OBJECT(s), "ohca-msix", OHCA_MSIX_BAR_SIZE);
    pci_register_bar(pdev, OHCA_BAR_MSIX,
                     PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->msix);
    if (msix_init(pdev, OHCA_NUM_MSIX, &s->msix, OHCA_BAR_MSIX,
                  OHCA_MSIX_TABLE_OFFSET, &s->msix, OHCA_BAR_MSIX,
                  OHCA_MSIX_PBA_OFFSET, 0, errp) < 0) {
        ohca_engine_destroy(s->engine);
        s->engine = NULL;
        timer_free(s->timer);
        s->timer = NULL;
        return;
    }
    for (i = 0; i < OHCA_NUM_MSIX; i++) {
        msix_vector_use(pdev, i);
    }

    /*
     * PCI Advanced Features with FLR: the function is conventional PCI
     * (the VMs use the i440fx "pc" machine, which has no PCIe slots), and
     * on the root bus without a PM soft reset this is the only function
     * reset the guest's PCI core can use. TP is always clear: DMA is
     * synchronous here, so no transaction is ever pending.
     */
    ret = pci_add_capability(pdev, PCI_CAP_ID_AF, 0, PCI_CAP_AF_SIZEOF,
                             errp);
    if (ret < 0) {
        msix_unuse_all_vectors(pdev);
        msix_uninit(pdev, &s->msix, &s->msix);
        ohca_engine_destroy(s->engine);
        s->engine = NULL;
        timer_free(s->timer);
        s->timer = NULL;
        return;
    }
    s->af_cap = ret;
    pdev->config[s->af_cap + PCI_AF_LENGTH] = PCI_CAP_AF_SIZEOF;
    pdev->config[s->af_cap + PCI_AF_CAP] = PCI_AF_CAP_TP | PCI_AF_CAP_FLR;

    s->bh = qemu_bh_new_guarded(ohca_bh, s, &dev->mem_reentrancy_guard);
    s->vmstate_change = qemu_add_vm_change_state_handler(ohca_vm_state_change,
                                                         s);

    s->nic = qemu_new_nic(&ohca_net_info, &s->conf,
                          object_get_typename(OBJECT(s)), dev->id,
                          &dev->mem_reentrancy_guard, s);
    qemu_format_nic_info_str(qemu_get_queue(s->nic), s->conf.macaddr.a);
    ohca_engine_set_link(s->engine, !qemu_get_queue(s->nic)->link_down);
}

static void ohca_exit(PCIDevice *pdev)
{
    OhcaState *s = OHCA(pdev);

    qemu_del_vm_change_state_handler(s->vmstate_change);
    qemu_del_nic(s->nic);
    qemu_mutex_lock(&s->lock);
    timer_free(s->timer);
    s->timer = NULL;
    qemu_bh_delete(s->bh);
    msix_unuse_all_vectors(pdev);
    msix_uninit(pdev, &s->msix, &s->msix);
    ohca_engine_destroy(s->engine);
    s->engine = NULL;
    ohca_drop_deferred_locked(s);
    qemu_mutex_unlock(&s->lock);
    g_free(s->state);
    s->state = NULL;
}

/*
 * Config space writes. Every AF register is read-only to the default
 * handler (wmask 0), so the guest cannot change the capability; only the
 * "initiate FLR" bit of AF_CTRL is acted on here, and it reads back as 0
 * as the PCI spec requires. Other AF_CTRL bits are reserved and ignored.
 */
static void ohca_write_config(PCIDevice *pdev, uint32_t addr, uint32_t val,
                              int len)
{
    OhcaState *s = OHCA(pdev);
    uint32_t ctrl = s->af_cap + PCI_AF_CTRL;

    pci_default_write_config(pdev, addr, val, len);

    if (ranges_overlap(addr, len, ctrl, 1) &&
        ((val >> ((ctrl - addr) * 8)) & PCI_AF_CTRL_FLR)) {
        /* Like a bus reset: engine, command register, BARs and MSI-X. */
        pci_device_reset(pdev);
    }
}

/* PCI bus reset, system reset and FLR: the same as DEV_CTRL.RESET. */
static void ohca_qdev_reset(DeviceState *dev)
{
    OhcaState *s = OHCA(dev);

    trace_ohca_reset();
    if (ohca_enter(s)) {
        /* A reset device sends nothing the old one deferred. */
        ohca_drop_deferred_locked(s);
        ohca_engine_reset(s->engine);
        ohca_leave(s);
    }
}

/*
 * Migration and snapshots (docs/migration.md): the PCI configuration, MSI-X
 * and the engine's whole state as one versioned blob (registers, queues,
 * every object with its transport state; ohca_engine_save). The state is
 * saved under the engine lock, between two engine entry points, where no
 * work request is half executed; what the last runs deferred was
 * delivered when the VM stopped (ohca_vm_state_change). The device writes
 * guest memory only through MemoryRegionCache writes (behind a vIOMMU
 * pci_dma_write and pci_dma_map/unmap), which mark what they write dirty
 * for migration, and the vmstate is saved with the VM stopped,
 * after RAM's last pass, without the BQL being let go in between. Frames
 * in flight are not saved: RC recovers them as from a loss.
 */
static void ohca_drop_state(OhcaState *s)
{
    g_free(s->state);
    s->state = NULL;
    s->state_len = 0;
}

static int ohca_pre_save(void *opaque)
{
    OhcaState *s = opaque;
    char err[256];
    uint8_t *buf;
    size_t len;
    int ret;

    ohca_drop_state(s);
    if (!ohca_enter(s)) {
        error_report("ohca: cannot save the device's state from inside it");
        return -EINVAL;
    }
    ret = ohca_engine_save(s->engine, &buf, &len, err, sizeof(err));
    ohca_leave(s);
    if (ret) {
        error_report("ohca: cannot save the device's state: %s", err);
        return -EINVAL;
    }
    if (len > OHCA_ENGINE_STATE_MAX) {
        ohca_engine_state_free(buf);
        error_report("ohca: the device's state is too large (%zu bytes)", len);
        return -EINVAL;
    }
    s->state = g_memdup2(buf, len);
    s->state_len = len;
    ohca_engine_state_free(buf);
    return 0;
}

static OHCA_POST_SAVE_RET ohca_post_save(void *opaque)
{
    ohca_drop_state(opaque);
    return OHCA_POST_SAVE_OK;
}

static int ohca_pre_load(void *opaque)
{
    ohca_drop_state(opaque);
    return 0;
}

/* Before the blob is allocated: its length comes from the stream. */
static bool ohca_state_len_ok(void *opaque, int version_id)
{
    OhcaState *s = opaque;

    if (s->state_len > OHCA_ENGINE_STATE_MAX) {
        error_report("ohca: the incoming device state is too large (%" PRIu32
                     " bytes)", s->state_len);
        return false;
    }
    return true;
}

static int ohca_post_load(void *opaque, int version_id)
{
    OhcaState *s = opaque;
    char err[256];
    int ret;

    if (!ohca_enter(s)) {
        ohca_drop_state(s);
        error_report("ohca: cannot load the device's state from inside it");
        return -EINVAL;
    }
    ohca_drop_deferred_locked(s);
    ret = ohca_engine_load(s->engine, s->state, s->state_len, err,
                           sizeof(err));
    if (!ret) {
        /* The link is this host's netdev's, not the saving host's. */
        ohca_engine_set_link(s->engine, !qemu_get_queue(s->nic)->link_down);
    }
    ohca_leave(s);
    ohca_drop_state(s);
    if (ret) {
        error_report("ohca: cannot load the device's state: %s", err);
        return -EINVAL;
    }
    return 0;
}

static const VMStateDescription vmstate_ohca = {
    .name = "ohca",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_save = ohca_pre_save,
    .post_save = ohca_post_save,
    .pre_load = ohca_pre_load,
    .post_load = ohca_post_load,
    .fields = (VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, OhcaState),
        VMSTATE_MSIX(parent_obj, OhcaState),
        VMSTATE_UINT32(state_len, OhcaState),
        VMSTATE_VALIDATE("ohca engine state size", ohca_state_len_ok),
        VMSTATE_VBUFFER_ALLOC_UINT32(state, OhcaState, 0, NULL, state_len),
        VMSTATE_END_OF_LIST()
    },
};

static OhcaProperty ohca_properties[] = {
    DEFINE_NIC_PROPERTIES(OhcaState, conf),
    DEFINE_PROP_UINT64("node-guid", OhcaState, node_guid, 0),
    DEFINE_PROP_UINT64("sys-image-guid", OhcaState, sys_image_guid, 0),
    DEFINE_PROP_UINT64("port-guid", OhcaState, port_guid, 0),
    DEFINE_PROP_STRING("link-layer", OhcaState, link_layer),
    DEFINE_PROP_BOOL("sync-doorbells", OhcaState, sync_doorbells, true),
    DEFINE_PROP_UINT32("doorbell-budget", OhcaState, doorbell_budget, 256),
    /*
     * Off: a doorbell's run keeps the BQL TCG took for its access (before
     * QEMU 10.2), as before 2026-12-06: for comparison (docs/bench.md).
     */
    DEFINE_PROP_BOOL("x-unlock-bql", OhcaState, unlock_bql, true),
    /* How long a waiter for the engine lock spins (ohca_lock); 0: sleeps. */
    DEFINE_PROP_UINT32("x-lock-spin-ns", OhcaState, lock_spin_ns, 20000),
    DEFINE_PROP_UINT32("max-qp", OhcaState, max_qp, OHCA_ENGINE_MAX_QP),
    DEFINE_PROP_UINT32("speed", OhcaState, speed,
                       OHCA_ENGINE_DEFAULT_SPEED_MBPS),
    DEFINE_PROP_BOOL("pace", OhcaState, pace, true),
    DEFINE_PROP_UINT32("tx-burst", OhcaState, tx_burst, 0),
    OHCA_PROPS_END
};

/*
 * x-engine-heap (read only): the host memory the device engines of this
 * QEMU hold on the heap, in bytes. A soak bounds it: unlike QEMU's
 * resident memory it does not grow with the guest's RAM or TCG's tables.
 */
static void ohca_get_engine_heap(Object *obj, Visitor *v, const char *name,
                                 void *opaque, Error **errp)
{
    uint64_t bytes = ohca_engine_heap_bytes();

    visit_type_uint64(v, name, &bytes, errp);
}

/*
 * x-lock-waits, x-lock-sleeps, x-lock-wait-max-ns (read only): how many
 * times an entry point found the engine lock held, how many of those
 * slept after spinning, and the longest it waited for it;
 * x-deferred-drops: frames a doorbell's run made without the BQL and
 * dropped because the queue for them was full (OHCA_TXQ_MAX_*).
 */
static void ohca_get_counter(Object *obj, Visitor *v, const char *name,
                             void *opaque, Error **errp)
{
    OhcaState *s = OHCA(obj);
    uint64_t val = qatomic_read((uint64_t *)((char *)s + (uintptr_t)opaque));

    visit_type_uint64(v, name, &val, errp);
}

static const struct {
    const char *name;
    size_t offset;
} ohca_counters[] = {
    { "x-lock-waits", offsetof(OhcaState, lock_waits) },
    { "x-lock-sleeps", offsetof(OhcaState, lock_sleeps) },
    { "x-lock-wait-max-ns", offsetof(OhcaState, lock_wait_max_ns) },
    { "x-deferred-drops", offsetof(OhcaState, deferred_drops) },
};

static void ohca_instance_init(Object *obj)
{
    OhcaState *s = OHCA(obj);

    qemu_mutex_init(&s->lock);
    QSIMPLEQ_INIT(&s->txq);
}

static void ohca_instance_finalize(Object *obj)
{
    OhcaState *s = OHCA(obj);

    qemu_mutex_destroy(&s->lock);
}

static void ohca_class_init(ObjectClass *klass, OHCA_CLASS_DATA *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);
    size_t i;

    k->realize = ohca_realize;
    k->exit = ohca_exit;
    k->config_write = ohca_write_config;
    k->vendor_id = OHCA_PCI_VENDOR_ID;
    k->device_id = OHCA_PCI_DEVICE_ID;
    k->revision = OHCA_PCI_REVISION;
    k->class_id = OHCA_PCI_CLASS;
    k->subsystem_vendor_id = OHCA_PCI_SUBSYS_VENDOR_ID;
    k->subsystem_id = OHCA_PCI_SUBSYS_ID;
    dc->desc = "ohca RoCEv2 RDMA NIC";
    ohca_set_reset(dc, ohca_qdev_reset);
    dc->vmsd = &vmstate_ohca;
    device_class_set_props(dc, ohca_properties);
    object_class_property_add(klass, "x-engine-heap", "uint64",
                              ohca_get_engine_heap, NULL, NULL, NULL);
    for (i = 0; i < ARRAY_SIZE(ohca_counters); i++) {
        object_class_property_add(klass, ohca_counters[i].name, "uint64",
                                  ohca_get_counter, NULL, NULL,
                                  (void *)ohca_counters[i].offset);
    }
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
}

static const TypeInfo ohca_info = {
    .name = TYPE_OHCA,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(OhcaState),
    .instance_init = ohca_instance_init,
    .instance_finalize = ohca_instance_finalize,
    .class_init = ohca_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_CONVENTIONAL_PCI_DEVICE },
        { },
    },
};

static void ohca_register_types(void)
{
    type_register_static(&ohca_info);
}

type_init(ohca_register_types)
