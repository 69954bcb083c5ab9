// SPDX-License-Identifier: GPL-2.0-or-later
// The ohca device: all state behind the C API of ohca_engine.h.
//
// Member functions are split by what they own:
//   device.cpp  lifetime, reset, fatal state, link, doorbell pages, process()
//   regs.cpp    the BAR0 register file
//   cmdq.cpp    the command queue and every command
//   eth.cpp     the Ethernet TX/RX rings and receive classification
// and the RDMA transports: RC in requester.cpp/responder.cpp, UD in ud.cpp
// (class UdTransport, which uses the shared parts below).
#pragma once

#include "eth_ring.hpp"
#include "event_queue.hpp"
#include "gid_table.hpp"
#include "host.hpp"
#include "rdma_objects.hpp"
#include "roce_packet.hpp"
#include "stats.hpp"
#include "uar_table.hpp"
#include "ud.hpp"

#include <ohca/ohca_cmd.h>
#include <ohca/ohca_queue.h>
#include <ohca/ohca_regs.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

namespace ohca {

// Limits reported by QUERY_DEVICE (the RDMA objects come with the transport).
struct DeviceLimits {
    static constexpr uint32_t fw_version = OHCA_FW_VERSION(1, 0, 0);
    static constexpr uint32_t hw_version = 1;
    // No IEEE OUI of our own: report the PCI vendor ID, as efa does.
    static constexpr uint32_t vendor_id = OHCA_PCI_VENDOR_ID;
    static constexpr uint32_t vendor_part_id = OHCA_PCI_DEVICE_ID;
    static constexpr uint64_t max_mr_size = uint64_t{1} << 40;
    static constexpr uint64_t page_size_cap =
        (uint64_t{1} << 12) | (uint64_t{1} << 21) | (uint64_t{1} << 30);
    static constexpr uint32_t max_qp = 1024;
    static constexpr uint32_t max_qp_wr = 4096;
    static constexpr uint32_t max_sge = 16;
    static constexpr uint32_t max_sge_rd = 16;
    static constexpr uint32_t max_cq = 1024;
    static constexpr uint32_t max_cqe = 65535;
    static constexpr uint32_t max_mr = 4096;
    static constexpr uint32_t max_pd = 1024;
    static constexpr uint32_t max_qp_rd_atom = 16;
    static constexpr uint32_t max_qp_init_rd_atom = 16;
    static constexpr uint32_t max_ah = 4096;
    static constexpr uint32_t max_srq = 256;
    static constexpr uint32_t max_srq_wr = 4096;
    static constexpr uint32_t max_inline_data = 256;
    static constexpr uint32_t max_uar = OHCA_NUM_DB_PAGES - 1;
    static constexpr uint32_t max_eq = OHCA_NUM_MSIX - 1; // vectors 0, 2..7
    static constexpr uint32_t max_msg_size = uint32_t{1} << 31;
    static constexpr uint32_t gid_table_len = kGidTableLen;
    static constexpr uint32_t pkey_table_len = 1;
    static constexpr uint32_t num_ports = 1;
    // Fast registration: page-list entries per fast-registration MR.
    static constexpr uint32_t max_fast_reg_page_list_len = OHCA_MAX_FAST_REG_PAGES;
    static constexpr uint32_t dev_caps = OHCA_DEV_CAP_FAST_REG;
    static constexpr uint32_t speed_mbps = 10000;
    static constexpr uint32_t default_mtu = 1500;
    // Enforced by CREATE_QP: 2^log_size <= max_qp_wr.
    static constexpr unsigned int max_wq_log = 12;
    // Handles: eqn 1..max_eq-1, pdn 1..max_pd, MR index 1..max_mr,
    // cqn 1..max_cq, qpn 2..max_qp+1 (0 and 1 are the IBTA special QPs).
    static constexpr uint32_t first_qpn = 2;
    // Local ACK timeout floor under emulation, and the RoCE RX backlog.
    static constexpr uint64_t min_ack_timeout_ns = 200'000'000;
    static constexpr uint64_t min_rnr_delay_ns = 1'000'000;
    // rnr_retry 7 retries for ever: after as many RNR NAKs in a row as a
    // finite rnr_retry could allow (7), each wait doubles up to this.
    static constexpr uint64_t max_rnr_backoff_ns = 100'000'000;
    static constexpr size_t max_roce_backlog = 1024;
    // Longest RoCE frame taken: a 4096-byte payload behind Ethernet, VLAN,
    // IPv6, UDP, BTH and RETH, with ImmDt and ICRC, is 4198 bytes; the rest
    // is room to spare. With max_roce_backlog it bounds the backlog (4.5 MB).
    static constexpr size_t max_roce_frame = 4096 + 256;
    // Looped-back packets a QP may generate only while the backlog has this
    // much room left (ACKs answer consumed packets and need no room).
    static constexpr size_t loopback_reserve = 64;
    // READ response packets one QP sends per pass of the work loop.
    static constexpr unsigned int read_resp_per_pass = 64;
    // The requester's congestion window: packets past the oldest
    // unacknowledged PSN, READ response PSNs included (docs/wire.md). It
    // starts at initial_window, halves on a NAK or skipped responses, drops to
    // min_window on an ACK timeout and grows back as ACKs arrive.
    static constexpr uint32_t initial_window = 256;
    static constexpr uint32_t min_window = 4;
    static constexpr uint32_t max_window = 1024;
    // How often the requester asks for an ACK inside a long message (more
    // often when the window is smaller).
    static constexpr uint32_t ack_req_every = 64;
    // Packets and WQEs handled per process() call before rescheduling.
    static constexpr unsigned int process_budget = 4096;
    // Page-list entries all objects together may hold (8 bytes of host
    // memory each): 32 MiB, enough for 16 GiB of guest memory registered in
    // 4 KiB pages. Beyond it a create command answers NO_RESOURCES.
    static constexpr uint64_t max_pbl_entries = uint64_t{1} << 22;
};

struct DeviceConfig {
    std::array<uint8_t, 6> mac{};
    uint64_t node_guid = 0;
    uint64_t sys_image_guid = 0;
    bool link_up = true;
    uint32_t id_seed = 0;
};

class Device {
  public:
    Device(const ohca_engine_ops &ops, void *ctx, const DeviceConfig &cfg);

