// SPDX-License-Identifier: GPL-2.0
/*
 * ohca: KUnit tests of the driver's own logic, run against the real driver
 * code. Built only against the debug kernel (CONFIG_KUNIT): `make -C kernel
 * kunit` -> build/kernel-kunit/ohca_kunit.ko; the suites run when the
 * module is loaded, results in /sys/kernel/debug/kunit/<suite>/results.
 *
 * The driver files whose static helpers are tested are included here (the
 * driver itself has no test hooks); the other driver files, except
 * ohca_main.c (PCI probe and module init), are linked into this module as
 * objects (see Kbuild). No PCI device is needed: a fake pci_dev with a DMA
 * mask gives dma-direct allocations, BAR0 is a kzalloc'd register file,
 * and a "firmware" kthread consumes the command ring and answers on EQ 0
 * through the driver's real interrupt handler.
 *
 * The module is GPL: every KUnit export is EXPORT_SYMBOL_GPL.
 */
#include <kunit/test.h>
#include <linux/delay.h>
#include <linux/dma-mapping.h>
#include <linux/etherdevice.h>
#include <linux/kthread.h>
#include <linux/skbuff.h>
#include <net/sch_generic.h>

#include "core/ohca_cmdq.c"
#include "core/ohca_eq.c"
#include "core/ohca_netdev.c"
#include "ib/ohca_verbs.c"

/* --------------------------------------------------------------------- */
/* Fixture: a fake device with a register file and a firmware thread.    */

#define FW_EQ_LOG	2	/* 4 EQ entries: the phase flips every 4 events */

struct ohca_fake_fw {
	struct ohca_dev *dev;
	struct task_struct *task;
	u32 cmd_ci;		/* commands consumed (free running) */
	u32 eq_pi;		/* events produced (free running) */
	atomic_t ncmds;		/* commands answered */
	/* set by the test before posting; read by the thread */
	u8 status;
	u32 syndrome;
	u8 out_fill;
	bool hold;		/* do not answer (simulate a timeout) */
	bool release;		/* answer the held command now */
	u16 held_token;
	bool have_held;
	/* recorded by the thread for the last command */
	struct ohca_cmd last;
	u8 last_in[OHCA_CMD_MAILBOX_MAX];
	bool bad_addr;		/* a mailbox address the driver did not own */
};

struct ohca_kunit_env {
	struct pci_dev *pdev;
	struct ohca_dev *dev;
	struct ohca_ibdev *ibd;		/* the RDMA side, on @dev */
	void *regs;
	struct ohca_fake_fw fw;
	bool cmdq_ready;
};

static struct ohca_kunit_env *ohca_env_alloc(struct kunit *test)
{
	struct ohca_kunit_env *env;
	struct device *d;

	env = kunit_kzalloc(test, sizeof(*env), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, env);
	env->pdev = kunit_kzalloc(test, sizeof(*env->pdev), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, env->pdev);
	env->dev = kunit_kzalloc(test, sizeof(*env->dev), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, env->dev);
	env->ibd = kunit_kzalloc(test, sizeof(*env->ibd), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, env->ibd);
	env->ibd->cdev = env->dev;
	env->regs = kunit_kzalloc(test, OHCA_REGS_BAR_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, env->regs);

	d = &env->pdev->dev;
	d->init_name = "ohca-kunit";
	d->coherent_dma_mask = DMA_BIT_MASK(64);
	d->dma_mask = &d->coherent_dma_mask;
	set_dev_node(d, NUMA_NO_NODE);
	/* No bus behind it: config space accesses return at once. */
	env->pdev->error_state = pci_channel_io_perm_failure;

	env->dev->pdev = env->pdev;
	env->dev->regs = (void __iomem *)env->regs;
	env->dev->db_bar_len = OHCA_DB_BAR_SIZE;
	env->fw.dev = env->dev;
	test->priv = env;
	return env;
}

static u32 reg_rd(struct ohca_kunit_env *env, enum ohca_reg reg)
{
	return readl((void __iomem *)env->regs + reg);
}

/* The device side of EQ 0: write one event with the owner bit of its pass. */
static void fw_post_eqe(struct ohca_eq *eq, u32 pi, u8 type, u16 code,
			u32 p0, u32 p1)
{
	struct ohca_eqe *eqe = &eq->ring[pi & (BIT(eq->log_size) - 1)];

	eqe->type = type;
	eqe->code = cpu_to_le16(code);
	eqe->param0 = cpu_to_le32(p0);
	eqe->param1 = cpu_to_le32(p1);
	dma_wmb();
	WRITE_ONCE(eqe->flags, ((pi >> eq->log_size) & 1) ? 0 : OHCA_EQE_OWNER);
}

static void fw_complete(struct ohca_fake_fw *fw, u16 token, u8 status,
			u32 syndrome)
{
	struct ohca_dev *dev = fw->dev;

	fw_post_eqe(&dev->eq0, fw->eq_pi++, OHCA_EQE_CMD_DONE, status, token,
		    syndrome);
	/* The real interrupt handler, called from the "device" thread. */
	ohca_eq0_irq(0, dev);
}

static void fw_handle(struct ohca_fake_fw *fw, struct ohca_cmd *e)
{
	struct ohca_dev *dev = fw->dev;
	u16 token = le16_to_cpu(e->token);
	struct ohca_cmd_ctx *ctx = &dev->cmdq.ctx[token & (OHCA_CMDQ_DEPTH - 1)];
	u16 in_len = le16_to_cpu(e->in_len);
	u16 out_len = le16_to_cpu(e->out_len);

	fw->last = *e;
	memset(fw->last_in, 0, sizeof(fw->last_in));
	if (in_len > OHCA_CMD_MAILBOX_MAX) {
		fw->bad_addr = true;
	} else if (in_len > OHCA_CMD_INLINE_MAX) {
		if (le64_to_cpu(e->in_addr) != ctx->in_dma)
			fw->bad_addr = true;
		else
			memcpy(fw->last_in, ctx->in_buf, in_len);
	} else {
		memcpy(fw->last_in, e->inline_in, in_len);
	}
	if (out_len) {
		if (le64_to_cpu(e->out_addr) != ctx->out_dma ||
		    out_len > OHCA_CMD_MAILBOX_MAX)
			fw->bad_addr = true;
		else
			memset(ctx->out_buf, READ_ONCE(fw->out_fill), out_len);
	}
	if (READ_ONCE(fw->hold)) {
		fw->held_token = token;
		WRITE_ONCE(fw->have_held, true);
		return;
	}
	/* Counted first: the waiter may return as soon as it completes. */
	atomic_inc(&fw->ncmds);
	fw_complete(fw, token, READ_ONCE(fw->status), READ_ONCE(fw->syndrome));
}

static int fw_thread(void *arg)
{
	struct ohca_fake_fw *fw = arg;
	struct ohca_dev *dev = fw->dev;

	while (!kthread_should_stop()) {
		u16 pi = readl(dev->regs + OHCA_REG_CMDQ_PI) & OHCA_RING_INDEX_MASK;

		while ((u16)fw->cmd_ci != pi) {
			struct ohca_cmd e;

			memcpy(&e, &dev->cmdq.ring[fw->cmd_ci & (OHCA_CMDQ_DEPTH - 1)],
			       sizeof(e));
			fw->cmd_ci++;
			writel(fw->cmd_ci & OHCA_RING_INDEX_MASK,
			       dev->regs + OHCA_REG_CMDQ_CI);
			fw_handle(fw, &e);
		}
		if (READ_ONCE(fw->release) && READ_ONCE(fw->have_held)) {
			WRITE_ONCE(fw->have_held, false);
			WRITE_ONCE(fw->release, false);
			atomic_inc(&fw->ncmds);
			fw_complete(fw, fw->held_token, OHCA_STATUS_OK, 0);
		}
		usleep_range(100, 300);
	}
	return 0;
}

