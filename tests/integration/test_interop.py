"""Interoperability with Linux soft-RoCE: vm0 has ohca, vm1 virtio-net with
rdma_rxe (rxe0) on the same wire and subnet. ibv_rc_pingpong,
ibv_uc_pingpong, ibv_srq_pingpong, perftest bandwidth/latency and ohca_rc_integrity (every byte checked) run in both
directions (ohca as server, then as client)
at path MTU 1024 and 4096 (eth0 MTU 9000 on both sides, so both ports are
active at 4096; `make test` runs a subset, see AT_1024, OHCA_INTEROP_FULL=1
and `make bench` all of them), and ohca_rc_integrity once each way over IPv6 (the
unique-local GIDs, MTU 1024), and UD and rdma_cm once each way
(ibv_ud_pingpong, rping, udaddy, ib_send_bw -R, rcopy, mckey). The matrix is printed and written to
build/test-logs/interop-matrix.md; docs/interop.md keeps a dated copy.
vm0's wire is captured (filter-dump) and dissected by tshark: the frames
both stacks sent pass the same conformance checks as ohca<->ohca.
"""

import os
import re
import time

import pytest

import peer_runs
import roce_pcap
import test_storage
from vmtest import assert_ok, ohcavm

pytestmark = pytest.mark.ohca_only

MTUS = (1024, 4096)
# For its time budget, make test runs at MTU 1024 the cases that each
# exercise something the others do not (the pingpongs and perftest's
# latency tests and send_bw move the same SENDs, WRITEs and READs as
# rc_integrity, which checks every byte, and the bandwidth tests), and
# rc_integrity at 4096; OHCA_INTEROP_FULL=1 (make bench) runs the whole
# matrix, at both MTUs.
AT_1024 = ("uc_pingpong", "srq_pingpong", "write_bw", "read_bw", "rc_integrity")
AT_4096 = ("rc_integrity",)
FULL = os.environ.get("OHCA_INTEROP_FULL", "0") == "1"
# (name, command with {dev} {gid} {mtu} {port}, size): perftest -F (no CPU
# frequency check in a VM); small iteration counts, TCG is slow. READ tests
# pass -o 16 (ohca's max_qp_rd_atom): ib_read_lat otherwise sets its QP's
# max_rd_atomic to the *peer's* limit (rxe: 128), which ohca rightly
# refuses (> max_qp_init_rd_atom; mlx5 does the same).
CASES = [
    ("rc_pingpong", "ibv_rc_pingpong -d {dev} -g {gid} -m {mtu} -s 8192 -n 100 -p {port}", 8192),
    # UC: multi-packet SENDs without ACKs (the wire has no loss here)
    ("uc_pingpong", "ibv_uc_pingpong -d {dev} -g {gid} -m {mtu} -s 8192 -n 100 -p {port}", 8192),
    # eight QPs sharing one SRQ on each side
    ("srq_pingpong", "ibv_srq_pingpong -d {dev} -g {gid} -m {mtu} -s 8192 -n 100 -q 8 -p {port}",
     8192),
    ("write_bw", "ib_write_bw -d {dev} -x {gid} -m {mtu} -F -s 65536 -n 100 -p {port}", 65536),
    ("read_bw", "ib_read_bw -d {dev} -x {gid} -m {mtu} -F -o 16 -s 65536 -n 100 -p {port}", 65536),
    ("send_bw", "ib_send_bw -d {dev} -x {gid} -m {mtu} -F -s 65536 -n 100 -p {port}", 65536),
    ("write_lat", "ib_write_lat -d {dev} -x {gid} -m {mtu} -F -s 8 -n 200 -p {port}", 8),
    ("read_lat", "ib_read_lat -d {dev} -x {gid} -m {mtu} -F -o 16 -s 8192 -n 100 -p {port}", 8192),
    ("send_lat", "ib_send_lat -d {dev} -x {gid} -m {mtu} -F -s 8 -n 200 -p {port}", 8),
    # every byte and completion checked on both ends (userspace/tests);
    # the client's -n/-M reach the server over TCP
    ("rc_integrity", "/share/ohca_rc_integrity -d {dev} -g {gid} -M {mtu} -n 15 -p {port}", "mixed"),
]

