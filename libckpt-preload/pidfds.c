/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pidfds (CKPT_FD_PIDFD; event_fds.c lists the kind). docs/resources.md
 * tells the story:
 *
 *   checkpoint (threads stopped): the process each one refers to, from
 *   /proc/self/fdinfo/N ("Pid:", -1 once it was reaped), kept by its
 *   virtual pid, or as ended (reaped, or a zombie). One that refers to
 *   a process neither this one, its parent nor one of its children is
 *   said: the restart cannot tell that process is still the same.
 *
 *   restart, inside the restarted process (its processes all exist by
 *   then, the plan maps their pids): pidfd_open of the restarted process
 *   with that virtual pid; for an ended one, or one not restarted, a
 *   pidfd of a child made to end at once and reaped: readable, as the
 *   pidfd of an ended process is.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "internal.h"

#ifndef CLONE_PIDFD
#define CLONE_PIDFD	0x00001000
#endif
#ifndef P_PIDFD
#define P_PIDFD		3
#endif
#define PIDFD_THREAD	O_EXCL		/* pidfd_open: a thread's */

#define PIDFDS_MAX	1024

struct saved_pidfd {
	int fd;
	pid_t vpid;			/* the process; -1: it had ended */
	int flags;			/* PIDFD_THREAD */
};

static struct saved_pidfd saved[PIDFDS_MAX];
static int nsaved;

void pidfds_begin(void)
{
	nsaved = 0;
}

static struct saved_pidfd *find(int fd)
{
	for (int i = 0; i < nsaved; i++)
		if (saved[i].fd == fd)
			return &saved[i];
	return NULL;
}

/* "Pid:\tN" of fd's fdinfo, or -errno (-ENOENT: no such line). */
static int fdinfo_pid(int fd, pid_t *pid)
{
	char path[64], buf[1024], *p;
	int n;

	ckpt_fmt(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	n = ckpt_read_small_file(path, buf, sizeof(buf));
	if (n < 0)
		return n;
	p = strstr(buf, "\nPid:");
	if (!p)
		return -ENOENT;
	*pid = (pid_t)strtol(p + 5, NULL, 10);
	return 0;
}

/* A zombie (or dying) process: state Z or X in /proc/PID/stat. */
static int has_ended(pid_t pid)
{
	char path[64], buf[512], *p;

	ckpt_fmt(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (ckpt_read_small_file(path, buf, sizeof(buf)) <= 0)
		return 1;
	p = strrchr(buf, ')');
	return !p || p[2] == 'Z' || p[2] == 'X';
}

/* Its parent's real pid, or 0. */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *p;

	ckpt_fmt(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (ckpt_read_small_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	p = strrchr(buf, ')');
	return p && p[1] ? (pid_t)strtol(p + 4, NULL, 10) : 0;
}

static int is_close_kin(pid_t pid)
{
	pid_t self = ckpt_real_getpid();

	return pid == self || parent_of(pid) == self ||
	       pid == (pid_t)syscall(SYS_getppid);
}

/* Read what pidfd fd refers to. 0 or -errno. */
int pidfds_save(int fd)
{
	struct saved_pidfd *s = &saved[nsaved];
	pid_t pid = 0;
	int r = fdinfo_pid(fd, &pid);

	if (r < 0)
		return r;
	if (pid == 0)
		return -EXDEV;		/* in another pid namespace */
	if (nsaved == PIDFDS_MAX)
		return -E2BIG;
	s->fd = fd;
	s->flags = fcntl(fd, F_GETFL) & PIDFD_THREAD;
	s->vpid = pid < 0 || has_ended(pid) ? -1 : vpid_virt_from_real(pid);
	if (s->vpid > 0 && !is_close_kin(pid))
		unrestored_add("fd %d: a pidfd of process %d, neither this "
			       "process, its parent nor its child: a restart "
			       "keeps it only if that process is restarted "
			       "with it, else it comes back as the pidfd of an "
			       "ended process", fd, (int)s->vpid);
	nsaved++;
	return 0;
}

/* Its vpid (-1: ended) and whether it had ended, for the image record. */
void pidfds_describe(int fd, int64_t *vpid, uint32_t *ended)
{
	const struct saved_pidfd *s = find(fd);

	*vpid = s ? s->vpid : -1;
	*ended = s ? s->vpid < 0 : 0;
}

/* A pidfd of a process that has ended and been reaped: a child of ours
 * that exits at once, with no exit signal (the program hears nothing). */
static int ended_pidfd(void)
{
	int pidfd = -1;
	siginfo_t si;
	long pid = syscall(SYS_clone, CLONE_PIDFD, 0, &pidfd, NULL, 0);

	if (pid < 0)
		return -errno;
	if (pid == 0)
		syscall(SYS_exit, 0);
	while (syscall(SYS_waitid, P_PIDFD, pidfd, &si, WEXITED | __WALL,
		       NULL) < 0 && errno == EINTR)
		;
	return pidfd;
}

/* A new pidfd for saved fd (any number, close-on-exec), or -errno. */
int pidfds_restore(int fd)
{
	const struct saved_pidfd *s = find(fd);
	int r;

	if (!s)
		return -ENOENT;
	if (s->vpid > 0 && (s->vpid == ckpt.vpid || vpid_known(s->vpid))) {
		pid_t real = s->vpid == ckpt.vpid ? ckpt_real_getpid() :
						     vpid_real_from_virt(s->vpid);

		r = syscall(SYS_pidfd_open, real, s->flags);
		if (r >= 0) {
			fcntl(r, F_SETFD, FD_CLOEXEC);
			return r;
		}
		ckpt_log("fd %d (pidfd of process %d): pidfd_open failed: %s; "
			 "it comes back as the pidfd of an ended process", fd,
			 (int)s->vpid, strerror(errno));
	} else if (s->vpid > 0) {
		ckpt_log("fd %d (pidfd of process %d): that process is not "
			 "restarted with this one; it comes back as the pidfd "
			 "of an ended process", fd, (int)s->vpid);
	}
	r = ended_pidfd();
	if (r >= 0)
		fcntl(r, F_SETFD, FD_CLOEXEC);
	return r;
}
