"""An InfiniBand port (issue 22): two VMs back to back on one stream wire,
each with `-device ohca,...,link-layer=ib`, in ONE job per VM (each part
would otherwise pay its own TCG boot). VM 0 runs the subnet manager.

- sm: opensm (Debian's, unmodified) in VM 0 sweeps the two-node fabric:
  both ports become ACTIVE with LIDs assigned.
- ibstat: both ports Active, link layer InfiniBand, a base LID.
- ipoib: ib_ipoib's ib0 on each VM (joins the broadcast group through
  the SA), the harness's addresses on it, ping both ways.
- diags (VM 0 and VM 1): the peer's LID by a directed-route PortInfo,
  then smpquery nodeinfo/portinfo by LID, sminfo, perfquery, and
  ibnetdiscover showing two CA nodes.
- rc_pingpong / ud_pingpong: ibv_rc_pingpong and ibv_ud_pingpong without
  -g (addressed by LID; the TCP exchange of the addresses over IPoIB).
- rping: rdma_cm over IB at the IPoIB addresses (ARP over IPoIB, the
  path record from opensm's SA), ten verified pings.
- tcp: a TCP transfer over IPoIB, its SHA-256 compared on both sides.
"""

import os
import re
import subprocess

import pytest

from vmtest import assert_ok, ohcavm, section

pytestmark = pytest.mark.ohca_only

TCP_MIB = 16

# Each part is a shell function; run() prints its section and result.
COMMON = r"""
run() {
	local name=$1
	echo "=== $name ==="
	( set -e; "part_$name" )
	local prc=$?
	echo "PART $name rc=$prc"
	[ $prc -eq 0 ] || rc=1
	return $prc
}

part_ibstat() {
	ibstat "$OHCA_IBDEV"
	ibv_devinfo -d "$OHCA_IBDEV" | grep -E 'link_layer|state|port_lid|sm_lid'
}

part_ipoib() {
	modprobe ib_ipoib
	ohca_poll 30 test -e /sys/class/net/ib0
	ip addr add "$OHCA_IP/$OHCA_PREFIX" dev ib0
	ip link set ib0 up
	ohca_barrier ipoib 180
	if ! ohca_retry 90 ping -c 1 -W 2 "$OHCA_PEER_IP" >/dev/null; then
		dmesg | grep -i ib0 | tail -n 5
		return 1
	fi
	ping -c 3 -W 5 "$OHCA_PEER_IP"
	cat /sys/class/net/ib0/mode
}

part_diags() {
	local peer
	# The peer's port through a directed route (out of port 1): no LID needed.
	peer=$(smpquery -D portinfo 0,1 1 | sed -n 's/^Lid:\.*\([0-9]*\)$/\1/p')
	echo "PEER_LID $peer"
	[ -n "$peer" ] && [ "$peer" -gt 0 ]
	smpquery nodeinfo "$peer"
	smpquery portinfo "$peer" 1
	sminfo
	perfquery "$peer" 1
	perfquery
	ibnetdiscover
}
"""

SM = r"""
part_sm() {
	opensm -B -f /tmp/opensm.log
	if ! ohca_wait_port ACTIVE 300; then
		tail -n 60 /tmp/opensm.log
		return 1
	fi
	grep -iE 'SUBNET UP|sweep' /tmp/opensm.log | tail -n 5 || true
}
"""

NOT_SM = r"""
part_sm() {
	ohca_wait_port ACTIVE 330
}
"""

SERVER = r"""
part_rc_pingpong() {
	ohca_barrier rc 120
	timeout 240 ibv_rc_pingpong -d "$OHCA_IBDEV" -s 4096 -n 200
}

part_ud_pingpong() {
	ohca_barrier ud 120
	timeout 240 ibv_ud_pingpong -d "$OHCA_IBDEV" -s 1024 -n 200
}

part_rping() {
	timeout 150 rping -s -a "$OHCA_IP" -C 10 -S 4096 -v > /tmp/rping.log 2>&1 &
	local srv=$!
	ohca_barrier rping 120
	wait $srv
	local src=$?
	tail -n 2 /tmp/rping.log
	return $src
}

part_tcp() {
	timeout 300 nc -l -p 5001 > /tmp/rx.bin &
	local srv=$!
	ohca_barrier tcp 120
	wait $srv
	echo "RX_BYTES $(stat -c %s /tmp/rx.bin)"
	echo "RX_SHA $(sha256sum < /tmp/rx.bin | cut -d' ' -f1)"
}
"""

