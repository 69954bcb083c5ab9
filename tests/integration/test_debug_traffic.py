"""RC traffic and the rdma-core suite on the debug kernel (issue 5), in ONE
VM job: a debug-kernel boot under TCG costs about two minutes, so the
parts share it instead of booting once per test.

The parts are the normal-kernel tests' own scripts and checks:
test_rc.py's integrity loopback (ohca_rc_integrity at path MTUs 256, 1024,
4096) and ibv_rc_pingpong loopback (polling and events), test_rc_negative's
error completions, and a sample of the rdma-core suite's tests that pass
on ohca (the release's rdma-core-suite*.pass: up to three of each module) without its rdma_cm cases (each runs two processes
for many seconds; the stock-kernel suite test runs them): a skipped case
exercises nothing of the driver and costs as much time. Each part runs in a subshell and
its section of the output is checked as its own test checks it. KASAN,
lockdep and DEBUG_OBJECTS reports fail through the kernel-log scan;
kmemleak is scanned after unloading ohca at the end of the job
(conftest.py). Needs --kernel debug (tests/debug-kernel/smoke.sh)."""

import re

import pytest

from test_rc import (PINGPONG_LOOPBACK, check_integrity_loopback, check_pingpong_loopback,
                     integrity_loopback_script)
from test_rc_negative import SCRIPT as NEGATIVE, check_negative
from test_rc_rdma_core_suite import check_suite, release_baseline, suite_script
from vmtest import assert_ok, section

pytestmark = [pytest.mark.ohca_only, pytest.mark.debug_kernel]

# seconds inside the guest for the suite's passing tests: the whole suite
# took over 480 s on the debug kernel once atomics ran (2026-12-01; each
# case 2-6 s, a skipped one as much as a passing one, as setUp creates
# resources before it skips)
SUITE_TIMEOUT = 480
# of each suite module's passing tests, this many, spread over the module:
# all 114 took more than SUITE_TIMEOUT on the debug kernel (2026-12-02),
# five of each 206 s, and a module's tests drive the same driver paths
PER_MODULE = 3


def sample(ids, per_module=PER_MODULE):
    """Up to per_module test ids of each module, evenly spaced in order."""
    modules = {}
    for t in sorted(ids):
        modules.setdefault(t.split(".")[1], []).append(t)
    out = []
    for tests in modules.values():
        step = max(1, len(tests) / per_module)
        out += sorted({tests[int(i * step)] for i in range(min(per_module, len(tests)))})
    return out


# rdma_cm is left out on the debug kernel (the suite runs it on Debian's)
SAMPLE = sample(t for t in release_baseline() if "rdmacm" not in t)

PARTS = (
    ("integrity", integrity_loopback_script(), check_integrity_loopback),
    ("pingpong", PINGPONG_LOOPBACK, check_pingpong_loopback),
    ("negative", NEGATIVE, check_negative),
    ("suite", suite_script(SUITE_TIMEOUT, exclude=("rdmacm",), only=SAMPLE),
     lambda out: check_suite(out, expected=SAMPLE, total=len(SAMPLE))),
)


def job(parts=PARTS):
    """One guest script of parts (name, script, check): each in a subshell,
    its output a section '=== name ===' with a line PART <name> rc=<rc>."""
    # the integrity part raises the MTU; every part starts from the same one
    out = ["rc=0", 'mtu0=$(cat "/sys/class/net/$OHCA_IFACE/mtu")']
    for name, script, _ in parts:
        out += [f"echo '=== {name} ==='",
                f"echo \"debug-traffic: {name} at $(cut -d' ' -f1 /proc/uptime) s\" >/dev/kmsg",
                "(", script, ")",
                "prc=$?",
                f"echo \"PART {name} rc=$prc\"",
                "[ $prc -eq 0 ] || rc=1",
                'ip link set "$OHCA_IFACE" mtu "$mtu0" && ohca_wait_port ACTIVE 60 || rc=1']
    out += ["echo '=== end ==='", "exit $rc"]
    return "\n".join(out)


def test_rc_traffic_and_suite_debug_kernel(vm_run):
    # host-side timeout: the conftest scales it by the debug factor (3)
    (r,) = vm_run(job(), timeout=SUITE_TIMEOUT + 600)
    check_parts(r, PARTS)


def check_parts(r, parts):
    """Each part of job(parts) ended with rc 0 and passes its check."""
    for name, _, check in parts:
        text = section(r.output, name)
        assert re.search(rf"^PART {name} rc=0$", text, re.M), f"part {name} failed\n" + r.report()
        check(text)
    assert_ok([r])
