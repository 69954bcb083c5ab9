// SPDX-License-Identifier: GPL-2.0-or-later
// Where an object owner posts an asynchronous event: EQ 0, which the device
// owns. Owners hold an EventSink, never the device.
#pragma once

#include <cstdint>

namespace ohca {

class EventSink {
  public:
    EventSink() = default;
    EventSink(const EventSink &) = delete;
    EventSink &operator=(const EventSink &) = delete;

    virtual void post_event(uint8_t type, uint16_t code, uint32_t p0, uint32_t p1, uint32_t p2) = 0;
    // A QP event a wire peer's packets caused (COMM_EST, a responder
    // error): such events take at most half of EQ 0, the rest are dropped.
    virtual void post_peer_event(uint16_t code, uint32_t qpn) = 0;

  protected:
    ~EventSink() = default;
};

} // namespace ohca
