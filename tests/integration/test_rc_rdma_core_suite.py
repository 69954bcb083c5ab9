"""rdma-core's upstream Python test suite (/opt/rdma-core-tests in the
image) against ohca0 in one VM. The suite must finish (bounded by a
timeout, no hang) with no test failed or errored, every test listed in
rdma-core-suite.pass must pass (a test that passed before and now skips
is a regression too), QEMU must not crash and the kernel log must stay
clean. The counts, the slowest cases and tests that pass but are not in
the baseline yet are printed."""

import os
import re

import pytest

from vmtest import assert_klog_clean, section
from harness.host import distro

pytestmark = pytest.mark.ohca_only

# Seconds inside the guest (the whole suite); rdma-core 65's suite loads
# 390 tests to v44's 273 (on 2026-12-06 they took 1208 s under load 22-26
# beside rxe's suite), v56's sits between them. BOOT_MARGIN: the boot
# before it (sid's dracut initrd took 265 s at load 15).
SUITE_TIMEOUT = {"bookworm": 480}.get(distro(), 1800)
BOOT_MARGIN = 120 if distro() == "bookworm" else 420

# run_tests.py's loading, minus the test ids that contain any of the words
# in $OHCA_SUITE_EXCLUDE (unittest's -k can only select, not exclude), and
# one line per test with its outcome and seconds (unittest's own output
# has no times; the suite is the longest single test in `make test`).
RUNNER = r"""
import multiprocessing, os, sys, time, unittest
from importlib.machinery import SourceFileLoader
# The suite's multi-process cases (DMTest.test_multi_process_alloc_dm)
# hand a bound method of the test case to Process: it was written for
# fork, which Python 3.14 (sid) no longer starts by default (forkserver
# pickles the target, and a test case holding a device context cannot be).
multiprocessing.set_start_method("fork")
from args_parser import parser
tests = SourceFileLoader("tests", os.path.join(os.getcwd(), "__init__.py")).load_module()
parser.parse_args()
drop = os.environ.get("OHCA_SUITE_EXCLUDE", "").split()
only = set(os.environ.get("OHCA_SUITE_ONLY", "").split())
def flat(suite):
    for t in suite:
        yield from flat(t) if isinstance(t, unittest.TestSuite) else (t,)
keep = [t for t in flat(unittest.TestLoader().loadTestsFromModule(tests))
        if not any(w in t.id() for w in drop) and (not only or t.id() in only)]
print(f"excluding {drop}: running {len(keep)} tests", flush=True)
class Timed(unittest.TextTestResult):
    def startTest(self, test):
        self.t0 = time.monotonic()
        self.outcome = "passed"
        super().startTest(test)
    def addError(self, test, err):
        self.outcome = "error"
        super().addError(test, err)
    def addFailure(self, test, err):
        self.outcome = "failed"
        super().addFailure(test, err)
    def addSkip(self, test, reason):
        self.outcome = "skipped"
        super().addSkip(test, reason)
    def addExpectedFailure(self, test, err):
        self.outcome = "expected-failure"
        super().addExpectedFailure(test, err)
    def addUnexpectedSuccess(self, test):
        self.outcome = "failed"
        super().addUnexpectedSuccess(test)
    def stopTest(self, test):
        super().stopTest(test)
        print(f"SUITE_CASE {test.id()} {self.outcome} {time.monotonic() - self.t0:.1f}",
              file=sys.stderr, flush=True)
runner = unittest.TextTestRunner(verbosity=2, resultclass=Timed)
res = runner.run(unittest.TestSuite(keep))
sys.exit(0 if res.wasSuccessful() else 1)
"""


def suite_script(timeout=SUITE_TIMEOUT, exclude=(), dev="$OHCA_IBDEV", only=(), log="suite",
                 hugepages=True, gid=1):
    """The guest script: the suite on dev with GID gid (1, RoCE's IPv4 GID;
    an InfiniBand port has GID 0 only), its log,
    SUITE_EXIT <rc> and the port state. exclude: words of test ids to
    leave out (e.g. "rdmacm"); only: test ids to run (all if empty); log:
    the name of its log in /tmp (two suites may run side by side);
    hugepages: reserve the huge pages it uses around it (False when the
    caller does, for suites that run at the same time)."""
    run = (f"OHCA_SUITE_EXCLUDE='{' '.join(exclude)}' OHCA_SUITE_ONLY='{' '.join(only)}' "
           f"timeout -k 5 {timeout} "
           f"python3 - --dev \"{dev}\" --gid {gid} -v > /tmp/{log}.log 2>&1 <<'PYEOF'\n"
           f"{RUNNER.strip()}\nPYEOF")
    return f"""
cd /opt/rdma-core-tests || exit 3
{HUGEPAGES_ON if hugepages else ""}
{run}
rc=$?
{HUGEPAGES_OFF if hugepages else ""}
cat /tmp/{log}.log
echo "SUITE_EXIT $rc"
ibv_devinfo -d "{dev}" | grep -E "state|hca_id"
"""


