"""Sharing the device (audit N7, docs/architecture.md "Sharing the device
between users"): an unprivileged process takes every user context, then
every CQ and PD it can get; the refusals are ENOMEM, the administrator can
still open the device, and a kernel consumer loaded afterwards (the kernel
verbs check, kernel/tools/kverbs: a PD with its DMA MR, CQs, RC QPs,
fast-registration MRs) still gets its objects from the kernel's reserve.
Without the reserve the process takes the whole CQ and PD tables and the
module's insmod fails."""

import os

import pytest

from vmtest import assert_ok
from harness.host import build_dir

pytestmark = pytest.mark.ohca_only

KVERBS_MODULE = os.path.join(build_dir("kernel"), "ohca_kverbs_test.ko")
GID = 1

# The hog: contexts until refused, held while the administrator opens one
# (/tmp/ctx.done), then all but one closed; then CQs and PDs until refused,
# held until /tmp/release exists.
HOG_PY = r'''
import os, sys, time
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsError, PyverbsRDMAError

name = sys.argv[1]

def fill(kind, make, limit):
    objs, err = [], None
    while len(objs) <= limit:
        try:
            objs.append(make())
        except (PyverbsError, PyverbsRDMAError) as ex:
            err = ex
            break
    print(f"HOG {kind} {len(objs)} of {limit} errno {getattr(err, 'error_code', None)}: {err}",
          flush=True)
    return objs

ctxs = fill("ctx", lambda: Context(name=name), 256)
print(f"HOG uid {os.getuid()}", flush=True)
open("/tmp/hog.ctx", "w").close()
while not os.path.exists("/tmp/ctx.done"):
    time.sleep(0.1)
ctx = ctxs.pop()
for c in ctxs:
    c.close()
a = ctx.query_device()
cqs = fill("cq", lambda: CQ(ctx, 1), a.max_cq)
pds = fill("pd", lambda: PD(ctx), a.max_pd)
open("/tmp/hog.ready", "w").close()
while not os.path.exists("/tmp/release"):
    time.sleep(0.1)
for o in cqs + pds:
    o.close()
ctx.close()
print("HOG released", flush=True)
'''

SCRIPT = rf"""
fail() {{ echo "FAIL: $*"; kill $hog 2>/dev/null; exit 1; }}
cat >/tmp/hog.py <<'PYEOF'
{HOG_PY}
PYEOF
rm -f /tmp/hog.ctx /tmp/ctx.done /tmp/hog.ready /tmp/release
base=$(rdma resource show "$OHCA_IBDEV" | sed 's/^[0-9]*: //')
# an unprivileged user (nobody); the CQ rings it pins need no memlock limit
ulimit -l unlimited
setpriv --reuid=65534 --regid=65534 --clear-groups python3 /tmp/hog.py "$OHCA_IBDEV" \
	>/tmp/hog.log 2>&1 &
hog=$!
ohca_poll 120 test -e /tmp/hog.ctx || fail "hog: no contexts: $(cat /tmp/hog.log)"
# the doorbell pages the user could not take are the administrator's
ibv_devinfo -d "$OHCA_IBDEV" >/dev/null && echo "ADMIN CONTEXT OK" || echo "ADMIN CONTEXT REFUSED"
touch /tmp/ctx.done
ohca_poll 300 test -e /tmp/hog.ready || fail "hog: not ready: $(cat /tmp/hog.log)"
cat /tmp/hog.log
rdma resource show "$OHCA_IBDEV"
echo "=== kverbs with the tables filled by a user ==="
insmod /share/ohca_kverbs_test.ko gid_index={GID}
rc=$?
echo "KVERBS_RC $rc"
dmesg | grep ohca_kverbs_test | tail -n 3
[ $rc -eq 0 ] && rmmod ohca_kverbs_test
touch /tmp/release
wait $hog || fail "hog exited $?: $(cat /tmp/hog.log)"
tail -n 1 /tmp/hog.log
now=$(rdma resource show "$OHCA_IBDEV" | sed 's/^[0-9]*: //')
[ "$now" = "$base" ] || fail "resources left: $now (before: $base)"
echo "RESOURCES BACK"
"""


