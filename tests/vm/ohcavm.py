#!/usr/bin/env python3
"""ohcavm: boot ohca test VMs under QEMU/TCG and run jobs in them.

Library (used by tests/integration) and command line:

    python3 tests/vm/ohcavm.py run [--vms N] [--nic ohca|virtio] -- 'command'
    python3 tests/vm/ohcavm.py shell [--nic ohca|virtio]

This file is the harness's face: the library's names and the command
line. The parts are modules of the harness/ package next to it:

    common.py   paths, the VMs' addresses, HarnessError, log
    host.py     locating the guest kernel, QEMU, the root image, the build
    checks.py   kernel-log and sanitizer checks of a run
    qmp.py      the QMP client
    wire.py     the wires between VMs (user, dgram, stream, faulty, switch)
                and the processes on them (FaultWire; SwitchFabric: one
                ohca-switch of fabric/switch, or two in a line)
    vm.py       one VM (QEMU, boot watch, share, sync, Result)
    cluster.py  the VMs of a run on one wire, jobs, barriers, serving
    pool.py     booted VMs reused across jobs

A VM boots Debian's kernel and initrd with the root file system built by
tests/vm/mkrootfs.sh (snapshot=on: nothing is written back), and gets a 9p
share (mount_tag "share", mounted on /share) that carries the job, the build
outputs (ohca_core.ko, ohca_ib.ko, the provider) and the results. The guest's init
(/sbin/ohca-init) runs /share/job.sh, writes /share/output.log,
/share/dmesg.txt and /share/exit-code, and powers off.

The job is: /share/env.sh and /share/ohca-lib.sh sourced, the preamble
(ohca_preamble: driver, provider, address, wait for the link/port) unless
disabled, then the user's script. See tests/vm/README.md.

Everything a run produces lands in its log directory (default
build/test-logs/<name>/): per VM console.log, qemu.log, cmdline.txt and
share/ (job.sh, output.log, dmesg.txt, exit-code, sync/).

Environment: OHCA_QEMU (default build/qemu/qemu-system-x86_64, or with
OHCA_QEMU_VARIANT=asan build/qemu-asan/qemu-system-x86_64), OHCA_KERNEL,
OHCA_INITRD ("none" for no initrd), OHCA_GUEST_KVER, OHCA_ROOTFS,
OHCA_DISTRO (the guest's release: trixie, the default, bookworm or sid),
OHCA_MODULE_DIR (where ohca_core.ko and ohca_ib.ko are; default
build/kernel-<distro>, build/kernel for bookworm, the host's release),
OHCA_PROVIDER_DIR (default build/userspace-<distro>, build/userspace for
bookworm), OHCA_CACHE, OHCA_NIC, OHCA_APPEND (extra kernel arguments),
OHCA_KLOG_ALLOW (regex of kernel-log lines not to count as problems), OHCA_IOMMU
(1: every VM behind a virtual IOMMU, as --iommu), OHCA_DGRAM
("qemu": QEMU opens the two-VM wire's sockets itself, with default buffers),
OHCA_WIRE (the fault wire's binary).
Only the standard library is used.
"""

import argparse
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# The library's names, as the tests and tools use them (ohcavm.X).
from harness.checks import (KLOG_PATTERNS, KLOG_RE, SANITIZER_RE,  # noqa: E402,F401
                            sanitizer_env, sanitizer_reports, scan_kernel_log)
from harness.cluster import Cluster  # noqa: E402
from harness.common import (DEFAULT_TIMEOUT, FIRMWARE_DIRS, GUEST_DIR, IBDEV,  # noqa: E402,F401
                            IFACE, IPS, LINK_LAYERS, MACS, MAX_VMS, MKROOTFS, NETDEV_ID,
                            NIC_ID, NIC_KINDS,
                            NODE_GUIDS, PREAMBLE_FAILED, PREFIX, RXE_IBDEV, TOP, HarnessError,
                            die_with_parent, format_guid, log, vm_ip, vm_mac, vm_node_guid)
from harness.host import (build_outputs, find_qemu, guest_kver,  # noqa: E402,F401
                          kernel_and_initrd, qemu_version, reads_migration_file,
                          rootfs_image)
