#!/usr/bin/env python3
"""ohca vs soft-RoCE (rxe) bandwidth and latency: one VM, then two VMs.

One VM (--mode one): loads ohca, adds rxe0 on the same netdev (eth0, which
ohca drives), and runs perftest in loopback (server and client in the VM,
client connecting to 127.0.0.1) on each device in turn.

Two VMs (--mode two): server in vm0, client in vm1, on one wire (QEMU dgram
netdevs). First two ohca VMs (ohca0 <-> ohca0), then two virtio-net VMs
with rdma_rxe (rxe0 <-> rxe0) -- rxe cannot share ohca's netdev between VMs,
because the device takes every UDP 4791 frame for its RDMA engine. Both
clusters run the same cells; one table puts them side by side.

Cells, in both modes:

  ib_write_bw ib_read_bw ib_send_bw  at 64 B, 4 KiB, 64 KiB, 1 MiB  (MB/s, BW average)
  ib_write_lat ib_read_lat ib_send_lat at 2 B, 4 KiB                  (us, t_typical = median)
  ib_atomic_bw, ib_atomic_lat          fetch-and-add (8 B)           (MB/s; us)
  rc_pingpong_e                        ibv_rc_pingpong -e, 4 KiB     (us per iteration)
  srq_pingpong                         ibv_srq_pingpong -q 1, 4 KiB  (us per iteration)

Between two VMs, after those cells, qperf's RC against TCP on the same
port and the storage cells (NVMe and NFS over RDMA, fio) run in the same
boots (tests/bench/bench_apps.py; --parts), and the run's figures go to
build/bench/results.json with PNG plots (tests/bench/bench_plots.py).

Each table has the ohca/rxe ratio (for latency: rxe/ohca, so > 1 means ohca
is better in both). A run that fails shows why in its cell ("failed: status
12" is perftest's completion status, 12 = IBV_WC_RETRY_EXC_ERR; "failed:
timeout", "failed: rc N") and the bench goes on with the next cell. No
assertions on speed: figures only. Absolute numbers reflect QEMU/TCG
emulation, not hardware.

    python3 tests/bench/bench.py [--mode one|two|both] [--iters N] [--timeout S]
                                 [--volume-one MIB] [--volume-two MIB]

ohca uses GID index 1 (its RoCEv2 IPv4 GID); rxe0's RoCEv2 IPv4 GID index
is looked up in sysfs. Exit 0 when every cell produced a figure, 1 when some
cell failed (all tables are printed anyway), 2 when a VM could not be run.
"""

import argparse
import math
import os
import re
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "vm"))
import ohcavm  # noqa: E402
import bench_apps  # noqa: E402
import bench_plots  # noqa: E402

BW = ("ib_write_bw", "ib_read_bw", "ib_send_bw")
BW_SIZES = (64, 4096, 65536, 1048576)
LAT = ("ib_write_lat", "ib_read_lat", "ib_send_lat")
LAT_SIZES = (2, 4096)
# perftest's atomics move 8 bytes (fetch-and-add, its default -A).
ATOMIC_BW = ("ib_atomic_bw",)
ATOMIC_LAT = ("ib_atomic_lat",)
ATOMIC_SIZES = (8,)
# ibv_rc_pingpong -e (completion events, not polling) and ibv_srq_pingpong
# on one QP (its receives posted to an SRQ, polling): microseconds per
# iteration, at their default 4 KiB (the wrappers below).
EVENTS = ("rc_pingpong_e", "srq_pingpong")
EVENTS_SIZES = (4096,)
GROUPS = ((BW, BW_SIZES, "MB/s"), (LAT, LAT_SIZES, "us"),
          (ATOMIC_BW, ATOMIC_SIZES, "MB/s"), (ATOMIC_LAT, ATOMIC_SIZES, "us"),
          (EVENTS, EVENTS_SIZES, "us"))
DEVS = ("ohca0", "rxe0")

