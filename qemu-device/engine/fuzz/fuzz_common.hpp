// SPDX-License-Identifier: GPL-2.0-or-later
// Shared pieces of the engine fuzzers (libFuzzer entry points in fuzz_*.cpp):
//
//   Input   a FuzzedDataProvider-like decoder (own code, no LLVM headers):
//           little-endian integers, bounded choices and byte runs; reads past
//           the end yield zeros, so any prefix of an input is still valid.
//   Host    the shared test driver's fake host (testing/) over a bounded
//           guest memory: one arena of kGuestSize bytes at kGuestBase,
//           plus an optional "hole" in it. DMA outside the arena or into
//           the hole fails (the engine must handle it); the arena is an
//           exact-size heap block, so ASan reports any stray access by the
//           fake itself. The callbacks check the engine's side of the
//           contract (vectors, frame lengths, DMA sizes) and abort on a
//           violation (the test driver's default failure handler).
//   Driver  the shared test driver's: bring-up, command submission, EQ
//           consumption, Ethernet ring setup — so fuzzers reach deep states.
//
// Nothing here uses GoogleTest: the same sources build as libFuzzer
// binaries (clang) and as plain replay programs (any compiler, replay.cpp).
#pragma once

#include "driver.hpp"
#include "fake_host.hpp"
#include "ohca_engine.h"

#include <ohca/ohca_cmd.h>
#include <ohca/ohca_queue.h>
#include <ohca/ohca_regs.h>

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>

namespace ohca::fuzz {

[[noreturn]] inline void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
inline void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::fputs("ohca-fuzz: invariant violated: ", stderr);
    std::vfprintf(stderr, fmt, ap);
    std::fputc('\n', stderr);
    va_end(ap);
    std::abort();
}

// ---- input decoding ------------------------------------------------------

class Input {
  public:
    Input(const uint8_t *data, size_t size) : p_(data), n_(size) {}

    [[nodiscard]] bool empty() const { return n_ == 0; }
    [[nodiscard]] size_t remaining() const { return n_; }

    uint8_t u8() {
        if (n_ == 0) {
            return 0;
        }
        --n_;
        return *p_++;
    }
    uint16_t u16() { return static_cast<uint16_t>(u8() | (u8() << 8)); }
    uint32_t u32() { return u16() | (uint32_t{u16()} << 16); }
    uint64_t u64() { return u32() | (uint64_t{u32()} << 32); }
    bool flag() { return (u8() & 1) != 0; }

    // 0..n-1 (n >= 1): one byte when n <= 256, two when n <= 65536, else four.
    uint32_t below(uint32_t n) {
        if (n <= 1) {
            return 0;
        }
        const uint32_t v = n <= 256 ? u8() : n <= 65536 ? u16() : u32();
        return v % n;
    }
    uint32_t range(uint32_t lo, uint32_t hi) { return lo + below(hi - lo + 1); }
    // True with probability about 1/n (1/n of the byte values).
    bool one_in(uint32_t n) { return below(n) == 0; }

    // Up to n bytes into out; the rest of out is zeroed. Returns bytes taken.
    size_t bytes(void *out, size_t n) {
        const size_t k = std::min(n, n_);
        if (k != 0) {
            std::memcpy(out, p_, k);
        }
        if (n > k) {
            std::memset(static_cast<uint8_t *>(out) + k, 0, n - k);
        }
        p_ += k;
        n_ -= k;
        return k;
    }
    // Up to n bytes of the input itself (no copy).
    std::span<const uint8_t> take(size_t n) {
        const size_t k = std::min(n, n_);
        std::span<const uint8_t> s(p_, k);
        p_ += k;
        n_ -= k;
        return s;
    }

  private:
    const uint8_t *p_;
    size_t n_;
};

// ---- guest memory --------------------------------------------------------

