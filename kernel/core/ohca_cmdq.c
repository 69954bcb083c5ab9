// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca: the command queue.
 *
 * Commands are asynchronous: the driver writes an entry into the ring,
 * rings CMDQ_PI and sleeps; the device answers with a CMD_DONE event on
 * EQ 0 carrying the token, and the EQ 0 interrupt handler wakes the
 * waiter. Up to OHCA_CMDQ_DEPTH commands may be in flight (see the
 * comment on struct ohca_cmdq).
 */
#include <linux/dma-mapping.h>
#include <linux/jiffies.h>

#include "ohca_core_priv.h"

static const char *const ohca_cmd_names[] = {
	[OHCA_CMD_NOP]			= "NOP",
	[OHCA_CMD_QUERY_DEVICE]		= "QUERY_DEVICE",
	[OHCA_CMD_QUERY_PORT]		= "QUERY_PORT",
	[OHCA_CMD_SET_PORT]		= "SET_PORT",
	[OHCA_CMD_CREATE_ETH_RING]	= "CREATE_ETH_RING",
	[OHCA_CMD_DESTROY_ETH_RING]	= "DESTROY_ETH_RING",
	[OHCA_CMD_ALLOC_UAR]		= "ALLOC_UAR",
	[OHCA_CMD_DEALLOC_UAR]		= "DEALLOC_UAR",
	[OHCA_CMD_ADD_GID]		= "ADD_GID",
	[OHCA_CMD_DEL_GID]		= "DEL_GID",
	[OHCA_CMD_QUERY_STATS]		= "QUERY_STATS",
	[OHCA_CMD_CREATE_EQ]		= "CREATE_EQ",
	[OHCA_CMD_DESTROY_EQ]		= "DESTROY_EQ",
	[OHCA_CMD_CREATE_PD]		= "CREATE_PD",
	[OHCA_CMD_DESTROY_PD]		= "DESTROY_PD",
	[OHCA_CMD_CREATE_MR]		= "CREATE_MR",
	[OHCA_CMD_DESTROY_MR]		= "DESTROY_MR",
	[OHCA_CMD_CREATE_CQ]		= "CREATE_CQ",
	[OHCA_CMD_DESTROY_CQ]		= "DESTROY_CQ",
	[OHCA_CMD_CREATE_QP]		= "CREATE_QP",
	[OHCA_CMD_MODIFY_QP]		= "MODIFY_QP",
	[OHCA_CMD_QUERY_QP]		= "QUERY_QP",
	[OHCA_CMD_DESTROY_QP]		= "DESTROY_QP",
	[OHCA_CMD_RESIZE_CQ]		= "RESIZE_CQ",
	[OHCA_CMD_REREG_MR]		= "REREG_MR",
	[OHCA_CMD_CREATE_SRQ]		= "CREATE_SRQ",
	[OHCA_CMD_MODIFY_SRQ]		= "MODIFY_SRQ",
	[OHCA_CMD_QUERY_SRQ]		= "QUERY_SRQ",
	[OHCA_CMD_DESTROY_SRQ]		= "DESTROY_SRQ",
	[OHCA_CMD_ALLOC_MW]		= "ALLOC_MW",
	[OHCA_CMD_DEALLOC_MW]		= "DEALLOC_MW",
	[OHCA_CMD_ATTACH_MCAST]		= "ATTACH_MCAST",
	[OHCA_CMD_DETACH_MCAST]		= "DETACH_MCAST",
	[OHCA_CMD_ALLOC_XRCD]		= "ALLOC_XRCD",
	[OHCA_CMD_DEALLOC_XRCD]		= "DEALLOC_XRCD",
	[OHCA_CMD_ALLOC_DM]		= "ALLOC_DM",
	[OHCA_CMD_FREE_DM]		= "FREE_DM",
	[OHCA_CMD_REG_DM_MR]		= "REG_DM_MR",
	[OHCA_CMD_CREATE_FLOW]		= "CREATE_FLOW",
	[OHCA_CMD_DESTROY_FLOW]		= "DESTROY_FLOW",
	[OHCA_CMD_ODP_MAP]		= "ODP_MAP",
	[OHCA_CMD_ODP_UNMAP]		= "ODP_UNMAP",
	[OHCA_CMD_MODIFY_CQ]		= "MODIFY_CQ",
	[OHCA_CMD_MAD_IFC]		= "MAD_IFC",
	[OHCA_CMD_CC_PARAM]		= "CC_PARAM",
	[OHCA_CMD_SET_PORT_CAP]		= "SET_PORT_CAP",
	[OHCA_CMD_QUERY_PFC]		= "QUERY_PFC",
	[OHCA_CMD_SET_PFC]		= "SET_PFC",
	[OHCA_CMD_CREATE_WQ]		= "CREATE_WQ",
	[OHCA_CMD_MODIFY_WQ]		= "MODIFY_WQ",
	[OHCA_CMD_DESTROY_WQ]		= "DESTROY_WQ",
	[OHCA_CMD_CREATE_RWQ_IND_TBL]	= "CREATE_RWQ_IND_TBL",
	[OHCA_CMD_DESTROY_RWQ_IND_TBL]	= "DESTROY_RWQ_IND_TBL",
	[OHCA_CMD_CREATE_RSS_QP]	= "CREATE_RSS_QP",
};

