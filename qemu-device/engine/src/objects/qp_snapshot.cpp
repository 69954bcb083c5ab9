// SPDX-License-Identifier: GPL-2.0-or-later
// The QPs of a saved engine (state/stream.hpp, docs/migration.md): each
// QP's objects, queues, attributes and its transport's whole state --
// requester (WQEs in flight, PSNs, window, retries, RTT, F-RTO, credits),
// responder (expected PSN, MSN, the message being received, responder
// resources) and DCQCN. Saving happens between two engine runs, so no WQE
// is half executed: what a WQE has sent and had acknowledged is all in
// these fields. Times travel relative to the engine's clock.
#include "device/limits.hpp"
#include "objects/cq.hpp"
#include "objects/db_record.hpp"
#include "objects/pd.hpp"
#include "objects/qp_table.hpp"
#include "objects/wq.hpp"
#include "transports/rc_common.hpp"
#include "transports/xrc.hpp"

namespace ohca {

namespace {

void save_sges(state::Writer &w, const std::vector<Sge> &sges) {
    w.u32(static_cast<uint32_t>(sges.size()));
    for (const Sge &s : sges) {
        w.u64(s.addr);
        w.u32(s.length);
        w.u32(s.lkey);
    }
}

void load_sges(state::Reader &r, std::vector<Sge> &sges) {
    const uint32_t n = r.count(DeviceLimits::max_sge, 16, "SGEs");
    sges.resize(n);
    for (Sge &s : sges) {
        s.addr = r.u64();
        s.length = r.u32();
        s.lkey = r.u32();
    }
}

void save_wq(state::Writer &w, const WorkQueue &q) {
    w.u8(static_cast<uint8_t>(q.log_size));
    w.u8(static_cast<uint8_t>(q.log_stride));
    q.ring.save(w);
    w.u32(q.pi);
    w.u32(q.ci);
}

// A queue the QP has (with a ring of its size and stride in
// [min_stride, OHCA_WQ_LOG_STRIDE_MAX]) or has not (all zero).
void load_wq(state::Reader &r, WorkQueue &q, bool present, unsigned int min_stride,
             state::Refs &refs) {
    q.log_size = r.u8();
    q.log_stride = r.u8();
    if (!r.ok()) {
        return;
    }
    if (present && (q.log_size > DeviceLimits::max_wq_log || q.log_stride < min_stride ||
                    q.log_stride > OHCA_WQ_LOG_STRIDE_MAX)) {
        r.fail("QP: bad queue size or stride");
        return;
    }
    if (!present && (q.log_size != 0 || q.log_stride != 0)) {
        r.fail("QP: a queue it cannot have");
        return;
    }
    const uint64_t room = DeviceLimits::max_pbl_entries - refs.pbl;
    q.ring.load(r, present ? uint64_t{q.size()} << q.log_stride : 0, present ? room : 0);
    q.pi = r.u32();
    q.ci = r.u32();
    if (r.ok() && q.pi - q.ci > (present ? q.size() : 0)) {
        r.fail("QP: queue indices more than a ring apart");
    }
    refs.pbl += q.ring.npages();
}

void save_wr(state::Writer &w, const SendWr &x) {
    w.u32(x.index);
    w.u64(x.wr_id);
    w.u8(x.opcode);
    w.u8(x.flags);
    w.u32(x.imm);
    w.u64(x.remote_addr);
    w.u32(x.rkey);
    w.u32(x.length);
    w.u64(x.cmp_add);
    w.u64(x.swap);
    w.u32(x.xrc_srqn);
    save_sges(w, x.sges);
    w.boolean(x.is_inline);
    w.u32(static_cast<uint32_t>(x.inline_data.size()));
    w.bytes(x.inline_data);
    w.boolean(x.local_op);
    w.u32(x.first_psn);
    w.u32(x.npkts);
    w.u32(x.ssn);
    w.u32(x.read_pkts);
    w.u32(x.read_start);
    w.u32(x.read_end);
    w.boolean(x.read_done);
    w.u8(x.local_status);
    w.u8(x.local_verr);
}

// A WQE in flight, as the requester's fetch leaves one (requester.cpp):
// its packets follow from its length and the path MTU.
void load_wr(state::Reader &r, SendWr &x, uint32_t mtu) {
    x.index = r.u32();
    x.wr_id = r.u64();
    x.opcode = r.u8();
    x.flags = r.u8();
    x.imm = r.u32();
    x.remote_addr = r.u64();
    x.rkey = r.u32();
    x.length = r.u32();
    x.cmp_add = r.u64();
    x.swap = r.u64();
    x.xrc_srqn = r.u32();
    load_sges(r, x.sges);
    x.is_inline = r.boolean();
    const uint32_t inl = r.count(DeviceLimits::max_inline_data, 1, "inline data");
    x.inline_data.resize(inl);
    r.bytes(x.inline_data);
    x.local_op = r.boolean();
    x.first_psn = r.u32();
    x.npkts = r.u32();
    x.ssn = r.u32();
    x.read_pkts = r.u32();
    x.read_start = r.u32();
    x.read_end = r.u32();
    x.read_done = r.boolean();
    x.local_status = r.u8();
    x.local_verr = r.u8();
    if (!r.ok()) {
        return;
    }
    if (x.local_status != OHCA_CQE_SUCCESS || x.local_op) {
        if (x.npkts != 0) {
            r.fail("QP: a WQE that sends nothing has packets");
        }
        return;
    }
    uint64_t total = 0;
    for (const Sge &s : x.sges) {
        total += s.length;
    }
    const uint64_t len = x.is_inline ? x.inline_data.size() : total;
    if (!rc_req::known_opcode(x.opcode) || len != x.length || len > DeviceLimits::max_msg_size ||
        x.npkts != std::max<uint32_t>(1, (x.length + mtu - 1) / mtu) || x.read_pkts > x.npkts ||
        x.read_start > x.read_end || x.read_end > x.npkts || x.first_psn > kPsnMask) {
        r.fail("QP: a WQE in flight that is not consistent");
    }
}

} // namespace

void QpTable::save(state::Writer &w) const {
    w.u32(next_qpn_);
    uint32_t n = 0;
    for (const auto &q : qps_) {
        n += q ? 1 : 0;
    }
    w.u32(n);
    for (const auto &p : qps_) {
        if (!p) {
            continue;
        }
        const Qp &q = *p;
        w.u32(q.qpn);
        w.u8(q.type);
        w.u8(q.state);
        w.u8(q.held_events);
        w.u32(q.pdn);
        w.u32(q.send_cqn);
        w.u32(q.recv_cqn);
        w.u32(q.uar);
        w.u32(q.max_inline);
        w.u32(q.srqn);
        w.u32(q.xrcdn);
        w.u32(q.windows);
        w.u32(q.flows);
        w.u32(q.rss);
        save_wq(w, q.sq);
        save_wq(w, q.rq);
        const QpAttrs &a = q.attrs;
        w.u8(a.path_mtu);
        w.u8(a.timeout);
        w.u8(a.retry_cnt);
        w.u8(a.rnr_retry);
        w.u8(a.min_rnr_timer);
        w.u8(a.max_rd_atomic);
        w.u8(a.max_dest_rd_atomic);
        w.u16(a.pkey_index);
        w.u32(a.access);
        w.u32(a.dest_qpn);
        w.u32(a.rq_psn);
        w.u32(a.sq_psn);
        w.u32(a.qkey);
        w.bytes({reinterpret_cast<const uint8_t *>(&a.av), sizeof(a.av)});
        w.u16(a.udp_sport);
        // Requester.
        w.u32(q.sq_fetched);
        w.u32(static_cast<uint32_t>(q.inflight.size()));
        for (size_t i = 0; i < q.inflight.size(); ++i) {
            save_wr(w, q.inflight[i]);
        }
        w.u32(static_cast<uint32_t>(q.cur_wr));
        w.u32(q.cur_pkt);
        w.u32(q.next_psn);
        w.u32(q.una_psn);
        w.u32(q.sent_psn);
        w.u8(q.retry_left);
        w.u8(q.rnr_left);
        w.u8(q.rnr_streak);
        w.boolean(q.rnr_wait);
        w.boolean(q.odp_wait);
        w.u32(q.reads_pending);
        w.u32(q.wqes_failed);
        w.time(q.deadline_ns);
        w.u32(q.cwnd);
        w.u32(q.ssthresh);
        w.u32(q.cwnd_acked);
        w.u64(q.srtt_ns);
        w.u64(q.rttvar_ns);
        w.u64(q.rto_ns);
        w.time(q.rtt_sent_ns);
        w.u32(q.rtt_psn);
        w.boolean(q.rtt_timing);
        w.boolean(q.recovering);
        w.u32(q.recover_psn);
        w.time(q.ack_timer_start_ns);
        w.u8(static_cast<uint8_t>(q.frto));
        w.boolean(q.frto_recovering);
        w.u32(q.frto_end);
        w.u32(q.frto_resume);
        w.u32(q.frto_recover_psn);
        w.u32(q.frto_cwnd);
        w.u32(q.frto_ssthresh);
        w.u32(q.frto_cwnd_acked);
        w.u64(q.frto_rto_ns);
        w.time(q.credit_wait_since_ns); // (frto_since_ns until 2026-12-07)
        w.boolean(q.sq_draining);
        w.u32(q.ssn);
        w.u32(q.credit_lsn);
        w.boolean(q.credits_unlimited);
        w.boolean(q.credit_probe);
        w.boolean(q.credit_wait);
        // Responder.
        w.u32(q.epsn);
        w.u32(q.msn);
        w.boolean(q.nak_sent);
        w.boolean(q.comm_est);
        w.boolean(q.credits_zero_sent);
        w.u8(static_cast<uint8_t>(q.in_msg));
        w.boolean(q.recv_loaded);
        w.u64(q.recv_wr_id);
        w.u32(q.recv_index);
        w.boolean(q.last_wqe_pending);
        save_sges(w, q.recv_sges);
        w.u32(q.recv_offset);
        w.u64(q.write_va);
        w.u32(q.write_key);
        w.u32(q.write_left);
        w.u32(q.write_total);
        q.resp.save(w);
        // DCQCN.
        const dcqcn::RpState &rp = q.cc.rp;
        w.boolean(rp.limited);
        w.u32(rp.rc_kbps);
        w.u32(rp.rt_kbps);
        w.u16(rp.alpha);
        w.u16(rp.t_stage);
        w.u16(rp.bc_stage);
        w.boolean(rp.cnp_in_alpha_period);
        w.boolean(rp.increased);
        w.u32(rp.bytes);
        w.time(rp.timer_ns);
        w.time(rp.alpha_ns);
        w.time(rp.last_cut_ns);
        w.time(rp.next_tx_ns);
        w.boolean(q.cc.np.sent);
        w.time(q.cc.np.last_cnp_ns);
        w.time(q.sched.pace.qp != nullptr ? q.sched.pace.deadline_ns : 0);
    }
    // Version 3: the RQs' doorbell records, in the same order, after
    // every QP (a stream of version 2 is this one without them).
    for (const auto &p : qps_) {
        if (p) {
            w.u64(p->rq.db_record);
            w.u32(p->rq.record_errors);
        }
    }
}

namespace {

// The objects a QP names, as CREATE_QP checked them; its references into
// 'refs'. An XRC target's SRQ, PD and CQ are borrowed from the request
// being received: none, or those of an XRC SRQ of its domain.
void check_qp_links(state::Reader &r, const Qp &q, PdTable &pds, CqTable &cqs, SrqTable &srqs,
                    const XrcTransport &xrc, const UarTable &uars, state::Refs &refs) {
    if (!r.ok()) {
        return;
    }
    if (q.uar >= OHCA_NUM_DB_PAGES || (q.uar != 0 && !uars.allocated(q.uar)) ||
        (q.uar != 0 &&
         (q.type == OHCA_QPT_GSI || q.type == OHCA_QPT_SMI || q.type == OHCA_QPT_XRC_TGT))) {
        r.fail("QP: rings on a UAR that is not allocated");
        return;
    }
    ++refs.uar[q.uar];
    if (q.type == OHCA_QPT_XRC_TGT) {
        if (!xrc.domain_exists(q.xrcdn) || q.send_cqn != 0) {
            r.fail("XRC target QP: its domain does not exist");
            return;
        }
        ++refs.xrcd[q.xrcdn];
        if (q.srqn == 0) {
            if (q.pdn != 0 || q.recv_cqn != 0) {
                r.fail("XRC target QP: a PD or CQ without an SRQ");
            }
            return;
        }
        const Srq *s = srqs.find(q.srqn);
        if (s == nullptr || s->type != OHCA_SRQT_XRC || s->xrcdn != q.xrcdn || s->pdn != q.pdn ||
            s->cqn != q.recv_cqn) {
            r.fail("XRC target QP: not an XRC SRQ of its domain");
        }
        return;
    }
    if (q.xrcdn != 0) {
        r.fail("QP: a domain on a QP that is not an XRC target");
        return;
    }
    if (q.rss != 0) {
        // An RSS QP (CREATE_RSS_QP): a PD, the kernel's UAR, no CQ or SRQ;
        // its configuration slot is the WQ section's to check.
        if (q.type != OHCA_QPT_RAW_ETH || q.uar != 0 || q.send_cqn != 0 || q.recv_cqn != 0 ||
            q.srqn != 0 || q.max_inline != 0 || q.rss > WqLimits::max_rss_qp ||
            pds.find(q.pdn) == nullptr) {
            r.fail("RSS QP: bad type, objects or configuration slot");
            return;
        }
        ++refs.pd[q.pdn];
        if (refs.rss.size() <= q.rss) {
            refs.rss.resize(q.rss + 1);
        }
        ++refs.rss[q.rss];
        return;
    }
    const bool ini = q.type == OHCA_QPT_XRC_INI;
    if (pds.find(q.pdn) == nullptr || cqs.find(q.send_cqn) == nullptr ||
        (ini ? q.recv_cqn != 0 : cqs.find(q.recv_cqn) == nullptr)) {
        r.fail("QP: its PD or CQs do not exist");
        return;
    }
    ++refs.pd[q.pdn];
    ++refs.cq[q.send_cqn];
    if (!ini) {
        ++refs.cq[q.recv_cqn];
    }
    if (q.srqn != 0) {
        const Srq *s = srqs.find(q.srqn);
        if (q.type != OHCA_QPT_RC || s == nullptr || s->type != OHCA_SRQT_BASIC ||
            s->pdn != q.pdn) {
            r.fail("QP: its SRQ does not exist or is not one it may use");
            return;
        }
        ++refs.srq[q.srqn];
    }
}

} // namespace

void QpTable::load(state::Reader &r, uint16_t version, state::Refs &refs) {
    reset();
    next_qpn_ = r.u32();
    if (r.ok() &&
        (next_qpn_ < DeviceLimits::first_qpn || next_qpn_ - DeviceLimits::first_qpn > max_qp_)) {
        r.fail("QP table: bad QPN cursor");
        return;
    }
    const uint32_t n = r.count(max_qp_ + 1, 64, "QPs");
    for (uint32_t k = 0; k < n && r.ok(); ++k) {
        auto p = std::make_unique<Qp>();
        Qp &q = *p;
        q.qpn = r.u32();
        q.type = r.u8();
        q.state = r.u8();
        q.held_events = r.u8();
        q.pdn = r.u32();
        q.send_cqn = r.u32();
        q.recv_cqn = r.u32();
        q.uar = r.u32();
        q.max_inline = r.u32();
        q.srqn = r.u32();
        q.xrcdn = r.u32();
        q.windows = r.u32();
        q.flows = r.u32();
        q.rss = version >= 2 ? r.u32() : 0; // version 2 added RSS QPs
        if (!r.ok()) {
            return;
        }
        // QP 1 (GSI) and, on an InfiniBand port only, QP 0 (SMI) have their
        // fixed numbers, the others one of the table's; raw Ethernet QPs
        // only on an Ethernet port (as CREATE_QP allows them).
        const bool gsi = q.type == OHCA_QPT_GSI;
        const bool smi = q.type == OHCA_QPT_SMI;
        const bool ib = d_.ib != nullptr;
        if (q.type > OHCA_QPT_SMI || q.state > OHCA_QPS_ERR || (smi && !ib) ||
            (q.type == OHCA_QPT_RAW_ETH && ib) ||
            (gsi   ? q.qpn != OHCA_GSI_QPN
             : smi ? q.qpn != 0
                   : q.qpn < DeviceLimits::first_qpn || q.qpn >= qps_.size()) ||
            qps_[q.qpn]) {
            r.fail("QP: bad or repeated number, type or state");
            return;
        }
        check_qp_links(r, q, d_.pds, d_.cqs, d_.srqs, d_.xrc, d_.uars, refs);
        const bool tgt = q.type == OHCA_QPT_XRC_TGT;
        const bool ini = q.type == OHCA_QPT_XRC_INI;
        const bool connected =
            q.type == OHCA_QPT_RC || q.type == OHCA_QPT_UC || ini || q.type == OHCA_QPT_RAW_ETH;
        const bool rss = q.rss != 0;
        load_wq(r, q.sq, !tgt && !rss, OHCA_SQ_LOG_STRIDE_MIN, refs);
        load_wq(r, q.rq, !tgt && !ini && !rss && q.srqn == 0, OHCA_RQ_LOG_STRIDE_MIN, refs);
        if (!r.ok()) {
            return;
        }
        const size_t sq_hdr = connected ? sizeof(ohca_send_wqe) : OHCA_UD_WQE_HDR_LEN;
        if (!tgt && !rss &&
            (q.max_inline > DeviceLimits::max_inline_data ||
             q.max_inline + sq_hdr > (size_t{1} << q.sq.log_stride))) {
            r.fail("QP: bad inline size");
            return;
        }
        QpAttrs &a = q.attrs;
        a.path_mtu = r.u8();
        a.timeout = r.u8();
        a.retry_cnt = r.u8();
        a.rnr_retry = r.u8();
        a.min_rnr_timer = r.u8();
        a.max_rd_atomic = r.u8();
        a.max_dest_rd_atomic = r.u8();
        a.pkey_index = r.u16();
        a.access = r.u32();
        a.dest_qpn = r.u32();
        a.rq_psn = r.u32();
        a.sq_psn = r.u32();
        a.qkey = r.u32();
        r.bytes({reinterpret_cast<uint8_t *>(&a.av), sizeof(a.av)});
        a.udp_sport = r.u16();
        if (r.ok() &&
            (a.path_mtu > 5 || a.timeout > 31 || a.retry_cnt > 7 || a.rnr_retry > 7 ||
             a.min_rnr_timer > 31 || a.max_rd_atomic > DeviceLimits::max_qp_init_rd_atom ||
             a.max_dest_rd_atomic > DeviceLimits::max_qp_rd_atom ||
             a.pkey_index >= DeviceLimits::pkey_table_len || a.dest_qpn > kPsnMask ||
             a.rq_psn > kPsnMask || a.sq_psn > kPsnMask)) {
            r.fail("QP: bad attributes");
            return;
        }
        // Requester.
        q.sq_fetched = r.u32();
        const uint32_t nwr = r.count(q.sq.size(), 80, "WQEs in flight");
        if (r.ok() && (q.sq_fetched - q.sq.ci > q.sq.pi - q.sq.ci ||
                       (nwr != 0 && q.type != OHCA_QPT_RC && q.type != OHCA_QPT_UC && !ini) ||
                       nwr > q.sq_fetched - q.sq.ci)) {
            r.fail("QP: WQEs fetched beyond those posted");
            return;
        }
        const uint32_t mtu = mtu_bytes(q);
        for (uint32_t i = 0; i < nwr && r.ok(); ++i) {
            load_wr(r, q.inflight.stage(), mtu);
            q.inflight.commit();
        }
        q.cur_wr = r.u32();
        q.cur_pkt = r.u32();
        if (r.ok() && (q.cur_wr > q.inflight.size() ||
                       (q.cur_wr < q.inflight.size() ? q.cur_pkt > q.inflight[q.cur_wr].npkts
                                                     : q.cur_pkt != 0))) {
            r.fail("QP: transmit cursor beyond its WQEs");
            return;
        }
        q.next_psn = r.u32();
        q.una_psn = r.u32();
        q.sent_psn = r.u32();
        q.ack_req_psn = q.sent_psn; // (not saved: as if every packet had asked)
        q.retry_left = r.u8();
        q.rnr_left = r.u8();
        q.rnr_streak = r.u8();
        q.rnr_wait = r.boolean();
        q.odp_wait = r.boolean();
        q.reads_pending = r.u32();
        q.wqes_failed = r.u32();
        const uint64_t deadline = r.time();
        q.cwnd = r.u32();
        q.ssthresh = r.u32();
        q.cwnd_acked = r.u32();
        q.srtt_ns = r.u64();
        q.rttvar_ns = r.u64();
        q.rto_ns = r.u64();
        q.rtt_sent_ns = r.time();
        q.rtt_psn = r.u32();
        q.rtt_timing = r.boolean();
        q.recovering = r.boolean();
        q.recover_psn = r.u32();
        q.ack_timer_start_ns = r.time();
        const uint8_t frto = r.u8();
        q.frto_recovering = r.boolean();
        q.frto_end = r.u32();
        q.frto_resume = r.u32();
        q.frto_recover_psn = r.u32();
        q.frto_cwnd = r.u32();
        q.frto_ssthresh = r.u32();
        q.frto_cwnd_acked = r.u32();
        q.frto_rto_ns = r.u64();
        q.credit_wait_since_ns = r.time();
        q.sq_draining = r.boolean();
        q.ssn = r.u32();
        q.credit_lsn = r.u32();
        q.credits_unlimited = r.boolean();
        q.credit_probe = r.boolean();
        q.credit_wait = r.boolean();
        if (r.ok() && (frto > static_cast<uint8_t>(Qp::Frto::Confirm) ||
                       q.reads_pending > q.inflight.size() || q.wqes_failed > q.inflight.size() ||
                       q.cwnd > DeviceLimits::max_window || q.next_psn > kPsnMask ||
                       q.una_psn > kPsnMask || q.sent_psn > kPsnMask)) {
            r.fail("QP: bad requester state");
            return;
        }
        q.frto = static_cast<Qp::Frto>(frto);
        // Responder.
        q.epsn = r.u32();
        q.msn = r.u32();
        q.nak_sent = r.boolean();
        q.comm_est = r.boolean();
        q.credits_zero_sent = r.boolean();
        const uint8_t in_msg = r.u8();
        q.recv_loaded = r.boolean();
        q.recv_wr_id = r.u64();
        q.recv_index = r.u32();
        q.last_wqe_pending = r.boolean();
        load_sges(r, q.recv_sges);
        q.recv_offset = r.u32();
        q.write_va = r.u64();
        q.write_key = r.u32();
        q.write_left = r.u32();
        q.write_total = r.u32();
        q.resp.load(r, mtu);
        if (r.ok() && (in_msg > static_cast<uint8_t>(Qp::InMsg::Write) || q.epsn > kPsnMask)) {
            r.fail("QP: bad responder state");
            return;
        }
        q.in_msg = static_cast<Qp::InMsg>(in_msg);
        // DCQCN.
        dcqcn::RpState &rp = q.cc.rp;
        rp.limited = r.boolean();
        rp.rc_kbps = r.u32();
        rp.rt_kbps = r.u32();
        rp.alpha = r.u16();
        rp.t_stage = r.u16();
        rp.bc_stage = r.u16();
        rp.cnp_in_alpha_period = r.boolean();
        rp.increased = r.boolean();
        rp.bytes = r.u32();
        rp.timer_ns = r.time();
        rp.alpha_ns = r.time();
        rp.last_cut_ns = r.time();
        rp.next_tx_ns = r.time();
        q.cc.np.sent = r.boolean();
        q.cc.np.last_cnp_ns = r.time();
        const uint64_t pace = r.time();
        if (!r.ok()) {
            return;
        }
        const uint32_t qpn = q.qpn;
        if (qpn >= DeviceLimits::first_qpn) {
            qpns_.take(qpn);
        }
        if (!tgt) {
            link_cqs(q);
        }
        qps_[qpn] = std::move(p);
        Qp &placed = *qps_[qpn];
        if (deadline != 0) {
            d_.sched.set_deadline(placed, deadline);
        }
        if (pace != 0) {
            d_.sched.set_pace(placed, pace);
        }
        // Whatever it owes (responses, retransmissions, a flush) is looked
        // at in the first run after the load.
        if (placed.state != OHCA_QPS_RESET) {
            d_.sched.mark_ready(placed);
        }
    }
    if (version >= 3) {
        load_records(r);
    }
}

// The RQs' doorbell records (version 3), in the order the QPs were saved:
// only for an RQ of the QP's own.
void QpTable::load_records(state::Reader &r) {
    for (auto &p : qps_) {
        if (!p || !r.ok()) {
            continue;
        }
        Qp &q = *p;
        q.rq.db_record = r.u64();
        q.rq.record_errors = r.u32();
        const bool own_rq = q.rq.ring.npages() != 0 && q.srqn == 0;
        if (r.ok() && (!db_record_addr_ok(q.rq.db_record) || (q.rq.db_record != 0 && !own_rq))) {
            r.fail("QP: bad RQ doorbell record");
        }
    }
}

} // namespace ohca
