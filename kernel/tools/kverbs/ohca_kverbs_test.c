// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca_kverbs_test: a guest-side module that checks the kernel verbs of an
 * ohca device. On load it connects two RC QPs of "ohca0" to each other
 * through the port's RoCEv2 GID at index gid_index, sends messages (plain,
 * with immediate, inline) and checks data and completions, then waits for
 * a completion event on an armed CQ, then resets both QPs, reconnects them
 * and sends again. Then: CQEs of QPs moved to RESET or destroyed are gone
 * from the CQ; fast registration (alloc_mr, ib_map_mr_sg, REG_MR, RDMA
 * WRITE/READ through the fast-reg rkey, LOCAL_INV and SEND_WITH_INV making
 * the key stale, a new key variant refusing the old one); ib_drain_qp() on
 * a CQ polled by the core; behind an IOMMU that translates, DMA through
 * an unmapped address fails instead of reaching memory. insmod fails with
 * the error when any check fails; on success the module stays loaded
 * doing nothing.
 */
#include <linux/completion.h>
#include <linux/delay.h>
#include <linux/iommu.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_verbs.h>

static char *ibdev_name = "ohca0";
module_param_named(dev, ibdev_name, charp, 0444);
static int gid_index = 1;
module_param(gid_index, int, 0444);
/*
 * fatal_drain: only the drain check, across a device that goes fatal: the
 * QPs are set up, "waiting for the device to go fatal" is logged, and the
 * test script makes the device fatal; then ib_drain_qp() must flush
 * everything in software.
 */
static bool fatal_drain;
module_param(fatal_drain, bool, 0444);

#define BUF_SIZE	4096
#define NUM_WR		16
#define FR_PAGES	4
#define KV_ACCESS	(IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | \
			 IB_ACCESS_REMOTE_READ)

struct kv_ctx {
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_qp *qp[2];
	void *buf[2];
	u64 dma[2];
	struct completion event;
	union ib_gid gid;
	/* ib_drain_qp() check: completions seen by the core's poller */
	struct ib_cqe drain_cqe;
	atomic_t drain_done;
	atomic_t drain_flushed;
	atomic_t drain_bad;
	struct ib_event_handler fatal_eh;
	struct completion fatal;
};

static void kv_comp(struct ib_cq *cq, void *ctx)
{
	struct kv_ctx *kv = ctx;

	complete(&kv->event);
}

/* Connect @qp to @peer_qpn; @i picks the PSNs (0 or 1). */
static int kv_connect_qp(struct kv_ctx *kv, struct ib_qp *qp, u32 peer_qpn,
			 int i, union ib_gid *gid)
{
	struct ib_qp_attr attr = {};
	int err;

	attr.qp_state = IB_QPS_INIT;
	attr.pkey_index = 0;
	attr.port_num = 1;
	attr.qp_access_flags = KV_ACCESS;
	err = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
			   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	if (err)
		return err;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	attr.path_mtu = IB_MTU_1024;
	attr.dest_qp_num = peer_qpn;
	attr.rq_psn = 100 + !i;
	attr.max_dest_rd_atomic = 1;
	attr.min_rnr_timer = 12;
	attr.ah_attr.type = rdma_ah_find_type(kv->dev, 1);
	rdma_ah_set_port_num(&attr.ah_attr, 1);
	rdma_ah_set_grh(&attr.ah_attr, gid, 0, gid_index, 64, 0);
	err = ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_AV |
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
	return ib_modify_qp(qp, &attr, IB_QP_STATE | IB_QP_TIMEOUT |
			    IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
			    IB_QP_MAX_QP_RD_ATOMIC);
}

