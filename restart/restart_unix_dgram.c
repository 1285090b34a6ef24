// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Connected AF_UNIX datagram and seqpacket sockets
 * (libckpt-preload/unix_dgram.c records each end with its peer's inode,
 * and one process per end the messages queued for it): one socketpair of
 * the same type per pair, with the saved options (buffer sizes first,
 * SO_PASSCRED), each saved message sent again into the end it was queued
 * for, boundary kept, with the fds it carried (SCM_RIGHTS) made again:
 * pipes and sockets ckpt_restart made, files opened again by path. Both
 * ends are handed to every restored process through the plan.
 *
 * An end whose peer is not among the images (it was closed, or lives
 * outside the computation) gets a pair whose other end is closed once the
 * messages are queued: they are still read, then the peer is gone; a
 * datagram end whose peer had a name is connected to it again
 * (finish_lone). The queue of a Unix stream end saved as messages
 * (CKPT_FDF_MESSAGES: fds in flight, SO_PASSCRED) is sent here too, into
 * the pair restart_sockets.c made.
 *
 * Credentials: when the messages of a queue carried credentials
 * (SCM_CREDENTIALS) from one process that is restarted too, that process
 * queues them again itself, after it is forked and before any process
 * runs (restart_unix_dgram_refill_as): the kernel stamps its real pid,
 * which libckpt's recvmsg translates back to the virtual one.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "ckpt/sockaddr_text.h"
#include "process_tree.h"

#define FDS_MAX		253		/* SCM_MAX_FD */
#define MSG_MAX		(64U << 20)

struct dgram_end {
	uint64_t ino, peer;
	int type;				/* SOCK_DGRAM, SOCK_SEQPACKET */
	const struct ckpt_image *img;		/* the saver's record */
	const struct ckpt_fd_info *data;
	struct ckpt_unix_queue q;
	int fd;					/* made: its number */
	int twin;				/* the other end of its pair */
	int lone;				/* its peer is not in the images:
						   twin is closed after refill */
	int sender;				/* the vpid that queues the
						   messages again; 0: ckpt_restart */
	const void *to;				/* refilled from a server: e's
						   name, else NULL */
	socklen_t tolen;
	int done;
};

static struct dgram_end ends[CKPT_PLAN_MAX_SOCKETS];
static int nends;

/* Datagram and seqpacket ends, and stream ends whose queue held fds in
 * flight (restart_sockets.c made their pair and left their queue). */
static int is_message_queue(const struct ckpt_fd_info *f)
{
	return f->kind == CKPT_FD_UNIX_DGRAM ||
	       f->kind == CKPT_FD_UNIX_SEQPACKET ||
	       (f->kind == CKPT_FD_UNIX_STREAM &&
		(f->fd_flags & CKPT_FDF_MESSAGES) && f->data_size &&
		/* one in a listener's queue: restart_sockets.c */
		!(f->fd_flags & CKPT_FDF_IN_BACKLOG));
}

static int type_of(uint32_t kind)
{
	return kind == CKPT_FD_UNIX_DGRAM ? SOCK_DGRAM :
	       kind == CKPT_FD_UNIX_SEQPACKET ? SOCK_SEQPACKET : SOCK_STREAM;
}

static struct dgram_end *find_end(uint64_t ino)
{
	for (int i = 0; i < nends; i++)
		if (ends[i].ino == ino)
			return &ends[i];
	return NULL;
}

static int bad_record(const struct ckpt_image *img,
		      const struct ckpt_fd_info *f, const char *why)
{
	fprintf(stderr, "ckpt_restart: %s: fd %d: socket record '%s': %s\n",
		img->path, f->fd, image_string(img, f->path), why);
	return -EINVAL;
}

static int note_end(const struct ckpt_image *img,
		    const struct ckpt_fd_info *f)
{
	struct dgram_end *e;
	uint64_t ino;

	if (fd_record_ino(img, f, "socket", &ino) < 0)
		return bad_record(img, f, "a bad name");
	e = find_end(ino);
	if (!e) {
		if (nends == CKPT_PLAN_MAX_SOCKETS) {
			fprintf(stderr, "ckpt_restart: %s: more than %d Unix "
				"datagram socket ends in the computation\n",
				img->path, CKPT_PLAN_MAX_SOCKETS);
			return -E2BIG;
		}
		e = &ends[nends++];
		memset(e, 0, sizeof(*e));
		e->ino = ino;
		e->peer = f->peer_ino;
		e->fd = -1;
		e->type = type_of(f->kind);
	}
	if (f->data_size && !e->data) {
		if (f->data_size < sizeof(e->q) ||
		    pread(img->fd, &e->q, sizeof(e->q), f->data_offset) !=
		    sizeof(e->q))
			return bad_record(img, f, "its saved queue is cut short");
		e->data = f;
		e->img = img;
	}
	return 0;
}

