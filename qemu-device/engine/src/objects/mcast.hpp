// SPDX-License-Identifier: GPL-2.0-or-later
// Multicast groups (ATTACH_MCAST / DETACH_MCAST): which UD QPs receive a
// UD SEND to a multicast GID. Bounded in groups, QPs per group and
// attachments in all, so per-packet fan-out is bounded too.
#pragma once

#include "state/stream.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace ohca {

using Mgid = std::array<uint8_t, 16>;

// ff00::/8, or an IPv4-mapped 224.0.0.0/4 (RoCE v2 over IPv4).
bool gid_is_multicast(const Mgid &gid);

class McastTable {
  public:
    struct Limits {
        uint32_t groups;
        uint32_t qps_per_group;
        uint32_t total;
    };
    enum class Result { Ok, NoResources, Attached, NotAttached };

    explicit McastTable(Limits limits) : limits_(limits) {}

    Result attach(const Mgid &gid, uint32_t qpn);
    Result detach(const Mgid &gid, uint32_t qpn);
    // Every attachment of a QP (DESTROY_QP); work bounded by the groups.
    void detach_all(uint32_t qpn);
    // The QPs attached to gid (empty if none); valid until the next change.
    [[nodiscard]] std::span<const uint32_t> members(const Mgid &gid) const;
    [[nodiscard]] size_t groups() const { return groups_.size(); }
    [[nodiscard]] size_t attachments() const { return total_; }
    void clear();

    // The groups and their QPs (objects/snapshot.cpp); 'qp_ok' says whether
    // a QPN names a QP that may be attached.
    void save(state::Writer &w) const;
    void load(state::Reader &r, const std::function<bool(uint32_t)> &qp_ok);

  private:
    struct Group {
        Mgid gid{};
        std::vector<uint32_t> qpns;
    };
    // Index of gid's group in groups_, or groups_.size().
    [[nodiscard]] size_t index_of(const Mgid &gid) const;

    Limits limits_;
    std::vector<Group> groups_; // at most limits_.groups; a linear scan
    size_t total_ = 0;
};

} // namespace ohca
