// SPDX-License-Identifier: GPL-2.0-or-later
// The engine's heap, counted: every C++ allocation of the process goes
// through these replacements of the global operator new and delete, so
// ohca_engine_heap_bytes() says how much host memory the engines hold.
// In QEMU only the engine is C++, so that is the device's own memory:
// what a soak bounds, untouched by the guest's RAM and by TCG's tables,
// which fill QEMU's resident memory as a guest runs new code.
//
// Under AddressSanitizer its own operators stay (they check new against
// free); the count is then 0.

#include <ohca_engine.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <malloc.h>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#define OHCA_HEAP_COUNTED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OHCA_HEAP_COUNTED 0
#endif
#endif
#ifndef OHCA_HEAP_COUNTED
#define OHCA_HEAP_COUNTED 1
#endif

namespace {
std::atomic<uint64_t> heap_bytes{0};
} // namespace

uint64_t ohca_engine_heap_bytes(void) {
    return heap_bytes.load(std::memory_order_relaxed);
}

#if OHCA_HEAP_COUNTED

namespace {

// The engine has no exceptions: out of memory ends the process, as
// QEMU's own g_malloc does.
void *counted(void *p) {
    if (p == nullptr) {
        std::abort();
    }
    heap_bytes.fetch_add(malloc_usable_size(p), std::memory_order_relaxed);
    return p;
}

void *take(size_t n) {
    return counted(std::malloc(n != 0 ? n : 1));
}

void *take_aligned(size_t n, std::align_val_t al) {
    void *p = nullptr;
    const size_t a =
        static_cast<size_t>(al) < sizeof(void *) ? sizeof(void *) : static_cast<size_t>(al);
    if (posix_memalign(&p, a, n != 0 ? n : 1) != 0) {
        p = nullptr;
    }
    return counted(p);
}

void give(void *p) noexcept {
    if (p != nullptr) {
        heap_bytes.fetch_sub(malloc_usable_size(p), std::memory_order_relaxed);
        std::free(p);
    }
}

} // namespace

// NOLINTBEGIN(misc-new-delete-overloads,readability-inconsistent-declaration-parameter-name)
void *operator new(size_t n) {
    return take(n);
}
void *operator new[](size_t n) {
    return take(n);
}
void *operator new(size_t n, const std::nothrow_t & /*unused*/) noexcept {
    return take(n);
}
void *operator new[](size_t n, const std::nothrow_t & /*unused*/) noexcept {
    return take(n);
}
void *operator new(size_t n, std::align_val_t al) {
    return take_aligned(n, al);
}
void *operator new[](size_t n, std::align_val_t al) {
    return take_aligned(n, al);
}
void *operator new(size_t n, std::align_val_t al, const std::nothrow_t & /*unused*/) noexcept {
    return take_aligned(n, al);
}
void *operator new[](size_t n, std::align_val_t al, const std::nothrow_t & /*unused*/) noexcept {
    return take_aligned(n, al);
}
void operator delete(void *p) noexcept {
    give(p);
}
void operator delete[](void *p) noexcept {
    give(p);
}
void operator delete(void *p, size_t /*unused*/) noexcept {
    give(p);
}
void operator delete[](void *p, size_t /*unused*/) noexcept {
    give(p);
}
void operator delete(void *p, const std::nothrow_t & /*unused*/) noexcept {
    give(p);
}
void operator delete[](void *p, const std::nothrow_t & /*unused*/) noexcept {
    give(p);
}
void operator delete(void *p, std::align_val_t /*unused*/) noexcept {
    give(p);
}
void operator delete[](void *p, std::align_val_t /*unused*/) noexcept {
    give(p);
}
void operator delete(void *p, size_t /*unused*/, std::align_val_t /*unused*/) noexcept {
    give(p);
}
void operator delete[](void *p, size_t /*unused*/, std::align_val_t /*unused*/) noexcept {
    give(p);
}
void operator delete(void *p, std::align_val_t /*unused*/,
                     const std::nothrow_t & /*unused*/) noexcept {
    give(p);
}
void operator delete[](void *p, std::align_val_t /*unused*/,
                       const std::nothrow_t & /*unused*/) noexcept {
    give(p);
}
// NOLINTEND(misc-new-delete-overloads,readability-inconsistent-declaration-parameter-name)

#endif
