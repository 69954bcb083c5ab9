// SPDX-License-Identifier: GPL-2.0-or-later
// The services a transport (RC, UC, UD, XRC, raw Ethernet) gets from the
// device: guest memory through keys, the wire, completions and events, and
// scheduling. A transport keeps its per-QP state in Qp and reaches
// everything else through TransportServices only.
#pragma once

#include "device/host.hpp"
#include "device/limits.hpp"
#include "link/roce_packet.hpp"
#include "objects/db_record.hpp"
#include "objects/event_sink.hpp"
#include "objects/rdma_objects.hpp"
#include "objects/scheduler.hpp"
#include "objects/srq.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>

namespace ohca {

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
    uint64_t rx_dup_dropped = 0;  // ... of which READ/atomic ones not answered
    uint64_t stale_responses = 0; // requester: outside [una - 1, next), or a NAK below una
    uint64_t rx_out_of_seq = 0;
    uint64_t retransmits = 0; // go-back-N restarts
    uint64_t retrans_pkts = 0;
    uint64_t timeouts = 0;
    uint64_t spurious_timeouts = 0; // ... of which undone (requester.cpp, F-RTO)
    // Tail-loss probes (rc_retransmit.cpp): ACK timer expiries answered by
    // sending the newest packet again, not counted in 'timeouts' (the
    // packets are in retrans_pkts).
    uint64_t tail_probes = 0;
    // Why a requester waited (rc_retransmit.cpp; docs/wire.md, "Waits of a
    // whole local ACK timeout"): of 'timeouts', those at the QP's full local
    // ACK timeout (the ones retry_cnt counts), those of a QP with no round
    // trip measured yet (its RTO is DeviceLimits::initial_rto_ns), those after a
    // tail-loss probe (the probe went unanswered too), those with a READ or
    // atomic oldest (its request or responses lost). Not in 'timeouts':
    // credit waits that expired (no credit update came; a QP with nothing
    // outstanding waited for it) and messages sent past the credit limit
    // once such waits reached the local ACK timeout.
    uint64_t timeouts_full = 0;
    uint64_t timeouts_no_rtt = 0;
    uint64_t timeouts_after_probe = 0;
    uint64_t timeouts_read = 0;
    // Of 'timeouts' neither after a probe nor at the full local ACK
    // timeout, why no tail-loss probe went (RcRequester::NoProbe, the
    // first that applies): a timeout before it undecided (F-RTO), a NAK's
    // go-back under way, a go-back still resending, a READ or atomic newest
    // (or a failed WQE). A timeout in neither of those two counts in
    // exactly one of these four.
    uint64_t timeouts_frto = 0;
    uint64_t timeouts_recovery = 0;
    uint64_t timeouts_goback = 0;
    uint64_t timeouts_read_newest = 0;
    uint64_t credit_timeouts = 0;
    uint64_t credit_probes = 0;
    uint64_t seq_naks_sent = 0;
    uint64_t seq_naks_rcvd = 0;
    uint64_t rnr_naks_sent = 0;
    uint64_t rnr_naks_rcvd = 0;
    uint64_t error_naks_sent = 0;
    uint64_t error_naks_rcvd = 0;
    uint64_t retry_exceeded = 0;
    uint64_t rnr_retry_exceeded = 0;
    uint64_t ud_rx_no_wqe = 0;      // UD: dropped, no receive WQE
    uint64_t ud_rx_bad_qkey = 0;    // UD: dropped, Q_Key mismatch
    uint64_t mcast_rx_packets = 0;  // UD to a multicast group with QPs here
    uint64_t mcast_rx_no_group = 0; // to a group no QP here is in (in rx_no_qp)
    uint64_t uc_msgs_dropped = 0;   // UC: incomplete, no receive WQE, or refused
    uint64_t xrc_bad_srq = 0;       // XRC: request naming no XRC SRQ of the domain
};

// Outcome of an lkey/rkey check.
struct KeyResult {
    uint8_t verr = OHCA_VERR_NONE;
    const Mr *mr = nullptr;
};

