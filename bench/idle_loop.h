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

static inline uint64_t idle_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* The longest time between two turns of the idle loop since the program
 * last answered "gap" (a stop shorter than 20 ms too: the stall of a
 * forked checkpoint). */
static uint64_t idle_max_gap_us;

static inline void idle_answer_gap(void)
{
	printf("gap %" PRIu64 " us\n", idle_max_gap_us);
	fflush(stdout);
	idle_max_gap_us = 0;
}

/* answer(arg, &pongs) handles what stdin has; 0 once stdin is closed.
 * The time spent answering is not taken for a stop. Never returns. */
static inline void idle_answering(int (*answer)(void *arg,
						unsigned long *pongs),
				  void *arg)
{
	unsigned long pongs = 0;
	int stdin_open = 1;
	uint64_t last = now_ms(), last_us = idle_now_us();

	for (;;) {
		struct pollfd pfd = { .fd = 0, .events = POLLIN };
		int r = poll(&pfd, stdin_open ? 1 : 0, 1);
		uint64_t t = now_ms(), t_us = idle_now_us();

		if (t_us - last_us > idle_max_gap_us)
			idle_max_gap_us = t_us - last_us;

		if (t - last > 20) {
			printf("resumed after %" PRIu64 " ms\n", t - last);
			fflush(stdout);
		}
		last = t;
		if (r > 0 && stdin_open) {
			stdin_open = answer(arg, &pongs);
			last = now_ms();
		}
		last_us = idle_now_us();
	}
}

#endif /* CKPT_BENCH_IDLE_LOOP_H */
