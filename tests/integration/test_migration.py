"""Snapshots of a VM with ohca in the middle of RC traffic (issue 26,
docs/migration.md): vm0 runs ohca_rc_integrity (every completion and byte
checked) against vm1; in the middle of it both VMs are stopped, vm0 is
saved (savevm) and loaded again (loadvm) -- its device state through the
engine's stream (ohca_engine_save/load) -- and both go on; later vm0 is
saved again, its QEMU quits and a new one starts from that snapshot
(-loadvm at start). The traffic must end with PASS on both sides.

The 9p share blocks migration while the guest has it mounted, so vm0's job
moves its output and the program to /tmp, unmounts the share around the
snapshot and mounts it again afterwards. Both VMs are stopped while vm0 is
saved and loaded, so the peer's ACK timers (on its virtual clock) do not
run out meanwhile."""

import os
import re
import subprocess
import time

import pytest

from vmtest import assert_ok
from harness.common import HarnessError
from harness.wire import socket_drops, switch_port_stats
import migration_gaps

pytestmark = pytest.mark.ohca_only

GID = 1
ITERS = 1000
PORT = 18600

# A job that unmounts the share (9p blocks savevm and migration while the
# guest has it mounted) must hold nothing open on it: it copies what it needs
# to /tmp and goes on as /tmp/phase2.sh (exec: the share's output.log and
# job.sh are closed), its output in /tmp/job.log, appended to the share's
# output.log at the end. BODY runs in phase 2, cd /, with fail() defined and
# /tmp/ohca_rc_integrity; it sets rc.
#
# The logs in the guest's /tmp (job.log and those of the programs the job
# runs in the background) reach the share's guest-logs/ at every mark()
# and at the exit, however the job ends: the exit mounts the share again if
# a failure left it unmounted (else the host would see no result, and the
# logs would stay in the guest). The test prints them when it fails.
OFF_SHARE = r"""
fail() { echo "FAIL: $*"; exit 1; }
cp /share/env.sh /share/ohca-lib.sh /share/ohca_rc_integrity /tmp/ || fail "copy"
cat >/tmp/phase2.sh <<'PHASE2'
. /tmp/env.sh
. /tmp/ohca-lib.sh
fail() { echo "FAIL: $*"; cat /tmp/cli.log 2>/dev/null; exit 1; }
remount() { mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 share /share; }
save_logs() {
    mountpoint -q /share || return 0
    mkdir -p /share/guest-logs && cp /tmp/*.log /share/guest-logs/ 2>/dev/null
    return 0
}
mark() { save_logs; ohca_mark "$1"; }
finish() {
    local rc=$?
    mountpoint -q /share || ohca_poll 300 eval 'remount 2>/dev/null' || exit "$rc"
    save_logs
    cat /tmp/job.log >>/share/output.log
    exit "$rc"
}
trap finish EXIT
progress() { grep -c "iterations (" /tmp/cli.log; }
# After the share is unmounted: mounts it again once the host has posted
# NAME (9p refuses a mount while a migration runs; a mount too early is
# undone, so the host's savevm or migrate is refused at most briefly).
remount_after() {
    while sleep 0.5; do
        remount 2>/dev/null || continue
        [ -e "/share/sync/host.$1" ] && return 0
        umount /share
    done
}
cd /
@BODY@
exit $rc
PHASE2
exec bash /tmp/phase2.sh >/tmp/job.log 2>&1 </dev/null
"""


def off_share(body):
    return OFF_SHARE.replace("@BODY@", body)


CLIENT = off_share(r"""
ohca_wait_host go 300 || fail "the server never listened"
/tmp/ohca_rc_integrity -d "$OHCA_IBDEV" -g @GID@ -n @ITERS@ -p @PORT@ -t 300 "$OHCA_PEER_IP" \
    >/tmp/cli.log 2>&1 &
cli=$!
for s in 1 2; do
    # Some traffic before each snapshot: two progress lines (100 iterations).
    ohca_poll 120 eval '[ "$(progress)" -ge $((2 * s)) ]' ||
        fail "no traffic before snapshot $s: $(tail -n 3 /tmp/cli.log)"
    kill -0 $cli 2>/dev/null || fail "the client ended before snapshot $s"
    echo "before snapshot $s: $(progress) progress lines"
    mark traffic$s
    umount /share || fail "cannot unmount the share"
    echo "share unmounted"
    # The host saves and loads this VM now (the guest's clock stops meanwhile).
    remount_after snapshot$s-done
    echo "share mounted again"
done
wait $cli
rc=$?
cat /tmp/cli.log
""")

SERVER = r"""
/share/ohca_rc_integrity -d "$OHCA_IBDEV" -g @GID@ -p @PORT@ -t 300 >/tmp/srv.log 2>&1 &
srv=$!
ohca_poll 60 eval 'ss -Hltn "sport = :@PORT@" | grep -q .' ||
    { echo "FAIL: server not listening"; cat /tmp/srv.log; exit 1; }
ohca_mark listening
wait $srv
rc=$?
cat /tmp/srv.log
exit $rc
"""


# The memory checkers' stale pages so far, and what the guest's kernel said
# of a broken page table, a stalled CPU or RCU.
MEMCHECK_LIB = r"""
# memcheck_run CPU PAGES LOG: the C checker if the share has it, else Python's
# (exec: run in the background, its $! is the checker's)
memcheck_run() {
    if [ -x /tmp/guest_memcheck ]; then exec /tmp/guest_memcheck "$@"; else exec python3 /tmp/guest_memcheck.py "$@"; fi
}
memcheck_copy() { cp /share/guest_memcheck.py /tmp/ && { [ ! -e /share/guest_memcheck ] || cp /share/guest_memcheck /tmp/; }; }
memcheck_stale() { cat /tmp/memcheck-*.log 2>/dev/null | grep -c '^STALE'; }
kernel_bugs() { dmesg | grep -E 'BUG:|Bad page|rcu.*stall|general protection|soft lockup' | head -n 5; }
"""


def fill(script, iters=ITERS, migrations=0):
    s = (script.replace("@MEMCHECK_LIB@", MEMCHECK_LIB)
         .replace("@GID@", str(GID)).replace("@ITERS@", str(iters))
         .replace("@PORT@", str(PORT)).replace("@N@", str(migrations))
         .replace("@UD@", "1" if MIG_UD else "0").replace("@NVME@", "1" if MIG_NVME else "0")
         .replace("@NQN@", NQN).replace("@QPT@", str(LIVE_QP_TIMEOUT))
         .replace("@MEMCHECK@", "1" if MEMCHECK else "0").replace("@PAGES@", str(MEMCHECK_PAGES)))
    for k in range(3):
        s = s.replace(f"@EXTRA{k}@", str(PORT + 1 + k))
    return s


def guest_logs(c, lines=40):
    """The ends of the logs the guests' jobs copied to their shares'
    guest-logs/ (OFF_SHARE), for a failure report."""
    out = []
    for vm in c.vms:
        d = os.path.join(vm.share, "guest-logs")
        for name in sorted(os.listdir(d)) if os.path.isdir(d) else ():
            with open(os.path.join(d, name), errors="replace") as f:
                tail = f.read().splitlines()[-lines:]
            out += [f"--- {vm.name}: {name} (last {lines} lines) ---"] + tail
    return "\n".join(out)


def hmp(vm, cmd, timeout=300):
    return vm.qmp.execute("human-monitor-command", timeout=timeout, **{"command-line": cmd})


def _savevm(vm0, vm1, tag):
    """Stops both VMs and saves vm0 as TAG once its guest has unmounted the
    share (until then savevm is refused: 9p's migration blocker); returns
    the attempts. Both stay stopped."""
    deadline = time.monotonic() + 60
    attempts = 0
    while True:
        attempts += 1
        vm1.qmp.execute("stop")
        vm0.qmp.execute("stop")
        out = hmp(vm0, f"savevm {tag}")
        if not out.strip():
            return attempts
        vm0.qmp.execute("cont")
        vm1.qmp.execute("cont")
        if time.monotonic() > deadline:
            raise HarnessError(f"savevm refused: {out}")
        time.sleep(0.5)


