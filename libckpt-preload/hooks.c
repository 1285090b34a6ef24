// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Event hooks of the in-process API (ckpt_hook_add, include/ckpt.h) and
 * the part of a checkpoint round that belongs to the program: wait for
 * its critical sections (delay_sections.c), run its before-checkpoint
 * hooks, and after the round its resume or restart hooks.
 *
 * Hooks run on one thread of their own, the hook thread, made when the
 * first hook is added: an ordinary thread of the program (it is stopped,
 * saved and restored like the others), so a hook may call malloc, take
 * the program's locks, or keep a lock from the before-checkpoint hook to
 * the resume or restart hook. Before-checkpoint hooks run before any
 * thread is stopped, so a lock another thread holds is released as
 * usual; the manager waits for them at most the round's budget, then
 * fails the round instead of stopping a process whose hook did not
 * finish. Resume and restart hooks run once every thread runs again;
 * the manager does not wait for them.
 *
 * The manager posts events to the hook thread through a small ring: it
 * never posts a before-checkpoint event until the hook thread has done
 * every earlier one, so at most two are outstanding.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include "ckpt.h"
#include "../protocol/client_internal.h"
#include "internal.h"

#define MAX_HOOKS		64
#define RING			4
#define IDLE_WAIT_MS		60000
#define ROUND_BUDGET_DEFAULT_MS	2500

struct hook {
	int event;
	ckpt_hook_fn fn;
	void *arg;
};

static struct hook hooks[MAX_HOOKS];
static int nhooks;			/* published with release */
static pthread_mutex_t add_lock = PTHREAD_MUTEX_INITIALIZER;

static int ring[RING];
static int posted, done;		/* event counts */
static int thread_started;
static pthread_t hook_thread;
/* a before-checkpoint event was posted and its resume or restart event
 * not yet */
static int round_open;

int hooks_running_here(void)
{
	return __atomic_load_n(&thread_started, __ATOMIC_ACQUIRE) &&
	       pthread_equal(pthread_self(), hook_thread);
}

static void run_hooks(int event)
{
	int n = __atomic_load_n(&nhooks, __ATOMIC_ACQUIRE);

	if (event == CKPT_EVENT_BEFORE_CHECKPOINT) {
		for (int i = 0; i < n; i++)
			if (hooks[i].event == event)
				hooks[i].fn((enum ckpt_event)event, hooks[i].arg);
		return;
	}
	for (int i = n - 1; i >= 0; i--)
		if (hooks[i].event == event)
			hooks[i].fn((enum ckpt_event)event, hooks[i].arg);
}

static void *hook_thread_main(void *unused)
{
	(void)unused;
	prctl(PR_SET_NAME, "ckpt-hooks");
	for (;;) {
		int d = __atomic_load_n(&done, __ATOMIC_ACQUIRE);
		int p = __atomic_load_n(&posted, __ATOMIC_ACQUIRE);
		int event;

		if (d == p) {
			/* idle: a checkpoint stops this thread here */
			ckpt_futex_wait_until(&posted, p,
					      ckpt_cc_now_ms() + IDLE_WAIT_MS);
			continue;
		}
		event = ring[d % RING];
		run_hooks(event);
		if (event != CKPT_EVENT_BEFORE_CHECKPOINT)
			gate_open();
		__atomic_store_n(&done, d + 1, __ATOMIC_RELEASE);
		ckpt_futex_wake(&done);
	}
	return NULL;
}

/* The hook thread takes only the checkpoint signal; the signal lock keeps
 * that signal from moving while the thread is made with it unblocked. */
static int start_hook_thread(void)
{
	pthread_attr_t attr;
	uint64_t old;
	int r;

	if (__atomic_load_n(&thread_started, __ATOMIC_ACQUIRE))
		return 0;
	threads_lock_signal(&old);
	threads_set_mask(~(1ULL << (ckpt.signal - 1)));
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = ckpt_real_pthread_create(&hook_thread, &attr, hook_thread_main,
				     NULL);
	pthread_attr_destroy(&attr);
	if (r == 0)
		__atomic_store_n(&thread_started, 1, __ATOMIC_RELEASE);
	threads_unlock_signal();
	threads_set_mask(old);
	return -r;
}

