"""Reliable-connected traffic through the device: in one VM (both ends on
ohca0, looped back inside the device) and between two VMs over the wire.

GID index 1 is the port's RoCEv2 GID for its IPv4 address (test_devinfo
checks the table)."""

import os
import re

import pytest

from vmtest import assert_ok, hw_counters, ohcavm, perftest_loopback, watch_qemu_rss
from harness.host import build_dir

TOP = ohcavm.TOP

pytestmark = pytest.mark.ohca_only

GID = 1
SIZES = (2, 4096, 65536, 1048576)
PERFTESTS = ("ib_write_bw", "ib_read_bw", "ib_send_bw",
             "ib_write_lat", "ib_read_lat", "ib_send_lat")
# make test's perftest cases: every test at one packet and at 64 KiB, the
# bandwidth tests also at 1 MiB (4 KiB takes the same multi-packet paths
# as 64 KiB at path MTU 1024); `make bench` measures the whole matrix.
PERFTEST_CASES = [(t, s) for t in PERFTESTS for s in SIZES
                  if s in (2, 65536) or (s == 1048576 and t.endswith("_bw"))]


def iterations(size):
    return 50 if size >= 1048576 else 200


# built with the driver, for the guest's release (make kernel)
KVERBS_MODULE = os.path.join(build_dir("kernel"), "ohca_kverbs_test.ko")

# The kernel verbs check (kernel/tools/kverbs): insmod runs it and fails
# with its error; its verdict line is in the kernel log.
KVERBS = rf"""
/share/ohca_rc_loopback -n 20 {GID} || exit 1
echo "=== kverbs ==="
insmod /share/ohca_kverbs_test.ko gid_index={GID}
rc=$?
dmesg | grep ohca_kverbs_test
[ $rc -eq 0 ] || {{ echo "kverbs insmod failed: $rc"; exit 1; }}
rmmod ohca_kverbs_test
# The drain again, across a device that goes fatal (bus mastering off: the
# next command's ring read fails): the driver flushes in software.
echo "=== kverbs fatal drain ==="
pci=$(basename "$(readlink -f /sys/class/infiniband/$OHCA_IBDEV/device)")
insmod /share/ohca_kverbs_test.ko gid_index={GID} fatal_drain=1 > /tmp/kvf.log 2>&1 &
kvf=$!
ohca_poll 60 eval 'dmesg | grep -q "waiting for the device to go fatal"' ||
	{{ echo "kverbs fatal drain: no QPs"; dmesg | grep ohca_kverbs_test; exit 1; }}
ohca_clear_bus_master "$pci" || exit 1
cat /sys/class/infiniband/$OHCA_IBDEV/ports/1/hw_counters/* >/dev/null 2>&1
wait $kvf
rc=$?
dmesg | grep ohca_kverbs_test | tail -n 3
[ $rc -eq 0 ] || {{ echo "kverbs fatal drain insmod failed: $rc"; cat /tmp/kvf.log; exit 1; }}
rmmod ohca_kverbs_test
timeout 60 sh -c "echo 1 > /sys/bus/pci/devices/$pci/reset" || {{ echo "reset failed"; exit 1; }}
echo "kverbs fatal drain done"
"""


def check_kverbs(output):
    assert ("ohca_kverbs_test: 67 sends on ohca0 OK; CQ purge OK; "
            "fast registration OK; drain OK") in output, output
    assert "ohca_kverbs_test: fatal drain OK" in output, output
    assert "kverbs fatal drain done" in output, output


def test_rc_data_integrity_loopback(vm_run):
    """Random patterns with SEND, SEND_IMM, WRITE, WRITE_IMM and READ at odd
    sizes, offsets and SGE counts, every byte and completion checked, then
    the error phase (bad rkey -> REM_ACCESS_ERR, flush, reset, reconnect).
    In the same VM the kernel verbs check: kernel RC QPs, CQ purge on RESET
    and destroy, fast registration (REG_MR, RDMA through the fast-reg rkey,
    LOCAL_INV and SEND_WITH_INV making it stale, a new key variant refusing
    the old one) and ib_drain_qp(), then ib_drain_qp() across a device made
    fatal (software flushes), and a function reset to recover."""
    if not os.path.isfile(KVERBS_MODULE):
        pytest.fail(f"{KVERBS_MODULE} missing: make kernel")
    (r,) = vm_run(KVERBS, timeout=400,
                  extra_files={"ohca_kverbs_test.ko": KVERBS_MODULE})
    assert_ok([r])
    assert "ohca_rc_loopback: OK" in r.output, r.report()
    assert "REM_ACCESS_ERR, WR_FLUSH_ERR" in r.output, r.report()
    check_kverbs(r.output)


