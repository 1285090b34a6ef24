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
 *
 * An end that waited in a listener's accept queue (CKPT_FDF_IN_BACKLOG,
 * libckpt-preload/accept_queue.c) is not made here: its partner's new
 * socket connects to the restored listener, and sends the bytes saved
 * with that end, which then wait in the queue as before for the program
 * to accept. Without its partner (a client outside the computation) it
 * is lost, as the client's connection is.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
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

static int is_tcp_record(const struct ckpt_fd_info *f)
{
	return f->kind == CKPT_FD_SOCKET_OUTSIDE &&
	       f->data_size >= CKPT_SOCKET_INFO_SIZE_V1;
}

/* The ends by inode, open addressing: a socket several processes hold
 * is one end (a linear search per record was quadratic). */
#define INO_SLOTS (2 * CKPT_PLAN_MAX_SOCKETS)

static int ino_slots[INO_SLOTS];	/* index of the end + 1; 0: free */

static int *ino_slot(const struct tcp_end *ends, uint64_t ino)
{
	uint32_t h = (uint32_t)((ino * 0x9e3779b97f4a7c15ULL) >> 40);

	for (;; h++) {
		int *slot = &ino_slots[h % INO_SLOTS];

		if (!*slot || ends[*slot - 1].ino == ino)
			return slot;
	}
}

static int note_end(struct tcp_end *ends, int *n, const struct ckpt_image *img,
		    const struct ckpt_fd_info *f)
{
	struct ckpt_socket_info si;
	struct tcp_end *e;
	uint64_t ino;
	int *slot;

	if (socket_record_info(img, f, &si, &ino) < 0)
		return -EINVAL;
	if ((si.family != AF_INET && si.family != AF_INET6) ||
	    si.type != SOCK_STREAM ||
	    !(si.flags & (CKPT_SOCK_F_QUEUE_SAVED | CKPT_SOCK_F_QUEUE)))
		return 0;
	slot = ino_slot(ends, ino);
	if (*slot)
		return 0;
	if (*n == CKPT_PLAN_MAX_SOCKETS)
		return -E2BIG;
	e = &ends[(*n)++];
	memset(e, 0, sizeof(*e));
	e->ino = ino;
	e->si = si;
	e->img = img;
	e->f = f;
	socket_canonical(si.addr, e->local);
	socket_canonical(si.peer, e->remote);
	*slot = *n;
	return 0;
}

/* Order of the ends by (local address, peer address), both canonical: an
 * end's partner is found by a binary search for (peer, local). Not by
 * family: an IPv6 socket that accepted an IPv4 connection (a dual-stack
 * server: iperf3, nginx `listen [::]:80`) has the v4-mapped form of its
 * IPv4 client's addresses. */
static int key_cmp(const uint8_t *local, const uint8_t *remote,
		   const struct tcp_end *b)
{
	int c = memcmp(local, b->local, sizeof(b->local));

	return c ? c : memcmp(remote, b->remote, sizeof(b->remote));
}

static const struct tcp_end *sorted_ends;

static int end_cmp(const void *x, const void *y)
{
	const struct tcp_end *a = &sorted_ends[*(const int *)x];

	return key_cmp(a->local, a->remote, &sorted_ends[*(const int *)y]);
}

static void sort_ends(const struct tcp_end *ends, int n, int *order)
{
	for (int i = 0; i < n; i++)
		order[i] = i;
	sorted_ends = ends;
	qsort(order, n, sizeof(*order), end_cmp);
}

