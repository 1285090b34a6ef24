/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lock_cost [N [threaded]]: nanoseconds per uncontended
 * pthread_mutex_lock + unlock pair, for a normal and a recursive mutex,
 * and per wrlock + unlock of a rwlock; best of 5 rounds of N pairs. Run it
 * plain and under ckpt_launch to see what libckpt's lock wrappers
 * (wrappers/locks.c) cost. libckpt runs a thread of its own, and glibc
 * locks faster in a process that never had a second thread: "threaded"
 * starts an idle thread first, for a fair comparison.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static pthread_mutex_t normal = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t recursive = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;

static void normal_pair(void)
{
	pthread_mutex_lock(&normal);
	pthread_mutex_unlock(&normal);
}

static void recursive_pair(void)
{
	pthread_mutex_lock(&recursive);
	pthread_mutex_unlock(&recursive);
}

static void rwlock_write_pair(void)
{
	pthread_rwlock_wrlock(&rw);
	pthread_rwlock_unlock(&rw);
}

/* best of 5 rounds; the call through a pointer costs the same in every
 * configuration */
static double pair_ns(void (*pair)(void), long n)
{
	double best = 1e18;

	for (int round = 0; round < 5; round++) {
		double t0 = now_ns(), per;

		for (long i = 0; i < n; i++)
			pair();
		per = (now_ns() - t0) / n;
		if (per < best)
			best = per;
	}
	return best;
}

static void *idle(void *arg)
{
	return arg;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000000;
	pthread_t t;

	if (argc > 2 && pthread_create(&t, NULL, idle, NULL) == 0)
		pthread_join(t, NULL);

	printf("normal %.1f ns\n", pair_ns(normal_pair, n));
	printf("recursive %.1f ns\n", pair_ns(recursive_pair, n));
	printf("rwlock-write %.1f ns\n", pair_ns(rwlock_write_pair, n));
	return 0;
}
