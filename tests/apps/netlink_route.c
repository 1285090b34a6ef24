/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Netlink sockets as programs use them (iproute2, libmnl, udev, dbus):
 * - a NETLINK_ROUTE socket, autobound by its first send, that asks for
 *   the list of links every DELAY_MS and checks each reply the way libmnl
 *   does: the reply's sequence number is the request's, and its port id
 *   is the one the socket had at the start (a socket bound to another
 *   port after a restart makes that a FAIL, as libmnl returns ESRCH);
 * - the same socket joined to RTNLGRP_LINK and RTNLGRP_BRVLAN (group 33:
 *   not in the 32 bits getsockname shows) with NETLINK_ADD_MEMBERSHIP,
 *   and with NETLINK_EXT_ACK on (as iproute2 sets it);
 * - a NETLINK_KOBJECT_UEVENT socket bound to group 1 (as udev's clients).
 * Each step prints what the kernel says of both sockets now.
 *
 *   netlink_route STEPS DELAY_MS
 *   -> port set / step N links ok groups G member 1,1 extack 1 / done N /
 *      FAIL ...
 */
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <sys/socket.h>
#include "app_util.h"

#define P "netlink_route"
#define TIMEOUT_MS 30000

static uint32_t port_of(int fd, uint32_t *groups)
{
	struct sockaddr_nl a;
	socklen_t len = sizeof(a);

	if (getsockname(fd, (void *)&a, &len) < 0)
		die(P, "getsockname: %s", strerror(errno));
	if (groups)
		*groups = a.nl_groups;
	return a.nl_pid;
}

static void ask_links(int fd, uint32_t seq)
{
	struct {
		struct nlmsghdr h;
		struct rtgenmsg g;
	} req = {
		.h = { .nlmsg_len = sizeof(req), .nlmsg_type = RTM_GETLINK,
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
		       .nlmsg_seq = seq },
		.g = { .rtgen_family = AF_UNSPEC },
	};
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };

	if (sendto(fd, &req, sizeof(req), 0, (void *)&kernel,
		   sizeof(kernel)) != sizeof(req))
		die(P, "sendto: %s", strerror(errno));
}

/* Links in one dump; a FAIL for a reply of another sequence or port. */
static int read_links(int fd, uint32_t seq, uint32_t port)
{
	static char buf[1 << 16];
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int links = 0;

	for (;;) {
		ssize_t n;

		if (poll(&pfd, 1, TIMEOUT_MS) != 1)
			die(P, "no reply to dump %u within %d ms", seq,
			    TIMEOUT_MS);
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0)
			die(P, "recv: %s", strerror(errno));
		for (struct nlmsghdr *h = (void *)buf; NLMSG_OK(h, n);
		     h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_seq != seq || h->nlmsg_pid != port) {
				/* an RTNLGRP_LINK event: port 0, seq 0 */
				if (h->nlmsg_pid == 0 && h->nlmsg_seq == 0)
					continue;
				say("FAIL reply seq %u port %u, asked seq %u "
				    "from port %u", h->nlmsg_seq,
				    h->nlmsg_pid, seq, port);
				exit(1);
			}
			if (h->nlmsg_type == NLMSG_DONE)
				return links;
			if (h->nlmsg_type == NLMSG_ERROR)
				die(P, "dump %u: error reply", seq);
			links += h->nlmsg_type == RTM_NEWLINK;
		}
	}
}

static int option_on(int fd, int name)
{
	int v = 0;
	socklen_t len = sizeof(v);

	if (getsockopt(fd, SOL_NETLINK, name, &v, &len) < 0)
		die(P, "getsockopt SOL_NETLINK %d: %s", name, strerror(errno));
	return v;
}

static int member_of(int fd, unsigned group)
{
	uint32_t mask[4] = { 0 };
	socklen_t len = sizeof(mask);

	if (getsockopt(fd, SOL_NETLINK, NETLINK_LIST_MEMBERSHIPS, mask,
		       &len) < 0)
		die(P, "NETLINK_LIST_MEMBERSHIPS: %s", strerror(errno));
	return !!(mask[(group - 1) / 32] & (1u << ((group - 1) % 32)));
}

static void join(int fd, int group)
{
	if (setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group,
		       sizeof(group)) < 0)
		die(P, "NETLINK_ADD_MEMBERSHIP %d: %s", group, strerror(errno));
}

int main(int argc, char **argv)
{
	struct sockaddr_nl uevent = { .nl_family = AF_NETLINK,
				      .nl_groups = 1 };
	int on = 1, route, events;
	long steps, delay;
	uint32_t port, groups;

	if (argc != 3)
		die(P, "usage: netlink_route STEPS DELAY_MS");
	steps = parse_ulong(P, "STEPS", argv[1], 1, 1000000);
	delay = parse_ulong(P, "DELAY_MS", argv[2], 0, 100000);
	route = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	events = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC,
			NETLINK_KOBJECT_UEVENT);
	if (route < 0 || events < 0)
		die(P, "socket: %s", strerror(errno));
	if (bind(events, (void *)&uevent, sizeof(uevent)) < 0)
		die(P, "bind NETLINK_KOBJECT_UEVENT: %s", strerror(errno));
	join(route, RTNLGRP_LINK);
	join(route, RTNLGRP_BRVLAN);
	if (setsockopt(route, SOL_NETLINK, NETLINK_EXT_ACK, &on,
		       sizeof(on)) < 0)
		die(P, "NETLINK_EXT_ACK: %s", strerror(errno));
	ask_links(route, 1);		/* autobinds the socket */
	port = port_of(route, NULL);
	if (read_links(route, 1, port) <= 0)
		die(P, "no link in the first dump");
	say("port %s", port ? "set" : "zero");
	for (long i = 1; i <= steps; i++) {
		uint32_t seq = (uint32_t)i + 1;

		ask_links(route, seq);
		if (read_links(route, seq, port) <= 0)
			die(P, "no link in dump %u", seq);
		port_of(events, &groups);
		say("step %ld links ok groups %u member %d,%d extack %d", i,
		    groups, member_of(route, RTNLGRP_LINK),
		    member_of(route, RTNLGRP_BRVLAN),
		    option_on(route, NETLINK_EXT_ACK));
		sleep_ms(delay);
	}
	say("done %ld", steps);
	return 0;
}
