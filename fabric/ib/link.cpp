// SPDX-License-Identifier: GPL-2.0-or-later
#include "ib/link.hpp"

#include "ib/crc.hpp"

#include <algorithm>

namespace ohca::ib {

void FlowControlPacket::write(std::span<uint8_t, kLinkPacketBytes> out) const {
    out[0] = static_cast<uint8_t>((static_cast<uint8_t>(op) << 4) | ((fctbs >> 8) & 0xF));
    out[1] = static_cast<uint8_t>(fctbs);
    out[2] = static_cast<uint8_t>(((vl & 0xF) << 4) | ((fccl >> 8) & 0xF));
    out[3] = static_cast<uint8_t>(fccl);
    const uint16_t crc = crc16(std::span<const uint8_t>(out.data(), 4));
    out[4] = static_cast<uint8_t>(crc);
    out[5] = static_cast<uint8_t>(crc >> 8);
}

bool FlowControlPacket::read(std::span<const uint8_t> in, FlowControlPacket &out) {
    if (in.size() != kLinkPacketBytes) {
        return false;
    }
    const auto crc = static_cast<uint16_t>(in[4] | (in[5] << 8));
    if (crc != crc16(in.first(4))) {
        return false;
    }
    const auto op = static_cast<uint8_t>(in[0] >> 4);
    const auto vl = static_cast<uint8_t>(in[2] >> 4);
    if (op > static_cast<uint8_t>(FcOp::Init) || vl >= kMaxDataVls) {
        return false;
    }
    out.op = static_cast<FcOp>(op);
    out.fctbs = static_cast<uint16_t>(((in[0] & 0xF) << 8) | in[1]);
    out.vl = vl;
    out.fccl = static_cast<uint16_t>(((in[2] & 0xF) << 8) | in[3]);
    return true;
}

namespace {
uint16_t wrap(uint32_t v) {
    return static_cast<uint16_t>(v & kCreditMask);
}
} // namespace

LinkCredits::LinkCredits(uint16_t buffer_blocks, uint8_t vls)
    : vls_(std::clamp<uint8_t>(vls, 1, kMaxDataVls)) {
    for (Rx &rx : rx_) {
        rx.buffer = buffer_blocks;
    }
}

bool LinkCredits::may_send(uint8_t vl, uint16_t blocks) const {
    if (vl == 15) {
        return true;
    }
    return blocks <= kMaxPacketBlocks && blocks <= credit(vl);
}

void LinkCredits::on_sent(uint8_t vl, uint16_t blocks) {
    if (vl < vls_) {
        tx_[vl].fctbs = wrap(tx_[vl].fctbs + static_cast<uint32_t>(blocks));
    }
}

uint16_t LinkCredits::credit(uint8_t vl) const {
    if (vl >= vls_ || !tx_[vl].heard) {
        return 0;
    }
    // Modulo 4096; more than half the space means the limit is behind us.
    const uint16_t d = wrap(tx_[vl].fccl + 4096u - tx_[vl].fctbs);
    return d <= kMaxCreditWindow ? d : 0;
}

bool LinkCredits::on_received(uint8_t vl, uint16_t blocks) {
    if (vl >= vls_) {
        return false;
    }
    Rx &rx = rx_[vl];
    // The FCCL we advertised bounds what the peer may send; a packet that
    // does not fit went beyond it. ABR still counts it: the sender did.
    rx.abr = wrap(rx.abr + static_cast<uint32_t>(blocks));
    if (rx.occupied > rx.buffer || blocks > rx.buffer - rx.occupied) {
        return false;
    }
    rx.occupied = static_cast<uint16_t>(rx.occupied + blocks);
    return true;
}

void LinkCredits::on_released(uint8_t vl, uint16_t blocks) {
    if (vl >= vls_) {
        return;
    }
    Rx &rx = rx_[vl];
    rx.occupied = blocks > rx.occupied ? 0 : static_cast<uint16_t>(rx.occupied - blocks);
    rx.pending = true;
}

void LinkCredits::set_buffer(uint8_t vl, uint16_t blocks) {
    if (vl < vls_ && rx_[vl].buffer != blocks) {
        rx_[vl].buffer = blocks;
        rx_[vl].pending = true;
    }
}

bool LinkCredits::on_fcp(const FlowControlPacket &fcp) {
    if (fcp.vl >= vls_) {
        return false;
    }
    tx_[fcp.vl].fccl = wrap(fcp.fccl);
    tx_[fcp.vl].heard = true;
    rx_[fcp.vl].abr = wrap(fcp.fctbs);
    return true;
}

uint16_t LinkCredits::fccl(uint8_t vl) const {
    if (vl >= vls_) {
        return 0;
    }
    const Rx &rx = rx_[vl];
    const uint16_t free =
        rx.occupied >= rx.buffer ? 0 : static_cast<uint16_t>(rx.buffer - rx.occupied);
    return wrap(rx.abr + static_cast<uint32_t>(std::min(free, kMaxCreditWindow)));
}

FlowControlPacket LinkCredits::take_fcp(uint8_t vl, FcOp op) {
    FlowControlPacket f;
    f.op = op;
    f.vl = vl;
    if (vl < vls_) {
        f.fctbs = tx_[vl].fctbs;
        f.fccl = fccl(vl);
        rx_[vl].pending = false;
    }
    return f;
}

void LinkCredits::mark_all_pending() {
    for (uint8_t v = 0; v < vls_; ++v) {
        rx_[v].pending = true;
    }
}

LinkCredits::VlCounters LinkCredits::counters(uint8_t vl) const {
    if (vl >= vls_) {
        return {};
    }
    return {tx_[vl].fctbs, tx_[vl].fccl, tx_[vl].heard, rx_[vl].abr};
}

bool LinkCredits::restore(uint8_t vl, const VlCounters &c) {
    if (vl >= vls_ || wrap(c.fctbs) != c.fctbs || wrap(c.fccl) != c.fccl || wrap(c.abr) != c.abr) {
        return false;
    }
    tx_[vl] = {c.fctbs, c.fccl, c.heard};
    rx_[vl] = {c.abr, 0, rx_[vl].buffer, true};
    return true;
}

void LinkCredits::reset() {
    tx_ = {};
    for (Rx &rx : rx_) {
        rx = {0, 0, rx.buffer, true}; // the buffers stay
    }
}

} // namespace ohca::ib
