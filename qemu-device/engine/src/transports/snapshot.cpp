// SPDX-License-Identifier: GPL-2.0-or-later
// The transports' parts of a saved engine (state/stream.hpp,
// docs/migration.md): a QP's responder resources, the XRC domains, and
// the raw Ethernet flows and counters.
#include "device/limits.hpp"
#include "transports/raw_eth.hpp"
#include "transports/responder_resources.hpp"
#include "transports/xrc.hpp"

#include <algorithm>
#include <cstring>

namespace ohca {

// ---- responder resources -----------------------------------------------------------

void ResponderResources::save(state::Writer &w) const {
    w.u8(static_cast<uint8_t>(capacity_));
    w.u32(static_cast<uint32_t>(queue_.size()));
    for (size_t i = 0; i < queue_.size(); ++i) {
        const Response &x = queue_[i];
        w.u8(static_cast<uint8_t>(x.kind));
        w.u32(x.psn);
        w.u8(x.syndrome);
        w.u32(x.msn);
        w.u64(x.va);
        w.u32(x.rkey);
        w.u32(x.len);
        w.u32(x.npkts);
        w.u32(x.next);
        w.u64(x.orig);
    }
    w.u32(static_cast<uint32_t>(saved_.size()));
    for (const Saved &s : saved_) {
        w.boolean(s.valid);
        w.u32(s.psn);
        w.u64(s.orig);
        w.u32(s.msn);
    }
    w.u32(static_cast<uint32_t>(saved_next_));
}

void ResponderResources::load(state::Reader &r, uint32_t mtu) {
    reset(1);
    const unsigned int cap = r.u8();
    if (r.ok() && (cap < 1 || cap > DeviceLimits::max_qp_rd_atom)) {
        r.fail("responder resources: bad capacity");
        return;
    }
    // Responses pending (a capacity lowered by SQD keeps them) and an ACK
    // between each two.
    const uint32_t n = r.count(2 * DeviceLimits::max_qp_rd_atom + 1, 46, "responses owed");
    unsigned int pending = 0;
    for (uint32_t i = 0; i < n && r.ok(); ++i) {
        Response x;
        const uint8_t kind = r.u8();
        x.psn = r.u32();
        x.syndrome = r.u8();
        x.msn = r.u32();
        x.va = r.u64();
        x.rkey = r.u32();
        x.len = r.u32();
        x.npkts = r.u32();
        x.next = r.u32();
        x.orig = r.u64();
        const bool read = kind == static_cast<uint8_t>(Response::Kind::Read);
        if (r.ok() && (kind > static_cast<uint8_t>(Response::Kind::Atomic) || x.npkts == 0 ||
                       x.next > x.npkts ||
                       (read && (x.len > DeviceLimits::max_msg_size ||
                                 x.npkts != std::max<uint32_t>(1, (x.len + mtu - 1) / mtu))))) {
            r.fail("responder resources: bad response");
            return;
        }
        x.kind = static_cast<Response::Kind>(kind);
        pending += x.kind != Response::Kind::Ack ? 1 : 0;
        queue_.push_back(x);
    }
    const uint32_t ns = r.count(DeviceLimits::max_qp_rd_atom, 17, "saved atomic results");
    if (r.ok() && ns != 0 && ns != cap) {
        r.fail("responder resources: saved results not of the capacity");
        return;
    }
    std::vector<Saved> saved(ns);
    for (Saved &s : saved) {
        s.valid = r.boolean();
        s.psn = r.u32();
        s.orig = r.u64();
        s.msn = r.u32();
    }
    const uint32_t next = r.u32();
    if (r.ok() && (ns == 0 ? next != 0 : next >= ns)) {
        r.fail("responder resources: bad saved result index");
    }
    if (!r.ok()) {
        reset(1);
        return;
    }
    capacity_ = cap;
    pending_ = pending;
    saved_ = std::move(saved);
    saved_next_ = next;
}

// ---- XRC domains ---------------------------------------------------------------

void XrcTransport::save(state::Writer &w) const {
    uint32_t n = 0;
    for (const uint32_t x : refs_) {
        n += x != kFree ? 1 : 0;
    }
    w.u32(n);
    for (uint32_t i = 1; i < refs_.size(); ++i) {
        if (refs_[i] != kFree) {
            w.u32(i);
            w.u32(refs_[i]);
        }
    }
}

void XrcTransport::load(state::Reader &r) {
    reset();
    const uint32_t n = r.count(DeviceLimits::max_xrcd, 8, "XRC domains");
    for (uint32_t k = 0; k < n && r.ok(); ++k) {
        const uint32_t x = r.u32();
        const uint32_t count = r.u32();
        if (r.ok() && (x == 0 || x >= refs_.size() || refs_[x] != kFree || count == kFree)) {
            r.fail("XRC domain: bad or repeated handle");
            return;
        }
        refs_[x] = count;
    }
}

// ---- raw Ethernet flows ----------------------------------------------------------

void FlowTable::save(state::Writer &w) const {
    w.u32(next_handle_);
    w.u32(static_cast<uint32_t>(flows_.size()));
    for (const Flow &f : flows_) {
        w.u32(f.handle);
        w.u32(f.qpn);
        w.u16(f.priority);
        for (const uint64_t v : f.value) {
            w.u64(v);
        }
        for (const uint64_t m : f.mask) {
            w.u64(m);
        }
    }
}

void FlowTable::load(state::Reader &r, const std::function<bool(uint32_t)> &qp_ok,
                     std::vector<uint32_t> &qp_flows) {
    clear();
    next_handle_ = r.u32();
    if (r.ok() && (next_handle_ == 0 || next_handle_ > 0x7fffffffu)) {
        r.fail("flows: bad next handle");
    }
    const auto n = r.count(static_cast<uint32_t>(max_), 10 + 16 * kWords, "flows");
    for (uint32_t k = 0; k < n && r.ok(); ++k) {
        Flow f;
        f.handle = r.u32();
        f.qpn = r.u32();
        f.priority = r.u16();
        for (uint64_t &v : f.value) {
            v = r.u64();
        }
        for (uint64_t &m : f.mask) {
            m = r.u64();
        }
        if (!r.ok()) {
            break;
        }
        ohca_flow_spec value{};
        ohca_flow_spec mask{};
        std::memcpy(&value, f.value.data(), sizeof(value));
        std::memcpy(&mask, f.mask.data(), sizeof(mask));
        if (f.handle == 0 || f.handle > 0x7fffffffu || live(f.handle) ||
            flow_bad_field(value, mask) || !qp_ok(f.qpn) ||
            (!flows_.empty() && flows_.back().priority > f.priority)) {
            r.fail("flow: bad or repeated handle, rule, QP or order");
            break;
        }
        ++qp_flows[f.qpn];
        flows_.push_back(f);
    }
    if (!r.ok()) {
        clear();
        next_handle_ = 1;
    }
}

void RawEth::save(state::Writer &w) const {
    flows_.save(w);
    state::save_counters(w, counters_);
}

void RawEth::load(state::Reader &r, const std::function<bool(uint32_t)> &qp_ok,
                  std::vector<uint32_t> &qp_flows) {
    flows_.load(r, qp_ok, qp_flows);
    state::load_counters(r, counters_, "raw Ethernet counters");
}

} // namespace ohca
