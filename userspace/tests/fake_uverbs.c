// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * fake_uverbs.so: an LD_PRELOAD stand-in for the kernel side of uverbs,
 * used by tests/fakedev.sh to run the real libohca inside the installed
 * libibverbs on a host without an RDMA device.
 *
 * /dev/infiniband/uverbs0 is a clone of /dev/zero in a private mount
 * namespace: ioctl() on it fails with ENOTTY, so libibverbs falls back to
 * the write() ABI, which this library answers for GET_CONTEXT,
 * QUERY_DEVICE (ex), QUERY_PORT, ALLOC/DEALLOC_PD, REG/DEREG_MR,
 * CREATE/DESTROY_CQ, CREATE/MODIFY/QUERY/DESTROY_QP (an extended
 * CREATE_QP, an RSS QP's, is refused) and CREATE/DESTROY_SRQ.  It checks the
 * framing libibverbs produced from the provider's buffers (the word counts
 * prove the command and response sizes the compat header declares, with
 * the ohca driver data after them) and the doorbell mmap() the provider
 * then makes.  The rings the provider hands over (CREATE_CQ/CREATE_QP
 * driver data) and the doorbell page are exposed to the test program
 * through fake_uverbs_*() (found with dlsym), as the device would see them.  NETLINK_RDMA sockets are refused so that
 * libibverbs discovers the device through $SYSFS_PATH.
 *
 * Every event is appended to $FAKE_UVERBS_LOG as one line; the script
 * greps for them.  $FAKE_UVERBS_DEVICE_CAPS sets the device capabilities
 * GET_CONTEXT answers (hex OHCA_DEV_CAP_* bits; "none": the response of a
 * kernel from before device_caps, the word 0 and its comp_mask bit clear;
 * unset: every capability).  $FAKE_UVERBS_DB_RECORD=1 answers
 * OHCA_UCTX_RESP_DB_RECORD (a kernel that takes doorbell records) and
 * accepts them in CREATE_CQ/CREATE_QP; $FAKE_UVERBS_SRQ_DB_RECORD=1 too
 * answers OHCA_UCTX_RESP_SRQ_DB_RECORD and accepts them in CREATE_SRQ
 * (without it a record there is refused, as by a kernel from before SRQ
 * records).  Test code, not part of the provider.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <rdma/ib_user_verbs.h>

#include <infiniband/verbs.h>	/* IBV_QP_STATE, IBV_QPS_RESET */

#include <ohca/ohca-abi.h>
#include <ohca/ohca_cmd.h>
#include <ohca/ohca_queue.h>
#include <ohca/ohca_regs.h>

#define FAKE_DEV "/dev/infiniband/uverbs0"
#define FAKE_DB_KEY 0x5000ull /* what the kernel hands out: page 5 */
/* Below what a 256-byte send stride holds: the provider must clip to it. */
#define FAKE_MAX_INLINE 128
#define FAKE_GUID 0xefcdab0003c90200ull /* 0002:c903:00ab:cdef, BE */
/* Every capability up to OHCA_DEV_CAP_RSS, as the emulated device. */
#define FAKE_DEVICE_CAPS ((OHCA_DEV_CAP_RSS << 1) - 1)

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

/*
 * Lock order: the provider must never take a sleeping lock (a pthread
 * mutex) while it holds a spinlock (its CQ and queue locks). Spinlocks
 * held are counted per thread; a mutex taken meanwhile is logged as
 * MUTEX_UNDER_SPINLOCK, which fakedev.sh fails on.
 */
static __thread int fake_spins_held;

int pthread_spin_lock(pthread_spinlock_t *lock)
{
	static int (*real)(pthread_spinlock_t *);
	int ret;

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "pthread_spin_lock");
	ret = real(lock);
	if (!ret)
		fake_spins_held++;
	return ret;
}

int pthread_spin_unlock(pthread_spinlock_t *lock)
{
	static int (*real)(pthread_spinlock_t *);

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "pthread_spin_unlock");
	fake_spins_held--;
	return real(lock);
}

int pthread_mutex_lock(pthread_mutex_t *mutex)
{
	static int (*real)(pthread_mutex_t *);

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "pthread_mutex_lock");
	if (fake_spins_held > 0)
		logf_("MUTEX_UNDER_SPINLOCK (%d spinlocks held)",
		      fake_spins_held);
	return real(mutex);
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

