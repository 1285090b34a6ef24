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
 * (F_OFD_SETLK) list no pid (-1) and cannot be told from another
 * process's: said at the checkpoint as not restored. Waiters (a process
 * blocked in F_SETLKW) hold nothing: their call is interrupted and
 * retried. No malloc (threads stopped).
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
#include "internal.h"

#define LOCKS_CHUNK	16384
#define LOCKS_MAX	256
#define LOCK_RETAKE_MS	2000
#define LOCK_POLL_MS	10

static char chunk[LOCKS_CHUNK + 1];

struct held_lock {
	int fd;
	int is_flock;
	short type;		/* F_RDLCK, F_WRLCK */
	int64_t start, len;	/* POSIX: bytes, len 0 = to the end */
};

static struct held_lock held[LOCKS_MAX];
static int nheld, told_full;

/* An open file description lock on a file this process has open: whose
 * it is cannot be told (pid -1). */
static void ofd_line(const char *dev_ino)
{
	unsigned int major, minor;
	unsigned long long ino;
	const char *path;
	int fd;

	if (sscanf(dev_ino, "%x:%x:%llu", &major, &minor, &ino) != 3)
		return;
	fd = files_fd_of_inode(makedev(major, minor), ino, &path);
	if (fd >= 0)
		unrestored_add("fd %d (%s): an open file description lock "
			       "(F_OFD_SETLK) is on the file, maybe this "
			       "process's: not restored", fd, path);
}

/* "1: POSIX  ADVISORY  WRITE 2135 fe:00:11010083 0 EOF"; waiters ("1: ->
 * POSIX ...") are not held locks. */
static void one_line(char *line, pid_t pid)
{
	char *f[8], *save = NULL, *tok;
	unsigned int major, minor;
	unsigned long long ino;
	const char *path;
	int n = 0, fd;

	if (strstr(line, "->"))
		return;
	for (tok = strtok_r(line, " \t", &save); tok && n < 8;
	     tok = strtok_r(NULL, " \t", &save))
		f[n++] = tok;
	if (n < 8 || (strcmp(f[1], "POSIX") && strcmp(f[1], "FLOCK") &&
		       strcmp(f[1], "OFDLCK")))
		return;
	if (!strcmp(f[1], "OFDLCK")) {
		ofd_line(f[5]);
		return;
	}
	if (atoi(f[4]) != pid)
		return;
	if (sscanf(f[5], "%x:%x:%llu", &major, &minor, &ino) != 3)
		return;
	fd = files_fd_of_inode(makedev(major, minor), ino, &path);
	if (fd < 0)
		return;
	if (nheld == LOCKS_MAX) {
		if (!told_full++)
			unrestored_add("fd %d (%s): more than %d locks held: "
				       "this one and later ones are not "
				       "restored", fd, path, LOCKS_MAX);
		return;
	}
	held[nheld] = (struct held_lock){
		.fd = fd,
		.is_flock = !strcmp(f[1], "FLOCK"),
		.type = !strcmp(f[3], "WRITE") ? F_WRLCK : F_RDLCK,
		.start = strtoll(f[6], NULL, 10),
		.len = !strcmp(f[7], "EOF") ? 0 :
		       strtoll(f[7], NULL, 10) - strtoll(f[6], NULL, 10) + 1,
	};
	nheld++;
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

	if (h->is_flock)
		return flock(h->fd, (h->type == F_WRLCK ? LOCK_EX : LOCK_SH) |
				    LOCK_NB) < 0 ? -errno : 0;
	return fcntl(h->fd, F_SETLK, &fl) < 0 ? -errno : 0;
}

/* Who holds what keeps h from being taken (POSIX only), for the
 * message; 0 if unknown. */
static pid_t holder(const struct held_lock *h)
{
	struct flock fl = range_of(h);

	if (h->is_flock || fcntl(h->fd, F_GETLK, &fl) < 0 ||
	    fl.l_type == F_UNLCK)
		return 0;
	return fl.l_pid;
}

static void say_not_taken(const struct held_lock *h, int err)
{
	char what[128];
	pid_t by = err == -EAGAIN || err == -EWOULDBLOCK ? holder(h) : 0;

	if (h->is_flock)
		ckpt_fmt(what, sizeof(what), "its flock %s lock",
			 h->type == F_WRLCK ? "exclusive" : "shared");
	else if (h->len)
		ckpt_fmt(what, sizeof(what), "its POSIX %s lock on bytes "
			 "%lld to %lld", h->type == F_WRLCK ? "write" : "read",
			 (long long)h->start,
			 (long long)(h->start + h->len - 1));
	else
		ckpt_fmt(what, sizeof(what), "its POSIX %s lock on bytes "
			 "%lld to the end", h->type == F_WRLCK ? "write" :
			 "read", (long long)h->start);
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
