/*
 * ohca: the differences between the QEMU versions the device builds into
 * (7.2 as Debian 12 ships it, 10.0 as Debian 13 does, 11.1 as unstable
 * does). One source of the device; each difference is one definition here,
 * named by the release that made it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef OHCA_COMPAT_H
#define OHCA_COMPAT_H

#include "qemu/main-loop.h"
#include "hw/pci/pci.h"

/* After 10.0: hw/qdev-core.h and hw/qdev-properties.h moved into hw/core/. */
#if __has_include("hw/core/qdev-properties.h")
#include "hw/core/qdev.h"
#include "hw/core/qdev-properties.h"
#else
#include "hw/qdev-core.h"
#include "hw/qdev-properties.h"
#endif

#define OHCA_QEMU_AT_LEAST(major, minor) \
    (QEMU_VERSION_MAJOR > (major) || \
     (QEMU_VERSION_MAJOR == (major) && QEMU_VERSION_MINOR >= (minor)))

/* 8.0: PCIDevice and PCIDeviceClass moved from pci.h to pci_device.h. */
#if __has_include("hw/pci/pci_device.h")
#include "hw/pci/pci_device.h"
#endif

/*
 * 9.2: property arrays are const and sized by the compiler, not
 * terminated (device_class_set_props checks both at build time).
 */
#ifdef DEFINE_PROP_END_OF_LIST
typedef Property OhcaProperty;
#define OHCA_PROPS_END DEFINE_PROP_END_OF_LIST(),
#else
typedef const Property OhcaProperty;
#define OHCA_PROPS_END
#endif

/* 9.2: include/sysemu became include/system. */
#if __has_include("system/runstate.h")
#include "system/runstate.h"
#else
#include "sysemu/runstate.h"
#endif

/* 9.1: DeviceClass.reset became the "legacy" reset behind a setter. */
#if OHCA_QEMU_AT_LEAST(9, 1)
#define ohca_set_reset(dc, fn) device_class_set_legacy_reset((dc), (fn))
#else
#define ohca_set_reset(dc, fn) ((dc)->reset = (fn))
#endif

/* 10.1: class_init's data argument is const. */
#if OHCA_QEMU_AT_LEAST(10, 1)
#define OHCA_CLASS_DATA const void
#else
#define OHCA_CLASS_DATA void
#endif

/*
 * VMStateDescription.post_save returns nothing in 11.1 (it cannot fail:
 * the state may be on its way already), an int in 10.0 and before; of the
 * releases between, only those two are built here.
 */
#if OHCA_QEMU_AT_LEAST(11, 0)
#define OHCA_POST_SAVE_RET void
#define OHCA_POST_SAVE_OK
#else
#define OHCA_POST_SAVE_RET int
#define OHCA_POST_SAVE_OK 0
#endif

/* 9.0: the big QEMU lock's functions were renamed bql_*. */
#ifndef bql_lock
#define bql_lock() qemu_mutex_lock_iothread()
#define bql_unlock() qemu_mutex_unlock_iothread()
#define bql_locked() qemu_mutex_iothread_locked()
#endif

/* 10.0: include/exec/address-spaces.h moved to include/system. */
#if __has_include("system/address-spaces.h")
#include "system/address-spaces.h"
#else
#include "exec/address-spaces.h"
#endif

/* 11.0: MemoryRegionCache and its accessors moved to their own header. */
#if __has_include("system/memory_cached.h")
#include "system/memory_cached.h"
#endif
#ifndef MEMORY_REGION_CACHE_INVALID /* 11.0 dropped it: a cache of nothing */
#define MEMORY_REGION_CACHE_INVALID ((MemoryRegionCache) { .mrs.mr = NULL })
#endif

/*
 * 10.2: memory_region_enable_lockless_io() lets a region's accesses run
 * without the BQL where the access path honours it (prepare_mmio_access:
 * KVM's and HVF's exits, address_space_rw from a thread without it); it
 * also turns the region's reentrancy guard off. TCG does not honour it:
 * 11.1's do_st_mmio_leN still takes the BQL around every MMIO store
 * (BQL_LOCK_GUARD), as 7.2's io_writex does, so under TCG the doorbell
 * handler lets go of the BQL itself (hw/ohca.c, ohca_db_may_unlock) on
 * every version. 7.2 and 10.0 have no such flag.
 */
#if OHCA_QEMU_AT_LEAST(10, 2)
#define OHCA_HAVE_LOCKLESS_IO 1
#else
#define OHCA_HAVE_LOCKLESS_IO 0
#endif

#endif /* OHCA_COMPAT_H */
