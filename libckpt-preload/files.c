/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Open file descriptors. Regular files come back by path, flags and
 * offset (their size, mtime and some contents: saved_files.c); files
 * deleted while open come back with their content (saved in the image)
 * in a new unlinked file; character devices are reopened;
 * terminals and pipes/sockets on 0-2 are taken from the restarting side
 * (ckpt_restart's stdio), except the computation's own pseudo-terminals
 * (ptys.c). Pipes inside the computation are drained at
 * the checkpoint and handed over by ckpt_restart (pipes.c). eventfd,
 * timerfd, signalfd, epoll, inotify and pidfds are made again inside the
 * process with their state, epoll last (event_fds.c, inotify.c,
 * pidfds.c). Descriptors
 * sharing one open file description inside the process (dup) come back
 * shared. What is not supported yet is replaced by /dev/null with a
 * warning naming the descriptor.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>
#include "ckpt/copy_range.h"
#include "ckpt/sockaddr_text.h"
#include "ckpt/memfd_name.h"
#include "internal.h"

#define PATH_POOL (1 << 20)

struct saved_fd {
	int fd;
	int kind;		/* enum ckpt_fd_kind */
	int flags, fd_flags;
	int dup_of;		/* index of an earlier fd sharing the file */
	int64_t offset;
	uint64_t size;		/* deleted files: bytes of content */
	uint64_t dev, ino;
	uint32_t path;		/* offset in path_pool */
	int has_termios;	/* a terminal: its settings */
	struct termios termios;
	uint32_t pipe_size;	/* F_GETPIPE_SZ */
	uint32_t mode;		/* FIFO: permission bits */
	uint32_t peer_ino;	/* AF_UNIX pair: the connected peer */
	uint32_t pty_index;	/* CKPT_FD_PTY_MASTER: N of /dev/pts/N */
	uint32_t seals;		/* CKPT_FD_FILE_DELETED: F_GET_SEALS (memfd,
				   tmpfs), 0 if none */
	int sock;		/* CKPT_FD_SOCKET_*, UNIX_STREAM: index in
				   sock_info, else -1 */
	int backlog_of;		/* CKPT_FDF_IN_BACKLOG: the listener's fd */
};

#define SOCK_INFO_MAX 1024

static struct ckpt_socket_info sock_info[SOCK_INFO_MAX];
static int nsock_info;
static int inq_loaded;		/* this round's SIOCINQ batch asked */
/* How long one checkpoint waits, in all, for TCP data in flight to be
 * acknowledged (socket_state_settle). */
#define SETTLE_MS 200
/* How long a holder of a shared event fd waits for the process that puts
 * its state back (they restore at the same time). */
#define SHARED_STATE_WAIT_MS 30000
static int settle_budget_ms;

static struct saved_fd saved[CKPT_MAX_FDS];
static int nsaved;
static char path_pool[PATH_POOL];
static size_t pool_used;

static const char *saved_path(const struct saved_fd *s)
{
	return path_pool + s->path;
}

/* The next saved fd, from saved[*from] on, of a file (regular, deleted
 * or a directory) with this device and inode, its path in *path and its
 * open flags in *flags; -1 when there is none. *from moves past it. */
int files_fd_of_inode(uint64_t dev, uint64_t ino, int *from,
		      const char **path, int *flags)
{
	for (int i = *from; i < nsaved; i++) {
		const struct saved_fd *s = &saved[i];

		if ((s->kind == CKPT_FD_FILE || s->kind == CKPT_FD_FILE_DELETED ||
		     s->kind == CKPT_FD_DIR) && s->dev == dev && s->ino == ino) {
			*path = saved_path(s);
			*flags = s->flags;
			*from = i + 1;
			return s->fd;
		}
	}
	*from = nsaved;
	return -1;
}

static int pool_add(const char *p, uint32_t *off)
{
	size_t len = strlen(p) + 1;

	if (pool_used + len > PATH_POOL)
		return -ENOMEM;
	memcpy(path_pool + pool_used, p, len);
	*off = pool_used;
	pool_used += len;
	return 0;
}

static int is_tty(int fd)
{
	struct termios t;

	return ioctl(fd, TCGETS, &t) == 0;
}

#define MQUEUE_MAGIC 0x19800202	/* the kernel's ipc/mqueue.c */

/* A POSIX message queue (mq_open): a file of the mqueue filesystem. */
int fd_is_mqueue(int fd)
{
	struct statfs fs;

	return fstatfs(fd, &fs) == 0 && fs.f_type == MQUEUE_MAGIC;
}

static int fd_kind(int fd, const struct stat *st, const char *path)
{
	int event_kind = event_fds_kind(path);
	uint32_t index;

	if (event_kind)
		return event_kind;
	/* a POSIX message queue is a file of its own filesystem (no
	 * device), never opened again by its path: not supported yet */
	if (S_ISREG(st->st_mode) && major(st->st_dev) == 0 &&
	    fd_is_mqueue(fd))
		return CKPT_FD_UNSUPPORTED;
	if (S_ISREG(st->st_mode))
		return st->st_nlink == 0 ? CKPT_FD_FILE_DELETED : CKPT_FD_FILE;
	if (S_ISDIR(st->st_mode))
		return CKPT_FD_DIR;
	if (S_ISCHR(st->st_mode)) {
		if (is_tty(fd))
			return ptys_is_master(fd, &index) ? CKPT_FD_PTY_MASTER :
							    CKPT_FD_TTY;
		return strncmp(path, "/dev/", 5) ? CKPT_FD_UNSUPPORTED :
						   CKPT_FD_DEVICE;
	}
	if (S_ISFIFO(st->st_mode) && !pipes_is_outside(st->st_ino))
		return strncmp(path, "pipe:[", 6) ? CKPT_FD_FIFO :
						    CKPT_FD_PIPE;
	if (fd <= 2)
		return CKPT_FD_STDIO_INHERIT;
	return CKPT_FD_UNSUPPORTED;
}

static int same_description(pid_t pid, int a, int b)
{
	return syscall(SYS_kcmp, pid, pid, KCMP_FILE, a, b) == 0;
}

static void find_dup(struct saved_fd *s, pid_t pid)
{
	s->dup_of = -1;
	for (int i = 0; i < nsaved; i++)
		if (saved[i].dev == s->dev && saved[i].ino == s->ino &&
		    same_description(pid, saved[i].fd, s->fd)) {
			s->dup_of = i;
			return;
		}
}

static int is_event_fd(int kind)
{
	return kind == CKPT_FD_EVENTFD || kind == CKPT_FD_TIMERFD ||
	       kind == CKPT_FD_SIGNALFD || kind == CKPT_FD_EPOLL ||
	       kind == CKPT_FD_INOTIFY || kind == CKPT_FD_PIDFD;
}

/* Event fds whose one open file description several processes may hold
 * and a restart can make once for all (restart/restart_files.c):
 * a signalfd reads its reader's signals, an inotify's watches and a
 * pidfd's process are per-process things. */
static int is_shareable_event_fd(int kind)
{
	return kind == CKPT_FD_EVENTFD || kind == CKPT_FD_TIMERFD ||
	       kind == CKPT_FD_EPOLL;
}

/* An event fd whose state cannot be read is replaced by /dev/null. One
 * of the kinds made again in each process, inherited from the parent:
 * said. */
static void save_event_fd(struct saved_fd *s, const char *path)
{
	pid_t ppid = syscall(SYS_getppid);
	int r = event_fds_save(s->fd, s->kind);

	if (r < 0) {
		ckpt_log("fd %d (%s): reading its state failed: %s; a restart "
			 "puts /dev/null in its place", s->fd, path,
			 strerror(-r));
		s->kind = CKPT_FD_UNSUPPORTED;
		return;
	}
	/* a pidfd holds no state two copies could disagree on */
	if (ppid > 1 && s->kind != CKPT_FD_PIDFD &&
	    !is_shareable_event_fd(s->kind) && syscall(SYS_kcmp, ckpt_real_getpid(), ppid, KCMP_FILE, s->fd,
		    s->fd) == 0)
		unrestored_add("fd %d: %s (%s): shared with the parent process "
			       "(vpid %d): a restart gives each process its "
			       "own copy", s->fd, event_fds_name(s->kind),
			       path, ckpt.vppid);
}

static int is_tcp(const struct ckpt_socket_info *si)
{
	return (si->family == AF_INET || si->family == AF_INET6) &&
	       si->type == SOCK_STREAM;
}

/* Bytes this process sent on a TCP connection are in the peer's queue
 * before any image is written, or said to be lost. */
static void settle_tcp(const struct saved_fd *s)
{
	int left = socket_state_settle(s->fd, &settle_budget_ms);
	char what[512];

	/* a receiver on this host moves them (tcp_refill.c) */
	if (!left || tcp_refill_note_stuck(s->fd, &sock_info[s->sock]) ||
	    sockets_describe(s->fd, what, sizeof(what)) < 0)
		return;
	unrestored_add("fd %d: %s: %d bytes sent and not yet received by "
		       "the peer; a restart loses them if the peer is in the "
		       "computation", s->fd, what, left);
}

/* The first socket of a checkpoint loads the TCP sockets' table
 * (tcp_diag.c). */
static int tcp_table_loaded;

/* socket_state_save, from the TCP table when it lists the socket. */
static int save_socket_state(int fd, uint64_t ino,
			     const struct tcp_diag_entry **e)
{
	struct ckpt_socket_info *si = &sock_info[nsock_info];
	int kind;

	if (!tcp_table_loaded) {
		tcp_diag_load();
		tcp_table_loaded = 1;
	}
	*e = tcp_diag_find(ino);
	kind = *e ? socket_state_save_tcp(fd, *e, si) : -1;
	if (kind < 0) {
		*e = NULL;
		kind = socket_state_save(fd, ino, si);
	}
	return kind;
}

/* A socket: a connected Unix stream end (its peer may be restarted with
 * it), or one socket_state.c restores alone. On fds 0-2 only a
 * connection is saved as such (an inetd-style server's child, git
 * daemon's, socat EXEC's, talks to a client of the computation on its
 * stdin and stdout); restored without its peer it is the restarting
 * side's stdio, like a listener or bound socket there. */
static void note_socket(struct saved_fd *s, const struct stat *st)
{
	const struct tcp_diag_entry *e = NULL;
	int kind = 0, pair;

	if (nsock_info < SOCK_INFO_MAX)
		kind = save_socket_state(s->fd, st->st_ino, &e);
	if (kind)
		s->sock = nsock_info++;
	/* an INET socket is no Unix pair: no more system calls to ask */
	if (kind && sock_info[s->sock].family != AF_UNIX)
		pair = 0;
	else if (sockets_unix_stream_peer(s->fd, st->st_ino, &s->peer_ino) ==
		 1)
		pair = CKPT_FD_UNIX_STREAM;
	else
		pair = unix_dgram_kind(s->fd, st->st_ino, &s->peer_ino);
	if (pair > 0)
		s->kind = pair;
	else if (kind && (s->fd > 2 || kind == CKPT_FD_SOCKET_OUTSIDE))
		s->kind = kind;
	/* the table's send queue is the one SIOCOUTQ reads: none to wait
	 * for when it was empty (the process is stopped) */
	if (s->kind == CKPT_FD_SOCKET_OUTSIDE && is_tcp(&sock_info[s->sock]) &&
	    (!e || e->wqueue))
		settle_tcp(s);
}

static int save_one_fd(int fd, pid_t pid)
{
	struct saved_fd *s = &saved[nsaved];
	char link[64], path[4096];
	int regenerated;
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st) < 0)
		return 0; /* closed meanwhile */
	/* a socket's link says only its inode: no readlink (thousands of
	 * sockets) */
	ckpt_fmt(link, sizeof(link), "/proc/self/fd/%d", fd);
	if (S_ISSOCK(st.st_mode)) {
		ckpt_fmt(path, sizeof(path), "socket:[%llu]",
			 (unsigned long long)st.st_ino);
		n = strlen(path);
	} else {
		n = syscall(SYS_readlinkat, AT_FDCWD, link, path,
			    sizeof(path) - 1);
	}
	if (n < 0)
		return 0;
	path[n] = 0;
	/* /proc paths are kept with virtual pids; a status file served
	 * with virtual pids is opened again (and translated) at restart. */
	regenerated = proc_paths_saved_path(path, sizeof(path));
	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->kind = regenerated ? CKPT_FD_FILE : fd_kind(fd, &st, path);
	s->flags = fcntl(fd, F_GETFL);
	if (regenerated)	/* the memfd itself, caught being filled */
		s->flags = (s->flags & ~O_ACCMODE) | O_RDONLY;
	s->fd_flags = fcntl(fd, F_GETFD);
	s->offset = S_ISSOCK(st.st_mode) ? -1 : lseek(fd, 0, SEEK_CUR);
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	s->sock = -1;
	if (S_ISSOCK(st.st_mode))
		note_socket(s, &st);
	s->size = s->kind == CKPT_FD_FILE_DELETED ? (uint64_t)st.st_size : 0;
	if (s->kind == CKPT_FD_FILE_DELETED) {
		int seals = fcntl(fd, F_GET_SEALS);

		s->seals = seals > 0 ? (uint32_t)seals : 0;
	}
	/* size, mtime and maybe content (saved_files.c) */
	if (s->kind == CKPT_FD_FILE && !regenerated)
		saved_files_note_fd(fd, path, &st, s->flags);
	if (s->kind == CKPT_FD_PTY_MASTER)
		ptys_is_master(fd, &s->pty_index);
	s->has_termios = s->kind == CKPT_FD_TTY &&
			 ioctl(fd, TCGETS, &s->termios) == 0;
	if (s->kind == CKPT_FD_PIPE || s->kind == CKPT_FD_FIFO)
		s->pipe_size = fcntl(fd, F_GETPIPE_SZ);
	s->mode = st.st_mode & 07777;
	if (pool_add(path, &s->path) < 0)
		return -ENOMEM;
	find_dup(s, pid);
	if (is_event_fd(s->kind) && s->dup_of < 0)
		save_event_fd(s, path);
	if (s->kind == CKPT_FD_UNSUPPORTED)	/* restore_one_fd's default */
		unrestored_fd(fd, path);
	nsaved++;
	return 0;
}

