// SPDX-License-Identifier: GPL-2.0-or-later
// Fuzzer (e): RDMA objects and the RC transport. The input is a sequence of
// operations against a brought-up device: create/destroy PD, MR, CQ, QP and
// completion EQs with fuzzed fields; QPs walked through RESET/INIT/RTR/RTS
// towards another local QP (loopback inside the device) or a fake remote
// peer, with fuzzed attributes; send and receive WQEs written into the
// rings and doorbells rung; RoCEv2 frames addressed to live QPs, built with
// the engine's own framing code (build_roce_frame) so that the ICRC and the
// addressing checks pass and the packet reaches the requester or responder;
// the virtual clock moved on so retransmission and RNR timers fire; CQs
// polled and armed; holes in guest memory; resets.
//
// Decoding: the input is a list of [op code, le16 length, arguments]; a zero
// byte is the well-formed choice wherever the decoder offers one ("bad()" is
// true only for high byte values) and arguments that run out read as zeros,
// so a short seed that says "create, connect, post" reaches the data path.
#include "fuzz_common.hpp"
#include "link/roce_packet.hpp"
#include "link/roce_v2.hpp"
#include "transports/raw_eth.hpp"

#include <array>
#include <vector>

using namespace ohca::fuzz;

namespace {

// Guest memory for RDMA objects, inside the fuzz arena's buffer area.
constexpr uint64_t kPbl = kScratch;               // page lists (2 x 2 KiB)
constexpr uint64_t kPbl2 = kScratch + 0x1000;     // level-2 tops (2 x 4 KiB)
constexpr uint64_t kCqRings = kBuffers;           // 4 x 8 KiB (log <= 8)
constexpr uint64_t kSqRings = kBuffers + 0x8000;  // 4 x 16 KiB
constexpr uint64_t kRqRings = kBuffers + 0x18000; // 4 x 4 KiB
constexpr uint64_t kEqRings = kBuffers + 0x1c000; // 2 x 8 KiB (log <= 9)
constexpr uint64_t kData = kBuffers + 0x20000;    // 128 KiB of MR memory
constexpr uint64_t kDataSize = 0x20000;

constexpr unsigned int kSlots = 4;
constexpr unsigned int kMrSlots = 8;

const std::array<uint8_t, 6> kOurMac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
const std::array<uint8_t, 6> kPeerMac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
const std::array<uint8_t, 16> kOurGid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
const std::array<uint8_t, 16> kPeerGid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};

bool bad(Input &in) {
    return in.u8() >= 0xe8;
} // about 1 in 11

bool verbose() {
    static const bool v = std::getenv("OHCA_FUZZ_VERBOSE") != nullptr;
    return v;
}

struct Obj { // PD or EQ
    bool live = false;
    uint32_t handle = 0;
};

struct Cq {
    bool live = false;
    uint32_t cqn = 0;
    unsigned int log = 0;
    uint32_t ci = 0;
};

struct Qp {
    bool live = false;
    uint32_t qpn = 0;
    unsigned int sq_log = 0, rq_log = 0, sq_ls = 0, rq_ls = 0;
    uint32_t sq_pi = 0, rq_pi = 0;
    bool remote = false; // peer is the fake remote node, not a local QP
    bool uc = false;     // a UC QP (the UC column of MODIFY_QP)
    bool xrc = false;    // an XRC initiator or target (XRC opcodes, XRCETH)
};

struct Mr {
    bool live = false;
    uint32_t key = 0;
    uint64_t iova = 0;
    uint64_t len = 0;
    bool window = false; // a memory window (ALLOC_MW): its key as an rkey
    uint32_t handle = 0; // a window's DEALLOC_MW handle (its key changes)
};

class Rdma {
  public:
    Rdma(Host &h, Driver &d) : h_(h), d_(d) {}

    void setup() {
        ohca_add_gid_in g{};
        std::copy(kOurGid.begin(), kOurGid.end(), g.gid);
        std::copy(kOurMac.begin(), kOurMac.end(), g.mac);
        g.type = OHCA_GID_TYPE_ROCE_V2_IPV4;
        g.port = 1;
        g.vlan_id = 0xffff;
        (void)d_.cmd_in(OHCA_CMD_ADD_GID, g);
    }

    void op(uint8_t code, Input &in) {
        if (verbose()) {
            std::fprintf(stderr, "op %u (%zu bytes)\n", code % 20, in.remaining());
        }
        switch (code % 20) {
        case 0:
            create_pd(in);
            break;
        case 1:
            destroy(in, OHCA_CMD_DESTROY_PD);
            break;
        case 2:
            create_mr(in);
            break;
        case 3:
            destroy(in, OHCA_CMD_DESTROY_MR);
            break;
        case 4:
            create_cq(in);
            break;
        case 5:
            destroy(in, OHCA_CMD_DESTROY_CQ);
            break;
        case 6:
            create_qp(in);
            break;
        case 7:
            destroy(in, OHCA_CMD_DESTROY_QP);
            break;
        case 8:
            connect(in);
            break;
        case 9:
            modify_raw(in);
            break;
        case 10:
        case 11:
            post_send(in);
            break;
        case 12:
            post_recv(in);
            break;
        case 13:
        case 14:
            inject(in);
            break;
        case 15:
            run(in);
            break;
        case 16:
            poll_cq(in);
            break;
        case 17:
            eq(in);
            break;
        case 18:
            hole(in);
            break;
        default:
            misc(in);
            break;
        }
    }

    // The quickest way for a seed to reach traffic: PD, MR over all data
    // memory, two CQs, two QPs connected to each other (loopback).
    void quick_start(Input &in) {
        create_pd(in);
        create_mr(in);
        create_cq(in, 0);
        create_cq(in, 1);
        create_qp(in, 0);
        create_qp(in, 1);
        for (int step = 0; step < 3; ++step) {
            connect(in, &qps_[0], &qps_[1]);
            connect(in, &qps_[1], &qps_[0]);
        }
    }

  private:
    // ---- helpers ------------------------------------------------------

    template <class T> T &pick(std::array<T, kSlots> &a, Input &in) { return a[in.below(kSlots)]; }

    // A live handle from a list, or (bad) a fuzzed one.
    template <class T, size_t N, class F>
    uint32_t handle(Input &in, const std::array<T, N> &a, F get) {
        if (bad(in)) {
            return in.one_in(2) ? in.u32() : in.below(64);
        }
        const uint32_t start = in.below(N);
        for (uint32_t i = 0; i < N; ++i) {
            const T &o = a[(start + i) % N];
            if (o.live) {
                return get(o);
            }
        }
        return in.below(8);
    }
    uint32_t pd(Input &in) {
        return handle(in, pds_, [](const Obj &p) { return p.handle; });
    }
    uint32_t cqn(Input &in) {
        return handle(in, cqs_, [](const Cq &c) { return c.cqn; });
    }
    uint32_t lkey(Input &in) {
        return handle(in, mrs_, [](const Mr &m) { return m.key; });
    }
    const Mr *live_mr(Input &in) {
        const uint32_t start = in.below(kMrSlots);
        for (uint32_t i = 0; i < kMrSlots; ++i) {
            if (mrs_[(start + i) % kMrSlots].live) {
                return &mrs_[(start + i) % kMrSlots];
            }
        }
        return nullptr;
    }
    Qp *live_qp(Input &in) {
        const uint32_t start = in.below(kSlots);
        for (uint32_t i = 0; i < kSlots; ++i) {
            if (qps_[(start + i) % kSlots].live) {
                return &qps_[(start + i) % kSlots];
            }
        }
        return nullptr;
    }

