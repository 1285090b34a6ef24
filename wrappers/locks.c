/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Mutexes and rwlocks that store their owner's tid: recursive,
 * error-checking, robust, priority-inheritance and priority-protect
 * mutexes (C11 mtx_t is one), and rwlocks held for writing. Each lock
 * of those kinds is noted in the thread's table (thread_ids.c) before the
 * real call, so a checkpoint landing anywhere in it finds the entry, and
 * dropped once the thread no longer owns the lock; a restart rewrites the
 * owner of every noted lock. A normal mutex costs one test of its kind.
 * Under the gdb extension each take of a mutex, C11 mtx_t or rwlock is
 * also an event of the lock order (wrappers/lock_order.c).
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
DEFINE_NEXT(pthread_rwlock_rdlock);
DEFINE_NEXT(pthread_rwlock_tryrdlock);
DEFINE_NEXT(pthread_rwlock_clockrdlock);
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
	RESOLVE_NEXT(pthread_rwlock_rdlock);
	RESOLVE_NEXT(pthread_rwlock_tryrdlock);
	RESOLVE_NEXT(pthread_rwlock_clockrdlock);
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

static int mutex_take(void *m)
{
	return locks_mutex_lock(m);
}

static int mutex_take_until(void *m, clockid_t clock,
			    const struct timespec *abstime)
{
	return mutex_clocklock(m, clock, abstime);
}

static int mutex_try_take(void *m)
{
	return mutex_trylock(m);
}

static void mutex_give_back(void *m)
{
	pthread_mutex_unlock(m);
}

/* Ordered when recording (wrappers/lock_order.c) */
static const struct lock_ops mutex_ops = {
	.take = mutex_take,
	.try_take = mutex_try_take,
	.take_until = mutex_take_until,
	.give_back = mutex_give_back,
};

static int ordered_lock(pthread_mutex_t *m, int kind, clockid_t clock,
			const struct timespec *abstime, const void *site)
{
	return lock_order_take(&mutex_ops, m, kind, clock, abstime, site);
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

/* rwlocks: the write lock noted (its owner is stored), both ordered */
static int write_take(void *rw)
{
	return LOCK_NOTED(rw, 1, NEXT_FN(pthread_rwlock_wrlock)(rw));
}

static int write_try_take(void *rw)
{
	return LOCK_NOTED(rw, 1, NEXT_FN(pthread_rwlock_trywrlock)(rw));
}

static int write_take_until(void *rw, clockid_t clock,
			    const struct timespec *abstime)
{
	return LOCK_NOTED(rw, 1, NEXT_FN(pthread_rwlock_clockwrlock)(
					 rw, clock, abstime));
}

static int read_take(void *rw)
{
	return NEXT_FN(pthread_rwlock_rdlock)(rw);
}

static int read_try_take(void *rw)
{
	return NEXT_FN(pthread_rwlock_tryrdlock)(rw);
}

static int read_take_until(void *rw, clockid_t clock,
			   const struct timespec *abstime)
{
	return NEXT_FN(pthread_rwlock_clockrdlock)(rw, clock, abstime);
}

static void rwlock_give_back(void *rw)
{
	pthread_rwlock_unlock(rw);
}

static const struct lock_ops write_ops = {
	.take = write_take,
	.try_take = write_try_take,
	.take_until = write_take_until,
	.give_back = rwlock_give_back,
};

static const struct lock_ops read_ops = {
	.take = read_take,
	.try_take = read_try_take,
	.take_until = read_take_until,
	.give_back = rwlock_give_back,
};

/* The four ways to take a rwlock, for reading (rd) or writing (wr). */
#define RWLOCK_TAKES(rdwr, ops)                                           \
	CKPT_WRAPPER int pthread_rwlock_##rdwr##lock(pthread_rwlock_t *rw) \
	{                                                                 \
		return lock_order_take(&ops, rw, LOCK_EV_MUTEX, 0, NULL,  \
				       CALL_SITE());                      \
	}                                                                 \
	CKPT_WRAPPER int pthread_rwlock_try##rdwr##lock(                  \
		pthread_rwlock_t *rw)                                     \
	{                                                                 \
		return lock_order_take(&ops, rw, LOCK_EV_TRYLOCK, 0,      \
				       NULL, CALL_SITE());                \
	}                                                                 \
	CKPT_WRAPPER int pthread_rwlock_timed##rdwr##lock(                \
		pthread_rwlock_t *rw, const struct timespec *abstime)     \
	{                                                                 \
		return lock_order_take(&ops, rw, LOCK_EV_TIMEDLOCK,       \
				       CLOCK_REALTIME, abstime,           \
				       CALL_SITE());                      \
	}                                                                 \
	CKPT_WRAPPER int pthread_rwlock_clock##rdwr##lock(                \
		pthread_rwlock_t *rw, clockid_t clock,                    \
		const struct timespec *abstime)                           \
	{                                                                 \
		return lock_order_take(&ops, rw, LOCK_EV_TIMEDLOCK,       \
				       clock, abstime, CALL_SITE());      \
	}

RWLOCK_TAKES(wr, write_ops)
RWLOCK_TAKES(rd, read_ops)

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

static int mtx_take(void *mtx)
{
	if (!owner_checked(mtx))
		return NEXT_FN(mtx_lock)(mtx);
	return MTX_NOTED(mtx, NEXT_FN(mtx_lock)(mtx));
}

static int mtx_try_take(void *mtx)
{
	if (!owner_checked(mtx))
		return NEXT_FN(mtx_trylock)(mtx);
	return MTX_NOTED(mtx, NEXT_FN(mtx_trylock)(mtx));
}

/* mtx_timedlock's deadline is on the TIME_UTC clock, always */
static int mtx_take_until(void *mtx, clockid_t clock,
			  const struct timespec *abstime)
{
	(void)clock;
	if (!owner_checked(mtx))
		return NEXT_FN(mtx_timedlock)(mtx, abstime);
	return MTX_NOTED(mtx, NEXT_FN(mtx_timedlock)(mtx, abstime));
}

static void mtx_give_back(void *mtx)
{
	mtx_unlock(mtx);
}

/* Ordered like pthread mutexes; the results are thrd_* codes
 * (thrd_success is 0) */
static const struct lock_ops mtx_ops = {
	.take = mtx_take,
	.try_take = mtx_try_take,
	.take_until = mtx_take_until,
	.give_back = mtx_give_back,
};

CKPT_WRAPPER int mtx_lock(mtx_t *mtx)
{
	return lock_order_take(&mtx_ops, mtx, LOCK_EV_MUTEX, 0, NULL,
			       CALL_SITE());
}

CKPT_WRAPPER int mtx_trylock(mtx_t *mtx)
{
	return lock_order_take(&mtx_ops, mtx, LOCK_EV_TRYLOCK, 0, NULL,
			       CALL_SITE());
}

CKPT_WRAPPER int mtx_timedlock(mtx_t *restrict mtx,
			       const struct timespec *restrict ts)
{
	return lock_order_take(&mtx_ops, mtx, LOCK_EV_TIMEDLOCK,
			       CLOCK_REALTIME, ts, CALL_SITE());
}

CKPT_WRAPPER int mtx_unlock(mtx_t *mtx)
{
	pthread_mutex_t *m = (pthread_mutex_t *)mtx;
	int r = NEXT_FN(mtx_unlock)(mtx);

	if (r == thrd_success && owner_checked(m))
		forget_if_released(m);
	return r;
}
