/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Sockets that come back on their own, without their peer: listening
 * sockets (TCP over IPv4/IPv6, Unix path and abstract), UDP sockets
 * (bound or not, connected or not), bound unconnected Unix datagram
 * sockets, and connections to peers the restart does not bring back.
 * files.c records them as CKPT_FD_SOCKET_LISTEN, _BOUND and _OUTSIDE
 * with a struct ckpt_socket_info; docs/resources.md tells the whole
 * story:
 *
 *   checkpoint: family, type, protocol, getsockname/getpeername, the
 *   options that change how a bind or listen behaves, the backlog
 *   (sock_diag: for a listener the kernel reports its maximum backlog as
 *   the "write queue"; SOMAXCONN when it cannot be asked), and the other
 *   socket options (include/ckpt/socket_options.h) of every socket.
 *
 *   restart: ckpt_restart (restart/restart_listeners.c) re-creates the
 *   listening and UDP/bound sockets once and hands them over like the
 *   socket pairs; a connection to an outside peer is made here as a
 *   socket of the same family and type that its peer has closed and that
 *   is shut down both ways: read gives 0, write fails with EPIPE. Every
 *   socket put back gets its options again (socket_state_restore_options).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <time.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>
#include "ckpt/sockaddr_text.h"
#include "ckpt/socket_options.h"
#include "internal.h"

static int opt(int fd, int level, int name)
{
	int v = 0;
	socklen_t len = sizeof(v);

	return getsockopt(fd, level, name, &v, &len) < 0 ? -1 : v;
}

/* The listen backlog the kernel keeps for listener `ino`, found in one
 * sock_diag answer (a dump for TCP, one record for Unix); 0: not there. */
static int backlog_in(const char *buf, long len, uint64_t ino, int unix_sk)
{
	const struct nlmsghdr *nlh = (const void *)buf;

	for (; NLMSG_OK(nlh, len); nlh = NLMSG_NEXT(nlh, len)) {
		if (nlh->nlmsg_type != SOCK_DIAG_BY_FAMILY)
			return nlh->nlmsg_type == NLMSG_DONE ||
			       nlh->nlmsg_type == NLMSG_ERROR ? -1 : 0;
		if (!unix_sk) {
			const struct inet_diag_msg *m = NLMSG_DATA(nlh);

			if (m->idiag_inode == ino)
				return (int)m->idiag_wqueue;
			continue;
		}
		const struct unix_diag_msg *m = NLMSG_DATA(nlh);
		const struct rtattr *a = (const void *)(m + 1);
		long alen = nlh->nlmsg_len - NLMSG_LENGTH(sizeof(*m));

		for (; RTA_OK(a, alen); a = RTA_NEXT(a, alen))
			if (a->rta_type == UNIX_DIAG_RQLEN && m->udiag_ino == ino)
				return (int)((const struct unix_diag_rqlen *)
					     RTA_DATA(a))->udiag_wqueue;
		return -1;
	}
	return 0;
}

static int ask_backlog(const void *req, size_t len, uint64_t ino, int unix_sk)
{
	static char reply[32768];
	int nl, r = 0;

	nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl < 0)
		return -1;
	if (send(nl, req, len, 0) != (ssize_t)len)
		r = -1;
	while (r == 0) {
		long n = recv(nl, reply, sizeof(reply), 0);

		r = n <= 0 ? -1 : backlog_in(reply, n, ino, unix_sk);
	}
	close(nl);
	return r;
}

