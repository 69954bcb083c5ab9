// SPDX-License-Identifier: GPL-2.0-or-later
// Management datagrams (IBTA Vol 1 ch. 13-16): the 256-byte MAD, its
// common header, subnet management packets (SMPs, LID-routed and directed
// route) and the layouts of the attributes an SMA and a PMA answer.
// Every structure reads from and writes to a whole 256-byte MAD (or the
// 64-byte SMP data area); bounds are the types'.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace ohca::ib {

inline constexpr size_t kMadBytes = 256;
inline constexpr size_t kMadHeaderBytes = 24;
inline constexpr size_t kSmpDataOffset = 64;
inline constexpr size_t kSmpDataBytes = 64;
inline constexpr size_t kPmaDataOffset = 64; // 24 header + 40 reserved
inline constexpr size_t kDrPathBytes = 64;
inline constexpr size_t kDrInitialPathOffset = 128;
inline constexpr size_t kDrReturnPathOffset = 192;
inline constexpr uint8_t kMaxDrHops = 63;

using Mad = std::array<uint8_t, kMadBytes>;
using SmpData = std::array<uint8_t, kSmpDataBytes>;

namespace mgmt_class {
inline constexpr uint8_t SubnLidRouted = 0x01;
inline constexpr uint8_t SubnDirectedRoute = 0x81;
inline constexpr uint8_t SubnAdm = 0x03;
inline constexpr uint8_t Perf = 0x04;
} // namespace mgmt_class

namespace method {
inline constexpr uint8_t Get = 0x01;
inline constexpr uint8_t Set = 0x02;
inline constexpr uint8_t Send = 0x03;
inline constexpr uint8_t Trap = 0x05;
inline constexpr uint8_t Report = 0x06;
inline constexpr uint8_t TrapRepress = 0x07;
inline constexpr uint8_t Response = 0x80; // the R bit
inline constexpr uint8_t GetResp = 0x81;
inline constexpr uint8_t ReportResp = 0x86;
} // namespace method

// MAD status (the 15 low bits; bit 15 of a DR SMP's status word is D).
namespace mad_status {
inline constexpr uint16_t Ok = 0;
inline constexpr uint16_t Busy = 0x0001;
inline constexpr uint16_t Redirect = 0x0002;
inline constexpr uint16_t BadVersion = 0x0004; // class or base version
inline constexpr uint16_t MethodUnsupported = 0x0008;
inline constexpr uint16_t MethodAttrUnsupported = 0x000C;
inline constexpr uint16_t InvalidField = 0x001C; // attribute or modifier
} // namespace mad_status

namespace attr {
inline constexpr uint16_t ClassPortInfo = 0x0001;
inline constexpr uint16_t Notice = 0x0002;
inline constexpr uint16_t NodeDescription = 0x0010;
inline constexpr uint16_t NodeInfo = 0x0011;
inline constexpr uint16_t SwitchInfo = 0x0012;
inline constexpr uint16_t GuidInfo = 0x0014;
inline constexpr uint16_t PortInfo = 0x0015;
inline constexpr uint16_t PKeyTable = 0x0016;
inline constexpr uint16_t SlToVlTable = 0x0017;
inline constexpr uint16_t VlArbTable = 0x0018;
inline constexpr uint16_t LinearFdb = 0x0019;
inline constexpr uint16_t RandomFdb = 0x001A;
inline constexpr uint16_t MulticastFdb = 0x001B;
inline constexpr uint16_t SmInfo = 0x0020;
// Performance management class
inline constexpr uint16_t PortCounters = 0x0012;
inline constexpr uint16_t PortCountersExtended = 0x001D;
} // namespace attr

