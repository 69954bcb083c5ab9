// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca: DCQCN's per-priority switches as mlx5's tools expect them,
 * /sys/class/net/<if>/ecn/roce_rp/enable/<prio> and
 * /sys/class/net/<if>/ecn/roce_np/enable/<prio> (0 or 1): the bits of the
 * device's OHCA_CC_RP_ENABLE_MASK and OHCA_CC_NP_ENABLE_MASK parameters
 * (OHCA_CMD_CC_PARAM; the other parameters are in debugfs cc_params/,
 * docs/congestion.md).
 */
#include <linux/kobject.h>
#include <linux/sysfs.h>

#include "ohca_core_priv.h"

static struct ohca_ecn_attr *to_ecn_attr(struct kobj_attribute *attr)
{
	return container_of(attr, struct ohca_ecn_attr, attr);
}

static u32 ohca_ecn_param(const struct ohca_ecn_attr *a)
{
	return a->np ? OHCA_CC_NP_ENABLE_MASK : OHCA_CC_RP_ENABLE_MASK;
}

/**
 * ohca_cc_param_cmd() - get or set one DCQCN parameter (OHCA_CMD_CC_PARAM)
 * @dev: the device
 * @param: OHCA_CC_* parameter
 * @op: OHCA_CC_PARAM_GET or OHCA_CC_PARAM_SET
 * @value: the new value (SET)
 * @out: where the device's current value goes, or NULL
 *
 * Used by the ecn/ switches here and by debugfs cc_params/.
 *
 * Return: 0, or the command's error (-EINVAL for a value out of range).
 */
int ohca_cc_param_cmd(struct ohca_dev *dev, u32 param, u32 op, u32 value,
		      u32 *out)
{
	struct ohca_cc_param_in in = {
		.param = cpu_to_le32(param),
		.op = cpu_to_le32(op),
		.value = cpu_to_le32(value),
	};
	struct ohca_cc_param_out res = {};
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_CC_PARAM,
		.in = &in,
		.in_len = sizeof(in),
		.out = &res,
		.out_len = sizeof(res),
	};
	int err;

	err = ohca_cmd_exec(dev, &args);
	if (!err && out)
		*out = le32_to_cpu(res.value);
	return err;
}

static ssize_t ohca_ecn_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *buf)
{
	struct ohca_ecn_attr *a = to_ecn_attr(attr);
	u32 mask;
	int err;

	err = ohca_cc_param_cmd(a->dev, ohca_ecn_param(a), OHCA_CC_PARAM_GET,
				0, &mask);
	if (err)
		return err;
	return sysfs_emit(buf, "%u\n", (mask >> a->prio) & 1);
}

static ssize_t ohca_ecn_store(struct kobject *kobj,
			      struct kobj_attribute *attr, const char *buf,
			      size_t count)
{
	struct ohca_ecn_attr *a = to_ecn_attr(attr);
	struct ohca_dev *dev = a->dev;
	bool on;
	u32 mask;
	int err;

	err = kstrtobool(buf, &on);
	if (err)
		return err;
	/* Read, change one bit, write: one writer at a time. */
	mutex_lock(&dev->ecn_lock);
	err = ohca_cc_param_cmd(dev, ohca_ecn_param(a), OHCA_CC_PARAM_GET, 0,
				&mask);
	if (!err) {
		if (on)
			mask |= BIT(a->prio);
		else
			mask &= ~BIT(a->prio);
		err = ohca_cc_param_cmd(dev, ohca_ecn_param(a),
					OHCA_CC_PARAM_SET, mask, &mask);
	}
	mutex_unlock(&dev->ecn_lock);
	return err ? err : count;
}

static void ohca_ecn_remove_dirs(struct ohca_dev *dev)
{
	int np;

	for (np = 1; np >= 0; np--) {
		kobject_put(dev->ecn_enable[np]);	/* and its files */
		dev->ecn_enable[np] = NULL;
		kobject_put(dev->ecn_dirs[np]);
		dev->ecn_dirs[np] = NULL;
	}
	kobject_put(dev->ecn_kobj);
	dev->ecn_kobj = NULL;
}

/**
 * ohca_ecn_sysfs_create() - create the port's ecn/ directory
 * @dev: the function, its net_device registered
 *
 * Return: 0, or a negative errno (nothing is left behind).
 */
int ohca_ecn_sysfs_create(struct ohca_dev *dev)
{
	static const char * const names[2] = { "roce_rp", "roce_np" };
	int np, prio, err;

	mutex_init(&dev->ecn_lock);
	dev->ecn_kobj = kobject_create_and_add("ecn", &dev->netdev->dev.kobj);
	if (!dev->ecn_kobj)
		return -ENOMEM;
	for (np = 0; np < 2; np++) {
		dev->ecn_dirs[np] = kobject_create_and_add(names[np],
							   dev->ecn_kobj);
		if (!dev->ecn_dirs[np])
			goto err_nomem;
		dev->ecn_enable[np] = kobject_create_and_add("enable",
							     dev->ecn_dirs[np]);
		if (!dev->ecn_enable[np])
			goto err_nomem;
		for (prio = 0; prio < OHCA_ECN_PRIOS; prio++) {
			struct ohca_ecn_attr *a = &dev->ecn_attrs[np][prio];

			a->dev = dev;
			a->np = np;
			a->prio = prio;
			a->name[0] = '0' + prio;
			a->name[1] = '\0';
			sysfs_attr_init(&a->attr.attr);
			a->attr.attr.name = a->name;
			a->attr.attr.mode = 0644;
			a->attr.show = ohca_ecn_show;
			a->attr.store = ohca_ecn_store;
			err = sysfs_create_file(dev->ecn_enable[np],
						&a->attr.attr);
			if (err)
				goto err_remove;
		}
	}
	return 0;

err_nomem:
	err = -ENOMEM;
err_remove:
	ohca_ecn_remove_dirs(dev);
	return err;
}

/**
 * ohca_ecn_sysfs_destroy() - remove the port's ecn/ directory
 * @dev: the function, before its net_device is unregistered
 */
void ohca_ecn_sysfs_destroy(struct ohca_dev *dev)
{
	ohca_ecn_remove_dirs(dev);
}
