// SPDX-License-Identifier: GPL-2.0
/*
 * ohca: KUnit tests of the RDMA data-path helpers (ohca_pbl.c, ohca_cq.c,
 * ohca_qp.c), linked into ohca_kunit.ko when the driver has them: access
 * flag and work-request opcode translation, the CQ attribute checks
 * that must reject a request before any command reaches the device, the
 * purge of a gone QP's CQEs, the software flushes of a stopped device and
 * the drop of CQEs that are not the polled CQ's (audit N1), an
 * InfiniBand port's UD receive completions and address vectors.
 */
#include <kunit/test.h>

#include "ib/ohca_ib.h"

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
	KUNIT_EXPECT_EQ(test, ohca_wr_opcode(IB_WR_ATOMIC_CMP_AND_SWP),
			OHCA_WR_ATOMIC_CMP_SWP);
	KUNIT_EXPECT_EQ(test, ohca_wr_opcode(IB_WR_ATOMIC_FETCH_AND_ADD),
			OHCA_WR_ATOMIC_FETCH_ADD);
	/* no masked atomics */
	KUNIT_EXPECT_EQ(test, ohca_wr_opcode(IB_WR_MASKED_ATOMIC_CMP_AND_SWP),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, ohca_wr_opcode(IB_WR_LOCAL_INV), OHCA_WR_LOCAL_INV);
	KUNIT_EXPECT_EQ(test, ohca_wr_opcode(IB_WR_SEND_WITH_INV),
			OHCA_WR_SEND_INV);
	KUNIT_EXPECT_EQ(test, ohca_wr_opcode(IB_WR_REG_MR), OHCA_WR_REG_MR);
}

/* The RDMA device and its core device, zeroed. */
static struct ohca_ibdev *ohca_test_ibdev(struct kunit *test)
{
	struct ohca_ibdev *dev = kunit_kzalloc(test, sizeof(*dev), GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, dev);
	dev->cdev = kunit_kzalloc(test, sizeof(*dev->cdev), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, dev->cdev);
	return dev;
}