static int kv_connect(struct kv_ctx *kv, int i, union ib_gid *gid)
{
	return kv_connect_qp(kv, kv->qp[i], kv->qp[!i]->qp_num, i, gid);
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

/* The CQ holds no completion (without consuming any). */
static int kv_cq_empty(struct kv_ctx *kv, const char *what)
{
	struct ib_wc wc;
	int n = ib_poll_cq(kv->cq, 1, &wc);

	if (n) {
		pr_err("ohca_kverbs_test: %s: CQ not empty (%d: wr_id %llu status %d)\n",
		       what, n, wc.wr_id, wc.status);
		return -EIO;
	}
	return 0;
}

/* Wait until the CQ holds completions, without consuming them. */
static int kv_wait_cqes(struct kv_ctx *kv)
{
	int tries;

	for (tries = 0; tries < 500; tries++) {
		if (ib_req_notify_cq(kv->cq, IB_CQ_NEXT_COMP |
				     IB_CQ_REPORT_MISSED_EVENTS) > 0) {
			/* both ends of the looped-back send, surely */
			msleep(100);
			return 0;
		}
		usleep_range(2000, 4000);
	}
	pr_err("ohca_kverbs_test: no completion arrived\n");
	return -ETIMEDOUT;
}

/* Both QPs to RESET (their CQEs must go with them) and reconnected. */
static int kv_reset_reconnect(struct kv_ctx *kv, const char *what)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_RESET };
	int err, i;

	for (i = 0; i < 2; i++) {
		err = ib_modify_qp(kv->qp[i], &attr, IB_QP_STATE);
		if (err)
			return err;
	}
	err = kv_cq_empty(kv, what);
	for (i = 0; i < 2 && !err; i++)
		err = kv_connect(kv, i, &kv->gid);
	return err;
}

/* One completion with @wr_id, @status and (on success) @op. */
static int kv_expect(struct kv_ctx *kv, u64 wr_id, enum ib_wc_status status,
		     enum ib_wc_opcode op)
{
	struct ib_wc wc;
	int n = kv_poll(kv, &wc, 1);

	if (n != 1) {
		pr_err("ohca_kverbs_test: wr_id %llu: %d completions\n", wr_id,
		       n);
		return n < 0 ? n : -ETIMEDOUT;
	}
	if (wc.wr_id != wr_id || wc.status != status ||
	    (status == IB_WC_SUCCESS && wc.opcode != op)) {
		pr_err("ohca_kverbs_test: wc wr_id %llu status %d opcode %d, want wr_id %llu status %d opcode %d\n",
		       wc.wr_id, wc.status, wc.opcode, wr_id, status, op);
		return -EIO;
	}
	return 0;
}

static int kv_post_rdma(struct kv_ctx *kv, enum ib_wr_opcode op, u64 wr_id,
			u64 laddr, u32 len, u64 raddr, u32 rkey)
{
	struct ib_sge sge = { .addr = laddr, .length = len,
			      .lkey = kv->pd->local_dma_lkey };
	struct ib_rdma_wr wr = {
		.wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
			.opcode = op, .send_flags = IB_SEND_SIGNALED },
		.remote_addr = raddr,
		.rkey = rkey,
	};

	return ib_post_send(kv->qp[0], &wr.wr, NULL);
}

/* A WRITE through @rkey must fail remotely; then both QPs start over. */
static int kv_expect_refused(struct kv_ctx *kv, u64 iova, u32 rkey,
			     const char *what)
{
	int err;

	err = kv_post_rdma(kv, IB_WR_RDMA_WRITE, 4100, kv->dma[0], 64, iova,
			   rkey);
	if (!err)
		err = kv_expect(kv, 4100, IB_WC_REM_ACCESS_ERR, 0);
	if (err) {
		pr_err("ohca_kverbs_test: %s: key %#x not refused\n", what,
		       rkey);
		return err;
	}
	return kv_reset_reconnect(kv, what);
}

static int kv_reg(struct kv_ctx *kv, struct ib_mr *mr, u64 wr_id)
{
	struct ib_reg_wr reg = {
		.wr = { .wr_id = wr_id, .opcode = IB_WR_REG_MR,
			.send_flags = IB_SEND_SIGNALED },
		.mr = mr,
		.key = mr->rkey,
		.access = KV_ACCESS,
	};
	int err;

	err = ib_post_send(kv->qp[1], &reg.wr, NULL);
	return err ? err : kv_expect(kv, wr_id, IB_WC_SUCCESS, IB_WC_REG_MR);
}

