/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Files made after the checkpoint (include/ckpt/created_journal.h). A
 * process of the computation that made a file exclusively after the
 * checkpoint this restart goes back to, and was then killed, left it on
 * disk: a lock file, a temporary file. The restored processes had not
 * made it yet; the one that makes it again finds it there (git: "Unable
 * to create '.git/index.lock': File exists"). Before any file is put
 * back and any process restored, each such file still there is removed:
 * made by a process of this computation (its id), after this checkpoint
 * (the creator's generation at least the images'), the same file
 * (device, inode and birth time where the file system records it), ours,
 * and its creator no longer running (pid and start time: a restart
 * beside a live computation leaves its files alone). docs/restart.md,
 * "Files made after the checkpoint".
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "ckpt/created_journal.h"
#include "ckpt/proc_stat.h"
#include "ckpt/safe_file.h"
#include "process_tree.h"

#define FLOCK_TRIES	500

/* A creator killed just before the restart may still be on its way out
 * (or a zombie its killed parent never reaped): looked at again for at
 * most this long, all records together. */
#define CREATOR_EXIT_WAIT_MS	2000
#define CREATOR_POLL_MS		20

static int exit_wait_left_ms = CREATOR_EXIT_WAIT_MS;

/* The creator runs: /proc/PID/stat's start time is the record's and the
 * process is not a zombie (or dead, 'X'). */
static int creator_running(const struct ckpt_created_record *r)
{
	char path[64], state;
	uint64_t start;

	snprintf(path, sizeof(path), "/proc/%d/stat", r->real_pid);
	return ckpt_proc_start_time(path, &start, &state) == 0 &&
	       start == r->start_time && state != 'Z' && state != 'X';
}

static int creator_alive(const struct ckpt_created_record *r)
{
	while (creator_running(r)) {
		if (exit_wait_left_ms <= 0)
			return 1;
		usleep(CREATOR_POLL_MS * 1000);
		exit_wait_left_ms -= CREATOR_POLL_MS;
	}
	return 0;
}

/* The file at name in dirfd is the one the record names, and ours. The
 * check and the unlink go through the same directory descriptor, so
 * whatever happens to the path meanwhile, what is removed is a name of
 * that very file. */
static int same_file(const struct ckpt_created_record *r, int dirfd,
		     const char *name)
{
	struct statx sx;

	if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW,
		  STATX_TYPE | STATX_UID | STATX_INO | STATX_BTIME, &sx) < 0)
		return 0;
	if (!S_ISREG(sx.stx_mode) || sx.stx_uid != geteuid() ||
	    makedev(sx.stx_dev_major, sx.stx_dev_minor) != r->dev ||
	    sx.stx_ino != r->ino)
		return 0;
	if (r->has_btime && (sx.stx_mask & STATX_BTIME) &&
	    (sx.stx_btime.tv_sec != r->btime_sec ||
	     sx.stx_btime.tv_nsec != r->btime_nsec))
		return 0;
	return 1;
}

