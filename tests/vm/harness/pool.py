"""The session's VMs reused across jobs (Pool)."""

import json
import os
import shutil

from .common import DEFAULT_TIMEOUT, HarnessError, log
from .images import BootImages


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
    shapes the QEMU command line (VM count, NIC kinds, link layer, IOMMU, memory, CPUs, extra
    QEMU arguments, kernel arguments, wire and switch options, cluster class). Per-job settings
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
    KEYED = ("nic", "nics", "smp", "mem", "extra_args", "append", "wire", "link_layer",
             "iommu", "switch")

    def __init__(self, logroot, pair=None):
        self.logroot = logroot
        self.pair = os.environ.get("OHCA_VM_POOL_PAIR", "0") == "1" if pair is None else pair
        self.clusters = {}
        self.counter = 0
        self.problems = []  # from final checks of retired clusters
        # booted VMs saved once per shape, restored for the shape's next
        # cluster (images.py; OHCA_VM_SNAPSHOTS=0: every cluster boots)
        self.images = BootImages()

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
                    images=self.images, **{k: v for k, v in keyed.items() if v is not None})
            if c.images:
                self.images.save_from(self.clusters.values(), c)
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
        for line in self.images.summary():
            log(f"images: {line}")
        self.images.close()
        return self.problems
