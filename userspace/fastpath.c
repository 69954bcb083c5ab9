// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libohca: the data path.  Posting writes WQEs into the rings shared with
 * the device and rings one 64-bit doorbell per call; polling reads CQEs by
 * their owner bit; arming is a doorbell write.  No system calls here.
 *
 * Indices are free-running 32-bit counts.  The SQ and RQ consumer indices
 * move when their completions are polled: a send CQE retires every WQE up
 * to and including its wqe_index (unsignaled WQEs before it included), a
 * receive CQE retires one receive WQE (the device consumes them in order).
 */
#include <errno.h>
#include <string.h>

#include "ohca.h"

static inline void ohca_ring_db(struct ohca_context *ctx, unsigned int off,
				uint32_t qn, uint32_t value)
{
	mmio_write64((uint8_t *)ctx->db_page + off, OHCA_DB_VALUE(qn, value));
}

static inline uint32_t ohca_wq_used(struct ohca_wq *wq)
{
	return wq->pi - __atomic_load_n(&wq->ci, __ATOMIC_RELAXED);
}

static int ohca_wr_opcode(enum ibv_wr_opcode op, uint8_t *out)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
		*out = OHCA_WR_RDMA_WRITE;
		return 0;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		*out = OHCA_WR_RDMA_WRITE_IMM;
		return 0;
	case IBV_WR_SEND:
		*out = OHCA_WR_SEND;
		return 0;
	case IBV_WR_SEND_WITH_IMM:
		*out = OHCA_WR_SEND_IMM;
		return 0;
	case IBV_WR_RDMA_READ:
		*out = OHCA_WR_RDMA_READ;
		return 0;
	case IBV_WR_SEND_WITH_INV:
		*out = OHCA_WR_SEND_INV;
		return 0;
	case IBV_WR_LOCAL_INV:
		*out = OHCA_WR_LOCAL_INV;
		return 0;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		*out = OHCA_WR_ATOMIC_CMP_SWP;
		return 0;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		*out = OHCA_WR_ATOMIC_FETCH_ADD;
		return 0;
	case IBV_WR_ATOMIC_WRITE:
		*out = OHCA_WR_ATOMIC_WRITE;
		return 0;
	default:
		return EINVAL;
	}
}

/* ------------------------------------------------------------------ */
/* Send WQE encoders, shared by post_send and the ibv_wr_* API: one   */
/* for the header and opcode, one per opcode's fields, one for the UD */
/* address, one each for gather lists and inline data.               */
/* ------------------------------------------------------------------ */

static bool ohca_is_atomic(uint8_t opcode)
{
	return opcode == OHCA_WR_ATOMIC_CMP_SWP ||
	       opcode == OHCA_WR_ATOMIC_FETCH_ADD;
}

/* Opcodes a QP of this type may post (UD: single-packet SENDs). */
static bool ohca_qp_op_ok(const struct ohca_qp *qp, uint8_t opcode)
{
	if (qp->qp_type == IBV_QPT_UD)
		return opcode == OHCA_WR_SEND || opcode == OHCA_WR_SEND_IMM;
	/* Raw Ethernet: each SEND is one whole frame. */
	if (qp->qp_type == IBV_QPT_RAW_PACKET)
		return opcode == OHCA_WR_SEND;
	/* UC: SEND and RDMA WRITE, with or without immediate. */
	if (qp->qp_type == IBV_QPT_UC)
		return opcode == OHCA_WR_SEND || opcode == OHCA_WR_SEND_IMM ||
		       opcode == OHCA_WR_RDMA_WRITE ||
		       opcode == OHCA_WR_RDMA_WRITE_IMM;
	/* ATOMIC WRITE: RC only (the device refuses it elsewhere). */
	if (opcode == OHCA_WR_ATOMIC_WRITE)
		return qp->qp_type == IBV_QPT_RC;
	return true;
}

/* Where the data segments or inline data start: UD adds the address. */
static inline uint8_t *ohca_wqe_body(const struct ohca_qp *qp,
				     struct ohca_send_wqe *wqe)
{
	return (uint8_t *)wqe + (qp->qp_type == IBV_QPT_UD ?
				 OHCA_UD_WQE_HDR_LEN : sizeof(*wqe));
}

/* Header (and UD address segment) cleared; wr_id, opcode and flags. */
static int ohca_wqe_start(struct ohca_qp *qp, struct ohca_send_wqe *wqe,
			  uint64_t wr_id, unsigned int send_flags,
			  uint8_t opcode)
{
	uint8_t flags = 0;

	if (!ohca_qp_op_ok(qp, opcode))
		return EINVAL;
	if (ohca_op_refused(to_ohca_ctx(qp->vqp.qp.context), opcode))
		return EOPNOTSUPP;
	if ((send_flags & IBV_SEND_SIGNALED) || qp->sq_sig_all)
		flags |= OHCA_WQE_SIGNALED;
	if (send_flags & IBV_SEND_SOLICITED)
		flags |= OHCA_WQE_SOLICITED;
	if (send_flags & IBV_SEND_FENCE)
		flags |= OHCA_WQE_FENCE;
	memset(wqe, 0, (size_t)(ohca_wqe_body(qp, wqe) - (uint8_t *)wqe));
	wqe->wr_id = htole64(wr_id);
	wqe->opcode = opcode;
	wqe->flags = flags;
	return 0;
}

/* RDMA WRITE (with immediate) and READ. */
static void ohca_wqe_rdma(struct ohca_send_wqe *wqe, uint32_t rkey,
			  uint64_t remote_addr)
{
	wqe->remote_addr = htole64(remote_addr);
	wqe->rkey = htole32(rkey);
}

/* imm_data is already in network byte order: copied as is. */
static void ohca_wqe_imm(struct ohca_send_wqe *wqe, __be32 imm_data)
{
	wqe->imm_data = imm_data;
}

/* The 8-byte atomics: the operands. */
static void ohca_wqe_atomic(struct ohca_send_wqe *wqe, uint32_t rkey,
			    uint64_t remote_addr, uint64_t compare_add,
			    uint64_t swap)
{
	wqe->remote_addr = htole64(remote_addr);
	wqe->rkey = htole32(rkey);
	wqe->cmp_add = htole64(compare_add);
	wqe->swap = htole64(swap);
}

/* SEND with invalidate: the responder's R_Key to invalidate. */
static void ohca_wqe_inv(struct ohca_send_wqe *wqe, uint32_t rkey)
{
	wqe->rkey = htole32(rkey);
}

/* UD: the AH's vector, remote QPN and Q_Key go after the header. */
static int ohca_wqe_ud(struct ohca_qp *qp, struct ohca_send_wqe *wqe,
		       struct ibv_ah *ah, uint32_t remote_qpn, uint32_t qkey)
{
	struct ohca_ud_seg *seg = (struct ohca_ud_seg *)(wqe + 1);

