/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helpers shared by the guest tests and benchmarks of ckpt_accel. */
#ifndef CKPT_ACCEL_UTIL_H
#define CKPT_ACCEL_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include "ckpt/accel.h"

#define PAGE 4096UL
#define PM_PRESENT	(1ULL << 63)
#define PM_SWAP		(1ULL << 62)
#define PM_SOFT_DIRTY	(1ULL << 55)

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Append [s, e) to runs, merging with the last run when contiguous. */
static inline void add_run(struct ckpt_accel_run *runs, size_t *n,
			   uint64_t s, uint64_t e)
{
	if (*n && runs[*n - 1].end == s) {
		runs[*n - 1].end = e;
		return;
	}
	runs[*n].start = s;
	runs[*n].end = e;
	(*n)++;
}

/*
 * The userspace reference: runs of [start, end) whose pagemap entries
 * have any bit of `mask`, read in chunks of 64 Ki entries. -errno or the
 * number of runs (at most max).
 */
static inline long pagemap_runs(int pm_fd, uint64_t start, uint64_t end,
				uint64_t mask, struct ckpt_accel_run *runs,
				size_t max)
{
	static uint64_t buf[65536];
	size_t n = 0;
	uint64_t addr = start;

	while (addr < end) {
		size_t want = (end - addr) / PAGE;
		ssize_t got, i;

		if (want > 65536)
			want = 65536;
		got = pread(pm_fd, buf, want * 8, addr / PAGE * 8);
		if (got <= 0)
			return got < 0 ? -errno : -EIO;
		got /= 8;
		for (i = 0; i < got; i++) {
			uint64_t a = addr + i * PAGE;

			if (!(buf[i] & mask))
				continue;
			if (n == max && runs[n - 1].end != a)
				return -ENOSPC;
			add_run(runs, &n, a, a + PAGE);
		}
		addr += got * PAGE;
	}
	return n;
}

/* All module runs of [start, end) with resumption; -errno or count. */
static inline long module_runs(int fd, unsigned long cmd, uint64_t start,
			       uint64_t end, unsigned int flags,
			       struct ckpt_accel_run *runs, size_t max,
			       size_t chunk)
{
	size_t n = 0;
	uint64_t addr = start;

	while (addr < end) {
		struct ckpt_accel_range req = {
			.size = sizeof(req), .start = addr, .end = end,
			.runs = (uintptr_t)(runs + n), .flags = flags,
		};
		long ret;

		if (n >= max)
			return -ENOSPC;
		req.max_runs = max - n < chunk ? max - n : chunk;
		ret = ioctl(fd, cmd, &req);
		if (ret < 0)
			return -errno;
		if ((uint64_t)ret != req.nr_runs)
			return -EPROTO;
		/* Runs are maximal: a resumed call never splits one. */
		if (ret && n && runs[n - 1].end == runs[n].start)
			return -EPROTO;
		n += ret;
		if (req.next <= addr && req.next != end)
			return -EPROTO;
		addr = req.next;
	}
	return n;
}

static inline int same_runs(const struct ckpt_accel_run *a, long na,
			    const struct ckpt_accel_run *b, long nb)
{
	return na == nb && !memcmp(a, b, na * sizeof(*a));
}

#endif
