/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Multicast group memberships of UDP and netlink sockets. The kernel has no call
 * that lists the groups a socket joined, so the setsockopt wrapper
 * (wrappers/socket.c) notes each join and leave here, by fd and socket
 * inode; the table is part of libckpt's memory, saved with the process.
 * At restart every membership of a restored socket is joined again on
 * the new socket (files.c, after the socket is at its number). An entry
 * whose fd no longer holds that socket (closed, reused) is dropped at the
 * next checkpoint. docs/resources.md tells the limits.
 */
#include <errno.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "internal.h"

#define MEMBERSHIPS_MAX	256
#define MREQ_MAX	sizeof(struct group_req)

struct membership {
	int fd;
	uint64_t ino;
	int level, name;		/* the join option */
	socklen_t len;
	unsigned char req[MREQ_MAX];	/* its argument */
};

static struct membership groups[MEMBERSHIPS_MAX];
static int ngroups;
static int table_lock;

static void lock(void)
{
	while (__atomic_exchange_n(&table_lock, 1, __ATOMIC_ACQUIRE))
		;
}

static void unlock(void)
{
	__atomic_store_n(&table_lock, 0, __ATOMIC_RELEASE);
}

/* 1 for a join, -1 for a leave, 0 for any other option; *join: the
 * option joining the same groups. */
static int membership_change(int level, int name, int *join)
{
	*join = name;
	if (level == SOL_NETLINK) {	/* netlink.c's sockets */
		if (name == NETLINK_ADD_MEMBERSHIP)
			return 1;
		*join = NETLINK_ADD_MEMBERSHIP;
		return name == NETLINK_DROP_MEMBERSHIP ? -1 : 0;
	}
	if (level == IPPROTO_IP && name == IP_ADD_MEMBERSHIP)
		return 1;
	if (level == IPPROTO_IPV6 && name == IPV6_ADD_MEMBERSHIP)
		return 1;
	if ((level == IPPROTO_IP || level == IPPROTO_IPV6) &&
	    name == MCAST_JOIN_GROUP)
		return 1;
	*join = level == IPPROTO_IP && name == IP_DROP_MEMBERSHIP ?
		IP_ADD_MEMBERSHIP : level == IPPROTO_IPV6 &&
		name == IPV6_DROP_MEMBERSHIP ? IPV6_ADD_MEMBERSHIP :
		name == MCAST_LEAVE_GROUP ? MCAST_JOIN_GROUP : -1;
	return *join >= 0 && (level == IPPROTO_IP || level == IPPROTO_IPV6) ?
	       -1 : 0;
}

/* Whether setsockopt(level, name) joins or leaves a group. */
int multicast_is_membership(int level, int name)
{
	int join;

	return membership_change(level, name, &join) != 0;
}

static uint64_t inode_of(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 ? (uint64_t)st.st_ino : 0;
}

static void forget(int i)
{
	groups[i] = groups[--ngroups];
}

/* A setsockopt that succeeded: note a join, forget a leave. */
void multicast_note(int fd, int level, int name, const void *val,
		    unsigned int len)
{
	int join, change = membership_change(level, name, &join);
	uint64_t ino;

	if (!change || !val || len > MREQ_MAX)
		return;
	ino = inode_of(fd);
	lock();
	for (int i = 0; i < ngroups; i++) {
		struct membership *m = &groups[i];

		if (m->fd == fd && m->ino == ino && m->level == level &&
		    m->name == join && m->len == len &&
		    !memcmp(m->req, val, len)) {
			if (change < 0)
				forget(i);
			unlock();
			return;	/* a join twice fails in the kernel */
		}
	}
	if (change > 0 && ngroups < MEMBERSHIPS_MAX) {
		struct membership *m = &groups[ngroups++];

		m->fd = fd;
		m->ino = ino;
		m->level = level;
		m->name = join;
		m->len = len;
		memcpy(m->req, val, len);
	} else if (change > 0) {
		ckpt_log("fd %d: more than %d multicast memberships: a restart "
			 "does not join this group again", fd, MEMBERSHIPS_MAX);
	}
	unlock();
}

/* At checkpoint, every process stopped: drop the entries whose fd holds
 * another socket now (or nothing). */
void multicast_prune(void)
{
	for (int i = ngroups - 1; i >= 0; i--)
		if (inode_of(groups[i].fd) != groups[i].ino)
			forget(i);
}

/* How many groups socket fd (inode ino) is a member of. */
uint32_t multicast_count(int fd, uint64_t ino)
{
	uint32_t n = 0;

	for (int i = 0; i < ngroups; i++)
		n += groups[i].fd == fd && groups[i].ino == ino;
	return n;
}

/* Socket fd, saved with inode old_ino, is restored: join its groups
 * again (a socket shared across fork is joined once: EADDRINUSE from the
 * second process is no error) and key them by the new inode. */
void multicast_rejoin(int fd, uint64_t old_ino)
{
	uint64_t ino = 0;

	for (int i = 0; i < ngroups; i++) {
		struct membership *m = &groups[i];

		if (m->fd != fd || m->ino != old_ino)
			continue;
		if (!ino)	/* an fstat only for a socket in a group */
			ino = inode_of(fd);
		/* the system call: the wrapper would note it once more */
		if (syscall(SYS_setsockopt, fd, m->level, m->name, m->req,
			    m->len) < 0 &&
		    errno != EADDRINUSE)
			ckpt_log("%s: fd %d: joining its multicast group "
				 "again failed: %s; it receives nothing sent "
				 "to the group", ckpt.program, fd,
				 strerror(errno));
		m->ino = ino;
	}
}
