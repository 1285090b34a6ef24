/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The socket options a checkpoint keeps (struct ckpt_socket_info's opt[]
 * and buffer sizes): read with getsockopt at checkpoint, set back at
 * restart. Shared by libckpt (socket_state.c: every socket it puts back)
 * and ckpt_restart (restart_listeners.c: before bind, and before queued
 * datagrams are put back) and ckpt_inspect. No malloc.
 *
 * An option the kernel refuses to read is left unset (CKPT_SOCK_OPT_UNSET)
 * and not set back: since Linux 6.16 some options fail with EOPNOTSUPP
 * on some families (docs/resources.md).
 */
#ifndef CKPT_SOCKET_OPTIONS_H
#define CKPT_SOCKET_OPTIONS_H

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include "ckpt/image.h"

_Static_assert(CKPT_SOCK_OPT_COUNT <= CKPT_SOCK_OPT_SLOTS,
	       "more socket options than ckpt_socket_info has room for");

/* The plain int options: level (IPPROTO_IP is IPPROTO_IPV6 on an IPv6
 * socket), name, and the IPv6 name. */
struct ckpt_int_option {
	int slot;			/* enum ckpt_sock_opt */
	int level, name, name6;
	int tcp_only;
	const char *text;		/* for messages and ckpt_inspect */
};

static const struct ckpt_int_option ckpt_int_options[] = {
	{ CKPT_SOCK_OPT_NODELAY, IPPROTO_TCP, TCP_NODELAY, TCP_NODELAY, 1,
	  "TCP_NODELAY" },
	{ CKPT_SOCK_OPT_KEEPALIVE, SOL_SOCKET, SO_KEEPALIVE, SO_KEEPALIVE, 0,
	  "SO_KEEPALIVE" },
	{ CKPT_SOCK_OPT_KEEPIDLE, IPPROTO_TCP, TCP_KEEPIDLE, TCP_KEEPIDLE, 1,
	  "TCP_KEEPIDLE" },
	{ CKPT_SOCK_OPT_KEEPINTVL, IPPROTO_TCP, TCP_KEEPINTVL, TCP_KEEPINTVL,
	  1, "TCP_KEEPINTVL" },
	{ CKPT_SOCK_OPT_KEEPCNT, IPPROTO_TCP, TCP_KEEPCNT, TCP_KEEPCNT, 1,
	  "TCP_KEEPCNT" },
	{ CKPT_SOCK_OPT_BROADCAST, SOL_SOCKET, SO_BROADCAST, SO_BROADCAST, 0,
	  "SO_BROADCAST" },
	{ CKPT_SOCK_OPT_MCAST_TTL, IPPROTO_IP, IP_MULTICAST_TTL,
	  IPV6_MULTICAST_HOPS, 0, "IP_MULTICAST_TTL" },
	{ CKPT_SOCK_OPT_MCAST_LOOP, IPPROTO_IP, IP_MULTICAST_LOOP,
	  IPV6_MULTICAST_LOOP, 0, "IP_MULTICAST_LOOP" },
	{ CKPT_SOCK_OPT_MCAST_ALL, IPPROTO_IP, IP_MULTICAST_ALL,
	  IPV6_MULTICAST_ALL, 0, "IP_MULTICAST_ALL" },
	{ CKPT_SOCK_OPT_MCAST_IF, IPPROTO_IP, IP_MULTICAST_IF,
	  IPV6_MULTICAST_IF, 0, "IP_MULTICAST_IF" },
};

#define CKPT_NINT_OPTIONS \
	(sizeof(ckpt_int_options) / sizeof(ckpt_int_options[0]))

static inline int ckpt_sockopt_inet(const struct ckpt_socket_info *si)
{
	return si->family == AF_INET || si->family == AF_INET6;
}

/* Whether option o applies to si's kind of socket at all. */
static inline int ckpt_int_option_applies(const struct ckpt_int_option *o,
					  const struct ckpt_socket_info *si)
{
	if (o->tcp_only)
		return ckpt_sockopt_inet(si) && si->type == SOCK_STREAM;
	if (o->level == IPPROTO_IP)
		return ckpt_sockopt_inet(si) && si->type == SOCK_DGRAM;
	return 1;
}

static inline void ckpt_int_option_where(const struct ckpt_int_option *o,
					 const struct ckpt_socket_info *si,
					 int *level, int *name)
{
	*level = o->level;
	*name = o->name;
	if (o->level == IPPROTO_IP && si->family == AF_INET6) {
		*level = IPPROTO_IPV6;
		*name = o->name6;
	}
}

static inline void ckpt_read_pair(int fd, int name, int32_t *a, int32_t *b,
				  int is_linger)
{
	struct linger l;
	struct timeval tv;
	socklen_t len;

	if (is_linger) {
		len = sizeof(l);
		if (getsockopt(fd, SOL_SOCKET, name, &l, &len) == 0) {
			*a = l.l_onoff;
			*b = l.l_linger;
		}
		return;
	}
	len = sizeof(tv);
	if (getsockopt(fd, SOL_SOCKET, name, &tv, &len) == 0) {
		*a = (int32_t)tv.tv_sec;
		*b = (int32_t)tv.tv_usec;
	}
}