	if (qp->qp_type != IBV_QPT_UD || !ah)
		return EINVAL;
	seg->av = to_ohca_ah(ah)->av;
	seg->remote_qpn = htole32(remote_qpn);
	seg->qkey = htole32(qkey);
	return 0;
}

static int ohca_wqe_sges(struct ohca_qp *qp, struct ohca_send_wqe *wqe,
			 const struct ibv_sge *sg_list, size_t num_sge)
{
	struct ohca_sge *sge = (struct ohca_sge *)ohca_wqe_body(qp, wqe);
	size_t i;

	if (num_sge > qp->sq.max_sge)
		return EINVAL;
	/* An atomic returns the original value into exactly one 8-byte SGE. */
	if (ohca_is_atomic(wqe->opcode) &&
	    (num_sge != 1 || sg_list[0].length != 8))
		return EINVAL;
	/* ATOMIC WRITE: exactly 8 bytes, gathered from the list. */
	if (wqe->opcode == OHCA_WR_ATOMIC_WRITE) {
		uint64_t total = 0;

		for (i = 0; i < num_sge; i++)
			total += sg_list[i].length;
		if (total != 8)
			return EINVAL;
	}
	for (i = 0; i < num_sge; i++) {
		sge[i].addr = htole64(sg_list[i].addr);
		sge[i].length = htole32(sg_list[i].length);
		sge[i].lkey = htole32(sg_list[i].lkey);
	}
	wqe->num_sge = (uint8_t)num_sge;
	return 0;
}

/* Inline data: begin, then add the buffers in order. */
static int ohca_wqe_inline_begin(struct ohca_send_wqe *wqe)
{
	/* RDMA READ and atomics have no data to send */
	if (wqe->opcode == OHCA_WR_RDMA_READ || ohca_is_atomic(wqe->opcode))
		return EINVAL;
	wqe->flags |= OHCA_WQE_INLINE;
	wqe->inline_len = 0;
	return 0;
}

static int ohca_wqe_inline_add(struct ohca_qp *qp, struct ohca_send_wqe *wqe,
			       const void *addr, size_t length)
{
	uint32_t used = le32toh(wqe->inline_len);

	if (length > qp->max_inline - used)
		return EINVAL;
	memcpy(ohca_wqe_body(qp, wqe) + used, addr, length);
	wqe->inline_len = htole32(used + (uint32_t)length);
	return 0;
}

/* One ibv_send_wr into a WQE through the encoders. */
static int ohca_build_send_wqe(struct ohca_qp *qp, const struct ibv_send_wr *wr,
			       struct ohca_send_wqe *wqe)
{
	uint8_t opcode;
	int err, i;

	if (ohca_wr_opcode(wr->opcode, &opcode) || wr->num_sge < 0)
		return EINVAL;
	err = ohca_wqe_start(qp, wqe, wr->wr_id, wr->send_flags, opcode);
	if (err)
		return err;
	switch (opcode) {
	case OHCA_WR_RDMA_WRITE_IMM:
		ohca_wqe_imm(wqe, wr->imm_data);
		/* fallthrough */
	case OHCA_WR_RDMA_WRITE:
	case OHCA_WR_RDMA_READ:
	case OHCA_WR_ATOMIC_WRITE:
		ohca_wqe_rdma(wqe, wr->wr.rdma.rkey, wr->wr.rdma.remote_addr);
		break;
	case OHCA_WR_SEND_IMM:
		ohca_wqe_imm(wqe, wr->imm_data);
		break;
	case OHCA_WR_SEND_INV:
		ohca_wqe_inv(wqe, wr->invalidate_rkey);
		break;
	case OHCA_WR_LOCAL_INV:
		/* No data: the key to invalidate only. */
		ohca_wqe_inv(wqe, wr->invalidate_rkey);
		return 0;
	case OHCA_WR_ATOMIC_CMP_SWP:
	case OHCA_WR_ATOMIC_FETCH_ADD:
		ohca_wqe_atomic(wqe, wr->wr.atomic.rkey,
				wr->wr.atomic.remote_addr,
				wr->wr.atomic.compare_add, wr->wr.atomic.swap);
		break;
	default:
		break;
	}
	if (qp->qp_type == IBV_QPT_UD) {
		err = ohca_wqe_ud(qp, wqe, wr->wr.ud.ah, wr->wr.ud.remote_qpn,
				  wr->wr.ud.remote_qkey);
		if (err)
			return err;
	}
	/* XRC: the target's SRQ (the device checks it is set). */
	if (qp->qp_type == IBV_QPT_XRC_SEND)
		wqe->xrc_srqn = htole32(wr->qp_type.xrc.remote_srqn);
	if (!(wr->send_flags & IBV_SEND_INLINE))
		return ohca_wqe_sges(qp, wqe, wr->sg_list, (size_t)wr->num_sge);
	err = ohca_wqe_inline_begin(wqe);
	for (i = 0; !err && i < wr->num_sge; i++)
		err = ohca_wqe_inline_add(qp, wqe,
					  (void *)(uintptr_t)wr->sg_list[i].addr,
					  wr->sg_list[i].length);
	if (!err && opcode == OHCA_WR_ATOMIC_WRITE &&
	    le32toh(wqe->inline_len) != 8)
		err = EINVAL;
	return err;
}

/* One doorbell for the WQEs below sq->pi. Under sq->lock. */
static void ohca_sq_doorbell(struct ohca_context *ctx, struct ohca_qp *qp)
{
	/* WQEs in memory before the device may fetch them. */
	udma_to_device_barrier();
	ohca_ring_db(ctx, OHCA_DB_SQ, qp->qpn, qp->sq.pi);
}

/* 'type1_ok': from ibv_bind_mw, which alone may bind type 1 windows. */
int ohca_post_send_list(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
			struct ibv_send_wr **bad_wr, bool type1_ok)
{
	struct ohca_context *ctx = to_ohca_ctx(ibqp->context);
	struct ohca_qp *qp = to_ohca_qp(ibqp);
	struct ohca_wq *sq = &qp->sq;
	uint32_t posted = 0;
	int err = 0;

	/* The device ignores doorbells of a QP in RESET: refuse, as IBTA. */
	if (ibqp->state == IBV_QPS_RESET) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&sq->lock);
	for (; wr; wr = wr->next) {
		if (ohca_wq_used(sq) >= (1u << sq->log_size)) {
			err = ENOMEM;
			break;
		}
		if (wr->opcode == IBV_WR_BIND_MW)
			err = ohca_build_bind_wqe(qp, wr, type1_ok,
						  ohca_wq_entry(sq, sq->pi));
		else
			err = ohca_build_send_wqe(qp, wr,
						  ohca_wq_entry(sq, sq->pi));
		if (err)
			break;
		sq->pi++;
		posted++;
	}
	if (posted)
		ohca_sq_doorbell(ctx, qp);
	pthread_spin_unlock(&sq->lock);
	if (err)
		*bad_wr = wr;
	return err;
}