# Shared by both modes. bench_client runs one perftest client and prints
#   RESULT <dev> <test> <size> rc=<exit> status=<wc status or -> :<figure line>
# It retries only while the server is not listening yet ("Couldn't
# connect"): a run that failed for real is reported, not retried. One
# exception: perftest calibrates its clock (cycles per microsecond, a fit
# of 200 TSC readings against gettimeofday) when it reports, and gives up
# when the fit is poor (r^2 < 0.9: the vCPU was descheduled mid-sample on a
# busy host); it then has no clock, prints inf for every latency and 0.00
# for bandwidth, and exits 0. That is a failed measurement, not a figure:
# with attempt < 3, bench_client says RERUN and returns 75, and the cell is
# run again.
COMMON = r"""
# rc_pingpong_e and srq_pingpong: ibv_rc_pingpong -e and ibv_srq_pingpong
# -q 1 called like perftest (-d -x -F -s -n -p [host]); they print a
# perftest-like line "size iters - - usec/iter" that bench_client reads.
mkdir -p /tmp/bin
cat > /tmp/bin/rc_pingpong_e <<'PP'
#!/bin/sh
host=
while [ $# -gt 0 ]; do
	case $1 in
	-d) dev=$2; shift 2 ;; -x) gid=$2; shift 2 ;; -s) size=$2; shift 2 ;;
	-n) iters=$2; shift 2 ;; -p) port=$2; shift 2 ;; -F) shift ;;
	*) host=$1; shift ;;
	esac
done
case ${0##*/} in
rc_pingpong_e) set -- ibv_rc_pingpong -e ;;
*) set -- ibv_srq_pingpong -q 1 ;;
esac
# a log of its own: in one VM the server's wrapper runs beside the client's
log=/tmp/pp.$$.log
"$@" -d $dev -g $gid -s $size -n $iters -p $port $host > $log 2>&1
c=$?
cat $log
us=$(grep -oE '[0-9.]+ usec/iter' $log | grep -oE '^[0-9.]+')
rm -f $log
[ -n "$us" ] && echo " $size $iters - - $us"
exit $c
PP
chmod +x /tmp/bin/rc_pingpong_e
ln -sf rc_pingpong_e /tmp/bin/srq_pingpong
PATH=/tmp/bin:$PATH
bench_client() {  # dev gid test size iters server-ip port attempt
	local start=$SECONDS c line st
	while :; do
		timeout 150 $3 -d $1 -x $2 -F -s $4 -n $5 -p $7 $6 </dev/null > /tmp/cli.log 2>&1
		c=$?
		[ $c -ne 0 ] && grep -q "Couldn't connect" /tmp/cli.log &&
			[ $((SECONDS - start)) -lt 30 ] || break
		sleep 0.5
	done
	if [ $c -eq 0 ] && [ "${8:-3}" -lt 3 ] && grep -q "Correlation coefficient" /tmp/cli.log; then
		echo "RERUN $1 $3 $4: $(grep -m 1 "Correlation coefficient" /tmp/cli.log)"
		return 75
	fi
	line=$(grep -E "^ *$4 +[0-9]+ " /tmp/cli.log | tail -1)
	st=$(grep -oE "Failed status [0-9]+" /tmp/cli.log | head -1 | grep -oE "[0-9]+$")
	echo "RESULT $1 $3 $4 rc=$c status=${st:--} :$line"
	[ $c -eq 0 ] || tail -n 5 /tmp/cli.log
}
# bench_ctr_snap dev: the port's hw counters as "name value" lines
bench_ctr_snap() {
	local f
	for f in /sys/class/infiniband/$1/ports/1/hw_counters/*; do
		[ -f "$f" ] && echo "${f##*/} $(cat "$f")"
	done 2>/dev/null
}
# bench_ctr dev test size snapshot: the counters that moved since the
# snapshot, "CTR <dev> <test> <size> <vm> : name=delta ..."
bench_ctr() {
	bench_ctr_snap $1 > /tmp/ctr.after
	echo "CTR $1 $2 $3 ${OHCA_VM_INDEX:-0} :$(awk 'NR == FNR { b[$1] = $2; next }
		$2 != b[$1] { printf " %s=%d", $1, $2 - b[$1] }' $4 /tmp/ctr.after)"
}
# bench_again name [yes|no]: whether the two VMs run a cell again. The
# client (vm1) says it by the barrier it reaches; the server, called
# without a choice, offers both and succeeds when the client chose yes.
bench_again() {
	local s=/share/sync/barrier.again.$1
	if [ -n "$2" ]; then
		ohca_barrier "again.$1.$2" 400 && [ "$2" = yes ]
		return
	fi
	mkdir -p /share/sync
	: > "$s.yes"
	: > "$s.no"
	ohca_poll 400 sh -c "test -e $s.yes.go || test -e $s.no.go" || return 1
	test -e "$s.yes.go"
}
# bench_reap pid: the server's exit code; a server left waiting by a failed
# client is killed after 10 s rather than holding up the next cell
bench_reap() {
	local k
	for k in $(seq 50); do
		kill -0 $1 2>/dev/null || break
		sleep 0.2
	done
	kill $1 2>/dev/null
	wait $1
}
"""

