// SPDX-License-Identifier: GPL-2.0-or-later
// RoCE packets waiting for process(): frames received from the wire, and
// packets looped back inside the device. A fixed ring of slots whose
// buffers keep their storage, so a steady stream allocates nothing.
//
// A looped-back packet is never framed: its header fields, addresses and
// payload are kept as the requester or responder produced them and handed
// to the receiving QP without parsing or ICRC (they never left the device).
#pragma once

#include "link/roce_packet.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ohca {

struct RoceSlot {
    bool looped = false;
    // Received from the link (not looped back as a frame): on an
    // InfiniBand port it holds the peer's credit until taken in.
    bool wire = false;
    // Its priority as PFC counts the backlog (Pfc::kNone: not counted).
    uint8_t prio = 0xff;
    std::vector<uint8_t> buf; // the frame; looped: the payload
    // Looped only: what parsing the frame would have found (no MACs, VLAN
    // or IP header), its payload a view of buf; handed over as it is.
    ParsedPacket pkt;
};

class RoceBacklog {
  public:
    // One slot more than 'limit': the slot taken by pop() stays intact
    // while the packet in it is handled, whatever that handling pushes.
    explicit RoceBacklog(size_t limit) : slots_(limit + 1), limit_(limit) {}

    [[nodiscard]] size_t size() const { return count_; }
    [[nodiscard]] bool empty() const { return count_ == 0; }
    [[nodiscard]] bool full() const { return count_ >= limit_; }
    // A slot at the back to fill, or nullptr when full.
    RoceSlot *push() {
        if (full()) {
            return nullptr;
        }
        // No division per packet: the index wraps once at most.
        size_t i = head_ + count_;
        if (i >= slots_.size()) {
            i -= slots_.size();
        }
        RoceSlot &s = slots_[i];
        ++count_;
        return &s;
    }
    // Takes back the slot push() just gave.
    void unpush() { --count_; }
    // Removes the front slot and returns it; valid until the next pop().
    RoceSlot &pop() {
        RoceSlot &s = slots_[head_];
        if (++head_ == slots_.size()) {
            head_ = 0;
        }
        --count_;
        return s;
    }
    void clear() {
        head_ = 0;
        count_ = 0;
    }

  private:
    std::vector<RoceSlot> slots_;
    size_t limit_;
    size_t head_ = 0;
    size_t count_ = 0;
};

} // namespace ohca
