/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Mutexes and rwlocks that store their owner's tid: recursive,
 * error-checking, robust, priority-inheritance and priority-protect
 * mutexes (C11 mtx_t is one), and rwlocks held for writing. Each lock
 * of those kinds is noted in the thread's table (thread_ids.c) before the
 * real call, so a checkpoint landing anywhere in it finds the entry, and
 * dropped once the thread no longer owns the lock; a restart rewrites the
 * owner of every noted lock. A normal mutex costs one test of its kind.
 */
#include <pthread.h>
#include <threads.h>
#include <time.h>
#include "wrappers.h"

DEFINE_NEXT(pthread_mutex_lock);
DEFINE_NEXT(pthread_mutex_trylock);
DEFINE_NEXT(pthread_mutex_clocklock);
DEFINE_NEXT(pthread_mutex_unlock);
DEFINE_NEXT(pthread_rwlock_wrlock);
DEFINE_NEXT(pthread_rwlock_trywrlock);
DEFINE_NEXT(pthread_rwlock_timedwrlock);
DEFINE_NEXT(pthread_rwlock_clockwrlock);
DEFINE_NEXT(pthread_rwlock_unlock);
DEFINE_NEXT(mtx_lock);
DEFINE_NEXT(mtx_trylock);
DEFINE_NEXT(mtx_timedlock);
DEFINE_NEXT(mtx_unlock);

CKPT_EARLY_CONSTRUCTOR static void resolve_next_locks(void)
{
	RESOLVE_NEXT(pthread_mutex_lock);
	RESOLVE_NEXT(pthread_mutex_trylock);
	RESOLVE_NEXT(pthread_mutex_clocklock);
	RESOLVE_NEXT(pthread_mutex_unlock);
	RESOLVE_NEXT(pthread_rwlock_wrlock);
	RESOLVE_NEXT(pthread_rwlock_trywrlock);
	RESOLVE_NEXT(pthread_rwlock_timedwrlock);
	RESOLVE_NEXT(pthread_rwlock_clockwrlock);
	RESOLVE_NEXT(pthread_rwlock_unlock);
	RESOLVE_NEXT(mtx_lock);
	RESOLVE_NEXT(mtx_trylock);
	RESOLVE_NEXT(mtx_timedlock);
	RESOLVE_NEXT(mtx_unlock);
}

static inline int owner_checked(const pthread_mutex_t *m)
{
	return thread_ids_kind_is_owner_checked(
		__atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED));
}

/* Take an owner-checked lock with `call`, which returns 0 or an error
 * number (EOWNERDEAD: taken all the same). */
#define LOCK_NOTED(obj, is_rwlock, call)                                  \
	({                                                                \
		int noted_ = thread_ids_track((obj), (is_rwlock));        \
		int rc_ = (call);                                         \
		if (rc_ != 0 && rc_ != EOWNERDEAD && noted_)              \
			thread_ids_untrack(obj);                          \
		rc_;                                                      \
	})

/* After an unlock: a recursive mutex may still be ours. */
static void forget_if_released(pthread_mutex_t *m)
{
	if (__atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) !=
	    thread_ids_self())
		thread_ids_untrack(m);
}

/* The real calls, with the owner noted for the kinds that need it. */
int locks_mutex_lock(pthread_mutex_t *m)
{
	if (!owner_checked(m))
		return NEXT_FN(pthread_mutex_lock)(m);
	return LOCK_NOTED(m, 0, NEXT_FN(pthread_mutex_lock)(m));
}

static int mutex_trylock(pthread_mutex_t *m)
{
	if (!owner_checked(m))
		return NEXT_FN(pthread_mutex_trylock)(m);
	return LOCK_NOTED(m, 0, NEXT_FN(pthread_mutex_trylock)(m));
}

static int mutex_clocklock(pthread_mutex_t *m, clockid_t clock,
			   const struct timespec *abstime)
{
	if (!owner_checked(m))
		return NEXT_FN(pthread_mutex_clocklock)(m, clock, abstime);
	return LOCK_NOTED(m, 0, NEXT_FN(pthread_mutex_clocklock)(m, clock,
								abstime));
}

/* Ordered when recording (wrappers/lock_order.c): a replayed timed or
 * try lock returns what it returned in the recording (a timeout, busy),
 * or takes the lock, whose turn has come. */
static int ordered_lock(pthread_mutex_t *m, int kind, clockid_t clock,
			const struct timespec *abstime, const void *site)
{
	struct lock_turn t;
	int rc;

	if (!lock_order_begin(&t, kind, m, site)) {
		if (kind == LOCK_EV_MUTEX)
			return locks_mutex_lock(m);
		if (kind == LOCK_EV_TRYLOCK)
			return mutex_trylock(m);
		return mutex_clocklock(m, clock, abstime);
	}
	if (t.replaying && t.recorded != 0)
		rc = t.recorded;
	else if (kind == LOCK_EV_TRYLOCK)
		rc = mutex_trylock(m);
	else if (kind == LOCK_EV_MUTEX || t.replaying)
		rc = locks_mutex_lock(m);
	else
		rc = mutex_clocklock(m, clock, abstime);
	/* taken out of turn (a snapshot of the blocked call restored): given
	 * back, unseen by the program, and taken again in turn */
	if (rc == 0 && lock_order_overtaken(&t)) {
		pthread_mutex_unlock(m);
		lock_order_wait_turn(&t);
		rc = t.replaying && t.recorded != 0 ? t.recorded :
		     locks_mutex_lock(m);
	}
	lock_order_end(&t, rc);
	return rc;
}

