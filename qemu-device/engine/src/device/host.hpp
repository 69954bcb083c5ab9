// SPDX-License-Identifier: GPL-2.0-or-later
// The engine's view of its host: guest memory, interrupts, the wire and
// the scheduler, all through the callbacks of struct ohca_engine_ops.
#pragma once

#include "ohca_engine.h"

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace ohca {

class Host {
  public:
    Host(const ohca_engine_ops &ops, void *ctx) : ops_(ops), ctx_(ctx) {}

    // False if any byte is inaccessible or the range wraps the address space.
    [[nodiscard]] bool read(uint64_t addr, void *buf, size_t len) const;
    [[nodiscard]] bool write(uint64_t addr, const void *buf, size_t len) const;
    // A write whose bytes [last_off, last_off + last_len) the guest sees no
    // earlier than the rest (an owner byte): one dma_write_ordered callback
    // where the host has it, else two writes, the rest first.
    [[nodiscard]] bool write_ordered(uint64_t addr, const void *buf, size_t len, size_t last_off,
                                     size_t last_len) const;

    template <class T> [[nodiscard]] bool read_obj(uint64_t addr, T &out) const {
        static_assert(std::is_trivially_copyable_v<T>);
        return read(addr, &out, sizeof(T));
    }
    template <class T> [[nodiscard]] bool write_obj(uint64_t addr, const T &in) const {
        static_assert(std::is_trivially_copyable_v<T>);
        return write(addr, &in, sizeof(T));
    }

    void raise_irq(unsigned int vector) const;
    void transmit(const uint8_t *frame, size_t len) const;
    void schedule() const;
    void rx_resume() const;
    // Optional callbacks: without now_ns time stands still (0), without
    // set_timer deadlines are only noticed when process() runs anyway.
    [[nodiscard]] uint64_t now_ns() const;
    void set_timer(uint64_t deadline_ns) const;
    // enum ohca_engine_trace_kind; nothing without a trace callback.
    void trace(unsigned int kind, uint32_t a, uint32_t b, uint32_t c, uint64_t d = 0) const {
        if (ops_.trace != nullptr) {
            ops_.trace(ctx_, kind, a, b, c, d);
        }
    }

  private:
    ohca_engine_ops ops_;
    void *ctx_;
};

} // namespace ohca
