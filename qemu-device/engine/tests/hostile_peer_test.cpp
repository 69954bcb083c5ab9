// SPDX-License-Identifier: GPL-2.0-or-later
// A hostile peer on the wire: 10^5 crafted RoCE frames with a valid ICRC
// against a device, per kind of attack. What the device keeps (heap), sends
// (frames) and posts on EQ 0 must stay bounded whatever the peer does; the
// same kinds run between two VMs in test_rc.py::test_rc_two_vms with
// tests/vm/guest/ohca_hostile_peer.py.
#include "device/device.hpp"
#include "link/roce_packet.hpp"
#include "link/roce_v2.hpp"
#include "rdma_node.hpp"

#include <gtest/gtest.h>

#include <malloc.h>

#include <random>

namespace ohca::test {
namespace {

constexpr int kActions = 100000;
constexpr int kBatch = 64; // frames between two runs of the device's work loop
constexpr uint32_t kPeerQpn = 0xabc;
constexpr uint32_t kAccess =
    OHCA_ACCESS_LOCAL_WRITE | OHCA_ACCESS_REMOTE_WRITE | OHCA_ACCESS_REMOTE_READ;

enum class Attack {
    ReadFlood,     // in-sequence READ requests
    DupFlood,      // duplicates of executed requests
    DupBehindRead, // duplicates while a long READ response is being sent
    SpoofQpn,      // requests to random QP numbers
    SpoofPsn,      // requests far ahead of the expected PSN
    SpoofGid,      // the right QP and PSN from another source address
    Oversize,      // 9000-byte and 64 KiB frames to UDP 4791
    BadOpcode,     // reserved opcodes, unsolicited ACKs and READ responses
    OutOfOrder,    // MIDDLE/LAST packets without a FIRST, at the expected PSN
};

const char *name(Attack a) {
    switch (a) {
    case Attack::ReadFlood:
        return "ReadFlood";
    case Attack::DupFlood:
        return "DupFlood";
    case Attack::DupBehindRead:
        return "DupBehindRead";
    case Attack::SpoofQpn:
        return "SpoofQpn";
    case Attack::SpoofPsn:
        return "SpoofPsn";
    case Attack::SpoofGid:
        return "SpoofGid";
    case Attack::Oversize:
        return "Oversize";
    case Attack::BadOpcode:
        return "BadOpcode";
    case Attack::OutOfOrder:
        return "OutOfOrder";
    }
    return "?";
}

// The victim: a device with an RC QP (in RTS) that takes the peer for its
// partner, a 1 MiB region with remote read and write, receive WQEs posted.
struct Victim {
    RdmaNode n{1};
    RdmaNode peer_id{2}; // only its GID and MAC: the frames are crafted here
    Side s;
    uint32_t psn = 0; // the responder's expected PSN

    Victim() {
        s = make_side(n, 1 << 20, 8, [](size_t k) { return static_cast<uint8_t>(k); });
        n.connect(s.qp, kPeerQpn, peer_id, 3 /* 1024 */, 14, 7, 7, kAccess, 1);
        psn = n.query(s.qp.qpn).rq_psn;
        for (int i = 0; i < 64; ++i) {
            n.post_recv(s.qp, static_cast<uint64_t>(i), {{s.buf, 4096, s.key}});
        }
        (void)n.events();
    }

    PacketPath path(bool from_peer = true) const {
        PacketPath p;
        std::copy(peer_id.mac.begin(), peer_id.mac.end(), p.smac.begin());
        std::copy(n.mac.begin(), n.mac.end(), p.dmac.begin());
        p.sgid = peer_id.gid;
        if (!from_peer) {
            p.sgid[15] ^= 0x40;
        }
        p.dgid = n.gid;
        return p;
    }

