/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Locks the process holds on its files: fcntl record locks (POSIX) and
 * flock locks. The kernel drops them with the killed process; a restarted
 * program that held one would run believing it still does while another
 * process takes it (two sqlite writers, two runs of a job guarded by
 * flock(1)).
 *
 *   checkpoint (DO_SUSPEND, after files.c listed the fds): the kernel's
 *   table /proc/locks lists every lock with its holder's pid and the
 *   file's device and inode: one read, not one per fd. This process's
 *   locks go into a table in libckpt's memory, which the image keeps.
 *
 *   restart (before the restart barrier: no program of the restart runs
 *   yet, so none takes a lock that one of them held): each lock is taken
 *   again on its fd, without waiting; a holder from outside the
 *   computation (it took the lock while the computation was down) is
 *   waited for at most LOCK_RETAKE_MS, then named on stderr, and the
 *   process runs without that lock.
 *
 * An flock lock belongs to the open file description: the process that
 * took it holds it (its pid is the one listed) and takes it again; the
 * description is restored shared, as it was. Open file description locks
 * (F_OFD_SETLK) list no pid (-1) in /proc/locks: for a file this process
 * has open with one on it, the fd's own /proc/self/fdinfo lists the locks
 * of that description, taken again with F_OFD_SETLK on it. Waiters (a
 * process blocked in F_SETLKW) hold nothing: their call is interrupted
 * and retried. No malloc (threads stopped).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include "ckpt/proc_stat.h"
#include "internal.h"

#define LOCKS_CHUNK	16384
#define LOCKS_MAX	256
#define LOCK_RETAKE_MS	2000
#define LOCK_POLL_MS	10

static char chunk[LOCKS_CHUNK + 1];

enum lock_kind { LOCK_POSIX, LOCK_FLOCK, LOCK_OFD };

struct held_lock {
	int fd;
	int kind;		/* enum lock_kind */
	short type;		/* F_RDLCK, F_WRLCK */
	int64_t start, len;	/* POSIX: bytes, len 0 = to the end */
};

static struct held_lock held[LOCKS_MAX];
static int nheld, told_full;

static void add(int fd, int kind, const char *path, const char *access,
		const char *start, const char *end)
{
	if (nheld == LOCKS_MAX) {
		if (!told_full++)
			unrestored_add("fd %d (%s): more than %d locks held: "
				       "this one and later ones are not "
				       "restored", fd, path, LOCKS_MAX);
		return;
	}
	held[nheld] = (struct held_lock){
		.fd = fd,
		.kind = kind,
		.type = !strcmp(access, "WRITE") ? F_WRLCK : F_RDLCK,
		.start = strtoll(start, NULL, 10),
		.len = !strcmp(end, "EOF") ? 0 :
		       strtoll(end, NULL, 10) - strtoll(start, NULL, 10) + 1,
	};
	nheld++;
}

/* Split a lock line ("1: POSIX  ADVISORY  WRITE 2135 fe:00:1100 0 EOF")
 * into its 8 fields; 0 when it is not one (or a waiter, "1: -> ..."). */
static int fields(char *line, char *f[8])
{
	char *save = NULL, *tok;
	int n = 0;

	if (strstr(line, "->"))
		return 0;
	for (tok = strtok_r(line, " \t", &save); tok && n < 8;
	     tok = strtok_r(NULL, " \t", &save))
		f[n++] = tok;
	return n == 8;
}

/* The OFD locks of fd's description: "lock:\t1: OFDLCK ..." lines of
 * its fdinfo. */
static void ofd_locks_of(int fd, const char *path)
{
	static char info[4096];
	char name[64], *line, *nl, *f[8];

	ckpt_fmt(name, sizeof(name), "/proc/self/fdinfo/%d", fd);
	if (ckpt_proc_read(name, info, sizeof(info)) < 0)
		return;
	for (line = info; line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		if (!strncmp(line, "lock:", 5) && fields(line + 5, f) &&
		    !strcmp(f[1], "OFDLCK"))
			add(fd, LOCK_OFD, path, f[3], f[6], f[7]);
	}
}

/* An OFD lock on a file: each fd of this process on it looks at its own
 * (the kernel lists no pid for these). Once per file and round. */
static uint64_t ofd_done_dev, ofd_done_ino;	/* the last file looked at */

static void ofd_line(uint64_t dev, uint64_t ino)
{
	const char *path;
	int from = 0, fd, flags;

	if (dev == ofd_done_dev && ino == ofd_done_ino)
		return;
	ofd_done_dev = dev;
	ofd_done_ino = ino;
	while ((fd = files_fd_of_inode(dev, ino, &from, &path, &flags)) >= 0)
		ofd_locks_of(fd, path);
}

/* An fd of the file to take a lock on again: for a POSIX lock, one open
 * for writing (a write lock) or reading (a read lock), as fcntl wants;
 * else the first. */
static int posix_fd(uint64_t dev, uint64_t ino, int write, const char **path)
{
	int from = 0, first = -1, fd, flags;
	const char *first_path = NULL;

	while ((fd = files_fd_of_inode(dev, ino, &from, path, &flags)) >= 0) {
		int mode = flags & O_ACCMODE;

		if (first < 0) {
			first = fd;
			first_path = *path;
		}
		if (mode == O_RDWR || mode == (write ? O_WRONLY : O_RDONLY))
			return fd;
	}
	*path = first_path;
	return first;
}

