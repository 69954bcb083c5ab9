"""The soak (issue 13): mixed RC traffic from several process pairs between
two VMs through the fault wire at 1 % loss, clients killed with SIGKILL at
random and started again, for OHCA_SOAK_SECONDS (60 in `make test`, an hour
in `make soak`). It runs in the VMs of test_rc_faults.py's cases.

Every pair loops ohca_rc_integrity (every byte and completion checked on
both ends): vm0 runs the servers, vm1 the clients and a killer that takes
out one client every few seconds. The run passes when no end ever saw
wrong data or a wrong completion (a killed client's server fails on its
own, which is expected), every client that was not killed passed, each
pair completed runs, and the device's own memory (vm0's engine heap, the
x-engine-heap property: not the guest's RAM, not TCG's tables) grew by
less than HEAP_BOUND over the second half of the run, in every run.
vm0's QEMU resident memory is printed beside it."""

import os
import re

import pytest

from vmtest import watch_qemu_rss
from vmtest import assert_ok

pytestmark = [pytest.mark.ohca_only, pytest.mark.fault_wire]

SECONDS = int(os.environ.get("OHCA_SOAK_SECONDS", "60"))
# The device's heap is compared from half-way through the run to its end:
# by then every QP, CQ and backlog buffer the pairs use has been made once,
# and a connection made and torn down leaves about 100 bytes
# (HostBoundsLifecycleTest). QEMU's resident memory is no bound: TCG grows
# its tables in QEMU's heap by 30-70 MiB a minute as new guest processes
# run (measured 2026-12-02 and 2026-12-04), whatever the device does.
WARM = SECONDS // 2
HEAP_BOUND = 1 << 20  # bytes vm0's device may grow over the second half
PAIRS = 3
KILL_EVERY = 10  # seconds between two kills on vm1

SCRIPT = r"""
ohca_barrier up || exit 1
end=$((SECONDS + @SECONDS@))
run() {	# run ROLE PAIR N ARGS...: one ohca_rc_integrity, its summary line
	local role=$1 k=$2 n=$3 rc
	shift 3
	timeout 300 /share/ohca_rc_integrity -d "$OHCA_IBDEV" -g 1 -p $((19100 + k)) -t 60 "$@" \
		>/tmp/soak-$role-$k-$n.log 2>&1 &
	echo $! >/tmp/soak-$role-$k.pid
	wait $!
	rc=$?
	echo "RUN $role $k $n rc=$rc $(tail -n 1 /tmp/soak-$role-$k-$n.log)"
	return $rc
}
if [ "$OHCA_VM_INDEX" = 0 ]; then
	for k in $(seq 1 @PAIRS@); do
		(n=0; while [ ! -e /tmp/soak.stop ]; do n=$((n + 1)); run server $k $n; done) &
	done
	sleep @WARM@
	ohca_mark soak-warm
	ohca_barrier soak-end $((@SECONDS@ + 600))
	touch /tmp/soak.stop
	pkill -f /share/ohca_rc_integrity
	wait
	ohca_mark soak-done
else
	for k in $(seq 1 @PAIRS@); do
		(n=0
		 while [ $SECONDS -lt $end ]; do
			n=$((n + 1))
			run client $k $n -n 4 -s $((k * 1000 + n)) "$OHCA_PEER_IP"
			# 2: no server listening yet (its previous run still ending)
			[ $? -eq 2 ] && sleep 1
		 done) &
	done
	(while [ $SECONDS -lt $end ]; do
		sleep @KILL_EVERY@
		k=$((RANDOM % @PAIRS@ + 1))
		# the pair's running client, a child of its timeout
		pkill -9 -P "$(cat /tmp/soak-client-$k.pid)" && echo "KILLED client $k"
	 done) &
	wait
	ohca_barrier soak-end 600
fi
echo "=== corruption ==="
# what ohca_rc_integrity reports for wrong data or completions (a vanished
# peer shows up as a timeout, a TCP error or an error status instead)
grep -h -e "bytes differ" -e "lost, duplicated or reordered" -e "extra completion" -e ", expected " \
	/tmp/soak-*.log | sed 's/^/CORRUPT: /'
echo "=== end ==="
ohca_hw_counters
"""


def script():
    return (SCRIPT.replace("@SECONDS@", str(SECONDS)).replace("@PAIRS@", str(PAIRS))
            .replace("@WARM@", str(WARM))
            .replace("@KILL_EVERY@", str(KILL_EVERY)))


def runs(output, role):
    """[(pair, n, rc, summary)] of one VM's runs."""
    return [(int(m[1]), int(m[2]), int(m[3]), m[4]) for m in
            re.finditer(rf"^RUN {role} (\d+) (\d+) rc=(\d+) (.*)$", output, re.M)]


def test_soak_through_loss_with_kills(vm_run):
    with watch_qemu_rss(["soak-warm", "soak-done"]) as mem:
        server, client = vm_run([script(), script()], nvms=2, wire={"loss": 0.01, "seed": 5},
                                timeout=SECONDS + 900)
    wire = server.wire_stats
    served, sent = runs(server.output, "server"), runs(client.output, "client")
    kills = len(re.findall(r"^KILLED client", client.output, re.M))
    passed = [r for r in sent if r[2] == 0]
    rss0, rss1 = mem.rss.get("soak-warm"), mem.rss.get("soak-done")
    heap0, heap1 = mem.heap.get("soak-warm"), mem.heap.get("soak-done")
    print(f"\nsoak {SECONDS} s: {len(sent)} client runs, {len(passed)} passed, "
          f"{kills} kills, {len(served)} server runs; wire {wire}; vm0 device heap "
          + (f"{heap0} -> {heap1} bytes" if heap0 and heap1 else "not sampled")
          + "; vm0 QEMU RSS "
          + (f"{rss0 >> 20} -> {rss1 >> 20} MiB" if rss0 and rss1 else "not sampled"))
    # the figures first: they are the run's record even when a check fails
    assert_ok([server, client])
    corrupt = [line for r in (server, client)
               for line in re.findall(r"^CORRUPT: .*$", r.output, re.M)]
    assert not corrupt, "\n".join(corrupt)
    # a client fails only when killed (137 = SIGKILL) or before a server
    # listens (2); any other outcome is a failure of the transport
    odd = [r for r in sent if r[2] not in (0, 2, 137)]
    assert not odd, odd
    assert len(passed) >= PAIRS, sent
    if SECONDS >= 4 * KILL_EVERY:
        assert kills > 0, client.report()
    assert wire and wire["a_to_b"]["dropped"] + wire["b_to_a"]["dropped"] > 0, wire
    assert heap0 and heap1, mem
    assert heap1 - heap0 < HEAP_BOUND, (heap0, heap1)
