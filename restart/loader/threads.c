// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The loader's own helper threads (raw clone, a stack in the work area,
 * no TLS of their own): the decompressors (extent_decode.c) and the
 * patcher of a chain's changed pages (extent_patch.c). Each has exited
 * and been joined before the next step, so none exists at the hand-off.
 */
#include <linux/futex.h>
#include <linux/sched.h>
#include "loader.h"

#define JOIN_TIMEOUT_S		120

/* 1 if fn(arg) runs in a thread of its own; 0 if it could not start
 * (the caller does the work itself). */
int loader_thread_start(struct loader_thread *t, void (*fn)(void *),
			void *arg)
{
	const unsigned long flags = CLONE_VM | CLONE_FS | CLONE_FILES |
		CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
		CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
	long tid = arch_clone_thread(flags, t->stack_top, &t->tid, fn, arg);

	if (tid < 0)
		t->tid = 0;
	return tid >= 0;
}

/* Wait for the thread to exit (the kernel clears t->tid), at most
 * JOIN_TIMEOUT_S; `what` names it in the error. */
void loader_thread_join(struct loader_thread *t, const char *what)
{
	struct { long sec, nsec; } second = { 1, 0 };
	int tid;

	for (int s = 0; s < JOIN_TIMEOUT_S &&
			(tid = __atomic_load_n(&t->tid, __ATOMIC_ACQUIRE)); s++)
		__syscall6(__NR_futex, (long)&t->tid, FUTEX_WAIT, tid,
			   (long)&second, 0, 0);
	if (__atomic_load_n(&t->tid, __ATOMIC_ACQUIRE))
		loader_fail("%s did not finish in %d s", what, JOIN_TIMEOUT_S);
}
