/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * posix_timers TICKS PERIOD_MS: POSIX timers (timer_create) of every
 * sigevent kind, counting their expirations (1 + the overrun of each
 * notification):
 *   sig   SIGEV_SIGNAL (SIGRTMIN+1, sival 0xa11), CLOCK_MONOTONIC, periodic
 *   thr   SIGEV_THREAD (sival &thread_count), CLOCK_REALTIME, periodic
 *   tid   SIGEV_THREAD_ID to a worker thread waiting in sigwaitinfo
 *         (SIGRTMIN+3, sival 0xd1d), CLOCK_MONOTONIC, periodic
 *   none  SIGEV_NONE, CLOCK_MONOTONIC, one shot in 1000 s, interval 7 s
 *   cpu   SIGEV_NONE, CLOCK_PROCESS_CPUTIME_ID, one shot in 1000 s of CPU,
 *         interval 3 s
 *   wall  SIGEV_NONE, CLOCK_REALTIME, TIMER_ABSTIME 1000 s ahead, interval
 *         5 s
 * Prints "ids SIG THR TID NONE CPU WALL" (the timer_t values), then every
 * 100 ms "tick I ms M sig S thr T tid D none_ms N wall_ms W" (M:
 * CLOCK_MONOTONIC, N and W: what timer_gettime says is left of `none` and
 * `wall`), checking each time that
 * every timer_t still works and keeps its interval. At tick TICKS - 5 it
 * makes two more timers (SIGEV_THREAD and SIGEV_THREAD_ID), waits for
 * both to fire and deletes them ("late ok"). Ends with "result sig S thr
 * T tid D" and "OK posix_timers"; any mismatch is one FAIL line, exit 1.
 * posix_timers TICKS PERIOD_MS threadcpu: also a SIGEV_NONE timer on the
 * main thread's CPU clock (CLOCK_THREAD_CPUTIME_ID), not checked; prints
 * "threadcpu ID" (its kernel id).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include "app_util.h"

#define ME "posix_timers"

enum { SIG, THR, TID, NONE, CPU, WALL, NTIMERS };
static const char *names[NTIMERS] = { "sig", "thr", "tid", "none", "cpu",
				      "wall" };
static timer_t ids[NTIMERS];
static long interval_ms[NTIMERS];

static atomic_long sig_count, thread_count, tid_count, late_thread;
static atomic_int worker_tid, late_tid;
static unsigned long period_ms;

static void fail(const char *fmt, const char *what, long a, long b)
{
	say(fmt, what, a, b);
	exit(1);
}

static void on_timer_signal(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si->si_code != SI_TIMER || si->si_value.sival_int != 0xa11)
		fail("FAIL %s: si_code %ld sival %#lx", "sig", si->si_code,
		     si->si_value.sival_int);
	atomic_fetch_add(&sig_count, 1 + timer_getoverrun(ids[SIG]));
}

static void on_thread_timer(union sigval v)
{
	atomic_long *count = v.sival_ptr;

	if (count != &thread_count)
		fail("FAIL %s: sival %p, want %p", "thr", (long)count,
		     (long)&thread_count);
	atomic_fetch_add(count, 1 + timer_getoverrun(ids[THR]));
}

static void on_late_thread_timer(union sigval v)
{
	atomic_fetch_add((atomic_long *)v.sival_ptr, 1);
}

static int tid_signal(void)
{
	return SIGRTMIN + 3;
}

/* The target of the SIGEV_THREAD_ID timers: takes their signals with
 * sigwaitinfo, in this thread only. */
