/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pthread spin locks and barriers, when the lock order is recorded
 * (wrappers/lock_order.c, under the gdb extension). A spin lock is taken
 * in its turn like a mutex. A barrier's wait is real (every thread must
 * arrive), and its return is an event with its result: replayed, the
 * thread that returned PTHREAD_BARRIER_SERIAL_THREAD in the recording
 * gets it again, whichever thread arrived last this time. Not recording:
 * the real calls.
 */
#include <pthread.h>
#include "wrappers.h"

DEFINE_NEXT(pthread_spin_lock);
DEFINE_NEXT(pthread_spin_trylock);
DEFINE_NEXT(pthread_spin_unlock);
DEFINE_NEXT(pthread_barrier_wait);

CKPT_EARLY_CONSTRUCTOR static void resolve_next_spins_barriers(void)
{
	RESOLVE_NEXT(pthread_spin_lock);
	RESOLVE_NEXT(pthread_spin_trylock);
	RESOLVE_NEXT(pthread_spin_unlock);
	RESOLVE_NEXT(pthread_barrier_wait);
}

static int spin_take(void *s)
{
	return NEXT_FN(pthread_spin_lock)(s);
}

static int spin_try_take(void *s)
{
	return NEXT_FN(pthread_spin_trylock)(s);
}

/* spin locks have no timed take */
static int spin_take_until(void *s, clockid_t clock,
			   const struct timespec *abstime)
{
	(void)clock;
	(void)abstime;
	return spin_take(s);
}

static void spin_give_back(void *s)
{
	NEXT_FN(pthread_spin_unlock)(s);
}

static const struct lock_ops spin_ops = {
	.take = spin_take,
	.try_take = spin_try_take,
	.take_until = spin_take_until,
	.give_back = spin_give_back,
};

CKPT_WRAPPER int pthread_spin_lock(pthread_spinlock_t *s)
{
	return lock_order_take(&spin_ops, (void *)s, LOCK_EV_MUTEX, 0, NULL,
			       CALL_SITE());
}

CKPT_WRAPPER int pthread_spin_trylock(pthread_spinlock_t *s)
{
	return lock_order_take(&spin_ops, (void *)s, LOCK_EV_TRYLOCK, 0,
			       NULL, CALL_SITE());
}

/* Every thread's events before it arrives precede, in the recording,
 * every return from the barrier: the real wait cannot block a turn. */
CKPT_WRAPPER int pthread_barrier_wait(pthread_barrier_t *b)
{
	const void *site = CALL_SITE();
	int rc = NEXT_FN(pthread_barrier_wait)(b);
	struct lock_turn t;

	if (lock_order_begin(&t, LOCK_EV_BARRIER, b, site)) {
		if (t.replaying)
			rc = t.recorded;
		lock_order_end(&t, rc);
	}
	return rc;
}