/* The end not done yet whose addresses are a's the other way round. */
static struct tcp_end *partner_of(const struct tcp_end *a,
				  struct tcp_end *ends, const int *order, int n)
{
	int lo = 0, hi = n;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (key_cmp(a->remote, a->local, &ends[order[mid]]) > 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < n; lo++) {
		struct tcp_end *b = &ends[order[lo]];

		if (key_cmp(a->remote, a->local, b))
			return NULL;
		if (b != a && !b->done && b->img)
			return b;
	}
	return NULL;
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

/* One listener per kind of pair on a loopback port, for all the
 * connections: each is connected and accepted at once, so the accepted
 * one is its peer (checked by address). It sits above the numbers the
 * connections will take, which then come out where place_pair wants
 * them. The kinds: IPv4 to IPv4, IPv6 to IPv6, and IPv4 to an IPv6
 * socket (a dual-stack server's accepted connection), whose listener is
 * an IPv6 socket on ::ffff:127.0.0.1 that the IPv4 end connects to at
 * 127.0.0.1. */
enum { PAIR_V4, PAIR_V6, PAIR_V4_TO_V6, PAIR_KINDS };

struct loopback {
	int fd;
	int connect_family;
	struct sockaddr_storage addr;	/* where the connecting end goes */
	socklen_t len;
};

static int bind_listener(struct loopback *lb, int kind)
{
	struct sockaddr_storage at;
	socklen_t len = ckpt_loopback_addr(kind == PAIR_V4 ? AF_INET :
					   AF_INET6, &at);
	int off = 0;

	if (kind == PAIR_V4_TO_V6) {
		struct sockaddr_in6 *in6 = (void *)&at;

		in6->sin6_addr = (struct in6_addr){ .s6_addr = {
			[10] = 0xff, [11] = 0xff, 127, 0, 0, 1 } };
		if (setsockopt(lb->fd, IPPROTO_IPV6, IPV6_V6ONLY, &off,
			       sizeof(off)) < 0)
			return -errno;
	}
	if (bind(lb->fd, (void *)&at, len) < 0 ||
	    getsockname(lb->fd, (void *)&at, &len) < 0 ||
	    listen(lb->fd, 16) < 0)
		return -errno;
	lb->connect_family = kind == PAIR_V6 ? AF_INET6 : AF_INET;
	if (kind != PAIR_V4_TO_V6) {
		lb->addr = at;
		lb->len = len;
		return 0;
	}
	lb->len = ckpt_loopback_addr(AF_INET, &lb->addr);
	((struct sockaddr_in *)&lb->addr)->sin_port =
		((struct sockaddr_in6 *)&at)->sin6_port;
	return 0;
}

static int listen_loopback(struct loopback *lb, int kind, int above)
{
	int moved, r;

	lb->fd = socket(kind == PAIR_V4 ? AF_INET : AF_INET6,
			SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (lb->fd < 0)
		return -errno;
	r = bind_listener(lb, kind);
	if (r < 0) {
		close(lb->fd);
		lb->fd = -1;
		return r;
	}
	moved = fcntl(lb->fd, F_DUPFD_CLOEXEC, above);
	if (moved >= 0) {	/* else it stays lower: place_pair moves */
		close(lb->fd);
		lb->fd = moved;
	}
	return 0;
}

#define ACCEPT_TIMEOUT_MS 10000

/* The connection accepted on lb whose peer is at `from`; a stranger's
 * connecting to the port meanwhile is closed. The connection is queued
 * once connect returns: the wait is for a strange case only. */
static int accept_from(const struct loopback *lb,
		       const struct sockaddr_storage *from)
{
	for (int tries = 0; tries < 64; tries++) {
		struct pollfd p = { .fd = lb->fd, .events = POLLIN };
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);
		int fd = accept(lb->fd, (void *)&peer, &plen), r;

		if (fd < 0 && errno == EAGAIN) {
			r = poll(&p, 1, ACCEPT_TIMEOUT_MS);
			if (r <= 0)
				return r < 0 ? -errno : -ETIMEDOUT;
			continue;
		}
		if (fd < 0)
			return -errno;
		/* the accepted end may have the IPv6 form of from */
		if (socket_same_address((const void *)&peer,
					(const void *)from))
			return fd;
		close(fd);
	}
	return -ECONNABORTED;
}

/* A new loopback TCP connection: fds[0] connected, fds[1] accepted. 0 or
 * -errno. */
static int loopback_pair(const struct loopback *lb, int fds[2])
{
	struct sockaddr_storage me;
	socklen_t len = sizeof(me);
	int r = 0;

	fds[1] = -1;
	fds[0] = socket(lb->connect_family, SOCK_STREAM, 0);
	if (fds[0] < 0)
		return -errno;
	if (connect(fds[0], (const void *)&lb->addr, lb->len) < 0 ||
	    getsockname(fds[0], (void *)&me, &len) < 0)
		r = -errno;
	else if ((fds[1] = accept_from(lb, &me)) < 0)
		r = fds[1];
	if (r < 0)
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
		     const struct loopback *lb, struct ckpt_restart_plan *plan,
		     int *keep_fd_end)
{
	uint32_t ia = ckpt_socket_info_size(&a->si);
	uint32_t ib = ckpt_socket_info_size(&b->si);
	uint64_t qa = a->f->data_size - ia, qb = b->f->data_size - ib;
	int fds[2], r;

	if (plan->nsockets + 2 > CKPT_PLAN_MAX_SOCKETS)
		return -E2BIG;
	r = loopback_pair(lb, fds);
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

static int in_backlog(const struct tcp_end *e)
{
	return e->f->fd_flags & CKPT_FDF_IN_BACKLOG;
}

/* The restored listener (made by restart_listeners.c) that the end
 * waited in; -ENOENT when the image has no such listener. */
static int listener_of(const struct tcp_end *e,
		       const struct ckpt_restart_plan *plan)
{
	const struct ckpt_image *img = e->img;
	uint64_t ino;
	int fd;

	for (uint32_t i = 0; i < img->hdr.nfds; i++) {
		const struct ckpt_fd_info *f = &img->fds[i];

		if (f->fd != (int32_t)e->f->backlog_of ||
		    f->kind != CKPT_FD_SOCKET_LISTEN ||
		    (f->fd_flags & (CKPT_FDF_IN_BACKLOG | CKPT_FDF_IN_FLIGHT)))
			continue;
		if (fd_record_ino(img, f, "socket", &ino) < 0)
			return -EINVAL;
		fd = plan_socket_fd(plan, ino);
		return fd < 0 ? -ENOENT : fd;
	}
	return -ENOENT;
}

#define QUEUE_WAIT_MS 5000

/* A new socket of the client's family connected to `to`, queued in the
 * listener there once this returns. */
static int connect_into_queue(int family, const uint8_t *to, uint32_t len)
{
	struct pollfd p;
	int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK, 0), err = 0, r;
	socklen_t elen = sizeof(err);

	if (fd < 0)
		return -errno;
	r = connect(fd, (const void *)to, len) < 0 && errno != EINPROGRESS ?
	    -errno : 0;
	p = (struct pollfd){ .fd = fd, .events = POLLOUT };
	if (r == 0 && poll(&p, 1, QUEUE_WAIT_MS) != 1)
		r = -ETIMEDOUT;
	if (r == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) == 0 &&
	    err)
		r = -err;
	if (r == 0 && fcntl(fd, F_SETFL, 0) < 0)
		r = -errno;
	if (r < 0)
		close(fd);
	return r < 0 ? r : fd;
}