int ohca_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		   struct ibv_send_wr **bad_wr)
{
	return ohca_post_send_list(ibqp, wr, bad_wr, false);
}

/* ------------------------------------------------------------------ */
/* The ibv_wr_* posting API (create_qp_ex with SEND_OPS_FLAGS).       */
/* wr_start takes the SQ lock; each wr_<opcode> starts a WQE at the   */
/* producer index, the setters fill it; wr_complete rings one         */
/* doorbell for all of them, or, after any error, drops them all and  */
/* returns it; wr_abort drops them.                                   */
/* ------------------------------------------------------------------ */

static inline struct ohca_qp *ex_to_qp(struct ibv_qp_ex *ibqp)
{
	return ohca_container_of(ibqp, struct ohca_qp, vqp.qp_ex);
}

static void ohca_wr_start(struct ibv_qp_ex *ibqp)
{
	struct ohca_qp *qp = ex_to_qp(ibqp);

	pthread_spin_lock(&qp->sq.lock);
	qp->ex_start_pi = qp->sq.pi;
	qp->ex_wqe = NULL;
	qp->ex_err = ibqp->qp_base.state == IBV_QPS_RESET ? EINVAL : 0;
}

/* A new WQE for the next work request, or NULL after an error. */
static struct ohca_send_wqe *ohca_ex_new(struct ohca_qp *qp, uint8_t opcode)
{
	struct ohca_send_wqe *wqe;
	int err;

	qp->ex_wqe = NULL;
	if (qp->ex_err)
		return NULL;
	if (ohca_wq_used(&qp->sq) >= (1u << qp->sq.log_size)) {
		qp->ex_err = ENOMEM;
		return NULL;
	}
	wqe = ohca_wq_entry(&qp->sq, qp->sq.pi);
	err = ohca_wqe_start(qp, wqe, qp->vqp.qp_ex.wr_id,
			     qp->vqp.qp_ex.wr_flags, opcode);
	if (err) {
		qp->ex_err = err;
		return NULL;
	}
	qp->sq.pi++;
	qp->ex_wqe = wqe;
	return wqe;
}

/* The WQE the setters fill, or NULL (error or no wr_<opcode> first). */
static struct ohca_send_wqe *ohca_ex_cur(struct ohca_qp *qp)
{
	if (!qp->ex_err && !qp->ex_wqe)
		qp->ex_err = EINVAL;
	return qp->ex_err ? NULL : qp->ex_wqe;
}

static void ohca_ex_fail(struct ohca_qp *qp, int err)
{
	if (err && !qp->ex_err)
		qp->ex_err = err;
}

static void ohca_wr_send(struct ibv_qp_ex *ibqp)
{
	ohca_ex_new(ex_to_qp(ibqp), OHCA_WR_SEND);
}

static void ohca_wr_send_imm(struct ibv_qp_ex *ibqp, __be32 imm_data)
{
	struct ohca_send_wqe *wqe = ohca_ex_new(ex_to_qp(ibqp),
						OHCA_WR_SEND_IMM);

	if (wqe)
		ohca_wqe_imm(wqe, imm_data);
}

static void ohca_wr_send_inv(struct ibv_qp_ex *ibqp, uint32_t invalidate_rkey)
{
	struct ohca_send_wqe *wqe = ohca_ex_new(ex_to_qp(ibqp),
						OHCA_WR_SEND_INV);

	if (wqe)
		ohca_wqe_inv(wqe, invalidate_rkey);
}

static void ohca_wr_rdma_write(struct ibv_qp_ex *ibqp, uint32_t rkey,
			       uint64_t remote_addr)
{
	struct ohca_send_wqe *wqe = ohca_ex_new(ex_to_qp(ibqp),
						OHCA_WR_RDMA_WRITE);

	if (wqe)
		ohca_wqe_rdma(wqe, rkey, remote_addr);
}

static void ohca_wr_rdma_write_imm(struct ibv_qp_ex *ibqp, uint32_t rkey,
				   uint64_t remote_addr, __be32 imm_data)
{
	struct ohca_send_wqe *wqe = ohca_ex_new(ex_to_qp(ibqp),
						OHCA_WR_RDMA_WRITE_IMM);

	if (wqe) {
		ohca_wqe_rdma(wqe, rkey, remote_addr);
		ohca_wqe_imm(wqe, imm_data);
	}
}

static void ohca_wr_rdma_read(struct ibv_qp_ex *ibqp, uint32_t rkey,
			      uint64_t remote_addr)
{
	struct ohca_send_wqe *wqe = ohca_ex_new(ex_to_qp(ibqp),
						OHCA_WR_RDMA_READ);

	if (wqe)
		ohca_wqe_rdma(wqe, rkey, remote_addr);
}

static void ohca_wr_atomic_cmp_swp(struct ibv_qp_ex *ibqp, uint32_t rkey,
				   uint64_t remote_addr, uint64_t compare,
				   uint64_t swap)
{
	struct ohca_send_wqe *wqe = ohca_ex_new(ex_to_qp(ibqp),
						OHCA_WR_ATOMIC_CMP_SWP);

	if (wqe)
		ohca_wqe_atomic(wqe, rkey, remote_addr, compare, swap);
}

static void ohca_wr_atomic_fetch_add(struct ibv_qp_ex *ibqp, uint32_t rkey,
				     uint64_t remote_addr, uint64_t add)
{
	struct ohca_send_wqe *wqe = ohca_ex_new(ex_to_qp(ibqp),
						OHCA_WR_ATOMIC_FETCH_ADD);

	if (wqe)
		ohca_wqe_atomic(wqe, rkey, remote_addr, add, 0);
}

/* RC only, as post_send's LOCAL_INV and BIND_MW (ohca_qp_ex_send_ops). */
static void ohca_wr_local_inv(struct ibv_qp_ex *ibqp, uint32_t invalidate_rkey)
{
	struct ohca_send_wqe *wqe = ohca_ex_new(ex_to_qp(ibqp),
						OHCA_WR_LOCAL_INV);

	if (wqe)
		ohca_wqe_inv(wqe, invalidate_rkey);
	/* No data: a setter after it is an error (as for BIND_MW). */
	ex_to_qp(ibqp)->ex_wqe = NULL;
}

/* Type 2 windows only (type 1 binds through ibv_bind_mw); the key is the
 * caller's, the window's rkey is not changed here (as post_send's). */
