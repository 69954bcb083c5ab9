// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca: debugfs, /sys/kernel/debug/ohca/<pci-name>/.
 *
 * malformed  the driver's own malformed-command templates, for checking
 *            the device's validation from the guest (kernel/tools/
 *            ohca-cmdtest). Reading a freshly opened file lists the
 *            template names; writing a name posts that template and
 *            reading the same open file then gives "status 0x..
 *            syndrome 0x........" and, when the template uses the
 *            driver's output mailbox, "out <hex>". No value of a
 *            template comes from user space: a template cannot name
 *            guest memory (its addresses are the driver's mailbox or
 *            OHCA_DBG_FAR, beyond any RAM) or an object the driver or
 *            a user context tracks.
 * stats      the device counters (QUERY_STATS).
 * cc_params/<name>  one DCQCN parameter each (OHCA_CMD_CC_PARAM), under
 *            mlx5's names: reading gives the value, writing a decimal
 *            value sets it (-EINVAL outside its range, docs/congestion.md).
 * events_dropped  RDMA events that came with no RDMA driver bound.
 *
 * /sys/kernel/debug/ohca/fail_init/ (module-wide, with
 * CONFIG_FAULT_INJECTION_DEBUG_FS): the kernel's fault-injection
 * attributes (Documentation/fault-injection/) for the device bring-up
 * (probe or the end of a function reset), one should_fail() call per
 * step, so that tests reach the error unwinding of every step: with
 * probability 100 and times 1, "space" N fails step N.
 */
#include <linux/debugfs.h>
#include <linux/fault-inject.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "ohca_core_priv.h"

#define OHCA_DBG_OUT_MAX	256
/* A bus address far beyond any guest RAM, as in the hostile-guest tests. */
#define OHCA_DBG_FAR		0xfff0000000000ULL

static struct dentry *ohca_debugfs_root;
#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
static DECLARE_FAULT_ATTR(ohca_fail_init);
#endif

/* Where a template's in_addr or out_addr points. */
enum ohca_dbg_addr {
	OHCA_DBG_NONE,		/* 0 */
	OHCA_DBG_MBOX,		/* the driver's own mailbox of the command */
	OHCA_DBG_UNMAPPED,	/* OHCA_DBG_FAR */
};

union ohca_dbg_in {
	u8 raw[OHCA_CMD_INLINE_MAX];
	struct ohca_query_port_in query_port;
	struct ohca_set_port_in set_port;
	struct ohca_add_gid_in add_gid;
	struct ohca_del_gid_in del_gid;
	struct ohca_create_eth_ring_in ring;
	struct ohca_destroy_eth_ring_in dring;
	struct ohca_dealloc_uar_in uar;
};

struct ohca_dbg_case {
	const char *name;
	u16 opcode;
	u16 in_len;
	u16 out_len;
	u8 rsvd0;
	u16 rsvd1;
	u8 in_addr;		/* enum ohca_dbg_addr */
	u8 out_addr;		/* enum ohca_dbg_addr */
	union ohca_dbg_in in;
};

/* Every field of a template given once (no initializer overrides). */
#define OHCA_DBG_IN(member, len, ...) \
	.in = { .member = { __VA_ARGS__ } }, .in_len = (len)
#define OHCA_DBG_QPORT(p, r2, ilen, olen) \
	.opcode = OHCA_CMD_QUERY_PORT, \
	.in = { .query_port = { .port = (p), .rsvd = { [2] = (r2) } } }, \
	.in_len = (ilen), .out_len = (olen), .out_addr = OHCA_DBG_MBOX
#define OHCA_DBG_QPORT_OK(p, r2) \
	OHCA_DBG_QPORT(p, r2, sizeof(struct ohca_query_port_in), \
		       sizeof(struct ohca_query_port_out))
#define OHCA_DBG_SETP(p, r0, msk, m, rx) \
	.opcode = OHCA_CMD_SET_PORT, \
	OHCA_DBG_IN(set_port, sizeof(struct ohca_set_port_in), .port = (p), .rsvd0 = { (r0) }, \
		    .mask = cpu_to_le32(msk), .mtu = cpu_to_le32(m), \
		    .rx_mode = cpu_to_le32(rx))
