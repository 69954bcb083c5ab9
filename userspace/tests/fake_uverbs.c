// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * fake_uverbs.so: an LD_PRELOAD stand-in for the kernel side of uverbs,
 * used by tests/fakedev.sh to run the real libohca inside the installed
 * libibverbs on a host without an RDMA device.
 *
 * /dev/infiniband/uverbs0 is a clone of /dev/zero in a private mount
 * namespace: ioctl() on it fails with ENOTTY, so libibverbs falls back to
 * the write() ABI, which this library answers for GET_CONTEXT,
 * QUERY_DEVICE (ex) and QUERY_PORT.  It checks the framing libibverbs
 * produced from the provider's buffers (the word counts prove the command
 * and response sizes the compat header declares) and the doorbell mmap()
 * the provider then makes.  NETLINK_RDMA sockets are refused so that
 * libibverbs discovers the device through $SYSFS_PATH.
 *
 * Every event is appended to $FAKE_UVERBS_LOG as one line; the script
 * greps for them.  Test code, not part of the provider.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <rdma/ib_user_verbs.h>

#include <ohca/ohca-abi.h>
#include <ohca/ohca_regs.h>

#define FAKE_DEV "/dev/infiniband/uverbs0"
#define FAKE_DB_KEY 0x5000ull /* what the kernel hands out: page 5 */
#define FAKE_UAR_INDEX 5
#define FAKE_GUID 0xefcdab0003c90200ull /* 0002:c903:00ab:cdef, BE */

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
	const char *path = getenv("FAKE_UVERBS_LOG");
	va_list ap;
	FILE *f;

	if (!path)
		return;
	f = fopen(path, "a");
	if (!f)
		return;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

static int is_fake_fd(int fd)
{
	char link[64], target[256];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return 0;
	target[n] = 0;
	return !strcmp(target, FAKE_DEV);
}

static void *db_addr;

static ssize_t get_context(const struct ib_uverbs_cmd_hdr *hdr, size_t len)
{
	const struct ib_uverbs_get_context *cmd = (const void *)(hdr + 1);
	struct {
		struct ib_uverbs_get_context_resp core;
		struct ohca_ibv_alloc_ucontext_resp drv;
	} resp = {};

	logf_("GET_CONTEXT in_words=%u out_words=%u len=%zu", hdr->in_words,
	      hdr->out_words, len);
	if (hdr->in_words * 4u != len || hdr->out_words * 4u != sizeof(resp)) {
		logf_("GET_CONTEXT bad framing: expected in %zu out %zu bytes",
		      len, sizeof(resp));
		errno = EINVAL;
		return -1;
	}
	resp.core.async_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	resp.core.num_comp_vectors = 1;
	resp.drv.db_mmap_key = FAKE_DB_KEY;
	resp.drv.uar_index = FAKE_UAR_INDEX;
	resp.drv.db_page_size = OHCA_DB_PAGE_SIZE;
	resp.drv.device_caps = OHCA_CAP_ROCE_V2 | OHCA_CAP_ETH;
	memcpy((void *)(uintptr_t)cmd->response, &resp, sizeof(resp));
	logf_("GET_CONTEXT ok");
	return len;
}

static ssize_t query_device_ex(const struct ib_uverbs_cmd_hdr *hdr,
			       size_t len)
{
	const struct ib_uverbs_ex_cmd_hdr *ex = (const void *)(hdr + 1);
	struct ib_uverbs_ex_query_device_resp resp = {};
	size_t out = hdr->out_words * 8u + ex->provider_out_words * 8u;

	logf_("QUERY_DEVICE_EX in_words=%u out_words=%u provider_out_words=%u",
	      hdr->in_words, hdr->out_words, ex->provider_out_words);
	resp.base.fw_ver = OHCA_FW_VERSION(1, 2, 3);
	resp.base.node_guid = FAKE_GUID;
	resp.base.sys_image_guid = FAKE_GUID;
	resp.base.max_mr_size = ~0ull;
	resp.base.page_size_cap = 0x1000;
	resp.base.vendor_id = OHCA_PCI_VENDOR_ID;
	resp.base.vendor_part_id = OHCA_PCI_DEVICE_ID;
	resp.base.hw_ver = OHCA_PCI_REVISION;
	resp.base.max_qp = 1024;
	resp.base.max_qp_wr = 4096;
	resp.base.max_sge = 4;
	resp.base.max_cq = 1024;
	resp.base.max_cqe = 65535;
	resp.base.max_mr = 4096;
	resp.base.max_pd = 1024;
	resp.base.phys_port_cnt = 1;
	resp.response_length = out < sizeof(resp) ? out : sizeof(resp);
	memcpy((void *)(uintptr_t)ex->response, &resp, resp.response_length);
	logf_("QUERY_DEVICE_EX ok");
	return len;
}