static void ohca_wr_bind_mw(struct ibv_qp_ex *ibqp, struct ibv_mw *mw,
			    uint32_t rkey,
			    const struct ibv_mw_bind_info *bind_info)
{
	struct ohca_qp *qp = ex_to_qp(ibqp);
	int err;

	qp->ex_wqe = NULL;
	if (qp->ex_err)
		return;
	if (ohca_wq_used(&qp->sq) >= (1u << qp->sq.log_size)) {
		qp->ex_err = ENOMEM;
		return;
	}
	err = ohca_encode_bind_wqe(qp, mw, rkey, bind_info, ibqp->wr_id,
				   ibqp->wr_flags, false,
				   ohca_wq_entry(&qp->sq, qp->sq.pi));
	if (err) {
		qp->ex_err = err;
		return;
	}
	qp->sq.pi++;
}

/* The 8 bytes are the caller's (atomic_wr): inline in the WQE, so no
 * setter follows. */
static void ohca_wr_atomic_write(struct ibv_qp_ex *ibqp, uint32_t rkey,
				 uint64_t remote_addr, const void *atomic_wr)
{
	struct ohca_qp *qp = ex_to_qp(ibqp);
	struct ohca_send_wqe *wqe = ohca_ex_new(qp, OHCA_WR_ATOMIC_WRITE);
	int err;

	if (!wqe)
		return;
	ohca_wqe_rdma(wqe, rkey, remote_addr);
	err = ohca_wqe_inline_begin(wqe);
	if (!err)
		err = ohca_wqe_inline_add(qp, wqe, atomic_wr, 8);
	ohca_ex_fail(qp, err);
	qp->ex_wqe = NULL;
}

static void ohca_wr_set_ud_addr(struct ibv_qp_ex *ibqp, struct ibv_ah *ah,
				uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct ohca_qp *qp = ex_to_qp(ibqp);
	struct ohca_send_wqe *wqe = ohca_ex_cur(qp);

	if (wqe)
		ohca_ex_fail(qp, ohca_wqe_ud(qp, wqe, ah, remote_qpn,
					     remote_qkey));
}

static void ohca_wr_set_xrc_srqn(struct ibv_qp_ex *ibqp, uint32_t remote_srqn)
{
	struct ohca_send_wqe *wqe = ohca_ex_cur(ex_to_qp(ibqp));

	if (wqe)
		wqe->xrc_srqn = htole32(remote_srqn);
}

static void ohca_wr_set_sge(struct ibv_qp_ex *ibqp, uint32_t lkey,
			    uint64_t addr, uint32_t length)
{
	struct ohca_qp *qp = ex_to_qp(ibqp);
	struct ohca_send_wqe *wqe = ohca_ex_cur(qp);
	struct ibv_sge sge = { .addr = addr, .length = length, .lkey = lkey };

	if (wqe)
		ohca_ex_fail(qp, ohca_wqe_sges(qp, wqe, &sge, 1));
}

static void ohca_wr_set_sge_list(struct ibv_qp_ex *ibqp, size_t num_sge,
				 const struct ibv_sge *sg_list)
{
	struct ohca_qp *qp = ex_to_qp(ibqp);
	struct ohca_send_wqe *wqe = ohca_ex_cur(qp);

	if (wqe)
		ohca_ex_fail(qp, ohca_wqe_sges(qp, wqe, sg_list, num_sge));
}

static void ohca_wr_set_inline_data(struct ibv_qp_ex *ibqp, void *addr,
				    size_t length)
{
	struct ohca_qp *qp = ex_to_qp(ibqp);
	struct ohca_send_wqe *wqe = ohca_ex_cur(qp);
	int err;

	if (!wqe)
		return;
	err = ohca_wqe_inline_begin(wqe);
	if (!err)
		err = ohca_wqe_inline_add(qp, wqe, addr, length);
	ohca_ex_fail(qp, err);
}

static void ohca_wr_set_inline_data_list(struct ibv_qp_ex *ibqp,
					 size_t num_buf,
					 const struct ibv_data_buf *buf_list)
{
	struct ohca_qp *qp = ex_to_qp(ibqp);
	struct ohca_send_wqe *wqe = ohca_ex_cur(qp);
	size_t i;
	int err;

	if (!wqe)
		return;
	err = ohca_wqe_inline_begin(wqe);
	for (i = 0; !err && i < num_buf; i++)
		err = ohca_wqe_inline_add(qp, wqe, buf_list[i].addr,
					  buf_list[i].length);
	ohca_ex_fail(qp, err);
}

static int ohca_wr_complete(struct ibv_qp_ex *ibqp)
{
	struct ohca_qp *qp = ex_to_qp(ibqp);
	int err = qp->ex_err;

	if (err)
		qp->sq.pi = qp->ex_start_pi;
	else if (qp->sq.pi != qp->ex_start_pi)
		ohca_sq_doorbell(to_ohca_ctx(ibqp->qp_base.context), qp);
	qp->ex_wqe = NULL;
	pthread_spin_unlock(&qp->sq.lock);
	return err;
}

static void ohca_wr_abort(struct ibv_qp_ex *ibqp)
{
	struct ohca_qp *qp = ex_to_qp(ibqp);

	qp->sq.pi = qp->ex_start_pi;
	qp->ex_wqe = NULL;
	pthread_spin_unlock(&qp->sq.lock);
}

/* The send_ops_flags this QP supports (ohca_qp_op_ok's rule). */
uint64_t ohca_qp_ex_send_ops(enum ibv_qp_type qp_type)
{
	uint64_t ops = IBV_QP_EX_WITH_SEND;

	if (qp_type != IBV_QPT_RAW_PACKET)
		ops |= IBV_QP_EX_WITH_SEND_WITH_IMM;

	if (qp_type == IBV_QPT_RC || qp_type == IBV_QPT_XRC_SEND)
		ops |= IBV_QP_EX_WITH_RDMA_WRITE |
		       IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
		       IBV_QP_EX_WITH_RDMA_READ |
		       IBV_QP_EX_WITH_SEND_WITH_INV |
		       IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
		       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	/* Window binds and local invalidation: RC only (ohca_encode_bind_wqe). */
	if (qp_type == IBV_QPT_RC)
		ops |= IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW |
		       IBV_QP_EX_WITH_ATOMIC_WRITE;
	return ops;
}

/* The send_ops_flags of the optional opcodes this device does not execute. */
uint64_t ohca_qp_ex_refused_ops(const struct ohca_context *ctx)
{
	uint64_t ops = 0;

	if (ohca_op_refused(ctx, OHCA_WR_ATOMIC_WRITE))
		ops |= IBV_QP_EX_WITH_ATOMIC_WRITE;
	if (ohca_op_refused(ctx, OHCA_WR_LOCAL_INV))
		ops |= IBV_QP_EX_WITH_LOCAL_INV;
	if (ohca_op_refused(ctx, OHCA_WR_SEND_INV))
		ops |= IBV_QP_EX_WITH_SEND_WITH_INV;
	if (ohca_op_refused(ctx, OHCA_WR_BIND_MW))
		ops |= IBV_QP_EX_WITH_BIND_MW;
	return ops;
}

