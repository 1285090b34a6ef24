/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The journal of files made exclusively (O_CREAT|O_EXCL, mkstemp and its
 * family) by the processes of a computation: ".ckpt_created" in each
 * process's checkpoint directory (CKPT_DIR), written by libckpt
 * (libckpt-preload/created_journal.c) as each file is made, read by
 * ckpt_restart (restart/restart_created.c). A lock file made after the
 * checkpoint by a process that was then killed (git's index.lock) stays
 * on disk; the restored process, which had not made it yet, found it
 * there and failed ("Unable to create index.lock: File exists"). The
 * restart removes such a file: docs/restart.md, "Files made after the
 * checkpoint".
 *
 * The file is a sequence of records, each a struct ckpt_created_record
 * followed by path_len bytes of absolute path (no NUL), appended with one
 * write each (O_APPEND) under a shared flock; whoever compacts it holds
 * the exclusive one. Little-endian, the host's own layout: the journal
 * never leaves its host. A record of another magic or version ends the
 * reading (what follows is ignored).
 */
#ifndef CKPT_CREATED_JOURNAL_H
#define CKPT_CREATED_JOURNAL_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#define CKPT_CREATED_JOURNAL		".ckpt_created"
#define CKPT_CREATED_MAGIC		0x44524343u	/* "CCRD" */
#define CKPT_CREATED_VERSION		1
/* libckpt compacts the journal (drops the records of files that are
 * gone) when an append finds it this large */
#define CKPT_CREATED_COMPACT_AT		(1u << 20)

struct ckpt_created_record {
	uint32_t magic;			/* CKPT_CREATED_MAGIC */
	uint16_t version;		/* CKPT_CREATED_VERSION */
	uint16_t path_len;		/* bytes of path that follow */
	uint64_t computation_id;	/* the coordinator's (WELCOME) */
	uint64_t generation;		/* the last checkpoint the creator
					   took part in: made after it */
	int32_t real_pid;		/* the creator, as the kernel knows it */
	int32_t vpid;			/* as the program sees it */
	uint64_t start_time;		/* the creator's start, clock ticks
					   after boot (/proc/PID/stat 22):
					   a live creator's file is kept */
	uint64_t dev, ino;		/* the file made */
	int64_t btime_sec;		/* its birth time, when the file
					   system tells it (has_btime) */
	uint32_t btime_nsec;
	uint32_t has_btime;
	char program[16];		/* the creator's name, for messages */
};

/* The record at buf + at (copied into *r): its length with its path, 0
 * at the end or at a record of another magic or version, which ends the
 * reading. */
static inline size_t ckpt_created_next(const char *buf, size_t size,
				       size_t at,
				       struct ckpt_created_record *r)
{
	size_t len;

	if (at + sizeof(*r) > size)
		return 0;
	memcpy(r, buf + at, sizeof(*r));
	len = sizeof(*r) + r->path_len;
	if (r->magic != CKPT_CREATED_MAGIC ||
	    r->version != CKPT_CREATED_VERSION || at + len > size)
		return 0;
	return len;
}

/* flock(fd, how) tried `tries` times, pause_us apart: a holder may be a
 * process stopped by a checkpoint, so nobody waits for it unbounded.
 * 0 or -errno (-EWOULDBLOCK: still held). */
static inline int ckpt_created_lock(int fd, int how, int tries,
				    unsigned int pause_us)
{
	for (int i = 0; i < tries; i++) {
		if (flock(fd, how | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		usleep(pause_us);
	}
	return -EWOULDBLOCK;
}

#endif /* CKPT_CREATED_JOURNAL_H */