# 2 MiB huge pages for the tests that ask for them (parent domain, ODP),
# enough for two suites side by side, given back afterwards so that the
# pool's next job has the memory.
HUGEPAGES_ON = "echo 8 > /proc/sys/vm/nr_hugepages"
HUGEPAGES_OFF = "echo 0 > /proc/sys/vm/nr_hugepages"


# Left out on ohca: nothing. (Until 2026-12-05 v44's test_rss_traffic was:
# it has no skip once a raw packet QP can be created, and ibv_create_wq's
# EOPNOTSUPP was an error; receive WQs and RSS QPs came with issue 24.)
OHCA_EXCLUDE = ()

# The same suite on Linux soft-RoCE, for the comparison the counts are
# read against (informational: rxe's own failures are not ohca's). The two
# suites run side by side, one per guest CPU (the suite is the longest job
# of `make test`), so rxe sits on a veth pair of its own: on ohca's
# net_device, rdma_cm (ohca's suite runs its tests) could bind either
# device for ohca's address. rxe loops its own traffic back in the guest's
# kernel, ohca inside the device. rdma_cm is left out on rxe (no peer).
RXE_SETUP = r"""
modprobe rdma_rxe &&
ip link add ohca-rxe type veth peer name ohca-rxe-peer &&
ip addr add 10.78.0.1/24 dev ohca-rxe &&
ip link set ohca-rxe-peer up && ip link set ohca-rxe up &&
rdma link add rxe0 type rxe netdev ohca-rxe &&
ohca_poll 30 test -e /sys/class/infiniband/rxe0/ports/1/gids/1
"""

SCRIPT = f"""
{HUGEPAGES_ON}
({RXE_SETUP.strip()} &&
 {suite_script(exclude=("rdmacm",), dev="rxe0", log="suite-rxe", hugepages=False)}) \\
	>/tmp/rxe.out 2>&1 || echo "RXE_SETUP_FAILED" >>/tmp/rxe.out &
rxe=$!
echo '=== ohca ==='
({suite_script(exclude=OHCA_EXCLUDE, hugepages=False)})
wait $rxe
echo '=== rxe ==='
cat /tmp/rxe.out
rdma link delete rxe0 2>/dev/null
ip link delete ohca-rxe 2>/dev/null
{HUGEPAGES_OFF}
echo '=== end ==='
exit 0
"""


def parse_summary(text):
    """Counts from unittest's summary ("Ran N tests", "FAILED (errors=E,
    failures=F, skipped=S)" or "OK (skipped=S)"); passed = the rest."""
    ran = re.search(r"^Ran (\d+) tests? in ([\d.]+)s", text, re.M)
    final = re.search(r"^(OK|FAILED)\b.*$", text, re.M)
    if not ran or not final:
        return None, None, None
    get = lambda k: int((re.search(rf"\b{k}=(\d+)", final.group(0)) or [0, 0])[1])
    counts = {"failed": get("failures"), "error": get("errors"),
              "skipped": get("skipped"), "expected failures": get("expected failures")}
    counts["passed"] = int(ran.group(1)) - counts["failed"] - counts["error"] - counts["skipped"]
    return counts, int(ran.group(1)), final.group(0)


BASELINE = os.path.join(os.path.dirname(__file__), "rdma-core-suite.pass")
BASELINE_V56 = os.path.join(os.path.dirname(__file__), "rdma-core-suite-v56.pass")
BASELINE_V65 = os.path.join(os.path.dirname(__file__), "rdma-core-suite-v65.pass")


def baseline(path=BASELINE):
    """The suite's test ids that pass on ohca (one per line, # comments)."""
    with open(path) as f:
        return {line.split("#")[0].strip() for line in f} - {""}


def cases(output):
    """{test id: (outcome, seconds)} from the runner's SUITE_CASE lines."""
    return {m[0]: (m[1], float(m[2]))
            for m in re.findall(r"^SUITE_CASE (\S+) (\S+) ([\d.]+)$", output, re.M)}


# Tests v44's suite loads, all of them (OHCA_EXCLUDE is empty): the full
# run must load exactly these, so that a renamed test or a loader change
# cannot make baseline tests vanish unnoticed.
SUITE_TOTAL = 273

