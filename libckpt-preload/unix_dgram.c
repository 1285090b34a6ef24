/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Connected AF_UNIX datagram and seqpacket sockets (socketpair, two
 * sockets connected to each other, a client connected to a server's
 * socket): files.c records them as CKPT_FD_UNIX_DGRAM / _SEQPACKET; and
 * the queues of Unix stream ends that hold fds in flight or pass
 * credentials (CKPT_FDF_MESSAGES). docs/resources.md tells the whole
 * story:
 *
 *   checkpoint, when every process is stopped (DO_WRITE): one process per
 *   socket (round_claim) saves the end's names and options and the
 *   messages queued for it, one by one with their boundaries, read with
 *   MSG_PEEK at SO_PEEK_OFF offsets so that nothing is taken out. A peek
 *   hands over copies of the fds a message carries (SCM_RIGHTS): files.c
 *   records each as an extra fd of this process (CKPT_FDF_IN_FLIGHT),
 *   saved like any other (a pipe with its bytes), then closes it.
 *   Credentials (SCM_CREDENTIALS) are kept with the sender's virtual pid.
 *
 *   restart: ckpt_restart (restart/restart_unix_dgram.c) makes a
 *   socketpair of the same type per saved pair, sets the options and
 *   names and sends each saved message again, with the fds it carried
 *   made again, into the end it was queued for; files.c takes the ends.
 */
#include <errno.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "internal.h"

#define MSGS_MAX	65536		/* more is not a queue we restore */
#define FDS_MAX		253		/* SCM_MAX_FD */
#define STREAM_MAX	(64U << 20)	/* bytes of a stream queue */

static char *data_buf;
static size_t data_cap;

static int opt(int fd, int name)
{
	int v = 0;
	socklen_t len = sizeof(v);

	return getsockopt(fd, SOL_SOCKET, name, &v, &len) < 0 ? -1 : v;
}

/* CKPT_FD_UNIX_DGRAM or _SEQPACKET and *peer when fd is such a Unix
 * socket connected to a peer (*peer 0: the peer is closed, its messages
 * may still wait here); 0 otherwise, -errno on failure. */
int unix_dgram_kind(int fd, uint64_t ino, uint32_t *peer)
{
	int type = opt(fd, SO_TYPE), r;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (opt(fd, SO_DOMAIN) != AF_UNIX ||
	    (type != SOCK_DGRAM && type != SOCK_SEQPACKET))
		return 0;
	r = sockets_unix_peer(ino, peer);
	if (r < 0)
		return r;
	if (r == 0 && getpeername(fd, (struct sockaddr *)&ss, &len) < 0)
		return 0;	/* not connected */
	return type == SOCK_DGRAM ? CKPT_FD_UNIX_DGRAM :
				    CKPT_FD_UNIX_SEQPACKET;
}

/* Room for a message of len bytes in data_buf (unmapped at the end of the
 * save: it must not stay in the image). */
static int grow(size_t len)
{
	size_t cap = data_cap ? data_cap : 65536;
	void *p;

	if (len <= data_cap)
		return 0;
	while (cap < len)
		cap *= 2;
	p = mmap(NULL, cap, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	if (data_buf)
		munmap(data_buf, data_cap);
	data_buf = p;
	data_cap = cap;
	return 0;
}

static void release_buf(void)
{
	if (data_buf)
		munmap(data_buf, data_cap);
	data_buf = NULL;
	data_cap = 0;
}

union control {
	struct cmsghdr align;
	char buf[CMSG_SPACE(FDS_MAX * sizeof(int)) +
		 CMSG_SPACE(sizeof(struct ucred))];
};

/* Copy the fds and credentials of a received control block into m and
 * fds (*nfds); the fds beyond what m can carry are closed. */
static void read_control(struct msghdr *mh, struct ckpt_unix_msg *m,
			 int *fds)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c;
	     c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET)
			continue;
		if (c->cmsg_type == SCM_RIGHTS) {
			int n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			for (int i = 0; i < n; i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(c) + i * sizeof(int),
				       sizeof(fd));
				if (m->nfds < FDS_MAX)
					fds[m->nfds++] = fd;
				else
					close(fd);
			}
		} else if (c->cmsg_type == SCM_CREDENTIALS) {
			struct ucred uc;

			memcpy(&uc, CMSG_DATA(c), sizeof(uc));
			m->cred_pid = vpid_virt_from_real(uc.pid);
			m->cred_uid = uc.uid;
			m->cred_gid = uc.gid;
		}
	}
}

