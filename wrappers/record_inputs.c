/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Record and replay of the inputs that make two runs differ: the time
 * (clock_gettime, gettimeofday, time), random bytes (getrandom) and reads
 * of pipes, sockets and character devices (terminals, /dev/urandom). On
 * only when CKPT_RECORD_INPUTS=PATH is set (the gdb extension sets it:
 * docs/reversible-debugging.md); the record of this process is
 * PATH.<vpid>.
 *
 * The entries live in that file, outside the image, so that those written
 * after a snapshot survive its restore; the cursor (the offset of the next
 * entry) is a variable in memory, saved and restored with the snapshot.
 * Each call: an entry at the cursor is replayed (its kind checked: another
 * call there is a divergence, reported, and the record goes on from the
 * cursor, live); none, the call runs and its result is appended. Threads
 * of libckpt (the manager) are never recorded.
 */
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include "wrappers.h"

enum record_kind {
	REC_CLOCK_GETTIME = 1,
	REC_GETTIMEOFDAY,
	REC_TIME,
	REC_GETRANDOM,
	REC_READ,
};

struct record_entry {
	uint32_t kind;
	uint32_t len;		/* payload bytes after the entry */
	int64_t result;		/* the call's return value */
	int32_t error;		/* errno when result < 0 */
	int32_t pad;
};

__thread int ckpt_internal_thread __attribute__((tls_model("initial-exec")));

static int state;		/* 0 unknown, 1 on, -1 off */
static char base_path[1024];
static int log_fd = -1;	/* libckpt's own: not in images */
static uint64_t cursor;		/* saved with the snapshot */
static uint64_t log_end;	/* the file's size, as of the last open */
static int busy;		/* spin lock: one entry at a time */

DEFINE_NEXT(clock_gettime);
DEFINE_NEXT(gettimeofday);
DEFINE_NEXT(time);
DEFINE_NEXT(getrandom);

static int recording(void)
{
	const char *path;

	if (ckpt_internal_thread)
		return 0;
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE))
		return state > 0;
	path = getenv("CKPT_RECORD_INPUTS");
	if (path && *path)
		ckpt_fmt(base_path, sizeof(base_path), "%s", path);
	__atomic_store_n(&state, path && *path ? 1 : -1, __ATOMIC_RELEASE);
	return state > 0;
}

/* on, and called by the program (not by libckpt in its thread) */
#define RECORDING_CALL() (recording() && !called_from_libckpt(CALL_SITE()))

static void lock(void)
{
	wrappers_spin_lock(&busy);
}

static void unlock(void)
{
	wrappers_spin_unlock(&busy);
}

/* The log's descriptor is libckpt's own (never saved): after a restart
 * it is gone, and opened again here. */
static int open_log(void)
{
	char path[1100];

	if (log_fd >= 0)
		return log_fd;
	ckpt_fmt(path, sizeof(path), "%s.%d", base_path, (int)ckpt.vpid);
	log_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (log_fd < 0) {
		ckpt_log("recording inputs: open %s: %s; not recording", path,
			 strerror(errno));
		__atomic_store_n(&state, -1, __ATOMIC_RELEASE);
		return -1;
	}
	ckpt_mark_own_fd(log_fd, 1);
	log_end = (uint64_t)lseek(log_fd, 0, SEEK_END);
	return log_fd;
}

/* The entry at the cursor into *e and out (at most cap bytes); 1 when
 * there is one of this kind, 0 when the record ends here. */
static int replay_entry(uint32_t kind, struct record_entry *e, void *out,
			size_t cap)
{
	/* at the end of the record (the usual case, recording): no read */
	if (cursor >= log_end ||
	    pread(log_fd, e, sizeof(*e), cursor) != sizeof(*e))
		return 0;
	if (e->kind != kind || e->len > cap ||
	    pread(log_fd, out, e->len, cursor + sizeof(*e)) != e->len) {
		ckpt_log("recording inputs: divergence at offset %llu: the "
			 "record holds call kind %u (%u bytes), the program "
			 "now makes kind %u; recording from here",
			 (unsigned long long)cursor, e->kind, e->len, kind);
		if (ftruncate(log_fd, cursor) < 0)
			ckpt_log("recording inputs: truncate: %s",
				 strerror(errno));
		log_end = cursor;
		return 0;
	}
	cursor += sizeof(*e) + e->len;
	return 1;
}

static void append_entry(const struct record_entry *e, const void *data)
{
	struct iovec iov[2] = {
		{ (void *)e, sizeof(*e) }, { (void *)data, e->len },
	};
	ssize_t want = (ssize_t)(sizeof(*e) + e->len);

	if (pwritev(log_fd, iov, e->len ? 2 : 1, cursor) != want) {
		ckpt_log("recording inputs: write: %s", strerror(errno));
		return;
	}
	cursor += want;
	if (cursor > log_end)
		log_end = cursor;
}