CKPT_WRAPPER int pthread_mutex_lock(pthread_mutex_t *m)
{
	return ordered_lock(m, LOCK_EV_MUTEX, 0, NULL, CALL_SITE());
}

CKPT_WRAPPER int pthread_mutex_trylock(pthread_mutex_t *m)
{
	return ordered_lock(m, LOCK_EV_TRYLOCK, 0, NULL, CALL_SITE());
}

CKPT_WRAPPER int pthread_mutex_timedlock(pthread_mutex_t *m,
					 const struct timespec *abstime)
{
	return ordered_lock(m, LOCK_EV_TIMEDLOCK, CLOCK_REALTIME, abstime,
			    CALL_SITE());
}

CKPT_WRAPPER int pthread_mutex_clocklock(pthread_mutex_t *m,
					 clockid_t clock,
					 const struct timespec *abstime)
{
	return ordered_lock(m, LOCK_EV_TIMEDLOCK, clock, abstime,
			    CALL_SITE());
}

CKPT_WRAPPER int pthread_mutex_unlock(pthread_mutex_t *m)
{
	int rc;

	if (!owner_checked(m))
		return NEXT_FN(pthread_mutex_unlock)(m);
	rc = NEXT_FN(pthread_mutex_unlock)(m);
	if (rc == 0)
		forget_if_released(m);
	return rc;
}

CKPT_WRAPPER int pthread_rwlock_wrlock(pthread_rwlock_t *rw)
{
	return LOCK_NOTED(rw, 1, NEXT_FN(pthread_rwlock_wrlock)(rw));
}

CKPT_WRAPPER int pthread_rwlock_trywrlock(pthread_rwlock_t *rw)
{
	return LOCK_NOTED(rw, 1, NEXT_FN(pthread_rwlock_trywrlock)(rw));
}

CKPT_WRAPPER int pthread_rwlock_timedwrlock(pthread_rwlock_t *rw,
					    const struct timespec *abstime)
{
	return LOCK_NOTED(rw, 1,
			  NEXT_FN(pthread_rwlock_timedwrlock)(rw, abstime));
}

CKPT_WRAPPER int pthread_rwlock_clockwrlock(pthread_rwlock_t *rw,
					    clockid_t clock,
					    const struct timespec *abstime)
{
	return LOCK_NOTED(rw, 1, NEXT_FN(pthread_rwlock_clockwrlock)(
					 rw, clock, abstime));
}

/* A write lock is released by this unlock; a read lock was never noted. */
CKPT_WRAPPER int pthread_rwlock_unlock(pthread_rwlock_t *rw)
{
	int writer = __atomic_load_n(&rw->__data.__cur_writer,
				     __ATOMIC_RELAXED) != 0;
	int rc = NEXT_FN(pthread_rwlock_unlock)(rw);

	if (rc == 0 && writer)
		thread_ids_untrack(rw);
	return rc;
}

/* C11 mutexes are glibc mutexes (mtx_init: plain, or recursive). */
#define MTX_NOTED(m, call)                                                \
	({                                                                \
		int r_ = thrd_error;                                      \
		LOCK_NOTED((m), 0,                                        \
			   (r_ = (call)) == thrd_success ? 0 : EAGAIN);   \
		r_;                                                       \
	})

CKPT_WRAPPER int mtx_lock(mtx_t *mtx)
{
	pthread_mutex_t *m = (pthread_mutex_t *)mtx;

	if (!owner_checked(m))
		return NEXT_FN(mtx_lock)(mtx);
	return MTX_NOTED(m, NEXT_FN(mtx_lock)(mtx));
}

CKPT_WRAPPER int mtx_trylock(mtx_t *mtx)
{
	pthread_mutex_t *m = (pthread_mutex_t *)mtx;

	if (!owner_checked(m))
		return NEXT_FN(mtx_trylock)(mtx);
	return MTX_NOTED(m, NEXT_FN(mtx_trylock)(mtx));
}

CKPT_WRAPPER int mtx_timedlock(mtx_t *restrict mtx,
			       const struct timespec *restrict ts)
{
	pthread_mutex_t *m = (pthread_mutex_t *)mtx;

	if (!owner_checked(m))
		return NEXT_FN(mtx_timedlock)(mtx, ts);
	return MTX_NOTED(m, NEXT_FN(mtx_timedlock)(mtx, ts));
}

CKPT_WRAPPER int mtx_unlock(mtx_t *mtx)
{
	pthread_mutex_t *m = (pthread_mutex_t *)mtx;
	int r = NEXT_FN(mtx_unlock)(mtx);

	if (r == thrd_success && owner_checked(m))
		forget_if_released(m);
	return r;
}
