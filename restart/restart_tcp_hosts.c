// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * TCP connections between hosts of one computation (docs/multi-host.md,
 * "TCP connections between hosts"): each host's images are restarted by
 * its own ckpt_restart, so an end whose partner is on another host meets
 * it over the network. ckpt_restart --peer-hosts names the other hosts'
 * addresses; an end whose peer address is one of them and whose partner
 * is not among this ckpt_restart's images is reconnected here:
 *
 *   roles   the end whose saved local address (port, then address) is the
 *           greater listens on it again (SO_REUSEADDR); the other connects
 *           to its saved peer address, from its own saved address when it
 *           can be bound. Both sides decide alike from the two addresses.
 *   order   every listener first, then each connection in the order of
 *           its address pair, the same on every host: no two ckpt_restarts
 *           wait for each other in a cycle.
 *   prove   each connection opens with the handshake of meet_auth.h,
 *           bound to the pair of saved addresses: a connection whose
 *           other side does not prove it knows the per-user secret is
 *           closed; the listener then waits for the next one, the
 *           connector gives up on that end (an impostor holds the port).
 *   bytes   each side sends the bytes saved at its own end (8-byte length,
 *           then the bytes), reads exactly the other's, and sends those
 *           back: each end's receive queue then holds exactly the bytes it
 *           had not read at the checkpoint, in order, before anything the
 *           program sends next.
 *
 * Everything is bounded by MEET_TIMEOUT_MS in all; an end whose partner
 * does not come is left to libckpt (it reads as closed) with a warning.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "ckpt/sockaddr_text.h"
#include "meet_auth.h"
#include "restart_tcp.h"

#define MEET_TIMEOUT_MS 30000
/* One handshake, from an accepted connection that may not be the
 * partner's: a silent one is dropped after this long. */
#define HANDSHAKE_TIMEOUT_MS 3000

const char *restart_peer_hosts;
long restart_meet_timeout_ms;

long long restart_meet_deadline(long long now, long default_ms)
{
	return now + (restart_meet_timeout_ms > 0 ? restart_meet_timeout_ms :
		      default_ms);
}

