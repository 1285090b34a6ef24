/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A UDP ping-pong between a parent and its child, over IPv4 (two sockets
 * on 127.0.0.1 connected to each other) and IPv6 (two sockets on [::1],
 * not connected: sendto/recvfrom, the child checks the source address).
 * The parent keeps WINDOW rounds in flight: round N is "N" sent on both
 * families; the child answers each datagram with the same number after
 * DELAY_MS, so datagrams wait in the child's queues (and the replies in
 * the parent's) at any moment. Each side checks every number is the one
 * after the last on that socket: a lost datagram is a gap (or a receive
 * timeout of TIMEOUT_S), a doubled one a repeat, both a FAIL. Nothing is
 * ever sent again.
 *
 *   udp_pingpong ROUNDS WINDOW DELAY_MS
 *   -> ports P4 C4 P6 C6 / round N / OK udp_pingpong N
 *   -> FAIL ...
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include "app_util.h"

#define P "udp_pingpong"
#define TIMEOUT_S 120

static int p4, c4, p6, c6;
static struct sockaddr_in6 addr_p6, addr_c6;

static int port_of(int s)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(s, (struct sockaddr *)&ss, &len) < 0)
		die(P, "getsockname: %s", strerror(errno));
	return ss.ss_family == AF_INET6 ?
	       ntohs(((struct sockaddr_in6 *)&ss)->sin6_port) :
	       ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

static int bound(int family)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6,
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int s = socket(family, SOCK_DGRAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0 || (family == AF_INET ?
		      bind(s, (void *)&a, sizeof(a)) :
		      bind(s, (void *)&a6, sizeof(a6))) < 0)
		die(P, "socket/bind: %s", strerror(errno));
	return s;
}

static void connect_to(int s, int to)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(to, (void *)&ss, &len) < 0 ||
	    connect(s, (void *)&ss, len) < 0)
		die(P, "connect: %s", strerror(errno));
}

static void address_of(int s, struct sockaddr_in6 *a)
{
	socklen_t len = sizeof(*a);

	if (getsockname(s, (void *)a, &len) < 0)
		die(P, "getsockname: %s", strerror(errno));
}

/* Wait for a datagram on s, at most TIMEOUT_S (a restart may be on its
 * way); its number, and its source in *from when from is given. */
static long take(int s, const char *who, struct sockaddr_in6 *from)
{
	char buf[64];
	socklen_t len = sizeof(*from);
	ssize_t n;
	int r;

	do
		r = poll(&(struct pollfd){ .fd = s, .events = POLLIN }, 1,
			 TIMEOUT_S * 1000);
	while (r < 0 && errno == EINTR);
	if (r == 0) {
		say("FAIL %s: no datagram for %d s: one was lost", who,
		    TIMEOUT_S);
		exit(1);
	}
	n = recvfrom(s, buf, sizeof(buf) - 1, 0, (void *)from,
		     from ? &len : NULL);
	if (n <= 0) {
		say("FAIL %s: recv: %s", who, n ? strerror(errno) : "empty");
		exit(1);
	}
	buf[n] = 0;
	return atol(buf);
}

static void put(int s, long v, const struct sockaddr_in6 *to)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%ld", v);

	if (sendto(s, buf, n, 0, (const void *)to, to ? sizeof(*to) : 0) != n) {
		say("FAIL send %ld: %s", v, strerror(errno));
		exit(1);
	}
}

static void child(int delay_ms)
{
	long want4 = 1, want6 = 1;
	struct sockaddr_in6 from;

	for (;;) {
		struct pollfd pf[2] = { { c4, POLLIN, 0 }, { c6, POLLIN, 0 } };

		if (poll(pf, 2, TIMEOUT_S * 1000) == 0) {
			say("FAIL child: nothing for %d s", TIMEOUT_S);
			exit(1);
		}
		if (pf[0].revents) {
			long v = take(c4, "child v4", NULL);

			if (v == 0)
				exit(0);	/* quit */
			expect_eq(P, "child: IPv4 ping", v, want4++);
			sleep_ms(delay_ms);
			put(c4, v, NULL);
		}
		if (pf[1].revents) {
			long v = take(c6, "child v6", &from);

			expect_eq(P, "child: IPv6 ping", v, want6++);
			if (memcmp(&from.sin6_addr, &addr_p6.sin6_addr, 16) ||
			    from.sin6_port != addr_p6.sin6_port) {
				say("FAIL child: ping %ld from port %d, not %d",
				    v, ntohs(from.sin6_port),
				    ntohs(addr_p6.sin6_port));
				exit(1);
			}
			sleep_ms(delay_ms);
			put(c6, v, &from);
		}
	}
}

int main(int argc, char **argv)
{
	long rounds, window, sent = 0;
	int delay;
	pid_t pid;

	if (argc != 4)
		die(P, "usage: udp_pingpong ROUNDS WINDOW DELAY_MS");
	rounds = parse_ulong(P, "ROUNDS", argv[1], 1, 10000000);
	window = parse_ulong(P, "WINDOW", argv[2], 1, 64);
	delay = parse_ulong(P, "DELAY_MS", argv[3], 0, 10000);
	p4 = bound(AF_INET);
	c4 = bound(AF_INET);
	connect_to(p4, c4);
	connect_to(c4, p4);
	p6 = bound(AF_INET6);
	c6 = bound(AF_INET6);
	address_of(p6, &addr_p6);
	address_of(c6, &addr_c6);
	say("ports %d %d %d %d", port_of(p4), port_of(c4), port_of(p6),
	    port_of(c6));
	pid = fork();
	if (pid < 0)
		die(P, "fork: %s", strerror(errno));
	if (pid == 0)
		child(delay);
	for (long got = 1; got <= rounds; got++) {
		struct sockaddr_in6 from;

		for (; sent < rounds && sent < got - 1 + window; sent++) {
			put(p4, sent + 1, NULL);
			put(p6, sent + 1, &addr_c6);
		}
		expect_eq(P, "parent: IPv4 pong", take(p4, "parent v4", NULL),
			  got);
		expect_eq(P, "parent: IPv6 pong", take(p6, "parent v6", &from),
			  got);
		expect_eq(P, "parent: IPv6 pong's source port",
			  ntohs(from.sin6_port), ntohs(addr_c6.sin6_port));
		say("round %ld", got);
	}
	put(p4, 0, NULL);
	if (reap_round_child(rounds, pid, 0))
		return 1;
	say("OK udp_pingpong %ld", rounds);
	return 0;
}
