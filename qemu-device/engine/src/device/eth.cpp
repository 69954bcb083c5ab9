// SPDX-License-Identifier: GPL-2.0-or-later
// The Ethernet port: TX/RX descriptor rings, the receive MAC filter and
// the split between RoCEv2 (UDP 4791, to the RDMA engine) and ordinary
// frames (to the RX ring). Programming manual section 6.
//
#include "device/device.hpp"

#include "link/byte_order.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace ohca {

void Device::eth_tx_doorbell(uint32_t value) {
    if (!running() || !tx_ring_.set_producer(value)) {
        ++stats_.reg_errors;
        return;
    }
    if (tx_ring_.pending() != 0) {
        host_.schedule();
    }
}

void Device::eth_rx_doorbell(uint32_t value) {
    if (!running() || !rx_ring_.set_producer(value)) {
        ++stats_.reg_errors;
    }
}

void Device::eth_irq_mask_write(uint32_t value) {
    if (value > 1) {
        ++stats_.reg_errors;
        return;
    }
    eth_irq_mask_ = value;
    if (value == 0 && eth_irq_pending_) {
        eth_irq_pending_ = false;
        eth_irq_mask_ = 1;
        host_.raise_irq(OHCA_MSIX_ETH);
    }
}

// Descriptors completed: raise vector 1 and mask it, or remember for unmask.
void Device::eth_completed() {
    if (eth_irq_mask_ != 0) {
        eth_irq_pending_ = true;
        return;
    }
    eth_irq_mask_ = 1;
    host_.raise_irq(OHCA_MSIX_ETH);
}

void Device::process_eth_tx() {
    bool completed = false;
    for (uint32_t budget = tx_ring_.size(); budget > 0 && tx_ring_.pending() != 0; --budget) {
        if (!eth_tx_one()) {
            break;
        }
        completed = true;
    }
    if (completed) {
        eth_completed();
    }
    if (tx_ring_.pending() != 0) {
        host_.schedule();
    }
}

// Handles the descriptor at the consumer index. False if the ring itself
// could not be accessed (it is then stopped until destroyed).
bool Device::eth_tx_one() {
    const uint64_t desc_addr = tx_ring_.slot_addr();
    ohca_eth_desc desc;
    if (!host_.read_obj(desc_addr, desc)) {
        tx_ring_.mark_broken();
        ++stats_.eth_tx_errors;
        return false;
    }
    const size_t len = le(desc.len);
    uint16_t flags = OHCA_ETH_DESC_DONE;
    std::array<uint8_t, OHCA_ETH_MAX_FRAME> frame;
    if (len == 0 || len > OHCA_ETH_MAX_FRAME || !host_.read(le(desc.addr), frame.data(), len)) {
        flags |= OHCA_ETH_DESC_ERROR;
        ++stats_.eth_tx_errors;
    } else {
        size_t wire_len = len;
        if (wire_len < OHCA_ETH_MIN_FRAME) {
            std::fill(frame.begin() + static_cast<ptrdiff_t>(len),
                      frame.begin() + OHCA_ETH_MIN_FRAME, uint8_t{0});
            wire_len = OHCA_ETH_MIN_FRAME;
        }
        host_.transmit(frame.data(), wire_len);
        ++stats_.eth_tx_frames;
        ++stats_.port_tx_frames;
        stats_.eth_tx_bytes += wire_len;
    }
    const uint16_t flags_le = le(flags);
    if (!host_.write(desc_addr + offsetof(ohca_eth_desc, flags), &flags_le, sizeof(flags_le))) {
        tx_ring_.mark_broken();
        ++stats_.eth_tx_errors;
        return false;
    }
    tx_ring_.advance();
    return true;
}

bool Device::mac_filter_accepts(std::span<const uint8_t> frame) const {
    if ((rx_mode_ & OHCA_RX_MODE_PROMISC) != 0) {
        return true;
    }
    // Broadcast and every multicast: the device has no multicast filter
    // list, so ALLMULTI is always in effect.
    if ((frame[0] & 1) != 0) {
        return true;
    }
    return std::equal(cfg_.mac.begin(), cfg_.mac.end(), frame.begin());
}

