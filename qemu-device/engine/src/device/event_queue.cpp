// SPDX-License-Identifier: GPL-2.0-or-later
#include "device/event_queue.hpp"

#include "link/byte_order.hpp"

#include <ohca/ohca_regs.h>

#include <cstring>

namespace ohca {

void EventQueue::reset() {
    base_ = 0;
    log_size_ = 0;
    pi_ = 0;
    ci_ = 0;
    armed_ = false;
}

void EventQueue::configure(uint64_t base, unsigned int log_size) {
    base_ = base;
    log_size_ = log_size;
}

bool EventQueue::has_room() const {
    return configured() && pi_ - ci_ < size();
}

EventQueue::PostResult EventQueue::post(const Host &host, const ohca_eqe &eqe) {
    if (!configured()) {
        return PostResult::NotConfigured;
    }
    if (!has_room()) {
        return PostResult::Overflow;
    }
    ohca_eqe entry = eqe;
    // Owner is 1 on even passes over the ring, 0 on odd ones.
    const bool owner = ((pi_ >> log_size_) & 1u) == 0;
    entry.flags = owner ? OHCA_EQE_OWNER : 0;
    const uint64_t addr = base_ + uint64_t{pi_ & (size() - 1)} * sizeof(ohca_eqe);

    uint8_t raw[sizeof(ohca_eqe)];
    std::memcpy(raw, &entry, sizeof(raw));
    // Body first, then the two bytes holding type and owner.
    constexpr size_t head = offsetof(ohca_eqe, code);
    if (!host.write(addr + head, raw + head, sizeof(raw) - head) || !host.write(addr, raw, head)) {
        return PostResult::DmaError;
    }
    ++pi_;
    if (armed_) {
        armed_ = false;
        host.raise_irq(vector_);
    }
    return PostResult::Ok;
}

bool EventQueue::doorbell(const Host &host, uint32_t value) {
    if ((value & ~(OHCA_RING_INDEX_MASK | OHCA_EQ_DB_ARM)) != 0) {
        return false;
    }
    const uint32_t new_ci = value & OHCA_RING_INDEX_MASK;
    const uint32_t delta = (new_ci - ci_) & OHCA_RING_INDEX_MASK;
    if (delta > pi_ - ci_) {
        return false;
    }
    ci_ += delta;
    if ((value & OHCA_EQ_DB_ARM) != 0) {
        if (pi_ != ci_) {
            // Unconsumed entries: signal at once, stay disarmed.
            armed_ = false;
            host.raise_irq(vector_);
        } else {
            armed_ = true;
        }
    }
    return true;
}

} // namespace ohca
