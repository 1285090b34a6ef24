// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The pipes of a restarted computation, made once by ckpt_restart before
 * it forks the process tree: every pipe some image holds on a fd above 2,
 * or whose two ends are both among the images (a pipe between two
 * processes on their stdio, as in a shell pipeline), or that held bytes
 * in flight (drained: libckpt drains only the computation's own pipes,
 * and a pipe whose writers have all ended keeps them for its reader). Any
 * other pipe on 0-2 with only one end among the images leads outside the
 * computation: the restored process takes ckpt_restart's own stdio
 * instead.
 * Each pipe gets its saved size and the bytes that were in flight at the
 * checkpoint (saved once, in the image of the process that drained it),
 * and both ends are handed to every restored process at fixed numbers;
 * libckpt (libckpt-preload/pipes.c) takes the ends it had.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ckpt/copy_range.h"
#include "process_tree.h"

#define PIPE_DATA_MAX	(64ULL << 20)

struct pipe_need {
	uint64_t ino;
	int has_read, has_write, above_stdio;
	unsigned size;			/* saved F_GETPIPE_SZ, the largest */
	const struct ckpt_image *data_img;
	const struct ckpt_fd_info *data;	/* the drainer's record */
};

/* The inode number in an fd record's "pipe:[N]" / "socket:[N]" name. */
int fd_record_ino(const struct ckpt_image *img, const struct ckpt_fd_info *f,
		  const char *kind, uint64_t *ino)
{
	const char *name = image_string(img, f->path);
	size_t len = strlen(kind);
	unsigned long long v;
	char close_bracket;

	if (strncmp(name, kind, len) ||
	    sscanf(name + len, ":[%llu%c", &v, &close_bracket) != 2 ||
	    close_bracket != ']')
		return -EINVAL;
	*ino = v;
	return 0;
}

static struct pipe_need *find_need(struct pipe_need *needs, int n,
				   uint64_t ino)
{
	for (int i = 0; i < n; i++)
		if (needs[i].ino == ino)
			return &needs[i];
	return NULL;
}

static int note_fd(struct pipe_need *needs, int *n,
		   const struct ckpt_image *img, const struct ckpt_fd_info *f)
{
	struct pipe_need *p;
	uint64_t ino;

	if (fd_record_ino(img, f, "pipe", &ino) < 0) {
		fprintf(stderr, "ckpt_restart: %s: fd %d: pipe record with a "
			"bad name '%s'\n", img->path, f->fd,
			image_string(img, f->path));
		return -EINVAL;
	}
	p = find_need(needs, *n, ino);
	if (!p) {
		if (*n == CKPT_PLAN_MAX_PIPES) {
			fprintf(stderr, "ckpt_restart: %s: more than %d pipes "
				"in the computation\n", img->path,
				CKPT_PLAN_MAX_PIPES);
			return -E2BIG;
		}
		p = &needs[(*n)++];
		memset(p, 0, sizeof(*p));
		p->ino = ino;
	}
	if ((f->flags & O_ACCMODE) == O_WRONLY)
		p->has_write = 1;
	else
		p->has_read = 1;
	if (f->fd > 2)
		p->above_stdio = 1;
	if (f->pipe_size > p->size)
		p->size = f->pipe_size;
	if (f->data_size && !p->data) {
		p->data = f;
		p->data_img = img;
	}
	return 0;
}

/* Put the two new ends of a pipe or socket pair at exactly first and
 * first + 1, the top of the kept range. The ends are moved above that
 * range first: pipe() takes the lowest free numbers, so one end may sit
 * just where the other must go. Anything else there is an error. */
/* fd duplicated to exactly `want` and closed: 0; else -1, fd kept. */
static int dup_exactly(int fd, int want)
{
	int n = fcntl(fd, F_DUPFD, want);

	if (n == want) {
		close(fd);
		return 0;
	}
	if (n >= 0)
		close(n);
	return -1;
}

int place_pair(const int fds[2], int first)
{
	int hi[2] = { -1, -1 }, r = 0;

	if (fds[0] == first && fds[1] == first + 1)	/* already there */
		return 0;
	/* Both in holes below the range (ckpt_restart's kept range starts
	 * above the saved fds when it can): one move each. */
	if (fds[0] < first && fds[1] < first &&
	    dup_exactly(fds[0], first) == 0) {
		int rest[2] = { first, fds[1] };

		return dup_exactly(fds[1], first + 1) == 0 ? 0 :
		       place_pair(rest, first);
	}
	for (int i = 0; i < 2; i++) {
		hi[i] = fcntl(fds[i], F_DUPFD, first + 2);
		if (hi[i] < 0)
			r = -errno;
		close(fds[i]);
	}
	for (int i = 0; i < 2 && r == 0; i++) {
		if (fcntl(first + i, F_GETFD) != -1)
			r = -EBUSY;
		else if (dup2(hi[i], first + i) < 0)
			r = -errno;
	}
	for (int i = 0; i < 2; i++)
		if (hi[i] >= 0)
			close(hi[i]);
	return r;
}

/* Write the bytes saved with record f of img into the pipe or FIFO wfd
 * of `size` bytes. */
int refill_pipe(const struct ckpt_image *img, const struct ckpt_fd_info *f,
		unsigned size, int wfd)
{
	uint64_t size_saved = f->data_size;

	if (size_saved > PIPE_DATA_MAX || size_saved > size)
		return -EFBIG;
	return ckpt_copy_range(img->fd, f->data_offset, size_saved, wfd);
}

static int make_pipe(const struct pipe_need *p, struct ckpt_plan_pipe *out,
		     int *next_fd)
{
	int fds[2], r;

	if (pipe(fds) < 0)
		return -errno;
	r = place_pair(fds, *next_fd);
	if (r < 0)
		return r;
	out->ino = p->ino;
	out->read_fd = *next_fd;
	out->write_fd = *next_fd + 1;
	*next_fd += 2;
	if (p->size && fcntl(out->write_fd, F_SETPIPE_SZ, p->size) < 0 &&
	    p->data && p->data->data_size > 65536)
		return -errno;
	return p->data ? refill_pipe(p->data_img, p->data, p->size,
				     out->write_fd) : 0;
}

int restart_pipes_create(struct ckpt_image *imgs, int n,
			 struct ckpt_restart_plan *plan, int *keep_fd_end)
{
	static struct pipe_need needs[CKPT_PLAN_MAX_PIPES];
	int nneeds = 0, r;

	for (int i = 0; i < n; i++)
		for (uint32_t j = 0; j < imgs[i].hdr.nfds; j++) {
			if (imgs[i].fds[j].kind != CKPT_FD_PIPE)
				continue;
			r = note_fd(needs, &nneeds, &imgs[i], &imgs[i].fds[j]);
			if (r < 0)
				return r;
		}
	for (int i = 0; i < nneeds; i++) {
		struct pipe_need *p = &needs[i];

		/* bytes in flight: the pipe was drained, so it was the
		 * computation's even with its writers gone (`seq | sed |
		 * (sleep 2; while read l; ...)` once seq and sed ended) */
		if (!p->above_stdio && !(p->has_read && p->has_write) &&
		    !p->data)
			continue;
		r = make_pipe(p, &plan->pipes[plan->npipes], keep_fd_end);
		if (r < 0) {
			fprintf(stderr, "ckpt_restart: pipe:[%llu]: recreating "
				"it (size %u, %llu bytes in flight) failed: "
				"%s\n", (unsigned long long)p->ino, p->size,
				p->data ? (unsigned long long)
				p->data->data_size : 0ULL, strerror(-r));
			return r;
		}
		plan->npipes++;
	}
	return 0;
}
