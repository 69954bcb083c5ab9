// SPDX-License-Identifier: GPL-2.0-or-later
// The InfiniBand side of the device's port (programming manual section 21):
// what the port's subnet management agent holds (fabric/ib's SmaState:
// GUIDs, LID and LMC, SM LID and SL, logical and physical state, P_Key
// table, SL-to-VL table, VL arbitration, the PMA's counters) and the rules
// a packet meets on the way in (DLID, P_Key, VL15). The device owns one
// when its link layer is InfiniBand; MAD_IFC reaches fabric/ib's Sma
// through it.
#pragma once

#include "device/ib_traps.hpp"
#include "ib/mad.hpp"
#include "ib/packet.hpp"
#include "ib/sma.hpp"

#include <ohca/ohca_cmd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

namespace ohca {

namespace state {
class Reader;
class Writer;
} // namespace state

// The device's own counters of an IB port (the PMA's are in the SMA
// state, fed through the count_* calls).
struct IbPortCounters {
    uint64_t bad_dlid = 0; // not this port's LID range or a group of it
    uint64_t bad_vcrc = 0;
    uint64_t pkey_violations = 0;
    // A group member whose P_Key is not the packet's (the port's table has
    // it): that member does not get the packet.
    uint64_t mcast_pkey_skipped = 0;
    uint64_t vl15_dropped = 0;
    uint64_t credit_overrun = 0; // beyond the credit we advertised
    uint64_t not_ready = 0;      // data while not ARMED or ACTIVE
    uint64_t rcv_errors = 0;
    uint64_t xmit_discards = 0;
    uint64_t xmit_wait = 0;
    IbTrapCounters traps; // the SMA's (ib_traps.hpp)
};

// A received packet the port refused for its P_Key (trap 257's details).
struct IbPkeyViolation {
    uint16_t slid = 0;
    uint16_t dlid = 0;
    uint16_t pkey = 0;
    uint8_t sl = 0;
    uint32_t src_qp = 0; // 0 without a DETH
    uint32_t dest_qp = 0;
    bool grh = false;
    std::array<uint8_t, 16> sgid{};
    std::array<uint8_t, 16> dgid{};
};

class IbPort {
  public:
    static constexpr size_t kPkeyTableLen = 16;
    static constexpr uint16_t kPermissiveLid = ib::kPermissiveLid;
    static constexpr uint8_t kVl15 = ib::kVl15;
    static constexpr uint8_t kMaxMtu = 5; // IBTA MTU enum: 4096
    static constexpr uint8_t kVlCap = 4;  // VL0..VL7

    IbPort(uint64_t node_guid, uint64_t port_guid);

    // Power-on state (function reset): no LID, default P_Key only, the
    // logical state from the link.
    void reset(bool link_up);
    // The link came up or went down: DOWN <-> INIT. Returns what changed
    // (enum ohca_port_change).
    uint32_t set_link(bool up);
    // One MAD to the SMA/PMA (ohca_mad_ifc_result); 'changed' gets what a
    // Set changed on the port (enum ohca_port_change). 'slid': the LID it
    // came from (0: not known), for trap 256 when it fails the M_Key.
    uint32_t process_mad(const ib::Mad &in, ib::Mad &out, uint32_t &changed, uint16_t slid = 0,
                         ib::Sma::MKey mkey = ib::Sma::MKey::Check);
    // SET_PORT_CAP: the host's CapabilityMask bits (OHCA_PORT_CAP_HOST_MASK
    // only). True if a trap 144 was raised (the mask changed on an ACTIVE
    // port that knows its SM).
    bool set_host_caps(uint32_t caps);
    // The pending trap's frame, if one is due at 'now_ns' (traps go to the
    // SM's LID on VL15 from QP0; ib_traps.hpp bounds them). A port that can
    // no longer reach its SM drops the pending trap.
    bool trap_due(uint64_t now_ns, std::span<uint8_t, ib::kUdMadFrameBytes> frame);
    // Whether the master SM is on this port (its LID one of ours): its
    // traps are looped back to the host's QP0, not sent to the wire.
    [[nodiscard]] bool sm_here() const;
    [[nodiscard]] uint64_t trap_deadline() const { return traps_.deadline(); }
    [[nodiscard]] bool trap_pending() const { return traps_.pending(); }

