/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * threads_steps STEPS PAUSE_MS: 8 threads take turns, in order, through
 * one mutex and one condition variable: at step K thread K % 8 mixes its
 * own __thread state and then the shared accumulator, prints "step K acc
 * X", and hands the turn on after PAUSE_MS. At the end every thread
 * returns its __thread state and the main thread prints "final X locals
 * Y". The output is a pure function of STEPS: a restored snapshot must
 * bring back every thread's registers, its TLS and the lock's state.
 */
#include <pthread.h>
#include "app_util.h"

#define PROG "threads_steps"
#define NTHREADS 8

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_changed = PTHREAD_COND_INITIALIZER;
static unsigned long step = 1, steps, pause_ms;
static uint64_t acc = 0x243f6a8885a308d3ull;
static __thread uint64_t local;

static uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x7fb5d329728ea185ull;
	x ^= x >> 27;
	return x * 0x81dadef4bc2dd44dull;
}

static void *worker(void *arg)
{
	unsigned long me = (unsigned long)(uintptr_t)arg;

	local = mix(me + 1);
	pthread_mutex_lock(&lock);
	for (;;) {
		while (step <= steps && step % NTHREADS != me)
			pthread_cond_wait(&turn_changed, &lock);
		if (step > steps)
			break;
		local = mix(local ^ step);
		acc = mix(acc ^ local);
		say("step %lu acc %016llx", step, (unsigned long long)acc);
		sleep_ms(pause_ms);
		step++;
		pthread_cond_broadcast(&turn_changed);
	}
	pthread_mutex_unlock(&lock);
	return (void *)(uintptr_t)local;
}

int main(int argc, char **argv)
{
	pthread_t t[NTHREADS];
	uint64_t locals = 0;

	if (argc != 3)
		die(PROG, "usage: threads_steps STEPS PAUSE_MS");
	steps = parse_ulong(PROG, "STEPS", argv[1], 1, 1UL << 30);
	pause_ms = parse_ulong(PROG, "PAUSE_MS", argv[2], 0, 60000);
	for (unsigned long i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i))
			die(PROG, "pthread_create %lu failed", i);
	for (int i = 0; i < NTHREADS; i++) {
		void *ret;

		pthread_join(t[i], &ret);
		locals = mix(locals ^ (uint64_t)(uintptr_t)ret);
	}
	say("final %016llx locals %016llx", (unsigned long long)acc,
	    (unsigned long long)locals);
	return 0;
}
