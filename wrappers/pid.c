/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Process and thread ids as the program saw them before any restart
 * (translation in vpid/vpid.c). */
#include <signal.h>
#include <sched.h>
#include <stdarg.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/pidfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "wrappers.h"

CKPT_WRAPPER pid_t getpid(void)
{
	return vpid_getpid();
}

/* Every translation below runs WITHOUT_CHECKPOINT (wrappers.h) with its
 * system call; a signal to the caller's own process is let through (its
 * handler would run with checkpoints held off, for ever if it never
 * returns). */

CKPT_WRAPPER pid_t gettid(void)
{
	return WITHOUT_CHECKPOINT(vpid_virt_from_real(
		ckpt_syscall(SYS_gettid)));
}

CKPT_WRAPPER pid_t getppid(void)
{
	return WITHOUT_CHECKPOINT(vpid_virt_from_real(
		ckpt_syscall(SYS_getppid)));
}

/* pid > 0 names a process, < -1 a process group, 0 and -1 are special. */
static pid_t real_target(pid_t pid)
{
	if (pid > 0)
		return vpid_real_from_virt(pid);
	if (pid < -1)
		return -vpid_real_from_virt(-pid);
	return pid;
}

/* Would kill(real, ...) reach this process? (kill(-1) spares the
 * caller.) */
static int kill_reaches_self(pid_t real)
{
	pid_t self = ckpt_real_getpid();

	return real == 0 || real == self ||
	       (real < -1 && -real == ckpt_syscall(SYS_getpgid, 0));
}

/* The checkpoint signal sent to this very process (which has no handler
 * for it, or ckpt would have moved): refused. Other processes choose
 * their own checkpoint signal; to them it is an ordinary signal. */
static int reserved_signal(int sig, int reaches_self)
{
	if (sig != ckpt.signal || !reaches_self)
		return 0;
	errno = EINVAL;
	return 1;
}

/* kill's target may include the caller (its handler runs on return). */
static int may_signal_self(pid_t pid)
{
	if (pid == 0 || pid == -1 || pid == vpid_getpid())
		return 1;
	return pid < -1 && vpid_real_from_virt(-pid) ==
			   ckpt_syscall(SYS_getpgid, 0);
}

static long send_kill(pid_t pid, int sig)
{
	return ckpt_syscall(SYS_kill, real_target(pid), sig);
}

CKPT_WRAPPER int kill(pid_t pid, int sig)
{
	if (reserved_signal(sig, kill_reaches_self(real_target(pid))))
		return -1;
	if (may_signal_self(pid))
		return send_kill(pid, sig);
	return WITHOUT_CHECKPOINT(send_kill(pid, sig));
}

static long send_tgkill(pid_t tgid, pid_t tid, int sig)
{
	return ckpt_syscall(SYS_tgkill, vpid_real_from_virt(tgid),
			    vpid_real_from_virt(tid), sig);
}

CKPT_WRAPPER int tgkill(pid_t tgid, pid_t tid, int sig)
{
	if (reserved_signal(sig,
			    vpid_real_from_virt(tgid) == ckpt_real_getpid()))
		return -1;
	if (tgid == vpid_getpid())
		return send_tgkill(tgid, tid, sig);
	return WITHOUT_CHECKPOINT(send_tgkill(tgid, tid, sig));
}

static pid_t virtual_id(pid_t r)
{
	return r > 0 ? vpid_virt_from_real(r) : r;
}

/* Process groups and sessions are named by their leader's pid. */
CKPT_WRAPPER pid_t getpgid(pid_t pid)
{
	return WITHOUT_CHECKPOINT(virtual_id(ckpt_syscall(SYS_getpgid,
							  real_target(pid))));
}

CKPT_WRAPPER pid_t getpgrp(void)
{
	return WITHOUT_CHECKPOINT(virtual_id(ckpt_syscall(SYS_getpgid, 0)));
}

CKPT_WRAPPER int setpgid(pid_t pid, pid_t pgid)
{
	return WITHOUT_CHECKPOINT((int)ckpt_syscall(SYS_setpgid,
		real_target(pid), real_target(pgid)));
}

/* A computation restarted from a shell stays in the shell's session:
 * that session answers with the id the program saw (session.c). */
CKPT_WRAPPER pid_t getsid(pid_t pid)
{
	return WITHOUT_CHECKPOINT(session_virt_from_real(
		ckpt_syscall(SYS_getsid, real_target(pid))));
}

