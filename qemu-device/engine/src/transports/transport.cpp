// SPDX-License-Identifier: GPL-2.0-or-later
// What every transport shares (transport.hpp). The services themselves are
// their owners': the port (device/wire_port.cpp), the run loop
// (device/run_loop.cpp), the keys and the completions (objects/).
#include "transports/transport.hpp"

#include "link/byte_order.hpp"

#include <algorithm>
#include <cstring>

namespace ohca {

// ---- what every transport shares ----------------------------------------------

bool TransportServices::datagram_stopped(Qp &qp, unsigned int &budget) {
    if (qp.state == OHCA_QPS_ERR) {
        flush(qp, budget);
        return true;
    }
    if (qp.state == OHCA_QPS_SQD && qp.sq_draining) {
        qp.sq_draining = false;
        post_event(OHCA_EQE_QP_EVENT, OHCA_QP_EV_SQ_DRAINED, qp.qpn, 0, 0);
    }
    if (qp.state != OHCA_QPS_SQE) {
        return qp.state != OHCA_QPS_RTS;
    }
    if (qp.sq_fetched != qp.sq.pi) {
        --budget;
    }
    while (qp.sq_fetched != qp.sq.pi) {
        SendWr wr;
        wr.index = qp.sq_fetched;
        ohca_send_wqe w{};
        if (qp.sq.ring.read(host(), qp.sq.offset(wr.index), &w, sizeof(w))) {
            wr.wr_id = le(w.wr_id);
        }
        wr.opcode = OHCA_WR_SEND;
        complete_send(qp, wr, OHCA_CQE_WR_FLUSH_ERR, OHCA_VERR_FLUSH);
        ++qp.sq_fetched;
    }
    return true;
}

bool TransportServices::gather(const Qp &qp, const SendWr &wr, uint32_t offset,
                               std::span<uint8_t> out) const {
    if (wr.is_inline) {
        // A zero-length inline WQE has no data buffer (memcpy from NULL).
        if (!out.empty()) {
            std::memcpy(out.data(), wr.inline_data.data() + offset, out.size());
        }
        return true;
    }
    size_t done = 0;
    for (const Sge &s : wr.sges) {
        if (done == out.size()) {
            break;
        }
        if (offset >= s.length) {
            offset -= s.length;
            continue;
        }
        const size_t n = std::min<size_t>(s.length - offset, out.size() - done);
        const KeyResult k = check_key(s.lkey, s.addr + offset, n, 0, qp.pdn);
        if (k.mr == nullptr || !mr_read(*k.mr, s.addr + offset, out.data() + done, n)) {
            return false;
        }
        done += n;
        offset = 0;
    }
    return done == out.size();
}

OdpState TransportServices::odp_touch_sges(const Qp &qp, const std::vector<Sge> &sges,
                                           uint64_t offset, uint64_t len, bool write) {
    if (!has_odp_mrs()) {
        return OdpState::Resident; // skips a key lookup per SGE per packet
    }
    uint64_t done = 0;
    for (const Sge &s : sges) {
        if (done == len) {
            break;
        }
        if (offset >= s.length) {
            offset -= s.length;
            continue;
        }
        const uint64_t n = std::min<uint64_t>(s.length - offset, len - done);
        const KeyResult k =
            check_key(s.lkey, s.addr + offset, n, write ? OHCA_ACCESS_LOCAL_WRITE : 0, qp.pdn);
        if (k.mr != nullptr) {
            const OdpState st = odp_touch(*k.mr, s.addr + offset, n, write);
            if (st != OdpState::Resident) {
                return st;
            }
        }
        done += n;
        offset = 0;
    }
    return OdpState::Resident;
}

void odp_retry_expired(TransportServices &svc, Qp &qp) {
    svc.set_deadline(qp, 0);
    if (qp.odp_wait) {
        qp.odp_wait = false; // try the fault again
        svc.mark_ready(qp);
    }
}

void odp_retry_resumed(TransportServices &svc, Qp &qp) {
    svc.set_deadline(qp, 0);
}

} // namespace ohca