    // A page list of [addr, addr+bytes) in 4 KiB pages, written to kPbl (the
    // device copies it while the command runs), sometimes two-level or with
    // fuzzed fields.
    ohca_pbl pbl(Input &in, uint64_t addr, uint64_t bytes, unsigned int which = 0) {
        // Two lists per command (a QP's SQ and RQ) must not share memory.
        const uint64_t list = kPbl + 0x800ull * which;
        const uint64_t top = kPbl2 + 0x1000ull * which;
        ohca_pbl p{};
        const uint64_t first = addr & ~uint64_t{0xfff};
        const auto n =
            static_cast<uint32_t>(std::min<uint64_t>((addr + bytes - first + 0xfff) >> 12, 256));
        for (uint32_t i = 0; i < n; ++i) {
            h_.put<uint64_t>(list + 8ull * i, first + 4096ull * i);
        }
        p.addr = list;
        p.npages = n;
        p.page_shift = 12;
        p.levels = 1;
        if (bad(in)) {
            switch (in.below(6)) {
            case 0: // two levels: kPbl2 holds one pointer to the list
                h_.put<uint64_t>(top, list);
                p.addr = top;
                p.levels = 2;
                break;
            case 1:
                p.npages = in.u32();
                break;
            case 2:
                p.page_shift = in.u8();
                break;
            case 3:
                p.addr = pick_addr(in, list, 8);
                break;
            case 4: // a page outside guest memory in the list
                h_.put<uint64_t>(list + 8ull * in.below(n), pick_addr(in, first, 4096));
                break;
            default:
                p.levels = in.u8();
                p.rsvd = in.u16();
                break;
            }
        }
        return p;
    }

    bool create(uint16_t op, const void *in_buf, uint16_t len, ohca_create_out &out) {
        const uint8_t st = d_.cmd(op, in_buf, len, sizeof(out), kMailboxOut);
        if (st != OHCA_STATUS_OK) {
            return false;
        }
        out = h_.get<ohca_create_out>(kMailboxOut);
        return true;
    }

    // ---- objects ------------------------------------------------------

    void create_pd(Input &in) {
        auto &slot = pds_[in.below(kSlots)];
        ohca_create_out o{};
        if (create(OHCA_CMD_CREATE_PD, nullptr, 0, o)) {
            slot = {true, o.handle};
        }
    }

    void create_mr(Input &in) {
        Mr &slot = mrs_[in.below(kMrSlots)];
        if (in.one_in(6)) { // a memory window in the same key space
            ohca_alloc_mw_in w{};
            w.pdn = pd(in);
            w.type = static_cast<uint8_t>(bad(in) ? in.u8() : in.range(1, 2));
            if (bad(in)) {
                w.rsvd[in.below(3)] = in.u8();
            }
            ohca_create_out o{};
            if (create(OHCA_CMD_ALLOC_MW, &w, sizeof(w), o)) {
                slot = {true, o.handle, kData, kDataSize, true, o.handle};
            }
            return;
        }
        ohca_create_mr_in m{};
        m.pdn = pd(in);
        m.access = bad(in) ? in.u32()
                           : OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_WRITE |
                                 OHCA_ACCESS_REMOTE_READ |
                                 (in.u8() & (OHCA_ACCESS_REMOTE_ATOMIC | OHCA_ACCESS_MW_BIND));
        if (in.u8() >= 0xc0) { // drop some access bits
            m.access &= in.u32();
        }
        const uint64_t off =
            bad(in) ? in.below(kDataSize) : 0x1000ull * in.below(32) & (kDataSize - 1);
        m.iova = kData + off;
        m.length = bad(in) ? in.u64() : std::max<uint64_t>(1, kDataSize - off - in.below(256));
        m.pbl = pbl(in, m.iova, std::min<uint64_t>(m.length, kDataSize));
        if (in.one_in(8)) { // an ODP MR: no pages until ODP_MAP (odp())
            const bool implicit = in.one_in(3);
            m.flags = OHCA_MR_F_ODP | (implicit ? OHCA_MR_F_IMPLICIT : 0);
            m.pbl = ohca_pbl{};
            m.pbl.page_shift = static_cast<uint8_t>(bad(in) ? in.u8() : 12);
            if (implicit) {
                m.iova = 0;
                m.length = 0;
            }
        } else if (in.one_in(8)) { // a free fast-registration MR (REG_MR gives it pages)
            m = ohca_create_mr_in{};
            m.pdn = pd(in);
            m.flags = OHCA_MR_F_FAST_REG;
            m.pbl.npages = bad(in) ? in.u32() : in.range(1, 16);
        } else if (bad(in)) {
            switch (in.below(3)) {
            case 0:
                m.flags = in.u32();
                break;
            case 1:
                m.iova = in.u64(); // iova is virtual: any value is legal
                break;
            default:
                m.rsvd = in.u32();
                break;
            }
        }
        ohca_create_out o{};
        if (create(OHCA_CMD_CREATE_MR, &m, sizeof(m), o)) {
            const bool implicit = (m.flags & OHCA_MR_F_IMPLICIT) != 0;
            slot = {true,  o.handle, implicit ? kData : m.iova, implicit ? kDataSize : m.length,
                    false, 0};
        }
    }

    void create_cq(Input &in, int fixed = -1) {
        const uint32_t i = fixed >= 0 ? static_cast<uint32_t>(fixed) : in.below(kSlots);
        Cq &slot = cqs_[i];
        ohca_create_cq_in c{};
        c.log_size = static_cast<uint8_t>(bad(in) ? in.u8() : 8 - in.below(7));
        const uint64_t ring = kCqRings + 0x2000ull * i;
        // The list covers the ring exactly (the device refuses more pages).
        c.pbl =
            pbl(in, ring, std::min<uint64_t>(32ull << std::min(c.log_size, uint8_t{16}), 0x2000));
        const auto &eq = eqs_[in.below(2)];
        c.eqn = bad(in) ? in.u32() : eq.live ? eq.handle : 0;
        c.uar_index = bad(in) ? in.u32() : 0;
        if (bad(in)) {
            c.rsvd[in.below(7)] = in.u8();
        }
        h_.fill(ring, 0, 0x2000);
        ohca_create_out o{};
        if (create(OHCA_CMD_CREATE_CQ, &c, sizeof(c), o)) {
            slot = {true, o.handle, c.log_size, 0};
        }
    }

    void create_qp(Input &in, int fixed = -1, int type = -1) {
        const uint32_t i = fixed >= 0 ? static_cast<uint32_t>(fixed) : in.below(kSlots);
        Qp &slot = qps_[i];
        ohca_create_qp_in q{};
        q.type = type >= 0      ? static_cast<uint8_t>(type)
                 : bad(in)      ? in.u8()
                 : in.one_in(4) ? uint8_t{OHCA_QPT_UC}
                 : in.one_in(6)
                     ? (in.flag() ? uint8_t{OHCA_QPT_XRC_INI} : uint8_t{OHCA_QPT_XRC_TGT})
                     : uint8_t{OHCA_QPT_RC};
        // SQ: 16 KiB, RQ: 4 KiB per slot; stride/size trade within them.
        q.sq_log_stride = static_cast<uint8_t>(bad(in) ? in.u8() : 8 - in.below(2));
        q.sq_log_size =
            static_cast<uint8_t>(bad(in) ? in.u8() : 4 + in.below(3) - (q.sq_log_stride - 7));
        q.rq_log_stride = static_cast<uint8_t>(bad(in) ? in.u8() : 6 - in.below(2));
        q.rq_log_size =
            static_cast<uint8_t>(bad(in) ? in.u8() : 4 + in.below(3) - (q.rq_log_stride - 5));
        q.pdn = pd(in);
        q.send_cqn = cqn(in);
        q.recv_cqn = cqn(in);
        q.uar_index = bad(in) ? in.u32() : 0;
        q.max_inline = bad(in) ? in.u32() : 64;
        auto ring_bytes = [](unsigned int log_size, unsigned int log_stride, uint64_t room) {
            return std::min<uint64_t>(uint64_t{1} << std::min(log_size + log_stride, 40u), room);
        };
        q.sq_pbl =
            pbl(in, kSqRings + 0x4000ull * i, ring_bytes(q.sq_log_size, q.sq_log_stride, 0x4000));
        q.rq_pbl = pbl(in, kRqRings + 0x1000ull * i,
                       ring_bytes(q.rq_log_size, q.rq_log_stride, 0x1000), 1);
        if (bad(in)) {
            q.rsvd0[in.below(3)] = in.u8();
            q.srqn = in.u32();
        }
        if (q.type == OHCA_QPT_XRC_INI && !bad(in)) { // send side only
            q.recv_cqn = 0;
            q.rq_log_size = q.rq_log_stride = 0;
            q.rq_pbl = {};
        } else if (q.type == OHCA_QPT_XRC_TGT && !bad(in)) { // no queues
            const uint32_t d = xrcd(in);
            q = {};
            q.type = OHCA_QPT_XRC_TGT;
            q.xrcdn = d;
        }
        ohca_create_out o{};
        if (create(OHCA_CMD_CREATE_QP, &q, sizeof(q), o)) {
            slot = {};
            slot.live = true;
            slot.qpn = o.handle;
            slot.sq_log = q.sq_log_size;
            slot.rq_log = q.rq_log_size;
            slot.sq_ls = q.sq_log_stride;
            slot.rq_ls = q.rq_log_stride;
            slot.uc = q.type == OHCA_QPT_UC;
            slot.xrc = q.type == OHCA_QPT_XRC_INI || q.type == OHCA_QPT_XRC_TGT;
        }
    }