static int listen_backlog(int family, uint64_t ino)
{
	struct {
		struct nlmsghdr nlh;
		union {
			struct inet_diag_req_v2 in;
			struct unix_diag_req un;
		};
	} msg;
	size_t len;
	int r;

	memset(&msg, 0, sizeof(msg));
	msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	msg.nlh.nlmsg_flags = NLM_F_REQUEST;
	if (family == AF_UNIX) {
		len = NLMSG_LENGTH(sizeof(msg.un));
		msg.un.sdiag_family = AF_UNIX;
		msg.un.udiag_states = ~0U;
		msg.un.udiag_ino = ino;
		msg.un.udiag_show = UDIAG_SHOW_RQLEN;
		msg.un.udiag_cookie[0] = INET_DIAG_NOCOOKIE;
		msg.un.udiag_cookie[1] = INET_DIAG_NOCOOKIE;
	} else {
		len = NLMSG_LENGTH(sizeof(msg.in));
		msg.nlh.nlmsg_flags |= NLM_F_DUMP;
		msg.in.sdiag_family = family;
		msg.in.sdiag_protocol = IPPROTO_TCP;
		msg.in.idiag_states = 1U << TCP_LISTEN;
	}
	msg.nlh.nlmsg_len = len;
	r = ask_backlog(&msg, len, ino, family == AF_UNIX);
	return r > 0 ? r : SOMAXCONN;
}

/* A relative Unix path is kept absolute: ckpt_restart binds it from
 * another working directory (the one at checkpoint is used). */
static void absolute_unix_path(struct ckpt_socket_info *si)
{
	struct sockaddr_un *a = (void *)si->addr;
	size_t off = offsetof(struct sockaddr_un, sun_path), n, c;
	char cwd[sizeof(a->sun_path)], path[sizeof(a->sun_path)];

	if (si->addr_len <= off || !a->sun_path[0] || a->sun_path[0] == '/')
		return;
	n = strnlen(a->sun_path, si->addr_len - off);
	if (syscall(SYS_getcwd, cwd, sizeof(cwd)) < 0)
		return;
	c = strlen(cwd);
	if (c + 1 + n + 1 > sizeof(path))
		return;
	memcpy(path, cwd, c);
	path[c] = '/';
	memcpy(path + c + 1, a->sun_path, n);
	path[c + 1 + n] = 0;
	memcpy(a->sun_path, path, c + n + 2);
	si->addr_len = off + c + n + 2;
}

/* The mode of the socket file at a Unix path (screen says whether a
 * session is attached in its execute bits, and `screen -ls` shows a
 * session whose file has another mode as "Unknown"). */
static void save_path_mode(struct ckpt_socket_info *si)
{
	const struct sockaddr_un *a = (const void *)si->addr;
	size_t off = offsetof(struct sockaddr_un, sun_path);
	char path[sizeof(a->sun_path) + 1];
	struct stat st;
	size_t n;

	if (si->addr_len <= off || a->sun_path[0] != '/')
		return;
	n = strnlen(a->sun_path, si->addr_len - off);
	memcpy(path, a->sun_path, n);
	path[n] = 0;
	if (syscall(SYS_newfstatat, AT_FDCWD, path, &st,
		    AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(st.st_mode))
		si->path_mode = st.st_mode;
}

/* What every kind keeps, once family, type and protocol are known: the
 * options that change how a bind behaves, the other options, the
 * multicast groups joined. */
static void save_options(int fd, uint64_t ino, struct ckpt_socket_info *si)
{
	if (opt(fd, SOL_SOCKET, SO_REUSEADDR) > 0)
		si->flags |= CKPT_SOCK_F_REUSEADDR;
	if (opt(fd, SOL_SOCKET, SO_REUSEPORT) > 0)
		si->flags |= CKPT_SOCK_F_REUSEPORT;
	if (si->family == AF_INET6 && opt(fd, IPPROTO_IPV6, IPV6_V6ONLY) > 0)
		si->flags |= CKPT_SOCK_F_V6ONLY;
	si->info_size = sizeof(*si);
	ckpt_socket_options_read(fd, si);
	si->ngroups = multicast_count(fd, ino);
}

/* Whether sockets of si's family and type are restored here. */
static int restorable(const struct ckpt_socket_info *si)
{
	if (si->family == AF_NETLINK)
		return si->type == SOCK_RAW || si->type == SOCK_DGRAM;
	if (si->family == AF_UNIX)
		return 1;
	return (si->family == AF_INET || si->family == AF_INET6) &&
	       (si->type == SOCK_STREAM || si->type == SOCK_DGRAM);
}

/* A stream socket that was made (maybe bound, options set) and is
 * neither listening nor connected nor connecting: a client between
 * socket() and connect(), a server between bind() and listen(). TCP
 * says so in its state (TCP_CLOSE; TCP_SYN_SENT is a connect under
 * way); a Unix one has no peer. */
static int never_connected(int fd, const struct ckpt_socket_info *si)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	if (si->peer_len || (si->type != SOCK_STREAM &&
			     si->type != SOCK_SEQPACKET))
		return 0;
	if (si->family == AF_UNIX)
		return 1;
	return si->protocol == IPPROTO_TCP &&
	       getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 &&
	       ti.tcpi_state == TCP_CLOSE;
}

