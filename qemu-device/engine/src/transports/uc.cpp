// SPDX-License-Identifier: GPL-2.0-or-later
// The UC transport (uc.hpp). Requester: the SQ's WQEs one at a time, each
// cut into path-MTU packets with consecutive PSNs; the WQE completes when
// its last packet has gone. Responder: packets in PSN order. A packet whose
// PSN is not the expected one ends the message in progress (nothing of it
// completes; a receive WQE it was filling is used again by the next SEND,
// data a WRITE already placed stays) and is dropped unless it starts a new
// message, in which case the responder takes it and expects the PSNs after
// it (IBTA 9.7.5: UC has no NAKs and no retries; a lost packet costs its
// message only). Remote access violations and SENDs without a receive WQE
// are dropped the same way: nothing is reported to the requester. Work per
// packet is bounded by the MTU; nothing is allocated per packet once the
// QP's one WQE copy has grown.
#include "transports/uc.hpp"
#include "objects/db_record.hpp"

#include "transports/opcode_seq.hpp"

#include "device/limits.hpp"
#include "link/byte_order.hpp"
#include "objects/srq.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace ohca {

namespace {

constexpr uint8_t kFlagsKnown =
    OHCA_WQE_SIGNALED | OHCA_WQE_SOLICITED | OHCA_WQE_FENCE | OHCA_WQE_INLINE;

uint32_t wire_imm(uint32_t le_field) {
    uint8_t b[4];
    std::memcpy(b, &le_field, 4);
    return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}

bool is_write(uint8_t op) {
    return op == OHCA_WR_RDMA_WRITE || op == OHCA_WR_RDMA_WRITE_IMM;
}
bool has_imm(uint8_t op) {
    return op == OHCA_WR_RDMA_WRITE_IMM || op == OHCA_WR_SEND_IMM;
}

} // namespace

// ---- requester ----------------------------------------------------------------

void UcTransport::visit(Qp &qp, unsigned int &quantum) {
    if (qp.state == OHCA_QPS_ERR) {
        svc_.flush(qp, quantum);
        return;
    }
    process_sq(qp, quantum);
}

void UcTransport::rx(Qp &qp, const ParsedPacket &pkt) {
    if (connected_accepts(svc_, qp, pkt)) {
        receive(qp, pkt); // counts its packets itself
    }
}

void UcTransport::process_sq(Qp &qp, unsigned int &quantum) {
    while (quantum > 0 && (qp.state == OHCA_QPS_RTS || qp.state == OHCA_QPS_SQD)) {
        if (qp.inflight.empty()) {
            // SQD: the message in progress is finished, no new one starts.
            if (qp.state != OHCA_QPS_RTS || qp.sq_draining || qp.sq_fetched == qp.sq.pi ||
                !fetch(qp)) {
                break;
            }
            --quantum;
            continue;
        }
        if (!svc_.tx_room(qp)) {
            svc_.mark_ready(qp); // the loopback backlog drains first
            break;
        }
        if (!send_packet(qp)) {
            break;
        }
        --quantum;
    }
    if (qp.state == OHCA_QPS_SQD && qp.sq_draining && qp.inflight.empty()) {
        qp.sq_draining = false;
        svc_.post_event(OHCA_EQE_QP_EVENT, OHCA_QP_EV_SQ_DRAINED, qp.qpn, 0, 0);
    }
}

// A WQE that cannot be sent completes with its error and the QP goes to ERR
// (IBTA: local errors of UC are QP errors, as for RC).
void UcTransport::local_error(Qp &qp, const SendWr &wr, uint8_t status, uint8_t verr) {
    svc_.complete_send(qp, wr, status, verr);
    svc_.qp_to_error(qp);
}

