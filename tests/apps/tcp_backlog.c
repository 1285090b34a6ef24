/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tcp_backlog MODE FAMILY GO_FILE PORTS
 *
 * Connections waiting in a listener's backlog (connected, not yet
 * accept()ed) at a checkpoint, their clients in the same computation
 * (tests/test_tcp_backlog.py).
 *
 * The server listens on loopback with a port the kernel chooses
 * (FAMILY v4: 127.0.0.1; v6: [::1]; dual: [::] with IPV6_V6ONLY off and
 * IPv4 clients) and says "listening PORT". It then forks NCLIENTS
 * clients; each closes the listener at once (only the server holds it),
 * connects, sends "REQ i PORT LEN\n" and LEN bytes of a fixed
 * pseudo-random stream of its own (client 1 sends 200 KiB, more than
 * the receive buffer of a connection nobody accepted takes), and says
 * "client i sent LEN bytes" (or, should the queues not take it all,
 * "client i queued N of LEN bytes", the rest sent while it waits). Then
 * it waits for the reply (bounded), checks it and says "client i got
 * reply ok", sends "BYE i\n" and exits 0.
 *
 * The server accepts nothing until GO_FILE exists (polled every 50 ms,
 * bounded): meanwhile every connection sits in the listener's backlog.
 * Then it accepts all NCLIENTS (MODE blocking: accept on a blocking
 * listener; poll: poll then accept on a nonblocking one; epoll-lt: one
 * accept per level-triggered epoll_wait; epoll-et: edge-triggered, each
 * wake drained with accept4 to EAGAIN; the epoll set is made before the
 * clients connect, so the edges came before the checkpoint), within
 * ACCEPT_S seconds all together, and checks that nothing more waits.
 * For each connection: the address accept returned equals getpeername
 * and is loopback in the listener's family; the request is byte-exact;
 * the reply is "REPLY i LEN HASH PEER_PORT\n", and the client checks
 * that PEER_PORT is its own port (getsockname) then; what follows is
 * exactly "BYE i" and end of file. With PORTS "same-port" the peer's
 * port must also be the one the client had when it connected (named in
 * its request): true while the computation goes on; a restart may give
 * the connection new ports (docs/resources.md, "TCP"), PORTS "any-port".
 * It says "server got client i: LEN bytes intact from ADDR[, port
 * matches]" and "server got bye from client i", reaps the clients (each
 * must exit 0) and ends
 * with "server ok: NCLIENTS connections, N request bytes" and "done".
 * Anything wrong is one line starting "FAIL" and exit 1 (the clients
 * are given 3 s, then killed); an accept that times out says so.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "app_util.h"

#define NCLIENTS 3
#define ACCEPT_S 10		/* every accept together, after GO_FILE */
#define IO_S 10			/* one read or write of the server */
#define GO_WAIT_TICKS 2400	/* 50 ms each: 120 s */
#define CLIENT_WAIT_TICKS 90	/* 1 s each */
#define REAP_TICKS 600		/* 50 ms each: 30 s */

static const size_t sizes[NCLIENTS] = { 300, 200 * 1024, 700 };

enum mode { M_BLOCKING, M_POLL, M_EPOLL_LT, M_EPOLL_ET };
enum family { F_V4, F_V6, F_DUAL };

static enum family fam;
static int same_port;
static pid_t kids[NCLIENTS];

static unsigned char stream_byte(int client, size_t j)
{
	uint64_t x = mix64(((uint64_t)client << 40) + j / 8 + 1);

	return (unsigned char)(x >> (8 * (j % 8)));
}

static void set_nonblocking(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK
			    : fl & ~O_NONBLOCK) < 0) {
		say("FAIL fcntl: %s", strerror(errno));
		exit(1);
	}
}

