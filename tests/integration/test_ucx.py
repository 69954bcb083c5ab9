"""UCX over ohca in ONE VM (issue 25, item 1): `ucx_perftest` tag latency
and bandwidth between two processes over UCX's verbs transports, shared
memory excluded, so every message goes through the device (looped back
inside it):

- ud_verbs,self: UD only (UCX's own reliability over UD). UCX's AHs carry
  flow label ~0 (its RoCE UDP source port choice); the device takes 20
  bits, and every UD send used to complete with "local QP operation
  error" (LOC_QP_OP_ERR, BAD_AV) until the provider masked the label.
  Then UCX dropped every received packet: it reads the frame's L3 type
  (IPv4 or IPv6, to find the destination GID in the GRH) from the work
  completion's SL bits, as mlx5 reports it; the provider now does too.
- rc_verbs,ud_verbs,self: UD for wire-up, RC for the data (the RC QP's
  address vector comes through MODIFY_QP, with the same flow label).

Short runs (TCG is slow): the figures are for the log, not a benchmark.
The job runs in the session's pooled VM (no boot of its own)."""

import re

import pytest

from vmtest import assert_ok, section

pytestmark = pytest.mark.ohca_only

ITERS = 100
RUNS = [(tls, test) for tls in ("ud_verbs,self", "rc_verbs,ud_verbs,self")
        for test in ("tag_lat", "tag_bw")]

JOB = r"""
rc=0
export UCX_NET_DEVICES="$OHCA_IBDEV:1" UCX_WARN_UNUSED_ENV_VARS=n
port=13337
run() {  # run TLS TEST: server in the background, the client against it
	port=$((port + 1))
	UCX_TLS=$1 timeout 150 ucx_perftest -p $port > /tmp/ucx-srv.log 2>&1 &
	srv=$!
	# the client once the server listens
	ohca_poll 60 sh -c "ss -ltn | grep -q ':$port '"
	UCX_TLS=$1 timeout 120 ucx_perftest -p $port -t $2 -n ITERS -w 20 127.0.0.1 \
		> /tmp/ucx-cli.log 2>&1
	crc=$?
	wait $srv
	src=$?
	echo "=== $1 $2 ==="
	grep -E 'Final:|error|rror:' /tmp/ucx-cli.log
	echo "server:"; grep -Ei 'error|fatal' /tmp/ucx-srv.log
	echo "RUN $1 $2 client=$crc server=$src"
	[ $crc -eq 0 ] && [ $src -eq 0 ] || { rc=1; tail -n 30 /tmp/ucx-cli.log /tmp/ucx-srv.log; }
}
""".replace("ITERS", str(ITERS)) + "\n".join(f"run {tls} {test}" for tls, test in RUNS) + r"""
echo "=== end ==="
ohca_hw_counters
exit $rc
"""


def test_ucx_perftest_verbs_transports(vm_run):
    (r,) = vm_run(JOB, timeout=900)
    failed = [f"{tls} {test}" for tls, test in RUNS
              if not re.search(rf"^RUN {re.escape(tls)} {test} client=0 server=0$", r.output, re.M)]
    assert not failed, f"ucx_perftest failed: {failed}\n" + r.report()
    for tls, test in RUNS:
        text = section(r.output, f"{tls} {test}")
        m = re.search(r"^Final:\s+(\d+)\s", text, re.M)
        assert m and int(m.group(1)) == ITERS, r.report()
        assert "local QP operation error" not in text, r.report()
    assert_ok([r])
