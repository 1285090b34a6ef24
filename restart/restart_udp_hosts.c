// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Datagrams queued between hosts (docs/multi-host.md, "Datagrams queued
 * between hosts"): a datagram waiting at a UDP socket on this host whose
 * source is on another host of the computation (one of --peer-hosts)
 * cannot be sent from its source here. Every ckpt_restart given
 * --peer-hosts meets each other one over TCP on the port both derive
 * from the images' computation id (meet_port), the greater address
 * listening, as restart_tcp_hosts.c does per connection:
 *
 *   prove   each connection opens with the handshake of meet_auth.h
 *           (bound to the computation id): a connection that does not
 *           prove it comes from a ckpt_restart of this user is closed
 *           and given nothing; the listener waits for another.
 *   hand    each side sends a hello (magic, computation id), then the
 *           datagrams kept for that host (restart_udp_hosts_post), each
 *           with the address of the socket it waited at, then an end
 *           record; it reads the other's alike, at the same time.
 *   send    each side sends what it was handed from the restored socket
 *           bound to the datagram's source, in the order handed, then
 *           one byte: "sent".
 *   wait    each side reads the other's "sent" before it goes on; only
 *           then do the processes of either host run.
 *
 * Bounded by MEET_TIMEOUT_MS in all. A peer that does not come (an older
 * ckpt_restart, the port taken) is named and its datagrams are sent from
 * here, from a new port, as without a meeting.
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
#include "meet_auth.h"
#include "restart_tcp.h"
#include "restart_udp.h"

#define MEET_TIMEOUT_MS		15000
#define MAX_PEERS		64
#define HANDED_BYTES_MAX	(64U << 20)
#define MEET_PORT_BASE		49152
#define MEET_PORT_SPAN		16000
#define END_OF_DGRAMS		UINT32_MAX
#define MAX_CANDIDATES		16	/* accepted, not yet proven */
#define HANDSHAKE_TIMEOUT_MS	3000	/* a silent candidate is dropped */

struct handoff_hello {
	char magic[8];			/* "ckptUDP1" */
	uint64_t computation_id;	/* of the images */
};

/* One handed datagram, followed by h.size bytes; h.size END_OF_DGRAMS
 * ends the list. */
struct handoff_dgram {
	struct ckpt_socket_dgram h;	/* its source: on the receiving side */
	uint32_t to_len;
	uint8_t to[28];			/* the socket it waited at */
};

struct buf {
	char *p;
	size_t len, cap;
};

struct peer {
	struct sockaddr_storage addr;	/* its --peer-hosts address */
	uint8_t ip[18];			/* canonical (socket_canonical) */
	char name[INET6_ADDRSTRLEN];
	int listens;			/* this side listens, it connects */
	int fd;
	struct meet_auth auth;		/* connecting side: its handshake */
	int proven;			/* the handshake is done */
	int refused;			/* connections from it that failed it */
	const char *refused_why;	/* the last one's failure */
	struct buf out;			/* hello, kept datagrams, end */
	size_t sent;
	struct buf in;
	size_t parsed;
	int ended;			/* its end record is in */
	int said_sent;			/* its "sent" byte is in */
	int handed;			/* both lists went across */
	const char *failed;		/* what went wrong, or NULL */
};

static const char hello_magic[8] = "ckptUDP1";
static struct peer peers[MAX_PEERS];
static int npeers = -1;			/* -1: --peer-hosts not read yet */

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

static int buf_add(struct buf *b, const void *p, size_t n)
{
	if (b->len + n > HANDED_BYTES_MAX)
		return -E2BIG;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *q;

		while (cap < b->len + n)
			cap *= 2;
		q = realloc(b->p, cap);
		if (!q)
			return -ENOMEM;
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	return 0;
}

