// SPDX-License-Identifier: GPL-2.0-or-later
// Device counters reported by QUERY_STATS and QUERY_PORT.
#pragma once

#include <cstdint>

namespace ohca {

struct Stats {
    uint64_t eth_rx_frames = 0;
    uint64_t eth_rx_bytes = 0;
    uint64_t eth_rx_dropped_no_desc = 0;
    uint64_t eth_rx_dropped_filter = 0;
    uint64_t eth_rx_dropped_too_long = 0;
    uint64_t eth_rx_errors = 0;
    uint64_t eth_tx_frames = 0;
    uint64_t eth_tx_bytes = 0;
    uint64_t eth_tx_errors = 0;
    uint64_t roce_rx_frames = 0;
    uint64_t roce_rx_dropped = 0;
    // Of those: the receive backlog was full (a looped-back packet), or
    // the port was down or the device stopped when the frame came.
    uint64_t rx_backlog_dropped = 0;
    uint64_t cmd_completed = 0;
    uint64_t cmd_failed = 0;
    uint64_t reg_errors = 0;
    uint64_t db_errors = 0;
    // Port totals: every frame accepted from / put on the wire.
    uint64_t port_rx_frames = 0;
    uint64_t port_tx_frames = 0;
    // QP events a peer's packets caused while EQ 0 was half full (kept
    // out so that no peer crowds out the driver's own events).
    uint64_t peer_events_dropped = 0;
    // EQ 0 full (async_events.cpp, hold): events that waited for room,
    // those merged into an identical waiting one, and those dropped while
    // waiting (their object is gone, or a page fault: its access faults
    // again). QUERY_STATS eq0_events_dropped adds peer_events_dropped.
    uint64_t eq0_events_held = 0;
    uint64_t eq0_events_merged = 0;
    uint64_t eq0_events_dropped = 0;
    // On-demand paging: page faults posted, and those not posted (fault
    // table full, or EQ 0 half full): their accesses wait and fault again.
    uint64_t odp_faults = 0;
    uint64_t odp_faults_dropped = 0;
};

} // namespace ohca