/* Byte @off of the fast-registered pages. */
static u8 kv_fr_byte(struct page **pg, u32 off)
{
	return ((u8 *)page_address(pg[off / PAGE_SIZE]))[off % PAGE_SIZE];
}

static int kv_frwr_run(struct kv_ctx *kv, struct ib_mr *mr,
		       struct page **pg, struct scatterlist *sgl)
{
	const u32 off = 2000, len = 4000;	/* spans pages 0 and 1 */
	struct ib_sge rsge = { .addr = kv->dma[1], .length = BUF_SIZE,
			       .lkey = kv->pd->local_dma_lkey };
	struct ib_recv_wr rwr = { .wr_id = 4200, .sg_list = &rsge,
				  .num_sge = 1 };
	struct ib_sge ssge = { .addr = kv->dma[0], .length = 64,
			       .lkey = kv->pd->local_dma_lkey };
	struct ib_send_wr swr = {
		.wr_id = 4201, .sg_list = &ssge, .num_sge = 1,
		.opcode = IB_WR_SEND_WITH_INV, .send_flags = IB_SEND_SIGNALED,
	};
	struct ib_send_wr lwr = {
		.wr_id = 4202, .opcode = IB_WR_LOCAL_INV,
		.send_flags = IB_SEND_SIGNALED,
	};
	struct ib_wc wc[2];
	u32 key1, key2;
	int err, i;

	for (i = 0; i < BUF_SIZE; i++)
		((u8 *)kv->buf[0])[i] = i * 7 + 1;
	memset(kv->buf[1], 0, BUF_SIZE);
	ib_dma_sync_single_for_device(kv->dev, kv->dma[0], BUF_SIZE,
				      DMA_BIDIRECTIONAL);
	ib_dma_sync_single_for_device(kv->dev, kv->dma[1], BUF_SIZE,
				      DMA_BIDIRECTIONAL);

	/* Free after alloc_mr: its first key grants nothing. */
	err = kv_expect_refused(kv, mr->iova, mr->rkey, "unregistered MR");
	if (err)
		return err;

	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
	key1 = mr->rkey;
	err = kv_reg(kv, mr, 4001);
	if (err)
		return err;
	err = kv_post_rdma(kv, IB_WR_RDMA_WRITE, 4002, kv->dma[0], len,
			   mr->iova + off, key1);
	if (!err)
		err = kv_expect(kv, 4002, IB_WC_SUCCESS, IB_WC_RDMA_WRITE);
	if (err)
		return err;
	dma_sync_sg_for_cpu(kv->dev->dma_device, sgl, FR_PAGES,
			    DMA_BIDIRECTIONAL);
	for (i = 0; i < len; i++) {
		if (kv_fr_byte(pg, off + i) != ((u8 *)kv->buf[0])[i]) {
			pr_err("ohca_kverbs_test: fast-reg WRITE: byte %d is %#x\n",
			       i, kv_fr_byte(pg, off + i));
			return -EIO;
		}
	}
	err = kv_post_rdma(kv, IB_WR_RDMA_READ, 4003, kv->dma[1], len,
			   mr->iova + off, key1);
	if (!err)
		err = kv_expect(kv, 4003, IB_WC_SUCCESS, IB_WC_RDMA_READ);
	if (err)
		return err;
	ib_dma_sync_single_for_cpu(kv->dev, kv->dma[1], BUF_SIZE,
				   DMA_BIDIRECTIONAL);
	if (memcmp(kv->buf[0], kv->buf[1], len)) {
		pr_err("ohca_kverbs_test: fast-reg READ returned other data\n");
		return -EIO;
	}

	/* LOCAL_INV: the key is stale. */
	lwr.ex.invalidate_rkey = key1;
	err = ib_post_send(kv->qp[1], &lwr, NULL);
	if (!err)
		err = kv_expect(kv, 4202, IB_WC_SUCCESS, IB_WC_LOCAL_INV);
	if (!err)
		err = kv_expect_refused(kv, mr->iova, key1, "after LOCAL_INV");
	if (err)
		return err;

