// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libohca: device matching, device and context lifetime, and the mapping
 * of the per-context doorbell page.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/ib_user_ioctl_verbs.h>	/* enum rdma_driver_id */

#include "ohca.h"

/* ibv_get_context: struct ohca_ibv_alloc_ucontext as the driver request
 * (no option set), struct ohca_ibv_alloc_ucontext_resp as the driver
 * response; the legacy write fallback counts 4-byte words. */
OHCA_DRV_CMD_REQ(ohca_get_context_cmd, ibv_get_context,
		 ohca_ibv_alloc_ucontext, 4);
OHCA_DRV_CMD_RESP(ohca_get_context_resp, ib_uverbs_get_context_resp,
		  ohca_ibv_alloc_ucontext_resp, 4);

static const struct verbs_match_ent ohca_match_table[] = {
	VERBS_PCI_MATCH(OHCA_PCI_VENDOR_ID, OHCA_PCI_DEVICE_ID, NULL),
	{}
};

/*
 * Every op left NULL makes libibverbs answer EOPNOTSUPP (its dummy ops)
 * rather than pretend: no XRC, thread domains or device memory.
 */
static void ohca_free_context(struct ibv_context *ibctx);

static const struct verbs_context_ops ohca_ctx_ops = {
	.advise_mr = ohca_advise_mr,
	.alloc_dm = ohca_alloc_dm,
	.alloc_mw = ohca_alloc_mw,
	.alloc_parent_domain = ohca_alloc_parent_domain,
	.alloc_pd = ohca_alloc_pd,
	.close_xrcd = ohca_close_xrcd,
	/* Multicast needs nothing of the provider: the kernel attaches. */
	.attach_mcast = ibv_cmd_attach_mcast,
	.bind_mw = ohca_bind_mw,
	.create_ah = ohca_create_ah,
	.create_cq = ohca_create_cq,
	.create_cq_ex = ohca_create_cq_ex,
	.create_flow = ohca_create_flow,
	.create_qp = ohca_create_qp,
	.create_qp_ex = ohca_create_qp_ex,
	.create_rwq_ind_table = ohca_create_rwq_ind_table,
	.create_srq = ohca_create_srq,
	.create_srq_ex = ohca_create_srq_ex,
	.create_wq = ohca_create_wq,
	.dealloc_mw = ohca_dealloc_mw,
	.dealloc_pd = ohca_dealloc_pd,
	.dereg_mr = ohca_dereg_mr,
	.destroy_ah = ohca_destroy_ah,
	.destroy_cq = ohca_destroy_cq,
	.destroy_flow = ohca_destroy_flow,
	.destroy_qp = ohca_destroy_qp,
	.destroy_rwq_ind_table = ohca_destroy_rwq_ind_table,
	.destroy_srq = ohca_destroy_srq,
	.destroy_wq = ohca_destroy_wq,
	.detach_mcast = ibv_cmd_detach_mcast,
	.free_context = ohca_free_context,
	.free_dm = ohca_free_dm,
	.get_srq_num = ohca_get_srq_num,
	.modify_cq = ohca_modify_cq,
	.modify_qp = ohca_modify_qp,
	.modify_srq = ohca_modify_srq,
	.modify_wq = ohca_modify_wq,
	.open_xrcd = ohca_open_xrcd,
	.poll_cq = ohca_poll_cq,
	.post_recv = ohca_post_recv,
	.post_send = ohca_post_send,
	.post_srq_recv = ohca_post_srq_recv,
	.query_device_ex = ohca_query_device_ex,
	.query_port = ohca_query_port,
	.query_qp = ohca_query_qp,
	.query_srq = ohca_query_srq,
	.reg_dm_mr = ohca_reg_dm_mr,
	.reg_mr = ohca_reg_mr,
	.req_notify_cq = ohca_req_notify_cq,
	.rereg_mr = ohca_rereg_mr,
	.resize_cq = ohca_resize_cq,
};

static int ohca_map_db_page(struct ohca_context *ctx,
			    const struct ohca_ibv_alloc_ucontext_resp *resp)
{
	long page_size = sysconf(_SC_PAGESIZE);
	void *db;

	if (!resp->db_page_size || page_size <= 0 ||
	    resp->db_page_size % (unsigned long)page_size) {
		verbs_err(&ctx->vctx,
			  "kernel reported doorbell page size %u (page size %ld)\n",
			  resp->db_page_size, page_size);
		return EINVAL;
	}

	db = mmap(NULL, resp->db_page_size, PROT_WRITE, MAP_SHARED,
		  ctx->vctx.context.cmd_fd, (off_t)resp->db_mmap_key);
	if (db == MAP_FAILED) {
		int err = errno;

		verbs_err(&ctx->vctx,
			  "mmap of doorbell page (key 0x%llx, %u bytes) failed: errno %d\n",
			  (unsigned long long)resp->db_mmap_key,
			  resp->db_page_size, err);
		return err;
	}

	ctx->db_page = db;
	ctx->db_page_size = resp->db_page_size;
	ctx->max_inline = resp->max_inline;
	return 0;
}

/*
 * The optional send opcodes and the capabilities under which the device
 * executes them (any one of them; ohca_queue.h). A device without one
 * need not execute the opcode, so the provider refuses such a work
 * request when it is posted, and its send_ops_flag at ibv_create_qp_ex,
 * with EOPNOTSUPP rather than leave the QP to an error completion.
 */
