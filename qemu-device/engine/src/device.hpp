// SPDX-License-Identifier: GPL-2.0-or-later
// The ohca device: all state behind the C API of ohca_engine.h.
//
// Member functions are split by what they own:
//   device.cpp  lifetime, reset, fatal state, link, doorbell pages, process()
//   regs.cpp    the BAR0 register file
//   cmdq.cpp    the command queue and every command
//   eth.cpp     the Ethernet TX/RX rings and receive classification
#pragma once

#include "eth_ring.hpp"
#include "event_queue.hpp"
#include "gid_table.hpp"
#include "host.hpp"
#include "stats.hpp"
#include "uar_table.hpp"

#include <ohca/ohca_cmd.h>
#include <ohca/ohca_queue.h>
#include <ohca/ohca_regs.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

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
    static constexpr uint32_t speed_mbps = 10000;
    static constexpr uint32_t default_mtu = 1500;
};

struct DeviceConfig {
    std::array<uint8_t, 6> mac{};
    uint64_t node_guid = 0;
    uint64_t sys_image_guid = 0;
    bool link_up = true;
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

  private:
    struct Command; // a decoded command entry (cmdq.cpp)
    struct CmdResult {
        uint8_t status = OHCA_STATUS_OK;
        uint32_t syndrome = 0;
    };

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
    [[nodiscard]] bool rx_would_retry() const;

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

    // An Ethernet frame was refused with RX_RETRY and waits in the host.
    bool rx_waiting_ = false;
};

} // namespace ohca
