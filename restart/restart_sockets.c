// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Connected AF_UNIX stream sockets whose two ends are both among the
 * images (libckpt-preload/sockets.c records each end with its peer's
 * inode and the bytes queued for it): one socketpair per pair, each end's
 * saved bytes written into the other end so they wait in the right
 * queue, both ends handed to every restored process through the plan.
 * A queue is charged to the writing end's send buffer, so that end's
 * SO_SNDBUF is raised to hold it first (a queue a program of this user
 * could make, up to twice net.core.wmem_max, always fits); what still
 * does not (a queue made with SO_SNDBUFFORCE) is written by the restored
 * process holding the writing end before its program runs
 * (restart_tcp_rest.c, libckpt-preload/tcp_rest.c).
 * An end whose peer is not among the images is left to libckpt (stdio on
 * 0-2, else /dev/null with a warning).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "process_tree.h"
#include "restart_tcp.h"

struct socket_end {
	uint64_t ino, peer;
	const struct ckpt_image *img;		/* the saver's record */
	const struct ckpt_fd_info *data;
	const struct ckpt_image *holder;	/* a process holding it */
	int done;
};


static struct socket_end *find_end(struct socket_end *ends, int n,
				   uint64_t ino)
{
	for (int i = 0; i < n; i++)
		if (ends[i].ino == ino)
			return &ends[i];
	return NULL;
}

static int note_end(struct socket_end *ends, int *n,
		    const struct ckpt_image *img, const struct ckpt_fd_info *f)
{
	struct socket_end *e;
	uint64_t ino;

	if (fd_record_ino(img, f, "socket", &ino) < 0) {
		fprintf(stderr, "ckpt_restart: %s: fd %d: socket record with a "
			"bad name '%s'\n", img->path, f->fd,
			image_string(img, f->path));
		return -EINVAL;
	}
	e = find_end(ends, *n, ino);
	if (!e) {
		if (*n == CKPT_PLAN_MAX_SOCKETS) {
			fprintf(stderr, "ckpt_restart: %s: more than %d socket "
				"ends in the computation\n", img->path,
				CKPT_PLAN_MAX_SOCKETS);
			return -E2BIG;
		}
		e = &ends[(*n)++];
		memset(e, 0, sizeof(*e));
		e->ino = ino;
		e->peer = f->peer_ino;
		e->holder = img;
	}
	if (f->data_size && !e->data) {
		e->data = f;
		e->img = img;
	}
	return 0;
}

/* Send bytes of the image from offset off into socket `into`, so that
 * they wait in its peer's queue, until `left` are sent or the new
 * connection holds no more; *sent: how many went. 0 or -errno. */
int send_image_bytes_that_fit(const struct ckpt_image *img, uint64_t off,
			      uint64_t left, int into, uint64_t *sent)
{
	char buf[65536];

	*sent = 0;
	while (*sent < left) {
		uint64_t want = left - *sent;
		ssize_t n = pread(img->fd, buf, want < sizeof(buf) ?
				  want : sizeof(buf), off + *sent), w;

		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		w = send(into, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w < 0)
			return errno == EAGAIN ? 0 : -errno;
		*sent += w;
		if (w < n)
			return 0;
	}
	return 0;
}

/* Room in the writing end's send buffer for `queued` bytes: twice the
 * value asked, up to net.core.wmem_max, unless privileged. */
