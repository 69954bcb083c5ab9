#!/usr/bin/env python3
"""A slow receiver (issue 23, `make fabric-bench`'s slowrx cells), run in
the guests with pyverbs: one RC QP pair between two VMs; the sender posts
N SENDs of 64 bytes at once, the receiver posts one receive WQE every
PERIOD ms. On a QP with its own receive queue the responder's ACKs carry
end-to-end credits (docs/wire.md) and the requester waits for them; on a
QP on an SRQ the credits are "invalid" (as rxe's always are) and every
SEND that finds no WQE draws an RNR NAK. The RNR NAKs are the
hw_counters' (the bench reads them around this run).

    slow_receiver.py recv DEV GID_INDEX PORT rq|srq N PERIOD_MS TCLASS
    slow_receiver.py send DEV GID_INDEX PORT HOST N TCLASS

Prints "SLOWRX role=... n=... seconds=..." and exits 0 when all N
messages arrived (or completed) in order and without error.
"""

import json
import socket
import sys
import time

from pyverbs.addr import GID, AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

# the IBV_* names on rdma-core 44 to 65 (tests/vm/guest/ohca_pyverbs.py,
# which the harness puts into the share)
sys.path.insert(0, "/share")
from ohca_pyverbs import verbs_enums  # noqa: E402

e = verbs_enums()

MSG = 64
DEADLINE_S = 120


def setup(dev, gidx, n, srq_kind):
    ctx = Context(name=dev)
    pd = PD(ctx)
    cq = CQ(ctx, 2 * n + 16)
    mr = MR(pd, MSG * n, e.IBV_ACCESS_LOCAL_WRITE)
    srq = SRQ(pd, SrqInitAttr(SrqAttr(max_wr=n + 1, max_sge=1))) if srq_kind else None
    cap = QPCap(max_send_wr=n, max_recv_wr=0 if srq else n, max_send_sge=1, max_recv_sge=1)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, srq=srq, cap=cap),
            QPAttr(port_num=1))
    return ctx, pd, cq, mr, srq, qp


def to_rts(ctx, qp, gidx, peer, tclass):
    a = QPAttr(port_num=1)
    a.path_mtu = e.IBV_MTU_1024
    a.max_dest_rd_atomic = 1
    a.max_rd_atomic = 1
    a.min_rnr_timer = 1  # 0.01 ms asked; the device waits at least 1 ms
    a.rnr_retry = 7  # for ever: the count is the figure, not an error
    a.retry_cnt = 7
    a.timeout = 14
    gr = GlobalRoute(dgid=GID(peer["gid"]), sgid_index=gidx, traffic_class=tclass)
    a.ah_attr = AHAttr(port_num=1, is_global=1, gr=gr, dlid=0)
    a.dest_qp_num = peer["qpn"]
    a.rq_psn = 0
    a.sq_psn = 0
    qp.to_rts(a)


def exchange(sock, ctx, qp, gidx):
    sock.sendall((json.dumps({"qpn": qp.qp_num, "gid": str(ctx.query_gid(1, gidx))}) + "\n")
                 .encode())
    return json.loads(sock.makefile().readline())


def wait_cq(cq, want, deadline, on_idle=None):
    """Polls until 'want' completions, all successful; returns them."""
    got = []
    while len(got) < want:
        if time.monotonic() > deadline:
            raise SystemExit(f"SLOWRX timeout: {len(got)} of {want} completions")
        n, wcs = cq.poll(16)
        for wc in wcs[:n]:
            if wc.status != e.IBV_WC_SUCCESS:
                raise SystemExit(f"SLOWRX completion error: status {wc.status} wr {wc.wr_id}")
            got.append(wc.wr_id)
        if on_idle is not None and n == 0:
            on_idle()
    return got


def recv(dev, gidx, port, kind, n, period_ms, tclass):
    ctx, pd, cq, mr, srq, qp = setup(dev, gidx, n, kind == "srq")
    ls = socket.create_server(("", port))
    sock, _ = ls.accept()
    peer = exchange(sock, ctx, qp, gidx)
    to_rts(ctx, qp, gidx, peer, tclass)
    posted = 0
    start = time.monotonic()
    deadline = start + DEADLINE_S

    def post_due():
        nonlocal posted
        due = min(n, int((time.monotonic() - start) * 1000 / period_ms) + 1)
        while posted < due:
            wr = RecvWR(wr_id=posted, num_sge=1, sg=[SGE(mr.buf + MSG * posted, MSG, mr.lkey)])
            (srq or qp).post_recv(wr)
            posted += 1
        time.sleep(0.001)

    # The first receive WQE is posted before the sender may start: its
    # first SEND goes before any AETH has told it the credits (the one
    # message IBTA lets it send unasked), and arriving before that WQE
    # it drew an RNR NAK even with credits (docs/bench.md, 2026-12-07).
    post_due()
    sock.sendall(b"go\n")
    got = wait_cq(cq, n, deadline, post_due)
    if got != sorted(got):
        raise SystemExit(f"SLOWRX out of order: {got}")
    print(f"SLOWRX role=recv kind={kind} n={n} period_ms={period_ms} "
          f"seconds={time.monotonic() - start:.2f}", flush=True)
    sock.sendall(b"done\n")
    sock.close()


def send(dev, gidx, port, host, n, tclass):
    ctx, pd, cq, mr, srq, qp = setup(dev, gidx, n, False)
    deadline = time.monotonic() + 60
    while True:  # the receiver may not listen yet
        try:
            sock = socket.create_connection((host, port), timeout=DEADLINE_S)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    peer = exchange(sock, ctx, qp, gidx)
    to_rts(ctx, qp, gidx, peer, tclass)
    f = sock.makefile()
    if f.readline().strip() != "go":
        raise SystemExit("SLOWRX no go from the receiver")
    start = time.monotonic()
    for i in range(n):
        wr = SendWR(wr_id=i, opcode=e.IBV_WR_SEND, num_sge=1,
                    sg=[SGE(mr.buf + MSG * i, MSG, mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
        qp.post_send(wr)
    wait_cq(cq, n, start + DEADLINE_S)
    print(f"SLOWRX role=send n={n} seconds={time.monotonic() - start:.2f}", flush=True)
    f.readline()  # the receiver's "done": it saw them all
    sock.close()


def main(argv):
    if len(argv) == 9 and argv[1] == "recv":
        recv(argv[2], int(argv[3]), int(argv[4]), argv[5], int(argv[6]), int(argv[7]),
             int(argv[8]))
    elif len(argv) == 8 and argv[1] == "send":
        send(argv[2], int(argv[3]), int(argv[4]), argv[5], int(argv[6]), int(argv[7]))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
