// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The bytes of a saved TCP queue that do not fit into the new
 * connection. ckpt_restart puts a queue back by sending it from the other
 * end before any process runs, so it must fit in the receiver's receive
 * buffer plus the sender's send buffer, which an unprivileged user can
 * raise only to net.core.rmem_max/wmem_max; a running connection's queue
 * grows with autotuning up to tcp_rmem[2]. What fits is sent here; the
 * rest is copied into one memfd handed over with the plan
 * (ckpt_plan_tcp_rest), and the restored process holding the sending end
 * sends it after the restart barrier, before its program runs
 * (libckpt-preload/tcp_rest.c; docs/resources.md, TCP).
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "restart_tcp.h"

static int rest_fd = -1;

/* The plan's memfd of rests, made the first time. 0 or -errno. */
static int open_rests(struct ckpt_restart_plan *plan, int *keep_fd_end)
{
	int fd;

	if (rest_fd >= 0)
		return 0;
	fd = memfd_create("ckpt-tcp-rest", 0);	/* inherited */
	if (fd < 0)
		return -errno;
	fd = place_handed(fd, keep_fd_end);
	if (fd < 0)
		return -EBUSY;
	rest_fd = fd;
	plan->tcp_rest_fd = fd;
	return 0;
}

static int copy_to_rests(const struct ckpt_image *img, uint64_t off,
			 uint64_t size, uint64_t at)
{
	char buf[65536];

	for (uint64_t done = 0; done < size;) {
		uint64_t want = size - done;
		ssize_t n = pread(img->fd, buf, want < sizeof(buf) ?
				  want : sizeof(buf), off + done);

		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		if (pwrite(rest_fd, buf, n, at + done) != n)
			return -EIO;
		done += n;
	}
	return 0;
}

int restart_tcp_put_queue(struct ckpt_restart_plan *plan,
			  const struct ckpt_image *img, uint64_t off,
			  uint64_t size, int into, uint64_t into_ino,
			  int32_t vpid, int *keep_fd_end)
{
	struct ckpt_plan_tcp_rest *e;
	uint64_t sent, at = 0;
	int r = send_image_bytes_that_fit(img, off, size, into, &sent);

	if (r < 0 || sent == size)
		return r;
	if (plan->ntcp_rests == CKPT_PLAN_MAX_TCP_RESTS)
		return -E2BIG;
	r = open_rests(plan, keep_fd_end);
	if (r < 0)
		return r;
	if (plan->ntcp_rests) {
		e = &plan->tcp_rests[plan->ntcp_rests - 1];
		at = e->offset + e->size;
	}
	r = copy_to_rests(img, off + sent, size - sent, at);
	if (r < 0)
		return r;
	e = &plan->tcp_rests[plan->ntcp_rests++];
	memset(e, 0, sizeof(*e));
	e->ino = into_ino;
	e->offset = at;
	e->size = size - sent;
	e->vpid = vpid;
	return 0;
}
