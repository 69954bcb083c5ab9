"""One VM: its QEMU process (command line, boot watch, restarts after a
stalled boot), its 9p share (the job, the environment, the results), the
host/guest synchronisation files, QMP, and the Result of its job."""

import os
import re
import shlex
import shutil
import subprocess
import time

from . import migration
from . import wire as wires
from .checks import sanitizer_env, sanitizer_reports, scan_kernel_log
from .common import (FIRMWARE_DIRS, GUEST_DIR, IBDEV, IFACE, IOMMU_APPEND, IOMMU_ARGS,
                     NETDEV_ID, NIC_ID, PREAMBLE_FAILED, PREFIX, RXE_IBDEV, HarnessError,
                     die_with_parent, log, vm_ip, vm_mac, vm_node_guid)
from .host import reads_migration_file
from .qmp import QMP


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
    # A silent guest that keeps QEMU busy is slow, not stuck: the hang above
    # idles (vCPUs halted, a timer tick now and then), while a debug
    # kernel's boot that another stage's VMs slow down (two sessions' VMs
    # on two cores at load 15, 2026-12-07: 150 s of silence between "Run
    # /sbin/ohca-init" and init's first line) spends CPU all along. Silence
    # counts as a stall only while QEMU used less than this share of one
    # core over it (after a known hang's last line, KNOWN_STALLS, it counts
    # whatever the CPU).
    BOOT_STALL_CPU = float(os.environ.get("OHCA_BOOT_STALL_CPU", "0.05"))

    def __init__(self, cluster, index):
        self.cluster = cluster
        self.index = index
        self.name = f"vm{index}"
        self.nic = cluster.nics[index]
        self.ip = vm_ip(index)
        self.mac = vm_mac(index)
        self.node_guid = vm_node_guid(index)
        self.logdir = os.path.join(cluster.logdir, self.name)
        self.share = os.path.join(self.logdir, "share")
        self.sync = os.path.join(self.share, "sync")
        self.console_path = os.path.join(self.logdir, "console.log")
        self.capture_path = os.path.join(self.logdir, "wire.pcap")
        self.qmp_path = os.path.join(cluster.sockdir, f"{self.name}.qmp")
        self.qmp = QMP(self.qmp_path)
        self.overlay = os.path.join(self.logdir, "disk.qcow2")  # cluster.overlays
        self.restore = None  # the image (images.BootImages) the next start restores
        self.one_job = False  # a restored VM of Cluster.start: powers off after its job
        self.migrations = 0
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
        self._console_cpu = 0.0  # QEMU's CPU seconds at the last console output

    # -- setup --
    def _env(self):
        peers = [vm_ip(i) for i in range(self.cluster.nvms) if i != self.index]
        env = {
            "OHCA_VM_INDEX": str(self.index),
            "OHCA_VM_NAME": self.name,
            "OHCA_NUM_VMS": str(self.cluster.nvms),
            "OHCA_NIC": self.nic,
            "OHCA_LINK_LAYER": self.cluster.link_layer,
            "OHCA_IFACE": IFACE,
            "OHCA_IBDEV": RXE_IBDEV if self.nic == "rxe" else IBDEV,
            "OHCA_IP": self.ip,
            "OHCA_PREFIX": str(PREFIX),
            "OHCA_PEER_IP": peers[0] if peers else "",
            # every other VM of the wire, and every VM's address by index
            "OHCA_PEER_IPS": " ".join(peers),
            "OHCA_VM_IPS": " ".join(vm_ip(i) for i in range(self.cluster.nvms)),
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

    def _disk(self):
        """The -drive of the rootfs: private to the process (snapshot=on),
        or the VM's qcow2 overlay in its log dir (created afresh for each
        start) when the cluster is migratable (a migration's destination
        opens it too) or keeps boot images (the overlay is saved with the
        VM; a restored VM's overlay is one of the saved disk)."""
        c = self.cluster
        if not c.overlays:
            return f"file={c.rootfs},if=virtio,format=raw,snapshot=on"
        return f"file={self.overlay},if=virtio,format=qcow2"

    def _new_overlay(self):
        base, fmt = (self.restore["disk"], "qcow2") if self.restore else (self.cluster.rootfs, "raw")
        if os.path.exists(self.overlay):
            os.unlink(self.overlay)
        try:
            subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", fmt,
                            "-b", base, self.overlay],
                           check=True, capture_output=True, text=True)
        except FileNotFoundError as e:
            raise HarnessError("qemu-img missing (qemu-utils; run tests/deps.sh)") from e
        except subprocess.CalledProcessError as e:
            raise HarnessError(f"qemu-img create {self.overlay}: {e.stderr.strip()}") from e

    def qemu_argv(self, interactive=False, incoming=None, loadvm=None):
        """QEMU's command line. incoming: the QMP socket of a second process
        of this VM (a migration's destination, or with loadvm a process
        that starts paused from that savevm snapshot of the disk), which
        appends to the first's console log; a migration's destination
        starts with -incoming defer."""
        c = self.cluster
        append = ("root=/dev/vda rw init=/sbin/ohca-init console=ttyS0 "
                  "net.ifnames=0 panic=-1 " + IOMMU_APPEND * c.iommu + c.append).strip()
        # the hosts wire: this VM's QEMU in its host's network namespace
        host = c.wire_proc.prefix(self.index) if isinstance(c.wire_proc, wires.Hosts) else []
        argv = host + [c.qemu, "-name", self.name,
                "-accel", "tcg", "-cpu", "max", "-smp", str(c.smp), "-m", c.mem,
                "-nographic", "-nodefaults"] + ([] if c.reboot else ["-no-reboot"]) + [
                "-kernel", c.kernel]
        # Debian spreads the firmware over several packages' directories.
        for d in FIRMWARE_DIRS:
            if os.path.isdir(d):
                argv += ["-L", d]
        if c.initrd:
            argv += ["-initrd", c.initrd]
        argv += ["-append", append,
                 "-drive", self._disk(),
                 "-virtfs", f"local,path={self.share},mount_tag=share,security_model=none",
                 "-qmp", f"unix:{incoming or self.qmp_path},server=on,wait=off"]
        if interactive:
            argv += ["-chardev", f"stdio,id=ser0,mux=on,signal=off,logfile={self.console_path}",
                     "-serial", "chardev:ser0", "-mon", "chardev=ser0"]
        else:
            argv += ["-chardev", f"file,id=ser0,path={self.console_path}"
                     + (",append=on" if incoming else ""),
                     "-serial", "chardev:ser0"]
        if c.iommu:
            # before ohca: a device realized earlier DMAs around the IOMMU
            # (the virtio disk and share do; without iommu_platform they
            # must, as their guest drivers do not map through it)
            argv += IOMMU_ARGS
        argv += ["-netdev", f"{self.netdev_args},id={NETDEV_ID}"]
        if self.index in c.capture:
            # Both directions of the netdev, before the NIC sees them.
            argv += ["-object", f"filter-dump,id=cap0,netdev={NETDEV_ID},"
                     f"file={self.capture_path}"]
        if self.nic == "ohca":
            dev = (f"ohca,id={NIC_ID},netdev={NETDEV_ID},mac={self.mac},"
                   f"node-guid=0x{self.node_guid:016x}")
            if c.link_layer != "eth":
                dev += f",link-layer={c.link_layer}"
            elif c.wire == "switch":
                # the link's speed is the switch port's: a pause quantum
                # lasts as long at both ends, DCQCN starts at line rate
                flags, _ = wires.switch_options("eth", c.switch)
                dev += f",speed={flags['line_rate']}"
            # properties for an experiment (e.g. x-unlock-bql=off)
            if os.environ.get("OHCA_DEVICE_OPTS"):
                dev += "," + os.environ["OHCA_DEVICE_OPTS"]
        else:
            dev = f"virtio-net-pci,id={NIC_ID},netdev={NETDEV_ID},mac={self.mac}"
        argv += ["-device", dev] + c.extra_args
        if loadvm:
            argv += ["-loadvm", loadvm, "-S"]
        elif incoming:
            argv += ["-incoming", "defer"]
        elif self.restore:
            # the saved stream's file itself: QEMU reads a file without
            # waiting for a writer; by name where it can, else through an
            # fd start() opened (host.reads_migration_file)
            if "fd" in self.restore:
                argv += ["-incoming", f"fd:{self.restore['fd']}"]
            else:
                argv += ["-incoming", f"file:{self.restore['mig']}"]
        return argv

    def start(self, interactive=False):
        if self.restore and not reads_migration_file(self.cluster.qemu):
            self.restore = dict(self.restore, fd=os.open(self.restore["mig"], os.O_RDONLY))
        try:
            self._start(interactive)
        finally:
            if self.restore and "fd" in self.restore:
                os.close(self.restore.pop("fd"))

    def _start(self, interactive=False):
        argv = self.qemu_argv(interactive)
        with open(os.path.join(self.logdir, "cmdline.txt"), "w") as f:
            f.write(shlex.join(argv) + "\n")
        self.t_start = time.monotonic()
        # a restored VM has booted (its console starts after the boot)
        self._booted = self.restore is not None
        self._console_len, self._console_t, self._console_cpu = 0, self.t_start, 0.0
        self.serving = False
        if self.cluster.overlays:
            self._new_overlay()
        fds = (self.netdev_sock.fileno(),) if self.netdev_sock else ()
        if self.restore and "fd" in self.restore:
            fds += (self.restore["fd"],)
        if interactive:
            self.proc = subprocess.Popen(argv, preexec_fn=die_with_parent,
                                         env=sanitizer_env(self.logdir), pass_fds=fds)
        else:
            self.qemu_log = open(os.path.join(self.logdir, "qemu.log"), "w")
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                         stdout=self.qemu_log,
                                         stderr=subprocess.STDOUT,
                                         start_new_session=True,
                                         preexec_fn=die_with_parent,
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
            if self.cluster.images:
                self.cluster.images.note("booted", f"{self.cluster.logdir}/{self.name}",
                                         time.monotonic() - self.t_start)

    def _stall_limit(self, text):
        for last_line, limit in self.KNOWN_STALLS:
            if text.replace("\r", "").endswith(last_line):
                return min(limit, self.BOOT_STALL)
        return self.BOOT_STALL

    def cpu_seconds(self):
        """The CPU time QEMU used so far (user and system), 0 when unknown."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (AttributeError, OSError, IndexError, ValueError):
            return 0.0

    def _watch_boot(self, text):
        """Restarts QEMU when the boot stalls (BOOT_STALL, BOOT_STALL_CPU)."""
        now = time.monotonic()
        if "ohca-init: userspace up" in text:
            self._booted = True
        elif len(text) != self._console_len:
            self._console_len, self._console_t = len(text), now
            self._console_cpu = self.cpu_seconds()
        elif (now - self._console_t > self._stall_limit(text)
              and self._stall_limit(text) == self.BOOT_STALL
              and (self.cpu_seconds() - self._console_cpu
                   >= self.BOOT_STALL_CPU * (now - self._console_t))):
            # busy all along: slow, not stuck; the silence counts afresh
            # (a known hang's last line is enough, whatever the CPU)
            self._console_t, self._console_cpu = now, self.cpu_seconds()
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

    def migrate(self):
        """Live-migrates this VM to a new QEMU process (migration.py)."""
        return migration.migrate(self)

    def restart_from_snapshot(self, tag):
        """Ends this VM's QEMU and starts a new one, paused, with -loadvm
        TAG (migration.py); returns the seconds that took."""
        return migration.restart_from_snapshot(self, tag)

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
