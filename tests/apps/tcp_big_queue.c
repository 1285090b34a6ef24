/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tcp_big_queue GO_FILE FAST_MIB QUEUED_MIB [RCVBUF_MIN_MIB]
 *
 * A TCP receive queue larger than a new connection's buffers: a sender
 * (the child) and a reader (the parent) over one connection on
 * 127.0.0.1. The reader reads FAST_MIB MiB as fast as it can (TCP
 * autotuning grows its receive buffer; 32 MiB more at a time while
 * SO_RCVBUF is below RCVBUF_MIN_MIB), says "paused at N" and tells the
 * sender (one byte back), then waits until GO_FILE exists. Meanwhile the
 * sender writes QUEUED_MIB MiB more, which wait in the reader's receive
 * queue ("sender wrote N unsent 0" once they are all there). Once GO_FILE is there the reader reads to
 * the end (FAST_MIB + QUEUED_MIB) and prints "reader got N HASH"; the sender,
 * told by a last byte back, prints "sender done N HASH". The bytes are
 * a fixed pseudo-random stream which the reader checks byte by byte: a
 * byte lost, doubled or reordered prints FAIL with its offset.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 65536
#define READ_MAX (32U << 20)
#define GO_WAIT_S 600
#define NAP_MS 10
#define MORE (32U << 20)
#define MORE_ROUNDS 40

static unsigned char stream_byte(uint64_t i)
{
	uint64_t x = (i / 8 + 1) * 0x9e3779b97f4a7c15ULL;

	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 32;
	return (unsigned char)(x >> (8 * (i % 8)));
}

static uint64_t hash_bytes(uint64_t h, const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

static void die(const char *what)
{
	printf("FAIL %s: %s\n", what, strerror(errno));
	fflush(stdout);
	exit(1);
}

static void write_all(int fd, const unsigned char *b, size_t n)
{
	while (n) {
		ssize_t w = write(fd, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("write");
		b += w;
		n -= (size_t)w;
	}
}

static int read_byte(int fd)
{
	char c;
	ssize_t n;

	while ((n = read(fd, &c, 1)) < 0 && errno == EINTR)
		;
	return n == 1 ? c : -1;
}

/* Write bytes [*sent, end) of the stream. */
static void send_stream(int fd, uint64_t *sent, uint64_t end, uint64_t *h)
{
	static unsigned char buf[CHUNK];

	while (*sent < end) {
		size_t n = end - *sent < CHUNK ? end - *sent : CHUNK;

		for (size_t i = 0; i < n; i++)
			buf[i] = stream_byte(*sent + i);
		write_all(fd, buf, n);
		*h = hash_bytes(*h, buf, n);
		*sent += n;
	}
}

/* Wait (10 s at most) until the peer has every byte written: they wait
 * in its receive queue. The bytes still not sent. */
static int wait_until_sent(int fd)
{
	struct timespec nap = { 0, 10 * 1000 * 1000 };
	int unsent = -1;

	for (int i = 0; i < 1000; i++) {
		if (ioctl(fd, SIOCOUTQ, &unsent) < 0 || unsent == 0)
			break;
		nanosleep(&nap, NULL);
	}
	return unsent;
}

static void sender(int fd, uint64_t fast, uint64_t queued)
{
	uint64_t sent = 0, h = 0xcbf29ce484222325ULL;
	int c;

	send_stream(fd, &sent, fast, &h);
	while ((c = read_byte(fd)) == 'M')	/* the buffer is still small */
		send_stream(fd, &sent, sent + MORE, &h);
	if (c != 'P')
		die("waiting for the reader to pause");
	send_stream(fd, &sent, sent + queued, &h);
	printf("sender wrote %llu unsent %d\n", (unsigned long long)sent,
	       wait_until_sent(fd));
	fflush(stdout);
	if (read_byte(fd) != 'D')
		die("waiting for the reader to finish");
	printf("sender done %llu %016llx\n", (unsigned long long)sent,
	       (unsigned long long)h);
	fflush(stdout);
	exit(0);
}

/* Wait until the receive queue holds half its buffer (about the window
 * the reader offers) or stops growing for 50 ms (the sender has nothing
 * more to send); 2 s at most. Reading it all at once then shows
 * autotuning a whole window per round trip, and it doubles the buffer,
 * however loaded the machine is. */
static void wait_until_queue_full(int fd)
{
	struct timespec nap = { 0, NAP_MS * 1000 * 1000 };
	int before = -1, now = 0, still = 0, rcvbuf = 0;
	socklen_t len = sizeof(rcvbuf);

	getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, &len);
	for (int i = 0; i < 2000 / NAP_MS; i++) {
		if (ioctl(fd, FIONREAD, &now) < 0 || now >= rcvbuf / 2)
			return;
		still = now == before && now > 0 ? still + 1 : 0;
		if (still * NAP_MS >= 50)
			return;
		before = now;
		nanosleep(&nap, NULL);
	}
}

/* Read until `end` bytes, checking each against the stream; with `nap`,
 * a wait before each read
 * until the queue is full. */
static void read_stream(int fd, uint64_t *got, uint64_t end, uint64_t *h,
			int nap)
{
	static unsigned char buf[READ_MAX];

	while (*got < end) {
		size_t want = end - *got < READ_MAX ? end - *got : READ_MAX;
		ssize_t n = read(fd, buf, want);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("read");
		if (n == 0) {
			printf("FAIL the stream ended at %llu\n",
			       (unsigned long long)*got);
			exit(1);
		}
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != stream_byte(*got + i)) {
				printf("FAIL byte %llu differs\n",
				       (unsigned long long)(*got + i));
				fflush(stdout);
				exit(1);
			}
		*h = hash_bytes(*h, buf, n);
		*got += n;
		/* not after the last read: the sender waits for the reader */
		if (nap && *got < end)
			wait_until_queue_full(fd);
	}
}

