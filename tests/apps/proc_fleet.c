/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * proc_fleet NPROCS MIB STEPS [SLEEP_MS]: NPROCS processes (the first and
 * NPROCS-1 children it forks), each holding MIB MiB of pseudo-random data
 * of its own. Each process K runs STEPS steps: it changes one word in 1%
 * of its pages (picked by K and the step), hashes all its memory and
 * prints "proc K step S DIGEST". The first process prints "done" once
 * every child exited with 0. A page a restart got wrong changes the
 * digests of its process from then on.
 */
#include <sys/mman.h>
#include "app_util.h"

#define PROG "proc_fleet"
#define WORDS_PER_PAGE 512

static void run_process(unsigned k, size_t mib, unsigned long steps,
			unsigned long sleep_arg)
{
	size_t nwords = (mib << 20) / 8, npages = nwords / WORDS_PER_PAGE;
	uint64_t *mem = mmap(NULL, mib << 20, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t seed = mix64(k + 1);

	if (mem == MAP_FAILED)
		die(PROG, "mapping %zu MiB failed", mib);
	for (size_t i = 0; i < nwords; i++)
		mem[i] = splitmix64(&seed);
	for (unsigned long step = 1; step <= steps; step++) {
		uint64_t s = mix64(step * 1000003 + k), h = FNV1A_INIT;

		for (size_t i = 0; i < npages / 100 + 1; i++) {
			uint64_t r = splitmix64(&s);

			mem[(r % npages) * WORDS_PER_PAGE +
			    (r >> 40) % WORDS_PER_PAGE] ^= r;
		}
		for (size_t i = 0; i < nwords; i++)
			h = mix64(h ^ mem[i]);
		say("proc %u step %lu %016llx", k, step,
		    (unsigned long long)h);
		if (sleep_arg)
			sleep_ms(sleep_arg);
	}
}

int main(int argc, char **argv)
{
	unsigned long nprocs, steps, sleep_arg;
	size_t mib;
	int failed = 0;

	if (argc < 4)
		die(PROG, "usage: proc_fleet NPROCS MIB STEPS [SLEEP_MS]");
	nprocs = parse_ulong(PROG, "NPROCS", argv[1], 1, 256);
	mib = parse_ulong(PROG, "MIB", argv[2], 1, 1024);
	steps = parse_ulong(PROG, "STEPS", argv[3], 1, 1000000);
	sleep_arg = argc > 4 ? parse_ulong(PROG, "SLEEP_MS", argv[4], 0,
					   10000) : 30;
	for (unsigned k = 1; k < nprocs; k++) {
		pid_t pid = fork();

		if (pid < 0)
			die(PROG, "fork failed");
		if (pid == 0) {
			run_process(k, mib, steps, sleep_arg);
			_exit(0);
		}
	}
	run_process(0, mib, steps, sleep_arg);
	for (unsigned k = 1; k < nprocs; k++) {
		int st;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			failed = 1;
	}
	if (failed)
		die(PROG, "a child failed");
	say("done");
	return 0;
}
