// SPDX-License-Identifier: GPL-2.0-or-later
// The completions side of the transports (CompletionServices): send and
// receive CQEs, a QP's move to the error state and the flush of its WQEs,
// receive WQEs from SRQs. Events go to the device's EQ 0 through an
// EventSink.
#pragma once

#include "objects/cq.hpp"
#include "objects/scheduler.hpp"
#include "objects/srq.hpp"
#include "transports/transport.hpp"

#include <cstdint>
#include <optional>

namespace ohca {

class Completions final : public CompletionServices {
  public:
    Completions(const Host &host, CqTable &cqs, SrqTable &srqs, DbRecords &records,
                EventSink &events, QpScheduler &sched)
        : host_(host), cqs_(cqs), srqs_(srqs), records_(records), events_(events), sched_(sched) {}
    ~Completions() = default;

    // (The CQEs held in a run go first: a QP's event never overtakes its
    // completions.)
    void post_event(uint8_t type, uint16_t code, uint32_t p0, uint32_t p1, uint32_t p2) override {
        cqs_.write_held();
        events_.post_event(type, code, p0, p1, p2);
    }
    void post_peer_event(uint16_t code, uint32_t qpn) override {
        cqs_.write_held();
        events_.post_peer_event(code, qpn);
    }
    void complete_send(Qp &qp, const SendWr &wr, uint8_t status, uint8_t verr) override;
    void complete_recv(Qp &qp, uint64_t wr_id, uint8_t opcode, uint32_t byte_len,
                       std::optional<uint32_t> imm, uint8_t status, uint8_t verr, bool solicited,
                       std::optional<uint32_t> invalidated = std::nullopt) override;
    void qp_to_error(Qp &qp) override;
    SrqTake take_srq_wqe(Qp &qp) override { return srqs_.take_wqe(qp); }
    [[nodiscard]] const Srq *srq(uint32_t srqn) override { return srqs_.find(srqn); }
    DbRecords &records() override { return records_; }

    // In ERR: whether WQEs are left to flush, and the flush of at most
    // 'budget' of them (each a CQE written, most a WQE read too).
    [[nodiscard]] static bool flush_pending(const Qp &qp);
    void flush_qp(Qp &qp, unsigned int &budget);
    void flush(Qp &qp, unsigned int &budget) override {
        if (flush_pending(qp)) {
            flush_qp(qp, budget);
        }
    }
    bool write_cqe(uint32_t cqn, const ohca_cqe &cqe, bool solicited) override;

  private:
    const Host &host_;
    CqTable &cqs_;
    SrqTable &srqs_;
    DbRecords &records_;
    EventSink &events_;
    QpScheduler &sched_;
};

} // namespace ohca
