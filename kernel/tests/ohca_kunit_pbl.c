// SPDX-License-Identifier: GPL-2.0
/*
 * ohca: KUnit tests of the page-list builder (ohca_pbl.c), linked into
 * ohca_kunit.ko when the driver has it. The user memory is a hand-built
 * ib_umem whose scatterlist mixes chunk sizes, as ib_umem_get() produces
 * for memory backed by 4 KiB pages and huge pages; no user pages are
 * pinned. The DMA addresses are made up: only the list is checked.
 */
#include <kunit/test.h>
#include <linux/dma-mapping.h>
#include <linux/scatterlist.h>
#include <rdma/ib_umem.h>

#include "ib/ohca_ib.h"

struct ohca_pbl_env {
	struct pci_dev pdev;
	struct ohca_ibdev *dev;
	struct ohca_pbl_mem mem;
	struct ohca_pbl pbl;
	struct ib_umem umem;
	bool have_sgt;
};

static int ohca_pbl_init(struct kunit *test)
{
	struct ohca_pbl_env *env;
	struct device *d;

	env = kunit_kzalloc(test, sizeof(*env), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, env);
	env->dev = kunit_kzalloc(test, sizeof(*env->dev), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, env->dev);
	env->dev->cdev = kunit_kzalloc(test, sizeof(*env->dev->cdev),
				       GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, env->dev->cdev);
	d = &env->pdev.dev;
	d->init_name = "ohca-kunit-pbl";
	d->coherent_dma_mask = DMA_BIT_MASK(64);
	d->dma_mask = &d->coherent_dma_mask;
	set_dev_node(d, NUMA_NO_NODE);
	env->dev->cdev->pdev = &env->pdev;
	test->priv = env;
	return 0;
}

static void ohca_pbl_exit(struct kunit *test)
{
	struct ohca_pbl_env *env = test->priv;

	if (!env)
		return;
	ohca_pbl_free(env->dev, &env->mem);
	if (env->have_sgt)
		sg_free_table(&env->umem.sgt_append.sgt);
}

struct chunk {
	u64 dma;
	u32 len;
};

/* A umem at user address @va over DMA chunks @c (in order). */
static struct ib_umem *make_umem(struct kunit *test, u64 va, size_t length,
				 const struct chunk *c, int n)
{
	struct ohca_pbl_env *env = test->priv;
	struct ib_umem *umem = &env->umem;
	struct scatterlist *sg;
	int i;

	KUNIT_ASSERT_EQ(test, sg_alloc_table(&umem->sgt_append.sgt, n,
					     GFP_KERNEL), 0);
	env->have_sgt = true;
	for_each_sg(umem->sgt_append.sgt.sgl, sg, n, i) {
		sg_dma_address(sg) = c[i].dma;
		sg_dma_len(sg) = c[i].len;
	}
	umem->sgt_append.sgt.nents = n;
	umem->ibdev = &env->dev->ibdev;
	umem->address = va;
	umem->iova = va;
	umem->length = length;
	return umem;
}

static u64 pbl_entry(struct ohca_pbl_env *env, u32 i)
{
	if (env->pbl.levels == 1)
		return le64_to_cpu(env->mem.top[i]);
	return le64_to_cpu(env->mem.leaf[i / OHCA_PBL_ENTRIES_PER_PAGE]
			   [i % OHCA_PBL_ENTRIES_PER_PAGE]);
}

/* 8 KiB of small pages, a 2 MiB huge page, one more page: 515 4 KiB
 * entries, so the list takes two levels.
 */
static void ohca_test_pbl_mixed_4k(struct kunit *test)
{
	struct ohca_pbl_env *env = test->priv;
	static const struct chunk c[] = {
		{ 0x10000000, SZ_8K }, { 0x20200000, SZ_2M }, { 0x30003000, SZ_4K },
	};
	struct ib_umem *umem;
	u32 i, k, n = 0;

	umem = make_umem(test, 0x7f0000001000ULL, SZ_8K + SZ_2M + SZ_4K, c, 3);
	KUNIT_ASSERT_EQ(test, ohca_pbl_from_umem(env->dev, umem, SZ_4K,
						 &env->pbl, &env->mem), 0);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(env->pbl.npages), 515U);
	KUNIT_EXPECT_EQ(test, env->pbl.page_shift, 12);
	KUNIT_EXPECT_EQ(test, env->pbl.levels, 2);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(env->pbl.addr), (u64)env->mem.top_dma);
	KUNIT_ASSERT_EQ(test, env->mem.nleaves, 2U);
	for (i = 0; i < env->mem.nleaves; i++)
		KUNIT_EXPECT_EQ(test, le64_to_cpu(env->mem.top[i]),
				(u64)env->mem.leaf_dma[i]);
	for (k = 0; k < ARRAY_SIZE(c); k++)
		for (i = 0; i < c[k].len / SZ_4K; i++, n++)
			KUNIT_EXPECT_EQ_MSG(test, pbl_entry(env, n),
					    c[k].dma + (u64)i * SZ_4K,
					    "entry %u", n);
	KUNIT_EXPECT_EQ(test, n, 515U);
	/* the rest of the last leaf is zero */
	KUNIT_EXPECT_EQ(test, le64_to_cpu(env->mem.leaf[1][3]), 0ULL);
}

