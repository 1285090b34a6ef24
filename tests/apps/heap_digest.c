/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * heap_digest MIB ROUNDS: fill MIB MiB of memory with a seeded PRNG, run
 * ROUNDS serial mixing passes over all of it, then print a digest.
 *
 * Half the memory comes from many 64 KiB malloc()s (the brk heap), half
 * from one big malloc() (an anonymous mapping), so a restart must restore
 * both the program break and large mappings. Each pass carries a value
 * from word to word, so any lost or stale page changes the digest.
 *
 * Output: "filled MIB", "round K/ROUNDS" after each pass, "digest HEX".
 */
#include "app_util.h"

#define PROG "heap_digest"
#define CHUNK_BYTES (64u * 1024u)
#define CHUNK_WORDS (CHUNK_BYTES / sizeof(uint64_t))

static uint64_t **chunks;
static size_t nchunks;

static void allocate(size_t mib)
{
	size_t small = mib * 16 / 2, i;
	char *big;

	nchunks = mib * 16;
	chunks = calloc(nchunks, sizeof(*chunks));
	if (!chunks)
		die(PROG, "chunk table of %zu entries: out of memory", nchunks);
	for (i = 0; i < small; i++) {
		chunks[i] = malloc(CHUNK_BYTES);
		if (!chunks[i])
			die(PROG, "heap chunk %zu: out of memory", i);
	}
	big = malloc((nchunks - small) * (size_t)CHUNK_BYTES);
	if (!big && nchunks > small)
		die(PROG, "block of %zu MiB: out of memory", mib - small / 16);
	for (i = small; i < nchunks; i++)
		chunks[i] = (uint64_t *)(big + (i - small) * CHUNK_BYTES);
}

static void fill(uint64_t seed)
{
	size_t i, j;

	for (i = 0; i < nchunks; i++)
		for (j = 0; j < CHUNK_WORDS; j++)
			chunks[i][j] = splitmix64(&seed);
}

static void mix_pass(uint64_t round)
{
	uint64_t carry = mix64(round);
	size_t i, j;

	for (i = 0; i < nchunks; i++) {
		uint64_t *w = chunks[i];

		for (j = 0; j < CHUNK_WORDS; j++) {
			uint64_t x = (w[j] ^ carry) * 0x9e3779b97f4a7c15ull;

			x ^= x >> 29;
			w[j] = x + round;
			carry = x;
		}
	}
}

static uint64_t digest(void)
{
	uint64_t h = FNV1A_INIT;
	size_t i;

	for (i = 0; i < nchunks; i++)
		h = fnv1a(h, chunks[i], CHUNK_BYTES);
	return h;
}

int main(int argc, char **argv)
{
	unsigned long mib, rounds, r;

	if (argc != 3)
		die(PROG, "usage: heap_digest MIB ROUNDS");
	mib = parse_ulong(PROG, "MIB", argv[1], 1, 1UL << 20);
	rounds = parse_ulong(PROG, "ROUNDS", argv[2], 1, 1UL << 30);
	allocate(mib);
	fill(0x5eed0000ull + mib);
	say("filled %lu", mib);
	for (r = 1; r <= rounds; r++) {
		mix_pass(r);
		say("round %lu/%lu", r, rounds);
	}
	say("digest %016" PRIx64, digest());
	return 0;
}