def test_snapshot_round_trip_during_rc_traffic(vm_cluster):
    # restored from the pool's two VMs (boot images) where it can: a savevm
    # and loadvm of a restored VM, and a boot fewer
    c = vm_cluster(nvms=2, restore=True)
    c.start({0: fill(CLIENT), 1: fill(SERVER)})
    vm0, vm1 = c[0], c[1]
    vm1.wait_mark("listening", timeout=600)
    vm0.post("go")
    # Snapshot 1: saved and loaded by the running QEMU (HMP loadvm).
    vm0.wait_mark("traffic1", timeout=300)
    attempts = _savevm(vm0, vm1, "ohca-snap1")
    t = time.monotonic()
    out = hmp(vm0, "loadvm ohca-snap1")
    assert not out.strip(), f"loadvm: {out}"
    load_s = time.monotonic() - t
    vm0.qmp.execute("cont")
    vm1.qmp.execute("cont")
    vm0.post("snapshot1-done")
    # Snapshot 2: vm0's QEMU quits and a new process starts from the
    # snapshot (-loadvm at start), its device state from the disk only.
    vm0.wait_mark("traffic2", timeout=300)
    _savevm(vm0, vm1, "ohca-snap2")
    restart_s = vm0.restart_from_snapshot("ohca-snap2")
    vm0.qmp.execute("cont")
    vm1.qmp.execute("cont")
    vm0.post("snapshot2-done")
    results = c.wait(900)
    assert_ok(results)
    for r in results:
        assert "ohca_rc_integrity: PASS" in r.output, r.report()
    # Both snapshots fell in the middle of the traffic: the client had not
    # gone far before the first, nor finished before the second (a progress
    # line every 50 iterations).
    before = dict(re.findall(r"^before snapshot (\d): (\d+) progress lines", results[0].output, re.M))
    assert int(before.get("1", ITERS)) < ITERS // 50 // 2, results[0].report()
    assert int(before.get("2", ITERS)) < ITERS // 50, results[0].report()
    print(f"savevm after {attempts} attempt(s), loadvm took {load_s:.1f} s, "
          f"-loadvm at start {restart_s:.1f} s")


# Live migration (docs/migration.md): vm0 moves to a new QEMU process
# OHCA_MIGRATIONS times (1 in make test, 20 in make migration-test), each
# time in the middle of its own ohca_rc_integrity connection to vm1 (every
# completion and byte checked on both ends), on the two-VM dgram wire.
# Beside it, for the whole run, other traffic between the two (EXTRA_*):
# each program runs in the background from the first connection on and
# must be running and making progress after every migration.
MIGRATIONS = int(os.environ.get("OHCA_MIGRATIONS", "1"))
# Iterations per connection (OHCA_MIG_ITERS; make migration-test: 600: the
# iterations after a migration are most of a connection's time, and a
# migration lasts 200-300 of them).
LIVE_ITERS = int(os.environ.get("OHCA_MIG_ITERS", "2000"))
# The UD sender beside them (OHCA_MIG_UD=1; make migration-test): not in
# make test. Unpaced by the guest, it starves RC on a loaded host with or
# without a migration (docs/migration.md): one make test run on the merged
# tree at load 25 lost every RC connection to retry exhaustion after its
# migration (2026-12-06).
MIG_UD = os.environ.get("OHCA_MIG_UD", "0") == "1"
# NVMe over RDMA beside them (OHCA_MIG_NVME=1; make migration-test MIG_NVME=1): vm1
# an nvmet-rdma target, vm0 its host running fio write+verify passes.
MIG_NVME = os.environ.get("OHCA_MIG_NVME", "0") == "1"
NQN = "ohca-migration-test"
# The guest memory checker (tests/migration/guest_memcheck.py) on every vCPU
# of vm0 (OHCA_MIG_MEMCHECK=1): beside the live traffic, and alone in
# test_guest_memory_across_migrations. PAGES pages each.
MEMCHECK = os.environ.get("OHCA_MIG_MEMCHECK", "0") == "1"
MEMCHECK_PAGES = int(os.environ.get("OHCA_MIG_MEMCHECK_PAGES", "256"))
# OHCA_MIG_MEMCHECK_KLOAD=1: the guest's kernel kept busy beside the checkers
# alone (files written and removed, a ping flood to the peer), as the live
# traffic keeps it: guest memory the checkers do not own (slab, virtqueues).
MEMCHECK_KLOAD = os.environ.get("OHCA_MIG_MEMCHECK_KLOAD", "0") == "1"
MEMCHECK_SCRIPT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "migration",
                                               "guest_memcheck.py"))


def memcheck_files():
    """The checker for the guests' shares: the Python one, and the C one
    (the same checks with the smallest footprint: its loop touches few
    pages besides the checked ones) built here, static, when the host's
    compiler can."""
    files = {"guest_memcheck.py": MEMCHECK_SCRIPT}
    src = MEMCHECK_SCRIPT[:-len(".py")] + ".c"
    out = os.path.join(os.path.dirname(__file__), "..", "..", "build", "migration", "guest_memcheck")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    built = subprocess.run(["cc", "-O2", "-static", "-Wall", "-Wextra", "-o", out, src],
                           capture_output=True, text=True)
    if built.returncode == 0:
        files["guest_memcheck"] = os.path.abspath(out)
    else:
        print(f"guest_memcheck.c not built, the Python checker runs: {built.stderr.strip()}")
    return files
# The live connections' QP timeout (ohca_rc_integrity -T, ib_write_bw -u;
# OHCA_MIG_QP_TIMEOUT). make migration-test: 18, 4.096 us x 2^18 = 1.07 s,
# about what Linux's rdma_cm gives a RoCE QP (rping's here: 17-19 by kernel
# version), so that retry_cnt 7 allows 8 such timeouts, about 9.9 s with
# the early tries (StillPeerTest in rtt_test.cpp). 14 (67 ms, raised to the
# device's 200 ms floor) allows about 1.9 s: less than the peer waited for
# a migrating VM's answers on a loaded host (migration 2 of the 2026-12-06
# 13:09 run failed on it, docs/migration.md). make test's one migration
# keeps 14: at 18 a loss costs up to 1.07 s once the RTO has grown to the
# local ACK timeout, and that job took 180 s instead of 134 s (2026-12-06,
# load 8-10).
LIVE_QP_TIMEOUT = int(os.environ.get("OHCA_MIG_QP_TIMEOUT", "14"))

# Shell helpers of both ends for the extra traffic: `extra NAME CMD...` runs
# CMD in the background, its output in $XLOG/NAME.log; `grows NAME WHEN`:
# NAME runs and makes progress within a minute (limit_NAME seconds if set;
# `progress_NAME LOG` counts its progress reports, else the log's lines
# count); `extra_ok WHEN`: all do.
EXTRA_LIB = r"""
EXTRA=""
extra() {
    local name=$1
    shift
    "$@" >"$XLOG/$name.log" 2>&1 </dev/null &
    eval "pid_$name=$!"
    EXTRA="$EXTRA $name"
}
reports() {
    if declare -F "progress_$1" >/dev/null; then "progress_$1" "$XLOG/$1.log"; else wc -l <"$XLOG/$1.log"; fi
}
grows() {
    local name=$1 pid n limit
    eval "pid=\$pid_$name limit=\${limit_$name:-60}"
    n=$(reports "$name")
    ohca_poll "$limit" eval '! kill -0 $pid 2>/dev/null || [ "$(reports "$name")" -gt "$n" ]'
    kill -0 "$pid" 2>/dev/null && [ "$(reports "$name")" -gt "$n" ] && return 0
    echo "FAIL: $name ended or stalled after $2 ($(reports "$name") progress reports); its log ends:"
    tail -n 10 "$XLOG/$name.log" | cut -c 1-200
    return 1
}
extra_ok() {
    local j ok=0
    for j in $EXTRA; do grows "$j" "$1" || ok=1; done
    return $ok
}
# ib_send_bw over UD (SENDs of 512 B, 8 in flight, a report every 2 s):
# each report gives the SENDs completed (client) or received (server) in
# its 2 s; ud_total sums them.
progress_ud() { awk '$1 == 512 && $2 > 0' "$1" | wc -l; }
ud_total() { awk '$1 == 512 { n += $2 } END { print n + 0 }' "$1"; }
# extra_alive: every one still runs (servers, whose logs may not grow).
extra_alive() {
    local j pid ok=0
    for j in $EXTRA; do
        eval "pid=\$pid_$j"
        kill -0 "$pid" 2>/dev/null || { echo "FAIL: $j ended early"; tail -n 10 "$XLOG/$j.log"; ok=1; }
    done
    return $ok
}
"""