# Doorbells from both vCPUs at once (the VMs have two): each vCPU runs
# one ohca_rc_loopback (its own QPs, CQs and MRs, random data checked
# byte for byte, a different seed each) and one end of an ibv_rc_pingpong
# pair with -c (the payload checked), so the two vCPUs ring doorbells,
# take the engine lock from each other and share the bottom half.
CONCURRENT_LOOPBACK = rf"""
rc=0
taskset -c 0 /share/ohca_rc_loopback -n 60 -s 1 {GID} > /tmp/l0.log 2>&1 &
l0=$!
taskset -c 1 /share/ohca_rc_loopback -n 60 -s 2 {GID} > /tmp/l1.log 2>&1 &
l1=$!
taskset -c 0 timeout 300 ibv_rc_pingpong -d "$OHCA_IBDEV" -g {GID} -n 3000 -c > /tmp/pps.log 2>&1 &
pps=$!
ohca_retry 20 taskset -c 1 timeout 300 ibv_rc_pingpong -d "$OHCA_IBDEV" -g {GID} -n 3000 -c 127.0.0.1 > /tmp/ppc.log 2>&1 || rc=1
wait $pps || rc=1
wait $l0 || rc=1
wait $l1 || rc=1
for f in l0 l1 pps ppc; do echo "== $f"; tail -n 3 /tmp/$f.log; done
exit $rc
"""


def test_rc_concurrent_vcpus_loopback(vm_run):
    """Two vCPUs ringing doorbells at once stay correct: each doorbell's
    run holds the engine lock, not the BQL (docs/architecture.md)."""
    (r,) = vm_run(CONCURRENT_LOOPBACK, timeout=600)
    assert_ok([r])
    assert r.output.count("ohca_rc_loopback: OK") == 2, r.report()
    assert len(re.findall(r"3000 iters in", r.output)) == 2, r.report()


PINGPONG_LOOPBACK = rf"""
set -e
for flags in "" "-e"; do
	timeout 120 ibv_rc_pingpong -d "$OHCA_IBDEV" -g {GID} -n 500 $flags > /tmp/srv.log 2>&1 &
	srv=$!
	ohca_retry 20 ibv_rc_pingpong -d "$OHCA_IBDEV" -g {GID} -n 500 $flags 127.0.0.1
	wait $srv
	echo "pingpong '$flags' server:"; cat /tmp/srv.log
done
"""


def check_pingpong_loopback(output):
    assert len(re.findall(r"500 iters in", output)) == 4, output


def test_rc_pingpong_loopback(vm_run):
    (r,) = vm_run(PINGPONG_LOOPBACK, timeout=400)
    assert_ok([r])
    check_pingpong_loopback(r.output)


def test_perftest_loopback(vm_run):
    script = perftest_loopback([(t, s, f"-s {s} -n {iterations(s)}", f"^ *{s} +[0-9]+ ")
                                for t, s in PERFTEST_CASES], GID)
    (r,) = vm_run(script, timeout=900)
    assert_ok([r])
    results = re.findall(r"^RESULT (\S+) (\d+) client=0 server=0 :", r.output, re.M)
    assert len(results) == len(PERFTEST_CASES), r.report()


# Two VMs: vm0 serves each test in turn, vm1 connects (retrying until the
# server listens); both ends must succeed. Each test has its own TCP port,
# so a client can never meet the server of another test.
TWO_VM_SERVER = r"""
rc=0 port=18600
ohca_barrier up || exit 1
while read -r cmd; do
	port=$((port + 1))
	timeout 120 $cmd -p $port > /tmp/srv.log 2>&1 || { rc=1; echo "server failed: $cmd"; cat /tmp/srv.log; }
	echo "SERVED $cmd"
done <<'EOF'
{cmds}
EOF
ohca_hw_counters
exit $rc
"""

TWO_VM_CLIENT = r"""
rc=0 port=18600
ohca_barrier up || exit 1
while read -r cmd; do
	port=$((port + 1))
	if ohca_retry 30 timeout 120 $cmd -p $port "$OHCA_PEER_IP" > /tmp/cli.log 2>&1; then
		echo "CLIENT OK $cmd"
	else
		rc=1; echo "client failed: $cmd"; cat /tmp/cli.log
	fi
	tail -n 3 /tmp/cli.log
done <<'EOF'
{cmds}
EOF
ohca_hw_counters
exit $rc
"""


