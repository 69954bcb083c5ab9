// SPDX-License-Identifier: GPL-2.0-or-later
// The ohca device: all state behind the C API of ohca_engine.h. Device
// itself keeps the register file (regs.cpp), the command queue (cmdq.cpp),
// reset and the fatal state, the doorbell pages and the entry points
// (device.cpp); everything else is a collaborator it owns:
//   async_events.*  EQ 0 and the events waiting for room in it
//   wire_port.*     the port's wire side: state (port_state.hpp), GIDs,
//                   link layer, RoCE backlog, loopback; WireServices; an
//                   InfiniBand port's rules in ib_wire.*, its SMA state in
//                   ib_port.* (PortState::ib)
//   run_loop.*      ready list, timers, the runs; QpScheduler
//   eth.*           the Ethernet rings and their commands
//   device_cmds.*   the device's own commands (QUERY_DEVICE, ports, GIDs,
//                   UARs, QUERY_STATS, MAD_IFC)
//   objects/        one owner per object family, each running its commands:
//                   PdTable (PDs, XRC domains), CqTable (EQs, CQs),
//                   SrqTable, QpTable (QPs, multicast attachments),
//                   MemoryKeys (MRs, windows, device memory, ODP; the
//                   transports' MemoryServices), Completions (CQEs, errors,
//                   flushes; CompletionServices)
//   transports/     one Transport per QP type (transports_, by type): RC
//                   RcTransport over RcRequester and RcResponder, UC, UD and
//                   GSI, XRC, raw Ethernet; TransportServices binds the four
//                   service groups they reach the device through.
// docs/architecture.md has the same map.
#pragma once

#include "device/async_events.hpp"
#include "device/command.hpp"
#include "device/dev_status.hpp"
#include "device/device_cmds.hpp"
#include "device/device_config.hpp"
#include "device/eth.hpp"
#include "device/host.hpp"
#include "device/limits.hpp"
#include "device/run_loop.hpp"
#include "device/stats.hpp"
#include "device/uar_table.hpp"
#include "device/wire_port.hpp"
#include "link/link_layer.hpp"
#include "link/roce_v2.hpp"
#include "objects/completions.hpp"
#include "objects/cq.hpp"
#include "objects/db_record.hpp"
#include "objects/keys.hpp"
#include "objects/mcast.hpp"
#include "objects/pbl_budget.hpp"
#include "objects/pd.hpp"
#include "objects/qp_table.hpp"
#include "objects/rdma_objects.hpp"
#include "objects/scheduler.hpp"
#include "objects/srq.hpp"
#include "objects/wq.hpp"
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
#include <span>
#include <vector>

namespace ohca {

class Device : private KeyLinks, private FatalSink {
    // Saves and loads the whole state (state/device_state.hpp): the
    // registers here, every other part through its owner.
    friend class DeviceState;

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
    using SchedStats = ohca::SchedStats;
    [[nodiscard]] const SchedStats &sched_stats() const { return loop_.stats(); }
    [[nodiscard]] const RunLoop &run_loop() const { return loop_; }
    [[nodiscard]] const RoceCounters &roce_counters() const { return port_.roce_counters(); }
    // An InfiniBand port's own counters (nullptr on Ethernet), for tests.
    [[nodiscard]] const IbPortCounters *ib_counters() const {
        const auto &ib = port_.state().ib;
        return ib ? &ib->counters() : nullptr;
    }
    // A QP's responder resources, for tests of their bounds (nullptr: no QP).
    [[nodiscard]] const ResponderResources *responder_resources(uint32_t qpn) const {
        const Qp *qp = qps_.find(qpn);
        return qp != nullptr ? &qp->resp : nullptr;
    }
    // A QP's transport state, for tests that watch it (retries, window).
    [[nodiscard]] const Qp *qp_state_of(uint32_t qpn) const { return qps_.find(qpn); }

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
    void enter_fatal(uint32_t code) override;
    // KeyLinks: what the keys need of QPs, the transports and EQ 0.
    Qp *find_qp(uint32_t qpn) override { return qps_.find(qpn); }
    void odp_resume(Qp &qp) override;
    [[nodiscard]] bool fault_event_room() const override {
        return status_.running() && events_.fault_room();
    }

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

