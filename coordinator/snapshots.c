// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Snapshots (docs/embedding.md, "Snapshots"): a forked checkpoint of the
 * whole computation written into a directory of the coordinator's on
 * tmpfs (memory), kept under an id until dropped. Restoring one is an
 * ordinary restart of its images (ckpt_command --restore kills the
 * computation and runs ckpt_restart on them), so a snapshot can be
 * restored any number of times and written out as ordinary images.
 *
 * The directories live under one per-coordinator directory, made on the
 * first snapshot ($CKPT_SNAPSHOT_DIR, else /dev/shm, else /tmp:
 * "ckpt-snapshots-XXXXXX", 0700), removed with every snapshot when the
 * coordinator exits. At most COORD_SNAPSHOTS_MAX are kept.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "coordinator.h"

static char base_dir[4096];

static const char *base_parent(void)
{
	const char *env = getenv("CKPT_SNAPSHOT_DIR");
	struct stat st;

	if (env && env[0])
		return env;
	if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) &&
	    access("/dev/shm", W_OK | X_OK) == 0)
		return "/dev/shm";
	return "/tmp";
}

static int make_base(char *err, size_t errlen)
{
	if (base_dir[0])
		return 0;
	snprintf(base_dir, sizeof(base_dir), "%s/ckpt-snapshots-XXXXXX",
		 base_parent());
	if (!mkdtemp(base_dir)) {
		int e = errno;

		snprintf(err, errlen, "cannot make the snapshot directory "
			 "%s: %s\n", base_dir, strerror(e));
		base_dir[0] = 0;
		return -e;
	}
	return 0;
}

/* Remove dir and the files in it (images: no subdirectories). */
static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[8192];

	if (d) {
		while ((e = readdir(d))) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
		closedir(d);
	}
	rmdir(dir);
}

static struct snapshot *find(struct coordinator *co, uint64_t id)
{
	for (int i = 0; i < co->nsnapshots; i++)
		if (co->snapshots[i].id == id)
			return &co->snapshots[i];
	return NULL;
}

/* SNAPSHOT: a forked round into a new directory; the reply (at the end
 * of the round) is the id. */
void snapshot_request(struct coordinator *co, struct conn *c)
{
	char err[4400], dir[4096];
	uint64_t id;

	if (co->round.active) {
		conn_reply(c, EBUSY, "a checkpoint is running; take the "
			   "snapshot once it is done\n");
		return;
	}
	if (co->nsnapshots == COORD_SNAPSHOTS_MAX) {
		snprintf(err, sizeof(err), "%d snapshots are kept already "
			 "(the most this coordinator keeps); drop one with "
			 "ckpt_command --drop ID\n", COORD_SNAPSHOTS_MAX);
		conn_reply(c, ENOSPC, err);
		return;
	}
	if (make_base(err, sizeof(err)) < 0) {
		conn_reply(c, EIO, err);
		return;
	}
	id = ++co->last_snapshot_id;
	snprintf(dir, sizeof(dir), "%.4000s/%llu", base_dir,
		 (unsigned long long)id);
	if (mkdir(dir, 0700) < 0) {
		snprintf(err, sizeof(err), "cannot make %s: %s\n", dir,
			 strerror(errno));
		conn_reply(c, EIO, err);
		return;
	}
	round_request_into(co, c, CKPT_CHECKPOINT_F_FORKED |
			   CKPT_CHECKPOINT_F_SNAPSHOT, dir, id);
	if (!co->round.active) {	/* nothing to snapshot: replied */
		rmdir(dir);
		return;
	}
}

/* From round_finish: the round of snapshot `id` ended. Returns the text
 * of the reply to its requesters. */
void snapshot_round_done(struct coordinator *co, uint64_t id, bool ok,
			 const char *paths, const char *dir, struct buf *reply)
{
	struct snapshot *s;

	if (!ok) {
		remove_dir(dir);
		return;
	}
	s = &co->snapshots[co->nsnapshots++];
	memset(s, 0, sizeof(*s));
	s->id = id;
	s->taken_ms = now_ms();
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	buf_printf(&s->paths, "%s", paths);
	buf_printf(reply, "%llu\n", (unsigned long long)id);
	coord_log("snapshot %llu taken in %s", (unsigned long long)id, dir);
}

/* Bytes the snapshot's images take (tmpfs: memory). */
static unsigned long long snapshot_bytes(const struct snapshot *s)
{
	DIR *d = opendir(s->dir);
	struct dirent *e;
	unsigned long long total = 0;
	char path[8192];
	struct stat st;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		snprintf(path, sizeof(path), "%s/%s", s->dir, e->d_name);
		if (e->d_name[0] != '.' && stat(path, &st) == 0)
			total += (unsigned long long)st.st_blocks * 512;
	}
	closedir(d);
	return total;
}

/* SNAPSHOTS: "ID AGE_MS KIB DIR" per snapshot. */
void snapshot_list(struct coordinator *co, struct conn *c)
{
	struct buf t = { 0 };

	for (int i = 0; i < co->nsnapshots; i++) {
		const struct snapshot *s = &co->snapshots[i];

		buf_printf(&t, "%llu %lld %llu %s\n",
			   (unsigned long long)s->id,
			   (long long)(now_ms() - s->taken_ms),
			   snapshot_bytes(s) >> 10, s->dir);
	}
	conn_reply(c, 0, buf_str(&t));
	buf_free(&t);
}

static void reply_unknown(struct conn *c, uint64_t id)
{
	char text[200];

	snprintf(text, sizeof(text), "no snapshot %llu (ckpt_command "
		 "--snapshots lists them)\n", (unsigned long long)id);
	conn_reply(c, ENOENT, text);
}

/* SNAPSHOT_IMAGES: the image paths of snapshot id, one per line. */
void snapshot_images(struct coordinator *co, struct conn *c, uint64_t id)
{
	struct snapshot *s = find(co, id);

	if (!s) {
		reply_unknown(c, id);
		return;
	}
	conn_reply(c, 0, buf_str(&s->paths));
}

/* DROP: its images are removed (a process restored from them keeps the
 * pages it mapped: the files go when it unmaps them). */
void snapshot_drop(struct coordinator *co, struct conn *c, uint64_t id)
{
	struct snapshot *s = find(co, id);
	char text[100];

	if (!s) {
		reply_unknown(c, id);
		return;
	}
	remove_dir(s->dir);
	buf_free(&s->paths);
	*s = co->snapshots[--co->nsnapshots];
	memset(&co->snapshots[co->nsnapshots], 0, sizeof(*s));
	snprintf(text, sizeof(text), "snapshot %llu dropped\n",
		 (unsigned long long)id);
	conn_reply(c, 0, text);
}

/* The coordinator exits: every snapshot goes with it. */
void snapshots_remove_all(struct coordinator *co)
{
	for (int i = 0; i < co->nsnapshots; i++) {
		remove_dir(co->snapshots[i].dir);
		buf_free(&co->snapshots[i].paths);
	}
	co->nsnapshots = 0;
	if (base_dir[0])
		rmdir(base_dir);
	base_dir[0] = 0;
}