/* The last command named, so a new one at the end cannot go unnamed. */
static_assert(ARRAY_SIZE(ohca_cmd_names) == OHCA_CMD_MAX);

static const char *const ohca_status_names[] = {
	[OHCA_STATUS_OK]		= "OK",
	[OHCA_STATUS_BAD_OPCODE]	= "BAD_OPCODE",
	[OHCA_STATUS_BAD_LEN]		= "BAD_LEN",
	[OHCA_STATUS_BAD_FIELD]		= "BAD_FIELD",
	[OHCA_STATUS_BAD_ADDR]		= "BAD_ADDR",
	[OHCA_STATUS_NO_RESOURCES]	= "NO_RESOURCES",
	[OHCA_STATUS_BAD_HANDLE]	= "BAD_HANDLE",
	[OHCA_STATUS_BAD_STATE]		= "BAD_STATE",
	[OHCA_STATUS_RESERVED_NONZERO]	= "RESERVED_NONZERO",
	[OHCA_STATUS_INTERNAL]		= "INTERNAL",
};

static const char *ohca_cmd_name(u16 opcode)
{
	if (opcode < ARRAY_SIZE(ohca_cmd_names) && ohca_cmd_names[opcode])
		return ohca_cmd_names[opcode];
	return "UNKNOWN";
}

static const char *ohca_status_name(u8 status)
{
	if (status < ARRAY_SIZE(ohca_status_names) && ohca_status_names[status])
		return ohca_status_names[status];
	return "UNKNOWN";
}

static int ohca_status_to_errno(u8 status)
{
	switch (status) {
	case OHCA_STATUS_OK:
		return 0;
	case OHCA_STATUS_BAD_OPCODE:
		return -EOPNOTSUPP;
	case OHCA_STATUS_BAD_LEN:
	case OHCA_STATUS_BAD_FIELD:
	case OHCA_STATUS_RESERVED_NONZERO:
		return -EINVAL;
	case OHCA_STATUS_BAD_ADDR:
		return -EFAULT;
	case OHCA_STATUS_NO_RESOURCES:
		return -ENOMEM;
	case OHCA_STATUS_BAD_HANDLE:
		return -ENOENT;
	case OHCA_STATUS_BAD_STATE:
		return -EBUSY;
	default:
		return -EIO;
	}
}

/*
 * Statuses a caller provokes at will (audit N5): NO_RESOURCES at the
 * device's limits (creating objects in a loop), BAD_FIELD for values the
 * RDMA core does not range-check (modify_qp), BAD_STATE for an object in
 * use (an MR with windows bound). They are the caller's answer, not the
 * driver's or the device's fault: logged at debug level only.
 */
