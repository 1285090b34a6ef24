// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A program that uses every call of include/ckpt.h (tests/test_embedding.py
 * builds it with nothing but the header).
 *
 *   api_user plain          print what each call returns, exit 0
 *   api_user self GO        hooks, a worker thread, ckpt_checkpoint() from
 *                           the main thread; then wait for the file GO and
 *                           finish the work: the same "done" line as an
 *                           uninterrupted run, restarted or not
 *   api_user delay SECS GO  one critical section of SECS seconds, then
 *                           ticks until the file GO exists
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "ckpt.h"

static pthread_mutex_t lock;		/* error-checking: it knows its owner */
static long worker_count;
static volatile int worker_stop;
static char order[256];
static int hook_counts[4];
static pid_t hook_tid, main_tid;
static int hook_same_thread = 1;
static int unlock_result = -1;

static pid_t tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void wait_for_file(const char *path)
{
	for (int i = 0; i < 6000 && access(path, F_OK) < 0; i++)
		sleep_ms(10);
}

static void note_hook(enum ckpt_event ev, const char *name)
{
	hook_counts[ev]++;
	if (!hook_tid)
		hook_tid = tid();
	else if (hook_tid != tid())
		hook_same_thread = 0;
	strcat(order, name);
}

/* Hook 1 keeps the program's lock from before the checkpoint until the
 * program runs again: both run on the hook thread, which owns it. */
static void hook1(enum ckpt_event ev, void *arg)
{
	(void)arg;
	if (ev == CKPT_EVENT_BEFORE_CHECKPOINT) {
		void *p = malloc(1 << 20);	/* no thread is stopped yet */

		memset(p, 1, 1 << 20);
		free(p);
		pthread_mutex_lock(&lock);
		note_hook(ev, "B1 ");
		return;
	}
	note_hook(ev, ev == CKPT_EVENT_RESUME ? "U1 " : "S1 ");
	unlock_result = pthread_mutex_unlock(&lock);
}

static void hook2(enum ckpt_event ev, void *arg)
{
	const char *names[] = { "", "B2 ", "U2 ", "S2 " };

	(void)arg;
	note_hook(ev, names[ev]);
}

static void *worker(void *arg)
{
	(void)arg;
	while (!worker_stop) {
		pthread_mutex_lock(&lock);
		worker_count++;
		pthread_mutex_unlock(&lock);
		sleep_ms(1);
	}
	return NULL;
}

static int plain(void)
{
	char buf[64];

	printf("enabled=%d generation=%lld restarts=%d dir=%d image=%d "
	       "checkpoint=%d delay_begin=%d delay_end=%d hook=%d\n",
	       ckpt_is_enabled(), (long long)ckpt_generation(),
	       ckpt_restarts(), ckpt_checkpoint_dir(buf, sizeof(buf)),
	       ckpt_image_path(buf, sizeof(buf)), ckpt_checkpoint(),
	       ckpt_delay_begin(), ckpt_delay_end(),
	       ckpt_hook_add(CKPT_EVENT_RESUME, hook2, NULL));
	return 0;
}

static void add_hooks(void)
{
	for (int ev = CKPT_EVENT_BEFORE_CHECKPOINT; ev <= CKPT_EVENT_RESTART;
	     ev++) {
		int r1 = ckpt_hook_add((enum ckpt_event)ev, hook1, NULL);
		int r2 = ckpt_hook_add((enum ckpt_event)ev, hook2, NULL);

		if ((r1 < 0 || r2 < 0) && ckpt_is_enabled()) {
			fprintf(stderr, "ckpt_hook_add failed\n");
			exit(1);
		}
	}
}

/* Calls that must be refused, and why. */
static void bad_calls(void)
{
	int in_section;

	printf("bad: end_without_begin=%d hook_event=%d hook_fn=%d",
	       ckpt_delay_end(), ckpt_hook_add((enum ckpt_event)9, hook2, NULL),
	       ckpt_hook_add(CKPT_EVENT_RESUME, NULL, NULL));
	ckpt_delay_begin();
	in_section = ckpt_checkpoint();
	ckpt_delay_end();
	printf(" checkpoint_in_section=%d\n", in_section);
}

