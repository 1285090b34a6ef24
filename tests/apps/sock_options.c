/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Socket options kept across a restart. One process holds a TCP
 * connection to itself (both ends in the computation) over 127.0.0.1, a
 * TCP listener, a UDP socket on 127.0.0.1 and one on [::1], and a Unix
 * stream socket pair, each with unusual option values (TCP_NODELAY,
 * keepalive and its TCP_KEEP* times, SO_LINGER, receive and send
 * timeouts, buffer sizes, SO_BROADCAST, multicast TTL and loop,
 * O_NONBLOCK, FD_CLOEXEC). It prints what getsockopt and fcntl read
 * once, then every tick sends the tick number over the connection and
 * reads it at the other end, and reads every option again: any change is
 * a FAIL.
 *
 *   sock_options TICKS DELAY_MS
 *   -> options FD:NAME=VALUE ...   (once, and "final ..." at the end)
 *   -> tick N ... / OK sock_options N / FAIL ...
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include "app_util.h"

#define P "sock_options"

static int conn, acc, lst, udp4, udp6, up[2];
static char text[4096];

static void set_int(int fd, int level, int name, int v, const char *what)
{
	if (setsockopt(fd, level, name, &v, sizeof(v)) < 0)
		die(P, "fd %d: %s: %s", fd, what, strerror(errno));
}

static void set_pair(int fd, int name, long a, long b, const char *what)
{
	struct linger l = { a, b };
	struct timeval tv = { a, b };
	int r = name == SO_LINGER ? setsockopt(fd, SOL_SOCKET, name, &l,
					       sizeof(l)) :
		setsockopt(fd, SOL_SOCKET, name, &tv, sizeof(tv));

	if (r < 0)
		die(P, "fd %d: %s: %s", fd, what, strerror(errno));
}

static void add(const char *fmt, ...)
{
	size_t n = strlen(text);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text + n, sizeof(text) - n, fmt, ap);
	va_end(ap);
}

static void show_int(int fd, int level, int name, const char *what)
{
	int v = -1;
	socklen_t len = sizeof(v);

	if (getsockopt(fd, level, name, &v, &len) < 0)
		add(" %d:%s=err", fd, what);
	else
		add(" %d:%s=%d", fd, what, v);
}

static void show_common(int fd)
{
	struct linger l = { 0 };
	struct timeval r = { 0 }, s = { 0 };
	socklen_t len = sizeof(l);

	getsockopt(fd, SOL_SOCKET, SO_LINGER, &l, &len);
	len = sizeof(r);
	getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &r, &len);
	len = sizeof(s);
	getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &s, &len);
	add(" %d:linger=%d,%d %d:rcvtimeo=%ld.%06ld %d:sndtimeo=%ld.%06ld",
	    fd, l.l_onoff, l.l_linger, fd, (long)r.tv_sec, (long)r.tv_usec,
	    fd, (long)s.tv_sec, (long)s.tv_usec);
	show_int(fd, SOL_SOCKET, SO_RCVBUF, "rcvbuf");
	show_int(fd, SOL_SOCKET, SO_SNDBUF, "sndbuf");
	show_int(fd, SOL_SOCKET, SO_KEEPALIVE, "keepalive");
	add(" %d:nonblock=%d %d:cloexec=%d", fd,
	    !!(fcntl(fd, F_GETFL) & O_NONBLOCK), fd,
	    !!(fcntl(fd, F_GETFD) & FD_CLOEXEC));
}

static void show_tcp(int fd)
{
	show_common(fd);
	show_int(fd, IPPROTO_TCP, TCP_NODELAY, "nodelay");
	show_int(fd, IPPROTO_TCP, TCP_KEEPIDLE, "keepidle");
	show_int(fd, IPPROTO_TCP, TCP_KEEPINTVL, "keepintvl");
	show_int(fd, IPPROTO_TCP, TCP_KEEPCNT, "keepcnt");
}

static const char *all_options(void)
{
	text[0] = 0;
	show_tcp(conn);
	show_tcp(acc);
	show_tcp(lst);
	show_common(udp4);
	show_int(udp4, SOL_SOCKET, SO_BROADCAST, "broadcast");
	show_int(udp4, IPPROTO_IP, IP_MULTICAST_TTL, "mttl");
	show_int(udp4, IPPROTO_IP, IP_MULTICAST_LOOP, "mloop");
	show_common(udp6);
	show_int(udp6, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, "mhops");
	show_int(udp6, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, "mloop6");
	show_common(up[0]);
	show_common(up[1]);
	return text;
}