#define OHCA_DBG_GID(idx, p, t, r) \
	.opcode = OHCA_CMD_ADD_GID, \
	OHCA_DBG_IN(add_gid, sizeof(struct ohca_add_gid_in), \
		    .gid = { [10] = 0xff, [11] = 0xff, 10, 99, 0, 1 }, \
		    .index = cpu_to_le16(idx), .port = (p), .type = (t), \
		    .mac = { 0x02, 0, 0, 0, 0x99, 0x01 }, \
		    .vlan_id = cpu_to_le16(0xffff), .rsvd = cpu_to_le32(r))
#define OHCA_DBG_RING(t, lg, b, r1) \
	.opcode = OHCA_CMD_CREATE_ETH_RING, \
	OHCA_DBG_IN(ring, sizeof(struct ohca_create_eth_ring_in), .type = (t), .log_size = (lg), \
		    .rsvd1 = cpu_to_le32(r1), .base = cpu_to_le64(b))

#define OHCA_GID_V4	OHCA_GID_TYPE_ROCE_V2_IPV4
#define OHCA_MTU	OHCA_SET_PORT_MTU
#define OHCA_RXM	OHCA_SET_PORT_RX_MODE

/*
 * The templates: each must be refused by the device with the status and
 * syndrome kernel/tools/ohca-cmdtest expects, except the last three,
 * which show the device still answers.
 */