    void destroy(Input &in, uint16_t op) {
        ohca_handle_in hi{};
        bool *live = nullptr;
        switch (op) {
        case OHCA_CMD_DESTROY_PD: {
            auto &p = pick(pds_, in);
            hi.handle = p.handle;
            live = &p.live;
            break;
        }
        case OHCA_CMD_DESTROY_MR: {
            Mr &m = mrs_[in.below(kMrSlots)];
            hi.handle = m.key;
            live = &m.live;
            if (m.window) {
                op = OHCA_CMD_DEALLOC_MW;
                hi.handle = m.handle;
            }
            break;
        }
        case OHCA_CMD_DESTROY_CQ: {
            Cq &c = pick(cqs_, in);
            hi.handle = c.cqn;
            live = &c.live;
            break;
        }
        default: {
            Qp &q = pick(qps_, in);
            hi.handle = q.qpn;
            live = &q.live;
            break;
        }
        }
        if (bad(in)) { // stale, foreign or junk handle; reserved bits
            hi.handle = in.one_in(2) ? in.u32() : hi.handle ^ (1u << in.below(32));
            hi.rsvd = in.u32();
        }
        if (d_.cmd_in(op, hi) == OHCA_STATUS_OK) {
            *live = false;
        }
    }

    // The next step of RESET -> INIT -> RTR -> RTS for one QP, towards a
    // local QP (loopback) or the fake remote peer, from its current state.
    void connect(Input &in, Qp *qp = nullptr, Qp *peer_hint = nullptr) {
        if (qp == nullptr) {
            qp = live_qp(in);
        }
        if (qp == nullptr || !qp->live) {
            return;
        }
        const ohca_qp_attr cur = query(qp->qpn);
        ohca_qp_attr a{};
        uint32_t mask = OHCA_QP_STATE;
        switch (cur.qp_state) {
        case OHCA_QPS_RESET:
            a.qp_state = OHCA_QPS_INIT;
            a.access_flags =
                OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_READ | (bad(in) ? in.u32() : 0);
            mask |= OHCA_QP_PKEY_INDEX | OHCA_QP_PORT | OHCA_QP_ACCESS_FLAGS;
            break;
        case OHCA_QPS_INIT: {
            a.qp_state = OHCA_QPS_RTR;
            a.path_mtu = static_cast<uint8_t>(bad(in) ? in.u8() : 1 + in.below(5));
            // Peer: another local QP (or itself), else the fake remote node.
            Qp *peer = in.u8() < 0xc0
                           ? (peer_hint != nullptr && peer_hint->live ? peer_hint : live_qp(in))
                           : nullptr;
            qp->remote = peer == nullptr;
            a.dest_qpn = peer != nullptr ? peer->qpn : 0x100 + in.below(16);
            a.rq_psn = bad(in) ? in.u32() : 0x100 + in.below(4);
            a.max_dest_rd_atomic = static_cast<uint8_t>(bad(in) ? in.u8() : 4);
            a.min_rnr_timer = static_cast<uint8_t>(in.below(32));
            const auto &gid = qp->remote ? kPeerGid : kOurGid;
            const auto &mac = qp->remote ? kPeerMac : kOurMac;
            std::copy(gid.begin(), gid.end(), a.av.dgid);
            std::copy(mac.begin(), mac.end(), a.av.dmac);
            a.av.vlan_id = bad(in) ? in.u16() : 0xffff;
            a.av.hop_limit = 64;
            a.av.sgid_index = static_cast<uint8_t>(bad(in) ? in.u8() : 0);
            a.av.network_type = static_cast<uint8_t>(bad(in) ? in.u8() : uint8_t{OHCA_NET_IPV4});
            a.av.flow_label = in.u8() >= 0xc0 ? in.u32() : 0;
            a.av.traffic_class = in.u8();
            mask |= OHCA_QP_AV | OHCA_QP_PATH_MTU | OHCA_QP_DEST_QPN | OHCA_QP_RQ_PSN |
                    OHCA_QP_MAX_DEST_RD_ATOMIC | OHCA_QP_MIN_RNR_TIMER;
            break;
        }
        case OHCA_QPS_RTR:
            a.qp_state = OHCA_QPS_RTS;
            a.sq_psn = bad(in) ? in.u32() : 0x100 + in.below(4);
            a.timeout = static_cast<uint8_t>(bad(in) ? in.u8() : in.below(15));
            a.retry_cnt = static_cast<uint8_t>(bad(in) ? in.u8() : in.below(8));
            a.rnr_retry = static_cast<uint8_t>(bad(in) ? in.u8() : in.below(8));
            a.max_rd_atomic = static_cast<uint8_t>(bad(in) ? in.u8() : 1 + in.below(8));
            mask |= OHCA_QP_SQ_PSN | OHCA_QP_TIMEOUT | OHCA_QP_RETRY_CNT | OHCA_QP_RNR_RETRY |
                    OHCA_QP_MAX_QP_RD_ATOMIC;
            break;
        default: // RTS, SQD, SQE, ERR: back to RESET (rings restart at 0)
            a.qp_state = in.u8() < 0x80 ? OHCA_QPS_RESET : OHCA_QPS_ERR;
            break;
        }
        if (qp->uc) { // no ACK timing, retries or READ/atomic resources
            mask &= ~uint32_t{OHCA_QP_MAX_DEST_RD_ATOMIC | OHCA_QP_MIN_RNR_TIMER | OHCA_QP_TIMEOUT |
                              OHCA_QP_RETRY_CNT | OHCA_QP_RNR_RETRY | OHCA_QP_MAX_QP_RD_ATOMIC};
        }
        if (bad(in)) {
            mask ^= 1u << in.below(21);
        }
        const uint8_t st = modify(qp->qpn, mask, a);
        if (verbose()) {
            std::fprintf(stderr, "modify qp %u %u -> %u: status %u\n", qp->qpn, cur.qp_state,
                         a.qp_state, st);
        }
        if (st == OHCA_STATUS_OK && a.qp_state == OHCA_QPS_RESET) {
            qp->sq_pi = qp->rq_pi = 0;
        }
    }

    // Any transition with any attributes.
    void modify_raw(Input &in) {
        Qp *qp = live_qp(in);
        ohca_qp_attr a{};
        in.bytes(&a, sizeof(a));
        a.qp_state = static_cast<uint8_t>(a.qp_state % 8);
        const uint32_t mask = in.u32() & 0x1fffff;
        const uint32_t qpn = qp != nullptr && !bad(in) ? qp->qpn : in.u32();
        if (modify(qpn, mask, a) == OHCA_STATUS_OK && qp != nullptr &&
            (mask & OHCA_QP_STATE) != 0 && a.qp_state == OHCA_QPS_RESET) {
            qp->sq_pi = qp->rq_pi = 0;
        }
    }

    uint8_t modify(uint32_t qpn, uint32_t mask, const ohca_qp_attr &a) {
        ohca_modify_qp_in m{};
        m.qpn = qpn;
        m.attr_mask = mask;
        m.attr = a;
        return d_.cmd_in(OHCA_CMD_MODIFY_QP, m);
    }

