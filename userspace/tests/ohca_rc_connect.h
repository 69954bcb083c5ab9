/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The RC (or UC) connection every test program makes: RESET -> INIT -> RTR -> RTS
 * towards one peer QP over a RoCEv2 GID, or on an InfiniBand port by the
 * peer's LID (dlid set: no GRH).  Kept apart from ohca_rc_common.h
 * (the one-device harness with its own globals and die()) so that programs
 * with their own setup and failure reporting can share it too. */
#ifndef OHCA_RC_CONNECT_H
#define OHCA_RC_CONNECT_H

#include <stdint.h>
#include <infiniband/verbs.h>

#define ACC_ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		 IBV_ACCESS_REMOTE_READ)

struct rc_path {
	uint8_t port;
	uint8_t sgid_index;
	union ibv_gid dgid;
	uint16_t dlid;		/* non-zero: LID-routed, without a GRH (InfiniBand) */
	enum ibv_mtu mtu;
	uint32_t dest_qpn;
	uint32_t rq_psn;	/* the peer's first PSN */
	uint32_t sq_psn;
	int access;
	uint8_t rd_atomic;	/* both max_rd_atomic and max_dest_rd_atomic */
	uint8_t min_rnr_timer;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
};

/* Returns 0, or ibv_modify_qp()'s error with *step naming the transition
 * that failed ("RESET->INIT", "INIT->RTR" or "RTR->RTS"). */
static inline int rc_connect(struct ibv_qp *qp, const struct rc_path *p,
			     const char **step)
{
	struct ibv_qp_attr init = {
		.qp_state = IBV_QPS_INIT,
		.port_num = p->port,
		.qp_access_flags = p->access,
	};
	struct ibv_qp_attr rtr = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = p->mtu,
		.dest_qp_num = p->dest_qpn,
		.rq_psn = p->rq_psn,
		.max_dest_rd_atomic = p->rd_atomic,
		.min_rnr_timer = p->min_rnr_timer,
		.ah_attr = {
			.is_global = !p->dlid,
			.dlid = p->dlid,
			.port_num = p->port,
			.grh = { .dgid = p->dgid, .sgid_index = p->sgid_index,
				 .hop_limit = 64 },
		},
	};
	struct ibv_qp_attr rts = {
		.qp_state = IBV_QPS_RTS,
		.timeout = p->timeout,
		.retry_cnt = p->retry_cnt,
		.rnr_retry = p->rnr_retry,
		.sq_psn = p->sq_psn,
		.max_rd_atomic = p->rd_atomic,
	};
	int err;

	/* UC: no acknowledgements, so none of RC's reliability attributes */
	const int is_uc = qp->qp_type == IBV_QPT_UC;

	*step = "RESET->INIT";
	err = ibv_modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (err)
		return err;
	*step = "INIT->RTR";
	err = ibv_modify_qp(qp, &rtr, IBV_QP_STATE | IBV_QP_AV |
			    IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			    IBV_QP_RQ_PSN | (is_uc ? 0 :
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER));
	if (err)
		return err;
	*step = "RTR->RTS";
	return ibv_modify_qp(qp, &rts, IBV_QP_STATE | IBV_QP_SQ_PSN |
			     (is_uc ? 0 : IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			      IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC));
}

#endif