inline constexpr uint64_t kGuestBase = 0x100000;
inline constexpr size_t kGuestSize = 0x80000; // 512 KiB
inline constexpr uint64_t kGuestEnd = kGuestBase + kGuestSize;
// Layout used by the driver (all inside the arena).
inline constexpr uint64_t kEq = kGuestBase + 0x00000;         // 64 KiB: EQ log <= 12
inline constexpr uint64_t kCmdq = kGuestBase + 0x10000;       // 64 KiB: cmdq log <= 10
inline constexpr uint64_t kMailboxIn = kGuestBase + 0x20000;  // 4 KiB
inline constexpr uint64_t kMailboxOut = kGuestBase + 0x21000; // 4 KiB
inline constexpr uint64_t kScratch = kGuestBase + 0x22000;    // 24 KiB
inline constexpr uint64_t kTxRing = kGuestBase + 0x28000;     // 32 KiB: log <= 11
inline constexpr uint64_t kRxRing = kGuestBase + 0x30000;     // 32 KiB
inline constexpr uint64_t kBuffers = kGuestBase + 0x40000;    // 256 KiB of packet buffers
inline constexpr size_t kBuffersSize = 0x40000;
inline constexpr unsigned int kEqLogMax = 12;
inline constexpr unsigned int kEthLogMax = 11;

// The largest single DMA the engine has any business doing (a jumbo frame
// or a mailbox; ring checks go in chunks). Larger means a length bug.
inline constexpr size_t kMaxDma = 64 * 1024;

// An address for a field the fuzzer controls: usually inside the arena
// (near a region of interest), sometimes at or across its edges, sometimes
// wild. `align` forces low bits clear when the choice is "good".
inline uint64_t pick_addr(Input &in, uint64_t preferred, uint64_t align = 1) {
    switch (in.below(16)) {
    case 0:
        return 0;
    case 1:
        return in.u64(); // anywhere, including wrapping ranges
    case 2:
        return kGuestEnd - in.below(64); // straddles the end
    case 3:
        return kGuestBase - in.below(64); // straddles the start
    case 4:
        return ~uint64_t{0} - in.below(64); // wraps the address space
    case 5:
        return kGuestBase + in.below(kGuestSize); // anywhere in the arena
    case 6:
        return kBuffers + (in.below(kBuffersSize) & ~(align - 1));
    default:
        return preferred + (in.below(8) * align);
    }
}

// The shared test driver's fake host (testing/fake_host.hpp), set up for
// fuzzing: guest memory is one arena, allocated once per process (a fresh
// 512 KiB mapping per input costs more in page faults than the whole engine
// run) and zeroed for each input; the callbacks check the engine's side of
// the contract (strict); nothing is logged, only counted; a virtual clock
// that moves on by 1 ms at every reading, so transport timers (ACK timeout,
// RNR wait) expire within a few process() calls, and a timer armed asks for
// a run (the driver's drain() runs process() again).
class Host : public ohca::test::FakeHost {
  public:
    Host() {
        uint8_t *mem = arena();
        std::memset(mem, 0, kGuestSize);
        add_region(kGuestBase, std::span<uint8_t>(mem, kGuestSize));
        strict = true;
        max_dma = kMaxDma;
        record = false;
        timer_reschedules = true;
        now = 1;
        now_step = 1000000;
        on_dma = [this] { maybe_reenter(); };
    }

    // Engine lifetime is tied to the host (the callbacks see `this`).
    ohca_engine *create(bool link_up = true) {
        ohca_engine_ops ops = FakeHost::ops();
        ops.trace = nullptr; // as the QEMU glue without tracing
        ohca_engine_config cfg{};
        std::memcpy(cfg.mac, kMac, 6);
        cfg.node_guid = 0x0000fffe00000001ull;
        cfg.sys_image_guid = cfg.node_guid;
        cfg.link_up = link_up;
        engine_ = ohca_engine_create(&ops, this, &cfg);
        if (engine_ == nullptr) {
            fail("ohca_engine_create failed");
        }
        return engine_;
    }
    ~Host() {
        if (engine_ != nullptr) {
            ohca_engine_destroy(engine_);
        }
    }
    Host(const Host &) = delete;
    Host &operator=(const Host &) = delete;