    ohca_qp_attr query(uint32_t qpn) {
        ohca_handle_in hi{};
        hi.handle = qpn;
        if (d_.cmd(OHCA_CMD_QUERY_QP, &hi, sizeof(hi), sizeof(ohca_qp_attr), kMailboxOut) !=
            OHCA_STATUS_OK) {
            return ohca_qp_attr{};
        }
        return h_.get<ohca_qp_attr>(kMailboxOut);
    }

    // ---- data path ----------------------------------------------------

    ohca_sge sge(Input &in) {
        ohca_sge s{};
        const Mr *mr = live_mr(in);
        if (mr == nullptr || bad(in)) {
            s.addr = pick_addr(in, kData);
            s.length = in.one_in(2) ? in.u32() : in.below(4096);
            s.lkey = lkey(in);
            return s;
        }
        const uint64_t span = std::min<uint64_t>(mr->len, kDataSize);
        s.addr = mr->iova + in.below(static_cast<uint32_t>(span));
        s.length = in.below(
            static_cast<uint32_t>(std::min<uint64_t>(span - (s.addr - mr->iova), 6000)) + 1);
        s.lkey = mr->key;
        return s;
    }

    void post_send(Input &in) {
        Qp *qp = live_qp(in);
        if (qp == nullptr || qp->sq_log > 12 || qp->sq_ls > 12) {
            return;
        }
        const uint32_t size = 1u << qp->sq_log;
        const uint32_t stride = 1u << qp->sq_ls;
        const uint64_t base = kSqRings + 0x4000ull * static_cast<uint64_t>(qp - qps_.data());
        for (uint32_t n = in.range(1, 4); n != 0; --n) {
            const uint64_t at = base + uint64_t{qp->sq_pi & (size - 1)} * stride;
            if (at + stride > base + 0x4000) {
                break; // a bad ring geometry the device accepted? then it is outside ours
            }
            ohca_send_wqe w{};
            w.wr_id = qp->sq_pi;
            // The RC opcodes, the atomics, then the fast-registration
            // ones, then ATOMIC WRITE.
            static constexpr uint8_t kOps[] = {
                OHCA_WR_RDMA_WRITE,       OHCA_WR_RDMA_WRITE_IMM, OHCA_WR_SEND,
                OHCA_WR_SEND_IMM,         OHCA_WR_RDMA_READ,      OHCA_WR_ATOMIC_CMP_SWP,
                OHCA_WR_ATOMIC_FETCH_ADD, OHCA_WR_LOCAL_INV,      OHCA_WR_SEND_INV,
                OHCA_WR_REG_MR,           OHCA_WR_BIND_MW,        OHCA_WR_ATOMIC_WRITE};
            w.opcode = bad(in) ? in.u8() : kOps[in.below(sizeof(kOps))];
            w.cmp_add = in.one_in(2) ? in.below(4) : in.u64();
            w.swap = in.u64();
            const uint8_t flags = in.u8();
            w.flags = static_cast<uint8_t>(bad(in) ? flags : flags & 0x07);
            w.imm_data = in.u32();
            const Mr *mr = live_mr(in);
            if (mr != nullptr && !bad(in)) {
                w.remote_addr = mr->iova + in.below(kDataSize / 2);
                w.rkey = mr->key;
            } else {
                w.remote_addr = in.u64();
                w.rkey = in.u32();
            }
            if (in.u8() >= 0xd0) { // inline
                w.flags |= OHCA_WQE_INLINE;
                w.inline_len = bad(in) ? in.u32() : in.below(stride - 64 + 1);
                auto data = in.take(std::min<size_t>(w.inline_len, stride - 64));
                h_.put_bytes(at + 64, data.data(), data.size());
            } else {
                const uint32_t max_sge = (stride - 64) / 16;
                w.num_sge =
                    static_cast<uint8_t>(bad(in) ? in.u8() : in.below(std::min(max_sge, 4u) + 1));
                for (uint32_t i = 0; i < std::min<uint32_t>(w.num_sge, max_sge); ++i) {
                    h_.put(at + 64 + 16ull * i, sge(in));
                }
            }
            const bool atomic =
                w.opcode == OHCA_WR_ATOMIC_CMP_SWP || w.opcode == OHCA_WR_ATOMIC_FETCH_ADD;
            if (atomic && !bad(in)) { // a well-formed one: aligned, one 8-byte SGE
                w.flags &= static_cast<uint8_t>(~OHCA_WQE_INLINE);
                w.remote_addr &= ~uint64_t{7};
                w.num_sge = 1;
                ohca_sge s = sge(in);
                s.length = 8;
                h_.put(at + 64, s);
            }
            if (w.opcode == OHCA_WR_ATOMIC_WRITE && !bad(in)) { // aligned, 8 bytes
                w.remote_addr &= ~uint64_t{7};
                if ((w.flags & OHCA_WQE_INLINE) != 0) {
                    w.inline_len = 8;
                    h_.put(at + 64, in.u64());
                } else {
                    w.num_sge = 1;
                    ohca_sge s = sge(in);
                    s.length = 8;
                    h_.put(at + 64, s);
                }
            }
            // XRC: the remote SRQ (1..3 exist at times), 0 or anything.
            w.xrc_srqn = in.one_in(4) ? in.u32() : in.below(4);
            if (bad(in)) {
                w.rsvd0 = in.u8();
                w.rsvd1[in.below(3)] = in.u32();
            }
            if (w.opcode == OHCA_WR_BIND_MW && !bad(in)) {
                // A well-formed bind: a slot's key as the window (its next
                // tag), another's as the MR, a range inside the data area.
                ohca_bind_mw_wqe b{};
                b.wr_id = w.wr_id;
                b.opcode = OHCA_WR_BIND_MW;
                b.flags = static_cast<uint8_t>(w.flags & ~OHCA_WQE_INLINE);
                const Mr *win = live_mr(in);
                const Mr *target = live_mr(in);
                const uint32_t k = win != nullptr ? win->key : in.u32();
                b.mw_key = (k & ~0xffu) | ((k + in.range(1, 2)) & 0xffu);
                b.mr_lkey = target != nullptr ? target->key : in.u32();
                b.addr = kData + in.below(kDataSize);
                b.length = in.one_in(4) ? 0 : in.below(kDataSize);
                b.access = in.u8() & 0xf;
                std::memcpy(&w, &b, sizeof(w));
                if (win != nullptr && b.length != 0 && in.one_in(2)) {
                    // later requests name the window's new key
                    mrs_[static_cast<size_t>(win - mrs_.data())].key = b.mw_key;
                }
            }
            h_.put(at, w);
            ++qp->sq_pi;
        }
        uint32_t pi = qp->sq_pi;
        if (bad(in)) {
            pi = in.one_in(2) ? in.u32() : pi + in.below(2 * size);
        }
        if (verbose()) {
            std::fprintf(stderr, "sq doorbell qp %u pi %u\n", qp->qpn, pi);
        }
        ohca_engine_db_write(d_.engine(), 0, OHCA_DB_SQ, OHCA_DB_VALUE(qp->qpn, pi), 8);
        d_.drain(in.range(1, 16));
    }

    void post_recv(Input &in) {
        Qp *qp = live_qp(in);
        if (qp == nullptr || qp->rq_log > 12 || qp->rq_ls > 12) {
            return;
        }
        const uint32_t size = 1u << qp->rq_log;
        const uint32_t stride = 1u << qp->rq_ls;
        const uint64_t base = kRqRings + 0x1000ull * static_cast<uint64_t>(qp - qps_.data());
        for (uint32_t n = in.range(1, 8); n != 0; --n) {
            const uint64_t at = base + uint64_t{qp->rq_pi & (size - 1)} * stride;
            if (at + stride > base + 0x1000) {
                break;
            }
            ohca_recv_wqe w{};
            w.wr_id = 0x10000 + qp->rq_pi;
            const uint32_t max_sge = (stride - 16) / 16;
            w.num_sge = static_cast<uint8_t>(
                bad(in) ? in.u8() : in.range(1, std::max(1u, std::min(max_sge, 3u))));
            for (uint32_t i = 0; i < std::min<uint32_t>(w.num_sge, max_sge); ++i) {
                h_.put(at + 16 + 16ull * i, sge(in));
            }
            if (bad(in)) {
                w.rsvd[in.below(7)] = in.u8();
            }
            h_.put(at, w);
            ++qp->rq_pi;
        }
        uint32_t pi = qp->rq_pi;
        if (bad(in)) {
            pi = in.u32();
        }
        ohca_engine_db_write(d_.engine(), 0, OHCA_DB_RQ, OHCA_DB_VALUE(qp->qpn, pi), 8);
        d_.drain(in.range(1, 8));
    }

