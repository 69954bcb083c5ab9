// SPDX-License-Identifier: GPL-2.0-or-later
// Test doubles for the engine's host: guest memory made of regions (DMA
// outside them fails), a wire that captures frames, an interrupt log and a
// scheduler that records requests. EngineTest wraps an engine with them.
#pragma once

#include "ohca_engine.h"

#include <ohca/ohca_cmd.h>
#include <ohca/ohca_queue.h>
#include <ohca/ohca_regs.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <vector>

namespace ohca::test {

class FakeHost {
  public:
    void add_region(uint64_t base, size_t len);
    void remove_region(uint64_t base);

    bool read(uint64_t addr, void *buf, size_t len);
    bool write(uint64_t addr, const void *buf, size_t len);

    template <class T> T get(uint64_t addr) {
        T v{};
        EXPECT_TRUE(read(addr, &v, sizeof(v))) << "test read outside memory at " << addr;
        return v;
    }
    template <class T> void put(uint64_t addr, const T &v) {
        EXPECT_TRUE(write(addr, &v, sizeof(v))) << "test write outside memory at " << addr;
    }
    void fill(uint64_t addr, uint8_t byte, size_t len);

    // With dma_write_ordered (one callback, counted in dma_writes and
    // ordered_writes, logged as its two parts in the order they land)
    // unless ops_without_ordered_write is set (the engine then makes two).
    static ohca_engine_ops ops();
    static inline bool ops_without_ordered_write = false;

    std::vector<std::vector<uint8_t>> wire;
    std::vector<unsigned int> irqs;
    unsigned int schedules = 0;
    unsigned int rx_resumes = 0;
    unsigned int dma_reads = 0;
    unsigned int dma_writes = 0;
    unsigned int ordered_writes = 0; // dma_write_ordered calls (in dma_writes too)
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
    std::vector<uint8_t> *find(uint64_t addr, size_t len, size_t &off);
    std::map<uint64_t, std::vector<uint8_t>> regions_;
};

// Guest memory map used by the tests.
inline constexpr uint64_t kEqBase = 0x400000;     // 1 MiB: up to 64 Ki entries
inline constexpr uint64_t kCmdqBase = 0x40000;    // up to 1024 entries
inline constexpr uint64_t kMailbox = 0x100000;    // in/out mailboxes
inline constexpr uint64_t kOutBuf = 0x108000;     // command output
inline constexpr uint64_t kTxRing = 0x200000;     // TX descriptors
inline constexpr uint64_t kRxRing = 0x210000;     // RX descriptors
inline constexpr uint64_t kBuffers = 0x300000;    // packet buffers, 1 MiB
inline constexpr uint64_t kUnmapped = 0xdead0000; // never backed

inline constexpr uint8_t kMac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
inline constexpr uint64_t kNodeGuid = 0x0002c9fffe000001ull;

struct CmdOutcome {
    uint8_t status;
    uint32_t syndrome;
};

class EngineTest : public ::testing::Test {
  protected:
    void SetUp() override;
    void TearDown() override;

    uint32_t rd(uint32_t reg) { return static_cast<uint32_t>(ohca_engine_reg_read(e_, reg, 4)); }
    void wr(uint32_t reg, uint32_t v) { ohca_engine_reg_write(e_, reg, v, 4); }

    // Reset, program EQ 0 (armed) and the command ring, ENABLE.
    void bring_up(unsigned int cmdq_log = 4, unsigned int eq_log = 8);

    // Writes a command at the next slot, rings the doorbell, processes and
    // returns status/syndrome from the entry. Checks the CMD_DONE event.
    CmdOutcome cmd(uint16_t opcode, const void *in = nullptr, uint16_t in_len = 0,
                   uint16_t out_len = 0, uint64_t out_addr = 0);
    // Writes a raw entry at the next slot without executing it.
    void post_raw(const ohca_cmd &c);
    uint32_t ring_cmdq(); // rings the doorbell for posted entries; returns PI
    template <class In> CmdOutcome cmd_in(uint16_t opcode, const In &in) {
        return cmd(opcode, &in, sizeof(In));
    }
    template <class Out> CmdOutcome cmd_out(uint16_t opcode, Out &out) {
        CmdOutcome r = cmd(opcode, nullptr, 0, sizeof(Out), kOutBuf);
        out = host_.get<Out>(kOutBuf);
        return r;
    }

    // Runs process() until the engine stops asking for it.
    void drain();

    // Next EQE the driver would consume (validity by owner bit); advances.
    bool next_eqe(ohca_eqe &out);
    void eq_doorbell(bool arm) {
        wr(OHCA_REG_EQ0_DB, (eq_ci_ & 0xffff) | (arm ? OHCA_EQ_DB_ARM : 0));
    }

    ohca_query_stats_out stats();

    // Ethernet rings.
    void create_ring(uint8_t type, uint8_t log_size, uint64_t base);
    void post_tx(const std::vector<uint8_t> &frame);
    void post_rx(uint16_t buf_len);
    ohca_eth_desc tx_desc(uint32_t i) {
        return host_.get<ohca_eth_desc>(kTxRing + 16 * (i % tx_size_));
    }
    ohca_eth_desc rx_desc(uint32_t i) {
        return host_.get<ohca_eth_desc>(kRxRing + 16 * (i % rx_size_));
    }
    static uint64_t tx_buf(uint32_t i) { return kBuffers + 0x4000ull * (i % 32); }
    static uint64_t rx_buf(uint32_t i) { return kBuffers + 0x80000 + 0x4000ull * (i % 32); }
    ohca_engine_rx_result rx(const std::vector<uint8_t> &f) {
        return ohca_engine_receive_frame(e_, f.data(), f.size());
    }

    FakeHost host_;
    ohca_engine *e_ = nullptr;
    unsigned int cmdq_log_ = 0;
    unsigned int eq_log_ = 0;
    uint32_t cmd_pi_ = 0;
    uint32_t eq_ci_ = 0;
    uint16_t token_ = 0x100;
    uint32_t tx_pi_ = 0;
    uint32_t rx_pi_ = 0;
    uint32_t tx_size_ = 1;
    uint32_t rx_size_ = 1;
};

// Frames.
std::vector<uint8_t> eth_frame(const uint8_t dst[6], uint16_t ethertype, size_t len);
std::vector<uint8_t> udp4_frame(const uint8_t dst[6], uint16_t dport, size_t payload = 32);
std::vector<uint8_t> udp6_frame(const uint8_t dst[6], uint16_t dport, size_t payload = 32);

} // namespace ohca::test