static void read_peer_hosts(void)
{
	const char *p = restart_peer_hosts;

	npeers = 0;
	while (p && *p && npeers < MAX_PEERS) {
		const char *comma = strchrnul(p, ',');
		struct peer *h = &peers[npeers];
		struct sockaddr_in *in = (void *)&h->addr;
		struct sockaddr_in6 *in6 = (void *)&h->addr;

		memset(h, 0, sizeof(*h));
		snprintf(h->name, sizeof(h->name), "%.*s", (int)(comma - p), p);
		if (inet_pton(AF_INET, h->name, &in->sin_addr) == 1)
			in->sin_family = AF_INET;
		else if (inet_pton(AF_INET6, h->name, &in6->sin6_addr) == 1)
			in6->sin6_family = AF_INET6;
		p = *comma ? comma + 1 : comma;
		if (!h->addr.ss_family)
			continue;	/* restart_peer_hosts_check said why */
		socket_canonical((const uint8_t *)&h->addr, h->ip);
		h->fd = -1;
		npeers++;
	}
}

static struct peer *peer_of(const uint8_t *addr)
{
	uint8_t c[18];

	socket_canonical(addr, c);
	for (int i = 0; i < npeers; i++)
		if (!memcmp(peers[i].ip, c, 16))
			return &peers[i];
	return NULL;
}

int restart_udp_hosts_post(const struct ckpt_socket_info *si,
			   const struct ckpt_socket_dgram *h,
			   const void *bytes)
{
	struct handoff_dgram r = { .h = *h, .to_len = si->addr_len };
	struct peer *p;
	int e;

	if (npeers < 0)
		read_peer_hosts();
	if (!h->from_len || !(p = peer_of(h->from)))
		return 0;
	memcpy(r.to, si->addr, si->addr_len < sizeof(r.to) ?
	       si->addr_len : sizeof(r.to));
	if (!p->out.len) {	/* room for the hello, filled in by meet */
		struct handoff_hello hello;

		memset(&hello, 0, sizeof(hello));

		if ((e = buf_add(&p->out, &hello, sizeof(hello))) < 0)
			return e;
	}
	if ((e = buf_add(&p->out, &r, sizeof(r))) < 0 ||
	    (e = buf_add(&p->out, bytes, h->size)) < 0)
		return e;
	return 1;
}

/* The port every ckpt_restart of the computation meets on. */
static uint16_t meet_port(uint64_t computation_id)
{
	uint64_t x = computation_id * 0x9e3779b97f4a7c15ULL;

	return MEET_PORT_BASE + (uint16_t)((x >> 32) % MEET_PORT_SPAN);
}

static void set_port(struct sockaddr_storage *a, uint16_t port)
{
	if (a->ss_family == AF_INET)
		((struct sockaddr_in *)a)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)a)->sin6_port = htons(port);
}

static socklen_t addr_len(int family)
{
	return family == AF_INET ? sizeof(struct sockaddr_in) :
				   sizeof(struct sockaddr_in6);
}

/* Whether this host's address toward p (the route's source) is the
 * greater: then this side listens. */
static int decide_listens(struct peer *p)
{
	struct sockaddr_storage own;
	socklen_t len = sizeof(own);
	uint8_t c[18];
	int s = socket(p->addr.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0), r;

	if (s < 0)
		return -errno;
	r = connect(s, (void *)&p->addr, addr_len(p->addr.ss_family)) < 0 ||
	    getsockname(s, (void *)&own, &len) < 0 ? -errno : 0;
	close(s);
	if (r < 0)
		return r;
	socket_canonical((const uint8_t *)&own, c);
	p->listens = memcmp(c, p->ip, 16) > 0;
	return 0;
}

static int start_listening(uint16_t port, int family)
{
	struct sockaddr_storage any = { .ss_family = family };
	int one = 1, zero = 0, fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC,
					   0);

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (family == AF_INET6)	/* IPv4 peers too */
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	set_port(&any, port);
	if (bind(fd, (void *)&any, addr_len(family)) < 0 || listen(fd, 64)) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

static int wait_fd(int fd, short events, long long deadline)
{
	struct pollfd p = { fd, events, 0 };
	int r = poll(&p, 1, left_ms(deadline));

	return r < 0 ? -errno : r == 0 ? -ETIMEDOUT : 0;
}

/* What the handshakes are bound to: this meeting of this computation. */
#define PURPOSE_LEN 16
static void meet_purpose(uint64_t computation_id, uint8_t out[PURPOSE_LEN])
{
	memcpy(out, "ckpt-udp", 8);
	for (int i = 0; i < 8; i++)
		out[8 + i] = (uint8_t)(computation_id >> (8 * i));
}

