// SPDX-License-Identifier: GPL-2.0-or-later
// The ohca device: all state behind the C API of ohca_engine.h.
//
// Member functions are split by what they own:
//   device.cpp      lifetime, reset, fatal state, EQ 0 and its held events,
//                   link, doorbell pages, process()
//   regs.cpp        the BAR0 register file
//   cmdq.cpp        the command queue, the command table, device commands
//   eth.cpp         the Ethernet TX/RX rings and receive classification
//   objects/keys.*  MemoryKeys: MRs, windows, device memory, ODP and their
//                   commands (mr.cpp, mr_rereg.cpp, fast_reg.cpp, mw.cpp,
//                   dm.cpp, odp.cpp); the transports' MemoryServices
//   transport.cpp   the transport services (TransportServices): packets out
//                   and in, QP doorbells, the ready list and timers, the run
//                   loop. Each QP type has its Transport (transports_, by
//                   type): RC is RcTransport (rc.cpp) over RcRequester
//                   (requester.cpp, completer.cpp, rc_retransmit.cpp) and
//                   RcResponder (responder.cpp), UC UcTransport (uc.cpp), UD
//                   and GSI UdTransport (ud.cpp), XRC XrcTransport (xrc.cpp),
//                   raw Ethernet RawEth (raw_eth.cpp). Below the BTH is the
//                   link layer (link/link_layer.hpp; RoCEv2 by default,
//                   link/roce_v2.cpp); frames leave through the Port.
// The object families have their own owners (objects/), members here: PDs
// and XRC domains PdTable (pd.cpp), EQs and CQs CqTable (cq.cpp), SRQs
// SrqTable (srq.cpp), QPs and multicast attachments QpTable (qp_table.cpp),
// CQEs, errors and flushes Completions (completion.cpp), flows FlowTable
// (raw_eth.cpp).
// docs/architecture.md has the same map.
#pragma once

#include "device/command.hpp"
#include "device/eth_ring.hpp"
#include "device/event_queue.hpp"
#include "device/gid_table.hpp"
#include "device/host.hpp"
#include "device/ib_flow.hpp"
#include "device/ib_port.hpp"
#include "device/limits.hpp"
#include "device/roce_backlog.hpp"
#include "device/sched.hpp"
#include "device/stats.hpp"
#include "device/uar_table.hpp"
#include "link/ib_link.hpp"
#include "link/link_layer.hpp"
#include "link/roce_packet.hpp"
#include "link/roce_v2.hpp"
#include "objects/completions.hpp"
#include "objects/cq.hpp"
#include "objects/keys.hpp"
#include "objects/mcast.hpp"
#include "objects/pbl_budget.hpp"
#include "objects/pd.hpp"
#include "objects/qp_table.hpp"
#include "objects/rdma_objects.hpp"
#include "objects/scheduler.hpp"
#include "objects/srq.hpp"
#include "transports/raw_eth.hpp"
#include "transports/rc.hpp"
#include "transports/requester.hpp"
#include "transports/responder.hpp"
#include "transports/transport.hpp"
#include "transports/uc.hpp"
#include "transports/ud.hpp"
#include "transports/xrc.hpp"

#include <ohca/ohca_cmd.h>
#include <ohca/ohca_queue.h>
#include <ohca/ohca_regs.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <vector>

