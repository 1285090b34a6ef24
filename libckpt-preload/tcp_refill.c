/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Bytes a TCP sender could not get to its peer before a checkpoint.
 *
 * On one host the bytes in flight on a connection wait in the receiver's
 * queue, where the receiver's checkpoint reads them with MSG_PEEK, once
 * the sender's kernel has sent them (socket_state_settle waits for that).
 * When the receiver's buffer is full (a slow reader: a rate-limited
 * download, a consumer behind its producer) they stay in the sender's
 * send queue, which no unprivileged call can read (TCP_REPAIR needs
 * CAP_NET_ADMIN), and a restart would lose them. The receiver moves them
 * instead, and the sender puts back what was moved before its program
 * runs again (docs/resources.md, "Bytes stuck in a sender's queue"):
 *
 *   sender, DO_SUSPEND: the settle leaves bytes unsent and sock_diag
 *     finds the peer's socket on this host: the "stuck" file
 *     .ckpt_tcpstuck_KEY.gG is made (KEY: the sender's address and port,
 *     then its peer's).
 *   receiver, DO_WRITE, a connection with bytes waiting: if the stuck
 *     file of the connection is there, it is renamed to
 *     .ckpt_tcpdrain_KEY.gG (taken), room is reserved for the refill
 *     file, and the socket is read until its queue and the sender's (as
 *     sock_diag tells) are empty. What was read is the socket's saved
 *     queue in the image, and the refill file .ckpt_tcprefill_KEY.gG
 *     (written under a temporary name, renamed into place).
 *   sender, before its threads resume (on every path, a failed round
 *     included): renaming the stuck file away cancels it; if the
 *     receiver took it first, the sender waits for the refill file and
 *     sends its bytes on the socket, so the receiver's program reads them
 *     first, in order, then what the sender's program writes next.
 *
 * The renames decide who goes on: either the receiver takes the file
 * (and then always writes a refill file, empty when it read nothing) or
 * the sender cancels it (and the receiver reads nothing). Every wait is
 * bounded.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <ckpt/safe_file.h>
#include "internal.h"

#define STUCK_MAX 64
#define KEY_LEN 81		/* 2 x (32 hex digits + 4 of port) + 1 */
#define DRAIN_MS 3000		/* the receiver reads for at most this */
#define REFILL_WAIT_MS 10000	/* the sender waits for the refill file,
				   then for each step of sending it */

struct stuck_send {
	int fd;
	char key[KEY_LEN];
};

static struct stuck_send stuck[STUCK_MAX];
static int write_dirfd = -1;	/* the round's directory, while writing */
static int round_has_stuck;	/* it holds a stuck file of this round */
static int nstuck;
static pid_t stuck_pid;		/* who noted them: not a copy of it */
static uint64_t round_gen;
static char round_dir[4096];

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* An address as 16 bytes (IPv4 as IPv4-mapped IPv6) and a port. */
static int flat_addr(const uint8_t *sa, uint8_t out[16], uint16_t *port)
{
	const struct sockaddr_in *in = (const void *)sa;
	const struct sockaddr_in6 *in6 = (const void *)sa;

	if (in->sin_family == AF_INET) {
		memset(out, 0, 10);
		out[10] = out[11] = 0xff;
		memcpy(out + 12, &in->sin_addr, 4);
		*port = ntohs(in->sin_port);
		return 0;
	}
	if (in6->sin6_family != AF_INET6)
		return -EAFNOSUPPORT;
	memcpy(out, &in6->sin6_addr, 16);
	*port = ntohs(in6->sin6_port);
	return 0;
}

/* KEY of the direction from `from` to `to` (the sender's address, then
 * its peer's). */