static void ohca_test_create_cq_checks(struct kunit *test)
{
	struct ohca_ibdev *dev;
	struct ohca_cq *cq;
	struct ib_cq_init_attr attr = { .cqe = 16 };
	struct ib_udata udata = {};

	dev = ohca_test_ibdev(test);
	cq = kunit_kzalloc(test, sizeof(*cq), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, cq);
	cq->ibcq.device = &dev->ibdev;
	dev->cdev->attr.max_cqe = cpu_to_le32(1023);
	dev->cdev->num_comp_eqs = 0;

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

/* A kernel CQ of 8 entries whose consumer index is @ci. */
static struct ohca_cq *ohca_test_cq(struct kunit *test, struct ohca_ibdev *dev,
				    u32 ci)
{
	struct ohca_cq *cq = kunit_kzalloc(test, sizeof(*cq), GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, cq);
	cq->ring = kunit_kzalloc(test, 8 * sizeof(*cq->ring), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, cq->ring);
	cq->log_size = 3;
	cq->ci = ci;
	cq->cqn = 5;
	spin_lock_init(&cq->lock);
	INIT_LIST_HEAD(&cq->sq_list);
	INIT_LIST_HEAD(&cq->rq_list);
	return cq;
}

/* The device's CQE number @idx (free running) for @qpn. */
static void ohca_test_put_cqe(struct ohca_cq *cq, u32 idx, u32 qpn)
{
	struct ohca_cqe *cqe = &cq->ring[idx & 7];

	memset(cqe, 0, sizeof(*cqe));
	cqe->qpn = cpu_to_le32(qpn);
	cqe->wr_id = cpu_to_le64(idx);
	cqe->owner = ((idx >> 3) & 1) ? 0 : OHCA_CQE_OWNER;
}

static struct ohca_ibdev *ohca_test_kdb_dev(struct kunit *test, u64 **db)
{
	struct ohca_ibdev *dev = ohca_test_ibdev(test);

	/* the doorbell page: plain memory stands in for BAR2 page 0 */
	*db = kunit_kzalloc(test, 4096, GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, *db);
	dev->cdev->kdb = (void __iomem *)(__force void __iomem *)*db;
	return dev;
}

/*
 * ohca_cq_clean() drops the CQEs of one QP, keeps the others in order in
 * the slots just below the device's next write, with their slot's owner
 * bit, across the ring's wrap, and tells the device the new consumer index.
 */
static void ohca_test_cq_clean(struct kunit *test)
{
	static const u32 qpns[] = { 7, 8, 7, 7, 8, 9 };	/* CQEs 6..11 */
	static const u32 kept[] = { 7, 10, 11 };		/* their numbers */
	struct ohca_ibdev *dev;
	struct ohca_cq *cq;
	u64 *db;
	u32 i;

	dev = ohca_test_kdb_dev(test, &db);
	cq = ohca_test_cq(test, dev, 6);
	/* CQEs 0..5 were consumed; 4 and 5 still hold their pass-0 copy */
	ohca_test_put_cqe(cq, 4, 99);
	ohca_test_put_cqe(cq, 5, 99);
	for (i = 0; i < ARRAY_SIZE(qpns); i++)
		ohca_test_put_cqe(cq, 6 + i, qpns[i]);

	ohca_cq_clean(dev, cq, 7);
	KUNIT_EXPECT_EQ(test, cq->ci, 9U);
	KUNIT_EXPECT_EQ(test, db[OHCA_DB_CQ / 8], OHCA_DB_VALUE(5, 9));
	for (i = 0; i < ARRAY_SIZE(kept); i++) {
		struct ohca_cqe *cqe = &cq->ring[(9 + i) & 7];
		u8 owner = (((9 + i) >> 3) & 1) ? 0 : OHCA_CQE_OWNER;

		KUNIT_EXPECT_EQ(test, le64_to_cpu(cqe->wr_id), (u64)kept[i]);
		KUNIT_EXPECT_EQ(test, cqe->owner, owner);
		KUNIT_EXPECT_NE(test, le32_to_cpu(cqe->qpn), 7U);
	}
	/* slot 12 (pass 1: owner 0 valid) was never written: still invalid */
	KUNIT_EXPECT_NE(test, cq->ring[12 & 7].owner, (u8)0);

	/* nothing of that QP left: no change, no doorbell */
	db[OHCA_DB_CQ / 8] = 0;
	ohca_cq_clean(dev, cq, 7);
	KUNIT_EXPECT_EQ(test, cq->ci, 9U);
	KUNIT_EXPECT_EQ(test, db[OHCA_DB_CQ / 8], 0ULL);
	/* all of them */
	ohca_cq_clean(dev, cq, 8);
	ohca_cq_clean(dev, cq, 9);
	KUNIT_EXPECT_EQ(test, cq->ci, 12U);
}

/* Software flushes of a stopped device: every WQE the device never completed. */
static void ohca_test_qp_flush_sw(struct kunit *test)
{
	struct ohca_qp *qp = kunit_kzalloc(test, sizeof(*qp), GFP_KERNEL);
	struct ib_wc wc[4];
	u32 i;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, qp);
	qp->sq.log_size = 2;
	qp->sq.log_stride = 7;
	qp->sq.buf = kunit_kzalloc(test, 4 << 7, GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, qp->sq.buf);
	for (i = 0; i < 4; i++)
		*(__le64 *)(qp->sq.buf + (i << 7)) = cpu_to_le64(100 + i);
	qp->sq.ci = 2;
	qp->sq.pi = 5;		/* WQEs 2, 3, 4 (slot 0) outstanding */

	KUNIT_EXPECT_EQ(test, ohca_qp_flush_sw(qp, true, wc, 2), 2);
	KUNIT_EXPECT_EQ(test, wc[0].wr_id, 102ULL);
	KUNIT_EXPECT_EQ(test, wc[1].wr_id, 103ULL);
	KUNIT_EXPECT_EQ(test, wc[0].status, IB_WC_WR_FLUSH_ERR);
	KUNIT_EXPECT_PTR_EQ(test, wc[0].qp, &qp->ibqp);
	KUNIT_EXPECT_EQ(test, ohca_qp_flush_sw(qp, true, wc, 4), 1);
	KUNIT_EXPECT_EQ(test, wc[0].wr_id, 100ULL);
	KUNIT_EXPECT_EQ(test, qp->sq.ci, 5U);
	KUNIT_EXPECT_EQ(test, ohca_qp_flush_sw(qp, true, wc, 4), 0);
}

