/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mapped_memory MIB ROUNDS [tree]: memory that a restart maps from its
 * image must behave as private anonymous memory (docs/restart.md).
 *
 * A block of MIB MiB, filled with a seeded PRNG, is changed a little each
 * round by two threads (one word in every 8th page, a different eighth
 * each round, so most pages stay as restored). Each round the main thread
 * also
 *   - advises 16 pages MADV_DONTNEED (even rounds; they must read zero)
 *     or MADV_FREE (odd rounds; the call must succeed), then refills
 *     them;
 *   - grows a 1 MiB block to 2 MiB with mremap (the new half must read
 *     zero) and shrinks it back;
 *   - forks a child that must see the same digest, and reads
 *     /proc/self/maps.
 * With "tree" a child process started at the beginning does the same
 * with its own memory; its lines start with "child ".
 *
 * Output: "[child ]round K/ROUNDS digest HEX" after each round; "FAIL ..."
 * and exit 1 on any check.
 */
#include <pthread.h>
#include <sys/mman.h>
#include "app_util.h"

#define PROG "mapped_memory"
#define PAGE 4096UL
#define WORDS_PER_PAGE (PAGE / 8)
#define GROW_BYTES (1UL << 20)
#define ADVISED_PAGES 16

static const char *who = "";
static uint64_t *mem, *grow;
static size_t npages;
static pthread_barrier_t start_round, end_round;
static unsigned long current_round;

static void fill(uint64_t *w, size_t nwords, uint64_t seed)
{
	for (size_t i = 0; i < nwords; i++)
		w[i] = splitmix64(&seed);
}

static uint64_t digest(const uint64_t *w, size_t nwords, uint64_t h)
{
	for (size_t i = 0; i < nwords; i++)
		h = (h ^ w[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t memory_digest(void)
{
	return digest(grow, GROW_BYTES / 8,
		      digest(mem, npages * WORDS_PER_PAGE, FNV1A_INIT));
}

/* Thread t of 2 changes one word in every 8th page of its half. */
static void *worker(void *arg)
{
	size_t t = (size_t)arg, half = npages / 2;

	for (;;) {
		pthread_barrier_wait(&start_round);
		for (size_t p = t * half; p < (t + 1) * half; p++)
			if (p % 8 == current_round % 8)
				mem[p * WORDS_PER_PAGE] ^=
					mix64(current_round + p);
		pthread_barrier_wait(&end_round);
	}
	return NULL;
}

static void fail(unsigned long round, const char *what)
{
	say("FAIL %sround %lu: %s", who, round, what);
	exit(1);
}

static void check_advice(unsigned long round)
{
	size_t first = (round * 37 % (npages / ADVISED_PAGES)) * ADVISED_PAGES;
	uint64_t *w = mem + first * WORDS_PER_PAGE;
	size_t nwords = ADVISED_PAGES * WORDS_PER_PAGE;
	int advice = round % 2 ? MADV_FREE : MADV_DONTNEED;

	if (madvise(w, ADVISED_PAGES * PAGE, advice) < 0)
		fail(round, round % 2 ? "madvise(MADV_FREE) failed" :
			    "madvise(MADV_DONTNEED) failed");
	if (advice == MADV_DONTNEED)
		for (size_t i = 0; i < nwords; i++)
			if (w[i])
				fail(round, "a page read back non-zero after "
					    "MADV_DONTNEED");
	fill(w, nwords, 0xad0000 + round);
}

static void check_mremap(unsigned long round)
{
	uint64_t *p = mremap(grow, GROW_BYTES, 2 * GROW_BYTES, MREMAP_MAYMOVE);

	if (p == MAP_FAILED)
		fail(round, "mremap to 2 MiB failed");
	for (size_t i = GROW_BYTES / 8; i < 2 * GROW_BYTES / 8; i++)
		if (p[i])
			fail(round, "memory grown by mremap is not zero");
	grow = mremap(p, 2 * GROW_BYTES, GROW_BYTES, 0);
	if (grow == MAP_FAILED)
		fail(round, "mremap back to 1 MiB failed");
	grow[round % (GROW_BYTES / 8)] += round;
}

static void check_fork(unsigned long round, uint64_t want)
{
	pid_t pid = fork();

	if (pid < 0)
		fail(round, "fork failed");
	if (pid == 0)
		_exit(memory_digest() == want ? 0 : 1);
	if (reap_round_child(round, pid, 0))
		exit(1);
}

static void check_maps(unsigned long round)
{
	char buf[4096];
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0;

	if (!f)
		fail(round, "opening /proc/self/maps failed");
	while (fgets(buf, sizeof(buf), f))
		if (strtoull(buf, NULL, 16) <= (uintptr_t)mem &&
		    (uintptr_t)mem < strtoull(strchr(buf, '-') + 1, NULL, 16))
			found = 1;
	fclose(f);
	if (!found)
		fail(round, "the block is not in /proc/self/maps");
}

static void *map_block(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		die(PROG, "mapping %zu bytes: out of memory", bytes);
	return p;
}

static void run(unsigned long mib, unsigned long rounds)
{
	pthread_t th[2];
	uint64_t d;

	npages = mib * 256;
	mem = map_block(npages * PAGE);
	grow = map_block(GROW_BYTES);
	fill(mem, npages * WORDS_PER_PAGE, 0x5eed0000 + mib + (*who != 0));
	fill(grow, GROW_BYTES / 8, 0x9000);
	pthread_barrier_init(&start_round, NULL, 3);
	pthread_barrier_init(&end_round, NULL, 3);
	for (size_t t = 0; t < 2; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)t))
			die(PROG, "pthread_create failed");
	for (unsigned long r = 1; r <= rounds; r++) {
		current_round = r;
		pthread_barrier_wait(&start_round);
		pthread_barrier_wait(&end_round);
		check_advice(r);
		check_mremap(r);
		check_maps(r);
		d = memory_digest();
		check_fork(r, d);
		say("%sround %lu/%lu digest %016llx", who, r, rounds,
		    (unsigned long long)d);
		sleep_ms(60);
	}
}

int main(int argc, char **argv)
{
	unsigned long mib, rounds;
	pid_t child = 0;

	if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "tree")))
		die(PROG, "usage: mapped_memory MIB ROUNDS [tree]");
	mib = parse_ulong(PROG, "MIB", argv[1], 1, 4096);
	rounds = parse_ulong(PROG, "ROUNDS", argv[2], 1, 1UL << 30);
	if (argc == 4) {
		child = fork();
		if (child < 0)
			die(PROG, "fork failed");
		if (child == 0)
			who = "child ";
	}
	run(mib, rounds);
	if (child > 0 && reap_round_child(rounds, child, 0))
		return 1;
	return 0;
}
