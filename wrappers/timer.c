/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * POSIX timers (timer_create). The kernel timers themselves are saved and
 * made again with their ids by libckpt-preload/posix_timers.c; this file
 * keeps what that needs and the kernel does not give back:
 *
 *   SIGEV_THREAD_ID names a thread by the tid the program knows (virtual):
 *   the kernel is given its real tid.
 *
 *   Which timers were last set with TIMER_ABSTIME (a CLOCK_REALTIME one
 *   keeps its wall-clock deadline across a restart).
 *
 *   SIGEV_THREAD is done here rather than by glibc, the same way glibc
 *   does it (a helper thread takes a signal from each expiration and
 *   starts a thread running the program's function), because glibc's
 *   helper blocks every signal with a raw system call: no checkpoint could
 *   stop it, and its cached tid would be stale after a restart. Ours is
 *   an ordinary thread of the process, restored like the others; the
 *   kernel timer is a SIGEV_THREAD_ID one aimed at it, and the record
 *   below (in libckpt's memory, saved with it) says what to run. The
 *   timer_t given to the program is the record's address encoded as
 *   glibc encodes its own (negative: INTPTR_MIN | address >> 1), and the
 *   other timer_* functions know it.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "wrappers.h"

DEFINE_NEXT(timer_create);
DEFINE_NEXT(timer_settime);
DEFINE_NEXT(timer_gettime);
DEFINE_NEXT(timer_getoverrun);
DEFINE_NEXT(timer_delete);

CKPT_EARLY_CONSTRUCTOR static void resolve_next_timer(void)
{
	RESOLVE_NEXT(timer_create);
	RESOLVE_NEXT(timer_settime);
	RESOLVE_NEXT(timer_gettime);
	RESOLVE_NEXT(timer_getoverrun);
	RESOLVE_NEXT(timer_delete);
}

#define THREAD_TIMERS_MAX	256
#define HELPER_SIGNAL		32	/* glibc's SIGTIMER, below SIGRTMIN:
					   never the program's */

struct thread_timer {
	int ktimerid;			/* the kernel's timer id */
	int live;
	void (*fn)(union sigval);
	union sigval value;
	size_t stacksize;		/* of the program's attributes; 0 */
};

static struct thread_timer thread_timers[THREAD_TIMERS_MAX];
static pthread_mutex_t thread_timers_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t helper_vtid;		/* 0: no helper yet */
static pid_t helper_owner;		/* the process (vpid) it belongs to */

/* Kernel ids of the timers last set with TIMER_ABSTIME; -1: free. */
#define ABSOLUTE_MAX		512
static int absolute_ids[ABSOLUTE_MAX] = { [0 ... ABSOLUTE_MAX - 1] = -1 };
static pthread_mutex_t absolute_lock = PTHREAD_MUTEX_INITIALIZER;

/* Called with checkpoints blocked (a thread stopped holding the lock
 * would keep another from stopping). */
static int note_absolute(int kid, int absolute)
{
	int *slot = NULL;

	pthread_mutex_lock(&absolute_lock);
	for (int i = 0; i < ABSOLUTE_MAX; i++) {
		if (absolute_ids[i] == kid) {
			slot = &absolute_ids[i];
			break;
		}
		if (absolute_ids[i] < 0 && !slot)
			slot = &absolute_ids[i];
	}
	if (slot && (absolute || *slot == kid))
		*slot = absolute ? kid : -1;
	pthread_mutex_unlock(&absolute_lock);
	return 0;
}

/* For the checkpoint (threads stopped): was kernel timer kid last set
 * with TIMER_ABSTIME? (More than ABSOLUTE_MAX at once: some read as
 * relative.) */
int timer_set_absolute(int kid)
{
	for (int i = 0; i < ABSOLUTE_MAX; i++)
		if (absolute_ids[i] == kid)
			return 1;
	return 0;
}

/* A new timer is relative until set otherwise (its id may be that of a
 * deleted one noted absolute when a checkpoint fell in timer_delete). */
static int created_relative(clockid_t clock, const struct sigevent *evp,
			    timer_t *id)
{
	int r = NEXT_FN(timer_create)(clock, (struct sigevent *)evp, id);

	if (r == 0)
		note_absolute((int)(intptr_t)*id, 0);
	return r;
}

struct notification {
	void (*fn)(union sigval);
	union sigval value;
};

/* Each expiration runs in a thread of its own with no signal blocked,
 * as glibc's does. */
static void *run_notification(void *p)
{
	struct notification n = *(struct notification *)p;
	sigset_t none;

	free(p);
	sigemptyset(&none);
	pthread_sigmask(SIG_SETMASK, &none, NULL);
	n.fn(n.value);
	return NULL;
}

static void start_notification(const siginfo_t *si)
{
	struct thread_timer *t = si->si_value.sival_ptr;
	struct notification *n;
	pthread_attr_t attr;
	pthread_t th;
	size_t stack;

	if (t < thread_timers || t >= thread_timers + THREAD_TIMERS_MAX)
		return;
	pthread_mutex_lock(&thread_timers_lock);
	if (!t->live || t->ktimerid != si->si_timerid) {
		pthread_mutex_unlock(&thread_timers_lock);
		return;		/* deleted while its signal was queued */
	}
	n = malloc(sizeof(*n));
	if (n) {
		n->fn = t->fn;
		n->value = t->value;
	}
	stack = t->stacksize;
	pthread_mutex_unlock(&thread_timers_lock);
	if (!n)
		return;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (stack)
		pthread_attr_setstacksize(&attr, stack);
	if (pthread_create(&th, &attr, run_notification, n))
		free(n);
	pthread_attr_destroy(&attr);
}

/* Waits for the timers' signal; a checkpoint's interrupts it. */
static void *timer_helper(void *arg)
{
	/* glibc's sigset functions refuse its own signals: a raw mask */
	uint64_t wait = 1ULL << (HELPER_SIGNAL - 1);
	sigset_t all;
	siginfo_t si;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, NULL);	/* ckpt's stays open */
	ckpt_syscall(SYS_rt_sigprocmask, SIG_BLOCK, &wait, NULL, 8);
	__atomic_store_n(&helper_vtid, gettid(), __ATOMIC_RELEASE);
	for (;;) {
		if (ckpt_syscall(SYS_rt_sigtimedwait, &wait, &si, NULL, 8) !=
		    HELPER_SIGNAL)
			continue;
		if (si.si_code == SI_TIMER)
			start_notification(&si);
	}
	return NULL;
}

/* The helper's virtual tid, started if this process has none (a forked
 * child has neither the helper nor the timers of its parent). 0 on
 * failure (errno). Called with thread_timers_lock held. */
static pid_t helper(void)
{
	pthread_attr_t attr;
	pthread_t th;
	int r;

	if (helper_owner == getpid() && helper_vtid)
		return helper_vtid;
	memset(thread_timers, 0, sizeof(thread_timers));
	helper_vtid = 0;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	r = pthread_create(&th, &attr, timer_helper, NULL);
	pthread_attr_destroy(&attr);
	if (r) {
		errno = EAGAIN;
		return 0;
	}
	while (!__atomic_load_n(&helper_vtid, __ATOMIC_ACQUIRE))
		sched_yield();
	helper_owner = getpid();
	return helper_vtid;
}

static timer_t encode(struct thread_timer *t)
{
	return (timer_t)(INTPTR_MIN | ((uintptr_t)t >> 1));
}

/* The record a timer_t of ours names, or NULL (a kernel id, glibc's). */
static struct thread_timer *decode(timer_t id)
{
	struct thread_timer *t;

	if ((intptr_t)id >= 0)
		return NULL;
	t = (struct thread_timer *)((uintptr_t)id << 1);
	if (t < thread_timers || t >= thread_timers + THREAD_TIMERS_MAX)
		return NULL;
	return t;
}

static struct thread_timer *free_record(void)
{
	for (int i = 0; i < THREAD_TIMERS_MAX; i++)
		if (!thread_timers[i].live)
			return &thread_timers[i];
	errno = EAGAIN;
	return NULL;
}

/* A kernel timer sending HELPER_SIGNAL to the helper for record t. */
static int create_thread_timer(clockid_t clock, const struct sigevent *evp,
			       struct thread_timer *t, pid_t vtid)
{
	struct sigevent sev;
	timer_t kid;
	size_t stack = 0;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = HELPER_SIGNAL;
	sev.sigev_value.sival_ptr = t;
	sev._sigev_un._tid = vpid_real_from_virt(vtid);
	if (created_relative(clock, &sev, &kid) < 0)
		return -1;
	if (evp->sigev_notify_attributes)
		pthread_attr_getstacksize(evp->sigev_notify_attributes, &stack);
	t->ktimerid = (int)(intptr_t)kid;
	t->fn = evp->sigev_notify_function;
	t->value = evp->sigev_value;
	t->stacksize = stack;
	t->live = 1;
	return 0;
}

static int thread_timer_create(clockid_t clock, const struct sigevent *evp,
			       timer_t *id)
{
	struct thread_timer *t = NULL;
	pid_t vtid;
	int r = -1;

	pthread_mutex_lock(&thread_timers_lock);
	vtid = helper();
	if (vtid)
		t = free_record();
	if (t)
		r = WITHOUT_CHECKPOINT(create_thread_timer(clock, evp, t,
							   vtid));
	if (r == 0)
		*id = encode(t);
	pthread_mutex_unlock(&thread_timers_lock);
	return r;
}

/* SIGEV_THREAD_ID: the kernel is told the thread's real tid. */
static int thread_id_timer_create(clockid_t clock, const struct sigevent *evp,
				  timer_t *id)
{
	struct sigevent sev = *evp;

	sev._sigev_un._tid = vpid_real_from_virt(evp->_sigev_un._tid);
	return created_relative(clock, &sev, id);
}

CKPT_WRAPPER int timer_create(clockid_t clock, struct sigevent *evp,
			      timer_t *id)
{
	if (evp && evp->sigev_notify == SIGEV_THREAD)
		return thread_timer_create(clock, evp, id);
	if (evp && evp->sigev_notify == SIGEV_THREAD_ID)
		return WITHOUT_CHECKPOINT(thread_id_timer_create(clock, evp,
								  id));
	return WITHOUT_CHECKPOINT(created_relative(clock, evp, id));
}

/* The kernel's id of one of ours, as a timer_t glibc passes on as is. */
static timer_t kernel_id(const struct thread_timer *t)
{
	return (timer_t)(intptr_t)t->ktimerid;
}

static int settime_and_note(timer_t kid, int flags,
			    const struct itimerspec *value,
			    struct itimerspec *old)
{
	int r = NEXT_FN(timer_settime)(kid, flags, value, old);

	if (r == 0)
		note_absolute((int)(intptr_t)kid, flags & TIMER_ABSTIME);
	return r;
}

CKPT_WRAPPER int timer_settime(timer_t id, int flags,
			       const struct itimerspec *value,
			       struct itimerspec *old)
{
	struct thread_timer *t = decode(id);

	return WITHOUT_CHECKPOINT(settime_and_note(t ? kernel_id(t) : id,
						   flags, value, old));
}

CKPT_WRAPPER int timer_gettime(timer_t id, struct itimerspec *value)
{
	struct thread_timer *t = decode(id);

	return NEXT_FN(timer_gettime)(t ? kernel_id(t) : id, value);
}

CKPT_WRAPPER int timer_getoverrun(timer_t id)
{
	struct thread_timer *t = decode(id);

	return NEXT_FN(timer_getoverrun)(t ? kernel_id(t) : id);
}

CKPT_WRAPPER int timer_delete(timer_t id)
{
	struct thread_timer *t = decode(id);
	timer_t kid = t ? kernel_id(t) : id;
	int r;

	if (!t) {
		r = NEXT_FN(timer_delete)(id);
	} else {
		pthread_mutex_lock(&thread_timers_lock);
		r = t->live ? NEXT_FN(timer_delete)(kid) : -1;
		if (r == 0)
			t->live = 0;
		else if (!t->live)
			errno = EINVAL;
		pthread_mutex_unlock(&thread_timers_lock);
	}
	if (r == 0)
		WITHOUT_CHECKPOINT(note_absolute((int)(intptr_t)kid, 0));
	return r;
}