static void set_timeout(int fd, int opt, long ms)
{
	struct timeval tv = { .tv_sec = ms / 1000,
			      .tv_usec = (ms % 1000) * 1000 };

	if (tv.tv_sec == 0 && tv.tv_usec == 0)
		tv.tv_usec = 1000;	/* 0 would mean forever */
	if (setsockopt(fd, SOL_SOCKET, opt, &tv, sizeof(tv)) < 0) {
		say("FAIL setsockopt timeout: %s", strerror(errno));
		exit(1);
	}
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* ---------------------------------------------------------------- client */

static int client_main(int i, int port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;
	size_t hlen, total, sent = 0, got = 0;
	char header[64], want[96], reply[96], bye[16];
	unsigned char *buf;
	uint64_t h;
	int fd, cport, ticks;

	memset(&ss, 0, sizeof(ss));
	if (fam == F_V6) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_addr = in6addr_loopback;
		sin6->sin6_port = htons(port);
		len = sizeof(*sin6);
	} else {
		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sin->sin_port = htons(port);
		len = sizeof(*sin);
	}
	fd = socket(ss.ss_family, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&ss, len) < 0) {
		say("FAIL client %d: connect: %s", i, strerror(errno));
		return 1;
	}
	len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
		say("FAIL client %d: getsockname: %s", i, strerror(errno));
		return 1;
	}
	cport = ntohs(ss.ss_family == AF_INET6 ? sin6->sin6_port
		      : sin->sin_port);
	hlen = (size_t)snprintf(header, sizeof(header), "REQ %d %d %zu\n", i,
				cport, sizes[i]);
	total = hlen + sizes[i];
	buf = malloc(total);
	if (!buf) {
		say("FAIL client %d: out of memory", i);
		return 1;
	}
	memcpy(buf, header, hlen);
	for (size_t j = 0; j < sizes[i]; j++)
		buf[hlen + j] = stream_byte(i, j);
	h = fnv1a(FNV1A_INIT, buf + hlen, sizes[i]);

	/* queue all that the socket takes without waiting */
	set_nonblocking(fd, 1);
	while (sent < total) {
		ssize_t n = send(fd, buf + sent, total - sent, MSG_NOSIGNAL);

		if (n > 0) {
			sent += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		say("FAIL client %d: send: %s", i, strerror(errno));
		return 1;
	}
	if (sent == total)
		say("client %d sent %zu bytes", i, sizes[i]);
	else
		say("client %d queued %zu of %zu bytes", i,
		    sent > hlen ? sent - hlen : 0, sizes[i]);

	/* the rest, as the server reads (after GO_FILE) */
	for (ticks = 0; sent < total; ) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		ssize_t n;
		int r = poll(&p, 1, 1000);

		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0 && ++ticks >= CLIENT_WAIT_TICKS) {
			say("FAIL client %d: could not send the rest of its "
			    "request within %d s", i, CLIENT_WAIT_TICKS);
			return 1;
		}
		if (r <= 0)
			continue;
		n = send(fd, buf + sent, total - sent, MSG_NOSIGNAL);
		if (n > 0)
			sent += (size_t)n;
		else if (n < 0 && errno != EINTR && errno != EAGAIN &&
			 errno != EWOULDBLOCK) {
			say("FAIL client %d: send: %s", i, strerror(errno));
			return 1;
		}
	}

	/* the reply: one line */
	for (ticks = 0; got == 0 || reply[got - 1] != '\n'; ) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;
		int r = poll(&p, 1, 1000);

		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0 && ++ticks >= CLIENT_WAIT_TICKS) {
			say("FAIL client %d: no reply within %d s", i,
			    CLIENT_WAIT_TICKS);
			return 1;
		}
		if (r <= 0)
			continue;
		if (got == sizeof(reply) - 1) {
			reply[got] = 0;
			say("FAIL client %d: reply too long: %s", i, reply);
			return 1;
		}
		n = read(fd, reply + got, sizeof(reply) - 1 - got);
		if (n == 0) {
			say("FAIL client %d: the connection was closed by the "
			    "server before its reply (read 0 after %zu bytes "
			    "of it)", i, got);
			return 1;
		}
		if (n < 0 && (errno == EINTR || errno == EAGAIN ||
			      errno == EWOULDBLOCK))
			continue;
		if (n < 0) {
			say("FAIL client %d: read: %s", i, strerror(errno));
			return 1;
		}
		got += (size_t)n;
	}
	reply[got] = 0;
	/* with the peer port the server saw, which must be this end's
	 * port now (a restart may have given it a new one) */
	len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
		say("FAIL client %d: getsockname: %s", i, strerror(errno));
		return 1;
	}
	cport = ntohs(ss.ss_family == AF_INET6 ? sin6->sin6_port
		      : sin->sin_port);
	snprintf(want, sizeof(want), "REPLY %d %zu %016" PRIx64 " %d\n", i,
		 sizes[i], h, cport);
	if (strcmp(reply, want) != 0) {
		reply[got - 1] = 0;
		say("FAIL client %d: wrong reply '%s', expected '%.*s'", i,
		    reply, (int)strlen(want) - 1, want);
		return 1;
	}
	say("client %d got reply ok", i);

	set_nonblocking(fd, 0);
	snprintf(bye, sizeof(bye), "BYE %d\n", i);
	if (send(fd, bye, strlen(bye), MSG_NOSIGNAL) != (ssize_t)strlen(bye)) {
		say("FAIL client %d: send bye: %s", i, strerror(errno));
		return 1;
	}
	close(fd);
	free(buf);
	return 0;
}