/* A host not met when the handshakes end: why, for send_kept_here. */
static void note_unmet(struct peer *p)
{
	if (p->failed || p->proven)
		return;
	if (!p->listens)
		p->failed = "its ckpt_restart did not answer the handshake in "
			    "time";
	else if (p->refused)
		p->failed = p->refused_why;
	else
		p->failed = "its ckpt_restart did not connect";
}

/* Connect to p, again while it refuses (its ckpt_restart not there yet);
 * the handshake starts, driven with the others by prove_all. */
static void connect_peer(struct peer *p, const uint8_t *purpose,
			 long long deadline)
{
	struct timespec pause = { 0, 20 * 1000000 };
	socklen_t len = addr_len(p->addr.ss_family);

	while (!p->failed) {
		int fd = socket(p->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC |
				SOCK_NONBLOCK, 0), err = 0;
		socklen_t elen = sizeof(err);

		if (fd < 0) {
			p->failed = "cannot make a socket";
			return;
		}
		if (connect(fd, (void *)&p->addr, len) < 0 &&
		    errno != EINPROGRESS)
			err = errno;
		else if (wait_fd(fd, POLLOUT, deadline) < 0)
			err = ETIMEDOUT;
		else
			getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen);
		if (!err) {
			p->fd = fd;
			if (meet_auth_start(&p->auth, fd, 0, purpose,
					    PURPOSE_LEN) < 0)
				p->failed = p->auth.failed;
			return;
		}
		close(fd);
		if (err != ECONNREFUSED || !left_ms(deadline))
			p->failed = "cannot connect to its ckpt_restart";
		else
			nanosleep(&pause, NULL);
	}
}

static int peers_to_accept(void)
{
	int n = 0;

	for (int i = 0; i < npeers; i++)
		n += peers[i].listens && !peers[i].failed && peers[i].fd < 0;
	return n;
}

static int peers_proving(void)
{
	int n = 0;

	for (int i = 0; i < npeers; i++)
		n += !peers[i].listens && !peers[i].failed &&
		     peers[i].fd >= 0 && !peers[i].proven;
	return n;
}

/* An accepted connection that has not proven itself yet. */
struct candidate {
	int fd;
	struct peer *p;
	struct meet_auth auth;
	long long deadline;
};

static struct candidate cands[MAX_CANDIDATES];
static int ncands;

static void drop_candidate(int i, const char *why)
{
	if (why) {
		cands[i].p->refused++;
		cands[i].p->refused_why = why;
	}
	close(cands[i].fd);
	cands[i] = cands[--ncands];
}

/* A new connection on the meeting port: a candidate when it comes from a
 * --peer-hosts host still awaited; else closed at once. */
static void take_connection(int lfd, const uint8_t *purpose)
{
	struct sockaddr_storage from;
	socklen_t len = sizeof(from);
	int fd = accept4(lfd, (void *)&from, &len,
			 SOCK_CLOEXEC | SOCK_NONBLOCK);
	struct peer *p = fd < 0 ? NULL : peer_of((void *)&from);
	struct candidate *c = &cands[ncands];

	if (fd < 0)
		return;
	if (!p || !p->listens || p->fd >= 0 || p->failed ||
	    ncands == MAX_CANDIDATES) {
		close(fd);	/* not a --peer-hosts host, or not now */
		return;
	}
	c->fd = fd;
	c->p = p;
	c->deadline = now_ms() + HANDSHAKE_TIMEOUT_MS;
	if (meet_auth_start(&c->auth, fd, 1, purpose, PURPOSE_LEN) < 0) {
		ncands++;
		drop_candidate(ncands - 1, c->auth.failed);
		return;
	}
	ncands++;
}

static void step_candidate(int i)
{
	struct candidate *c = &cands[i];
	int r = meet_auth_step(&c->auth);

	if (r < 0) {
		drop_candidate(i, c->auth.failed);
	} else if (r > 0 && c->p->fd < 0) {
		c->p->fd = c->fd;
		c->p->proven = 1;
		cands[i] = cands[--ncands];
	} else if (r > 0) {
		drop_candidate(i, NULL);	/* its ckpt_restart is met */
	} else if (now_ms() >= c->deadline) {
		drop_candidate(i, "it did not answer the handshake in time");
	}
}

