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
DEFINE_NEXT(sendto);
DEFINE_NEXT(sendmsg);
DEFINE_NEXT(sendmmsg);
DEFINE_NEXT(connect);

CKPT_EARLY_CONSTRUCTOR static void resolve_next_socket(void)
{
	RESOLVE_NEXT(setsockopt);
	RESOLVE_NEXT(listen);
	RESOLVE_NEXT(sendto);
	RESOLVE_NEXT(sendmsg);
	RESOLVE_NEXT(sendmmsg);
	RESOLVE_NEXT(connect);
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

CKPT_WRAPPER ssize_t sendto(int fd, const void *buf, size_t len, int flags,
			    const struct sockaddr *to, socklen_t tolen)
{
	struct sockaddr_storage moved;

	return NEXT_FN(sendto)(fd, buf, len, flags,
			       host_moves_apply(to, tolen, &moved), tolen);
}

CKPT_WRAPPER ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct sockaddr_storage moved;
	struct msghdr m;

	if (!host_moves_any() || !msg)
		return NEXT_FN(sendmsg)(fd, msg, flags);
	m = *msg;
	m.msg_name = (void *)host_moves_apply(msg->msg_name, msg->msg_namelen,
					      &moved);
	return NEXT_FN(sendmsg)(fd, &m, flags);
}

#define MOVED_BATCH 16		/* 3 KiB of the caller's stack */

CKPT_WRAPPER int sendmmsg(int fd, struct mmsghdr *vec, unsigned int vlen,
			  int flags)
{
	struct sockaddr_storage moved[MOVED_BATCH];
	struct mmsghdr batch[MOVED_BATCH];
	unsigned int done = 0;

	if (!host_moves_any() || !vec)
		return NEXT_FN(sendmmsg)(fd, vec, vlen, flags);
	while (done < vlen) {
		unsigned int n = vlen - done < MOVED_BATCH ? vlen - done :
							     MOVED_BATCH;
		int sent;

		for (unsigned int i = 0; i < n; i++) {
			batch[i] = vec[done + i];
			batch[i].msg_hdr.msg_name = (void *)host_moves_apply(
				vec[done + i].msg_hdr.msg_name,
				vec[done + i].msg_hdr.msg_namelen, &moved[i]);
		}
		sent = NEXT_FN(sendmmsg)(fd, batch, n, flags);
		if (sent < 0)
			return done ? (int)done : sent;
		for (int i = 0; i < sent; i++)
			vec[done + i].msg_len = batch[i].msg_len;
		done += sent;
		if ((unsigned int)sent < n)
			break;
	}
	return done;
}

CKPT_WRAPPER int connect(int fd, const struct sockaddr *to, socklen_t tolen)
{
	struct sockaddr_storage moved;

	return NEXT_FN(connect)(fd, host_moves_apply(to, tolen, &moved),
				tolen);
}