static int direction_key(const uint8_t *from, const uint8_t *to,
			 char key[KEY_LEN])
{
	uint8_t a[2][16];
	uint16_t port[2];
	char *p = key;

	if (flat_addr(from, a[0], &port[0]) < 0 ||
	    flat_addr(to, a[1], &port[1]) < 0)
		return -EAFNOSUPPORT;
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < 2; i++) {
		for (int j = 0; j < 16; j++) {
			*p++ = hex[a[i][j] >> 4];
			*p++ = hex[a[i][j] & 15];
		}
		for (int shift = 12; shift >= 0; shift -= 4)
			*p++ = hex[(port[i] >> shift) & 15];
	}
	*p = 0;
	return 0;
}

static void file_name(char *buf, size_t len, const char *what,
		      const char *key)
{
	ckpt_fmt(buf, len, ".ckpt_tcp%s_%s.g%llu", what, key,
		 (unsigned long long)round_gen);
}

void tcp_refill_begin_round(uint64_t generation, const char *dir)
{
	nstuck = 0;
	round_gen = generation;
	ckpt_fmt(round_dir, sizeof(round_dir), "%s", dir);
}

/* A restarted process: the bytes are in the receiver's image, put back
 * by ckpt_restart; nothing to wait for. */
void tcp_refill_forget(void)
{
	nstuck = 0;
	write_dirfd = -1;
}

/*
 * The send queue (sock_diag's idiag_wqueue: bytes not yet acknowledged)
 * of the TCP socket of this network namespace whose address is `local`
 * and peer `remote`; -errno if there is none or sock_diag refuses.
 */
static long send_queue_of(const uint8_t *local, const uint8_t *remote)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 req;
	} msg;
	static char reply[8192];
	uint8_t a[2][16];
	uint16_t port[2];
	const struct nlmsghdr *nlh = (const void *)reply;
	long n, r = -ENOENT;
	int v4;

	if (flat_addr(local, a[0], &port[0]) < 0 ||
	    flat_addr(remote, a[1], &port[1]) < 0)
		return -EAFNOSUPPORT;
	v4 = IN6_IS_ADDR_V4MAPPED((struct in6_addr *)a[0]) &&
	     IN6_IS_ADDR_V4MAPPED((struct in6_addr *)a[1]);
	memset(&msg, 0, sizeof(msg));
	msg.nlh.nlmsg_len = sizeof(msg);
	msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	msg.nlh.nlmsg_flags = NLM_F_REQUEST;
	msg.req.sdiag_family = v4 ? AF_INET : AF_INET6;
	msg.req.sdiag_protocol = IPPROTO_TCP;
	msg.req.idiag_states = ~0U;
	msg.req.id.idiag_sport = htons(port[0]);
	msg.req.id.idiag_dport = htons(port[1]);
	memcpy(msg.req.id.idiag_src, v4 ? a[0] + 12 : a[0], v4 ? 4 : 16);
	memcpy(msg.req.id.idiag_dst, v4 ? a[1] + 12 : a[1], v4 ? 4 : 16);
	msg.req.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	msg.req.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	n = sockets_diag_ask(&msg, sizeof(msg), reply, sizeof(reply));
	for (; n > 0 && NLMSG_OK(nlh, n); nlh = NLMSG_NEXT(nlh, n)) {
		const struct inet_diag_msg *m = NLMSG_DATA(nlh);

		if (nlh->nlmsg_type == NLMSG_ERROR) {
			const struct nlmsgerr *e = NLMSG_DATA(nlh);

			return e->error < 0 ? e->error : -EPROTO;
		}
		if (nlh->nlmsg_type == SOCK_DIAG_BY_FAMILY)
			r = m->idiag_wqueue;
	}
	return n < 0 ? n : r;
}

/*
 * Whether the round's directory (dirfd, just opened) holds any stuck
 * file of this round. Senders make them in DO_SUSPEND, so once every
 * process is stopped (DO_WRITE) none is added: one listing instead of a
 * rename tried per connection with bytes waiting (hundreds with many
 * connections: docs/performance.md). 1 when the listing fails (the
 * renames decide, as without it).
 */
