#!/usr/bin/env python3
"""Lossless incast, measured (issue 22, item 6): three senders into one
receiver through one `ohca-switch` (InfiniBand mode) whose egress ports
are shaped to LINE_RATE Mbit/s, LID-routed `ib_write_bw` (no `-x`,
QPS QPs each, 64 KiB WRITEs for SECONDS), opensm in the receiver's VM;
and, in the same run, the same incast of RoCE VMs on today's lossy
wire: the Ethernet switch at the same line rate with a drop-tail buffer
(BUFFER) and no flow control at all (no PFC, no ECN): what the VMs'
dgram wire does (a UDP socket that drops when full) with a bottleneck
that a 3:1 incast can be put through (the harness's dgram wire joins
two VMs only).

Per cell: each sender's goodput (perftest's BW average) and share,
Jain's index, the goodput against the line rate (the bottleneck busy),
drops anywhere (the switch: its counters over the whole run and, IB,
the PMA's PortXmitDiscards/PortRcvErrors of every switch port over the
cell, read with perfquery; the devices: rc_out_of_seq_dropped,
and, IB, their own PortXmitDiscards/PortRcvErrors/
ExcessiveBufferOverrunErrors; their other receive drops, roce_rx_dropped,
apart: packets for no QP and management), the
transport counters (rc_retrans_pkts, rc_local_ack_timeouts), and how
the senders were held back (IB: the fullest each sender's switch input
buffer was, of the blocks it advertised; the devices' PortXmitWait).

    python3 tests/bench/fabric_bench_ib.py [--seconds S] [--qps N]
        [--line-rate MBPS] [--cells ib,dgram] [--no-docs]

Writes build/fabric-bench-ib/details.json and the table into
docs/bench.md between its ib-incast markers (dated, with the host's
load). `fabric_bench.py` runs the IB cell as its "IB credits, 3:1" row
(fabric_bench_cell()). Exit 0 when every cell met its claims (IB: no
drop, no retransmission, no timeout, Jain >= 0.95 over the interval all
senders sent, from the switch's timeline), 1 otherwise, 2 when the VMs
could not be run.
"""

import argparse
import datetime
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "vm"))
import ohcavm  # noqa: E402

# Below what three TCG VMs can push and one can take on a busy 2-core
# host (the Ethernet bench's 3:1 cells reach 55-75 Mbit/s at 200), so
# the switch's line is the bottleneck.
LINE_RATE = 40
BUFFER = 1 << 20  # the drop-tail buffer of the dgram cell's switch
SENDERS = 3
OUT = os.path.join(TOP, "build", "fabric-bench-ib")
DOC = os.path.join(TOP, "docs", "bench.md")
BEGIN = "<!-- ib-incast table: begin -->"
END = "<!-- ib-incast table: end -->"