static void step_connector(struct peer *p)
{
	int r = meet_auth_step(&p->auth);

	if (r < 0)
		p->failed = p->auth.failed;
	else if (r > 0)
		p->proven = 1;
}

/* The poll set: the meeting port while a host is awaited, every
 * candidate, every connection of ours still proving. */
static int poll_set(int lfd, struct pollfd *pf, struct peer **who)
{
	int k = 0;

	if (lfd >= 0 && peers_to_accept()) {
		pf[k] = (struct pollfd){ lfd, POLLIN, 0 };
		who[k++] = NULL;
	}
	for (int i = 0; i < ncands; i++) {
		pf[k] = (struct pollfd){ cands[i].fd,
					 meet_auth_events(&cands[i].auth), 0 };
		who[k++] = NULL;
	}
	for (int i = 0; i < npeers; i++)
		if (!peers[i].listens && !peers[i].failed &&
		    peers[i].fd >= 0 && !peers[i].proven) {
			pf[k] = (struct pollfd){ peers[i].fd,
				meet_auth_events(&peers[i].auth), 0 };
			who[k++] = &peers[i];
		}
	return k;
}

/* Every handshake at once, ours as connector and the candidates' on the
 * meeting port, until each host is met or the deadline. */
static void prove_all(int lfd, const uint8_t *purpose, long long deadline)
{
	struct pollfd pf[1 + MAX_CANDIDATES + MAX_PEERS];
	struct peer *who[1 + MAX_CANDIDATES + MAX_PEERS];

	for (int i = 0; i < npeers; i++)
		if (!peers[i].listens && !peers[i].failed && peers[i].fd >= 0)
			step_connector(&peers[i]);
	while (peers_to_accept() + peers_proving() > 0 && left_ms(deadline)) {
		int k = poll_set(lfd, pf, who), wait = left_ms(deadline);

		if (ncands && wait > 100)
			wait = 100;	/* candidates' own deadlines */
		if (poll(pf, k, wait) < 0 && errno != EINTR)
			break;
		for (int i = ncands - 1; i >= 0; i--)
			step_candidate(i);
		for (int j = 0; j < k; j++)
			if (who[j] && pf[j].revents)
				step_connector(who[j]);
		if (pf[0].fd == lfd && lfd >= 0 && (pf[0].revents & POLLIN))
			take_connection(lfd, purpose);
	}
	while (ncands)
		drop_candidate(ncands - 1, NULL);
	for (int i = 0; i < npeers; i++)
		note_unmet(&peers[i]);
}

/* Its "sent" byte, when read with the end of its list (a side that has
 * read ours already sends it at once). */
static void check_said_sent(struct peer *p, size_t end)
{
	if (p->in.len > end && p->in.p[end] == 'S')
		p->said_sent = 1;
	else if (p->in.len > end)
		p->failed = "it sent bytes after its list";
}

/* Walk the records read so far; a bad hello or record fails the peer. */
static void parse_in(struct peer *p, uint64_t computation_id)
{
	struct handoff_dgram r;

	if (!p->parsed && p->in.len >= sizeof(struct handoff_hello)) {
		struct handoff_hello hello;

		memcpy(&hello, p->in.p, sizeof(hello));
		if (memcmp(hello.magic, hello_magic, sizeof(hello_magic)) ||
		    hello.computation_id != computation_id) {
			p->failed = "what answered is not a ckpt_restart of "
				    "this computation";
			return;
		}
		p->parsed = sizeof(hello);
	}
	if (p->ended) {
		check_said_sent(p, p->parsed + sizeof(r));
		return;
	}
	while (p->parsed &&
	       p->in.len - p->parsed >= sizeof(r)) {
		memcpy(&r, p->in.p + p->parsed, sizeof(r));
		if (r.h.size == END_OF_DGRAMS) {
			p->ended = 1;
			check_said_sent(p, p->parsed + sizeof(r));
			return;
		}
		if (r.h.size > 65536 || r.h.from_len > sizeof(r.h.from) ||
		    r.to_len > sizeof(r.to)) {
			p->failed = "it sent a malformed datagram";
			return;
		}
		if (p->in.len - p->parsed < sizeof(r) + r.h.size)
			return;
		p->parsed += sizeof(r) + r.h.size;
	}
}

