"""RoCEv2 conformance of ohca's frames, judged by an independent dissector:
two VMs with ohca, the frames between them captured by the wire
(tests/wire/ohca_wire without faults, in the fault-wire tests' boot), traffic with
every implemented RC opcode (SEND, WRITE, READ request/response, ACK),
UD SEND-only frames (BTH + DETH, ibv_ud_pingpong),
two QPs at once (UDP source port per QP) and sizes whose last packet needs
pad 1, 2 and 3 from each side; then tshark: no malformed frame, no expert
error, fields asserted (roce_pcap.check) on what each VM sent, in its own
capture. The ohca<->rxe captures are checked the same way in
test_interop.py. READ traffic comes from ib_read_lat.
The IPv6 items run over the RoCE v2 GIDs of each VM's IPv6 link-local
address and of a unique-local one (fd00:77::/64, destination MAC by
neighbour discovery), with a traffic class per program and a hop limit
per VM; roce_pcap.check_ipv6 asserts them on the frames. rdma_cm programs
(rping, rdma_server/rdma_client, ucmatose, udaddy, ib_send_bw -R, rcopy
over rsockets, mckey's multicast) connect between the two VMs through
QP1's MADs.
"""

import re

import pytest

import peer_runs
import roce_pcap
from vmtest import assert_ok, ohcavm

pytestmark = pytest.mark.ohca_only

# (server VM, command): vm0 serves every item.
ITEMS = [(0, cmd) for cmd in (
    "ibv_rc_pingpong -d {dev} -g {gid} -m 1024 -s 3001 -n 50 -p {port}",
    "ib_write_bw -d {dev} -x {gid} -m 1024 -F -q 2 -s 5002 -n 50 -p {port}",
    "ib_read_lat -d {dev} -x {gid} -m 4096 -F -s 9002 -n 50 -p {port}",
    "ib_send_bw -d {dev} -x {gid} -m 4096 -F -s 4097 -n 50 -p {port}",
    "ib_write_lat -d {dev} -x {gid} -m 1024 -F -s 3 -n 50 -p {port}",
    # UD: BTH + DETH SEND-only frames (size 1001: pad 3)
    "ibv_ud_pingpong -d {dev} -g {gid} -s 1001 -n 20 -p {port}",
    # IPv6: traffic class 0 (ibv_rc_pingpong has no option), 106 = DSCP 26
    # with ECN ECT(0), 185 = DSCP 46 with ECN ECT(1)
    "ibv_rc_pingpong -d {dev} -g {gid6} -m 1024 -s 3001 -n 20 -p {port}",
    "ib_write_bw -d {dev} -x {gid6g} -m 1024 -F --tclass=106 -s 5002 -n 20 -p {port}",
    "ib_read_lat -d {dev} -x {gid6g} -m 1024 -F --tclass=185 -s 5003 -n 30 -p {port}",
    # rdma_cm between the VMs: connections through QP1 MADs (ib_cm), RC data
    # verified by rping, UD with the CM's Q_Key (udaddy), perftest over
    # rdma_cm; the MADs are judged with the rest of the frames
    "rping -s -a {addr} -p {port} -C 10 -S 4096 -v | rping -c -a {addr} -p {port} -C 10 -S 4096 -v",
    "rdma_server -p {port} | rdma_client -s {addr} -p {port}",
    "ucmatose -b {addr} -c 2 -C 10 | ucmatose -s {addr} -c 2 -C 10",
    "udaddy -b {addr} -c 2 -C 10 | udaddy -s {addr} -c 2 -C 10",
    "ib_send_bw -d {dev} -R -F -s 8192 -n 50 -p {port}",
    peer_runs.RCOPY,
    peer_runs.MCKEY,
)]
RPING_ITEM = next(i for i, (_, cmd) in enumerate(ITEMS, 1) if cmd.startswith("rping"))
IPV6_TCLASSES = {0, 106, 185}