/* Options before any message: a queue may need the saved buffer sizes
 * (the kernel doubles what it is given: it reported the doubled value). */
static void set_options(const struct dgram_end *e)
{
	int one = 1, v;

	if (!e->data)
		return;
	v = e->q.sndbuf / 2;
	if (v > 0)
		setsockopt(e->fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
	v = e->q.rcvbuf / 2;
	if (v > 0)
		setsockopt(e->fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	if (e->q.flags & CKPT_UNIXQ_F_PASSCRED)
		setsockopt(e->fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one));
}

static const struct ckpt_fd_info *in_flight_record(const struct ckpt_image *img,
						   int fd)
{
	for (uint32_t i = 0; i < img->hdr.nfds; i++)
		if (img->fds[i].fd == fd &&
		    (img->fds[i].fd_flags & CKPT_FDF_IN_FLIGHT))
			return &img->fds[i];
	return NULL;
}

/* The fd ckpt_restart already made for record f (a pipe end, a socket,
 * a FIFO or a shared file), or -1. */
static int made_earlier(const struct ckpt_restart_plan *plan,
			const struct ckpt_image *img,
			const struct ckpt_fd_info *f)
{
	uint64_t ino;

	for (uint32_t i = 0; i < plan->nfiles; i++)
		if (plan->files[i].vpid == img->hdr.vpid &&
		    plan->files[i].fd == f->fd)
			return plan->files[i].handed_fd;
	if (fd_record_ino(img, f, "pipe", &ino) == 0) {
		for (uint32_t i = 0; i < plan->npipes; i++)
			if (plan->pipes[i].ino == ino)
				return (f->flags & O_ACCMODE) == O_WRONLY ?
				       plan->pipes[i].write_fd :
				       plan->pipes[i].read_fd;
	} else if (fd_record_ino(img, f, "socket", &ino) == 0) {
		for (uint32_t i = 0; i < plan->nsockets; i++)
			if (plan->sockets[i].ino == ino)
				return plan->sockets[i].fd;
	}
	return -1;
}

/* A new fd for the fd in flight recorded at number `num` in img: what it
 * was if ckpt_restart can make it, else /dev/null (said). */
static int make_in_flight(const struct ckpt_restart_plan *plan,
			  const struct ckpt_image *img, int num)
{
	const struct ckpt_fd_info *f = in_flight_record(img, num);
	const char *what = "no record of it";
	int fd = -1;

	if (f) {
		what = image_string(img, f->path);
		fd = made_earlier(plan, img, f);
		if (fd >= 0)
			return fcntl(fd, F_DUPFD_CLOEXEC, 0);
	}
	if (f && (f->kind == CKPT_FD_FILE || f->kind == CKPT_FD_DIR ||
		  f->kind == CKPT_FD_DEVICE)) {
		fd = open(what, CKPT_FD_REOPEN_FLAGS(f->flags) | O_CLOEXEC);
		if (fd >= 0 && f->offset > 0 && f->kind == CKPT_FD_FILE)
			lseek(fd, f->offset, SEEK_SET);
		if (fd >= 0)
			return fd;
	}
	fprintf(stderr, "ckpt_restart: %s: %s (vpid %d): a queued message "
		"carried fd %d (%s), which cannot be made again; the receiver "
		"gets /dev/null in its place\n", img->path, img->hdr.program,
		img->hdr.vpid, num, what);
	return open("/dev/null", O_RDWR | O_CLOEXEC);
}

static void close_all(const int *fds, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* Send one message with its fds from `from` (to the name `to` if not
 * NULL); 0 or -errno. */
static int send_one(int from, const void *to, socklen_t tolen,
		    const char *data, uint32_t len, const int *fds,
		    uint32_t nfds)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(FDS_MAX * sizeof(int))];
	} ctl;
	struct iovec iov = { (void *)data, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_name = (void *)to, .msg_namelen = tolen };
	ssize_t n;

	if (nfds) {
		struct cmsghdr *c;

		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	n = sendmsg(from, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n < 0)
		return errno == EAGAIN ? -ENOBUFS : -errno;
	return n == (ssize_t)len ? 0 : -ENOBUFS;	/* a stream: cut short */
}

