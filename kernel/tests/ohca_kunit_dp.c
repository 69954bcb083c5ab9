// SPDX-License-Identifier: GPL-2.0
/*
 * ohca: KUnit tests of the RDMA data-path helpers (ohca_mr.c, ohca_cq.c,
 * ohca_qp.c), linked into ohca_kunit.ko when the driver has them: access
 * flag and work-request opcode translation, and the CQ attribute checks
 * that must reject a request before any command reaches the device.
 */
#include <kunit/test.h>

#include "ohca.h"

static void ohca_test_access_flags(struct kunit *test)
{
	static const int ib_bits[] = {
		IB_ACCESS_LOCAL_WRITE, IB_ACCESS_REMOTE_WRITE,
		IB_ACCESS_REMOTE_READ, IB_ACCESS_REMOTE_ATOMIC,
	};
	static const u32 dev_bits[] = {
		OHCA_ACCESS_LOCAL_WRITE, OHCA_ACCESS_REMOTE_WRITE,
		OHCA_ACCESS_REMOTE_READ, OHCA_ACCESS_REMOTE_ATOMIC,
	};
	int mask, i;

	for (mask = 0; mask < 16; mask++) {
		int ib = 0;
		u32 dev = 0;

		for (i = 0; i < 4; i++) {
			if (mask & BIT(i)) {
				ib |= ib_bits[i];
				dev |= dev_bits[i];
			}
		}
		KUNIT_EXPECT_EQ_MSG(test, ohca_access_to_dev(ib), dev, "mask %d", mask);
		KUNIT_EXPECT_EQ_MSG(test, ohca_access_from_dev(dev), ib, "mask %d", mask);
		/* bits the device does not know are not passed on */
		KUNIT_EXPECT_EQ(test, ohca_access_to_dev(ib | IB_ACCESS_MW_BIND), dev);
	}
}

static void ohca_test_wr_opcode(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, ohca_wr_opcode(IB_WR_RDMA_WRITE), OHCA_WR_RDMA_WRITE);
	KUNIT_EXPECT_EQ(test, ohca_wr_opcode(IB_WR_RDMA_WRITE_WITH_IMM),
			OHCA_WR_RDMA_WRITE_IMM);
	KUNIT_EXPECT_EQ(test, ohca_wr_opcode(IB_WR_SEND), OHCA_WR_SEND);
	KUNIT_EXPECT_EQ(test, ohca_wr_opcode(IB_WR_SEND_WITH_IMM), OHCA_WR_SEND_IMM);
	KUNIT_EXPECT_EQ(test, ohca_wr_opcode(IB_WR_RDMA_READ), OHCA_WR_RDMA_READ);
	KUNIT_EXPECT_EQ(test, ohca_wr_opcode(IB_WR_ATOMIC_CMP_AND_SWP), -EINVAL);
	KUNIT_EXPECT_EQ(test, ohca_wr_opcode(IB_WR_LOCAL_INV), OHCA_WR_LOCAL_INV);
	KUNIT_EXPECT_EQ(test, ohca_wr_opcode(IB_WR_SEND_WITH_INV),
			OHCA_WR_SEND_INV);
	KUNIT_EXPECT_EQ(test, ohca_wr_opcode(IB_WR_REG_MR), OHCA_WR_REG_MR);
}

static void ohca_test_create_cq_checks(struct kunit *test)
{
	struct ohca_dev *dev;
	struct ohca_cq *cq;
	struct ib_cq_init_attr attr = { .cqe = 16 };
	struct ib_udata udata = {};

	dev = kunit_kzalloc(test, sizeof(*dev), GFP_KERNEL);
	cq = kunit_kzalloc(test, sizeof(*cq), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, dev);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, cq);
	cq->ibcq.device = &dev->ibdev;
	dev->attr.max_cqe = cpu_to_le32(1023);
	dev->num_comp_eqs = 0;

	attr.flags = IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION;
	KUNIT_EXPECT_EQ(test, ohca_create_cq(&cq->ibcq, &attr, &udata), -EOPNOTSUPP);
	attr.flags = 0;
	attr.cqe = 0;
	KUNIT_EXPECT_EQ(test, ohca_create_cq(&cq->ibcq, &attr, &udata), -EINVAL);
	attr.cqe = 1024;
	KUNIT_EXPECT_EQ(test, ohca_create_cq(&cq->ibcq, &attr, &udata), -EINVAL);
	/* valid attributes, but a device without completion EQs */
	attr.cqe = 16;
	KUNIT_EXPECT_EQ(test, ohca_create_cq(&cq->ibcq, &attr, &udata), -EOPNOTSUPP);
}

static struct kunit_case ohca_dp_cases[] = {
	KUNIT_CASE(ohca_test_access_flags),
	KUNIT_CASE(ohca_test_wr_opcode),
	KUNIT_CASE(ohca_test_create_cq_checks),
	{}
};

static struct kunit_suite ohca_dp_suite = {
	.name = "ohca_datapath",
	.test_cases = ohca_dp_cases,
};

kunit_test_suites(&ohca_dp_suite);