@pytest.mark.fault_wire
def test_conformance_ohca_ohca(vm_run):
    # captured by the wire between the VMs (ohca_wire, no faults): the
    # job shares the boot of the fault-wire tests (test_rc_faults.py)
    results = vm_run(peer_runs.script(ITEMS), nvms=2, timeout=600, mtu=9000,
                     wire={"pcap": True})
    pcap = results[0].wire_pcap
    assert_ok(results)
    for r in results:
        rcs, _ = peer_runs.parse(r.output)
        assert rcs == {i: 0 for i in range(1, len(ITEMS) + 1)}, r.report()
    # vm1 is rping's client: ten verified pings
    rping = peer_runs.parse(results[1].output)[1][RPING_ITEM]
    assert len(re.findall(r"ping data: ", rping)) >= 10, results[1].report()
    # vm0 served rcopy and received mckey's multicast
    served = peer_runs.parse(results[0].output)[1]
    assert "RCOPY_COMPARED" in served[len(ITEMS) - 1], results[0].report()
    assert "data transfers complete" in served[len(ITEMS)], results[0].report()
    problems = []
    for i, ip in enumerate(ohcavm.IPS):
        v6 = peer_runs.ipv6_addrs(results[i].output)
        assert set(v6) == {"link", "global"}, results[i].report()
        assert v6["global"] == peer_runs.IPV6_GLOBAL[i]
        p, rows, summary = roce_pcap.judge(pcap, {ip} | set(v6.values()), 200)
        p6, summary6 = roce_pcap.check_ipv6(rows, {a: 20 for a in v6.values()},
                                            peer_runs.IPV6_HOP_LIMITS[i], IPV6_TCLASSES)
        print(v6, summary6)
        p += p6
        # ohca<->ohca: the driver's UDP source ports (rdma_get_udp_sport)
        ps, nflows = roce_pcap.check_udp_sport(rows, {ip} | set(v6.values()))
        p += ps
        if nflows < 4:
            p.append(f"only {nflows} RoCE flows sent")
        if summary["concurrent_qp_groups"] < 1:
            p.append("no two QPs of one host were connected at once (ib_write_bw -q 2)")
        # pad counts 1..3 occur (odd message sizes)
        pads = {r["infiniband.bth.padcnt"] for r in rows
                if r["infiniband.bth.opcode"] and r["ip.src"] == ip}
        if not {"1", "2", "3"} <= pads:
            p.append(f"pad counts seen: {sorted(pads)}")
        # ibv_ud_pingpong's Q_Key, and the sender's QP in the DETH
        ud = [r for r in rows if roce_pcap._int(r["infiniband.bth.opcode"]) == 0x64
              and r["ip.src"] == ip and roce_pcap._int(r["infiniband.deth.q_key"]) == 0x11111111
              and roce_pcap._int(r["infiniband.deth.srcqp"])]
        if len(ud) < 20:
            p.append(f"only {len(ud)} UD SEND-only frames with a DETH sent")
        problems += [f"{ip}: {x}" for x in p]
    assert not problems, "\n".join(problems)


def test_icrc_checker_rejects_corruption(tmp_path):
    """The ICRC check is real: a frame built by hand passes, the same frame
    with one payload bit or a masked field changed fails or passes as the
    annex says."""
    import struct
    import zlib

    ip = bytearray(b"\x45\x00\x00\x30\x00\x00\x40\x00\x40\x11\x00\x00"
                   b"\x0a\x4d\x00\x01\x0a\x4d\x00\x02")
    udp = bytearray(struct.pack(">HHHH", 0xC002, 4791, 28, 0))
    bth = bytearray(struct.pack(">BBHII", 0x11, 0, 0xFFFF, 0x11, 5))
    aeth = struct.pack(">I", 0x1F000001)
    eth = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00"

    def frame(ip, udp, bth):
        mi, mu, mb = bytearray(ip), bytearray(udp), bytearray(bth)
        mi[1] = mi[8] = 0xFF
        mi[10:12] = b"\xff\xff"
        mu[6:8] = b"\xff\xff"
        mb[4] = 0xFF
        crc = zlib.crc32(b"\xff" * 8 + bytes(mi) + bytes(mu) + bytes(mb) + aeth)
        return eth + bytes(ip) + bytes(udp) + bytes(bth) + aeth + struct.pack("<I", crc)

    good = frame(ip, udp, bth)
    assert roce_pcap.icrc_status(good) is True
    bad = bytearray(good)
    bad[-6] ^= 1  # AETH MSN
    assert roce_pcap.icrc_status(bytes(bad)) is False
    ttl = bytearray(good)
    ttl[14 + 8] = 7  # TTL is variant: still good
    assert roce_pcap.icrc_status(bytes(ttl)) is True
    qp = bytearray(good)
    qp[14 + 20 + 8 + 7] ^= 1  # destination QP is invariant
    assert roce_pcap.icrc_status(bytes(qp)) is False
    assert roce_pcap.icrc_status(eth[:12] + b"\x08\x06" + bytes(28)) is None

    # IPv6 (link-local addresses): traffic class, flow label and hop limit
    # are variant, the rest of the header invariant.
    ip6 = bytearray(struct.pack(">IHBB", 6 << 28 | 0x6A << 20 | 0x12345, 28, 17, 64)
                    + bytes.fromhex("fe80000000000000000000fffe000001")
                    + bytes.fromhex("fe80000000000000000000fffe000002"))
    eth6 = eth[:12] + b"\x86\xdd"

    def frame6(ip6):
        mi, mu, mb = bytearray(ip6), bytearray(udp), bytearray(bth)
        mi[0:4] = b"\x6f\xff\xff\xff"
        mi[7] = 0xFF
        mu[6:8] = b"\xff\xff"
        mb[4] = 0xFF
        crc = zlib.crc32(b"\xff" * 8 + bytes(mi) + bytes(mu) + bytes(mb) + aeth)
        return eth6 + bytes(ip6) + bytes(udp) + bytes(bth) + aeth + struct.pack("<I", crc)

    good6 = frame6(ip6)
    assert roce_pcap.icrc_status(good6) is True
    for off, val in ((0, 0x60), (1, 0x00), (2, 0xAB), (3, 0x00), (7, 1)):
        # traffic class (both nibbles), flow label, hop limit
        v = bytearray(good6)
        v[14 + off] = val
        assert roce_pcap.icrc_status(bytes(v)) is True, off
    for off in (4, 5, 6, 8, 39):  # payload length, next header, addresses
        v = bytearray(good6)
        v[14 + off] ^= 1
        assert roce_pcap.icrc_status(bytes(v)) is not True, off
    v = bytearray(good6)
    v[-6] ^= 1  # AETH MSN
    assert roce_pcap.icrc_status(bytes(v)) is False
    # the IPv4 masks are not applied to IPv6: a change in byte 9 (inside
    # the source address) is caught
    v = bytearray(good6)
    v[14 + 9] ^= 0x80
    assert roce_pcap.icrc_status(bytes(v)) is False