// The common header (bytes 0-23 of every MAD).
struct MadHeader {
    uint8_t base_version = 1;
    uint8_t mgmt_class = 0;
    uint8_t class_version = 1;
    uint8_t method = 0;
    uint16_t status = 0;         // DR SMP: bit 15 is D, see Smp
    uint16_t class_specific = 0; // DR SMP: hop pointer (hi), hop count (lo)
    uint64_t tid = 0;
    uint16_t attr_id = 0;
    uint32_t attr_mod = 0;

    static MadHeader read(const Mad &m);
    void write(Mad &m) const;
};

// A subnet management packet; the directed route fields are meaningful
// when mgmt_class is SubnDirectedRoute (IBTA §14.2.1.2).
struct Smp {
    MadHeader hdr;
    uint64_t m_key = 0;
    // Directed route only:
    bool direction = false; // D: 0 outbound, 1 returning
    uint8_t hop_ptr = 0;
    uint8_t hop_cnt = 0;
    uint16_t dr_slid = 0;
    uint16_t dr_dlid = 0;
    std::array<uint8_t, kDrPathBytes> initial_path{};
    std::array<uint8_t, kDrPathBytes> return_path{};
    SmpData data{};

    [[nodiscard]] bool directed() const { return hdr.mgmt_class == mgmt_class::SubnDirectedRoute; }
    [[nodiscard]] uint16_t status() const { return static_cast<uint16_t>(hdr.status & 0x7FFF); }

    static Smp read(const Mad &m);
    void write(Mad &m) const;
};

// ---- SMP attributes (data area layouts, IBTA §14.2.5) ----

namespace node_type {
inline constexpr uint8_t Ca = 1;
inline constexpr uint8_t Switch = 2;
inline constexpr uint8_t Router = 3;
} // namespace node_type

struct NodeInfo {
    uint8_t base_version = 1;
    uint8_t class_version = 1;
    uint8_t node_type = node_type::Ca;
    uint8_t num_ports = 1;
    uint64_t system_image_guid = 0;
    uint64_t node_guid = 0;
    uint64_t port_guid = 0;
    uint16_t partition_cap = 0;
    uint16_t device_id = 0;
    uint32_t revision = 0;
    uint8_t local_port_num = 0;
    uint32_t vendor_id = 0; // 24 bits

    static NodeInfo read(std::span<const uint8_t, kSmpDataBytes> d);
    void write(std::span<uint8_t, kSmpDataBytes> d) const;
};

namespace port_state {
inline constexpr uint8_t NoChange = 0;
inline constexpr uint8_t Down = 1;
inline constexpr uint8_t Init = 2;
inline constexpr uint8_t Armed = 3;
inline constexpr uint8_t Active = 4;
} // namespace port_state

namespace phys_state {
inline constexpr uint8_t NoChange = 0;
inline constexpr uint8_t Sleep = 1;
inline constexpr uint8_t Polling = 2;
inline constexpr uint8_t Disabled = 3;
inline constexpr uint8_t Training = 4;
inline constexpr uint8_t LinkUp = 5;
inline constexpr uint8_t LinkErrorRecovery = 6;
} // namespace phys_state

// IBTA MTU codes: 1 = 256 ... 5 = 4096.
inline constexpr uint32_t mtu_bytes(uint8_t code) {
    return code >= 1 && code <= 5 ? 128u << code : 0;
}

namespace port_cap {
inline constexpr uint32_t IsSm = 1u << 1;
inline constexpr uint32_t IsNoticeSupported = 1u << 2;
inline constexpr uint32_t IsTrapSupported = 1u << 3;
inline constexpr uint32_t IsSlMappingSupported = 1u << 6;
inline constexpr uint32_t IsSmDisabled = 1u << 10;
inline constexpr uint32_t IsSystemImageGuidSupported = 1u << 11;
inline constexpr uint32_t IsCmSupported = 1u << 16;
inline constexpr uint32_t IsDeviceManagementSupported = 1u << 19;
inline constexpr uint32_t IsVendorClassSupported = 1u << 20;
inline constexpr uint32_t IsClientReregistrationSupported = 1u << 25;
} // namespace port_cap