// Outcome of a memory-management WQE (REG_MR, LOCAL_INV).
struct LocalOpResult {
    uint8_t status = OHCA_CQE_SUCCESS;
    uint8_t verr = OHCA_VERR_NONE;
};

// The QP's path MTU in bytes.
inline uint32_t mtu_bytes(const Qp &qp) {
    const unsigned int m = std::clamp<unsigned int>(qp.attrs.path_mtu, 1, 5);
    return 128u << m;
}

// The QP's local ACK timeout: IBTA's 4.096 us x 2^timeout, at least
// DeviceLimits::min_ack_timeout_ns; 0 (timeout 0) for none. It bounds the
// retransmission timeout measured from the round trip (requester.cpp).
inline uint64_t local_ack_timeout_ns(const Qp &qp) {
    if (qp.attrs.timeout == 0) {
        return 0;
    }
    const unsigned int t = std::min<unsigned int>(qp.attrs.timeout, 31);
    return std::max(uint64_t{4096} << t, DeviceLimits::min_ack_timeout_ns);
}

// The congestion window a connection starts with (DeviceLimits).
inline uint32_t initial_window(const Qp &qp) {
    return std::clamp(DeviceLimits::initial_window_bytes / mtu_bytes(qp), DeviceLimits::min_window,
                      DeviceLimits::initial_window);
}

// A reference to a callable, for callbacks that must not allocate.
template <class Sig> class FnRef;
template <class R, class... A> class FnRef<R(A...)> {
  public:
    template <class F>
    requires(!std::is_same_v<std::decay_t<F>, FnRef>)
        // Passed as an argument (implicit); the requires clause keeps copies
        // and moves of an FnRef off this constructor.
        // NOLINTNEXTLINE(google-explicit-constructor,bugprone-forwarding-reference-overload)
        FnRef(F &&f)
        : obj_(const_cast<void *>(static_cast<const void *>(&f))), call_([](void *o, A... a) -> R {
              return (*static_cast<std::remove_reference_t<F> *>(o))(std::forward<A>(a)...);
          }) {}
    R operator()(A... a) const { return call_(obj_, std::forward<A>(a)...); }

  private:
    void *obj_;
    R (*call_)(void *, A...);
};

// Writes a packet's payload (exactly out.size() bytes) straight into the
// frame or loopback buffer; false if it cannot (the packet is not sent).
using PayloadFill = FnRef<bool(std::span<uint8_t> out)>;

enum class EmitResult {
    Sent,       // on the wire or looped back (or lost with the link down)
    NoPath,     // the QP's source GID is gone: the packet is lost
    FillFailed, // the payload could not be read: nothing was sent
};

// Whether a QP's next packet may be made now (WireServices::tx_room).
enum class TxRoom : uint8_t {
    None, // not now: the QP waits (made ready again when it may)
    Room,
    // Room, but the packets after this one are about to wait at this port
    // for the link's credit (InfiniBand: less than two largest packets of
    // the peer's credit left on the QP's VL, or packets held there
    // already). A request sent then asks for its ACK, so that the ACK
    // timer never runs while the rest of its message waits here: it times
    // the fabric, not this port's queue.
    CreditShort,
};

// What a transport needs from the rest of the device, in four groups,
// each implemented by the part that owns it: guest memory through keys
// (MemoryServices), completions, events and receive queues
// (CompletionServices), the wire (WireServices: the device's port,
// device/wire_port.hpp) and the run loop (QpScheduler: device/run_loop.hpp).
// TransportServices binds the four for the transports; they reach nothing
// else, so they can be read, replaced and tested without the rest of the
// device.
class MemoryServices {
  public:
    MemoryServices() = default;
    MemoryServices(const MemoryServices &) = delete;
    MemoryServices &operator=(const MemoryServices &) = delete;

