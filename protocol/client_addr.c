// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Coordinator addresses: choosing one (explicit, $CKPT_COORD, per-user
 * default socket) and connecting to it. Unix sockets are checked to belong
 * to a coordinator of our own uid; TCP gets TCP_NODELAY.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "ckpt/coord_client.h"
#include "client_internal.h"

static int default_socket_path(char *out, size_t len)
{
	const char *base = getenv("XDG_RUNTIME_DIR");
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct ckpt_cc_str s;
	int r;

	if (!base || base[0] != '/')
		base = "/tmp";
	ckpt_cc_str_init(&s, dir, sizeof(dir));
	ckpt_cc_str_add(&s, base);
	ckpt_cc_str_add(&s, "/ckpt-");
	ckpt_cc_str_add_u64(&s, geteuid());
	if (s.truncated)
		return -ENAMETOOLONG;
	r = ckpt_cc_make_private_dir(dir);
	if (r < 0)
		return r;
	ckpt_cc_str_init(&s, out, len);
	ckpt_cc_str_add(&s, dir);
	ckpt_cc_str_add(&s, "/coordinator.sock");
	return s.truncated ? -ENAMETOOLONG : 0;
}

/* A relative socket path becomes absolute, so the program we hand it to
 * may chdir freely. */
static int absolute_socket_path(const char *addr, char *out, size_t len)
{
	char cwd[4096];

	if (addr[0] == '/') {
		if (ckpt_cc_strlcpy(out, addr, len) >= len)
			return -ENAMETOOLONG;
		return 0;
	}
	if (!getcwd(cwd, sizeof(cwd)))
		return -errno;
	return ckpt_cc_path_join(cwd, addr, out, len);
}

int ckpt_coord_resolve_addr(const char *explicit_addr, char *out, size_t len)
{
	const char *addr = explicit_addr;
	int r;

	if (!out || !len)
		return -EINVAL;
	if (!addr || !addr[0])
		addr = getenv("CKPT_COORD");
	if (!addr || !addr[0])
		r = default_socket_path(out, len);
	else if (ckpt_cc_is_tcp_addr(addr))
		r = ckpt_cc_strlcpy(out, addr, len) < len ? 0 : -ENAMETOOLONG;
	else
		r = absolute_socket_path(addr, out, len);
	if (r == 0 && !ckpt_cc_is_tcp_addr(out) &&
	    strlen(out) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		r = -ENAMETOOLONG;
	return r;
}

static int set_send_timeout(int fd, int timeout_ms)
{
	struct timeval tv = {
		.tv_sec = timeout_ms / 1000,
		.tv_usec = (timeout_ms % 1000) * 1000,
	};

	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
		return -errno;
	return 0;
}

/* The coordinator at the other end must run as our uid: we would take
 * orders (DO_KILL) from it. */
static int check_peer_uid(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	return cred.uid == geteuid() ? 0 : -EACCES;
}

static int connect_unix(const char *path, int timeout_ms)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int64_t deadline = ckpt_cc_deadline(timeout_ms);
	int fd, r;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	memcpy(sun.sun_path, path, strlen(path));
	fd = ckpt_cc_keep_fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	if (fd < 0)
		return -errno;
	for (;;) {
		/* SO_SNDTIMEO bounds a Unix connect() that waits for a full
		 * listen backlog. */
		int left = 0;

		if (deadline >= 0) {
			int64_t l = deadline - ckpt_cc_now_ms();

			left = l < 1 ? 1 : (l > 1 << 30 ? 1 << 30 : (int)l);
		}
		r = set_send_timeout(fd, left);
		if (r < 0)
			goto fail;
		if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0)
			break;
		r = errno == EAGAIN || errno == EINPROGRESS ? -ETIMEDOUT
							     : -errno;
		if (r != -EINTR)
			goto fail;
	}
	r = set_send_timeout(fd, 0);
	if (r == 0)
		r = check_peer_uid(fd);
	if (r < 0)
		goto fail;
	ckpt_cc_session_forget(fd);	/* SO_PEERCRED vouches: no MACs */
	return fd;
fail:
	ckpt_cc_close_fd(fd);
	return r;
}

/* "HOST:PORT" with a numeric IPv4/IPv6 host (or "[v6]", or "localhost").
 * Names need the resolver, which allocates: tools resolve them first and
 * hand numeric addresses to applications (ckpt_launch sets CKPT_COORD). */
static int parse_tcp_addr(const char *addr, struct sockaddr_storage *ss,
			  socklen_t *sslen)
{
	const char *colon = strrchr(addr, ':');
	char host[256];
	size_t hlen = (size_t)(colon - addr);
	char *end;
	unsigned long port;
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	if (!colon || hlen == 0 || hlen >= sizeof(host))
		return -EINVAL;
	if (addr[0] == '[' && colon[-1] == ']') {
		addr++;
		hlen -= 2;
	}
	memcpy(host, addr, hlen);
	host[hlen] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || port == 0 || port > 65535)
		return -EINVAL;
	memset(ss, 0, sizeof(*ss));
	if (strcmp(host, "localhost") == 0)
		ckpt_cc_strlcpy(host, "127.0.0.1", sizeof(host));
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		*sslen = sizeof(*sin);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		*sslen = sizeof(*sin6);
		return 0;
	}
	return -EINVAL;
}

static int finish_tcp_connect(int fd, int64_t deadline)
{
	int err = 0, one = 1, r;
	socklen_t len = sizeof(err);

	r = ckpt_cc_wait_fd(fd, POLLOUT, deadline);
	if (r < 0)
		return r;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		return -errno;
	if (err)
		return -err;
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
		return -errno;
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		return -errno;
	return 0;
}

static int connect_tcp(const char *addr, int timeout_ms)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	int64_t deadline = ckpt_cc_deadline(timeout_ms);
	int fd, r;

	r = parse_tcp_addr(addr, &ss, &sslen);
	if (r < 0)
		return r;
	fd = ckpt_cc_keep_fd(socket(ss.ss_family,
		SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&ss, sslen) == 0 ||
	    errno == EINPROGRESS || errno == EINTR)
		r = finish_tcp_connect(fd, deadline);
	else
		r = -errno;
	/* nothing goes to a TCP peer before it proved it knows the secret */
	if (r == 0)
		r = ckpt_cc_authenticate(fd, addr, deadline);
	if (r < 0) {
		ckpt_cc_close_fd(fd);
		return r;
	}
	return fd;
}

int ckpt_coord_connect(const char *addr, int timeout_ms)
{
	if (!addr || !addr[0])
		return -EINVAL;
	if (ckpt_cc_is_tcp_addr(addr))
		return connect_tcp(addr, timeout_ms);
	return connect_unix(addr, timeout_ms);
}