# The hostile peer (tests/vm/guest/ohca_hostile_peer.py) before the
# pingpongs: vm0 holds an RC QP that believes vm1 is its peer, vm1 sends it
# HOSTILE_ACTIONS crafted frames with a valid ICRC (in-sequence READ floods,
# duplicate floods, spoofed QPNs, PSNs and source addresses, oversized
# frames, bad opcodes, then an opcode out of sequence to a second QP). The host samples
# vm0's QEMU resident memory around the flood; the pingpongs afterwards
# prove the device unharmed.
HOSTILE_ACTIONS = 100000
HOSTILE_PORT = 18599
HOSTILE_RSS_BOUND = 48 << 20  # bytes; the device's own bounds add up to about 5 MB

# The two VMs meet at barriers (the target listening; vm0 done with the
# target and its counters) instead of racing fixed windows: after the
# flood vm0 tears the target down and reads its 35 counters (a process
# and a device command each) before its first pingpong server listens,
# about 30 s at load 20 (2026-12-06), which was the whole of the
# client's 30 s retry window.
HOSTILE_WAIT = 300  # seconds, for either VM at a barrier

HOSTILE_TARGET = rf"""
python3 /share/ohca_hostile_peer.py target ohca0 {GID} "$OHCA_PEER_IP" {HOSTILE_PORT} >/tmp/target.log 2>&1 &
tgt=$!
ohca_poll {HOSTILE_WAIT} grep -q '^TARGET ' /tmp/target.log || {{ cat /tmp/target.log; exit 1; }}
ohca_mark hostile-start
ohca_barrier target-up {HOSTILE_WAIT} || exit 1
wait $tgt || {{ echo "target failed"; rc=1; }}
cat /tmp/target.log
ohca_mark hostile-done
ohca_hw_counters
ohca_barrier hostile-over {HOSTILE_WAIT} || exit 1
"""

HOSTILE_FLOOD = rf"""
ip link set "$OHCA_IFACE" mtu 9000 || exit 1
ohca_barrier target-up {HOSTILE_WAIT} || exit 1
python3 /share/ohca_hostile_peer.py flood "$OHCA_IFACE" "$OHCA_PEER_IP" {HOSTILE_PORT} {HOSTILE_ACTIONS} || rc=1
ip link set "$OHCA_IFACE" mtu 1500 || exit 1
ohca_barrier hostile-over {HOSTILE_WAIT} || exit 1
"""


def test_rc_two_vms(vm_run):
    """The hostile peer against vm0, then ibv_rc_pingpong and
    ibv_srq_pingpong (8 QPs on one SRQ) between two VMs over the wire,
    polling and with completion events."""
    cmds = [f"ibv_rc_pingpong -d ohca0 -g {GID} -n 500",
            f"ibv_rc_pingpong -d ohca0 -g {GID} -n 200 -s 65536 -e",
            f"ibv_srq_pingpong -d ohca0 -g {GID} -n 200 -q 8",
            f"ibv_srq_pingpong -d ohca0 -g {GID} -n 100 -q 8 -s 8192 -e"]
    text = "\n".join(cmds)
    server_script = TWO_VM_SERVER.replace("{cmds}", text).replace(
        "ohca_barrier up || exit 1\n", "ohca_barrier up || exit 1\n" + HOSTILE_TARGET, 1)
    client_script = TWO_VM_CLIENT.replace("{cmds}", text).replace(
        "ohca_barrier up || exit 1\n", "ohca_barrier up || exit 1\n" + HOSTILE_FLOOD, 1)
    with watch_qemu_rss(["hostile-start", "hostile-done"]) as rss:
        server, client = vm_run({0: server_script, 1: client_script}, nvms=2, timeout=900)
    flood = re.search(r"^FLOOD (.*)$", client.output, re.M)
    rss0, rss1 = rss.get("hostile-start"), rss.get("hostile-done")
    growth = (f"vm0 QEMU RSS {rss0 >> 20} -> {rss1 >> 20} MiB "
              f"({(rss1 - rss0) / HOSTILE_ACTIONS:.1f} bytes per action)"
              if rss0 and rss1 else "vm0 QEMU RSS not sampled")
    print(f"\nhostile peer: {flood.group(1) if flood else '(no summary)'}; {growth}")
    counters = hw_counters(server.output)
    print("vm0 counters after the flood: " + " ".join(
        f"{k}={v}" for k, v in counters.items() if v))
    assert_ok([server, client])
    assert "FLOOD-DONE" in client.output, client.report()
    # The flooded QP survived in RTS or, if its READ responder resources
    # ran out, went to ERR; the opcode out of sequence put the second QP in
    # error (IBV_QPS_RTS 3, IBV_QPS_ERR 6).
    assert re.search(r"^TARGET-QP-STATE flooded=[36] out_of_sequence=6$", server.output,
                     re.M), server.report()
    assert rss0 and rss1, rss
    assert rss1 - rss0 < HOSTILE_RSS_BOUND, (rss0, rss1)
    # Oversized frames, foreign QPNs and bad opcodes were seen and dropped;
    # the responder never answered more than it was sent.
    assert counters.get("roce_bad_header", 0) > 0, counters
    assert counters.get("roce_bad_qpn", 0) > 0, counters
    assert counters.get("roce_bad_opcode", 0) > 0, counters
    assert counters.get("roce_tx_pkts", 0) <= HOSTILE_ACTIONS, counters
    assert client.output.count("CLIENT OK") == len(cmds), client.report()
    assert server.output.count("SERVED") == len(cmds), server.report()


