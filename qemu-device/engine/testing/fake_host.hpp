// SPDX-License-Identifier: GPL-2.0-or-later
// The engine's host as the tests, fuzzers and benchmark fake it: guest
// memory made of regions (DMA outside them, or into a "hole", fails), a
// wire that captures frames, an interrupt log, a virtual clock and a
// scheduler that records requests. ops() gives the engine callbacks over it.
#pragma once

#include "ohca_engine.h"

#include <ohca/ohca_cmd.h>
#include <ohca/ohca_queue.h>
#include <ohca/ohca_regs.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <span>
#include <vector>

namespace ohca::test {

class FakeHost {
  public:
    // A region of zeroed memory the host owns, or one over storage the
    // caller owns (the fuzzers' arena, allocated once per process).
    void add_region(uint64_t base, size_t len);
    void add_region(uint64_t base, std::span<uint8_t> storage);
    void remove_region(uint64_t base);
    [[nodiscard]] bool contains(uint64_t addr, size_t len) const;

    // The harness' own access to guest memory (no hole applies).
    bool read(uint64_t addr, void *buf, size_t len) const;
    bool write(uint64_t addr, const void *buf, size_t len);
    // The same, reporting a failed check (check.hpp) outside memory.
    void get_bytes(uint64_t addr, void *buf, size_t len) const;
    void put_bytes(uint64_t addr, const void *buf, size_t len);
    template <class T> T get(uint64_t addr) const {
        T v{};
        get_bytes(addr, &v, sizeof(v));
        return v;
    }
    template <class T> void put(uint64_t addr, const T &v) { put_bytes(addr, &v, sizeof(v)); }
    void fill(uint64_t addr, uint8_t byte, size_t len);

    // The device's DMA into [lo, hi) fails: a page the guest unmapped
    // meanwhile, or with writes_only, memory the device can read but not
    // write (ROM, a read-only IOMMU mapping).
    void set_hole(uint64_t lo, uint64_t hi, bool writes_only = false);
    void clear_hole() { set_hole(0, 0); }

    // With dma_write_ordered (one callback, counted in dma_writes and
    // ordered_writes, logged as its two parts in the order they land)
    // unless ops_without_ordered_write is set (the engine then makes two).
    static ohca_engine_ops ops();
    static inline bool ops_without_ordered_write = false;

    // Fuzzing: every callback checks the engine's side of the contract
    // (MSI-X vector, frame length, DMA size and buffer) and reports a
    // violation; a failed DMA read scribbles over the buffer (the engine
    // must not use it) and a failed write still reads its source (so ASan
    // checks the engine's buffer).
    bool strict = false;
    size_t max_dma = 64 * 1024; // strict: the largest DMA the engine may make
    // Keep frames, DMA writes and trace events in the logs below (false:
    // only count them; a fuzzer's run would grow them without bound).
    bool record = true;
    // With record: keep the DMA write log and the trace events too (false:
    // the benchmark, whose loop would otherwise pay a vector append per
    // DMA write and trace call that QEMU's callbacks do not).
    bool keep_logs = true;
    // set_timer() with a deadline asks for a run too (a fuzzer's driver
    // then runs the timers by running the engine until idle).
    bool timer_reschedules = false;

    std::vector<std::vector<uint8_t>> wire;
    std::vector<unsigned int> irqs;
    unsigned int schedules = 0;
    unsigned int rx_resumes = 0;
    unsigned int dma_reads = 0;
    unsigned int dma_writes = 0;
    unsigned int ordered_writes = 0; // dma_write_ordered calls (in dma_writes too)
    unsigned int dma_faults = 0;     // DMA outside memory or into the hole
    uint64_t frames_out = 0;         // transmit() calls
    uint64_t irq_count = 0;          // raise_irq() calls
    uint64_t now = 1'000'000'000;    // now_ns(); tests advance it
    uint64_t now_step = 0;           // ... or every now_ns() does
    uint64_t timer = 0;              // last set_timer() deadline
    std::vector<std::pair<uint64_t, size_t>> write_log; // DMA writes
    struct TraceEvent {
        unsigned int kind;
        uint32_t a, b, c;
        uint64_t d;
    };
    std::vector<TraceEvent> traces; // the engine's trace callback
    // Runs inside every DMA callback (re-entrancy tests).
    std::function<void()> on_dma;
    std::function<void()> on_rx_resume;

  private:
    struct Region {
        std::vector<uint8_t> owned;
        uint8_t *data = nullptr;
        size_t size = 0;
    };
    // Where [addr, addr + len) is in guest memory, or nullptr: the last
    // region found (last_) inline, else a walk of the map.
    uint8_t *find(uint64_t addr, size_t len) const {
        const Region *r = last_.region;
        if (r != nullptr && addr >= last_.base && addr - last_.base <= r->size &&
            len <= r->size - (addr - last_.base)) {
            return r->data + (addr - last_.base);
        }
        return find_in_map(addr, len);
    }
    uint8_t *find_in_map(uint64_t addr, size_t len) const;
    [[nodiscard]] uint8_t *dma_target(uint64_t addr, size_t len, bool write) const;
    // Every DMA callback's start: the contract check (strict) and on_dma.
    void dma_began(const char *what, uint64_t addr, const void *buf, size_t len) {
        if (strict) {
            check_dma(what, addr, buf, len);
        }
        if (on_dma) {
            on_dma();
        }
    }
    int dma_read(uint64_t addr, void *buf, size_t len);
    int dma_write(uint64_t addr, const void *buf, size_t len);
    int dma_write_ordered(uint64_t addr, const void *buf, size_t len, size_t last_off,
                          size_t last_len);
    void check_dma(const char *what, uint64_t addr, const void *buf, size_t len) const;
    std::map<uint64_t, Region> regions_;
    // The region the last lookup found, asked first (QEMU's address space
    // dispatch keeps its last section likewise): the harness's posting and
    // polling and the engine's DMAs mostly hit one region in a row, where a
    // map walk per access would cost more than a guest or QEMU pays.
    // Forgotten when regions change, and by a copy (whose map nodes are
    // its own).
    struct LastRegion {
        const Region *region = nullptr;
        uint64_t base = 0;
        LastRegion() = default;
        LastRegion(const LastRegion & /*other*/) {}
        LastRegion &operator=(const LastRegion & /*other*/) {
            region = nullptr;
            return *this;
        }
        ~LastRegion() = default;
    };
    mutable LastRegion last_;
    uint64_t hole_lo_ = 0;
    uint64_t hole_hi_ = 0;
    bool hole_writes_only_ = false;
};

// Frames.
std::vector<uint8_t> eth_frame(const uint8_t dst[6], uint16_t ethertype, size_t len);
std::vector<uint8_t> udp4_frame(const uint8_t dst[6], uint16_t dport, size_t payload = 32);
std::vector<uint8_t> udp6_frame(const uint8_t dst[6], uint16_t dport, size_t payload = 32);

} // namespace ohca::test