static void *worker(void *arg)
{
	sigset_t set;
	siginfo_t si;

	(void)arg;
	sigemptyset(&set);
	sigaddset(&set, tid_signal());
	atomic_store(&worker_tid, (int)syscall(SYS_gettid));
	for (;;) {
		if (sigwaitinfo(&set, &si) < 0)
			continue;
		if (si.si_code != SI_TIMER)
			fail("FAIL %s: si_code %ld (%ld)", "tid", si.si_code,
			     0);
		if (si.si_value.sival_int == 0xd1d)
			atomic_fetch_add(&tid_count, 1 + si.si_overrun);
		else if (si.si_value.sival_int == 0x1a7e)
			atomic_store(&late_tid, 1);
		else
			fail("FAIL %s: sival %#lx (%ld)", "tid",
			     si.si_value.sival_int, 0);
	}
	return NULL;
}

static void make_timer_at(int which, clockid_t clock, struct sigevent *ev,
			  struct timespec first, long every_ms, int flags)
{
	struct itimerspec its = {
		.it_value = first,
		.it_interval = { every_ms / 1000, (every_ms % 1000) * 1000000L },
	};

	if (timer_create(clock, ev, &ids[which]) < 0 ||
	    timer_settime(ids[which], flags, &its, NULL) < 0)
		die(ME, "timer %s: %s", names[which], strerror(errno));
	interval_ms[which] = every_ms;
}

static void make_timer(int which, clockid_t clock, struct sigevent *ev,
		       long first_ms, long every_ms)
{
	struct timespec first = { first_ms / 1000,
				  (first_ms % 1000) * 1000000L };

	make_timer_at(which, clock, ev, first, every_ms, 0);
}

static void make_timers(void)
{
	struct timespec wall;
	struct sigevent ev;

	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = SIGRTMIN + 1;
	ev.sigev_value.sival_int = 0xa11;
	make_timer(SIG, CLOCK_MONOTONIC, &ev, period_ms, period_ms);

	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_THREAD;
	ev.sigev_notify_function = on_thread_timer;
	ev.sigev_value.sival_ptr = &thread_count;
	make_timer(THR, CLOCK_REALTIME, &ev, period_ms, period_ms);

	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = tid_signal();
	ev.sigev_value.sival_int = 0xd1d;
	ev._sigev_un._tid = atomic_load(&worker_tid);
	make_timer(TID, CLOCK_MONOTONIC, &ev, period_ms, period_ms);

	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_NONE;
	make_timer(NONE, CLOCK_MONOTONIC, &ev, 1000 * 1000, 7000);
	make_timer(CPU, CLOCK_PROCESS_CPUTIME_ID, &ev, 1000 * 1000, 3000);
	clock_gettime(CLOCK_REALTIME, &wall);
	wall.tv_sec += 1000;
	make_timer_at(WALL, CLOCK_REALTIME, &ev, wall, 5000, TIMER_ABSTIME);
}

static long ms_of(const struct timespec *t)
{
	return t->tv_sec * 1000 + t->tv_nsec / 1000000;
}

/* Every timer_t works and keeps its interval; the time left of `none`
 * and `wall`. */
static long check_timers(long *wall_left)
{
	struct itimerspec its;
	long none_left = 0;

	for (int i = 0; i < NTIMERS; i++) {
		if (timer_gettime(ids[i], &its) < 0)
			fail("FAIL %s: timer_gettime: errno %ld (%ld)",
			     names[i], errno, 0);
		if (ms_of(&its.it_interval) != interval_ms[i])
			fail("FAIL %s: interval %ld ms, want %ld",
			     names[i], ms_of(&its.it_interval),
			     interval_ms[i]);
		if (timer_getoverrun(ids[i]) < 0)
			fail("FAIL %s: timer_getoverrun: errno %ld (%ld)",
			     names[i], errno, 0);
		if (i == NONE)
			none_left = ms_of(&its.it_value);
		if (i == WALL)
			*wall_left = ms_of(&its.it_value);
	}
	return none_left;
}

