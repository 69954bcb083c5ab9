// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * layout_check: the build-time half of the compat-header proof.
 *
 * compat/ibverbs_private.h records, per rdma-core release, every size and
 * offset libohca depends on, as static asserts; including it here already
 * fails the build on a mismatch.  This program additionally
 *  - prints each recorded fact with the value the compiler computed, and
 *    says where it comes from: the installed public headers (verbs.h,
 *    rdma/ib_user_verbs.h — checked for real against this machine), or
 *    the private driver.h/kern-abi.h of that release (recorded from its
 *    sources; proven at run time inside the installed libibverbs by
 *    tests/fakedev.sh);
 *  - checks the structural relations between the private structs and the
 *    installed public types they embed or are built from.
 * Exit status is non-zero if any check fails.
 */
#include <stdio.h>
#include <string.h>

#include "compat/ibverbs_private.h"

#define STR(x) #x
#define XSTR(x) STR(x)

static int failures;

static const char *origin(const char *type)
{
	static const char *const private_types[] = {
		"struct ohca_list_node", "struct verbs_match_ent",
		"struct verbs_sysfs_dev", "struct verbs_device_ops",
		"struct verbs_device", "struct verbs_context_ops",
		"struct ibv_get_context", "struct ibv_query_port",
		"struct verbs_mr", "struct verbs_cq", "struct verbs_qp",
		"struct ibv_alloc_pd", "struct ibv_reg_mr",
		"struct ibv_create_cq", "struct ibv_create_qp",
		"struct ibv_modify_qp", "struct ibv_query_qp",
	};

	for (size_t i = 0; i < sizeof(private_types) / sizeof(private_types[0]); i++)
		if (!strcmp(type, private_types[i]))
			return "private: rdma-core " XSTR(OHCA_RDMA_CORE_VERSION)
			       " sources, run-time proof in fakedev.sh";
	return "public, installed headers";
}

static void fact(const char *what, const char *type, size_t actual,
		 size_t recorded)
{
	int ok = actual == recorded;

	printf("%-4s %-60s = %4zu (recorded %4zu) [%s]\n", ok ? "ok" : "FAIL",
	       what, actual, recorded, origin(type));
	failures += !ok;
}

#define PRINT_SIZE(t, n) fact("sizeof(" #t ")", #t, sizeof(t), n);
#define PRINT_OFF(t, m, n) \
	fact("offsetof(" #t ", " #m ")", #t, offsetof(t, m), n);

#define RELATION(cond)                                                    \
	do {                                                              \
		int ok_ = (cond);                                         \
		printf("%-4s %s\n", ok_ ? "ok" : "FAIL", #cond);          \
		failures += !ok_;                                         \
	} while (0)

#define END(t, m) (offsetof(t, m) + sizeof(((t *)0)->m))

int main(void)
{
	printf("rdma-core %d, private ABI IBVERBS_PRIVATE_%d\n",
	       OHCA_RDMA_CORE_VERSION, OHCA_IBVERBS_PABI);

	printf("-- recorded facts\n");
	OHCA_LAYOUT_FACTS(PRINT_SIZE, PRINT_OFF)

	printf("-- relations with the installed public headers\n");
	/* verbs_device embeds the installed ibv_device first. */
	RELATION(offsetof(struct verbs_device, device) == 0);
	RELATION(offsetof(struct verbs_device, ops) ==
		 sizeof(struct ibv_device));
	/* libibverbs' context_offset arithmetic: the public ibv_context is
	 * the last member of verbs_context. */
	RELATION(END(struct verbs_context, context) ==
		 sizeof(struct verbs_context));
	/* sysfs name buffers are sized by the installed verbs.h limits. */
	RELATION(sizeof(((struct verbs_sysfs_dev *)0)->sysfs_name) ==
		 IBV_SYSFS_NAME_MAX);
	RELATION(sizeof(((struct verbs_sysfs_dev *)0)->ibdev_path) ==
		 IBV_SYSFS_PATH_MAX);
	RELATION(sizeof(((struct verbs_sysfs_dev *)0)->modalias) == 512);
	/* The ops table is an array of function pointers: 76 slots (93 in
	 * rdma-core 65). */
	RELATION(sizeof(struct verbs_context_ops) ==
		 OHCA_OPS_OFF(76, 93) * sizeof(void *));
	RELATION(offsetof(struct verbs_context_ops, unimport_pd) ==
		 OHCA_OPS_OFF(75, 92) * sizeof(void *));
	/* Command wrappers = uverbs header + the installed kernel core. */
	RELATION(sizeof(struct ibv_get_context) ==
		 sizeof(struct ib_uverbs_cmd_hdr) +
			 sizeof(struct ib_uverbs_get_context));
	RELATION(sizeof(struct ibv_query_port) ==
		 sizeof(struct ib_uverbs_cmd_hdr) +
			 sizeof(struct ib_uverbs_query_port));
	RELATION(sizeof(struct ibv_alloc_pd) ==
		 sizeof(struct ib_uverbs_cmd_hdr) +
			 sizeof(struct ib_uverbs_alloc_pd));
	RELATION(sizeof(struct ibv_reg_mr) ==
		 sizeof(struct ib_uverbs_cmd_hdr) +
			 sizeof(struct ib_uverbs_reg_mr));
	RELATION(sizeof(struct ibv_create_cq) ==
		 sizeof(struct ib_uverbs_cmd_hdr) +
			 sizeof(struct ib_uverbs_create_cq));
	RELATION(sizeof(struct ibv_create_qp) ==
		 sizeof(struct ib_uverbs_cmd_hdr) +
			 sizeof(struct ib_uverbs_create_qp));
	RELATION(sizeof(struct ibv_modify_qp) ==
		 sizeof(struct ib_uverbs_cmd_hdr) +
			 sizeof(struct ib_uverbs_modify_qp));
	RELATION(sizeof(struct ibv_query_qp) ==
		 sizeof(struct ib_uverbs_cmd_hdr) +
			 sizeof(struct ib_uverbs_query_qp));
	/* verbs_mr/cq/qp start with the installed public objects. */
	RELATION(offsetof(struct verbs_mr, ibv_mr) == 0);
	RELATION(offsetof(struct verbs_mr, mr_type) == sizeof(struct ibv_mr));
	RELATION(sizeof(struct verbs_cq) == sizeof(struct ibv_cq_ex));
	RELATION(offsetof(struct verbs_qp, comp_mask) ==
		 sizeof(struct ibv_qp_ex));
	/* Ops slots libohca fills, by their alphabetical index. */
	RELATION(offsetof(struct verbs_context_ops, alloc_pd) ==
		 OHCA_OPS_OFF(5, 7) * sizeof(void *));
	RELATION(offsetof(struct verbs_context_ops, poll_cq) ==
		 OHCA_OPS_OFF(53, 62) * sizeof(void *));
	RELATION(offsetof(struct verbs_context_ops, req_notify_cq) ==
		 OHCA_OPS_OFF(69, 84) * sizeof(void *));
	/* rdma-core 44's ib_user_verbs.h copy ends the ex query device
	 * response with xrc_odp_caps + reserved; the installed one agrees. */
	RELATION(END(struct ib_uverbs_ex_query_device_resp, reserved) ==
		 sizeof(struct ib_uverbs_ex_query_device_resp));

	if (failures) {
		printf("layout_check: %d failure(s)\n", failures);
		return 1;
	}
	printf("layout_check: OK\n");
	return 0;
}
