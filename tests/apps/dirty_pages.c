/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * dirty_pages MIB STEPS THREADS PERMILLE [SLEEP_MS]: a buffer of MIB MiB
 * of random data, then STEPS steps in which THREADS threads (kept for the
 * whole run, meeting at a barrier) each write one word into pseudo-random
 * pages of the buffer, PERMILLE thousandths of its pages per step in all,
 * and into a heap block of their own. After each step every thread hashes
 * its share of every word and the main thread prints "step K/STEPS
 * DIGEST": a page a restart got wrong changes the digest. The incremental
 * checkpoint tests and the benchmark write a small fraction per step.
 * Prints "buffer ADDR PAGES" (hex address) first; SLEEP_MS (default 40)
 * between steps.
 */
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include "app_util.h"

#define PROG "dirty_pages"
#define MAX_THREADS 8
#define PAGE_WORDS 512
#define OWN_WORDS (64 * PAGE_WORDS)	/* each thread's heap block */

static uint64_t *buffer;
static size_t npages;
static unsigned nthreads, permille;
static unsigned long steps, step_no;
static pthread_barrier_t start_step, end_step;
static uint64_t partial[MAX_THREADS];

static void fill(void)
{
	uint64_t seed = 7;

	for (size_t i = 0; i < npages * PAGE_WORDS; i++)
		buffer[i] = splitmix64(&seed);
}

/* Thread k's writes of this step: pages picked by a PRNG seeded by the
 * step and k, so an uninterrupted run and a restarted one write the same. */
static void write_pages(unsigned k, uint64_t *own)
{
	uint64_t seed = mix64(step_no * MAX_THREADS + k);
	size_t count = npages * permille / 1000 / nthreads;

	for (size_t i = 0; i < count; i++) {
		uint64_t r = splitmix64(&seed);
		size_t page = r % npages, word = (r >> 32) % PAGE_WORDS;

		buffer[page * PAGE_WORDS + word] ^= r;
	}
	own[(step_no * 131 + k) % OWN_WORDS] += step_no;
}

/* Thread k's share of the digest: every nthreads-th page, and its own
 * block. */
static uint64_t digest_share(unsigned k, const uint64_t *own)
{
	uint64_t h = k;

	for (size_t p = k; p < npages; p += nthreads)
		for (size_t w = 0; w < PAGE_WORDS; w++)
			h = mix64(h ^ buffer[p * PAGE_WORDS + w]);
	for (size_t w = 0; w < OWN_WORDS; w++)
		h = mix64(h ^ own[w]);
	return h;
}

static void *thread_main(void *arg)
{
	unsigned k = (unsigned)(uintptr_t)arg;
	uint64_t *own = calloc(OWN_WORDS, 8);

	if (!own)
		die(PROG, "calloc failed");
	for (;;) {
		pthread_barrier_wait(&start_step);
		if (step_no > steps)
			break;
		write_pages(k, own);
		pthread_barrier_wait(&end_step);	/* all written */
		partial[k] = digest_share(k, own);
		pthread_barrier_wait(&end_step);	/* all hashed */
	}
	free(own);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[MAX_THREADS];
	unsigned long sleep_ms_arg;
	size_t mib;

	if (argc < 5)
		die(PROG, "usage: dirty_pages MIB STEPS THREADS PERMILLE "
		    "[SLEEP_MS]");
	mib = parse_ulong(PROG, "MIB", argv[1], 1, 8192);
	steps = parse_ulong(PROG, "STEPS", argv[2], 1, 1000000);
	nthreads = parse_ulong(PROG, "THREADS", argv[3], 1, MAX_THREADS);
	permille = parse_ulong(PROG, "PERMILLE", argv[4], 1, 1000);
	sleep_ms_arg = argc > 5 ? parse_ulong(PROG, "SLEEP_MS", argv[5], 0,
					      10000) : 40;
	npages = (mib << 20) / (PAGE_WORDS * 8);
	buffer = mmap(NULL, mib << 20, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buffer == MAP_FAILED)
		die(PROG, "mapping %zu MiB failed", mib);
	fill();
	pthread_barrier_init(&start_step, NULL, nthreads + 1);
	pthread_barrier_init(&end_step, NULL, nthreads + 1);
	for (unsigned k = 0; k < nthreads; k++)
		if (pthread_create(&t[k], NULL, thread_main,
				   (void *)(uintptr_t)k))
			die(PROG, "pthread_create failed");
	say("buffer %lx %zu", (unsigned long)buffer, npages);
	for (step_no = 1; step_no <= steps; step_no++) {
		uint64_t h = FNV1A_INIT;

		pthread_barrier_wait(&start_step);
		pthread_barrier_wait(&end_step);
		pthread_barrier_wait(&end_step);
		for (unsigned k = 0; k < nthreads; k++)
			h = fnv1a(h, &partial[k], 8);
		say("step %lu/%lu %016llx", step_no, steps,
		    (unsigned long long)h);
		if (sleep_ms_arg)
			sleep_ms(sleep_ms_arg);
	}
	pthread_barrier_wait(&start_step);	/* step_no > steps: leave */
	for (unsigned k = 0; k < nthreads; k++)
		pthread_join(t[k], NULL);
	say("done");
	return 0;
}