# The extra traffic runs at nice 10, a tenth of the VMs' one vCPU beside
# ohca_rc_integrity, which polls its CQ (at nice 0 the extra traffic made
# that connection 4-5 times slower; at nice 19 ib_write_bw reported twice
# in minutes).
#
# rping through rdma_cm: a new connection every 20 pings of 1 KiB until
# /tmp/stop appears. rping exits 0 even when its connection broke (a
# disconnected peer ends its loop without an error), so each connection
# counts its pings: -v prints a ping's data after -V checked it.
EXTRA_CLIENT = r"""
# A connection whose CM exchange (connect or disconnect, MADs over UD)
# lost a MAD in the stop waits for the CM's retries, seconds each: a
# migration stalled rping past a minute once (2026-12-05).
limit_rping=300  # read by grows
rping_loop() {
    local n=0 got
    renice -n 10 -p $BASHPID >/dev/null
    while [ ! -e /tmp/stop ]; do
        rping -c -a "$OHCA_PEER_IP" -p @EXTRA0@ -C 20 -S 1024 -v -V >/tmp/rping-last.log 2>&1
        got=$(grep -c "^ping data: rdma-ping-" /tmp/rping-last.log)
        n=$((n + 1))
        [ "$got" = 20 ] || { tail -n 5 /tmp/rping-last.log | cut -c 1-200; echo "rping: FAIL: connection $n: $got/20 pings"; exit 1; }
        echo "rping: connection $n: 20 pings verified"
    done
}
# ib_write_bw: RC WRITEs of 4 KiB, 8 in flight (the device's work per packet
# is not niced: 64 KiB WRITEs, 128 in flight, made the run 4 times longer on
# a loaded host), a report every 2 s; the ones with iterations in them
# count. -F: a report goes on when perftest cannot measure the CPU's clock
# (under TCG its r^2 check fails now and then, and it exited). -u: the QP
# timeout of the live connections (LIVE_QP_TIMEOUT; perftest's default, 14,
# failed vm0's WRITEs with "retry counter exceeded" in migration 5 of the
# 2026-12-06 15:48 run, whose RC connection waited 3.2 s in it).
progress_wbw() { awk '$1 == 4096 && $2 > 0' "$1" | wc -l; }
# NVMe over RDMA: vm0 connects to vm1's target (two I/O queues) and runs
# fio passes until /tmp/stop: each writes 4 MiB at random in 4-128 KiB
# blocks with crc32c verify headers and reads it all back (verify_fatal;
# a new seed each pass) and prints its longest I/O (completion latency of
# a write or a verify read): the pass over a migration shows its gap.
limit_fio=300  # read by grows
progress_fio() { grep -c "^fio: pass [0-9]* verified" "$1"; }
# The longest I/O of the passes after the first N (ms).
fio_longest_since() { awk -v n="$1" '/^fio: pass [0-9]* verified/ && ++k > n && $NF > m { m = $NF } END { print m + 0 }' "$XLOG/fio.log"; }
nvme_dev() {
    local c
    for c in /sys/class/nvme/nvme*; do
        [ "$(cat $c/subsysnqn 2>/dev/null)" = @NQN@ ] && [ -e "/dev/$(basename $c)n1" ] &&
            { echo "$(basename $c)n1"; return 0; }
    done
    return 1
}
fio_loop() {
    local n=0 dev
    renice -n 10 -p $BASHPID >/dev/null
    modprobe nvme-rdma || { echo "fio: FAIL: modprobe nvme-rdma"; exit 1; }
    # -k 30: the keep-alive timeout (the fabrics default is 5 s). A
    # keep-alive is an admin command whose round trip needs both VMs'
    # one vCPU; on a host at load 25 it took 6.6 s, and past the timeout
    # the host tears its queues down and reconnects (docs/migration.md).
    nvme connect -t rdma -a "$OHCA_PEER_IP" -s 4420 -n @NQN@ -i 2 -k 30 ||
        { echo "fio: FAIL: nvme connect"; exit 1; }
    ohca_poll 60 nvme_dev >/dev/null || { echo "fio: FAIL: no namespace"; exit 1; }
    dev=$(nvme_dev)
    echo "fio: /dev/$dev transport $(cat /sys/class/nvme/${dev%n1}/transport)"
    while [ ! -e /tmp/stop ]; do
        n=$((n + 1))
        fio --name=mig --filename=/dev/$dev --direct=1 --ioengine=libaio --iodepth=8 \
            --rw=randwrite --bsrange=4k-128k --size=4M --randseed=$n --verify=crc32c \
            --verify_fatal=1 --output-format=json --output=/tmp/fio-pass.json \
            >/tmp/fio-err.log 2>&1 || { cat /tmp/fio-err.log /tmp/fio-pass.json | tail -n 20; dmesg | grep -i nvme | tail -n 20; echo "fio: FAIL: pass $n"; exit 1; }
        python3 -c '
import json, sys
j = json.load(open("/tmp/fio-pass.json"))["jobs"][0]
assert j["error"] == 0, j["error"]
assert j["write"]["io_bytes"] > 0 and j["read"]["io_bytes"] > 0, (j["write"]["io_bytes"], j["read"]["io_bytes"])
print("fio: pass %s verified, longest I/O ms %.0f" % (sys.argv[1], max(j["write"]["clat_ns"]["max"], j["read"]["clat_ns"]["max"]) / 1e6))
' $n || { echo "fio: FAIL: pass $n"; exit 1; }
        # the host's NVMe messages (timeouts, resets) reach the share with the logs
        dmesg | grep -i nvme | tail -n 40 >/tmp/nvme-dmesg.log
    done
    nvme disconnect -n @NQN@ >/dev/null || { echo "fio: FAIL: nvme disconnect"; exit 1; }
    echo "fio: $n passes, disconnected"
}
# The memory checkers (OHCA_MIG_MEMCHECK=1), at nice 19 beside the traffic.
memcheck_start() {
    local k
    memcheck_copy || return 1
    for k in $(seq 0 $(($(nproc --all) - 1))); do
        (renice -n 19 -p $BASHPID >/dev/null && memcheck_run $k @PAGES@ /tmp/memcheck-$k.log) &
        MC_PIDS="$MC_PIDS $!"
    done
}
@MEMCHECK_LIB@
start_extra() {
    [ @MEMCHECK@ = 0 ] || memcheck_start || { echo "FAIL: the memory checkers"; exit 1; }
    extra rping rping_loop
    extra wbw nice -n 10 stdbuf -oL ib_write_bw -d "$OHCA_IBDEV" -x @GID@ -p @EXTRA1@ \
        -s 4096 -t 8 -D 2 -F -u @QPT@ --run_infinitely "$OHCA_PEER_IP"
    [ @NVME@ = 0 ] || extra fio fio_loop
    [ @UD@ = 1 ] || return 0
    extra ud nice -n 10 stdbuf -oL ib_send_bw -c UD -d "$OHCA_IBDEV" -x @GID@ -p @EXTRA2@ \
        -s 512 -t 8 -D 2 -F --run_infinitely "$OHCA_PEER_IP"
}
"""

