// SPDX-License-Identifier: GPL-2.0-or-later
// The object owners' parts of a saved engine (state/stream.hpp,
// docs/migration.md): PDs, completion EQs and CQs, SRQs and multicast
// groups. A loaded object passes the checks its create command makes;
// the references it holds are added to state::Refs, which the counts of
// the objects it names must match at the end.
#include "device/limits.hpp"
#include "objects/cq.hpp"
#include "objects/mcast.hpp"
#include "objects/pd.hpp"
#include "objects/srq.hpp"
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
}

void CqTable::load(state::Reader &r, state::Refs &refs) {
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
}

void SrqTable::load(state::Reader &r, state::Refs &refs) {
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
