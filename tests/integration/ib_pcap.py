"""InfiniBand conformance checks on a capture of the fabric (ohca-switch
--capture: LINKTYPE_INFINIBAND, 247, each record a packet from the LRH to
the VCRC), by an independent dissector (tshark) and an independent
computation of both CRCs (issue 22 item 8; roce_pcap.py is the RoCE
analogue).

tshark 4.0 knows no pcap link type 247, but its InfiniBand dissector
starts at the LRH: a copy of the file with the link type USER0 (147),
mapped to the "infiniband" dissector by a user DLT, is dissected instead.
tshark shows the ICRC and VCRC without checking them, so they are
recomputed here from IBTA Vol 1 section 7.8: the ICRC is CRC-32 (as
Ethernet's FCS) over the packet from the LRH to the payload with the
variant fields set to ones (a local packet's LRH:VL; in a packet with a
GRH the whole LRH, GRH:TClass, FlowLabel and HopLmt; BTH:Resv8a), the
VCRC CRC-16 (x^16+x^12+x^3+x+1, reflected, all ones in, inverted out)
over everything before it; both least significant byte first.
"""

import os
import struct
import subprocess
import sys
import zlib

from roce_pcap import PAYLOAD_HEURISTICS, PI_ERROR, read_pcap

# the VCRC's CRC-16, as the switch's own smoke test computes it
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "fabric", "switch",
                                "tests"))
from smoke import crc16  # noqa: E402

LINKTYPE_INFINIBAND = 247
LINKTYPE_USER0 = 147
USER_DLT = 'uat:user_dlts:"User 0 (DLT=147)","infiniband","0","","0",""'

LNH_RAW, LNH_IP, LNH_LOCAL, LNH_GLOBAL = 0, 1, 2, 3
LRH, GRH, BTH = 8, 40, 12

FIELDS = ["frame.number", "frame.protocols", "infiniband.lrh.lnh", "infiniband.bth.opcode",
          "infiniband.bth.destqp", "infiniband.mad.mgmtclass", "infiniband.mad.method",
          "_ws.malformed", "_ws.expert.severity", "_ws.expert.message"]

# tshark 4.0's dissector of trap 259's DataDetails (a switch's Bad P_Key)
# fetches one of its 2-byte fields as an IPv6 address and throws: the only
# expert messages such a packet gets. Its bytes are the IBTA layout
# (opensm's ntc_259); the CRC checks below still judge it.
TSHARK_TRAP259_BUG = {"Trying to fetch an IPv6 address with length 2",
                      "Malformed Packet (Exception occurred)"}


def trap_number(pkt):
    """The trap number of a LID-routed SMP Trap(Notice) or TrapRepress
    (which echoes the Notice), or None."""
    if len(pkt) < LRH:
        return None
    at = LRH + (GRH if (pkt[1] & 0x3) == LNH_GLOBAL else 0) + BTH + 8  # DETH
    if len(pkt) < at + 64 + 6 or pkt[at + 1] != 0x01 or pkt[at + 3] not in (0x05, 0x07):
        return None
    return struct.unpack(">H", pkt[at + 64 + 4:at + 64 + 6])[0]


def notice(pkt):
    """The Notice (IBTA 14.2.5.1: 64 bytes at the SMP's data) of a LID-routed
    Trap or TrapRepress, or None."""
    if trap_number(pkt) is None:
        return None
    at = LRH + (GRH if (pkt[1] & 0x3) == LNH_GLOBAL else 0) + BTH + 8 + 64
    return pkt[at:at + 64]


def trap259_details(pkt):
    """Trap 259's DataDetails ("Bad P_Key, switch external port"), decoded
    from the Notice's bytes by IBTA's layout (DataValid, LIDADDR1, LIDADDR2,
    P_Key, SL:4 Rsvd:4 QP1:24, Rsvd:8 QP2:24, GID1, GID2, SW_LIDADDR,
    PortNo), plus the issuer's producer type and LID; None for any other
    packet. tshark 4.0 cannot decode it (TSHARK_TRAP259_BUG)."""
    if trap_number(pkt) != 259:
        return None
    n = notice(pkt)
    d = n[10:10 + 54]
    valid, lid1, lid2, pkey, sl_qp1, qp2 = struct.unpack(">HHHHII", d[:16])
    return {"generic": bool(n[0] & 0x80), "type": n[0] & 0x7F,
            "producer": int.from_bytes(n[1:4], "big"),
            "issuer_lid": struct.unpack(">H", n[6:8])[0], "valid": valid,
            "lid1": lid1, "lid2": lid2, "pkey": pkey, "sl": sl_qp1 >> 28,
            "rsvd": ((sl_qp1 >> 24) & 0xF) | (qp2 >> 24) | int.from_bytes(d[51:], "big"),
            "qp1": sl_qp1 & 0xFFFFFF, "qp2": qp2 & 0xFFFFFF, "gid1": d[16:32], "gid2": d[32:48],
            "sw_lid": struct.unpack(">H", d[48:50])[0], "port": d[50]}


