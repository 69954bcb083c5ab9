// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libohca: doorbell records (OHCA_UCTX_RESP_DB_RECORD). A CQ's consumer
 * index and an RQ's producer index live in a struct ohca_db_record of a
 * page this context shares among its records (512 a page), pinned by the
 * kernel once per page; the device reads a record when it needs it, so
 * polling a CQ and posting a receive ring no MMIO doorbell.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ohca.h"

#define OHCA_DBREC_PAGE_SIZE	4096u
#define OHCA_DBREC_PER_PAGE	(OHCA_DBREC_PAGE_SIZE / sizeof(struct ohca_db_record))

struct ohca_dbrec_page {
	struct ohca_dbrec_page *next;
	struct ohca_db_record *recs;
	uint64_t used[OHCA_DBREC_PER_PAGE / 64];
	unsigned int nused;
};

/*
 * Whether this context uses records: the kernel takes them, and the
 * environment does not ask for MMIO doorbells (OHCA_DB_RECORD=0, to
 * compare both paths on one system).
 */
bool ohca_dbrec_wanted(uint32_t resp_comp_mask)
{
	const char *env = getenv("OHCA_DB_RECORD");

	if (!(resp_comp_mask & OHCA_UCTX_RESP_DB_RECORD))
		return false;
	return !env || strcmp(env, "0") != 0;
}

/* A zeroed record, or NULL (then the object uses MMIO doorbells). */
struct ohca_db_record *ohca_dbrec_alloc(struct ohca_context *ctx)
{
	struct ohca_db_record *rec = NULL;
	struct ohca_dbrec_page *p;
	unsigned int i;

	if (!ctx->use_dbrec)
		return NULL;
	pthread_mutex_lock(&ctx->dbrec_lock);
	for (p = ctx->dbrec_pages; p; p = p->next)
		if (p->nused < OHCA_DBREC_PER_PAGE)
			break;
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			goto out;
		if (posix_memalign((void **)&p->recs, OHCA_DBREC_PAGE_SIZE,
				   OHCA_DBREC_PAGE_SIZE)) {
			free(p);
			goto out;
		}
		memset(p->recs, 0, OHCA_DBREC_PAGE_SIZE);
		if (ibv_dontfork_range(p->recs, OHCA_DBREC_PAGE_SIZE)) {
			free(p->recs);
			free(p);
			goto out;
		}
		p->next = ctx->dbrec_pages;
		ctx->dbrec_pages = p;
	}
	for (i = 0; i < OHCA_DBREC_PER_PAGE; i++) {
		if (!(p->used[i / 64] & (1ull << (i % 64)))) {
			p->used[i / 64] |= 1ull << (i % 64);
			p->nused++;
			rec = &p->recs[i];
			memset(rec, 0, sizeof(*rec));
			break;
		}
	}
out:
	pthread_mutex_unlock(&ctx->dbrec_lock);
	return rec;
}

/* After the object's destruction: the device no longer reads @rec. */
void ohca_dbrec_free(struct ohca_context *ctx, struct ohca_db_record *rec)
{
	struct ohca_dbrec_page **pp, *p;
	size_t i;

	if (!rec)
		return;
	pthread_mutex_lock(&ctx->dbrec_lock);
	for (pp = &ctx->dbrec_pages; (p = *pp); pp = &p->next) {
		if (rec < p->recs || rec >= p->recs + OHCA_DBREC_PER_PAGE)
			continue;
		i = (size_t)(rec - p->recs);
		p->used[i / 64] &= ~(1ull << (i % 64));
		if (--p->nused == 0) {
			*pp = p->next;
			ibv_dofork_range(p->recs, OHCA_DBREC_PAGE_SIZE);
			free(p->recs);
			free(p);
		}
		break;
	}
	pthread_mutex_unlock(&ctx->dbrec_lock);
}

/* Every record's object is gone with the context. */
void ohca_dbrec_cleanup(struct ohca_context *ctx)
{
	struct ohca_dbrec_page *p;

	while ((p = ctx->dbrec_pages)) {
		ctx->dbrec_pages = p->next;
		ibv_dofork_range(p->recs, OHCA_DBREC_PAGE_SIZE);
		free(p->recs);
		free(p);
	}
	pthread_mutex_destroy(&ctx->dbrec_lock);
}
