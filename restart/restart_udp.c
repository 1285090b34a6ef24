// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Datagrams waiting on UDP sockets at the checkpoint (saved by
 * libckpt-preload/udp_queue.c with the socket's CKPT_FD_SOCKET_BOUND
 * record, CKPT_SOCK_F_DGRAMS) are sent again, in their order, into the
 * socket restart_listeners.c made, before any process runs: from the
 * restored UDP socket that holds their source address when there is one
 * (a peer of the computation: the source is exact, and a connected
 * receiver accepts it), else from a new socket bound to that address,
 * else (the address is taken by a program outside) from a new loopback
 * port. A datagram whose source is on another host of the computation
 * (--peer-hosts) is handed to that host's ckpt_restart, which sends it
 * from its restored socket (restart_udp_hosts.c). Datagrams that do not
 * arrive (a connected receiver refuses another source, a full receive
 * buffer) are counted and said.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "ckpt/sockaddr_text.h"
#include "host_map.h"
#include "process_tree.h"
#include "restart_tcp.h"
#include "restart_udp.h"

struct udp_socket {
	const struct ckpt_image *img;
	const struct ckpt_fd_info *f;
	struct ckpt_socket_info si;
	uint64_t ino;
	int fd;				/* the one restart_listeners made */
	uint32_t sent;			/* datagrams sent or handed over */
};

static struct udp_socket udp[CKPT_PLAN_MAX_SOCKETS];
static int nudp;
static char dgram[65536];

static int is_udp(const struct ckpt_socket_info *si)
{
	return (si->family == AF_INET || si->family == AF_INET6) &&
	       si->type == SOCK_DGRAM && si->protocol == IPPROTO_UDP;
}

/* Every UDP socket the images had, once (a record with data). */
static int list_sockets(struct ckpt_image *imgs, int n,
			const struct ckpt_restart_plan *plan)
{
	nudp = 0;
	for (int i = 0; i < n; i++)
		for (uint32_t j = 0; j < imgs[i].hdr.nfds; j++) {
			const struct ckpt_fd_info *f = &imgs[i].fds[j];
			struct udp_socket *u = &udp[nudp];

			if (f->kind != CKPT_FD_SOCKET_BOUND || !f->data_size)
				continue;
			if (socket_record_info(&imgs[i], f, &u->si, &u->ino))
				return -EINVAL;
			u->fd = plan_socket_fd(plan, u->ino);
			if (!is_udp(&u->si) || u->fd < 0)
				continue;
			u->img = &imgs[i];
			u->f = f;
			if (nudp < CKPT_PLAN_MAX_SOCKETS)
				nudp++;
		}
	return 0;
}

/* A restored UDP socket of `family` bound to `from`, or -1. */
static int restored_sender(const uint8_t *from, uint32_t family)
{
	for (int i = 0; i < nudp; i++)
		if (udp[i].si.family == family &&
		    socket_same_address(udp[i].si.addr, from))
			return udp[i].fd;
	return -1;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* A new socket sending from `from` if it is free, else from any port. */
static int new_sender(const struct ckpt_socket_dgram *h, uint32_t family)
{
	int s = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (s >= 0 && h->from_len &&
	    bind(s, (const void *)h->from, h->from_len) < 0) {
		close(s);
		s = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	}
	return s;
}

socklen_t restart_udp_destination(const uint8_t *addr, uint32_t addr_len,
				  const struct sockaddr_storage *host,
				  struct sockaddr_storage *to)
{
	struct sockaddr_in *in = (void *)to;
	struct sockaddr_in6 *in6 = (void *)to;
	const struct sockaddr_in *hin = (const void *)host;
	const struct sockaddr_in6 *hin6 = (const void *)host;

	memset(to, 0, sizeof(*to));
	memcpy(to, addr, addr_len < sizeof(*to) ? addr_len : sizeof(*to));
	if (to->ss_family == AF_INET && in->sin_addr.s_addr == INADDR_ANY)
		in->sin_addr.s_addr = host && host->ss_family == AF_INET ?
				      hin->sin_addr.s_addr :
				      htonl(INADDR_LOOPBACK);
	if (to->ss_family == AF_INET6 &&
	    IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr)) {
		in6->sin6_addr = in6addr_loopback;
		if (host && host->ss_family == AF_INET6)
			in6->sin6_addr = hin6->sin6_addr;
		if (host && host->ss_family == AF_INET) {	/* v4-mapped */
			memset(&in6->sin6_addr, 0, 10);
			memset(in6->sin6_addr.s6_addr + 10, 0xff, 2);
			memcpy(in6->sin6_addr.s6_addr + 12, &hin->sin_addr, 4);
		}
	}
	return addr_len;
}

