/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tcp_slow_reader MIB PAUSE_MS [both]: a forked child sends MIB MiB of a
 * pseudo-random stream to its parent over TCP on 127.0.0.1 as fast as it
 * can; the parent reads 64 KiB, then sleeps PAUSE_MS, and so on, so the
 * parent's receive buffer is full and most of what is in flight waits in
 * the child's send queue. The parent prints "read K MiB" at each MiB, and
 * at the end "received N" and "OK HASH" when every byte was the stream's
 * next one, else "FAIL at byte N". The child prints "sent N" and exits 0.
 * With "both", the parent also sends the stream to the child (from a
 * thread), which reads it the same slow way: both directions lag.
 */
#include <pthread.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include "app_util.h"

#define PROG "tcp_slow_reader"
#define CHUNK 65536

/* Byte i of the stream. */
static uint8_t stream_byte(uint64_t i)
{
	return (uint8_t)(mix64(i / 8) >> (8 * (i % 8)));
}

static void send_stream(int fd, uint64_t total)
{
	static uint8_t buf[CHUNK];
	uint64_t sent = 0;

	while (sent < total) {
		size_t n = total - sent < CHUNK ? total - sent : CHUNK;
		ssize_t w;

		for (size_t i = 0; i < n; i++)
			buf[i] = stream_byte(sent + i);
		for (size_t off = 0; off < n; off += w) {
			w = write(fd, buf + off, n - off);
			if (w <= 0)
				die(PROG, "write: %s", strerror(errno));
		}
		sent += n;
	}
	say("sent %llu", (unsigned long long)sent);
}

static void read_stream(int fd, uint64_t total, unsigned long pause_ms)
{
	static uint8_t buf[CHUNK];
	uint64_t got = 0, h = FNV1A_INIT;

	while (got < total) {
		ssize_t n = read(fd, buf, CHUNK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != stream_byte(got + i)) {
				say("FAIL at byte %llu",
				    (unsigned long long)(got + i));
				exit(1);
			}
		h = fnv1a(h, buf, n);
		if ((got + n) / (1 << 20) != got / (1 << 20))
			say("read %llu MiB",
			    (unsigned long long)((got + n) >> 20));
		got += n;
		sleep_ms(pause_ms);
	}
	say("received %llu", (unsigned long long)got);
	if (got != total) {
		say("FAIL at byte %llu", (unsigned long long)got);
		exit(1);
	}
	say("OK %016llx", (unsigned long long)h);
}

struct sending {
	int fd;
	uint64_t total;
};

static void *send_thread(void *arg)
{
	struct sending *s = arg;

	send_stream(s->fd, s->total);
	return NULL;
}

/* Send from a thread while this thread reads (both directions lag). */
static void send_and_read(int fd, uint64_t total, unsigned long pause_ms)
{
	struct sending s = { fd, total };
	pthread_t t;

	if (pthread_create(&t, NULL, send_thread, &s) != 0)
		die(PROG, "pthread_create failed");
	read_stream(fd, total, pause_ms);
	pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	unsigned long mib, pause_ms;
	int l, fd, status;
	pid_t child;

	int both = argc == 4 && !strcmp(argv[3], "both");

	if (argc != 3 && !both)
		die(PROG, "usage: tcp_slow_reader MIB PAUSE_MS [both]");
	mib = parse_ulong(PROG, "MIB", argv[1], 1, 4096);
	pause_ms = parse_ulong(PROG, "PAUSE_MS", argv[2], 0, 10000);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (void *)&a, sizeof(a)) < 0 || listen(l, 1) < 0 ||
	    getsockname(l, (void *)&a, &len) < 0)
		die(PROG, "listen on 127.0.0.1: %s", strerror(errno));
	child = fork();
	if (child < 0)
		die(PROG, "fork: %s", strerror(errno));
	if (child == 0) {
		close(l);
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0 || connect(fd, (void *)&a, sizeof(a)) < 0)
			die(PROG, "connect: %s", strerror(errno));
		if (both)
			send_and_read(fd, (uint64_t)mib << 20, pause_ms);
		else
			send_stream(fd, (uint64_t)mib << 20);
		close(fd);
		return 0;
	}
	fd = accept(l, NULL, NULL);
	if (fd < 0)
		die(PROG, "accept: %s", strerror(errno));
	close(l);
	if (both)
		send_and_read(fd, (uint64_t)mib << 20, pause_ms);
	else
		read_stream(fd, (uint64_t)mib << 20, pause_ms);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		die(PROG, "the sender did not exit 0");
	return 0;
}