CLIENT = r"""
part_rc_pingpong() {
	ohca_barrier rc 120
	ohca_retry 90 timeout 200 ibv_rc_pingpong -d "$OHCA_IBDEV" -s 4096 -n 200 "$OHCA_PEER_IP"
}

part_ud_pingpong() {
	ohca_barrier ud 120
	ohca_retry 90 timeout 200 ibv_ud_pingpong -d "$OHCA_IBDEV" -s 1024 -n 200 "$OHCA_PEER_IP"
}

part_rping() {
	ohca_barrier rping 120
	sleep 1
	ohca_retry 60 timeout 120 rping -c -a "$OHCA_PEER_IP" -C 10 -S 4096 -v
}

part_tcp() {
	head -c TCP_BYTES /dev/urandom > /tmp/tx.bin
	echo "TX_SHA $(sha256sum < /tmp/tx.bin | cut -d' ' -f1)"
	ohca_barrier tcp 120
	sleep 1
	ohca_retry 60 timeout 300 nc -N "$OHCA_PEER_IP" 5001 < /tmp/tx.bin
}
"""

PARTS = ("sm", "ibstat", "ipoib", "diags", "rc_pingpong", "ud_pingpong", "rping", "tcp")


def script(index):
    body = COMMON + (SM if index == 0 else NOT_SM) + (CLIENT if index == 0 else SERVER)
    body = body.replace("TCP_BYTES", str(TCP_MIB << 20))
    out = [body, "rc=0"]
    # ACTIVE first: nothing else works before the SM's sweep.
    out += ["run sm || { echo '=== end ==='; exit 1; }", "ohca_barrier active 360"]
    out += [f"run {p}" for p in PARTS[1:]]
    out += ["echo '=== end ==='", "ohca_hw_counters"]
    if index == 0:  # the SM's log with the job's files, for a failure's report
        out += ["cp /tmp/opensm.log /share/opensm.log 2>/dev/null || true"]
    out += ["exit $rc"]
    return "\n".join(out)


def _lid(text, key):
    m = re.search(rf"{key}:\s*(\d+)", text)
    return int(m.group(1)) if m else 0


def _device_has_ib():
    """Whether this QEMU's ohca device has the link-layer property (the
    device side of issue 22); the test is skipped, with that reason, on a
    device without it."""
    try:
        qemu = ohcavm.find_qemu("ohca")
        out = subprocess.run([qemu, "-device", "ohca,help"], capture_output=True,
                             text=True, timeout=60).stdout
    except (ohcavm.HarnessError, OSError, subprocess.TimeoutExpired):
        return True  # let the harness report what is missing
    return "link-layer" in out


def test_infiniband_back_to_back(vm_run):
    if not _device_has_ib():
        pytest.skip("this QEMU's ohca device has no link-layer property (no InfiniBand port)")
    results = vm_run({0: script(0), 1: script(1)}, nvms=2, wire="stream",
                     link_layer="ib", timeout=1800)
    a, b = results
    for r in results:
        failed = [p for p in PARTS if not re.search(rf"^PART {p} rc=0$", r.output, re.M)]
        assert not failed, f"{r.name}: parts failed: {failed}\n" + r.report()

    lids = []
    for r in results:
        ibstat = section(r.output, "ibstat")
        assert re.search(r"State: Active", ibstat), r.report()
        assert re.search(r"Physical state: LinkUp", ibstat), r.report()
        assert re.search(r"Link layer: InfiniBand", ibstat), r.report()
        lid = _lid(ibstat, "Base lid")
        assert lid > 0, r.report()
        lids.append(lid)
        assert _lid(ibstat, "SM lid") > 0, r.report()
        assert "link_layer:\t\tInfiniBand" in section(r.output, "ibstat"), r.report()
    assert lids[0] != lids[1], (lids, a.report())

    for r, peer in ((a, lids[1]), (b, lids[0])):
        diags = section(r.output, "diags")
        assert f"PEER_LID {peer}" in diags, r.report()
        assert re.search(r"^NodeType:\.+Channel Adapter", diags, re.M), r.report()
        assert re.search(r"^LinkState:\.+Active", diags, re.M), r.report()
        assert re.search(r"sminfo: sm lid \d+ sm guid 0x[0-9a-f]+", diags), r.report()
        assert re.search(r"^PortXmitData:\.+\d+", diags, re.M), r.report()
        # two CA nodes and nothing else (back to back: no switch)
        assert len(re.findall(r"^Ca\s", diags, re.M)) == 2, r.report()
        assert not re.search(r"^Switch\s", diags, re.M), r.report()
        assert "0% packet loss" in section(r.output, "ipoib"), r.report()

    # by LID: the pingpongs print the LIDs they used and no GID
    for r in results:
        rc = section(r.output, "rc_pingpong")
        assert re.search(r"local address:\s+LID 0x0*[1-9a-f][0-9a-f]*", rc), r.report()
        assert re.search(r"1638400 bytes in .* seconds", rc), r.report()
        ud = section(r.output, "ud_pingpong")
        assert re.search(r"409600 bytes in .* seconds", ud), r.report()

    # rdma_cm at the IPoIB address (the path from the SA): ten verified pings
    assert len(re.findall(r"ping data: ", section(a.output, "rping"))) >= 10, a.report()

    tx = re.search(r"^TX_SHA (\w+)$", a.output, re.M)
    rx = re.search(r"^RX_SHA (\w+)$", b.output, re.M)
    assert tx and rx and tx.group(1) == rx.group(1), (a.report(), b.report())
    assert f"RX_BYTES {TCP_MIB << 20}" in b.output, b.report()
    assert_ok(results)