static int may_share_with_parent(int kind);

/* The record of fd saved by this round, NULL if none: the records are in
 * fd order until fds in flight are added (the write phase). */
static const struct saved_fd *saved_record(int fd)
{
	int lo = 0, hi = nsaved;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (saved[mid].fd == fd)
			return &saved[mid];
		if (saved[mid].fd < fd)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Whether this round saved fd as a TCP or UDP socket (peer_creds.c asks:
 * no need to ask the kernel again). */
int files_saved_inet_socket(int fd)
{
	const struct saved_fd *s = saved_record(fd);

	return s && s->sock >= 0 && sock_info[s->sock].family != AF_UNIX;
}

/* The saved kind of fd, 0 if it is not saved. */
static int saved_kind(int fd)
{
	for (int i = 0; i < nsaved; i++)
		if (saved[i].fd == fd)
			return saved[i].kind;
	return 0;
}

/* A socket whose queue one process saves (save_queue): only one shared
 * with another process needs a claim to decide which. */
static int has_claimed_queue(int kind)
{
	return kind == CKPT_FD_SOCKET_OUTSIDE || kind == CKPT_FD_SOCKET_BOUND;
}

/* A TCP or Unix stream listener: whether another process holds it
 * decides who may take the connections waiting in its queue
 * (save_backlog). */
static int is_stream_listener(const struct saved_fd *s)
{
	const struct ckpt_socket_info *si;

	if (s->kind != CKPT_FD_SOCKET_LISTEN || s->sock < 0)
		return 0;
	si = &sock_info[s->sock];
	return is_tcp(si) || (si->family == AF_UNIX && si->type == SOCK_STREAM);
}

/* List the fds other processes may share in the round's table; without
 * it only sharing with the parent is found. */
static void publish_shareable(void)
{
	int r = 0;

	for (int i = 0; i < nsaved && r == 0; i++)
		if (saved[i].dup_of < 0 &&
		    (may_share_with_parent(saved[i].kind) ||
		     is_shareable_event_fd(saved[i].kind) ||
		     has_claimed_queue(saved[i].kind) ||
		     is_stream_listener(&saved[i])))
			r = shared_add(saved[i].fd, saved[i].dev, saved[i].ino);
	if (r == 0)
		r = shared_publish();
	if (r < 0)
		ckpt_log("cannot list the open files in the checkpoint "
			 "directory: %s; only those shared with the parent "
			 "process will be restored shared", strerror(-r));
}

static int files_save(void)
{
	pid_t pid = ckpt_real_getpid();
	struct ckpt_dir_iter it;
	int fd, r;

	nsaved = 0;
	nsock_info = 0;
	tcp_table_loaded = 0;
	inq_loaded = 0;
	settle_budget_ms = SETTLE_MS;
	pool_used = 0;
	multicast_prune();
	accept_queue_round_begin();
	event_fds_begin();
	r = ckpt_dir_open(&it, "/proc/self/fd");
	if (r < 0)
		return r;
	while (r == 0 && (fd = ckpt_dir_next_number(&it)) >= 0) {
		if (fd == it.fd || ckpt_is_own_fd(fd))
			continue;
		if (nsaved == CKPT_MAX_FDS)
			r = -EMFILE;
		else
			r = save_one_fd(fd, pid);
	}
	ckpt_dir_close(&it);
	if (r == 0)
		file_locks_note();
	socket_state_read_deferred();
	tcp_diag_release();
	if (r == 0)
		event_fds_check_interest(pid, saved_kind);
	if (r == 0)
		publish_shareable();
	return r;
}


/* The file of a record, open for reading whatever the fd's access mode
 * (a log opened O_WRONLY), closed once the image is written. */
static int readable_copy(const struct saved_fd *s)
{
	char proc[64];
	int fd, r;

	if ((s->flags & O_ACCMODE) != O_WRONLY)
		return s->fd;
	ckpt_fmt(proc, sizeof(proc), "/proc/self/fd/%d", s->fd);
	fd = open(proc, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = round_keep_memfd(fd);
	if (r < 0)
		close(fd);
	return r < 0 ? r : fd;
}

/* Connected Unix sockets remade as pairs by ckpt_restart. */
static int is_unix_pair(int kind)
{
	return kind == CKPT_FD_UNIX_STREAM || kind == CKPT_FD_UNIX_DGRAM ||
	       kind == CKPT_FD_UNIX_SEQPACKET;
}

/* An fd received from a queued SCM_RIGHTS message (unix_dgram.c): saved
 * like the process's own, closed once the image is written. */
static int note_in_flight(int fd)
{
	int r;

	if (nsaved == CKPT_MAX_FDS) {
		close(fd);
		return -EMFILE;
	}
	r = save_one_fd(fd, ckpt_real_getpid());
	if (r < 0 || saved[nsaved - 1].fd != fd) {
		close(fd);
		return r < 0 ? r : -EBADF;
	}
	saved[nsaved - 1].fd_flags |= CKPT_FDF_IN_FLIGHT;
	return 0;
}

/* A connection taken from a listener's queue (accept_queue.c): saved
 * like the process's own, kept open (the program accepts it later). */
static int note_in_backlog(int conn, int listener)
{
	int r;

	if (nsaved == CKPT_MAX_FDS)
		return -EMFILE;
	r = save_one_fd(conn, ckpt_real_getpid());
	if (r < 0 || saved[nsaved - 1].fd != conn)
		return r < 0 ? r : -EBADF;
	saved[nsaved - 1].fd_flags |= CKPT_FDF_IN_BACKLOG;
	saved[nsaved - 1].backlog_of = listener;
	return 0;
}

static int has_reuseport(int fd)
{
	int on = 0;
	socklen_t len = sizeof(on);

	return getsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, &len) == 0 && on;
}

/* The connections waiting in the queue of a TCP or Unix stream
 * listener, saved by the one process holding it that claims them
 * (accept_queue.c). */
static int save_backlog(const struct saved_fd *s)
{
	struct pollfd p = { .fd = s->fd, .events = POLLIN };
	int r;

	if (!is_stream_listener(s) || s->dup_of >= 0)
		return 0;
	if (shared_group_of(s->fd) != 0)
		accept_queue_note_shared();
	if (poll(&p, 1, 0) != 1 || !(p.revents & POLLIN))
		return 0;
	if (has_reuseport(s->fd)) {
		unrestored_add("fd %d (%s): connections wait to be accepted "
			       "by this TCP listener, which has SO_REUSEPORT "
			       "(a stand-in could land in another socket of "
			       "its group): they are not saved, a restart "
			       "loses them", s->fd, saved_path(s));
		return 0;
	}
	if (shared_group_of(s->fd) != 0) {
		r = round_claim(&(struct round_key){ "backlog", 0, s->ino });
		if (r < 0)
			ckpt_log("fd %d (%s): %s; the connections waiting to "
				 "be accepted are not saved", s->fd,
				 saved_path(s), round_claim_failure());
		if (r <= 0)
			return 0;
	}
	r = accept_queue_save(s->fd, note_in_backlog);
	if (r < 0)
		ckpt_log("fd %d (%s): saving the connections waiting to be "
			 "accepted failed: %s", s->fd, saved_path(s),
			 strerror(-r));
	return r;
}

static void close_in_flight(void)
{
	for (int i = 0; i < nsaved; i++)
		if (saved[i].fd_flags & CKPT_FDF_IN_FLIGHT)
			close(saved[i].fd);
}

static int is_socket_state(int kind)
{
	return kind == CKPT_FD_SOCKET_LISTEN || kind == CKPT_FD_SOCKET_BOUND ||
	       kind == CKPT_FD_SOCKET_OUTSIDE;
}

static int is_udp(const struct ckpt_socket_info *si)
{
	return (si->family == AF_INET || si->family == AF_INET6) &&
	       si->type == SOCK_DGRAM && si->protocol == IPPROTO_UDP;
}

/* A TCP connection: the bytes waiting to be read, after the struct; a
 * UDP socket: the datagrams waiting (udp_queue.c). By one process per
 * socket (its peer may be restarted with it). */
static int save_queue(const struct saved_fd *s, int mfd,
		      struct ckpt_socket_info *si, uint64_t *size)
{
	int tcp = s->kind == CKPT_FD_SOCKET_OUTSIDE && is_tcp(si);
	uint64_t queued = 0;
	int r;

	if (!tcp && !is_udp(si))
		return 0;
	/* a socket no other process holds is ours to save: no claim file
	 * (one per socket per round was most of a checkpoint's cost with
	 * many connections: docs/performance.md) */
	if (shared_group_of(s->fd) != 0) {
		r = round_claim(&(struct round_key){ "sock", 0, s->ino });
		if (r <= 0)
			return r;
	}
	r = tcp ? tcp_refill_save_queue(s->fd, si, mfd, &queued) :
		  udp_queue_save(s->fd, mfd, &queued, &si->ndgrams);
	if (r < 0)
		return r;
	si->flags |= tcp ? CKPT_SOCK_F_QUEUE : CKPT_SOCK_F_DGRAMS;
	*size += queued;
	return 0;
}

/* The bytes waiting to be read on every TCP connection saved, asked of
 * all at once at the first record written (SIOCINQ through io_uring,
 * sockopt_batch.c; every process of the computation is stopped by now,
 * so no more arrive from a peer inside it): 2,000 FIONREAD system calls
 * fewer for 1,000 connections (docs/performance.md). An entry with
 * siocinq 0 was not asked. */
static struct sockopt_read inq_read[SOCK_INFO_MAX];
static int inq_sock[SOCK_INFO_MAX];

static struct sockopt_read *inq_read_at(size_t i)
{
	return &inq_read[inq_sock[i]];
}

static void load_tcp_inq(void)
{
	size_t n = 0;

	inq_loaded = 1;
	memset(inq_read, 0, sizeof(inq_read));
	for (int i = 0; i < nsaved; i++) {
		const struct saved_fd *s = &saved[i];

		if (s->kind != CKPT_FD_SOCKET_OUTSIDE || s->dup_of >= 0 ||
		    s->sock < 0 || !is_tcp(&sock_info[s->sock]))
			continue;
		inq_read[s->sock].fd = s->fd;
		inq_read[s->sock].siocinq = 1;
		inq_sock[n++] = s->sock;
	}
	sockopt_batch_read(inq_read_at, n);
}

/* FIONREAD of s, from the batch when it answered. */
static int tcp_bytes_to_read(const struct saved_fd *s, int *queued)
{
	const struct sockopt_read *rd = &inq_read[s->sock];

	if (!inq_loaded)
		load_tcp_inq();
	if (rd->siocinq && rd->fd == s->fd && rd->res >= 0) {
		*queued = rd->res;
		return 0;
	}
	return ioctl(s->fd, FIONREAD, queued);
}

/* A TCP connection only this process holds with nothing waiting to be
 * read (most of them, most of the time): its record is the struct alone,
 * written from memory; no claim, memfd or peek (no system call here
 * instead of about ten; docs/performance.md). */
static int tcp_queue_empty(const struct saved_fd *s,
			   const struct ckpt_socket_info *si)
{
	int queued = -1;

	return s->kind == CKPT_FD_SOCKET_OUTSIDE && is_tcp(si) &&
	       shared_group_of(s->fd) == 0 &&
	       tcp_bytes_to_read(s, &queued) == 0 && queued == 0;
}

/* Whether a socket record takes bytes read from the socket (a TCP
 * queue, UDP datagrams), else it is the struct alone (*mem). */
static int socket_record_in_memory(const struct saved_fd *s,
				   const void **mem)
{
	struct ckpt_socket_info *si = &sock_info[s->sock];

	if (tcp_queue_empty(s, si))
		si->flags |= CKPT_SOCK_F_QUEUE;
	else if (is_udp(si) ||
		 (s->kind == CKPT_FD_SOCKET_OUTSIDE && is_tcp(si)))
		return 0;
	*mem = si;
	return 1;
}

/* The struct ckpt_socket_info of a socket record, in a memfd. */
static int socket_info_memfd(const struct saved_fd *s, uint64_t *size)
{
	struct ckpt_socket_info si = sock_info[s->sock];
	int mfd = memfd_create("ckpt-socket-info", MFD_CLOEXEC), r;

	if (mfd < 0)
		return -errno;
	*size = sizeof(si);
	r = lseek(mfd, sizeof(si), SEEK_SET) < 0 ? -errno :
	    save_queue(s, mfd, &si, size);
	if (r == 0 && pwrite(mfd, &si, sizeof(si), 0) != sizeof(si))
		r = -EIO;
	if (r == 0)
		r = round_keep_memfd(mfd);
	if (r < 0) {
		close(mfd);
		ckpt_log("fd %d (%s): saving the socket's address and queue "
			 "failed: %s", s->fd, saved_path(s), strerror(-r));
		return r;
	}
	return mfd;
}

/* The messages queued on a Unix socket, with the fds they carry
 * (unix_dgram.c), if this process saves them. */
static int save_messages(struct saved_fd *s, uint64_t *size)
{
	int memfd, r;

	r = unix_dgram_save_queue(s->fd, s->ino, note_in_flight, &memfd, size);
	if (r < 0) {
		ckpt_log("fd %d (%s): saving the messages queued on the socket "
			 "failed: %s", s->fd, saved_path(s), strerror(-r));
		return r;
	}
	if (memfd >= 0 && s->kind == CKPT_FD_UNIX_STREAM)
		s->fd_flags |= CKPT_FDF_MESSAGES;
	return memfd;
}

/* A Unix stream end's queue: as messages when fds or credentials travel
 * in it, else as bytes; by the one process that claims the socket. The
 * claim comes before any look at the queue: a peek moves the socket's
 * peek offset, which every process holding the socket shares, and two
 * processes peeking at once saved the queue from its middle or failed
 * with EAGAIN (a multiprocessing Pipe shared by parent and child). */
static int unix_stream_content(struct saved_fd *s, uint64_t *size)
{
	int memfd = -1, r;

	*size = 0;
	r = round_claim(&(struct round_key){ "sock", 0, s->ino });
	if (r <= 0)
		return r < 0 ? r : -1;
	r = unix_stream_needs_messages(s->fd);
	if (r > 0) {
		r = unix_queue_save_claimed(s->fd, note_in_flight, &memfd, size);
		if (r == 0 && memfd >= 0)
			s->fd_flags |= CKPT_FDF_MESSAGES;
	} else if (r == 0) {
		r = sockets_save_stream_bytes(s->fd, &memfd, size);
	}
	if (r < 0) {
		ckpt_log("fd %d (%s): saving the socket's queue failed: %s",
			 s->fd, saved_path(s), strerror(-r));
		return r;
	}
	return memfd;
}

/* Where the content saved with the record comes from: a deleted file
 * itself, the bytes drained from a pipe (every process of the computation
 * is stopped by now), or nothing (-1); a socket record that is only
 * its struct comes from memory (*mem, and -1). */
static int content_of(struct saved_fd *s, uint64_t *size, const void **mem)
{
	int memfd, r;

	*size = s->size;
	*mem = NULL;
	if (s->dup_of >= 0)
		return -1;
	if (s->kind == CKPT_FD_FILE_DELETED)
		return readable_copy(s);
	if (save_backlog(s) < 0)
		return -EIO;
	if (is_socket_state(s->kind) && socket_record_in_memory(s, mem)) {
		*size = sizeof(sock_info[0]);
		return -1;
	}
	if (is_socket_state(s->kind))
		return socket_info_memfd(s, size);
	if (s->kind == CKPT_FD_PTY_MASTER) {
		memfd = ptys_save_info(s->fd, s->pty_index, size);
		if (memfd < 0)
			ckpt_log("fd %d (%s): reading the pseudo-terminal's "
				 "settings failed: %s", s->fd, saved_path(s),
				 strerror(-memfd));
		return memfd;
	}
	if (s->kind == CKPT_FD_UNIX_STREAM)
		return unix_stream_content(s, size);
	if (s->kind == CKPT_FD_UNIX_DGRAM || s->kind == CKPT_FD_UNIX_SEQPACKET)
		return save_messages(s, size);
	if (s->kind != CKPT_FD_PIPE && s->kind != CKPT_FD_FIFO)
		return -1;
	r = pipes_drain(s->fd, &(struct round_key){
				s->kind == CKPT_FD_FIFO ? "fifo" : "pipe",
				s->kind == CKPT_FD_FIFO ? s->dev : 0, s->ino },
			&memfd, size);
	if (r < 0) {
		ckpt_log("fd %d (%s): draining the pipe failed: %s", s->fd,
			 saved_path(s), strerror(-r));
		return r;
	}
	return memfd;
}

static int may_share_with_parent(int kind)
{
	return kind == CKPT_FD_FILE || kind == CKPT_FD_DIR ||
	       kind == CKPT_FD_DEVICE;
}

/* The group of processes sharing this open file description
 * (shared_files.c); if that is unknown, 1 + fd when the parent process
 * holds it at the same number (inherited across fork), else 0. Called
 * when every process of the computation is stopped. kcmp needs no
 * privilege between processes of one user. */
static uint32_t sharing(const struct saved_fd *s)
{
	pid_t ppid = syscall(SYS_getppid);
	int64_t group;

	if (s->dup_of >= 0 || !may_share_with_parent(s->kind))
		return 0;
	group = shared_group_of(s->fd);
	if (group >= 0)
		return group;
	if (ppid <= 1)
		return 0;
	return syscall(SYS_kcmp, ckpt_real_getpid(), ppid, KCMP_FILE, s->fd,
		       s->fd) == 0 ? (uint32_t)s->fd + 1 : 0;
}

/* A deleted file's record names its inode, so that ckpt_restart makes
 * one file for the records of every process holding it
 * (restart/restart_deleted_files.c). */
static uint32_t deleted_file_tag(const struct saved_fd *s)
{
	return CKPT_FD_SHARE_GROUP | (uint32_t)(s->ino & ~CKPT_FD_SHARE_GROUP);
}

/* An event fd's state summary and, when other processes hold its
 * description, its share group (CKPT_FDF_SHARED_EVENT). */
static void describe_event_fd(const struct saved_fd *s,
			      struct ckpt_fd_info *fi)
{
	int64_t group;

	event_fds_describe(s->dup_of >= 0 ? saved[s->dup_of].fd : s->fd,
			   &fi->offset, &fi->event_info);
	if (s->dup_of >= 0 || !is_shareable_event_fd(s->kind))
		return;
	group = shared_group_of(s->fd);
	if (group > 0) {
		fi->fd_flags |= CKPT_FDF_SHARED_EVENT;
		fi->data_hash = (uint64_t)group;
	}
}

/*
 * Once every process of the checkpoint is stopped (the drain phase):
 * what another process holding the same open file description may have
 * changed after this one stopped is read again, so that the image holds
 * the state of one moment: a file's offset, an eventfd's counter, a
 * timerfd, an epoll's interest list. Without it a parent that wrote a
 * shared eventfd and changed a shared epoll entry between the child's
 * stop and its own came back with the child's older reading, and both
 * waited for each other (test_event_fds_shared_after_fork).
 */
static int files_drain(void)
{
	pid_t pid = ckpt_real_getpid();

	for (int i = 0; i < nsaved; i++) {
		struct saved_fd *s = &saved[i];
		off_t off;
		int r;

		if (s->dup_of >= 0)
			continue;
		if (may_share_with_parent(s->kind) && s->offset >= 0 &&
		    (off = lseek(s->fd, 0, SEEK_CUR)) >= 0)
			s->offset = off;
		if (!is_shareable_event_fd(s->kind))
			continue;
		r = event_fds_refresh(s->fd, pid, saved_kind);
		if (r < 0)
			ckpt_log("fd %d (%s): reading its state again once "
				 "every process stopped failed: %s; the image "
				 "holds the state when this process stopped",
				 s->fd, saved_path(s), strerror(-r));
	}
	return 0;
}

static int files_write(struct image_writer *w)
{
	int shared = shared_resolve(), r;

	if (shared < 0 && shared != -ENOENT)
		ckpt_log("cannot read the open files other processes share: "
			 "%s; only those shared with the parent process will "
			 "be restored shared", strerror(-shared));
	r = 0;
	/* nsaved grows while fds in flight are found */
	for (int i = 0; i < nsaved && r == 0; i++) {
		struct saved_fd *s = &saved[i];
		struct ckpt_fd_info fi;
		const void *mem;
		uint64_t size;
		int content = content_of(s, &size, &mem);

		if (content < -1) {
			r = content;
			break;
		}
		memset(&fi, 0, sizeof(fi));
		fi.fd = s->fd;
		fi.kind = s->kind;
		fi.flags = s->flags;
		fi.fd_flags = s->fd_flags;
		/* No position on a FIFO: its permission bits instead. */
		fi.offset = s->kind == CKPT_FD_FIFO ? s->mode : s->offset;
		if (s->kind == CKPT_FD_PIPE || s->kind == CKPT_FD_FIFO)
			fi.pipe_size = s->pipe_size;
		else if (is_unix_pair(s->kind))
			fi.peer_ino = s->peer_ino;
		else if (s->kind == CKPT_FD_PTY_MASTER)
			fi.pty_index = s->pty_index;
		else if (is_event_fd(s->kind))
			describe_event_fd(s, &fi);
		else if (s->kind == CKPT_FD_FILE_DELETED)
			fi.share = deleted_file_tag(s);
		else if (s->fd_flags & CKPT_FDF_IN_BACKLOG)
			fi.backlog_of = s->backlog_of;
		else if (!is_socket_state(s->kind) &&
			 !(s->fd_flags & CKPT_FDF_IN_FLIGHT))
			fi.share = sharing(s);
		if (mem)
			r = writer_add_fd_bytes(w, &fi, saved_path(s), mem,
						size);
		else
			r = writer_add_fd(w, &fi, saved_path(s),
					  content >= 0 && size ? content : -1,
					  size);
	}
	close_in_flight();
	accept_queue_post();
	tcp_refill_end_write();
	return r;
}

/* ----- restart ----- */

static int stdio_copy[3] = { -1, -1, -1 };

static int is_saved_fd(int fd)
{
	for (int i = 0; i < nsaved; i++)
		if (saved[i].fd == fd)
			return 1;
	return 0;
}

/* A record of an fd the program did not have at its number: received
 * from a queued message (ckpt_restart sends it again) or taken from a
 * listener's queue (ckpt_restart queues it again). */
static int is_extra_record(const struct saved_fd *s)
{
	return s->fd_flags & (CKPT_FDF_IN_FLIGHT | CKPT_FDF_IN_BACKLOG);
}

/* The lowest number above every saved descriptor (at least 3). */
static int above_saved_fds(void)
{
	int highest = 2;

	for (int i = 0; i < nsaved; i++)
		if (!is_extra_record(&saved[i]) && saved[i].fd > highest)
			highest = saved[i].fd;
	return highest + 1;
}

/* A descriptor number no saved descriptor will need: above them all
 * (one call; searching up from 3 cost a fcntl and a close per number
 * tried, for each of thousands of sockets handed over), else the lowest
 * free one between them (RLIMIT_NOFILE reached). */
static int move_out_of_the_way(int fd)
{
	int n;

	if (fd < 0)
		return fd;
	n = fcntl(fd, F_DUPFD_CLOEXEC, above_saved_fds());
	if (n >= 0) {
		close(fd);
		ckpt_mark_own_fd(n, 1);
		return n;
	}
	n = 3;
	for (;;) {
		n = fcntl(fd, F_DUPFD_CLOEXEC, n);
		if (n < 0)
			return fd;
		if (!is_saved_fd(n))
			break;
		close(n);
		n++;
	}
	close(fd);
	ckpt_mark_own_fd(n, 1);
	return n;
}

/* A handed-over fd (handover.c) stays where it is when no saved fd needs
 * its number: ckpt_restart puts them above the saved ones when it can.
 * No close-on-exec needed: handover_close_all closes them all before
 * the program runs. */
static int handed_floor;

static int keep_handed_fd(int fd)
{
	if (fd >= handed_floor) {
		ckpt_mark_own_fd(fd, 1);
		return fd;
	}
	return move_out_of_the_way(fd);
}

static int place_fd(int newfd, int fd)
{
	if (newfd < 0)
		return -errno;
	if (newfd != fd) {
		if (dup2(newfd, fd) < 0) {
			int e = errno;

			close(newfd);
			return -e;
		}
		close(newfd);
	}
	return 0;
}

static int open_dev_null(int fd)
{
	return place_fd(open("/dev/null", O_RDWR), fd);
}

/* Look up where the image keeps a deleted file's content. */
static int find_blob(int image_fd, int fd, uint64_t *off, uint64_t *size)
{
	struct ckpt_image_header h;
	struct ckpt_fd_info fi;

	if (pread(image_fd, &h, sizeof(h), 0) != sizeof(h))
		return -EIO;
	for (uint32_t i = 0; i < h.nfds; i++) {
		if (pread(image_fd, &fi, sizeof(fi),
			  h.fds_offset + i * sizeof(fi)) != sizeof(fi))
			return -EIO;
		if (fi.fd == fd && fi.kind == CKPT_FD_FILE_DELETED) {
			*off = fi.data_offset;
			*size = fi.data_size;
			return 0;
		}
	}
	return -ENOENT;
}

/*
 * Deleted files made again in this restore, by their device and inode at
 * the checkpoint: a second description of one (the program opened it twice)
 * and its MAP_SHARED mappings reach the same new file, not a copy each.
 * An fd to a memfd and a mapping of it were two objects after a restart:
 * what the program wrote through one, the other did not see.
 */
#define RECREATED_MAX 64
static struct {
	uint64_t dev, ino;
	int fd;		/* O_RDWR, libckpt's, closed after the restore */
} recreated[RECREATED_MAX];
static int nrecreated;

static int recreated_fd(const struct saved_fd *s)
{
	for (int i = 0; i < nrecreated; i++)
		if (recreated[i].dev == s->dev && recreated[i].ino == s->ino)
			return recreated[i].fd;
	return -1;
}

static void forget_recreated(void)
{
	for (int i = 0; i < nrecreated; i++) {
		ckpt_mark_own_fd(recreated[i].fd, 0);
		close(recreated[i].fd);
	}
	nrecreated = 0;
}

/* A new file for the saved content: a memfd of the same name (sealable:
 * the seals are added once it is filled), else an unlinked file in the
 * original directory when it still exists. O_RDWR. */
static int new_deleted_file(const struct saved_fd *s)
{
	char dir[4096], name[250], *slash;
	int fd;

	if (ckpt_memfd_name(saved_path(s), name, sizeof(name)))
		return memfd_create(name, MFD_ALLOW_SEALING);
	ckpt_fmt(dir, sizeof(dir), "%s", saved_path(s));
	slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	fd = open(dir, O_TMPFILE | O_RDWR, 0600);
	return fd >= 0 ? fd : memfd_create("ckpt-deleted-file",
					   MFD_ALLOW_SEALING);
}

/* The new file rw (O_RDWR) of the deleted file s: its seals are added,
 * its shared mappings in this process become mappings of it, and it is
 * kept for the other descriptions of the same file. */
static void adopt_recreated(const struct saved_fd *s, int rw)
{
	int kept;

	/* sealed first: a MAP_SHARED mapping of a write-sealed file may not
	 * become writable (the kernel clears VM_MAYWRITE), as before */
	if (s->seals && fcntl(rw, F_ADD_SEALS, (int)s->seals) < 0 &&
	    errno != EPERM)	/* already sealed (F_SEAL_SEAL) */
		ckpt_log("fd %d (%s): adding its seals %#x again: %s", s->fd,
			 saved_path(s), s->seals, strerror(errno));
	shared_memory_attach_file(s->dev, s->ino, rw);
	if (nrecreated == RECREATED_MAX)
		return;
	kept = move_out_of_the_way(fcntl(rw, F_DUPFD_CLOEXEC, 3));
	if (kept >= 0)
		recreated[nrecreated++] = (typeof(recreated[0])){ s->dev, s->ino,
								  kept };
}

/* A description of the file open in fd (magic link), with s's flags. */
static int reopen_as(const struct saved_fd *s, int fd)
{
	char proc[64];
	int r;

	ckpt_fmt(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	/* O_NOFOLLOW, kept by F_GETFL, would refuse the magic link */
	r = open(proc, CKPT_FD_REOPEN_FLAGS(s->flags) & ~O_NOFOLLOW);
	return r < 0 ? -errno : r;
}

/* A new unlinked file with the saved content (see new_deleted_file), or
 * another description of the one made already. */
static int recreate_deleted(const struct saved_fd *s, int image_fd)
{
	uint64_t off, size;
	int tmp = recreated_fd(s), fd, r;

	if (tmp >= 0)
		return reopen_as(s, tmp);
	r = find_blob(image_fd, s->fd, &off, &size);
	if (r < 0)
		return r;
	tmp = new_deleted_file(s);
	if (tmp < 0)
		return -errno;
	r = ckpt_copy_range(image_fd, off, size, tmp);
	if (r == 0 && (uint64_t)lseek(tmp, 0, SEEK_END) < s->size &&
	    ftruncate(tmp, (off_t)s->size) < 0)
		r = -errno;
	if (r < 0) {
		close(tmp);
		return r;
	}
	adopt_recreated(s, tmp);
	fd = reopen_as(s, tmp);
	close(tmp);
	return fd;
}

/* A deleted file ckpt_restart made, because other processes hold it too:
 * this process's mappings of it and its seals, as above. */
static void adopt_handed_deleted(const struct saved_fd *s, int handed)
{
	int rw;

	if (recreated_fd(s) >= 0)
		return;
	rw = reopen_as(&(struct saved_fd){ .flags = O_RDWR }, handed);
	if (rw < 0)
		return;
	adopt_recreated(s, rw);
	close(rw);
}

static int restarting_tty(void)
{
	for (int i = 0; i < 3; i++)
		if (stdio_copy[i] >= 0 && is_tty(stdio_copy[i]))
			return stdio_copy[i];
	return -1;
}

/* The program's terminal modes (raw, no echo, ...) come back on the
 * restarting terminal, once; full-screen programs then get SIGWINCH to
 * redraw (sent when the threads run again, restore.c). */
static int terminal_restored;

static void restore_terminal_settings(const struct saved_fd *s)
{
	if (!s->has_termios || terminal_restored)
		return;
	if (ioctl(s->fd, TCSETS, &s->termios) < 0)
		ckpt_log("fd %d: cannot restore the terminal settings: %s",
			 s->fd, strerror(errno));
	terminal_restored = 1;
}

int files_restored_a_terminal(void)
{
	return terminal_restored;
}

static int reopen_flags(const struct saved_fd *s)
{
	return CKPT_FD_REOPEN_FLAGS(s->flags);
}

static int inherit_stdio(int fd)
{
	if (fd > 2 || stdio_copy[fd] < 0)
		return open_dev_null(fd);
	if (dup2(stdio_copy[fd], fd) < 0)
		return -errno;
	pipes_set_outside(fd);
	return 0;
}

/* Put a handed-over end at the saved number with the saved status
 * flags (O_NONBLOCK: ckpt_restart opened FIFOs non-blocking). */
static int take_handed(int end, const struct saved_fd *s)
{
	if (dup2(end, s->fd) < 0 || fcntl(s->fd, F_SETFL, s->flags) < 0)
		return -errno;
	return 0;
}

/* The end ckpt_restart handed over, with the saved status flags; a pipe
 * it did not recreate led outside the computation: stdio. */
static int restore_pipe_end(const struct saved_fd *s)
{
	int end = handover_pipe_end(s->ino, (s->flags & O_ACCMODE) == O_WRONLY);

	if (end < 0 && s->fd <= 2)
		return inherit_stdio(s->fd);
	if (end < 0) {
		ckpt_log("fd %d (%s): the pipe was not recreated (restart all "
			 "images of the checkpoint with one ckpt_restart); it "
			 "is replaced by /dev/null", s->fd, saved_path(s));
		return open_dev_null(s->fd);
	}
	return take_handed(end, s);
}

/* The description ckpt_restart opened on the FIFO for this fd's access
 * mode (restart/restart_fifos.c), refilled. */
static int restore_fifo(const struct saved_fd *s)
{
	int end = handover_shared_file(ckpt.vpid, s->fd);

	if (end < 0) {
		ckpt_log("fd %d (FIFO %s) was not reopened by ckpt_restart "
			 "(restart all images of the checkpoint with one "
			 "ckpt_restart); it is replaced by /dev/null", s->fd,
			 saved_path(s));
		return open_dev_null(s->fd);
	}
	return take_handed(end, s);
}

static void address_words(const uint8_t *addr, uint32_t len, char *out,
			  size_t outlen)
{
	ckpt_sockaddr_text(addr, len, out, outlen);
	if (!out[0])
		ckpt_fmt(out, outlen, "an unnamed address");
}

/* A connection whose peer is not restarted with it comes back closed by
 * that peer (socket_state.c), said in one line. */
static int restore_closed_socket(const struct saved_fd *s)
{
	static const struct ckpt_socket_info unknown = {
		.family = AF_UNIX, .type = SOCK_STREAM,
	};
	const struct ckpt_socket_info *si = s->sock >= 0 ? &sock_info[s->sock]
							 : &unknown;
	char here[160], there[160];

	address_words(si->addr, si->addr_len, here, sizeof(here));
	address_words(si->peer, si->peer_len, there, sizeof(there));
	ckpt_log("%s: fd %d (%s, %s to %s): its peer is not restarted with "
		 "it; the connection reads as closed by the peer", ckpt.program,
		 s->fd, saved_path(s), here, there);
	return socket_state_restore_closed(s->fd, si, s->flags);
}

/* The end ckpt_restart made of the saved pair (Unix stream or TCP);
 * without the peer among the restarted images, stdio on 0-2, else a
 * connection its peer has closed. */
static int restore_socket_end(const struct saved_fd *s)
{
	int end = handover_socket_end(s->ino);

	if (end < 0 && s->fd <= 2)
		return inherit_stdio(s->fd);
	if (end < 0)
		return restore_closed_socket(s);
	return take_handed(end, s);
}

/* A listening or bound socket ckpt_restart made again
 * (restart/restart_listeners.c). */
static int restore_own_socket(const struct saved_fd *s)
{
	int end = handover_socket_end(s->ino);

	if (end < 0) {
		ckpt_log("fd %d (%s) was not recreated by ckpt_restart (restart "
			 "all images of the checkpoint with one ckpt_restart); "
			 "it is replaced by /dev/null", s->fd, saved_path(s));
		return open_dev_null(s->fd);
	}
	return take_handed(end, s);
}

/* The master of the new pty ckpt_restart made (restart_ptys.c). */
static int restore_pty_master(const struct saved_fd *s)
{
	int end = ptys_handed_master(s->pty_index);

	if (end < 0) {
		ckpt_log("fd %d (%s, the master of /dev/pts/%u) was not "
			 "recreated by ckpt_restart (restart all images of the "
			 "checkpoint with one ckpt_restart); it is replaced by "
			 "/dev/null", s->fd, saved_path(s), s->pty_index);
		return open_dev_null(s->fd);
	}
	return take_handed(end, s);
}

/* A socket put back at its number gets its saved options and multicast
 * groups again (not one on 0-2 taken from the restarting side). */
static int with_options(const struct saved_fd *s, int r)
{
	if (r == 0 && s->sock >= 0 && s->fd > 2) {
		socket_state_restore_options(s->fd, &sock_info[s->sock]);
		multicast_rejoin(s->fd, s->ino);
	}
	return r;
}

/* The description ckpt_restart made for every holder of a shared event
 * fd; the holder the plan names puts the saved state in. -ENOENT if
 * there is none. */
static int take_shared_event_fd(const struct saved_fd *s)
{
	int handed = is_shareable_event_fd(s->kind) ?
		     handover_shared_file(ckpt.vpid, s->fd) : -ENOENT;
	int r;

	if (handed < 0 || !handover_sets_state(ckpt.vpid, s->fd))
		return handed;
	r = event_fds_apply(s->fd, handed);
	if (r < 0)
		ckpt_log("fd %d (%s, shared with other processes): putting its "
			 "state back failed: %s; it comes back empty", s->fd,
			 saved_path(s), strerror(-r));
	return handed;
}

/* Made again with its saved state (event_fds.c), at its number, with its
 * status flags (O_NONBLOCK); if the kernel refuses (an alarm clock
 * without CAP_WAKE_ALARM), /dev/null. */
static int restore_event_fd(const struct saved_fd *s)
{
	int r = take_shared_event_fd(s);

	if (r >= 0)
		r = dup2(r, s->fd) < 0 ? -errno : 0;
	else if ((r = event_fds_restore(s->fd)) >= 0)
		r = place_fd(r, s->fd);
	else {
		ckpt_log("fd %d (%s): making it again failed: %s; it is "
			 "replaced by /dev/null", s->fd, saved_path(s),
			 strerror(-r));
		return open_dev_null(s->fd);
	}
	if (r == 0 && fcntl(s->fd, F_SETFL, s->flags) < 0)
		r = -errno;
	return r;
}

static int renew_event_fd(const struct saved_fd *s)
{
	int r = s->dup_of >= 0 ?
		(dup2(saved[s->dup_of].fd, s->fd) < 0 ? -errno : 0) :
		event_fds_restore(s->fd);

	if (r > 0)
		r = place_fd(r, s->fd);
	if (r == 0 && (fcntl(s->fd, F_SETFL, s->flags) < 0 ||
		       fcntl(s->fd, F_SETFD, s->fd_flags & FD_CLOEXEC) < 0))
		r = -errno;
	if (r == 0 && s->kind == CKPT_FD_EPOLL && s->dup_of < 0)
		event_fds_restore_interest(s->fd);
	return r;
}

/* In a copy of a snapshot's template: the eventfd, timerfd and epoll
 * descriptions it shares with the process it replaces are made again
 * with the snapshot's state, as a restart makes them (epoll last, its
 * interest list naming the new ones). */
void files_renew_event_fds(void)
{
	for (int epoll = 0; epoll < 2; epoll++)
		for (int i = 0; i < nsaved; i++) {
			const struct saved_fd *s = &saved[i];
			int r;

			if ((s->kind == CKPT_FD_EPOLL) != epoll ||
			    (s->kind != CKPT_FD_EVENTFD &&
			     s->kind != CKPT_FD_TIMERFD && !epoll))
				continue;
			r = renew_event_fd(s);
			if (r < 0)
				ckpt_log("fd %d (%s): making it again with the "
					 "snapshot's state: %s", s->fd,
					 saved_path(s), strerror(-r));
		}
}

/* 1 if the fd is a shared event fd whose state another process puts
 * back. */
static int state_set_elsewhere(const struct saved_fd *s)
{
	return s->dup_of < 0 && is_shareable_event_fd(s->kind) &&
	       handover_shared_file(ckpt.vpid, s->fd) >= 0 &&
	       !handover_sets_state(ckpt.vpid, s->fd);
}

/* The epoll interest lists this process puts back (a shared one's by the
 * process the plan names), then the shared event fds settled between the
 * processes: first say which states are in, then wait for the others'
 * (in that order, so that no two processes wait for each other). */
static void settle_event_fds(int plan_fd)
{
	for (int i = 0; i < nsaved; i++)
		if (saved[i].kind == CKPT_FD_EPOLL && saved[i].dup_of < 0 &&
		    !state_set_elsewhere(&saved[i]))
			event_fds_restore_interest(saved[i].fd);
	for (int i = 0; i < nsaved; i++)
		if (saved[i].dup_of < 0 && is_shareable_event_fd(saved[i].kind)
		    && handover_sets_state(ckpt.vpid, saved[i].fd))
			handover_state_set(plan_fd, ckpt.vpid, saved[i].fd);
	for (int i = 0; i < nsaved; i++)
		if (state_set_elsewhere(&saved[i]) &&
		    handover_wait_state(plan_fd, ckpt.vpid, saved[i].fd,
					SHARED_STATE_WAIT_MS) < 0)
			ckpt_log("fd %d (%s, shared with other processes): the "
				 "process that puts its state back did not do "
				 "so within %d s; going on", saved[i].fd,
				 saved_path(&saved[i]),
				 SHARED_STATE_WAIT_MS / 1000);
}

static int restore_one_fd(const struct saved_fd *s, int image_fd)
{
	int r, fd = s->fd;

	if (s->dup_of >= 0)
		return dup2(saved[s->dup_of].fd, fd) < 0 ? -errno : 0;
	r = may_share_with_parent(s->kind) ||
	    s->kind == CKPT_FD_FILE_DELETED ?
	    handover_shared_file(ckpt.vpid, fd) : -ENOENT;
	if (r >= 0 && s->kind == CKPT_FD_FILE_DELETED)
		adopt_handed_deleted(s, r);
	if (r >= 0)
		return dup2(r, fd) < 0 ? -errno : 0;
	switch (s->kind) {
	case CKPT_FD_FILE:
	case CKPT_FD_DEVICE:
		r = place_fd(open(saved_path(s), reopen_flags(s)), fd);
		if (r < 0 && !strncmp(saved_path(s), "/proc/", 6)) {
			ckpt_log("fd %d (%s): %s (the process is not among the"
				 " restarted ones?); it is replaced by "
				 "/dev/null", fd, saved_path(s), strerror(-r));
			return open_dev_null(fd);
		}
		break;
	case CKPT_FD_DIR:
		r = place_fd(open(saved_path(s), O_RDONLY | O_DIRECTORY), fd);
		break;
	case CKPT_FD_FILE_DELETED:
		r = recreate_deleted(s, image_fd);
		r = r < 0 ? r : place_fd(r, fd);
		break;
	case CKPT_FD_TTY:
		r = ptys_handed_slave(saved_path(s));
		if (r >= 0)
			return take_handed(r, s);
		r = fd <= 2 && stdio_copy[fd] >= 0 ? stdio_copy[fd] :
						      restarting_tty();
		if (r < 0) {
			ckpt_log("fd %d was the terminal %s; ckpt_restart has "
				 "no terminal, using /dev/null", fd,
				 saved_path(s));
			return open_dev_null(fd);
		}
		if (dup2(r, fd) < 0)
			return -errno;
		restore_terminal_settings(s);
		return 0;
	case CKPT_FD_STDIO_INHERIT:
		return inherit_stdio(fd);
	case CKPT_FD_PIPE:
		return restore_pipe_end(s);
	case CKPT_FD_UNIX_STREAM:
	case CKPT_FD_UNIX_DGRAM:
	case CKPT_FD_UNIX_SEQPACKET:
		return with_options(s, restore_socket_end(s));
	case CKPT_FD_FIFO:
		return restore_fifo(s);
	case CKPT_FD_EVENTFD:
	case CKPT_FD_TIMERFD:
	case CKPT_FD_SIGNALFD:
	case CKPT_FD_EPOLL:
	case CKPT_FD_INOTIFY:
	case CKPT_FD_PIDFD:
		return restore_event_fd(s);
	case CKPT_FD_SOCKET_LISTEN:
	case CKPT_FD_SOCKET_BOUND:
		return with_options(s, restore_own_socket(s));
	case CKPT_FD_SOCKET_OUTSIDE:
		return with_options(s, restore_socket_end(s));
	case CKPT_FD_PTY_MASTER:
		return restore_pty_master(s);
	default:
		ckpt_log("fd %d (%s) cannot be restored yet; it is replaced by"
			 " /dev/null", fd, saved_path(s));
		return open_dev_null(fd);
	}
	if (r == 0 && s->offset >= 0 && s->kind != CKPT_FD_DEVICE &&
	    lseek(fd, s->offset, SEEK_SET) < 0)
		r = -errno;
	return r;
}

/* A copy of a snapshot's template (snapshot_template.c) holds the
 * descriptors of the snapshot, whose open file descriptions it shares
 * with the process it replaces: the positions go back to the
 * snapshot's. */
void files_rewind_offsets(void)
{
	for (int i = 0; i < nsaved; i++) {
		const struct saved_fd *s = &saved[i];

		if (s->dup_of >= 0 || s->offset < 0)
			continue;
		if ((s->kind == CKPT_FD_FILE ||
		     s->kind == CKPT_FD_FILE_DELETED ||
		     s->kind == CKPT_FD_DIR) &&
		    lseek(s->fd, s->offset, SEEK_SET) < 0)
			ckpt_log("fd %d (%s): setting the offset back to "
				 "%lld: %s", s->fd, saved_path(s),
				 (long long)s->offset, strerror(errno));
	}
}

#define SAVED_MAP_FDS 65536

static uint8_t saved_map[SAVED_MAP_FDS / 8];	/* bit fd: a saved fd */

static int in_saved_map(int fd)
{
	return fd < SAVED_MAP_FDS ? saved_map[fd / 8] >> (fd % 8) & 1 :
				    is_saved_fd(fd);
}

/* Close every fd the restored process has that it did not have at the
 * checkpoint (handed fds, ckpt_restart's), but keep and libckpt's own:
 * the open ones found in /proc/self/fd, not every number up to the
 * limit (a program with 1,000 sockets raised it: 65,536 close calls,
 * each checked against every saved fd, took most of its restart). */
static void close_unsaved_fds(int keep)
{
	struct ckpt_dir_iter it;
	int fd;

	memset(saved_map, 0, sizeof(saved_map));
	for (int i = 0; i < nsaved; i++)
		if (saved[i].fd >= 0 && saved[i].fd < SAVED_MAP_FDS)
			saved_map[saved[i].fd / 8] |= 1 << (saved[i].fd % 8);
	if (ckpt_dir_open(&it, "/proc/self/fd") < 0) {
		for (fd = 0; fd < SAVED_MAP_FDS; fd++)
			if (fd != keep && !in_saved_map(fd) &&
			    !ckpt_is_own_fd(fd))
				close(fd);
		return;
	}
	while ((fd = ckpt_dir_next_number(&it)) >= 0)
		if (fd != it.fd && fd != keep && !in_saved_map(fd) &&
		    !ckpt_is_own_fd(fd))
			close(fd);
	ckpt_dir_close(&it);
}

/* A descriptor number for libckpt that no saved descriptor needs. */
int files_private_fd(int fd)
{
	return move_out_of_the_way(fd);
}

/* The saved fds that are epoll instances (epolls), or all others. */
static int restore_fds(int image_fd, int epolls)
{
	for (int i = 0; i < nsaved; i++) {
		int r;

		if ((saved[i].kind == CKPT_FD_EPOLL) != epolls ||
		    is_extra_record(&saved[i]))
			continue;
		r = restore_one_fd(&saved[i], image_fd);
		if (r < 0) {
			ckpt_log("cannot restore fd %d (%s): %s", saved[i].fd,
				 saved_path(&saved[i]), strerror(-r));
			return r;
		}
		fcntl(saved[i].fd, F_SETFD, saved[i].fd_flags);
	}
	return 0;
}

int files_saved_socket_fd(uint64_t ino)
{
	for (int i = 0; i < nsaved; i++)
		if (saved[i].ino == ino && saved[i].sock >= 0)
			return saved[i].fd;
	return -1;
}

static int files_restore(const struct ckpt_restart_args *args)
{
	int image_fd = move_out_of_the_way(args->image_fd), r = 0;
	/* kept past the restore of the saved numbers (settle_event_fds) */
	int plan_fd = args->plan_fd < 0 ? -1 : move_out_of_the_way(
			fcntl(args->plan_fd, F_DUPFD_CLOEXEC, 3));

	terminal_restored = 0;
	accept_queue_forget();
	for (int i = 0; i < 3; i++)
		stdio_copy[i] = move_out_of_the_way(fcntl(i, F_DUPFD_CLOEXEC,
							  3));
	pipes_reset_outside();
	handed_floor = above_saved_fds();
	r = handover_take_plan(plan_fd, keep_handed_fd);
	if (r < 0) {
		ckpt_log("cannot read the fds of the restart plan: %s",
			 strerror(-r));
		return r;
	}
	/* epoll instances last: they watch the others */
	r = restore_fds(image_fd, 0);
	if (r == 0)
		r = restore_fds(image_fd, 1);
	if (r == 0)
		settle_event_fds(plan_fd);
	for (int i = 0; i < 3; i++)
		if (stdio_copy[i] >= 0) {
			ckpt_mark_own_fd(stdio_copy[i], 0);
			close(stdio_copy[i]);
		}
	forget_recreated();
	handover_close_all();
	close_unsaved_fds(image_fd);
	ckpt_mark_own_fd(image_fd, 0);
	close(image_fd);
	if (plan_fd >= 0) {
		ckpt_mark_own_fd(plan_fd, 0);
		close(plan_fd);
	}
	return r;
}

const struct ckpt_resource_ops file_resource_ops = {
	.name = "file descriptors",
	.save = files_save,
	.drain = files_drain,
	.write = files_write,
	.restore = files_restore,
};
