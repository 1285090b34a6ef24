/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lock_order_cost THREADS ITERATIONS WORK: THREADS threads each take one
 * of 4 shared mutexes ITERATIONS times, with WORK floating-point additions
 * between two locks; prints the wall time in ns. bench/bench_lock_order.py
 * runs it under ckpt_launch with the lock order recorded
 * (wrappers/lock_order.c) and without.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define LOCKS 4

static pthread_mutex_t locks[LOCKS];
static long counts[LOCKS];
static long iterations, work;
static volatile double sink;

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static void *worker(void *arg)
{
	long id = (long)arg;
	double x = 0;

	for (long i = 0; i < iterations; i++) {
		int k = (int)((i + id) % LOCKS);

		pthread_mutex_lock(&locks[k]);
		counts[k]++;
		pthread_mutex_unlock(&locks[k]);
		for (long w = 0; w < work; w++)
			x += 1.0;
	}
	sink = x;
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 8;
	pthread_t th[64];
	double t0;

	iterations = argc > 2 ? atol(argv[2]) : 20000;
	work = argc > 3 ? atol(argv[3]) : 0;
	if (threads < 1 || threads > 64)
		return 2;
	for (int i = 0; i < LOCKS; i++)
		pthread_mutex_init(&locks[i], NULL);
	t0 = now_ns();
	for (long i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	printf("%.0f\n", now_ns() - t0);
	return 0;
}