/* The client end connected again to the listener its partner waited in,
 * with the bytes that waited there; 0 or -errno (the caller says it). */
static int reconnect_into_backlog(struct tcp_end *client,
				  struct tcp_end *waiting,
				  struct ckpt_restart_plan *plan,
				  int *keep_fd_end)
{
	uint32_t iw = ckpt_socket_info_size(&waiting->si);
	uint32_t ic = ckpt_socket_info_size(&client->si);
	uint64_t qw = waiting->f->data_size - iw;
	uint64_t qc = client->f->data_size - ic;
	int fd, r = listener_of(waiting, plan);

	client->done = waiting->done = 1;
	if (r < 0)
		return 0;	/* no listener: lost with it */
	if (plan->nsockets + 1 > CKPT_PLAN_MAX_SOCKETS)
		return -E2BIG;
	fd = connect_into_queue(client->si.family, client->si.peer,
				client->si.peer_len);
	if (fd < 0)
		return fd;
	fd = restart_tcp_hand(plan, client->ino, fd, keep_fd_end);
	if (fd < 0)
		return fd;
	if (qc)	/* nobody wrote on a connection not accepted */
		fprintf(stderr, "ckpt_restart: %s: fd %d: %llu bytes queued "
			"for a connection still in a listener's queue are "
			"dropped\n", client->img->path, client->f->fd,
			(unsigned long long)qc);
	return restart_tcp_put_queue(plan, waiting->img,
				     waiting->f->data_offset + iw, qw, fd,
				     client->ino, client->img->hdr.vpid,
				     keep_fd_end);
}

