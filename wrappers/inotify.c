/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * inotify: the kernel tells each watch's inode, mask and watch
 * descriptor (/proc/self/fdinfo), not the path it was added by, which a
 * restart needs to add it again (libckpt-preload/inotify.c). So each
 * successful inotify_add_watch is recorded here: instance fd, watch
 * descriptor, the path made absolute, and the flags the kernel does not
 * keep (IN_DONT_FOLLOW, IN_ONLYDIR). A new instance forgets the records
 * of an earlier one at its number; a removed watch its record.
 */
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>
#include "wrappers.h"

DEFINE_NEXT(inotify_init);
DEFINE_NEXT(inotify_init1);
DEFINE_NEXT(inotify_add_watch);
DEFINE_NEXT(inotify_rm_watch);

CKPT_EARLY_CONSTRUCTOR static void resolve_next_inotify(void)
{
	RESOLVE_NEXT(inotify_init);
	RESOLVE_NEXT(inotify_init1);
	RESOLVE_NEXT(inotify_add_watch);
	RESOLVE_NEXT(inotify_rm_watch);
}

#define WATCHES_MAX		2048
#define WATCH_PATH_MAX		1024
#define ADD_TIME_FLAGS		(IN_DONT_FOLLOW | IN_ONLYDIR)

struct watch_record {
	int fd;				/* -1: free */
	int wd;
	uint32_t flags;			/* ADD_TIME_FLAGS given */
	char path[WATCH_PATH_MAX];	/* absolute */
};

static struct watch_record watches[WATCHES_MAX];
static int nwatches;			/* records in use: [0, nwatches) */
static pthread_mutex_t watches_lock = PTHREAD_MUTEX_INITIALIZER;

static struct watch_record *find_record(int fd, int wd)
{
	for (int i = 0; i < nwatches; i++)
		if (watches[i].fd == fd && watches[i].wd == wd)
			return &watches[i];
	return NULL;
}

/* Every holder of watches_lock blocks checkpoints meanwhile: a thread
 * stopped holding it would keep another from stopping. */
static int forget_instance(int fd)
{
	pthread_mutex_lock(&watches_lock);
	for (int i = 0; i < nwatches; i++)
		if (watches[i].fd == fd)
			watches[i].fd = -1;
	pthread_mutex_unlock(&watches_lock);
	return fd;
}

static struct watch_record *new_record(void)
{
	for (int i = 0; i < nwatches; i++)
		if (watches[i].fd < 0)
			return &watches[i];
	return nwatches < WATCHES_MAX ? &watches[nwatches++] : NULL;
}

/* path as it was named, absolute (relative: from the working directory
 * then); 0, or -ENAMETOOLONG. */
static int absolute(const char *path, char *out)
{
	size_t len;

	if (path[0] == '/') {
		if (strlen(path) >= WATCH_PATH_MAX)
			return -ENAMETOOLONG;
		strcpy(out, path);
		return 0;
	}
	if (!getcwd(out, WATCH_PATH_MAX))
		return -ENAMETOOLONG;
	len = strlen(out);
	if (len + 1 + strlen(path) >= WATCH_PATH_MAX)
		return -ENAMETOOLONG;
	out[len] = '/';
	strcpy(out + len + 1, path);
	return 0;
}

/* A watch libckpt cannot record is still the program's: said at the
 * checkpoint (the restart leaves it out). */
static void record(int fd, int wd, const char *path, uint32_t mask)
{
	struct watch_record *w;

	pthread_mutex_lock(&watches_lock);
	w = find_record(fd, wd);
	if (!w)
		w = new_record();
	if (w && absolute(path, w->path) == 0) {
		w->fd = fd;
		w->wd = wd;
		w->flags = mask & ADD_TIME_FLAGS;
	} else if (w) {
		w->fd = -1;
	}
	pthread_mutex_unlock(&watches_lock);
}

CKPT_WRAPPER int inotify_init(void)
{
	int fd = NEXT_FN(inotify_init)();

	return fd < 0 ? fd : WITHOUT_CHECKPOINT(forget_instance(fd));
}

CKPT_WRAPPER int inotify_init1(int flags)
{
	int fd = NEXT_FN(inotify_init1)(flags);

	return fd < 0 ? fd : WITHOUT_CHECKPOINT(forget_instance(fd));
}

/* No checkpoint between the kernel's answer and its record. */
static int add_and_record(int fd, const char *path, uint32_t mask)
{
	int wd = NEXT_FN(inotify_add_watch)(fd, path, mask);

	if (wd >= 0)
		record(fd, wd, path, mask);
	return wd;
}

CKPT_WRAPPER int inotify_add_watch(int fd, const char *path, uint32_t mask)
{
	return WITHOUT_CHECKPOINT(add_and_record(fd, path, mask));
}

static int remove_and_forget(int fd, int wd)
{
	int r = NEXT_FN(inotify_rm_watch)(fd, wd);
	struct watch_record *w;

	if (r == 0) {
		pthread_mutex_lock(&watches_lock);
		w = find_record(fd, wd);
		if (w)
			w->fd = -1;
		pthread_mutex_unlock(&watches_lock);
	}
	return r;
}

CKPT_WRAPPER int inotify_rm_watch(int fd, int wd)
{
	return WITHOUT_CHECKPOINT(remove_and_forget(fd, wd));
}

/* For the checkpoint (threads stopped: no lock taken, the table is read
 * as it is): the recorded path and add-time flags of watch wd of
 * instance fd. 0, or -ENOENT. */
int inotify_watch_path(int fd, int wd, const char **path, uint32_t *flags)
{
	for (int i = 0; i < nwatches; i++)
		if (watches[i].fd == fd && watches[i].wd == wd) {
			*path = watches[i].path;
			*flags = watches[i].flags;
			return 0;
		}
	return -ENOENT;
}
