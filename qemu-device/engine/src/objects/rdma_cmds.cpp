// SPDX-License-Identifier: GPL-2.0-or-later
// The RDMA resource commands (programming manual section 8). Every command
// validates all of its input before it changes any state.
#include "device/command.hpp"
#include "device/device.hpp"
#include "link/byte_order.hpp"
#include "objects/qp_state.hpp"

#include <algorithm>

namespace ohca {

void Device::rdma_power_on() {
    pds_.reset();
    cqs_.reset();
    ready_.clear();
    timers_.clear();
    qps_.reset();
    srqs_.reset();
    mcast_.clear();
    raw_.reset();
    xrc_.reset();
    uar_refs_.fill(0);
    pbl_.reset();
    keys_.reset();
    roce_backlog_.clear();
    timers_deferred_ = false;
    if (timer_deadline_ != 0) {
        timer_deadline_ = 0;
        host_.set_timer(0);
    }
}

// MR key tags and the QPN cursor start from the host's seed and are kept
// across resets: after one, a peer's stale rkeys and QPNs name nothing (or,
// once the numbers come round again, an object it must still match GID and
// PSN of).
void Device::seed_ids(uint32_t seed) {
    keys_.seed_tags(seed);
    qps_.seed(seed);
}

uint64_t Device::pbl_room() const {
    return pbl_.room();
}

CmdResult Device::write_create_out(const Command &cmd, uint32_t h1, uint32_t h2) {
    return ohca::write_create_out(host_, cmd, h1, h2);
}

} // namespace ohca
