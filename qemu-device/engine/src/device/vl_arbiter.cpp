// SPDX-License-Identifier: GPL-2.0-or-later
// VL arbitration of the device's own port (vl_arbiter.hpp).
#include "device/vl_arbiter.hpp"

#include "device/ib_wire.hpp"
#include "device/limits.hpp"
#include "objects/rdma_objects.hpp"

#include <bit>

namespace ohca {

void QpVlArbiter::push(Qp &qp) {
    if (qp.sched.ready) {
        return;
    }
    const uint8_t vl = wire_.qp_vl(qp);
    const uint8_t list = qp.type == OHCA_QPT_SMI ? kSmi : vl < kUnmapped ? vl : kUnmapped;
    qp.sched.list = list;
    lists_[list].push(qp);
    ++size_;
}

void QpVlArbiter::remove(Qp &qp) {
    if (!qp.sched.ready) {
        return;
    }
    lists_[qp.sched.list < kLists ? qp.sched.list : kUnmapped].remove(qp);
    --size_;
}

void QpVlArbiter::clear() {
    for (auto &l : lists_) {
        l.clear();
    }
    size_ = 0;
    passed_ = 0;
    misses_ = {};
    arb_.reset();
}

uint64_t QpVlArbiter::sl2vl_key() const {
    uint64_t k = 0;
    for (const uint8_t vl : wire_.ib_port().sma_port().sl2vl) {
        k = (k << 4) | (vl & 0xF);
    }
    return k;
}

void QpVlArbiter::rehome() {
    for (uint8_t l = 0; l <= kUnmapped; ++l) {
        // Each QP taken from the list's head goes to its VL's tail: as
        // many as the list held, so each moves once.
        for (size_t n = lists_[l].size(); n > 0; --n) {
            Qp *qp = lists_[l].pop();
            --size_;
            push(*qp);
            stats_.rehomed += qp->sched.list != l ? 1 : 0;
        }
    }
}

void QpVlArbiter::begin_round() {
    passed_ = 0;
    misses_ = {};
    // vl_of() depends on both: the table, and the VLs in operation.
    const uint64_t k = sl2vl_key();
    const uint8_t vls = wire_.ib_port().data_vls();
    if (k != sl2vl_ || vls != vls_) {
        sl2vl_ = k;
        vls_ = vls;
        rehome();
    }
}

uint16_t QpVlArbiter::queued_mask() const {
    uint16_t queued = 0;
    for (uint8_t vl = 0; vl < kUnmapped; ++vl) {
        if (!lists_[vl].empty()) {
            queued |= static_cast<uint16_t>(1u << vl);
        }
    }
    return queued;
}

bool QpVlArbiter::only_unserved() const {
    if (size_ == 0 || !lists_[kSmi].empty()) {
        return false;
    }
    ib::VlArbiter probe = arb_; // picking moves the turns: ask a copy
    const IbPort &p = wire_.ib_port();
    return probe.pick(queued_mask(), p.sma_port(), p.data_vls()) < 0;
}

Qp *QpVlArbiter::next(unsigned int &quantum) {
    bytes_before_ = wire_.data_bytes();
    if (!lists_[kSmi].empty()) {
        picked_ = kSmi; // VL15 before any data VL, whatever the tables
        --size_;
        return lists_[kSmi].pop();
    }
    const auto ready = static_cast<uint16_t>(queued_mask() & ~passed_);
    if (ready == 0) {
        return nullptr;
    }
    const IbPort &p = wire_.ib_port();
    const int vl = arb_.pick(ready, p.sma_port(), p.data_vls());
    if (vl < 0 || vl >= kUnmapped) {
        return nullptr; // the tables serve none of them: they wait for the SM
    }
    if (std::popcount(ready) > 1) {
        // One unit (a packet, mostly): the weights decide packet by packet.
        quantum = 1;
        ++stats_.contended_picks;
    }
    picked_ = static_cast<uint8_t>(vl);
    --size_;
    return lists_[picked_].pop();
}

void QpVlArbiter::visited(unsigned int units) {
    if (picked_ == kSmi) {
        return;
    }
    uint64_t bytes = wire_.data_bytes() - bytes_before_;
    if (units == 0) {
        // Nothing moved: once each of the VL's QPs has been tried in this
        // round, the VL is passed over until the next (the turn ends).
        if (++misses_[picked_] > lists_[picked_].size()) {
            passed_ |= static_cast<uint16_t>(1u << picked_);
            ++stats_.passed_over;
        }
    } else {
        misses_[picked_] = 0;
        if (bytes == 0) {
            // Work that made no packet for the wire (a WQE fetched, a packet
            // looped back) still uses the turn, so no VL keeps it for good.
            bytes = uint64_t{units} * ib::VlArbiter::kWeightBytes;
        }
    }
    arb_.sent(bytes);
}

} // namespace ohca
