"""The hostile guest (userspace/tests/ohca_hostile.c): with ohca_core unbound,
the guest maps BAR0/BAR2 through sysfs and drives the device directly with
adversarial register writes, malformed commands, page lists, WQEs and
doorbells, DMA addresses outside RAM or on the device's own BARs, EQ
overflow, bus mastering off and a reset in the middle of commands. Every
case checks the documented reaction (status and syndrome, FATAL code,
counted and ignored write, error completion) and prints PASS/FAIL. Then
the driver binds again and RC traffic (ibv_rc_pingpong over loopback, and
ohca_rc_loopback) works. QEMU must neither crash nor hang; on the ASan
build (tests/asan/run.sh) any sanitizer report fails the test."""

import re

import pytest

from vmtest import assert_ok

pytestmark = pytest.mark.ohca_only

MIN_CASES = 50

SCRIPT = r"""
fail() { echo "FAIL: $*"; exit 1; }
pci=$(basename "$(readlink -f /sys/class/infiniband/$OHCA_IBDEV/device)")
[ -n "$pci" ] || fail "no PCI function behind $OHCA_IBDEV"
echo "=== hostile ==="
/share/ohca_hostile -s 7
rc=$?
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
    (r,) = vm_run(SCRIPT, timeout=900, fresh=True)
    print("\n" + r.output)
    assert_ok([r])
    passed = re.findall(r"^PASS (\S+)$", r.output, re.M)
    assert len(passed) >= MIN_CASES, r.report()
    # device memory: its commands, the limit, and BAR2's window
    assert {"dm_fields", "dm_exhaustion", "dm_window"} <= set(passed), r.report()
    # raw Ethernet: CREATE_FLOW's fields and limit, frames of bad lengths
    assert {"raw_flow_fields", "raw_flow_exhaustion", "raw_frame_short", "raw_frame_long",
            "raw_wqe_bad"} <= set(passed), r.report()
    # on-demand paging: ODP_MAP/ODP_UNMAP's fields and chunk limit, faults
    assert {"odp_fields", "odp_exhaustion", "odp_fault", "odp_fault_fail"} <= set(passed), \
        r.report()
    # completion event moderation: MODIFY_CQ's fields, held events on a
    # destroyed CQ, released by the period, across a reset
    assert "cq_moderation" in passed, r.report()
    assert not re.search(r"^FAIL", r.output, re.M), r.report()
    assert f"ohca_hostile: {len(passed)} passed, 0 failed" in r.output
    assert "REBIND OK" in r.output, r.report()
    assert "ohca_rc_loopback: OK" in r.output, r.report()