EXTRA_SERVER = r"""
# The NVMe target: a 16 MiB file in /tmp (a tmpfs: buffered I/O) behind
# nvmet-rdma on port 4420; nvmet_down when vm0 has disconnected.
nvmet_up() {
    local t=/sys/kernel/config/nvmet
    modprobe nvmet-rdma || return 1
    mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
    truncate -s 16M /tmp/nvme.img
    mkdir $t/subsystems/@NQN@ &&
        echo 1 >$t/subsystems/@NQN@/attr_allow_any_host &&
        mkdir $t/subsystems/@NQN@/namespaces/1 &&
        echo /tmp/nvme.img >$t/subsystems/@NQN@/namespaces/1/device_path &&
        echo 1 >$t/subsystems/@NQN@/namespaces/1/buffered_io &&
        echo 1 >$t/subsystems/@NQN@/namespaces/1/enable &&
        mkdir $t/ports/1 &&
        echo rdma >$t/ports/1/addr_trtype &&
        echo ipv4 >$t/ports/1/addr_adrfam &&
        echo "$OHCA_IP" >$t/ports/1/addr_traddr &&
        echo 4420 >$t/ports/1/addr_trsvcid &&
        ln -s $t/subsystems/@NQN@ $t/ports/1/subsystems/@NQN@
}
nvmet_down() {
    local t=/sys/kernel/config/nvmet
    rm -f $t/ports/1/subsystems/@NQN@ && rmdir $t/ports/1 &&
        echo 0 >$t/subsystems/@NQN@/namespaces/1/enable &&
        rmdir $t/subsystems/@NQN@/namespaces/1 $t/subsystems/@NQN@
}
start_extra() {
    [ @NVME@ = 0 ] || nvmet_up || { echo "FAIL: the NVMe target"; exit 1; }
    extra rping nice -n 10 rping -s -P -a "$OHCA_IP" -p @EXTRA0@ -S 1024
    extra wbw nice -n 10 stdbuf -oL ib_write_bw -d "$OHCA_IBDEV" -x @GID@ -p @EXTRA1@ \
        -s 4096 -t 8 -D 2 -F -u @QPT@ --run_infinitely
    if [ @UD@ = 1 ]; then
        extra ud nice -n 10 stdbuf -oL ib_send_bw -c UD -d "$OHCA_IBDEV" -x @GID@ -p @EXTRA2@ \
            -s 512 -t 8 -D 2 -F --run_infinitely
    fi
    # Minutes on a host at load 25-30 (2026-12-06: vm1's preamble took 205 s).
    ohca_poll 300 eval 'ss -Hltn "sport = :@EXTRA1@" | grep -q . && { [ @UD@ = 0 ] || ss -Hltn "sport = :@EXTRA2@" | grep -q .; }' ||
        { echo "FAIL: the perftest servers do not listen"; cat "$XLOG/wbw.log" "$XLOG/ud.log"; exit 1; }
}
# What rping's server printed besides connections ending (the client
# disconnects after its last ping; state 10 is DISCONNECTED; a QP leaving
# its timewait after the disconnect is an event rping does not handle).
extra_server_errors() {
    grep -v -e "DISCONNECT EVENT" -e "wait for RDMA_READ_ADV state 10" \
        -e "unhandled event: RDMA_CM_EVENT_TIMEWAIT_EXIT, ignoring" "$XLOG/rping.log"
}
"""

CLIENT_LIVE = off_share(EXTRA_LIB + EXTRA_CLIENT + r"""
XLOG=/tmp
rc=0
for i in $(seq 1 @N@); do
    ohca_wait_host go-$i 300 || fail "server $i never listened"
    if [ $i = 1 ]; then
        start_extra
        extra_ok "the start" || fail "the extra traffic does not run"
        echo "extra traffic running:$EXTRA"
    fi
    /tmp/ohca_rc_integrity -d "$OHCA_IBDEV" -g @GID@ -n @ITERS@ -p @PORT@ -t 300 -T @QPT@ \
        "$OHCA_PEER_IP" >/tmp/cli.log 2>&1 &
    cli=$!
    ohca_poll 120 eval '[ "$(progress)" -ge 2 ]' || fail "no traffic: $(tail -n 3 /tmp/cli.log)"
    kill -0 $cli 2>/dev/null || fail "connection $i ended before its migration"
    before=$(progress)
    [ @NVME@ = 0 ] || fio_before=$(reports fio)
    mark ready-$i
    umount /share || fail "cannot unmount the share"
    # The host migrates this VM now.
    remount_after migrated-$i
    kill -0 $cli 2>/dev/null && mid=yes || mid=no
    # its own account of the gap (its clock stood still with the VM)
    kill -USR1 $cli 2>/dev/null
    echo "migration $i: progress lines before $before, after $(progress), client still running: $mid"
    extra_ok "migration $i" || rc=1
    [ @NVME@ = 0 ] || echo "NVME_MIGRATION $i longest I/O $(fio_longest_since $fio_before) ms in passes $((fio_before + 1))..$(reports fio)"
    [ @MEMCHECK@ = 0 ] || echo "MEMCHECK_MIGRATION $i stale pages so far $(memcheck_stale)"
    bugs=$(kernel_bugs)
    [ -z "$bugs" ] || { echo "KERNEL after migration $i: $bugs"; rc=1; }
    wait $cli || rc=1
    cat /tmp/cli.log
    [ $mid = yes ] || { echo "FAIL: migration $i did not fall in the traffic"; rc=1; }
    [ $rc = 0 ] || exit $rc
done
# The end: rping finishes its connection; the peer checks its servers
# before this end stops its clients (a stopped client is an error to them).
touch /tmp/stop
if [ @MEMCHECK@ = 1 ]; then
    kill -TERM $MC_PIDS
    wait $MC_PIDS
    grep -h '^STALE' /tmp/memcheck-*.log | head -n 20
    grep -h '^MEMCHECK' /tmp/memcheck-*.log
    echo "MEMCHECK_TOTAL stale $(memcheck_stale)"
    [ "$(memcheck_stale)" = 0 ] || rc=1
fi
wait $pid_rping || { echo "FAIL: rping"; rc=1; }
echo "rping: $(grep -c verified /tmp/rping.log) connections of 20 pings verified"
echo "ib_write_bw: $(progress_wbw /tmp/wbw.log) reports with traffic; the last: $(grep '^ *4096 ' /tmp/wbw.log | tail -n 1)"
if [ @NVME@ = 1 ]; then
    wait $pid_fio || { echo "FAIL: fio"; tail -n 5 /tmp/fio.log; rc=1; }
    echo "NVME_PASSES $(progress_fio /tmp/fio.log) of 4 MiB written and verified; $(tail -n 1 /tmp/fio.log)"
fi
# The UD sender stops right after a report, so that the reports hold
# (nearly) every SEND it made; the peer counts what arrived.
if [ @UD@ = 1 ]; then
    n=$(grep -c '^ *512 ' /tmp/ud.log)
    ohca_poll 30 eval '[ "$(grep -c "^ *512 " /tmp/ud.log)" -gt $n ]' || { echo "FAIL: ib_send_bw UD stalled"; rc=1; }
    kill $pid_ud
    echo "UD_SENT $(ud_total /tmp/ud.log) in $(progress_ud /tmp/ud.log) reports with traffic"
fi
ohca_hw_counters
mark extra-checked
ohca_wait_host servers-checked 300 || rc=1
for j in $EXTRA; do eval "kill \$pid_$j 2>/dev/null"; done
""")

SERVER_LIVE = EXTRA_LIB + EXTRA_SERVER + r"""
XLOG=/share/guest-logs
mkdir -p $XLOG
start_extra
for i in $(seq 1 @N@); do
    /share/ohca_rc_integrity -d "$OHCA_IBDEV" -g @GID@ -p @PORT@ -t 300 -T @QPT@ \
        >/tmp/srv.log 2>&1 &
    srv=$!
    ohca_poll 60 eval 'ss -Hltn "sport = :@PORT@" | grep -q .' ||
        { echo "FAIL: server $i not listening"; cat /tmp/srv.log; exit 1; }
    ohca_mark listening-$i
    # Once the host has seen the migration complete, the server looks back
    # at the peer's gap (SIGUSR1).
    # The progress lines printed by then place the stop among them.
    # The file made right after the signal gives the host its time (mtime).
    (ohca_wait_host stopped-$i 1800 && kill -USR1 $srv && : >"$XLOG/usr1-$i" &&
        echo "MARK $i after $(grep -c ' iterations (' /tmp/srv.log) progress lines") &
    watch=$!
    wait $srv
    rc=$?
    kill $watch 2>/dev/null
    cat /tmp/srv.log
    [ $rc = 0 ] || exit $rc
done
ohca_wait_host extra-checked 600 || exit 1
# The UD sender has stopped: two more reports hold the last datagrams.
if [ @UD@ = 1 ]; then
    n=$(grep -c '^ *512 ' $XLOG/ud.log)
    ohca_poll 30 eval '[ "$(grep -c "^ *512 " $XLOG/ud.log)" -ge $((n + 2)) ]'
    echo "UD_RECEIVED $(ud_total $XLOG/ud.log) in $(progress_ud $XLOG/ud.log) reports with traffic"
fi
ohca_hw_counters
extra_alive || rc=1
if extra_server_errors; then echo "FAIL: the servers printed the errors above"; rc=1; fi
[ @NVME@ = 0 ] || nvmet_down || { echo "FAIL: the NVMe target's teardown (still connected?)"; rc=1; }
ohca_mark servers-checked
for j in $EXTRA; do eval "kill \$pid_$j 2>/dev/null"; done
exit $rc
"""

