// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libohca: memory windows.  ALLOC_MW and DEALLOC_MW go through the kernel;
 * binding is a BIND_MW WQE on the QP's send queue (ibv_bind_mw for type 1,
 * IBV_WR_BIND_MW in ibv_post_send or ibv_wr_bind_mw for type 2), executed
 * by the device in send queue order.  Invalidation is a LOCAL_INV WQE
 * (post_send or ibv_wr_local_inv) or a peer's SEND with invalidate, both
 * built in fastpath.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ohca.h"

/* Window rights: LOCAL_WRITE is accepted (it means nothing for a window),
 * zero-based windows are not offered. */
#define OHCA_MW_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

struct ibv_mw *ohca_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type)
{
	struct ib_uverbs_alloc_mw_resp resp = {};
	struct ibv_alloc_mw cmd = {};
	struct ibv_mw *mw;
	int err;

	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	/* The kernel refuses an unknown type with EINVAL. */
	err = ibv_cmd_alloc_mw(ibpd, type, mw, &cmd, sizeof(cmd), &resp,
			       sizeof(resp));
	if (err) {
		verbs_debug(&to_ohca_ctx(ibpd->context)->vctx,
			    "ALLOC_MW failed: errno %d\n", err);
		free(mw);
		errno = err;
		return NULL;
	}
	return mw;
}

int ohca_dealloc_mw(struct ibv_mw *mw)
{
	int err;

	err = ibv_cmd_dealloc_mw(mw);
	if (err)
		return err;
	free(mw);
	return 0;
}

static uint32_t ohca_mw_access(int ibv_access)
{
	uint32_t access = 0;

	if (ibv_access & IBV_ACCESS_REMOTE_WRITE)
		access |= OHCA_ACCESS_REMOTE_WRITE;
	if (ibv_access & IBV_ACCESS_REMOTE_READ)
		access |= OHCA_ACCESS_REMOTE_READ;
	if (ibv_access & IBV_ACCESS_REMOTE_ATOMIC)
		access |= OHCA_ACCESS_REMOTE_ATOMIC;
	return access;
}

/* The one BIND_MW encoder: post_send's IBV_WR_BIND_MW, ibv_bind_mw and
 * ibv_wr_bind_mw all build their WQE here. */
int ohca_encode_bind_wqe(struct ohca_qp *qp, struct ibv_mw *mw, uint32_t rkey,
			 const struct ibv_mw_bind_info *bi, uint64_t wr_id,
			 unsigned int send_flags, bool type1_ok,
			 struct ohca_bind_mw_wqe *wqe)
{
	uint8_t flags = 0;

	if (qp->qp_type != IBV_QPT_RC || !mw || !bi ||
	    mw->pd != qp->vqp.qp.pd)
		return EINVAL;
	if (ohca_op_refused(to_ohca_ctx(qp->vqp.qp.context), OHCA_WR_BIND_MW))
		return EOPNOTSUPP;
	/* Type 1 windows are bound through ibv_bind_mw only. */
	if (mw->type != IBV_MW_TYPE_2 && !(mw->type == IBV_MW_TYPE_1 &&
					   type1_ok))
		return EINVAL;
	/* The new key keeps the window's index; only its tag changes. */
	if ((rkey ^ mw->rkey) & ~0xffu)
		return EINVAL;
	if (bi->mw_access_flags & ~OHCA_MW_ACCESS)
		return EINVAL;
	if (bi->length && (!bi->mr || bi->mr->pd != mw->pd))
		return EINVAL;

	if ((send_flags & IBV_SEND_SIGNALED) || qp->sq_sig_all)
		flags |= OHCA_WQE_SIGNALED;
	if (send_flags & IBV_SEND_FENCE)
		flags |= OHCA_WQE_FENCE;
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = htole64(wr_id);
	wqe->opcode = OHCA_WR_BIND_MW;
	wqe->flags = flags;
	wqe->mw_key = htole32(rkey);
	wqe->addr = htole64(bi->addr);
	wqe->length = htole64(bi->length);
	wqe->mr_lkey = htole32(bi->mr ? bi->mr->lkey : 0);
	wqe->access = htole32(ohca_mw_access(bi->mw_access_flags));
	return 0;
}

int ohca_build_bind_wqe(struct ohca_qp *qp, const struct ibv_send_wr *wr,
			bool type1_ok, struct ohca_bind_mw_wqe *wqe)
{
	return ohca_encode_bind_wqe(qp, wr->bind_mw.mw, wr->bind_mw.rkey,
				    &wr->bind_mw.bind_info, wr->wr_id,
				    wr->send_flags, type1_ok, wqe);
}

int ohca_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		 struct ibv_mw_bind *mw_bind)
{
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	struct ibv_send_wr wr = {};
	struct ibv_send_wr *bad;
	int err;

	wr.wr_id = mw_bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = mw_bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = mw_bind->bind_info;
	err = ohca_post_send_list(ibqp, &wr, &bad, true);
	if (err)
		return err;
	/* The key the window has once the WQE executes; a failed bind
	 * completes in error and the caller knows the old key. */
	mw->rkey = rkey;
	return 0;
}