static const struct ohca_dbg_case ohca_dbg_cases[] = {
	/* opcodes */
	{ "opcode_0x7f", .opcode = 0x7f },
	{ "opcode_0xffff", .opcode = 0xffff },
	{ "opcode_after_query_stats", .opcode = OHCA_CMD_QUERY_STATS + 1 },
	{ "opcode_max", .opcode = OHCA_CMD_MAX },
	/* lengths */
	{ "nop_with_input", .opcode = OHCA_CMD_NOP,
	  .in = { .raw = { 1, 2, 3, 4 } }, .in_len = 4 },
	{ "query_port_input_short",
	  OHCA_DBG_QPORT(1, 0, 4, sizeof(struct ohca_query_port_out)) },
	{ "query_port_input_long",
	  OHCA_DBG_QPORT(1, 0, sizeof(struct ohca_query_port_in) + 8,
			 sizeof(struct ohca_query_port_out)) },
	{ "query_port_output_small",
	  OHCA_DBG_QPORT(1, 0, sizeof(struct ohca_query_port_in), 16) },
	{ "query_device_no_output", .opcode = OHCA_CMD_QUERY_DEVICE },
	{ "input_over_mailbox_max", .opcode = OHCA_CMD_SET_PORT,
	  .in_len = OHCA_CMD_MAILBOX_MAX + 1, .in_addr = OHCA_DBG_UNMAPPED },
	{ "output_over_mailbox_max", .opcode = OHCA_CMD_QUERY_STATS,
	  .out_len = 2 * OHCA_CMD_MAILBOX_MAX, .out_addr = OHCA_DBG_UNMAPPED },
	/* reserved bits and fields */
	{ "entry_rsvd0", .opcode = OHCA_CMD_NOP, .rsvd0 = 1 },
	{ "entry_rsvd1", .opcode = OHCA_CMD_NOP, .rsvd1 = 0x100 },
	{ "out_addr_without_out_len", .opcode = OHCA_CMD_NOP,
	  .out_addr = OHCA_DBG_MBOX },
	{ "query_port_rsvd", OHCA_DBG_QPORT_OK(1, 1) },
	{ "set_port_rsvd", OHCA_DBG_SETP(1, 1, 0, 1500, 0) },
	{ "set_port_unknown_mask", OHCA_DBG_SETP(1, 0, 1u << 7, 1500, 0) },
	{ "set_port_unknown_rx_mode",
	  OHCA_DBG_SETP(1, 0, OHCA_RXM, 1500, 1u << 9) },
	{ "create_eth_ring_rsvd",
	  OHCA_DBG_RING(OHCA_ETH_RING_TX, 4, OHCA_DBG_FAR, 1) },
	{ "add_gid_rsvd", OHCA_DBG_GID(0, 1, OHCA_GID_V4, 1) },
	/* ports and fields */
	{ "query_port_2", OHCA_DBG_QPORT_OK(2, 0) },
	{ "query_port_0", OHCA_DBG_QPORT_OK(0, 0) },
	{ "set_port_2", OHCA_DBG_SETP(2, 0, OHCA_MTU, 1500, 0) },
	{ "set_port_mtu_high",
	  OHCA_DBG_SETP(1, 0, OHCA_MTU, OHCA_ETH_MAX_MTU + 1, 0) },
	{ "set_port_mtu_low",
	  OHCA_DBG_SETP(1, 0, OHCA_MTU, OHCA_ETH_MIN_MTU - 1, 0) },
	{ "add_gid_index_range", OHCA_DBG_GID(0xffff, 1, OHCA_GID_V4, 0) },
	{ "add_gid_port_2", OHCA_DBG_GID(0, 2, OHCA_GID_V4, 0) },
	{ "add_gid_bad_type", OHCA_DBG_GID(0, 1, 7, 0) },
	{ "del_gid_index_range", .opcode = OHCA_CMD_DEL_GID,
	  OHCA_DBG_IN(del_gid, sizeof(struct ohca_del_gid_in),
		      .index = cpu_to_le16(0xffff), .port = 1) },
	/* ring parameters (the base is OHCA_DBG_FAR: never guest memory) */
	{ "create_eth_ring_log_high",
	  OHCA_DBG_RING(OHCA_ETH_RING_TX, OHCA_ETH_RING_LOG_MAX + 1,
			OHCA_DBG_FAR, 0) },
	{ "create_eth_ring_log_low",
	  OHCA_DBG_RING(OHCA_ETH_RING_TX, OHCA_ETH_RING_LOG_MIN - 1,
			OHCA_DBG_FAR, 0) },
	{ "create_eth_ring_bad_type", OHCA_DBG_RING(2, 4, OHCA_DBG_FAR, 0) },
	{ "create_eth_ring_unaligned",
	  OHCA_DBG_RING(OHCA_ETH_RING_TX, 4, OHCA_DBG_FAR + 8, 0) },
	{ "destroy_eth_ring_bad_type", .opcode = OHCA_CMD_DESTROY_ETH_RING,
	  OHCA_DBG_IN(dring, sizeof(struct ohca_destroy_eth_ring_in),
		      .type = 9) },
	/* mailboxes beyond guest RAM */
	{ "query_device_output_far", .opcode = OHCA_CMD_QUERY_DEVICE,
	  .out_len = sizeof(struct ohca_query_device_out),
	  .out_addr = OHCA_DBG_UNMAPPED },
	{ "query_stats_output_far", .opcode = OHCA_CMD_QUERY_STATS,
	  .out_len = sizeof(struct ohca_query_stats_out),
	  .out_addr = OHCA_DBG_UNMAPPED },
	{ "set_port_input_far", .opcode = OHCA_CMD_SET_PORT, .in_len = 48,
	  .in_addr = OHCA_DBG_UNMAPPED },
	/* UAR pages no context can free: the kernel's (QP 1 on it), past the BAR */
	{ "dealloc_uar_0", .opcode = OHCA_CMD_DEALLOC_UAR,
	  OHCA_DBG_IN(uar, sizeof(struct ohca_dealloc_uar_in),
		      .uar_index = 0) },
	{ "dealloc_uar_past_bar", .opcode = OHCA_CMD_DEALLOC_UAR,
	  OHCA_DBG_IN(uar, sizeof(struct ohca_dealloc_uar_in),
		      .uar_index = cpu_to_le32(OHCA_NUM_DB_PAGES)) },
	/* the device still answers */
	{ "nop", .opcode = OHCA_CMD_NOP },
	{ "query_device", .opcode = OHCA_CMD_QUERY_DEVICE,
	  .out_len = sizeof(struct ohca_query_device_out),
	  .out_addr = OHCA_DBG_MBOX },
	{ "query_port", OHCA_DBG_QPORT_OK(1, 0) },
};

