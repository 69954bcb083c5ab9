#!/usr/bin/env python3
"""`make fabric-bench`: incast through ohca-switch's Ethernet mode, the
storm and its cures side by side (issue 23; docs/congestion.md).

Five VMs (one vCPU each) on one `ohca-switch --mode eth` whose egress
ports are shaped to LINE_RATE Mbit/s (the devices' speed too), a shared
buffer, RED/ECN marking of ECT packets, priorities by DSCP, priority 0
lossless (PFC, XOFF 64 KiB) with HEADROOM that only it may fill. One
boot runs every cell in turn; a cell is an incast of N senders
(vm1..vmN, `ib_write_bw`, QPS QPs each, 64 KiB WRITEs for SECONDS) into
vm0, plus a latency probe (`ib_write_lat`, 64 B) to vm0 across the same
bottleneck (the same traffic class, so the same egress queue) from a VM
of its own, the one after the last sender (two perftests on one vCPU
spoil each other's clock and the probe's round trips), in one of these
modes:

* unloaded: the probe alone (its p50 is every cell's `unloaded_p50_us`);
* droptail: traffic class 32 (DSCP 8, the lossy priority 1), no flow or
  congestion control at the hosts (PFC off, DCQCN off: nothing ECT);
* pfc: traffic class 0 (the lossless priority 0), the devices honour PFC
  on priority 0 (`dcb pfc`; they classify their own packets by PCP, so
  it stops all their RoCE packets), DCQCN off, local ACK timeout 18;
* dcqcn: traffic class 32, ECN + DCQCN (the senders' reaction point on
  priority 1), PFC off at the hosts.

Per cell: the senders' goodput (perftest's BW average; when perftest's
clock calibration failed, its iterations over its sample window) against
the line rate, each sender's share and Jain's index over the senders, the
receiver port's egress queue (the switch's timeline: queue_bytes sampled
every TIMELINE_MS, p99; queue_max_bytes, the deepest any arriving frame
met) and drops, pause frames the switch sent (switch timeline), the
guests' counter deltas (rc_retrans_pkts, rc_local_ack_timeouts,
np_cnp_sent, rp_cnp_handled, rx_prio0_pause), again from PROBE_DELAY
s in (once converged), the probe's p50 (t_typical) and p99 and its
fabric-only figures (the time its frames waited in the switch, from the
timeline's sojourn, over the unloaded p50), the goodput and Jain's index
while every sender sent (the switch's timeline). A cell's window is the
host time between the barriers that start and end it.

Besides the incast modes, cells of other kinds (CELL_KINDS): a kind
brings its guest shell function, run by every VM between the cell's
barriers, and its own summary and table. This file registers the slow
receiver (slowrx-credits, slowrx-nocredits: RC SENDs into a receiver that
posts one receive WQE per 10 ms, slow_receiver.py, with the QP's own
receive queue, whose ACKs carry end-to-end credits, and on an SRQ, whose
credits are "invalid"; the RNR NAKs counted); another module (the
InfiniBand-credits cell) calls register_kind() before main().

Writes build/fabric-bench/results.json (one object per cell, the issue's
keys exactly), details.json (everything measured), the table into
docs/bench.md between its fabric-bench markers (with the date and the
host's load), and PNG plots (per-sender throughput and the bottleneck's
queue over time, per cell) when matplotlib is installed.

    python3 tests/bench/fabric_bench.py [--seconds S] [--qps N] [--senders 1,2,3]
                                        [--modes droptail,pfc,dcqcn] [--kinds slowrx]
                                        [--tx-burst BYTES] [--no-docs]

Exit 0 when every cell produced its figures, 1 when some cell failed (the
table says which), 2 when the VMs could not be run.
"""

import argparse
import datetime
import json
import os
import re
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "vm"))
import ohcavm  # noqa: E402
import fabric_bench_ib  # noqa: E402


class CellKind:
    """A cell that is not an incast mode. 'shell' defines the guest
    function cell_<mode> (arguments: the cell's name and n; every VM runs
    it between the cell's barriers, the guests' counters are taken around
    it; it prints what 'summarize' reads and returns nonzero on failure);
    cells() gives the (name, mode, n) cells to run; summarize(name, mode, n,
    outputs, window) returns the cell's details (a dict with at least
    'cell', 'mode', 'senders', 'errors') from every VM's output and the
    switch's timeline window; rows(details) the kind's own table in
    docs/bench.md (a markdown string, '' for none)."""

    def __init__(self, shell, cells, summarize, rows):
        self.shell, self.cells, self.summarize, self.rows = shell, cells, summarize, rows


CELL_KINDS = {}


def register_kind(name, kind):
    CELL_KINDS[name] = kind