	/* Registered again with the next variant: the old one stays out. */
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
	key2 = mr->rkey;
	err = kv_reg(kv, mr, 4004);
	if (!err)
		err = kv_expect_refused(kv, mr->iova, key1, "old variant");
	if (err)
		return err;
	err = kv_post_rdma(kv, IB_WR_RDMA_WRITE, 4005, kv->dma[0], 64,
			   mr->iova, key2);
	if (!err)
		err = kv_expect(kv, 4005, IB_WC_SUCCESS, IB_WC_RDMA_WRITE);
	if (err)
		return err;

	/* SEND_WITH_INV: the receiver learns the key, which dies. */
	err = ib_post_recv(kv->qp[1], &rwr, NULL);
	swr.ex.invalidate_rkey = key2;
	if (!err)
		err = ib_post_send(kv->qp[0], &swr, NULL);
	if (err)
		return err;
	if (kv_poll(kv, wc, 2) != 2)
		return -ETIMEDOUT;
	if (wc[0].opcode != IB_WC_RECV)
		swap(wc[0], wc[1]);
	if (wc[0].status || wc[0].wr_id != 4200 ||
	    !(wc[0].wc_flags & IB_WC_WITH_INVALIDATE) ||
	    wc[0].ex.invalidate_rkey != key2 || wc[1].status ||
	    wc[1].wr_id != 4201 || wc[1].opcode != IB_WC_SEND) {
		pr_err("ohca_kverbs_test: SEND_WITH_INV: recv status %d flags %#x rkey %#x (want %#x), send status %d\n",
		       wc[0].status, wc[0].wc_flags, wc[0].ex.invalidate_rkey,
		       key2, wc[1].status);
		return -EIO;
	}
	return kv_expect_refused(kv, mr->iova, key2, "after SEND_WITH_INV");
}

static int kv_frwr(struct kv_ctx *kv)
{
	const struct ib_device_attr *attrs = &kv->dev->attrs;
	struct page *pg[FR_PAGES] = {};
	struct scatterlist sgl[FR_PAGES];
	struct ib_mr *mr;
	int err, i, nents, n;

	if (!(attrs->device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS) ||
	    attrs->max_fast_reg_page_list_len < FR_PAGES) {
		pr_err("ohca_kverbs_test: no fast registration (caps %#llx, %u pages)\n",
		       attrs->device_cap_flags,
		       attrs->max_fast_reg_page_list_len);
		return -EOPNOTSUPP;
	}
	mr = ib_alloc_mr(kv->pd, IB_MR_TYPE_MEM_REG,
			 attrs->max_fast_reg_page_list_len + 1);
	if (!IS_ERR(mr)) {
		pr_err("ohca_kverbs_test: alloc_mr beyond the page-list limit\n");
		ib_dereg_mr(mr);
		return -EIO;
	}
	mr = ib_alloc_mr(kv->pd, IB_MR_TYPE_MEM_REG, FR_PAGES);
	if (IS_ERR(mr))
		return PTR_ERR(mr);

	sg_init_table(sgl, FR_PAGES);
	for (i = 0; i < FR_PAGES; i++) {
		pg[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!pg[i]) {
			err = -ENOMEM;
			goto out_pages;
		}
		sg_set_page(&sgl[i], pg[i], PAGE_SIZE, 0);
	}
	nents = ib_dma_map_sg(kv->dev, sgl, FR_PAGES, DMA_BIDIRECTIONAL);
	if (!nents) {
		err = -ENOMEM;
		goto out_pages;
	}
	n = ib_map_mr_sg(mr, sgl, nents, NULL, PAGE_SIZE);
	if (n != nents || mr->length != FR_PAGES * PAGE_SIZE) {
		pr_err("ohca_kverbs_test: ib_map_mr_sg: %d of %d, length %llu\n",
		       n, nents, mr->length);
		err = n < 0 ? n : -EIO;
		goto out_unmap;
	}
	err = kv_frwr_run(kv, mr, pg, sgl);
out_unmap:
	ib_dma_unmap_sg(kv->dev, sgl, FR_PAGES, DMA_BIDIRECTIONAL);
out_pages:
	for (i = 0; i < FR_PAGES; i++)
		if (pg[i])
			__free_page(pg[i]);
	ib_dereg_mr(mr);
	return err;
}

