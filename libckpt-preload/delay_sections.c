// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Critical sections of the in-process API (ckpt_delay_begin/end,
 * include/ckpt.h): a checkpoint waits until none is open, and none begins
 * while a checkpoint is in progress.
 *
 * Two words, and the order in which each side touches them, make that
 * exact without a lock: a thread beginning a section counts itself in
 * `sections_open`, then looks at `gate_closed`; the manager closes the
 * gate, then looks at the count (both sequentially consistent). Either
 * the thread sees the gate closed (and steps back out to wait), or the
 * manager sees the section (and waits for it to end). The gate stays
 * closed from the start of a round (before its before-checkpoint hooks)
 * to the end of its resume or restart hooks (hooks.c), so a section never
 * sees what a hook closed and has not reopened yet.
 */
#include <errno.h>
#include <pthread.h>
#include "../protocol/client_internal.h"
#include "internal.h"

#define DELAY_BEGIN_WAIT_MS	60000

static int gate_closed;
static int sections_open;
/* this thread's open sections (nested ones count once in sections_open) */
static __thread int depth __attribute__((tls_model("initial-exec")));

void gate_close(void)
{
	__atomic_store_n(&gate_closed, 1, __ATOMIC_SEQ_CST);
}

void gate_open(void)
{
	__atomic_store_n(&gate_closed, 0, __ATOMIC_SEQ_CST);
	ckpt_futex_wake(&gate_closed);
}

/* Until the gate is open (a checkpoint's hooks have all run), at most
 * timeout_ms: 0 or -ETIMEDOUT. */
int gate_wait_open(int timeout_ms)
{
	int64_t deadline = ckpt_cc_now_ms() + timeout_ms;

	while (__atomic_load_n(&gate_closed, __ATOMIC_SEQ_CST))
		if (ckpt_futex_wait_until(&gate_closed, 1, deadline) < 0)
			return -ETIMEDOUT;
	return 0;
}

/* The manager, gate closed: until no section is open, at most until
 * deadline_ms. Returns 0, or how many are still open. */
int sections_wait_ended(int64_t deadline_ms)
{
	int n;

	while ((n = __atomic_load_n(&sections_open, __ATOMIC_SEQ_CST)) > 0)
		if (ckpt_futex_wait_until(&sections_open, n, deadline_ms) < 0)
			return __atomic_load_n(&sections_open,
					       __ATOMIC_SEQ_CST);
	return 0;
}

static void leave_section(void)
{
	if (__atomic_sub_fetch(&sections_open, 1, __ATOMIC_SEQ_CST) == 0)
		ckpt_futex_wake(&sections_open);
}

/* A thread that ends inside its sections (pthread_exit, or its start
 * routine returned): they end with it, or every later checkpoint would
 * wait for them and fail. A thread-specific key's destructor runs then;
 * its value is set while the thread has a section open. */
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static int exit_key_made;

static void end_sections_of_exiting_thread(void *unused)
{
	(void)unused;
	if (depth <= 0)
		return;
	ckpt_log("a thread ended inside %d ckpt_delay_begin section(s); "
		 "they end with it", depth);
	depth = 0;
	leave_section();
}

static void make_exit_key(void)
{
	exit_key_made = pthread_key_create(&exit_key,
					   end_sections_of_exiting_thread) == 0;
}

static void watch_thread_exit(void *value)
{
	pthread_once(&exit_key_once, make_exit_key);
	if (exit_key_made)
		pthread_setspecific(exit_key, value);
}

int api_delay_begin(void)
{
	int64_t deadline = ckpt_cc_now_ms() + DELAY_BEGIN_WAIT_MS;

	if (!api_enabled())
		return -ENOTSUP;
	if (hooks_running_here())
		return -EDEADLK;	/* the gate opens after this hook */
	if (depth > 0) {		/* already counted: never wait */
		depth++;
		return 0;
	}
	for (;;) {
		__atomic_add_fetch(&sections_open, 1, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&gate_closed, __ATOMIC_SEQ_CST))
			break;
		leave_section();
		/* the checkpoint signal stops this thread meanwhile */
		if (ckpt_futex_wait_until(&gate_closed, 1, deadline) < 0)
			return -ETIMEDOUT;
	}
	depth = 1;
	watch_thread_exit(&depth);
	return 0;
}

int api_delay_end(void)
{
	if (!api_enabled())
		return -ENOTSUP;
	if (depth <= 0)
		return -EINVAL;
	if (--depth == 0) {
		leave_section();
		watch_thread_exit(NULL);
	}
	return 0;
}

int sections_open_here(void)
{
	return depth > 0;
}

/* A forked child has only the thread that forked: its sections alone are
 * open, and no checkpoint of the parent's is in progress here. */
void sections_after_fork_in_child(void)
{
	sections_open = depth > 0 ? 1 : 0;
	gate_closed = 0;
}