/* Objects the fake kernel created; handle = index + 1. */
#define FAKE_MAX_OBJ 16
#define FAKE_PDN_BASE 0x10
#define FAKE_CQN_BASE 0x20
#define FAKE_QPN_BASE 0x40
#define FAKE_SRQN_BASE 0x60

struct fake_cq {
	int used;
	uint64_t db_addr;		/* its doorbell record, or 0 */
	uint64_t buf_addr;
	uint32_t log_size;
	uint32_t cqe;
};

struct fake_qp {
	int used;
	struct ohca_ibv_create_qp drv;
	struct ib_uverbs_create_qp core;
	uint8_t state;
	uint32_t last_attr_mask;
};

struct fake_srq {
	int used;
	struct ohca_ibv_create_srq drv;
};

static int fake_pds[FAKE_MAX_OBJ], fake_mrs[FAKE_MAX_OBJ];
static struct fake_cq fake_cqs[FAKE_MAX_OBJ];
static struct fake_qp fake_qps[FAKE_MAX_OBJ];
static struct fake_srq fake_srqs[FAKE_MAX_OBJ];

static int alloc_slot(int *used, size_t stride, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int *u = (int *)((char *)used + i * stride);

		if (!*u) {
			*u = 1;
			return (int)i;
		}
	}
	return -1;
}

/* ---- the test program's view of the device side (dlsym) ---- */
uint64_t fake_uverbs_db_read(unsigned int off);
uint64_t fake_uverbs_db_read(unsigned int off)
{
	if (!db_addr || off > OHCA_DB_PAGE_SIZE - 8)
		return ~0ull;
	return *(volatile uint64_t *)((char *)db_addr + off);
}

void fake_uverbs_db_clear(void);
void fake_uverbs_db_clear(void)
{
	if (db_addr)
		memset(db_addr, 0, 64);
}

int fake_uverbs_cq(uint32_t cqn, void **ring, uint32_t *log_size);
int fake_uverbs_cq(uint32_t cqn, void **ring, uint32_t *log_size)
{
	uint32_t i = cqn - FAKE_CQN_BASE;

	if (i >= FAKE_MAX_OBJ || !fake_cqs[i].used)
		return -1;
	*ring = (void *)(uintptr_t)fake_cqs[i].buf_addr;
	*log_size = fake_cqs[i].log_size;
	return 0;
}

/* The CQ's doorbell record (the provider's memory), or NULL. */
void *fake_uverbs_cq_dbrec(uint32_t cqn);
void *fake_uverbs_cq_dbrec(uint32_t cqn)
{
	uint32_t i = cqn - FAKE_CQN_BASE;

	if (i >= FAKE_MAX_OBJ || !fake_cqs[i].used)
		return NULL;
	return (void *)(uintptr_t)fake_cqs[i].db_addr;
}

/* Whether GET_CONTEXT offers doorbell records. */
static int fake_db_record(void)
{
	const char *v = getenv("FAKE_UVERBS_DB_RECORD");

	return v && !strcmp(v, "1");
}

/* Whether it offers them for SRQs too. */
static int fake_srq_db_record(void)
{
	const char *v = getenv("FAKE_UVERBS_SRQ_DB_RECORD");

	return fake_db_record() && v && !strcmp(v, "1");
}

/* The driver data of CREATE_SRQ for SRQ srqn, or NULL. */
const struct ohca_ibv_create_srq *fake_uverbs_srq(uint32_t srqn);
const struct ohca_ibv_create_srq *fake_uverbs_srq(uint32_t srqn)
{
	uint32_t i = srqn - FAKE_SRQN_BASE;

	if (i >= FAKE_MAX_OBJ || !fake_srqs[i].used)
		return NULL;
	return &fake_srqs[i].drv;
}

/* A record as the kernel takes it: its bit, 8-byte aligned, else none. */
static int db_record_ok(uint32_t comp_mask, uint32_t bit, uint64_t addr)
{
	if (!(comp_mask & bit))
		return !addr;
	return fake_db_record() && addr && !(addr % OHCA_DB_RECORD_ALIGN);
}

/* cqn of the n-th created CQ still alive, in creation order (slot). */
int fake_uverbs_cqn(int slot);
int fake_uverbs_cqn(int slot)
{
	if (slot < 0 || slot >= FAKE_MAX_OBJ || !fake_cqs[slot].used)
		return -1;
	return FAKE_CQN_BASE + slot;
}

