"""The soak (issue 13): mixed RC traffic from several process pairs between
two VMs through the fault wire at 1 % loss, clients killed with SIGKILL at
random and started again, for OHCA_SOAK_SECONDS (60 in `make test`, an hour
in `make soak`). It runs in the VMs of test_rc_faults.py's cases.

Every pair loops ohca_rc_integrity (every byte and completion checked on
both ends): vm0 runs the servers, vm1 the clients and a killer that takes
out one client every few seconds. The run passes when no end ever saw
wrong data or a wrong completion (a killed client's server fails on its
own, which is expected), every client that was not killed passed, each
pair completed runs, and (in runs of 10 minutes or more) vm0's QEMU kept
its own resident memory flat over the second half (vmtest.qemu_own_rss:
without the guest's RAM and TCG's code buffer)."""

import os
import re

import pytest

from vmtest import watch_qemu_rss
from vmtest import assert_ok

pytestmark = [pytest.mark.ohca_only, pytest.mark.fault_wire]

SECONDS = int(os.environ.get("OHCA_SOAK_SECONDS", "60"))
# QEMU's memory is compared from half-way through the run to its end, and
# bounded only in runs of 10 minutes and more: every new guest process
# (ASLR) has TCG translate its code again and grow its tables in QEMU's
# heap until the code buffer fills and is flushed, 30-40 MiB in the first
# minute (measured 2026-12-02; 72 MiB over the second half of a 60 s run
# on 2026-12-04, which is why a minute's run cannot be held to the bound),
# while the device itself keeps about 100 bytes per connection made and
# torn down (HostBoundsLifecycleTest).
WARM = SECONDS // 2
CHECK_RSS = SECONDS >= 600
PAIRS = 3
KILL_EVERY = 10  # seconds between two kills on vm1
RSS_BOUND = 64 << 20  # bytes vm0's QEMU may grow over the second half

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
    with watch_qemu_rss(["soak-warm", "soak-done"]) as rss:
        server, client = vm_run([script(), script()], nvms=2, wire={"loss": 0.01, "seed": 5},
                                timeout=SECONDS + 900)
    assert_ok([server, client])
    wire = server.wire_stats
    served, sent = runs(server.output, "server"), runs(client.output, "client")
    kills = len(re.findall(r"^KILLED client", client.output, re.M))
    passed = [r for r in sent if r[2] == 0]
    rss0, rss1 = rss.get("soak-warm"), rss.get("soak-done")
    print(f"\nsoak {SECONDS} s: {len(sent)} client runs, {len(passed)} passed, "
          f"{kills} kills, {len(served)} server runs; wire {wire}; vm0 QEMU RSS "
          + (f"{rss0 >> 20} -> {rss1 >> 20} MiB" if rss0 and rss1 else "not sampled"))
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
    assert rss0 and rss1, rss
    if CHECK_RSS:
        assert rss1 - rss0 < RSS_BOUND, (rss0, rss1)
