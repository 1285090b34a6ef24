/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tcp_conns N MIB: the benchmark's computation holding N TCP connections
 * between its two processes. The parent listens on 127.0.0.1:0, forks a
 * child that makes N connections to it (each names its index first),
 * then fills MIB MiB with random data, and both idle. Every tenth
 * connection carries bytes sent and not read yet, both ways ("abc" to the
 * child, "xyz" to the parent), so a checkpoint has queues to keep.
 *
 * The parent answers stdin lines like fill_idle: "ping" with "pong N",
 * and prints "resumed after N ms" when a 1 ms sleep took over 20 ms.
 * "check" exchanges one byte both ways on every connection, after the
 * bytes left in flight, which must come first, exactly once, and queues
 * new ones: it prints "checked N connections" or an "error: ..." line
 * naming the connection. The child talks to the parent over a Unix
 * socket pair (present whatever N) and exits when the parent is gone.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "idle_loop.h"

#define IO_TIMEOUT_MS 20000
#define PARENT_QUEUED "abc"	/* to the child, read at the next check */
#define CHILD_QUEUED "xyz"	/* to the parent */

static int *conns;
static unsigned long nconns;

static int carries_queue(unsigned long i)
{
	return i % 10 == 0;
}

/* Read exactly len bytes within IO_TIMEOUT_MS; 0 or -errno (-ETIMEDOUT,
 * -EPIPE for an early end of stream). */
static int read_exact(int fd, void *buf, size_t len)
{
	uint64_t deadline = now_ms() + IO_TIMEOUT_MS;
	char *p = buf;

	while (len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		uint64_t t = now_ms();
		ssize_t n;
		int r;

		if (t >= deadline)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)(deadline - t));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			continue;
		n = read(fd, p, len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Expect `queued` (if this connection carries a queue) then `byte`. */
static int expect(int fd, const char *queued, char byte, const char **what)
{
	char got[8];
	size_t qlen = strlen(queued);
	int err;

	err = read_exact(fd, got, qlen + 1);
	if (err) {
		*what = "reading";
		return err;
	}
	if (memcmp(got, queued, qlen) || got[qlen] != byte) {
		*what = "wrong bytes";
		return -EPROTO;
	}
	return 0;
}

static int queue_bytes(unsigned long i, const char *bytes)
{
	if (!carries_queue(i))
		return 0;
	return write_all(conns[i], bytes, strlen(bytes));
}

static int queue_all(const char *bytes)
{
	unsigned long i;
	int err;

	for (i = 0; i < nconns; i++) {
		err = queue_bytes(i, bytes);
		if (err)
			return err;
	}
	return 0;
}

/* The child's side of a check: "abc"? + 'q' in, 'r' + "xyz"? out. */
static int child_check(int ctl)
{
	const char *what = "";
	char reply[160] = "ok";
	unsigned long i;
	int err = 0;

	for (i = 0; i < nconns && !err; i++) {
		err = expect(conns[i], carries_queue(i) ? PARENT_QUEUED : "",
			     'q', &what);
		if (!err)
			err = write_all(conns[i], "r", 1);
		if (!err)
			err = queue_bytes(i, CHILD_QUEUED);
	}
	if (err)
		snprintf(reply, sizeof(reply), "child: connection %lu: %s: %s",
			 i - 1, what, strerror(-err));
	return write_all(ctl, reply, sizeof(reply));
}

static void child_main(int ctl, const struct sockaddr_in *addr)
{
	unsigned long i;
	char cmd;

	for (i = 0; i < nconns; i++) {
		uint32_t idx = (uint32_t)i;
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (fd < 0 || connect(fd, (const struct sockaddr *)addr,
				      sizeof(*addr)) < 0 ||
		    write_all(fd, &idx, sizeof(idx))) {
			fprintf(stderr, "tcp_conns: child: connection %lu to "
				"127.0.0.1:%u: %s\n", i, ntohs(addr->sin_port),
				strerror(errno));
			_exit(1);
		}
		conns[i] = fd;
	}
	if (queue_all(CHILD_QUEUED) || write_all(ctl, "c", 1))
		_exit(1);
	for (;;) {
		ssize_t n = read(ctl, &cmd, 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(0);
		if (child_check(ctl))
			_exit(1);
	}
}

/* The parent's side: 'q' to all, then "xyz"? + 'r' back from each. */
static void parent_check(int ctl)
{
	const char *what = "";
	char reply[160];
	unsigned long i;
	int err = 0;

	for (i = 0; i < nconns && !err; i++)
		err = write_all(conns[i], "q", 1);
	if (err) {
		printf("error: connection %lu: writing: %s\n", i - 1,
		       strerror(-err));
		fflush(stdout);
		return;
	}
	if (write_all(ctl, "c", 1) ||
	    read_exact(ctl, reply, sizeof(reply))) {
		printf("error: the child did not answer the check\n");
		fflush(stdout);
		return;
	}
	reply[sizeof(reply) - 1] = '\0';
	for (i = 0; i < nconns && !err; i++) {
		err = expect(conns[i], carries_queue(i) ? CHILD_QUEUED : "",
			     'r', &what);
		if (!err)
			err = queue_bytes(i, PARENT_QUEUED);
	}
	if (strcmp(reply, "ok"))
		printf("error: %s\n", reply);
	else if (err)
		printf("error: parent: connection %lu: %s: %s\n", i - 1, what,
		       strerror(-err));
	else
		printf("checked %lu connections\n", nconns);
	fflush(stdout);
}

static int listen_loopback(struct sockaddr_in *addr)
{
	socklen_t len = sizeof(*addr);
	int one = 1;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(addr, 0, sizeof(*addr));
	addr->sin_family = AF_INET;
	addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)addr, sizeof(*addr)) ||
	    listen(fd, (int)nconns + 16) ||
	    getsockname(fd, (struct sockaddr *)addr, &len)) {
		fprintf(stderr, "tcp_conns: listening on 127.0.0.1: %s\n",
			strerror(errno));
		exit(2);
	}
	return fd;
}

