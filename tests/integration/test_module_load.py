"""The driver's two modules load and unload cleanly, 20 times in one VM;
and the RDMA driver (ohca_ib) comes and goes while the Ethernet port of
ohca_core keeps working."""

import re

import pytest

from vmtest import assert_ok

CYCLES = 20

# The job does the loading itself (preamble off): core modules and the
# provider once, then insmod/rmmod of ohca_core.ko and ohca_ib.ko CYCLES
# times.
SCRIPT = r"""
fail() { echo "FAIL: $*"; dmesg | tail -n 30; exit 1; }
ohca_load_core || fail "RDMA core modules"
ohca_install_provider || fail "provider"
for i in $(seq 1 @CYCLES@); do
    ohca_insmod || fail "cycle $i: insmod"
    ohca_poll 20 test -e /sys/class/infiniband/ohca0 || fail "cycle $i: /sys/class/infiniband/ohca0 missing after insmod"
    ohca_poll 20 test -e /sys/class/net/eth0 || fail "cycle $i: no net device eth0 after insmod"
    ibv_devices | grep -qw ohca0 || fail "cycle $i: ibv_devices does not list ohca0: $(ibv_devices 2>&1)"
    ohca_rmmod || fail "cycle $i: rmmod"
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


# Pings to the user-mode network's gateway during the RDMA driver's
# removal, 5 per second, and how many of them may go unanswered: the
# removal touches no Ethernet ring, a lost reply or two is slirp under TCG.
SPLIT_PINGS = 50
SPLIT_MAX_LOST = 3

# The module split (kernel/README.md): ohca_core alone is an Ethernet NIC
# with no RDMA device; ohca_ib then adds ohca0 on the running netdev (RC
# pingpong through it); rmmod ohca_ib while a ping runs over the netdev
# leaves the link up and the ping answered; ohca_ib loaded again works.
# On the user-mode network the gateway answers. Paired with an idle VM
# (debug-smoke, OHCA_VM_POOL_PAIR: $OHCA_PEER_IP set) nobody does: there
# the pings go to the peer's address through a permanent neighbour entry,
# so every echo request is a frame, and the frames the port sent are
# counted instead of the replies.
SPLIT = r"""
fail() { echo "FAIL: $*"; cat /tmp/ping.log /tmp/srv.log 2>/dev/null; dmesg | tail -n 40; exit 1; }
gw=${OHCA_PEER_IP:-10.77.0.254}
tx_packets() { cat /sys/class/net/$OHCA_IFACE/statistics/tx_packets; }
# eth_ok N: N pings of the gateway answered, or N frames sent to the idle peer
eth_ok() {
    if [ -z "$OHCA_PEER_IP" ]; then
        ping -c "$1" -W 2 $gw >/dev/null
    else
        local tx0=$(tx_packets)
        ping -c "$1" -W 1 $gw >/dev/null
        [ $(($(tx_packets) - tx0)) -ge "$1" ]
    fi
}
pingpong() {
    timeout 120 ibv_rc_pingpong -d ohca0 -g 1 -n 200 >/tmp/srv.log 2>&1 &
    srv=$!
    ohca_retry 20 ibv_rc_pingpong -d ohca0 -g 1 -n 200 127.0.0.1 || fail "$1: pingpong client"
    wait $srv || fail "$1: pingpong server"
    echo "$1: pingpong ok"
}
ohca_load_core || fail "RDMA core modules"
ohca_install_provider || fail "provider"

ohca_insmod_core || fail "insmod ohca_core"
ohca_net_up || fail "net up"
ohca_wait_carrier 1 30 || fail "carrier with ohca_core only"
[ -z "$OHCA_PEER_IP" ] || ip neigh replace $gw lladdr 02:00:00:00:00:fe dev $OHCA_IFACE nud permanent ||
    fail "neighbour entry for the idle peer"
ls /sys/bus/auxiliary/devices | grep -q '^ohca_core\.rdma\.[0-9]' || fail "no auxiliary device: $(ls /sys/bus/auxiliary/devices)"
[ -z "$(ls /sys/class/infiniband 2>/dev/null)" ] || fail "an RDMA device without ohca_ib: $(ls /sys/class/infiniband)"
eth_ok 3 || fail "ping with ohca_core only"
echo "core only: eth ok, no ib device"

ohca_insmod_ib || fail "insmod ohca_ib"
ohca_wait_port ACTIVE 60 || fail "port with ohca_ib"
readlink -f /sys/class/infiniband/ohca0/device | grep -q "$(basename "$(readlink -f /sys/class/net/$OHCA_IFACE/device)")" || fail "ohca0 is not on the netdev's PCI function"
pingpong "first load"

tx0=$(tx_packets)
ping -i 0.2 -W 2 -c @PINGS@ $gw >/tmp/ping.log 2>&1 &
ping=$!
sleep 2
rmmod ohca_ib || fail "rmmod ohca_ib under ping"
[ ! -e /sys/class/infiniband/ohca0 ] || fail "ohca0 still there after rmmod ohca_ib"
grep -q '^ohca_core ' /proc/modules || fail "ohca_core went with ohca_ib"
[ "$(ohca_carrier)" = 1 ] || fail "carrier lost with the RDMA driver"
echo "rmmod ohca_ib: done while pinging"
wait $ping
if [ -z "$OHCA_PEER_IP" ]; then
    rx=$(sed -n 's/.* \([0-9]*\) received.*/\1/p' /tmp/ping.log)
else
    rx=$(($(tx_packets) - tx0))
fi
echo "ping across rmmod ohca_ib: ${rx:-0} of @PINGS@ answered (sent, to an idle peer)"
[ "${rx:-0}" -ge $((@PINGS@ - @MAXLOST@)) ] || fail "more than @MAXLOST@ pings lost across rmmod ohca_ib"
eth_ok 3 || fail "ping after rmmod ohca_ib"

ohca_insmod_ib || fail "insmod ohca_ib again"
ohca_wait_port ACTIVE 60 || fail "port after reloading ohca_ib"
pingpong "reload"
eth_ok 3 || fail "ping after reloading ohca_ib"
ohca_rmmod || fail "rmmod ohca_ib ohca_core"
echo "SPLIT OK"
""".replace("@PINGS@", str(SPLIT_PINGS)).replace("@MAXLOST@", str(SPLIT_MAX_LOST))


@pytest.mark.ohca_only
def test_rdma_driver_reload_keeps_ethernet(vm_run):
    (r,) = vm_run(SPLIT, preamble=False, timeout=600)
    assert_ok([r])
    assert "SPLIT OK" in r.output, r.report()
    assert "core only: eth ok, no ib device" in r.output, r.report()
    assert r.output.count("pingpong ok") == 2, r.report()
    m = re.search(r"ping across rmmod ohca_ib: (\d+) of", r.output)
    assert m and int(m.group(1)) >= SPLIT_PINGS - SPLIT_MAX_LOST, r.report()
