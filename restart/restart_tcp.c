// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * TCP connections whose two ends are both among the images (recorded by
 * libckpt-preload/socket_state.c as CKPT_FD_SOCKET_OUTSIDE with their
 * addresses, and by files.c with the bytes waiting to be read at each
 * end): the ends are matched by address (one's local address is the
 * other's peer), connected again over loopback, each end's saved bytes
 * sent from the other end so they wait in the right queue, and both ends
 * handed to every restored process through the plan's socket table. An
 * end whose partner is restarted on another host meets it there
 * (restart_tcp_hosts.c); any other end without its partner is left to
 * libckpt, which restores it as closed by the peer.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "ckpt/sockaddr_text.h"
#include "restart_tcp.h"

void socket_canonical(const uint8_t *addr, uint8_t out[18])
{
	const struct sockaddr_in *in = (const void *)addr;
	const struct sockaddr_in6 *in6 = (const void *)addr;

	memset(out, 0, 18);
	if (in->sin_family == AF_INET) {
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &in->sin_addr, 4);
		memcpy(out + 16, &in->sin_port, 2);
	} else {
		memcpy(out, &in6->sin6_addr, 16);
		memcpy(out + 16, &in6->sin6_port, 2);
	}
}

int socket_same_address(const uint8_t *a, const uint8_t *b)
{
	uint8_t ca[18], cb[18];

	socket_canonical(a, ca);
	socket_canonical(b, cb);
	return !memcmp(ca, cb, sizeof(ca));
}

static int partners(const struct tcp_end *a, const struct tcp_end *b)
{
	return a != b && !b->done && b->img &&
	       a->si.family == b->si.family &&
	       socket_same_address(a->si.addr, b->si.peer) &&
	       socket_same_address(a->si.peer, b->si.addr);
}

static int is_tcp_record(const struct ckpt_fd_info *f)
{
	return f->kind == CKPT_FD_SOCKET_OUTSIDE &&
	       f->data_size >= CKPT_SOCKET_INFO_SIZE_V1;
}

static int note_end(struct tcp_end *ends, int *n, const struct ckpt_image *img,
		    const struct ckpt_fd_info *f)
{
	struct ckpt_socket_info si;
	struct tcp_end *e = NULL;
	uint64_t ino;

	if (socket_record_info(img, f, &si, &ino) < 0)
		return -EINVAL;
	if ((si.family != AF_INET && si.family != AF_INET6) ||
	    si.type != SOCK_STREAM ||
	    !(si.flags & (CKPT_SOCK_F_QUEUE_SAVED | CKPT_SOCK_F_QUEUE)))
		return 0;
	for (int i = 0; i < *n && !e; i++)
		if (ends[i].ino == ino)
			e = &ends[i];
	if (e)
		return 0;
	if (*n == CKPT_PLAN_MAX_SOCKETS)
		return -E2BIG;
	e = &ends[(*n)++];
	memset(e, 0, sizeof(*e));
	e->ino = ino;
	e->si = si;
	e->img = img;
	e->f = f;
	return 0;
}

/* Room for `queued` bytes in flight to the socket: the receiver's and
 * the sender's buffers (as far as the system limits allow). */
static void make_room(int to, int from, uint64_t queued)
{
	int size = queued > (1U << 30) ? 1 << 30 : (int)queued;

	if (queued <= 65536)
		return;
	setsockopt(to, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	setsockopt(from, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
}

/* A new loopback TCP connection of `family`: fds[0] connected, fds[1]
 * accepted. 0 or -errno. */
static int loopback_pair(int family, int fds[2])
{
	struct sockaddr_storage ss;
	socklen_t len = ckpt_loopback_addr(family, &ss);
	int l, r = 0;

	l = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	fds[0] = socket(family, SOCK_STREAM, 0);
	fds[1] = -1;
	if (l < 0 || fds[0] < 0 || bind(l, (void *)&ss, len) < 0 ||
	    getsockname(l, (void *)&ss, &len) < 0 || listen(l, 1) < 0 ||
	    connect(fds[0], (void *)&ss, len) < 0 ||
	    (fds[1] = accept(l, NULL, NULL)) < 0)
		r = -errno;
	if (l >= 0)
		close(l);
	if (r < 0 && fds[0] >= 0)
		close(fds[0]);
	return r;
}

int restart_tcp_hand(struct ckpt_restart_plan *plan, uint64_t ino, int fd,
		     int *keep_fd_end)
{
	int placed = place_handed(fd, keep_fd_end);

	if (placed < 0)
		return -EBUSY;
	plan->sockets[plan->nsockets].ino = ino;
	plan->sockets[plan->nsockets++].fd = placed;
	return placed;
}

/* a's end connected to b's end, each with the bytes queued for it. */
static int reconnect(struct tcp_end *a, struct tcp_end *b,
		     struct ckpt_restart_plan *plan, int *keep_fd_end)
{
	uint32_t ia = ckpt_socket_info_size(&a->si);
	uint32_t ib = ckpt_socket_info_size(&b->si);
	uint64_t qa = a->f->data_size - ia, qb = b->f->data_size - ib;
	int fds[2], r;

	if (plan->nsockets + 2 > CKPT_PLAN_MAX_SOCKETS)
		return -E2BIG;
	r = loopback_pair(a->si.family, fds);
	if (r < 0)
		return r;
	make_room(fds[0], fds[1], qa);
	make_room(fds[1], fds[0], qb);
	/* as a pair: the accepted end may sit at *keep_fd_end already (the
	 * kernel's lowest free number once the holes below are used up) */
	r = place_pair(fds, *keep_fd_end);
	if (r < 0)
		return r;
	fds[0] = (*keep_fd_end)++;
	fds[1] = (*keep_fd_end)++;
	plan->sockets[plan->nsockets].ino = a->ino;
	plan->sockets[plan->nsockets++].fd = fds[0];
	plan->sockets[plan->nsockets].ino = b->ino;
	plan->sockets[plan->nsockets++].fd = fds[1];
	a->done = b->done = 1;
	r = restart_tcp_put_queue(plan, a->img, a->f->data_offset + ia, qa,
				  fds[1], b->ino, b->img->hdr.vpid,
				  keep_fd_end);
	return r ? r : restart_tcp_put_queue(plan, b->img,
					     b->f->data_offset + ib, qb,
					     fds[0], a->ino,
					     a->img->hdr.vpid, keep_fd_end);
}

int restart_tcp_create(struct ckpt_image *imgs, int n,
		       struct ckpt_restart_plan *plan, int *keep_fd_end)
{
	static struct tcp_end ends[CKPT_PLAN_MAX_SOCKETS];
	int nends = 0, r;

	for (int i = 0; i < n; i++)
		for (uint32_t j = 0; j < imgs[i].hdr.nfds; j++) {
			if (!is_tcp_record(&imgs[i].fds[j]))
				continue;
			r = note_end(ends, &nends, &imgs[i], &imgs[i].fds[j]);
			if (r < 0)
				return r;
		}
	for (int i = 0; i < nends; i++) {
		struct tcp_end *a = &ends[i];

		for (int j = i + 1; j < nends && !a->done; j++) {
			if (!partners(a, &ends[j]))
				continue;
			r = reconnect(a, &ends[j], plan, keep_fd_end);
			if (r < 0) {
				fprintf(stderr, "ckpt_restart: %s: fd %d: "
					"reconnecting the TCP connection "
					"socket:[%llu] failed: %s\n",
					a->img->path, a->f->fd,
					(unsigned long long)a->ino,
					strerror(-r));
				return r;
			}
		}
	}
	return restart_tcp_meet(ends, nends, plan, keep_fd_end);
}