// Takes the WQE at sq_fetched into qp.inflight (alone). False when it
// failed (completed in error, QP in ERR).
bool UcTransport::fetch(Qp &qp) {
    SendWr wr;
    wr.index = qp.sq_fetched;
    const uint64_t base = qp.sq.offset(wr.index);
    const uint32_t stride = 1u << qp.sq.log_stride;
    ohca_send_wqe w{};
    ++qp.sq_fetched;
    if (!qp.sq.ring.read(svc_.host(), base, &w, sizeof(w))) {
        svc_.post_event(OHCA_EQE_QP_EVENT, OHCA_QP_EV_FATAL, qp.qpn, 0, 0);
        local_error(qp, wr, OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_DMA);
        return false;
    }
    wr.wr_id = le(w.wr_id);
    wr.opcode = w.opcode;
    wr.flags = w.flags;
    wr.imm = wire_imm(w.imm_data);
    wr.remote_addr = le(w.remote_addr);
    wr.rkey = le(w.rkey);
    const bool known = w.opcode == OHCA_WR_SEND || w.opcode == OHCA_WR_SEND_IMM ||
                       w.opcode == OHCA_WR_RDMA_WRITE || w.opcode == OHCA_WR_RDMA_WRITE_IMM;
    if (!known || (w.flags & ~kFlagsKnown) != 0) {
        local_error(qp, wr, OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_WQE);
        return false;
    }
    if ((w.flags & OHCA_WQE_INLINE) != 0) {
        const uint32_t len = le(w.inline_len);
        if (len > qp.max_inline || sizeof(w) + len > stride) {
            local_error(qp, wr, OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_WQE);
            return false;
        }
        wr.is_inline = true;
        wr.inline_data.resize(len);
        wr.length = len;
        if (!qp.sq.ring.read(svc_.host(), base + sizeof(w), wr.inline_data.data(), len)) {
            local_error(qp, wr, OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_DMA);
            return false;
        }
    } else {
        if (w.num_sge > DeviceLimits::max_sge ||
            sizeof(w) + size_t{w.num_sge} * sizeof(ohca_sge) > stride) {
            local_error(qp, wr, OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_WQE);
            return false;
        }
        std::array<ohca_sge, DeviceLimits::max_sge> raw{};
        if (!qp.sq.ring.read(svc_.host(), base + sizeof(w), raw.data(),
                             size_t{w.num_sge} * sizeof(ohca_sge))) {
            local_error(qp, wr, OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_DMA);
            return false;
        }
        uint64_t total = 0;
        for (unsigned int i = 0; i < w.num_sge; ++i) {
            const Sge s{le(raw[i].addr), le(raw[i].length), le(raw[i].lkey)};
            total += s.length;
            if (s.length == 0) {
                continue;
            }
            const KeyResult k = svc_.check_key(s.lkey, s.addr, s.length, 0, qp.pdn);
            if (k.verr != OHCA_VERR_NONE) {
                local_error(qp, wr, OHCA_CQE_LOC_PROT_ERR, k.verr);
                return false;
            }
            wr.sges.push_back(s);
        }
        if (total > DeviceLimits::max_msg_size) {
            local_error(qp, wr, OHCA_CQE_LOC_LEN_ERR, OHCA_VERR_BAD_WQE);
            return false;
        }
        wr.length = static_cast<uint32_t>(total);
    }
    const uint32_t mtu = mtu_bytes(qp);
    wr.npkts = std::max<uint32_t>(1, (wr.length + mtu - 1) / mtu);
    wr.first_psn = qp.next_psn;
    qp.cur_pkt = 0;
    qp.inflight.push_back(std::move(wr));
    return true;
}

// Sends packet cur_pkt of the WQE in flight; after its last packet the WQE
// completes. False when the QP went to ERR.
bool UcTransport::send_packet(Qp &qp) {
    SendWr &wr = qp.inflight.front();
    const uint32_t mtu = mtu_bytes(qp);
    const uint32_t k = qp.cur_pkt;
    const bool write = is_write(wr.opcode);
    const bool imm = has_imm(wr.opcode);
    const bool first = k == 0;
    const bool last = k + 1 == wr.npkts;
    PacketFields f;
    f.bth.dest_qp = qp.attrs.dest_qpn;
    f.bth.psn = qp.next_psn;
    if (first && last) {
        f.bth.opcode = write ? (imm ? uc::kWriteOnlyImm : uc::kWriteOnly)
                             : (imm ? uc::kSendOnlyImm : uc::kSendOnly);
    } else if (first) {
        f.bth.opcode = write ? uc::kWriteFirst : uc::kSendFirst;
    } else if (last) {
        f.bth.opcode = write ? (imm ? uc::kWriteLastImm : uc::kWriteLast)
                             : (imm ? uc::kSendLastImm : uc::kSendLast);
    } else {
        f.bth.opcode = write ? uc::kWriteMiddle : uc::kSendMiddle;
    }
    if (write && first) {
        f.reth = Reth{wr.remote_addr, wr.rkey, wr.length};
    }
    if (imm && last) {
        f.imm = wr.imm;
    }
    f.bth.solicited = last && (wr.flags & OHCA_WQE_SOLICITED) != 0;
    const uint32_t off = k * mtu;
    const size_t len = std::min(mtu, wr.length - off);
    auto fill = [&](std::span<uint8_t> out) { return svc_.gather(qp, wr, off, out); };
    if (svc_.emit_fill(qp, f, len, fill) == EmitResult::FillFailed) {
        SendWr failed = std::move(wr);
        qp.inflight.pop_front();
        local_error(qp, failed, OHCA_CQE_LOC_PROT_ERR, OHCA_VERR_DMA);
        return false;
    }
    qp.next_psn = psn_add(qp.next_psn, 1);
    if (!last) {
        ++qp.cur_pkt;
        return true;
    }
    // No acknowledgement comes: the WQE is done once its last packet left.
    const SendWr done = std::move(wr);
    qp.inflight.pop_front();
    qp.cur_pkt = 0;
    svc_.complete_send(qp, done, OHCA_CQE_SUCCESS, OHCA_VERR_NONE);
    return true;
}