/* The kind files.c records for socket fd (inode ino) and *si, or 0 when
 * it is none of those restored here. */
static int socket_kind(int fd, uint64_t ino, struct ckpt_socket_info *si)
{
	socklen_t len;

	memset(si, 0, sizeof(*si));
	si->family = opt(fd, SOL_SOCKET, SO_DOMAIN);
	si->type = opt(fd, SOL_SOCKET, SO_TYPE);
	si->protocol = opt(fd, SOL_SOCKET, SO_PROTOCOL);
	if (!restorable(si))
		return 0;
	si->rcvbuf = opt(fd, SOL_SOCKET, SO_RCVBUF);
	si->sndbuf = opt(fd, SOL_SOCKET, SO_SNDBUF);
	save_options(fd, ino, si);
	/* the system calls: the wrappers give a moved host's old address,
	 * and a restart binds and connects the real ones */
	len = sizeof(si->addr);
	if (syscall(SYS_getsockname, fd, si->addr, &len) == 0)
		si->addr_len = len;
	if (si->family == AF_NETLINK)	/* talks to the kernel: no peer */
		return netlink_save(fd, si);
	len = sizeof(si->peer);
	if (syscall(SYS_getpeername, fd, si->peer, &len) == 0)
		si->peer_len = len;
	if (si->family == AF_UNIX)
		absolute_unix_path(si);
	if (opt(fd, SOL_SOCKET, SO_ACCEPTCONN) == 1) {
		si->backlog = listen_backlog(si->family, ino);
		return CKPT_FD_SOCKET_LISTEN;
	}
	/* UDP has no connection to lose: made again bound and connected */
	if (si->family != AF_UNIX && si->type == SOCK_DGRAM &&
	    si->protocol == IPPROTO_UDP)
		return CKPT_FD_SOCKET_BOUND;
	if (si->peer_len)
		return CKPT_FD_SOCKET_OUTSIDE;
	/* made again as a new socket, bound to its address if it was */
	if (never_connected(fd, si))
		return CKPT_FD_SOCKET_BOUND;
	if (si->type == SOCK_DGRAM &&
	    ckpt_sockaddr_is_bound(si->addr, si->addr_len))
		return CKPT_FD_SOCKET_BOUND;
	return 0;
}

int socket_state_save(int fd, uint64_t ino, struct ckpt_socket_info *si)
{
	int kind = socket_kind(fd, ino, si);

	/* only a socket ckpt_restart binds again has its file's mode set
	 * back: no stat for each accepted connection of a Unix listener */
	if (si->family == AF_UNIX && (kind == CKPT_FD_SOCKET_LISTEN ||
				      kind == CKPT_FD_SOCKET_BOUND))
		save_path_mode(si);
	return kind;
}

/* The SOL_SOCKET options of the sockets socket_state_save_tcp saw, read
 * together once they are all known (sockopt_batch.c): 7 per socket. */
enum deferred_kind { DEFER_FLAG, DEFER_INT, DEFER_LINGER, DEFER_TIMEO };

struct deferred_option {
	struct ckpt_socket_info *si;
	int kind, slot;			/* slot: opt[] index, or the flag */
	struct sockopt_read rd;
	union {
		int i;
		struct linger l;
		struct timeval tv;
	} v;
};

#define DEFERRED_MAX 8192

static struct deferred_option *deferred;
static size_t ndeferred;

/* Read now when there is no room to wait. */
static void read_option_now(struct deferred_option *d);

