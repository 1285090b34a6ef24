// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Netlink sockets (route, uevent, audit, generic, ...: iproute2, libmnl,
 * udev clients, dbus-daemon). A netlink socket talks to the kernel, not
 * to a peer, so it comes back on its own: files.c records it as a
 * CKPT_FD_SOCKET_BOUND with a struct ckpt_socket_info, and
 *
 *   checkpoint: family, type, protocol; getsockname's port id and the
 *   first 32 multicast groups (bind); the boolean SOL_NETLINK options
 *   (as CKPT_SOCK_F_NL_* flags); SO_RCVBUF/SO_SNDBUF and the SOL_SOCKET
 *   options; groups joined with NETLINK_ADD_MEMBERSHIP are in
 *   multicast.c's table like IP groups.
 *
 *   restart: ckpt_restart (restart/restart_listeners.c) makes the socket
 *   and binds it to the same port id and groups, so the replies the
 *   kernel sends carry the port id the program checks (libmnl refuses
 *   others with ESRCH); a port id taken meanwhile is said, and the socket
 *   gets a new one. Here the options are set again and the groups joined.
 *
 * Not kept: messages the kernel had queued in the socket (replies to a
 * request in flight, events): they are lost, as with an ENOBUFS overrun
 * that netlink programs already handle (docs/resources.md).
 */
#include <errno.h>
#include <linux/netlink.h>
#include <string.h>
#include <sys/socket.h>
#include "internal.h"

static const struct {
	int name;
	uint32_t flag;
	const char *text;
} netlink_options[] = {
	{ NETLINK_PKTINFO, CKPT_SOCK_F_NL_PKTINFO, "NETLINK_PKTINFO" },
	{ NETLINK_BROADCAST_ERROR, CKPT_SOCK_F_NL_BROADCAST_ERROR,
	  "NETLINK_BROADCAST_ERROR" },
	{ NETLINK_NO_ENOBUFS, CKPT_SOCK_F_NL_NO_ENOBUFS,
	  "NETLINK_NO_ENOBUFS" },
	{ NETLINK_LISTEN_ALL_NSID, CKPT_SOCK_F_NL_LISTEN_ALL_NSID,
	  "NETLINK_LISTEN_ALL_NSID" },
	{ NETLINK_CAP_ACK, CKPT_SOCK_F_NL_CAP_ACK, "NETLINK_CAP_ACK" },
	{ NETLINK_EXT_ACK, CKPT_SOCK_F_NL_EXT_ACK, "NETLINK_EXT_ACK" },
	{ NETLINK_GET_STRICT_CHK, CKPT_SOCK_F_NL_GET_STRICT_CHK,
	  "NETLINK_GET_STRICT_CHK" },
};

#define NNETLINK_OPTIONS \
	(sizeof(netlink_options) / sizeof(netlink_options[0]))

static int netlink_option_on(int fd, int name)
{
	int v = 0;
	socklen_t len = sizeof(v);

	return getsockopt(fd, SOL_NETLINK, name, &v, &len) == 0 && v;
}

/* The SOL_NETLINK options of netlink socket fd in si->flags (the rest of
 * *si is socket_state_save's); the kind files.c records for it. */
int netlink_save(int fd, struct ckpt_socket_info *si)
{
	for (unsigned i = 0; i < NNETLINK_OPTIONS; i++)
		if (netlink_option_on(fd, netlink_options[i].name))
			si->flags |= netlink_options[i].flag;
	return CKPT_FD_SOCKET_BOUND;
}

/* The SOL_NETLINK options of *si set again on fd (a new socket has them
 * all off); one the kernel refuses is said, not fatal. */
void netlink_restore_options(int fd, const struct ckpt_socket_info *si)
{
	int on = 1;

	for (unsigned i = 0; i < NNETLINK_OPTIONS; i++)
		if ((si->flags & netlink_options[i].flag) &&
		    setsockopt(fd, SOL_NETLINK, netlink_options[i].name, &on,
			       sizeof(on)) < 0)
			ckpt_log("%s: fd %d: setting the netlink option %s "
				 "back failed: %s; the socket goes on without "
				 "it", ckpt.program, fd,
				 netlink_options[i].text, strerror(errno));
}
