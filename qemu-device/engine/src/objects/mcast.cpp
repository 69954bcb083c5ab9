// SPDX-License-Identifier: GPL-2.0-or-later
// Multicast groups (mcast.hpp). Groups live in a small vector scanned
// linearly: their number is bounded (DeviceLimits::max_mcast_grp) and a
// group without QPs is removed at once, so memory follows attachments.
#include "objects/mcast.hpp"

#include <algorithm>

namespace ohca {

bool gid_is_multicast(const Mgid &gid) {
    if (gid[0] == 0xff) {
        return true;
    }
    static constexpr std::array<uint8_t, 12> kV4Mapped = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return std::equal(kV4Mapped.begin(), kV4Mapped.end(), gid.begin()) && (gid[12] & 0xf0) == 0xe0;
}

size_t McastTable::index_of(const Mgid &gid) const {
    const auto it =
        std::find_if(groups_.begin(), groups_.end(), [&](const Group &g) { return g.gid == gid; });
    return static_cast<size_t>(it - groups_.begin());
}

McastTable::Result McastTable::attach(const Mgid &gid, uint32_t qpn) {
    const size_t i = index_of(gid);
    const bool exists = i < groups_.size();
    if (exists && std::ranges::find(groups_[i].qpns, qpn) != groups_[i].qpns.end()) {
        return Result::Attached;
    }
    if (total_ >= limits_.total || (!exists && groups_.size() >= limits_.groups) ||
        (exists && groups_[i].qpns.size() >= limits_.qps_per_group)) {
        return Result::NoResources;
    }
    Group &g = exists ? groups_[i] : groups_.emplace_back(Group{gid, {}});
    g.qpns.push_back(qpn);
    ++total_;
    return Result::Ok;
}

McastTable::Result McastTable::detach(const Mgid &gid, uint32_t qpn) {
    const size_t i = index_of(gid);
    if (i == groups_.size() || std::erase(groups_[i].qpns, qpn) == 0) {
        return Result::NotAttached;
    }
    --total_;
    if (groups_[i].qpns.empty()) {
        groups_.erase(groups_.begin() + static_cast<std::ptrdiff_t>(i));
    }
    return Result::Ok;
}

void McastTable::detach_all(uint32_t qpn) {
    for (Group &g : groups_) {
        total_ -= std::erase(g.qpns, qpn);
    }
    std::erase_if(groups_, [](const Group &g) { return g.qpns.empty(); });
}

std::span<const uint32_t> McastTable::members(const Mgid &gid) const {
    const size_t i = index_of(gid);
    return i == groups_.size() ? std::span<const uint32_t>{}
                               : std::span<const uint32_t>(groups_[i].qpns);
}

void McastTable::clear() {
    groups_.clear();
    total_ = 0;
}

} // namespace ohca
