// SPDX-License-Identifier: GPL-2.0-or-later
// The UD transport (IBTA 9.8, annex A17): BTH + DETH [+ ImmDt] SEND-only
// packets. A send WQE completes once its packet is on the wire (or looped
// back); a received packet needs a posted receive WQE and the QP's Q_Key,
// otherwise it is dropped and counted. The receive buffer gets the 40-byte
// GRH first. Work per packet and per WQE is bounded by the MTU.
#include "transports/ud.hpp"
#include "objects/db_record.hpp"

#include "device/gid_table.hpp"
#include "link/byte_order.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace ohca {

namespace {

constexpr uint8_t kUdSendFlags =
    OHCA_WQE_SIGNALED | OHCA_WQE_SOLICITED | OHCA_WQE_FENCE | OHCA_WQE_INLINE;

uint32_t imm_from_wqe(uint32_t le_field) {
    // The WQE holds the immediate as the wire bytes; read them in order.
    uint8_t b[4];
    std::memcpy(b, &le_field, 4);
    return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}

std::array<uint8_t, 16> dgid_of(const ohca_av &av) {
    std::array<uint8_t, 16> g{};
    std::copy(std::begin(av.dgid), std::end(av.dgid), g.begin());
    return g;
}

} // namespace

std::optional<size_t> av_bad_field(const GidTable &gids, const ohca_av &av) {
    const auto &gid = gids.get(av.sgid_index);
    if (!gid) {
        return offsetof(ohca_av, sgid_index);
    }
    const bool v4 = av.network_type == OHCA_NET_IPV4;
    if ((av.network_type != OHCA_NET_IPV4 && av.network_type != OHCA_NET_IPV6) ||
        v4 != (gid->type == OHCA_GID_TYPE_ROCE_V2_IPV4)) {
        return offsetof(ohca_av, network_type);
    }
    if (v4 != gid_is_ipv4_mapped(dgid_of(av))) {
        return offsetof(ohca_av, dgid);
    }
    const uint16_t vlan = le(av.vlan_id);
    if (vlan != kNoVlan && vlan > 4095) {
        return offsetof(ohca_av, vlan_id);
    }
    if (le(av.flow_label) > 0xfffff) {
        return offsetof(ohca_av, flow_label);
    }
    return std::nullopt;
}

uint32_t UdTransport::mtu_bytes(uint32_t eth_mtu) {
    for (uint32_t m = 4096; m > 256; m >>= 1) {
        if (m + OHCA_ROCE_HDR_OVERHEAD <= eth_mtu) {
            return m;
        }
    }
    return 256;
}

void UdTransport::visit(Qp &qp, unsigned int &budget) {
    if (svc_.datagram_stopped(qp, budget)) {
        return;
    }
    while (budget > 0 && qp.state == OHCA_QPS_RTS && !qp.odp_wait && qp.sq_fetched != qp.sq.pi) {
        if (!send_one(qp)) {
            break;
        }
        --budget;
    }
}

