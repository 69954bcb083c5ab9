"""make bench's application cells between two VMs (issue 25 items 6 and 7):
RDMA against TCP with qperf, and storage over RDMA (NVMe over Fabrics and
NFS) with fio. bench.py appends these guest scripts to its two-VM script,
so they run in the boots of the perftest cells: vm0 serves, vm1 measures
and prints one line per cell.

qperf (vm0 runs its server; the client connects with rdma_cm, -cm1, so the
same IP address picks ohca0 or rxe0):
  QPERF <dev> <test> <size> rc=<exit> :<qperf -vv's output on one line>
rc_lat and rc_bw on the cluster's RDMA device, and in the ohca cluster
tcp_lat and tcp_bw on the same port (the ohca netdev, eth0). qperf's RDMA
tests wait for completion events by default, as TCP's block in recv();
rc_lat_poll is rc_lat with qperf's -cp1, both ends polling their CQs, as
MPI, UCX and perftest do (the way RDMA is used where latency matters). qperf
measures each side's CPU from /proc/stat while a test runs and prints
send_cost and recv_cost, CPU time per GB moved: their sum is the guest CPU
both ends spent per byte.

Storage (vm0 is an NVMe over RDMA target with a 64 MiB namespace in its
memory, a file on tmpfs, buffered, and an NFS server with an RDMA listener
on port 20049; vm1 connects, mounts with proto=rdma, and runs fio, time
based):
  STORE <dev> <cell> rc=<exit> iops=<n> mbs=<MB/s> cpu=<fio's user+system %>
"""

import math
import re

# (test, message sizes): latency in us, bandwidth in MB/s (qperf -m)
QPERF_LAT_SIZES = (2, 64, 1024, 4096, 16384)
QPERF_BW_SIZES = (64, 1024, 4096, 65536, 1048576)
QPERF_QUICK_LAT_SIZES = (2, 4096)
QPERF_QUICK_BW_SIZES = (4096, 65536)

# The storage cells: name -> (fio arguments, unit, what it is)
FIO_NVME = "--filename=/dev/$ns --direct=1 --ioengine=libaio --iodepth=32 --size=64M"
FIO_NFS = "--direct=1 --ioengine=libaio --iodepth=4 --bs=1M --size=64M"
# NVMe: (fio's rw, block size, unit, what)
NVME_CELLS = (("randread", "4k", "IOPS", "4 KiB random read"),
              ("randwrite", "4k", "IOPS", "4 KiB random write"),
              ("read", "128k", "MB/s", "128 KiB sequential read"),
              ("write", "128k", "MB/s", "128 KiB sequential write"))
STORAGE_CELLS = tuple(
    (f"nvme_{rw}_{bs}", f"{FIO_NVME} --rw={rw} --bs={bs}", unit, f"NVMe/RDMA {what}, QD 32")
    for rw, bs, unit, what in NVME_CELLS) + tuple(
    (f"nfs_{rw}_1m", f"--filename=/mnt/nfs/bench-{rw} {FIO_NFS} --rw={rw}", "MB/s",
     f"NFS/RDMA 1 MiB sequential {rw} (O_DIRECT, QD 4)") for rw in ("read", "write"))

# Issue 25's goals
GOAL_LAT = 3.0      # RC latency at most a third of TCP's
GOAL_BW = 3.0       # RC bandwidth at least 3x TCP's
GOAL_CPU = 0.5      # "a fraction" of TCP's CPU per byte: here at most half
GOAL_STORAGE = 100.0  # every storage cell at least 100x rxe

QPERF = r"""
echo "=== qperf ==="
if [ "$OHCA_VM_INDEX" = 0 ]; then
	qperf > /tmp/qperf-server.log 2>&1 &
	qsrv=$!
	ohca_poll 30 sh -c "ss -ltn | grep -q ':19765 '" || echo "QPERF-NOTE no server listening"
	ohca_barrier qperf-up 400
	ohca_barrier qperf-done 3600
	kill $qsrv
else
	ohca_barrier qperf-up 400
	while read -r t s; do
		cm= qt=$t
		case $t in rc_*) cm=-cm1 ;; esac
		case $t in *_poll) cm="$cm -cp1" qt=${t%_poll} ;; esac
		timeout $((BENCH_QT * 4 + 90)) qperf "$OHCA_PEER_IP" $cm -t $BENCH_QT -m $s -vv $qt \
			</dev/null > /tmp/qperf.log 2>&1
		c=$?
		echo "QPERF $OHCA_IBDEV $t $s rc=$c :$(tr -s ' \n' ' ' < /tmp/qperf.log)"
	done <<'EOF'
{qperf_cells}
EOF
	ohca_barrier qperf-done 3600
fi
"""