const struct ohca_ibv_create_qp *fake_uverbs_qp(uint32_t qpn,
						const struct ib_uverbs_create_qp **core,
						uint8_t *state);
const struct ohca_ibv_create_qp *fake_uverbs_qp(uint32_t qpn,
						const struct ib_uverbs_create_qp **core,
						uint8_t *state)
{
	uint32_t i = qpn - FAKE_QPN_BASE;

	if (i >= FAKE_MAX_OBJ || !fake_qps[i].used)
		return NULL;
	if (core)
		*core = &fake_qps[i].core;
	if (state)
		*state = fake_qps[i].state;
	return &fake_qps[i].drv;
}

/* Legacy write framing: in_words counts the whole request (header
 * included), out_words the response, both in 4-byte words. */
static int framing(const char *what, const struct ib_uverbs_cmd_hdr *hdr,
		   size_t len, size_t in, size_t out)
{
	logf_("%s in_words=%u out_words=%u len=%zu", what, hdr->in_words,
	      hdr->out_words, len);
	if (hdr->in_words * 4u != len || len != in ||
	    hdr->out_words * 4u != out) {
		logf_("%s bad framing: expected in %zu out %zu bytes", what, in,
		      out);
		errno = EINVAL;
		return -1;
	}
	return 0;
}

static ssize_t alloc_pd(const struct ib_uverbs_cmd_hdr *hdr, size_t len)
{
	const struct ib_uverbs_alloc_pd *cmd = (const void *)(hdr + 1);
	struct {
		struct ib_uverbs_alloc_pd_resp core;	/* no driver part */
	} resp = {};
	int i;

	if (framing("ALLOC_PD", hdr, len, sizeof(*hdr) + sizeof(*cmd),
		    sizeof(resp)))
		return -1;
	i = alloc_slot(fake_pds, sizeof(int), FAKE_MAX_OBJ);
	if (i < 0) {
		errno = ENOMEM;
		return -1;
	}
	resp.core.pd_handle = i + 1;
	memcpy((void *)(uintptr_t)cmd->response, &resp, sizeof(resp));
	logf_("ALLOC_PD ok handle=%u", resp.core.pd_handle);
	return len;
}

static ssize_t dealloc_pd(const struct ib_uverbs_cmd_hdr *hdr, size_t len)
{
	const struct ib_uverbs_dealloc_pd *cmd = (const void *)(hdr + 1);

	if (framing("DEALLOC_PD", hdr, len, sizeof(*hdr) + sizeof(*cmd), 0))
		return -1;
	if (!cmd->pd_handle || cmd->pd_handle > FAKE_MAX_OBJ ||
	    !fake_pds[cmd->pd_handle - 1]) {
		errno = EINVAL;
		return -1;
	}
	fake_pds[cmd->pd_handle - 1] = 0;
	logf_("DEALLOC_PD ok handle=%u", cmd->pd_handle);
	return len;
}

static ssize_t reg_mr(const struct ib_uverbs_cmd_hdr *hdr, size_t len)
{
	const struct ib_uverbs_reg_mr *cmd = (const void *)(hdr + 1);
	struct ib_uverbs_reg_mr_resp resp = {};
	int i;

	if (framing("REG_MR", hdr, len, sizeof(*hdr) + sizeof(*cmd),
		    sizeof(resp)))
		return -1;
	i = alloc_slot(fake_mrs, sizeof(int), FAKE_MAX_OBJ);
	if (i < 0) {
		errno = ENOMEM;
		return -1;
	}
	resp.mr_handle = i + 1;
	resp.lkey = (uint32_t)(i + 1) << 8 | 0x11;
	resp.rkey = (uint32_t)(i + 1) << 8 | 0x22;
	memcpy((void *)(uintptr_t)cmd->response, &resp, sizeof(resp));
	logf_("REG_MR ok handle=%u pd=%u start=0x%llx length=%llu access=0x%x lkey=0x%x",
	      resp.mr_handle, cmd->pd_handle, (unsigned long long)cmd->start,
	      (unsigned long long)cmd->length, cmd->access_flags, resp.lkey);
	return len;
}

