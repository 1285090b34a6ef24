/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * kernel_writes MIB STEPS [SLEEP_MS]: a buffer of MIB MiB of pseudo-random
 * data that the program itself never writes again: each step, the kernel
 * writes one page of it (read() from a pipe the program filled from a
 * small stack buffer), so only a system call changes the buffer. Prints
 * "step K/STEPS DIGEST" (a hash of the whole buffer) after each step: a
 * restart that missed a page written by the kernel prints another digest.
 */
#include <sys/mman.h>
#include "app_util.h"

#define PROG "kernel_writes"
#define PAGE 4096

int main(int argc, char **argv)
{
	unsigned long steps, sleep_arg;
	size_t mib, npages;
	unsigned char *buf, page[PAGE];
	uint64_t seed = 11;
	int p[2];

	if (argc < 3)
		die(PROG, "usage: kernel_writes MIB STEPS [SLEEP_MS]");
	mib = parse_ulong(PROG, "MIB", argv[1], 1, 1024);
	steps = parse_ulong(PROG, "STEPS", argv[2], 1, 1000000);
	sleep_arg = argc > 3 ? parse_ulong(PROG, "SLEEP_MS", argv[3], 0,
					   10000) : 20;
	npages = (mib << 20) / PAGE;
	buf = mmap(NULL, mib << 20, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED || pipe(p) < 0)
		die(PROG, "mmap or pipe failed");
	for (size_t i = 0; i < (mib << 20) / 8; i++)
		((uint64_t *)buf)[i] = splitmix64(&seed);
	for (unsigned long step = 1; step <= steps; step++) {
		uint64_t s = mix64(step), h = FNV1A_INIT;
		size_t target = s % npages;

		for (size_t i = 0; i < PAGE / 8; i++)
			((uint64_t *)page)[i] = splitmix64(&s);
		if (write(p[1], page, PAGE) != PAGE ||
		    read(p[0], buf + target * PAGE, PAGE) != PAGE)
			die(PROG, "pipe transfer failed");
		h = fnv1a(h, buf, mib << 20);
		say("step %lu/%lu %016llx", step, steps, (unsigned long long)h);
		if (sleep_arg)
			sleep_ms(sleep_arg);
	}
	say("done");
	return 0;
}
