#!/usr/bin/env python3
"""ohca vs soft-RoCE (rxe) bandwidth and latency, one VM, same run.

Boots one VM (TCG), loads ohca, adds rxe0 on the same netdev (eth0, which
ohca drives), and runs perftest in loopback (server and client in the VM,
client connecting to 127.0.0.1) on each device in turn:

  ib_write_bw ib_read_bw ib_send_bw  at 64 B, 4 KiB, 64 KiB, 1 MiB  (MB/s, BW average)
  ib_write_lat ib_read_lat ib_send_lat at 2 B, 4 KiB                  (µs, t_typical = median)

then prints one table with the ohca/rxe ratio (for latency: rxe/ohca, so
> 1 means ohca is better in both).  No assertions: figures only.  Absolute
numbers reflect QEMU/TCG emulation, not hardware.

    python3 tests/bench/bench.py [--iters N] [--timeout S]

ohca uses GID index 1 (its RoCEv2 IPv4 GID); rxe0's RoCEv2 IPv4 GID index
is looked up in sysfs.  Exit 0 when every run produced a figure, 1 otherwise.
"""

import argparse
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "vm"))
import ohcavm  # noqa: E402

BW = ("ib_write_bw", "ib_read_bw", "ib_send_bw")
BW_SIZES = (64, 4096, 65536, 1048576)
LAT = ("ib_write_lat", "ib_read_lat", "ib_send_lat")
LAT_SIZES = (2, 4096)

SCRIPT = r"""
modprobe rdma_rxe || { echo "no rdma_rxe"; exit 3; }
rdma link add rxe0 type rxe netdev "$OHCA_IFACE" || exit 3
# rxe0's RoCEv2 GID for the IPv4 address
rxe_gid=
for i in $(seq 0 15); do
	g=$(cat /sys/class/infiniband/rxe0/ports/1/gids/$i 2>/dev/null) || continue
	t=$(cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/$i 2>/dev/null)
	case "$g" in 0000:0000:0000:0000:0000:ffff:*) [ "$t" = "RoCE v2" ] && { rxe_gid=$i; break; };; esac
done
[ -n "$rxe_gid" ] || { echo "no RoCE v2 IPv4 GID on rxe0"; ibv_devinfo -v -d rxe0; exit 3; }
echo "GIDS ohca0=1 rxe0=$rxe_gid"
ibv_devinfo -d rxe0 | grep -E "hca_id|state|active_mtu"
ibv_devinfo -d ohca0 | grep -E "hca_id|state|active_mtu"
port=18500
run() {  # dev gid test size iters
	port=$((port + 1))
	timeout 120 $3 -d $1 -x $2 -F -s $4 -n $5 -p $port > /tmp/srv.log 2>&1 &
	srv=$!
	ohca_retry 20 timeout 120 $3 -d $1 -x $2 -F -s $4 -n $5 -p $port 127.0.0.1 > /tmp/cli.log 2>&1
	c=$?
	wait $srv
	line=$(grep -E "^ *$4 +[0-9]+ " /tmp/cli.log | tail -1)
	echo "RESULT $1 $3 $4 rc=$c :$line"
	[ $c -eq 0 ] || tail -n 5 /tmp/cli.log /tmp/srv.log
}
for t in {bw}; do for s in {bw_sizes}; do
	n={iters}; [ $s -ge 1048576 ] && n=$(( {iters} / 4 + 1 ))
	for dev in ohca0 rxe0; do g=1; [ $dev = rxe0 ] && g=$rxe_gid; run $dev $g $t $s $n; done
done; done
for t in {lat}; do for s in {lat_sizes}; do
	for dev in ohca0 rxe0; do g=1; [ $dev = rxe0 ] && g=$rxe_gid; run $dev $g $t $s {iters}; done
done; done
rdma link delete rxe0
exit 0
"""


def parse(output):
    """{(dev, test, size): value} — BW average (MB/s) or t_typical (µs)."""
    res = {}
    for m in re.finditer(r"^RESULT (\S+) (\S+) (\d+) rc=(\d+) :(.*)$", output, re.M):
        dev, test, size, rc, line = m.groups()
        cols = line.split()
        try:
            if test.endswith("_bw"):
                val = float(cols[3])            # bytes iters peak avg msgrate
            else:
                val = float(cols[4])            # bytes iters min max typical avg ...
        except (IndexError, ValueError):
            val = None
        res[(dev, test, int(size))] = val if rc == "0" else None
    return res


def fmt_size(s):
    return f"{s // 1048576} MiB" if s >= 1048576 else f"{s // 1024} KiB" if s >= 1024 else f"{s} B"


def table(res):
    rows = [("test", "size", "ohca0", "rxe0", "unit", "ratio")]
    ok = True
    for tests, sizes, unit in ((BW, BW_SIZES, "MB/s"), (LAT, LAT_SIZES, "us")):
        for t in tests:
            for s in sizes:
                o, x = res.get(("ohca0", t, s)), res.get(("rxe0", t, s))
                ok &= o is not None and x is not None
                if o and x:
                    ratio = f"{o / x:.2f}" if unit == "MB/s" else f"{x / o:.2f}"
                else:
                    ratio = "-"
                rows.append((t, fmt_size(s), f"{o:.2f}" if o is not None else "FAIL",
                             f"{x:.2f}" if x is not None else "FAIL", unit, ratio))
    w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for i, r in enumerate(rows):
        lines.append("  ".join(c.rjust(w[k]) if k in (2, 3, 5) else c.ljust(w[k])
                               for k, c in enumerate(r)))
        if i == 0:
            lines.append("  ".join("-" * x for x in w))
    return "\n".join(lines), ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iters", type=int, default=200, help="iterations per run (1 MiB: iters/4+1)")
    ap.add_argument("--timeout", type=float, default=1200)
    ap.add_argument("--logdir", default=os.path.join(ohcavm.TOP, "build/test-logs/bench"))
    args = ap.parse_args()
    script = (SCRIPT.replace("{bw}", " ".join(BW)).replace("{lat}", " ".join(LAT))
              .replace("{bw_sizes}", " ".join(map(str, BW_SIZES)))
              .replace("{lat_sizes}", " ".join(map(str, LAT_SIZES)))
              .replace("{iters}", str(args.iters)))
    t0 = time.monotonic()
    try:
        (r,) = ohcavm.run(script, nvms=1, nic="ohca", name="bench",
                          timeout=args.timeout, logdir=args.logdir)
    except ohcavm.HarnessError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 2
    if r.exit_code != 0 or r.kernel_problems or r.timed_out:
        print(r.report(), file=sys.stderr)
    text, ok = table(parse(r.output))
    gids = re.search(r"^GIDS .*$", r.output, re.M)
    print(f"ohca vs rxe, one VM (TCG), perftest loopback via 127.0.0.1, "
          f"{args.iters} iterations ({args.iters // 4 + 1} at 1 MiB); "
          f"{gids.group(0) if gids else ''}")
    print("bandwidth: BW average MB/s, ratio ohca/rxe; latency: t_typical (median) us, "
          "ratio rxe/ohca (> 1: ohca better)\n")
    print(text)
    print(f"\nbench: {time.monotonic() - t0:.0f}s; logs in {args.logdir}")
    return 0 if ok and r.ok else 1


if __name__ == "__main__":
    sys.exit(main())