/* A device with a live command queue and EQ 0 answered by fw_thread. */
static int ohca_cmd_env_init(struct kunit *test)
{
	struct ohca_kunit_env *env = ohca_env_alloc(test);
	struct ohca_dev *dev = env->dev;

	KUNIT_ASSERT_EQ(test, ohca_cmdq_init(dev), 0);
	env->cmdq_ready = true;
	dev->eq0.log_size = FW_EQ_LOG;
	dev->eq0.ci = 0;
	dev->eq0.ring = kunit_kcalloc(test, BIT(FW_EQ_LOG),
				      sizeof(*dev->eq0.ring), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, dev->eq0.ring);
	env->fw.task = kthread_run(fw_thread, &env->fw, "ohca-kunit-fw");
	KUNIT_ASSERT_FALSE(test, IS_ERR(env->fw.task));
	return 0;
}

static void ohca_cmd_env_exit(struct kunit *test)
{
	struct ohca_kunit_env *env = test->priv;

	if (!env)
		return;
	if (env->fw.task && !IS_ERR(env->fw.task))
		kthread_stop(env->fw.task);
	if (env->cmdq_ready)
		ohca_cmdq_destroy(env->dev);
}

/* --------------------------------------------------------------------- */
/* Suite ohca_cmd: entry encoding, status decoding, the slot allocator.   */

static void ohca_test_status_to_errno(struct kunit *test)
{
	static const struct { u8 status; int err; } map[] = {
		{ OHCA_STATUS_OK, 0 },
		{ OHCA_STATUS_BAD_OPCODE, -EOPNOTSUPP },
		{ OHCA_STATUS_BAD_LEN, -EINVAL },
		{ OHCA_STATUS_BAD_FIELD, -EINVAL },
		{ OHCA_STATUS_RESERVED_NONZERO, -EINVAL },
		{ OHCA_STATUS_BAD_ADDR, -EFAULT },
		{ OHCA_STATUS_NO_RESOURCES, -ENOMEM },
		{ OHCA_STATUS_BAD_HANDLE, -ENOENT },
		{ OHCA_STATUS_BAD_STATE, -EBUSY },
		{ OHCA_STATUS_INTERNAL, -EIO },
		{ 0x7f, -EIO },
		{ 0xff, -EIO },
	};
	int i;

	for (i = 0; i < ARRAY_SIZE(map); i++)
		KUNIT_EXPECT_EQ_MSG(test, ohca_status_to_errno(map[i].status),
				    map[i].err, "status 0x%02x", map[i].status);
}

/* Audit N5: what a caller provokes at will is logged at debug level. */
static void ohca_test_status_caller_caused(struct kunit *test)
{
	static const u8 caller[] = {
		OHCA_STATUS_NO_RESOURCES, OHCA_STATUS_BAD_FIELD,
		OHCA_STATUS_BAD_STATE,
	};
	static const u8 other[] = {
		OHCA_STATUS_BAD_OPCODE, OHCA_STATUS_BAD_LEN,
		OHCA_STATUS_BAD_ADDR, OHCA_STATUS_BAD_HANDLE,
		OHCA_STATUS_RESERVED_NONZERO, OHCA_STATUS_INTERNAL, 0xff,
	};
	int i;

	for (i = 0; i < ARRAY_SIZE(caller); i++)
		KUNIT_EXPECT_TRUE_MSG(test, ohca_status_caller_caused(caller[i]),
				      "status 0x%02x", caller[i]);
	for (i = 0; i < ARRAY_SIZE(other); i++)
		KUNIT_EXPECT_FALSE_MSG(test, ohca_status_caller_caused(other[i]),
				       "status 0x%02x", other[i]);
}

static void ohca_test_names(struct kunit *test)
{
	KUNIT_EXPECT_STREQ(test, ohca_cmd_name(OHCA_CMD_NOP), "NOP");
	KUNIT_EXPECT_STREQ(test, ohca_cmd_name(OHCA_CMD_QUERY_STATS),
			   "QUERY_STATS");
	KUNIT_EXPECT_STREQ(test, ohca_cmd_name(0xffff), "UNKNOWN");
	KUNIT_EXPECT_STREQ(test, ohca_status_name(OHCA_STATUS_BAD_STATE),
			   "BAD_STATE");
	KUNIT_EXPECT_STREQ(test, ohca_status_name(0xee), "UNKNOWN");
}

static void ohca_test_cmdq_init_regs(struct kunit *test)
{
	struct ohca_kunit_env *env = test->priv;
	struct ohca_cmdq *cmdq = &env->dev->cmdq;
	int i;

	KUNIT_EXPECT_EQ(test, reg_rd(env, OHCA_REG_CMDQ_BASE_LO),
			lower_32_bits(cmdq->ring_dma));
	KUNIT_EXPECT_EQ(test, reg_rd(env, OHCA_REG_CMDQ_BASE_HI),
			upper_32_bits(cmdq->ring_dma));
	KUNIT_EXPECT_EQ(test, reg_rd(env, OHCA_REG_CMDQ_LOG_SIZE),
			(u32)OHCA_CMDQ_LOG);
	for (i = 0; i < OHCA_CMDQ_DEPTH; i++) {
		KUNIT_EXPECT_EQ(test, cmdq->ctx[i].state, OHCA_CTX_FREE);
		KUNIT_EXPECT_EQ(test, cmdq->ctx[i].out_dma,
				cmdq->ctx[i].in_dma + OHCA_CMD_MAILBOX_MAX);
	}
}

static void ohca_test_exec_inline(struct kunit *test)
{
	struct ohca_kunit_env *env = test->priv;
	struct ohca_set_port_in in = {
		.port = 1,
		.mask = cpu_to_le32(0x3),
		.mtu = cpu_to_le32(1500),
		.rx_mode = cpu_to_le32(0x5),
	};
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_SET_PORT,
		.in = &in,
		.in_len = sizeof(in),
	};
	struct ohca_cmd *e = &env->fw.last;

	BUILD_BUG_ON(sizeof(in) > OHCA_CMD_INLINE_MAX);
	KUNIT_ASSERT_EQ(test, ohca_cmd_exec(env->dev, &args), 0);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(e->opcode), (u16)OHCA_CMD_SET_PORT);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(e->in_len), (u16)sizeof(in));
	KUNIT_EXPECT_EQ(test, le16_to_cpu(e->out_len), 0);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(e->in_addr), 0ULL);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(e->out_addr), 0ULL);
	KUNIT_EXPECT_EQ(test, e->status, 0);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(e->syndrome), 0U);
	KUNIT_EXPECT_EQ(test, memcmp(env->fw.last_in, &in, sizeof(in)), 0);
	KUNIT_EXPECT_FALSE(test, env->fw.bad_addr);
	/* the context went back to the pool */
	KUNIT_EXPECT_EQ(test, env->dev->cmdq.ctx[le16_to_cpu(e->token) &
			(OHCA_CMDQ_DEPTH - 1)].state, OHCA_CTX_FREE);
}