static void make_room(int writer, uint64_t queued)
{
	int size = queued > (1U << 30) ? 1 << 30 : (int)queued;

	if (queued <= 65536)
		return;
	if (setsockopt(writer, SOL_SOCKET, SO_SNDBUFFORCE, &size,
		       sizeof(size)) < 0)
		setsockopt(writer, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
}

/* Put the bytes queued for `e` into the queue of the end it is read
 * from, by writing them into its peer's end `into`; the rest, if any, is
 * written by the process holding that end. */
static int refill(const struct socket_end *e, const struct socket_end *peer,
		  int into, struct ckpt_restart_plan *plan, int *keep_fd_end)
{
	if (!e->data || (e->data->fd_flags & CKPT_FDF_MESSAGES))
		return 0;	/* messages with fds: restart_unix_dgram.c */
	make_room(into, e->data->data_size);
	return restart_tcp_put_queue(plan, e->img, e->data->data_offset,
				     e->data->data_size, into, peer->ino,
				     peer->holder->hdr.vpid, keep_fd_end);
}

static int make_pair(struct socket_end *a, struct socket_end *b,
		     struct ckpt_restart_plan *plan, int *next_fd)
{
	int sv[2], r;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return -errno;
	r = place_pair(sv, *next_fd);
	if (r < 0)
		return r;
	plan->sockets[plan->nsockets].ino = a->ino;
	plan->sockets[plan->nsockets++].fd = *next_fd;
	plan->sockets[plan->nsockets].ino = b->ino;
	plan->sockets[plan->nsockets++].fd = *next_fd + 1;
	*next_fd += 2;
	a->done = b->done = 1;
	r = refill(a, b, *next_fd - 1, plan, next_fd);
	return r ? r : refill(b, a, *next_fd - 2, plan, next_fd);
}

int restart_sockets_create(struct ckpt_image *imgs, int n,
			   struct ckpt_restart_plan *plan, int *keep_fd_end)
{
	static struct socket_end ends[CKPT_PLAN_MAX_SOCKETS];
	int nends = 0, r;

	for (int i = 0; i < n; i++)
		for (uint32_t j = 0; j < imgs[i].hdr.nfds; j++) {
			if (imgs[i].fds[j].kind != CKPT_FD_UNIX_STREAM)
				continue;
			r = note_end(ends, &nends, &imgs[i], &imgs[i].fds[j]);
			if (r < 0)
				return r;
		}
	for (int i = 0; i < nends; i++) {
		struct socket_end *a = &ends[i], *b;

		b = find_end(ends, nends, a->peer);
		if (a->done || !b || b == a || b->peer != a->ino)
			continue;
		r = make_pair(a, b, plan, keep_fd_end);
		if (r < 0) {
			fprintf(stderr, "ckpt_restart: socket:[%llu] and "
				"socket:[%llu]: recreating the connected pair "
				"failed: %s\n", (unsigned long long)a->ino,
				(unsigned long long)b->ino, strerror(-r));
			return r;
		}
	}
	return 0;
}

/* Connections that waited in a Unix stream listener's accept queue at the
 * checkpoint (CKPT_FDF_IN_BACKLOG UNIX_STREAM records, peer_ino their
 * client's end: libckpt-preload/accept_queue.c). The client's end was
 * saved before the connection was taken, as a socket connected to the
 * listener's address (SOCKET_OUTSIDE): its new socket connects to that
 * restored listener, where it waits again, and sends the bytes saved with
 * the connection. After restart_listeners_create. */

/* The record of the end with inode ino, among every image's. */
static const struct ckpt_fd_info *record_of(const struct ckpt_image *imgs,
					    int n, uint64_t ino,
					    const struct ckpt_image **img)
{
	uint64_t i_ino;

	for (int i = 0; i < n; i++)
		for (uint32_t j = 0; j < imgs[i].hdr.nfds; j++) {
			const struct ckpt_fd_info *f = &imgs[i].fds[j];

			if (!(f->fd_flags & CKPT_FDF_IN_BACKLOG) &&
			    f->kind == CKPT_FD_SOCKET_OUTSIDE &&
			    fd_record_ino(&imgs[i], f, "socket", &i_ino) == 0 &&
			    i_ino == ino) {
				*img = &imgs[i];
				return f;
			}
		}
	return NULL;
}

/* The restored Unix listener bound at addr, -ENOENT if none is. */
static int unix_listener_at(const struct ckpt_image *imgs, int n,
			    const uint8_t *addr, uint32_t len,
			    const struct ckpt_restart_plan *plan)
{
	struct ckpt_socket_info si;
	uint64_t ino;
	int fd;

	for (int i = 0; i < n; i++)
		for (uint32_t j = 0; j < imgs[i].hdr.nfds; j++) {
			const struct ckpt_fd_info *f = &imgs[i].fds[j];

			if (f->kind != CKPT_FD_SOCKET_LISTEN ||
			    socket_record_info(&imgs[i], f, &si, &ino) < 0 ||
			    si.family != AF_UNIX || si.addr_len != len ||
			    memcmp(si.addr, addr, len))
				continue;
			fd = plan_socket_fd(plan, ino);
			if (fd >= 0)
				return fd;
		}
	return -ENOENT;
}

static int requeue_unix(struct ckpt_image *imgs, int n,
			const struct ckpt_image *img,
			const struct ckpt_fd_info *f,
			struct ckpt_restart_plan *plan, int *keep_fd_end)
{
	const struct ckpt_image *cimg;
	const struct ckpt_fd_info *client = record_of(imgs, n, f->peer_ino,
						      &cimg);
	struct ckpt_socket_info si;
	uint64_t ino;
	int fd, r;

	if (!client || socket_record_info(cimg, client, &si, &ino) < 0 ||
	    si.family != AF_UNIX || !si.peer_len ||
	    unix_listener_at(imgs, n, si.peer, si.peer_len, plan) < 0)
		return 0;	/* no client or no listener: lost */
	if (plan->nsockets + 1 > CKPT_PLAN_MAX_SOCKETS)
		return -E2BIG;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* a listener with room takes it at once; none: EAGAIN */
	if (connect(fd, (const void *)si.peer, si.peer_len) < 0 ||
	    fcntl(fd, F_SETFL, 0) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	fd = restart_tcp_hand(plan, ino, fd, keep_fd_end);
	if (fd < 0)
		return fd;
	if (f->fd_flags & CKPT_FDF_MESSAGES) {
		fprintf(stderr, "ckpt_restart: %s: a connection waiting to be "
			"accepted held fds or credentials in flight: its "
			"messages are dropped\n", img->path);
		return 0;
	}
	make_room(fd, f->data_size);
	return restart_tcp_put_queue(plan, img, f->data_offset, f->data_size,
				     fd, ino, cimg->hdr.vpid, keep_fd_end);
}

int restart_unix_backlog_create(struct ckpt_image *imgs, int n,
				struct ckpt_restart_plan *plan,
				int *keep_fd_end)
{
	for (int i = 0; i < n; i++)
		for (uint32_t j = 0; j < imgs[i].hdr.nfds; j++) {
			const struct ckpt_fd_info *f = &imgs[i].fds[j];
			int r;

			if (f->kind != CKPT_FD_UNIX_STREAM ||
			    !(f->fd_flags & CKPT_FDF_IN_BACKLOG))
				continue;
			r = requeue_unix(imgs, n, &imgs[i], f, plan,
					 keep_fd_end);
			if (r < 0) {
				fprintf(stderr, "ckpt_restart: %s: fd %d: "
					"queueing the connection again in its "
					"Unix listener failed: %s\n",
					imgs[i].path, f->fd, strerror(-r));
				return r;
			}
		}
	return 0;
}
