"""DCQCN's driver interfaces (docs/congestion.md) in a VM: mlx5's hw
counters on port 1, the cc_params debugfs files (read, write, a value
outside its range refused and nothing changed) and the per-priority
switches in /sys/class/net/<if>/ecn/roce_{rp,np}/enable/<prio>, which are
the bits of rp_enable_mask / np_enable_mask; then RC traffic over the
loopback GID still works with DCQCN on, and the driver unloads cleanly.
The rate machine itself is the engine's unit tests' (dcqcn_test.cpp)."""

import pytest

from vmtest import assert_ok

SCRIPT = r"""
fail() { echo "FAIL: $*"; exit 1; }
hw=/sys/class/infiniband/$OHCA_IBDEV/ports/1/hw_counters
for c in np_ecn_marked_roce_packets np_cnp_sent rp_cnp_handled rp_cnp_ignored; do
	[ "$(cat $hw/$c)" = 0 ] || fail "hw counter $c: $(cat $hw/$c 2>&1)"
done
d=$(ls -d /sys/kernel/debug/ohca/0000:*/cc_params | head -n 1)
[ -d "$d" ] || fail "no cc_params in debugfs"
[ "$(ls $d | wc -l)" = 21 ] || fail "cc_params has $(ls $d | wc -l) files: $(ls $d)"
[ "$(cat $d/rp_ai_rate)" = 5 ] || fail "rp_ai_rate default $(cat $d/rp_ai_rate)"
[ "$(cat $d/rp_time_reset)" = 300 ] || fail "rp_time_reset default $(cat $d/rp_time_reset)"
[ "$(cat $d/np_cnp_dscp)" = 48 ] || fail "np_cnp_dscp default $(cat $d/np_cnp_dscp)"
echo 10 >$d/rp_ai_rate || fail "rp_ai_rate not writable"
[ "$(cat $d/rp_ai_rate)" = 10 ] || fail "rp_ai_rate after write: $(cat $d/rp_ai_rate)"
! echo 70000 >$d/rp_ai_rate 2>/dev/null || fail "rp_ai_rate 70000 accepted"
[ "$(cat $d/rp_ai_rate)" = 10 ] || fail "a refused value changed rp_ai_rate: $(cat $d/rp_ai_rate)"
! echo 16 >$d/rp_gd 2>/dev/null || fail "rp_gd 16 accepted"
e=/sys/class/net/$OHCA_IFACE/ecn
for p in 0 3 7; do  # RP off, NP on by default
	[ "$(cat $e/roce_rp/enable/$p)" = 0 ] || fail "roce_rp/enable/$p: $(cat $e/roce_rp/enable/$p 2>&1)"
	[ "$(cat $e/roce_np/enable/$p)" = 1 ] || fail "roce_np/enable/$p: $(cat $e/roce_np/enable/$p 2>&1)"
done
[ "$(cat $d/rp_enable_mask)" = 0 ] || fail "rp_enable_mask default $(cat $d/rp_enable_mask)"
echo 1 >$e/roce_rp/enable/5 && [ "$(cat $d/rp_enable_mask)" = 32 ] || fail "rp_enable_mask after enabling priority 5: $(cat $d/rp_enable_mask)"
echo 0 >$e/roce_np/enable/3 || fail "roce_np/enable/3 not writable"
[ "$(cat $d/np_enable_mask)" = 247 ] || fail "np_enable_mask after clearing priority 3: $(cat $d/np_enable_mask)"
[ "$(cat $e/roce_np/enable/3)" = 0 ] || fail "roce_np/enable/3 after write"
echo 1 >$e/roce_np/enable/3 && [ "$(cat $d/np_enable_mask)" = 255 ] || fail "np_enable_mask back: $(cat $d/np_enable_mask)"
! echo maybe >$e/roce_rp/enable/0 2>/dev/null || fail "roce_rp/enable/0 took 'maybe'"
echo 255 >$d/rp_enable_mask && [ "$(cat $e/roce_rp/enable/2)" = 1 ] || fail "rp_enable_mask 255 not seen in sysfs"
echo "=== traffic with the RP on ==="
ibv_rc_pingpong -d $OHCA_IBDEV -g $(ohca_gid_index) -n 200 -s 4096 >/tmp/srv.log 2>&1 &
ohca_poll 30 eval 'ss -Hltn "sport = :18515" | grep -q .' || fail "ibv_rc_pingpong server not listening"
ibv_rc_pingpong -d $OHCA_IBDEV -g $(ohca_gid_index) -n 200 -s 4096 127.0.0.1 >/tmp/cli.log 2>&1 \
	|| fail "ibv_rc_pingpong: $(cat /tmp/cli.log /tmp/srv.log)"
wait || fail "ibv_rc_pingpong server: $(cat /tmp/srv.log)"
ohca_hw_counters
[ "$(cat $hw/rp_cnp_ignored)" = 0 ] || fail "CNPs without congestion"
ohca_rmmod || fail "rmmod"
echo "DCQCN IFACES OK"
"""


@pytest.mark.ohca_only
def test_dcqcn_driver_interfaces(vm_run):
    (r,) = vm_run(SCRIPT, timeout=400)
    assert_ok([r])
    assert "DCQCN IFACES OK" in r.output
