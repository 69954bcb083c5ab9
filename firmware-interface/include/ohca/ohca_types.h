/* SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause) */
/*
 * ohca firmware interface: the fixed-width types every part uses.
 *
 * The same headers are compiled by the Linux driver (where sparse checks
 * the endianness annotations), the rdma-core provider, the QEMU glue (C)
 * and the device engine (C++20). All multi-byte fields are little endian
 * except the ohca_be16 and ohca_be32 ones, which carry bytes as they are on the wire.
 */
#ifndef OHCA_TYPES_H
#define OHCA_TYPES_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/stddef.h>
#include <linux/build_bug.h>
typedef __le16 ohca_le16;
typedef __le32 ohca_le32;
typedef __le64 ohca_le64;
typedef __be16 ohca_be16;
typedef __be32 ohca_be32;
typedef u8 ohca_u8;
#define OHCA_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#include <stdint.h>
#include <stddef.h>
typedef uint16_t ohca_le16;
typedef uint32_t ohca_le32;
typedef uint64_t ohca_le64;
typedef uint16_t ohca_be16;
typedef uint32_t ohca_be32;
typedef uint8_t ohca_u8;
#ifdef __cplusplus
#define OHCA_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define OHCA_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif
#endif

/* Size and offset checks used beside every layout. */
#define OHCA_ASSERT_SIZE(type, size) \
	OHCA_STATIC_ASSERT(sizeof(type) == (size), #type " must be " #size " bytes")
#define OHCA_ASSERT_OFFSET(type, field, off) \
	OHCA_STATIC_ASSERT(offsetof(type, field) == (off), \
			   #type "." #field " must be at offset " #off)

#endif /* OHCA_TYPES_H */
