/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A new thread starts with its creator's mask, but the bit of the
 * checkpoint signal in the program's view of it is kept per thread
 * (libckpt-preload/ckpt_signal.c): a creator that blocked it passes that
 * on here.
 */
#include <pthread.h>
#include <stdlib.h>
#include "wrappers.h"

DEFINE_NEXT(pthread_create);

CKPT_EARLY_CONSTRUCTOR static void resolve_next_thread(void)
{
	RESOLVE_NEXT(pthread_create);
}

struct thread_start {
	void *(*fn)(void *);
	void *arg;
	int blocked_signal;	/* the checkpoint signal the creator blocked */
	uint32_t number;	/* its number in the lock order (lock_order.c) */
};

static void *start_with_creators_wish(void *p)
{
	struct thread_start start = *(struct thread_start *)p;

	free(p);
	ckpt_signal_inherit_blocked(start.blocked_signal);
	lock_order_name_thread(start.number);
	return start.fn(start.arg);
}

/* libckpt's own threads (the manager) set their part of the masks
 * themselves: no wish to carry, and no malloc here nor free in the new
 * thread, whose first free would give it a malloc arena of its own. */
int ckpt_real_pthread_create(pthread_t *thread, const pthread_attr_t *attr,
			     void *(*fn)(void *), void *arg)
{
	return NEXT_FN(pthread_create)(thread, attr, fn, arg);
}

static int create_with_wish(pthread_t *thread, const pthread_attr_t *attr,
			    struct thread_start *start)
{
	int r = NEXT_FN(pthread_create)(thread, attr, start_with_creators_wish,
					start);

	if (r)
		free(start);
	return r;
}

/* The creation is a lock event when the lock order is recorded: the new
 * thread's number is the event's, the same in a replay. */
CKPT_WRAPPER int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
				void *(*fn)(void *), void *arg)
{
	struct thread_start *start;
	struct lock_turn t;
	int blocked = ckpt_signal_blocked_here(), ordered;

	ordered = lock_order_begin(&t, LOCK_EV_CREATE, (void *)fn,
				   CALL_SITE());
	if (!blocked && !ordered)
		return NEXT_FN(pthread_create)(thread, attr, fn, arg);
	start = malloc(sizeof(*start));
	if (!start) {
		if (ordered)
			lock_order_end(&t, EAGAIN);
		return EAGAIN;
	}
	start->fn = fn;
	start->arg = arg;
	start->blocked_signal = blocked;
	start->number = 0;
	if (!ordered)
		return create_with_wish(thread, attr, start);
	/* the event is done (and numbered) before the thread starts */
	start->number = lock_order_end(&t, 0) + 1;
	return create_with_wish(thread, attr, start);
}