struct ohca_dbg_run {
	struct ohca_dev *dev;
	struct mutex lock;		/* guards the fields below */
	const struct ohca_dbg_case *last;	/* NULL: nothing run yet */
	u8 status;
	u32 syndrome;
	u8 out[OHCA_DBG_OUT_MAX];
};

static u64 ohca_dbg_addr(u8 kind)
{
	return kind == OHCA_DBG_UNMAPPED ? OHCA_DBG_FAR : 0;
}

static int ohca_dbg_malformed_open(struct inode *inode, struct file *file)
{
	struct ohca_dbg_run *st;

	st = kzalloc(sizeof(*st), GFP_KERNEL);
	if (!st)
		return -ENOMEM;
	st->dev = inode->i_private;
	mutex_init(&st->lock);
	file->private_data = st;
	return nonseekable_open(inode, file);
}

static int ohca_dbg_malformed_release(struct inode *inode, struct file *file)
{
	struct ohca_dbg_run *st = file->private_data;

	mutex_destroy(&st->lock);
	kfree(st);
	return 0;
}

static ssize_t ohca_dbg_malformed_write(struct file *file,
					const char __user *buf, size_t count,
					loff_t *ppos)
{
	struct ohca_dbg_run *st = file->private_data;
	const struct ohca_dbg_case *c = NULL;
	struct ohca_cmd entry = {};
	char name[48];
	size_t i, len;
	int err;

	len = min(count, sizeof(name) - 1);
	if (copy_from_user(name, buf, len))
		return -EFAULT;
	name[len] = '\0';
	strim(name);
	for (i = 0; i < ARRAY_SIZE(ohca_dbg_cases); i++)
		if (!strcmp(name, ohca_dbg_cases[i].name))
			c = &ohca_dbg_cases[i];
	if (!c)
		return -EINVAL;

	entry.opcode = cpu_to_le16(c->opcode);
	entry.rsvd0 = c->rsvd0;
	entry.in_len = cpu_to_le16(c->in_len);
	entry.out_len = cpu_to_le16(c->out_len);
	entry.rsvd1 = cpu_to_le16(c->rsvd1);
	entry.in_addr = cpu_to_le64(ohca_dbg_addr(c->in_addr));
	entry.out_addr = cpu_to_le64(ohca_dbg_addr(c->out_addr));
	memcpy(entry.inline_in, c->in.raw, sizeof(entry.inline_in));

	mutex_lock(&st->lock);
	st->last = NULL;
	memset(st->out, 0, sizeof(st->out));
	err = ohca_cmd_exec_template(st->dev, &entry,
				     c->out_addr == OHCA_DBG_MBOX,
				     st->out, sizeof(st->out));
	if (!err) {
		st->last = c;
		st->status = entry.status;
		st->syndrome = le32_to_cpu(entry.syndrome);
	}
	mutex_unlock(&st->lock);
	return err ? err : count;
}

static ssize_t ohca_dbg_malformed_read(struct file *file, char __user *buf,
				       size_t count, loff_t *ppos)
{
	struct ohca_dbg_run *st = file->private_data;
	size_t size = 64 + 3 * OHCA_DBG_OUT_MAX;
	size_t len = 0;
	ssize_t ret;
	char *text;
	u32 i, n;

	size = max_t(size_t, size, ARRAY_SIZE(ohca_dbg_cases) * 48);
	text = kzalloc(size, GFP_KERNEL);
	if (!text)
		return -ENOMEM;

	mutex_lock(&st->lock);
	if (!st->last) {
		for (i = 0; i < ARRAY_SIZE(ohca_dbg_cases); i++)
			len += scnprintf(text + len, size - len, "%s\n",
					 ohca_dbg_cases[i].name);
	} else {
		len = scnprintf(text, size, "status 0x%02x syndrome 0x%08x\n",
				st->status, st->syndrome);
		if (st->last->out_addr == OHCA_DBG_MBOX) {
			n = min_t(u32, st->last->out_len, OHCA_DBG_OUT_MAX);
			len += scnprintf(text + len, size - len, "out");
			for (i = 0; i < n; i++)
				len += scnprintf(text + len, size - len, " %02x",
						 st->out[i]);
			len += scnprintf(text + len, size - len, "\n");
		}
	}
	mutex_unlock(&st->lock);

	ret = simple_read_from_buffer(buf, count, ppos, text, len);
	kfree(text);
	return ret;
}

