/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The idle loop of the benchmark programs (fill_idle, tcp_conns): answer
 * the lines bench.py writes on stdin, and print "resumed after N ms" when
 * the process notices it was stopped for more than 20 ms (the "stopped"
 * figure). Header-only: each program is one .c file (bench/build.mk).
 */
#ifndef CKPT_BENCH_IDLE_LOOP_H
#define CKPT_BENCH_IDLE_LOOP_H

#include <inttypes.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static inline uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* answer(arg, &pongs) handles what stdin has; 0 once stdin is closed.
 * The time spent answering is not taken for a stop. Never returns. */
static inline void idle_answering(int (*answer)(void *arg,
						unsigned long *pongs),
				  void *arg)
{
	unsigned long pongs = 0;
	int stdin_open = 1;
	uint64_t last = now_ms();

	for (;;) {
		struct pollfd pfd = { .fd = 0, .events = POLLIN };
		int r = poll(&pfd, stdin_open ? 1 : 0, 1);
		uint64_t t = now_ms();

		if (t - last > 20) {
			printf("resumed after %" PRIu64 " ms\n", t - last);
			fflush(stdout);
		}
		last = t;
		if (r > 0 && stdin_open) {
			stdin_open = answer(arg, &pongs);
			last = now_ms();
		}
	}
}

#endif /* CKPT_BENCH_IDLE_LOOP_H */
