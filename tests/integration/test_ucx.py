"""UCX over ohca in ONE VM (issue 25, item 1): `ucx_perftest` tag latency
and bandwidth between two processes over UCX's verbs transports, shared
memory excluded, so every message goes through the device (looped back
inside it):

- ud_verbs,self: UD only (UCX's own reliability over UD). UCX's AHs carry
  flow label ~0 (its RoCE UDP source port choice); the device takes 20
  bits, and every UD send used to complete with "local QP operation
  error" (LOC_QP_OP_ERR, BAD_AV) until the provider masked the label.
  Then UCX dropped every received packet: it reads the frame's L3 type
  (IPv4 or IPv6, to find the destination GID in the GRH) from the work
  completion's SL bits, as mlx5 reports it; the provider now does too.
- rc_verbs,ud_verbs,self: UD for wire-up, RC for the data (the RC QP's
  address vector comes through MODIFY_QP, with the same flow label).

Short runs (TCG is slow): the figures are for the log, not a benchmark.
The job runs in the session's pooled VM (no boot of its own)."""

import os
import re

import pytest

import peer_runs
from vmtest import assert_ok, parse_devinfo, section

pytestmark = pytest.mark.ohca_only

ITERS = 100
# ucx_perftest's socket mode: trixie's (UCX 1.18) is built with MPI and
# starts in MPI mode unless told -P 0 (then "This test should be run with
# exactly 2 processes"); bookworm's (1.13) has no -P.
PERFTEST_MODE = r"""
export OHCA_PERFTEST_P=
ucx_perftest -h 2>&1 | grep -q -e '-P <0|1>' && OHCA_PERFTEST_P="-P 0"
"""
RUNS = [(tls, test) for tls in ("ud_verbs,self", "rc_verbs,ud_verbs,self")
        for test in ("tag_lat", "tag_bw")]

JOB = PERFTEST_MODE + r"""
rc=0
export UCX_NET_DEVICES="$OHCA_IBDEV:1" UCX_WARN_UNUSED_ENV_VARS=n
port=13337
run() {  # run TLS TEST: server in the background, the client against it
	port=$((port + 1))
	UCX_TLS=$1 timeout 150 ucx_perftest $OHCA_PERFTEST_P -p $port > /tmp/ucx-srv.log 2>&1 &
	srv=$!
	# the client once the server listens
	ohca_poll 60 sh -c "ss -ltn | grep -q ':$port '"
	UCX_TLS=$1 timeout 120 ucx_perftest $OHCA_PERFTEST_P -p $port -t $2 -n ITERS -w 20 127.0.0.1 \
		> /tmp/ucx-cli.log 2>&1
	crc=$?
	wait $srv
	src=$?
	echo "=== $1 $2 ==="
	grep -E 'Final:|error|rror:' /tmp/ucx-cli.log
	echo "server:"; grep -Ei 'error|fatal' /tmp/ucx-srv.log
	echo "RUN $1 $2 client=$crc server=$src"
	[ $crc -eq 0 ] && [ $src -eq 0 ] || { rc=1; tail -n 30 /tmp/ucx-cli.log /tmp/ucx-srv.log; }
}
""".replace("ITERS", str(ITERS)) + "\n".join(f"run {tls} {test}" for tls, test in RUNS) + r"""
echo "=== end ==="
ohca_hw_counters
exit $rc
"""


def test_ucx_perftest_verbs_transports(vm_run):
    (r,) = vm_run(JOB, timeout=900)
    failed = [f"{tls} {test}" for tls, test in RUNS
              if not re.search(rf"^RUN {re.escape(tls)} {test} client=0 server=0$", r.output, re.M)]
    assert not failed, f"ucx_perftest failed: {failed}\n" + r.report()
    for tls, test in RUNS:
        text = section(r.output, f"{tls} {test}")
        m = re.search(r"^Final:\s+(\d+)\s", text, re.M)
        assert m and int(m.group(1)) == ITERS, r.report()
        assert "local QP operation error" not in text, r.report()
    assert_ok([r])


