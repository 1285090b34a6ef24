// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * zero_scan MIB: the cost of libckpt's zero-page test (memory.c,
 * page_is_zero) on MIB MiB of random data, against hashing the same
 * memory (ckpt_hash64, which every checkpoint does anyway). Prints
 * "zero_scan_s S hash_s H", each the best of 5 passes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include "ckpt/hash.h"

#define PAGE 4096UL

static int page_is_zero(const uint64_t *p)	/* as in memory.c */
{
	for (size_t i = 0; i < PAGE / 8; i += 8)
		if (p[i] | p[i + 1] | p[i + 2] | p[i + 3] | p[i + 4] |
		    p[i + 5] | p[i + 6] | p[i + 7])
			return 0;
	return 1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	size_t len = (size_t)(argc > 1 ? atol(argv[1]) : 1024) << 20;
	uint64_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), x = 88172645463325252ULL;
	double best_zero = 1e9, best_hash = 1e9;
	volatile uint64_t sink = 0;

	if (m == MAP_FAILED)
		return 1;
	for (size_t i = 0; i < len / 8; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		m[i] = x;
	}
	for (int r = 0; r < 5; r++) {
		double t = now();
		size_t zero = 0;

		for (size_t off = 0; off < len; off += PAGE)
			zero += page_is_zero(m + off / 8);
		t = now() - t;
		sink += zero;
		if (t < best_zero)
			best_zero = t;
		t = now();
		sink += ckpt_hash64(m, len, 0);
		t = now() - t;
		if (t < best_hash)
			best_hash = t;
	}
	printf("zero_scan_s %.4f hash_s %.4f\n", best_zero, best_hash);
	return (int)(sink & 0);
}