def _rows(ports):
    """One SEND-only frame from 10.77.0.1 per (destination QP, UDP source
    port), all in one epoch, in the fields roce_pcap.check() reads."""
    rows = []
    for n, (qp, sport) in enumerate(ports, 1):
        row = dict.fromkeys(roce_pcap.FIELDS, "")
        row.update({"frame.number": str(n), "ip.src": "10.77.0.1", "ip.dst": "10.77.0.2",
                    "udp.srcport": str(sport), "udp.dstport": str(roce_pcap.ROCE_PORT),
                    "infiniband.bth.opcode": "0x04", "infiniband.bth.destqp": hex(qp),
                    "infiniband.bth.psn": "1", "icrc_ok": True, "epoch": 1})
        rows.append(row)
    return rows


def test_port_spread_allows_a_hash_collision():
    """Host-only: the UDP source port is a 14-bit hash, so two of many
    flows may share one (seen between sequential rdma_cm connections);
    one port for every QP, or a few, is a problem."""
    spread = [(0x11 + i, 0xC000 + 7 * i) for i in range(10)] + [(0x40, 0xC000)]
    problems, _ = roce_pcap.check(_rows(spread), {"10.77.0.1"})
    assert not problems, problems
    for fixed in ([(0x11 + i, 0xC123) for i in range(8)],
                  [(0x11 + i, 0xC000 + i % 3) for i in range(8)],
                  [(0x11, 0xC123), (0x12, 0xC123)]):
        problems, _ = roce_pcap.check(_rows(fixed), {"10.77.0.1"})
        assert any("UDP source ports" in p for p in problems), (fixed, problems)


def test_error_nak_of_a_duplicate_is_a_ghost():
    """Host-only: an error NAK is a problem, unless it answers a request
    its requester had sent more than once before it (a duplicate at the
    responder, answered after the request completed: Linux rxe NAKs a READ
    it replays after its MR was invalidated). Only the senders' NAKs are
    judged."""
    def frame(n, src, dst, op, psn, syndrome=""):
        row = _rows([(0x11, 0xC011)])[0]
        row.update({"frame.number": str(n), "ip.src": src, "ip.dst": dst,
                    "infiniband.bth.opcode": op, "infiniband.bth.psn": str(psn),
                    "infiniband.aeth.syndrome": syndrome})
        return row

    a, b = "10.77.0.1", "10.77.0.2"
    read, ack = "0x0c", "0x11"
    once = [frame(1, a, b, read, 5), frame(2, b, a, ack, 5, "0x62")]
    twice = [frame(1, a, b, read, 5), frame(2, a, b, read, 5), frame(3, b, a, ack, 5, "0x62")]
    later = [frame(1, a, b, read, 5), frame(2, b, a, ack, 5, "0x62"), frame(3, a, b, read, 5)]
    for rows, ghost in ((once, False), (twice, True), (later, False)):
        problems, summary = roce_pcap.check(rows, {b})
        assert bool(problems) != ghost and bool(summary["ghost_naks"]) == ghost, (rows, problems)
    # what another host sent is its own capture's to judge
    problems, summary = roce_pcap.check(once, {a})
    assert not problems and "NAK" not in summary["aeth"], problems