# --- two VMs (issue 25, item 1) -------------------------------------------
# ucx_perftest between two VMs over UCX's verbs transports only (no self,
# shared memory or TCP: UCX_TLS names the verbs ones, UCX_NET_DEVICES the
# ohca port): tag matching, streams, RMA (put/get: hardware RDMA WRITE and
# READ over rc_verbs, UCX's software emulation over ud_verbs) and atomics
# (hardware over rc_verbs, emulated over ud_verbs), at the default 8 bytes
# and at sizes on UCX's protocol edges for ohca's limits (ucx_info -d): the
# largest eager-short tag message (inline WQEs up to the QP's max inline),
# eager bcopy across several MTUs, rendezvous (RDMA READ of the sender's
# buffer over rc_verbs). vm0 serves each run, vm1 is the client. The
# compact list is make test's share, the full one runs with
# OHCA_UCX_FULL=1 (make test-apps).
PEER_TLS = ("rc_verbs,ud_verbs", "ud_verbs")
PEER_TESTS = ("tag_lat", "tag_bw", "stream_lat", "stream_bw", "ucp_put_lat", "ucp_put_bw",
              "ucp_get", "ucp_add", "ucp_fadd", "ucp_swap", "ucp_cswap",
              "tag_lat -s 184", "tag_lat -s 128", "tag_bw -s 5000", "tag_bw -s 300000",
              "ucp_put_bw -s 65536", "ucp_get -s 65536")
PEER_COMPACT = ("tag_lat", "tag_bw -s 300000", "stream_bw", "ucp_put_bw -s 65536",
                "ucp_get", "ucp_fadd", "ucp_cswap")
PEER_ITERS = 100
UCX_ENV = "env UCX_TLS={tls} UCX_NET_DEVICES={dev}:1 UCX_WARN_UNUSED_ENV_VARS=n"


def peer_runs_of(full):
    tests = PEER_TESTS if full else PEER_COMPACT
    return [(tls, test) for tls in PEER_TLS for test in tests]


def test_ucx_perftest_two_vms(vm_run):
    runs = peer_runs_of(os.environ.get("OHCA_UCX_FULL") == "1")
    items = []
    for tls, test in runs:
        env = UCX_ENV.replace("{tls}", tls)
        items.append((0, f"{env} ucx_perftest $OHCA_PERFTEST_P -p {{port}} | "
                         f"{env} ucx_perftest $OHCA_PERFTEST_P -p {{port}} -t {test} "
                         f"-n {PEER_ITERS} -w 10 {{addr}}"))
    job = PERFTEST_MODE + peer_runs.script(items) + "ohca_hw_counters\n"
    server, client = vm_run(job, nvms=2, timeout=600 + 60 * len(items))
    rcs, outs = peer_runs.parse(client.output)
    srcs, _ = peer_runs.parse(server.output)
    failed = [f"{tls} {test}" for i, (tls, test) in enumerate(runs, 1)
              if rcs.get(i) != 0 or srcs.get(i) != 0]
    assert not failed, f"ucx_perftest failed: {failed}\n{client.report()}\n{server.report()}"
    for i, (tls, test) in enumerate(runs, 1):
        m = re.search(r"Final:\s+(\d+)\s+(.*)$", outs.get(i, ""), re.M)
        assert m and int(m.group(1)) == PEER_ITERS, f"{tls} {test}: {outs.get(i)}"
        cols = m.group(2).split()
        print(f"UCX two VMs {tls:18} {test:20} typical {cols[0]} us, "
              f"{cols[4]} MB/s, {cols[6]} msg/s")
    # the traffic went through the devices' transport (received packets)
    for r in (server, client):
        m = re.search(r"^HW_COUNTERS .*", r.output, re.M)
        assert m, r.report()
    assert_ok([server, client])


# --- UCX's view of the device (ucx_info -d) against ohca's own -----------
# UCX sizes its protocols from the device: the port's active MTU (UD's
# largest active message, the RMA alignment unit), the QP's max inline
# data as the provider answers QP creation (short messages), the device's
# atomic capability (hardware atomics over rc_verbs), the SGE limit (iov
# counts) and the port's width and speed (the bandwidth estimate that
# weighs transports and lanes).
INFO_JOB = r"""
echo "=== ucx_info ==="
ucx_info -d | sed -n "/Memory domain: $OHCA_IBDEV\$/,/Memory domain:/p"
echo "=== devinfo ==="
ibv_devinfo -v -d "$OHCA_IBDEV"
echo "=== end ==="
"""

# IB speed codes (ibv_devinfo's "(N)") to (signal rate, encoding): IBTA
# rates per lane, as UCX's uct_ib_iface_get_attr knows them
IB_SPEEDS = {1: (2.5e9, 0.8), 2: (5.0e9, 0.8), 4: (10.0e9, 0.8), 8: (10.3125e9, 64 / 66),
             16: (14.0625e9, 64 / 66), 32: (25.78125e9, 64 / 66),
             64: (51.5625e9, 64 / 66), 128: (100e9, 64 / 66)}
