// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libohca: device and port queries.  Both are answered by the kernel
 * driver (which asks the device once at probe time); the provider adds
 * nothing to them yet.
 */
#include <errno.h>
#include <stdio.h>

#include "ohca.h"

int ohca_query_device_ex(struct ibv_context *ibctx,
			 const struct ibv_query_device_ex_input *input,
			 struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp = {};
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int err;

	err = ibv_cmd_query_device_any(ibctx, input, attr, attr_size, &resp,
				       &resp_size);
	if (err) {
		verbs_debug(&to_ohca_ctx(ibctx)->vctx,
			    "QUERY_DEVICE failed: errno %d\n", err);
		return err;
	}

	/* fw_ver as OHCA_FW_VERSION(major, minor, sub), see ohca_regs.h */
	fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u.%u", (unsigned int)(fw >> 16) & 0xffff,
		 (unsigned int)(fw >> 8) & 0xff, (unsigned int)fw & 0xff);
	return 0;
}

int ohca_query_port(struct ibv_context *ibctx, uint8_t port,
		    struct ibv_port_attr *port_attr)
{
	struct ibv_query_port cmd = {};

	return ibv_cmd_query_port(ibctx, port, port_attr, &cmd, sizeof(cmd));
}