from harness.pool import Pool  # noqa: E402,F401
from harness.qmp import QMP  # noqa: E402,F401
from harness.vm import VM, Result  # noqa: E402,F401
from harness.wire import (SO_RCVBUFFORCE, SO_SNDBUFFORCE, SWITCH_FLAGS,  # noqa: E402,F401
                          SWITCH_TOPOLOGY, WIRE_KINDS, WIRE_SOCKET_BUFFER, FaultWire,
                          OhcaSwitch, Relay, SwitchFabric, dgram_ends, dgram_fd_args,
                          free_udp_ports, set_wire_buffers, stream_ends, stream_fd_args,
                          stream_pair, switch_ends, switch_port_stats, switch_timeline,
                          timeline_window, user_ends,
                          wire_socket)

HERE = os.path.dirname(os.path.abspath(__file__))
_die_with_parent = die_with_parent


def run(scripts, nvms=1, nic=None, name="run", timeout=DEFAULT_TIMEOUT,
        preamble=True, **kw):
    """Boots the VMs, runs the job(s), returns a list of Result. (Cluster is
    looked up here at each call: conftest.py puts its debug-kernel class
    in its place.)"""
    with Cluster(name, nvms=nvms, nic=nic, **kw) as c:
        c.start(scripts, preamble=preamble)
        return c.wait(timeout)


# --------------------------------------------------------------------------
# CLI