    static constexpr uint8_t kMac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};

    static bool in_arena(uint64_t addr, size_t len) {
        return addr >= kGuestBase && addr - kGuestBase <= kGuestSize &&
               len <= kGuestSize - (addr - kGuestBase);
    }

    // A one-shot engine call made from inside the next DMA callback, as a
    // DMA aimed at the device's own BAR would: the engine must refuse it.
    enum class Reenter : uint8_t { None, RegWrite, RegRead, DbWrite, Frame, Reset, Process, Link };
    void arm_reentry(Reenter kind, uint32_t a, uint32_t b) {
        reenter_ = kind;
        reenter_a_ = a;
        reenter_b_ = b;
    }

    // Moves the virtual clock on, so armed transport timers expire.
    void advance_clock(uint64_t ns) { now += ns; }

  private:
    void maybe_reenter() {
        if (reenter_ == Reenter::None) {
            return;
        }
        const Reenter k = reenter_;
        reenter_ = Reenter::None;
        static const uint8_t frame[64] = {0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x08, 0x06};
        switch (k) {
        case Reenter::RegWrite:
            ohca_engine_reg_write(engine_, reenter_a_ & 0xfc, reenter_b_, 4);
            break;
        case Reenter::RegRead:
            (void)ohca_engine_reg_read(engine_, reenter_a_ & 0xfc, 4);
            break;
        case Reenter::DbWrite:
            ohca_engine_db_write(engine_, reenter_a_ & 0xff, reenter_b_ & 0xffc, reenter_b_, 4);
            break;
        case Reenter::Frame:
            (void)ohca_engine_receive_frame(engine_, frame, sizeof(frame));
            break;
        case Reenter::Reset:
            ohca_engine_reset(engine_);
            break;
        case Reenter::Process:
            ohca_engine_process(engine_);
            break;
        case Reenter::Link:
            ohca_engine_set_link(engine_, (reenter_a_ & 1) != 0);
            break;
        case Reenter::None:
            break;
        }
    }

    static uint8_t *arena() {
        static const std::unique_ptr<uint8_t[]> mem(new uint8_t[kGuestSize]);
        return mem.get();
    }

    ohca_engine *engine_ = nullptr;
    Reenter reenter_ = Reenter::None;
    uint32_t reenter_a_ = 0;
    uint32_t reenter_b_ = 0;
};

// ---- a minimal driver ----------------------------------------------------

// The shared test driver (testing/driver.hpp) at the arena's usual places,
// with what every fuzzer needs on top: Ethernet rings at fixed addresses,
// commands by status alone, and the recovery check each input ends with.
class Driver : public ohca::test::Driver {
  public:
    explicit Driver(Host &h, bool link_up = true)
        : ohca::test::Driver(h, {kEq, kCmdq, kMailboxIn, kMailboxOut, 4096}), h_(h) {
        attach(h.create(link_up));
        cmdq_log = 1;
        eq_log = 2;
        fill_status = 0xff;
        fill_syndrome = 0;
    }

    Host &host() { return h_; }

    // Reset, program EQ 0 (armed) and the command ring at their usual
    // places, ENABLE. True if the device is READY afterwards.
    bool bring_up(unsigned int cmdq_log_in, unsigned int eq_log_in) {
        return ohca::test::Driver::bring_up(std::clamp(cmdq_log_in, 1u, 10u),
                                            std::clamp(eq_log_in, 2u, kEqLogMax));
    }

    // process() until the engine stops asking for it (bounded: a hostile
    // guest can keep it busy, which is fine, but it must not spin here).
    void drain(unsigned int max_rounds = 64) { (void)ohca::test::Driver::drain(max_rounds); }

    void post_entry(const ohca_cmd &c) { (void)post(c); }
    uint32_t cmd_pi() const { return ohca::test::Driver::cmd_pi; }