    // Data goes through a key checked for [va, va + len) with 'access'
    // rights in PD 'pdn' and then the MR's pages.
    [[nodiscard]] virtual KeyResult check_key(uint32_t key, uint64_t va, uint64_t len,
                                              uint32_t access, uint32_t pdn) const = 0;
    // The same for an rkey a remote request names at QP 'qp': an MR's key,
    // or a memory window's (checked against the window, then its MR).
    [[nodiscard]] virtual KeyResult check_rkey(const Qp &qp, uint32_t key, uint64_t va,
                                               uint64_t len, uint32_t access) const = 0;
    virtual bool mr_read(const Mr &mr, uint64_t va, void *buf, size_t len) const = 0;
    virtual bool mr_write(const Mr &mr, uint64_t va, const void *buf, size_t len) const = 0;
    // On-demand paging (odp.cpp): whether [va, va + len) of the MR has
    // translations ('write': writable ones). Pending posts a page fault
    // (once per range) and the access must wait: a requester calls
    // odp_wait(), a responder answers RNR NAK. Always Resident for an MR
    // with a page list.
    virtual OdpState odp_touch(const Mr &mr, uint64_t va, uint64_t len, bool write) = 0;
    // Whether any MR of the device may be an ODP one (false: every access
    // is Resident, and the SGEs' keys need no second look for it).
    [[nodiscard]] virtual bool has_odp_mrs() const = 0;
    virtual void odp_wait(Qp &qp) = 0;
    // Memory management (fast_reg.cpp, mw.cpp): a REG_MR, LOCAL_INV or
    // BIND_MW WQE executed when fetched; the invalidation a SEND with
    // invalidate asks for ('remote').
    virtual LocalOpResult execute_local_op(const Qp &qp, const ohca_send_wqe &w, SendWr &wr) = 0;
    virtual uint8_t invalidate_key(uint32_t key, const Qp &qp, bool remote) = 0;

  protected:
    ~MemoryServices() = default;
};

class CompletionServices : public EventSink {
  public:
    CompletionServices() = default;
    CompletionServices(const CompletionServices &) = delete;
    CompletionServices &operator=(const CompletionServices &) = delete;

    virtual void complete_send(Qp &qp, const SendWr &wr, uint8_t status, uint8_t verr) = 0;
    // 'invalidated': the rkey a SEND with invalidate freed.
    virtual void complete_recv(Qp &qp, uint64_t wr_id, uint8_t opcode, uint32_t byte_len,
                               std::optional<uint32_t> imm, uint8_t status, uint8_t verr,
                               bool solicited,
                               std::optional<uint32_t> invalidated = std::nullopt) = 0;
    virtual void qp_to_error(Qp &qp) = 0;
    // The next receive WQE of a QP on an SRQ (qp.srqn), into the QP's
    // recv_* fields (srq.cpp).
    virtual SrqTake take_srq_wqe(Qp &qp) = 0;
    // An SRQ by number (nullptr: none), for XRC's check of a request's
    // XRCETH.
    [[nodiscard]] virtual const Srq *srq(uint32_t srqn) = 0;
    // The doorbell records of RQs (their producer index read by DMA).
    virtual DbRecords &records() = 0;
    // A CQE the transport built whole (UD's receive: GRH flags, source QP).
    virtual bool write_cqe(uint32_t cqn, const ohca_cqe &cqe, bool solicited) = 0;
    // In ERR: outstanding and newly posted WQEs complete flushed, one unit
    // of 'budget' each.
    virtual void flush(Qp &qp, unsigned int &budget) = 0;

  protected:
    ~CompletionServices() = default;
};

class WireServices {
  public:
    WireServices(const WireServices &) = delete;
    WireServices &operator=(const WireServices &) = delete;