# Mbit/s per egress port (and the devices' speed). One sender alone, a
# TCG guest on the shared 2-core host, moved 47-73 Mbit/s at 200 (load
# 9-15, 2026-12-06 15:46; 29-30 at load 17-22): at 200 the senders, not
# the line, were the limit (PFC 3:1 kept it busy 87 % of the time).
# At 50 two senders exceed it, three even at load 20; so the cells
# measure the fabric, not the host's CPU.
LINE_RATE = 50
BUFFER = 1 << 20
HEADROOM = 6 << 20  # for the lossless priority only (ohca-switch --headroom)
# RED: Kmin 5 KB, Kmax 50 KB, Pmax 0.5 (0.8 and 8 ms of the line; only
# the dcqcn cells' packets are ECT). 20 / 200 KB, Pmax 0.2 until
# 2026-12-07: DCQCN held the queue near 160 KB, 26 ms, where the probe's
# goal allows 7 ms. 5 / 50 KB was tried on 2026-12-06 16:25 and its queue
# p99 stayed at 166 KB: bursts the switch made itself, reading one 64 KiB
# buffer per port per round after its process was away (fabric/switch/
# ports.hpp, read_all; docs/congestion.md). DcqcnIncast (the engine's
# model, kept in step) holds 14-42 KB at 2-40 ms CNP round trips.
ECN = "5000:50000:0.5"
TIMELINE_MS = 10
AWAY_AFTER_US = 5000  # ohca-switch --away-after-us
OUT = os.path.join(TOP, "build", "fabric-bench")
DOC = os.path.join(TOP, "docs", "bench.md")
BEGIN = "<!-- fabric-bench table: begin -->"
END = "<!-- fabric-bench table: end -->"
# DCQCN's parameters in the dcqcn cells (the reaction point's at the
# senders, the notification point's at the receiver; every other cell runs
# mlx5's defaults): a CNP takes milliseconds to come back through three
# QEMU processes and the switch on a loaded host, not microseconds, so the
# rate recovers per two such round trips and is cut at most once per 4 ms;
# its rates are for the 50 Mbit/s line (six QPs' fair share 8 Mb/s).
# Why each: docs/congestion.md, "Tuning for the emulated fabric"; the
# engine test DcqcnIncast (qemu-device/engine/tests/dcqcn_incast_test.cpp)
# runs the same set against the same switch, and must be kept in step.
DCQCN_TUNED = {"rp_time_reset": 80000, "rp_byte_reset": 0, "rp_threshold": 5, "rp_ai_rate": 1,
               "rp_hai_rate": 5, "rp_rate_to_set_on_first_cnp": 10,
               "rp_rate_reduce_monitor_period": 4000, "np_min_time_between_cnps": 4000,
               "rp_dce_tcp_rtt": 4000, "rp_dce_tcp_g": 960}
DCQCN_DEFAULTS = {"rp_time_reset": 300, "rp_byte_reset": 32767, "rp_threshold": 1,
                  "rp_ai_rate": 5, "rp_hai_rate": 50, "rp_rate_to_set_on_first_cnp": 0,
                  "rp_rate_reduce_monitor_period": 4, "np_min_time_between_cnps": 4,
                  "rp_dce_tcp_rtt": 1, "rp_dce_tcp_g": 1019}
BW_SIZE = 65536  # ib_write_bw -s
# Goodput per byte on the wire for a 64 KiB WRITE at MTU 1024: 64 frames
# of 14 + 20 + 8 + 12 (BTH) + 4 (ICRC) bytes besides the payload, RETH's
# 16 on the first: 65536 of 69264 bytes.
WRITE_GOODPUT = BW_SIZE / (BW_SIZE + 64 * 58 + 16)
PROBE_VM = None  # set by main(): the VM after the last sender
SECONDS = 5  # ib_write_bw -D, set by main()
PROBE_DELAY = 3  # s after the cell's barrier (set by main())
KEYS = ("mode", "senders", "line_rate_mbps", "throughput_mbps", "jain", "drops", "retrans_pkts",
        "timeouts", "cnp_sent", "cnp_handled", "pauses", "queue_p99_bytes", "probe_p50_us",
        "probe_p99_us", "unloaded_p50_us")