# --------------------------------------------------------------------------
# Three VMs on the emulated InfiniBand switch (ohca-switch --mode ib, the
# harness's switch wire): opensm in VM 0 discovers the switch through
# directed-route SMPs, assigns LIDs to the switch and the three CAs,
# programs the switch's forwarding tables and takes every port to Active.
# Then IPoIB between every pair (the broadcast group's multicast through
# the switch's MFT), and a ring of LID-routed RC and UD pingpongs (VM i
# to VM i+1): three pairs at once, each switch port sending and receiving.
# In a line (two switches, VMs 0 and 1 on the first), opensm routes
# through both switches.

SWITCH_PARTS = ("sm", "ibstat", "ipoib", "diags", "rc_ring", "ud_ring")

SWITCH_JOB = r"""
part_ipoib() {
	local ip
	modprobe ib_ipoib
	ohca_poll 30 test -e /sys/class/net/ib0
	ip addr add "$OHCA_IP/$OHCA_PREFIX" dev ib0
	ip link set ib0 up
	ohca_barrier ipoib 180
	for ip in $OHCA_PEER_IPS; do
		if ! ohca_retry 90 ping -c 1 -W 2 "$ip" >/dev/null; then
			dmesg | grep -i ib0 | tail -n 5
			return 1
		fi
		ping -c 2 -W 5 "$ip" | grep -E 'packets transmitted'
		echo "IPOIB_OK $ip"
	done
}

part_diags() {
	sminfo
	ibnetdiscover
	perfquery
}

# ring: this VM serves VM i-1 and is a client of VM i+1, both at once
next_ip() { echo $OHCA_VM_IPS | cut -d' ' -f$(( (OHCA_VM_INDEX + 1) % OHCA_NUM_VMS + 1 )); }

ring() {	# ring TOOL PORT ARGS...
	local tool=$1 port=$2 srv cli src crc
	shift 2
	timeout 240 $tool -d "$OHCA_IBDEV" -p "$port" "$@" > /tmp/$tool.srv 2>&1 &
	srv=$!
	ohca_barrier "ring-$tool" 120
	sleep 1
	crc=0
	ohca_retry 90 timeout 200 $tool -d "$OHCA_IBDEV" -p "$port" "$@" "$(next_ip)" \
		> /tmp/$tool.cli 2>&1 || crc=$?
	src=0
	wait $srv || src=$?
	echo "--- client to $(next_ip) (rc=$crc)"; cat /tmp/$tool.cli
	echo "--- server (rc=$src)"; cat /tmp/$tool.srv
	[ $crc -eq 0 ] && [ $src -eq 0 ]
}

part_rc_ring() { ring ibv_rc_pingpong 18600 -s 4096 -n 200; }
part_ud_ring() { ring ibv_ud_pingpong 18700 -s 1024 -n 200; }
"""


def switch_script(index):
    body = COMMON + (SM if index == 0 else NOT_SM) + SWITCH_JOB
    keep_log = "cp /tmp/opensm.log /share/opensm.log 2>/dev/null || true" if index == 0 else "true"
    out = [body, "rc=0", f"run sm || {{ echo '=== end ==='; {keep_log}; exit 1; }}",
           "ohca_barrier active 360"]
    out += [f"run {p}" for p in SWITCH_PARTS[1:]]
    out += ["echo '=== end ==='", "ohca_hw_counters", keep_log, "exit $rc"]
    return "\n".join(out)