ONE_VM = COMMON + r"""
modprobe rdma_rxe || { echo "no rdma_rxe"; exit 3; }
rdma link add rxe0 type rxe netdev "$OHCA_IFACE" || exit 3
OHCA_IBDEV=rxe0 ohca_poll 30 ohca_gid_index >/dev/null || {
	echo "no RoCE v2 IPv4 GID on rxe0"; ibv_devinfo -v -d rxe0; exit 3; }
rxe_gid=$(OHCA_IBDEV=rxe0 ohca_gid_index)
echo "GIDS ohca0=1 rxe0=$rxe_gid"
ibv_devinfo -d rxe0 | grep -E "hca_id|state|active_mtu"
ibv_devinfo -d ohca0 | grep -E "hca_id|state|active_mtu"
port=18500
while read -r t s n; do
	for dev in ohca0 rxe0; do
		g=1; [ $dev = rxe0 ] && g=$rxe_gid
		bench_ctr_snap $dev > /tmp/ctr.before
		for a in 1 2 3; do
			port=$((port + 1))
			timeout 150 $t -d $dev -x $g -F -s $s -n $n -p $port </dev/null > /tmp/srv.log 2>&1 &
			srv=$!
			bench_client $dev $g $t $s $n 127.0.0.1 $port $a
			again=$?
			bench_reap $srv || { echo "server: rc=$?"; tail -n 5 /tmp/srv.log; }
			[ $again -eq 75 ] || break
		done
		bench_ctr $dev $t $s /tmp/ctr.before
	done
done <<'EOF'
{cells}
EOF
rdma link delete rxe0
exit 0
"""

# Both VMs run this; barriers before and after each cell keep server and
# client in step (the server is reaped once its client is done).
TWO_VM = COMMON + r"""
ohca_poll 30 ohca_gid_index >/dev/null || { echo "no RoCE v2 IPv4 GID on $OHCA_IBDEV"; exit 3; }
gid=$(ohca_gid_index)
echo "GID $OHCA_IBDEV $gid"
ibv_devinfo -d "$OHCA_IBDEV" | grep -E "hca_id|state|active_mtu"
i=0 port=18500
while read -r t s n; do
	[ -n "$t" ] || continue  # no perftest cells (--parts without perftest)
	i=$((i + 1))
	bench_ctr_snap "$OHCA_IBDEV" > /tmp/ctr.before
	for a in 1 2 3; do
		port=$((port + 1))
		ohca_barrier cell$i.$a 400 || exit 1
		if [ "$OHCA_VM_INDEX" = 0 ]; then
			timeout 150 $t -d "$OHCA_IBDEV" -x $gid -F -s $s -n $n -p $port </dev/null > /tmp/srv.log 2>&1 &
			srv=$!
			ohca_barrier done$i.$a 400
			bench_reap $srv
			c=$?
			echo "SERVED $OHCA_IBDEV $t $s rc=$c"
			[ $c -eq 0 ] || tail -n 5 /tmp/srv.log
			bench_again $i.$a || break
		else
			bench_client "$OHCA_IBDEV" $gid $t $s $n "$OHCA_PEER_IP" $port $a
			again=$?
			ohca_barrier done$i.$a 400
			[ $again -eq 75 ] && v=yes || v=no
			bench_again $i.$a $v || break
		fi
	done
	bench_ctr "$OHCA_IBDEV" $t $s /tmp/ctr.before
done <<'EOF'
{cells}
EOF
{apps}
exit 0
"""