static void ohca_test_exec_mailbox(struct kunit *test)
{
	struct ohca_kunit_env *env = test->priv;
	u16 lens[] = { OHCA_CMD_INLINE_MAX, OHCA_CMD_INLINE_MAX + 1, 1000,
		       OHCA_CMD_MAILBOX_MAX };
	u8 *in, *out;
	int i, j;

	in = kunit_kmalloc(test, OHCA_CMD_MAILBOX_MAX, GFP_KERNEL);
	out = kunit_kmalloc(test, OHCA_CMD_MAILBOX_MAX, GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, in);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, out);
	for (j = 0; j < OHCA_CMD_MAILBOX_MAX; j++)
		in[j] = j * 7 + 3;

	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		struct ohca_cmd_args args = {
			.opcode = OHCA_CMD_QUERY_STATS,
			.in = in,
			.in_len = lens[i],
			.out = out,
			.out_len = lens[i],
		};
		struct ohca_cmd *e = &env->fw.last;
		u16 token;

		WRITE_ONCE(env->fw.out_fill, 0xa0 + i);
		memset(out, 0, OHCA_CMD_MAILBOX_MAX);
		KUNIT_ASSERT_EQ(test, ohca_cmd_exec(env->dev, &args), 0);
		token = le16_to_cpu(e->token);
		KUNIT_EXPECT_EQ(test, le16_to_cpu(e->in_len), lens[i]);
		KUNIT_EXPECT_EQ(test, le16_to_cpu(e->out_len), lens[i]);
		if (lens[i] > OHCA_CMD_INLINE_MAX) {
			struct ohca_cmd_ctx *ctx =
				&env->dev->cmdq.ctx[token & (OHCA_CMDQ_DEPTH - 1)];

			KUNIT_EXPECT_EQ(test, le64_to_cpu(e->in_addr),
					(u64)ctx->in_dma);
		} else {
			KUNIT_EXPECT_EQ(test, le64_to_cpu(e->in_addr), 0ULL);
		}
		KUNIT_EXPECT_EQ(test, memcmp(env->fw.last_in, in, lens[i]), 0);
		KUNIT_EXPECT_FALSE(test, env->fw.bad_addr);
		/* output copied back, exactly out_len bytes */
		KUNIT_EXPECT_EQ(test, out[0], (u8)(0xa0 + i));
		KUNIT_EXPECT_EQ(test, out[lens[i] - 1], (u8)(0xa0 + i));
		if (lens[i] < OHCA_CMD_MAILBOX_MAX)
			KUNIT_EXPECT_EQ(test, out[lens[i]], 0);
	}
}

static void ohca_test_exec_status(struct kunit *test)
{
	struct ohca_kunit_env *env = test->priv;
	static const u8 st[] = { OHCA_STATUS_BAD_OPCODE, OHCA_STATUS_BAD_LEN,
				 OHCA_STATUS_BAD_ADDR, OHCA_STATUS_NO_RESOURCES,
				 OHCA_STATUS_BAD_HANDLE, OHCA_STATUS_BAD_STATE,
				 OHCA_STATUS_INTERNAL, 0x42 };
	u32 out = 0x12345678;
	int i;

	for (i = 0; i < ARRAY_SIZE(st); i++) {
		struct ohca_cmd_args args = {
			.opcode = OHCA_CMD_NOP,
			.out = &out,
			.out_len = sizeof(out),
		};

		WRITE_ONCE(env->fw.status, st[i]);
		WRITE_ONCE(env->fw.syndrome, 0x1000 + i);
		WRITE_ONCE(env->fw.out_fill, 0xee);
		KUNIT_EXPECT_EQ_MSG(test, ohca_cmd_exec(env->dev, &args),
				    ohca_status_to_errno(st[i]),
				    "status 0x%02x", st[i]);
		/* no output copied on failure */
		KUNIT_EXPECT_EQ(test, out, 0x12345678U);
	}
	WRITE_ONCE(env->fw.status, OHCA_STATUS_OK);
}

/*
 * The slot allocator: DEPTH contexts, each taken once; the next taker
 * waits and gives up after OHCA_CMD_TIMEOUT_MS; a freed context is reused
 * with a new sequence number in its token.
 */
static void ohca_test_slot_exhaustion(struct kunit *test)
{
	struct ohca_kunit_env *env = test->priv;
	struct ohca_dev *dev = env->dev;
	struct ohca_cmd_ctx *ctx[OHCA_CMDQ_DEPTH], *extra;
	unsigned long seen = 0;
	u16 old_token;
	int i;

	kthread_stop(env->fw.task);	/* nothing is posted here */
	env->fw.task = NULL;

	for (i = 0; i < OHCA_CMDQ_DEPTH; i++) {
		ctx[i] = ohca_ctx_get(dev);
		KUNIT_ASSERT_FALSE(test, IS_ERR(ctx[i]));
		KUNIT_EXPECT_EQ(test, ctx[i]->state, OHCA_CTX_POSTED);
		/* token: context index in the low bits */
		KUNIT_EXPECT_PTR_EQ(test, ctx[i],
				    &dev->cmdq.ctx[ctx[i]->token & (OHCA_CMDQ_DEPTH - 1)]);
		KUNIT_EXPECT_FALSE(test, test_bit(ctx[i] - dev->cmdq.ctx, &seen));
		__set_bit(ctx[i] - dev->cmdq.ctx, &seen);
	}
	extra = ohca_ctx_get(dev);
	KUNIT_EXPECT_TRUE(test, IS_ERR(extra));
	KUNIT_EXPECT_EQ(test, PTR_ERR(extra), -ETIMEDOUT);

	old_token = ctx[3]->token;
	ohca_ctx_put(dev, ctx[3]);
	KUNIT_EXPECT_EQ(test, ctx[3]->state, OHCA_CTX_FREE);
	extra = ohca_ctx_get(dev);
	KUNIT_ASSERT_FALSE(test, IS_ERR(extra));
	KUNIT_EXPECT_PTR_EQ(test, extra, ctx[3]);
	KUNIT_EXPECT_EQ(test, extra->token & (OHCA_CMDQ_DEPTH - 1),
			old_token & (OHCA_CMDQ_DEPTH - 1));
	KUNIT_EXPECT_NE(test, extra->token, old_token);

	for (i = 0; i < OHCA_CMDQ_DEPTH; i++)
		ohca_ctx_put(dev, ctx[i]);
	/* all DEPTH free again */
	for (i = 0; i < OHCA_CMDQ_DEPTH; i++)
		KUNIT_EXPECT_EQ(test, down_trylock(&dev->cmdq.sem), 0);
	KUNIT_EXPECT_NE(test, down_trylock(&dev->cmdq.sem), 0);
	for (i = 0; i < OHCA_CMDQ_DEPTH; i++)
		up(&dev->cmdq.sem);
}

/* The 16-bit token: index | seq << LOG, the sequence wraps. */
static void ohca_test_token_wrap(struct kunit *test)
{
	struct ohca_kunit_env *env = test->priv;
	struct ohca_dev *dev = env->dev;
	struct ohca_cmd_ctx *a, *b;
	u16 top = 0xffff >> OHCA_CMDQ_LOG;

	kthread_stop(env->fw.task);
	env->fw.task = NULL;

	dev->cmdq.seq = top;
	a = ohca_ctx_get(dev);
	KUNIT_ASSERT_FALSE(test, IS_ERR(a));
	KUNIT_EXPECT_EQ(test, a->token,
			(u16)((top << OHCA_CMDQ_LOG) | (a - dev->cmdq.ctx)));
	b = ohca_ctx_get(dev);
	KUNIT_ASSERT_FALSE(test, IS_ERR(b));
	KUNIT_EXPECT_EQ(test, b->token, (u16)(b - dev->cmdq.ctx));
	ohca_ctx_put(dev, a);
	ohca_ctx_put(dev, b);
}

