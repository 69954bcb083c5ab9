// SPDX-License-Identifier: GPL-2.0-or-later
// The sections of a saved engine, in order (docs/migration.md has the
// list and what each holds). Every section has a version (1, but PORT's
// and QP's 3, CQ's, SRQ's and KEYS' 2, each of which loads its older
// ones too); an engine that changes a section raises its version and
// either loads the older one (upgrading it) or refuses it with the
// section's name.
#include "state/device_state.hpp"

#include "device/device.hpp"
#include "link/crc32.hpp"
#include "state/refs.hpp"
#include "state/stream.hpp"

namespace ohca {

namespace {

using state::tag;

constexpr uint32_t kConfig = tag("OHCA");
constexpr uint32_t kRegs = tag("REGS");
constexpr uint32_t kStats = tag("STAT");
constexpr uint32_t kUars = tag("UARS");
constexpr uint32_t kPort = tag("PORT");
constexpr uint32_t kEth = tag("ETH ");
constexpr uint32_t kPds = tag("PD  ");
constexpr uint32_t kXrcds = tag("XRCD");
constexpr uint32_t kCqs = tag("CQ  ");
constexpr uint32_t kSrqs = tag("SRQ ");
constexpr uint32_t kQps = tag("QP  ");
constexpr uint32_t kWqs = tag("WQ  ");
constexpr uint32_t kKeys = tag("KEYS");
constexpr uint32_t kMcast = tag("MCST");
constexpr uint32_t kFlows = tag("FLOW");
constexpr uint32_t kEq0 = tag("EQ0 ");
constexpr uint32_t kEnd = tag("END ");

// The loaded count 'held' of object 'id' must be what the loaded objects
// say ('counted').
// The end section holds the CRC-32 of every byte before it: a stream
// damaged on its way is refused as a whole before anything is read.
uint32_t checksum(std::span<const uint8_t> data) {
    return ~crc32::update(~uint32_t{0}, data);
}

bool count_ok(state::Reader &r, const char *what, uint32_t id, uint32_t held, uint32_t counted) {
    if (r.ok() && held != counted) {
        r.fail(std::string(what) + " " + std::to_string(id) + " counts " + std::to_string(held) +
               " users, the loaded objects " + std::to_string(counted));
    }
    return r.ok();
}

} // namespace

// Called from DeviceState only: the device's own part, its registers and
// command queue.
bool DeviceState::save(Device &d, std::vector<uint8_t> &out, std::string &why) {
    Device::Entry entry(d);
    if (!entry.ok()) {
        why = "called from inside a host callback";
        return false;
    }
    state::Writer w(d.host_.now_ns());
    const DeviceConfig &c = d.cfg_;
    w.begin(kConfig, 1);
    w.array(c.mac);
    w.u64(c.node_guid);
    w.u64(c.sys_image_guid);
    w.u64(c.port_guid);
    w.u32(c.max_qp);
    w.u8(c.link_layer);
    w.u32(c.speed_mbps);
    w.end();

    w.begin(kRegs, 1);
    w.u32(d.status_.bits);
    w.u32(d.status_.fatal_code);
    w.u32(d.cmdq_base_lo_);
    w.u32(d.cmdq_base_hi_);
    w.u32(d.cmdq_log_size_);
    w.u32(d.eq0_base_lo_);
    w.u32(d.eq0_base_hi_);
    w.u32(d.eq0_log_size_);
    w.u64(d.cmdq_base_);
    w.u32(d.cmdq_size_);
    w.u16(d.cmdq_pi_);
    w.u16(d.cmdq_ci_);
    w.end();

    w.begin(kStats, 1);
    state::save_counters(w, d.stats_);
    w.end();

    w.begin(kUars, 1);
    d.uars_.save(w);
    for (const uint32_t n : d.uar_refs_) {
        w.u32(n);
    }
    w.end();

    w.begin(kPort, 3);
    d.port_.save(w);
    w.end();
    w.begin(kEth, 1);
    d.eth_.save(w);
    w.end();
    w.begin(kPds, 1);
    d.pds_.save(w);
    w.end();
    w.begin(kXrcds, 1);
    d.xrc_.save(w);
    w.end();
    w.begin(kCqs, 2);
    d.cqs_.save(w);
    w.end();
    w.begin(kSrqs, 2);
    d.srqs_.save(w);
    w.end();
    w.begin(kQps, 3);
    d.qps_.save(w);
    w.end();
    w.begin(kWqs, 1);
    d.wqs_.save(w);
    w.end();
    w.begin(kKeys, 2);
    d.keys_.save(w);
    w.end();
    w.begin(kMcast, 1);
    d.mcast_.save(w);
    w.end();
    w.begin(kFlows, 1);
    d.raw_.save(w);
    w.end();
    w.begin(kEq0, 1);
    d.events_.save(w);
    w.end();
    w.begin(kEnd, 1);
    w.u32(0);
    w.end();
    out = std::move(w.data());
    const uint32_t crc = checksum(std::span<const uint8_t>(out).first(out.size() - 4));
    for (unsigned int i = 0; i < 4; ++i) {
        out[out.size() - 4 + i] = static_cast<uint8_t>(crc >> (8 * i));
    }
    return true;
}

bool DeviceState::load(Device &d, std::span<const uint8_t> in, std::string &why) {
    Device::Entry entry(d);
    if (!entry.ok()) {
        why = "called from inside a host callback";
        return false;
    }
    // From the power-on state, whatever the engine did before (and so after
    // a failure).
    d.power_on_state();
    if (in.size() > OHCA_ENGINE_STATE_MAX) {
        why = "the stream is longer than any engine's state";
        return false;
    }
    if (in.size() < 4) {
        why = "the stream is truncated";
        return false;
    }
    {
        const size_t n = in.size() - 4;
        const uint32_t crc = uint32_t{in[n]} | uint32_t{in[n + 1]} << 8 |
                             uint32_t{in[n + 2]} << 16 | uint32_t{in[n + 3]} << 24;
        if (crc != checksum(in.first(n))) {
            why = "checksum mismatch: the stream is truncated or damaged";
            return false;
        }
    }
    state::Reader r(in, d.host_.now_ns());
    state::Refs refs(d.cfg_.max_qp);

    r.enter(kConfig, 1, "configuration");
    {
        const DeviceConfig &c = d.cfg_;
        std::array<uint8_t, 6> mac{};
        r.array(mac);
        const uint64_t node_guid = r.u64();
        const uint64_t sys_guid = r.u64();
        const uint64_t port_guid = r.u64();
        const uint32_t max_qp = r.u32();
        const uint8_t link_layer = r.u8();
        const uint32_t speed = r.u32();
        if (r.ok() && (mac != c.mac || node_guid != c.node_guid || sys_guid != c.sys_image_guid ||
                       port_guid != c.port_guid || max_qp != c.max_qp ||
                       link_layer != c.link_layer || speed != c.speed_mbps)) {
            r.fail("saved by a device configured otherwise (MAC, GUIDs, max_qp, link layer or "
                   "speed)");
        }
    }
    r.leave();

    r.enter(kRegs, 1, "registers");
    d.status_.bits = r.u32();
    d.status_.fatal_code = r.u32();
    d.cmdq_base_lo_ = r.u32();
    d.cmdq_base_hi_ = r.u32();
    d.cmdq_log_size_ = r.u32();
    d.eq0_base_lo_ = r.u32();
    d.eq0_base_hi_ = r.u32();
    d.eq0_log_size_ = r.u32();
    d.cmdq_base_ = r.u64();
    d.cmdq_size_ = r.u32();
    d.cmdq_pi_ = r.u16();
    d.cmdq_ci_ = r.u16();
    if (r.ok()) {
        const uint32_t known =
            OHCA_DEV_STATUS_READY | OHCA_DEV_STATUS_FATAL | OHCA_DEV_STATUS_RESET_DONE;
        const bool running = d.status_.running();
        const bool ring_ok =
            d.cmdq_size_ == 0 ||
            (d.cmdq_log_size_ >= OHCA_CMDQ_LOG_MIN && d.cmdq_log_size_ <= OHCA_CMDQ_LOG_MAX &&
             d.cmdq_size_ == 1u << d.cmdq_log_size_ && d.cmdq_base_ != 0 &&
             d.cmdq_base_ % sizeof(ohca_cmd) == 0);
        if ((d.status_.bits & ~known) != 0 || (running && d.status_.fatal()) || !ring_ok ||
            (running && d.cmdq_size_ == 0) ||
            static_cast<uint16_t>(d.cmdq_pi_ - d.cmdq_ci_) > d.cmdq_size_) {
            r.fail("bad status or command queue");
        }
    }
    r.leave();

    r.enter(kStats, 1, "counters");
    state::load_counters(r, d.stats_, "device counters");
    r.leave();

    r.enter(kUars, 1, "UARs");
    d.uars_.load(r);
    std::array<uint32_t, OHCA_NUM_DB_PAGES> uar_refs{};
    for (uint32_t &n : uar_refs) {
        n = r.u32();
    }
    r.leave();

    // Version 2 added PAUSE/PFC, 3 the InfiniBand port.
    const uint16_t port_version = r.enter(kPort, 3, "port");
    d.port_.load(r, port_version);
    r.leave();
    r.enter(kEth, 1, "Ethernet rings");
    d.eth_.load(r);
    r.leave();
    r.enter(kPds, 1, "PDs");
    d.pds_.load(r);
    r.leave();
    r.enter(kXrcds, 1, "XRC domains");
    d.xrc_.load(r);
    r.leave();
    // Version 2 added doorbell records.
    const uint16_t cq_version = r.enter(kCqs, 2, "CQs");
    d.cqs_.load(r, cq_version, refs);
    r.leave();
    // Version 2 added doorbell records.
    const uint16_t srq_version = r.enter(kSrqs, 2, "SRQs");
    d.srqs_.load(r, srq_version, refs);
    r.leave();
    // Version 2 added RSS QPs (their configuration slots), 3 doorbell
    // records.
    const uint16_t qp_version = r.enter(kQps, 3, "QPs");
    d.qps_.load(r, qp_version, refs);
    r.leave();
    if (qp_version >= 2) { // an older engine saved no WQs (it refused to)
        r.enter(kWqs, 1, "receive WQs");
        d.wqs_.load(r, refs);
        r.leave();
    }
    // Version 2 added on-demand paging.
    const uint16_t keys_version = r.enter(kKeys, 2, "memory keys");
    d.keys_.load(r, keys_version, refs);
    r.leave();
    r.enter(kMcast, 1, "multicast groups");
    d.mcast_.load(r, [&](uint32_t qpn) {
        const Qp *qp = d.qps_.find(qpn);
        return qp != nullptr && qp->type == OHCA_QPT_UD;
    });
    r.leave();
    r.enter(kFlows, 1, "flows");
    d.raw_.load(
        r,
        [&](uint32_t qpn) {
            const Qp *qp = d.qps_.find(qpn);
            return qp != nullptr && qp->type == OHCA_QPT_RAW_ETH;
        },
        refs.qp_flows);
    r.leave();
    r.enter(kEq0, 1, "EQ 0");
    d.events_.load(r);
    r.leave();
    r.enter(kEnd, 1, "end");
    (void)r.u32(); // the checksum, checked first
    r.leave();
    r.finish();

    // What the objects count of each other.
    for (uint32_t i = 1; i < refs.pd.size() && r.ok(); ++i) {
        if (const Pd *pd = d.pds_.find(i)) {
            count_ok(r, "PD", i, pd->refs, refs.pd[i]);
        }
    }
    for (uint32_t i = 1; i < refs.eq.size() && r.ok(); ++i) {
        if (const CompletionEq *eq = d.cqs_.find_eq(i)) {
            count_ok(r, "completion EQ", i, eq->cq_refs, refs.eq[i]);
        }
    }
    for (uint32_t i = 1; i < refs.cq.size() && r.ok(); ++i) {
        if (const Cq *cq = d.cqs_.find(i)) {
            count_ok(r, "CQ", i, cq->qp_refs, refs.cq[i]);
        }
    }
    for (uint32_t i = 1; i < refs.srq.size() && r.ok(); ++i) {
        if (const Srq *srq = d.srqs_.find(i)) {
            count_ok(r, "SRQ", i, srq->qp_refs, refs.srq[i]);
        }
    }
    for (uint32_t i = 1; i < refs.xrcd.size() && r.ok(); ++i) {
        if (d.xrc_.domain_exists(i)) {
            count_ok(r, "XRC domain", i, d.xrc_.refs(i), refs.xrcd[i]);
        }
    }
    for (uint32_t i = 0; i < refs.qp_windows.size() && r.ok(); ++i) {
        if (const Qp *qp = d.qps_.find(i)) {
            count_ok(r, "QP (windows)", i, qp->windows, refs.qp_windows[i]);
            count_ok(r, "QP (flows)", i, qp->flows, refs.qp_flows[i]);
        }
    }
    for (uint32_t i = 0; i < OHCA_NUM_DB_PAGES && r.ok(); ++i) {
        count_ok(r, "UAR", i, uar_refs[i], refs.uar[i]);
    }
    if (r.ok() && refs.pbl > DeviceLimits::max_pbl_entries) {
        r.fail("page lists beyond the device's budget");
    }
    if (r.ok() && d.status_.running() && d.eq0_log_size_ == 0) {
        r.fail("a running device without EQ 0");
    }
    if (!r.ok()) {
        why = r.error();
        d.power_on_state();
        return false;
    }
    d.uar_refs_ = uar_refs;
    d.pbl_.charge(refs.pbl);
    // The timers the objects hold, to the host; a run for what they owe
    // (and for commands and Ethernet frames waiting, and an IB link's
    // FCPs, which resynchronize the loaded credits with the peer).
    d.loop_.update_timer();
    d.host_.schedule();
    return true;
}

} // namespace ohca
