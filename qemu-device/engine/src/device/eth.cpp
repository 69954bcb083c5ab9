// SPDX-License-Identifier: GPL-2.0-or-later
// The Ethernet rings (eth.hpp). Programming manual section 6.
#include "device/eth.hpp"

#include "link/byte_order.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace ohca {

void EthRings::reset() {
    tx_ring_.reset();
    rx_ring_.reset();
    held_mask_ = 0;
    irq_mask_ = 0;
    irq_pending_ = false;
}

void EthRings::tx_doorbell(uint32_t value) {
    if (!d_.status.running() || !tx_ring_.set_producer(value)) {
        ++d_.stats.reg_errors;
        return;
    }
    if (tx_ring_.pending() != 0) {
        d_.host.schedule();
    }
}

void EthRings::rx_doorbell(uint32_t value) {
    if (!d_.status.running() || !rx_ring_.set_producer(value)) {
        ++d_.stats.reg_errors;
        return;
    }
    d_.pfc.eth_rx_level(rx_ring_.pending(), rx_ring_.size()); // XON once refilled
}

void EthRings::irq_mask_write(uint32_t value) {
    if (value > 1) {
        ++d_.stats.reg_errors;
        return;
    }
    irq_mask_ = value;
    if (value == 0 && irq_pending_) {
        irq_pending_ = false;
        irq_mask_ = 1;
        d_.host.raise_irq(OHCA_MSIX_ETH);
    }
}

// Descriptors completed: raise vector 1 and mask it, or remember for unmask.
void EthRings::completed() {
    if (irq_mask_ != 0) {
        irq_pending_ = true;
        return;
    }
    irq_mask_ = 1;
    d_.host.raise_irq(OHCA_MSIX_ETH);
}

void EthRings::process_tx() {
    if (held_mask_ != 0) {
        flush_held();
    }
    bool sent = false;
    bool paused = false;
    for (uint32_t budget = tx_ring_.size(); budget > 0 && tx_ring_.pending() != 0; --budget) {
        const Tx r = tx_one();
        if (r != Tx::Done) {
            paused = r == Tx::Paused;
            break;
        }
        sent = true;
    }
    if (sent) {
        completed();
    }
    // Stopped by a pause: its end (the run loop's timer) runs this again.
    if (tx_ring_.pending() != 0 && !paused) {
        d_.host.schedule();
    }
}

void EthRings::send(std::span<const uint8_t> frame) {
    d_.host.transmit(frame.data(), frame.size());
    d_.port.pacer.sent(frame.size()); // never held: the data after it waits
    ++d_.stats.eth_tx_frames;
    ++d_.port.tx_frames;
    d_.stats.eth_tx_bytes += frame.size();
}

void EthRings::flush_held() {
    for (size_t i = 0; i < held_.size(); ++i) {
        const auto b = static_cast<uint8_t>(1u << i);
        if ((held_mask_ & b) != 0 && !d_.pfc.paused(static_cast<uint8_t>(i))) {
            held_mask_ = static_cast<uint8_t>(held_mask_ & ~b);
            send(held_[i]);
        }
    }
}

// Handles the descriptor at the consumer index: Broken if the ring itself
// could not be accessed (it is then stopped until destroyed), Paused if
// its frame must wait for a pause with its priority's hold taken.
EthRings::Tx EthRings::tx_one() {
    const uint64_t desc_addr = tx_ring_.slot_addr();
    ohca_eth_desc desc;
    if (!d_.host.read_obj(desc_addr, desc)) {
        tx_ring_.mark_broken();
        ++d_.stats.eth_tx_errors;
        return Tx::Broken;
    }
    const size_t len = le(desc.len);
    uint16_t flags = OHCA_ETH_DESC_DONE;
    std::array<uint8_t, OHCA_ETH_MAX_FRAME> frame;
    if (len == 0 || len > OHCA_ETH_MAX_FRAME || !d_.host.read(le(desc.addr), frame.data(), len)) {
        flags |= OHCA_ETH_DESC_ERROR;
        ++d_.stats.eth_tx_errors;
    } else {
        size_t wire_len = len;
        if (wire_len < OHCA_ETH_MIN_FRAME) {
            std::fill(frame.begin() + static_cast<ptrdiff_t>(len),
                      frame.begin() + OHCA_ETH_MIN_FRAME, uint8_t{0});
            wire_len = OHCA_ETH_MIN_FRAME;
        }
        const std::span<const uint8_t> f(frame.data(), wire_len);
        // Classified only while some priority is paused.
        const unsigned int prio =
            d_.pfc.any_paused() ? d_.pfc.frame_priority(f) % Pfc::kPrios : Pfc::kPrios;
        if (prio < Pfc::kPrios && d_.pfc.paused(static_cast<uint8_t>(prio))) {
            const auto b = static_cast<uint8_t>(1u << prio);
            if ((held_mask_ & b) != 0) {
                return Tx::Paused; // the descriptor stays for later
            }
            held_mask_ = static_cast<uint8_t>(held_mask_ | b);
            held_[prio].assign(f.begin(), f.end());
            d_.pfc.count_held();
        } else {
            send(f);
        }
    }
    const uint16_t flags_le = le(flags);
    if (!d_.host.write(desc_addr + offsetof(ohca_eth_desc, flags), &flags_le, sizeof(flags_le))) {
        tx_ring_.mark_broken();
        ++d_.stats.eth_tx_errors;
        return Tx::Broken;
    }
    tx_ring_.advance();
    return Tx::Done;
}

