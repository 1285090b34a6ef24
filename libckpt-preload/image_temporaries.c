/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The temporary file an image is written to before it is renamed over the
 * previous one (image_commit): ".ckpt_<program>_<unique id>.img.tmp.<real
 * pid>" in the checkpoint directory. It is made exclusively, never through
 * a symbolic link, relative to the directory opened and checked once
 * (include/ckpt/safe_file.h; docs/security.md, "Files in the checkpoint
 * directory").
 *
 * A process killed while writing leaves its temporary behind, as large as
 * its memory. Such files of this process's computation (same program and
 * unique id, a pid that is gone, a regular file of our uid) are removed
 * at the start of every checkpoint and at restart, so at most the one of
 * the last killed writer is ever there; so are the files rounds meet in
 * (claims, tables of shared files) that a killed process or a failed
 * round left, once no round can still use them (docs/reliability.md,
 * "Leftovers of failed checkpoints"). Runs with the threads stopped: no
 * malloc.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "ckpt/safe_file.h"
#include "internal.h"

static void tmp_prefix(char *buf, size_t len)
{
	ckpt_fmt(buf, len, ".ckpt_%s_%s.img.tmp.", ckpt.program,
		 ckpt.unique_id);
}

/* The real pid keeps two restarts of one image from sharing it. */
void image_tmp_name(char *buf, size_t len)
{
	char prefix[512];

	tmp_prefix(prefix, sizeof(prefix));
	ckpt_fmt(buf, len, "%s%d", prefix, (int)ckpt_real_getpid());
}

/* The pid in name after prefix if it is a number, else 0. */
static pid_t writer_pid(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);
	long pid = 0;

	if (strncmp(name, prefix, n) || !name[n])
		return 0;
	for (name += n; *name; name++) {
		if (*name < '0' || *name > '9' || pid > 1 << 22)
			return 0;
		pid = pid * 10 + (*name - '0');
	}
	return pid;
}

static int writer_is_gone(pid_t pid)
{
	return pid != ckpt_real_getpid() && syscall(SYS_kill, pid, 0) < 0 &&
	       errno == ESRCH;
}

/* A file a round meets in (pipes.c's claims, shared_files.c's table):
 * ".ckpt_<kind>_<numbers>.g<generation>" or ".ckpt_shared.g<generation>". */
static int is_round_file(const char *name)
{
	static const char *const kinds[] = { ".ckpt_pipe_", ".ckpt_sock_",
		".ckpt_fifo_", ".ckpt_file_", ".ckpt_shared" };
	const char *g = strrchr(name, '.');
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strncmp(name, kinds[i], strlen(kinds[i])))
			break;
	if (i == sizeof(kinds) / sizeof(kinds[0]) || !g || g[1] != 'g' ||
	    !g[2])
		return 0;
	for (g += 2; *g; g++)
		if (*g < '0' || *g > '9')
			return 0;
	return 1;
}

/* Seconds after which a round file is surely not in use any more: no
 * round lasts longer than the coordinator's bounds (suspend, then write,
 * sync and commit), with a wide margin; at least an hour. */
static long round_files_stale_s(void)
{
	long bound = 2 * (ckpt.coord_phase_ms + 3 * ckpt.coord_write_ms) /
		     1000;

	return bound > 3600 ? bound : 3600;
}

/* Round files of our uid left by rounds long over: a process killed
 * mid-round never removes its claims, and a failed round's table stays. */
static int round_file_is_stale(int dirfd, const char *name)
{
	struct ckpt_refusal ref;
	struct timespec now;
	struct stat st;

	if (!is_round_file(name) || ckpt_own_leftover(dirfd, name, &ref) ||
	    fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    clock_gettime(CLOCK_REALTIME, &now) < 0)
		return 0;
	return now.tv_sec - st.st_mtim.tv_sec > round_files_stale_s();
}

