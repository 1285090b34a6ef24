/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cond_clocks N WAIT_MS: N rounds of timed waits that nobody signals, on
 * a condition variable made with CLOCK_MONOTONIC (pthread_condattr_
 * setclock: python's GIL, libuv, many thread pools), on one with the
 * default CLOCK_REALTIME, and through pthread_cond_clockwait, each WAIT_MS
 * ahead on its clock, by two threads at once. A wait must end with
 * ETIMEDOUT, and not before its deadline on its clock: one that came back
 * early ("FAIL ...") measured the deadline on another clock. Prints
 * "round K" after each round, "ok N" at the end.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct waiter {
	const char *name;
	pthread_cond_t cond;
	pthread_mutex_t mutex;
	clockid_t clock;
	int clockwait;		/* pthread_cond_clockwait, not timedwait */
	long wait_ms, rounds;
	int failed;
};

static void deadline_after(clockid_t clock, long ms, struct timespec *t)
{
	clock_gettime(clock, t);
	t->tv_sec += ms / 1000;
	t->tv_nsec += (ms % 1000) * 1000000L;
	if (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
}

static int before(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec ||
	       (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* One wait; 0 when it timed out at or after its deadline. */
static int wait_once(struct waiter *w, long round)
{
	struct timespec deadline, now;
	int rc;

	deadline_after(w->clock, w->wait_ms, &deadline);
	pthread_mutex_lock(&w->mutex);
	do {
		rc = w->clockwait ?
		     pthread_cond_clockwait(&w->cond, &w->mutex, w->clock,
					    &deadline) :
		     pthread_cond_timedwait(&w->cond, &w->mutex, &deadline);
	} while (rc == 0);	/* spurious wakeups are allowed */
	pthread_mutex_unlock(&w->mutex);
	clock_gettime(w->clock, &now);
	if (rc != ETIMEDOUT) {
		printf("FAIL %s round %ld: %s\n", w->name, round, strerror(rc));
		return -1;
	}
	if (before(&now, &deadline)) {
		printf("FAIL %s round %ld: timed out %ld us before its "
		       "deadline\n", w->name, round,
		       (deadline.tv_sec - now.tv_sec) * 1000000L +
		       (deadline.tv_nsec - now.tv_nsec) / 1000);
		return -1;
	}
	return 0;
}

static void *run_waiter(void *arg)
{
	struct waiter *w = arg;

	for (long i = 1; i <= w->rounds && !w->failed; i++)
		if (wait_once(w, i))
			w->failed = 1;
	return NULL;
}

static void init_waiter(struct waiter *w, const char *name, clockid_t clock,
			int clockwait, long wait_ms)
{
	pthread_condattr_t attr;

	memset(w, 0, sizeof(*w));
	w->name = name;
	w->clock = clock;
	w->clockwait = clockwait;
	w->wait_ms = wait_ms;
	w->rounds = 1;
	pthread_condattr_init(&attr);
	if (!clockwait)
		pthread_condattr_setclock(&attr, clock);
	pthread_cond_init(&w->cond, &attr);
	pthread_condattr_destroy(&attr);
	pthread_mutex_init(&w->mutex, NULL);
}

int main(int argc, char **argv)
{
	struct waiter w[3];
	pthread_t t[3];
	long n, wait_ms;

	if (argc != 3) {
		fprintf(stderr, "usage: cond_clocks N WAIT_MS\n");
		return 2;
	}
	n = atol(argv[1]);
	wait_ms = atol(argv[2]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	init_waiter(&w[0], "monotonic condvar", CLOCK_MONOTONIC, 0, wait_ms);
	init_waiter(&w[1], "realtime condvar", CLOCK_REALTIME, 0, wait_ms);
	init_waiter(&w[2], "clockwait monotonic", CLOCK_MONOTONIC, 1,
		    wait_ms);
	for (long round = 1; round <= n; round++) {
		for (int i = 0; i < 3; i++)
			if (pthread_create(&t[i], NULL, run_waiter, &w[i])) {
				printf("FAIL pthread_create\n");
				return 1;
			}
		for (int i = 0; i < 3; i++)
			pthread_join(t[i], NULL);
		for (int i = 0; i < 3; i++)
			if (w[i].failed)
				return 1;
		printf("round %ld\n", round);
	}
	printf("ok %ld\n", n);
	return 0;
}