/* A stream's message: its fds ride on its last byte, so that a read that
 * ends inside the message does not take them early (the checkpoint saw
 * the write that carried them end there, not where it began). */
static int send_message(const struct dgram_end *e, int from, const char *data,
			uint32_t len, const int *fds, uint32_t nfds)
{
	int r;

	if (e->type != SOCK_STREAM || !nfds || len < 2)
		return send_one(from, e->to, e->tolen, data, len, fds, nfds);
	r = send_one(from, NULL, 0, data, len - 1, NULL, 0);
	return r ? r : send_one(from, NULL, 0, data + len - 1, 1, fds, nfds);
}

/* Read message header m at *off of e's record, its fd numbers and data
 * (into *buf, grown as needed). 0 or -errno. */
static int read_msg(const struct dgram_end *e, uint64_t *off,
		    struct ckpt_unix_msg *m, int *nums, char **buf)
{
	uint64_t end = e->data->data_offset + e->data->data_size;
	int fd = e->img->fd;
	char *p;

	if (*off + sizeof(*m) > end ||
	    pread(fd, m, sizeof(*m), *off) != sizeof(*m))
		return -EINVAL;
	*off += sizeof(*m);
	if (m->nfds > FDS_MAX || m->len > MSG_MAX ||
	    *off + m->nfds * sizeof(int) + m->len > end)
		return -EINVAL;
	if (m->nfds && pread(fd, nums, m->nfds * sizeof(int), *off) !=
	    (ssize_t)(m->nfds * sizeof(int)))
		return -EIO;
	*off += m->nfds * sizeof(int);
	p = realloc(*buf, m->len ? m->len : 1);
	if (!p)
		return -ENOMEM;
	*buf = p;
	if (m->len && pread(fd, p, m->len, *off) != (ssize_t)m->len)
		return -EIO;
	*off += m->len;
	return 0;
}

/* Queue e's saved messages for it by sending them from `from`. */
static int refill(const struct ckpt_restart_plan *plan,
		  const struct dgram_end *e, int from)
{
	uint64_t off;
	char *buf = NULL;
	int r = 0;

	if (!e->data)
		return 0;
	off = e->data->data_offset + sizeof(e->q);
	for (uint32_t i = 0; i < e->q.nmsgs && r == 0; i++) {
		struct ckpt_unix_msg m;
		int nums[FDS_MAX], fds[FDS_MAX];

		r = read_msg(e, &off, &m, nums, &buf);
		for (uint32_t j = 0; r == 0 && j < m.nfds; j++) {
			fds[j] = make_in_flight(plan, e->img, nums[j]);
			if (fds[j] < 0) {
				r = -errno;
				close_all(fds, j);
			}
		}
		if (r == 0) {
			r = send_message(e, from, buf, m.len, fds, m.nfds);
			close_all(fds, m.nfds);
		}
	}
	free(buf);
	return r;
}

/* A name that can be bound or connected to again: abstract, or an
 * absolute path. */
static int usable_name(const uint8_t *addr, uint32_t len)
{
	const struct sockaddr_un *a = (const void *)addr;

	return len > sizeof(sa_family_t) && len <= sizeof(((struct ckpt_unix_queue *)0)->addr) &&
	       (!a->sun_path[0] || a->sun_path[0] == '/');
}

/* The name e's socket was bound to, given again (the file a path socket
 * left is removed when it is stale); relative paths are not. 0 or
 * -errno, said. */
static int bind_name(const struct dgram_end *e)
{
	const char *why = "in use";
	char where[160];
	int r = 0;

	if (!e->data || !usable_name(e->q.addr, e->q.addr_len))
		return 0;
	r = clear_stale_unix_path(e->q.addr, e->q.addr_len, e->type, &why);
	if (r == 0 && bind(e->fd, (const void *)e->q.addr, e->q.addr_len) < 0)
		r = -errno;
	if (r < 0) {
		ckpt_sockaddr_text(e->q.addr, e->q.addr_len, where,
				   sizeof(where));
		fprintf(stderr, "ckpt_restart: %s: %s (vpid %d), fd %d: cannot "
			"bind to %s again: %s\n", e->img->path,
			e->img->hdr.program, e->img->hdr.vpid, e->data->fd,
			where, r == -EEXIST ? why : strerror(-r));
	}
	return r;
}

