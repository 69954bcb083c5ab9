// SPDX-License-Identifier: (GPL-2.0 OR BSD-2-Clause)
/*
 * libohca: device memory.  The kernel allocates chunks of the device's
 * memory and answers, with the DM's handle, the mmap offset of exactly
 * those pages of BAR2; ibv_memcpy_to_dm/from_dm are MMIO stores and loads
 * through that mapping.  An MR on device memory (ibv_reg_dm_mr) is zero
 * based: its address 0 is byte dm_offset of the allocation.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/ib_user_ioctl_cmds.h>

#include <ohca/ohca-abi.h>

#include "ohca.h"
#include "ohca_mmio.h"

struct ohca_dm {
	struct verbs_dm vdm;
	uint8_t *map;		/* the allocation's pages of BAR2 */
	size_t map_len;
	uint64_t length;	/* as allocated: the bound of every copy */
};

static struct ohca_dm *to_ohca_dm(struct ibv_dm *ibdm)
{
	return ohca_container_of(ibdm, struct ohca_dm, vdm.dm);
}

/*
 * Copies move whole 32-bit words (the device accepts naturally aligned
 * accesses only): offset and length must be multiples of 4 and inside the
 * allocation.
 */
static int ohca_dm_range(const struct ohca_dm *dm, uint64_t offset,
			 size_t length)
{
	if (offset % 4 || length % 4 || offset > dm->length ||
	    length > dm->length - offset)
		return EINVAL;
	return 0;
}

static int ohca_memcpy_to_dm(struct ibv_dm *ibdm, uint64_t dm_offset,
			     const void *host_addr, size_t length)
{
	struct ohca_dm *dm = to_ohca_dm(ibdm);
	const uint8_t *src = host_addr;
	uint8_t *dst;
	size_t i = 0;
	int err;

	err = ohca_dm_range(dm, dm_offset, length);
	if (err) {
		errno = err;
		return err;
	}
	dst = dm->map + dm_offset;
	/* 8-byte stores where both ends allow it: half the MMIO exits. */
	if (dm_offset % 8 == 0) {
		for (; i + 8 <= length; i += 8) {
			uint64_t v;

			memcpy(&v, src + i, sizeof(v));
			mmio_write64(dst + i, le64toh(v));
		}
	}
	for (; i < length; i += 4) {
		uint32_t v;

		memcpy(&v, src + i, sizeof(v));
		mmio_write32(dst + i, le32toh(v));
	}
	/* Visible to the device before any work request that reads it. */
	mmio_flush_writes();
	return 0;
}

static int ohca_memcpy_from_dm(void *host_addr, struct ibv_dm *ibdm,
			       uint64_t dm_offset, size_t length)
{
	struct ohca_dm *dm = to_ohca_dm(ibdm);
	uint8_t *out = host_addr;
	const uint8_t *src;
	size_t i;
	int err;

	err = ohca_dm_range(dm, dm_offset, length);
	if (err) {
		errno = err;
		return err;
	}
	src = dm->map + dm_offset;
	for (i = 0; i < length; i += 4) {
		uint32_t v = htole32(mmio_read32(src + i));

		memcpy(out + i, &v, sizeof(v));
	}
	return 0;
}

struct ibv_dm *ohca_alloc_dm(struct ibv_context *ibctx,
			     struct ibv_alloc_dm_attr *attr)
{
	struct ohca_context *ctx = to_ohca_ctx(ibctx);
	union {
		struct ibv_command_buffer cmdb;
		uint8_t storage[sizeof(struct ibv_command_buffer) +
				sizeof(struct ib_uverbs_attr)];
	} link;
	struct ib_uverbs_attr *out;
	uint64_t mmap_offset = 0;
	struct ohca_dm *dm;
	long page;
	int err;

	/* No optional attribute is defined. */
	if (attr->comp_mask) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	page = sysconf(_SC_PAGESIZE);
	if (!attr->length || attr->length > SIZE_MAX - (size_t)page) {
		errno = EINVAL;
		return NULL;
	}
	dm = calloc(1, sizeof(*dm));
	if (!dm) {
		errno = ENOMEM;
		return NULL;
	}

	/* One driver attribute: where the allocation can be mapped. */
	memset(&link, 0, sizeof(link));
	link.cmdb.hdr.object_id = UVERBS_OBJECT_DM;
	link.cmdb.hdr.method_id = UVERBS_METHOD_DM_ALLOC;
	link.cmdb.uhw_in_idx = OHCA_CMDB_NO_UHW_INDEX;
	link.cmdb.uhw_out_idx = OHCA_CMDB_NO_UHW_INDEX;
	out = link.cmdb.hdr.attrs;
	out->attr_id = OHCA_IB_ATTR_ALLOC_DM_RESP_MMAP_OFFSET;
	out->flags = UVERBS_ATTR_F_MANDATORY;
	out->len = sizeof(mmap_offset);
	out->data = (uintptr_t)&mmap_offset;
	link.cmdb.next_attr = out + 1;
	link.cmdb.last_attr = out + 1;

	err = ibv_cmd_alloc_dm(ibctx, attr, &dm->vdm, &link.cmdb);
	if (err) {
		verbs_debug(&ctx->vctx, "ALLOC_DM of %zu bytes failed: errno %d\n",
			    attr->length, err);
		free(dm);
		errno = err;
		return NULL;
	}
	dm->length = attr->length;
	dm->map_len = (attr->length + (size_t)page - 1) & ~((size_t)page - 1);
	dm->map = mmap(NULL, dm->map_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       ibctx->cmd_fd, (off_t)mmap_offset);
	if (dm->map == MAP_FAILED) {
		err = errno;
		ibv_cmd_free_dm(&dm->vdm);
		free(dm);
		errno = err;
		return NULL;
	}
	dm->vdm.dm.memcpy_to_dm = ohca_memcpy_to_dm;
	dm->vdm.dm.memcpy_from_dm = ohca_memcpy_from_dm;
	dm->vdm.dm.comp_mask = 0;
	dm->vdm.dm.handle = dm->vdm.handle;
	return &dm->vdm.dm;
}

int ohca_free_dm(struct ibv_dm *ibdm)
{
	struct ohca_dm *dm = to_ohca_dm(ibdm);
	int err;

	/* Refused while MRs are registered on it: everything stays. */
	err = ibv_cmd_free_dm(&dm->vdm);
	if (err)
		return err;
	munmap(dm->map, dm->map_len);
	free(dm);
	return 0;
}

struct ibv_mr *ohca_reg_dm_mr(struct ibv_pd *ibpd, struct ibv_dm *ibdm,
			      uint64_t dm_offset, size_t length,
			      unsigned int access)
{
	struct ohca_mr *mr;
	int err;

	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	/* The kernel checks the range and IBV_ACCESS_ZERO_BASED. */
	err = ibv_cmd_reg_dm_mr(ibpd, &to_ohca_dm(ibdm)->vdm, dm_offset, length,
				access, &mr->vmr, NULL);
	if (err) {
		verbs_debug(&to_ohca_ctx(ibpd->context)->vctx,
			    "REG_DM_MR failed: errno %d\n", err);
		free(mr);
		errno = err;
		return NULL;
	}
	mr->vmr.access = (int)access;
	return &mr->vmr.ibv_mr;
}
