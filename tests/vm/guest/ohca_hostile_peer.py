#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""A hostile RoCEv2 peer: crafted frames with a valid ICRC against an RC QP.

Two roles, one per VM:

  ohca_hostile_peer.py target DEVICE GID_INDEX PEER_IP PORT
      (the victim, with ohca) creates a PD, a 64 KiB MR with remote read
      and write, a CQ and an RC QP connected to PEER_IP's RoCE v2 GID with
      fixed PSNs and max_dest_rd_atomic 1, answers one TCP connection on
      PORT with the QP's coordinates (JSON), waits until the peer says it is
      done, then prints the QP's state and exits 0. A second QP, set up
      the same way, receives only the last frame of the flood.

  ohca_hostile_peer.py flood IFACE TARGET_IP PORT ACTIONS
      (the attacker) gets those coordinates and sends ACTIONS frames from
      IFACE through an AF_PACKET socket, in rounds of these kinds:
        read       in-sequence RDMA READ requests (8 bytes each)
        dup        duplicate SENDs (PSN below the expected one)
        spoof_qpn  READ requests to random QP numbers
        spoof_psn  requests with PSNs far ahead of the expected one
        spoof_gid  the right QP and PSN from another source address
        oversize   9000-byte frames to UDP port 4791
        badop      reserved opcodes and ACKs nobody asked for
      and, last, one SEND_MIDDLE with no SEND_FIRST before it to the second
      QP at its expected PSN (an opcode out of sequence: that QP must answer
      NAK invalid request and go to the error state; the first QP's expected
      PSN is not known exactly once the wire has lost some of the READs).
      Prints the count of each kind and FLOOD-DONE.

