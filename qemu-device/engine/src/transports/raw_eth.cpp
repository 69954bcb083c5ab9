// SPDX-License-Identifier: GPL-2.0-or-later
// Raw Ethernet QPs and flow steering (raw_eth.hpp). A send WQE's data is
// one frame, sent as it is (no RoCE headers, no ICRC); a frame a flow
// steers to a QP fills its next receive WQE whole (byte_len = frame
// length, no GRH). Per frame: one pass over at most max_flow rules and one
// copy; nothing is allocated.
#include "transports/raw_eth.hpp"
#include "objects/db_record.hpp"

#include "device/command.hpp"
#include "link/byte_order.hpp"
#include "objects/qp_table.hpp"
#include "objects/srq.hpp"
#include "objects/wq.hpp"

#include <algorithm>
#include <cstring>

namespace ohca {

namespace {

constexpr uint16_t kEtherTypeIpv4 = 0x0800;
constexpr uint16_t kEtherTypeIpv6 = 0x86dd;
constexpr uint16_t kEtherTypeVlan = 0x8100;
constexpr uint8_t kRawSendFlags =
    OHCA_WQE_SIGNALED | OHCA_WQE_SOLICITED | OHCA_WQE_FENCE | OHCA_WQE_INLINE;

uint16_t be16_at(std::span<const uint8_t> f, size_t off) {
    return static_cast<uint16_t>((f[off] << 8) | f[off + 1]);
}

template <class T> bool all_zero(const T &bytes) {
    return std::all_of(std::begin(bytes), std::end(bytes), [](uint8_t b) { return b == 0; });
}

} // namespace

void flow_key(std::span<const uint8_t> f, ohca_flow_spec &key) {
    key = {};
    if (f.size() < OHCA_ETH_HDR_LEN) {
        return;
    }
    std::copy_n(f.begin(), 6, key.dmac);
    std::copy_n(f.begin() + 6, 6, key.smac);
    size_t l3 = OHCA_ETH_HDR_LEN;
    if (be16_at(f, 12) == kEtherTypeVlan && f.size() >= OHCA_ETH_HDR_LEN + 4) {
        std::memcpy(&key.vlan_tci, &f[14], 2);
        l3 += 4;
    }
    std::memcpy(&key.ether_type, &f[l3 - 2], 2);
    const uint16_t type = be16_at(f, l3 - 2);
    size_t l4 = 0;
    if (type == kEtherTypeIpv4 && f.size() >= l3 + 20 && (f[l3] >> 4) == 4) {
        const size_t ihl = size_t{f[l3] & 0x0fu} * 4;
        if (ihl < 20 || f.size() < l3 + ihl) {
            return;
        }
        key.ip_version = 4;
        key.tos = f[l3 + 1];
        key.ttl = f[l3 + 8];
        key.ip_proto = f[l3 + 9];
        std::copy_n(f.begin() + static_cast<ptrdiff_t>(l3 + 12), 4, key.src_ip + 12);
        std::copy_n(f.begin() + static_cast<ptrdiff_t>(l3 + 16), 4, key.dst_ip + 12);
        // Only the first fragment carries the ports.
        if ((be16_at(f, l3 + 6) & 0x1fff) == 0) {
            l4 = l3 + ihl;
        }
    } else if (type == kEtherTypeIpv6 && f.size() >= l3 + 40 && (f[l3] >> 4) == 6) {
        key.ip_version = 6;
        key.tos = static_cast<uint8_t>(((f[l3] & 0x0f) << 4) | (f[l3 + 1] >> 4));
        const uint8_t label[4] = {0, static_cast<uint8_t>(f[l3 + 1] & 0x0f), f[l3 + 2], f[l3 + 3]};
        std::memcpy(&key.flow_label, label, 4);
        key.ip_proto = f[l3 + 6];
        key.ttl = f[l3 + 7];
        std::copy_n(f.begin() + static_cast<ptrdiff_t>(l3 + 8), 16, key.src_ip);
        std::copy_n(f.begin() + static_cast<ptrdiff_t>(l3 + 24), 16, key.dst_ip);
        l4 = l3 + 40;
    } else {
        return;
    }
    if (l4 != 0 &&
        (key.ip_proto == OHCA_FLOW_IP_PROTO_TCP || key.ip_proto == OHCA_FLOW_IP_PROTO_UDP) &&
        f.size() >= l4 + 4) {
        std::memcpy(&key.src_port, &f[l4], 2);
        std::memcpy(&key.dst_port, &f[l4 + 2], 2);
    }
}

std::optional<size_t> flow_bad_field(const ohca_flow_spec &value, const ohca_flow_spec &mask) {
    using In = ohca_create_flow_in;
    constexpr size_t V = offsetof(In, value);
    constexpr size_t M = offsetof(In, mask);
    const auto *v = reinterpret_cast<const uint8_t *>(&value);
    const auto *m = reinterpret_cast<const uint8_t *>(&mask);
    for (size_t i = 0; i < sizeof(ohca_flow_spec); ++i) {
        if ((v[i] & ~m[i]) != 0) {
            return V + i; // a value bit the mask does not look at
        }
    }
    const bool ip_fields = !all_zero(mask.src_ip) || !all_zero(mask.dst_ip) || mask.ip_proto != 0 ||
                           mask.tos != 0 || mask.ttl != 0 || mask.flow_label != 0 ||
                           mask.src_port != 0 || mask.dst_port != 0;
    if (mask.ip_version != 0 && mask.ip_version != 0xff) {
        return M + offsetof(ohca_flow_spec, ip_version);
    }
    if (mask.ip_version == 0xff && value.ip_version != 4 && value.ip_version != 6) {
        return V + offsetof(ohca_flow_spec, ip_version);
    }
    if (ip_fields && mask.ip_version != 0xff) {
        return M + offsetof(ohca_flow_spec, ip_version);
    }
    if (value.ip_version == 4) {
        if (!all_zero(std::span<const uint8_t>(mask.src_ip, 12))) {
            return M + offsetof(ohca_flow_spec, src_ip);
        }
        if (!all_zero(std::span<const uint8_t>(mask.dst_ip, 12))) {
            return M + offsetof(ohca_flow_spec, dst_ip);
        }
        if (mask.flow_label != 0) {
            return M + offsetof(ohca_flow_spec, flow_label);
        }
    }
    uint8_t label[4];
    std::memcpy(label, &mask.flow_label, 4);
    if (label[0] != 0 || (label[1] & 0xf0) != 0) {
        return M + offsetof(ohca_flow_spec, flow_label);
    }
    if ((mask.src_port != 0 || mask.dst_port != 0) &&
        (mask.ip_proto != 0xff ||
         (value.ip_proto != OHCA_FLOW_IP_PROTO_TCP && value.ip_proto != OHCA_FLOW_IP_PROTO_UDP))) {
        return M + offsetof(ohca_flow_spec, ip_proto);
    }
    return std::nullopt;
}

// ---- FlowTable ---------------------------------------------------------------

FlowTable::FlowTable(size_t max) : max_(max) {
    flows_.reserve(max);
}

bool FlowTable::live(uint32_t handle) const {
    return std::any_of(flows_.begin(), flows_.end(),
                       [&](const Flow &f) { return f.handle == handle; });
}

std::optional<uint32_t> FlowTable::add(uint32_t qpn, uint16_t priority, const ohca_flow_spec &value,
                                       const ohca_flow_spec &mask) {
    if (flows_.size() >= max_) {
        return std::nullopt;
    }
    // Handles 1..2^31, not reused while live (at most max_ are).
    while (live(next_handle_)) {
        next_handle_ = next_handle_ % 0x7fffffffu + 1;
    }
    Flow f;
    f.handle = next_handle_;
    next_handle_ = next_handle_ % 0x7fffffffu + 1;
    f.qpn = qpn;
    f.priority = priority;
    std::memcpy(f.value.data(), &value, sizeof(value));
    std::memcpy(f.mask.data(), &mask, sizeof(mask));
    // After every flow of the same or a better (lower) priority.
    const auto at = std::upper_bound(flows_.begin(), flows_.end(), priority,
                                     [](uint16_t p, const Flow &g) { return p < g.priority; });
    flows_.insert(at, f); // within the reserved capacity
    return f.handle;
}

std::optional<uint32_t> FlowTable::remove(uint32_t handle) {
    const auto it = std::find_if(flows_.begin(), flows_.end(),
                                 [&](const Flow &f) { return f.handle == handle; });
    if (it == flows_.end()) {
        return std::nullopt;
    }
    const uint32_t qpn = it->qpn;
    flows_.erase(it);
    return qpn;
}

std::optional<uint32_t> FlowTable::match(const ohca_flow_spec &key) const {
    std::array<uint64_t, kWords> k{};
    std::memcpy(k.data(), &key, sizeof(key));
    for (const Flow &f : flows_) {
        bool hit = true;
        for (size_t i = 0; i < kWords && hit; ++i) {
            hit = (k[i] & f.mask[i]) == f.value[i];
        }
        if (hit) {
            return f.qpn;
        }
    }
    return std::nullopt;
}

// ---- RawEth ------------------------------------------------------------------

RawEth::RawEth(TransportServices &svc, Port &port, WqTable &wqs)
    : svc_(svc), port_(port), wqs_(wqs), flows_(DeviceLimits::max_flow) {}

void RawEth::reset() {
    flows_.clear();
    counters_ = {};
}

void RawEth::rx(Qp & /*qp*/, const ParsedPacket & /*pkt*/) {
    ++svc_.counters().rx_no_qp;
    svc_.count_rx_dropped();
}

void RawEth::visit(Qp &qp, unsigned int &budget) {
    if (svc_.datagram_stopped(qp, budget)) {
        return;
    }
    while (budget > 0 && qp.state == OHCA_QPS_RTS && qp.sq_fetched != qp.sq.pi) {
        if (!send_one(qp)) {
            break;
        }
        --budget;
    }
}

// The WQE's frame into frame_ (len bytes). False with status and verr set
// when it cannot be sent.
bool RawEth::gather(Qp &qp, const ohca_send_wqe &w, uint64_t base, uint32_t &len, uint8_t &status,
                    uint8_t &verr) {
    const uint32_t stride = 1u << qp.sq.log_stride;
    const uint32_t max_len = max_frame(svc_.port_mtu());
    auto fail = [&](uint8_t st, uint8_t ve) {
        status = st;
        verr = ve;
        return false;
    };
    if (w.opcode != OHCA_WR_SEND || (w.flags & ~kRawSendFlags) != 0) {
        return fail(OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_WQE);
    }
    if ((w.flags & OHCA_WQE_INLINE) != 0) {
        len = le(w.inline_len);
        if (len > qp.max_inline || sizeof(ohca_send_wqe) + len > stride) {
            return fail(OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_WQE);
        }
        if (len < OHCA_ETH_HDR_LEN || len > max_len) {
            return fail(OHCA_CQE_LOC_LEN_ERR, OHCA_VERR_BAD_FRAME_LEN);
        }
        if (!qp.sq.ring.read(svc_.host(), base + sizeof(ohca_send_wqe), frame_.data(), len)) {
            return fail(OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_DMA);
        }
        return true;
    }
    if (w.num_sge > DeviceLimits::max_sge ||
        sizeof(ohca_send_wqe) + size_t{w.num_sge} * sizeof(ohca_sge) > stride) {
        return fail(OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_WQE);
    }
    std::array<ohca_sge, DeviceLimits::max_sge> raw{};
    if (!qp.sq.ring.read(svc_.host(), base + sizeof(ohca_send_wqe), raw.data(),
                         size_t{w.num_sge} * sizeof(ohca_sge))) {
        return fail(OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_DMA);
    }
    uint64_t total = 0;
    for (unsigned int i = 0; i < w.num_sge; ++i) {
        total += le(raw[i].length);
    }
    if (total < OHCA_ETH_HDR_LEN || total > max_len) {
        return fail(OHCA_CQE_LOC_LEN_ERR, OHCA_VERR_BAD_FRAME_LEN);
    }
    len = 0;
    for (unsigned int i = 0; i < w.num_sge; ++i) {
        const uint64_t addr = le(raw[i].addr);
        const uint32_t n = le(raw[i].length);
        if (n == 0) {
            continue;
        }
        const KeyResult k = svc_.check_key(le(raw[i].lkey), addr, n, 0, qp.pdn);
        if (k.verr != OHCA_VERR_NONE) {
            return fail(OHCA_CQE_LOC_PROT_ERR, k.verr);
        }
        // Bounded by max_len (checked above), within frame_.
        if (!svc_.mr_read(*k.mr, addr, frame_.data() + len, n)) {
            return fail(OHCA_CQE_LOC_PROT_ERR, OHCA_VERR_DMA);
        }
        len += n;
    }
    return true;
}

bool RawEth::send_one(Qp &qp) {
    SendWr wr;
    wr.index = qp.sq_fetched;
    const uint64_t base = qp.sq.offset(wr.index);
    ohca_send_wqe w{};
    uint8_t status = OHCA_CQE_SUCCESS;
    uint8_t verr = OHCA_VERR_NONE;
    uint32_t len = 0;
    if (!qp.sq.ring.read(svc_.host(), base, &w, sizeof(w))) {
        status = OHCA_CQE_LOC_QP_OP_ERR;
        verr = OHCA_VERR_DMA;
        svc_.post_event(OHCA_EQE_QP_EVENT, OHCA_QP_EV_FATAL, qp.qpn, 0, 0);
    }
    wr.wr_id = le(w.wr_id);
    wr.opcode = OHCA_WR_SEND;
    wr.flags = w.flags;
    svc_.host().trace(OHCA_ENGINE_TRACE_WQE, qp.qpn, wr.index, w.opcode);
    if (status == OHCA_CQE_SUCCESS) {
        (void)gather(qp, w, base, len, status, verr);
    }
    if (status != OHCA_CQE_SUCCESS) {
        // A local error stops the send queue (as for UD); receives go on.
        svc_.complete_send(qp, wr, status, verr);
        ++qp.sq_fetched;
        qp.state = OHCA_QPS_SQE;
        svc_.mark_ready(qp); // flushes the rest
        return true;
    }
    const std::span<const uint8_t> frame(frame_.data(), len);
    ++counters_.tx_frames;
    size_t wire_len = len;
    if (wire_len < OHCA_ETH_MIN_FRAME) {
        std::fill(frame_.begin() + len, frame_.begin() + OHCA_ETH_MIN_FRAME, uint8_t{0});
        wire_len = OHCA_ETH_MIN_FRAME;
    }
    port_.transmit(std::span<const uint8_t>(frame_.data(), wire_len));
    // A flow of this device that matches gets the frame too, as sent.
    if (!flows_.empty()) {
        ohca_flow_spec key;
        flow_key(frame, key);
        if (const auto qpn = flows_.match(key)) {
            if (Qp *to = svc_.qp_by_number(*qpn)) {
                deliver(*to, frame);
            }
        }
    }
    wr.length = len;
    svc_.complete_send(qp, wr, OHCA_CQE_SUCCESS, OHCA_VERR_NONE);
    ++qp.sq_fetched;
    return true;
}

bool RawEth::steer(std::span<const uint8_t> frame) {
    if (flows_.empty()) {
        return false;
    }
    ohca_flow_spec key;
    flow_key(frame, key);
    const auto qpn = flows_.match(key);
    if (!qpn) {
        return false;
    }
    if (Qp *qp = svc_.qp_by_number(*qpn)) {
        deliver(*qp, frame);
    }
    return true;
}

// The frame into the QP's next receive WQE, or dropped and counted. An
// RSS QP has no RQ: the WQ its hash picks takes the frame, whatever the
// QP's state (it has none to walk: MODIFY_QP refuses it).
void RawEth::deliver(Qp &qp, std::span<const uint8_t> frame) {
    if (qp.rss != 0) {
        if (Wq *wq = wqs_.pick(qp.rss, frame)) {
            deliver_wq(*wq, frame);
        } else {
            ++counters_.rx_dropped;
        }
        return;
    }
    if ((qp.state != OHCA_QPS_RTR && qp.state != OHCA_QPS_RTS && qp.state != OHCA_QPS_SQD &&
         qp.state != OHCA_QPS_SQE) ||
        !svc_.records().rq_has_wqe(qp.rq)) {
        ++counters_.rx_dropped;
        return;
    }
    const uint64_t base = qp.rq.offset(qp.rq.ci);
    const uint32_t stride = 1u << qp.rq.log_stride;
    ohca_recv_wqe w{};
    std::array<ohca_sge, DeviceLimits::max_sge> raw{};
    uint8_t verr = OHCA_VERR_NONE;
    if (!qp.rq.ring.read(svc_.host(), base, &w, sizeof(w))) {
        verr = OHCA_VERR_DMA;
    } else if (w.num_sge > DeviceLimits::max_sge ||
               sizeof(w) + size_t{w.num_sge} * sizeof(ohca_sge) > stride) {
        verr = OHCA_VERR_BAD_WQE;
    } else if (!qp.rq.ring.read(svc_.host(), base + sizeof(w), raw.data(),
                                size_t{w.num_sge} * sizeof(ohca_sge))) {
        verr = OHCA_VERR_DMA;
    }
    const uint64_t wr_id = le(w.wr_id);
    if (verr != OHCA_VERR_NONE) {
        // The QP's own ring is bad: as for UD, the QP goes to ERR.
        ++counters_.rx_dropped;
        svc_.complete_recv(qp, wr_id, OHCA_CQE_RECV, 0, std::nullopt, OHCA_CQE_LOC_QP_OP_ERR, verr,
                           false);
        svc_.post_event(OHCA_EQE_QP_EVENT, OHCA_QP_EV_FATAL, qp.qpn, 0, 0);
        svc_.qp_to_error(qp);
        return;
    }
    size_t done = 0;
    for (unsigned int i = 0; i < w.num_sge && done < frame.size(); ++i) {
        const uint64_t addr = le(raw[i].addr);
        const size_t n = std::min<size_t>(le(raw[i].length), frame.size() - done);
        if (n == 0) {
            continue;
        }
        const KeyResult k =
            svc_.check_key(le(raw[i].lkey), addr, n, OHCA_ACCESS_LOCAL_WRITE, qp.pdn);
        if (k.mr == nullptr || !svc_.mr_write(*k.mr, addr, frame.data() + done, n)) {
            ++counters_.rx_dropped;
            svc_.complete_recv(qp, wr_id, OHCA_CQE_RECV, 0, std::nullopt, OHCA_CQE_LOC_PROT_ERR,
                               k.mr == nullptr ? k.verr : uint8_t{OHCA_VERR_DMA}, false);
            svc_.qp_to_error(qp);
            return;
        }
        done += n;
    }
    if (done != frame.size()) {
        // Too small a buffer: this WQE completes in error, the QP goes on
        // (whoever sent the frame must not be able to stop it).
        ++counters_.rx_dropped;
        svc_.complete_recv(qp, wr_id, OHCA_CQE_RECV, 0, std::nullopt, OHCA_CQE_LOC_LEN_ERR,
                           OHCA_VERR_RECV_TOO_SMALL, false);
        return;
    }
    ++counters_.rx_frames;
    svc_.complete_recv(qp, wr_id, OHCA_CQE_RECV, static_cast<uint32_t>(frame.size()), std::nullopt,
                       OHCA_CQE_SUCCESS, OHCA_VERR_NONE, false);
}

// The frame into the WQ's next receive WQE (in RDY), or dropped and
// counted. A WQE the device cannot use puts the WQ (not the RSS QP, whose
// other WQs go on) in ERR.
void RawEth::deliver_wq(Wq &wq, std::span<const uint8_t> frame) {
    if (wq.state != OHCA_WQS_RDY || wq.ci == wq.pi) {
        ++counters_.rx_dropped;
        return;
    }
    RecvWqe &w = wq_wqe_; // reused: its segments' storage stays
    const uint8_t verr = read_recv_wqe(svc_.host(), wq.ring, wq.offset(wq.ci), 1u << wq.log_stride,
                                       DeviceLimits::max_sge, w);
    if (verr != OHCA_VERR_NONE) {
        ++counters_.rx_dropped;
        wqs_.complete(wq, w.wr_id, 0, OHCA_CQE_LOC_QP_OP_ERR, verr);
        wqs_.to_error(wq);
        return;
    }
    size_t done = 0;
    for (const Sge &s : w.sges) {
        if (done == frame.size()) {
            break;
        }
        const size_t n = std::min<size_t>(s.length, frame.size() - done);
        if (n == 0) {
            continue;
        }
        const KeyResult k = svc_.check_key(s.lkey, s.addr, n, OHCA_ACCESS_LOCAL_WRITE, wq.pdn);
        if (k.mr == nullptr || !svc_.mr_write(*k.mr, s.addr, frame.data() + done, n)) {
            ++counters_.rx_dropped;
            wqs_.complete(wq, w.wr_id, 0, OHCA_CQE_LOC_PROT_ERR,
                          k.mr == nullptr ? k.verr : uint8_t{OHCA_VERR_DMA});
            wqs_.to_error(wq);
            return;
        }
        done += n;
    }
    if (done != frame.size()) {
        ++counters_.rx_dropped; // too small a buffer: this WQE only
        wqs_.complete(wq, w.wr_id, 0, OHCA_CQE_LOC_LEN_ERR, OHCA_VERR_RECV_TOO_SMALL);
        return;
    }
    ++counters_.rx_frames;
    wqs_.complete(wq, w.wr_id, static_cast<uint32_t>(frame.size()), OHCA_CQE_SUCCESS,
                  OHCA_VERR_NONE);
}

// ---- the commands ------------------------------------------------------------

CmdResult FlowTable::cmd_create_flow(const Command &cmd, const Host &host, QpTable &qps) {
    using In = ohca_create_flow_in;
    const auto in = cmd.input<In>();
    if (auto off =
            nonzero_at(cmd.in, offsetof(In, rsvd0), offsetof(In, value) - offsetof(In, rsvd0))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    if (auto off = nonzero_at(cmd.in, offsetof(In, value) + offsetof(ohca_flow_spec, rsvd), 4)) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    if (auto off = nonzero_at(cmd.in, offsetof(In, mask) + offsetof(ohca_flow_spec, rsvd), 4)) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    const uint32_t qpn = le(in.qpn);
    Qp *qp = qps.find(qpn);
    if (qp == nullptr) {
        return {OHCA_STATUS_BAD_HANDLE, qpn};
    }
    if (qp->type != OHCA_QPT_RAW_ETH) {
        return {OHCA_STATUS_BAD_STATE, qpn};
    }
    if (auto off = flow_bad_field(in.value, in.mask)) {
        return {OHCA_STATUS_BAD_FIELD, static_cast<uint32_t>(*off)};
    }
    if (size() >= DeviceLimits::max_flow) {
        return {OHCA_STATUS_NO_RESOURCES, 0};
    }
    const auto handle = add(qpn, le(in.priority), in.value, in.mask);
    if (!handle) {
        return {OHCA_STATUS_NO_RESOURCES, 0};
    }
    if (CmdResult res = write_create_out(host, cmd, *handle, 0); res.status != OHCA_STATUS_OK) {
        (void)remove(*handle);
        return res;
    }
    ++qp->flows;
    return {};
}

CmdResult FlowTable::cmd_destroy_flow(const Command &cmd, QpTable &qps) {
    const auto in = cmd.input<ohca_handle_in>();
    if (auto off = nonzero_at(cmd.in, offsetof(ohca_handle_in, rsvd), sizeof(in.rsvd))) {
        return {OHCA_STATUS_RESERVED_NONZERO, *off};
    }
    const uint32_t handle = le(in.handle);
    const auto qpn = remove(handle);
    if (!qpn) {
        return {OHCA_STATUS_BAD_HANDLE, handle};
    }
    if (Qp *qp = qps.find(*qpn)) {
        --qp->flows;
    }
    return {};
}

} // namespace ohca
