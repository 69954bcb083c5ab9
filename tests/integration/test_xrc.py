"""XRC in ONE VM job (both ends on ohca0, looped back inside the device):
what ibv_devinfo reports (the XRC capability), rdma-core's own XRC cases
(atomics, the extended CQ, the ibv_wr_* API with SEND and SEND with
immediate, relaxed ordering: XRC domains, XRC SRQs with their CQs, XRC_SEND
and XRC_RECV QPs), and ibv_xsrq_pingpong (polling and events). The parts
share one boot; each checks its section. Then ibv_xsrq_pingpong between two
VMs, in the session's two-VM boot. Linux 6.1's rxe has no XRC, so there is
no interop case (docs/interop.md)."""

import re

import pytest

from test_rc import TWO_VM_CLIENT, TWO_VM_SERVER
from test_rc_rdma_core_suite import cases, suite_script
from vmtest import assert_ok, check_parts, parts_job

pytestmark = pytest.mark.ohca_only

GID = 1

DEVINFO = r"""
ibv_devinfo -v -d "$OHCA_IBDEV" | grep -E "XRC|device_cap_flags"
"""

# The suite's XRC cases, by test id.
SUITE_CASES = (
    "tests.test_atomic.AtomicTest.test_xrc_atomic_fetch_and_add",
    "tests.test_atomic.AtomicTest.test_xrc_atomic_cmp_and_swap",
    "tests.test_cqex.CqExTestCase.test_xrc_traffic_cq_ex",
    "tests.test_qpex.QpExTestCase.test_qp_ex_xrc_send",
    "tests.test_qpex.QpExTestCase.test_qp_ex_xrc_send_imm",
    "tests.test_relaxed_ordering.RoTestCase.test_ro_xrc_traffic",
)

SUITE = suite_script(timeout=300, only=SUITE_CASES)

# Several clients' QPs send to one server process's XRC SRQs through
# per-client target QPs (the tool's own pattern).
XSRQ_PINGPONG = rf"""
set -e
for flags in "" "-e"; do
	timeout 120 ibv_xsrq_pingpong -d "$OHCA_IBDEV" -g {GID} -n 200 $flags > /tmp/srv.log 2>&1 &
	srv=$!
	ohca_retry 20 timeout 120 ibv_xsrq_pingpong -d "$OHCA_IBDEV" -g {GID} -n 200 $flags 127.0.0.1
	wait $srv
	echo "xsrq pingpong '$flags' server:"; cat /tmp/srv.log
done
"""

PARTS = ("devinfo", "suite", "xsrq_pingpong")
SCRIPTS = {"devinfo": DEVINFO, "suite": SUITE, "xsrq_pingpong": XSRQ_PINGPONG}


def job():
    return parts_job((name, SCRIPTS[name]) for name in PARTS)


def check_devinfo(text):
    assert "XRC" in text, text


def check_suite(text):
    got = cases(text)
    bad = {t: got.get(t, ("missing", 0))[0] for t in SUITE_CASES
           if got.get(t, ("missing",))[0] != "passed"}
    assert not bad, f"XRC suite cases not passed: {bad}\n{text}"
    print(f"\nrdma-core suite XRC cases: {len(SUITE_CASES)} passed")


def check_xsrq_pingpong(text):
    # each run prints "success" once on each side
    assert len(re.findall(r"^success$", text, re.M)) >= 4, text


CHECKS = {"devinfo": check_devinfo, "suite": check_suite,
          "xsrq_pingpong": check_xsrq_pingpong}


def test_xrc_loopback(vm_run):
    (r,) = vm_run(job(), timeout=700)
    check_parts(r, {name: CHECKS[name] for name in PARTS})


def test_xsrq_pingpong_two_vms(vm_run):
    """ibv_xsrq_pingpong between two VMs over the wire, polling and with
    completion events."""
    text = "\n".join(f"ibv_xsrq_pingpong -d ohca0 -g {GID} -n 200{f}"
                     for f in ("", " -e"))
    server, client = vm_run({0: TWO_VM_SERVER.replace("{cmds}", text),
                             1: TWO_VM_CLIENT.replace("{cmds}", text)},
                            nvms=2, timeout=600)
    assert_ok([server, client])
    assert client.output.count("CLIENT OK") == 2, client.report()
    assert server.output.count("SERVED") == 2, server.report()
