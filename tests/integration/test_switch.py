"""The switch wire: the VMs' stream netdevs on ports of ohca-switch
(fabric/switch, `make fabric`), in the mode of their link layer. First the
harness's plumbing without VMs (the Ethernet mode's learning and flooding,
two switches in a line, the InfiniBand mode's start and statistics, bad
options), then four VMs on one Ethernet switch: every pair talks (ping,
rping both ways), two pairs run ohca_rc_integrity at once, and the
switch's counters show the traffic and not a drop.

The InfiniBand switch with VMs (opensm, LID-routed traffic) is
test_infiniband.py::test_infiniband_switch."""

import os
import re
import shutil
import socket
import struct
import tempfile
import time

import pytest

from vmtest import assert_ok, ohcavm


@pytest.fixture
def sockdir():
    """A short directory for unix socket paths (at most 107 bytes)."""
    d = tempfile.mkdtemp(prefix="ohca-sw-")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _frame(dst, src, payload=b"x" * 50):
    eth = bytes.fromhex(dst.replace(":", "")) + bytes.fromhex(src.replace(":", "")) + b"\x08\x00"
    ip = bytes([0x45, 0]) + struct.pack(">H", 28 + len(payload)) + b"\0" * 5 + bytes([17]) \
        + b"\0" * 10
    udp = struct.pack(">HHHH", 0xC000, 4791, 8 + len(payload), 0)
    return eth + ip + udp + payload


def _send(sock, frame):
    sock.sendall(struct.pack(">I", len(frame)) + frame)


def _frames_at(sock, want, timeout=10):
    """The frames (QEMU's stream framing) that reach sock: at least `want`
    of them (then 0.3 s more for stragglers), or what came within timeout."""
    sock.settimeout(0.3)
    data, deadline = b"", time.monotonic() + timeout
    frames = []
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(1 << 16)
        except socket.timeout:
            if len(frames) >= want:
                break
            continue
        data += chunk
        while len(data) >= 4 and len(data) >= 4 + struct.unpack(">I", data[:4])[0]:
            n = struct.unpack(">I", data[:4])[0]
            frames.append(data[4:4 + n])
            data = data[4 + n:]
    return frames


def _fabric(tmp_path, sockdir, mode, nports, options=None):
    socks, args, sw_socks = ohcavm.switch_ends(nports)
    assert all(a.startswith("stream,") for a in args)
    try:
        fabric = ohcavm.SwitchFabric(str(tmp_path), sockdir, mode, sw_socks, options)
    except BaseException:
        for s in socks:
            s.close()
        raise
    return socks, fabric


def test_eth_switch_learns_floods_and_counts(tmp_path, sockdir):
    """Four ports: a broadcast reaches the three others, a frame to a
    learned address its port alone; the statistics count per port and say
    which VM is on which port."""
    macs = [ohcavm.vm_mac(i) for i in range(4)]
    socks, fabric = _fabric(tmp_path, sockdir, "eth", 4, {"line_rate": 1000, "capture": True})
    try:
        _send(socks[0], _frame("ff:ff:ff:ff:ff:ff", macs[0]))
        assert [len(_frames_at(socks[i], 1 if i else 0, 5)) for i in range(4)] == [0, 1, 1, 1]
        _send(socks[1], _frame(macs[0], macs[1]))  # vm0 is known: to it alone
        for _ in range(100):
            _send(socks[2], _frame(macs[0], macs[2]))
        assert len(_frames_at(socks[0], 101)) == 101
        assert [len(_frames_at(socks[i], 0, 1)) for i in (1, 2, 3)] == [0, 0, 0]
    finally:
        stats = fabric.stop()
        for s in socks:
            s.close()
    assert stats["mode"] == "eth" and stats["line_rate_bps"] == 1000 * 10**6, stats
    assert stats["buffer_bytes"] == 16 << 20, stats  # the harness's default
    assert stats["vm_ports"] == {i: i + 1 for i in range(4)}, stats
    ports = {p["port"]: p for p in stats["ports"]}
    assert [ports[i]["frames_in"] for i in (1, 2, 3, 4)] == [1, 1, 100, 0], stats
    assert [ports[i]["frames_out"] for i in (1, 2, 3, 4)] == [101, 1, 1, 1], stats
    assert [ports[i]["flooded"] for i in (1, 2, 3, 4)] == [1, 0, 0, 0], stats
    assert ohcavm.switch_port_stats(stats, 2)["frames_in"] == 100
    assert all(not q["drops"] for p in stats["ports"] for q in p["prio"]), stats
    pcap = os.path.join(tmp_path, "sw0", "switch.pcap")
    assert os.path.getsize(pcap) == 24 + 102 * (16 + 92), pcap  # the header, 102 frames
    with open(os.path.join(tmp_path, "sw0", "cmdline.txt")) as f:
        cmd = f.read()
    assert "--mode eth" in cmd and "--line-rate 1000" in cmd and "--buffer 16777216" in cmd, cmd


