/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mpi_ring STEPS PAUSE_MS: every rank holds a 64-bit value; each step it
 * passes its value to the next rank of a ring (MPI_Sendrecv), mixes in
 * what it received, and all ranks agree on a checksum (MPI_Allreduce).
 * Rank 0 prints "step K sum S" each step and at the end "result S": the
 * same for every run of the same STEPS, however many times it was
 * checkpointed and restarted. Built by tests/test_mpi.py with mpicc.
 *
 * mpi_ring STEPS PAUSE_MS HOLD_FILE: the same, but after step STEPS/2 every
 * rank waits until HOLD_FILE exists (up to a minute), so a test can be sure
 * the job still runs when it asks for a checkpoint (tests/test_slurm.py).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <mpi.h>

#define HOLD_POLL_MS 20
#define HOLD_POLLS 3000

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdULL;
}

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0)
		;
}

static void wait_for_file(const char *path)
{
	for (int i = 0; i < HOLD_POLLS; i++) {
		if (access(path, F_OK) == 0)
			return;
		pause_ms(HOLD_POLL_MS);
	}
	fprintf(stderr, "mpi_ring: %s did not appear in %d s\n", path,
		HOLD_POLLS * HOLD_POLL_MS / 1000);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv)
{
	int rank, size;
	long steps, pause;
	uint64_t value, got, sum = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc != 3 && argc != 4) {
		if (rank == 0)
			fprintf(stderr, "usage: mpi_ring STEPS PAUSE_MS "
				"[HOLD_FILE]\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	steps = atol(argv[1]);
	pause = atol(argv[2]);
	value = mix(0, (uint64_t)rank + 1);
	for (long k = 1; k <= steps; k++) {
		MPI_Sendrecv(&value, 1, MPI_UINT64_T, (rank + 1) % size, 0,
			     &got, 1, MPI_UINT64_T, (rank + size - 1) % size,
			     0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		value = mix(value, got + (uint64_t)k);
		MPI_Allreduce(&value, &sum, 1, MPI_UINT64_T, MPI_BXOR,
			      MPI_COMM_WORLD);
		if (rank == 0) {
			printf("step %ld sum %016" PRIx64 "\n", k, sum);
			fflush(stdout);
		}
		pause_ms(pause);
		if (argc == 4 && k == steps / 2)
			wait_for_file(argv[3]);
	}
	if (rank == 0) {
		printf("result %016" PRIx64 "\n", sum);
		fflush(stdout);
	}
	MPI_Finalize();
	return 0;
}
