// SPDX-License-Identifier: GPL-2.0-or-later
// Link flow control of an InfiniBand port (ib_flow.hpp).
#include "device/ib_flow.hpp"

#include <algorithm>
#include <array>

namespace ohca {

IbFlow::IbFlow(Port &port, uint8_t vls) : port_(port), credits_(0, vls) {
    set_operational(vls);
}

void IbFlow::set_operational(uint8_t vls) {
    const auto n = std::clamp<uint8_t>(vls, 1, credits_.vls());
    if (n == operational_) {
        return;
    }
    operational_ = n;
    const auto each =
        static_cast<uint16_t>(std::min<uint32_t>(kPoolBlocks / n, ib::kMaxCreditWindow));
    for (uint8_t vl = 0; vl < credits_.vls(); ++vl) {
        credits_.set_buffer(vl, vl < n ? each : 0);
    }
}

void IbFlow::clear_held() {
    for (auto &q : held_) {
        q.clear();
    }
    held_count_ = 0;
}

void IbFlow::reset(uint64_t now_ns) {
    credits_.reset();
    clear_held();
    returned_ = {};
    next_fcp_ns_ = 0;
    send_fcps(now_ns);
}

bool IbFlow::room(uint8_t vl, size_t frame_len) const {
    return vl == ib::kVl15 || (vl < ib::kMaxDataVls && held_[vl].empty() &&
                               credits_.may_send(vl, ib::blocks_for(frame_len)));
}

bool IbFlow::short_of_credit(uint8_t vl) const {
    return vl < ib::kMaxDataVls &&
           (!held_[vl].empty() || credits_.credit(vl) < 2 * ib::kMaxPacketBlocks);
}

IbFlow::Out IbFlow::send(std::span<const uint8_t> frame, uint8_t vl) {
    if (vl >= ib::kMaxDataVls) {
        return Out::Dropped; // (VL15 is the caller's: never flow controlled)
    }
    const uint16_t blocks = ib::blocks_for(frame.size());
    if (held_[vl].empty() && credits_.may_send(vl, blocks)) {
        credits_.on_sent(vl, blocks);
        port_.transmit(frame);
        return Out::Sent;
    }
    if (held_count_ >= kMaxHeld) {
        return Out::Dropped;
    }
    held_[vl].emplace_back(frame.begin(), frame.end());
    ++held_count_;
    return Out::Held;
}

// In order within each VL; a VL the peer gives no credit waits alone.
void IbFlow::flush() {
    for (uint8_t vl = 0; vl < ib::kMaxDataVls && held_count_ > 0; ++vl) {
        auto &q = held_[vl];
        while (!q.empty()) {
            const uint16_t blocks = ib::blocks_for(q.front().size());
            if (!credits_.may_send(vl, blocks)) {
                break;
            }
            credits_.on_sent(vl, blocks);
            port_.transmit(q.front());
            q.pop_front();
            --held_count_;
        }
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
    if (vl >= credits_.vls()) {
        return;
    }
    const uint16_t blocks = ib::blocks_for(frame_len);
    credits_.on_released(vl, blocks);
    returned_[vl] = static_cast<uint16_t>(std::min<uint32_t>(returned_[vl] + blocks, 0xFFFF));
    if (credits_.buffer(vl) > 0 && returned_[vl] >= credits_.buffer(vl) / kFcpEveryDivisor) {
        send_fcp(vl);
    }
}

void IbFlow::send_fcp(uint8_t vl) {
    std::array<uint8_t, ib::kLinkPacketBytes> f{};
    credits_.take_fcp(vl).write(f);
    returned_[vl] = 0;
    port_.transmit(f);
}

void IbFlow::send_fcps(uint64_t now_ns) {
    if (now_ns >= next_fcp_ns_) {
        credits_.mark_all_pending();
        next_fcp_ns_ = now_ns + kFcpPeriodNs;
    }
    for (uint8_t vl = 0; vl < credits_.vls(); ++vl) {
        if (credits_.fcp_pending(vl)) {
            send_fcp(vl);
        }
    }
}

} // namespace ohca