static ssize_t dereg_mr(const struct ib_uverbs_cmd_hdr *hdr, size_t len)
{
	const struct ib_uverbs_dereg_mr *cmd = (const void *)(hdr + 1);

	if (framing("DEREG_MR", hdr, len, sizeof(*hdr) + sizeof(*cmd), 0))
		return -1;
	if (!cmd->mr_handle || cmd->mr_handle > FAKE_MAX_OBJ ||
	    !fake_mrs[cmd->mr_handle - 1]) {
		errno = EINVAL;
		return -1;
	}
	fake_mrs[cmd->mr_handle - 1] = 0;
	logf_("DEREG_MR ok handle=%u", cmd->mr_handle);
	return len;
}

static int page_aligned_zeroed(uint64_t addr, size_t len)
{
	const unsigned char *p = (const void *)(uintptr_t)addr;

	if (!addr || addr % 4096)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return 0;
	return 1;
}

static ssize_t create_cq(const struct ib_uverbs_cmd_hdr *hdr, size_t len)
{
	const struct ib_uverbs_create_cq *cmd = (const void *)(hdr + 1);
	const struct ohca_ibv_create_cq *drv = (const void *)(cmd + 1);
	struct {
		struct ib_uverbs_create_cq_resp core;
		struct ohca_ibv_create_cq_resp drv;
	} resp = {};
	int i;

	if (framing("CREATE_CQ", hdr, len,
		    sizeof(*hdr) + sizeof(*cmd) + sizeof(*drv), sizeof(resp)))
		return -1;
	logf_("CREATE_CQ cqe=%u comp_channel=%d buf_addr=0x%llx log_size=%u",
	      cmd->cqe, cmd->comp_channel, (unsigned long long)drv->buf_addr,
	      drv->log_size);
	/* What the kernel checks before pinning the ring. */
	if (drv->log_size < 1 || drv->log_size > OHCA_CQ_LOG_MAX ||
	    (1u << drv->log_size) < cmd->cqe + 1 ||
	    (drv->comp_mask & ~OHCA_CREATE_CQ_DB_RECORD) ||
	    !db_record_ok(drv->comp_mask, OHCA_CREATE_CQ_DB_RECORD,
			  drv->db_addr) ||
	    !page_aligned_zeroed(drv->buf_addr,
				 sizeof(struct ohca_cqe) << drv->log_size)) {
		logf_("CREATE_CQ bad driver data");
		errno = EINVAL;
		return -1;
	}
	i = alloc_slot(&fake_cqs[0].used, sizeof(fake_cqs[0]), FAKE_MAX_OBJ);
	if (i < 0) {
		errno = ENOMEM;
		return -1;
	}
	fake_cqs[i].buf_addr = drv->buf_addr;
	fake_cqs[i].db_addr = drv->db_addr;
	fake_cqs[i].log_size = drv->log_size;
	fake_cqs[i].cqe = cmd->cqe;
	resp.core.cq_handle = i + 1;
	resp.core.cqe = cmd->cqe;
	resp.drv.cqn = FAKE_CQN_BASE + i;
	memcpy((void *)(uintptr_t)cmd->response, &resp, sizeof(resp));
	logf_("CREATE_CQ ok handle=%u cqn=0x%x", resp.core.cq_handle,
	      resp.drv.cqn);
	return len;
}

static ssize_t destroy_cq(const struct ib_uverbs_cmd_hdr *hdr, size_t len)
{
	const struct ib_uverbs_destroy_cq *cmd = (const void *)(hdr + 1);
	struct ib_uverbs_destroy_cq_resp resp = {};

	if (framing("DESTROY_CQ", hdr, len, sizeof(*hdr) + sizeof(*cmd),
		    sizeof(resp)))
		return -1;
	if (!cmd->cq_handle || cmd->cq_handle > FAKE_MAX_OBJ ||
	    !fake_cqs[cmd->cq_handle - 1].used) {
		errno = EINVAL;
		return -1;
	}
	fake_cqs[cmd->cq_handle - 1].used = 0;
	memcpy((void *)(uintptr_t)cmd->response, &resp, sizeof(resp));
	logf_("DESTROY_CQ ok handle=%u", cmd->cq_handle);
	return len;
}

