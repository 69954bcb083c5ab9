"""Self-checks of the harness: the parsers on their own, one VM run
proving that a kernel problem in the guest fails the run, and the pool.
The N-VM switch wire: test_switch.py."""

import os
import struct
import time

import pytest

import roce_pcap
from vmtest import ohcavm, parse_devinfo

DEVINFO_SAMPLE = (
    "hca_id:\tohca0\n"
    "\ttransport:\t\t\tInfiniBand (0)\n"
    "\tfw_ver:\t\t\t\t1.0.0\n"
    "\tnode_guid:\t\t\t0002:c9ff:fe00:0001\n"
    "\tvendor_id:\t\t\t0x1af4\n"
    "\tmax_qp:\t\t\t\t256\n"
    "\tdevice_cap_flags:\t\t0x00000000\n"
    "\t\t\t\t\tSYS_IMAGE_GUID\n"
    "\t\tmax_tso:\t\t\t0\n"
    "\t\tport:\t1\n"
    "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
    "\t\t\tlink_layer:\t\tEthernet\n"
    "\t\t\tGID[  0]:\t\tfe80::ff:fe00:1, RoCE v2\n"
    "\t\t\tGID[  1]:\t\t::ffff:10.77.0.1, RoCE v2\n"
)


def _roce_frame(opcode, psn, ext, payload):
    """An IPv4 RoCEv2 frame 10.0.0.1 -> 10.0.0.2, QP 0x11, its ICRC right."""
    ib = struct.pack(">BBHII", opcode, 0x40, 0xFFFF, 0x11, 0x80000000 | psn) + ext + payload
    udp_len = 8 + len(ib) + 4
    ip = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, 1, 0x4000, 64, 17, 0,
                               bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])))
    s = sum(struct.unpack(">10H", bytes(ip)))
    s = (s & 0xFFFF) + (s >> 16)
    ip[10:12] = struct.pack(">H", ~((s & 0xFFFF) + (s >> 16)) & 0xFFFF)
    frame = (bytes.fromhex("020000000002020000000001") + b"\x08\x00" + bytes(ip)
             + struct.pack(">HHHH", 49152, roce_pcap.ROCE_PORT, udp_len, 0) + ib + bytes(4))
    return frame[:-4] + struct.pack("<I", roce_pcap.icrc_value(frame))


def _judge_frames(tmp_path, frames):
    path = tmp_path / "roce.pcap"
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for fr in frames:
            f.write(struct.pack("<IIII", 0, 0, len(fr), len(fr)) + fr)
    return roce_pcap.check(roce_pcap.dissect(str(path)), {"10.0.0.1"})


def test_roce_pcap_checks_atomic_write_layout_tshark_4_cannot(tmp_path):
    """tshark 4.0 shows opcode 0x1d (RDMA ATOMIC WRITE) as "Unknown" and its
    RETH and payload as vendor data, without a malformed mark: roce_pcap
    checks that layout from the raw packet, so a wrong one fails."""
    reth8 = struct.pack(">QII", 0x10008, 0x5566, 8)
    good = [_roce_frame(0x1D, 1, reth8, bytes(range(1, 9))),
            _roce_frame(0x0A, 2, reth8, bytes(range(1, 9)))]  # an RDMA WRITE only
    problems, summary = _judge_frames(tmp_path, good)
    assert problems == [] and summary["raw_decoded"] == 1, (problems, summary)
    assert summary["opcodes"] == {"0x0a": 1, "0x1d": 1}, summary
    bad = [_roce_frame(0x1D, 1, struct.pack(">QII", 0x10008, 0x5566, 16), bytes(16)),
           _roce_frame(0x1D, 2, struct.pack(">QII", 0x10008, 0x5566, 4), bytes(8))]
    problems, summary = _judge_frames(tmp_path, bad)
    assert len(problems) == 2 and all("RDMA ATOMIC WRITE" in p for p in problems), problems


def test_parse_devinfo():
    d = parse_devinfo(DEVINFO_SAMPLE)
    assert d["fields"]["node_guid"] == "0002:c9ff:fe00:0001"
    assert d["fields"]["max_qp"] == "256"
    assert "max_tso" not in d["fields"]
    p = d["ports"][1]
    assert p["fields"]["state"] == "PORT_ACTIVE (4)"
    assert p["gids"] == [(0, "fe80::ff:fe00:1", "RoCE v2"),
                         (1, "::ffff:10.77.0.1", "RoCE v2")]


def test_format_guid():
    assert ohcavm.format_guid(0x0002C9FFFE000001) == "0002:c9ff:fe00:0001"


