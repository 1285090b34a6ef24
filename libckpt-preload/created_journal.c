/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Files the program makes exclusively (O_CREAT|O_EXCL, mkstemp and its
 * family: the lock files of git, of editors, of package managers, and
 * temporary files), recorded on disk as each is made, in the journal of
 * the process's checkpoint directory (include/ckpt/created_journal.h).
 * A process killed after the checkpoint leaves such files behind; the
 * restored process had not made them yet and its own O_EXCL create then
 * failed (git: "Unable to create '.git/index.lock': File exists", and
 * every later git command with it). ckpt_restart removes what was made
 * after the checkpoint it restarts from (restart/restart_created.c).
 *
 * The record must be on disk before the program can be killed, so it is
 * written at once, one write under a shared flock with every signal
 * blocked (no checkpoint stops the thread holding it). The journal only
 * matters for files still there: an append that finds it past
 * CKPT_CREATED_COMPACT_AT drops the records of files that are gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include "ckpt/created_journal.h"
#include "ckpt/proc_stat.h"
#include "ckpt/safe_file.h"
#include "internal.h"

#define FLOCK_TRIES	200

static int journal_fd = -1;
static uint64_t journal_dev, journal_ino;
/* The newest checkpoint this process (or the one it forked from, or the
 * program before its exec: CKPT_EPOCH) was stopped for, or restored
 * from: what it makes now is made after that one. Not ckpt.generation,
 * which a forked child starts at 0 and a process sets only once its
 * image is committed, after it runs again. The computation comes the
 * same way to a program started by exec, which knows it only from its
 * WELCOME. */
static uint64_t epoch, inherited_computation;
static pid_t start_time_pid;
static uint64_t start_time;
static int told_failure;

/* This process's start, in clock ticks after boot (field 22 of
 * /proc/self/stat, after the name in parentheses). */
static uint64_t own_start_time(void)
{
	pid_t pid = ckpt_real_getpid();
	char state;

	if (start_time_pid == pid)
		return start_time;
	if (ckpt_proc_start_time("/proc/self/stat", &start_time, &state) < 0)
		return 0;
	start_time_pid = pid;
	return start_time;
}

/* Still the journal: a program that closes every descriptor (daemons
 * do) may have closed it, and its number may name a file of the
 * program's now. */
static int journal_still_open(void)
{
	struct stat st;

	return journal_fd >= 0 && ckpt_is_own_fd(journal_fd) &&
	       fstat(journal_fd, &st) == 0 &&
	       (uint64_t)st.st_dev == journal_dev &&
	       (uint64_t)st.st_ino == journal_ino;
}

static int open_journal(void)
{
	struct ckpt_refusal ref;
	struct stat st;
	int dirfd, fd;

	if (journal_still_open())
		return journal_fd;
	journal_fd = -1;
	if (!ckpt.ckpt_dir[0])
		return -ENOENT;
	dirfd = ckpt_safe_dir_open(ckpt.ckpt_dir, &ref);
	if (dirfd < 0)
		return dirfd;
	/* read too: compact() reads it back */
	fd = ckpt_open_own_at(dirfd, CKPT_CREATED_JOURNAL,
			      O_RDWR | O_APPEND, 0600, &ref);
	close(dirfd);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return -errno;
	}
	journal_dev = st.st_dev;
	journal_ino = st.st_ino;
	journal_fd = ckpt_move_fd_high(fd);
	return journal_fd;
}

static int lock_journal(int fd, int how)
{
	return ckpt_created_lock(fd, how, FLOCK_TRIES, 1000);
}

/* Whether the record's file is still at its path. */
static int record_file_there(const struct ckpt_created_record *r,
			     const char *path)
{
	char p[PATH_MAX];
	struct stat st;

	if (r->path_len >= sizeof(p))
		return 0;
	memcpy(p, path, r->path_len);
	p[r->path_len] = 0;
	return lstat(p, &st) == 0 && (uint64_t)st.st_dev == r->dev &&
	       (uint64_t)st.st_ino == r->ino;
}

/* Keep the records whose file is still there; under the exclusive lock.
 * A read of the journal through its own descriptor (O_APPEND writes at
 * the end whatever the offset). */
static void compact(int fd, off_t size)
{
	char *buf = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	off_t in = 0, out = 0;

	if (buf == MAP_FAILED)
		return;
	if (pread(fd, buf, (size_t)size, 0) != size)
		goto out;
	for (;;) {
		struct ckpt_created_record r;
		size_t len = ckpt_created_next(buf, (size_t)size, (size_t)in,
					       &r);

		if (!len)
			break;
		if (record_file_there(&r, buf + in + sizeof(r))) {
			memmove(buf + out, buf + in, len);
			out += (off_t)len;
		}
		in += (off_t)len;
	}
	if (out < in && ftruncate(fd, 0) == 0 && out > 0 &&
	    write(fd, buf, (size_t)out) != out)
		ckpt_log("compacting %s/%s: %s", ckpt.ckpt_dir,
			 CKPT_CREATED_JOURNAL, strerror(errno));
out:
	munmap(buf, (size_t)size);
}

