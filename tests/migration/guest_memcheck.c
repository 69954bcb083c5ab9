// SPDX-License-Identifier: GPL-2.0
/*
 * guest_memcheck CPU PAGES LOG: the guest memory checker of
 * guest_memcheck.py in C, with the smallest footprint (docs/migration.md,
 * "Two vCPUs"). On CPU, sweeps PAGES pages without a system call: each
 * page must hold, in every 8 bytes, its index and the generation written
 * to it last; then the next generation is written. A page that does not
 * lost a write (a migration that did not carry a page the vCPU wrote): a
 * STALE line, at once. A progress line every 5 s, a summary on SIGTERM.
 * Few other pages are touched (the loop's code, its stack, the generation
 * array), so the vCPU's TLB entries for the pages live as long as nothing
 * flushes them.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define PAGE 4096
#define WORDS (PAGE / 8)
#define MAX_PAGES 4096

static volatile sig_atomic_t stop;
static uint32_t gen[MAX_PAGES];

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t tag(unsigned int page, uint32_t g)
{
	return (uint64_t)(0x6d00u | page) << 32 | g;
}

int main(int argc, char **argv)
{
	unsigned long long sweeps = 0, stale = 0;
	unsigned int cpu, npages, p, w;
	cpu_set_t set;
	uint64_t *mem;
	double last;
	FILE *out;

	if (argc != 4)
		return 2;
	cpu = atoi(argv[1]);
	npages = atoi(argv[2]);
	if (npages == 0 || npages > MAX_PAGES)
		return 2;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return 1;
	out = fopen(argv[3], "a");
	if (!out)
		return 1;
	setvbuf(out, NULL, _IOLBF, 0);
	mem = mmap(NULL, (size_t)npages * PAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	for (p = 0; p < npages; p++)
		for (w = 0; w < WORDS; w++)
			mem[p * WORDS + w] = tag(p, 0);
	signal(SIGTERM, on_term);
	fprintf(out, "memcheck: cpu %u running, %u pages (C)\n", cpu, npages);
	last = now();
	while (!stop) {
		for (p = 0; p < npages; p++) {
			uint64_t want = tag(p, gen[p]);
			/* volatile: the compiler may not assume what it wrote */
			volatile uint64_t *pg = mem + (size_t)p * WORDS;

			for (w = 0; w < WORDS; w++)
				if (pg[w] != want)
					break;
			if (w < WORDS) {
				stale++;
				fprintf(out,
					"STALE cpu %u page %u: word %u holds 0x%016llx, expected generation %u, sweep %llu, time %.3f\n",
					cpu, p, w, (unsigned long long)pg[w], gen[p], sweeps, now());
			}
			want = tag(p, ++gen[p]);
			for (w = 0; w < WORDS; w++)
				pg[w] = want;
		}
		if (++sweeps % 256 == 0 && now() - last >= 5) {
			last = now();
			fprintf(out, "memcheck: cpu %u sweeps %llu stale %llu time %.3f\n",
				cpu, sweeps, stale, last);
		}
	}
	fprintf(out, "MEMCHECK cpu %u pages %u sweeps %llu stale %llu\n", cpu, npages, sweeps, stale);
	return 0;
}