static void defer_option(struct ckpt_socket_info *si, int fd, int name,
			 int kind, int slot)
{
	struct deferred_option *d, now;

	if (!deferred) {
		void *p = mmap(NULL, DEFERRED_MAX * sizeof(*deferred),
			       PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		deferred = p == MAP_FAILED ? NULL : p;
	}
	d = deferred && ndeferred < DEFERRED_MAX ? &deferred[ndeferred++] :
						   &now;
	memset(d, 0, sizeof(*d));
	d->si = si;
	d->kind = kind;
	d->slot = slot;
	d->rd.fd = fd;
	d->rd.name = name;
	d->rd.val = &d->v;
	d->rd.len = kind == DEFER_LINGER ? sizeof(d->v.l) :
		    kind == DEFER_TIMEO ? sizeof(d->v.tv) : sizeof(d->v.i);
	d->rd.res = -EAGAIN;
	if (d == &now)
		read_option_now(d);
}

/* An answered option into its socket's record. */
static void store_option(const struct deferred_option *d)
{
	int32_t *opt = d->si->opt;

	if (d->rd.res < 0)
		return;
	switch (d->kind) {
	case DEFER_FLAG:
		if (d->v.i > 0)
			d->si->flags |= d->slot;
		break;
	case DEFER_INT:
		opt[d->slot] = d->v.i;
		break;
	case DEFER_LINGER:
		opt[d->slot] = d->v.l.l_onoff;
		opt[d->slot + 1] = d->v.l.l_linger;
		break;
	default:
		opt[d->slot] = (int32_t)d->v.tv.tv_sec;
		opt[d->slot + 1] = (int32_t)d->v.tv.tv_usec;
	}
}

static void read_option_now(struct deferred_option *d)
{
	socklen_t len = d->rd.len;

	d->rd.res = getsockopt(d->rd.fd, SOL_SOCKET, d->rd.name, d->rd.val,
			       &len) < 0 ? -errno : (int)len;
	store_option(d);
}

static struct sockopt_read *deferred_read(size_t i)
{
	return &deferred[i].rd;
}

/* Every deferred option read (one io_uring submission per 1,024; each
 * one io_uring did not answer asked alone) and stored. */
void socket_state_read_deferred(void)
{
	if (!ndeferred)
		return;
	sockopt_batch_read(deferred_read, ndeferred);
	for (size_t i = 0; i < ndeferred; i++) {
		if (deferred[i].rd.res < 0)
			read_option_now(&deferred[i]);
		else
			store_option(&deferred[i]);
	}
	munmap(deferred, DEFERRED_MAX * sizeof(*deferred));
	deferred = NULL;
	ndeferred = 0;
}

/* The SOL_SOCKET options of a TCP socket, deferred; the others (TCP and
 * IPv6 levels) asked now. */
static void save_options_deferred(int fd, uint64_t ino,
				  struct ckpt_socket_info *si)
{
	int32_t *slots = si->opt;

	defer_option(si, fd, SO_REUSEADDR, DEFER_FLAG, CKPT_SOCK_F_REUSEADDR);
	defer_option(si, fd, SO_REUSEPORT, DEFER_FLAG, CKPT_SOCK_F_REUSEPORT);
	if (si->family == AF_INET6 && opt(fd, IPPROTO_IPV6, IPV6_V6ONLY) > 0)
		si->flags |= CKPT_SOCK_F_V6ONLY;
	si->info_size = sizeof(*si);
	for (int i = 0; i < CKPT_SOCK_OPT_SLOTS; i++)
		slots[i] = CKPT_SOCK_OPT_UNSET;
	for (unsigned i = 0; i < CKPT_NINT_OPTIONS; i++) {
		const struct ckpt_int_option *o = &ckpt_int_options[i];
		int level, name, v = 0;
		socklen_t len = sizeof(v);

		if (!ckpt_int_option_applies(o, si))
			continue;
		ckpt_int_option_where(o, si, &level, &name);
		if (level == SOL_SOCKET)
			defer_option(si, fd, name, DEFER_INT, o->slot);
		else if (getsockopt(fd, level, name, &v, &len) == 0)
			slots[o->slot] = v;
	}
	defer_option(si, fd, SO_LINGER, DEFER_LINGER, CKPT_SOCK_OPT_LINGER_ON);
	defer_option(si, fd, SO_RCVTIMEO, DEFER_TIMEO,
		     CKPT_SOCK_OPT_RCVTIMEO_SEC);
	defer_option(si, fd, SO_SNDTIMEO, DEFER_TIMEO,
		     CKPT_SOCK_OPT_SNDTIMEO_SEC);
	si->ngroups = multicast_count(fd, ino);
}

/*
 * socket_state_save for a TCP socket the process's sock_diag dump lists
 * (tcp_diag.c): family, addresses, listen state, backlog and buffer sizes
 * from the dump, only the options asked. A socket in a state the dump
 * does not describe as getsockname/getpeername would (not connected, or
 * connecting) returns -1: ask it on its own.
 */
int socket_state_save_tcp(int fd, const struct tcp_diag_entry *e,
			  struct ckpt_socket_info *si)
{
	socklen_t len = e->family == AF_INET ? sizeof(struct sockaddr_in) :
					       sizeof(struct sockaddr_in6);

	if (e->state == TCP_CLOSE || e->state == TCP_SYN_SENT ||
	    !e->has_buffers || (e->family != AF_INET && e->family != AF_INET6))
		return -1;
	memset(si, 0, sizeof(*si));
	si->family = e->family;
	si->type = SOCK_STREAM;
	si->protocol = IPPROTO_TCP;
	si->rcvbuf = e->rcvbuf;
	si->sndbuf = e->sndbuf;
	save_options_deferred(fd, e->ino, si);
	memcpy(si->addr, &e->addr, len);
	si->addr_len = len;
	if (e->state == TCP_LISTEN) {
		si->backlog = e->wqueue > 0 ? e->wqueue : SOMAXCONN;
		return CKPT_FD_SOCKET_LISTEN;
	}
	memcpy(si->peer, &e->peer, len);
	si->peer_len = len;
	return CKPT_FD_SOCKET_OUTSIDE;
}

/* The options saved with *si set back on fd (the socket restored in its
 * place); a refused one is said, not fatal. */
/* The options of a new socket of each kind, read once per process: a
 * restored socket is always new, so only the options the program changed
 * need a setsockopt (9 per TCP socket otherwise). */
struct fresh_options {
	uint32_t family, type, protocol;
	int32_t opt[CKPT_SOCK_OPT_SLOTS];
};

static struct fresh_options fresh[8];
static int nfresh;

static const struct fresh_options *fresh_options_of(
	const struct ckpt_socket_info *si)
{
	struct ckpt_socket_info probe;
	int s;

	for (int i = 0; i < nfresh; i++)
		if (fresh[i].family == si->family && fresh[i].type == si->type &&
		    fresh[i].protocol == si->protocol)
			return &fresh[i];
	if (nfresh == (int)(sizeof(fresh) / sizeof(fresh[0])))
		return NULL;
	s = socket(si->family, si->type | SOCK_CLOEXEC, si->protocol);
	if (s < 0)
		return NULL;
	memset(&probe, 0, sizeof(probe));
	probe.family = si->family;
	probe.type = si->type;
	ckpt_socket_options_read(s, &probe);
	close(s);
	fresh[nfresh] = (struct fresh_options){ si->family, si->type,
						si->protocol, { 0 } };
	memcpy(fresh[nfresh].opt, probe.opt, sizeof(probe.opt));
	return &fresh[nfresh++];
}

/* Slots set together (SO_LINGER, SO_RCVTIMEO, SO_SNDTIMEO): the first of
 * each pair. */
static int pair_first(int slot)
{
	return slot == CKPT_SOCK_OPT_LINGER_ON ||
	       slot == CKPT_SOCK_OPT_RCVTIMEO_SEC ||
	       slot == CKPT_SOCK_OPT_SNDTIMEO_SEC;
}

/* si's options with those a new socket has anyway left unset. */
static void only_changed_options(struct ckpt_socket_info *si)
{
	const struct fresh_options *f = fresh_options_of(si);

	if (!f || ckpt_socket_info_size(si) < sizeof(*si))
		return;
	for (int i = 0; i < CKPT_SOCK_OPT_COUNT; i++) {
		int n = pair_first(i) ? 2 : 1;

		if (!memcmp(&si->opt[i], &f->opt[i], n * sizeof(si->opt[0])))
			for (int k = 0; k < n; k++)
				si->opt[i + k] = CKPT_SOCK_OPT_UNSET;
		i += n - 1;
	}
}

void socket_state_restore_options(int fd, const struct ckpt_socket_info *saved)
{
	struct ckpt_socket_info si = *saved;
	const char *what;
	int r;

	only_changed_options(&si);
	r = ckpt_socket_options_apply(fd, &si, &what);
	if (si.family == AF_NETLINK)
		netlink_restore_options(fd, &si);

	if (r < 0)
		ckpt_log("%s: fd %d: setting the socket option %s back "
			 "failed: %s; the socket goes on without it",
			 ckpt.program, fd, what, strerror(-r));
}

/* A TCP or UDP socket of `family` connected over loopback; -errno. */
static int loopback_connected(int family, int type)
{
	struct sockaddr_storage ss;
	socklen_t len = ckpt_loopback_addr(family, &ss);
	int l = -1, c, a, r = 0;

	c = socket(family, type | SOCK_CLOEXEC, 0);
	if (c < 0)
		return -errno;
	l = type == SOCK_STREAM ? socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0)
				: c;
	if (l < 0 || bind(l, (void *)&ss, len) < 0 ||
	    getsockname(l, (void *)&ss, &len) < 0 ||
	    (type == SOCK_STREAM && listen(l, 1) < 0) ||
	    connect(c, (void *)&ss, len) < 0)
		r = -errno;
	if (r == 0 && type == SOCK_STREAM) {
		a = accept(l, NULL, NULL);
		if (a < 0)
			r = -errno;
		else
			close(a);	/* the peer closes */
	}
	if (l >= 0 && l != c)
		close(l);
	if (r < 0) {
		close(c);
		return r;
	}
	return c;
}

