// SPDX-License-Identifier: GPL-2.0-or-later
// Doorbell records: reading and checking them (db_record.hpp).
#include "objects/db_record.hpp"

#include "link/byte_order.hpp"
#include "objects/srq.hpp"

#include <ohca/ohca_queue.h>

namespace ohca {

namespace {

// The record's index, or false if it cannot be read.
bool read_index(const Host &host, uint64_t addr, uint32_t &index) {
    ohca_le32 raw = 0;
    if (!host.read(addr + offsetof(ohca_db_record, index), &raw, sizeof(raw))) {
        return false;
    }
    index = le(raw);
    return true;
}

} // namespace

bool db_record_addr_ok(uint64_t addr) {
    return addr % OHCA_DB_RECORD_ALIGN == 0 && addr <= UINT64_MAX - sizeof(ohca_db_record);
}

void DbRecords::refuse(uint32_t &queue_errors) {
    if (queue_errors != UINT32_MAX) {
        ++queue_errors;
    }
    ++refused_;
}

template <class Ring> bool DbRecords::refresh_pi(Ring &q) {
    uint32_t pi = 0;
    if (q.db_record == 0) {
        return false;
    }
    if (!read_index(host_, q.db_record, pi)) {
        refuse(q.record_errors);
        return false;
    }
    const uint32_t before = q.pi;
    if (!take_pi(q, pi)) { // as an OHCA_DB_RQ / OHCA_DB_SRQ doorbell would be
        refuse(q.record_errors);
        return false;
    }
    return q.pi != before;
}

bool DbRecords::refresh_rq_pi(WorkQueue &q) {
    return refresh_pi(q);
}

bool DbRecords::refresh_srq_pi(Srq &srq) {
    return refresh_pi(srq);
}

bool DbRecords::refresh_cq_ci(Cq &cq) {
    uint32_t ci = 0;
    if (cq.db_record == 0) {
        return false;
    }
    if (!read_index(host_, cq.db_record, ci)) {
        refuse(cq.record_errors);
        return false;
    }
    // As an OHCA_DB_CQ doorbell's consumer index (no arm bits here).
    const uint32_t before = cq.ci;
    if ((ci & ~OHCA_DB_CQ_CI_MASK) != 0 || !cq.take_ci(ci)) {
        refuse(cq.record_errors);
        return false;
    }
    return cq.ci != before;
}

void DbRecords::restart_cq_ci(Cq &cq) {
    if (cq.db_record == 0) {
        return;
    }
    const ohca_le32 zero = 0;
    if (!host_.write(cq.db_record + offsetof(ohca_db_record, index), &zero, sizeof(zero))) {
        refuse(cq.record_errors);
    }
}

} // namespace ohca