TRAP259_VALID = {"lid1": 0x01, "lid2": 0x02, "pkey": 0x04, "sl": 0x08, "qp1": 0x10, "qp2": 0x20,
                 "gid1": 0x40, "gid2": 0x80}


def trap259_problems(t):
    """What is wrong with one decoded trap 259: a Security notice from a
    switch about one of its own external ports, reserved bits zero, every
    field DataValid names set to something a packet can carry and every
    other one zero."""
    out = []
    if not t["generic"] or t["type"] != 2 or t["producer"] != 2:
        out.append(f"not a generic Security notice from a switch: {t['type']}/{t['producer']}")
    if t["sw_lid"] != t["issuer_lid"] or not 0 < t["sw_lid"] < 0xC000:
        out.append(f"SW_LIDADDR {t['sw_lid']:#x}, issuer {t['issuer_lid']:#x}")
    if not 0 < t["port"] < 255:
        out.append(f"PortNo {t['port']}")
    if t["rsvd"] or t["valid"] & ~0xFF:
        out.append(f"reserved bits set (DataValid {t['valid']:#x})")
    for field, bit in TRAP259_VALID.items():
        v = t[field]
        known = bool(v if not isinstance(v, bytes) else any(v))
        if not t["valid"] & bit and known:
            out.append(f"{field} set but not valid")
    if t["valid"] & 0x04 and not t["pkey"] & 0x7FFF:
        out.append(f"P_Key {t['pkey']:#x}")
    if t["valid"] & 0x03 and not (0 < t["lid1"] < 0xC000 and 0 < t["lid2"] < 0xFFFF):
        out.append(f"LIDADDR1/2 {t['lid1']:#x}/{t['lid2']:#x}")
    return out


def crc_status(pkt):
    """(length ok, VCRC ok, ICRC ok or None for a raw packet) of one
    packet, LRH to VCRC."""
    if len(pkt) < LRH + 2:
        return False, False, None
    lnh = pkt[1] & 0x3
    pktlen = struct.unpack(">H", pkt[4:6])[0] & 0x7FF
    length_ok = pktlen * 4 + 2 == len(pkt)
    vcrc_ok = crc16(pkt[:-2]) == struct.unpack("<H", pkt[-2:])[0]
    if lnh not in (LNH_LOCAL, LNH_GLOBAL):
        return length_ok, vcrc_ok, None
    end = len(pkt) - 2 - 4  # the ICRC's offset
    if lnh == LNH_GLOBAL:
        hdr = bytearray(b"\xff" * LRH) + bytearray(pkt[LRH:LRH + GRH])
        hdr[LRH] |= 0x0F
        hdr[LRH + 1:LRH + 4] = b"\xff\xff\xff"
        hdr[LRH + 7] = 0xFF
    else:
        hdr = bytearray(pkt[:LRH])
        hdr[0] |= 0xF0
    n = len(hdr)
    if end < n + BTH:
        return length_ok, vcrc_ok, False
    bth = bytearray(pkt[n:n + BTH])
    bth[4] = 0xFF
    crc = zlib.crc32(bytes(hdr) + bytes(bth) + pkt[n + BTH:end])
    return length_ok, vcrc_ok, crc == struct.unpack("<I", pkt[end:end + 4])[0]


def link_type(path):
    with open(path, "rb") as f:
        head = f.read(24)
    end = "<" if head[:4] == b"\xd4\xc3\xb2\xa1" else ">"
    return struct.unpack(end + "I", head[20:24])[0]


