// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * ohca_ctx_test: opens an ohca device through libibverbs and libohca,
 * checks that the context came up with its doorbell page mapped, queries
 * the device and port 1, and prints what it found.  Exits non-zero on any
 * failure.  Used by the integration tests inside the guest, and on the
 * host by tests/fakedev.sh against a fake uverbs device.
 *
 *   ohca_ctx_test [ibdev-name]     (default: the first device named ohca*)
 *
 * The doorbell page is checked from the outside: opening the device must
 * add exactly one shared, write-only mapping (PROT_WRITE + MAP_SHARED ->
 * "-w-s" in /proc/self/maps) and closing it must remove it again.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#define MAX_MAPS 64

struct maps {
	int n;
	unsigned long start[MAX_MAPS], end[MAX_MAPS];
};

static int failures;

#define CHECK(cond, ...)                                                   \
	do {                                                               \
		if (!(cond)) {                                             \
			printf("FAIL: " __VA_ARGS__);                      \
			printf("\n");                                      \
			failures++;                                        \
		}                                                          \
	} while (0)

/* Shared write-only mappings of this process. */
static int read_wo_shared_maps(struct maps *m)
{
	char line[512], perms[8];
	unsigned long s, e;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return -1;
	m->n = 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx %7s", &s, &e, perms) != 3)
			continue;
		if (strcmp(perms, "-w-s") || m->n == MAX_MAPS)
			continue;
		m->start[m->n] = s;
		m->end[m->n] = e;
		m->n++;
	}
	fclose(f);
	return 0;
}

static int in_maps(const struct maps *m, unsigned long s)
{
	for (int i = 0; i < m->n; i++)
		if (m->start[i] == s)
			return 1;
	return 0;
}

static const char *port_state_str(enum ibv_port_state s)
{
	return ibv_port_state_str(s);
}

static const char *link_layer_str(uint8_t ll)
{
	switch (ll) {
	case IBV_LINK_LAYER_ETHERNET:
		return "Ethernet";
	case IBV_LINK_LAYER_INFINIBAND:
		return "InfiniBand";
	default:
		return "unspecified";
	}
}

int main(int argc, char **argv)
{
	const char *want = argc > 1 ? argv[1] : NULL;
	struct ibv_device **list, *dev = NULL;
	struct ibv_device_attr_ex attr = {};
	struct ibv_port_attr port = {};
	struct maps before, opened, after;
	struct ibv_context *ctx;
	unsigned long db = 0;
	int num, ret, new_maps = 0;

	list = ibv_get_device_list(&num);
	if (!list) {
		printf("FAIL: ibv_get_device_list: %s\n", strerror(errno));
		return 1;
	}
	for (int i = 0; i < num; i++) {
		const char *name = ibv_get_device_name(list[i]);

		if (want ? !strcmp(name, want) : !strncmp(name, "ohca", 4)) {
			dev = list[i];
			break;
		}
	}
	if (!dev) {
		printf("FAIL: no device %s among %d\n", want ? want : "ohca*",
		       num);
		ibv_free_device_list(list);
		return 1;
	}
	printf("device: %s guid 0x%016" PRIx64 "\n", ibv_get_device_name(dev),
	       be64toh(ibv_get_device_guid(dev)));

	if (read_wo_shared_maps(&before)) {
		printf("FAIL: cannot read /proc/self/maps\n");
		return 1;
	}

	ctx = ibv_open_device(dev);
	if (!ctx) {
		printf("FAIL: ibv_open_device(%s): %s\n",
		       ibv_get_device_name(dev), strerror(errno));
		ibv_free_device_list(list);
		return 1;
	}
	printf("context: cmd_fd %d async_fd %d num_comp_vectors %d\n",
	       ctx->cmd_fd, ctx->async_fd, ctx->num_comp_vectors);

	read_wo_shared_maps(&opened);
	for (int i = 0; i < opened.n; i++) {
		if (in_maps(&before, opened.start[i]))
			continue;
		new_maps++;
		db = opened.start[i];
		printf("doorbell page: 0x%lx-0x%lx (%lu bytes)\n",
		       opened.start[i], opened.end[i],
		       opened.end[i] - opened.start[i]);
	}
	CHECK(new_maps == 1,
	      "expected 1 new shared write-only mapping (doorbell), found %d",
	      new_maps);

	ret = ibv_query_device_ex(ctx, NULL, &attr);
	CHECK(!ret, "ibv_query_device_ex: %s", strerror(ret));
	if (!ret) {
		printf("fw_ver: %s\n", attr.orig_attr.fw_ver);
		printf("vendor_id: 0x%x vendor_part_id: 0x%x hw_ver: 0x%x\n",
		       attr.orig_attr.vendor_id, attr.orig_attr.vendor_part_id,
		       attr.orig_attr.hw_ver);
		printf("node_guid: 0x%016" PRIx64 "\n",
		       be64toh(attr.orig_attr.node_guid));
		printf("max_qp: %d max_qp_wr: %d max_sge: %d max_cq: %d max_cqe: %d\n",
		       attr.orig_attr.max_qp, attr.orig_attr.max_qp_wr,
		       attr.orig_attr.max_sge, attr.orig_attr.max_cq,
		       attr.orig_attr.max_cqe);
		printf("max_mr: %d max_pd: %d max_mr_size: 0x%" PRIx64 "\n",
		       attr.orig_attr.max_mr, attr.orig_attr.max_pd,
		       (uint64_t)attr.orig_attr.max_mr_size);
		printf("phys_port_cnt: %u\n", attr.orig_attr.phys_port_cnt);
		CHECK(attr.orig_attr.phys_port_cnt == 1,
		      "phys_port_cnt %u, expected 1",
		      attr.orig_attr.phys_port_cnt);
	}

	ret = ibv_query_port(ctx, 1, &port);
	CHECK(!ret, "ibv_query_port(1): %s", strerror(ret));
	if (!ret) {
		printf("port 1: state %s (%d) max_mtu %d active_mtu %d link_layer %s gid_tbl_len %d\n",
		       port_state_str(port.state), port.state, port.max_mtu,
		       port.active_mtu, link_layer_str(port.link_layer),
		       port.gid_tbl_len);
		CHECK(port.link_layer == IBV_LINK_LAYER_ETHERNET,
		      "port 1 link layer %u, expected Ethernet",
		      port.link_layer);
	}

	ret = ibv_close_device(ctx);
	CHECK(!ret, "ibv_close_device: %s", strerror(errno));
	read_wo_shared_maps(&after);
	CHECK(!db || !in_maps(&after, db),
	      "doorbell mapping 0x%lx still present after close", db);

	ibv_free_device_list(list);
	if (failures) {
		printf("ohca_ctx_test: %d failure(s)\n", failures);
		return 1;
	}
	printf("ohca_ctx_test: OK\n");
	return 0;
}