static ssize_t create_qp(const struct ib_uverbs_cmd_hdr *hdr, size_t len)
{
	const struct ib_uverbs_create_qp *cmd = (const void *)(hdr + 1);
	const struct ohca_ibv_create_qp *drv = (const void *)(cmd + 1);
	struct {
		struct ib_uverbs_create_qp_resp core;
		struct ohca_ibv_create_qp_resp drv;
	} resp = {};
	int i;

	if (framing("CREATE_QP", hdr, len,
		    sizeof(*hdr) + sizeof(*cmd) + sizeof(*drv), sizeof(resp)))
		return -1;
	logf_("CREATE_QP type=%u pd=%u send_cq=%u recv_cq=%u caps wr %u/%u sge %u/%u inline %u sig_all %u"
	      " sq 0x%llx log %u stride %u rq 0x%llx log %u stride %u max_inline %u",
	      cmd->qp_type, cmd->pd_handle, cmd->send_cq_handle,
	      cmd->recv_cq_handle, cmd->max_send_wr, cmd->max_recv_wr,
	      cmd->max_send_sge, cmd->max_recv_sge, cmd->max_inline_data,
	      cmd->sq_sig_all, (unsigned long long)drv->sq_buf_addr,
	      drv->sq_log_size, drv->sq_log_stride,
	      (unsigned long long)drv->rq_buf_addr, drv->rq_log_size,
	      drv->rq_log_stride, drv->max_inline);
	/* What the kernel checks before pinning the rings. */
	if ((cmd->qp_type != IB_UVERBS_QPT_RC &&
	     cmd->qp_type != IB_UVERBS_QPT_UD) || cmd->is_srq ||
	    drv->sq_log_size > OHCA_WQ_LOG_MAX ||
	    drv->rq_log_size > OHCA_WQ_LOG_MAX ||
	    drv->sq_log_stride < OHCA_SQ_LOG_STRIDE_MIN ||
	    drv->rq_log_stride < OHCA_RQ_LOG_STRIDE_MIN ||
	    drv->sq_log_stride > OHCA_WQ_LOG_STRIDE_MAX ||
	    drv->rq_log_stride > OHCA_WQ_LOG_STRIDE_MAX ||
	    drv->max_inline > (1u << drv->sq_log_stride) -
			      (cmd->qp_type == IB_UVERBS_QPT_UD ?
			       OHCA_UD_WQE_HDR_LEN : 64) ||
	    drv->max_inline > FAKE_MAX_INLINE ||
	    (drv->comp_mask & ~OHCA_CREATE_QP_DB_RECORD) || drv->reserved ||
	    !db_record_ok(drv->comp_mask, OHCA_CREATE_QP_DB_RECORD,
			  drv->rq_db_addr) ||
	    cmd->max_send_wr != 1u << drv->sq_log_size ||
	    cmd->max_recv_wr != 1u << drv->rq_log_size ||
	    !page_aligned_zeroed(drv->sq_buf_addr,
				 (size_t)1 << (drv->sq_log_size + drv->sq_log_stride)) ||
	    !page_aligned_zeroed(drv->rq_buf_addr,
				 (size_t)1 << (drv->rq_log_size + drv->rq_log_stride))) {
		logf_("CREATE_QP bad driver data");
		errno = EINVAL;
		return -1;
	}
	i = alloc_slot(&fake_qps[0].used, sizeof(fake_qps[0]), FAKE_MAX_OBJ);
	if (i < 0) {
		errno = ENOMEM;
		return -1;
	}
	fake_qps[i].drv = *drv;
	fake_qps[i].core = *cmd;
	fake_qps[i].state = IBV_QPS_RESET;
	resp.core.qp_handle = i + 1;
	resp.core.qpn = FAKE_QPN_BASE + i;
	/* a kernel echoing something else: the provider reports its own */
	resp.core.max_send_wr = cmd->max_send_wr;
	resp.core.max_recv_wr = cmd->max_recv_wr;
	resp.core.max_send_sge = 1;
	resp.core.max_recv_sge = 1;
	resp.core.max_inline_data = 0;
	resp.drv.qpn = FAKE_QPN_BASE + i;
	memcpy((void *)(uintptr_t)cmd->response, &resp, sizeof(resp));
	logf_("CREATE_QP ok handle=%u qpn=0x%x", resp.core.qp_handle,
	      resp.drv.qpn);
	return len;
}

static struct fake_qp *qp_of(uint32_t handle)
{
	if (!handle || handle > FAKE_MAX_OBJ || !fake_qps[handle - 1].used)
		return NULL;
	return &fake_qps[handle - 1];
}