    // A RoCEv2 frame from the QP's peer: right addresses, ICRC by the
    // engine's own builder, PSN near the one the QP expects (requests) or
    // near its send PSN (responses and ACKs), keys and addresses of live
    // MRs. Sometimes corrupted afterwards.
    void inject(Input &in) {
        Qp *qp = live_qp(in);
        if (qp == nullptr) {
            return;
        }
        const ohca_qp_attr a = query(qp->qpn);
        ohca::PacketPath path;
        path.smac = qp->remote ? kPeerMac : kOurMac;
        path.dmac = kOurMac;
        std::copy(std::begin(a.av.dgid), std::end(a.av.dgid), path.sgid.begin());
        path.dgid = kOurGid;
        path.udp_src_port = in.u16();
        ohca::PacketFields f;
        uint8_t op = static_cast<uint8_t>(in.below(0x15)); // atomics included
        if (in.one_in(16)) {
            op = in.flag() ? ohca::rc::kSendLastInv : ohca::rc::kSendOnlyInv;
        } else if (in.one_in(16)) {
            op = ohca::rc::kAtomicWrite;
        }
        if (qp->uc && !in.one_in(8)) { // the UC opcodes: SEND and WRITE
            op = static_cast<uint8_t>(ohca::uc::kSendFirst + in.below(12));
        }
        if (qp->xrc && !in.one_in(8)) { // RC's opcodes with the XRC prefix
            op = static_cast<uint8_t>(ohca::xrc::kPrefix | op);
        }
        if (bad(in)) {
            op = in.u8();
        }
        if (ohca::opcode_info(op).xrceth || (ohca::is_xrc_opcode(op) && in.one_in(8))) {
            f.xrceth = in.one_in(4) ? in.u32() & 0xffffff : in.below(4); // SRQ 1..3 exist at times
        }
        f.bth.opcode = op;
        f.bth.solicited = in.flag();
        f.bth.ack_req = in.flag();
        f.bth.dest_qp = bad(in) ? in.u32() & 0xffffff : qp->qpn;
        f.bth.pkey = bad(in) ? in.u16() : ohca::kDefaultPkey;
        const int32_t delta = static_cast<int32_t>(in.below(9)) - 4;
        if (op >= ohca::rc::kReadRespFirst && op <= ohca::rc::kAtomicAck) {
            f.bth.psn = (a.sq_psn + static_cast<uint32_t>(delta) - 1) & ohca::kPsnMask;
        } else {
            f.bth.psn = (a.rq_psn + static_cast<uint32_t>(delta > 2 ? 0 : delta)) & ohca::kPsnMask;
        }
        if (bad(in)) {
            f.bth.psn = in.u32() & ohca::kPsnMask;
        }
        const ohca::OpcodeInfo info =
            ohca::rc_opcode_info(ohca::is_xrc_opcode(op) ? op & 0x1f : op);
        if (info.reth || (!info.valid && in.flag())) {
            ohca::Reth r;
            const Mr *mr = live_mr(in);
            if (mr != nullptr && !bad(in)) {
                r.va = mr->iova + in.below(kDataSize);
                r.rkey = mr->key;
            } else {
                r.va = in.u64();
                r.rkey = in.u32();
            }
            r.dma_len = in.one_in(4) ? in.u32() : in.below(8192);
            if ((op & 0x1f) == ohca::rc::kAtomicWrite && !bad(in)) {
                r.va &= ~7ull; // a well-formed one mostly
                r.dma_len = 8;
            }
            f.reth = r;
        }
        if (info.aeth || (!info.valid && in.flag())) {
            static constexpr uint8_t kinds[] = {ohca::kAethAck, ohca::kAethRnrNak, ohca::kAethNak};
            f.aeth = ohca::Aeth{static_cast<uint8_t>(kinds[in.below(3)] | (in.u8() & 0x1f)),
                                in.u32() & 0xffffff};
            if (bad(in)) {
                f.aeth->syndrome = in.u8();
            }
        }
        if (info.atomic_eth) {
            ohca::AtomicEth a8;
            const Mr *mr = live_mr(in);
            a8.va = mr != nullptr && !bad(in) ? mr->iova + (in.below(kDataSize) & ~7ull) : in.u64();
            a8.rkey = mr != nullptr && !bad(in) ? mr->key : in.u32();
            a8.swap_add = in.u64();
            a8.compare = in.one_in(2) ? 0 : in.u64();
            f.atomic_eth = a8;
        }
        if (info.atomic_ack_eth) {
            f.atomic_ack = in.u64();
        }
        if (info.imm || (!info.valid && in.flag())) {
            f.imm = in.u32();
        }
        if (info.ieth) {
            const Mr *mr = live_mr(in);
            f.ieth = mr != nullptr && !bad(in) ? mr->key : in.u32();
        }
        size_t plen = info.payload || bad(in) ? in.below(in.one_in(8) ? 4200 : 300) : 0;
        if ((op & 0x1f) == ohca::rc::kAtomicWrite && !bad(in)) {
            plen = 8;
        }
        std::vector<uint8_t> payload(plen);
        in.bytes(payload.data(), plen);
        std::vector<uint8_t> frame = ohca::build_roce_frame(path, f, payload);
        if (bad(in) && !frame.empty()) {
            switch (in.below(3)) {
            case 0: // a flipped byte: ICRC or header check fails
                frame[in.below(static_cast<uint32_t>(frame.size()))] ^=
                    static_cast<uint8_t>(1u << in.below(8));
                break;
            case 1:
                frame.resize(in.below(static_cast<uint32_t>(frame.size())));
                break;
            default:
                const size_t extra = in.below(64);
                frame.resize(frame.size() + extra, in.u8());
                break;
            }
        }
        if (frame.size() >= OHCA_ETH_MIN_FRAME && frame.size() <= OHCA_ETH_MAX_FRAME) {
            std::vector<uint8_t> exact(frame); // exact-size heap block for ASan
            (void)ohca_engine_receive_frame(d_.engine(), exact.data(), exact.size());
        }
        d_.drain(in.range(1, 8));
        if (verbose()) {
            const ohca_qp_attr after = query(qp->qpn);
            std::fprintf(stderr, "inject qp %u op %#x psn %u len %zu: rq_psn %u -> %u\n", qp->qpn,
                         op, f.bth.psn, plen, a.rq_psn, after.rq_psn);
        }
    }

    // process() with the clock moved on: ACK timeouts and RNR waits fire.
    void run(Input &in) {
        static constexpr uint64_t steps[] = {0, 1000000, 70000000, 1000000000, 70000000000};
        h_.advance_clock(steps[in.below(5)]);
        d_.drain(in.range(1, 64));
        (void)d_.consume_eq(true);
    }

    void poll_cq(Input &in) {
        Cq &c = pick(cqs_, in);
        if (!c.live || c.log > 8) {
            return;
        }
        const uint32_t size = 1u << c.log;
        const uint64_t ring = kCqRings + 0x2000ull * static_cast<uint64_t>(&c - cqs_.data());
        for (uint32_t n = 0; n < size; ++n) {
            const auto e = h_.get<ohca_cqe>(ring + 32ull * (c.ci & (size - 1)));
            const uint8_t want = ((c.ci >> c.log) & 1) == 0 ? OHCA_CQE_OWNER : 0;
            if ((e.owner & OHCA_CQE_OWNER) != want) {
                break;
            }
            if (verbose()) {
                std::fprintf(stderr, "cqe cq %u qp %u op %#x status %u verr %u len %u\n", c.cqn,
                             e.qpn, e.opcode, e.status, e.vendor_err, e.byte_len);
            }
            ++c.ci;
        }
        uint32_t v = c.ci & OHCA_DB_CQ_CI_MASK;
        switch (in.below(4)) {
        case 1:
            v |= OHCA_DB_CQ_ARM_NEXT;
            break;
        case 2:
            v |= OHCA_DB_CQ_ARM_SOLICITED;
            break;
        case 3:
            if (bad(in)) {
                v = in.u32();
            }
            break;
        default:
            break;
        }
        ohca_engine_db_write(d_.engine(), 0, OHCA_DB_CQ, OHCA_DB_VALUE(c.cqn, v), 8);
        d_.drain(4);
    }

