// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ohca: the device's RoCE transport counters (QUERY_STATS, rev 1.1 part)
 * as RDMA hw counters of port 1: /sys/class/infiniband/<dev>/ports/1/
 * hw_counters/ and `rdma statistic`. The device keeps the totals; every
 * read asks it (the core rate-limits reads by the lifespan).
 */
#include <linux/slab.h>
#include <rdma/ib_verbs.h>

#include "ohca_ib.h"

/*
 * The counter names are the QUERY_STATS field names; the descriptor
 * carries the field offset in priv.
 */
#define OHCA_STAT(f) { .name = #f, \
	.priv = (const void *)offsetof(struct ohca_query_stats_out, f) }

static const struct rdma_stat_desc ohca_descs[] = {
	OHCA_STAT(roce_tx_pkts),
	OHCA_STAT(roce_rx_pkts),
	OHCA_STAT(rc_retrans_pkts),
	OHCA_STAT(rc_retrans_events),
	OHCA_STAT(rc_local_ack_timeouts),
	OHCA_STAT(rc_seq_naks_sent),
	OHCA_STAT(rc_seq_naks_rcvd),
	OHCA_STAT(rc_rnr_naks_sent),
	OHCA_STAT(rc_rnr_naks_rcvd),
	OHCA_STAT(rc_dup_requests),
	OHCA_STAT(rc_out_of_seq_dropped),
	OHCA_STAT(rc_stale_responses),
	OHCA_STAT(rc_retry_exceeded),
	OHCA_STAT(rc_rnr_retry_exceeded),
	OHCA_STAT(rc_error_naks_sent),
	OHCA_STAT(rc_error_naks_rcvd),
	OHCA_STAT(roce_icrc_errors),
	OHCA_STAT(roce_bad_header),
	OHCA_STAT(roce_bad_opcode),
	OHCA_STAT(roce_bad_qpn),
	OHCA_STAT(ud_rx_no_wqe),
	OHCA_STAT(ud_rx_bad_qkey),
	OHCA_STAT(roce_rx_dropped),
	OHCA_STAT(raw_tx_frames),
	OHCA_STAT(raw_rx_frames),
	OHCA_STAT(raw_rx_dropped),
	OHCA_STAT(eq0_events_held),
	OHCA_STAT(eq0_events_merged),
	OHCA_STAT(eq0_events_dropped),
	OHCA_STAT(rc_spurious_timeouts),
	/* DCQCN, under mlx5's names */
	OHCA_STAT(np_ecn_marked_roce_packets),
	OHCA_STAT(np_cnp_sent),
	OHCA_STAT(rp_cnp_handled),
	OHCA_STAT(rp_cnp_ignored),
	/* why received packets were dropped */
	OHCA_STAT(mcast_rx_pkts),
	OHCA_STAT(mcast_rx_no_group),
	OHCA_STAT(rx_backlog_dropped),
	/* why an RC requester waited */
	OHCA_STAT(rc_tail_probes),
	OHCA_STAT(rc_timeouts_full),
	OHCA_STAT(rc_timeouts_no_rtt),
	OHCA_STAT(rc_timeouts_after_probe),
	OHCA_STAT(rc_timeouts_read),
	OHCA_STAT(rc_credit_timeouts),
	OHCA_STAT(rc_credit_probes),
	OHCA_STAT(rc_timeouts_frto),
	OHCA_STAT(rc_timeouts_recovery),
	OHCA_STAT(rc_timeouts_goback),
	OHCA_STAT(rc_timeouts_read_newest),
	/* InfiniBand port only: the last OHCA_IB_STATS */
	OHCA_STAT(ib_rx_bad_dlid),
	OHCA_STAT(ib_rx_vl15_dropped),
	OHCA_STAT(ib_rx_pkey_dropped),
	OHCA_STAT(ib_rx_credit_overrun),
	OHCA_STAT(ib_rx_port_not_ready),
};

#define OHCA_IB_STATS 5

static struct rdma_hw_stats *ohca_alloc_hw_port_stats(struct ib_device *ibdev,
						      u32 port_num)
{
	size_t n = ARRAY_SIZE(ohca_descs);

	/* an Ethernet port has no IB link rules to count */
	if (!to_ohca_dev(ibdev)->cdev->ib_port)
		n -= OHCA_IB_STATS;
	return rdma_alloc_hw_stats_struct(ohca_descs, n,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

static int ohca_get_hw_stats(struct ib_device *ibdev,
			     struct rdma_hw_stats *stats, u32 port, int index)
{
	struct ohca_ibdev *dev = to_ohca_dev(ibdev);
	struct ohca_query_stats_out *out;
	struct ohca_cmd_args args = {
		.opcode = OHCA_CMD_QUERY_STATS,
		.out_len = sizeof(*out),
	};
	int i, err;

	if (!port)
		return 0;	/* no device-wide counters, only port 1 */

	out = kzalloc(sizeof(*out), GFP_KERNEL);
	if (!out)
		return -ENOMEM;
	args.out = out;
	err = ohca_cmd_exec(dev->cdev, &args);
	if (err)
		goto out_free;
	for (i = 0; i < stats->num_counters; i++) {
		size_t off = (uintptr_t)ohca_descs[i].priv;

		stats->value[i] = le64_to_cpu(*(__le64 *)((u8 *)out + off));
	}
	err = stats->num_counters;
out_free:
	kfree(out);
	return err;
}

const struct ib_device_ops ohca_stats_ops = {
	.alloc_hw_port_stats = ohca_alloc_hw_port_stats,
	.get_hw_stats = ohca_get_hw_stats,
};
