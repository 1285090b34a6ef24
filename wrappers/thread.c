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
};

static void *start_with_creators_wish(void *p)
{
	struct thread_start start = *(struct thread_start *)p;

	free(p);
	ckpt_signal_inherit_blocked(start.blocked_signal);
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

CKPT_WRAPPER int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
				void *(*fn)(void *), void *arg)
{
	struct thread_start *start;
	int blocked = ckpt_signal_blocked_here(), r;

	if (!blocked)
		return NEXT_FN(pthread_create)(thread, attr, fn, arg);
	start = malloc(sizeof(*start));
	if (!start)
		return EAGAIN;
	start->fn = fn;
	start->arg = arg;
	start->blocked_signal = blocked;
	r = NEXT_FN(pthread_create)(thread, attr, start_with_creators_wish,
				    start);
	if (r)
		free(start);
	return r;
}