static void take_in(struct peer *p, uint64_t computation_id)
{
	char chunk[65536];
	ssize_t n = recv(p->fd, chunk, sizeof(chunk), MSG_DONTWAIT);

	if (n == 0)
		p->failed = "its ckpt_restart closed the connection";
	else if (n < 0 && errno != EAGAIN)
		p->failed = "reading from its ckpt_restart failed";
	else if (n > 0 && buf_add(&p->in, chunk, n) < 0)
		p->failed = "it sent too many datagrams";
	else if (n > 0)
		parse_in(p, computation_id);
}

static void give_out(struct peer *p)
{
	ssize_t n = send(p->fd, p->out.p + p->sent, p->out.len - p->sent,
			 MSG_DONTWAIT | MSG_NOSIGNAL);

	if (n < 0 && errno != EAGAIN)
		p->failed = "writing to its ckpt_restart failed";
	else if (n > 0)
		p->sent += n;
}

static int exchanging(const struct peer *p)
{
	return p->fd >= 0 && !p->failed &&
	       (p->sent < p->out.len || !p->ended);
}

/* Every peer's datagrams both ways, at once: no two sides wait for each
 * other's reading. */
static void exchange(uint64_t computation_id, long long deadline)
{
	struct pollfd pf[MAX_PEERS];
	int map[MAX_PEERS];

	for (;;) {
		int k = 0;

		for (int i = 0; i < npeers; i++) {
			if (!exchanging(&peers[i]))
				continue;
			pf[k] = (struct pollfd){ peers[i].fd, POLLIN |
				(peers[i].sent < peers[i].out.len ? POLLOUT : 0),
				0 };
			map[k++] = i;
		}
		if (!k)
			return;
		if (poll(pf, k, left_ms(deadline)) <= 0)
			break;
		for (int j = 0; j < k; j++) {
			struct peer *p = &peers[map[j]];

			if (pf[j].revents & POLLOUT)
				give_out(p);
			if (!p->failed && (pf[j].revents & (POLLIN | POLLHUP |
							    POLLERR)))
				take_in(p, computation_id);
		}
	}
	for (int i = 0; i < npeers; i++)
		if (exchanging(&peers[i]))
			peers[i].failed = "the exchange of datagrams timed out";
}

/* Send what p handed, from their sources' restored sockets, to the
 * sockets they waited at on p's host. */
static void send_handed(struct peer *p)
{
	size_t off = sizeof(struct handoff_hello);
	unsigned failed = 0, count = 0;

	while (off < p->parsed) {
		struct handoff_dgram r;
		struct sockaddr_storage to;
		socklen_t tolen;

		memcpy(&r, p->in.p + off, sizeof(r));
		tolen = restart_udp_destination(r.to, r.to_len, &p->addr, &to);
		if (restart_udp_send(&r.h, p->in.p + off + sizeof(r), &to,
				     tolen) < 0)
			failed++;
		count++;
		off += sizeof(r) + r.h.size;
	}
	if (failed)
		fprintf(stderr, "ckpt_restart: warning: %u of the %u datagrams "
			"host %s handed back could not be sent: %s\n", failed,
			count, p->name, strerror(errno));
}

/* This side's "sent", then the peer's. */
static void trade_sent(long long deadline)
{
	char c = 'S';

	for (int i = 0; i < npeers; i++)
		if (peers[i].fd >= 0 && !peers[i].failed &&
		    send(peers[i].fd, &c, 1, MSG_NOSIGNAL) != 1)
			peers[i].failed = "writing to its ckpt_restart failed";
	for (int i = 0; i < npeers; i++) {
		struct peer *p = &peers[i];

		if (p->fd < 0 || p->failed || p->said_sent)
			continue;
		if (wait_fd(p->fd, POLLIN, deadline) < 0 ||
		    recv(p->fd, &c, 1, MSG_DONTWAIT) != 1 || c != 'S')
			p->failed = "its ckpt_restart did not say it sent the "
				    "datagrams handed to it";
	}
}

