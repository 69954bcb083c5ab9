// SPDX-License-Identifier: GPL-2.0-or-later
// An ohca device with its guest memory, brought up as a driver would, with
// helpers to create RDMA objects, post work requests and poll completions.
// Two nodes can be connected by a fake wire that may drop frames. Part of
// the shared test driver: a failed step is a failed check (check.hpp).
#pragma once

#include "driver.hpp"
#include "fake_host.hpp"

#include <array>
#include <functional>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace ohca {
class LinkLayer;
} // namespace ohca

namespace ohca::test {

inline constexpr uint64_t kRdmaBase = 0x1000000; // 32 MiB of guest memory
inline constexpr uint64_t kRdmaSize = 0x2000000;

struct QpInfo {
    uint32_t qpn = 0;
    uint64_t sq = 0;
    uint64_t rq = 0;
    uint32_t sq_size = 0;
    uint32_t rq_size = 0;
    uint32_t sq_stride = 0;
    uint32_t rq_stride = 0;
    uint32_t sq_pi = 0;
    uint32_t rq_pi = 0;
    uint32_t uar = 0;
};

struct CqInfo {
    uint32_t cqn = 0;
    uint64_t ring = 0;
    uint32_t size = 0;
    uint32_t ci = 0;
    uint32_t uar = 0;
};

struct SrqInfo {
    uint32_t srqn = 0;
    uint64_t ring = 0;
    uint32_t size = 0;
    uint32_t stride = 64;
    uint32_t pi = 0;
    uint32_t uar = 0;
};

struct SendReq {
    uint64_t wr_id = 1;
    uint8_t opcode = OHCA_WR_SEND;
    uint8_t flags = OHCA_WQE_SIGNALED;
    uint32_t imm = 0;
    uint64_t remote_addr = 0;
    uint32_t rkey = 0;
    uint64_t cmp_add = 0; // atomics
    uint64_t swap = 0;
    uint32_t xrc_srqn = 0; // XRC initiator: the remote SRQ
    std::vector<ohca_sge> sges;
    std::vector<uint8_t> inline_data;
};

class RdmaNode {
  public:
    // 'link': the device's link layer (null: RoCEv2).
    // 'link_layer': OHCA_LINK_IB for an InfiniBand port (its LID comes
    // from an SMP, ib_node.hpp).
    explicit RdmaNode(uint8_t id, bool ipv6 = false, uint32_t id_seed = 0, unsigned int eq_log = 10,
                      uint32_t max_qp = 0, const LinkLayer *link = nullptr, uint8_t link_layer = 0);
    ~RdmaNode();
    RdmaNode(const RdmaNode &) = delete;
    RdmaNode &operator=(const RdmaNode &) = delete;

    CmdOutcome cmd(uint16_t opcode, const void *in, uint16_t in_len, void *out = nullptr,
                   uint16_t out_len = 0);
    template <class In> CmdOutcome cmd_in(uint16_t op, const In &in) {
        std::array<uint8_t, 64> scratch{};
        return cmd(op, &in, sizeof(In), scratch.data(), sizeof(scratch));
    }

    uint64_t alloc(uint64_t bytes, uint64_t align = 4096);
    // A level-1 (or 2) page list of the contiguous range [addr, addr+bytes).
    ohca_pbl make_pbl(uint64_t addr, uint64_t bytes, unsigned int shift = 12, int levels = 1);

    uint32_t create_pd();
    CqInfo create_cq(unsigned int log_size = 6, uint32_t eqn = 0, uint32_t uar = 0);
    // Returns the lkey (== rkey).
    uint32_t reg_mr(uint32_t pdn, uint64_t addr, uint64_t len, uint32_t access);
    QpInfo create_qp(uint32_t pdn, uint32_t scq, uint32_t rcq, unsigned int sq_log = 6,
                     unsigned int rq_log = 6, uint32_t uar = 0, uint8_t type = OHCA_QPT_RC);
    // An RC QP with 2-entry queues on rings that every QP made by this
    // shares (the device copies page lists; nothing may be posted to it):
    // for tests with thousands of idle QPs in little guest memory.
    QpInfo create_idle_qp(uint32_t pdn, uint32_t cqn);
    // CREATE_QP's input for such a QP, without its page lists.
    static ohca_create_qp_in idle_qp_in(uint32_t pdn, uint32_t cqn);
    // A QP whose receives come from SRQ 'srqn' (no RQ of its own).
    QpInfo create_qp_on_srq(uint32_t pdn, uint32_t scq, uint32_t rcq, uint32_t srqn,
                            unsigned int sq_log = 6);
    SrqInfo create_srq(uint32_t pdn, unsigned int log_size = 6, uint32_t limit = 0);
    // XRC: a domain, an XRC SRQ of it completing into 'cqn', an initiator
    // QP (send side only) and a target QP (no queues).
    uint32_t alloc_xrcd();
    SrqInfo create_xrc_srq(uint32_t pdn, uint32_t xrcdn, uint32_t cqn, unsigned int log_size = 6);
    QpInfo create_xrc_ini(uint32_t pdn, uint32_t scq, unsigned int sq_log = 6);
    QpInfo create_xrc_tgt(uint32_t xrcdn);
    void post_srq_recv(SrqInfo &srq, uint64_t wr_id, const std::vector<ohca_sge> &sges);
    CmdOutcome modify(uint32_t qpn, uint32_t mask, const ohca_qp_attr &attr,
                      uint16_t udp_sport = 0);
    // RESET -> INIT -> RTR -> RTS towards remote (gid of 'peer' node id).
    void connect(const QpInfo &qp, uint32_t remote_qpn, const RdmaNode &peer, uint8_t path_mtu = 3,
                 uint8_t timeout = 14, uint8_t retry = 7, uint8_t rnr_retry = 7,
                 uint32_t access = OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_READ,
                 uint8_t rd_atomic = 4);
    // The same for a UC QP (the UC column: no timers, retries or
    // READ/atomic resources).
    void connect_uc(const QpInfo &qp, uint32_t remote_qpn, const RdmaNode &peer,
                    uint8_t path_mtu = 3, uint32_t access = OHCA_ACCESS_REMOTE_WRITE);
    ohca_qp_attr query(uint32_t qpn);

