/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Pipes (files.c records them as CKPT_FD_PIPE; this file holds what is
 * special about them). docs/resources.md tells the whole story:
 *
 *   checkpoint, once every process of the computation is stopped
 *   (DO_WRITE): exactly one process drains each pipe: the first to create
 *   the claim file .ckpt_pipe_<ino>.g<generation> (O_EXCL) in the
 *   checkpoint directory. It reads the bytes in flight through a read end
 *   of its own (open of /proc/self/fd/N), keeps them in a memfd that goes
 *   into its image like a deleted file's content, and writes them back
 *   through a write end of its own, so the computation goes on unchanged.
 *
 *   restart: ckpt_restart (restart/restart_pipes.c) makes each pipe once,
 *   refilled, and hands both ends to every process through the restart
 *   plan (handover.c); files.c puts the end each fd had in place.
 *
 * Pipes that lead outside the computation (those the first process was
 * started with, e.g. its stdio, known to all its descendants; after a
 * restart ckpt_restart's stdio) are neither drained nor recreated: on
 * 0-2 they become ckpt_restart's stdio, elsewhere /dev/null.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ckpt/restart_plan.h"
#include "ckpt/safe_file.h"
#include "internal.h"

#define DRAIN_MAX	(64U << 20)	/* more than any pipe can hold */

/* ----- pipes leading outside the computation ----- */

#define OUTSIDE_MAX 16

static uint64_t outside[OUTSIDE_MAX];	/* pipe inodes; 0 = free slot */
char pipes_outside_env[OUTSIDE_MAX * 21 + 16];	/* CKPT_OUTSIDE=a,b,... */

static uint64_t pipe_ino_of(int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode))
		return 0;
	return st.st_ino;
}

static void update_outside_env(void)
{
	size_t len = sizeof(pipes_outside_env), n;

	ckpt_fmt(pipes_outside_env, len, "CKPT_OUTSIDE=");
	n = strlen(pipes_outside_env);
	for (int i = 0; i < OUTSIDE_MAX && n + 1 < len; i++)
		if (outside[i]) {
			ckpt_fmt(pipes_outside_env + n, len - n, "%llu,",
				 (unsigned long long)outside[i]);
			n += strlen(pipes_outside_env + n);
		}
}

static void add_outside(uint64_t ino)
{
	if (!ino || pipes_is_outside(ino))
		return;
	for (int i = 0; i < OUTSIDE_MAX; i++)
		if (!outside[i]) {
			outside[i] = ino;
			return;
		}
}

/* Every pipe the first process of a computation was started with. */
static void add_inherited_pipes(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)))
		if (e->d_name[0] >= '0' && e->d_name[0] <= '9' &&
		    atoi(e->d_name) != dirfd(d))
			add_outside(pipe_ino_of(atoi(e->d_name)));
	closedir(d);
}

/* At start-up (normal context): a program exec'd inside the computation
 * inherits the list (env); the first process takes its own pipes. */
void pipes_init_outside(const char *env)
{
	char *end;

	memset(outside, 0, sizeof(outside));
	if (env) {
		while (*env) {
			add_outside(strtoull(env, &end, 10));
			if (end == env || *end != ',')
				break;
			env = end + 1;
		}
	} else {
		add_inherited_pipes();
	}
	update_outside_env();
}

void pipes_reset_outside(void)
{
	memset(outside, 0, sizeof(outside));
	update_outside_env();
}

/* After a restart, the outer stdio is ckpt_restart's. */
void pipes_set_outside(int fd)
{
	add_outside(pipe_ino_of(fd));
	update_outside_env();
}

int pipes_is_outside(uint64_t ino)
{
	for (int i = 0; ino && i < OUTSIDE_MAX; i++)
		if (outside[i] == ino)
			return 1;
	return 0;
}

/* ----- checkpoint: drain and write back ----- */

