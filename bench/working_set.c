// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A working set for bench/bench_snapshot_memory.py: MIB MiB of random
 * bytes, of which PERCENT % of the pages are rewritten every second, in
 * ten slices (one every 100 ms, each followed by a call of tick() for a
 * debugger's breakpoint), for SECONDS seconds.
 * Usage: working_set MIB PERCENT SECONDS
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#define PAGE 4096
#define SLICES_PER_SECOND 10

/* the debugger stops here: once per slice */
__attribute__((noinline)) void tick(long slice)
{
	__asm__ volatile("" : : "r"(slice) : "memory");
}

static unsigned long long next_random(unsigned long long *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

static void fill(unsigned char *area, size_t pages, size_t from, size_t n,
		 unsigned long long *state)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		unsigned long long *p = (unsigned long long *)
			(area + ((from + i) % pages) * PAGE);
		for (j = 0; j < PAGE / sizeof(*p); j++)
			p[j] = next_random(state);
	}
}

static void sleep_until(struct timespec *at, long add_ns)
{
	at->tv_nsec += add_ns;
	while (at->tv_nsec >= 1000000000L) {
		at->tv_nsec -= 1000000000L;
		at->tv_sec++;
	}
	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, at, NULL);
}

int main(int argc, char **argv)
{
	unsigned long long state = 88172645463325252ULL;
	size_t pages, per_slice, next = 0;
	unsigned char *area;
	struct timespec at;
	long slice, slices;

	if (argc != 4) {
		fprintf(stderr, "usage: working_set MIB PERCENT SECONDS\n");
		return 2;
	}
	pages = (size_t)atol(argv[1]) * (1 << 20) / PAGE;
	per_slice = pages * (size_t)atol(argv[2]) / 100 / SLICES_PER_SECOND;
	slices = atol(argv[3]) * SLICES_PER_SECOND;
	area = mmap(NULL, pages * PAGE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED) {
		perror("working_set: mmap of the working set");
		return 1;
	}
	fill(area, pages, 0, pages, &state);
	clock_gettime(CLOCK_MONOTONIC, &at);
	for (slice = 1; slice <= slices; slice++) {
		fill(area, pages, next, per_slice, &state);
		next = (next + per_slice) % pages;
		tick(slice);
		sleep_until(&at, 1000000000L / SLICES_PER_SECOND);
	}
	printf("working_set: %ld slices\n", slices);
	return 0;
}
