/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pid_check ITERATIONS PAUSE_MS: record getpid(), gettid() and
 * pthread_self() of the main thread and of a second thread at start, then
 * loop; every iteration both threads check that what they see is
 * unchanged, and the main thread checks that glibc can still reach the
 * second thread through the TID it cached (pthread_kill(t, 0)).
 *
 * Output: "start pid P tid T thread_tid U", "iter K" every 10
 * iterations, then "OK pid stable" (exit 0) or "FAIL: why" (exit 1).
 */
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include "app_util.h"

#define PROG "pid_check"

static unsigned long iterations, pause_ms;
static pid_t main_pid, main_tid, second_tid;
static pthread_t main_self, second_self;
static volatile int stop;
static char failure[256];
static pthread_mutex_t failure_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t ready_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready_cond = PTHREAD_COND_INITIALIZER;
static int second_ready;

static void fail(const char *fmt, long expected, long seen)
{
	pthread_mutex_lock(&failure_lock);
	if (!failure[0])
		snprintf(failure, sizeof(failure), fmt, expected, seen);
	pthread_mutex_unlock(&failure_lock);
}

static void check_main(void)
{
	if (getpid() != main_pid)
		fail("getpid() was %ld, now %ld", main_pid, getpid());
	if (gettid() != main_tid)
		fail("main gettid() was %ld, now %ld", main_tid, gettid());
	if (syscall(SYS_gettid) != main_tid)
		fail("main SYS_gettid was %ld, now %ld", main_tid,
		     syscall(SYS_gettid));
	if (!pthread_equal(pthread_self(), main_self))
		fail("main pthread_self() was %lx, now %lx", (long)main_self,
		     (long)pthread_self());
	if (pthread_kill(second_self, 0) != 0)
		fail("pthread_kill(second thread %ld, 0) failed: %ld",
		     second_tid, pthread_kill(second_self, 0));
}

static void check_second(pid_t tid, pthread_t self)
{
	if (getpid() != main_pid)
		fail("thread getpid() was %ld, now %ld", main_pid, getpid());
	if (gettid() != tid)
		fail("thread gettid() was %ld, now %ld", tid, gettid());
	if (!pthread_equal(pthread_self(), self))
		fail("thread pthread_self() was %lx, now %lx", (long)self,
		     (long)pthread_self());
}

static void *second_thread(void *arg)
{
	pid_t tid = gettid();
	pthread_t self = pthread_self();

	(void)arg;
	pthread_mutex_lock(&ready_lock);
	second_tid = tid;
	second_ready = 1;
	pthread_cond_signal(&ready_cond);
	pthread_mutex_unlock(&ready_lock);
	while (!stop) {
		check_second(tid, self);
		sleep_ms(pause_ms ? pause_ms : 1);
	}
	check_second(tid, self);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long i;
	int err;

	if (argc != 3)
		die(PROG, "usage: pid_check ITERATIONS PAUSE_MS");
	iterations = parse_ulong(PROG, "ITERATIONS", argv[1], 1, 1UL << 30);
	pause_ms = parse_ulong(PROG, "PAUSE_MS", argv[2], 0, 10000);
	main_pid = getpid();
	main_tid = gettid();
	main_self = pthread_self();
	if (main_tid != main_pid)
		die(PROG, "main thread tid %d differs from pid %d", main_tid,
		    main_pid);
	err = pthread_create(&second_self, NULL, second_thread, NULL);
	if (err)
		die(PROG, "pthread_create: %s", strerror(err));
	pthread_mutex_lock(&ready_lock);
	while (!second_ready)
		pthread_cond_wait(&ready_cond, &ready_lock);
	pthread_mutex_unlock(&ready_lock);
	say("start pid %d tid %d thread_tid %d", main_pid, main_tid,
	    second_tid);
	for (i = 1; i <= iterations; i++) {
		check_main();
		if (i % 10 == 0)
			say("iter %lu/%lu", i, iterations);
		sleep_ms(pause_ms);
	}
	stop = 1;
	pthread_join(second_self, NULL);
	check_main();
	if (failure[0]) {
		say("FAIL: %s", failure);
		return 1;
	}
	say("OK pid stable");
	return 0;
}
