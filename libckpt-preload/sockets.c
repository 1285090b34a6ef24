/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Connected AF_UNIX stream sockets (socketpair, or connect/accept) whose
 * peer is in the computation too (files.c records them as
 * CKPT_FD_UNIX_STREAM). docs/resources.md tells the whole story:
 *
 *   checkpoint, when every process is stopped (DO_WRITE): the peer's
 *   inode comes from the kernel's sock_diag netlink interface
 *   (UNIX_DIAG_PEER). One process per socket (round_claim) saves the
 *   bytes queued for that end, read with MSG_PEEK at SO_PEEK_OFF offsets:
 *   nothing is taken out, so nothing has to be written back.
 *
 *   restart: ckpt_restart (restart/restart_sockets.c) makes a socketpair
 *   per saved pair, writes each end's saved bytes into the other end (so
 *   they wait in the right queue), and hands both ends over through the
 *   restart plan (handover.c); files.c puts them in place.
 */
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include "internal.h"

#define QUEUE_MAX	(64U << 20)

static char peek_buf[65536];

static int stream_type(int fd)
{
	int type = 0, domain = 0;
	socklen_t len = sizeof(type);

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0)
		return -errno;
	len = sizeof(domain);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0)
		return -errno;
	return domain == AF_UNIX && type == SOCK_STREAM;
}

static uint32_t peer_from_reply(const char *buf, long len, uint32_t ino)
{
	const struct nlmsghdr *nlh = (const void *)buf;

	for (; NLMSG_OK(nlh, len); nlh = NLMSG_NEXT(nlh, len)) {
		const struct unix_diag_msg *m = NLMSG_DATA(nlh);
		const struct rtattr *a;
		long alen;

		if (nlh->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
		    m->udiag_ino != ino)
			continue;
		a = (const void *)(m + 1);
		alen = nlh->nlmsg_len - NLMSG_LENGTH(sizeof(*m));
		for (; RTA_OK(a, alen); a = RTA_NEXT(a, alen))
			if (a->rta_type == UNIX_DIAG_PEER)
				return *(const uint32_t *)RTA_DATA(a);
	}
	return 0;
}

/* One sock_diag request (req: len bytes, its header first) and the
 * first part of its answer into reply: the bytes received, or -errno. */
long sockets_diag_ask(const void *req, size_t len, void *reply,
		      size_t replylen)
{
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC,
			NETLINK_SOCK_DIAG);
	long n;

	if (nl < 0)
		return -errno;
	n = send(nl, req, len, 0) == (ssize_t)len ?
	    recv(nl, reply, replylen, 0) : -1;
	if (n < 0)
		n = -errno;
	close(nl);
	return n;
}

/* 1 and *peer when Unix socket ino is connected to a peer, 0 when it is
 * not, -errno on failure (sock_diag: UNIX_DIAG_PEER). */
int sockets_unix_peer(uint64_t ino, uint32_t *peer)
{
	struct {
		struct nlmsghdr nlh;
		struct unix_diag_req req;
	} msg;
	char reply[4096];
	long n;

	memset(&msg, 0, sizeof(msg));
	msg.nlh.nlmsg_len = sizeof(msg);
	msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	msg.nlh.nlmsg_flags = NLM_F_REQUEST;
	msg.req.sdiag_family = AF_UNIX;
	msg.req.udiag_states = ~0U;
	msg.req.udiag_ino = ino;
	msg.req.udiag_show = UDIAG_SHOW_PEER;
	msg.req.udiag_cookie[0] = INET_DIAG_NOCOOKIE;
	msg.req.udiag_cookie[1] = INET_DIAG_NOCOOKIE;
	n = sockets_diag_ask(&msg, sizeof(msg), reply, sizeof(reply));
	if (n < 0)
		return n;
	*peer = peer_from_reply(reply, n, ino);
	return *peer != 0;
}

/* 1 and *peer when fd is an AF_UNIX stream socket connected to a peer,
 * 0 when it is another kind of socket, -errno on failure. */
int sockets_unix_stream_peer(int fd, uint64_t ino, uint32_t *peer)
{
	int r = stream_type(fd);

	return r <= 0 ? r : sockets_unix_peer(ino, peer);
}

static int peek_all(int fd, int memfd, uint64_t *size)
{
	*size = 0;
	while (*size < QUEUE_MAX) {
		ssize_t n = recv(fd, peek_buf, sizeof(peek_buf),
				 MSG_PEEK | MSG_DONTWAIT);

		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0)
			return n < 0 ? -errno : 0;
		if (write(memfd, peek_buf, n) != n)
			return -EIO;
		*size += n;
	}
	return 0;
}

/* Append the bytes waiting to be read from fd to memfd (*size: their
 * count); the queue and the program's peek offset are left as they were.
 * Works on Unix stream and TCP sockets (SO_PEEK_OFF). 0 or -errno. */
int sockets_peek_into(int fd, int memfd, uint64_t *size)
{
	int saved_off = -1, zero = 0, r;
	socklen_t len = sizeof(saved_off);

	*size = 0;
	if (getsockopt(fd, SOL_SOCKET, SO_PEEK_OFF, &saved_off, &len) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_PEEK_OFF, &zero, sizeof(zero)) < 0)
		return -errno;
	r = peek_all(fd, memfd, size);
	setsockopt(fd, SOL_SOCKET, SO_PEEK_OFF, &saved_off, sizeof(saved_off));
	return r;
}

/*
 * The bytes waiting to be read from fd into a new *memfd (owned by
 * pipes.c's round until the image is written), *size their count; the
 * queue is left as it was. The caller holds the socket's round claim:
 * only one process may peek at a socket, whose peek offset every holder
 * shares. 0 or -errno.
 */
int sockets_save_stream_bytes(int fd, int *memfd, uint64_t *size)
{
	int mfd, r;

	*memfd = -1;
	*size = 0;
	mfd = memfd_create("ckpt-socket-queue", MFD_CLOEXEC);
	r = mfd < 0 ? -errno : sockets_peek_into(fd, mfd, size);
	if (r == 0)
		r = round_keep_memfd(mfd);
	if (r < 0) {
		if (mfd >= 0)
			close(mfd);
		return r;
	}
	*memfd = mfd;
	return 0;
}
