// SPDX-License-Identifier: GPL-2.0-or-later
#include "transports/responder_resources.hpp"

#include "link/roce_packet.hpp"

#include <algorithm>

namespace ohca {

void ResponderResources::reset(unsigned int max_dest_rd_atomic) {
    queue_.clear();
    pending_ = 0;
    capacity_ = std::max(1u, max_dest_rd_atomic);
    // The ring of saved results is made by the first atomic: a QP that
    // never executes one keeps no storage for it.
    saved_.clear();
    saved_next_ = 0;
}

void ResponderResources::set_capacity(unsigned int max_dest_rd_atomic) {
    const unsigned int cap = std::max(1u, max_dest_rd_atomic);
    if (cap == capacity_) {
        return;
    }
    // Keep the newest saved results that still fit, oldest first.
    std::vector<Saved> keep;
    for (size_t i = 0; i < saved_.size(); ++i) {
        const Saved &s = saved_[(saved_next_ + i) % saved_.size()];
        if (s.valid) {
            keep.push_back(s);
        }
    }
    if (keep.size() > cap) {
        keep.erase(keep.begin(), keep.end() - cap);
    }
    capacity_ = cap;
    if (keep.empty()) {
        saved_.clear();
        saved_next_ = 0;
        return;
    }
    saved_.assign(capacity_, Saved{});
    std::copy(keep.begin(), keep.end(), saved_.begin());
    saved_next_ = keep.size() % capacity_;
}

size_t ResponderResources::saved_atomics() const {
    return static_cast<size_t>(
        std::count_if(saved_.begin(), saved_.end(), [](const Saved &s) { return s.valid; }));
}

void ResponderResources::push(const Response &r) {
    queue_.push_back(r);
    if (r.kind != Response::Kind::Ack) {
        ++pending_;
    }
}

void ResponderResources::pop_front() {
    if (queue_.front().kind != Response::Kind::Ack) {
        --pending_;
    }
    queue_.pop_front();
}

void ResponderResources::drop_pending() {
    queue_.clear();
    pending_ = 0;
}

void ResponderResources::queue_ack(uint32_t psn, uint8_t syndrome, uint32_t msn) {
    Response r;
    r.psn = psn;
    r.syndrome = syndrome;
    r.msn = msn;
    if (!queue_.empty() && queue_.back().kind == Response::Kind::Ack) {
        Response &last = queue_.back();
        const bool last_is_nak = (last.syndrome & 0x60) != kAethAck;
        const bool is_nak = (syndrome & 0x60) != kAethAck;
        if (last_is_nak && !is_nak && psn_diff(psn, last.psn) < 0) {
            return; // the waiting NAK acknowledges everything below its PSN
        }
        last = r;
        return;
    }
    push(r);
}

bool ResponderResources::add_read(uint32_t psn, uint64_t va, uint32_t rkey, uint32_t len,
                                  uint32_t npkts, uint32_t msn) {
    if (full()) {
        return false;
    }
    Response r;
    r.kind = Response::Kind::Read;
    r.psn = psn;
    r.msn = msn;
    r.va = va;
    r.rkey = rkey;
    r.len = len;
    r.npkts = std::max(1u, npkts);
    push(r);
    return true;
}

bool ResponderResources::add_atomic(uint32_t psn, uint64_t orig, uint32_t msn) {
    if (full()) {
        return false;
    }
    if (saved_.empty()) {
        saved_.assign(capacity_, Saved{});
        saved_next_ = 0;
    }
    saved_[saved_next_] = Saved{true, psn, orig, msn};
    saved_next_ = (saved_next_ + 1) % saved_.size();
    Response r;
    r.kind = Response::Kind::Atomic;
    r.psn = psn;
    r.msn = msn;
    r.orig = orig;
    push(r);
    return true;
}

void ResponderResources::drop_from(uint32_t psn) {
    while (!queue_.empty()) {
        const Response &b = queue_.back();
        const bool inside = b.kind == Response::Kind::Read && psn_diff(psn, b.psn) >= 0 &&
                            psn_diff(psn, psn_add(b.psn, b.npkts)) < 0;
        if (psn_diff(b.psn, psn) < 0 && !inside) {
            break;
        }
        if (b.kind != Response::Kind::Ack) {
            --pending_;
        }
        queue_.pop_back();
    }
}

bool ResponderResources::replay_read(uint32_t psn, uint64_t va, uint32_t rkey, uint32_t len,
                                     uint32_t npkts, uint32_t msn) {
    drop_from(psn);
    return add_read(psn, va, rkey, len, npkts, msn);
}

std::optional<uint64_t> ResponderResources::saved_result(uint32_t psn) const {
    for (const Saved &s : saved_) {
        if (s.valid && s.psn == psn) {
            return s.orig;
        }
    }
    return std::nullopt;
}

bool ResponderResources::replay_atomic(uint32_t psn) {
    const Saved *found = nullptr;
    for (const Saved &s : saved_) {
        if (s.valid && s.psn == psn) {
            found = &s;
        }
    }
    if (found == nullptr) {
        return false;
    }
    const Saved s = *found;
    drop_from(psn);
    if (full()) {
        return false;
    }
    Response r;
    r.kind = Response::Kind::Atomic;
    r.psn = s.psn;
    r.msn = s.msn;
    r.orig = s.orig;
    push(r);
    return true;
}

} // namespace ohca
