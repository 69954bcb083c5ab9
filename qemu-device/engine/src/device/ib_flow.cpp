// SPDX-License-Identifier: GPL-2.0-or-later
// Link flow control of an InfiniBand port (ib_flow.hpp).
#include "device/ib_flow.hpp"

#include <array>

namespace ohca {

void IbFlow::reset(uint64_t now_ns) {
    credits_.reset();
    held_.clear();
    next_fcp_ns_ = 0;
    send_fcps(now_ns);
}

bool IbFlow::room(uint8_t vl, size_t frame_len) const {
    return vl == ib::kVl15 || (held_.empty() && credits_.may_send(vl, ib::blocks_for(frame_len)));
}

IbFlow::Out IbFlow::send(std::span<const uint8_t> frame, uint8_t vl) {
    const uint16_t blocks = ib::blocks_for(frame.size());
    if (held_.empty() && credits_.may_send(vl, blocks)) {
        credits_.on_sent(vl, blocks);
        port_.transmit(frame);
        return Out::Sent;
    }
    if (held_.size() >= kMaxHeld) {
        return Out::Dropped;
    }
    held_.push_back({vl, std::vector<uint8_t>(frame.begin(), frame.end())});
    return Out::Held;
}

// In order: a packet waits for the one before it whatever its VL, so the
// queue stays one bounded FIFO.
void IbFlow::flush() {
    while (!held_.empty()) {
        const Held &h = held_.front();
        const uint16_t blocks = ib::blocks_for(h.frame.size());
        if (!credits_.may_send(h.vl, blocks)) {
            return;
        }
        credits_.on_sent(h.vl, blocks);
        port_.transmit(h.frame);
        held_.pop_front();
    }
}

bool IbFlow::on_link_packet(std::span<const uint8_t> frame) {
    ib::FlowControlPacket fcp;
    if (!ib::FlowControlPacket::read(frame, fcp) || !credits_.on_fcp(fcp)) {
        return false;
    }
    flush();
    return true;
}

bool IbFlow::on_received(uint8_t vl, size_t frame_len) {
    return credits_.on_received(vl, ib::blocks_for(frame_len));
}

void IbFlow::on_consumed(uint8_t vl, size_t frame_len) {
    credits_.on_released(vl, ib::blocks_for(frame_len));
}

void IbFlow::send_fcps(uint64_t now_ns) {
    if (now_ns >= next_fcp_ns_) {
        credits_.mark_all_pending();
        next_fcp_ns_ = now_ns + kFcpPeriodNs;
    }
    for (uint8_t vl = 0; vl < credits_.vls(); ++vl) {
        if (credits_.fcp_pending(vl)) {
            std::array<uint8_t, ib::kLinkPacketBytes> f{};
            credits_.take_fcp(vl).write(f);
            port_.transmit(f);
        }
    }
}

} // namespace ohca