/* A QP sending to @scq and receiving on @rcq (either may be NULL). */
static struct ohca_qp *ohca_test_qp(struct kunit *test, u32 qpn,
				    struct ohca_cq *scq, struct ohca_cq *rcq)
{
	struct ohca_qp *qp = kunit_kzalloc(test, sizeof(*qp), GFP_KERNEL);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, qp);
	qp->qpn = qpn;
	qp->ibqp.qp_num = qpn;
	qp->ibqp.send_cq = scq ? &scq->ibcq : NULL;
	qp->ibqp.recv_cq = rcq ? &rcq->ibcq : NULL;
	return qp;
}

/*
 * A kernel CQ reports a CQE only for work of a QP that completes on it:
 * sends on the QP's send CQ, receives on its receive CQ, and never an XRC
 * receive (those go to user XRC SRQs' CQs).
 */
static void ohca_test_cqe_is_cq_own(struct kunit *test)
{
	struct ohca_ibdev *dev = ohca_test_ibdev(test);
	struct ohca_cq *a = ohca_test_cq(test, dev, 0);
	struct ohca_cq *b = ohca_test_cq(test, dev, 0);
	struct ohca_qp *qp = ohca_test_qp(test, 7, a, b);
	struct ohca_qp *tgt = ohca_test_qp(test, 8, NULL, NULL);
	struct ohca_cqe cqe = {};

	cqe.opcode = OHCA_CQE_SEND;
	KUNIT_EXPECT_TRUE(test, ohca_cqe_is_cq_own(a, qp, &cqe));
	KUNIT_EXPECT_FALSE(test, ohca_cqe_is_cq_own(b, qp, &cqe));
	cqe.opcode = OHCA_CQE_RDMA_READ;
	KUNIT_EXPECT_TRUE(test, ohca_cqe_is_cq_own(a, qp, &cqe));
	KUNIT_EXPECT_FALSE(test, ohca_cqe_is_cq_own(b, qp, &cqe));
	cqe.opcode = OHCA_CQE_RECV;
	KUNIT_EXPECT_FALSE(test, ohca_cqe_is_cq_own(a, qp, &cqe));
	KUNIT_EXPECT_TRUE(test, ohca_cqe_is_cq_own(b, qp, &cqe));
	cqe.opcode = OHCA_CQE_RECV_RDMA_WITH_IMM;
	KUNIT_EXPECT_FALSE(test, ohca_cqe_is_cq_own(a, qp, &cqe));
	KUNIT_EXPECT_TRUE(test, ohca_cqe_is_cq_own(b, qp, &cqe));
	/* XRC: not even on the QP's own receive CQ */
	cqe.opcode = OHCA_CQE_RECV;
	cqe.flags = OHCA_CQE_F_XRC;
	KUNIT_EXPECT_FALSE(test, ohca_cqe_is_cq_own(b, qp, &cqe));
	/* an XRC target QP has no CQ of its own */
	KUNIT_EXPECT_FALSE(test, ohca_cqe_is_cq_own(a, tgt, &cqe));
	cqe.flags = 0;
	KUNIT_EXPECT_FALSE(test, ohca_cqe_is_cq_own(a, tgt, &cqe));
	cqe.opcode = OHCA_CQE_SEND;
	KUNIT_EXPECT_FALSE(test, ohca_cqe_is_cq_own(a, tgt, &cqe));
}

/*
 * Audit N1, the kernel half: poll_cq of a kernel CQ drops CQEs whose QP
 * does not complete there (an XRC target QP flushing its borrowed receive
 * WQE into a reused CQ number, with a wr_id the attacker chose), counts
 * them, and still consumes them (consumer index and doorbell).
 */
