/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A socket address in words: "127.0.0.1:80", "[::1]:80", "/path",
 * "@abstract", "netlink port 4242 groups 0x1", or "" (unnamed). Shared by libckpt (socket_names.c) and
 * ckpt_restart/ckpt_inspect (restart/restart_listeners.c): no malloc.
 */
#ifndef CKPT_SOCKADDR_TEXT_H
#define CKPT_SOCKADDR_TEXT_H

#include <arpa/inet.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

static inline void ckpt_sockaddr_text(const void *addr, size_t len,
				      char *out, size_t outlen)
{
	const struct sockaddr *sa = addr;
	char ip[INET6_ADDRSTRLEN] = "?";

	out[0] = 0;
	if (len < sizeof(sa->sa_family))
		return;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *a = addr;

		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
		snprintf(out, outlen, "%s:%u", ip, ntohs(a->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a = addr;

		inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
		snprintf(out, outlen, "[%s]:%u", ip, ntohs(a->sin6_port));
	} else if (sa->sa_family == AF_UNIX &&
		   len > offsetof(struct sockaddr_un, sun_path)) {
		const struct sockaddr_un *a = addr;
		size_t n = len - offsetof(struct sockaddr_un, sun_path);

		if (a->sun_path[0])
			snprintf(out, outlen, "%.*s", (int)n, a->sun_path);
		else
			snprintf(out, outlen, "@%.*s", (int)n - 1,
				 a->sun_path + 1);
	} else if (sa->sa_family == AF_NETLINK &&
		   len >= sizeof(struct sockaddr_nl)) {
		const struct sockaddr_nl *a = addr;

		snprintf(out, outlen, "netlink port %u groups %#x", a->nl_pid,
			 a->nl_groups);
	}
}

/* ss := the loopback address of family (port 0); its length. */
static inline socklen_t ckpt_loopback_addr(int family,
					   struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	ss->ss_family = family;
	if (family == AF_INET6) {
		((struct sockaddr_in6 *)ss)->sin6_addr = in6addr_loopback;
		return sizeof(struct sockaddr_in6);
	}
	((struct sockaddr_in *)ss)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sizeof(struct sockaddr_in);
}

/* The address getsockname gave (len bytes) names something: an IPv4 or
 * IPv6 port, a Unix path or abstract name, a netlink port or multicast
 * groups (not an unbound socket). */
static inline int ckpt_sockaddr_is_bound(const void *addr, size_t len)
{
	const struct sockaddr *sa = addr;

	if (len < sizeof(sa_family_t))
		return 0;
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)addr)->sin_port != 0;
	if (sa->sa_family == AF_INET6)
		return ((const struct sockaddr_in6 *)addr)->sin6_port != 0;
	if (sa->sa_family == AF_NETLINK)
		return len >= sizeof(struct sockaddr_nl) &&
		       (((const struct sockaddr_nl *)addr)->nl_pid != 0 ||
			((const struct sockaddr_nl *)addr)->nl_groups != 0);
	return len > offsetof(struct sockaddr_un, sun_path);
}

#endif /* CKPT_SOCKADDR_TEXT_H */
