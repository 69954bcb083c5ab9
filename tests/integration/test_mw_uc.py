"""Memory windows in ONE VM job (both ends on ohca0, looped back inside the
device): what ibv_devinfo reports (max_mw, the MEM_WINDOW capability
flags), rdma-core's own MWTest cases (type 1 and type 2 windows, RDMA
WRITE through a window's rkey, invalidation by rebinding, LOCAL_INV, SEND
with invalidate and deallocation, each followed by a remote access error),
and a pyverbs program for what the suite does not check: an MR with a bound
window cannot be deregistered (EBUSY) until the window is gone. The parts
share one boot; each checks its section."""

import re

import pytest

from vmtest import assert_ok, section

pytestmark = pytest.mark.ohca_only

GID = 1

DEVINFO = r"""
ibv_devinfo -v -d "$OHCA_IBDEV" | grep -E "max_mw|MEM_WINDOW"
"""

# The suite's cases for this feature, by name (unittest -k selects).
SUITE_CASES = ("MWTest",)
SUITE_EXPECTED = 7

SUITE = rf"""
cd /opt/rdma-core-tests || exit 3
timeout -k 5 300 python3 run_tests.py --dev "$OHCA_IBDEV" --gid {GID} -v \
	{' '.join(f'-k {c}' for c in SUITE_CASES)} > /tmp/suite.log 2>&1
rc=$?
cat /tmp/suite.log
exit $rc
"""

DEREG_BUSY_PY = r"""
import errno, os, sys
from importlib.machinery import SourceFileLoader
os.chdir("/opt/rdma-core-tests")
sys.path.insert(0, os.getcwd())
gid = int(sys.argv[1]) if len(sys.argv) > 1 else 1
sys.argv = sys.argv[:1]
SourceFileLoader("tests", os.path.join(os.getcwd(), "__init__.py")).load_module()
from tests.base import RCResources
import tests.utils as u
import pyverbs.enums as e
from pyverbs.mr import MR, MW, MWBindInfo, MWBind
from pyverbs.pyverbs_error import PyverbsRDMAError

dev = os.environ["OHCA_IBDEV"]
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

PARTS = ("devinfo", "suite", "dereg_busy")
SCRIPTS = {"devinfo": DEVINFO, "suite": SUITE, "dereg_busy": DEREG_BUSY}


def job():
    out = ["rc=0"]
    for name in PARTS:
        out += [f"echo '=== {name} ==='", "(", SCRIPTS[name], ")", "prc=$?",
                f"echo \"PART {name} rc=$prc\"", "[ $prc -eq 0 ] || rc=1"]
    out += ["echo '=== end ==='", "exit $rc"]
    return "\n".join(out)


def check_devinfo(text):
    assert re.search(r"max_mw:\s+1024", text), text
    assert "MEM_WINDOW_TYPE_2B" in text, text


def check_suite(text):
    ran = re.search(r"^Ran (\d+) tests?", text, re.M)
    assert ran and int(ran.group(1)) == SUITE_EXPECTED, text
    # "name (id) ... ok", the "... ok" on a line of its own after a docstring
    passed = re.findall(r"\.\.\. ok$", text, re.M)
    assert len(passed) == SUITE_EXPECTED, text
    assert re.search(r"^OK$", text, re.M), text
    print(f"\nrdma-core suite {SUITE_CASES}: {len(passed)} passed")


def check_dereg_busy(text):
    assert "DEREG_BUSY" in text, text
    assert "DEREG_AFTER_DEALLOC ok" in text, text
    assert "MW_TYPE3 refused" in text, text


CHECKS = {"devinfo": check_devinfo, "suite": check_suite, "dereg_busy": check_dereg_busy}


def test_memory_windows_loopback(vm_run):
    (r,) = vm_run(job(), timeout=600)
    failed = []
    for name in PARTS:
        text = section(r.output, name)
        if not re.search(rf"^PART {name} rc=0$", text, re.M):
            failed.append(name)
            continue
        CHECKS[name](text)
    assert not failed, f"parts failed: {failed}\n" + r.report()
    assert_ok([r])
