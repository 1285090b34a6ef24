// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The coordinator's listening socket: one Unix socket path or one TCP
 * HOST:PORT. A Unix socket is guarded by a lock file held for the
 * coordinator's life, so two coordinators starting at once cannot both
 * decide the socket is stale and steal it from each other. Peers on a
 * Unix socket must run as our uid (SO_PEERCRED).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "ckpt/coord_client.h"
#include "ckpt/safe_file.h"
#include "coordinator.h"

#define PROBE_TIMEOUT_MS 1000

/* The directory of path into dir; returns path's last component. */
static const char *split_dir(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (!slash) {
		snprintf(dir, len, ".");
		return path;
	}
	snprintf(dir, len, "%.*s", slash == path ? 1 : (int)(slash - path),
		 path);
	return slash + 1;
}

static int take_lock(struct coordinator *co, char *err, size_t errlen)
{
	struct ckpt_refusal ref = { NULL, 0 };
	char dir[4096];
	const char *base;
	int dirfd;

	snprintf(co->lock_path, sizeof(co->lock_path), "%s.lock", co->addr);
	base = split_dir(co->lock_path, dir, sizeof(dir));
	/* Never through a symbolic link, only ever a file of ours: the
	 * directory may be shared (docs/security.md, "Files in the
	 * checkpoint directory"). */
	dirfd = ckpt_safe_dir_open(dir, &ref);
	co->lock_fd = dirfd < 0 ? dirfd :
		      ckpt_open_own_at(dirfd, base, O_RDWR, 0600, &ref);
	if (dirfd >= 0)
		close(dirfd);
	if (co->lock_fd < 0) {
		int r = co->lock_fd;

		co->lock_fd = -1;
		if (ref.why)
			snprintf(err, errlen, "cannot open lock file %s: %s "
				 "(owner uid %u)", co->lock_path, ref.why,
				 ref.uid);
		else
			snprintf(err, errlen, "cannot open lock file %s: %s",
				 co->lock_path, strerror(-r));
		return r;
	}
	if (flock(co->lock_fd, LOCK_EX | LOCK_NB) == 0)
		return 0;
	snprintf(err, errlen, "another coordinator already runs on %s "
		 "(it holds %s)", co->addr, co->lock_path);
	return -EADDRINUSE;
}

/* A socket file nobody answers on is left over from a crash: replace it.
 * Anything else at that path is not ours to delete. */
static int clear_stale_socket(struct coordinator *co, char *err,
			      size_t errlen)
{
	struct stat st;
	int fd;

	if (lstat(co->addr, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, errlen, "%s exists and is not a socket; "
			 "refusing to replace it", co->addr);
		return -EEXIST;
	}
	fd = ckpt_coord_connect(co->addr, PROBE_TIMEOUT_MS);
	if (fd >= 0 || fd == -EACCES || fd == -ETIMEDOUT) {
		if (fd >= 0)
			close(fd);
		if (st.st_uid != geteuid())
			snprintf(err, errlen, "another user's program (uid "
				 "%u) already answers on %s; refusing to "
				 "replace it", (unsigned)st.st_uid, co->addr);
		else
			snprintf(err, errlen, "another coordinator already "
				 "answers on %s", co->addr);
		return -EADDRINUSE;
	}
	if (unlink(co->addr) < 0 && errno != ENOENT) {
		snprintf(err, errlen, "cannot remove stale socket %s: %s",
			 co->addr, strerror(errno));
		return -errno;
	}
	coord_log("replaced stale socket %s", co->addr);
	return 0;
}

static int open_unix(struct coordinator *co, char *err, size_t errlen)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	mode_t old_mask;
	int fd, r;

	if (strlen(co->addr) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "socket path %s is too long (max %zu)",
			 co->addr, sizeof(sun.sun_path) - 1);
		return -ENAMETOOLONG;
	}
	r = take_lock(co, err, errlen);
	if (r == 0)
		r = clear_stale_socket(co, err, errlen);
	if (r < 0)
		return r;
	strcpy(sun.sun_path, co->addr);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* 0600 socket: only our uid may even connect; SO_PEERCRED checks
	 * again in case someone loosens the mode. */
	old_mask = umask(077);
	r = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old_mask);
	if (r < 0 || listen(fd, COORD_LISTEN_BACKLOG) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot listen on %s: %s", co->addr,
			 strerror(errno));
		close(fd);
		return r;
	}
	co->listen_fd = fd;
	return 0;
}

static int split_host_port(const char *addr, char *host, size_t hlen,
			   char *port, size_t plen)
{
	const char *colon = strrchr(addr, ':');
	size_t n = (size_t)(colon - addr);

	if (addr[0] == '[' && n >= 2 && colon[-1] == ']') {
		addr++;
		n -= 2;
	}
	if (n >= hlen || strlen(colon + 1) >= plen || !colon[1])
		return -EINVAL;
	memcpy(host, addr, n);
	host[n] = '\0';
	strcpy(port, colon + 1);
	return 0;
}

static bool tcp_answers(const struct addrinfo *ai)
{
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = { .tv_sec = PROBE_TIMEOUT_MS / 1000 };
	bool yes;

	if (fd < 0)
		return false;
	/* SO_SNDTIMEO bounds connect() too */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	yes = connect(fd, ai->ai_addr, ai->ai_addrlen) == 0;
	close(fd);
	return yes;
}

