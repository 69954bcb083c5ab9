// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ohca_hostile: a hostile guest for the ohca device. Runs as root in a test
 * VM with ohca.ko unbound: maps BAR0 and BAR2 through sysfs, takes DMA memory
 * from locked anonymous pages (bus address = physical address from
 * /proc/self/pagemap; the VM has no IOMMU) and drives the device directly
 * with adversarial registers, commands, WQEs and doorbells. Every case
 * checks the reaction docs/programming-manual.md and qemu-device/README.md
 * document (a status and syndrome, a fatal state, a counted and ignored
 * write, an error completion) and prints "PASS name" or "FAIL name: why".
 * At the end the device is reset and left for the driver to bind again.
 *
 * This file: the program (finding the function, mapping its BARs, DMA
 * pages) and the table of cases in the order they run; the cases are in
 * one file per area of the device beside it, their harness in common.c.
 *
 *   ohca_hostile [-v] [-l] [-s seed] [case...]   (-l lists the cases)
 */
#include "hostile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

volatile uint8_t *bar0;
volatile uint8_t *bar2;
uint64_t bar0_bus, bar2_bus;
char pci_dir[300];
int verbose;
uint8_t *pages;
uint64_t page_bus[NPAGES];

struct hcase {
	const char *name;
	bool (*fn)(void);
	bool fresh;	/* bring the device up first */
};