static void ohca_test_poll_cq_foreign(struct kunit *test)
{
	struct ohca_ibdev *dev;
	struct ohca_cq *cq, *other;
	struct ohca_qp *qp, *tgt;
	struct pci_dev *pdev;
	struct ib_wc wc[8];
	u64 *db;
	int n;

	dev = ohca_test_kdb_dev(test, &db);
	/* the device the drops are logged against */
	pdev = kunit_kzalloc(test, sizeof(*pdev), GFP_KERNEL);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, pdev);
	pdev->dev.init_name = "ohca-kunit-dp";
	dev->cdev->pdev = pdev;
	xa_init_flags(&dev->qp_xa, XA_FLAGS_LOCK_IRQ);
	cq = ohca_test_cq(test, dev, 0);
	cq->ibcq.device = &dev->ibdev;
	other = ohca_test_cq(test, dev, 0);
	qp = ohca_test_qp(test, 7, cq, other);	/* sends here, receives there */
	tgt = ohca_test_qp(test, 8, NULL, NULL);	/* XRC target */
	KUNIT_ASSERT_EQ(test, xa_insert_irq(&dev->qp_xa, 7, qp, GFP_KERNEL), 0);
	KUNIT_ASSERT_EQ(test, xa_insert_irq(&dev->qp_xa, 8, tgt, GFP_KERNEL), 0);

	ohca_test_put_cqe(cq, 0, 7);			/* own send: reported */
	ohca_test_put_cqe(cq, 1, 7);			/* receive of the other CQ */
	cq->ring[1].opcode = OHCA_CQE_RECV;
	ohca_test_put_cqe(cq, 2, 8);			/* the XRC flush of N1 */
	cq->ring[2].opcode = OHCA_CQE_RECV;
	cq->ring[2].flags = OHCA_CQE_F_XRC;
	cq->ring[2].status = OHCA_CQE_WR_FLUSH_ERR;
	cq->ring[2].wr_id = cpu_to_le64(0xdeadbeefcafe0000ULL);
	ohca_test_put_cqe(cq, 3, 8);			/* target QP, no XRC flag */
	cq->ring[3].opcode = OHCA_CQE_RECV;
	ohca_test_put_cqe(cq, 4, 7);			/* own send again */
	cq->ring[4].wqe_index = cpu_to_le16(1);

	n = ohca_poll_cq(&cq->ibcq, ARRAY_SIZE(wc), wc);
	KUNIT_EXPECT_EQ(test, n, 2);
	KUNIT_EXPECT_EQ(test, wc[0].wr_id, 0ULL);
	KUNIT_EXPECT_EQ(test, wc[1].wr_id, 4ULL);
	KUNIT_EXPECT_PTR_EQ(test, wc[0].qp, &qp->ibqp);
	KUNIT_EXPECT_PTR_EQ(test, wc[1].qp, &qp->ibqp);
	KUNIT_EXPECT_EQ(test, wc[0].opcode, IB_WC_SEND);
	/* all five consumed, three of them dropped */
	KUNIT_EXPECT_EQ(test, cq->ci, 5U);
	KUNIT_EXPECT_EQ(test, cq->foreign, 3U);
	KUNIT_EXPECT_EQ(test, db[OHCA_DB_CQ / 8], OHCA_DB_VALUE(5, 5));
	/* the dropped receives retired nothing; the sends retired WQEs 0, 1 */
	KUNIT_EXPECT_EQ(test, qp->rq.ci, 0U);
	KUNIT_EXPECT_EQ(test, tgt->rq.ci, 0U);
	KUNIT_EXPECT_EQ(test, qp->sq.ci, 2U);
	KUNIT_EXPECT_EQ(test, ohca_poll_cq(&cq->ibcq, ARRAY_SIZE(wc), wc), 0);
	xa_destroy(&dev->qp_xa);
}

/*
 * An InfiniBand port's UD receive: the CQE's top bits of qpn and src_qp
 * and its vendor_err are the LRH's source (ohca_queue.h): the QP is
 * found by the low 24 bits, the work completion gets SLID, SL, path bits
 * and IB_WC_GRH only when the packet had a GRH; an Ethernet port's
 * completion of the same bytes keeps its RoCE meaning.
 */