    std::vector<uint8_t> packet(uint8_t op, uint32_t qpn, uint32_t at, std::optional<Reth> reth,
                                std::span<const uint8_t> payload = {}, bool from_peer = true) {
        PacketFields f;
        f.bth.opcode = op;
        f.bth.dest_qp = qpn;
        f.bth.psn = at & kPsnMask;
        f.bth.ack_req = true;
        f.reth = reth;
        if (op == rc::kAck || op == rc::kReadRespOnly || op == rc::kReadRespFirst ||
            op == rc::kReadRespLast) {
            f.aeth = Aeth{0, 0};
        }
        return build_roce_frame(path(from_peer), f, payload);
    }
};

struct Outcome {
    size_t heap_growth = 0;
    size_t frames_sent = 0;
    size_t eq0_events = 0;
    std::remove_cvref_t<decltype(device_of(nullptr).roce_counters())> roce{};
    uint8_t qp_state = 0;
};

Outcome attack(Attack kind) {
    Victim v;
    std::mt19937 rng(static_cast<unsigned int>(kind) + 1);
    const std::vector<uint8_t> small(16, 0x5a);
    const std::vector<uint8_t> mtu(1024, 0x6b);
    if (kind == Attack::DupBehindRead) {
        // One long READ whose responses (1024 packets) drain slowly.
        auto f = v.packet(rc::kReadRequest, v.s.qp.qpn, v.psn, Reth{v.s.buf, v.s.key, 1 << 20});
        ohca_engine_receive_frame(v.n.e, f.data(), f.size());
        v.psn = psn_add(v.psn, 1024);
    }
    // Frames that do not change, built once (the CRC of 64 KiB is slow).
    std::vector<std::vector<uint8_t>> oversize, out_of_order;
    if (kind == Attack::Oversize) {
        for (size_t len : {size_t{9000 - 60}, size_t{65000}}) {
            const std::vector<uint8_t> big(len, 0xa5);
            oversize.push_back(v.packet(rc::kSendOnly, v.s.qp.qpn, v.psn, std::nullopt, big));
        }
    }
    if (kind == Attack::OutOfOrder) {
        for (uint8_t op : {rc::kSendMiddle, rc::kSendLast, rc::kWriteMiddle, rc::kWriteLast}) {
            out_of_order.push_back(v.packet(op, v.s.qp.qpn, v.psn, std::nullopt, mtu));
        }
    }
    const size_t heap0 = mallinfo2().uordblks;
    Outcome out;
    for (int done = 0; done < kActions;) {
        for (int k = 0; k < kBatch && done < kActions; ++k, ++done) {
            std::vector<uint8_t> f;
            const uint32_t qpn = v.s.qp.qpn;
            switch (kind) {
            case Attack::ReadFlood:
                f = v.packet(rc::kReadRequest, qpn, v.psn,
                             Reth{v.s.buf + rng() % 4096, v.s.key, 8});
                v.psn = psn_add(v.psn, 1);
                break;
            case Attack::DupFlood:
            case Attack::DupBehindRead:
                f = v.packet(rc::kSendOnly, qpn, v.psn - 1 - rng() % 1000, std::nullopt, small);
                break;
            case Attack::SpoofQpn:
                f = v.packet(rc::kReadRequest, rng() & kPsnMask, v.psn, Reth{v.s.buf, v.s.key, 8});
                break;
            case Attack::SpoofPsn:
                f = v.packet(rc::kSendOnly, qpn, v.psn + 1 + rng() % (1 << 22), std::nullopt,
                             small);
                break;
            case Attack::SpoofGid:
                f = v.packet(rc::kReadRequest, qpn, v.psn, Reth{v.s.buf, v.s.key, 8}, {}, false);
                break;
            case Attack::Oversize:
                f = oversize[done % 2];
                break;
            case Attack::BadOpcode: {
                static constexpr uint8_t ops[] = {0x12, 0x13, 0x1f,     0x40,
                                                  0x64, 0xff, rc::kAck, rc::kReadRespOnly};
                const uint8_t op = ops[rng() % std::size(ops)];
                f = v.packet(op, qpn, rng() & kPsnMask, std::nullopt,
                             op == rc::kReadRespOnly ? std::span<const uint8_t>(small)
                                                     : std::span<const uint8_t>());
                break;
            }
            case Attack::OutOfOrder:
                f = out_of_order[rng() % out_of_order.size()];
                break;
            }
            (void)ohca_engine_receive_frame(v.n.e, f.data(), f.size());
        }
        v.n.process();
        out.frames_sent += v.n.host.wire.size();
        v.n.host.wire.clear();
        out.eq0_events += v.n.events().size();
    }
    v.n.process();
    out.frames_sent += v.n.host.wire.size();
    out.heap_growth = mallinfo2().uordblks > heap0 ? mallinfo2().uordblks - heap0 : 0;
    out.roce = device_of(v.n.e).roce_counters();
    out.qp_state = v.n.query(v.s.qp.qpn).qp_state;
    EXPECT_EQ(ohca_engine_reg_read(v.n.e, OHCA_REG_DEV_STATUS, 4), uint32_t{OHCA_DEV_STATUS_READY});
    return out;
}

class HostilePeerTest : public ::testing::TestWithParam<Attack> {};

// Bounds that hold for every kind: no heap growth beyond a few MB (the
// backlog and one QP's worth of state), at most one frame sent per frame
// received (plus one READ's responses), at most a handful of EQ 0 events.
TEST_P(HostilePeerTest, StaysBounded) {
    const Attack kind = GetParam();
    const Outcome o = attack(kind);
    RecordProperty("heap_growth", static_cast<int>(o.heap_growth));
    RecordProperty("frames_sent", static_cast<int>(o.frames_sent));
    std::printf("%s: heap +%zu bytes (%.2f per action), %zu frames sent, %zu EQ 0 events\n",
                name(kind), o.heap_growth, static_cast<double>(o.heap_growth) / kActions,
                o.frames_sent, o.eq0_events);
    EXPECT_LT(o.heap_growth, size_t{8} << 20);
    EXPECT_LE(o.frames_sent, size_t{kActions} + 1024);
    EXPECT_LE(o.eq0_events, 2u);
    switch (kind) {
    case Attack::SpoofQpn:
    case Attack::SpoofGid:
        EXPECT_EQ(o.frames_sent, 0u);
        EXPECT_GE(o.roce.rx_no_qp, uint64_t{kActions} * 9 / 10);
        EXPECT_EQ(o.qp_state, OHCA_QPS_RTS);
        EXPECT_EQ(o.eq0_events, 0u);
        break;
    case Attack::SpoofPsn:
        // One NAK per gap, however many packets arrive ahead.
        EXPECT_EQ(o.roce.seq_naks_sent, 1u);
        EXPECT_EQ(o.frames_sent, 1u);
        EXPECT_EQ(o.qp_state, OHCA_QPS_RTS);
        EXPECT_EQ(o.eq0_events, 0u);
        break;
    case Attack::Oversize:
        EXPECT_EQ(o.roce.rx_malformed, uint64_t{kActions});
        EXPECT_EQ(o.frames_sent, 0u);
        break;
    case Attack::BadOpcode:
        EXPECT_EQ(o.qp_state, OHCA_QPS_RTS);
        EXPECT_EQ(o.frames_sent, 0u);
        break;
    case Attack::OutOfOrder:
        // NAK invalid request once; the QP is in error and drops the rest.
        EXPECT_EQ(o.roce.error_naks_sent, 1u);
        EXPECT_EQ(o.qp_state, OHCA_QPS_ERR);
        EXPECT_EQ(o.frames_sent, 1u);
        break;
    default:
        break;
    }
}

INSTANTIATE_TEST_SUITE_P(Attacks, HostilePeerTest,
                         ::testing::Values(Attack::ReadFlood, Attack::DupFlood,
                                           Attack::DupBehindRead, Attack::SpoofQpn,
                                           Attack::SpoofPsn, Attack::SpoofGid, Attack::Oversize,
                                           Attack::BadOpcode, Attack::OutOfOrder),
                         [](const auto &info) { return std::string(name(info.param)); });

} // namespace
} // namespace ohca::test
