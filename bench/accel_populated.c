// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Benchmark: which pages of a 64 GiB MAP_NORESERVE reservation with 1%
 * of its pages touched are populated? Userspace reads /proc/self/pagemap
 * (8 bytes per page, 128 MiB for the range); the module returns the runs.
 * Runs in the guest with the module loaded (both paths, ratio) and after
 * rmmod (the fallback path only). Usage: accel_populated [GIB]
 */
#include <sys/mman.h>
#include "accel_util.h"

#define MAXR (1u << 20)
static struct ckpt_accel_run ra[MAXR], rb[MAXR];

static double best_of(int reps, long (*fn)(void *), void *arg, long *out)
{
	double best = 1e9;

	while (reps--) {
		double t = now_s();

		*out = fn(arg);
		t = now_s() - t;
		if (t < best)
			best = t;
	}
	return best;
}

struct range { uint64_t s, e; int fd; };

static long by_pagemap(void *arg)
{
	struct range *r = arg;

	return pagemap_runs(r->fd, r->s, r->e, PM_PRESENT | PM_SWAP, ra, MAXR);
}

static long by_module(void *arg)
{
	struct range *r = arg;

	return module_runs(r->fd, CKPT_ACCEL_IOC_POPULATED, r->s, r->e, 0, rb,
			   MAXR, MAXR);
}

int main(int argc, char **argv)
{
	size_t gib = argc > 1 ? strtoul(argv[1], NULL, 0) : 64;
	size_t len = gib << 30, i, touched = 0;
	struct range pm, mod;
	double tp, tm;
	long np, nm;
	char *p;

	setvbuf(stdout, NULL, _IOLBF, 0);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		printf("FAIL bench-populated: mmap %zu GiB: %s\n", gib,
		       strerror(errno));
		return 1;
	}
	madvise(p, len, MADV_NOHUGEPAGE);
	for (i = 0; i < len / PAGE; i += 100, touched++)
		p[i * PAGE] = 1;
	pm.s = mod.s = (uintptr_t)p;
	pm.e = mod.e = (uintptr_t)p + len;
	pm.fd = open("/proc/self/pagemap", O_RDONLY);
	mod.fd = open(CKPT_ACCEL_DEVICE, O_RDWR);
	tp = best_of(3, by_pagemap, &pm, &np);
	if (np < 0 || (size_t)np != touched) {
		printf("FAIL bench-populated: pagemap found %ld runs, %zu touched\n",
		       np, touched);
		return 1;
	}
	if (mod.fd < 0) {
		printf("bench-populated: %zu GiB, 1%% touched, no module: "
		       "pagemap %.1f ms (the fallback path)\n", gib, tp * 1e3);
		return 0;
	}
	tm = best_of(3, by_module, &mod, &nm);
	if (!same_runs(ra, np, rb, nm)) {
		printf("FAIL bench-populated: module gave %ld runs, pagemap %ld\n",
		       nm, np);
		return 1;
	}
	printf("bench-populated: %zu GiB, 1%% touched (%ld runs): pagemap %.1f ms, "
	       "module %.1f ms, ratio %.1fx\n", gib, np, tp * 1e3, tm * 1e3,
	       tp / tm);
	return 0;
}