static void ohca_test_poll_cq_ib_ud(struct kunit *test)
{
	struct ohca_ibdev *dev;
	struct ohca_cq *cq;
	struct ohca_qp *qp;
	struct ib_wc wc[4];
	u64 *db;
	int n;

	dev = ohca_test_kdb_dev(test, &db);
	dev->cdev->ib_port = true;
	xa_init_flags(&dev->qp_xa, XA_FLAGS_LOCK_IRQ);
	cq = ohca_test_cq(test, dev, 0);
	cq->ibcq.device = &dev->ibdev;
	qp = ohca_test_qp(test, 7, cq, cq);
	qp->type = IB_QPT_UD;
	KUNIT_ASSERT_EQ(test, xa_insert_irq(&dev->qp_xa, 7, qp, GFP_KERNEL), 0);

	/* SLID 0x1234, path bits 5, SL 3, source QP 0x42, no GRH */
	ohca_test_put_cqe(cq, 0, 0x12000007);
	cq->ring[0].opcode = OHCA_CQE_RECV;
	cq->ring[0].vendor_err = 0x34;
	cq->ring[0].src_qp = cpu_to_le32((5u << 24) | 0x42);
	cq->ring[0].sl = 3;
	/* SLID 0x0001 with a GRH */
	ohca_test_put_cqe(cq, 1, 0x00000007);
	cq->ring[1].opcode = OHCA_CQE_RECV;
	cq->ring[1].vendor_err = 0x01;
	cq->ring[1].src_qp = cpu_to_le32(0x43);
	cq->ring[1].flags = OHCA_CQE_F_GRH;

	n = ohca_poll_cq(&cq->ibcq, ARRAY_SIZE(wc), wc);
	KUNIT_ASSERT_EQ(test, n, 2);
	KUNIT_EXPECT_PTR_EQ(test, wc[0].qp, &qp->ibqp);
	KUNIT_EXPECT_EQ(test, wc[0].slid, 0x1234U);
	KUNIT_EXPECT_EQ(test, wc[0].dlid_path_bits, 5);
	KUNIT_EXPECT_EQ(test, wc[0].sl, 3);
	KUNIT_EXPECT_EQ(test, wc[0].src_qp, 0x42U);
	KUNIT_EXPECT_EQ(test, wc[0].vendor_err, 0U);
	KUNIT_EXPECT_FALSE(test, wc[0].wc_flags & IB_WC_GRH);
	KUNIT_EXPECT_EQ(test, wc[1].slid, 1U);
	KUNIT_EXPECT_EQ(test, wc[1].src_qp, 0x43U);
	KUNIT_EXPECT_TRUE(test, wc[1].wc_flags & IB_WC_GRH);
	KUNIT_EXPECT_FALSE(test, wc[1].wc_flags & IB_WC_WITH_NETWORK_HDR_TYPE);
	KUNIT_EXPECT_EQ(test, qp->rq.ci, 2U);

	/* a failed receive has a vendor error, not a source */
	ohca_test_put_cqe(cq, 2, 7);
	cq->ring[2].opcode = OHCA_CQE_RECV;
	cq->ring[2].status = OHCA_CQE_LOC_LEN_ERR;
	cq->ring[2].vendor_err = 9;
	KUNIT_ASSERT_EQ(test, ohca_poll_cq(&cq->ibcq, ARRAY_SIZE(wc), wc), 1);
	KUNIT_EXPECT_EQ(test, wc[0].vendor_err, 9U);
	KUNIT_EXPECT_EQ(test, wc[0].slid, 0U);

	/* the Ethernet port: GRH means RoCE, no LIDs */
	dev->cdev->ib_port = false;
	ohca_test_put_cqe(cq, 3, 7);
	cq->ring[3].opcode = OHCA_CQE_RECV;
	cq->ring[3].flags = OHCA_CQE_F_GRH | OHCA_CQE_F_IPV4;
	KUNIT_ASSERT_EQ(test, ohca_poll_cq(&cq->ibcq, ARRAY_SIZE(wc), wc), 1);
	KUNIT_EXPECT_EQ(test, wc[0].slid, 0U);
	KUNIT_EXPECT_TRUE(test, wc[0].wc_flags & IB_WC_WITH_NETWORK_HDR_TYPE);
	KUNIT_EXPECT_EQ(test, wc[0].network_hdr_type, RDMA_NETWORK_IPV4);
	xa_destroy(&dev->qp_xa);
}