ohca_engine_rx_result EthRings::rx(std::span<const uint8_t> frame) {
    if (!d_.status.running() || !d_.port.link_up || !rx_ring_.exists() || rx_ring_.broken()) {
        ++d_.stats.eth_rx_dropped_no_desc;
        return OHCA_ENGINE_RX_CONSUMED;
    }
    if (frame.size() > OHCA_ETH_MAX_FRAME) {
        ++d_.stats.eth_rx_dropped_too_long;
        return OHCA_ENGINE_RX_CONSUMED;
    }
    if (rx_ring_.pending() == 0) {
        // As a NIC does: no descriptor, the frame is dropped. Holding it
        // would stop the netdev and with it every RoCE frame behind it.
        // With PFC on its priority the peer is told to stop (XOFF).
        ++d_.stats.eth_rx_dropped_no_desc;
        if (d_.pfc.generating()) {
            d_.pfc.eth_rx_starved(d_.pfc.frame_priority(frame));
        }
        return OHCA_ENGINE_RX_CONSUMED;
    }
    const uint64_t desc_addr = rx_ring_.slot_addr();
    ohca_eth_desc desc;
    if (!d_.host.read_obj(desc_addr, desc)) {
        rx_ring_.mark_broken();
        ++d_.stats.eth_rx_errors;
        return OHCA_ENGINE_RX_CONSUMED;
    }
    if (frame.size() > le(desc.len)) {
        // Dropped; the descriptor stays for the next frame.
        ++d_.stats.eth_rx_dropped_too_long;
        return OHCA_ENGINE_RX_CONSUMED;
    }
    auto len = static_cast<uint16_t>(frame.size());
    uint16_t flags = OHCA_ETH_DESC_DONE;
    if (!d_.host.write(le(desc.addr), frame.data(), frame.size())) {
        len = 0;
        flags |= OHCA_ETH_DESC_ERROR;
        ++d_.stats.eth_rx_errors;
    } else {
        ++d_.stats.eth_rx_frames;
        ++d_.port.rx_frames;
        d_.stats.eth_rx_bytes += frame.size();
    }
    const uint16_t len_le = le(len);
    const uint16_t flags_le = le(flags);
    if (!d_.host.write(desc_addr + offsetof(ohca_eth_desc, len), &len_le, sizeof(len_le)) ||
        !d_.host.write(desc_addr + offsetof(ohca_eth_desc, flags), &flags_le, sizeof(flags_le))) {
        rx_ring_.mark_broken();
        ++d_.stats.eth_rx_errors;
        return OHCA_ENGINE_RX_CONSUMED;
    }
    rx_ring_.advance();
    completed();
    return OHCA_ENGINE_RX_CONSUMED;
}

CmdResult EthRings::cmd_create_ring(const Command &cmd) {
    const auto in = cmd.input<ohca_create_eth_ring_in>();
    if (d_.port.ib) {
        return {OHCA_STATUS_BAD_STATE, 0}; // an InfiniBand port carries no Ethernet
    }
    const uint64_t base = le(in.base);
    if (in.type != OHCA_ETH_RING_TX && in.type != OHCA_ETH_RING_RX) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_eth_ring_in, type)};
    }
    if (in.log_size < OHCA_ETH_RING_LOG_MIN || in.log_size > OHCA_ETH_RING_LOG_MAX) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_eth_ring_in, log_size)};
    }
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_create_eth_ring_in, rsvd0),
                              sizeof(in.rsvd0) + sizeof(in.rsvd1))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    if (base == 0 || base % sizeof(ohca_eth_desc) != 0) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_eth_ring_in, base)};
    }
    EthRing &ring = in.type == OHCA_ETH_RING_TX ? tx_ring_ : rx_ring_;
    if (ring.exists()) {
        return {OHCA_STATUS_BAD_STATE, 0};
    }
    // The whole ring must be readable now (it may still vanish later; the
    // data path handles that too).
    const size_t bytes = (size_t{1} << in.log_size) * sizeof(ohca_eth_desc);
    std::array<uint8_t, 4096> chunk{};
    for (size_t off = 0; off < bytes; off += chunk.size()) {
        if (!d_.host.read(base + off, chunk.data(), std::min(chunk.size(), bytes - off))) {
            return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_create_eth_ring_in, base)};
        }
    }
    ring.create(base, in.log_size);
    return {};
}

CmdResult EthRings::cmd_destroy_ring(const Command &cmd) {
    const auto in = cmd.input<ohca_destroy_eth_ring_in>();
    if (in.type != OHCA_ETH_RING_TX && in.type != OHCA_ETH_RING_RX) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_destroy_eth_ring_in, type)};
    }
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_destroy_eth_ring_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    EthRing &ring = in.type == OHCA_ETH_RING_TX ? tx_ring_ : rx_ring_;
    if (!ring.exists()) {
        return {OHCA_STATUS_BAD_STATE, 0};
    }
    ring.destroy();
    return {};
}

} // namespace ohca
