/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memory_mix MIB ROUNDS [THREADS]: MIB MiB each of random data (a seeded
 * PRNG: incompressible), text-like data (compressible) and written zeros,
 * each in its own mapping, then ROUNDS rounds that change a few words of
 * each and print a digest of all three. With THREADS > 0, that many
 * threads do the rounds' work on their share of the memory, joined each
 * round. Prints "ranges RANDOM TEXT ZEROS" (hex start addresses) first,
 * "round K/ROUNDS DIGEST" after each round.
 */
#include <pthread.h>
#include <sys/mman.h>
#include "app_util.h"

#define PROG "memory_mix"
#define MAX_THREADS 8

static uint64_t *random_words, *text_words, *zero_words;
static size_t nwords;
static unsigned nthreads;
static unsigned long round_no;
static uint64_t partial[MAX_THREADS];

static uint64_t *map_mib(size_t mib)
{
	void *p = mmap(NULL, mib << 20, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die(PROG, "mapping %zu MiB failed", mib);
	return p;
}

static void fill(void)
{
	static const char *words[] = { "checkpoint ", "restart ", "memory ",
		"extent ", "the ", "of ", "process ", "image ", "zstd ",
		"page\n" };
	uint64_t seed = 42;
	char *t = (char *)text_words;
	size_t bytes = nwords * 8, at = 0;

	for (size_t i = 0; i < nwords; i++)
		random_words[i] = splitmix64(&seed);
	while (at < bytes) {
		const char *w = words[splitmix64(&seed) % 10];

		for (; *w && at < bytes; w++)
			t[at++] = *w;
	}
	memset(zero_words, 0, bytes);	/* populated, all zero */
}

/* Thread k's share: every nthreads-th page of each range. */
static uint64_t work_share(unsigned k)
{
	uint64_t h = FNV1A_INIT;
	size_t page_words = 512;

	for (size_t p = k * page_words; p < nwords;
	     p += (size_t)page_words * (nthreads ? nthreads : 1)) {
		random_words[p] ^= mix64(round_no + p);
		text_words[p + 1] += round_no;
		h = fnv1a(h, &random_words[p], page_words * 8);
		h = fnv1a(h, &text_words[p], page_words * 8);
		h = fnv1a(h, &zero_words[p], page_words * 8);
	}
	return h;
}

static void *thread_main(void *arg)
{
	unsigned k = (unsigned)(uintptr_t)arg;

	partial[k] = work_share(k);
	return NULL;
}

static uint64_t one_round(void)
{
	pthread_t t[MAX_THREADS];
	uint64_t h = FNV1A_INIT;

	if (!nthreads)
		return work_share(0);
	for (unsigned k = 0; k < nthreads; k++)
		if (pthread_create(&t[k], NULL, thread_main,
				   (void *)(uintptr_t)k))
			die(PROG, "pthread_create failed");
	for (unsigned k = 0; k < nthreads; k++) {
		pthread_join(t[k], NULL);
		h = fnv1a(h, &partial[k], 8);
	}
	return h;
}

int main(int argc, char **argv)
{
	size_t mib;
	unsigned long rounds;

	if (argc < 3)
		die(PROG, "usage: memory_mix MIB ROUNDS [THREADS]");
	mib = parse_ulong(PROG, "MIB", argv[1], 1, 4096);
	rounds = parse_ulong(PROG, "ROUNDS", argv[2], 1, 1000000);
	nthreads = argc > 3 ? parse_ulong(PROG, "THREADS", argv[3], 0,
					  MAX_THREADS) : 0;
	nwords = (mib << 20) / 8;
	random_words = map_mib(mib);
	text_words = map_mib(mib);
	zero_words = map_mib(mib);
	fill();
	say("ranges %lx %lx %lx", (unsigned long)random_words,
	    (unsigned long)text_words, (unsigned long)zero_words);
	for (round_no = 1; round_no <= rounds; round_no++) {
		say("round %lu/%lu %016llx", round_no, rounds,
		    (unsigned long long)one_round());
		sleep_ms(50);
	}
	return 0;
}