static pid_t terminal_sid(int fd)
{
	pid_t sid;

	if (ioctl(fd, TIOCGSID, &sid) < 0)
		return -1;
	return session_virt_from_real(sid);
}

CKPT_WRAPPER pid_t tcgetsid(int fd)
{
	return WITHOUT_CHECKPOINT(terminal_sid(fd));
}

CKPT_WRAPPER pid_t setsid(void)
{
	return WITHOUT_CHECKPOINT(virtual_id(ckpt_syscall(SYS_setsid)));
}

static int send_sigqueue(pid_t pid, int sig, const union sigval value)
{
	siginfo_t si = { 0 };

	si.si_signo = sig;
	si.si_code = SI_QUEUE;
	si.si_pid = ckpt_real_getpid();
	si.si_uid = getuid();
	si.si_value = value;
	return ckpt_syscall(SYS_rt_sigqueueinfo, real_target(pid), sig, &si);
}

CKPT_WRAPPER int sigqueue(pid_t pid, int sig, const union sigval value)
{
	if (reserved_signal(sig, kill_reaches_self(real_target(pid))))
		return -1;
	if (may_signal_self(pid))
		return send_sigqueue(pid, sig, value);
	return WITHOUT_CHECKPOINT(send_sigqueue(pid, sig, value));
}

static pid_t terminal_group(int fd)
{
	pid_t pgrp;

	if (ioctl(fd, TIOCGPGRP, &pgrp) < 0)
		return -1;
	return virtual_id(pgrp);
}

CKPT_WRAPPER pid_t tcgetpgrp(int fd)
{
	return WITHOUT_CHECKPOINT(terminal_group(fd));
}

static int set_terminal_group(int fd, pid_t pgrp)
{
	pid_t real = pgrp > 0 ? vpid_real_from_virt(pgrp) : pgrp;

	return ioctl(fd, TIOCSPGRP, &real);
}

CKPT_WRAPPER int tcsetpgrp(int fd, pid_t pgrp)
{
	return WITHOUT_CHECKPOINT(set_terminal_group(fd, pgrp));
}

CKPT_WRAPPER int sched_getaffinity(pid_t pid, size_t size, cpu_set_t *set)
{
	long r = WITHOUT_CHECKPOINT(ckpt_syscall(SYS_sched_getaffinity,
					real_target(pid), size, set));

	if (r < 0)
		return -1;
	/* The kernel fills r bytes; glibc clears the rest. */
	if ((size_t)r < size)
		memset((char *)set + r, 0, size - r);
	return 0;
}

CKPT_WRAPPER int sched_setaffinity(pid_t pid, size_t size,
				   const cpu_set_t *set)
{
	return WITHOUT_CHECKPOINT((int)ckpt_syscall(SYS_sched_setaffinity,
		real_target(pid), size, set));
}

CKPT_WRAPPER int pidfd_open(pid_t pid, unsigned int flags)
{
	return WITHOUT_CHECKPOINT((int)ckpt_syscall(SYS_pidfd_open,
		real_target(pid), flags));
}

/* Programs (CPython among them) also ask for ids with syscall(2). */
#undef syscall
CKPT_WRAPPER long syscall(long nr, ...)
{
	long a[6];
	va_list ap;

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	switch (nr) {
	case SYS_close:
	case SYS_close_range: {
		long closed;

		if (close_by_syscall(nr, a, CALL_SITE(), &closed))
			return closed;
		break;
	}
	case SYS_getpid:
		return getpid();
	case SYS_gettid:
		return gettid();
	case SYS_getppid:
		return getppid();
	case SYS_kill:
		return kill(a[0], a[1]);
	case SYS_tgkill:
		return tgkill(a[0], a[1], a[2]);
	case SYS_getpgid:
		return getpgid(a[0]);
	case SYS_getsid:
		return getsid(a[0]);
	case SYS_pidfd_open:
		return pidfd_open(a[0], a[1]);
	case SYS_sched_getaffinity:
	case SYS_sched_setaffinity:
		a[0] = real_target(a[0]);
		break;
	case SYS_wait4:
		return wait4(a[0], (int *)a[1], a[2], (struct rusage *)a[3]);
	case SYS_tkill:
		a[0] = vpid_real_from_virt(a[0]);
		/* a thread of this process? */
		if (reserved_signal(a[1], ckpt_syscall(SYS_tgkill,
				ckpt_real_getpid(), a[0], 0) == 0))
			return -1;
		break;
	}
	return ckpt_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