struct meet {
	struct tcp_end *e;
	uint8_t lo[18], hi[18];		/* the pair's addresses, ordered */
	int listens;
	int fd;				/* listener, then the connection */
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static int left_ms(long long deadline)
{
	long long left = deadline - now_ms();

	return left < 0 ? 0 : (int)left;
}

/* Port first, then address: a listening port is usually the smaller. */
static int addr_cmp(const uint8_t *a, const uint8_t *b)
{
	int c = memcmp(a + 16, b + 16, 2);

	return c ? c : memcmp(a, b, 16);
}

/* The peer's address as text, IPv4-mapped shown as IPv4. */
static void peer_ip(const uint8_t *c, char *out, size_t len)
{
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (!memcmp(c, mapped, sizeof(mapped)))
		inet_ntop(AF_INET, c + 12, out, len);
	else
		inet_ntop(AF_INET6, c, out, len);
}

/* Whether the canonical address peer is on one of --peer-hosts. */
static int on_peer_host(const uint8_t *peer)
{
	char ip[INET6_ADDRSTRLEN];
	const char *p = restart_peer_hosts;
	size_t n;

	peer_ip(peer, ip, sizeof(ip));
	n = strlen(ip);
	while (p && *p) {
		const char *comma = strchrnul(p, ',');

		if ((size_t)(comma - p) == n && !strncmp(p, ip, n))
			return 1;
		p = *comma ? comma + 1 : comma;
	}
	return 0;
}

int restart_peer_hosts_check(const char *list)
{
	const char *p = list;

	do {
		const char *comma = strchrnul(p, ',');
		char ip[INET6_ADDRSTRLEN];
		uint8_t a[16];
		size_t n = comma - p;

		snprintf(ip, sizeof(ip), "%.*s", (int)n, p);
		if (n >= sizeof(ip) || (inet_pton(AF_INET, ip, a) != 1 &&
					inet_pton(AF_INET6, ip, a) != 1)) {
			fprintf(stderr, "ckpt_restart: --peer-hosts %s: '%.*s' "
				"is not a numeric IPv4 or IPv6 address\n",
				list, (int)n, p);
			return -EINVAL;
		}
		p = *comma ? comma + 1 : comma;
	} while (*p);
	return 0;
}

static int meet_cmp(const void *a, const void *b)
{
	const struct meet *x = a, *y = b;
	int c = addr_cmp(x->lo, y->lo);

	return c ? c : addr_cmp(x->hi, y->hi);
}

static socklen_t addr_len(int family)
{
	return family == AF_INET ? sizeof(struct sockaddr_in) :
				   sizeof(struct sockaddr_in6);
}

static int new_socket(int family)
{
	int one = 1, fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	return fd;
}

static int start_listening(struct meet *m)
{
	const struct ckpt_socket_info *si = &m->e->si;
	int fd = new_socket(si->family);

	if (fd < 0)
		return -errno;
	if (bind(fd, (const void *)si->addr, addr_len(si->family)) < 0 ||
	    listen(fd, 1) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	m->fd = fd;
	return 0;
}

static int wait_fd(int fd, short events, long long deadline)
{
	struct pollfd p = { fd, events, 0 };
	int r = poll(&p, 1, left_ms(deadline));

	return r < 0 ? -errno : r == 0 ? -ETIMEDOUT : 0;
}

static void say_failed(const struct meet *m, const char *what, int err)
{
	char a[128], b[128];

	ckpt_sockaddr_text(m->e->si.addr, sizeof(m->e->si.addr), a, sizeof(a));
	ckpt_sockaddr_text(m->e->si.peer, sizeof(m->e->si.peer), b, sizeof(b));
	fprintf(stderr, "ckpt_restart: warning: %s: fd %d: the TCP connection "
		"%s to %s: %s its other end failed: %s (is the ckpt_restart of "
		"that host running?); it reads as closed by the peer\n",
		m->e->img->path, m->e->f->fd, a, b, what, strerror(-err));
}

/* Connections that did not prove themselves while waiting for the
 * partner: named, they got nothing. */
static void say_refused(const struct meet *m, int count, const char *why)
{
	char a[128];

	ckpt_sockaddr_text(m->e->si.addr, sizeof(m->e->si.addr), a, sizeof(a));
	fprintf(stderr, "ckpt_restart: warning: %s: fd %d: closed %d "
		"connection%s to %s that did not prove to be the other end's "
		"ckpt_restart (last: %s); nothing was sent to %s\n",
		m->e->img->path, m->e->f->fd, count, count == 1 ? "" : "s", a,
		why ? why : "?", count == 1 ? "it" : "them");
}

/* What both sides bind their proofs to: the pair's saved addresses. */
static void meet_purpose(const struct meet *m, uint8_t out[36])
{
	memcpy(out, m->lo, 18);
	memcpy(out + 18, m->hi, 18);
}

static long long min_ms(long long a, long long b)
{
	return a < b ? a : b;
}

/* Accept until a connection proves it is the partner's ckpt_restart;
 * the others are closed (named once). */
static int accept_partner(struct meet *m, long long deadline)
{
	uint8_t purpose[36];
	const char *why = NULL;
	int refused = 0;

	meet_purpose(m, purpose);
	for (;;) {
		int r = wait_fd(m->fd, POLLIN, deadline), fd;

		if (r < 0) {
			if (refused)
				say_refused(m, refused, why);
			return r;
		}
		fd = accept4(m->fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			return -errno;
		if (meet_auth_run(fd, 1, purpose, sizeof(purpose),
				  min_ms(deadline, now_ms() +
					 HANDSHAKE_TIMEOUT_MS), &why) == 0) {
			close(m->fd);
			m->fd = fd;
			if (refused)
				say_refused(m, refused, why);
			return 0;
		}
		close(fd);
		refused++;
	}
}

/* One nonblocking attempt, waited for, from the saved local address when
 * bind_own; -ECONNREFUSED while the partner's listener is not there yet. */
static int connect_once(const struct ckpt_socket_info *si, int bind_own,
			long long deadline)
{
	int fd = new_socket(si->family), r, err = 0;
	socklen_t len = sizeof(err);

	if (fd < 0)
		return -errno;
	if (bind_own)	/* when free: getsockname shows the old address */
		bind(fd, (const void *)si->addr, addr_len(si->family));
	fcntl(fd, F_SETFL, O_NONBLOCK);
	r = connect(fd, (const void *)si->peer, addr_len(si->family));
	if (r < 0 && errno == EINPROGRESS) {
		r = wait_fd(fd, POLLOUT, deadline);
		if (r == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err,
					 &len) == 0 && err)
			r = -err;
	} else if (r < 0) {
		r = -errno;
	}
	if (r < 0) {
		close(fd);
		return r;
	}
	fcntl(fd, F_SETFL, 0);
	return fd;
}

static void say_impostor(const struct meet *m, const char *why)
{
	char a[128], b[128];

	ckpt_sockaddr_text(m->e->si.addr, sizeof(m->e->si.addr), a, sizeof(a));
	ckpt_sockaddr_text(m->e->si.peer, sizeof(m->e->si.peer), b, sizeof(b));
	fprintf(stderr, "ckpt_restart: warning: %s: fd %d: the TCP connection "
		"%s to %s: what listens at %s is not its other end's "
		"ckpt_restart: %s; nothing was sent to it, and the connection "
		"reads as closed by the peer\n", m->e->img->path, m->e->f->fd,
		a, b, b, why);
}

/* The listener that answered must prove it is the partner's
 * ckpt_restart before a byte of the end crosses. */
static int prove_to_listener(struct meet *m, long long deadline)
{
	uint8_t purpose[36];
	const char *why;

	meet_purpose(m, purpose);
	if (meet_auth_run(m->fd, 0, purpose, sizeof(purpose), deadline,
			  &why) == 0)
		return 0;
	say_impostor(m, why);
	return -EACCES;
}

static int connect_partner(struct meet *m, long long deadline)
{
	struct timespec pause = { 0, 20 * 1000000 };
	int fd, bind_own = 1;

	for (;;) {
		fd = connect_once(&m->e->si, bind_own, deadline);
		if (fd >= 0) {
			m->fd = fd;
			return prove_to_listener(m, deadline);
		}
		/* the old connection lingers (TIME_WAIT): any local port */
		if (bind_own && (fd == -EADDRNOTAVAIL || fd == -EADDRINUSE)) {
			bind_own = 0;
			continue;
		}
		if (fd != -ECONNREFUSED || !left_ms(deadline))
			return fd;
		nanosleep(&pause, NULL);
	}
}

/* The exchange of the saved bytes (the header's "bytes"); bounded by
 * deadline. */
struct exchange {
	char *out;			/* our length, our bytes, then theirs */
	size_t out_len, sent;
	uint8_t hdr[8];
	char *in;
	uint64_t in_len, got;		/* got counts the header too */
};

static int read_own_bytes(const struct tcp_end *e, struct exchange *x)
{
	uint32_t info = ckpt_socket_info_size(&e->si);
	uint64_t q = e->f->data_size - info;

	x->out = malloc(8 + q);
	if (!x->out)
		return -ENOMEM;
	for (int i = 0; i < 8; i++)
		x->out[i] = (char)(q >> (8 * i));
	if (q && pread(e->img->fd, x->out + 8, q, e->f->data_offset + info) !=
		 (ssize_t)q)
		return -EIO;
	x->out_len = 8 + q;
	return 0;
}

/* Their bytes, once all read, go back to them after ours. */
static int take_in(int fd, struct exchange *x)
{
	ssize_t n;

	if (x->got < 8) {
		n = recv(fd, x->hdr + x->got, 8 - x->got, MSG_DONTWAIT);
		if (n > 0 && (x->got += n) == 8) {
			for (int i = 7; i >= 0; i--)
				x->in_len = x->in_len << 8 | x->hdr[i];
			if (x->in_len > (1ULL << 30))
				return -EPROTO;
			x->in = malloc(x->in_len + 1);
			if (!x->in)
				return -ENOMEM;
		}
	} else {
		n = recv(fd, x->in + x->got - 8, x->in_len - (x->got - 8),
			 MSG_DONTWAIT);
		if (n > 0)
			x->got += n;
	}
	if (n == 0)
		return -ECONNRESET;
	if (n < 0)
		return errno == EAGAIN ? 0 : -errno;
	if (x->got == 8 + x->in_len) {
		char *o = realloc(x->out, x->out_len + x->in_len + 1);

		if (!o)
			return -ENOMEM;
		memcpy(o + x->out_len, x->in, x->in_len);
		x->out = o;
		x->out_len += x->in_len;
	}
	return 0;
}

static int exchange_bytes(const struct meet *m, long long deadline)
{
	struct exchange x = { 0 };
	int r = read_own_bytes(m->e, &x);

	while (r == 0 && (x.got < 8 || x.got < 8 + x.in_len ||
			  x.sent < x.out_len)) {
		int in_done = x.got >= 8 && x.got == 8 + x.in_len;
		struct pollfd p = { m->fd, (in_done ? 0 : POLLIN) |
				    (x.sent < x.out_len ? POLLOUT : 0), 0 };
		ssize_t n;

		r = poll(&p, 1, left_ms(deadline));
		if (r <= 0) {
			r = r < 0 ? -errno : -ETIMEDOUT;
			break;
		}
		r = 0;
		if (p.revents & POLLIN)
			r = take_in(m->fd, &x);
		if (r == 0 && (p.revents & POLLOUT)) {
			n = send(m->fd, x.out + x.sent, x.out_len - x.sent,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n < 0 && errno != EAGAIN)
				r = -errno;
			else if (n > 0)
				x.sent += n;
		}
		if (r == 0 && (p.revents & (POLLERR | POLLHUP)) &&
		    !(p.revents & POLLIN))
			r = -ECONNRESET;
	}
	free(x.out);
	free(x.in);
	return r;
}

static int collect(struct tcp_end *ends, int n, struct meet *ms)
{
	int k = 0;

	for (int i = 0; i < n; i++) {
		struct meet *m = &ms[k];
		uint8_t l[18], p[18];

		socket_canonical(ends[i].si.addr, l);
		socket_canonical(ends[i].si.peer, p);
		if (ends[i].done || !on_peer_host(p))
			continue;
		m->e = &ends[i];
		m->listens = addr_cmp(l, p) > 0;
		memcpy(m->lo, m->listens ? p : l, 18);
		memcpy(m->hi, m->listens ? l : p, 18);
		m->fd = -1;
		k++;
	}
	qsort(ms, k, sizeof(*ms), meet_cmp);
	return k;
}

static void meet_one(struct meet *m, struct ckpt_restart_plan *plan,
		     int *keep_fd_end, long long deadline)
{
	int r = m->listens ? accept_partner(m, deadline) :
			     connect_partner(m, deadline);

	if (r == -EACCES && !m->listens)
		return;		/* said by say_impostor */
	if (r < 0) {
		say_failed(m, m->listens ? "waiting for" : "connecting to", r);
		return;
	}
	r = exchange_bytes(m, deadline);
	if (r < 0) {
		say_failed(m, "exchanging the saved bytes with", r);
		return;
	}
	if (plan->nsockets == CKPT_PLAN_MAX_SOCKETS) {
		say_failed(m, "handing over", -E2BIG);
		return;
	}
	fcntl(m->fd, F_SETFD, 0);	/* it goes through the loader's exec */
	r = restart_tcp_hand(plan, m->e->ino, m->fd, keep_fd_end);
	m->fd = -1;
	if (r < 0)
		say_failed(m, "handing over", r);
	else
		m->e->done = 1;
}

int restart_tcp_meet(struct tcp_end *ends, int n,
		     struct ckpt_restart_plan *plan, int *keep_fd_end)
{
	static struct meet ms[CKPT_PLAN_MAX_SOCKETS];
	long long deadline = restart_meet_deadline(now_ms(), MEET_TIMEOUT_MS);
	int k, r;

	if (!restart_peer_hosts)
		return 0;
	k = collect(ends, n, ms);
	for (int i = 0; i < k; i++) {
		if (!ms[i].listens)
			continue;
		r = start_listening(&ms[i]);
		if (r < 0) {
			say_failed(&ms[i], "listening for", r);
			ms[i].e = NULL;
		}
	}
	for (int i = 0; i < k; i++) {
		if (!ms[i].e)
			continue;
		meet_one(&ms[i], plan, keep_fd_end, deadline);
		if (ms[i].fd >= 0)
			close(ms[i].fd);
	}
	return 0;
}
