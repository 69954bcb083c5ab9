"""RC error completions (userspace/tests/ohca_rc_negative.c), one VM, both
QPs on ohca0: bad rkey (WRITE, READ) and out-of-bounds RDMA (WRITE past the
end / before the start of the remote MR, READ past the end) ->
REM_ACCESS_ERR with the remote memory untouched; MR without REMOTE_WRITE /
REMOTE_READ -> REM_ACCESS_ERR; local SGE out of bounds or bad lkey ->
LOC_PROT_ERR; no receive with rnr_retry=0 -> RNR_RETRY_EXC_ERR, a late
receive with rnr_retry 7 (infinite) and 3 -> success; a receive buffer too
small -> LOC_LEN_ERR on the responder and REM_INV_REQ_ERR (NAK Invalid
Request, IBTA 9.7.5.2.2) on the requester; WRs posted after an error and
after modify_qp(ERR) -> WR_FLUSH_ERR; on-demand paging after munmap: a
SEND gathering from, and an RDMA WRITE into, an ODP MR whose buffer was
unmapped (after an access that worked) -> LOC_PROT_ERR and REM_ACCESS_ERR:
the fault is not resolved and the freed pages are not reached.  No stray
completions, the port stays ACTIVE, the kernel log stays clean (a device
access to a freed page shows there as "BUG: Bad page state")."""

import re

import pytest

from vmtest import assert_ok

pytestmark = pytest.mark.ohca_only

SCRIPT = r"""
/share/ohca_rc_negative -g 1
rc=$?
echo "NEGATIVE_EXIT $rc"
ibv_devinfo -d "$OHCA_IBDEV" | grep -E "^\s+state"
# the device still moves data after all that
/share/ohca_rc_loopback -n 3 -E 1 | tail -n 1
exit $rc
"""


def check_negative(output):
    passed = re.findall(r"^PASS (\S+):", output, re.M)
    assert len(passed) >= 18, output
    assert {"odp_munmap_send", "odp_munmap_write"} <= set(passed), output
    assert not re.search(r"^FAIL ", output, re.M), output
    assert "ohca_rc_negative: %d passed, 0 failed" % len(passed) in output, output
    assert "PORT_ACTIVE" in output, output
    assert "ohca_rc_loopback: OK" in output, output


def test_rc_negative(vm_run):
    (r,) = vm_run(SCRIPT, timeout=240)
    print("\n" + r.output)
    assert_ok([r])
    check_negative(r.output)
