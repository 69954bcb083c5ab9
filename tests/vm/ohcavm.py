#!/usr/bin/env python3
"""ohcavm: boot ohca test VMs under QEMU/TCG and run jobs in them.

Library (used by tests/integration) and command line:

    python3 tests/vm/ohcavm.py run [--vms 1|2] [--nic ohca|virtio] -- 'command'
    python3 tests/vm/ohcavm.py shell [--nic ohca|virtio]

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
OHCA_MODULE_DIR (where ohca_core.ko and ohca_ib.ko are; default
build/kernel), OHCA_PROVIDER_DIR (default
build/userspace), OHCA_CACHE, OHCA_NIC, OHCA_APPEND (extra kernel arguments),
OHCA_KLOG_ALLOW (regex of kernel-log lines not to count as problems), OHCA_DGRAM
("qemu": QEMU opens the two-VM wire's sockets itself, with default buffers).
Only the standard library is used.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
GUEST_DIR = os.path.join(HERE, "guest")
MKROOTFS = os.path.join(HERE, "mkrootfs.sh")

DEFAULT_TIMEOUT = 300
PREAMBLE_FAILED = 90  # job exit code when the preamble fails

# The wire: VM i gets these (index 0 and 1).
IPS = ["10.77.0.1", "10.77.0.2"]
MACS = ["02:00:00:00:00:01", "02:00:00:00:00:02"]
NODE_GUIDS = [0x0002C9FFFE000001, 0x0002C9FFFE000002]
PREFIX = 24
IBDEV = "ohca0"
IFACE = "eth0"
NETDEV_ID = "n0"
FIRMWARE_DIRS = ["/usr/share/qemu", "/usr/share/seabios", "/usr/lib/ipxe/qemu"]
NIC_ID = "nic0"
RXE_IBDEV = "rxe0"
# ohca: the device; virtio: virtio-net only; rxe: virtio-net + rdma_rxe
NIC_KINDS = ("ohca", "virtio", "rxe")

# Kernel log lines that make a run fail (matched case-sensitively).
KLOG_PATTERNS = [
    r"WARNING:",
    r"BUG:",
    r"\bOops\b",
    r"general protection fault",
    r"KASAN",
    r"UBSAN",
    # lockdep's own reports (its boot banner "RCU lockdep checking is
    # enabled" and "lockdep: ..." info lines are not problems)
    r"possible deadlock",
    r"INFO: trying to register non-static key",
    r"turning off the locking correctness validator",
    r"possible circular locking",
    r"possible recursive locking",
    r"inconsistent lock state",
    r"suspicious RCU usage",
    r"Call Trace",
    r"Kernel panic",
    r"kernel BUG at",
    r"DEBUG_LOCKS_WARN_ON",
    r"blocked for more than",
    r"unreferenced object",  # kmemleak
    r"suspected memory leak",  # kmemleak scan summary
    r"ODEBUG:",  # debug objects
]
KLOG_RE = re.compile("|".join(KLOG_PATTERNS))


class HarnessError(Exception):
    """A setup problem on the host (missing build output, QEMU, ...)."""


def log(msg):
    print(f"ohcavm: {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Locating the pieces

def guest_kver():
    if os.environ.get("OHCA_GUEST_KVER"):
        return os.environ["OHCA_GUEST_KVER"]
    best = None
    for name in os.listdir("/boot"):
        m = re.fullmatch(r"vmlinuz-(.*-amd64)", name)
        if m and os.path.isdir(f"/lib/modules/{m.group(1)}"):
            v = m.group(1)
            key = [int(x) if x.isdigit() else x for x in re.split(r"[.-]", v)]
            if best is None or key > best[0]:
                best = (key, v)
    if best is None:
        raise HarnessError("no guest kernel: install linux-image-amd64")
    return best[1]


def kernel_and_initrd():
    kernel = os.environ.get("OHCA_KERNEL")
    initrd = os.environ.get("OHCA_INITRD")
    if not kernel:
        kver = guest_kver()
        kernel = f"/boot/vmlinuz-{kver}"
        if initrd is None:
            initrd = f"/boot/initrd.img-{kver}"
    if initrd in ("", "none"):
        initrd = None
    for path in (kernel, initrd):
        if path and not os.access(path, os.R_OK):
            raise HarnessError(f"{path} not readable (run as root?)")
    return kernel, initrd


def find_qemu(nic):
    env = os.environ.get("OHCA_QEMU")
    if env:
        path = env if os.path.isabs(env) else os.path.join(TOP, env)
        if not os.access(path, os.X_OK):
            raise HarnessError(f"OHCA_QEMU={env}: not an executable")
        return path
    variant = os.environ.get("OHCA_QEMU_VARIANT", "default")
    if variant == "asan":
        built = os.path.join(TOP, "build/qemu-asan/qemu-system-x86_64")
        if not os.access(built, os.X_OK):
            raise HarnessError(f"{built} missing: build it with "
                               "qemu-device/build.sh --asan (make qemu-asan)")
        return built
    if variant not in ("default", ""):
        raise HarnessError(f"OHCA_QEMU_VARIANT={variant}: expected default or asan")
    built = os.path.join(TOP, "build/qemu/qemu-system-x86_64")
    if os.access(built, os.X_OK):
        return built
    if nic == "ohca":
        raise HarnessError(f"{built} missing: build QEMU with the ohca device "
                           "(make qemu) or set OHCA_QEMU")
    system = shutil.which("qemu-system-x86_64")
    if not system:
        raise HarnessError(f"{built} missing and no qemu-system-x86_64 in PATH")
    log(f"note: {built} missing; using {system} (fine for --nic virtio)")
    return system


def rootfs_image(build=True):
    env = os.environ.get("OHCA_ROOTFS")
    if env:
        if not os.path.isfile(env):
            raise HarnessError(f"OHCA_ROOTFS={env}: no such file")
        return env
    p = subprocess.run(["bash", MKROOTFS, "--print-path"],
                       capture_output=True, text=True)
    path = p.stdout.strip()
    if p.returncode == 0 and os.path.isfile(path):
        return path
    if not path:
        raise HarnessError(f"mkrootfs.sh --print-path failed: {p.stderr.strip()}")
    if not build:
        raise HarnessError(f"root file system {path} not built: run make rootfs")
    log("root file system not built yet; running tests/vm/mkrootfs.sh")
    b = subprocess.run(["bash", MKROOTFS], stdout=sys.stderr)
    if b.returncode != 0 or not os.path.isfile(path):
        raise HarnessError("tests/vm/mkrootfs.sh failed")
    return path


def build_outputs(nic):
    """Files to put into each share: {name in share: host path}."""
    moddir = os.environ.get("OHCA_MODULE_DIR", os.path.join(TOP, "build/kernel"))
    provdir = os.environ.get("OHCA_PROVIDER_DIR", os.path.join(TOP, "build/userspace"))
    files = {
        # the driver: the PCI/Ethernet core and the RDMA driver on top
        "ohca_core.ko": os.path.join(moddir, "ohca_core.ko"),
        "ohca_ib.ko": os.path.join(moddir, "ohca_ib.ko"),
        "libohca-rdmav34.so": os.path.join(provdir, "libohca-rdmav34.so"),
        "ohca.driver": os.path.join(provdir, "ohca.driver"),
    }
    # Guest test programs: copied when built; the tests that run them check.
    for prog in ("ohca_ctx_test", "ohca_rc_loopback", "ohca_rc_nosyscall",
                 "ohca_rc_negative", "ohca_rc_integrity", "ohca_hostile",
                 "ohca_verbs_ex", "ohca_holder"):
        path = os.path.join(provdir, prog)
        if os.path.isfile(path):
            files[prog] = path
    # Guest scripts from tests/vm/guest.
    files["ohca_hostile_peer.py"] = os.path.join(GUEST_DIR, "ohca_hostile_peer.py")
    # The firmware interface for guest-side Python tools (ohca-cmdtest),
    # generated from the headers; cheap, so brought up to date here (make
    # regenerates it only when a header is newer): a stale copy tested the
    # new driver against the old opcodes.
    fwif = os.path.join(TOP, "build/firmware-interface/ohca_fwif.py")
    subprocess.run(["make", "-s", "-C", os.path.join(TOP, "firmware-interface"), "python"],
                   stdout=sys.stderr, check=False)
    files["ohca_fwif.py"] = fwif
    out = {}
    missing = []
    for name, path in files.items():
        if os.path.isfile(path):
            out[name] = path
        else:
            missing.append(path)
    if missing and nic == "ohca":
        raise HarnessError("missing build outputs for --nic ohca: "
                           + ", ".join(missing) + " (make kernel userspace)")
    return out


def _die_with_parent():
    """preexec_fn: QEMU gets SIGTERM when the harness process dies, so an
    interrupted test run leaves no VM behind."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 (best effort)
        pass