SUMMARY = re.compile(r"^ohca_rc_integrity: (PASS|FAIL) role=(\w+) .*? bytes=(\d+) .*?"
                     r"max_gap_ms=(\d+)", re.M)

# One retransmission timeout of the live connections' QPs at most: their
# local ACK timeout (IBTA: 4.096 us x 2^LIVE_QP_TIMEOUT, at least the
# device's floor DeviceLimits::min_ack_timeout_ns, 200 ms), which is the
# ceiling of the RTT-based retransmission timeout (docs/wire.md).
RTO_MS = max(4.096e-3 * 2 ** LIVE_QP_TIMEOUT, 200)
LINE_GAP = re.compile(r"^server: \d+/\d+ iterations \(\d+ s\), longest gap (\d+) ms$", re.M)
MARK_GAP = re.compile(r"^server: longest gap in the (\d+) ms before SIGUSR1: (\d+) ms$", re.M)
MARK_LINES = re.compile(r"^MARK \d+ after (\d+) progress lines$", re.M)


def peer_gaps(out1):
    """The traffic gap the peer saw at each migration: vm1's server of
    connection i gets SIGUSR1 once the host has seen migration i complete
    (sync stopped-i) and prints the longest wait between two completions
    that overlaps the 3 s before it (the stop ends at most a second or so
    before the signal)."""
    conns = re.split(r"^ohca_rc_integrity: \S+ role=server .*$", out1, flags=re.M)
    gaps, calm = {}, {}
    for i, chunk in enumerate(conns, 1):
        m = MARK_GAP.search(chunk)
        n = MARK_LINES.search(chunk)
        if m:
            gaps[i] = int(m.group(2))
        if m and n:
            # The same connection without the stop: its progress lines'
            # longest gaps (every 50 iterations) but the last one printed
            # before the signal and the next, which hold the 3 s before it.
            # (The program prints the signal's line at its end.)
            lines = [int(g) for g in LINE_GAP.findall(chunk)]
            k = int(n.group(1))
            rest = lines[:max(k - 1, 0)] + lines[k + 1:]
            if rest:
                calm[i] = max(rest)
    return gaps, calm


def explain_gaps(c, logdir, names, figures, results):
    """One line per migration: what the peer's gap was made of and its
    cause (migration_gaps, docs/migration.md), and how many were within
    the goal and whose they were."""
    traces = migration_gaps.read_traces(logdir, names)
    srv_chunks = migration_gaps.conn_chunks(results[1].output, "server")
    cli_chunks = migration_gaps.conn_chunks(results[0].output, "client")
    within, device, at_stop, stop_within = 0, [], 0, 0
    for i, f in enumerate(figures, 1):
        srv, qps = migration_gaps.server_gap(srv_chunks[i - 1]) if i <= len(srv_chunks) else (None, None)
        cli = migration_gaps.client_gap(cli_chunks[i - 1]) if i <= len(cli_chunks) else None
        mark = os.path.join(c[1].share, "guest-logs", f"usr1-{i}")
        gap_host, own = None, None
        stop = migration_gaps.stop_window(traces.get("vm0", {}).get("run", []), *f["pids"])
        if srv and os.path.exists(mark):
            t = os.path.getmtime(mark)
            gap_host = (t + srv[0] / 1000, t + srv[1] / 1000)
            own = migration_gaps.stop_gap(srv_chunks[i - 1], t, stop)
        events = {}
        if qps:
            events["vm1"] = [e for e in traces.get("vm1", {}).get("rc", []) if e[1] == qps[0]]
            events["vm0"] = [e for e in traces.get("vm0", {}).get("rc", []) if e[1] == qps[1]]
        still = f["downtime_ms"] + f["resume_ms"]
        line = migration_gaps.explain(i, gap_host, stop, events, srv, cli, still)
        # the gap the stop fell in (the longest in the window may be another)
        if own is not None:
            at_stop += 1
            stop_within += own <= still + RTO_MS
            line += f" The stop's own gap {own} ms (goal {still + RTO_MS:.0f})."
        print(line)
        if gap_host and (gap_host[1] - gap_host[0]) * 1000 <= still + RTO_MS:
            within += 1
        elif "Cause: device" in line:
            device.append(i)
    print(f"the peer's longest gap within the goal in {within} of {len(figures)}; over it for a "
          f"device's wait as the largest part in {len(device)} "
          f"({', '.join(map(str, device)) or 'none'}); the stop's own gap within the goal in "
          f"{stop_within} of the {at_stop} found")


def test_live_migration_during_rc_traffic(vm_cluster, vm_logdir):
    # OHCA_MIG_NIC=rxe: the same traffic over virtio-net and Linux's
    # soft-RoCE instead of ohca (a diagnosis: is a fault the device's?)
    extra = memcheck_files() if MEMCHECK else {}
    kw = {"nic": os.environ["OHCA_MIG_NIC"]} if os.environ.get("OHCA_MIG_NIC") else {}
    # the devices' RC waits and the VMs' stops, traced (migration_gaps)
    c = vm_cluster(nvms=2, migratable=True, smp=int(os.environ.get("OHCA_MIG_SMP", "1")),
                   extra_files=extra, extra_args=migration_gaps.trace_args(vm_logdir), **kw)
    c.start({i: fill(s, LIVE_ITERS, MIGRATIONS) for i, s in enumerate((CLIENT_LIVE, SERVER_LIVE))})
    vm0, vm1 = c[0], c[1]
    figures = []
    names = {vm0.proc.pid: "vm0", vm1.proc.pid: "vm1"}
    try:
        for i in range(1, MIGRATIONS + 1):
            vm1.wait_mark(f"listening-{i}", timeout=900)
            vm0.post(f"go-{i}")
            # (the first: the extra traffic's start is checked before it,
            # up to 5 minutes each for rping's and fio's first round)
            vm0.wait_mark(f"ready-{i}", timeout=900 if i == 1 else 300)
            src = vm0.proc.pid
            f = vm0.migrate()
            f["pids"] = (src, vm0.proc.pid)
            names[vm0.proc.pid] = "vm0"
            vm1.post(f"stopped-{i}")
            vm0.post(f"migrated-{i}")
            figures.append(f)
            print(f"migration {i}/{MIGRATIONS}: downtime {f['downtime_ms']} ms (the destination "
                  f"ran {f['resume_ms']} ms after the source completed), total "
                  f"{f['total_ms']} ms, {f['ram_mb']:.0f} MiB sent, started after "
                  f"{f['attempts']} attempt(s)", flush=True)
        # The peer's servers are checked before vm0 stops its clients.
        vm0.wait_mark("extra-checked", timeout=600)
        vm1.post("extra-checked")
        vm1.wait_mark("servers-checked", timeout=300)
        vm0.post("servers-checked")
    except HarnessError as e:
        raise HarnessError(f"{e}\n{guest_logs(c)}") from None
    results = c.wait(900)
    sums = SUMMARY.findall(results[0].output + results[1].output)
    passed = sum(1 for r, role, _, _ in sums if r == "PASS" and role == "client")
    failed = sum(1 for r, _, _, _ in sums if r == "FAIL")
    verified = sum(int(b) for r, _, b, _ in sums if r == "PASS")
    # The goal (issue 26): the peer waits at most the downtime plus one
    # retransmission timeout (the frames lost in the stop are sent again
    # by then). Printed, not asserted yet: on a loaded host the peer waits
    # a second or more now and then without a migration, and the window
    # (3 s) can hold such a wait.
    gaps, calm = peer_gaps(results[1].output)
    # NVMe: the longest I/O of vm0's fio passes from the one running at
    # migration i to the first that ended after it.
    nvme_io = {int(i): int(ms) for i, ms in
               re.findall(r"^NVME_MIGRATION (\d+) longest I/O (\d+) ms", results[0].output, re.M)}
    # QEMU's downtime ends when the source has sent its last byte; the VM
    # stands still until the destination has loaded it and runs
    # (resume_ms, harness/migration.py): the peer's wait starts from that.
    for i, f in enumerate(figures, 1):
        still = f["downtime_ms"] + f["resume_ms"]
        limit = still + RTO_MS
        io = f", NVMe's longest I/O {nvme_io.get(i, 'unknown')} ms" if MIG_NVME else ""
        print(f"migration {i}: downtime {f['downtime_ms']} ms, standing still {still} ms, the "
              f"peer's longest gap {gaps.get(i, 'unknown')} ms (goal: at most {limit:.0f} ms; "
              f"{calm.get(i, 'unknown')} ms in its connection's 50 iterations without the stop)"
              f"{io}")
    print(f"the peer's longest gap {max(gaps.values(), default=-1)} ms")
    explain_gaps(c, vm_logdir, names, figures, results)
    # UD: what the sender's perftest reported completed, what the
    # receiver's reported received, and what vm1's device dropped for want
    # of a posted receive (the receiver at nice 10 reposts slower than
    # datagrams come: UD drops those by design). Frames the wire itself lost
    # are the datagrams the kernel dropped at a VM's full socket: not part
    # of a migration (the stopped source's frames wait in the socket for the
    # destination), printed.
    sent = re.search(r"^UD_SENT (\d+) in (\d+) reports", results[0].output, re.M)
    got = re.search(r"^UD_RECEIVED (\d+) in (\d+) reports", results[1].output, re.M)
    no_wqe = re.findall(r"\bud_rx_no_wqe=(\d+)", results[1].output)
    if sent and got:
        print(f"UD: {sent.group(1)} SENDs completed in {sent.group(2)} reports, "
              f"{got.group(1)} received in {got.group(2)} reports, dropped by vm1 without "
              f"a posted receive {no_wqe[-1] if no_wqe else 'unknown'}")
    nvme = re.search(r"^NVME_PASSES (\d+) .*$", results[0].output, re.M)
    if MIG_NVME:
        print(nvme.group(0) if nvme else "NVMe: no result")
    for line in re.findall(r"^(?:MEMCHECK|STALE|KERNEL).*$", results[0].output, re.M):
        print(line)
    print("the wire's sockets dropped " +
          ", ".join(f"{vm.name} {socket_drops(vm.netdev_sock)}" for vm in c.vms
                    if vm.netdev_sock is not None))
    print(f"the VM stood still at most "
          f"{max(f['downtime_ms'] + f['resume_ms'] for f in figures)} ms")
    print(f"migrations {passed}/{MIGRATIONS} passed, cq errors {failed}, bytes verified "
          f"{verified}, max downtime {max(f['downtime_ms'] for f in figures)} ms")
    if not (all(r.ok for r in results) and passed == MIGRATIONS and failed == 0):
        print(guest_logs(c))
    assert_ok(results)
    assert passed == MIGRATIONS and failed == 0, results[0].report()
    # every pass verified its 4 MiB (a failed one ends the loop: FAIL above)
    assert not MIG_NVME or (nvme and int(nvme.group(1)) > 0), results[0].report()


