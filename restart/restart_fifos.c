// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Named pipes (FIFOs) of a restarted computation, opened once by
 * ckpt_restart before it forks the process tree. The FIFO is made again
 * with mkfifo and its saved permissions if its path is gone (a FIFO that
 * was unlinked while open becomes an anonymous pipe: nobody can open it
 * by name any more). It is opened without ever blocking: the read end
 * first (O_RDONLY | O_NONBLOCK always succeeds), then the write end and an
 * O_RDWR description through /proc/self/fd of the read end (a reader
 * exists: no ENXIO). The bytes in flight at the checkpoint (saved once,
 * in the image of the process that drained the FIFO, libckpt-preload/
 * pipes.c) are written in, and each end is handed, through the plan's
 * file table, to every fd of every image that had the FIFO open with that
 * access mode: one open file description per access mode, as for pipes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "process_tree.h"

#define FIFO_MAX	CKPT_PLAN_MAX_PIPES
#define DELETED		" (deleted)"

enum { END_READ, END_WRITE, END_RDWR, NENDS };

struct fifo_need {
	const char *path;
	uint32_t mode;			/* permission bits */
	unsigned size;			/* saved F_GETPIPE_SZ, the largest */
	int needs[NENDS];		/* some fd had this access mode */
	int ends[NENDS];		/* handed fd numbers, -1: none */
	const struct ckpt_image *data_img;
	const struct ckpt_fd_info *data;	/* the drainer's record */
};

static int end_of(uint32_t flags)
{
	switch (flags & O_ACCMODE) {
	case O_RDONLY:
		return END_READ;
	case O_WRONLY:
		return END_WRITE;
	default:
		return END_RDWR;
	}
}

static struct fifo_need *find_fifo(struct fifo_need *f, int n,
				   const char *path)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(f[i].path, path))
			return &f[i];
	return NULL;
}

static int note_fifo(struct fifo_need *fifos, int *n,
		     const struct ckpt_image *img,
		     const struct ckpt_fd_info *rec)
{
	const char *path = image_string(img, rec->path);
	struct fifo_need *f = find_fifo(fifos, *n, path);

	if (!f) {
		if (*n == FIFO_MAX) {
			fprintf(stderr, "ckpt_restart: %s: more than %d FIFOs "
				"in the computation\n", img->path, FIFO_MAX);
			return -E2BIG;
		}
		f = &fifos[(*n)++];
		memset(f, 0, sizeof(*f));
		f->path = path;
		f->mode = (uint32_t)rec->offset & 07777;
	}
	f->needs[end_of(rec->flags)] = 1;
	if (rec->pipe_size > f->size)
		f->size = rec->pipe_size;
	if (rec->data_size && !f->data) {
		f->data = rec;
		f->data_img = img;
	}
	return 0;
}

static int is_deleted(const char *path)
{
	size_t len = strlen(path), dl = strlen(DELETED);

	return len > dl && !strcmp(path + len - dl, DELETED);
}

/* The FIFO at f->path, made again if it is gone: its read end. */
static int open_read_end(const struct fifo_need *f)
{
	struct stat st;
	int fds[2], made = 0;

	if (is_deleted(f->path)) {
		if (pipe(fds) < 0)
			return -errno;
		close(fds[1]);
		return fds[0];
	}
	if (lstat(f->path, &st) < 0) {
		if (errno != ENOENT)
			return -errno;
		if (mkfifo(f->path, f->mode) < 0)
			return -errno;
		made = 1;
	} else if (!S_ISFIFO(st.st_mode)) {
		return -EEXIST;
	}
	/* What is there now, never through a symbolic link: the refill
	 * writes into it (docs/security.md, "Files in the checkpoint
	 * directory"). */
	fds[0] = open(f->path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW);
	if (fds[0] < 0)
		return -errno;
	if (fstat(fds[0], &st) < 0 || !S_ISFIFO(st.st_mode) ||
	    (made && fchmod(fds[0], f->mode) < 0)) {
		close(fds[0]);
		return -EEXIST;
	}
	return fds[0];
}