STORAGE = r"""
echo "=== storage ==="
bench_load() {
	modprobe -q "$1" 2>/dev/null || [ ! -e "/lib/modules/$(uname -r)/modules.dep" ] ||
		echo "STORAGE-NOTE modprobe $1 failed"
}
if [ "$OHCA_VM_INDEX" = 0 ]; then
	bench_load configfs
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
	bench_load nvmet-rdma
	truncate -s 64M /tmp/bench-ns.img
	sub=/sys/kernel/config/nvmet/subsystems/bench
	tgt=/sys/kernel/config/nvmet/ports/1
	mkdir $sub && mkdir $sub/namespaces/1 && mkdir $tgt || echo "STORAGE-NOTE nvmet mkdir failed"
	while read -r f v; do
		echo "$v" > "$f" || echo "STORAGE-NOTE nvmet: $f"
	done <<-EOF
	$sub/attr_allow_any_host 1
	$sub/namespaces/1/device_path /tmp/bench-ns.img
	$sub/namespaces/1/buffered_io 1
	$sub/namespaces/1/enable 1
	$tgt/addr_trtype rdma
	$tgt/addr_adrfam ipv4
	$tgt/addr_traddr $OHCA_IP
	$tgt/addr_trsvcid 4420
	EOF
	ln -s $sub $tgt/subsystems/bench || echo "STORAGE-NOTE nvmet port link"
	bench_load nfsd
	bench_load rpcrdma
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd
	mkdir -p /export /var/lib/nfs/v4recovery
	head -c 64M /dev/urandom > /export/bench-read
	echo "/export *(rw,no_root_squash,no_subtree_check,insecure,fsid=1)" > /etc/exports
	exportfs -ra
	# NFSv4's grace period, 10 s (the least nfsd takes), runs out while
	# the NVMe cells run
	echo 10 > /proc/fs/nfsd/nfsv4gracetime
	rpc.mountd -N 3 && rpc.nfsd -N 3 -V 4 4 && echo "rdma 20049" > /proc/fs/nfsd/portlist ||
		echo "STORAGE-NOTE nfsd"
	ohca_barrier storage-up 400
	ohca_barrier storage-done 3600
	rpc.nfsd 0
else
	# bench_fio dev cell fio-arguments: one time-based fio run
	bench_fio() {
		local dev=$1 cell=$2 c
		shift 2
		timeout $((BENCH_RT + 180)) fio --name=$cell --runtime=$BENCH_RT --time_based \
			--ramp_time=1 --output-format=json "$@" > /tmp/fio.json 2> /tmp/fio.err
		c=$?
		echo "STORE $dev $cell rc=$c $(python3 -c '
import json, sys
text = sys.stdin.read()
j = json.loads(text[text.index("{"):])["jobs"][0]
d = j["read"] if j["read"]["io_bytes"] else j["write"]
print("iops=%.1f mbs=%.3f cpu=%.1f" % (d["iops"], d["bw_bytes"] / 1e6,
                                      j["usr_cpu"] + j["sys_cpu"]))' < /tmp/fio.json 2>/dev/null)"
		[ $c -eq 0 ] || tail -n 3 /tmp/fio.err
	}
	cat > /tmp/bench-cells <<'EOF'
{storage_cells}
EOF
	# bench_cells kind: the cells named kind_* ("name fio-arguments" lines)
	bench_cells() {
		local cell args
		while read -r cell args; do
			case $cell in "$1"_*) eval "bench_fio $OHCA_IBDEV $cell $args" </dev/null ;; esac
		done < /tmp/bench-cells
	}
	bench_load nvme-rdma
	bench_load rpcrdma
	bench_load nfsv4
	ohca_barrier storage-up 400
	nvme connect -t rdma -a "$OHCA_PEER_IP" -s 4420 -n bench || echo "STORAGE-NOTE nvme connect"
	bench_ns() {
		local c
		for c in /sys/class/nvme/nvme*; do
			[ "$(cat $c/subsysnqn 2>/dev/null)" = bench ] && [ -e /dev/${c##*/}n1 ] &&
				echo ${c##*/}n1 && return 0
		done
		return 1
	}
	if ohca_poll 60 bench_ns > /dev/null; then
		ns=$(bench_ns)
		echo "STORAGE-NVME $ns transport=$(cat /sys/class/nvme/${ns%n1}/transport)"
		bench_cells nvme
		timeout 120 nvme disconnect -n bench
	fi
	mkdir -p /mnt/nfs
	if timeout 300 mount -t nfs4 -o proto=rdma,port=20049 "$OHCA_PEER_IP:/export" /mnt/nfs; then
		echo "STORAGE-NFS $(grep ' /mnt/nfs ' /proc/mounts | grep -o 'proto=[a-z0-9]*')"
		bench_cells nfs
		timeout 300 umount /mnt/nfs || echo "STORAGE-NOTE umount"
	else
		echo "STORAGE-NOTE nfs mount failed"
	fi
	ohca_barrier storage-done 3600
fi
"""


