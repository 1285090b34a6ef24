// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Snapshots (docs/embedding.md, "Snapshots"): a forked checkpoint of the
 * whole computation written into a directory of the coordinator's on
 * tmpfs (memory), kept under an id until dropped. Restoring one is an
 * ordinary restart of its images (ckpt_command --restore kills the
 * computation and runs ckpt_restart on them), so a snapshot can be
 * restored any number of times and written out as ordinary images.
 *
 * A computation of one process is snapshotted as a template process
 * instead (libckpt-preload/snapshot_template.c): its directory then holds
 * no image until one is asked for, and the template ends when the
 * directory is removed. SNAPSHOT_IMAGES answers "template PID IMAGE" for
 * it: ckpt_command gives the template its orders itself.
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

bool snapshot_images_forced(void)
{
	const char *kind = getenv("CKPT_SNAPSHOT_KIND");

	return kind && !strcmp(kind, "image");
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

/* One line "template:PID:IMAGE" of a process that made a template: its
 * pid, and where IMAGE starts; 0 for another line. */
static pid_t template_line(const char *l, const char **image)
{
	size_t plen = strlen(CKPT_TEMPLATE_PATH_PREFIX);
	char *rest;
	long pid;

	if (strncmp(l, CKPT_TEMPLATE_PATH_PREFIX, plen))
		return 0;
	pid = strtol(l + plen, &rest, 10);
	if (pid <= 0 || *rest != ':')
		return 0;
	*image = rest + 1;
	return (pid_t)pid;
}

/* The DURABLE paths of the round, one per line. A snapshot of one
 * template: template_pid, paths its image. Of a tree: paths one
 * "template PID IMAGE" per process that made a template (as
 * SNAPSHOT_IMAGES answers it), a bare image path per other. */
static void take_paths(struct snapshot *s, const char *paths)
{
	const char *image = NULL;
	int lines = 0;

	for (const char *l = paths; *l; l += strcspn(l, "\n"),
	     l += *l == '\n')
		lines++;
	if (lines == 1 && (s->template_pid = template_line(paths, &image))) {
		buf_printf(&s->paths, "%s", image);
		return;
	}
	for (const char *l = paths; *l; l += strcspn(l, "\n"),
	     l += *l == '\n') {
		int n = (int)strcspn(l, "\n");
		pid_t pid = template_line(l, &image);

		if (!pid) {
			buf_printf(&s->paths, "%.*s\n", n, l);
			continue;
		}
		s->ntemplates++;
		buf_printf(&s->paths, "template %d %.*s\n", (int)pid,
			   (int)(n - (image - l)), image);
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
	take_paths(s, paths);
	buf_printf(reply, "%llu\n", (unsigned long long)id);
	coord_log("snapshot %llu taken in %s", (unsigned long long)id, dir);
}

/* The round's snapshot is kept as images: why not as a template, one
 * line for the requester's warnings. */
void snapshot_note_kind(struct coordinator *co, int members,
			struct buf *notes)
{
	const struct round *r = &co->round;
	const struct snapshot *s = find(co, r->snapshot_id);
	char why[200];

	if (!s || s->template_pid || s->ntemplates)
		return;
	if (snapshot_images_forced())
		snprintf(why, sizeof(why), "CKPT_SNAPSHOT_KIND=image is set "
			 "in the coordinator's environment");
	else if (members != 1)
		snprintf(why, sizeof(why), "none of its %d processes made "
			 "one (not on the coordinator's host?)", members);
	else
		snprintf(why, sizeof(why), "its process made none: it has "
			 "children not reaped yet, or it is not on the "
			 "coordinator's host");
	buf_printf(notes, "snapshot %llu is kept as images, not as a "
		   "template process: %s\n", (unsigned long long)s->id, why);
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

/* A template's private memory (the pages the program wrote since). */
static unsigned long long template_bytes(pid_t pid)
{
	char text[4096], *line;
	unsigned long long total = 0, kib;

	if (read_proc_text(pid, "smaps_rollup", text,
			   sizeof(text)) < 0)
		return 0;
	for (line = text; line; line = strchr(line, '\n')) {
		line += *line == '\n';
		if ((sscanf(line, "Private_Clean: %llu", &kib) == 1 ||
		     sscanf(line, "Private_Dirty: %llu", &kib) == 1))
			total += kib << 10;
	}
	return total;
}

/* A tree's templates: "templates:PID,PID,..." in kind, their private
 * memory added to *bytes. */
static void tree_templates(struct snapshot *s, struct buf *kind,
			   unsigned long long *bytes)
{
	buf_printf(kind, "templates");
	for (const char *l = buf_str(&s->paths); *l;
	     l += strcspn(l, "\n"), l += *l == '\n') {
		long pid = strncmp(l, "template ", 9) ? 0 :
			   strtol(l + 9, NULL, 10);

		if (pid <= 0)
			continue;
		buf_printf(kind, "%c%ld", kind->data[kind->len - 1] == 's' ?
			   ':' : ',', pid);
		*bytes += template_bytes((pid_t)pid);
	}
}

/* SNAPSHOTS: "ID AGE_MS KIB DIR KIND" per snapshot; KIND "image",
 * "template:PID" or a tree's "templates:PID,PID,...". */
void snapshot_list(struct coordinator *co, struct conn *c)
{
	struct buf t = { 0 };

	for (int i = 0; i < co->nsnapshots; i++) {
		struct snapshot *s = &co->snapshots[i];
		unsigned long long bytes = snapshot_bytes(s);
		struct buf kind = { 0 };

		if (s->template_pid) {
			buf_printf(&kind, "template:%d", (int)s->template_pid);
			bytes = template_bytes(s->template_pid);
		} else if (s->ntemplates) {
			tree_templates(s, &kind, &bytes);
		} else {
			buf_printf(&kind, "image");
		}
		buf_printf(&t, "%llu %lld %llu %s %s\n",
			   (unsigned long long)s->id,
			   (long long)(now_ms() - s->taken_ms),
			   bytes >> 10, s->dir, buf_str(&kind));
		buf_free(&kind);
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

bool snapshot_known(struct coordinator *co, uint64_t id)
{
	return find(co, id) != NULL;
}

/* SNAPSHOT_IMAGES: the image paths of snapshot id, one per line. */
void snapshot_images(struct coordinator *co, struct conn *c, uint64_t id)
{
	struct snapshot *s = find(co, id);

	if (!s) {
		reply_unknown(c, id);
		return;
	}
	if (s->template_pid) {
		struct buf t = { 0 };

		buf_printf(&t, "template %d %s", (int)s->template_pid,
			   buf_str(&s->paths));
		conn_reply(c, 0, buf_str(&t));
		buf_free(&t);
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