static void remove_leftovers_at(int dirfd)
{
	char buf[4096], prefix[512];
	struct ckpt_refusal ref;
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	long n;

	if (fd < 0)
		return;
	tmp_prefix(prefix, sizeof(prefix));
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long pos = 0; pos < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + pos);
			pid_t pid = writer_pid(d->d_name, prefix);

			pos += d->d_reclen;
			if (pid > 0 && writer_is_gone(pid) &&
			    ckpt_own_leftover(dirfd, d->d_name, &ref) == 0 &&
			    unlinkat(dirfd, d->d_name, 0) == 0)
				ckpt_log("removed %s, the image a killed "
					 "checkpoint left unfinished",
					 d->d_name);
			else if (round_file_is_stale(dirfd, d->d_name))
				unlinkat(dirfd, d->d_name, 0);
		}
	}
	close(fd);
}

/* At restart: what a writer killed before it left behind. */
void image_remove_leftovers(const char *dir)
{
	struct ckpt_refusal ref;
	int dirfd;

	/* the restarted program runs: the descriptors opened here are
	 * closed before a fork may copy them (manager_fds.c) */
	manager_fds_hold();
	dirfd = ckpt_safe_dir_open(dir, &ref);
	if (dirfd >= 0) {
		remove_leftovers_at(dirfd);
		close(dirfd);
	}
	manager_fds_release();
}

static void refusal_message(char *err, size_t errlen, const char *what,
			    const char *path, int r,
			    const struct ckpt_refusal *ref)
{
	if (ref->why)
		ckpt_fmt(err, errlen, "cannot create %s %s: %s (owner uid "
			 "%u); refusing to use it", what, path, ref->why,
			 ref->uid);
	else
		ckpt_fmt(err, errlen, "cannot create %s %s: %s", what, path,
			 strerror(-r));
}

/* dir opened and checked, or -errno with err set. */
static int open_image_dir(const char *dir, char *err, size_t errlen)
{
	struct ckpt_refusal ref;
	int dirfd = ckpt_safe_dir_open(dir, &ref);

	if (dirfd >= 0)
		return dirfd;
	if (ref.why)
		ckpt_fmt(err, errlen, "checkpoint directory %s: %s (owner uid "
			 "%u)", dir, ref.why, ref.uid);
	else
		ckpt_fmt(err, errlen, "checkpoint directory %s: %s", dir,
			 strerror(-dirfd));
	return dirfd;
}

/* The new, empty temporary image tmp_path in dir, open for writing. */
int image_create_temporary(const char *dir, const char *tmp_path, char *err,
			   size_t errlen)
{
	const char *base = strrchr(tmp_path, '/');
	struct ckpt_refusal ref;
	int dirfd, fd;

	dirfd = open_image_dir(dir, err, errlen);
	if (dirfd < 0)
		return dirfd;
	remove_leftovers_at(dirfd);
	fd = ckpt_create_at(dirfd, base ? base + 1 : tmp_path, O_WRONLY, 0600,
			    &ref);
	if (fd < 0)
		refusal_message(err, errlen, "the temporary image", tmp_path,
				fd, &ref);
	close(dirfd);
	return fd;
}

/* Every image of the checkpoint is synced: this one replaces the
 * previous one, renamed within its directory opened and checked again,
 * then the directory is synced. Both paths are "<dir>/<name>". */
int image_commit(const char *tmp_path, const char *final_path, char *err,
		 size_t errlen)
{
	const char *tmp_base = strrchr(tmp_path, '/') + 1;
	const char *final_base = strrchr(final_path, '/') + 1;
	char dir[4096];
	int dirfd, r = 0;

	ckpt_fmt(dir, sizeof(dir), "%.*s", final_base - final_path > 1 ?
		 (int)(final_base - final_path - 1) : 1, final_path);
	/* the program runs: a fork must not inherit it (manager_fds.c) */
	manager_fds_hold();
	dirfd = manager_fd_keep(open_image_dir(dir, err, errlen));
	manager_fds_release();
	if (dirfd < 0) {
		unlink(tmp_path);
		return dirfd;
	}
	if (renameat(dirfd, tmp_base, dirfd, final_base) < 0) {
		r = -errno;
		ckpt_fmt(err, errlen, "rename %s to %s: %s", tmp_path,
			 final_path, strerror(errno));
		unlinkat(dirfd, tmp_base, 0);
	} else if (fsync(dirfd) < 0 && errno != EINVAL) {
		r = -errno;
		ckpt_fmt(err, errlen, "fsync of the directory of %s: %s",
			 final_path, strerror(errno));
	}
	manager_fd_close(dirfd);
	return r;
}