static ssize_t modify_qp(const struct ib_uverbs_cmd_hdr *hdr, size_t len)
{
	const struct ib_uverbs_modify_qp *cmd = (const void *)(hdr + 1);
	struct fake_qp *qp;

	if (framing("MODIFY_QP", hdr, len, sizeof(*hdr) + sizeof(*cmd), 0))
		return -1;
	qp = qp_of(cmd->qp_handle);
	if (!qp) {
		errno = EINVAL;
		return -1;
	}
	qp->last_attr_mask = cmd->attr_mask;
	if (cmd->attr_mask & IBV_QP_STATE)
		qp->state = cmd->qp_state;
	logf_("MODIFY_QP ok handle=%u mask=0x%x state=%u dest_qp=0x%x",
	      cmd->qp_handle, cmd->attr_mask, cmd->qp_state,
	      cmd->dest_qp_num);
	return len;
}

static ssize_t query_qp(const struct ib_uverbs_cmd_hdr *hdr, size_t len)
{
	const struct ib_uverbs_query_qp *cmd = (const void *)(hdr + 1);
	struct ib_uverbs_query_qp_resp resp = {};
	struct fake_qp *qp;

	if (framing("QUERY_QP", hdr, len, sizeof(*hdr) + sizeof(*cmd),
		    sizeof(resp)))
		return -1;
	qp = qp_of(cmd->qp_handle);
	if (!qp) {
		errno = EINVAL;
		return -1;
	}
	resp.qp_state = qp->state;
	resp.cur_qp_state = qp->state;
	resp.port_num = 1;
	resp.max_send_wr = 1;	/* the provider reports its own caps */
	resp.max_recv_wr = 1;
	resp.sq_sig_all = qp->core.sq_sig_all;
	memcpy((void *)(uintptr_t)cmd->response, &resp, sizeof(resp));
	logf_("QUERY_QP ok handle=%u state=%u", cmd->qp_handle, qp->state);
	return len;
}

static ssize_t destroy_qp(const struct ib_uverbs_cmd_hdr *hdr, size_t len)
{
	const struct ib_uverbs_destroy_qp *cmd = (const void *)(hdr + 1);
	struct ib_uverbs_destroy_qp_resp resp = {};
	struct fake_qp *qp;

	if (framing("DESTROY_QP", hdr, len, sizeof(*hdr) + sizeof(*cmd),
		    sizeof(resp)))
		return -1;
	qp = qp_of(cmd->qp_handle);
	if (!qp) {
		errno = EINVAL;
		return -1;
	}
	qp->used = 0;
	memcpy((void *)(uintptr_t)cmd->response, &resp, sizeof(resp));
	logf_("DESTROY_QP ok handle=%u", cmd->qp_handle);
	return len;
}

static ssize_t create_srq(const struct ib_uverbs_cmd_hdr *hdr, size_t len)
{
	const struct ib_uverbs_create_srq *cmd = (const void *)(hdr + 1);
	const struct ohca_ibv_create_srq *drv = (const void *)(cmd + 1);
	struct {
		struct ib_uverbs_create_srq_resp core;
		struct ohca_ibv_create_srq_resp drv;
	} resp = {};
	int i;

	if (framing("CREATE_SRQ", hdr, len,
		    sizeof(*hdr) + sizeof(*cmd) + sizeof(*drv), sizeof(resp)))
		return -1;
	logf_("CREATE_SRQ pd=%u max_wr=%u max_sge=%u limit=%u buf_addr=0x%llx log_size=%u log_stride=%u comp_mask=0x%x db_addr=0x%llx",
	      cmd->pd_handle, cmd->max_wr, cmd->max_sge, cmd->srq_limit,
	      (unsigned long long)drv->buf_addr, drv->log_size,
	      drv->log_stride, drv->comp_mask,
	      (unsigned long long)drv->db_addr);
	/* What the kernel checks before pinning the ring and the record. */
	if (drv->log_size < 1 || drv->log_size > OHCA_WQ_LOG_MAX ||
	    (1u << drv->log_size) < cmd->max_wr ||
	    drv->log_stride < OHCA_RQ_LOG_STRIDE_MIN ||
	    drv->log_stride > OHCA_WQ_LOG_STRIDE_MAX || drv->reserved0 ||
	    (drv->comp_mask & ~OHCA_CREATE_SRQ_DB_RECORD) ||
	    (drv->comp_mask && !fake_srq_db_record()) ||
	    !db_record_ok(drv->comp_mask, OHCA_CREATE_SRQ_DB_RECORD,
			  drv->db_addr) ||
	    !page_aligned_zeroed(drv->buf_addr,
				 (size_t)1 << (drv->log_size + drv->log_stride))) {
		logf_("CREATE_SRQ bad driver data");
		errno = EINVAL;
		return -1;
	}
	i = alloc_slot(&fake_srqs[0].used, sizeof(fake_srqs[0]), FAKE_MAX_OBJ);
	if (i < 0) {
		errno = ENOMEM;
		return -1;
	}
	fake_srqs[i].drv = *drv;
	resp.core.srq_handle = i + 1;
	resp.core.max_wr = 1u << drv->log_size;
	resp.core.max_sge = cmd->max_sge;
	resp.core.srqn = FAKE_SRQN_BASE + i;
	resp.drv.srqn = FAKE_SRQN_BASE + i;
	memcpy((void *)(uintptr_t)cmd->response, &resp, sizeof(resp));
	logf_("CREATE_SRQ ok handle=%u srqn=0x%x", resp.core.srq_handle,
	      resp.drv.srqn);
	return len;
}