/* Completions: stale tokens dropped, late ones give the context back. */
static void ohca_test_complete_tokens(struct kunit *test)
{
	struct ohca_kunit_env *env = test->priv;
	struct ohca_dev *dev = env->dev;
	struct ohca_eqe eqe = { .type = OHCA_EQE_CMD_DONE };
	struct ohca_cmd_ctx *ctx;

	kthread_stop(env->fw.task);
	env->fw.task = NULL;

	ctx = ohca_ctx_get(dev);
	KUNIT_ASSERT_FALSE(test, IS_ERR(ctx));

	/* same slot, earlier sequence: dropped */
	eqe.param0 = cpu_to_le32((u16)(ctx->token - OHCA_CMDQ_DEPTH));
	ohca_cmdq_complete(dev, &eqe);
	KUNIT_EXPECT_EQ(test, ctx->state, OHCA_CTX_POSTED);
	KUNIT_EXPECT_FALSE(test, completion_done(&ctx->done));

	eqe.param0 = cpu_to_le32(ctx->token);
	eqe.code = cpu_to_le16(OHCA_STATUS_BAD_FIELD);
	eqe.param1 = cpu_to_le32(0xabcd);
	ohca_cmdq_complete(dev, &eqe);
	KUNIT_EXPECT_EQ(test, ctx->state, OHCA_CTX_DONE);
	KUNIT_EXPECT_TRUE(test, completion_done(&ctx->done));
	KUNIT_EXPECT_EQ(test, ctx->status, (u8)OHCA_STATUS_BAD_FIELD);
	KUNIT_EXPECT_EQ(test, ctx->syndrome, 0xabcdU);

	/* a second completion for a finished command: dropped */
	ohca_cmdq_complete(dev, &eqe);
	KUNIT_EXPECT_EQ(test, ctx->state, OHCA_CTX_DONE);
	ohca_ctx_put(dev, ctx);

	/* an abandoned (timed out) command: its late completion frees it */
	ctx = ohca_ctx_get(dev);
	KUNIT_ASSERT_FALSE(test, IS_ERR(ctx));
	ctx->state = OHCA_CTX_ABANDONED;	/* what post_wait does on timeout */
	eqe.param0 = cpu_to_le32(ctx->token);
	eqe.code = cpu_to_le16(OHCA_STATUS_OK);
	ohca_cmdq_complete(dev, &eqe);
	KUNIT_EXPECT_EQ(test, ctx->state, OHCA_CTX_FREE);
	KUNIT_EXPECT_EQ(test, dev->cmdq.sem.count, (unsigned int)OHCA_CMDQ_DEPTH);
}

/*
 * A command the device does not answer in time: the device is treated as
 * dead, so the context comes back at once, the next command fails without
 * waiting out another timeout, and the late completion is dropped.
 */
static void ohca_test_exec_timeout_dead(struct kunit *test)
{
	struct ohca_kunit_env *env = test->priv;
	struct ohca_dev *dev = env->dev;
	struct ohca_cmd_args args = { .opcode = OHCA_CMD_NOP };
	unsigned long start;
	int i;

	WRITE_ONCE(env->fw.hold, true);
	KUNIT_EXPECT_EQ(test, ohca_cmd_exec(dev, &args), -ETIMEDOUT);
	WRITE_ONCE(env->fw.hold, false);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(env->fw.have_held));
	KUNIT_EXPECT_TRUE(test, test_bit(OHCA_FLAG_FATAL, &dev->flags));
	KUNIT_EXPECT_EQ(test, dev->cmdq.sem.count, (unsigned int)OHCA_CMDQ_DEPTH);

	/* ten more commands cost nothing like ten timeouts */
	start = jiffies;
	for (i = 0; i < 10; i++)
		KUNIT_EXPECT_EQ(test, ohca_cmd_exec(dev, &args), -EIO);
	KUNIT_EXPECT_LT(test, jiffies - start,
			msecs_to_jiffies(OHCA_CMD_TIMEOUT_MS));
	KUNIT_EXPECT_EQ(test, reg_rd(env, OHCA_REG_CMDQ_PI), 1U);

	/* the late completion finds its context free and is dropped */
	WRITE_ONCE(env->fw.release, true);
	for (i = 0; i < 2000 && READ_ONCE(env->fw.have_held); i++)
		usleep_range(1000, 2000);
	KUNIT_EXPECT_FALSE(test, READ_ONCE(env->fw.have_held));
	KUNIT_EXPECT_EQ(test, dev->cmdq.sem.count, (unsigned int)OHCA_CMDQ_DEPTH);
	for (i = 0; i < OHCA_CMDQ_DEPTH; i++)
		KUNIT_EXPECT_EQ(test, dev->cmdq.ctx[i].state, OHCA_CTX_FREE);
}

/* A fatal device fails waiters and returns abandoned contexts. */
static void ohca_test_fatal(struct kunit *test)
{
	struct ohca_kunit_env *env = test->priv;
	struct ohca_dev *dev = env->dev;
	struct ohca_cmd_args args = { .opcode = OHCA_CMD_NOP };
	struct ohca_cmd_ctx *posted, *abandoned;

	kthread_stop(env->fw.task);
	env->fw.task = NULL;

	posted = ohca_ctx_get(dev);
	abandoned = ohca_ctx_get(dev);
	KUNIT_ASSERT_FALSE(test, IS_ERR(posted));
	KUNIT_ASSERT_FALSE(test, IS_ERR(abandoned));
	abandoned->state = OHCA_CTX_ABANDONED;

	ohca_handle_fatal(dev, OHCA_FATAL_EQ_OVERFLOW);
	KUNIT_EXPECT_TRUE(test, test_bit(OHCA_FLAG_FATAL, &dev->flags));
	KUNIT_EXPECT_EQ(test, posted->state, OHCA_CTX_DONE);
	KUNIT_EXPECT_EQ(test, posted->result, -EIO);
	KUNIT_EXPECT_TRUE(test, completion_done(&posted->done));
	KUNIT_EXPECT_EQ(test, abandoned->state, OHCA_CTX_FREE);
	ohca_ctx_put(dev, posted);
	KUNIT_EXPECT_EQ(test, dev->cmdq.sem.count, (unsigned int)OHCA_CMDQ_DEPTH);

	/* no command is posted to a fatal device */
	KUNIT_EXPECT_EQ(test, ohca_cmd_exec(dev, &args), -EIO);
	KUNIT_EXPECT_EQ(test, reg_rd(env, OHCA_REG_CMDQ_PI), 0U);
}

struct ohca_conc {
	struct ohca_dev *dev;
	struct completion done;
	atomic_t errors;
	int iters;
};

static int ohca_conc_thread(void *arg)
{
	struct ohca_conc *c = arg;
	u32 in[16], out[16];
	int i;

	for (i = 0; i < c->iters; i++) {
		struct ohca_cmd_args args = {
			.opcode = OHCA_CMD_QUERY_STATS,
			.in = in,
			.in_len = (i & 1) ? sizeof(in) : 8,
			.out = out,
			.out_len = sizeof(out),
		};

		in[0] = i;
		if (ohca_cmd_exec(c->dev, &args))
			atomic_inc(&c->errors);
	}
	complete(&c->done);
	return 0;
}

/* More submitters than slots: every command completes exactly once. */
static void ohca_test_exec_concurrent(struct kunit *test)
{
	struct ohca_kunit_env *env = test->priv;
	enum { NTHREADS = 2 * OHCA_CMDQ_DEPTH, ITERS = 25 };
	struct ohca_conc *c;
	int i;

	c = kunit_kcalloc(test, NTHREADS, sizeof(*c), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, c);
	for (i = 0; i < NTHREADS; i++) {
		struct task_struct *t;

		c[i].dev = env->dev;
		c[i].iters = ITERS;
		init_completion(&c[i].done);
		t = kthread_run(ohca_conc_thread, &c[i], "ohca-kunit-%d", i);
		KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	}
	for (i = 0; i < NTHREADS; i++) {
		wait_for_completion(&c[i].done);
		KUNIT_EXPECT_EQ(test, atomic_read(&c[i].errors), 0);
	}
	KUNIT_EXPECT_EQ(test, atomic_read(&env->fw.ncmds), NTHREADS * ITERS);
	KUNIT_EXPECT_EQ(test, env->dev->cmdq.pi, (u16)(NTHREADS * ITERS));
	KUNIT_EXPECT_EQ(test, env->dev->cmdq.sem.count,
			(unsigned int)OHCA_CMDQ_DEPTH);
	KUNIT_EXPECT_FALSE(test, env->fw.bad_addr);
}

