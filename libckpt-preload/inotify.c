/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * inotify instances (CKPT_FD_INOTIFY; event_fds.c lists the kind).
 * docs/resources.md tells the story:
 *
 *   checkpoint (threads stopped): each watch is read from
 *   /proc/self/fdinfo/N (watch descriptor, inode, device, mask) and
 *   matched with the path wrappers/inotify.c recorded when it was added;
 *   a watch without a record, or whose path now names another file, is
 *   said unrestored. Events queued and not yet read are said lost.
 *
 *   restart, inside the restarted process: a new instance, the watches
 *   added again by path in the order of their watch descriptors. The
 *   kernel gives a new instance's watches the numbers 1, 2, 3, ... in
 *   turn and never the same one twice running, so a gap (a removed
 *   watch) is skipped by adding and removing a watch on a directory no
 *   watch names: each watch gets its own number back. The IN_IGNORED
 *   events those removals queue are read off before the program runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "internal.h"

#define INOTIFY_WATCHES_MAX	4096
#define KEPT_FLAGS		(IN_DONT_FOLLOW | IN_ONLYDIR)

struct saved_watch {
	int fd;				/* the instance */
	int wd;
	uint32_t mask;			/* as fdinfo shows it */
	uint32_t flags;			/* add-time flags recorded */
	uint64_t ino;
	uint32_t sdev;			/* the kernel's encoding */
	const char *path;		/* wrappers/inotify.c's record (in
					   the saved memory too) */
};

static struct saved_watch saved[INOTIFY_WATCHES_MAX];
static int nsaved;

/* Wipes the watches saved before (files.c: event_fds_begin). */
void inotify_begin(void)
{
	nsaved = 0;
}

static int same_file(const struct stat *st, const struct saved_watch *w)
{
	return st->st_ino == w->ino && major(st->st_dev) == (w->sdev >> 20) &&
	       minor(st->st_dev) == (w->sdev & 0xfffff);
}

/* Why watch w cannot come back, or NULL; w->path is set. */
static const char *watch_problem(struct saved_watch *w)
{
	struct stat st;
	int r;

	if (inotify_watch_path(w->fd, w->wd, &w->path, &w->flags) < 0)
		return "its path is not known (added before libckpt was "
		       "loaded, or longer than libckpt keeps)";
	r = w->flags & IN_DONT_FOLLOW ? lstat(w->path, &st) :
					stat(w->path, &st);
	if (r < 0)
		return "its path is gone";
	if (!same_file(&st, w))
		return "its path now names another file";
	return NULL;
}

/* "inotify wd:HEX ino:HEX sdev:HEX mask:HEX ignored_mask:HEX ..." */
static int parse_watch(const char *line, struct saved_watch *w)
{
	const char *p;

	memset(w, 0, sizeof(*w));
	if (strncmp(line, "inotify wd:", 11))
		return 0;
	w->wd = (int)strtol(line + 11, NULL, 16);	/* printed in hex */
	p = strstr(line, " ino:");
	if (p)
		w->ino = strtoull(p + 5, NULL, 16);
	p = p ? strstr(line, " sdev:") : NULL;
	if (p)
		w->sdev = strtoul(p + 6, NULL, 16);
	p = p ? strstr(line, " mask:") : NULL;
	if (!p)
		return -EPROTO;
	w->mask = strtoul(p + 6, NULL, 16);
	return 1;
}

static void save_watch(int fd, const char *line)
{
	struct saved_watch *w = &saved[nsaved];
	const char *why;
	int r = parse_watch(line, w);

	if (r <= 0) {
		if (r < 0)
			unrestored_add("fd %d: an inotify instance: cannot read "
				       "a watch (\"%s\"); a restart leaves it "
				       "out", fd, line);
		return;
	}
	w->fd = fd;
	why = watch_problem(w);
	if (!why && nsaved == INOTIFY_WATCHES_MAX)
		why = "more watches than libckpt keeps";
	if (why) {
		unrestored_add("fd %d: an inotify instance: its watch %d "
			       "(inode %llu%s%s): %s; a restart leaves it out",
			       fd, w->wd, (unsigned long long)w->ino,
			       w->path ? ", " : "", w->path ? w->path : "",
			       why);
		return;
	}
	nsaved++;
}