/* Replay the call at the cursor, or run it (live(arg) fills out) and
 * record it. Returns the call's result, errno set as it was. */
static int64_t record_call(uint32_t kind, void *out, size_t len,
			   int64_t (*live)(void *arg), void *arg)
{
	struct record_entry e;
	int64_t r;

	lock();
	if (open_log() < 0) {
		unlock();
		return live(arg);
	}
	if (replay_entry(kind, &e, out, len)) {
		unlock();
		if (e.result < 0)
			errno = e.error;
		return e.result;
	}
	r = live(arg);
	memset(&e, 0, sizeof(e));
	e.kind = kind;
	e.result = r;
	e.error = r < 0 ? errno : 0;
	e.len = r < 0 ? 0 : (uint32_t)len;
	if (kind == REC_GETRANDOM || kind == REC_READ)
		e.len = r > 0 ? (uint32_t)r : 0;
	append_entry(&e, out);
	unlock();
	if (r < 0)
		errno = e.error;
	return r;
}

struct clock_call {
	clockid_t id;
	struct timespec *ts;
};

static int64_t live_clock_gettime(void *arg)
{
	struct clock_call *c = arg;

	return NEXT_FN(clock_gettime)(c->id, c->ts);
}

CKPT_WRAPPER int clock_gettime(clockid_t id, struct timespec *ts)
{
	struct clock_call c = { id, ts };

	if (!RECORDING_CALL())
		return NEXT_FN(clock_gettime)(id, ts);
	return (int)record_call(REC_CLOCK_GETTIME, ts, sizeof(*ts),
				live_clock_gettime, &c);
}

static int64_t live_gettimeofday(void *arg)
{
	return NEXT_FN(gettimeofday)(arg, NULL);
}

CKPT_WRAPPER int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
	if (!RECORDING_CALL() || tz)	/* the obsolete timezone: not recorded */
		return NEXT_FN(gettimeofday)(tv, tz);
	return (int)record_call(REC_GETTIMEOFDAY, tv, sizeof(*tv),
				live_gettimeofday, tv);
}

static int64_t live_time(void *arg)
{
	return NEXT_FN(time)(arg);
}

CKPT_WRAPPER time_t time(time_t *t)
{
	time_t now;

	if (!RECORDING_CALL())
		return NEXT_FN(time)(t);
	now = (time_t)record_call(REC_TIME, &now, 0, live_time, NULL);
	if (t)
		*t = now;
	return now;
}

struct buffer_call {
	int fd;
	void *buf;
	size_t len;
	unsigned flags;
	ssize_t (*next_read)(int, void *, size_t);
};

static int64_t live_getrandom(void *arg)
{
	struct buffer_call *c = arg;

	return NEXT_FN(getrandom)(c->buf, c->len, c->flags);
}

CKPT_WRAPPER ssize_t getrandom(void *buf, size_t len, unsigned flags)
{
	struct buffer_call c = { -1, buf, len, flags, NULL };

	if (!RECORDING_CALL())
		return NEXT_FN(getrandom)(buf, len, flags);
	return record_call(REC_GETRANDOM, buf, len, live_getrandom, &c);
}

/* Reads whose data a re-execution cannot read again: pipes, sockets and
 * character devices (terminals, /dev/urandom). Regular files are read
 * again. */
static int read_comes_from_outside(int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return 0;
	return S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) ||
	       S_ISCHR(st.st_mode);
}

static int64_t live_read(void *arg)
{
	struct buffer_call *c = arg;

	return c->next_read(c->fd, c->buf, c->len);
}

const char *record_inputs_path(void)
{
	return recording() ? base_path : NULL;
}

int record_inputs_wants_read(int fd)
{
	return recording() && read_comes_from_outside(fd);
}

ssize_t record_inputs_read(int fd, void *buf, size_t len,
			   ssize_t (*next_read)(int, void *, size_t))
{
	struct buffer_call c = { fd, buf, len, 0, next_read };

	return record_call(REC_READ, buf, len, live_read, &c);
}

/* Restarted (restore.c, before any thread of the program runs): the
 * descriptor of the record is not restored (its number may be another's
 * now); the next call opens the file again and learns its size. */
void record_inputs_restarted(void)
{
	log_fd = -1;
}

/* A child of fork: a record of its own (PATH.<its vpid>), from the start. */
void record_inputs_forked(void)
{
	log_fd = -1;
	cursor = 0;
}