// Takes the WQE at sq_fetched, sends its packet and completes it. False
// when it must wait (loopback backlog full); the WQE stays posted.
bool UdTransport::send_one(Qp &qp) {
    SendWr wr;
    wr.index = qp.sq_fetched;
    const uint64_t base = qp.sq.offset(wr.index);
    const uint32_t stride = 1u << qp.sq.log_stride;
    ohca_send_wqe w{};
    ohca_ud_seg seg{};
    std::vector<uint8_t> payload;
    PacketPath path;
    uint8_t status = OHCA_CQE_SUCCESS;
    uint8_t verr = OHCA_VERR_NONE;
    auto fail = [&](uint8_t st, uint8_t ve) {
        if (status == OHCA_CQE_SUCCESS) {
            status = st;
            verr = ve;
        }
    };
    if (!qp.sq.ring.read(svc_.host(), base, &w, sizeof(w)) ||
        !qp.sq.ring.read(svc_.host(), base + sizeof(w), &seg, sizeof(seg))) {
        fail(OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_DMA);
        svc_.post_event(OHCA_EQE_QP_EVENT, OHCA_QP_EV_FATAL, qp.qpn, 0, 0);
    }
    wr.wr_id = le(w.wr_id);
    wr.opcode = w.opcode;
    wr.flags = w.flags;
    svc_.host().trace(OHCA_ENGINE_TRACE_WQE, qp.qpn, wr.index, wr.opcode);
    const uint32_t mtu = mtu_bytes(svc_.port_mtu());
    const bool inl = (w.flags & OHCA_WQE_INLINE) != 0;
    if (status != OHCA_CQE_SUCCESS) {
        // nothing more to check
    } else if ((w.opcode != OHCA_WR_SEND && w.opcode != OHCA_WR_SEND_IMM) ||
               (w.flags & ~kUdSendFlags) != 0 || le(seg.remote_qpn) > kPsnMask) {
        fail(OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_WQE);
    } else if (!svc_.av_path(qp, seg.av, path)) {
        fail(OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_AV);
    } else if (inl) {
        const uint32_t len = le(w.inline_len);
        if (len > qp.max_inline || OHCA_UD_WQE_HDR_LEN + len > stride) {
            fail(OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_WQE);
        } else if (len > mtu) {
            fail(OHCA_CQE_LOC_LEN_ERR, OHCA_VERR_MSG_TOO_LONG);
        } else {
            payload.resize(len);
            if (!qp.sq.ring.read(svc_.host(), base + OHCA_UD_WQE_HDR_LEN, payload.data(), len)) {
                fail(OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_DMA);
            }
        }
    } else if (w.num_sge > DeviceLimits::max_sge ||
               OHCA_UD_WQE_HDR_LEN + size_t{w.num_sge} * sizeof(ohca_sge) > stride) {
        fail(OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_WQE);
    } else {
        std::array<ohca_sge, DeviceLimits::max_sge> raw{};
        uint64_t total = 0;
        if (!qp.sq.ring.read(svc_.host(), base + OHCA_UD_WQE_HDR_LEN, raw.data(),
                             size_t{w.num_sge} * sizeof(ohca_sge))) {
            fail(OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_DMA);
        }
        for (unsigned int i = 0; i < w.num_sge; ++i) {
            total += le(raw[i].length);
        }
        if (status == OHCA_CQE_SUCCESS && total > mtu) {
            fail(OHCA_CQE_LOC_LEN_ERR, OHCA_VERR_MSG_TOO_LONG);
        }
        // Bounded by the MTU checked above.
        for (unsigned int i = 0; i < w.num_sge && status == OHCA_CQE_SUCCESS; ++i) {
            const Sge s{le(raw[i].addr), le(raw[i].length), le(raw[i].lkey)};
            if (s.length == 0) {
                continue;
            }
            const KeyResult k = svc_.check_key(s.lkey, s.addr, s.length, 0, qp.pdn);
            if (k.verr != OHCA_VERR_NONE) {
                fail(OHCA_CQE_LOC_PROT_ERR, k.verr);
                break;
            }
            // On-demand paging: the WQE waits, still posted, for the fault
            // (odp.cpp wakes the QP; the timer retries one not posted).
            const OdpState st = svc_.odp_touch(*k.mr, s.addr, s.length, false);
            if (st == OdpState::Pending) {
                svc_.odp_wait(qp);
                svc_.set_deadline(qp, svc_.host().now_ns() + DeviceLimits::odp_retry_ns);
                return false;
            }
            if (st == OdpState::Failed) {
                fail(OHCA_CQE_LOC_PROT_ERR, OHCA_VERR_ODP_FAULT);
                break;
            }
            const size_t at = payload.size();
            payload.resize(at + s.length);
            if (!svc_.mr_read(*k.mr, s.addr, payload.data() + at, s.length)) {
                fail(OHCA_CQE_LOC_PROT_ERR, OHCA_VERR_DMA);
            }
        }
    }
    if (status != OHCA_CQE_SUCCESS) {
        // A local error stops the send queue (IBTA 10.3.1 SQ Error);
        // receives continue.
        svc_.complete_send(qp, wr, status, verr);
        ++qp.sq_fetched;
        qp.state = OHCA_QPS_SQE;
        svc_.mark_ready(qp); // flushes the rest
        return true;
    }
    if (!svc_.tx_room_to(path)) {
        svc_.mark_ready(qp); // the loopback backlog drains first
        return false;
    }

    const uint32_t dqpn = le(seg.remote_qpn);
    // One source port per QP, whatever the destination (as rxe does): a
    // port from both QP numbers would be 0xc000 for every pair of equal
    // QPNs (QP 1 to QP 1 among them), so unrelated flows would share it.
    path.udp_src_port = static_cast<uint16_t>(0xc000 | (qp.qpn & 0x3fff));

    PacketFields f;
    f.bth.opcode = w.opcode == OHCA_WR_SEND_IMM ? ud::kSendOnlyImm : ud::kSendOnly;
    f.bth.solicited = (w.flags & OHCA_WQE_SOLICITED) != 0;
    f.bth.dest_qp = dqpn;
    f.bth.pkey = svc_.pkey_of(qp, le(seg.pkey_index));
    f.bth.psn = qp.next_psn;
    qp.next_psn = psn_add(qp.next_psn, 1);
    const uint32_t qkey = le(seg.qkey);
    // A controlled Q_Key is never taken from the WQE (IBTA 10.2.5).
    f.deth = Deth{(qkey & OHCA_QKEY_CONTROLLED) != 0 ? qp.attrs.qkey : qkey, qp.qpn};
    if (w.opcode == OHCA_WR_SEND_IMM) {
        f.imm = imm_from_wqe(w.imm_data);
    }
    svc_.emit_path(path, f, payload);
    wr.length = static_cast<uint32_t>(payload.size());
    svc_.complete_send(qp, wr, OHCA_CQE_SUCCESS, OHCA_VERR_NONE);
    ++qp.sq_fetched;
    return true;
}