# over the IPv6 GIDs (peer_runs: fd00:77::/64, a hop limit per VM)
IPV6_CASES = [
    ("rc_integrity IPv6", "/share/ohca_rc_integrity -d {dev} -g {gid6g} -M {mtu} -n 10 -p {port}",
     "mixed"),
]


# UD and rdma_cm, once per direction (no path MTU option): ibv_ud_pingpong
# (UD SEND with user AHs), rping (RC through QP1 MADs, data verified),
# udaddy (UD with the CM's Q_Key), perftest over rdma_cm
CM_CASES = [
    ("ud_pingpong", "ibv_ud_pingpong -d {dev} -g {gid} -s 1024 -n 100 -p {port}", 1024),
    ("rping", "rping -s -a {addr} -p {port} -C 10 -S 4096 -v"
     " | rping -c -a {addr} -p {port} -C 10 -S 4096 -v", 4096),
    ("udaddy", "udaddy -b {addr} -c 2 -C 10 | udaddy -s {addr} -c 2 -C 10", "-"),
    ("send_bw rdma_cm", "ib_send_bw -d {dev} -R -F -s 65536 -n 100 -p {port}", 65536),
    ("rcopy", peer_runs.RCOPY, "-"),
    ("mckey", peer_runs.MCKEY, 512),
]


def _items():
    items = []
    for mtu in MTUS:
        for server in (0, 1):
            for name, cmd, size in CASES:
                if FULL or name in (AT_1024 if mtu == MTUS[0] else AT_4096):
                    items.append((server, mtu, name, size, cmd))
    for server in (0, 1):
        for name, cmd, size in IPV6_CASES:
            items.append((server, 1024, name, size, cmd))
        for name, cmd, size in CM_CASES:
            items.append((server, 4096, name, size, cmd))
    return items


def _figure(name, size, out):
    """The headline figure of one run from its output, or None."""
    if name.startswith("rc_integrity"):
        m = re.search(r"^ohca_rc_integrity: PASS .*?iterations=(\S+) completions=(\d+) "
                      r"bytes=(\d+)", out, re.M)
        return f"PASS {m.group(1)} iterations, {m.group(3)} B checked" if m else None
    if name == "rping":
        n = len(re.findall(r"ping data: ", out))
        return f"{n} pings verified" if n >= 10 else None
    if name == "udaddy":
        return "connected, data exchanged"
    if name == "rcopy":
        return "file copied"
    if name == "mckey":
        return "10 multicast messages" if "data transfers complete" in out else None
    if name in ("rc_pingpong", "ud_pingpong", "uc_pingpong", "srq_pingpong"):
        m = re.search(r"([\d.]+) usec/iter", out)
        return f"{float(m.group(1)):.0f} us/iter" if m else None
    for line in out.splitlines():
        f = line.split(":", 1)[-1].split()
        if len(f) >= 5 and f[0] == str(size) and f[1].isdigit():
            if name.split()[0].endswith("_bw"):
                return f"{float(f[3]):.2f} MB/s"
            return f"{float(f[4]):.1f} us"  # t_typical
    return None


@pytest.fixture(scope="module")
def interop_run():
    """The matrix in one job, then (same boot) the NVMe over RDMA rounds
    between the two stacks (test_storage.py's NVME_RXE); the captures hold
    both jobs' frames."""
    items = _items()
    logdir = os.path.join(ohcavm.TOP, "build/test-logs/interop")
    t0 = time.monotonic()
    with ohcavm.Cluster("interop", nvms=2, nics=("ohca", "rxe"), mtu=9000,
                        capture={0, 1}, logdir=logdir) as c:
        c.start_serving()
        results = c.run_job(peer_runs.script((s, cmd.replace("{mtu}", str(m)))
                                             for s, m, _, _, cmd in items), timeout=1500)
        t_end = time.monotonic()
        wall = t_end - t0
        cells = cell_seconds(c.barrier_times, len(items), t_end)
        # (the job's first barrier, "up": both VMs booted, preamble done)
        t_up = c.barrier_times.get("up", t0)
        print(f"interop: boot and preamble {t_up - t0:.0f} s, {len(items)} cells "
              f"{sum(t for t in cells if t):.0f} s")
        nvme = (c.run_job([test_storage.NVME_RXE] * 2, timeout=900) if c.fit()
                else None)
        print(f"interop: NVMe over RDMA both ways {time.monotonic() - t_end:.0f} s")
        pcaps = [vm.capture_path for vm in c.vms]
    return items, results, pcaps, wall, nvme, cells


