// SPDX-License-Identifier: GPL-2.0-or-later
// The object owners' parts of a saved engine (state/stream.hpp,
// docs/migration.md): PDs, completion EQs and CQs, SRQs, receive WQs
// with their indirection tables and RSS configurations, and multicast
// groups. A loaded object passes the checks its create command makes;
// the references it holds are added to state::Refs, which the counts of
// the objects it names must match at the end.
#include "device/limits.hpp"
#include "objects/cq.hpp"
#include "objects/db_record.hpp"
#include "objects/mcast.hpp"
#include "objects/pd.hpp"
#include "objects/srq.hpp"
#include "objects/wq.hpp"
#include "transports/xrc.hpp"

#include <algorithm>

namespace ohca {

namespace {

// A handle in [lo, hi] not yet loaded into 'table'.
template <class T>
bool new_handle(state::Reader &r, const Table<T> &table, uint32_t h, uint32_t lo,
                const char *what) {
    if (!r.ok()) {
        return false;
    }
    if (h < lo || h >= table.size() || table[h]) {
        r.fail(std::string(what) + ": bad or repeated handle " + std::to_string(h));
        return false;
    }
    return true;
}

// A UAR an object rings on: the kernel's page or an allocated one.
bool uar_ok(state::Reader &r, const UarTable &uars, uint32_t uar) {
    if (r.ok() && (uar >= OHCA_NUM_DB_PAGES || (uar != 0 && !uars.allocated(uar)))) {
        r.fail("an object rings on a UAR that is not allocated");
        return false;
    }
    return r.ok();
}

// Version 2 of the CQ and SRQ sections: the doorbell record (address and
// refused values) of every object of 'table', in its order, after all of
// them, so that a stream of version 1 is the same without them.
template <class T> void save_records(state::Writer &w, const Table<T> &table) {
    for (const auto &p : table) {
        if (p) {
            w.u64(p->db_record);
            w.u32(p->record_errors);
        }
    }
}

template <class T>
void load_records(state::Reader &r, uint16_t version, Table<T> &table, const char *what) {
    for (auto &p : table) {
        if (version < 2 || !p || !r.ok()) {
            continue;
        }
        p->db_record = r.u64();
        p->record_errors = r.u32();
        if (r.ok() && !db_record_addr_ok(p->db_record)) {
            r.fail(std::string(what) + ": bad doorbell record");
        }
    }
}

} // namespace

// ---- PDs ------------------------------------------------------------------------

void PdTable::save(state::Writer &w) const {
    uint32_t n = 0;
    for (const auto &pd : pds_) {
        n += pd ? 1 : 0;
    }
    w.u32(n);
    for (uint32_t i = 0; i < pds_.size(); ++i) {
        if (pds_[i]) {
            w.u32(i);
            w.u32(pds_[i]->refs);
        }
    }
}

void PdTable::load(state::Reader &r) {
    reset();
    const uint32_t n = r.count(DeviceLimits::max_pd, 8, "PDs");
    for (uint32_t k = 0; k < n; ++k) {
        const uint32_t pdn = r.u32();
        const uint32_t refs = r.u32();
        if (!new_handle(r, pds_, pdn, 1, "PD")) {
            return;
        }
        pds_[pdn] = std::make_unique<Pd>();
        pds_[pdn]->refs = refs;
    }
}

// ---- completion EQs and CQs -------------------------------------------------------

void CqTable::save(state::Writer &w) const {
    uint32_t n = 0;
    for (const auto &eq : eqs_) {
        n += eq ? 1 : 0;
    }
    w.u32(n);
    for (uint32_t i = 0; i < eqs_.size(); ++i) {
        if (const CompletionEq *eq = eqs_[i].get()) {
            w.u32(i);
            w.u8(static_cast<uint8_t>(eq->eq.vector()));
            eq->eq.save(w);
            w.u32(eq->cq_refs);
            w.boolean(eq->stopped);
        }
    }
    n = 0;
    for (const auto &cq : cqs_) {
        n += cq ? 1 : 0;
    }
    w.u32(n);
    for (const auto &p : cqs_) {
        if (!p) {
            continue;
        }
        const Cq &cq = *p;
        w.u32(cq.cqn);
        w.u32(cq.eqn);
        w.u32(cq.uar);
        w.u8(static_cast<uint8_t>(cq.log_size));
        cq.ring.save(w);
        w.u32(cq.pi);
        w.u32(cq.ci);
        w.boolean(cq.arm_next);
        w.boolean(cq.arm_solicited);
        w.boolean(cq.error);
        w.u8(cq.held_events);
        w.u32(cq.qp_refs);
        w.u16(cq.mod_count);
        w.u16(cq.mod_period_us);
        w.u32(cq.mod_pending);
        w.time(cq.deadline_ns);
    }
    save_records(w, cqs_);
}

void CqTable::load(state::Reader &r, uint16_t version, state::Refs &refs) {
    reset();
    uint32_t n = r.count(DeviceLimits::max_eq, 16, "completion EQs");
    for (uint32_t k = 0; k < n && r.ok(); ++k) {
        const uint32_t eqn = r.u32();
        const unsigned int vector = r.u8();
        if (!new_handle(r, eqs_, eqn, 1, "completion EQ")) {
            return;
        }
        if (vector < 2 || vector >= OHCA_NUM_MSIX) {
            r.fail("completion EQ: bad MSI-X vector");
            return;
        }
        auto eq = std::make_unique<CompletionEq>(vector);
        eq->eq.load(r);
        eq->cq_refs = r.u32();
        eq->stopped = r.boolean();
        if (r.ok() && !eq->eq.configured()) {
            r.fail("completion EQ: not configured");
        }
        eqs_[eqn] = std::move(eq);
    }
    n = r.count(DeviceLimits::max_cq, 32, "CQs");
    for (uint32_t k = 0; k < n && r.ok(); ++k) {
        auto cq = std::make_unique<Cq>();
        cq->cqn = r.u32();
        cq->eqn = r.u32();
        cq->uar = r.u32();
        cq->log_size = r.u8();
        if (!new_handle(r, cqs_, cq->cqn, 1, "CQ") || !uar_ok(r, uars_, cq->uar)) {
            return;
        }
        if (cq->eqn != 0 && find_eq(cq->eqn) == nullptr) {
            r.fail("CQ: its EQ does not exist");
            return;
        }
        if (cq->log_size < 1 || cq->log_size > OHCA_CQ_LOG_MAX) {
            r.fail("CQ: bad size");
            return;
        }
        cq->ring.load(r, (uint64_t{1} << cq->log_size) * sizeof(ohca_cqe),
                      DeviceLimits::max_pbl_entries - refs.pbl);
        cq->pi = r.u32();
        cq->ci = r.u32();
        cq->arm_next = r.boolean();
        cq->arm_solicited = r.boolean();
        cq->error = r.boolean();
        cq->held_events = r.u8();
        cq->qp_refs = r.u32();
        cq->mod_count = r.u16();
        cq->mod_period_us = r.u16();
        cq->mod_pending = r.u32();
        const uint64_t deadline = r.time();
        if (!r.ok()) {
            return;
        }
        if (cq->pi - cq->ci > (1u << cq->log_size)) {
            r.fail("CQ: consumer beyond the producer");
            return;
        }
        refs.pbl += cq->ring.npages();
        if (cq->eqn != 0) {
            ++refs.eq[cq->eqn];
        }
        ++refs.uar[cq->uar];
        Cq &c = *cq;
        cqs_[c.cqn] = std::move(cq);
        if (deadline != 0) {
            timers_.set(c, deadline);
        }
    }
    load_records(r, version, cqs_, "CQ");
}

// ---- SRQs -------------------------------------------------------------------------

void SrqTable::save(state::Writer &w) const {
    uint32_t n = 0;
    for (const auto &s : srqs_) {
        n += s ? 1 : 0;
    }
    w.u32(n);
    for (uint32_t i = 0; i < srqs_.size(); ++i) {
        if (!srqs_[i]) {
            continue;
        }
        const Srq &s = *srqs_[i];
        w.u32(i);
        w.u8(s.type);
        w.u32(s.xrcdn);
        w.u32(s.cqn);
        w.u32(s.pdn);
        w.u32(s.uar);
        w.u8(static_cast<uint8_t>(s.log_size));
        w.u8(static_cast<uint8_t>(s.log_stride));
        s.ring.save(w);
        w.u32(s.pi);
        w.u32(s.ci);
        w.u32(s.limit);
        w.boolean(s.error);
        w.u8(s.held_events);
        w.u32(s.qp_refs);
    }
    save_records(w, srqs_);
}

void SrqTable::load(state::Reader &r, uint16_t version, state::Refs &refs) {
    reset();
    const uint32_t n = r.count(DeviceLimits::max_srq, 32, "SRQs");
    for (uint32_t k = 0; k < n && r.ok(); ++k) {
        const uint32_t srqn = r.u32();
        auto srq = std::make_unique<Srq>();
        Srq &s = *srq;
        s.type = r.u8();
        s.xrcdn = r.u32();
        s.cqn = r.u32();
        s.pdn = r.u32();
        s.uar = r.u32();
        s.log_size = r.u8();
        s.log_stride = r.u8();
        if (!new_handle(r, srqs_, srqn, 1, "SRQ") || !uar_ok(r, uars_, s.uar)) {
            return;
        }
        if (pds_.find(s.pdn) == nullptr) {
            r.fail("SRQ: its PD does not exist");
            return;
        }
        if (s.type == OHCA_SRQT_XRC) {
            if (!xrc_.domain_exists(s.xrcdn) || cqs_.find(s.cqn) == nullptr) {
                r.fail("XRC SRQ: its domain or CQ does not exist");
                return;
            }
        } else if (s.type != OHCA_SRQT_BASIC || s.xrcdn != 0 || s.cqn != 0) {
            r.fail("SRQ: bad type");
            return;
        }
        if (s.log_size < 1 || s.log_size > DeviceLimits::max_wq_log ||
            s.size() > DeviceLimits::max_srq_wr || s.log_stride < OHCA_RQ_LOG_STRIDE_MIN ||
            s.log_stride > OHCA_WQ_LOG_STRIDE_MAX) {
            r.fail("SRQ: bad size or stride");
            return;
        }
        s.ring.load(r, uint64_t{s.size()} << s.log_stride,
                    DeviceLimits::max_pbl_entries - refs.pbl);
        s.pi = r.u32();
        s.ci = r.u32();
        s.limit = r.u32();
        s.error = r.boolean();
        s.held_events = r.u8();
        s.qp_refs = r.u32();
        if (!r.ok()) {
            return;
        }
        if (s.pi - s.ci > s.size() || s.limit >= s.size()) {
            r.fail("SRQ: bad indices or limit");
            return;
        }
        refs.pbl += s.ring.npages();
        ++refs.pd[s.pdn];
        ++refs.uar[s.uar];
        if (s.type == OHCA_SRQT_XRC) {
            ++refs.cq[s.cqn];
            ++refs.xrcd[s.xrcdn];
        }
        srqs_[srqn] = std::move(srq);
    }
    load_records(r, version, srqs_, "SRQ");
}

// ---- receive WQs, indirection tables, RSS configurations --------------------------

void WqTable::save(state::Writer &w) const {
    w.u32(live_wqs_);
    for (const auto &p : wqs_) {
        if (!p) {
            continue;
        }
        const Wq &q = *p;
        w.u32(q.wqn);
        w.u32(q.pdn);
        w.u32(q.cqn);
        w.u32(q.uar);
        w.u8(q.state);
        w.u8(static_cast<uint8_t>(q.log_size));
        w.u8(static_cast<uint8_t>(q.log_stride));
        q.ring.save(w);
        w.u32(q.pi);
        w.u32(q.ci);
        w.u32(q.table_refs);
    }
    uint32_t n = 0;
    for (const auto &t : tables_) {
        n += t ? 1 : 0;
    }
    w.u32(n);
    for (uint32_t i = 0; i < tables_.size(); ++i) {
        if (const RwqIndTable *t = tables_[i].get()) {
            w.u32(i);
            w.u8(static_cast<uint8_t>(t->log_size));
            for (const uint32_t wqn : t->wqns) {
                w.u32(wqn);
            }
            w.u32(t->qp_refs);
        }
    }
    n = 0;
    for (const RssConf &c : rss_) {
        n += c.table != 0 ? 1 : 0;
    }
    w.u32(n);
    for (uint32_t i = 0; i < rss_.size(); ++i) {
        if (rss_[i].table != 0) {
            w.u32(i);
            w.u32(rss_[i].table);
            w.u32(rss_[i].fields);
            w.array(rss_[i].key);
        }
    }
}

void WqTable::load(state::Reader &r, state::Refs &refs) {
    reset();
    uint32_t n = r.count(WqLimits::max_wq, 24, "receive WQs");
    for (uint32_t k = 0; k < n && r.ok(); ++k) {
        auto p = std::make_unique<Wq>();
        Wq &q = *p;
        q.wqn = r.u32();
        q.pdn = r.u32();
        q.cqn = r.u32();
        q.uar = r.u32();
        q.state = r.u8();
        q.log_size = r.u8();
        q.log_stride = r.u8();
        if (!new_handle(r, wqs_, q.wqn, 1, "WQ") || !uar_ok(r, d_.uars, q.uar)) {
            return;
        }
        if (d_.pds.find(q.pdn) == nullptr || d_.cqs.find(q.cqn) == nullptr) {
            r.fail("WQ: its PD or CQ does not exist");
            return;
        }
        if (q.state > OHCA_WQS_ERR || q.log_size < 1 || q.log_size > DeviceLimits::max_wq_log ||
            q.size() > WqLimits::max_wq_wr || q.log_stride < OHCA_RQ_LOG_STRIDE_MIN ||
            q.log_stride > OHCA_WQ_LOG_STRIDE_MAX) {
            r.fail("WQ: bad state, size or stride");
            return;
        }
        q.ring.load(r, uint64_t{q.size()} << q.log_stride,
                    DeviceLimits::max_pbl_entries - refs.pbl);
        q.pi = r.u32();
        q.ci = r.u32();
        q.table_refs = r.u32();
        if (r.ok() && q.pi - q.ci > q.size()) {
            r.fail("WQ: indices more than a ring apart");
        }
        if (!r.ok()) {
            return;
        }
        refs.pbl += q.ring.npages();
        ++refs.pd[q.pdn];
        ++refs.cq[q.cqn];
        ++refs.uar[q.uar];
        wqs_[q.wqn] = std::move(p);
        ++live_wqs_;
    }
    // Tables name loaded WQs; what they count must be what the WQs hold.
    std::vector<uint32_t> wq_refs(wqs_.size());
    n = r.count(WqLimits::max_ind_tbl, 9, "indirection tables");
    for (uint32_t k = 0; k < n && r.ok(); ++k) {
        const uint32_t tn = r.u32();
        const unsigned int log = r.u8();
        if (!new_handle(r, tables_, tn, 1, "indirection table")) {
            return;
        }
        if (log > OHCA_RWQ_IND_TBL_LOG_MAX) {
            r.fail("indirection table: bad size");
            return;
        }
        auto t = std::make_unique<RwqIndTable>();
        t->log_size = log;
        for (uint32_t i = 0; i < (1u << log) && r.ok(); ++i) {
            const uint32_t wqn = r.u32();
            if (r.ok() && find(wqn) == nullptr) {
                r.fail("indirection table: names a WQ that does not exist");
            }
            t->wqns.push_back(wqn);
            ++wq_refs[wqn < wq_refs.size() ? wqn : 0];
        }
        t->qp_refs = r.u32();
        tables_[tn] = std::move(t);
    }
    for (uint32_t i = 1; i < wqs_.size() && r.ok(); ++i) {
        if (wqs_[i] && wqs_[i]->table_refs != wq_refs[i]) {
            r.fail("WQ " + std::to_string(i) + ": its table count is not the tables'");
        }
    }
    // RSS configurations: each that of exactly one loaded RSS QP.
    std::vector<uint32_t> table_refs(tables_.size());
    n = r.count(WqLimits::max_rss_qp, 52, "RSS configurations");
    for (uint32_t k = 0; k < n && r.ok(); ++k) {
        const uint32_t slot = r.u32();
        RssConf c;
        c.table = r.u32();
        c.fields = r.u32();
        r.array(c.key);
        if (!r.ok()) {
            return;
        }
        if (slot == 0 || slot >= rss_.size() || rss_[slot].table != 0 ||
            table(c.table) == nullptr || c.table == 0 || !rss_fields_valid(c.fields)) {
            r.fail("RSS configuration: bad or repeated slot, table or fields");
            return;
        }
        if (slot >= refs.rss.size() || refs.rss[slot] != 1) {
            r.fail("RSS configuration: not that of exactly one RSS QP");
            return;
        }
        rss_[slot] = c;
        ++table_refs[c.table];
    }
    for (uint32_t i = 1; i < refs.rss.size() && r.ok(); ++i) {
        if (refs.rss[i] != 0 && rss_[i].table == 0) {
            r.fail("RSS QP: its configuration is not in the stream");
        }
    }
    for (uint32_t i = 1; i < tables_.size() && r.ok(); ++i) {
        if (tables_[i] && tables_[i]->qp_refs != table_refs[i]) {
            r.fail("indirection table " + std::to_string(i) + ": its QP count is not the QPs'");
        }
    }
    if (!r.ok()) {
        reset();
    }
}

// ---- multicast groups ---------------------------------------------------------------

void McastTable::save(state::Writer &w) const {
    w.u32(static_cast<uint32_t>(groups_.size()));
    for (const Group &g : groups_) {
        w.array(g.gid);
        w.u32(static_cast<uint32_t>(g.qpns.size()));
        for (const uint32_t q : g.qpns) {
            w.u32(q);
        }
    }
}

void McastTable::load(state::Reader &r, const std::function<bool(uint32_t)> &qp_ok) {
    clear();
    const uint32_t n = r.count(limits_.groups, 20, "multicast groups");
    for (uint32_t k = 0; k < n && r.ok(); ++k) {
        Group g;
        r.array(g.gid);
        const uint32_t m = r.count(limits_.qps_per_group, 4, "multicast group QPs");
        if (r.ok() && (m == 0 || !gid_is_multicast(g.gid) || index_of(g.gid) != groups_.size() ||
                       total_ + m > limits_.total)) {
            r.fail("multicast group: bad, repeated, empty or beyond the limits");
        }
        for (uint32_t i = 0; i < m && r.ok(); ++i) {
            const uint32_t q = r.u32();
            if (r.ok() &&
                (!qp_ok(q) || std::find(g.qpns.begin(), g.qpns.end(), q) != g.qpns.end())) {
                r.fail("multicast group: a QP that cannot be attached, or twice");
            }
            g.qpns.push_back(q);
        }
        if (r.ok()) {
            total_ += m;
            groups_.push_back(std::move(g));
        }
    }
    if (!r.ok()) {
        clear();
    }
}

} // namespace ohca
