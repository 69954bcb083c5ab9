// SPDX-License-Identifier: GPL-2.0-or-later
// What the objects of a stream being loaded count of each other. Each
// owner adds, as it loads an object, the references that object holds (as
// its create command would have taken them); once every object is loaded
// the counts the stream holds (a PD's objects, a CQ's QPs, a UAR's users...)
// must equal these, or the stream is refused: a count that is off would let
// a later destroy command free an object something still names.
#pragma once

#include "device/limits.hpp"

#include <ohca/ohca_regs.h>

#include <array>
#include <cstdint>
#include <vector>

namespace ohca::state {

struct Refs {
    explicit Refs(uint32_t max_qp)
        : pd(DeviceLimits::max_pd + 1), cq(DeviceLimits::max_cq + 1), eq(DeviceLimits::max_eq),
          srq(DeviceLimits::max_srq + 1), xrcd(DeviceLimits::max_xrcd + 1),
          qp_windows(max_qp + DeviceLimits::first_qpn), qp_flows(max_qp + DeviceLimits::first_qpn) {
    }

    std::vector<uint32_t> pd;                      // MRs, windows, QPs and SRQs in each PD
    std::vector<uint32_t> cq;                      // QPs and XRC SRQs completing into each CQ
    std::vector<uint32_t> eq;                      // CQs on each completion EQ
    std::vector<uint32_t> srq;                     // QPs on each SRQ
    std::vector<uint32_t> xrcd;                    // XRC SRQs and target QPs of each domain
    std::vector<uint32_t> qp_windows;              // type 2 windows bound through each QP
    std::vector<uint32_t> qp_flows;                // flows steering to each QP
    std::vector<uint32_t> rss;                     // RSS QPs on each configuration slot
    std::array<uint32_t, OHCA_NUM_DB_PAGES> uar{}; // objects ringing on each page
    uint64_t pbl = 0;                              // page-list entries charged
};

} // namespace ohca::state