    [[nodiscard]] uint8_t state() const { return info().port_state; }
    [[nodiscard]] bool link_up() const { return info().phys_state == ib::phys_state::LinkUp; }
    // Data packets (not VL15): only ACTIVE sends, ARMED takes in (IBTA 7.2).
    [[nodiscard]] bool can_send_data() const { return state() == OHCA_PORT_ACTIVE; }
    [[nodiscard]] bool can_receive_data() const {
        return state() == OHCA_PORT_ACTIVE || state() == OHCA_PORT_ARMED;
    }
    [[nodiscard]] uint16_t lid() const { return info().lid; }
    [[nodiscard]] uint8_t lmc() const { return info().lmc; }
    [[nodiscard]] uint8_t active_mtu() const;
    [[nodiscard]] uint16_t pkey_at(size_t index) const {
        return index < port().pkeys.size() ? port().pkeys[index] : 0;
    }
    // Whether a packet's P_Key matches an entry (IBTA 10.9.3: equal base,
    // and not both limited members).
    [[nodiscard]] bool pkey_matches(uint16_t pkey) const;
    [[nodiscard]] static bool pkeys_match(uint16_t a, uint16_t b) {
        return (a & 0x7fff) != 0 && (a & 0x7fff) == (b & 0x7fff) && ((a | b) & 0x8000) != 0;
    }
    // A data SL's VL (SLtoVLMappingTable); an unmapped one is VL15.
    [[nodiscard]] uint8_t vl_of(uint8_t sl) const;
    // The data VLs in operation (OperationalVLs).
    [[nodiscard]] uint8_t data_vls() const;
    // The port's SMA attributes (VL arbitration reads its tables).
    [[nodiscard]] const ib::SmaPortState &sma_port() const { return port(); }

    // Whether 'dlid' is one of this port's (LID | path bits); 'path_bits'
    // gets the low LMC bits.
    [[nodiscard]] bool unicast_dlid(uint16_t dlid, uint8_t &path_bits) const;
    [[nodiscard]] static bool is_mcast_lid(uint16_t lid) { return ib::is_multicast_lid(lid); }
    // The source LID of a packet sent with 'path_bits'.
    [[nodiscard]] uint16_t slid(uint8_t path_bits) const {
        const auto mask = static_cast<uint16_t>((1u << lmc()) - 1);
        return static_cast<uint16_t>((lid() & ~mask) | (path_bits & mask));
    }
    // The port's one GID (index 0): the subnet prefix and the port GUID.
    [[nodiscard]] std::array<uint8_t, 16> gid() const;

    // Counting, into the PMA's counters and the device's own.
    void count_xmit(size_t frame_len, bool mcast);
    void count_rcv(size_t frame_len, bool mcast);
    void count_rcv_error();
    void count_vl15_dropped();
    void count_pkey_violation();
    // A P_Key violation: counted, and a trap 257 raised if none is
    // pending. True if it was.
    bool pkey_violation(const IbPkeyViolation &v);
    void count_xmit_discard();
    void count_xmit_wait();
    void count_bad_dlid() { ++own_.bad_dlid; }
    void count_credit_overrun() { ++own_.credit_overrun; }
    void count_not_ready() { ++own_.not_ready; }
    void count_mcast_pkey_skipped() { ++own_.mcast_pkey_skipped; }
    void count_bad_vcrc() { ++own_.bad_vcrc; }
    [[nodiscard]] const IbPortCounters &counters() const { return own_; }

    // QUERY_PORT's IB part (link_layer onwards) and its state.
    void fill_query(ohca_query_port_out &out) const;

    // The port's attributes and counters in a saved engine
    // (device/snapshot.cpp). load() starts from power-on with the saved
    // link, and refuses what the SM could not have set: an attribute
    // fixed by the board, or a value out of its range.
    void save(state::Writer &w) const;
    void load(state::Reader &r, bool link_up, uint64_t now_ns);

  private:
    [[nodiscard]] static bool for_agents(const ib::MadHeader &h);
    [[nodiscard]] ib::SmaPortState &port() { return sma_.ports[1]; }
    [[nodiscard]] const ib::SmaPortState &port() const { return sma_.ports[1]; }
    [[nodiscard]] const ib::PortInfo &info() const { return port().info; }
    // Whether a trap can reach the SM: ACTIVE, a LID and an SM (on this
    // port too: the trap is looped back to its QP0).
    [[nodiscard]] bool can_trap() const;
    bool raise_trap(uint16_t number, uint8_t type, std::span<const uint8_t> details);
    // Trap 256 (Bad M_Key) for an SMP the M_Key check refused.
    bool m_key_violation(const ib::Mad &in, uint16_t slid);

    ib::SmaDefaults defaults_;
    ib::SmaState sma_;
    IbPortCounters own_;
    IbTraps traps_;
    uint32_t trap_psn_ = 0;
};

// Byte offset in the address vector (read as struct ohca_av_ib) of its
// first invalid field, if any: a DLID (not 0), SL, path bits, flags, with
// a GRH the source GID index (0, the port's GID) and flow label. For
// MODIFY_QP and UD WQEs on an IB port, as av_bad_field on Ethernet.
std::optional<size_t> av_ib_bad_field(const ohca_av &av);
// The same vector read as struct ohca_av_ib.
ohca_av_ib av_ib_of(const ohca_av &av);

} // namespace ohca