/* The free numbers below the kept range, each taken by a copy of fd
 * until close_fillers: the connections made next then come out at the
 * top of the range, where place_pair leaves them, instead of in those
 * holes (the range starts above the saved fds) with a move per end. The
 * count. */
static int fillers[65536];

static int fill_holes(int fd, int below)
{
	int n = 0, f = 3;

	while (n < (int)(sizeof(fillers) / sizeof(fillers[0]))) {
		f = fcntl(fd, F_DUPFD_CLOEXEC, f);
		if (f < 0)
			break;
		if (f >= below) {
			close(f);
			break;
		}
		fillers[n++] = f++;
	}
	return n;
}

static void close_fillers(int n)
{
	for (int i = 0, j; i < n; i = j + 1) {
		for (j = i; j + 1 < n && fillers[j + 1] == fillers[j] + 1; j++)
			;
		if (syscall(SYS_close_range, fillers[i], fillers[j], 0) < 0)
			for (int k = i; k <= j; k++)
				close(fillers[k]);
	}
}

static void say_reconnect_failed(const struct tcp_end *a, int err)
{
	fprintf(stderr, "ckpt_restart: %s: fd %d: reconnecting the TCP "
		"connection socket:[%llu] failed: %s\n", a->img->path, a->f->fd,
		(unsigned long long)a->ino, strerror(-err));
}

/* Each end with its partner among the images connected again. */
static int reconnect_partners(struct tcp_end *ends, int n,
			      struct ckpt_restart_plan *plan, int *keep_fd_end)
{
	static int order[CKPT_PLAN_MAX_SOCKETS];
	struct loopback lb[PAIR_KINDS] = { { .fd = -1 }, { .fd = -1 },
					   { .fd = -1 } };
	int r = 0, nfillers = -1;

	sort_ends(ends, n, order);
	for (int i = 0; i < n && r == 0; i++) {
		struct tcp_end *a = &ends[i], *b;
		struct loopback *l;
		int kind;

		if (a->done || !(b = partner_of(a, ends, order, n)))
			continue;
		if (in_backlog(a) || in_backlog(b)) {
			r = in_backlog(b) ?
			    reconnect_into_backlog(a, b, plan, keep_fd_end) :
			    reconnect_into_backlog(b, a, plan, keep_fd_end);
			if (r < 0)
				say_reconnect_failed(a, r);
			continue;
		}
		if (a->si.family == AF_INET6 && b->si.family == AF_INET) {
			struct tcp_end *t = a;	/* the IPv4 end connects */

			a = b;
			b = t;
		}
		kind = a->si.family == b->si.family ?
		       (a->si.family == AF_INET6 ? PAIR_V6 : PAIR_V4) :
		       PAIR_V4_TO_V6;
		l = &lb[kind];
		if (l->fd < 0)
			r = listen_loopback(l, kind, *keep_fd_end + n + 2);
		if (r == 0 && nfillers < 0)
			nfillers = fill_holes(l->fd, *keep_fd_end);
		if (r == 0)
			r = reconnect(a, b, l, plan, keep_fd_end);
		if (r < 0)
			say_reconnect_failed(a, r);
	}
	close_fillers(nfillers);
	for (int i = 0; i < PAIR_KINDS; i++)
		if (lb[i].fd >= 0)
			close(lb[i].fd);
	return r;
}

int restart_tcp_create(struct ckpt_image *imgs, int n,
		       struct ckpt_restart_plan *plan, int *keep_fd_end)
{
	static struct tcp_end ends[CKPT_PLAN_MAX_SOCKETS];
	int nends = 0, r;

	memset(ino_slots, 0, sizeof(ino_slots));
	for (int i = 0; i < n; i++)
		for (uint32_t j = 0; j < imgs[i].hdr.nfds; j++) {
			if (!is_tcp_record(&imgs[i].fds[j]))
				continue;
			r = note_end(ends, &nends, &imgs[i], &imgs[i].fds[j]);
			if (r < 0)
				return r;
		}
	r = reconnect_partners(ends, nends, plan, keep_fd_end);
	/* one from another host's client is lost (docs/multi-host.md) */
	for (int i = 0; i < nends; i++)
		if (in_backlog(&ends[i]))
			ends[i].done = 1;
	return r < 0 ? r : restart_tcp_meet(ends, nends, plan, keep_fd_end);
}