static struct kunit_case ohca_cmd_cases[] = {
	KUNIT_CASE(ohca_test_status_to_errno),
	KUNIT_CASE(ohca_test_status_caller_caused),
	KUNIT_CASE(ohca_test_names),
	KUNIT_CASE(ohca_test_cmdq_init_regs),
	KUNIT_CASE(ohca_test_exec_inline),
	KUNIT_CASE(ohca_test_exec_mailbox),
	KUNIT_CASE(ohca_test_exec_status),
	KUNIT_CASE(ohca_test_slot_exhaustion),
	KUNIT_CASE(ohca_test_token_wrap),
	KUNIT_CASE(ohca_test_complete_tokens),
	KUNIT_CASE(ohca_test_exec_timeout_dead),
	KUNIT_CASE(ohca_test_fatal),
	KUNIT_CASE(ohca_test_exec_concurrent),
	{}
};

static struct kunit_suite ohca_cmd_suite = {
	.name = "ohca_cmd",
	.init = ohca_cmd_env_init,
	.exit = ohca_cmd_env_exit,
	.test_cases = ohca_cmd_cases,
};

/* --------------------------------------------------------------------- */
/* Suite ohca_eq: owner-bit phase and the 16-bit doorbell index.          */

static int ohca_eq_env_init(struct kunit *test)
{
	struct ohca_kunit_env *env = ohca_env_alloc(test);

	env->dev->eq0.log_size = 2;
	env->dev->eq0.ring = kunit_kcalloc(test, 4, sizeof(struct ohca_eqe),
					   GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, env->dev->eq0.ring);
	return 0;
}

/* Post n port-change events starting at index pi; the last one is up. */
static void eq_post_ports(struct ohca_eq *eq, u32 pi, int n)
{
	int i;

	for (i = 0; i < n; i++)
		fw_post_eqe(eq, pi + i, OHCA_EQE_PORT_CHANGE,
			    ((n - 1 - i) & 1) ? OHCA_PORT_DOWN : OHCA_PORT_ACTIVE,
			    1, 0);
}

static void ohca_test_eq_empty(struct kunit *test)
{
	struct ohca_kunit_env *env = test->priv;

	/* a zeroed ring holds no valid entry */
	KUNIT_EXPECT_EQ(test, ohca_eq0_irq(0, env->dev), IRQ_HANDLED);
	KUNIT_EXPECT_EQ(test, env->dev->eq0.ci, 0U);
	KUNIT_EXPECT_EQ(test, reg_rd(env, OHCA_REG_EQ0_DB), OHCA_EQ_DB_ARM);
}

static void ohca_test_eq_phase(struct kunit *test)
{
	struct ohca_kunit_env *env = test->priv;
	struct ohca_eq *eq = &env->dev->eq0;

	/* first pass: 3 events */
	eq_post_ports(eq, 0, 3);
	ohca_eq0_irq(0, env->dev);
	KUNIT_EXPECT_EQ(test, eq->ci, 3U);
	KUNIT_EXPECT_EQ(test, atomic_read(&env->dev->link_up), 1);
	/* slot 3 still holds nothing; slots 0-2 hold first-pass entries
	 * which must not be taken again on the second pass
	 */
	ohca_eq0_irq(0, env->dev);
	KUNIT_EXPECT_EQ(test, eq->ci, 3U);
	/* wrap into the second pass (owner bit 0) */
	eq_post_ports(eq, 3, 4);
	ohca_eq0_irq(0, env->dev);
	KUNIT_EXPECT_EQ(test, eq->ci, 7U);
	KUNIT_EXPECT_EQ(test, reg_rd(env, OHCA_REG_EQ0_DB), 7 | OHCA_EQ_DB_ARM);
	/* slot 3 now holds a second-pass entry: not valid on the third */
	ohca_eq0_irq(0, env->dev);
	KUNIT_EXPECT_EQ(test, eq->ci, 7U);
}

/* The doorbell carries ci & 0xffff; the phase survives 16 and 32-bit wrap. */
static void ohca_test_eq_index_wrap(struct kunit *test)
{
	struct ohca_kunit_env *env = test->priv;
	struct ohca_eq *eq = &env->dev->eq0;
	u32 starts[] = { 0xfffe, 0xfffffffe };
	int i;

	for (i = 0; i < ARRAY_SIZE(starts); i++) {
		memset(eq->ring, 0, 4 * sizeof(*eq->ring));
		/* the device's previous pass left the opposite owner bit */
		eq_post_ports(eq, starts[i] - 4, 4);
		eq->ci = starts[i];
		ohca_eq0_irq(0, env->dev);
		KUNIT_EXPECT_EQ(test, eq->ci, starts[i]);

		eq_post_ports(eq, starts[i], 4);
		ohca_eq0_irq(0, env->dev);
		KUNIT_EXPECT_EQ(test, eq->ci, starts[i] + 4);
		KUNIT_EXPECT_EQ(test, reg_rd(env, OHCA_REG_EQ0_DB),
				((starts[i] + 4) & OHCA_RING_INDEX_MASK) |
				OHCA_EQ_DB_ARM);
		KUNIT_EXPECT_EQ(test, atomic_read(&env->dev->link_up), 1);
	}
}

static void ohca_test_eq_other_events(struct kunit *test)
{
	struct ohca_kunit_env *env = test->priv;
	struct ohca_eq *eq = &env->dev->eq0;

	atomic_set(&env->dev->link_up, 1);
	/* a port change for port 2 and an unknown type are skipped */
	fw_post_eqe(eq, 0, OHCA_EQE_PORT_CHANGE, OHCA_PORT_DOWN, 2, 0);
	fw_post_eqe(eq, 1, 0x77, 0, 0, 0);
	ohca_eq0_irq(0, env->dev);
	KUNIT_EXPECT_EQ(test, eq->ci, 2U);
	KUNIT_EXPECT_EQ(test, atomic_read(&env->dev->link_up), 1);
	KUNIT_EXPECT_FALSE(test, test_bit(OHCA_FLAG_FATAL, &env->dev->flags));
}

/*
 * A burst longer than the budget: one interrupt takes OHCA_EQ_BUDGET
 * entries and re-arms (the device interrupts again for the rest), the
 * consumer index reaching the device as it goes; the next interrupts take
 * the rest, in order.
 */
static void ohca_test_eq_budget(struct kunit *test)
{
	struct ohca_kunit_env *env = test->priv;
	struct ohca_eq *eq = &env->dev->eq0;
	const u32 n = 3 * OHCA_EQ_BUDGET + 5;
	u32 calls = 0;

	eq->log_size = 9;
	eq->ring = kunit_kcalloc(test, BIT(eq->log_size), sizeof(*eq->ring),
				 GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, eq->ring);
	eq_post_ports(eq, 0, n);

	ohca_eq0_irq(0, env->dev);
	KUNIT_EXPECT_EQ(test, eq->ci, (u32)OHCA_EQ_BUDGET);
	KUNIT_EXPECT_EQ(test, reg_rd(env, OHCA_REG_EQ0_DB),
			OHCA_EQ_BUDGET | OHCA_EQ_DB_ARM);
	for (calls = 1; calls < 10 && eq->ci != n; calls++)
		ohca_eq0_irq(0, env->dev);
	KUNIT_EXPECT_EQ(test, eq->ci, n);
	KUNIT_EXPECT_EQ(test, calls, DIV_ROUND_UP(n, OHCA_EQ_BUDGET));
	KUNIT_EXPECT_EQ(test, reg_rd(env, OHCA_REG_EQ0_DB), n | OHCA_EQ_DB_ARM);
	/* the last event (up) is the state */
	KUNIT_EXPECT_EQ(test, atomic_read(&env->dev->link_up), 1);
}

