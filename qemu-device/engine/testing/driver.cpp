// SPDX-License-Identifier: GPL-2.0-or-later
#include "driver.hpp"

#include "check.hpp"

#include <algorithm>

namespace ohca::test {

void Driver::program(unsigned int cmdq_log_in, unsigned int eq_log_in, bool arm) {
    cmdq_log = cmdq_log_in;
    eq_log = eq_log_in;
    cmd_pi = 0;
    eq_ci = 0;
    wr(OHCA_REG_EQ0_BASE_LO, static_cast<uint32_t>(layout_.eq));
    wr(OHCA_REG_EQ0_BASE_HI, static_cast<uint32_t>(layout_.eq >> 32));
    wr(OHCA_REG_EQ0_LOG_SIZE, eq_log);
    if (arm) {
        wr(OHCA_REG_EQ0_DB, OHCA_EQ_DB_ARM);
    }
    wr(OHCA_REG_CMDQ_BASE_LO, static_cast<uint32_t>(layout_.cmdq));
    wr(OHCA_REG_CMDQ_BASE_HI, static_cast<uint32_t>(layout_.cmdq >> 32));
    wr(OHCA_REG_CMDQ_LOG_SIZE, cmdq_log);
    wr(OHCA_REG_DEV_CTRL, OHCA_DEV_CTRL_ENABLE);
}

bool Driver::bring_up(unsigned int cmdq_log_in, unsigned int eq_log_in) {
    wr(OHCA_REG_DEV_CTRL, OHCA_DEV_CTRL_RESET);
    if (!OHCA_CHECK((rd(OHCA_REG_DEV_STATUS) & OHCA_DEV_STATUS_RESET_DONE) != 0,
                    "no RESET_DONE after reset")) {
        return false;
    }
    tx = {};
    rx = {};
    host_.fill(layout_.eq, 0, size_t{16} << eq_log_in);
    program(cmdq_log_in, eq_log_in, true);
    return ready();
}

bool Driver::drain(unsigned int max_rounds) {
    for (unsigned int i = 0; i < max_rounds; ++i) {
        const unsigned int before = host_.schedules;
        ohca_engine_process(e_);
        if (host_.schedules == before) {
            return true;
        }
    }
    return false;
}

ohca_cmd Driver::make_cmd(uint16_t opcode, const void *in, uint16_t in_len, uint16_t out_len,
                          uint64_t out_addr) {
    ohca_cmd c{};
    c.opcode = opcode;
    c.token = ++token;
    c.status = fill_status;
    c.syndrome = fill_syndrome;
    c.in_len = in_len;
    c.out_len = out_len;
    c.out_addr = out_addr;
    if (in_len <= OHCA_CMD_INLINE_MAX) {
        if (in != nullptr && in_len != 0) {
            std::memcpy(c.inline_in, in, in_len);
        }
    } else {
        c.in_addr = layout_.mailbox;
        const size_t n =
            layout_.mailbox_size != 0 ? std::min<size_t>(in_len, layout_.mailbox_size) : in_len;
        host_.put_bytes(layout_.mailbox, in, n);
    }
    return c;
}

uint32_t Driver::post(const ohca_cmd &c) {
    const uint32_t slot = cmd_pi & (cmdq_size() - 1);
    host_.put(slot_addr(slot), c);
    ++cmd_pi;
    return slot;
}

uint32_t Driver::ring_cmdq() {
    wr(OHCA_REG_CMDQ_PI, cmd_pi & 0xffff);
    return cmd_pi;
}

bool Driver::next_eqe(ohca_eqe &out) {
    const uint32_t size = 1u << eq_log;
    const auto e = host_.get<ohca_eqe>(layout_.eq + 16ull * (eq_ci & (size - 1)));
    const uint8_t want = ((eq_ci >> eq_log) & 1) == 0 ? OHCA_EQE_OWNER : 0;
    if ((e.flags & OHCA_EQE_OWNER) != want) {
        return false;
    }
    out = e;
    ++eq_ci;
    return true;
}

unsigned int Driver::consume_eq(bool arm) {
    unsigned int n = 0;
    ohca_eqe e{};
    while (n < (1u << eq_log) && next_eqe(e)) {
        ++n;
    }
    eq_doorbell(arm);
    return n;
}

CmdOutcome Driver::execute(uint16_t opcode, const void *in, uint16_t in_len, uint16_t out_len,
                           uint64_t out_addr) {
    const uint32_t slot = post(make_cmd(opcode, in, in_len, out_len, out_addr));
    ring_cmdq();
    drain(64);
    consume_eq(true);
    const ohca_cmd done = entry(slot);
    return {done.status, done.syndrome};
}

CmdOutcome Driver::create_ring(uint8_t type, unsigned int log_size, uint64_t base) {
    ohca_create_eth_ring_in in{};
    in.type = type;
    in.log_size = static_cast<uint8_t>(log_size);
    in.base = base;
    const CmdOutcome r = execute_in(OHCA_CMD_CREATE_ETH_RING, in);
    if (r.status == OHCA_STATUS_OK) {
        ring(type) = {base, log_size, 0};
    }
    return r;
}

CmdOutcome Driver::destroy_ring(uint8_t type) {
    ohca_destroy_eth_ring_in in{};
    in.type = type;
    ring(type).log = 0;
    return execute_in(OHCA_CMD_DESTROY_ETH_RING, in);
}

void Driver::post_desc(uint8_t type, const ohca_eth_desc &d) {
    Ring &r = ring(type);
    if (r.log == 0) {
        return;
    }
    host_.put(r.base + 16ull * (r.pi & (r.size() - 1)), d);
    ++r.pi;
}

void Driver::ring_eth(uint8_t type) {
    wr(type == OHCA_ETH_RING_TX ? OHCA_REG_ETH_TX_PI : OHCA_REG_ETH_RX_PI, ring(type).pi & 0xffff);
}

} // namespace ohca::test
