/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * eintr_calls SECONDS: threads each make ONE blocking call that a signal
 * handler interrupts with EINTR even under SA_RESTART, and never retry:
 * nanosleep, clock_nanosleep, sleep, poll(no fds), select(no fds).
 * A checkpoint (or a restart) in the
 * middle must not make any of them fail or return early. Each prints
 * "call NAME rc R errno E elapsed_ms T"; the main thread prints "waiting K"
 * every 100 ms, then "done".
 */
#include <poll.h>
#include <pthread.h>
#include <sys/select.h>
#include "app_util.h"

#define PROG "eintr_calls"

static unsigned long seconds;

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

static void report(const char *name, long rc, int err, long start)
{
	say("call %s rc %ld errno %d elapsed_ms %ld", name, rc, rc < 0 ? err : 0,
	    now_ms() - start);
}

static void *do_nanosleep(void *a)
{
	struct timespec ts = { (time_t)seconds, 0 };
	long start = now_ms(), rc = nanosleep(&ts, NULL);

	(void)a;
	report("nanosleep", rc, errno, start);
	return NULL;
}

static void *do_clock_nanosleep(void *a)
{
	struct timespec ts = { (time_t)seconds, 0 };
	long start = now_ms();
	int rc = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);

	(void)a;
	report("clock_nanosleep", rc ? -1 : 0, rc, start);
	return NULL;
}

static void *do_sleep(void *a)
{
	long start = now_ms();
	unsigned left = sleep((unsigned)seconds);

	(void)a;
	report("sleep", left ? -1 : 0, left ? EINTR : 0, start);
	return NULL;
}

static void *do_poll(void *a)
{
	long start = now_ms();
	int rc = poll(NULL, 0, (int)seconds * 1000);

	(void)a;
	report("poll", rc, errno, start);
	return NULL;
}

static void *do_select(void *a)
{
	struct timeval tv = { (time_t)seconds, 0 };
	long start = now_ms();
	int rc = select(0, NULL, NULL, NULL, &tv);

	(void)a;
	report("select", rc, errno, start);
	return NULL;
}

int main(int argc, char **argv)
{
	void *(*calls[])(void *) = { do_nanosleep, do_clock_nanosleep,
				     do_sleep, do_poll, do_select };
	pthread_t t[sizeof(calls) / sizeof(calls[0])];
	size_t i;

	if (argc != 2)
		die(PROG, "usage: eintr_calls SECONDS");
	seconds = parse_ulong(PROG, "SECONDS", argv[1], 1, 3600);
	for (i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		pthread_create(&t[i], NULL, calls[i], NULL);
	for (long k = 1; k <= (long)seconds * 10 + 5; k++) {
		say("waiting %ld", k);
		sleep_ms(100);
	}
	for (i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		pthread_join(t[i], NULL);
	say("done");
	return 0;
}
