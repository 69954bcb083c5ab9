/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ohca: the differences between the kernels the driver builds against
 * (6.1 as Debian 12 ships it, 6.12 as Debian 13 does), one definition per
 * difference, named by the release that made it. The sources stay one.
 * Each is detected from the headers by kernel/Makefile (OHCA_* flags), not
 * from the version number: distributions backport.
 */
#ifndef OHCA_COMPAT_H
#define OHCA_COMPAT_H

#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

/*
 * 6.10: ib_device_ops.create_cq takes the uverbs attribute bundle (NULL for
 * a kernel CQ) instead of the udata. The op's third parameter is a
 * struct ohca_create_cq_arg; ohca_create_cq_udata() gives its udata.
 */
#ifdef OHCA_CREATE_CQ_ATTRS
#define ohca_create_cq_arg uverbs_attr_bundle
static inline struct ib_udata *
ohca_create_cq_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}
#else
#define ohca_create_cq_arg ib_udata
static inline struct ib_udata *ohca_create_cq_udata(struct ib_udata *udata)
{
	return udata;
}
#endif

#endif /* OHCA_COMPAT_H */