/* The ibv_wr_* callbacks of the opcodes in @send_ops (checked by the
 * caller against ohca_qp_ex_send_ops) and the setters. */
void ohca_qp_ex_init_ops(struct ohca_qp *qp, uint64_t send_ops)
{
	struct ibv_qp_ex *ex = &qp->vqp.qp_ex;

	ex->wr_start = ohca_wr_start;
	ex->wr_complete = ohca_wr_complete;
	ex->wr_abort = ohca_wr_abort;
	ex->wr_set_sge = ohca_wr_set_sge;
	ex->wr_set_sge_list = ohca_wr_set_sge_list;
	ex->wr_set_inline_data = ohca_wr_set_inline_data;
	ex->wr_set_inline_data_list = ohca_wr_set_inline_data_list;
	if (qp->qp_type == IBV_QPT_UD)
		ex->wr_set_ud_addr = ohca_wr_set_ud_addr;
	if (qp->qp_type == IBV_QPT_XRC_SEND)
		ex->wr_set_xrc_srqn = ohca_wr_set_xrc_srqn;
	if (send_ops & IBV_QP_EX_WITH_SEND)
		ex->wr_send = ohca_wr_send;
	if (send_ops & IBV_QP_EX_WITH_SEND_WITH_IMM)
		ex->wr_send_imm = ohca_wr_send_imm;
	if (send_ops & IBV_QP_EX_WITH_SEND_WITH_INV)
		ex->wr_send_inv = ohca_wr_send_inv;
	if (send_ops & IBV_QP_EX_WITH_RDMA_WRITE)
		ex->wr_rdma_write = ohca_wr_rdma_write;
	if (send_ops & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		ex->wr_rdma_write_imm = ohca_wr_rdma_write_imm;
	if (send_ops & IBV_QP_EX_WITH_RDMA_READ)
		ex->wr_rdma_read = ohca_wr_rdma_read;
	if (send_ops & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)
		ex->wr_atomic_cmp_swp = ohca_wr_atomic_cmp_swp;
	if (send_ops & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
		ex->wr_atomic_fetch_add = ohca_wr_atomic_fetch_add;
	if (send_ops & IBV_QP_EX_WITH_LOCAL_INV)
		ex->wr_local_inv = ohca_wr_local_inv;
	if (send_ops & IBV_QP_EX_WITH_BIND_MW)
		ex->wr_bind_mw = ohca_wr_bind_mw;
	if (send_ops & IBV_QP_EX_WITH_ATOMIC_WRITE)
		ex->wr_atomic_write = ohca_wr_atomic_write;
}

/*
 * Receive WQEs into a QP's RQ, an SRQ or a WQ (one ring format), then one
 * doorbell of type @db for object @handle, or with a record the record
 * (and the doorbell too if @ring_too).
 */
int ohca_post_recv_ring(struct ohca_context *ctx, struct ohca_wq *wq,
			unsigned int db, uint32_t handle, bool ring_too,
			struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	uint32_t posted = 0;
	bool was_empty;
	int err = 0;
	int i;

	pthread_spin_lock(&wq->lock);
	/* Only an RQ advertises credits (see below). */
	was_empty = db == OHCA_DB_RQ && ohca_wq_used(wq) == 0;
	for (; wr; wr = wr->next) {
		struct ohca_recv_wqe *wqe;
		struct ohca_sge *sge;

		if (ohca_wq_used(wq) >= (1u << wq->log_size)) {
			err = ENOMEM;
			break;
		}
		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > wq->max_sge) {
			err = EINVAL;
			break;
		}
		wqe = ohca_wq_entry(wq, wq->pi);
		sge = (struct ohca_sge *)(wqe + 1);
		memset(wqe, 0, sizeof(*wqe));
		wqe->wr_id = htole64(wr->wr_id);
		wqe->num_sge = (uint8_t)wr->num_sge;
		for (i = 0; i < wr->num_sge; i++) {
			sge[i].addr = htole64(wr->sg_list[i].addr);
			sge[i].length = htole32(wr->sg_list[i].length);
			sge[i].lkey = htole32(wr->sg_list[i].lkey);
		}
		wq->pi++;
		posted++;
	}
	if (posted) {
		udma_to_device_barrier();
		/*
		 * The record only: the device reads it when it needs a WQE or
		 * builds an ACK. Into an RQ that was empty (every receive
		 * completed and polled), the doorbell too: the device may
		 * have advertised zero credits, and only a doorbell has it
		 * send the update that ends the requester's wait.
		 */
		if (wq->dbrec)
			ohca_dbrec_set(wq->dbrec, wq->pi);
		if (!wq->dbrec || ring_too || was_empty)
			ohca_ring_db(ctx, db, handle, wq->pi);
	}
	pthread_spin_unlock(&wq->lock);
	if (err)
		*bad_wr = wr;
	return err;
}

int ohca_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr)
{
	struct ohca_qp *qp = to_ohca_qp(ibqp);

	/* receives go to the SRQ, XRC has none here; none in RESET (IBTA) */
	if (qp->srq || !qp->rq.ring.buf || ibqp->state == IBV_QPS_RESET) {
		*bad_wr = wr;
		return EINVAL;
	}
	/*
	 * With a record, the doorbell too outside RTR and RTS and after an
	 * error completion: only a doorbell has WQEs posted in the error
	 * state flushed.
	 */
	return ohca_post_recv_ring(to_ohca_ctx(ibqp->context), &qp->rq,
				   OHCA_DB_RQ, qp->qpn,
				   (ibqp->state != IBV_QPS_RTR &&
				    ibqp->state != IBV_QPS_RTS) ||
				   __atomic_load_n(&qp->rq.mmio_too,
						   __ATOMIC_RELAXED),
				   wr, bad_wr);
}

int ohca_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad_wr)
{
	struct ohca_srq *srq = to_ohca_srq(ibsrq);

	/*
	 * With a record, never the doorbell too. An SRQ advertises no
	 * credits (its QPs' ACKs say "invalid"), so no peer waits for a
	 * credit update: a request that found it empty was answered RNR NAK
	 * and comes again after its RNR timer, when the device reads the
	 * record. Nor does a doorbell flush anything: a QP in the error state
	 * flushes only the one WQE it took, never the SRQ's.
	 */
	return ohca_post_recv_ring(to_ohca_ctx(ibsrq->context), &srq->wq,
				   OHCA_DB_SRQ, srq->srqn, false, wr, bad_wr);
}