# Guest memory across migrations (docs/migration.md, "Two vCPUs"): a checker
# on every vCPU of vm0 (tests/migration/guest_memcheck.py) rewrites a small
# working set of pages without a system call and checks each page held what
# it wrote last; vm0 migrates OHCA_MIGRATIONS times while they run. A page
# that lost a write is a migration that did not carry a page a vCPU wrote.
# No RDMA traffic, and with OHCA_MIG_MEMCHECK_NIC=virtio no ohca device at
# all: what it finds is QEMU's, not the device's. Opt-in
# (OHCA_MIG_MEMCHECK=1): a diagnosis, not part of make test.

CLIENT_MEMCHECK = off_share(r"""
@MEMCHECK_LIB@
memcheck_copy || fail "copy the checker"
ncpu=$(nproc --all)
# This job on CPU 0 only: a checker on another vCPU then runs without a
# context switch (no CR3 write, so its vCPU's TLB entries stay).
taskset -pc 0 $$ >/dev/null
for k in $(seq 0 $((ncpu - 1))); do
    memcheck_run $k @PAGES@ /tmp/memcheck-$k.log &
    eval "mc_$k=$!"
done
ohca_poll 120 eval '[ "$(cat /tmp/memcheck-*.log 2>/dev/null | grep -c running)" -ge $ncpu ]' ||
    fail "the checkers did not start"
kload=
if [ @KLOAD@ = 1 ]; then
    # on every vCPU (this job's shell is pinned to CPU 0)
    taskset -c 0-$((ncpu - 1)) sh -c 'while :; do
        dd if=/dev/zero of=/tmp/kload bs=64k count=64 2>/dev/null; rm -f /tmp/kload; done' &
    kload="$!"
    taskset -c 0-$((ncpu - 1)) ping -f -s 1400 "$OHCA_PEER_IP" >/dev/null 2>&1 &
    kload="$kload $!"
fi
sleep 5
rc=0
for i in $(seq 1 @N@); do
    before=$(memcheck_stale)
    mark ready-$i
    umount /share || fail "cannot unmount the share"
    # The host migrates this VM now.
    remount_after migrated-$i
    # Every checker sweeps its pages several times after the resume.
    sleep 5
    for k in $(seq 0 $((ncpu - 1))); do
        eval "kill -0 \$mc_$k" 2>/dev/null || { echo "FAIL: checker $k ended"; rc=1; }
    done
    echo "MEMCHECK_MIGRATION $i stale pages $(($(memcheck_stale) - before)); $(tail -qn 1 /tmp/memcheck-*.log | tr '\n' ' ')"
    bugs=$(kernel_bugs)
    [ -z "$bugs" ] || { echo "KERNEL after migration $i: $bugs"; rc=1; }
done
for k in $(seq 0 $((ncpu - 1))); do eval "kill -TERM \$mc_$k"; done
if [ -n "$kload" ]; then
    kill $kload
    echo "MEMCHECK_KLOAD icmp echo requests sent $(awk '/^Icmp:/ { n++; for (i = 2; i <= NF; i++) if (n == 1 && $i == "OutEchos") c = i; else if (n == 2 && i == c) print $i }' /proc/net/snmp)"
fi
wait
grep -h '^STALE' /tmp/memcheck-*.log | head -n 20
grep -h '^MEMCHECK' /tmp/memcheck-*.log
echo "MEMCHECK_TOTAL stale $(memcheck_stale)"
[ "$(memcheck_stale)" = 0 ] || rc=1
""")

SERVER_MEMCHECK = r"""
ohca_wait_host memcheck-done 7200
"""


@pytest.mark.skipif(not MEMCHECK, reason="a diagnosis: OHCA_MIG_MEMCHECK=1")
def test_guest_memory_across_migrations(vm_cluster):
    nic = os.environ.get("OHCA_MIG_MEMCHECK_NIC", "ohca")
    c = vm_cluster(nvms=2, nic=nic, migratable=True, mem="1G",
                   smp=int(os.environ.get("OHCA_MIG_SMP", "2")),
                   extra_files=memcheck_files())
    script = fill(CLIENT_MEMCHECK, migrations=MIGRATIONS).replace(
        "@KLOAD@", "1" if MEMCHECK_KLOAD else "0")
    c.start({0: script, 1: SERVER_MEMCHECK})
    vm0, vm1 = c[0], c[1]
    try:
        for i in range(1, MIGRATIONS + 1):
            vm0.wait_mark(f"ready-{i}", timeout=900)
            f = vm0.migrate()
            vm0.post(f"migrated-{i}")
            print(f"migration {i}/{MIGRATIONS}: downtime {f['downtime_ms']} ms, total "
                  f"{f['total_ms']} ms, {f['ram_mb']:.0f} MiB sent", flush=True)
    finally:
        vm1.post("memcheck-done")
    results = c.wait(900)
    out = results[0].output
    print("\n".join(line for line in out.splitlines()
                    if line.startswith(("MEMCHECK", "STALE", "KERNEL"))))
    assert_ok(results)
    assert re.search(r"^MEMCHECK_TOTAL stale 0$", out, re.M), results[0].report()