/* ---------------------------------------------------------------- server */

static void end_clients(void)
{
	int left = 0;

	for (int t = 0; t < 60; t++) {	/* 3 s to say why */
		left = 0;
		for (int i = 0; i < NCLIENTS; i++) {
			if (kids[i] > 0 && waitpid(kids[i], NULL, WNOHANG) ==
			    kids[i])
				kids[i] = 0;
			left += kids[i] > 0;
		}
		if (!left)
			return;
		sleep_ms(50);
	}
	for (int i = 0; i < NCLIENTS; i++)
		if (kids[i] > 0) {
			kill(kids[i], SIGKILL);
			waitpid(kids[i], NULL, 0);
		}
}

static void fail(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	say("FAIL server: %s", line);
	end_clients();
	exit(1);
}

static const char *addr_text(const struct sockaddr_storage *ss, char *buf,
			     size_t size, int *port)
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)ss;

		inet_ntop(AF_INET, &s->sin_addr, buf, size);
		*port = ntohs(s->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const void *)ss;

		inet_ntop(AF_INET6, &s->sin6_addr, buf, size);
		*port = ntohs(s->sin6_port);
	} else {
		snprintf(buf, size, "family %d", ss->ss_family);
		*port = -1;
	}
	return buf;
}

/* One more accepted connection: the address accept gave must be what
 * getpeername says, in the listener's family. */
static void check_accepted(int fd, struct sockaddr_storage *from,
			   socklen_t fromlen, int n)
{
	struct sockaddr_storage peer;
	socklen_t plen = sizeof(peer);
	char a[64], b[64];
	int pa, pb;
	int want = fam == F_V4 ? AF_INET : AF_INET6;

	if (getpeername(fd, (struct sockaddr *)&peer, &plen) < 0)
		fail("connection %d: getpeername: %s", n, strerror(errno));
	if (from->ss_family != want || peer.ss_family != want)
		fail("connection %d: accept gave family %d, getpeername %d, "
		     "want %d", n, from->ss_family, peer.ss_family, want);
	if (fromlen != plen || memcmp(from, &peer, plen) != 0) {
		addr_text(from, a, sizeof(a), &pa);
		addr_text(&peer, b, sizeof(b), &pb);
		fail("connection %d: accept gave %s port %d, getpeername "
		     "%s port %d", n, a, pa, b, pb);
	}
}

static int accept_one(int l, struct sockaddr_storage *from, socklen_t *len,
		      int flags)
{
	*len = sizeof(*from);
	memset(from, 0, sizeof(*from));
	if (flags)
		return accept4(l, (struct sockaddr *)from, len, flags);
	return accept(l, (struct sockaddr *)from, len);
}

