"""Snapshots of a VM with ohca in the middle of RC traffic (issue 26,
docs/migration.md): vm0 runs ohca_rc_integrity (every completion and byte
checked) against vm1; in the middle of it both VMs are stopped, vm0 is
saved (savevm) and loaded again (loadvm) -- its device state through the
engine's stream (ohca_engine_save/load) -- and both go on. The traffic must
end with PASS on both sides.

The 9p share blocks migration while the guest has it mounted, so vm0's job
moves its output and the program to /tmp, unmounts the share around the
snapshot and mounts it again afterwards. Both VMs are stopped while vm0 is
saved and loaded, so the peer's ACK timers (on its virtual clock) do not
run out meanwhile."""

import os
import re
import time

import pytest

from vmtest import assert_ok
from harness.common import HarnessError

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
OFF_SHARE = r"""
fail() { echo "FAIL: $*"; exit 1; }
cp /share/env.sh /share/ohca-lib.sh /share/ohca_rc_integrity /tmp/ || fail "copy"
cat >/tmp/phase2.sh <<'PHASE2'
. /tmp/env.sh
. /tmp/ohca-lib.sh
fail() { echo "FAIL: $*"; cat /tmp/cli.log 2>/dev/null; exit 1; }
remount() { mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 share /share; }
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
cat /tmp/job.log >>/share/output.log
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
# Some traffic before the snapshot: two progress lines (100 iterations).
ohca_poll 120 eval '[ "$(progress)" -ge 2 ]' || fail "no traffic: $(tail -n 3 /tmp/cli.log)"
kill -0 $cli 2>/dev/null || fail "the client ended before the snapshot"
echo "before the snapshot: $(progress) progress lines"
ohca_mark traffic
umount /share || fail "cannot unmount the share"
echo "share unmounted"
# The host saves and loads this VM now (the guest's clock stops meanwhile).
remount_after snapshot-done
echo "share mounted again"
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


def fill(script, iters=ITERS, migrations=0):
    s = (script.replace("@GID@", str(GID)).replace("@ITERS@", str(iters))
         .replace("@PORT@", str(PORT)).replace("@N@", str(migrations)))
    for k in range(3):
        s = s.replace(f"@EXTRA{k}@", str(PORT + 1 + k))
    return s


def hmp(vm, cmd, timeout=300):
    return vm.qmp.execute("human-monitor-command", timeout=timeout, **{"command-line": cmd})


def test_snapshot_round_trip_during_rc_traffic(vm_cluster):
    c = vm_cluster(nvms=2)
    c.start({0: fill(CLIENT), 1: fill(SERVER)})
    vm0, vm1 = c[0], c[1]
    vm1.wait_mark("listening", timeout=600)
    vm0.post("go")
    vm0.wait_mark("traffic", timeout=300)
    # Until the guest has unmounted the share, savevm is refused (9p's
    # migration blocker); then both stop, vm0 is saved and loaded.
    deadline = time.monotonic() + 60
    attempts = 0
    while True:
        attempts += 1
        vm1.qmp.execute("stop")
        vm0.qmp.execute("stop")
        out = hmp(vm0, "savevm ohca-snap")
        if not out.strip():
            break
        vm0.qmp.execute("cont")
        vm1.qmp.execute("cont")
        if time.monotonic() > deadline:
            raise HarnessError(f"savevm refused: {out}")
        time.sleep(0.5)
    t = time.monotonic()
    out = hmp(vm0, "loadvm ohca-snap")
    assert not out.strip(), f"loadvm: {out}"
    load_s = time.monotonic() - t
    vm0.qmp.execute("cont")
    vm1.qmp.execute("cont")
    vm0.post("snapshot-done")
    results = c.wait(900)
    assert_ok(results)
    for r in results:
        assert "ohca_rc_integrity: PASS" in r.output, r.report()
    # The snapshot fell in the middle of the traffic: the client had not
    # gone far before it (a progress line every 50 iterations).
    m = re.search(r"^before the snapshot: (\d+) progress lines", results[0].output, re.M)
    assert m and int(m.group(1)) < ITERS // 50 // 2, results[0].report()
    print(f"savevm after {attempts} attempt(s), loadvm took {load_s:.1f} s")


# Live migration (docs/migration.md): vm0 moves to a new QEMU process
# OHCA_MIGRATIONS times (1 in make test, 20 in make migration-test), each
# time in the middle of its own ohca_rc_integrity connection to vm1 (every
# completion and byte checked on both ends), on the two-VM dgram wire.
MIGRATIONS = int(os.environ.get("OHCA_MIGRATIONS", "1"))
LIVE_ITERS = 2000

CLIENT_LIVE = off_share(r"""
rc=0
# Beside the byte-checking connections, for the whole run: rping through
# rdma_cm (data verified, a new connection every 200 pings), ib_write_bw
# (RC WRITEs at full speed) and ib_send_bw over UD, each checked alive and
# making progress after every migration.
ohca_wait_host extra-go 300 || fail "the peer's servers never started"
(while [ ! -e /tmp/stop ]; do
    rping -c -a "$OHCA_PEER_IP" -p @EXTRA0@ -C 200 -S 4096 -V >/tmp/rping.last 2>&1 ||
        { cat /tmp/rping.last; echo "rping: FAIL"; exit 1; }
    echo "rping: 200 pings verified"
done) >/tmp/rping.log 2>&1 &
rping=$!
ib_write_bw -d "$OHCA_IBDEV" -x @GID@ -p @EXTRA1@ -s 65536 -D 2 --run_infinitely "$OHCA_PEER_IP" \
    >/tmp/wbw.log 2>&1 &
