/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * fork: a new child is known by its real pid as its virtual pid. After a
 * restart the kernel may hand a child a real pid that is already the
 * virtual pid of a restored process (whose real pid is another one):
 * both would answer to that pid. Such a child exits at once, before it
 * runs anything of the program (manager.c, after_fork_in_child), and the
 * fork is made again, as DMTCP does.
 */
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "wrappers.h"

#define FORK_TRIES 64

DEFINE_NEXT(fork);

CKPT_EARLY_CONSTRUCTOR static void resolve_next_fork(void)
{
	RESOLVE_NEXT(fork);
}

/* In the parent: 1 when the new child's pid is another's virtual pid.
 * Restarted since the fork: the child was restored (or recreated as a
 * zombie) under this pid, which is its virtual pid now, and no clash. */
static int child_pid_clashes(pid_t pid, unsigned epoch)
{
	/* no checkpoint between the epoch and the table, without the two
	 * system calls of blocking signals (docs/performance.md) */
	unsigned moves = threads_critical_begin();
	int clash = 0;

	if (vpid_epoch() == epoch) {
		vpid_forget_real(pid); /* what had this pid is gone */
		clash = vpid_taken_by_another(pid);
	}
	threads_critical_end(moves);
	return clash;
}

CKPT_WRAPPER pid_t fork(void)
{
	unsigned epoch;
	pid_t pid;

	for (int tries = 1;; tries++) {
		epoch = vpid_epoch();
		pid = NEXT_FN(fork)();
		if (pid <= 0 || !child_pid_clashes(pid, epoch))
			return pid;
		/* the child left at once: reap it, out of the program's
		 * sight (its SIGCHLD may still reach a handler) */
		syscall(SYS_wait4, pid, NULL, __WALL, NULL);
		if (tries == FORK_TRIES) {
			ckpt_log("fork: %d children in a row got a pid that "
				 "a restored process has; giving up",
				 FORK_TRIES);
			errno = EAGAIN;
			return -1;
		}
	}
}