def qperf_cells(kind, quick):
    """(test, size) the client runs: RC on the cluster's device, TCP on
    ohca's port (the ohca cluster only)."""
    lat = QPERF_QUICK_LAT_SIZES if quick else QPERF_LAT_SIZES
    bw = QPERF_QUICK_BW_SIZES if quick else QPERF_BW_SIZES
    tests = ("rc", "tcp") if kind == "ohca" else ("rc",)
    return [(f"{p}_lat", s) for p in tests for s in lat] + \
        [("rc_lat_poll", s) for s in lat] + \
        [(f"{p}_bw", s) for p in tests for s in bw]


def script(kind, parts, quick, seconds, runtime):
    """The guest script's tail for a two-VM cluster of kind (ohca|rxe)."""
    out = f"BENCH_QT={seconds}\nBENCH_RT={runtime}\n"
    if "qperf" in parts:
        out += QPERF.replace("{qperf_cells}", "\n".join(
            f"{t} {s}" for t, s in qperf_cells(kind, quick)))
    if "storage" in parts:
        out += STORAGE.replace("{storage_cells}", "\n".join(
            f"{name} {args}" for name, args, _, _ in STORAGE_CELLS))
    return out


UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "sec": 1.0, "s": 1.0,
         "bytes/sec": 1e-6, "KB/sec": 1e-3, "MB/sec": 1.0, "GB/sec": 1e3}


def qperf_value(text, key):
    """qperf -vv's 'key = number unit' in seconds (times, per GB for a
    cost) or MB/s (bandwidth), or None."""
    m = re.search(rf"\b{key} = ([0-9.,]+) (\S+)", text)
    if not m:
        return None
    val, unit = float(m.group(1).replace(",", "")), m.group(2)
    if unit.endswith("/GB"):
        unit = unit[:-3]
    return val * UNITS[unit] if unit in UNITS else None


def parse_qperf(output):
    """{(dev, test, size): {"value": us or MB/s, "cpu_s_per_gib": ...} or
    a failure text}."""
    res = {}
    for m in re.finditer(r"^QPERF (\S+) (\S+) (\d+) rc=(\d+) :(.*)$", output, re.M):
        dev, test, size, rc, text = m.groups()
        key = "latency" if "_lat" in test else "bw"
        val = qperf_value(text, key)
        if int(rc) != 0 or val is None or not math.isfinite(val) or val <= 0:
            why = "timeout" if int(rc) == 124 else f"rc {rc}"
            res[(dev, test, int(size))] = f"failed: {why}"
            continue
        cell = {"value": val * 1e6 if key == "latency" else val}
        send, recv = qperf_value(text, "send_cost"), qperf_value(text, "recv_cost")
        if send is not None and recv is not None:
            # qperf's GB is 10^9 bytes
            cell["cpu_s_per_gib"] = (send + recv) * (1 << 30) / 1e9
        res[(dev, test, int(size))] = cell
    return res