    // One command, executed synchronously. Returns the status the device
    // wrote, or 0xff if it did not complete (device not READY, ...).
    uint8_t cmd(uint16_t opcode, const void *in = nullptr, uint16_t in_len = 0,
                uint16_t out_len = 0, uint64_t out_addr = 0) {
        return execute(opcode, in, in_len, out_len, out_addr).status;
    }
    template <class In> uint8_t cmd_in(uint16_t opcode, const In &in) {
        return cmd(opcode, &in, sizeof(In));
    }

    // Ethernet rings at their usual places.
    bool create_ring(uint8_t type, unsigned int log_size) {
        return ohca::test::Driver::create_ring(type, log_size, ring_base(type)).status ==
               OHCA_STATUS_OK;
    }
    bool destroy_ring(uint8_t type) {
        return ohca::test::Driver::destroy_ring(type).status == OHCA_STATUS_OK;
    }
    bool set_port(uint32_t mask, uint32_t mtu, uint32_t rx_mode) {
        ohca_set_port_in in{};
        in.port = 1;
        in.mask = mask;
        in.mtu = mtu;
        in.rx_mode = rx_mode;
        return cmd_in(OHCA_CMD_SET_PORT, in) == OHCA_STATUS_OK;
    }
    unsigned int ring_log(uint8_t type) { return ring(type).log; }
    static uint64_t ring_base(uint8_t type) { return type == OHCA_ETH_RING_TX ? kTxRing : kRxRing; }
    uint32_t &ring_pi(uint8_t type) { return ring(type).pi; }

    // The property every fuzzer ends with: whatever the guest did, a reset
    // gives back a device that brings up and executes commands.
    void check_recovers() {
        h_.clear_hole();
        static const bool verbose = std::getenv("OHCA_FUZZ_VERBOSE") != nullptr;
        if (verbose) {
            report();
        }
        if (!bring_up(2, 4)) {
            fail("device not READY after reset + bring-up (status %#x, fatal %u)",
                 rd(OHCA_REG_DEV_STATUS), rd(OHCA_REG_FATAL_CODE));
        }
        const uint8_t st = cmd(OHCA_CMD_NOP);
        if (st != OHCA_STATUS_OK) {
            fail("NOP after recovery: status %#x", st);
        }
        ohca_query_stats_out s{};
        const uint8_t st2 = cmd(OHCA_CMD_QUERY_STATS, nullptr, 0, sizeof(s), kMailboxOut);
        if (st2 != OHCA_STATUS_OK) {
            fail("QUERY_STATS after recovery: status %#x", st2);
        }
    }

    // OHCA_FUZZ_VERBOSE=1: what an input reached (for checking seeds).
    void report() {
        const uint32_t status = rd(OHCA_REG_DEV_STATUS);
        const uint64_t dma = uint64_t{h_.dma_reads} + h_.dma_writes;
        std::fprintf(stderr,
                     "status %#x fatal %u err %u | dma %llu ok %llu faults | irq %llu | "
                     "tx %llu",
                     status, rd(OHCA_REG_FATAL_CODE), rd(OHCA_REG_ERR_COUNT),
                     (unsigned long long)(dma - h_.dma_faults), (unsigned long long)h_.dma_faults,
                     (unsigned long long)h_.irq_count, (unsigned long long)h_.frames_out);
        if (status == OHCA_DEV_STATUS_READY) {
            ohca_query_stats_out s{};
            if (cmd(OHCA_CMD_QUERY_STATS, nullptr, 0, sizeof(s), kMailboxOut) == 0) {
                s = h_.get<ohca_query_stats_out>(kMailboxOut);
                std::fprintf(
                    stderr,
                    " | cmd ok %llu failed %llu | eth rx %llu roce rx %llu drop "
                    "filter %llu nodesc %llu | eth tx %llu err %llu",
                    (unsigned long long)s.cmd_completed, (unsigned long long)s.cmd_failed,
                    (unsigned long long)s.eth_rx_frames, (unsigned long long)s.roce_rx_frames,
                    (unsigned long long)s.eth_rx_dropped_filter,
                    (unsigned long long)s.eth_rx_dropped_no_desc,
                    (unsigned long long)s.eth_tx_frames, (unsigned long long)s.eth_tx_errors);
            }
        }
        std::fputc('\n', stderr);
    }

