"""Congestion on the RoCE fabric, in VMs (issue 23; docs/congestion.md):
two senders into one receiver through one Ethernet ohca-switch whose
egress is shaped to a line rate the VMs can exceed, so the receiver's
port is a real bottleneck with a finite buffer. One boot, three phases
of RoCE `ib_write_bw` (two QPs per sender), each measured by the guests'
own counters before and after it, and by the switch's timeline between
the barriers that start and end it:

* drop-tail: no flow or congestion control at the hosts (the switch's
  PFC pauses are ignored by the devices, nothing is ECT): the buffer
  overflows and the senders retransmit (the storm; it also shows that
  the bottleneck exists);
* ECN + DCQCN: the switch marks CE between Kmin and Kmax, the receiver's
  notification point answers with CNPs, the senders' reaction points
  cut their rates (rp_cnp_handled);
* PFC (make test-fabric only): the devices honour the switch's pauses
  on priority 0 (`dcb pfc`), DCQCN off again: no drop at the switch, no
  retransmission, no timeout.

The rate machine and the pause timing are the engine's unit tests'
(dcqcn_test.cpp, pfc_test.cpp, rtt_test.cpp); this is the end-to-end
proof."""

import os
import re

import pytest

from vmtest import assert_ok, ohcavm

# 50 Mbit/s per egress port (the devices' speed too: each sender is paced
# to it, so two senders oversubscribe the receiver's port twice over
# whenever each can move more than half the line), a 256 KiB shared
# buffer (the senders' RC windows queue 360-830 KB at the bottleneck: at
# 200 Mbit/s and 1 MiB, with the devices paced and the switch keeping its
# line, the buffer never overflowed on 2026-12-06), RED marking of ECT
# packets from 20 KB of queue; priorities by
# DSCP, priority 0 (DSCP 0-7) lossless: XOFF at 64 KiB per ingress port
# and 6 MiB of headroom that only it may fill (a sender's RC windows reach
# the switch in one burst, past XOFF: docs/testing.md). One switch setting
# serves every phase: drop-tail and DCQCN run on traffic class 32 (DSCP 8,
# priority 1: lossy, the shared buffer only), PFC on traffic class 0. The
# devices classify their own RoCE packets by PCP (untagged: priority 0),
# so a pause of priority 0 stops them.
SWITCH = {"line_rate": 50, "buffer": 256 << 10, "ecn": "20000:200000:0.2", "pfc": "0",
          "pfc_trust": "dscp", "headroom": 6 << 20, "timeline": True}

SCRIPT = r"""
fail() { echo "FAIL: $*"; exit 1; }
snap() { ohca_cc_counters; }
recv_ip=$(echo $OHCA_VM_IPS | cut -d' ' -f1)
ohca_barrier all-up 180 || exit 1
gid=$(ohca_gid_index)
listening() { ss -Hltn "sport = :$1" | grep -q .; }
# phase NAME BW-ARGS: one incast of ib_write_bw with these extra arguments
phase() {
	local before after rc=0 r p1 p2
	local bw="ib_write_bw -d $OHCA_IBDEV -x $gid -D 4 -s 65536 -q 2 -F --report_gbits $2"
	before=$(snap)
	if [ "$OHCA_VM_INDEX" = 0 ]; then
		timeout 150 $bw -p 18515 >/tmp/$1.s1 2>&1 & p1=$!
		timeout 150 $bw -p 18516 >/tmp/$1.s2 2>&1 & p2=$!
		ohca_poll 30 listening 18515 && ohca_poll 30 listening 18516 || rc=1
		ohca_barrier "$1" 120 || return 1
		wait $p1 || rc=1
		wait $p2 || rc=1
	else
		ohca_barrier "$1" 120 || return 1
		ohca_retry 30 timeout 150 $bw -p $((18514 + OHCA_VM_INDEX)) "$recv_ip" \
			>/tmp/$1.c 2>&1 || { rc=1; cat /tmp/$1.c; }
		r=$(awk '/^ *65536/ {print $4}' /tmp/$1.c | tail -n 1)
		echo "BW $1 vm$OHCA_VM_INDEX ${r:-?} Gb/s"
	fi
	after=$(snap)
	echo "PHASE $1 vm$OHCA_VM_INDEX rc=$rc before: $before after: $after"
	ohca_barrier "$1-done" 120
}
echo "=== drop-tail ==="
phase droptail --tclass=32
echo "=== dcqcn ==="
[ "$OHCA_VM_INDEX" = 0 ] || echo 1 >/sys/class/net/$OHCA_IFACE/ecn/roce_rp/enable/1 ||
	fail "roce_rp/enable/1"
phase dcqcn --tclass=32
"""

PFC_PHASE = r"""
echo "=== pfc ==="
[ "$OHCA_VM_INDEX" = 0 ] || echo 0 >/sys/class/net/$OHCA_IFACE/ecn/roce_rp/enable/1 ||
	fail "roce_rp/enable/1 off"
ohca_pfc 0:on || fail "dcb pfc set"
# the local ACK timeout (2.1 s) is the only timer on a lossless priority:
# above the deepest queue the headroom allows (7 MiB at 50 Mbit/s: 1.2 s)
phase pfc "--tclass=0 -u 19"
ohca_pfc all:off
"""