static char drain_buf[65536];
static uint64_t round_generation;
static char round_dir[4096];
/* one per saved pipe, FIFO or socket record with content: per fd */
static int drained_memfds[CKPT_MAX_FDS];
static int ndrained;
/* one claim per pipe, FIFO or socket saved this round: as many as fds */
static struct round_key claimed[CKPT_MAX_FDS];	/* this round */
static uint64_t claimed_generation;
static int nclaimed;

/* .ckpt_pipe_<ino>, .ckpt_sock_<ino>, .ckpt_fifo_<dev>_<ino>,
 * .ckpt_file_<dev>_<ino> */
static void claim_name(char *buf, size_t len, const struct round_key *key,
		       uint64_t gen)
{
	char dev[32] = "";

	if (key->dev)
		ckpt_fmt(dev, sizeof(dev), "%llu_",
			 (unsigned long long)key->dev);
	ckpt_fmt(buf, len, ".ckpt_%s_%s%llu.g%llu", key->kind, dev,
		 (unsigned long long)key->ino, (unsigned long long)gen);
}

/* The previous round's claims are no longer needed by anyone: every
 * process finished that round before this one began. */
static void forget_old_claims(void)
{
	struct ckpt_refusal ref;
	char name[200];
	int dirfd = nclaimed ? ckpt_safe_dir_open(round_dir, &ref) : -1;

	for (int i = 0; dirfd >= 0 && i < nclaimed; i++) {
		claim_name(name, sizeof(name), &claimed[i],
			   claimed_generation);
		if (ckpt_own_leftover(dirfd, name, &ref) == 0)
			unlinkat(dirfd, name, 0);
	}
	if (dirfd >= 0)
		close(dirfd);
	nclaimed = 0;
}

/* The claim file this round could not make, for the round's error. */
static char claim_failure[700];

const char *round_claim_failure(void)
{
	return claim_failure;
}

void pipes_begin_round(uint64_t generation, const char *dir)
{
	claim_failure[0] = 0;
	forget_old_claims();
	round_generation = generation;
	claimed_generation = generation;
	ckpt_fmt(round_dir, sizeof(round_dir), "%s", dir);
	ndrained = 0;
}

void pipes_end_round(void)
{
	for (int i = 0; i < ndrained; i++)
		close(drained_memfds[i]);
	ndrained = 0;
}

/* 1: name is made, ours; 0: another process of ours made it first;
 * -errno: the name is taken by something not ours (logged). Made
 * exclusively, never through a symbolic link (docs/security.md, "Files in
 * the checkpoint directory"). */
static int make_claim(const char *name)
{
	struct ckpt_refusal ref;
	int dirfd = ckpt_safe_dir_open(round_dir, &ref), fd, r;

	if (dirfd < 0) {
		if (ref.why)	/* the coordinator's answer says it too */
			ckpt_fmt(claim_failure, sizeof(claim_failure),
				 "checkpoint directory %s: %s (owner uid %u)",
				 round_dir, ref.why, ref.uid);
		else
			ckpt_fmt(claim_failure, sizeof(claim_failure),
				 "checkpoint directory %s", round_dir);
		return dirfd;
	}
	fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
	if (fd >= 0) {
		close(fd);
		r = 1;
	} else {
		r = errno == EEXIST ? ckpt_own_leftover(dirfd, name, &ref) :
		    -errno;
		if (r < 0 && ref.why)
			ckpt_log("claim file %s/%s: %s (owner uid %u); "
				 "refusing it", round_dir, name, ref.why,
				 ref.uid);
	}
	close(dirfd);
	if (r < 0)
		ckpt_fmt(claim_failure, sizeof(claim_failure),
			 "claim file %s/%s", round_dir, name);
	return r;
}

/* 1: this process saves the object `key` (a pipe, socket or FIFO) in
 * this round; 0: another process does, or this one already did through
 * another fd. */
int round_claim(const struct round_key *key)
{
	char name[200];
	int r;

	for (int i = 0; i < nclaimed; i++)
		if (claimed[i].ino == key->ino && claimed[i].dev == key->dev &&
		    !strcmp(claimed[i].kind, key->kind))
			return 0;
	if (nclaimed == CKPT_MAX_FDS)
		return -E2BIG;
	claim_name(name, sizeof(name), key, round_generation);
	r = make_claim(name);
	if (r == 1)
		claimed[nclaimed++] = *key;
	return r;
}