// ---- responder ----------------------------------------------------------------

void UcTransport::drop_message(Qp &qp) {
    if (qp.in_msg != Qp::InMsg::None) {
        ++svc_.counters().uc_msgs_dropped;
    }
    qp.in_msg = Qp::InMsg::None;
    qp.recv_offset = 0; // a loaded receive WQE waits for the next SEND
}

bool UcTransport::load_recv(Qp &qp) {
    if (qp.recv_loaded) {
        return true;
    }
    if (!svc_.records().rq_has_wqe(qp.rq)) {
        return false;
    }
    RecvWqe w;
    const uint8_t verr = read_recv_wqe(svc_.host(), qp.rq.ring, qp.rq.offset(qp.rq.ci),
                                       1u << qp.rq.log_stride, DeviceLimits::max_sge, w);
    if (verr != OHCA_VERR_NONE) {
        svc_.complete_recv(qp, w.wr_id, OHCA_CQE_RECV, 0, std::nullopt, OHCA_CQE_LOC_QP_OP_ERR,
                           verr, false);
        svc_.post_event(OHCA_EQE_QP_EVENT, OHCA_QP_EV_FATAL, qp.qpn, 0, 0);
        svc_.qp_to_error(qp);
        return false;
    }
    qp.recv_wr_id = w.wr_id;
    qp.recv_sges = std::move(w.sges);
    qp.recv_loaded = true;
    qp.recv_offset = 0;
    return true;
}

// Scatters a SEND packet's payload into the loaded receive WQE. False when
// it does not fit or a segment is bad: the WQE completes in error and the
// QP goes to ERR (a local error of the responder).
bool UcTransport::place_send(Qp &qp, std::span<const uint8_t> data) {
    uint32_t offset = qp.recv_offset;
    size_t done = 0;
    for (const Sge &s : qp.recv_sges) {
        if (done == data.size()) {
            break;
        }
        if (offset >= s.length) {
            offset -= s.length;
            continue;
        }
        const size_t n = std::min<size_t>(s.length - offset, data.size() - done);
        const KeyResult k =
            svc_.check_key(s.lkey, s.addr + offset, n, OHCA_ACCESS_LOCAL_WRITE, qp.pdn);
        if (k.mr == nullptr || !svc_.mr_write(*k.mr, s.addr + offset, data.data() + done, n)) {
            qp.recv_loaded = false;
            qp.in_msg = Qp::InMsg::None;
            svc_.complete_recv(qp, qp.recv_wr_id, OHCA_CQE_RECV, 0, std::nullopt,
                               OHCA_CQE_LOC_PROT_ERR,
                               k.mr == nullptr ? k.verr : uint8_t{OHCA_VERR_DMA}, false);
            svc_.qp_to_error(qp);
            return false;
        }
        done += n;
        offset = 0;
    }
    if (done != data.size()) {
        qp.recv_loaded = false;
        qp.in_msg = Qp::InMsg::None;
        svc_.complete_recv(qp, qp.recv_wr_id, OHCA_CQE_RECV, 0, std::nullopt, OHCA_CQE_LOC_LEN_ERR,
                           OHCA_VERR_RECV_TOO_SMALL, false);
        svc_.qp_to_error(qp);
        return false;
    }
    qp.recv_offset += static_cast<uint32_t>(data.size());
    return true;
}

