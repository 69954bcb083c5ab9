// SPDX-License-Identifier: GPL-2.0-or-later
// The engine's heap, counted: every C++ allocation of the process goes
// through these replacements of the global operator new and delete, so
// ohca_engine_heap_bytes() says how much host memory the engines hold.
// In QEMU only the engine is C++, so that is the device's own memory:
// what a soak bounds, untouched by the guest's RAM and by TCG's tables,
// which fill QEMU's resident memory as a guest runs new code.
//
// Under AddressSanitizer its own operators stay (they check new against
// free); the count is then 0, as in the benchmark's build (CMake's
// OHCA_HEAP_COUNT=OFF defines OHCA_HEAP_COUNTED 0).
//
// Each thread counts into a cell of its own with a plain add: a locked
// read-modify-write on every allocation and free cost about 6 ns each on
// this project's machines, a few per cent of a small looped-back WRITE
// (docs/bench.md). The sum of the cells is the count; what one thread
// allocates and another frees nets out in the sum.

#include <ohca_engine.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <malloc.h>
#include <new>

#if defined(OHCA_HEAP_COUNTED)
// set by the build
#elif defined(__SANITIZE_ADDRESS__)
#define OHCA_HEAP_COUNTED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define OHCA_HEAP_COUNTED 0
#endif
#endif
#ifndef OHCA_HEAP_COUNTED
#define OHCA_HEAP_COUNTED 1
#endif

#if OHCA_HEAP_COUNTED

namespace {

// A thread's count. Cells are never freed: a thread that ends gives its
// cell back (in_use false) with its count in it, for the next thread to go
// on from, so there are never more cells than threads that allocated at
// the same time. Only the owner writes `bytes`; readers sum relaxed loads.
struct Cell {
    std::atomic<int64_t> bytes{0};
    std::atomic<bool> in_use{true};
    Cell *next = nullptr;
};

std::atomic<Cell *> cells{nullptr};
// What threads count once their cell is given back (thread-local
// destructors that free after that): shared, so a locked add.
std::atomic<int64_t> after_exit{0};

Cell *claim_cell() {
    for (Cell *c = cells.load(std::memory_order_acquire); c != nullptr; c = c->next) {
        bool idle = false;
        if (c->in_use.compare_exchange_strong(idle, true, std::memory_order_acquire)) {
            return c;
        }
    }
    // Not operator new: this runs inside it.
    void *mem = std::malloc(sizeof(Cell));
    if (mem == nullptr) {
        std::abort();
    }
    Cell *c = new (mem) Cell;
    c->next = cells.load(std::memory_order_relaxed);
    while (!cells.compare_exchange_weak(c->next, c, std::memory_order_release,
                                        std::memory_order_relaxed)) {
    }
    return c;
}

// The thread's cell (a plain thread-local pointer: no guard on the fast
// path), claimed at its first allocation; `Release` gives it back when the
// thread ends, after which the thread counts in after_exit.
thread_local Cell *t_cell = nullptr;
thread_local bool t_gone = false;

class Release {
  public:
    Release() { t_cell = claim_cell(); }
    ~Release() {
        t_cell->in_use.store(false, std::memory_order_release);
        t_cell = nullptr;
        t_gone = true;
    }
    Release(const Release &) = delete;
    Release &operator=(const Release &) = delete;
    Release(Release &&) = delete;
    Release &operator=(Release &&) = delete;
};

void add_slow(int64_t n) {
    if (t_gone) {
        after_exit.fetch_add(n, std::memory_order_relaxed);
        return;
    }
    thread_local const Release release;
    std::atomic<int64_t> &b = t_cell->bytes;
    b.store(b.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

void add(int64_t n) {
    Cell *c = t_cell;
    if (c == nullptr) [[unlikely]] {
        add_slow(n);
        return;
    }
    c->bytes.store(c->bytes.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

} // namespace

uint64_t ohca_engine_heap_bytes(void) {
    int64_t sum = after_exit.load(std::memory_order_relaxed);
    for (const Cell *c = cells.load(std::memory_order_acquire); c != nullptr; c = c->next) {
        sum += c->bytes.load(std::memory_order_relaxed);
    }
    return sum > 0 ? static_cast<uint64_t>(sum) : 0;
}

namespace {

// The engine has no exceptions: out of memory ends the process, as
// QEMU's own g_malloc does.
void *counted(void *p) {
    if (p == nullptr) {
        std::abort();
    }
    add(static_cast<int64_t>(malloc_usable_size(p)));
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
        add(-static_cast<int64_t>(malloc_usable_size(p)));
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

#else

uint64_t ohca_engine_heap_bytes(void) {
    return 0;
}

#endif
