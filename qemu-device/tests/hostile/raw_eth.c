// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ohca_hostile: raw Ethernet QPs and flows: CREATE_FLOW fields and limit, frames of
 * bad lengths, bad raw WQEs.
 */
#include "hostile.h"

#define FLOW_V(f) (offsetof(struct ohca_create_flow_in, value) + \
		   offsetof(struct ohca_flow_spec, f))
#define FLOW_M(f) (offsetof(struct ohca_create_flow_in, mask) + \
		   offsetof(struct ohca_flow_spec, f))

/* A raw QP of page 0 in RTS (RESET->INIT needs the port, nothing else). */
static uint32_t mk_raw_qp(uint32_t pd, uint32_t cq)
{
	struct ohca_create_qp_in in;
	struct ohca_qp_attr a = { .qp_state = OHCA_QPS_INIT };
	uint32_t qpn;

	qp_in(&in, pd, cq);
	in.type = OHCA_QPT_RAW_ETH;
	if (cmd(OHCA_CMD_CREATE_QP, &in, sizeof(in), 8))
		return 0;
	qpn = out_handle();
	if (modify(qpn, OHCA_QP_STATE, &a) != OHCA_STATUS_BAD_FIELD ||
	    modify(qpn, OHCA_QP_STATE | OHCA_QP_PORT, &a))
		return 0;
	a.qp_state = OHCA_QPS_RTR;
	if (modify(qpn, OHCA_QP_STATE, &a))
		return 0;
	a.qp_state = OHCA_QPS_RTS;
	return modify(qpn, OHCA_QP_STATE, &a) ? 0 : qpn;
}

/* An Ethernet match on the multicast MAC the rdma-core suite uses. */
static void eth_flow_in(struct ohca_create_flow_in *in, uint32_t qpn)
{
	static const uint8_t mac[6] = { 0x01, 0x50, 0x56, 0x19, 0x20, 0xa7 };

	memset(in, 0, sizeof(*in));
	in->qpn = qpn;
	memcpy(in->value.dmac, mac, 6);
	memset(in->mask.dmac, 0xff, 6);
}

static uint8_t flow_cmd(const struct ohca_create_flow_in *in)
{
	return cmd(OHCA_CMD_CREATE_FLOW, in, sizeof(*in), 8);
}

bool t_raw_flow_fields(void)
{
	struct ohca_create_flow_in in;
	uint32_t pd, cq, raw, rc, h;

	if (!bring_up() || !add_gid0())
		return false;
	pd = mk_pd();
	cq = mk_cq(0, 0);
	CHECK(pd && cq, "setup");
	raw = mk_raw_qp(pd, cq);
	CHECK(raw, "raw QP: %#x/%#x", last_status, last_syn);
	rc = mk_qp(pd, cq);
	CHECK(rc, "RC QP: %#x/%#x", last_status, last_syn);

	eth_flow_in(&in, raw);
	in.rsvd0 = 1;
	EXPECT_CMD(flow_cmd(&in), OHCA_STATUS_RESERVED_NONZERO, 6);
	eth_flow_in(&in, raw);
	in.mask.rsvd = 1;
	EXPECT_CMD(flow_cmd(&in), OHCA_STATUS_RESERVED_NONZERO, FLOW_M(rsvd));
	eth_flow_in(&in, 0xdead);
	EXPECT_CMD(flow_cmd(&in), OHCA_STATUS_BAD_HANDLE, 0xdead);
	eth_flow_in(&in, rc);
	EXPECT_CMD(flow_cmd(&in), OHCA_STATUS_BAD_STATE, rc);
	/* A value bit the mask does not cover. */
	eth_flow_in(&in, raw);
	in.mask.dmac[5] = 0x0f;
	EXPECT_CMD(flow_cmd(&in), OHCA_STATUS_BAD_FIELD, FLOW_V(dmac) + 5);
	/* IP fields without the IP version, a version that is not one. */
	eth_flow_in(&in, raw);
	memset(in.mask.dst_ip, 0xff, 16);
	EXPECT_CMD(flow_cmd(&in), OHCA_STATUS_BAD_FIELD, FLOW_M(ip_version));
	in.mask.ip_version = 0xff;
	in.value.ip_version = 5;
	EXPECT_CMD(flow_cmd(&in), OHCA_STATUS_BAD_FIELD, FLOW_V(ip_version));
	/* IPv4 with 16 address bytes; a 32-bit IPv6 flow label. */
	in.value.ip_version = 4;
	EXPECT_CMD(flow_cmd(&in), OHCA_STATUS_BAD_FIELD, FLOW_M(dst_ip));
	in.value.ip_version = 6;
	in.mask.flow_label = 0xffffffff;
	EXPECT_CMD(flow_cmd(&in), OHCA_STATUS_BAD_FIELD, FLOW_M(flow_label));
	/* Ports without TCP or UDP. */
	in.mask.flow_label = 0;
	in.mask.dst_port = 0xffff;
	EXPECT_CMD(flow_cmd(&in), OHCA_STATUS_BAD_FIELD, FLOW_M(ip_proto));
	in.mask.ip_proto = 0xff;
	in.value.ip_proto = 1;
	EXPECT_CMD(flow_cmd(&in), OHCA_STATUS_BAD_FIELD, FLOW_M(ip_proto));
	in.value.ip_proto = 17;
	EXPECT_CMD(flow_cmd(&in), 0, 0);
	h = out_handle();

	/* The QP cannot go while a flow steers to it; the flow goes once. */
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_QP, raw), OHCA_STATUS_BAD_STATE, raw);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_FLOW, h), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_FLOW, h), OHCA_STATUS_BAD_HANDLE, h);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_QP, raw), 0, 0);
	eth_flow_in(&in, raw);
	EXPECT_CMD(flow_cmd(&in), OHCA_STATUS_BAD_HANDLE, raw);
	return nop_ok();
}

