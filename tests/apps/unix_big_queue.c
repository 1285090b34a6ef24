/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * unix_big_queue fork|shared|self TICKS DELAY_MS: a Unix stream socketpair whose
 * writer raises SO_SNDBUF as far as it may and fills the pair until it
 * would block, then prints "queued Q" (Q bytes, a known pattern); the
 * number goes to the reader through a pipe. Then "tick N" every DELAY_MS
 * for TICKS ticks, and only then does the reader read: "read Q ok", or
 * "FAIL ..." at the first wrong byte.
 *
 *   fork    the parent writes, the child reads (and ticks)
 *   shared  the same, but parent and child both keep both ends open (as
 *           a multiprocessing Pipe does): two processes hold the queue
 *   self    one process holds both ends
 *
 * The queue is larger than a new socketpair holds with its default
 * buffer (net.core.wmem_default), so a restart must make room for it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned char pattern(uint64_t i)
{
	return (unsigned char)(i * 7 + (i >> 12));
}

static uint64_t fill(int fd)
{
	int big = 64 << 20;
	unsigned char buf[65536];
	uint64_t q = 0;

	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
	fcntl(fd, F_SETFL, O_NONBLOCK);
	for (;;) {
		ssize_t n;

		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = pattern(q + i);
		n = write(fd, buf, sizeof(buf));
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0) {
			printf("FAIL write: %s\n", strerror(errno));
			exit(1);
		}
		q += n;
	}
	fcntl(fd, F_SETFL, 0);
	return q;
}

static void ticks(int n, long delay_ms)
{
	struct timespec d = { delay_ms / 1000, (delay_ms % 1000) * 1000000 };

	for (int i = 1; i <= n; i++) {
		printf("tick %d\n", i);
		fflush(stdout);
		nanosleep(&d, NULL);
	}
}

static int drain(int fd, uint64_t q)
{
	unsigned char buf[65536];
	uint64_t got = 0;

	while (got < q) {
		ssize_t n = read(fd, buf, q - got < sizeof(buf) ?
				 q - got : sizeof(buf));

		if (n <= 0) {
			printf("FAIL read after %llu of %llu bytes: %s\n",
			       (unsigned long long)got, (unsigned long long)q,
			       n ? strerror(errno) : "EOF");
			return 1;
		}
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != pattern(got + i)) {
				printf("FAIL byte %llu: %u, want %u\n",
				       (unsigned long long)(got + i), buf[i],
				       pattern(got + i));
				return 1;
			}
		got += n;
	}
	printf("read %llu ok\n", (unsigned long long)got);
	return 0;
}

int main(int argc, char **argv)
{
	int sv[2], pp[2], self, shared, n, status;
	long delay;
	uint64_t q;
	pid_t child;

	if (argc != 4) {
		fprintf(stderr, "usage: %s fork|shared|self TICKS DELAY_MS\n",
			argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	self = !strcmp(argv[1], "self");
	shared = !strcmp(argv[1], "shared");
	n = atoi(argv[2]);
	delay = atol(argv[3]);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0 || pipe(pp) < 0)
		return 1;
	if (self) {
		q = fill(sv[0]);
		printf("queued %llu\n", (unsigned long long)q);
		ticks(n, delay);
		return drain(sv[1], q);
	}
	child = fork();
	if (child == 0) {
		if (!shared)
			close(sv[0]);
		if (read(pp[0], &q, sizeof(q)) != sizeof(q))
			return 1;
		ticks(n, delay);
		return drain(sv[1], q);
	}
	if (!shared)
		close(sv[1]);
	q = fill(sv[0]);
	printf("queued %llu\n", (unsigned long long)q);
	if (write(pp[1], &q, sizeof(q)) != sizeof(q))
		return 1;
	if (waitpid(child, &status, 0) != child)
		return 1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
