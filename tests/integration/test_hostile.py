"""The hostile guest (ohca_hostile, a device test: qemu-device/tests/hostile/,
one file per area): with ohca_core unbound, the guest maps BAR0/BAR2 through
sysfs and drives the device directly with adversarial register writes,
malformed commands, page lists, WQEs and
doorbells, DMA addresses outside RAM or on the device's own BARs, EQ
full, QPs up to max_qp (65536, with QEMU's own memory sampled around
them), bus mastering off and a reset in the middle of commands. Every
case checks the documented reaction (status and syndrome, FATAL code,
counted and ignored write, error completion) and prints PASS/FAIL. Then
the driver binds again and RC traffic (ibv_rc_pingpong over loopback, and
ohca_rc_loopback) works. QEMU must neither crash nor hang; on the ASan
build (tests/asan/run.sh) any sanitizer report fails the test."""

import os
import re

import pytest

from vmtest import assert_ok, watch_qemu_rss

pytestmark = pytest.mark.ohca_only

# the program and its table of cases; the cases are in one file per area
HOSTILE_SRC = os.path.join(os.path.dirname(__file__), "..", "..", "qemu-device", "tests",
                           "hostile", "hostile.c")


def hostile_cases():
    """The case names of ohca_hostile's cases[] table: every one must run
    and pass (a case deleted from the table shows in the diff, not here)."""
    with open(HOSTILE_SRC) as f:
        src = f.read()
    table = re.search(r"^static const struct hcase cases\[\] = \{(.*?)^\};", src, re.M | re.S)
    assert table, "no cases[] table in " + HOSTILE_SRC
    return set(re.findall(r'^\s*\{ "(\w+)"', table.group(1), re.M))


# QEMU's own memory after max_qp QPs: the idle QP's bound, 1 KiB, times
# 65536 (measured 35 MiB: docs/results.md); ASan's redzones, shadow and
# quarantine (tests/asan) triple it
QP_RSS_BOUND = (192 if os.environ.get("OHCA_QEMU_VARIANT") == "asan" else 64) << 20

SCRIPT = r"""
fail() { echo "FAIL: $*"; exit 1; }
pci=$(basename "$(readlink -f /sys/class/infiniband/$OHCA_IBDEV/device)")
[ -n "$pci" ] || fail "no PCI function behind $OHCA_IBDEV"
echo "=== hostile ==="
# QPs up to max_qp alone first, between marks for the host's memory samples
ohca_mark qps-start
/share/ohca_hostile -s 7 qp_exhaustion
qprc=$?
ohca_mark qps-done
/share/ohca_hostile -s 7 $(/share/ohca_hostile -l | grep -vx qp_exhaustion)
rc=$?
[ $qprc -eq 0 ] || rc=1
echo "HOSTILE_EXIT $rc"
echo "=== rebind ==="
# ohca_hostile unbound the driver; bind it again on the reset device.
echo "$pci" >/sys/bus/pci/drivers/ohca_core/bind || fail "bind $pci"
# the driver's net_device is new: bring it up with its address again (GID
# 1); the port follows the net_device's state, as on a RoCE NIC
ohca_net_up || fail "eth0 after rebind"
ohca_wait_port ACTIVE 60 || fail "port not ACTIVE after rebind"
gid1=/sys/class/infiniband/$OHCA_IBDEV/ports/1/gids/1
ohca_poll 30 eval '[ "$(cat $gid1)" != 0000:0000:0000:0000:0000:0000:0000:0000 ]' ||
	fail "GID 1 not set after rebind"
ibv_rc_pingpong -d "$OHCA_IBDEV" -g 1 -n 50 >/tmp/srv.log 2>&1 &
srv=$!
ohca_retry 20 ibv_rc_pingpong -d "$OHCA_IBDEV" -g 1 -n 50 127.0.0.1 || fail "pingpong client"
wait $srv || fail "pingpong server: $(cat /tmp/srv.log)"
/share/ohca_rc_loopback -n 3 -E 1 | tail -n 1
echo "REBIND OK"
exit $rc
"""


def test_hostile_guest(vm_run):
    # fresh VM: the job drives the device around the driver
    with watch_qemu_rss(["qps-start", "qps-done"]) as rss:
        (r,) = vm_run(SCRIPT, timeout=900, fresh=True)
    print("\n" + r.output)
    rss0, rss1 = rss.get("qps-start"), rss.get("qps-done")
    if rss0 and rss1:
        print(f"QEMU RSS around qp_exhaustion: {rss0 >> 20} -> {rss1 >> 20} MiB")
    assert_ok([r])
    passed = re.findall(r"^PASS (\S+)$", r.output, re.M)
    # every QP the device offers, 64 Ki, with QEMU's memory bounded
    assert re.search(r"^qp_exhaustion: 65536 QPs of max_qp 65536", r.output, re.M), r.report()
    assert "qp_exhaustion" in passed, r.report()
    assert rss0 and rss1, rss
    assert rss1 - rss0 < QP_RSS_BOUND, (rss0, rss1)
    cases = hostile_cases()
    assert len(cases) >= 118, len(cases)
    assert set(passed) == cases, (sorted(cases - set(passed)), r.report())
    # device memory: its commands, the limit, and BAR2's window
    assert {"dm_fields", "dm_exhaustion", "dm_window"} <= set(passed), r.report()
    # raw Ethernet: CREATE_FLOW's fields and limit, frames of bad lengths
    assert {"raw_flow_fields", "raw_flow_exhaustion", "raw_frame_short", "raw_frame_long",
            "raw_wqe_bad"} <= set(passed), r.report()
    # receive WQs and RSS: every limit, destroy order, WQ doorbells
    assert "rss_exhaustion" in passed, r.report()
    # on-demand paging: ODP_MAP/ODP_UNMAP's fields and chunk limit, faults
    assert {"odp_fields", "odp_exhaustion", "odp_fault", "odp_fault_fail"} <= set(passed), \
        r.report()
    # completion event moderation: MODIFY_CQ's fields, held events on a
    # destroyed CQ, released by the period, across a reset
    assert "cq_moderation" in passed, r.report()
    assert not re.search(r"^FAIL", r.output, re.M), r.report()
    runs = re.findall(r"^ohca_hostile: (\d+) passed, (\d+) failed", r.output, re.M)
    assert len(runs) == 2 and sum(int(p) for p, _ in runs) == len(passed), r.report()
    assert all(f == "0" for _, f in runs), r.report()
    assert "REBIND OK" in r.output, r.report()
    assert "ohca_rc_loopback: OK" in r.output, r.report()