static ssize_t destroy_srq(const struct ib_uverbs_cmd_hdr *hdr, size_t len)
{
	const struct ib_uverbs_destroy_srq *cmd = (const void *)(hdr + 1);
	struct ib_uverbs_destroy_srq_resp resp = {};

	if (framing("DESTROY_SRQ", hdr, len, sizeof(*hdr) + sizeof(*cmd),
		    sizeof(resp)))
		return -1;
	if (!cmd->srq_handle || cmd->srq_handle > FAKE_MAX_OBJ ||
	    !fake_srqs[cmd->srq_handle - 1].used) {
		errno = EINVAL;
		return -1;
	}
	fake_srqs[cmd->srq_handle - 1].used = 0;
	memcpy((void *)(uintptr_t)cmd->response, &resp, sizeof(resp));
	logf_("DESTROY_SRQ ok handle=%u", cmd->srq_handle);
	return len;
}

static ssize_t get_context(const struct ib_uverbs_cmd_hdr *hdr, size_t len)
{
	const struct ib_uverbs_get_context *cmd = (const void *)(hdr + 1);
	const struct ohca_ibv_alloc_ucontext *req = (const void *)(cmd + 1);
	struct {
		struct ib_uverbs_get_context_resp core;
		struct ohca_ibv_alloc_ucontext_resp drv;
	} resp = {};
	const char *caps;

	logf_("GET_CONTEXT in_words=%u out_words=%u len=%zu", hdr->in_words,
	      hdr->out_words, len);
	if (hdr->in_words * 4u != len || hdr->out_words * 4u != sizeof(resp) ||
	    len != sizeof(*hdr) + sizeof(*cmd) + sizeof(*req)) {
		logf_("GET_CONTEXT bad framing: expected in %zu out %zu bytes",
		      sizeof(*hdr) + sizeof(*cmd) + sizeof(*req), sizeof(resp));
		errno = EINVAL;
		return -1;
	}
	if (req->comp_mask || req->reserved) {
		logf_("GET_CONTEXT request with comp_mask 0x%x reserved 0x%x",
		      req->comp_mask, req->reserved);
		errno = EINVAL;
		return -1;
	}
	resp.core.async_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	resp.core.num_comp_vectors = 1;
	resp.drv.db_mmap_key = FAKE_DB_KEY;
	resp.drv.db_page_size = OHCA_DB_PAGE_SIZE;
	resp.drv.max_inline = FAKE_MAX_INLINE;
	caps = getenv("FAKE_UVERBS_DEVICE_CAPS");
	if (!caps || strcmp(caps, "none")) {
		resp.drv.comp_mask = OHCA_UCTX_RESP_DEVICE_CAPS;
		resp.drv.device_caps = caps ? (uint32_t)strtoul(caps, NULL, 16) :
					      FAKE_DEVICE_CAPS;
	}
	if (fake_db_record())
		resp.drv.comp_mask |= OHCA_UCTX_RESP_DB_RECORD;
	if (fake_srq_db_record())
		resp.drv.comp_mask |= OHCA_UCTX_RESP_SRQ_DB_RECORD;
	memcpy((void *)(uintptr_t)cmd->response, &resp, sizeof(resp));
	logf_("GET_CONTEXT ok comp_mask=0x%x device_caps=0x%x",
	      resp.drv.comp_mask, resp.drv.device_caps);
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
	resp.base.max_ah = 4096;	/* UD supported */
	resp.base.max_srq = 64;
	resp.base.max_srq_wr = 4096;
	resp.base.max_srq_sge = 4;
	resp.base.phys_port_cnt = 1;
	resp.response_length = out < sizeof(resp) ? out : sizeof(resp);
	memcpy((void *)(uintptr_t)ex->response, &resp, resp.response_length);
	logf_("QUERY_DEVICE_EX ok");
	return len;
}

