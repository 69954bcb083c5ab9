"""Fixtures for the ohca integration tests: VMs booted by tests/vm/ohcavm.py.

Options: --nic ohca|virtio (default: env OHCA_NIC or ohca). With --nic virtio
the tests marked `ohca_only` are deselected, so the pipeline (boot, wire,
QMP, synchronisation) can be proven without the ohca device.

--kernel stock|debug (default: env OHCA_TEST_KERNEL or stock). With debug the
VMs boot build/debug-kernel/bzImage (KASAN, lockdep, kmemleak, debug
objects, KUnit; no initrd) and load build/kernel-debug/ohca_{core,ib}.ko (make -C
kernel debug); OHCA_KERNEL/OHCA_INITRD/OHCA_MODULE_DIR still win when set. Every
job then also checks kmemleak: a baseline (scan + clear) before the job, and
at its end ohca is unloaded, memory scanned again and any new leak report
fails the job (and lands in dmesg). Tests marked `debug_kernel` (KUnit)
are skipped with the stock kernel.

Fixtures:
  nic          the NIC model of this session ("ohca" or "virtio")
  vm_logdir    build/test-logs/<test name>/ (emptied first)
  vm_run       vm_run(scripts, nvms=1, preamble=True, timeout=300, **kw)
               -> list of ohcavm.Result; boots, runs, waits, cleans up
  vm_cluster   vm_cluster(nvms=1, **kw) -> ohcavm.Cluster (not started);
               for tests that interleave host actions (QMP) with the guest.
               Closed (QEMU killed) at teardown.
"""

import os
import re

import pytest

from vmtest import ohcavm, make_logdir


def pytest_addoption(parser):
    parser.addoption("--nic", choices=("ohca", "virtio"),
                     default=os.environ.get("OHCA_NIC", "ohca"),
                     help="NIC model for the test VMs (default ohca)")
    parser.addoption("--kernel", choices=("stock", "debug"),
                     default=os.environ.get("OHCA_TEST_KERNEL", "stock"),
                     help="guest kernel: Debian's (stock) or build/debug-kernel "
                          "with build/kernel-debug/ohca_{core,ib}.ko (debug)")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "ohca_only: needs the ohca device (deselected with --nic virtio)")
    config.addinivalue_line(
        "markers", "debug_kernel: needs --kernel debug (skipped otherwise)")
    config.addinivalue_line(
        "markers", "retires_vm: spoils its pooled VM on purpose (runs last, so the "
                   "VMs the other tests share are not booted twice)")
    config.addinivalue_line(
        "markers", "fault_wire: runs in the session's two VMs on the fault wire "
                   "(these tests run one after the other, after the others)")
    if config.getoption("--kernel") == "debug":
        top = ohcavm.TOP
        os.environ.setdefault("OHCA_KERNEL", os.path.join(top, "build/debug-kernel/bzImage"))
        os.environ.setdefault("OHCA_INITRD", "none")
        os.environ.setdefault("OHCA_MODULE_DIR", os.path.join(top, "build/kernel-debug"))
        _debug_kernel_everywhere(config)