/* A SEND @src -> @dst whose two CQEs are left in the CQ. */
static int kv_send_unpolled(struct kv_ctx *kv, struct ib_qp *src,
			    struct ib_qp *dst)
{
	struct ib_sge sge = { .addr = kv->dma[1], .length = 64,
			      .lkey = kv->pd->local_dma_lkey };
	struct ib_recv_wr rwr = { .wr_id = 5000, .sg_list = &sge,
				  .num_sge = 1 };
	struct ib_send_wr swr = { .wr_id = 5001, .sg_list = &sge,
				  .num_sge = 1, .opcode = IB_WR_SEND,
				  .send_flags = IB_SEND_SIGNALED };
	int err;

	err = ib_post_recv(dst, &rwr, NULL);
	if (!err)
		err = ib_post_send(src, &swr, NULL);
	return err ? err : kv_wait_cqes(kv);
}

/* CQEs of a QP that went back to RESET or was destroyed are dropped. */
static int kv_purge(struct kv_ctx *kv, struct ib_qp_init_attr *init)
{
	struct ib_qp *q[2] = {};
	int err, i;

	err = kv_send_unpolled(kv, kv->qp[0], kv->qp[1]);
	if (!err)
		err = kv_reset_reconnect(kv, "CQEs after RESET");
	if (err)
		return err;

	for (i = 0; i < 2; i++) {
		q[i] = ib_create_qp(kv->pd, init);
		if (IS_ERR(q[i])) {
			err = PTR_ERR(q[i]);
			q[i] = NULL;
			goto out;
		}
	}
	for (i = 0; i < 2 && !err; i++)
		err = kv_connect_qp(kv, q[i], q[!i]->qp_num, i, &kv->gid);
	if (!err)
		err = kv_send_unpolled(kv, q[0], q[1]);
out:
	for (i = 0; i < 2; i++)
		if (q[i])
			ib_destroy_qp(q[i]);
	return err ? err : kv_cq_empty(kv, "CQEs after destroy");
}

/*
 * Two completions of one looped-back SEND, whatever their order: the
 * receive's status in @recv, the send's in @send.
 */
static int kv_pair_status(struct kv_ctx *kv, enum ib_wc_status *send,
			  enum ib_wc_status *recv)
{
	struct ib_wc wc[2];
	int n = kv_poll(kv, wc, 2), i;

	if (n != 2) {
		pr_err("ohca_kverbs_test: iommu: %d completions, want 2\n", n);
		return n < 0 ? n : -ETIMEDOUT;
	}
	for (i = 0; i < 2; i++) {
		if (wc[i].wr_id == 4300)
			*send = wc[i].status;
		else
			*recv = wc[i].status;
	}
	return 0;
}

/* A SEND of 64 bytes qp 0 -> qp 1 from @src into @dst, both unchecked. */
static int kv_post_pair(struct kv_ctx *kv, u64 src, u64 dst)
{
	struct ib_sge rsge = { .addr = dst, .length = BUF_SIZE,
			       .lkey = kv->pd->local_dma_lkey };
	struct ib_recv_wr rwr = { .wr_id = 4301, .sg_list = &rsge,
				  .num_sge = 1 };
	struct ib_sge ssge = { .addr = src, .length = 64,
			       .lkey = kv->pd->local_dma_lkey };
	struct ib_send_wr swr = { .wr_id = 4300, .sg_list = &ssge,
				  .num_sge = 1, .opcode = IB_WR_SEND,
				  .send_flags = IB_SEND_SIGNALED };
	int err;

	err = ib_post_recv(kv->qp[1], &rwr, NULL);
	return err ? err : ib_post_send(kv->qp[0], &swr, NULL);
}

static bool kv_all_bytes(const u8 *p, u8 v, size_t n)
{
	while (n--)
		if (*p++ != v)
			return false;
	return true;
}