// Reads the receive WQE at rq.ci. On a bad WQE it completes it in error,
// moves the QP to ERR and returns false.
bool UdTransport::load_recv(Qp &qp, uint64_t &wr_id, std::vector<Sge> &sges) {
    const uint64_t base = qp.rq.offset(qp.rq.ci);
    const uint32_t stride = 1u << qp.rq.log_stride;
    ohca_recv_wqe w{};
    std::array<ohca_sge, DeviceLimits::max_sge> raw{};
    uint8_t verr = OHCA_VERR_NONE;
    if (!qp.rq.ring.read(svc_.host(), base, &w, sizeof(w))) {
        verr = OHCA_VERR_DMA;
    } else if (w.num_sge > DeviceLimits::max_sge ||
               sizeof(w) + size_t{w.num_sge} * sizeof(ohca_sge) > stride) {
        verr = OHCA_VERR_BAD_WQE;
    } else if (!qp.rq.ring.read(svc_.host(), base + sizeof(w), raw.data(),
                                size_t{w.num_sge} * sizeof(ohca_sge))) {
        verr = OHCA_VERR_DMA;
    }
    wr_id = le(w.wr_id);
    if (verr != OHCA_VERR_NONE) {
        svc_.complete_recv(qp, wr_id, OHCA_CQE_RECV, 0, std::nullopt, OHCA_CQE_LOC_QP_OP_ERR, verr,
                           false);
        svc_.post_event(OHCA_EQE_QP_EVENT, OHCA_QP_EV_FATAL, qp.qpn, 0, 0);
        svc_.qp_to_error(qp);
        return false;
    }
    sges.clear();
    for (unsigned int i = 0; i < w.num_sge; ++i) {
        sges.push_back(Sge{le(raw[i].addr), le(raw[i].length), le(raw[i].lkey)});
    }
    return true;
}

void UdTransport::drop(uint64_t RoceCounters::*counter) {
    ++(svc_.counters().*counter);
    svc_.count_rx_dropped();
}

void UdTransport::rx(Qp &qp, const ParsedPacket &pkt) {
    // Any source; a UD QP takes UD opcodes only.
    if (!is_ud_opcode(pkt.fields.bth.opcode)) {
        drop(&RoceCounters::rx_bad_opcode);
        return;
    }
    receive(qp, pkt);
}