def pytest_collection_modifyitems(config, items):
    # the fault-wire VMs' tests one after the other (those VMs are not kept
    # idle between them), and a test that spoils its VM last: the next job
    # would boot again
    items.sort(key=lambda item: (item.get_closest_marker("retires_vm") is not None,
                                 item.get_closest_marker("fault_wire") is not None))
    if config.getoption("--kernel") != "debug":
        skip = pytest.mark.skip(reason="needs --kernel debug")
        for item in items:
            if item.get_closest_marker("debug_kernel"):
                item.add_marker(skip)
    if config.getoption("--nic") == "ohca":
        return
    keep, drop = [], []
    for item in items:
        (drop if item.get_closest_marker("ohca_only") else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(scope="session")
def nic(pytestconfig):
    return pytestconfig.getoption("--nic")


@pytest.fixture(scope="session")
def kernel_kind(pytestconfig):
    return pytestconfig.getoption("--kernel")


# Debug kernel: kmemleak's automatic scans off and the boot's own reports
# cleared before the first job of a boot, ohca unloaded at the end of every
# job, then a scan. A scan takes about a minute and a half under TCG, so a
# serving VM (tests/vm/ohcavm.py Pool) scans once, after its last job
# (DebugKernelCluster.final_check; a leak stays unreferenced, so it is
# still found then, and its report names the allocation's stack). The check
# runs from an EXIT trap, so it also runs after `exit N` in a test's script;
# it only turns a passing job into a failing one.
KMEMLEAK_WRAP = r"""
ohca_kmemleak_check() {
    local rc=$1 k=/sys/kernel/debug/kmemleak
    trap - EXIT
    for m in ohca_ib ohca_core; do
        if grep -q "^$m " /proc/modules; then
            rmmod $m || { echo "DEBUG-KERNEL: rmmod $m failed at the end of the job"; [ "$rc" -ne 0 ] || rc=1; }
        fi
    done
    if [ -f /share/serve ] && [ -z "${OHCA_KMEMLEAK_SCAN:-}" ]; then
        echo "DEBUG-KERNEL: kmemleak scan after the last job of this boot"
    elif [ -w $k ]; then
        sleep 6  # kmemleak reports objects older than 5 s only
        echo scan >$k
        if [ -s $k ]; then
            echo "DEBUG-KERNEL: kmemleak found new unreferenced objects:"
            cat $k
            head -n 80 $k | sed 's/^/kmemleak-report: /' >/dev/kmsg
            [ "$rc" -ne 0 ] || rc=1
        else
            echo "DEBUG-KERNEL: kmemleak clean"
        fi
    else
        echo "DEBUG-KERNEL: no kmemleak"
    fi
    exit "$rc"
}
if [ -w /sys/kernel/debug/kmemleak ] && [ ! -e /ohca-kmemleak-baseline ]; then
    # no automatic scans during the jobs (slow under TCG); boot-time reports
    # of an automatic scan that already ran are the kernel's: clear them
    echo scan=off >/sys/kernel/debug/kmemleak
    echo clear >/sys/kernel/debug/kmemleak
    touch /ohca-kmemleak-baseline
fi
trap 'ohca_kmemleak_check $?' EXIT
"""


class DebugKernelCluster(ohcavm.Cluster):
    """A Cluster whose jobs are wrapped in the kmemleak baseline/check (the
    preamble moves into the wrapped script, after the baseline).

    The CPU has no 5-level paging: with LA57, an interrupt that lands while
    identify_cpu() has the boot CPU's feature words cleared makes 6.1's
    KASAN see the LA57 direct map as a wild address ("BUG: KASAN:
    wild-memory-access in do_raw_spin_lock" at ~0.004 s of boot, seen here
    under host load), which also turns lockdep off for the rest of the run.
    QEMU takes the last -cpu option."""

    # KASAN, lockdep and kmemleak make the guest 2-4 times slower under
    # TCG: host-side timeouts (job, guest marks) are scaled by this.
    TIMEOUT_FACTOR = float(os.environ.get("OHCA_DEBUG_TIMEOUT_FACTOR", "3"))

    def __init__(self, *args, **kw):
        kw["extra_args"] = ["-cpu", "max,la57=off"] + list(kw.get("extra_args") or [])
        # The firmware's PCI interrupt routing method (_PRT) loops longer
        # than ACPICA's 30 s loop limit in this kernel under TCG and is
        # aborted twice per boot: a minute of every debug boot for nothing.
        # Every device here uses MSI or MSI-X; INTx routing comes from the
        # BIOS's table instead.
        base = kw.get("append")
        base = os.environ.get("OHCA_APPEND", "") if base is None else base
        kw["append"] = f"pci=noacpi {base}".strip()
        super().__init__(*args, **kw)
        for vm in self.vms:
            plain = vm.wait_mark

            def wait_mark(name, timeout=120, _plain=plain):
                return _plain(name, timeout * self.TIMEOUT_FACTOR)
            vm.wait_mark = wait_mark

    timeout_factor = TIMEOUT_FACTOR

    # The kernel's automatic kmemleak scan starts a minute after boot and,
    # under TCG, takes minutes; the job's baseline (scan=off) then waits for
    # it to end (272 s measured). Stopped as soon as init reads env.sh,
    # before it starts; each job scans once, at its end.
    env_tail = ("if [ -w /sys/kernel/debug/kmemleak ]; then "
                "echo scan=off >/sys/kernel/debug/kmemleak; fi\n")

    def wait(self, timeout=ohcavm.DEFAULT_TIMEOUT):
        return super().wait(timeout * self.TIMEOUT_FACTOR)

    def final_check(self):
        """The kmemleak scan of a serving cluster, after its last job: a list
        of problems (empty when clean)."""
        results = self.run_job(["export OHCA_KMEMLEAK_SCAN=1"] * self.nvms, preamble=False,
                               timeout=300)
        return [f"{r.name} ({self.logdir}): kmemleak after the jobs of this boot: {r.summary()}\n"
                + r.output[-4000:]
                for r in results if not r.ok or "kmemleak clean" not in r.output]

    def wrap(self, scripts, preamble):
        pre = ""
        if preamble:
            pre = ("if ! ohca_preamble; then\n"
                   "    echo 'ohca: preamble failed' >&2\n"
                   f"    exit {ohcavm.PREAMBLE_FAILED}\n"
                   "fi\n")
        return [KMEMLEAK_WRAP + pre + "# --- test script ---\n" + s for s in scripts], False


def _debug_kernel_everywhere(config):
    """With --kernel debug, clusters made directly (module-scoped fixtures
    such as test_devinfo's) get the same treatment as vm_cluster's."""
    if config.getoption("--kernel") == "debug":
        ohcavm.Cluster = DebugKernelCluster


@pytest.fixture
def vm_logdir(request):
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name).strip("_")
    return make_logdir(name)