/* What the RDMA driver's callbacks were given (ohca_test_eq_client). */
struct ohca_test_client {
	int comp, async, port;
	u32 cqn;
	u8 type;
	u32 param0;
};

static void ohca_test_comp(void *priv, u32 cqn)
{
	struct ohca_test_client *c = priv;

	c->comp++;
	c->cqn = cqn;
}

static void ohca_test_async(void *priv, const struct ohca_eqe *eqe)
{
	struct ohca_test_client *c = priv;

	c->async++;
	c->type = eqe->type;
	c->param0 = le32_to_cpu(eqe->param0);
}

static void ohca_test_port(void *priv)
{
	struct ohca_test_client *c = priv;

	c->port++;
}

static void ohca_test_fatal_cb(void *priv)
{
}

static const struct ohca_event_ops ohca_test_ops = {
	.comp = ohca_test_comp,
	.async = ohca_test_async,
	.port_change = ohca_test_port,
	.fatal = ohca_test_fatal_cb,
};

/*
 * The RDMA events reach the registered client, EQ 0's and a completion
 * EQ's; with no client (before one registers, after it unregistered)
 * they are dropped and counted. One client at a time.
 */
static void ohca_test_eq_client(struct kunit *test)
{
	struct ohca_kunit_env *env = test->priv;
	struct ohca_dev *dev = env->dev;
	struct ohca_eq *eq = &dev->eq0;
	struct ohca_test_client seen = {};
	struct ohca_event_client client = {
		.ops = &ohca_test_ops,
		.priv = &seen,
	};
	struct ohca_comp_eq *ceq;

	ceq = kunit_kzalloc(test, sizeof(*ceq), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, ceq);
	ceq->dev = dev;
	ceq->eqn = 1;
	ceq->eq.log_size = 2;
	ceq->eq.ring = kunit_kcalloc(test, 4, sizeof(struct ohca_eqe),
				     GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, ceq->eq.ring);

	/* no client: a QP event and a completion are dropped and counted */
	fw_post_eqe(eq, 0, OHCA_EQE_QP_EVENT, 1, 0x42, 0);
	ohca_eq0_irq(0, dev);
	fw_post_eqe(&ceq->eq, 0, OHCA_EQE_CQ_COMPLETION, 0, 7, 0);
	ohca_comp_eq_irq(0, ceq);
	KUNIT_EXPECT_EQ(test, atomic_read(&dev->events_dropped), 2);
	KUNIT_EXPECT_EQ(test, eq->ci, 1U);
	KUNIT_EXPECT_EQ(test, ceq->eq.ci, 1U);

	KUNIT_ASSERT_EQ(test, ohca_register_events(dev, &client), 0);
	KUNIT_EXPECT_EQ(test, ohca_register_events(dev, &client), -EBUSY);
	fw_post_eqe(eq, 1, OHCA_EQE_SRQ_EVENT, 0, 0x43, 0);
	fw_post_eqe(eq, 2, OHCA_EQE_PORT_CHANGE, OHCA_PORT_ACTIVE, 1, 0);
	ohca_eq0_irq(0, dev);
	KUNIT_EXPECT_EQ(test, seen.async, 1);
	KUNIT_EXPECT_EQ(test, seen.type, OHCA_EQE_SRQ_EVENT);
	KUNIT_EXPECT_EQ(test, seen.param0, 0x43U);
	KUNIT_EXPECT_EQ(test, seen.port, 1);
	/* the command completion is the core's own */
	KUNIT_EXPECT_EQ(test, seen.comp, 0);
	fw_post_eqe(&ceq->eq, 1, OHCA_EQE_CQ_COMPLETION, 0, 9, 0);
	ohca_comp_eq_irq(0, ceq);
	KUNIT_EXPECT_EQ(test, seen.comp, 1);
	KUNIT_EXPECT_EQ(test, seen.cqn, 9U);
	KUNIT_EXPECT_EQ(test, atomic_read(&dev->events_dropped), 2);

	/* gone: nothing more reaches it */
	ohca_unregister_events(dev);
	fw_post_eqe(eq, 3, OHCA_EQE_CQ_ERROR, 0, 9, 0);
	fw_post_eqe(eq, 4, OHCA_EQE_PORT_CHANGE, OHCA_PORT_DOWN, 1, 0);
	ohca_eq0_irq(0, dev);
	fw_post_eqe(&ceq->eq, 2, OHCA_EQE_CQ_COMPLETION, 0, 9, 0);
	ohca_comp_eq_irq(0, ceq);
	KUNIT_EXPECT_EQ(test, eq->ci, 5U);
	KUNIT_EXPECT_EQ(test, seen.async, 1);
	KUNIT_EXPECT_EQ(test, seen.port, 1);
	KUNIT_EXPECT_EQ(test, seen.comp, 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&dev->events_dropped), 4);
	/* and another client may register */
	KUNIT_EXPECT_EQ(test, ohca_register_events(dev, &client), 0);
	ohca_unregister_events(dev);
}

static struct kunit_case ohca_eq_cases[] = {
	KUNIT_CASE(ohca_test_eq_empty),
	KUNIT_CASE(ohca_test_eq_phase),
	KUNIT_CASE(ohca_test_eq_index_wrap),
	KUNIT_CASE(ohca_test_eq_other_events),
	KUNIT_CASE(ohca_test_eq_budget),
	KUNIT_CASE(ohca_test_eq_client),
	{}
};

static struct kunit_suite ohca_eq_suite = {
	.name = "ohca_eq",
	.init = ohca_eq_env_init,
	.test_cases = ohca_eq_cases,
};

/* --------------------------------------------------------------------- */
/* Suite ohca_eth_ring: TX free-slot accounting and reclaim.              */

struct ohca_eth_env {
	struct ohca_kunit_env *env;
	bool ring_ready;
};

static int ohca_eth_env_init(struct kunit *test)
{
	struct ohca_kunit_env *env = ohca_env_alloc(test);
	struct ohca_dev *dev = env->dev;

	dev->netdev = alloc_etherdev(sizeof(struct ohca_netdev_priv));
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, dev->netdev);
	u64_stats_init(&dev->tx_stats.syncp);
	KUNIT_ASSERT_EQ(test, ohca_ring_alloc(dev, &dev->tx, 3), 0);
	env->cmdq_ready = true;	/* here: the TX ring exists */
	return 0;
}

static void ohca_eth_env_exit(struct kunit *test)
{
	struct ohca_kunit_env *env = test->priv;

	if (!env)
		return;
	if (env->cmdq_ready) {
		ohca_tx_free_bufs(env->dev);
		ohca_ring_free(env->dev, &env->dev->tx);
	}
	if (env->dev->netdev)
		free_netdev(env->dev->netdev);
}

static void ohca_test_tx_free(struct kunit *test)
{
	struct ohca_eth_ring ring = { .size = 256 };
	static const u32 starts[] = { 0, 0xfff0, 0xfffffff0 };
	int i;

	for (i = 0; i < ARRAY_SIZE(starts); i++) {
		ring.ci = starts[i];
		ring.pi = starts[i];
		KUNIT_EXPECT_EQ(test, ohca_tx_free(&ring), 256U);
		ring.pi = starts[i] + 100;	/* may wrap past 2^32 */
		KUNIT_EXPECT_EQ(test, ohca_tx_free(&ring), 156U);
		ring.pi = starts[i] + 256;
		KUNIT_EXPECT_EQ(test, ohca_tx_free(&ring), 0U);
		ring.ci = starts[i] + 256;
		KUNIT_EXPECT_EQ(test, ohca_tx_free(&ring), 256U);
	}
}