struct PortInfo {
    uint64_t m_key = 0;
    uint64_t gid_prefix = 0;
    uint16_t lid = 0;
    uint16_t master_sm_lid = 0;
    uint32_t capability_mask = 0;
    uint16_t diag_code = 0;
    uint16_t m_key_lease_period = 0;
    uint8_t local_port_num = 0;
    uint8_t link_width_enabled = 0;
    uint8_t link_width_supported = 0;
    uint8_t link_width_active = 0;
    uint8_t link_speed_supported = 0; // 4 bits
    uint8_t port_state = 0;           // 4 bits
    uint8_t phys_state = 0;           // 4 bits
    uint8_t link_down_default_state = 0;
    uint8_t m_key_protect_bits = 0; // 2 bits
    uint8_t lmc = 0;                // 3 bits
    uint8_t link_speed_active = 0;
    uint8_t link_speed_enabled = 0;
    uint8_t neighbor_mtu = 0; // 4 bits, an MTU code
    uint8_t master_sm_sl = 0;
    uint8_t vl_cap = 0; // 4 bits: 1 = VL0, 2 = VL0-1, 3 = VL0-3, 4 = VL0-7, 5 = VL0-14
    uint8_t init_type = 0;
    uint8_t vl_high_limit = 0;
    uint8_t vl_arb_high_cap = 0;
    uint8_t vl_arb_low_cap = 0;
    uint8_t init_type_reply = 0;
    uint8_t mtu_cap = 0;
    uint8_t vl_stall_count = 0;  // 3 bits
    uint8_t hoq_life = 0;        // 5 bits
    uint8_t operational_vls = 0; // 4 bits, coded as vl_cap
    bool partition_enforcement_inbound = false;
    bool partition_enforcement_outbound = false;
    bool filter_raw_inbound = false;
    bool filter_raw_outbound = false;
    uint16_t m_key_violations = 0;
    uint16_t p_key_violations = 0;
    uint16_t q_key_violations = 0;
    uint8_t guid_cap = 0;
    bool client_reregister = false;
    uint8_t subnet_timeout = 0;   // 5 bits
    uint8_t resp_time_value = 0;  // 5 bits
    uint8_t local_phy_errors = 0; // 4 bits
    uint8_t overrun_errors = 0;   // 4 bits
    uint16_t max_credit_hint = 0;
    uint32_t link_round_trip_latency = 0; // 24 bits
    uint16_t capability_mask2 = 0;

    static PortInfo read(std::span<const uint8_t, kSmpDataBytes> d);
    void write(std::span<uint8_t, kSmpDataBytes> d) const;
};

// Number of data VLs an OperationalVLs / VLCap code stands for.
inline constexpr uint8_t vls_for_code(uint8_t code) {
    switch (code) {
    case 1:
        return 1;
    case 2:
        return 2;
    case 3:
        return 4;
    case 4:
        return 8;
    case 5:
        return 15;
    default:
        return 0;
    }
}

struct SwitchInfo {
    uint16_t linear_fdb_cap = 0;
    uint16_t random_fdb_cap = 0;
    uint16_t multicast_fdb_cap = 0;
    uint16_t linear_fdb_top = 0;
    uint8_t default_port = 0;
    uint8_t default_mcast_primary_port = 0;
    uint8_t default_mcast_not_primary_port = 0;
    uint8_t life_time_value = 0; // 5 bits
    bool port_state_change = false;
    uint8_t optimized_sl2vl = 0; // 2 bits
    uint16_t lids_per_port = 0;
    uint16_t partition_enforcement_cap = 0;
    bool inbound_enforcement_cap = false;
    bool outbound_enforcement_cap = false;
    bool filter_raw_inbound_cap = false;
    bool filter_raw_outbound_cap = false;
    bool enhanced_port0 = false;
    uint16_t multicast_fdb_top = 0;