@pytest.fixture
def vm_cluster(nic, kernel_kind, vm_logdir, vm_pool):
    made = []
    cls = DebugKernelCluster if kernel_kind == "debug" else ohcavm.Cluster

    def make(nvms=1, restore=False, **kw):
        """restore=True: VMs of a shape the session's pool runs are restored
        from a boot image (saved from the pool's VM if there is none yet)
        instead of booted (tests/vm/harness/images.py); the job then runs
        as a serving VM's job after the restore, not as the boot's."""
        kw.setdefault("nic", nic)
        kw.setdefault("logdir", vm_logdir)
        if restore and os.environ.get("OHCA_VM_POOL", "1") != "0":
            kw["images"] = vm_pool.images
        c = cls(os.path.basename(vm_logdir), nvms=nvms, **kw)
        if c.images:
            vm_pool.images.save_from(vm_pool.clusters.values(), c)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


@pytest.fixture(scope="session")
def vm_cluster_class(kernel_kind):
    """The Cluster class of this session's kernel."""
    return DebugKernelCluster if kernel_kind == "debug" else ohcavm.Cluster


@pytest.fixture(scope="session")
def vm_pool():
    """The session's booted VMs (ohcavm.Pool); OHCA_VM_POOL=0 turns reuse off."""
    # build/test-logs/pool, or pool-<pid> while another session owns it
    pool = ohcavm.Pool(make_logdir("pool"))
    yield pool
    problems = pool.close()
    if problems:
        pytest.fail("checks after the pooled jobs failed:\n" + "\n".join(problems))


@pytest.fixture
def vm_run(vm_cluster, vm_pool, vm_cluster_class, nic, vm_logdir):
    """vm_run(scripts, nvms=1, preamble=True, timeout, fresh=False, **kw):
    runs a job in the session's VMs of this shape (vm_pool), or with
    fresh=True (or arguments the pool cannot share, such as a fault wire or
    a capture) in VMs booted for this job alone."""
    def run(scripts, nvms=1, preamble=True, timeout=ohcavm.DEFAULT_TIMEOUT, fresh=False,
            **kw):
        kw.setdefault("nic", nic)
        if not fresh and os.environ.get("OHCA_VM_POOL", "1") != "0" and vm_pool.poolable(kw):
            return vm_pool.run(vm_cluster_class, scripts, nvms=nvms, preamble=preamble, timeout=timeout,
                               logdir=vm_logdir, **kw)
        c = vm_cluster(nvms=nvms, **kw)
        c.start(scripts, preamble=preamble)
        return c.wait(timeout)

    return run
