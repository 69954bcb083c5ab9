// SPDX-License-Identifier: GPL-2.0-or-later
// The device's limits and transport constants (QUERY_DEVICE reports the
// first group; every part of the engine includes this without Device).
#pragma once

#include "device/gid_table.hpp"

#include <ohca/ohca_cmd.h>
#include <ohca/ohca_queue.h>
#include <ohca/ohca_regs.h>

#include <cstddef>
#include <cstdint>

namespace ohca {

// Limits reported by QUERY_DEVICE (the RDMA objects come with the transport).
struct DeviceLimits {
    static constexpr uint32_t fw_version = OHCA_FW_VERSION(1, 0, 0);
    static constexpr uint32_t hw_version = 1;
    // No IEEE OUI of our own: report the PCI vendor ID, as efa does.
    static constexpr uint32_t vendor_id = OHCA_PCI_VENDOR_ID;
    static constexpr uint32_t vendor_part_id = OHCA_PCI_DEVICE_ID;
    static constexpr uint64_t max_mr_size = uint64_t{1} << 40;
    static constexpr uint64_t page_size_cap =
        (uint64_t{1} << 12) | (uint64_t{1} << 21) | (uint64_t{1} << 30);
    // max_qp is the host's choice (ohca_engine_config, DeviceConfig::max_qp).
    static constexpr uint32_t max_qp_wr = 4096;
    static constexpr uint32_t max_sge = 16;
    static constexpr uint32_t max_sge_rd = 16;
    static constexpr uint32_t max_cq = 1024;
    // every entry of the largest ring but the one kept free
    static constexpr uint32_t max_cqe = (uint32_t{1} << OHCA_CQ_LOG_MAX) - 1;
    static constexpr uint32_t max_mr = 4096;
    // Memory windows (mw.cpp) share the key space with MRs: key indices
    // 1..max_mr + max_mw, each either an MR or a window.
    static constexpr uint32_t max_mw = 1024;
    static constexpr uint32_t max_keys = max_mr + max_mw;
    static constexpr uint32_t max_pd = 1024;
    static constexpr uint32_t max_qp_rd_atom = 16;
    static constexpr uint32_t max_qp_init_rd_atom = 16;
    static constexpr uint32_t max_ah = 4096;
    static constexpr uint32_t max_srq = 256;
    static constexpr uint32_t max_srq_wr = 4096;
    static constexpr uint32_t max_srq_sge = 16;
    // XRC domains (ALLOC_XRCD); each is a number and a reference count.
    static constexpr uint32_t max_xrcd = 256;
    // Multicast: a UD SEND to a group reaches at most max_mcast_qp_attach
    // QPs, so the work one packet causes stays bounded.
    static constexpr uint32_t max_mcast_grp = 256;
    static constexpr uint32_t max_mcast_qp_attach = 32;
    static constexpr uint32_t max_total_mcast_qp_attach = 1024;
    // Device atomics are serialised in the engine, but a read-modify-write
    // through two DMA accesses is not atomic against the guest's CPUs:
    // IBTA ATOMIC_HCA, not GLOB (programming manual section 10).
    static constexpr uint32_t atomic_cap = OHCA_ATOMIC_HCA;
    static constexpr uint32_t max_inline_data = 256;
    static constexpr uint32_t max_uar = OHCA_NUM_DB_PAGES - 1;
    static constexpr uint32_t max_eq = OHCA_NUM_MSIX - 1; // vectors 0, 2..7
    static constexpr uint32_t max_msg_size = uint32_t{1} << 31;
    static constexpr uint32_t gid_table_len = kGidTableLen;
    static constexpr uint32_t pkey_table_len = 1;
    static constexpr uint32_t num_ports = 1;
    // Fast registration: page-list entries per fast-registration MR.
    static constexpr uint32_t max_fast_reg_page_list_len = OHCA_MAX_FAST_REG_PAGES;
    static constexpr uint32_t dev_caps =
        OHCA_DEV_CAP_FAST_REG | OHCA_DEV_CAP_MW | OHCA_DEV_CAP_RESIZE_CQ | OHCA_DEV_CAP_REREG_MR |
        OHCA_DEV_CAP_XRC | OHCA_DEV_CAP_DM | OHCA_DEV_CAP_RAW_ETH | OHCA_DEV_CAP_ATOMIC_WRITE |
        OHCA_DEV_CAP_ODP | OHCA_DEV_CAP_CQ_MODERATION | OHCA_DEV_CAP_EQ0_HOLD |
        OHCA_DEV_CAP_IB_LINK | OHCA_DEV_CAP_PFC | OHCA_DEV_CAP_RSS | OHCA_DEV_CAP_DB_RECORD |
        OHCA_DEV_CAP_SRQ_DB_RECORD;
    // Flow steering rules (CREATE_FLOW) of all raw QPs: every frame the
    // port receives, and every frame a raw QP sends, is matched against
    // each of them (raw_eth.cpp), so the table stays small.
    static constexpr uint32_t max_flow = 64;
    // On-demand paging (odp.hpp): page faults outstanding (each one a
    // posted event and a table entry scanned per fault), and the
    // translation chunks (4 KiB of host memory each, 512 pages) of all ODP
    // MRs: 1 GiB of 4 KiB pages mapped at once, 2 MiB of host memory.
    static constexpr uint32_t odp_caps =
        OHCA_ODP_RC | OHCA_ODP_XRC | OHCA_ODP_UD_SEND | OHCA_ODP_IMPLICIT;
    static constexpr uint32_t max_odp_faults = 32;
    static constexpr uint32_t max_odp_chunks = 512;
    // A requester waiting for a fault that could not be posted tries again
    // after this long (one resolved sooner wakes it at once).
    static constexpr uint64_t odp_retry_ns = 1'000'000;
    // An outstanding fault is posted again after this long unanswered.
    static constexpr uint64_t odp_fault_repost_ns = 1'000'000'000;
    // Completion event moderation (MODIFY_CQ): the verbs' whole range, 16
    // bits each. A held event costs its CQ a place in the CQ timer heap,
    // nothing per CQE.
    static constexpr uint32_t max_cq_mod_count = 0xffff;
    static constexpr uint32_t max_cq_mod_period_us = 0xffff;
    // Device memory (dm.hpp): its size and the live allocations.
    static constexpr uint32_t max_dm = OHCA_DM_MAX_ALLOCS;
    static constexpr uint64_t max_dm_size = static_cast<uint64_t>(OHCA_DM_SIZE);
    // DCQCN's rate parameters' upper bound (mlx5's, whatever the speed).
    static constexpr uint32_t cc_max_rate_mbps = 10000;
    static constexpr uint32_t default_mtu = 1500;
    // Enforced by CREATE_QP: 2^log_size <= max_qp_wr.
    static constexpr unsigned int max_wq_log = 12;
    // Handles: eqn 1..max_eq-1, pdn 1..max_pd, MR index 1..max_mr,
    // cqn 1..max_cq, qpn 2..max_qp+1 (0 and 1 are the IBTA special QPs).
    static constexpr uint32_t first_qpn = 2;
    // Local ACK timeout floor under emulation (a TCG peer can go unscheduled
    // for half a second), and the RoCE RX backlog. The QP's local ACK
    // timeout, max(4.096 us << timeout, this), is the ceiling of the
    // retransmission timeout and the one retry_cnt counts (docs/wire.md).
    static constexpr uint64_t min_ack_timeout_ns = 200'000'000;
    // The retransmission timeout from the measured round trip (RFC 6298,
    // samples only from packets sent once; requester.cpp) is at least this:
    // a round trip between two TCG VMs is 0.1-5 ms, and host scheduling of
    // a loaded machine adds a few milliseconds now and then.
    static constexpr uint64_t min_rto_ns = 10'000'000;
    // The retransmission timeout before the first round trip is measured
    // (a new connection's first packets), when the QP's local ACK timeout
    // is longer: an early try as any measured RTO's (retry_cnt does not
    // count it), so a loss at a connection's start costs this, not a
    // local ACK timeout of a second or more (timeout 18: 1.07 s).
    static constexpr uint64_t initial_rto_ns = min_ack_timeout_ns;
    // After an ACK timeout the requester sends at most this many of the
    // oldest unacknowledged packets again before a response tells a
    // spurious timeout from a loss (requester.cpp, F-RTO). Two, not one:
    // a probe that loses its first packet again draws a NAK from the
    // second at once instead of costing another timeout.
    static constexpr uint32_t frto_probe_pkts = 2;
    static constexpr uint64_t min_rnr_delay_ns = 1'000'000;
    // rnr_retry 7 retries for ever: after as many RNR NAKs in a row as a
    // finite rnr_retry could allow (7), each wait doubles up to this.
    static constexpr uint64_t max_rnr_backoff_ns = 100'000'000;
    static constexpr size_t max_roce_backlog = 1024;
    // Longest RoCE frame taken: a 4096-byte payload behind Ethernet, VLAN,
    // IPv6, UDP, BTH and RETH, with ImmDt and ICRC, is 4198 bytes; the rest
    // is room to spare. With max_roce_backlog it bounds the backlog (4.5 MB).
    static constexpr size_t max_roce_frame = 4096 + 256;
    // Looped-back packets a QP may generate only while the backlog has this
    // much room left (ACKs answer consumed packets and need no room).
    static constexpr size_t loopback_reserve = 64;
    // READ response packets one QP sends per pass of the work loop.
    static constexpr unsigned int read_resp_per_pass = 64;
    // The requester's congestion window: packets past the oldest
    // unacknowledged PSN, READ response PSNs included (docs/wire.md). It
    // starts at initial_window_bytes of path MTU packets (at most
    // initial_window, at least min_window): about what a host UDP socket
    // with Linux's default 208 KiB receive buffer holds (92 frames of 1 KiB,
    // 25 of 4 KiB), so a first burst does not overflow the socket between
    // two VMs. It grows by the packets acknowledged (slow start) up to
    // max_window, halves on a NAK or skipped responses, drops to min_window
    // on an ACK timeout.
    static constexpr uint32_t initial_window_bytes = 64 * 1024;
    static constexpr uint32_t initial_window = 64;
    static constexpr uint32_t min_window = 4;
    static constexpr uint32_t max_window = 1024;
    // How often the requester asks for an ACK inside a long message (more
    // often when the window is smaller).
    static constexpr uint32_t ack_req_every = 64;
    // One engine run (process()) ends once it has run this long, so it never
    // holds the host's lock for long (QEMU: the BQL, against vCPU doorbells);
    // what is left is rescheduled. The clock is read every run_clock_every
    // units of work (a packet, a WQE, a received frame).
    static constexpr uint64_t max_run_ns = 200'000;
    static constexpr unsigned int run_clock_every = 16;
    // And whatever the clock does, at most this many units of work per run
    // (the bound that holds when the clock stands still, as in a paused VM
    // or a test); a visit may pass it by less than qp_quantum.
    static constexpr unsigned int max_run_work = 4096;
    // A run in a doorbell (ohca_engine_doorbell_fast(); the host gives the
    // work bound) ends after this long: the guest's CPU waits for it.
    static constexpr uint64_t doorbell_run_ns = 50'000;
    // Fairness: packets or WQEs one ready QP may send per visit before the
    // next ready QP's turn.
    static constexpr unsigned int qp_quantum = 64;
    // Timer expiries (QP and CQ deadlines together) one run handles; the
    // rest are the first thing the next run does, which is scheduled at
    // once (a thousand QPs timing out together cost several runs, never
    // one long one).
    static constexpr unsigned int max_run_timers = 256;
    // Page-list entries all objects together may hold (8 bytes of host
    // memory each): 32 MiB, enough for 16 GiB of guest memory registered in
    // 4 KiB pages. Beyond it a create command answers NO_RESOURCES.
    static constexpr uint64_t max_pbl_entries = uint64_t{1} << 22;
};

} // namespace ohca