def test_eth_switches_in_line(tmp_path, sockdir):
    """Two switches in a line (listen:/connect: on a unix socket), VMs 0
    and 1 on the first, 2 and 3 on the second: a broadcast crosses to all,
    then unicast both ways over the link between them."""
    macs = [ohcavm.vm_mac(i) for i in range(4)]
    socks, fabric = _fabric(tmp_path, sockdir, "eth", 4, {"switches": 2})
    try:
        # the second switch connects to the first within 100 ms of both
        # running; until then a flood reaches only the first one's ports
        deadline = time.monotonic() + 10
        while True:
            _send(socks[0], _frame("ff:ff:ff:ff:ff:ff", macs[0]))
            if _frames_at(socks[3], 1, 0.5) or time.monotonic() > deadline:
                break
        _frames_at(socks[1], 1, 0.5)
        _frames_at(socks[2], 1, 0.5)
        for _ in range(20):
            _send(socks[3], _frame(macs[0], macs[3]))
        assert len(_frames_at(socks[0], 20)) == 20
        _send(socks[0], _frame(macs[3], macs[0]))
        assert len(_frames_at(socks[3], 1)) == 1
        assert [len(_frames_at(socks[i], 0, 0.5)) for i in (1, 2)] == [0, 0]
    finally:
        stats = fabric.stop()
        for s in socks:
            s.close()
    sw0, sw1 = stats["switches"]
    assert sw0["vm_ports"] == {0: 1, 1: 2} and sw0["isl_port"] == 3, sw0
    assert sw1["vm_ports"] == {2: 2, 3: 3} and sw1["isl_port"] == 1, sw1
    assert ohcavm.switch_port_stats(stats, 3)["frames_in"] == 20, stats
    assert ohcavm.switch_port_stats(stats, 0)["frames_out"] >= 20, stats
    isl = [p for p in sw0["ports"] if p["port"] == 3][0]
    assert isl["connected"] and isl["frames_in"] >= 20, sw0


def test_ib_switch_starts_and_reports(tmp_path, sockdir):
    """The InfiniBand mode: three ports with a smaller VL buffer and a
    shaped line rate (the incast bench's bottleneck); each
    port sends its initialization flow control packets as soon as it is
    connected; stop() returns the per-port statistics (port 0 the switch's
    own) and the VMs' ports."""
    socks, fabric = _fabric(tmp_path, sockdir, "ib", 3,
                            {"vl_buffer": 128, "line_rate": 500, "capture": True})
    try:
        got = _frames_at(socks[1], 4, 1)  # init FCPs (VL0-3), then one per VL every 50 ms
    finally:
        stats = fabric.stop()
        for s in socks:
            s.close()
    assert len(got) >= 4 and all(len(f) == 6 for f in got), got
    assert stats["guid"] == "0x0002c90300fab001", stats
    assert stats["line_rate_bps"] == 500 * 10**6, stats
    assert [p["port"] for p in stats["ports"]] == [0, 1, 2, 3], stats
    assert all(p["connected"] for p in stats["ports"][1:]), stats
    assert stats["vm_ports"] == {0: 1, 1: 2, 2: 3}, stats
    with open(os.path.join(tmp_path, "sw0", "cmdline.txt")) as f:
        cmd = f.read()
    assert "--mode ib" in cmd and "--vl-buffer 128" in cmd and "--line-rate 500" in cmd, cmd
    assert os.path.isfile(os.path.join(tmp_path, "sw0", "switch.pcap"))


def test_switch_options_checked(tmp_path, sockdir):
    """A bad option fails before anything runs, with its name."""
    for mode, opts, word in (("ib", {"pfc": "3"}, "pfc"), ("eth", {"vl_buffer": 128}, "vl_buffer"),
                             ("eth", {"line_speed": 1}, "line_speed"),
                             ("eth", {"switches": 3}, "switches"),
                             ("ib", {"switches": 2, "split": 3}, "split")):
        with pytest.raises(ohcavm.HarnessError, match=word):
            socks, fabric = _fabric(tmp_path, sockdir, mode, 3, opts)
            fabric.stop()


