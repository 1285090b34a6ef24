/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Addresses the kernel gives the program after a restart that moved a
 * host of the computation (ckpt_restart --host-map): a datagram's source
 * (recvfrom; recvmsg and recvmmsg in socket_creds.c), an accepted peer,
 * getpeername and getsockname show the host's new address; the program
 * knew the old one (it compares, or keeps it as a key). Each is given
 * back as the old address (libckpt-preload/host_moves.c, the inverse of
 * what the send and connect wrappers do). Without moves: straight
 * through.
 *
 * accept, accept4 also put back a connection that waited in a listener's
 * queue at a checkpoint: it was taken out to be saved and a stand-in
 * queued in its place (libckpt-preload/accept_queue.c); when accept
 * returns a stand-in's end, the connection it stands for takes its
 * number. In a process that never held a listener other processes hold
 * too, nor queued a stand-in, at a checkpoint: one load and a branch;
 * else one recv(MSG_PEEK) more per accept.
 */
#include <sys/socket.h>
#include "wrappers.h"

DEFINE_NEXT(recvfrom);
DEFINE_NEXT(accept);
DEFINE_NEXT(accept4);
DEFINE_NEXT(getpeername);
DEFINE_NEXT(getsockname);

CKPT_EARLY_CONSTRUCTOR static void resolve_next_socket_addresses(void)
{
	RESOLVE_NEXT(recvfrom);
	RESOLVE_NEXT(accept);
	RESOLVE_NEXT(accept4);
	RESOLVE_NEXT(getpeername);
	RESOLVE_NEXT(getsockname);
}

/* The address the kernel wrote (*len bytes of it fit in `room`). */
static void give_old_address(struct sockaddr *sa, socklen_t room,
			     const socklen_t *len)
{
	if (sa && len && host_moves_any())
		host_moves_unapply(sa, *len < room ? *len : room);
}

CKPT_WRAPPER ssize_t recvfrom(int fd, void *buf, size_t n, int flags,
			      struct sockaddr *from, socklen_t *len)
{
	socklen_t room = len ? *len : 0;
	ssize_t r = NEXT_FN(recvfrom)(fd, buf, n, flags, from, len);

	if (r >= 0)
		give_old_address(from, room, len);
	return r;
}

/* accept, getpeername, getsockname: a call that fills an address. */
static int named(int (*call)(int, struct sockaddr *, socklen_t *), int fd,
		 struct sockaddr *addr, socklen_t *len)
{
	socklen_t room = len ? *len : 0;
	int r = call(fd, addr, len);

	if (r >= 0)
		give_old_address(addr, room, len);
	return r;
}

CKPT_WRAPPER int accept4(int fd, struct sockaddr *addr, socklen_t *len,
			 int flags)
{
	socklen_t room = len ? *len : 0;
	int r = NEXT_FN(accept4)(fd, addr, len, flags);

	if (r >= 0 && accept_queue_peeks())
		r = WITHOUT_CHECKPOINT(accept_queue_swap(r, addr, len, room,
							 flags));
	if (r >= 0)
		give_old_address(addr, room, len);
	return r;
}

CKPT_WRAPPER int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	socklen_t room = len ? *len : 0;
	int r = NEXT_FN(accept)(fd, addr, len);

	if (r >= 0 && accept_queue_peeks())
		r = WITHOUT_CHECKPOINT(accept_queue_swap(r, addr, len, room,
							 0));
	if (r >= 0)
		give_old_address(addr, room, len);
	return r;
}

CKPT_WRAPPER int getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	return named(NEXT_FN(getpeername), fd, addr, len);
}

CKPT_WRAPPER int getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	return named(NEXT_FN(getsockname), fd, addr, len);
}
