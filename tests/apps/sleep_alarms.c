/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sleep_alarms N ALARM_US: N times, a one-shot SIGALRM ALARM_US ahead
 * (handler without SA_RESTART, which notes the time it ran) and a
 * nanosleep of 1 s that the alarm must cut short with EINTR. A sleep that
 * runs its full second although the handler ran well after it began
 * (more than 1 ms: the sleep had surely started) lost the program's
 * EINTR: "FAIL ...". Prints "step K" every 20 rounds, "ok N" at the end.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static volatile sig_atomic_t ran;
static struct timespec ran_at;

static void on_alarm(int sig)
{
	(void)sig;
	clock_gettime(CLOCK_MONOTONIC, &ran_at);
	ran = 1;
}

static long us_between(const struct timespec *a, const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) * 1000000L +
	       (b->tv_nsec - a->tv_nsec) / 1000;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	struct itimerval it;
	long n, alarm_us;

	if (argc != 3) {
		fprintf(stderr, "usage: %s N ALARM_US\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	n = atol(argv[1]);
	alarm_us = atol(argv[2]);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;	/* no SA_RESTART */
	sigaction(SIGALRM, &sa, NULL);
	memset(&it, 0, sizeof(it));
	it.it_value.tv_usec = alarm_us;
	for (long k = 1; k <= n; k++) {
		struct timespec second = { 1, 0 }, began;
		int r;

		ran = 0;
		clock_gettime(CLOCK_MONOTONIC, &began);
		setitimer(ITIMER_REAL, &it, NULL);
		r = nanosleep(&second, NULL);
		if (r == 0 && ran && us_between(&began, &ran_at) > 1000) {
			printf("FAIL round %ld: the alarm's handler ran %ld us "
			       "into the sleep, which went on to its end\n", k,
			       us_between(&began, &ran_at));
			return 1;
		}
		if (r < 0 && errno != EINTR) {
			printf("FAIL round %ld: %s\n", k, strerror(errno));
			return 1;
		}
		if (k % 20 == 0)
			printf("step %ld\n", k);
	}
	printf("ok %ld\n", n);
	return 0;
}