static int lists_stuck_file(int dirfd)
{
	char prefix[64], suffix[32], buf[8192];
	size_t plen, slen;
	long n;

	ckpt_fmt(prefix, sizeof(prefix), ".ckpt_tcpstuck_");
	ckpt_fmt(suffix, sizeof(suffix), ".g%llu",
		 (unsigned long long)round_gen);
	plen = strlen(prefix);
	slen = strlen(suffix);
	while ((n = syscall(SYS_getdents64, dirfd, buf, sizeof(buf))) > 0) {
		for (long pos = 0; pos < n;) {
			const struct dirent64 *d = (const void *)(buf + pos);
			size_t len = strlen(d->d_name);

			pos += d->d_reclen;
			if (len > plen + slen &&
			    !memcmp(d->d_name, prefix, plen) &&
			    !strcmp(d->d_name + len - slen, suffix))
				return 1;
		}
	}
	return n < 0;
}

static int open_round_dir(void)
{
	struct ckpt_refusal ref;
	int dirfd = ckpt_safe_dir_open(round_dir, &ref);

	if (dirfd < 0 && ref.why)
		ckpt_log("checkpoint directory %s: %s (owner uid %u)",
			 round_dir, ref.why, ref.uid);
	return dirfd;
}

/*
 * Sender, DO_SUSPEND: fd (si: its addresses) still has `left` bytes
 * unsent after the settle. 1: its peer's receiver will move them (the
 * stuck file is made); 0: not (no peer socket on this host, too many).
 */
int tcp_refill_note_stuck(int fd, const struct ckpt_socket_info *si)
{
	char name[200];
	int dirfd, f;

	if (nstuck == STUCK_MAX || !round_dir[0] || !si->peer_len ||
	    direction_key(si->addr, si->peer, stuck[nstuck].key) < 0 ||
	    send_queue_of(si->peer, si->addr) < 0)
		return 0;
	dirfd = open_round_dir();
	if (dirfd < 0)
		return 0;
	file_name(name, sizeof(name), "stuck", stuck[nstuck].key);
	/* exclusive: a socket shared across fork is noted by one process
	 * (the others' settle finds the file there) */
	f = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		   O_CLOEXEC, 0600);
	close(dirfd);
	if (f < 0)
		return errno == EEXIST;
	close(f);
	stuck_pid = ckpt_real_getpid();
	stuck[nstuck++].fd = fd;
	return 1;
}

/* The refill file's bytes: n more of them, also into the record. */
static int keep_bytes(int tmp, int memfd, const char *buf, size_t n)
{
	if (write(tmp, buf, n) != (ssize_t)n || write(memfd, buf, n) !=
	    (ssize_t)n)
		return -(errno ? errno : EIO);
	return 0;
}

/*
 * Read everything the socket will get from the stopped sender: until
 * its queue is empty and the sender's too (or end of file, or DRAIN_MS).
 * Into tmp and memfd; *size: how many bytes.
 */
static int read_until_sender_empty(int fd, const struct ckpt_socket_info *si,
				   int tmp, int memfd, uint64_t *size)
{
	static char buf[65536];
	long deadline = now_ms() + DRAIN_MS;
	int r;

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		int queued = 0;

		if (n > 0) {
			r = keep_bytes(tmp, memfd, buf, n);
			if (r < 0)
				return r;
			*size += n;
			continue;
		}
		if (n == 0)
			return 0;		/* the sender's FIN: all of it */
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		if (send_queue_of(si->peer, si->addr) <= 0 &&
		    ioctl(fd, FIONREAD, &queued) == 0 && queued == 0)
			return 0;
		if (now_ms() > deadline)
			return -ETIMEDOUT;
		poll(&(struct pollfd){ .fd = fd, .events = POLLIN }, 1, 10);
	}
}