static void accept_all(int lfd)
{
	unsigned long i;

	for (i = 0; i < nconns; i++) {
		uint32_t idx;
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0 || read_exact(fd, &idx, sizeof(idx)) ||
		    idx >= nconns || conns[idx] != -1) {
			fprintf(stderr, "tcp_conns: accepting connection %lu: "
				"%s\n", i, fd < 0 ? strerror(errno) :
				"no valid index");
			exit(2);
		}
		conns[idx] = fd;
	}
}

static void fill(uint64_t *w, size_t words)
{
	uint64_t s = 0x243f6a8885a308d3ull;
	size_t i;

	for (i = 0; i < words; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		w[i] = s;
	}
}

/* stdin: "ping" -> "pong N", "check" -> check; 0 when stdin is gone. */
static int answer_stdin(void *ctl_fd, unsigned long *pongs)
{
	int ctl = *(int *)ctl_fd;
	char line[64];

	if (!fgets(line, sizeof(line), stdin))
		return 0;
	if (!strncmp(line, "check", 5)) {
		parent_check(ctl);
	} else {
		printf("pong %lu\n", ++*pongs);
		fflush(stdout);
	}
	return 1;
}

static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < nconns + 64) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void parent_idle(int ctl)
{
	setvbuf(stdin, NULL, _IOLBF, 0);
	printf("ready\n");
	fflush(stdout);
	idle_answering(answer_stdin, &ctl);
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr;
	unsigned long mib, i;
	int sv[2], lfd;
	uint64_t *mem;
	char *end, c;
	pid_t pid;

	if (argc != 3) {
		fprintf(stderr, "usage: tcp_conns N MIB\n");
		return 2;
	}
	nconns = strtoul(argv[1], &end, 10);
	if (*end || nconns > 100000) {
		fprintf(stderr, "tcp_conns: N '%s': not a number up to "
			"100000\n", argv[1]);
		return 2;
	}
	mib = strtoul(argv[2], &end, 10);
	if (*end || !mib) {
		fprintf(stderr, "tcp_conns: MIB '%s': not a positive number\n",
			argv[2]);
		return 2;
	}
	raise_fd_limit();
	conns = malloc((nconns + 1) * sizeof(*conns));
	if (!conns || socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
		fprintf(stderr, "tcp_conns: setting up: %s\n", strerror(errno));
		return 2;
	}
	for (i = 0; i < nconns; i++)
		conns[i] = -1;
	lfd = listen_loopback(&addr);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "tcp_conns: fork: %s\n", strerror(errno));
		return 2;
	}
	if (pid == 0) {
		close(sv[0]);
		close(lfd);
		child_main(sv[1], &addr);
	}
	close(sv[1]);
	accept_all(lfd);
	if (read_exact(sv[0], &c, 1)) {
		fprintf(stderr, "tcp_conns: the child did not connect\n");
		return 2;
	}
	if (queue_all(PARENT_QUEUED)) {
		fprintf(stderr, "tcp_conns: queuing bytes: %s\n",
			strerror(errno));
		return 2;
	}
	mem = malloc(mib << 20);
	if (!mem) {
		fprintf(stderr, "tcp_conns: %lu MiB: out of memory\n", mib);
		return 2;
	}
	fill(mem, (mib << 20) / sizeof(*mem));
	parent_idle(sv[0]);
	return 0;
}