void UdTransport::receive(Qp &qp, const ParsedPacket &pkt) {
    if (qp.state != OHCA_QPS_RTR && qp.state != OHCA_QPS_RTS && qp.state != OHCA_QPS_SQD &&
        qp.state != OHCA_QPS_SQE) {
        drop(&RoceCounters::rx_no_qp);
        return;
    }
    // QP0 checks no Q_Key (IBTA 14.2.1).
    if (qp.type != OHCA_QPT_SMI && pkt.fields.deth->qkey != qp.attrs.qkey) {
        drop(&RoceCounters::ud_rx_bad_qkey);
        return;
    }
    if (!svc_.records().rq_has_wqe(qp.rq)) {
        // No RNR for UD: the packet is lost.
        drop(&RoceCounters::ud_rx_no_wqe);
        return;
    }
    ++svc_.counters().rx_packets;
    uint64_t wr_id = 0;
    std::vector<Sge> sges;
    if (!load_recv(qp, wr_id, sges)) {
        return;
    }
    // GRH: the IPv6 header, or 20 zero bytes and the IPv4 header.
    std::array<uint8_t, OHCA_UD_GRH_LEN> grh{};
    std::copy(pkt.ip_header.begin(), pkt.ip_header.end(),
              grh.end() - static_cast<std::ptrdiff_t>(pkt.ip_header.size()));
    const size_t len = OHCA_UD_GRH_LEN + pkt.payload.size();
    auto byte_at = [&](size_t i) {
        return i < OHCA_UD_GRH_LEN ? grh.data() + i : pkt.payload.data() + (i - OHCA_UD_GRH_LEN);
    };
    size_t done = 0;
    for (const Sge &s : sges) {
        if (done == len) {
            break;
        }
        size_t n = std::min<size_t>(s.length, len - done);
        if (n == 0) {
            continue;
        }
        const KeyResult k = svc_.check_key(s.lkey, s.addr, n, OHCA_ACCESS_LOCAL_WRITE, qp.pdn);
        if (k.mr == nullptr) {
            svc_.complete_recv(qp, wr_id, OHCA_CQE_RECV, 0, std::nullopt, OHCA_CQE_LOC_PROT_ERR,
                               k.verr, false);
            svc_.qp_to_error(qp);
            return;
        }
        // Two pieces at most: the GRH part and the payload part.
        uint64_t va = s.addr;
        while (n > 0) {
            const size_t piece =
                done < OHCA_UD_GRH_LEN ? std::min<size_t>(n, OHCA_UD_GRH_LEN - done) : n;
            if (!svc_.mr_write(*k.mr, va, byte_at(done), piece)) {
                svc_.complete_recv(qp, wr_id, OHCA_CQE_RECV, 0, std::nullopt, OHCA_CQE_LOC_PROT_ERR,
                                   OHCA_VERR_DMA, false);
                svc_.qp_to_error(qp);
                return;
            }
            va += piece;
            done += piece;
            n -= piece;
        }
    }
    ohca_cqe cqe{};
    cqe.wr_id = le(wr_id);
    cqe.qpn = le(qp.qpn);
    cqe.opcode = OHCA_CQE_RECV;
    cqe.wqe_index = le(static_cast<uint16_t>(qp.rq.ci));
    if (done != len) {
        // Too small a buffer: this WQE completes in error, the QP goes on
        // (a remote sender must not be able to stop it).
        cqe.status = OHCA_CQE_LOC_LEN_ERR;
        cqe.vendor_err = OHCA_VERR_RECV_TOO_SMALL;
    } else {
        cqe.byte_len = le(static_cast<uint32_t>(len));
        cqe.src_qp = le(pkt.fields.deth->src_qp);
        cqe.flags = static_cast<uint8_t>(OHCA_CQE_F_GRH | (pkt.ipv6 ? 0 : OHCA_CQE_F_IPV4));
        cqe.sl = pkt.vlan_pcp;
        if (pkt.is_ib) {
            // Where it came from, as the LRH says (ohca_queue.h).
            cqe.flags = pkt.ib.grh ? uint8_t{OHCA_CQE_F_GRH} : uint8_t{0};
            cqe.sl = pkt.ib.sl;
            cqe.qpn = le(qp.qpn | (uint32_t{pkt.ib.slid} >> 8) << 24);
            cqe.vendor_err = static_cast<uint8_t>(pkt.ib.slid);
            cqe.src_qp = le(pkt.fields.deth->src_qp | uint32_t{pkt.ib.path_bits & 0x7fu} << 24);
        }
        if (pkt.fields.imm) {
            const uint32_t be = byteswap(*pkt.fields.imm); // wire order in memory
            std::memcpy(&cqe.imm_data, &be, sizeof(be));
            cqe.flags |= OHCA_CQE_F_IMM;
        }
    }
    ++qp.rq.ci;
    (void)svc_.write_cqe(qp.recv_cqn, cqe, pkt.fields.bth.solicited);
}

} // namespace ohca
