// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ckpt_restart --host-map OLD=NEW[,OLD=NEW...]: a computation restarted on
 * other hosts than it ran on (docs/multi-host.md, "Restarting on other
 * hosts"). Every IPv4/IPv6 address saved with a socket of the images (its
 * own address, its peer's, the source of a queued datagram) that is an
 * OLD address is read as the NEW one, with the same port, as if the
 * processes had always run there: listeners and UDP sockets bind to the
 * new address, TCP ends meet their partners at their new addresses
 * (restart_tcp.c, restart_tcp_hosts.c). Wildcard and loopback addresses
 * are never in the map, so they stay what they were.
 *
 * Before anything is made, each socket's own address that the map moved
 * must be an address of this host (a bind to it, port 0): else the
 * restart stops there, naming the image, fd and map entry.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "ckpt/sockaddr_text.h"
#include "host_map.h"
#include "process_tree.h"

#define MAX_ENTRIES 64

struct host_move {
	int family;			/* AF_INET or AF_INET6 */
	uint8_t from[16], to[16];	/* 4 bytes used for AF_INET */
	char text[2 * INET6_ADDRSTRLEN + 2];	/* "OLD=NEW" as given */
};

static struct host_move moves[MAX_ENTRIES];
static int nmoves;

/* A numeric address into out; its family, or 0. */
static int parse_ip(const char *s, size_t n, uint8_t out[16])
{
	char ip[INET6_ADDRSTRLEN];

	if (n == 0 || n >= sizeof(ip))
		return 0;
	snprintf(ip, sizeof(ip), "%.*s", (int)n, s);
	if (inet_pton(AF_INET, ip, out) == 1)
		return AF_INET;
	if (inet_pton(AF_INET6, ip, out) == 1)
		return AF_INET6;
	return 0;
}

static int addr_size(int family)
{
	return family == AF_INET ? 4 : 16;
}

/* "OLD=NEW" of n bytes at s into moves[nmoves]; NULL, or why not. */
static const char *parse_move(const char *s, size_t n)
{
	const char *eq = memchr(s, '=', n);
	struct host_move *m = &moves[nmoves];
	int to_family;

	if (!eq)
		return "expected OLD=NEW";
	m->family = parse_ip(s, eq - s, m->from);
	to_family = parse_ip(eq + 1, s + n - eq - 1, m->to);
	if (!m->family || !to_family)
		return "OLD and NEW must be numeric IPv4 or IPv6 addresses";
	if (m->family != to_family)
		return "OLD and NEW must both be IPv4 or both IPv6";
	for (int i = 0; i < nmoves; i++)
		if (moves[i].family == m->family &&
		    !memcmp(moves[i].from, m->from, addr_size(m->family)))
			return "OLD is mapped twice";
	if (nmoves == MAX_ENTRIES)
		return "more than 64 entries";
	snprintf(m->text, sizeof(m->text), "%.*s", (int)n, s);
	nmoves++;
	return NULL;
}

int restart_host_map_parse(const char *list)
{
	const char *p = list;

	nmoves = 0;
	do {
		const char *comma = strchrnul(p, ',');
		const char *why = parse_move(p, comma - p);

		if (why) {
			fprintf(stderr, "ckpt_restart: --host-map %s: '%.*s': "
				"%s\n", list, (int)(comma - p), p, why);
			return -EINVAL;
		}
		p = *comma ? comma + 1 : comma;
	} while (*p);
	return 0;
}

/* The IP bytes of an AF_INET/AF_INET6 sockaddr and their family as the
 * map sees them (an IPv4-mapped IPv6 address is IPv4); NULL: none. */
static uint8_t *ip_of(uint8_t *addr, int *family)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	struct sockaddr_in *in = (void *)addr;
	struct sockaddr_in6 *in6 = (void *)addr;

	if (in->sin_family == AF_INET) {
		*family = AF_INET;
		return (uint8_t *)&in->sin_addr;
	}
	if (in6->sin6_family != AF_INET6)
		return NULL;
	if (!memcmp(&in6->sin6_addr, v4mapped, sizeof(v4mapped))) {
		*family = AF_INET;
		return (uint8_t *)&in6->sin6_addr + 12;
	}
	*family = AF_INET6;
	return (uint8_t *)&in6->sin6_addr;
}