static const struct hcase cases[] = {
	{ "reg_identity", t_reg_identity, true },
	{ "reg_readonly_writes", t_reg_readonly_writes, true },
	{ "reg_narrow_wide_unaligned", t_reg_narrow_wide_unaligned, false },
	{ "reg_unknown_offsets", t_reg_unknown_offsets, true },
	{ "reg_dev_ctrl_unknown_bits", t_reg_dev_ctrl_unknown_bits, true },
	{ "enable_cmdq_log0", t_enable_cmdq_log0, false },
	{ "enable_cmdq_log11", t_enable_cmdq_log11, false },
	{ "enable_cmdq_log_huge", t_enable_cmdq_log_huge, false },
	{ "enable_cmdq_unaligned", t_enable_cmdq_unaligned, false },
	{ "enable_cmdq_base0", t_enable_cmdq_base0, false },
	{ "enable_eq_base0", t_enable_eq_base0, false },
	{ "enable_eq_log17", t_enable_eq_log17, false },
	{ "enable_eq_unaligned", t_enable_eq_unaligned, false },
	{ "enable_while_fatal", t_enable_while_fatal, false },
	{ "config_frozen_when_ready", t_config_frozen_when_ready, true },
	{ "cmdq_pi_high_bits", t_cmdq_pi_high_bits, true },
	{ "cmdq_pi_beyond_ring", t_cmdq_pi_beyond_ring, true },
	{ "cmdq_pi_backwards", t_cmdq_pi_backwards, true },
	{ "eq0_db_bad", t_eq0_db_bad, true },
	{ "comp_eq_db_missing", t_comp_eq_db_missing, true },
	{ "eth_doorbells_without_ring", t_eth_doorbells_without_ring, true },
	{ "cmdq_ring_outside_ram", t_cmdq_ring_outside_ram, false },
	{ "cmdq_ring_on_own_bar0", t_cmdq_ring_on_own_bar0, false },
	{ "eq0_outside_ram", t_eq0_outside_ram, false },
	{ "eq0_on_own_bar2", t_eq0_on_own_bar2, false },
	{ "eq0_full_holds_commands", t_eq0_full_holds_commands, false },
	{ "bus_master_off", t_bus_master_off, true },
	{ "reset_mid_command", t_reset_mid_command, true },
	{ "reg_random_sweep", t_reg_random_sweep, true },
	{ "cmd_bad_opcodes", t_cmd_bad_opcodes, true },
	{ "cmd_rsvd0", t_cmd_rsvd0, true },
	{ "cmd_rsvd1", t_cmd_rsvd1, true },
	{ "cmd_out_addr_no_len", t_cmd_out_addr_no_len, true },
	{ "cmd_in_len_huge", t_cmd_in_len_huge, true },
	{ "cmd_out_len_huge", t_cmd_out_len_huge, true },
	{ "cmd_in_len_wrong", t_cmd_in_len_wrong, true },
	{ "cmd_out_len_short", t_cmd_out_len_short, true },
	{ "cmd_mailbox_outside_ram", t_cmd_mailbox_outside_ram, true },
	{ "cmd_mailbox_wraps", t_cmd_mailbox_wraps, true },
	{ "cmd_mailbox_on_own_bar0", t_cmd_mailbox_on_own_bar0, true },
	{ "cmd_output_outside_ram", t_cmd_output_outside_ram, true },
	{ "cmd_output_on_own_bars", t_cmd_output_on_own_bars, true },
	{ "cmd_output_over_own_entry", t_cmd_output_over_own_entry, true },
	{ "cmd_port_fields", t_cmd_port_fields, true },
	{ "cmd_eth_ring_outside_ram", t_cmd_eth_ring_outside_ram, true },
	{ "cmd_eth_tx_bad_descriptors", t_cmd_eth_tx_bad_descriptors, true },
	{ "cmd_uar_exhaustion", t_cmd_uar_exhaustion, true },
	{ "cmd_gid_fields", t_cmd_gid_fields, true },
	{ "cmd_eq_fields", t_cmd_eq_fields, true },
	{ "cmd_eq_exhaustion", t_cmd_eq_exhaustion, true },
	{ "pd_double_destroy", t_pd_double_destroy, true },
	{ "pd_destroy_with_live_mr", t_pd_destroy_with_live_mr, true },
	{ "mr_stale_key", t_mr_stale_key, true },
	{ "mr_fields", t_mr_fields, true },
	{ "mr_page_list", t_mr_page_list, true },
	{ "mr_huge_two_level", t_mr_huge_two_level, true },
	{ "cq_fields", t_cq_fields, true },
	{ "destroy_in_use", t_destroy_in_use, true },
	{ "qp_fields", t_qp_fields, true },
	{ "srq_fields", t_srq_fields, true },
	{ "srq_exhaustion", t_srq_exhaustion, true },
	{ "qp_exhaustion", t_qp_exhaustion, true },
	{ "mcast_fields", t_mcast_fields, true },
	{ "resize_cq_fields", t_resize_cq_fields, true },
	{ "cq_moderation", t_cq_moderation, false },
	{ "rereg_mr_fields", t_rereg_mr_fields, true },
	{ "modify_qp_bad", t_modify_qp_bad, false },
	{ "qp_use_after_destroy", t_qp_use_after_destroy, false },
	{ "wqe_bad_opcode", t_wqe_bad_opcode, false },
	{ "wqe_unknown_flags", t_wqe_unknown_flags, false },
	{ "wqe_num_sge_huge", t_wqe_num_sge_huge, false },
	{ "wqe_num_sge_beyond_stride", t_wqe_num_sge_beyond_stride, false },
	{ "wqe_bad_lkey", t_wqe_bad_lkey, false },
	{ "wqe_length_overflow", t_wqe_length_overflow, false },
	{ "wqe_message_too_long", t_wqe_message_too_long, false },
	{ "wqe_sge_address_wraps", t_wqe_sge_address_wraps, false },
	{ "wqe_inline_too_long", t_wqe_inline_too_long, false },
	{ "wqe_inline_read", t_wqe_inline_read, false },
	{ "wqe_atomic_write_len", t_wqe_atomic_write_len, false },
	{ "wqe_atomic_write_no_data", t_wqe_atomic_write_no_data, false },
	{ "wqe_local_inv_bad_key", t_wqe_local_inv_bad_key, false },
	{ "wqe_reg_mr_bad_key", t_wqe_reg_mr_bad_key, false },
	{ "wqe_bind_mw_bad_key", t_wqe_bind_mw_bad_key, false },
	{ "wqe_bind_mw_reserved", t_wqe_bind_mw_reserved, false },
	{ "uc_qp", t_uc_qp, false },
	{ "xrcd_exhaustion", t_xrcd_exhaustion, true },
	{ "xrc_fields", t_xrc_fields, true },
	{ "xrc_ini_no_srqn", t_xrc_ini_no_srqn, false },
	{ "dm_fields", t_dm_fields, true },
	{ "dm_exhaustion", t_dm_exhaustion, true },
	{ "dm_window", t_dm_window, true },
	{ "raw_flow_fields", t_raw_flow_fields, false },
	{ "raw_flow_exhaustion", t_raw_flow_exhaustion, false },
	{ "raw_frame_short", t_raw_frame_short, false },
	{ "raw_frame_long", t_raw_frame_long, false },
	{ "raw_wqe_bad", t_raw_wqe_bad, false },
	{ "rss_exhaustion", t_rss_exhaustion, true },
	{ "odp_fields", t_odp_fields, false },
	{ "odp_exhaustion", t_odp_exhaustion, false },
	{ "odp_fault", t_odp_fault, false },
	{ "odp_fault_fail", t_odp_fault_fail, false },
	{ "mw_fields", t_mw_fields, true },
	{ "mw_exhaustion", t_mw_exhaustion, true },
	{ "mw_bind_ok", t_mw_bind_ok, false },
	{ "mw_bind_without_mw_bind_access", t_mw_bind_without_mw_bind_access,
	  false },
	{ "fast_reg_fields", t_fast_reg_fields, false },
	{ "fast_reg_ok", t_fast_reg_ok, false },
	{ "fast_reg_past_capacity", t_fast_reg_past_capacity, false },
	{ "fast_reg_list_outside_ram", t_fast_reg_list_outside_ram, false },
	{ "wqe_then_flush", t_wqe_then_flush, false },
	{ "wqe_sge_on_mmio", t_wqe_sge_on_mmio, false },
	{ "sq_ring_outside_ram", t_sq_ring_outside_ram, false },
	{ "cq_ring_outside_ram", t_cq_ring_outside_ram, false },
	{ "db_rejected", t_db_rejected, false },
	{ "db_backwards_and_reset_qp", t_db_backwards_and_reset_qp, false },
	{ "db_flood", t_db_flood, false },
	{ "db_random_everything", t_db_random_everything, true },
	{ "cmd_random_entries", t_cmd_random_entries, true },
	{ "rdma_random_commands", t_rdma_random_commands, false },
};

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY), rc;

	if (fd < 0)
		return -1;
	rc = write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : -1;
	close(fd);
	return rc;
}

