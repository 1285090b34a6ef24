/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a socket is, in words: "a UDP socket on 127.0.0.1:5353", "a TCP
 * socket listening on [::1]:8080", "a Unix stream socket listening on
 * /run/app.sock". Used by the checkpoint's report of what a restart will
 * not restore (unrestored.c). No malloc, no locks: threads are stopped.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "ckpt/sockaddr_text.h"
#include "internal.h"

static int sock_opt(int fd, int opt)
{
	int v = 0;
	socklen_t len = sizeof(v);

	return getsockopt(fd, SOL_SOCKET, opt, &v, &len) < 0 ? -1 : v;
}

static const char *kind_name(int domain, int type, int protocol)
{
	if (domain == AF_INET || domain == AF_INET6) {
		if (type == SOCK_STREAM)
			return protocol == IPPROTO_SCTP ? "SCTP" : "TCP";
		if (type == SOCK_DGRAM)
			return protocol == IPPROTO_ICMP ||
			       protocol == IPPROTO_ICMPV6 ? "ICMP" : "UDP";
		return "raw IP";
	}
	if (domain == AF_UNIX)
		return type == SOCK_STREAM ? "Unix stream" :
		       type == SOCK_DGRAM ? "Unix datagram" :
					    "Unix seqpacket";
	if (domain == AF_NETLINK)
		return "netlink";
	if (domain == AF_PACKET)
		return "packet";
	return NULL;
}

static void name_of(int fd, int peer, char *out, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int r;

	memset(&ss, 0, sizeof(ss));
	r = peer ? getpeername(fd, (struct sockaddr *)&ss, &sl) :
		   getsockname(fd, (struct sockaddr *)&ss, &sl);
	if (r < 0)
		out[0] = 0;
	else
		ckpt_sockaddr_text(&ss, sl, out, len);
}

/* 0 with the words in out, -errno when fd is no socket. */
int sockets_describe(int fd, char *out, size_t len)
{
	int domain = sock_opt(fd, SO_DOMAIN), type = sock_opt(fd, SO_TYPE);
	const char *kind = kind_name(domain, type, sock_opt(fd, SO_PROTOCOL));
	char here[160], there[160], other[32];

	if (domain < 0 || type < 0)
		return -ENOTSOCK;
	if (!kind) {
		ckpt_fmt(other, sizeof(other), "address family %d", domain);
		kind = other;
	}
	name_of(fd, 0, here, sizeof(here));
	name_of(fd, 1, there, sizeof(there));
	if (sock_opt(fd, SO_ACCEPTCONN) == 1)
		ckpt_fmt(out, len, "a %s socket listening on %s", kind,
			 here[0] ? here : "an unnamed address");
	else if (there[0])
		ckpt_fmt(out, len, "a %s socket %s%sconnected to %s", kind,
			 here, here[0] ? " " : "", there);
	else if (here[0])
		ckpt_fmt(out, len, "a %s socket on %s", kind, here);
	else
		ckpt_fmt(out, len, "a %s socket", kind);
	return 0;
}
