// SPDX-License-Identifier: GPL-2.0-or-later
// The BAR0 register file (programming manual section 2).
#include "device/device.hpp"

namespace ohca {

namespace {

constexpr uint32_t kCaps =
    OHCA_CAP_ROCE_V2 | OHCA_CAP_ETH | OHCA_CAP_RESET | OHCA_CAP_UD | OHCA_CAP_UC;

bool valid_access(uint64_t offset, unsigned int size) {
    return size == 4 && offset % 4 == 0 && offset < OHCA_REGS_BAR_SIZE;
}

} // namespace

uint64_t Device::reg_read(uint64_t offset, unsigned int size) {
    Entry entry(*this);
    if (!entry.ok() || !valid_access(offset, size)) {
        ++stats_.reg_errors;
        return 0;
    }
    switch (offset) {
    case OHCA_REG_MAGIC:
        return OHCA_MAGIC;
    case OHCA_REG_ABI_VERSION:
        return OHCA_ABI_VERSION;
    case OHCA_REG_FW_VERSION:
        return DeviceLimits::fw_version;
    case OHCA_REG_CAPS:
        return kCaps;
    case OHCA_REG_NUM_DB_PAGES:
        return OHCA_NUM_DB_PAGES;
    case OHCA_REG_NUM_MSIX:
        return OHCA_NUM_MSIX;
    case OHCA_REG_MAX_CMDQ_LOG:
        return OHCA_CMDQ_LOG_MAX;
    case OHCA_REG_MAX_EQ_LOG:
        return OHCA_EQ_LOG_MAX;
    case OHCA_REG_DEV_STATUS:
        return status_.bits;
    case OHCA_REG_FATAL_CODE:
        return status_.fatal_code;
    case OHCA_REG_ERR_COUNT:
        return static_cast<uint32_t>(stats_.reg_errors);
    case OHCA_REG_CMDQ_BASE_LO:
        return cmdq_base_lo_;
    case OHCA_REG_CMDQ_BASE_HI:
        return cmdq_base_hi_;
    case OHCA_REG_CMDQ_LOG_SIZE:
        return cmdq_log_size_;
    case OHCA_REG_CMDQ_CI:
        return cmdq_ci_;
    case OHCA_REG_EQ0_BASE_LO:
        return eq0_base_lo_;
    case OHCA_REG_EQ0_BASE_HI:
        return eq0_base_hi_;
    case OHCA_REG_EQ0_LOG_SIZE:
        return eq0_log_size_;
    case OHCA_REG_ETH_IRQ_MASK:
        return eth_.irq_mask();
    case OHCA_REG_PORT_STATUS:
        return port_.state().link_up ? OHCA_PORT_STATUS_LINK_UP : 0;
    case OHCA_REG_DEV_CTRL:
    case OHCA_REG_CMDQ_PI:
    case OHCA_REG_EQ0_DB:
    case OHCA_REG_ETH_TX_PI:
    case OHCA_REG_ETH_RX_PI:
        return 0; // write-only
    default:
        if (offset > OHCA_REG_EQ_DB(0) && offset < OHCA_REG_EQ_DB(OHCA_MAX_EQ)) {
            return 0; // completion EQ doorbells, write-only
        }
        ++stats_.reg_errors;
        return 0;
    }
}

void Device::reg_write(uint64_t offset, uint64_t value64, unsigned int size) {
    Entry entry(*this);
    const auto value = static_cast<uint32_t>(value64);
    // A reset from inside a host callback is deferred to the outer entry's
    // end (reset()), not lost; anything else re-entrant is refused.
    if (!entry.ok() && valid_access(offset, size) && offset == OHCA_REG_DEV_CTRL &&
        (value & OHCA_DEV_CTRL_RESET) != 0 &&
        (value & ~uint32_t{OHCA_DEV_CTRL_ENABLE | OHCA_DEV_CTRL_RESET}) == 0) {
        reset();
        return;
    }
    if (!entry.ok() || !valid_access(offset, size)) {
        ++stats_.reg_errors;
        return;
    }
    switch (offset) {
    case OHCA_REG_DEV_CTRL:
        write_dev_ctrl(value);
        return;
    case OHCA_REG_CMDQ_BASE_LO:
    case OHCA_REG_CMDQ_BASE_HI:
    case OHCA_REG_CMDQ_LOG_SIZE:
    case OHCA_REG_EQ0_BASE_LO:
    case OHCA_REG_EQ0_BASE_HI:
    case OHCA_REG_EQ0_LOG_SIZE:
        if (!config_writable()) {
            ++stats_.reg_errors;
            return;
        }
        switch (offset) {
        case OHCA_REG_CMDQ_BASE_LO:
            cmdq_base_lo_ = value;
            break;
        case OHCA_REG_CMDQ_BASE_HI:
            cmdq_base_hi_ = value;
            break;
        case OHCA_REG_CMDQ_LOG_SIZE:
            cmdq_log_size_ = value;
            break;
        case OHCA_REG_EQ0_BASE_LO:
            eq0_base_lo_ = value;
            break;
        case OHCA_REG_EQ0_BASE_HI:
            eq0_base_hi_ = value;
            break;
        default:
            eq0_log_size_ = value;
            break;
        }
        return;
    case OHCA_REG_CMDQ_PI:
        cmdq_doorbell(value);
        return;
    case OHCA_REG_EQ0_DB:
        if (!events_.doorbell(value)) {
            ++stats_.reg_errors;
            return;
        }
        // What waited for EQ 0 is posted: commands may run again.
        if (status_.running() && cmdq_ci_ != cmdq_pi_ && events_.takes_command()) {
            host_.schedule();
        }
        return;
    case OHCA_REG_ETH_TX_PI:
        eth_.tx_doorbell(value);
        return;
    case OHCA_REG_ETH_RX_PI:
        eth_.rx_doorbell(value);
        return;
    case OHCA_REG_ETH_IRQ_MASK:
        eth_.irq_mask_write(value);
        return;
    default:
        if (offset > OHCA_REG_EQ_DB(0) && offset < OHCA_REG_EQ_DB(OHCA_MAX_EQ)) {
            if (!cqs_.eq_doorbell(static_cast<uint32_t>((offset - OHCA_REG_EQ_DB(0)) / 4), value)) {
                ++stats_.reg_errors;
            }
            return;
        }
        // Read-only and unknown registers.
        ++stats_.reg_errors;
        return;
    }
}

// Ring configuration is latched at ENABLE and frozen until reset.
bool Device::config_writable() const {
    return (status_.bits & (OHCA_DEV_STATUS_READY | OHCA_DEV_STATUS_FATAL)) == 0;
}

void Device::write_dev_ctrl(uint32_t value) {
    if ((value & ~uint32_t{OHCA_DEV_CTRL_ENABLE | OHCA_DEV_CTRL_RESET}) != 0) {
        ++stats_.reg_errors;
        return;
    }
    if ((value & OHCA_DEV_CTRL_RESET) != 0) {
        power_on_state();
        if (port_.rx_waiting()) {
            host_.schedule();
        }
        return;
    }
    if ((value & OHCA_DEV_CTRL_ENABLE) != 0) {
        if (status_.fatal()) {
            ++stats_.reg_errors;
        } else if (!status_.running()) {
            enable();
        }
    }
}

void Device::enable() {
    status_.bits &= ~OHCA_DEV_STATUS_RESET_DONE;

    const uint64_t eq_base = (uint64_t{eq0_base_hi_} << 32) | eq0_base_lo_;
    const bool eq_ok = eq0_log_size_ >= OHCA_EQ_LOG_MIN && eq0_log_size_ <= OHCA_EQ_LOG_MAX &&
                       eq_base != 0 && eq_base % sizeof(ohca_eqe) == 0;
    if (!eq_ok) {
        enter_fatal(OHCA_FATAL_BAD_CMDQ_CONFIG);
        return;
    }
    events_.configure(eq_base, eq0_log_size_);

    const uint64_t cq_base = (uint64_t{cmdq_base_hi_} << 32) | cmdq_base_lo_;
    const bool cq_ok = cmdq_log_size_ >= OHCA_CMDQ_LOG_MIN && cmdq_log_size_ <= OHCA_CMDQ_LOG_MAX &&
                       cq_base != 0 && cq_base % sizeof(ohca_cmd) == 0;
    if (!cq_ok) {
        enter_fatal(OHCA_FATAL_BAD_CMDQ_CONFIG);
        return;
    }
    cmdq_base_ = cq_base;
    cmdq_size_ = 1u << cmdq_log_size_;
    cmdq_pi_ = 0;
    cmdq_ci_ = 0;
    status_.bits |= OHCA_DEV_STATUS_READY;
    port_.link_init();
}

} // namespace ohca