def test_user_cannot_starve_kernel(vm_run):
    if not os.path.isfile(KVERBS_MODULE):
        pytest.fail(f"{KVERBS_MODULE} missing: make kernel")
    (r,) = vm_run(SCRIPT, timeout=600,
                  extra_files={"ohca_kverbs_test.ko": KVERBS_MODULE})
    print("\n" + r.output)
    assert_ok([r])
    out = r.output
    # 255 doorbell pages, the last 15 (1/16) kept for CAP_SYS_ADMIN
    assert "HOG uid 65534" in out, r.report()
    assert "HOG ctx 240 of 256 errno 12" in out, r.report()
    assert "ADMIN CONTEXT OK" in out, r.report()
    # CQs and PDs: refused with ENOMEM before the kernel's 1/16
    for kind in ("cq", "pd"):
        line = next((ln for ln in out.splitlines() if ln.startswith(f"HOG {kind} ")), None)
        assert line, r.report()
        _, _, n, _, limit, _, code = line.split(":")[0].split()
        assert code == "12", line
        assert 0 < int(n) <= int(limit) - int(limit) // 16, line
    assert "KVERBS_RC 0" in out, r.report()
    assert ("ohca_kverbs_test: 67 sends on ohca0 OK; CQ purge OK; "
            "fast registration OK; drain OK") in out, r.report()
    assert "HOG released" in out, r.report()
    assert "RESOURCES BACK" in out, r.report()


# docs/architecture.md's rdma cgroup example, on a cgroup of its own: with
# hca_handle=1 a second context of the cgroup is refused, and with
# hca_object=8 the ninth object (a context's PD or CQ) is; both EAGAIN, from
# the RDMA core before the driver.
CGROUP_PY = r'''
import sys
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsError, PyverbsRDMAError

ctx = Context(name=sys.argv[1])
try:
    Context(name=sys.argv[1])
    print("CG second context: created", flush=True)
except (PyverbsError, PyverbsRDMAError) as ex:
    print(f"CG second context: errno {getattr(ex, 'error_code', None)}", flush=True)
objs, err = [], None
while len(objs) < 100:
    try:
        objs.append(PD(ctx) if len(objs) % 2 else CQ(ctx, 1))
    except (PyverbsError, PyverbsRDMAError) as ex:
        err = ex
        break
print(f"CG objects {len(objs)} errno {getattr(err, 'error_code', None)}", flush=True)
'''

CGROUP = rf"""
cat >/tmp/cg.py <<'PYEOF'
{CGROUP_PY}
PYEOF
cg=/sys/fs/cgroup
grep -q "^cgroup2 $cg " /proc/mounts || mount -t cgroup2 none $cg || {{ echo "no cgroup2"; exit 1; }}
grep -qw rdma $cg/cgroup.controllers || {{ echo "no rdma controller"; exit 1; }}
echo +rdma > $cg/cgroup.subtree_control
mkdir -p $cg/ohca_quota
echo "$OHCA_IBDEV hca_handle=1 hca_object=8" > $cg/ohca_quota/rdma.max
cat $cg/ohca_quota/rdma.max
sh -c "echo \$\$ > $cg/ohca_quota/cgroup.procs; exec python3 /tmp/cg.py $OHCA_IBDEV"
rc=$?
cat $cg/ohca_quota/rdma.current
rmdir $cg/ohca_quota
exit $rc
"""


def test_rdma_cgroup_bounds_a_user(vm_run):
    (r,) = vm_run(CGROUP, timeout=300)
    print("\n" + r.output)
    assert_ok([r])
    assert "CG second context: errno 11" in r.output, r.report()
    assert "CG objects 8 errno 11" in r.output, r.report()