bool t_raw_flow_exhaustion(void)
{
	struct ohca_query_device_out *q = pva(P_OUT);
	struct ohca_create_flow_in in;
	uint32_t pd, cq, raw, max, n = 0;
	static uint32_t h[1024];

	if (!bring_up())
		return false;
	CHECK(cmd(OHCA_CMD_QUERY_DEVICE, NULL, 0, sizeof(*q)) == 0 &&
	      (q->dev_caps & OHCA_DEV_CAP_RAW_ETH) && q->max_flow > 0 &&
	      q->max_flow < 1024, "QUERY_DEVICE: caps %#x max_flow %u",
	      q->dev_caps, q->max_flow);
	max = q->max_flow;
	pd = mk_pd();
	cq = mk_cq(0, 0);
	raw = pd && cq ? mk_raw_qp(pd, cq) : 0;
	CHECK(raw, "setup: %#x/%#x", last_status, last_syn);
	eth_flow_in(&in, raw);
	while (flow_cmd(&in) == OHCA_STATUS_OK) {
		CHECK(n < max, "no flow limit");
		h[n++] = out_handle();
	}
	CHECK(last_status == OHCA_STATUS_NO_RESOURCES, "status %#x", last_status);
	CHECK(n == max, "%u flows, QUERY_DEVICE says %u", n, max);
	for (uint32_t i = 0; i < n; i++)
		EXPECT_CMD(destroy(OHCA_CMD_DESTROY_FLOW, h[i]), 0, 0);
	EXPECT_CMD(flow_cmd(&in), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_FLOW, out_handle()), 0, 0);
	EXPECT_CMD(destroy(OHCA_CMD_DESTROY_QP, raw), 0, 0);
	return nop_ok();
}

/* A raw QP as g_qp (post_wqe's), then one send WQE and its completion. */
static bool raw_wqe_case(struct ohca_send_wqe w, const struct ohca_sge *sg,
			 int nsg, uint8_t st, uint8_t verr)
{
	struct ohca_sge s[2];

	if (!bring_up() || !add_gid0())
		return false;
	g_pd = mk_pd();
	g_mr = mk_mr(g_pd, OHCA_ACCESS_LOCAL_WRITE);
	g_cq = mk_cq(0, 0);
	CHECK(g_pd && g_mr && g_cq, "setup");
	memset(pva(P_SQ), 0, PG);
	memset(pva(P_RQ), 0, PG);
	g_qp = mk_raw_qp(g_pd, g_cq);
	CHECK(g_qp, "raw QP: %#x/%#x", last_status, last_syn);
	for (int i = 0; i < nsg; i++) {
		s[i] = sg[i];
		s[i].lkey = g_mr;
	}
	w.wr_id = 0x5aa5;
	w.flags |= OHCA_WQE_SIGNALED;
	return post_wqe(&w, s, nsg, st, verr);
}

/* Shorter than an Ethernet header. */
bool t_raw_frame_short(void)
{
	static const struct ohca_sge sg = { 0x10000, 13, 0 };

	return raw_wqe_case((struct ohca_send_wqe){ .opcode = OHCA_WR_SEND,
						    .num_sge = 1 },
			    &sg, 1, OHCA_CQE_LOC_LEN_ERR,
			    OHCA_VERR_BAD_FRAME_LEN);
}

/* Two pages: longer than the port's MTU allows, whatever the keys say. */
bool t_raw_frame_long(void)
{
	static const struct ohca_sge sg[2] = { { 0x10000, PG, 0 },
					       { 0x10000, PG, 0 } };

	return raw_wqe_case((struct ohca_send_wqe){ .opcode = OHCA_WR_SEND,
						    .num_sge = 2 },
			    sg, 2, OHCA_CQE_LOC_LEN_ERR,
			    OHCA_VERR_BAD_FRAME_LEN);
}

/* A raw QP sends frames only: no RDMA, no immediate, no huge inline. */
bool t_raw_wqe_bad(void)
{
	static const struct ohca_sge sg = { 0x10000, 64, 0 };

	if (!raw_wqe_case((struct ohca_send_wqe){ .opcode = OHCA_WR_RDMA_WRITE,
						  .num_sge = 1 },
			  &sg, 1, OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_WQE))
		return false;
	if (!raw_wqe_case((struct ohca_send_wqe){ .opcode = OHCA_WR_SEND_IMM,
						  .num_sge = 1 },
			  &sg, 1, OHCA_CQE_LOC_QP_OP_ERR, OHCA_VERR_BAD_WQE))
		return false;
	return raw_wqe_case((struct ohca_send_wqe){ .opcode = OHCA_WR_SEND,
						    .flags = OHCA_WQE_INLINE,
						    .inline_len = 0xfffffff0 },
			    NULL, 0, OHCA_CQE_LOC_QP_OP_ERR,
			    OHCA_VERR_BAD_WQE);
}
