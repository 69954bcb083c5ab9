"""RoCEv2 conformance checks on a capture (QEMU filter-dump pcap), by an
independent dissector (tshark) and an independent ICRC computation.

tshark 4.0 decodes UDP port 4791 as InfiniBand (RRoCE) by default but does
not verify the ICRC, so the ICRC is recomputed here from the raw frames
(IBTA vol. 1 annex A17: 8 bytes of ones for the absent LRH, IP TOS/TTL/
header checksum, IPv6 traffic class/flow label/hop limit, UDP checksum and
the BTH reserved byte masked to ones; CRC-32 as in Ethernet; the ICRC is
sent least significant byte first).

The UDP checksum of RoCE frames is zero over IPv6 as over IPv4 (ohca and
rxe alike: the ICRC covers the datagram, the zero-checksum mode RFC 6935
allows for tunnels); tshark is told so (udp.ignore_ipv6_zero_checksum)
and check_ipv6 asserts that the checksum is exactly zero.
"""

import struct
import subprocess
import zlib

ROCE_PORT = 4791
PI_ERROR = 0x00800000  # wireshark's expert severity "error"

SEND_OPS = set(range(0x00, 0x06))
WRITE_OPS = set(range(0x06, 0x0C))
READ_REQ = 0x0C
READ_RESP_OPS = set(range(0x0D, 0x11))
ACK = 0x11
AETH_OPS = READ_RESP_OPS - {0x0E} | {ACK}
ATOMIC_ACK = 0x12
# RC requests: the RC opcodes (below 0x20) but responses
RC_REQUEST_OPS = set(range(0x00, 0x20)) - READ_RESP_OPS - {ACK, ATOMIC_ACK}

FIELDS = ["frame.number", "ip.src", "ip.dst", "ipv6.src", "ipv6.dst",
          "ipv6.tclass", "ipv6.flow", "ipv6.hlim", "ipv6.nxt", "udp.checksum", "udp.srcport", "udp.dstport", "infiniband.bth.opcode",
          "infiniband.bth.destqp", "infiniband.bth.psn", "infiniband.bth.a",
          "infiniband.bth.padcnt", "infiniband.aeth.syndrome",
          "infiniband.reth.dmalen", "infiniband.deth.q_key", "infiniband.deth.srcqp",
          "tcp.flags.syn", "tcp.flags.ack",
          "_ws.malformed", "_ws.expert.severity"]


def read_pcap(path):
    """Raw frames of a classic pcap file (what filter-dump writes)."""
    with open(path, "rb") as f:
        data = f.read()
    magic = data[:4]
    if magic == b"\xd4\xc3\xb2\xa1":
        end = "<"
    elif magic == b"\xa1\xb2\xc3\xd4":
        end = ">"
    else:
        raise ValueError(f"{path}: not a classic pcap file")
    off, frames = 24, []
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(end + "IIII", data[off:off + 16])
        off += 16
        frames.append(data[off:off + incl])
        off += incl
    return frames


def _roce_locate(frame):
    """(IP header with the ICRC's mask, UDP header offset, end of the IP
    datagram) of a RoCEv2 frame, or None when the frame is not one."""
    l3 = 14
    etype = struct.unpack(">H", frame[12:14])[0]
    if etype == 0x8100:
        etype, l3 = struct.unpack(">H", frame[16:18])[0], 18
    if etype == 0x0800:
        ihl = (frame[l3] & 0x0F) * 4
        if frame[l3 + 9] != 17:
            return None
        total = struct.unpack(">H", frame[l3 + 2:l3 + 4])[0]
        ip = bytearray(frame[l3:l3 + ihl])
        ip[1] = 0xFF
        ip[8] = 0xFF
        ip[10:12] = b"\xff\xff"
        end = l3 + total
    elif etype == 0x86DD:
        if frame[l3 + 6] != 17:
            return None
        ihl = 40
        ip = bytearray(frame[l3:l3 + 40])
        ip[0] |= 0x0F
        ip[1:4] = b"\xff\xff\xff"
        ip[7] = 0xFF
        end = l3 + 40 + struct.unpack(">H", frame[l3 + 4:l3 + 6])[0]
    else:
        return None
    l4 = l3 + ihl
    if struct.unpack(">H", frame[l4 + 2:l4 + 4])[0] != ROCE_PORT:
        return None
    return ip, l4, end


