/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * TCP connections waiting in a listener's accept queue at the checkpoint
 * (connected, not yet accepted by the program): a server of the
 * computation busy while one of its clients connects (nginx, lighttpd or
 * a python server with curl in a loop).
 *
 * The kernel shows such a connection's bytes to nobody until it is
 * accepted, so at the checkpoint (DO_WRITE: every process of the
 * computation stopped, each client's bytes in flight already in the
 * server's queue) the process that alone holds the listener accepts
 * every connection queued there and saves each as an extra record of its
 * own (CKPT_FDF_IN_BACKLOG, `backlog_of` the listener's fd): addresses,
 * options and the bytes waiting, as for any connection (files.c). At a
 * restart ckpt_restart connects the client's new socket to the restored
 * listener and sends those bytes: the connection waits in the queue as
 * it did (restart/restart_tcp.c).
 *
 * The program goes on after the checkpoint too, and must find the
 * queue as it was: for each connection taken a stand-in connection is
 * made from this process to the listener, queued in its place (the
 * listener polls readable, the queue has its length). The connection
 * taken is kept here; when the program's accept returns the stand-in's
 * end (told by its peer address), the wrapper puts the kept connection
 * at that number instead (wrappers/socket_addresses.c), with accept4's flags and
 * its client's address. A connection whose stand-in cannot be queued
 * (the queue full meanwhile) is closed, and said.
 *
 * The table is the process's: a forked child closes what it inherited
 * (only the process that took them can hand them out), an exec loses it
 * (the program then accepts stand-ins that read as closed), a restart
 * forgets it (its connections were made again in the listener's queue).
 * A listener other processes hold too is not drained (any of them may
 * accept): its waiting connections are named, a restart loses them.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "internal.h"

#define WAITING_MAX	256
#define STAND_IN_WAIT_MS 2000
#define LOCK_TRIES	100000

static struct waiting_conn {
	int conn;		/* the connection taken from the queue */
	int stand_in;		/* -1: its stand-in was accepted meanwhile */
	int listener;		/* the program's fd of the listener */
	struct sockaddr_storage stand_in_addr;	/* getsockname(stand_in) */
	socklen_t stand_in_len;
} waiting[WAITING_MAX];
static int nwaiting, table_lock;

static int lock_table(void)
{
	for (int tries = 0; __atomic_exchange_n(&table_lock, 1,
						__ATOMIC_ACQUIRE); tries++) {
		if (tries == LOCK_TRIES)
			return -EDEADLK;
		sched_yield();
	}
	return 0;
}

static void unlock_table(void)
{
	__atomic_store_n(&table_lock, 0, __ATOMIC_RELEASE);
}

int tcp_backlog_waiting(void)
{
	return __atomic_load_n(&nwaiting, __ATOMIC_RELAXED);
}

static void close_own(int fd)
{
	if (fd < 0)
		return;
	ckpt_mark_own_fd(fd, 0);
	close(fd);
}

static void drop_entry(int i)
{
	close_own(waiting[i].stand_in);
	memmove(&waiting[i], &waiting[i + 1],
		(nwaiting - i - 1) * sizeof(waiting[0]));
	__atomic_store_n(&nwaiting, nwaiting - 1, __ATOMIC_RELAXED);
}

/* Where a stand-in connects to reach the listener: its address, loopback
 * for a wildcard one. */
static socklen_t listener_target(int listener, struct sockaddr_storage *to)
{
	socklen_t len = sizeof(*to);
	struct sockaddr_in *in = (void *)to;
	struct sockaddr_in6 *in6 = (void *)to;

	if (syscall(SYS_getsockname, listener, to, &len) < 0)
		return 0;
	if (to->ss_family == AF_INET && in->sin_addr.s_addr == INADDR_ANY)
		in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (to->ss_family == AF_INET6 &&
		 IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr))
		in6->sin6_addr = in6addr_loopback;
	return len;
}

/* A connection to the listener, queued once this returns 0. */
static int queue_stand_in(struct waiting_conn *w)
{
	struct sockaddr_storage to;
	socklen_t len = listener_target(w->listener, &to);
	struct pollfd p;
	int fd, err = 0, r;

	if (!len)
		return -errno;
	fd = socket(to.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    0);
	if (fd < 0)
		return -errno;
	fd = ckpt_move_fd_high(fd);
	r = connect(fd, (void *)&to, len) < 0 && errno != EINPROGRESS ?
	    -errno : 0;
	p = (struct pollfd){ .fd = fd, .events = POLLOUT };
	if (r == 0 && poll(&p, 1, STAND_IN_WAIT_MS) != 1)
		r = -ETIMEDOUT;
	len = sizeof(err);
	if (r == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
	    err)
		r = -err;
	w->stand_in_len = sizeof(w->stand_in_addr);
	if (r == 0 && syscall(SYS_getsockname, fd, &w->stand_in_addr,
			      &w->stand_in_len) < 0)
		r = -errno;
	if (r < 0) {
		close_own(fd);
		return r;
	}
	w->stand_in = fd;
	return 0;
}

static int same_address(const struct sockaddr_storage *a, socklen_t alen,
			const struct sockaddr_storage *b, socklen_t blen)
{
	return alen == blen && !memcmp(a, b, alen);
}

/* The entry whose stand-in is the peer of fd (an end accepted from the
 * queue), -1 if none. */
static int stand_in_of(int fd)
{
	struct sockaddr_storage peer;
	socklen_t len = sizeof(peer);

	if (syscall(SYS_getpeername, fd, &peer, &len) < 0)
		return -1;
	for (int i = 0; i < nwaiting; i++)
		if (waiting[i].stand_in >= 0 &&
		    same_address(&peer, len, &waiting[i].stand_in_addr,
				 waiting[i].stand_in_len))
			return i;
	return -1;
}

/* Everything in the listener's queue, in order: each stand-in's end is
 * closed and its entry marked to be queued again; each other connection
 * becomes a new entry. */
static int take_queue(int listener, int *taken)
{
	struct pollfd p = { .fd = listener, .events = POLLIN };

	*taken = 0;
	while (poll(&p, 1, 0) == 1 && (p.revents & POLLIN)) {
		int fd = syscall(SYS_accept4, listener, NULL, NULL,
				 SOCK_CLOEXEC | SOCK_NONBLOCK), i;

		if (fd < 0)
			return errno == EAGAIN ? 0 : -errno;
		i = stand_in_of(fd);
		if (i >= 0) {
			close(fd);
			close_own(waiting[i].stand_in);
			waiting[i].stand_in = -1;
			continue;
		}
		if (nwaiting == WAITING_MAX) {
			close(fd);
			return -ENOSPC;
		}
		waiting[nwaiting] = (struct waiting_conn){
			.conn = ckpt_move_fd_high(fd), .stand_in = -1,
			.listener = listener };
		__atomic_store_n(&nwaiting, nwaiting + 1, __ATOMIC_RELAXED);
		++*taken;
	}
	return 0;
}

static void say_lost(int listener, int err)
{
	unrestored_add("fd %d: a connection waiting to be accepted by this "
		       "TCP listener could not be put back in its queue (%s); "
		       "its client sees it closed", listener, strerror(-err));
}

int tcp_backlog_save(int listener, int (*note)(int conn, int listener))
{
	int taken, r;

	if (lock_table() < 0)
		return -EDEADLK;
	r = take_queue(listener, &taken);
	if (r == -ENOSPC)
		unrestored_add("fd %d: more than %d connections wait to be "
			       "accepted by this TCP listener: the rest are not "
			       "saved, a restart loses them", listener,
			       WAITING_MAX);
	else if (r < 0)
		ckpt_log("fd %d: taking the connections waiting to be "
			 "accepted failed: %s; a restart loses them", listener,
			 strerror(-r));
	/* in the queue's order: the stand-ins taken, then the new ones */
	for (int i = 0; i < nwaiting; i++) {
		struct waiting_conn *w = &waiting[i];

		if (w->listener != listener || w->stand_in >= 0)
			continue;
		r = queue_stand_in(w);
		if (r < 0) {
			say_lost(listener, r);
			close_own(w->conn);
			drop_entry(i--);
		}
	}
	r = 0;
	for (int i = 0; i < nwaiting && r == 0; i++)
		if (waiting[i].listener == listener)
			r = note(waiting[i].conn, listener);
	unlock_table();
	return r;
}

/* The program's accept returned fd: when it is a stand-in's end, the
 * connection it stands for takes its number, with accept4's flags, and
 * addr gets that connection's client address. fd, or -1 with errno. */
int tcp_backlog_swap(int fd, struct sockaddr *addr, socklen_t *len,
		     int flags)
{
	int i, conn;

	if (lock_table() < 0)
		return fd;
	i = stand_in_of(fd);
	if (i < 0) {
		unlock_table();
		return fd;
	}
	conn = waiting[i].conn;
	drop_entry(i);
	unlock_table();
	ckpt_mark_own_fd(conn, 0);
	if (dup3(conn, fd, flags & SOCK_CLOEXEC ? O_CLOEXEC : 0) < 0 ||
	    fcntl(fd, F_SETFL, flags & SOCK_NONBLOCK ? O_NONBLOCK : 0) < 0 ||
	    (addr && syscall(SYS_getpeername, fd, addr, len) < 0)) {
		int e = errno;

		close(conn);
		close(fd);
		errno = e;
		return -1;
	}
	close(conn);
	return fd;
}

static void forget_all(int close_them)
{
	for (int i = 0; i < nwaiting; i++) {
		if (close_them) {
			close_own(waiting[i].conn);
			close_own(waiting[i].stand_in);
		} else {
			ckpt_mark_own_fd(waiting[i].conn, 0);
			if (waiting[i].stand_in >= 0)
				ckpt_mark_own_fd(waiting[i].stand_in, 0);
		}
	}
	__atomic_store_n(&nwaiting, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&table_lock, 0, __ATOMIC_RELEASE);
}

/* A forked child: its copies are the parent's to hand out. */
void tcp_backlog_after_fork_in_child(void)
{
	forget_all(1);
}

/* A restart: none of the descriptors exist; ckpt_restart queued the
 * connections again (restart/restart_tcp.c). */
void tcp_backlog_forget(void)
{
	forget_all(0);
}