# topology: (the switch wire's options, switches ibnetdiscover must show)
IB_TOPOLOGIES = {
    "one_switch": ({"capture": True}, 1),
    "two_switches": ({"switches": 2, "split": 2}, 2),
}


# make test runs one_switch; the longer topologies run with
# OHCA_IB_FABRIC_FULL=1 (make test-fabric). Before 3846f44 and 693066e
# neither passed: opensm's first sweep sets a CA port's LID with PortState
# Down, which must retrain the port to Init keeping its LID (as a switch
# port does), and the switch took the device's flow control packets for
# its VLs 4-7 for bad ones (now counted apart, as ignored).
IB_FABRIC_FULL = os.environ.get("OHCA_IB_FABRIC_FULL", "0") == "1"


@pytest.mark.parametrize("topology", [
    t if t == "one_switch" else pytest.param(t, marks=pytest.mark.skipif(
        not IB_FABRIC_FULL, reason="make test-fabric (OHCA_IB_FABRIC_FULL=1) runs it"))
    for t in IB_TOPOLOGIES])
def test_infiniband_switch(vm_cluster, topology):
    if not _device_has_ib():
        pytest.skip("this QEMU's ohca device has no link-layer property (no InfiniBand port)")
    options, nswitches = IB_TOPOLOGIES[topology]
    nvms = 3
    c = vm_cluster(nvms=nvms, wire="switch", switch=options, link_layer="ib", smp=1, mem="768M")
    c.start({i: switch_script(i) for i in range(nvms)})
    results = c.wait(timeout=1500)
    stats = results[0].wire_stats
    print(f"{topology}: switch statistics:", stats)
    for r in results:
        failed = [p for p in SWITCH_PARTS if not re.search(rf"^PART {p} rc=0$", r.output, re.M)]
        assert not failed, f"{r.name}: parts failed: {failed}\n" + r.report()

    lids = []
    for r in results:
        ibstat = section(r.output, "ibstat")
        assert re.search(r"State: Active", ibstat), r.report()
        assert re.search(r"Link layer: InfiniBand", ibstat), r.report()
        lids.append(_lid(ibstat, "Base lid"))
    assert all(lids) and len(set(lids)) == nvms, lids

    for i, r in enumerate(results):
        for j in range(nvms):
            if j != i:
                assert f"IPOIB_OK {ohcavm.vm_ip(j)}" in section(r.output, "ipoib"), r.report()
        diags = section(r.output, "diags")
        # the fabric: the switch(es) and the three CAs, nothing else
        assert len(re.findall(r"^Switch\s", diags, re.M)) == nswitches, r.report()
        assert len(re.findall(r"^Ca\s", diags, re.M)) == nvms, r.report()
        assert re.search(r"sminfo: sm lid \d+ sm guid 0x[0-9a-f]+", diags), r.report()
        # by LID, around the ring (the pingpongs print the LIDs they used)
        rc = section(r.output, "rc_ring")
        assert re.search(r"remote address:\s+LID 0x0*[1-9a-f][0-9a-f]*", rc), r.report()
        assert len(re.findall(r"1638400 bytes in .* seconds", rc)) == 2, r.report()
        assert len(re.findall(r"409600 bytes in .* seconds", section(r.output, "ud_ring"))) == 2, \
            r.report()
    assert_ok(results)

    # The switches forwarded the traffic, on credit: no overrun (a packet
    # sent beyond the credit advertised), no bad frame, every VM's port and
    # every inter-switch port Active and busy both ways.
    switches = stats.get("switches", [stats])
    assert len(switches) == nswitches, stats
    for st in switches:
        linked = list(st["vm_ports"].values()) + ([st["isl_port"]] if "isl_port" in st else [])
        for p in st["ports"]:
            assert p["overruns"] == 0 and p["bad_frames"] == 0 and p["bad_link_packets"] == 0, p
            if p["port"] in linked:
                assert p["state"] == 4, p  # Active
                assert p["frames_in"] > 400 and p["frames_out"] > 400, p
        # its SMA answered opensm (counted on the port the SMP came in by)
        assert sum(p["smp_local"] for p in st["ports"]) > 0, st["ports"]
    if options.get("capture"):
        pcap = os.path.join(c.logdir, "wire", "sw0", "switch.pcap")
        assert os.path.getsize(pcap) > 100_000, pcap