static int self(const char *go)
{
	pthread_mutexattr_t a;
	pthread_t w;
	char dir[4096], image[4096];
	long long gen_before = ckpt_generation(), sum = 0;
	int r;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&lock, &a);
	main_tid = tid();
	add_hooks();
	bad_calls();
	pthread_create(&w, NULL, worker, NULL);
	for (int i = 0; i < 1000 && !__atomic_load_n(&worker_count,
						     __ATOMIC_RELAXED); i++)
		sleep_ms(10);
	for (int i = 1; i <= 1000; i++)
		sum += (long long)i * i;
	printf("before: enabled=%d generation=%lld restarts=%d\n",
	       ckpt_is_enabled(), gen_before, ckpt_restarts());
	fflush(stdout);
	r = ckpt_checkpoint();
	ckpt_checkpoint_dir(dir, sizeof(dir));
	ckpt_image_path(image, sizeof(image));
	printf("checkpoint=%d generation=%lld restarts=%d before=%d "
	       "resume=%d restart=%d order=%s| hook_thread=%s unlock=%d "
	       "dir=%s image=%s\n", r, (long long)ckpt_generation(),
	       ckpt_restarts(), hook_counts[1], hook_counts[2], hook_counts[3],
	       order, hook_same_thread && hook_tid != main_tid ? "own" :
	       "wrong", unlock_result, dir, image);
	fflush(stdout);
	wait_for_file(go);
	worker_stop = 1;
	pthread_join(w, NULL);
	for (int i = 1001; i <= 2000; i++)
		sum += (long long)i * i;
	printf("done sum=%lld worker_ran=%d\n", sum, worker_count > 0);
	return 0;
}

static int sections_done, restart_hooks;

static void report_restart(enum ckpt_event ev, void *arg)
{
	(void)ev;
	(void)arg;
	restart_hooks++;
	printf("restarted: sections_done=%d\n", sections_done);
	fflush(stdout);
}

static int delay(double secs, const char *go)
{
	struct timespec start, now;
	long ticks = 0;

	ckpt_hook_add(CKPT_EVENT_RESTART, report_restart, NULL);
	if (ckpt_delay_begin() < 0)
		return 1;
	printf("section begin\n");
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {				/* busy in the section */
		sleep_ms(5);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - start.tv_sec) +
		 (now.tv_nsec - start.tv_nsec) / 1e9 < secs);
	sections_done++;
	printf("section end\n");
	fflush(stdout);
	ckpt_delay_end();
	while (access(go, F_OK) < 0 && ticks < 60000) {
		ticks++;
		sleep_ms(1);
	}
	printf("finished sections_done=%d restart_hooks=%d\n", sections_done,
	       restart_hooks);
	return 0;
}

/* A thread begins a section and ends without ending it. */
static void *leave_inside_section(void *arg)
{
	(void)arg;
	if (ckpt_delay_begin() < 0)
		return (void *)1;
	pthread_exit(NULL);
}

static int exit_in_section(const char *go)
{
	pthread_t t;
	void *r;
	long ticks = 0;

	if (pthread_create(&t, NULL, leave_inside_section, NULL) ||
	    pthread_join(t, &r) || r)
		return 1;
	printf("thread gone\n");
	while (access(go, F_OK) < 0 && ticks < 60000) {
		ticks++;
		sleep_ms(1);
	}
	printf("finished generation=%ld\n", (long)ckpt_generation());
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && !strcmp(argv[1], "plain"))
		return plain();
	if (argc == 3 && !strcmp(argv[1], "self"))
		return self(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "exit-in-section"))
		return exit_in_section(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "delay"))
		return delay(atof(argv[2]), argv[3]);
	fprintf(stderr, "usage: api_user plain | self GO | delay SECS GO | "
		"exit-in-section GO\n");
	return 2;
}