/*
 * Behind an IOMMU that translates the device's DMA (the guest's DMA API
 * in a paging domain; strict mode flushes the IOTLB before an unmap
 * returns), the device must reach memory only through live mappings. Two
 * buffers are mapped, then unmapped while their addresses still go to
 * the device: a receive into the stale address and a SEND from it must
 * complete in error, and the memory behind them stays as it was. Without
 * translation an unmapped address is still memory, so the check is
 * skipped (and says so).
 */
static int kv_iommu(struct kv_ctx *kv)
{
	struct iommu_domain *dom = iommu_get_domain_for_dev(kv->dev->dma_device);
	enum ib_wc_status send = IB_WC_SUCCESS, recv = IB_WC_SUCCESS;
	u8 *stale;
	u64 iova;
	int err;

	if (!dom || !(dom->type & __IOMMU_DOMAIN_PAGING)) {
		pr_info("ohca_kverbs_test: IOMMU check skipped: DMA not translated\n");
		return 0;
	}
	stale = kmalloc(BUF_SIZE, GFP_KERNEL);
	if (!stale)
		return -ENOMEM;

	/* the device writes: a receive into an unmapped buffer */
	memset(stale, 0x3c, BUF_SIZE);
	iova = ib_dma_map_single(kv->dev, stale, BUF_SIZE, DMA_FROM_DEVICE);
	if (ib_dma_mapping_error(kv->dev, iova)) {
		err = -ENOMEM;
		goto out;
	}
	ib_dma_unmap_single(kv->dev, iova, BUF_SIZE, DMA_FROM_DEVICE);
	memset(kv->buf[0], 0xa5, 64);
	ib_dma_sync_single_for_device(kv->dev, kv->dma[0], BUF_SIZE,
				      DMA_BIDIRECTIONAL);
	err = kv_post_pair(kv, kv->dma[0], iova);
	if (!err)
		err = kv_pair_status(kv, &send, &recv);
	if (err)
		goto out;
	/* the responder cannot place it and NAKs a remote operation error */
	if (recv != IB_WC_LOC_PROT_ERR || send != IB_WC_REM_OP_ERR ||
	    !kv_all_bytes(stale, 0x3c, BUF_SIZE)) {
		pr_err("ohca_kverbs_test: iommu: receive into an unmapped IOVA: recv %d send %d, memory %s\n",
		       recv, send,
		       kv_all_bytes(stale, 0x3c, BUF_SIZE) ? "untouched" : "WRITTEN");
		err = -EIO;
		goto out;
	}
	pr_info("ohca_kverbs_test: iommu: receive into an unmapped IOVA: recv status %d, send status %d, memory untouched\n",
		recv, send);
	err = kv_reset_reconnect(kv, "after the unmapped receive");
	if (err)
		goto out;

	/* the device reads: a SEND from an unmapped buffer */
	memset(stale, 0x5a, BUF_SIZE);
	iova = ib_dma_map_single(kv->dev, stale, BUF_SIZE, DMA_TO_DEVICE);
	if (ib_dma_mapping_error(kv->dev, iova)) {
		err = -ENOMEM;
		goto out;
	}
	ib_dma_unmap_single(kv->dev, iova, BUF_SIZE, DMA_TO_DEVICE);
	memset(kv->buf[1], 0, BUF_SIZE);
	ib_dma_sync_single_for_device(kv->dev, kv->dma[1], BUF_SIZE,
				      DMA_BIDIRECTIONAL);
	err = kv_post_pair(kv, iova, kv->dma[1]);
	if (!err)
		err = kv_expect(kv, 4300, IB_WC_LOC_PROT_ERR, 0);
	if (err)
		goto out;
	/* the receive stays posted: nothing was sent */
	ib_dma_sync_single_for_cpu(kv->dev, kv->dma[1], BUF_SIZE,
				   DMA_BIDIRECTIONAL);
	if (!kv_all_bytes(kv->buf[1], 0, BUF_SIZE)) {
		pr_err("ohca_kverbs_test: iommu: a SEND from an unmapped IOVA delivered data\n");
		err = -EIO;
		goto out;
	}
	pr_info("ohca_kverbs_test: iommu: SEND from an unmapped IOVA: status %d, nothing delivered\n",
		IB_WC_LOC_PROT_ERR);
	err = kv_reset_reconnect(kv, "after the unmapped send");
out:
	kfree(stale);
	return err;
}