static const struct file_operations ohca_dbg_malformed_fops = {
	.owner = THIS_MODULE,
	.open = ohca_dbg_malformed_open,
	.release = ohca_dbg_malformed_release,
	.read = ohca_dbg_malformed_read,
	.write = ohca_dbg_malformed_write,
	/* no .llseek: not seekable (no_llseek was NULL, and is gone in 6.12) */
};

static int ohca_dbg_stats_show(struct seq_file *s, void *unused)
{
	struct ohca_dev *dev = s->private;
	struct ohca_query_stats_out out;
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_QUERY_STATS,
		.out = &out,
		.out_len = sizeof(out),
	};
	int err;

	err = ohca_cmd_exec(dev, &args);
	if (err)
		return err;

#define OHCA_SHOW(field) \
	seq_printf(s, "%-24s %llu\n", #field, le64_to_cpu(out.field))
	OHCA_SHOW(eth_rx_frames);
	OHCA_SHOW(eth_rx_bytes);
	OHCA_SHOW(eth_rx_dropped_no_desc);
	OHCA_SHOW(eth_rx_dropped_filter);
	OHCA_SHOW(eth_rx_dropped_too_long);
	OHCA_SHOW(eth_tx_frames);
	OHCA_SHOW(eth_tx_bytes);
	OHCA_SHOW(eth_tx_errors);
	OHCA_SHOW(roce_rx_frames);
	OHCA_SHOW(roce_rx_dropped);
	OHCA_SHOW(cmd_completed);
	OHCA_SHOW(cmd_failed);
	OHCA_SHOW(reg_errors);
	OHCA_SHOW(db_errors);
	OHCA_SHOW(eth_rx_errors);
#undef OHCA_SHOW
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ohca_dbg_stats);

/* The files of cc_params/, indexed by enum ohca_cc_param. */
static const char * const ohca_cc_names[OHCA_CC_PARAM_MAX] = {
	[OHCA_CC_RP_ENABLE_MASK]		= "rp_enable_mask",
	[OHCA_CC_NP_ENABLE_MASK]		= "np_enable_mask",
	[OHCA_CC_RP_CLAMP_TGT_RATE]		= "rp_clamp_tgt_rate",
	[OHCA_CC_RP_CLAMP_TGT_RATE_ATI]		= "rp_clamp_tgt_rate_ati",
	[OHCA_CC_RP_TIME_RESET]			= "rp_time_reset",
	[OHCA_CC_RP_BYTE_RESET]			= "rp_byte_reset",
	[OHCA_CC_RP_THRESHOLD]			= "rp_threshold",
	[OHCA_CC_RP_AI_RATE]			= "rp_ai_rate",
	[OHCA_CC_RP_HAI_RATE]			= "rp_hai_rate",
	[OHCA_CC_RP_MIN_DEC_FAC]		= "rp_min_dec_fac",
	[OHCA_CC_RP_MIN_RATE]			= "rp_min_rate",
	[OHCA_CC_RP_RATE_TO_SET_ON_FIRST_CNP]	= "rp_rate_to_set_on_first_cnp",
	[OHCA_CC_RP_DCE_TCP_G]			= "rp_dce_tcp_g",
	[OHCA_CC_RP_DCE_TCP_RTT]		= "rp_dce_tcp_rtt",
	[OHCA_CC_RP_RATE_REDUCE_MONITOR_PERIOD]	= "rp_rate_reduce_monitor_period",
	[OHCA_CC_RP_INITIAL_ALPHA_VALUE]	= "rp_initial_alpha_value",
	[OHCA_CC_RP_GD]				= "rp_gd",
	[OHCA_CC_NP_MIN_TIME_BETWEEN_CNPS]	= "np_min_time_between_cnps",
	[OHCA_CC_NP_CNP_DSCP]			= "np_cnp_dscp",
	[OHCA_CC_NP_CNP_PRIO_MODE]		= "np_cnp_prio_mode",
	[OHCA_CC_NP_CNP_PRIO]			= "np_cnp_prio",
};