# perftest's own default for its bandwidth tests
PERFTEST_BW_ITERS = 5000


def iterations(test, size, iters, volume):
    """A bandwidth cell moves volume bytes (in 5 to perftest's default
    iterations): with a fixed count, a fast device's figure was mostly the
    pipeline filling (200 x 64 KiB is 7 ms at 2 GB/s), a slow one's was
    steady state. Latency and events cells run iters times."""
    if not test.endswith("_bw"):
        return iters
    return max(5, min(PERFTEST_BW_ITERS, -(-volume // size)))


def cells(iters, volume, only=None):
    """(test, size, iterations) in table order. only: {(test, size)} to
    keep, or None."""
    out = []
    for tests, sizes, _ in GROUPS:
        for t in tests:
            for s in sizes:
                if only is None or (t, s) in only:
                    out.append((t, s, iterations(t, s, iters, volume)))
    return out


def script_for(template, iters, volume, only=None):
    return template.replace("{cells}", "\n".join(f"{t} {s} {n}"
                                                  for t, s, n in cells(iters, volume, only)))


def runs_text(args, volume):
    return (f"latency cells {args.iters} iterations, bandwidth cells "
            f"{volume >> 20} MiB each (at most {PERFTEST_BW_ITERS} iterations)")


def figure(test, rc, status, line):
    """The cell's value: a float, or a string saying why there is none."""
    if rc != 0:
        if status != "-":
            return f"failed: status {status}"
        return "failed: timeout" if rc == 124 else f"failed: rc {rc}"
    cols = line.split()
    try:
        # bw: bytes iters peak avg msgrate; lat: bytes iters min max typical ...
        val = float(cols[3] if test.endswith("_bw") else cols[4])
    except (IndexError, ValueError):
        return "failed: no figure"
    # perftest without a clock (see RERUN above, three times in a row)
    # prints inf for every latency statistic and 0.00 for bandwidth
    if math.isfinite(val) and val > 0:
        return val
    return f"no figure: {cols[3 if test.endswith('_bw') else 4]}"


def parse(output):
    """{(dev, test, size): float or failure text}."""
    res = {}
    for m in re.finditer(r"^RESULT (\S+) (\S+) (\d+) rc=(\d+) status=(\S+) :(.*)$",
                         output, re.M):
        dev, test, size, rc, status, line = m.groups()
        res[(dev, test, int(size))] = figure(test, int(rc), status, line)
    return res


def parse_counters(outputs, into):
    """Adds the CTR lines of the VMs' outputs to into: {(dev, test, size):
    {counter: delta summed over the VMs}}."""
    for output in outputs:
        for m in re.finditer(r"^CTR (\S+) (\S+) (\d+) \S+ :(.*)$", output, re.M):
            dev, test, size, moved = m.groups()
            cell = into.setdefault((dev, test, int(size)), {})
            for item in moved.split():
                name, _, val = item.partition("=")
                try:
                    cell[name] = cell.get(name, 0) + int(val)
                except ValueError:
                    pass
    return into


# What each device counts of loss and recovery (port hw counters, summed
# over both ends): retransmitted packets / ACK timeouts / NAKs received.
# ohca: QUERY_STATS fields (kernel/ohca_stats.c). rxe counts retries
# (completer_retry_err: a go-back after a timeout or a NAK), not packets,
# and no timeouts of their own.
LOSS = {
    "ohca0": (("rc_retrans_pkts",), ("rc_local_ack_timeouts",),
              ("rc_seq_naks_rcvd", "rc_rnr_naks_rcvd")),
    "rxe0": (("completer_retry_err",), None, ("rcvd_seq_err", "rcvd_rnr_err")),
}


def loss_text(dev, moved):
    if moved is None:
        return "?"
    return "/".join("-" if names is None else str(sum(moved.get(n, 0) for n in names))
                    for names in LOSS[dev])


def host_state():
    """(1-minute load average, the host's UDP receive-buffer drops so far)."""
    drops = 0
    try:
        with open("/proc/net/snmp") as f:
            rows = [line.split() for line in f if line.startswith("Udp:")]
        drops = int(rows[1][rows[0].index("RcvbufErrors")])
    except (OSError, ValueError, IndexError):
        pass
    return os.getloadavg()[0], drops


def wanted(test, size, only):
    return only is None or (test, size) in only


def counters_table(ctrs, host, heads=DEVS, only=None):
    """Per cell: each device's retransmitted packets/ACK timeouts/NAKs (its
    counters' deltas over the cell, both ends), and the host's 1-minute
    load and UDP receive-buffer drops (host-wide) while it ran."""
    rows = [("test", "size", f"{heads[0]} rtx/to/nak", f"{heads[1]} rtx/to/nak",
             "load", "udp drops")]
    for tests, sizes, _ in GROUPS:
        for t in tests:
            for sz in sizes:
                if not wanted(t, sz, only):
                    continue
                loads, drops = [], []
                for dev in DEVS:
                    h = host.get((dev, t, sz))
                    if h:
                        loads.append(f"{h[0]:.1f}")
                        drops.append(str(h[1]))
                rows.append((t, fmt_size(sz), loss_text("ohca0", ctrs.get(("ohca0", t, sz))),
                             loss_text("rxe0", ctrs.get(("rxe0", t, sz))),
                             "/".join(loads) or "?", "/".join(drops) or "?"))
    w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for i, r in enumerate(rows):
        lines.append("  ".join(c.rjust(w[k]) if k >= 2 else c.ljust(w[k])
                               for k, c in enumerate(r)).rstrip())
        if i == 0:
            lines.append("  ".join("-" * x for x in w))
    return "\n".join(lines)


def fmt_size(s):
    return f"{s // 1048576} MiB" if s >= 1048576 else f"{s // 1024} KiB" if s >= 1024 else f"{s} B"


def table(res, heads=DEVS, only=None):
    """The text table and whether every cell has a figure."""
    rows = [("test", "size", heads[0], heads[1], "unit", "ratio")]
    ok = True
    for tests, sizes, unit in GROUPS:
        for t in tests:
            for s in sizes:
                if not wanted(t, s, only):
                    continue
                o = res.get(("ohca0", t, s), "failed: no result")
                x = res.get(("rxe0", t, s), "failed: no result")
                good = isinstance(o, float) and isinstance(x, float)
                ok &= good
                ratio = "-"
                if good and o > 0 and x > 0:
                    q = o / x if unit == "MB/s" else x / o
                    ratio = f"{q:.2f}" if q >= 0.1 else f"{q:.3f}"
                rows.append((t, fmt_size(s), f"{o:.2f}" if isinstance(o, float) else o,
                             f"{x:.2f}" if isinstance(x, float) else x, unit, ratio))
    w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for i, r in enumerate(rows):
        lines.append("  ".join(c.rjust(w[k]) if k in (2, 3, 5) else c.ljust(w[k])
                               for k, c in enumerate(r)).rstrip())
        if i == 0:
            lines.append("  ".join("-" * x for x in w))
    return "\n".join(lines), ok


class Progress(threading.Thread):
    """Echoes the RESULT lines of a running VM's output (runs take minutes),
    and notes the host's state as each cell ends: host[(dev, test, size)] =
    (1-minute load, UDP receive-buffer drops since the cell before)."""

    def __init__(self, vm, label, host):
        super().__init__(daemon=True)
        self.path = os.path.join(vm.share, "output.log")
        self.label = label
        self.host = host
        self.done = threading.Event()

    def run(self):
        seen = 0
        drops0 = host_state()[1]
        while True:
            stop = self.done.wait(0.5)
            try:
                with open(self.path, errors="replace") as f:
                    lines = f.read().splitlines()
            except FileNotFoundError:
                lines = []
            for line in lines[seen:]:
                if line.startswith(("RERUN ", "RESULT ", "STORE ", "STORAGE-")):
                    print(f"  [{self.label}] {line}", flush=True)
                elif line.startswith("QPERF "):
                    # qperf -vv's whole output is on the line: its head
                    print(f"  [{self.label}] {line[:160]}", flush=True)
                if line.startswith("RESULT "):
                    load, drops = host_state()
                    m = re.match(r"RESULT (\S+) (\S+) (\d+) ", line)
                    if m:
                        self.host[(m.group(1), m.group(2), int(m.group(3)))] = (
                            load, drops - drops0)
                    drops0 = drops
            seen = max(seen, len(lines))
            if stop:
                return


def run_cluster(name, script, nics, timeout, logdir, watch, host, mtu=None, wire=None):
    """Runs script on a Cluster of len(nics) VMs, echoing VM watch's
    results as they come (and the host's state into host); returns the
    list of Result."""
    with ohcavm.Cluster(name, nvms=len(nics), nics=nics, mtu=mtu, wire=wire,
                        logdir=os.path.join(logdir, name)) as c:
        c.start(script)
        p = Progress(c.vms[watch], name, host)
        p.start()
        try:
            return c.wait(timeout)
        finally:
            p.done.set()
            p.join()


def complain(results):
    """Prints the report of every VM that did not end cleanly."""
    for r in results:
        if r.exit_code != 0 or r.kernel_problems or r.timed_out or r.error:
            print(r.report(), file=sys.stderr)


def one_vm(args):
    host = {}
    volume = args.volume_one << 20
    results = run_cluster("one-vm", script_for(ONE_VM, args.iters, volume, args.only), ("ohca",),
                          args.timeout, args.logdir, 0, host, args.mtu)
    complain(results)
    res = parse(results[0].output)
    args.record["one"] = {"perftest": res}
    text, ok = table(res, only=args.only)
    ctrs = counters_table(parse_counters([results[0].output], {}), host, only=args.only)
    gids = re.search(r"^GIDS .*$", results[0].output, re.M)
    print(f"\nohca vs rxe, one VM (TCG), perftest loopback via 127.0.0.1, "
          f"{runs_text(args, volume)}; "
          f"{gids.group(0) if gids else ''}")
    return text, ctrs, ok and all(r.ok for r in results)


def two_vms(args):
    res, ctrs, host, ok = {}, {}, {}, True
    qperf, storage = {}, {}
    volume = args.volume_two << 20
    only = args.only if "perftest" in args.parts else set()
    script = script_for(TWO_VM, args.iters, volume, only)
    if args.pairs:
        return pairs(args, script.replace("{apps}", ""))
    for kind in args.devices.split(","):
        apps = bench_apps.script(kind, args.parts, args.quick, args.qperf_seconds,
                                 args.fio_seconds)
        # the client (vm1) prints the figures
        results = run_cluster(f"two-vm-{kind}", script.replace("{apps}", apps), (kind, kind),
                              args.timeout, args.logdir, 1, host, args.mtu, args.wire)
        complain(results)
        res.update(parse(results[1].output))
        qperf.update(bench_apps.parse_qperf(results[1].output))
        storage.update(bench_apps.parse_storage(results[1].output))
        # a qperf or storage cell that failed fails the run, as a perftest one
        ok &= not any(isinstance(v, str) for v in list(qperf.values()) + list(storage.values()))
        parse_counters([r.output for r in results], ctrs)
        ok &= all(r.ok for r in results)
    heads = ("ohca0<->ohca0", "rxe0<->rxe0")
    text, cells_ok = table(res, heads=heads, only=only)
    args.record["two"] = {"perftest": res, "qperf": qperf, "storage": storage}
    if qperf:
        qtext, goals = bench_apps.qperf_table(qperf)
        text += ("\n\nRDMA against TCP (qperf between the same two VMs, server vm0; RC "
                 "through rdma_cm, TCP on ohca's own port; "
                 f"{args.qperf_seconds} s a test; latency: one-way us, bandwidth: MB/s; "
                 "TCP/ohca > 1 and ohca/rxe > 1: ohca better)\n\n" + qtext +
                 "\n\nissue 25 item 6 goals:\n" + "\n".join(f"  {g}" for g in goals))
    if storage:
        text += ("\n\nstorage over RDMA between the two VMs (vm0 the NVMe/RDMA target, "
                 "a 64 MiB namespace on tmpfs, and the NFS server; fio on vm1, "
                 f"{args.fio_seconds} s time based after a 1 s ramp)\n\n" +
                 bench_apps.storage_table(storage))
    wire = ("QEMU's own dgram sockets"
            if args.wire == "dgram" and os.environ.get("OHCA_DGRAM") == "qemu" else
            "two hosts: network namespaces joined by a veth pair, dgram netdevs on "
            f"UDP sockets of {ohcavm.WIRE_SOCKET_BUFFER >> 20} MiB buffers between them"
            if args.wire == "hosts" else
            f"{args.wire} netdevs on sockets of {ohcavm.WIRE_SOCKET_BUFFER >> 20} MiB buffers")
    print(f"\nohca vs rxe, two VMs (TCG) on one wire ({wire}), server "
          f"vm0, client vm1, {runs_text(args, volume)}")
    return text, counters_table(ctrs, host, heads, only) if only != set() else "", \
        ok and cells_ok


CTR_LEGEND = ("transport counters per cell, both ends summed (deltas of the ports' hw "
              "counters): retransmitted packets/ACK timeouts/NAKs received (rxe: "
              "retries/-/NAKs); the host's 1-minute load and its UDP receive-buffer "
              "drops (host-wide) as each device's run of the cell ended (ohca/rxe)")
def pairs(args, script):
    """--pairs: two VMs of the NIC kinds given (server vm0, client vm1, e.g.
    ohca,rxe: rxe0 requests of ohca0), each cell's figure and the counters
    that moved on each side, as lines rather than a table."""
    lines, ok = [], True
    for spec in args.pairs:
        nics = tuple(spec.split(","))
        name = "pair-" + "-".join(nics)
        results = run_cluster(name, script, nics, args.timeout, args.logdir, 1, {}, args.mtu,
                              args.wire)
        complain(results)
        ok &= all(r.ok for r in results)
        res = parse(results[1].output)
        for vm, r in enumerate(results):
            for m in re.finditer(r"^CTR (\S+) (\S+) (\d+) \S+ :(.*)$", r.output, re.M):
                dev, t, size, moved = m.groups()
                fig = next((v for (d, tt, s), v in res.items()
                            if tt == t and s == int(size)), "no result")
                fig = f"{fig:.2f}" if isinstance(fig, float) else fig
                lines.append(f"{name} {t} {fmt_size(int(size))} {fig}: vm{vm} {dev}:{moved}")
    return "\n".join(lines), "", ok


LEGEND = ("bandwidth: BW average MB/s, ratio ohca/rxe; latency: t_typical (median) us, "
          "ratio rxe/ohca (> 1: ohca better)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=("one", "two", "both"), default="both",
                    help="one VM (loopback), two VMs on one wire, or both (default)")
    ap.add_argument("--iters", type=int, default=1000,
                    help="iterations of a latency or events cell (default 1000, perftest's)")
    ap.add_argument("--volume-one", type=int, default=64, metavar="MIB",
                    help="MiB a bandwidth cell moves in one VM (default 64)")
    ap.add_argument("--volume-two", type=int, default=16, metavar="MIB",
                    help="MiB a bandwidth cell moves between two VMs (default 16)")
    ap.add_argument("--timeout", type=float, default=2400, help="seconds per cluster")
    ap.add_argument("--logdir", default=os.path.join(ohcavm.TOP, "build/test-logs/bench"))
    ap.add_argument("--cells", help="only these cells, e.g. ib_write_bw:65536,ib_read_lat:2")
    ap.add_argument("--pairs", action="append", metavar="NIC,NIC",
                    help="two VMs of these kinds (server, client) instead of the "
                    "ohca and rxe clusters, e.g. ohca,rxe (repeatable); prints lines")
    ap.add_argument("--mtu", type=int, help="eth0's MTU in the VMs (9000: IB MTU 4096)")
    ap.add_argument("--wire", choices=("dgram", "stream", "hosts"), default="stream",
                    help="the two-VM wire: a stream netdev pair (default: batched "
                    "receive, lossless like a RoCE fabric with PFC) or dgram netdevs "
                    "(one frame per main-loop pass, lossy when a buffer overflows) or "
                    "hosts: each VM in a network namespace of its own, joined by a veth "
                    "pair, UDP between them (two hosts on one machine; root)")
    ap.add_argument("--parts", default="perftest,qperf,storage",
                    help="what the two-VM clusters run: perftest (the cells above), "
                    "qperf (RC against TCP) and storage (NVMe and NFS over RDMA with "
                    "fio); default all three")
    ap.add_argument("--devices", default="ohca,rxe",
                    help="the two-VM clusters to run: ohca, rxe or both (default)")
    ap.add_argument("--qperf-seconds", type=int, default=3, help="seconds a qperf test runs")
    ap.add_argument("--fio-seconds", type=int, default=10,
                    help="seconds a storage cell runs (after a 1 s ramp)")
    ap.add_argument("--quick", action="store_true",
                    help="a few minutes' check that every part still runs: two VMs only, "
                    "two perftest cells, qperf at two sizes for 1 s, fio for 3 s")
    ap.add_argument("--out", default=os.path.join(ohcavm.TOP, "build/bench"),
                    help="where results.json and the plots go (default build/bench)")
    args = ap.parse_args()
    args.parts = set(args.parts.split(","))
    args.record = {}
    if args.quick:
        args.mode = "two" if args.mode == "both" else args.mode
        args.cells = args.cells or "ib_write_bw:65536,ib_write_lat:2"
        args.iters = min(args.iters, 200)
        args.volume_two = min(args.volume_two, 4)
        args.qperf_seconds = min(args.qperf_seconds, 1)
        args.fio_seconds = min(args.fio_seconds, 3)
    args.only = None
    if args.cells:
        args.only = {(t, int(s)) for t, _, s in (c.partition(":") for c in args.cells.split(","))}
    t0 = time.monotonic()
    print(f"bench: {stamp()}", flush=True)
    ok = True
    for mode, fn in (("one", one_vm), ("two", two_vms)):
        if args.mode not in (mode, "both"):
            continue
        print(f"bench: {fn.__name__.replace('_', ' ')} ...", flush=True)
        try:
            text, ctrs, good = fn(args)
        except ohcavm.HarnessError as e:
            print(f"bench: {e}", file=sys.stderr)
            return 2
        print(LEGEND + "\n")
        print(text, flush=True)
        if ctrs:
            print("\n" + CTR_LEGEND + "\n")
            print(ctrs, flush=True)
        ok &= good
    print(f"\nbench: {stamp()}")
    if args.record:
        args.record["stamp"] = stamp()
        pngs = bench_plots.save(args.record, args.out)
        print(f"bench: {os.path.join(args.out, bench_plots.RESULTS)}"
              + (f", plots: {', '.join(os.path.basename(p) for p in pngs)}" if pngs else
                 ", no plots (no matplotlib: tests/deps.sh installs it)"))
    print(f"bench: {time.monotonic() - t0:.0f}s; logs in {args.logdir}")
    return 0 if ok else 1


def stamp():
    """The date and the host's state, for the record."""
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, host "
            f"{os.cpu_count()} CPUs, load average {load}")


if __name__ == "__main__":
    sys.exit(main())