def icrc_value(frame):
    """The ICRC a RoCEv2 frame should carry; None when it is not one or
    its IP length does not fit the frame."""
    loc = _roce_locate(frame)
    if loc is None:
        return None
    ip, l4, end = loc
    if end > len(frame) or end < l4 + 24:
        return None
    udp = bytearray(frame[l4:l4 + 8])
    udp[6:8] = b"\xff\xff"
    bth = bytearray(frame[l4 + 8:l4 + 20])
    bth[4] = 0xFF
    body = frame[l4 + 20:end - 4]
    return zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(bth) + body)


def icrc_status(frame):
    """None when the frame is not RoCEv2, else True/False for its ICRC
    (False too when the IP length does not fit the frame)."""
    if _roce_locate(frame) is None:
        return None
    crc = icrc_value(frame)
    if crc is None:
        return False  # the IP length disagrees with the frame
    end = _roce_locate(frame)[2]
    return crc == struct.unpack("<I", frame[end - 4:end])[0]


def ib_packet(frame):
    """BTH to ICRC of a RoCEv2 frame whose IP length fits it, else None."""
    loc = _roce_locate(frame)
    if loc is None or loc[2] > len(frame) or loc[2] < loc[1] + 24:
        return None
    return bytes(frame[loc[1] + 8:loc[2]])


# Opcodes tshark 4.0 does not know: IBTA 1.5's RDMA ATOMIC WRITE (0x1d,
# ohca's OHCA_WR_ATOMIC_WRITE; FLUSH, 0x1c, ohca does not send). tshark
# 4.0.17 shows "Opcode: Unknown (29)" with the BTH's fields and everything
# after the BTH, RETH and ICRC included, as one "Unknown/Vendor Specific
# Data" item: no infiniband.reth.* field, no malformed mark, no expert
# error, so a wrong layout would pass it. Their layout is checked here
# from the raw packet instead (check()).
RAW_DECODED = {0x1D: "RDMA ATOMIC WRITE"}


def raw_layout_problem(pkt):
    """What is wrong with the layout of an IB packet (BTH..ICRC) of a
    RAW_DECODED opcode, or None. ATOMIC WRITE: BTH, RETH with DMA length
    8, exactly 8 bytes of payload, no pad, the ICRC."""
    op, pad = pkt[0], (pkt[1] >> 4) & 3
    if op == 0x1D:
        if len(pkt) != 12 + 16 + 8 + 4:
            return f"{len(pkt)} bytes from BTH to ICRC (want 40: RETH and 8 bytes)"
        dmalen = struct.unpack(">I", pkt[24:28])[0]
        if dmalen != 8 or pad:
            return f"RETH DMA length {dmalen}, pad {pad} (want 8, 0)"
        return None
    return f"opcode 0x{op:02x} has no raw layout check"


# tshark's guesses at what an RDMA payload carries (Ethernet, RPC-over-RDMA,
# SMB Direct, iSER, ...; the short names of tshark 4.0's "infiniband.payload"
# heuristics). Test data is none of them, and a guess gone wrong on it (an
# 8-byte SEND read as RPC-over-RDMA, a reassembled SEND as an Ethernet frame)
# is not a RoCE framing error; the dissection of the RoCE headers is kept.
PAYLOAD_HEURISTICS = ["eth_over_ib", "fc_infiniband", "sdp_infiniband", "iser_infiniband",
                      "lnet_ib", "rpcrdma_infiniband", "smb_direct_infiniband", "nvme_rdma",
                      "mellanox_eoib", "smcr_infiniband"]


def dissect(path):
    """One dict per frame (tshark -T fields), plus 'icrc_ok' and 'epoch'."""
    off = [a for h in PAYLOAD_HEURISTICS for a in ("--disable-heuristic", h)]
    p = subprocess.run(["tshark", "-n", "-r", path, "-o", "udp.ignore_ipv6_zero_checksum:TRUE"]
                       + off + ["-T", "fields", "-E", "separator=\t",
                        "-E", "occurrence=a", "-E", "aggregator=,"]
                       + [a for f in FIELDS for a in ("-e", f)],
                       capture_output=True, text=True, check=True)
    frames = read_pcap(path)
    rows = []
    epoch = 0
    for line in p.stdout.splitlines():
        vals = line.split("\t")
        vals += [""] * (len(FIELDS) - len(vals))
        row = dict(zip(FIELDS, vals))
        frame = frames[int(row["frame.number"]) - 1]
        row["icrc_ok"] = icrc_status(frame)
        if _int(row["infiniband.bth.opcode"]) in RAW_DECODED:
            row["ib_packet"] = ib_packet(frame)
        # The test programs exchange QP numbers and PSNs over TCP: a SYN
        # starts a new set of connections (QP numbers get reused).
        if row["tcp.flags.syn"] in ("1", "True") and row["tcp.flags.ack"] in ("0", "False"):
            epoch += 1
        row["epoch"] = epoch
        rows.append(row)
    return rows