    static SwitchInfo read(std::span<const uint8_t, kSmpDataBytes> d);
    void write(std::span<uint8_t, kSmpDataBytes> d) const;
};

// Table attributes: entries per block of the 64-byte data area.
inline constexpr size_t kGuidsPerBlock = 8;
inline constexpr size_t kPKeysPerBlock = 32;
inline constexpr size_t kVlArbEntriesPerBlock = 32;
inline constexpr size_t kLftEntriesPerBlock = 64;
inline constexpr size_t kMftEntriesPerBlock = 32; // 16-bit port masks
inline constexpr uint16_t kDefaultPKey = 0xFFFF;
inline constexpr uint16_t kPKeyMembershipBit = 0x8000; // full member
inline constexpr uint8_t kLftNoPort = 0xFF;            // no route for this LID

// Notice (trap) data in an SMP's data area (the IssuerGID does not fit and
// is not sent in SMPs).
struct Notice {
    bool is_generic = true;
    uint8_t type = 0;           // 7 bits
    uint32_t producer_type = 0; // 24 bits (vendor ID if not generic)
    uint16_t trap_number = 0;   // device ID if not generic
    uint16_t issuer_lid = 0;
    bool toggle = false;
    uint16_t count = 0; // 15 bits
    std::array<uint8_t, 54> details{};

    static Notice read(std::span<const uint8_t, kSmpDataBytes> d);
    void write(std::span<uint8_t, kSmpDataBytes> d) const;
};

namespace notice_type {
inline constexpr uint8_t Fatal = 0;
inline constexpr uint8_t Urgent = 1;
inline constexpr uint8_t Security = 2;
inline constexpr uint8_t SubnetManagement = 3;
inline constexpr uint8_t Info = 4;
} // namespace notice_type

namespace trap {
inline constexpr uint16_t LinkStateChange = 128; // switch: a port's state changed
inline constexpr uint16_t LocalLinkIntegrity = 129;
inline constexpr uint16_t CapabilityMaskChange = 144;
inline constexpr uint16_t MKeyViolation = 256;
inline constexpr uint16_t PKeyViolation = 257;
// A switch's external port dropped a packet for its P_Key (partition
// enforcement, IBTA 10.9.4): "Bad P_Key, switch external port".
inline constexpr uint16_t SwitchPKeyViolation = 259;
} // namespace trap

// Trap 259's DataDetails (IBTA vol. 1 14.2.5.1): the dropped packet's
// addresses and P_Key, and where the switch dropped it. DataValid says
// which of the packet's fields were known (a packet without a GRH has no
// GIDs, one without a DETH no source QP).
struct SwitchPKeyViolation {
    enum Valid : uint16_t {
        Lid1 = 1u << 0, // LIDADDR1: the packet's source
        Lid2 = 1u << 1, // LIDADDR2: its destination
        PKey = 1u << 2,
        Sl = 1u << 3,
        Qp1 = 1u << 4, // the source QP (DETH)
        Qp2 = 1u << 5, // the destination QP (BTH)
        Gid1 = 1u << 6,
        Gid2 = 1u << 7,
    };
    static constexpr size_t kBytes = 51; // of the 54 the Notice holds
    uint16_t valid = 0;
    uint16_t lid1 = 0;
    uint16_t lid2 = 0;
    uint16_t pkey = 0;
    uint8_t sl = 0;
    uint32_t qp1 = 0;
    uint32_t qp2 = 0;
    std::array<uint8_t, 16> gid1{};
    std::array<uint8_t, 16> gid2{};
    uint16_t sw_lid = 0;
    uint8_t port = 0; // the external port that dropped it

    void write(std::span<uint8_t, kBytes> d) const;
    static SwitchPKeyViolation read(std::span<const uint8_t, kBytes> d);
};

// ---- Performance management (class 0x04), data at MAD offset 64 ----

