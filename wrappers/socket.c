/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * setsockopt: the multicast groups a socket joins and leaves are noted
 * (libckpt-preload/multicast.c) so a restart joins them again; the kernel
 * cannot list them. The call and the note happen with the checkpoint
 * signal blocked: no checkpoint falls between them. Other options go
 * straight through.
 *
 * listen: a TCP listener gets SO_REUSEADDR. The connections it accepts
 * inherit it, and so do their TIME_WAIT remains when the computation is
 * killed; a restart can then bind the port again at once (the kernel
 * refuses a bind over TIME_WAIT sockets that lack it, whatever the new
 * socket says). On TCP it never lets a socket bind over a listener.
 */
#include <netinet/in.h>
#include <sys/socket.h>
#include "wrappers.h"

DEFINE_NEXT(setsockopt);
DEFINE_NEXT(listen);

CKPT_EARLY_CONSTRUCTOR static void resolve_next_socket(void)
{
	RESOLVE_NEXT(setsockopt);
	RESOLVE_NEXT(listen);
}

static int set_and_note(int fd, int level, int name, const void *val,
			socklen_t len)
{
	int r = NEXT_FN(setsockopt)(fd, level, name, val, len);

	if (r == 0)
		multicast_note(fd, level, name, val, len);
	return r;
}

CKPT_WRAPPER int setsockopt(int fd, int level, int name, const void *val,
			    socklen_t len)
{
	if (!multicast_is_membership(level, name))
		return NEXT_FN(setsockopt)(fd, level, name, val, len);
	return WITHOUT_CHECKPOINT(set_and_note(fd, level, name, val, len));
}

static int is_tcp(int fd)
{
	int domain = 0, proto = 0;
	socklen_t len = sizeof(int);

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 ||
	    (domain != AF_INET && domain != AF_INET6))
		return 0;
	len = sizeof(int);
	return getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len) == 0 &&
	       proto == IPPROTO_TCP;
}

CKPT_WRAPPER int listen(int fd, int backlog)
{
	int on = 1, e = errno;

	if (is_tcp(fd))
		NEXT_FN(setsockopt)(fd, SOL_SOCKET, SO_REUSEADDR, &on,
				    sizeof(on));
	errno = e;
	return NEXT_FN(listen)(fd, backlog);
}