# The guests' side. Every VM runs every cell (the idle ones only meet the
# barriers); CELLS is "name:mode:senders ..." from the host.
SCRIPT = r"""
snap() { ohca_cc_counters; }
recv_ip=$(echo $OHCA_VM_IPS | cut -d' ' -f1)
ohca_barrier all-up 300 || exit 1
gid=$(ohca_gid_index)
bw="ib_write_bw -d $OHCA_IBDEV -x $gid -D $SECONDS_BW -s 65536 -q $QPS -F"
lat="ib_write_lat -d $OHCA_IBDEV -x $gid -s 64 -n $PROBE_ITERS -F"
listening() { ss -Hltn "sport = :$1" | grep -q .; }
# A cell's mode: PFC at the hosts, DCQCN's reaction point, and the
# traffic class (priority at the switch, which trusts DSCP): 0 is the
# lossless priority 0, 32 (DSCP 8) the lossy priority 1. Under PFC the
# local ACK timeout (-u 18: 1.07 s) is the requester's only timer; it must
# exceed the deepest queue the headroom allows at the rate the receiver
# drains it (a 3:1 run held 4.2 MB while a CPU-bound receiver took
# 74 Mbit/s, about 450 ms: with -u 17, 537 ms, a few ACKs came too late).
# DCQCN's parameters (cc_params in debugfs): name=value ...
ccset() {
	local d kv
	d=$(ls -d /sys/kernel/debug/ohca/0000:*/cc_params | head -n 1)
	for kv in "$@"; do echo "${kv#*=}" >"$d/${kv%%=*}" || echo "WARN cc_params $kv"; done
}
setmode() {
	local rp=0 pfc=all:off
	TC="--tclass=32"
	case $1 in
	pfc) pfc=0:on TC="--tclass=0 -u 18" ;;
	dcqcn) rp=1 ;;
	esac
	if [ $rp = 1 ]; then ccset $DCQCN_TUNED; else ccset $DCQCN_DEFAULTS; fi
	ohca_pfc $pfc || echo "WARN dcb pfc set $pfc"
	echo $rp >/sys/class/net/$OHCA_IFACE/ecn/roce_rp/enable/1 || echo "WARN roce_rp $rp"
}
# The counters again once DCQCN has converged (PROBE_DELAY s after the
# cell's barrier; the probe starts then too): the goals' "once converged".
converged() {
	if [ "$n" = 0 ]; then mid=$before; else sleep $PROBE_DELAY; mid=$(snap); fi
}
cell() {
	local name=$1 mode=$2 n=$3 before mid after rc=0 i pids= r
	setmode $mode
	before=$(snap)
	if [ "$OHCA_VM_INDEX" = 0 ]; then
		for i in $(seq 1 $n); do
			timeout 200 $bw $TC -p $((18514 + i)) >/tmp/$name.s$i 2>&1 & pids="$pids $!"
		done
		timeout 200 $lat $TC -p 18600 >/tmp/$name.ls 2>&1 & pids="$pids $!"
		for i in $(seq 1 $n); do ohca_poll 60 listening $((18514 + i)) || rc=1; done
		ohca_poll 60 listening 18600 || rc=1
		ohca_barrier "$name" 200 || return 1
		converged
		for i in $pids; do wait $i || rc=1; done
	else
		ohca_barrier "$name" 200 || return 1
		if [ "$OHCA_VM_INDEX" -le "$n" ]; then
			ohca_retry 60 timeout 200 $bw $TC -p $((18514 + OHCA_VM_INDEX)) "$recv_ip" \
				>/tmp/$name.c 2>&1 & pids=$!
		fi
		converged
		# The probe has a VM of its own: perftest calibrates its clock
		# when it reports (a fit of TSC against gettimeofday over 200
		# busy-waits, r^2 >= 0.9), and a second busy-polling perftest on
		# the same vCPU spoils the fit (both then report 0.00 MB/s or
		# inf and exit 0), besides adding that vCPU's time slices to
		# every round trip the probe measures.
		if [ "$OHCA_VM_INDEX" = "$PROBE_VM" ]; then
			ohca_retry 60 timeout 200 $lat $TC -p 18600 "$recv_ip" >/tmp/$name.l 2>&1 ||
				{ rc=1; cat /tmp/$name.l; }
			r=$(awk '$1 == 64 && NF >= 8 {print "p50=" $5 " p99=" $8}' /tmp/$name.l | tail -n 1)
			echo "PROBE $name ${r:-none} clock_failed=$(grep -c "Correlation coefficient" /tmp/$name.l)"
		fi
		if [ -n "$pids" ]; then
			wait $pids || { rc=1; cat /tmp/$name.c; }
			# MB/s and the iterations in perftest's sample window
			r=$(awk '$1 == 65536 && NF >= 5 {print $4, $2}' /tmp/$name.c | tail -n 1)
			echo "BW $name vm$OHCA_VM_INDEX ${r:-none none} MB/s" \
				"clock_failed=$(grep -c "Correlation coefficient" /tmp/$name.c)"
		fi
	fi
	after=$(snap)
	echo "CELL $name vm$OHCA_VM_INDEX rc=$rc before: $before mid: $mid after: $after"
	ohca_barrier "$name-done" 200
}
# A cell of another kind (CELL_KINDS): its function between the barriers.
kind_cell() {
	local name=$1 mode=$2 n=$3 before after rc=0
	before=$(snap)
	ohca_barrier "$name" 200 || return 1
	cell_$mode "$name" "$n" || rc=1
	after=$(snap)
	echo "CELL $name vm$OHCA_VM_INDEX rc=$rc before: $before after: $after"
	ohca_barrier "$name-done" 200
}
for c in $CELLS; do
	IFS=: read -r name mode n <<EOF
$c
EOF
	echo "=== $name ($(date +%T)) ==="
	if type "cell_$mode" >/dev/null 2>&1; then
		kind_cell $name $mode $n || echo "CELL $name vm$OHCA_VM_INDEX rc=1 before: after:"
	else
		cell $name $mode $n || echo "CELL $name vm$OHCA_VM_INDEX rc=1 before: after:"
	fi
done
setmode droptail
ohca_hw_counters
"""


def counters(text):
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", text)}


def parse_vm(output):
    """{cell: {"rc", "delta", "bw_mbps", "probe"}} from one VM's output."""
    cells = {}
    for name, rc, before, mid, after in re.findall(
            r"^CELL (\S+) vm\d+ rc=(\d+) before: (.*?)(?: mid: (.*))? after: (.*)$", output, re.M):
        b, m, a = counters(before), counters(mid), counters(after)
        cells[name] = {"rc": int(rc), "delta": {k: a[k] - b[k] for k in a if k in b},
                       # since the cell converged (PROBE_DELAY s in)
                       "converged": {k: a[k] - m[k] for k in a if k in m}}
    for name, mbs, iters, failed in re.findall(
            r"^BW (\S+) vm\d+ (\S+) (\S+) MB/s clock_failed=(\d+)$", output, re.M):
        if name not in cells or mbs == "none":
            continue
        # perftest's MB is 2^20 bytes
        cells[name]["bw_mbps"] = float(mbs) * 1048576 * 8 / 1e6
        if int(failed) and iters != "none":
            # perftest lost its clock (it prints 0.00 then): the WRITEs it
            # counted in its sample window over that window's length
            cells[name]["bw_mbps"] = int(iters) * BW_SIZE * 8 / sample_seconds(SECONDS) / 1e6
            cells[name]["clock_failed"] = True
    for name, rest in re.findall(r"^PROBE (\S+) (.*)$", output, re.M):
        if name in cells:
            cells[name]["probe"] = {k: float(v) for k, v in re.findall(r"(\w+)=([\d.]+)", rest)
                                    if k in ("p50", "p99")}
            if re.search(r"clock_failed=[1-9]", rest):
                cells[name]["probe_clock_failed"] = True
    return cells


