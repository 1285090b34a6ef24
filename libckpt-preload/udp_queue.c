/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The datagrams waiting to be read on a UDP socket (IPv4 or IPv6), saved
 * at checkpoint with the socket's record (CKPT_SOCK_F_DGRAMS): each as a
 * struct ckpt_socket_dgram (its size and source address) and its bytes,
 * in queue order. They are read with MSG_PEEK from SO_PEEK_OFF 0 on, so
 * nothing leaves the queue and nothing has to be put back when the
 * program goes on. ckpt_restart (restart/restart_udp.c) sends them again
 * from their source address; docs/resources.md tells the limits.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "internal.h"

#define DGRAMS_MAX	65536		/* more would not fit a queue */
#define DGRAM_BYTES_MAX	(64U << 20)

static char dgram_buf[65536];

/* Peek at the next datagram (SO_PEEK_OFF moves on to the one after it):
 * its bytes into dgram_buf, its header into *h. 1, 0 at the end of the
 * queue, or -errno. */
static int peek_one(int fd, struct ckpt_socket_dgram *h)
{
	struct sockaddr_storage from;
	struct iovec iov = { dgram_buf, sizeof(dgram_buf) };
	struct msghdr m = {
		.msg_name = &from, .msg_namelen = sizeof(from),
		.msg_iov = &iov, .msg_iovlen = 1,
	};
	/* the system call: the wrapper gives a moved host's old address */
	ssize_t n = syscall(SYS_recvmsg, fd, &m,
			    MSG_PEEK | MSG_DONTWAIT | MSG_TRUNC);

	if (n < 0)
		return errno == EAGAIN ? 0 : -errno;
	if ((size_t)n > sizeof(dgram_buf))
		return -EMSGSIZE;
	memset(h, 0, sizeof(*h));
	h->size = n;
	if (m.msg_namelen <= sizeof(h->from)) {
		h->from_len = m.msg_namelen;
		memcpy(h->from, &from, m.msg_namelen);
	}
	return 1;
}

static int peek_all(int fd, int memfd, uint64_t *size, uint32_t *count)
{
	struct ckpt_socket_dgram h;
	uint64_t bytes = 0;
	int r;

	while (*count < DGRAMS_MAX && bytes < DGRAM_BYTES_MAX) {
		r = peek_one(fd, &h);
		if (r <= 0)
			return r;
		if (write(memfd, &h, sizeof(h)) != sizeof(h) ||
		    write(memfd, dgram_buf, h.size) != (ssize_t)h.size)
			return -EIO;
		*size += sizeof(h) + h.size;
		bytes += h.size;
		(*count)++;
		/* an empty datagram may not move the peek offset: stop
		 * rather than save it again and again */
		if (h.size == 0)
			return 0;
	}
	return 0;
}

/*
 * Append the datagrams waiting on UDP socket fd to memfd: *size grows by
 * the bytes written, *count is how many. The queue and the program's own
 * peek offset are left as they were. 0 or -errno.
 */
int udp_queue_save(int fd, int memfd, uint64_t *size, uint32_t *count)
{
	int saved_off = -1, zero = 0, r;
	socklen_t len = sizeof(saved_off);

	*count = 0;
	if (getsockopt(fd, SOL_SOCKET, SO_PEEK_OFF, &saved_off, &len) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_PEEK_OFF, &zero, sizeof(zero)) < 0)
		return -errno;
	r = peek_all(fd, memfd, size, count);
	setsockopt(fd, SOL_SOCKET, SO_PEEK_OFF, &saved_off, sizeof(saved_off));
	return r;
}
