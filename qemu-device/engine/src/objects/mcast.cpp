// SPDX-License-Identifier: GPL-2.0-or-later
// Multicast groups (mcast.hpp). Groups live in a small vector scanned
// linearly: their number is bounded (DeviceLimits::max_mcast_grp) and a
// group without QPs is removed at once, so memory follows attachments.
#include "objects/mcast.hpp"

#include "device/command.hpp"
#include "device/device.hpp"
#include "link/byte_order.hpp"

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

// ---- the device's side: commands and delivery -------------------------------

CmdResult Device::cmd_mcast(const Command &cmd, bool attach) {
    const auto in = cmd.input<ohca_mcast_in>();
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_mcast_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    Mgid gid{};
    std::copy(std::begin(in.gid), std::end(in.gid), gid.begin());
    if (!gid_is_multicast(gid)) {
        return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_mcast_in, gid)};
    }
    const uint32_t qpn = le(in.qpn);
    const Qp *qp = find_qp(qpn);
    if (qp == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, qpn};
    }
    if (qp->type != OHCA_QPT_UD) {
        return {OHCA_STATUS_BAD_STATE, qpn};
    }
    switch (attach ? mcast_.attach(gid, qpn) : mcast_.detach(gid, qpn)) {
    case McastTable::Result::Ok:
        return {};
    case McastTable::Result::NoResources:
        return {OHCA_STATUS_NO_RESOURCES, 0};
    case McastTable::Result::Attached:
        return {OHCA_STATUS_BAD_STATE, qpn};
    case McastTable::Result::NotAttached:
        break;
    }
    return {OHCA_STATUS_BAD_FIELD, offsetof(ohca_mcast_in, gid)};
}

// Each attached QP takes the packet by its own rules (UdTransport::receive: state,
// Q_Key, a posted receive WQE); at most max_mcast_qp_attach of them.
void Device::mcast_deliver(const ParsedPacket &p) {
    const Bth &h = p.fields.bth;
    const auto members = mcast_.members(p.dgid);
    if (members.empty() || (h.pkey & 0x7fff) != 0x7fff || !is_ud_opcode(h.opcode)) {
        ++roce_.rx_no_qp;
        ++stats_.roce_rx_dropped;
        return;
    }
    ++roce_.mcast_rx_packets;
    for (const uint32_t qpn : members) {
        if (Qp *qp = find_qp(qpn)) {
            ud_.receive(*qp, p);
        }
    }
}

} // namespace ohca
