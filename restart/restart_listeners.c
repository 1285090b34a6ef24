// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Listening sockets (TCP over IPv4/IPv6, Unix path and abstract), UDP
 * sockets, bound unconnected Unix datagram sockets and netlink sockets
 * (bound to their port id and groups again), recorded by
 * libckpt-preload/socket_state.c with a struct ckpt_socket_info: made
 * again once per socket, before any process is restarted, with the
 * options that change a bind (SO_REUSEADDR, SO_REUSEPORT, IPV6_V6ONLY)
 * and then the others the program had (include/ckpt/socket_options.h)
 * set before bind, a UDP socket connected again to its peer, and
 * listen() with the saved backlog; handed to every process through the
 * plan's socket table like the socket pairs. Then the datagrams queued
 * on UDP sockets are put back (restart_udp.c). An address that cannot
 * be bound again fails the whole restart, naming it and the process.
 *
 * A Unix path: a socket file left at the path by the checkpointed
 * program is replaced when it is the caller's and nobody listens on it;
 * anything else there is an error.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "../protocol/client_internal.h"
#include "ckpt/safe_file.h"
#include "ckpt/sockaddr_text.h"
#include "ckpt/socket_options.h"
#include "host_map.h"
#include "process_tree.h"

struct own_socket {
	const struct ckpt_image *img;
	const struct ckpt_fd_info *f;
	struct ckpt_socket_info si;
	uint64_t ino;
	char where[160];		/* the address in words */
};

/* The struct ckpt_socket_info of a CKPT_FD_SOCKET_* record and its
 * socket's inode, its addresses moved by --host-map (host_map.c); 0, or
 * -EINVAL after saying why. */
int socket_record_info(const struct ckpt_image *img,
		       const struct ckpt_fd_info *f,
		       struct ckpt_socket_info *si, uint64_t *ino)
{
	if (fd_record_ino(img, f, "socket", ino) < 0 ||
	    image_socket_info(img, f, si) < 0 ||
	    si->addr_len > sizeof(si->addr) ||
	    si->peer_len > sizeof(si->peer) ||
	    si->addr_len < sizeof(sa_family_t)) {
		fprintf(stderr, "ckpt_restart: %s: fd %d: bad socket record "
			"'%s'\n", img->path, f->fd, image_string(img, f->path));
		return -EINVAL;
	}
	restart_host_map_socket(si);
	return 0;
}

static int read_info(const struct ckpt_image *img,
		     const struct ckpt_fd_info *f, struct own_socket *o)
{
	memset(o, 0, sizeof(*o));
	o->img = img;
	o->f = f;
	if (socket_record_info(img, f, &o->si, &o->ino) < 0)
		return -EINVAL;
	ckpt_sockaddr_text(o->si.addr, o->si.addr_len, o->where,
			   sizeof(o->where));
	return 0;
}

/* "cannot listen on ADDR again: [step: ]why" */
static void say(const struct own_socket *o, const char *step, int err)
{
	fprintf(stderr, "ckpt_restart: %s: %s (vpid %d), fd %d: cannot %s %s "
		"again: %s%s%s%s\n", o->img->path, o->img->hdr.program,
		o->img->hdr.vpid, o->f->fd,
		o->f->kind == CKPT_FD_SOCKET_LISTEN ? "listen on" : "bind to",
		o->where[0] ? o->where : "its address", step ? step : "",
		step ? ": " : "", strerror(err),
		err == EADDRINUSE ? " (another socket holds the address; "
		"nothing was restarted)" : "");
}

/*
 * The directory of a Unix socket's path, made again when a program
 * removed it after the checkpoint (python's multiprocessing removes its
 * /tmp/pymp-* directory at exit, so a restart of an older checkpoint
 * could not listen there again): each missing directory made 0700 as
 * mkdtemp does, said, and the path checked as the restart checks where
 * it puts files back (nobody else can redirect it). 0, or -errno after
 * saying why.
 */
static int make_missing_socket_dir(const struct own_socket *o)
{
	const struct sockaddr_un *a = (const void *)o->si.addr;
	char dir[PATH_MAX], bad[PATH_MAX];
	struct ckpt_refusal ref = { 0 };
	struct stat st;
	int r;

	if (o->si.addr_len <= offsetof(struct sockaddr_un, sun_path) ||
	    a->sun_path[0] != '/')
		return 0;	/* abstract, or relative to its directory */
	parent_dir(a->sun_path, dir, sizeof(dir));
	if (!dir[0] || stat(dir, &st) == 0 || errno != ENOENT)
		return 0;	/* there, or bind says what is wrong */
	r = ckpt_cc_make_dirs(dir);
	if (r == 0)
		r = ckpt_path_check(dir, bad, sizeof(bad), &ref);
	if (r < 0) {
		if (ref.why)
			say(o, ref.why, -r);
		else
			say(o, "making its directory again", -r);
		return r;
	}
	fprintf(stderr, "ckpt_restart: %s: %s (vpid %d), fd %d: the "
		"directory %s of its socket was gone; made again (0700)\n",
		o->img->path, o->img->hdr.program, o->img->hdr.vpid, o->f->fd,
		dir);
	return 0;
}