/* Fill si->opt[] from socket fd (si's family and type already read). */
static inline void ckpt_socket_options_read(int fd,
					    struct ckpt_socket_info *si)
{
	int32_t *opt = si->opt;

	for (int i = 0; i < CKPT_SOCK_OPT_SLOTS; i++)
		opt[i] = CKPT_SOCK_OPT_UNSET;
	for (unsigned i = 0; i < CKPT_NINT_OPTIONS; i++) {
		const struct ckpt_int_option *o = &ckpt_int_options[i];
		int level, name, v = 0;
		socklen_t len = sizeof(v);

		ckpt_int_option_where(o, si, &level, &name);
		if (ckpt_int_option_applies(o, si) &&
		    getsockopt(fd, level, name, &v, &len) == 0)
			opt[o->slot] = v;
	}
	ckpt_read_pair(fd, SO_LINGER, &opt[CKPT_SOCK_OPT_LINGER_ON],
		       &opt[CKPT_SOCK_OPT_LINGER_SECS], 1);
	ckpt_read_pair(fd, SO_RCVTIMEO, &opt[CKPT_SOCK_OPT_RCVTIMEO_SEC],
		       &opt[CKPT_SOCK_OPT_RCVTIMEO_USEC], 0);
	ckpt_read_pair(fd, SO_SNDTIMEO, &opt[CKPT_SOCK_OPT_SNDTIMEO_SEC],
		       &opt[CKPT_SOCK_OPT_SNDTIMEO_USEC], 0);
}

/* The buffer size the program had, when it differs from the socket's
 * now (the kernel reports twice what setsockopt was given). */
static inline int ckpt_set_buffer(int s, int name, int saved)
{
	int now = 0;
	socklen_t len = sizeof(now);

	if (saved <= 0 || getsockopt(s, SOL_SOCKET, name, &now, &len) < 0 ||
	    now == saved)
		return 0;
	saved /= 2;
	return setsockopt(s, SOL_SOCKET, name, &saved, sizeof(saved)) < 0 ?
	       -errno : 0;
}

static inline int ckpt_set_pair(int s, int name, const int32_t *a,
				const int32_t *b, int is_linger)
{
	struct linger l = { *a, *b };
	struct timeval tv = { *a, *b };
	int r;

	if (*a == CKPT_SOCK_OPT_UNSET || *b == CKPT_SOCK_OPT_UNSET)
		return 0;
	r = is_linger ? setsockopt(s, SOL_SOCKET, name, &l, sizeof(l)) :
			setsockopt(s, SOL_SOCKET, name, &tv, sizeof(tv));
	return r < 0 ? -errno : 0;
}

/* Set si's saved options and buffer sizes on socket s. 0, or -errno with
 * *what the name of the first option the kernel refused (the others are
 * set all the same). */
static inline int ckpt_socket_options_apply(int s,
					    const struct ckpt_socket_info *si,
					    const char **what)
{
	const int32_t *opt = si->opt;
	int r, first = 0;

	*what = NULL;
#define CKPT_NOTE(expr, name) \
	do { r = (expr); if (r < 0 && !first) { first = r; *what = name; } \
	} while (0)
	CKPT_NOTE(ckpt_set_buffer(s, SO_RCVBUF, si->rcvbuf), "SO_RCVBUF");
	CKPT_NOTE(ckpt_set_buffer(s, SO_SNDBUF, si->sndbuf), "SO_SNDBUF");
	if (ckpt_socket_info_size(si) < sizeof(*si))
		return first;
	for (unsigned i = 0; i < CKPT_NINT_OPTIONS; i++) {
		const struct ckpt_int_option *o = &ckpt_int_options[i];
		int level, name, v = opt[o->slot];

		if (v == CKPT_SOCK_OPT_UNSET)
			continue;
		ckpt_int_option_where(o, si, &level, &name);
		CKPT_NOTE(setsockopt(s, level, name, &v, sizeof(v)) < 0 ?
			  -errno : 0, o->text);
	}
	CKPT_NOTE(ckpt_set_pair(s, SO_LINGER, &opt[CKPT_SOCK_OPT_LINGER_ON],
				&opt[CKPT_SOCK_OPT_LINGER_SECS], 1),
		  "SO_LINGER");
	CKPT_NOTE(ckpt_set_pair(s, SO_RCVTIMEO, &opt[CKPT_SOCK_OPT_RCVTIMEO_SEC],
				&opt[CKPT_SOCK_OPT_RCVTIMEO_USEC], 0),
		  "SO_RCVTIMEO");
	CKPT_NOTE(ckpt_set_pair(s, SO_SNDTIMEO, &opt[CKPT_SOCK_OPT_SNDTIMEO_SEC],
				&opt[CKPT_SOCK_OPT_SNDTIMEO_USEC], 0),
		  "SO_SNDTIMEO");
#undef CKPT_NOTE
	return first;
}

#endif /* CKPT_SOCKET_OPTIONS_H */