def test_perftest_two_vms(vm_run):
    """The perftest matrix between two VMs (server in vm0): every test at
    every size with -F, both ends must succeed; the client's result lines
    are printed as a matrix."""
    cmds = [f"{t} -d ohca0 -x {GID} -F -s {s} -n {iterations(s)}" for t, s in PERFTEST_CASES]
    text = "\n".join(cmds)
    server, client = vm_run({0: TWO_VM_SERVER.replace("{cmds}", text),
                             1: TWO_VM_CLIENT.replace("{cmds}", text)},
                            nvms=2, timeout=1800)
    print("perftest between two VMs (client side):")
    for line in client.output.splitlines():
        if line.startswith(("CLIENT OK", "client failed")) or re.match(r"^ *\d+ +\d+ ", line):
            print("  " + line)
    for name, r in (("server", server), ("client", client)):
        print(f"{name} " + "".join(re.findall(r"^HW_COUNTERS.*$", r.output, re.M)))
    assert_ok([server, client])
    assert client.output.count("CLIENT OK") == len(cmds), client.report()
    assert server.output.count("SERVED") == len(cmds), server.report()


# ohca_rc_integrity (userspace/tests): a server and a client, each checking
# every byte and completion of batches of SEND/SEND_IMM/WRITE/WRITE_IMM/READ
# at odd sizes, offsets and SGE counts. The netdev MTU is raised to 9000 so
# the port's active MTU is 4096 and every path MTU below it can be chosen.
INTEGRITY_MTUS = (256, 1024, 4096)
INTEGRITY_ITERS = 60

INTEGRITY_LOOPBACK = rf"""
rc=0
ip link set "$OHCA_IFACE" mtu 9000 || exit 1
for mtu in {{mtus}}; do
	port=$((19800 + mtu / 256))
	/share/ohca_rc_integrity -d "$OHCA_IBDEV" -g {GID} -p $port > /tmp/srv.log 2>&1 &
	srv=$!
	/share/ohca_rc_integrity -d "$OHCA_IBDEV" -g {GID} -p $port -n {INTEGRITY_ITERS} -M $mtu 127.0.0.1 || rc=1
	wait $srv || rc=1
	echo "server: $(tail -n 1 /tmp/srv.log)"
done
exit $rc
"""


def integrity_loopback_script():
    return INTEGRITY_LOOPBACK.replace("{mtus}", " ".join(map(str, INTEGRITY_MTUS)))


def check_integrity_loopback(output):
    for role in ("client", "server"):
        for mtu in INTEGRITY_MTUS:
            assert re.search(rf"^(server: )?ohca_rc_integrity: PASS role={role} mtu={mtu} "
                             rf"\S+ iterations={INTEGRITY_ITERS}/", output, re.M), output
    assert "FAIL" not in output, output


def test_rc_integrity_loopback(vm_run):
    """ohca_rc_integrity server and client in one VM (looped back inside
    the device) at path MTUs 256, 1024 and 4096."""
    (r,) = vm_run(integrity_loopback_script(), timeout=600)
    assert_ok([r])
    check_integrity_loopback(r.output)