def cell_seconds(barriers, n, t_end):
    """Each cell's wall time, from the release of its first barrier
    (peer_runs: item<i>) to the next cell's (or the job's end); None where
    a barrier was not released."""
    starts = [barriers.get(f"item{i}") for i in range(1, n + 1)] + [t_end]
    return [round(b - a, 1) if a is not None and b is not None else None
            for a, b in zip(starts, starts[1:])]


def matrix(items, results, cells=None):
    """Rows (test, size, mtu, direction, ok, figure) and a markdown table
    (with each cell's wall time when 'cells' has them)."""
    rc0, out0 = peer_runs.parse(results[0].output)
    rc1, out1 = peer_runs.parse(results[1].output)
    rows = []
    for i, (server, mtu, name, size, _) in enumerate(items, 1):
        ok = rc0.get(i) == 0 and rc1.get(i) == 0
        client_out = out1 if server == 0 else out0
        fig = _figure(name, size, client_out.get(i, "")) if ok else None
        direction = "rxe -> ohca (ohca server)" if server == 0 else "ohca -> rxe (rxe server)"
        ok = ok and fig is not None
        rows.append((name, size, mtu, direction, ok, fig or "-"))
    cells = cells or [None] * len(rows)
    lines = ["| test | size | MTU | client -> server | result | client figure | s |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {n} | {s} | {m} | {d} | {'pass' if ok else 'FAIL'} | {f} | {t or '-'} |"
              for (n, s, m, d, ok, f), t in zip(rows, cells)]
    return rows, "\n".join(lines)


# mckey's group and count (peer_runs.MCKEY: -m 239.1.2.4 -C 10)
MCKEY_GROUP = "239.1.2.4"
MCKEY_MESSAGES = 10


def multicast_sent(pcap, src, group):
    """RoCE v2 frames (UDP 4791) from src to the IPv4 group in a capture."""
    want = bytes(int(x) for x in src.split(".")) + bytes(int(x) for x in group.split("."))
    n = 0
    for f in roce_pcap.read_pcap(pcap):
        if len(f) < 42 or f[12:14] != b"\x08\x00" or f[23] != 17 or f[26:34] != want:
            continue
        udp = 14 + (f[14] & 0x0F) * 4
        n += f[udp + 2:udp + 4] == (4791).to_bytes(2, "big")
    return n


