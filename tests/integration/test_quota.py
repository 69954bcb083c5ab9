"""Sharing the device (audit N7, docs/architecture.md "Sharing the device
between users"): an unprivileged process takes every user context, then
every CQ and PD it can get; the refusals are ENOMEM, the administrator can
still open the device, and a kernel consumer loaded afterwards (the kernel
verbs check, kernel/tools/kverbs: a PD with its DMA MR, CQs, RC QPs,
fast-registration MRs) still gets its objects from the kernel's reserve.
Without the reserve the process takes the whole CQ and PD tables and the
module's insmod fails. A context pins at most 64 pages of doorbell records
(ENOMEM after them; test_doorbell_record_pages_bounded)."""

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


# The doorbell records' pages a context pins (kernel/ib/ohca_dbrec.c): at
# most 64. libohca packs 512 records in a page and never gets near it, so
# the hog drives CREATE_CQ itself on the context's command file (the uverbs
# write ABI, as libibverbs would without ioctl): CQs whose records each sit
# in a page of their own until the kernel refuses one, ENOMEM; a record in
# a page already pinned still goes (it takes no slot); destroying a CQ
# frees its page's slot for a new page. Everything back after.
DBREC_PY = r'''
import ctypes, mmap, os, struct, sys
from pyverbs.device import Context

CREATE_CQ, DESTROY_CQ = 18, 20  # enum ib_uverbs_write_cmds, rdma/ib_user_verbs.h
OHCA_CREATE_CQ_DB_RECORD = 1    # ohca-abi.h
PAGE = mmap.PAGESIZE
N = 70  # record pages offered, beyond the bound

ctx = Context(name=sys.argv[1])
fd = ctx.cmd_fd
# N rings, then N record pages, each page-aligned
mem = mmap.mmap(-1, 2 * N * PAGE)
base = ctypes.addressof(ctypes.c_char.from_buffer(mem))

def write(command, body, resp):
    """One command: struct ib_uverbs_cmd_hdr (in_words counts it too), then
    the body, whose first field is the response's address."""
    os.write(fd, struct.pack("=IHH", command, (8 + len(body)) // 4, len(resp) // 4) + body)

def create(ring, record):
    """A 2-entry CQ with its record at 'record': (handle, 0) or (None, errno)."""
    resp = ctypes.create_string_buffer(16)  # ib_uverbs_create_cq_resp + ohca's
    # struct ib_uverbs_create_cq (no completion channel), struct ohca_ibv_create_cq
    body = (struct.pack("=QQIIiI", ctypes.addressof(resp), 0, 1, 0, -1, 0)
            + struct.pack("=QIIQ", base + ring * PAGE, 1, OHCA_CREATE_CQ_DB_RECORD, record))
    try:
        write(CREATE_CQ, body, resp)
    except OSError as ex:
        return None, ex.errno
    return struct.unpack_from("=I", resp.raw)[0], 0

def destroy(handle):
    resp = ctypes.create_string_buffer(8)  # ib_uverbs_destroy_cq_resp
    write(DESTROY_CQ, struct.pack("=QII", ctypes.addressof(resp), handle, 0), resp)

def record(page, slot=0):
    return base + (N + page) * PAGE + 8 * slot

cqs, err = [], 0
while len(cqs) < N - 1:
    h, err = create(len(cqs), record(len(cqs)))
    if h is None:
        break
    cqs.append(h)
print(f"DBREC pages {len(cqs)} errno {err}: {os.strerror(err) if err else '-'}", flush=True)
h, e = create(N - 1, record(0, 1))
print(f"DBREC a pinned page at the bound: errno {e}", flush=True)
if h is not None:
    destroy(h)
destroy(cqs.pop())
h, e = create(N - 1, record(N - 1))
print(f"DBREC after a destroy, a new page: errno {e}", flush=True)
if h is not None:
    cqs.append(h)
h, e = create(N - 2, record(N - 2))
print(f"DBREC then one more: errno {e}", flush=True)
for h in cqs:
    destroy(h)
print(f"DBREC destroyed {len(cqs)}", flush=True)
'''

DBREC = rf"""
cat >/tmp/dbrec.py <<'PYEOF'
{DBREC_PY}
PYEOF
base=$(rdma resource show "$OHCA_IBDEV" | sed 's/^[0-9]*: //')
python3 /tmp/dbrec.py "$OHCA_IBDEV" || exit 1
now=$(rdma resource show "$OHCA_IBDEV" | sed 's/^[0-9]*: //')
[ "$now" = "$base" ] || {{ echo "resources left: $now (before: $base)"; exit 1; }}
echo "RESOURCES BACK"
"""


def test_doorbell_record_pages_bounded(vm_run):
    (r,) = vm_run(DBREC, timeout=300)
    print("\n" + r.output)
    assert_ok([r])
    for line in ("DBREC pages 64 errno 12: Cannot allocate memory",
                 "DBREC a pinned page at the bound: errno 0",
                 "DBREC after a destroy, a new page: errno 0",
                 "DBREC then one more: errno 12",
                 "DBREC destroyed 64",
                 "RESOURCES BACK"):
        assert line in r.output, r.report()
