"""Link down/up through QMP set_link on the NIC's netdev: the guest sees
carrier (and, with ohca, the RDMA port state) follow, within a bounded wait,
and the kernel log stays clean. With ohca also: the port follows the
admin state and the MTU, honest capability flags, and byte queue limits.

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
if [ "$OHCA_NIC" = ohca ]; then
    # The RoCE port follows the interface's admin state, not only the wire.
    ip link set eth0 down
    ohca_wait_port DOWN @WAIT@ || fail "port state $(ohca_port_state) with eth0 down"
    [ "$(devstate)" = "PORT_DOWN (1)" ] || fail "ibv_devinfo state '$(devstate)' with eth0 down"
    ip link set eth0 up
    ohca_wait_carrier 1 @WAIT@ || fail "carrier $(ohca_carrier) after eth0 up"
    ohca_wait_port ACTIVE @WAIT@ || fail "port state $(ohca_port_state) after eth0 up"
    echo "admin down/up followed"
    # Path MTU from the netdev MTU with the largest RoCEv2 header stack
    # taken off (iboe_get_mtu: 96 bytes): 4176 leaves 4080, so 2048.
    mtu() { ibv_devinfo -d ohca0 | sed -n 's/^[[:space:]]*active_mtu:[[:space:]]*//p'; }
    ip link set eth0 mtu 4176 || fail "mtu 4176"
    [ "$(mtu)" = "2048 (4)" ] || fail "netdev MTU 4176: active_mtu '$(mtu)'"
    ip link set eth0 mtu 4192 || fail "mtu 4192"
    [ "$(mtu)" = "4096 (5)" ] || fail "netdev MTU 4192: active_mtu '$(mtu)'"
    ip link set eth0 mtu 1500
    echo "active_mtu follows the netdev MTU"
    # Honest capability flags: RNR NAKs, port events and fast registration.
    flags=$(ibv_devinfo -v -d ohca0 | sed -n '/device_cap_flags/,/max_sge/p')
    echo "$flags" | grep -qw RC_RNR_NAK_GEN || fail "device_cap_flags without RC_RNR_NAK_GEN: $flags"
    echo "$flags" | grep -qw PORT_ACTIVE_EVENT || fail "device_cap_flags without PORT_ACTIVE_EVENT: $flags"
    echo "$flags" | grep -qw MEM_MGT_EXTENSIONS || fail "device_cap_flags without MEM_MGT_EXTENSIONS: $flags"
    echo "device_cap_flags ok"
    # Byte queue limits: the driver reports what it queued and what the
    # device sent, so the stack's limit moves off 0 and nothing stays in
    # flight once the frames are out.
    bql=/sys/class/net/eth0/queues/tx-0/byte_queue_limits
    ping -b -q -c 200 -i 0.002 -w 20 "${OHCA_IP%.*}.255" >/dev/null 2>&1
    ohca_poll 10 test "$(cat $bql/inflight)" = 0 || fail "BQL: $(cat $bql/inflight) bytes in flight after the traffic"
    [ "$(cat $bql/limit)" -gt 0 ] || fail "BQL limit still $(cat $bql/limit): no BQL accounting"
    echo "BQL limit $(cat $bql/limit)"
fi
echo "LINK OK"
""".replace("@CYCLES@", str(CYCLES)).replace("@WAIT@", str(WAIT))


def test_link_down_up(vm_cluster, kernel_kind):
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
    # The VM powers off with the driver bound: .shutdown stops the device.
    # (With the debug kernel every job unloads ohca at its end for the
    # kmemleak check, so nothing is bound at power-off.)
    if c.nic == "ohca" and kernel_kind == "stock":
        assert "shutdown: device reset, DMA stopped" in r.console, r.console_tail(20)