static enum ibv_wc_status ohca_wc_status(uint8_t status)
{
	switch (status) {
	case OHCA_CQE_SUCCESS:		return IBV_WC_SUCCESS;
	case OHCA_CQE_LOC_LEN_ERR:	return IBV_WC_LOC_LEN_ERR;
	case OHCA_CQE_LOC_QP_OP_ERR:	return IBV_WC_LOC_QP_OP_ERR;
	case OHCA_CQE_LOC_PROT_ERR:	return IBV_WC_LOC_PROT_ERR;
	case OHCA_CQE_WR_FLUSH_ERR:	return IBV_WC_WR_FLUSH_ERR;
	case OHCA_CQE_MW_BIND_ERR:	return IBV_WC_MW_BIND_ERR;
	case OHCA_CQE_BAD_RESP_ERR:	return IBV_WC_BAD_RESP_ERR;
	case OHCA_CQE_LOC_ACCESS_ERR:	return IBV_WC_LOC_ACCESS_ERR;
	case OHCA_CQE_REM_INV_REQ_ERR:	return IBV_WC_REM_INV_REQ_ERR;
	case OHCA_CQE_REM_ACCESS_ERR:	return IBV_WC_REM_ACCESS_ERR;
	case OHCA_CQE_REM_OP_ERR:	return IBV_WC_REM_OP_ERR;
	case OHCA_CQE_RETRY_EXC_ERR:	return IBV_WC_RETRY_EXC_ERR;
	case OHCA_CQE_RNR_RETRY_EXC_ERR: return IBV_WC_RNR_RETRY_EXC_ERR;
	case OHCA_CQE_FATAL_ERR:	return IBV_WC_FATAL_ERR;
	default:			return IBV_WC_GENERAL_ERR;
	}
}

static enum ibv_wc_opcode ohca_wc_opcode(uint8_t opcode)
{
	switch (opcode) {
	case OHCA_CQE_SEND:		return IBV_WC_SEND;
	case OHCA_CQE_RDMA_WRITE:	return IBV_WC_RDMA_WRITE;
	case OHCA_CQE_RDMA_READ:	return IBV_WC_RDMA_READ;
	case OHCA_CQE_COMP_SWAP:	return IBV_WC_COMP_SWAP;
	case OHCA_CQE_FETCH_ADD:	return IBV_WC_FETCH_ADD;
	case OHCA_CQE_BIND_MW:		return IBV_WC_BIND_MW;
	case OHCA_CQE_LOCAL_INV:	return IBV_WC_LOCAL_INV;
	case OHCA_CQE_ATOMIC_WRITE:	return IBV_WC_ATOMIC_WRITE;
	case OHCA_CQE_RECV_RDMA_WITH_IMM: return IBV_WC_RECV_RDMA_WITH_IMM;
	default:			return IBV_WC_RECV;
	}
}

/* Retire the WQEs this CQE completes.  Called under the CQ lock; the
 * consumer index is read by posters under the queue's lock, and the
 * producer index is not read here (it belongs to the queue's lock). */
static void ohca_retire(struct ohca_qp *qp, const struct ohca_cqe *cqe)
{
	struct ohca_wq *wq;
	uint32_t ci, delta;

	if ((cqe->opcode & OHCA_CQE_RECV) && qp->srq) {
		/* Pollers of different CQs retire SRQ slots concurrently. */
		__atomic_fetch_add(&qp->srq->wq.ci, 1, __ATOMIC_RELAXED);
		return;
	}
	if (cqe->opcode & OHCA_CQE_RECV) {
		/* Receive WQEs complete in order, one per CQE. */
		wq = &qp->rq;
		ci = __atomic_load_n(&wq->ci, __ATOMIC_RELAXED);
		__atomic_store_n(&wq->ci, ci + 1, __ATOMIC_RELAXED);
		return;
	}
	wq = &qp->sq;
	ci = __atomic_load_n(&wq->ci, __ATOMIC_RELAXED);
	/* wqe_index: the low 16 bits of the completed WQE's SQ index. */
	delta = (uint32_t)(uint16_t)(le16toh(cqe->wqe_index) - (uint16_t)ci);
	if (delta < (1u << wq->log_size))
		__atomic_store_n(&wq->ci, ci + delta + 1, __ATOMIC_RELAXED);
}

/*
 * The CQE decoder, shared by poll_cq and the extended CQ's read_*
 * callbacks: each field of struct ibv_wc has one function here.
 */
static inline uint32_t ohca_cqe_wc_flags(const struct ohca_cqe *cqe)
{
	uint32_t flags = 0;

	if (cqe->flags & OHCA_CQE_F_IMM)
		flags |= IBV_WC_WITH_IMM;
	else if (cqe->flags & OHCA_CQE_F_INV)
		flags |= IBV_WC_WITH_INV;
	/* UD: the receive buffer starts with the GRH (IPv4 or IPv6). */
	if (cqe->flags & OHCA_CQE_F_GRH)
		flags |= IBV_WC_GRH;
	return flags;
}

/*
 * The SL of a UD receive: RoCE has no SL, and ibv_wc no field for what
 * A17.4.5.1 has the CQE tell, whether the frame was IPv4 or IPv6. The SL
 * bits carry that as mlx5 reports it (bit 3: UDP, RoCE v2; bits 2:0: 1
 * IPv6, 2 IPv4), and UCX reads them there to find the destination GID in
 * the GRH: with 0 it took an IPv4 frame for a RoCE v1 one and dropped
 * every packet. Other completions keep the device's value (0).
 */
#define OHCA_WC_SL_UDP 0x8
#define OHCA_WC_SL_IPV6 0x1
#define OHCA_WC_SL_IPV4 0x2

/*
 * A successful receive on an InfiniBand port: a UD one names its source
 * as the LRH did, in the top bits of qpn and src_qp and in vendor_err
 * (ohca_queue.h); those bits are 0 in other receives.
 */
static inline bool ohca_cqe_ib_recv(const struct ohca_cq *cq,
				    const struct ohca_cqe *cqe)
{
	return ohca_ctx_of_cq((struct ohca_cq *)cq)->ib_port &&
	       (cqe->opcode & OHCA_CQE_RECV) &&
	       cqe->status == OHCA_CQE_SUCCESS &&
	       !(cqe->flags & OHCA_CQE_F_XRC);
}

static inline uint32_t ohca_cqe_slid(const struct ohca_cq *cq,
				     const struct ohca_cqe *cqe)
{
	if (!ohca_cqe_ib_recv(cq, cqe))
		return 0;
	return OHCA_CQE_IB_SLID(le32toh(cqe->qpn), cqe->vendor_err);
}