void UcTransport::receive(Qp &qp, const ParsedPacket &pkt) {
    if (qp.state != OHCA_QPS_RTR && qp.state != OHCA_QPS_RTS && qp.state != OHCA_QPS_SQD &&
        qp.state != OHCA_QPS_SQE) {
        ++svc_.counters().rx_no_qp;
        return;
    }
    const Bth &h = pkt.fields.bth;
    const uint8_t op = h.opcode & 0x1f; // the RC numbering of the operation
    // RC's next-opcode table (opcode_seq.hpp): UC has SEND and WRITE only.
    const OpcodeSeq &seq = opcode_seq(op);
    const bool send = seq.kind == Qp::InMsg::Send;
    const bool starts = seq.starts;
    const bool ends = seq.ends;
    const bool imm = seq.imm;
    if (h.psn != qp.epsn) {
        // A packet was lost (or this one is late): the message in
        // progress is incomplete and goes. A new message may start here.
        ++svc_.counters().rx_out_of_seq;
        drop_message(qp);
        if (!starts) {
            return; // and so will the rest of its message: not expected
        }
    }
    qp.epsn = psn_add(h.psn, 1);
    ++svc_.counters().rx_packets;
    if (!qp.comm_est) {
        qp.comm_est = true;
        if (qp.state == OHCA_QPS_RTR) {
            svc_.post_peer_event(OHCA_QP_EV_COMM_EST, qp.qpn);
        }
    }
    const Qp::InMsg kind = seq.kind;
    if (starts) {
        drop_message(qp); // a FIRST after a lost LAST ends that message
    } else if (!opcode_follows(qp.in_msg, op)) {
        return; // the rest of a message already dropped
    }
    // Lengths: FIRST and MIDDLE carry exactly one MTU, the others at most.
    const uint32_t mtu = mtu_bytes(qp);
    const size_t len = pkt.payload.size();
    if (len > mtu || (!ends && len != mtu)) {
        qp.in_msg = kind;
        drop_message(qp); // counted once
        return;
    }
    if (send) {
        if (starts && !load_recv(qp)) {
            // No receive WQE: UC has no RNR; the message is lost.
            ++svc_.counters().uc_msgs_dropped;
            return;
        }
        qp.in_msg = Qp::InMsg::Send;
        if (!place_send(qp, pkt.payload)) {
            return;
        }
        if (ends) {
            qp.in_msg = Qp::InMsg::None;
            qp.recv_loaded = false;
            svc_.complete_recv(qp, qp.recv_wr_id, OHCA_CQE_RECV, qp.recv_offset,
                               imm ? pkt.fields.imm : std::nullopt, OHCA_CQE_SUCCESS,
                               OHCA_VERR_NONE, h.solicited);
        }
        return;
    }
    if (starts) {
        const Reth &r = *pkt.fields.reth;
        const bool only = op == rc::kWriteOnly || op == rc::kWriteOnlyImm;
        if ((qp.attrs.access & OHCA_ACCESS_REMOTE_WRITE) == 0 ||
            (r.dma_len != 0 &&
             svc_.check_rkey(qp, r.rkey, r.va, r.dma_len, OHCA_ACCESS_REMOTE_WRITE).verr !=
                 OHCA_VERR_NONE) ||
            (only && r.dma_len != len) || (!only && r.dma_len <= len)) {
            qp.in_msg = kind;
            drop_message(qp); // a UC responder drops it silently
            return;
        }
        qp.write_va = r.va;
        qp.write_key = r.rkey;
        qp.write_left = r.dma_len;
        qp.write_total = r.dma_len;
    }
    if (len > qp.write_left || (ends && len != qp.write_left)) {
        qp.in_msg = kind;
        drop_message(qp);
        return;
    }
    if (len != 0) {
        const KeyResult k =
            svc_.check_rkey(qp, qp.write_key, qp.write_va, len, OHCA_ACCESS_REMOTE_WRITE);
        if (k.mr == nullptr || !svc_.mr_write(*k.mr, qp.write_va, pkt.payload.data(), len)) {
            qp.in_msg = kind;
            drop_message(qp);
            return;
        }
    }
    qp.write_va += len;
    qp.write_left -= static_cast<uint32_t>(len);
    qp.in_msg = ends ? Qp::InMsg::None : Qp::InMsg::Write;
    if (ends && imm) {
        // WRITE with immediate consumes a receive WQE; none posted: the
        // data stays, the notification is lost.
        if (!load_recv(qp)) {
            ++svc_.counters().uc_msgs_dropped;
            return;
        }
        qp.recv_loaded = false;
        svc_.complete_recv(qp, qp.recv_wr_id, OHCA_CQE_RECV_RDMA_WITH_IMM, qp.write_total,
                           pkt.fields.imm, OHCA_CQE_SUCCESS, OHCA_VERR_NONE, h.solicited);
    }
}

} // namespace ohca