/* A pair for a and b (b NULL: a's peer is gone), placed and listed in the
 * plan. */
static int make_pair(struct dgram_end *a, struct dgram_end *b,
		     struct ckpt_restart_plan *plan, int *next_fd)
{
	int sv[2], r;

	if (socketpair(AF_UNIX, a->type, 0, sv) < 0)
		return -errno;
	r = place_pair(sv, *next_fd);
	if (r < 0)
		return r;
	a->fd = *next_fd;
	a->twin = *next_fd + 1;
	a->lone = !b;
	a->done = 1;
	plan->sockets[plan->nsockets].ino = a->ino;
	plan->sockets[plan->nsockets++].fd = a->fd;
	if (b) {
		b->fd = *next_fd + 1;
		b->twin = a->fd;
		b->done = 1;
		plan->sockets[plan->nsockets].ino = b->ino;
		plan->sockets[plan->nsockets++].fd = b->fd;
	}
	*next_fd += 2;
	set_options(a);
	if (b)
		set_options(b);
	r = bind_name(a);
	return r == 0 && b ? bind_name(b) : r;
}

/* The handed fd of socket ino, or -1. */
static int plan_socket(const struct ckpt_restart_plan *plan, uint64_t ino)
{
	for (uint32_t i = 0; i < plan->nsockets; i++)
		if (plan->sockets[i].ino == ino)
			return plan->sockets[i].fd;
	return -1;
}

/* A stream end's pair is restart_sockets.c's: its messages are sent
 * from the peer end made there (none: they are lost, as its bytes). */
static void take_stream_pair(struct dgram_end *e,
			     const struct ckpt_restart_plan *plan)
{
	e->done = 1;
	e->fd = plan_socket(plan, e->ino);
	e->twin = plan_socket(plan, e->peer);
	if (e->fd < 0 || e->twin < 0)
		e->data = NULL;
	else
		set_options(e);
}

static int make_all_pairs(struct ckpt_restart_plan *plan, int *next_fd)
{
	for (int i = 0; i < nends; i++) {
		struct dgram_end *a = &ends[i], *b = find_end(a->peer);
		int r;

		if (a->type == SOCK_STREAM)
			take_stream_pair(a, plan);
		if (a->done)
			continue;
		if (!b || b == a || b->peer != a->ino || b->done ||
		    b->type != a->type)
			b = NULL;
		if (plan->nsockets + 2 > CKPT_PLAN_MAX_SOCKETS)
			return -E2BIG;
		r = make_pair(a, b, plan, next_fd);
		if (r < 0 && r != -EEXIST && r != -EADDRINUSE) {
			fprintf(stderr, "ckpt_restart: socket:[%llu]: making the "
				"Unix %s socket pair again failed: %s\n",
				(unsigned long long)a->ino, a->type == SOCK_DGRAM
				? "datagram" : "seqpacket", strerror(-r));
			return r;
		}
	}
	return 0;
}

/* The one process whose credentials e's messages carry, if it is among
 * the images; else 0 (ckpt_restart queues them). */
static int credited_sender(const struct dgram_end *e,
			   const struct ckpt_image *imgs, int n)
{
	uint64_t off, end;
	int pid = 0;

	if (!e->data || e->lone)
		return 0;
	off = e->data->data_offset + sizeof(e->q);
	end = e->data->data_offset + e->data->data_size;
	for (uint32_t i = 0; i < e->q.nmsgs; i++) {
		struct ckpt_unix_msg m;

		if (off + sizeof(m) > end ||
		    pread(e->img->fd, &m, sizeof(m), off) != sizeof(m))
			return 0;
		off += sizeof(m) + m.nfds * sizeof(int) + m.len;
		if (m.cred_pid && pid && m.cred_pid != pid)
			return 0;	/* several senders: in queue order */
		if (m.cred_pid)
			pid = m.cred_pid;
	}
	for (int i = 0; i < n && pid; i++)
		if (imgs[i].hdr.vpid == pid)
			return pid;
	return 0;
}

static int refill_said(const struct ckpt_restart_plan *plan,
		       const struct dgram_end *e, int from)
{
	int r = refill(plan, e, from);

	if (r < 0)
		fprintf(stderr, "ckpt_restart: %s: %s (vpid %d): fd %d "
			"(socket:[%llu]): queuing its %u saved messages again "
			"failed: %s\n", e->img->path, e->img->hdr.program,
			e->img->hdr.vpid, e->data->fd,
			(unsigned long long)e->ino, e->q.nmsgs, strerror(-r));
	return r;
}