    void eq(Input &in) {
        const uint32_t i = in.below(2);
        auto &slot = eqs_[i];
        if (slot.live && in.flag()) {
            ohca_handle_in hi{};
            hi.handle = slot.handle;
            if (d_.cmd_in(OHCA_CMD_DESTROY_EQ, hi) == OHCA_STATUS_OK) {
                slot.live = false;
            }
            return;
        }
        ohca_create_eq_in e{};
        const uint64_t base = kEqRings + 0x2000ull * i;
        e.base = bad(in) ? pick_addr(in, base, 16) : base;
        e.log_size = static_cast<uint8_t>(bad(in) ? in.u8() : in.range(2, 9));
        e.msix_vector = static_cast<uint8_t>(bad(in) ? in.u8() : in.range(2, OHCA_NUM_MSIX - 1));
        h_.fill(base, 0, 0x2000);
        ohca_create_out o{};
        if (create(OHCA_CMD_CREATE_EQ, &e, sizeof(e), o)) {
            slot = {true, o.handle};
            d_.wr(OHCA_REG_EQ_DB(o.handle), OHCA_EQ_DB_ARM);
        }
    }

    void hole(Input &in) {
        if (in.flag()) {
            h_.clear_hole();
            return;
        }
        static constexpr uint64_t where[] = {kCqRings, kSqRings, kRqRings, kData, kEqRings};
        const uint64_t lo = where[in.below(5)] + 0x100ull * in.below(256);
        const uint64_t hi = lo + in.range(1, 0x4000);
        h_.set_hole(lo, hi, in.flag());
    }

    // RESIZE_CQ into the CQ's own ring area (the poller follows it).
    void resize_cq(Input &in) {
        const uint32_t i = in.below(kSlots);
        Cq &slot = cqs_[i];
        ohca_resize_cq_in r{};
        r.cqn = bad(in) ? in.u32() : slot.cqn;
        r.log_size = static_cast<uint8_t>(bad(in) ? in.u8() : 8 - in.below(8));
        const uint64_t ring = kCqRings + 0x2000ull * i;
        r.pbl =
            pbl(in, ring, std::min<uint64_t>(32ull << std::min(r.log_size, uint8_t{16}), 0x2000));
        if (bad(in)) {
            r.rsvd[in.below(3)] = in.u8();
        }
        if (d_.cmd(OHCA_CMD_RESIZE_CQ, &r, sizeof(r), sizeof(ohca_resize_cq_out), kMailboxOut) ==
                OHCA_STATUS_OK &&
            slot.live && r.cqn == slot.cqn) {
            slot.log = r.log_size;
            slot.ci = 0;
        }
    }

    // MODIFY_CQ: moderation of a live CQ (or anything) with counts and
    // periods small enough that held events come and go during the run,
    // and now and then any mask, value or reserved field.
    void modify_cq(Input &in) {
        const Cq &slot = pick(cqs_, in);
        ohca_modify_cq_in m{};
        m.cqn = bad(in) ? in.u32() : slot.cqn;
        m.mask = bad(in) ? in.u32() : uint32_t{OHCA_MODIFY_CQ_MODERATION};
        m.cq_count = bad(in) ? in.u16() : static_cast<uint16_t>(in.below(5));
        m.cq_period = bad(in) ? in.u16() : static_cast<uint16_t>(in.below(3) * 50);
        m.rsvd = in.one_in(16) ? in.u32() : 0;
        (void)d_.cmd_in(OHCA_CMD_MODIFY_CQ, m);
    }

    // REREG_MR of any subset of translation, PD and access.
    // On-demand paging: ODP_MAP (identity translations of data memory, a
    // page outside guest memory, stray bits, FAIL) and ODP_UNMAP of a live
    // MR's key or anything, over ranges in or out of the MR.
    void odp(Input &in) {
        const Mr &slot = mrs_[in.below(kMrSlots)];
        const uint32_t key = bad(in) ? in.u32() : slot.key;
        const uint64_t va = bad(in) ? in.u64() : kData + (0x1000ull * in.below(kDataSize / 0x1000));
        if (in.one_in(3)) {
            ohca_odp_unmap_in u{};
            u.key = key;
            u.va = va;
            u.npages = bad(in) ? in.u64() : in.range(1, 64);
            u.rsvd = bad(in) ? in.u32() : 0;
            (void)d_.cmd_in(OHCA_CMD_ODP_UNMAP, u);
            return;
        }
        ohca_odp_map_in m{};
        m.key = key;
        m.va = va;
        m.flags = bad(in) ? in.u32() : (in.one_in(8) ? OHCA_ODP_MAP_FAIL : 0);
        m.npages = bad(in) ? in.u32() : in.range(1, 32);
        m.rsvd = bad(in) ? in.u32() : 0;
        std::array<uint8_t, sizeof(ohca_odp_map_in) + 8 * 64> buf{};
        const uint32_t n =
            (m.flags & OHCA_ODP_MAP_FAIL) != 0 ? 0 : std::min<uint32_t>(m.npages, 64);
        for (uint32_t i = 0; i < n; ++i) {
            uint64_t pte =
                (va + 0x1000ull * i) | OHCA_ODP_PTE_VALID | (in.one_in(4) ? 0 : OHCA_ODP_PTE_WRITE);
            if (bad(in)) {
                pte = in.one_in(2) ? in.u64() : pick_addr(in, va, 4096) | OHCA_ODP_PTE_VALID;
            }
            std::memcpy(buf.data() + sizeof(m) + 8ull * i, &pte, 8);
        }
        std::memcpy(buf.data(), &m, sizeof(m));
        const auto len =
            static_cast<uint16_t>(bad(in) ? in.below(buf.size()) : sizeof(m) + 8ull * n);
        (void)d_.cmd(OHCA_CMD_ODP_MAP, buf.data(), len, 0, 0);
    }

    void rereg_mr(Input &in) {
        Mr &slot = mrs_[in.below(kMrSlots)];
        ohca_rereg_mr_in m{};
        m.key = bad(in) ? in.u32() : slot.key;
        m.flags = bad(in) ? in.u32() : in.range(1, 7);
        if ((m.flags & OHCA_REREG_MR_PD) != 0 || bad(in)) {
            m.pdn = pd(in);
        }
        if ((m.flags & OHCA_REREG_MR_ACCESS) != 0 || bad(in)) {
            m.access = bad(in) ? in.u32() : OHCA_ACCESS_LOCAL_WRITE | (in.u32() & 0xe);
        }
        if ((m.flags & OHCA_REREG_MR_TRANSLATION) != 0 || bad(in)) {
            const uint64_t off = 0x1000ull * in.below(32) & (kDataSize - 1);
            m.iova = kData + off;
            m.length = bad(in) ? in.u64() : std::max<uint64_t>(1, kDataSize - off - in.below(256));
            m.pbl = pbl(in, m.iova, std::min<uint64_t>(m.length, kDataSize));
        }
        if (d_.cmd(OHCA_CMD_REREG_MR, &m, sizeof(m), sizeof(ohca_create_out), kMailboxOut) ==
                OHCA_STATUS_OK &&
            slot.live && m.key == slot.key && (m.flags & OHCA_REREG_MR_TRANSLATION) != 0) {
            slot.iova = m.iova;
            slot.len = m.length;
        }
    }

    // An XRC domain: a live one (as allocated, in order 1, 2, ...) or
    // anything.
    uint32_t xrcd(Input &in) { return bad(in) ? in.u32() : in.below(4); }