static void kv_drain_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kv_ctx *kv = container_of(wc->wr_cqe, struct kv_ctx, drain_cqe);

	atomic_inc(&kv->drain_done);
	if (wc->status == IB_WC_WR_FLUSH_ERR)
		atomic_inc(&kv->drain_flushed);
	else if (wc->status != IB_WC_SUCCESS)
		atomic_inc(&kv->drain_bad);
}

static void kv_event(struct ib_event_handler *eh, struct ib_event *ev)
{
	struct kv_ctx *kv = container_of(eh, struct kv_ctx, fatal_eh);

	if (ev->event == IB_EVENT_DEVICE_FATAL)
		complete(&kv->fatal);
}

/* fatal_drain: wait for the device to stop, then post one more SEND. */
static int kv_wait_fatal(struct kv_ctx *kv, struct ib_qp *qp,
			 struct ib_send_wr *swr)
{
	int err = 0;

	init_completion(&kv->fatal);
	INIT_IB_EVENT_HANDLER(&kv->fatal_eh, kv->dev, kv_event);
	ib_register_event_handler(&kv->fatal_eh);
	pr_info("ohca_kverbs_test: waiting for the device to go fatal\n");
	if (!wait_for_completion_timeout(&kv->fatal, 120 * HZ)) {
		pr_err("ohca_kverbs_test: the device did not go fatal\n");
		err = -ETIMEDOUT;
	}
	ib_unregister_event_handler(&kv->fatal_eh);
	return err ? err : ib_post_send(qp, swr, NULL);
}

/*
 * ib_drain_qp() on QPs whose CQ the core polls (softirq): it moves them to
 * ERR, posts its marker and waits for its flush completion; every receive
 * still posted completes with WR_FLUSH_ERR first. With @fatal the device
 * stops before (and one more SEND is posted after that): the driver
 * flushes in software.
 */
