// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Images whose process left after WRITTEN. Such a process was alive and
 * fully written at the checkpoint moment, so it is part of the consistent
 * state; once its threads run again (DO_RESUME) it may simply finish its
 * work: _exit(), a signal, an exit() racing the next round. WRITTEN means
 * its temporary image is complete in the page cache, which outlives the
 * process, so the coordinator finishes the process's part itself:
 *
 *   on the disconnect: check the temporary image (a regular file of our
 *                      uid, the image of this process and round, complete)
 *                      and fsync it            = SYNCED on its behalf
 *   DO_COMMIT time:    rename it into place, fsync the directory
 *                                              = DURABLE on its behalf
 *   the round fails:   remove it, like the process would on DO_ABORT
 *
 * Only for processes that talked over the Unix socket: the kernel vouches
 * that they run on this host as our uid (SO_PEERCRED), so their paths are
 * ours to act on. Files are reached through a descriptor of their
 * directory, which is opened once, so later renames of the path's
 * components cannot redirect the rename or the removal.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "ckpt/image.h"
#include "ckpt/image_names.h"
#include "coordinator.h"

/* 0 when fd is the complete image of process c for this round; names the
 * image file (`final`, the name it gets in its directory) from its
 * header. */
static int check_image(int fd, const struct conn *c, uint64_t generation,
		       char *final, size_t len, char *why, size_t wlen)
{
	const struct ckpt_msg_hello *h = &c->proc.hello;
	struct ckpt_image_header hdr;
	struct stat st;

	errno = 0;
	if (fstat(fd, &st) < 0 || pread(fd, &hdr, sizeof(hdr), 0) !=
	    (ssize_t)sizeof(hdr)) {
		snprintf(why, wlen, "reading it: %s", strerror(errno ? errno :
			 EIO));
		return -EIO;
	}
	hdr.program[sizeof(hdr.program) - 1] = 0;
	hdr.unique_id[sizeof(hdr.unique_id) - 1] = 0;
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid())
		snprintf(why, wlen, "not a regular file of uid %u",
			 (unsigned)geteuid());
	else if (memcmp(hdr.magic, CKPT_IMAGE_MAGIC, sizeof(hdr.magic)))
		snprintf(why, wlen, "not a checkpoint image");
	else if (hdr.generation != generation || hdr.vpid != h->vpid ||
		 strncmp(hdr.unique_id, h->unique_id, sizeof(h->unique_id)))
		snprintf(why, wlen, "the image of another process or "
			 "checkpoint (vpid %d, id %s, checkpoint %llu)",
			 (int)hdr.vpid, hdr.unique_id,
			 (unsigned long long)hdr.generation);
	else if ((uint64_t)st.st_size != hdr.image_size)
		snprintf(why, wlen, "incomplete (%lld of %llu bytes)",
			 (long long)st.st_size,
			 (unsigned long long)hdr.image_size);
	else {
		image_final_name(final, len, hdr.program, hdr.unique_id,
				 hdr.flags & CKPT_IMG_F_CHAIN, generation);
		return 0;
	}
	return -EINVAL;
}

/* Open the directory of path; base points at its last component. */
static int open_dir_of(const char *path, const char **base)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	int fd;

	if (path[0] != '/' || !slash || !slash[1])
		return -EINVAL;
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path + 1), path);
	*base = slash + 1;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Its image is already in place (it renamed, then left before DURABLE). */