    Host host_;
    DeviceConfig cfg_;
    bool busy_ = false;
    bool reset_pending_ = false; // asked for while busy_ (Entry)

    // Register file.
    DevStatus status_;
    uint32_t cmdq_base_lo_ = 0;
    uint32_t cmdq_base_hi_ = 0;
    uint32_t cmdq_log_size_ = 0;
    uint32_t eq0_base_lo_ = 0;
    uint32_t eq0_base_hi_ = 0;
    uint32_t eq0_log_size_ = 0;

    // Command queue, latched at ENABLE.
    uint64_t cmdq_base_ = 0;
    uint32_t cmdq_size_ = 0;
    uint16_t cmdq_pi_ = 0;
    uint16_t cmdq_ci_ = 0;

    UarTable uars_;
    Stats stats_;
    // Objects on each doorbell page (DEALLOC_UAR), page-list entries held by
    // live objects (DeviceLimits::max_pbl_entries), multicast groups.
    UarRefs uar_refs_{};
    PblBudget pbl_;
    McastTable mcast_{{DeviceLimits::max_mcast_grp, DeviceLimits::max_mcast_qp_attach,
                       DeviceLimits::max_total_mcast_qp_attach}};

    // The collaborators below hold references to each other; each is
    // constructed before anything that reaches it through one of its
    // interfaces.
    // EQ 0 and the events waiting for it; the EventSink of every owner.
    AsyncEvents events_{{host_, stats_, status_, qps_, cqs_, srqs_, *this}};
    // The port's wire side (WireServices) and the run loop (QpScheduler).
    WirePort port_{{host_, stats_, status_, qps_, mcast_, transports_, ud_, loop_}, cfg_};
    RunLoop loop_{{host_, status_, port_, cqs_, transports_}, cfg_.max_qp};
    EthRings eth_{{host_, stats_, status_, port_.state(), port_.pfc()}};

    // The owners of the object families (objects/): each owns its table and
    // runs its commands.
    PdTable pds_{host_, xrc_};
    // Doorbell records: a refused value is counted with the doorbells.
    DbRecords records_{host_, stats_.db_errors};
    CqTable cqs_{host_, pbl_, records_, events_, loop_, uars_, uar_refs_};
    SrqTable srqs_{host_, pbl_, records_, events_, uars_, uar_refs_, pds_, cqs_, xrc_};
    // CQEs, QP errors and flushes, SRQ WQEs for the transports.
    Completions completer_{host_, cqs_, srqs_, records_, events_, loop_};
    // MRs, memory windows, device memory and ODP: the transports' memory.
    MemoryKeys keys_{host_, pds_.table(), pbl_, events_, *this, stats_, cfg_.max_qp};
    QpTable qps_{{host_, pbl_, uars_, uar_refs_, port_.gids(), pds_, cqs_, srqs_, xrc_, mcast_,
                  loop_, completer_, keys_, port_.state().ib ? &*port_.state().ib : nullptr},
                 cfg_.max_qp};

    // What the transports reach the device through.
    TransportServices svc_{keys_, completer_, port_, loop_};
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
    WqTable wqs_{{host_, pbl_, uars_, uar_refs_, pds_, cqs_, qps_, completer_}};
    RawEth raw_{svc_, port_, wqs_};
    // The transport of each QP type (ohca_qp_type), for the run loop, the
    // receive path and the timers.
    TransportTable transports_{&rc_, &ud_, &ud_, &uc_, &xrc_, &xrc_, &raw_, &ud_};

    // The device's own commands.
    DeviceCommands cmds_{{host_, cfg_, port_, stats_, uars_, uar_refs_, raw_, events_}};
};

// The device behind a C handle, for tests and tracing (c_api.cpp).
const Device &device_of(const ohca_engine *e);
// ohca_engine_create() with a link layer of the caller's (null: RoCEv2),
// for tests of the link-layer seam; the glue's C API stays RoCEv2.
ohca_engine *engine_create(const ohca_engine_ops *ops, void *ctx, const ohca_engine_config *cfg,
                           const LinkLayer *link);

} // namespace ohca