# The PFC phase runs in make test-fabric (OHCA_IB_FABRIC_FULL=1), not in
# make test's integration stage, which is at its time budget.
FULL = os.environ.get("OHCA_IB_FABRIC_FULL") == "1"
PHASES = ("droptail", "dcqcn", "pfc") if FULL else ("droptail", "dcqcn")


def phases(output):
    """{phase: {counter: after - before}} from a VM's PHASE lines, and
    each phase's rc."""
    deltas, rcs = {}, {}
    for name, rc, before, after in re.findall(
            r"^PHASE (\S+) vm\d+ rc=(\d+) before: (.*) after: (.*)$", output, re.M):
        b = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", before)}
        a = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", after)}
        deltas[name] = {k: a[k] - b[k] for k in a}
        rcs[name] = int(rc)
    return deltas, rcs


@pytest.mark.ohca_only
def test_incast_droptail_dcqcn_pfc(vm_cluster):
    c = vm_cluster(nvms=3, wire="switch", switch=SWITCH, smp=1, mem="512M")
    c.start(SCRIPT + (PFC_PHASE if FULL else "") + "ohca_hw_counters\n")
    results = c.wait(timeout=1200)
    stats = results[0].wire_stats
    print("switch:", stats)
    for r in results:
        print(r.name, "\n".join(re.findall(r"^(?:PHASE|BW) .*$", r.output, re.M)))
    assert_ok(results)
    # the switch, phase by phase (its timeline between the barriers)
    lines = ohcavm.switch_timeline(c)
    port0 = stats["vm_ports"][0]
    sw = {}
    for name in PHASES:
        t = c.barrier_times
        sw[name] = ohcavm.timeline_window(lines, t[name], t[f"{name}-done"], port0)
        if sw[name]:
            print(f"switch {name}:", {k: v for k, v in sw[name].items()
                                      if k not in ("queue_samples", "tx_series", "rx_series")})
    got = [phases(r.output) for r in results]
    for i, (deltas, rcs) in enumerate(got):
        assert set(rcs) == set(PHASES), results[i].report()
        assert not any(rcs.values()), (rcs, results[i].report())
    senders = [got[1][0], got[2][0]]
    receiver = got[0][0]
    # drop-tail: the bottleneck's buffer overflowed, the senders recovered
    assert sum(s["droptail"]["retrans"] for s in senders) > 0, senders
    # ECN + DCQCN: CE marks seen, CNPs sent, rates cut
    assert receiver["dcqcn"]["ce"] > 0 and receiver["dcqcn"]["cnp_sent"] > 0, receiver
    assert sum(s["dcqcn"]["cnp_handled"] for s in senders) > 0, senders
    # the switch's side of it: the receiver's port dropped and marked
    prio1 = ohcavm.switch_port_stats(stats, 0)["prio"][1]
    assert prio1["drops"] > 0 and prio1["ecn_marks"] > 0, prio1
    if not FULL:
        return
    # PFC: the switch paused the senders, they honoured it; nothing lost
    assert sum(s["pfc"]["rx_pause"] for s in senders) > 0, senders
    assert sw["pfc"] is not None and sw["pfc"]["pauses_sent"] > 0, sw["pfc"]
    assert sw["pfc"]["drops"] == 0, sw["pfc"]
    for s in senders:
        assert s["pfc"]["retrans"] == 0 and s["pfc"]["timeouts"] == 0, senders


def test_fabric_bench_probe_figures():
    """make fabric-bench's fabric-only probe figures, from a made-up
    switch timeline (no VM): the probe's frames (port 5 into the
    receiver's port 1) waited 1 ms in every 10 ms interval but one of 60
    ms; the answers back (port 1 into 5) nothing; the senders (ports 2-4)
    sent from 1 to 3 s. The p99 of 200 intervals is the 198th wait in
    order: two outliers are not the p99, three are."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
    import fabric_bench as fb

    def timeline(outliers):
        lines, sent = [], 0
        for k in range(300):  # 10 ms apart, from 100 s on the monotonic clock
            t = k / 100
            sent += 50000 if 1 <= t <= 3 else 0
            probe = [[5, 1, 60000 if k - 50 in range(outliers) else 1000]] if 50 <= k < 250 else []
            lines.append({"mono_us": int((100 + t) * 1e6), "ports": [
                {"port": 1, "sojourn": probe + [[2, 9, 30000]]},
                {"port": 2, "rx_bytes": sent, "sojourn": []},
                {"port": 5, "rx_bytes": 0, "sojourn": [[1, 1, 0]] if probe else []}]})
        return lines

    for outliers, want in ((2, 1000), (3, 60000)):
        lines = timeline(outliers)
        waits = fb.probe_waits(lines, 100.0, 103.0, 1, 5)
        assert len(waits[0]) == 200 and len(waits[1]) == 200, waits
        assert abs(waits[2][0] - 0.5) < 0.01 and abs(waits[2][1] - 2.49) < 0.01, waits[2]
        d = {}
        fb.fabric_probe(d, waits, 5000.0)
        assert d["probe_wait_p50_us"] == 1000 and d["probe_wait_p99_us"] == want, d
        assert d["probe_fabric_p99_us"] == 5000.0 + want, d
    span = fb.senders_span(lines, 100.0, 103.0, {2})
    assert abs(span[0] - 1.0) < 0.02 and abs(span[1] - 3.0) < 0.02, span
    assert fb.senders_span(lines, 100.0, 103.0, {4}) is None