static const struct {
	uint8_t opcode;
	uint32_t caps;
} ohca_optional_ops[] = {
	{ OHCA_WR_ATOMIC_WRITE, OHCA_DEV_CAP_ATOMIC_WRITE },
	{ OHCA_WR_LOCAL_INV, OHCA_DEV_CAP_FAST_REG | OHCA_DEV_CAP_MW },
	{ OHCA_WR_SEND_INV, OHCA_DEV_CAP_FAST_REG | OHCA_DEV_CAP_MW },
	{ OHCA_WR_BIND_MW, OHCA_DEV_CAP_MW },
};

/* A kernel that does not send the device's capabilities offers none. */
static void ohca_set_device_caps(struct ohca_context *ctx,
				 const struct ohca_ibv_alloc_ucontext_resp *resp)
{
	size_t i;

	ctx->device_caps = resp->comp_mask & OHCA_UCTX_RESP_DEVICE_CAPS ?
			   resp->device_caps : 0;
	ctx->refused_ops = 0;
	for (i = 0; i < sizeof(ohca_optional_ops) / sizeof(ohca_optional_ops[0]);
	     i++)
		if (!(ctx->device_caps & ohca_optional_ops[i].caps))
			ctx->refused_ops |= 1u << ohca_optional_ops[i].opcode;
}

static struct verbs_context *ohca_alloc_context(struct ibv_device *ibdev,
						int cmd_fd,
						void *private_data)
{
	struct ohca_get_context_resp resp = {};
	struct ohca_get_context_cmd cmd = {};
	struct ohca_context *ctx;
	int err;

	(void)private_data;

	ctx = verbs_init_and_alloc_context(ibdev, cmd_fd, ctx, vctx,
					   RDMA_DRIVER_UNKNOWN);
	if (!ctx)
		return NULL;

	err = ohca_cmd_get_context(&ctx->vctx, &cmd.ibv_cmd, sizeof(cmd),
				   &resp.ibv_resp, sizeof(resp));
	if (err) {
		verbs_err(&ctx->vctx, "GET_CONTEXT failed: errno %d\n", err);
		goto err_uninit;
	}

	err = ohca_map_db_page(ctx, &resp.drv);
	if (err)
		goto err_uninit;
	ohca_set_device_caps(ctx, &resp.drv);
	pthread_mutex_init(&ctx->dbrec_lock, NULL);
	ctx->use_dbrec = ohca_dbrec_wanted(resp.drv.comp_mask);
	ctx->use_srq_dbrec = ctx->use_dbrec &&
			     (resp.drv.comp_mask & OHCA_UCTX_RESP_SRQ_DB_RECORD);

	err = ohca_query_limits(ctx);
	if (err) {
		verbs_err(&ctx->vctx, "QUERY_DEVICE failed: errno %d\n", err);
		goto err_unmap;
	}
	pthread_mutex_init(&ctx->qp_table_lock, NULL);

	verbs_set_ops(&ctx->vctx, &ohca_ctx_ops);

	verbs_debug(&ctx->vctx,
		    "context on %s: doorbell page (%zu bytes) at %p, max inline %u, doorbell records %s (SRQs %s), device caps %#x%s\n",
		    ibdev->name, ctx->db_page_size, ctx->db_page,
		    ctx->max_inline, ctx->use_dbrec ? "on" : "off",
		    ctx->use_srq_dbrec ? "on" : "off",
		    ctx->device_caps,
		    resp.drv.comp_mask & OHCA_UCTX_RESP_DEVICE_CAPS ?
		    "" : " (not sent by the kernel)");
	return &ctx->vctx;

err_unmap:
	pthread_mutex_destroy(&ctx->dbrec_lock);
	munmap(ctx->db_page, ctx->db_page_size);
err_uninit:
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
	errno = err;
	return NULL;
}

static void ohca_free_context(struct ibv_context *ibctx)
{
	struct ohca_context *ctx = to_ohca_ctx(ibctx);
	uint32_t i;

	if (ctx->db_page)
		munmap(ctx->db_page, ctx->db_page_size);
	for (i = 0; i < OHCA_QP_TOP_SIZE; i++)
		free(ctx->qp_table[i]);
	free(ctx->xrc_srqs);
	free(ctx->wqs);
	ohca_dbrec_cleanup(ctx);
	pthread_mutex_destroy(&ctx->qp_table_lock);
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
}

static struct verbs_device *
ohca_alloc_device(struct verbs_sysfs_dev *sysfs_dev)
{
	struct ohca_device *dev;

	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;

	dev->abi_ver = sysfs_dev->abi_ver;
	/* No context yet, so no verbs_debug(): log without one. */
	__verbs_log(NULL, VERBS_LOG_DEBUG,
		    "%s: %s: device %s (%s) uverbs abi %u modalias %s\n",
		    sysfs_dev->ibdev_name, __func__, sysfs_dev->ibdev_name,
		    sysfs_dev->sysfs_name, sysfs_dev->abi_ver,
		    sysfs_dev->modalias);
	return &dev->vdev;
}

static void ohca_uninit_device(struct verbs_device *vdev)
{
	free(to_ohca_dev(&vdev->device));
}

static const struct verbs_device_ops ohca_dev_ops = {
	.name = "ohca",
	.match_min_abi_version = OHCA_UVERBS_ABI_VERSION,
	.match_max_abi_version = OHCA_UVERBS_ABI_VERSION,
	.match_table = ohca_match_table,
	.alloc_device = ohca_alloc_device,
	.uninit_device = ohca_uninit_device,
	.alloc_context = ohca_alloc_context,
};

/* What PROVIDER_DRIVER() does in-tree: register when dlopen()ed. */
static void __attribute__((constructor)) ohca_register_driver(void)
{
	ohca_verbs_register_driver(&ohca_dev_ops);
}