# --------------------------------------------------------------------------
# Four VMs on one Ethernet ohca-switch (2 Gbit/s per port, a 4 MiB buffer).
# Once all are up, each pings every other one over its ohca netdev, then
# runs an rping server for every other VM and, once all are listening, an
# rping client to every other VM: twelve RC connections through rdma_cm,
# every ordered pair once, three verified pings each. Then two pairs run
# ohca_rc_integrity at the same time (vm0 -> vm1, vm2 -> vm3; every byte
# and completion checked) at path MTU 4096.
MESH = r"""
ohca_barrier all-up 180  # every VM's preamble done: its address is up
echo "=== ping ==="
for ip in $OHCA_PEER_IPS; do
    if ping -c 3 -i 0.2 -W 5 "$ip" >/tmp/ping.log 2>&1; then
        echo "PING_OK $ip"
    else
        echo "PING_FAIL $ip"; cat /tmp/ping.log
    fi
done
[ "$OHCA_NIC" = ohca ] || exit 0
echo "=== rping ==="
peers=$(seq 0 $((OHCA_NUM_VMS - 1)) | grep -vx "$OHCA_VM_INDEX")
declare -A spid cpid
for i in $peers; do  # server for vm$i: port 7470+i
    timeout 150 rping -s -a "$OHCA_IP" -p $((7470 + i)) -C 3 -S 64 -v >/tmp/rs.$i 2>&1 &
    spid[$i]=$!
done
ohca_barrier rping-servers 120
rping_client() { timeout 60 rping -c -a "$1" -p "$2" -C 3 -S 64 -v >"$3" 2>&1; }
for i in $peers; do
    ip=$(echo $OHCA_VM_IPS | cut -d' ' -f$((i + 1)))
    ohca_retry 60 rping_client "$ip" $((7470 + OHCA_VM_INDEX)) /tmp/rc.$i &
    cpid[$i]=$!
done
for i in $peers; do
    wait ${cpid[$i]}; crc=$?
    wait ${spid[$i]}; src=$?
    echo "RPING vm$OHCA_VM_INDEX-vm$i client rc=$crc pings=$(grep -c 'ping data' /tmp/rc.$i)" \
         "server rc=$src pings=$(grep -c 'ping data' /tmp/rs.$i)"
done
echo "=== integrity ==="
rc=0
if [ $((OHCA_VM_INDEX % 2)) = 1 ]; then  # vm1, vm3: servers
    ohca_barrier integrity 120
    timeout 400 /share/ohca_rc_integrity -d "$OHCA_IBDEV" -g 1 -p 19300 -t 300 || rc=1
else  # vm0 -> vm1, vm2 -> vm3
    peer=$(echo $OHCA_VM_IPS | cut -d' ' -f$((OHCA_VM_INDEX + 2)))
    ohca_barrier integrity 120
    ohca_retry 60 timeout 400 /share/ohca_rc_integrity -d "$OHCA_IBDEV" -g 1 -p 19300 -t 300 \
        -n ITERS -M 4096 "$peer" || rc=1
fi
ohca_hw_counters
exit $rc
"""

NVMS = 4
ITERS = 40
ETH_SWITCH = {"line_rate": 2000, "buffer": 4 << 20}


def test_four_vms_on_one_switch(vm_cluster, nic, kernel_kind):
    """The N-VM harness on ohca-switch --mode eth: four VMs booted together;
    every pair of them talks (ping over the netdev, and with ohca rping over
    RC both ways), two pairs at once run RC with every byte checked, and
    the switch forwarded it all without a drop."""
    c = vm_cluster(nvms=NVMS, wire="switch", switch=ETH_SWITCH, smp=1, mtu=9000,
                   mem="1G" if kernel_kind == "debug" else "512M")
    t0 = time.monotonic()
    c.start(MESH.replace("ITERS", str(ITERS)))
    results = c.wait(timeout=600)
    print(f"four VMs: {time.monotonic() - t0:.0f} s from QEMU start to the last result; "
          + ", ".join(f"{r.name} job at {r.boot_to_job or 0:.0f} s" for r in results))
    stats = results[0].wire_stats
    print("switch:", stats)
    assert_ok(results)
    for i, r in enumerate(results):
        for j in range(NVMS):
            if j != i:
                assert f"PING_OK {ohcavm.vm_ip(j)}" in r.output, r.report()
        if nic != "ohca":
            continue
        for j in range(NVMS):
            if j != i:
                assert (f"RPING vm{i}-vm{j} client rc=0 pings=3 server rc=0 pings=3"
                        in r.output), r.report()
        assert "ohca_rc_integrity: FAIL" not in r.output, r.report()
        role = "server" if i % 2 else "client"
        assert re.search(rf"^ohca_rc_integrity: PASS role={role} mtu=4096 \S+ "
                         rf"iterations={ITERS}/", r.output, re.M), r.report()

    assert stats["mode"] == "eth" and stats["line_rate_bps"] == 2000 * 10**6, stats
    if nic == "ohca":  # the link's speed is the switch port's line rate
        with open(os.path.join(c.logdir, "vm0", "cmdline.txt")) as f:
            assert ",speed=2000" in f.read()
    for i in range(NVMS):
        p = ohcavm.switch_port_stats(stats, i)
        assert p["frames_in"] > 0 and p["frames_out"] > 0, p
        assert p["bad_frames"] == 0 and p["oversize_frames"] == 0, p
        assert not any(q["drops"] for q in p["prio"]), p
        if nic == "ohca":
            # the integrity pairs' traffic through every port, both ways
            # (about 0.4-0.8 MB each way at 40 iterations)
            assert p["bytes_in"] > 100_000 and p["bytes_out"] > 100_000, p
    assert stats["buffer_hwm"] <= stats["buffer_bytes"], stats