# The wire's sockets: the harness opens both ends of a two-VM dgram wire
# itself and hands them to QEMU as file descriptors (local.type=fd), with
# receive and send buffers of this size. QEMU's own sockets get the host's
# default receive buffer (net.core.rmem_default, 208 KiB here: 92 frames of
# 1 KiB, 25 of 4 KiB), less than the requester's window puts on the wire, so
# a burst overflowed it and every drop cost an ACK timeout (issue 12).
# 16 MiB (the kernel doubles it for its bookkeeping) holds 1024 frames of
# 9 KiB, the requester's largest window. OHCA_DGRAM=qemu lets QEMU open its
# own sockets again (the old wire, for comparison).
WIRE_SOCKET_BUFFER = 16 << 20
SO_SNDBUFFORCE = getattr(socket, "SO_SNDBUFFORCE", 32)
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
_buffer_note = []


def set_wire_buffers(s):
    """WIRE_SOCKET_BUFFER for both directions of s: SO_*BUFFORCE (root, or
    CAP_NET_ADMIN), else SO_*BUF, which net.core.rmem_max/wmem_max cap."""
    for force, plain in ((SO_RCVBUFFORCE, socket.SO_RCVBUF),
                         (SO_SNDBUFFORCE, socket.SO_SNDBUF)):
        try:
            s.setsockopt(socket.SOL_SOCKET, force, WIRE_SOCKET_BUFFER)
        except PermissionError:
            s.setsockopt(socket.SOL_SOCKET, plain, WIRE_SOCKET_BUFFER)


def wire_socket():
    """A UDP socket on 127.0.0.1 with WIRE_SOCKET_BUFFER for both
    directions: SO_*BUFFORCE (root, or CAP_NET_ADMIN), else SO_*BUF, which
    net.core.rmem_max/wmem_max cap (said once). The caller connects it:
    QEMU sends on an fd netdev with send(), to the connected peer."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.bind(("127.0.0.1", 0))
        set_wire_buffers(s)
        got = s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) // 2
        if got < WIRE_SOCKET_BUFFER and not _buffer_note:
            _buffer_note.append(got)
            log(f"note: not allowed to force socket buffers (not root): the wire's "
                f"receive buffer is {got} bytes (net.core.rmem_max), not "
                f"{WIRE_SOCKET_BUFFER}; bursts may be dropped (sysctl -w "
                f"net.core.rmem_max={WIRE_SOCKET_BUFFER} net.core.wmem_max="
                f"{WIRE_SOCKET_BUFFER} lifts it)")
        return s
    except BaseException:
        s.close()
        raise


def stream_pair():
    """The two ends of a stream wire: a connected AF_UNIX stream socket
    pair with WIRE_SOCKET_BUFFER for both directions. QEMU's stream netdev
    frames each packet with its length and reads up to 68 KiB per call, so
    a burst reaches the device in one main-loop pass instead of one pass
    per frame (its dgram netdev reads one datagram per pass); and it does
    not drop (a full socket holds the sender back), like a lossless RoCE
    fabric."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    for s in (a, b):
        set_wire_buffers(s)
    return a, b


def stream_fd_args(sock):
    """QEMU -netdev arguments for a stream netdev on an already connected
    socket."""
    return f"stream,server=off,addr.type=fd,addr.str={sock.fileno()}"


def dgram_fd_args(sock):
    """QEMU -netdev arguments for an fd dgram netdev on sock."""
    return f"dgram,local.type=fd,local.str={sock.fileno()}"


def free_udp_ports(n):
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def format_guid(guid):
    """A node GUID as ibv_devinfo prints it: xxxx:xxxx:xxxx:xxxx."""
    h = f"{guid:016x}"
    return ":".join(h[i:i + 4] for i in range(0, 16, 4))


# A sanitizer build of QEMU (qemu-device/build.sh --asan) stops at its first
# report and writes it to <vm logdir>/sanitizer.<pid>; any such file, or a
# report on QEMU's stderr, fails the run. The options are harmless for an
# uninstrumented QEMU. Leak checking is off: QEMU itself leaks at exit, the
# engine's leaks are the fuzzers' and unit tests' business.
SANITIZER_RE = re.compile(r"ERROR: AddressSanitizer|runtime error:|ERROR: UndefinedBehaviorSanitizer"
                          r"|SUMMARY: (Address|UndefinedBehavior)Sanitizer")


def sanitizer_env(logdir):
    path = os.path.join(logdir, "sanitizer")
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = ("halt_on_error=1:abort_on_error=1:detect_leaks=0:"
                           f"print_stacktrace=1:log_path={path}")
    env["UBSAN_OPTIONS"] = f"halt_on_error=1:abort_on_error=1:print_stacktrace=1:log_path={path}"
    return env


