/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Waiting for children by the pids the program saw: the pid or process
 * group asked for is translated to the real one, the pid that comes back
 * to the virtual one (vpid/vpid.c). A wait a checkpoint interrupted is
 * retried.
 */
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "wrappers.h"

/* pid > 0 names a child, < -1 a process group, 0 and -1 are special. */
static pid_t real_wait_target(pid_t pid)
{
	if (pid > 0)
		return vpid_real_from_virt(pid);
	if (pid < -1)
		return -vpid_real_from_virt(-pid);
	return pid;
}

/*
 * A restart may fall anywhere in these wrappers. In the wait itself, the
 * restarted thread waits again for the child's new real pid
 * (libckpt-preload/threads.c). Between translating the pid and the
 * system call, the kernel is asked about the old real pid and answers
 * ECHILD: asked again, translated anew. Between the system call and
 * translating its answer, the answer is a real pid of the run before.
 */
static int restarted_since(int r, unsigned epoch)
{
	return r < 0 && errno == ECHILD && vpid_epoch() != epoch;
}

CKPT_WRAPPER pid_t wait4(pid_t pid, int *status, int options,
			 struct rusage *usage)
{
	unsigned epoch;
	int r;

	do {
		epoch = vpid_epoch();
		r = RETRY_IF_CHECKPOINTED_RESTARTABLE((int)ckpt_syscall(SYS_wait4,
			real_wait_target(pid), status, options, usage));
	} while (restarted_since(r, epoch));
	return r > 0 ? vpid_virt_from_real_since(r, epoch) : r;
}

CKPT_WRAPPER pid_t waitpid(pid_t pid, int *status, int options)
{
	return wait4(pid, status, options, NULL);
}

CKPT_WRAPPER pid_t wait(int *status)
{
	return wait4(-1, status, 0, NULL);
}

CKPT_WRAPPER pid_t wait3(int *status, int options, struct rusage *usage)
{
	return wait4(-1, status, options, usage);
}

CKPT_WRAPPER int waitid(idtype_t idtype, id_t id, siginfo_t *info,
			int options)
{
	int by_pid = idtype == P_PID || idtype == P_PGID, r;
	unsigned epoch;

	do {
		epoch = vpid_epoch();
		r = RETRY_IF_CHECKPOINTED_RESTARTABLE((int)ckpt_syscall(SYS_waitid, idtype,
			by_pid ? (id_t)vpid_real_from_virt(id) : id, info,
			options, NULL));
	} while (restarted_since(r, epoch));
	if (r == 0 && info && info->si_pid > 0)
		info->si_pid = vpid_virt_from_real_since(info->si_pid, epoch);
	return r;
}
