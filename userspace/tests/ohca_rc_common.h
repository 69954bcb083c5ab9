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

#include "ohca_rc_connect.h"

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
	const struct rc_path path = {
		.port = port_num, .sgid_index = (uint8_t)gid_idx,
		.dgid = port_gid, .mtu = port_attr.active_mtu,
		.dest_qpn = dest_qpn, .rq_psn = 0x100, .sq_psn = 0x100,
		.access = access, .rd_atomic = 4,
		.min_rnr_timer = min_rnr_timer, .timeout = 14, .retry_cnt = 7,
		.rnr_retry = rnr_retry,
	};
	const char *step;
	int err = rc_connect(qp, &path, &step);

	if (err)
		die("qp %u %s: %s", qp->qp_num, step, strerror(err));
}

#endif