static int closed_unix(int type)
{
	int sv[2];

	if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv) < 0)
		return -errno;
	close(sv[1]);
	return sv[0];
}

/* Put at fd a socket like si's whose peer has closed: read returns 0,
 * write fails with EPIPE. TCP and UDP stay TCP and UDP over loopback
 * (getpeername shows loopback, not the old peer); anything else, or
 * when loopback is missing, is a Unix socket pair end. 0 or -errno. */
int socket_state_restore_closed(int fd, const struct ckpt_socket_info *si,
				int status_flags)
{
	int s = -1;

	if ((si->family == AF_INET || si->family == AF_INET6) &&
	    (si->type == SOCK_STREAM || si->type == SOCK_DGRAM))
		s = loopback_connected(si->family, si->type);
	if (s < 0)
		s = closed_unix(si->family == AF_UNIX ? si->type : SOCK_STREAM);
	if (s < 0)
		s = closed_unix(SOCK_STREAM);
	if (s < 0)
		return s;
	shutdown(s, SHUT_RDWR);
	if (s != fd && dup2(s, fd) < 0) {
		int e = errno;

		close(s);
		return -e;
	}
	if (s != fd)
		close(s);
	return fcntl(fd, F_SETFL, status_flags) < 0 ? -errno : 0;
}

/*
 * A TCP socket's bytes sent but not yet acknowledged (SIOCOUTQ): with
 * every thread of the process stopped, they reach the peer within
 * moments on one host. Wait for that (1 ms steps, at most *budget_ms in
 * all, which it lowers) so that the peer's receive queue holds them when
 * the images are written. Returns the bytes still unacknowledged.
 */
int socket_state_settle(int fd, int *budget_ms)
{
	struct timespec ms = { 0, 1000000 };
	int outq = 0;

	while (ioctl(fd, SIOCOUTQ, &outq) == 0 && outq > 0 && *budget_ms > 0) {
		nanosleep(&ms, NULL);
		(*budget_ms)--;
	}
	return outq > 0 ? outq : 0;
}