wbw=$!
ib_send_bw -c UD -d "$OHCA_IBDEV" -x @GID@ -p @EXTRA2@ -s 1024 -D 2 --run_infinitely "$OHCA_PEER_IP" \
    >/tmp/ud.log 2>&1 &
ud=$!
# The job is alive and its log grows within a minute.
grows() {
    local log=$2 lines
    lines=$(wc -l <"$log")
    kill -0 "$1" 2>/dev/null || return 1
    ohca_poll 60 eval '[ "$(wc -l <"$log")" -gt "$lines" ]'
}
extra_ok() {
    grows $rping /tmp/rping.log || { echo "FAIL: rping stalled or failed after $1"; return 1; }
    grows $wbw /tmp/wbw.log || { echo "FAIL: ib_write_bw stalled or failed after $1"; return 1; }
    grows $ud /tmp/ud.log || { echo "FAIL: ib_send_bw UD stalled or failed after $1"; return 1; }
}
extra_ok "the start" || rc=1
for i in $(seq 1 @N@); do
    [ $rc = 0 ] || break
    ohca_wait_host go-$i 300 || fail "server $i never listened"
    /tmp/ohca_rc_integrity -d "$OHCA_IBDEV" -g @GID@ -n @ITERS@ -p @PORT@ -t 300 \
        "$OHCA_PEER_IP" >/tmp/cli.log 2>&1 &
    cli=$!
    ohca_poll 120 eval '[ "$(progress)" -ge 2 ]' || fail "no traffic: $(tail -n 3 /tmp/cli.log)"
    kill -0 $cli 2>/dev/null || fail "connection $i ended before its migration"
    before=$(progress)
    ohca_mark ready-$i
    umount /share || fail "cannot unmount the share"
    # The host migrates this VM now.
    remount_after migrated-$i
    kill -0 $cli 2>/dev/null && mid=yes || mid=no
    echo "migration $i: progress lines before $before, after $(progress), client still running: $mid"
    extra_ok "migration $i" || rc=1
    wait $cli || rc=1
    cat /tmp/cli.log
    [ $mid = yes ] || { echo "FAIL: migration $i did not fall in the traffic"; rc=1; }