static inline uint8_t ohca_cqe_path_bits(const struct ohca_cq *cq,
					 const struct ohca_cqe *cqe)
{
	if (!ohca_cqe_ib_recv(cq, cqe))
		return 0;
	return OHCA_CQE_IB_PATH_BITS(le32toh(cqe->src_qp));
}

static inline uint8_t ohca_cqe_vendor_err(const struct ohca_cq *cq,
					  const struct ohca_cqe *cqe)
{
	return ohca_cqe_ib_recv(cq, cqe) ? 0 : cqe->vendor_err;
}

static inline uint8_t ohca_cqe_sl(const struct ohca_cq *cq,
				  const struct ohca_cqe *cqe)
{
	/* An InfiniBand port's SL is the LRH's. */
	if (!(cqe->flags & OHCA_CQE_F_GRH) ||
	    ohca_ctx_of_cq((struct ohca_cq *)cq)->ib_port)
		return cqe->sl;
	return OHCA_WC_SL_UDP | ((cqe->flags & OHCA_CQE_F_IPV4) ?
				 OHCA_WC_SL_IPV4 : OHCA_WC_SL_IPV6);
}

/*
 * ibv_wc's imm_data / invalidated_rkey union: the immediate as on the
 * wire (like ibv_wc.imm_data), or the R_Key a SEND with invalidate from a
 * kernel peer invalidated (a little-endian number in the CQE), else 0.
 */
static inline __be32 ohca_cqe_imm_or_rkey(const struct ohca_cqe *cqe)
{
	if (cqe->flags & OHCA_CQE_F_IMM)
		return cqe->imm_data;
	if (cqe->flags & OHCA_CQE_F_INV)
		return (__be32)le32toh((__le32)cqe->imm_data);
	return 0;
}

/*
 * Retire the WQEs a CQE completes; false for a CQE of a QP that no longer
 * exists (dropped by the caller).
 */
static bool ohca_cqe_retire(struct ohca_cq *cq, const struct ohca_cqe *cqe)
{
	uint32_t qpn = le32toh(cqe->qpn) & OHCA_CQE_QPN_MASK;
	struct ohca_qp *qp = cq->last_qp;

	if ((cqe->opcode & OHCA_CQE_RECV) && (cqe->flags & OHCA_CQE_F_WQ)) {
		/* A receive WQ's (wq.c): it completes in order. */
		struct ohca_rwq *rwq = ohca_find_wq(ohca_ctx_of_cq(cq), qpn);

		if (!rwq)
			return false;
		__atomic_fetch_add(&rwq->wq.ci, 1, __ATOMIC_RELAXED);
		return true;
	}
	if ((cqe->opcode & OHCA_CQE_RECV) && (cqe->flags & OHCA_CQE_F_XRC)) {
		/* An XRC target QP may be another process's: the SRQ's slot. */
		struct ohca_srq *srq =
			ohca_find_xrc_srq(ohca_ctx_of_cq(cq),
					  le32toh(cqe->src_qp) & OHCA_CQE_QPN_MASK);

		if (!srq)
			return false;
		__atomic_fetch_add(&srq->wq.ci, 1, __ATOMIC_RELAXED);
		return true;
	}
	if (!qp || qp->qpn != qpn) {
		qp = ohca_find_qp(ohca_ctx_of_cq(cq), qpn);
		if (!qp)
			return false;
		cq->last_qp = qp;
	}
	/* The QP is in error: later receives need the doorbell too. */
	if (qp->rq.dbrec && cqe->status != OHCA_CQE_SUCCESS)
		__atomic_store_n(&qp->rq.mmio_too, true, __ATOMIC_RELAXED);
	ohca_retire(qp, cqe);
	return true;
}

/*
 * The next CQE the device wrote for a live QP, its WQEs retired, or NULL.
 * Under the CQ lock. cq->ci moves past every entry consumed (dropped ones
 * too); the slots stay the provider's until the caller rings the CQ
 * doorbell with the new index (ohca_cq_update_ci), so a returned entry
 * may be read until then.
 */
static const struct ohca_cqe *ohca_cq_take(struct ohca_cq *cq)
{
	for (;;) {
		const struct ohca_cqe *cqe = ohca_cqe_at(cq, cq->ci);
		uint8_t owner = !((cq->ci >> cq->log_size) & 1);

		if ((*(const volatile uint8_t *)&cqe->owner & OHCA_CQE_OWNER) !=
		    owner)
			return NULL;
		/* The owner byte before the rest of the entry. */
		udma_from_device_barrier();
		cq->ci++;
		if (ohca_cqe_retire(cq, cqe))
			return cqe;
	}
}

/* Hand the consumed slots back to the device: one doorbell. */
static void ohca_cq_update_ci(struct ohca_cq *cq, uint32_t old_ci)
{
	if (cq->ci == old_ci)
		return;
	/* Entries read before the device may reuse their slots. */
	udma_to_device_barrier();
	/* The record only: the device reads it when the CQ looks full. */
	if (cq->dbrec)
		ohca_dbrec_set(cq->dbrec, cq->ci & OHCA_DB_CQ_CI_MASK);
	else
		ohca_ring_db(ohca_ctx_of_cq(cq), OHCA_DB_CQ, cq->cqn,
			     cq->ci & OHCA_DB_CQ_CI_MASK);
}

static void ohca_cqe_to_wc(const struct ohca_cq *cq,
			   const struct ohca_cqe *cqe, struct ibv_wc *wc)
{
	wc->wr_id = le64toh(cqe->wr_id);
	wc->status = ohca_wc_status(cqe->status);
	wc->opcode = ohca_wc_opcode(cqe->opcode);
	wc->vendor_err = ohca_cqe_vendor_err(cq, cqe);
	wc->byte_len = le32toh(cqe->byte_len);
	wc->imm_data = ohca_cqe_imm_or_rkey(cqe);
	wc->qp_num = le32toh(cqe->qpn) & OHCA_CQE_QPN_MASK;
	wc->src_qp = le32toh(cqe->src_qp) & OHCA_CQE_QPN_MASK;
	wc->wc_flags = ohca_cqe_wc_flags(cqe);
	wc->pkey_index = 0;
	wc->slid = ohca_cqe_slid(cq, cqe);
	wc->sl = ohca_cqe_sl(cq, cqe);
	wc->dlid_path_bits = ohca_cqe_path_bits(cq, cqe);
}

int ohca_poll_cq(struct ibv_cq *ibcq, int num_entries, struct ibv_wc *wc)
{
	struct ohca_cq *cq = to_ohca_cq(ibcq);
	const struct ohca_cqe *cqe;
	uint32_t old_ci;
	int npolled = 0;

	pthread_spin_lock(&cq->lock);
	old_ci = cq->ci;
	while (npolled < num_entries && (cqe = ohca_cq_take(cq)))
		ohca_cqe_to_wc(cq, cqe, &wc[npolled++]);
	ohca_cq_update_ci(cq, old_ci);
	pthread_spin_unlock(&cq->lock);
	return npolled;
}