def test_interop_matrix(interop_run):
    items, results, pcaps, wall, _, cells = interop_run
    rows, table = matrix(items, results, cells)
    waits = {**peer_runs.ready_waits(results[0].output), **peer_runs.ready_waits(results[1].output)}
    slow = sorted(i for i, w in waits.items() if w is None)
    longest = max((w for w in waits.values() if w is not None), default=0)
    header = (f"ohca (vm0) <-> rdma_rxe (vm1), {time.strftime('%Y-%m-%d')}, "
              f"TCG, dgram wire, eth0 MTU 9000; run took {wall:.0f} s; "
              f"servers listening after at most {longest} s"
              + (f", not seen listening in cells {slow}" if slow else "") + "\n\n")
    out = os.path.join(ohcavm.TOP, "build/test-logs/interop-matrix.md")
    with open(out, "w") as f:
        f.write(header + table + "\n")
    print("\n" + header + table)
    # the failed cells with both sides' output first, also when a VM's
    # run failed as a whole (a crashed client is a kernel-log problem)
    failed = [r for r in rows if not r[4]]
    # mckey from rxe to ohca: Linux 6.12's rdma_rxe (trixie's) reported its
    # ten multicast datagrams sent and put two on the wire (its own VM's
    # capture and ohca's agreed) in two runs of three at load 5-12, all ten
    # in the third. When rxe's capture holds fewer than its cells sent,
    # the loss is the peer's, not ohca's.
    mck = [r for r in rows if r[0] == "mckey" and r[3].startswith("rxe")]
    sent = multicast_sent(pcaps[1], ohcavm.IPS[1], MCKEY_GROUP)
    if any(r in failed for r in mck) and sent < MCKEY_MESSAGES * len(mck):
        print(f"mckey rxe -> ohca: rxe put {sent} of its {MCKEY_MESSAGES * len(mck)} "
              "multicast datagrams on the wire (the peer's loss, not counted)")
        failed = [r for r in failed if r not in mck]
    # ib_send_bw -R from rxe to ohca: trixie's perftest on rxe opened a
    # second connection for its one QP 0.5 s after the first was up, took
    # the REJ the server's side owes it (reason 8: the server had accepted
    # its one connection) and crashed in its reject handling (SIGSEGV); its
    # retry then met a server past its one accept and the cell timed out
    # (2026-12-07 11:20, vm0's capture: REQ REP RTU, REQ REJ, DREQ, REQ REP
    # RTU). A crash of rxe's client is the peer's failure, not ohca's:
    # printed, not counted (docs/interop.md).
    _, client_out = peer_runs.parse(results[1].output)
    crashed = [r for i, r in enumerate(rows, 1)
               if r in failed and r[0] == "send_bw rdma_cm" and r[3].startswith("rxe")
               and "Segmentation fault" in client_out.get(i, "")]
    if crashed:
        print(f"send_bw rdma_cm rxe -> ohca: rxe's client crashed (SIGSEGV) in {len(crashed)} "
              "cell(s) (the peer's crash, not counted)")
        failed = [r for r in failed if r not in crashed]
    bad = [r for r in results if not r.ok]
    assert not failed and not bad, (f"failed cells: {failed}\n" + cell_outputs(items, rows, results)
                                    + f"\n{results[0].report()}\n{results[1].report()}")


def cell_outputs(items, rows, results):
    """Both sides' output of each failed cell: a VM's report holds only the
    end of a matrix's output, and a cell fails on either side."""
    parsed = [peer_runs.parse(r.output) for r in results]
    text = []
    for i, ((server, *_), row) in enumerate(zip(items, rows), 1):
        if row[4]:
            continue
        text.append(f"--- cell {i}: {row[0]} MTU {row[2]}, {row[3]}")
        for vm, (rcs, outs) in enumerate(parsed):
            role = "server" if vm == server else "client"
            text.append(f"  vm{vm} ({role}) rc={rcs.get(i)}:")
            text += ["    " + line for line in outs.get(i, "(no output)").splitlines()]
    return "\n".join(text)


def test_interop_wire_conformance(interop_run):
    """Each VM's capture judges what that VM sent (ohca's frames in vm0's,
    rxe's in vm1's); both must pass."""
    _, results, pcaps, _, _, _ = interop_run
    problems = []
    for i, (pcap, ip) in enumerate(zip(pcaps, ohcavm.IPS)):
        v6 = peer_runs.ipv6_addrs(results[i].output)
        p, rows, _ = roce_pcap.judge(pcap, {ip} | set(v6.values()), 1000)
        if "global" in v6:
            p6, summary6 = roce_pcap.check_ipv6(rows, {v6["global"]: 20},
                                                peer_runs.IPV6_HOP_LIMITS[i], {0})
            print(v6, summary6)
            p += p6
        else:
            p.append("no IPv6 address reported")
        problems += [f"{ip}: {x}" for x in p]
    assert not problems, "\n".join(problems)


def test_nvme_ohca_rxe_both_ways(interop_run):
    """Interoperability of the kernel's storage consumers: vm0 (ohca)
    serves NVMe over RDMA to vm1 (Linux soft-RoCE), then the reverse."""
    nvme = interop_run[4]
    assert nvme is not None, "the interop VMs could not take the NVMe job"
    ohca, rxe = nvme
    assert_ok([ohca, rxe])
    test_storage.check_nvme(rxe, 0, "-ohca-target")
    test_storage.check_nvme(ohca, 1, "-rxe-target")
