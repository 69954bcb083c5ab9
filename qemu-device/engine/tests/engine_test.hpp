// SPDX-License-Identifier: GPL-2.0-or-later
// EngineTest: a GoogleTest fixture with one engine over the shared test
// driver (testing/: the fake host and the driver's side of the device),
// every command's CMD_DONE event checked.
#pragma once

#include "driver.hpp"
#include "fake_host.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace ohca::test {

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

// The driver of the unit tests: every command must complete with its
// CMD_DONE event (token, status, syndrome, slot) and the engine go idle.
class CheckedDriver : public Driver {
  public:
    explicit CheckedDriver(FakeHost &host);
    CmdOutcome execute(uint16_t opcode, const void *in = nullptr, uint16_t in_len = 0,
                       uint16_t out_len = 0, uint64_t out_addr = 0) override;
    void drain_checked(); // drain(1000), a failure if the engine keeps rescheduling
};

class EngineTest : public ::testing::Test {
  protected:
    void SetUp() override;
    void TearDown() override;

    uint32_t rd(uint32_t reg) { return drv_.rd(reg); }
    void wr(uint32_t reg, uint32_t v) { drv_.wr(reg, v); }

    // Reset, program EQ 0 (armed) and the command ring, ENABLE.
    void bring_up(unsigned int cmdq_log = 4, unsigned int eq_log = 8);

    // Writes a command at the next slot, rings the doorbell, processes and
    // returns status/syndrome from the entry. Checks the CMD_DONE event.
    CmdOutcome cmd(uint16_t opcode, const void *in = nullptr, uint16_t in_len = 0,
                   uint16_t out_len = 0, uint64_t out_addr = 0) {
        return drv_.execute(opcode, in, in_len, out_len, out_addr);
    }
    // Writes a raw entry at the next slot without executing it.
    void post_raw(const ohca_cmd &c) { drv_.post(c); }
    uint32_t ring_cmdq() { return drv_.ring_cmdq(); } // rings the doorbell; returns PI
    template <class In> CmdOutcome cmd_in(uint16_t opcode, const In &in) {
        return cmd(opcode, &in, sizeof(In));
    }
    template <class Out> CmdOutcome cmd_out(uint16_t opcode, Out &out) {
        CmdOutcome r = cmd(opcode, nullptr, 0, sizeof(Out), kOutBuf);
        out = host_.get<Out>(kOutBuf);
        return r;
    }

    // Runs process() until the engine stops asking for it.
    void drain() { drv_.drain_checked(); }

    // Next EQE the driver would consume (validity by owner bit); advances.
    bool next_eqe(ohca_eqe &out) { return drv_.next_eqe(out); }
    void eq_doorbell(bool arm) { drv_.eq_doorbell(arm); }

    ohca_query_stats_out stats();

    // Ethernet rings.
    void create_ring(uint8_t type, uint8_t log_size, uint64_t base);
    void post_tx(const std::vector<uint8_t> &frame);
    void post_rx(uint16_t buf_len);
    ohca_eth_desc tx_desc(uint32_t i) {
        return host_.get<ohca_eth_desc>(kTxRing + 16 * (i % drv_.tx.size()));
    }
    ohca_eth_desc rx_desc(uint32_t i) {
        return host_.get<ohca_eth_desc>(kRxRing + 16 * (i % drv_.rx.size()));
    }
    static uint64_t tx_buf(uint32_t i) { return kBuffers + 0x4000ull * (i % 32); }
    static uint64_t rx_buf(uint32_t i) { return kBuffers + 0x80000 + 0x4000ull * (i % 32); }
    ohca_engine_rx_result rx(const std::vector<uint8_t> &f) {
        return ohca_engine_receive_frame(e_, f.data(), f.size());
    }

    FakeHost host_;
    CheckedDriver drv_{host_};
    ohca_engine *e_ = nullptr;
    uint32_t speed_mbps_ = 0; // the board's link speed (0: the default); set before SetUp
};

} // namespace ohca::test