    // Work queue rings are read through the Host (DMA).
    [[nodiscard]] virtual const Host &host() const = 0;
    // One packet of the QP to its peer (looped back inside the device when
    // the peer's GID is ours), with a payload of payload_len bytes written
    // by 'fill' (a gather from guest memory) straight into the frame;
    // tx_room() is None while the loopback backlog has no room for what
    // this QP would generate (or the pacer, a pause or the link's credit
    // holds it); one call per packet says the link's credit too (the
    // path built once).
    virtual EmitResult emit_fill(const Qp &qp, const PacketFields &fields, size_t payload_len,
                                 PayloadFill fill) = 0;
    [[nodiscard]] virtual TxRoom tx_room(const Qp &qp) const = 0;
    // Whether the QP's packets wait for the peer's pause (PFC) now: an
    // ACK then waits in the QP's response queue (tx_room says it too).
    [[nodiscard]] virtual bool tx_paused(const Qp &qp) const = 0;
    // Whether the QP's packets leave on a lossless priority (the port
    // honours PFC for it, or 802.3x pause) or a lossless link (InfiniBand's
    // credits): congestion delays them, never drops them.
    [[nodiscard]] virtual bool lossless(const Qp &qp) const = 0;
    // A packet on a path of the transport's own (UD: the WQE's address
    // vector), framed like emit's.
    virtual void emit_path(const PacketPath &path, const PacketFields &fields,
                           std::span<const uint8_t> payload) = 0;
    // The path of an address vector; false if the vector is invalid
    // (av_bad_field). The UDP source port is left to the caller.
    // 'qp': the sending QP (an InfiniBand port: QP0's packets take VL15).
    virtual bool av_path(const Qp &qp, const ohca_av &av, PacketPath &path) const = 0;
    // Whether a packet on 'path' may be generated now (tx_room's rule).
    [[nodiscard]] virtual bool tx_room_to(const PacketPath &path) const = 0;
    // The P_Key a UD QP's packet carries ('wqe_index': the GSI QP's per
    // WQE P_Key index); the default P_Key on Ethernet.
    [[nodiscard]] virtual uint16_t pkey_of(const Qp &qp, uint16_t wqe_index) const = 0;
    // The port's Ethernet MTU.
    [[nodiscard]] virtual uint32_t port_mtu() const = 0;
    // A received packet (or frame) the transport dropped: the device's
    // drop counter (the reason is the transport's own counter).
    virtual void count_rx_dropped() = 0;
    // A QP by number (nullptr: none), for frames steered to a raw QP.
    virtual Qp *qp_by_number(uint32_t qpn) = 0;
    virtual RoceCounters &counters() = 0;
    // DCQCN's pacer (transports/dcqcn.hpp): whether the QP may send a
    // packet now (if not, it is made ready again when it may); a packet
    // of payload_len bytes went.
    virtual bool cc_may_send(Qp &qp) = 0;
    virtual void cc_sent(Qp &qp, size_t payload_len) = 0;
    // No pause was set on the port (PFC): nothing holds a packet back, and
    // tx_paused() is false for every QP. A test without a call, made for
    // every ACK.
    [[nodiscard]] bool no_pause() const { return *pauses_ == 0; }

  protected:
    WireServices() = default;
    ~WireServices() = default;
    // Where the port records its priorities with a pause set (Pfc's own
    // record, read in place so that it cannot go stale).
    void watch_pauses(const uint8_t &pauses) { pauses_ = &pauses; }

  private:
    static constexpr uint8_t kNoPauses = 0;
    const uint8_t *pauses_ = &kNoPauses;
};

class TransportServices {
  public:
    TransportServices(MemoryServices &mem, CompletionServices &comp, WireServices &wire,
                      QpScheduler &sched)
        : mem_(mem), comp_(comp), wire_(wire), sched_(sched) {}
    TransportServices(const TransportServices &) = delete;
    TransportServices &operator=(const TransportServices &) = delete;

