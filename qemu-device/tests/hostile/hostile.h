// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ohca_hostile: a hostile guest for the ohca device (hostile.c has the
 * program and its table of cases; one file per area has the cases). This
 * header is the harness the cases share: the device's BARs and DMA pages,
 * register access, bring-up, the command queue and RDMA object helpers
 * (common.c), and the checks a case makes.
 */
#ifndef OHCA_HOSTILE_H
#define OHCA_HOSTILE_H

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <ohca/ohca_cmd.h>
#include <ohca/ohca_queue.h>
#include <ohca/ohca_regs.h>
#include <stddef.h>

/* Bus addresses that are never RAM or MMIO in the 2 GiB test VM. */
#define NOWHERE		0x00007f0000000000ull
#define WRAPS		0xffffffffffffffc0ull
/* MMIO of another device: the I/O APIC (x86's fixed address). */
#define IOAPIC_MMIO	0xfec00000ull
#define NPAGES		48
#define PG		4096u

extern volatile uint8_t *bar0;
extern volatile uint8_t *bar2;
extern uint64_t bar0_bus, bar2_bus;
extern char pci_dir[300];
extern int verbose;

/* DMA pages: virtual address and bus address. */
extern uint8_t *pages;
extern uint64_t page_bus[NPAGES];
enum { P_EQ, P_CMDQ, P_IN, P_OUT, P_CQ, P_SQ, P_RQ, P_DATA, P_PBL, P_PBL2,
	P_SCRATCH };

static inline void *pva(int p) { return pages + (size_t)p * PG; }
static inline uint64_t pba(int p) { return page_bus[p]; }

/* A failing case's reason (failf() formats it; CHECK returns false). */
extern char fail_msg[512];
#define CHECK(cond, ...) do { if (!(cond)) return failf(__VA_ARGS__); } while (0)

#define CMDQ_LOG 6
#define EQ_LOG 8
extern uint16_t cmd_pi;
extern uint32_t eq_ci;

/* The status and syndrome of the last command cmd() ran. */
extern uint8_t last_status;
extern uint32_t last_syn;

#define EXPECT_CMD(call, st, syn) do {					\
	uint8_t s_ = (call);						\
	CHECK(s_ == (st) && last_syn == (uint32_t)(syn),			\
	      "%s: status %#x syndrome %#x, want %#x/%#x", #call, s_,	\
	      last_syn, (unsigned int)(st), (unsigned int)(syn));		\
} while (0)

extern const uint8_t gid_v4[16];

/* A fresh device with GID 0, a PD, an MR on P_DATA, a CQ and an RTS QP on
 * page 0. */
extern uint32_t g_pd, g_mr, g_cq, g_qp;

/* A malformed send WQE and the error completion it must get. */
struct wqe_case {
	struct ohca_send_wqe w;
	struct ohca_sge sg[3];
	int nsg;		/* SGEs written after the WQE */
	bool own_lkey;		/* the SGEs use the MR rdma_setup() registered */
	uint8_t status, verr;
};

/* One case function per malformed WQE, named as in cases[]. */
#define WQE_CASE(fn, ...)						\
bool fn(void)							\
{									\
	static const struct wqe_case c = { __VA_ARGS__ };		\
									\
	return run_wqe_case(&c);					\
}

/* ---- the harness (common.c) ---------------------------------------------- */

bool failf(const char *fmt, ...);
uint32_t rd(uint32_t off);
void wr(uint32_t off, uint32_t v);
void db64(uint32_t page, uint32_t off, uint32_t qn, uint32_t value);
void msleep(int ms);
bool wait_reg(uint32_t off, uint32_t mask, uint32_t want);
bool dev_reset(void);
bool bring_up_with(uint64_t eq, unsigned int eq_log, uint64_t cq,
			  unsigned int cq_log);
bool bring_up(void);
void eq_drain(void);
struct ohca_cmd *slot_of(uint16_t pi);
int post_raw(const struct ohca_cmd *c, uint8_t *status, uint32_t *syn);
uint8_t cmd(uint16_t op, const void *in, uint16_t in_len,
		   uint16_t out_len);
uint32_t out_handle(void);
uint64_t db_errors(void);
bool nop_ok(void);
bool expect_fatal(uint32_t code);
uint32_t mk_pd(void);
void pbl1(struct ohca_pbl *p, int page_list, int data_page);
uint32_t mk_mr(uint32_t pd, uint32_t access);
uint32_t mk_cq(uint32_t eqn, uint32_t uar);
void qp_in(struct ohca_create_qp_in *in, uint32_t pd, uint32_t cq);
uint32_t mk_qp(uint32_t pd, uint32_t cq);
uint8_t destroy(uint16_t op, uint32_t h);
bool add_gid0(void);
uint8_t modify(uint32_t qpn, uint32_t mask, const struct ohca_qp_attr *a);
bool qp_to_rts(uint32_t qpn);
bool rdma_setup(void);
bool post_wqe(const struct ohca_send_wqe *w, const struct ohca_sge *sg,
		     int nsg, uint8_t want_status, uint8_t want_verr);
bool cmd_batch(uint16_t op, const void *in, uint16_t in_len,
		      const uint32_t *h, unsigned int n, uint8_t *st);
bool run_wqe_case(const struct wqe_case *c);