static void close_fds(const int *fds, int n)
{
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

/* Peek at the next len bytes, with the control block (fds dup'ed into
 * this process, credentials); past the recvmsg wrapper: the pids stay
 * real. */
static int peek_data(int fd, size_t len, struct ckpt_unix_msg *m, int *fds)
{
	union control ctl;
	struct iovec iov = { NULL, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf) };
	ssize_t n;
	int r = grow(len);

	if (r < 0)
		return r;
	iov.iov_base = data_buf;
	n = syscall(SYS_recvmsg, fd, &mh,
		    MSG_PEEK | MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -errno;
	m->len = n;
	read_control(&mh, m, fds);
	return 1;
}

/* Peek at the next message. A datagram: its length first (no data, no
 * fds), then all of it. A stream (*stream_left: the bytes not yet
 * peeked): as much as one read gives with the rest of the queue asked
 * for: up to the write that carried fds (the kernel stops there; asked
 * for less, it would walk on to the next fds), or to a change of
 * credentials. 1 and *m, fds: a message; 0: the queue is done; -errno. */
static int peek_one(int fd, struct ckpt_unix_msg *m, int *fds,
		    size_t *stream_left)
{
	struct iovec iov = { NULL, 0 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;
	int r;

	memset(m, 0, sizeof(*m));
	if (stream_left) {
		if (!*stream_left)
			return 0;
		r = peek_data(fd, *stream_left, m, fds);
		if (r > 0 && !m->len)
			r = -EIO;
		if (r > 0)
			*stream_left -= m->len;
		return r;
	}
	n = syscall(SYS_recvmsg, fd, &mh, MSG_PEEK | MSG_DONTWAIT | MSG_TRUNC);
	if (n < 0)
		return errno == EAGAIN ? 0 : -errno;
	/* An empty message is taken whole by the first peek (the kernel
	 * marks it peeked and skips it next time): its fds are lost. */
	if (n == 0)
		return 1;
	return peek_data(fd, n, m, fds);
}

/* Append one message to mfd; its fds are noted (files.c) as in flight. */
static int save_one(int mfd, struct ckpt_unix_msg *m, int *fds,
		    int (*note_fd)(int fd))
{
	size_t fds_len = m->nfds * sizeof(int);
	int r = 0;

	for (uint32_t i = 0; i < m->nfds && r == 0; i++)
		r = note_fd(fds[i]);
	if (r < 0) {
		close_fds(fds, m->nfds);
		return r;
	}
	if (write(mfd, m, sizeof(*m)) != sizeof(*m) ||
	    (fds_len && write(mfd, fds, fds_len) != (ssize_t)fds_len) ||
	    (m->len && write(mfd, data_buf, m->len) != (ssize_t)m->len))
		return -EIO;
	return 0;
}

/* The bytes queued on a stream socket, or -errno. */
static int stream_queued(int fd, size_t *left)
{
	int inq = 0;

	if (ioctl(fd, SIOCINQ, &inq) < 0)
		return -errno;
	if ((unsigned)inq > STREAM_MAX)
		return -E2BIG;
	*left = inq;
	return 0;
}

static int save_all(int fd, int mfd, struct ckpt_unix_queue *q,
		    int (*note_fd)(int fd))
{
	struct ckpt_unix_msg m;
	int fds[FDS_MAX], r;
	size_t left, *stream = NULL;

	if (opt(fd, SO_TYPE) == SOCK_STREAM) {
		r = stream_queued(fd, &left);
		if (r < 0)
			return r;
		stream = &left;
	}
	while (q->nmsgs < MSGS_MAX) {
		r = peek_one(fd, &m, fds, stream);
		if (r <= 0)
			return r;
		r = save_one(mfd, &m, fds, note_fd);
		if (r < 0)
			return r;
		q->nmsgs++;
	}
	return -E2BIG;
}

/* Peek from the start of the queue, the program's peek offset kept. */
static int peek_from_start(int fd, int *saved_off)
{
	int zero = 0;
	socklen_t len = sizeof(*saved_off);

	*saved_off = -1;
	if (getsockopt(fd, SOL_SOCKET, SO_PEEK_OFF, saved_off, &len) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_PEEK_OFF, &zero, sizeof(zero)) < 0)
		return -errno;
	return 0;
}

static void peek_done(int fd, int saved_off)
{
	setsockopt(fd, SOL_SOCKET, SO_PEEK_OFF, &saved_off, sizeof(saved_off));
	release_buf();
}

/* 1 when stream socket fd passes credentials (SO_PASSCRED) or a message
 * queued on it carries fds (SCM_RIGHTS): its queue is then saved as
 * messages (unix_dgram_save_queue), not as bytes (sockets.c); 0 if not;
 * -errno. */
int unix_stream_needs_messages(int fd)
{
	struct ckpt_unix_msg m;
	int fds[FDS_MAX], saved_off, found = 0, r;
	size_t left;

	r = stream_queued(fd, &left);
	if (r == -E2BIG)
		return 0;	/* sockets.c saves what it can */
	if (r == 0 && opt(fd, SO_PASSCRED) > 0)
		return 1;
	if (r == 0)
		r = peek_from_start(fd, &saved_off);
	if (r < 0)
		return r;
	while (!found && (r = peek_one(fd, &m, fds, &left)) > 0) {
		found = m.nfds > 0;
		close_fds(fds, m.nfds);
	}
	peek_done(fd, saved_off);
	return r < 0 ? r : found;
}

static int save_into(int fd, int mfd, int (*note_fd)(int fd))
{
	struct ckpt_unix_queue q = {
		.flags = opt(fd, SO_PASSCRED) > 0 ? CKPT_UNIXQ_F_PASSCRED : 0,
		.rcvbuf = opt(fd, SO_RCVBUF),
		.sndbuf = opt(fd, SO_SNDBUF),
	};
	socklen_t alen = sizeof(q.addr);
	int saved_off, r;

	if (getsockname(fd, (struct sockaddr *)q.addr, &alen) == 0)
		q.addr_len = alen;
	alen = sizeof(q.peer);
	if (getpeername(fd, (struct sockaddr *)q.peer, &alen) == 0)
		q.peer_len = alen;
	if (lseek(mfd, sizeof(q), SEEK_SET) < 0)
		return -errno;
	r = peek_from_start(fd, &saved_off);
	if (r < 0)
		return r;
	r = save_all(fd, mfd, &q, note_fd);
	peek_done(fd, saved_off);
	if (r == 0 && pwrite(mfd, &q, sizeof(q), 0) != sizeof(q))
		r = -EIO;
	return r;
}

/*
 * If this process saves socket ino: *memfd gets its struct
 * ckpt_unix_queue and queued messages (owned by pipes.c's round until the
 * image is written), *size their bytes; note_fd is called with each fd a
 * message carries (this process's copy, to record and close later). The
 * queue is left as it was. Else *memfd = -1. 0 or -errno.
 */
int unix_dgram_save_queue(int fd, uint64_t ino, int (*note_fd)(int fd),
			  int *memfd, uint64_t *size)
{
	int r;

	*memfd = -1;
	*size = 0;
	r = round_claim(&(struct round_key){ "sock", 0, ino });
	return r <= 0 ? r : unix_queue_save_claimed(fd, note_fd, memfd, size);
}

int unix_queue_save_claimed(int fd, int (*note_fd)(int fd), int *memfd,
			    uint64_t *size)
{
	int mfd, r;
	off_t end;

	*memfd = -1;
	*size = 0;
	mfd = memfd_create("ckpt-unix-queue", MFD_CLOEXEC);
	r = mfd < 0 ? -errno : save_into(fd, mfd, note_fd);
	end = r == 0 ? lseek(mfd, 0, SEEK_END) : -1;
	if (r == 0 && end < 0)
		r = -errno;
	if (r == 0)
		r = round_keep_memfd(mfd);
	if (r < 0) {
		if (mfd >= 0)
			close(mfd);
		return r;
	}
	*memfd = mfd;
	*size = end;
	return 0;
}