/* A memfd of saved bytes, closed once the image is written. */
int round_keep_memfd(int fd)
{
	if (ndrained == CKPT_MAX_FDS)
		return -E2BIG;
	drained_memfds[ndrained++] = fd;
	return 0;
}

static int open_end(int fd, int mode)
{
	char proc[64];
	int r;

	ckpt_fmt(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	r = open(proc, mode | O_NONBLOCK | O_CLOEXEC);
	return r < 0 ? -errno : r;
}

static int copy_out(int rfd, int memfd, unsigned limit, uint64_t *size)
{
	*size = 0;
	while (*size < limit) {
		ssize_t n = read(rfd, drain_buf, sizeof(drain_buf));

		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0)
			return n < 0 ? -errno : 0;
		if (write(memfd, drain_buf, n) != n)
			return -EIO;
		*size += n;
	}
	return 0;
}

static int write_back(int wfd, int memfd, uint64_t size)
{
	for (uint64_t off = 0; off < size;) {
		ssize_t n = pread(memfd, drain_buf, size - off <
				  sizeof(drain_buf) ? size - off :
				  sizeof(drain_buf), off);

		if (n <= 0)
			return -EIO;
		if (write(wfd, drain_buf, n) != n)
			return errno == EAGAIN ? -ENOSPC : -EIO;
		off += n;
	}
	return 0;
}

/*
 * If this process drains the pipe or FIFO `key` of fd: *memfd gets the
 * bytes in flight (owned here until pipes_end_round) and *size their
 * count, and the pipe holds them again. Else *memfd = -1. 0 or -errno.
 * A FIFO's ends open like a pipe's through /proc/self/fd: the read end
 * first (never blocks), then the write end (a reader exists: no ENXIO).
 */
int pipes_drain(int fd, const struct round_key *key, int *memfd,
		uint64_t *size)
{
	int rfd, wfd, mfd, r;
	int limit;

	*memfd = -1;
	*size = 0;
	r = round_claim(key);
	if (r <= 0)
		return r;
	if (ndrained == CKPT_MAX_FDS)
		return -E2BIG;
	limit = fcntl(fd, F_GETPIPE_SZ);
	if (limit <= 0 || (unsigned)limit > DRAIN_MAX)
		limit = DRAIN_MAX;
	rfd = open_end(fd, O_RDONLY);
	if (rfd < 0)
		return rfd;
	wfd = open_end(fd, O_WRONLY);
	mfd = memfd_create("ckpt-pipe-data", MFD_CLOEXEC);
	if (wfd < 0 || mfd < 0) {
		r = wfd < 0 ? wfd : -errno;
		goto out;
	}
	r = copy_out(rfd, mfd, limit, size);
	if (r == 0)
		r = write_back(wfd, mfd, *size);
	if (r == 0 && round_keep_memfd(mfd) == 0) {
		*memfd = mfd;
		mfd = -1;
	}
out:
	if (mfd >= 0)
		close(mfd);
	if (wfd >= 0)
		close(wfd);
	close(rfd);
	return r;
}

/* A copy of a snapshot's template shares its pipes with the process it
 * replaces: fd's pipe is emptied, then holds the size bytes of memfd (the
 * bytes drained at the snapshot) again. 0 or -errno. */
int pipes_refill(int fd, int memfd, uint64_t size)
{
	int rfd = open_end(fd, O_RDONLY), wfd, r;

	if (rfd < 0)
		return rfd;
	while (read(rfd, drain_buf, sizeof(drain_buf)) > 0)
		;
	/* rfd stays open while writing: a pipe whose program ends are all
	 * write ends still takes its bytes back (no EPIPE, no SIGPIPE) */
	wfd = open_end(fd, O_WRONLY);
	r = wfd < 0 ? wfd : write_back(wfd, memfd, size);
	if (wfd >= 0)
		close(wfd);
	close(rfd);
	return r;
}
