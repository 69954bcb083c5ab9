// SPDX-License-Identifier: GPL-2.0-or-later
// Fuzzer (b): BAR0 register and BAR2 doorbell write sequences. Each
// operation is a register write/read (mostly aligned 32-bit to a known
// register with a value that means something there: a base inside the
// arena, a small log size, a producer index near the current one; sometimes
// any offset, size and value), a doorbell page write, reset / enable in the
// middle, link changes, process(), a driver-style bring-up or command, or a
// re-entrant call from inside a DMA.
#include "fuzz_common.hpp"

using namespace ohca::fuzz;

namespace {

constexpr uint32_t kRegs[] = {
    OHCA_REG_MAGIC,        OHCA_REG_ABI_VERSION,  OHCA_REG_FW_VERSION,    OHCA_REG_CAPS,
    OHCA_REG_NUM_DB_PAGES, OHCA_REG_NUM_MSIX,     OHCA_REG_MAX_CMDQ_LOG,  OHCA_REG_MAX_EQ_LOG,
    OHCA_REG_DEV_CTRL,     OHCA_REG_DEV_STATUS,   OHCA_REG_FATAL_CODE,    OHCA_REG_ERR_COUNT,
    OHCA_REG_CMDQ_BASE_LO, OHCA_REG_CMDQ_BASE_HI, OHCA_REG_CMDQ_LOG_SIZE, OHCA_REG_CMDQ_PI,
    OHCA_REG_CMDQ_CI,      OHCA_REG_EQ0_BASE_LO,  OHCA_REG_EQ0_BASE_HI,   OHCA_REG_EQ0_LOG_SIZE,
    OHCA_REG_EQ0_DB,       OHCA_REG_ETH_TX_PI,    OHCA_REG_ETH_RX_PI,     OHCA_REG_ETH_IRQ_MASK,
    OHCA_REG_PORT_STATUS,
};

uint32_t value_for(Input &in, uint32_t reg, Driver &d) {
    if (in.one_in(8)) {
        return in.u32();
    }
    switch (reg) {
    case OHCA_REG_DEV_CTRL:
        return in.below(4);
    case OHCA_REG_CMDQ_BASE_LO:
        return static_cast<uint32_t>(pick_addr(in, kCmdq, 64));
    case OHCA_REG_EQ0_BASE_LO:
        return static_cast<uint32_t>(pick_addr(in, kEq, 16));
    case OHCA_REG_CMDQ_BASE_HI:
    case OHCA_REG_EQ0_BASE_HI:
        return in.one_in(4) ? in.u32() : 0;
    case OHCA_REG_CMDQ_LOG_SIZE:
    case OHCA_REG_EQ0_LOG_SIZE:
        return in.below(18);
    case OHCA_REG_CMDQ_PI:
        return (d.cmd_pi() + in.below(8)) & 0xffff;
    case OHCA_REG_EQ0_DB:
        return in.u16() | (in.flag() ? OHCA_EQ_DB_ARM : 0);
    case OHCA_REG_ETH_TX_PI:
        return (d.ring_pi(OHCA_ETH_RING_TX) + in.below(8) - 2) & 0xffff;
    case OHCA_REG_ETH_RX_PI:
        return (d.ring_pi(OHCA_ETH_RING_RX) + in.below(8) - 2) & 0xffff;
    case OHCA_REG_ETH_IRQ_MASK:
        return in.below(3);
    default:
        return in.u32();
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Input in(data, size);
    Host host;
    Driver d(host, !in.one_in(8));
    if (in.flag()) {
        d.bring_up(in.range(1, 10), in.range(2, kEqLogMax));
    }
    // Random descriptor rings content, in case the guest creates rings.
    for (uint32_t i = 0, n = in.below(8); i < n; ++i) {
        ohca_eth_desc desc{};
        desc.addr = pick_addr(in, kBuffers + 0x800 * in.below(64));
        desc.len = in.u16();
        host.put(kTxRing + 16 * in.below(0x800), desc);
        host.put(kRxRing + 16 * in.below(0x800), desc);
    }

    for (unsigned int ops = 0; !in.empty() && ops < 1024; ++ops) {
        switch (in.below(16)) {
        case 0:
        case 1:
        case 2:
        case 3: { // a meaningful register write
            const uint32_t reg = kRegs[in.below(sizeof(kRegs) / sizeof(kRegs[0]))];
            ohca_engine_reg_write(d.engine(), reg, value_for(in, reg, d), 4);
            break;
        }
        case 4: { // any access shape
            const uint64_t off = in.one_in(4) ? in.u64() : in.below(OHCA_REGS_BAR_SIZE + 8);
            static const unsigned int sizes[] = {0, 1, 2, 3, 4, 8, 16};
            const unsigned int sz = sizes[in.below(7)];
            if (in.flag()) {
                ohca_engine_reg_write(d.engine(), off, in.u64(), sz);
            } else {
                (void)ohca_engine_reg_read(d.engine(), off, sz);
            }
            break;
        }
        case 5: { // register read
            const uint32_t reg = kRegs[in.below(sizeof(kRegs) / sizeof(kRegs[0]))];
            (void)d.rd(reg);
            break;
        }
        case 6: { // doorbell page write
            const uint32_t page = in.one_in(8) ? in.u32() : in.below(OHCA_NUM_DB_PAGES + 2);
            const uint32_t off = in.one_in(8) ? in.u32() : (in.below(OHCA_DB_PAGE_SIZE / 4) * 4);
            static const unsigned int sizes[] = {4, 8, 1, 2};
            ohca_engine_db_write(d.engine(), page, off, in.u64(), sizes[in.below(4)]);
            break;
        }
        case 7:
            ohca_engine_process(d.engine());
            break;
        case 8:
            ohca_engine_reset(d.engine());
            break;
        case 9:
            ohca_engine_set_link(d.engine(), in.flag());
            break;
        case 10: // the driver's bring-up in the middle of anything
            d.bring_up(in.range(1, 10), in.range(2, kEqLogMax));
            break;
        case 11: { // commands that create things the doorbells act on
            switch (in.below(5)) {
            case 0:
                (void)d.create_ring(static_cast<uint8_t>(in.below(2)), in.range(2, kEthLogMax));
                break;
            case 1:
                (void)d.destroy_ring(static_cast<uint8_t>(in.below(2)));
                break;
            case 2: {
                ohca_alloc_uar_out out{};
                (void)d.cmd(OHCA_CMD_ALLOC_UAR, nullptr, 0, sizeof(out), kMailboxOut);
                break;
            }
            case 3: {
                ohca_dealloc_uar_in u{};
                u.uar_index = in.below(OHCA_NUM_DB_PAGES + 1);
                (void)d.cmd_in(OHCA_CMD_DEALLOC_UAR, u);
                break;
            }
            default:
                (void)d.cmd(static_cast<uint16_t>(in.below(OHCA_CMD_MAX)));
                break;
            }
            break;
        }
        case 12: { // post Ethernet descriptors and ring
            const auto type = static_cast<uint8_t>(in.below(2));
            ohca_eth_desc desc{};
            desc.addr = pick_addr(in, kBuffers + 0x2400 * in.below(28));
            desc.len = in.one_in(4) ? in.u16() : static_cast<uint16_t>(in.range(1, 2048));
            d.post_desc(type, desc);
            d.ring_eth(type);
            break;
        }
        case 13: { // a frame
            uint8_t f[256];
            const size_t n = build_frame(in, f, sizeof(f));
            (void)ohca_engine_receive_frame(d.engine(), f, n);
            break;
        }
        case 14: { // re-entry
            const auto k = static_cast<Host::Reenter>(in.range(1, 7));
            host.arm_reentry(k, in.u32(), in.u32());
            break;
        }
        case 15: // the driver consumes events
            (void)d.consume_eq(in.flag());
            break;
        }
    }
    host.arm_reentry(Host::Reenter::None, 0, 0);
    d.check_recovers();
    return 0;
}