static int bind_tcp(struct coordinator *co, const struct addrinfo *ai,
		    char *err, size_t errlen)
{
	int one = 1, fd, r;

	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, COORD_LISTEN_BACKLOG) < 0) {
		r = -errno;
		if (r == -EADDRINUSE)
			snprintf(err, errlen, "cannot listen on %s: the port "
				 "is in use (another coordinator?)", co->addr);
		else
			snprintf(err, errlen, "cannot listen on %s: %s",
				 co->addr, strerror(-r));
		close(fd);
		return r;
	}
	co->listen_fd = fd;
	return 0;
}

static int open_tcp(struct coordinator *co, char *err, size_t errlen)
{
	struct addrinfo hints = {
		.ai_socktype = SOCK_STREAM,
		.ai_flags = AI_PASSIVE,
	};
	struct addrinfo *ai = NULL;
	char host[256], port[16];
	int r;

	r = ckpt_secret_load(co->secret, sizeof(co->secret));
	if (r < 0) {
		snprintf(err, errlen, "cannot load the secret for TCP "
			 "connections ($HOME/.ckpt/secret): %s", strerror(-r));
		return r;
	}
	if (split_host_port(co->addr, host, sizeof(host), port,
			    sizeof(port)) < 0) {
		snprintf(err, errlen, "bad TCP address %s: expected HOST:PORT",
			 co->addr);
		return -EINVAL;
	}
	r = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
	if (r) {
		snprintf(err, errlen, "cannot resolve %s: %s", co->addr,
			 gai_strerror(r));
		return -EINVAL;
	}
	if (tcp_answers(ai)) {
		snprintf(err, errlen, "another coordinator (or another "
			 "program) already answers on %s", co->addr);
		r = -EADDRINUSE;
	} else {
		r = bind_tcp(co, ai, err, errlen);
	}
	freeaddrinfo(ai);
	return r;
}

int listener_open(struct coordinator *co, char *err, size_t errlen)
{
	co->listen_fd = -1;
	co->lock_fd = -1;
	if (co->is_tcp)
		return open_tcp(co, err, errlen);
	return open_unix(co, err, errlen);
}

void listener_close(struct coordinator *co)
{
	if (co->listen_fd >= 0) {
		close(co->listen_fd);
		co->listen_fd = -1;
		if (!co->is_tcp)
			unlink(co->addr);
	}
	if (co->lock_fd >= 0) {
		close(co->lock_fd);
		co->lock_fd = -1;
	}
}

/* Same uid only; anyone else is logged and dropped before a byte. */
static bool accept_unix_peer(struct coordinator *co, int fd, char *peer,
			     size_t len, struct ucred *cred)
{
	socklen_t clen = sizeof(*cred);

	(void)co;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &clen) < 0) {
		coord_log("rejected a connection: SO_PEERCRED failed: %s",
			  strerror(errno));
		return false;
	}
	snprintf(peer, len, "uid %u pid %d", cred->uid, cred->pid);
	if (cred->uid != geteuid()) {
		coord_log("rejected a connection from uid %u: only uid %u may "
			  "use this coordinator", cred->uid, geteuid());
		return false;
	}
	return true;
}

static void describe_tcp_peer(int fd, char *peer, size_t len, char *key,
			      size_t klen)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[INET6_ADDRSTRLEN] = "?";
	int port = 0, one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *in = (struct sockaddr_in *)&ss;

			inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
			port = ntohs(in->sin_port);
		} else if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

			inet_ntop(AF_INET6, &in6->sin6_addr, host,
				  sizeof(host));
			port = ntohs(in6->sin6_port);
		}
	}
	snprintf(peer, len, "%s:%d", host, port);
	snprintf(key, klen, "%s", host);
}

/* One connection: who it is, then a slot (conn_guard.c caps them). */
static void add_peer(struct coordinator *co, int fd)
{
	struct ucred cred = { 0 };
	char peer[96], key[64];
	struct conn *c;

	if (co->is_tcp) {
		describe_tcp_peer(fd, peer, sizeof(peer), key, sizeof(key));
	} else if (!accept_unix_peer(co, fd, peer, sizeof(peer), &cred)) {
		close(fd);
		return;
	} else {
		snprintf(key, sizeof(key), "uid %u", cred.uid);
	}
	c = conn_add(co, fd, peer);
	c->local_peer = !co->is_tcp;
	c->peer_pid = co->is_tcp ? 0 : cred.pid;
	snprintf(c->peer_key, sizeof(c->peer_key), "%s", key);
	guard_on_accept(co, c);
}

/* At most COORD_ACCEPTS_PER_LOOP: a flood must not starve the others. */
void listener_accept(struct coordinator *co)
{
	for (int i = 0; i < COORD_ACCEPTS_PER_LOOP; i++) {
		int fd = accept4(co->listen_fd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		int err = errno;

		if (fd < 0) {
			if (err == EINTR || err == ECONNABORTED ||
			    guard_on_accept_error(co, err))
				continue;
			if (err != EAGAIN && err != EWOULDBLOCK &&
			    !co->accept_paused_until)
				coord_log("accept on %s failed: %s", co->addr,
					  strerror(err));
			return;
		}
		guard_on_accept_ok(co);
		add_peer(co, fd);
	}
}