    void post_send(QpInfo &qp, const SendReq &r, bool ring = true);
    void post_recv(QpInfo &qp, uint64_t wr_id, const std::vector<ohca_sge> &sges);
    void ring_sq(const QpInfo &qp);
    std::vector<ohca_cqe> poll(CqInfo &cq, size_t max = 1024);
    // The same into 'out' (emptied first): a caller polling in a loop keeps
    // one vector, as a guest polls into an array of its own.
    void poll_into(CqInfo &cq, std::vector<ohca_cqe> &out, size_t max = 1024);
    void cq_doorbell(const CqInfo &cq, uint32_t flags);

    void process(); // until the engine stops rescheduling
    // A new engine with the port's transmit paced at 'speed_mbps' in bursts
    // of 'burst' bytes (ohca_engine_config::tx_burst_bytes), brought up
    // again; before any object is created.
    void pace(uint32_t speed_mbps, uint32_t burst);
    void reset(); // function reset, then the driver's bring-up again
    // The engine's state (ohca_engine_save); a refusal is a failed check.
    std::vector<uint8_t> save_state();
    // What a migration does: the engine destroyed, one of the same
    // configuration (another identifier seed) created and loaded from 'state'.
    void load_state(std::span<const uint8_t> state, uint32_t id_seed = 0x5eed);
    ohca_query_stats_out stats();
    std::vector<ohca_eqe> events(); // unconsumed EQ 0 entries
    // A receive WQE with 'sges' at guest address 'at' (RQ and SRQ rings
    // alike), without a doorbell (post_recv writes and rings).
    void put_recv_wqe(uint64_t at, uint64_t wr_id, const std::vector<ohca_sge> &sges);

    std::array<uint8_t, 6> mac{};
    std::array<uint8_t, 16> gid{};
    // An InfiniBand port's LID once the test's SM gave it one: connect()
    // then addresses the peer by it (struct ohca_av_ib).
    uint16_t lid = 0;
    uint8_t ib_sl = 0; // connect(): the SL of an InfiniBand address vector
    FakeHost host;
    Driver drv;
    ohca_engine *e = nullptr;
    ohca_engine_config config{}; // what 'e' was created with
    uint32_t psn_base = 0x100;   // connect(): first PSN is psn_base + QPN (mod 2^24)
    uint16_t udp_sport = 0;      // connect(): nonzero goes with the AV (OHCA_QP_UDP_SPORT)
    // cmd() runs the engine once (one bottom half) instead of until idle.
    bool one_run = false;
    // Leave EQ 0 entries unconsumed (a driver that is slow to read it).
    bool hold_eq = false;

  private:
    // MODIFY_QP RESET -> INIT with 'access'; the RTR attributes towards
    // 'peer' that RC and UC share.
    bool to_init(const QpInfo &qp, uint32_t access);
    static ohca_qp_attr rtr_attr(const RdmaNode &peer, uint32_t remote_qpn, uint8_t path_mtu);
    void bring_up(bool ipv6, uint8_t id);
    void drain_eq();
    // ib_sl into the InfiniBand address vector of 'a' (towards 'peer').
    void set_ib_sl(ohca_qp_attr &a, const RdmaNode &peer) const;
    std::vector<ohca_eqe> pending_;
    const LinkLayer *link_ = nullptr;
    unsigned int eq_log_ = 10;
    uint64_t next_ = kRdmaBase;
    std::optional<std::pair<ohca_pbl, ohca_pbl>> idle_rings_; // create_idle_qp()
};

// One end of a connection: a PD, send and receive CQs of 2^cq_log
// entries, a QP (RC unless qp_type says), and a buffer registered with
// 'access' and filled with pattern(k) (left as it is without one).
struct Side {
    uint32_t pd = 0;
    CqInfo scq, rcq;
    QpInfo qp;
    uint64_t buf = 0;
    uint32_t key = 0;
};
inline constexpr uint32_t kSideAccess =
    OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_READ;
Side make_side(RdmaNode &n, size_t bytes, unsigned int qp_log,
               const std::function<uint8_t(size_t k)> &pattern = {}, unsigned int cq_log = 8,
               uint32_t access = kSideAccess, uint8_t qp_type = OHCA_QPT_RC);

// Moves frames between two nodes until both are idle. 'drop' sees every
// frame (a->b: from_a true), may rewrite it (a switch marking it CE) and
// returns true to lose it.
void pump(RdmaNode &a, RdmaNode &b,
          const std::function<bool(bool from_a, std::vector<uint8_t> &)> &drop = {});

// Where the BTH starts in the untagged IPv4 frames the nodes send
// (Ethernet, IPv4, UDP); the AETH or first extended header follows it.
inline constexpr size_t kBthOffV4 = 14 + 20 + 8;
inline constexpr size_t kBthLen = 12;

// Rewrites the ICRC of a RoCEv2 frame (IPv4 or IPv6, VLAN tagged or not)
// after a test changed its bytes, so the change reaches the transport.
void fix_icrc(std::vector<uint8_t> &f);

} // namespace ohca::test