def dissect(path, workdir):
    """One dict per packet (tshark -T fields on the USER0 copy), plus
    'length_ok', 'vcrc_ok', 'icrc_ok'."""
    with open(path, "rb") as f:
        data = bytearray(f.read())
    end = "<" if data[:4] == b"\xd4\xc3\xb2\xa1" else ">"
    data[20:24] = struct.pack(end + "I", LINKTYPE_USER0)
    copy = f"{workdir}/ib-user0.pcap"
    with open(copy, "wb") as f:
        f.write(data)
    # IPoIB's payload (an EtherType, then IP or ARP) stays decoded; the
    # other guesses at an RDMA payload go (roce_pcap.PAYLOAD_HEURISTICS)
    off = [a for h in PAYLOAD_HEURISTICS if h != "eth_over_ib"
           for a in ("--disable-heuristic", h)]
    p = subprocess.run(["tshark", "-n", "-r", copy, "-o", USER_DLT] + off +
                       ["-T", "fields", "-E", "separator=\t", "-E", "occurrence=a",
                        "-E", "aggregator=,"] + [a for fl in FIELDS for a in ("-e", fl)],
                       capture_output=True, text=True, check=True)
    packets = read_pcap(path)
    rows = []
    for line in p.stdout.splitlines():
        vals = line.split("\t")
        vals += [""] * (len(FIELDS) - len(vals))
        row = dict(zip(FIELDS, vals))
        pkt = packets[int(row["frame.number"]) - 1]
        row["length_ok"], row["vcrc_ok"], row["icrc_ok"] = crc_status(pkt)
        row["tshark_bug"] = (trap_number(pkt) == 259 and
                             set(row["_ws.expert.message"].split(",")) <= TSHARK_TRAP259_BUG)
        rows.append(row)
    return rows, len(packets)


def judge(path, workdir):
    """(problems, summary) of an IB capture: its link type, every packet
    dissected as InfiniBand with no malformed mark or expert error, its
    PktLen, VCRC and ICRC right; the summary counts what it carried."""
    problems = []
    lt = link_type(path)
    if lt != LINKTYPE_INFINIBAND:
        problems.append(f"link type {lt}, not {LINKTYPE_INFINIBAND}")
    rows, total = dissect(path, workdir)
    if len(rows) != total:
        problems.append(f"tshark dissected {len(rows)} of {total} packets")
    summary = {"packets": total, "smp": 0, "sa": 0, "pma": 0, "cm": 0, "ipoib": 0,
               "rc": 0, "ud": 0, "global": 0, "trap259": []}
    for pkt in read_pcap(path):
        t = trap259_details(pkt)
        if t is not None:
            summary["trap259"].append(t)
            problems += [f"trap 259: {p}" for p in trap259_problems(t)]
    for r in rows:
        n = r["frame.number"]
        if "infiniband" not in r["frame.protocols"].split(":"):
            problems.append(f"packet {n}: not dissected as InfiniBand ({r['frame.protocols']})")
        if r["_ws.malformed"] and not r["tshark_bug"]:
            problems.append(f"packet {n}: malformed ({r['frame.protocols']})")
        sev = [int(s, 0) for s in r["_ws.expert.severity"].split(",") if s]
        if any(s >= PI_ERROR for s in sev) and not r["tshark_bug"]:
            problems.append(f"packet {n}: expert error ({r['frame.protocols']})")
        for key in ("length_ok", "vcrc_ok", "icrc_ok"):
            if r[key] is False:
                problems.append(f"packet {n}: bad {key[:-3]}")
        if len(problems) > 20:
            break
        cls = r["infiniband.mad.mgmtclass"].split(",")[0]
        cls = int(cls, 0) if cls else None
        if cls in (0x01, 0x81):
            summary["smp"] += 1
        elif cls == 0x03:
            summary["sa"] += 1
        elif cls == 0x04:
            summary["pma"] += 1
        elif cls == 0x07:
            summary["cm"] += 1
        protos = r["frame.protocols"].split(":")
        if "ip" in protos or "arp" in protos or "ipv6" in protos:
            summary["ipoib"] += 1
        op = r["infiniband.bth.opcode"]
        if op:
            op = int(op.split(",")[0], 0)
            kind = "rc" if op < 0x20 else "ud" if 0x60 <= op < 0x80 else "other"
            summary[kind] = summary.get(kind, 0) + 1
        if r["infiniband.lrh.lnh"] and int(r["infiniband.lrh.lnh"].split(",")[0], 0) == LNH_GLOBAL:
            summary["global"] += 1
    return problems, summary