/* The datagrams now in u's queue (peeked, nothing taken out). */
static uint32_t queued(int fd)
{
	int zero = 0, off = -1;
	uint32_t count = 0;

	if (setsockopt(fd, SOL_SOCKET, SO_PEEK_OFF, &zero, sizeof(zero)) < 0)
		return 0;
	while (count < 65536 &&
	       recv(fd, dgram, sizeof(dgram), MSG_PEEK | MSG_DONTWAIT) > 0)
		count++;
	setsockopt(fd, SOL_SOCKET, SO_PEEK_OFF, &off, sizeof(off));
	return count;
}

int restart_udp_send(const struct ckpt_socket_dgram *h, const void *bytes,
		     const struct sockaddr_storage *to, socklen_t tolen)
{
	int s = restored_sender(h->from, to->ss_family), own = s < 0, r = 0;

	if (own)
		s = new_sender(h, to->ss_family);
	if (s < 0)
		return -errno;
	if (sendto(s, bytes, h->size, 0, (const void *)to, tolen) !=
	    (ssize_t)h->size)
		r = -errno;
	if (own)
		close(s);
	return r;
}

/* Here, or kept for the host of its source (restart_udp_hosts.c). */
static int send_or_post(const struct udp_socket *u,
			const struct ckpt_socket_dgram *h)
{
	struct sockaddr_storage to;
	socklen_t tolen;

	/* kept for the source's host; if it cannot be kept, sent here */
	if (restart_udp_hosts_post(&u->si, h, dgram) == 1)
		return 0;
	tolen = restart_udp_destination(u->si.addr, u->si.addr_len, NULL,
					&to);
	return restart_udp_send(h, dgram, &to, tolen);
}

static int refill(struct udp_socket *u)
{
	uint64_t off = u->f->data_offset + ckpt_socket_info_size(&u->si);
	uint64_t end = u->f->data_offset + u->f->data_size;
	struct ckpt_socket_dgram h;
	uint32_t sent = 0;

	for (uint32_t i = 0; i < u->si.ndgrams; i++) {
		if (off + sizeof(h) > end ||
		    pread(u->img->fd, &h, sizeof(h), off) != sizeof(h) ||
		    h.size > sizeof(dgram) || h.from_len > sizeof(h.from) ||
		    off + sizeof(h) + h.size > end ||
		    pread(u->img->fd, dgram, h.size, off + sizeof(h)) !=
		    (ssize_t)h.size) {
			fprintf(stderr, "ckpt_restart: %s: fd %d: datagram %u "
				"of %u saved with the UDP socket is cut short\n",
				u->img->path, u->f->fd, i + 1, u->si.ndgrams);
			return -EINVAL;
		}
		off += sizeof(h) + h.size;
		if (h.from_len)
			restart_host_map_apply(h.from);
		if (send_or_post(u, &h) == 0)
			sent++;
	}
	u->sent = sent;
	return 0;
}

/* Every datagram back in u's queue, or said how many are not (2 s at
 * most: those from another host may still be on their way). */
static void check_refilled(const struct udp_socket *u, long long deadline)
{
	uint32_t there = queued(u->fd);
	char where[160];

	while (there < u->si.ndgrams && now_ms() < deadline) {
		nanosleep(&(struct timespec){ 0, 10 * 1000000 }, NULL);
		there = queued(u->fd);
	}
	if (there < u->si.ndgrams) {
		ckpt_sockaddr_text(u->si.addr, u->si.addr_len, where,
				   sizeof(where));
		fprintf(stderr, "ckpt_restart: %s: %s (vpid %d), fd %d: %u of "
			"the %u datagrams waiting on the UDP socket %s could not "
			"be put back (%u sent)\n", u->img->path,
			u->img->hdr.program, u->img->hdr.vpid, u->f->fd,
			u->si.ndgrams - there, u->si.ndgrams, where, u->sent);
	}
}

int restart_udp_refill(struct ckpt_image *imgs, int n,
		       const struct ckpt_restart_plan *plan)
{
	int r = list_sockets(imgs, n, plan);
	long long deadline;

	for (int i = 0; i < nudp && r == 0; i++)
		if (udp[i].si.flags & CKPT_SOCK_F_DGRAMS)
			r = refill(&udp[i]);
	if (r == 0 && restart_peer_hosts && n > 0)
		restart_udp_hosts_meet(imgs[0].hdr.computation_id);
	deadline = now_ms() + 2000;
	for (int i = 0; i < nudp && r == 0; i++)
		if (udp[i].si.flags & CKPT_SOCK_F_DGRAMS)
			check_refilled(&udp[i], deadline);
	return r;
}