static int ohca_cc_param(struct ohca_cc_file *f, u32 op, u32 value, u32 *out)
{
	return ohca_cc_param_cmd(f->dev, f->param, op, value, out);
}

static int ohca_cc_get(void *data, u64 *val)
{
	u32 v;
	int err;

	err = ohca_cc_param(data, OHCA_CC_PARAM_GET, 0, &v);
	if (!err)
		*val = v;
	return err;
}

static int ohca_cc_set(void *data, u64 val)
{
	if (val > U32_MAX)
		return -EINVAL;
	return ohca_cc_param(data, OHCA_CC_PARAM_SET, (u32)val, NULL);
}
DEFINE_DEBUGFS_ATTRIBUTE(ohca_cc_fops, ohca_cc_get, ohca_cc_set, "%llu\n");

static void ohca_cc_debugfs_init(struct ohca_dev *dev)
{
	struct dentry *dir = debugfs_create_dir("cc_params", dev->debugfs);
	u32 i;

	for (i = 0; i < OHCA_CC_PARAM_MAX; i++) {
		dev->cc_files[i].dev = dev;
		dev->cc_files[i].param = i;
		debugfs_create_file_unsafe(ohca_cc_names[i], 0600, dir,
					   &dev->cc_files[i], &ohca_cc_fops);
	}
}

/**
 * ohca_debugfs_init() - create the function's debugfs directory
 * @dev: the function
 *
 * /sys/kernel/debug/ohca/<pci-name>/ with malformed, stats,
 * events_dropped and cc_params/; nothing without the module's root
 * directory.
 */
void ohca_debugfs_init(struct ohca_dev *dev)
{
	if (!ohca_debugfs_root)
		return;
	dev->debugfs = debugfs_create_dir(pci_name(dev->pdev),
					  ohca_debugfs_root);
	debugfs_create_file("malformed", 0600, dev->debugfs, dev,
			    &ohca_dbg_malformed_fops);
	debugfs_create_file("stats", 0400, dev->debugfs, dev,
			    &ohca_dbg_stats_fops);
	/* RDMA events that arrived with no RDMA driver bound. */
	debugfs_create_atomic_t("events_dropped", 0400, dev->debugfs,
				&dev->events_dropped);
	ohca_cc_debugfs_init(dev);
}

/**
 * ohca_debugfs_cleanup() - remove the function's debugfs directory
 * @dev: the function
 */
void ohca_debugfs_cleanup(struct ohca_dev *dev)
{
	debugfs_remove_recursive(dev->debugfs);
	dev->debugfs = NULL;
}

/**
 * ohca_init_fault() - fault injection point of the bring-up
 * @dev: the function
 * @step: the bring-up step counter, incremented here
 *
 * With CONFIG_FAULT_INJECTION_DEBUG_FS, the fail_init attributes pick the
 * steps that fail.
 *
 * Return: 0, or -EIO if fail_init fails this step.
 */
int ohca_init_fault(struct ohca_dev *dev, unsigned int *step)
{
	++*step;
#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
	if (should_fail(&ohca_fail_init, 1)) {
		dev_info(&dev->pdev->dev,
			 "fail_init: failing bring-up step %u\n", *step);
		return -EIO;
	}
#endif
	return 0;
}

/**
 * ohca_debugfs_module_init() - create /sys/kernel/debug/ohca
 *
 * And the fail_init fault-injection attributes in it, when the kernel has
 * CONFIG_FAULT_INJECTION_DEBUG_FS. Module init; failures leave debugfs off.
 */
void ohca_debugfs_module_init(void)
{
	ohca_debugfs_root = debugfs_create_dir("ohca", NULL);
	if (IS_ERR(ohca_debugfs_root)) {
		ohca_debugfs_root = NULL;
		return;
	}
#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
	fault_create_debugfs_attr("fail_init", ohca_debugfs_root,
				  &ohca_fail_init);
#endif
}

/**
 * ohca_debugfs_module_exit() - remove /sys/kernel/debug/ohca
 */
void ohca_debugfs_module_exit(void)
{
	debugfs_remove_recursive(ohca_debugfs_root);
	ohca_debugfs_root = NULL;
}
