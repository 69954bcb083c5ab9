// SPDX-License-Identifier: GPL-2.0-or-later
// The IBTA responder resources of one RC QP: the READ responses and atomic
// acknowledgements it owes, in PSN order, with the ACKs/NAKs that must wait
// behind them, and the results of its last atomics (for duplicates).
//
// Everything is bounded by the QP's max_dest_rd_atomic (at least 1): at most
// that many READ/atomic responses pending, at most one ACK between two of
// them (ACKs are cumulative: a newer one replaces a waiting one), and that
// many saved atomic results. A peer can therefore not grow it, whatever it
// sends; a new READ or atomic beyond the limit is the caller's NAK.
#pragma once

#include "state/stream.hpp"
#include "transports/ring.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace ohca {

class ResponderResources {
  public:
    struct Response {
        enum class Kind : uint8_t { Ack, Read, Atomic };
        Kind kind = Kind::Ack;
        uint32_t psn = 0;     // ACK: its PSN; READ: first response's; atomic: the request's
        uint8_t syndrome = 0; // ACK
        uint32_t msn = 0;
        uint64_t va = 0; // READ: remote address of the first response's data
        uint32_t rkey = 0;
        uint32_t len = 0;   // READ: bytes from va
        uint32_t npkts = 1; // READ: response packets in all
        uint32_t next = 0;  // READ: next packet to send
        uint64_t orig = 0;  // atomic: the value the target held before
    };

    // Forgets everything; 'max_dest_rd_atomic' 0 counts as 1.
    void reset(unsigned int max_dest_rd_atomic);
    // A new limit (SQD -> SQD): pending responses stay.
    void set_capacity(unsigned int max_dest_rd_atomic);
    [[nodiscard]] unsigned int capacity() const { return capacity_; }

    [[nodiscard]] bool empty() const { return queue_.empty(); }
    [[nodiscard]] size_t queued() const { return queue_.size(); }
    // READ and atomic responses not yet (completely) sent.
    [[nodiscard]] unsigned int pending() const { return pending_; }
    // Every resource is in use: a new READ or atomic must be refused.
    [[nodiscard]] bool full() const { return pending_ >= capacity_; }
    [[nodiscard]] size_t saved_atomics() const;

    Response &front() { return queue_.front(); }
    void pop_front();
    // The QP went to ERR: nothing more is sent (saved results stay until reset).
    void drop_pending();

    // An ACK/NAK that must wait behind the pending responses (callers send
    // it at once when empty()). It replaces an ACK already waiting last,
    // except that an ACK below a waiting NAK adds nothing and is dropped.
    void queue_ack(uint32_t psn, uint8_t syndrome, uint32_t msn);
    // A new READ at the expected PSN. False (nothing queued) when full().
    bool add_read(uint32_t psn, uint64_t va, uint32_t rkey, uint32_t len, uint32_t npkts,
                  uint32_t msn);
    // A new atomic executed at 'psn' (the target held 'orig'): its result is
    // saved (the oldest saved one goes) and its acknowledgement queued.
    // False (nothing done) when full(); callers check before executing.
    bool add_atomic(uint32_t psn, uint64_t orig, uint32_t msn);

    // A duplicate READ asking from 'psn' (already checked like a new one):
    // the responses pending from 'psn' on, and the READ holding 'psn', are
    // dropped (the requester asks for them again), then it is queued. False
    // when no resource is free even so (a duplicate that matches nothing).
    bool replay_read(uint32_t psn, uint64_t va, uint32_t rkey, uint32_t len, uint32_t npkts,
                     uint32_t msn);
    // A duplicate atomic: its saved result is acknowledged again (after
    // dropping what is pending from 'psn' on). False when 'psn' is not one of
    // the saved atomics; it is never executed again either way.
    bool replay_atomic(uint32_t psn);
    [[nodiscard]] std::optional<uint64_t> saved_result(uint32_t psn) const;

    // Saved and loaded with its QP (transports/snapshot.cpp): a loaded one
    // keeps the bounds above (the capacity at most max_qp_rd_atom), and a
    // READ's packets are those its length takes in 'mtu' bytes each.
    void save(state::Writer &w) const;
    void load(state::Reader &r, uint32_t mtu);

  private:
    struct Saved {
        bool valid = false;
        uint32_t psn = 0;
        uint64_t orig = 0;
        uint32_t msn = 0;
    };
    void drop_from(uint32_t psn);
    void push(const Response &r);

    unsigned int capacity_ = 1;
    unsigned int pending_ = 0;
    Ring<Response> queue_;     // bounded as above
    std::vector<Saved> saved_; // ring of capacity_ entries
    size_t saved_next_ = 0;
};

} // namespace ohca