/* Timers made now (after a restart, in the test) work too. */
static void late_timers(void)
{
	struct sigevent ev;
	timer_t thr, tid;
	struct itimerspec its = { .it_value = { 0, 20 * 1000000L } };

	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_THREAD;
	ev.sigev_notify_function = on_late_thread_timer;
	ev.sigev_value.sival_ptr = &late_thread;
	if (timer_create(CLOCK_MONOTONIC, &ev, &thr) < 0)
		fail("FAIL %s: timer_create SIGEV_THREAD: errno %ld (%ld)",
		     "late", errno, 0);
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = tid_signal();
	ev.sigev_value.sival_int = 0x1a7e;
	ev._sigev_un._tid = atomic_load(&worker_tid);
	if (timer_create(CLOCK_MONOTONIC, &ev, &tid) < 0)
		fail("FAIL %s: timer_create SIGEV_THREAD_ID: errno %ld (%ld)",
		     "late", errno, 0);
	if (timer_settime(thr, 0, &its, NULL) < 0 ||
	    timer_settime(tid, 0, &its, NULL) < 0)
		fail("FAIL %s: timer_settime: errno %ld (%ld)", "late", errno,
		     0);
	for (int i = 0; i < 1000; i++) {
		if (atomic_load(&late_thread) && atomic_load(&late_tid))
			break;
		sleep_ms(10);
	}
	if (!atomic_load(&late_thread) || !atomic_load(&late_tid))
		fail("FAIL %s: SIGEV_THREAD fired %ld, SIGEV_THREAD_ID %ld",
		     "late", atomic_load(&late_thread), atomic_load(&late_tid));
	if (timer_delete(thr) < 0 || timer_delete(tid) < 0)
		fail("FAIL %s: timer_delete: errno %ld (%ld)", "late", errno,
		     0);
	say("late ok");
}

/* A timer the kernel ties to this thread without saying so. */
static void thread_cpu_timer(void)
{
	struct sigevent ev = { .sigev_notify = SIGEV_NONE };
	struct itimerspec its = { .it_value = { 1000, 0 } };
	timer_t id;

	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &id) < 0 ||
	    timer_settime(id, 0, &its, NULL) < 0)
		die(ME, "thread CPU timer: %s", strerror(errno));
	say("threadcpu %ld", (long)(intptr_t)id);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_sigaction = on_timer_signal,
				.sa_flags = SA_SIGINFO | SA_RESTART };
	unsigned long ticks;
	struct timespec now;
	pthread_t th;
	sigset_t set;

	if (argc != 3 && !(argc == 4 && !strcmp(argv[3], "threadcpu")))
		die(ME, "usage: posix_timers TICKS PERIOD_MS [threadcpu]");
	ticks = parse_ulong(ME, "TICKS", argv[1], 10, 100000);
	period_ms = parse_ulong(ME, "PERIOD_MS", argv[2], 1, 10000);
	sigaction(SIGRTMIN + 1, &sa, NULL);
	sigemptyset(&set);
	sigaddset(&set, tid_signal());
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	if (pthread_create(&th, NULL, worker, NULL))
		die(ME, "pthread_create failed");
	while (!atomic_load(&worker_tid))
		sleep_ms(1);
	make_timers();
	if (argc == 4)
		thread_cpu_timer();
	say("ids %p %p %p %p %p %p", ids[SIG], ids[THR], ids[TID], ids[NONE],
	    ids[CPU], ids[WALL]);
	for (unsigned long i = 1; i <= ticks; i++) {
		long wall_left = 0, none_left = check_timers(&wall_left);

		if (i == ticks - 5)
			late_timers();
		clock_gettime(CLOCK_MONOTONIC, &now);
		say("tick %lu ms %ld sig %ld thr %ld tid %ld none_ms %ld "
		    "wall_ms %ld", i, ms_of(&now), atomic_load(&sig_count),
		    atomic_load(&thread_count), atomic_load(&tid_count),
		    none_left, wall_left);
		sleep_ms(100);
	}
	say("result sig %ld thr %ld tid %ld", atomic_load(&sig_count),
	    atomic_load(&thread_count), atomic_load(&tid_count));
	say("OK posix_timers");
	return 0;
}