/* ------------------------------------------------------------------ */
/* Extended CQ (ibv_create_cq_ex): start_poll takes the CQ lock and   */
/* the first CQE, next_poll the following ones, end_poll returns the  */
/* slots with one doorbell and unlocks. read_* decode the current CQE */
/* with the functions poll_cq uses.                                   */
/* ------------------------------------------------------------------ */

static inline struct ohca_cq *to_ohca_cq_ex(struct ibv_cq_ex *ibcq)
{
	return ohca_container_of(ibcq, struct ohca_cq, vcq.cq_ex);
}

static void ohca_cq_ex_expose(struct ohca_cq *cq, const struct ohca_cqe *cqe)
{
	cq->cur_cqe = cqe;
	cq->vcq.cq_ex.wr_id = le64toh(cqe->wr_id);
	cq->vcq.cq_ex.status = ohca_wc_status(cqe->status);
}

static int ohca_start_poll(struct ibv_cq_ex *ibcq,
			   struct ibv_poll_cq_attr *attr)
{
	struct ohca_cq *cq = to_ohca_cq_ex(ibcq);
	const struct ohca_cqe *cqe;

	if (attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&cq->lock);
	cq->poll_ci = cq->ci;
	cqe = ohca_cq_take(cq);
	if (!cqe) {
		/* No end_poll follows ENOENT: return dropped slots now. */
		ohca_cq_update_ci(cq, cq->poll_ci);
		pthread_spin_unlock(&cq->lock);
		return ENOENT;
	}
	cq->polling = true;
	ohca_cq_ex_expose(cq, cqe);
	return 0;
}

static int ohca_next_poll(struct ibv_cq_ex *ibcq)
{
	struct ohca_cq *cq = to_ohca_cq_ex(ibcq);
	const struct ohca_cqe *cqe = ohca_cq_take(cq);

	if (!cqe)
		return ENOENT;
	ohca_cq_ex_expose(cq, cqe);
	return 0;
}

static void ohca_end_poll(struct ibv_cq_ex *ibcq)
{
	struct ohca_cq *cq = to_ohca_cq_ex(ibcq);

	/* Tolerate an end_poll after a start_poll that found nothing. */
	if (!cq->polling)
		return;
	cq->polling = false;
	cq->cur_cqe = NULL;
	ohca_cq_update_ci(cq, cq->poll_ci);
	pthread_spin_unlock(&cq->lock);
}

static enum ibv_wc_opcode ohca_read_opcode(struct ibv_cq_ex *ibcq)
{
	return ohca_wc_opcode(to_ohca_cq_ex(ibcq)->cur_cqe->opcode);
}

static uint32_t ohca_read_vendor_err(struct ibv_cq_ex *ibcq)
{
	struct ohca_cq *cq = to_ohca_cq_ex(ibcq);

	return ohca_cqe_vendor_err(cq, cq->cur_cqe);
}

static uint32_t ohca_read_byte_len(struct ibv_cq_ex *ibcq)
{
	return le32toh(to_ohca_cq_ex(ibcq)->cur_cqe->byte_len);
}

static __be32 ohca_read_imm_data(struct ibv_cq_ex *ibcq)
{
	return ohca_cqe_imm_or_rkey(to_ohca_cq_ex(ibcq)->cur_cqe);
}

static uint32_t ohca_read_qp_num(struct ibv_cq_ex *ibcq)
{
	return le32toh(to_ohca_cq_ex(ibcq)->cur_cqe->qpn) & OHCA_CQE_QPN_MASK;
}

static uint32_t ohca_read_src_qp(struct ibv_cq_ex *ibcq)
{
	return le32toh(to_ohca_cq_ex(ibcq)->cur_cqe->src_qp) & OHCA_CQE_QPN_MASK;
}

static unsigned int ohca_read_wc_flags(struct ibv_cq_ex *ibcq)
{
	return ohca_cqe_wc_flags(to_ohca_cq_ex(ibcq)->cur_cqe);
}

/* RoCE has no LIDs: slid and dlid_path_bits are 0 there, as in poll_cq. */
static uint32_t ohca_read_slid(struct ibv_cq_ex *ibcq)
{
	struct ohca_cq *cq = to_ohca_cq_ex(ibcq);

	return ohca_cqe_slid(cq, cq->cur_cqe);
}

static uint8_t ohca_read_sl(struct ibv_cq_ex *ibcq)
{
	struct ohca_cq *cq = to_ohca_cq_ex(ibcq);

	return ohca_cqe_sl(cq, cq->cur_cqe);
}

static uint8_t ohca_read_dlid_path_bits(struct ibv_cq_ex *ibcq)
{
	struct ohca_cq *cq = to_ohca_cq_ex(ibcq);

	return ohca_cqe_path_bits(cq, cq->cur_cqe);
}

/* Only the readers of the requested fields, as libibverbs expects. */
void ohca_cq_ex_init_ops(struct ohca_cq *cq, uint64_t wc_flags)
{
	struct ibv_cq_ex *ex = &cq->vcq.cq_ex;

	ex->start_poll = ohca_start_poll;
	ex->next_poll = ohca_next_poll;
	ex->end_poll = ohca_end_poll;
	ex->read_opcode = ohca_read_opcode;
	ex->read_vendor_err = ohca_read_vendor_err;
	ex->read_wc_flags = ohca_read_wc_flags;
	if (wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		ex->read_byte_len = ohca_read_byte_len;
	if (wc_flags & IBV_WC_EX_WITH_IMM)
		ex->read_imm_data = ohca_read_imm_data;
	if (wc_flags & IBV_WC_EX_WITH_QP_NUM)
		ex->read_qp_num = ohca_read_qp_num;
	if (wc_flags & IBV_WC_EX_WITH_SRC_QP)
		ex->read_src_qp = ohca_read_src_qp;
	if (wc_flags & IBV_WC_EX_WITH_SLID)
		ex->read_slid = ohca_read_slid;
	if (wc_flags & IBV_WC_EX_WITH_SL)
		ex->read_sl = ohca_read_sl;
	if (wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		ex->read_dlid_path_bits = ohca_read_dlid_path_bits;
}

int ohca_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct ohca_cq *cq = to_ohca_cq(ibcq);

	pthread_spin_lock(&cq->lock);
	ohca_ring_db(ohca_ctx_of_cq(cq), OHCA_DB_CQ, cq->cqn,
		     (cq->ci & OHCA_DB_CQ_CI_MASK) |
			     (solicited_only ? OHCA_DB_CQ_ARM_SOLICITED :
					       OHCA_DB_CQ_ARM_NEXT));
	pthread_spin_unlock(&cq->lock);
	return 0;
}
