// SPDX-License-Identifier: GPL-2.0-or-later
// An event queue in guest memory: owner-bit entries, consumer doorbell,
// arm semantics and overflow detection (programming manual section 5).
#pragma once

#include "device/host.hpp"
#include "state/stream.hpp"

#include <ohca/ohca_queue.h>

#include <cstdint>

namespace ohca {

class EventQueue {
  public:
    enum class PostResult { Ok, NotConfigured, Overflow, DmaError };

    explicit EventQueue(unsigned int vector) : vector_(vector) {}

    // Back to power-on: unconfigured, indices 0, unarmed.
    void reset();

    // Starts using the ring (base and log size validated by the caller).
    void configure(uint64_t base, unsigned int log_size);
    [[nodiscard]] bool configured() const { return log_size_ != 0; }

    // Writes one entry (body first, owner byte last) and raises the vector
    // if armed. On Overflow nothing is written.
    PostResult post(const Host &host, const ohca_eqe &eqe);
    [[nodiscard]] bool has_room() const;

    // Consumer doorbell: bits 15:0 consumer index, bit 31 ARM. Returns
    // false (and changes nothing) for a value that is not a valid doorbell:
    // other bits set, or a consumer index beyond the producer.
    bool doorbell(const Host &host, uint32_t value);

    [[nodiscard]] uint32_t producer() const { return pi_; }
    [[nodiscard]] uint32_t consumer() const { return ci_; }
    [[nodiscard]] bool armed() const { return armed_; }
    [[nodiscard]] uint32_t size() const { return configured() ? 1u << log_size_ : 0; }
    [[nodiscard]] unsigned int vector() const { return vector_; }

    // Saved and loaded with its owner (device/snapshot.cpp): a loaded
    // queue is unconfigured or has a valid base and size, and indices at
    // most a ring apart.
    void save(state::Writer &w) const;
    void load(state::Reader &r);

  private:
    unsigned int vector_;
    uint64_t base_ = 0;
    unsigned int log_size_ = 0;
    uint32_t pi_ = 0; // entries written, free running
    uint32_t ci_ = 0; // entries returned by the driver, free running
    bool armed_ = false;
};

} // namespace ohca