def test_ib_incast_common_window():
    """fabric_bench_ib's shares over the interval every sender sent, from
    the switch's timeline: three senders starting 3 s apart, each 8 s
    long, sharing a 30 Mbit/s line equally among those sending. Their own
    averages differ (19.4, 13.8, 19.4 Mbit/s: Jain 0.976); while all three
    sent (6 to 8 s) each had 10 Mbit/s."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
    import fabric_bench_ib

    rate = {1: (0.0, 8.0), 2: (3.0, 11.0), 3: (6.0, 14.0)}
    sent = {p: 0.0 for p in rate}
    lines = []
    for k in range(1601):  # 10 ms apart, from 100 s on the monotonic clock
        t = k / 100
        on = [p for p, (a, b) in rate.items() if a <= t < b]
        for p in on:
            sent[p] += 30e6 / 8 / len(on) / 100
        lines.append({"mono_us": int((100 + t) * 1e6),
                      "ports": [{"port": p, "rx_bytes": int(sent[p])} for p in rate]})
    w = fabric_bench_ib.common_window(lines, 99.5, 116.0, [1, 2, 3])
    # (less the first and last 2 % of each sender's bytes)
    assert 1.2 <= w["seconds"] <= 2.0 and 6.0 <= w["start_s"] - 0.5 <= 6.5, w
    assert all(abs(x - 10) < 0.3 for x in w["mbps"]), w
    assert w["jain"] >= 0.999, w
    # each one's average over its own 8 s (what perftest reports)
    own = [sent[p] * 8 / 8 / 1e6 for p in rate]
    assert fabric_bench_ib.fb().jain(own) < 0.98, own
    # a sender that never sent: no interval
    assert fabric_bench_ib.common_window(lines, 99.5, 116.0, [1, 2, 4]) is None


def test_restore_reads_the_file_by_name_from_qemu_8_2(tmp_path):
    # 10.0 and 11.1 refuse -incoming fd: on a regular file; 7.2 has no file:
    def fake(name, line):
        path = tmp_path / name
        path.write_text(f"#!/bin/sh\necho '{line}'\n")
        path.chmod(0o755)
        return str(path)
    old = fake("q72", "QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18)")
    new = fake("q100", "QEMU emulator version 10.0.13 (Debian 1:10.0.13+ds-0+deb13u1)")
    assert ohcavm.qemu_version(old) == (7, 2)
    assert not ohcavm.reads_migration_file(old)
    assert ohcavm.reads_migration_file(new)
    assert ohcavm.reads_migration_file(fake("q111", "QEMU emulator version 11.1.1"))
    with pytest.raises(ohcavm.HarnessError, match="no version"):
        ohcavm.qemu_version(fake("none", "not a QEMU"))


def test_package_jobs_need_no_tree_builds(tmp_path, monkeypatch):
    """A job that tests what packages installed (tree_files=False, as
    test_packages.py's) gets none of the tree's driver and provider builds
    in its share and needs none of them to exist; every other job does. A
    VM whose guest may reboot (reboot=True) has QEMU without -no-reboot."""
    monkeypatch.setenv("OHCA_MODULE_DIR", str(tmp_path / "no-kernel-build"))
    monkeypatch.setenv("OHCA_PROVIDER_DIR", str(tmp_path / "no-userspace-build"))
    files = ohcavm.build_outputs("ohca", tree=False)
    assert sorted(files) == ["ohca_hostile_peer.py", "ohca_pyverbs.py"]
    assert all(os.path.isfile(p) for p in files.values())
    with pytest.raises(ohcavm.HarnessError, match="missing build outputs"):
        ohcavm.build_outputs("ohca")
    from harness.vm import VM
    for reboot in (False, True):
        c = object.__new__(ohcavm.Cluster)
        c.__dict__.update(append="", iommu=False, wire_proc=None, qemu="qemu", smp=2,
                          mem="2G", kernel="bzImage", initrd=None, rootfs="root.img",
                          migratable=False, images=None, capture=set(), link_layer="eth",
                          wire="user", extra_args=[], reboot=reboot)
        vm = object.__new__(VM)
        vm.__dict__.update(cluster=c, index=0, name="vm0", share=str(tmp_path),
                           qmp_path="q", console_path="c", netdev_args="user",
                           nic="virtio", mac="52:54:00:00:00:01", restore=None)
        assert ("-no-reboot" in vm.qemu_argv()) is not reboot


def test_scan_kernel_log():
    text = ("[    1.0] ohca 0000:00:03.0: ohca0 and eth0 ready\n"
            "[    2.0] WARNING: CPU: 0 PID: 1 at drivers/x.c:1 f+0x1/0x2\n"
            "[    2.1] Call Trace:\n"
            "[    3.0] BUG: KASAN: use-after-free in g\n")
    hits = ohcavm.scan_kernel_log(text)
    assert len(hits) == 3
    assert ohcavm.scan_kernel_log(text, allow=r"drivers/x\.c|Call Trace|KASAN") == []


def test_sanitizer_reports(tmp_path):
    """The ASan build's log files: a report counts, the coroutine warning
    and an empty log do not; a report on QEMU's stderr counts too."""
    d = str(tmp_path)
    assert ohcavm.sanitizer_reports(d) == []
    (tmp_path / "sanitizer.1").write_text(
        "==1==WARNING: ASan doesn't fully support makecontext/swapcontext functions\n")
    (tmp_path / "sanitizer.2").write_text("")
    assert ohcavm.sanitizer_reports(d) == []
    assert len(ohcavm.sanitizer_reports(d, "hw/ohca/ohca.c:12:3: runtime error: shift\n")) == 1
    (tmp_path / "sanitizer.3").write_text(
        "==3==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x6\n")
    reps = ohcavm.sanitizer_reports(d)
    assert len(reps) == 1 and reps[0].startswith("sanitizer.3")
    env = ohcavm.sanitizer_env(d)
    assert "halt_on_error=1" in env["ASAN_OPTIONS"]
    assert f"log_path={d}/sanitizer" in env["UBSAN_OPTIONS"]


def test_boot_stall_needs_an_idle_qemu(tmp_path, monkeypatch):
    """The boot watchdog restarts a VM whose console stayed silent for
    BOOT_STALL only while its QEMU idled (the debug kernel's hang), not one
    that used CPU all along (a slow boot on a loaded host); after a known
    hang's last line, its shorter limit holds whatever the CPU."""
    from harness.vm import VM
    clock = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    vm = object.__new__(VM)
    vm.name, vm.logdir = "vm0", str(tmp_path)
    vm.console_path = str(tmp_path / "console.log")
    (tmp_path / "console.log").write_text("[ 52.1] Run /sbin/ohca-init as init process\n")
    vm._booted, vm.boot_restarts, vm.console_from = False, 0, 0
    vm._console_len, vm._console_t, vm._console_cpu = 0, clock[0], 0.0
    cpu = [0.0]
    restarts = []
    vm.cpu_seconds = lambda: cpu[0]
    vm.alive = lambda: True
    vm.kill = lambda: None
    vm.start = lambda: restarts.append(clock[0])

    def watch(seconds, cpu_used):
        clock[0] += seconds
        cpu[0] += cpu_used
        vm._watch_boot(vm.console())

    watch(0, 0)  # the line is seen
    silence = VM.BOOT_STALL + 1
    watch(silence, silence * VM.BOOT_STALL_CPU * 2)  # busy: slow, not stuck
    assert restarts == []
    watch(silence, 0.5)  # idle since then: stuck
    assert len(restarts) == 1 and vm.boot_restarts == 1
    # the known hang: 30 s after its line, busy or not
    with open(vm.console_path, "a") as f:
        f.write("[ 0.5] Running RCU-tasks wait API self tests\n")
    watch(0, 0)
    watch(31, 31)
    assert len(restarts) == 2
    # init's first line: booted, never restarted again
    with open(vm.console_path, "a") as f:
        f.write("ohca-init: userspace up at 209.08 s\n")
    watch(0, 0)
    watch(silence * 3, 0)
    assert len(restarts) == 2 and vm._booted


def test_scan_kernel_log_debug_kernel():
    """Boot banners of the debug kernel are no problems, its reports are."""
    banners = ("[    2.2] rcu: \tRCU lockdep checking is enabled.\n"
               "[    0.0] Lock dependency validator: Copyright (c) 2006 Red Hat, Inc., Ingo Molnar\n"
               "[    0.0] kasan: KernelAddressSanitizer initialized (generic)\n"
               "[   74.8] kmemleak: Kernel memory leak detector initialized (mem pool available: 14942)\n"
               "[   74.8] kmemleak: Automatic memory scanning thread started\n"
               "[    9.0] KTAP version 1\n")
    assert ohcavm.scan_kernel_log(banners) == []
    reports = ("[ 9.1] WARNING: possible circular locking dependency detected\n"
               "[ 9.2] BUG: KASAN: slab-out-of-bounds in ohca_x+0x1/0x2 [ohca]\n"
               "[ 9.3] kmemleak: 2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)\n"
               "[ 9.4] ODEBUG: free active (active state 0) object type: timer_list\n"
               "[ 9.5] INFO: trying to register non-static key.\n")
    assert len(ohcavm.scan_kernel_log(reports)) == 5


@pytest.mark.retires_vm
def test_guest_kernel_warning_fails_the_run(vm_run):
    (r,) = vm_run("echo 'WARNING: CPU: 0 PID: 1 at ohca-harness-selftest' > /dev/kmsg",
                  preamble=False, timeout=200)
    assert r.exit_code == 0, r.report()
    assert not r.ok
    assert any("ohca-harness-selftest" in l for l in r.kernel_problems), r.report()


# The session's VM pool (ohcavm.Pool): the second job runs in the same boot,
# and nothing of the first job is left when it starts.
POOL_FIRST = r"""
cat /proc/sys/kernel/random/boot_id
setsid sleep 1000 </dev/null >/dev/null 2>&1 &
sleep 1000 </dev/null >/dev/null 2>&1 &
echo leftover >/tmp/ohca-pool-leftover
ip link set "$OHCA_IFACE" mtu 1400
"""
POOL_SECOND = r"""
cat /proc/sys/kernel/random/boot_id
echo "sleepers: $(pgrep -x sleep | wc -l)"
echo "tmp: $(ls /tmp | wc -l)"
echo "mtu: $(cat /sys/class/net/$OHCA_IFACE/mtu)"
echo "ohca loads: $(dmesg | grep -c 'ohca0' || true)"
"""


def test_pool_reuses_the_boot_and_cleans_up(vm_run):
    (first,) = vm_run(POOL_FIRST)
    assert first.ok, first.report()
    (second,) = vm_run(POOL_SECOND)
    assert second.ok, second.report()
    boot1 = first.output.split()[0]
    boot2 = second.output.split()[0]
    assert boot1 == boot2, "the second job booted a VM of its own"
    # both sleepers are gone, the one that left the job's session too
    assert "sleepers: 0" in second.output, second.output
    assert "tmp: 0" in second.output, second.output
    assert "mtu: 1500" in second.output, second.output


def test_pool_pairs_one_vm_jobs_with_two_vm_ones(vm_run, vm_pool):
    """OHCA_VM_POOL_PAIR=1 (debug-smoke): a one-VM job runs on vm0 of the
    two-VM cluster that the next two-VM job uses, in the same boot."""
    if not vm_pool.pair:
        pytest.skip("the pool pairs VMs only with OHCA_VM_POOL_PAIR=1")
    boot = "echo \"BOOT $OHCA_VM_INDEX $(cat /proc/sys/kernel/random/boot_id)\""
    (one,) = vm_run(boot, preamble=False)
    assert one.ok, one.report()
    both = vm_run(boot, nvms=2, preamble=False)
    assert all(r.ok for r in both), [r.report() for r in both]
    first = one.output.split("BOOT ", 1)[1].split()
    assert first[0] == "0", one.output
    assert both[0].output.split("BOOT ", 1)[1].split()[1] == first[1], \
        "the two-VM job booted VMs of its own"


# A VM restored from the session's boot images (tests/vm/harness/images.py)
# instead of booted: the pool's VM of the same shape is saved between two
# jobs, a new cluster of that shape restores it. The restored guest is the
# saved boot (same boot id), with this host's time, nothing of an earlier
# job left, and the driver loads and the port comes up as after a boot.
RESTORED = r"""
echo "boot: $(cat /proc/sys/kernel/random/boot_id)"
echo "clock: $(date +%s)"
echo "sleepers: $(pgrep -x sleep | wc -l)"
echo "tmp: $(ls /tmp | wc -l)"
echo "hostname: $(hostname)"
ibv_devinfo -d "$OHCA_IBDEV" | grep -q PORT_ACTIVE && echo "port: active"
ping -c 2 -W 10 "$OHCA_IP" >/dev/null && echo "ping: ok"
"""


def test_pool_restores_a_saved_vm(vm_run, vm_pool, vm_cluster, nic):
    if not vm_pool.images.enabled or vm_pool.pair:
        pytest.skip("boot images off (OHCA_VM_SNAPSHOTS=0) or one-VM jobs paired")
    (first,) = vm_run("cat /proc/sys/kernel/random/boot_id", preamble=False)
    assert first.ok, first.report()
    c = vm_cluster(nvms=1, images=vm_pool.images)
    vm_pool.images.save_from(vm_pool.clusters.values(), c)
    assert vm_pool.images.lookup(c.vms[0]), "the pool's VM was not saved"
    c.start_serving()
    restored = [e for e in vm_pool.images.log if e[0] == "restored" and e[1].startswith(c.logdir)]
    assert restored, vm_pool.images.log
    (r,) = c.run_job(RESTORED, timeout=300)
    assert r.ok, r.report()
    assert r.output.split("boot: ")[1].split()[0] == first.output.split()[0], "not the saved boot"
    clock = int(r.output.split("clock: ")[1].split()[0])
    # the guest's clock is set from the host's at the restore
    assert abs(clock - time.time()) < 600, (clock, time.time())
    for line in ("sleepers: 0", "tmp: 0", "hostname: vm0", "port: active", "ping: ok"):
        assert line in r.output, r.output
    # and the pool's VM, saved, takes the next job
    (again,) = vm_run("cat /proc/sys/kernel/random/boot_id", preamble=False)
    assert again.ok and again.output.split()[0] == first.output.split()[0], again.report()