/* Options that change a bind first, then the others the program had
 * (buffer sizes before datagrams are put back in the queue): a refused
 * one of those is said, not fatal. */
static int set_options(const struct own_socket *o, int s)
{
	const struct ckpt_socket_info *si = &o->si;
	int on = 1, v6only = !!(si->flags & CKPT_SOCK_F_V6ONLY), r;
	const char *what;

	if ((si->flags & CKPT_SOCK_F_REUSEADDR) &&
	    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) < 0)
		return -errno;
	if ((si->flags & CKPT_SOCK_F_REUSEPORT) &&
	    setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) < 0)
		return -errno;
	if (si->family == AF_INET6 &&
	    setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &v6only,
		       sizeof(v6only)) < 0)
		return -errno;
	r = ckpt_socket_options_apply(s, si, &what);
	if (r < 0)
		fprintf(stderr, "ckpt_restart: %s: %s (vpid %d), fd %d: setting "
			"%s back on %s failed: %s\n", o->img->path,
			o->img->hdr.program, o->img->hdr.vpid, o->f->fd, what,
			o->where[0] ? o->where : "the socket", strerror(-r));
	return 0;
}

/* A UDP socket connected at checkpoint is connected again: UDP has no
 * connection state the peer could miss. */
static int udp_peer(const struct ckpt_socket_info *si)
{
	return si->family != AF_UNIX && si->type == SOCK_DGRAM &&
	       si->protocol == IPPROTO_UDP &&
	       si->peer_len > sizeof(sa_family_t);
}

/* The socket file a Unix path socket of `type` at addr left behind:
 * removed when it is a socket of the caller's that nobody uses (connect
 * is refused). 0 (also: abstract, nothing there); -EEXIST, *why: it is
 * not that; -EADDRINUSE: in use; -errno. */
