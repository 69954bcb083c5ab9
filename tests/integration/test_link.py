"""Link down/up through QMP set_link on the NIC's netdev: the guest sees
carrier (and, with ohca, the RDMA port state) follow, within a bounded wait,
and the kernel log stays clean.

The guest and the test take turns through marker files in the share
(ohca_mark / ohca_wait_host in the guest, VM.wait_mark / VM.post here)."""

from vmtest import assert_ok

CYCLES = 2
WAIT = 30  # seconds the guest allows for each transition

SCRIPT = r"""
fail() { echo "FAIL: $*"; exit 1; }
devstate() { ibv_devinfo -d ohca0 | sed -n 's/^[[:space:]]*state:[[:space:]]*//p'; }
for i in $(seq 1 @CYCLES@); do
    ohca_mark "ready-$i"
    ohca_wait_host "down-$i" 120 || fail "host never took the link down"
    ohca_wait_carrier 0 @WAIT@ || fail "cycle $i: carrier still $(ohca_carrier)"
    if [ "$OHCA_NIC" = ohca ]; then
        ohca_wait_port DOWN @WAIT@ || fail "cycle $i: port state $(ohca_port_state) after link down"
        [ "$(devstate)" = "PORT_DOWN (1)" ] || fail "cycle $i: ibv_devinfo state '$(devstate)'"
    fi
    echo "cycle $i: down seen"
    ohca_mark "down-seen-$i"
    ohca_wait_host "up-$i" 120 || fail "host never brought the link up"
    ohca_wait_carrier 1 @WAIT@ || fail "cycle $i: carrier still $(ohca_carrier)"
    if [ "$OHCA_NIC" = ohca ]; then
        ohca_wait_port ACTIVE @WAIT@ || fail "cycle $i: port state $(ohca_port_state) after link up"
        [ "$(devstate)" = "PORT_ACTIVE (4)" ] || fail "cycle $i: ibv_devinfo state '$(devstate)'"
    fi
    echo "cycle $i: up seen"
done
echo "LINK OK"
""".replace("@CYCLES@", str(CYCLES)).replace("@WAIT@", str(WAIT))


def test_link_down_up(vm_cluster):
    c = vm_cluster(nvms=1)
    c.start(SCRIPT)
    vm = c[0]
    for i in range(1, CYCLES + 1):
        vm.wait_mark(f"ready-{i}", timeout=300)
        vm.set_link(False)
        vm.post(f"down-{i}")
        vm.wait_mark(f"down-seen-{i}", timeout=120)
        vm.set_link(True)
        vm.post(f"up-{i}")
    (r,) = c.wait(120)
    assert_ok([r])
    assert "LINK OK" in r.output
