// SPDX-License-Identifier: GPL-2.0-or-later
// The device from its driver's side, as the tests, fuzzers and benchmark
// drive it: registers, bring-up, the command queue, EQ 0 and the Ethernet
// rings, at guest addresses a Layout names. It does not own the engine.
// execute() runs one command as a plain driver would; a user that checks
// more around each command (the unit tests: its CMD_DONE event) overrides it.
#pragma once

#include "fake_host.hpp"

#include <cstdint>

namespace ohca::test {

struct CmdOutcome {
    uint8_t status;
    uint32_t syndrome;
};

// Where the driver keeps its rings and mailboxes in guest memory.
struct Layout {
    uint64_t eq = 0;         // EQ 0: 16 << eq_log bytes
    uint64_t cmdq = 0;       // 64 << cmdq_log bytes
    uint64_t mailbox = 0;    // command input beyond the inline bytes
    uint64_t out = 0;        // command output
    size_t mailbox_size = 0; // input copied to the mailbox at most (0: all)
};

class Driver {
  public:
    Driver(FakeHost &host, const Layout &layout) : host_(host), layout_(layout) {}
    virtual ~Driver() = default;
    Driver(const Driver &) = delete;
    Driver &operator=(const Driver &) = delete;

    void attach(ohca_engine *e) { e_ = e; }
    [[nodiscard]] ohca_engine *engine() const { return e_; }
    [[nodiscard]] const Layout &layout() const { return layout_; }

    uint32_t rd(uint32_t reg) { return static_cast<uint32_t>(ohca_engine_reg_read(e_, reg, 4)); }
    void wr(uint32_t reg, uint32_t v) { ohca_engine_reg_write(e_, reg, v, 4); }
    [[nodiscard]] bool ready() { return rd(OHCA_REG_DEV_STATUS) == OHCA_DEV_STATUS_READY; }

    // Programs EQ 0 (armed or not) and the command ring, then ENABLE.
    void program(unsigned int cmdq_log, unsigned int eq_log, bool arm = true);
    // Reset (a failed check without RESET_DONE), EQ 0 cleared, program().
    // True if the device is READY afterwards.
    bool bring_up(unsigned int cmdq_log, unsigned int eq_log);

    // Runs process() until the engine stops asking for it; false if it
    // still asks after max_rounds.
    bool drain(unsigned int max_rounds);

    // A command entry (token, inline input or the mailbox, output address),
    // its status and syndrome set to fill_status/fill_syndrome so that an
    // entry the device never completes does not read as OK.
    ohca_cmd make_cmd(uint16_t opcode, const void *in, uint16_t in_len, uint16_t out_len,
                      uint64_t out_addr);
    // One command: posted, the doorbell rung, the engine run until idle
    // (at most 64 rounds), EQ 0 consumed and armed; the entry's outcome.
    virtual CmdOutcome execute(uint16_t opcode, const void *in = nullptr, uint16_t in_len = 0,
                               uint16_t out_len = 0, uint64_t out_addr = 0);
    template <class In> CmdOutcome execute_in(uint16_t opcode, const In &in) {
        return execute(opcode, &in, sizeof(In));
    }
    // Writes an entry at the next slot; returns the slot.
    uint32_t post(const ohca_cmd &c);
    uint32_t ring_cmdq(); // rings the doorbell for posted entries; returns PI
    [[nodiscard]] uint32_t cmdq_size() const { return 1u << cmdq_log; }
    [[nodiscard]] uint64_t slot_addr(uint32_t slot) const { return layout_.cmdq + 64ull * slot; }
    [[nodiscard]] uint64_t next_slot_addr() const { return slot_addr(cmd_pi & (cmdq_size() - 1)); }
    ohca_cmd entry(uint32_t slot) const { return host_.get<ohca_cmd>(slot_addr(slot)); }

    // Next EQE the driver would consume (validity by owner bit); advances.
    bool next_eqe(ohca_eqe &out);
    void eq_doorbell(bool arm) {
        wr(OHCA_REG_EQ0_DB, (eq_ci & 0xffff) | (arm ? OHCA_EQ_DB_ARM : 0));
    }
    // Consumes every valid EQE, then rings EQ 0's doorbell; returns how many.
    unsigned int consume_eq(bool arm = true);

    // Ethernet rings.
    CmdOutcome create_ring(uint8_t type, unsigned int log_size, uint64_t base);
    CmdOutcome destroy_ring(uint8_t type);
    // Writes a descriptor at the ring's next slot and advances its producer
    // (nothing without a ring); ring_eth() rings the doorbell.
    void post_desc(uint8_t type, const ohca_eth_desc &d);
    void ring_eth(uint8_t type);
    struct Ring {
        uint64_t base = 0;
        unsigned int log = 0; // 0: no ring
        uint32_t pi = 0;
        [[nodiscard]] uint32_t size() const { return 1u << log; }
    };
    Ring &ring(uint8_t type) { return type == OHCA_ETH_RING_TX ? tx : rx; }

    // The driver's state, open to tests that break the rules on purpose.
    unsigned int cmdq_log = 0;
    unsigned int eq_log = 0;
    uint32_t cmd_pi = 0;
    uint32_t eq_ci = 0;
    uint16_t token = 0;
    uint8_t fill_status = 0xee; // the device must overwrite it
    uint32_t fill_syndrome = 0xdeadbeef;
    Ring tx, rx;

  protected:
    FakeHost &host_;
    Layout layout_;
    ohca_engine *e_ = nullptr;
};

} // namespace ohca::test
