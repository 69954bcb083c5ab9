/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * libohca: the rdma-core provider for the ohca RoCEv2 device.
 */
#ifndef OHCA_PROVIDER_H
#define OHCA_PROVIDER_H

#include <stddef.h>
#include <stdint.h>

#include "compat/ibverbs_private.h"
#include "ohca_mmio.h"

#include <ohca/ohca-abi.h>
#include <ohca/ohca_regs.h>

struct ohca_device {
	struct verbs_device vdev;
	uint32_t abi_ver;	/* the kernel driver's uverbs ABI */
};

struct ohca_context {
	struct verbs_context vctx;
	void *db_page;		/* this context's doorbell page (BAR2) */
	size_t db_page_size;
	uint32_t uar_index;
	uint32_t device_caps;	/* enum ohca_caps */
};

static inline struct ohca_device *to_ohca_dev(struct ibv_device *ibdev)
{
	return ohca_container_of(ibdev, struct ohca_device, vdev.device);
}

static inline struct ohca_context *to_ohca_ctx(struct ibv_context *ibctx)
{
	return ohca_container_of(ibctx, struct ohca_context, vctx.context);
}

int ohca_query_device_ex(struct ibv_context *ibctx,
			 const struct ibv_query_device_ex_input *input,
			 struct ibv_device_attr_ex *attr, size_t attr_size);
int ohca_query_port(struct ibv_context *ibctx, uint8_t port,
		    struct ibv_port_attr *port_attr);

#endif /* OHCA_PROVIDER_H */
