/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Condition variables, when the lock order is recorded
 * (wrappers/lock_order.c): the return from a wait is an event, with its
 * result (woken, or timed out). Replayed, a wait does not use the
 * condition variable at all: it releases the mutex, waits for its turn,
 * takes the mutex again and returns what it returned in the recording —
 * no wakeup can be lost or go to another waiter. A thread restored in the
 * middle of a real wait is woken by any signal (signals broadcast while
 * replaying) and then waits for its turn. Not recording: the real calls.
 */
#include <errno.h>
#include <pthread.h>
#include <threads.h>
#include <time.h>
#include "wrappers.h"

DEFINE_NEXT(pthread_cond_wait);
DEFINE_NEXT(pthread_cond_timedwait);
DEFINE_NEXT(pthread_cond_clockwait);
DEFINE_NEXT(pthread_cond_signal);
DEFINE_NEXT(pthread_cond_broadcast);

/* dlsym may give the symbol of an older version of these: ask for the
 * one programs link against */
#if defined(__x86_64__)
#define COND_VERSION "GLIBC_2.3.2"
#else
#define COND_VERSION "GLIBC_2.17"
#endif

static void resolve_cond(void **slot, const char *name)
{
	if (!*slot)
		*slot = dlvsym(RTLD_NEXT, name, COND_VERSION);
	if (!*slot)
		*slot = dlsym(RTLD_NEXT, name);
}

CKPT_EARLY_CONSTRUCTOR static void resolve_next_condvars(void)
{
	resolve_cond((void **)&next_pthread_cond_wait, "pthread_cond_wait");
	resolve_cond((void **)&next_pthread_cond_timedwait,
		     "pthread_cond_timedwait");
	resolve_cond((void **)&next_pthread_cond_signal, "pthread_cond_signal");
	resolve_cond((void **)&next_pthread_cond_broadcast,
		     "pthread_cond_broadcast");
	RESOLVE_NEXT(pthread_cond_clockwait);
}

/* pthread_cond_timedwait measures abstime on the clock the condition
 * variable was made with (pthread_condattr_setclock: CLOCK_MONOTONIC in
 * python's GIL, libuv, many thread pools), not always CLOCK_REALTIME:
 * only the real pthread_cond_timedwait knows it. */
#define CLOCK_OF_CONDVAR ((clockid_t)-1)

struct wait_call {
	pthread_cond_t *cond;
	pthread_mutex_t *mutex;
	int timed;
	clockid_t clock;	/* CLOCK_OF_CONDVAR: the condvar's own */
	const struct timespec *abstime;
};

static int real_wait(const struct wait_call *w)
{
	if (!w->timed)
		return NEXT_FN(pthread_cond_wait)(w->cond, w->mutex);
	if (w->clock == CLOCK_OF_CONDVAR)
		return NEXT_FN(pthread_cond_timedwait)(w->cond, w->mutex,
						       w->abstime);
	return NEXT_FN(pthread_cond_clockwait)(w->cond, w->mutex, w->clock,
					       w->abstime);
}

/* Replaying: the mutex released, the turn waited for, the mutex taken
 * again. Live (the record ended meanwhile): a real wait. */
static int replayed_wait(const struct wait_call *w, const void *site)
{
	struct lock_turn t;
	int rc;

	pthread_mutex_unlock(w->mutex);
	if (!lock_order_begin(&t, LOCK_EV_COND, w->cond, site)) {
		locks_mutex_lock(w->mutex);
		return real_wait(w);
	}
	locks_mutex_lock(w->mutex);
	rc = t.replaying ? t.recorded : real_wait(w);
	lock_order_end(&t, rc);
	return rc;
}

static int ordered_wait(const struct wait_call *w, const void *site)
{
	struct lock_turn t;
	int rc;

	if (lock_order_replaying())
		return replayed_wait(w, site);
	rc = real_wait(w);
	/* woken holding the mutex; restored mid-wait, a replay may have
	 * begun: then the turn is waited for without the mutex */
	if (lock_order_replaying()) {
		pthread_mutex_unlock(w->mutex);
		if (lock_order_begin(&t, LOCK_EV_COND, w->cond, site)) {
			locks_mutex_lock(w->mutex);
			if (t.replaying)
				rc = t.recorded;
			lock_order_end(&t, rc);
		} else {
			locks_mutex_lock(w->mutex);
		}
		return rc;
	}
	if (lock_order_begin(&t, LOCK_EV_COND, w->cond, site))
		lock_order_end(&t, rc);
	return rc;
}

CKPT_WRAPPER int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	struct wait_call w = { c, m, 0, 0, NULL };

	return ordered_wait(&w, CALL_SITE());
}

CKPT_WRAPPER int pthread_cond_timedwait(pthread_cond_t *c,
					pthread_mutex_t *m,
					const struct timespec *abstime)
{
	struct wait_call w = { c, m, 1, CLOCK_OF_CONDVAR, abstime };

	return ordered_wait(&w, CALL_SITE());
}

CKPT_WRAPPER int pthread_cond_clockwait(pthread_cond_t *c,
					pthread_mutex_t *m, clockid_t clock,
					const struct timespec *abstime)
{
	struct wait_call w = { c, m, 1, clock, abstime };

	return ordered_wait(&w, CALL_SITE());
}

CKPT_WRAPPER int pthread_cond_signal(pthread_cond_t *c)
{
	if (lock_order_replaying())
		return NEXT_FN(pthread_cond_broadcast)(c);
	return NEXT_FN(pthread_cond_signal)(c);
}

CKPT_WRAPPER int pthread_cond_broadcast(pthread_cond_t *c)
{
	return NEXT_FN(pthread_cond_broadcast)(c);
}

/* C11: glibc's cnd_* call its pthread_cond_* directly, past these
 * wrappers; the same waits, with the results as thrd_* codes */
static int thrd_result(int rc)
{
	if (rc == 0)
		return thrd_success;
	return rc == ETIMEDOUT ? thrd_timedout : thrd_error;
}

CKPT_WRAPPER int cnd_wait(cnd_t *c, mtx_t *m)
{
	struct wait_call w = { (pthread_cond_t *)c, (pthread_mutex_t *)m, 0,
			       0, NULL };

	return thrd_result(ordered_wait(&w, CALL_SITE()));
}

CKPT_WRAPPER int cnd_timedwait(cnd_t *restrict c, mtx_t *restrict m,
			       const struct timespec *restrict abstime)
{
	struct wait_call w = { (pthread_cond_t *)c, (pthread_mutex_t *)m, 1,
			       CLOCK_OF_CONDVAR, abstime };

	return thrd_result(ordered_wait(&w, CALL_SITE()));
}

CKPT_WRAPPER int cnd_signal(cnd_t *c)
{
	return thrd_result(pthread_cond_signal((pthread_cond_t *)c));
}