    [[nodiscard]] const Host &host() const { return wire_.host(); }
    [[nodiscard]] KeyResult check_key(uint32_t key, uint64_t va, uint64_t len, uint32_t access,
                                      uint32_t pdn) const {
        return mem_.check_key(key, va, len, access, pdn);
    }
    [[nodiscard]] KeyResult check_rkey(const Qp &qp, uint32_t key, uint64_t va, uint64_t len,
                                       uint32_t access) const {
        return mem_.check_rkey(qp, key, va, len, access);
    }
    bool mr_read(const Mr &mr, uint64_t va, void *buf, size_t len) const {
        return mem_.mr_read(mr, va, buf, len);
    }
    bool mr_write(const Mr &mr, uint64_t va, const void *buf, size_t len) const {
        return mem_.mr_write(mr, va, buf, len);
    }
    OdpState odp_touch(const Mr &mr, uint64_t va, uint64_t len, bool write) {
        return mem_.odp_touch(mr, va, len, write);
    }
    [[nodiscard]] bool has_odp_mrs() const { return mem_.has_odp_mrs(); }
    void odp_wait(Qp &qp) { mem_.odp_wait(qp); }
    // odp_touch for bytes [offset, offset + len) of SGEs whose keys were
    // checked (an SGE whose key no longer checks is left to the access).
    OdpState odp_touch_sges(const Qp &qp, const std::vector<Sge> &sges, uint64_t offset,
                            uint64_t len, bool write);
    // Bytes [offset, offset + out.size()) of a send WQE's data (its inline
    // data or its SGEs, each through its lkey) into out; false on a key or
    // DMA error. One gather for every transport that sends from a WQE.
    [[nodiscard]] bool gather(const Qp &qp, const SendWr &wr, uint32_t offset,
                              std::span<uint8_t> out) const;
    // A datagram QP (UD, GSI, raw Ethernet) outside RTS, where it sends
    // nothing: ERR flushes; in SQE everything posted completes with
    // WR_FLUSH_ERR until MODIFY_QP moves it back to RTS (receives go on);
    // in SQD the drain ends at once (nothing is ever in flight: every WQE
    // taken has completed). True when the visit has nothing left to do.
    bool datagram_stopped(Qp &qp, unsigned int &budget);
    LocalOpResult execute_local_op(const Qp &qp, const ohca_send_wqe &w, SendWr &wr) {
        return mem_.execute_local_op(qp, w, wr);
    }
    uint8_t invalidate_key(uint32_t key, const Qp &qp, bool remote) {
        return mem_.invalidate_key(key, qp, remote);
    }

    EmitResult emit_fill(const Qp &qp, const PacketFields &fields, size_t payload_len,
                         PayloadFill fill) {
        return wire_.emit_fill(qp, fields, payload_len, fill);
    }
    [[nodiscard]] bool tx_room(const Qp &qp) const { return wire_.tx_room(qp) != TxRoom::None; }
    // tx_room with what it says of the link's credit (RC's requests).
    [[nodiscard]] TxRoom tx_room_credit(const Qp &qp) const { return wire_.tx_room(qp); }
    [[nodiscard]] bool tx_paused(const Qp &qp) const {
        return !wire_.no_pause() && wire_.tx_paused(qp);
    }
    [[nodiscard]] bool lossless(const Qp &qp) const { return wire_.lossless(qp); }
    void emit_path(const PacketPath &path, const PacketFields &fields,
                   std::span<const uint8_t> payload) {
        wire_.emit_path(path, fields, payload);
    }
    bool av_path(const Qp &qp, const ohca_av &av, PacketPath &path) const {
        return wire_.av_path(qp, av, path);
    }
    [[nodiscard]] bool tx_room_to(const PacketPath &path) const { return wire_.tx_room_to(path); }
    [[nodiscard]] uint16_t pkey_of(const Qp &qp, uint16_t wqe_index) const {
        return wire_.pkey_of(qp, wqe_index);
    }
    [[nodiscard]] uint32_t port_mtu() const { return wire_.port_mtu(); }
    void count_rx_dropped() { wire_.count_rx_dropped(); }
    Qp *qp_by_number(uint32_t qpn) { return wire_.qp_by_number(qpn); }
    RoceCounters &counters() { return wire_.counters(); }
    // A QP its reaction point has not limited (no CNP came, or it is back
    // at line rate) sends without asking the port: every packet does this.
    bool cc_may_send(Qp &qp) { return !qp.cc.rp.limited || wire_.cc_may_send(qp); }
    void cc_sent(Qp &qp, size_t payload_len) {
        if (qp.cc.rp.limited) {
            wire_.cc_sent(qp, payload_len);
        }
    }
    void mark_ready(Qp &qp) { sched_.mark_ready(qp); }
    void set_deadline(Qp &qp, uint64_t deadline_ns) { sched_.set_deadline(qp, deadline_ns); }