/* What the kernel resolves for a user AH: the MAC of the destination. */
#define FAKE_AH_DMAC "\x02\x00\x00\x00\x00\x07"

static ssize_t create_ah(const struct ib_uverbs_cmd_hdr *hdr, size_t len)
{
	const struct ib_uverbs_create_ah *cmd = (const void *)(hdr + 1);
	struct {
		struct ib_uverbs_create_ah_resp core;
		struct ohca_ibv_create_ah_resp drv;
	} resp = {};

	if (framing("CREATE_AH", hdr, len, sizeof(*hdr) + sizeof(*cmd),
		    sizeof(resp)))
		return -1;
	logf_("CREATE_AH pd=%u port=%u is_global=%u sgid_index=%u hop_limit=%u",
	      cmd->pd_handle, cmd->attr.port_num, cmd->attr.is_global,
	      cmd->attr.grh.sgid_index, cmd->attr.grh.hop_limit);
	if (!cmd->attr.is_global) {
		errno = EINVAL;
		return -1;
	}
	resp.core.ah_handle = 1;
	memcpy(resp.drv.dmac, FAKE_AH_DMAC, 6);
	resp.drv.vlan_id = 0xffff;
	resp.drv.network_type = OHCA_NET_IPV4;
	memcpy((void *)(uintptr_t)cmd->response, &resp, sizeof(resp));
	logf_("CREATE_AH ok");
	return len;
}

static ssize_t destroy_ah(const struct ib_uverbs_cmd_hdr *hdr, size_t len)
{
	const struct ib_uverbs_destroy_ah *cmd = (const void *)(hdr + 1);

	if (len != sizeof(*hdr) + sizeof(*cmd) || cmd->ah_handle != 1) {
		errno = EINVAL;
		return -1;
	}
	logf_("DESTROY_AH ok");
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
	case IB_USER_VERBS_CMD_ALLOC_PD:
		return alloc_pd(hdr, len);
	case IB_USER_VERBS_CMD_DEALLOC_PD:
		return dealloc_pd(hdr, len);
	case IB_USER_VERBS_CMD_REG_MR:
		return reg_mr(hdr, len);
	case IB_USER_VERBS_CMD_DEREG_MR:
		return dereg_mr(hdr, len);
	case IB_USER_VERBS_CMD_CREATE_CQ:
		return create_cq(hdr, len);
	case IB_USER_VERBS_CMD_DESTROY_CQ:
		return destroy_cq(hdr, len);
	case IB_USER_VERBS_CMD_CREATE_QP:
		return create_qp(hdr, len);
	case IB_USER_VERBS_CMD_MODIFY_QP:
		return modify_qp(hdr, len);
	case IB_USER_VERBS_CMD_QUERY_QP:
		return query_qp(hdr, len);
	case IB_USER_VERBS_CMD_DESTROY_QP:
		return destroy_qp(hdr, len);
	case IB_USER_VERBS_CMD_CREATE_SRQ:
		return create_srq(hdr, len);
	case IB_USER_VERBS_CMD_DESTROY_SRQ:
		return destroy_srq(hdr, len);
	case IB_USER_VERBS_CMD_CREATE_AH:
		return create_ah(hdr, len);
	case IB_USER_VERBS_CMD_DESTROY_AH:
		return destroy_ah(hdr, len);
	case IB_USER_VERBS_CMD_FLAG_EXTENDED | IB_USER_VERBS_EX_CMD_CREATE_QP:
		/* Only an RSS QP comes this way; it is refused, as by a
		 * kernel without receive WQs. */
		logf_("EX_CREATE_QP len=%zu refused", len);
		errno = EOPNOTSUPP;
		return -1;
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