static const struct host_move *move_of(uint8_t *addr, uint8_t **ip)
{
	int family;

	*ip = ip_of(addr, &family);
	for (int i = 0; *ip && i < nmoves; i++)
		if (moves[i].family == family &&
		    !memcmp(moves[i].from, *ip, addr_size(family)))
			return &moves[i];
	return NULL;
}

void restart_host_map_apply(uint8_t *addr)
{
	uint8_t *ip;
	const struct host_move *m = move_of(addr, &ip);

	if (m)
		memcpy(ip, m->to, addr_size(m->family));
}

void restart_host_map_socket(struct ckpt_socket_info *si)
{
	if (si->family != AF_INET && si->family != AF_INET6)
		return;
	restart_host_map_apply(si->addr);
	if (si->peer_len)
		restart_host_map_apply(si->peer);
}

/* 0 when addr (the NEW address, any port) can be bound here; -errno. */
static int bindable_here(const uint8_t *addr, uint32_t family)
{
	struct sockaddr_storage ss;
	socklen_t len = family == AF_INET ? sizeof(struct sockaddr_in) :
					    sizeof(struct sockaddr_in6);
	int s = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0), r = 0;

	if (s < 0)
		return -errno;
	memcpy(&ss, addr, len);
	((struct sockaddr_in *)&ss)->sin_port = 0;	/* same offset in v6 */
	if (bind(s, (void *)&ss, len) < 0)
		r = -errno;
	close(s);
	return r;
}

/* The socket of record f, when the map moves its own address, must be
 * able to bind the new one here. 0 or -errno after saying why not. */
static int check_socket(const struct ckpt_image *img,
			const struct ckpt_fd_info *f)
{
	struct ckpt_socket_info si;
	const struct host_move *m;
	char old[160], now[160];
	uint64_t ino;
	uint8_t *ip;
	int r;

	if (image_socket_info(img, f, &si) < 0 ||
	    (si.family != AF_INET && si.family != AF_INET6) ||
	    fd_record_ino(img, f, "socket", &ino) < 0)
		return 0;	/* said by the socket's own restart */
	m = move_of(si.addr, &ip);
	if (!m)
		return 0;
	ckpt_sockaddr_text(si.addr, si.addr_len, old, sizeof(old));
	restart_host_map_apply(si.addr);
	r = bindable_here(si.addr, si.family);
	if (r == 0)
		return 0;
	ckpt_sockaddr_text(si.addr, si.addr_len, now, sizeof(now));
	fprintf(stderr, "ckpt_restart: %s: %s (vpid %d), fd %d: --host-map "
		"%s: its socket at %s cannot be at %s on this host: %s%s "
		"(nothing was restarted)\n", img->path, img->hdr.program,
		img->hdr.vpid, f->fd, m->text, old, now, strerror(-r),
		r == -EADDRNOTAVAIL ? ": the new address is not one of this "
		"host's" : "");
	return r;
}

int restart_host_map_check(const struct ckpt_image *imgs, int n)
{
	for (int i = 0; i < n && nmoves; i++)
		for (uint32_t j = 0; j < imgs[i].hdr.nfds; j++) {
			const struct ckpt_fd_info *f = &imgs[i].fds[j];
			int r;

			if ((f->kind != CKPT_FD_SOCKET_LISTEN &&
			     f->kind != CKPT_FD_SOCKET_BOUND &&
			     f->kind != CKPT_FD_SOCKET_OUTSIDE) ||
			    !f->data_size)
				continue;
			r = check_socket(&imgs[i], f);
			if (r < 0)
				return r;
		}
	return 0;
}

/* The map, for libckpt (libckpt-preload/host_moves.c), which moves the
 * addresses the program sends to. */
void restart_host_map_plan(struct ckpt_restart_plan *plan)
{
	plan->nhost_moves = 0;
	for (int i = 0; i < nmoves && i < CKPT_PLAN_MAX_HOST_MOVES; i++) {
		struct ckpt_plan_host_move *p = &plan->host_moves[i];

		p->family = moves[i].family;
		memcpy(p->from, moves[i].from, sizeof(p->from));
		memcpy(p->to, moves[i].to, sizeof(p->to));
		plan->nhost_moves++;
	}
}

int restart_host_map_given(void)
{
	return nmoves > 0;
}
