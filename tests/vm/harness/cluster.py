"""A cluster: the VMs of one run on one wire, started together; the
barrier relay between them; a job's results. Serving clusters boot once
and take one job after the other (the Pool's)."""

import os
import shutil
import tempfile
import threading
import time

from . import wire as wires
from .common import DEFAULT_TIMEOUT, LINK_LAYERS, MAX_VMS, NIC_KINDS, TOP, HarnessError, log
from .host import build_outputs, find_qemu, kernel_and_initrd, rootfs_image
from .vm import VM


class Cluster:
    """VMs on one wire (one, two, or up to MAX_VMS on the switch wire). Use as a
    context manager:

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
                 mtu=None, capture=(), link_layer="eth", iommu=None, switch=None,
                 migratable=False, images=None, reboot=False, tree_files=True):
        if not 1 <= nvms <= MAX_VMS:
            raise HarnessError(f"nvms must be 1 to {MAX_VMS}")
        self.nic = nic or os.environ.get("OHCA_NIC", "ohca")
        # nics: one NIC kind per VM (default: nic for all). "rxe" is
        # virtio-net with Linux soft-RoCE (rxe0) on it, the interop peer.
        self.nics = list(nics) if nics else [self.nic] * nvms
        if len(self.nics) != nvms:
            raise HarnessError("nics: one entry per VM expected")
        for n in self.nics:
            if n not in NIC_KINDS:
                raise HarnessError(f"unknown nic '{n}' ({'|'.join(NIC_KINDS)})")
        # link_layer: the ohca port's, "eth" (RoCEv2, the default) or "ib"
        # (the device's link-layer=ib: an InfiniBand port, no eth0 of ohca,
        # the port INIT until a subnet manager makes it ACTIVE)
        if link_layer not in LINK_LAYERS:
            raise HarnessError(f"unknown link layer '{link_layer}' ({'|'.join(LINK_LAYERS)})")
        self.link_layer = link_layer
        # iommu: the VMs on q35 with a virtual Intel IOMMU in front of every
        # device (intremap, caching mode) and the guest kernel's IOMMU on in
        # strict mode: each of ohca's DMAs goes through a translation the
        # guest can revoke (default: OHCA_IOMMU=1 in the environment)
        self.iommu = os.environ.get("OHCA_IOMMU", "0") == "1" if iommu is None else bool(iommu)
        # mtu: eth0's MTU set by the preamble (None: the driver's default)
        self.mtu = mtu
        # capture: VM indices whose netdev traffic goes to vmN/wire.pcap
        # (QEMU filter-dump); True means VM 0 (it sees both directions)
        self.capture = {0} if capture is True else set(capture or ())
        self.nvms = nvms
        # migratable: each VM's disk is a qcow2 overlay of the rootfs in its
        # log dir, which a migration's destination QEMU opens too (shared
        # storage); otherwise the disk is a snapshot=on drive private to one
        # QEMU process. VM.migrate() needs it. On the switch wire it makes
        # the switch ports datagram sockets (wire.switch_ends), which the
        # source and destination QEMU can share.
        self.migratable = migratable
        # images: the session's boot images (images.BootImages), which the
        # cluster restores its VMs from where their shape has one (saved
        # from a living pooled VM: BootImages.save_from); its VMs' disks
        # are overlays then
        self.images = images if images is not None and images.enabled else None
        self.logdir = os.path.abspath(logdir or os.path.join(TOP, "build/test-logs", name))
        self.smp = smp
        self.mem = mem
        self.module_params = module_params
        self.extra_args = list(extra_args or [])
        self.append = append if append is not None else os.environ.get("OHCA_APPEND", "")
        self.klog_allow = klog_allow or os.environ.get("OHCA_KLOG_ALLOW")
        # wire: "dgram", "stream" (two VMs), "switch" (two VMs or more),
        # "user", or a dict of faults for the fault wire (tests/wire/ohca_wire
        # between the two VMs' dgram netdevs), e.g. {"loss": 0.05, "dup":
        # 0.01, "reorder": 0.02, "corrupt": 0.01, "seed": 1}; see wire.py.
        # switch: the switch wire's options (wire.SWITCH_FLAGS and
        # SWITCH_TOPOLOGY), e.g. {"line_rate": 1000, "pfc": "3"} or
        # {"switches": 2}; it implies wire="switch". ohca-switch runs in
        # the mode of the link layer (eth or ib).
        self.fault_wire = None
        self.wire_proc = None
        self.wire_stats = None
        if isinstance(wire, dict):
            self.fault_wire = dict(wire)
            wire = "faulty"
        self.switch = dict(switch or {})
        if switch and wire not in (None, "switch"):
            raise HarnessError(f"switch options need the switch wire, not '{wire}'")
        self.wire = wire or ("switch" if switch else {1: "user", 2: "dgram"}.get(nvms, "switch"))
        if self.wire == "hosts":  # QEMU runs in a namespace of its own
            self.images = None
        if self.wire == "switch":  # a bad option fails here, before a boot
            wires.switch_options(self.link_layer, self.switch)
            wires.switch_binary()
        need = "ohca" if "ohca" in self.nics else "virtio"
        self.qemu = find_qemu(need)
        self.kernel, self.initrd = kernel_and_initrd()
        self.rootfs = rootfs_image()
        # tree_files=False: the share gets none of the tree's driver and
        # provider builds (a job that tests what packages installed)
        self.files = build_outputs(need, tree=tree_files)
        # reboot: the guest may reboot (QEMU without -no-reboot): a reset
        # boots it again in the same process, its disk kept, and init runs
        # /share/job.sh again
        self.reboot = reboot
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
        # barrier name -> time.monotonic() of its release: when a phase of a
        # job began, to match against the switch's timeline (its mono_us)
        self.barrier_times = {}
        self._active = list(range(nvms))  # the VMs of the current job

    @property
    def overlays(self):
        """Whether each VM's disk is a qcow2 overlay in its log dir."""
        return self.migratable or self.images is not None

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
        self.stop_wire()
        self._close_wire_sockets()
        shutil.rmtree(self.sockdir, ignore_errors=True)

    def _close_wire_sockets(self):
        for vm in self.vms:
            if vm.netdev_sock is not None:
                vm.netdev_sock.close()
                vm.netdev_sock = None

    def _set_netdevs(self, socks, args):
        for vm, sock, a in zip(self.vms, socks, args):
            vm.netdev_sock, vm.netdev_args = sock, a

    def _dgram_ends(self, via_wire):
        """Sets each VM's dgram netdev: to the other VM, or via_wire to a
        port of the fault wire each (wire.dgram_ends). Returns the VMs'
        ports, then the wire's (via_wire)."""
        self._close_wire_sockets()
        socks, args, ports = wires.dgram_ends(via_wire)
        self._set_netdevs(socks, args)
        return ports

    def _wire(self):
        """Sets each VM's netdev for self.wire (see wire.py) and starts what
        runs between the VMs (the fault wire, the switch)."""
        self.stop_wire()
        self._close_wire_sockets()
        kind = self.wire
        if kind in ("dgram", "stream", "faulty", "hosts") and self.nvms != 2:
            raise HarnessError(f"the {'fault' if kind == 'faulty' else kind} wire needs two VMs")
        if kind == "user":
            self._set_netdevs(*wires.user_ends(self.nvms))
        elif kind == "dgram":
            self._dgram_ends(via_wire=False)
        elif kind == "stream":
            self._set_netdevs(*wires.stream_ends())
        elif kind == "faulty":
            self.wire_ports = self._dgram_ends(via_wire=True)  # vm0, vm1, the wire's side for each
            self.start_fault_wire(self.wire_ports)
        elif kind == "hosts":
            # each VM on a "host" of its own (a network namespace); their
            # QEMUs start inside them (VM.qemu_argv)
            self.wire_proc = wires.Hosts(os.path.basename(self.logdir)[:12])
            self._set_netdevs(*self.wire_proc.ends())
        elif kind == "switch":
            if self.nvms < 2:
                raise HarnessError("the switch wire needs two VMs or more")
            socks, args, sw_socks = wires.switch_ends(self.nvms, datagram=self.migratable)
            self._set_netdevs(socks, args)
            self.wire_stats = None
            self.wire_proc = wires.SwitchFabric(os.path.join(self.logdir, "wire"), self.sockdir,
                                                self.link_layer, sw_socks, self.switch)
        else:
            raise HarnessError(f"unknown wire '{kind}'")

    def start_fault_wire(self, ports):
        """Starts ohca_wire between the VMs with self.fault_wire's faults
        (wire.FaultWire: loss, dup, reorder, delay, corrupt, with _ab/_ba
        for one direction, delay_us, hold_us, seed, all_frames, pcap). Its
        log and stats.json go to <logdir>/wire/."""
        self.wire_stats = None
        self.wire_proc = wires.FaultWire(os.path.join(self.logdir, "wire"), self.fault_wire, ports)

    def stop_wire(self):
        """Stops the process between the VMs (the fault wire or the switch)
        and returns its statistics, or None; the fault wire's are
        {"a_to_b": {...}, "b_to_a": {...}} (a is vm0), the switch's
        --stats JSON (wire.SwitchFabric: per port, and which VM is on which
        port; two switches: {"switches": [...]})."""
        if self.wire_proc is None:
            return self.wire_stats
        self.wire_stats = self.wire_proc.stop()
        self.wire_proc = None
        return self.wire_stats

    stop_fault_wire = stop_wire

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
        # with boot images: a VM whose shape has one is restored (serving),
        # takes the job as a serving VM does and then powers off (wait())
        restored = {}
        for vm, script in zip(self.vms, scripts):
            image = self.images.lookup(vm) if self.images and not interactive else None
            if image:
                vm.prepare_serve()
                self.images.prepare_restore(vm, image)
                restored[vm] = script
            else:
                vm.prepare(script, preamble, self.files)
        for vm in self.vms:
            vm.start(interactive)
        if not interactive:
            self._relay = threading.Thread(target=self._barrier_relay, daemon=True)
            self._relay.start()
        if restored:
            def boot(vm):
                vm.prepare(restored.pop(vm), preamble, self.files)
                vm.start()
            self.images.wait_restored(self, list(restored), boot)
            for vm, script in restored.items():
                vm.dispatch(script, preamble, self.files)
                vm.one_job = True

    # -- serving: boot once, run many jobs (Pool) --
    def start_serving(self):
        """Boots the VMs in serving mode: each waits for jobs (run_job). With
        boot images, a VM whose shape has one is restored from it instead
        (images.py)."""
        self._wire()
        restored = []
        for vm in self.vms:
            vm.prepare_serve()
            image = self.images.lookup(vm) if self.images else None
            if image:
                self.images.prepare_restore(vm, image)
                restored.append(vm)
        for vm in self.vms:
            vm.start()
        self._relay = threading.Thread(target=self._barrier_relay, daemon=True)
        self._relay.start()
        if restored:
            self.images.wait_restored(self, restored, self._boot_instead)

    def _boot_instead(self, vm):
        """Boots a VM whose restore failed."""
        vm.prepare_serve()
        vm.start()

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
            self.barrier_times[n] = time.monotonic()

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
                    if vm.one_job:  # a restored VM: its init powers off now
                        open(os.path.join(vm.share, "stop"), "w").close()
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
        stats = self.stop_wire()
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