/* Huge pages listed as 2 MiB blocks: one level, three entries. */
static void ohca_test_pbl_2m(struct kunit *test)
{
	struct ohca_pbl_env *env = test->priv;
	static const struct chunk c[] = {
		{ 0x40000000, SZ_4M }, { 0x80200000, SZ_2M },
	};
	struct ib_umem *umem;

	umem = make_umem(test, 0x7f0000200000ULL, SZ_4M + SZ_2M, c, 2);
	KUNIT_ASSERT_EQ(test, ohca_pbl_from_umem(env->dev, umem, SZ_2M,
						 &env->pbl, &env->mem), 0);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(env->pbl.npages), 3U);
	KUNIT_EXPECT_EQ(test, env->pbl.page_shift, 21);
	KUNIT_EXPECT_EQ(test, env->pbl.levels, 1);
	KUNIT_EXPECT_EQ(test, pbl_entry(env, 0), 0x40000000ULL);
	KUNIT_EXPECT_EQ(test, pbl_entry(env, 1), 0x40200000ULL);
	KUNIT_EXPECT_EQ(test, pbl_entry(env, 2), 0x80200000ULL);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(env->mem.top[3]), 0ULL);
}

/* A region that starts inside its first page. */
static void ohca_test_pbl_offset(struct kunit *test)
{
	struct ohca_pbl_env *env = test->priv;
	static const struct chunk c[] = {
		{ 0x50000000, SZ_4K }, { 0x50007000, SZ_4K },
	};
	struct ib_umem *umem;

	umem = make_umem(test, 0x7f0000000100ULL, SZ_8K - 0x100, c, 2);
	KUNIT_ASSERT_EQ(test, ohca_pbl_from_umem(env->dev, umem, SZ_4K,
						 &env->pbl, &env->mem), 0);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(env->pbl.npages), 2U);
	KUNIT_EXPECT_EQ(test, pbl_entry(env, 0), 0x50000000ULL);
	KUNIT_EXPECT_EQ(test, pbl_entry(env, 1), 0x50007000ULL);
}

static void ohca_test_pbl_too_big(struct kunit *test)
{
	struct ohca_pbl_env *env = test->priv;
	static const struct chunk c[] = { { 0x60000000, SZ_4K } };
	struct ib_umem *umem;

	umem = make_umem(test, 0x7f0000000000ULL,
			 (size_t)(OHCA_PBL_MAX_PAGES + 1) * SZ_4K, c, 1);
	KUNIT_EXPECT_EQ(test, ohca_pbl_from_umem(env->dev, umem, SZ_4K,
						 &env->pbl, &env->mem), -EINVAL);
	KUNIT_EXPECT_NULL(test, env->mem.top);
}

/* Coherent buffers: 4 KiB entries, one level up to 512 pages. */
static void ohca_test_pbl_coherent(struct kunit *test)
{
	struct ohca_pbl_env *env = test->priv;
	static const u32 pages[] = { 1, 4, OHCA_PBL_ENTRIES_PER_PAGE,
				     OHCA_PBL_ENTRIES_PER_PAGE + 1, 3000 };
	int k;
	u32 i;

	for (k = 0; k < ARRAY_SIZE(pages); k++) {
		size_t bytes = (size_t)pages[k] * SZ_4K - (pages[k] > 1 ? 100 : 0);

		KUNIT_ASSERT_EQ(test, ohca_pbl_from_coherent(env->dev, 0x12345000,
							     bytes, &env->pbl,
							     &env->mem), 0);
		KUNIT_EXPECT_EQ(test, le32_to_cpu(env->pbl.npages), pages[k]);
		KUNIT_EXPECT_EQ(test, env->pbl.page_shift, 12);
		KUNIT_EXPECT_EQ(test, env->pbl.levels,
				pages[k] > OHCA_PBL_ENTRIES_PER_PAGE ? 2 : 1);
		for (i = 0; i < pages[k]; i++)
			if (pbl_entry(env, i) != 0x12345000ULL + (u64)i * SZ_4K)
				break;
		KUNIT_EXPECT_EQ_MSG(test, i, pages[k], "%u pages", pages[k]);
		ohca_pbl_free(env->dev, &env->mem);
		KUNIT_EXPECT_NULL(test, env->mem.top);
	}
}

static struct kunit_case ohca_pbl_cases[] = {
	KUNIT_CASE(ohca_test_pbl_mixed_4k),
	KUNIT_CASE(ohca_test_pbl_2m),
	KUNIT_CASE(ohca_test_pbl_offset),
	KUNIT_CASE(ohca_test_pbl_too_big),
	KUNIT_CASE(ohca_test_pbl_coherent),
	{}
};

static struct kunit_suite ohca_pbl_suite = {
	.name = "ohca_pbl",
	.init = ohca_pbl_init,
	.exit = ohca_pbl_exit,
	.test_cases = ohca_pbl_cases,
};

kunit_test_suites(&ohca_pbl_suite);