/* In the process forked to become vpid, before it says its pid: queue
 * the messages it sent with its credentials. 0 or -errno, said. */
int restart_unix_dgram_refill_as(const struct ckpt_restart_plan *plan,
				 int vpid)
{
	for (int i = 0; i < nends; i++) {
		int r = ends[i].sender == vpid ?
			refill_said(plan, &ends[i], ends[i].twin) : 0;

		if (r < 0)
			return r;
	}
	return 0;
}

/* Every end's messages, once every pair exists (a message may carry an
 * end of another pair), but those its credited sender queues itself. */
static int refill_all(const struct ckpt_restart_plan *plan,
		      const struct ckpt_image *imgs, int n)
{
	for (int i = 0; i < nends; i++) {
		struct dgram_end *e = &ends[i];
		int r;

		if (e->lone)
			continue;	/* finish_lone */
		e->sender = credited_sender(e, imgs, n);
		r = e->sender ? 0 : refill_said(plan, e, e->twin);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Connect lone end e to its peer's name again; 0, or -errno after saying
 * why not (its sends then fail as they would to a closed peer). */
static int reconnect(const struct dgram_end *e)
{
	char where[160];

	if (connect(e->fd, (const void *)e->q.peer, e->q.peer_len) == 0)
		return 0;
	ckpt_sockaddr_text(e->q.peer, e->q.peer_len, where, sizeof(where));
	fprintf(stderr, "ckpt_restart: %s: %s (vpid %d), fd %d: its peer %s "
		"is not restarted with it and cannot be reached again: %s; "
		"what it sends fails\n", e->img->path, e->img->hdr.program,
		e->img->hdr.vpid, e->data->fd, where, strerror(errno));
	return -errno;
}

static int close_twin(int twin)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC), r = 0;

	if (null < 0 || dup2(null, twin) < 0)
		r = -errno;
	if (null >= 0)
		close(null);
	return r;
}

/*
 * An end whose peer is not among the images: its messages come from its
 * twin, which is then closed. A datagram end connected to a named socket
 * (a server among the images, made again by restart_listeners.c, or one
 * outside such as /dev/log) is connected to that name again; since that
 * empties its queue, its messages then come from the server's socket,
 * addressed to its own name, or, when that cannot be, they are kept and
 * it is not connected again (said).
 */
static int finish_lone(const struct ckpt_restart_plan *plan,
		       struct dgram_end *e)
{
	int server = plan_socket(plan, e->peer), queued, r = 0;

	queued = e->data && e->q.nmsgs;
	if (e->data && e->type == SOCK_DGRAM &&
	    usable_name(e->q.peer, e->q.peer_len)) {
		if (queued && (server < 0 ||
			       !usable_name(e->q.addr, e->q.addr_len)))
			fprintf(stderr, "ckpt_restart: %s: %s (vpid %d), fd %d:"
				" its %u queued messages are kept; it is not "
				"connected to its peer again\n", e->img->path,
				e->img->hdr.program, e->img->hdr.vpid,
				e->data->fd, e->q.nmsgs);
		else if (reconnect(e) == 0 && queued) {
			e->to = e->q.addr;
			e->tolen = e->q.addr_len;
			r = refill_said(plan, e, server);
			queued = 0;
		}
	}
	if (queued)
		r = refill_said(plan, e, e->twin);
	return r ? r : close_twin(e->twin);
}

int restart_unix_dgram_create(struct ckpt_image *imgs, int n,
			      struct ckpt_restart_plan *plan, int *keep_fd_end)
{
	int r;

	nends = 0;
	for (int i = 0; i < n; i++)
		for (uint32_t j = 0; j < imgs[i].hdr.nfds; j++) {
			if (!is_message_queue(&imgs[i].fds[j]))
				continue;
			r = note_end(&imgs[i], &imgs[i].fds[j]);
			if (r < 0)
				return r;
		}
	r = make_all_pairs(plan, keep_fd_end);
	if (r == 0)
		r = refill_all(plan, imgs, n);
	for (int i = 0; i < nends && r == 0; i++)
		if (ends[i].lone)
			r = finish_lone(plan, &ends[i]);
	return r;
}
