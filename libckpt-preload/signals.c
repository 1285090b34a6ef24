/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Signal dispositions. Saved and restored through the raw rt_sigaction
 * system call so the kernel gets back exactly what it had (flags,
 * restorer), glibc's internal signals included. Per-thread masks and
 * alternate stacks travel in each thread's signal frame (threads.c).
 * The image records the whole signal state for reading (signal_write).
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "image_writer.h"
#include "internal.h"

#define NSIG_KERNEL 64

struct kernel_sigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

static struct kernel_sigaction saved_actions[NSIG_KERNEL + 1];

static int signal_save(void)
{
	for (int sig = 1; sig <= NSIG_KERNEL; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		if (syscall(SYS_rt_sigaction, sig, NULL, &saved_actions[sig],
			    8) < 0)
			return -errno;
	}
	return 0;
}

static int signal_restore(const struct ckpt_restart_args *args)
{
	(void)args;
	for (int sig = 1; sig <= NSIG_KERNEL; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP)
			continue;
		if (syscall(SYS_rt_sigaction, sig, &saved_actions[sig], NULL,
			    8) < 0)
			ckpt_log("cannot restore the action of signal %d: %s",
				 sig, strerror(errno));
	}
	return 0;
}

/*
 * The signal state for the image (struct ckpt_signal_state), in the
 * program's terms: the checkpoint signal's disposition is the one the
 * program set (libckpt's handler is not its), a handler's mask holds the
 * checkpoint signal when the program asked for it, a thread's mask is
 * the one its signal frame restores. Only read by ckpt_inspect: a
 * restart restores signals from saved_actions and the frames.
 */
static uint64_t sig_bit(int sig)
{
	return sig > 0 && sig <= NSIG_KERNEL ? 1ULL << (sig - 1) : 0;
}

static void record_action(struct ckpt_signal_action *a, int sig)
{
	const struct kernel_sigaction *ka = &saved_actions[sig];

	memset(a, 0, sizeof(*a));
	if (sig == SIGKILL || sig == SIGSTOP)
		return;
	if (sig == ckpt.signal) {
		a->handler = (uintptr_t)
			ckpt_signal_program_action(sig)->sa_handler;
		return;
	}
	a->handler = (uintptr_t)ka->handler;
	a->flags = ka->flags;
	signal_program_view(sig, &a->handler, &a->flags);
	a->restorer = (uintptr_t)ka->restorer;
	a->mask = ka->mask & ~sig_bit(ckpt.signal);
	if (ckpt_signal_handler_masks(sig))
		a->mask |= sig_bit(ckpt.signal);
}

/* The mask a stopped thread's signal frame restores, as the program
 * sees it (its wish for the checkpoint signal, which the kernel's copy
 * never holds: threads.c took it in the thread); for the manager, which
 * stopped by a call, libckpt's own mask when it is the caller. */
static uint64_t thread_blocked(const struct ckpt_thread *t)
{
	uint64_t mask = 0;

	if (t->uc)
		return t->program_mask;
	if (t->real_tid == ckpt_real_gettid())
		syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &mask, 8);
	return mask;
}

static int signal_write(struct image_writer *w)
{
	struct ckpt_signal_state *st = table_push(&w->signal_state);

	if (!st)
		return -ENOMEM;
	memset(st, 0, sizeof(*st));
	for (int sig = 1; sig <= NSIG_KERNEL; sig++)
		record_action(&st->action[sig - 1], sig);
	st->process_pending = pending_process_mask();
	for (int i = 0; i <= threads_count(); i++) {
		const struct ckpt_thread *t = threads_get(i);
		struct ckpt_thread_signals *ts = table_push(&w->thread_signals);

		if (!ts)
			return -ENOMEM;
		memset(ts, 0, sizeof(*ts));
		ts->vtid = t->vtid;
		ts->blocked = thread_blocked(t);
		ts->pending = pending_signals_mask(&t->pending);
	}
	return 0;
}

/*
 * qemu-user returns from a guest's signal handler through a trampoline
 * on a page of its own in the guest's address space, placed where its
 * run found room. A restart runs a new qemu, whose page lands elsewhere,
 * possibly where the image's memory goes (the main stack's top page,
 * with the restart loader's layout): the image replaces it, and the
 * first handler to return jumps into data (SIGSEGV, SEGV_ACCERR at a
 * page start). Under an emulator every action with a handler returns
 * through libckpt's trampoline instead (SA_RESTORER, which qemu
 * follows), which the image carries at the same address.
 */
#define KERNEL_SA_RESTORER 0x04000000	/* x86_64 and aarch64 */

void signals_return_through_libckpt(int sig)
{
	struct kernel_sigaction ka;
	int e = errno;

	if (!emulator_active() || sig == SIGKILL || sig == SIGSTOP ||
	    syscall(SYS_rt_sigaction, sig, NULL, &ka, 8) < 0 ||
	    ka.handler == SIG_DFL || ka.handler == SIG_IGN ||
	    ((ka.flags & KERNEL_SA_RESTORER) &&
	     ka.restorer == (void *)ckpt_sigreturn_trampoline)) {
		errno = e;
		return;
	}
	ka.flags |= KERNEL_SA_RESTORER;
	ka.restorer = (void *)ckpt_sigreturn_trampoline;
	if (syscall(SYS_rt_sigaction, sig, &ka, NULL, 8) < 0)
		ckpt_log("signal %d: cannot set its handler's return "
			 "trampoline: %s", sig, strerror(errno));
	errno = e;
}

void signals_all_return_through_libckpt(void)
{
	for (int sig = 1; sig <= NSIG_KERNEL; sig++)
		signals_return_through_libckpt(sig);
}

const struct ckpt_resource_ops signal_resource_ops = {
	.name = "signal actions",
	.save = signal_save,
	.write = signal_write,
	.restore = signal_restore,
};