    uint64_t reg_read(uint64_t offset, unsigned int size);
    void reg_write(uint64_t offset, uint64_t value, unsigned int size);
    void db_write(uint32_t page, uint32_t offset, uint64_t value, unsigned int size);
    ohca_engine_rx_result receive_frame(std::span<const uint8_t> frame);
    void set_link(bool up);
    void reset();
    void process();

    // For tests and the glue's tracing.
    [[nodiscard]] const Stats &stats() const { return stats_; }
    // Host memory held by the page lists of live objects.
    [[nodiscard]] uint64_t pbl_bytes() const { return pbl_entries_ * sizeof(uint64_t); }

    struct Command; // a decoded command entry (command.hpp)
    struct CmdResult {
        uint8_t status = OHCA_STATUS_OK;
        uint32_t syndrome = 0;
    };

  private:
    friend class UdTransport;

    // Guards against re-entry from inside a host callback.
    class Entry {
      public:
        explicit Entry(Device &d) : d_(d), ok_(!d.busy_) { d_.busy_ = true; }
        ~Entry() {
            if (ok_) {
                d_.busy_ = false;
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
    void power_on_state();
    void enter_fatal(uint32_t code);
    void post_event(uint8_t type, uint16_t code, uint32_t p0, uint32_t p1, uint32_t p2);
    void post_peer_event(uint16_t code, uint32_t qpn);
    [[nodiscard]] bool running() const;

    // regs.cpp
    void write_dev_ctrl(uint32_t value);
    void enable();
    bool config_writable();

    // cmdq.cpp
    void cmdq_doorbell(uint32_t value);
    void process_cmdq();
    CmdResult execute(const Command &cmd);
    CmdResult write_output(const Command &cmd, const void *out, size_t len);
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

    // rdma_cmds.cpp: the RDMA resource commands
    void rdma_power_on();
    void seed_ids(uint32_t seed);
    [[nodiscard]] uint64_t pbl_room() const;
    [[nodiscard]] static uint64_t pbl_charge(const Mr &mr);
    CmdResult write_create_out(const Command &cmd, uint32_t h1, uint32_t h2);
    CmdResult cmd_create_eq(const Command &cmd);
    CmdResult cmd_destroy_eq(const Command &cmd);
    CmdResult cmd_create_pd(const Command &cmd);
    CmdResult cmd_destroy_pd(const Command &cmd);
    CmdResult cmd_create_mr(const Command &cmd);
    CmdResult cmd_destroy_mr(const Command &cmd);
    CmdResult cmd_create_cq(const Command &cmd);
    CmdResult cmd_destroy_cq(const Command &cmd);
    CmdResult cmd_create_qp(const Command &cmd);
    CmdResult cmd_modify_qp(const Command &cmd);
    CmdResult cmd_query_qp(const Command &cmd);
    CmdResult cmd_destroy_qp(const Command &cmd);
    void apply_qp_state(Qp &qp, uint8_t next);

    // completion.cpp: EQ/CQ doorbells, CQEs, events, errors and flushes
    void comp_eq_doorbell(uint32_t eqn, uint32_t value);
    void post_cq_event(uint32_t eqn, uint32_t cqn);
    bool post_cqe(uint32_t cqn, ohca_cqe cqe, bool solicited);
    void cq_doorbell(uint32_t page, uint32_t cqn, uint32_t value);
    void complete_send(Qp &qp, const SendWr &wr, uint8_t status, uint8_t verr);
    void complete_recv(Qp &qp, uint64_t wr_id, uint8_t opcode, uint32_t byte_len,
                       std::optional<uint32_t> imm, uint8_t status, uint8_t verr, bool solicited,
                       std::optional<uint32_t> invalidated = std::nullopt);
    void qp_to_error(Qp &qp);
    void flush_qp(Qp &qp, unsigned int &budget);
    [[nodiscard]] static bool flush_pending(const Qp &qp);
    struct KeyResult {
        uint8_t verr = OHCA_VERR_NONE;
        const Mr *mr = nullptr;
    };
    // Looks up a key for [va, va + len) with 'access' rights in PD 'pdn'.
    [[nodiscard]] KeyResult check_key(uint32_t key, uint64_t va, uint64_t len, uint32_t access,
                                      uint32_t pdn) const;
    bool mr_read(const Mr &mr, uint64_t va, void *buf, size_t len) const;
    bool mr_write(const Mr &mr, uint64_t va, const void *buf, size_t len) const;
    Qp *find_qp(uint32_t qpn);

    // fast_reg.cpp: fast-registration MRs and invalidation
    struct LocalOpResult {
        uint8_t status = OHCA_CQE_SUCCESS;
        uint8_t verr = OHCA_VERR_NONE;
    };
    CmdResult init_fast_reg_mr(const ohca_create_mr_in &in, Mr &mr) const;
    LocalOpResult execute_reg_mr(const Qp &qp, const ohca_reg_mr_wqe &w);
    // Makes the fast-registration MR whose current key is 'key' free.
    uint8_t invalidate_key(uint32_t key, uint32_t pdn);
    LocalOpResult execute_local_op(const Qp &qp, const ohca_send_wqe &w, SendWr &wr);

    // requester.cpp: SQ doorbells, WQE processing, segmentation, ACKs,
    // retransmission
    void rq_doorbell(uint32_t page, uint32_t qpn, uint32_t value);
    void sq_doorbell(uint32_t page, uint32_t qpn, uint32_t value);
    void process_rdma();
    void process_sq(Qp &qp, unsigned int &budget);
    bool fetch_send_wqe(Qp &qp);
    void send_packet(Qp &qp);
    bool gather(Qp &qp, const SendWr &wr, uint32_t offset, std::span<uint8_t> out);
    void requester_rx(Qp &qp, const ParsedPacket &pkt);
    void ack_through(Qp &qp, uint32_t psn);
    void go_back(Qp &qp, uint32_t psn);
    void recover_from(Qp &qp, uint32_t psn, bool timeout);
    void advance_una(Qp &qp, uint32_t una);
    void requester_fail(Qp &qp, uint8_t status, uint8_t verr);
    void check_timers();
    void update_timer();
    [[nodiscard]] uint32_t mtu_bytes(const Qp &qp) const;
    [[nodiscard]] bool build_path(const Qp &qp, PacketPath &path) const;
    void emit(const Qp &qp, const PacketFields &fields, std::span<const uint8_t> payload);
    // Builds the frame and puts it on the wire, or on the backlog when it
    // is for one of the device's own GIDs.
    void transmit_roce(const PacketPath &path, const PacketFields &fields,
                       std::span<const uint8_t> payload);
    // Whether a looped-back packet may be generated now (see tx_room).
    [[nodiscard]] bool loopback_room() const;

    // responder.cpp: received RoCE packets
    void roce_enqueue(std::span<const uint8_t> frame);
    void roce_rx(std::span<const uint8_t> frame);
    void responder_rx(Qp &qp, const ParsedPacket &pkt);
    void send_ack(Qp &qp, uint32_t psn, uint8_t syndrome);
    void responder_error(Qp &qp, uint8_t nak, uint16_t event);
    bool load_recv_wqe(Qp &qp);
    void queue_read_response(Qp &qp, uint32_t psn, const Reth &reth);
    void process_responses(Qp &qp, unsigned int &budget);
    [[nodiscard]] bool tx_room(const Qp &qp) const;
    void restart_ack_timer(Qp &qp);
    [[nodiscard]] bool is_local_gid(const std::array<uint8_t, 16> &gid) const;

    // eth.cpp
    void eth_tx_doorbell(uint32_t value);
    void eth_rx_doorbell(uint32_t value);
    void eth_irq_mask_write(uint32_t value);
    void eth_completed();
    void process_eth_tx();
    bool eth_tx_one();
    [[nodiscard]] bool mac_filter_accepts(std::span<const uint8_t> frame) const;
    [[nodiscard]] static bool is_roce(std::span<const uint8_t> frame);
    ohca_engine_rx_result eth_rx(std::span<const uint8_t> frame);

    Host host_;
    DeviceConfig cfg_;
    bool busy_ = false;

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
    EthRing tx_ring_;
    EthRing rx_ring_;
    UarTable uars_;
    GidTable gids_;
    Stats stats_;

    // Port.
    uint32_t mtu_ = DeviceLimits::default_mtu;
    uint32_t rx_mode_ = 0;

    // RDMA objects.
    struct MrSlot {
        std::unique_ptr<Mr> mr;
    };
    Table<CompletionEq> eqs_;
    Table<Pd> pds_;
    std::vector<MrSlot> mrs_;
    Table<Cq> cqs_;
    Table<Qp> qps_;
    // Identity that survives reset (not part of the power-on state): the
    // key tag each MR index had last, and where the next QPN search starts.
    std::vector<uint8_t> mr_tags_;
    uint32_t next_qpn_ = DeviceLimits::first_qpn;
    std::array<uint32_t, OHCA_NUM_DB_PAGES> uar_refs_{};
    // Page-list entries held by live objects (DeviceLimits::max_pbl_entries).
    uint64_t pbl_entries_ = 0;
    // RoCE frames received (or looped back), handled by process().
    std::deque<std::vector<uint8_t>> roce_backlog_;
    uint64_t timer_deadline_ = 0; // last deadline given to set_timer

  public:
    // Counters of the transport, reported by QUERY_STATS (rev 1.1 part;
    // docs/programming-manual.md says what each one counts).
    struct RoceCounters {
        uint64_t tx_packets = 0;
        uint64_t loopback_packets = 0;
        uint64_t rx_packets = 0;
        uint64_t rx_bad_icrc = 0;
        uint64_t rx_malformed = 0; // bad Ethernet/IP/UDP/BTH header or length
        uint64_t rx_bad_opcode = 0;
        uint64_t rx_no_qp = 0;
        uint64_t rx_duplicates = 0;   // responder: requests with an old PSN
        uint64_t stale_responses = 0; // requester: outside [una - 1, next)
        uint64_t rx_out_of_seq = 0;
        uint64_t retransmits = 0; // go-back-N restarts
        uint64_t retrans_pkts = 0;
        uint64_t timeouts = 0;
        uint64_t seq_naks_sent = 0;
        uint64_t seq_naks_rcvd = 0;
        uint64_t rnr_naks_sent = 0;
        uint64_t rnr_naks_rcvd = 0;
        uint64_t error_naks_sent = 0;
        uint64_t error_naks_rcvd = 0;
        uint64_t retry_exceeded = 0;
        uint64_t rnr_retry_exceeded = 0;
        uint64_t ud_rx_no_wqe = 0;   // UD: dropped, no receive WQE
        uint64_t ud_rx_bad_qkey = 0; // UD: dropped, Q_Key mismatch
    };
    [[nodiscard]] const RoceCounters &roce_counters() const { return roce_; }

  private:
    RoceCounters roce_;

    // A frame was refused with RX_RETRY (RoCE backlog full, or offered from
    // inside a callback) and waits in the host.
    bool rx_waiting_ = false;
};

// The device behind a C handle, for tests and tracing (c_api.cpp).
const Device &device_of(const ohca_engine *e);

} // namespace ohca
