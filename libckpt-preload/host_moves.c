/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Addresses of hosts the computation moved away from
 * (ckpt_restart --host-map; docs/multi-host.md, "Addresses the program
 * gives"). ckpt_restart moves the sockets themselves; the addresses the
 * program keeps in its memory still name the old hosts. The send and
 * connect wrappers (wrappers/socket.c) pass an address of a moved host
 * to its new address instead, unless the old address names a host of
 * the computation again (a swap): then it goes where it says. The
 * receive, accept and socket-name wrappers (wrappers/socket_addresses.c)
 * give a kept move's new address back as the old one.
 *
 * The table is part of libckpt's memory, saved with the process: after a
 * second restart an address of the first run follows both moves.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "ckpt/restart_plan.h"
#include "internal.h"

struct host_move {
	uint32_t family;
	uint8_t from[16], to[16];
};

static struct host_move moves[CKPT_PLAN_MAX_HOST_MOVES];
static int nmoves;

static int ip_size(uint32_t family)
{
	return family == AF_INET ? 4 : 16;
}

static int same_ip(uint32_t family, const uint8_t *a, uint32_t bfamily,
		   const uint8_t *b)
{
	return family == bfamily && !memcmp(a, b, ip_size(family));
}

/* Whether ip is the new address of a host in this restart's map. */
static int names_a_host_now(uint32_t family, const uint8_t *ip,
			    const struct ckpt_plan_host_move *in, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (same_ip(family, ip, in[i].family, in[i].to))
			return 1;
	return 0;
}

static const struct host_move *find(uint32_t family, const uint8_t *ip)
{
	for (int i = 0; i < nmoves; i++)
		if (same_ip(family, ip, moves[i].family, moves[i].from))
			return &moves[i];
	return NULL;
}

/* The earlier moves followed through this restart's, then its own moves
 * added; a move to itself or from an address that names a host again is
 * dropped. */
static void merge(const struct ckpt_plan_host_move *in, uint32_t n)
{
	int kept = 0;

	for (int i = 0; i < nmoves; i++) {
		for (uint32_t j = 0; j < n; j++)
			if (same_ip(moves[i].family, moves[i].to, in[j].family,
				    in[j].from)) {
				memcpy(moves[i].to, in[j].to, 16);
				break;
			}
		if (!names_a_host_now(moves[i].family, moves[i].from, in, n))
			moves[kept++] = moves[i];
	}
	nmoves = kept;
	for (uint32_t j = 0; j < n && nmoves < CKPT_PLAN_MAX_HOST_MOVES; j++) {
		if (names_a_host_now(in[j].family, in[j].from, in, n) ||
		    find(in[j].family, in[j].from))
			continue;
		moves[nmoves].family = in[j].family;
		memcpy(moves[nmoves].from, in[j].from, 16);
		memcpy(moves[nmoves].to, in[j].to, 16);
		nmoves++;
	}
	kept = 0;
	for (int i = 0; i < nmoves; i++)
		if (!same_ip(moves[i].family, moves[i].from, moves[i].family,
			     moves[i].to))
			moves[kept++] = moves[i];
	nmoves = kept;
}

int host_moves_take(int plan_fd)
{
	static struct ckpt_plan_host_move in[CKPT_PLAN_MAX_HOST_MOVES];
	uint32_t n;
	size_t size;

	if (pread(plan_fd, &n, sizeof(n), offsetof(struct ckpt_restart_plan,
						   nhost_moves)) != sizeof(n))
		return -EIO;
	if (n > CKPT_PLAN_MAX_HOST_MOVES)
		return -EPROTO;
	size = n * sizeof(in[0]);
	if (n && pread(plan_fd, in, size, offsetof(struct ckpt_restart_plan,
						   host_moves)) !=
		 (ssize_t)size)
		return -EIO;
	for (uint32_t j = 0; j < n; j++)
		if (in[j].family != AF_INET && in[j].family != AF_INET6)
			return -EPROTO;
	merge(in, n);
	return 0;
}

const struct sockaddr *host_moves_apply(const struct sockaddr *sa,
					socklen_t len,
					struct sockaddr_storage *moved)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	const struct host_move *m;
	uint8_t *ip;

	if (!nmoves || !sa || len > sizeof(*moved) ||
	    len < sizeof(struct sockaddr_in) ||
	    (sa->sa_family != AF_INET && (sa->sa_family != AF_INET6 ||
	     len < sizeof(struct sockaddr_in6))))
		return sa;
	memcpy(moved, sa, len);
	if (sa->sa_family == AF_INET) {
		ip = (uint8_t *)&((struct sockaddr_in *)moved)->sin_addr;
		m = find(AF_INET, ip);
	} else {
		ip = (uint8_t *)&((struct sockaddr_in6 *)moved)->sin6_addr;
		if (!memcmp(ip, v4mapped, sizeof(v4mapped)))
			ip += sizeof(v4mapped);
		m = find(ip == (uint8_t *)&((struct sockaddr_in6 *)moved)->
				    sin6_addr ? AF_INET6 : AF_INET, ip);
	}
	if (!m)
		return sa;
	memcpy(ip, m->to, ip_size(m->family));
	return (const struct sockaddr *)moved;
}

static const struct host_move *find_new(uint32_t family, const uint8_t *ip)
{
	for (int i = 0; i < nmoves; i++)
		if (same_ip(family, ip, moves[i].family, moves[i].to))
			return &moves[i];
	return NULL;
}

/* The IP bytes of an INET address (IPv4-mapped IPv6 as IPv4) and their
 * family, NULL when sa (len bytes) is no such address. */
static uint8_t *ip_of(struct sockaddr *sa, socklen_t len, uint32_t *family)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	uint8_t *ip;

	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		*family = AF_INET;
		return (uint8_t *)&((struct sockaddr_in *)sa)->sin_addr;
	}
	if (sa->sa_family != AF_INET6 || len < sizeof(struct sockaddr_in6))
		return NULL;
	ip = (uint8_t *)&((struct sockaddr_in6 *)sa)->sin6_addr;
	*family = AF_INET6;
	if (!memcmp(ip, v4mapped, sizeof(v4mapped))) {
		*family = AF_INET;
		ip += sizeof(v4mapped);
	}
	return ip;
}

/* The other direction, in place: an address the kernel gives the program
 * (a datagram's source, an accepted or connected peer, a socket's own
 * name) that is a moved host's new address becomes the old one the
 * program knew. A swap keeps no moves (merge), so nothing is translated
 * either way then. */
void host_moves_unapply(struct sockaddr *sa, socklen_t len)
{
	const struct host_move *m;
	uint32_t family;
	uint8_t *ip;

	if (!nmoves || !sa || !(ip = ip_of(sa, len, &family)))
		return;
	m = find_new(family, ip);
	if (m)
		memcpy(ip, m->from, ip_size(family));
}

int host_moves_any(void)
{
	return nmoves > 0;
}
