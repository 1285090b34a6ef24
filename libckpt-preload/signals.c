/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Signal dispositions. Saved and restored through the raw rt_sigaction
 * system call so the kernel gets back exactly what it had (flags,
 * restorer), glibc's internal signals included. Per-thread masks and
 * alternate stacks travel in each thread's signal frame (threads.c).
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
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
	.restore = signal_restore,
};
