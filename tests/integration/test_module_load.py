"""ohca.ko loads and unloads cleanly, 20 times in one VM."""

import pytest

from vmtest import assert_ok

CYCLES = 20

# The job does the loading itself (preamble off): core modules and the
# provider once, then insmod/rmmod of ohca.ko CYCLES times.
SCRIPT = r"""
fail() { echo "FAIL: $*"; dmesg | tail -n 30; exit 1; }
ohca_load_core || fail "RDMA core modules"
ohca_install_provider || fail "provider"
for i in $(seq 1 @CYCLES@); do
    insmod /share/ohca.ko || fail "cycle $i: insmod"
    ohca_poll 20 test -e /sys/class/infiniband/ohca0 || fail "cycle $i: /sys/class/infiniband/ohca0 missing after insmod"
    ohca_poll 20 test -e /sys/class/net/eth0 || fail "cycle $i: no net device eth0 after insmod"
    ibv_devices | grep -qw ohca0 || fail "cycle $i: ibv_devices does not list ohca0: $(ibv_devices 2>&1)"
    rmmod ohca || fail "cycle $i: rmmod"
    [ ! -e /sys/class/infiniband/ohca0 ] || fail "cycle $i: /sys/class/infiniband/ohca0 still there after rmmod"
    [ ! -e /sys/class/net/eth0 ] || fail "cycle $i: eth0 still there after rmmod"
    ! ibv_devices 2>/dev/null | grep -qw ohca0 || fail "cycle $i: ibv_devices still lists ohca0"
    ! grep -qw '^ohca' /proc/modules || fail "cycle $i: ohca still in /proc/modules"
    echo "cycle $i ok"
done
echo "ALL CYCLES OK"
""".replace("@CYCLES@", str(CYCLES))


@pytest.mark.ohca_only
def test_load_unload_cycles(vm_run):
    (r,) = vm_run(SCRIPT, preamble=False, timeout=600)
    assert_ok([r])
    assert "ALL CYCLES OK" in r.output
    assert r.output.count(" ok\n") == CYCLES