# Live migration on an InfiniBand fabric (issue 26, item 4): two VMs with
# link-layer=ib on one ohca-switch (the migratable cluster's switch ports
# are datagram socket pairs, which the source and destination QEMU share;
# the switch process stays). opensm runs in vm0, the VM that migrates.
# vm0 migrates OHCA_MIGRATIONS times (make test-fabric: once; make
# migration-test MIG_IB=1: 20), each time in the middle of its own
# ohca_rc_integrity connection by LID through the switch (addresses
# exchanged over IPoIB; every completion and byte checked on both ends).
# Checked after each migration: vm0's LID the same and its port ACTIVE;
# opensm's view: it still runs, is the master SM on vm0's LID, and its SA
# gives the subnet's LIDs of before the first migration; IPoIB to vm1 (the
# switch's forwarding still reaches vm0). At the end the switch's ports: no
# overrun, no bad link packet, no bad frame, no datagram dropped.
#
# QEMU announces a migrated VM's MAC after the load with RARP frames, 5 by
# default (announce-rounds; an Ethernet frame on every NIC, whatever its link
# layer): on an InfiniBand link they are 60 bytes of garbage, which the
# switch counted as bad_frames (5 a migration, docs/migration.md). An
# InfiniBand port has no MAC to announce: the VMs run with announce-rounds=0.
IB_ANNOUNCE_OFF = ["-global", "migration.announce-rounds=0"]

CLIENT_IB = off_share(r"""
fail() { echo "FAIL: $*"; cat /tmp/cli.log 2>/dev/null; tail -n 30 /tmp/opensm.log; exit 1; }
port_lid() { cat /sys/class/infiniband/$OHCA_IBDEV/ports/1/lid; }
# The SA's view: every LID its NodeRecords give (the switch's and both hosts').
# (rdma-core prints a NodeRecord's LID in hex or in decimal by release)
sa_lids() { saquery NR 2>/dev/null | sed -n 's/^[[:space:]]*lid\.*\(0x[0-9a-fA-F]*\|[0-9]*\)$/\1/p' | sort -u | tr '\n' ' '; }
# The master SM's LID (sminfo prints it in decimal), or nothing.
sm_lid() { sminfo 2>/dev/null | sed -n 's/^sminfo: sm lid \([0-9]*\) .*SMINFO_MASTER.*$/\1/p'; }
opensm -B -f /tmp/opensm.log
ohca_wait_port ACTIVE 300 || fail "port not ACTIVE"
lid0=$(port_lid)
echo "LID_BEFORE $lid0"
modprobe ib_ipoib
ohca_poll 30 test -e /sys/class/net/ib0 || fail "no ib0"
ip addr add "$OHCA_IP/$OHCA_PREFIX" dev ib0
ip link set ib0 up
ohca_retry 120 ping -c 1 -W 2 "$OHCA_PEER_IP" >/dev/null || fail "no IPoIB to the peer"
ohca_retry 60 eval '[ "$(sm_lid)" = $((lid0)) ]' || fail "opensm is not the master SM on LID $lid0: $(sminfo 2>&1)"
view0=$(sa_lids)
echo "SA_LIDS_BEFORE $view0"
# opensm's own errors so far (its start: the port's LID taken again while
# the SM sweeps for the first time, and the like)
errs0=$(grep -c ' ERR ' /tmp/opensm.log)
[ -n "$view0" ] || fail "no LIDs from the SA: $(saquery NR 2>&1 | head -n 5)"
rc=0
for i in $(seq 1 @N@); do
    ohca_wait_host go-$i 600 || fail "server $i never listened"
    /tmp/ohca_rc_integrity -d "$OHCA_IBDEV" -g 0 -n @ITERS@ -p @PORT@ -t 300 -T @QPT@ \
        "$OHCA_PEER_IP" >/tmp/cli.log 2>&1 &
    cli=$!
    ohca_poll 120 eval '[ "$(progress)" -ge 2 ]' || fail "no traffic: $(tail -n 3 /tmp/cli.log)"
    kill -0 $cli 2>/dev/null || fail "connection $i ended before its migration"
    before=$(progress)
    mark ready-$i
    umount /share || fail "cannot unmount the share"
    # The host migrates this VM now.
    remount_after migrated-$i
    kill -0 $cli 2>/dev/null && mid=yes || mid=no
    echo "migration $i: progress lines before $before, after $(progress), client still running: $mid"
    wait $cli || rc=1
    cat /tmp/cli.log
    [ $mid = yes ] || { echo "FAIL: migration $i did not fall in the traffic"; rc=1; }
    lid=$(port_lid)
    state=$(ohca_port_state)
    sm=$(sm_lid)
    view=$(sa_lids)
    echo "MIGRATION_IB $i lid $lid state $state sm_lid ${sm:-none} sa_lids $view"
    [ "$lid" = "$lid0" ] || { echo "FAIL: migration $i: the LID was $lid0, is $lid"; rc=1; }
    [ "$state" = ACTIVE ] || { echo "FAIL: migration $i: the port is $state"; rc=1; }
    pgrep -x opensm >/dev/null || { echo "FAIL: opensm ended after migration $i"; rc=1; }
    [ "$sm" = $((lid0)) ] || { echo "FAIL: migration $i: no master SM on LID $lid0: $(sminfo 2>&1)"; rc=1; }
    [ "$view" = "$view0" ] || { echo "FAIL: migration $i: the SA's LIDs were $view0, are $view"; rc=1; }
    ohca_retry 60 ping -c 1 -W 2 "$OHCA_PEER_IP" >/dev/null ||
        { echo "FAIL: no IPoIB to the peer after migration $i"; rc=1; }
    [ $rc = 0 ] || exit $rc
done
echo "LID_AFTER $(port_lid)"
echo "STATE_AFTER $(ohca_port_state)"
echo "opensm: $errs0 ERR line(s) in its log before the first migration, $(grep -c ' ERR ' /tmp/opensm.log) at the end"
grep ' ERR ' /tmp/opensm.log | tail -n +$((errs0 + 1)) | head -n 10
ibstat "$OHCA_IBDEV" | grep -E 'State|Base lid'
# (IPoIB to vm1 after every migration, above; vm1 runs until this end has
# checked)
echo "IPOIB_AFTER_OK"
mark ib-checked
""")

SERVER_IB = r"""
fail() { echo "FAIL: $*"; cat /tmp/srv.log 2>/dev/null; exit 1; }
ohca_wait_port ACTIVE 330 || fail "port not ACTIVE"
modprobe ib_ipoib
ohca_poll 30 test -e /sys/class/net/ib0 || fail "no ib0"
ip addr add "$OHCA_IP/$OHCA_PREFIX" dev ib0
ip link set ib0 up
for i in $(seq 1 @N@); do
    /share/ohca_rc_integrity -d "$OHCA_IBDEV" -g 0 -p @PORT@ -t 300 -T @QPT@ >/tmp/srv.log 2>&1 &
    srv=$!
    ohca_poll 60 eval 'ss -Hltn "sport = :@PORT@" | grep -q .' || fail "server $i not listening"
    ohca_mark listening-$i
    wait $srv
    rc=$?
    cat /tmp/srv.log
    [ $rc = 0 ] || exit $rc
done
echo "PEER_LID $(cat /sys/class/infiniband/$OHCA_IBDEV/ports/1/lid)"
# After the migrations: vm0 through the switch.
if ohca_retry 60 ping -c 1 -W 2 "$OHCA_PEER_IP" >/dev/null && ping -c 3 -W 5 "$OHCA_PEER_IP"; then
    echo "IPOIB_AFTER_OK"
else
    exit 1
fi
# vm0 checks its port, opensm and IPoIB to this VM after the last connection.
ohca_wait_host ib-checked 600
"""


# About 6.5 minutes a migration under TCG (two boots, opensm's sweep, IPoIB,
# 2000 iterations by LID): in make test-fabric (OHCA_IB_FABRIC_FULL=1) and
# make migration-test MIG_IB=1, not in make test.
@pytest.mark.skipif(os.environ.get("OHCA_IB_FABRIC_FULL", "0") != "1",
                    reason="make test-fabric (OHCA_IB_FABRIC_FULL=1) runs it")
