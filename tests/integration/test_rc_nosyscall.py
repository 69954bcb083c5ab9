"""The RC fast path makes no system calls: ohca_rc_nosyscall runs SEND,
RDMA WRITE and RDMA READ (thousands, busy polling, payloads checked) in
seccomp strict mode, where any system call but read/write/_exit/sigreturn
is SIGKILL.  The negative control (-G: getpid() in the loop) must be
killed, which shows the filter is really on.  A short run under strace is
supporting evidence: no system call between the prctl and the report."""

import re

import pytest

from vmtest import assert_ok

pytestmark = pytest.mark.ohca_only

GID = 1
OPS = 3000

SCRIPT = rf"""
echo "=== strict ==="
/share/ohca_rc_nosyscall -n {OPS} {GID}
echo "RC_STRICT $?"
echo "=== control ==="
/share/ohca_rc_nosyscall -n 30 -G {GID}
echo "RC_CONTROL $?"
echo "=== strace ==="
strace -f -o /tmp/st.txt /share/ohca_rc_nosyscall -n 300 {GID} > /tmp/st.out 2>&1
echo "RC_STRACE $?"
cat /tmp/st.out
awk '/PR_SET_SECCOMP/ {{on=1; next}} on' /tmp/st.txt > /tmp/after.txt
echo "syscalls after prctl(PR_SET_SECCOMP):"; sed 's/^/  /' /tmp/after.txt
echo "strace -c of a 300-op run (whole process, setup included):"
strace -f -c /share/ohca_rc_nosyscall -n 300 {GID} 2>&1 | tail -n 12
exit 0
"""


def test_rc_fast_path_no_syscalls(vm_run):
    (r,) = vm_run(SCRIPT, timeout=240)
    assert_ok([r])
    out = r.output
    print("\n" + out)
    assert f"ohca_rc_nosyscall: OK {OPS} ops" in out, r.report()
    assert "RC_STRICT 0" in out, r.report()
    # negative control: SIGKILL (shell reports 128 + 9)
    assert "RC_CONTROL 137" in out, r.report()
    assert "RC_STRACE 0" in out, r.report()
    after = re.search(r"syscalls after prctl\(PR_SET_SECCOMP\):\n(.*?)strace -c",
                      out, re.S).group(1)
    calls = [l.split()[1].split("(")[0] for l in after.splitlines() if len(l.split()) > 1]
    # only the report write(s) and the final exit
    assert set(calls) <= {"write", "exit", "+++"}, after
