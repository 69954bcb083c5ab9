"""Memory windows and UC QPs in ONE VM job (both ends on ohca0, looped back
inside the device): what ibv_devinfo reports (max_mw, the MEM_WINDOW
capability flags), rdma-core's own MWTest cases (type 1 and type 2 windows,
RDMA WRITE through a window's rkey, invalidation by rebinding, LOCAL_INV,
SEND with invalidate and deallocation, each followed by a remote access
error) and its UC QP cases (create, modify, query), a pyverbs program for
what the suite does not check (an MR with a bound window cannot be
deregistered, EBUSY, until the window is gone; a type 3 window is refused),
and ibv_uc_pingpong (polling and events). The parts share one boot; each
checks its section. Then ibv_uc_pingpong between two VMs, in the session's
two-VM boot."""

import re

import pytest

from test_rc import TWO_VM_CLIENT, TWO_VM_SERVER
from vmtest import PYVERBS_PRELUDE, assert_ok, check_parts, parts_job

pytestmark = pytest.mark.ohca_only

GID = 1

DEVINFO = r"""
ibv_devinfo -v -d "$OHCA_IBDEV" | grep -E "max_mw|MEM_WINDOW"
"""

# The suite's cases for this feature, by name (unittest -k selects).
SUITE_CASES = ("MWTest", "test_create_uc", "test_query_uc")
# rdma-core 44's count (56 has the same); 65 adds test_mw_ex_type1: 13
SUITE_RAN = 7 + 5

SUITE = rf"""
cd /opt/rdma-core-tests || exit 3
timeout -k 5 300 python3 run_tests.py --dev "$OHCA_IBDEV" --gid {GID} -v \
	{' '.join(f'-k {c}' for c in SUITE_CASES)} > /tmp/suite.log 2>&1
rc=$?
cat /tmp/suite.log
exit $rc
"""

DEREG_BUSY_PY = PYVERBS_PRELUDE + r"""
from pyverbs.mr import MR, MW, MWBindInfo, MWBind
from pyverbs.pyverbs_error import PyverbsRDMAError
r = RCResources(dev, 1, gid)
r.pre_run(r.psns, r.qps_num)  # connected to itself: the bind needs an RTS QP
mr = MR(r.pd, 4096, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_MW_BIND)
mw = MW(r.pd, e.IBV_MW_TYPE_1)
info = MWBindInfo(mr, mr.buf, 4096, e.IBV_ACCESS_REMOTE_WRITE)
r.qp.bind_mw(mw, MWBind(info, e.IBV_SEND_SIGNALED))
u.poll_cq(r.cq)
try:
    mr.close()
    raise SystemExit("DEREG of an MR with a bound window succeeded")
except PyverbsRDMAError as ex:
    assert ex.error_code == errno.EBUSY, ex
print("DEREG_BUSY", flush=True)
mw.close()
mr.close()
print("DEREG_AFTER_DEALLOC ok", flush=True)
# Type 3 does not exist: refused, and not as "unsupported".
try:
    MW(r.pd, 3)
    raise SystemExit("type 3 window allocated")
except PyverbsRDMAError as ex:
    assert ex.error_code not in (0, errno.EOPNOTSUPP), ex
print("MW_TYPE3 refused", flush=True)
"""

DEREG_BUSY = f"""
cat > /tmp/dereg_busy.py <<'PYEOF'
{DEREG_BUSY_PY.strip()}
PYEOF
timeout -k 5 90 python3 /tmp/dereg_busy.py {GID}
"""

# 4096-byte messages: four packets each at the 1024-byte path MTU.
UC_PINGPONG = rf"""
set -e
for flags in "" "-e"; do
	timeout 120 ibv_uc_pingpong -d "$OHCA_IBDEV" -g {GID} -n 500 -s 4096 $flags > /tmp/srv.log 2>&1 &
	srv=$!
	ohca_retry 20 timeout 120 ibv_uc_pingpong -d "$OHCA_IBDEV" -g {GID} -n 500 -s 4096 $flags 127.0.0.1
	wait $srv
	echo "uc pingpong '$flags' server:"; cat /tmp/srv.log
done
"""

PARTS = ("devinfo", "suite", "dereg_busy", "uc_pingpong")
SCRIPTS = {"devinfo": DEVINFO, "suite": SUITE, "dereg_busy": DEREG_BUSY,
           "uc_pingpong": UC_PINGPONG}


def job():
    return parts_job((name, SCRIPTS[name]) for name in PARTS)


def check_devinfo(text):
    assert re.search(r"max_mw:\s+1024", text), text
    assert "MEM_WINDOW_TYPE_2B" in text, text


def check_suite(text):
    ran = re.search(r"^Ran (\d+) tests?", text, re.M)
    assert ran and int(ran.group(1)) >= SUITE_RAN, text
    # "name (id) ... ok", the "... ok" on a line of its own after a docstring
    passed = re.findall(r"\.\.\. ok$", text, re.M)
    # all of them: the provider has create_qp_ex, so none may skip
    assert len(passed) == int(ran.group(1)), text
    for name in ("test_mw_type2_invalidate_remote", "test_create_uc_qp_no_attr",
                 "test_create_uc_qp_with_attr"):
        assert re.search(rf"^{name} \(.*\n?.*\.\.\. ok$", text, re.M), (name, text)
    assert re.search(r"^OK( \(skipped=\d+\))?$", text, re.M), text
    print(f"\nrdma-core suite {SUITE_CASES}: {len(passed)} passed of {ran.group(1)}")


def check_dereg_busy(text):
    assert "DEREG_BUSY" in text, text
    assert "DEREG_AFTER_DEALLOC ok" in text, text
    assert "MW_TYPE3 refused" in text, text


def check_uc_pingpong(text):
    assert len(re.findall(r"\b500 iters in", text)) >= 4, text


CHECKS = {"devinfo": check_devinfo, "suite": check_suite, "dereg_busy": check_dereg_busy,
          "uc_pingpong": check_uc_pingpong}


def test_memory_windows_and_uc_loopback(vm_run):
    (r,) = vm_run(job(), timeout=600)
    check_parts(r, {name: CHECKS[name] for name in PARTS})


def test_uc_pingpong_two_vms(vm_run):
    """ibv_uc_pingpong between two VMs over the wire, polling and with
    completion events (multi-packet messages, no ACKs on the wire)."""
    cmds = [f"ibv_uc_pingpong -d ohca0 -g {GID} -n 300 -s 4096",
            f"ibv_uc_pingpong -d ohca0 -g {GID} -n 300 -s 4096 -e"]
    text = "\n".join(cmds)
    server, client = vm_run({0: TWO_VM_SERVER.replace("{cmds}", text),
                             1: TWO_VM_CLIENT.replace("{cmds}", text)},
                            nvms=2, timeout=600)
    assert_ok([server, client])
    assert client.output.count("CLIENT OK") == len(cmds), client.report()
    assert server.output.count("SERVED") == len(cmds), server.report()