# The guests' side, both cells. LL is ib or eth. IB: opensm in VM 0,
# every port Active, IPoIB up (perftest exchanges its QP numbers and
# LIDs over TCP at the IPoIB addresses).
SCRIPT = r"""
recv_ip=$(echo $OHCA_VM_IPS | cut -d' ' -f1)
kv() { sed -n 's/^\([A-Za-z]*\):\.*\([0-9]*\)$/\1=\2/p' | sed "s/^/$1/" | tr '\n' ' '; }
snap() {
	ohca_hw_counters
	[ "$LL" = ib ] || return 0
	echo "PMA $(perfquery | kv '')"
	if [ "$OHCA_VM_INDEX" = 0 ]; then
		local p
		for p in $(seq 1 $OHCA_NUM_VMS); do
			echo "PMA $(perfquery "$swlid" "$p" | kv "sw$p.")"
		done
	fi
}
if [ "$LL" = ib ]; then
	if [ "$OHCA_VM_INDEX" = 0 ]; then
		opensm -B -f /tmp/opensm.log
	fi
	ohca_wait_port ACTIVE 400 || { tail -n 40 /tmp/opensm.log 2>/dev/null; exit 1; }
	modprobe ib_ipoib
	ohca_poll 30 test -e /sys/class/net/ib0
	ip addr add "$OHCA_IP/$OHCA_PREFIX" dev ib0
	ip link set ib0 up
	X=
	# the switch's LID: its port 0, one hop away by directed route
	swlid=$(smpquery -D portinfo 0,1 0 | sed -n 's/^Lid:\.*\([0-9]*\)$/\1/p')
	echo "SWITCH_LID ${swlid:-none}"
else
	X="-x $(ohca_gid_index)"
fi
ohca_barrier all-up 600 || exit 1
[ "$OHCA_VM_INDEX" = 0 ] || ohca_retry 120 ping -c 1 -W 2 "$recv_ip" >/dev/null ||
	echo "WARN no ping to $recv_ip"
# -u 18: a local ACK timeout of 1.07 s. On the IB fabric (lossless: the
# device's RC timer is the local ACK timeout alone) it must exceed the
# longest an ACK waits on a host at load 20-30 (with perftest's 14, which
# the device floors at 200 ms, a 2026-12-06 run timed out 139 times without
# one packet lost); on the lossy wire the measured RTO still tries earlier.
bw="ib_write_bw -d $OHCA_IBDEV $X -D $SECONDS_BW -s 65536 -q $QPS -F -u 18"
listening() { ss -Hltn "sport = :$1" | grep -q .; }
rc=0 pids=
echo "BEFORE $(snap | tr '\n' ' ')"
if [ "$OHCA_VM_INDEX" = 0 ]; then
	for i in $(seq 1 $NSEND); do
		timeout 300 $bw -p $((18514 + i)) >/tmp/s$i 2>&1 & pids="$pids $!"
	done
	for i in $(seq 1 $NSEND); do ohca_poll 60 listening $((18514 + i)) || rc=1; done
	ohca_barrier cell 300 || exit 1
	for i in $pids; do wait $i || rc=1; done
	for i in $(seq 1 $NSEND); do grep -E '^ 65536' /tmp/s$i || { rc=1; cat /tmp/s$i; }; done
elif [ "$OHCA_VM_INDEX" -le "$NSEND" ]; then
	ohca_barrier cell 300 || exit 1
	ohca_retry 60 timeout 300 $bw -p $((18514 + OHCA_VM_INDEX)) "$recv_ip" >/tmp/c 2>&1 ||
		{ rc=1; cat /tmp/c; }
	r=$(awk '$1 == 65536 && NF >= 5 {print $4}' /tmp/c | tail -n 1)
	echo "BW vm$OHCA_VM_INDEX ${r:-none} MB/s"
	grep -E 'Link type|remote address' /tmp/c
else
	ohca_barrier cell 300 || exit 1
fi
ohca_barrier cell-done 300
echo "AFTER $(snap | tr '\n' ' ')"
echo "RC $rc"
exit $rc
"""


def counters(text):
    return {k: int(v) for k, v in re.findall(r"([\w.]+)=(\d+)", text)}


def delta(output):
    """A VM's counter growth between its BEFORE and AFTER lines."""
    b = re.search(r"^BEFORE (.*)$", output, re.M)
    a = re.search(r"^AFTER (.*)$", output, re.M)
    if not (a and b):
        return None
    before, after = counters(b.group(1)), counters(a.group(1))
    return {k: after[k] - before[k] for k in after if k in before}


def common_window(lines, t0, t1, ports, lo=0.02, hi=0.98):
    """The senders' shares over the interval all of them were sending,
    from the switch's timeline (one line per 10 ms: each port's bytes in
    so far): perftest's own averages are over windows that start and end
    apart (each sender connects when it gets the CPU), so a sender that
    started first had the line to itself for a while. A sender sends from
    when its bytes in over the cell [t0, t1] (time.monotonic()) passed lo
    of its total to when they passed hi (perftest's TCP set-up over IPoIB
    and the tail below that); the common interval is the latest start to
    the earliest end. Returns {seconds, start_s, mbps: per port, jain,
    bottleneck...} or None without lines or overlap."""
    inside = [ln for ln in lines if t0 * 1e6 <= ln["mono_us"] <= t1 * 1e6]
    if len(inside) < 2:
        return None

    def rx(ln, p):
        return next((x["rx_bytes"] for x in ln["ports"] if x["port"] == p), 0)

    starts, ends = [], []
    for p in ports:
        base, total = rx(inside[0], p), rx(inside[-1], p) - rx(inside[0], p)
        if total <= 0:
            return None  # it sent nothing in the cell
        starts.append(next(ln["mono_us"] for ln in inside if rx(ln, p) - base >= lo * total))
        ends.append(next(ln["mono_us"] for ln in inside if rx(ln, p) - base >= hi * total))
    a, b = max(starts), min(ends)
    if b <= a:
        return None
    first = next(ln for ln in inside if ln["mono_us"] >= a)
    last = [ln for ln in inside if ln["mono_us"] <= b][-1]
    secs = (last["mono_us"] - first["mono_us"]) / 1e6
    if secs <= 0:
        return None
    mbps = [(rx(last, p) - rx(first, p)) * 8 / secs / 1e6 for p in ports]
    return {"seconds": round(secs, 2), "start_s": round(a / 1e6 - t0, 2),
            "mbps": [round(x, 2) for x in mbps], "jain": round(fb().jain(mbps), 3),
            "starts_s": [round(x / 1e6 - t0, 2) for x in starts],
            "ends_s": [round(x / 1e6 - t0, 2) for x in ends]}


