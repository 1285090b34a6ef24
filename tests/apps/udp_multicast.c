/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A multicast group on loopback: a UDP socket on 0.0.0.0 joins a group
 * of 239.0.0.0/8 on 127.0.0.1 (IP_ADD_MEMBERSHIP; IP_MULTICAST_ALL off,
 * so only a member receives), another socket sends tick N to the group
 * every DELAY_MS (IP_MULTICAST_IF 127.0.0.1, loop on) and the member
 * must receive exactly N within TIMEOUT_S: without the membership the
 * kernel drops the datagram, and that is a FAIL.
 *
 *   udp_multicast TICKS DELAY_MS
 *   -> group G port P / tick N / OK udp_multicast N / FAIL ...
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include "app_util.h"

#define P "udp_multicast"
#define TIMEOUT_S 60

static void set_int(int fd, int level, int name, int v, const char *what)
{
	if (setsockopt(fd, level, name, &v, sizeof(v)) < 0)
		die(P, "%s: %s", what, strerror(errno));
}

int main(int argc, char **argv)
{
	struct sockaddr_in any = { .sin_family = AF_INET }, group;
	struct ip_mreqn mreq = { .imr_ifindex = 0 };
	struct in_addr lo = { htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(group);
	long ticks, delay;
	int member, sender;
	char ip[32];

	if (argc != 3)
		die(P, "usage: udp_multicast TICKS DELAY_MS");
	ticks = parse_ulong(P, "TICKS", argv[1], 1, 1000000);
	delay = parse_ulong(P, "DELAY_MS", argv[2], 1, 100000);
	member = socket(AF_INET, SOCK_DGRAM, 0);
	sender = socket(AF_INET, SOCK_DGRAM, 0);
	if (member < 0 || sender < 0 ||
	    bind(member, (void *)&any, sizeof(any)) < 0 ||
	    getsockname(member, (void *)&group, &len) < 0)
		die(P, "socket: %s", strerror(errno));
	/* a group of its own: 239.<pid bits> */
	group.sin_addr.s_addr = htonl(0xef000000u | ((getpid() & 0xffff) << 8) |
				      1);
	mreq.imr_multiaddr = group.sin_addr;
	mreq.imr_address = lo;
	set_int(member, IPPROTO_IP, IP_MULTICAST_ALL, 0, "IP_MULTICAST_ALL");
	if (setsockopt(member, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mreq,
		       sizeof(mreq)) < 0)
		die(P, "IP_ADD_MEMBERSHIP: %s", strerror(errno));
	if (setsockopt(sender, IPPROTO_IP, IP_MULTICAST_IF, &lo,
		       sizeof(lo)) < 0)
		die(P, "IP_MULTICAST_IF: %s", strerror(errno));
	set_int(sender, IPPROTO_IP, IP_MULTICAST_LOOP, 1, "IP_MULTICAST_LOOP");
	inet_ntop(AF_INET, &group.sin_addr, ip, sizeof(ip));
	say("group %s port %d", ip, ntohs(group.sin_port));
	for (long t = 1; t <= ticks; t++) {
		char buf[32];
		int n = snprintf(buf, sizeof(buf), "%ld", t), r;

		sleep_ms(delay);
		if (sendto(sender, buf, n, 0, (void *)&group, sizeof(group)) != n)
			die(P, "sendto: %s", strerror(errno));
		do
			r = poll(&(struct pollfd){ .fd = member,
						   .events = POLLIN }, 1,
				 TIMEOUT_S * 1000);
		while (r < 0 && errno == EINTR);
		if (r == 0) {
			say("FAIL tick %ld: no multicast datagram in %d s", t,
			    TIMEOUT_S);
			return 1;
		}
		n = recv(member, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = 0;
		expect_eq(P, "datagram", atol(buf), t);
		say("tick %ld", t);
	}
	say("OK udp_multicast %ld", ticks);
	return 0;
}