/* An IB address vector: built from an IB address, read back the same. */
static void ohca_test_av_ib(struct kunit *test)
{
	struct ohca_ibdev *dev = ohca_test_ibdev(test);
	struct rdma_ah_attr ah = { .type = RDMA_AH_ATTR_TYPE_IB };
	struct rdma_ah_attr back = {};
	union ib_gid dgid = { .raw = { 0xfe, 0x80, [15] = 2 } };
	struct ohca_av_ib ib;
	struct ohca_av av;

	dev->cdev->ib_port = true;
	rdma_ah_set_dlid(&ah, 0x21);
	rdma_ah_set_sl(&ah, 4);
	rdma_ah_set_path_bits(&ah, 1);
	KUNIT_ASSERT_EQ(test, ohca_av_from_ah(dev, &ah, &av), 0);
	memcpy(&ib, &av, sizeof(ib));
	KUNIT_EXPECT_EQ(test, le16_to_cpu(ib.dlid), 0x21);
	KUNIT_EXPECT_EQ(test, ib.sl, 4);
	KUNIT_EXPECT_EQ(test, ib.src_path_bits, 1);
	KUNIT_EXPECT_EQ(test, ib.flags, 0);

	rdma_ah_set_grh(&ah, &dgid, 0xfffff7, 0, 64, 3);
	KUNIT_ASSERT_EQ(test, ohca_av_from_ah(dev, &ah, &av), 0);
	memcpy(&ib, &av, sizeof(ib));
	KUNIT_EXPECT_EQ(test, ib.flags, OHCA_AV_IB_GRH);
	/* 20 bits of flow label */
	KUNIT_EXPECT_EQ(test, le32_to_cpu(ib.flow_label), 0xffff7U);
	ohca_av_ib_to_ah(&av, &back);
	KUNIT_EXPECT_EQ(test, back.type, RDMA_AH_ATTR_TYPE_IB);
	KUNIT_EXPECT_EQ(test, rdma_ah_get_dlid(&back), 0x21U);
	KUNIT_EXPECT_EQ(test, rdma_ah_get_sl(&back), 4);
	KUNIT_EXPECT_TRUE(test, rdma_ah_get_ah_flags(&back) & IB_AH_GRH);
	KUNIT_EXPECT_EQ(test, rdma_ah_read_grh(&back)->hop_limit, 64);
	KUNIT_EXPECT_EQ(test, memcmp(rdma_ah_read_grh(&back)->dgid.raw, dgid.raw,
				     sizeof(dgid.raw)), 0);

	/* not an IB address, or an SL past 15: refused */
	ah.type = RDMA_AH_ATTR_TYPE_ROCE;
	KUNIT_EXPECT_EQ(test, ohca_av_from_ah(dev, &ah, &av), -EINVAL);
	ah.type = RDMA_AH_ATTR_TYPE_IB;
	rdma_ah_set_sl(&ah, 16);
	KUNIT_EXPECT_EQ(test, ohca_av_from_ah(dev, &ah, &av), -EINVAL);
}

static struct kunit_case ohca_dp_cases[] = {
	KUNIT_CASE(ohca_test_poll_cq_ib_ud),
	KUNIT_CASE(ohca_test_av_ib),
	KUNIT_CASE(ohca_test_access_flags),
	KUNIT_CASE(ohca_test_wr_opcode),
	KUNIT_CASE(ohca_test_create_cq_checks),
	KUNIT_CASE(ohca_test_cq_clean),
	KUNIT_CASE(ohca_test_qp_flush_sw),
	KUNIT_CASE(ohca_test_cqe_is_cq_own),
	KUNIT_CASE(ohca_test_poll_cq_foreign),
	{}
};

static struct kunit_suite ohca_dp_suite = {
	.name = "ohca_datapath",
	.test_cases = ohca_dp_cases,
};

kunit_test_suites(&ohca_dp_suite);