/* One line of /proc/locks: this process's POSIX and flock locks, the
 * files with an OFD lock. */
static void one_line(char *line, pid_t pid)
{
	unsigned int major, minor;
	unsigned long long ino;
	const char *path;
	char *f[8];
	int fd;

	if (!fields(line, f) || sscanf(f[5], "%x:%x:%llu", &major, &minor,
				       &ino) != 3)
		return;
	if (!strcmp(f[1], "OFDLCK")) {
		ofd_line(makedev(major, minor), ino);
		return;
	}
	if ((strcmp(f[1], "POSIX") && strcmp(f[1], "FLOCK")) ||
	    atoi(f[4]) != pid)
		return;
	fd = posix_fd(makedev(major, minor), ino, !strcmp(f[3], "WRITE"),
		      &path);
	if (fd >= 0)
		add(fd, !strcmp(f[1], "FLOCK") ? LOCK_FLOCK : LOCK_POSIX,
		    path, f[3], f[6], f[7]);
}

/* After files.c listed the fds (DO_SUSPEND): the locks of this process
 * on any of them. */
void file_locks_note(void)
{
	pid_t pid = ckpt_real_getpid();
	size_t have = 0;
	int fd = open("/proc/locks", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	nheld = 0;
	told_full = 0;
	ofd_done_dev = ofd_done_ino = 0;
	if (fd < 0)
		return;
	while ((n = read(fd, chunk + have, LOCKS_CHUNK - have)) > 0) {
		char *line = chunk, *nl;

		have += (size_t)n;
		chunk[have] = 0;
		while ((nl = strchr(line, '\n'))) {
			*nl = 0;
			one_line(line, pid);
			line = nl + 1;
		}
		have -= (size_t)(line - chunk);
		memmove(chunk, line, have);
		if (have == LOCKS_CHUNK)	/* a line longer than all */
			have = 0;
	}
	close(fd);
}

static struct flock range_of(const struct held_lock *h)
{
	return (struct flock){
		.l_type = h->type,
		.l_whence = SEEK_SET,
		.l_start = h->start,
		.l_len = h->len,
	};
}

static int take(const struct held_lock *h)
{
	struct flock fl = range_of(h);

	if (h->kind == LOCK_FLOCK)
		return flock(h->fd, (h->type == F_WRLCK ? LOCK_EX : LOCK_SH) |
				    LOCK_NB) < 0 ? -errno : 0;
	return fcntl(h->fd, h->kind == LOCK_OFD ? F_OFD_SETLK : F_SETLK,
		     &fl) < 0 ? -errno : 0;
}

/* Who holds what keeps h from being taken (POSIX only), for the
 * message; 0 if unknown. */
static pid_t holder(const struct held_lock *h)
{
	struct flock fl = range_of(h);

	if (h->kind == LOCK_FLOCK ||
	    fcntl(h->fd, h->kind == LOCK_OFD ? F_OFD_GETLK : F_GETLK, &fl) < 0 ||
	    fl.l_type == F_UNLCK)
		return 0;
	return fl.l_pid;
}

static void say_not_taken(const struct held_lock *h, int err)
{
	char what[128];
	pid_t by = err == -EAGAIN || err == -EWOULDBLOCK ? holder(h) : 0;

	if (h->kind == LOCK_FLOCK)
		ckpt_fmt(what, sizeof(what), "its flock %s lock",
			 h->type == F_WRLCK ? "exclusive" : "shared");
	else if (h->len)
		ckpt_fmt(what, sizeof(what), "its %s %s lock on bytes "
			 "%lld to %lld", h->kind == LOCK_OFD ? "OFD" : "POSIX",
			 h->type == F_WRLCK ? "write" : "read",
			 (long long)h->start,
			 (long long)(h->start + h->len - 1));
	else
		ckpt_fmt(what, sizeof(what), "its %s %s lock on bytes "
			 "%lld to the end", h->kind == LOCK_OFD ? "OFD" :
			 "POSIX", h->type == F_WRLCK ? "write" : "read",
			 (long long)h->start);
	if (by > 0)
		ckpt_log("fd %d: cannot take back %s: pid %d (outside the "
			 "restarted computation) holds a conflicting one; the "
			 "process runs without it", h->fd, what, (int)by);
	else
		ckpt_log("fd %d: cannot take back %s: %s; the process runs "
			 "without it", h->fd, what, strerror(-err));
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int file_locks_restore(const struct ckpt_restart_args *args)
{
	int64_t deadline = now_ms() + LOCK_RETAKE_MS;

	(void)args;
	for (int i = 0; i < nheld; i++) {
		int r;

		while ((r = take(&held[i])) == -EAGAIN ||
		       r == -EWOULDBLOCK || r == -EACCES) {
			if (now_ms() >= deadline)
				break;
			usleep(LOCK_POLL_MS * 1000);
		}
		if (r < 0)
			say_not_taken(&held[i], r);
	}
	return 0;
}

const struct ckpt_resource_ops file_lock_resource_ops = {
	.name = "file locks",
	.restore = file_locks_restore,
};