static bool ohca_status_caller_caused(u8 status)
{
	return status == OHCA_STATUS_NO_RESOURCES ||
	       status == OHCA_STATUS_BAD_FIELD ||
	       status == OHCA_STATUS_BAD_STATE;
}

/* A command failed: every log line rate-limited, users can repeat it. */
static void ohca_cmd_log_failure(struct ohca_dev *dev, u16 opcode, u8 status,
				 u32 syndrome)
{
	if (ohca_status_caller_caused(status))
		dev_dbg_ratelimited(&dev->pdev->dev,
				    "command %s (0x%02x): status %s (0x%02x) syndrome 0x%x\n",
				    ohca_cmd_name(opcode), opcode,
				    ohca_status_name(status), status, syndrome);
	else
		dev_err_ratelimited(&dev->pdev->dev,
				    "command %s (0x%02x) failed: status %s (0x%02x) syndrome 0x%x\n",
				    ohca_cmd_name(opcode), opcode,
				    ohca_status_name(status), status, syndrome);
}

/**
 * ohca_cmdq_init() - allocate the command queue and give it to the device
 * @dev: the function
 *
 * The ring and one pair of mailboxes per context, coherent; the ring's
 * address and size go to the CMDQ_BASE and CMDQ_LOG_SIZE registers.
 *
 * Return: 0 or -ENOMEM.
 */
int ohca_cmdq_init(struct ohca_dev *dev)
{
	struct device *dmadev = &dev->pdev->dev;
	struct ohca_cmdq *cmdq = &dev->cmdq;
	int i;

	cmdq->ring = dma_alloc_coherent(dmadev,
					OHCA_CMDQ_DEPTH * sizeof(*cmdq->ring),
					&cmdq->ring_dma, GFP_KERNEL);
	if (!cmdq->ring)
		return -ENOMEM;

	for (i = 0; i < OHCA_CMDQ_DEPTH; i++) {
		struct ohca_cmd_ctx *ctx = &cmdq->ctx[i];

		ctx->in_buf = dma_alloc_coherent(dmadev,
						 2 * OHCA_CMD_MAILBOX_MAX,
						 &ctx->in_dma, GFP_KERNEL);
		if (!ctx->in_buf)
			goto err_free_ctx;
		ctx->out_buf = ctx->in_buf + OHCA_CMD_MAILBOX_MAX;
		ctx->out_dma = ctx->in_dma + OHCA_CMD_MAILBOX_MAX;
		init_completion(&ctx->done);
		ctx->state = OHCA_CTX_FREE;
	}

	spin_lock_init(&cmdq->lock);
	sema_init(&cmdq->sem, OHCA_CMDQ_DEPTH);
	cmdq->pi = 0;

	ohca_wr32(dev, OHCA_REG_CMDQ_BASE_LO, lower_32_bits(cmdq->ring_dma));
	ohca_wr32(dev, OHCA_REG_CMDQ_BASE_HI, upper_32_bits(cmdq->ring_dma));
	ohca_wr32(dev, OHCA_REG_CMDQ_LOG_SIZE, OHCA_CMDQ_LOG);
	return 0;

err_free_ctx:
	while (--i >= 0)
		dma_free_coherent(dmadev, 2 * OHCA_CMD_MAILBOX_MAX,
				  cmdq->ctx[i].in_buf, cmdq->ctx[i].in_dma);
	dma_free_coherent(dmadev, OHCA_CMDQ_DEPTH * sizeof(*cmdq->ring),
			  cmdq->ring, cmdq->ring_dma);
	return -ENOMEM;
}

/**
 * ohca_cmdq_destroy() - free the command queue
 * @dev: the function
 *
 * Called after the device was reset: it no longer touches the ring or the
 * mailboxes.
 */
void ohca_cmdq_destroy(struct ohca_dev *dev)
{
	struct device *dmadev = &dev->pdev->dev;
	struct ohca_cmdq *cmdq = &dev->cmdq;
	int i;

	for (i = OHCA_CMDQ_DEPTH - 1; i >= 0; i--)
		dma_free_coherent(dmadev, 2 * OHCA_CMD_MAILBOX_MAX,
				  cmdq->ctx[i].in_buf, cmdq->ctx[i].in_dma);
	dma_free_coherent(dmadev, OHCA_CMDQ_DEPTH * sizeof(*cmdq->ring),
			  cmdq->ring, cmdq->ring_dma);
}

