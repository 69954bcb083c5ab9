// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca: debugfs test hooks, /sys/kernel/debug/ohca/<pci-name>/.
 *
 * cmd    write one raw 64-byte struct ohca_cmd; the driver replaces only
 *        the token (an out_addr of all ones selects the driver's own
 *        output mailbox) and posts it. Reading the same open file gives
 *        "status 0x.. syndrome 0x........" and, for the driver mailbox,
 *        "out <hex>" with the output bytes. Each open file keeps its own
 *        last result.
 * stats  the device counters (QUERY_STATS).
 *
 * /sys/kernel/debug/ohca/fail_init, module-wide: writing N > 0 makes the
 * next device bring-up (probe or the end of a function reset) fail with
 * -EIO instead of running its step N, once; the file reads 0 again when
 * that happened. This exercises the error unwinding of every step.
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "ohca.h"

#define OHCA_DBG_OUT_MAX	256

static struct dentry *ohca_debugfs_root;
static u32 ohca_dbg_fail_init;		/* see above; taken by cmpxchg */

struct ohca_dbg_cmd {
	struct ohca_dev *dev;
	struct mutex lock;		/* guards the fields below */
	bool valid;
	bool mbox;
	struct ohca_cmd entry;
	u8 out[OHCA_DBG_OUT_MAX];
};

static int ohca_dbg_cmd_open(struct inode *inode, struct file *file)
{
	struct ohca_dbg_cmd *st;

	st = kzalloc(sizeof(*st), GFP_KERNEL);
	if (!st)
		return -ENOMEM;
	st->dev = inode->i_private;
	mutex_init(&st->lock);
	file->private_data = st;
	return nonseekable_open(inode, file);
}

static int ohca_dbg_cmd_release(struct inode *inode, struct file *file)
{
	struct ohca_dbg_cmd *st = file->private_data;

	mutex_destroy(&st->lock);
	kfree(st);
	return 0;
}

static ssize_t ohca_dbg_cmd_write(struct file *file, const char __user *buf,
				  size_t count, loff_t *ppos)
{
	struct ohca_dbg_cmd *st = file->private_data;
	struct ohca_cmd entry;
	int err;

	if (count != sizeof(entry))
		return -EINVAL;
	if (copy_from_user(&entry, buf, sizeof(entry)))
		return -EFAULT;

	mutex_lock(&st->lock);
	st->valid = false;
	st->mbox = le64_to_cpu(entry.out_addr) == U64_MAX;
	memset(st->out, 0, sizeof(st->out));
	err = ohca_cmd_exec_raw(st->dev, &entry, st->out, sizeof(st->out));
	if (!err) {
		st->entry = entry;
		st->valid = true;
	}
	mutex_unlock(&st->lock);
	return err ? err : count;
}

static ssize_t ohca_dbg_cmd_read(struct file *file, char __user *buf,
				 size_t count, loff_t *ppos)
{
	struct ohca_dbg_cmd *st = file->private_data;
	size_t size = 64 + 3 * OHCA_DBG_OUT_MAX;
	size_t len = 0;
	ssize_t ret;
	char *text;
	u32 i, n;

	text = kzalloc(size, GFP_KERNEL);
	if (!text)
		return -ENOMEM;

	mutex_lock(&st->lock);
	if (!st->valid) {
		mutex_unlock(&st->lock);
		kfree(text);
		return -ENODATA;
	}
	len = scnprintf(text, size, "status 0x%02x syndrome 0x%08x\n",
			st->entry.status, le32_to_cpu(st->entry.syndrome));
	if (st->mbox) {
		n = min_t(u32, le16_to_cpu(st->entry.out_len),
			  OHCA_DBG_OUT_MAX);
		len += scnprintf(text + len, size - len, "out");
		for (i = 0; i < n; i++)
			len += scnprintf(text + len, size - len, " %02x",
					 st->out[i]);
		len += scnprintf(text + len, size - len, "\n");
	}
	mutex_unlock(&st->lock);

	ret = simple_read_from_buffer(buf, count, ppos, text, len);
	kfree(text);
	return ret;
}

static const struct file_operations ohca_dbg_cmd_fops = {
	.owner = THIS_MODULE,
	.open = ohca_dbg_cmd_open,
	.release = ohca_dbg_cmd_release,
	.read = ohca_dbg_cmd_read,
	.write = ohca_dbg_cmd_write,
	.llseek = no_llseek,
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

void ohca_debugfs_init(struct ohca_dev *dev)
{
	if (!ohca_debugfs_root)
		return;
	dev->debugfs = debugfs_create_dir(pci_name(dev->pdev),
					  ohca_debugfs_root);
	debugfs_create_file("cmd", 0600, dev->debugfs, dev, &ohca_dbg_cmd_fops);
	debugfs_create_file("stats", 0400, dev->debugfs, dev,
			    &ohca_dbg_stats_fops);
}

void ohca_debugfs_cleanup(struct ohca_dev *dev)
{
	debugfs_remove_recursive(dev->debugfs);
	dev->debugfs = NULL;
}

/* Counts the bring-up steps in @step; -EIO if fail_init names this one. */
int ohca_init_fault(struct ohca_dev *dev, unsigned int *step)
{
	u32 n = ++*step;

	if (cmpxchg(&ohca_dbg_fail_init, n, 0) != n)
		return 0;
	dev_info(&dev->pdev->dev, "fail_init: failing bring-up step %u\n", n);
	return -EIO;
}

void ohca_debugfs_module_init(void)
{
	ohca_debugfs_root = debugfs_create_dir(DRV_NAME, NULL);
	if (IS_ERR(ohca_debugfs_root)) {
		ohca_debugfs_root = NULL;
		return;
	}
	debugfs_create_u32("fail_init", 0600, ohca_debugfs_root,
			   &ohca_dbg_fail_init);
}

void ohca_debugfs_module_exit(void)
{
	debugfs_remove_recursive(ohca_debugfs_root);
	ohca_debugfs_root = NULL;
}
