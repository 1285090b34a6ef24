// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * An unsynchronized race: one thread counts how often it spins until the
 * other sets a flag (a plain variable, no lock), then takes the mutex
 * that count picks. The lock order replayed cannot make the count come
 * out the same: a re-execution is a divergence, which the gdb extension
 * must report, never show as the past (tests/test_gdb_threads.py).
 */
#include <pthread.h>
#include <time.h>

#define LOCKS 16
#define ROUNDS 4
#define SPINS 100000L

pthread_mutex_t locks[LOCKS];
volatile int flag;
volatile long spins;
long taken[LOCKS];

void started(void)
{
	__asm__ __volatile__("" : : : "memory");
}

void finished(int n)
{
	__asm__ __volatile__("" : : "r"(n) : "memory");
}

static void *spinner(void *arg)
{
	(void)arg;
	for (int r = 0; r < ROUNDS; r++) {
		while (flag == r)
			spins++;			/* the race */
		pthread_mutex_lock(&locks[spins % LOCKS]);
		taken[spins % LOCKS]++;
		pthread_mutex_unlock(&locks[spins % LOCKS]);
	}
	return NULL;
}

/* Set the flag once the spinner has spun SPINS more times in this round
 * (10 s at most), so its count is never the same few values: on a loaded
 * machine a spinner that got no CPU before all the flags were set took
 * lock 0 every round, in the recording and in the re-execution alike. */
static void *flagger(void *arg)
{
	struct timespec ms = { 0, 1000 * 1000 };

	(void)arg;
	for (int r = 0; r < ROUNDS; r++) {
		long goal = (r + 1) * SPINS;
		time_t give_up = time(NULL) + 10;

		while (spins < goal && time(NULL) < give_up)
			;
		nanosleep(&ms, NULL);
		flag = r + 1;				/* no lock */
	}
	return NULL;
}

int main(void)
{
	pthread_t a, b;

	for (int i = 0; i < LOCKS; i++)
		pthread_mutex_init(&locks[i], NULL);
	started();
	pthread_create(&a, NULL, spinner, NULL);
	pthread_create(&b, NULL, flagger, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	finished(1);
	finished(2);
	return 0;
}