static int find_device(void)
{
	DIR *d = opendir("/sys/bus/pci/devices");
	struct dirent *e;
	char p[400], buf[32];
	int found = 0;

	if (!d)
		return -1;
	while (!found && (e = readdir(d))) {
		unsigned int ven = 0, dev = 0;
		FILE *f;

		snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/vendor", e->d_name);
		f = fopen(p, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f))
			ven = strtoul(buf, NULL, 0);
		fclose(f);
		snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/device", e->d_name);
		f = fopen(p, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f))
			dev = strtoul(buf, NULL, 0);
		fclose(f);
		if (ven == OHCA_PCI_VENDOR_ID && dev == OHCA_PCI_DEVICE_ID) {
			snprintf(pci_dir, sizeof(pci_dir), "/sys/bus/pci/devices/%s",
				 e->d_name);
			found = 1;
		}
	}
	closedir(d);
	return found ? 0 : -1;
}

static void *map_bar(int bar, size_t len, uint64_t *bus)
{
	char p[400];
	FILE *f;
	unsigned long long start = 0, end, flags;
	void *m;
	int fd;

	snprintf(p, sizeof(p), "%s/resource", pci_dir);
	f = fopen(p, "r");
	if (!f)
		return NULL;
	for (int i = 0; i <= bar; i++)
		if (fscanf(f, "%llx %llx %llx", &start, &end, &flags) != 3)
			start = 0;
	fclose(f);
	*bus = start;
	snprintf(p, sizeof(p), "%s/resource%d", pci_dir, bar);
	fd = open(p, O_RDWR | O_SYNC);
	if (fd < 0)
		return NULL;
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return m == MAP_FAILED ? NULL : m;
}