    // XRC objects: ALLOC/DEALLOC_XRCD, XRC SRQs (their rings in the RQ
    // area, WQEs from whatever is there) with their doorbell.
    void xrc_objects(Input &in) {
        switch (in.below(4)) {
        case 0: {
            ohca_create_out o{};
            (void)create(OHCA_CMD_ALLOC_XRCD, nullptr, 0, o);
            break;
        }
        case 1: {
            ohca_handle_in hi{};
            hi.handle = xrcd(in);
            hi.rsvd = bad(in) ? in.u32() : 0;
            (void)d_.cmd_in(OHCA_CMD_DEALLOC_XRCD, hi);
            break;
        }
        case 2: {
            ohca_create_srq_in s{};
            s.pdn = pd(in);
            s.type = bad(in) ? in.u8() : uint8_t{OHCA_SRQT_XRC};
            s.xrcdn = xrcd(in);
            s.cqn = cqn(in);
            s.log_size = static_cast<uint8_t>(bad(in) ? in.u8() : 1 + in.below(6));
            s.log_stride = static_cast<uint8_t>(bad(in) ? in.u8() : 6);
            s.limit = bad(in) ? in.u32() : 0;
            s.pbl = pbl(in, kRqRings + 0x1000ull * in.below(4), 0x1000, 1);
            // Half with a doorbell record: in a ring (its index whatever
            // the WQEs there hold), or anywhere when bad.
            if (in.one_in(2)) {
                s.db_record = bad(in) ? in.u64() : kRqRings + 8 * in.below(2048);
            }
            ohca_create_out o{};
            (void)create(OHCA_CMD_CREATE_SRQ, &s, sizeof(s), o);
            break;
        }
        default: {
            ohca_handle_in hi{};
            hi.handle = bad(in) ? in.u32() : in.below(4);
            if (in.one_in(3)) {
                (void)d_.cmd_in(OHCA_CMD_DESTROY_SRQ, hi);
            } else {
                ohca_engine_db_write(d_.engine(), 0, OHCA_DB_SRQ,
                                     OHCA_DB_VALUE(hi.handle, in.below(64)), 8);
            }
            break;
        }
        }
    }

    // Device memory: ALLOC_DM/FREE_DM with fuzzed fields, REG_DM_MR into an
    // MR slot (its key then serves SGEs and rkeys like any MR's), and
    // guest accesses of any width and offset to BAR2's window.
    void dm(Input &in) {
        uint32_t &h = dms_[in.below(kSlots)];
        switch (in.below(4)) {
        case 0: {
            ohca_alloc_dm_in a{};
            a.length = bad(in) ? in.u64() : in.range(1, 3 * OHCA_DM_CHUNK_SIZE);
            a.log_align = bad(in) ? in.u32() : in.below(OHCA_DM_CHUNK_SHIFT + 1);
            a.rsvd = bad(in) ? in.u32() : 0;
            if (d_.cmd(OHCA_CMD_ALLOC_DM, &a, sizeof(a), sizeof(ohca_alloc_dm_out), kMailboxOut) ==
                OHCA_STATUS_OK) {
                h = h_.get<ohca_alloc_dm_out>(kMailboxOut).handle;
            }
            break;
        }
        case 1: {
            ohca_handle_in f{};
            f.handle = bad(in) ? in.u32() : h;
            (void)d_.cmd_in(OHCA_CMD_FREE_DM, f);
            break;
        }
        case 2: {
            Mr &slot = mrs_[in.below(kMrSlots)];
            ohca_reg_dm_mr_in r{};
            r.pdn = pd(in);
            r.access = bad(in) ? in.u32()
                               : OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_WRITE |
                                     OHCA_ACCESS_REMOTE_READ | OHCA_ACCESS_REMOTE_ATOMIC;
            r.dm_handle = bad(in) ? in.u32() : h;
            r.offset = bad(in) ? in.u64() : in.below(64) * 8;
            r.length = bad(in) ? in.u64() : in.below(2 * OHCA_DM_CHUNK_SIZE);
            ohca_create_out o{};
            if (create(OHCA_CMD_REG_DM_MR, &r, sizeof(r), o)) {
                slot = {true, o.handle, 0, r.length, false, 0};
            }
            break;
        }
        default: {
            const unsigned int size = 1u << in.below(4);
            const uint64_t off = bad(in) ? in.u64() : in.below(OHCA_DM_SIZE + 64);
            if (in.flag()) {
                ohca_engine_dm_write(d_.engine(), off, in.u64(), bad(in) ? in.below(9) : size);
            } else {
                (void)ohca_engine_dm_read(d_.engine(), off, bad(in) ? in.below(9) : size);
            }
            break;
        }
        }
    }

    // Raw Ethernet: raw QPs (their WQEs come from post_send like any QP's),
    // CREATE_FLOW with a frame's own fields under a few masks or with
    // fuzzed bytes, DESTROY_FLOW, and frames from the wire for the flows.
    void raw_flows(Input &in) {
        std::array<uint8_t, 128> f{};
        const size_t len = in.below(f.size() + 1);
        in.bytes(f.data(), len);
        if (in.flag()) { // mostly IPv4 or IPv6 over UDP/TCP
            const bool v6 = in.flag();
            f[12] = v6 ? 0x86 : 0x08;
            f[13] = v6 ? 0xdd : 0x00;
            f[14] = v6 ? 0x60 : 0x45;
            f[v6 ? 20 : 23] = in.flag() ? 6 : 17;
            f[v6 ? 56 : 36] = 0x16; // never the RoCE port
        }
        const std::span<const uint8_t> frame(f.data(), len);
        uint32_t &h = flows_[in.below(kSlots)];
        switch (in.below(4)) {
        case 0:
            create_qp(in, -1, OHCA_QPT_RAW_ETH);
            break;
        case 1: {
            ohca_create_flow_in c{};
            const Qp *qp = live_qp(in);
            c.qpn = qp != nullptr && !bad(in) ? qp->qpn : in.u32();
            c.priority = in.u16();
            if (bad(in)) {
                in.bytes(&c, sizeof(c));
            } else {
                ohca_flow_spec key{};
                ohca::flow_key(frame, key);
                ohca_flow_spec &m = c.mask;
                switch (in.below(4)) {
                case 0: // every frame
                    break;
                case 1:
                    std::fill(std::begin(m.dmac), std::end(m.dmac), 0xff);
                    m.ether_type = 0xffff;
                    break;
                case 2:
                    m.ip_version = 0xff;
                    std::fill(std::begin(m.dst_ip) + (key.ip_version == 4 ? 12 : 0),
                              std::end(m.dst_ip), 0xff);
                    break;
                default:
                    m.ip_version = m.ip_proto = 0xff;
                    m.dst_port = m.src_port = 0xffff;
                    break;
                }
                auto *v = reinterpret_cast<uint8_t *>(&c.value);
                const auto *k = reinterpret_cast<const uint8_t *>(&key);
                const auto *mb = reinterpret_cast<const uint8_t *>(&m);
                for (size_t i = 0; i < sizeof(key); ++i) {
                    v[i] = k[i] & mb[i];
                }
            }
            ohca_create_out o{};
            if (create(OHCA_CMD_CREATE_FLOW, &c, sizeof(c), o)) {
                h = o.handle;
            }
            break;
        }
        case 2: {
            ohca_handle_in d{};
            d.handle = bad(in) ? in.u32() : h;
            (void)d_.cmd_in(OHCA_CMD_DESTROY_FLOW, d);
            break;
        }
        default:
            (void)ohca_engine_receive_frame(d_.engine(), frame.data(), frame.size());
            break;
        }
    }

