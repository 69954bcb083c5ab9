// SPDX-License-Identifier: GPL-2.0-or-later
// The port's transmit pacer (tx_pacer.hpp).
#include "device/tx_pacer.hpp"

#include <algorithm>

namespace ohca {

void TxPacer::configure(uint32_t speed_mbps, uint32_t burst_bytes) {
    speed_mbps_ = speed_mbps;
    burst_ = speed_mbps != 0 ? static_cast<int64_t>(burst_bytes) * kUnit : 0;
    reset();
}

void TxPacer::reset() {
    credit_ = burst_;
    credit_after_ = burst_;
    last_ns_ = 0;
    wake_ns_ = 0;
    armed_ = 0;
    waited_ = false;
}

// The tokens earned since the last refill, counted as if what was sent
// since went at the end (the bucket full up to then): never more than a
// real bucket would hold, so the bytes sent in any interval of T ns are at
// most burst + T x rate (+ the one frame that overdraws). After an idle
// time this undercounts once by what was sent before the first wait; while
// the bucket keeps running dry the count is exact (the line rate). A host
// without a clock (now 0) is not paced.
bool TxPacer::refill(uint64_t now) const {
    if (now == 0) {
        return true;
    }
    if (last_ns_ == 0 || now < last_ns_) {
        last_ns_ = now; // the first wait: the bucket was full until now
    }
    const int64_t spent = credit_after_ - credit_;
    const auto rate = static_cast<int64_t>(speed_mbps_);
    // Beyond the time that fills the bucket nothing more counts (and the
    // product cannot overflow).
    const int64_t full_in = (burst_ - credit_after_) / rate + 1;
    const auto elapsed =
        static_cast<int64_t>(std::min<uint64_t>(now - last_ns_, static_cast<uint64_t>(full_in)));
    credit_ = std::min(credit_after_ + elapsed * rate, burst_) - spent;
    credit_after_ = credit_;
    last_ns_ = now;
    if (credit_ > 0) {
        return true;
    }
    waited_ = true;
    wake_ns_ = now + static_cast<uint64_t>(-credit_ / rate + 1);
    return false;
}

} // namespace ohca