def parse_storage(output):
    """{(dev, cell): {"iops":, "mbs":} or a failure text}."""
    res = {}
    for m in re.finditer(r"^STORE (\S+) (\S+) rc=(\d+) ?(.*)$", output, re.M):
        dev, cell, rc, rest = m.groups()
        nums = dict(re.findall(r"(\w+)=([0-9.]+)", rest))
        if int(rc) != 0 or "iops" not in nums:
            res[(dev, cell)] = "failed: " + ("timeout" if int(rc) == 124 else f"rc {rc}")
        else:
            res[(dev, cell)] = {"iops": float(nums["iops"]), "mbs": float(nums["mbs"])}
            if "cpu" in nums:  # fio's CPU (user + system) in vm1, % of one CPU
                res[(dev, cell)]["cpu"] = float(nums["cpu"])
    return res


def fmt(v, nd=2):
    if isinstance(v, str):
        return v
    if v is None:
        return "-"
    return f"{v:.{nd}f}" if v < 1000 else f"{v:.0f}"


def align(rows):
    w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for i, r in enumerate(rows):
        lines.append("  ".join(c.ljust(w[k]) if k < 2 else c.rjust(w[k])
                               for k, c in enumerate(r)).rstrip())
        if i == 0:
            lines.append("  ".join("-" * x for x in w))
    return "\n".join(lines)


def get(res, dev, test, size, what="value"):
    c = res.get((dev, test, size))
    return c.get(what) if isinstance(c, dict) else c


def sizes_of(res, test):
    return sorted({s for (_, t, s) in res if t == test})


def qperf_table(res):
    """RC on ohca and rxe against TCP on ohca's port, by message size, with
    the guest CPU per GiB of the bandwidth tests, and issue 25's goals
    judged on them. Returns (text, goals)."""
    rows = [("test", "size", "ohca RC", "rxe RC", "TCP (ohca port)", "unit",
             "TCP/ohca", "ohca/rxe")]
    for kind, unit in (("lat", "us"), ("lat_poll", "us"), ("bw", "MB/s")):
        tcp = "tcp_" + kind.removesuffix("_poll")
        for s in sizes_of(res, f"rc_{kind}") or (sizes_of(res, tcp) if kind != "lat_poll" else []):
            o, x = get(res, "ohca0", f"rc_{kind}", s), get(res, "rxe0", f"rc_{kind}", s)
            t = get(res, "ohca0", tcp, s)
            num = lambda v: isinstance(v, float)  # noqa: E731
            vs_tcp = vs_rxe = "-"
            if num(o) and num(t):
                vs_tcp = f"{(o / t if kind == 'bw' else t / o):.2f}"
            if num(o) and num(x):
                vs_rxe = f"{(o / x if kind == 'bw' else x / o):.2f}"
            rows.append((f"{kind}", fmt_size(s), fmt(o), fmt(x), fmt(t), unit, vs_tcp, vs_rxe))
    text = align(rows)
    cpu_rows = [("bw test", "size", "ohca RC", "rxe RC", "TCP (ohca port)", "unit",
                 "ohca RC/TCP")]
    for s in sizes_of(res, "rc_bw") or sizes_of(res, "tcp_bw"):
        o = get(res, "ohca0", "rc_bw", s, "cpu_s_per_gib")
        x = get(res, "rxe0", "rc_bw", s, "cpu_s_per_gib")
        t = get(res, "ohca0", "tcp_bw", s, "cpu_s_per_gib")
        r = f"{o / t:.2f}" if isinstance(o, float) and isinstance(t, float) and t > 0 else "-"
        cpu_rows.append(("bw", fmt_size(s), fmt(o, 3), fmt(x, 3), fmt(t, 3),
                         "CPU s/GiB", r))
    text += ("\n\nguest CPU per GiB moved (qperf's send_cost + recv_cost: both "
             "VMs' CPU time, from /proc/stat, over the bytes):\n\n" + align(cpu_rows))
    return text, qperf_goals(res)