/* Post one frame into the TX ring as start_xmit does. */
static void eth_post(struct kunit *test, struct ohca_dev *dev, u32 len)
{
	struct ohca_eth_ring *ring = &dev->tx;
	u32 idx = ring->pi & (ring->size - 1);
	struct sk_buff *skb;

	skb = alloc_skb(len, GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, skb);
	skb_put_zero(skb, len);
	ring->dma[idx] = dma_map_single(&dev->pdev->dev, skb->data, len,
					DMA_TO_DEVICE);
	KUNIT_ASSERT_FALSE(test, dma_mapping_error(&dev->pdev->dev,
						   ring->dma[idx]));
	ring->skb[idx] = skb;
	ring->desc[idx].addr = cpu_to_le64(ring->dma[idx]);
	ring->desc[idx].len = cpu_to_le16(len);
	ring->desc[idx].flags = 0;
	ring->pi++;
	/* as start_xmit does: BQL must see a frame queued before it completes */
	netdev_sent_queue(dev->netdev, len);
}

static void eth_done(struct ohca_dev *dev, u32 index, u16 flags)
{
	dev->tx.desc[index & (dev->tx.size - 1)].flags = cpu_to_le16(flags);
}

/*
 * The test's net_device is never registered, so its queue has no qdisc: a
 * reclaim that restarts a queue BQL stopped would schedule NULL. Until a
 * device opens, registration gives every queue the noop qdisc; so does this.
 */
static void ohca_test_txq_reset(struct net_device *ndev)
{
	rcu_assign_pointer(netdev_get_tx_queue(ndev, 0)->qdisc, &noop_qdisc);
	netdev_reset_queue(ndev);
	netif_start_queue(ndev);
}

static void ohca_test_tx_reclaim(struct kunit *test)
{
	struct ohca_kunit_env *env = test->priv;
	struct ohca_dev *dev = env->dev;
	struct ohca_eth_ring *ring = &dev->tx;
	struct netdev_queue *txq = netdev_get_tx_queue(dev->netdev, 0);
	static const u32 starts[] = { 0, 0xfffffffc };
	int i, k;

	for (i = 0; i < ARRAY_SIZE(starts); i++) {
		u64 packets = dev->tx_stats.packets;
		u64 bytes = dev->tx_stats.bytes;
		u64 errors = dev->tx_stats.errors;
		u32 s = starts[i];

		ring->pi = s;
		ring->ci = s;
		ohca_test_txq_reset(dev->netdev);
		for (k = 0; k < 6; k++)
			eth_post(test, dev, 60 + k);
		KUNIT_EXPECT_EQ(test, ohca_tx_free(ring), ring->size - 6);

		/* nothing done yet */
		ohca_tx_reclaim(dev, 0);
		KUNIT_EXPECT_EQ(test, ring->ci, s);

		/* 0, 1 (error), 2 done, 3 not: reclaim stops at 3 */
		eth_done(dev, s + 0, OHCA_ETH_DESC_DONE);
		eth_done(dev, s + 1, OHCA_ETH_DESC_DONE | OHCA_ETH_DESC_ERROR);
		eth_done(dev, s + 2, OHCA_ETH_DESC_DONE);
		eth_done(dev, s + 4, OHCA_ETH_DESC_DONE);
		ohca_tx_reclaim(dev, 0);
		KUNIT_EXPECT_EQ(test, ring->ci, s + 3);
		KUNIT_EXPECT_EQ(test, dev->tx_stats.packets - packets, 2ULL);
		KUNIT_EXPECT_EQ(test, dev->tx_stats.bytes - bytes, 60ULL + 62);
		KUNIT_EXPECT_EQ(test, dev->tx_stats.errors - errors, 1ULL);
		for (k = 0; k < 3; k++)
			KUNIT_EXPECT_NULL(test, ring->skb[(s + k) & (ring->size - 1)]);
		KUNIT_EXPECT_NOT_NULL(test, ring->skb[(s + 3) & (ring->size - 1)]);

		eth_done(dev, s + 3, OHCA_ETH_DESC_DONE);
		eth_done(dev, s + 5, OHCA_ETH_DESC_DONE);
		ohca_tx_reclaim(dev, 0);
		KUNIT_EXPECT_EQ(test, ring->ci, s + 6);
		KUNIT_EXPECT_EQ(test, ring->ci, ring->pi);
		KUNIT_EXPECT_EQ(test, ohca_tx_free(ring), ring->size);
		KUNIT_EXPECT_EQ(test, dev->tx_stats.packets - packets, 5ULL);
		/* BQL saw every queued byte complete: the queue runs again */
		KUNIT_EXPECT_FALSE(test, netif_xmit_stopped(txq));
	}
}

static void ohca_test_rx_post(struct kunit *test)
{
	struct ohca_kunit_env *env = test->priv;
	struct ohca_eth_ring *ring = &env->dev->tx;	/* any ring will do */

	ring->dma[5] = 0x123456789abcULL;
	ring->desc[5].flags = cpu_to_le16(OHCA_ETH_DESC_DONE);
	ring->desc[5].rsvd = cpu_to_le32(7);
	ohca_rx_post(ring, 5, 1522);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(ring->desc[5].addr), 0x123456789abcULL);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(ring->desc[5].len), 1522);
	KUNIT_EXPECT_EQ(test, ring->desc[5].flags, 0);
	KUNIT_EXPECT_EQ(test, ring->desc[5].rsvd, 0U);
	ring->dma[5] = 0;

	env->dev->netdev->mtu = 1500;
	KUNIT_EXPECT_EQ(test, ohca_rx_buf_len(env->dev->netdev),
			1500U + ETH_HLEN + VLAN_HLEN);
}

static struct kunit_case ohca_eth_cases[] = {
	KUNIT_CASE(ohca_test_tx_free),
	KUNIT_CASE(ohca_test_tx_reclaim),
	KUNIT_CASE(ohca_test_rx_post),
	{}
};

static struct kunit_suite ohca_eth_suite = {
	.name = "ohca_eth_ring",
	.init = ohca_eth_env_init,
	.exit = ohca_eth_env_exit,
	.test_cases = ohca_eth_cases,
};

/* --------------------------------------------------------------------- */
/* Suite ohca_verbs: udata validation and attribute conversion.           */

static void ohca_test_ucontext_udata(struct kunit *test)
{
	struct ohca_kunit_env *env = ohca_env_alloc(test);
	struct ohca_ucontext *uctx;
	struct ib_udata udata = {};

	uctx = kunit_kzalloc(test, sizeof(*uctx), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, uctx);
	uctx->ibucontext.device = &env->ibd->ibdev;

	/* response buffer too short for max_inline: rejected, no command */
	udata.outlen = offsetofend(struct ohca_ibv_alloc_ucontext_resp,
				   max_inline) - 1;
	KUNIT_EXPECT_EQ(test, ohca_alloc_ucontext(&uctx->ibucontext, &udata),
			-EINVAL);
	udata.outlen = 0;
	KUNIT_EXPECT_EQ(test, ohca_alloc_ucontext(&uctx->ibucontext, &udata),
			-EINVAL);
	/* a request (struct ohca_ibv_alloc_ucontext) that cannot be read */
	udata.inbuf = NULL;
	udata.inlen = sizeof(struct ohca_ibv_alloc_ucontext);
	udata.outlen = sizeof(struct ohca_ibv_alloc_ucontext_resp);
	KUNIT_EXPECT_EQ(test, ohca_alloc_ucontext(&uctx->ibucontext, &udata),
			-EFAULT);
	KUNIT_EXPECT_EQ(test, reg_rd(env, OHCA_REG_CMDQ_PI), 0U);
}

