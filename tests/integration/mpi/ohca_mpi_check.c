// SPDX-License-Identifier: GPL-2.0
/*
 * ohca_mpi_check: MPI over ohca with every result verified (issue 25,
 * item 2). Point-to-point latency and bandwidth between ranks 0 and 1
 * (payloads checked), then allreduce, broadcast and alltoall over all
 * ranks at several sizes, each result compared with the value every rank
 * can compute on its own. Prints one "CHECK <name> ok|FAIL ..." line per
 * check from rank 0 and exits nonzero if any check failed on any rank.
 *
 * Usage: ohca_mpi_check [iterations]   (default 50)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks;

/* the byte a sender puts at index i of round r */
static unsigned char pattern(int src, int r, size_t i)
{
	return (unsigned char)(src * 31 + r * 7 + i * 13 + (i >> 8));
}

static void fill(unsigned char *buf, size_t len, int src, int r)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = pattern(src, r, i);
}

static long bad_bytes(const unsigned char *buf, size_t len, int src, int r)
{
	long bad = 0;

	for (size_t i = 0; i < len; i++)
		bad += buf[i] != pattern(src, r, i);
	return bad;
}

/* every rank's failure count summed on all ranks; rank 0 prints the line */
static int report(const char *name, long bad, const char *fmt, double val)
{
	long total = 0;

	MPI_Allreduce(&bad, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0) {
		printf("CHECK %s %s", name, total ? "FAIL" : "ok");
		if (total)
			printf(" (%ld mismatches)", total);
		if (fmt) {
			printf(" ");
			printf(fmt, val);
		}
		printf("\n");
		fflush(stdout);
	}
	return total != 0;
}

/* ping-pong of len bytes between ranks 0 and 1, iters round trips: the
 * one-way time in microseconds; every received payload checked */