ohca_engine_rx_result Device::receive_frame(std::span<const uint8_t> frame) {
    Entry entry(*this);
    if (!entry.ok()) {
        // Arrived from inside one of our own callbacks: hold it.
        rx_waiting_ = true;
        host_.schedule();
        return OHCA_ENGINE_RX_RETRY;
    }
    if (ib_) {
        return ib_receive(frame); // raw IB packets: no Ethernet header
    }
    if (frame.size() < OHCA_ETH_HDR_LEN || !mac_filter_accepts(frame)) {
        ++stats_.eth_rx_dropped_filter;
        return OHCA_ENGINE_RX_CONSUMED;
    }
    if (link_.claims(frame)) {
        if (frame.size() > DeviceLimits::max_roce_frame) {
            // Longer than any packet of a 4096-byte MTU: never queued, so
            // the backlog holds at most max_roce_backlog such frames.
            ++roce_.rx_malformed;
            ++stats_.roce_rx_dropped;
            return OHCA_ENGINE_RX_CONSUMED;
        }
        if (running() && cfg_.link_up && roce_backlog_.size() >= DeviceLimits::max_roce_backlog) {
            // Backpressure: the host holds the frame until rx_resume.
            rx_waiting_ = true;
            host_.schedule();
            return OHCA_ENGINE_RX_RETRY;
        }
        roce_enqueue(frame); // handled by process()
        return OHCA_ENGINE_RX_CONSUMED;
    }
    if (running() && cfg_.link_up && raw_.steer(frame)) {
        ++stats_.port_rx_frames;
        return OHCA_ENGINE_RX_CONSUMED; // a flow took it
    }
    return eth_rx(frame);
}

ohca_engine_rx_result Device::eth_rx(std::span<const uint8_t> frame) {
    if (!running() || !cfg_.link_up || !rx_ring_.exists() || rx_ring_.broken()) {
        ++stats_.eth_rx_dropped_no_desc;
        return OHCA_ENGINE_RX_CONSUMED;
    }
    if (frame.size() > OHCA_ETH_MAX_FRAME) {
        ++stats_.eth_rx_dropped_too_long;
        return OHCA_ENGINE_RX_CONSUMED;
    }
    if (rx_ring_.pending() == 0) {
        // As a NIC does: no descriptor, the frame is dropped. Holding it
        // would stop the netdev and with it every RoCE frame behind it.
        ++stats_.eth_rx_dropped_no_desc;
        return OHCA_ENGINE_RX_CONSUMED;
    }
    const uint64_t desc_addr = rx_ring_.slot_addr();
    ohca_eth_desc desc;
    if (!host_.read_obj(desc_addr, desc)) {
        rx_ring_.mark_broken();
        ++stats_.eth_rx_errors;
        return OHCA_ENGINE_RX_CONSUMED;
    }
    if (frame.size() > le(desc.len)) {
        // Dropped; the descriptor stays for the next frame.
        ++stats_.eth_rx_dropped_too_long;
        return OHCA_ENGINE_RX_CONSUMED;
    }
    auto len = static_cast<uint16_t>(frame.size());
    uint16_t flags = OHCA_ETH_DESC_DONE;
    if (!host_.write(le(desc.addr), frame.data(), frame.size())) {
        len = 0;
        flags |= OHCA_ETH_DESC_ERROR;
        ++stats_.eth_rx_errors;
    } else {
        ++stats_.eth_rx_frames;
        ++stats_.port_rx_frames;
        stats_.eth_rx_bytes += frame.size();
    }
    const uint16_t len_le = le(len);
    const uint16_t flags_le = le(flags);
    if (!host_.write(desc_addr + offsetof(ohca_eth_desc, len), &len_le, sizeof(len_le)) ||
        !host_.write(desc_addr + offsetof(ohca_eth_desc, flags), &flags_le, sizeof(flags_le))) {
        rx_ring_.mark_broken();
        ++stats_.eth_rx_errors;
        return OHCA_ENGINE_RX_CONSUMED;
    }
    rx_ring_.advance();
    eth_completed();
    return OHCA_ENGINE_RX_CONSUMED;
}

} // namespace ohca