static int setup_dma(void)
{
	int fd;

	pages = mmap(NULL, (size_t)NPAGES * PG, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED | MAP_POPULATE, -1, 0);
	if (pages == MAP_FAILED)
		return -1;
	memset(pages, 0, (size_t)NPAGES * PG);
	fd = open("/proc/self/pagemap", O_RDONLY);
	if (fd < 0)
		return -1;
	for (int i = 0; i < NPAGES; i++) {
		uint64_t ent;
		off_t off = (off_t)(((uintptr_t)pages / PG) + i) * 8;

		if (pread(fd, &ent, 8, off) != 8 || !(ent & (1ull << 63)) ||
		    !(ent & ((1ull << 55) - 1))) {
			close(fd);
			return -1;
		}
		page_bus[i] = (ent & ((1ull << 55) - 1)) * PG;
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	char p[450];
	unsigned int seed = 1;
	int opt, pass = 0, fail = 0;
	uint16_t cmdreg;
	int fd;

	while ((opt = getopt(argc, argv, "vls:")) != -1) {
		switch (opt) {
		case 'v': verbose = 1; break;
		case 's': seed = strtoul(optarg, NULL, 0); break;
		case 'l':
			for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
				printf("%s\n", cases[i].name);
			return 0;
		default:
			fprintf(stderr, "usage: %s [-v] [-l] [-s seed] [case...]\n", argv[0]);
			return 2;
		}
	}
	srandom(seed);
	if (find_device()) {
		fprintf(stderr, "ohca_hostile: no ohca PCI function\n");
		return 2;
	}
	snprintf(p, sizeof(p), "%s/driver/unbind", pci_dir);
	if (access(p, W_OK) == 0 && write_str(p, strrchr(pci_dir, '/') + 1)) {
		fprintf(stderr, "ohca_hostile: cannot unbind the driver\n");
		return 2;
	}
	snprintf(p, sizeof(p), "%s/enable", pci_dir);
	write_str(p, "1");
	snprintf(p, sizeof(p), "%s/config", pci_dir);
	fd = open(p, O_RDWR);
	if (fd < 0 || pread(fd, &cmdreg, 2, 4) != 2) {
		fprintf(stderr, "ohca_hostile: config space: %s\n", strerror(errno));
		return 2;
	}
	cmdreg |= 6;	/* memory space, bus master */
	if (pwrite(fd, &cmdreg, 2, 4) != 2)
		return 2;
	close(fd);
	bar0 = map_bar(OHCA_BAR_REGS, OHCA_REGS_BAR_SIZE, &bar0_bus);
	bar2 = map_bar(OHCA_BAR_DB, OHCA_BAR2_SIZE, &bar2_bus);
	if (!bar0 || !bar2 || setup_dma()) {
		fprintf(stderr, "ohca_hostile: cannot map the BARs or DMA memory\n");
		return 2;
	}
	if (verbose)
		printf("device %s BAR0 %#llx BAR2 %#llx, DMA page 0 at %#llx\n",
		       pci_dir, (unsigned long long)bar0_bus,
		       (unsigned long long)bar2_bus, (unsigned long long)page_bus[0]);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct hcase *c = &cases[i];
		bool ok, want = optind >= argc;

		for (int a = optind; a < argc; a++)
			want |= strcmp(argv[a], c->name) == 0;
		if (!want)
			continue;
		fail_msg[0] = 0;
		ok = (!c->fresh || bring_up()) && c->fn();
		if (ok) {
			printf("PASS %s\n", c->name);
			pass++;
		} else {
			printf("FAIL %s: %s\n", c->name, fail_msg);
			fail++;
		}
		fflush(stdout);
	}
	/* Leave the device as the driver expects it. */
	if (!dev_reset()) {
		printf("FAIL final_reset: no RESET_DONE\n");
		fail++;
	}
	printf("ohca_hostile: %d passed, %d failed\n", pass, fail);
	return fail ? 1 : 0;
}
