"""KUnit suites of the driver (kernel/tests/ohca_kunit_test.c) in a debug-kernel VM.

build/kernel-kunit/ohca_kunit.ko (make -C kernel kunit) runs its suites
when it is loaded; `insmod` succeeds even when cases fail, so the verdict
comes from /sys/kernel/debug/kunit/<suite>/results, parsed here (ktap.py)
and, when the debug kernel's tree has it, cross-checked with the kernel's
own tools/testing/kunit/kunit.py parse. Needs --kernel debug.

The KTAP parser's own tests run with any kernel (no VM).
"""

import glob
import os
import re
import subprocess
import sys

import pytest

import ktap
from vmtest import assert_ok, ohcavm

TOP = ohcavm.TOP
KUNIT_MODULE = os.environ.get("OHCA_KUNIT_MODULE",
                              os.path.join(TOP, "build/kernel-kunit/ohca_kunit.ko"))
KUNIT_SOURCE = os.path.join(TOP, "kernel/tests/ohca_kunit_test.c")
KUNIT_PY = os.path.join(TOP, "build/debug-kernel/linux/tools/testing/kunit/kunit.py")

SCRIPT = r"""
insmod /share/ohca_kunit.ko || { echo "insmod ohca_kunit.ko failed"; exit 1; }
for f in /sys/kernel/debug/kunit/ohca_*/results; do
    [ -e "$f" ] || { echo "no KUnit results in debugfs"; exit 1; }
    echo "=== kunit results $f ==="
    cat "$f"
done
echo "=== end ==="
rmmod ohca_kunit || { echo "rmmod ohca_kunit failed"; exit 1; }
"""


def expected_suites():
    """Every suite of every KUnit source: all of them must report (a
    suite that the module's Kbuild stops linking fails here)."""
    suites = set()
    for path in glob.glob(os.path.join(os.path.dirname(KUNIT_SOURCE), "ohca_kunit_*.c")):
        with open(path) as f:
            suites |= set(re.findall(r'\.name\s*=\s*"(ohca_[a-z0-9_]+)"', f.read()))
    return suites


@pytest.mark.debug_kernel
@pytest.mark.ohca_only
def test_kunit_suites(vm_run):
    if not os.path.isfile(KUNIT_MODULE):
        pytest.fail(f"{KUNIT_MODULE} missing: make -C kernel kunit")
    (r,) = vm_run(SCRIPT, preamble=False, timeout=900,
                  extra_files={"ohca_kunit.ko": KUNIT_MODULE})
    results = r.output.split("=== end ===")[0]
    suites = ktap.parse(results)
    print(ktap.summary(suites))

    problems = []
    names = {s.name for s in suites}
    missing = expected_suites() - names
    if missing:
        problems.append(f"suites without results: {sorted(missing)}")
    for s in suites:
        problems += s.problems()
        if s.failed:
            problems += ["  " + d for d in s.diagnostics]
    total = sum(len(s.cases) for s in suites)
    if total == 0:
        problems.append("no KUnit cases ran")

    # The kernel's own parser, from the debug kernel tree (exits non-zero
    # on any failure). It wants one document: give it one suite at a time.
    if os.path.isfile(KUNIT_PY):
        for doc in re.split(r"^=== kunit results .* ===\n", results, flags=re.M)[1:]:
            p = subprocess.run([sys.executable, KUNIT_PY, "parse"], input=doc,
                               capture_output=True, text=True,
                               cwd=os.path.dirname(KUNIT_PY))
            print(p.stdout[-3000:])
            if p.returncode != 0:
                problems.append(f"kunit.py parse exited {p.returncode}:\n{p.stdout[-2000:]}{p.stderr[-1000:]}")

    assert not problems, "\n".join(problems) + "\n\n" + r.report()
    assert_ok([r])


# -- the parser ---------------------------------------------------------------

SAMPLE_PASS = """\
KTAP version 1
1..1
    KTAP version 1
    # Subtest: ohca_eq
    1..2
    ok 1 ohca_test_eq_empty
    ok 2 ohca_test_eq_phase
# ohca_eq: pass:2 fail:0 skip:0 total:2
# Totals: pass:2 fail:0 skip:0 total:2
ok 1 ohca_eq
"""

SAMPLE_FAIL = """\
[   40.1] KTAP version 1
[   40.1] 1..1
[   40.2]     KTAP version 1
[   40.2]     # Subtest: ohca_cmd
[   40.2]     1..3
[   40.3]     ok 1 ohca_test_status_to_errno
[   40.4]         # ohca_test_names: EXPECTATION FAILED at kernel/tests/x.c:10
[   40.4]         Expected a == b, but
[   40.5]     not ok 2 ohca_test_names
[   40.6]     ok 3 ohca_test_skipme # SKIP not here
[   40.7] # ohca_cmd: pass:1 fail:1 skip:1 total:3
[   40.7] not ok 1 ohca_cmd
"""


def test_ktap_parse_pass():
    (s,) = ktap.parse(SAMPLE_PASS)
    assert s.name == "ohca_eq" and s.status == "ok" and s.plan == 2
    assert [c.name for c in s.passed] == ["ohca_test_eq_empty", "ohca_test_eq_phase"]
    assert s.problems() == []


def test_ktap_parse_fail():
    (s,) = ktap.parse(SAMPLE_FAIL)
    assert s.status == "not ok"
    assert [c.name for c in s.failed] == ["ohca_test_names"]
    assert [c.name for c in s.skipped] == ["ohca_test_skipme"]
    assert any("EXPECTATION FAILED" in d for d in s.diagnostics)
    assert "suite ohca_cmd: not ok 2 ohca_test_names" in s.problems()


def test_ktap_parse_truncated():
    text = "\n".join(SAMPLE_PASS.splitlines()[:6])  # crashed after case 1
    (s,) = ktap.parse(text)
    assert s.status is None
    probs = s.problems()
    assert any("no result line" in p for p in probs)
    assert any("plan 1..2 but 1 results" in p for p in probs)


def test_ktap_parse_concatenated():
    suites = ktap.parse(SAMPLE_PASS + SAMPLE_FAIL)
    assert [s.name for s in suites] == ["ohca_eq", "ohca_cmd"]
    assert [s.status for s in suites] == ["ok", "not ok"]