/* The directory of an absolute path, opened; *name its last part. */
static int open_parent(char *path, const char **name)
{
	char *slash = strrchr(path, '/');
	int fd;

	if (!slash || !slash[1])
		return -EINVAL;
	*slash = 0;
	fd = open(slash == path ? "/" : path,
		  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	*slash = '/';
	*name = slash + 1;
	return fd < 0 ? -errno : fd;
}

/* Remove name (path) in dirfd when the record says it was made after the
 * images' checkpoint by a process of theirs that is gone; returns whether
 * the journal keeps the record. */
static int remove_if_made_after(const struct ckpt_created_record *r,
				int dirfd, const char *name, const char *path,
				const struct ckpt_image *img)
{
	char program[sizeof(r->program) + 1];

	if (!same_file(r, dirfd, name))
		return 0;	/* gone, or another file now: forgotten */
	if (r->computation_id != img->hdr.computation_id ||
	    r->generation < img->hdr.generation)
		return 1;
	if (creator_alive(r)) {
		fprintf(stderr, "ckpt_restart: warning: %s was made after "
			"checkpoint %llu by pid %d, which still runs: left "
			"in place\n", path,
			(unsigned long long)img->hdr.generation, r->real_pid);
		return 1;
	}
	memcpy(program, r->program, sizeof(r->program));
	program[sizeof(r->program)] = 0;
	if (unlinkat(dirfd, name, 0) < 0) {
		fprintf(stderr, "ckpt_restart: warning: cannot remove %s, "
			"made by %s (vpid %d) after checkpoint %llu: %s\n",
			path, program, r->vpid,
			(unsigned long long)img->hdr.generation,
			strerror(errno));
		return 1;
	}
	fprintf(stderr, "ckpt_restart: removed %s: made by %s (vpid %d) "
		"after checkpoint %llu, which the restored processes had not "
		"made yet (left by a process killed after the checkpoint)\n",
		path, program, r->vpid,
		(unsigned long long)img->hdr.generation);
	return 0;
}

/* Handle one record; returns whether the journal keeps it. */
static int handle_record(const struct ckpt_created_record *r,
			 char *path, const struct ckpt_image *img)
{
	const char *name;
	int dirfd = open_parent(path, &name), keep;

	if (dirfd < 0)
		return 0;	/* its directory is gone: forgotten */
	keep = remove_if_made_after(r, dirfd, name, path, img);
	close(dirfd);
	return keep;
}

/* Go through the journal's records, keeping (moving to the front) those
 * handle_record keeps; returns the bytes kept. */
static size_t sweep(char *buf, size_t size, const struct ckpt_image *img)
{
	size_t in = 0, out = 0;
	char path[PATH_MAX];

	for (;;) {
		struct ckpt_created_record r;
		size_t len = ckpt_created_next(buf, size, in, &r);

		if (!len)
			break;
		if (r.path_len > 0 && r.path_len < sizeof(path)) {
			memcpy(path, buf + in + sizeof(r), r.path_len);
			path[r.path_len] = 0;
			if (path[0] == '/' && handle_record(&r, path, img)) {
				memmove(buf + out, buf + in, len);
				out += len;
			}
		}
		in += len;
	}
	return out;
}

/* The journal of one checkpoint directory. */
static void sweep_dir(const char *dir, const struct ckpt_image *img)
{
	struct ckpt_refusal ref;
	struct stat st;
	char *buf = NULL;
	int dirfd, fd;
	size_t kept;

	dirfd = ckpt_safe_dir_open(dir, &ref);
	if (dirfd < 0)
		return;	/* the images' checks said what is wrong with it */
	fd = openat(dirfd, CKPT_CREATED_JOURNAL,
		    O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	close(dirfd);
	if (fd < 0)
		return;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid() || st.st_nlink != 1 ||
	    (st.st_mode & 022)) {
		fprintf(stderr, "ckpt_restart: warning: %s/%s is not a file "
			"of this user alone: ignored\n", dir,
			CKPT_CREATED_JOURNAL);
		goto out;
	}
	if (ckpt_created_lock(fd, LOCK_EX, FLOCK_TRIES, 2000) < 0 ||
	    fstat(fd, &st) < 0) {
		fprintf(stderr, "ckpt_restart: warning: %s/%s stays locked: "
			"files made after the checkpoint are left in place\n",
			dir, CKPT_CREATED_JOURNAL);
		goto out;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf || pread(fd, buf, (size_t)st.st_size, 0) != st.st_size)
		goto out;
	kept = sweep(buf, (size_t)st.st_size, img);
	if (kept < (size_t)st.st_size &&
	    (ftruncate(fd, 0) < 0 ||
	     (kept && pwrite(fd, buf, kept, 0) != (ssize_t)kept)))
		fprintf(stderr, "ckpt_restart: warning: rewriting %s/%s: %s\n",
			dir, CKPT_CREATED_JOURNAL, strerror(errno));
out:
	free(buf);
	close(fd);
}

void restart_remove_created_after(struct ckpt_image *imgs, int n)
{
	char dir[PATH_MAX], prev[PATH_MAX] = "";

	if (n < 1 || !imgs[0].hdr.computation_id)
		return;
	for (int i = 0; i < n; i++) {
		parent_dir(imgs[i].path, dir, sizeof(dir));
		if (!dir[0])
			snprintf(dir, sizeof(dir), ".");
		if (strcmp(dir, prev) == 0)
			continue;
		snprintf(prev, sizeof(prev), "%s", dir);
		sweep_dir(dir, &imgs[0]);
	}
}