/* Looked at every COMPACT_CHECK_EVERY appends of this process: a
 * record is ~150 bytes, the journal cannot grow far past the mark. */
#define COMPACT_CHECK_EVERY	64

static void compact_if_large(int fd)
{
	static unsigned int appends;
	struct stat st;

	if (++appends % COMPACT_CHECK_EVERY)
		return;
	if (fstat(fd, &st) < 0 || st.st_size < CKPT_CREATED_COMPACT_AT)
		return;
	if (lock_journal(fd, LOCK_EX) < 0)
		return;
	if (fstat(fd, &st) == 0 && st.st_size >= CKPT_CREATED_COMPACT_AT)
		compact(fd, st.st_size);
	flock(fd, LOCK_UN);
}

static void fill_record(struct ckpt_created_record *r, const char *path,
			const struct stat *st, int fd)
{
	struct statx sx;

	memset(r, 0, sizeof(*r));
	r->magic = CKPT_CREATED_MAGIC;
	r->version = CKPT_CREATED_VERSION;
	r->path_len = (uint16_t)strlen(path);
	r->computation_id = ckpt.computation_id ? ckpt.computation_id :
						  inherited_computation;
	r->generation = epoch;
	r->real_pid = ckpt_real_getpid();
	r->vpid = ckpt.vpid;
	r->start_time = own_start_time();
	r->dev = st->st_dev;
	r->ino = st->st_ino;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_BTIME, &sx) == 0 &&
	    (sx.stx_mask & STATX_BTIME)) {
		r->btime_sec = sx.stx_btime.tv_sec;
		r->btime_nsec = sx.stx_btime.tv_nsec;
		r->has_btime = 1;
	}
	ckpt_fmt(r->program, sizeof(r->program), "%s", ckpt.program);
}

static int append(const char *path, const struct stat *st, int file_fd)
{
	struct ckpt_created_record r;
	struct iovec iov[2];
	int fd = open_journal(), e;

	if (fd < 0)
		return fd;
	fill_record(&r, path, st, file_fd);
	iov[0] = (struct iovec){ &r, sizeof(r) };
	iov[1] = (struct iovec){ (void *)path, r.path_len };
	e = lock_journal(fd, LOCK_SH);
	if (e < 0)
		return e;
	e = writev(fd, iov, 2) == (ssize_t)(sizeof(r) + r.path_len) ? 0
								   : -EIO;
	flock(fd, LOCK_UN);
	compact_if_large(fd);
	return e;
}

/* file_fd was just made exclusively at path (absolute); errno kept. */
void created_journal_note(int file_fd, const char *path,
			  const struct stat *st)
{
	uint64_t old;
	int e = errno, r;

	if ((!ckpt.computation_id && !inherited_computation) ||
	    strlen(path) >= PATH_MAX ||
	    strlen(path) > UINT16_MAX)
		return;
	threads_block_all(&old);
	r = append(path, st, file_fd);
	threads_set_mask(old);
	if (r < 0 && r != -ENOENT && !told_failure++)
		ckpt_log("cannot record %s in %s/%s: %s; a restart will not "
			 "remove it if it is made after the checkpoint", path,
			 ckpt.ckpt_dir, CKPT_CREATED_JOURNAL, strerror(-r));
	errno = e;
}

/* After a restart libckpt's old descriptors are gone. */
void created_journal_after_restart(void)
{
	journal_fd = -1;
}

/* "CKPT_EPOCH=<generation>:<computation id, hex>" for the program an exec
 * starts; 0 when there is nothing to pass. */
size_t created_journal_env(char *buf, size_t len)
{
	uint64_t id = ckpt.computation_id ? ckpt.computation_id :
					     inherited_computation;

	if (!id)
		return 0;
	ckpt_fmt(buf, len, "CKPT_EPOCH=%llu:%llx", (unsigned long long)epoch,
		 (unsigned long long)id);
	return 1;
}

void created_journal_inherit(const char *epoch_var)
{
	char *end;

	if (!epoch_var)
		return;
	epoch = strtoull(epoch_var, &end, 10);
	if (*end != ':') {
		epoch = 0;
		return;
	}
	inherited_computation = strtoull(end + 1, &end, 16);
	if (*end)
		epoch = inherited_computation = 0;
}

void created_journal_epoch(uint64_t generation)
{
	if (generation > epoch)
		__atomic_store_n(&epoch, generation, __ATOMIC_RELEASE);
}
