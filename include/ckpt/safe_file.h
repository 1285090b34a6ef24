/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Files ckpt creates in a directory others may share (a world-writable,
 * sticky checkpoint directory such as /tmp): docs/security.md, "Files in
 * the checkpoint directory". The directory is opened once and checked;
 * every file is then made relative to that descriptor, exclusively and
 * never through a symbolic link. A name already taken by a leftover of
 * ours (a regular file of our uid with one link) is removed and made
 * again; anything else there is refused, with what it is and whose.
 *
 * Used by libckpt with the threads stopped (no allocation, no stdio), by
 * the coordinator and by ckpt_restart. Functions return an fd or -errno;
 * on a refusal `why` says what was found (never -EPERM, which is -1: an
 * fd's "none" to some callers).
 */
#ifndef CKPT_SAFE_FILE_H
#define CKPT_SAFE_FILE_H

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct ckpt_refusal {
	const char *why;	/* NULL: the system call's error says it */
	unsigned int uid;	/* owner of what was found */
};

static inline int ckpt_refuse(struct ckpt_refusal *ref, const char *why,
			      unsigned int uid, int err)
{
	ref->why = why;
	ref->uid = uid;
	return err;
}

/* Nobody but us (or root) may replace what is in a directory: its owner
 * is one of them, and if others may write it, it is sticky. */
static inline int ckpt_dir_check(const struct stat *st,
				 struct ckpt_refusal *ref)
{
	if (!S_ISDIR(st->st_mode))
		return ckpt_refuse(ref, "not a directory", st->st_uid,
				   -ENOTDIR);
	if (st->st_uid != geteuid() && st->st_uid != 0)
		return ckpt_refuse(ref, "the directory belongs to another "
				   "user, who could replace what ckpt writes "
				   "in it", st->st_uid, -EACCES);
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX))
		return ckpt_refuse(ref, "others may write the directory and "
				   "it is not sticky: they could replace what "
				   "ckpt writes in it", st->st_uid, -EACCES);
	return 0;
}

/* 1 and *st of path, or of its nearest ancestor this process may look
 * at (the one that keeps it out) when path itself cannot be. */
static inline int ckpt_nearest_owner(const char *path, struct stat *st)
{
	char up[4096];
	char *slash;

	if (stat(path, st) == 0)
		return 1;
	if (strlen(path) >= sizeof(up))
		return 0;
	strcpy(up, path);
	while ((slash = strrchr(up, '/')) && slash != up) {
		*slash = 0;
		if (stat(up, st) == 0)
			return 1;
	}
	return 0;
}

static inline int ckpt_safe_dir_open(const char *path, struct ckpt_refusal *ref)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r;

	ref->why = NULL;
	if (fd < 0 && errno == EACCES && ckpt_nearest_owner(path, &st) &&
	    st.st_uid != geteuid())
		return ckpt_refuse(ref, "no access for this process's user, "
				   "not the directory's owner: if the process "
				   "changed its user after the launch (as "
				   "nginx's workers started as root do), ckpt "
				   "cannot checkpoint it", st.st_uid, -EACCES);
	if (fd < 0)
		return -errno;
	r = fstat(fd, &st) < 0 ? -errno : ckpt_dir_check(&st, ref);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

/* Nobody but us (or root) can redirect what is made under the absolute
 * path dir: each of its directories passes ckpt_dir_check, and a symbolic
 * link on the way belongs to us or root. On a refusal, bad gets the part
 * of the path at fault. */
static inline int ckpt_path_check(const char *dir, char *bad, size_t len,
				  struct ckpt_refusal *ref)
{
	size_t n = strlen(dir), end = 1;
	struct stat st;
	int r;

	ref->why = NULL;
	if (dir[0] != '/' || n >= len)
		return -EINVAL;
	for (;;) {
		const char *slash;

		memcpy(bad, dir, end);		/* "/", "/a", "/a/b", ... */
		bad[end] = 0;
		if (lstat(bad, &st) < 0)
			return -errno;
		if (!S_ISLNK(st.st_mode))
			r = ckpt_dir_check(&st, ref);
		else if (st.st_uid != geteuid() && st.st_uid != 0)
			r = ckpt_refuse(ref, "a symbolic link of another user",
					st.st_uid, -ELOOP);
		else
			r = 0;
		if (r < 0 || end >= n)
			return r;
		slash = strchr(dir + end + 1, '/');
		end = slash ? (size_t)(slash - dir) : n;
	}
}

/* What is at name is a file we may reuse or replace: a regular file of
 * ours with no other name (not a hard link to someone's file). */
static inline int ckpt_own_leftover(int dirfd, const char *name,
				    struct ckpt_refusal *ref)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (S_ISLNK(st.st_mode))
		return ckpt_refuse(ref, "a symbolic link is in its place",
				   st.st_uid, -ELOOP);
	if (!S_ISREG(st.st_mode))
		return ckpt_refuse(ref, "something other than a regular file "
				   "is in its place", st.st_uid, -EEXIST);
	if (st.st_uid != geteuid())
		return ckpt_refuse(ref, "a file of another user is in its "
				   "place", st.st_uid, -EEXIST);
	if (st.st_nlink != 1)
		return ckpt_refuse(ref, "a file with other hard links is in "
				   "its place", st.st_uid, -EMLINK);
	return 0;
}

/* A new file `name` in dirfd, ours alone: O_CREAT | O_EXCL | O_NOFOLLOW
 * added to flags. A leftover of ours under that name is removed first. */
static inline int ckpt_create_at(int dirfd, const char *name, int flags,
				 mode_t mode, struct ckpt_refusal *ref)
{
	int fd, r;

	ref->why = NULL;
	flags |= O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
	fd = openat(dirfd, name, flags, mode);
	if (fd >= 0 || errno != EEXIST)
		return fd < 0 ? -errno : fd;
	r = ckpt_own_leftover(dirfd, name, ref);
	if (r < 0)
		return r;
	if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
		return -errno;
	fd = openat(dirfd, name, flags, mode);
	return fd < 0 ? -errno : fd;
}

/* Open (or make) a file that must stay ours and keep its inode, e.g. a
 * lock file that outlives its user: what is already there must be a
 * regular file of ours alone. Never truncates. */
static inline int ckpt_open_own_at(int dirfd, const char *name, int flags,
				   mode_t mode, struct ckpt_refusal *ref)
{
	struct stat st;
	int fd;

	ref->why = NULL;
	/* O_NONBLOCK: a FIFO planted there must not block the open */
	fd = openat(dirfd, name, (flags & ~O_TRUNC) | O_CREAT | O_NOFOLLOW |
		    O_NONBLOCK | O_CLOEXEC, mode);
	if (fd < 0) {
		/* A symbolic link there gives ELOOP, or EACCES in a sticky
		 * directory: say what is there. */
		int e = errno, r = ckpt_own_leftover(dirfd, name, ref);

		return r < 0 && ref->why ? r : -e;
	}
	if (fstat(fd, &st) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    st.st_nlink != 1) {
		close(fd);
		return ckpt_refuse(ref, "a file that is not ours alone is in "
				   "its place", st.st_uid, -EEXIST);
	}
	return fd;
}

#endif