  private:
    Host &h_;
};

// ---- frames --------------------------------------------------------------

// A structured received frame: MAC choice, optional VLAN, an L3 of the
// fuzzer's choosing (IPv4 / IPv6 / ARP / raw), UDP with port 4791 most of
// the time, a payload, then truncation/extension. Appends to `out`.
inline size_t build_frame(Input &in, uint8_t *out, size_t cap) {
    size_t n = 0;
    auto put = [&](uint8_t b) {
        if (n < cap) {
            out[n++] = b;
        }
    };
    auto put16 = [&](uint16_t v) {
        put(static_cast<uint8_t>(v >> 8));
        put(static_cast<uint8_t>(v));
    };
    // Destination.
    switch (in.below(4)) {
    case 0:
    case 1:
        for (uint8_t b : Host::kMac) {
            put(b);
        }
        break;
    case 2:
        for (int i = 0; i < 6; ++i) {
            put(0xff);
        }
        break;
    default: {
        uint8_t m[6];
        in.bytes(m, 6);
        for (uint8_t b : m) {
            put(b);
        }
    }
    }
    // Source.
    for (int i = 0; i < 5; ++i) {
        put(0x02);
    }
    put(in.u8());
    if (in.one_in(4)) {
        put16(0x8100);
        put16(in.u16());
        if (in.one_in(8)) { // QinQ: the classifier looks at one tag only
            put16(0x8100);
            put16(in.u16());
        }
    }
    const uint32_t l3 = in.below(5);
    size_t udp_at = 0;
    if (l3 == 0 || l3 == 1) { // IPv4
        put16(0x0800);
        const uint8_t ihl = in.one_in(4) ? static_cast<uint8_t>(in.u8() & 0x0f) : 5;
        put(static_cast<uint8_t>(0x40 | ihl));
        put(in.u8());                            // TOS
        put16(in.u16());                         // total length (not trusted by the device)
        put16(in.u16());                         // id
        put16(in.one_in(4) ? in.u16() : 0x4000); // flags/fragment
        put(64);
        put(in.one_in(8) ? in.u8() : 17);
        put16(in.u16()); // checksum
        for (int i = 0; i < 8; ++i) {
            put(in.u8());
        }
        for (int i = 20; i < ihl * 4; ++i) {
            put(in.u8());
        }
        udp_at = n;
    } else if (l3 == 2) { // IPv6
        put16(0x86dd);
        put(in.one_in(8) ? in.u8() : 0x60);
        put(in.u8());
        put16(in.u16());
        put16(in.u16()); // payload length
        put(in.one_in(8) ? in.u8() : 17);
        put(64);
        for (int i = 0; i < 32; ++i) {
            put(in.u8());
        }
        udp_at = n;
    } else if (l3 == 3) {
        put16(0x0806); // ARP-ish
    } else {
        put16(in.u16());
    }
    if (udp_at != 0) {
        put16(in.u16());                                 // source port
        put16(in.one_in(4) ? in.u16() : uint16_t{4791}); // destination port
        put16(in.u16());                                 // length
        put16(in.u16());                                 // checksum
    }
    // Payload (BTH and beyond for RoCE), from the input.
    const size_t payload = in.one_in(16) ? in.below(9100) : in.below(200);
    for (size_t i = 0; i < payload && n < cap; ++i) {
        put(in.u8());
    }
    // Truncation: cut anywhere, which exercises every length check.
    if (in.one_in(4)) {
        n = std::min<size_t>(n, in.below(static_cast<uint32_t>(n) + 1));
    }
    return n;
}

} // namespace ohca::fuzz