# Each release's own suite (from its image's python3-pyverbs):
# the tests it loads (all of them), the baseline of tests that must pass
# (None: none recorded yet) and the fewest passes issue 24 accepts.
# make test runs bookworm's; make test-stack each one (tests/stack.sh).
RELEASES = {
    "bookworm": {"rdma_core": 44, "total": SUITE_TOTAL, "baseline": BASELINE,
                 "min_passed": 153},
    "trixie": {"rdma_core": 56, "total": 321, "baseline": BASELINE_V56, "min_passed": 162},
    "sid": {"rdma_core": 65, "total": 390, "baseline": BASELINE_V65, "min_passed": 195},
}


def release_baseline():
    """The passing tests of the guest's release's suite (its RELEASES entry)."""
    return baseline(RELEASES[distro()]["baseline"])


def check_suite(output, device="ohca0", expected=None, total=SUITE_TOTAL):
    """The suite finished (no hang, a unittest summary), it loaded 'total'
    tests (None: not checked), nothing failed or errored, every test of
    'expected' (default: the whole baseline) ran and passed, and the port
    is still active. Prints the counts, the slowest cases and the new
    passes (to add to the baseline)."""
    m = re.search(r"^SUITE_EXIT (\d+)", output, re.M)
    assert m, output
    assert m.group(1) != "124", "rdma-core suite hung (timeout)\n" + output
    counts, ran, final = parse_summary(output)
    assert ran is not None, "no unittest summary (suite crashed?)\n" + output
    print(f"\nrdma-core suite on {device}: ran {ran}: {counts['passed']} passed, "
          f"{counts['failed']} failed, {counts['skipped']} skipped, "
          f"{counts['error']} error; unittest: {final}; exit {m.group(1)}")
    got = cases(output)
    slow = sorted(got.items(), key=lambda kv: -kv[1][1])[:10]
    print("    slowest: " + ", ".join(f"{t.split('.', 1)[-1]} {s:.1f} s" for t, (_, s) in slow))
    bad = [t for t, (o, _) in got.items() if o in ("failed", "error")]
    for name in bad:
        print("    ERROR/FAIL:", name)
    if expected is None:
        expected = baseline()
    loaded = re.search(r"^excluding .*: running (\d+) tests$", output, re.M)
    assert loaded, "the runner did not say how many tests it loaded\n" + output
    if total is not None:
        assert int(loaded.group(1)) == total, (
            f"the suite loaded {loaded.group(1)} tests, {total} expected "
            "(tests renamed, added or lost: update SUITE_TOTAL and the baseline)")
    missing = sorted(t for t in expected if t not in got)
    assert not missing, "baseline tests that did not run: " + ", ".join(missing)
    lost = sorted(t for t in expected if got[t][0] != "passed")
    new = sorted(t for t, (o, _) in got.items() if o == "passed" and t not in expected)
    for t in new:
        print("    passes, not in the baseline:", t)
    assert "PORT_ACTIVE" in output, "port not active after the suite\n" + output
    assert got, "no SUITE_CASE lines from the runner\n" + output
    assert not bad, f"suite cases failed or errored: {bad}\n" + output
    assert not lost, (f"passed before ({os.path.basename(BASELINE)}), not now: "
                      + ", ".join(f"{t} {got[t][0]}" for t in lost))
    return counts


def test_rdma_core_suite(vm_run):
    release = RELEASES[distro()]
    (r,) = vm_run(SCRIPT, timeout=SUITE_TIMEOUT + BOOT_MARGIN)
    assert r.exit_code == 0 and not r.timed_out and r.error is None, r.report()
    assert_klog_clean([r])
    path = release["baseline"]
    counts = check_suite(section(r.output, "ohca"), total=release["total"],
                         expected=baseline(path) if path else set())
    assert counts["passed"] >= release["min_passed"], (
        f"rdma-core {release['rdma_core']}'s suite: {counts['passed']} passed, "
        f"at least {release['min_passed']} expected")
    rxe = section(r.output, "rxe")
    counts, ran, final = parse_summary(rxe)
    if ran is None:
        print("\nrdma-core suite on rxe0 (same VM, beside ohca's, no rdma_cm): did not run\n"
              + rxe[-2000:])
    else:
        print(f"rdma-core suite on rxe0 (same VM, beside ohca's, no rdma_cm): ran {ran}: "
              f"{counts['passed']} passed, {counts['failed']} failed, "
              f"{counts['skipped']} skipped, {counts['error']} error")