static int reopen_end(int rfd, int mode)
{
	char proc[64];
	int fd;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", rfd);
	fd = open(proc, mode | O_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

/* Every end moved to `floor` or above: opened at the lowest free numbers,
 * an end may sit on a slot of the kept range that another end is to be
 * placed at (once the holes below the range are used up). */
static int lift_ends(int ends[NENDS], int floor)
{
	for (int i = 0; i < NENDS; i++) {
		int moved = fcntl(ends[i], F_DUPFD, floor);

		if (moved < 0)
			return -errno;
		close(ends[i]);
		ends[i] = moved;
	}
	return 0;
}

/* Open all three ends (the write end refills it); keep those some fd
 * had, blocking again (libckpt then sets each holder's saved status
 * flags), placed in the kept range. */
static int open_fifo(struct fifo_need *f, int *next_fd)
{
	int ends[NENDS] = { -1, -1, -1 }, r = 0;

	for (int i = 0; i < NENDS; i++)
		f->ends[i] = -1;
	ends[END_READ] = open_read_end(f);
	if (ends[END_READ] < 0)
		return ends[END_READ];
	ends[END_WRITE] = reopen_end(ends[END_READ], O_WRONLY);
	ends[END_RDWR] = reopen_end(ends[END_READ], O_RDWR);
	if (ends[END_WRITE] < 0 || ends[END_RDWR] < 0)
		r = ends[END_WRITE] < 0 ? ends[END_WRITE] : ends[END_RDWR];
	if (r == 0 && f->size &&
	    fcntl(ends[END_WRITE], F_SETPIPE_SZ, f->size) < 0 &&
	    f->data && f->data->data_size > 65536)
		r = -errno;
	if (r == 0 && f->data)
		r = refill_pipe(f->data_img, f->data, f->size ? f->size :
				65536, ends[END_WRITE]);
	if (r == 0)
		r = lift_ends(ends, *next_fd + NENDS);
	for (int i = 0; i < NENDS && r == 0; i++) {
		if (!f->needs[i])
			continue;
		if (fcntl(ends[i], F_SETFL, 0) < 0)
			r = -errno;
		else if ((f->ends[i] = place_handed(ends[i], next_fd)) < 0)
			r = -EBUSY;
		ends[i] = -1;
	}
	for (int i = 0; i < NENDS; i++)
		if (ends[i] >= 0)
			close(ends[i]);
	return r;
}

/* Every FIFO record of every image gets the end of its access mode. */
static int hand_over(struct fifo_need *fifos, int n,
		     struct ckpt_image *imgs, int nimgs,
		     struct ckpt_restart_plan *plan)
{
	for (int i = 0; i < nimgs; i++)
		for (uint32_t j = 0; j < imgs[i].hdr.nfds; j++) {
			const struct ckpt_fd_info *rec = &imgs[i].fds[j];
			const struct fifo_need *f;

			if (rec->kind != CKPT_FD_FIFO)
				continue;
			f = find_fifo(fifos, n,
				      image_string(&imgs[i], rec->path));
			if (plan_add_file(plan, imgs[i].hdr.vpid, rec->fd,
					  f->ends[end_of(rec->flags)]) < 0) {
				fprintf(stderr, "ckpt_restart: more than %d "
					"shared open files in the "
					"computation\n", CKPT_PLAN_MAX_FILES);
				return -E2BIG;
			}
		}
	return 0;
}

int restart_fifos_create(struct ckpt_image *imgs, int n,
			 struct ckpt_restart_plan *plan, int *keep_fd_end)
{
	static struct fifo_need fifos[FIFO_MAX];
	int nfifos = 0, r;

	for (int i = 0; i < n; i++)
		for (uint32_t j = 0; j < imgs[i].hdr.nfds; j++) {
			if (imgs[i].fds[j].kind != CKPT_FD_FIFO)
				continue;
			r = note_fifo(fifos, &nfifos, &imgs[i],
				      &imgs[i].fds[j]);
			if (r < 0)
				return r;
		}
	for (int i = 0; i < nfifos; i++) {
		r = open_fifo(&fifos[i], keep_fd_end);
		if (r < 0) {
			fprintf(stderr, "ckpt_restart: FIFO %s: reopening it "
				"(size %u, %llu bytes in flight) failed: %s\n",
				fifos[i].path, fifos[i].size, fifos[i].data ?
				(unsigned long long)fifos[i].data->data_size :
				0ULL, r == -EEXIST ? "the path is no longer a "
				"FIFO" : strerror(-r));
			return r;
		}
	}
	return hand_over(fifos, nfifos, imgs, n, plan);
}