    // Receive WQs (one RQ slot's page each), their doorbell and WQEs,
    // indirection tables of them, RSS QPs on the tables (kept as QPs, so
    // raw_flows steers frames to them), and their destruction in any order.
    void wq_objects(Input &in) {
        Wq &w = wqs_[in.below(kSlots)];
        uint32_t &t = tables_[in.below(kSlots)];
        const uint64_t ring = kRqRings + 0x1000ull * static_cast<uint64_t>(&w - wqs_.data());
        switch (in.below(7)) {
        case 0: {
            ohca_create_wq_in c{};
            c.pdn = pd(in);
            c.cqn = cqn(in);
            c.log_stride = static_cast<uint8_t>(bad(in) ? in.u8() : 6);
            c.log_size = static_cast<uint8_t>(bad(in) ? in.u8() : 1 + in.below(6));
            c.uar_index = bad(in) ? in.u32() : 0;
            c.pbl = pbl(
                in, ring,
                std::min<uint64_t>(uint64_t{1} << std::min(c.log_size + c.log_stride, 40), 0x1000));
            ohca_create_out o{};
            if (create(OHCA_CMD_CREATE_WQ, &c, sizeof(c), o)) {
                w = {o.handle, c.log_size, 0};
            }
            break;
        }
        case 1: {
            ohca_modify_wq_in m{};
            m.wqn = bad(in) ? in.u32() : w.wqn;
            m.state = static_cast<uint8_t>(bad(in) ? in.u8() : in.below(3));
            m.cur_state = static_cast<uint8_t>(in.flag() ? 0xff : in.below(4));
            if ((d_.cmd_in(OHCA_CMD_MODIFY_WQ, m) == OHCA_STATUS_OK) && m.state == OHCA_WQS_RESET) {
                w.pi = 0;
            }
            break;
        }
        case 2: {
            ohca_handle_in d{};
            d.handle = bad(in) ? in.u32() : in.flag() ? w.wqn : t;
            (void)d_.cmd_in(in.flag() ? OHCA_CMD_DESTROY_WQ : OHCA_CMD_DESTROY_RWQ_IND_TBL, d);
            break;
        }
        case 3: {
            ohca_create_rwq_ind_tbl_in c{};
            c.log_size = static_cast<uint8_t>(bad(in) ? in.u8() : in.below(4));
            for (uint32_t i = 0; i < (1u << std::min<uint8_t>(c.log_size, 8)); ++i) {
                c.wqn[i] = bad(in) ? in.u32() : wqs_[in.below(kSlots)].wqn;
            }
            ohca_create_out o{};
            if (create(OHCA_CMD_CREATE_RWQ_IND_TBL, &c, sizeof(c), o)) {
                t = o.handle;
            }
            break;
        }
        case 4: {
            ohca_create_rss_qp_in c{};
            c.pdn = pd(in);
            c.ind_tbl = bad(in) ? in.u32() : t;
            c.fields = bad(in) ? in.u32()
                       : in.flag()
                           ? uint32_t{OHCA_RSS_SRC_IPV4 | OHCA_RSS_DST_IPV4 | OHCA_RSS_SRC_PORT_UDP}
                           : uint32_t{OHCA_RSS_DST_IPV6 | OHCA_RSS_DST_PORT_TCP};
            c.hash_function = static_cast<uint8_t>(bad(in) ? in.u8() : OHCA_RSS_HASH_TOEPLITZ);
            in.bytes(c.key, sizeof(c.key));
            ohca_create_out o{};
            if (create(OHCA_CMD_CREATE_RSS_QP, &c, sizeof(c), o)) {
                Qp &q = qps_[in.below(kSlots)];
                q = {};
                q.live = true;
                q.qpn = o.handle;
            }
            break;
        }
        default: { // receive WQEs into the WQ's page, then its doorbell
            if (w.wqn == 0 || w.log > 6) {
                break;
            }
            const uint32_t size = 1u << w.log;
            for (uint32_t n = in.range(1, 4); n != 0; --n) {
                const uint64_t at = ring + uint64_t{w.pi & (size - 1)} * 64;
                ohca_recv_wqe r{};
                r.wr_id = 0x20000 + w.pi;
                r.num_sge = static_cast<uint8_t>(bad(in) ? in.u8() : in.range(1, 3));
                for (uint32_t i = 0; i < std::min<uint32_t>(r.num_sge, 3); ++i) {
                    h_.put(at + 16 + 16ull * i, sge(in));
                }
                h_.put(at, r);
                ++w.pi;
            }
            const uint32_t pi = bad(in) ? in.u32() : w.pi;
            ohca_engine_db_write(d_.engine(), 0, OHCA_DB_WQ, OHCA_DB_VALUE(w.wqn, pi), 8);
            break;
        }
        }
    }

    void misc(Input &in) {
        switch (in.below(13)) {
        case 11:
            wq_objects(in);
            break;
        case 10:
            modify_cq(in);
            break;
        case 9:
            odp(in);
            break;
        case 8:
            raw_flows(in);
            break;
        case 6:
            xrc_objects(in);
            break;
        case 7:
            dm(in);
            break;
        case 4:
            resize_cq(in);
            break;
        case 5:
            rereg_mr(in);
            break;
        case 0: { // a doorbell on a page or for a queue that is not ours
            const uint32_t page = in.below(4);
            const uint32_t offset = in.u16() & 0xff8;
            const uint64_t value = in.u64();
            ohca_engine_db_write(d_.engine(), page, offset, value, in.one_in(2) ? 8 : 4);
            break;
        }
        case 1:
            ohca_engine_set_link(d_.engine(), in.u8() < 0xf0);
            break;
        case 2: { // QUERY_STATS and QUERY_QP of anything
            (void)query(in.one_in(2) ? in.u32() : in.below(8));
            break;
        }
        case 3: { // ATTACH/DETACH_MCAST: a few groups, our unicast GID, anything
            ohca_mcast_in m{};
            const Qp *qp = live_qp(in);
            m.qpn = qp != nullptr && !in.one_in(8) ? qp->qpn : in.u32();
            m.rsvd = in.one_in(16) ? in.u32() : 0;
            if (in.one_in(8)) {
                std::copy(kOurGid.begin(), kOurGid.end(), m.gid);
            } else if (in.one_in(8)) {
                in.bytes(m.gid, sizeof(m.gid));
            } else {
                m.gid[10] = m.gid[11] = 0xff;
                m.gid[12] = 239;
                m.gid[15] = static_cast<uint8_t>(in.below(4));
            }
            (void)d_.cmd_in(in.flag() ? OHCA_CMD_ATTACH_MCAST : OHCA_CMD_DETACH_MCAST, m);
            break;
        }
        default: // a reset: every object is gone; bring the device back
            if (verbose()) {
                std::fprintf(stderr, "reset\n");
            }
            if (in.flag()) {
                ohca_engine_reset(d_.engine());
            }
            if (d_.bring_up(4, 10)) {
                setup();
            }
            pds_ = {};
            dms_ = {};
            flows_ = {};
            wqs_ = {};
            tables_ = {};
            mrs_ = {};
            cqs_ = {};
            qps_ = {};
            eqs_ = {};
            break;
        }
    }

    Host &h_;
    Driver &d_;
    std::array<Obj, kSlots> pds_{};
    std::array<Mr, kMrSlots> mrs_{};
    std::array<uint32_t, kSlots> dms_{};   // ALLOC_DM handles
    std::array<uint32_t, kSlots> flows_{}; // CREATE_FLOW handles
    struct Wq {
        uint32_t wqn = 0;
        unsigned int log = 0;
        uint32_t pi = 0;
    };
    std::array<Wq, kSlots> wqs_{};
    std::array<uint32_t, kSlots> tables_{}; // CREATE_RWQ_IND_TBL handles
    std::array<Cq, kSlots> cqs_{};
    std::array<Qp, kSlots> qps_{};
    std::array<Obj, 2> eqs_{};
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Input in(data, size);
    Host host;
    Driver d(host);
    if (!d.bring_up(4, 10)) {
        fail("bring-up failed");
    }
    Rdma r(host, d);
    r.setup();
    // Framing: every operation is [code, le16 length, length bytes of
    // arguments]; arguments read past their end are zeros (the well-formed
    // defaults), so mutations stay aligned and "code, 0" is a valid step.
    if (in.u8() < 0x80) {
        const auto args = in.take(in.u16());
        Input sub(args.data(), args.size());
        r.quick_start(sub);
    }
    for (unsigned int ops = 0; !in.empty() && ops < 200; ++ops) {
        const uint8_t code = in.u8();
        const auto args = in.take(in.u16());
        Input sub(args.data(), args.size());
        r.op(code, sub);
    }
    d.check_recovers();
    return 0;
}
