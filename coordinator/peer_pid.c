// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Which local pid a process connection stands for. HELLO's real_pid is
 * only a claim: the coordinator signals (KILL, QUIT) and looks in /proc
 * (stopped processes, forked children) only at a pid the kernel vouches
 * for, its local_pid:
 *
 *   - Unix socket: the claimed pid if it is the one SO_PEERCRED gave at
 *     accept (the process that connected, in the coordinator's pid
 *     namespace; libckpt's manager thread connects, and SO_PEERCRED
 *     names its process, not its tid). A claim that differs (a lie, or
 *     a process in another pid namespace) is logged and gets none.
 *   - TCP: the claimed pid, if that process holds the other end of this
 *     very connection: the peer's socket (found in /proc/net/tcp[6] by
 *     its address and port) is one of /proc/PID/fd. That holds only on
 *     this host, in this network namespace, and for a pid in this pid
 *     namespace; any other TCP peer has none, and gets DO_KILL only.
 *
 * Either way the process must also name this host (as before: a process
 * of another UTS namespace is not looked at).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "coordinator.h"

/* An endpoint as /proc/net/tcp6 prints it: four 32-bit words, a port. */
struct endpoint {
	uint32_t a[4];
	unsigned port;
	bool v6;
};

static bool to_endpoint(const struct sockaddr_storage *ss, struct endpoint *e)
{
	memset(e, 0, sizeof(*e));
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)ss;

		e->a[0] = in->sin_addr.s_addr;
		e->port = ntohs(in->sin_port);
		return true;
	}
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)ss;

		memcpy(e->a, &in6->sin6_addr, sizeof(e->a));
		e->port = ntohs(in6->sin6_port);
		e->v6 = !IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr);
		if (!e->v6)	/* the peer's socket may be an IPv4 one */
			e->a[0] = e->a[3];
		return true;
	}
	return false;
}

static bool same(const struct endpoint *e, const uint32_t a[4],
		 unsigned port)
{
	int words = e->v6 ? 4 : 1;

	return port == e->port && !memcmp(e->a, a, words * sizeof(a[0]));
}

static bool parse_endpoint(const char *s, bool v6, uint32_t a[4],
			   unsigned *port)
{
	if (v6)
		return sscanf(s, "%8" SCNx32 "%8" SCNx32 "%8" SCNx32 "%8"
			      SCNx32 ":%x", &a[0], &a[1], &a[2], &a[3],
			      port) == 5;
	return sscanf(s, "%8" SCNx32 ":%x", &a[0], port) == 2;
}

/* The inode of the socket with local address `peer` and remote `self`;
 * 0 when there is none in this network namespace. */
static unsigned long peer_socket_inode(const struct endpoint *peer,
				       const struct endpoint *self)
{
	char line[512], l[128], r[128];
	unsigned long inode = 0, ino;
	FILE *f = fopen(peer->v6 ? "/proc/net/tcp6" : "/proc/net/tcp", "re");

	if (!f)
		return 0;
	while (!inode && fgets(line, sizeof(line), f)) {
		uint32_t la[4], ra[4];
		unsigned lp, rp;

		if (sscanf(line, " %*s %127s %127s %*s %*s %*s %*s %*s %*s %lu",
			   l, r, &ino) != 3 ||
		    !parse_endpoint(l, peer->v6, la, &lp) ||
		    !parse_endpoint(r, peer->v6, ra, &rp))
			continue;
		if (same(peer, la, lp) && same(self, ra, rp))
			inode = ino;
	}
	fclose(f);
	return inode;
}

static bool process_holds_socket(pid_t pid, unsigned long inode)
{
	char path[64], link[64], want[64];
	struct dirent *d;
	bool found = false;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	snprintf(want, sizeof(want), "socket:[%lu]", inode);
	dir = opendir(path);
	if (!dir)
		return false;
	while (!found && (d = readdir(dir))) {
		char fdpath[320];
		ssize_t n;

		snprintf(fdpath, sizeof(fdpath), "%s/%s", path, d->d_name);
		n = readlink(fdpath, link, sizeof(link) - 1);
		if (n > 0) {
			link[n] = '\0';
			found = !strcmp(link, want);
		}
	}
	closedir(dir);
	return found;
}

static pid_t tcp_local_pid(struct conn *c, pid_t claimed)
{
	struct sockaddr_storage ps, ss;
	socklen_t pl = sizeof(ps), sl = sizeof(ss);
	struct endpoint peer, self;
	unsigned long inode;

	if (claimed <= 0 ||
	    getpeername(c->fd, (struct sockaddr *)&ps, &pl) < 0 ||
	    getsockname(c->fd, (struct sockaddr *)&ss, &sl) < 0 ||
	    !to_endpoint(&ps, &peer) || !to_endpoint(&ss, &self))
		return 0;
	self.v6 = peer.v6;
	inode = peer_socket_inode(&peer, &self);
	return inode && process_holds_socket(claimed, inode) ? claimed : 0;
}

bool proc_names_this_host(const struct conn *c)
{
	static struct utsname self;

	if (!self.nodename[0] && uname(&self) < 0)
		return false;
	return !strcmp(c->proc.hello.hostname, self.nodename);
}

pid_t peer_local_pid(struct coordinator *co, struct conn *c)
{
	pid_t claimed = c->proc.hello.real_pid;

	if (claimed <= 0 || !proc_names_this_host(c))
		return 0;
	if (co->is_tcp)
		return tcp_local_pid(c, claimed);
	if (claimed == c->peer_pid)
		return claimed;
	coord_log("%s claims pid %d, not its own: it is not signalled nor "
		  "looked at", c->peer, (int)claimed);
	return 0;
}
