// SPDX-License-Identifier: GPL-2.0-or-later
// The subnet management agent (SMA) and performance management agent (PMA)
// shared by the ohca device (a CA with one port) and ohca-switch (a switch
// with N ports and management port 0). The owner keeps the node's state in
// an SmaState; Sma answers Get/Set of the attributes in mad.hpp from it and
// reports what a Set changed, so the owner can act (bring a port to
// Active, reprogram its forwarding, raise a client reregister event).
//
// Not here: directed-route hop processing (the switch does it before
// calling process(); for the CA, Linux's ib_mad layer does it), traps'
// sending (make_trap() builds one; the owner sends it), M_Key leases.
//
// Bounded: one MAD touches at most one 64-byte block of one table.
#pragma once

#include "ib/mad.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ohca::ib {

// Ports of a switch, port 0 excluded: 0..63 fit the 64-bit port masks.
inline constexpr uint8_t kMaxSmaPorts = 63;
inline constexpr size_t kVlArbEntries = 64; // per table (low, high)

struct VlArbEntry {
    uint8_t vl = 0;
    uint8_t weight = 0;
};

struct SmaPortState {
    PortInfo info;
    uint64_t guid = 0;               // GUIDInfo index 0 (CA port, switch port 0)
    std::vector<uint16_t> pkeys;     // the P_Key table; its size is fixed at setup
    std::array<uint8_t, 16> sl2vl{}; // CA only: SL -> VL (a switch keeps [in][out])
    std::array<VlArbEntry, kVlArbEntries> vlarb_low{};
    std::array<VlArbEntry, kVlArbEntries> vlarb_high{};
    PortCounters counters;             // saturating
    PortCountersExtended counters_ext; // 64-bit
};

struct SmaState {
    uint8_t node_type = node_type::Ca;
    uint64_t node_guid = 0;
    uint64_t system_image_guid = 0;
    uint16_t device_id = 0;
    uint32_t revision = 0;
    uint32_t vendor_id = 0;
    std::array<uint8_t, 64> description{};
    // Index = port number: a CA uses [1] ([0] is unused), a switch 0..N.
    std::vector<SmaPortState> ports;

    // Switch only.
    SwitchInfo switch_info;
    std::vector<uint8_t> lft;   // linear_fdb_cap entries: LID -> port (kLftNoPort)
    std::vector<uint16_t> mft;  // multicast_fdb_cap x positions: port masks
    std::vector<uint8_t> sl2vl; // (N+1) x (N+1) x 16: [in][out][sl] -> VL

    [[nodiscard]] bool is_switch() const { return node_type == node_type::Switch; }
    [[nodiscard]] uint8_t num_ports() const {
        return static_cast<uint8_t>(is_switch() ? ports.size() - 1 : 1);
    }
    // The port whose M_Key, LID and SM LID stand for the node: a CA's port
    // 1, a switch's port 0.
    [[nodiscard]] uint8_t mgmt_port() const { return is_switch() ? 0 : 1; }
    [[nodiscard]] size_t mft_positions() const { return (num_ports() + 1 + 15) / 16; }
    [[nodiscard]] uint16_t mft_mask(uint16_t mlid, size_t position) const;
    [[nodiscard]] uint8_t sl_to_vl(uint8_t in, uint8_t out, uint8_t sl) const;
};

struct SmaDefaults {
    uint64_t node_guid = 0;
    uint64_t port_guid = 0; // CA: its port's GUID; switch: port 0's (usually = node GUID)
    uint8_t mtu_cap = 5;    // 4096
    uint8_t vl_cap = 3;     // VL0-3
    uint16_t pkey_entries = 64;
    const char *description = "";
};

// Fresh states with the defaults a port has before any SM talks to it:
// LID 0, port state Down, physical state Polling (the owner reports links
// with link_up()), default P_Key 0xFFFF at index 0, SL i -> VL (i mod VLs).
SmaState make_ca_state(const SmaDefaults &d);
SmaState make_switch_state(const SmaDefaults &d, uint8_t ports, uint16_t lft_cap = 0xC000,
                           uint16_t mft_cap = 512);

// A switch port's partition check (IBTA 10.9.4): the P_Key's base (15
// bits, not 0) is one of the table's; membership is the CAs' to check.
bool pkey_in_table(uint16_t pkey, std::span<const uint16_t> table);

// What Sets (and link events) changed since the owner last cleared it.
struct SmaChanges {
    uint64_t port_state = 0;  // bit per port: logical or physical state
    uint64_t port_config = 0; // bit per port: LID, LMC, SM, MTU, VLs, M_Key...
    bool lft = false;
    bool mft = false;
    bool pkeys = false;
    bool sl2vl = false;
    bool vlarb = false;
    bool switch_info = false;
    bool client_reregister = false;
    bool m_key_violation = false; // a MAD failed the M_Key check (owner may trap 256)
};

enum class SmaResult : uint8_t {
    Reply, // `out` holds the response
    Drop,  // no response (not ours, a response, TrapRepress, M_Key failure)
};

class Sma {
  public:
    explicit Sma(SmaState &state) : s_(state) {}

    // A MAD of class SubnLidRouted, SubnDirectedRoute or Perf arrived on
    // port `in_port` (a CA: 1; a switch: the port the SMP entered by, 0 if
    // it came from the switch itself). For a directed route SMP the hop
    // processing is done: this is its destination. MKey::Skip for the
    // node's own host (Linux's IB_MAD_IGNORE_MKEY): its SMPs carry no key.
    enum class MKey : uint8_t { Check, Skip };
    SmaResult process(const Mad &in, uint8_t in_port, Mad &out, MKey mkey = MKey::Check);

    // Link events from the owner: physical link up (LinkUp, port Init) or
    // down (Polling, port Down). Counted in changes().port_state; a
    // switch's external port sets SwitchInfo.PortStateChange.
    void link_up(uint8_t port);
    void link_down(uint8_t port);

    [[nodiscard]] const SmaChanges &changes() const { return changes_; }
    void clear_changes() { changes_ = {}; }

    // A Trap(Notice) SMP from the management port to the master SM (LID-
    // routed, to PortInfo.MasterSMLID): `number` with `details` copied in.
    Smp make_trap(uint16_t number, uint8_t type, std::span<const uint8_t> details, uint64_t tid);

  private:
    uint16_t get_set(const Smp &req, uint8_t in_port, SmpData &data, bool set, bool &hide_mkey);
    uint16_t node_info(uint8_t in_port, SmpData &data) const;
    uint16_t port_info(uint32_t mod, uint8_t in_port, SmpData &data, bool set);
    uint16_t switch_info(SmpData &data, bool set);
    uint16_t guid_info(uint32_t mod, uint8_t in_port, SmpData &data, bool set);
    uint16_t pkey_table(uint32_t mod, uint8_t in_port, SmpData &data, bool set);
    uint16_t sl2vl_table(uint32_t mod, uint8_t in_port, SmpData &data, bool set);
    uint16_t vlarb_table(uint32_t mod, uint8_t in_port, SmpData &data, bool set);
    uint16_t lft_block(uint32_t mod, SmpData &data, bool set);
    uint16_t mft_block(uint32_t mod, SmpData &data, bool set);
    SmaResult perf(const Mad &in, Mad &out);
    bool m_key_ok(const Smp &req, uint8_t in_port, bool &hide_mkey);
    // Port number for a table attribute's modifier; -1 when out of range.
    [[nodiscard]] int port_for(uint32_t port_field, uint8_t in_port) const;

    SmaState &s_;
    SmaChanges changes_;
    uint16_t trap_count_ = 0;
};

} // namespace ohca::ib