int clear_stale_unix_path(const uint8_t *addr, uint32_t addr_len, int type,
			  const char **why)
{
	const struct sockaddr_un *a = (const void *)addr;
	struct stat st;
	int probe, r;

	if (addr_len <= offsetof(struct sockaddr_un, sun_path) ||
	    !a->sun_path[0] || lstat(a->sun_path, &st) < 0)
		return 0;	/* abstract, or nothing there */
	if (!S_ISSOCK(st.st_mode) || st.st_uid != geteuid()) {
		*why = S_ISSOCK(st.st_mode) ? "another user's socket" :
					      "not a socket";
		return -EEXIST;
	}
	probe = socket(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (probe < 0)
		return -errno;
	r = connect(probe, (const void *)addr, addr_len) < 0 ? errno : 0;
	close(probe);
	if (r != ECONNREFUSED)
		return -EADDRINUSE;
	return unlink(a->sun_path) < 0 && errno != ENOENT ? -errno : 0;
}

/* The socket file a Unix path socket left behind (clear_stale_unix_path);
 * 0, or -errno after saying why not. */
static int clear_unix_path(const struct own_socket *o)
{
	const char *why = "";
	int r = clear_stale_unix_path(o->si.addr, o->si.addr_len, o->si.type,
				      &why);

	if (r == -EEXIST) {
		fprintf(stderr, "ckpt_restart: %s: %s (vpid %d), fd %d: "
			"cannot bind to %s again: it exists and is %s; remove it "
			"if it is stale\n", o->img->path, o->img->hdr.program,
			o->img->hdr.vpid, o->f->fd, o->where, why);
	} else if (r == -EADDRINUSE) {
		fprintf(stderr, "ckpt_restart: %s: %s (vpid %d), fd %d: "
			"cannot bind to %s again: a program is listening on it "
			"(nothing was restarted)\n", o->img->path,
			o->img->hdr.program, o->img->hdr.vpid, o->f->fd,
			o->where);
	} else if (r < 0) {
		say(o, "removing the stale socket file", -r);
	}
	return r;
}

/* A netlink socket to its port id and groups again: the kernel's
 * replies carry the port id, and programs check it (libmnl). When a
 * socket outside took the port meanwhile, the kernel picks another, and
 * that is said. 0 or -errno. */
static int bind_netlink(const struct own_socket *o, int s)
{
	struct sockaddr_nl a;

	if (o->si.addr_len < sizeof(a))
		return -EINVAL;
	memcpy(&a, o->si.addr, sizeof(a));
	if (bind(s, (const void *)&a, sizeof(a)) == 0)
		return 0;
	if (errno != EADDRINUSE || !a.nl_pid)
		return -errno;
	fprintf(stderr, "ckpt_restart: warning: %s: %s (vpid %d), fd %d: "
		"netlink port %u is taken by another socket; the socket gets "
		"a new port, and a program that checks the port of the "
		"kernel's replies (as libmnl does) refuses them\n",
		o->img->path, o->img->hdr.program, o->img->hdr.vpid, o->f->fd,
		a.nl_pid);
	a.nl_pid = 0;
	return bind(s, (const void *)&a, sizeof(a)) < 0 ? -errno : 0;
}

/* The socket file's mode as it was at checkpoint (a program may have
 * changed it after the bind: screen keeps a session's state in it). A
 * failure is said and the restart goes on. */
static void set_path_mode(const struct own_socket *o)
{
	const struct sockaddr_un *a = (const void *)o->si.addr;

	if (o->si.family != AF_UNIX || !o->si.path_mode ||
	    a->sun_path[0] != '/')
		return;
	if (chmod(a->sun_path, o->si.path_mode & 07777) < 0)
		fprintf(stderr, "ckpt_restart: warning: %s: %s (vpid %d), fd "
			"%d: cannot give %s its mode %04o again: %s\n",
			o->img->path, o->img->hdr.program, o->img->hdr.vpid,
			o->f->fd, o->where, o->si.path_mode & 07777,
			strerror(errno));
}

static int make_socket(const struct own_socket *o)
{
	const struct ckpt_socket_info *si = &o->si;
	int s, r;

	s = socket(si->family, si->type, si->protocol);
	if (s < 0) {
		r = -errno;
		say(o, "socket", -r);
		return r;
	}
	r = set_options(o, s);
	if (r < 0) {
		say(o, "setting SO_REUSEADDR, SO_REUSEPORT or IPV6_V6ONLY",
		    -r);
	} else if (si->family == AF_UNIX &&
		   ((r = make_missing_socket_dir(o)) < 0 ||
		    (r = clear_unix_path(o)) < 0)) {
		/* said */
	} else if (si->family == AF_NETLINK) {
		if (ckpt_sockaddr_is_bound(si->addr, si->addr_len) &&
		    (r = bind_netlink(o, s)) < 0)
			say(o, NULL, -r);
	} else if (ckpt_sockaddr_is_bound(si->addr, si->addr_len) &&
		   bind(s, (const void *)si->addr, si->addr_len) < 0) {
		r = -errno;
		say(o, NULL, -r);
	} else if (udp_peer(si) &&
		   connect(s, (const void *)si->peer, si->peer_len) < 0) {
		r = -errno;
		say(o, "connect", -r);
	} else if (o->f->kind == CKPT_FD_SOCKET_LISTEN &&
		   listen(s, si->backlog > 0 ? si->backlog : SOMAXCONN) < 0) {
		r = -errno;
		say(o, "listen", -r);
	}
	if (r < 0) {
		close(s);
		return r;
	}
	set_path_mode(o);
	return s;
}

/* The fd ckpt_restart made for socket ino (the plan's socket table), -1
 * if none yet. */
int plan_socket_fd(const struct ckpt_restart_plan *plan, uint64_t ino)
{
	for (uint32_t i = 0; i < plan->nsockets; i++)
		if (plan->sockets[i].ino == ino)
			return plan->sockets[i].fd;
	return -1;
}

static int recreate(const struct ckpt_image *img, const struct ckpt_fd_info *f,
		    struct ckpt_restart_plan *plan, int *keep_fd_end)
{
	struct own_socket o;
	int s, r;

	r = read_info(img, f, &o);
	if (r < 0 || plan_socket_fd(plan, o.ino) >= 0)
		return r;
	if (plan->nsockets == CKPT_PLAN_MAX_SOCKETS) {
		fprintf(stderr, "ckpt_restart: %s: more than %d sockets in "
			"the computation\n", img->path, CKPT_PLAN_MAX_SOCKETS);
		return -E2BIG;
	}
	s = make_socket(&o);
	if (s < 0)
		return s;
	s = place_handed(s, keep_fd_end);
	if (s < 0) {
		fprintf(stderr, "ckpt_restart: %s: fd %d: cannot place the "
			"socket at fd %d\n", img->path, f->fd, *keep_fd_end);
		return -EBUSY;
	}
	plan->sockets[plan->nsockets].ino = o.ino;
	plan->sockets[plan->nsockets++].fd = s;
	return 0;
}

int restart_listeners_create(struct ckpt_image *imgs, int n,
			     struct ckpt_restart_plan *plan, int *keep_fd_end)
{
	for (int i = 0; i < n; i++)
		for (uint32_t j = 0; j < imgs[i].hdr.nfds; j++) {
			const struct ckpt_fd_info *f = &imgs[i].fds[j];
			int r;

			/* a dup of an earlier fd has no data: libckpt dups */
			if ((f->kind != CKPT_FD_SOCKET_LISTEN &&
			     f->kind != CKPT_FD_SOCKET_BOUND) || !f->data_size)
				continue;
			r = recreate(&imgs[i], f, plan, keep_fd_end);
			if (r < 0)
				return r;
		}
	return restart_udp_refill(imgs, n, plan);
}