/* ---- the cases, by area (named as in hostile.c's cases[]) ------------------ */

bool t_reg_identity(void);
bool t_reg_readonly_writes(void);
bool t_reg_narrow_wide_unaligned(void);
bool t_reg_unknown_offsets(void);
bool t_reg_dev_ctrl_unknown_bits(void);
bool t_enable_cmdq_log0(void);
bool t_enable_cmdq_log11(void);
bool t_enable_cmdq_log_huge(void);
bool t_enable_cmdq_unaligned(void);
bool t_enable_cmdq_base0(void);
bool t_enable_eq_base0(void);
bool t_enable_eq_log17(void);
bool t_enable_eq_unaligned(void);
bool t_enable_while_fatal(void);
bool t_config_frozen_when_ready(void);
bool t_cmdq_pi_high_bits(void);
bool t_cmdq_pi_beyond_ring(void);
bool t_cmdq_pi_backwards(void);
bool t_eq0_db_bad(void);
bool t_comp_eq_db_missing(void);
bool t_eth_doorbells_without_ring(void);
bool t_cmdq_ring_outside_ram(void);
bool t_cmdq_ring_on_own_bar0(void);
bool t_eq0_outside_ram(void);
bool t_eq0_on_own_bar2(void);
bool t_eq0_full_holds_commands(void);
bool t_bus_master_off(void);
bool t_reset_mid_command(void);
bool t_reg_random_sweep(void);
bool t_cmd_bad_opcodes(void);
bool t_cmd_rsvd0(void);
bool t_cmd_rsvd1(void);
bool t_cmd_out_addr_no_len(void);
bool t_cmd_in_len_huge(void);
bool t_cmd_out_len_huge(void);
bool t_cmd_in_len_wrong(void);
bool t_cmd_out_len_short(void);
bool t_cmd_mailbox_outside_ram(void);
bool t_cmd_mailbox_wraps(void);
bool t_cmd_mailbox_on_own_bar0(void);
bool t_cmd_output_outside_ram(void);
bool t_cmd_output_on_own_bars(void);
bool t_cmd_output_over_own_entry(void);
bool t_cmd_port_fields(void);
bool t_cmd_eth_ring_outside_ram(void);
bool t_cmd_eth_tx_bad_descriptors(void);
bool t_cmd_uar_exhaustion(void);
bool t_cmd_gid_fields(void);
bool t_cmd_eq_fields(void);
bool t_cmd_eq_exhaustion(void);
bool t_pd_double_destroy(void);
bool t_pd_destroy_with_live_mr(void);
bool t_mr_stale_key(void);
bool t_mr_fields(void);
bool t_mr_page_list(void);
bool t_mr_huge_two_level(void);
bool t_cq_fields(void);
bool t_destroy_in_use(void);
bool t_qp_fields(void);
bool t_srq_fields(void);
bool t_srq_exhaustion(void);
bool t_qp_exhaustion(void);
bool t_mcast_fields(void);
bool t_resize_cq_fields(void);
bool t_cq_moderation(void);
bool t_rereg_mr_fields(void);
bool t_modify_qp_bad(void);
bool t_qp_use_after_destroy(void);
bool t_wqe_bad_opcode(void);
bool t_wqe_unknown_flags(void);
bool t_wqe_num_sge_huge(void);
bool t_wqe_num_sge_beyond_stride(void);
bool t_wqe_bad_lkey(void);
bool t_wqe_length_overflow(void);
bool t_wqe_message_too_long(void);
bool t_wqe_sge_address_wraps(void);
bool t_wqe_inline_too_long(void);
bool t_wqe_inline_read(void);
bool t_wqe_atomic_write_len(void);
bool t_wqe_atomic_write_no_data(void);
bool t_wqe_local_inv_bad_key(void);
bool t_wqe_reg_mr_bad_key(void);
bool t_wqe_bind_mw_bad_key(void);
bool t_wqe_bind_mw_reserved(void);
bool t_uc_qp(void);
bool t_xrcd_exhaustion(void);
bool t_xrc_fields(void);
bool t_xrc_ini_no_srqn(void);
bool t_dm_fields(void);
bool t_dm_exhaustion(void);
bool t_dm_window(void);
bool t_raw_flow_fields(void);
bool t_raw_flow_exhaustion(void);
bool t_raw_frame_short(void);
bool t_raw_frame_long(void);
bool t_raw_wqe_bad(void);
bool t_rss_exhaustion(void);
bool t_odp_fields(void);
bool t_odp_exhaustion(void);
bool t_odp_fault(void);
bool t_odp_fault_fail(void);
bool t_mw_fields(void);
bool t_mw_exhaustion(void);
bool t_mw_bind_ok(void);
bool t_mw_bind_without_mw_bind_access(void);
bool t_fast_reg_fields(void);
bool t_fast_reg_ok(void);
bool t_fast_reg_past_capacity(void);
bool t_fast_reg_list_outside_ram(void);
bool t_wqe_then_flush(void);
bool t_wqe_sge_on_mmio(void);
bool t_sq_ring_outside_ram(void);
bool t_cq_ring_outside_ram(void);
bool t_db_rejected(void);
bool t_db_backwards_and_reset_qp(void);
bool t_db_flood(void);
bool t_db_random_everything(void);
bool t_cmd_random_entries(void);
bool t_rdma_random_commands(void);

#endif