    void complete_send(Qp &qp, const SendWr &wr, uint8_t status, uint8_t verr) {
        comp_.complete_send(qp, wr, status, verr);
    }
    void complete_recv(Qp &qp, uint64_t wr_id, uint8_t opcode, uint32_t byte_len,
                       std::optional<uint32_t> imm, uint8_t status, uint8_t verr, bool solicited,
                       std::optional<uint32_t> invalidated = std::nullopt) {
        comp_.complete_recv(qp, wr_id, opcode, byte_len, imm, status, verr, solicited, invalidated);
    }
    void post_event(uint8_t type, uint16_t code, uint32_t p0, uint32_t p1, uint32_t p2) {
        comp_.post_event(type, code, p0, p1, p2);
    }
    void post_peer_event(uint16_t code, uint32_t qpn) { comp_.post_peer_event(code, qpn); }
    void qp_to_error(Qp &qp) { comp_.qp_to_error(qp); }
    SrqTake take_srq_wqe(Qp &qp) { return comp_.take_srq_wqe(qp); }
    [[nodiscard]] const Srq *srq(uint32_t srqn) { return comp_.srq(srqn); }
    DbRecords &records() { return comp_.records(); }
    bool write_cqe(uint32_t cqn, const ohca_cqe &cqe, bool solicited) {
        return comp_.write_cqe(cqn, cqe, solicited);
    }
    void flush(Qp &qp, unsigned int &budget) { comp_.flush(qp, budget); }

  private:
    MemoryServices &mem_;
    CompletionServices &comp_;
    WireServices &wire_;
    QpScheduler &sched_;
};

// One transport per QP type: the device holds a table of them indexed by
// the type, so the run loop, the receive path and the timers call through
// here and never ask what type a QP is. One virtual call per QP visit,
// packet or expiry; what happens inside is the transport's own.
class Transport {
  public:
    Transport() = default;
    Transport(const Transport &) = delete;
    Transport &operator=(const Transport &) = delete;

    // The QP's turn in the run loop: its send queue (and queued responses),
    // or the flush in ERR; 'quantum' counts down per packet or WQE and is
    // left at 0 when there may be more.
    virtual void visit(Qp &qp, unsigned int &quantum) = 0;
    // A packet for this QP; the device checked its destination GID and
    // P_Key, the rest (source, opcode, sequence) is the transport's.
    virtual void rx(Qp &qp, const ParsedPacket &pkt) = 0;
    // The QP's deadline (set_deadline) has passed.
    virtual void timer_expired(Qp &qp) = 0;
    // The page fault the QP waited for was resolved (ODP_MAP); the device
    // then marks it ready.
    virtual void odp_resumed(Qp &qp) = 0;
    // The device is reset: whatever state the transport keeps beside Qp.
    virtual void reset() {}

  protected:
    ~Transport() = default;
};

// What RC, UC and XRC share when a packet arrives: the source must be the
// connection's peer and the opcode of the QP's own family; otherwise the
// packet is dropped and counted (false).
bool connected_accepts(TransportServices &svc, const Qp &qp, const ParsedPacket &pkt);

// The timer of a QP with no retransmission (UC, UD, raw): only an ODP
// wait's retry (the fault may have been lost) sets it.
void odp_retry_expired(TransportServices &svc, Qp &qp);
// ... and the fault resolved: that retry is no longer needed.
void odp_retry_resumed(TransportServices &svc, Qp &qp);

// The transport of each QP type (ohca_qp_type), for the run loop, the
// receive path and the timers.
static_assert(OHCA_QPT_RC == 0 && OHCA_QPT_UD == 1 && OHCA_QPT_GSI == 2 && OHCA_QPT_UC == 3 &&
              OHCA_QPT_XRC_INI == 4 && OHCA_QPT_XRC_TGT == 5 && OHCA_QPT_RAW_ETH == 6 &&
              OHCA_QPT_SMI == 7);
using TransportTable = std::array<Transport *, OHCA_QPT_SMI + 1>;
[[nodiscard]] inline Transport &transport_of(const TransportTable &t, const Qp &qp) {
    return *t[qp.type];
}

} // namespace ohca
