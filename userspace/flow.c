// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libohca: flow steering to raw Ethernet QPs.  Nothing of the provider's
 * own travels with the command: libibverbs turns the specs into the
 * kernel's, the kernel into one masked match for the device.
 */
#include <errno.h>
#include <stdlib.h>

#include "ohca.h"

struct ibv_flow *ohca_create_flow(struct ibv_qp *qp,
				  struct ibv_flow_attr *flow_attr)
{
	struct ibv_flow *flow;
	int err;

	flow = calloc(1, sizeof(*flow));
	if (!flow) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_create_flow(qp, flow, flow_attr, NULL, 0);
	if (err) {
		free(flow);
		errno = err;
		return NULL;
	}
	return flow;
}

int ohca_destroy_flow(struct ibv_flow *flow)
{
	int err = ibv_cmd_destroy_flow(flow);

	if (err)
		return err;
	free(flow);
	return 0;
}
