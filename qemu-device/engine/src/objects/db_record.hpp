// SPDX-License-Identifier: GPL-2.0-or-later
// Doorbell records (OHCA_DEV_CAP_DB_RECORD): an RQ's or an SRQ's producer
// index and a CQ's consumer index kept by the consumer in guest memory, read by DMA
// only when the device needs them (no receive WQE left, the CQ full), so
// posting a receive or polling a CQ costs the guest no MMIO exit. A record
// is checked as the matching MMIO doorbell is: a value it would refuse is
// ignored and counted, in the queue's record_errors and in the device's
// db_errors (QUERY_STATS) beside the refused doorbells.
#pragma once

#include "device/host.hpp"
#include "objects/rdma_objects.hpp"

#include <cstdint>

namespace ohca {

struct Srq;

// 0 (no record) or an 8-byte aligned address below 2^64 - 8.
[[nodiscard]] bool db_record_addr_ok(uint64_t addr);

// The records' reader: guest memory through the host, and the device's
// count of refused doorbells, which a refused record value joins.
class DbRecords {
  public:
    DbRecords(const Host &host, uint64_t &refused) : host_(host), refused_(refused) {}
    DbRecords(const DbRecords &) = delete;
    DbRecords &operator=(const DbRecords &) = delete;

    // The RQ's producer index from its record, if it has one: true if the
    // queue gained WQEs. One 4-byte DMA read.
    bool refresh_rq_pi(WorkQueue &q);

    // Whether the device may take a WQE of the RQ: its own copy of the
    // producer index says so, or its record does once read.
    [[nodiscard]] bool rq_has_wqe(WorkQueue &q) { return q.ci != q.pi || refresh_rq_pi(q); }

    // The SRQ's producer index from its record, as refresh_rq_pi().
    bool refresh_srq_pi(Srq &srq);

    // The CQ's consumer index from its record, if it has one: true if it
    // moved. One 4-byte DMA read.
    bool refresh_cq_ci(Cq &cq);

    // RESIZE_CQ restarted the CQ's consumer index at 0: so does its record,
    // written by the device before the command completes (the old ring's
    // index left in it would free slots of the new ring nobody polled until
    // the provider rewrote it). One 4-byte DMA write; a record that cannot
    // be written is counted like one that cannot be read.
    void restart_cq_ci(Cq &cq);

  private:
    // A record that could not be read or whose value was refused.
    void refuse(uint32_t &queue_errors);
    // A producer index from the record of a ring the consumer fills (an
    // RQ, an SRQ): taken as its doorbell's would be (take_pi).
    template <class Ring> bool refresh_pi(Ring &q);

    const Host &host_;
    uint64_t &refused_;
};

} // namespace ohca