/* Read the watches of instance fd. 0 or -errno. */
int inotify_save(int fd)
{
	char path[64], buf[64 << 10], *line, *nl;
	int f, queued = 0;
	ssize_t n;

	ckpt_fmt(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = ckpt_open_raw(path, O_RDONLY);
	if (f < 0)
		return -errno;
	n = read(f, buf, sizeof(buf) - 1);
	close(f);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	for (line = buf; (nl = strchr(line, '\n')); line = nl + 1) {
		*nl = 0;
		save_watch(fd, line);
	}
	if (ioctl(fd, FIONREAD, &queued) == 0 && queued > 0)
		unrestored_add("fd %d: an inotify instance: %d bytes of events "
			       "not yet read; a restart loses them", fd,
			       queued);
	return 0;
}

/* How many watches of instance fd a restart adds again. */
uint32_t inotify_watch_count(int fd)
{
	uint32_t n = 0;

	for (int i = 0; i < nsaved; i++)
		n += saved[i].fd == fd;
	return n;
}

/* ----- restart ----- */

static int watched_by(int fd, const struct stat *st)
{
	for (int i = 0; i < nsaved; i++)
		if (saved[i].fd == fd && same_file(st, &saved[i]))
			return 1;
	return 0;
}

/* A directory none of fd's watches names, to take numbers with. */
static const char *spare_directory(int fd)
{
	static const char *const dirs[] = { "/", "/proc", "/dev", "/sys" };
	struct stat st;

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (stat(dirs[i], &st) == 0 && !watched_by(fd, &st))
			return dirs[i];
	return NULL;
}

/* The kernel's next watch number becomes wd (it hands them out in
 * turn): 0, or -errno. *next: the number it would hand out next. */
static int skip_to(int in, int fd, int wd, int *next)
{
	const char *spare = NULL;

	while (*next < wd) {
		int got;

		if (!spare)
			spare = spare_directory(fd);
		if (!spare)
			return -EBUSY;
		got = syscall(SYS_inotify_add_watch, in, spare,
			      IN_DELETE_SELF);
		if (got < 0)
			return -errno;
		syscall(SYS_inotify_rm_watch, in, got);
		*next = got + 1;
	}
	return 0;
}

static void add_again(int in, const struct saved_watch *w, int *next)
{
	int r = skip_to(in, w->fd, w->wd, next), got = -1;

	if (r == 0) {
		got = syscall(SYS_inotify_add_watch, in, w->path,
			      w->mask | w->flags);
		r = got < 0 ? -errno : 0;
	}
	if (r == 0 && got != w->wd) {
		syscall(SYS_inotify_rm_watch, in, got);
		r = -EEXIST;
	}
	if (r < 0) {
		ckpt_log("fd %d (inotify instance): cannot watch %s again as "
			 "watch %d: %s; the program will not hear of it", w->fd,
			 w->path, w->wd, got >= 0 ? "the kernel gave another "
			 "number" : strerror(-r));
		return;
	}
	*next = got + 1;
}

/* fd's saved watch with the lowest number above wd, or NULL. */
static const struct saved_watch *next_watch(int fd, int wd)
{
	const struct saved_watch *best = NULL;

	for (int i = 0; i < nsaved; i++)
		if (saved[i].fd == fd && saved[i].wd > wd &&
		    (!best || saved[i].wd < best->wd))
			best = &saved[i];
	return best;
}

/* The IN_IGNORED events of the numbers taken and given back. */
static void read_off_events(int in)
{
	char buf[4096];
	int flags = fcntl(in, F_GETFL);

	fcntl(in, F_SETFL, flags | O_NONBLOCK);
	while (read(in, buf, sizeof(buf)) > 0)
		;
	fcntl(in, F_SETFL, flags);
}

/* A new instance with the saved watches of instance fd, at their
 * numbers: the new fd (any number, close-on-exec) or -errno. Raw
 * system calls: wrappers/inotify.c's records are the saved ones. */
int inotify_restore(int fd)
{
	int in = syscall(SYS_inotify_init1, IN_CLOEXEC), next = 1;
	const struct saved_watch *w = next_watch(fd, 0);

	if (in < 0)
		return -errno;
	for (; w; w = next_watch(fd, w->wd))
		add_again(in, w, &next);
	read_off_events(in);
	return in;
}