/* Take a free context; sleeps while all are busy. */
static struct ohca_cmd_ctx *ohca_ctx_get(struct ohca_dev *dev)
{
	struct ohca_cmdq *cmdq = &dev->cmdq;
	struct ohca_cmd_ctx *ctx = NULL;
	unsigned long flags;
	int i;

	if (down_timeout(&cmdq->sem, msecs_to_jiffies(OHCA_CMD_TIMEOUT_MS))) {
		dev_err(&dev->pdev->dev,
			"no free command slot: the device stopped answering\n");
		return ERR_PTR(-ETIMEDOUT);
	}

	spin_lock_irqsave(&cmdq->lock, flags);
	for (i = 0; i < OHCA_CMDQ_DEPTH; i++) {
		if (cmdq->ctx[i].state == OHCA_CTX_FREE) {
			ctx = &cmdq->ctx[i];
			ctx->state = OHCA_CTX_POSTED;
			ctx->token = (u16)(cmdq->seq++ << OHCA_CMDQ_LOG) | i;
			ctx->status = 0;
			ctx->syndrome = 0;
			ctx->result = 0;
			reinit_completion(&ctx->done);
			break;
		}
	}
	spin_unlock_irqrestore(&cmdq->lock, flags);

	/* The semaphore counts free contexts, so one must exist. */
	if (WARN_ON(!ctx)) {
		up(&cmdq->sem);
		return ERR_PTR(-EIO);
	}
	return ctx;
}

static void ohca_ctx_put(struct ohca_dev *dev, struct ohca_cmd_ctx *ctx)
{
	unsigned long flags;

	spin_lock_irqsave(&dev->cmdq.lock, flags);
	ctx->state = OHCA_CTX_FREE;
	spin_unlock_irqrestore(&dev->cmdq.lock, flags);
	up(&dev->cmdq.sem);
}

/*
 * Post @entry (its token is set here) and wait for its completion.
 * Returns 0 with ctx->status/syndrome valid, or -ETIMEDOUT / -EIO. On
 * -ETIMEDOUT the device has been marked dead, which gave the context
 * back; the caller must not touch it again.
 */
static int ohca_cmd_post_wait(struct ohca_dev *dev, struct ohca_cmd_ctx *ctx,
			      struct ohca_cmd *entry)
{
	struct ohca_cmdq *cmdq = &dev->cmdq;
	unsigned long flags;
	unsigned long left;
	u16 slot;

	spin_lock_irqsave(&cmdq->lock, flags);
	/*
	 * Checked under the lock that ohca_cmdq_fail_all() takes after the
	 * flag is set: a command posted here is failed by it, one not
	 * posted never waits for a device that stopped.
	 */
	if (test_bit(OHCA_FLAG_FATAL, &dev->flags)) {
		spin_unlock_irqrestore(&cmdq->lock, flags);
		return -EIO;
	}
	entry->token = cpu_to_le16(ctx->token);
	entry->status = 0;
	entry->syndrome = 0;
	ctx->opcode = le16_to_cpu(entry->opcode);
	slot = cmdq->pi & (OHCA_CMDQ_DEPTH - 1);
	memcpy(&cmdq->ring[slot], entry, sizeof(*entry));
	cmdq->pi++;
	/* writel() orders the entry before the doorbell. */
	ohca_wr32(dev, OHCA_REG_CMDQ_PI, cmdq->pi & OHCA_RING_INDEX_MASK);
	spin_unlock_irqrestore(&cmdq->lock, flags);

	left = wait_for_completion_timeout(&ctx->done,
					   msecs_to_jiffies(OHCA_CMD_TIMEOUT_MS));
	if (left)
		return ctx->result;

