/* Shared setup for the small RC test programs (ohca_rc_nosyscall,
 * ohca_rc_negative): one device, one PD, QPs connected to each other through
 * the port's own RoCEv2 GID (loopback inside the device). */
#ifndef OHCA_RC_COMMON_H
#define OHCA_RC_COMMON_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static union ibv_gid port_gid;
static struct ibv_port_attr port_attr;
static uint8_t port_num = 1;
static int gid_idx = 1;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("FATAL: ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
	fflush(stdout);
	exit(2);
}

static void open_dev(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);

	if (!list)
		die("ibv_get_device_list: %s", strerror(errno));
	for (int i = 0; list[i]; i++) {
		const char *n = ibv_get_device_name(list[i]);

		if (name ? !strcmp(n, name) : !strncmp(n, "ohca", 4)) {
			ctx = ibv_open_device(list[i]);
			if (!ctx)
				die("ibv_open_device(%s): %s", n, strerror(errno));
			break;
		}
	}
	ibv_free_device_list(list);
	if (!ctx)
		die("no device %s", name ? name : "ohca*");
	if (ibv_query_port(ctx, port_num, &port_attr))
		die("ibv_query_port: %s", strerror(errno));
	if (port_attr.state != IBV_PORT_ACTIVE)
		die("port not active");
	if (ibv_query_gid(ctx, port_num, gid_idx, &port_gid))
		die("ibv_query_gid(%d): %s", gid_idx, strerror(errno));
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd: %s", strerror(errno));
}

static struct ibv_qp *make_qp(struct ibv_cq *cq, uint32_t depth)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = depth, .max_recv_wr = depth,
			 .max_send_sge = 2, .max_recv_sge = 2 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &init);

	if (!qp)
		die("ibv_create_qp: %s", strerror(errno));
	return qp;
}

/* RESET -> INIT -> RTR -> RTS towards dest_qpn on the same port/GID. */
static void connect_qp(struct ibv_qp *qp, uint32_t dest_qpn, int access,
		       uint8_t rnr_retry, uint8_t min_rnr_timer)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = port_num,
		.qp_access_flags = access,
	};
	int err;

	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (err)
		die("qp %u RESET->INIT: %s", qp->qp_num, strerror(err));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = port_attr.active_mtu;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = 0x100;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = min_rnr_timer;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = port_num;
	a.ah_attr.grh.dgid = port_gid;
	a.ah_attr.grh.sgid_index = (uint8_t)gid_idx;
	a.ah_attr.grh.hop_limit = 64;
	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (err)
		die("qp %u INIT->RTR: %s", qp->qp_num, strerror(err));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = rnr_retry;
	a.sq_psn = 0x100;
	a.max_rd_atomic = 4;
	err = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
			    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			    IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	if (err)
		die("qp %u RTR->RTS: %s", qp->qp_num, strerror(err));
}

#define ACC_ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		 IBV_ACCESS_REMOTE_READ)

#endif