static void wait_for_file(const char *path)
{
	struct timespec nap = { 0, 20 * 1000 * 1000 };

	for (long i = 0; access(path, F_OK) != 0; i++) {
		if (i > GO_WAIT_S * 50L) {
			printf("FAIL %s did not appear\n", path);
			exit(1);
		}
		nanosleep(&nap, NULL);
	}
}

static void reader(int fd, const char *go, uint64_t fast, uint64_t queued,
		   int rcvbuf_min)
{
	uint64_t got = 0, h = 0xcbf29ce484222325ULL;
	int rcvbuf = 0;
	socklen_t len = sizeof(rcvbuf);

	read_stream(fd, &got, fast, &h, 1);
	for (int round = 0; getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf,
				       &len) == 0 && rcvbuf < rcvbuf_min; round++) {
		if (round == MORE_ROUNDS) {
			printf("FAIL the receive buffer stays at %d\n", rcvbuf);
			exit(1);
		}
		write_all(fd, (const unsigned char *)"M", 1);
		read_stream(fd, &got, got + MORE, &h, 1);
	}
	printf("paused at %llu rcvbuf %d\n", (unsigned long long)got, rcvbuf);
	fflush(stdout);
	write_all(fd, (const unsigned char *)"P", 1);
	wait_for_file(go);
	read_stream(fd, &got, got + queued, &h, 0);
	write_all(fd, (const unsigned char *)"D", 1);
	printf("reader got %llu %016llx\n", (unsigned long long)got,
	       (unsigned long long)h);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	int l, fd, status;
	pid_t child;

	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: tcp_big_queue GO_FILE FAST_MIB "
			"QUEUED_MIB [RCVBUF_MIN_MIB]\n");
		return 2;
	}
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (void *)&a, sizeof(a)) < 0 || listen(l, 1) < 0 ||
	    getsockname(l, (void *)&a, &alen) < 0)
		die("listen");
	child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		close(l);
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0 || connect(fd, (void *)&a, sizeof(a)) < 0)
			die("connect");
		sender(fd, strtoull(argv[2], NULL, 0) << 20,
		       strtoull(argv[3], NULL, 0) << 20);
	}
	fd = accept(l, NULL, NULL);
	if (fd < 0)
		die("accept");
	close(l);
	reader(fd, argv[1], strtoull(argv[2], NULL, 0) << 20,
	       strtoull(argv[3], NULL, 0) << 20,
	       argc > 4 ? atoi(argv[4]) << 20 : 0);
	if (waitpid(child, &status, 0) != child || status != 0)
		printf("FAIL the sender ended with status %d\n", status);
	fflush(stdout);
	return 0;
}