/* Room on the disk for what will be read, before anything is read. */
static int reserve(int tmp, int fd, const struct ckpt_socket_info *si)
{
	long theirs = send_queue_of(si->peer, si->addr);
	int queued = 0;

	if (ioctl(fd, FIONREAD, &queued) < 0)
		return -errno;
	if (theirs < 0)
		theirs = 0;
	if (fallocate(tmp, 0, 0, queued + theirs + 65536) < 0 &&
	    errno != EOPNOTSUPP)
		return -errno;
	return 0;
}

/* The refill file, whole, under its name; the temporary one removed. */
static int publish_refill(int dirfd, int tmp, const char *tmpname,
			  const char *name, uint64_t size)
{
	int r = 0;

	if (ftruncate(tmp, size) < 0 ||
	    renameat2(dirfd, tmpname, dirfd, name, RENAME_NOREPLACE) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(dirfd, tmpname, 0);
	return r;
}

/*
 * Receiver, DO_WRITE: the bytes waiting on TCP socket fd (si) into memfd
 * (*size of them). If its sender left a stuck file, they are read out of
 * the socket with the sender's, and handed back to the sender through the
 * refill file; else peeked (the queue left as it was).
 */
int tcp_refill_save_queue(int fd, const struct ckpt_socket_info *si,
			  int memfd, uint64_t *size)
{
	char key[KEY_LEN], stuck_name[200], drain_name[200], name[200],
	     tmpname[220];
	struct ckpt_refusal ref;
	int dirfd, tmp, r, kept;

	*size = 0;
	if (!round_dir[0] || !si->peer_len ||
	    direction_key(si->peer, si->addr, key) < 0)
		return sockets_peek_into(fd, memfd, size);
	/* opened once per image (every connection with bytes waiting asks) */
	if (write_dirfd == -1) {
		write_dirfd = open_round_dir();
		round_has_stuck = write_dirfd >= 0 &&
				  lists_stuck_file(write_dirfd);
	}
	dirfd = write_dirfd;
	if (dirfd < 0 || !round_has_stuck)
		return sockets_peek_into(fd, memfd, size);
	file_name(stuck_name, sizeof(stuck_name), "stuck", key);
	file_name(drain_name, sizeof(drain_name), "drain", key);
	if (nstuck && stuck_pid == ckpt_real_getpid() &&
	    faccessat(dirfd, stuck_name, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
		/* This process waits for its own peers to read what it puts
		 * back: taking these bytes too could make a cycle of senders
		 * each waiting for the other (both directions of a
		 * connection stuck). */
		unrestored_add("fd %d: its TCP peer could not send everything "
			       "before the checkpoint, and this process is "
			       "such a sender itself: a restart loses the "
			       "bytes left in the peer's send queue", fd);
		return sockets_peek_into(fd, memfd, size);
	}
	if (renameat2(dirfd, stuck_name, dirfd, drain_name,
		      RENAME_NOREPLACE) < 0)	/* nothing stuck, or cancelled */
		return sockets_peek_into(fd, memfd, size);
	/* Taken: a refill file must follow, even an empty one. */
	file_name(name, sizeof(name), "refill", key);
	ckpt_fmt(tmpname, sizeof(tmpname), "%s.tmp", name);
	tmp = ckpt_create_at(dirfd, tmpname, O_RDWR, 0600, &ref);
	r = tmp < 0 ? tmp : reserve(tmp, fd, si);
	kept = r == 0;
	if (kept)
		r = read_until_sender_empty(fd, si, tmp, memfd, size);
	if (tmp >= 0) {
		int p = publish_refill(dirfd, tmp, tmpname, name,
				       kept ? *size : 0);

		if (p < 0 && kept && *size)
			ckpt_log("socket fd %d: %llu bytes read from the TCP "
				 "connection could not be handed back to its "
				 "sender (%s/%s: %s): the running program "
				 "loses them", fd, (unsigned long long)*size,
				 round_dir, name, strerror(-p));
		close(tmp);
	}
	if (!kept) {
		ckpt_log("socket fd %d: no room for the bytes its sender "
			 "could not send (%s); a restart loses them",
			 fd, strerror(-r));
		return sockets_peek_into(fd, memfd, size);
	}
	if (r == -ETIMEDOUT)
		unrestored_add("fd %d: a TCP connection whose sender still had "
			       "bytes queued after %d ms of reading: a restart "
			       "loses those", fd, DRAIN_MS);
	return r == -ETIMEDOUT ? 0 : r;
}

/* The image's descriptors are written. */
void tcp_refill_end_write(void)
{
	if (write_dirfd >= 0)
		close(write_dirfd);
	write_dirfd = -1;
}

/* All of the refill file's bytes sent on fd; the peer's program reads
 * them, so the bound is on time without progress. */
static int send_all(int fd, int file, long deadline)
{
	static char buf[65536];
	ssize_t n;

	while ((n = read(file, buf, sizeof(buf))) > 0) {
		for (ssize_t off = 0; off < n;) {
			ssize_t w = send(fd, buf + off, n - off,
					 MSG_DONTWAIT | MSG_NOSIGNAL);

			if (w > 0) {
				off += w;
				deadline = now_ms() + REFILL_WAIT_MS;
				continue;
			}
			if (w < 0 && errno != EAGAIN && errno != EINTR)
				return -errno;
			if (now_ms() > deadline)
				return -ETIMEDOUT;
			poll(&(struct pollfd){ .fd = fd, .events = POLLOUT },
			     1, 10);
		}
	}
	return n < 0 ? -errno : 0;
}

/* The refill file of s, once its receiver wrote it: -errno if it never
 * came or is not ours. */
static int open_refill(int dirfd, const char *name, long deadline)
{
	struct ckpt_refusal ref;
	long step = 1;
	int f;

	for (;;) {
		f = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (f >= 0)
			break;
		if (errno != ENOENT || now_ms() > deadline)
			return -errno;
		sleep_ms(step);
		step = step < 32 ? step * 2 : step;
	}
	if (ckpt_own_leftover(dirfd, name, &ref) < 0) {
		close(f);
		return -EPERM;
	}
	return f;
}

/* One stuck send: cancelled, or its bytes back in the socket. */
static void refill_one(int dirfd, const struct stuck_send *s)
{
	char stuck_name[200], drain_name[200], cancel[200], name[200];
	long deadline = now_ms() + REFILL_WAIT_MS;
	int f, r;

	file_name(stuck_name, sizeof(stuck_name), "stuck", s->key);
	file_name(cancel, sizeof(cancel), "cancel", s->key);
	if (renameat2(dirfd, stuck_name, dirfd, cancel, RENAME_NOREPLACE) ==
	    0) {
		unlinkat(dirfd, cancel, 0);	/* the receiver read nothing */
		return;
	}
	file_name(name, sizeof(name), "refill", s->key);
	file_name(drain_name, sizeof(drain_name), "drain", s->key);
	f = open_refill(dirfd, name, deadline);
	r = f < 0 ? f : send_all(s->fd, f, deadline);
	if (f >= 0)
		close(f);
	if (r < 0)
		ckpt_log("fd %d: putting back the bytes its TCP peer read at "
			 "the checkpoint (%s/%s) failed: %s; the peer misses "
			 "them", s->fd, round_dir, name, strerror(-r));
	unlinkat(dirfd, name, 0);
	unlinkat(dirfd, drain_name, 0);
}

/* Sender, before the program's threads resume. */
void tcp_refill_before_resume(void)
{
	int dirfd;

	if (!nstuck)
		return;
	if (stuck_pid != ckpt_real_getpid()) {	/* a template's copy */
		nstuck = 0;
		return;
	}
	dirfd = open_round_dir();
	for (int i = 0; dirfd >= 0 && i < nstuck; i++)
		refill_one(dirfd, &stuck[i]);
	if (dirfd >= 0)
		close(dirfd);
	nstuck = 0;
}
