/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * threads_sync ROUNDS PAUSE_US: 8 threads take turns in a fixed ring
 * (a mutex and one condition variable per thread), and meet at a barrier
 * built from a mutex and a broadcast condition variable at the end of
 * every round. Each turn updates shared state and the thread's __thread
 * counters; PAUSE_US is slept between a thread's work and passing the
 * turn on, outside the lock, so a checkpoint finds threads sleeping,
 * waiting on condition variables and holding nothing.
 *
 * The turn order is fixed, so the result does not depend on scheduling:
 * it is the same in every uninterrupted run and must be the same after a
 * restart. Output: "round K" every 50 rounds (from thread 0), then per
 * thread "thread I total HEX hist HEX", then "checksum HEX".
 */
#include <pthread.h>
#include "app_util.h"

#define PROG "threads_sync"
#define NTHREADS 8

static pthread_mutex_t turn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_cond[NTHREADS];
static uint64_t turn;
static uint64_t shared_state = 0x1234;

static pthread_mutex_t barrier_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t barrier_cond = PTHREAD_COND_INITIALIZER;
static unsigned barrier_count;
static uint64_t barrier_generation;

static unsigned long rounds, pause_us;

static __thread uint64_t tls_total;
static __thread uint64_t tls_hist[16];
static __thread int tls_index = -1;

struct result {
	uint64_t total;
	uint64_t hist;
	uintptr_t tls_addr;
};
static struct result results[NTHREADS];

static void barrier_wait(void)
{
	uint64_t gen;

	pthread_mutex_lock(&barrier_lock);
	gen = barrier_generation;
	if (++barrier_count == NTHREADS) {
		barrier_count = 0;
		barrier_generation++;
		pthread_cond_broadcast(&barrier_cond);
	} else {
		while (gen == barrier_generation)
			pthread_cond_wait(&barrier_cond, &barrier_lock);
	}
	pthread_mutex_unlock(&barrier_lock);
}

static void take_turn(int me, unsigned long round)
{
	uint64_t v;

	pthread_mutex_lock(&turn_lock);
	while (turn % NTHREADS != (uint64_t)me)
		pthread_cond_wait(&turn_cond[me], &turn_lock);
	shared_state = mix64(shared_state + (uint64_t)me * 31 + round);
	v = shared_state;
	pthread_mutex_unlock(&turn_lock);

	tls_total = mix64(tls_total ^ v) + (uint64_t)tls_index;
	tls_hist[v & 15]++;
	if (pause_us)
		usleep(pause_us);

	pthread_mutex_lock(&turn_lock);
	turn++;
	pthread_cond_signal(&turn_cond[(me + 1) % NTHREADS]);
	pthread_mutex_unlock(&turn_lock);
}

static void *worker(void *arg)
{
	int me = (int)(intptr_t)arg;
	unsigned long r;
	uint64_t h = FNV1A_INIT;

	tls_index = me;
	for (r = 1; r <= rounds; r++) {
		take_turn(me, r);
		barrier_wait();
		if (me == 0 && r % 50 == 0)
			say("round %lu/%lu", r, rounds);
	}
	if (tls_index != me)
		die(PROG, "thread %d: __thread index became %d", me, tls_index);
	h = fnv1a(h, tls_hist, sizeof(tls_hist));
	results[me].total = tls_total;
	results[me].hist = h;
	results[me].tls_addr = (uintptr_t)&tls_total;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t threads[NTHREADS];
	uint64_t checksum = FNV1A_INIT;
	int i, j, err;

	if (argc != 3)
		die(PROG, "usage: threads_sync ROUNDS PAUSE_US");
	rounds = parse_ulong(PROG, "ROUNDS", argv[1], 1, 1UL << 30);
	pause_us = parse_ulong(PROG, "PAUSE_US", argv[2], 0, 1000000);
	for (i = 0; i < NTHREADS; i++)
		pthread_cond_init(&turn_cond[i], NULL);
	for (i = 0; i < NTHREADS; i++) {
		err = pthread_create(&threads[i], NULL, worker,
				     (void *)(intptr_t)i);
		if (err)
			die(PROG, "pthread_create of thread %d: %s", i,
			    strerror(err));
	}
	say("started %d threads", NTHREADS);
	for (i = 0; i < NTHREADS; i++)
		pthread_join(threads[i], NULL);
	for (i = 0; i < NTHREADS; i++)
		for (j = i + 1; j < NTHREADS; j++)
			if (results[i].tls_addr == results[j].tls_addr)
				die(PROG, "threads %d and %d share __thread data",
				    i, j);
	for (i = 0; i < NTHREADS; i++) {
		say("thread %d total %016" PRIx64 " hist %016" PRIx64, i,
		    results[i].total, results[i].hist);
		checksum = fnv1a(checksum, &results[i].total, 8);
		checksum = fnv1a(checksum, &results[i].hist, 8);
	}
	say("checksum %016" PRIx64 " turns %" PRIu64, checksum, turn);
	return 0;
}