/*
 * EQ 0 keeps its 4096 entries: a device that holds back events offers all
 * its QPs; one where a full EQ 0 is fatal gets its limits lowered until
 * their worst-case burst fits.
 */
static void ohca_test_eq0_fit_limits(struct kunit *test)
{
	struct ohca_kunit_env *env = ohca_env_alloc(test);
	struct ohca_dev *dev = env->dev;
	u32 max_qp, max_cq;

	dev->eq0.log_size = OHCA_EQ0_LOG;
	dev->attr.max_qp = cpu_to_le32(65536);
	dev->attr.max_cq = cpu_to_le32(1024);
	dev->attr.dev_caps = cpu_to_le32(OHCA_DEV_CAP_EQ0_HOLD);
	ohca_eq0_fit_limits(dev);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(dev->attr.max_qp), 65536U);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(dev->attr.max_cq), 1024U);

	dev->attr.dev_caps = 0;
	ohca_eq0_fit_limits(dev);
	max_qp = le32_to_cpu(dev->attr.max_qp);
	max_cq = le32_to_cpu(dev->attr.max_cq);
	KUNIT_EXPECT_GT(test, max_qp, 0U);
	KUNIT_EXPECT_LE(test, OHCA_EQ0_QP_EVENTS * max_qp + max_cq,
			BIT(OHCA_EQ0_LOG) - OHCA_CMDQ_DEPTH - OHCA_EQ_SPARE);
}

static void ohca_test_query_device(struct kunit *test)
{
	struct ohca_kunit_env *env = ohca_env_alloc(test);
	struct ohca_dev *dev = env->dev;
	struct ib_device_attr *attr;
	struct ib_udata udata = { .inlen = 4 };

	attr = kunit_kzalloc(test, sizeof(*attr), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, attr);
	dev->attr.fw_version = cpu_to_le32(0x01020003);
	dev->attr.vendor_id = cpu_to_le32(0x1af4);
	dev->attr.max_qp = cpu_to_le32(1024);
	dev->attr.max_qp_rd_atom = cpu_to_le32(16);
	dev->attr.max_sge = cpu_to_le32(8);
	dev->attr.sys_image_guid = cpu_to_le64(0x0002c9fffe000001ULL);
	dev->pkey_tbl_len = 1;

	/* unreadable request bytes */
	KUNIT_EXPECT_EQ(test, ohca_query_device(&env->ibd->ibdev, attr,
						&udata), -EINVAL);
	KUNIT_ASSERT_EQ(test, ohca_query_device(&env->ibd->ibdev, attr, NULL),
			0);
	KUNIT_EXPECT_EQ(test, attr->fw_ver, 0x01020003ULL);
	KUNIT_EXPECT_EQ(test, attr->vendor_id, 0x1af4U);
	KUNIT_EXPECT_EQ(test, attr->max_qp, 1024);
	KUNIT_EXPECT_EQ(test, attr->max_res_rd_atom, 1024 * 16);
	KUNIT_EXPECT_EQ(test, attr->max_send_sge, 8);
	KUNIT_EXPECT_EQ(test, attr->max_recv_sge, 8);
	KUNIT_EXPECT_EQ(test, be64_to_cpu(attr->sys_image_guid),
			0x0002c9fffe000001ULL);
	KUNIT_EXPECT_EQ(test, attr->max_pkeys, 1);
}

/*
 * The path MTU leaves room for the largest RoCEv2 header stack
 * (iboe_get_mtu(): 96 bytes); below the smallest IB MTU, 256 is reported.
 */
static void ohca_test_mtu(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, ohca_eth_mtu_to_ib(1500), IB_MTU_1024);
	KUNIT_EXPECT_EQ(test, ohca_eth_mtu_to_ib(9000), IB_MTU_4096);
	KUNIT_EXPECT_EQ(test, ohca_eth_mtu_to_ib(4096 + 96), IB_MTU_4096);
	KUNIT_EXPECT_EQ(test, ohca_eth_mtu_to_ib(4096 + 95), IB_MTU_2048);
	KUNIT_EXPECT_EQ(test, ohca_eth_mtu_to_ib(4176), IB_MTU_2048);
	KUNIT_EXPECT_EQ(test, ohca_eth_mtu_to_ib(256 + 96), IB_MTU_256);
	KUNIT_EXPECT_EQ(test, ohca_eth_mtu_to_ib(80), IB_MTU_256);
	KUNIT_EXPECT_EQ(test, ohca_eth_mtu_to_ib(0), IB_MTU_256);
}

static struct kunit_case ohca_verbs_cases[] = {
	KUNIT_CASE(ohca_test_ucontext_udata),
	KUNIT_CASE(ohca_test_eq0_fit_limits),
	KUNIT_CASE(ohca_test_query_device),
	KUNIT_CASE(ohca_test_mtu),
	{}
};

static struct kunit_suite ohca_verbs_suite = {
	.name = "ohca_verbs",
	.test_cases = ohca_verbs_cases,
};

/* --------------------------------------------------------------------- */
/* Suite ohca_odp: page-fault events and their work items.                */

/*
 * Every page-fault event counts in odp_works until its work item is done
 * or the event is dropped, and ohca_odp_drain() waits for that count: an
 * event dropped past the limit of work items, or after the drain began,
 * must give its count back at once, and a queued one when its work ends
 * (here the key names no MR, so there is nothing to map), or teardown
 * waits for ever.
 */
static void ohca_test_odp_fault_events(struct kunit *test)
{
	struct ohca_kunit_env *env = ohca_env_alloc(test);
	struct ohca_ibdev *ibd = env->ibd;
	struct ohca_eqe eqe = {
		.type = OHCA_EQE_PAGE_FAULT,
		.code = cpu_to_le16(OHCA_PF_NPAGES_MASK),	/* clamped */
		.param0 = cpu_to_le32(0x1234),
		.param1 = cpu_to_le32(0x5000),
		.param2 = cpu_to_le32(0x7f),
	};
	int busy = 1 << 20;	/* far past the work item limit */

	xa_init_flags(&ibd->odp_xa, XA_FLAGS_LOCK_IRQ);
	atomic_set(&ibd->odp_works, busy);
	ohca_odp_fault_event(ibd, &eqe);
	KUNIT_EXPECT_EQ(test, atomic_read(&ibd->odp_works), busy);

	atomic_set(&ibd->odp_works, 0);
	ohca_odp_fault_event(ibd, &eqe);
	ohca_odp_fault_event(ibd, &eqe);
	ohca_odp_drain(ibd);	/* returns once both work items ended */
	KUNIT_EXPECT_EQ(test, atomic_read(&ibd->odp_works), 0);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(ibd->odp_stopped));

	ohca_odp_fault_event(ibd, &eqe);	/* after the drain: dropped */
	KUNIT_EXPECT_EQ(test, atomic_read(&ibd->odp_works), 0);
	xa_destroy(&ibd->odp_xa);
}

static struct kunit_case ohca_odp_cases[] = {
	KUNIT_CASE(ohca_test_odp_fault_events),
	{}
};

static struct kunit_suite ohca_odp_suite = {
	.name = "ohca_odp",
	.test_cases = ohca_odp_cases,
};

kunit_test_suites(&ohca_cmd_suite, &ohca_eq_suite, &ohca_eth_suite,
		  &ohca_verbs_suite, &ohca_odp_suite);

MODULE_DESCRIPTION("KUnit tests of the ohca driver");
MODULE_LICENSE("GPL");
