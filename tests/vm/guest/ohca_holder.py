#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Holds RDMA resources on a device while its driver goes away.

Opens the device, creates a PD, an MR, a CQ and an RC QP connected to
itself (RTS), proves the fast path with one RDMA WRITE through the mmapped
doorbell page, prints READY and waits for an asynchronous event. Removing
the driver must disassociate the context: the process gets
IBV_EVENT_DEVICE_FATAL, and its later verbs fail with an error instead of
hanging or crashing. Prints FATAL-EVENT and VERBS-FAIL-CLEANLY; exits 0
only if both happened.

    ohca_holder.py DEVICE GID_INDEX [TIMEOUT_S]
"""
import signal
import sys

import pyverbs.enums as e
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsError, PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, SendWR

ACCESS = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE |
          e.IBV_ACCESS_REMOTE_READ)


def main():
    dev, gid_index = sys.argv[1], int(sys.argv[2])
    timeout = float(sys.argv[3]) if len(sys.argv) > 3 else 120.0
    ctx = Context(name=dev)
    pd = PD(ctx)
    mr = MR(pd, 8192, ACCESS)
    cq = CQ(ctx, 16)
    cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)
    qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))

    attr = QPAttr(qp_state=e.IBV_QPS_INIT, port_num=1)
    attr.qp_access_flags = ACCESS
    qp.to_init(attr)
    gr = GlobalRoute(dgid=ctx.query_gid(1, gid_index), sgid_index=gid_index)
    attr = QPAttr(qp_state=e.IBV_QPS_RTR, port_num=1, path_mtu=e.IBV_MTU_1024)
    attr.dest_qp_num = qp.qp_num
    attr.rq_psn = 0
    attr.max_dest_rd_atomic = 1
    attr.min_rnr_timer = 12
    attr.ah_attr = AHAttr(gr=gr, is_global=1, port_num=1)
    qp.to_rtr(attr)
    attr = QPAttr(qp_state=e.IBV_QPS_RTS)
    attr.timeout = 14
    attr.retry_cnt = 7
    attr.rnr_retry = 7
    attr.sq_psn = 0
    attr.max_rd_atomic = 1
    qp.to_rts(attr)

    # One RDMA WRITE to itself: the doorbell page is mapped and in use.
    mr.write(b"lifecycle" * 8, 72)
    wr = SendWR(opcode=e.IBV_WR_RDMA_WRITE, num_sge=1,
                sg=[SGE(mr.buf, 72, mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
    wr.set_wr_rdma(mr.rkey, mr.buf + 4096)
    qp.post_send(wr)
    for _ in range(200000):
        n, wcs = cq.poll()
        if n:
            break
    else:
        print("FAIL: no completion for the RDMA WRITE", flush=True)
        return 1
    if wcs[0].status != e.IBV_WC_SUCCESS or mr.read(72, 4096) != b"lifecycle" * 8:
        print(f"FAIL: RDMA WRITE status {wcs[0].status}", flush=True)
        return 1
    print("READY", flush=True)

    # Wait for the device to go away (a blocking read of the async fd; the
    # alarm ends a hang with a traceback and a non-zero exit).
    # Port and GID events from the address just added may come first.
    signal.alarm(int(timeout))
    while True:
        ev = ctx.get_async_event()
        kind = ev.event_type
        ev.ack()
        print(f"event {kind}", flush=True)
        if kind == e.IBV_EVENT_DEVICE_FATAL:
            break
        if kind not in (e.IBV_EVENT_GID_CHANGE, e.IBV_EVENT_PORT_ACTIVE,
                        e.IBV_EVENT_PORT_ERR, e.IBV_EVENT_LID_CHANGE):
            print("FAIL: expected IBV_EVENT_DEVICE_FATAL", flush=True)
            return 1
    signal.alarm(0)
    print("FATAL-EVENT", flush=True)

    # Slow-path verbs now fail with an error; the fast path writes to a
    # dead page and completes nothing.
    failed = 0
    for what, fn in (("alloc_pd", lambda: PD(ctx)),
                     ("create_cq", lambda: CQ(ctx, 4)),
                     ("reg_mr", lambda: MR(pd, 4096, ACCESS))):
        try:
            fn()
            print(f"FAIL: {what} succeeded after disassociation", flush=True)
        except (PyverbsError, PyverbsRDMAError) as err:
            print(f"{what} failed as expected: {err}", flush=True)
            failed += 1
    try:
        qp.post_send(wr)
    except (PyverbsError, PyverbsRDMAError) as err:
        print(f"post_send failed: {err}", flush=True)
    n, _ = cq.poll()
    if n:
        print("FAIL: a completion after disassociation", flush=True)
        return 1
    for obj in (qp, cq, mr, pd, ctx):
        obj.close()
    if failed != 3:
        return 1
    print("VERBS-FAIL-CLEANLY", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
