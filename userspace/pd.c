// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libohca: protection domains, parent domains, and the memory of the
 * queues (rings) that a parent domain's allocator may supply.
 *
 * A parent domain is a protection domain with the caller's allocator for
 * queue memory attached. The kernel never sees it: it carries the handle
 * of the protection domain it stands for, so every command that names a
 * PD works unchanged, and the rings it allocates are pinned by the kernel
 * like any other user memory.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ohca.h"

/* ALLOC_PD: no driver data either way. */
struct ibv_pd *ohca_alloc_pd(struct ibv_context *ibctx)
{
	struct ib_uverbs_alloc_pd_resp resp = {};
	struct ibv_alloc_pd cmd = {};
	struct ohca_pd *pd;
	int err;

	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	err = ibv_cmd_alloc_pd(ibctx, &pd->ibv_pd, &cmd, sizeof(cmd),
			       &resp, sizeof(resp));
	if (err) {
		verbs_debug(&to_ohca_ctx(ibctx)->vctx,
			    "ALLOC_PD failed: errno %d\n", err);
		free(pd);
		errno = err;
		return NULL;
	}
	return &pd->ibv_pd;
}

/*
 * rdma-core 65: ALLOW_CC_UNPROTECTED_ALLOC lets the buffers of a
 * confidential-computing guest's parent domain come from memory shared
 * with the host. ohca's guest memory is all DMA-able (no bounce buffers,
 * IBV_DEVICE_CC_DMA_BOUNCE is not reported), so ordinary memory serves
 * and the permission needs nothing more.
 */
#if OHCA_RDMA_CORE_VERSION >= 65
#define OHCA_PARENT_DOMAIN_CC IBV_PARENT_DOMAIN_INIT_ATTR_ALLOW_CC_UNPROTECTED_ALLOC
#else
#define OHCA_PARENT_DOMAIN_CC 0
#endif
#define OHCA_PARENT_DOMAIN_MASK (IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | \
				 IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT | \
				 OHCA_PARENT_DOMAIN_CC)

struct ibv_pd *ohca_alloc_parent_domain(struct ibv_context *ibctx,
					struct ibv_parent_domain_init_attr *attr)
{
	struct ohca_context *ctx = to_ohca_ctx(ibctx);
	bool allocators = attr->comp_mask &
			  IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;
	struct ohca_pd *pdom, *pd;

	if (attr->comp_mask & ~(uint32_t)OHCA_PARENT_DOMAIN_MASK) {
		verbs_debug(&ctx->vctx,
			    "parent domain comp_mask %#x not supported\n",
			    attr->comp_mask);
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* No thread domains here (alloc_td is not offered), so any is foreign. */
	if (!attr->pd || attr->pd->context != ibctx || attr->td ||
	    (allocators && (!attr->alloc || !attr->free))) {
		errno = EINVAL;
		return NULL;
	}
	pd = to_ohca_pd(attr->pd);
	if (pd->protection) {
		verbs_debug(&ctx->vctx, "a parent domain of a parent domain\n");
		errno = EINVAL;
		return NULL;
	}
	pdom = calloc(1, sizeof(*pdom));
	if (!pdom) {
		errno = ENOMEM;
		return NULL;
	}
	pdom->ibv_pd.context = ibctx;
	pdom->ibv_pd.handle = pd->ibv_pd.handle;
	pdom->protection = pd;
	if (allocators) {
		pdom->alloc = attr->alloc;
		pdom->free = attr->free;
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pdom->pd_context = attr->pd_context;
	__atomic_add_fetch(&pd->users, 1, __ATOMIC_RELAXED);
	return &pdom->ibv_pd;
}

/*
 * A protection domain goes while parent domains stand for it only at the
 * price of their handles; a parent domain goes while a queue's memory came
 * from its allocator only at the price of freeing that memory later with a
 * stale context. Both are EBUSY, as the kernel answers for a PD in use.
 */
int ohca_dealloc_pd(struct ibv_pd *ibpd)
{
	struct ohca_pd *pd = to_ohca_pd(ibpd);
	int err;

	if (__atomic_load_n(&pd->users, __ATOMIC_RELAXED))
		return EBUSY;
	if (pd->protection) {
		__atomic_sub_fetch(&pd->protection->users, 1, __ATOMIC_RELAXED);
		free(pd);
		return 0;
	}
	err = ibv_cmd_dealloc_pd(ibpd);
	if (err)
		return err;
	free(pd);
	return 0;
}

struct ohca_pd *ohca_parent_domain(struct ibv_pd *ibpd)
{
	struct ohca_pd *pd = ibpd ? to_ohca_pd(ibpd) : NULL;

	return pd && pd->protection ? pd : NULL;
}

/*
 * A ring: page aligned, zeroed, kept out of fork()ed children. From the
 * allocator of @ring->pdom when it has one and does not defer to ours
 * (IBV_ALLOCATOR_USE_DEFAULT); the ring then holds a reference on the
 * parent domain until ohca_ring_free().
 */
int ohca_ring_alloc(struct ohca_ring *ring, size_t size)
{
	long page = sysconf(_SC_PAGESIZE);
	struct ohca_pd *pdom = ring->pdom;
	void *buf = IBV_ALLOCATOR_USE_DEFAULT;
	size_t len;

	if (page <= 0)
		page = 4096;
	len = (size + (size_t)page - 1) & ~((size_t)page - 1);
	ring->external = false;
	if (pdom && pdom->alloc) {
		buf = pdom->alloc(&pdom->ibv_pd, pdom->pd_context, len,
				  (size_t)page, ring->type);
		if (!buf)
			return ENOMEM;
		if (buf != IBV_ALLOCATOR_USE_DEFAULT &&
		    ((uintptr_t)buf & ((uintptr_t)page - 1))) {
			/* The kernel maps whole pages: they must be the ring's. */
			pdom->free(&pdom->ibv_pd, pdom->pd_context, buf,
				   ring->type);
			return EINVAL;
		}
	}
	if (buf == IBV_ALLOCATOR_USE_DEFAULT) {
		if (posix_memalign(&buf, (size_t)page, len))
			return ENOMEM;
	} else {
		ring->external = true;
	}
	memset(buf, 0, len);
	if (ibv_dontfork_range(buf, len)) {
		if (ring->external)
			pdom->free(&pdom->ibv_pd, pdom->pd_context, buf,
				   ring->type);
		else
			free(buf);
		return ENOMEM;
	}
	if (pdom)
		__atomic_add_fetch(&pdom->users, 1, __ATOMIC_RELAXED);
	ring->buf = buf;
	ring->len = len;
	return 0;
}

void ohca_ring_free(struct ohca_ring *ring)
{
	struct ohca_pd *pdom = ring->pdom;

	if (!ring->buf)
		return;
	ibv_dofork_range(ring->buf, ring->len);
	if (ring->external)
		pdom->free(&pdom->ibv_pd, pdom->pd_context, ring->buf,
			   ring->type);
	else
		free(ring->buf);
	if (pdom)
		__atomic_sub_fetch(&pdom->users, 1, __ATOMIC_RELAXED);
	ring->buf = NULL;
	ring->len = 0;
}
