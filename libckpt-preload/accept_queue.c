/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Connections waiting in a TCP or Unix stream listener's accept queue at
 * the checkpoint (connected, not yet accepted by the program): a server
 * of the computation busy while one of its clients connects (nginx,
 * lighttpd or a python server with curl in a loop, redis blocked in a
 * command, a Unix socket server).
 *
 * The kernel shows such a connection's bytes to nobody until it is
 * accepted, so at the checkpoint (DO_WRITE: every process of the
 * computation stopped, each client's bytes in flight already in the
 * server's queue) one process holding the listener (the one that claims
 * it) accepts every connection queued there and saves each as an extra
 * record of its own (CKPT_FDF_IN_BACKLOG, `backlog_of` the listener's
 * fd; a Unix one has its peer's inode there instead): addresses,
 * options and the bytes waiting, as for any connection (files.c). At a
 * restart ckpt_restart connects the client's new socket to the restored
 * listener and sends those bytes: the connection waits in the queue as
 * it did (restart/restart_tcp.c, restart/restart_sockets.c).
 *
 * The program goes on after the checkpoint too, and must find the queue
 * as it was, whichever of its processes accepts. Once the image is
 * written, the connections taken are sent, in order, into a mailbox: a
 * Unix datagram socket of this process, where a connection in flight
 * stays alive with no process holding it. For each, a stand-in
 * connection to the listener is queued in its place (the listener polls
 * readable, the queue has its length), carrying a cookie: this process's
 * pid and the mailbox's fd; its end here is closed at once. When a
 * program's accept returns an end that starts with a cookie, the wrapper
 * (wrappers/socket_addresses.c) takes the next connection from that
 * mailbox (another process's through pidfd_getfd) and puts it at the
 * accepted number, with accept4's flags and its client's address. Every
 * process holding a listener others hold too, or that queued stand-ins,
 * peeks at what it accepts until a checkpoint finds it holds none of
 * either: one recv(MSG_PEEK) per accept.
 *
 * Limits (docs/resources.md): an accept through io_uring or a raw system
 * call gets the stand-in (the cookie as its first bytes); a process that
 * may not take another's descriptors (Yama's ptrace_scope above 0, a
 * process not dumpable) gets the stand-in, its cookie read, closed by
 * its peer, and the connection waits in the mailbox until its holder
 * exits. A restart forgets the mailboxes (ckpt_restart queued the
 * connections again); a fork closes the child's copies; an exec loses
 * them (what is left in them is closed).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "internal.h"

#define TAKEN_MAX	256
#define MAILBOX_MAX	16
#define STAND_IN_WAIT_MS 2000
#define LOCK_TRIES	100000

/* What a stand-in carries, the first bytes its accepted end reads. */
struct stand_in_cookie {
	char magic[8];
	int32_t pid;		/* real pid of the mailbox's process */
	int32_t mailbox;	/* its fd there */
	uint64_t nonce;		/* the mailbox's, against stale cookies */
};

static const char COOKIE_MAGIC[8] = "\177ckptBL\001";

/* Connections taken from a listener's queue this round, saved as records
 * until the image is written; then posted (accept_queue_post). */
static struct taken_conn {
	int conn;
	int listener;
} taken[TAKEN_MAX];
static int ntaken;

/* A mailbox per listener and checkpoint that took connections: the
 * receiving end of a Unix datagram pair (the sending end is closed once
 * they are in), closed when a checkpoint finds it empty. */
static struct mailbox {
	int fd;
	int listener;
	uint64_t nonce;
} mailboxes[MAILBOX_MAX];
static int nmailboxes, table_lock;
static uint32_t mailbox_serial;

/* accept peeks for cookies: a shared listener or stand-ins queued */
static int peek_accepts;

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

int accept_queue_peeks(void)
{
	return __atomic_load_n(&peek_accepts, __ATOMIC_RELAXED);
}

static void close_own(int fd)
{
	if (fd < 0)
		return;
	ckpt_mark_own_fd(fd, 0);
	close(fd);
}

/* The cookie at the start of fd's queue, 0 if it has none. */
static int read_cookie(int fd, struct stand_in_cookie *c, int flags)
{
	ssize_t n = recv(fd, c, sizeof(*c), MSG_DONTWAIT | flags);

	return n == (ssize_t)sizeof(*c) &&
	       !memcmp(c->magic, COOKIE_MAGIC, sizeof(c->magic));
}

static struct mailbox *own_mailbox(int fd, uint64_t nonce)
{
	for (int i = 0; i < nmailboxes; i++)
		if (mailboxes[i].fd == fd && mailboxes[i].nonce == nonce)
			return &mailboxes[i];
	return NULL;
}

/* The mailbox a cookie names, as an fd of this process (*borrowed: a
 * copy of another process's, to close). */
static int mailbox_of(const struct stand_in_cookie *c, int *borrowed)
{
	int pidfd, fd;

	*borrowed = 0;
	/* ours, or a copy of it (a process restored from a snapshot's
	 * template holds the template's, the pid being the original's) */
	if (own_mailbox(c->mailbox, c->nonce))
		return c->mailbox;
	if (c->pid == ckpt_real_getpid())
		return -ENOENT;
	pidfd = syscall(SYS_pidfd_open, c->pid, 0);
	if (pidfd < 0)
		return -errno;
	fd = syscall(SYS_pidfd_getfd, pidfd, c->mailbox, 0);
	close(pidfd);
	if (fd < 0)
		return -errno;
	*borrowed = 1;
	return fd;
}

/* The next connection in a mailbox; -errno. */
static int take_from_mailbox(int mailbox)
{
	char cbuf[CMSG_SPACE(sizeof(int))], byte;
	struct iovec iov = { &byte, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int fd;

	if (recvmsg(mailbox, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) < 0)
		return -errno;
	cm = CMSG_FIRSTHDR(&m);
	if (!cm || cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
		return -EBADMSG;
	memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
	return fd;
}

/* The connection a stand-in's accepted end stands for; -errno. */
static int connection_for(const struct stand_in_cookie *c)
{
	int borrowed, fd, mailbox = mailbox_of(c, &borrowed);

	if (mailbox < 0)
		return mailbox;
	fd = take_from_mailbox(mailbox);
	if (borrowed)
		close(mailbox);
	return fd;
}

/* Everything in the listener's queue, in order, into taken[]: a
 * stand-in's end gives way to the connection it stands for. */
static int take_queue(int listener)
{
	struct pollfd p = { .fd = listener, .events = POLLIN };
	struct stand_in_cookie c;

	while (poll(&p, 1, 0) == 1 && (p.revents & POLLIN)) {
		int fd;

		if (ntaken == TAKEN_MAX)	/* the rest stay queued */
			return -ENOSPC;
		fd = syscall(SYS_accept4, listener, NULL, NULL,
			     SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return errno == EAGAIN ? 0 : -errno;
		if (read_cookie(fd, &c, MSG_PEEK)) {
			int conn = connection_for(&c);

			close(fd);
			if (conn < 0) {
				ckpt_log("fd %d: a connection waiting since the "
					 "last checkpoint could not be taken "
					 "from its mailbox (process %d): %s",
					 listener, c.pid, strerror(-conn));
				continue;
			}
			fd = conn;
		}
		taken[ntaken].conn = ckpt_move_fd_high(fd);
		taken[ntaken++].listener = listener;
	}
	return 0;
}

/* This process holds a stream listener others hold too: any of them may
 * queue stand-ins in it, which this one may accept. */
void accept_queue_note_shared(void)
{
	__atomic_store_n(&peek_accepts, 1, __ATOMIC_RELAXED);
}

int accept_queue_save(int listener, int (*note)(int conn, int listener))
{
	int first = ntaken, r;

	if (lock_table() < 0)
		return -EDEADLK;
	r = take_queue(listener);
	unlock_table();
	if (r == -ENOSPC)
		unrestored_add("fd %d: more than %d connections wait to be "
			       "accepted by listeners: the rest are left in the "
			       "queue, not saved; a restart loses them",
			       listener, TAKEN_MAX);
	else if (r < 0)
		ckpt_log("fd %d: taking the connections waiting to be "
			 "accepted failed: %s; a restart loses them", listener,
			 strerror(-r));
	r = 0;
	for (int i = first; i < ntaken && r == 0; i++)
		r = note(taken[i].conn, listener);
	return r;
}

/* Where a stand-in connects to reach the listener: its address (a Unix
 * path or abstract name as bound), loopback for a wildcard one. */
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

/* A connection to the listener carrying the cookie, queued (and its end
 * here closed) once this returns 0. */
static int queue_stand_in(int listener, const struct stand_in_cookie *c)
{
	struct sockaddr_storage to;
	socklen_t len = listener_target(listener, &to);
	struct pollfd p;
	int fd, err = 0, r;

	if (!len)
		return -errno;
	fd = socket(to.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		    0);
	if (fd < 0)
		return -errno;
	/* the kernel's address: not through the wrapper (host moves) */
	r = syscall(SYS_connect, fd, &to, len) < 0 && errno != EINPROGRESS ?
	    -errno : 0;
	p = (struct pollfd){ .fd = fd, .events = POLLOUT };
	if (r == 0 && poll(&p, 1, STAND_IN_WAIT_MS) != 1)
		r = -ETIMEDOUT;
	len = sizeof(err);
	if (r == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
	    err)
		r = -err;
	if (r == 0 && send(fd, c, sizeof(*c), MSG_NOSIGNAL | MSG_DONTWAIT) !=
		      (ssize_t)sizeof(*c))
		r = -EIO;
	close(fd);
	return r;
}

static int post_one(int mailbox_in, int conn)
{
	char byte = 0, cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { &byte, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1,
			    .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &conn, sizeof(conn));
	return sendmsg(mailbox_in, &m, MSG_DONTWAIT) < 0 ? -errno : 0;
}

/* A mailbox emptied by the accepts (or by this round's take_queue) is
 * closed. */
static void close_empty_mailboxes(void)
{
	for (int i = 0; i < nmailboxes; i++) {
		struct pollfd p = { .fd = mailboxes[i].fd, .events = POLLIN };

		if (poll(&p, 1, 0) == 0) {
			close_own(mailboxes[i].fd);
			mailboxes[i--] = mailboxes[--nmailboxes];
		}
	}
}

static void say_lost(int listener, int err)
{
	unrestored_add("fd %d: a connection waiting to be accepted by this "
		       "listener could not be put back in its queue (%s); its "
		       "client sees it closed", listener, strerror(-err));
}

/* This round's connections of one listener, in order, into a new
 * mailbox, with a stand-in queued for each. */
static void post_listener(int listener)
{
	struct stand_in_cookie c = { .pid = ckpt_real_getpid() };
	int pair[2] = { -1, -1 }, r = 0;
	struct timespec now;

	if (nmailboxes == MAILBOX_MAX)
		r = -ENOSPC;
	else if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair) < 0)
		r = -errno;
	if (r == 0) {
		pair[1] = ckpt_move_fd_high(pair[1]);
		clock_gettime(CLOCK_MONOTONIC, &now);
		memcpy(c.magic, COOKIE_MAGIC, sizeof(c.magic));
		c.mailbox = pair[1];
		c.nonce = ((uint64_t)++mailbox_serial << 32) ^
			  (uint64_t)now.tv_nsec ^ (uint64_t)now.tv_sec << 20;
		mailboxes[nmailboxes++] = (struct mailbox){
			.fd = pair[1], .listener = listener, .nonce = c.nonce };
	}
	for (int i = 0; i < ntaken; i++) {
		if (taken[i].listener != listener)
			continue;
		/* the stand-in first: a post that fails then leaves one that
		 * reads as closed, never a connection nobody can take */
		if (r == 0)
			r = queue_stand_in(listener, &c);
		if (r == 0)
			r = post_one(pair[0], taken[i].conn);
		if (r < 0)
			say_lost(listener, r);
		close_own(taken[i].conn);
		taken[i].conn = -1;
	}
	if (pair[0] >= 0)
		close(pair[0]);
}

/* After the image is written: this round's connections go to mailboxes,
 * stand-ins in their place. */
void accept_queue_post(void)
{
	if (lock_table() < 0)
		return;
	for (int i = 0; i < ntaken; i++)
		if (taken[i].conn >= 0)
			post_listener(taken[i].listener);
	if (ntaken)
		__atomic_store_n(&peek_accepts, 1, __ATOMIC_RELAXED);
	ntaken = 0;
	close_empty_mailboxes();
	unlock_table();
}

/* A checkpoint that finds no shared stream listener and no mailbox here:
 * accept need not peek any more. */
void accept_queue_round_begin(void)
{
	if (!nmailboxes)
		__atomic_store_n(&peek_accepts, 0, __ATOMIC_RELAXED);
}

/* The program's accept returned fd: when it is a stand-in's end, the
 * connection it stands for takes its number, with accept4's flags, and
 * addr (room bytes, as the program gave them) gets that connection's
 * client address. fd, or -1 with errno. */
int accept_queue_swap(int fd, struct sockaddr *addr, socklen_t *len,
		      socklen_t room, int flags)
{
	struct stand_in_cookie c;
	int conn;

	if (!read_cookie(fd, &c, MSG_PEEK))
		return fd;
	if (lock_table() < 0)
		return fd;
	conn = connection_for(&c);
	unlock_table();
	if (conn < 0) {
		ckpt_log("fd %d: accepted a stand-in for a connection that "
			 "waited at a checkpoint, and the connection could not "
			 "be taken from process %d: %s; the program sees a "
			 "connection closed by its client", fd, c.pid,
			 strerror(-conn));
		read_cookie(fd, &c, 0);
		return fd;
	}
	if (len)	/* the stand-in's address was written there */
		*len = room;
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
	for (int i = 0; i < nmailboxes; i++) {
		if (close_them)
			close(mailboxes[i].fd);
		ckpt_mark_own_fd(mailboxes[i].fd, 0);
	}
	nmailboxes = 0;
	ntaken = 0;
	__atomic_store_n(&table_lock, 0, __ATOMIC_RELEASE);
}

/* A forked child: its copies of the mailboxes are the parent's (a
 * cookie names the parent: the child takes from it as any process). */
void accept_queue_after_fork_in_child(void)
{
	forget_all(1);
}

/* A restart: none of the descriptors exist; ckpt_restart queued the
 * connections again (restart/restart_tcp.c). */
void accept_queue_forget(void)
{
	forget_all(0);
}