def fb():
    """fabric_bench, for its helpers (jain, fmt, loadavg); imported here,
    not at the top, because it imports this module at its own."""
    import fabric_bench
    return fabric_bench


def run_cell(kind, seconds, qps, line_rate, logdir, timeout=2400):
    """One incast cell (kind "ib" or "dgram") in its own boot of
    SENDERS + 1 VMs; returns its details (fabric_bench's keys and more)."""
    nvms = SENDERS + 1
    ib = kind == "ib"
    name = "ib-credits-3to1" if ib else "dgram-droptail-3to1"
    d = {"cell": name, "mode": "IB credits" if ib else "dgram (RoCE, drop-tail)",
         "senders": SENDERS, "line_rate_mbps": line_rate, "errors": []}
    # timeline: each port's bytes per 10 ms, the senders' shares over the
    # interval they all sent (common_window)
    switch = {"line_rate": line_rate, "timeline": True}
    if not ib:
        switch["buffer"] = BUFFER
    env = (f"LL={'ib' if ib else 'eth'} SECONDS_BW={seconds} QPS={qps} NSEND={SENDERS}\n")
    t0 = time.monotonic()
    try:
        c = ohcavm.Cluster(f"incast-{kind}", nvms=nvms, wire="switch", switch=switch, smp=1,
                           mem="768M" if ib else "512M", link_layer="ib" if ib else "eth",
                           logdir=os.path.join(logdir, kind))
    except ohcavm.HarnessError as e:
        d["errors"].append(f"harness: {e}")
        return d
    with c:
        c.start(env + SCRIPT)
        results = c.wait(timeout=timeout)
        times = dict(c.barrier_times)
    lines = ohcavm.switch_timeline(c)
    d["boot_and_run_s"] = round(time.monotonic() - t0)
    stats = results[0].wire_stats or {}
    for r in results:
        if r.error or r.timed_out or not re.search(r"^RC 0$", r.output, re.M):
            why = r.error or ("timed out" if r.timed_out else "a part failed")
            d["errors"].append(f"{r.name}: {why}")
    deltas = [delta(r.output) or {} for r in results]
    bws = []
    for i in range(1, SENDERS + 1):
        m = re.search(rf"^BW vm{i} ([\d.]+) MB/s$", results[i].output, re.M)
        bws.append(float(m.group(1)) * 1048576 * 8 / 1e6 if m else None)
    if all(b is not None for b in bws):
        d["per_sender_mbps"] = [round(b, 1) for b in bws]
        d["throughput_mbps"] = round(sum(bws), 1)
        d["shares"] = [round(b / sum(bws), 3) for b in bws]
        d["jain"] = round(fb().jain(bws), 3)
        d["busy_pct"] = round(100 * sum(bws) / line_rate, 1)
    else:
        d["errors"].append("a sender's bandwidth is missing")
    if ib:
        # perftest without -x: an IB link, the peer by its LID
        text = results[1].output
        if not (re.search(r"Link type\s+: IB", text)
                and re.search(r"remote address: LID 0x0*[1-9a-f][0-9a-f]* QPN", text)):
            d["errors"].append("not LID-routed on IB")

    def total(key):
        return sum(x.get(key, 0) for x in deltas)

    d["retrans_pkts"] = total("rc_retrans_pkts")
    d["timeouts"] = total("rc_local_ack_timeouts")
    d["spurious_timeouts"] = total("rc_spurious_timeouts")
    # a device's drops of data: out of sequence (behind a loss upstream)
    # and (IB) its PMA's discards and receive errors; its receive path's
    # other drops (roce_rx_dropped: packets for no QP -- a QP perftest had
    # destroyed, a multicast group the node did not join --, management
    # packets on VL15 beyond their bound) are counted apart
    d["device_drops"] = (total("rc_out_of_seq_dropped") + total("PortXmitDiscards")
                         + total("PortRcvErrors") + total("ExcessiveBufferOverrunErrors"))
    d["rx_dropped_other"] = total("roce_rx_dropped")
    d["no_qp"] = total("roce_bad_qpn")
    d["dup_requests"] = total("rc_dup_requests")
    d["seconds"] = (round(times["cell-done"] - times["cell"], 1)
                    if "cell" in times and "cell-done" in times else None)
    ports = stats.get("ports", [])
    vm_ports = {int(k): v for k, v in stats.get("vm_ports", {}).items()}
    if "cell" in times and "cell-done" in times and all(i in vm_ports for i in range(SENDERS + 1)):
        w = common_window(lines, times["cell"], times["cell-done"],
                          [vm_ports[i] for i in range(1, SENDERS + 1)])
        if w is not None:
            d["common"] = w
            d["jain_common"] = w["jain"]
            d["shares_common"] = [round(x / sum(w["mbps"]), 3) for x in w["mbps"]]
    if ib:
        # the switch over the whole run (its --stats) and over the cell
        # (the PMA's counters of each port, from VM 0)
        # (not xmit_discards: those include the bring-up's packets for
        # ports not yet Active; the PMA's count over the cell has them)
        whole = sum(p.get("overruns", 0) + p.get("hoq_discards", 0) + p.get("bad_frames", 0)
                    for p in ports)
        cell = sum(v for k, v in deltas[0].items()
                   if re.match(r"sw\d+\.(PortXmitDiscards|PortRcvErrors|"
                               r"ExcessiveBufferOverrunErrors)$", k))
        d["switch_drops"] = whole + cell
        byport = {p["port"]: p for p in ports}
        d["sender_input_hwm_blocks"] = [byport.get(vm_ports.get(i), {}).get("in_hwm_blocks")
                                        for i in range(1, SENDERS + 1)]
        d["vl_buffer_blocks"] = 256
        d["device_xmit_wait"] = [deltas[i].get("PortXmitWait") for i in range(1, SENDERS + 1)]
        rx = vm_ports.get(0)
        words = deltas[0].get(f"sw{rx}.PortXmitData")
        if words is not None and d["seconds"]:
            d["wire_mbps"] = round(words * 4 * 8 / d["seconds"] / 1e6, 1)
        d["rx_port_rate_waits"] = byport.get(rx, {}).get("rate_waits")
        d["drops"] = d["switch_drops"] + d["device_drops"]
    else:
        d["switch_drops"] = sum(pr.get("drops", 0) for p in ports for pr in p.get("prio", []))
        d["drops"] = d["switch_drops"] + d["device_drops"]
    for key in ("cnp_sent", "cnp_handled", "pauses", "queue_p99_bytes", "probe_p50_us",
                "probe_p99_us", "unloaded_p50_us"):
        d.setdefault(key, None)
    if ib:
        for key in ("drops", "retrans_pkts", "timeouts"):
            if d.get(key):
                d["errors"].append(f"{key} {d[key]} (not 0)")
        # the fabric's fairness: the shares while all three sent (perftest's
        # own windows start apart; without a timeline, its averages)
        fair = d.get("jain_common", d.get("jain"))
        if fair is not None and fair < 0.95:
            d["errors"].append(f"Jain {fair} < 0.95")
    with open(os.path.join(logdir, f"{kind}-switch.json"), "w") as f:
        json.dump(stats, f, indent=1)
    return d


