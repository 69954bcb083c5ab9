"""RC through a faulty wire between two VMs (tests/wire/ohca_wire between
the two dgram netdevs): ohca_rc_integrity checks every byte and completion
at 1 %, 5 % and 10 % loss of RoCE frames, with duplication, reordering and delay, and
with 3 % corruption (dropped by the ICRC check); the device's hw counters
(/sys/class/infiniband/ohca0/ports/1/hw_counters) must show the recovery.
GID index 1 is the port's RoCEv2 GID for its IPv4 address."""

import re

import pytest

from vmtest import assert_ok

pytestmark = [pytest.mark.ohca_only, pytest.mark.fault_wire]

ITERS = 12

SERVER = r"""
ohca_barrier up || exit 1
timeout 300 /share/ohca_rc_integrity -d "$OHCA_IBDEV" -g 1 -p 18700 -t 240 > /tmp/srv.log 2>&1
rc=$?
tail -n 5 /tmp/srv.log
{counters}
exit $rc
"""

CLIENT = r"""
ohca_barrier up || exit 1
ohca_retry 30 timeout 300 /share/ohca_rc_integrity -d "$OHCA_IBDEV" -g 1 -p 18700 -t 240 \
	-n {iters} -s {seed} "$OHCA_PEER_IP" > /tmp/cli.log 2>&1
rc=$?
tail -n 5 /tmp/cli.log
{counters}
exit $rc
"""

COUNTERS = r"""
for f in /sys/class/infiniband/$OHCA_IBDEV/ports/1/hw_counters/*; do
	echo "COUNTER $(basename "$f") $(cat "$f")"
done
"""

# Faults, and iterations of ohca_rc_integrity: at 1 % a longer run, so that
# frames are certainly lost (a 12-iteration run with seed 1 lost none). Not
# 20 %: there retry_cnt 7 (the most IBTA allows) ends about one run in 330
# in RETRY_EXC_ERR however right the device is (eight lost tries of an
# iteration's last packet and its ACK in a row; docs/wire.md, measured with
# the engine's LossyTrafficTest, which covers 20 % with that floor allowed).
CASES = {
    "loss1": ({"loss": 0.01}, 4 * ITERS),
    "loss5": ({"loss": 0.05}, ITERS),
    "loss10": ({"loss": 0.10}, ITERS),
    "dup_reorder": ({"dup": 0.03, "reorder": 0.03, "delay": 0.02, "delay_us": 3000}, ITERS),
    "corrupt": ({"corrupt": 0.03}, ITERS),
}


def counters(output):
    return {m[1]: int(m[2]) for m in re.finditer(r"^COUNTER (\w+) (\d+)$", output, re.M)}


@pytest.mark.parametrize("case", list(CASES))
def test_rc_integrity_through_faults(vm_run, case):
    faults, iters = CASES[case]
    faults = dict(faults, seed=1)
    # the cases share two VMs (the pool restarts the wire with each case's
    # faults); the driver's reload between them zeroes the hw counters
    server, client = vm_run({0: SERVER.replace("{counters}", COUNTERS),
                             1: CLIENT.replace("{counters}", COUNTERS)
                                      .replace("{iters}", str(iters)).replace("{seed}", "7")},
                            nvms=2, wire=faults, timeout=600)
    wire = server.wire_stats
    print(f"{case}: wire {wire}")
    assert_ok([server, client])
    assert re.search(r"ohca_rc_integrity: PASS role=client .*iterations=%d/" % iters,
                     client.output), client.report()
    assert re.search(r"ohca_rc_integrity: PASS role=server", server.output), server.report()
    cs, cc = counters(server.output), counters(client.output)
    assert "rc_retrans_pkts" in cs and "roce_icrc_errors" in cc, server.report()
    total = {k: cs.get(k, 0) + cc.get(k, 0) for k in set(cs) | set(cc)}
    print(f"{case}: counters (both VMs) {dict(sorted(total.items()))}")
    assert wire is not None
    made = {k: wire["a_to_b"][k] + wire["b_to_a"][k] for k in wire["a_to_b"]}
    assert total["roce_tx_pkts"] > 0 and total["roce_rx_pkts"] > 0
    # Why the requesters waited (QUERY_STATS' rc_tail_probes, rc_timeouts_*,
    # rc_credit_*; docs/wire.md): every one reaches the guest, and each
    # rc_timeouts_* is a part of rc_local_ack_timeouts.
    waits = ["rc_tail_probes", "rc_timeouts_full", "rc_timeouts_no_rtt", "rc_timeouts_after_probe",
             "rc_timeouts_read", "rc_credit_timeouts", "rc_credit_probes"]
    for c in (cs, cc):
        assert all(k in c for k in waits), sorted(c)
        assert all(c[k] <= c["rc_local_ack_timeouts"] for k in waits if k.startswith("rc_timeouts_")), c
    print(f"{case}: waits (server, client) " + ", ".join(f"{k} {cs[k]} {cc[k]}" for k in waits))
    if made["dropped"]:
        assert total["rc_retrans_pkts"] > 0, (made, total)
        assert total["rc_local_ack_timeouts"] + total["rc_seq_naks_rcvd"] + total["rc_tail_probes"] > 0, total
    if made["corrupted"]:
        assert total["roce_icrc_errors"] > 0, (made, total)
    if made["duplicated"]:
        assert total["rc_dup_requests"] + total["rc_stale_responses"] > 0, (made, total)
    if case.startswith("loss") or case == "corrupt":
        assert made["dropped"] + made["corrupted"] > 0, made  # the faults happened
    if case == "dup_reorder":
        assert made["duplicated"] > 0 and made["reordered"] > 0, made
    assert total["rc_retry_exceeded"] == 0 and total["rc_error_naks_sent"] == 0, total