	spin_lock_irqsave(&cmdq->lock, flags);
	if (ctx->state == OHCA_CTX_DONE) {
		/* Completed between the timeout and taking the lock. */
		spin_unlock_irqrestore(&cmdq->lock, flags);
		return ctx->result;
	}
	ctx->state = OHCA_CTX_ABANDONED;
	spin_unlock_irqrestore(&cmdq->lock, flags);

	ohca_check_fatal(dev);
	dev_err(&dev->pdev->dev,
		"command %s (0x%02x) token 0x%04x timed out after %u ms (DEV_STATUS 0x%x CMDQ_CI %u PI %u)\n",
		ohca_cmd_name(ctx->opcode), ctx->opcode, ctx->token,
		OHCA_CMD_TIMEOUT_MS, ohca_rd32(dev, OHCA_REG_DEV_STATUS),
		ohca_rd32(dev, OHCA_REG_CMDQ_CI), cmdq->pi);
	/* A device that misses one completion is not trusted with more. */
	ohca_mark_dead(dev, "command timeout");
	return -ETIMEDOUT;
}

/**
 * ohca_cmdq_complete() - a CMD_DONE event arrived
 * @dev: the function
 * @eqe: the event (token in param0, status in code, syndrome in param1)
 *
 * Wakes the command's waiter, or gives back the context of a command that
 * had timed out. A completion whose token matches no command in flight is
 * dropped. Called from the EQ 0 interrupt handler.
 */
void ohca_cmdq_complete(struct ohca_dev *dev, const struct ohca_eqe *eqe)
{
	struct ohca_cmdq *cmdq = &dev->cmdq;
	u16 token = le32_to_cpu(eqe->param0) & 0xffff;
	struct ohca_cmd_ctx *ctx = &cmdq->ctx[token & (OHCA_CMDQ_DEPTH - 1)];
	unsigned long flags;
	bool release = false;

	spin_lock_irqsave(&cmdq->lock, flags);
	if (ctx->token != token ||
	    (ctx->state != OHCA_CTX_POSTED &&
	     ctx->state != OHCA_CTX_ABANDONED)) {
		spin_unlock_irqrestore(&cmdq->lock, flags);
		dev_warn_ratelimited(&dev->pdev->dev,
				     "completion with unknown token 0x%04x dropped\n",
				     token);
		return;
	}
	ctx->status = le16_to_cpu(eqe->code) & 0xff;
	ctx->syndrome = le32_to_cpu(eqe->param1);
	if (ctx->state == OHCA_CTX_POSTED) {
		ctx->state = OHCA_CTX_DONE;
		complete(&ctx->done);
	} else {
		dev_warn(&dev->pdev->dev,
			 "late completion of command %s (0x%02x) token 0x%04x: status %s (0x%02x)\n",
			 ohca_cmd_name(ctx->opcode), ctx->opcode, token,
			 ohca_status_name(ctx->status), ctx->status);
		ctx->state = OHCA_CTX_FREE;
		release = true;
	}
	spin_unlock_irqrestore(&cmdq->lock, flags);

	if (release)
		up(&cmdq->sem);
}

/**
 * ohca_cmdq_fail_all() - fail every command of a stopped device
 * @dev: the function
 *
 * The device went fatal and will not complete anything: the waiters get
 * -EIO, and the contexts of commands that had timed out are given back.
 */
void ohca_cmdq_fail_all(struct ohca_dev *dev)
{
	struct ohca_cmdq *cmdq = &dev->cmdq;
	unsigned long flags;
	int released = 0;
	int i;

	spin_lock_irqsave(&cmdq->lock, flags);
	for (i = 0; i < OHCA_CMDQ_DEPTH; i++) {
		struct ohca_cmd_ctx *ctx = &cmdq->ctx[i];

		if (ctx->state == OHCA_CTX_POSTED) {
			ctx->result = -EIO;
			ctx->state = OHCA_CTX_DONE;
			complete(&ctx->done);
		} else if (ctx->state == OHCA_CTX_ABANDONED) {
			ctx->state = OHCA_CTX_FREE;
			released++;
		}
	}
	spin_unlock_irqrestore(&cmdq->lock, flags);

	while (released--)
		up(&cmdq->sem);
}

