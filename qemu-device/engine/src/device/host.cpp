// SPDX-License-Identifier: GPL-2.0-or-later
#include "device/host.hpp"

#include <ohca/ohca_regs.h>

namespace ohca {

namespace {

bool range_ok(uint64_t addr, size_t len) {
    return len == 0 || addr + (len - 1) >= addr;
}

} // namespace

bool Host::read(uint64_t addr, void *buf, size_t len) const {
    if (!range_ok(addr, len)) {
        return false;
    }
    if (len == 0) {
        return true;
    }
    return ops_.dma_read(ctx_, addr, buf, len) == 0;
}

bool Host::write(uint64_t addr, const void *buf, size_t len) const {
    if (!range_ok(addr, len)) {
        return false;
    }
    if (len == 0) {
        return true;
    }
    return ops_.dma_write(ctx_, addr, buf, len) == 0;
}

bool Host::write_ordered(uint64_t addr, const void *buf, size_t len, size_t last_off,
                         size_t last_len) const {
    if (!range_ok(addr, len) || last_off > len || last_len > len - last_off) {
        return false;
    }
    if (ops_.dma_write_ordered != nullptr && len != 0) {
        return ops_.dma_write_ordered(ctx_, addr, buf, len, last_off, last_len) == 0;
    }
    const auto *p = static_cast<const uint8_t *>(buf);
    const size_t after = last_off + last_len;
    return write(addr, p, last_off) && write(addr + after, p + after, len - after) &&
           write(addr + last_off, p + last_off, last_len);
}

void Host::raise_irq(unsigned int vector) const {
    if (vector < OHCA_NUM_MSIX) {
        ops_.raise_irq(ctx_, vector);
    }
}

void Host::transmit(const uint8_t *frame, size_t len) const {
    ops_.transmit(ctx_, frame, len);
}

void Host::schedule() const {
    ops_.schedule(ctx_);
}

void Host::rx_resume() const {
    ops_.rx_resume(ctx_);
}

uint64_t Host::now_ns() const {
    return ops_.now_ns != nullptr ? ops_.now_ns(ctx_) : 0;
}

void Host::set_timer(uint64_t deadline_ns) const {
    if (ops_.set_timer != nullptr) {
        ops_.set_timer(ctx_, deadline_ns);
    }
}

} // namespace ohca
