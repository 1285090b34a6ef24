/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Files on temporary storage that the process created exclusively
 * (O_CREAT|O_EXCL, mkstemp and its family: wrappers/tmpfiles.c and the
 * open wrappers of wrappers/proc_paths.c). A compiler driver, sort or a
 * script keeps such a file closed between the program that writes it and
 * the one that reads it; a process that outlives the checkpoint removes
 * it, so its content is saved like that of an open temporary file
 * (saved_files.c) as long as the path still names the file it created.
 * The table is the process's memory: a forked child inherits it, exec
 * and exit lose it. When it is full, entries whose path is gone or names
 * another file make room; if none does, the new file is not recorded
 * (said once).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "internal.h"

#define MAX_CREATED 256
#define LOCK_TRIES 1000

struct created_file {
	uint64_t dev, ino;
	char path[PATH_MAX];
};

static struct created_file *created;	/* MAX_CREATED, mmap'd once */
static int ncreated, told_full, table_lock;

/* Whether the entry's path still names the file that was created. */
static int still_there(const struct created_file *c, struct stat *st)
{
	return stat(c->path, st) == 0 && S_ISREG(st->st_mode) &&
	       st->st_dev == c->dev && st->st_ino == c->ino;
}

/* Drop the entries whose file is gone or replaced; calls fn on the
 * others. */
static void keep_existing(void (*fn)(const char *, const struct stat *))
{
	struct stat st;
	int kept = 0;

	for (int i = 0; i < ncreated; i++) {
		if (!still_there(&created[i], &st))
			continue;
		if (fn)
			fn(created[i].path, &st);
		if (kept != i)
			created[kept] = created[i];
		kept++;
	}
	ncreated = kept;
}

static int map_table(void)
{
	void *p;

	if (created)
		return 0;
	p = mmap(NULL, MAX_CREATED * sizeof(*created), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	created = p;
	return 0;
}

static void add_created(const char *path, const struct stat *st)
{
	if (map_table() < 0)
		return;
	if (ncreated == MAX_CREATED)
		keep_existing(NULL);
	if (ncreated == MAX_CREATED) {
		if (!told_full++)
			ckpt_log("more than %d temporary files made and still "
				 "there: %s and later ones are not saved at a "
				 "checkpoint unless open", MAX_CREATED, path);
		return;
	}
	created[ncreated].dev = st->st_dev;
	created[ncreated].ino = st->st_ino;
	ckpt_fmt(created[ncreated].path, PATH_MAX, "%s", path);
	ncreated++;
}

/* The lock, with every signal blocked so that no checkpoint stops this
 * thread inside; bounded, since a fork may have copied it taken. */
static int lock_table(uint64_t *old)
{
	threads_block_all(old);
	for (int i = 0; i < LOCK_TRIES; i++) {
		if (!__atomic_exchange_n(&table_lock, 1, __ATOMIC_ACQUIRE))
			return 0;
		sched_yield();
	}
	threads_set_mask(*old);
	return -EDEADLK;
}

static void unlock_table(uint64_t old)
{
	__atomic_store_n(&table_lock, 0, __ATOMIC_RELEASE);
	threads_set_mask(old);
}

/* ckpt's own files (claims, temporary images: ".ckpt_*"), made by
 * libckpt through the same wrapped open, are not the program's. */
static int is_ckpt_own_file(const char *path)
{
	const char *base = strrchr(path, '/');

	return !strncmp(base ? base + 1 : path, ".ckpt_", 6);
}

/* fd was just made by an exclusive creation: record its file if it is
 * on temporary storage. errno is kept. */
void created_files_note(int fd)
{
	char proc[64], path[PATH_MAX];
	struct stat st;
	uint64_t old;
	ssize_t len;
	int e = errno;

	ckpt_fmt(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	len = readlink(proc, path, sizeof(path) - 1);
	if (len > 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		path[len] = 0;
		if (!is_ckpt_own_file(path) && path[0] == '/')
			created_journal_note(fd, path, &st);
		if (!is_ckpt_own_file(path) &&
		    saved_files_on_temporary_storage(path) &&
		    lock_table(&old) == 0) {
			add_created(path, &st);
			unlock_table(old);
		}
	}
	errno = e;
}

/* After a restart the file at each path is the one the process goes on
 * with (recreated by ckpt_restart from the image, a new inode, or left
 * as it was): it is recorded as such; entries whose path is gone are
 * dropped. */
void created_files_after_restart(void)
{
	struct stat st;
	int kept = 0;

	created_journal_after_restart();

	for (int i = 0; i < ncreated; i++) {
		if (stat(created[i].path, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		created[i].dev = st.st_dev;
		created[i].ino = st.st_ino;
		if (kept != i)
			created[kept] = created[i];
		kept++;
	}
	ncreated = kept;
}

/* At DO_SUSPEND (every thread stopped): fn for each file still there. */
void created_files_each(void (*fn)(const char *path, const struct stat *st))
{
	keep_existing(fn);
}
