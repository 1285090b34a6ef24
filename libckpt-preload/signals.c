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

const struct ckpt_resource_ops signal_resource_ops = {
	.name = "signal actions",
	.save = signal_save,
	.restore = signal_restore,
};