INTEGRITY_TWO_VM = r"""
rc=0
ip link set "$OHCA_IFACE" mtu 9000 || exit 1
ohca_barrier mtu || exit 1
for mtu in {mtus}; do
	port=$((19800 + mtu / 256))
	if [ "$OHCA_VM_INDEX" = 0 ]; then
		/share/ohca_rc_integrity -d ohca0 -g {gid} -p $port || rc=1
	else
		/share/ohca_rc_integrity -d ohca0 -g {gid} -p $port -n {iters} -M $mtu "$OHCA_PEER_IP" || rc=1
	fi
done
exit $rc
"""


def test_rc_integrity_two_vms(vm_run):
    """ohca_rc_integrity between two VMs over the wire (server in vm0,
    client in vm1) at path MTUs 256, 1024 and 4096."""
    script = INTEGRITY_TWO_VM.format(mtus=" ".join(map(str, INTEGRITY_MTUS)), gid=GID,
                                     iters=INTEGRITY_ITERS)
    server, client = vm_run({0: script, 1: script}, nvms=2, timeout=900)
    assert_ok([server, client])
    for role, r in (("server", server), ("client", client)):
        for mtu in INTEGRITY_MTUS:
            assert re.search(rf"^ohca_rc_integrity: PASS role={role} mtu={mtu} "
                             rf"\S+ iterations={INTEGRITY_ITERS}/", r.output, re.M), r.report()


# The same program on UC QPs (-u: no READs, each batch closed by a SEND
# whose arrival says the batch landed), once at path MTU 1024.
UC_TWO_VM = r"""
if [ "$OHCA_VM_INDEX" = 0 ]; then
	/share/ohca_rc_integrity -d ohca0 -g {gid} -p 19900 || rc=1
else
	/share/ohca_rc_integrity -d ohca0 -g {gid} -p 19900 -n {iters} -M 1024 -u "$OHCA_PEER_IP" || rc=1
fi
"""


def test_rc_integrity_stream_wire(vm_run):
    """The same between two VMs on the stream wire (-netdev stream on a
    socket pair: lossless, read in batches; the bench's two-VM wire), at
    path MTUs 1024 and 4096, then on UC QPs at 1024: every frame arrives,
    so nothing is sent again and every UC byte lands."""
    mtus = (1024, 4096)
    script = INTEGRITY_TWO_VM.format(mtus=" ".join(map(str, mtus)), gid=GID,
                                     iters=INTEGRITY_ITERS).replace(
                                         "exit $rc", UC_TWO_VM.format(gid=GID, iters=INTEGRITY_ITERS)
                                         + "ohca_hw_counters\nexit $rc")
    server, client = vm_run({0: script, 1: script}, nvms=2, wire="stream", timeout=900)
    assert_ok([server, client])
    for role, r in (("server", server), ("client", client)):
        for mtu in mtus:
            assert re.search(rf"^ohca_rc_integrity: PASS role={role} mtu={mtu} "
                             rf"\S+ iterations={INTEGRITY_ITERS}/.* qp=RC$", r.output, re.M), r.report()
        # UC: every byte arrives on a lossless wire as well
        assert re.search(rf"^ohca_rc_integrity: PASS role={role} mtu=1024 "
                         rf"\S+ iterations={INTEGRITY_ITERS}/.* READ=0 max_gap_ms=\d+ qp=UC$", r.output, re.M), r.report()
    # A lossless wire: nothing corrupt, and nothing sent again, out of
    # sequence or NAKed unless an ACK timer expired first. Under TCG on a
    # loaded host a guest can stall past its ACK timeout; the packets the
    # timer sends again then arrive as duplicates or stale responses. A gap
    # the wire made shows as these counters with no timeout at all. The
    # RTO's first expiry sends one tail-loss probe (the last packet again,
    # no timeout counted): at most that many packets sent again.
    ctrs = [hw_counters(r.output) for r in (server, client)]
    print("counters (server, client):", ctrs)
    timeouts = sum(c.get("rc_local_ack_timeouts", 0) for c in ctrs)
    for r, ctr in zip((server, client), ctrs):
        assert ctr.get("roce_rx_pkts", 0) > 0, r.report()
        assert ctr.get("roce_icrc_errors", 0) == 0, ctr
        if timeouts == 0:
            for name in ("rc_seq_naks_rcvd", "rc_out_of_seq_dropped"):
                assert ctr.get(name, 0) == 0, (name, ctrs)
            assert ctr.get("rc_retrans_pkts", 0) <= ctr.get("rc_tail_probes", 0), ctrs
