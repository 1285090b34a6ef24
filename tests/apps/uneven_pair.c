/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * uneven_pair MIB STEPS PAUSE_MS: a parent holding MIB MiB of random data
 * and a forked child holding almost none, so that a restart brings the
 * child back well before the parent. Each counts to STEPS, printing
 * "parent N" / "child N" and sleeping PAUSE_MS per step; then the parent
 * reaps the child (it must exit 0), checks its data against the digest it
 * took at the start and prints "done DIGEST".
 */
#include <stdlib.h>
#include <sys/wait.h>
#include "app_util.h"

#define PROG "uneven_pair"

static void count(const char *who, unsigned long steps,
		  unsigned long pause_ms)
{
	for (unsigned long n = 1; n <= steps; n++) {
		say("%s %lu", who, n);
		sleep_ms(pause_ms);
	}
}

int main(int argc, char **argv)
{
	unsigned long mib, steps, pause_ms;
	uint64_t *data, seed = 42, digest;
	size_t words;
	int status;
	pid_t child;

	if (argc != 4)
		die(PROG, "usage: uneven_pair MIB STEPS PAUSE_MS");
	mib = parse_ulong(PROG, "MIB", argv[1], 1, 4096);
	steps = parse_ulong(PROG, "STEPS", argv[2], 1, 1000000);
	pause_ms = parse_ulong(PROG, "PAUSE_MS", argv[3], 0, 10000);
	child = fork();
	if (child < 0)
		die(PROG, "fork: %s", strerror(errno));
	if (child == 0) {
		count("child", steps, pause_ms);
		return 0;
	}
	words = mib << 17;
	data = malloc(words * 8);
	if (!data)
		die(PROG, "malloc %lu MiB failed", mib);
	for (size_t i = 0; i < words; i++)
		data[i] = splitmix64(&seed);
	digest = fnv1a(FNV1A_INIT, data, words * 8);
	count("parent", steps, pause_ms);
	if (waitpid(child, &status, 0) != child)
		die(PROG, "waitpid: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		die(PROG, "the child failed (status %#x)", status);
	if (fnv1a(FNV1A_INIT, data, words * 8) != digest)
		die(PROG, "the data changed");
	say("done %016" PRIx64, digest);
	return 0;
}