static int kv_drain(struct kv_ctx *kv, struct ib_qp_init_attr *tmpl,
		    bool fatal)
{
	struct ib_qp_init_attr init = *tmpl;
	struct ib_sge sge = { .addr = kv->dma[1], .length = 64,
			      .lkey = kv->pd->local_dma_lkey };
	struct ib_recv_wr rwr = { .wr_cqe = &kv->drain_cqe, .sg_list = &sge,
				  .num_sge = 1 };
	struct ib_send_wr swr = { .wr_cqe = &kv->drain_cqe, .sg_list = &sge,
				  .num_sge = 1, .opcode = IB_WR_SEND,
				  .send_flags = IB_SEND_SIGNALED };
	struct ib_qp *q[2] = {};
	struct ib_cq *cq;
	int err = 0, i, tries;

	kv->drain_cqe.done = kv_drain_done;
	cq = ib_alloc_cq(kv->dev, kv, 4 * NUM_WR, 0, IB_POLL_SOFTIRQ);
	if (IS_ERR(cq))
		return PTR_ERR(cq);
	init.send_cq = cq;
	init.recv_cq = cq;
	for (i = 0; i < 2; i++) {
		q[i] = ib_create_qp(kv->pd, &init);
		if (IS_ERR(q[i])) {
			err = PTR_ERR(q[i]);
			q[i] = NULL;
			goto out;
		}
	}
	for (i = 0; i < 2 && !err; i++)
		err = kv_connect_qp(kv, q[i], q[!i]->qp_num, i, &kv->gid);
	/* 8 receives on q1, 4 on q0; one SEND q0 -> q1 consumes one. */
	for (i = 0; i < 12 && !err; i++)
		err = ib_post_recv(q[i < 8], &rwr, NULL);
	if (!err)
		err = ib_post_send(q[0], &swr, NULL);
	for (tries = 0; !err && atomic_read(&kv->drain_done) < 2; tries++) {
		if (tries > 2000) {
			pr_err("ohca_kverbs_test: drain: the SEND did not complete\n");
			err = -ETIMEDOUT;
		}
		usleep_range(1000, 2000);
	}
	if (!err && fatal)
		err = kv_wait_fatal(kv, q[0], &swr);
	if (err)
		goto out;
	ib_drain_qp(q[0]);
	ib_drain_qp(q[1]);
	if (atomic_read(&kv->drain_done) != 13 + fatal ||
	    atomic_read(&kv->drain_flushed) != 11 + fatal ||
	    atomic_read(&kv->drain_bad)) {
		pr_err("ohca_kverbs_test: drain: %d completions, %d flushed, %d bad (want %d, %d, 0)\n",
		       atomic_read(&kv->drain_done),
		       atomic_read(&kv->drain_flushed),
		       atomic_read(&kv->drain_bad), 13 + fatal, 11 + fatal);
		err = -EIO;
	}
out:
	for (i = 0; i < 2; i++)
		if (q[i])
			ib_destroy_qp(q[i]);
	ib_free_cq(cq);
	return err;
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
	kv->gid = gid;

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
	err = kv_purge(kv, &init);
	if (err) {
		pr_err("ohca_kverbs_test: CQ purge: %d\n", err);
		return err;
	}
	err = kv_frwr(kv);
	if (err) {
		pr_err("ohca_kverbs_test: fast registration: %d\n", err);
		return err;
	}
	err = kv_iommu(kv);
	if (err) {
		pr_err("ohca_kverbs_test: IOMMU check: %d\n", err);
		return err;
	}
	err = kv_drain(kv, &init, false);
	if (err) {
		pr_err("ohca_kverbs_test: drain: %d\n", err);
		return err;
	}
	pr_info("ohca_kverbs_test: %d sends on %s OK; CQ purge OK; fast registration OK; drain OK\n",
		4 * NUM_WR + 3, dev_name(&kv->dev->dev));
	return 0;
}

/* fatal_drain: a PD, the buffers and the drain check across the fatal. */
static int kv_run_fatal(struct kv_ctx *kv)
{
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = NUM_WR, .max_recv_wr = NUM_WR,
			 .max_send_sge = 2, .max_recv_sge = 2 },
	};
	int err, i;

	err = rdma_query_gid(kv->dev, 1, gid_index, &kv->gid);
	if (err)
		return err;
	kv->pd = ib_alloc_pd(kv->dev, 0);
	if (IS_ERR(kv->pd))
		return PTR_ERR(kv->pd);
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
	err = kv_drain(kv, &init, true);
	if (!err)
		pr_info("ohca_kverbs_test: fatal drain OK\n");
	return err;
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

/*
 * The device named ibdev_name, held (ib_device_try_get) as
 * ib_device_get_by_name() held it: Linux 7.x no longer exports that, so a
 * client looks at every registered device as it registers.
 */
static struct ib_device *kv_found;

static int kv_add(struct ib_device *dev)
{
	if (kv_found || strcmp(dev_name(&dev->dev), ibdev_name) ||
	    !ib_device_try_get(dev))
		return -EOPNOTSUPP;
	kv_found = dev;
	return 0;
}

static struct ib_client kv_client = {
	.name = "ohca_kverbs_test",
	.add = kv_add,
};

static struct ib_device *kv_get_device(void)
{
	struct ib_device *dev;

	if (ib_register_client(&kv_client))
		return NULL;
	dev = kv_found;
	ib_unregister_client(&kv_client);
	return dev;
}

static int __init kv_init(void)
{
	struct kv_ctx *kv;
	int err;

	kv = kzalloc(sizeof(*kv), GFP_KERNEL);
	if (!kv)
		return -ENOMEM;
	init_completion(&kv->event);
	kv->dev = kv_get_device();
	if (!kv->dev) {
		kfree(kv);
		return -ENODEV;
	}
	err = fatal_drain ? kv_run_fatal(kv) : kv_run(kv);
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