struct ClassPortInfo {
    uint8_t base_version = 1;
    uint8_t class_version = 1;
    uint16_t capability_mask = 0;
    uint32_t capability_mask2 = 0; // 27 bits
    uint8_t resp_time_value = 0;   // 5 bits

    void write(std::span<uint8_t> d) const; // d: at least 72 bytes, zeroed
};

namespace pma_cap {
inline constexpr uint16_t AllPortSelect = 1u << 8;
inline constexpr uint16_t ExtendedWidth = 1u << 9;
inline constexpr uint16_t ExtendedWidthNoIetf = 1u << 10;
inline constexpr uint16_t XmitWait = 1u << 12;
} // namespace pma_cap

// Counters saturate at their field's maximum (IBTA §16.1.3.5).
struct PortCounters {
    uint8_t port_select = 0;
    uint16_t counter_select = 0;
    uint16_t symbol_errors = 0;
    uint8_t link_error_recovery = 0;
    uint8_t link_downed = 0;
    uint16_t rcv_errors = 0;
    uint16_t rcv_remote_phys_errors = 0;
    uint16_t rcv_switch_relay_errors = 0;
    uint16_t xmit_discards = 0;
    uint8_t xmit_constraint_errors = 0;
    uint8_t rcv_constraint_errors = 0;
    uint8_t local_link_integrity_errors = 0;     // 4 bits
    uint8_t excessive_buffer_overrun_errors = 0; // 4 bits
    uint16_t vl15_dropped = 0;
    uint32_t xmit_data = 0; // in 4-byte words
    uint32_t rcv_data = 0;
    uint32_t xmit_pkts = 0;
    uint32_t rcv_pkts = 0;
    uint32_t xmit_wait = 0;

    static PortCounters read(std::span<const uint8_t> d); // d: >= 44 bytes
    void write(std::span<uint8_t> d) const;
};

struct PortCountersExtended {
    uint8_t port_select = 0;
    uint16_t counter_select = 0;
    uint64_t xmit_data = 0; // 4-byte words
    uint64_t rcv_data = 0;
    uint64_t xmit_pkts = 0;
    uint64_t rcv_pkts = 0;
    uint64_t unicast_xmit_pkts = 0;
    uint64_t unicast_rcv_pkts = 0;
    uint64_t multicast_xmit_pkts = 0;
    uint64_t multicast_rcv_pkts = 0;

    static PortCountersExtended read(std::span<const uint8_t> d); // >= 72 bytes
    void write(std::span<uint8_t> d) const;
};

// Saturating counter helpers.
template <typename T> constexpr void sat_add(T &c, uint64_t n, uint64_t max) {
    const uint64_t v = static_cast<uint64_t>(c) + n;
    c = static_cast<T>(v > max || v < n ? max : v);
}

// ---- A MAD on the wire: one UD SEND-only packet (LRH, BTH, DETH, MAD,
// ICRC, VCRC), as QP0 and QP1 send them. For the agents that send MADs of
// their own (a switch's, the device's traps).

inline constexpr uint8_t kOpUdSendOnly = 0x64;
inline constexpr size_t kDethBytes = 8;
inline constexpr uint32_t kGsiQKey = 0x80010000;
inline constexpr size_t kUdMadFrameBytes = 8 + 12 + kDethBytes + kMadBytes + 4 + 2;

struct MadRoute {
    uint8_t vl = 0;
    uint8_t sl = 0;
    uint16_t dlid = 0;
    uint16_t slid = 0;
    uint16_t pkey = 0;
    uint32_t dest_qp = 0;
    uint32_t src_qp = 0;
    uint32_t qkey = 0;
    uint32_t psn = 0;
};

// Writes the whole frame, sealed (PktLen, ICRC, VCRC).
void write_ud_mad_frame(std::span<uint8_t, kUdMadFrameBytes> frame, const MadRoute &r,
                        const Mad &mad);

} // namespace ohca::ib