static bool already_committed(const struct conn *c, uint64_t generation,
			      int dir_fd, const char *tmp_base, char *final,
			      size_t len)
{
	char why[256];
	int fd, r;

	if (faccessat(dir_fd, tmp_base, F_OK, AT_SYMLINK_NOFOLLOW) == 0 ||
	    errno != ENOENT)
		return false;
	image_final_name(final, len, c->proc.hello.program,
			 c->proc.hello.unique_id, 0, generation);
	fd = openat(dir_fd, final, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {	/* an incremental image is named by generation */
		image_final_name(final, len, c->proc.hello.program,
				 c->proc.hello.unique_id, 1, generation);
		fd = openat(dir_fd, final, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0)
		return false;
	r = check_image(fd, c, generation, final, len, why, sizeof(why));
	close(fd);
	return r == 0;
}

static void dir_path(int dir_fd, const char *base, char *out, size_t len)
{
	char link[64], dir[4096];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", dir_fd);
	n = readlink(link, dir, sizeof(dir) - 1);
	dir[n > 0 ? n : 0] = 0;
	if (snprintf(out, len, "%s/%s", dir, base) >= (int)len)
		out[0] = 0;
}

static struct orphan_image *orphan_new(struct coordinator *co,
				       struct conn *c)
{
	struct round *r = &co->round;
	struct orphan_image *o;

	o = realloc(r->orphans, (r->norphans + 1) * sizeof(*o));
	if (!o) {
		coord_log("out of memory taking over an image");
		exit(1);
	}
	r->orphans = o;
	o = &r->orphans[r->norphans++];
	memset(o, 0, sizeof(*o));
	o->dir_fd = -1;
	proc_name(c, o->name, sizeof(o->name));
	buf_append(&o->unrestored, buf_str(&c->proc.unrestored),
		   c->proc.unrestored.len);
	return o;
}

/* Take over the image of c, which left after WRITTEN: 0 (it is synced
 * and committed with the others), 1 (it was committed already: why is
 * its path) or -errno with why. */
int orphan_adopt(struct coordinator *co, struct conn *c, char *why,
		 size_t wlen)
{
	const char *base;
	struct orphan_image *o;
	char final[256];
	int dir_fd, fd, r;

	if (!c->local_peer || !proc_names_this_host(c)) {
		snprintf(why, wlen, "it did not come over the Unix socket, "
			 "which vouches for its host and user");
		return -EREMOTE;
	}
	dir_fd = open_dir_of(c->proc.image_tmp, &base);
	if (dir_fd < 0) {
		snprintf(why, wlen, "its image %s: %s", c->proc.image_tmp[0] ?
			 c->proc.image_tmp : "(no path)", strerror(-dir_fd));
		return dir_fd;
	}
	if (c->proc.state == PROC_COMMITTING &&
	    already_committed(c, co->round.generation, dir_fd, base, final,
			      sizeof(final))) {
		dir_path(dir_fd, final, why, wlen);
		close(dir_fd);
		return 1;
	}
	fd = openat(dir_fd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	r = fd < 0 ? -errno : check_image(fd, c, co->round.generation, final,
					  sizeof(final), why, wlen);
	if (fd < 0)
		snprintf(why, wlen, "%s", strerror(-r));
	if (!r && fsync(fd) < 0) {
		r = -errno;
		snprintf(why, wlen, "fsync: %s", strerror(errno));
	}
	if (fd >= 0)
		close(fd);
	if (r < 0) {
		char what[1024];

		snprintf(what, sizeof(what), "its image %.512s: %.400s",
			 c->proc.image_tmp, why);
		snprintf(why, wlen, "%s", what);
		close(dir_fd);
		return r;
	}
	o = orphan_new(co, c);
	o->dir_fd = dir_fd;
	snprintf(o->tmp, sizeof(o->tmp), "%s", base);
	snprintf(o->final, sizeof(o->final), "%s", final);
	dir_path(dir_fd, final, o->path, sizeof(o->path));
	coord_log("checkpoint %llu: %s left after writing its image; the "
		  "coordinator synced it and commits it",
		  (unsigned long long)co->round.generation, o->name);
	return 0;
}

static void orphan_close(struct orphan_image *o)
{
	if (o->dir_fd >= 0)
		close(o->dir_fd);
	o->dir_fd = -1;
	buf_free(&o->unrestored);
}

/* DO_COMMIT time: each taken-over image replaces the previous one.
 * Calls back into the round with its outcome. */
void orphans_commit(struct coordinator *co)
{
	struct round *r = &co->round;

	for (int i = 0; i < r->norphans; i++) {
		struct orphan_image *o = &r->orphans[i];
		const char *op = "rename";
		char what[4400];
		int err = 0;

		if (o->dir_fd < 0)
			continue;
		if (renameat(o->dir_fd, o->tmp, o->dir_fd, o->final) < 0) {
			err = errno;
		} else if (fsync(o->dir_fd) < 0 && errno != EINVAL) {
			err = errno;
			op = "fsync of the directory of";
		}
		if (err)
			snprintf(what, sizeof(what), "the process had left; "
				 "committing its image: %s %s: %s", op,
				 o->path, strerror(err));
		round_orphan_committed(co, o->name, o->path,
				       buf_str(&o->unrestored), err,
				       err ? what : NULL);
		orphan_close(o);
	}
}

/* The round failed or ended: remove what was not committed. */
void orphans_discard(struct coordinator *co)
{
	struct round *r = &co->round;

	for (int i = 0; i < r->norphans; i++) {
		struct orphan_image *o = &r->orphans[i];

		if (o->dir_fd >= 0)
			unlinkat(o->dir_fd, o->tmp, 0);
		orphan_close(o);
	}
	free(r->orphans);
	r->orphans = NULL;
	r->norphans = 0;
}