IB_WIDTHS = {1: 1, 2: 4, 4: 8, 8: 12, 16: 2}
IB_MTUS = {1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096}


def parse_ucx_info(text):
    """{transport: {capability: value}} of `ucx_info -d` for one device."""
    tls, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"^#\s+Transport: (\S+)", line)
        if m:
            cur = tls.setdefault(m.group(1), {})
            continue
        m = re.match(r"^#\s+([\w ]+?): (.*)$", line)
        if m and cur is not None:
            cur.setdefault(m.group(1).strip(), m.group(2).strip())
    return tls


def code(field):
    """The number in parentheses of an ibv_devinfo field ("4X (2)" -> 2)."""
    m = re.search(r"\((\d+)\)", field)
    assert m, field
    return int(m.group(1))


def size_of(text):
    """UCX's size notation ("<= 1K", "<= 8256", "65..2G") -> the upper bound."""
    m = re.search(r"(\d+)([KMG]?)(?:,|$)", text.replace("<= ", "").split("..")[-1])
    assert m, text
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]


def test_ucx_info_matches_device(vm_run):
    (r,) = vm_run(INFO_JOB)
    assert_ok([r])
    tls = parse_ucx_info(section(r.output, "ucx_info"))
    assert {"rc_verbs", "ud_verbs"} <= set(tls), r.output
    dev = parse_devinfo(section(r.output, "devinfo"))
    port = dev["ports"][1]["fields"]
    rc, ud = tls["rc_verbs"], tls["ud_verbs"]
    mtu = IB_MTUS[code(port["active_mtu"])]
    problems = []

    def expect(what, got, want):
        if got != want:
            problems.append(f"{what}: UCX says {got}, ohca reports {want}")

    # MTU: UD's largest message is one packet (minus UCX's 8-byte header)
    expect("ud_verbs am_bcopy", size_of(ud["am_bcopy"]), mtu - 8)
    expect("ud_verbs am_align_mtu", size_of(ud["am_align_mtu"]), mtu)
    expect("rc_verbs put_align_mtu", size_of(rc["put_align_mtu"]), mtu)
    # inline: UCX asks for 64 bytes (TX_MIN_INLINE) and keeps what the QP
    # got; an RC short AM carries a 1-byte header in the inline data
    put_short = size_of(rc["put_short"])
    if put_short < 64:
        problems.append(f"rc_verbs put_short {put_short} < the 64 UCX asked for")
    expect("rc_verbs am_short", size_of(rc["am_short"]), put_short - 1)
    # SGEs: at most 8 iov (UCX's own limit), never more than the device has
    max_sge = int(dev["fields"]["max_sge"])
    for name in ("put_zcopy", "am_zcopy"):
        iov = int(re.search(r"up to (\d+) iov", rc[name]).group(1))
        expect(f"rc_verbs {name} iov", iov, min(8, max_sge) - (name == "am_zcopy"))
    # atomics: ATOMIC_HCA gives the 64-bit fetch-add and compare-swap
    # (and add, a fetch-add without the reply) over RC; UD has none
    if dev["fields"]["atomic_cap"].startswith("ATOMIC_HCA"):
        for op in ("atomic_add", "atomic_fadd", "atomic_cswap"):
            expect(f"rc_verbs {op}", rc.get(op), "64 bit")
    assert not any(k.startswith("atomic") for k in ud), ud
    # bandwidth: the port's width x lane rate, less the per-packet headers
    signal, enc = IB_SPEEDS[code(port["active_speed"])]
    wire = IB_WIDTHS[code(port["active_width"])] * signal * enc / 8 / 2**20
    bw = float(rc["bandwidth"].split("/ppn + ")[0].split()[-1]) + float(
        rc["bandwidth"].split("/ppn + ")[1].split()[0])
    if not 0.8 * wire <= bw <= wire:
        problems.append(f"rc_verbs bandwidth {bw:.0f} MB/s, the port's rate {wire:.0f} MB/s")
    print(f"UCX on ohca: mtu {mtu}, rc put_short {put_short}, ud am_short {ud['am_short']}, "
          f"bandwidth {bw:.1f} MB/s of {wire:.1f}")
    assert not problems, "\n".join(problems) + "\n" + r.output