/* As without a meeting: the datagrams kept for p, from here (unless p
 * has them already). */
static void send_kept_here(struct peer *p)
{
	size_t off = sizeof(struct handoff_hello);
	unsigned count = 0;

	if (p->handed) {
		fprintf(stderr, "ckpt_restart: warning: host %s (--peer-hosts)"
			": %s; the datagrams handed over may arrive after "
			"its processes run\n", p->name, p->failed);
		return;
	}

	while (p->out.len && off + sizeof(struct handoff_dgram) <= p->out.len) {
		struct handoff_dgram r;
		struct sockaddr_storage to;
		socklen_t tolen;

		memcpy(&r, p->out.p + off, sizeof(r));
		if (r.h.size == END_OF_DGRAMS)
			break;
		tolen = restart_udp_destination(r.to, r.to_len, NULL, &to);
		restart_udp_send(&r.h, p->out.p + off + sizeof(r), &to, tolen);
		count++;
		off += sizeof(r) + r.h.size;
	}
	fprintf(stderr, "ckpt_restart: warning: host %s (--peer-hosts): %s; "
		"%u datagrams from it waiting here are sent from this host "
		"instead (a receiver connected to their source drops them)\n",
		p->name, p->failed, count);
}

static void finish_out(struct peer *p, uint64_t computation_id)
{
	struct handoff_hello hello = { .computation_id = computation_id };
	struct handoff_dgram end = { .h.size = END_OF_DGRAMS };

	memcpy(hello.magic, hello_magic, sizeof(hello_magic));
	if (!p->out.len && buf_add(&p->out, &hello, sizeof(hello)) < 0)
		p->failed = "out of memory";
	if (p->out.len)
		memcpy(p->out.p, &hello, sizeof(hello));
	if (buf_add(&p->out, &end, sizeof(end)) < 0)
		p->failed = "out of memory";
}

static void connect_all(uint16_t port, uint64_t computation_id,
			long long deadline)
{
	int family = AF_INET, lfd = -1;
	uint8_t purpose[PURPOSE_LEN];

	meet_purpose(computation_id, purpose);

	for (int i = 0; i < npeers; i++) {
		set_port(&peers[i].addr, port);
		if (decide_listens(&peers[i]) < 0)
			peers[i].failed = "no route to it";
		if (peers[i].addr.ss_family == AF_INET6)
			family = AF_INET6;
	}
	if (peers_to_accept()) {
		lfd = start_listening(port, family);
		for (int i = 0; lfd < 0 && i < npeers; i++)
			if (peers[i].listens && !peers[i].failed)
				peers[i].failed = "cannot listen on the "
						  "meeting port";
	}
	for (int i = 0; i < npeers; i++)
		if (!peers[i].listens && !peers[i].failed)
			connect_peer(&peers[i], purpose, deadline);
	prove_all(lfd, purpose, deadline);
	if (lfd >= 0)
		close(lfd);
}

void restart_udp_hosts_meet(uint64_t computation_id)
{
	long long deadline = restart_meet_deadline(now_ms(), MEET_TIMEOUT_MS);

	if (npeers < 0)
		read_peer_hosts();
	for (int i = 0; i < npeers; i++)
		finish_out(&peers[i], computation_id);
	connect_all(meet_port(computation_id), computation_id, deadline);
	exchange(computation_id, deadline);
	for (int i = 0; i < npeers; i++)
		if (peers[i].fd >= 0 && !peers[i].failed) {
			peers[i].handed = 1;
			send_handed(&peers[i]);
		}
	trade_sent(deadline);
	for (int i = 0; i < npeers; i++) {
		struct peer *p = &peers[i];

		if (p->refused && p->proven)
			fprintf(stderr, "ckpt_restart: warning: host %s "
				"(--peer-hosts): closed %d connection%s from it "
				"that did not prove to be its ckpt_restart "
				"(last: %s); nothing was given to %s\n",
				p->name, p->refused, p->refused == 1 ? "" : "s",
				p->refused_why, p->refused == 1 ? "it" : "them");
		if (p->failed)
			send_kept_here(p);
		if (p->fd >= 0)
			close(p->fd);
		free(p->out.p);
		free(p->in.p);
	}
	npeers = -1;
}