def best(res, dev, test, what="value", lower=False):
    """(size, value) of the best figure of a test over its sizes."""
    vals = [(s, get(res, dev, test, s, what)) for s in sizes_of(res, test)]
    vals = [(s, v) for s, v in vals if isinstance(v, float)]
    if not vals:
        return None
    return (min if lower else max)(vals, key=lambda sv: sv[1])


def qperf_goals(res):
    """Issue 25 item 6's three goals, each 'met' or 'not met' with the
    figures (or 'no figure')."""
    goals = []
    # Judged twice: RC polling its CQs (how RDMA is used for latency) and
    # RC waiting for events as TCP blocks; TCP is qperf's blocking tcp_lat.
    for test, how in (("rc_lat_poll", "polling"), ("rc_lat", "waiting for events")):
        lat_sizes = [s for s in sizes_of(res, test) if s in sizes_of(res, "tcp_lat")]
        if not lat_sizes:
            continue
        s = lat_sizes[0]
        o, t = get(res, "ohca0", test, s), get(res, "ohca0", "tcp_lat", s)
        if isinstance(o, float) and isinstance(t, float):
            goals.append(f"RC latency ({how}) <= TCP's / {GOAL_LAT:g} at {fmt_size(s)}: RC "
                         f"{o:.1f} us, TCP {t:.1f} us, TCP/RC {t / o:.2f}: "
                         f"{'met' if t / o >= GOAL_LAT else 'NOT met'}")
    ob, tb = best(res, "ohca0", "rc_bw"), best(res, "ohca0", "tcp_bw")
    if ob and tb:
        goals.append(f"RC bandwidth >= {GOAL_BW:g}x TCP's (each at its best size): RC "
                     f"{ob[1]:.0f} MB/s at {fmt_size(ob[0])}, TCP {tb[1]:.0f} MB/s at "
                     f"{fmt_size(tb[0])}, RC/TCP {ob[1] / tb[1]:.2f}: "
                     f"{'met' if ob[1] / tb[1] >= GOAL_BW else 'NOT met'}")
    oc = best(res, "ohca0", "rc_bw", "cpu_s_per_gib", lower=True)
    tc = best(res, "ohca0", "tcp_bw", "cpu_s_per_gib", lower=True)
    if oc and tc and tc[1] > 0:
        goals.append(f"RC guest CPU per byte <= {GOAL_CPU:g}x TCP's (each at its cheapest "
                     f"size): RC {oc[1]:.3f} s/GiB at {fmt_size(oc[0])}, TCP {tc[1]:.3f} s/GiB "
                     f"at {fmt_size(tc[0])}, RC/TCP {oc[1] / tc[1]:.2f}: "
                     f"{'met' if oc[1] / tc[1] <= GOAL_CPU else 'NOT met'}")
    return goals or ["no qperf figures: goals not judged"]


def storage_table(res):
    """ohca and rxe side by side per storage cell, with the ratio against
    the goal (>= 100x rxe)."""
    rows = [("cell", "what", "ohca", "rxe", "unit", "ohca/rxe", f"goal {GOAL_STORAGE:g}x",
             "fio CPU % ohca/rxe")]
    for name, _, unit, what in STORAGE_CELLS:
        o, x = res.get(("ohca0", name)), res.get(("rxe0", name))
        key = "iops" if unit == "IOPS" else "mbs"
        ov = o[key] if isinstance(o, dict) else (o or "no result")
        xv = x[key] if isinstance(x, dict) else (x or "no result")
        ratio, goal = "-", "no figure"
        if isinstance(ov, float) and isinstance(xv, float):
            if xv > 0:
                ratio = f"{ov / xv:.1f}"
                goal = "met" if ov / xv >= GOAL_STORAGE else "NOT met"
            elif ov > 0:
                ratio, goal = "inf", "met (rxe moved nothing)"
        cpu = "/".join(fmt(c.get("cpu"), 0) if isinstance(c, dict) else "-" for c in (o, x))
        rows.append((name, what, fmt(ov), fmt(xv), unit, ratio, goal, cpu))
    return align(rows)


def fmt_size(s):
    return f"{s // 1048576} MiB" if s >= 1048576 else f"{s // 1024} KiB" if s >= 1024 else f"{s} B"