namespace ohca {

struct DeviceConfig {
    std::array<uint8_t, 6> mac{};
    uint64_t node_guid = 0;
    uint64_t sys_image_guid = 0;
    bool link_up = true;
    uint32_t id_seed = 0;
    uint32_t max_qp = OHCA_ENGINE_DEFAULT_MAX_QP; // 1..OHCA_ENGINE_MAX_QP
    // What lies below the BTH on the wire; null: RoCEv2 (roce_v2_link()).
    // Tests choose another; the C API always has RoCEv2. It must outlive
    // the device.
    const LinkLayer *link = nullptr;
    // OHCA_LINK_IB: an InfiniBand port (ib_port.hpp, link/ib_link.hpp);
    // 'link' null then means the IB link layer.
    uint8_t link_layer = OHCA_LINK_ETH;
    uint64_t port_guid = 0; // InfiniBand; 0: node_guid
};

class Device : private EventSink,
               private WireServices,
               private QpScheduler,
               private QpWindows,
               private KeyLinks,
               private Port {
  public:
    Device(const ohca_engine_ops &ops, void *ctx, const DeviceConfig &cfg);
    Device(const Device &) = delete;
    Device &operator=(const Device &) = delete;
    ~Device() = default;

    uint64_t reg_read(uint64_t offset, unsigned int size);
    void reg_write(uint64_t offset, uint64_t value, unsigned int size);
    void db_write(uint32_t page, uint32_t offset, uint64_t value, unsigned int size);
    void doorbell_fast(uint32_t page, uint32_t offset, uint64_t value, unsigned int size,
                       unsigned int budget);
    // MRs, windows, device memory (BAR2's window) and ODP (objects/keys.hpp).
    [[nodiscard]] MemoryKeys &memory_keys() { return keys_; }
    [[nodiscard]] const MemoryKeys &memory_keys() const { return keys_; }
    ohca_engine_rx_result receive_frame(std::span<const uint8_t> frame);
    void set_link(bool up);
    void reset();
    void process();

    // For tests and the glue's tracing.
    [[nodiscard]] const Stats &stats() const { return stats_; }
    // Host memory held by the page lists of live objects.
    [[nodiscard]] uint64_t pbl_bytes() const { return pbl_.used() * sizeof(uint64_t); }
    // The transport's run loop, for tests, benchmarks and tracing.
    struct SchedStats {
        uint64_t runs = 0;        // process_rdma() calls
        uint64_t visits = 0;      // ready QPs visited
        uint64_t out_of_time = 0; // runs ended by max_run_ns (or max_run_work)
        uint64_t timer_expiries = 0;
        uint64_t doorbell_runs = 0; // runs of ohca_engine_doorbell_fast()
        // Runs that left the timers to the next one: their bound ended
        // before the frames received before them were all taken in.
        uint64_t timers_deferred = 0;
        // Runs that left expired timers to the next one: more than
        // DeviceLimits::max_run_timers had expired.
        uint64_t timers_capped = 0;
    };
    [[nodiscard]] const SchedStats &sched_stats() const { return sched_stats_; }

  private:
    // Guards against re-entry from inside a host callback. A reset asked
    // for from inside one runs when the outer entry ends (reset_pending_).
    class Entry {
      public:
        explicit Entry(Device &d) : d_(d), ok_(!d.busy_) { d_.busy_ = true; }
        ~Entry() {
            if (ok_) {
                d_.busy_ = false;
                if (d_.reset_pending_) {
                    d_.reset();
                }
            }
        }
        Entry(const Entry &) = delete;
        Entry &operator=(const Entry &) = delete;
        [[nodiscard]] bool ok() const { return ok_; }

      private:
        Device &d_;
        bool ok_;
    };

    // device.cpp
    Qp *ring(uint32_t page, uint32_t offset, uint64_t value, unsigned int size);
    void power_on_state();
    void enter_fatal(uint32_t code);
    void post_event(uint8_t type, uint16_t code, uint32_t p0, uint32_t p1, uint32_t p2) override;
    void post_peer_event(uint16_t code, uint32_t qpn) override;
    void hold_event(const ohca_eqe &eqe);
    bool take_held(ohca_eqe &eqe);
    void drain_held_events();
    // A command runs only when EQ 0 can take its CMD_DONE at once.
    [[nodiscard]] bool eq0_takes_command() const { return held_.empty() && eq0_.has_room(); }
    [[nodiscard]] bool running() const;

    // regs.cpp
    void write_dev_ctrl(uint32_t value);
    void enable();
    [[nodiscard]] bool config_writable() const;

    // cmdq.cpp
    void cmdq_doorbell(uint32_t value);
    void process_cmdq();
    // The command set: per opcode its owner's handler and the sizes the
    // queue checks first (cmdq.cpp). Adding a command is one row.
    struct CmdSpec {
        size_t in = 0;            // input size (ODP_MAP: at least)
        size_t out = 0;           // minimum output size
        bool in_at_least = false; // the input may be longer (entries follow)
        CmdResult (*run)(Device &, const Command &) = nullptr; // null: BAD_OPCODE
    };
    static const std::array<CmdSpec, OHCA_CMD_MAX> kCommands;
    CmdResult cmd_query_device(const Command &cmd);
    CmdResult cmd_query_port(const Command &cmd);
    CmdResult cmd_set_port(const Command &cmd);
    CmdResult cmd_create_eth_ring(const Command &cmd);
    CmdResult cmd_destroy_eth_ring(const Command &cmd);
    CmdResult cmd_alloc_uar(const Command &cmd);
    CmdResult cmd_dealloc_uar(const Command &cmd);
    CmdResult cmd_add_gid(const Command &cmd);
    CmdResult cmd_del_gid(const Command &cmd);
    CmdResult cmd_query_stats(const Command &cmd);

    // ib_device.cpp: the hooks of an InfiniBand port (ib_ set)
    CmdResult cmd_mad_ifc(const Command &cmd);
    // What changed on the port, to the driver (OHCA_EQE_PORT_CHANGE).
    void ib_port_changed(uint32_t changed);
    // The LRH (and GRH) of a packet on an address vector.
    bool ib_path(const ohca_av &av, bool smi, PacketPath &path) const;
    // Whether a packet on 'path' stays in the device.
    [[nodiscard]] bool ib_is_local(const PacketPath &path) const;
    // A received (or looped-back) packet through the port's rules to its QP.
    void ib_deliver(const ParsedPacket &p);
    void ib_drop(void (IbPort::*count)());
    // The port's rules for a packet leaving: false drops it (counted).
    bool ib_may_send(const PacketPath &path, size_t frame_len);
    // A framed packet to the link: VL15 at once, data against credit.
    void ib_transmit(const PacketPath &path, std::span<const uint8_t> frame);
    // Link initialization: credits from zero, our FCPs out.
    void ib_link_init();
    ohca_engine_rx_result ib_receive(std::span<const uint8_t> frame);
    // A received frame the link layer refused: the port's counters.
    void ib_parse_error(ParseError err);

    // rdma_cmds.cpp: the RDMA resource commands
    void rdma_power_on();
    void seed_ids(uint32_t seed);
    [[nodiscard]] uint64_t pbl_room() const;
    CmdResult write_create_out(const Command &cmd, uint32_t h1, uint32_t h2);
    Qp *find_qp(uint32_t qpn) override { return qps_.find(qpn); }
    // QpWindows: a destroyed QP's type 2 windows (MemoryKeys).
    void unbind_qp_windows(const Qp &qp) override { keys_.unbind_qp_windows(qp); }

    // KeyLinks (device.cpp): what the keys need of QPs and EQ 0.
    void odp_resume(Qp &qp) override;
    [[nodiscard]] bool fault_event_room() const override;

    // transport.cpp: the transport services, QP doorbells, received RoCE
    // frames, readiness and timers, the run loop
    [[nodiscard]] const Host &host() const override { return host_; }
    void emit(const Qp &qp, const PacketFields &fields, std::span<const uint8_t> payload) override;
    EmitResult emit_fill(const Qp &qp, const PacketFields &fields, size_t payload_len,
                         PayloadFill fill) override;
    EmitResult send_roce(const PacketPath &path, const PacketFields &fields, size_t payload_len,
                         PayloadFill fill, bool shortcut);
    EmitResult loop_back(const PacketPath &path, const PacketFields &fields, size_t payload_len,
                         PayloadFill fill, bool shortcut);
    [[nodiscard]] bool tx_room(const Qp &qp) const override;
    void emit_path(const PacketPath &path, const PacketFields &fields,
                   std::span<const uint8_t> payload) override;
    bool av_path(const Qp &qp, const ohca_av &av, PacketPath &path) const override;
    [[nodiscard]] bool tx_room_to(const PacketPath &path) const override;
    [[nodiscard]] uint16_t pkey_of(const Qp &qp, uint16_t wqe_index) const override;
    [[nodiscard]] uint32_t port_mtu() const override;
    void count_rx_dropped() override { ++stats_.roce_rx_dropped; }
    Qp *qp_by_number(uint32_t qpn) override { return qps_.find(qpn); }
    // The port (link_layer.hpp): a frame to the host while the link is up.
    void transmit(std::span<const uint8_t> frame) override;
    RoceCounters &counters() override { return roce_; }
    void mark_ready(Qp &qp) override;
    void set_deadline(Qp &qp, uint64_t deadline_ns) override;
    void unschedule(Qp &qp) override; // before a QP is reset or destroyed
    // Both return the QP they made ready, or null.
    Qp *rq_doorbell(uint32_t page, uint32_t qpn, uint32_t value);
    Qp *take_doorbell(uint32_t page, uint32_t qpn, WorkQueue Qp::*wq, uint32_t value);
    Qp *sq_doorbell(uint32_t page, uint32_t qpn, uint32_t value);
    void process_rdma();
    // One run of the transport: 'first' (if ready) visited first, at most
    // 'max_work' units and 'max_ns' of the host's clock.
    void run_rdma(Qp *first, unsigned int max_work, uint64_t max_ns);
    void visit(Qp &qp, unsigned int &quantum);
    void take_frame();
    // False when expired timers are left for the next run (max_run_timers).
    bool check_timers();
    void update_timer() override;
    [[nodiscard]] bool build_path(const Qp &qp, PacketPath &path) const;
    // Whether a looped-back packet may be generated now (see tx_room).
    [[nodiscard]] bool loopback_room() const;
    void roce_enqueue(std::span<const uint8_t> frame);
    void roce_rx(std::span<const uint8_t> frame);
    void roce_rx_looped(const RoceSlot &slot);
    void roce_deliver(const ParsedPacket &p);
    // A UD packet to OHCA_MCAST_QPN, to every QP attached to its group.
    void mcast_deliver(const ParsedPacket &p);
    [[nodiscard]] bool is_local_gid(const std::array<uint8_t, 16> &gid) const;

    // eth.cpp
    void eth_tx_doorbell(uint32_t value);
    void eth_rx_doorbell(uint32_t value);
    void eth_irq_mask_write(uint32_t value);
    void eth_completed();
    void process_eth_tx();
    bool eth_tx_one();
    [[nodiscard]] bool mac_filter_accepts(std::span<const uint8_t> frame) const;
    ohca_engine_rx_result eth_rx(std::span<const uint8_t> frame);

    Host host_;
    DeviceConfig cfg_;
    // Below the BTH (link_layer.hpp); stateless, chosen at construction.
    const LinkLayer &link_ = cfg_.link != nullptr              ? *cfg_.link
                             : cfg_.link_layer == OHCA_LINK_IB ? ib_link()
                                                               : roce_v2_link();
    bool busy_ = false;
    bool reset_pending_ = false; // asked for while busy_ (Entry)

    // Register file.
    uint32_t dev_status_ = 0;
    uint32_t fatal_code_ = OHCA_FATAL_NONE;
    uint32_t cmdq_base_lo_ = 0;
    uint32_t cmdq_base_hi_ = 0;
    uint32_t cmdq_log_size_ = 0;
    uint32_t eq0_base_lo_ = 0;
    uint32_t eq0_base_hi_ = 0;
    uint32_t eq0_log_size_ = 0;
    uint32_t eth_irq_mask_ = 0;
    bool eth_irq_pending_ = false;

    // Command queue, latched at ENABLE.
    uint64_t cmdq_base_ = 0;
    uint32_t cmdq_size_ = 0;
    uint16_t cmdq_pi_ = 0;
    uint16_t cmdq_ci_ = 0;

    EventQueue eq0_{OHCA_MSIX_ASYNC_EQ};
    // Events that found EQ 0 full (device.cpp: hold_event), posted in
    // order as the driver returns entries. Each object waits here at most
    // once and keeps its waiting events as bits (Qp, Cq, Srq held_events;
    // an identical event merges), so the list never holds more than every
    // QP, CQ and SRQ, the port and one command: bounded by the limits,
    // whatever the guest does. Commands wait while it is not empty.
    enum class HeldKind : uint8_t { Qp, Cq, Srq, Port, Cmd };
    struct HeldRef {
        HeldKind kind;
        uint32_t id;
    };
    std::deque<HeldRef> held_;
    uint16_t held_port_state_ = 0;  // the port state to report, 0: none
    uint32_t held_port_change_ = 0; // ... and what changed (param1), merged
    bool held_cmd_valid_ = false;   // held_cmd_ waits
    ohca_eqe held_cmd_{};
    EthRing tx_ring_;
    EthRing rx_ring_;
    UarTable uars_;
    GidTable gids_;
    Stats stats_;

    // Port.
    // An InfiniBand port's attributes and agents' state; none on Ethernet.
    std::optional<IbPort> ib_ =
        cfg_.link_layer == OHCA_LINK_IB
            ? std::optional<IbPort>(std::in_place, cfg_.node_guid, cfg_.port_guid)
            : std::nullopt;
    // Its link's credits (ib_flow.hpp).
    std::optional<IbFlow> ib_flow_ =
        ib_ ? std::optional<IbFlow>(std::in_place, static_cast<Port &>(*this), uint8_t{8})
            : std::nullopt;
    // A transport found no credit for its packet in this run (tx_room):
    // the run does not ask to run again for it; the peer's FCP does.
    mutable bool ib_credit_wait_ = false;
    uint32_t mtu_ = DeviceLimits::default_mtu;
    uint32_t rx_mode_ = 0;

    // RDMA objects.
    // Objects on each doorbell page (DEALLOC_UAR), page-list entries held by
    // live objects (DeviceLimits::max_pbl_entries), multicast groups.
    UarRefs uar_refs_{};
    PblBudget pbl_;
    McastTable mcast_{{DeviceLimits::max_mcast_grp, DeviceLimits::max_mcast_qp_attach,
                       DeviceLimits::max_total_mcast_qp_attach}};
    // The owners of the object families (objects/): each owns its table and
    // runs its commands.
    PdTable pds_{host_, xrc_};
    CqTable cqs_{host_, pbl_, *this, *this, uars_, uar_refs_};
    SrqTable srqs_{host_, pbl_, *this, uars_, uar_refs_, pds_, cqs_, xrc_};
    // CQEs, QP errors and flushes, SRQ WQEs for the transports.
    Completions completer_{host_, cqs_, srqs_, *this, *this};
    QpTable qps_{{host_, pbl_, uars_, uar_refs_, gids_, pds_, cqs_, srqs_, xrc_, mcast_, *this,
                  completer_, *this, ib_ ? &*ib_ : nullptr},
                 cfg_.max_qp};
    // RoCE frames received (or looped back), handled by process().
    RoceBacklog roce_backlog_{DeviceLimits::max_roce_backlog};
    std::vector<uint8_t> tx_frame_; // the frame being sent, storage reused
    uint64_t timer_deadline_ = 0;   // last deadline given to set_timer
    // QPs with work, QPs with an armed timer, CQs holding a moderated
    // event (sched.hpp).
    ReadyList ready_;
    TimerHeap<Qp> timers_{cfg_.max_qp + DeviceLimits::first_qpn};
    bool in_run_ = false; // inside process_rdma(): no schedule() per ready QP
    // The last run left the timers unchecked (run_rdma): the next checks
    // them whatever its backlog holds.
    bool timers_deferred_ = false;
    SchedStats sched_stats_;
    // MRs, memory windows, device memory and ODP: the transports' memory.
    MemoryKeys keys_{host_, pds_.table(), pbl_, *this, *this, stats_, cfg_.max_qp};
    // What the transports reach the device through.
    TransportServices svc_{keys_, completer_, *this};
    // The RC transport.
    RcRequester rc_requester_{svc_};
    RcResponder rc_responder_{svc_};
    RcTransport rc_{svc_, rc_requester_, rc_responder_};
    // The UC transport.
    UcTransport uc_{svc_};
    // UD and GSI QPs.
    UdTransport ud_{svc_};
    // XRC: domains, and RC's requester and responder with the XRC wire.
    XrcTransport xrc_{svc_, rc_requester_, rc_responder_};
    // Raw Ethernet QPs and their flows; frames leave through the port.
    RawEth raw_{svc_, *this};
    // The transport of each QP type (ohca_qp_type), for the run loop, the
    // receive path and the timers.
    static_assert(OHCA_QPT_RC == 0 && OHCA_QPT_UD == 1 && OHCA_QPT_GSI == 2 && OHCA_QPT_UC == 3 &&
                  OHCA_QPT_XRC_INI == 4 && OHCA_QPT_XRC_TGT == 5 && OHCA_QPT_RAW_ETH == 6 &&
                  OHCA_QPT_SMI == 7);
    std::array<Transport *, OHCA_QPT_SMI + 1> transports_{&rc_,  &ud_,  &ud_,  &uc_,
                                                          &xrc_, &xrc_, &raw_, &ud_};
    [[nodiscard]] Transport &transport_of(const Qp &qp) const { return *transports_[qp.type]; }

  public:
    [[nodiscard]] const RoceCounters &roce_counters() const { return roce_; }
    // An InfiniBand port's own counters (nullptr on Ethernet), for tests.
    [[nodiscard]] const IbPortCounters *ib_counters() const {
        return ib_ ? &ib_->counters() : nullptr;
    }
    // A QP's responder resources, for tests of their bounds (nullptr: no QP).
    [[nodiscard]] const ResponderResources *responder_resources(uint32_t qpn) const {
        const Qp *qp = qps_.find(qpn);
        return qp != nullptr ? &qp->resp : nullptr;
    }
    // A QP's transport state, for tests that watch it (retries, window).
    [[nodiscard]] const Qp *qp_state_of(uint32_t qpn) const { return qps_.find(qpn); }

  private:
    RoceCounters roce_;

    // A frame was refused with RX_RETRY (RoCE backlog full, or offered from
    // inside a callback) and waits in the host.
    bool rx_waiting_ = false;
};

// The device behind a C handle, for tests and tracing (c_api.cpp).
const Device &device_of(const ohca_engine *e);
// ohca_engine_create() with a link layer of the caller's (null: RoCEv2),
// for tests of the link-layer seam; the glue's C API stays RoCEv2.
ohca_engine *engine_create(const ohca_engine_ops *ops, void *ctx, const ohca_engine_config *cfg,
                           const LinkLayer *link);

} // namespace ohca