done
# Both ends look at their logs before either stops its programs (a stopped
# peer is an error to the other).
touch /tmp/stop
wait $rping || { echo "FAIL: rping"; rc=1; }
kill -0 $wbw && kill -0 $ud || { echo "FAIL: a perftest client ended early"; rc=1; }
echo "rping: $(grep -c verified /tmp/rping.log) runs of 200 pings verified"
echo "ib_write_bw: $(grep -c '^ *65536 ' /tmp/wbw.log) reports; last: $(grep '^ *65536 ' /tmp/wbw.log | tail -n 1)"
echo "ib_send_bw UD: $(grep -c '^ *1024 ' /tmp/ud.log) reports; last: $(grep '^ *1024 ' /tmp/ud.log | tail -n 1)"
ohca_mark extra-checked
ohca_wait_host servers-stopped 300
kill $wbw $ud 2>/dev/null
""")

SERVER_LIVE = r"""
rping -s -a "$OHCA_IP" -p @EXTRA0@ -P >/tmp/rping-srv.log 2>&1 &
rping=$!
ib_write_bw -d "$OHCA_IBDEV" -x @GID@ -p @EXTRA1@ -s 65536 -D 2 --run_infinitely >/tmp/wbw-srv.log 2>&1 &
wbw=$!
ib_send_bw -c UD -d "$OHCA_IBDEV" -x @GID@ -p @EXTRA2@ -s 1024 -D 2 --run_infinitely >/tmp/ud-srv.log 2>&1 &
ud=$!
ohca_poll 60 eval 'ss -Hltn "sport = :@EXTRA1@" | grep -q . && ss -Hltn "sport = :@EXTRA2@" | grep -q .' ||
    { echo "FAIL: the perftest servers are not listening"; exit 1; }
ohca_mark extra-listening
for i in $(seq 1 @N@); do
    /share/ohca_rc_integrity -d "$OHCA_IBDEV" -g @GID@ -p @PORT@ -t 300 >/tmp/srv.log 2>&1 &
    srv=$!
    ohca_poll 60 eval 'ss -Hltn "sport = :@PORT@" | grep -q .' ||
        { echo "FAIL: server $i not listening"; cat /tmp/srv.log; exit 1; }
    ohca_mark listening-$i
    wait $srv
    rc=$?
    cat /tmp/srv.log
    [ $rc = 0 ] || exit $rc
done
ohca_wait_host extra-checked 1200 || exit 1
rc=0
for j in rping wbw ud; do
    kill -0 ${!j} 2>/dev/null || { echo "FAIL: the $j server ended early"; rc=1; }
done
kill $rping $wbw $ud 2>/dev/null
cat /tmp/rping-srv.log /tmp/wbw-srv.log /tmp/ud-srv.log
ohca_mark servers-stopped
exit $rc
"""

SUMMARY = re.compile(r"^ohca_rc_integrity: (PASS|FAIL) role=(\w+) .*? bytes=(\d+) .*?"
                     r"max_gap_ms=(\d+)", re.M)


def test_live_migration_during_rc_traffic(vm_cluster):
    c = vm_cluster(nvms=2, migratable=True, smp=int(os.environ.get("OHCA_MIG_SMP", "1")))
    c.start({i: fill(s, LIVE_ITERS, MIGRATIONS) for i, s in enumerate((CLIENT_LIVE, SERVER_LIVE))})
    vm0, vm1 = c[0], c[1]
    vm1.wait_mark("extra-listening", timeout=600)
    vm0.post("extra-go")
    figures = []
    for i in range(1, MIGRATIONS + 1):
        vm1.wait_mark(f"listening-{i}", timeout=600)
        vm0.post(f"go-{i}")
        vm0.wait_mark(f"ready-{i}", timeout=300)
        f = vm0.migrate()
        vm0.post(f"migrated-{i}")
        figures.append(f)
        print(f"migration {i}/{MIGRATIONS}: downtime {f['downtime_ms']} ms, total "
              f"{f['total_ms']} ms, {f['ram_mb']:.0f} MiB sent, started after "
              f"{f['attempts']} attempt(s)", flush=True)
    vm0.wait_mark("extra-checked", timeout=900)
    vm1.post("extra-checked")
    vm1.wait_mark("servers-stopped", timeout=300)
    vm0.post("servers-stopped")
    results = c.wait(900)
    sums = SUMMARY.findall(results[0].output + results[1].output)
    passed = sum(1 for r, role, _, _ in sums if r == "PASS" and role == "client")
    failed = sum(1 for r, _, _, _ in sums if r == "FAIL")
    verified = sum(int(b) for r, _, b, _ in sums if r == "PASS")
    # What the peer saw: its longest wait for a completion (the RC timeout
    # of ohca_rc_integrity's QPs, 14, is 67 ms).
    gap = max((int(g) for r, role, _, g in sums if role == "server"), default=-1)
    print(f"migrations {passed}/{MIGRATIONS} passed, cq errors {failed}, bytes verified "
          f"{verified}, max downtime {max(f['downtime_ms'] for f in figures)} ms, "
          f"max peer gap {gap} ms")
    assert_ok(results)
    assert passed == MIGRATIONS and failed == 0, results[0].report()