/**
 * ohca_cmd_exec() - run one command and wait for its answer
 * @dev: the function
 * @args: opcode, input (inline or through the input mailbox) and output
 *
 * Sleeps until the device answers, at most OHCA_CMD_TIMEOUT_MS; a device
 * that misses that is marked dead. The output is copied only on success. A
 * failure is logged rate-limited, and at debug level only for the statuses
 * a caller provokes (ohca_status_caller_caused()). Process context.
 *
 * Return: 0, the errno of the device's status (see kernel/README.md),
 * -ETIMEDOUT, or -EIO at once when the device is stopped.
 */
int ohca_cmd_exec(struct ohca_dev *dev, const struct ohca_cmd_args *args)
{
	struct ohca_cmd entry = {};
	struct ohca_cmd_ctx *ctx;
	int err;

	if (WARN_ON(args->in_len > OHCA_CMD_MAILBOX_MAX ||
		    args->out_len > OHCA_CMD_MAILBOX_MAX))
		return -EINVAL;
	if (test_bit(OHCA_FLAG_FATAL, &dev->flags))
		return -EIO;

	ctx = ohca_ctx_get(dev);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);

	entry.opcode = cpu_to_le16(args->opcode);
	entry.in_len = cpu_to_le16(args->in_len);
	entry.out_len = cpu_to_le16(args->out_len);
	if (args->in_len <= OHCA_CMD_INLINE_MAX) {
		if (args->in_len)
			memcpy(entry.inline_in, args->in, args->in_len);
	} else {
		memcpy(ctx->in_buf, args->in, args->in_len);
		entry.in_addr = cpu_to_le64(ctx->in_dma);
	}
	/*
	 * Outputs grow compatibly: a device of an older ABI writes less than
	 * out_len, and the bytes it leaves must read as zero, not as an
	 * earlier command's answer.
	 */
	if (args->out_len) {
		memset(ctx->out_buf, 0, args->out_len);
		entry.out_addr = cpu_to_le64(ctx->out_dma);
	}

	err = ohca_cmd_post_wait(dev, ctx, &entry);
	if (err == -ETIMEDOUT)
		return err;	/* the context was given back */
	if (!err) {
		err = ohca_status_to_errno(ctx->status);
		if (err)
			ohca_cmd_log_failure(dev, args->opcode, ctx->status,
					     ctx->syndrome);
		else if (args->out_len)
			memcpy(args->out, ctx->out_buf, args->out_len);
	}
	ohca_ctx_put(dev, ctx);
	return err;
}
EXPORT_SYMBOL_GPL(ohca_cmd_exec);

/**
 * ohca_cmd_create() - run a CREATE_* (or ALLOC_*) command
 * @dev: the function
 * @opcode: the command
 * @in: its input
 * @in_len: the input's length
 * @handle: the new object's handle (struct ohca_create_out.handle)
 * @handle2: its second handle (an MR's rkey), or NULL
 *
 * Return: as ohca_cmd_exec(); the handles are set only on success.
 */
int ohca_cmd_create(struct ohca_dev *dev, u16 opcode, const void *in,
		    u16 in_len, u32 *handle, u32 *handle2)
{
	struct ohca_create_out out;
	struct ohca_cmd_args args = {
		.opcode = opcode,
		.in = in,
		.in_len = in_len,
		.out = &out,
		.out_len = sizeof(out),
	};
	int err;

	err = ohca_cmd_exec(dev, &args);
	if (err)
		return err;
	*handle = le32_to_cpu(out.handle);
	if (handle2)
		*handle2 = le32_to_cpu(out.handle2);
	return 0;
}
EXPORT_SYMBOL_GPL(ohca_cmd_create);

/**
 * ohca_cmd_destroy() - run a DESTROY_* (or DEALLOC_*, FREE_*) command
 * @dev: the function
 * @opcode: the command
 * @handle: the object's handle
 *
 * Return: as ohca_cmd_exec().
 */