static ssize_t query_port(const struct ib_uverbs_cmd_hdr *hdr, size_t len)
{
	const struct ib_uverbs_query_port *cmd = (const void *)(hdr + 1);
	struct ib_uverbs_query_port_resp resp = {};

	logf_("QUERY_PORT in_words=%u out_words=%u port=%u", hdr->in_words,
	      hdr->out_words, cmd->port_num);
	if (hdr->in_words * 4u != len || hdr->out_words * 4u != sizeof(resp) ||
	    cmd->port_num != 1) {
		errno = EINVAL;
		return -1;
	}
	resp.state = 4;		/* IB_PORT_ACTIVE */
	resp.max_mtu = 3;	/* IB_MTU_1024 */
	resp.active_mtu = 3;
	resp.gid_tbl_len = 16;
	resp.pkey_tbl_len = 1;
	resp.max_msg_sz = 1u << 31;
	resp.phys_state = 5;	/* LinkUp */
	resp.link_layer = 2;	/* IB_LINK_LAYER_ETHERNET */
	memcpy((void *)(uintptr_t)cmd->response, &resp, sizeof(resp));
	logf_("QUERY_PORT ok");
	return len;
}

ssize_t write(int fd, const void *buf, size_t len)
{
	static ssize_t (*real_write)(int, const void *, size_t);
	const struct ib_uverbs_cmd_hdr *hdr = buf;

	if (!real_write)
		real_write = dlsym(RTLD_NEXT, "write");
	if (len < sizeof(*hdr) || !is_fake_fd(fd))
		return real_write(fd, buf, len);

	switch (hdr->command) {
	case IB_USER_VERBS_CMD_GET_CONTEXT:
		return get_context(hdr, len);
	case IB_USER_VERBS_CMD_QUERY_PORT:
		return query_port(hdr, len);
	case IB_USER_VERBS_CMD_FLAG_EXTENDED | IB_USER_VERBS_EX_CMD_QUERY_DEVICE:
		return query_device_ex(hdr, len);
	default:
		logf_("UNHANDLED command 0x%x len %zu", hdr->command, len);
		errno = EOPNOTSUPP;
		return -1;
	}
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
	void *p;

	if (!real_mmap)
		real_mmap = dlsym(RTLD_NEXT, "mmap");
	if (fd < 0 || !is_fake_fd(fd))
		return real_mmap(addr, len, prot, flags, fd, off);

	logf_("MMAP len=%zu prot=0x%x flags=0x%x off=0x%llx", len, prot, flags,
	      (unsigned long long)off);
	if ((unsigned long long)off != FAKE_DB_KEY ||
	    len != OHCA_DB_PAGE_SIZE || prot != PROT_WRITE ||
	    (flags & MAP_TYPE) != MAP_SHARED) {
		errno = EINVAL;
		return MAP_FAILED;
	}
	p = real_mmap(addr, len, prot, flags, fd, 0);
	if (p != MAP_FAILED) {
		db_addr = p;
		logf_("MMAP doorbell ok");
	}
	return p;
}

int munmap(void *addr, size_t len)
{
	static int (*real_munmap)(void *, size_t);

	if (!real_munmap)
		real_munmap = dlsym(RTLD_NEXT, "munmap");
	if (addr && addr == db_addr) {
		logf_("MUNMAP doorbell len=%zu", len);
		db_addr = NULL;
	}
	return real_munmap(addr, len);
}

int socket(int domain, int type, int protocol)
{
	static int (*real_socket)(int, int, int);

	if (!real_socket)
		real_socket = dlsym(RTLD_NEXT, "socket");
	if (domain == AF_NETLINK && protocol == NETLINK_RDMA) {
		logf_("NETLINK_RDMA refused");
		errno = EPROTONOSUPPORT;
		return -1;
	}
	return real_socket(domain, type, protocol);
}