def sample_seconds(duration):
    """perftest's sample window in its duration mode (-D): the duration
    less a margin at each end, duration / 4 seconds by default (its
    catch_alarm states), so 3 s of a 5 s run."""
    return duration - 2 * (duration // 4)


def jain(xs):
    s2 = sum(x * x for x in xs)
    return sum(xs) ** 2 / (len(xs) * s2) if xs and s2 > 0 else None


def p99(xs):
    return quantile(xs, 0.99)


# ---- the slow receiver (issue 23 item 4) -------------------------------------------
SLOWRX_N = 100  # SENDs; the receiver posts one receive WQE per SLOWRX_PERIOD_MS
SLOWRX_PERIOD_MS = 10
with open(os.path.join(HERE, "slow_receiver.py")) as _f:
    SLOWRX_PY = _f.read()
SLOWRX_SHELL = f"""
cat >/tmp/slowrx.py <<'PYEOF'
{SLOWRX_PY.strip()}
PYEOF
rnr() {{ cat /sys/class/infiniband/$OHCA_IBDEV/ports/1/hw_counters/rc_rnr_naks_$1; }}
# $1: the cell's name; $2 the receiver's queue (rq: its own, credits; srq).
slowrx() {{
	local name=$1 kind=$2 rc=0 s0 r0
	s0=$(rnr sent) r0=$(rnr rcvd)
	case $OHCA_VM_INDEX in
	0) timeout 200 python3 /tmp/slowrx.py recv $OHCA_IBDEV $gid 18700 $kind {SLOWRX_N} \\
		{SLOWRX_PERIOD_MS} 32 >/tmp/$name.r 2>&1 || rc=1
	   cat /tmp/$name.r ;;
	1) timeout 200 python3 /tmp/slowrx.py send $OHCA_IBDEV $gid 18700 "$recv_ip" {SLOWRX_N} 32 \\
		>/tmp/$name.s 2>&1 || rc=1
	   cat /tmp/$name.s ;;
	esac
	echo "RNR $name vm$OHCA_VM_INDEX sent=$(($(rnr sent) - s0)) rcvd=$(($(rnr rcvd) - r0))"
	return $rc
}}
cell_slowrx_rq() {{ slowrx $1 rq; }}
cell_slowrx_srq() {{ slowrx $1 srq; }}
"""


def slowrx_summarize(name, mode, n, outputs, window):
    d = {"cell": name, "mode": mode, "senders": 1, "errors": [],
         "credits": mode == "slowrx_rq", "messages": SLOWRX_N,
         "period_ms": SLOWRX_PERIOD_MS}
    for i, who in ((0, "receiver"), (1, "sender")):
        out = outputs[i] if i < len(outputs) else ""
        m = re.search(rf"^RNR {re.escape(name)} vm{i} sent=(-?\d+) rcvd=(-?\d+)$", out, re.M)
        if m:
            d[f"{who}_rnr_sent"], d[f"{who}_rnr_rcvd"] = int(m[1]), int(m[2])
        else:
            d["errors"].append(f"vm{i}: no RNR counts")
    m = re.search(r"^SLOWRX role=send n=\d+ seconds=([\d.]+)$",
                  outputs[1] if len(outputs) > 1 else "", re.M)
    d["seconds"] = float(m[1]) if m else None
    d["rnr_naks"] = d.get("receiver_rnr_sent")
    if window:
        d["drops"] = window["drops"]
    return d


def slowrx_rows(details):
    rows = ["| cell | receiver's queue | RNR NAKs sent (receiver) / received (sender) "
            "| SENDs, time s | notes |", "|---|---|---|---|---|"]
    for d in details:
        rows.append(
            f"| {d['cell']} | {'own RQ: credits' if d['credits'] else 'SRQ: credits invalid'} | "
            f"{fmt(d.get('receiver_rnr_sent'))} / {fmt(d.get('sender_rnr_rcvd'))} | "
            f"{d['messages']}, {fmt(d.get('seconds'), 1)} | {'; '.join(d['errors'])} |")
    return (f"Slow receiver: {SLOWRX_N} RC SENDs of 64 B posted at once from vm1, vm0 posts "
            f"one receive WQE per {SLOWRX_PERIOD_MS} ms (rnr_retry 7, min_rnr_timer 1: the "
            "device waits at least 1 ms).\n\n" + "\n".join(rows))


register_kind("slowrx", CellKind(
    SLOWRX_SHELL,
    lambda: [("slowrx-credits", "slowrx_rq", 1), ("slowrx-nocredits", "slowrx_srq", 1)],
    slowrx_summarize, slowrx_rows))


def probe_waits(lines, t0, t1, recv_port, probe_port):
    """How long the probe's frames waited in the switch between
    time.monotonic() t0 and t1: the timeline's sojourn (per interval, the
    longest wait of the frames one ingress port sent out of one egress
    port, in us), its requests in the bottleneck's queue (probe's port into
    the receiver's) and the answers back (the receiver's port into the
    probe's): ([us, ...], [us, ...]), one figure per interval that had a
    probe frame; and the first and last of those intervals' ends, in s
    since t0 (None without one). The probe's VM sends nothing else."""
    inside = [ln for ln in lines if t0 * 1e6 <= ln["mono_us"] <= t1 * 1e6]

    def waits(out_port, in_port, when=None):
        xs = []
        for ln in inside:
            p = next((p for p in ln["ports"] if p["port"] == out_port), {})
            got = [us for i, _, us in p.get("sojourn", []) if i == in_port]
            if got and when is not None:
                when.append(ln["mono_us"] / 1e6 - t0)
            xs += got
        return xs
    when = []
    req = waits(recv_port, probe_port, when)
    return req, waits(probe_port, recv_port), (when[0], when[-1]) if when else None


def senders_span(lines, t0, t1, ports, min_bytes=10000):
    """The first and last timeline interval (their ends, s since t0) in
    which the senders' ports sent the switch more than min_bytes together:
    when the incast ran, by the switch's clock (None: it never did)."""
    inside = [ln for ln in lines if t0 * 1e6 <= ln["mono_us"] <= t1 * 1e6]

    def rx(ln):
        return sum(p["rx_bytes"] for p in ln["ports"] if p["port"] in ports)
    on = [b["mono_us"] / 1e6 - t0 for a, b in zip(inside, inside[1:]) if rx(b) - rx(a) > min_bytes]
    return (on[0], on[-1]) if on else None


def quantile(xs, q):
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, -(-int(q * 100) * len(s) // 100) - 1))]


def fabric_probe(d, waits, unloaded):
    """The probe's fabric-only figures: the unloaded p50 (the hosts' own
    round trip: 4 processes scheduled on a loaded host) plus the time its
    frames waited in the switch's queues, both ways (p50 and p99 of each
    direction, summed: at least the round trip's own quantile)."""
    if waits is None:
        return
    req, resp = waits[0], waits[1]
    d["probe_wait_frames"] = len(req)
    if not req:
        return
    w50 = quantile(req, 0.5) + (quantile(resp, 0.5) or 0)
    w99 = quantile(req, 0.99) + (quantile(resp, 0.99) or 0)
    d["probe_wait_p50_us"], d["probe_wait_p99_us"] = w50, w99
    if unloaded is not None:
        d["probe_fabric_p50_us"] = round(unloaded + w50, 1)
        d["probe_fabric_p99_us"] = round(unloaded + w99, 1)


# The hw counters that split the requesters' waits (ohca_cc_counters).
WAITS = ("rc_tail_probes", "rc_timeouts_full", "rc_timeouts_no_rtt", "rc_timeouts_after_probe",
         "rc_timeouts_read", "rc_credit_timeouts", "rc_credit_probes",
         # why a timeout was no tail-loss probe (neither after one nor full)
         "rc_timeouts_frto", "rc_timeouts_recovery", "rc_timeouts_goback",
         "rc_timeouts_read_newest")


def summarize(name, mode, n, vms, window, unloaded, waits=None):
    """One cell's figures (details) from every VM's parse and the switch;
    waits: probe_waits() of the cell."""
    d = {"cell": name, "mode": mode, "senders": n, "line_rate_mbps": LINE_RATE, "errors": []}
    for i, v in enumerate(vms):
        c = v.get(name)
        if c is None:
            d["errors"].append(f"vm{i}: no result")
        elif c["rc"]:
            d["errors"].append(f"vm{i}: rc={c['rc']}")
    senders = [vms[i].get(name, {}) for i in range(1, n + 1)]
    bws = [s.get("bw_mbps") for s in senders]
    if n and all(b is not None for b in bws):
        d["per_sender_mbps"] = [round(b, 1) for b in bws]
        d["throughput_mbps"] = round(sum(bws), 1)
        d["shares"] = [round(b / sum(bws), 3) if sum(bws) else None for b in bws]
        d["jain"] = round(jain(bws), 3) if jain(bws) is not None else None
    elif n:
        d["errors"].append("a sender's bandwidth is missing")
    lost = [f"vm{i}" for i in range(1, n + 1) if vms[i].get(name, {}).get("clock_failed")]
    if lost:
        # not an error: the figure is perftest's own count over its window
        d["notes"] = [f"{', '.join(lost)}: perftest's clock failed, goodput from its iterations"]

    def total(key, who, part="delta"):
        return sum(vms[i].get(name, {}).get(part, {}).get(key, 0) for i in who)

    everyone = range(len(vms))
    if n:
        # from PROBE_DELAY s in (DCQCN converged) to the cell's end
        d["converged"] = {k: total(k, everyone, "converged")
                          for k in ("retrans", "timeouts", "spurious")}
        # the probe's own (its two QPs, vm0's and the probe VM's): one
        # packet at a time, so F-RTO cannot tell a late ACK from a loss
        d["converged"]["probe_timeouts"] = total("timeouts", (0, PROBE_VM), "converged")
        # why they waited (docs/wire.md, "What a requester waits for")
        for k in WAITS:
            d["converged"][k] = total(k, everyone, "converged")
        if window and window.get("converged_drops") is not None:
            d["converged"]["drops"] = window["converged_drops"]
    d["retrans_pkts"] = total("retrans", everyone)
    d["timeouts"] = total("timeouts", everyone)
    d["spurious_timeouts"] = total("spurious", everyone)
    d["waits"] = {k: total(k, everyone) for k in WAITS}
    d["cnp_sent"] = total("cnp_sent", everyone)
    d["cnp_handled"] = total("cnp_handled", everyone)
    d["ce_marked"] = total("ce", everyone)
    d["pauses_honoured"] = total("rx_pause", everyone)
    d["pauses_sent_by_hosts"] = total("tx_pause", everyone)
    pc = vms[PROBE_VM].get(name, {}) if PROBE_VM < len(vms) else {}
    probe = pc.get("probe")
    d["probe_p50_us"] = probe.get("p50") if probe else None
    d["probe_p99_us"] = probe.get("p99") if probe else None
    if not probe:
        d["errors"].append("no probe figures")
    elif pc.get("probe_clock_failed"):
        # perftest prints inf for every latency then
        d["errors"].append("probe: perftest's clock failed")
        d["probe_p50_us"] = d["probe_p99_us"] = None
    d["unloaded_p50_us"] = unloaded
    fabric_probe(d, waits, unloaded)
    if n and waits and waits[2] and window and window.get("senders_span"):
        # the probe's frames against the senders' (the switch's clock): a
        # probe outside the incast measured no incast
        (p0, p1), (s0, s1) = waits[2], window["senders_span"]
        d["probe_span_s"], d["senders_span_s"] = [p0, p1], [s0, s1]
        if p0 < s0 or p1 > s1:
            d.setdefault("notes", []).append(
                f"the probe ran {p0:.1f}-{p1:.1f} s, the senders {s0:.1f}-{s1:.1f} s")
    cw = (window or {}).get("common")
    if cw:
        # while every sender sent (the switch's clock): what the bottleneck
        # delivered, in goodput, and each sender's share of what it took in
        d["common_s"] = cw["seconds"]
        d["common_goodput_mbps"] = round(cw["tx_mbps"] * WRITE_GOODPUT, 1)
        d["common_jain"] = cw["jain"]
    if window:
        d["drops"] = window["drops"]
        d["pauses"] = window["pauses_sent"]
        d["ecn_marks"] = window["ecn_marks"]
        d["queue_p99_bytes"] = p99(window["queue_samples"])
        d["queue_max_bytes"] = window["queue_max_bytes"]
        d["wire_mbps"] = (round(window["tx_bytes"] * 8 / window["seconds"] / 1e6, 1)
                          if window["seconds"] else None)
        d["seconds"] = round(window["seconds"], 1)
        # The bottleneck's time (ohca-switch's egress split): line, the
        # shaper sending (the line is the limit); blocked, frames queued but
        # the receiving VM not reading its socket; paused, held by the
        # receiver's PFC; idle, nothing queued (the senders supplied less).
        eg = window.get("egress_us") or {}
        if sum(eg.values()):
            d["egress_pct"] = {k: round(100 * v / sum(eg.values()), 1) for k, v in eg.items()}
    else:
        d["errors"].append("no switch timeline in the cell's window")
    return d


def result_of(d):
    """The issue's keys, exactly (None where not measured)."""
    return {k: d.get(k) for k in KEYS}


def fmt(v, nd=0):
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def egress(d):
    e = d.get("egress_pct")
    if not e:
        return "–"
    return " / ".join(f"{e.get(k, 0):.0f}" for k in ("line", "blocked", "paused", "idle"))


def fabric_only(d):
    """The probe's waits in the switch and its fabric-only p99 (the
    unloaded p50 plus its p99 wait) against the unloaded p50."""
    w50, w99, f99 = (d.get(k) for k in ("probe_wait_p50_us", "probe_wait_p99_us",
                                        "probe_fabric_p99_us"))
    if w99 is None:
        return "–"
    u = d.get("unloaded_p50_us")
    x = f" ({f99 / u:.1f}x)" if f99 is not None and u else ""
    return f"{fmt(w50)} / {fmt(w99)}: {fmt(f99)}{x}"


def common(d):
    g = d.get("common_goodput_mbps")
    if g is None:
        return "–"
    return (f"{g:.0f} ({100 * g / LINE_RATE:.0f} %), {d['common_s']:.1f} s, "
            f"{fmt(d.get('common_jain'), 2)}")


def converged(d):
    """The cell from PROBE_DELAY s in: drops / retrans / timeouts (spurious)."""
    c = d.get("converged")
    if not c:
        return "–"
    sp = f" ({c['spurious']}; the probe's {c['probe_timeouts']})" if c.get("timeouts") else ""
    return f"{fmt(c.get('drops'))} / {c['retrans']} / {c['timeouts']}{sp}"


def spurious(d):
    """' (n spurious)': the timeouts F-RTO found spurious, where known."""
    n = d.get("spurious_timeouts")
    return f" ({n})" if n is not None and d.get("timeouts") else ""


def table(details, meta):
    rows = [
        f"Run {meta['date']} on {meta['host']}: {meta['vms']} VMs (TCG, 1 vCPU each), host load "
        f"{meta['load_before']} before, {meta['load_after']} after (1/5/15 min); line rate "
        f"{LINE_RATE} Mbit/s, buffer {BUFFER // 1024} KiB (+ {HEADROOM // 1024} KiB headroom for "
        f"the lossless priority), ECN {ECN}, PFC XOFF 64 KiB; "
        f"{meta['seconds']} s of `ib_write_bw` per sender ({meta['qps']} QPs, 64 KiB), "
        f"probe `ib_write_lat` 64 B x {meta['probe_iters']}, {meta['probe_delay']} s after the "
        f"cell's start (the 'from the probe's start' counters too); {meta['wall_s']:.0f} s in all.",
        "",
        "| cell | goodput Mb/s (% of line) | per sender Mb/s | Jain "
        "| while all sent, by the switch: goodput Mb/s (% of line), s, Jain "
        "| drops | retrans "
        "| timeouts (spurious) | from the probe's start: drops / retrans / timeouts "
        "(spurious; the probe's own) "
        "| CNPs sent / handled | pauses (switch / honoured) | queue p99 / max KB "
        "| probe p50 / p99 us (unloaded p50) "
        "| probe's wait in the switch p50 / p99 us: fabric-only p99 (x unloaded p50) "
        "| bottleneck's time % line / blocked / paused / idle | notes |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for d in details:
        tp = d.get("throughput_mbps")
        pct = f" ({100 * tp / LINE_RATE:.0f} %)" if tp is not None else ""
        q99, qmax = d.get("queue_p99_bytes"), d.get("queue_max_bytes")
        rows.append(
            f"| {d['cell']} | {fmt(tp)}{pct} | "
            f"{', '.join(fmt(x) for x in d.get('per_sender_mbps', [])) or '–'} | "
            f"{fmt(d.get('jain'), 2)} | {common(d)} | {fmt(d.get('drops'))} | "
            f"{fmt(d.get('retrans_pkts'))} | "
            f"{fmt(d.get('timeouts'))}{spurious(d)} | {converged(d)} | {fmt(d.get('cnp_sent'))} / {fmt(d.get('cnp_handled'))} | "
            f"{fmt(d.get('pauses'))} / {fmt(d.get('pauses_honoured'))} | "
            f"{fmt(q99 / 1000 if q99 is not None else None)} / "
            f"{fmt(qmax / 1000 if qmax is not None else None)} | "
            f"{fmt(d.get('probe_p50_us'))} / {fmt(d.get('probe_p99_us'))} "
            f"({fmt(d.get('unloaded_p50_us'))}) | {fabric_only(d)} | {egress(d)} | "
            f"{'; '.join(d['errors'] + d.get('notes', []))} |")
    return "\n".join(rows)


def plots(lines, cells, times, vm_ports):
    """One PNG per cell: per-sender ingress throughput and the receiver
    port's queue over time. Returns the files written ([] without
    matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    files = []
    for name, mode, n in cells:
        if n == 0 or name not in times or f"{name}-done" not in times:
            continue
        t0, t1 = times[name], times[f"{name}-done"]
        fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
        for i in range(1, n + 1):
            w = ohcavm.timeline_window(lines, t0, t1, vm_ports[i])
            if not w:
                continue
            xs, rx = zip(*[(t, p) for t, p in w["rx_series"]])
            rate = [(rx[k] - rx[k - 1]) * 8 / ((xs[k] - xs[k - 1]) * 1e6)
                    for k in range(1, len(xs))]
            ax1.plot(xs[1:], rate, label=f"vm{i}", linewidth=0.8)
        w = ohcavm.timeline_window(lines, t0, t1, vm_ports[0])
        if w:
            xs = [t for t, _ in w["tx_series"]]
            ax2.plot(xs, [q / 1000 for q in w["queue_samples"]], linewidth=0.8)
        ax1.axhline(LINE_RATE, color="grey", linestyle="--", linewidth=0.6)
        ax1.set_ylabel("into the switch, Mb/s")
        ax1.legend(loc="upper right", fontsize="small")
        ax2.set_ylabel("bottleneck queue, KB")
        ax2.set_xlabel("s since the cell began")
        fig.suptitle(f"{name}: {mode}, {n} senders into 1, {LINE_RATE} Mbit/s")
        path = os.path.join(OUT, f"{name}.png")
        fig.savefig(path, dpi=80)
        plt.close(fig)
        files.append(path)
    return files


def update_doc(text):
    with open(DOC) as f:
        doc = f.read()
    block = f"{BEGIN}\n{text}\n{END}"
    if BEGIN in doc and END in doc:
        doc = doc[:doc.index(BEGIN)] + block + doc[doc.index(END) + len(END):]
    else:
        doc = doc.rstrip("\n") + "\n\n" + block + "\n"
    with open(DOC, "w") as f:
        f.write(doc)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    global PROBE_VM, SECONDS, PROBE_DELAY, LINE_RATE
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=int, default=8, help="ib_write_bw -D per cell")
    ap.add_argument("--qps", type=int, default=2, help="QPs per sender")
    ap.add_argument("--probe-iters", type=int, default=100)
    ap.add_argument("--probe-delay", type=int, default=PROBE_DELAY,
                    help="s from the cell's barrier to the probe's start and the counters' "
                         "'converged' snapshot (the senders' perftest starts sending 1-3 s in)")
    ap.add_argument("--line-rate", type=int, default=LINE_RATE,
                    help="Mbit/s of every switch port (the devices' speed too)")
    # 1: one sender alone, what a guest can send without a bottleneck
    ap.add_argument("--senders", default="1,2,3")
    ap.add_argument("--modes", default="droptail,pfc,dcqcn")
    ap.add_argument("--kinds", default=",".join(CELL_KINDS),
                    help="cells of other kinds (CELL_KINDS), after the incast ones")
    ap.add_argument("--tx-burst", type=int, default=None,
                    help="the devices' tx-burst in bytes (QEMU property; 0: not paced)")
    ap.add_argument("--timeout", type=int, default=2400)
    ap.add_argument("--no-docs", action="store_true", help="leave docs/bench.md alone")
    ap.add_argument("--no-ib", action="store_true", help='no "IB credits, 3:1" cell')
    args = ap.parse_args()
    senders = [int(x) for x in args.senders.split(",")]
    modes = args.modes.split(",")
    cells = [("unloaded", "unloaded", 0)]
    cells += [(f"{m}-{n}to1", m, n) for n in senders for m in modes]
    kinds = [k for k in args.kinds.split(",") if k]
    kind_of = {}
    for k in kinds:
        for cell in CELL_KINDS[k].cells():
            cells.append(cell)
            kind_of[cell[0]] = k
    # vm0 receives, vm1..vmN send, the VM after them probes (alone on
    # its vCPU: see the guest's cell())
    PROBE_VM, SECONDS = max(senders) + 1, args.seconds
    PROBE_DELAY, LINE_RATE = args.probe_delay, args.line_rate
    nvms = PROBE_VM + 1
    os.makedirs(OUT, exist_ok=True)
    # away_after_us: the switch's process away for longer than 5 ms (its
    # loop looks every millisecond) leaves frames in the sockets that a line
    # would have sent as they came; an idle port earns that time, so they
    # make no queue, marks or drops (docs/congestion.md, "ECN + DCQCN in the
    # VMs against the model")
    switch = {"line_rate": LINE_RATE, "buffer": BUFFER, "ecn": ECN, "pfc": "0",
              "pfc_trust": "dscp", "headroom": HEADROOM, "timeline": True,
              "timeline_ms": TIMELINE_MS, "away_after_us": AWAY_AFTER_US}
    def kvs(d):
        return " ".join(f"{k}={v}" for k, v in d.items())

    env = (f"SECONDS_BW={args.seconds} QPS={args.qps} PROBE_ITERS={args.probe_iters} "
           f"PROBE_VM={PROBE_VM} PROBE_DELAY={PROBE_DELAY} "
           f"DCQCN_TUNED='{kvs(DCQCN_TUNED)}' DCQCN_DEFAULTS='{kvs(DCQCN_DEFAULTS)}' "
           f"CELLS='{' '.join(f'{a}:{b}:{c}' for a, b, c in cells)}'\n")
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "host": f"{os.cpu_count()} cores", "vms": nvms, "seconds": args.seconds,
            "qps": args.qps, "probe_iters": args.probe_iters, "probe_delay": PROBE_DELAY,
            "line_rate_mbps": LINE_RATE, "load_before": loadavg()}
    meta["tx_burst"] = args.tx_burst
    print(f"fabric-bench: {nvms} VMs, cells: {', '.join(c[0] for c in cells)}", flush=True)
    script = env + "".join(CELL_KINDS[k].shell for k in kinds) + SCRIPT
    t_start = time.monotonic()
    try:
        extra = ([] if args.tx_burst is None else
                 ["-global", "ohca.pace=off"] if args.tx_burst == 0 else
                 ["-global", f"ohca.tx-burst={args.tx_burst}"])
        c = ohcavm.Cluster("fabric-bench", nvms=nvms, wire="switch", switch=switch, smp=1,
                           mem="512M", logdir=os.path.join(OUT, "logs"), extra_args=extra)
    except ohcavm.HarnessError as e:
        print(f"fabric-bench: {e}", file=sys.stderr)
        return 2
    with c:
        c.start(script)
        done = threading.Event()

        def progress():
            seen = set()
            while not done.wait(1):
                for k, t in sorted(c.barrier_times.items(), key=lambda kv: kv[1]):
                    if k not in seen:
                        seen.add(k)
                        print(f"  [{t - t_start:6.0f} s] {k}", flush=True)

        th = threading.Thread(target=progress, daemon=True)
        th.start()
        results = c.wait(timeout=args.timeout)
        done.set()
        th.join()
        times = dict(c.barrier_times)
        lines = ohcavm.switch_timeline(c)
    # the "IB credits, 3:1" cell: an InfiniBand fabric, its own boot
    ib_cell = (fabric_bench_ib.fabric_bench_cell(args.seconds, args.qps, LINE_RATE)
               if not args.no_ib and 3 in senders else None)
    meta["load_after"] = loadavg()
    meta["wall_s"] = time.monotonic() - t_start
    stats = results[0].wire_stats or {}
    vm_ports = {int(k): v for k, v in stats.get("vm_ports", {}).items()}
    for r in results:
        if r.error or r.timed_out:
            print(f"fabric-bench: {r.name}: {r.error}", file=sys.stderr)
    outputs = [r.output or "" for r in results]
    vms = [parse_vm(o) for o in outputs]
    unloaded = (vms[PROBE_VM].get("unloaded", {}).get("probe") or {}).get("p50")
    if vms[PROBE_VM].get("unloaded", {}).get("probe_clock_failed"):
        unloaded = None
    details, kind_details = [], {k: [] for k in kinds}
    for name, mode, n in cells:
        window = waits = None
        if name in times and f"{name}-done" in times and 0 in vm_ports:
            window = ohcavm.timeline_window(lines, times[name], times[f"{name}-done"],
                                            vm_ports[0])
            if PROBE_VM in vm_ports:
                waits = probe_waits(lines, times[name], times[f"{name}-done"], vm_ports[0],
                                    vm_ports[PROBE_VM])
            if window and name not in kind_of:
                t0, t1 = times[name], times[f"{name}-done"]
                window["senders_span"] = senders_span(
                    lines, t0, t1, {vm_ports[i] for i in range(1, n + 1) if i in vm_ports})
                conv = ohcavm.timeline_window(lines, t0 + PROBE_DELAY, t1, vm_ports[0])
                window["converged_drops"] = conv["drops"] if conv else None
                cw = (fabric_bench_ib.common_window(lines, t0, t1, [vm_ports[i] for i in
                                                                   range(1, n + 1)])
                      if n and all(i in vm_ports for i in range(1, n + 1)) else None)
                if cw:
                    a = t0 + cw["start_s"]
                    bw = ohcavm.timeline_window(lines, a, a + cw["seconds"], vm_ports[0])
                    if bw and bw["seconds"]:
                        cw["tx_mbps"] = bw["tx_bytes"] * 8 / bw["seconds"] / 1e6
                        window["common"] = cw
        if name in kind_of:
            d = CELL_KINDS[kind_of[name]].summarize(name, mode, n, outputs, window)
            for i, v in enumerate(vms):
                if v.get(name, {}).get("rc"):
                    d["errors"].append(f"vm{i}: rc={v[name]['rc']}")
            kind_details[kind_of[name]].append(d)
        else:
            details.append(summarize(name, mode, n, vms, window, unloaded, waits))
    if ib_cell:
        details.append(ib_cell)
    # The keys for every cell; a kind's cells add their own.
    extra_results = [dict(result_of(d), **{k: v for k, v in d.items() if k not in KEYS})
                     for k in kinds for d in kind_details[k]]
    with open(os.path.join(OUT, "results.json"), "w") as f:
        json.dump([result_of(d) for d in details if d["senders"] > 0] + extra_results, f,
                  indent=1)
    with open(os.path.join(OUT, "details.json"), "w") as f:
        # times: the barriers' time.monotonic(), the switch timeline's
        # mono_us / 1e6 (logs/wire/sw0/timeline.jsonl), to look at a cell again
        json.dump({"meta": meta, "cells": details, "kinds": kind_details, "switch": stats,
                   "times": times}, f, indent=1)
    text = table(details, meta)
    for k in kinds:
        rows = CELL_KINDS[k].rows(kind_details[k])
        if rows:
            text += "\n\n" + rows
    print(text)
    pngs = plots(lines, cells, times, vm_ports)
    if pngs:
        text += "\n\nPlots (build/fabric-bench/): " + ", ".join(os.path.basename(p) for p in pngs)
    if not args.no_docs:
        update_doc(text)
    print(f"fabric-bench: {OUT}/results.json, details.json"
          + (f", {len(pngs)} plots" if pngs else ", no plots (no matplotlib)"), flush=True)
    return 1 if any(d["errors"] for d in details + sum(kind_details.values(), [])) else 0


if __name__ == "__main__":
    sys.exit(main())
