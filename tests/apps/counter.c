/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * counter N PAUSE_MS: count from 1 to N, printing "count K SUM" after each
 * step and sleeping PAUSE_MS, where SUM is a running hash kept both on the
 * stack and in a heap cell; at the end print "done N SUM". Used for
 * checkpoint/restart chains and the stdout-to-file test: its output is a
 * pure function of N.
 */
#include "app_util.h"

#define PROG "counter"

int main(int argc, char **argv)
{
	unsigned long n, pause_ms, k;
	uint64_t sum = 0, *heap_sum;

	if (argc != 3)
		die(PROG, "usage: counter N PAUSE_MS");
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
	}
	say("done %lu %016" PRIx64, n, sum);
	return 0;
}