def sanitizer_reports(logdir, qemu_log=""):
    """Texts of the sanitizer reports of one VM (empty list: clean)."""
    out = []
    try:
        names = sorted(os.listdir(logdir))
    except FileNotFoundError:
        names = []
    for name in names:
        if name.startswith("sanitizer."):
            with open(os.path.join(logdir, name), errors="replace") as f:
                text = f.read()
            # ASan's makecontext warning (QEMU's coroutines) is no report
            if SANITIZER_RE.search(text):
                out.append(f"{name}:\n{text}")
    if SANITIZER_RE.search(qemu_log):
        out.append("qemu.log:\n" + qemu_log[-4000:])
    return out


def scan_kernel_log(text, allow=None):
    """Lines of a console or dmesg text that indicate a kernel problem."""
    allow_re = re.compile(allow) if allow else None
    hits = []
    for line in text.splitlines():
        if KLOG_RE.search(line) and not (allow_re and allow_re.search(line)):
            hits.append(line.rstrip())
    return hits


# --------------------------------------------------------------------------
# QMP

class QMP:
    """Minimal QMP client: one connection per command."""

    def __init__(self, path):
        self.path = path

    def _recv(self, f):
        while True:
            line = f.readline()
            if not line:
                raise HarnessError("QMP connection closed")
            msg = json.loads(line)
            if "event" in msg:
                continue
            return msg

    def execute(self, command, timeout=10, **arguments):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(self.path)
            f = s.makefile("rw")
            self._recv(f)  # greeting
            f.write(json.dumps({"execute": "qmp_capabilities"}) + "\n")
            f.flush()
            self._recv(f)
            req = {"execute": command}
            if arguments:
                req["arguments"] = arguments
            f.write(json.dumps(req) + "\n")
            f.flush()
            msg = self._recv(f)
            if "error" in msg:
                raise HarnessError(f"QMP {command} failed: {msg['error']}")
            return msg.get("return")


# --------------------------------------------------------------------------
# VMs

class Result:
    """What one VM's job produced."""

    def __init__(self, vm):
        self.name = vm.name
        self.logdir = vm.logdir
        self.exit_code = None       # None: no result (timeout or crash)
        self.timed_out = False
        self.output = ""
        self.qemu_log = ""
        self.console = ""
        self.dmesg = ""
        self.kernel_problems = []
        self.error = None           # harness-level description of a failure
        self.sanitizer = []         # sanitizer reports of QEMU (ASan build)
        self.boot_to_job = None     # s from QEMU start to the job starting
        self.wire_stats = None      # the fault wire's statistics (Pool jobs)
        self.wire_pcap = None       # its capture, if the job asked (Pool jobs)
        self.duration = None        # s from QEMU start to the result
        self.boot_restarts = vm.boot_restarts  # QEMU restarts after a stalled boot

    @property
    def ok(self):
        return (self.exit_code == 0 and not self.timed_out and not self.sanitizer
                and not self.kernel_problems and self.error is None)

    def console_tail(self, n=40):
        return "\n".join(self.console.splitlines()[-n:])

    def summary(self):
        parts = [f"{self.name}: exit code {self.exit_code}"]
        if self.timed_out:
            parts.append("TIMED OUT")
        if self.error:
            parts.append(self.error)
        if self.kernel_problems:
            parts.append(f"{len(self.kernel_problems)} kernel log problem(s)")
        if self.sanitizer:
            parts.append(f"{len(self.sanitizer)} QEMU sanitizer report(s)")
        if self.boot_restarts:
            parts.append(f"boot restarted {self.boot_restarts}x after a stall")
        return ", ".join(parts)

    def report(self):
        """Human-readable failure report (output, kernel problems, console)."""
        lines = [self.summary(), f"  logs: {self.logdir}"]
        if self.kernel_problems:
            lines.append("  kernel log problems:")
            lines += ["    " + l for l in self.kernel_problems[:40]]
        for rep in self.sanitizer:
            lines.append("  --- QEMU sanitizer report ---")
            lines += ["    " + l for l in rep.splitlines()[:60]]
        lines.append("  --- job output ---")
        lines += ["  " + l for l in self.output.splitlines()[-80:]]
        if self.exit_code is None or self.timed_out or self.error:
            lines.append("  --- console tail ---")
            lines += ["  " + l for l in self.console_tail(40).splitlines()]
            if self.qemu_log.strip():
                lines.append("  --- QEMU output ---")
                lines += ["  " + l for l in self.qemu_log.splitlines()[-20:]]
        return "\n".join(lines)