int ohca_cmd_destroy(struct ohca_dev *dev, u16 opcode, u32 handle)
{
	struct ohca_handle_in in = { .handle = cpu_to_le32(handle) };
	struct ohca_cmd_args args = {
		.opcode = opcode,
		.in = &in,
		.in_len = sizeof(in),
	};

	return ohca_cmd_exec(dev, &args);
}
EXPORT_SYMBOL_GPL(ohca_cmd_destroy);

/**
 * ohca_cmd_exec_template() - post a debugfs malformed-command template
 * @dev: the function
 * @entry: the command entry, built by ohca_debugfs.c: only the token is set
 *         here; on return it holds the device's status and syndrome
 * @use_mbox: out_addr becomes the driver's output mailbox
 * @out: where the mailbox's first @out_cap bytes are copied (may be NULL)
 * @out_cap: how many bytes of the mailbox to copy
 *
 * Failures are the point here and only logged at debug level.
 *
 * Return: 0 once the device answered (whatever its status), -ETIMEDOUT,
 * or -EIO when the device is stopped.
 */
int ohca_cmd_exec_template(struct ohca_dev *dev, struct ohca_cmd *entry,
			   bool use_mbox, void *out, u16 out_cap)
{
	struct ohca_cmd_ctx *ctx;
	u16 opcode;
	int err;

	if (test_bit(OHCA_FLAG_FATAL, &dev->flags))
		return -EIO;

	ctx = ohca_ctx_get(dev);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);

	if (use_mbox) {
		memset(ctx->out_buf, 0, OHCA_CMD_MAILBOX_MAX);
		entry->out_addr = cpu_to_le64(ctx->out_dma);
	}
	opcode = le16_to_cpu(entry->opcode);

	err = ohca_cmd_post_wait(dev, ctx, entry);
	if (err == -ETIMEDOUT)
		return err;
	if (!err) {
		entry->status = ctx->status;
		entry->syndrome = cpu_to_le32(ctx->syndrome);
		dev_dbg(&dev->pdev->dev,
			"template command 0x%02x: status %s (0x%02x) syndrome 0x%x\n",
			opcode, ohca_status_name(ctx->status), ctx->status,
			ctx->syndrome);
		if (use_mbox && out)
			memcpy(out, ctx->out_buf,
			       min_t(u16, out_cap, OHCA_CMD_MAILBOX_MAX));
	}
	ohca_ctx_put(dev, ctx);
	return err;
}

/**
 * ohca_cmd_query_port() - QUERY_PORT of port 1
 * @dev: the function
 * @out: the port's state, MTU and MAC; its InfiniBand fields too (ABI
 *       1.5: a device of ABI 1.4 writes the first 64 bytes only, the rest
 *       reads as zero, an Ethernet port)
 *
 * Return: as ohca_cmd_exec().
 */
int ohca_cmd_query_port(struct ohca_dev *dev, struct ohca_query_port_out *out)
{
	struct ohca_query_port_in in = { .port = 1 };
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_QUERY_PORT,
		.in = &in,
		.in_len = sizeof(in),
		.out = out,
		.out_len = sizeof(*out),
	};

	return ohca_cmd_exec(dev, &args);
}

/**
 * ohca_cmd_set_port() - SET_PORT of port 1
 * @dev: the function
 * @mask: the fields to set (OHCA_SET_PORT_*)
 * @mtu: the new MTU, with its mask bit
 * @rx_mode: the new receive filter mode, with its mask bit
 *
 * Return: as ohca_cmd_exec().
 */
int ohca_cmd_set_port(struct ohca_dev *dev, u32 mask, u32 mtu, u32 rx_mode)
{
	struct ohca_set_port_in in = {
		.port = 1,
		.mask = cpu_to_le32(mask),
		.mtu = cpu_to_le32(mtu),
		.rx_mode = cpu_to_le32(rx_mode),
	};
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_SET_PORT,
		.in = &in,
		.in_len = sizeof(in),
	};

	return ohca_cmd_exec(dev, &args);
}
