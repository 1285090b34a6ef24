/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * counter N PAUSE_MS: count from 1 to N, printing "count K SUM" after each
 * step and sleeping PAUSE_MS, where SUM is a running hash kept both on the
 * stack and in a heap cell; at the end print "done N SUM". Used for
 * checkpoint/restart chains and the stdout-to-file test: its output is a
 * pure function of N.
 *
 * counter N PAUSE_MS HOLD_FILE: the same, but after step N/2 it waits until
 * HOLD_FILE exists (up to a minute) before going on, so a test can be sure
 * it is still running when it asks for a checkpoint (tests/test_slurm.py).
 * The output is the same.
 */
#include <unistd.h>

#include "app_util.h"

#define PROG "counter"
#define HOLD_POLL_MS 20
#define HOLD_POLLS 3000

static void wait_for_file(const char *path)
{
	int i;

	for (i = 0; i < HOLD_POLLS; i++) {
		if (access(path, F_OK) == 0)
			return;
		sleep_ms(HOLD_POLL_MS);
	}
	die(PROG, "%s did not appear in %d s", path,
	    HOLD_POLLS * HOLD_POLL_MS / 1000);
}

int main(int argc, char **argv)
{
	unsigned long n, pause_ms, k;
	uint64_t sum = 0, *heap_sum;

	if (argc != 3 && argc != 4)
		die(PROG, "usage: counter N PAUSE_MS [HOLD_FILE]");
	n = parse_ulong(PROG, "N", argv[1], 1, 1UL << 30);
	pause_ms = parse_ulong(PROG, "PAUSE_MS", argv[2], 0, 10000);
	heap_sum = malloc(sizeof(*heap_sum));
	if (!heap_sum)
		die(PROG, "malloc: out of memory");
	*heap_sum = 0;
	for (k = 1; k <= n; k++) {
		sum = mix64(sum + k);
		*heap_sum = mix64(*heap_sum + k);
		if (sum != *heap_sum)
			die(PROG, "stack and heap sums differ at %lu", k);
		say("count %lu %016" PRIx64, k, sum);
		sleep_ms(pause_ms);
		if (argc == 4 && k == n / 2)
			wait_for_file(argv[3]);
	}
	say("done %lu %016" PRIx64, n, sum);
	return 0;
}
