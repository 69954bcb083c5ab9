// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca_kverbs_test: a guest-side module that checks the kernel verbs of an
 * ohca device. On load it connects two RC QPs of "ohca0" to each other
 * through the port's RoCEv2 GID at index gid_index, sends messages (plain,
 * with immediate, inline) and checks data and completions, then waits for
 * a completion event on an armed CQ, then resets both QPs, reconnects them
 * and sends again. insmod fails with the error when any
 * check fails; on success the module stays loaded doing nothing.
 */
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

static char *ibdev_name = "ohca0";
module_param_named(dev, ibdev_name, charp, 0444);
static int gid_index = 1;
module_param(gid_index, int, 0444);

#define BUF_SIZE	4096
#define NUM_WR		16

struct kv_ctx {
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp[2];
	void *buf[2];
	u64 dma[2];
	struct completion event;
};

static void kv_comp(struct ib_cq *cq, void *ctx)
{
	struct kv_ctx *kv = ctx;

	complete(&kv->event);
}

static int kv_connect(struct kv_ctx *kv, int i, union ib_gid *gid)
{
	struct ib_qp_attr attr = {};
	int err;

	attr.qp_state = IB_QPS_INIT;
	attr.pkey_index = 0;
	attr.port_num = 1;
	attr.qp_access_flags = IB_ACCESS_LOCAL_WRITE;
	err = ib_modify_qp(kv->qp[i], &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (err)
		return err;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	attr.path_mtu = IB_MTU_1024;
	attr.dest_qp_num = kv->qp[!i]->qp_num;
	attr.rq_psn = 100 + !i;
	attr.max_dest_rd_atomic = 1;
	attr.min_rnr_timer = 12;
	attr.ah_attr.type = rdma_ah_find_type(kv->dev, 1);
	rdma_ah_set_port_num(&attr.ah_attr, 1);
	rdma_ah_set_grh(&attr.ah_attr, gid, 0, gid_index, 64, 0);
	err = ib_modify_qp(kv->qp[i], &attr, IB_QP_STATE | IB_QP_AV |
			   IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN |
			   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);
	if (err)
		return err;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTS;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.sq_psn = 100 + i;
	attr.max_rd_atomic = 1;
	return ib_modify_qp(kv->qp[i], &attr, IB_QP_STATE | IB_QP_TIMEOUT |
			    IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
			    IB_QP_MAX_QP_RD_ATOMIC);
}

/* Poll until @n completions arrived or 5 s passed. */
static int kv_poll(struct kv_ctx *kv, struct ib_wc *wc, int n)
{
	int got = 0, tries = 0;

	while (got < n && tries++ < 5000) {
		int r = ib_poll_cq(kv->cq, n - got, wc + got);

		if (r < 0)
			return r;
		got += r;
		if (got < n)
			usleep_range(500, 1000);
	}
	return got;
}

static int kv_check_wc(const struct ib_wc *wc, u64 wr_id, enum ib_wc_opcode op,
		       u32 len, bool imm, u32 imm_data)
{
	if (wc->status != IB_WC_SUCCESS || wc->wr_id != wr_id ||
	    wc->opcode != op || (op & IB_WC_RECV && wc->byte_len != len) ||
	    !!(wc->wc_flags & IB_WC_WITH_IMM) != imm ||
	    (imm && be32_to_cpu(wc->ex.imm_data) != imm_data)) {
		pr_err("ohca_kverbs_test: bad wc: wr_id %llu status %d opcode %d len %u flags %#x imm %#x (want wr_id %llu opcode %d len %u)\n",
		       wc->wr_id, wc->status, wc->opcode, wc->byte_len,
		       wc->wc_flags, be32_to_cpu(wc->ex.imm_data), wr_id, op,
		       len);
		return -EIO;
	}
	return 0;
}

/* Send @len bytes from qp 0 to qp 1 and check both completions and data. */
static int kv_send(struct kv_ctx *kv, u32 len, int round, bool imm,
		   bool inl, bool wait_event)
{
	struct ib_sge rsge = {
		.addr = kv->dma[1], .length = BUF_SIZE,
		.lkey = kv->pd->local_dma_lkey,
	};
	struct ib_recv_wr rwr = { .wr_id = 1000 + round, .sg_list = &rsge,
				  .num_sge = 1 };
	struct ib_sge ssge = {
		.addr = inl ? (u64)(uintptr_t)kv->buf[0] : kv->dma[0],
		.length = len, .lkey = kv->pd->local_dma_lkey,
	};
	struct ib_send_wr swr = {
		.wr_id = 2000 + round, .sg_list = &ssge, .num_sge = 1,
		.opcode = imm ? IB_WR_SEND_WITH_IMM : IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED | (inl ? IB_SEND_INLINE : 0),
		.ex.imm_data = cpu_to_be32(0xabc00000 + round),
	};
	const struct ib_send_wr *bad_swr;
	const struct ib_recv_wr *bad_rwr;
	struct ib_wc wc[2];
	int err, i, n;

	memset(kv->buf[0], 0x40 + round, len);
	memset(kv->buf[1], 0, BUF_SIZE);
	ib_dma_sync_single_for_device(kv->dev, kv->dma[0], BUF_SIZE,
				      DMA_BIDIRECTIONAL);
	ib_dma_sync_single_for_device(kv->dev, kv->dma[1], BUF_SIZE,
				      DMA_BIDIRECTIONAL);

	if (wait_event) {
		reinit_completion(&kv->event);
		if (ib_req_notify_cq(kv->cq, IB_CQ_NEXT_COMP |
				     IB_CQ_REPORT_MISSED_EVENTS) > 0) {
			pr_err("ohca_kverbs_test: CQ not empty before arming\n");
			return -EIO;
		}
	}

	err = ib_post_recv(kv->qp[1], &rwr, &bad_rwr);
	if (err)
		return err;
	err = ib_post_send(kv->qp[0], &swr, &bad_swr);
	if (err)
		return err;

	if (wait_event &&
	    !wait_for_completion_timeout(&kv->event, 5 * HZ)) {
		pr_err("ohca_kverbs_test: no completion event\n");
		return -ETIMEDOUT;
	}

	n = kv_poll(kv, wc, 2);
	if (n != 2) {
		pr_err("ohca_kverbs_test: round %d: %d completions\n", round, n);
		return n < 0 ? n : -ETIMEDOUT;
	}
	for (i = 0; i < 2; i++) {
		if (wc[i].opcode & IB_WC_RECV)
			err = kv_check_wc(&wc[i], 1000 + round, IB_WC_RECV, len,
					  imm, 0xabc00000 + round);
		else
			err = kv_check_wc(&wc[i], 2000 + round, IB_WC_SEND, len,
					  false, 0);
		if (err)
			return err;
		if (wc[i].qp != kv->qp[(wc[i].opcode & IB_WC_RECV) ? 1 : 0]) {
			pr_err("ohca_kverbs_test: completion for the wrong QP\n");
			return -EIO;
		}
	}
	ib_dma_sync_single_for_cpu(kv->dev, kv->dma[1], BUF_SIZE,
				   DMA_BIDIRECTIONAL);
	for (i = 0; i < BUF_SIZE; i++) {
		u8 want = i < len ? 0x40 + round : 0;

		if (((u8 *)kv->buf[1])[i] != want) {
			pr_err("ohca_kverbs_test: round %d: byte %d is %#x, want %#x\n",
			       round, i, ((u8 *)kv->buf[1])[i], want);
			return -EIO;
		}
	}
	return 0;
}

static int kv_run(struct kv_ctx *kv)
{
	struct ib_cq_init_attr cq_attr = { .cqe = 4 * NUM_WR };
	struct ib_qp_init_attr init = {};
	struct ib_qp_attr qattr;
	struct ib_qp_init_attr qinit;
	union ib_gid gid;
	int err, i;

	err = rdma_query_gid(kv->dev, 1, gid_index, &gid);
	if (err)
		return err;

	kv->pd = ib_alloc_pd(kv->dev, 0);
	if (IS_ERR(kv->pd))
		return PTR_ERR(kv->pd);
	kv->cq = ib_create_cq(kv->dev, kv_comp, NULL, kv, &cq_attr);
	if (IS_ERR(kv->cq))
		return PTR_ERR(kv->cq);

	init.qp_type = IB_QPT_RC;
	init.send_cq = kv->cq;
	init.recv_cq = kv->cq;
	init.sq_sig_type = IB_SIGNAL_REQ_WR;
	init.cap.max_send_wr = NUM_WR;
	init.cap.max_recv_wr = NUM_WR;
	init.cap.max_send_sge = 2;
	init.cap.max_recv_sge = 2;
	init.cap.max_inline_data = 64;
	for (i = 0; i < 2; i++) {
		kv->qp[i] = ib_create_qp(kv->pd, &init);
		if (IS_ERR(kv->qp[i]))
			return PTR_ERR(kv->qp[i]);
	}
	for (i = 0; i < 2; i++) {
		err = kv_connect(kv, i, &gid);
		if (err) {
			pr_err("ohca_kverbs_test: connecting QP %d: %d\n", i,
			       err);
			return err;
		}
	}
	err = ib_query_qp(kv->qp[0], &qattr, IB_QP_STATE, &qinit);
	if (err)
		return err;
	if (qattr.qp_state != IB_QPS_RTS || qattr.dest_qp_num !=
	    kv->qp[1]->qp_num) {
		pr_err("ohca_kverbs_test: query_qp: state %d dest %u\n",
		       qattr.qp_state, qattr.dest_qp_num);
		return -EIO;
	}

	for (i = 0; i < 2; i++) {
		kv->buf[i] = kzalloc(BUF_SIZE, GFP_KERNEL);
		if (!kv->buf[i])
			return -ENOMEM;
		kv->dma[i] = ib_dma_map_single(kv->dev, kv->buf[i], BUF_SIZE,
					       DMA_BIDIRECTIONAL);
		if (ib_dma_mapping_error(kv->dev, kv->dma[i])) {
			kfree(kv->buf[i]);
			kv->buf[i] = NULL;
			return -ENOMEM;
		}
	}

	/* Three passes over the 2^n-entry rings and CQ. */
	for (i = 0; i < 3 * NUM_WR; i++) {
		static const u32 lens[] = { 0, 1, 1023, 1024, 1025, 4096 };
		bool inl = i % 5 == 4;
		u32 len = inl ? 60 : lens[i % ARRAY_SIZE(lens)];

		err = kv_send(kv, len, i, i % 3 == 1, inl, i % 7 == 6);
		if (err) {
			pr_err("ohca_kverbs_test: round %d (len %u): %d\n", i,
			       len, err);
			return err;
		}
	}

	/* Back to RESET and reconnected: the rings start over at index 0. */
	for (i = 0; i < 2; i++) {
		qattr.qp_state = IB_QPS_RESET;
		err = ib_modify_qp(kv->qp[i], &qattr, IB_QP_STATE);
		if (err)
			return err;
	}
	for (i = 0; i < 2; i++) {
		err = kv_connect(kv, i, &gid);
		if (err)
			return err;
	}
	for (i = 0; i < NUM_WR + 3; i++) {
		err = kv_send(kv, 100 + i, i, false, false, false);
		if (err) {
			pr_err("ohca_kverbs_test: after RESET, round %d: %d\n",
			       i, err);
			return err;
		}
	}
	pr_info("ohca_kverbs_test: %d sends on %s OK\n", 4 * NUM_WR + 3,
		dev_name(&kv->dev->dev));
	return 0;
}

static void kv_cleanup(struct kv_ctx *kv)
{
	int i;

	for (i = 1; i >= 0; i--) {
		if (kv->buf[i]) {
			ib_dma_unmap_single(kv->dev, kv->dma[i], BUF_SIZE,
					    DMA_BIDIRECTIONAL);
			kfree(kv->buf[i]);
		}
		if (!IS_ERR_OR_NULL(kv->qp[i]))
			ib_destroy_qp(kv->qp[i]);
	}
	if (!IS_ERR_OR_NULL(kv->cq))
		ib_destroy_cq(kv->cq);
	if (!IS_ERR_OR_NULL(kv->pd))
		ib_dealloc_pd(kv->pd);
}

static int __init kv_init(void)
{
	struct kv_ctx *kv;
	int err;

	kv = kzalloc(sizeof(*kv), GFP_KERNEL);
	if (!kv)
		return -ENOMEM;
	init_completion(&kv->event);
	kv->dev = ib_device_get_by_name(ibdev_name, RDMA_DRIVER_UNKNOWN);
	if (!kv->dev) {
		kfree(kv);
		return -ENODEV;
	}
	err = kv_run(kv);
	kv_cleanup(kv);
	ib_device_put(kv->dev);
	kfree(kv);
	if (err)
		pr_err("ohca_kverbs_test: FAILED: %d\n", err);
	return err;
}

static void __exit kv_exit(void)
{
}

module_init(kv_init);
module_exit(kv_exit);
MODULE_DESCRIPTION("ohca kernel verbs check");
MODULE_LICENSE("Dual BSD/GPL");
