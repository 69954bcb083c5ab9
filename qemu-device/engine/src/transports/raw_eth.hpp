// SPDX-License-Identifier: GPL-2.0-or-later
// Raw Ethernet QPs and flow steering (programming manual section 18): a raw
// QP sends whole Ethernet frames from its send WQEs and receives the frames
// its flows steer to it. FlowTable is the bounded rule table (pure data,
// unit-tested alone); RawEth is the QPs' transport beside UD and UC.
#pragma once

#include "link/link_layer.hpp"
#include "objects/rdma_objects.hpp"
#include "objects/srq.hpp"
#include "state/stream.hpp"
#include "transports/transport.hpp"

#include <ohca/ohca_cmd.h>
#include <ohca/ohca_queue.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

namespace ohca {

class Device;
class Host;
class QpTable;
class WqTable;
struct Wq;
struct Command;
struct CmdResult;

// The fields of 'frame' a flow can match, as an ohca_flow_spec of values
// (zero where the frame has no such header). Reads at most the first 78
// bytes (Ethernet, one VLAN tag, an IPv6 header, the ports).
void flow_key(std::span<const uint8_t> frame, ohca_flow_spec &key);

// The offset in ohca_create_flow_in of the first field of a value/mask
// pair that breaks a rule of CREATE_FLOW (ohca_cmd.h), if any.
std::optional<size_t> flow_bad_field(const ohca_flow_spec &value, const ohca_flow_spec &mask);

// At most 'max' flows, ordered by priority then age; matching a frame is
// one pass over them, eight 64-bit compares each. Nothing is allocated
// after construction.
class FlowTable {
  public:
    explicit FlowTable(size_t max);

    // The new flow's handle; nullopt when 'max' flows exist.
    std::optional<uint32_t> add(uint32_t qpn, uint16_t priority, const ohca_flow_spec &value,
                                const ohca_flow_spec &mask);
    // Removes a flow; its QP's number, nullopt if there is no such flow.
    std::optional<uint32_t> remove(uint32_t handle);
    // The QP of the first flow that 'key' matches.
    [[nodiscard]] std::optional<uint32_t> match(const ohca_flow_spec &key) const;
    [[nodiscard]] size_t size() const { return flows_.size(); }
    [[nodiscard]] bool empty() const { return flows_.empty(); }
    void clear() { flows_.clear(); }

    // CREATE_FLOW / DESTROY_FLOW: flows of the raw Ethernet QPs in 'qps',
    // each counted in its QP (Qp::flows).
    CmdResult cmd_create_flow(const Command &cmd, const Host &host, QpTable &qps);
    CmdResult cmd_destroy_flow(const Command &cmd, QpTable &qps);

    // The flows in their order (transports/snapshot.cpp); 'qp_ok' says
    // whether a QPN names a raw Ethernet QP, whose flows 'refs' counts.
    void save(state::Writer &w) const;
    void load(state::Reader &r, const std::function<bool(uint32_t)> &qp_ok,
              std::vector<uint32_t> &qp_flows);

  private:
    static constexpr size_t kWords = sizeof(ohca_flow_spec) / sizeof(uint64_t);
    struct Flow {
        uint32_t handle = 0;
        uint32_t qpn = 0;
        uint16_t priority = 0;
        std::array<uint64_t, kWords> value{};
        std::array<uint64_t, kWords> mask{};
    };
    [[nodiscard]] bool live(uint32_t handle) const;
    std::vector<Flow> flows_;
    size_t max_;
    uint32_t next_handle_ = 1;
};

// What raw Ethernet QPs did, for QUERY_STATS.
struct RawCounters {
    uint64_t tx_frames = 0;
    uint64_t rx_frames = 0;
    uint64_t rx_dropped = 0;
};

class RawEth final : public Transport {
  public:
    // Frames go out through 'port' (whole frames: nothing of the link
    // layer is added).
    // Frames an RSS QP takes go to a WQ of 'wqs'.
    RawEth(TransportServices &svc, Port &port, WqTable &wqs);

    // The work loop's turn for a raw QP: send WQEs, or flush in SQE/ERR.
    void visit(Qp &qp, unsigned int &budget) override;
    // A raw QP takes frames from flows only, never RDMA packets.
    void rx(Qp &qp, const ParsedPacket &pkt) override;
    void timer_expired(Qp &qp) override { odp_retry_expired(svc_, qp); }
    void odp_resumed(Qp &qp) override { odp_retry_resumed(svc_, qp); }
    // A frame received from the wire: true if a flow took it (delivered
    // or dropped), false if it goes on to the Ethernet RX ring.
    bool steer(std::span<const uint8_t> frame);
    [[nodiscard]] FlowTable &flows() { return flows_; }
    [[nodiscard]] const RawCounters &counters() const { return counters_; }
    void reset() override;
    // The flows and the counters (transports/snapshot.cpp).
    void save(state::Writer &w) const;
    void load(state::Reader &r, const std::function<bool(uint32_t)> &qp_ok,
              std::vector<uint32_t> &qp_flows);

    // Longest frame a raw QP may send for a port MTU: the MTU, the
    // Ethernet header and one VLAN tag.
    [[nodiscard]] static uint32_t max_frame(uint32_t mtu) { return mtu + 18; }

  private:
    bool send_one(Qp &qp);
    void deliver(Qp &qp, std::span<const uint8_t> frame);
    void deliver_wq(Wq &wq, std::span<const uint8_t> frame);
    bool gather(Qp &qp, const ohca_send_wqe &w, uint64_t base, uint32_t &len, uint8_t &status,
                uint8_t &verr);

    TransportServices &svc_;
    Port &port_;
    WqTable &wqs_;
    FlowTable flows_;
    RawCounters counters_;
    // A WQ's receive WQE being filled, reused: no allocation per frame.
    RecvWqe wq_wqe_;
    // The frame being sent, reused: no allocation per frame.
    std::array<uint8_t, OHCA_ETH_MAX_FRAME> frame_{};
};

} // namespace ohca