def test_live_migration_on_infiniband_switch(vm_cluster):
    from test_infiniband import _device_has_ib
    if not _device_has_ib():
        pytest.skip("this QEMU's ohca device has no link-layer property (no InfiniBand port)")
    t0 = time.monotonic()
    c = vm_cluster(nvms=2, wire="switch", link_layer="ib", migratable=True, smp=1, mem="1G",
                   extra_args=IB_ANNOUNCE_OFF)
    c.start({0: fill(CLIENT_IB, LIVE_ITERS, MIGRATIONS), 1: fill(SERVER_IB, LIVE_ITERS, MIGRATIONS)})
    vm0, vm1 = c[0], c[1]
    figures = []
    try:
        for i in range(1, MIGRATIONS + 1):
            vm1.wait_mark(f"listening-{i}", timeout=900)
            vm0.post(f"go-{i}")
            vm0.wait_mark(f"ready-{i}", timeout=600)
            f = vm0.migrate()
            vm0.post(f"migrated-{i}")
            figures.append(f)
            print(f"ib migration {i}/{MIGRATIONS}: downtime {f['downtime_ms']} ms (the destination "
                  f"ran {f['resume_ms']} ms after the source completed), total {f['total_ms']} ms, "
                  f"{f['ram_mb']:.0f} MiB sent, started after {f['attempts']} attempt(s)", flush=True)
        vm0.wait_mark("ib-checked", timeout=900)
        vm1.post("ib-checked")
    except HarnessError as e:
        raise HarnessError(f"{e}\n{guest_logs(c)}") from None
    results = c.wait(900)
    out0, out1 = results[0].output, results[1].output
    sums = SUMMARY.findall(out0 + out1)
    passed = sum(1 for r, role, _, _ in sums if r == "PASS" and role == "client")
    failed = sum(1 for r, _, _, _ in sums if r == "FAIL")
    verified = sum(int(b) for r, _, b, _ in sums if r == "PASS")
    lids = re.findall(r"^MIGRATION_IB (\d+) lid (\S+) state (\S+) sm_lid (\S+)", out0, re.M)
    for line in re.findall(r"^(?:MIGRATION_IB|SA_LIDS_BEFORE|LID_BEFORE|PEER_LID|opensm:) .*$",
                           out0 + "\n" + out1, re.M):
        print(line)
    stats = results[0].wire_stats
    print("switch statistics:", stats)
    ports = [switch_port_stats(stats, vm) for vm in (0, 1)]
    for vm, p in enumerate(ports):
        print(f"vm{vm}'s switch port: bad_frames {p['bad_frames']}, hoq_discards "
              f"{p['hoq_discards']}, credit_waits {p['credit_waits']}, overruns {p['overruns']}")
    print(f"test {time.monotonic() - t0:.0f} s")
    print(f"migrations {passed}/{MIGRATIONS} passed, cq errors {failed}, bytes verified "
          f"{verified}, max downtime {max(f['downtime_ms'] for f in figures)} ms")
    if not (all(r.ok for r in results) and passed == MIGRATIONS and failed == 0):
        print(guest_logs(c))
    assert_ok(results)
    assert passed == MIGRATIONS and failed == 0, results[0].report() + results[1].report()
    # by LID through the switch
    assert re.search(r"client: by LID, \d+ -> \d+", out0), results[0].report()
    # the LID the same after every migration (sysfs shows it in hex)
    before = re.search(r"^LID_BEFORE (0x[0-9a-f]+|\d+)$", out0, re.M)
    assert before and int(before.group(1), 0) > 0, results[0].report()
    assert len(lids) == MIGRATIONS, results[0].report()
    for i, lid, state, sm in lids:
        assert int(lid, 0) == int(before.group(1), 0) and state == "ACTIVE", (i, lid, state)
        assert sm != "none" and int(sm) == int(before.group(1), 0), (i, sm)
    assert re.search(r"^STATE_AFTER ACTIVE$", out0, re.M), results[0].report()
    for r in results:
        assert "IPOIB_AFTER_OK" in r.output, r.report()
    # No packet sent beyond the credit given, no bad link packet or frame
    # (QEMU's RARP announcements are off: IB_ANNOUNCE_OFF), every datagram
    # whole.
    for p in ports:
        assert p["overruns"] == 0 and p["bad_link_packets"] == 0 and p["bad_frames"] == 0, p
        assert p["state"] == 4, p  # Active
    assert all(d["oversize"] == 0 and d["unsent"] == 0 for d in stats["datagram_ports"]), stats


def test_gap_causes_from_traces(tmp_path):
    """migration_gaps without a VM: traces and the programs' accounts made
    up for one stop, read four ways: the gap ends with the peer's timeout
    long after the resume (the device's); the same timeout undone (the
    answers were late: the peer's); a host stall longer than the rest; a
    gap over before the stop. And the stop's own gap found in the list."""
    src, dst, peer = 11, 12, 13

    def line(pid, t, name, args):
        return f"{pid}@{int(t)}.{round((t % 1) * 1e6):06d}:{name} {args}\n"
    (tmp_path / f"trace-{src}.log").write_text(
        line(src, 100.0, "ohca_vm_running", "the VM runs 0 (a stop, ...)"))
    (tmp_path / f"trace-{dst}.log").write_text(
        line(dst, 100.3, "ohca_vm_running", "the VM runs 1 (a stop, ...)"))
    (tmp_path / f"trace-{peer}.log").write_text(
        line(peer, 100.05, "ohca_rc", "RC QP 0x7 wait event 0 reason 0 rto_us 40000 late_us 0")
        + line(peer, 100.15, "ohca_rc", "RC QP 0x7 wait event 1 reason 1 rto_us 640000 late_us 2000")
        + line(peer, 101.45, "ohca_rc", "RC QP 0x7 wait event 1 reason 3 rto_us 1074000 late_us 0")
        + line(peer, 101.45, "ohca_rc", "RC QP 0x9 wait event 0 reason 0 rto_us 1 late_us 0"))
    names = {src: "vm0", dst: "vm0", peer: "vm1"}
    traces = migration_gaps.read_traces(str(tmp_path), names)
    assert len(traces["vm1"]["rc"]) == 4 and traces["vm1"]["rc"][1][3] == 1
    stop = migration_gaps.stop_window(traces["vm0"]["run"], src, dst)
    assert stop == (100.0, 100.3)
    out1 = ("server: qp 7 psn 0x1 <-> peer qp 8 psn 0x2, mtu 1024\n"
            "server: that gap from -2100 to -500 ms after SIGUSR1, 0 ms of it in TCP syncs, "
            "longest between two CQ polls 3 ms, ended by completion of SEND WR 1/2 len 8\n"
            "server: a gap from -2900 to -2700 ms after SIGUSR1, 0 ms of it ...\n"
            "server: a gap from -2100 to -500 ms after SIGUSR1, 0 ms of it ...\n"
            "ohca_rc_integrity: PASS role=server x\n")
    srv, qps = migration_gaps.server_gap(migration_gaps.conn_chunks(out1, "server")[0])
    assert qps == (7, 8) and srv[:4] == (-2100, -500, 0, 3)
    # the signal at 102.0: the listed gap at the stop is the second
    chunk = migration_gaps.conn_chunks(out1, "server")[0]
    assert migration_gaps.stop_gap(chunk, 102.0, stop) == 1600
    assert migration_gaps.stop_gap(chunk, 99.0, stop) is None
    events = {"vm1": [e for e in traces["vm1"]["rc"] if e[1] == 7], "vm0": []}
    text = migration_gaps.explain(1, (99.9, 101.5), stop, events, srv, None, 300)
    assert "gap 1600 ms" in text and "100 ms before the stop + 300 standing still + 1200" in text
    assert "Cause: device waited 1150 ms after the resume (vm1's RC: timeout, frto" in text, text
    # undone after it: the peer's answers were late, not lost
    undone = line(peer, 101.46, "ohca_rc", "RC QP 0x7 wait event 4 reason 0 rto_us 1 late_us 0")
    with open(tmp_path / f"trace-{peer}.log", "a") as f:
        f.write(undone)
    traces = migration_gaps.read_traces(str(tmp_path), names)
    events = {"vm1": [e for e in traces["vm1"]["rc"] if e[1] == 7], "vm0": []}
    text = migration_gaps.explain(2, (99.9, 101.5), stop, events, srv, None, 300)
    assert "Cause: the peer late 1200 ms after the resume" in text, text
    # a host stall longer than the rest; a gap over before the stop
    text = migration_gaps.explain(3, (99.9, 101.5), stop, events, srv[:3] + (1400,) + srv[4:],
                                  None, 300)
    assert "Cause: host stall 1400 ms (vm1 did not poll)" in text, text
    text = migration_gaps.explain(4, (98.0, 99.5), stop, events, srv, None, 300)
    assert "Cause: not the stop: a wait 1500 ms before it" in text, text
