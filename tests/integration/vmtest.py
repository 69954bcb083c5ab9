"""Helpers shared by the integration tests (importable from test modules)."""

import contextlib
import glob
import os
import re
import shutil
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vm"))
import ohcavm  # noqa: E402  (re-exported for the tests)
from harness.common import NIC_ID, HarnessError  # noqa: E402
from harness.qmp import QMP  # noqa: E402


def make_logdir(name):
    """build/test-logs/<name>/, emptied. If another live process owns it (two
    test runs at once in one checkout), build/test-logs/<name>-<pid>/."""
    base = os.path.join(ohcavm.TOP, "build", "test-logs", name)
    path = base
    owner = os.path.join(base, ".owner")
    try:
        with open(owner) as f:
            pid = int(f.read().strip())
        if pid != os.getpid():
            os.kill(pid, 0)  # raises if that process is gone
            path = f"{base}-{os.getpid()}"
    except (OSError, ValueError):
        pass
    shutil.rmtree(path, ignore_errors=True)
    try:
        os.makedirs(path)
    except FileExistsError:
        # Another run started in the same instant and made it first.
        path = f"{base}-{os.getpid()}"
        shutil.rmtree(path, ignore_errors=True)
        os.makedirs(path)
    with open(os.path.join(path, ".owner"), "w") as f:
        f.write(f"{os.getpid()}\n")
    return path


def assert_ok(results):
    """Fails with a full report unless every VM exited 0 with a clean kernel log."""
    bad = [r for r in results if not r.ok]
    if bad:
        raise AssertionError("\n\n".join(r.report() for r in bad))


def assert_klog_clean(results):
    bad = [r for r in results if r.kernel_problems or r.sanitizer]
    if bad:
        raise AssertionError("\n\n".join(r.report() for r in bad))


def section(output, name):
    """Text between the lines '=== NAME ===' and the next '=== ... ===' line."""
    m = re.search(rf"^=== {re.escape(name)} ===\n(.*?)(?=^=== |\Z)", output, re.S | re.M)
    if not m:
        raise AssertionError(f"section '{name}' missing from the job output:\n{output}")
    return m.group(1)


def hw_counters(output):
    """The RDMA hw counters the guest's ohca_hw_counters printed (the
    HW_COUNTERS line), by name; {} when it printed none."""
    m = re.search(r"^HW_COUNTERS(.*)$", output, re.M)
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(1))} if m else {}


def parse_devinfo(text):
    """Parses `ibv_devinfo -v` for one device.

    Returns {"fields": {name: value}, "ports": {n: {"fields": {...},
    "gids": [(index, gid, type)]}}}."""
    dev = {"fields": {}, "ports": {}}
    port = None
    for line in text.splitlines():
        m = re.match(r"^\t\tport:\t(\d+)$", line)
        if m:
            port = {"fields": {}, "gids": []}
            dev["ports"][int(m.group(1))] = port
            continue
        m = re.match(r"^\t+GID\[\s*(\d+)\]:\s+(\S+?),\s*(.+)$", line)
        if m and port is not None:
            port["gids"].append((int(m.group(1)), m.group(2), m.group(3).strip()))
            continue
        m = re.match(r"^(\t+)([A-Za-z_][\w ]*?):\s*(.*)$", line)
        if not m:
            continue
        depth, key, value = len(m.group(1)), m.group(2), m.group(3).strip()
        if port is None and depth == 1:
            dev["fields"].setdefault(key, value)
        elif port is not None and depth == 3:
            port["fields"].setdefault(key, value)
    return dev


# The start of a pyverbs script that uses the rdma-core suite's resource
# helpers (tests/base.py) from the guest's copy of the suite; argv[1] is the
# GID index (1 by default), the device is $OHCA_IBDEV.
PYVERBS_PRELUDE = r"""
import errno, os, sys
from importlib.machinery import SourceFileLoader
os.chdir("/opt/rdma-core-tests")
sys.path.insert(0, os.getcwd())
gid = int(sys.argv[1]) if len(sys.argv) > 1 else 1
sys.argv = sys.argv[:1]
SourceFileLoader("tests", os.path.join(os.getcwd(), "__init__.py")).load_module()
from tests.base import RCResources
import tests.utils as u
sys.path.insert(0, "/share")
from ohca_pyverbs import verbs_enums
e = verbs_enums()
dev = os.environ["OHCA_IBDEV"]
"""


def parts_job(parts):
    """One VM job of named parts, (name, shell script) in order: each runs
    in a subshell, in its own '=== name ===' section ending with
    'PART name rc=N'; the job fails if any part does, after all ran."""
    out = ["rc=0"]
    for name, script in parts:
        out += [f"echo '=== {name} ==='", "(", script, ")", "prc=$?",
                f"echo \"PART {name} rc=$prc\"", "[ $prc -eq 0 ] || rc=1"]
    out += ["echo '=== end ==='", "exit $rc"]
    return "\n".join(out)


