"""Atomics and shared receive queues in ONE VM job (both ends on ohca0,
looped back inside the device): what ibv_devinfo reports, ibv_srq_pingpong
(polling and events), perftest's ib_atomic_bw and ib_atomic_lat (fetch-add
and compare-swap), and a pyverbs program that arms the SRQ limit and waits
for IBV_EVENT_SRQ_LIMIT_REACHED, then moves a QP of the SRQ to ERR and waits
for IBV_EVENT_QP_LAST_WQE_REACHED (each wait bounded: a missing event fails
instead of hanging), and the extended verbs (userspace/tests/ohca_verbs_ex.c:
an extended CQ polled with start/next/end_poll, ibv_create_qp_ex QPs posting
a chain of WRITE, WRITE_WITH_IMM, inline SEND, READ and both atomics through
the ibv_wr_* API, an RDMA ATOMIC WRITE (offered because the kernel passes the
device's capabilities in the ucontext response), wr_abort, a failed chain, posting in RESET, ibv_resize_cq
with CQEs waiting, ibv_rereg_mr of translation and access, completion event
moderation with ibv_modify_cq: events held until the count, released by the
period, fewer events than completions). The parts share one boot; each
checks its section."""

import re

import pytest

from vmtest import PYVERBS_PRELUDE, check_parts, parts_job, perftest_loopback

pytestmark = pytest.mark.ohca_only

GID = 1

DEVINFO = r"""
ibv_devinfo -v -d "$OHCA_IBDEV" | grep -E "atomic_cap|max_srq|max_qp_rd_atom|max_qp_init_rd_atom"
"""

SRQ_PINGPONG = rf"""
set -e
for flags in "" "-e"; do
	timeout 120 ibv_srq_pingpong -d "$OHCA_IBDEV" -g {GID} -n 300 -q 8 $flags > /tmp/srv.log 2>&1 &
	srv=$!
	ohca_retry 20 timeout 120 ibv_srq_pingpong -d "$OHCA_IBDEV" -g {GID} -n 300 -q 8 $flags 127.0.0.1
	wait $srv
	echo "srq pingpong '$flags' server:"; cat /tmp/srv.log
done
"""

ATOMIC_PERFTEST = perftest_loopback(
    [(t, a, f"-A {a} -n 500", "^ *8 +500 ")
     for t in ("ib_atomic_bw", "ib_atomic_lat") for a in ("FETCH_AND_ADD", "CMP_AND_SWAP")], GID)

# pyverbs with the rdma-core suite's resource helpers (tests/base.py).
SRQ_EVENTS_PY = PYVERBS_PRELUDE + r"""
from pyverbs.qp import QPAttr
from pyverbs.srq import SrqAttr
def pair():
    s = RCResources(dev, 1, gid, qp_count=2, with_srq=True)
    c = RCResources(dev, 1, gid, qp_count=2, with_srq=True)
    s.pre_run(c.psns, c.qps_num)
    c.pre_run(s.psns, s.qps_num)
    return s, c

s, c = pair()
u.traffic(c, s, 20, gid, 1)
print("SRQ_TRAFFIC ok", flush=True)

s1, c1 = s, c
s, c = pair()
for _ in range(10):
    s.srq.post_recv(u.get_recv_wr(s), None)
s.srq.modify(SrqAttr(srq_limit=7), e.IBV_SRQ_LIMIT)
assert s.srq.query().srq_limit == 7, s.srq.query().srq_limit
for _ in range(4):
    wr, _sg = u.get_send_elements(c, False)
    u.send(c, wr)
    u.poll_cq(c.cq)
    u.poll_cq(s.cq)
ev = s.ctx.get_async_event()
ev.ack()
print("SRQ_EVENT", ev.event_type, flush=True)
assert ev.event_type == e.IBV_EVENT_SRQ_LIMIT_REACHED, ev.event_type
assert s.srq.query().srq_limit == 0

s.qps[1].modify(QPAttr(qp_state=e.IBV_QPS_ERR), e.IBV_QP_STATE)
ev = s.ctx.get_async_event()
ev.ack()
print("QP_EVENT", ev.event_type, flush=True)
assert ev.event_type == e.IBV_EVENT_QP_LAST_WQE_REACHED, ev.event_type
print("SRQ_EVENTS ok", flush=True)

# Each context closed here, its objects in dependency order: left to the
# interpreter's exit, pyverbs frees them in any order (a PD before its SRQ:
# EBUSY; an SRQ after its context's fd: EBADF) and prints tracebacks that
# are not the device's (docs/testing.md). Closed in order, any error is.
for r in (c, s, c1, s1):
    r.ctx.close()
print("SRQ_CLOSED ok", flush=True)
"""

SRQ_EVENTS = f"""
cat > /tmp/srq_events.py <<'PYEOF'
{SRQ_EVENTS_PY.strip()}
PYEOF
timeout -k 5 90 python3 /tmp/srq_events.py {GID}
"""

VERBS_EX = f"""
timeout -k 5 120 /share/ohca_verbs_ex -g {GID}
"""

PARTS = ("devinfo", "srq_pingpong", "atomic_perftest", "srq_events", "verbs_ex")
SCRIPTS = {"devinfo": DEVINFO, "srq_pingpong": SRQ_PINGPONG,
           "atomic_perftest": ATOMIC_PERFTEST, "srq_events": SRQ_EVENTS,
           "verbs_ex": VERBS_EX}


def job():
    return parts_job((name, SCRIPTS[name]) for name in PARTS)


def check_devinfo(text):
    assert re.search(r"atomic_cap:\s+ATOMIC_HCA", text), text
    assert re.search(r"max_srq:\s+256", text), text
    assert re.search(r"max_srq_wr:\s+4096", text), text


def check_srq_pingpong(text):
    assert len(re.findall(r"600 iters in|300 iters in", text)) >= 4, text


def check_atomic_perftest(text):
    results = re.findall(r"^RESULT (\S+) (\S+) client=0 server=0 :\s*\S", text, re.M)
    assert len(results) == 4, text
    for line in re.findall(r"^RESULT .*$", text, re.M):
        print(line)


def check_srq_events(text):
    assert "SRQ_TRAFFIC ok" in text, text
    assert "SRQ_EVENTS ok" in text, text
    assert "SRQ_CLOSED ok" in text, text
    assert "Traceback" not in text, text


def check_verbs_ex(text):
    for line in ("chain: 6 WRs in one wr_complete, 8 completions checked",
                 "atomic_write: 8 bytes written, none beside them",
                 "wr_abort and a failed chain posted nothing",
                 "resize_cq: 12 waiting CQEs kept in order",
                 "rereg_mr: translation and access changed in place",
                 "cq moderation: 35 completions, 11 events",
                 "ohca_verbs_ex: PASS"):
        assert line in text, text


CHECKS = {"devinfo": check_devinfo, "srq_pingpong": check_srq_pingpong,
          "atomic_perftest": check_atomic_perftest, "srq_events": check_srq_events,
          "verbs_ex": check_verbs_ex}


def test_atomics_and_srq_loopback(vm_run):
    (r,) = vm_run(job(), timeout=900)
    check_parts(r, {name: CHECKS[name] for name in PARTS})