def main(argv=None):
    ap = argparse.ArgumentParser(prog="ohcavm.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)

    def common(p):
        p.add_argument("--nic", choices=NIC_KINDS,
                       default=os.environ.get("OHCA_NIC", "ohca"),
                       help="NIC model (default ohca, env OHCA_NIC)")
        p.add_argument("--no-preamble", action="store_true",
                       help="do not load the driver/provider or configure eth0")
        p.add_argument("--logdir", help="log directory (default build/test-logs/cli-<cmd>)")
        p.add_argument("--qemu-arg", action="append", default=[],
                       help="extra QEMU argument (repeatable)")
        p.add_argument("--module-params", default="", help="ohca_core.ko parameters")
        p.add_argument("--link-layer", choices=LINK_LAYERS, default="eth",
                       help="the ohca port's link layer: eth (RoCEv2, default) or ib "
                       "(an InfiniBand port: no eth0 of ohca, the port stays INIT "
                       "until a subnet manager such as opensm makes it ACTIVE)")
        p.add_argument("--iommu", action="store_true", default=None,
                       help="q35 with a virtual Intel IOMMU in front of the device, the "
                       "guest's IOMMU on in strict mode (env OHCA_IOMMU=1)")
        p.add_argument("--trace", metavar="PATTERN",
                       help="QEMU trace events to turn on, e.g. 'ohca_*' (the device's, "
                       "qemu-device/trace-events); the lines go to each VM's qemu.log")

    p = sub.add_parser("run", help="run a command in fresh VM(s)")
    common(p)
    p.add_argument("--vms", type=int, choices=range(1, MAX_VMS + 1), default=1,
                   metavar="N", help=f"number of VMs, 1 to {MAX_VMS} (default 1)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    p.add_argument("--nics", help="NIC kind per VM, comma-separated "
                   "(e.g. ohca,rxe: vm1 is virtio-net + rdma_rxe)")
    p.add_argument("--mtu", type=int, help="eth0 MTU set by the preamble")
    p.add_argument("--wire", choices=("dgram", "stream", "switch"),
                   help="two VMs: dgram netdevs (default) or a lossless stream netdev pair; "
                   "two or more: ohca-switch (make fabric) in the link layer's mode, "
                   "eth or ib (the default for more than two)")
    p.add_argument("--switches", type=int, choices=(1, 2),
                   help="the switch wire: one switch (default) or two in a line, the "
                   "VMs split between them")
    p.add_argument("--switch-opt", action="append", default=[], metavar="KEY=VALUE",
                   help="an ohca-switch option of the switch wire (repeatable): "
                   + ", ".join(list(SWITCH_FLAGS) + ["split", "capture", "timeline"])
                   + "; e.g. line_rate=1000, pfc=3, ecn=20000:200000:0.1, vl_buffer=128, "
                   "capture=1 (the pcap in <logdir>/wire/swN/)")
    p.add_argument("--capture", action="store_true",
                   help="vm0's wire traffic to <logdir>/vm0/wire.pcap (filter-dump)")
    p.add_argument("--vm-script", action="append", default=[], metavar="I=FILE",
                   help="script file for VM I instead of the command (repeatable)")
    p.add_argument("command", nargs="*", help="shell command (after --)")

    p = sub.add_parser("shell", help="interactive shell in one VM")
    common(p)

    args = ap.parse_args(argv)
    if args.trace:
        args.qemu_arg += ["-trace", args.trace]
    # SIGTERM/SIGHUP unwind like Ctrl-C, so the Cluster context kills QEMU.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    # A fresh directory per invocation (several people may run VMs at once);
    # build/test-logs/cli-<cmd> links to the latest.
    if args.logdir:
        logdir = args.logdir
    else:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        logdir = os.path.join(TOP, "build/test-logs/cli", f"{args.cmd}-{stamp}-{os.getpid()}")
        os.makedirs(logdir)
        link = os.path.join(TOP, "build/test-logs", f"cli-{args.cmd}")
        try:
            if os.path.islink(link) or not os.path.exists(link):
                tmp = f"{link}.{os.getpid()}"
                os.symlink(os.path.relpath(logdir, os.path.dirname(link)), tmp)
                os.replace(tmp, link)
        except OSError:
            pass
    try:
        if args.cmd == "shell":
            with Cluster("cli-shell", nvms=1, nic=args.nic, logdir=logdir,
                         extra_args=args.qemu_arg, module_params=args.module_params,
                         link_layer=args.link_layer, iommu=args.iommu) as c:
                c._interactive_preamble = not args.no_preamble
                return c.interactive()

        command = " ".join(args.command)
        scripts = {i: command for i in range(args.vms)}
        for spec in args.vm_script:
            idx, _, path = spec.partition("=")
            with open(path) as f:
                scripts[int(idx)] = f.read()
        if not any(scripts.values()):
            ap.error("no command given (run -- 'command')")
        switch = {}
        for opt in args.switch_opt:
            key, eq, val = opt.partition("=")
            if not eq:
                ap.error(f"--switch-opt {opt}: KEY=VALUE expected")
            switch[key] = bool(int(val)) if key in ("capture", "timeline") else (
                int(val) if key == "split" else val)
        if args.switches:
            switch["switches"] = args.switches
        t0 = time.monotonic()
        results = run(scripts, nvms=args.vms, nic=args.nic, name="cli-run",
                      timeout=args.timeout, preamble=not args.no_preamble,
                      logdir=logdir, extra_args=args.qemu_arg,
                      module_params=args.module_params,
                      nics=args.nics.split(",") if args.nics else None,
                      mtu=args.mtu, capture=args.capture, wire=args.wire,
                      link_layer=args.link_layer, iommu=args.iommu,
                      switch=switch or None)
    except HarnessError as e:
        log(f"error: {e}")
        return 2
    except KeyboardInterrupt:
        log("interrupted; QEMU stopped")
        return 130
    rc = 0
    for r in results:
        print(f"===== {r.name}: exit code {r.exit_code}"
              + (f", job started {r.boot_to_job:.1f}s after QEMU start" if r.boot_to_job else "")
              + " =====")
        sys.stdout.write(r.output)
        if r.output and not r.output.endswith("\n"):
            print()
        if r.kernel_problems or r.timed_out or r.error or r.sanitizer:
            print(r.report(), file=sys.stderr)
        if rc == 0:
            if r.timed_out:
                rc = 124
            elif r.exit_code is None:
                rc = 1
            elif r.exit_code != 0:
                rc = r.exit_code
            elif r.kernel_problems or r.sanitizer:
                rc = 1
    log(f"done in {time.monotonic() - t0:.1f}s; logs in {logdir}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