def check_parts(result, checks):
    """The parts of a parts_job run: each of checks (name -> function of
    its section's text) ended with rc=0 and passes its check; then the VM's
    run was clean."""
    failed = []
    for name, check in checks.items():
        text = section(result.output, name)
        if not re.search(rf"^PART {name} rc=0$", text, re.M):
            failed.append(name)
            continue
        check(text)
    assert not failed, f"parts failed: {failed}\n" + result.report()
    assert_ok([result])


# One perftest run in one VM: the server in the background, the client to
# 127.0.0.1 (retried until the server listens), both must succeed and the
# client print its figure line.
_PERFTEST_ONE = r"""
timeout 120 {tool} -d "$OHCA_IBDEV" -x {gid} -F {args} > /tmp/srv.log 2>&1 &
srv=$!
ohca_retry 20 timeout 120 {tool} -d "$OHCA_IBDEV" -x {gid} -F {args} 127.0.0.1 > /tmp/cli.log 2>&1
c=$?
wait $srv
s_rc=$?
line=$(grep -E "{line}" /tmp/cli.log | tail -1)
echo "RESULT {tool} {label} client=$c server=$s_rc :$line"
if [ $c -ne 0 ] || [ $s_rc -ne 0 ] || [ -z "$line" ]; then
	rc=1; tail -n 8 /tmp/cli.log /tmp/srv.log
fi
"""


def perftest_loopback(cases, gid):
    """A guest script running perftest cases (tool, label, args, regex of
    the client's figure line) in turn; prints RESULT <tool> <label>
    client=<rc> server=<rc> :<line> for each, exits 1 if any failed."""
    return ("rc=0\n"
            + "".join(_PERFTEST_ONE.format(tool=t, label=label, args=args, line=line, gid=gid)
                      for t, label, args, line in cases)
            + "exit $rc\n")


def qemu_own_rss(pid):
    """QEMU's resident memory without the guest's RAM (the mapping of 1 GiB
    and more) and TCG's code buffer (anonymous and executable): those grow
    as the guest touches its memory and runs new code, whatever the device
    does."""
    total = 0
    counted = False
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split()
            if re.match(r"^[0-9a-f]+-[0-9a-f]+$", head[0]):
                lo, hi = (int(x, 16) for x in head[0].split("-"))
                counted = hi - lo < 1 << 30 and not ("x" in head[1] and len(head) < 6)
            elif head[0] == "Rss:" and counted:
                total += int(head[1]) * 1024
    return total


def engine_heap(pid):
    """The device engine's heap in QEMU 'pid' (its x-engine-heap property,
    through the QMP socket on its command line): the device's own memory,
    which neither the guest's RAM nor TCG's tables touch. None if QEMU
    does not answer."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().decode(errors="replace").split("\0")
        spec = argv[argv.index("-qmp") + 1]
        qmp = QMP(spec.removeprefix("unix:").split(",")[0])
        return int(qmp.execute("qom-get", path=f"/machine/peripheral/{NIC_ID}",
                               property="x-engine-heap"))
    except (OSError, ValueError, IndexError, HarnessError):
        return None


class QemuMemory:
    """What qemu_memory_at_marks found: for each guest mark of vm0, its
    QEMU's own resident memory (rss: qemu_own_rss) and the device engine's
    heap (heap: engine_heap), in bytes."""

    def __init__(self):
        self.rss = {}
        self.heap = {}

    def get(self, mark):  # the resident memory, as the tests read it
        return self.rss.get(mark)

    def __repr__(self):
        return f"rss {self.rss} heap {self.heap}"


def qemu_memory_at_marks(marks, stop, mem):
    """Host side of a VM job: for each guest mark of vm0 (in order), vm0's
    QEMU memory (QemuMemory) when the mark appears. vm0 is found by its
    share directory in QEMU's command line, so this works for pooled and
    freshly booted VMs alike."""
    top = os.path.join(ohcavm.TOP, "build", "test-logs")
    start = time.time()
    pid = None
    while not stop.is_set() and len(mem.rss) < len(marks):
        mark = marks[len(mem.rss)]
        for path in glob.glob(os.path.join(top, "**", "vm0", "share", "sync", f"guest.{mark}"),
                              recursive=True):
            if os.path.getmtime(path) < start - 1:
                continue  # another test's
            share = os.path.dirname(os.path.dirname(path))
            if pid is None:
                for cmd in glob.glob("/proc/[0-9]*/cmdline"):
                    try:
                        with open(cmd, "rb") as f:
                            if f"path={share},".encode() in f.read():
                                pid = int(cmd.split("/")[2])
                    except OSError:
                        pass
            if pid is not None:
                mem.rss[mark] = qemu_own_rss(pid)
                heap = engine_heap(pid)
                if heap is not None:
                    mem.heap[mark] = heap
        time.sleep(0.1)


@contextlib.contextmanager
def watch_qemu_rss(marks):
    """While the block runs (the VM job), qemu_memory_at_marks in a thread;
    yields the QemuMemory it fills for the marks seen."""
    stop = threading.Event()
    mem = QemuMemory()
    watcher = threading.Thread(target=qemu_memory_at_marks, args=(marks, stop, mem),
                               daemon=True)
    watcher.start()
    try:
        yield mem
    finally:
        stop.set()
        watcher.join()