static void tune_tcp(int fd, int nodelay, int idle, int intvl, int cnt)
{
	set_int(fd, IPPROTO_TCP, TCP_NODELAY, nodelay, "TCP_NODELAY");
	set_int(fd, SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE");
	set_int(fd, IPPROTO_TCP, TCP_KEEPIDLE, idle, "TCP_KEEPIDLE");
	set_int(fd, IPPROTO_TCP, TCP_KEEPINTVL, intvl, "TCP_KEEPINTVL");
	set_int(fd, IPPROTO_TCP, TCP_KEEPCNT, cnt, "TCP_KEEPCNT");
}

static void make_tcp(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lst = socket(AF_INET, SOCK_STREAM, 0);
	conn = socket(AF_INET, SOCK_STREAM, 0);
	/* its port has a connection in TIME_WAIT after the kill */
	if (lst >= 0)
		set_int(lst, SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR");
	if (lst < 0 || conn < 0 || bind(lst, (void *)&a, sizeof(a)) < 0 ||
	    listen(lst, 4) < 0 || getsockname(lst, (void *)&a, &len) < 0 ||
	    connect(conn, (void *)&a, len) < 0 ||
	    (acc = accept(lst, NULL, NULL)) < 0)
		die(P, "tcp: %s", strerror(errno));
	tune_tcp(conn, 1, 77, 13, 5);
	tune_tcp(acc, 0, 301, 29, 3);
	tune_tcp(lst, 1, 55, 11, 4);
	set_pair(conn, SO_LINGER, 1, 7, "SO_LINGER");
	set_pair(conn, SO_RCVTIMEO, 3, 500000, "SO_RCVTIMEO");
	set_pair(acc, SO_SNDTIMEO, 4, 500000, "SO_SNDTIMEO");
	set_pair(acc, SO_RCVTIMEO, 9, 0, "SO_RCVTIMEO");
	set_int(conn, SOL_SOCKET, SO_RCVBUF, 50000, "SO_RCVBUF");
	set_int(acc, SOL_SOCKET, SO_SNDBUF, 60000, "SO_SNDBUF");
	set_int(lst, SOL_SOCKET, SO_RCVBUF, 40000, "SO_RCVBUF");
	fcntl(conn, F_SETFL, O_NONBLOCK);
	fcntl(conn, F_SETFD, FD_CLOEXEC);
	fcntl(lst, F_SETFD, FD_CLOEXEC);
}

static void make_udp(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6,
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	udp4 = socket(AF_INET, SOCK_DGRAM, 0);
	udp6 = socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	if (udp4 < 0 || udp6 < 0 || bind(udp4, (void *)&a, sizeof(a)) < 0 ||
	    bind(udp6, (void *)&a6, sizeof(a6)) < 0)
		die(P, "udp: %s", strerror(errno));
	set_int(udp4, SOL_SOCKET, SO_BROADCAST, 1, "SO_BROADCAST");
	set_int(udp4, IPPROTO_IP, IP_MULTICAST_TTL, 7, "IP_MULTICAST_TTL");
	set_int(udp4, IPPROTO_IP, IP_MULTICAST_LOOP, 0, "IP_MULTICAST_LOOP");
	set_int(udp4, SOL_SOCKET, SO_RCVBUF, 70000, "SO_RCVBUF");
	set_pair(udp4, SO_RCVTIMEO, 2, 750000, "SO_RCVTIMEO");
	set_pair(udp4, SO_LINGER, 1, 3, "SO_LINGER");
	set_int(udp6, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, 9,
		"IPV6_MULTICAST_HOPS");
	set_int(udp6, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, 0,
		"IPV6_MULTICAST_LOOP");
	set_int(udp6, SOL_SOCKET, SO_SNDBUF, 30000, "SO_SNDBUF");
	set_pair(udp6, SO_SNDTIMEO, 6, 0, "SO_SNDTIMEO");
	fcntl(udp4, F_SETFD, FD_CLOEXEC);
}

static void make_unix(void)
{
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, up) < 0)
		die(P, "socketpair: %s", strerror(errno));
	set_pair(up[0], SO_RCVTIMEO, 5, 500000, "SO_RCVTIMEO");
	set_int(up[0], SOL_SOCKET, SO_SNDBUF, 20000, "SO_SNDBUF");
	set_int(up[1], SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE");
	fcntl(up[1], F_SETFL, O_NONBLOCK);
	fcntl(up[1], F_SETFD, FD_CLOEXEC);
}

/* The tick number over the TCP connection (conn is non-blocking: wait
 * with a bound) and over the Unix pair. */
static void exchange(long tick)
{
	long got = -1;

	if (write(conn, &tick, sizeof(tick)) != sizeof(tick) ||
	    read(acc, &got, sizeof(got)) != sizeof(got))
		die(P, "tcp exchange: %s", strerror(errno));
	expect_eq(P, "tick over TCP", got, tick);
	got = -1;
	if (write(up[0], &tick, sizeof(tick)) != sizeof(tick))
		die(P, "unix write: %s", strerror(errno));
	for (int i = 0; i < 1000 && read(up[1], &got, sizeof(got)) < 0; i++)
		sleep_ms(10);
	expect_eq(P, "tick over the Unix pair", got, tick);
}

int main(int argc, char **argv)
{
	static char first[4096];
	long ticks, delay;

	if (argc != 3)
		die(P, "usage: sock_options TICKS DELAY_MS");
	ticks = parse_ulong(P, "TICKS", argv[1], 1, 1000000);
	delay = parse_ulong(P, "DELAY_MS", argv[2], 1, 100000);
	make_tcp();
	make_udp();
	make_unix();
	snprintf(first, sizeof(first), "%s", all_options());
	say("options%s", first);
	for (long t = 1; t <= ticks; t++) {
		sleep_ms(delay);
		exchange(t);
		if (strcmp(all_options(), first)) {
			say("FAIL tick %ld: options changed:%s", t, text);
			return 1;
		}
		say("tick %ld", t);
	}
	say("final%s", all_options());
	say("OK sock_options %ld", ticks);
	return 0;
}