class VM:
    """One QEMU process. Create through Cluster."""

    # A boot that prints nothing for this long before init runs is stuck,
    # not slow: the debug kernel under TCG on a loaded host sometimes idles
    # for good at its early RCU-tasks self test (the boot CPU halted with
    # its timer ticking; seen 2026-12-01, here and in CI). QEMU is then
    # restarted, at most BOOT_RETRIES times per VM; the job, already in the
    # share, runs in the new boot.
    BOOT_STALL = float(os.environ.get("OHCA_BOOT_STALL", "150"))
    BOOT_RETRIES = 4
    # That stall's last line: the next one follows within a second of guest
    # time when the boot goes on, so 30 s of silence after it is the hang.
    KNOWN_STALLS = (("Running RCU-tasks wait API self tests\n", 30),)

    def __init__(self, cluster, index):
        self.cluster = cluster
        self.index = index
        self.name = f"vm{index}"
        self.nic = cluster.nics[index]
        self.ip = IPS[index]
        self.mac = MACS[index]
        self.node_guid = NODE_GUIDS[index]
        self.logdir = os.path.join(cluster.logdir, self.name)
        self.share = os.path.join(self.logdir, "share")
        self.sync = os.path.join(self.share, "sync")
        self.console_path = os.path.join(self.logdir, "console.log")
        self.capture_path = os.path.join(self.logdir, "wire.pcap")
        self.qmp_path = os.path.join(cluster.sockdir, f"{self.name}.qmp")
        self.qmp = QMP(self.qmp_path)
        self.proc = None
        self.t_start = None
        self.t_job = None
        self.netdev_args = None
        self.netdev_sock = None  # the wire's socket QEMU gets (dgram fd)
        self.result = None
        self.console_from = 0  # where this job's part of console.log starts
        self.t_dispatch = None
        self.jobs = 0
        self.boot_restarts = 0
        self.serving = False  # a serving VM's init waits for jobs
        self._booted = False
        self._console_len = 0
        self._console_t = None

    # -- setup --
    def _env(self):
        peers = [IPS[i] for i in range(self.cluster.nvms) if i != self.index]
        env = {
            "OHCA_VM_INDEX": str(self.index),
            "OHCA_VM_NAME": self.name,
            "OHCA_NUM_VMS": str(self.cluster.nvms),
            "OHCA_NIC": self.nic,
            "OHCA_IFACE": IFACE,
            "OHCA_IBDEV": RXE_IBDEV if self.nic == "rxe" else IBDEV,
            "OHCA_IP": self.ip,
            "OHCA_PREFIX": str(PREFIX),
            "OHCA_PEER_IP": peers[0] if peers else "",
            "OHCA_MAC": self.mac,
            "OHCA_NODE_GUID": f"0x{self.node_guid:016x}",
            "OHCA_MODULE_PARAMS": self.cluster.module_params,
            "OHCA_MTU": str(self.cluster.mtu or ""),
        }
        return ("".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())
                + self.cluster.env_tail)

    def _new_share(self):
        """An empty log dir with the share's identity: hostname and env.sh."""
        if os.path.exists(self.logdir):
            shutil.rmtree(self.logdir)
        os.makedirs(self.sync)
        self._write_env()

    def _write_env(self):
        with open(os.path.join(self.share, "hostname"), "w") as f:
            f.write(self.name + "\n")
        with open(os.path.join(self.share, "env.sh"), "w") as f:
            f.write(self._env())

    def prepare(self, script, preamble, files, job_file=None):
        """The share of a job: a new one, or (job_file given) the serving
        VM's, whose job.sh is then written as job_file."""
        if job_file is None:
            self._new_share()
        else:
            self._write_env()
        shutil.copy(os.path.join(GUEST_DIR, "ohca-lib.sh"), self.share)
        for name, path in files.items():
            shutil.copy2(path, os.path.join(self.share, name))
        if script is None:  # interactive: init runs preamble.sh, then a shell
            with open(os.path.join(self.share, "preamble.sh"), "w") as f:
                f.write(". /share/env.sh\n. /share/ohca-lib.sh\n"
                        "echo '. /share/env.sh; . /share/ohca-lib.sh' >>/root/.bashrc\n"
                        + ("ohca_preamble\n" if preamble else ""))
            return
        job = ["#!/bin/bash",
               "# generated by tests/vm/ohcavm.py",
               ". /share/env.sh",
               ". /share/ohca-lib.sh",
               "cd /share"]
        if preamble:
            job += ["if ! ohca_preamble; then",
                    "    echo 'ohca: preamble failed' >&2",
                    f"    exit {PREAMBLE_FAILED}",
                    "fi"]
        job += ["# --- job ---", script, ""]
        with open(os.path.join(self.share, job_file or "job.sh"), "w") as f:
            f.write("\n".join(job))

    # Files a serving VM's share keeps between jobs; everything else in it
    # belongs to one job and is removed before the next.
    SERVE_KEEP = ("serve", "hostname")

    def prepare_serve(self):
        """A share for a serving VM (ohca-init runs each job.sh dropped in)."""
        self._new_share()
        open(os.path.join(self.share, "serve"), "w").close()
        self.jobs = 0

    def dispatch(self, script, preamble, files):
        """Hands a serving VM its next job: the last job's files removed,
        this one's written, job.sh last (renamed into place)."""
        for name in os.listdir(self.share):
            if name in self.SERVE_KEEP:
                continue
            path = os.path.join(self.share, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
        os.makedirs(self.sync)
        self.console_from = len(self.console())
        self.t_job = None
        self.t_dispatch = time.monotonic()
        self.jobs += 1
        self.prepare(script, preamble, files, job_file="job.sh.tmp")
        os.rename(os.path.join(self.share, "job.sh.tmp"), os.path.join(self.share, "job.sh"))

    def unfit(self):
        return os.path.exists(os.path.join(self.share, "unfit"))

    def qemu_argv(self, interactive=False):
        c = self.cluster
        append = ("root=/dev/vda rw init=/sbin/ohca-init console=ttyS0 "
                  "net.ifnames=0 panic=-1 " + c.append).strip()
        argv = [c.qemu, "-name", self.name,
                "-accel", "tcg", "-cpu", "max", "-smp", str(c.smp), "-m", c.mem,
                "-nographic", "-nodefaults", "-no-reboot",
                "-kernel", c.kernel]
        # Debian spreads the firmware over several packages' directories.
        for d in FIRMWARE_DIRS:
            if os.path.isdir(d):
                argv += ["-L", d]
        if c.initrd:
            argv += ["-initrd", c.initrd]
        argv += ["-append", append,
                 "-drive", f"file={c.rootfs},if=virtio,format=raw,snapshot=on",
                 "-virtfs", f"local,path={self.share},mount_tag=share,security_model=none",
                 "-qmp", f"unix:{self.qmp_path},server=on,wait=off"]
        if interactive:
            argv += ["-chardev", f"stdio,id=ser0,mux=on,signal=off,logfile={self.console_path}",
                     "-serial", "chardev:ser0", "-mon", "chardev=ser0"]
        else:
            argv += ["-chardev", f"file,id=ser0,path={self.console_path}",
                     "-serial", "chardev:ser0"]
        argv += ["-netdev", f"{self.netdev_args},id={NETDEV_ID}"]
        if self.index in c.capture:
            # Both directions of the netdev, before the NIC sees them.
            argv += ["-object", f"filter-dump,id=cap0,netdev={NETDEV_ID},"
                     f"file={self.capture_path}"]
        if self.nic == "ohca":
            dev = (f"ohca,id={NIC_ID},netdev={NETDEV_ID},mac={self.mac},"
                   f"node-guid=0x{self.node_guid:016x}")
        else:
            dev = f"virtio-net-pci,id={NIC_ID},netdev={NETDEV_ID},mac={self.mac}"
        argv += ["-device", dev] + c.extra_args
        return argv

    def start(self, interactive=False):
        argv = self.qemu_argv(interactive)
        with open(os.path.join(self.logdir, "cmdline.txt"), "w") as f:
            f.write(shlex.join(argv) + "\n")
        self.t_start = time.monotonic()
        self._booted, self._console_len, self._console_t = False, 0, self.t_start
        self.serving = False
        fds = (self.netdev_sock.fileno(),) if self.netdev_sock else ()
        if interactive:
            self.proc = subprocess.Popen(argv, preexec_fn=_die_with_parent,
                                         env=sanitizer_env(self.logdir), pass_fds=fds)
        else:
            self.qemu_log = open(os.path.join(self.logdir, "qemu.log"), "w")
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                         stdout=self.qemu_log,
                                         stderr=subprocess.STDOUT,
                                         start_new_session=True,
                                         preexec_fn=_die_with_parent,
                                         env=sanitizer_env(self.logdir), pass_fds=fds)

    # -- while running --
    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def has_result(self):
        return os.path.exists(os.path.join(self.share, "exit-code"))

    def console(self):
        try:
            with open(self.console_path, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def _note_progress(self):
        text = self.console()
        if self.t_job is None and "ohca-init: job start" in text[self.console_from:]:
            self.t_job = time.monotonic()
        if not self._booted:
            self._watch_boot(text)
        if not self.serving and "ohca-init: serving jobs" in text:
            self.serving = True

    def _stall_limit(self, text):
        for last_line, limit in self.KNOWN_STALLS:
            if text.replace("\r", "").endswith(last_line):
                return min(limit, self.BOOT_STALL)
        return self.BOOT_STALL

    def _watch_boot(self, text):
        """Restarts QEMU when the boot stalls (BOOT_STALL)."""
        now = time.monotonic()
        if "ohca-init: userspace up" in text:
            self._booted = True
        elif len(text) != self._console_len:
            self._console_len, self._console_t = len(text), now
        elif (now - self._console_t > self._stall_limit(text) and self.alive()
              and self.boot_restarts < self.BOOT_RETRIES):
            self.boot_restarts += 1
            stalled = os.path.join(self.logdir, f"console-stalled-{self.boot_restarts}.log")
            log(f"{self.name}: boot stalled (no console output for {now - self._console_t:.0f} s "
                f"before init; console kept in {stalled}): restarting QEMU")
            self.kill()
            shutil.copy2(self.console_path, stalled)
            self.console_from = 0  # the new QEMU starts console.log afresh
            self.start()

    def wait_mark(self, name, timeout=120):
        """Waits for the guest's ohca_mark NAME (sync/guest.NAME)."""
        path = os.path.join(self.sync, f"guest.{name}")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if os.path.exists(path):
                return
            if not self.alive() or self.has_result():
                raise HarnessError(f"{self.name} finished before mark '{name}'\n"
                                   + self.collect().report())
            self._note_progress()
            time.sleep(0.2)
        raise HarnessError(f"{self.name}: no mark '{name}' within {timeout}s\n"
                           + "console tail:\n" + "\n".join(self.console().splitlines()[-30:]))

    def post(self, name):
        """Creates sync/host.NAME for the guest's ohca_wait_host NAME."""
        with open(os.path.join(self.sync, f"host.{name}"), "w"):
            pass

    def set_link(self, up):
        """QMP set_link on the NIC's netdev."""
        self.qmp.execute("set_link", name=NETDEV_ID, up=bool(up))

    def kill(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            self.proc.terminate()
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def collect(self):
        r = Result(self)
        r.console = self.console()[self.console_from:]
        share = self.share
        try:
            with open(os.path.join(share, "exit-code")) as f:
                r.exit_code = int(f.read().strip())
        except (FileNotFoundError, ValueError):
            pass
        for attr, fname in (("output", "share/output.log"), ("dmesg", "share/dmesg.txt"),
                            ("qemu_log", "qemu.log")):
            try:
                with open(os.path.join(self.logdir, fname), errors="replace") as f:
                    setattr(r, attr, f.read())
            except FileNotFoundError:
                pass
        allow = self.cluster.klog_allow
        probs = scan_kernel_log(r.console, allow)
        for line in scan_kernel_log(r.dmesg, allow):
            # dmesg lines repeat console lines; keep those not already seen
            body = re.sub(r"^\[[ 0-9.]+\]\s*", "", line)
            if not any(body in p for p in probs):
                probs.append(line)
        r.kernel_problems = probs
        r.sanitizer = sanitizer_reports(self.logdir, r.qemu_log)
        if self.t_job is not None and self.t_start is not None:
            r.boot_to_job = self.t_job - self.t_start
        if r.exit_code is None and r.error is None:
            if self.proc is not None and self.proc.poll() is not None:
                r.error = f"QEMU exited ({self.proc.returncode}) without a result"
        return r


class Cluster:
    """One or two VMs on one wire. Use as a context manager:

        with Cluster("mytest", nvms=2, nic="virtio") as c:
            c.start({0: "server script", 1: "client script"})
            results = c.wait(timeout=300)

    or simply ohcavm.run(...). Leaving the context kills any QEMU left.
    """

    # shell lines appended to each VM's env.sh, which the guest's init
    # sources at boot and every job sources again
    env_tail = ""

    def __init__(self, name="run", nvms=1, nic=None, logdir=None, smp=2,
                 mem="2G", module_params="", extra_args=None, append=None,
                 klog_allow=None, wire=None, extra_files=None, nics=None,
                 mtu=None, capture=()):
        if nvms not in (1, 2):
            raise HarnessError("nvms must be 1 or 2")
        self.nic = nic or os.environ.get("OHCA_NIC", "ohca")
        # nics: one NIC kind per VM (default: nic for all). "rxe" is
        # virtio-net with Linux soft-RoCE (rxe0) on it, the interop peer.
        self.nics = list(nics) if nics else [self.nic] * nvms
        if len(self.nics) != nvms:
            raise HarnessError("nics: one entry per VM expected")
        for n in self.nics:
            if n not in NIC_KINDS:
                raise HarnessError(f"unknown nic '{n}' ({'|'.join(NIC_KINDS)})")
        # mtu: eth0's MTU set by the preamble (None: the driver's default)
        self.mtu = mtu
        # capture: VM indices whose netdev traffic goes to vmN/wire.pcap
        # (QEMU filter-dump); True means VM 0 (it sees both directions)
        self.capture = {0} if capture is True else set(capture or ())
        self.nvms = nvms
        self.logdir = os.path.abspath(logdir or os.path.join(TOP, "build/test-logs", name))
        self.smp = smp
        self.mem = mem
        self.module_params = module_params
        self.extra_args = list(extra_args or [])
        self.append = append if append is not None else os.environ.get("OHCA_APPEND", "")
        self.klog_allow = klog_allow or os.environ.get("OHCA_KLOG_ALLOW")
        # wire: "dgram", "stream" (two VMs), "user", or a dict of faults for the fault wire
        # (tests/wire/ohca_wire between the two VMs' dgram netdevs), e.g.
        # {"loss": 0.05, "dup": 0.01, "reorder": 0.02, "corrupt": 0.01,
        #  "seed": 1}; see start_fault_wire().
        self.fault_wire = None
        self.wire_proc = None
        self.wire_stats = None
        if isinstance(wire, dict):
            self.fault_wire = dict(wire)
            wire = "faulty"
        self.wire = wire or ("dgram" if nvms == 2 else "user")
        need = "ohca" if "ohca" in self.nics else "virtio"
        self.qemu = find_qemu(need)
        self.kernel, self.initrd = kernel_and_initrd()
        self.rootfs = rootfs_image()
        self.files = build_outputs(need)
        # extra_files: {name in the share: host path}, e.g. guest-side tools
        for fname, path in (extra_files or {}).items():
            if not os.path.isfile(path):
                raise HarnessError(f"{path} missing (wanted in the share as {fname})")
            self.files[fname] = path
        self.sockdir = tempfile.mkdtemp(prefix="ohcavm-")
        os.makedirs(self.logdir, exist_ok=True)
        self.vms = [VM(self, i) for i in range(nvms)]
        self._stop = threading.Event()
        self._relay = None
        self._relay_lock = threading.Lock()
        self._active = list(range(nvms))  # the VMs of the current job

    def __getitem__(self, i):
        return self.vms[i]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self._stop.set()
        for vm in self.vms:
            vm.kill()
            if getattr(vm, "qemu_log", None):
                vm.qemu_log.close()
        self.stop_fault_wire()
        self._close_wire_sockets()
        shutil.rmtree(self.sockdir, ignore_errors=True)

    def _close_wire_sockets(self):
        for vm in self.vms:
            if vm.netdev_sock is not None:
                vm.netdev_sock.close()
                vm.netdev_sock = None

    def _dgram_ends(self, via_wire):
        """Sets each VM's dgram netdev: to the other VM, or via_wire to a
        port of the fault wire each. Returns the VMs' ports, then the
        wire's (via_wire)."""
        self._close_wire_sockets()
        if os.environ.get("OHCA_DGRAM", "fd") == "qemu":
            # QEMU opens its own sockets (default buffers): the old wire.
            ports = free_udp_ports(4 if via_wire else 2)
            remote = ports[2:] if via_wire else ports[1::-1]
            for vm, lp, rp in zip(self.vms, ports, remote):
                vm.netdev_args = (f"dgram,local.type=inet,local.host=127.0.0.1,local.port={lp},"
                                  f"remote.type=inet,remote.host=127.0.0.1,remote.port={rp}")
            return ports
        socks = [wire_socket() for _ in self.vms]
        try:
            ports = [s.getsockname()[1] for s in socks]
            # (the VMs' sockets are held: the wire's ports differ from them)
            ports += free_udp_ports(2) if via_wire else []
            remote = ports[2:] if via_wire else ports[1::-1]
            for sock, rp in zip(socks, remote):
                sock.connect(("127.0.0.1", rp))
        except BaseException:
            for sock in socks:
                sock.close()
            raise
        for vm, sock in zip(self.vms, socks):
            vm.netdev_sock = sock
            vm.netdev_args = dgram_fd_args(sock)
        return ports

    def _wire(self):
        if self.wire == "user":
            for vm in self.vms:
                vm.netdev_args = "user,restrict=on,net=10.77.0.0/24,host=10.77.0.254"
        elif self.wire == "dgram":
            if self.nvms != 2:
                raise HarnessError("the dgram wire needs two VMs")
            self._dgram_ends(via_wire=False)
        elif self.wire == "stream":
            if self.nvms != 2:
                raise HarnessError("the stream wire needs two VMs")
            self._close_wire_sockets()
            for vm, sock in zip(self.vms, stream_pair()):
                vm.netdev_sock = sock
                vm.netdev_args = stream_fd_args(sock)
        elif self.wire == "faulty":
            if self.nvms != 2:
                raise HarnessError("the fault wire needs two VMs")
            ports = self._dgram_ends(via_wire=True)  # vm0, vm1, the wire's side for each
            self.wire_ports = ports
            self.start_fault_wire(ports)
        else:
            raise HarnessError(f"unknown wire '{self.wire}'")

    WIRE_FAULTS = ("loss", "dup", "reorder", "delay", "corrupt")

    def start_fault_wire(self, ports):
        """Starts ohca_wire between the VMs. Keys of self.fault_wire: loss,
        dup, reorder, delay, corrupt (probabilities, both directions; a
        "_ab"/"_ba" suffix for one direction: vm0 to vm1 is ab), delay_us,
        hold_us, seed (default 1), all_frames (False: only RoCE frames get
        faults), pcap (True: <logdir>/wire/wire.pcap). Its log and
        stats.json go to <logdir>/wire/."""
        binary = os.environ.get("OHCA_WIRE", os.path.join(TOP, "build/wire/ohca_wire"))
        if "OHCA_WIRE" not in os.environ:
            # Small and quick to build: make sure it is current.
            r = subprocess.run(["make", "-s", "-C", os.path.join(TOP, "tests/wire")],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise HarnessError(f"building ohca_wire failed:\n{r.stdout}{r.stderr}")
        wdir = os.path.join(self.logdir, "wire")
        os.makedirs(wdir, exist_ok=True)
        self.wire_stats_path = os.path.join(wdir, "stats.json")
        self.wire_stats = None
        if os.path.exists(self.wire_stats_path):  # a previous job's (Pool)
            os.unlink(self.wire_stats_path)
        argv = [binary, "--a", f"{ports[2]}:{ports[0]}", "--b", f"{ports[3]}:{ports[1]}",
                "--stats", self.wire_stats_path]
        cfg = dict(self.fault_wire)
        argv += ["--seed", str(cfg.pop("seed", 1))]
        for key, val in cfg.items():
            base = key[:-3] if key.endswith(("_ab", "_ba")) else key
            if base in self.WIRE_FAULTS:
                argv += [f"--{base}{'-' + key[-2:] if base != key else ''}", str(val)]
            elif key in ("delay_us", "hold_us"):
                argv += [f"--{key.replace('_', '-')}", str(val)]
            elif key == "all_frames":
                if val:
                    argv.append("--all-frames")
            elif key == "pcap":
                if val:
                    argv += ["--pcap", os.path.join(wdir, "wire.pcap")]
            else:
                raise HarnessError(f"unknown fault wire option '{key}'")
        with open(os.path.join(wdir, "cmdline.txt"), "w") as f:
            f.write(" ".join(shlex.quote(a) for a in argv) + "\n")
        self.wire_log = open(os.path.join(wdir, "wire.log"), "w")
        self.wire_proc = subprocess.Popen(argv, stdout=self.wire_log, stderr=subprocess.STDOUT)

    def stop_fault_wire(self):
        """Stops ohca_wire (it writes its statistics) and returns them:
        {"a_to_b": {...}, "b_to_a": {...}} (a is vm0), or None."""
        if self.wire_proc is None:
            return self.wire_stats
        if self.wire_proc.poll() is None:
            self.wire_proc.send_signal(signal.SIGTERM)
            try:
                self.wire_proc.wait(10)
            except subprocess.TimeoutExpired:
                self.wire_proc.kill()
                self.wire_proc.wait()
        self.wire_proc = None
        self.wire_log.close()
        try:
            with open(self.wire_stats_path) as f:
                self.wire_stats = json.load(f)
        except (OSError, ValueError):
            self.wire_stats = None
        return self.wire_stats

    # host-side timeouts are multiplied by this (slower guest kernels)
    timeout_factor = 1.0

    def _scripts(self, scripts):
        if isinstance(scripts, dict):
            scripts = [scripts.get(i, "true") for i in range(self.nvms)]
        elif scripts is None or isinstance(scripts, str):
            scripts = [scripts] * self.nvms
        if len(scripts) != self.nvms:
            raise HarnessError("one script per VM expected")
        return scripts

    def wrap(self, scripts, preamble):
        """Hook for subclasses: (scripts, preamble) as the guest runs them."""
        return scripts, preamble

    def start(self, scripts, preamble=True, interactive=False):
        """scripts: one shell script for every VM, a list, or {index: script};
        None for an interactive VM (one VM only)."""
        scripts = self._scripts(scripts)
        if not interactive:
            scripts, preamble = self.wrap(scripts, preamble)
        self._wire()
        for vm, script in zip(self.vms, scripts):
            vm.prepare(script, preamble, self.files)
        for vm in self.vms:
            vm.start(interactive)
        if not interactive:
            self._relay = threading.Thread(target=self._barrier_relay, daemon=True)
            self._relay.start()

    # -- serving: boot once, run many jobs (Pool) --
    def start_serving(self):
        """Boots the VMs in serving mode: each waits for jobs (run_job)."""
        self._wire()
        for vm in self.vms:
            vm.prepare_serve()
        for vm in self.vms:
            vm.start()
        self._relay = threading.Thread(target=self._barrier_relay, daemon=True)
        self._relay.start()

    def fit(self):
        """True while every VM is alive and can take another job."""
        return all(vm.alive() and not vm.unfit() for vm in self.vms)

    def run_job(self, scripts, preamble=True, timeout=DEFAULT_TIMEOUT, only=None):
        """One job on serving VMs; returns a list of Result like wait(). A
        VM that timed out is killed (the cluster is then not fit). only: the
        indexes of the VMs that take the job (all by default); the others
        stay idle and the results are theirs alone, in that order."""
        active = list(range(self.nvms)) if only is None else sorted(only)
        scripts = self._scripts(scripts)
        scripts, preamble = self.wrap([scripts[i] for i in active], preamble)
        deadline = time.monotonic() + timeout * self.timeout_factor
        # Every VM serving first, so the job starts on all of them together:
        # one whose boot was restarted (_watch_boot) is minutes behind, and
        # the others would give up at the job's first barrier.
        while (time.monotonic() < deadline
               and not all(vm.serving or not vm.alive() for vm in self.vms)):
            for vm in self.vms:
                vm._note_progress()
            time.sleep(0.2)
        with self._relay_lock:
            self._released = set()
            self._active = active
            for i, script in zip(active, scripts):
                self.vms[i].dispatch(script, preamble, self.files)
        pending = set(active)
        while pending and time.monotonic() < deadline:
            for i in list(pending):
                vm = self.vms[i]
                vm._note_progress()
                if vm.has_result() or not vm.alive():
                    pending.discard(i)
            time.sleep(0.1)
        results = []
        for i in active:
            vm = self.vms[i]
            r = vm.collect()
            r.duration = time.monotonic() - vm.t_dispatch
            if i in pending:
                vm.kill()
                r.timed_out = True
                r.error = f"no result within {timeout * self.timeout_factor:.0f}s; QEMU killed"
            elif r.exit_code is None and not vm.alive():
                r.error = f"QEMU exited ({vm.proc.returncode}) without a result"
            if vm.t_job is not None:
                r.boot_to_job = vm.t_job - vm.t_dispatch
            results.append(r)
        return results

    def _barrier_relay(self):
        """Releases ohca_barrier NAME once every VM has reached it. Holds
        _relay_lock while it looks, so a serving cluster's next job is never
        released at a barrier of the last one (run_job dispatches under it)."""
        self._released = set()
        while not self._stop.wait(0.2):
            with self._relay_lock:
                self._relay_once()

    def _relay_once(self):
        names = None
        vms = [self.vms[i] for i in self._active]
        for vm in vms:
            try:
                here = {f[len("barrier."):] for f in os.listdir(vm.sync)
                        if f.startswith("barrier.") and not f.endswith(".go")}
            except FileNotFoundError:
                here = set()
            names = here if names is None else names & here
        for n in (names or set()) - self._released:
            for vm in vms:
                with open(os.path.join(vm.sync, f"barrier.{n}.go"), "w"):
                    pass
            self._released.add(n)

    def wait(self, timeout=DEFAULT_TIMEOUT):
        """Waits for every VM's result (or QEMU's exit); kills QEMU on timeout.
        Returns a list of Result."""
        deadline = time.monotonic() + timeout
        pending = set(range(self.nvms))
        done_at = {}
        while pending and time.monotonic() < deadline:
            for i in list(pending):
                vm = self.vms[i]
                vm._note_progress()
                if vm.has_result():
                    done_at.setdefault(i, time.monotonic())
                    # give init a moment to power off by itself
                    if not vm.alive() or time.monotonic() - done_at[i] > 10:
                        pending.discard(i)
                elif not vm.alive():
                    pending.discard(i)
            time.sleep(0.2)
        results = []
        for i, vm in enumerate(self.vms):
            timed_out = i in pending and not vm.has_result()
            vm.kill()
            r = vm.collect()
            if i in done_at:
                r.duration = done_at[i] - vm.t_start
            if timed_out:
                r.timed_out = True
                r.error = f"no result within {timeout}s; QEMU killed"
            vm.result = r
            results.append(r)
        self._stop.set()
        faults = self.fault_wire or {}
        stats = self.stop_fault_wire()
        for r in results:
            r.wire_stats = stats
            r.wire_pcap = os.path.join(self.logdir, "wire", "wire.pcap") if faults.get("pcap") else None
        return results

    def interactive(self):
        vm = self.vms[0]
        self.start(None, preamble=self._interactive_preamble, interactive=True)
        log(f"console: {vm.console_path}; QMP: {vm.qmp_path}; Ctrl-a x quits QEMU")
        try:
            return vm.proc.wait()
        except KeyboardInterrupt:
            vm.kill()
            return 130


class Pool:
    """Booted VMs reused across jobs: a TCG boot costs 15-30 s with Debian's
    kernel and about two minutes with the debug kernel, so a test session
    boots each VM configuration once and runs its jobs one after the other
    in it (the guest's init serves them and cleans up between them: the
    job's processes killed, the driver unloaded, interfaces reset; each job
    runs its own preamble). A VM whose job failed, timed out, logged a
    kernel problem or could not be cleaned up is not reused: the next job
    boots a fresh one, so one failure does not spill into other tests.

    Only jobs whose VMs are alike share them: the key is everything that
    shapes the QEMU command line (VM count, NIC kinds, memory, CPUs, extra
    QEMU arguments, kernel arguments, wire, cluster class). Per-job settings
    (MTU, module parameters, extra files, allowed kernel-log lines) are
    applied per job. A fault wire is restarted with the job's faults (its
    statistics end up in each Result's wire_stats, its capture, if the
    job's faults ask for one, in wire_pcap); QEMU's captures always get
    fresh VMs.

    With pair=True (OHCA_VM_POOL_PAIR=1), a one-VM job runs on the first VM
    of the two-VM cluster of its shape, the second one idle: one boot of
    two VMs side by side (one core each) then serves both kinds of job,
    where a debug-kernel boot costs minutes."""

    # Cluster() arguments that can change from job to job
    PER_JOB = ("mtu", "module_params", "extra_files", "klog_allow")
    # arguments that are part of the key
    KEYED = ("nic", "nics", "smp", "mem", "extra_args", "append", "wire")

    def __init__(self, logroot, pair=None):
        self.logroot = logroot
        self.pair = os.environ.get("OHCA_VM_POOL_PAIR", "0") == "1" if pair is None else pair
        self.clusters = {}
        self.counter = 0
        self.problems = []  # from final checks of retired clusters

    @classmethod
    def poolable(cls, kw):
        return not set(kw) - set(cls.PER_JOB) - set(cls.KEYED)

    def run(self, cls, scripts, nvms=1, preamble=True, timeout=DEFAULT_TIMEOUT,
            logdir=None, **kw):
        only = None
        if self.pair and nvms == 1 and not kw.get("nics") and not kw.get("wire"):
            nvms, only = 2, [0]
            scripts = {0: scripts[0] if isinstance(scripts, (list, dict)) else scripts}
        keyed = {k: kw.get(k) for k in self.KEYED}
        faults = keyed["wire"] if isinstance(keyed["wire"], dict) else None
        key = (cls, nvms, json.dumps(dict(keyed, wire="faulty" if faults else keyed["wire"]),
                                     sort_keys=True, default=str))
        c = self.clusters.get(key)
        if c is not None and not c.fit():
            c.close()
            c = None
        if c is None:
            self.counter += 1
            name = f"pool-{self.counter}"
            c = cls(name, nvms=nvms, logdir=os.path.join(self.logroot, name),
                    **{k: v for k, v in keyed.items() if v is not None})
            c.base_files = dict(c.files)
            c.start_serving()
            self.clusters[key] = c
            log(f"pool: booted {name} ({nvms} VM(s))")
        c.mtu = kw.get("mtu")
        c.module_params = kw.get("module_params") or ""
        c.klog_allow = kw.get("klog_allow") or os.environ.get("OHCA_KLOG_ALLOW")
        if faults is not None and c.fault_wire != faults:
            c.stop_fault_wire()
            c.fault_wire = dict(faults)
            c.start_fault_wire(c.wire_ports)
        c.files = dict(c.base_files)
        for fname, path in (kw.get("extra_files") or {}).items():
            if not os.path.isfile(path):
                raise HarnessError(f"{path} missing (wanted in the share as {fname})")
            c.files[fname] = path
        results = c.run_job(scripts, preamble=preamble, timeout=timeout, only=only)
        if faults is not None:  # this job's statistics; the next one restarts it
            stats = c.stop_fault_wire()
            c.fault_wire = None
            pcap = os.path.join(c.logdir, "wire", "wire.pcap")
            if faults.get("pcap") and logdir:  # kept with the job's logs
                os.makedirs(logdir, exist_ok=True)
                pcap = shutil.move(pcap, os.path.join(logdir, "wire.pcap"))
            for r in results:
                r.wire_stats = stats
                r.wire_pcap = pcap if faults.get("pcap") else None
        if logdir:
            for vm, r in zip([c.vms[i] for i in (only or range(nvms))], results):
                self._keep(vm, r, os.path.join(logdir, vm.name))
        if not all(r.ok for r in results):
            c.close()  # the failed test reports it; no final check
            del self.clusters[key]
        elif not c.fit():
            self._retire(c)
            del self.clusters[key]
        return results

    def _retire(self, c):
        """Stops a cluster; one that can still take a job first runs its
        final_check, if its class has one (the debug kernel's kmemleak scan
        after the boot's last job). Its problems are kept for close()."""
        if hasattr(c, "final_check") and c.fit():
            try:
                self.problems += c.final_check()
            except HarnessError as e:
                self.problems.append(f"{c.logdir}: final check: {e}")
        for vm in c.vms:
            if vm.alive():
                open(os.path.join(vm.share, "stop"), "w").close()
        c.close()

    @staticmethod
    def _keep(vm, r, dest):
        """Copies one job's files and console part to the test's log dir."""
        os.makedirs(dest, exist_ok=True)
        for name in ("running.sh", "output.log", "dmesg.txt", "cleanup.log", "exit-code"):
            src = os.path.join(vm.share, name)
            if os.path.exists(src):
                shutil.copy2(src, os.path.join(dest, "job.sh" if name == "running.sh" else name))
        with open(os.path.join(dest, "console.log"), "w") as f:
            f.write(r.console)
        with open(os.path.join(dest, "pool.txt"), "w") as f:
            f.write(f"job {vm.jobs} of {vm.cluster.logdir} (QEMU log and whole console there)\n")
        r.logdir = dest

    def close(self):
        """Stops every cluster; returns the problems their final checks
        found (over the whole session)."""
        for c in self.clusters.values():
            self._retire(c)
        self.clusters.clear()
        return self.problems


def run(scripts, nvms=1, nic=None, name="run", timeout=DEFAULT_TIMEOUT,
        preamble=True, **kw):
    """Boots the VMs, runs the job(s), returns a list of Result."""
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
        p.add_argument("--trace", metavar="PATTERN",
                       help="QEMU trace events to turn on, e.g. 'ohca_*' (the device's, "
                       "qemu-device/trace-events); the lines go to each VM's qemu.log")

    p = sub.add_parser("run", help="run a command in fresh VM(s)")
    common(p)
    p.add_argument("--vms", type=int, choices=(1, 2), default=1)
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT)
    p.add_argument("--nics", help="NIC kind per VM, comma-separated "
                   "(e.g. ohca,rxe: vm1 is virtio-net + rdma_rxe)")
    p.add_argument("--mtu", type=int, help="eth0 MTU set by the preamble")
    p.add_argument("--wire", choices=("dgram", "stream"),
                   help="two VMs: dgram netdevs (default) or a lossless stream netdev pair")
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
                         extra_args=args.qemu_arg, module_params=args.module_params) as c:
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
        t0 = time.monotonic()
        results = run(scripts, nvms=args.vms, nic=args.nic, name="cli-run",
                      timeout=args.timeout, preamble=not args.no_preamble,
                      logdir=logdir, extra_args=args.qemu_arg,
                      module_params=args.module_params,
                      nics=args.nics.split(",") if args.nics else None,
                      mtu=args.mtu, capture=args.capture, wire=args.wire)
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