def fabric_bench_cell(seconds, qps, line_rate):
    """The "IB credits, 3:1" row of `make fabric-bench` (fabric_bench.py):
    the IB cell at the Ethernet cells' line rate, its details in their
    keys."""
    os.makedirs(OUT, exist_ok=True)
    d = run_cell("ib", seconds, qps, line_rate, OUT)
    d["cell"] = "IB credits, 3:1"
    return d


def table(cells, meta):
    fmt = fb().fmt
    rows = [
        f"Run {meta['date']} on {meta['host']}: {SENDERS + 1} VMs per cell (TCG, 1 vCPU each), "
        f"host load {meta['load_before']} before, {meta['load_after']} after (1/5/15 min); "
        f"line rate {meta['line_rate']} Mbit/s at every switch port; {meta['seconds']} s of "
        f"`ib_write_bw -u 18` per sender ({meta['qps']} QPs, 64 KiB WRITEs); the dgram cell's switch: "
        f"{BUFFER // 1024} KiB drop-tail buffer, no PFC, no ECN; {meta['wall_s']:.0f} s in all.",
        "",
        "| cell | goodput Mb/s (% of line) | bottleneck on the wire Mb/s (% busy) | "
        "per sender Mb/s (share) | Jain | while all sent (switch timeline): s, per sender Mb/s "
        "(share), Jain | drops: switch / "
        "devices (other receive drops) | retrans | local ACK timeouts (spurious) | senders held back: "
        "switch input buffer max (of 256 blocks) / device PortXmitWait | notes |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for d in cells:
        tp = d.get("throughput_mbps")
        pct = f" ({d['busy_pct']:.0f} %)" if d.get("busy_pct") is not None else ""
        per = ", ".join(f"{fmt(b, 1)} ({s:.2f})" for b, s in
                        zip(d.get("per_sender_mbps", []), d.get("shares", []))) or "–"
        held = "–"
        if d.get("sender_input_hwm_blocks") is not None:
            held = (", ".join(fmt(x) for x in d["sender_input_hwm_blocks"]) + " / "
                    + ", ".join(fmt(x) for x in d.get("device_xmit_wait") or []))
        common = "–"
        if d.get("common"):
            w = d["common"]
            common = (f"{fmt(w['seconds'], 1)}: "
                      + ", ".join(f"{fmt(b, 1)} ({s:.2f})"
                                  for b, s in zip(w["mbps"], d["shares_common"]))
                      + f", **{fmt(w['jain'], 2)}**")
        wire = "–"
        if d.get("wire_mbps") is not None:
            wire = f"{fmt(d['wire_mbps'], 1)} ({100 * d['wire_mbps'] / d['line_rate_mbps']:.0f} %)"
        rows.append(
            f"| {d['cell']} | {fmt(tp, 1)}{pct} | {wire} | {per} | {fmt(d.get('jain'), 2)} | "
            f"{common} | "
            f"{fmt(d.get('switch_drops'))} / {fmt(d.get('device_drops'))} "
            f"({fmt(d.get('rx_dropped_other'))}) | "
            f"{fmt(d.get('retrans_pkts'))} | {fmt(d.get('timeouts'))} "
            f"({fmt(d.get('spurious_timeouts'))}) | {held} | {'; '.join(d['errors'])} |")
    return "\n".join(rows)


def update_doc(text):
    """The table between the markers in docs/bench.md (appended with them
    the first time)."""
    with open(DOC) as f:
        doc = f.read()
    head, found, rest = doc.partition(BEGIN)
    tail = rest.partition(END)[2] if found else "\n"
    head = head if found else doc.rstrip("\n") + "\n\n"
    with open(DOC, "w") as f:
        f.write(f"{head}{BEGIN}\n{text}\n{END}{tail}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=int, default=10, help="ib_write_bw -D per sender")
    ap.add_argument("--qps", type=int, default=2, help="QPs per sender")
    ap.add_argument("--line-rate", type=int, default=LINE_RATE, help="Mbit/s")
    ap.add_argument("--cells", default="ib,dgram")
    ap.add_argument("--no-docs", action="store_true", help="leave docs/bench.md alone")
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "host": f"{os.cpu_count()} cores", "seconds": args.seconds, "qps": args.qps,
            "line_rate": args.line_rate, "load_before": fb().loadavg()}
    t0 = time.monotonic()
    cells = []
    for kind in args.cells.split(","):
        print(f"fabric-bench-ib: {kind} cell ({time.monotonic() - t0:.0f} s)", flush=True)
        cells.append(run_cell(kind, args.seconds, args.qps, args.line_rate, OUT))
        print(json.dumps(cells[-1]), flush=True)
    meta["load_after"] = fb().loadavg()
    meta["wall_s"] = time.monotonic() - t0
    with open(os.path.join(OUT, "details.json"), "w") as f:
        json.dump({"meta": meta, "cells": cells}, f, indent=1)
    text = table(cells, meta)
    print(text)
    if not args.no_docs:
        update_doc(text)
    return 1 if any(d["errors"] for d in cells if d["cell"].startswith("ib")) else 0


if __name__ == "__main__":
    sys.exit(main())