def _int(v):
    return int(v, 0) if v else None


def check(rows, senders):
    """Conformance of the RoCEv2 frames in rows: (problems, summary).
    senders: the IP addresses whose sending is judged (the captured VM's
    own): frames it received may miss what the wire lost on the way, so
    sequence and port checks look at its transmissions only."""
    problems, summary = [], {}
    malformed = [r["frame.number"] for r in rows if r["_ws.malformed"]]
    errors = [r["frame.number"] for r in rows
              if any(int(s) >= PI_ERROR for s in r["_ws.expert.severity"].split(",") if s)]
    if malformed:
        problems.append(f"malformed frames: {malformed[:20]}")
    if errors:
        problems.append(f"frames with expert errors: {errors[:20]}")
    roce = [r for r in rows if r["infiniband.bth.opcode"]]
    summary["frames"] = len(rows)
    summary["roce_frames"] = len(roce)
    raw = [r for r in roce if "ib_packet" in r]
    summary["raw_decoded"] = len(raw)
    for r in raw:
        why = raw_layout_problem(r["ib_packet"]) if r["ib_packet"] else "no IB packet"
        if why:
            problems.append(f"frame {r['frame.number']}: "
                            f"{RAW_DECODED[_int(r['infiniband.bth.opcode'])]}: {why}")
    bad_icrc = [r["frame.number"] for r in roce if r["icrc_ok"] is not True]
    if bad_icrc:
        problems.append(f"bad ICRC in frames {bad_icrc[:20]}")
    wrong_port = [r["frame.number"] for r in roce if r["udp.dstport"] != str(ROCE_PORT)]
    if wrong_port:
        problems.append(f"RoCE frames not to UDP {ROCE_PORT}: {wrong_port[:20]}")

    # One UDP source port per QP flow (flow entropy), different across QPs.
    ports = {}
    own = [r for r in roce if (r["ip.src"] or r["ipv6.src"]) in senders]
    summary["sent_frames"] = len(own)
    for r in own:
        src = r["ip.src"] or r["ipv6.src"]
        dst = r["ip.dst"] or r["ipv6.dst"]
        ports.setdefault((r["epoch"], src, dst, r["infiniband.bth.destqp"]),
                         set()).add(r["udp.srcport"])
    for flow, ps in ports.items():
        if len(ps) != 1:
            problems.append(f"flow {flow} uses several UDP source ports {sorted(ps)}")
    # QPs of one host connected in one epoch spread over the ports. The
    # port is a 14-bit hash of the QP numbers or flow label
    # (rdma_get_udp_sport()), so two flows may share one by chance (an
    # rdma_cm epoch, which no TCP SYN ends, holds every connection of its
    # programs: 1 in 16384 a pair); a fixed port, or few, fails.
    concurrent = 0
    groups = {}
    for (epoch, src, _, qp), ps in ports.items():
        groups.setdefault((epoch, src), []).append((qp, ps))
    for (epoch, src), flows in groups.items():
        if len(flows) < 2:
            continue
        concurrent += 1
        used = [p for _, ps in flows for p in ps]
        if len(set(used)) < max(2, (len(used) + 1) // 2):
            problems.append(f"{src}: QPs {[q for q, _ in flows]} use only "
                            f"{len(set(used))} UDP source ports")
    summary["concurrent_qp_groups"] = concurrent
    summary["udp_source_ports"] = {}
    for (_, src, _, _), ps in ports.items():
        summary["udp_source_ports"].setdefault(src, set()).update(ps)
    summary["udp_source_ports"] = {h: len(p) for h, p in summary["udp_source_ports"].items()}

    # PSNs per requester flow: a new packet continues the sequence (+1, or
    # past the span of a READ request); anything at or below the highest
    # PSN seen is a retransmission or duplicate and is only counted.
    ops = {}
    retrans = 0
    seq_errors = []
    state = {}
    for r in roce:
        op = _int(r["infiniband.bth.opcode"])
        ops[op] = ops.get(op, 0) + 1
    for r in own:
        op = _int(r["infiniband.bth.opcode"])
        if op in READ_RESP_OPS or op == ACK:
            continue
        key = (r["epoch"], r["ip.src"] or r["ipv6.src"], r["infiniband.bth.destqp"])
        psn = _int(r["infiniband.bth.psn"])
        st = state.get(key)
        if st is None:
            state[key] = [psn, op]
            continue
        last, last_op = st
        d = ((psn - last) << 8 & 0xFFFFFFFF)
        d = (d - (1 << 32) if d & 0x80000000 else d) >> 8
        if d <= 0:
            retrans += 1
            continue
        if last_op != READ_REQ and d != 1:
            seq_errors.append((r["frame.number"], key, last, psn))
        st[0], st[1] = psn, op
    if seq_errors:
        problems.append(f"request PSNs not in sequence: {seq_errors[:10]}")
    summary["request_retransmissions"] = retrans
    summary["opcodes"] = {f"0x{k:02x}": v for k, v in sorted(ops.items())}

    # AETH syndromes of what the senders sent: ACKs (credit count) or NAKs;
    # no NAK other than a PSN sequence error or RNR in a run without
    # faults, but for a ghost: an error NAK of a request its requester had
    # sent more than once before it (a duplicate at the responder, answered
    # after the request completed, which the requester ignores: Linux rxe
    # NAKs a duplicate READ it replays after its MR was invalidated).
    syn, ghosts = {}, []
    sent = {}
    for r in roce:
        op = _int(r["infiniband.bth.opcode"])
        src = r["ip.src"] or r["ipv6.src"]
        dst = r["ip.dst"] or r["ipv6.dst"]
        s = _int(r["infiniband.aeth.syndrome"])
        if op in RC_REQUEST_OPS:
            key = (r["epoch"], src, dst, _int(r["infiniband.bth.psn"]))
            sent[key] = sent.get(key, 0) + 1
        if src not in senders:
            continue
        if op in AETH_OPS and s is None:
            problems.append(f"frame {r['frame.number']}: opcode 0x{op:02x} without AETH")
            continue
        if s is None:
            continue
        kind = {0: "ACK", 1: "RNR NAK", 3: "NAK"}.get(s >> 5, "reserved")
        error_nak = kind == "NAK" and (s & 0x1F) != 0
        if error_nak and sent.get((r["epoch"], dst, src, _int(r["infiniband.bth.psn"])), 0) > 1:
            ghosts.append(r["frame.number"])
        elif kind == "reserved" or error_nak:
            problems.append(f"frame {r['frame.number']}: AETH syndrome 0x{s:02x} ({kind})")
        syn[kind] = syn.get(kind, 0) + 1
    summary["aeth"] = syn
    summary["ghost_naks"] = ghosts
    return problems, summary


def require_opcodes(summary, groups):
    """Problems for each opcode group (name -> set) absent from summary."""
    seen = {int(k, 16) for k in summary["opcodes"]}
    return [f"no {name} frames" for name, g in groups.items() if not seen & g]


OPCODE_GROUPS = {"SEND": SEND_OPS, "RDMA WRITE": WRITE_OPS, "READ request": {READ_REQ},
                 "READ response": READ_RESP_OPS, "ACK": {ACK}}


def judge(pcap, ips, min_sent):
    """What 'ips' (one address or a set: a VM's IPv4 and IPv6 addresses)
    sent in 'pcap' against check(), every opcode group and at least
    min_sent frames: (problems, rows, summary)."""
    ips = {ips} if isinstance(ips, str) else set(ips)
    rows = dissect(pcap)
    problems, summary = check(rows, ips)
    print(sorted(ips), summary)
    problems += require_opcodes(summary, OPCODE_GROUPS)
    if summary["sent_frames"] < min_sent:
        problems.append(f"only {summary['sent_frames']} frames sent by {sorted(ips)} captured")
    return problems, rows, summary


def rdma_udp_sport(fl, lqpn, rqpn):
    """rdma_get_udp_sport() of include/rdma/ib_verbs.h: the RoCEv2 UDP source
    port of a flow label, or of the symmetric label of the two QP numbers."""
    if not fl:
        v = lqpn * rqpn
        v ^= v >> 20
        v ^= v >> 40
        fl = v & 0xFFFFF
    return ((fl & 0x3FFF) ^ ((fl & 0xFC000) >> 14)) | 0xC000


def check_udp_sport(rows, senders):
    """The UDP source port of every RoCE frame a sender sent is the one the
    Linux RDMA core derives for its connection (the driver passes it to the
    device): rdma_udp_sport(flow label, local QPN, remote QPN). The remote QPN
    is the frame's destination QP; the local one is the destination QP of
    some frame coming back on that connection (requests and ACKs of both
    ends share the symmetric port). Over IPv4 the flow label is not on the
    wire: connections made by rdma_cm (an epoch with MADs to QP 1) carry
    the CM's label (a hash of its UDP ports), which the frame cannot show,
    so only the port range is checked for them. Returns (problems, flows
    checked against a QP pair)."""
    # RC frames only: a UD QP has no peer; its packets carry one port per
    # QP, 0xc000 | (QPN & 0x3fff) (docs/wire-format.md)
    roce = [r for r in rows if r["infiniband.bth.opcode"]
            and _int(r["infiniband.bth.opcode"]) < 0x20]
    cm_epochs = {r["epoch"] for r in rows if r["infiniband.bth.opcode"]
                 and _int(r["infiniband.bth.destqp"]) == 1}
    back = {}
    for r in roce:
        src = r["ip.src"] or r["ipv6.src"]
        dst = r["ip.dst"] or r["ipv6.dst"]
        back.setdefault((r["epoch"], dst, src), set()).add(_int(r["infiniband.bth.destqp"]))
    problems, flows = [], set()
    for r in roce:
        src = r["ip.src"] or r["ipv6.src"]
        dst = r["ip.dst"] or r["ipv6.dst"]
        if src not in senders:
            continue
        rqpn = _int(r["infiniband.bth.destqp"])
        fl = _int(r["ipv6.flow"]) or 0
        port = _int(r["udp.srcport"])
        flow = (r["epoch"], src, dst, rqpn, port)
        if flow in flows:
            continue
        if not r["ipv6.src"] and r["epoch"] in cm_epochs:
            if port < 0xC000:
                problems.append(f"frame {r['frame.number']}: UDP source port {port:#x} "
                                "below 0xC000")
            continue
        flows.add(flow)
        if not any(port == rdma_udp_sport(fl, lqpn, rqpn)
                   for lqpn in back.get((r["epoch"], src, dst), ())):
            problems.append(f"frame {r['frame.number']}: UDP source port {port:#x} to QP "
                            f"{rqpn:#x} is not rdma_get_udp_sport() of any QP pair "
                            f"({sorted(back.get((r['epoch'], src, dst), ()))})")
    return problems[:20], len(flows)


def check_ipv6(rows, min_sent, hop_limit, tclasses):
    """IPv6 framing of the RoCE frames in rows: (problems, summary).
    min_sent: {IPv6 source address: fewest frames it must have sent}, the
    senders judged; hop_limit: what their path has (the route's, which
    the RDMA core puts in the AV); tclasses: the set of traffic classes
    (DSCP and ECN) the programs asked for. The opcode groups of all IPv6
    frames, both directions, must be complete."""
    problems = []
    v6 = [r for r in rows if r["infiniband.bth.opcode"] and r["ipv6.src"]]
    own = [r for r in v6 if r["ipv6.src"] in min_sent]
    sent = {a: sum(r["ipv6.src"] == a for r in own) for a in min_sent}
    for a, n in min_sent.items():
        if sent[a] < n:
            problems.append(f"{a} sent only {sent[a]} RoCE frames over IPv6 (< {n})")
    for what, field, want in (("next header", "ipv6.nxt", 17), ("hop limit", "ipv6.hlim", hop_limit),
                              ("UDP checksum", "udp.checksum", 0)):
        bad = [r["frame.number"] for r in own if _int(r[field]) != want]
        if bad:
            problems.append(f"{what} not {want} in frames {bad[:20]}")
    # one traffic class per connection, and each program's own
    flows = {}
    for r in own:
        flows.setdefault((r["epoch"], r["ipv6.src"], r["ipv6.dst"], r["infiniband.bth.destqp"]),
                         set()).add(_int(r["ipv6.tclass"]))
    for flow, tcs in flows.items():
        if len(tcs) != 1:
            problems.append(f"flow {flow} uses several traffic classes {sorted(tcs)}")
    seen = set().union(*flows.values()) if flows else set()
    if seen != set(tclasses):
        problems.append(f"traffic classes {sorted(seen)}, expected {sorted(tclasses)}")
    _, summary = check(v6, set(min_sent))
    problems += require_opcodes(summary, OPCODE_GROUPS)
    summary = {"sent": sent, "traffic_classes": sorted(seen),
               "flow_labels": sorted({_int(r["ipv6.flow"]) for r in own}),
               "opcodes": summary["opcodes"]}
    return problems, summary
