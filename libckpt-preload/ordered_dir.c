// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Which directory a coordinator may order this process to write its image
 * to (DO_SUSPEND/DO_WRITE ckpt_dir; docs/security.md, "Coordinator
 * connections"). The image holds all of the process's memory, so a
 * coordinator must not be able to send it where someone else can read or
 * swap it: only a directory this process's user could have chosen. Runs
 * while the threads are stopped: no malloc, no stdio.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

static bool others_may_write(const struct stat *st)
{
	return (st->st_mode & (S_IWGRP | S_IWOTH)) != 0;
}

/* An ancestor of the directory: nobody else may rename what is in it
 * (root's or ours, and only writable by others when sticky, like /tmp). */
static bool safe_ancestor(const struct stat *st)
{
	return S_ISDIR(st->st_mode) &&
	       (st->st_uid == 0 || st->st_uid == geteuid()) &&
	       (!others_may_write(st) || (st->st_mode & S_ISVTX));
}

static bool safe_final(const struct stat *st)
{
	return S_ISDIR(st->st_mode) && st->st_uid == geteuid() &&
	       !others_may_write(st);
}

/* Walk "/a/b/c" component by component with lstat (a symlink anywhere is
 * refused: it could be repointed after the check). */
static int check_chosen_path(const char *dir, const char **why)
{
	char prefix[4096];
	size_t n = strlen(dir), i = 1;
	struct stat st;

	*why = "not an absolute path without \".\", \"..\" or \"//\"";
	if (dir[0] != '/' || n >= sizeof(prefix) || strstr(dir, "//") ||
	    strstr(dir, "/./") || strstr(dir, "/../") ||
	    (n >= 2 && strcmp(dir + n - 2, "/.") == 0) ||
	    (n >= 3 && strcmp(dir + n - 3, "/..") == 0))
		return -EPERM;
	if (lstat("/", &st) < 0 ||
	    !(n == 1 ? safe_final(&st) : safe_ancestor(&st))) {
		*why = "/ is not a directory only this process's user controls";
		return -EPERM;
	}
	while (i < n) {
		const char *slash = strchr(dir + i, '/');
		size_t end = slash ? (size_t)(slash - dir) : n;
		bool last = end >= n || (end == n - 1);

		memcpy(prefix, dir, end);
		prefix[end] = '\0';
		if (lstat(prefix, &st) < 0) {
			*why = "a part of it does not exist";
			return -errno;
		}
		if (last ? !safe_final(&st) : !safe_ancestor(&st)) {
			*why = last ? "not a directory of this process's user "
				      "that only it may write" :
				      "a part of it is a symlink, or someone "
				      "else may rename what is in it";
			return -EPERM;
		}
		i = end + 1;
	}
	return 0;
}

int ordered_dir_check(const char *dir, char *err, size_t errlen)
{
	const char *why = "";
	int r;

	if (!dir[0] || strcmp(dir, ckpt.ckpt_dir) == 0)
		return 0;
	r = check_chosen_path(dir, &why);
	if (r < 0) {
		ckpt_fmt(err, errlen, "refusing the coordinator's checkpoint "
			 "directory %s: %s", dir, why);
		ckpt_log("%s", err);
	}
	return r;
}
