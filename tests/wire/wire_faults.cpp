// SPDX-License-Identifier: GPL-2.0-or-later
#include "wire_faults.hpp"

#include <algorithm>
#include <utility>

namespace ohca_wire {

std::optional<size_t> roce_payload_offset(const std::vector<uint8_t> &f) {
    auto get16 = [&](size_t o) { return static_cast<uint16_t>((f[o] << 8) | f[o + 1]); };
    if (f.size() < 14) {
        return std::nullopt;
    }
    size_t l3 = 14;
    uint16_t type = get16(12);
    if (type == 0x8100) {
        if (f.size() < 18) {
            return std::nullopt;
        }
        type = get16(16);
        l3 = 18;
    }
    size_t l4 = 0;
    if (type == 0x0800) {
        if (f.size() < l3 + 20 || (f[l3] >> 4) != 4 || f[l3 + 9] != 17) {
            return std::nullopt;
        }
        l4 = l3 + size_t{f[l3] & 0x0fu} * 4;
    } else if (type == 0x86dd) {
        if (f.size() < l3 + 40 || (f[l3] >> 4) != 6 || f[l3 + 6] != 17) {
            return std::nullopt;
        }
        l4 = l3 + 40;
    } else {
        return std::nullopt;
    }
    if (f.size() < l4 + 8 || get16(l4 + 2) != kRoceUdpPort) {
        return std::nullopt;
    }
    return l4 + 8;
}

FaultLine::FaultLine(const FaultConfig &cfg, uint64_t seed) : cfg_(cfg), state_(seed) {}

// splitmix64: small, fast and good enough to pick faults.
uint64_t FaultLine::next_u64() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double FaultLine::uniform() {
    return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
}

void FaultLine::schedule(uint64_t due, std::vector<uint8_t> frame) {
    queue_.push_back(Pending{due, seq_++, std::move(frame)});
}

void FaultLine::push(uint64_t now_us, std::vector<uint8_t> frame) {
    ++stats_.rx;
    const std::optional<size_t> roce = roce_payload_offset(frame);
    if (roce) {
        ++stats_.roce;
    }
    // Every frame draws the same numbers, so one frame's fate depends only
    // on its position in the stream, not on the fates before it.
    const double r_loss = uniform(), r_dup = uniform(), r_reorder = uniform();
    const double r_delay = uniform(), r_delay_amount = uniform();
    const double r_corrupt = uniform();
    const uint64_t r_bit = next_u64();
    const bool faulty = roce || !cfg_.roce_only;

    if (faulty && r_loss < cfg_.loss) {
        ++stats_.dropped;
        return;
    }
    if (faulty && r_corrupt < cfg_.corrupt && frame.size() > 14) {
        // RoCE: after the BTH's first two bytes (opcode, flags and transport
        // version are checked before the ICRC), so the ICRC catches it.
        // Others: anywhere after the Ethernet header.
        const size_t from = roce ? std::min(*roce + 2, frame.size() - 1) : 14;
        const size_t span = frame.size() - from;
        frame[from + (r_bit >> 3) % span] ^= static_cast<uint8_t>(1u << (r_bit & 7));
        ++stats_.corrupted;
    }
    uint64_t due = now_us;
    if (faulty && r_delay < cfg_.delay) {
        due += static_cast<uint64_t>(r_delay_amount * static_cast<double>(cfg_.delay_us));
        ++stats_.delayed;
    }
    const bool dup = faulty && r_dup < cfg_.dup;
    if (faulty && !held_ && r_reorder < cfg_.reorder) {
        ++stats_.reordered;
        if (dup) {
            ++stats_.duplicated;
            schedule(due, frame); // the copy goes now, the original later
        }
        held_ = Pending{now_us + cfg_.hold_us, 0, std::move(frame)};
        return;
    }
    if (dup) {
        ++stats_.duplicated;
        schedule(due, frame);
    }
    schedule(due, std::move(frame));
    if (held_) {
        // Behind the frame that overtook it.
        schedule(std::max(due, now_us), std::move(held_->frame));
        held_.reset();
    }
}

std::vector<std::vector<uint8_t>> FaultLine::pop_due(uint64_t now_us) {
    if (held_ && held_->due <= now_us) {
        schedule(held_->due, std::move(held_->frame));
        held_.reset();
    }
    std::stable_sort(queue_.begin(), queue_.end(), [](const Pending &x, const Pending &y) {
        return x.due != y.due ? x.due < y.due : x.seq < y.seq;
    });
    std::vector<std::vector<uint8_t>> out;
    size_t n = 0;
    while (n < queue_.size() && queue_[n].due <= now_us) {
        out.push_back(std::move(queue_[n].frame));
        ++n;
    }
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<long>(n));
    stats_.tx += out.size();
    return out;
}

std::optional<uint64_t> FaultLine::next_due() const {
    std::optional<uint64_t> t;
    for (const Pending &p : queue_) {
        if (!t || p.due < *t) {
            t = p.due;
        }
    }
    if (held_ && (!t || held_->due < *t)) {
        t = held_->due;
    }
    return t;
}

} // namespace ohca_wire