The frames are built here, ICRC included (IBTA annex A17: CRC-32 over 8
bytes of ones, the IP/UDP/BTH headers with their variant fields set to
ones, and the rest of the packet), independently of the device's code.
"""
import json
import os
import random
import socket
import struct
import sys
import time
import zlib

from ohca_pyverbs import verbs_enums  # next to this script in /share

RQ_PSN = 0x1000
SQ_PSN = 0x2000
FAKE_PEER_QPN = 0xabc
MR_LEN = 65536
UDP_ROCE = 4791

# RC opcodes (IBTA table 38)
SEND_MIDDLE, SEND_ONLY, READ_REQ, ACK = 0x01, 0x04, 0x0C, 0x11


def ip_checksum(hdr):
    s = sum(struct.unpack("!10H", hdr))
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def icrc(ip, udp, rest):
    """ICRC of an IPv4 RoCEv2 packet: ip (20 bytes), udp (8), rest = BTH,
    extension headers and payload with pad (without the ICRC)."""
    ip = bytearray(ip)
    ip[1] = 0xFF           # type of service
    ip[8] = 0xFF           # TTL
    ip[10:12] = b"\xff\xff"  # header checksum
    udp = bytearray(udp)
    udp[6:8] = b"\xff\xff"  # UDP checksum
    rest = bytearray(rest)
    rest[4] = 0xFF          # BTH resv8a
    crc = zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(rest))
    return struct.pack("<I", crc)


def frame(smac, dmac, sip, dip, opcode, qpn, psn, ext=b"", payload=b"",
          ack_req=False, sport=0xC123):
    pad = (4 - len(payload) % 4) % 4
    bth = struct.pack("!BBHII", opcode, pad << 4, 0xFFFF, qpn & 0xFFFFFF,
                      (0x80000000 if ack_req else 0) | (psn & 0xFFFFFF))
    rest = bth + ext + payload + b"\0" * pad
    udp_len = 8 + len(rest) + 4
    udp = struct.pack("!HHHH", sport, UDP_ROCE, udp_len, 0)
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, 0, 0x4000, 64, 17, 0,
                               sip, dip))
    ip[10:12] = struct.pack("!H", ip_checksum(bytes(ip)))
    eth = dmac + smac + b"\x08\x00"
    return eth + bytes(ip) + udp + rest + icrc(ip, udp, rest)


def reth(va, rkey, length):
    return struct.pack("!QII", va, rkey, length)


def gid_of(ip):
    a = socket.inet_aton(ip)
    return "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x" % tuple(a)


def target(dev, gid_index, peer_ip, port):
    e = verbs_enums()
    from pyverbs.addr import AHAttr, GID, GlobalRoute
    from pyverbs.cq import CQ
    from pyverbs.device import Context
    from pyverbs.mr import MR
    from pyverbs.pd import PD
    from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr

    access = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE |
              e.IBV_ACCESS_REMOTE_READ)
    ctx = Context(name=dev)
    pd = PD(ctx)
    mr = MR(pd, MR_LEN, access)
    cq = CQ(ctx, 64)
    cap = QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=1, max_recv_sge=1)

    def rc_qp():
        qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))
        attr = QPAttr(qp_state=e.IBV_QPS_INIT, port_num=1)
        attr.qp_access_flags = access
        qp.to_init(attr)
        gr = GlobalRoute(dgid=GID(gid_of(peer_ip)), sgid_index=gid_index)
        attr = QPAttr(qp_state=e.IBV_QPS_RTR, port_num=1, path_mtu=e.IBV_MTU_1024)
        attr.dest_qp_num = FAKE_PEER_QPN
        attr.rq_psn = RQ_PSN
        attr.max_dest_rd_atomic = 1
        attr.min_rnr_timer = 12
        attr.ah_attr = AHAttr(gr=gr, is_global=1, port_num=1)
        qp.to_rtr(attr)
        attr = QPAttr(qp_state=e.IBV_QPS_RTS)
        attr.timeout = 14
        attr.retry_cnt = 7
        attr.rnr_retry = 7
        attr.sq_psn = SQ_PSN
        attr.max_rd_atomic = 1
        qp.to_rts(attr)
        return qp

    qp, qp2 = rc_qp(), rc_qp()
    iface = os.environ.get("OHCA_IFACE", "eth0")
    with open(f"/sys/class/net/{iface}/address") as f:
        mac = f.read().strip()
    info = {"qpn": qp.qp_num, "qpn2": qp2.qp_num, "rq_psn": RQ_PSN, "rkey": mr.rkey, "va": mr.buf,
            "len": MR_LEN, "mac": mac}
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(1)
    print(f"TARGET {json.dumps(info)}", flush=True)
    conn, _ = srv.accept()
    conn.sendall((json.dumps(info) + "\n").encode())
    # The peer closes the connection when it is done.
    while conn.recv(4096):
        pass
    states = [q.query(e.IBV_QP_STATE)[0].qp_state for q in (qp, qp2)]
    print(f"TARGET-QP-STATE flooded={states[0]} out_of_sequence={states[1]}", flush=True)
    for obj in (qp, qp2, cq, mr, pd, ctx):
        obj.close()
    return 0


def flood(iface, target_ip, port, actions):
    for _ in range(120):
        try:
            conn = socket.create_connection((target_ip, port), timeout=10)
            break
        except OSError:
            time.sleep(0.5)
    else:
        print("FAIL: no target", flush=True)
        return 1
    # The target's answer comes from a guest process that may wait for a
    # CPU for a while on a busy host: the connect's 10 s is not the bound.
    conn.settimeout(120)
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = conn.recv(4096)
        if not chunk:
            print("FAIL: target closed", flush=True)
            return 1
        buf += chunk
    t = json.loads(buf)
    with open(f"/sys/class/net/{iface}/address") as f:
        smac = bytes.fromhex(f.read().strip().replace(":", ""))
    dmac = bytes.fromhex(t["mac"].replace(":", ""))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((target_ip, port))
    sip = socket.inet_aton(s.getsockname()[0])
    s.close()
    dip = socket.inet_aton(target_ip)
    other_ip = bytes([sip[0], sip[1], sip[2], (sip[3] + 77) & 0xFF])
    raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    raw.bind((iface, 0))
    rng = random.Random(7)
    qpn, rkey, va = t["qpn"], t["rkey"], t["va"]
    psn = t["rq_psn"]  # the responder's expected PSN, as far as we know
    big = b"\xa5" * (9000 - 14 - 20 - 8 - 12 - 4)
    kinds = ("read", "dup", "spoof_qpn", "spoof_psn", "spoof_gid", "oversize", "badop")
    sent = dict.fromkeys(kinds, 0)
    per_round = 64

    def send(f):
        for _ in range(1000):
            try:
                raw.send(f)
                return
            except BlockingIOError:
                time.sleep(0.001)
            except OSError as err:
                if err.errno != 105:  # ENOBUFS: the qdisc is full, try again
                    raise
                time.sleep(0.001)
        raise OSError("cannot send")

    # Frames that do not depend on the PSN, built once (Python under TCG is
    # slow enough that building dominates).
    fixed = {
        "spoof_gid": [frame(smac, dmac, other_ip, dip, READ_REQ, qpn, psn, reth(va, rkey, 8),
                            ack_req=True)],
        "oversize": [frame(smac, dmac, sip, dip, SEND_ONLY, qpn, psn, payload=big)],
        "badop": [frame(smac, dmac, sip, dip, op, qpn, psn + 7,
                        struct.pack("!I", 0) if op == ACK else b"")
                  for op in (0x12, 0x13, 0x1F, 0x40, 0xFF, ACK)],
    }
    done = 0
    t0 = time.monotonic()
    while done < actions:
        for kind in kinds:
            n = min(per_round, actions - done)
            for _ in range(n):
                if kind == "read":
                    f = frame(smac, dmac, sip, dip, READ_REQ, qpn, psn,
                              reth(va + rng.randrange(MR_LEN - 8), rkey, 8), ack_req=True)
                    psn = (psn + 1) & 0xFFFFFF
                elif kind == "dup":
                    f = frame(smac, dmac, sip, dip, SEND_ONLY, qpn,
                              psn - 1 - rng.randrange(1000), payload=b"dup!", ack_req=True)
                elif kind == "spoof_qpn":
                    f = frame(smac, dmac, sip, dip, READ_REQ, rng.randrange(1 << 24), psn,
                              reth(va, rkey, 8), ack_req=True)
                elif kind == "spoof_psn":
                    f = frame(smac, dmac, sip, dip, SEND_ONLY, qpn,
                              psn + 1 + rng.randrange(1 << 22), payload=b"far!", ack_req=True)
                else:
                    f = rng.choice(fixed[kind])
                send(f)
            sent[kind] += n
            done += n
            if done >= actions:
                break
    # Last, an opcode out of sequence at the second QP's expected PSN (a few
    # times, in case the wire lost it behind the flood; once the QP is in
    # error the rest are dropped).
    for _ in range(3):
        time.sleep(0.5)
        send(frame(smac, dmac, sip, dip, SEND_MIDDLE, t["qpn2"], t["rq_psn"],
                   payload=b"\0" * 1024))
    secs = time.monotonic() - t0
    print("FLOOD " + " ".join(f"{k}={v}" for k, v in sent.items())
          + f" total={done} seconds={secs:.1f}", flush=True)
    time.sleep(2)
    conn.close()
    print("FLOOD-DONE", flush=True)
    return 0


def main(argv):
    if len(argv) == 6 and argv[1] == "target":
        return target(argv[2], int(argv[3]), argv[4], int(argv[5]))
    if len(argv) == 6 and argv[1] == "flood":
        return flood(argv[2], argv[3], int(argv[4]), int(argv[5]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