int api_hook_add(enum ckpt_event event, ckpt_hook_fn fn, void *arg)
{
	int r = 0;

	if (!api_enabled())
		return -ENOTSUP;
	if (!fn || event < CKPT_EVENT_BEFORE_CHECKPOINT ||
	    event > CKPT_EVENT_RESTART)
		return -EINVAL;
	pthread_mutex_lock(&add_lock);
	if (nhooks >= MAX_HOOKS) {
		r = -ENOSPC;
	} else {
		r = start_hook_thread();
		if (r == 0) {
			hooks[nhooks] = (struct hook){ event, fn, arg };
			__atomic_store_n(&nhooks, nhooks + 1,
					 __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&add_lock);
	return r;
}

static int round_budget_ms(void)
{
	return ckpt.coord_phase_ms ? (int)(ckpt.coord_phase_ms / 2)
				   : ROUND_BUDGET_DEFAULT_MS;
}

static void post(int event)
{
	int p = __atomic_load_n(&posted, __ATOMIC_ACQUIRE);

	ring[p % RING] = event;
	__atomic_store_n(&posted, p + 1, __ATOMIC_RELEASE);
	ckpt_futex_wake(&posted);
}

/* Until the hook thread has done every event posted, at most until
 * deadline_ms. */
static int wait_hooks_done(int64_t deadline_ms)
{
	int d;

	while ((d = __atomic_load_n(&done, __ATOMIC_ACQUIRE)) !=
	       __atomic_load_n(&posted, __ATOMIC_ACQUIRE))
		if (ckpt_futex_wait_until(&done, d, deadline_ms) < 0)
			return -ETIMEDOUT;
	return 0;
}

/* The round ends for the program: its resume or restart hooks run (and
 * then the gate opens), or, without hooks, the gate opens now. */
static void end_round(int event)
{
	if (!__atomic_exchange_n(&round_open, 0, __ATOMIC_ACQ_REL))
		return;
	if (__atomic_load_n(&nhooks, __ATOMIC_ACQUIRE))
		post(event);
	else
		gate_open();
}

/*
 * At DO_SUSPEND, before any thread is stopped: wait for the program's
 * critical sections to end, then run its before-checkpoint hooks, all
 * within half the coordinator's suspend phase. -EBUSY (err says what
 * held it) fails the round; the program runs on.
 */
int hooks_round_begin(char *err, size_t errlen)
{
	int budget = round_budget_ms(), n, r;
	int64_t deadline = ckpt_cc_now_ms() + budget;

	if (__atomic_load_n(&nhooks, __ATOMIC_ACQUIRE)) {
		r = start_hook_thread();	/* a forked child's */
		if (r < 0) {
			ckpt_fmt(err, errlen, "cannot start the hook thread: "
				 "%s", strerror(-r));
			return r;
		}
		if (wait_hooks_done(deadline) < 0) {
			ckpt_fmt(err, errlen, "the hooks of the previous "
				 "checkpoint did not finish within %d ms",
				 budget);
			return -EBUSY;
		}
	}
	gate_close();
	__atomic_store_n(&round_open, 1, __ATOMIC_RELEASE);
	n = sections_wait_ended(deadline);
	if (n > 0) {	/* no hook ran: none is owed one */
		ckpt_fmt(err, errlen, "%d critical section(s) "
			 "(ckpt_delay_begin) did not end within %d ms", n,
			 budget);
		__atomic_store_n(&round_open, 0, __ATOMIC_RELEASE);
		gate_open();
		return -EBUSY;
	}
	if (!__atomic_load_n(&nhooks, __ATOMIC_ACQUIRE))
		return 0;
	post(CKPT_EVENT_BEFORE_CHECKPOINT);
	if (wait_hooks_done(deadline) < 0) {
		ckpt_fmt(err, errlen, "the before-checkpoint hooks did not "
			 "finish within %d ms", budget);
		end_round(CKPT_EVENT_RESUME);
		return -EBUSY;
	}
	return 0;
}

/* Every thread was released after the round (written or failed). */
void hooks_round_resumed(void)
{
	end_round(CKPT_EVENT_RESUME);
}

/* In a restarted process, once it is whole and has rejoined. */
void hooks_round_restarted(void)
{
	end_round(CKPT_EVENT_RESTART);
}

/* A forked child: the parent's hooks stay registered, its hook thread
 * did not come along (the next round makes one) and its events are not
 * the child's. */
void hooks_after_fork_in_child(void)
{
	thread_started = 0;
	posted = done = 0;
	round_open = 0;
	pthread_mutex_init(&add_lock, NULL);
}