static double pingpong(size_t len, int iters, long *bad)
{
	unsigned char *sbuf = malloc(len ? len : 1), *rbuf = malloc(len ? len : 1);
	double t0 = 0;

	for (int r = 0; r < iters + 2; r++) {
		if (r == 2) {
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
		}
		if (rank == 0) {
			fill(sbuf, len, 0, r);
			MPI_Send(sbuf, (int)len, MPI_BYTE, 1, r, MPI_COMM_WORLD);
			MPI_Recv(rbuf, (int)len, MPI_BYTE, 1, r, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			*bad += bad_bytes(rbuf, len, 1, r);
		} else if (rank == 1) {
			MPI_Recv(rbuf, (int)len, MPI_BYTE, 0, r, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			*bad += bad_bytes(rbuf, len, 0, r);
			fill(sbuf, len, 1, r);
			MPI_Send(sbuf, (int)len, MPI_BYTE, 0, r, MPI_COMM_WORLD);
		}
	}
	double us = (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);

	free(sbuf);
	free(rbuf);
	return us;
}

/* rank 0 streams window messages of len bytes to rank 1, iters times; MB/s */
static double stream_bw(size_t len, int iters, long *bad)
{
	enum { WINDOW = 8 };
	unsigned char *buf = malloc(len * WINDOW);
	MPI_Request req[WINDOW];
	char ack = 0;
	double t0;

	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (int r = 0; r < iters; r++) {
		if (rank == 0) {
			for (int w = 0; w < WINDOW; w++) {
				fill(buf + w * len, len, 0, r * WINDOW + w);
				MPI_Isend(buf + w * len, (int)len, MPI_BYTE, 1, w, MPI_COMM_WORLD, &req[w]);
			}
			MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
			MPI_Recv(&ack, 1, MPI_BYTE, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else if (rank == 1) {
			for (int w = 0; w < WINDOW; w++)
				MPI_Irecv(buf + w * len, (int)len, MPI_BYTE, 0, w, MPI_COMM_WORLD, &req[w]);
			MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
			for (int w = 0; w < WINDOW; w++)
				*bad += bad_bytes(buf + w * len, len, 0, r * WINDOW + w);
			MPI_Send(&ack, 1, MPI_BYTE, 0, 99, MPI_COMM_WORLD);
		}
	}
	double secs = MPI_Wtime() - t0;

	free(buf);
	return (double)len * WINDOW * iters / secs / 1e6;
}

/* allreduce (sum) of n int64: element i of rank k is k*1000003 + i*(k+1) */
static long check_allreduce(size_t n)
{
	int64_t *in = malloc(n * sizeof(*in)), *out = malloc(n * sizeof(*out));
	long bad = 0;

	for (size_t i = 0; i < n; i++)
		in[i] = (int64_t)rank * 1000003 + (int64_t)i * (rank + 1);
	MPI_Allreduce(in, out, (int)n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
	for (size_t i = 0; i < n; i++) {
		int64_t want = 0;

		for (int k = 0; k < nranks; k++)
			want += (int64_t)k * 1000003 + (int64_t)i * (k + 1);
		bad += out[i] != want;
	}
	/* and a max, in doubles */
	double dmine = rank + 0.5, dmax = 0;

	MPI_Allreduce(&dmine, &dmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	bad += dmax != nranks - 0.5;
	free(in);
	free(out);
	return bad;
}

/* broadcast of len bytes from every root in turn */
static long check_bcast(size_t len)
{
	unsigned char *buf = malloc(len);
	long bad = 0;

	for (int root = 0; root < nranks; root++) {
		if (rank == root)
			fill(buf, len, root, 1000 + root);
		else
			memset(buf, 0, len);
		MPI_Bcast(buf, (int)len, MPI_BYTE, root, MPI_COMM_WORLD);
		bad += bad_bytes(buf, len, root, 1000 + root);
	}
	free(buf);
	return bad;
}

/* alltoall of n int32 per pair: the block rank s sends to d holds
 * s*65536 + d*256 + i */
static long check_alltoall(size_t n)
{
	int32_t *sbuf = malloc(n * nranks * sizeof(int32_t));
	int32_t *rbuf = calloc(n * nranks, sizeof(int32_t));
	long bad = 0;

	for (int d = 0; d < nranks; d++)
		for (size_t i = 0; i < n; i++)
			sbuf[d * n + i] = rank * 65536 + d * 256 + (int32_t)i;
	MPI_Alltoall(sbuf, (int)n, MPI_INT32_T, rbuf, (int)n, MPI_INT32_T, MPI_COMM_WORLD);
	for (int s = 0; s < nranks; s++)
		for (size_t i = 0; i < n; i++)
			bad += rbuf[s * n + i] != s * 65536 + rank * 256 + (int32_t)i;
	free(sbuf);
	free(rbuf);
	return bad;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 50;
	static const size_t sizes[] = { 8, 1024, 65536 };
	char host[MPI_MAX_PROCESSOR_NAME], name[64];
	int hlen, failed = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	MPI_Get_processor_name(host, &hlen);
	printf("RANK %d of %d on %s\n", rank, nranks, host);
	fflush(stdout);
	if (nranks < 2) {
		fprintf(stderr, "ohca_mpi_check: needs at least 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		long bad = 0;
		double us = pingpong(sizes[s], iters, &bad);

		snprintf(name, sizeof(name), "pingpong_%zu", sizes[s]);
		failed |= report(name, bad, "latency_us=%.1f", us);
	}
	{
		long bad = 0;
		double mbs = stream_bw(65536, iters / 5 + 1, &bad);

		failed |= report("bandwidth_65536", bad, "MB/s=%.1f", mbs);
	}
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t len = sizes[s];
		double t0 = MPI_Wtime();
		long bad = check_allreduce(len / 8 ? len / 8 : 1);

		snprintf(name, sizeof(name), "allreduce_%zu", len);
		failed |= report(name, bad, "us=%.0f", (MPI_Wtime() - t0) * 1e6);
		t0 = MPI_Wtime();
		bad = check_bcast(len);
		snprintf(name, sizeof(name), "bcast_%zu", len);
		failed |= report(name, bad, "us=%.0f", (MPI_Wtime() - t0) * 1e6);
		t0 = MPI_Wtime();
		bad = check_alltoall(len / 4 ? len / 4 : 1);
		snprintf(name, sizeof(name), "alltoall_%zu", len);
		failed |= report(name, bad, "us=%.0f", (MPI_Wtime() - t0) * 1e6);
	}
	if (rank == 0)
		printf("DONE %s ranks=%d\n", failed ? "FAIL" : "ok", nranks);
	MPI_Finalize();
	return failed;
}