static void accept_timeout(int n, const char *mode)
{
	say("FAIL server: accept timed out after %d s (%s): %d of %d "
	    "connections accepted", ACCEPT_S, mode, n, NCLIENTS);
	end_clients();
	exit(2);
}

static int accept_all(int l, int ep, enum mode mode, const char *mname,
		      int *fds)
{
	long deadline = now_ms() + ACCEPT_S * 1000L;
	int n = 0;

	while (n < NCLIENTS) {
		struct sockaddr_storage from;
		socklen_t flen;
		long left = deadline - now_ms();
		int fd;

		if (left <= 0)
			accept_timeout(n, mname);
		if (mode == M_BLOCKING) {
			set_timeout(l, SO_RCVTIMEO, left);
			fd = accept_one(l, &from, &flen, 0);
			if (fd < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				accept_timeout(n, mname);
		} else if (mode == M_POLL) {
			struct pollfd p = { .fd = l, .events = POLLIN };
			int r = poll(&p, 1, (int)left);

			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				fail("poll: %s", strerror(errno));
			if (r == 0)
				accept_timeout(n, mname);
			fd = accept_one(l, &from, &flen, 0);
			if (fd < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				continue;	/* readable, then taken? */
		} else {
			struct epoll_event ev[4];
			int r = epoll_wait(ep, ev, 4, (int)left);

			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				fail("epoll_wait: %s", strerror(errno));
			if (r == 0)
				accept_timeout(n, mname);
			if (r != 1 || ev[0].data.fd != l ||
			    !(ev[0].events & EPOLLIN))
				fail("epoll_wait gave %d events, the first "
				     "%#x for fd %d (listener %d)", r,
				     ev[0].events, ev[0].data.fd, l);
			if (mode == M_EPOLL_LT) {
				fd = accept_one(l, &from, &flen, SOCK_CLOEXEC);
				if (fd < 0 && (errno == EAGAIN ||
					       errno == EWOULDBLOCK))
					continue;
			} else {
				/* edge-triggered: drain to EAGAIN */
				for (;;) {
					fd = accept_one(l, &from, &flen,
							SOCK_CLOEXEC);
					if (fd < 0 && errno == EINTR)
						continue;
					if (fd < 0 && (errno == EAGAIN ||
						       errno == EWOULDBLOCK))
						break;
					if (fd < 0)
						fail("accept4: %s",
						     strerror(errno));
					if (n == NCLIENTS)
						fail("accept4 gave a connection "
						     "more than the %d clients "
						     "made", NCLIENTS);
					check_accepted(fd, &from, flen, n);
					fds[n++] = fd;
				}
				continue;
			}
		}
		if (fd < 0 && errno == EINTR)
			continue;
		if (fd < 0)
			fail("accept: %s", strerror(errno));
		check_accepted(fd, &from, flen, n);
		fds[n++] = fd;
	}

	/* nothing more waits: no connection made twice, none invented */
	{
		struct pollfd p = { .fd = l, .events = POLLIN };
		int r = poll(&p, 1, 0);

		if (r != 0)
			fail("the listener is still readable (poll %d, revents "
			     "%#x) after the %d connections were accepted", r,
			     p.revents, NCLIENTS);
	}
	return n;
}

static void read_exact(int fd, void *buf, size_t len, int n, const char *what)
{
	size_t got = 0;

	while (got < len) {
		ssize_t r = read(fd, (char *)buf + got, len - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			fail("connection %d: reading %s: %s (%zu of %zu bytes "
			     "read)", n, what, strerror(errno), got, len);
		if (r == 0)
			fail("connection %d: end of file in %s after %zu of %zu "
			     "bytes", n, what, got, len);
		got += (size_t)r;
	}
}

static size_t serve(int fd, int n, int *seen)
{
	struct sockaddr_storage peer;
	socklen_t plen = sizeof(peer);
	char line[96], addr[64], want_bye[16], rest[16];
	const char *want_addr = fam == F_V4 ? "127.0.0.1"
		: fam == F_V6 ? "::1" : "::ffff:127.0.0.1";
	size_t hl = 0, len;
	unsigned char *buf;
	int i, cport, pport;
	ssize_t r;

	set_nonblocking(fd, 0);
	set_timeout(fd, SO_RCVTIMEO, IO_S * 1000L);
	set_timeout(fd, SO_SNDTIMEO, IO_S * 1000L);
	/* the header, byte by byte: nothing of the payload read with it */
	do {
		if (hl == sizeof(line) - 1)
			fail("connection %d: header too long", n);
		read_exact(fd, line + hl, 1, n, "the request's header");
	} while (line[hl++] != '\n');
	line[hl - 1] = 0;
	if (sscanf(line, "REQ %d %d %zu", &i, &cport, &len) != 3 || i < 0 ||
	    i >= NCLIENTS)
		fail("connection %d: bad header '%s'", n, line);
	if (seen[i])
		fail("connection %d: client %d connected twice", n, i);
	seen[i] = 1;
	if (len != sizes[i])
		fail("client %d: header says %zu bytes, it sends %zu", i, len,
		     sizes[i]);
	if (getpeername(fd, (struct sockaddr *)&peer, &plen) < 0)
		fail("client %d: getpeername: %s", i, strerror(errno));
	addr_text(&peer, addr, sizeof(addr), &pport);
	if (strcmp(addr, want_addr) != 0)
		fail("client %d: peer address %s, expected %s", i, addr,
		     want_addr);
	if (same_port && pport != cport)
		fail("client %d: peer port %d, but the client connected from "
		     "port %d", i, pport, cport);
	buf = malloc(len);
	if (!buf)
		fail("out of memory");
	read_exact(fd, buf, len, n, "the request");
	for (size_t j = 0; j < len; j++)
		if (buf[j] != stream_byte(i, j))
			fail("client %d: request byte %zu is %#x, expected %#x",
			     i, j, buf[j], stream_byte(i, j));
	say("server got client %d: %zu bytes intact from %s%s", i, len, addr,
	    same_port ? ", port matches" : "");
	snprintf(line, sizeof(line), "REPLY %d %zu %016" PRIx64 " %d\n", i,
		 len, fnv1a(FNV1A_INIT, buf, len), pport);
	free(buf);
	if (send(fd, line, strlen(line), MSG_NOSIGNAL) != (ssize_t)strlen(line))
		fail("client %d: send reply: %s", i, strerror(errno));
	snprintf(want_bye, sizeof(want_bye), "BYE %d\n", i);
	read_exact(fd, rest, strlen(want_bye), n, "the bye");
	if (memcmp(rest, want_bye, strlen(want_bye)) != 0)
		fail("client %d: '%.*s' after the reply, expected '%.*s'", i,
		     (int)strlen(want_bye) - 1, rest,
		     (int)strlen(want_bye) - 1, want_bye);
	do
		r = read(fd, rest, sizeof(rest));
	while (r < 0 && errno == EINTR);
	if (r != 0)
		fail("client %d: %zd more after its bye (%s), expected end of "
		     "file", i, r, r < 0 ? strerror(errno) : "bytes");
	say("server got bye from client %d", i);
	close(fd);
	return len;
}

int main(int argc, char **argv)
{
	struct sockaddr_storage ss;
	socklen_t len;
	enum mode mode;
	int l, ep = -1, port, one = 1, zero = 0, fds[NCLIENTS];
	int seen[NCLIENTS] = { 0 }, ticks, bad = 0;
	size_t total = 0;

	if (argc != 5)
		die("tcp_backlog", "usage: tcp_backlog blocking|poll|epoll-lt|"
		    "epoll-et v4|v6|dual GO_FILE same-port|any-port");
	if (!strcmp(argv[4], "same-port"))
		same_port = 1;
	else if (strcmp(argv[4], "any-port"))
		die("tcp_backlog", "PORTS: same-port or any-port, not %s",
		    argv[4]);
	if (!strcmp(argv[1], "blocking"))
		mode = M_BLOCKING;
	else if (!strcmp(argv[1], "poll"))
		mode = M_POLL;
	else if (!strcmp(argv[1], "epoll-lt"))
		mode = M_EPOLL_LT;
	else if (!strcmp(argv[1], "epoll-et"))
		mode = M_EPOLL_ET;
	else
		die("tcp_backlog", "unknown mode %s", argv[1]);
	if (!strcmp(argv[2], "v4"))
		fam = F_V4;
	else if (!strcmp(argv[2], "v6"))
		fam = F_V6;
	else if (!strcmp(argv[2], "dual"))
		fam = F_DUAL;
	else
		die("tcp_backlog", "unknown family %s", argv[2]);
	signal(SIGPIPE, SIG_IGN);

	memset(&ss, 0, sizeof(ss));
	if (fam == F_V4) {
		struct sockaddr_in *s = (struct sockaddr_in *)&ss;

		s->sin_family = AF_INET;
		s->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*s);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;

		s->sin6_family = AF_INET6;
		s->sin6_addr = fam == F_V6 ? in6addr_loopback : in6addr_any;
		len = sizeof(*s);
	}
	l = socket(ss.ss_family, SOCK_STREAM, 0);
	if (l < 0)
		die("tcp_backlog", "socket: %s", strerror(errno));
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fam == F_DUAL &&
	    setsockopt(l, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) < 0)
		die("tcp_backlog", "IPV6_V6ONLY: %s", strerror(errno));
	if (bind(l, (struct sockaddr *)&ss, len) < 0 || listen(l, 16) < 0) {
		fprintf(stderr, "tcp_backlog: cannot listen on %s: %s\n",
			argv[2], strerror(errno));
		return 3;
	}
	len = sizeof(ss);
	getsockname(l, (struct sockaddr *)&ss, &len);
	port = ntohs(ss.ss_family == AF_INET
		     ? ((struct sockaddr_in *)&ss)->sin_port
		     : ((struct sockaddr_in6 *)&ss)->sin6_port);
	if (mode != M_BLOCKING)
		set_nonblocking(l, 1);
	if (mode == M_EPOLL_LT || mode == M_EPOLL_ET) {
		struct epoll_event ev = {
			.events = EPOLLIN | (mode == M_EPOLL_ET ? EPOLLET : 0),
			.data.fd = l,
		};

		ep = epoll_create1(EPOLL_CLOEXEC);
		if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev) < 0)
			die("tcp_backlog", "epoll: %s", strerror(errno));
	}
	say("listening %d", port);

	for (int i = 0; i < NCLIENTS; i++) {
		kids[i] = fork();
		if (kids[i] < 0)
			fail("fork: %s", strerror(errno));
		if (kids[i] == 0) {
			/* the listener stays the server's alone */
			close(l);
			if (ep >= 0)
				close(ep);
			_exit(client_main(i, port));
		}
	}

	for (ticks = 0; access(argv[3], F_OK) != 0; ticks++) {
		if (ticks == GO_WAIT_TICKS)
			fail("%s did not appear within %d s", argv[3],
			     GO_WAIT_TICKS / 20);
		sleep_ms(50);
	}
	say("server accepting (%s)", argv[1]);
	accept_all(l, ep, mode, argv[1], fds);
	say("server accepted %d connections, none left", NCLIENTS);
	for (int n = 0; n < NCLIENTS; n++)
		total += serve(fds[n], n, seen);

	for (ticks = 0; ticks < REAP_TICKS; ticks++) {
		int left = 0;

		for (int i = 0; i < NCLIENTS; i++) {
			int status;

			if (kids[i] <= 0)
				continue;
			if (waitpid(kids[i], &status, WNOHANG) != kids[i]) {
				left++;
				continue;
			}
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
				say("FAIL server: client %d ended with status "
				    "%#x", i, status);
				bad = 1;
			}
			kids[i] = 0;
		}
		if (!left)
			break;
		sleep_ms(50);
	}
	if (ticks == REAP_TICKS)
		fail("the clients did not all exit within %d s",
		     REAP_TICKS / 20);
	if (bad)
		return 1;
	say("server ok: %d connections, %zu request bytes", NCLIENTS, total);
	say("done");
	return 0;
}
